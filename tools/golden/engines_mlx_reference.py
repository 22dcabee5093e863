"""Reference rotary tables of mlx-lm on mlx[cpu], built by each model file's own attention class (side
environment; not run by the suite).

    /work/side/engines/venv/bin/pip install 'mlx[cpu]' mlx-lm        # mlx 0.32.4, mlx-lm 0.32.2
    /work/side/engines/venv/bin/python tools/golden/engines_mlx_reference.py tests/data/engines/mlx.npz

For each config, ``ModelArgs.from_dict`` of the mlx-lm model module that serves its model_type (mistral: llama.py)
and that module's attention class are built (weights are never evaluated), and its ``rope`` read off by rotating
unit vectors one position at a time with ``offset=t`` (how the KV cache calls it while generating): the input
holds 1 in the first feature of each rotated pair and 0 in the second, so the output is exactly ``cos`` / ``sin``
times the amplitude mlx multiplies the input by. mlx.core's CPU rope is the pure-mlx fallback of mlx/fast.cpp
(``exp(-k log(base) / (d/2))`` in float32, or ``1 / freqs``; float32 angles ``(offset + i) * scale * inv_freq``).

Stored per case NAME: ``NAME.positions``, ``NAME.cos``, ``NAME.sin`` (float32, positions x rotated pairs) and
``NAME.meta`` (JSON: versions, config, the rope class, rotated dims, pairing, the call: one position per call).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from pathlib import Path

import mlx.core as mx
import mlx_lm
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(sys.argv[1])
POSITIONS = [0, 1, 2, 3, 17, 100, 1000, 2047, 2048, 4095, 4096, 4097, 8191, 8192, 16383, 32767, 32768, 65535,
             131071]
CASES = {  # name: (config, mlx-lm module, attention class)
    "llama31": ("configs/llama.json", "llama", "Attention"),
    "mistral": ("configs/mistral.json", "llama", "Attention"),
    "phi35": ("configs/phi3.json", "phi3", "Attention"),
    "gpt_oss": ("configs/gpt_oss.json", "gpt_oss", "AttentionBlock"),
    "qwen25_yarn": ("engines/qwen2_5_yarn.json", "qwen2", "Attention"),
    "deepseek_v3": ("configs/deepseek_v3.json", "deepseek_v3", "DeepseekV3Attention"),
    "cohere": ("configs/cohere.json", "cohere", "Attention"),
    "glm4": ("configs/glm.json", "glm", "GLMAttention"),
    "llama2_dynamic": ("engines/llama2_dynamic.json", "llama", "Attention"),
}


def rope_of(cfg: dict, module: str, cls: str):
    mod = importlib.import_module(f"mlx_lm.models.{module}")
    # the test configs keep what RoPE reads; sizes RoPE never reads get placeholders (never evaluated)
    fill = {"intermediate_size": 16, "rms_norm_eps": 1e-5, "vocab_size": 64, "num_hidden_layers": 2,
            "layer_norm_eps": 1e-5, "num_key_value_heads": cfg.get("num_attention_heads")}
    missing = {f.name: fill.get(f.name, 16) for f in dataclasses.fields(mod.ModelArgs)
               if f.name not in cfg and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    args = mod.ModelArgs.from_dict({**cfg, **missing})
    return getattr(mod, cls)(args).rope


def dims_and_pairing(rope) -> tuple[int, bool]:
    for name in ("dims", "dim"):
        if hasattr(rope, name):
            return int(getattr(rope, name)), bool(getattr(rope, "traditional", False))
    raise SystemExit(f"no dims on {type(rope).__name__}")


out: dict[str, np.ndarray] = {}
for case, (rel, module, cls) in CASES.items():
    cfg = json.loads((ROOT / "tests" / "data" / rel).read_text())
    rope = rope_of(cfg, module, cls)
    dims, traditional = dims_and_pairing(rope)
    x = mx.zeros((1, 1, 1, dims))
    x = mx.array(np.where(np.arange(dims) % 2 == 0, 1.0, 0.0)[None, None, None, :].astype(np.float32)) if traditional \
        else mx.concatenate([mx.ones((1, 1, 1, dims // 2)), mx.zeros((1, 1, 1, dims // 2))], axis=-1)
    cos, sin = [], []
    for t in POSITIONS:
        y = np.array(rope(x, offset=t)).reshape(-1)
        cos.append(y[0::2] if traditional else y[: dims // 2])
        sin.append(y[1::2] if traditional else y[dims // 2 :])
    out[f"{case}.positions"] = np.asarray(POSITIONS, dtype=np.int64)
    out[f"{case}.cos"] = np.asarray(cos, dtype=np.float32)
    out[f"{case}.sin"] = np.asarray(sin, dtype=np.float32)
    out[f"{case}.meta"] = np.array(json.dumps({
        "engine": "mlx", "mlx": mx.__version__, "mlx_lm": mlx_lm.__version__, "config": rel,
        "module": f"mlx_lm/models/{module}.py {cls}", "rope": type(rope).__name__, "dims": dims,
        "traditional": traditional, "call": "one position per call, offset=t"}))
    print(case, type(rope).__name__, dims, traditional, file=sys.stderr)
np.savez_compressed(OUT, **out)
print("wrote", OUT, OUT.stat().st_size, "bytes", file=sys.stderr)
