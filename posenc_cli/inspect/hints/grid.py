"""Identification hints of the grid kinds: which parameters a table's structure implies (moved out of
``encodings/grid.py`` so that the kinds do not import the inspection code; the kind names its reader in
``IDENTIFY``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import analysis as an
from .. import tolerance
from ..candidates import Candidate

# ----- identification hints (read by posenc_cli.inspect.identification; analysis loads only when identifying) -
#: The column structures the reader knows, in the order a grid kind declares its layouts: per axis [sin | cos],
#: per axis interleaved sin/cos, [all sin | all cos].
_SPLIT, _INTERLEAVED, _SIN_BLOCK = range(3)
#: The axis orders it knows, in the order the kind declares them: the last axis first, or grid order.
_REVERSED, _GRID_ORDER = range(2)


def _grid_plan(
    ndim_grid: int, f: int, d: int, axis_order: int, layout: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column: grid axis (0 = slowest), 0 for sin / 1 for cos, and frequency index k, for one convention
    (``axis_order`` and ``layout`` are the structures above)."""
    axes = list(range(ndim_grid))
    if axis_order == _REVERSED:
        axes.reverse()
    width = 2 * ndim_grid * f
    ax, trig, k = np.full(width, -1), np.full(width, -1), np.full(width, -1)
    ks = np.arange(f)
    for slot, axis in enumerate(axes):
        if layout == _SPLIT:
            spans = [
                (0, np.arange(2 * f * slot, 2 * f * slot + f)),
                (1, np.arange(2 * f * slot + f, 2 * f * (slot + 1))),
            ]
        elif layout == _INTERLEAVED:
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


def grid_hints(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """2-D / 3-D grid tables: the kind class says its name and grid rank (``KIND``, ``NDIM``)."""
    from . import declared, layouts

    return _grid_hints(kind_cls.KIND, kind_cls.NDIM, ana, layouts(kind_cls, 3), declared(kind_cls, "axis_order", 2))


def _grid_hints(
    kind: str, ndim_grid: int, ana: an.TableAnalysis, layout_names: tuple[str, ...], order_names: tuple[str, ...]
) -> list[Candidate]:
    """Find the grid shape, axis order and layout by exact equalities: moving one step along axis ``a`` changes
    exactly the columns the layout gives to ``a`` (values at equal coordinates are computed identically, so
    this holds bit for bit whatever the dtype); then each axis' frequencies give the base."""
    from .. import analysis as an
    from ..candidates import Candidate

    if ana.ndim != 2 or not ana.floating or ana.n < 1:
        return []
    first = 1 if ana.n > 1 and 0 in ana.zero_rows.tolist() else 0
    cells = ana.n - first
    if cells < 1 or cells > 1 << 24:
        return []
    d = ana.width
    f = -(-d // (2 * ndim_grid))
    row0 = an.read_rows(ana.table, [first])[0]
    plans = _grid_plans(ndim_grid, f, d, row0, layout_names, order_names)
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
        for axis_order, layout, exp_axis, exp_k, exp_trig in plans:
            if not _moves_by_axis(shape, strides, exp_axis, exp_k, row, row0, rng, cells):
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
            bases = _grid_bases(ana, first, f, shape, strides, exp_axis, exp_trig, exp_k)
            note = f"{grid} grid, {layout} per axis, {axis_order} axes"
            for b in bases:
                for ch in channel_options:
                    out.append(Candidate(kind, {**params, "base": b, "channels": ch}, note=note))
        if len(out) >= 24:
            break
    return out


def _grid_plans(
    ndim_grid: int, f: int, d: int, row0: np.ndarray, layout_names: tuple[str, ...], order_names: tuple[str, ...]
) -> list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]:
    """The (axis order, layout) conventions whose sin/cos columns match the first cell's row ``row0`` (sin 0 = 0,
    cos 0 = 1), each with its per-column axis, frequency index and sin/cos plan (:func:`_grid_plan`)."""
    trig_of = np.where(row0 == 0, 0, np.where(row0 == 1, 1, -1))
    plans = []
    for order_i, axis_order in enumerate(order_names):
        for layout_i, layout in enumerate(layout_names):
            exp_axis, exp_trig, exp_k = _grid_plan(ndim_grid, f, d, order_i, layout_i)
            if np.array_equal(exp_trig, trig_of):
                plans.append((axis_order, layout, exp_axis, exp_k, exp_trig))
    return plans


def _moves_by_axis(
    shape: tuple[int, ...],
    strides: list[int],
    exp_axis: np.ndarray,
    exp_k: np.ndarray,
    row: Any,
    row0: np.ndarray,
    rng: np.random.Generator,
    cells: int,
) -> bool:
    """Whether a grid of ``shape`` fits the table read by ``row(r)`` (cell r): a step along each axis changes
    that axis' columns (its k = 0 column at least) and no other, bit for bit; an axis of length 1 never changes."""
    ndim_grid = len(shape)
    for a in range(ndim_grid):
        if shape[a] < 2:
            # an axis of length 1 never changes: its columns equal the first row's everywhere
            mine_all = exp_axis == a
            if mine_all.any() and any(
                not np.array_equal(row(int(r))[mine_all], row0[mine_all]) for r in rng.integers(0, cells, size=6)
            ):
                return False
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
                return False
    return True


def _grid_bases(
    ana: an.TableAnalysis,
    first: int,
    f: int,
    shape: tuple[int, ...],
    strides: list[int],
    exp_axis: np.ndarray,
    exp_trig: np.ndarray,
    exp_k: np.ndarray,
) -> list[float]:
    """The base read from the frequencies of the longest axis that has a sin/cos pair beyond k = 0 (truncated
    columns may lack one), as round variants; :data:`posenc_cli.inspect.tolerance.DEFAULT_BASE` when none has."""
    from ..candidates import round_variants

    bases = [tolerance.DEFAULT_BASE]
    for axis in sorted(range(len(shape)), key=lambda a: -shape[a]):
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
            bases = round_variants(math.exp(log_base), tols=tolerance.GRID_BASE_ROUNDINGS)
        break
    return bases
