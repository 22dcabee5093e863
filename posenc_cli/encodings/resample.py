r"""Resampling a 2-D table over its grid as PyTorch's ``F.interpolate`` does it, written in NumPy.

A ViT-family position table holds one row per patch of a ``h x w`` grid (row-major); a model run at another image
size resizes that grid to ``H x W`` with ``torch.nn.functional.interpolate`` over a ``(1, dim, h, w)`` tensor. The
functions here reproduce that call in float32, from the kernel definitions of PyTorch (``aten/src/ATen/native/
UpSample.h`` and ``aten/src/ATen/native/cpu/UpSampleKernel.cpp``, torch 2.x), so that a resized table agrees with
torch's within float32 rounding (a few ulp: torch's CPU loops may fuse multiply-adds or vectorise a sum in
another order). No torch at run time.

The two steps of every mode:

* **source coordinate** (``area_pixel_compute_scale`` / ``area_pixel_compute_source_index``): the scale is
  ``(in - 1) / (out - 1)`` with ``align_corners=True`` (0 when ``out == 1``); otherwise ``in / out`` in float32
  when the caller gave a ``size``, or ``float32(1 / scale_factor)`` when it gave a ``scale_factor`` (the output
  size is then ``floor(in * scale_factor)``, which is why the two differ: 37 * (28/37 + 0.1/37) is not 28/37).
  Output index ``i`` reads source coordinate ``scale * i`` (align_corners) or ``scale * (i + 0.5) - 0.5``,
  clamped at 0 for bilinear, not for bicubic.
* **weights**

  - ``bilinear`` (``upsample_bilinear2d``): the two neighbours ``floor(x)`` and ``floor(x) + 1`` (the last index
    repeats at the edge) with weights ``1 - t`` and ``t``; an axis whose size does not change is copied.
  - ``bicubic`` (``upsample_bicubic2d``): the four neighbours ``floor(x) - 1 .. floor(x) + 2`` clamped to the
    grid, weights of Keys' cubic convolution with ``A = -0.75`` (``get_cubic_upsample_coefficients``).
  - ``antialias=True`` (``_upsample_bilinear2d_aa``, ``_upsample_bicubic2d_aa``, Pillow's resampling): output
    ``i`` has centre ``c = scale * (i + 0.5)``; the filter (triangle for bilinear, Keys' cubic with ``a = -0.5``
    for bicubic) is stretched by ``scale`` when downsampling (support ``size/2 * scale``, else ``size/2``), sampled
    at ``(j - c + 0.5) / max(scale, 1)`` over source indices ``j`` in ``[c - support + 0.5, c + support + 0.5)``
    clipped to the grid, and normalised to sum 1; ``align_corners`` changes the scale only.

The sums run in torch's order: without antialias, ``out = sum_i wh_i * (sum_j ww_j * x[h_i, w_j])`` (the generic
N-d kernel, ``Interpolate<2>``); with antialias, separably, the width pass first then the height pass, each
skipped when that axis keeps its size, with a float32 buffer between them (``separable_upsample_generic_Nd``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError

#: the modes posenc reproduces (``F.interpolate(mode=...)``), and the candidates a resized table is tried against
MODES = ("bicubic", "bilinear")
#: ``mode="nearest"`` (TimeSformer): no weights, no ``align_corners`` or ``antialias`` (torch refuses both)
NEAREST = "nearest"
#: not ``F.interpolate``: the grid repeated periodically and cropped (SAM 3's ``_tile_position_embeddings``:
#: ``tile([1, 1, H // h + 1, W // w + 1])[:, :, :H, :W]``): output ``i`` reads ``i mod h``
TILE = "tile"


@dataclass(frozen=True)
class Resampling:
    """One ``F.interpolate`` call over a position grid: its mode and flags, and whether the model passed the new
    ``size`` or a ``scale_factor`` (with the offset added to it before dividing, as DINO's original code did)."""

    mode: str = "bicubic"
    align_corners: bool = False
    antialias: bool = False
    #: ``size``: the model passes the new grid; ``scale_factor``: it passes ``(new + offset) / old`` per axis
    by: str = "size"
    offset: float = 0.0

    def __post_init__(self) -> None:
        if self.mode not in (*MODES, NEAREST, TILE):
            raise ParameterError(
                f"unknown resampling mode {self.mode!r}; choose from: {', '.join(MODES)}, {NEAREST}, {TILE}"
            )
        if self.mode in (NEAREST, TILE) and (self.align_corners or self.antialias or self.by != "size"):
            raise ParameterError(f"mode {self.mode} takes no align_corners, antialias or scale_factor")
        if self.by not in ("size", "scale_factor"):
            raise ParameterError(f"unknown resampling by={self.by!r}; choose from: size, scale_factor")

    def describe(self) -> str:
        """The call in words, e.g. ``bicubic, antialias=False, align_corners=False, size``."""
        by = self.by if not self.offset else f"scale_factor (new + {self.offset:g}) / old"
        if self.mode == NEAREST:
            return f"{self.mode}, {by}"
        if self.mode == TILE:
            return "tile: the grid repeated and cropped (not interpolated)"
        return f"{self.mode}, antialias={self.antialias}, align_corners={self.align_corners}, {by}"

    def scale_factors(self, old: tuple[int, int], new: tuple[int, int]) -> tuple[float, float] | None:
        """The ``scale_factor`` the model passes for ``old -> new`` (None when it passes the size)."""
        if self.by == "size":
            return None
        return ((new[0] + self.offset) / old[0], (new[1] + self.offset) / old[1])


#: DINO's original ``interpolate_pos_encoding`` passed ``scale_factor=((new + 0.1) / old)`` per axis
#: (facebookresearch/dino vision_transformer.py, "we add a small number to avoid floating point error"); HF's and
#: timm's pass the size. A candidate call of :data:`CALLS`, for naming which one made a table.
DINO_OFFSET = 0.1

#: every call a resized table is tried against: mode x antialias x align_corners x (size, scale_factor,
#: scale_factor with DINO's offset), then nearest and tile
CALLS: tuple[Resampling, ...] = tuple(
    Resampling(mode, align_corners=ac, antialias=aa, by=by, offset=off)
    for mode in MODES
    for aa in (False, True)
    for ac in (False, True)
    for by, off in (("size", 0), ("scale_factor", 0), ("scale_factor", DINO_OFFSET))
) + (Resampling(NEAREST), Resampling(TILE))  # TimeSformer's nearest and SAM 3's tiling


def output_size(old: tuple[int, int], factors: tuple[float, float]) -> tuple[int, int]:
    """The grid ``F.interpolate`` makes from ``scale_factor``: ``floor(old * factor)`` per axis (in float64, as
    torch's Python side computes it)."""
    return (math.floor(float(old[0]) * factors[0]), math.floor(float(old[1]) * factors[1]))


def _scale(n_in: int, n_out: int, align_corners: bool, factor: float | None) -> Any:
    """``area_pixel_compute_scale`` in float32."""
    import numpy as np

    f32 = np.float32
    if align_corners:
        return f32(n_in - 1) / f32(n_out - 1) if n_out > 1 else f32(0)
    if factor is not None and factor > 0:
        return f32(1.0 / factor)  # 1 / scale in float64, then float32 (compute_scales_value)
    return f32(n_in) / f32(n_out)


def _weights_plain(n_in: int, n_out: int, rule: Resampling, factor: float | None) -> tuple[Any, Any]:
    """``(indices, weights)`` of shape ``(n_out, k)`` of the non-antialiased kernels (k = 2 or 4), float32."""
    import numpy as np

    f32 = np.float32
    scale = _scale(n_in, n_out, rule.align_corners, factor)
    i = np.arange(n_out)
    if rule.align_corners:
        real = scale * i.astype(f32)
    else:
        real = scale * (i.astype(f32) + f32(0.5)) - f32(0.5)
    cubic = rule.mode == "bicubic"
    if not cubic:
        real = np.where(real < 0, f32(0), real).astype(f32)
    # guard_index_and_lambda: floor, at most n_in - 1; lambda clamped to [0, 1]
    index = np.minimum(np.floor(real).astype(np.int64), n_in - 1)
    lam = np.clip(real - index.astype(f32), f32(0), f32(1)).astype(f32)
    if not cubic:
        if n_in == n_out:  # compute_source_index_and_lambda: the same size is a copy
            return i[:, None].repeat(2, 1), np.stack([np.ones(n_out, f32), np.zeros(n_out, f32)], 1)
        nxt = index + (index < n_in - 1)
        return np.stack([index, nxt], 1), np.stack([f32(1) - lam, lam], 1).astype(f32)
    a = f32(-0.75)

    def cc1(x: Any) -> Any:
        return ((a + f32(2)) * x - (a + f32(3))) * x * x + f32(1)

    def cc2(x: Any) -> Any:
        return ((a * x - f32(5) * a) * x + f32(8) * a) * x - f32(4) * a

    x2 = f32(1) - lam
    w = np.stack([cc2(lam + f32(1)), cc1(lam), cc1(x2), cc2(x2 + f32(1))], 1).astype(f32)
    idx = np.clip(index[:, None] + np.arange(-1, 3)[None, :], 0, n_in - 1)
    return idx, w


def _filter(mode: str, x: Any) -> Any:
    """The antialiasing filters (``HelperInterpLinear::aa_filter``, ``HelperInterpCubic::aa_filter`` with Keys'
    ``a = -0.5``), float32."""
    import numpy as np

    f32 = np.float32
    x = np.abs(x).astype(f32)
    if mode == "bilinear":
        return np.where(x < 1, f32(1) - x, f32(0)).astype(f32)
    a = f32(-0.5)
    c1 = ((a + f32(2)) * x - (a + f32(3))) * x * x + f32(1)
    c2 = ((a * x - f32(5) * a) * x + f32(8) * a) * x - f32(4) * a
    return np.where(x < 1, c1, np.where(x < 2, c2, f32(0))).astype(f32)


def _weights_aa(n_in: int, n_out: int, rule: Resampling, factor: float | None) -> tuple[Any, Any]:
    """``(indices, weights)`` of shape ``(n_out, k)`` of the antialiased kernels (weights 0 past each output's
    window; indices there repeat a valid one), float32 (``_compute_indices_min_size_weights_aa``)."""
    import numpy as np

    f32 = np.float32
    size = 2 if rule.mode == "bilinear" else 4
    scale = _scale(n_in, n_out, rule.align_corners, factor)
    support = f32(size * 0.5 * float(scale)) if scale >= 1 else f32(size * 0.5)
    k = math.ceil(float(support)) * 2 + 1
    invscale = f32(1.0 / float(scale)) if scale >= 1 else f32(1.0)
    idx = np.zeros((n_out, k), np.int64)
    wts = np.zeros((n_out, k), f32)
    for i in range(n_out):
        center = f32(float(scale) * (i + 0.5))
        xmin = max(int(float(center - support) + 0.5), 0)
        xsize = min(int(float(center + support) + 0.5), n_in) - xmin
        xsize = min(max(xsize, 0), k)
        j = np.arange(xsize)
        arg = ((j + xmin).astype(f32) - center).astype(np.float64) + 0.5
        w = _filter(rule.mode, (arg * float(invscale)).astype(f32))
        total = f32(0)
        for v in w:  # total_w += w, in order
            total = f32(total + v)
        if total != 0:
            w = (w / total).astype(f32)
        wts[i, :xsize] = w
        idx[i, :xsize] = xmin + j
        idx[i, xsize:] = xmin
    return idx, wts


def _nearest(n_in: int, n_out: int, factor: float | None) -> Any:
    """The source index of each output of ``mode="nearest"`` (``nearest_idx`` of UpSample.h: the same size is a
    copy, twice the size is ``i >> 1``, else ``min(floor(i * scale), n_in - 1)`` with ``scale`` in float32, from
    ``compute_scales_value``)."""
    import numpy as np

    f32 = np.float32
    i = np.arange(n_out)
    if n_out == n_in:
        return i
    if n_out == 2 * n_in:
        return i >> 1
    scale = f32(1.0 / factor) if factor is not None and factor > 0 else f32(n_in) / f32(n_out)
    return np.minimum(np.floor(i.astype(f32) * scale).astype(np.int64), n_in - 1)


def _weights(n_in: int, n_out: int, rule: Resampling, factor: float | None) -> tuple[Any, Any]:
    if rule.mode in (NEAREST, TILE):
        import numpy as np

        idx = _nearest(n_in, n_out, factor) if rule.mode == NEAREST else np.arange(n_out) % n_in
        return idx[:, None], np.ones((n_out, 1), np.float32)
    if rule.antialias:
        return _weights_aa(n_in, n_out, rule, factor)
    return _weights_plain(n_in, n_out, rule, factor)


def _weighted_sum(src: Any, axis: int, idx: Any, wts: Any) -> Any:
    """``out[i] = sum_j wts[i, j] * src[idx[i, j]]`` along ``axis``, summed in ``j`` order in float32."""
    import numpy as np

    out = None
    for j in range(idx.shape[1]):
        taken = np.take(src, idx[:, j], axis=axis)
        shape = [1] * src.ndim
        shape[axis] = idx.shape[0]
        term = taken * wts[:, j].reshape(shape)
        out = term if out is None else out + term
    assert out is not None
    return out.astype(np.float32)


def resample(
    grid: Any,
    size: tuple[int, int] | None = None,
    rule: Resampling | None = None,
    *,
    scale_factor: tuple[float, float] | None = None,
) -> Any:
    """``grid`` (``h x w x dim``) resized to ``size`` (``H x W``) as ``F.interpolate`` over ``(1, dim, h, w)``
    does, float32. With ``scale_factor`` (torch's ``scale_factor=``, ``recompute_scale_factor`` unset) the output
    grid is ``floor(h * factor)`` per axis and the kernels use ``1 / factor`` as the scale; ``size`` must then be
    None or that grid."""
    import numpy as np

    rule = rule or Resampling()
    x = np.asarray(grid, dtype=np.float32)
    if x.ndim != 3:
        raise ParameterError(f"a grid to resample is h x w x dim; got shape {list(x.shape)}")
    old = (int(x.shape[0]), int(x.shape[1]))
    factors: tuple[float | None, float | None] = (None, None)
    if scale_factor is not None:
        made = output_size(old, scale_factor)
        if size is not None and tuple(size) != made:
            raise ParameterError(f"scale_factor {scale_factor} makes a {made[0]}x{made[1]} grid, not {size}")
        size, factors = made, (scale_factor[0], scale_factor[1])
    if size is None:
        raise ParameterError("give the new grid size or a scale_factor")
    new = (int(size[0]), int(size[1]))
    if min(new) < 1 or min(old) < 1:
        raise ParameterError(f"cannot resample a {old[0]}x{old[1]} grid to {new[0]}x{new[1]}: sizes must be >= 1")
    ih, wh = _weights(old[0], new[0], rule, factors[0])
    iw, ww = _weights(old[1], new[1], rule, factors[1])
    if rule.antialias:  # separable: width, then height, each only when its size changes
        if new[1] != old[1]:
            x = _weighted_sum(x, 1, iw, ww)
        if new[0] != old[0]:
            x = _weighted_sum(x, 0, ih, wh)
        return np.ascontiguousarray(x, dtype=np.float32)
    # Interpolate<2>: out = sum_i wh_i * (sum_j ww_j * x[h_i, w_j])
    out = None
    for i in range(ih.shape[1]):
        rows = np.take(x, ih[:, i], axis=0)
        inner = _weighted_sum(rows, 1, iw, ww)
        term = inner * wh[:, i].reshape(-1, 1, 1)
        out = term if out is None else out + term
    assert out is not None
    return np.ascontiguousarray(out, dtype=np.float32)
