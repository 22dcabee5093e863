"""Issue 21's RoPE families beyond their golden arrays, never a table from a guess, and bad input.

tests/test_hf_configs.py holds phimoe, olmo3, ernie4_5(_moe), hunyuan_v1_dense, qwen3_vl and qwen2_5_vl_v5
against the arrays transformers' own classes made (tools/golden/make_hf_families_golden.py). Here each rule is
held against plain NumPy written from the class's source, for the cases the published configs cannot show
(Phi-3.5-MoE publishes equal short and long mscales), and the command line's refusals are checked.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.encodings import make_encoding
from posenc_cli.encodings.rope.mrope import MRope
from posenc_cli.errors import ParameterError
from posenc_cli.formats import read_table
from posenc_cli.models.hf_config import read_model_config

from .conftest import ROOT, cli
from .each import each

CONFIGS = ROOT / "tests" / "data" / "configs"
GOLDEN = ROOT / "tests" / "data" / "golden"


def cfg(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def write(tmp_path: Path, config: dict, name: str = "config.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return str(path)


def rope_inv(base: float, d: int) -> np.ndarray:
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


# ----- Phi-3.5-MoE ---------------------------------------------------------------------------------------------
def test_phimoe_mscale_follows_the_table_length_and_short_factors_apply_everywhere():
    c = cfg("phimoe")
    c["rope_scaling"]["short_mscale"], c["rope_scaling"]["long_mscale"] = 1.25, 1.5
    mc = read_model_config(c)
    sf = np.asarray(c["rope_scaling"]["short_factor"])
    for length, mscale in ((4096, 1.25), (4097, 1.5)):  # PhimoeRotaryEmbedding: long if seq_len > 4096
        enc = make_encoding("rope", {**mc.params(length=length), "dtype": "float64"})
        assert enc.rows("cos", 0, 1)[0, 0] == mscale  # cos(0) = 1 times the multiplier
        np.testing.assert_allclose(enc.inv_freq(), rope_inv(10000.0, 16) / sf, rtol=1e-13)
        t = 4095.0
        np.testing.assert_allclose(
            enc.rows("sin", 4095, 4096)[0, :8], mscale * np.sin(t * rope_inv(10000.0, 16) / sf), rtol=1e-9, atol=1e-12
        )
    rep = mc.report()
    assert rep["short_mscale"] == {"value": 1.25, "from": "config key rope_scaling.short_mscale"}
    assert "short factors apply at every length" in rep["long_factor"]["from"]


# ----- OLMo 3 ------------------------------------------------------------------------------------------------
def test_olmo3_yarn_on_full_layers_plain_rope_on_sliding(tmp_path):
    mc = read_model_config(cfg("olmo3"))
    assert mc.layer_types == ("full_attention", "sliding_attention")
    assert mc.params("full_attention", 8)["scaling"] == "yarn"
    assert mc.params("sliding_attention", 8)["scaling"] == "none"
    out = tmp_path / "s.safetensors"
    args = ["generate", "--hf-config", str(CONFIGS / "olmo3.json"), "--len", "64", "--dtype", "float64"]
    code, _, err = cli([*args, "--layer-type", "sliding_attention", "-o", str(out)])
    assert code == 0, err
    t = np.arange(64, dtype=np.float64)[:, None]
    want = np.cos(t * rope_inv(500000.0, 128)[None, :])
    np.testing.assert_allclose(read_table(str(out)).tensors["cos"][:, :64], want, rtol=1e-12, atol=1e-13)
    code, _, err = cli([*args, "-o", str(tmp_path / "x.safetensors")])
    assert code == 2 and "--layer-type" in err and "full_attention, sliding_attention" in err, err


def test_layer_type_is_refused_by_name_where_the_config_names_no_types(tmp_path):
    code, _, err = cli(["generate", "--hf-config", str(CONFIGS / "ernie4_5.json"), "--len", "4",
                        "--layer-type", "sliding_attention", "-o", str(tmp_path / "x.npz")])  # fmt: skip
    assert code == 2 and err.startswith("Error: --layer-type sliding_attention cannot apply to ernie4_5"), err


# ----- ERNIE 4.5, Hunyuan ------------------------------------------------------------------------------------
def test_ernie_rotates_interleaved_pairs():
    each(["ernie4_5", "ernie4_5_moe"], _ernie_rotates_interleaved_pairs)


def _ernie_rotates_interleaved_pairs(name):
    enc = make_encoding("rope", {**read_model_config(cfg(name)).params(length=32), "dtype": "float64"})
    t = np.arange(32, dtype=np.float64)[:, None]
    want = np.repeat(np.cos(t * rope_inv(500000.0, 128)[None, :]), 2, axis=1)  # (2k, 2k + 1) share w_k
    np.testing.assert_allclose(enc.array("cos"), want, rtol=1e-12, atol=1e-13)


def test_hunyuan_alpha_is_a_fixed_ntk_base_at_every_length():
    mc = read_model_config(cfg("hunyuan_v1_dense"))
    base = 10000.0 * 1000.0 ** (128 / 126)  # compute_ntk_alpha_rope_parameters
    for length in (16, 300_000):
        enc = make_encoding("rope", mc.params(length=length))
        np.testing.assert_allclose(enc.inv_freq(), rope_inv(base, 128), rtol=1e-12)
    assert mc.report()["factor"]["from"] == "config key rope_scaling.alpha"
    assert any("rope_scaling.beta_fast is not read" in w for w in mc.warnings)


# ----- M-RoPE ------------------------------------------------------------------------------------------------
def test_qwen3_vl_sections_interleave_t_h_w():
    p = read_model_config(cfg("qwen3_vl")).params(length=8)
    assert p["mrope_interleaved"] is True and p["base"] == 5_000_000.0
    enc = MRope.from_params(p)
    k = np.arange(64)
    want = np.where((k % 3 == 1) & (k < 60), 1, np.where((k % 3 == 2) & (k < 60), 2, 0))
    np.testing.assert_array_equal(enc.axis, want)


def test_mrope_inv_freq_dtype_float32_reproduces_transformers():
    each(["qwen3_vl", "qwen2_vl"], _mrope_inv_freq_dtype_float32_reproduces_transformers)


def _mrope_inv_freq_dtype_float32_reproduces_transformers(name):
    g = json.loads((GOLDEN / f"hf_{name}.json").read_text())
    p = read_model_config(cfg(name)).params(length=8)
    m = MRope.from_params({**p, "inv_freq_dtype": "float32"})
    ref = np.asarray(g["inv_freq"], dtype=np.float32)
    got = m.inv_freq().astype(np.float32)
    assert np.abs(got.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64)).max() <= 2
    # the same float32 arithmetic as the rope kind's (two code paths)
    r = make_encoding("rope", {"length": 8, "dim": m.dim, "base": m.base, "inv_freq_dtype": "float32"})
    np.testing.assert_array_equal(m.inv_freq(), r.inv_freq())
    assert m.tensor_specs()["inv_freq"].dtype == np.float32


# ----- never a table from a guess ----------------------------------------------------------------------------
FANCY = {"model_type": "fancy_lm", "hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 64}


def test_unknown_model_type_is_refused_in_one_line(tmp_path):
    out = tmp_path / "o.safetensors"
    code, _, err = cli(["generate", "--hf-config", write(tmp_path, FANCY), "--len", "4", "-o", str(out)])
    lines = err.strip().splitlines()
    assert code == 2 and not out.exists() and len(lines) == 1, err
    assert "unknown model_type 'fancy_lm'" in lines[0] and "--read-as FAMILY" in lines[0], err


def test_read_as_reads_an_unknown_type_and_names_what_it_did_not_understand(tmp_path_factory):
    each(
        [
            ({"rotary_scale_base": 512}, "config key rotary_scale_base"),
            ({"position_offset": 2}, "config key position_offset"),
            ({"rope_scaling": {"rope_type": "linear", "factor": 2.0, "mscale": 0.5}}, "rope_scaling.mscale"),
            ({"rope_scaling": {"rope_type": "dynamic", "factor": 2.0, "alpha": 3}}, "rope_scaling.alpha"),
        ],
        lambda c: _read_as_reads_an_unknown_type_and_names_what_it_did_not_understand(
            tmp_path_factory.mktemp("case"), c[0], c[1]
        ),
    )


def _read_as_reads_an_unknown_type_and_names_what_it_did_not_understand(tmp_path, extra, named):
    path = write(tmp_path, {**FANCY, **extra})
    out = tmp_path / "o.safetensors"
    code, _, err = cli(["generate", "--hf-config", path, "--len", "4", "-o", str(out)])
    assert code == 2 and not out.exists() and "--read-as FAMILY" in err, err
    code, _, err = cli(["generate", "--hf-config", path, "--len", "4", "--read-as", "llama", "-o", str(out)])
    assert code == 0 and named in err, err
    meta = read_table(str(out)).metadata
    assert meta["hf_read_as"] == "model_type 'fancy_lm' read with llama's rules, as the user asked (read_as)"
    # the file stays a posenc table: its metadata rebuilds it
    code, _, err = cli(["check", str(out), "-q"])
    assert code == 0, err


def test_a_known_family_with_an_unknown_rope_key_is_an_error_too():
    c = {**cfg("llama"), "rope_scaling": {**cfg("llama")["rope_scaling"], "mystery_scale": 2.0}}
    with pytest.raises(ParameterError, match=r"rope_scaling.mystery_scale is a RoPE key posenc does not know"):
        read_model_config(c)
    mc = read_model_config(c, read_as="llama")
    assert mc.assumption and any("mystery_scale" in w for w in mc.warnings)


def test_read_as_names_a_family_or_is_refused(tmp_path):
    with pytest.raises(ParameterError, match=r"read_as='lama' is no family posenc reads; choose from: .*llama"):
        read_model_config(FANCY, read_as="lama")
    code, _, err = cli(["generate", "--kind", "rope", "--len", "4", "--dim", "8", "--read-as", "llama",
                        "-o", str(tmp_path / "x.npz")])  # fmt: skip
    assert code == 2 and "--read-as" in err, err


def test_api_from_config_takes_read_as():
    from posenc_cli import api

    with pytest.raises(ParameterError, match="pass read_as=FAMILY "):
        api.from_config({**FANCY, "rotary_scale_base": 2})
    enc = api.from_config({**FANCY, "rotary_scale_base": 2}, read_as="llama", length=4)
    assert enc.KIND == "rope" and enc.dim == 64


# ----- kinds --hf-config: what was read, from which key -------------------------------------------------------
def test_kinds_hf_config_shows_what_was_read_and_from_which_key():
    each(
        [
            ("phimoe", ["short_mscale", "config key rope_scaling.short_mscale", "long_mscale"]),
            ("olmo3", ["full_attention", "sliding_attention", "yarn"]),
            ("ernie4_5", ["interleaved", "layout of ernie4_5"]),
            ("hunyuan_v1_dense", ["ntk", "config key rope_scaling.alpha"]),
            ("qwen3_vl", ["mrope_interleaved", "text_config.rope_scaling.mrope_section"]),
        ],
        lambda c: _kinds_hf_config_shows_what_was_read_and_from_which_key(*c),
    )


def _kinds_hf_config_shows_what_was_read_and_from_which_key(name, shown):
    code, out, err = cli(["kinds", "--hf-config", str(CONFIGS / f"{name}.json"), "--json"])
    assert code == 0, err
    text = out.decode()
    for s in shown:
        assert s in text, (name, s)


# ----- bad input: one line naming the key, exit 2 -------------------------------------------------------------
def _drop(d: dict, *path: str) -> dict:
    d = json.loads(json.dumps(d))
    node = d
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]
    return d


def _set(d: dict, value, *path: str) -> dict:
    d = json.loads(json.dumps(d))
    node = d
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return d


BAD = [
    ("phimoe", lambda c: _drop(c, "rope_scaling", "long_mscale"), "rope_scaling.long_mscale"),
    ("phimoe", lambda c: _set(c, "big", "rope_scaling", "short_mscale"), "rope_scaling.short_mscale"),
    ("phimoe", lambda c: _set(c, -1.0, "rope_scaling", "short_mscale"), "rope_scaling.short_mscale"),
    ("phimoe", lambda c: _set(c, {"type": "linear", "factor": 2.0, "short_mscale": 1.0, "long_mscale": 1.0},
                              "rope_scaling"), "rope_type 'linear'"),
    ("hunyuan_v1_dense", lambda c: _drop(c, "head_dim"), "head_dim"),
    ("hunyuan_v1_dense", lambda c: _set(c, -5, "rope_scaling", "alpha"), "rope_scaling.alpha"),
    ("hunyuan_v1_dense", lambda c: _set(c, "x", "rope_scaling", "alpha"), "rope_scaling.alpha"),
    ("qwen3_vl", lambda c: _set(c, False, "text_config", "rope_scaling", "mrope_interleaved"),
     "text_config.rope_scaling.mrope_interleaved"),
    ("qwen3_vl", lambda c: _set(c, [24, 20, 19], "text_config", "rope_scaling", "mrope_section"),
     "text_config.rope_scaling.mrope_section"),
    ("olmo3", lambda c: _set(c, "abc", "layer_types"), "layer_types"),
    ("olmo3", lambda c: _set(c, 0.5, "rope_scaling", "beta_fast"), "rope_scaling.beta_fast=0.5"),
    ("ernie4_5", lambda c: _set(c, 0, "head_dim"), "head_dim"),
    ("ernie4_5_moe", lambda c: _set(c, -1, "rope_theta"), "rope_theta"),
]  # fmt: skip


def test_bad_configs_of_the_new_families_name_the_key(tmp_path):
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(BAD, lambda case: _bad_configs_of_the_new_families_name_the_key(tmp_path, *case))


def _bad_configs_of_the_new_families_name_the_key(tmp_path, name, mutate, named):
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # a folder of its own: the cases share tmp_path
    path = write(tmp_path, mutate(cfg(name)))
    out = tmp_path / "o.safetensors"
    code, _, err = cli(["generate", "--hf-config", path, "--len", "4", "--all-layer-types", "-o", str(out)])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("Error: ") and named in lines[0], err
    assert not out.exists()


def test_mrope_offset_is_ropes_offset_for_text():
    each([0, 7, 1000, -5], _mrope_offset_is_ropes_offset_for_text)


def _mrope_offset_is_ropes_offset_for_text(offset):
    # parity with rope: text-only M-RoPE is rope (half layout) at the same offset, row for row
    m = MRope.from_params({"length": 12, "dim": 16, "mrope_section": (2, 3, 3), "base": 1e4, "offset": offset,
                           "dtype": "float64"})  # fmt: skip
    r = make_encoding("rope", {"length": 12, "dim": 16, "base": 1e4, "offset": offset, "dtype": "float64"})
    for name in ("cos", "sin"):
        np.testing.assert_array_equal(m.array(name), r.array(name))
    g = MRope.from_params({"length": 12, "dim": 16, "mrope_section": (2, 3, 3), "grid": "1x2x3", "text_offset": 2,
                           "offset": offset})  # fmt: skip
    g0 = MRope.from_params({"length": 12, "dim": 16, "mrope_section": (2, 3, 3), "grid": "1x2x3", "text_offset": 2})
    np.testing.assert_array_equal(g.position_ids(0, 12), g0.position_ids(0, 12) + offset)


def test_read_as_is_recorded_with_every_layer_type(tmp_path):
    c = {**cfg("olmo3"), "model_type": "olmo3_fancy"}
    out = tmp_path / "all.safetensors"
    args = ["generate", "--hf-config", write(tmp_path, c), "--len", "4", "--all-layer-types", "-o", str(out)]
    code, _, err = cli(args)
    assert code == 2 and "unknown model_type 'olmo3_fancy'" in err, err
    code, _, err = cli([*args, "--read-as", "olmo3"])
    assert code == 0, err
    assert read_table(str(out)).metadata["hf_read_as"].startswith("model_type 'olmo3_fancy' read with olmo3's rules")
    code, _, err = cli(["check", str(out), "-q"])
    assert code == 0, err


def test_mrope_configs_take_rope_parameters_from_the_command_line(tmp_path_factory):
    each(
        ["qwen2_vl", "qwen3_vl"],
        lambda c: _mrope_configs_take_rope_parameters_from_the_command_line(tmp_path_factory.mktemp("case"), c),
    )


def _mrope_configs_take_rope_parameters_from_the_command_line(tmp_path, name):
    out = tmp_path / "m.safetensors"
    code, _, err = cli(["generate", "--hf-config", str(CONFIGS / f"{name}.json"), "--len", "8",
                        "-p", "inv_freq_dtype=float32", "-p", "offset=3", "-o", str(out)])  # fmt: skip
    assert code == 0, err
    table = read_table(str(out))
    assert table.tensors["inv_freq"].dtype == np.float32 and table.metadata["offset"] == "3"
    ids = np.arange(3, 11, dtype=np.float64)[:, None]  # text only: every axis is the position
    want = np.cos(ids * table.tensors["inv_freq"].astype(np.float64)[None, :])
    np.testing.assert_allclose(table.tensors["cos"][:, : want.shape[1]], want, rtol=1e-6, atol=1e-6)


def test_olmo3_flat_rope_parameters_are_ignored_as_transformers_does():
    # Olmo3Config.convert_rope_params_to_dict keeps only the per-type entries of rope_parameters: a flat dict
    # leaves both types at plain RoPE with rope_theta (checked against transformers 5.24's Olmo3Config)
    c = cfg("olmo3")
    c["rope_parameters"] = {**c.pop("rope_scaling"), "rope_theta": 123456.0}
    mc = read_model_config(c)
    for lt in ("full_attention", "sliding_attention"):
        p = mc.params(lt, 8)
        assert p["scaling"] == "none" and p["base"] == 500000.0
    assert any("rope_parameters is flat" in w for w in mc.warnings)


def test_phimoe_mscale_sees_the_users_offset_and_seq_len(tmp_path):
    c = cfg("phimoe")
    c["rope_scaling"]["short_mscale"], c["rope_scaling"]["long_mscale"] = 1.25, 1.5
    path = write(tmp_path, c)
    out = tmp_path / "p.safetensors"
    # rows 5000..5009: HF's max(position_ids) + 1 = 5010 > 4096, so long_mscale
    for extra, want in ((["-p", "offset=5000"], "1.5"), (["-p", "seq_len=100", "-p", "offset=5000"], "1.25")):
        code, _, err = cli(["generate", "--hf-config", path, "--len", "10", *extra, "-o", str(out), "--force"])
        assert code == 0, err
        assert read_table(str(out)).metadata["attention_factor"] == want, extra
    from posenc_cli import api

    assert api.from_config(c, length=10, offset=5000).attention_scaling == 1.5
