"""Relative schemes: ALiBi slopes and biases, T5 buckets bit for bit, Shaw clipped indices."""

from __future__ import annotations

import functools
import math
import struct
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_cli.encodings import make_encoding
from posenc_cli.encodings.relative import alibi_slopes, t5_relative_position_bucket
from posenc_cli.errors import ParameterError

from .each import each


# ----- ALiBi -------------------------------------------------------------------------------------------------
def published_get_slopes(n: int) -> list[float]:
    """ofirpress/attention_with_linear_biases fairseq/models/transformer.py get_slopes, transcribed."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (
        get_slopes_power_of_2(closest_power_of_2)
        + published_get_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]
    )


def mpt_gen_slopes(n_heads: int, alibi_bias_max: float = 8) -> np.ndarray:
    """MPT gen_slopes, transcribed to float64 NumPy."""
    _n_heads = 2 ** math.ceil(math.log2(n_heads))
    m = np.arange(1, _n_heads + 1, dtype=np.float64) * (alibi_bias_max / _n_heads)
    slopes = 1.0 / np.power(2.0, m)
    if _n_heads != n_heads:
        slopes = np.concatenate([slopes[1::2], slopes[::2]])[:n_heads]
    return slopes


def test_alibi_slopes_8_heads_are_halves():
    enc = make_encoding("alibi", {"length": 4, "dim": 8, "dtype": "float64"})
    np.testing.assert_array_equal(enc.array("slopes"), [1 / 2**k for k in range(1, 9)])


def test_alibi_slopes_match_published_rule():
    each([1, 2, 3, 5, 6, 7, 12, 16, 20, 24, 40, 64, 96], _slopes_match_published_rule)


def _slopes_match_published_rule(heads: int) -> None:
    ours = alibi_slopes(heads)
    # the published start * ratio**i compounds a few ulps of rounding; MPT's 1 / 2**m rounds twice
    np.testing.assert_allclose(ours, published_get_slopes(heads), rtol=1e-14, atol=0)
    np.testing.assert_allclose(ours, mpt_gen_slopes(heads), rtol=1e-15, atol=0)
    # ours are the correctly rounded powers of two 2^(-8(h+1)/c), 2^(-8(2k+1)/(2c))
    c = 2 ** math.floor(math.log2(heads))
    exponents = [Fraction(-8 * (h + 1), c) for h in range(c)] + [
        Fraction(-8 * (2 * k + 1), 2 * c) for k in range(heads - c)
    ]
    with localcontext() as ctx:
        ctx.prec = 50
        exact = [float(Decimal(2) ** (Decimal(e.numerator) / Decimal(e.denominator))) for e in exponents]
    np.testing.assert_array_equal(ours, exact)


def test_alibi_slopes_12_heads_literal():
    # closest power of two 8: 2^-1..2^-8, then every other slope of 16 heads: 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5
    want = [2.0**-k for k in range(1, 9)] + [2.0**-0.5, 2.0**-1.5, 2.0**-2.5, 2.0**-3.5]
    enc = make_encoding("alibi", {"length": 3, "dim": 12, "dtype": "float64"})
    np.testing.assert_array_equal(enc.array("slopes"), want)


def test_alibi_max_bias_matches_mpt():
    np.testing.assert_allclose(alibi_slopes(12, 16.0), mpt_gen_slopes(12, 16.0), rtol=4e-16)


def test_alibi_bias_formula():
    each([False, True], _alibi_bias_formula)


def _alibi_bias_formula(causal):
    heads, length = 6, 9
    enc = make_encoding("alibi", {"length": length, "dim": heads, "causal": causal, "dtype": "float64"})
    slopes = published_get_slopes(heads)
    bias = enc.array()
    assert bias.shape == (heads, length, length)
    for h in range(heads):
        for i in range(length):
            for j in range(length):
                if causal and j > i:
                    assert bias[h, i, j] == -np.inf
                else:
                    assert bias[h, i, j] == pytest.approx(-slopes[h] * abs(i - j), rel=1e-15, abs=0)
    assert not np.signbit(bias[:, np.arange(length), np.arange(length)]).any()  # +0 on the diagonal


def test_alibi_float32_is_rounded_float64():
    e64 = make_encoding("alibi", {"length": 50, "dim": 12, "dtype": "float64"}).array()
    e32 = make_encoding("alibi", {"length": 50, "dim": 12}).array()
    assert e32.dtype == np.float32
    np.testing.assert_array_equal(e32, e64.astype(np.float32))


@settings(max_examples=25, deadline=None)
@given(heads=st.integers(1, 20), length=st.integers(1, 40), causal=st.booleans(), data=st.data())
def test_alibi_head_blocks_and_toeplitz(heads, length, causal, data):
    enc = make_encoding("alibi", {"length": length, "dim": heads, "causal": causal})
    full = enc.array()
    a = data.draw(st.integers(0, heads))
    b = data.draw(st.integers(a, heads))
    np.testing.assert_array_equal(enc.rows("bias", a, b), full[a:b])
    np.testing.assert_array_equal(enc.rows("slopes", a, b), enc.array("slopes")[a:b])
    np.testing.assert_array_equal(full[:, 1:, 1:], full[:, :-1, :-1])  # Toeplitz in (i, j)


def test_alibi_needs_heads():
    with pytest.raises(ParameterError, match=r"needs dim: pass dim=128, say"):
        make_encoding("alibi", {"length": 8})
    with pytest.raises(ParameterError, match=r"max_bias=0.0 is out of range"):
        make_encoding("alibi", {"length": 8, "dim": 8, "max_bias": 0})


# ----- T5 ----------------------------------------------------------------------------------------------------
def f32(x: float) -> float:
    """Round a Python float (double) to the nearest float32."""
    return struct.unpack("f", struct.pack("f", x))[0]


def f32_exact(value: Decimal) -> float:
    """Round an exact decimal to the nearest float32 (ties to even), without passing through a double."""
    q = Fraction(value)
    if q == 0:
        return 0.0
    sign = -1 if q < 0 else 1
    q = abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    m = round(q * Fraction(2) ** (23 - e))  # round() on a Fraction is round-half-even
    return sign * float(m * Fraction(2) ** (e - 23))


@functools.cache  # the configs share many x
def f32_log(x: float) -> float:
    """``torch.log`` of a float32: the natural log of ``x``, correctly rounded to float32. ``math.log`` is within
    one double ulp of ln x, so ln x lies between the doubles two ulps either side of it: when both round to the
    same float32, so does ln x (rounding is monotonic); else (ln x near a float32 rounding midpoint) it is
    rounded from 60 digits."""
    d = math.log(x)
    lo = math.nextafter(math.nextafter(d, -math.inf), -math.inf)
    hi = math.nextafter(math.nextafter(d, math.inf), math.inf)
    if f32(lo) == f32(hi):
        return f32(d)
    return f32_log_exact(x)


def f32_log_exact(x: float) -> float:
    """The natural log of ``x`` correctly rounded to float32, from 60 digits (the exact logarithm)."""
    with localcontext() as ctx:
        ctx.prec = 60
        return f32_exact(Decimal(x).ln())


def hf_t5_bucket(relative_position: int, bidirectional=True, num_buckets=32, max_distance=128) -> int:
    """HF transformers T5Attention._relative_position_bucket for one int, float32 steps emulated exactly.

    ``relative_position.float() / max_exact`` -> float32 division; ``torch.log`` -> correctly rounded
    float32 log; ``/ math.log(max_distance / max_exact)`` -> the Python float rounded to float32, float32
    division; ``* (num_buckets - max_exact)`` -> float32 product; ``.to(torch.long)`` -> truncation.
    Float32 +, *, / are emulated as a double operation then one rounding to float32, which is exact for
    float32 operands.
    """
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0) * num_buckets
        relative_position = abs(relative_position)
    else:
        relative_position = -min(relative_position, 0)
    max_exact = num_buckets // 2
    if relative_position < max_exact:
        return relative_buckets + relative_position
    x = f32(f32(float(relative_position)) / f32(float(max_exact)))
    log_x = f32_log(x)
    y = f32(log_x / f32(math.log(max_distance / max_exact)))
    z = f32(y * f32(float(num_buckets - max_exact)))
    large = min(max_exact + int(z), num_buckets - 1)
    return relative_buckets + large


T5_CONFIGS = [
    (32, 128, True),
    (32, 128, False),
    (64, 256, True),
    (16, 50, False),
    (10, 20, True),
    (128, 1000, True),
    (8, 9, False),
]


def test_t5_buckets_bit_for_bit():
    each(T5_CONFIGS, lambda c: _t5_buckets_bit_for_bit(*c))


def _t5_buckets_bit_for_bit(num_buckets, max_distance, bidirectional):
    rel = list(range(-1000, 1001))
    want = np.array([hf_t5_bucket(r, bidirectional, num_buckets, max_distance) for r in rel], dtype=np.int64)
    got = t5_relative_position_bucket(np.array(rel), bidirectional, num_buckets, max_distance)
    np.testing.assert_array_equal(got, want)
    # the encoding's table: buckets[i, j] = bucket(j - i); row 0 holds 0..1000, column 0 holds 0..-1000
    enc = make_encoding(
        "t5", {"length": 1001, "num_buckets": num_buckets, "max_distance": max_distance, "bidirectional": bidirectional}
    )
    table = enc.array()
    assert table.dtype == np.int64
    np.testing.assert_array_equal(table[0], want[1000:])
    np.testing.assert_array_equal(table[:, 0], want[1000::-1])


def test_t5_default_literal_values():
    # bidirectional, 32 buckets, max_distance 128: 16 per direction, 8 exact; log buckets at 16, 32, 64 are exact
    # powers of two in float32 (ln 4 / ln 16 * 8 = 2 etc.)
    b = t5_relative_position_bucket(np.array([0, -1, 1, -7, 7, -8, 8, -16, 16, -32, 32, -64, 64, -127, -128, 10**6]))
    np.testing.assert_array_equal(b, [0, 1, 17, 7, 23, 8, 24, 10, 26, 12, 28, 14, 30, 15, 15, 31])


def test_integer_tables_refuse_a_float_dtype_and_record_int64():
    each(
        [("t5", "buckets"), ("relative", "index")], lambda c: _integer_tables_refuse_a_float_dtype_and_record_int64(*c)
    )


def _integer_tables_refuse_a_float_dtype_and_record_int64(kind, tensor):
    """The metadata says what the bytes are: an integer table is int64 and says so; a float dtype is refused
    by name (it used to be recorded while the bytes stayed int64)."""
    with pytest.raises(ParameterError) as err:
        make_encoding(kind, {"length": 5, "dtype": "float16"})
    assert (
        str(err.value)
        == f"{kind}'s tensor {tensor!r} holds int64 integers; dtype float16 cannot apply to it: drop dtype"
    )
    enc = make_encoding(kind, {"length": 5})
    assert enc.tensor_specs()[tensor].dtype == np.dtype("int64") and enc.array().dtype == np.int64
    assert enc.metadata()["dtype"] == "int64"
    assert make_encoding(kind, {"length": 5, "dtype": "int64"}) == enc


def test_integer_table_files_of_older_posenc_with_a_float_dtype_still_rebuild():
    from posenc_cli.sources import encoding_from_metadata

    enc, note = encoding_from_metadata({"kind": "t5", "length": "5", "dtype": "float32", "num_buckets": "32"})
    assert note == "" and enc == make_encoding("t5", {"length": 5})


@settings(max_examples=25, deadline=None)
@given(length=st.integers(1, 200), bidirectional=st.booleans(), data=st.data())
def test_t5_rows_and_toeplitz(length, bidirectional, data):
    enc = make_encoding("t5", {"length": length, "bidirectional": bidirectional})
    full = enc.array()
    a = data.draw(st.integers(0, length))
    b = data.draw(st.integers(a, length))
    np.testing.assert_array_equal(enc.rows("buckets", a, b), full[a:b])
    np.testing.assert_array_equal(full[1:, 1:], full[:-1, :-1])


def test_t5_refuses_degenerate_buckets():
    with pytest.raises(ParameterError, match=r"num_buckets=3 leaves no exact bucket"):
        make_encoding("t5", {"length": 4, "num_buckets": 3})
    with pytest.raises(ParameterError, match=r"max_distance=8 must exceed the 8 exact buckets .* max_distance=9"):
        make_encoding("t5", {"length": 4, "max_distance": 8})


# ----- Shaw --------------------------------------------------------------------------------------------------
def t2t_relative_positions_matrix(length_q: int, length_k: int, max_relative_position: int) -> np.ndarray:
    """tensor2tensor _generate_relative_positions_matrix (cache=False), transcribed."""
    range_vec_k = np.arange(length_k)
    range_vec_q = range_vec_k[-length_q:]
    distance_mat = range_vec_k[None, :] - range_vec_q[:, None]
    distance_mat_clipped = np.clip(distance_mat, -max_relative_position, max_relative_position)
    return distance_mat_clipped + max_relative_position


def test_shaw_index():
    each([(1, 16), (7, 2), (40, 16), (40, 0), (33, 50)], _shaw_index)


def _shaw_index(case: tuple[int, int]) -> None:
    length, k = case
    enc = make_encoding("relative", {"length": length, "max_relative_position": k})
    got = enc.array()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, t2t_relative_positions_matrix(length, length, k))
    assert got.min() >= 0 and got.max() <= 2 * k


def test_shaw_literal_and_presets():
    got = make_encoding("relative", {"length": 4, "max_relative_position": 1}).array()
    np.testing.assert_array_equal(got, [[1, 2, 2, 2], [0, 1, 2, 2], [0, 0, 1, 2], [0, 0, 0, 1]])
    assert make_encoding("relative", {"length": 3}).max_relative_position == 16
    assert make_encoding("relative", {"length": 3, "preset": "paper-big"}).max_relative_position == 8
    assert make_encoding("relative", {"length": 3, "preset": "tensor2tensor"}).max_relative_position == 20


@settings(max_examples=25, deadline=None)
@given(length=st.integers(1, 120), k=st.integers(0, 40), data=st.data())
def test_shaw_rows_and_toeplitz(length, k, data):
    enc = make_encoding("relative", {"length": length, "max_relative_position": k})
    full = enc.array()
    a = data.draw(st.integers(0, length))
    b = data.draw(st.integers(a, length))
    np.testing.assert_array_equal(enc.rows("index", a, b), full[a:b])
    np.testing.assert_array_equal(full[1:, 1:], full[:-1, :-1])
