"""diagnose: every explanation of the catalogue on a mistaken table built here with plain NumPy from the published
formulas (never posenc's generator with a flag flipped), its slug, summary and residual; properties; bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from posenc_cli.encodings import KINDS, get_kind, make_encoding
from posenc_cli.inspect.diagnose import Diagnosis, diagnose, undo

from .each import each


# ----- independent transcriptions (float64 NumPy, rounded once) -------------------------------------------------
def sinusoidal(
    n: int, d: int, base: float = 10000.0, layout: str = "interleaved", offset: int = 0, dtype=np.float32
) -> np.ndarray:
    """Vaswani et al. 2017 (interleaved: PyTorch tutorial), TF tutorial (split), [cos | sin] (cos-first)."""
    t = np.arange(offset, offset + n, dtype=np.float64)[:, None]
    w = base ** (-np.arange(0, d, 2) / d)
    pe = np.zeros((n, d))
    if layout == "interleaved":
        pe[:, 0::2], pe[:, 1::2] = np.sin(t * w), np.cos(t * w)
    elif layout == "interleaved-cos-first":
        pe[:, 0::2], pe[:, 1::2] = np.cos(t * w), np.sin(t * w)
    elif layout == "split":
        pe[:, : d // 2], pe[:, d // 2 :] = np.sin(t * w), np.cos(t * w)
    else:
        pe[:, : d // 2], pe[:, d // 2 :] = np.cos(t * w), np.sin(t * w)
    return pe.astype(dtype)


def rotary(
    n: int,
    d: int,
    inv_freq: np.ndarray | None = None,
    base: float = 10000.0,
    layout: str = "half",
    offset: int = 0,
    scale: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """HF LlamaRotaryEmbedding (emb = cat(freqs, freqs), times attention_scaling) or GPT-J pairs (2k, 2k+1)."""
    w = base ** (-np.arange(0, d, 2) / d) if inv_freq is None else inv_freq
    ang = np.arange(offset, offset + n, dtype=np.float64)[:, None] * w
    if layout == "half":
        c, s = np.concatenate([np.cos(ang)] * 2, 1), np.concatenate([np.sin(ang)] * 2, 1)
    else:
        c, s = np.repeat(np.cos(ang), 2, 1), np.repeat(np.sin(ang), 2, 1)
    return (scale * c).astype(np.float32), (scale * s).astype(np.float32)


def llama3_inv_freq(
    d: int, base: float = 500000.0, factor: float = 8.0, low: float = 1.0, high: float = 4.0, old: int = 8192
) -> np.ndarray:
    """HF _compute_llama3_parameters, float64."""
    inv = base ** (-np.arange(0, d, 2) / d)
    wl = 2 * math.pi / inv
    out = np.where(wl > old / low, inv / factor, inv)
    smooth = (old / wl - low) / (high - low)
    mid = (wl >= old / high) & (wl <= old / low)
    return np.where(mid, (1 - smooth) * out / factor + smooth * out, out)


def yarn_inv_freq(d: int, base: float, factor: float, low: int, high: int) -> np.ndarray:
    """HF _compute_yarn_parameters with a given correction range, float64."""
    inv = base ** (-np.arange(0, d, 2) / d)
    ramp = np.clip((np.arange(d // 2) - low) / (high - low), 0, 1)
    return inv * (ramp / factor + 1 - ramp)


def float32_formula(n: int, d: int, base: float = 10000.0) -> np.ndarray:
    """The PyTorch-tutorial table computed the usual way, in float32: angle = fl32(t) * fl32(w)."""
    t = np.arange(n, dtype=np.float32)[:, None]
    w = (base ** (-np.arange(0, d, 2) / d)).astype(np.float32)
    ang = (t * w).astype(np.float64)
    pe = np.zeros((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)
    return pe.astype(np.float32)


def alibi(heads: int, n: int) -> np.ndarray:
    m = 2.0 ** (-8 * np.arange(1, heads + 1) / heads)
    i = np.arange(n)
    return (-m[:, None, None] * np.abs(i[None, :, None] - i[None, None, :])).astype(np.float32)


def one(a, b, **kw) -> tuple[Diagnosis, object]:
    d = diagnose(a, b, **kw)
    assert not d.same and d.best is not None, d.summary
    assert d.best.accounts
    return d, d.best


# ----- columns ---------------------------------------------------------------------------------------------------
def test_rope_half_vs_interleaved_as_the_issue_words_it():
    cos_half, _ = rotary(512, 128)
    cos_int, _ = rotary(512, 128, layout="interleaved")
    _d, e = one(cos_half, cos_int)
    assert e.name == "layout-half-to-interleaved+qk-permutation"
    assert e.summary == (
        "B is A with interleaved pairs (half -> interleaved: HF rotate_half's layout -> GPT-J, llama.cpp NORM and "
        "MLX traditional=True); B's consecutive pairs are the pairing llama.cpp NORM uses; convert_hf_to_gguf.py "
        "permutes Q/K so scores match A's rotate_half: after reordering columns they agree exactly"
    )
    assert e.residual_max_abs == 0 and e.residual_ulp == 0 and e.rows_checked == 512
    _, back = one(cos_int, cos_half)
    assert back.name == "layout-interleaved-to-half+qk-permutation"
    assert back.summary.startswith("B is A with its pairs in two halves (interleaved -> half: GPT-J, llama.cpp NORM")


def test_sinusoidal_split_vs_interleaved():
    _, e = one(sinusoidal(256, 64, layout="split"), sinusoidal(256, 64))
    assert e.name == "layout-split-to-interleaved"
    assert e.summary.startswith("B is A with interleaved sin/cos columns (split -> interleaved)")
    _, e = one(sinusoidal(256, 64), sinusoidal(256, 64, layout="split"))
    assert e.name == "layout-interleaved-to-split" and e.residual_max_abs == 0


def test_sin_cos_order_of_halves_and_of_pairs():
    _, e = one(sinusoidal(256, 64, layout="cos-first"), sinusoidal(256, 64, layout="split"))
    assert e.name == "sin-cos-order" and "([cos | sin] -> [sin | cos])" in e.summary
    assert e.steps[0].detail == {"swap": "halves"}
    _, e = one(sinusoidal(256, 64, layout="interleaved-cos-first"), sinusoidal(256, 64))
    assert e.name == "sin-cos-order" and e.steps[0].detail == {"swap": "pairs"}
    _, e = one(sinusoidal(256, 64, layout="cos-first"), sinusoidal(256, 64))
    assert e.name == "sin-cos-order+layout-split-to-interleaved" and e.residual_max_abs == 0


def test_any_other_permutation_is_found_by_matching_columns():
    b = sinusoidal(300, 48)
    p = np.random.default_rng(3).permutation(48)
    _, e = one(b[:, p], b)
    assert e.name == "column-permutation"
    assert np.array_equal(e.steps[0].detail["permutation"], p)
    assert e.summary.startswith(f"B is A with its columns reordered (A column j is B column p[j]: 0->{p[0]}")


def test_sign_flip_of_the_sin_columns():
    b = sinusoidal(256, 32)
    a = b * np.where(np.arange(32) % 2 == 0, -1, 1).astype(np.float32)
    _, e = one(a, b)
    assert e.name == "sign-flip" and np.array_equal(e.steps[0].detail["columns"], np.arange(0, 32, 2))
    assert e.summary == (
        "B is A with every other column from 0 (16 columns) negated: after negating 16 columns they agree exactly"
    )


def test_rotary_pair_negated_sin_and_swapped_cos_sin():
    cos, sin = rotary(256, 64)
    _, e = one(cos, cos, tensors_a={"cos": cos, "sin": -sin}, tensors_b={"cos": cos, "sin": sin})
    assert e.name == "sign-flip" and e.steps[0].detail["tensor"] == "sin"
    assert e.summary.startswith("A's sin is B's sin negated")
    _, e = one(sin, cos, tensors_a={"cos_cache": sin, "sin_cache": cos}, tensors_b={"cos": cos, "sin": sin})
    assert e.name == "cos-sin-swap" and e.summary.startswith("A's cos and sin are B's sin and cos")
    ci, si = rotary(256, 64, layout="interleaved")
    _, e = one(cos, ci, tensors_a={"cos": cos, "sin": sin}, tensors_b={"cos": ci, "sin": si})
    assert e.name == "layout-half-to-interleaved+qk-permutation"


# ----- geometry --------------------------------------------------------------------------------------------------
def test_transpose():
    b = sinusoidal(96, 32)
    _, e = one(np.ascontiguousarray(b.T), b)
    assert e.name == "transpose" and e.summary == "A is B transposed: after transposing they agree exactly"


def test_row_offset_of_fairseq_padding():
    # fairseq positions start at padding_idx + 1 = 2 where the reference starts at 0
    _, e = one(sinusoidal(512, 64, offset=2), sinusoidal(512, 64))
    assert e.name == "row-offset" and e.steps[0].detail == {"offset": 2}
    assert e.summary == (
        "A is B shifted by 2 rows (A's row r is B's row r+2): after shifting rows by 2 they agree exactly"
    )
    assert e.rows_checked == 510


def test_sub_ranges_either_way_and_anywhere():
    b = sinusoidal(1000, 32)
    _, e = one(b[:300], b)
    assert e.name == "sub-range" and e.summary.startswith("A is the first 300 rows of B")
    _, e = one(b[123:456], b)
    assert e.name == "sub-range" and e.steps[0].detail == {"start": 123, "stop": 456, "of": "b"}
    _, e = one(b, b[:100])
    assert e.name == "sub-range" and e.summary.startswith("B is the first 100 rows of A")


def test_offset_and_layout_combine():
    _, e = one(sinusoidal(400, 32, offset=1, layout="split"), sinusoidal(400, 32))
    assert e.name == "row-offset+layout-split-to-interleaved"
    assert [s.name for s in e.steps] == ["row-offset", "layout-split-to-interleaved"]


def test_partial_rotary_columns():
    full_inv = 10000 ** (-np.arange(0, 128, 2) / 128)
    cos, _ = rotary(256, 128)
    # the first 32 rotation pairs of the full head (half layout)
    part, _ = rotary(256, 64, inv_freq=full_inv[:32])
    _, e = one(part, cos)
    assert e.name == "partial-rotary" and e.steps[0].detail["rotary_dim"] == 64
    assert e.summary.startswith("A is the first 32 of B's 64 frequencies in each half (partial rotary: 64 of 128 dims)")
    # the wider table as A: the roles are exchanged
    d = diagnose(cos, part)
    assert d.best.name == "partial-rotary" and d.best.summary.startswith("B is the first 32")


# ----- values -------------------------------------------------------------------------------------------------------
def test_constant_scale_of_attention_scaling():
    c1, _ = rotary(256, 64)
    c2, _ = rotary(256, 64, scale=0.1 * math.log(16) + 1)  # YaRN mscale for factor 16
    _, e = one(c2, c1)
    assert e.name == "constant-scale" and abs(e.steps[0].detail["factor"] - (0.1 * math.log(16) + 1)) < 1e-6
    assert e.residual_ulp <= 2


def test_precision_either_table_rounded():
    each(
        [(np.float16, "precision-float16"), (ml_dtypes.bfloat16, "precision-bfloat16")],
        lambda c: _precision_either_table_rounded(*c),
    )


def _precision_either_table_rounded(dtype, slug):
    b = sinusoidal(256, 32)
    _, e = one(b.astype(dtype).astype(np.float32), b)
    assert e.name == slug and e.ulp_dtype == slug.split("-")[1] and e.residual_ulp <= 1
    assert e.summary.startswith(f"A is B rounded to {slug.split('-')[1]}")
    _, e = one(b, b.astype(dtype))
    assert e.name == slug and e.summary.startswith(f"B is A rounded to {slug.split('-')[1]}")


def test_float32_angle_error_growing_with_position():
    a, b = float32_formula(4096, 64), sinusoidal(4096, 64)
    _, e = one(a, b)
    assert e.name == "float32-angle-error" and e.steps[0].detail["at_row"] > 2048
    assert "the difference grows with position" in e.summary and e.residual_ulp <= 2


# ----- frequencies -------------------------------------------------------------------------------------------------
def test_a_different_base():
    each([500000.0, 10001.0], _a_different_base)


def _a_different_base(base):
    _, e = one(sinusoidal(512, 64, base=base), sinusoidal(512, 64))
    assert e.name == "base"
    assert e.summary.startswith(f"A uses base {base:g} where B uses base 10000 (w_k = base^(-2k/64)")
    assert abs(e.steps[0].detail["base_a"] - base) < 1e-3 * base * 1e-3
    assert e.residual_ulp <= 2


def test_linear_frequency_scaling():
    inv = 10000 ** (-np.arange(0, 64, 2) / 64)
    _, e = one(rotary(512, 64, inv_freq=inv / 4)[0], rotary(512, 64)[0])
    assert e.name == "frequency-scaling" and e.steps[0].detail["profile"] == "linear"
    assert e.summary.startswith("A divides B's frequencies by 4 (linear scaling)") and e.residual_ulp <= 2


def test_llama3_and_yarn_ramps():
    inv = 500000.0 ** (-np.arange(0, 128, 2) / 128)
    a = rotary(2048, 128, inv_freq=llama3_inv_freq(128))
    b = rotary(2048, 128, inv_freq=inv)
    _, e = one(a[0], b[0], tensors_a={"cos": a[0], "sin": a[1]}, tensors_b={"cos": b[0], "sin": b[1]})
    assert e.name == "frequency-scaling" and e.steps[0].detail["profile"] == "ramp-frequency"
    assert np.allclose(e.steps[0].detail["wavelengths"], [2048, 8192], rtol=1e-6)
    assert "(llama3-style)" in e.summary
    inv = 10000.0 ** (-np.arange(0, 64, 2) / 64)
    a = rotary(1024, 64, inv_freq=yarn_inv_freq(64, 10000.0, 16.0, 10, 20))
    b = rotary(1024, 64, inv_freq=inv)
    _, e = one(a[0], b[0], tensors_a={"cos": a[0], "sin": a[1]}, tensors_b={"cos": b[0], "sin": b[1]})
    assert e.steps[0].detail["profile"] == "ramp-index" and np.allclose(e.steps[0].detail["ramp"], (10, 20))


def test_partial_rotary_with_exponent_over_its_own_width():
    # GPT-NeoX rotary_pct: base^(-2k/r) over the rotated 24 dims, against the full 40-dim head
    a, _ = rotary(512, 24)
    b, _ = rotary(512, 40)
    d = diagnose(a, b)
    assert d.best is not None and d.best.accounts
    assert d.best.name == "partial-rotary" and "over its own width" in d.best.summary


# ----- 3-D relative tables ------------------------------------------------------------------------------------------
def test_heads_by_len_by_len_tables():
    b = alibi(8, 48)
    d = diagnose(np.ascontiguousarray(b.transpose(0, 2, 1)) * 1, b)
    assert d.same  # symmetric biases: transposing changes nothing
    causal = b.copy()
    causal[:, np.triu_indices(48, 1)[0], np.triu_indices(48, 1)[1]] = -np.inf
    _, e = one(np.ascontiguousarray(causal.transpose(0, 2, 1)), causal)
    assert e.name == "transpose"
    _, e = one(b[:, :20, :20], b)
    assert e.name == "sub-range" and e.summary.startswith("A is the first 20 positions of B")
    p = np.random.default_rng(0).permutation(8)
    _, e = one(b[p], b)
    assert e.name == "column-permutation" and np.array_equal(e.steps[0].detail["permutation"], p)


# ----- properties ---------------------------------------------------------------------------------------------------
def test_a_table_against_itself_is_the_same_for_every_kind():
    each(list(KINDS), _same_as_itself)


def _same_as_itself(kind: str) -> None:
    cls = get_kind(kind)
    params = dict(cls.EXAMPLE)
    if "length" in params:
        params["length"] = 40
    enc = make_encoding(kind, params)
    for name in enc.tensor_specs():
        x = enc.array(name)
        if x.ndim >= 2:
            d = diagnose(x, x.copy())
            assert d.same and d.explanations == [] and d.summary == "A and B agree"


TRANSFORMS = {
    # A = [sin | cos] made of the interleaved B's columns
    "layout-split-to-interleaved": lambda x: x[
        :, np.concatenate([np.arange(0, x.shape[1], 2), np.arange(1, x.shape[1], 2)])
    ],
    "sign-flip": lambda x: x * np.where(np.arange(x.shape[1]) % 3 == 0, -1, 1).astype(x.dtype),
    "transpose": lambda x: np.ascontiguousarray(x.T),
    "sub-range": lambda x: x[5:-7],
    "row-offset": lambda x: np.concatenate([x[3:], x[:3]])[: x.shape[0]][: x.shape[0] - 3],
    "constant-scale": lambda x: (x.astype(np.float64) * 0.75).astype(x.dtype),
    "precision-float16": lambda x: x.astype(np.float16),
    "column-permutation": lambda x: x[:, np.random.default_rng(x.shape[1]).permutation(x.shape[1])],
}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    f=st.sampled_from(sorted(TRANSFORMS)),
    n=st.integers(40, 160),
    d=st.sampled_from([8, 16, 24, 48]),
    base=st.sampled_from([100.0, 10000.0, 500000.0]),
    offset=st.integers(0, 50),
)
def test_diagnose_names_the_transform(f, n, d, base, offset):
    b = sinusoidal(n, d, base=base, offset=offset)
    a = TRANSFORMS[f](b)
    if f == "row-offset":
        b = b[: a.shape[0]]  # same length, A starts three rows later: row r of A is row r+3 of B
        a = sinusoidal(n - 3, d, base=base, offset=offset + 3)
    res = diagnose(a, b)
    assert res.best is not None and res.best.accounts, res.summary
    assert res.best.name == f, res.summary


# ----- bad input, undo, JSON, design --------------------------------------------------------------------------------
def test_unrelated_shapes_get_a_one_line_reason():
    noise = np.random.default_rng(1).normal(size=(50, 6)).astype(np.float32)
    d = diagnose(noise, sinusoidal(70, 10))
    assert d.best is None and "\n" not in d.reason
    assert d.reason == (
        "shapes (50, 6) and (70, 10) differ and neither is a slice, transpose or partial-rotary part of the other"
    )
    d = diagnose(np.random.default_rng(0).normal(size=(64, 16)).astype(np.float32), sinusoidal(64, 16))
    assert d.best is None and d.reason.startswith("no explanation in the catalogue accounts for the difference")
    x = sinusoidal(64, 16)
    y = x.copy()
    y[5, 5] = np.nan
    assert diagnose(y, x).best is None


def test_undo_brings_a_back_to_the_reference():
    b = sinusoidal(128, 32)
    for a in (
        sinusoidal(128, 32, layout="split"),
        b[:, ::-1] * -1,
        np.ascontiguousarray(b.T),
        b[10:60],
        (b * 2).astype(np.float32),
    ):
        e = diagnose(a, b).best
        back = undo(a, e, b.shape)
        known = ~np.isnan(back)
        assert known.any() and np.max(np.abs(back[known] - b[known])) < 1e-6
    with pytest.raises(ValueError):
        undo(b, diagnose(b.astype(np.float16), b).best)


def test_json_carries_the_diagnosis():
    d = diagnose(sinusoidal(200, 32, offset=2, layout="split"), sinusoidal(200, 32))
    doc = json.loads(json.dumps(d.to_json()))
    assert doc["same"] is False and doc["explanations"][0]["name"] == "row-offset+layout-split-to-interleaved"
    steps = doc["explanations"][0]["steps"]
    assert steps[0]["detail"] == {"offset": 2} and steps[1]["detail"] == {"from": "split", "to": "interleaved"}
    assert doc["explanations"][0]["accounts"] is True and doc["summary"] == d.summary


def test_generic_modules_name_no_kind():
    root = Path(__file__).resolve().parent.parent / "posenc_cli"
    for module in sorted(p.relative_to(root).as_posix() for p in (root / "inspect" / "diagnose").glob("*.py")) + [
        "inspect/analysis.py",
        "inspect/tolerance.py",
    ]:
        text = (root / module).read_text()
        for kind in KINDS:
            assert f'"{kind}"' not in text and f"'{kind}'" not in text, (module, kind)
