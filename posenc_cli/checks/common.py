"""Helpers shared by every check module: dtype tests, block sizes, one cached scan of a table, row hashes.

Checks are pure functions of a :class:`~posenc_cli.checkbase.CheckContext`. Work several checks need (the
finiteness/norm scan, the offset profile) is computed once per context and memoised on it, so running all
checks reads a table a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .base import CheckContext, CheckResult

#: float64 elements per working block (16 MiB): bounds memory for wide tables, where BLOCK_ROWS would not.
BLOCK_ELEMS = 1 << 21
NONFINITE = "table has non-finite values"

T = TypeVar("T")


def rows_per_block(row_elems: int, budget: int = BLOCK_ELEMS) -> int:
    return max(1, budget // max(1, row_elems))


def blocks(ctx: CheckContext, array: np.ndarray | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """``ctx.blocks`` with a row count that keeps each float64 block near :data:`BLOCK_ELEMS`."""
    a = ctx.table if array is None else array
    per_row = int(np.prod(a.shape[1:], dtype=np.int64)) if a.ndim > 1 else 1
    return ctx.blocks(a, rows=rows_per_block(per_row))


def f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def memo(ctx: CheckContext, key: str, make: Callable[[], T]) -> T:
    """Compute ``make()`` once per context (stored on the context object; contexts are per source)."""
    cache = ctx.__dict__.setdefault("_check_cache", {})
    if key not in cache:
        cache[key] = make()
    return cache[key]


def tensor(ctx: CheckContext, name: str) -> np.ndarray | None:
    """Tensor ``name`` of the source, or None; fetched once per context (sources may compute it on access)."""
    if name not in ctx.tensors:
        return None
    return memo(ctx, f"tensor:{name}", lambda: ctx.tensors[name])


def verdict(
    name: str, ok: bool, value: Any, tolerance: Any, detail: str, method: str = "exact", **data: Any
) -> CheckResult:
    return CheckResult(name, bool(ok), value, tolerance, detail, method, data)


def skipped(
    name: str, detail: str = NONFINITE, report: bool = False, needs: tuple[str, ...] = ("finite",)
) -> CheckResult:
    """The result of a check that cannot measure this table because ``needs`` failed (status NOT RUN: neither
    a pass nor a fail of its own; a required property that did not run still fails the verdict)."""
    return CheckResult(name, None, None, None, detail, "skipped", needs=needs)


def fmt(x: float) -> str:
    return f"{x:.4g}"


# ----- one scan of the primary table ---------------------------------------------------------------
@dataclass
class Scan:
    """What one pass over a 2-D table measures: finiteness, magnitude and row norms."""

    rows: int
    cols: int
    nan: int
    inf: int
    max_abs: float  # over finite entries
    norms: np.ndarray  # float64 row norms (NaN for rows with non-finite entries)

    @property
    def finite(self) -> bool:
        return self.nan == 0 and self.inf == 0

    @property
    def max_norm(self) -> float:
        return float(np.nanmax(self.norms)) if self.rows and not np.all(np.isnan(self.norms)) else 0.0

    @property
    def rms_norm(self) -> float:
        return float(np.sqrt(np.nanmean(self.norms**2))) if self.rows else 0.0


def scan(ctx: CheckContext) -> Scan:
    def make() -> Scan:
        t = ctx.table
        nan = inf = 0
        max_abs = 0.0
        norms = np.empty(t.shape[0], dtype=np.float64)
        for a, b in blocks(ctx):
            fin = np.isfinite(b)
            if not fin.all():
                nan += int(np.isnan(b).sum())
                inf += int(np.isinf(b).sum())
                bad = ~fin.all(axis=1)
                b = np.where(fin, b, 0.0)
            else:
                bad = None
            if b.size:
                max_abs = max(max_abs, float(np.abs(b).max()))
            n = np.sqrt(np.einsum("ij,ij->i", b, b))
            if bad is not None:
                n[bad] = np.nan
            norms[a : a + len(b)] = n
        return Scan(t.shape[0], t.shape[1], nan, inf, max_abs, norms)

    return memo(ctx, "scan", make)


# ----- row hashes ----------------------------------------------------------------------------------
def _uint_view(block: np.ndarray) -> np.ndarray:
    """The bit patterns of a block as unsigned integers, with -0.0 folded into +0.0 (equal values)."""
    u = np.ascontiguousarray(block).view(f"u{block.dtype.itemsize}")
    sign_only = u.dtype.type(1 << (8 * u.dtype.itemsize - 1))
    return np.where(u == sign_only, u.dtype.type(0), u)


def row_hashes(blocks_iter: Iterator[np.ndarray], cols: int, seed: int = 0x5EED) -> np.ndarray:
    """A 64-bit multilinear hash (sum of bit patterns times random odd multipliers, mod 2**64) per row.

    Equal rows always hash equal (integer arithmetic, no rounding); distinct rows collide with probability
    about 2**-60 per pair, and callers confirm reported duplicates by comparing the rows.
    """
    mult = np.random.default_rng(seed).integers(0, 2**63, size=cols, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    out = []
    for b in blocks_iter:
        u = _uint_view(b).astype(np.uint64)
        with np.errstate(over="ignore"):
            out.append((u * mult).sum(axis=1, dtype=np.uint64))
    return np.concatenate(out) if out else np.empty(0, np.uint64)


def duplicate_groups(hashes: np.ndarray) -> tuple[int, np.ndarray]:
    """(number of distinct hashes, index pairs (i, j) of one representative duplicate per repeated hash)."""
    if hashes.size == 0:
        return 0, np.empty((0, 2), np.int64)
    order = np.argsort(hashes, kind="stable")
    h = hashes[order]
    same = h[1:] == h[:-1]
    distinct = int(h.size - same.sum())
    firsts = np.flatnonzero(same & np.r_[True, ~same[:-1]])  # first position of each repeated run
    return distinct, np.stack([order[firsts], order[firsts + 1]], axis=1)


def raw_positions_distinct(length: int, dtype: Any) -> int:
    """How many of the integers 0..length-1 stay distinct when cast to ``dtype`` (finite values only)."""
    with np.errstate(over="ignore"):
        v = np.arange(length, dtype=np.float64).astype(dtype).astype(np.float64)
    return int(np.unique(v[np.isfinite(v)]).size)
