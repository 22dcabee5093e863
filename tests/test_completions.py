"""Shell completion through Typer: completions/ holds the scripts Typer generates (this test regenerates them and
fails when they are stale), and every kind of value completes: commands, options, kinds, presets, the ``-p``
parameter names of the kind typed so far, check names, views, dtypes, formats and layer types.

Refresh the scripts with: POSENC_UPDATE_COMPLETIONS=1 python -m pytest tests/test_completions.py

The command line runs in this process (``conftest.cli``); test_startup.py runs completion in fresh interpreters
for every shell, as a shell does, and holds it to its start-up budget.
"""

from __future__ import annotations

import os

from .conftest import ROOT, cli, completion_env, completion_values
from .each import each

SCRIPTS = {"bash": "posenc.bash", "zsh": "_posenc", "fish": "posenc.fish", "powershell": "posenc.ps1"}
NO_DETECTION: dict[str, str] = {}  # --show-completion and --install-completion take the shell's name


def test_completion_script_is_fresh():
    each(list(SCRIPTS), _completion_script_is_fresh)


def _completion_script_is_fresh(shell):
    code, out, err = cli(["--show-completion", shell], env=NO_DETECTION)
    assert code == 0 and out, err
    path = ROOT / "completions" / SCRIPTS[shell]
    if os.environ.get("POSENC_UPDATE_COMPLETIONS"):
        path.write_bytes(out)
    assert path.exists(), f"{path} missing; regenerate with POSENC_UPDATE_COMPLETIONS=1"
    assert path.read_bytes() == out, f"{path} is stale; regenerate with POSENC_UPDATE_COMPLETIONS=1"
    assert b"_POSENC_COMPLETE" in out


def complete(line: str, shell: str = "bash") -> list[str]:
    code, out, err = cli([], env=completion_env(line, shell))
    assert code == 0, err
    return completion_values(out.decode(), shell)


def test_completion_offers_kinds_commands_options_and_values():
    each(list(SCRIPTS), _completion_offers_kinds_commands_options_and_values)


def _completion_offers_kinds_commands_options_and_values(shell):
    assert complete("posenc generate --kind ro", shell) == ["rope", "rope-2d"]
    assert "export" in complete("posenc ex", shell)
    assert complete("posenc gen", shell) == ["generate"]
    assert complete("posenc generate --le", shell) == ["--len"]
    assert complete("posenc generate --dtype bf", shell) == ["bfloat16"]
    assert complete("posenc export x.npy --format safe", shell) == ["safetensors"]
    assert complete("posenc check --expect t", shell) == ["t5"]
    assert complete("posenc kinds sinusoidal-", shell) == ["sinusoidal-2d", "sinusoidal-3d"]
    assert complete("posenc check si", shell) == ["sinusoidal", "sinusoidal-2d", "sinusoidal-3d"]
    assert complete("posenc generate ro", shell) == ["rope", "rope-2d"]
    assert set(complete("posenc ", shell)) == {
        "generate",
        "check",
        "compare",
        "identify",
        "audit",
        "export",
        "plot",
        "kinds",
    }
    assert complete("posenc plot sinusoidal --view ci", shell) == ["circle"]


def test_completion_of_presets_parameters_and_checks():
    each(["bash", "fish"], _completion_of_presets_parameters_and_checks)


def _completion_of_presets_parameters_and_checks(shell):
    # presets of the kind in a spec, and its parameter names
    assert complete("posenc generate rope:preset=llama3", shell) == ["rope:preset=llama3.1"]
    assert "rope:base=" in complete("posenc generate rope:", shell)
    # -p: the parameter names of the kind typed so far (a spec, --kind or --expect), and its presets
    assert complete("posenc generate rope -p bas", shell) == ["base="]
    assert complete("posenc generate --kind sinusoidal -p preset=tf", shell) == ["preset=tf-tutorial"]
    assert complete("posenc check x.npy --expect alibi -p ma", shell) == ["max_bias="]
    assert "rotary_dim=" not in complete("posenc generate sinusoidal -p ", shell)
    assert complete("posenc generate rope -p base=5,fac", shell) == ["base=5,factor="]
    # --require: check names, after commas too
    assert complete("posenc check x.npy --require constant-n", shell) == ["constant-norm"]
    assert complete("posenc check x.npy --require finite,equi", shell) == ["finite,equidistant"]


def test_layer_types_complete_from_the_config_typed_so_far():
    config = ROOT / "tests" / "data" / "configs" / "gemma3_text.json"
    assert complete(f"posenc generate {config} --layer-type sli") == ["sliding_attention"]
    assert complete(f"posenc generate --hf-config {config} --layer-type fu") == ["full_attention"]


def test_the_completion_names_are_the_registries():
    """The names completion offers without importing NumPy are the registries' (regenerate with
    ``python -m posenc_cli.cli._complete`` when this fails)."""
    from posenc_cli.checks import CHECKS
    from posenc_cli.encodings import _names, kind_classes

    classes = kind_classes()
    assert {k: tuple(f.name for f in c.param_fields()) for k, c in classes.items()} == _names.PARAMS
    assert {k: tuple(c.PRESETS) for k, c in classes.items()} == _names.PRESETS
    assert tuple(CHECKS) == _names.CHECKS


def test_show_completion_prints_the_committed_script():
    for shell, name in SCRIPTS.items():
        code, out, _ = cli(["--show-completion", shell], env=NO_DETECTION)
        assert code == 0 and out == (ROOT / "completions" / name).read_bytes()


def test_install_completion_writes_the_script_for_the_shell(tmp_path):
    code, _, err = cli(["--install-completion", "bash"], env={"HOME": str(tmp_path), **NO_DETECTION})
    assert code == 0, err
    installed = tmp_path / ".bash_completions" / "posenc.sh"
    assert installed.read_bytes() == (ROOT / "completions" / "posenc.bash").read_bytes().rstrip(b"\n")
    assert "installed bash completion" in err
    assert f"source '{installed}'" in (tmp_path / ".bashrc").read_text()
    code, _, err = cli(["--install-completion", "tcsh"], env={"HOME": str(tmp_path), **NO_DETECTION})
    assert code == 2 and "tcsh" in err and "\n" not in err.strip()
