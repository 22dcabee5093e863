"""Tables computed the way Hugging Face (and other libraries) compute them, in float32 arithmetic, are
identified with the right parameters, compare the same as their spec within the float32 formula's error (the
bound stated), and pass ``check --against``: tables built independently with plain NumPy
(tests/formula_tables.py), and rows of torch-made tables (tests/data/golden/formula_rows.json)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import posenc_cli as pe
from posenc_cli.encodings import make_encoding
from posenc_cli.inspect import analysis as an
from posenc_cli.inspect import tolerance as tol
from tests import formula_tables as ft
from tests.each import each

LONG = {"original_max_position_embeddings": 8192, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
#: Head widths of the long cases (see CASES): 32 columns at 32768 rows; at 131072, the fewest even columns beyond
#: what identify verifies in full (an.FULL_CHECK_ELEMENTS elements: 32 columns), so it samples rows there (34)
D32K, D131K = 32, an.FULL_CHECK_ELEMENTS // 131072 + 2


def _yarn(n: int):
    inv, att = ft.hf_yarn(D32K, 1e4, 4.0, 4096)  # its ramp: frequencies 5 to 12 of 16
    return ft.hf_cos_sin(inv, n, att), {"scaling": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}


def _dynamic(n: int):
    # transformers' dynamic rule past max_position_embeddings: a new base for the whole cache
    base, factor, old, dim = 1e4, 2.0, 4096, 64
    b2 = base * ((factor * n / old) - (factor - 1)) ** (dim / (dim - 2))
    return ft.hf_cos_sin(ft.hf_inv_freq(dim, b2), n), {"base": b2}


def _longrope(n: int, long: bool, dim: int = 64):
    short = [1.0 + 0.01 * k for k in range(dim // 2)]
    longf = [1.0 + 0.25 * k for k in range(dim // 2)]
    att = math.sqrt(1 + math.log(4.0) / math.log(4096))
    inv = ft.hf_longrope(dim, 1e4, longf if long else short)
    params = {
        "scaling": "longrope",
        "factor": 4.0,
        "original_max_position_embeddings": 4096,
        "short_factor": tuple(short),
        "long_factor": tuple(longf),
    }
    if long:
        params["seq_len"] = n
    return ft.hf_cos_sin(inv, n, att), params


#: The float32 error grows with the position: the long cases keep every row (at 131k rows identify samples rows, as
#: it does on a long cache: the test asserts which), on narrower heads: the length is their property, not the width
#: (the largest angles and float32 error are the frequency-1 columns every width has): 32 columns at 32k rows (16
#: frequencies still span 1 to 1/base, yarn's ramp and longrope's factors included; every row verified, as at 64),
#: 34 at 131k (D131K: 17 frequencies, llama3's three bands 8 high, 2 medium, 7 low); Llama's own 128 stay in
#: default-1k, llama3-8k and bf16-8k, 64 in the rest. The plain rule at 131k
#: rows in float32 is llama3-131k's high-frequency columns (llama3 leaves them as they are: the largest angles, the
#: largest float32 error), read from the same sampled rows; plain-rule identification is default-1k's and
#: base1e6-32k's, and bf16-131k is the plain rule at 131k rounded: a default-131k case repeated those (0.9 CPU-s).
#: A base5e5-8k case (the plain rule, base 500000, 8192 x 128 in float32) repeated them too: 8192 rows of 128
#: columns in float32 are llama3-8k's (its high-frequency columns are that rule, base 500000, as they are), the plain
#: rule at base 500000 is bf16-131k's (rounded) and, in float32, test_hf_cache_explanations' scaling-missing caches'
#: (1k and 32k rows, read as base 500000 without llama3's scaling), another base than 10000 is base1e6-32k's
CASES = {
    "default-1k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(128, 1e4), 1024), {"base": 1e4}),
    "base1e6-32k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(D32K, 1e6), 32768), {"base": 1e6}),
    "llama3-8k": lambda: (
        ft.hf_cos_sin(ft.hf_llama3(ft.hf_inv_freq(128, 5e5), 8, 1, 4, 8192), 8192),
        {"scaling": "llama3", "base": 5e5, **LONG},
    ),
    "llama3-131k": lambda: (
        ft.hf_cos_sin(ft.hf_llama3(ft.hf_inv_freq(D131K, 5e5), 8, 1, 4, 8192), 131072),
        {"scaling": "llama3", "base": 5e5, **LONG},
    ),
    "linear-8k": lambda: (
        ft.hf_cos_sin((ft.hf_inv_freq(64, 1e4) / np.float32(4)).astype(np.float32), 8192),
        {"scaling": "linear", "factor": 4.0},
    ),
    "yarn-32k": lambda: _yarn(32768),
    "dynamic-8k": lambda: _dynamic(8192),
    "longrope-short-4k": lambda: _longrope(4096, False),
    "longrope-long-32k": lambda: _longrope(32768, True, D32K),
    "partial-8k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(32, 1e4), 8192), {"dim": 32}),
    "bf16-8k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(128, 1e4), 8192, cast="bfloat16"), {"base": 1e4}),
    "bf16-131k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(D131K, 5e5), 131072, cast="bfloat16"), {"base": 5e5}),
    "fp16-32k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(D32K, 1e4), 32768, cast="float16"), {"base": 1e4}),
}


def _expect(best, want: dict, cos: np.ndarray) -> None:
    """The identified rope has the wanted frequencies and attention scaling (two spellings of one table, such
    as dynamic NTK and its new base, are both right), and every parameter of ``want`` but the equivalent ones."""
    assert best.kind == "rope"
    enc = make_encoding("rope", best.params)
    ref = make_encoding("rope", {"length": cos.shape[0], "dim": cos.shape[1], **want})
    np.testing.assert_allclose(enc.inv_freq(), ref.inv_freq(), rtol=1e-6)
    assert enc.attention_scaling == pytest.approx(ref.attention_scaling, rel=1e-6)
    params = enc.params()
    for k, v in want.items():
        if k == "base" and params.get("scaling") != "none":
            continue
        if params.get("scaling") == "longrope" and k != "scaling":
            continue  # read back as one factor per column and its attention factor: the same table
        got = params[k]
        if isinstance(v, float):
            assert got == pytest.approx(v, rel=1e-6), (k, got, v)
        elif isinstance(v, tuple):
            np.testing.assert_allclose(got, v, rtol=1e-6)
        else:
            assert got == v, (k, got, v)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hf_cache_identified_compared_checked(case: str, tmp_path) -> None:
    (cos, sin), want = CASES[case]()
    if cos.dtype.name == "bfloat16":  # .npy cannot hold bfloat16: a metadata-free safetensors with both tables
        from safetensors.numpy import save_file

        path = tmp_path / "cache.safetensors"
        save_file({"cos": cos, "sin": sin}, str(path))
        found = pe.identify(str(path))  # the file, read as bfloat16 (the float32 cases identify the array)
    else:
        path = tmp_path / "cos.npy"
        np.save(path, cos)
        found = pe.identify(cos)
    assert found.best is not None, found.reason
    assert (found.best.rows_checked < cos.shape[0]) == (cos.size > an.FULL_CHECK_ELEMENTS)  # sampled when long
    _expect(found.best, want, cos)
    assert found.best.tolerance in ("ulp", tol.FORMULA)
    # the spec the identification names, compared: the same, within the float32 formula's error (bound stated)
    # the spec as a person writes it from the model's config (not from the identification)
    spec = "rope:" + ",".join(f"{k}={_show(v)}" for k, v in want.items() if k != "dim")
    report = pe.check(str(path), against=spec)
    cmp = report.against  # compare(path, spec), as check --against makes it (api.check calls api.compare)
    assert cmp is not None and cmp.same, cmp.reason
    f = cmp.tensors[0].result.formula
    if f is not None:
        assert f["ok"] and f["bound"] > 0 and f["bound_row"] == cos.shape[0] - 1
    failed = [r.name for r in report.results if r.passed is False]
    assert report.ok, failed


def _show(v):
    if isinstance(v, tuple):
        return ";".join(repr(x) for x in v)
    return repr(v) if isinstance(v, float) else str(v)


# ----- golden rows made by torch / transformers (tools/golden/make_formula_golden.py) ---------------------------
GOLDEN = json.loads((Path(__file__).parent / "data" / "golden" / "formula_rows.json").read_text())
GOLDEN_SPECS = {
    "hf-default": ("rope", {"base": 5e5}),
    "hf-llama3": ("rope", {"preset": "llama3.1"}),
    "hf-default-bf16": ("rope", {"base": 5e5, "dtype": "bfloat16"}),
    "tutorial": ("sinusoidal", {}),
    "fairseq": ("sinusoidal", {"freq": "t2t", "layout": "split"}),
}


@pytest.mark.parametrize("case", sorted(GOLDEN_SPECS))
def test_golden_rows_within_the_bound(case: str) -> None:
    """torch's rows of 131072-position tables lie within the bound of their exact spec, and the bound is not
    loose by orders of magnitude (some row uses a tenth of it at least)."""
    data = GOLDEN["cases"][case]
    kind, params = GOLDEN_SPECS[case]
    rows = np.array(GOLDEN["rows"])
    enc = pe.generate(kind, length=GOLDEN["length"], dim=data["dim"], **params)
    for name in [n for n in ("cos", "sin", "pe") if n in data]:
        x = np.array(data[name], dtype=np.float64)
        y = np.concatenate([np.asarray(enc.rows(name, r, r + 1), dtype=np.float64) for r in rows])
        stored = np.dtype(enc.spec(name).dtype)
        v = tol.formula_check(x, y, rows, enc.angle_terms(name), stored, stored)
        assert v.ok and v.informative, (name, v)
        assert v.ratio > 0.01, (name, v)  # torch's float32 error is really there, and the bound is not absurd
        assert np.max(np.abs(x - y)) > 1e-4  # not an exact table: the model is what accepts it


def test_golden_hf_rows_agree_with_the_numpy_formula() -> None:
    """tests/formula_tables.py follows transformers' float32 arithmetic, but torch's pow and cos are not NumPy's:
    the two float32 tables agree exactly where the angle is small and within twice the error bound everywhere
    (each is within the bound of the exact table), and differ somewhere (they are independent computations)."""
    rows = np.array(GOLDEN["rows"])
    enc = pe.generate("rope", length=GOLDEN["length"], dim=128, base=5e5)
    bound = tol.formula_bound(enc.angle_terms("cos"), rows, np.float32, np.float32)
    for name, build in (
        ("hf-default", ft.hf_inv_freq(128, 5e5)),
        ("hf-llama3", ft.hf_llama3(ft.hf_inv_freq(128, 5e5), 8, 1, 4, 8192)),
    ):
        cos, sin = ft.hf_cos_sin(build, GOLDEN["length"], positions=rows)  # the golden rows of the whole table
        for mine, theirs in ((cos, GOLDEN["cases"][name]["cos"]), (sin, GOLDEN["cases"][name]["sin"])):
            diff = np.abs(mine - np.array(theirs))
            assert np.all(diff <= 2 * bound)
            assert np.all(diff[:2] <= 4 * 2.0**-24)  # positions 0 and 1: the angle is inv_freq itself


def test_bound_grows_with_position_and_counts_the_cast() -> None:
    """The bound's terms, from its formula: zero-frequency columns only carry the trig/cast terms; the angle term
    is linear in position; a bfloat16 cast adds half a bfloat16 ulp."""
    from posenc_cli.encodings.base import AngleTerms

    terms = AngleTerms(np.array([0.0, 1.0, 1e-3]), 1.0)
    rows = np.array([0, 1000, 2000])
    b32 = tol.formula_bound(terms, rows, np.float32, np.float32)
    u = 2.0**-24
    assert b32[0, 0] == pytest.approx(tol.K_TRIG * u + u, rel=1e-12)  # trig + the float32 reference's half ulp
    angle = b32[:, 1] - b32[0, 1]
    assert angle[2] == pytest.approx(2 * angle[1], rel=1e-12)
    assert angle[1] == pytest.approx(1000 * u * tol.K_OMEGA, rel=1e-9)  # w = 1: ln w = 0
    import ml_dtypes

    bf = tol.formula_bound(terms, rows, ml_dtypes.bfloat16, ml_dtypes.bfloat16)
    assert bf[0, 0] - b32[0, 0] == pytest.approx(2.0**-8 * (1 + tol.K_TRIG * u) + 2.0**-8 - u, rel=1e-6)


@pytest.mark.parametrize(
    "table",
    ["noise", "trained", "nan", "constant"],
)
def test_bad_tables_are_never_identified(table: str) -> None:
    rng = np.random.default_rng(0)
    cos, _ = ft.hf_cos_sin(ft.hf_inv_freq(64, 1e4), 8192)
    if table == "noise":
        x = rng.standard_normal((8192, 64)).astype(np.float32)
    elif table == "trained":  # a float32 cache after updates: within no formula's error
        x = (cos + 0.02 * rng.standard_normal(cos.shape)).astype(np.float32)
    elif table == "nan":
        x = cos.copy()
        x[100, 3] = np.nan
    else:
        x = np.full((8192, 64), 0.5, dtype=np.float32)
    found = pe.identify(x)
    assert found.best is None
    assert found.reason


def test_bound_in_place_equals_its_formula_term_by_term() -> None:
    """``formula_bound`` computes ``a angle + b`` in place; the module docstring's terms, spelled out one by one
    in plain NumPy here, give the same bound (random frequencies, offsets, amplitudes and positions): every stored
    dtype, five seeds each (one test over the 20 cases: each takes a millisecond, a test id more than that)."""
    each(
        [(stored, seed) for stored in ("float32", "float16", "bfloat16", "float64") for seed in range(5)],
        lambda case: _bound_term_by_term(*case),
    )


def _bound_term_by_term(stored: str, seed: int) -> None:
    import ml_dtypes

    from posenc_cli.encodings.base import AngleTerms

    rng = np.random.default_rng(seed)
    stored_dt = ml_dtypes.bfloat16 if stored == "bfloat16" else np.dtype(stored)
    w = np.concatenate([[0.0], 10.0 ** rng.uniform(-6, 0.5, 31)])
    terms = AngleTerms(w, float(rng.uniform(0.1, 3)), int(rng.integers(-1000, 1000)))
    rows = np.sort(rng.integers(0, 2**20, 64))
    u = 2.0**-24
    p = np.abs(rows.astype(np.float64) + terms.offset)
    rel_w = np.zeros_like(w)
    rel_w[1:] = 2 * np.abs(np.log(w[1:])) + tol.K_OMEGA
    angle = np.minimum(2.0, p[:, None] * (w * rel_w * u)[None, :])
    e32 = terms.amplitude * (angle + tol.K_TRIG * u)
    e_stored = {"float32": 0.0, "float64": 0.0, "float16": 2.0**-11, "bfloat16": 2.0**-8}[stored]
    floors = {"float32": 2.0**-150, "float64": 2.0**-1075, "float16": 2.0**-25, "bfloat16": 2.0**-134}[stored]
    want = e32 + e_stored * (terms.amplitude + e32) + (e_stored or u) * terms.amplitude + 2 * floors
    got = tol.formula_bound(terms, rows, stored_dt, stored_dt)
    if stored == "float64":  # a float64 reference: half a float64 ulp, not a float32 one
        want = want - u * terms.amplitude + 2.0**-53 * terms.amplitude
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


def test_arithmetic_bounds_each_tensor_by_its_own_angles() -> None:
    """``table_arithmetic`` reads its tensors block by block and computes a block's bound once for tensors of the
    same angles (a rotary cache's cos and sin): a tensor of other angles keeps its own bound, so each row's bound is
    the larger of the two tensors' (from ``formula_bound`` on each, here), and a pair of the same angles gives that
    bound once."""
    from posenc_cli.encodings.base import AngleTerms

    rope = make_encoding("rope", {"length": 10000, "dim": 16, "base": 1e4})  # 10000 rows: three 4096-row blocks

    class OtherSin:  # sin's angles twice cos's: another bound, the larger one at every row past the first
        def tensor_specs(self):
            return rope.tensor_specs()

        def angle_terms(self, name):
            t = rope.angle_terms(name)
            return t if name == "cos" else AngleTerms(2 * t.freq, t.amplitude, t.offset)

        def rows(self, name, start, stop):
            return rope.rows(name, start, stop)

    cos, sin = ft.hf_cos_sin(ft.hf_inv_freq(16, 1e4), 10000)  # float32 arithmetic: judged within its bound
    tensors = {"cos": cos, "sin": sin}
    rows = np.arange(10000)
    f32 = np.dtype(np.float32)
    each = [tol.formula_bound(OtherSin().angle_terms(n), rows, f32, f32).max(axis=1) for n in ("cos", "sin")]
    got = tol.table_arithmetic(tensors, OtherSin(), {}, f32, 1e-6)
    assert got.compute == "float32" and got.source == tol.INFERRED, got.text()
    np.testing.assert_array_equal(got.row_value, np.maximum(*each))
    assert np.all(each[1][1:] > each[0][1:])
    same = tol.table_arithmetic(tensors, rope, {}, f32, 1e-6)
    np.testing.assert_array_equal(same.row_value, each[0])
