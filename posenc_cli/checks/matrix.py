r"""Property checks of relative schemes stored as len x len matrices: ALiBi ``bias`` (heads x len x len),
T5 ``buckets`` and Shaw ``index`` (len x len), with query ``i`` along rows and key ``j`` along columns.

Each check streams row blocks of one head and is exact in time linear in the matrix size: Toeplitz is
``M[1:, 1:] == M[:-1, :-1]``; monotonicity compares neighbouring columns of every row.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..formats import is_float
from .base import CheckContext, CheckResult
from .common import fmt, rows_per_block, skipped, tensor, verdict

#: The rules of ``monotone`` (a kind's ``MONOTONE`` names one): how entries may move with the distance.
MONOTONE_RULES = {
    "non-increasing-in-distance": "non-increasing in |i - j|",
    "non-decreasing-in-distance-each-side": "non-decreasing in |i - j| on each side",
    "non-decreasing-in-signed-distance": "non-decreasing in j - i",
}


def matrix(ctx: CheckContext) -> tuple[str, np.ndarray] | None:
    """(tensor name, heads x len x len view) of the source's ``matrix`` tensor, or None."""
    names = ctx.with_role("matrix")
    if not names:
        return None
    name = names[0]
    m = tensor(ctx, name)
    if m is None:
        return None
    if m.ndim == 2:
        m = m[None]
    if m.ndim == 3 and m.shape[1] == 1 and m.shape[2] > 1 and is_float(m.dtype):
        # an array-like of heads x len x len, read in row blocks as the matrices are
        return name, KeyRowBias(m)  # type: ignore[return-value]
    if m.ndim != 3 or m.shape[1] != m.shape[2]:
        return None
    return name, m


class KeyRowBias:
    """A model's own ALiBi tensor, heads x 1 x len (Bloom, Falcon, MPT: one bias per key position ``b[j]``,
    broadcast over the queries, the causal mask applied apart), read as the heads x len x len matrix the softmax
    sees: softmax is unchanged by a constant per query row, so ``b[j]`` is ``b[j] - b[i]`` for the keys ``j <= i``
    the causal mask keeps, and ``-inf`` (masked) for ``j > i``. On it, ``toeplitz`` and ``monotone`` say whether
    the model's bias is ALiBi's ``-m (i - j)``. Rows are made on demand, a block at a time."""

    def __init__(self, row: np.ndarray) -> None:
        self.row = row
        n = int(row.shape[2])
        self.shape = (int(row.shape[0]), n, n)
        self.ndim = 3
        self.dtype = row.dtype

    def __getitem__(self, key: tuple[int, slice]) -> np.ndarray:
        h, rows = key
        b = np.asarray(self.row[h, 0], dtype=np.float64)
        i = np.arange(self.shape[1])[rows]
        out = b[None, :] - b[i][:, None]
        out[np.arange(self.shape[2])[None, :] > i[:, None]] = -np.inf
        return out


def _per_head(ctx: CheckContext, name: str) -> bool:
    """Whether the matrix tensor holds one matrix per head (heads x len x len)."""
    m = tensor(ctx, name)
    return m is not None and m.ndim == 3


def need_matrix(ctx: CheckContext) -> tuple[str, np.ndarray]:
    """:func:`matrix` of a source that has one (a check runs only where ``has_matrix`` fits)."""
    found = matrix(ctx)
    assert found is not None, "a matrix check ran on a source without a matrix"
    return found


def has_matrix(ctx: CheckContext) -> bool:
    return matrix(ctx) is not None


def _tol(ctx: CheckContext, m: np.ndarray) -> float:
    if not is_float(m.dtype):
        return 0.0
    big = 0.0
    for _, _, blk in _row_blocks(m):
        fin = blk[np.isfinite(blk)]
        big = max(big, float(np.abs(fin).max()) if fin.size else 0.0)
    rtol = ctx.rtol
    if isinstance(m, KeyRowBias) and ctx.kind_cls is not None:
        # the arithmetic the kind says its model's tensor is computed in (Falcon's bfloat16 products): each of
        # b[j] and b[i] is off by up to half its unit, relative to the largest value
        computed = getattr(ctx.kind_cls, "ROW_FORM_ARITHMETIC", {}).get(str(_declared(ctx, "form")[0]))
        if computed is not None:
            import ml_dtypes

            rtol = max(rtol, float(ml_dtypes.finfo(computed).eps))
    return rtol * max(big, 1.0)


def _row_blocks(m: np.ndarray, extra: int = 0):
    """(head, first row, rows [a, b + extra) as float64 or int64) over every head."""
    n = m.shape[1]
    step = rows_per_block(n)
    dt = np.float64 if is_float(m.dtype) else np.int64
    for h in range(m.shape[0]):
        for a in range(0, n, step):
            b = min(a + step, n)
            yield h, a, np.asarray(m[h, a : min(b + extra, n)], dtype=dt)


def _nan_free(m: np.ndarray) -> bool:
    return not is_float(m.dtype) or not any(np.isnan(blk).any() for _, _, blk in _row_blocks(m))


def check_toeplitz(ctx: CheckContext) -> CheckResult:
    name, m = need_matrix(ctx)
    if not _nan_free(m):
        return skipped("toeplitz", "matrix has NaN values")
    tol = _tol(ctx, m)
    worst, where, count = 0.0, None, 0
    for h, a, blk in _row_blocks(m, extra=1):
        x, y = blk[1:, 1:], blk[:-1, :-1]  # M[i+1, j+1] vs M[i, j]
        same = x == y  # also true for equal infinities (ALiBi's causal mask)
        with np.errstate(invalid="ignore"):
            dev = np.where(same, 0.0, np.abs(x.astype(np.float64) - y))
        bad = dev > tol
        if bad.any():
            count += int(bad.sum())
            i = int(dev.argmax())
            if dev.flat[i] > worst or where is None:
                worst, where = float(dev.flat[i]), (h, a + i // dev.shape[1], i % dev.shape[1])
    heads = m.shape[0]
    per = " per head" if _per_head(ctx, name) else ""
    if count == 0:
        detail = f"{name} depends only on j - i{per}"
    else:
        assert where is not None
        h, i, j = where
        head = f"head {h}, " if _per_head(ctx, name) else ""
        detail = f"{count} entries break M[i+1, j+1] = M[i, j]; worst at {head}i={i}, j={j} (off by {fmt(worst)})"
    return verdict(
        "toeplitz",
        count == 0,
        worst,
        tol,
        detail,
        "exact (M[1:, 1:] vs M[:-1, :-1] in row blocks)",
        violations=count,
        heads=heads,
    )


def check_monotone(ctx: CheckContext) -> CheckResult:
    """The kind's ``MONOTONE`` rule over every neighbouring pair of every row: ``non-increasing-in-distance``
    (ALiBi biases fall with |i - j|), ``non-decreasing-in-distance-each-side`` (T5 buckets grow with |i - j| on
    each side of the diagonal; r = 0 belongs to the key-before-query side), ``non-decreasing-in-signed-distance``
    (Shaw's clip(j - i, -k, k) + k falls as keys move further *before* the query, so it is monotone in the
    signed distance, not in |i - j|; also the rule for a matrix of unknown kind)."""
    rule = (ctx.kind_cls.MONOTONE if ctx.kind_cls is not None else None) or "non-decreasing-in-signed-distance"
    name, m = need_matrix(ctx)
    if not _nan_free(m):
        return skipped("monotone", "matrix has NaN values")
    tol = _tol(ctx, m)
    n = m.shape[1]
    cols = np.arange(n - 1)[None, :]  # pair (j, j + 1)
    count, where = 0, None
    for h, a, blk in _row_blocks(m):
        left, right = blk[:, :-1], blk[:, 1:]
        rows = np.arange(a, a + blk.shape[0])[:, None]
        upper = cols >= rows  # both keys at or after the query
        lower = cols + 1 <= rows  # both keys at or before the query
        if rule == "non-increasing-in-distance":
            bad = (upper & ~(right <= left + tol)) | (lower & ~(right + tol >= left))
        elif rule == "non-decreasing-in-distance-each-side":
            bad = ((upper & (cols >= rows + 1)) & ~(right >= left)) | (lower & ~(left >= right))
        else:
            bad = ~(right >= left)
        if bad.any():
            count += int(bad.sum())
            if where is None:
                i = int(np.flatnonzero(bad)[0])
                where = (h, a + i // bad.shape[1], i % bad.shape[1])
    text = MONOTONE_RULES[rule]
    if count == 0:
        detail = f"{name} is {text}"
    else:
        assert where is not None
        h, i, j = where
        detail = (
            f"{name} is not {text}: {count} neighbouring pairs break it, first at row {i}, columns {j}, {j + 1}"
            + (f" (head {h})" if _per_head(ctx, name) else "")
        )
    return verdict("monotone", count == 0, count, 0, detail, "exact (every neighbouring pair of every row)", rule=text)


def _t5_side_buckets(distances: np.ndarray, n_side: int, max_distance: int) -> np.ndarray:
    """T5's bucket within one side for distances >= 0 (float64 logs; see relative.py for float32 exactness)."""
    max_exact = n_side // 2
    d = np.maximum(distances, 1).astype(np.float64)
    large = max_exact + np.floor(np.log(d / max_exact) / math.log(max_distance / max_exact) * (n_side - max_exact))
    return np.where(distances < max_exact, distances, np.minimum(large, n_side - 1)).astype(np.int64)


def _declared(ctx: CheckContext, key: str) -> tuple[Any, bool]:
    """(parameter ``key`` as the metadata states it, else the kind's default; whether the metadata stated it)."""
    stated = key in ctx.metadata
    if ctx.kind_cls is None:
        raise ValueError(f"{key}: a bucket matrix of unknown kind")  # has_matrix needs a declared kind
    return ctx.kind_cls.metadata_param(dict(ctx.metadata), key), stated


def check_t5_saturation(ctx: CheckContext) -> CheckResult:
    _, m = need_matrix(ctx)
    nb, got_nb = _declared(ctx, "num_buckets")
    md, got_md = _declared(ctx, "max_distance")
    bidi, _ = _declared(ctx, "bidirectional")
    n = m.shape[1]
    n_side = nb // 2 if bidi else nb
    dist = np.arange(n)
    before = _t5_side_buckets(dist, n_side, md)  # key at or before the query: bucket f(i - j)
    expected = set(before.tolist())
    if bidi:
        expected |= set((n_side + _t5_side_buckets(dist[1:], n_side, md)).tolist())
    used: set[int] = set()
    for _, _, blk in _row_blocks(m):
        used |= set(np.unique(blk).tolist())
    # Saturation: every distance >= max_distance sits in its side's last bucket (first column and first row).
    col = np.asarray(m[0, :, 0], dtype=np.int64)  # query i, key 0: distance i before
    row = np.asarray(m[0, 0, :], dtype=np.int64)  # query 0, key j: distance j after
    far = dist >= md
    sat_ok = bool(np.all(col[far] == n_side - 1))
    if bidi:
        sat_ok &= bool(np.all(row[far] == 2 * n_side - 1))
    else:
        sat_ok &= bool(np.all(row[1:] == 0))
    ok = sat_ok and used == expected
    assumed = [k for k, got in (("num_buckets", got_nb), ("max_distance", got_md)) if not got]
    note = f" (assumed the kind's defaults for {', '.join(assumed)})" if assumed else ""
    if ok:
        sat = f"saturates from distance {md}" if n > md else f"len {n} <= max_distance {md}: saturation not reached"
        detail = (
            f"{len(used)} buckets used as expected for num_buckets={nb}, bidirectional={str(bidi).lower()}; {sat}{note}"
        )
    elif not sat_ok:
        detail = f"distances >= max_distance={md} are not all in the last bucket{note}"
    else:
        detail = f"uses {len(used)} buckets, expected {len(expected)} for num_buckets={nb}, len={n}{note}; extra: {sorted(used - expected)[:8]}, missing: {sorted(expected - used)[:8]}"
    return verdict(
        "t5-saturation",
        ok,
        len(used),
        len(expected),
        detail,
        "exact (bucket set of the whole matrix; first row and column past max_distance)",
        num_buckets=nb,
        max_distance=md,
        bidirectional=bidi,
    )


__all__ = ["check_monotone", "check_t5_saturation", "check_toeplitz", "has_matrix", "matrix"]
