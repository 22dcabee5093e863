"""Helpers shared by every check module: dtype tests, block sizes, one cached scan of a table, row hashes.

Checks are pure functions of a :class:`~posenc_cli.checkbase.CheckContext`. Work several checks need (the
finiteness/norm scan, the offset profile) is computed once per context and memoised on it, so running all
checks reads a table a bounded number of times.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np

from ..blocks import rows_per_block
from .base import CheckContext, CheckResult

NONFINITE = "table has non-finite values"
#: Why a property of row pairs is not judged on a one-row table (``unique`` fails it: it needs two rows).
ONE_ROW = "one row: nothing to compare"

T = TypeVar("T")


def blocks(ctx: CheckContext, array: np.ndarray | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """``ctx.blocks`` with a row count that keeps each float64 block in cache (:mod:`posenc_cli.blocks`); wide
    tables too, where ``BLOCK_ROWS`` would not bound the memory."""
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


def arith_bounds(ctx: CheckContext) -> tuple[float, float, float]:
    """What the table's arithmetic (``ctx.arithmetic``) allows beyond an exact table rounded once: the largest
    error of one value, of one row (Euclidean), and the root mean square of the rows' (0, 0, 0 for float64)."""
    a = ctx.arithmetic
    if a is None:
        return 0.0, 0.0, 0.0
    return a.value_bound(), a.norm_bound(), a.rms_norm_bound()


def fmt(x: float) -> str:
    return f"{x:.4g}"


# ----- row hashes ----------------------------------------------------------------------------------
def _hash_words(block: np.ndarray) -> np.ndarray:
    """A block's bit patterns as unsigned words of at most 32 bits, with -0.0 folded into +0.0 (equal values):
    4-byte values as one word, 8-byte values as two, 2-byte values two to a word."""
    b = np.ascontiguousarray(block)
    size = b.dtype.itemsize
    if b.ndim == 1:
        b = b[:, None]
    if size in (4, 8) and b.dtype.kind == "f":
        b = b + b.dtype.type(0)  # -0.0 + 0.0 = +0.0; every other value is unchanged
    elif size in (2, 4, 8):
        u = b.view(f"u{size}")
        sign_only = u.dtype.type(1 << (8 * size - 1))
        b = np.where(u == sign_only, u.dtype.type(0), u)
    else:
        return b.view(np.uint8)
    if size == 2:
        u16 = b.view(np.uint16)
        if u16.shape[1] % 2:
            u16 = np.concatenate([u16, np.zeros((u16.shape[0], 1), np.uint16)], axis=1)
        return np.ascontiguousarray(u16).view(np.uint32)
    return np.ascontiguousarray(b).view(np.uint32)


@functools.lru_cache(maxsize=8)
def _multipliers(n_words: int, seed: int) -> np.ndarray:
    mult = np.random.default_rng(seed).integers(0, 2**63, size=n_words, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    mult.flags.writeable = False
    return mult


def hash_block(block: np.ndarray, seed: int = 0x5EED) -> np.ndarray:
    """The 64-bit hashes of :func:`row_hashes` for one block."""
    words = _hash_words(block)
    mult = _multipliers(words.shape[1], seed)
    out = np.empty(words.shape[0], dtype=np.uint64)
    step = max(1, (1 << 16) // max(1, words.shape[1]))  # the uint64 copy stays in cache
    for a in range(0, words.shape[0], step):
        out[a : a + step] = words[a : a + step].astype(np.uint64) @ mult
    return out


def row_hashes(blocks_iter: Iterator[np.ndarray], cols: int, seed: int = 0x5EED) -> np.ndarray:
    """A 64-bit multilinear hash (sum of 32-bit words times random odd 64-bit multipliers, mod 2**64) per row.

    Equal rows always hash equal (integer arithmetic, no rounding; -0.0 and +0.0 count as equal); distinct rows
    collide with probability about 2**-32 per pair at worst, and callers confirm reported duplicates by comparing
    the rows. ``cols`` is the row width (kept for callers; the words are counted from the blocks).
    """
    out = [hash_block(b, seed) for b in blocks_iter]
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
