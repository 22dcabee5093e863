"""Goldens for issue 36.5's pairing re-derived from the config at hand, made once by transformers' own code.

Run once in the side venv (transformers 5.24.0, torch 2.13.0 CPU)::

    /work/side/venv/bin/python tools/golden/attention_pairing_probe.py

GLM-4.7-Flash's architecture (``glm4_moe_lite``) rotates the rotary part of q/k with
``apply_rotary_pos_emb_interleave`` when ``config.rope_interleave`` (default true), else with
``apply_rotary_pos_emb`` (modeling_glm4_moe_lite.py:326, functions at :158 and :183). For a config of each value,
the attention class is built (eager, meta weights not needed: only the functions it calls are run here) and the
function ``Glm4MoeLiteAttention.forward`` would call (read from the attention's own ``config.rope_interleave``
branch, by running a forward with the functions wrapped) is applied to the unit vectors of the rotated width,
with the rotary class's own cos/sin at positions 7 and 2. Writes tests/data/inventory/attention_pairing.npz:
``{value}_scores`` (width x width: the score of unit query i at position 7 with unit key j at position 2, what
attention sees; the interleave function returns its pairs de-interleaved, so rows are compared as scores),
``inv_freq``, ``called``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import torch
from transformers import AutoConfig
from transformers.models.glm4_moe_lite import modeling_glm4_moe_lite as mod

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "inventory" / "attention_pairing.npz"


def main() -> int:
    base = AutoConfig.for_model("glm4_moe_lite")
    base._attn_implementation = "eager"
    arrays: dict[str, np.ndarray] = {}
    called: dict[str, str] = {}
    for value in (True, False):
        cfg = copy.deepcopy(base)
        cfg.rope_interleave = value
        rot = mod.Glm4MoeLiteRotaryEmbedding(cfg)
        width = cfg.qk_rope_head_dim
        x = torch.zeros(1, 1, width)
        cos, sin = rot(x, torch.tensor([[7]]))
        cos2, sin2 = rot(x, torch.tensor([[2]]))
        seen: list[str] = []
        originals = {n: getattr(mod, n) for n in ("apply_rotary_pos_emb", "apply_rotary_pos_emb_interleave")}

        def wrap(n: str):
            def inner(*a, **k):
                seen.append(n)
                return originals[n](*a, **k)

            return inner

        for n in originals:
            setattr(mod, n, wrap(n))
        try:
            with torch.device("meta"):
                attn = mod.Glm4MoeLiteAttention(cfg, 0)
            hidden = torch.zeros(1, 3, cfg.hidden_size, device="meta")
            pe = tuple(t.to("meta").expand(1, 3, -1) for t in (cos, sin))
            attn(hidden_states=hidden, position_embeddings=pe, attention_mask=None)
        finally:
            for n, f in originals.items():
                setattr(mod, n, f)
        fn = originals[seen[0]]
        eye = torch.eye(width)[None, None]  # (batch, heads = 1, rows = width, width)
        def rotated(c: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
            q, _ = fn(eye, eye, c[:, None].expand(1, 1, width, width)[0], s[:, None].expand(1, 1, width, width)[0])
            return q[0, 0].double()

        arrays[f"{str(value).lower()}_scores"] = (rotated(cos, sin) @ rotated(cos2, sin2).T).numpy()
        called[str(value).lower()] = seen[0]
        arrays["inv_freq"] = rot.inv_freq.double().numpy()
    arrays["called"] = np.array(json.dumps(called))
    np.savez_compressed(OUT, **arrays)
    print(called)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
