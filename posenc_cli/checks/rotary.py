r"""Property checks of rotary tables (RoPE, Su et al. 2021): ``cos`` and ``sin`` (len x rot_dim).

Layouts (metadata ``layout``): ``half`` repeats the rot_dim/2 angles as ``cat(f, f)`` and rotates pairs
:math:`(i, i + r/2)` (GPT-NeoX, Llama); ``interleaved`` repeats each angle twice and rotates pairs
:math:`(2k, 2k+1)` (RoFormer, GPT-J). ONNX caches ``cos_cache``/``sin_cache`` (len x rot_dim/2) hold each
angle once and rotate the two halves of a vector. HF multiplies both tables by ``attention_scaling``
:math:`a`, so the rotation is :math:`a R_t` and :math:`\cos^2 + \sin^2 = a^2`.
"""

from __future__ import annotations

import numpy as np

from .base import CheckContext, CheckResult
from .common import ONE_ROW, arith_bounds, blocks, f64, fmt, skipped, tensor, verdict

LAYOUTS = ("half", "interleaved")
#: The layouts tried on a pair that does not say its own: a full-width table's, or a cache holding each angle once
#: (ONNX's ``cos_cache``, torchtune's ``cache[..., 0]``: the rotation of pairs is the same up to their order).
UNKNOWN_LAYOUTS = (*LAYOUTS, "cache")
#: (m, n) position pairs the ``relative`` check samples, each compared with (m + s, n + s).
RELATIVE_PAIRS = 256


def tables(ctx: CheckContext) -> tuple[np.ndarray, np.ndarray, str | None] | None:
    """(cos, sin, layout) of a rotary source; layout ``cache`` for ONNX caches, ``None`` when unknown.

    The pair is found by role (``cos``/``sin`` or ``cos-cache``/``sin-cache``); a source of unknown kind offers
    its tensors named ``cos`` and ``sin``.
    """
    pairs = [("cos", "sin", ctx.metadata.get("layout")), ("cos-cache", "sin-cache", "cache")]
    for c_role, s_role, layout in pairs:
        if ctx.kind_cls is None:
            names = (c_role, s_role) if c_role == "cos" else None
        else:
            found = ctx.with_role(c_role), ctx.with_role(s_role)
            names = (found[0][0], found[1][0]) if found[0] and found[1] else None
        if names is None:
            continue
        cos, sin = tensor(ctx, names[0]), tensor(ctx, names[1])
        if cos is not None and sin is not None and cos.ndim == 2 and cos.shape == sin.shape:
            return cos, sin, layout if layout in (*LAYOUTS, "cache") else None
    return None


def pair(ctx: CheckContext) -> tuple[np.ndarray, np.ndarray, str | None]:
    """:func:`tables` of a source that has them (a check runs only where ``has_tables`` fits)."""
    found = tables(ctx)
    assert found is not None, "a rotary check ran on a source without a cos/sin pair"
    return found


def has_tables(ctx: CheckContext) -> bool:
    return tables(ctx) is not None


def scaling(ctx: CheckContext) -> float:
    try:
        return float(ctx.metadata.get("attention_scaling", 1.0))
    except ValueError:
        return 1.0


def rotate(q: np.ndarray, cos: np.ndarray, sin: np.ndarray, layout: str) -> np.ndarray:
    """Rotate vectors ``q`` (rows x width) by table rows, as the layout's reference code does."""
    if layout == "cache":  # HF-style rotate_half with each angle stored once
        h = cos.shape[-1]
        q1, q2 = q[..., :h], q[..., h:]
        return np.concatenate([q1 * cos - q2 * sin, q2 * cos + q1 * sin], axis=-1)
    if layout == "half":
        h = q.shape[-1] // 2
        rot = np.concatenate([-q[..., h:], q[..., :h]], axis=-1)
    else:
        rot = np.empty_like(q)
        rot[..., 0::2] = -q[..., 1::2]
        rot[..., 1::2] = q[..., 0::2]
    return q * cos + rot * sin


def _width(cos: np.ndarray, layout: str | None) -> int:
    return 2 * cos.shape[1] if layout == "cache" else cos.shape[1]


def check_pythagorean(ctx: CheckContext) -> CheckResult:
    cos, sin, _ = pair(ctx)
    a = scaling(ctx)
    worst, where = 0.0, (0, 0)
    for (start, c), (_, s) in zip(blocks(ctx, cos), blocks(ctx, sin)):
        err = np.abs(c * c + s * s - a * a)
        if not np.isfinite(err).all():
            return skipped("pythagorean")
        i = int(err.argmax())
        if err.flat[i] > worst:
            worst, where = float(err.flat[i]), (start + i // err.shape[1], i % err.shape[1])
    v = arith_bounds(ctx)[0]
    tol = 2 * ctx.rtol * a * a + 2 * v * (2 * a + v)  # (c + dc)^2 + (s + ds)^2 with |dc|, |ds| <= v
    detail = (
        f"cos^2 + sin^2 = {fmt(a * a)} (attention_scaling {fmt(a)}) at every entry"
        if worst <= tol
        else f"cos^2 + sin^2 misses {fmt(a * a)} by {fmt(worst)} at row {where[0]}, column {where[1]}"
    )
    return verdict("pythagorean", worst <= tol, worst, tol, detail, attention_scaling=a)


def _norm_error(
    ctx: CheckContext, cos: np.ndarray, sin: np.ndarray, layout: str, q: np.ndarray, a: float
) -> tuple[float, int]:
    qn = np.linalg.norm(q, axis=1) * a
    worst, row = 0.0, 0
    for (start, c), (_, s) in zip(blocks(ctx, cos), blocks(ctx, sin)):
        # one probe at a time (rows x width, the same numbers as probes x rows x width at a fraction of the
        # memory traffic: 131072 rows took 1.2 s, now 0.5 s)
        norms = np.empty((len(q), c.shape[0]))
        for p, v in enumerate(q):
            norms[p] = np.linalg.norm(rotate(v, c, s, layout), axis=1)
        err = np.abs(norms - qn[:, None]) / qn[:, None]
        if not np.isfinite(err).all():
            return np.inf, start
        i = int(err.max(axis=0).argmax())
        if err[:, i].max() > worst:
            worst, row = float(err[:, i].max()), start + i
    return worst, row


def check_norm_preserving(ctx: CheckContext) -> CheckResult:
    cos, sin, layout = pair(ctx)
    a = scaling(ctx)
    rng = ctx.rng()
    q = rng.standard_normal((min(ctx.probes, 8), 2 * cos.shape[1]))
    tried = [layout] if layout else list(UNKNOWN_LAYOUTS)
    errs = {lay: _norm_error(ctx, cos, sin, lay, q[:, : _width(cos, lay)], a) for lay in tried}
    best = min(errs, key=lambda k: errs[k][0])
    worst, row = errs[best]
    tol = 2 * ctx.rtol + 2 * arith_bounds(ctx)[0] / max(abs(a), 1e-300)  # |(c, s) + (dc, ds)| moves by <= 2 v
    if not np.isfinite(worst):
        return skipped("norm-preserving")
    which = f"layout {best}" + ("" if layout else " (detected: no layout in metadata)")
    detail = (
        f"rotating {len(q)} random vectors by every row keeps |q| * {fmt(a)} ({which})"
        if worst <= tol
        else f"row {row} changes a vector's norm by a relative {fmt(worst)} ({which})"
    )
    return verdict(
        "norm-preserving",
        worst <= tol,
        worst,
        tol,
        detail,
        f"exact on every row, {len(q)} random vectors",
        layout=best,
        relative_error={k: v[0] for k, v in errs.items()},
    )


def check_relative(ctx: CheckContext) -> CheckResult:
    cos, sin, layout = pair(ctx)
    n = cos.shape[0]
    if n < 2:
        return skipped("relative", ONE_ROW, needs=("distinct",))
    a = scaling(ctx)
    rng = ctx.rng()
    m = rng.integers(0, n, RELATIVE_PAIRS)
    k = rng.integers(0, n, RELATIVE_PAIRS)
    lo = -np.minimum(m, k)
    hi = n - 1 - np.maximum(m, k)
    s = lo + (rng.random(RELATIVE_PAIRS) * (hi - lo + 1)).astype(np.int64)
    rows = np.unique(np.concatenate([m, k, m + s, k + s]))
    c, si = f64(cos[rows]), f64(sin[rows])
    if not (np.isfinite(c).all() and np.isfinite(si).all()):
        return skipped("relative")
    at = {int(r): i for i, r in enumerate(rows)}
    q = rng.standard_normal((ctx.probes, 2 * cos.shape[1]))
    kv = rng.standard_normal((ctx.probes, 2 * cos.shape[1]))
    lays = [layout] if layout else list(UNKNOWN_LAYOUTS)
    worst = {}
    for lay in lays:

        def score(pm: np.ndarray, pn: np.ndarray, lay: str = lay) -> np.ndarray:
            im = [at[int(x)] for x in pm]
            jn = [at[int(x)] for x in pn]
            w = _width(cos, lay)
            rq = rotate(q[:, None, :w], c[im][None], si[im][None], lay)
            rk = rotate(kv[:, None, :w], c[jn][None], si[jn][None], lay)
            return np.einsum("pij,pij->pi", rq, rk)

        diff = np.abs(score(m, k) - score(m + s, k + s))
        w = _width(cos, lay)
        norm = (np.linalg.norm(q[:, :w], axis=1) * np.linalg.norm(kv[:, :w], axis=1))[:, None] * a * a
        worst[lay] = float(np.max(diff / norm))
    best = min(worst, key=lambda lay: worst[lay])
    value = worst[best]
    # each rotation within 2 v |q| of the exact one: each score within 4 v |q||k| a, two scores compared
    tol = 4 * ctx.rtol + 8 * arith_bounds(ctx)[0] / max(abs(a), 1e-300)
    if not np.isfinite(value):
        return skipped("relative")
    detail = (
        f"<R_m q, R_n k> depends only on m - n over {RELATIVE_PAIRS} sampled (m, n) pairs (layout {best})"
        if value <= tol
        else f"<R_m q, R_n k> changes by a relative {fmt(value)} when m and n shift together (layout {best})"
    )
    return verdict(
        "relative",
        value <= tol,
        value,
        tol,
        detail,
        f"sampled: {RELATIVE_PAIRS} (m, n) pairs with random shifts, {ctx.probes} random (q, k)",
        layout=best,
    )


def angles(ctx: CheckContext) -> np.ndarray:
    """The rot_dim/2 angular frequencies: ``inv_freq`` when present, else from rows 0 and 1 of the tables."""
    inv = tensor(ctx, "inv_freq")
    if inv is not None:
        return f64(inv[:])
    cos, sin, layout = pair(ctx)
    c, s = f64(cos[:2]), f64(sin[:2])
    if layout is None:  # a pair that does not say its layout: each angle once unless its columns repeat
        h = c.shape[1] // 2
        if c.shape[1] % 2 == 0 and np.array_equal(c[:, :h], c[:, h:]) and np.array_equal(s[:, :h], s[:, h:]):
            layout = "half"
        elif c.shape[1] % 2 == 0 and np.array_equal(c[:, 0::2], c[:, 1::2]) and np.array_equal(s[:, 0::2], s[:, 1::2]):
            layout = "interleaved"
        else:
            layout = "cache"
    cols = (
        slice(None)
        if layout == "cache"
        else (slice(0, None, 2) if layout == "interleaved" else slice(0, c.shape[1] // 2))
    )
    c, s = c[:, cols], s[:, cols]
    return np.abs(np.arctan2(s[1] * c[0] - c[1] * s[0], c[1] * c[0] + s[1] * s[0]))


def decay_bound(theta: np.ndarray, distances: np.ndarray) -> np.ndarray:
    r"""RoFormer (section 3.4.3) bound :math:`\frac{1}{d/2}\sum_{j=1}^{d/2} |S_j|`, :math:`S_j = \sum_{k<j} e^{i r \theta_k}`."""
    out = np.empty(distances.size)
    step = max(1, (1 << 20) // max(1, theta.size))
    for a in range(0, distances.size, step):
        r = distances[a : a + step, None].astype(np.float64)
        s = np.cumsum(np.exp(1j * r * theta[None, :]), axis=1)
        out[a : a + step] = np.abs(s).mean(axis=1)
    return out


def check_long_term_decay(ctx: CheckContext) -> CheckResult:
    cos, _, _ = pair(ctx)
    n = cos.shape[0]
    theta = angles(ctx)
    if not np.isfinite(theta).all():
        return skipped("long-term-decay")
    if n < 3:
        return CheckResult("long-term-decay", None, None, None, "fewer than 3 rows", "exact")
    r = np.arange(1, n)
    bound = decay_bound(theta, r)
    points = {int(x): float(bound[x - 1]) for x in (1, 10, 100, 1000, 10000, 100000) if x < n}
    # "decreasing on average": the mean over each decade of distances is below the previous decade's.
    edges = [1]
    while edges[-1] * 10 < n:
        edges.append(edges[-1] * 10)
    edges.append(n)
    means = [float(bound[a - 1 : b - 1].mean()) for a, b in zip(edges[:-1], edges[1:]) if b > a]
    # Non-increasing decade to decade, and falling overall (a flat curve, e.g. one frequency, does not decay).
    ok = len(means) >= 2 and all(y <= x for x, y in zip(means, means[1:])) and means[-1] < 0.99 * means[0]
    if len(means) < 2:
        return CheckResult(
            "long-term-decay",
            None,
            points.get(1),
            None,
            "fewer than 11 rows: one decade, no trend",
            "exact over every distance 1..len-1",
            {"points": points, "decade_means": means},
        )
    summary = ", ".join(f"{k}: {v:.3f}" for k, v in points.items())
    detail = (
        f"bound at distance {summary}; decade means {' > '.join(f'{m:.3f}' for m in means)}"
        if ok
        else f"bound at distance {summary}; decade means do not fall: {', '.join(f'{m:.3f}' for m in means)}"
    )
    return verdict(
        "long-term-decay",
        ok,
        points[min(points)] if points else None,
        None,
        detail,
        "exact over every distance 1..len-1",
        points=points,
        decade_means=means,
    )


__all__ = [
    "check_long_term_decay",
    "check_norm_preserving",
    "check_pythagorean",
    "check_relative",
    "has_tables",
    "rotate",
]
