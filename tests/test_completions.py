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


def test_completion_offers_kinds_and_commands():
    env = clean_env(_POSENC_COMPLETE="complete_bash", COMP_WORDS="posenc generate --kind ro", COMP_CWORD="3")
    assert run([], env=env).stdout.decode().split() == ["rope"]
    env = clean_env(_POSENC_COMPLETE="complete_bash", COMP_WORDS="posenc ex", COMP_CWORD="1")
    assert "export" in run([], env=env).stdout.decode().split()
