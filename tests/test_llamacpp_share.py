"""llama.cpp's float32 cache shared within an audit (:func:`posenc_cli.models.llamacpp.sharing`): the rows a
reader gets equal ggml's cache computed for just those rows, bit for bit; a table is computed once per distinct
argument set and never served for other arguments; nothing is kept outside a scope."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.models import llamacpp as lc

from .each import each

LLAMACPP = Path(__file__).resolve().parent / "data" / "llamacpp"
N = 300  # a length no block size divides: the readers' blocks end anywhere
# YaRN with per-pair factors: every branch of ggml's theta arithmetic
KW = dict(freq_base=10000.0, freq_scale=0.25, ext_factor=1.0, attn_factor=1.0, beta_fast=32.0, beta_slow=1.0,
          n_ctx_orig=64, freq_factors=np.linspace(1.0, 3.0, 16, dtype=np.float32), mode="NEOX")  # fmt: skip


@pytest.fixture
def counted(monkeypatch):
    calls: list[int] = []
    real = lc.rope_cache

    def rope_cache(positions, n_dims, **kw):
        calls.append(len(np.asarray(positions).reshape(-1)))
        return real(positions, n_dims, **kw)

    monkeypatch.setattr(lc, "rope_cache", rope_cache)
    return real, calls


def test_shared_rows_equal_their_own_cache_and_are_computed_once(counted):
    real, calls = counted
    blocks = [(0, 7), (7, 128), (128, 300), (5, 6), (299, 300), (0, 300)]
    with lc.sharing(N):
        got = [lc.cache_rows(np.arange(a, b), 32, **KW) for a, b in blocks]
        assert calls == [N]  # the whole table, once, for every reader's block
        got[0][0][0, 0] = 7.0  # a reader's rows are its own: changing them changes no other reader's
        assert lc.cache_rows(np.arange(0, 7), 32, **KW)[0][0, 0] != 7.0
    for (a, b), (c, s) in list(zip(blocks, got, strict=True))[1:]:
        want_c, want_s = real(np.arange(a, b), 32, **KW)
        assert np.array_equal(c, want_c) and np.array_equal(s, want_s), (a, b)
    assert not lc._SHARE.tables and not lc._SHARE.scopes  # nothing kept once the scope closes


def test_every_argument_is_part_of_the_key(counted):
    real, calls = counted
    other = np.array(KW["freq_factors"])
    other[3] = np.nextafter(other[3], np.float32(4))  # one ulp in one factor
    variants = [KW, {**KW, "freq_factors": other}, {**KW, "freq_base": 10000.5}, {**KW, "attn_factor": 0.5},
                {**KW, "ext_factor": 0.0}, {**KW, "mode": "NORM"}]  # fmt: skip
    with lc.sharing(N):
        for kw in variants:
            c, s = lc.cache_rows(np.arange(10, 20), 32, **kw)
            want_c, want_s = real(np.arange(10, 20), 32, **kw)
            assert np.array_equal(c, want_c) and np.array_equal(s, want_s), kw
        c, _ = lc.cache_rows(np.arange(10, 20), 30, **KW)  # another n_dims
        assert np.array_equal(c, real(np.arange(10, 20), 30, **KW)[0])
    assert len(calls) == len(variants) + 1
    # outside a scope, and rows no shared table holds (past its length, not a run), are computed as asked
    calls.clear()
    with lc.sharing(N):
        for pos in (np.arange(N - 2, N + 3), np.array([4, 2, 9])):
            c, _ = lc.cache_rows(pos, 32, **KW)
            assert np.array_equal(c, real(pos, 32, **KW)[0])
    lc.cache_rows(np.arange(3), 32, **KW)
    lc.cache_rows(np.arange(3), 32, **KW)
    assert calls == [5, 3, 3, 3]


def test_an_audit_computes_llamacpps_table_once_for_its_engine_row_and_gguf(counted, tmp_path, monkeypatch):
    pytest.importorskip("gguf")
    import posenc_cli

    _real, calls = counted
    shutil.copy(LLAMACPP / "qwen2.config.json", tmp_path / "config.json")
    shutil.copy(LLAMACPP / "qwen2.gguf", tmp_path / "qwen2.gguf")
    report = posenc_cli.audit(str(tmp_path), length=256, engine="hf,llamacpp")
    assert {(r.engine, r.verdict) for r in report.rows} >= {("llamacpp", "agree")}
    assert [r.artifact for r in report.rows if r.engine == "llamacpp" and r.layer_type != "weights"] == [
        "config.json", "qwen2.gguf"]  # fmt: skip
    assert calls == [256]
    # no GGUF: the engine row is the table's only reader, which reads it block by block, nothing held whole
    (tmp_path / "qwen2.gguf").unlink()
    shared: list[int] = []
    real_rows = lc.cache_rows

    def cache_rows(positions, n_dims, **kw):
        shared.append(max(lc._SHARE.scopes, default=0))
        return real_rows(positions, n_dims, **kw)

    monkeypatch.setattr(lc, "cache_rows", cache_rows)
    calls.clear()
    posenc_cli.audit(str(tmp_path), length=256, engine="hf,llamacpp")
    assert calls == [256] and shared == [0]


def test_the_verdicts_numbers_are_those_of_plain_numpy():
    each(["qwen2", "llama31"], _the_verdicts_numbers_are_those_of_plain_numpy)


def _the_verdicts_numbers_are_those_of_plain_numpy(name):
    pytest.importorskip("gguf")
    from posenc_cli.encodings import make_encoding
    from posenc_cli.models.config_file import load_config
    from posenc_cli.models.gguf import read_gguf
    from posenc_cli.models.readers import rotary_config

    gguf_path, config, n = str(LLAMACPP / f"{name}.gguf"), str(LLAMACPP / f"{name}.config.json"), 640
    ((lt, nums),) = lc.verdict(gguf_path, config, length=n).numbers.items()
    rope, _ = lc.from_gguf(read_gguf(gguf_path))
    ctx = lc.context(rope, rope.n_ctx_train)
    cfg = rotary_config(load_config(config))
    enc = make_encoding(cfg.kind, cfg.params(None if lt == "default" else lt, n))
    c, s = lc._pairs_rows(rope, rope.n_ctx_train, 0, n)
    p = np.arange(n, dtype=np.float64)[:, None]
    w_hf = np.asarray(enc.array("inv_freq"), dtype=np.float64)
    att = float(getattr(enc, "attention_scaling", 1.0))
    w = lc.intended_inv_freq(rope, ctx)
    assert c.shape[1] == w.size == w_hf.size
    want_it = max(np.abs(c - np.cos(p * w) * ctx.mscale).max(), np.abs(s - np.sin(p * w) * ctx.mscale).max())
    want_hf = max(np.abs(c - np.cos(p * w_hf) * att).max(), np.abs(s - np.sin(p * w_hf) * att).max())
    assert nums["iteration_error"] == pytest.approx(want_it, rel=1e-12, abs=1e-15)
    assert nums["max_abs_vs_hf"] == pytest.approx(want_hf, rel=1e-12, abs=1e-15)
    assert np.array_equal(w, w_hf) == (name == "qwen2")  # both paths of compare_rope are covered
