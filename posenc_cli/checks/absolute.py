r"""Property checks of an absolute table :math:`P` (len x dim): one row per position.

Every check reads the table in row blocks (it may be memory-mapped) and runs in time about linear in its
size; where the exact answer would need the len x len Gram matrix, a randomized test (Freivalds) or a
sampled search stands in, and ``method`` says so. Tolerances scale with the table's dtype (``ctx.rtol``)
and with the magnitudes involved (the largest row norm ``s``): distances and norms use ``rtol * s``, dot
products ``rtol * s**2``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..blocks import rows_per_block
from . import sweep
from .base import CheckContext, CheckResult
from .common import (
    ONE_ROW,
    arith_bounds,
    duplicate_groups,
    f64,
    fmt,
    hash_block,
    memo,
    raw_positions_distinct,
    skipped,
    verdict,
)
from .sweep import Block, Feed, register, scan, shared

#: Exact Gram-matrix search for the closest pair up to this many rows; beyond it a sampled search.
EXACT_UNIQUE_ROWS = 4096
#: How many offsets k the exact offset checks measure (1, 2, 3, 5, 8, ... up to len - 1).
N_OFFSETS = 16


def _f64rows(a: np.ndarray, start: int, stop: int) -> np.ndarray:
    return f64(a[start:stop])


def offsets(length: int, count: int = N_OFFSETS) -> list[int]:
    """Offsets 1, 2, 3, 5, 8, ... (Fibonacci) up to ``length - 1``, thinned to ``count`` keeping both ends."""
    if length < 2:
        return []
    fib = [1, 2]
    while fib[-1] + fib[-2] <= length - 1:
        fib.append(fib[-1] + fib[-2])
    ks = sorted({k for k in fib if k <= length - 1} | {length - 1})
    if len(ks) > count:
        head = ks[:5]
        tail = ks[5:]
        pick = np.unique(np.round(np.linspace(0, len(tail) - 1, count - 5)).astype(int))
        ks = head + [tail[i] for i in pick]
    return ks


# ----- the offset profile: distances and dot products at each tested offset --------------------------
@dataclass
class Profile:
    ks: list[int]
    dist: dict[int, np.ndarray]  # ||P[t+k] - P[t]|| for t in [0, len - k)
    dot_min: dict[int, float]
    dot_max: dict[int, float]
    dot_mean: dict[int, float]


def profile(ctx: CheckContext) -> Profile:
    """Exact distances and dot products of P[t] and P[t+k] for every t and each k in :func:`offsets`."""
    return shared(ctx, "profile")


def _dot_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Row-wise dot products in float64 of float64 rows ``x`` and rows ``y`` as stored (float32 rows are
    widened inside einsum's buffers: the same products and sums as converting them first)."""
    if y.dtype == np.float64:
        return np.einsum("ij,ij->i", x, y)
    if y.dtype == np.float32:
        return np.einsum("ij,ij->i", x, y, dtype=np.float64)
    return np.einsum("ij,ij->i", x, f64(y))


@register("profile")
def _profile_feed(ctx: CheckContext) -> Feed:
    t = ctx.table
    n = t.shape[0]
    ks = offsets(n)
    dots = {k: np.empty(n - k) for k in ks}

    def chunk(blk: Block, s: int, e: int) -> None:
        a = blk.start
        x = blk.x[s:e]
        for k in ks:
            m = min(a + e, n - k) - (a + s)
            if m <= 0:
                continue
            # rows t + k: from the block's own float64 copy when it holds them (small k), else as stored
            y = blk.x[s + k : s + k + m] if s + k + m <= len(blk.x) else t[a + s + k : a + s + k + m]
            dots[k][a + s : a + s + m] = _dot_rows(x[:m], y)

    def block(blk: Block) -> dict[int, tuple[float, float, float]]:
        out = {}
        for k in ks:
            dot = dots[k][blk.start : min(blk.stop, n - k)]
            if dot.size:
                out[k] = (float(dot.min()), float(dot.max()), float(dot.sum()))
        return out

    def finish(parts: list[dict[int, tuple[float, float, float]]]) -> Profile:
        norms = scan(ctx).norms
        dist, dmin, dmax, dsum = {}, {}, {}, {}
        for k in ks:
            dot = dots[k]
            # |x - y|^2 from norms and the dot product; recomputed directly where it cancels badly
            sq = norms[: n - k] ** 2 + norms[k:] ** 2
            d2 = sq - 2 * dot
            near = np.flatnonzero(d2 < 1e-6 * sq)
            for i in range(0, near.size, 4096):
                rows = near[i : i + 4096]
                diff = f64(t[rows]) - f64(t[rows + k])
                d2[rows] = np.einsum("ij,ij->i", diff, diff)
            dist[k] = np.sqrt(np.maximum(d2, 0.0))
            dmin[k] = min([p[k][0] for p in parts if k in p], default=np.inf)
            dmax[k] = max([p[k][1] for p in parts if k in p], default=-np.inf)
            total = 0.0
            for p in parts:
                if k in p:
                    total += p[k][2]
            dsum[k] = total
        return Profile(ks, dist, dmin, dmax, {k: dsum[k] / (n - k) for k in ks})

    return Feed(
        "profile", f"dot products of rows k apart, k in {{{','.join(map(str, ks))}}}", block, finish, chunk=chunk
    )


def _ratio(measured: float, tol: float) -> float:
    """measured / tolerance, where a zero tolerance (an all-zero table) gives 0 for 0 and inf otherwise."""
    if tol > 0:
        return measured / tol
    return 0.0 if measured <= 0 else float("inf")


def _tols(ctx: CheckContext, rows: float = 0.0) -> tuple[float, float]:
    """(tolerance for distances and norms, tolerance for dot products) of this table: ``rtol`` of the largest row
    norm ``s`` (of ``s**2``), widened for a quantity of ``rows`` rows by their arithmetic's error (a row within
    ``e`` of the exact one moves a norm or a distance by ``e``, a dot product by ``2 s e + e**2``)."""
    s = max(scan(ctx).max_norm, np.finfo(np.float64).tiny)
    _, e, _ = arith_bounds(ctx)
    return ctx.rtol * s + rows * e, ctx.rtol * s * s + rows * (2 * s * e + e * e)


# ----- checks ---------------------------------------------------------------------------------------
def check_bounded(ctx: CheckContext) -> CheckResult:
    sc = scan(ctx)
    if not sc.finite:
        return skipped("bounded")
    bound = ctx.kind_cls.value_bound(dict(ctx.metadata)) if ctx.kind_cls is not None else 1.0
    tol = bound * (1 + ctx.rtol) + arith_bounds(ctx)[0]
    return verdict(
        "bounded",
        sc.max_abs <= tol,
        sc.max_abs,
        tol,
        f"max |x| = {fmt(sc.max_abs)}; bound {fmt(bound)}",
        max_abs=sc.max_abs,
        bound=bound,
    )


def check_constant_norm(ctx: CheckContext) -> CheckResult:
    sc = scan(ctx)
    if not sc.finite:
        return skipped("constant-norm")
    tol, _ = _tols(ctx, rows=2)
    lo, hi = float(sc.norms.min()), float(sc.norms.max())
    spread = hi - lo
    i, j = int(sc.norms.argmin()), int(sc.norms.argmax())
    detail = (
        f"every row has norm {hi:.4f}" if spread <= tol else f"norms range {fmt(lo)} (row {i}) .. {fmt(hi)} (row {j})"
    )
    return verdict("constant-norm", spread <= tol, spread, tol, detail, norm=float(sc.norms.mean()), min=lo, max=hi)


def check_equidistant(ctx: CheckContext) -> CheckResult:
    sc = scan(ctx)
    if not sc.finite:
        return skipped("equidistant")
    if sc.rows < 2:
        return skipped("equidistant", ONE_ROW, needs=("distinct",))
    d = profile(ctx).dist[1]
    tol, _ = _tols(ctx, rows=4)  # the spread of two distances, each of two rows
    spread = float(d.max() - d.min())
    if spread <= tol:
        detail = f"every consecutive pair is {float(d.mean()):.4f} apart"
    else:
        detail = f"consecutive distances range {fmt(float(d.min()))} (t={int(d.argmin())}) .. {fmt(float(d.max()))} (t={int(d.argmax())})"
    return verdict(
        "equidistant",
        spread <= tol,
        spread,
        tol,
        detail,
        distance=float(d.mean()),
        min=float(d.min()),
        max=float(d.max()),
    )


def gram_toeplitz_probe(ctx: CheckContext, probes: int | None = None) -> float:
    r"""Freivalds test that the Gram matrix :math:`G = PP^\top` is Toeplitz, without forming it.

    With :math:`A = P[1:]`, :math:`B = P[:-1]`, Toeplitz means :math:`AA^\top = BB^\top`; for random Gaussian
    :math:`x` we compare :math:`A(A^\top x)` with :math:`B(B^\top x)`: two passes over the table for all
    probes at once (the first one shared with the other properties, :mod:`.sweep`). Returns the largest
    normalised residual :math:`\|r\|\sqrt{d} / (\|x\|\sqrt{len-1}\,s^2)` (``s`` the RMS row norm), about the
    relative error of one Gram entry (whose typical size is :math:`s^2/\sqrt d`).
    """
    if probes is not None and probes != ctx.probes:
        import dataclasses

        return gram_toeplitz_probe(dataclasses.replace(ctx, probes=probes, planned=()))
    n, d = ctx.table.shape
    p = ctx.probes
    x, _ = shared(ctx, "gram")
    w = shared(ctx, "gram-w")
    r = w[1:, :p] - w[:-1, p:]
    s = scan(ctx).rms_norm
    scale = np.linalg.norm(x, axis=0) * np.sqrt(n - 1) * max(s * s, np.finfo(np.float64).tiny)
    return float(np.max(np.linalg.norm(r, axis=0) * np.sqrt(d) / scale))


@register("gram", after=())
def _gram_feed(ctx: CheckContext) -> Feed:
    """First read of the Gram probe: ``u = P^T [x_a | x_b]``, block by block (sums in block order)."""
    n, d = ctx.table.shape
    p = ctx.probes
    x = ctx.rng().standard_normal((n - 1, p))
    xa = np.vstack([np.zeros((1, p)), x])  # A^T x = P^T [0; x]
    xb = np.vstack([x, np.zeros((1, p))])  # B^T x = P^T [x; 0]
    xx = np.hstack([xa, xb])

    def finish(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        u = np.zeros((d, 2 * p))
        for part in parts:
            u += part
        return x, u

    return Feed(
        "gram",
        f"Freivalds Gram probe, first half (P^T x, {p} probes)",
        lambda b: b.rows.T @ xx[b.start : b.stop],
        finish,
    )


@register("gram-w", after=("gram",), second=True)
def _gram_w_feed(ctx: CheckContext) -> Feed:
    """Second read of the Gram probe: ``P u``, which needs the whole first read."""
    _, u = shared(ctx, "gram")
    w = np.empty((ctx.table.shape[0], u.shape[1]))

    def block(b: Block) -> None:
        w[b.start : b.stop] = b.right["gram-w"]

    return Feed("gram-w", "Freivalds Gram probe, second half (P (P^T x))", block, lambda parts: w, u)


def check_offset_invariant(ctx: CheckContext) -> CheckResult:
    sc = scan(ctx)
    if not sc.finite:
        return skipped("offset-invariant")
    if sc.rows < 2:
        return skipped("offset-invariant", ONE_ROW, needs=("distinct",))
    pr = profile(ctx)
    tol_d, tol_g = _tols(ctx, rows=4)  # the spread of two distances (dot products), each of two rows
    worst_d = {k: float(pr.dist[k].max() - pr.dist[k].min()) for k in pr.ks}
    worst_g = {k: pr.dot_max[k] - pr.dot_min[k] for k in pr.ks}
    bad = [k for k in pr.ks if worst_d[k] > tol_d or worst_g[k] > tol_g]
    probe = gram_toeplitz_probe(ctx) if sc.rows > 2 else 0.0
    # rows within e_t of the exact ones move the Gram probe by about 2 (|E||P| + |P||E|) |x| (E the errors, P the
    # rows): normalised as the residual is, 4 e_rms sqrt(d) / s_rms, counted twice (a random probe's spread)
    _, _, e_rms = arith_bounds(ctx)
    tol_p = ctx.rtol + 8 * e_rms * np.sqrt(ctx.table.shape[1]) / max(sc.rms_norm, np.finfo(np.float64).tiny)
    ok = bool(not bad and probe <= tol_p)
    value = max(_ratio(max(worst_d.values()), tol_d), _ratio(max(worst_g.values()), tol_g), _ratio(probe, tol_p))
    ks_text = ",".join(map(str, pr.ks))
    if ok:
        detail = (
            f"distance and dot product depend only on k (k=1: distance {float(pr.dist[1].mean()):.4f}, "
            f"dot product {pr.dot_mean[1]:.4f}); Gram Toeplitz residual {fmt(probe)}"
        )
    elif bad:
        k = bad[0]
        detail = (
            f"at k={k} distances vary by {fmt(worst_d[k])} and dot products by {fmt(worst_g[k])} over t; "
            f"offsets failing: {','.join(map(str, bad))}"
        )
    else:
        detail = (
            f"tested offsets agree but the Gram matrix is not Toeplitz: Freivalds residual {fmt(probe)} > {fmt(tol_p)}"
        )
    return CheckResult(
        "offset-invariant",
        ok,
        value,
        1.0,
        detail,
        f"exact over k in {{{ks_text}}} + Freivalds, {ctx.probes} probes",
        {
            "distance_k1": float(pr.dist[1].mean()),
            "dot_k1": pr.dot_mean[1],
            "offsets": pr.ks,
            "distance_spread": worst_d,
            "dot_spread": worst_g,
            "tolerance_distance": tol_d,
            "tolerance_dot": tol_g,
            "freivalds_residual": probe,
            "tolerance_freivalds": tol_p,
            "probes": ctx.probes,
            "value_is": "worst measured/tolerance ratio (<= 1 passes)",
        },
    )


def check_symmetric(ctx: CheckContext) -> CheckResult:
    sc = scan(ctx)
    if not sc.finite:
        return skipped("symmetric")
    pr = profile(ctx)
    tol, _ = _tols(ctx, rows=4)  # two distances, each of two rows
    ks = [k for k in pr.ks if 2 * k < sc.rows]
    worst, where = 0.0, None
    for k in ks:
        d = pr.dist[k]
        diff = np.abs(d[k:] - d[:-k])  # |P[t+k]-P[t]| vs |P[t]-P[t-k]| for t in [k, len-k)
        i = int(diff.argmax())
        if diff[i] > worst:
            worst, where = float(diff[i]), (k, i + k)
    if not ks:
        return verdict("symmetric", True, 0.0, tol, "fewer than 3 rows: nothing to compare")
    if worst <= tol or where is None:
        detail = "distance to t+k equals distance to t-k"
    else:
        detail = f"at t={where[1]}, k={where[0]}: distances differ by {fmt(worst)}"
    return verdict("symmetric", worst <= tol, worst, tol, detail, f"exact over k in {{{','.join(map(str, ks))}}}")


def check_decay(ctx: CheckContext) -> CheckResult:
    sc = scan(ctx)
    if not sc.finite:
        return skipped("decay", report=True)
    pr = profile(ctx)
    if not pr.ks:
        return CheckResult("decay", None, None, None, "one row: no offsets", "exact")
    base = float(np.mean(sc.norms**2)) or 1.0
    curve = {k: pr.dot_mean[k] / base for k in pr.ks}
    vals = np.array(list(curve.values()))
    falls = int(np.sum(np.diff(vals) <= 0))
    pts = [k for k in pr.ks if k in (1, 2, 3, 8, 55, 144, 987, 6765, 46368)] + [pr.ks[-1]]
    summary = ", ".join(f"k={k}: {curve[k]:.3f}" for k in dict.fromkeys(pts))
    detail = (
        f"mean P[t].P[t+k] / mean |P|^2: {summary}; falls at {falls} of {len(vals) - 1} steps, "
        f"min {vals.min():.3f} at k={pr.ks[int(vals.argmin())]}"
    )
    return CheckResult(
        "decay",
        None,
        float(curve[pr.ks[-1]]),
        None,
        detail,
        f"exact over k in {{{','.join(map(str, pr.ks))}}}",
        {"curve": curve, "mean_dot": pr.dot_mean},
    )


def check_unique(ctx: CheckContext) -> CheckResult:
    sc = scan(ctx)
    if not sc.finite:
        return skipped("unique")
    tol, _ = _tols(ctx)
    n = sc.rows
    if n < 2:
        return skipped("unique", ONE_ROW, needs=("distinct",))
    if n <= EXACT_UNIQUE_ROWS:
        i, j = _closest_pair_exact(ctx)
        method = "exact (blocked Gram matrix, nearest pair re-measured directly)"
    else:
        dup = _exact_duplicate(ctx)
        if dup is not None:
            i, j = dup
        else:
            i, j = _closest_pair_sampled(ctx)
        method = (
            "exact duplicates via 64-bit row hashes; nearest candidates by sorting along 4 random "
            "projections (window 8), ranked with a 32-dim sketch, best 64 re-measured exactly: sampled"
        )
    dist = float(np.linalg.norm(_f64rows(ctx.table, i, i + 1) - _f64rows(ctx.table, j, j + 1)))
    ok = dist > tol
    detail = f"closest distinct positions {i} and {j} are {fmt(dist)} apart"
    if dist == 0:
        detail = f"rows {i} and {j} are identical"
    return verdict("unique", ok, dist, tol, detail, method, closest=[i, j])


def check_distinct(ctx: CheckContext) -> CheckResult:
    """At least two rows and no two identical: what every table of positions needs, whatever its kind (a zero,
    constant, repeated-row or one-row table gives no position its own row; ``unique`` then asks the kind's
    margin, more than rounding, of the nearest pair)."""
    sc = scan(ctx)
    if not sc.finite:
        return skipped("distinct")
    n = sc.rows
    if n < 2:
        return verdict("distinct", False, n, 2, f"{n} row{'s' if n != 1 else ''}: a table of positions needs at least "
                       "two", rows=n)  # fmt: skip
    dup = _exact_duplicate(ctx)
    if dup is None:
        return verdict("distinct", True, n, n, f"{n} rows, no two identical", "exact: 64-bit row hashes, repeats "
                       "compared row by row", rows=n)  # fmt: skip
    i, j = dup
    hashes = _row_hashes(ctx)
    distinct, _ = duplicate_groups(hashes)
    what = "every row is the same" if distinct == 1 else f"rows {i} and {j} are identical ({distinct} distinct of {n})"
    return verdict("distinct", False, distinct, n, what, "exact: 64-bit row hashes, repeats compared row by row",
                   rows=n, distinct_rows=distinct, identical=[i, j])  # fmt: skip


def _row_hashes(ctx: CheckContext) -> np.ndarray:
    """Every row's 64-bit hash as stored (the ``hashes`` feed, or the bfloat16 ones where only they were read)."""
    if "hashes" in sweep.cache(ctx) or not _dedupe_by_bfloat16(ctx):
        return shared(ctx, "hashes")
    return shared(ctx, "precision")["bfloat16"][2]


def _closest_pair_exact(ctx: CheckContext) -> tuple[int, int]:
    """Nearest pair by |x|^2 + |y|^2 - 2 x.y in row blocks, each row's best candidate re-measured directly."""
    p = f64(ctx.table[:])
    n = p.shape[0]
    sq = scan(ctx).norms ** 2
    step = rows_per_block(n)
    best_j = np.empty(n, dtype=np.int64)
    for a in range(0, n, step):
        b = min(a + step, n)
        d2 = sq[a:b, None] + sq[None, :] - 2 * (p[a:b] @ p.T)
        d2[np.arange(b - a), np.arange(a, b)] = np.inf
        best_j[a:b] = d2.argmin(axis=1)
    exact = np.linalg.norm(p - p[best_j], axis=1)
    i = int(exact.argmin())
    return (i, int(best_j[i])) if i < best_j[i] else (int(best_j[i]), i)


def _exact_duplicate(ctx: CheckContext) -> tuple[int, int] | None:
    """The first pair of identical rows (by hash, confirmed row by row), or None: found once per context, read by
    ``distinct`` and, beyond :data:`EXACT_UNIQUE_ROWS`, by ``unique``."""
    return memo(ctx, "exact-duplicate", lambda: _find_exact_duplicate(ctx))


def _find_exact_duplicate(ctx: CheckContext) -> tuple[int, int] | None:
    t = ctx.table
    if _dedupe_by_bfloat16(ctx):
        # Equal rows stay equal in bfloat16: only rows whose bfloat16 hash repeats can be duplicates, so only
        # those (usually none) are hashed as stored.
        bf_hashes = shared(ctx, "precision")["bfloat16"][2]
        order = np.argsort(bf_hashes, kind="stable")
        h = bf_hashes[order]
        same = h[1:] == h[:-1]
        members = np.unique(np.concatenate([order[1:][same], order[:-1][same]]))
        if members.size == 0:
            return None
        hashes = np.concatenate([hash_block(t[members[i : i + 4096]]) for i in range(0, members.size, 4096)])
        _, local = duplicate_groups(hashes)
        pairs = members[local] if local.size else local
    else:
        _, pairs = duplicate_groups(shared(ctx, "hashes"))
    for i, j in pairs:
        if np.array_equal(f64(t[i]), f64(t[j])):  # confirm: a hash collision is not a duplicate
            return int(min(i, j)), int(max(i, j))
    return None


def _dedupe_by_bfloat16(ctx: CheckContext) -> bool:
    """Whether ``unique`` finds exact duplicates among the rows that ``precision``'s bfloat16 hashes group."""
    return "precision" in ctx.planned


@register("hashes", after=())
def _hashes_feed(ctx: CheckContext) -> Feed:
    hashes = np.empty(ctx.table.shape[0], dtype=np.uint64)

    def chunk(b: Block, s: int, e: int) -> None:
        hashes[b.start + s : b.start + e] = hash_block(b.raw[s:e])

    return Feed("hashes", "64-bit row hashes (exact duplicates)", None, lambda parts: hashes, chunk=chunk)


#: The random sketch ``unique`` ranks candidate pairs by (columns).
SKETCH_DIM = 32


@register("sketch", after=())
def _sketch_feed(ctx: CheckContext) -> Feed:
    """A random projection of every row: candidates are ranked by it, then re-measured exactly, so float32
    tables are projected in float32 (half the work, no float64 copy)."""
    t = ctx.table
    n, d = t.shape
    g = ctx.rng().standard_normal((d, SKETCH_DIM)) / np.sqrt(SKETCH_DIM)
    what = f"random {SKETCH_DIM}-dim sketch of every row (nearest pair)"
    if t.dtype == np.float32:
        g32 = g.astype(np.float32)
        sk32 = np.empty((n, SKETCH_DIM), dtype=np.float32)

        def chunk(b: Block, s: int, e: int) -> None:
            np.matmul(b.raw[s:e], g32, out=sk32[b.start + s : b.start + e])

        return Feed("sketch", what, None, lambda parts: sk32, chunk=chunk)
    sk = np.empty((n, SKETCH_DIM))

    def block(b: Block) -> None:
        sk[b.start : b.stop] = b.right["sketch"]

    return Feed("sketch", what, block, lambda parts: sk, g)


def _stable_argsort(x: np.ndarray) -> np.ndarray:
    """``np.argsort(x, kind="stable")`` for finite ``x`` in about half its time: NumPy's default sort, whose
    order differs from the stable one only within runs of equal values (a float32 sketch of 131k rows has a few
    hundred), then the indices of each such run put in increasing order."""
    order = np.argsort(x)
    v = x[order]
    tie = v[1:] == v[:-1]
    if not tie.any():
        return order
    at = np.flatnonzero(np.concatenate([tie, [False]]) | np.concatenate([[False], tie]))  # whole runs, ascending
    run = np.cumsum(np.concatenate([[True], ~tie]))[at]  # the run of each tied position (nondecreasing)
    key = run.astype(np.int64) * x.size + order[at]  # by run, then by index within it
    order[at] = np.sort(key) % x.size
    return order


def _closest_pair_sampled(ctx: CheckContext, n_sort: int = 4, window: int = 8, keep: int = 64) -> tuple[int, int]:
    """Candidates from neighbours in sorted order along random projections, ranked by a random sketch."""
    t = ctx.table
    sk = shared(ctx, "sketch")
    # The ``keep`` best candidate pairs by (squared) sketch distance of each (projection, window), then overall.
    ci, cj, sd = [], [], []
    rows = len(sk)
    chunk = rows_per_block(sk.shape[1])
    diff = np.empty((chunk, sk.shape[1]), dtype=sk.dtype)  # one buffer for every window's differences
    # the sorted sketch is gathered a chunk (and the window after it) at a time into one small buffer: a whole
    # sorted copy per projection was 32 MiB of fresh memory at 131k rows, its page faults costing as much as the
    # sums; the same rows in the same order, so the same distances
    ahead = np.empty((chunk + window, sk.shape[1]), dtype=sk.dtype)
    # dist[w - 1, i] for i < rows - w, every one rewritten by each projection (the rest is never read)
    dist = np.full((window, rows), np.inf, dtype=sk.dtype)
    for c in range(n_sort):
        order = _stable_argsort(np.ascontiguousarray(sk[:, c]))
        # pairs (order[i], order[i + w]) for every window w, a chunk of the sorted sketch at a time (read once
        # for all windows while it is in cache): dist[w - 1, i], in the sketch's dtype (a quarter of its size)
        for a in range(0, rows, chunk):
            b = min(a + chunk, rows)
            near = np.take(sk, order[a : min(b + window, rows)], axis=0, out=ahead[: min(b + window, rows) - a])
            for w in range(1, window + 1):
                e = min(b, rows - w)
                if e > a:
                    part = np.subtract(near[: e - a], near[w : e - a + w], out=diff[: e - a])
                    np.einsum("ij,ij->i", part, part, out=dist[w - 1, a:e])
        for w in range(1, window + 1):
            d = dist[w - 1, : max(0, rows - w)]
            best = np.argpartition(d, keep)[:keep] if d.size > keep else np.arange(d.size)
            ci.append(order[best])
            cj.append(order[best + w])
            sd.append(d[best])
    all_i, all_j, all_d = np.concatenate(ci), np.concatenate(cj), np.concatenate(sd)
    best = np.argpartition(all_d, keep)[:keep] if all_d.size > keep else np.arange(all_d.size)
    all_i, all_j, all_d = all_i[best], all_j[best], all_d[best]
    top = np.argsort(all_d)
    exact = np.array([np.linalg.norm(f64(t[all_i[m]]) - f64(t[all_j[m]])) for m in top])
    m = top[int(exact.argmin())]
    first, second = int(all_i[m]), int(all_j[m])
    return min(first, second), max(first, second)


@dataclass
class ShiftFit:
    r"""A least-squares solution :math:`M = R Y` of :math:`XM \approx Y`, kept factored.

    Only products with vectors are needed (Freivalds probes, the rotation test), so :math:`M` (d x d) is
    never formed: :math:`Mz = R(Yz)` and :math:`M^\top u = Y^\top(R^\top u)`, with ``r``/``r_t`` applying
    the regularised pseudo-inverse :math:`R \approx X^+` and its transpose.
    """

    y: np.ndarray
    r: Callable[[np.ndarray], np.ndarray]
    r_t: Callable[[np.ndarray], np.ndarray]
    method: str

    def apply(self, z: np.ndarray) -> np.ndarray:
        return self.r(self.y @ z)

    def apply_t(self, u: np.ndarray) -> np.ndarray:
        return self.y.T @ self.r_t(u)


def _largest_eigenvalue(g: np.ndarray, steps: int = 30) -> float:
    """Power iteration on a symmetric positive semi-definite matrix (a few matvecs instead of an eigh)."""
    v = np.asarray(np.random.default_rng(0).standard_normal(g.shape[0]))
    lam = 0.0
    for _ in range(steps):
        w = g @ v
        lam = float(np.linalg.norm(w))
        if lam == 0:
            return 0.0
        v = w / lam
    return lam


def fit_shift(x: np.ndarray, y: np.ndarray, rcond: float) -> ShiftFit:
    r"""Least squares ignoring directions of ``x`` below ``rcond`` times its largest singular value.

    Coarse data (rcond >= 1e-8: float32 and below) use ridge regression through the d x d Gram matrix,
    :math:`R = (X^\top X + \lambda I)^{-1} X^\top` with :math:`\lambda = (\mathrm{rcond}\,\sigma_1)^2`:
    it damps exactly the directions a truncated SVD would drop and costs one Gram product and one solve.
    float64 data need a cut far below the Gram matrix's own precision, hence the truncated SVD of ``x``.
    Non-finite rows raise :class:`numpy.linalg.LinAlgError` before LAPACK sees them (its SVD writes "On entry to
    DLASCL parameter number 4 had an illegal value" to the process's stdout, where posenc's data goes).
    """
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise np.linalg.LinAlgError("non-finite rows: no least-squares fit")
    if rcond >= 1e-8:
        g = x.T @ x
        lam = rcond**2 * max(_largest_eigenvalue(g), np.finfo(np.float64).tiny)
        a = g + lam * np.eye(g.shape[0])
        return ShiftFit(
            y, lambda w: np.linalg.solve(a, x.T @ w), lambda u: x @ np.linalg.solve(a, u), "ridge on the Gram matrix"
        )
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    k = int(np.sum(s > rcond * s[0])) if s.size else 0
    u, s, v = u[:, :k], s[:k], vt[:k].T
    return ShiftFit(
        y,
        lambda w: v @ ((u.T @ w) / s[:, None]),
        lambda z: u @ ((v.T @ z) / s[:, None]),
        f"truncated SVD (rank {k}/{x.shape[1]})",
    )


def _shift_ks(n: int) -> list[int]:
    """Offsets for shift-linear: 1 and up to two more from :func:`offsets`, each at most len/4."""
    ks = [k for k in offsets(n) if k <= max(1, n // 4)]
    if len(ks) <= 3:
        return ks
    pick = np.unique(np.round(np.linspace(0, len(ks) - 1, 3)).astype(int))
    return [ks[i] for i in pick]


@dataclass
class ShiftProbe:
    """What shift-linear needs before and from the shared read: the fits' images of the probes and ``w = P z``."""

    ks: list[int]
    xp: np.ndarray
    ortho: dict[int, float]
    method: str
    w: np.ndarray


#: Nested samples from this width on (below it the Gram matrices are cheap: 4 d^3 flops each).
_NESTED_MIN_DIM = 256
#: Sampled rows per product in :func:`_ridge_probe` (the fits never hold all 4 dim sampled rows in float64).
_FIT_CHUNK = 512


def _ridge_probe(
    t: np.ndarray, rows: np.ndarray, k: int, g: np.ndarray, rcond: float, xp: np.ndarray
) -> tuple[np.ndarray, float, str]:
    """:func:`fit_shift`'s ridge fit from a given Gram matrix ``g`` of the rows ``rows``: ``M_k xp`` and the
    orthogonality deviation, with every product over the sampled rows taken a chunk at a time."""

    def times(r: np.ndarray, m: np.ndarray) -> np.ndarray:  # P[r] @ m
        return np.vstack([f64(t[r[i : i + _FIT_CHUNK]]) @ m for i in range(0, r.size, _FIT_CHUNK)])

    def t_times(r: np.ndarray, m: np.ndarray) -> np.ndarray:  # P[r].T @ m
        out = np.zeros((t.shape[1], m.shape[1]))
        for i in range(0, r.size, _FIT_CHUNK):
            out += f64(t[r[i : i + _FIT_CHUNK]]).T @ m[i : i + _FIT_CHUNK]
        return out

    with np.errstate(all="ignore"):
        try:
            lam = rcond**2 * max(_largest_eigenvalue(g), np.finfo(np.float64).tiny)
            a = g + lam * np.eye(g.shape[0])
            mx = np.linalg.solve(a, t_times(rows, times(rows + k, xp)))  # R (Y xp)
            back = t_times(rows + k, times(rows, np.linalg.solve(a, mx)))  # Y^T (R^T mx)
            return mx, float(np.abs(back - xp).max() / np.abs(xp).max()), "ridge on the Gram matrix"
        except np.linalg.LinAlgError:  # non-finite rows: the check reports "not run" from the scan
            return np.full_like(xp, np.nan), np.nan, "not fitted"


def _fit_tasks(ctx: CheckContext) -> tuple[list[Callable[[], Any]], Callable[[list[Any]], Any]]:
    """The least-squares fits of shift-linear: each ``M_k`` on ``min(len - k, 4 dim)`` random rows of
    ``[0, len - k)``, drawn in order from the context's generator. Returned as tasks that read sampled rows only
    (so they run while the shared read of the table runs) and a ``combine`` that finishes the fits.

    Where every k samples (``len - k > 4 dim``), the table is wide (``dim >= 256``) and the Gram matrix is used
    (ridge), the samples are nested: the rows of the smallest k, less those past ``len - k``, plus fresh rows of
    ``[0, len - k)`` for the rest (still a uniform sample of ``[0, len - k)``), so the other Gram matrices are the
    first one corrected by the Gram matrices of the few rows that differ: one ``4 dim x dim^2`` product instead of
    one per k.
    """
    t = ctx.table
    n, d = t.shape
    ks = _shift_ks(n)
    rng = ctx.rng()
    p = ctx.probes
    xp = rng.standard_normal((d, p))
    # Directions below the data's own precision are noise: ignoring them keeps M well determined.
    rcond = max(np.finfo(np.float64).eps * 4 * d, 1e-2 * ctx.rtol)
    size = 4 * d

    def gram(rows: np.ndarray) -> np.ndarray:
        g = np.zeros((d, d))
        for i in range(0, rows.size, _FIT_CHUNK):
            x = f64(t[rows[i : i + _FIT_CHUNK]])
            g += x.T @ x
        return g

    def fit_one(k: int, rows: np.ndarray) -> tuple[np.ndarray, float, str]:
        with np.errstate(all="ignore"):
            try:
                m = fit_shift(f64(t[rows]), f64(t[rows + k]), rcond)
                mx = m.apply(xp)
                return mx, float(np.abs(m.apply_t(mx) - xp).max() / np.abs(xp).max()), m.method
            except np.linalg.LinAlgError:  # non-finite rows: the check reports "not run" from the scan
                return np.full_like(xp, np.nan), np.nan, "not fitted"

    def result(fitted: list[tuple[np.ndarray, float, str]]) -> Any:
        ortho = {k: r[1] for k, r in zip(ks, fitted)}
        method = fitted[0][2] if fitted else ""
        text = f"least squares ({method}) on min(len-k, 4*dim) = {min(n - ks[0], size)} rows" if ks else ""
        return ks, xp, [r[0] for r in fitted], ortho, text

    if not (ks and rcond >= 1e-8 and n - ks[-1] > size and d >= _NESTED_MIN_DIM):
        samples = [np.sort(rng.choice(n - k, size=min(n - k, size), replace=False)) for k in ks]
        tasks: list[Callable[[], Any]] = [functools.partial(fit_one, k, rows) for k, rows in zip(ks, samples)]
        return tasks, result
    first = np.sort(rng.choice(n - ks[0], size=size, replace=False))
    rows_of, drops, extras = [first], [], []
    for k in ks[1:]:
        keep, drop = first[first < n - k], first[first >= n - k]
        free = np.setdiff1d(np.arange(n - k), keep, assume_unique=True)
        extra = np.sort(rng.choice(free, size=size - keep.size, replace=False))
        rows_of.append(np.sort(np.concatenate([keep, extra])))
        drops.append(drop)
        extras.append(extra)
    grams: list[Callable[[], Any]] = [
        functools.partial(gram, rows) for pair in [(first,), *zip(drops, extras)] for rows in pair
    ]

    def combine(parts: list[np.ndarray]) -> Any:
        g_first = parts[0]
        gs = [g_first]
        for i in range(len(ks) - 1):
            g = g_first - parts[1 + 2 * i]
            g += parts[2 + 2 * i]
            gs.append(g)
        parts.clear()
        from ..encodings.parallel import pool, workers

        jobs = [pool(workers()).submit(_ridge_probe, t, rows, k, g, rcond, xp) for k, rows, g in zip(ks, rows_of, gs)]
        return result([j.result() for j in jobs])

    return grams, combine


@register("shift", second=True)
def _shift_feed(ctx: CheckContext) -> Feed:
    """``P z`` for ``z = [xp | M_k xp ...]``: the Freivalds probes of every fitted M_k in one product."""
    memo = sweep.cache(ctx)
    if "shift:early" not in memo:
        tasks, combine = _fit_tasks(ctx)
        memo["shift:early"] = combine([task() for task in tasks])
    ks, xp, mx, ortho, method = memo["shift:early"]
    z = np.hstack([xp, *mx])
    w = np.empty((ctx.table.shape[0], z.shape[1]))

    def block(b: Block) -> None:
        w[b.start : b.stop] = b.right["shift"]

    return Feed(
        "shift",
        f"Freivalds probes of shift-linear (P [x | M_k x], k in {{{','.join(map(str, ks))}}})",
        block,
        lambda parts: ShiftProbe(ks, xp, ortho, method, w),
        z,
    )


sweep.EARLY["shift"] = _fit_tasks


def check_shift_linear(ctx: CheckContext) -> CheckResult:
    r"""A single matrix :math:`M_k` maps every :math:`P[t]` to :math:`P[t+k]` (rows: :math:`P[t+k] = P[t] M_k`).

    :math:`M_k` is fitted by least squares on ``min(len - k, 4 dim)`` random rows of ``[0, len - k)``
    (fitting on a shorter range and extrapolating fails: the near-polynomial low-frequency directions the
    fit cannot resolve grow like Chebyshev polynomials outside it), then verified on every row by a
    Freivalds probe: for Gaussian :math:`x`, :math:`P[k:]x - P[:-k](M_k x)`, whose RMS over probes
    estimates each row's residual norm. :math:`M_k` counts as a rotation when it is orthogonal
    (:math:`M^\top M z = z` for the probes) or, where the rows do not span every direction, when it
    preserves the norms of the data: :math:`||P[t]M| - |P[t]|| \le ||P[t+k]| - |P[t]|| + |r_t|`.
    """
    sc = scan(ctx)
    if not sc.finite:
        return skipped("shift-linear")
    n = sc.rows
    if not _shift_ks(n):
        return skipped("shift-linear", ONE_ROW, needs=("distinct",))
    probe: ShiftProbe = shared(ctx, "shift")
    ks, ortho, w = probe.ks, probe.ortho, probe.w
    p = ctx.probes
    scale = max(sc.rms_norm, np.finfo(np.float64).tiny)
    resid, worst_row, on_data = {}, {}, {}
    for i, k in enumerate(ks):
        rk = w[k:, :p] - w[:-k, (i + 1) * p : (i + 2) * p]
        est = np.sqrt(np.mean(rk**2, axis=1)) / scale
        resid[k] = float(est.max())
        worst_row[k] = int(est.argmax())
        on_data[k] = float(np.abs(sc.norms[k:] - sc.norms[:-k]).max()) / scale + resid[k]
    # P[t+k] - P[t] M_k of rows within e of exact ones misses by up to 2 e; the probes' RMS estimate of a row's
    # residual strays by up to about 1.5 times it (8 probes): 3 e, relative to the RMS row norm
    tol = 2 * ctx.rtol + 3 * 2 * arith_bounds(ctx)[1] / scale
    worst_k = max(resid, key=lambda k: resid[k])
    ok = resid[worst_k] <= tol
    rot_tol = max(1e3 * ctx.rtol, 1e-6)
    orthogonal = all(v <= rot_tol for v in ortho.values())
    norm_preserving = all(v <= rot_tol for v in on_data.values())
    if orthogonal:
        rot_text = f"M_k is orthogonal (|M^T M z - z| <= {fmt(max(ortho.values()))})"
    elif norm_preserving:
        rot_text = f"M_k is a rotation on the data (norms preserved to {fmt(max(on_data.values()))})"
    else:
        rot_text = f"M_k is not a rotation (norms change by up to {fmt(max(on_data.values()))} of the RMS row norm)"
    if ok:
        detail = f"P[t+k] = P[t] M_k for every t, k in {{{','.join(map(str, ks))}}}; {rot_text}"
    else:
        detail = (
            f"no single matrix maps P[t] to P[t+{worst_k}]: row {worst_row[worst_k]} misses by "
            f"{fmt(resid[worst_k])} of the RMS row norm; {rot_text}"
        )
    return CheckResult(
        "shift-linear",
        ok,
        resid[worst_k],
        tol,
        detail,
        f"{probe.method}, Freivalds on all rows, {p} probes",
        {
            "offsets": ks,
            "relative_residual": resid,
            "rotation": orthogonal or norm_preserving,
            "orthogonal": orthogonal,
            "orthogonality_deviation": ortho,
            "norm_deviation_on_data": on_data,
            "rotation_tolerance": rot_tol,
        },
    )


def round_float16_bits(mag: np.ndarray) -> np.ndarray:
    """The float32 bits of float16(x) for the float32 bits ``mag`` of non-negative finite x (round half to even,
    as NumPy's cast): 13 mantissa bits rounded off above 2**-14, a multiple of 2**-24 below (the spacing of
    float16's subnormals, rounded by adding and subtracting 0.5 in float32), inf from 65520 up."""
    r = mag >> np.uint32(13)
    r &= np.uint32(1)
    r += mag
    r += np.uint32(0xFFF)
    r &= np.uint32(0xFFFFE000)
    small = mag < np.uint32(0x38800000)  # below 2**-14
    if small.any():
        tiny = (mag.view(np.float32) + np.float32(0.5)) - np.float32(0.5)
        np.copyto(r, tiny.view(np.uint32), where=small)
    big = r >= np.uint32(0x47800000)  # rounded to 65536 or more
    if big.any():
        r[big] = 0x7F800000
    return r


def round_bfloat16_bits(mag: np.ndarray) -> np.ndarray:
    """The float32 bits of bfloat16(x) for the float32 bits ``mag`` of non-negative finite x (round half to even:
    16 mantissa bits rounded off; the largest values round to inf by the carry itself)."""
    r = mag >> np.uint32(16)
    r &= np.uint32(1)
    r += mag
    r += np.uint32(0x7FFF)
    r &= np.uint32(0xFFFF0000)
    return r


def _precision_targets() -> dict[str, np.dtype]:
    import ml_dtypes

    return {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


@register("precision", after=())
def _precision_feed(ctx: CheckContext) -> Feed:
    """Each block cast to float16 and bfloat16: the largest error, overflows and the cast rows' hashes."""
    targets = _precision_targets()

    def chunk(blk: Block, s: int, e: int) -> None:
        raw = blk.raw[s:e]
        out = {}
        if raw.dtype == np.float32:
            # Rounded on the bits (float16: 10 mantissa bits, subnormals below 2**-14, inf from 65520; bfloat16:
            # 7 mantissa bits), kept as float32: no slow float16 conversions, the errors exact in float32.
            u = np.ascontiguousarray(raw).view(np.uint32)
            mag = u & np.uint32(0x7FFFFFFF)
            sign = u & np.uint32(0x80000000)
            for name, rounded in (("float16", round_float16_bits(mag)), ("bfloat16", round_bfloat16_bits(mag))):
                diff = rounded.view(np.float32) - mag.view(np.float32)
                err = max(float(diff.max()), -float(diff.min())) if diff.size else 0.0
                over = 0
                if not np.isfinite(err):  # overflow to inf: count it, measure the rest
                    fin = np.isfinite(diff)
                    over = int((~fin).sum())
                    err = float(np.abs(diff[fin]).max()) if fin.any() else 0.0
                rounded |= sign
                out[name] = (err, over, hash_block(rounded.view(np.float32)))
            blk.acc.setdefault("precision", []).append(out)
            return
        b = blk.x[s:e]
        for name, dt in targets.items():
            with np.errstate(over="ignore", invalid="ignore"):
                c = b.astype(dt)
                diff = np.subtract(c, b, dtype=np.float64)
            over = 0
            err = max(float(diff.max()), -float(diff.min())) if diff.size else 0.0
            if not np.isfinite(err):  # overflow to inf: count it, measure the rest
                fin = np.isfinite(diff)
                over = int((~fin).sum())
                diff = np.abs(np.where(fin, diff, 0.0))
                err = float(diff.max()) if diff.size else 0.0
            out[name] = (err, over, hash_block(c))
        blk.acc.setdefault("precision", []).append(out)

    def finish(parts: list[list[dict[str, tuple[float, int, np.ndarray]]]]) -> dict[str, Any]:
        flat = [c for p in parts for c in p]
        return {
            name: (
                max([c[name][0] for c in flat], default=0.0),
                sum(c[name][1] for c in flat),
                np.concatenate([c[name][2] for c in flat]) if flat else np.empty(0, np.uint64),
            )
            for name in targets
        }

    return Feed(
        "precision",
        "casts to float16 and bfloat16: errors, overflows, row hashes",
        None,
        finish,
        chunk=chunk,
    )


def check_precision(ctx: CheckContext) -> CheckResult:
    sc = scan(ctx)
    if not sc.finite:
        return skipped("precision", report=True)
    n = sc.rows
    targets = _precision_targets()
    measured = shared(ctx, "precision")
    parts, data = [], {}
    for name, dt in targets.items():
        err_n, over_n, hashes = measured[name]
        distinct, _ = duplicate_groups(hashes)
        base = raw_positions_distinct(n, dt)
        data[name] = {
            "distinct_rows": distinct,
            "max_abs_error": err_n,
            "overflow": over_n,
            "raw_positions_distinct": base,
        }
        over = f", {over_n} values overflow to inf" if over_n else ""
        parts.append(
            f"{name}: {distinct} of {n} rows distinct, max abs error {fmt(err_n)}{over} "
            f"(raw positions 0..{n - 1}: {base} distinct)"
        )
    return CheckResult(
        "precision",
        None,
        data["bfloat16"]["distinct_rows"],
        None,
        "; ".join(parts),
        "exact (cast block by block, rows compared by 64-bit hashes)",
        data,
    )


def _needs(ctx: CheckContext, *, prop: str) -> tuple[str, ...]:
    """The feeds of :mod:`.sweep` that property ``prop`` reads on this table."""
    from ..formats import is_float

    if ctx.table.ndim != 2 or not is_float(ctx.table.dtype):
        return ()
    n = ctx.table.shape[0]
    if prop == "offset-invariant":
        return ("scan", "profile", "gram", "gram-w") if n > 2 else ("scan", "profile")
    if prop in ("equidistant", "symmetric", "decay"):
        return ("scan", "profile")
    if prop == "unique":
        if n <= EXACT_UNIQUE_ROWS:
            return ("scan",)
        return ("scan", "precision", "sketch") if _dedupe_by_bfloat16(ctx) else ("scan", "hashes", "sketch")
    if prop == "shift-linear":
        return ("scan", "shift")
    if prop == "precision":
        return ("scan", "precision")
    if prop == "distinct":
        return ("scan", "precision") if _dedupe_by_bfloat16(ctx) else ("scan", "hashes")
    return ("scan",)


for _prop in (
    "finite", "bounded", "distinct", "constant-norm", "equidistant", "offset-invariant", "symmetric", "decay",
    "unique", "shift-linear", "precision",
):  # fmt: skip
    sweep.NEEDS[_prop] = functools.partial(_needs, prop=_prop)


__all__ = [
    "check_bounded",
    "check_constant_norm",
    "check_decay",
    "check_distinct",
    "check_equidistant",
    "check_offset_invariant",
    "check_precision",
    "check_shift_linear",
    "check_symmetric",
    "check_unique",
    "gram_toeplitz_probe",
]
