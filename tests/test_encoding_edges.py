"""Edges of the encodings that mutation testing found untested: position limits at the exact boundary, the
corner cases of T5's correctly rounded float32 log, parameter boundaries that are valid but easy to refuse by
one, and Qwen2-VL's grid limits. Expected values are literals or come from an independent decimal/NumPy
computation here, never from posenc with a flag flipped."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_cli.encodings import make_encoding
from posenc_cli.errors import ParameterError

from .each import each

MAX53 = 2**53  # naive kinds: positions exact in float64
MAX31 = 2**31 - 1  # sinusoidal and rotary kinds: exact range reduction


def test_last_position_limit_is_inclusive():
    each(
        [
            ("index", 1, MAX53),
            ("normalized", 1, MAX53),
            ("sinusoidal", 4, MAX31),
            ("rope", 4, MAX31),
            ("xpos", 4, MAX31),
        ],
        lambda c: _last_position_limit_is_inclusive(*c),
    )


def _last_position_limit_is_inclusive(kind, dim, limit):
    # the last position may equal the limit ...
    make_encoding(kind, {"length": 2, "dim": dim, "offset": limit - 1})
    # ... one more is refused, and the message names the real last position
    with pytest.raises(ParameterError, match=rf"^last position {limit + 1} exceeds {limit}; lower length or offset$"):
        make_encoding(kind, {"length": 3, "dim": dim, "offset": limit - 1})
    with pytest.raises(ParameterError, match=rf"^last position {limit + 1} exceeds {limit}; lower length or offset$"):
        make_encoding(kind, {"length": limit + 2, "dim": dim})


def _nearest_float32_ln(x: np.float32) -> np.float32:
    """The float32 nearest to ln(x), chosen among three candidates by a 60-digit decimal logarithm."""
    with localcontext() as ctx:
        ctx.prec = 60
        exact = Decimal(float(x)).ln()
        c = np.float32(float(exact))
        around = (np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf)))
        return min(around, key=lambda y: abs(Decimal(float(y)) - exact))


#: float32 inputs whose float64 log lies within 8 float64 ulps of a float32 rounding midpoint (a sweep of every
#: float32 in [2**-12, 2**24)), with the nearest float32 to ln(x). "below"/"above": the midpoint under or over
#: the float32 nearest to the float64 log; "wrong": rounding the float64 log to float32 gives the other side.
LOG_EDGES = [
    ("0x1.7886c0p+10", "0x1.d44e5cp+2"),  # below, rounding float64 is right
    ("0x1.a6c9aep+0", "0x1.00dde6p-1"),  # above, right
    ("0x1.2f1fd6p+3", "0x1.1fcbcep+1"),  # below, wrong: float64's log rounds up to 0x1.1fcbd0p+1
    ("0x1.827a74p-7", "-0x1.1c2b1ep+2"),  # above, wrong: float64's log is the midpoint, ties to even -0x1.1c2b20p+2
    ("0x1p+0", "0x0p+0"),
    ("0x1p+1", "0x1.62e430p-1"),
]


def test_float32_log_at_rounding_midpoints_from_both_sides():
    from posenc_cli.encodings.relative import _log_float32

    x = np.array([float.fromhex(a) for a, _ in LOG_EDGES], dtype=np.float32)
    want = np.array([float.fromhex(b) for _, b in LOG_EDGES], dtype=np.float32)
    assert [_nearest_float32_ln(v) for v in x] == list(want)  # the literals are the nearest float32
    # the two "wrong" rows are exactly the cases the decimal redo exists for
    rounded = np.log(x.astype(np.float64)).astype(np.float32)
    assert list(rounded != want) == [False, False, True, True, False, False]
    got = _log_float32(x)
    assert got.dtype == np.float32  # T5 divides it in float32 next; a float64 log moves bucket edges
    np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=float(np.float32(1e-30)), max_value=float(np.float32(3e38)), width=32))
def test_float32_log_is_the_nearest_float32_to_ln(v):
    from posenc_cli.encodings.relative import _log_float32

    x = np.float32(v)
    assert _log_float32(np.array([x]))[0] == _nearest_float32_ln(x)


def _t5_bucket(d: int, num_buckets: int, max_distance: int, bidirectional: bool) -> int:
    """HF T5's ``_relative_position_bucket`` for one distance, in Python floats (exact away from bucket edges)."""
    n, out = num_buckets, 0
    if bidirectional:
        n //= 2
        out, r = (n if d > 0 else 0), abs(d)
    else:
        r = max(-d, 0)
    max_exact = n // 2
    if r < max_exact:
        return out + r
    return out + min(
        max_exact + int(math.log(r / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)), n - 1
    )


def test_t5_bucket_function_returns_int64_and_hf_values():
    from posenc_cli.encodings.relative import t5_relative_position_bucket

    # HF T5 _relative_position_bucket, bidirectional, 32 buckets, max_distance 128: 8 exact buckets each side;
    # |d| >= 8 gets 8 + trunc(log(|d|/8) / log(16) * 8), capped at 15; d > 0 adds 16 (no value near a bucket edge)
    rel = [-200, -128, -9, -8, -7, -1, 0, 1, 7, 8, 9, 63, 65, 127, 128, 1000]
    got = t5_relative_position_bucket(np.array(rel), True, 32, 128)
    assert got.dtype == np.int64
    want = [15, 15, 8, 8, 7, 1, 0, 17, 23, 24, 24, 29, 30, 31, 31, 31]
    assert [_t5_bucket(d, 32, 128, True) for d in rel] == want
    np.testing.assert_array_equal(got, want)


def test_t5_smallest_valid_bucket_counts():
    each(
        [
            ({"num_buckets": 3, "bidirectional": False}, [[0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [2, 1, 1, 0]]),
            ({"num_buckets": 4, "bidirectional": True}, [[0, 3, 3, 3], [1, 0, 3, 3], [1, 1, 0, 3], [1, 1, 1, 0]]),
        ],
        lambda c: _t5_smallest_valid_bucket_counts(*c),
    )


def _t5_smallest_valid_bucket_counts(params, rows):
    # n = 3 one-way, or 2 each way (max_exact 1): the smallest tables with an exact bucket (d = j - i)
    n, bidi = params["num_buckets"], params["bidirectional"]
    assert [[_t5_bucket(j - i, n, 8, bidi) for j in range(4)] for i in range(4)] == rows
    np.testing.assert_array_equal(make_encoding("t5", {"length": 4, "max_distance": 8, **params}).array(), rows)


def test_rope_boundaries_that_are_valid():
    # rotary_dim == dim rotates everything: the same table as no rotary_dim
    full = make_encoding("rope", {"length": 3, "dim": 8, "dtype": "float64"}).array()
    same = make_encoding("rope", {"length": 3, "dim": 8, "rotary_dim": 8, "dtype": "float64"}).array()
    np.testing.assert_array_equal(same, full)
    # longrope's attention factor divides by ln(original_max_position_embeddings): 2 is the smallest allowed
    make_encoding(
        "rope",
        {"length": 4, "dim": 8, "scaling": "longrope", "original_max_position_embeddings": 2, "factor": 2.0}
        | {"short_factor": [1, 1, 1, 1], "long_factor": [1, 1, 1, 1]},
    )


def test_rope_refusals_at_the_edge():
    each(
        [
            ({"dim": 7, "scaling": "proportional"}, r"^dim=7 is odd; proportional RoPE needs an even head dim$"),
            (
                {
                    "dim": 4,
                    "rotary_dim": 2,
                    "scaling": "dynamic",
                    "factor": 2.0,
                    "original_max_position_embeddings": 16,
                },
                r"^scaling=dynamic needs rot_dim > 2",
            ),
            (
                {"dim": 8, "scaling": "yarn", "factor": 2.0, "original_max_position_embeddings": 16}
                | {"beta_fast": 4.0, "beta_slow": 4.0},
                r"beta_fast",
            ),
            (
                {"dim": 8, "scaling": "longrope", "original_max_position_embeddings": 1, "factor": 2.0}
                | {"short_factor": [1, 1, 1, 1], "long_factor": [1, 1, 1, 1]},
                r"^longrope needs original_max_position_embeddings >= 2",
            ),
        ],
        lambda c: _rope_refusals_at_the_edge(*c),
    )


def _rope_refusals_at_the_edge(params, message):
    with pytest.raises(ParameterError, match=message):
        make_encoding("rope", {"length": 4, **params})


def test_rope_value_bound_reads_attention_scaling():
    from posenc_cli.encodings.rope.core import Rope

    assert Rope.value_bound({"attention_scaling": "1.25"}) == 1.25
    assert Rope.value_bound({}) == 1.0
    assert Rope.value_bound({"attention_scaling": "n/a"}) == 1.0
    from posenc_cli.encodings.sinusoidal import Sinusoidal

    assert Sinusoidal.value_bound({"attention_scaling": "2"}) == 1.0  # the base class's bound: sin and cos


def test_t2t_equal_timescales_is_one_frequency():
    # min_timescale == max_timescale is allowed: every frequency is 1, so each pair is (sin t, cos t)
    got = make_encoding(
        "sinusoidal",
        {"length": 5, "dim": 4, "freq": "t2t", "min_timescale": 1.0, "max_timescale": 1.0, "dtype": "float64"},
    ).array()
    t = np.arange(5.0)
    want = np.stack([np.sin(t), np.cos(t), np.sin(t), np.cos(t)], axis=1)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-16)


def test_learned_smallest_truncation_is_allowed():
    got = make_encoding(
        "learned", {"length": 64, "dim": 8, "init": "truncated-normal", "truncation": 0.1, "dtype": "float64"}
    ).array()
    assert np.isfinite(got).all() and got.std() > 0


def test_grid_accepts_upper_case_separator():
    lower = make_encoding("sinusoidal-2d", {"dim": 8, "grid": "2x3", "dtype": "float64"}).array()
    upper = make_encoding("sinusoidal-2d", {"dim": 8, "grid": "2X3", "dtype": "float64"}).array()
    assert lower.shape == (6, 8)
    np.testing.assert_array_equal(upper, lower)


MROPE = {"length": 4, "dim": 6, "mrope_section": (1, 1, 1)}


def test_mrope_grid_limits_are_inclusive():
    # T*H*W may equal the position limit; one more cell is refused
    make_encoding("mrope", {**MROPE, "grid": f"1x1x{MAX31}"})
    with pytest.raises(ParameterError, match=r"^grid=1x2x1073741824 is too large; positions must stay below"):
        make_encoding("mrope", {**MROPE, "grid": "1x2x1073741824"})
    # the last frame's temporal id (T - 1) * time_interval may equal the limit; one more is refused
    enc = make_encoding("mrope", {**MROPE, "length": 2, "grid": "2x1x1", "time_interval": float(MAX31)})
    np.testing.assert_array_equal(enc.position_ids(0, 2), [[0, 0, 0], [MAX31, 0, 0]])
    with pytest.raises(ParameterError, match=r"^grid=2x1x1 is too large"):
        make_encoding("mrope", {**MROPE, "grid": "2x1x1", "time_interval": float(MAX31 + 1)})


def test_mrope_position_limit_message_and_section_message():
    with pytest.raises(
        ParameterError, match=rf"^position {MAX31 + 1} exceeds {MAX31}; lower length, the grid or time_interval$"
    ):
        make_encoding("mrope", {**MROPE, "length": 3, "grid": "2x1x1", "time_interval": float(MAX31), "text_offset": 1})
    # the same frame followed by text: the text restarts at s + max(H, W) = 2, far below the frame's temporal id
    # 1 + MAX31, which is still refused (it used to pass validation and fail in fill with a bare ValueError)
    with pytest.raises(
        ParameterError, match=rf"^position {MAX31 + 1} exceeds {MAX31}; lower length, the grid or time_interval$"
    ):
        make_encoding("mrope", {**MROPE, "length": 4, "grid": "2x1x1", "time_interval": float(MAX31), "text_offset": 1})
    with pytest.raises(ParameterError, match=r"it must sum to dim/2 = 3 \(the rotated half\)$"):
        make_encoding("mrope", {**MROPE, "mrope_section": (1, 1, 2)})


def test_mrope_grid_text():
    from posenc_cli.encodings.rope.mrope import parse_grid

    assert parse_grid("4x6") == (1, 4, 6)  # one frame
    assert parse_grid("2X4x6") == (2, 4, 6)
    for bad in ("0x4x6", "2x0x6", "2x4x0"):
        with pytest.raises(ParameterError, match=r"has a zero or negative size"):
            parse_grid(bad)


def test_integer_and_bool_dtype_names_resolve():
    from posenc_cli.encodings.base import resolve_dtype

    assert [resolve_dtype(n) for n in ("int64", "int32", "bool")] == [np.int64, np.int32, np.bool_]


def test_each_entry_of_a_tuple_parameter_is_range_checked():
    # mrope_section's entries need >= 1 each; (0, 2, 1) still sums to dim/2 = 3
    with pytest.raises(ParameterError, match=r"mrope_section=0 is out of range; mrope needs mrope_section >= 1"):
        make_encoding("mrope", {**MROPE, "mrope_section": (0, 2, 1)})


def test_xpos_center_and_interpolate_factor():
    """rotary-embedding-torch's get_scale with positions divided by interpolate_factor and an explicit center:
    scale[t, j] = zeta_k ** ((t / f - c) / scale_base), zeta_k = (2k + 0.4 d) / (1.4 d), cat((scale, scale)) for
    layout=half. Plain NumPy, float64."""
    d, n, f, c, base = 8, 7, 2.0, 5, 16.0
    zeta = (np.arange(0, d, 2) + 0.4 * d) / (1.4 * d)
    power = (np.arange(n) / f - c) / base
    want = zeta[None, :] ** power[:, None]
    params = {"length": n, "dim": d, "center": c, "interpolate_factor": f, "scale_base": base, "layout": "half"}
    got = make_encoding("xpos", {**params, "dtype": "float64"}).array()
    np.testing.assert_allclose(got, np.concatenate([want, want], axis=1), rtol=1e-14)
    # the default center is len // 2 in undivided positions (rotary-embedding-torch's len(t) // 2)
    del params["center"]
    got = make_encoding("xpos", {**params, "dtype": "float64"}).array()
    want = zeta[None, :] ** ((np.arange(n) / f - n // 2) / base)[:, None]
    np.testing.assert_allclose(got, np.concatenate([want, want], axis=1), rtol=1e-14)


# ----- parameter text (the plumbing mutation run: tools/mutation.sh plumbing) ------------------------------------------
def test_boolean_spellings():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [(t, True) for t in ("1", "true", "yes", "on", " YES ", "On")]
        + [(t, False) for t in ("0", "false", "no", "off", "NO", "Off ")],
        lambda case: _boolean_spellings(*case),
    )


def _boolean_spellings(text, want):
    from posenc_cli.encodings.base import parse_value

    assert parse_value(bool, "causal", text) is want


def test_parameter_text_to_values():
    from posenc_cli.encodings.base import parse_value

    with pytest.raises(ParameterError, match=r"^parameter causal='maybe' is not a boolean; use true or false$"):
        parse_value(bool, "causal", "maybe")
    # an optional parameter: empty, none and null (any case) are None; anything else is the inner type
    for text in ("", " none ", "null", "NULL", None):
        assert parse_value(int | None, "center", text) is None
    assert parse_value(int | None, "center", "3") == 3
    with pytest.raises(ParameterError, match=r"^parameter center='x' is not an integer; use e.g. center=8$"):
        parse_value(int | None, "center", "x")
    # integers: "3.0" and 3.0 are 3; 2.5 and "2.5" are refused by name; a bool is not an integer
    assert parse_value(int, "dim", "3.0") == 3 and type(parse_value(int, "dim", "3.0")) is int
    assert parse_value(int, "dim", 3.0) == 3 and type(parse_value(int, "dim", 3.0)) is int
    assert parse_value(int, "dim", np.int64(7)) == 7
    for bad in ("2.5", 2.5, True):
        with pytest.raises(ParameterError, match=r"^parameter dim"):
            parse_value(int, "dim", bad)
    # floats: an int is a float; a bool is not; infinity is refused
    assert parse_value(float, "base", 10000) == 10000.0 and type(parse_value(float, "base", 10000)) is float
    with pytest.raises(ParameterError, match=r"^parameter base="):
        parse_value(float, "base", True)
    with pytest.raises(ParameterError, match=r"^parameter base=inf must be a finite number$"):
        parse_value(float, "base", math.inf)
    # lists: a JSON list, or items separated by ; or ,
    assert parse_value(tuple[float, ...], "short_factor", "[1, 1.5]") == (1.0, 1.5)
    assert parse_value(tuple[float, ...], "short_factor", "1;1.5") == (1.0, 1.5)
    assert parse_value(tuple[int, ...], "mrope_section", "16,24,24") == (16, 24, 24)
    with pytest.raises(ParameterError, match=r"^parameter short_factor='\[1,' is not a JSON list; use e\.g\."):
        parse_value(tuple[float, ...], "short_factor", "[1,")
    with pytest.raises(ParameterError, match=r"^parameter short_factor='x' is not a number; use e\.g\. short_factor="):
        parse_value(tuple[float, ...], "short_factor", ["1", "x"])


def test_shape_params_read_length_and_dim_by_role():
    each(
        [
            ("sinusoidal", (12, 8), {"length": 12, "dim": 8}),
            ("sinusoidal", (12,), {"length": 12}),
            ("alibi", (4, 12, 12), {"length": 12, "dim": 4}),  # heads x query x key: dim is the heads
            ("t5", (12, 12), {"length": 12}),
            ("t5", (), {}),
        ],
        lambda c: _shape_params_read_length_and_dim_by_role(*c),
    )


def _shape_params_read_length_and_dim_by_role(kind, shape, want):
    from posenc_cli.encodings import get_kind

    assert get_kind(kind).shape_params(shape) == want
