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
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import ParameterError, ref
from . import _trig
from .base import Encoding, TensorSpec, param

if TYPE_CHECKING:
    from .. import analysis as an
    from ..identification import Candidate

AXIS_ORDERS = ("reversed", "grid")
LAYOUTS = ("split", "interleaved", "sin-block")
CHANNELS = ("exact", "ceil")
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


def grid_frequencies(n: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """``base**(-k/n)`` for ``k < n`` as double-double (hi, lo) float64 arrays."""
    with localcontext() as ctx:
        ctx.prec = 60
        values = _trig.geometric(Decimal(1), (-Decimal(base).ln() / Decimal(n)).exp(), n)
    return _trig.double_double(values)


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

    @classmethod
    def identify_hints(cls, tensors: dict[str, Any], analysis: an.TableAnalysis) -> list[Candidate]:
        return _grid_hints(cls.KIND, cls.NDIM, analysis)

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


# ----- identification hints (read by posenc_cli.identification; analysis loads only when identifying) -
def _grid_plan(
    ndim_grid: int, f: int, d: int, axis_order: str, layout: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column: grid axis (0 = slowest), 0 for sin / 1 for cos, and frequency index k, for one convention."""
    axes = list(range(ndim_grid))
    if axis_order == "reversed":
        axes.reverse()
    width = 2 * ndim_grid * f
    ax, trig, k = np.full(width, -1), np.full(width, -1), np.full(width, -1)
    ks = np.arange(f)
    for slot, axis in enumerate(axes):
        if layout == "split":
            spans = [
                (0, np.arange(2 * f * slot, 2 * f * slot + f)),
                (1, np.arange(2 * f * slot + f, 2 * f * (slot + 1))),
            ]
        elif layout == "interleaved":
            spans = [
                (0, np.arange(2 * f * slot, 2 * f * (slot + 1), 2)),
                (1, np.arange(2 * f * slot + 1, 2 * f * (slot + 1), 2)),
            ]
        else:
            spans = [
                (0, np.arange(f * slot, f * (slot + 1))),
                (1, np.arange(f * (ndim_grid + slot), f * (ndim_grid + slot + 1))),
            ]
        for t, cols in spans:
            ax[cols], trig[cols], k[cols] = axis, t, ks
    return ax[:d], trig[:d], k[:d]


def _axis_frequencies(
    table: Any, first: int, stride: int, side: int, sin_cols: np.ndarray, cos_cols: np.ndarray
) -> np.ndarray:
    """Angular frequencies of one grid axis: the angle atan2(sin, cos) at coordinates 1, 2, 4, ..., side - 1,
    each unwrapped with the estimate from the shorter ones (error ~ ulp / coordinate)."""
    from .. import analysis as an

    coords = sorted({1, *[2**i for i in range(1, max(1, side - 1).bit_length())], side - 1} - {0})
    coords = [c for c in coords if c < side]
    x = an.read_rows(table, [first + stride * c for c in coords]).reshape(len(coords), -1)
    has_cos = cos_cols >= 0
    cc = np.where(has_cos, cos_cols, 0)
    # a sin column whose cos was truncated away: arcsin at coordinate 1 (w < pi/2 beyond the first frequency)
    w = np.where(has_cos, np.arctan2(x[0, sin_cols], x[0, cc]), np.arcsin(np.clip(x[0, sin_cols], -1, 1)))
    for row, c in zip(x[1:], coords[1:]):
        theta = np.arctan2(row[sin_cols], row[cc])
        pred = c * w
        w = np.where(has_cos, (theta + an.TWO_PI * np.round((pred - theta) / an.TWO_PI)) / c, w)
    return w


def _factorizations(cells: int, k: int) -> list[tuple[int, ...]]:
    """Every ordered way to write ``cells`` as a product of ``k`` positive integers."""
    if k == 1:
        return [(cells,)]
    out = []
    for a in range(1, cells + 1):
        if cells % a == 0:
            out += [(a, *rest) for rest in _factorizations(cells // a, k - 1)]
    return out


def _grid_hints(kind: str, ndim_grid: int, ana: an.TableAnalysis) -> list[Candidate]:
    """Find the grid shape, axis order and layout by exact equalities: moving one step along axis ``a`` changes
    exactly the columns the layout gives to ``a`` (values at equal coordinates are computed identically, so
    this holds bit for bit whatever the dtype); then each axis' frequencies give the base."""
    from .. import analysis as an
    from ..identification import Candidate, round_variants

    if ana.ndim != 2 or not ana.floating or ana.n < 1:
        return []
    first = 1 if ana.n > 1 and 0 in ana.zero_rows.tolist() else 0
    cells = ana.n - first
    if cells < 1 or cells > 1 << 24:
        return []
    d = ana.width
    f = -(-d // (2 * ndim_grid))
    row0 = an.read_rows(ana.table, [first])[0]
    trig_of = np.where(row0 == 0, 0, np.where(row0 == 1, 1, -1))
    plans = []
    for axis_order in ("reversed", "grid"):
        for layout in ("split", "interleaved", "sin-block"):
            exp_axis, exp_trig, exp_k = _grid_plan(ndim_grid, f, d, axis_order, layout)
            if np.array_equal(exp_trig, trig_of):
                plans.append((axis_order, layout, exp_axis, exp_k))
    if not plans:
        return []
    rng = np.random.default_rng(0)
    cache: dict[int, np.ndarray] = {}

    def row(r: int) -> np.ndarray:
        if r not in cache:
            cache[r] = an.read_rows(ana.table, [first + r])[0]
        return cache[r]

    out = []
    shapes = _factorizations(cells, ndim_grid)
    for shape in shapes:
        strides = [math.prod(shape[a + 1 :]) for a in range(ndim_grid)]
        for axis_order, layout, exp_axis, exp_k in plans:
            ok = True
            for a in range(ndim_grid):
                if shape[a] < 2:
                    # an axis of length 1 never changes: its columns equal the first row's everywhere
                    mine_all = exp_axis == a
                    if mine_all.any() and any(
                        not np.array_equal(row(int(r))[mine_all], row0[mine_all])
                        for r in rng.integers(0, cells, size=6)
                    ):
                        ok = False
                        break
                    continue
                others = exp_axis != a
                mine = (exp_axis == a) & (exp_k == 0)
                # cells r (coordinate a below its last value) and r + stride_a differ in axis a only: along the
                # whole line of axis a through the origin (a wrong side length crosses a true boundary there), and
                # at a few random cells
                line = [c * strides[a] for c in range(min(shape[a] - 1, 512))]
                starts = line + [int(x) for x in rng.integers(0, cells, size=6)]
                for r in starts:
                    coord = (r // strides[a]) % shape[a]
                    if coord == shape[a] - 1:
                        r -= strides[a]
                    x0, x1 = row(r), row(r + strides[a])
                    moved = not mine.any() or not np.array_equal(x0[mine], x1[mine])
                    if not np.array_equal(x0[others], x1[others]) or not moved:
                        ok = False
                        break
                if not ok:
                    break
            if not ok:
                continue
            grid = "x".join(map(str, shape))
            params = {
                "length": ana.n,
                "dim": d,
                "grid": grid,
                "cls_token": bool(first),
                "axis_order": axis_order,
                "layout": layout,
                "channels": "exact" if d % (2 * ndim_grid) == 0 else "ceil",
            }
            # with dim divisible, ceil builds the same table: offer it too, so a preset that says ceil is named
            channel_options = ["exact", "ceil"] if params["channels"] == "exact" else ["ceil"]
            if ana.dtype_param:
                params["dtype"] = ana.dtype_param
            bases = [10000.0]
            _, exp_trig, _ = _grid_plan(ndim_grid, f, d, axis_order, layout)
            # the longest axis that has a sin/cos pair beyond k = 0 (truncated columns may lack one)
            for axis in sorted(range(ndim_grid), key=lambda a: -shape[a]):
                pairs = []
                for k in range(1, f):
                    sc = np.flatnonzero((exp_axis == axis) & (exp_trig == 0) & (exp_k == k))
                    cc = np.flatnonzero((exp_axis == axis) & (exp_trig == 1) & (exp_k == k))
                    if sc.size:
                        pairs.append((k, sc[0], cc[0] if cc.size else -1))
                if shape[axis] < 2 or not pairs:
                    continue
                w = _axis_frequencies(
                    ana.table,
                    first,
                    strides[axis],
                    shape[axis],
                    np.array([p[1] for p in pairs]),
                    np.array([p[2] for p in pairs]),
                )
                e = np.array([p[0] for p in pairs]) / f
                good = w > 0
                if good.any():
                    log_base = -float(np.sum(e[good] * np.log(w[good])) / np.sum(e[good] ** 2))
                    bases = round_variants(math.exp(log_base), tols=(1e-8, 1e-6, 1e-4, 1e-3, 1e-2))
                break
            note = f"{grid} grid, {layout} per axis, {axis_order} axes"
            for b in bases:
                for ch in channel_options:
                    out.append(Candidate(kind, {**params, "base": b, "channels": ch}, note=note))
        if len(out) >= 24:
            break
    return out
