"""Golden cos/sin from the real ggml (side environment; not run by the suite).

    /work/side-22/bin/python tools/golden/llamacpp_ggml_rope.py tests/data/llamacpp/ggml_rope.npz

Needs ``pip install llama-cpp-python`` (it builds llama.cpp from source; its wheel ships libggml*.so). For each
parameter set below a tiny ggml graph rotates unit vectors with ``ggml_rope_ext`` (or ``ggml_rope_multi`` for
the M-RoPE modes) on the CPU backend, one thread: the input holds 1 in the first feature of every pair and 0 in
the second, so the output holds exactly ``cos`` (first) and ``sin`` (second) of each pair (x0 cos - 0 sin and
x0 sin + 0 cos, x0 = 1). The npz holds, per set NAME: ``NAME.cos``, ``NAME.sin`` (float32, one column per pair
i0/2 of the row, positions x pairs), ``NAME.pos`` (int32, 1 or 4 rows) and ``NAME.params`` (JSON).
"""

import ctypes
import glob
import json
import math
import os
import sys

import llama_cpp
import numpy as np

LIB = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")


def load(name):
    paths = sorted(glob.glob(os.path.join(LIB, f"lib{name}.so*")))
    return ctypes.CDLL(paths[0], mode=ctypes.RTLD_GLOBAL)


base = load("ggml-base")
ggml = load("ggml")
cpu = load("ggml-cpu")


class InitParams(ctypes.Structure):
    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p), ("no_alloc", ctypes.c_bool)]


P = ctypes.c_void_p
base.ggml_init.restype = P
base.ggml_init.argtypes = [InitParams]
base.ggml_new_tensor_1d.restype = P
base.ggml_new_tensor_1d.argtypes = [P, ctypes.c_int, ctypes.c_int64]
base.ggml_new_tensor_3d.restype = P
base.ggml_new_tensor_3d.argtypes = [P, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
base.ggml_get_data.restype = P
base.ggml_get_data.argtypes = [P]
F = ctypes.c_float
base.ggml_rope_ext.restype = P
base.ggml_rope_ext.argtypes = [P, P, P, P, ctypes.c_int, ctypes.c_int, ctypes.c_int, F, F, F, F, F, F]
base.ggml_rope_multi.restype = P
base.ggml_rope_multi.argtypes = [P, P, P, P, ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int,
                                 F, F, F, F, F, F]
base.ggml_new_graph.restype = P
base.ggml_new_graph.argtypes = [P]
base.ggml_build_forward_expand.argtypes = [P, P]
base.ggml_free.argtypes = [P]
cpu.ggml_graph_compute_with_ctx.argtypes = [P, P, ctypes.c_int]
cpu.ggml_graph_compute_with_ctx.restype = ctypes.c_int
F32, I32 = 0, 26
MODES = {"norm": 0, "neox": 2, "mrope": 8, "vision": 24, "imrope": 40}


def run(name, mode, n_dims, ne0, positions, freq_base, freq_scale=1.0, ext_factor=0.0, attn_factor=1.0,
        beta_fast=32.0, beta_slow=1.0, n_ctx_orig=0, factors=None, sections=None):
    pos = np.asarray(positions, dtype=np.int32)
    n_tok = pos.shape[-1]
    ctx = base.ggml_init(InitParams(256 * 1024 * 1024, None, False))
    a = base.ggml_new_tensor_3d(ctx, F32, ne0, 1, n_tok)
    x = np.zeros((n_tok, 1, ne0), dtype=np.float32)
    if mode == "norm":
        x[..., 0:n_dims:2] = 1
    elif mode == "vision":
        x[..., :n_dims] = 1  # pairs (i, i + n_dims) over ne0 = 2 n_dims
    else:
        x[..., : n_dims // 2] = 1
    ctypes.memmove(base.ggml_get_data(a), x.ctypes.data, x.nbytes)
    b = base.ggml_new_tensor_1d(ctx, I32, pos.size)
    flat = np.ascontiguousarray(pos.reshape(-1))
    ctypes.memmove(base.ggml_get_data(b), flat.ctypes.data, flat.nbytes)
    c = None
    if factors is not None:
        ff = np.asarray(factors, dtype=np.float32)
        c = base.ggml_new_tensor_1d(ctx, F32, ff.size)
        ctypes.memmove(base.ggml_get_data(c), ff.ctypes.data, ff.nbytes)
    args = (n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow)
    if sections is None:
        out = base.ggml_rope_ext(ctx, a, b, c, n_dims, MODES[mode], *args)
    else:
        sec = (ctypes.c_int * 4)(*sections)
        out = base.ggml_rope_multi(ctx, a, b, c, n_dims, sec, MODES[mode], *args)
    gf = base.ggml_new_graph(ctx)
    base.ggml_build_forward_expand(gf, out)
    assert cpu.ggml_graph_compute_with_ctx(ctx, gf, 1) == 0
    y = np.ctypeslib.as_array((ctypes.c_float * x.size).from_address(base.ggml_get_data(out))).copy()
    y = y.reshape(n_tok, ne0)
    base.ggml_free(ctx)
    if mode == "norm":
        cos, sin = y[:, 0:n_dims:2], y[:, 1:n_dims:2]
    elif mode == "vision":
        cos, sin = y[:, :n_dims], y[:, n_dims : 2 * n_dims]
    else:
        cos, sin = y[:, : n_dims // 2], y[:, n_dims // 2 : n_dims]
    params = dict(mode=mode, n_dims=n_dims, ne0=ne0, freq_base=freq_base, freq_scale=freq_scale,
                  ext_factor=ext_factor, attn_factor=attn_factor, beta_fast=beta_fast, beta_slow=beta_slow,
                  n_ctx_orig=n_ctx_orig, sections=sections)
    return {f"{name}.cos": cos, f"{name}.sin": sin, f"{name}.pos": pos,
            f"{name}.params": np.array(json.dumps(params)),
            **({f"{name}.factors": np.asarray(factors, dtype=np.float32)} if factors is not None else {})}


def llama3_divisors(d, base, factor, lo, hi, omp):
    out = []
    for i in range(0, d, 2):
        wl = 2 * math.pi / base ** (-i / d)
        if wl < omp / hi:
            out.append(1.0)
        elif wl > omp / lo:
            out.append(factor)
        else:
            s = (omp / wl - lo) / (hi - lo)
            out.append(1 / ((1 - s) / factor + s))
    return out


def mscale_ctx(factor, m=1.0, m_all=None):
    """llama-context's attention factor for YaRN (what ggml receives), in float32 as llama-context computes it."""
    f32 = np.float32
    factor = f32(factor)

    def get(s, mm):
        return f32(1) if s <= 1 else f32(f32(f32(0.1) * f32(mm)) * f32(math.log(s)) + f32(1))

    attn = get(factor, f32(1)) if m_all is None else f32(get(factor, m) / get(factor, m_all))
    return float(f32(attn * f32(f32(1) / f32(f32(1) + f32(0.1) * f32(math.log(factor))))))


POS = [0, 1, 2, 3, 5, 17, 100, 1000, 4095, 4096, 8191, 32767, 131071]
rng = np.random.default_rng(22)
mpos = np.stack([np.array(POS), rng.integers(0, 64, len(POS)), rng.integers(0, 64, len(POS)),
                 rng.integers(0, 8, len(POS))])
out = {}
out.update(run("neox_plain", "neox", 64, 64, POS, 10000.0))
out.update(run("norm_plain", "norm", 128, 128, POS, 500000.0))
out.update(run("norm_llama3", "norm", 128, 128, POS, 500000.0,
               factors=llama3_divisors(128, 500000.0, 8.0, 1.0, 4.0, 8192)))
out.update(run("neox_linear", "neox", 64, 64, POS, 10000.0, freq_scale=0.25))
out.update(run("neox_partial", "neox", 32, 80, POS, 10000.0))
out.update(run("neox_yarn_gptoss", "neox", 64, 64, POS, 150000.0, freq_scale=1 / 32, ext_factor=1.0,
               attn_factor=mscale_ctx(32.0), n_ctx_orig=4096))
out.update(run("norm_yarn_deepseek2", "norm", 64, 64, POS, 10000.0, freq_scale=1 / 40, ext_factor=1.0,
               attn_factor=mscale_ctx(40.0, 0.707, 0.707), n_ctx_orig=4096))
lr = np.linspace(1.0, 40.0, 48).tolist()
out.update(run("neox_longrope", "neox", 96, 96, POS, 10000.0, attn_factor=1.190238, factors=lr))
out.update(run("mrope_text", "mrope", 128, 128, np.stack([POS, POS, POS, [0] * len(POS)]), 1000000.0,
               sections=[16, 24, 24, 0]))
out.update(run("mrope_mixed", "mrope", 128, 128, mpos, 1000000.0, sections=[16, 24, 24, 0]))
out.update(run("imrope_mixed", "imrope", 128, 128, mpos, 5000000.0, sections=[24, 20, 20, 0]))
out.update(run("vision_mixed", "vision", 32, 64, mpos, 10000.0, sections=[8, 8, 0, 0]))
np.savez_compressed(sys.argv[1], **out)
print("wrote", sys.argv[1], len(out), "arrays")
