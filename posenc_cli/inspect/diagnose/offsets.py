"""Row offsets: rows compared by signatures that reordering, negating or scaling columns leave unchanged, and
the offsets where the reference holds A's first row (one streaming pass)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import analysis as an
from .. import tolerance


# ----- row offsets by signature -------------------------------------------------------------------------------------
def _signature(x: np.ndarray) -> np.ndarray:
    """Per row, two numbers unchanged by reordering, negating or scaling the columns."""
    x = np.nan_to_num(np.asarray(x, dtype=np.float64), posinf=0.0, neginf=0.0)
    s2 = np.einsum("ij,ij->i", x, x)
    s1 = np.sum(np.abs(x), axis=1)
    s4 = np.einsum("ij,ij->i", x * x, x * x)
    d = max(x.shape[1], 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.stack([s1 / np.sqrt(s2 * d), s4 / (s2 * s2)], axis=1)


def plausible(xa: np.ndarray, xb: np.ndarray) -> bool:
    """Whether rows of A can be rows of B up to column order, signs, scale and rounding (by their signatures)."""
    sa, sb = _signature(xa), _signature(xb)
    both = np.isfinite(sa) & np.isfinite(sb)
    return bool(
        np.all(np.abs(sa[both] - sb[both]) <= tolerance.SIGNATURE_TOL)
        and np.array_equal(np.isfinite(sa), np.isfinite(sb))
    )


def scan_offsets(probe: Any, target: Any, limit: int = 6) -> list[int]:
    """Rows of ``target`` whose signature matches the first row of ``probe`` (one streaming pass over
    ``target``); the closest ``limit`` as offsets ``target_row - 0``."""
    sig0 = _signature(an.read_rows(probe, [0]).reshape(1, -1))[0]
    if not np.all(np.isfinite(sig0)):
        return []
    n = int(target.shape[0])
    best_d: list[np.ndarray] = []
    best_i: list[np.ndarray] = []
    for start in range(0, n, an.SCAN_ROWS):
        stop = min(n, start + an.SCAN_ROWS)
        block = target[start:stop] if isinstance(target, np.ndarray) else target.rows(start, stop)
        block = np.asarray(block).reshape(stop - start, -1)
        if block.dtype.kind != "f" or block.dtype.itemsize < 4:
            block = block.astype(np.float32)
        s2 = np.einsum("ij,ij->i", block, block, dtype=np.float64)
        s1 = np.sum(np.abs(block), axis=1, dtype=np.float64)
        sq = block * block
        s4 = np.einsum("ij,ij->i", sq, sq, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            sig = np.stack([s1 / np.sqrt(s2 * block.shape[1]), s4 / (s2 * s2)], axis=1)
        dist = np.nan_to_num(np.max(np.abs(sig - sig0), axis=1), nan=np.inf)
        keep = np.argsort(dist)[:limit]
        best_d.append(dist[keep])
        best_i.append(start + keep)
    d = np.concatenate(best_d)
    i = np.concatenate(best_i)
    order = np.argsort(d)[:limit]
    return [int(i[k]) for k in order if d[k] < tolerance.SIGNATURE_MATCH]
