"""Every check's threshold, pinned: a table measured exactly at its tolerance passes, one just past it fails.

Tolerances are ``rtol`` (by dtype) times a scale: the largest row norm ``s`` for distances and norms, ``s**2``
for dot products, the bound for ``bounded``, ``a**2`` (attention_scaling) for ``pythagorean``. The tables are
built so each measured value and each tolerance is an exact binary fraction (rtol = 1/4, norms 3, 4, 8), so
"at the threshold" is exact and ``<=`` and ``<`` give different verdicts; where a measurement is not a round
number (a random probe), it is measured once and rtol set so the tolerance equals it.
"""

from __future__ import annotations

import numpy as np
import pytest

from posenc_cli.checks import absolute, general, matrix, rotary
from posenc_cli.checks.base import RTOL, CheckContext, rtol_for
from posenc_cli.encodings import make_encoding

R = 0.25  # rtol: a power of two, so r * s is exact


def ctx(table, kind=None, tensors=None, metadata=None, rtol=R, encoding=None) -> CheckContext:
    return CheckContext(table, tensors if tensors is not None else {"pe": table}, metadata or {}, kind, encoding,
                        rtol=rtol)


def below(x: float) -> float:
    return float(np.nextafter(x, -np.inf))


def above(x: float) -> float:
    return float(np.nextafter(x, np.inf))


def test_rtol_by_dtype():
    assert RTOL == {"float64": 1e-9, "float32": 1e-5, "float16": 4e-3, "bfloat16": 3.2e-2}
    import ml_dtypes

    assert rtol_for(np.float64) == 1e-9 and rtol_for(np.float32) == 1e-5 and rtol_for(np.float16) == 4e-3
    assert rtol_for(ml_dtypes.bfloat16) == 3.2e-2 and rtol_for(np.int64) == 1e-9


def test_the_tolerance_follows_the_table_dtype():
    from posenc_cli import api

    for dtype, rtol in (("float64", 1e-9), ("float32", 1e-5), ("float16", 4e-3)):
        table = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=dtype)
        (report,) = [api.check(table, require=["finite"])]
        bounded = {r.name: r for r in report.results}["bounded"]
        assert bounded.tolerance == pytest.approx(1 + rtol, rel=1e-15), dtype


@pytest.mark.parametrize("bound,meta", [(1.0, {}), (2.0, {"attention_scaling": "2.0"})])
def test_bounded(bound, meta):
    kind = "rope" if meta else None
    tol = bound * (1 + R)  # 1.25 or 2.5
    for top, ok in ((tol, True), (above(tol), False), (-tol, True)):
        t = np.array([[top, 0.5], [0.25, 0.0]])
        r = absolute.check_bounded(ctx(t, kind, {"cos": t} if kind else None, meta))
        assert (r.passed, r.value, r.tolerance, r.data["bound"]) == (ok, abs(top), tol, bound), top


def test_constant_norm():
    # norms 3 and 4: spread 1 = rtol * s with s = 4
    for row, ok in (([3.0, 0.0], True), ([below(3.0), 0.0], False)):
        r = absolute.check_constant_norm(ctx(np.array([row, [0.0, 4.0]])))
        assert (r.passed, r.tolerance) == (ok, 1.0) and r.value == pytest.approx(1.0, rel=1e-15)
        assert r.detail.startswith("every row has norm 4.0000" if ok else "norms range 3 (row 0) .. 4 (row 1)")


def test_equidistant_and_symmetric():
    # rows 2, 4, 8 on a line: steps 2 and 4, spread 2 = rtol * 8; distance to t+1 vs t-1 also differs by 2
    for last, ok in ((8.0, True), (above(8.0) + 1e-12, False)):
        t = np.array([[2.0, 0.0], [4.0, 0.0], [last, 0.0]])
        r = absolute.check_equidistant(ctx(t))
        assert (r.passed, r.tolerance == R * last) == (ok, True) and r.value == pytest.approx(last - 6, rel=1e-12)
        assert r.detail.startswith("every consecutive pair" if ok else "consecutive distances range 2 (t=0)")
        r = absolute.check_symmetric(ctx(t))
        assert (r.passed, r.tolerance == R * last) == (ok, True) and r.value == pytest.approx(last - 6, rel=1e-12)
        assert r.detail.startswith("distance to t+k equals" if ok else "at t=1, k=1: distances differ by 2")


def test_one_row_and_all_zero_tables():
    one = np.array([[1.0, 0.0]])
    for check in (absolute.check_equidistant, absolute.check_offset_invariant, absolute.check_shift_linear):
        r = check(ctx(one))
        assert r.passed is True and r.tolerance == 0.0
    assert absolute.check_unique(ctx(one)).passed is True
    zeros = np.zeros((3, 2))  # s = 0: the tolerance is rtol * tiny, and a spread of 0 is within it
    r = absolute.check_constant_norm(ctx(zeros))
    assert r.passed and 0 < r.tolerance < 1e-300
    assert absolute.check_unique(ctx(zeros)).passed is False


def test_unique():
    # rows 3 and 4 are 1 apart and 1 = rtol * 4: not distinct enough (the test is dist > tol)
    for row, ok in (([3.0, 0.0], False), ([below(3.0), 0.0], True)):
        r = absolute.check_unique(ctx(np.array([row, [4.0, 0.0]])))
        assert (r.passed, r.tolerance, r.data["closest"]) == (ok, 1.0, [0, 1]) and r.value == pytest.approx(1.0)
    r = absolute.check_unique(ctx(np.array([[4.0, 0.0], [4.0, 0.0]])))
    assert r.passed is False and r.value == 0.0 and r.detail == "rows 0 and 1 are identical"


def test_offset_invariant_tolerances_and_ratio():
    # steps 2 and 4 (k = 1), dot products 8 and 32; s = 8: tolerances 2 (distance), 16 (dot), rtol (probe)
    t = np.array([[2.0, 0.0], [4.0, 0.0], [8.0, 0.0]])
    r = absolute.check_offset_invariant(ctx(t))
    d = r.data
    assert (d["tolerance_distance"], d["tolerance_dot"], d["tolerance_freivalds"]) == (2.0, 16.0, R)
    assert d["distance_spread"][1] == 2.0 and d["dot_spread"][1] == 24.0 and d["offsets"] == [1, 2]
    assert r.passed is False and r.tolerance == 1.0
    assert r.value == max(1.0, 24.0 / 16.0, d["freivalds_residual"] / R)
    assert r.detail.startswith("at k=1 distances vary by 2 and dot products by 24")
    # an exact sinusoid passes; its probe residual decides the verdict at rtol = residual (inclusive)
    pe = make_encoding("sinusoidal", {"length": 64, "dim": 16, "dtype": "float64"}).array()
    probe = absolute.check_offset_invariant(ctx(pe, rtol=1.0)).data["freivalds_residual"]
    worst = absolute.check_offset_invariant(ctx(pe, rtol=1.0))
    need = max(probe, max(worst.data["distance_spread"].values()) / absolute.scan(ctx(pe)).max_norm)
    assert absolute.check_offset_invariant(ctx(pe, rtol=need * (1 + 1e-6))).passed is True
    assert absolute.check_offset_invariant(ctx(pe, rtol=need * (1 - 1e-6))).passed is False


def test_shift_linear_threshold_is_twice_rtol():
    pe = make_encoding("sinusoidal", {"length": 64, "dim": 16, "dtype": "float64"}).array()
    r = absolute.check_shift_linear(ctx(pe, rtol=1e-9))
    assert r.passed and r.tolerance == 2e-9 and r.data["rotation"] and r.data["rotation_tolerance"] == pytest.approx(1e-6)
    bent = pe.copy()
    bent[40] *= 1.01
    r = absolute.check_shift_linear(ctx(bent, rtol=1e-9))
    assert r.passed is False and r.value > 2e-9
    # the fit's cut-off follows rtol too, so the residual is measured anew at each rtol
    verdicts = []
    for rtol in (1e-9, 1e-3, 0.05, 0.5):
        r = absolute.check_shift_linear(ctx(bent, rtol=rtol))
        assert r.tolerance == 2 * rtol and r.passed == (r.value <= 2 * rtol)
        verdicts.append(r.passed)
    assert verdicts == [False, False, True, True]
    assert absolute.check_shift_linear(ctx(bent, rtol=1e-2)).data["rotation_tolerance"] == 10.0  # 1e3 * rtol


def test_ratio():
    assert absolute._ratio(3.0, 2.0) == 1.5 and absolute._ratio(0.0, 0.0) == 0.0
    assert absolute._ratio(1e-300, 0.0) == float("inf")


# ----- rotary ---------------------------------------------------------------------------------------------------
def rope(cos, sin, scaling=None, layout="half", rtol=R):
    meta = {"layout": layout} | ({"attention_scaling": repr(scaling)} if scaling is not None else {})
    return ctx(cos, "rope", {"cos": cos, "sin": sin}, meta, rtol)


@pytest.mark.parametrize("a", [1.0, 2.0])
def test_pythagorean(a):
    tol = 2 * R * a * a  # 0.5 or 2: cos^2 + sin^2 may miss a^2 by that much
    c, s = (0.5, 0.5) if a == 1 else (1.0, 1.0)  # c^2 + s^2 = a^2 - tol exactly
    for cs, ok in (((c, s), True), ((c, s - 2.0**-20), False)):
        cos = np.array([[a, a], [cs[0], cs[0]]])
        sin = np.array([[0.0, 0.0], [cs[1], cs[1]]])
        r = rotary.check_pythagorean(rope(cos, sin, a if a != 1 else None))
        assert (r.passed, r.tolerance) == (ok, tol) and r.value == pytest.approx(tol, rel=1e-5), cs


def test_norm_preserving():
    # every row doubles a vector (cos 2, sin 0): relative norm error exactly 1, tolerance 2 * rtol
    cos, sin = np.full((3, 4), 2.0), np.zeros((3, 4))
    for rtol, ok in ((0.5, True), (below(0.5), False)):
        r = rotary.check_norm_preserving(rope(cos, sin, rtol=rtol))
        assert (r.passed, r.value, r.tolerance) == (ok, 1.0, 2 * rtol)
    r = rotary.check_norm_preserving(rope(cos / 2, sin, scaling=1.0, rtol=1e-12))  # identity: no error
    assert r.passed and r.value == 0.0


def test_relative():
    ang = np.arange(16.0)[:, None] * np.array([1.0, 0.1])
    ang[7] += 0.01  # one row off the linear angle: some (m, n) pairs change with a shift
    cos = np.cos(np.hstack([ang, ang]))
    sin = np.sin(np.hstack([ang, ang]))
    value = rotary.check_relative(rope(cos, sin, rtol=1.0)).value
    assert value > 0
    r = rotary.check_relative(rope(cos, sin, rtol=value / 4))  # tolerance 4 * rtol == value
    assert (r.passed, r.tolerance, r.value) == (True, value, value)
    assert rotary.check_relative(rope(cos, sin, rtol=below(value / 4))).passed is False


# ----- matrices ---------------------------------------------------------------------------------------------
def alibi_ctx(m, rtol=R):
    bias = np.asarray(m, dtype=np.float64)[None]
    return ctx(bias, "alibi", {"bias": bias}, {}, rtol)


def test_toeplitz():
    # M[1, 1] - M[0, 0] = 0.5 = rtol * max|M| (2)
    for corner, ok in ((0.5, True), (above(0.5), False)):
        r = matrix.check_toeplitz(alibi_ctx([[0.0, 1.0], [2.0, corner]]))
        assert (r.passed, r.tolerance, r.value) == (ok, 0.5, 0.0 if ok else corner), corner  # value: worst violation
        assert r.data["violations"] == (0 if ok else 1)
    r = matrix.check_toeplitz(alibi_ctx([[0.0, 0.5], [-0.5, 0.25]]))  # |M| < 1: the tolerance is rtol itself
    assert (r.passed, r.tolerance) == (True, R)
    assert matrix.check_toeplitz(alibi_ctx([[0.0, 0.5], [-0.5, above(0.25)]])).passed is False


def test_monotone_allows_rtol_of_slack_on_each_side():
    # ALiBi: non-increasing in |i - j|; rtol * max(max|M|, 1) = 0.25 of rise is tolerated
    cases = [([[0.0, 0.25], [-1.0, 0.0]], True), ([[0.0, above(0.25)], [-1.0, 0.0]], False),  # key after the query
             ([[0.0, -1.0], [0.25, 0.0]], True), ([[0.0, -1.0], [above(0.25), 0.0]], False)]  # key before
    for m, ok in cases:
        r = matrix.check_monotone(alibi_ctx(m))
        assert (r.passed, r.value, r.tolerance) == (ok, 0 if ok else 1, 0), m


def test_t5_saturation_verdict():
    enc = make_encoding("t5", {"length": 300})
    m = enc.array("buckets")
    good = matrix.check_t5_saturation(ctx(m, "t5", {"buckets": m}, enc.metadata()))
    assert good.passed is True and good.value == good.tolerance
    bad = m.copy()
    bad[299, 0] -= 1  # the farthest distance is no longer in the last bucket
    r = matrix.check_t5_saturation(ctx(bad, "t5", {"buckets": bad}, enc.metadata()))
    assert r.passed is False and r.detail.startswith("distances >= max_distance=128 are not all in the last bucket")


# ----- every tensor -----------------------------------------------------------------------------------------
def test_finite_counts_every_nan_and_inf():
    t = np.array([[np.nan, 1.0], [np.inf, -np.inf]])
    r = general.check_finite(ctx(t))
    assert (r.passed, r.value, r.tolerance) == (False, 3, 0) and r.data["counts"]["pe"] == {"nan": 1, "inf": 2}
    r = general.check_finite(ctx(np.ones((2, 2))))
    assert (r.passed, r.value) == (True, 0)


def test_matches_spec_at_rtol():
    enc = make_encoding("sinusoidal", {"length": 8, "dim": 4, "dtype": "float64"})
    pe = enc.array()
    pe[5, 2] += 2.0**-12  # |value| <= 1: the difference itself is the relative error
    worst = general.check_matches_spec(ctx(pe, "sinusoidal", encoding=enc, metadata=enc.metadata())).value
    assert worst == pytest.approx(2.0**-12, rel=1e-9)
    for rtol, ok in ((worst, True), (below(worst), False)):
        r = general.check_matches_spec(ctx(pe, "sinusoidal", encoding=enc, metadata=enc.metadata(), rtol=rtol))
        assert (r.passed, r.tolerance, r.value) == (ok, rtol, worst)
        assert r.detail.startswith("pe match sinusoidal" if ok else "pe[5, 2] differs from the regenerated value")
    big = make_encoding("rope", {"length": 4, "dim": 4, "dtype": "float64", "scaling": "yarn", "factor": 4.0,
                                 "original_max_position_embeddings": 2})
    # values above 1 (attention_scaling 1.14) are compared relative to |value|
    cos = big.array("cos")
    cos[0, 0] *= 1 + 2.0**-20
    r = general.check_matches_spec(ctx(cos, "rope", {"cos": cos}, big.metadata(), rtol=2.0**-20, encoding=big))
    assert r.passed is True and r.value == pytest.approx(2.0**-20, rel=1e-6)
