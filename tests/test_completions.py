"""completions/ holds the generated shell scripts; this test regenerates them and fails when they are stale.

Refresh them with: POSENC_UPDATE_COMPLETIONS=1 python -m pytest tests/test_completions.py
"""

from __future__ import annotations

import os

import pytest

from .conftest import ROOT, clean_env, run

SCRIPTS = {"bash": "posenc.bash", "zsh": "_posenc", "fish": "posenc.fish", "powershell": "posenc.ps1"}


@pytest.mark.parametrize("shell", list(SCRIPTS))
def test_completion_script_is_fresh(shell):
    proc = run([], env=clean_env(_POSENC_COMPLETE=f"source_{shell}"))
    assert proc.returncode == 0 and proc.stdout, proc.stderr
    path = ROOT / "completions" / SCRIPTS[shell]
    if os.environ.get("POSENC_UPDATE_COMPLETIONS"):
        path.write_bytes(proc.stdout)
    assert path.exists(), f"{path} missing; regenerate with POSENC_UPDATE_COMPLETIONS=1"
    assert path.read_bytes() == proc.stdout, f"{path} is stale; regenerate with POSENC_UPDATE_COMPLETIONS=1"


def complete(line: str, shell: str = "bash") -> list[str]:
    env = clean_env(_POSENC_COMPLETE=f"complete_{shell}", _POSENC_COMPLETE_ARGS=line)
    proc = run([], env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode().split()


@pytest.mark.parametrize("shell", list(SCRIPTS))
def test_completion_offers_kinds_commands_options_and_values(shell):
    assert complete("posenc generate --kind ro", shell) == ["rope"]
    assert "export" in complete("posenc ex", shell)
    assert complete("posenc gen", shell) == ["generate"]
    assert complete("posenc generate --le", shell) == ["--len"]
    assert complete("posenc generate --dtype bf", shell) == ["bfloat16"]
    assert complete("posenc check --expect t", shell) == ["t5"]
    assert complete("posenc kinds sinusoidal-", shell) == ["sinusoidal-2d", "sinusoidal-3d"]
    assert complete("posenc check si", shell) == ["sinusoidal", "sinusoidal-2d", "sinusoidal-3d"]
    assert set(complete("posenc ", shell)) == {"generate", "check", "compare", "identify", "export", "plot", "kinds"}
    assert complete("posenc generate --len ", shell) == []  # a number: nothing to offer


def test_show_completion_prints_the_committed_script():
    for shell, name in SCRIPTS.items():
        proc = run(["--show-completion", shell])
        assert proc.returncode == 0 and proc.stdout == (ROOT / "completions" / name).read_bytes()


def test_install_completion_writes_the_script_for_the_shell(tmp_path):
    env = clean_env(HOME=str(tmp_path), SHELL="/bin/bash")
    proc = run(["--install-completion"], env=env)
    assert proc.returncode == 0, proc.stderr
    installed = tmp_path / ".local/share/bash-completion/completions/posenc"
    assert installed.read_bytes() == (ROOT / "completions" / "posenc.bash").read_bytes()
    proc = run(["--install-completion"], env=clean_env(HOME=str(tmp_path), SHELL="/bin/tcsh"))
    assert proc.returncode == 2 and b"cannot tell your shell" in proc.stderr
