"""Golden tables of the RoPE families of issue 21 from HF transformers' own classes (run once, side environment).

posenc never imports torch or transformers; this script does, so it runs in a venv of its own::

    python3 -m venv /work/side-21 && /work/side-21/bin/pip install torch==2.13.0 && /work/side-21/bin/pip install transformers
    /work/side-21/bin/python tools/golden/make_hf_families_golden.py     # writes tests/data/golden/hf_<name>.json

It reuses :mod:`make_hf_golden`'s method (the rotation each family's own ``apply_rotary_pos_emb`` applies to the
unit vectors of the head, so the stored cos/sin do not depend on how a family lays out its buffers) for:

* ``phimoe`` (``PhimoeRotaryEmbedding``: cos/sin times short_mscale or long_mscale by max(position_ids) + 1),
* ``olmo3`` (``Olmo3RotaryEmbedding``: one table per layer type; YaRN on full_attention only),
* ``ernie4_5``, ``ernie4_5_moe`` (interleaved pairs by ``repeat_interleave`` in ``apply_rotary_pos_emb``),
* ``hunyuan_v1_dense`` (``HunYuanDenseV1RotaryEmbedding``: "dynamic" with ``alpha`` is a fixed NTK base),
* ``qwen3_vl`` and ``qwen3_vl_moe`` (``Qwen3VLTextRotaryEmbedding`` / ``Qwen3VLMoeTextRotaryEmbedding``,
  interleaved M-RoPE; text, and one image through ``get_rope_index``), and ``qwen2_5_vl_v5``: Qwen2.5-VL's config loaded and saved again by
  transformers 5 (its text settings under ``text_config``), then its M-RoPE tables.

Each group also stores ``attention_scaling_used``: cos at position 0 of the first rotated feature, i.e. the
multiplier the class applied to that group (Phimoe's mscale depends on the group's length).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_hf_golden as base  # noqa: E402  (the shared method; same directory)

NAMES = ("phimoe", "olmo3", "ernie4_5", "ernie4_5_moe", "hunyuan_v1_dense")
MROPE = ("qwen3_vl", "qwen3_vl_moe", "qwen2_5_vl_v5")


def with_scaling_used(res: dict) -> dict:
    for entry in res["layer_types"].values():
        for group in entry.get("groups", []):
            assert group["positions"][0] == 0
            group["attention_scaling_used"] = float(group["cos"][0][0])
    return res


def main() -> None:
    torch.set_grad_enabled(False)
    only = set(sys.argv[1:])
    base.resave_v5("qwen2_5_vl", "qwen2_5_vl_v5")
    for name in NAMES:
        if not only or name in only:
            base.dump(with_scaling_used(base.golden_family(name)), base.GOLDEN / f"hf_{name}.json")
    for name in MROPE:
        if not only or name in only:
            # Qwen3-VL splits a video into timestamped frames (get_rope_index), which posenc's grid does not model
            cases = ("text", "image") if name.startswith("qwen3_vl") else ("text", "image", "video")
            base.dump(base.mrope(name, cases), base.GOLDEN / f"hf_{name}.json")


if __name__ == "__main__":
    main()
