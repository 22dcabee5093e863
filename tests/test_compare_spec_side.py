"""``compare`` of a model config (a side that computes every tensor of its kind) with a file holding some of them:
the tensors the file does not hold are skipped, and said, whichever side the config is on; the library takes the
length from the file as the command line does (issue 35)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import cli

from .each import each

LENGTH, HEAD = 24, 16
CONFIG = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4 * HEAD,
    "num_attention_heads": 4,
    "rope_theta": 10000.0,
    "max_position_embeddings": 2048,
}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The config and a file of its cos/sin only (no inv_freq), computed with plain NumPy as transformers' Llama
    rotary class does: inv_freq = 1 / theta ** (arange(0, d, 2) / d), emb = cat(freqs, freqs)."""
    from safetensors.numpy import save_file

    d = tmp_path_factory.mktemp("cfg_vs_file")
    (d / "config.json").write_text(json.dumps(CONFIG))
    inv = 1.0 / 10000.0 ** (np.arange(0, HEAD, 2, dtype=np.float64) / HEAD)
    angles = np.arange(LENGTH, dtype=np.float64)[:, None] * inv[None, :]
    emb = np.concatenate([angles, angles], axis=1)
    save_file({"cos": np.cos(emb), "sin": np.sin(emb)}, str(d / "cs.safetensors"))
    return str(d / "config.json"), str(d / "cs.safetensors")


def test_the_configs_extra_tensor_is_skipped_and_said_on_either_side(pair):
    each([True, False], lambda c: _the_configs_extra_tensor_is_skipped_and_said_on_either_side(pair, c))


def _the_configs_extra_tensor_is_skipped_and_said_on_either_side(pair, config_first):
    config, table = pair
    args = ["compare", config, table] if config_first else ["compare", table, config]
    code, out, err = cli(args)
    text = out.decode() + err
    assert code == 0, text
    assert "only in" not in text, text
    assert "not compared: inv_freq (computed by" in " ".join(text.split()), text
    code, out, _err = cli([*args, "--json"])
    found = json.loads(out)
    assert code == 0 and found["same"] is True, found
    assert found["skipped"] == ["inv_freq"] and found["skipped_by"] == config, found
    assert found["only_in_a"] == [] and found["only_in_b"] == [], found
    assert sorted(t["a"] for t in found["tensors"]) == ["cos", "sin"], found


def test_the_library_takes_the_configs_length_from_the_file(pair):
    each([True, False], lambda c: _the_library_takes_the_configs_length_from_the_file(pair, c))


def _the_library_takes_the_configs_length_from_the_file(pair, config_first):
    import posenc_cli as pe

    config, table = pair
    a, b = (config, table) if config_first else (table, config)
    found = pe.compare(a, b)
    assert found.same, found.reason
    assert found.skipped == ["inv_freq"] and found.only_a == [] and found.only_b == []
    shapes = {tc.result.to_json()["shape_a"][0] for tc in found.tensors}
    assert shapes == {LENGTH}, shapes


def test_a_table_differing_from_its_config_still_differs_with_the_config_first(pair, tmp_path):
    """The skip is of tensors only: a cos/sin off by a base still differs (computed with plain NumPy, base 5e5)."""
    from safetensors.numpy import save_file

    config, _table = pair
    inv = 1.0 / 500000.0 ** (np.arange(0, HEAD, 2, dtype=np.float64) / HEAD)
    angles = np.arange(LENGTH, dtype=np.float64)[:, None] * inv[None, :]
    emb = np.concatenate([angles, angles], axis=1)
    save_file({"cos": np.cos(emb), "sin": np.sin(emb)}, str(tmp_path / "off.safetensors"))
    code, out, err = cli(["compare", config, str(tmp_path / "off.safetensors")])
    assert code == 1, (out, err)
