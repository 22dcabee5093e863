"""Heads x query x key tables (ALiBi and other biases): transposed, heads reordered, negated, scaled, rounded,
or each head scaled by its own factor (slopes of another rule)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import analysis as an
from .. import tolerance
from .columns import constant_scale_step, match_columns, precision_step
from .core import Ctx, Explanation, Model, Step, explain

#: The maximum bias of the published slope rules (the paper's 8).
ALIBI_MAX_BIAS = 8
#: Query rows sampled from each head.
HEAD_ROWS = 24


# ----- 3-D (heads x len x len) --------------------------------------------------------------------------------------
def _sample(t: Any, n: int, q: np.ndarray, transpose: bool) -> np.ndarray:
    """Rows ``q`` of each head's first ``n`` x ``n`` block (transposed when ``transpose``), one column per head."""
    cols = []
    for h in range(int(t.shape[0])):
        m = np.asarray(t[h] if isinstance(t, np.ndarray) else t.rows(h, h + 1)[0], dtype=np.float64)[:n, :n]
        cols.append((m.T if transpose else m)[q].reshape(-1))
    return np.stack(cols, axis=1)


def _heads_map(xa: np.ndarray, xb: np.ndarray, dt: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Heads of A matched to heads of B up to sign, with a common least-squares factor when they do not match."""
    cols, signs, matched = match_columns(xa, xb, dt)
    scale = 1.0
    if not matched.all():
        fb = np.nan_to_num(xb[:, cols], posinf=0, neginf=0)
        fa = np.nan_to_num(xa, posinf=0, neginf=0)
        den = float(np.einsum("ij,ij->", fb, fb))
        if den > 0:
            scale = float(np.einsum("ij,ij->", fa, fb)) / den
            with np.errstate(invalid="ignore"):
                cols, signs, matched = match_columns(xa, xb * scale, dt)
    return cols, signs, matched, scale


def _heads_steps(
    ctx: Ctx, na: int, nb: int, transpose: bool, cols: np.ndarray, signs: np.ndarray, scale: float
) -> list[Step]:
    a_name, b_name = ctx.a_name, ctx.b_name
    steps: list[Step] = []
    if na != nb:
        n = min(na, nb)
        small, big = (a_name, b_name) if na < nb else (b_name, a_name)
        steps.append(
            Step(
                "sub-range",
                f"{small} is the first {n} positions of {big}",
                f"taking the first {n} positions",
                {"start": 0, "stop": n, "of": "b" if na < nb else "a"},
            )
        )
    if transpose:
        steps.append(
            Step("transpose", f"{a_name} is {b_name} with query and key exchanged (transposed)", "transposing", {})
        )
    if not np.array_equal(cols, np.arange(cols.size)):
        text = f"{b_name} is {a_name} with its heads reordered"
        steps.append(Step("column-permutation", text, "reordering heads", {"permutation": cols}))
    neg = np.flatnonzero(signs < 0)
    if neg.size:
        text = f"{b_name} is {a_name} with {neg.size} heads negated"
        steps.append(Step("sign-flip", text, "negating heads", {"heads": neg}))
    if scale != 1.0:
        steps.append(constant_scale_step(ctx, scale))
    if ctx.precision is not None:
        steps.append(precision_step(ctx, ctx.precision))
    return steps


def diagnose_3d(a: Any, b: Any, a_name: str, b_name: str) -> tuple[list[Explanation], list[Explanation], str]:
    """Heads x query x key tables: transposed (key x query), the first positions of the other, heads reordered,
    negated or scaled, rounded."""
    ha, na = int(a.shape[0]), int(a.shape[1])
    hb, nb = int(b.shape[0]), int(b.shape[1])
    if a.shape[1] != a.shape[2] or b.shape[1] != b.shape[2]:
        return [], [], f"shapes {tuple(a.shape)} and {tuple(b.shape)}: 3-D tables must be heads x len x len"
    if ha != hb:
        return [], [], f"{a_name} has {ha} heads and {b_name} {hb}; heads cannot be matched"
    n = min(na, nb)
    q = an.spread_rows(n, HEAD_ROWS)
    xa = _sample(a, n, q, False)
    dt_a, dt_b = np.dtype(a.dtype), np.dtype(b.dtype)
    eff_b = an.effective_dtype(_sample(b, n, q, False), dt_b)
    ctx = Ctx(a, b, a_name, b_name, None, dt_a, dt_b, an.effective_dtype(xa, dt_a), eff_b)
    dt = ctx.match_dtype
    explanations: list[Explanation] = []
    tried: list[Explanation] = []
    for transpose in (False, True):
        xb = _sample(b, n, q, transpose)
        cols, signs, matched, scale = _heads_map(xa, xb, dt)
        with np.errstate(invalid="ignore"):
            pred = xb[:, cols] * signs[None, :] * scale
        xa_c = xa
        if ctx.precision is not None:
            pred = pred.astype(ctx.precision).astype(np.float64)
            xa_c = xa.astype(ctx.precision).astype(np.float64)
        res = an.residual(xa_c, pred, dt, dt, rows_checked=int(q.size))
        steps = _heads_steps(ctx, na, nb, transpose, cols, signs, scale)
        if not steps:
            if res.within and matched.all():
                return [], [], "same"  # agrees as it is: nothing to explain
            continue
        exp = explain(steps, res, ctx, Model())
        exp.model = None
        (explanations if res.within and matched.all() else tried).append(exp)
        if explanations:
            break
    if not explanations and na == nb:
        scaled = _head_scales(a, b, xa, _sample(b, n, q, False), ctx, int(q.size))
        if scaled is not None:
            explanations.append(scaled)
    return explanations, tried, ""


def head_scale_step(ctx: Ctx, k: np.ndarray, rule_a: str, rule_b: str) -> Step:
    """``head-scale``: each head scaled by its own factor; the slope rules named when both follow one."""
    summary = f"{ctx.a_name} is {ctx.b_name} with each head scaled by its own factor (other slopes)"
    if rule_a and rule_b and rule_a != rule_b:
        summary = f"{ctx.a_name} has slopes {rule_a}; {ctx.b_name} {rule_b}"
    return Step("head-scale", summary, "scaling each head", {"factors": k, "rule_a": rule_a, "rule_b": rule_b})


def _head_scales(a: Any, b: Any, xa: np.ndarray, xb: np.ndarray, ctx: Ctx, rows: int) -> Explanation | None:
    """Each head of ``a`` is the same head of ``b`` times its own factor (linear biases with other slopes); when
    both tables' slopes follow a known rule, the rule is named by the frameworks that use it."""
    fa, fb = np.nan_to_num(xa, posinf=0, neginf=0), np.nan_to_num(xb, posinf=0, neginf=0)
    den = np.einsum("ij,ij->j", fb, fb)
    if not np.all(den > 0):
        return None
    k = np.einsum("ij,ij->j", fa, fb) / den
    with np.errstate(invalid="ignore"):
        pred = xb * k[None, :]
    res = an.residual(xa, pred, ctx.match_dtype, ctx.match_dtype, rows_checked=rows)
    if not res.within or np.allclose(k, k[0], rtol=tolerance.HEAD_FACTORS_SAME):
        return None  # not per-head factors (one common factor is constant-scale's business)
    heads = int(xa.shape[1])
    step = head_scale_step(ctx, k, _slope_rule(a, heads), _slope_rule(b, heads))
    return Explanation(
        "head-scale", step.clause, [step], res.max_abs, res.ulp, res.ulp_dtype, True, res.rows_checked, None
    )


#: Slope rules of linear attention biases, by the frameworks that compute them (see ``alibi_slopes``).
SLOPE_RULES = {
    "paper": "as the paper, HF Bloom and MPT compute them for {n} heads",
    "geometric": "as MLX computes them for {n} heads (2^(-8k/n))",
}


def _slope_rule(t: Any, heads: int) -> str:
    """Which published rule the per-head slopes of a linear-bias table follow (slope = -T[h, 1, 0]), or ''."""
    from ...encodings.relative import alibi_slopes

    if int(t.shape[1]) < 2:
        return ""
    got = np.array(
        [-float(np.asarray(t[h] if isinstance(t, np.ndarray) else t.rows(h, h + 1)[0])[1, 0]) for h in range(heads)]
    )
    if heads & (heads - 1) == 0:
        return ""  # the rules agree for powers of two
    for rule, text in SLOPE_RULES.items():
        if np.allclose(got, alibi_slopes(heads, ALIBI_MAX_BIAS, rule), rtol=tolerance.slope_rtol(t.dtype), atol=0):
            return text.format(n=heads)
    return ""
