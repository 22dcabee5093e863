"""Tests of the rope and xpos kinds.

Expected values come from independent plain-NumPy float64 reimplementations of the published formulas, written
from the source text of huggingface/transformers ``src/transformers/modeling_rope_utils.py`` (the
``_compute_*_parameters`` functions) and lucidrains/rotary-embedding-torch ``RotaryEmbedding`` (``theta_rescale_factor``,
``get_scale``), plus golden numbers; never from posenc's own output. YaRN is held to transformers' own numbers
(tests/data/golden/hf_scaling.json, its ``_compute_yarn_parameters`` run in float64), not to a re-derivation.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_cli.encodings import make_encoding
from posenc_cli.encodings.rope import Rope, XPos
from posenc_cli.errors import ParameterError
from posenc_cli.models.hf_config import params_from_hf_config, read_model_config

from .each import each

#: transformers' own YaRN (and every other rule) in float64: tools/golden/make_hf_scaling_golden.py
HF_SCALING = json.loads((Path(__file__).parent / "data" / "golden" / "hf_scaling.json").read_text())["cases"]


def hf_golden(case: str) -> tuple[np.ndarray, float]:
    """(inv_freq, attention_scaling) that transformers computes for ``case`` (float64 arithmetic)."""
    group = HF_SCALING[case]["groups"][0]
    return np.asarray(group["inv_freq_f64"]), group["attention_scaling"]


def rope(**params) -> Rope:
    params.setdefault("length", 16)
    params.setdefault("dtype", "float64")
    return make_encoding("rope", params)


# ----- independent references (float64, straight from the published formulas) -------------------------------
def ref_default(base: float, d: int) -> np.ndarray:
    return 1.0 / (base ** (np.arange(0, d, 2, dtype=np.int64).astype(np.float64) / d))


def ref_dynamic(base, d, factor, seq_len, max_pos):
    seq_len = max(seq_len, max_pos)
    base = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (d / (d - 2))
    return ref_default(base, d)


def ref_llama3(base, d, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, old_context_len=8192):
    inv_freq = ref_default(base, d)
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth) * inv_freq_llama / factor + smooth * inv_freq_llama
    is_medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return np.where(is_medium, smoothed, inv_freq_llama)


def ref_longrope(base, d, short_factor, long_factor, factor, omp, seq_len):
    attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(omp))
    ext = np.array(long_factor if seq_len and seq_len > omp else short_factor, dtype=np.float64)
    shape = np.arange(0, d, 2, dtype=np.int64).astype(np.float64) / d
    return 1.0 / (ext * base**shape), attention


def ref_proportional(base, head_dim, proportion, factor=1.0):
    rope_angles = int(proportion * head_dim // 2)
    rotated = 1.0 / (base ** (np.arange(0, 2 * rope_angles, 2, dtype=np.int64).astype(np.float64) / head_dim))
    return np.concatenate([rotated, np.zeros(head_dim // 2 - rope_angles)]) / factor


def ref_xpos(d, positions, scale_base=512.0, interleaved=True):
    zeta = (np.arange(0, d, 2) + 0.4 * d) / (1.4 * d)
    power = (positions - len(positions) // 2) / scale_base
    scale = zeta ** power[:, None]
    return np.repeat(scale, 2, axis=1) if interleaved else np.concatenate([scale, scale], axis=1)


def assert_freqs(enc: Rope, expected, rtol=1e-14):
    np.testing.assert_allclose(enc.inv_freq(), expected, rtol=rtol, atol=0)
    np.testing.assert_allclose(enc.array("inv_freq"), expected, rtol=rtol, atol=0)


def tables_from(inv_freq, positions, s=1.0, layout="half"):
    ang = np.outer(positions, inv_freq)
    c, sn = s * np.cos(ang), s * np.sin(ang)
    if layout == "half":
        return np.concatenate([c, c], 1), np.concatenate([sn, sn], 1)
    return np.repeat(c, 2, 1), np.repeat(sn, 2, 1)


# ----- golden values and the plain formula -----------------------------------------------------------------
def test_golden_inv_freq_base_10000_dim_8():
    enc = rope(dim=8)
    np.testing.assert_array_equal(enc.inv_freq(), [1.0, 0.1, 0.01, 0.001])
    assert enc.attention_scaling == 1.0
    assert enc.metadata()["attention_scaling"] == "1.0"
    assert enc.metadata()["rot_dim"] == "8"


def test_inv_freq_matches_formula():
    each([(10000.0, 64), (500000.0, 128), (1e6, 80), (10.0, 2)], lambda c: _inv_freq_matches_formula(*c))


def _inv_freq_matches_formula(base, d):
    assert_freqs(rope(dim=d, base=base), ref_default(base, d))


def test_cos_sin_match_numpy_at_small_positions():
    each(["half", "interleaved"], _cos_sin_match_numpy_at_small_positions)


def _cos_sin_match_numpy_at_small_positions(layout):
    enc = rope(dim=16, base=10000.0, layout=layout, length=64)
    c, s = tables_from(ref_default(10000.0, 16), np.arange(64), layout=layout)
    np.testing.assert_allclose(enc.array("cos"), c, atol=1e-13, rtol=0)
    np.testing.assert_allclose(enc.array("sin"), s, atol=1e-13, rtol=0)


def test_layout_column_order():
    half = rope(dim=8, layout="half", length=32)
    inter = rope(dim=8, layout="interleaved", length=32)
    for name in ("cos", "sin"):
        h, i = half.array(name), inter.array(name)
        np.testing.assert_array_equal(h[:, :4], h[:, 4:])  # cat(f, f)
        np.testing.assert_array_equal(i[:, 0::2], i[:, 1::2])  # pairs (2k, 2k+1)
        np.testing.assert_array_equal(i[:, 0::2], h[:, :4])
    # column 1 of the half table is the second frequency (0.1); of the interleaved one the first (1.0)
    np.testing.assert_allclose(half.array("sin")[3, 1], math.sin(0.3), rtol=1e-15)
    np.testing.assert_allclose(inter.array("sin")[3, 1], math.sin(3.0), rtol=1e-15)


def test_float32_output_is_correctly_rounded_far_out():
    # position 10**6: float32 angle formulas are off by ~1e-2 here; ours must be within an ulp of the truth
    enc = rope(dim=8, offset=10**6, length=2, dtype="float32")
    t = np.array([10**6, 10**6 + 1], dtype=np.float64)
    # |t w| <= 1e6: float64 angle error <= 1e6 * 2**-53 ~ 1e-10, far below a float32 ulp
    expected = np.cos(np.outer(t, [1.0, 0.1, 0.01, 0.001])).astype(np.float32)
    np.testing.assert_allclose(enc.array("cos")[:, :4], expected, atol=1.2e-7, rtol=0)


def test_partial_rotary_dim_and_factor():
    enc = rope(dim=64, rotary_dim=16)
    assert enc.tensor_specs()["cos"].shape == (16, 16)
    assert_freqs(enc, ref_default(10000.0, 16))
    # Phi-2: head 80, partial_rotary_factor 0.4 -> int(32.0) = 32 rotated features
    phi2 = rope(dim=80, partial_rotary_factor=0.4)
    assert phi2.rot_dim == 32 and phi2.tensor_specs()["sin"].shape == (16, 32)
    assert_freqs(phi2, ref_default(10000.0, 32))
    # HF truncates: int(36 * 0.3) = int(10.799999999999999) = 10
    assert rope(dim=36, partial_rotary_factor=0.3).rot_dim == 10


def test_offset_shifts_rows():
    full = rope(dim=12, length=40)
    shifted = rope(dim=12, length=30, offset=10)
    for name in ("cos", "sin"):
        np.testing.assert_array_equal(shifted.array(name), full.array(name)[10:])
    neg = rope(dim=12, length=4, offset=-2)
    np.testing.assert_allclose(neg.array("sin")[0, :6], np.sin(-2 * ref_default(10000.0, 12)), rtol=1e-15)


def test_blocks_equal_whole_table():
    enc = rope(dim=10, length=50, scaling="yarn", factor=4.0, original_max_position_embeddings=16)
    whole = enc.array("cos")
    parts = np.concatenate([enc.rows("cos", a, min(a + 7, 50)) for a in range(0, 50, 7)])
    np.testing.assert_array_equal(parts, whole)


def test_bad_parameters_are_refused_with_a_clear_message():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            ({"dim": 7}, "rot_dim=7 is odd"),
            ({"dim": 64, "rotary_dim": 5}, "rot_dim=5 is odd"),
            ({"dim": 12, "partial_rotary_factor": 0.25}, "rot_dim=3 is odd"),
            ({"dim": 8, "rotary_dim": 16}, "rotary_dim=16 exceeds dim=8"),
            ({"dim": 8, "rotary_dim": 4, "partial_rotary_factor": 0.5}, "not both"),
            ({"dim": 8, "layout": "split"}, "choose from: half, interleaved"),
            ({"dim": 8, "scaling": "ntk2"}, "choose from: none, linear"),
            ({"dim": 8, "factor": 2.0}, "factor is not used by scaling=none"),
            ({"dim": 8, "scaling": "linear"}, "needs factor"),
            ({"dim": 8, "scaling": "dynamic", "factor": 2.0}, "needs original_max_position_embeddings"),
            ({"dim": 2, "scaling": "ntk", "factor": 2.0}, "rot_dim > 2"),
            (
                {
                    "dim": 8,
                    "scaling": "yarn",
                    "factor": 2.0,
                    "original_max_position_embeddings": 8,
                    "beta_fast": 1.0,
                    "beta_slow": 2.0,
                },
                "beta_fast > beta_slow",
            ),
            (
                {"dim": 8, "scaling": "llama3", "low_freq_factor": 4.0, "high_freq_factor": 1.0},
                "high_freq_factor > low_freq_factor",
            ),
            (
                {
                    "dim": 8,
                    "scaling": "longrope",
                    "short_factor": "1;1;1",
                    "long_factor": "1;1;1;1",
                    "original_max_position_embeddings": 4,
                    "factor": 2.0,
                },
                "short_factor has 3 entries; longrope needs rot_dim/2 = 4",
            ),
            (
                {
                    "dim": 8,
                    "scaling": "longrope",
                    "short_factor": "1;1;1;1",
                    "long_factor": "1;1;1;1",
                    "original_max_position_embeddings": 4,
                },
                "needs factor",
            ),
            ({"dim": 8, "base": 0.0}, "base=0.0 is out of range"),
            ({"dim": 8, "offset": 2**31 - 2}, "exceeds"),
            ({"dim": 8, "cache": "gguf"}, "choose from: full, onnx"),
            ({"dim": 8, "beta_fast": 4.0}, "beta_fast is not used by scaling=none"),
        ],
        lambda case: _bad_parameters_are_refused_with_a_clear_message(*case),
    )


def _bad_parameters_are_refused_with_a_clear_message(params, needle):
    with pytest.raises(ParameterError, match=None) as info:
        rope(**params)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


# ----- scaling rules against HF's formulas -----------------------------------------------------------------
def test_linear():
    assert_freqs(rope(dim=64, scaling="linear", factor=4.0), ref_default(10000.0, 64) / 4.0)


def test_ntk_matches_theta_rescale_factor():
    d, f = 64, 8.0
    theta = 10000.0 * f ** (d / (d - 2))  # rotary-embedding-torch: theta *= theta_rescale_factor ** (dim / (dim - 2))
    assert_freqs(rope(dim=d, scaling="ntk", factor=f), ref_default(theta, d), rtol=1e-13)


def test_dynamic():
    each([100, 2048, 2049, 5000, 32768], _dynamic)


def _dynamic(seq_len):
    enc = rope(
        dim=128, base=10000.0, scaling="dynamic", factor=2.0, original_max_position_embeddings=2048, seq_len=seq_len
    )
    assert_freqs(enc, ref_dynamic(10000.0, 128, 2.0, seq_len, 2048), rtol=1e-13)
    if seq_len <= 2048:
        np.testing.assert_array_equal(enc.inv_freq(), rope(dim=128).inv_freq())
    assert enc.attention_scaling == 1.0


def test_dynamic_seq_len_defaults_to_last_position_plus_one():
    enc = rope(dim=16, scaling="dynamic", factor=2.0, original_max_position_embeddings=8, length=20, offset=4)
    assert enc.effective_seq_len == 24
    assert_freqs(enc, ref_dynamic(10000.0, 16, 2.0, 24, 8), rtol=1e-13)


def test_yarn():
    each(["yarn_qwen2_5", "yarn_deepseek_v3", "yarn_mscale_0707", "yarn_gpt_oss", "yarn_attention_factor"], _yarn)


def _yarn(case):
    # published YaRN settings (Qwen2.5, DeepSeek-V3, gpt-oss's truncate=False, an explicit attention_factor)
    # on head_dim 64 and base 150000, against transformers' _compute_yarn_parameters run in float64
    kw = {k: v for k, v in HF_SCALING[case]["rope_parameters"].items() if k != "rope_type"}
    d, base = 64, HF_SCALING[case]["config"]["rope_theta"]
    assert base == 150000.0
    enc = rope(dim=d, base=base, scaling="yarn", **kw)
    expected, attention = hf_golden(case)
    assert_freqs(enc, expected, rtol=2e-15)
    assert enc.attention_scaling == pytest.approx(attention, rel=1e-15)
    # attention_scaling is applied to the tables, as HF multiplies cos and sin by it
    c, s = tables_from(expected, np.arange(16), attention)
    np.testing.assert_allclose(enc.array("cos"), c, atol=1e-13, rtol=0)
    np.testing.assert_allclose(enc.array("sin"), s, atol=1e-13, rtol=0)
    assert float(enc.metadata()["attention_scaling"]) == enc.attention_scaling


def test_yarn_attention_factor_is_0_1_ln_factor_plus_1():
    for f in (2.0, 4.0, 32.0):
        enc = rope(dim=32, scaling="yarn", factor=f, original_max_position_embeddings=1024)
        assert enc.attention_scaling == pytest.approx(0.1 * math.log(f) + 1, rel=1e-15)


def test_llama3_golden_behaviour():
    d, base, L = 128, 500000.0, 8192
    enc = rope(
        dim=d,
        base=base,
        scaling="llama3",
        factor=8.0,
        low_freq_factor=1.0,
        high_freq_factor=4.0,
        original_max_position_embeddings=L,
    )
    plain = ref_default(base, d)
    got = enc.inv_freq()
    assert_freqs(enc, ref_llama3(base, d), rtol=1e-13)
    wavelen = 2 * np.pi / plain
    high, low = wavelen < L / 4, wavelen > L / 1
    assert high.sum() > 0 and low.sum() > 0 and (~high & ~low).sum() > 0
    np.testing.assert_allclose(got[high], plain[high], rtol=1e-15)  # high-frequency components unchanged
    np.testing.assert_allclose(got[low], plain[low] / 8, rtol=1e-15)  # low ones divided by 8
    mid = ~high & ~low
    ratio = got[mid] / plain[mid]  # smooth band: strictly between 1/8 and 1, falling with wavelength
    assert np.all((ratio > 1 / 8) & (ratio < 1)) and np.all(np.diff(ratio) < 0)
    assert enc.attention_scaling == 1.0
    # the defaults are Llama 3.1's release values
    np.testing.assert_array_equal(rope(dim=d, base=base, scaling="llama3").inv_freq(), got)


def test_longrope():
    each([None, 4096, 4097], _longrope)


def _longrope(seq_len):
    d = 16
    short = tuple(1.0 + 0.05 * k for k in range(d // 2))
    long = tuple(1.0 + 2.5 * k for k in range(d // 2))
    kw = {} if seq_len is None else {"seq_len": seq_len}
    enc = rope(
        dim=d,
        scaling="longrope",
        short_factor=short,
        long_factor=long,
        factor=32.0,
        original_max_position_embeddings=4096,
        **kw,
    )
    expected, attention = ref_longrope(10000.0, d, short, long, 32.0, 4096, enc.effective_seq_len)
    assert_freqs(enc, expected, rtol=1e-14)
    assert enc.attention_scaling == pytest.approx(math.sqrt(1 + math.log(32.0) / math.log(4096)), rel=1e-15)
    assert attention == enc.attention_scaling
    if seq_len == 4097:
        np.testing.assert_allclose(enc.inv_freq(), ref_default(10000.0, d) / np.array(long), rtol=1e-14)
    else:
        np.testing.assert_allclose(enc.inv_freq(), ref_default(10000.0, d) / np.array(short), rtol=1e-14)
    assert enc.metadata()["short_factor"].startswith("[1.0, 1.05")


def test_longrope_list_parses_from_strings():
    enc = make_encoding("rope", {"length": 4, "dim": 4, "scaling": "longrope", "short_factor": "1.0;1.5", "long_factor": "[2.0, 3.0]",
                                 "original_max_position_embeddings": "8", "factor": "2"})  # fmt: skip
    assert enc.short_factor == (1.0, 1.5) and enc.long_factor == (2.0, 3.0)


def test_proportional():
    each([(1.0, 1.0), (0.25, 1.0), (0.5, 8.0)], lambda c: _proportional(*c))


def _proportional(proportion, factor):
    d = 64
    enc = rope(dim=d, base=1e6, scaling="proportional", partial_rotary_factor=proportion, factor=factor)
    expected = ref_proportional(1e6, d, proportion, factor)
    assert enc.tensor_specs()["cos"].shape == (16, d)
    assert_freqs(enc, expected, rtol=1e-14)
    c, s = tables_from(expected, np.arange(16))
    np.testing.assert_allclose(enc.array("cos"), c, atol=1e-13, rtol=0)
    np.testing.assert_allclose(enc.array("sin"), s, atol=1e-13, rtol=0)


def test_onnx_cache():
    full = rope(dim=16, scaling="yarn", factor=4.0, original_max_position_embeddings=8, length=20)
    onnx = rope(dim=16, scaling="yarn", factor=4.0, original_max_position_embeddings=8, length=20, cache="onnx")
    specs = onnx.tensor_specs()
    assert list(specs) == ["cos_cache", "sin_cache", "inv_freq"]
    assert specs["cos_cache"].shape == (20, 8) and onnx.PRIMARY == "cos_cache" and Rope.PRIMARY == "cos"
    np.testing.assert_array_equal(onnx.array(), full.array("cos")[:, :8])
    np.testing.assert_array_equal(onnx.array("sin_cache"), full.array("sin")[:, :8])


def test_inv_freq_dtype_float32_follows_hf_float32_arithmetic():
    enc = rope(dim=128, base=500000.0, inv_freq_dtype="float32")
    assert enc.tensor_specs()["inv_freq"].dtype == np.float32
    f32 = enc.array("inv_freq")
    # HF: 1.0 / (base ** (torch.arange(0, d, 2).float() / d)) in float32. Its error is dominated by the float32
    # exponent 2k/d, so the values follow base ** -float32(2k/d) (to ~1 ulp), not the true base ** (-2k/d)
    e32 = (np.arange(0, 128, 2) / 128).astype(np.float32).astype(np.float64)
    hf_like = 1.0 / 500000.0**e32
    # two float32 roundings (pow, then reciprocal): at most 1.5 ulp
    assert np.all(np.abs(f32 - hf_like) <= 1.5 * np.spacing(f32).astype(np.float64))
    exact = ref_default(500000.0, 128)
    assert np.sum(f32 != exact.astype(np.float32)) > 10  # not merely the correctly rounded values
    # the float32 frequencies are then used exactly: angles t * w are not rounded to float32
    t = np.arange(16, dtype=np.float64)
    c, _ = tables_from(f32.astype(np.float64), t)
    np.testing.assert_allclose(enc.array("cos"), c, atol=1e-13, rtol=0)


# ----- properties ------------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    half_dim=st.integers(1, 32),
    base=st.floats(2.0, 1e6),
    offset=st.integers(-(10**6), 10**6),
    factor=st.floats(1.0, 64.0),
    layout=st.sampled_from(["half", "interleaved"]),
)
def test_pythagoras_with_attention_scaling(half_dim, base, offset, factor, layout):
    d = 2 * half_dim
    enc = rope(dim=d, base=base, offset=offset, length=8, layout=layout, scaling="yarn", factor=factor,
               original_max_position_embeddings=64, beta_fast=32.0, beta_slow=1.0)  # fmt: skip
    c, s = enc.array("cos"), enc.array("sin")
    np.testing.assert_allclose(c**2 + s**2, enc.attention_scaling**2, rtol=1e-14)


@settings(max_examples=40, deadline=None)
@given(
    half_dim=st.integers(1, 24),
    base=st.floats(2.0, 1e6),
    m=st.integers(-(10**5), 10**5),
    n=st.integers(-(10**5), 10**5),
    layout=st.sampled_from(["half", "interleaved"]),
)
def test_rotation_is_relative(half_dim, base, m, n, layout):
    # R(m)^T R(n) = R(n - m): cos(m)cos(n) + sin(m)sin(n) = cos(n - m), sin(n)cos(m) - cos(n)sin(m) = sin(n - m)
    d = 2 * half_dim

    def row(t):
        enc = rope(dim=d, base=base, layout=layout, offset=t, length=1)
        return enc.array("cos")[0], enc.array("sin")[0]

    cm, sm = row(m)
    cn, sn = row(n)
    cd, sd = row(n - m)
    np.testing.assert_allclose(cm * cn + sm * sn, cd, atol=1e-14)
    np.testing.assert_allclose(sn * cm - cn * sm, sd, atol=1e-14)


# ----- HF config.json reader -------------------------------------------------------------------------------
def build(config, length=32, **kw):
    return make_encoding("rope", {**params_from_hf_config(config, length, **kw), "dtype": "float64"})


LLAMA31 = {
    "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
}  # fmt: skip


def test_hf_llama31():
    enc = build(LLAMA31)
    assert enc.dim == 128 and enc.scaling == "llama3" and enc.layout == "half"
    assert_freqs(enc, ref_llama3(500000.0, 128), rtol=1e-13)
    assert params_from_hf_config(LLAMA31, None)["length"] == 131072


def test_hf_new_rope_parameters_format():
    cfg = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16, "head_dim": 256, "max_position_embeddings": 4096,
           "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e6}}  # fmt: skip
    enc = build(cfg)
    assert enc.dim == 256
    assert_freqs(enc, ref_default(1e6, 256) / 2.0)


def test_hf_linear_old_type_key():
    cfg = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8, "max_position_embeddings": 4096, "rope_theta": 10000.0,
           "rope_scaling": {"type": "linear", "factor": 4.0}}  # fmt: skip
    assert_freqs(build(cfg), ref_default(10000.0, 64) / 4.0)


def test_hf_yarn_qwen_and_deepseek():
    qwen = {"model_type": "qwen2", "hidden_size": 5120, "num_attention_heads": 40, "max_position_embeddings": 131072, "rope_theta": 1e6,
            "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}  # fmt: skip
    enc = build(qwen)
    expected, attention = hf_golden("yarn_qwen2_5_config")
    assert_freqs(enc, expected, rtol=2e-15)
    assert enc.attention_scaling == pytest.approx(attention, rel=1e-15) == pytest.approx(0.1 * math.log(4) + 1)
    # DeepSeek-V3 (MLA): the rotated width is qk_rope_head_dim, not hidden_size // num_attention_heads
    deepseek = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128, "qk_rope_head_dim": 64, "max_position_embeddings": 163840,
                "rope_theta": 10000,
                "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                                 "original_max_position_embeddings": 4096, "type": "yarn"}}  # fmt: skip
    enc = build(deepseek)
    expected, attention = hf_golden("yarn_deepseek_v3_config")
    assert_freqs(enc, expected, rtol=2e-15)
    assert enc.attention_scaling == attention == 1.0
    # factor missing: HF uses max_position_embeddings / original_max_position_embeddings
    no_factor = {**qwen, "rope_scaling": {"type": "yarn", "factor": None, "original_max_position_embeddings": 32768}}
    assert params_from_hf_config(no_factor, 8)["factor"] == 4.0


def test_hf_longrope_phi3():
    short = [1.0 + 0.01 * k for k in range(48)]
    long = [1.0 + 0.5 * k for k in range(48)]
    phi3 = {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 131072,
            "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
            "rope_scaling": {"type": "longrope", "short_factor": short, "long_factor": long}}  # fmt: skip
    enc = build(phi3, length=16)
    expected, attention = ref_longrope(10000.0, 96, short, long, 131072 / 4096, 4096, 16)
    assert_freqs(enc, expected, rtol=1e-14)
    assert enc.attention_scaling == pytest.approx(attention, rel=1e-15)
    long_enc = build(phi3, length=8192)  # past the original context: long factors
    np.testing.assert_allclose(long_enc.inv_freq(), ref_default(10000.0, 96) / np.array(long), rtol=1e-14)


def test_hf_partial_rotary_gpt_neox_and_phi2():
    neox = {"model_type": "gpt_neox", "hidden_size": 6144, "num_attention_heads": 64, "rotary_pct": 0.25,
            "rotary_emb_base": 10000, "max_position_embeddings": 2048}  # fmt: skip
    enc = build(neox)
    assert enc.rot_dim == 24 and enc.tensor_specs()["cos"].shape == (32, 24)
    assert_freqs(enc, ref_default(10000.0, 24))
    phi2 = {"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32, "partial_rotary_factor": 0.4,
            "rope_theta": 10000.0, "max_position_embeddings": 2048}  # fmt: skip
    enc = build(phi2)
    assert enc.rot_dim == 32
    assert_freqs(enc, ref_default(10000.0, 32))
    gptj = {"model_type": "gptj", "n_embd": 4096, "hidden_size": 4096, "num_attention_heads": 16, "rotary_dim": 64,
            "max_position_embeddings": 2048}  # fmt: skip
    enc = build(gptj)
    assert enc.layout == "interleaved" and enc.rot_dim == 64


def test_hf_dynamic_uses_max_position_embeddings():
    cfg = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096, "rope_theta": 10000.0,
           "rope_scaling": {"type": "dynamic", "factor": 2.0}}  # fmt: skip
    short, long = build(cfg, length=1000), build(cfg, length=10000)
    np.testing.assert_array_equal(short.inv_freq(), rope(dim=128).inv_freq())
    assert_freqs(long, ref_dynamic(10000.0, 128, 2.0, 10000, 4096), rtol=1e-13)


def test_hf_per_layer_rope_parameters():
    cfg = {"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8, "head_dim": 128, "max_position_embeddings": 8192,
           "rope_parameters": {"full_attention": {"rope_type": "proportional", "rope_theta": 1e6, "partial_rotary_factor": 0.25},
                               "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}  # fmt: skip
    with pytest.raises(ParameterError, match=r"pass layer_type, one of: full_attention, sliding_attention"):
        params_from_hf_config(cfg, 8)
    assert_freqs(build(cfg, layer_type="full_attention"), ref_proportional(1e6, 128, 0.25))
    assert_freqs(build(cfg, layer_type="sliding_attention"), ref_default(10000.0, 128))


def test_hf_config_errors_name_the_key():
    each(
        [
            ({"num_attention_heads": 8, "max_position_embeddings": 64}, "missing hidden_size"),
            ({"hidden_size": 64, "num_attention_heads": 8, "rope_scaling": {"type": "linear"}}, "rope_scaling.factor"),
            (
                {"hidden_size": 64, "num_attention_heads": 8, "rope_scaling": {"rope_type": "su"}},
                "unknown rope_scaling.rope_type 'su'",
            ),
            ({"hidden_size": 64, "num_attention_heads": 8, "rope_theta": "big"}, "rope_theta='big' is not a number"),
            (
                {
                    "hidden_size": 64,
                    "num_attention_heads": 8,
                    "rope_scaling": {
                        "type": "longrope",
                        "short_factor": [1.0] * 4,
                        "long_factor": [1.0] * 4,
                        "original_max_position_embeddings": 8,
                    },
                },
                "needs max_position_embeddings",
            ),
            (
                {"hidden_size": 64, "num_attention_heads": 8, "rope_scaling": {"type": "llama3", "factor": 8.0}},
                "rope_scaling.low_freq_factor",
            ),
        ],
        lambda c: _hf_config_errors_name_the_key(*c),
    )


def _hf_config_errors_name_the_key(cfg, needle):
    with pytest.raises(ParameterError) as info:
        read_model_config(cfg, read_as="llama").params(None, 8)  # no class defaults: the keys as written
    assert needle in str(info.value)


# ----- xpos ------------------------------------------------------------------------------------------------
def test_xpos_matches_rotary_embedding_torch():
    each(["interleaved", "half"], _xpos_matches_rotary_embedding_torch)


def _xpos_matches_rotary_embedding_torch(layout):
    enc = make_encoding("xpos", {"length": 300, "dim": 16, "layout": layout, "dtype": "float64"})
    expected = ref_xpos(16, np.arange(300, dtype=np.float64), interleaved=layout == "interleaved")
    np.testing.assert_allclose(enc.array(), expected, rtol=1e-13)
    assert XPos.PRIMARY == "scale"


def test_xpos_golden_and_symmetry():
    enc = make_encoding("xpos", {"length": 9, "dim": 4, "dtype": "float64", "scale_base": 2.0})
    s = enc.array()
    np.testing.assert_array_equal(s[4], 1.0)  # the centre row (len // 2) is unscaled
    # zeta = ((0, 2) + 1.6) / 5.6 = (2/7, 9/14); row 0 has power (0 - 4) / 2 = -2
    np.testing.assert_allclose(s[0], [(2 / 7) ** -2, (2 / 7) ** -2, (9 / 14) ** -2, (9 / 14) ** -2], rtol=1e-15)
    np.testing.assert_allclose(s * s[::-1], 1.0, rtol=1e-14)  # scale(c + u) * scale(c - u) = 1
    with pytest.raises(ParameterError, match="dim=5 is odd"):
        make_encoding("xpos", {"length": 4, "dim": 5})


# ----- registry integration ---------------------------------------------------------------------------------
def test_kind_documentation():
    each([Rope, XPos], _kind_documentation)


def _kind_documentation(cls):
    assert cls.KIND and cls.SUMMARY and cls.REFERENCES and ".rope" in cls.__module__
    for info in cls.param_infos():
        assert info.help, info.name
    assert cls.PRIMARY in make_encoding(cls.KIND, {"length": 4, "dim": 8}).tensor_specs()


def test_presets_build():
    each(list(Rope.PRESETS), _presets_build)


def _presets_build(preset):
    enc = make_encoding("rope", {"length": 4, "dim": 128, "preset": preset})
    assert enc.array().shape == (4, enc.rot_dim)
    assert preset in Rope.PRESET_DOCS


def test_metadata_round_trip():
    enc = rope(dim=32, scaling="longrope", short_factor=tuple([1.0] * 16), long_factor=tuple([2.0] * 16),
               original_max_position_embeddings=64, factor=4.0, offset=3, layout="interleaved")  # fmt: skip
    meta = enc.metadata()
    names = {f.name for f in dataclasses.fields(Rope)}
    again = make_encoding("rope", {k: v for k, v in meta.items() if k in names})
    assert again == enc
    np.testing.assert_array_equal(again.array("sin"), enc.array("sin"))


def test_optional_torch_reimplementation():
    try:
        import torch
    except (ImportError, OSError) as exc:  # not installed, or a broken/partial install
        pytest.skip(f"torch not usable: {exc}")
    d, base = 64, 10000.0
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).to(torch.float64) / d))
    t = torch.arange(32, dtype=torch.float64)
    emb = torch.cat([torch.outer(t, inv)] * 2, dim=-1)
    enc = rope(dim=d, length=32)
    np.testing.assert_allclose(enc.array("cos"), emb.cos().numpy(), atol=1e-13)
    np.testing.assert_allclose(enc.inv_freq(), inv.numpy(), rtol=1e-14)


def _torch():
    try:
        import torch
    except (ImportError, OSError) as exc:  # not installed, or a broken/partial install
        pytest.skip(f"torch not usable: {exc}")
    return torch


def torch_hf_inv_freq(torch, scaling, base, d, **kw):
    """HF modeling_rope_utils' float32 arithmetic, written in torch as HF writes it."""

    def default(base):
        return 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).to(dtype=torch.float) / d))

    if scaling == "none":
        return default(base)
    if scaling == "linear":
        inv = default(base)
        inv /= kw["factor"]
        return inv
    if scaling == "dynamic":
        f, L, S = kw["factor"], kw["original_max_position_embeddings"], kw["seq_len"]
        S = max(S, L)
        return default(base * ((f * S / L) - (f - 1)) ** (d / (d - 2)))
    if scaling == "yarn":
        f, L = kw["factor"], kw["original_max_position_embeddings"]

        def corr(n):
            return (d * math.log(L / (n * 2 * math.pi))) / (2 * math.log(base))

        low, high = max(math.floor(corr(32)), 0), min(math.ceil(corr(1)), d - 1)
        pos_freqs = base ** (torch.arange(0, d, 2).to(dtype=torch.float) / d)
        extra, inter = 1.0 / pos_freqs, 1.0 / (f * pos_freqs)
        ramp = torch.clamp((torch.arange(d // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
        ef = 1 - ramp
        return inter * (1 - ef) + extra * ef
    if scaling == "llama3":
        inv = default(base)
        f, lff, hff, L = 8.0, 1.0, 4.0, 8192
        wavelen = 2 * math.pi / inv
        inv_l = torch.where(wavelen > L / lff, inv / f, inv)
        smooth = (L / wavelen - lff) / (hff - lff)
        smoothed = (1 - smooth) * inv_l / f + smooth * inv_l
        medium = ~(wavelen < L / hff) * ~(wavelen > L / lff)
        return torch.where(medium, smoothed, inv_l)
    if scaling == "longrope":
        ext = torch.tensor(kw["short_factor"], dtype=torch.float32)
        shape = torch.arange(0, d, 2, dtype=torch.int64).float() / d
        return 1.0 / (ext * base**shape)
    raise AssertionError(scaling)


def test_optional_torch_float32_inv_freq_matches_hf_arithmetic():
    """Every scaling rule (tests/each.py names each failing one); skipped once without torch."""
    torch = _torch()
    each(
        [
            ("none", {}),
            ("linear", {"factor": 4.0}),
            ("dynamic", {"factor": 2.0, "original_max_position_embeddings": 4096, "seq_len": 10000}),
            ("yarn", {"factor": 4.0, "original_max_position_embeddings": 32768}),
            ("llama3", {}),
            (
                "longrope",
                {
                    "short_factor": tuple(1.0 + 0.07 * k for k in range(64)),
                    "long_factor": (2.0,) * 64,
                    "original_max_position_embeddings": 4096,
                    "factor": 32.0,
                },
            ),
        ],
        lambda c: _optional_torch_float32_inv_freq_matches_hf_arithmetic(torch, *c),
    )


def _optional_torch_float32_inv_freq_matches_hf_arithmetic(torch, scaling, kw):
    base, d = 500000.0, 128
    expected = torch_hf_inv_freq(torch, scaling, base, d, **kw).numpy()
    enc = rope(dim=d, base=base, scaling=scaling, inv_freq_dtype="float32", **kw)
    got = enc.array("inv_freq")
    assert got.dtype == np.float32
    ulps = np.abs(got.astype(np.float64) - expected.astype(np.float64)) / np.spacing(expected).astype(np.float64)
    # torch's float32 pow is not always correctly rounded (ours is): one ulp there can become two after 1/x
    assert ulps.max() <= 2.0, ulps.max()
    assert np.mean(ulps == 0) > 0.9


def test_longrope_with_an_original_context_of_one_is_refused():
    """Found by the config fuzz test: HF's attention factor divides by log(original_max_position_embeddings)."""
    with pytest.raises(ParameterError, match="original_max_position_embeddings >= 2"):
        Rope.from_params(
            {
                "length": 4,
                "dim": 4,
                "scaling": "longrope",
                "factor": 2.0,
                "original_max_position_embeddings": 1,
                "short_factor": "1;1",
                "long_factor": "1;1",
            }
        )


def test_yarn_with_base_one_is_refused():
    """Found by the identify work: HF's correction range divides by log(base)."""
    with pytest.raises(ParameterError, match="yarn needs base > 1"):
        Rope.from_params(
            {
                "length": 4,
                "dim": 8,
                "scaling": "yarn",
                "factor": 2.0,
                "base": 1.0,
                "original_max_position_embeddings": 16,
            }
        )


def test_a_rope_that_has_computed_tables_pickles_and_computes_them_again():
    each(["float32", "float64"], _a_rope_that_has_computed_tables_pickles_and_computes_them_again)


def _a_rope_that_has_computed_tables_pickles_and_computes_them_again(dtype):
    """Its threads' helpers (locks, thread-local scratch, the last block) stay behind: a rope sent to another
    process (a DataLoader worker under spawn) makes its own and gives the same tables."""
    import pickle

    enc = make_encoding("rope", dict(dim=16, length=5000, dtype=dtype, scaling="yarn", factor=4.0,
                                     original_max_position_embeddings=1024))  # fmt: skip
    cos = enc.array("cos")
    enc.rows("sin", 0, 100)
    again = pickle.loads(pickle.dumps(enc))
    assert again == enc
    np.testing.assert_array_equal(again.array("cos"), cos)
    np.testing.assert_array_equal(again.rows("sin", 0, 100), enc.rows("sin", 0, 100))


def test_frequencies_kept_for_one_rope_are_never_another_s():
    """The frequencies are computed once per parameters and shared (encodings/_trig.frequencies_once): built one
    after another, ropes that differ in any parameter the rule reads each get their own, equal to a fresh
    evaluation of the rule; equal parameters share one read-only pair."""
    from posenc_cli.encodings import make_encoding

    base = {"length": 4096, "dim": 64}
    variants = [
        {},
        {"base": 500000.0},
        {"dim": 48},
        {"rotary_dim": 32},
        {"inv_freq_dtype": "float32"},
        {"inv_freq_dtype": "bfloat16"},
        {"scaling": "linear", "factor": 2.0},
        {"scaling": "linear", "factor": 4.0},
        {"scaling": "dynamic", "factor": 2.0, "original_max_position_embeddings": 1024},
        {"scaling": "dynamic", "factor": 2.0, "original_max_position_embeddings": 1024, "length": 8192},
        {"scaling": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024, "beta_fast": 16.0},
    ]
    seen = []
    for v in variants:
        enc = make_encoding("rope", {**base, **v})
        fresh = enc._compute_freqs()[0]
        np.testing.assert_array_equal(enc.inv_freq(), fresh, err_msg=str(v))
        seen.append(fresh)
    assert all(not np.array_equal(a, b) for i, a in enumerate(seen) for b in seen[:i] if a.shape == b.shape)
    one, two = make_encoding("rope", dict(base)), make_encoding("rope", dict(base))
    assert one._freqs[0] is two._freqs[0] and not one._freqs[0].flags.writeable
