"""The sinusoidal family: seed golden values, every preset against its published formula, properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_cli.encodings import make_encoding
from posenc_cli.errors import ParameterError

from .each import each

SEED_TF_TABLE = np.array(
    [
        [0.0, 0.0, 0.0, 1.0, 1.0, 1.0],
        [0.841, 0.046, 0.002, 0.54, 0.999, 1.0],
        [0.909, 0.093, 0.004, -0.416, 0.996, 1.0],
        [0.141, 0.139, 0.006, -0.99, 0.99, 1.0],
        [-0.757, 0.185, 0.009, -0.654, 0.983, 1.0],
    ]
)


def table(length: int, dim: int, **params) -> np.ndarray:
    return make_encoding("sinusoidal", {"length": length, "dim": dim, **params}).array()


# ----- independent transcriptions of the published code (float64 NumPy) -----------------------------
def tf_tutorial(length: int, depth: int) -> np.ndarray:
    """The TensorFlow tutorial's positional_encoding (seed material), verbatim."""
    depth = depth / 2
    positions = np.arange(length)[:, np.newaxis]
    depths = np.arange(depth)[np.newaxis, :] / depth
    angle_rates = 1 / (10000**depths)
    angle_rads = positions * angle_rates
    return np.concatenate([np.sin(angle_rads), np.cos(angle_rads)], axis=-1)


def pytorch_tutorial(length: int, d: int) -> np.ndarray:
    position = np.arange(length)[:, None].astype(np.float64)
    div_term = np.exp(np.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = np.zeros((length, d))
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return pe


def t2t_timing_signal(length: int, channels: int, min_timescale=1.0, max_timescale=1.0e4, start_index=0):
    """tensor2tensor common_attention.get_timing_signal_1d."""
    position = np.arange(length, dtype=np.float64) + start_index
    num_timescales = channels // 2
    log_timescale_increment = math.log(float(max_timescale) / float(min_timescale)) / max(num_timescales - 1, 1)
    inv_timescales = min_timescale * np.exp(np.arange(num_timescales, dtype=np.float64) * -log_timescale_increment)
    scaled_time = position[:, None] * inv_timescales[None, :]
    signal = np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)
    return np.pad(signal, [[0, 0], [0, channels % 2]])


def fairseq_embedding(num_embeddings: int, embedding_dim: int, padding_idx=None) -> np.ndarray:
    """fairseq SinusoidalPositionalEmbedding.get_embedding (in float64)."""
    half_dim = embedding_dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = np.exp(np.arange(half_dim, dtype=np.float64) * -emb)
    emb = np.arange(num_embeddings, dtype=np.float64)[:, None] * emb[None, :]
    emb = np.concatenate([np.sin(emb), np.cos(emb)], axis=1).reshape(num_embeddings, -1)
    if embedding_dim % 2 == 1:
        emb = np.concatenate([emb, np.zeros((num_embeddings, 1))], axis=1)
    if padding_idx is not None:
        emb[padding_idx, :] = 0
    return emb


def marian_init_weight(n_pos: int, dim: int) -> np.ndarray:
    """HF MarianSinusoidalPositionalEmbedding._init_weight."""
    position_enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    out = np.zeros((n_pos, dim))
    sentinel = dim // 2 if dim % 2 == 0 else (dim // 2) + 1
    out[:, 0:sentinel] = np.sin(position_enc[:, 0::2])
    out[:, sentinel:] = np.cos(position_enc[:, 1::2])
    return out


def musicgen_embedding(num_embeddings: int, embedding_dim: int) -> np.ndarray:
    """HF MusicgenSinusoidalPositionalEmbedding.get_embedding (cos first, zero pad for odd dims)."""
    half_dim = embedding_dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = np.exp(np.arange(half_dim, dtype=np.float64) * -emb)
    emb = np.arange(num_embeddings, dtype=np.float64)[:, None] * emb[None, :]
    emb = np.concatenate([np.cos(emb), np.sin(emb)], axis=1).reshape(num_embeddings, -1)
    if embedding_dim % 2 == 1:
        emb = np.concatenate([emb, np.zeros((num_embeddings, 1))], axis=1)
    return emb


# ----- golden values ------------------------------------------------------------------------------
def test_seed_tf_tutorial_table_to_three_decimals():
    pe = table(5, 6, preset="tf-tutorial")
    assert pe.shape == (5, 6) and pe.dtype == np.float32
    np.testing.assert_array_equal(np.round(pe.astype(np.float64), 3), SEED_TF_TABLE)


def test_seed_distance_norm_dot_product():
    pe = table(5, 6, preset="tf-tutorial", dtype="float64")
    dist = np.linalg.norm(pe[1:] - pe[:-1], axis=1)
    dots = np.einsum("ij,ij->i", pe[1:], pe[:-1])
    np.testing.assert_allclose(dist, 0.9600, atol=5e-5)
    np.testing.assert_allclose(np.linalg.norm(pe, axis=1), math.sqrt(3), atol=1e-12)
    assert {f"{x:.4f}" for x in np.linalg.norm(pe, axis=1)} == {"1.7321"}  # as the seed material prints it
    np.testing.assert_allclose(dots, 2.5392, atol=5e-5)


# ----- presets against their published formulas ---------------------------------------------------
# Each preset's sizes run as one test (tests/each.py names each failing case): an id per size added only
# pytest's cost.
def _is_published(want: np.ndarray, length: int, dim: int, **params) -> None:
    """posenc's float64 table of ``params`` (a preset and its options) at ``length`` x ``dim`` is the published
    formula's ``want``."""
    np.testing.assert_allclose(table(length, dim, dtype="float64", **params), want, atol=1e-12)


def test_tf_tutorial_preset():
    each([(50, 6), (128, 64), (300, 512)], lambda c: _is_published(tf_tutorial(*c), *c, preset="tf-tutorial"))


def test_pytorch_tutorial_and_paper():
    each(
        [(preset, length, dim) for preset in ("paper", "pytorch-tutorial") for length, dim in ((50, 6), (256, 128))],
        lambda c: _is_published(pytorch_tutorial(c[1], c[2]), c[1], c[2], preset=c[0]),
    )


def test_tensor2tensor_preset():
    each([4, 7, 64, 129], lambda dim: _is_published(t2t_timing_signal(100, dim), 100, dim, preset="tensor2tensor"))


def test_tensor2tensor_timescales_and_start_index():
    _is_published(
        t2t_timing_signal(40, 16, 2.0, 500.0, start_index=7),
        40,
        16,
        preset="tensor2tensor",
        min_timescale=2.0,
        max_timescale=500.0,
        offset=7,
    )


def test_fairseq_preset():
    each([(8, None), (9, 1), (64, 1), (65, 0)], lambda c: _fairseq_preset(*c))


def _fairseq_preset(dim, padding_idx):
    params = {} if padding_idx is None else {"padding_idx": padding_idx}
    _is_published(fairseq_embedding(60, dim, padding_idx), 60, dim, preset="fairseq", **params)


def test_marian_preset():
    each([6, 7, 64, 65], lambda dim: _is_published(marian_init_weight(30, dim), 30, dim, preset="marian"))


def test_musicgen_preset():
    each([8, 9, 128], lambda dim: _is_published(musicgen_embedding(70, dim), 70, dim, preset="musicgen"))


def test_presets_give_different_tables():
    """The conventions really differ for the same nominal parameters (the reason this tool exists)."""
    tables = {p: table(16, 8, preset=p) for p in ("paper", "tf-tutorial", "tensor2tensor", "musicgen")}
    names = list(tables)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not np.allclose(tables[a], tables[b]), (a, b)


def test_explicit_parameter_overrides_preset():
    pe = table(8, 8, preset="tf-tutorial", layout="interleaved", dtype="float64")
    np.testing.assert_allclose(pe, pytorch_tutorial(8, 8), atol=1e-12)


# ----- odd dims, offsets, padding ---------------------------------------------------------------
def test_odd_dims_keep_the_width():
    """Every layout, frequency rule and odd width (tests/each.py names each failing case)."""
    each(
        [
            (layout, freq, dim)
            for layout in ("interleaved", "split", "split-cos-first")
            for freq in ("paper", "t2t")
            for dim in (1, 3, 5, 33)
        ],
        lambda c: _odd_dim_keeps_the_width(*c),
    )


def _odd_dim_keeps_the_width(layout, freq, dim):
    pe = table(10, dim, layout=layout, freq=freq)
    assert pe.shape == (10, dim) and pe.dtype == np.float32
    exact = table(10, dim, layout=layout, freq=freq, dtype="float64")
    np.testing.assert_array_equal(pe, exact.astype(np.float32))  # float32 is the exact table, rounded
    # row 0 (t = 0) is sin 0 = 0 and cos 0 = 1 (or the zero pad); every column is a sine or a cosine
    assert set(exact[0].tolist()) <= {0.0, 1.0} and np.abs(exact).max() <= 1.0
    # cosine columns: the first block of [cos | sin] gets ceil(d/2) under the paper's ceil rule, else floor(d/2)
    cos_columns = (dim + 1) // 2 if (layout, freq) == ("split-cos-first", "paper") else dim // 2
    assert np.count_nonzero(exact[0] == 1.0) == cos_columns


def test_interleaved_odd_dim_has_ceil_sin_columns():
    pe = table(10, 5, dtype="float64")
    t = np.arange(10.0)[:, None]
    w = 10000.0 ** (-np.arange(0, 5, 2) / 5)
    np.testing.assert_allclose(pe[:, 0::2], np.sin(t * w), atol=1e-12)
    np.testing.assert_allclose(pe[:, 1::2], np.cos(t * w[:2]), atol=1e-12)


def test_odd_dim_rule_can_be_forced():
    pe = table(10, 5, layout="split", odd_dim="zero-pad", dtype="float64")
    assert np.all(pe[:, -1] == 0)
    pe = table(10, 5, freq="t2t", layout="split", odd_dim="ceil", dtype="float64")
    # ceil: 3 sin columns, 2 cos columns, t2t frequencies exp(-k ln(10000) / (5 // 2 - 1)) = 1, 1e-4, 1e-8
    t = np.arange(10.0)
    np.testing.assert_allclose(pe[:, 2], np.sin(1e-8 * t), rtol=1e-12, atol=0)
    np.testing.assert_allclose(pe[:, -1], np.cos(1e-4 * t), rtol=1e-12, atol=0)


def test_offset_shifts_rows():
    base = table(120, 32, dtype="float64")
    shifted = table(100, 32, offset=20, dtype="float64")
    np.testing.assert_array_equal(shifted, base[20:])


def test_padding_idx_row_is_zero_and_indexed_by_position_value():
    pe = table(10, 8, preset="fairseq", padding_idx=3, offset=2)
    assert np.all(pe[1] == 0)
    assert np.count_nonzero(np.all(pe == 0, axis=1)) == 1


# ----- properties over random parameters -----------------------------------------------------------
params_strategy = st.fixed_dictionaries(
    {
        "length": st.integers(1, 300),
        "dim": st.integers(1, 96),
        "base": st.floats(2.0, 1e6),
        "offset": st.integers(0, 10**6),
        "layout": st.sampled_from(["interleaved", "split", "split-cos-first"]),
        "freq": st.sampled_from(["paper", "t2t"]),
    }
)


@settings(max_examples=60, deadline=None)
@given(params_strategy, st.data())
def test_any_row_range_equals_the_slice(p, data):
    enc = make_encoding("sinusoidal", p)
    full = enc.array()
    a = data.draw(st.integers(0, p["length"]))
    b = data.draw(st.integers(a, p["length"]))
    np.testing.assert_array_equal(enc.rows("pe", a, b), full[a:b])


@settings(max_examples=60, deadline=None)
@given(params_strategy)
def test_values_match_float64_formula_and_pairs_lie_on_the_unit_circle(p):
    pe = make_encoding("sinusoidal", {**p, "dtype": "float64"}).array()
    d, n = p["dim"], p["length"]
    t = np.arange(p["offset"], p["offset"] + n, dtype=np.float64)[:, None]
    if p["freq"] == "paper":
        k = np.arange((d + 1) // 2)
        w = p["base"] ** (-2.0 * k / d)
    else:
        count = (d + 1) // 2 if p["layout"] == "interleaved" else d // 2
        w = np.exp(-np.arange(count) * math.log(p["base"]) / max(d // 2 - 1, 1))
    if p["layout"] == "interleaved":
        sin, cos = pe[:, 0::2], pe[:, 1::2]
    elif p["layout"] == "split":
        m = len(w)
        sin, cos = pe[:, :m], pe[:, m : 2 * m]
    else:
        m = len(w)
        cos, sin = pe[:, :m], pe[:, m : 2 * m]
    # float64 angles lose |t w| * 2**-53 here; posenc is exact, so compare with a matching tolerance
    tol = 1e-15 * (p["offset"] + n) + 1e-15
    np.testing.assert_allclose(sin, np.sin(t * w[: sin.shape[1]]), atol=tol)
    np.testing.assert_allclose(cos, np.cos(t * w[: cos.shape[1]]), atol=tol)
    pairs = min(sin.shape[1], cos.shape[1])
    np.testing.assert_allclose(sin[:, :pairs] ** 2 + cos[:, :pairs] ** 2, 1.0, atol=1e-14)


def test_output_dtypes():
    each(
        [("float64", np.float64), ("float32", np.float32), ("float16", np.float16)],
        lambda c: _dtype_is(table(4, 4, dtype=c[0]), c[1]),
    )


def _dtype_is(array, expected):
    assert array.dtype == expected


def test_bfloat16_is_rounded_from_the_exact_value():
    import ml_dtypes

    pe = table(64, 16, dtype="bfloat16")
    assert pe.dtype == ml_dtypes.bfloat16
    exact = table(64, 16, dtype="float64")
    np.testing.assert_array_equal(pe, exact.astype(ml_dtypes.bfloat16))


# ----- validation ---------------------------------------------------------------------------------
def test_bad_parameters_name_the_value_and_the_fix():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            (
                {"layout": "sideways"},
                "unknown layout 'sideways' for sinusoidal; choose from: interleaved, split, split-cos-first",
            ),
            ({"freq": "fast"}, "choose from: paper, t2t"),
            ({"base": "0"}, "base=0.0 is out of range"),
            ({"base": "-5"}, "base=-5.0 is out of range"),
            ({"base": "nan"}, "must be a finite number"),
            ({"base": "inf"}, "must be a finite number"),
            ({"base": "ten"}, "is not a number"),
            ({"preset": "gpt"}, "unknown preset 'gpt' for sinusoidal; choose from: paper"),
            ({"rotary": "1"}, "unknown parameter 'rotary' for sinusoidal; choose from:"),
            (
                {"dtype": "int8"},
                "unknown dtype 'int8' for sinusoidal; choose from: float64, float32, float16, bfloat16",
            ),
            ({"length": 0}, "length=0 is out of range; sinusoidal needs length >= 1"),
            ({"dim": -3}, "dim=-3 is out of range"),
            ({"offset": 2**31}, "out of range"),
            ({"freq": "t2t", "min_timescale": 10, "max_timescale": 2}, "max_timescale=2.0 is below min_timescale=10.0"),
        ],
        lambda case: _bad_parameters_name_the_value_and_the_fix(*case),
    )


def _bad_parameters_name_the_value_and_the_fix(params, message):
    with pytest.raises(ParameterError) as err:
        make_encoding("sinusoidal", {"length": 8, "dim": 8, **params})
    assert message in str(err.value)


def test_missing_dim_and_len():
    with pytest.raises(ParameterError, match=r"^sinusoidal needs dim: pass dim=128, say$"):
        make_encoding("sinusoidal", {"length": 8})
    with pytest.raises(ParameterError, match=r"^sinusoidal needs length: pass length=512, say$"):
        make_encoding("sinusoidal", {"dim": 8})


def test_metadata_regenerates_the_same_table():
    enc = make_encoding(
        "sinusoidal", {"length": 33, "dim": 10, "preset": "fairseq", "padding_idx": 1, "dtype": "float16"}
    )
    meta = enc.metadata()
    assert meta["kind"] == "sinusoidal" and meta["dtype"] == "float16" and meta["padding_idx"] == "1"
    assert all(isinstance(v, str) for v in meta.values())
    params = {k: v for k, v in meta.items() if k not in ("kind", "posenc_version")}
    again = make_encoding("sinusoidal", params)
    assert again == enc
    np.testing.assert_array_equal(again.array(), enc.array())
