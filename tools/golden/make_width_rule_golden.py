"""The rotated width rule of transformers' rotary classes, recorded from the classes themselves.

Run once in the side environment (transformers 5.24.0, torch 2.13.0 CPU):

    /work/side/venv/bin/python tools/golden/make_width_rule_golden.py

For seeded random (head_dim, partial_rotary_factor) pairs (plus a few chosen ones: GLM-4.5-Air's 128 x 0.5,
the glm4_moe default's 42 x 0.5, Qwen3-Omni's default head 73, thirds whose product rounds down), two of
transformers' own rules build their inverse frequencies:

* ``glm4_moe``: ``Glm4MoeRotaryEmbedding.compute_default_rope_parameters`` (modeling_glm4_moe.py:75-81:
  ``dim = int(head_dim * partial_rotary_factor)``, ``arange(0, dim, 2) / dim``);
* ``linear``: ``ROPE_INIT_FUNCTIONS["linear"]`` through ``LlamaRotaryEmbedding`` (modeling_rope_utils.py:179-190,
  the same width rule, frequencies divided by ``factor``);
* ``proportional``: ``ROPE_INIT_FUNCTIONS["proportional"]`` (modeling_rope_utils.py:240-262: ``head_dim // 2``
  frequencies, those past ``int(partial_rotary_factor * head_dim // 2)`` zero).

Writes tests/data/golden/width_rule.json: per rule, rows ``[head_dim, partial_rotary_factor, n_freq,
inv_freq]`` (inv_freq float32 as the class holds it, glm4_moe's only; null for the others).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import Glm4MoeConfig, LlamaConfig
from transformers.models.glm4_moe.modeling_glm4_moe import Glm4MoeRotaryEmbedding
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "golden" / "width_rule.json"
CHOSEN = [(128, 0.5), (42, 0.5), (73, 1.0), (96, 1 / 3), (64, 1 / 3), (80, 0.4), (2, 1.0), (6, 0.5)]


def pairs() -> list[tuple[int, float]]:
    rng = np.random.default_rng(36)
    out = list(CHOSEN)
    for _ in range(28):
        out.append((int(rng.integers(2, 513)), round(float(rng.uniform(0.05, 1.0)), 4)))
    return out


def glm4_moe(head: int, share: float) -> list[float]:
    cfg = Glm4MoeConfig(head_dim=head, rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                        "partial_rotary_factor": share})  # fmt: skip
    return Glm4MoeRotaryEmbedding(cfg).inv_freq.float().tolist()


def linear(head: int, share: float) -> list[float]:
    cfg = LlamaConfig(head_dim=head, rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0,
                                                      "partial_rotary_factor": share})  # fmt: skip
    return LlamaRotaryEmbedding(cfg).inv_freq.float().tolist()


def proportional(head: int, share: float) -> list[float]:
    cfg = LlamaConfig(head_dim=head, rope_parameters={"rope_type": "proportional", "rope_theta": 10000.0,
                                                      "partial_rotary_factor": share})  # fmt: skip
    return LlamaRotaryEmbedding(cfg).inv_freq.float().tolist()


def main() -> None:
    out: dict = {"transformers_version": transformers.__version__, "torch_version": torch.__version__.split("+")[0],
                 "generator": "tools/golden/make_width_rule_golden.py", "rules": {}}  # fmt: skip
    for name, fn in (("glm4_moe", glm4_moe), ("linear", linear), ("proportional", proportional)):
        rows = []
        for head, share in pairs():
            try:
                inv = fn(head, share)
            except Exception as exc:  # a config the class refuses is left out, and said so
                print(name, head, share, type(exc).__name__, exc)
                continue
            rows.append([head, share, len(inv), inv if name == "glm4_moe" else None])
        out["rules"][name] = rows
    OUT.write_text(json.dumps(out) + "\n")
    print({k: len(v) for k, v in out["rules"].items()}, OUT.stat().st_size)


if __name__ == "__main__":
    main()
