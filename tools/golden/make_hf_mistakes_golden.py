"""Rotary caches with one mistake each, made by transformers' own ``LlamaRotaryEmbedding`` in torch, for
tests/test_hf_cache_explanations.py (which also builds them with plain NumPy: the two must agree).

Run once, in the side environment (posenc never imports torch or transformers)::

    /work/side/hf/bin/python tools/golden/make_hf_mistakes_golden.py   # writes tests/data/golden/hf_mistakes/

Each case is Llama 3.1's rotary embedding (rope_theta 500000, llama3 scaling factor 8, low 1, high 4, original
8192) on a 32-wide head with one thing wrong, 1024 positions, the ``cos`` the model's forward returns:

- ``base10k``: rope_theta 10000 (Llama 2's) with Llama 3.1's scaling;
- ``no_scaling``: rope_scaling missing;
- ``factor32``: llama3 factor 32;
- ``bf16``: the right cache, for a bfloat16 query (``.to(x.dtype)`` casts it), saved widened to float32.

Saved as float32 ``.npy`` (bfloat16 values are exact in float32), with the versions in ``versions.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "golden" / "hf_mistakes"
N, HEAD = 1024, 32
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}  # fmt: skip


def cos(theta: float, scaling: dict | None, dtype: torch.dtype = torch.float32) -> np.ndarray:
    # a copy each time: transformers writes rope_theta into the rope_scaling dict it is given
    scaling = None if scaling is None else dict(scaling)
    cfg = LlamaConfig(
        hidden_size=HEAD * 4, num_attention_heads=4, head_dim=HEAD, max_position_embeddings=N,
        rope_theta=theta, rope_scaling=scaling,
    )  # fmt: skip
    assert cfg.rope_parameters["rope_theta"] == theta, cfg.rope_parameters
    rot = LlamaRotaryEmbedding(cfg)
    c, _ = rot(torch.zeros(1, 1, 1, dtype=dtype), torch.arange(N, dtype=torch.int64)[None, :])
    return c[0].float().numpy()


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(OUT / "base10k.npy", cos(10000.0, LLAMA3))
    np.save(OUT / "no_scaling.npy", cos(500000.0, None))
    np.save(OUT / "factor32.npy", cos(500000.0, {**LLAMA3, "factor": 32.0}))
    np.save(OUT / "bf16.npy", cos(500000.0, LLAMA3, torch.bfloat16))
    versions = {"torch": torch.__version__, "transformers": transformers.__version__, "rows": N, "head_dim": HEAD}
    (OUT / "versions.json").write_text(json.dumps(versions, indent=1) + "\n")


if __name__ == "__main__":
    main()
