"""Startup guard: help, version and shell completion never import NumPy, Rich, safetensors or ml_dtypes.

Like ``pipx/tests/test_imports.py``: each command runs in a fresh interpreter as the console script runs it
(``posenc_cli.cli.main`` with ``sys.argv`` set), then the interpreter reports which heavy top-level packages
ended up in ``sys.modules``. A slow ``posenc --help`` or a laggy TAB is the symptom this catches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import completion_env, completion_values, parse

HEAVY = ("numpy", "rich", "safetensors", "ml_dtypes")

PROBE = f"""
import json, sys
HEAVY = {HEAVY!r}
sys.argv = ["posenc", *json.loads(sys.argv[1])]
code = 0
try:
    from posenc_cli.cli import main
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
heavy = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
sys.stdout.flush()
sys.stderr.write("\\n@@heavy@@" + json.dumps({{"code": code, "heavy": heavy}}) + "\\n")
"""


def probe(args: list[str], env: dict[str, str] | None = None) -> tuple[int, list[str], str]:
    """(exit code, heavy modules imported, stdout) of ``posenc ARGS`` in a fresh interpreter."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("_POSENC")}
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
        check=False,
    )
    marker = proc.stderr.rfind("@@heavy@@")
    assert marker >= 0, f"probe crashed: {proc.stderr[-2000:]}"
    result = json.loads(proc.stderr[marker + len("@@heavy@@") :].strip())
    return result["code"], result["heavy"], proc.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["-h"],
        ["--version"],
        ["generate", "--help"],
        ["check", "--help"],
        ["compare", "--help"],
        ["export", "--help"],
        ["kinds", "--help"],
        ["identify", "--help"],
        ["plot", "--help"],
        ["--show-completion", "bash"],
    ],
    ids=lambda a: " ".join(a),
)
def test_help_and_version_import_nothing_heavy(args):
    code, heavy, out = probe(args)
    assert code == 0, out
    assert out.strip(), "printed nothing"
    assert heavy == [], f"posenc {' '.join(args)} imported {heavy}"


COMPLETIONS = {
    "command name": "posenc gen",
    "option name": "posenc generate --le",
    "kind value": "posenc generate --kind si",
    "positional kind": "posenc kinds si",
    "parameter name": "posenc generate rope -p bas",
    "check name": "posenc check x.npy --require constant-n",
}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "powershell"])
@pytest.mark.parametrize("what", list(COMPLETIONS))
def test_shell_completion_imports_nothing_heavy(shell, what):
    code, heavy, out = probe([], completion_env(COMPLETIONS[what], shell))
    assert code == 0, out
    assert heavy == [], f"completing {COMPLETIONS[what]!r} in {shell} imported {heavy}"
    values = completion_values(out, shell)
    if what == "command name":
        assert values == ["generate"]
    if what == "kind value":
        assert values == ["sinusoidal", "sinusoidal-2d", "sinusoidal-3d"]
    if what == "parameter name":
        assert values == ["base="]
    if what == "check name":
        assert values == ["constant-norm"]


def test_probe_sees_heavy_imports():
    """The guard can fail: generating a table does import NumPy."""
    code, heavy, _ = probe(["generate", "--len", "2", "--dim", "4", "-o", os.devnull, "--format", "npy", "--force"])
    assert "numpy" in heavy, (code, heavy)


def test_typer_reads_no_annotation_strings():
    """Typer evaluates a command's annotations on every run; as strings (``from __future__ import annotations``)
    that is an ``eval`` each, about 70 compiles per ``posenc generate``. The modules it reads keep real
    annotations."""
    import ast

    import posenc_cli.cli as cli

    folder = Path(cli.__file__).parent
    modules = ["__init__", "_options", "_complete", *(module for module, _ in cli.COMMANDS.values())]
    offenders = []
    for name in modules:
        tree = parse((folder / f"{name}.py").read_text())
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                offenders.append(f"{name}.py")
    assert not offenders, f"drop `from __future__ import annotations` from {offenders}"
