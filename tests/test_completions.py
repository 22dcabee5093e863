"""completions/ holds the generated shell scripts; this test regenerates them and fails when they are stale.

Refresh them with: POSENC_UPDATE_COMPLETIONS=1 python -m pytest tests/test_completions.py

The command line runs in this process (``conftest.cli``); test_startup.py runs completion in fresh interpreters
for every shell, as a shell does, and holds it to its start-up budget.
"""

from __future__ import annotations

import os

import pytest

from .conftest import ROOT, cli

SCRIPTS = {"bash": "posenc.bash", "zsh": "_posenc", "fish": "posenc.fish", "powershell": "posenc.ps1"}


@pytest.mark.parametrize("shell", list(SCRIPTS))
def test_completion_script_is_fresh(shell):
    code, out, err = cli([], env={"_POSENC_COMPLETE": f"source_{shell}"})
    assert code == 0 and out, err
    path = ROOT / "completions" / SCRIPTS[shell]
    if os.environ.get("POSENC_UPDATE_COMPLETIONS"):
        path.write_bytes(out)
    assert path.exists(), f"{path} missing; regenerate with POSENC_UPDATE_COMPLETIONS=1"
    assert path.read_bytes() == out, f"{path} is stale; regenerate with POSENC_UPDATE_COMPLETIONS=1"


def complete(line: str, shell: str = "bash") -> list[str]:
    code, out, err = cli([], env={"_POSENC_COMPLETE": f"complete_{shell}", "_POSENC_COMPLETE_ARGS": line})
    assert code == 0, err
    return out.decode().split()


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
        code, out, _ = cli(["--show-completion", shell])
        assert code == 0 and out == (ROOT / "completions" / name).read_bytes()


def test_install_completion_writes_the_script_for_the_shell(tmp_path):
    code, _, err = cli(["--install-completion"], env={"HOME": str(tmp_path), "SHELL": "/bin/bash"})
    assert code == 0, err
    installed = tmp_path / ".local/share/bash-completion/completions/posenc"
    assert installed.read_bytes() == (ROOT / "completions" / "posenc.bash").read_bytes()
    code, _, err = cli(["--install-completion"], env={"HOME": str(tmp_path), "SHELL": "/bin/tcsh"})
    assert code == 2 and "cannot tell your shell" in err
