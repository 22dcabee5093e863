"""Golden 2-D rotations of vision towers from their own code, for tests/test_vision_rope.py.

posenc never imports torch, transformers or timm; this script does, once, in the side environment
(torch 2.13.0 CPU, transformers 5.24.0, timm 1.0.31 installed --no-deps with a torchvision stand-in)::

    PYTHONPATH=/work/side/tvstub /work/side/venv/bin/python tools/golden/make_vision_rope_golden.py

Each tower is a tiny random-weight model built from its own classes (one block, head of 8), run forward on a
zero image of each grid. The attention's apply function (the one the model's attention calls, wrapped) is
caught with the cos/sin (or complex frequencies, or concatenated sin/cos) the attention passed to it, and is
called again, by this script, on the unit vectors of the head: ``rot[n, :, j]`` is where the model's own
arithmetic sends basis vector ``e_j`` at row ``n`` of the sequence it rotates, in the order its blocks see the
rows. That is the whole positional effect, pairing and row order included, as the model's code has it.

* Pixtral: ``PixtralVisionModel`` (``apply_rotary_pos_emb``), grids H x W of patches (image H*p x W*p);
* Qwen2-VL: ``Qwen2VisionTransformerPretrainedModel`` (``apply_rotary_pos_emb_vision``), grid_thw (1, H, W);
* Qwen2.5-VL: ``Qwen2_5_VisionTransformerPretrainedModel``, whose blocks see rows in window order (window 112,
  patch 14, merge 2: windows of 4 x 4 merge blocks);
* Llama 4: ``Llama4VisionModel`` (``vision_apply_rotary_emb``): square grids only, image_size = side * patch
  (its rotary is built from ``config.image_size``); the class token is the last row;
* timm EVA02: ``eva02_tiny_patch14_224`` (ref_feat_shape 16 x 16) shrunk to embed 32 / 4 heads / depth 1, at
  ``img_size`` = grid * 14 (``apply_rot_embed_cat`` on the rows after the class token: eva.py ``EvaAttention``).

The HF towers' configs are saved too (``tests/data/vision/configs/``: Pixtral's tower config, and the Qwen2-VL,
Qwen2.5-VL and Llama 4 model configs holding the tiny ``vision_config``), so that posenc's reading of each config is
tested against the same arrays. Writes ``tests/data/vision/rope_golden.npz`` (compressed; keys ``TOWER/HxW``) and ``rope_golden.json`` (what
each key holds, and the configs).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "vision"
D = 8  # head dim of every tiny tower


def _catch(module: Any, name: str, make_q: Callable[[Any, tuple], Any], read: Callable[[Any], np.ndarray],
           pair: bool = True) -> Any:
    """Wrap ``module.name`` (the apply function: ``(q, k, ...)`` with ``pair``, else ``(x, ...)``) so each call
    is recorded; returns the list of records and the function that unwraps it."""
    fn = getattr(module, name)
    seen: list[np.ndarray] = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        q = make_q(args, kwargs)
        out = fn(q, q, *args[2:], **kwargs)[0] if pair else fn(q, *args[1:], **kwargs)
        seen.append(read(out))
        return fn(*args, **kwargs)

    setattr(module, name, wrapped)
    return seen, lambda: setattr(module, name, fn)


def _eye_heads_first(n: int) -> torch.Tensor:
    """(1, D heads, n, D): head j holds e_j at every row."""
    return torch.eye(D)[None, :, None, :].expand(1, D, n, D).contiguous()


def pixtral(grids: list[tuple[int, int]]) -> dict[str, np.ndarray]:
    from transformers import PixtralVisionConfig
    from transformers.models.pixtral import modeling_pixtral as m

    cfg = PixtralVisionConfig(hidden_size=16, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
                              head_dim=D, patch_size=2, image_size=16, num_channels=3)  # fmt: skip
    model = m.PixtralVisionModel(cfg).eval()
    cfg.save_pretrained(OUT / "configs" / "pixtral")
    seen, undo = _catch(m, "apply_rotary_pos_emb", lambda a, k: _eye_heads_first(a[0].shape[2]),
                        lambda out: out[0].permute(1, 2, 0).numpy())  # fmt: skip
    out = {}
    try:
        for h, w in grids:
            seen.clear()
            with torch.no_grad():
                model(torch.zeros(1, 3, 2 * h, 2 * w))
            out[f"pixtral/{h}x{w}"] = seen[0]
    finally:
        undo()
    return out


def _qwen(module_name: str, model_cls: str, cfg_cls: str, key: str, grids: list[tuple[int, int]], **cfg_kw: Any):
    import importlib

    import transformers

    m = importlib.import_module(f"transformers.models.{module_name}")
    cfg = getattr(transformers, cfg_cls)(depth=1, embed_dim=2 * D, hidden_size=2 * D, num_heads=2,
                                         intermediate_size=16, **cfg_kw)  # fmt: skip
    model = getattr(m, model_cls)(cfg).eval()
    wrapper = getattr(transformers, cfg_cls.replace("Vision", ""))(vision_config=cfg.to_dict())
    wrapper.save_pretrained(OUT / "configs" / key)

    def make_q(a: tuple, k: dict) -> torch.Tensor:  # q: (seq, heads, D)
        n = a[0].shape[0]
        return torch.eye(D)[None, :, :].expand(n, D, D).contiguous()

    seen, undo = _catch(m, "apply_rotary_pos_emb_vision", make_q, lambda out: out.permute(0, 2, 1).numpy())
    per = cfg.in_channels * cfg.temporal_patch_size * cfg.patch_size**2
    out = {}
    try:
        for h, w in grids:
            seen.clear()
            with torch.no_grad():
                model(torch.zeros(h * w, per), grid_thw=torch.tensor([[1, h, w]]))
            out[f"{key}/{h}x{w}"] = seen[0]
    finally:
        undo()
    return out, cfg


def llama4(sides: list[int]) -> dict[str, np.ndarray]:
    from transformers import Llama4VisionConfig
    from transformers.models.llama4 import modeling_llama4 as m

    out = {}

    def make_q(a: tuple, k: dict) -> torch.Tensor:  # query: (batch, seq, heads, D)
        n = a[0].shape[1]
        return torch.eye(D)[None, None, :, :].expand(1, n, D, D).contiguous()

    seen, undo = _catch(m, "vision_apply_rotary_emb", make_q, lambda out: out[0].permute(0, 2, 1).numpy())
    try:
        for side in sides:
            cfg = Llama4VisionConfig(hidden_size=2 * D, intermediate_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, image_size=2 * side, patch_size=2,
                                     vision_output_dim=16, projector_input_dim=16, projector_output_dim=16,
                                     pixel_shuffle_ratio=1.0)  # fmt: skip
            model = m.Llama4VisionModel(cfg).eval()
            if side == sides[0]:
                from transformers import Llama4Config

                Llama4Config(vision_config=cfg.to_dict()).save_pretrained(OUT / "configs" / "llama4")
            seen.clear()
            with torch.no_grad():
                model(torch.zeros(1, 3, 2 * side, 2 * side))
            out[f"llama4/{side}x{side}"] = seen[0]
    finally:
        undo()
    return out


def eva02(grids: list[tuple[int, int]]) -> dict[str, np.ndarray]:
    sys.path.insert(0, "/work/side/tvstub")
    import sitecustomize_tv  # noqa: F401  (stands in for torchvision, whose functions timm's rope never calls)
    import timm
    from timm.models import eva as m

    def make_q(a: tuple, k: dict) -> torch.Tensor:  # x: (batch, heads, seq, D)
        return _eye_heads_first(a[0].shape[2])

    seen, undo = _catch(m, "apply_rot_embed_cat", make_q, lambda out: out[0].permute(1, 2, 0).numpy(), pair=False)
    out = {}
    try:
        for h, w in grids:
            model = timm.create_model("eva02_tiny_patch14_224", pretrained=False, img_size=(14 * h, 14 * w),
                                      embed_dim=4 * D, num_heads=4, depth=1).eval()  # fmt: skip
            seen.clear()
            with torch.no_grad():
                model(torch.zeros(1, 3, 14 * h, 14 * w))
            out[f"eva02/{h}x{w}"] = seen[0]
    finally:
        undo()
    return out


#: timm architectures whose own config.json posenc reads for their rotary (tests/test_vision_rope.py), each with
#: one of the parameter sets timm's EVA code builds: EVA02 (ij, ref 16x16), Perception Encoder (xy, ref 14x14,
#: grid offset 1), the plain rotary ViT (xy, no reference grid, temperature 100), and 4 register tokens (ref 16x16).
TIMM = ["eva02_tiny_patch14_224", "vit_pe_core_base_patch16_224", "vit_small_patch16_rope_224",
        "vit_betwixt_patch16_rope_reg4_gap_256"]  # fmt: skip


def timm_configs(grids: list[tuple[int, int]]) -> dict[str, np.ndarray]:
    """Each architecture of ``TIMM``: its config.json as timm writes it for the Hub (``save_config_for_hf``,
    ``configs/timm_<arch>/``), and the sin and cos its own rotary module (``model.rope``, built by
    ``timm.create_model`` at ``img_size`` = grid x patch, then its buffers computed on the CPU:
    ``init_non_persistent_buffers``) gives at its native grid and at each of ``grids``: ``get_embed()`` is
    ``cat([sin, cos])`` of the patches' rows (``RotaryEmbeddingCat``)."""
    sys.path.insert(0, "/work/side/tvstub")
    import sitecustomize_tv  # noqa: F401  (stands in for torchvision, whose functions timm's rope never calls)
    import timm
    from timm.models._hub import save_config_for_hf

    out: dict[str, np.ndarray] = {}
    for arch in TIMM:
        with torch.device("meta"):
            model = timm.create_model(arch, pretrained=False)
        where = OUT / "configs" / f"timm_{arch}"
        where.mkdir(parents=True, exist_ok=True)
        save_config_for_hf(model, str(where / "config.json"))
        patch = model.patch_embed.patch_size
        native = tuple(model.patch_embed.grid_size)
        for h, w in [native, *grids]:
            with torch.device("meta"):
                model = timm.create_model(arch, pretrained=False, img_size=(patch[0] * h, patch[1] * w))
            rope = model.rope.to_empty(device="cpu")
            rope.init_non_persistent_buffers()
            emb = rope.get_embed()
            dim = emb.shape[1] // 2
            out[f"timm/{arch}/{h}x{w}/sin"] = emb[:, :dim].numpy()
            out[f"timm/{arch}/{h}x{w}/cos"] = emb[:, dim:].numpy()
    return out


def main() -> None:
    if sys.argv[1:] == ["timm"]:
        arrays = timm_configs([(10, 12), (20, 8), (7, 7)])
        np.savez_compressed(OUT / "timm_rope_golden.npz", **arrays)
        print({k: v.shape for k, v in arrays.items()})
        return
    import transformers  # before the torchvision stand-in, which transformers would take for torchvision

    arrays: dict[str, np.ndarray] = {}
    arrays |= pixtral([(8, 8), (3, 5), (6, 2), (4, 7)])
    qwen, qcfg = _qwen("qwen2_vl.modeling_qwen2_vl", "Qwen2VisionTransformerPretrainedModel", "Qwen2VLVisionConfig",
                       "qwen2_vl", [(4, 4), (2, 6), (6, 4), (8, 2)], patch_size=2)  # fmt: skip
    arrays |= qwen
    q25, q25cfg = _qwen("qwen2_5_vl.modeling_qwen2_5_vl", "Qwen2_5_VisionTransformerPretrainedModel",
                        "Qwen2_5_VLVisionConfig", "qwen2_5_vl", [(8, 8), (12, 18), (4, 10), (18, 6)],
                        out_hidden_size=16, fullatt_block_indexes=[0])  # fmt: skip
    arrays |= q25
    arrays |= llama4([4, 2, 3, 6])
    arrays |= eva02([(16, 16), (10, 12), (20, 8), (7, 7)])
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT / "rope_golden.npz", **{k: v.astype(np.float32) for k, v in arrays.items()})
    info = {
        "generator": "tools/golden/make_vision_rope_golden.py",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "timm_version": __import__("timm").__version__,
        "head_dim": D,
        "holds": "rot[n, :, j]: the model's apply function on basis vector e_j at row n of the rows it rotates",
        "keys": {k: list(v.shape) for k, v in arrays.items()},
        "qwen2_5_vl": {"window_size": q25cfg.window_size, "patch_size": q25cfg.patch_size,
                       "spatial_merge_size": q25cfg.spatial_merge_size},
    }  # fmt: skip
    (OUT / "rope_golden.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    print({k: v.shape for k, v in arrays.items()})


if __name__ == "__main__":
    main()
