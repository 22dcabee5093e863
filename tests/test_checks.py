"""Property checks: each passes on a table that has the property and fails on one that lacks it.

Tables are built here from the published formulas (sinusoidal, RoPE, ALiBi, T5 buckets, Shaw indices),
independently of the encoding modules; a few integration tests at the end use the engine's own tables.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from posenc_cli import checks
from posenc_cli.checks.absolute import gram_toeplitz_probe, offsets
from posenc_cli.checks.base import CheckContext
from posenc_cli.encodings import KINDS, get_kind, make_encoding
from posenc_cli.errors import ParameterError

from .each import each

RTOL = {"float64": 1e-9, "float32": 1e-5}


# ----- tables from the formulas ---------------------------------------------------------------------
def sinusoidal(length: int, dim: int, base: float = 10000.0, offset: int = 0) -> np.ndarray:
    """The TF-tutorial table: [sin | cos] with w_k = base^(-2k/d)."""
    t = np.arange(offset, offset + length, dtype=np.float64)[:, None]
    w = base ** (-2 * np.arange(dim // 2) / dim)
    return np.hstack([np.sin(t * w), np.cos(t * w)])


def ctx_for(table, kind=None, tensors=None, metadata=None, rtol=1e-9, encoding=None, seed=0) -> CheckContext:
    return CheckContext(
        table, tensors if tensors is not None else {"pe": table}, metadata or {}, kind, encoding, rtol=rtol, seed=seed
    )


def run(ctx: CheckContext, name: str):
    assert name in checks.applicable(ctx), (name, checks.applicable(ctx))
    (result,) = checks.run_checks(ctx, [name])
    assert result.name == name
    return result


def rope_tables(length: int, dim: int, layout: str, base: float = 10000.0, scaling: float = 1.0, angle=None):
    theta = base ** (-np.arange(0, dim, 2) / dim)
    t = np.arange(length, dtype=np.float64)[:, None]
    ang = (t if angle is None else angle(t)) * theta
    rep = np.concatenate([ang, ang], axis=1) if layout == "half" else np.repeat(ang, 2, axis=1)
    return np.cos(rep) * scaling, np.sin(rep) * scaling, theta


def rope_ctx(cos, sin, layout, theta=None, scaling=None, rtol=1e-9):
    meta = {"layout": layout} if layout else {}
    if scaling is not None:
        meta["attention_scaling"] = repr(scaling)
    tensors = {"cos": cos, "sin": sin} | ({"inv_freq": theta} if theta is not None else {})
    return ctx_for(cos, "rope", tensors, meta, rtol)


def alibi_bias(length: int, heads: int, causal: bool = False) -> np.ndarray:
    slopes = 2.0 ** (-8.0 * np.arange(1, heads + 1) / heads)
    i, j = np.arange(length)[:, None], np.arange(length)[None, :]
    bias = -slopes[:, None, None] * np.abs(i - j)[None]
    if causal:
        bias = np.where((j > i)[None], -np.inf, bias)
    return bias


def t5_buckets(length: int, bidirectional=True, num_buckets=32, max_distance=128) -> np.ndarray:
    """HF T5Attention._relative_position_bucket with relative = key - query."""
    rel = np.arange(length)[None, :] - np.arange(length)[:, None]
    ret = np.zeros_like(rel)
    n = -rel
    if bidirectional:
        num_buckets //= 2
        ret += (n < 0) * num_buckets
        n = np.abs(n)
    else:
        n = np.maximum(n, 0)
    max_exact = num_buckets // 2
    with np.errstate(divide="ignore", invalid="ignore"):
        large = max_exact + (
            np.log(n.astype(np.float32) / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
        ).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return ret + np.where(n < max_exact, n, large)


def shaw_index(length: int, k: int) -> np.ndarray:
    return np.clip(np.arange(length)[None, :] - np.arange(length)[:, None], -k, k) + k


# ----- golden values (seed material: TF tutorial, len 5, dim 6) ---------------------------------------
@pytest.mark.parametrize("source", ["formula", "engine"])
def test_tf_tutorial_golden_values(source):
    if source == "engine":
        enc = make_encoding("sinusoidal", {"length": 5, "dim": 6, "preset": "tf-tutorial", "dtype": "float64"})
        table, encoding = enc.array(), enc
    else:
        table, encoding = sinusoidal(5, 6), None
    ctx = ctx_for(table, "sinusoidal", encoding=encoding)
    res = {r.name: r for r in checks.run_checks(ctx)}
    assert res["equidistant"].passed and round(res["equidistant"].data["distance"], 4) == 0.9600
    assert res["constant-norm"].passed and round(res["constant-norm"].data["norm"], 4) == 1.7321
    assert round(res["constant-norm"].data["norm"], 12) == round(math.sqrt(3), 12)
    assert res["offset-invariant"].passed
    assert round(res["offset-invariant"].data["dot_k1"], 4) == 2.5392
    assert round(res["offset-invariant"].data["distance_k1"], 4) == 0.9600
    required = checks.required_for("sinusoidal", None, [r.name for r in res.values()])
    assert all(res[name].passed for name in required)
    if source == "engine":
        assert "matches-spec" in required


# ----- every absolute check passes and fails -----------------------------------------------------------
def _scaled_row(table, row=3, factor=1.5):
    t = table.copy()
    t[row] *= factor
    return t


def _random(length=300, dim=16, seed=1):
    return np.random.default_rng(seed).normal(0, 0.02, (length, dim))


ABSOLUTE_CASES = [
    # check, a table with the property, a table without it
    ("finite", sinusoidal(64, 16), np.where(np.eye(64, 16, dtype=bool), np.nan, sinusoidal(64, 16))),
    ("bounded", sinusoidal(64, 16), 2 * sinusoidal(64, 16)),
    ("unique", sinusoidal(300, 16), np.vstack([sinusoidal(300, 16), sinusoidal(300, 16)[7:8]])),
    ("constant-norm", sinusoidal(300, 16), _scaled_row(sinusoidal(300, 16))),
    ("equidistant", sinusoidal(300, 16), _scaled_row(sinusoidal(300, 16))),
    ("offset-invariant", sinusoidal(300, 16), _random()),
    ("shift-linear", sinusoidal(300, 16), _random()),
    ("symmetric", sinusoidal(300, 16), _random()),
]


def test_absolute_check_passes_and_fails():
    """Each check of :data:`ABSOLUTE_CASES` (one test over the 8: :func:`tests.each.each` names each failing
    check)."""
    tables = {name: (good, bad) for name, good, bad in ABSOLUTE_CASES}

    def check(name):
        good, bad = tables[name]
        ok = run(ctx_for(good, "sinusoidal"), name)
        assert ok.passed is True, ok
        assert ok.tolerance is not None and ok.method
        fail = run(ctx_for(bad, "learned"), name)
        assert fail.passed is False, fail

    each(tables, check)


def test_scaled_row_breaks_geometric_properties():
    scaled = _scaled_row(sinusoidal(300, 16), row=150, factor=1.001)

    def check(name):
        assert run(ctx_for(scaled, "sinusoidal"), name).passed is False

    each(["constant-norm", "equidistant", "offset-invariant", "shift-linear", "symmetric"], check)


def test_nan_table_fails_finite_and_nothing_crashes():
    t = sinusoidal(50, 8)
    t[10, 3] = np.nan
    t[20, 1] = np.inf
    ctx = ctx_for(t, None)
    assert checks.applicable(ctx) == [n for n in checks.CHECKS if n in checks.applicable(ctx)]
    res = {r.name: r for r in checks.run_checks(ctx)}
    assert res["finite"].passed is False and res["finite"].value == 2
    assert "1 NaN, 1 inf" in res["finite"].detail
    for name, r in res.items():
        if name != "finite":
            assert r.detail == "table has non-finite values", r
            assert r.passed is None and r.not_run and r.needs == ("finite",), r  # not run: needs finite
            assert r.to_json()["status"] == "NOT RUN"
    assert checks.required_for(None, None, list(res)) == ["finite", "distinct"]  # what every table needs


def test_unique_large_tables_use_hashing_and_sampled_search():
    t = sinusoidal(5000, 16)
    r = run(ctx_for(t, "sinusoidal"), "unique")
    assert r.passed and "sampled" in r.method and "hashes" in r.method
    dup = t.copy()
    dup[4321] = dup[17]
    r = run(ctx_for(dup, "sinusoidal"), "unique")
    assert r.passed is False and r.value == 0 and r.data["closest"] == [17, 4321]
    near = t.copy()
    near[3000] = near[123] + 1e-12
    r = run(ctx_for(near, "sinusoidal"), "unique")
    assert r.passed is False and r.data["closest"] == [123, 3000]


def test_unique_exact_path_finds_the_closest_pair():
    t = sinusoidal(1000, 16)
    t[900] = t[5] + 1e-3
    r = run(ctx_for(t, "sinusoidal", rtol=1e-5), "unique")
    assert r.passed is True and r.data["closest"] == [5, 900] and r.value == pytest.approx(1e-3 * 4, rel=1e-6)
    assert r.method.startswith("exact")


@settings(max_examples=100, deadline=None)
@given(
    values=st.binary(min_size=1, max_size=300),
    dtype=st.sampled_from([np.float32, np.float64]),
    spread=st.sampled_from([0.0, 1e-3, 1.0]),
)
def test_unique_sorts_projections_in_the_stable_order(values, dtype, spread) -> None:
    """``unique``'s fast sort of a sketch column gives exactly NumPy's stable order (the one its candidate
    pairs were always drawn from), with runs of equal values (few distinct integers, -0.0 beside 0.0) or none
    (a distinct offset added to each value). The integers -3..3 are drawn as bytes (each byte mod 7, minus 3):
    one draw instead of one per value (a list of up to 300 integers cost 2.5 times the test's own work)."""
    from posenc_cli.checks.absolute import _stable_argsort

    ints = np.frombuffer(values, dtype=np.uint8) % 7 - 3.0
    x = ints + spread * np.arange(len(values)) ** 1.5
    x = np.where(x == 0, -0.0, x).astype(dtype)
    x[::3] = np.abs(x[::3])  # +0.0 and -0.0 together: equal values, different bits
    assert np.array_equal(_stable_argsort(x), np.argsort(x, kind="stable"))


def test_shift_linear_index_is_affine_not_linear_and_sinusoidal_is_a_rotation():
    index = np.repeat(np.arange(200, dtype=np.float64)[:, None], 4, axis=1)
    assert run(ctx_for(index, "index"), "shift-linear").passed is False
    assert run(ctx_for(index, "index"), "equidistant").passed is True
    assert run(ctx_for(index, "index"), "offset-invariant").passed is False  # dot products t(t+k)d depend on t
    r = run(ctx_for(sinusoidal(2000, 64), "sinusoidal"), "shift-linear")
    assert r.passed and r.data["rotation"] is True
    assert "least squares" in r.method and "probes" in r.method


def test_decay_reports_the_curve():
    r = run(ctx_for(sinusoidal(512, 64), "sinusoidal"), "decay")
    assert r.passed is None
    curve = r.data["curve"]
    assert list(curve) == offsets(512)
    assert curve[1] > curve[8] > curve[144]


def test_precision_reports_bfloat16_collapse_of_positions():
    index = np.repeat(np.arange(4096, dtype=np.float32)[:, None], 2, axis=1)
    r = run(ctx_for(index, "index"), "precision")
    assert r.passed is None
    bf = r.data["bfloat16"]
    assert bf["raw_positions_distinct"] == 769  # the seed material's count, computed for len 4096
    assert bf["distinct_rows"] == 769
    # float16: 0..2048 exact (2049 values), then even numbers up to 4096 (4095 rounds up): 1024 more
    assert r.data["float16"]["distinct_rows"] == r.data["float16"]["raw_positions_distinct"] == 3073
    assert "769" in r.detail


def test_offset_invariant_tests_every_offset_not_only_one():
    # A table whose consecutive steps are all alike but whose k=2 distances are not: P[t] alternates phase.
    t = sinusoidal(400, 16)
    t[::2, :8] *= -1  # flips sin at even rows: |P[t+1]-P[t]| constant, |P[t+2]-P[t]| not
    r = run(ctx_for(t, "sinusoidal"), "offset-invariant")
    assert r.passed is False


# ----- the Freivalds probe ---------------------------------------------------------------------------
def test_freivalds_probe_catches_one_perturbed_entry():
    t = sinusoidal(2000, 32).astype(np.float32)
    bad = t.copy()
    bad[1234, 5] += 0.01
    caught = 0
    for seed in range(20):
        assert gram_toeplitz_probe(ctx_for(t, "sinusoidal", rtol=1e-5, seed=seed)) <= 1e-5
        caught += gram_toeplitz_probe(ctx_for(bad, "sinusoidal", rtol=1e-5, seed=seed)) > 1e-5
    assert caught >= 19


def test_shift_linear_probe_catches_one_perturbed_entry():
    t = sinusoidal(2000, 32).astype(np.float32)
    t[1999, 7] += 0.01  # the last row: outside most fit sets, seen by the all-rows verification
    r = run(ctx_for(t, "sinusoidal", rtol=1e-5), "shift-linear")
    assert r.passed is False


# ----- rope -------------------------------------------------------------------------------------------
ROPE_CHECKS = ["pythagorean", "norm-preserving", "relative", "long-term-decay"]


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_checks_pass(layout):
    cos, sin, theta = rope_tables(1024, 64, layout)
    ctx = rope_ctx(cos, sin, layout, theta)
    res = {r.name: r for r in checks.run_checks(ctx)}
    assert set(ROPE_CHECKS) <= set(res)
    assert "constant-norm" not in res  # cos alone is not a position table
    for name in ROPE_CHECKS:
        assert res[name].passed is True, res[name]
    assert res["norm-preserving"].data["layout"] == layout
    points = res["long-term-decay"].data["points"]
    assert set(points) == {1, 10, 100, 1000} and points[1] > points[10] > points[100]


def test_rope_layout_detected_without_metadata():
    cos, sin, _ = rope_tables(256, 32, "interleaved")
    ctx = ctx_for(cos, None, {"cos": cos, "sin": sin}, {})
    assert {"pythagorean", "norm-preserving", "relative"} <= set(checks.applicable(ctx))
    r = run(ctx, "norm-preserving")
    assert r.passed and r.data["layout"] == "interleaved" and "detected" in r.detail


def test_rope_attention_scaling():
    cos, sin, theta = rope_tables(256, 32, "half", scaling=1.2)
    good = rope_ctx(cos, sin, "half", theta, scaling=1.2)
    for name in ("bounded", "pythagorean", "norm-preserving", "relative"):
        assert run(good, name).passed, name
    unscaled = rope_ctx(cos, sin, "half", theta)
    assert run(unscaled, "pythagorean").passed is False
    assert run(unscaled, "bounded").passed is False


def test_rope_broken_tables_fail():
    cos, sin, theta = rope_tables(256, 32, "half")
    bad = cos.copy()
    bad[100, 3] = 0.5
    assert run(rope_ctx(bad, sin, "half", theta), "pythagorean").passed is False
    assert run(rope_ctx(bad, sin, "half", theta), "norm-preserving").passed is False
    # a half-layout table read as interleaved pairs unequal angles: norms change
    assert run(rope_ctx(cos, sin, "interleaved", theta), "norm-preserving").passed is False
    # angles quadratic in position: still rotations, but not relative
    qc, qs, _ = rope_tables(256, 32, "half", angle=lambda t: t * t / 50)
    ctx = rope_ctx(qc, qs, "half", theta)
    assert run(ctx, "pythagorean").passed and run(ctx, "norm-preserving").passed
    assert run(ctx, "relative").passed is False


def test_long_term_decay_fails_for_a_single_frequency():
    cos, sin, _ = rope_tables(2000, 2, "half", base=1.0)  # one angle: |S| never decays
    theta = np.array([1e-4])
    r = run(rope_ctx(cos, sin, "half", theta), "long-term-decay")
    assert r.passed is False


# ----- matrices: alibi, t5, relative -----------------------------------------------------------------
def test_alibi_checks():
    bias = alibi_bias(64, 4)
    ctx = ctx_for(bias, "alibi", {"bias": bias, "slopes": np.ones(4)})
    for name in ("finite", "toeplitz", "monotone"):
        assert run(ctx, name).passed, name
    broken = bias.copy()
    broken[2, 40, 10] += 0.5
    assert run(ctx_for(broken, "alibi", {"bias": broken}), "toeplitz").passed is False
    wrong_sign = -bias
    assert run(ctx_for(wrong_sign, "alibi", {"bias": wrong_sign}), "toeplitz").passed is True
    assert run(ctx_for(wrong_sign, "alibi", {"bias": wrong_sign}), "monotone").passed is False


def test_alibi_causal_mask_is_finite_but_nan_is_not():
    bias = alibi_bias(32, 2, causal=True)
    ctx = ctx_for(bias, "alibi", {"bias": bias}, {"causal": "true"})
    r = run(ctx, "finite")
    assert r.passed and r.data["masked"] == 2 * 32 * 31 // 2
    assert run(ctx, "toeplitz").passed and run(ctx, "monotone").passed
    assert run(ctx_for(bias, "alibi", {"bias": bias}, {"causal": "false"}), "finite").passed is False
    bias[1, 5, 2] = np.nan
    assert run(ctx_for(bias, "alibi", {"bias": bias}, {"causal": "true"}), "finite").passed is False


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_checks(bidirectional):
    b = t5_buckets(300, bidirectional)
    meta = {"num_buckets": "32", "max_distance": "128", "bidirectional": str(bidirectional).lower()}
    ctx = ctx_for(b, "t5", {"buckets": b}, meta)
    assert "finite" not in checks.applicable(ctx)  # integer buckets
    for name in ("toeplitz", "monotone", "t5-saturation"):
        assert run(ctx, name).passed, run(ctx, name)
    assert run(ctx, "t5-saturation").value == (31 if bidirectional else 32)
    # metadata that does not describe the table
    assert run(ctx_for(b, "t5", {"buckets": b}, meta | {"max_distance": "64"}), "t5-saturation").passed is False
    assert run(ctx_for(b, "t5", {"buckets": b}, meta | {"num_buckets": "16"}), "t5-saturation").passed is False
    broken = b.copy()
    broken[150, 100] = 0  # distance 50 before the query: a bucket of the lower half in both modes
    ctx = ctx_for(broken, "t5", {"buckets": broken}, meta)
    assert run(ctx, "toeplitz").passed is False and run(ctx, "monotone").passed is False


def test_t5_short_table_uses_fewer_buckets():
    b = t5_buckets(10)
    r = run(ctx_for(b, "t5", {"buckets": b}, {"num_buckets": "32", "max_distance": "128"}), "t5-saturation")
    # 8 exact buckets (0..7) then distances 8 and 9 share log bucket 8: 9 before the query, 8 after
    assert r.passed and r.value == 17


def test_shaw_relative_checks():
    idx = shaw_index(100, 16)
    ctx = ctx_for(idx, "relative", {"index": idx})
    assert run(ctx, "toeplitz").passed and run(ctx, "monotone").passed
    flipped = idx.T.copy()
    assert run(ctx_for(flipped, "relative", {"index": flipped}), "toeplitz").passed
    assert run(ctx_for(flipped, "relative", {"index": flipped}), "monotone").passed is False


# ----- registry and API --------------------------------------------------------------------------------
def test_registry_integrity():
    for name, c in checks.CHECKS.items():
        assert name == name.lower() and " " not in name and c.doc
    for kind in KINDS:
        declared = get_kind(kind).PROPERTIES
        assert set(declared) <= set(checks.CHECKS), kind
        assert any(declared.values()), f"{kind} requires nothing"
    assert checks.UNKNOWN_KIND_REQUIRES == ("finite", "distinct")


def test_required_for():
    available = ["finite", "bounded", "unique", "constant-norm", "decay"]
    assert checks.required_for("sinusoidal", None, available) == ["finite", "bounded", "unique", "constant-norm"]
    assert checks.required_for(None, None, available) == ["finite"]
    assert checks.required_for("no-such-kind", None, available) == ["finite"]
    assert checks.required_for("sinusoidal", ["decay", "bounded"], available) == ["decay", "bounded"]
    with pytest.raises(
        ParameterError, match="unknown check 'rotary'; choose from: finite, matches-spec, bounded, disti"
    ):
        checks.required_for("sinusoidal", ["rotary"], available)
    with pytest.raises(ParameterError, match="unknown check"):
        checks.run_checks(ctx_for(sinusoidal(5, 4)), ["nope"])


def test_results_serialise():
    ctx = ctx_for(sinusoidal(64, 8), "sinusoidal")
    for r in checks.run_checks(ctx):
        j = r.to_json()
        assert j["status"] in ("PASS", "FAIL", "INFO") and j["method"]


# ----- random sinusoidal tables pass every default property ------------------------------------------
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    length=st.integers(2, 400),
    half=st.integers(1, 32),
    base=st.floats(10.0, 1e5),
    offset=st.integers(0, 10**6),
    layout=st.sampled_from(["interleaved", "split", "split-cos-first"]),
    freq=st.sampled_from(["paper", "t2t"]),
    dtype=st.sampled_from(["float64", "float32"]),
)
def test_random_sinusoidal_tables_have_every_default_property(length, half, base, offset, layout, freq, dtype):
    # Even dims: with an odd dim the extra sin column has no cos partner, so norms and shifts honestly vary.
    enc = make_encoding(
        "sinusoidal",
        {
            "length": length,
            "dim": 2 * half,
            "base": base,
            "offset": offset,
            "layout": layout,
            "freq": freq,
            "dtype": dtype,
        },
    )
    table = enc.array()
    ctx = ctx_for(table, "sinusoidal", rtol=RTOL[dtype], encoding=enc)
    res = checks.run_checks(ctx)
    required = checks.required_for("sinusoidal", None, [r.name for r in res])
    assert {
        "finite",
        "bounded",
        "unique",
        "constant-norm",
        "equidistant",
        "offset-invariant",
        "shift-linear",
        "symmetric",
        "matches-spec",
    } <= set(required) | (
        {"unique", "equidistant", "offset-invariant", "shift-linear", "symmetric"} if length < 3 else set()
    )
    failed = [(r.name, r.value, r.tolerance, r.detail) for r in res if r.name in required and not r.passed]
    assert not failed


@pytest.mark.parametrize("dtype, rtol", [("float16", 2e-3), ("bfloat16", 1.6e-2)])
def test_low_precision_sinusoidal_tables_pass_at_their_tolerance(dtype, rtol):
    enc = make_encoding("sinusoidal", {"length": 1000, "dim": 64, "dtype": dtype})
    res = checks.run_checks(ctx_for(enc.array(), "sinusoidal", rtol=rtol, encoding=enc))
    required = checks.required_for("sinusoidal", None, [r.name for r in res])
    assert not [(r.name, r.value, r.tolerance) for r in res if r.name in required and not r.passed]


def test_memory_mapped_table(tmp_path):
    path = tmp_path / "pe.npy"
    np.save(path, sinusoidal(5000, 16).astype(np.float32))
    table = np.load(path, mmap_mode="r")
    res = {r.name: r for r in checks.run_checks(ctx_for(table, "sinusoidal", rtol=1e-5))}
    assert all(res[n].passed for n in checks.required_for("sinusoidal", None, list(res)))


def test_row_hashes_treat_signed_zeros_as_equal():
    import ml_dtypes

    from posenc_cli.checks.common import duplicate_groups, row_hashes

    rows = np.array([[0.0, 1.0], [-0.0, 1.0], [1.0, -0.0]])
    for dt in (np.float64, np.float32, np.float16, ml_dtypes.bfloat16):
        distinct, pairs = duplicate_groups(row_hashes(iter([rows.astype(dt)]), 2))
        assert distinct == 2 and sorted(pairs[0]) == [0, 1]


# ----- integration with the engine's kinds -----------------------------------------------------------
ENGINE_CASES = [
    ("rope", {"length": 300, "dim": 64}),
    ("rope", {"length": 300, "dim": 64, "preset": "gpt-j"}),
    ("rope", {"length": 600, "dim": 32, "scaling": "yarn", "factor": 4.0, "original_max_position_embeddings": 128}),
    ("rope", {"length": 300, "dim": 64, "cache": "onnx"}),
    ("xpos", {"length": 300, "dim": 32}),
    ("alibi", {"length": 50, "dim": 4}),
    ("alibi", {"length": 50, "dim": 4, "causal": True}),
    ("t5", {"length": 200}),
    ("t5", {"length": 200, "bidirectional": False, "num_buckets": 16, "max_distance": 64}),
    ("relative", {"length": 60}),
    ("learned", {"length": 200, "dim": 16}),
    ("index", {"length": 200, "dim": 4}),
    ("normalized", {"length": 200, "dim": 4}),
    ("binary", {"length": 200, "dim": 8}),
    ("sinusoidal-2d", {"grid": "8,8", "dim": 16}),
]


def test_engine_tables_have_their_default_properties():
    """Each of :data:`ENGINE_CASES` passes every property its kind requires, matches-spec among them (one test
    over the 15 cases: :func:`tests.each.each` names each failing one)."""

    def check(case):
        kind, params = case
        enc = make_encoding(kind, params)
        tensors = {name: enc.array(name) for name in enc.tensor_specs()}
        ctx = CheckContext(tensors[enc.PRIMARY], tensors, enc.metadata(), kind, enc, rtol=1e-5)
        res = checks.run_checks(ctx)
        required = checks.required_for(kind, None, [r.name for r in res])
        assert "matches-spec" in required and len(required) >= 2
        failed = [(r.name, r.detail) for r in res if r.name in required and not r.passed]
        assert not failed

    each(ENGINE_CASES, check)


def test_learned_table_fails_what_it_lacks():
    enc = make_encoding("learned", {"length": 200, "dim": 16})
    t = enc.array()
    res = {r.name: r for r in checks.run_checks(ctx_for(t, "learned", rtol=1e-5))}
    for name in ("constant-norm", "equidistant", "offset-invariant", "shift-linear", "symmetric"):
        assert res[name].passed is False, name


def test_matches_spec_fails_on_a_changed_entry():
    """Wherever the entry is: the table is read in blocks of rows (4096 of these 16 columns), their edges too
    (0.05: beyond the float32 formula's error at row 9000, which matches-spec accepts)."""
    enc = make_encoding("sinusoidal", {"length": 9000, "dim": 16})
    exact = enc.array()
    for row in (42, 4095, 4096, 8999):
        t = exact.copy()
        t[row, 3] += 0.05
        r = run(ctx_for(t, "sinusoidal", rtol=1e-5, encoding=enc), "matches-spec")
        assert r.passed is False and f"pe[{row}, 3]" in r.detail


def test_matches_spec_fails_on_a_non_finite_entry():
    """A nan or an infinity where the spec has a number is a difference (the largest), named where it is; and
    the rest of the table still counts."""
    enc = make_encoding("sinusoidal", {"length": 100, "dim": 16})

    def check(bad):
        t = enc.array()
        t[7, 5] = bad
        r = run(ctx_for(t, "sinusoidal", rtol=1e-5, encoding=enc), "matches-spec")
        assert r.passed is False and "pe[7, 5]" in r.detail and "inf" in r.detail

    each([np.nan, np.inf, -np.inf], check)


# ----- scale: linear time, no len x len memory ---------------------------------------------------------
def test_large_table_all_checks_linear_memory():
    # 32 MiB: an L x L float64 matrix would be 8 GiB, and the table still dwarfs the fixed-size blocks and probes
    enc = make_encoding("sinusoidal", {"length": 32768, "dim": 256, "dtype": "float32"})
    table = enc.array()
    ctx = ctx_for(table, "sinusoidal", rtol=1e-5, encoding=enc)
    tracemalloc.start()
    res = checks.run_checks(ctx)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    required = checks.required_for("sinusoidal", None, [r.name for r in res])
    assert not [r.name for r in res if r.name in required and not r.passed]
    assert peak < 2 * table.nbytes  # an L x L float64 matrix would be 8 GiB; the table is 32 MiB
