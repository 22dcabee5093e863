"""Explanations that map columns: layouts, permutations, partial rotary, signs, a constant scale and rounding,
at aligned rows, with rows shifted (row offsets, sub-ranges) or with A transposed."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import analysis as an
from .. import tolerance
from ..metrics import finfo
from .core import (
    MATCH_ROWS,
    SHOWN_MAP,
    Ctx,
    Explanation,
    Model,
    Step,
    all_close,
    close,
    dtype_name,
    explain,
    read,
    rows_in,
    valid_rows,
    verify,
)
from .offsets import plausible


# ----- column maps -----------------------------------------------------------------------------------------------
def match_columns(xa: np.ndarray, xb: np.ndarray, dt: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each column of ``xa``, a column of ``xb`` equal to it up to sign (within tolerance).

    Candidates are the 8 nearest columns by Euclidean distance (of ``x`` and of ``-x``), checked elementwise.
    Returns ``(cols, signs, matched)``.
    """
    fa = np.nan_to_num(xa, nan=0.0, posinf=0.0, neginf=0.0)
    fb = np.nan_to_num(xb, nan=0.0, posinf=0.0, neginf=0.0)
    na = np.einsum("ij,ij->j", fa, fa)
    nb = np.einsum("ij,ij->j", fb, fb)
    g = fa.T @ fb
    dp = na[:, None] + nb[None, :] - 2 * g
    dm = na[:, None] + nb[None, :] + 2 * g
    dist = np.minimum(dp, dm)
    sgn = np.where(dp <= dm, 1.0, -1.0)
    k = min(8, xb.shape[1])
    cand = np.argpartition(dist, k - 1, axis=1)[:, :k] if k < xb.shape[1] else np.tile(np.arange(k), (xa.shape[1], 1))
    order = np.argsort(np.take_along_axis(dist, cand, axis=1), axis=1)
    cand = np.take_along_axis(cand, order, axis=1)
    cols = np.zeros(xa.shape[1], dtype=np.int64)
    signs = np.ones(xa.shape[1])
    matched = np.zeros(xa.shape[1], dtype=bool)
    ar = np.arange(xa.shape[1])
    for i in range(k):
        c = cand[:, i]
        s = sgn[ar, c]
        for sign_try in (s, -s):
            todo = ~matched
            if not todo.any():
                break
            ok = np.all(close(xa[:, todo], xb[:, c[todo]] * sign_try[todo][None, :], dt), axis=0)
            hit = np.flatnonzero(todo)[ok]
            cols[hit] = c[hit]
            signs[hit] = sign_try[hit]
            matched[hit] = True
    return cols, signs, matched


def _best_ratios(xa: np.ndarray, xb: np.ndarray) -> np.ndarray:
    """``|a . b| / |b|^2`` for each column of ``xa`` and its most correlated column of ``xb`` (|cosine| > 0.999)."""
    fa = np.nan_to_num(xa, nan=0.0, posinf=0.0, neginf=0.0)
    fb = np.nan_to_num(xb, nan=0.0, posinf=0.0, neginf=0.0)
    na = np.sqrt(np.einsum("ij,ij->j", fa, fa))
    nb2 = np.einsum("ij,ij->j", fb, fb)
    g = fa.T @ fb
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.abs(g) / (na[:, None] * np.sqrt(nb2)[None, :])
    cos = np.nan_to_num(cos)
    best = np.argmax(cos, axis=1)
    ar = np.arange(xa.shape[1])
    keep = cos[ar, best] > tolerance.SCALE_COSINE
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.abs(g[ar, best] / nb2[best])
    r = r[keep]
    return r[np.isfinite(r) & (r > 0)]


def _named_maps(d: int) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """Column maps conventions produce, as ``(tags, p)`` with ``A[:, j] = B[:, p[j]]``.

    Tags: ``to-interleaved`` (A split/half, B interleaved), ``from-interleaved`` (the reverse), ``swap-halves``
    ([x | y] vs [y | x]) and ``swap-pairs`` (the members of every column pair exchanged), and their compositions.
    """
    out: list[tuple[tuple[str, ...], np.ndarray]] = []
    if d < 2:
        return out
    for h in sorted({d // 2, (d + 1) // 2}):
        if h < 1 or h - (d - h) not in (0, 1):
            continue
        to_i = np.empty(d, dtype=np.int64)
        to_i[:h] = 2 * np.arange(h)
        to_i[h:] = 2 * np.arange(d - h) + 1
        out.append((("to-interleaved",), to_i))
        out.append((("from-interleaved",), np.argsort(to_i)))
    if d % 2 == 0:
        h = d // 2
        halves = (np.arange(d) + h) % d
        pairs = np.arange(d) ^ 1
        to_i = out[0][1]
        from_i = out[1][1]
        out.append((("swap-halves",), halves))
        out.append((("swap-pairs",), pairs))
        # A = [cos | sin] -> B interleaved (sin, cos): swap A's halves, then interleave
        out.append((("swap-halves", "to-interleaved"), to_i[halves]))
        # A interleaved -> B = [cos | sin]: split, then swap the halves
        out.append((("from-interleaved", "swap-halves"), halves[from_i]))
    return out


def _stacked_maps(d: int) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """Named maps for a [cos | sin] pair of width ``d`` each: each single-table map per block, and the same with
    the blocks exchanged (``cos-sin-swap``)."""
    out: list[tuple[tuple[str, ...], np.ndarray]] = [((), np.arange(2 * d))]
    singles = [((), np.arange(d)), *_named_maps(d)]
    for tags, p in singles:
        if tags:
            out.append((tags, np.concatenate([p, d + p])))
        out.append(((*tags, "cos-sin-swap"), np.concatenate([d + p, p])))
    return out


def _equivalent(xb: np.ndarray, c1: np.ndarray, c2: np.ndarray, dt: np.dtype) -> bool:
    """Whether two column maps read the same values of B (duplicated columns make maps non-unique)."""
    return all_close(xb[:, c1], xb[:, c2], dt)


def _subset_maps(d_small: int, d_big: int) -> list[tuple[str, np.ndarray]]:
    """Column subsets a partial-rotary table takes from a wider one: the first columns, or the first
    ``d_small/2`` of each half (half layout)."""
    out = [("first", np.arange(d_small))]
    if d_small % 2 == 0 and d_big % 2 == 0:
        r, h = d_small // 2, d_big // 2
        out.append(("half", np.concatenate([np.arange(r), h + np.arange(r)])))
    return out


# ----- describing the steps -----------------------------------------------------------------------------------------
def _cols_text(cols: np.ndarray, width: int) -> str:
    c = np.asarray(cols)
    if c.size == width:
        return "every column"
    if c.size > 1 and np.all(np.diff(c) == 2):
        return f"every other column from {c[0]} ({c.size} columns)"
    if c.size > 1 and np.all(np.diff(c) == 1):
        return f"columns {c[0]}..{c[-1]}"
    shown = ", ".join(str(int(x)) for x in c[:8])
    return f"columns {shown}{', ...' if c.size > 8 else ''} ({c.size} columns)"


def _dup_halves(x: np.ndarray, dt: np.dtype) -> bool:
    d = x.shape[1]
    return d % 2 == 0 and d > 0 and all_close(x[:, : d // 2], x[:, d // 2 :], dt)


def qk_permutation_step(layout: Step, ctx: Ctx) -> Step:
    """What a rotary pairing change means for llama.cpp: the table in consecutive pairs uses the pairing of
    llama.cpp's NORM rope type, and convert_hf_to_gguf.py permutes the Q/K weights of those architectures
    (``LlamaModel.permute``) so that attention scores equal HF's rotate_half (see posenc_cli/models/llamacpp.py)."""
    consecutive, halves = (
        (ctx.a_name, ctx.b_name) if layout.detail["from"] == "interleaved" else (ctx.b_name, ctx.a_name)
    )
    return Step(
        "qk-permutation",
        f"{consecutive}'s consecutive pairs are the pairing llama.cpp NORM uses; convert_hf_to_gguf.py permutes "
        f"Q/K so scores match {halves}'s rotate_half",
        "",
        {"consecutive": consecutive, "rotate_half": halves},
    )


def layout_step(tag: str, xa: np.ndarray, xb: np.ndarray, dt: np.dtype, ctx: Ctx, block: str = "") -> Step:
    """Name a conventional column map from the tables' own structure (duplicated halves = rotary ``half``)."""
    A, B = ctx.a_name, ctx.b_name
    of = f" {block}" if block else ""
    if tag == "to-interleaved":
        if _dup_halves(xa, dt):
            return Step(
                "layout-half-to-interleaved",
                f"{B}{of} is {A}{of} with interleaved pairs (half -> interleaved: HF rotate_half's layout -> GPT-J, "
                "llama.cpp NORM and MLX traditional=True)",
                "reordering columns",
                {"from": "half", "to": "interleaved"},
            )
        return Step(
            "layout-split-to-interleaved",
            f"{B}{of} is {A}{of} with interleaved sin/cos columns (split -> interleaved)",
            "reordering columns",
            {"from": "split", "to": "interleaved"},
        )
    if tag == "from-interleaved":
        if _dup_halves(xb, dt):
            return Step(
                "layout-interleaved-to-half",
                f"{B}{of} is {A}{of} with its pairs in two halves (interleaved -> half: GPT-J, llama.cpp NORM and "
                "MLX traditional=True -> HF rotate_half's layout)",
                "reordering columns",
                {"from": "interleaved", "to": "half"},
            )
        return Step(
            "layout-interleaved-to-split",
            f"{B}{of} is {A}{of} with sin and cos in separate halves (interleaved -> split)",
            "reordering columns",
            {"from": "interleaved", "to": "split"},
        )
    if tag == "swap-halves":
        first = _first_half_role(xa)
        arrow = "([cos | sin] -> [sin | cos])" if first == "cos" else "([sin | cos] -> [cos | sin])" if first else ""
        return Step(
            "sin-cos-order",
            f"{B}{of} is {A}{of} with its two halves swapped {arrow}".rstrip(),
            "swapping the halves",
            {"swap": "halves"},
        )
    return Step(
        "sin-cos-order",
        f"{B}{of} is {A}{of} with the two columns of every pair swapped",
        "swapping the columns of each pair",
        {"swap": "pairs"},
    )


def _first_half_role(x: np.ndarray) -> str | None:
    """'sin' or 'cos' for the first half of a split table, read at its first sampled row (position 0: sin 0)."""
    if x.shape[0] == 0 or x.shape[1] < 2:
        return None
    h = x.shape[1] // 2
    row = x[0]
    if np.all(row[:h] == 0) and np.all(np.abs(row[h:]) > 0):
        return "sin"
    if np.all(row[h:] == 0) and np.all(np.abs(row[:h]) > 0):
        return "cos"
    return None


# ----- the steps this search names (each entry's ``explains``) -------------------------------------------------
def transpose_step(ctx: Ctx) -> Step:
    """``transpose``: A is B transposed."""
    return Step("transpose", f"{ctx.a_name} is {ctx.b_name} transposed", "transposing", {})


def row_offset_step(ctx: Ctx, shift: int) -> Step:
    """``row-offset``: A's row r is B's row r + shift."""
    A, B = ctx.a_name, ctx.b_name
    return Step(
        "row-offset",
        f"{A} is {B} shifted by {shift} rows ({A}'s row r is {B}'s row r{shift:+d})",
        f"shifting rows by {shift}",
        {"offset": shift},
    )


def sub_range_step(ctx: Ctx, start: int, count: int, of_b: bool) -> Step:
    """``sub-range``: A is ``count`` rows of B from ``start`` (or B of A when not ``of_b``)."""
    small, big = (ctx.a_name, ctx.b_name) if of_b else (ctx.b_name, ctx.a_name)
    what = f"the first {count} rows" if start == 0 else f"rows {start}..{start + count - 1}"
    verb = "taking" if of_b else "comparing"
    return Step(
        "sub-range",
        f"{small} is {what} of {big}",
        f"{verb} {what} of {big}",
        {"start": start, "stop": start + count, "of": "b" if of_b else "a"},
    )


def column_permutation_step(ctx: Ctx, cols: np.ndarray) -> Step:
    """``column-permutation``: any other reordering of the columns."""
    A, B = ctx.a_name, ctx.b_name
    pairs = ", ".join(f"{j}->{int(c)}" for j, c in enumerate(cols[:SHOWN_MAP]))
    more = ", ..." if cols.size > SHOWN_MAP else ""
    return Step(
        "column-permutation",
        f"{B} is {A} with its columns reordered ({A} column j is {B} column p[j]: {pairs}{more})",
        "reordering columns",
        {"permutation": cols},
    )


def cos_sin_swap_step(ctx: Ctx) -> Step:
    """``cos-sin-swap``: a rotary pair's tensors exchanged."""
    return Step(
        "cos-sin-swap", f"{ctx.a_name}'s cos and sin are {ctx.b_name}'s sin and cos", "swapping cos and sin", {}
    )


def partial_rotary_step(ctx: Ctx, d_a: int, d_b: int, cols: np.ndarray, subset: str | None) -> Step:
    """``partial-rotary``: A's columns are a subset of B's (``subset``: ``first``, ``half`` or None)."""
    A, B = ctx.a_name, ctx.b_name
    if subset == "half":
        text = f"the first {d_a // 2} of {B}'s {d_b // 2} frequencies in each half"
    elif subset is not None:
        text = f"{B}'s first {d_a} columns"
    else:
        text = f"{d_a} of {B}'s {d_b} columns ({_cols_text(np.unique(cols), d_b)})"
    return Step(
        "partial-rotary",
        f"{A} is {text} (partial rotary: {d_a} of {d_b} dims)",
        f"restricting {B} to {A}'s columns",
        {"columns": cols, "rotary_dim": d_a, "dim": d_b},
    )


def sign_flip_step(ctx: Ctx, neg: np.ndarray, d_a: int) -> Step:
    """``sign-flip``: the columns ``neg`` negated (a whole sin or cos tensor of a pair said so)."""
    A, B = ctx.a_name, ctx.b_name
    detail: dict[str, Any] = {"columns": neg}
    if ctx.blocks and d_a % 2 == 0 and np.array_equal(neg, np.arange(d_a // 2, d_a)):
        text, detail = f"{A}'s sin is {B}'s sin negated", {"tensor": "sin", "columns": neg}
    elif ctx.blocks and d_a % 2 == 0 and np.array_equal(neg, np.arange(d_a // 2)):
        text, detail = f"{A}'s cos is {B}'s cos negated", {"tensor": "cos", "columns": neg}
    elif neg.size == d_a:
        text = f"{A} is -{B} (every value negated)"
    else:
        text = f"{B} is {A} with {_cols_text(neg, d_a)} negated"
    return Step("sign-flip", text, f"negating {neg.size} column{'s' if neg.size > 1 else ''}", detail)


def constant_scale_step(ctx: Ctx, scale: float) -> Step:
    """``constant-scale``: A is B times a constant (attention scaling)."""
    return Step(
        "constant-scale",
        f"{ctx.a_name} is {ctx.b_name} scaled by {scale:.6g}",
        f"scaling by {scale:.6g}",
        {"factor": scale},
    )


def precision_step(ctx: Ctx, prec: np.dtype) -> Step:
    """``precision-float16`` / ``precision-bfloat16``: one table is the other rounded."""
    coarse_is_a = finfo(ctx.eff_a).eps >= finfo(ctx.eff_b).eps
    who, other = (ctx.a_name, ctx.b_name) if coarse_is_a else (ctx.b_name, ctx.a_name)
    name = dtype_name(prec)
    return Step(
        f"precision-{name}",
        f"{who} is {other} rounded to {name}",
        f"rounding {other} to {name}",
        {"dtype": name, "rounded": "a" if coarse_is_a else "b"},
    )


# ----- geometry + columns + values --------------------------------------------------------------------------------
def _geometry_steps(ctx: Ctx, shift: int, transpose: bool) -> list[Step]:
    steps = [transpose_step(ctx)] if transpose else []
    n_a = ctx.n_a
    n_b = ctx.d_b if transpose else ctx.n_b
    if n_a == n_b and shift:
        steps.append(row_offset_step(ctx, shift))
    elif n_a < n_b and shift >= 0 and shift + n_a <= n_b:
        steps.append(sub_range_step(ctx, shift, n_a, True))
    elif n_b < n_a and shift <= 0 and n_b - shift <= n_a:
        steps.append(sub_range_step(ctx, -shift, n_b, False))
    elif shift:
        steps.append(row_offset_step(ctx, shift))
    return steps


def _map_steps(ctx: Ctx, xa: np.ndarray, xb: np.ndarray, cols: np.ndarray, dt: np.dtype) -> list[Step]:
    """Name a column map between tables of one width: a conventional layout change, a cos/sin swap (with the
    llama.cpp meaning of a rotary pairing change), or any other permutation."""
    d_a = xa.shape[1]
    named = _stacked_maps(d_a // 2) if ctx.blocks else [((), np.arange(d_a)), *_named_maps(d_a)]
    tags_found = next((tags for tags, p in named if np.array_equal(cols, p) or _equivalent(xb, cols, p, dt)), None)
    if tags_found is None:
        return [column_permutation_step(ctx, cols)]
    block_d = d_a // 2 if ctx.blocks else d_a
    steps = [
        cos_sin_swap_step(ctx) if tag == "cos-sin-swap" else layout_step(tag, xa[:, :block_d], xb[:, :block_d], dt, ctx)
        for tag in tags_found
    ]
    steps = sorted(steps, key=lambda s: s.name == "cos-sin-swap")
    rotary = [s for s in steps if s.name in ("layout-interleaved-to-half", "layout-half-to-interleaved")]
    if rotary:
        steps.append(qk_permutation_step(rotary[0], ctx))
    return steps


def _column_steps(
    ctx: Ctx, xa: np.ndarray, xb: np.ndarray, cols: np.ndarray, signs: np.ndarray, dt: np.dtype
) -> list[Step]:
    """Name a column map (with signs): identity, a conventional layout change, a cos/sin swap, a partial-rotary
    subset, or any other permutation; plus the negated columns."""
    d_a, d_b = xa.shape[1], xb.shape[1]
    if d_a == d_b:
        steps = _map_steps(ctx, xa, xb, cols, dt)
    else:
        found = [
            (label, p) for label, p in _subset_maps(d_a, d_b) if np.array_equal(cols, p) or _equivalent(xb, cols, p, dt)
        ]
        label, p = found[0] if found else (None, cols)
        steps = [partial_rotary_step(ctx, d_a, d_b, p, label)]
    neg = np.flatnonzero(signs < 0)
    if neg.size:
        steps.append(sign_flip_step(ctx, neg, d_a))
    return steps


def _conventional_map(ctx: Ctx, xa: np.ndarray, xb: np.ndarray, dt: np.dtype) -> np.ndarray | None:
    """The identity or a conventional map (layouts, partial-rotary subsets) that holds exactly: cheap, and it
    names the result."""
    d_a, d_b = xa.shape[1], xb.shape[1]
    candidates = [np.arange(d_a)] if d_a == d_b else [p for _, p in _subset_maps(d_a, d_b)]
    if d_a == d_b:
        named = _stacked_maps(d_a // 2) if ctx.blocks else _named_maps(d_a)
        candidates += [p for _, p in named]
    return next((p for p in candidates if all_close(xa, xb[:, p], dt)), None)


def _scaled_map(
    xa: np.ndarray, xb: np.ndarray, dt: np.dtype
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """A common scale factor (from each column's best-correlated column of B) under which every column maps,
    shown as the shortest decimal that still matches; None when there is none."""
    ratios = _best_ratios(xa, xb)
    if not ratios.size or ratios.size < tolerance.SCALE_COVERAGE * xa.shape[1]:
        return None
    agree = np.abs(ratios / np.median(ratios) - 1) < tolerance.SCALE_SPREAD
    if np.mean(agree) < tolerance.SCALE_COVERAGE:
        return None
    s = float(np.median(ratios))
    if not (abs(s - 1) > tolerance.scale_tol(dt) and math.isfinite(s)):
        return None
    cols, signs, matched = match_columns(xa, xb * s, dt)
    if not matched.all():
        return None
    # the least-squares factor, shown as the shortest decimal that still matches
    pb = np.nan_to_num(xb[:, cols] * signs[None, :], posinf=0.0, neginf=0.0)
    fa = np.nan_to_num(xa, posinf=0.0, neginf=0.0)
    s_ls = float(np.einsum("ij,ij->", fa, pb) / np.einsum("ij,ij->", pb, pb))
    for rel in tolerance.SCALE_ROUNDINGS:
        cand = an.nice_number(s_ls, rel)
        if all_close(xa, xb[:, cols] * signs[None, :] * cand, dt):
            return cols, signs, matched, cand
    return cols, signs, matched, s


def propose_columns(ctx: Ctx, shift: int, transpose: bool) -> tuple[Explanation | None, Explanation | None]:
    """Explain A as B (shifted / transposed) with columns mapped, negated, scaled and rounded.

    Returns ``(accounting explanation or None, closest attempt or None)``.
    """
    lo, hi = valid_rows(ctx, shift, transpose)
    if hi - lo < 1:
        return None, None
    rows = rows_in(lo, hi, MATCH_ROWS)
    xa, xb = read(ctx.a, rows), read(ctx.b, rows + shift, transpose)
    if xa.shape[1] > xb.shape[1]:
        return None, None  # a wider A is handled with the roles exchanged (diagnose swaps the tables)
    dt = ctx.match_dtype
    if shift and not plausible(xa, xb):
        return None, None
    base_steps = _geometry_steps(ctx, shift, transpose)
    scale = 1.0
    p = _conventional_map(ctx, xa, xb, dt)
    if p is not None:
        cols, signs, matched = p, np.ones(xa.shape[1]), np.ones(xa.shape[1], dtype=bool)
    else:
        cols, signs, matched = match_columns(xa, xb, dt)
        if not matched.all():
            scaled = _scaled_map(xa, xb, dt)
            if scaled is not None:
                cols, signs, matched, scale = scaled
    if not matched.all():
        model = Model(shift=shift, transpose=transpose, cols=cols, signs=signs, scale=scale)
        res = an.residual(xa, model.predict(ctx.b, rows), dt, dt, rows_checked=int(rows.size), row_index=rows)
        steps = base_steps or [Step("identity", f"{ctx.a_name} and {ctx.b_name} compared as they are", "", {})]
        return None, explain(steps, res, ctx, model)
    steps = base_steps + _column_steps(ctx, xa, xb, cols, signs, dt)
    if scale != 1.0:
        steps.append(constant_scale_step(ctx, scale))
    prec = ctx.precision
    model = Model(
        shift=shift,
        transpose=transpose,
        cols=None if np.array_equal(cols, np.arange(ctx.d_a)) else cols,
        signs=None if np.all(signs > 0) else signs,
        scale=scale,
        round_to=prec,
    )
    if prec is not None:
        steps.append(precision_step(ctx, prec))
    if not steps:
        return None, None  # identical: not an explanation
    res = verify(ctx, model)
    return (explain(steps, res, ctx, model), None) if res.within else (None, explain(steps, res, ctx, model))
