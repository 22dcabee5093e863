"""Golden rows of float32-formula tables made by torch (and transformers' own rotary class), for
tests/test_formula_error.py.

Run once, in a side environment (posenc never imports torch or transformers)::

    python3 -m venv /work/side-20 && /work/side-20/bin/pip install torch==2.13.0 transformers numpy
    /work/side-20/bin/python tools/golden/make_formula_golden.py   # writes tests/data/golden/formula_rows.json

Cases: transformers' ``LlamaRotaryEmbedding`` (default rule, base 500000, head 128; the llama3 rule of Llama 3.1;
a bfloat16 query, so ``.to(x.dtype)`` casts the cache) on 131072 positions, and the sinusoidal tables of the
PyTorch tutorial (``PositionalEncoding``: ``exp(arange(0, d, 2) * -(log(10000) / d))``, interleaved) and fairseq
(``SinusoidalPositionalEmbedding.get_embedding``: ``exp(arange(half) * -(log(10000) / (half - 1)))``, [sin | cos])
written out in torch as those files compute them. Only a few rows of each long table are stored.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "golden" / "formula_rows.json"
ROWS = [0, 1, 2, 1000, 4095, 8191, 32767, 65535, 100000, 131071]


def hf_rows(rope_scaling: dict | None, n: int, dtype: torch.dtype) -> tuple[list, list]:
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    cfg = LlamaConfig(
        hidden_size=4096, num_attention_heads=32, max_position_embeddings=n, rope_theta=500000.0,
        rope_scaling=rope_scaling,
    )
    rot = LlamaRotaryEmbedding(cfg)
    x = torch.zeros(1, 1, 1, dtype=dtype)
    pos = torch.arange(n, dtype=torch.int64)[None, :]
    cos, sin = rot(x, pos)
    sel = torch.tensor(ROWS)
    return cos[0, sel].float().tolist(), sin[0, sel].float().tolist()


def tutorial_rows(n: int, d: int) -> list:
    position = torch.arange(n).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe[torch.tensor(ROWS)].tolist()


def fairseq_rows(n: int, d: int) -> list:
    half = d // 2
    emb = math.log(10000) / (half - 1)
    emb = torch.exp(torch.arange(half, dtype=torch.float) * -emb)
    emb = torch.arange(n, dtype=torch.float).unsqueeze(1) * emb.unsqueeze(0)
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1).view(n, -1)
    return emb[torch.tensor(ROWS)].tolist()


def main() -> None:
    import transformers

    n = 131072
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 8192}
    out = {"torch": torch.__version__, "transformers": transformers.__version__, "rows": ROWS, "length": n, "cases": {}}
    for name, scaling, dtype in (("hf-default", None, torch.float32), ("hf-llama3", llama3, torch.float32),
                                 ("hf-default-bf16", None, torch.bfloat16)):
        cos, sin = hf_rows(scaling, n, dtype)
        out["cases"][name] = {"cos": cos, "sin": sin, "dim": 128, "dtype": str(dtype).split(".")[1]}
    out["cases"]["tutorial"] = {"pe": tutorial_rows(n, 64), "dim": 64, "dtype": "float32"}
    out["cases"]["fairseq"] = {"pe": fairseq_rows(n, 64), "dim": 64, "dtype": "float32"}
    OUT.write_text(json.dumps(out) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
