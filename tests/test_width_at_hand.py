"""A width rule observed at a model type's default config holds for the config at hand (issue 36, part 5).

GLM-4 MoE's default config rotates int(42 x 0.5) = 21 features (an odd width posenc's rope does not build), so
posenc refused every glm4_moe config, GLM-4.5-Air's published one (128 x 0.5 = 64) too. The width is now derived
from the config given, by the rule transformers' own classes apply, held against:

* tests/data/golden/width_rule.json: the frequencies transformers' classes build for seeded random head widths
  and partial factors (tools/golden/make_width_rule_golden.py, run once in the side environment);
* tests/data/golden/published_rope.json: GLM-4.5-Air's cos/sin from Glm4MoeRotaryEmbedding on its config.json;
* the inventory's width probes (tools/inventory: the class built again with one read key changed).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_cli.encodings import make_encoding
from posenc_cli.errors import ParameterError
from posenc_cli.models import records
from posenc_cli.models.hf_config import read_model_config

from .conftest import ROOT, cli
from .each import each
from .test_inventory_coverage import TOOL

AIR = ROOT / "tests" / "data" / "configs" / "published" / "glm-4.5-air.json"
GOLDEN = json.loads((ROOT / "tests" / "data" / "golden" / "published_rope.json").read_text())["configs"]["glm-4.5-air"]
RULES = json.loads((ROOT / "tests" / "data" / "golden" / "width_rule.json").read_text())["rules"]
EPS32 = 2.0**-24


def glm4_moe_config(head: int, share: float) -> dict:
    return {"model_type": "glm4_moe", "head_dim": head, "hidden_size": 4096, "num_attention_heads": 32,
            "max_position_embeddings": 4096, "rope_theta": 10000.0, "partial_rotary_factor": share}  # fmt: skip


# ----- GLM-4.5-Air -------------------------------------------------------------------------------------------
def test_glm45_air_is_read_with_64_rotated_features():
    rep = read_model_config(json.loads(AIR.read_text())).report()
    assert rep["dim"]["value"] == 128 and rep["rotated_dims"]["value"] == 64
    assert len(GOLDEN["layers"]["default"]["inv_freq"]) == 32  # Glm4MoeRotaryEmbedding on the same file


def test_glm45_air_generate_writes_its_own_class_cos(tmp_path):
    out = tmp_path / "air.npz"
    code, _, err = cli(["generate", "--hf-config", str(AIR), "--len", "4096", "-o", str(out)])
    assert code == 0, err
    with np.load(out) as z:
        cos = z["cos"]
    ref = GOLDEN["layers"]["default"]
    want = np.asarray(ref["cos"], dtype=np.float64)  # HF: cat(c, c) over the 64 rotated features
    got = cos[ref["positions"]].astype(np.float64)
    assert got.shape[1] >= 64
    # the class's float32 angles at t = 4095: |t w| 2**-24, below 3e-4
    np.testing.assert_allclose(got[:, :64], want[:, :64], atol=5e-4)


def test_glm45_air_kinds_and_audit_read_it(tmp_path):
    code, out, err = cli(["kinds", "--hf-config", str(AIR), "--json"])
    assert code == 0, err
    assert json.loads(out)["rotated_dims"]["value"] == 64
    (tmp_path / "config.json").write_text(AIR.read_text())
    code, out, err = cli(["audit", str(tmp_path), "--engine", "vllm", "--len", "4096"])
    assert code == 0, err


def test_an_odd_width_at_hand_is_refused_in_one_line():
    # the glm4_moe default's own head: transformers builds 11 frequencies over a width of 21
    with pytest.raises(ParameterError, match="21 rotated features") as exc:
        read_model_config(glm4_moe_config(42, 0.5)).params(None, 8)
    assert "\n" not in str(exc.value)


# ----- the width rule over random heads and partial factors -----------------------------------------------
@settings(max_examples=60, deadline=None)
@given(row=st.sampled_from(RULES["glm4_moe"]))
def test_glm4_moe_width_at_hand_is_its_class_width(row):
    head, share, n_freq, inv = row
    assert records.rotated_frequencies(head, share) == n_freq
    cfg = glm4_moe_config(head, share)
    if int(head * share) % 2:  # a width posenc's rope does not build: refused, never approximated
        with pytest.raises(ParameterError, match="odd"):
            read_model_config(cfg).params(None, 8)
        return
    params = read_model_config(cfg).params(None, 8)
    got = np.asarray(make_encoding("rope", {**params, "dtype": "float64"}).inv_freq(), dtype=np.float64)
    np.testing.assert_allclose(got, np.asarray(inv, dtype=np.float64), rtol=8 * EPS32)


@settings(max_examples=60, deadline=None)
@given(rule=st.sampled_from(["linear", "proportional"]), data=st.data())
def test_rotated_frequencies_follow_transformers_rope_functions(rule, data):
    head, share, n_freq, _ = data.draw(st.sampled_from(RULES[rule]))
    assert records.rotated_frequencies(head, share, "proportional" if rule == "proportional" else "linear") == n_freq


# ----- the rule held against the inventory's probes --------------------------------------------------------
def _probes(*pairs: tuple[dict, int]) -> dict:
    return {"width_probes": [{"set": st, "n_freq": {"default": n}} for st, n in pairs]}


def test_the_head_rule_is_the_one_every_probe_follows():
    raw = {"hidden_size": 4096, "num_attention_heads": 96, "rope_parameters.partial_rotary_factor": 0.5}
    # a class that follows head_dim (GLM-4 MoE): head_dim, else hidden_size // num_attention_heads
    follows = _probes(({}, 11), ({"head_dim": 40}, 10), ({"hidden_size": 8192}, 21))
    assert records._check_width(follows, {}, raw, "config", [], True) == "config"
    # a class whose config class overwrites a given head_dim: hidden_size // num_attention_heads
    ignores = _probes(({}, 11), ({"head_dim": 40}, 11), ({"hidden_size": 8192}, 21))
    assert records._check_width(ignores, {}, raw, "config", [], True) == "computed"
    # a width no rule of posenc derives: refused, naming the config it was seen at
    neither = _probes(({}, 11), ({"head_dim": 40}, 13))
    with pytest.raises(records.Refused, match="head_dim=40"):
        records._check_width(neither, {}, raw, "config", [], True)


def test_glm4_moe_is_derived_from_the_inventory():
    rec = records.record_for("glm4_moe")
    assert rec is not None and rec.origin == "inventory" and rec.head_dim == "config"


#: the frequencies posenc reads at the probes' configs against the class's there: GLM-4 MoE's head_dim,
#: JetMoE's kv_channels (read through the record's alias), Cohere2's head_dim (a given one wins in 5.24),
#: DeepSeek-OCR 2's text model (its class ignores head_dim: hidden_size // num_attention_heads)
def test_readings_at_the_probes_are_the_class_s():
    each(["glm4_moe", "jetmoe", "cohere2", "deepseek_ocr2_text"], _readings_at_the_probes_are_the_class_s)


def _readings_at_the_probes_are_the_class_s(mt):
    assert TOOL.check_probes(mt) >= 1


# ----- rotary classes the inventory observed another way -----------------------------------------------------
#: a parent's sub-config (T5Gemma 2), the layer or attention class alone per layer (dots.llm1, DeepSeek-OCR 2,
#: Qwen3-Omni's talker): models transformers 5.24 cannot build at their own default config
OBSERVED_ANOTHER_WAY = [
    "t5gemma2_text",
    "t5gemma2_encoder",
    "dots1",
    "deepseek_ocr2_text",
    "qwen3_omni_moe_talker_text",
]


def test_types_observed_another_way_are_read_as_their_class():
    each(OBSERVED_ANOTHER_WAY, _types_observed_another_way_are_read_as_their_class)


def _types_observed_another_way_are_read_as_their_class(mt):
    entry = records.inventory_entry(mt)
    assert entry is not None and entry["status"] == "ok"
    assert entry.get("built_from") or entry.get("layer_positions_from")
    # every rope type against the cos/sin the class made at its default config (tests/data/inventory)
    assert TOOL.check_type(mt).startswith("exact")


def test_a_head_dim_beside_qk_rope_head_dim_is_refused_by_name():
    # DeepseekV3Config keeps a head_dim config.json gives (its rotary class then reads it), V2's overwrites it
    cfg = {"model_type": "deepseek_v3", "qk_rope_head_dim": 64, "head_dim": 128, "hidden_size": 7168,
           "num_attention_heads": 128, "max_position_embeddings": 4096}  # fmt: skip
    with pytest.raises(ParameterError, match="head_dim=128 differs from qk_rope_head_dim=64"):
        read_model_config(cfg).params(None, 8)
    cfg["head_dim"] = 64
    assert read_model_config(cfg).params(None, 8)["dim"] == 64


def test_a_hybrid_s_attention_layers_are_matched_to_their_own_layer_types():
    # LFM3: convolution layers between the attention ones; its full-attention layers rotate by proportional RoPE
    entry = records.inventory_entry("lfm3")
    assert entry is not None and set(entry["layer_positions"]) == {"full_attention", "sliding_attention"}
    rec = records.record_for("lfm3")
    assert rec is not None and "conv" in rec.nope
    assert TOOL.check_type("lfm3").startswith("exact")
