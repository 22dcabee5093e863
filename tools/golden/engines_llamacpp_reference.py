"""Reference rotary tables of llama.cpp from the real ggml (side environment; not run by the suite).

    python3 -m venv /work/side/engines/llama && /work/side/engines/llama/bin/pip install numpy llama-cpp-python==0.3.36
    PYTHONPATH=. /work/side/engines/llama/bin/python tools/golden/engines_llamacpp_reference.py tests/data/engines/llamacpp.npz

llama-cpp-python 0.3.36 builds llama.cpp from source; its wheel ships libggml*.so. For each config and context
size below, the RoPE hparams llama.cpp runs a faithful GGUF conversion of the config with (convert_hf_to_gguf's
keys and tensors as llama.cpp loads them, and llama-context's choices at that n_ctx: posenc's
``rope_from_hf_config`` and ``context``, which tests/test_llamacpp_verdict.py checks against real conversions in
tests/data/llamacpp) are handed to the real ``ggml_rope_ext`` on the CPU backend, one thread, rotating unit
vectors (1 in the first feature of each pair, 0 in the second), so the output is ggml's own cos and sin. Stored
per case NAME: ``NAME.positions``, ``NAME.cos``, ``NAME.sin`` (float32, positions x rotated pairs) and
``NAME.meta`` (JSON: config, n_ctx, the ggml parameters).
"""

import json
import sys
from pathlib import Path

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




ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from posenc_cli.models import llamacpp as lc  # noqa: E402

POSITIONS = [0, 1, 2, 3, 17, 100, 1000, 2047, 2048, 4095, 4096, 4097, 8191, 8192, 16383, 32767, 32768, 65535,
             131071]
CASES = {  # name: (config, n_ctx)
    "llama31": ("configs/llama.json", 131072),
    "mistral": ("configs/mistral.json", 32768),
    "phi35_short": ("configs/phi3.json", 4096),
    "phi35_long": ("configs/phi3.json", 131072),
    "gpt_oss": ("configs/gpt_oss.json", 131072),
    "qwen25_yarn": ("engines/qwen2_5_yarn.json", 131072),
    "deepseek_v3": ("configs/deepseek_v3.json", 163840),
    "cohere": ("configs/cohere.json", 8192),
    "glm4": ("configs/glm.json", 131072),
    "llama2_dynamic": ("engines/llama2_dynamic.json", 8192),
}
out = {}
for case, (rel, n_ctx) in CASES.items():
    try:
        rope = lc.rope_from_hf_config(str(ROOT / "tests" / "data" / rel))
    except Exception as exc:  # a model type convert_hf_to_gguf does not convert: no reference
        print(case, "skipped:", exc, file=sys.stderr)
        continue
    ctx = lc.context(rope, n_ctx)
    mode = {"NORM": "norm", "NEOX": "neox"}[rope.rope_type]
    res = run(case, mode, rope.n_rot, rope.n_rot, POSITIONS, rope.freq_base, freq_scale=ctx.freq_scale,
              ext_factor=ctx.ext_factor, attn_factor=ctx.attn_factor, beta_fast=rope.beta_fast,
              beta_slow=rope.beta_slow, n_ctx_orig=rope.n_ctx_orig,
              factors=None if ctx.factors is None else [float(x) for x in ctx.factors])
    params = json.loads(str(res[f"{case}.params"]))
    out[f"{case}.positions"] = np.asarray(POSITIONS, dtype=np.int64)
    out[f"{case}.cos"] = res[f"{case}.cos"].astype(np.float32)
    out[f"{case}.sin"] = res[f"{case}.sin"].astype(np.float32)
    out[f"{case}.meta"] = np.array(json.dumps({"engine": "llamacpp", "llama_cpp_python": "0.3.36", "config": rel,
                                               "n_ctx": n_ctx, "arch": rope.arch, "factors": ctx.factors_from,
                                               "ggml": params}))
    print(case, rope.arch, mode, ctx.factors_from, file=sys.stderr)
np.savez_compressed(sys.argv[1], **out)
print("wrote", sys.argv[1], len(out), "arrays", file=sys.stderr)
