"""llama.cpp's RoPE emulated (posenc_cli/models/llamacpp.py) against the real thing.

* ``tests/data/llamacpp/ggml_rope.npz``: cos/sin the real ggml computed (tools/golden/llamacpp_ggml_rope.py calls
  ``ggml_rope_ext`` / ``ggml_rope_multi`` through ctypes on llama-cpp-python 0.3.36's libggml) for every rope mode
  and parameter set; the emulation must equal them to the stated float32 rounding.
* ``tests/data/llamacpp/rope_types.json``: ``llama_model_rope_type`` of the real library for GGUFs written with
  ``gguf.GGUFWriter`` (vocab-only loads); the data table must say the same.
* llama-context's choices, checked with numbers worked from its source by hand (plain floats, not the module).

These need NumPy only: no gguf package.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_cli.models import llamacpp as lc

from .each import each

DATA = Path(__file__).resolve().parent / "data" / "llamacpp"


def _golden():
    path = DATA / "ggml_rope.npz"
    if not path.exists():
        return {}
    z = np.load(path)
    names = sorted({k.rsplit(".", 1)[0] for k in z.files})
    return {n: {k.rsplit(".", 1)[1]: z[k] for k in z.files if k.rsplit(".", 1)[0] == n} for n in names}


GOLDEN = _golden()


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ia = a.astype(np.float32).view(np.int32).astype(np.int64)
    ib = b.astype(np.float32).view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def emulate(g):
    p = json.loads(str(g["params"]))
    sections = tuple(p["sections"]) if p["sections"] else ()
    return lc.rope_cache(
        g["pos"], p["n_dims"], freq_base=p["freq_base"], freq_scale=p["freq_scale"], ext_factor=p["ext_factor"],
        attn_factor=p["attn_factor"], beta_fast=p["beta_fast"], beta_slow=p["beta_slow"], n_ctx_orig=p["n_ctx_orig"],
        freq_factors=g.get("factors"), mode=p["mode"].upper(), sections=sections, ne0=p["ne0"],
    )  # fmt: skip


@pytest.mark.skipif(not GOLDEN, reason="tests/data/llamacpp/ggml_rope.npz is missing")
def test_emulation_equals_real_ggml():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(sorted(GOLDEN), lambda case: _emulation_equals_real_ggml(case))


def _emulation_equals_real_ggml(name):
    """Bit for bit on nearly every value; 1 ulp where glibc's cosf/sinf round differently from the correctly
    rounded value, 2 where such a value is then scaled by YaRN's mscale (measured: 4 to 20 values of 416 to 1664
    per set differ)."""
    g = GOLDEN[name]
    cos, sin = emulate(g)
    n = g["cos"].shape[1]
    cos, sin = cos[:, :n], sin[:, :n]
    ulps = np.concatenate([_ulps(cos, g["cos"]).ravel(), _ulps(sin, g["sin"]).ravel()])
    p = json.loads(str(g["params"]))
    allowed = 2 if p["ext_factor"] else 1
    assert ulps.max() <= allowed, f"{name}: {int(ulps.max())} ulp at most, {int((ulps > 0).sum())} values differ"
    assert (ulps == 0).mean() >= 0.98


def test_the_plain_cache_equals_the_pair_loop_bit_for_bit(monkeypatch):
    """rope_cache computes the plain modes on row chunks at once and M-RoPE pair by pair: an M-RoPE whose first
    section holds every pair, all four position rows equal, is the same table (cross-check of the two paths,
    with YaRN's ramp, frequency factors and several row chunks)."""
    monkeypatch.setattr(lc, "_CHUNK_ELEMENTS", 1 << 12)
    pos = np.concatenate([np.arange(700, dtype=np.int64) - 3, np.arange(150000, 150300, dtype=np.int64)])
    ff = np.linspace(1, 40, 40).astype(np.float32)

    def same(kw):
        n_dims = kw.pop("n_dims")
        plain = lc.rope_cache(pos, n_dims, mode="NEOX", **kw)
        loop = lc.rope_cache(np.stack([pos] * 4), n_dims, mode="MROPE", sections=(n_dims // 2, 0, 0, 0), **kw)
        for a, b in zip(plain, loop):
            assert a.dtype == np.float32 and np.array_equal(a.view(np.uint32), b.view(np.uint32))

    each([dict(n_dims=8, freq_base=10000.0),
          dict(n_dims=80, freq_base=500000.0, freq_factors=ff, attn_factor=1.3),
          dict(n_dims=64, freq_base=1e6, freq_scale=0.25, ext_factor=1.0, n_ctx_orig=4096, beta_fast=16.0)], same)  # fmt: skip


@pytest.mark.skipif(not GOLDEN, reason="tests/data/llamacpp/ggml_rope.npz is missing")
def test_golden_is_not_what_float64_would_give():
    """The stored ggml values carry its float32 iteration: a float64 table differs from them at large positions
    (so the test above can tell an emulation from an exact computation)."""
    g = GOLDEN["norm_plain"]
    pos = g["pos"].astype(np.float64)[:, None]
    w = 500000.0 ** (-np.arange(64) / 64)
    exact = np.cos(pos * w)
    assert np.abs(exact - g["cos"]).max() > 1e-3


def test_rope_type_table_matches_real_llama_model_rope_type():
    path = DATA / "rope_types.json"
    if not path.exists():
        pytest.skip("tests/data/llamacpp/rope_types.json is missing")
    real = json.loads(path.read_text())
    assert len(real["cases"]) >= 15
    for case in real["cases"]:
        # a vocab-only load never reads dimension_sections (tools/golden/llamacpp_rope_types.py): no sections seen
        ours, known = lc.rope_type_of(case["arch"], ())
        assert known
        assert lc.MODES[ours] == case["rope_type"], case


def test_rope_type_table_is_well_formed():
    allowed = {"NONE", "NORM", "NEOX", "MROPE", "IMROPE", "VISION"}
    for arch, entry in lc.ROPE_TYPE.items():
        base = entry.split(":", 1)[1] if entry.startswith("MROPE-if-sections:") else entry
        assert base in allowed, arch
    assert len(lc.ROPE_TYPE) == 153  # every architecture of llama-arch.cpp but LLM_ARCH_UNKNOWN
    assert lc.rope_type_of("llama") == ("NORM", True)
    assert lc.rope_type_of("t5") == ("NONE", True)
    assert lc.rope_type_of("glm4", (8, 12, 12, 0)) == ("MROPE", True)
    assert lc.rope_type_of("glm4", ()) == ("NORM", True)
    assert lc.rope_type_of("nonesuch") == ("NEOX", False)


def _rope(**kw):
    base = dict(arch="llama", rope_type="NEOX", known_arch=True, n_rot=64, head_dim=64, freq_base=10000.0,
                freq_scale=1.0, scaling_type="none", n_ctx_train=131072, n_ctx_orig=4096)  # fmt: skip
    base.update(kw)
    return lc.LlamaRope(**base)


def test_context_yarn_attention_factor_cancels_ggml_mscale():
    """gpt-oss: factor 32, no yarn_log_multiplier. llama-context passes get_mscale(32, 1) / (1 + 0.1 ln 32) = 1
    and ggml multiplies 1 + 0.1 ln 32 back: the amplitude is HF's 0.1 ln 32 + 1 = 1.34657..."""
    ctx = lc.context(_rope(arch="gpt-oss", scaling_type="yarn", freq_scale=1 / 32), 8192)
    assert ctx.ext_factor == 1.0
    assert abs(ctx.attn_factor - 1.0) < 1e-6
    assert abs(ctx.mscale - (0.1 * math.log(32) + 1)) < 1e-6


def test_context_deepseek2_mscale_all_dim():
    """DeepSeek-V2: yarn_log_multiplier 0.0707 in the file, /0.1 -> 0.707 = mscale_all_dim = mscale: the ratio of
    get_mscale is 1, so the amplitude is 1 (HF: yarn_get_mscale(40, .707) / yarn_get_mscale(40, .707))."""
    ctx = lc.context(_rope(arch="deepseek2", scaling_type="yarn", freq_scale=1 / 40, yarn_log_mul=0.707), 4096)
    assert abs(ctx.mscale - 1.0) < 1e-6
    assert abs(ctx.attn_factor - 1 / (1 + 0.1 * math.log(40))) < 1e-6


def test_context_longrope_choice_follows_padded_n_ctx():
    long, short = np.full(32, 4.0, np.float32), np.ones(32, np.float32)
    r = _rope(arch="phi3", long=long, short=short, n_ctx_orig=4096)
    assert lc.context(r, 4096).factors_from == "rope_factors_short"
    assert lc.context(r, 3900).factors_from == "rope_factors_short"  # 3900 -> 4096, not > 4096
    assert lc.context(r, 4097).factors_from == "rope_factors_long"  # 4097 -> 4352
    assert lc.context(r, None).factors_from == "rope_factors_long"  # the training context, 131072
    r.n_ctx_orig = 4000  # an original context that is no multiple of 256: the padding decides
    assert lc.context(r, 3990).n_ctx_seq == 4096
    assert lc.context(r, 3990).factors_from == "rope_factors_long"
    r.freqs = np.ones(32, np.float32)
    assert lc.context(r, 4097).factors_from == "rope_freqs"


def test_scaling_none_forces_freq_scale_one():
    assert lc.context(_rope(scaling_type="none", freq_scale=0.25), 10).freq_scale == 1.0
    assert lc.context(_rope(scaling_type="linear", freq_scale=0.25), 10).freq_scale == 0.25


def test_corr_dims_floor_ceil():
    """gpt-oss: d=64, base 150000, original 4096: c(32) = 64 ln(4096 / (64 pi)) / (2 ln 150000) = 8.09 -> 8,
    c(1) = 64 ln(4096 / (2 pi)) / (2 ln 150000) = 17.39 -> 18."""
    lo, hi = lc.corr_dims(64, 4096, 150000.0, 32.0, 1.0)
    c = lambda b: 64 * math.log(4096 / (2 * math.pi * b)) / (2 * math.log(150000))  # noqa: E731
    assert (lo, hi) == (math.floor(c(32)), math.ceil(c(1))) == (8, 18)


@settings(max_examples=40, deadline=None)
@given(
    base=st.floats(100.0, 1e7),
    half=st.integers(1, 64),
    pos=st.lists(st.integers(0, 200000), min_size=1, max_size=8),
    mode=st.sampled_from(["NORM", "NEOX"]),
)
def test_emulation_stays_within_float32_iteration_bound(base, half, pos, mode):
    """An independent bound: after i multiplications by a float32 theta_scale, theta is p * base^(-2i/d) times
    (1 + e) with |e| <= (2i + 2) 2^-24 (each rounding, plus theta_scale's own error carried i times); cos and sin
    move by at most |theta e| + 2^-24."""
    d = 2 * half
    cos, sin = lc.rope_cache(pos, d, freq_base=base, mode=mode)
    i = np.arange(half)
    ts = float(np.float32(math.pow(float(np.float32(base)), float(np.float32(-2.0 / d)))))
    theta = np.asarray(pos, dtype=np.float64)[:, None] * ts**i
    bound = theta * (2 * i + 2) * 2.0**-24 + 2.0**-23
    assert np.all(np.abs(cos - np.cos(theta)) <= bound)
    assert np.all(np.abs(sin - np.sin(theta)) <= bound)
