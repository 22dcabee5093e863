"""The largest |difference| of two tables and where it lies, read block by block (memory stays a few blocks,
whatever the length), binned for the pictures of a diverging row (:class:`~.report.Picture`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .report import Picture

#: rows per block: 8192 rows of a 128-wide float64 table are 8 MiB
BLOCK_ROWS = 8192
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


def difference(
    tensor: str,
    a: Rows,
    b: Rows,
    rows: int,
    columns: int,
    on_block: Callable[..., None] | None = None,
    pictures: bool = True,
) -> Difference:
    """|a - b| over ``rows`` x ``columns`` (``a(start, stop)`` and ``b(start, stop)`` give row ranges), in float64;
        a nan on one side only counts as an infinite difference. ``on_block(start, stop, xa, xb)`` sees each block of
        both sides in float64 (another reading of the same rows, without computing them again). ``pictures=False``
    measures the largest difference only (no binning; ``picture`` is None)."""
    edges = np.linspace(0, rows, min(rows, POSITION_BINS) + 1).astype(np.int64)
    cedges = np.linspace(0, columns, min(columns, COLUMN_BINS) + 1).astype(np.int64)
    by_position = np.zeros(len(edges) - 1)
    grid = np.zeros((len(edges) - 1, len(cedges) - 1))
    by_column = np.zeros(columns)
    best, where = -1.0, (0, 0)
    for start in range(0, rows, BLOCK_ROWS):
        stop = min(rows, start + BLOCK_ROWS)
        xa, xb = np.asarray(a(start, stop), dtype=np.float64), np.asarray(b(start, stop), dtype=np.float64)
        if on_block is not None:
            on_block(start, stop, xa, xb)
        d = np.abs(xa - xb)
        d = d.reshape(stop - start, -1)
        d[np.isnan(d)] = np.inf  # nan on one side; both nan is also no agreement to report
        i = int(np.argmax(d))
        if d.flat[i] > best:
            best, where = float(d.flat[i]), (start + i // d.shape[1], i % d.shape[1])
        if not pictures:
            continue
        np.maximum(by_column, d.max(axis=0), out=by_column)
        row_max = d.max(axis=1)
        col_max = np.maximum.reduceat(d, cedges[:-1], axis=1)
        # the position bins this block touches
        first = int(np.searchsorted(edges, start, side="right")) - 1
        last = int(np.searchsorted(edges, stop - 1, side="right")) - 1
        for k in range(first, last + 1):
            lo, hi = max(edges[k], start) - start, min(edges[k + 1], stop) - start
            if hi > lo:
                by_position[k] = max(by_position[k], float(row_max[lo:hi].max()))
                np.maximum(grid[k], col_max[lo:hi].max(axis=0), out=grid[k])
    if not pictures:
        return Difference(tensor, max(best, 0.0), where[0], where[1], None)
    picture = Picture(
        tensor=tensor,
        rows=rows,
        columns=columns,
        positions=[int(x) for x in edges[:-1]],
        by_position=by_position.tolist(),
        by_column=by_column.tolist(),
        grid=grid.tolist(),
    )
    return Difference(tensor, max(best, 0.0), where[0], where[1], picture)


def worst(diffs: list[Difference]) -> Difference | None:
    """The difference with the largest ``max_abs`` (the first on ties)."""
    return max(diffs, key=lambda d: d.max_abs) if diffs else None


def of_arrays(tensor: str, a: np.ndarray, b: np.ndarray) -> Difference:
    """:func:`difference` of two 2-D arrays held already (or memory-mapped)."""
    return difference(tensor, lambda s, e: a[s:e], lambda s, e: b[s:e], int(a.shape[0]), int(np.prod(a.shape[1:])))
