r"""Property checks of an absolute table :math:`P` (len x dim): one row per position.

Every check reads the table in row blocks (it may be memory-mapped) and runs in time about linear in its
size; where the exact answer would need the len x len Gram matrix, a randomized test (Freivalds) or a
sampled search stands in, and ``method`` says so. Tolerances scale with the table's dtype (``ctx.rtol``)
and with the magnitudes involved (the largest row norm ``s``): distances and norms use ``rtol * s``, dot
products ``rtol * s**2``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .base import CheckContext, CheckResult
from .common import (
    blocks,
    duplicate_groups,
    f64,
    fmt,
    memo,
    raw_positions_distinct,
    row_hashes,
    rows_per_block,
    scan,
    skipped,
    verdict,
)

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

    def make() -> Profile:
        t = ctx.table
        n = t.shape[0]
        ks = offsets(n)
        norms = scan(ctx).norms
        dist = {k: np.empty(n - k) for k in ks}
        dmin = dict.fromkeys(ks, np.inf)
        dmax = dict.fromkeys(ks, -np.inf)
        dsum = dict.fromkeys(ks, 0.0)
        step = rows_per_block(t.shape[1])
        for a in range(0, n, step):
            base = _f64rows(t, a, min(a + step, n))
            for k in ks:
                m = min(a + step, n - k) - a
                if m <= 0:
                    continue
                x, y = base[:m], _f64rows(t, a + k, a + k + m)
                dot = np.einsum("ij,ij->i", x, y)
                # |x - y|^2 from norms and the dot product; recomputed directly where it cancels badly
                sq = norms[a : a + m] ** 2 + norms[a + k : a + k + m] ** 2
                d2 = sq - 2 * dot
                near = d2 < 1e-6 * sq
                if near.any():
                    diff = x[near] - y[near]
                    d2[near] = np.einsum("ij,ij->i", diff, diff)
                dist[k][a : a + m] = np.sqrt(np.maximum(d2, 0.0))
                dmin[k] = min(dmin[k], float(dot.min()))
                dmax[k] = max(dmax[k], float(dot.max()))
                dsum[k] += float(dot.sum())
        return Profile(ks, dist, dmin, dmax, {k: dsum[k] / (n - k) for k in ks})

    return memo(ctx, "profile", make)


def _ratio(measured: float, tol: float) -> float:
    """measured / tolerance, where a zero tolerance (an all-zero table) gives 0 for 0 and inf otherwise."""
    if tol > 0:
        return measured / tol
    return 0.0 if measured <= 0 else float("inf")


def _tols(ctx: CheckContext) -> tuple[float, float]:
    """(tolerance for distances and norms, tolerance for dot products) of this table."""
    s = max(scan(ctx).max_norm, np.finfo(np.float64).tiny)
    return ctx.rtol * s, ctx.rtol * s * s


# ----- checks ---------------------------------------------------------------------------------------
def check_bounded(ctx: CheckContext) -> CheckResult:
    sc = scan(ctx)
    if not sc.finite:
        return skipped("bounded")
    bound = ctx.kind_cls.value_bound(dict(ctx.metadata)) if ctx.kind_cls is not None else 1.0
    tol = bound * (1 + ctx.rtol)
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
    tol, _ = _tols(ctx)
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
        return verdict("equidistant", True, 0.0, 0.0, "one row: nothing to compare")
    d = profile(ctx).dist[1]
    tol, _ = _tols(ctx)
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
    probes at once. Returns the largest normalised residual
    :math:`\|r\|\sqrt{d} / (\|x\|\sqrt{len-1}\,s^2)` (``s`` the RMS row norm), about the relative error of one
    Gram entry (whose typical size is :math:`s^2/\sqrt d`).
    """
    t = ctx.table
    n, d = t.shape
    p = ctx.probes if probes is None else probes
    x = ctx.rng().standard_normal((n - 1, p))
    xa = np.vstack([np.zeros((1, p)), x])  # A^T x = P^T [0; x]
    xb = np.vstack([x, np.zeros((1, p))])  # B^T x = P^T [x; 0]
    xx = np.hstack([xa, xb])
    u = np.zeros((d, 2 * p))
    for a, b in blocks(ctx):
        u += b.T @ xx[a : a + len(b)]
    w = np.empty((n, 2 * p))
    for a, b in blocks(ctx):
        w[a : a + len(b)] = b @ u
    r = w[1:, :p] - w[:-1, p:]
    s = scan(ctx).rms_norm
    scale = np.linalg.norm(x, axis=0) * np.sqrt(n - 1) * max(s * s, np.finfo(np.float64).tiny)
    return float(np.max(np.linalg.norm(r, axis=0) * np.sqrt(d) / scale))


def check_offset_invariant(ctx: CheckContext) -> CheckResult:
    sc = scan(ctx)
    if not sc.finite:
        return skipped("offset-invariant")
    if sc.rows < 2:
        return verdict("offset-invariant", True, 0.0, 0.0, "one row: nothing to compare")
    pr = profile(ctx)
    tol_d, tol_g = _tols(ctx)
    worst_d = {k: float(pr.dist[k].max() - pr.dist[k].min()) for k in pr.ks}
    worst_g = {k: pr.dot_max[k] - pr.dot_min[k] for k in pr.ks}
    bad = [k for k in pr.ks if worst_d[k] > tol_d or worst_g[k] > tol_g]
    probe = gram_toeplitz_probe(ctx) if sc.rows > 2 else 0.0
    tol_p = ctx.rtol
    ok = not bad and probe <= tol_p
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
    tol, _ = _tols(ctx)
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
        return verdict("unique", True, None, tol, "one row")
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
    t = ctx.table
    step = rows_per_block(t.shape[1])
    hashes = row_hashes((np.asarray(t[a : a + step]) for a in range(0, t.shape[0], step)), t.shape[1])
    _, pairs = duplicate_groups(hashes)
    for i, j in pairs:
        if np.array_equal(f64(t[i]), f64(t[j])):  # confirm: a hash collision is not a duplicate
            return int(min(i, j)), int(max(i, j))
    return None


def _closest_pair_sampled(
    ctx: CheckContext, n_sort: int = 4, window: int = 8, sketch_dim: int = 32, keep: int = 64
) -> tuple[int, int]:
    """Candidates from neighbours in sorted order along random projections, ranked by a random sketch."""
    t = ctx.table
    n, d = t.shape
    g = ctx.rng().standard_normal((d, sketch_dim)) / np.sqrt(sketch_dim)
    sk = np.empty((n, sketch_dim))
    for a, b in blocks(ctx):
        sk[a : a + len(b)] = b @ g
    # Keep the ``keep`` best candidate pairs by sketch distance, one (projection, window) chunk at a time.
    ci = cj = np.empty(0, np.int64)
    sd = np.empty(0)
    for c in range(n_sort):
        order = np.argsort(sk[:, c], kind="stable")
        for w in range(1, window + 1):
            i, j = order[:-w], order[w:]
            dist = np.linalg.norm(sk[i] - sk[j], axis=1)
            ci, cj, sd = np.r_[ci, i], np.r_[cj, j], np.r_[sd, dist]
            if sd.size > keep:
                best = np.argpartition(sd, keep)[:keep]
                ci, cj, sd = ci[best], cj[best], sd[best]
    top = np.argsort(sd)
    exact = np.array([np.linalg.norm(f64(t[ci[m]]) - f64(t[cj[m]])) for m in top])
    m = top[int(exact.argmin())]
    first, second = int(ci[m]), int(cj[m])
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
    """
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
    n, d = sc.rows, sc.cols
    ks = _shift_ks(n)
    if not ks:
        return verdict("shift-linear", True, 0.0, 0.0, "one row: nothing to compare")
    t = ctx.table
    rng = ctx.rng()
    p = ctx.probes
    xp = rng.standard_normal((d, p))
    # Directions below the data's own precision are noise: ignoring them keeps M well determined.
    rcond = max(np.finfo(np.float64).eps * 4 * d, 1e-2 * ctx.rtol)
    scale = max(sc.rms_norm, np.finfo(np.float64).tiny)
    mx, ortho = [], {}
    for k in ks:
        fit = np.sort(rng.choice(n - k, size=min(n - k, 4 * d), replace=False))
        m = fit_shift(f64(t[fit]), f64(t[fit + k]), rcond)
        mx.append(m.apply(xp))
        ortho[k] = float(np.abs(m.apply_t(mx[-1]) - xp).max() / np.abs(xp).max())
    z = np.hstack([xp, *mx])
    w = np.empty((n, z.shape[1]))
    for a, b in blocks(ctx):
        w[a : a + len(b)] = b @ z
    resid, worst_row, on_data = {}, {}, {}
    for i, k in enumerate(ks):
        rk = w[k:, :p] - w[:-k, (i + 1) * p : (i + 2) * p]
        est = np.sqrt(np.mean(rk**2, axis=1)) / scale
        resid[k] = float(est.max())
        worst_row[k] = int(est.argmax())
        on_data[k] = float(np.abs(sc.norms[k:] - sc.norms[:-k]).max()) / scale + resid[k]
    tol = 2 * ctx.rtol
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
        f"least squares ({m.method}) on min(len-k, 4*dim) = {min(n - ks[0], 4 * d)} rows, "
        f"Freivalds on all rows, {p} probes",
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


def check_precision(ctx: CheckContext) -> CheckResult:
    import ml_dtypes

    sc = scan(ctx)
    if not sc.finite:
        return skipped("precision", report=True)
    n = sc.rows
    targets = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}
    err = dict.fromkeys(targets, 0.0)
    overflow = dict.fromkeys(targets, 0)
    hashes: dict[str, list[np.ndarray]] = {name: [] for name in targets}
    for _, b in blocks(ctx):  # one pass feeds both casts
        for name, dt in targets.items():
            with np.errstate(over="ignore"):
                c = b.astype(dt)
            diff = np.abs(c.astype(np.float64) - b)
            fin = np.isfinite(diff)
            if not fin.all():
                overflow[name] += int((~fin).sum())
                diff = np.where(fin, diff, 0.0)
            if diff.size:
                err[name] = max(err[name], float(diff.max()))
            hashes[name].append(row_hashes(iter([c]), sc.cols))
    parts, data = [], {}
    for name, dt in targets.items():
        distinct, _ = duplicate_groups(np.concatenate(hashes[name]))
        err_n, over_n = err[name], overflow[name]
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


__all__ = [
    "check_bounded",
    "check_constant_norm",
    "check_decay",
    "check_equidistant",
    "check_offset_invariant",
    "check_precision",
    "check_shift_linear",
    "check_symmetric",
    "check_unique",
    "gram_toeplitz_probe",
]
