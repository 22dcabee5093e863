"""posenc_cli.inspect.metrics (what ``posenc compare`` measures) against values worked out by hand.

Every expected number below is computed in the comment next to it from the literal inputs, not by running the
code under test. Tables are tiny so the arithmetic can be checked on paper.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from posenc_cli.inspect import metrics
from posenc_cli.inspect.metrics import coarser_dtype, compare, default_atol, finfo, ordinal

from .each import each

EPS64, EPS32, EPS16 = 2.0**-52, 2.0**-23, 2.0**-10

# a and the reference b; |a - b| = [[0, 0.5], [1, 0]]
A = np.array([[1.0, 2.0], [3.0, 4.0]])
B = np.array([[1.0, 2.5], [2.0, 4.0]])


def test_every_metric_of_a_two_by_two_table():
    r = compare(A, B)
    assert r.shape_a == r.shape_b == (2, 2) and r.total == 4 and r.reason.startswith("2 of 4 elements")
    assert r.atol == 2 * EPS64 and r.rtol == 0.0
    assert r.max_abs == 1.0 and r.max_abs_at == (1, 0) and (r.value_a, r.value_b) == (3.0, 2.0)
    assert r.max_rel == 0.5  # max(0.5 / 2.5, 1 / 2): relative to the reference b
    assert r.mean_abs == 0.375  # (0 + 0.5 + 1 + 0) / 4
    # ulps in float64: 2.5 = 1.25 * 2 is 0.25 * 2**52 steps above 2.0; 3 = 1.5 * 2 is 0.5 * 2**52 above 2.0
    assert r.max_ulp == 2.0**51
    # row cosines: 6 / (sqrt(5) sqrt(7.25)) = 0.99654 and 22 / (5 sqrt(20)) = 0.98387
    assert r.min_cosine == pytest.approx(22 / (5 * math.sqrt(20)), rel=1e-15) and r.min_cosine_row == 1
    assert r.mismatched == 2 and r.same is False


def test_relative_difference_is_measured_against_the_second_table():
    r = compare(B, A)  # now |a - b| / |b| = 0.5 / 2 and 1 / 3
    assert r.max_rel == 1 / 3 and r.max_abs_at == (1, 0) and (r.value_a, r.value_b) == (2.0, 3.0)


def test_max_rel_skips_zeros_of_the_reference():
    r = compare(np.array([[1.0, 5.0]]), np.array([[0.0, 4.0]]))
    assert r.max_rel == 0.25  # 1 / 4; the 1 against 0 has no relative difference
    assert r.max_abs == 1.0 and r.max_abs_at == (0, 0)  # the first of the two equal maxima
    assert compare(np.array([[1.0]]), np.array([[0.0]])).max_rel == 0.0  # no nonzero reference at all


def test_verdict_is_atol_plus_rtol_times_the_reference():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            (1.0, 0.0, 0),  # |d| <= 1 everywhere: the bound is inclusive
            (0.99, 0.0, 1),  # only the 1.0 difference is outside
            (0.49, 0.0, 2),
            (0.0, 0.5, 0),  # 1 <= 0.5 * 2 and 0.5 <= 0.5 * 2.5
            (0.0, 0.25, 1),  # 0.5 <= 0.625 but 1 > 0.5
            (0.5, 0.25, 0),  # 1 <= 0.5 + 0.25 * 2
            (0.49, 0.25, 1),  # 1 > 0.49 + 0.5
        ],
        lambda case: _verdict_is_atol_plus_rtol_times_the_reference(*case),
    )


def _verdict_is_atol_plus_rtol_times_the_reference(atol, rtol, mismatched):
    r = compare(A, B, atol=atol, rtol=rtol)
    assert (r.mismatched, r.same, r.atol, r.rtol) == (mismatched, mismatched == 0, atol, rtol)
    assert r.reason == ("" if mismatched == 0 else f"{mismatched} of 4 elements differ by more than atol + rtol*|b|")


def test_default_atol_is_two_ulps_of_one_in_the_coarser_dtype():
    assert default_atol(np.dtype(np.float64), np.dtype(np.float64)) == 2 * EPS64
    assert default_atol(np.dtype(np.float32), np.dtype(np.float64)) == 2 * EPS32
    assert default_atol(np.dtype(np.float64), np.dtype(np.float16)) == 2 * EPS16
    assert default_atol(np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)) == 2 * 2.0**-7
    one = np.ones((1, 1))
    assert compare(one + 2 * EPS64, one).same and not compare(one + 4 * EPS64, one).same
    assert compare(np.float32(one) + np.float32(2 * EPS32), one).same  # float32 vs float64: 2 float32 ulps


def test_dtypes_and_ordinals():
    assert finfo(np.dtype(np.int64)) is None and finfo(np.dtype(np.float32)).eps == EPS32
    assert finfo(np.dtype(ml_dtypes.bfloat16)).eps == 2.0**-7
    assert coarser_dtype(np.dtype(np.float16), np.dtype(np.float64)) == np.float16
    assert coarser_dtype(np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)) == ml_dtypes.bfloat16
    assert coarser_dtype(np.dtype(np.int32), np.dtype(np.float32)) == np.float32
    assert coarser_dtype(np.dtype(np.int32), np.dtype(np.int64)) == np.float64
    f32 = np.dtype(np.float32)
    # float32 1.0 is 0x3f800000; -1.0 lies as far below 0 as 1.0 lies above; -0.0 is 0
    np.testing.assert_array_equal(ordinal(np.array([1.0, -1.0, -0.0, 0.0]), f32), [0x3F800000, -0x3F800000, 0, 0])
    # values are rounded to the dtype first: 1 + 2**-30 is float32 1.0
    assert ordinal(np.array([1.0 + 2.0**-30]), f32)[0] == 0x3F800000
    assert ordinal(np.array([1.0]), np.dtype(ml_dtypes.bfloat16))[0] == 0x3F80


def test_ulps_are_counted_in_the_coarser_dtype():
    ref = np.array([[1.0, -1.0, 0.1]])
    rounded = ref.astype(np.float32)  # 0.1 in float32 is 0.1 + 1.5e-9: 0 ulps there
    assert compare(rounded, ref).max_ulp == 0.0
    up = rounded.copy()
    up[0, 2] = np.nextafter(up[0, 2], np.float32(1))
    assert compare(up, ref).max_ulp == 1.0
    assert compare(np.array([[1.0]], np.float32), np.array([[-1.0]], np.float32)).max_ulp == 2 * 0x3F800000
    assert compare(np.array([[-0.0]]), np.array([[0.0]])).max_ulp == 0.0
    b16 = np.array([[1.0, 1.0078125]], dtype=ml_dtypes.bfloat16)  # 1 + 2**-7: the next bfloat16
    assert compare(b16, np.array([[1.0, 1.0]], dtype=ml_dtypes.bfloat16)).max_ulp == 1.0


def test_nan_equals_nan_only_in_place():
    same = compare(np.array([[np.nan, 2.0]]), np.array([[np.nan, 2.0]]))
    assert same.same and same.max_abs == 0.0 and same.max_ulp == 0.0 and same.mean_abs == 0.0
    moved = compare(np.array([[np.nan, 2.0]]), np.array([[2.0, np.nan]]))
    assert moved.mismatched == 2 and moved.max_abs == math.inf and moved.max_abs_at == (0, 0)
    assert moved.mean_abs == 0.0  # infinite differences are counted as mismatches, not averaged
    one_sided = compare(np.array([[np.nan, 2.0]]), np.array([[1.0, 2.0]]))
    assert one_sided.mismatched == 1 and one_sided.max_abs == math.inf and one_sided.value_b == 1.0
    assert math.isnan(one_sided.value_a) and one_sided.max_rel == math.inf
    assert one_sided.max_ulp > 2.0**52  # NaN's bit pattern lies past every finite float64


def test_infinities():
    equal = compare(np.array([[np.inf, -np.inf]]), np.array([[np.inf, -np.inf]]))
    assert equal.same and equal.max_abs == 0.0 and equal.max_rel == 0.0
    a = np.array([[np.inf, 1.0], [2.0, 3.0]])
    b = np.array([[1.0, 1.0], [2.0, 4.0]])
    r = compare(a, b, atol=1.0)  # |d| = [inf, 0, 0, 1]
    assert r.mismatched == 1 and r.max_abs == math.inf and r.max_abs_at == (0, 0)
    assert r.mean_abs == 0.25  # finite differences summed (1), over every element (4)
    assert compare(np.array([[np.inf]]), np.array([[-np.inf]])).max_abs == math.inf


def test_identical_tables_locate_the_first_element():
    r = compare(A, A.copy())
    assert r.same and r.reason == "" and r.mismatched == 0 and r.max_abs == 0.0 and r.max_abs_at == (0, 0)
    assert (r.value_a, r.value_b) == (1.0, 1.0) and r.max_rel == 0.0 and r.max_ulp == 0.0
    assert r.min_cosine == pytest.approx(1.0, abs=1e-15) and r.mean_abs == 0.0


def test_cosine_of_zero_rows():
    # a zero row equals a zero row (cosine 1) and is orthogonal to anything else (cosine 0)
    r = compare(np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([[0.0, 0.0], [0.0, 1.0]]))
    assert r.min_cosine == 0.0 and r.min_cosine_row == 1
    r = compare(np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([[1.0, 0.0], [1.0, 1.0]]))
    assert r.min_cosine == 0.0 and r.min_cosine_row == 0
    r = compare(np.array([[0.0, 0.0]]), np.array([[0.0, 0.0]]))
    assert r.min_cosine == 1.0 and r.min_cosine_row == 0


def test_cosine_skips_rows_it_cannot_measure():
    # a row holding an infinity has no cosine (inf / inf): the minimum is over the other rows
    r = compare(np.array([[np.inf, 0.0], [1.0, 0.0], [1.0, 1.0]]), np.array([[1.0, 0.0], [-1.0, 0.0], [1.0, 1.0]]))
    assert r.min_cosine == -1.0 and r.min_cosine_row == 1  # opposite vectors
    r = compare(np.array([[np.inf, 0.0]]), np.array([[1.0, 0.0]]))
    assert r.min_cosine is None and r.min_cosine_row is None  # no row has one


def test_causal_alibi_equals_itself():
    """Its -inf mask above the diagonal: equal infinities match (they once counted as 30 of 72 differences)."""
    from posenc_cli.encodings import make_encoding

    bias = make_encoding("alibi", {"length": 6, "dim": 2, "causal": True}).array("bias")
    with np.errstate(all="raise"):  # and no RuntimeWarning on the way
        r = compare(bias, bias.copy(), rtol=0.0)
    assert r.same and r.mismatched == 0 and r.reason == "" and r.min_cosine is None
    r = compare(bias, bias.copy(), rtol=1e-3)
    assert r.same
    finite = np.where(np.isinf(bias), np.float32(-1e4), bias)  # a finite value where the mask should be
    r = compare(finite, bias, rtol=1e-3)
    assert r.mismatched == 30 and r.max_abs == math.inf  # 2 heads x 15 entries above the diagonal


def test_one_dimensional_tables_have_no_cosine():
    r = compare(np.array([1.0, 2.0, 4.0]), np.array([1.0, 2.0, 3.0]))
    assert r.max_abs == 1.0 and r.max_abs_at == (2,) and r.min_cosine is None and r.min_cosine_row is None
    assert r.mean_abs == pytest.approx(1 / 3, rel=1e-15) and r.max_rel == pytest.approx(1 / 3, rel=1e-15)


def test_three_dimensional_tables_locate_the_element_by_every_index():
    a = np.zeros((2, 3, 4))
    b = a.copy()
    b[1, 2, 3] = 0.5
    r = compare(a, b)
    assert r.max_abs == 0.5 and r.max_abs_at == (1, 2, 3) and r.value_b == 0.5
    assert r.min_cosine == 0.0 and r.min_cosine_row == 1  # rows are a[h] flattened


def test_shapes_differ():
    r = compare(np.zeros((2, 3)), np.zeros((3, 2)))
    assert not r.same and r.reason == "shapes differ: (2, 3) vs (3, 2)" and r.total == 0 and r.max_abs_at is None


def test_empty_tables_are_the_same():
    r = compare(np.zeros((0, 4)), np.zeros((0, 4)))
    assert r.same and r.total == 0 and r.max_abs_at is None and r.min_cosine is None


def test_metrics_accumulate_across_blocks(monkeypatch):
    """Tables longer than a block: each metric is the worst (or the sum) over all blocks, at its global row."""
    monkeypatch.setattr("posenc_cli.blocks.CACHE_VALUES", 4)  # 2 rows of 2 values
    a = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [1.0, 0.0]])
    b = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0], [1.0, 1.0], [1.0, 0.25]])
    # |d| rows: [0, 0], [0, 1], [0, 0], [1, 1], [0, 0.25]; relative: 1/2 in block 0, 1/1 in block 1, 1 in 2
    r = compare(a, b, atol=0.3)
    assert r.max_abs == 1.0 and r.max_abs_at == (1, 1)  # the first 1.0; a later equal one does not move it
    assert r.mean_abs == pytest.approx(3.25 / 10, rel=1e-15) and r.mismatched == 3
    assert r.max_rel == 1.0
    # cosines: 1, 1, 1, 2 / (2 sqrt 2) = 0.7071, 1 / sqrt(1.0625) = 0.9701: the minimum is in the second block
    assert r.min_cosine == pytest.approx(1 / math.sqrt(2), rel=1e-15) and r.min_cosine_row == 3
    late = b.copy()
    late[4] = [1.0, 3.0]  # |d| = 3 in the last block, relative 3 / 3 = 1; cosine 1 / sqrt(10) = 0.3162
    r = compare(a, late)
    assert r.max_abs == 3.0 and r.max_abs_at == (4, 1) and (r.value_a, r.value_b) == (0.0, 3.0)
    assert r.min_cosine == pytest.approx(1 / math.sqrt(10), rel=1e-15) and r.min_cosine_row == 4
    early = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
    r = compare(early, np.array([[1.0, 0.0], [0.0, 0.25], [1.0, 1.0], [1.0, 1.0], [1.0, 0.0]]))
    assert r.max_rel == 3.0 and r.max_ulp == 2.0**53  # both found in block 0: later blocks must not lower them
    # (0.25 -> 1.0 is two binades of 2**52 float64 steps each)


def test_to_json_writes_infinities_as_text_and_tuples_as_lists():
    r = compare(np.array([[np.inf, 1.0]]), np.array([[1.0, 1.0]]))
    data = r.to_json()
    assert data["max_abs"] == "inf" and data["max_abs_at"] == [0, 0] and data["shape_a"] == [1, 2]
    assert data["same"] is False and data["mismatched"] == 1 and data["labels"] == {}


def test_the_coarser_dtype_is_found_whichever_side_it_is_on():
    one32 = np.ones((1, 1), np.float32)
    r = compare(np.ones((1, 1)), one32 + np.float32(2 * EPS32))  # the reference is the float32 one
    assert r.atol == 2 * EPS32 and r.same and r.max_ulp == 2.0  # 2 float32 steps, not 2**30 float64 steps


def test_shapes_differ_is_false_not_just_falsy():
    assert compare(np.zeros((2, 3)), np.zeros((3, 2))).same is False


def test_overflowing_differences_raise_no_floating_point_error():
    a, b = np.array([[1e308, 1.0]]), np.array([[-1e308, 1.0]])
    with np.errstate(all="raise"):
        r = compare(a, b)
    assert r.max_abs == math.inf and r.mismatched == 1 and r.max_abs_at == (0, 0)


def test_cosine_of_short_rows():
    # rows of norm below 1: the cosine divides by the product of the norms, whatever its size
    r = compare(np.array([[0.5, 0.0], [0.25, 0.25]]), np.array([[0.5, 0.0], [0.25, 0.0]]))
    assert r.min_cosine == pytest.approx(1 / math.sqrt(2), rel=1e-15) and r.min_cosine_row == 1
    assert compare(np.array([[0.5, 0.0]]), np.array([[0.5, 0.0]])).min_cosine == 1.0


def test_equal_minimum_cosines_keep_the_first_row(monkeypatch):
    monkeypatch.setattr("posenc_cli.blocks.CACHE_VALUES", 4)  # 2 rows of 2 values
    a = np.ones((4, 2))
    b = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])  # rows 0 and 2: cosine 1 / sqrt(2), in two blocks
    r = compare(a, b)
    assert r.min_cosine == pytest.approx(1 / math.sqrt(2), rel=1e-15) and r.min_cosine_row == 0


def test_a_block_with_nans_measures_its_finite_values_as_a_finite_block_does(monkeypatch):
    """Blocks without NaN or infinity take a shorter path: the same tables with rows of NaN (equal in place) and
    equal infinities added measure the same, and the largest difference and ulps are those plain NumPy gives.
    Six seeds (:func:`tests.each.each`: each failure named)."""
    monkeypatch.setattr("posenc_cli.blocks.CACHE_VALUES", 24)  # blocks of 3 rows of 8: finite and non-finite ones
    each(range(6), _nans_measure_as_finite)


def _nans_measure_as_finite(seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((20, 8)).astype(np.float32)
    b = (a.astype(np.float64) + rng.standard_normal(a.shape) * 1e-6 * (rng.random(a.shape) < 0.3)).astype(np.float32)
    plain = compare(a, b)
    special = np.full((4, 8), np.nan, dtype=np.float32)
    special[1] = np.inf
    sa, sb = np.concatenate([a[:10], special, a[10:]]), np.concatenate([b[:10], special, b[10:]])
    mixed = compare(sa, sb)
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    bits_a, bits_b = (x.view(np.int32).astype(np.int64) for x in (a, b))
    ords = [np.where(v < 0, -(v & 0x7FFFFFFF), v) for v in (bits_a, bits_b)]
    ulps = np.minimum(np.abs(ords[0] - ords[1]), d / metrics.tolerance.floor_spacing(np.dtype(np.float32)))
    for r in (plain, mixed):
        assert r.max_abs == d.max() and r.max_ulp == ulps.max()
        assert r.mismatched == int(np.count_nonzero(d > r.atol))
    assert mixed.max_rel == plain.max_rel  # (a row of NaN has cosine 0: min_cosine is not comparable)
    assert mixed.mean_abs * mixed.total == pytest.approx(plain.mean_abs * plain.total, rel=1e-12)
