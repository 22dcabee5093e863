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


def main() -> None:
    arrays = swin() | other_windows()
    arrays |= _beit_like("Beit", "tiny_beit", use_relative_position_bias=True)
    arrays |= _beit_like("Data2VecVision", "tiny_data2vec_vision", use_shared_relative_position_bias=True)
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT / "bias_golden.npz", **arrays)
    print({k: v.shape for k, v in arrays.items()})


if __name__ == "__main__":
    main()
