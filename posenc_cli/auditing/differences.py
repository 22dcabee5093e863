"""The largest |difference| of two tables and where it lies, read block by block (memory stays a few blocks,
whatever the length), binned for the pictures of a diverging row (:class:`~.report.Picture`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..blocks import rows_per_block
from .report import Picture

#: the pictures' resolution: position bins and column bins
POSITION_BINS = 256
COLUMN_BINS = 64

Rows = Callable[[int, int], np.ndarray]


@dataclass
class Difference:
    """``max_abs`` at (``row``, ``column``) of ``tensor``, and the binned picture of it."""

    tensor: str
    max_abs: float
    row: int
    column: int
    picture: Picture | None


@dataclass
class Side:
    """One tensor of two tables to measure: ``a(start, stop)`` and ``b(start, stop)`` give its rows (2-D, or
    flattened after the first axis to ``columns``); ``on_block(start, stop, xa, xb)`` sees each block of both sides
    in float64 (another reading of the same rows, without computing them again)."""

    tensor: str
    a: Rows
    b: Rows
    columns: int
    on_block: Callable[..., None] | None = None


class _Running:
    """The largest |a - b| of one tensor so far, and the binned maxima for its picture."""

    def __init__(self, side: Side, rows: int, pictures: bool) -> None:
        self.side, self.rows, self.pictures = side, rows, pictures
        columns = side.columns
        self.edges = np.linspace(0, rows, min(rows, POSITION_BINS) + 1).astype(np.int64)
        self.cedges = np.linspace(0, columns, min(columns, COLUMN_BINS) + 1).astype(np.int64)
        self.by_position = np.zeros(len(self.edges) - 1)
        self.grid = np.zeros((len(self.edges) - 1, len(self.cedges) - 1))
        self.by_column = np.zeros(columns)
        self.best, self.where = -1.0, (0, 0)

    def add(self, start: int, stop: int) -> None:
        side = self.side
        xa = np.asarray(side.a(start, stop), dtype=np.float64)
        xb = np.asarray(side.b(start, stop), dtype=np.float64)
        if side.on_block is not None:
            side.on_block(start, stop, xa, xb)
        self.take(start, stop, xa, xb)

    def take(self, start: int, stop: int, xa: np.ndarray, xb: np.ndarray) -> None:
        """Rows ``start:stop`` of both sides (float64), read by the caller; blocks in row order."""
        d = np.abs(xa - xb)
        d = d.reshape(stop - start, -1)
        d[np.isnan(d)] = np.inf  # nan on one side; both nan is also no agreement to report
        i = int(np.argmax(d))
        if d.flat[i] > self.best:
            self.best, self.where = float(d.flat[i]), (start + i // d.shape[1], i % d.shape[1])
        if not self.pictures:
            return
        edges = self.edges
        np.maximum(self.by_column, d.max(axis=0), out=self.by_column)
        row_max = d.max(axis=1)
        col_max = np.maximum.reduceat(d, self.cedges[:-1], axis=1)
        # the position bins this block touches
        first = int(np.searchsorted(edges, start, side="right")) - 1
        last = int(np.searchsorted(edges, stop - 1, side="right")) - 1
        for k in range(first, last + 1):
            lo, hi = max(edges[k], start) - start, min(edges[k + 1], stop) - start
            if hi > lo:
                self.by_position[k] = max(self.by_position[k], float(row_max[lo:hi].max()))
                np.maximum(self.grid[k], col_max[lo:hi].max(axis=0), out=self.grid[k])

    def result(self) -> Difference:
        tensor, best, where = self.side.tensor, max(self.best, 0.0), self.where
        if not self.pictures:
            return Difference(tensor, best, where[0], where[1], None)
        picture = Picture(
            tensor=tensor,
            rows=self.rows,
            columns=self.side.columns,
            positions=[int(x) for x in self.edges[:-1]],
            by_position=self.by_position.tolist(),
            by_column=self.by_column.tolist(),
            grid=self.grid.tolist(),
        )
        return Difference(tensor, best, where[0], where[1], picture)


def differences(sides: list[Side], rows: int, pictures: bool = True) -> list[Difference]:
    """|a - b| of each tensor of ``sides`` over ``rows`` rows, in float64, read block by block with the blocks
    outermost: every tensor's rows ``[start, stop)`` are read before the next block's, so a table whose tensors
    share one computation (cos and sin of the same angles) computes each block once. A nan on one side only
    counts as an infinite difference. ``pictures=False`` measures the largest difference only (no binning;
    ``picture`` is None)."""
    running = [_Running(side, rows, pictures) for side in sides]
    block = rows_per_block(max([1, *(side.columns for side in sides)]))  # (steps side by side hold little memory)
    for start in range(0, rows, block):
        stop = min(rows, start + block)
        for r in running:
            r.add(start, stop)
    return [r.result() for r in running]


def difference(
    tensor: str,
    a: Rows,
    b: Rows,
    rows: int,
    columns: int,
    on_block: Callable[..., None] | None = None,
    pictures: bool = True,
) -> Difference:
    """:func:`differences` of one tensor."""
    return differences([Side(tensor, a, b, columns, on_block)], rows, pictures)[0]


class Pushed:
    """The differences of tensors whose blocks a caller reads itself and pushes, in row order (:meth:`take`): what
    :func:`differences` gives for the same rows, without reading them again."""

    def __init__(self, tensors: list[str], rows: int, columns: int, pictures: bool = True) -> None:
        self.running = [_Running(Side(t, _unread, _unread, columns), rows, pictures) for t in tensors]

    def take(self, start: int, stop: int, xa: list[np.ndarray], xb: list[np.ndarray]) -> None:
        """Rows ``start:stop`` of each tensor of both sides (float64), in the order the tensors were given."""
        for r, a, b in zip(self.running, xa, xb):
            r.take(start, stop, a, b)

    def result(self) -> list[Difference]:
        return [r.result() for r in self.running]


def _unread(start: int, stop: int) -> np.ndarray:
    raise AssertionError("a pushed difference reads no rows")  # pragma: no cover


def worst(diffs: list[Difference]) -> Difference | None:
    """The difference with the largest ``max_abs`` (the first on ties)."""
    return max(diffs, key=lambda d: d.max_abs) if diffs else None


def of_arrays(tensor: str, a: np.ndarray, b: np.ndarray) -> Difference:
    """:func:`difference` of two 2-D arrays held already (or memory-mapped)."""
    return difference(tensor, lambda s, e: a[s:e], lambda s, e: b[s:e], int(a.shape[0]), int(np.prod(a.shape[1:])))
