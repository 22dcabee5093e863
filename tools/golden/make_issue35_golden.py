"""Reference arrays for issue 35's identification and reading cases, made once by the references' own code.

Run once, in the side environment (posenc never imports torch or transformers)::

    /work/side/venv/bin/python tools/golden/make_issue35_golden.py   # writes tests/data/golden/issue35/

- ``falcon_rw_alibi.npy``: transformers' ``models/falcon/modeling_falcon.py`` ``build_alibi_tensor`` for
  Falcon-RW-1B (32 heads, head dim 2048 / 32 = 64) over 1024 positions, divided by ``sqrt(head_dim)`` as
  ``FalconModel.forward`` divides it before adding it to the scores; heads 0, 1, 15, 31 (float32).
- ``deepseek_v3.safetensors``: ``DeepseekV3RotaryEmbedding`` of tests/data/configs/deepseek_v3.json, the ``cos``
  and ``sin`` its forward returns for a float32 query at positions 0..255 (its rotary head: qk_rope_head_dim).
- ``llama_inv_freq_bf16.npy`` / ``llama_inv_freq_fp16.npy``: ``LlamaRotaryEmbedding`` (rope_theta 10000, head 16)
  whose ``inv_freq`` buffer was cast to bfloat16 / float16 (what ``model.to(torch.bfloat16)`` does to the buffer),
  the ``cos`` of its forward for a float32 query at positions 0..1023.
- ``llama_positions_fp16.npy``: the same embedding (head 8) with float16 position ids (exact integers end at
  2048), the ``cos`` at positions 0..2559.

- ``nanochat.safetensors``: ``NanoChatRotaryEmbedding`` (hidden 768, 6 heads: head 128) ``cos`` and ``sin`` at
  positions 0..31, and ``rotated``: ``apply_rotary_pos_emb`` of modeling_nanochat (its ``rotate_half`` flips the
  signs) applied to one fixed query vector ``q[j] = (j + 1) / 128`` at those positions.

The versions go to ``versions.json``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.numpy import save_file
from transformers import DeepseekV3Config, LlamaConfig, NanoChatConfig
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3RotaryEmbedding
from transformers.models.falcon.modeling_falcon import build_alibi_tensor
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
from transformers.models.nanochat import modeling_nanochat

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "golden" / "issue35"


def falcon() -> None:
    heads, hidden, n = 32, 2048, 1024
    alibi = build_alibi_tensor(torch.ones(1, n, dtype=torch.long), heads, torch.float32)
    alibi = (alibi / math.sqrt(hidden // heads)).reshape(heads, n)  # as FalconModel.forward divides it
    np.save(OUT / "falcon_rw_alibi.npy", alibi[[0, 1, 15, 31]].numpy().astype(np.float32))


def deepseek() -> None:
    raw = json.loads((ROOT / "tests/data/configs/deepseek_v3.json").read_text())
    cfg = DeepseekV3Config(**{k: v for k, v in raw.items() if not k.startswith("_")})
    rot = DeepseekV3RotaryEmbedding(cfg)
    pos = torch.arange(256)[None, :]
    cos, sin = rot(torch.zeros(1, dtype=torch.float32), pos)
    save_file({"cos": cos[0].numpy().copy(), "sin": sin[0].numpy().copy()}, str(OUT / "deepseek_v3.safetensors"))


def llama(n: int, head: int, inv_dtype: torch.dtype | None = None, pos_dtype: torch.dtype | None = None) -> np.ndarray:
    cfg = LlamaConfig(hidden_size=4 * head, num_attention_heads=4, head_dim=head, max_position_embeddings=n)
    rot = LlamaRotaryEmbedding(cfg)
    if inv_dtype is not None:
        rot.inv_freq = rot.inv_freq.to(inv_dtype)
    pos = torch.arange(n)[None, :]
    if pos_dtype is not None:
        pos = pos.to(pos_dtype)
    cos, _ = rot(torch.zeros(1, dtype=torch.float32), pos)
    return cos[0].numpy().astype(np.float32)


def nanochat() -> None:
    cfg = NanoChatConfig(hidden_size=768, num_attention_heads=6, max_position_embeddings=2048)
    rot = modeling_nanochat.NanoChatRotaryEmbedding(cfg)
    cos, sin = rot(torch.zeros(1, dtype=torch.float32), torch.arange(32)[None, :])
    q = (torch.arange(128, dtype=torch.float32) + 1) / 128
    qs = q[None, None, None, :].expand(1, 1, 32, 128)  # batch, heads, positions, head dim
    rotated, _ = modeling_nanochat.apply_rotary_pos_emb(qs, qs, cos, sin)
    save_file({"cos": cos[0].numpy().copy(), "sin": sin[0].numpy().copy(), "rotated": rotated[0, 0].numpy().copy()},
              str(OUT / "nanochat.safetensors"))  # fmt: skip


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    falcon()
    deepseek()
    nanochat()
    np.save(OUT / "llama_inv_freq_bf16.npy", llama(1024, 16, inv_dtype=torch.bfloat16))
    np.save(OUT / "llama_inv_freq_fp16.npy", llama(1024, 16, inv_dtype=torch.float16))
    np.save(OUT / "llama_positions_fp16.npy", llama(2560, 8, pos_dtype=torch.float16))
    versions = {"transformers": transformers.__version__, "torch": torch.__version__,
                "how": "tools/golden/make_issue35_golden.py"}  # fmt: skip
    (OUT / "versions.json").write_text(json.dumps(versions, indent=1) + "\n")


if __name__ == "__main__":
    main()
