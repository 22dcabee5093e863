"""Multi-tensor sources: every tensor group is identified (each layer type of a Gemma 3 / ModernBERT
``--all-layer-types`` file, with or without posenc's metadata), cos/sin/inv_freq are read together (an HF-style
cache is rope, never mrope), a tensor the answer does not cover is said, and a metadata-free cos/sin file pairs
by name against a spec. Tables are built with plain NumPy (tests/formula_tables.py)."""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import save_file

import posenc_cli as pe
from posenc_cli.encodings import make_encoding
from tests import formula_tables as ft
from tests.conftest import cli


class _R:
    def __init__(self, code: int, out: bytes, err: str) -> None:
        self.exit_code, self.stdout, self.stderr = code, out.decode(), err


def run_cli(*args: str) -> _R:
    return _R(*cli([str(a) for a in args]))


def _group_file(path, bases: dict[str, float], n: int = 512, dim: int = 64) -> None:
    tensors = {}
    for group, base in bases.items():
        inv = ft.hf_inv_freq(dim, base)
        cos, sin = ft.hf_cos_sin(inv, n)
        tensors.update({f"{group}.cos": cos, f"{group}.sin": sin, f"{group}.inv_freq": inv})
    save_file(tensors, str(path))


def test_every_layer_type_of_a_metadata_free_file_is_identified(tmp_path) -> None:
    path = tmp_path / "modernbert_cache.safetensors"
    _group_file(path, {"full_attention": 160000.0, "sliding_attention": 10000.0})
    found = pe.identify(str(path))
    assert set(found.groups) == {"full_attention", "sliding_attention"}
    for group, base in (("full_attention", 160000.0), ("sliding_attention", 10000.0)):
        best = found.groups[group].best
        assert best is not None and best.kind == "rope"
        assert make_encoding("rope", best.params).params()["base"] == base
        assert set(best.tensor_map) == {"cos", "sin", "inv_freq"}
        assert not found.groups[group].skipped
    assert found.identified


def test_identify_cli_reports_each_group_and_fails_if_one_fails(tmp_path) -> None:
    path = tmp_path / "g.safetensors"
    inv = ft.hf_inv_freq(64, 1e6)
    cos, sin = ft.hf_cos_sin(inv, 512)
    noise = np.random.default_rng(0).standard_normal(cos.shape).astype(np.float32)
    save_file({"global.cos": cos, "global.sin": sin, "local.cos": noise, "local.sin": noise}, str(path))
    r = run_cli("identify", str(path))
    assert r.exit_code == 1
    assert f"{path} [global]: identified as rope base 1000000" in r.stderr
    assert f"{path} [local]: not identified" in r.stderr


def test_gemma3_all_layer_types_file_reports_both(tmp_path) -> None:
    out = tmp_path / "g3.safetensors"
    r = run_cli(
        "generate",
        "--hf-config",
        "tests/data/configs/gemma3_text.json",
        "--all-layer-types",
        "--len",
        "256",
        "-o",
        str(out),
    )
    assert r.exit_code == 0, r.stderr
    found = pe.identify(str(out))
    assert set(found.groups) == {"full_attention", "sliding_attention"}
    assert all(g.best is not None for g in found.groups.values())


def test_hf_cos_sin_inv_freq_is_rope_not_mrope(tmp_path) -> None:
    for n, base in ((2048, 1e4), (8192, 5e5)):
        inv = ft.hf_inv_freq(128, base)
        cos, sin = ft.hf_cos_sin(inv, n)
        path = tmp_path / f"cache{n}.safetensors"
        save_file({"cos": cos, "sin": sin}, str(path))
        best = pe.identify(str(path)).best
        assert best is not None and best.kind == "rope"
        assert make_encoding("rope", best.params).params()["base"] == base
        save_file({"cos": cos, "sin": sin, "inv_freq": inv}, str(path))
        found = pe.identify(str(path))
        assert found.best is not None and found.best.kind == "rope"
        assert set(found.best.tensor_map) == {"cos", "sin", "inv_freq"}


def test_a_tensor_left_out_is_said(tmp_path) -> None:
    inv = ft.hf_inv_freq(64, 1e4)
    cos, sin = ft.hf_cos_sin(inv, 256)
    path = tmp_path / "extra.safetensors"
    save_file({"cos": cos, "sin": sin, "attn_bias": np.zeros((256, 64), np.float32)}, str(path))
    found = pe.identify(str(path))
    assert found.best is not None and found.best.kind == "rope"
    assert "attn_bias" in found.skipped
    r = run_cli("identify", str(path))
    assert "skipped attn_bias" in r.stdout


def test_metadata_free_cos_sin_pairs_by_name_against_a_spec(tmp_path) -> None:
    # (2048 rows: far past where the float32 angle's error shows; the exact nearest-pair search of check's
    # ``unique`` grows as rows squared, 8x the work at 4096)
    cos, sin = ft.hf_cos_sin(ft.hf_llama3(ft.hf_inv_freq(128, 5e5), 8, 1, 4, 8192), 2048)
    path = tmp_path / "cs.safetensors"
    save_file({"cos": cos, "sin": sin}, str(path))
    report = pe.check(str(path), against="rope:preset=llama3.1")
    assert report.ok
    cmp = report.against  # compare(path, spec), as check --against makes it (api.check calls api.compare)
    assert cmp is not None
    assert [(t.name_a, t.name_b) for t in cmp.tensors] == [("cos", "cos"), ("sin", "sin")]
    assert cmp.same and cmp.skipped == ["inv_freq"]
    assert all(t.result.formula is not None for t in cmp.tensors)
    r = run_cli("compare", str(path), "rope:preset=llama3.1")
    assert r.exit_code == 0
    assert "SAME within the float32 formula's error (bound" in r.stderr
    assert "not compared: inv_freq" in r.stdout
    # a sin table swapped in: not the same, and said (the verdict: explain=False leaves out the diagnosis of why)
    save_file({"cos": cos, "sin": -sin}, str(path))
    assert not pe.compare(str(path), "rope:preset=llama3.1", explain=False).same


@pytest.mark.parametrize("n", [1024, 8192])
def test_compare_against_a_wrong_spec_still_differs(n, tmp_path) -> None:
    """The formula's error never excuses another base: 5e5 against a 1e4 spec differs (the verdict and the formula's
    judgement: explain=False leaves out the diagnosis of why, 0.15-0.2 CPU-s)."""
    cos, _ = ft.hf_cos_sin(ft.hf_inv_freq(128, 5e5), n)
    path = tmp_path / "cos.npy"
    np.save(path, cos)
    cmp = pe.compare(str(path), "rope:base=10000", explain=False)
    assert not cmp.same
    assert cmp.tensors[0].result.formula is None


def test_a_longrope_file_posenc_wrote_is_identified(tmp_path) -> None:
    out = tmp_path / "lr.safetensors"
    short = ";".join(str(1 + 0.01 * k) for k in range(32))
    long = ";".join(str(1 + 0.25 * k) for k in range(32))
    params = f"scaling=longrope,factor=4,original_max_position_embeddings=1024,short_factor={short},long_factor={long}"
    r = run_cli("generate", "--kind", "rope", "--len", "4096", "--dim", "64", "-p", params, "-o", str(out))
    assert r.exit_code == 0, r.stderr
    found = pe.identify(str(out))
    assert found.best is not None and found.best.params["scaling"] == "longrope"
    want = pe.generate(
        "rope",
        length=4096,
        dim=64,
        scaling="longrope",
        factor=4.0,
        original_max_position_embeddings=1024,
        short_factor=tuple(1 + 0.01 * k for k in range(32)),
        long_factor=tuple(1 + 0.25 * k for k in range(32)),
    )
    np.testing.assert_allclose(make_encoding("rope", found.best.params).inv_freq(), want.inv_freq(), rtol=1e-9)
