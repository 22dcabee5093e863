"""Golden relative position bias of Swin and BEiT-style vision models from their own code, for
tests/test_vision_bias.py.

posenc never imports torch or transformers; this script does, once, in the side environment::

    /work/side/venv/bin/python tools/golden/make_vision_bias_golden.py

Three tiny random-weight models (transformers 5.24), saved with ``save_pretrained`` under ``tests/data/vision/models/``:

* ``tiny_swin``: Swin, window 4 over an 8 x 8 patch grid, two stages (1 and 2 heads): per block a
  ``SwinRelativePositionBias`` (``models/swin/modeling_swin.py``), its ``relative_position_index`` buffer and its
  ``forward()`` (``table[index].view(N, N, heads).permute(2, 0, 1)``);
* ``tiny_beit``: BEiT with a bias per layer (``use_relative_position_bias``), 4 x 4 patches plus the class token:
  ``BeitRelativePositionBias.generate_relative_position_index`` and ``forward(window_size)``;
* ``tiny_data2vec_vision``: Data2Vec-vision with one shared bias (``use_shared_relative_position_bias``).

And the index of other windows (7x7, 3x5, 6x2, 2x2) from ``SwinRelativePositionBias`` and
``BeitRelativePositionBias.generate_relative_position_index``. Each table is filled with random values first (they initialise to zeros), so a wrong gather shows. Writes
``tests/data/vision/bias_golden.npz``: ``MODEL/index`` (the index the model gathers with, N x N) and
``MODEL/<weight name>`` (heads x N x N) for each table in the saved weights.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import transformers

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "vision" / "models"
OUT = ROOT / "tests" / "data" / "vision"


def _randomise(model: torch.nn.Module) -> None:
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("relative_position_bias_table"):
                p.copy_(torch.randn(p.shape, generator=gen))


def _saved_names(path: Path) -> list[str]:
    from safetensors import safe_open

    with safe_open(str(path / "model.safetensors"), "np") as f:
        return [k for k in f.keys() if k.endswith("relative_position_bias_table")]


def _weight(saved: list[str], module: str) -> str:
    """The saved name of ``module``'s table: the one of the same layer and block numbers (transformers 5 saves the
    tables under their legacy names, ``encoder.layer.0.attention.attention.relative_position_bias...`` for the
    module ``layers.0.relative_position_bias``)."""

    def numbers(path: str) -> tuple[int, ...]:
        return tuple(int(p) for p in path.split(".") if p.isdigit())

    (found,) = [s for s in saved if numbers(s) == numbers(module)]
    return found


def swin() -> dict[str, np.ndarray]:
    from transformers.models.swin.modeling_swin import SwinRelativePositionBias

    cfg = transformers.SwinConfig(image_size=16, patch_size=2, embed_dim=8, depths=[1, 1], num_heads=[1, 2],
                                  window_size=4, mlp_ratio=1.0)  # fmt: skip
    model = transformers.SwinModel(cfg).eval()
    _randomise(model)
    model.save_pretrained(MODELS / "tiny_swin")
    saved = _saved_names(MODELS / "tiny_swin")
    out: dict[str, np.ndarray] = {}
    for name, m in model.named_modules():
        if isinstance(m, SwinRelativePositionBias):
            n = m.window_area
            out["tiny_swin/index"] = m.relative_position_index.view(n, n).numpy()
            weight = _weight(saved, name)
            with torch.no_grad():
                out[f"tiny_swin/{weight}"] = m()[0].numpy()
    return out


def _beit_like(cls_name: str, key: str, **kw: object) -> dict[str, np.ndarray]:
    cfg_cls = getattr(transformers, f"{cls_name}Config")
    cfg = cfg_cls(image_size=8, patch_size=2, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=8, use_absolute_position_embeddings=False, **kw)  # fmt: skip
    model = getattr(transformers, f"{cls_name}Model")(cfg).eval()
    _randomise(model)
    model.save_pretrained(MODELS / key)
    saved = _saved_names(MODELS / key)
    out: dict[str, np.ndarray] = {}
    for name, m in model.named_modules():
        if type(m).__name__.endswith("RelativePositionBias"):
            ws = m.window_size
            out[f"{key}/index"] = m.generate_relative_position_index(ws).numpy()
            weight = _weight(saved, name)
            with torch.no_grad():
                out[f"{key}/{weight}"] = m(ws)[0].numpy()
    return out


def other_windows() -> dict[str, np.ndarray]:
    """The index of windows other than the tiny models' (non-square too), from the same classes."""
    from transformers.models.beit.modeling_beit import BeitRelativePositionBias
    from transformers.models.swin.modeling_swin import SwinRelativePositionBias

    out = {}
    for h, w in [(7, 7), (3, 5), (6, 2), (2, 2)]:
        m = SwinRelativePositionBias(1, (h, w))
        out[f"swin_window/{h}x{w}"] = m.relative_position_index.view(h * w, h * w).numpy()
        out[f"beit_window/{h}x{w}"] = BeitRelativePositionBias.generate_relative_position_index((h, w)).numpy()
    return out


def _saved(path: Path, suffix: str) -> list[str]:
    from safetensors import safe_open

    with safe_open(str(path / "model.safetensors"), "np") as f:
        return [k for k in f.keys() if suffix in k]


class _Sigmoids(torch.overrides.TorchFunctionMode):
    """Records the output of every ``torch.sigmoid`` called inside a forward: Swin V2's ``16 * sigmoid(bias)``
    is the only one in its attention (``Swinv2SelfAttention.forward``), so the bias added is 16 times each."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        out = func(*args, **(kwargs or {}))
        if func is torch.sigmoid:
            self.seen.append(out.detach().clone())
        return out


def _continuous(key: str, model: torch.nn.Module, attn_cls: type, sizes: list[tuple[int, int]]) -> dict:
    """A Swin V2-style model's per-layer coordinates table, index and the bias its attention adds (captured from
    its own forward at each image size in ``sizes``), and each layer's window and shift."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "continuous_position_bias_mlp" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
    model.save_pretrained(MODELS / key)
    saved = _saved(MODELS / key, "continuous_position_bias_mlp.0.weight")
    out: dict[str, np.ndarray] = {}
    attns = [(n, m) for n, m in model.named_modules() if isinstance(m, attn_cls)]
    for k, (name, m) in enumerate(attns):
        out[f"{key}/coords_{k}"] = m.relative_coords_table[0].numpy()  # (2Wh-1, 2Ww-1, 2)
        n = m.window_size[0] * m.window_size[1]
        out[f"{key}/index_{k}"] = m.relative_position_index.view(n, n).numpy()
    layers = [m for _, m in model.named_modules() if type(m).__name__.endswith("Layer") and hasattr(m, "shift_size")]
    out[f"{key}/window_shift"] = np.array([[lay.window_size, lay.shift_size] for lay in layers])
    out[f"{key}/weights"] = np.array([s.removesuffix(".0.weight") for s in saved])
    for h, w in sizes:
        with _Sigmoids() as rec, torch.no_grad():
            model(torch.randn(1, model.config.num_channels, h, w, generator=gen))
        assert len(rec.seen) == len(attns), (len(rec.seen), len(attns))
        for k, sig in enumerate(rec.seen):
            out[f"{key}/{h}x{w}/bias_{k}"] = (16 * sig).numpy()
    return out


def swinv2() -> dict[str, np.ndarray]:
    """Swin V2 (``models/swinv2/modeling_swinv2.py``): window 6 over a 16 x 16 grid, three stages (16, 8, 4: the
    last shrinks its window to 4 at construction, ``Swinv2Layer._compute_window_shift``), pretrained windows 4, 0
    and 3 (both branches of ``create_coords_table_and_index``), run at four image sizes."""
    from transformers.models.swinv2.modeling_swinv2 import Swinv2SelfAttention

    cfg = transformers.Swinv2Config(image_size=32, patch_size=2, embed_dim=8, depths=[1, 2, 1], num_heads=[1, 2, 2],
                                    window_size=6, mlp_ratio=1.0, pretrained_window_sizes=[4, 0, 3])  # fmt: skip
    model = transformers.Swinv2Model(cfg).eval()
    return _continuous("tiny_swinv2", model, Swinv2SelfAttention, [(32, 32), (24, 40), (16, 16), (48, 32)])


def swin2sr() -> dict[str, np.ndarray]:
    """Swin2SR (``models/swin2sr/modeling_swin2sr.py``): every stage at the 16 x 16 grid, window 8 (shift 4 on
    odd layers), run at sizes that are multiples of the window (Swin2SRModel.forward pads the image to one and
    then fails, as it unembeds at the unpadded size). (An image_size below the window shrinks
    the window at construction, and then its forward fails on the padded grid, transformers 5.24.)"""
    from transformers.models.swin2sr.modeling_swin2sr import Swin2SRSelfAttention

    cfg = transformers.Swin2SRConfig(image_size=16, patch_size=1, embed_dim=8, depths=[1, 2], num_heads=[1, 2],
                                     window_size=8, mlp_ratio=1.0, upscale=1)  # fmt: skip
    model = transformers.Swin2SRModel(cfg).eval()
    return _continuous("tiny_swin2sr", model, Swin2SRSelfAttention, [(16, 16), (8, 24), (24, 16)])


class _Softmaxes(torch.overrides.TorchFunctionMode):
    """Records the input of every softmax: with the query and key projections zero, the attention scores are 0 and
    what the softmax sees is exactly the bias the attention added (no shifted block, so no mask)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        if func in (torch.softmax, torch.nn.functional.softmax, torch.Tensor.softmax):
            self.seen.append(args[0].detach().clone())
        return func(*args, **(kwargs or {}))


def swin_copies() -> dict[str, np.ndarray]:
    """Donut-Swin and MaskFormer-Swin, whose attention gathers its own table inline (``DonutSwinSelfAttention``,
    ``MaskFormerSwinSelfAttention``): the bias each block's forward adds, read at its softmax (query and key
    zero, one block per stage: no shift), window 4 over an 8 x 8 grid, two stages."""
    out: dict[str, np.ndarray] = {}
    for key, name in [("tiny_donut_swin", "DonutSwin"), ("tiny_maskformer_swin", "MaskFormerSwin")]:
        cfg = getattr(transformers, f"{name}Config")(image_size=16, patch_size=2, embed_dim=8, depths=[1, 1],
                                                     num_heads=[1, 2], window_size=4, mlp_ratio=1.0)  # fmt: skip
        model = getattr(transformers, f"{name}Model")(cfg).eval()
        _randomise(model)
        with torch.no_grad():
            for pname, p in model.named_parameters():
                if ".query." in pname or ".key." in pname:
                    p.zero_()
        model.save_pretrained(MODELS / key)
        saved = sorted(_saved_names(MODELS / key), key=lambda n: [int(t) if t.isdigit() else t for t in n.split(".")])
        with _Softmaxes() as rec, torch.no_grad():
            model(torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(2)))
        assert len(rec.seen) == len(saved), (len(rec.seen), saved)
        for weight, scores in zip(saved, rec.seen, strict=True):
            out[f"{key}/{weight}"] = scores[0].numpy()
    return out


def mask2former() -> dict[str, np.ndarray]:
    """A Mask2Former whose ``backbone_config`` is a tiny Swin (window 4, 8 x 8 patches, two stages): the bias each
    backbone block's ``SwinRelativePositionBias`` gives, under the names the saved weights use."""
    from transformers.models.swin.modeling_swin import SwinRelativePositionBias

    bb = dict(model_type="swin", image_size=16, patch_size=2, embed_dim=8, depths=[1, 1], num_heads=[1, 2],
              window_size=4, mlp_ratio=1.0, out_features=["stage1", "stage2"], out_indices=[1, 2])  # fmt: skip
    cfg = transformers.Mask2FormerConfig(backbone_config=bb, feature_size=32, mask_feature_size=32, hidden_dim=32,
                                         encoder_layers=1, decoder_layers=2, num_queries=4, encoder_feedforward_dim=16,
                                         dim_feedforward=16, num_attention_heads=2, feature_strides=[2, 4],
                                         common_stride=2)  # fmt: skip
    model = transformers.Mask2FormerModel(cfg).eval()
    _randomise(model)
    model.save_pretrained(MODELS / "tiny_mask2former")
    saved = _saved_names(MODELS / "tiny_mask2former")
    out: dict[str, np.ndarray] = {}
    for name, m in model.named_modules():
        if isinstance(m, SwinRelativePositionBias):
            with torch.no_grad():
                out[f"tiny_mask2former/{_weight(saved, name)}"] = m()[0].numpy()
    return out


def sam() -> dict[str, np.ndarray]:
    """SAM's and SAM-HQ's vision encoders (``models/sam/modeling_sam.py``, ``models/sam_hq/modeling_sam_hq.py``):
    8 x 8 patches, window 2, layer 1 global (``global_attn_indexes``), random ``rel_pos_h`` / ``rel_pos_w``; per
    layer what its own ``get_rel_pos`` gives for the sizes its forward passes (the layer's side, query and key
    alike), under the saved names. Also a full SAM config with that encoder as ``vision_config`` (configs/sam)."""
    from safetensors import safe_open
    from transformers.models.sam.modeling_sam import SamVisionAttention
    from transformers.models.sam_hq.modeling_sam_hq import SamHQVisionAttention

    out: dict[str, np.ndarray] = {}
    for key, name, attn in [("tiny_sam_vision", "SamVision", SamVisionAttention),
                            ("tiny_sam_hq_vision", "SamHQVision", SamHQVisionAttention)]:  # fmt: skip
        vc = getattr(transformers, f"{name}Config")(image_size=16, patch_size=2, hidden_size=8, output_channels=8,
                                                    num_hidden_layers=3, num_attention_heads=2, window_size=2,
                                                    global_attn_indexes=[1], mlp_dim=8)  # fmt: skip
        model = getattr(transformers, f"{name}Model")(vc).eval()
        gen = torch.Generator().manual_seed(3)
        with torch.no_grad():
            for pname, p in model.named_parameters():
                if pname.endswith(("rel_pos_h", "rel_pos_w")):
                    p.copy_(torch.randn(p.shape, generator=gen))
        model.save_pretrained(MODELS / key)
        if key == "tiny_sam_vision":
            (OUT / "configs" / "sam").mkdir(parents=True, exist_ok=True)
            transformers.SamConfig(vision_config=vc.to_dict()).save_pretrained(OUT / "configs" / "sam")
        with safe_open(str(MODELS / key / "model.safetensors"), "np") as f:
            saved = [k for k in f.keys() if k.endswith(("rel_pos_h", "rel_pos_w"))]
        for mname, m in model.named_modules():
            if isinstance(m, attn):
                for axis in ("h", "w"):
                    rel = getattr(m, f"rel_pos_{axis}")
                    side = (rel.shape[0] + 1) // 2
                    numbers = [t for t in mname.split(".") if t.isdigit()]
                    (weight,) = [s for s in saved if s.endswith(f"rel_pos_{axis}")
                                 and [t for t in s.split(".") if t.isdigit()] == numbers]  # fmt: skip
                    with torch.no_grad():
                        out[f"{key}/{weight}"] = m.get_rel_pos(side, side, rel).numpy()
    return out


#: The image sizes at which the Swin V1-style layers' windows and shifts are recorded (the last two not whole
#: patches, with odd stage grids: the forward pads both).
SIZES = [(16, 16), (24, 40), (16, 8), (12, 12), (32, 20), (8, 8), (13, 27), (22, 18)]


def stage_windows() -> dict[str, np.ndarray]:
    """Each Swin V1-style model type's per-block window and shift after a forward at each size of ``SIZES``
    (a fresh model per size: ``set_shift_and_window_size`` keeps what it set), or the error the forward raised,
    with the stage resolutions the encoder passed; window 4, patch 2, two stages of two blocks."""
    kw = dict(image_size=16, patch_size=2, embed_dim=8, depths=[2, 2], num_heads=[1, 2], window_size=4,
              mlp_ratio=1.0)  # fmt: skip
    out: dict[str, np.ndarray] = {}
    for key, cfg_cls, model_cls in [("swin", "SwinConfig", "SwinModel"), ("donut-swin", "DonutSwinConfig",
                                    "DonutSwinModel"), ("maskformer-swin", "MaskFormerSwinConfig",
                                    "MaskFormerSwinModel")]:  # fmt: skip
        for h, w in SIZES:
            torch.manual_seed(0)
            model = getattr(transformers, model_cls)(getattr(transformers, cfg_cls)(**kw)).eval()
            layers = [m for _, m in model.named_modules() if type(m).__name__.endswith("Layer")]
            dims: list[tuple[int, int]] = []
            hooks = [lay.register_forward_pre_hook(lambda mod, args: dims.append(tuple(args[1])))  # noqa: B023
                     for lay in layers]  # fmt: skip
            try:
                with torch.no_grad():
                    model(torch.randn(1, 3, h, w))
                err = ""
            except RuntimeError as exc:
                err = str(exc).splitlines()[0]
            for hook in hooks:
                hook.remove()
            out[f"stages/{key}/{h}x{w}/window_shift"] = np.array([[int(lay.window_size), int(lay.shift_size)]
                                                                  for lay in layers])  # fmt: skip
            out[f"stages/{key}/{h}x{w}/dims"] = np.array(dims, dtype=np.int64).reshape(-1, 2)
            out[f"stages/{key}/{h}x{w}/error"] = np.array(err)
    return out


#: Config image sizes at which Swin V2's and Swin2SR's construction-time windows are recorded (non-square: the
#: height decides, ``_compute_window_shift``).
BUILT = [(32, 16), (16, 40), (20, 24), (8, 32)]


def built_windows() -> dict[str, np.ndarray]:
    """Each layer's window and shift as Swin V2 / Swin2SR set them at construction, for each config image size of
    ``BUILT`` (window 6, patch 2, three stages of two blocks; built on meta, no forward)."""
    out: dict[str, np.ndarray] = {}
    for key, name in [("swinv2", "Swinv2"), ("swin2sr", "Swin2SR")]:
        for h, w in BUILT:
            cfg = getattr(transformers, f"{name}Config")(image_size=[h, w], patch_size=2, embed_dim=8,
                                                         depths=[2, 2, 2], num_heads=[1, 1, 1], window_size=6)  # fmt: skip
            with torch.device("meta"):
                model = getattr(transformers, f"{name}Model")(cfg)
            layers = [m for _, m in model.named_modules() if type(m).__name__.endswith("Layer")]
            out[f"built/{key}/{h}x{w}"] = np.array([[lay.window_size, lay.shift_size] for lay in layers])
    return out


def main(parts: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    if not parts or "v1" in parts:
        arrays = swin() | other_windows()
        arrays |= _beit_like("Beit", "tiny_beit", use_relative_position_bias=True)
        arrays |= _beit_like("Data2VecVision", "tiny_data2vec_vision", use_shared_relative_position_bias=True)
        np.savez_compressed(OUT / "bias_golden.npz", **arrays)
        print({k: v.shape for k, v in arrays.items()})
    if not parts or "stages" in parts:
        arrays = swinv2() | swin2sr() | stage_windows() | built_windows() | swin_copies() | mask2former() | sam()
        np.savez_compressed(OUT / "bias_stages_golden.npz", **arrays)
        print({k: v.shape for k, v in arrays.items()})


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
