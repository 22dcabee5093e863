"""Tables computed the way Hugging Face (and other libraries) compute them, in float32 arithmetic, are
identified with the right parameters, compare the same as their spec within the float32 formula's error (the
bound stated), and pass ``check --against``: tables built independently with plain NumPy
(tests/formula_tables.py), and rows of torch-made tables (tests/data/golden/formula_rows.json)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc_cli as pe
from posenc_cli import tolerance as tol
from posenc_cli.encodings import make_encoding
from tests import formula_tables as ft

LONG = {"original_max_position_embeddings": 8192, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}


def _yarn(n: int):
    inv, att = ft.hf_yarn(64, 1e4, 4.0, 4096)
    return ft.hf_cos_sin(inv, n, att), {"scaling": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}


def _dynamic(n: int):
    # transformers' dynamic rule past max_position_embeddings: a new base for the whole cache
    base, factor, old, dim = 1e4, 2.0, 4096, 64
    b2 = base * ((factor * n / old) - (factor - 1)) ** (dim / (dim - 2))
    return ft.hf_cos_sin(ft.hf_inv_freq(dim, b2), n), {"base": b2}


CASES = {
    "default-1k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(128, 1e4), 1024), {"base": 1e4}),
    "base5e5-8k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(128, 5e5), 8192), {"base": 5e5}),
    "base1e6-32k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(128, 1e6), 32768), {"base": 1e6}),
    "default-131k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(64, 1e4), 131072), {"base": 1e4}),
    "llama3-8k": lambda: (
        ft.hf_cos_sin(ft.hf_llama3(ft.hf_inv_freq(128, 5e5), 8, 1, 4, 8192), 8192),
        {"scaling": "llama3", "base": 5e5, **LONG},
    ),
    "llama3-131k": lambda: (
        ft.hf_cos_sin(ft.hf_llama3(ft.hf_inv_freq(64, 5e5), 8, 1, 4, 8192), 131072),
        {"scaling": "llama3", "base": 5e5, **LONG},
    ),
    "linear-8k": lambda: (
        ft.hf_cos_sin((ft.hf_inv_freq(64, 1e4) / np.float32(4)).astype(np.float32), 8192),
        {"scaling": "linear", "factor": 4.0},
    ),
    "yarn-32k": lambda: _yarn(32768),
    "dynamic-8k": lambda: _dynamic(8192),
    "partial-8k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(32, 1e4), 8192), {"dim": 32}),
    "bf16-8k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(128, 1e4), 8192, cast="bfloat16"), {"base": 1e4}),
    "bf16-131k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(64, 5e5), 131072, cast="bfloat16"), {"base": 5e5}),
    "fp16-32k": lambda: (ft.hf_cos_sin(ft.hf_inv_freq(64, 1e4), 32768, cast="float16"), {"base": 1e4}),
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
    found = pe.identify(cos)
    assert found.best is not None, found.reason
    _expect(found.best, want, cos)
    assert found.best.tolerance in ("ulp", tol.FORMULA)
    # the spec the identification names, compared: the same, within the float32 formula's error (bound stated)
    if cos.dtype.name == "bfloat16":  # .npy cannot hold bfloat16: a metadata-free safetensors with both tables
        from safetensors.numpy import save_file

        path = tmp_path / "cache.safetensors"
        save_file({"cos": cos, "sin": sin}, str(path))
        assert pe.identify(str(path)).best is not None
    else:
        path = tmp_path / "cos.npy"
        np.save(path, cos)
    # the spec as a person writes it from the model's config (not from the identification)
    spec = "rope:" + ",".join(f"{k}={_show(v)}" for k, v in want.items() if k != "dim")
    cmp = pe.compare(str(path), spec, tensor=None)
    assert cmp.same, cmp.reason
    f = cmp.tensors[0].result.formula
    if f is not None:
        assert f["ok"] and f["bound"] > 0 and f["bound_row"] == cos.shape[0] - 1
    report = pe.check(str(path), against=spec)
    failed = [r.name for r in report.results if r.passed is False]
    assert report.ok, failed


def _show(v):
    if isinstance(v, tuple):
        return ";".join(repr(x) for x in v)
    return repr(v) if isinstance(v, float) else str(v)
