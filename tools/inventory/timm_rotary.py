"""Which timm architectures rotate their patches with EVA's ``RotaryEmbeddingCat``, and with which parameters, as
timm builds each: ``posenc_cli/models/data/timm_rotary.json``, read by ``posenc_cli/models/vision_rope.py`` when a
timm checkpoint's own ``config.json`` (``architecture`` + ``pretrained_cfg``) is asked for its rotary.

A timm ``config.json`` names the architecture only; the rotary's parameters are in the function that registers it
(``timm/models/eva.py``: ``eva02_*``, ``vit_*_rope_*``, ...: ``ref_feat_shape``, ``rope_grid_offset``,
``rope_grid_indexing``, ``rope_type``, ``class_token``, ``num_reg_tokens``, ...). This script builds every
architecture of ``timm.models.eva`` on the meta device (timm 1.0.31, side environment) and records what the built
model holds::

    PYTHONPATH=/work/side/tvstub /work/side/venv/bin/python tools/inventory/timm_rotary.py

Per architecture: ``rope`` (the rotary class, or null), its attributes (``dim`` per head, ``temperature``,
``in_pixels``, ``grid_type``, ``ref_feat_shape``, ``grid_offset``, ``grid_indexing``, ``rotate_half``), the model's
``num_prefix_tokens`` (``class_token``, then ``num_reg_tokens`` register tokens), ``img_size``, ``patch_size``,
``dynamic_img_size``, ``abs_pos_embed`` (it also adds a learned
table, ``pos_embed``), and ``rope_type`` as the model was asked
for (``Eva.__init__``: ``cat`` builds ``RotaryEmbeddingCat``, ``mixed`` learned frequencies, ``dinov3``).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import sitecustomize_tv  # noqa: F401  (stands in for torchvision, whose functions timm's rope never calls)
import timm
import torch

OUT = Path(__file__).resolve().parents[2] / "posenc_cli" / "models" / "data" / "timm_rotary.json"


def _plain(v):
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, torch.Tensor):
        return v.tolist()
    return v


def observe(arch: str) -> dict:
    import inspect

    from timm.models import eva

    seen: dict = {}
    sig = inspect.signature(eva.Eva.__init__)
    orig = eva.Eva.__init__

    def spy(self, *args, **kwargs):
        bound = sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        seen["rope_type"] = bound.arguments.get("rope_type")
        seen["use_rot_pos_emb"] = bound.arguments.get("use_rot_pos_emb")
        return orig(self, *args, **kwargs)

    eva.Eva.__init__ = spy
    try:
        with torch.device("meta"), contextlib.redirect_stdout(io.StringIO()):
            model = timm.create_model(arch, pretrained=False)
    finally:
        eva.Eva.__init__ = orig
    rope = getattr(model, "rope", None)
    rec = {
        "rope": type(rope).__name__ if rope is not None else None,
        "rope_type": seen.get("rope_type") if seen.get("use_rot_pos_emb") else None,
        "num_prefix_tokens": int(model.num_prefix_tokens),
        # eva.py Eva.__init__ l.708, l.741-742: the prefix is the class token (if any), then the register tokens
        # (_pos_embed l.1003-1006 concatenates them in that order)
        "class_token": getattr(model, "cls_token", None) is not None,
        "num_reg_tokens": int(model.reg_token.shape[1]) if getattr(model, "reg_token", None) is not None else 0,
        "img_size": _plain(model.patch_embed.img_size),
        "patch_size": _plain(model.patch_embed.patch_size),
        "dynamic_img_size": bool(getattr(model, "dynamic_img_size", False)),
        "abs_pos_embed": getattr(model, "pos_embed", None) is not None,
        "default_input_size": _plain(model.pretrained_cfg.get("input_size")),
    }
    if rope is not None:
        for key in ("dim", "temperature", "in_pixels", "grid_type", "ref_feat_shape", "grid_offset", "grid_indexing",
                    "rotate_half", "linear_bands", "max_res"):  # fmt: skip
            if hasattr(rope, key):
                rec[key] = _plain(getattr(rope, key))
    return rec


def main() -> None:
    out: dict = {"timm_version": timm.__version__, "torch_version": torch.__version__, "architectures": {}}
    for arch in sorted(timm.list_models(module="eva")):
        try:
            out["architectures"][arch] = observe(arch)
        except Exception as exc:
            out["architectures"][arch] = {"status": f"{type(exc).__name__}: {exc}".splitlines()[0][:160]}
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(len(out["architectures"]), "architectures", file=sys.stderr)


if __name__ == "__main__":
    main()
