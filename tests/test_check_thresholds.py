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

from .each import each

R = 0.25  # rtol: a power of two, so r * s is exact


def ctx(table, kind=None, tensors=None, metadata=None, rtol=R, encoding=None) -> CheckContext:
    return CheckContext(
        table, tensors if tensors is not None else {"pe": table}, metadata or {}, kind, encoding, rtol=rtol
    )


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
    # nothing to compare on one row: not judged (status NOT RUN, which a required property fails by), and the
    # table fails ``distinct``, which every table of positions needs
    for check in (absolute.check_equidistant, absolute.check_offset_invariant, absolute.check_shift_linear,
                  absolute.check_unique):  # fmt: skip
        r = check(ctx(one))
        assert r.passed is None and r.not_run and r.needs == ("distinct",)
    assert absolute.check_distinct(ctx(one)).passed is False
    zeros = np.zeros((3, 2))  # s = 0: the tolerance is rtol * tiny, and a spread of 0 is within it
    r = absolute.check_constant_norm(ctx(zeros))
    assert r.passed and 0 < r.tolerance < 1e-300
    assert absolute.check_unique(ctx(zeros)).passed is False
    r = absolute.check_distinct(ctx(zeros))
    assert r.passed is False and r.value == 1 and r.detail == "every row is the same"


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
    assert r.passed and r.tolerance == 2e-9 and r.data["rotation"]
    assert r.data["rotation_tolerance"] == pytest.approx(1e-6)
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
    cases = [
        ([[0.0, 0.25], [-1.0, 0.0]], True),
        ([[0.0, above(0.25)], [-1.0, 0.0]], False),  # key after the query
        ([[0.0, -1.0], [0.25, 0.0]], True),
        ([[0.0, -1.0], [above(0.25), 0.0]], False),
    ]  # key before
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
    big = make_encoding(
        "rope",
        {
            "length": 4,
            "dim": 4,
            "dtype": "float64",
            "scaling": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 2,
        },
    )
    # values above 1 (attention_scaling 1.14) are compared relative to |value|
    cos = big.array("cos")
    cos[0, 0] *= 1 + 2.0**-20
    r = general.check_matches_spec(ctx(cos, "rope", {"cos": cos}, big.metadata(), rtol=2.0**-20, encoding=big))
    assert r.passed is True and r.value == pytest.approx(2.0**-20, rel=1e-6)


# ----- whole results: name, verdict, value, tolerance, what the report says and the data it keeps ----------------
ONE_ROW = np.array([[1.0, 0.0]])
LINE = np.array([[2.0, 0.0], [4.0, 0.0], [8.0, 0.0]])  # steps 2 and 4; s = 8


def result(name, status, value, tolerance, detail, method="exact", **data):
    return {
        "name": name,
        "status": status,
        "value": value,
        "tolerance": tolerance,
        "detail": detail,
        "method": method,
        "data": data,
        "needs": [],
    }


NOTHING = "one row: nothing to compare"


def not_judged(name):
    """A property of row pairs on a one-row table: not judged, it needs ``distinct`` (which fails the table)."""
    return {**result(name, "NOT RUN", None, None, NOTHING, "skipped"), "needs": ["distinct"]}


WHOLE = {
    "bounded": (
        lambda: absolute.check_bounded(ctx(np.array([[1.25, 0.5], [0.25, 0.0]]))),
        result("bounded", "PASS", 1.25, 1.25, "max |x| = 1.25; bound 1", max_abs=1.25, bound=1.0),
    ),
    "constant-norm": (
        lambda: absolute.check_constant_norm(ctx(np.array([[3.0, 0.0], [0.0, 4.0]]))),
        result("constant-norm", "PASS", 1.0, 1.0, "every row has norm 4.0000", norm=3.5, min=3.0, max=4.0),
    ),
    "equidistant": (
        lambda: absolute.check_equidistant(ctx(LINE)),
        result(
            "equidistant", "PASS", 2.0, 2.0, "every consecutive pair is 3.0000 apart", distance=3.0, min=2.0, max=4.0
        ),
    ),
    "symmetric": (
        lambda: absolute.check_symmetric(ctx(LINE)),
        result("symmetric", "PASS", 2.0, 2.0, "distance to t+k equals distance to t-k", "exact over k in {1}"),
    ),
    "unique": (
        lambda: absolute.check_unique(ctx(np.array([[3.0, 0.0], [4.0, 0.0]]))),
        result(
            "unique",
            "FAIL",
            1.0,
            1.0,
            "closest distinct positions 0 and 1 are 1 apart",
            "exact (blocked Gram matrix, nearest pair re-measured directly)",
            closest=[0, 1],
        ),
    ),
    "equidistant-one-row": (
        lambda: absolute.check_equidistant(ctx(ONE_ROW)),
        not_judged("equidistant"),
    ),
    "offset-invariant-one-row": (
        lambda: absolute.check_offset_invariant(ctx(ONE_ROW)),
        not_judged("offset-invariant"),
    ),
    "shift-linear-one-row": (
        lambda: absolute.check_shift_linear(ctx(ONE_ROW)),
        not_judged("shift-linear"),
    ),
    "unique-one-row": (lambda: absolute.check_unique(ctx(ONE_ROW)), not_judged("unique")),
    "distinct-one-row": (
        lambda: absolute.check_distinct(ctx(ONE_ROW)),
        result("distinct", "FAIL", 1, 2, "1 row: a table of positions needs at least two", rows=1),
    ),
    "symmetric-two-rows": (
        lambda: absolute.check_symmetric(ctx(np.eye(2))),
        result("symmetric", "PASS", 0.0, R, "fewer than 3 rows: nothing to compare"),
    ),
    "relative-one-row": (
        lambda: rotary.check_relative(rope(np.ones((1, 4)), np.zeros((1, 4)))),
        not_judged("relative"),
    ),
    "pythagorean": (
        lambda: rotary.check_pythagorean(
            rope(np.array([[2.0, 2.0], [1.0, 1.0]]), np.array([[0.0, 0.0], [1.0, 1.0]]), 2.0)
        ),
        result(
            "pythagorean",
            "PASS",
            2.0,
            2.0,
            "cos^2 + sin^2 = 4 (attention_scaling 2) at every entry",
            attention_scaling=2.0,
        ),
    ),
    "norm-preserving": (
        lambda: rotary.check_norm_preserving(rope(np.full((3, 4), 2.0), np.zeros((3, 4)), rtol=0.5)),
        result(
            "norm-preserving",
            "PASS",
            1.0,
            1.0,
            "rotating 8 random vectors by every row keeps |q| * 1 (layout half)",
            "exact on every row, 8 random vectors",
            layout="half",
            relative_error={"half": 1.0},
        ),
    ),
    "symmetric-two-offsets": (
        lambda: absolute.check_symmetric(ctx(np.array([[2.0, 0.0], [4.0, 0.0], [8.0, 0.0], [16.0, 0.0], [32.0, 0.0]]))),
        # k = 2: distances 6, 12, 24; 24 - 6 = 18 > rtol * 32
        result("symmetric", "FAIL", 18.0, 8.0, "at t=2, k=2: distances differ by 18", "exact over k in {1,2}"),
    ),
    "pythagorean-fails": (
        lambda: rotary.check_pythagorean(
            rope(np.array([[1.0, 1.0], [0.5, 0.5]]), np.array([[0.0, 0.0], [0.25, 0.25]]))
        ),
        result(
            "pythagorean",
            "FAIL",
            0.6875,
            0.5,
            "cos^2 + sin^2 misses 1 by 0.6875 at row 1, column 0",
            attention_scaling=1.0,
        ),
    ),
    "norm-preserving-fails": (
        lambda: rotary.check_norm_preserving(rope(np.full((3, 4), 2.0), np.zeros((3, 4)))),
        result(
            "norm-preserving",
            "FAIL",
            1.0,
            0.5,
            "row 0 changes a vector's norm by a relative 1 (layout half)",
            "exact on every row, 8 random vectors",
            layout="half",
            relative_error={"half": 1.0},
        ),
    ),
    "toeplitz": (
        lambda: matrix.check_toeplitz(alibi_ctx([[0.0, 1.0], [2.0, 0.75]])),
        result(
            "toeplitz",
            "FAIL",
            0.75,
            0.5,
            "1 entries break M[i+1, j+1] = M[i, j]; worst at head 0, i=0, j=0 (off by 0.75)",
            "exact (M[1:, 1:] vs M[:-1, :-1] in row blocks)",
            violations=1,
            heads=1,
        ),
    ),
    "monotone": (
        lambda: matrix.check_monotone(alibi_ctx([[0.0, 0.5], [-1.0, 0.0]])),
        result(
            "monotone",
            "FAIL",
            1,
            0,
            "bias is not non-increasing in |i - j|: 1 neighbouring pairs break it, "
            "first at row 0, columns 0, 1 (head 0)",
            "exact (every neighbouring pair of every row)",
            rule="non-increasing in |i - j|",
        ),
    ),
}


def test_whole_results():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(list(WHOLE), lambda case: _whole_results(case))


def _whole_results(case):
    make, expected = WHOLE[case]
    assert make().to_json() == expected


def test_whole_results_of_sampled_and_regenerated_checks():
    ang = np.arange(16.0)[:, None] * np.array([1.0, 0.1])
    ang[7] += 0.01
    cos, sin = np.cos(np.hstack([ang, ang])), np.sin(np.hstack([ang, ang]))
    value = rotary.check_relative(rope(cos, sin, rtol=1.0)).value
    assert rotary.check_relative(rope(cos, sin, rtol=value / 4)).to_json() == result(
        "relative",
        "PASS",
        value,
        value,
        "<R_m q, R_n k> depends only on m - n over 256 sampled (m, n) pairs (layout half)",
        "sampled: 256 (m, n) pairs with random shifts, 8 random (q, k)",
        layout="half",
    )
    r = rotary.check_relative(rope(cos, sin, rtol=below(value / 4)))
    assert r.passed is False and r.detail == (
        f"<R_m q, R_n k> changes by a relative {value:.4g} when m and n shift together (layout half)"
    )
    enc = make_encoding("sinusoidal", {"length": 8, "dim": 4, "dtype": "float64"})
    pe = enc.array()
    pe[5, 2] += 2.0**-12
    worst = float(abs(pe[5, 2] - enc.array()[5, 2]))
    r = general.check_matches_spec(ctx(pe, "sinusoidal", encoding=enc, metadata=enc.metadata(), rtol=worst))
    assert r.to_json() == result(
        "matches-spec",
        "PASS",
        worst,
        worst,
        "pe match sinusoidal regenerated from the metadata",
        "exact (regenerated block by block)",
        per_tensor={"pe": worst},
        missing=[],
    )


# ----- long-term-decay's rule on given bound curves (the bound itself is tested in test_checks.py) ---------------
def test_long_term_decay_rule(monkeypatch):
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            (50, [1.0, 0.5], True),  # two decades are enough to see a trend
            (50, [1.0, 0.99], False),  # it must fall below 0.99 of the first decade, strictly
            (50, [1.0, 0.96875], True),
            (1000, [1.0, 1.0, 0.5], True),  # equal neighbours are allowed; the last decade is what fell
            (1000, [1.0, 0.5, 0.5], True),  # measured against the first decade, not the second
            (1000, [1.0, 0.5, 0.625], False),  # a rise between neighbours
            (10000, [1.0, 0.5, 0.625, 0.375], False),  # a rise between neighbours, though every second decade falls
        ],
        lambda case: _long_term_decay_rule(monkeypatch, *case),
    )


def _long_term_decay_rule(monkeypatch, n, decades, ok):
    edges = [1, 10, 100, 1000, 10000, n][: len(decades)] + [n]
    curve = np.concatenate([np.full(b - a, v) for a, b, v in zip(edges[:-1], edges[1:], decades)])
    monkeypatch.setattr(rotary, "decay_bound", lambda theta, r: curve[r - 1])
    cos = np.ones((n, 2))
    r = rotary.check_long_term_decay(rope(cos, np.zeros((n, 2)), rtol=1e-5))
    assert r.data["decade_means"] == decades and r.passed is ok and r.value == decades[0] and r.tolerance is None
    assert r.method == "exact over every distance 1..len-1" and r.data["points"][1] == decades[0]
    assert r.detail.startswith("bound at distance 1: ") and ("decade means do not fall" in r.detail) is not ok


# ----- offset-invariant: each tolerance at its boundary (the Freivalds probe replaced by a given residual) -------
def offset_check(monkeypatch, table, rtol, probe=0.0):
    monkeypatch.setattr(absolute, "gram_toeplitz_probe", lambda ctx, probes=None: probe)
    return absolute.check_offset_invariant(ctx(table, rtol=rtol))


def test_offset_invariant_distance_tolerance(monkeypatch):
    # rows 3e1, 0, 4e2: dot products at k = 1 are both 0; distances 3 and 4 differ by 1 = rtol * s (s = 4)
    t = np.array([[3.0, 0.0], [0.0, 0.0], [0.0, 4.0]])
    r = offset_check(monkeypatch, t, R)
    assert r.passed is True and r.value == 1.0 and r.data["tolerance_distance"] == 1.0
    assert r.detail.startswith("distance and dot product depend only on k")
    assert offset_check(monkeypatch, t, below(R)).passed is False


def test_offset_invariant_dot_tolerance(monkeypatch):
    # rows (-1, 0), (3, 0), (3, 4): both steps 4 long; dot products -3 and 9 differ by 12 = rtol * s^2 (s = 5)
    t = np.array([[-1.0, 0.0], [3.0, 0.0], [3.0, 4.0]])
    r = offset_check(monkeypatch, t, 0.48)
    assert r.data["tolerance_dot"] == 12.0 and r.data["dot_spread"][1] == 12.0 and r.data["distance_spread"][1] == 0.0
    assert r.passed is True and r.value == 1.0
    r = offset_check(monkeypatch, t, 0.47)
    assert r.passed is False and r.value == pytest.approx(12 / (0.47 * 25))
    assert r.detail == "at k=1 distances vary by 0 and dot products by 12 over t; offsets failing: 1"


def test_offset_invariant_probe_tolerance(monkeypatch):
    pe = make_encoding("sinusoidal", {"length": 16, "dim": 8, "dtype": "float64"}).array()
    r = offset_check(monkeypatch, pe, R, probe=R)  # residual == rtol passes
    assert r.passed is True and r.value == 1.0
    r = offset_check(monkeypatch, pe, R, probe=above(R))
    assert r.passed is False and r.value == pytest.approx(1.0)
    assert r.detail == "tested offsets agree but the Gram matrix is not Toeplitz: Freivalds residual 0.25 > 0.25"


# ----- shift-linear: residual exactly 0 at tolerance 0 (the fit replaced by the exact map) -------------------------
def test_shift_linear_zero_residual_passes_at_zero_tolerance(monkeypatch):
    # one-hot rows e_(t mod 8): P[t+k] = P[t] M_k with M_k a cyclic permutation, every product exact
    d, n = 8, 64
    table = np.eye(d)[np.arange(n) % d]

    def exact_fit(x, y, rcond):
        m = (x.T @ y > 0).astype(np.float64)  # e_j -> e_(j+k)
        return absolute.ShiftFit(np.eye(d), lambda w: m @ w, lambda u: m.T @ u, "exact permutation")

    monkeypatch.setattr(absolute, "fit_shift", exact_fit)
    r = absolute.check_shift_linear(ctx(table, rtol=0.0))
    assert r.passed is True and r.value == 0.0 and r.tolerance == 0.0
    assert r.data["orthogonal"] is True and r.data["rotation"] is True and r.data["rotation_tolerance"] == 1e-6
    assert "M_k is orthogonal" in r.detail


@pytest.mark.parametrize("sigma,rank", [(1e-15, 1), (2.3e-15, 2)])
def test_shift_linear_fit_ignores_directions_below_4_d_eps(sigma, rank):
    # rows alternate e1 and sigma e2: singular values 2 and sigma sqrt(3) of the k = 2 fit's 7 rows; at rtol 0 the
    # fit drops directions below 4 d eps = 1.8e-15 of the largest: sigma sqrt(3) / 2 = 0.87e-15 goes, 1.99e-15 stays
    table = np.zeros((9, 2))
    table[0::2, 0] = 1.0
    table[1::2, 1] = sigma
    r = absolute.check_shift_linear(ctx(table, rtol=0.0))
    assert f"(truncated SVD (rank {rank}/2))" in r.method
