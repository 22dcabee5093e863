r"""Fixed sinusoidal encodings of 2-D image grids and 3-D video grids (ViT/MAE patch positions).

A grid ``grid=HxW`` (or ``TxHxW``) of patches is flattened row-major (last axis fastest, the order of
``x.flatten(2)`` / ``reshape(-1)`` in every reference), optionally after a leading all-zero ``[CLS]`` row
(``cls_token``). Each grid axis :math:`a` with integer coordinate :math:`p_a` gets :math:`F` frequencies

.. math::

    \omega_k = \mathrm{base}^{-k/F}, \qquad k = 0, \dots, F - 1

and contributes :math:`F` sines :math:`\sin(p_a\omega_k)` and :math:`F` cosines :math:`\cos(p_a\omega_k)`:
:math:`2F` columns per axis, :math:`2nF` for an :math:`n`-axis grid. Three parameters place them:

* ``axis_order``: ``reversed`` puts the last grid axis first (MAE: ``[w | h]``), ``grid`` keeps grid order
  (timm, positional-encodings: ``[h | w]`` / ``[x | y | z]``);
* ``layout``: ``split`` is ``[sin | cos]`` per axis (MAE); ``interleaved`` alternates
  ``sin_0, cos_0, sin_1, cos_1, ...`` per axis (positional-encodings); ``sin-block`` puts all sines first,
  ``[sin_h | sin_w | cos_h | cos_w]`` (timm);
* ``channels``: ``exact`` needs ``dim`` divisible by :math:`2n` and uses :math:`F = d/2n` (MAE and timm
  assert this); ``ceil`` uses :math:`F = \lceil d / 2n \rceil` and drops the trailing columns beyond ``dim``
  (positional-encodings: ``channels = ceil(ch/4)*2`` per axis in 2-D, ``ceil(ch/6)*2`` in 3-D, then
  ``[..., :orig_ch]``).

Presets
-------
* ``mae`` (``sinusoidal-2d`` default): facebookresearch/mae ``util/pos_embed.py``
  ``get_2d_sincos_pos_embed``. Its ``np.meshgrid(grid_w, grid_h)`` puts the *w* coordinate in ``grid[0]``,
  which feeds the half it calls ``emb_h`` (the axis-order question of facebookresearch/mae issue #18):
  columns are ``[sin(w w_k) | cos(w w_k) | sin(h w_k) | cos(h w_k)]`` with rows ``h * W + w``. MAE only
  takes square grids; ``HxW`` here is the usual generalisation (``meshgrid(grid_w, grid_h)`` reshaped to
  ``[2, 1, H, W]``). MAE's models call it with ``cls_token=True``; pass ``cls_token=true`` for that
  ``1 + H*W`` table.
* ``timm``: huggingface/pytorch-image-models ``timm/layers/pos_embed_sincos.py``
  ``build_sincos2d_pos_embed`` with its defaults (``temperature=10000``, ``reverse_coord=False``,
  ``interleave_sin_cos=False``): ``[sin_h | sin_w | cos_h | cos_w]``, rows ``h * W + w``.
* ``positional-encodings``: tatp22/multidim-positional-encoding
  ``positional_encodings/torch_encodings.py`` ``PositionalEncoding2D`` / ``PositionalEncoding3D`` (the
  ``positional-encodings`` PyPI package): per axis ``get_emb`` = ``stack((sin, cos), -1).flatten(-2)``,
  axes ``[x | y (| z)]``, truncated to ``dim``; rows ``x * Y + y`` (``(x * Y + y) * Z + z`` in 3-D).

The references compute in float32 (MAE: float32 positions and ``omega`` into float64 ``sin``; timm and
positional-encodings: float32 throughout); posenc computes every angle with exact range reduction
(:mod:`._trig`) and rounds once to ``dtype``, so it agrees with them to float32 rounding.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, localcontext
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import ParameterError, ref
from . import _trig
from .base import Encoding, TensorSpec, param

AXIS_ORDERS = ("reversed", "grid")
LAYOUTS = ("split", "interleaved", "sin-block")
CHANNELS = ("exact", "ceil")
#: A name of a row that is not a position (``extra_rows``): a word (cls, dist, reg, padding, offset, ...).
_ROW_NAME = re.compile(r"[A-Za-z][\w-]*")
#: Largest grid side: coordinates must stay below 2**31 for exact range reduction.
MAX_SIDE = 2**31 - 1


def parse_grid(text: str, ndim: int) -> tuple[int, ...]:
    """``"14x14"`` -> ``(14, 14)``; a :class:`ParameterError` naming the expected form otherwise."""
    example = "x".join(["8", "14", "14"][-ndim:])
    parts = re.split(r"\s*[xX×*,]\s*", text.strip())
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        shape = ()
    if len(shape) != ndim or any(s < 1 or s > MAX_SIDE for s in shape):
        form = "x".join("HW" if ndim == 2 else "THW")
        raise ParameterError(f"grid={text!r} is not a {ndim}-D grid {form} of positive sizes; use e.g. grid={example}")
    return shape


def grid_layout(metadata: object) -> tuple[int, int, int] | None:
    """``(H, W, first row)`` of a table whose metadata says its rows are a 2-D patch grid in row-major order:
    ``grid`` = ``HxW``, ``grid_offset`` = the row of patch (0, 0) (default 0), ``row_order`` absent or ``raster``
    (ViT-family tables; the rotary towers' ``merge`` and ``window`` orders are not raster); else None."""
    if not hasattr(metadata, "get"):
        return None
    parts = str(metadata.get("grid") or "").lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        return None
    offset = str(metadata.get("grid_offset") or "0")
    if str(metadata.get("row_order") or "raster") != "raster" or not offset.isdigit():
        return None
    return int(parts[0]), int(parts[1]), int(offset)


def parse_extra_rows(text: str, where: str) -> dict[int, str]:
    """The metadata convention of rows that are not positions: ``extra_rows`` = ``"0:cls,1:reg"`` -> ``{0: "cls",
    1: "reg"}``; ``where`` names the text's origin in the error (an option or
    a metadata key)."""
    out: dict[int, str] = {}
    for entry in (e.strip() for e in str(text).split(",")):
        if not entry:
            continue
        index, _, name = entry.partition(":")
        index, name = index.strip(), name.strip()
        if not index.isdigit() or not _ROW_NAME.fullmatch(name):
            raise ParameterError(
                f"{where} {text!r}: {entry!r} is not INDEX:NAME (a row number and a word); write e.g. 0:cls or "
                "0:cls,1:reg"
            )
        if int(index) in out:
            raise ParameterError(f"{where} {text!r} names row {index} twice; name each row once")
        out[int(index)] = name
    return out


def grid_frequencies(n: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """``base**(-k/n)`` for ``k < n`` as double-double (hi, lo) float64 arrays, read-only (shared:
    :func:`_trig.frequencies_once`)."""

    def compute() -> tuple[np.ndarray, np.ndarray]:
        with localcontext() as ctx:
            ctx.prec = 60
            values = _trig.geometric(Decimal(1), (-Decimal(base).ln() / Decimal(n)).exp(), n)
        return _trig.double_double(values)

    return _trig.frequencies_once(("grid", n, type(base), base), compute)


@dataclass(frozen=True)
class _GridSinusoidal(Encoding):
    """Shared machinery of the 2-D and 3-D grid encodings."""

    PROPERTIES = {
        "finite": True, "matches-spec": True, "bounded": True, "unique": True, "constant-norm": True,
        "equidistant": False, "offset-invariant": False, "shift-linear": False, "symmetric": False,
        "decay": False, "precision": False,
    }  # fmt: skip
    VIEWS = ("heatmap", "dot", "compare")

    NDIM: ClassVar[int] = 2
    EXTRA_ROWS_FROM = ("cls_token",)

    grid: str | None = param(None, "grid shape HxW (2-D) or TxHxW (3-D); rows are its cells in row-major order")
    cls_token: bool = param(False, "prepend an all-zero [CLS] row (MAE's cls_token=True)")
    base: float = param(10000.0, "frequency base (timm's temperature): w_k = base^(-k/F)", low=0.0, low_open=True)
    axis_order: str = param(
        "reversed", "column order of the axes: reversed (MAE: w first) or grid order", choices=AXIS_ORDERS
    )
    layout: str = param(
        "split", "per-axis [sin|cos], interleaved sin/cos, or sin-block [all sin | all cos]", choices=LAYOUTS
    )
    channels: str = param(
        "exact", "exact: dim divisible by 2*axes; ceil: round up and drop extra columns", choices=CHANNELS
    )

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "grid:grid_hints"

    # ----- grid and length --------------------------------------------------------------------------

    @classmethod
    def derive_length(cls, kwargs: dict[str, Any]) -> int | None:
        grid = kwargs.get("grid")
        if grid is None:
            return None
        shape = parse_grid(grid, cls.NDIM)
        cls_token = kwargs.get("cls_token", cls.__dataclass_fields__["cls_token"].default)
        return math.prod(shape) + int(bool(cls_token))

    @cached_property
    def shape(self) -> tuple[int, ...]:
        """The grid shape; a 2-D grid defaults to the square whose cells fill ``--len``."""
        if self.grid is not None:
            return parse_grid(self.grid, self.NDIM)
        cells = self.length - int(self.cls_token)
        side = math.isqrt(max(cells, 0))
        if self.NDIM == 2 and cells > 0 and side * side == cells:
            return (side, side)
        form = "HxW" if self.NDIM == 2 else "TxHxW"
        raise ParameterError(f"{self.KIND} needs grid={form} (e.g. grid={'14x14' if self.NDIM == 2 else '8x14x14'})")

    @property
    def n_freqs(self) -> int:
        return -(-self.dim // (2 * self.NDIM))

    def validate(self) -> None:
        shape = self.shape
        cells = math.prod(shape)
        expected = cells + int(self.cls_token)
        if self.length != expected:
            extra = " + 1 [CLS] row" if self.cls_token else ""
            raise ParameterError(
                f"{ref('length')} {self.length} does not match grid {'x'.join(map(str, shape))} = {cells} cells{extra} = "
                f"{expected} rows; omit {ref('length')} or pass {ref('length')} {expected}"
            )
        per = 2 * self.NDIM
        if self.channels == "exact" and self.dim % per:
            up = self.dim + per - self.dim % per
            raise ParameterError(
                f"{self.KIND} with channels=exact needs dim divisible by {per} ({self.NDIM} axes x sin/cos), got dim={self.dim}; "
                f"pass {ref('dim')} {up} or channels=ceil"
            )

    def extra_rows(self) -> dict[int, str]:
        """MAE's all-zero [CLS] row (``cls_token``) is no patch of the grid."""
        return {0: "cls"} if self.cls_token else {}

    # ----- tensors ----------------------------------------------------------------------------------
    def tensor_specs(self) -> dict[str, TensorSpec]:
        return {"pe": TensorSpec("pe", (self.length, self.dim), self.out_dtype)}

    @cached_property
    def _axis_tables(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per grid axis, sin and cos of ``p * w_k`` for every coordinate ``p`` (side x F, float64)."""
        w_hi, w_lo = grid_frequencies(self.n_freqs, self.base)
        out = []
        for side in self.shape:
            s, c = _trig.sincos(np.arange(side, dtype=np.float64), w_hi, w_lo)
            out.append((s, c))
        return out

    def _column_plan(self) -> list[tuple[int, int, slice]]:
        """(axis, 0 for sin / 1 for cos, destination columns) over the untruncated width 2*ndim*F."""
        f = self.n_freqs
        axes = list(range(self.NDIM))
        if self.axis_order == "reversed":
            axes.reverse()
        plan = []
        for slot, axis in enumerate(axes):
            if self.layout == "split":
                plan += [
                    (axis, 0, slice(2 * f * slot, 2 * f * slot + f)),
                    (axis, 1, slice(2 * f * slot + f, 2 * f * (slot + 1))),
                ]
            elif self.layout == "interleaved":
                plan += [
                    (axis, 0, slice(2 * f * slot, 2 * f * (slot + 1), 2)),
                    (axis, 1, slice(2 * f * slot + 1, 2 * f * (slot + 1), 2)),
                ]
            else:  # sin-block
                plan += [
                    (axis, 0, slice(f * slot, f * (slot + 1))),
                    (axis, 1, slice(f * (self.NDIM + slot), f * (self.NDIM + slot + 1))),
                ]
        return plan

    @cached_property
    def _pieces(self) -> dict[np.dtype, list[tuple[int, int, int, np.ndarray]]]:
        """Per output dtype: (axis, first column, last column + 1, values: side x columns in that dtype), one
        piece per contiguous run of an axis's columns (truncated to ``dim``), each value rounded once from the
        exact float64 table."""
        return {}

    def _pieces_for(self, dtype: np.dtype) -> list[tuple[int, int, int, np.ndarray]]:
        cache = self._pieces
        if dtype not in cache:
            full = 2 * self.NDIM * self.n_freqs
            per_axis: list[np.ndarray] = [np.full((side, full), np.nan) for side in self.shape]
            owner = np.full(full, -1)
            for axis, trig, cols in self._column_plan():
                per_axis[axis][:, cols] = self._axis_tables[axis][trig]
                owner[cols] = axis
            owner = owner[: self.dim]
            pieces = []
            edges = np.flatnonzero(np.diff(owner)) + 1
            for a, b in zip(np.r_[0, edges], np.r_[edges, self.dim]):
                axis = int(owner[a])
                pieces.append((axis, int(a), int(b), np.ascontiguousarray(per_axis[axis][:, a:b]).astype(dtype)))
            cache[dtype] = pieces
        return cache[dtype]

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        lead = int(self.cls_token)
        first = max(start, lead)
        if start < lead:
            out[: lead - start] = 0
        if first >= stop:
            return
        c0, c1 = first - lead, stop - lead  # grid cells, row-major
        body = out[first - start :]
        stride = 1
        strides = []
        for side in reversed(self.shape):
            strides.append(stride)
            stride *= side
        strides.reverse()
        for axis, a, b, values in self._pieces_for(out.dtype):
            _fill_axis(body[:, a:b], c0, c1, values, strides[axis], self.shape[axis])


#: Runs of at least this many rows with one coordinate are filled one broadcast row per run.
_RUN_ROWS = 16


def _fill_axis(out: np.ndarray, c0: int, c1: int, values: np.ndarray, stride: int, side: int) -> None:
    """``out[i] = values[((c0 + i) // stride) % side]`` for the cells ``[c0, c1)``: the coordinate of one axis of
    a row-major grid is constant over runs of ``stride`` cells and repeats every ``side * stride``; broadcast
    copies follow that structure (one row per run, or one copy of the whole table per period) instead of a
    gather per row."""
    if stride >= _RUN_ROWS:
        for q in range(c0 // stride, (c1 - 1) // stride + 1):
            a, b = max(q * stride, c0), min((q + 1) * stride, c1)
            out[a - c0 : b - c0] = values[q % side]
        return
    period = side * stride
    p0, p1 = -(-c0 // period) * period, (c1 // period) * period
    if p1 <= p0:
        out[...] = values[(np.arange(c0, c1) // stride) % side]
        return
    if p0 > c0:
        out[: p0 - c0] = values[(np.arange(c0, p0) // stride) % side]
    whole = out[p0 - c0 : p1 - c0]
    rs, cs = whole.strides
    periods = as_strided(whole, ((p1 - p0) // period, side, stride, whole.shape[1]), (rs * period, rs * stride, rs, cs))
    periods[...] = values[None, :, None, :]
    if c1 > p1:
        out[p1 - c0 :] = values[(np.arange(p1, c1) // stride) % side]


@dataclass(frozen=True)
class Sinusoidal2D(_GridSinusoidal):
    """2-D sin/cos patch-grid encoding ``pe`` ((cls +) H*W x dim), MAE layout by default."""

    KIND = "sinusoidal-2d"
    EXAMPLE = {"grid": "2x2", "dim": 8}
    SUMMARY = "2-D sin/cos image-patch grid encoding (MAE, timm, positional-encodings conventions)"
    REFERENCES = (
        "mae: facebookresearch/mae util/pos_embed.py get_2d_sincos_pos_embed ([sin w|cos w|sin h|cos h], see mae#18)",
        "timm: huggingface/pytorch-image-models timm/layers/pos_embed_sincos.py build_sincos2d_pos_embed (defaults)",
        "positional-encodings: tatp22/multidim-positional-encoding positional_encodings/torch_encodings.py PositionalEncoding2D",
    )
    PRESETS = {
        "mae": {"axis_order": "reversed", "layout": "split", "channels": "exact", "base": 10000.0},
        "timm": {"axis_order": "grid", "layout": "sin-block", "channels": "exact", "base": 10000.0},
        "positional-encodings": {"axis_order": "grid", "layout": "interleaved", "channels": "ceil", "base": 10000.0},
    }
    PRESET_DOCS = {
        "mae": "[sin w | cos w | sin h | cos h], F = dim/4 (dim % 4 == 0); add cls_token=true for MAE's models",
        "timm": "[sin h | sin w | cos h | cos w], F = dim/4: build_sincos2d_pos_embed(reverse_coord=False, interleave_sin_cos=False)",
        "positional-encodings": "[x: sin0 cos0 sin1 cos1 ... | y: ...], F = ceil(dim/4), truncated to dim: PositionalEncoding2D",
    }
    NDIM = 2


@dataclass(frozen=True)
class Sinusoidal3D(_GridSinusoidal):
    """3-D sin/cos video-grid encoding ``pe`` ((cls +) T*H*W x dim), positional-encodings layout by default."""

    KIND = "sinusoidal-3d"
    EXAMPLE = {"grid": "2x2x2", "dim": 12}
    SUMMARY = "3-D sin/cos video grid encoding (positional-encodings PositionalEncoding3D convention)"
    REFERENCES = (
        "positional-encodings: tatp22/multidim-positional-encoding positional_encodings/torch_encodings.py PositionalEncoding3D",
    )
    PRESETS = {
        "positional-encodings": {"axis_order": "grid", "layout": "interleaved", "channels": "ceil", "base": 10000.0},
    }
    PRESET_DOCS = {
        "positional-encodings": "[x | y | z], each sin0 cos0 sin1 cos1 ..., F = ceil(dim/6), truncated to dim: PositionalEncoding3D",
    }
    NDIM = 3

    axis_order: str = param("grid", "column order of the axes: grid order (t, h, w) or reversed", choices=AXIS_ORDERS)
    layout: str = param(
        "interleaved", "per-axis [sin|cos], interleaved sin/cos, or sin-block [all sin | all cos]", choices=LAYOUTS
    )
    channels: str = param("ceil", "exact: dim divisible by 6; ceil: round up and drop extra columns", choices=CHANNELS)
