"""The RoPE scaling registry (encodings/rope/scaling.py) against transformers' own code, as literal numbers.

tests/data/golden/hf_scaling.json was written once by tools/golden/make_hf_scaling_golden.py with transformers
5.18 / torch 2.13 in a side environment: for every HF rule (and published YaRN / Llama 3 settings) the
``inv_freq`` that ``ROPE_INIT_FUNCTIONS`` returns in float32, the same code run with float64 tensors, and the
attention factor. posenc's float32 path (``inv_freq_dtype=float32``) must give transformers' float32 values bit
for bit, its exact path the float64 ones to ~1e-15: nothing here recomputes a formula.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.encodings import make_encoding
from posenc_cli.models.hf_config import read_model_config

from .each import each

GOLDEN = json.loads((Path(__file__).parent / "data" / "golden" / "hf_scaling.json").read_text())
CASES = GOLDEN["cases"]

#: Entries where torch's float32 ``base ** x`` is one ulp from the correctly rounded power (checked against
#: mpmath at 50 digits): transformers' inv_freq is 1-2 ulps from posenc's there, which rounds the power correctly.
TORCH_POW_OFF = {
    ("dynamic", 8001): {14},
    **{
        (name, n): {6, 10}
        for name in ("yarn_qwen2_5", "yarn_deepseek_v3", "yarn_mscale_0707", "yarn_gpt_oss", "yarn_attention_factor")
        for n in (1024, 8001)
    },
    **{("yarn_qwen2_5_config", n): {37} for n in (1024, 8001)},
    **{("yarn_head_dim_96", n): {20} for n in (1024, 8001)},
}


def params(case: str, seq_len: int) -> dict:
    """posenc's parameters for the case's Llama config, read by --hf-config's reader, at ``seq_len``."""
    c = CASES[case]
    cfg = {**c["config"], "model_type": "llama"}
    if c["rope_parameters"]:
        cfg["rope_parameters"] = {**c["rope_parameters"], "rope_theta": c["config"]["rope_theta"]}
    return read_model_config(cfg).params(None, seq_len)


def groups():
    return [(case, g) for case, c in CASES.items() for g in c["groups"]]


def ids():
    return [f"{case}-{g['seq_len']}" for case, g in groups()]


def test_float32_path_is_transformers_bit_for_bit():
    """Every case and length of the golden file (:func:`tests.each.each`: each failure named)."""
    by_id = dict(zip(ids(), groups()))
    each(by_id, lambda name: _float32_path_is_transformers_bit_for_bit(*by_id[name]))


def _float32_path_is_transformers_bit_for_bit(case, group):
    enc = make_encoding("rope", {**params(case, group["seq_len"]), "inv_freq_dtype": "float32"})
    got = enc.inv_freq()  # float32 values, held in float64 (the angles are computed from them exactly)
    assert np.array_equal(got, got.astype(np.float32)) and enc.array("inv_freq").dtype == np.float32
    got = got.astype(np.float32)
    ref = np.asarray(group["inv_freq_f32"], dtype=np.float32)
    assert got.shape == ref.shape
    ulps = np.abs(got.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    off = TORCH_POW_OFF.get((case, group["seq_len"]), set())
    assert set(np.flatnonzero(ulps)) <= off, f"{case}: differs at {np.flatnonzero(ulps).tolist()} by {ulps.max()}"
    assert ulps.max() <= 2
    assert enc.attention_scaling == pytest.approx(group["attention_scaling"], rel=1e-15)


def test_exact_path_is_transformers_in_float64():
    """Every case and length of the golden file (:func:`tests.each.each`: each failure named)."""
    by_id = dict(zip(ids(), groups()))
    each(by_id, lambda name: _exact_path_is_transformers_in_float64(*by_id[name]))


def _exact_path_is_transformers_in_float64(case, group):
    enc = make_encoding("rope", {**params(case, group["seq_len"]), "dtype": "float64"})
    ref = np.asarray(group["inv_freq_f64"])
    got = enc.inv_freq()
    assert got.dtype == np.float64 and got.shape == ref.shape
    # transformers' float64 arithmetic is itself a few ulps from the exact value; posenc's is correctly rounded
    np.testing.assert_allclose(got, ref, rtol=2e-15, atol=0)
    assert enc.attention_scaling == pytest.approx(group["attention_scaling"], rel=1e-15)
    assert float(enc.metadata()["attention_scaling"]) == enc.attention_scaling


def test_the_golden_file_covers_every_rule_and_branch():
    rules = {c["rope_parameters"].get("rope_type", "default") for c in CASES.values()}
    assert rules == {"default", "linear", "dynamic", "yarn", "llama3", "longrope", "proportional"}
    # dynamic and longrope see both a short (<= original length) and a long sequence
    assert GOLDEN["seq_lens"] == [1024, 8001]
    yarn = [c["rope_parameters"] for c in CASES.values() if c["rope_parameters"].get("rope_type") == "yarn"]
    assert any(p.get("truncate") is False for p in yarn) and any("attention_factor" in p for p in yarn)
    assert any(p.get("mscale") and p.get("mscale_all_dim") and p["mscale"] != p["mscale_all_dim"] for p in yarn)
    # llama3's three bands (kept, divided by factor, smoothed between) all occur in the Llama 3.1 case
    inv = np.asarray(CASES["llama3_1"]["groups"][0]["inv_freq_f64"])
    plain = 500000.0 ** -(np.arange(0, 128, 2) / 128)
    ratio = inv / plain
    assert np.any(np.isclose(ratio, 1.0)) and np.any(np.isclose(ratio, 1 / 8))
    assert np.any((ratio > 0.13) & (ratio < 0.99))


# ----- ntk: not an HF rope_type; lucidrains/rotary-embedding-torch theta_rescale_factor ------------------------
NTK = GOLDEN["ntk_cases"]["cases"]


def test_ntk_matches_rotary_embedding_torch():
    each(list(NTK), _ntk_matches_rotary_embedding_torch)


def _ntk_matches_rotary_embedding_torch(case):
    c = NTK[case]
    params = {"length": 4, "dim": c["dim"], "base": c["base"], "scaling": "ntk", "factor": c["factor"]}
    f32 = make_encoding("rope", {**params, "inv_freq_dtype": "float32"}).inv_freq().astype(np.float32)
    np.testing.assert_array_equal(f32, np.asarray(c["inv_freq_f32"], dtype=np.float32))  # bit for bit
    exact = make_encoding("rope", {**params, "dtype": "float64"})
    np.testing.assert_allclose(exact.inv_freq(), c["inv_freq_f64"], rtol=2e-15, atol=0)
    assert exact.attention_scaling == 1.0


# ----- the registry's own helpers (run once at import by rope/core.py, so called here directly) ----------------
def test_optional_parameters_name_every_rule_that_reads_them():
    from posenc_cli.encodings.rope.scaling import optional_parameters

    used = optional_parameters()
    assert used["factor"] == ("linear", "ntk", "dynamic", "yarn", "llama3", "longrope", "proportional")
    assert used["seq_len"] == ("dynamic", "longrope") and used["truncate"] == ("yarn",)
    assert used["original_max_position_embeddings"] == ("dynamic", "yarn", "llama3", "longrope")
    assert used["short_factor"] == used["long_factor"] == ("longrope",)


def test_exact_rules_run_at_60_digits():
    from decimal import Decimal

    from posenc_cli.encodings.rope.scaling import PREC, _exact

    enc = make_encoding("rope", {"length": 2, "dim": 6})
    (third,) = _exact(lambda rope: [Decimal(rope.rot_dim) / 18])(enc)
    assert PREC == 60 and str(third) == "0." + "3" * 60
