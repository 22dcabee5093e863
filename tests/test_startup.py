"""Startup guard: help, version and shell completion never import NumPy, Rich, safetensors or ml_dtypes.

Like ``pipx/tests/test_imports.py``: the commands run in a fresh interpreter as the console script runs them
(``posenc_cli.cli.main`` with ``sys.argv`` set), one after the other, and after each the interpreter reports which
heavy top-level packages are in ``sys.modules`` (a heavy import shows from the command that made it on). A slow ``posenc --help`` or a laggy TAB is the symptom this catches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import completion_env, completion_values, parse
from .each import each

HEAVY = ("numpy", "rich", "safetensors", "ml_dtypes")

PROBE = f"""
import io, json, os, sys
HEAVY = {HEAVY!r}
import posenc_cli
library = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
base_env = dict(os.environ)
results = [{{"code": 0, "heavy": library, "out": ""}}]
real_out = sys.stdout
for args, env in json.loads(sys.argv[1]):
    os.environ.clear()
    os.environ.update(base_env)
    os.environ.update(env)
    sys.argv = ["posenc", *args]
    sys.stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    code = 0
    try:
        from posenc_cli.cli import main
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    sys.stdout.flush()
    out = sys.stdout.buffer.getvalue().decode("utf-8", "replace")
    sys.stdout = real_out
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
    results.append({{"code": code, "heavy": heavy, "out": out}})
shape = posenc_cli.generate("sinusoidal", length=2, dim=3).array().shape
heavy = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
results.append({{"code": 0, "heavy": heavy, "out": str(shape)}})
sys.stderr.write("\\n@@heavy@@" + json.dumps(results) + "\\n")
"""


def probe_all(cases: list[tuple[list[str], dict[str, str]]]) -> list[tuple[int, list[str], str]]:
    """(exit code, heavy modules imported so far, stdout) after each ``posenc ARGS`` with its environment, run one
    after the other in one fresh interpreter: the modules a command imports stay in ``sys.modules``, so the
    first command that imports a heavy module shows it (the ones after it too), as its own interpreter would.
    One interpreter for the whole list: a fresh one per command cost 0.15 CPU-s each, 36 times. Before the
    first, the interpreter runs ``import posenc_cli`` (the first result), after the last the library's
    ``posenc_cli.generate`` (the last result: its table's shape as its output)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("_POSENC")}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(cases)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
        check=False,
    )
    marker = proc.stderr.rfind("@@heavy@@")
    assert marker >= 0, f"probe crashed: {proc.stderr[-2000:]}"
    results = json.loads(proc.stderr[marker + len("@@heavy@@") :].strip())
    assert len(results) == len(cases) + 2, proc.stderr[-2000:]
    return [(r["code"], r["heavy"], r["out"]) for r in results]


HELP = [
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
]
COMPLETIONS = {
    "command name": "posenc gen",
    "option name": "posenc generate --le",
    "kind value": "posenc generate --kind si",
    "positional kind": "posenc kinds si",
    "parameter name": "posenc generate rope -p bas",
    "check name": "posenc check x.npy --require constant-n",
}
SHELLS = ["bash", "zsh", "fish", "powershell"]
#: the command that does import NumPy (the guard can fail), last: what it imports shows in its own result only
GENERATE = ["generate", "--len", "2", "--dim", "4", "-o", os.devnull, "--format", "npy", "--force"]


@pytest.fixture(scope="module")
def probed() -> dict[str, tuple[int, list[str], str]]:
    """Every command of this file's tests, in one fresh interpreter (:func:`probe_all`), by case name."""
    cases = {" ".join(args): (args, {}) for args in HELP}
    cases.update({f"{shell} {what}": ([], completion_env(line, shell)) for what, line in COMPLETIONS.items()
                  for shell in SHELLS})  # fmt: skip
    cases["generate"] = (GENERATE, {})
    return dict(zip(["import posenc_cli", *cases, "posenc_cli.generate"], probe_all(list(cases.values()))))


def test_help_and_version_import_nothing_heavy(probed):
    """(One test over the cases, tests/each.py naming each that fails: an item per case added pytest's cost only.)"""

    def light(args: list[str]) -> None:
        code, heavy, out = probed[" ".join(args)]
        assert code == 0, out
        assert out.strip(), "printed nothing"
        assert heavy == [], f"posenc {' '.join(args)} imported {heavy}"

    each(HELP, light)


def test_shell_completion_imports_nothing_heavy(probed):
    def light(case: tuple[str, str]) -> None:
        shell, what = case
        code, heavy, out = probed[f"{shell} {what}"]
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

    each([(shell, what) for what in COMPLETIONS for shell in SHELLS], light)


def test_the_public_api_imports_nothing_heavy_until_used(probed):
    """``import posenc_cli`` in a fresh interpreter imports no NumPy (the API resolves lazily, PEP 562), and
    ``posenc_cli.generate`` then works through it."""
    assert probed["import posenc_cli"][1] == []
    _, heavy, shape = probed["posenc_cli.generate"]
    assert shape == "(2, 3)" and "numpy" in heavy


def test_probe_sees_heavy_imports(probed):
    """The guard can fail: generating a table does import NumPy, and the probe sees it after that command."""
    code, heavy, _ = probed["generate"]
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
