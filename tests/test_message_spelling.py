"""Refusals and errors name each option in a spelling the command being run takes (issue 35 part 6): a model
config is named as the command was given it (``--hf-config``, ``--against`` or its positional ``SOURCE``/``KIND``),
never as an option the command has not; the library names keywords."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.conftest import cli
from tests.each import each

BAD_CONFIGS = {
    "bad.json": '{"a":\n',  # invalid JSON
    "arr.json": "[1]\n",  # not an object
    "unk.json": '{"model_type": "frobnicate"}\n',  # a model type posenc does not read
    "nomt.json": '{"hidden_size": 64, "num_attention_heads": 4}\n',  # no model_type, no architectures
}


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_configs")
    for name, text in BAD_CONFIGS.items():
        (d / name).write_text(text)
    np.save(d / "t.npy", np.zeros((8, 8), np.float32))
    return d


def _flags(command: str) -> set[str]:
    from posenc_cli.cli import app

    return {o for p in app().commands[command].params for o in getattr(p, "opts", []) if o.startswith("-")}


def _spelled_options(err: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", err))


CASES = [
    ("kinds", ["kinds", "{c}"], "KIND {c}"),
    ("kinds", ["kinds", "--hf-config", "{c}"], "--hf-config {c}"),
    ("audit", ["audit", "{c}"], "SOURCE {c}"),
    ("generate", ["generate", "{c}", "-o", "{d}/o.npy"], "SOURCE {c}"),
    ("export", ["export", "{c}", "-o", "{d}/o.npy"], "SOURCE {c}"),
    ("export", ["export", "--hf-config", "{c}", "-o", "{d}/o.npy"], "--hf-config {c}"),
    ("check", ["check", "{d}/t.npy", "--against", "{c}"], "--against {c}"),
    ("compare", ["compare", "{c}", "sinusoidal"], "SOURCE {c}"),
]


def test_a_bad_config_is_named_as_the_command_was_given_it(bad):
    """Every bad config given to every command (:func:`tests.each.each`: each failure named)."""
    each([(config, *case) for config in sorted(BAD_CONFIGS) for case in CASES], lambda c: _bad_config(bad, *c))


def _bad_config(bad, config, command, args, named):
    c = str(bad / config)
    code, _out, err = cli([a.format(c=c, d=bad) for a in args])
    assert code == 2, err
    assert err.startswith("Error: ") and err.count("\n") == 1, err
    assert _spelled_options(err) <= _flags(command), err  # no option the command does not take
    if config in ("bad.json", "arr.json"):  # the reading error names where the config came from
        assert f"Error: {named.format(c=c)}: " in err, err


def test_the_library_names_the_config_by_its_keyword(bad):
    import posenc_cli as pe
    from posenc_cli.errors import PosencError

    with pytest.raises(PosencError) as info:
        pe.from_config(str(bad / "bad.json"))
    assert str(info.value).startswith(f"config {bad / 'bad.json'}: invalid JSON"), info.value
    assert "--" not in str(info.value)


LLAMA = "tests/data/llamacpp/llama31"


def test_the_verdicts_length_refusal_names_the_option_that_sets_it():
    import posenc_cli as pe
    from posenc_cli.errors import ParameterError

    with pytest.raises(ParameterError) as info:
        pe.check_gguf(f"{LLAMA}.gguf", f"{LLAMA}.config.json", length=10**8)
    assert "give a smaller length" in str(info.value) and "--" not in str(info.value), info.value
    code, _out, err = cli(["check", f"{LLAMA}.gguf", "--against", f"{LLAMA}.config.json", "--len", "100000000"])
    assert code == 2 and "give a smaller --len" in err, err
    assert _spelled_options(err) <= _flags("check"), err


def test_a_learned_layer_refusal_names_layer_type_in_each_spelling(bad):
    import posenc_cli as pe
    from posenc_cli.errors import ParameterError

    cfg = bad / "gpt2.json"
    cfg.write_text('{"model_type": "gpt2", "n_positions": 1024, "n_embd": 768, "n_head": 12}')
    with pytest.raises(ParameterError, match=r"give the model directory and layer_type instead"):
        pe.from_config_layers(str(cfg))
    code, _out, err = cli(["generate", str(cfg), "--all-layer-types", "-o", str(bad / "o.safetensors")])
    assert code == 2 and "give the model directory and --layer-type instead" in err, err


def test_the_hub_refusal_names_download_in_each_spelling(monkeypatch):
    import sys

    from posenc_cli.auditing import hub
    from posenc_cli.cli import _spelling
    from posenc_cli.errors import InputError

    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # not installed
    with pytest.raises(InputError) as info:
        hub._hub()
    assert str(info.value).startswith("download needs huggingface_hub"), info.value
    assert info.value.render(_spelling(["audit"])).startswith("--download needs huggingface_hub")


@pytest.mark.parametrize("offline", ["", "1"])
def test_a_hub_id_not_in_the_cache_names_download_in_each_spelling(tmp_path, monkeypatch, offline):
    import posenc_cli as pe
    from posenc_cli.errors import InputError

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty cache: nothing is fetched without download
    monkeypatch.setenv("HF_HUB_OFFLINE", offline)
    with pytest.raises(InputError) as info:
        pe.audit("no-such-org/no-such-model")
    assert "pass download" in str(info.value) and "--" not in str(info.value), info.value
    code, _out, err = cli(["audit", "no-such-org/no-such-model"])
    assert code == 2 and "pass --download" in err, err


def test_the_audits_default_length_note_names_the_option_in_each_spelling():
    import posenc_cli as pe

    config = "tests/data/configs/positions/pos_mt5_small.json"
    notes = " ".join(pe.audit(config).to_json()["notes"])
    assert "length N overrides" in notes and "--len" not in notes, notes
    code, out, err = cli(["audit", config])
    assert code == 0 and "--len N overrides" in " ".join((out.decode() + err).split()), (out, err)


def test_export_and_check_refusals_name_their_options_in_each_spelling(bad):
    import posenc_cli as pe
    from posenc_cli.api import export_source
    from posenc_cli.errors import ParameterError

    table = str(bad / "t.npy")
    with pytest.raises(ParameterError) as info:
        export_source(table, onnx_rope=True)
    assert str(info.value).startswith("onnx_rope needs a spec"), info.value
    code, _out, err = cli(["export", table, "--onnx-rope", "-o", str(bad / "x.npy")])
    assert code == 2 and err.startswith("Error: --onnx-rope needs a spec"), err
    with pytest.raises(ParameterError) as info:
        pe.check_sources([f"{LLAMA}.gguf", table], against=f"{LLAMA}.config.json")
    assert "check GGUF files against a config" in str(info.value), info.value
    code, _out, err = cli(["check", f"{LLAMA}.gguf", table, "--against", f"{LLAMA}.config.json"])
    assert code == 2 and "check GGUF files --against a config" in err, err


def test_a_bad_config_is_named_by_the_argument_that_gave_it(bad, tmp_path):
    c = str(bad / "bad.json")
    code, _out, err = cli(["export", "rope", "--hf-config", c, "-o", str(tmp_path / "x.npy")])
    assert code == 2 and err.startswith(f"Error: --hf-config {c}: invalid JSON"), err  # not SOURCE, the spec
    code, _out, err = cli(["check", str(bad / "t.npy"), f"--against={c}"])
    assert code == 2 and err.startswith(f"Error: --against {c}: invalid JSON"), err
    code, _out, err = cli(["export", "-o", str(tmp_path / "x.npy")])  # the option itself: still its flag
    assert code == 2 and "or --hf-config" in err, err
