"""compare and check --against on rotary caches built as transformers builds them (inv_freq, angles, cos and sin
all in float32; tests/formula_tables.py follows its code step by step with plain NumPy), with one mistake each:
every explanation names the parameter and both values. In float32, and rounded to bfloat16 / float16, stored
narrow or widened to float32; at 1k, 8k, 32k and 131k rows (few columns keep the long ones cheap)."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

import posenc_cli as pe
from tests import formula_tables as ft

D = 32
#: caches of LONG_ROWS rows or more have LONG_D columns: few columns keep the long ones cheap
LONG_ROWS, LONG_D = 32768, 16
LLAMA31 = "rope:preset=llama3.1"
YARN = "rope:base=500000,scaling=yarn,factor=4,original_max_position_embeddings=8192"


def _llama3(base: float = 500000.0, factor: float = 8.0, d: int = D) -> np.ndarray:
    return ft.hf_llama3(ft.hf_inv_freq(d, base), factor, 1.0, 4.0, 8192)


def _cos_sin(inv: np.ndarray, n: int, *, start: int = 0, layout: str = "half", scale: float = 1.0):
    """``LlamaRotaryEmbedding.forward`` in float32 (positions from ``start``); ``interleaved``: each angle twice
    side by side, as a port that uses ``repeat_interleave`` builds it."""
    t = np.arange(start, start + n, dtype=np.float32)
    freqs = np.multiply.outer(t, inv.astype(np.float32)).astype(np.float32, copy=False)
    # cos and sin are elementwise: each angle's value is computed once and placed twice (as cos(emb) holds it)
    cos, sin = np.cos(freqs) * np.float32(scale), np.sin(freqs) * np.float32(scale)
    if layout == "half":
        return np.concatenate([cos, cos], axis=1), np.concatenate([sin, sin], axis=1)
    return np.repeat(cos, 2, axis=1), np.repeat(sin, 2, axis=1)


#: mistake -> (the cache's inv_freq and how it is built, the spec it is checked against, words the why must hold);
#: the mistakes checked on long caches take the head width ``d`` too (LONG_D columns there)
MISTAKES = {
    "layout": (
        lambda n, d=D: _cos_sin(_llama3(d=d), n, layout="interleaved"),
        LLAMA31,
        ["has layout interleaved, pairs (2k, 2k+1)", "has layout half, pairs (k, k + d/2)"],
    ),
    "base": (
        lambda n, d=D: _cos_sin(_llama3(base=10000.0, d=d), n),
        LLAMA31,
        ["is rope base 10000;", "gives base 500000"],
    ),
    "scaling-missing": (
        lambda n, d=D: _cos_sin(ft.hf_inv_freq(d, 500000.0), n),
        LLAMA31,
        ["llama3 scaling (factor 8, low 1, high 4, original 8192) is missing from"],
    ),
    "scaling-factor": (
        lambda n, d=D: _cos_sin(_llama3(factor=32.0, d=d), n),
        LLAMA31,
        ["has llama3 factor 32;", "gives 8"],
    ),
    "partial-width": (
        lambda n: _cos_sin(_llama3(d=D // 2), n),
        LLAMA31 + f",dim={D}",
        [f"rotates dim {D // 2};", f"gives {D}"],
    ),
    "offset": (lambda n: _cos_sin(_llama3(), n, start=5), LLAMA31, ["starts at position 5;", "at 0"]),
    "attention-scaling": (
        lambda n: _cos_sin(ft.hf_yarn(D, 500000.0, 4.0, 8192)[0], n),  # the port forgot attention_scaling
        YARN,
        ["scales cos and sin by 1 (attention_factor 1)", "gives 1.13863"],
    ),
    "truncated": (lambda n: _cos_sin(_llama3(), n // 2), None, ["positions;", "gives"]),
}


#: The 1k float32 mistakes explained through ``check --against``: one per spec they are checked against (llama3.1
#: as it is, with a wider dim, YaRN, with the config's length), the spec check judges the table's properties by;
#: the other mistakes against llama3.1 (base, scaling-missing, scaling-factor, offset) through ``compare``, whose
#: result check carries as it is (api.check: ``against=comparison``, its verdict from ``comparison.same`` alone)
CHECKED = ("layout", "partial-width", "attention-scaling", "truncated")


def _save(tmp: Path, name: str, cos: np.ndarray, sin: np.ndarray, dtype: str, stored: str) -> Path:
    """The cache as a model keeps it: float32, or cast to ``dtype`` (``.to(x.dtype)``, round to nearest even)
    stored narrow (a .safetensors of cos and sin) or widened back to float32 (NumPy has no bfloat16)."""
    if dtype != "float32":
        to = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
        cos, sin = cos.astype(to), sin.astype(to)
        if stored == "widened":
            cos, sin = cos.astype(np.float32), sin.astype(np.float32)
    path = tmp / f"{name}-{dtype}-{stored}.safetensors"
    save_file({"cos": np.ascontiguousarray(cos), "sin": np.ascontiguousarray(sin)}, str(path))
    return path


def _why(path: Path, mistake: str, n: int, *, through_check: bool = True) -> list[str]:
    """The explanations of ``check --against`` (``through_check``), or of ``compare``, whose result ``check``
    carries as its ``against`` (api.check calls api.compare): the float32 1k cases go through ``check`` once per
    spec they are checked against (CHECKED), the other mistakes, sizes and dtypes through ``compare`` alone (the
    same explanation, without the cost of measuring every other property of the table)."""
    _, spec, _ = MISTAKES[mistake]
    if spec is None:  # a truncated cache: against a config's own row count
        spec = f"{LLAMA31},length={n}"
    if through_check:
        report = pe.check(str(path), against=spec)
        assert not report.ok
        comparison = report.against
    else:
        comparison = pe.compare(str(path), spec)
    assert not comparison.same
    whys = [t.diagnosis.summary for t in comparison.tensors if t.diagnosis is not None]
    assert whys and len(set(whys)) == 1, whys  # one table, one explanation for cos and sin
    return whys


CASES = [
    *[(m, 1024, "float32", "narrow") for m in MISTAKES],
    # in bfloat16 at 1k, the mistakes no longer case has (base, scaling-missing and scaling-factor: the 8192- and
    # 32768-row cases hold every pair of mistake, dtype and storage a 1k bfloat16 case would, each saying "rounded to
    # bfloat16", and every row is read at every one of these lengths)
    *[(m, 1024, "bfloat16", "widened") for m in ("layout", "partial-width", "truncated")],
    # each mistake in both dtypes, each stored both ways, each dtype stored both ways (every pair of the three
    # once: how a file is stored is read before any mistake is explained, so the full 3 x 2 x 2 grid repeated it)
    # (base in bfloat16 stored narrow is the 32768-row case below: the same mistake, dtype and storage at four times
    # the rows, every row read at both lengths; 8192 rows in bfloat16 and stored narrow: scaling-missing's and
    # scaling-factor's cases)
    *[(m, 8192, dt, st) for m, firsts in (("base", "narrow"), ("scaling-missing", "widened"),
                                          ("scaling-factor", "narrow"))
      for dt, st in (("bfloat16", firsts), ("float16", "widened" if firsts == "narrow" else "narrow"))
      if (m, dt) != ("base", "bfloat16")],
    # (base in float32 is test_131k_rows's first case: the same mistake and dtype, four times the rows, every row
    # read in both; scaling-factor is its second, at four times the rows, and its float32 and narrow storage are
    # the 1k and 8k cases': every pair of mistake, length, dtype and storage it held is held by another case, so
    # 32768 rows in float32 keep layout and scaling-missing, the two mistakes no longer case has)
    *[pytest.param(m, 32768, "float32", "narrow", marks=pytest.mark.slow) for m in ("layout", "scaling-missing")],
    pytest.param("base", 32768, "bfloat16", "narrow", marks=pytest.mark.slow),
]  # fmt: skip


@pytest.mark.parametrize(("mistake", "n", "dtype", "stored"), CASES)
def test_each_mistake_is_named_in_parameters_with_both_values(tmp_path, mistake, n, dtype, stored):
    # 32768 rows on a narrow head, as test_131k_rows' (the length is the property there, not the width)
    cos, sin = MISTAKES[mistake][0](n) if n < LONG_ROWS else MISTAKES[mistake][0](n, LONG_D)
    path = _save(tmp_path, mistake, cos, sin, dtype, stored)
    (why,) = set(_why(path, mistake, n, through_check=(n, dtype) == (1024, "float32") and mistake in CHECKED))
    for words in MISTAKES[mistake][2]:
        assert words in why, (mistake, why)
    if mistake == "truncated":
        assert f"holds {n // 2} positions" in why and f"gives {n}" in why
    if dtype != "float32":
        assert f"rounded to {dtype}" in why  # the file was read as its precision's values


@pytest.mark.slow
@pytest.mark.parametrize(("mistake", "dtype"), [("base", "float32"), ("scaling-factor", "bfloat16")])
def test_131k_rows(tmp_path, mistake, dtype):
    """The longest context of the issue, on a narrow head (16 columns) to stay cheap. Through ``compare``, as
    every size but 1k: ``check --against`` carries compare's result as it is (the 1k float32 cases hold that for
    every mistake), and measuring the table's other properties at 131072 rows is test_formula_error's."""
    n = 131072
    cos, sin = MISTAKES[mistake][0](n, LONG_D)
    path = _save(tmp_path, mistake, cos, sin, dtype, "widened")
    comparison = pe.compare(str(path), LLAMA31)
    assert not comparison.same
    (why,) = {t.diagnosis.summary for t in comparison.tensors}
    expected = ["is rope base 10000;", "gives base 500000"] if mistake == "base" else ["llama3 factor 32;", "gives 8"]
    assert all(w in why for w in expected), why


@pytest.mark.parametrize(
    ("dtype", "stored", "n"),
    # every pair of size, dtype and storage once: a small table (every row read) and a sampled one, each with both
    # dtypes and both storages (the full 2 x 2 x 2 grid read each pair twice)
    [("bfloat16", "narrow", 1024), ("float16", "widened", 1024), ("bfloat16", "widened", 8192),
     ("float16", "narrow", 8192)],
)  # fmt: skip
def test_a_rounded_cache_is_identified_as_rounded_and_compares_same(tmp_path, n, dtype, stored):
    """Llama 3.1's cache cast to bfloat16 / float16: 'rope preset llama3.1 rounded to bfloat16', never a fit with a
    factor per column; SAME within that rounding; check --against passes saying so."""
    cos, sin = _cos_sin(_llama3(), n)
    path = _save(tmp_path, "good", cos, sin, dtype, stored)
    found = pe.identify(str(path))
    assert found.best is not None and found.best.kind == "rope" and found.best.preset == "llama3.1", found.summary
    assert "short_factor" not in found.best.params and found.precision == dtype
    assert f"rounded to {dtype}" in found.summary
    assert ("stored widened to float32" in found.summary) == (stored == "widened")
    report = pe.check(str(path), against=LLAMA31)
    cmp = report.against  # compare(path, LLAMA31), as check --against makes it (api.check calls api.compare)
    assert cmp.same and {t.result.precision for t in cmp.tensors} == {dtype}
    assert report.ok


def test_a_rounded_cache_with_another_base_is_identified_rounded_with_its_base(tmp_path):
    cos, _ = _cos_sin(ft.hf_inv_freq(D, 10000.0), 4096)
    np.save(tmp_path / "cos.npy", cos.astype(ml_dtypes.bfloat16).astype(np.float32))
    found = pe.identify(str(tmp_path / "cos.npy"))
    assert found.best is not None and found.best.params["base"] == 10000.0 and found.best.preset == "llama"
    assert found.precision == "bfloat16" and found.widened == "float32"


@pytest.mark.parametrize(
    "table",
    [
        np.random.default_rng(1234).normal(0, 0.02, (1024, D)),  # an untrained learned table
        np.full((1024, D), 0.5),  # constant
    ],
    ids=["noise", "constant"],
)
def test_noise_and_constant_tables_rounded_to_bfloat16_are_not_identified(tmp_path, table):
    np.save(tmp_path / "t.npy", table.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert pe.identify(str(tmp_path / "t.npy")).best is None


def test_json_carries_the_parameters_both_sides(tmp_path):
    cos, sin = _cos_sin(_llama3(base=10000.0), 1024)
    path = _save(tmp_path, "base", cos, sin, "float32", "narrow")
    doc = json.loads(json.dumps(pe.compare(str(path), LLAMA31).to_json()))
    best = doc["tensors"][0]["diagnosis"]["explanations"][0]
    assert best["name"] == "parameter-base" and best["accounts"]
    assert best["steps"][0]["detail"] == {"parameter": "base", "a": 10000.0, "b": 500000.0}


def test_sign_flips_near_zero_are_not_billions_of_ulps():
    from posenc_cli.inspect.metrics import compare

    a = np.array([[1e-8, 0.5]], dtype=np.float32)
    b = np.array([[-1e-8, 0.5]], dtype=np.float32)
    res = compare(a, b)
    assert res.max_ulp < 1e4  # -1e-8 vs 1e-8: measured at 2**-10's spacing, not across the whole float range


def test_a_formula_same_compare_does_not_call_its_differences_beyond_tolerance(tmp_path):
    from posenc_cli.render import compare_lines

    cos, sin = _cos_sin(_llama3(), 4096)
    path = _save(tmp_path, "good", cos, sin, "float32", "narrow")
    cmp = pe.compare(str(path), LLAMA31)
    assert cmp.same
    text = "\n".join(line for line, _ in compare_lines(cmp.tensors[0].result, "a", "b", width=200))
    assert "beyond tolerance" not in text and "each within the float32 formula's bound" in text


GOLDEN = Path(__file__).resolve().parent / "data" / "golden" / "hf_mistakes"
#: torch-made cache (tools/golden/make_hf_mistakes_golden.py) -> the NumPy one it must equal, the words of its why
TORCH = {
    "base10k": (lambda: _cos_sin(_llama3(base=10000.0), 1024)[0], ["is rope base 10000;", "gives base 500000"]),
    "no_scaling": (
        lambda: _cos_sin(ft.hf_inv_freq(D, 500000.0), 1024)[0],
        ["llama3 scaling (factor 8, low 1, high 4, original 8192) is missing from"],
    ),
    "factor32": (lambda: _cos_sin(_llama3(factor=32.0), 1024)[0], ["has llama3 factor 32;", "gives 8"]),
}


@pytest.mark.parametrize("name", sorted(TORCH))
def test_torch_made_caches_are_explained_in_parameters(name):
    """transformers' own LlamaRotaryEmbedding, run once in the side environment: the NumPy builders above follow
    it (within float32's rounding of cos), and its mistaken caches are explained with both values."""
    torch_cos = np.load(GOLDEN / f"{name}.npy")
    build, words = TORCH[name]
    assert np.max(np.abs(torch_cos - build())) <= 2 * np.finfo(np.float32).eps
    (tc,) = pe.compare(str(GOLDEN / f"{name}.npy"), LLAMA31).tensors
    assert not tc.result.same and all(w in tc.diagnosis.summary for w in words), tc.diagnosis.summary


def test_a_torch_made_bfloat16_cache_is_llama31_rounded():
    path = str(GOLDEN / "bf16.npy")
    assert np.array_equal(np.load(path), _cos_sin(_llama3(), 1024)[0].astype(ml_dtypes.bfloat16).astype(np.float32))
    found = pe.identify(path)
    assert found.best is not None and found.best.preset == "llama3.1" and found.precision == "bfloat16"
    assert pe.compare(path, LLAMA31).same and pe.check(path, against=LLAMA31).ok
