"""The models of the diagnosis: each explanation's forward model, how it is fitted on sampled rows and verified
on others (see :mod:`posenc_cli.diagnose` for the catalogue and the driver)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import analysis as an
from .. import tolerance
from ..metrics import coarser_dtype, finfo

#: Elementwise tolerance of "they agree" (posenc_cli.tolerance holds every tolerance).
ULP_TOL = tolerance.ULP_TOL
#: Rows read to find an explanation (a second, independent sample verifies it).
MATCH_ROWS = 256
CHECK_ROWS = 512
#: Row offsets tried directly before searching the whole reference for A's first row.
SMALL_SHIFTS = (1, -1, 2, -2, 3, -3, 4, -4)


# ----- results ---------------------------------------------------------------------------------------------------
@dataclass
class Step:
    """One change between the tables.

    ``name`` is the step's slug, ``clause`` a sentence about A and B, ``undo`` what undoing it does (for the
    summary) and ``detail`` the structured facts (permutation, offset, factor, columns, ...).
    """

    name: str
    clause: str
    undo: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "text": self.clause, "undo": self.undo, "detail": _jsonable(self.detail)}


@dataclass
class Explanation:
    """A catalogue entry that was tested: its steps, and what is left after undoing them.

    ``name`` is the slug of the single step, or the slugs of several joined by ``+``; ``accounts`` says the
    residual (``residual_max_abs``, ``residual_ulp`` ulps of ``ulp_dtype``, on ``rows_checked`` rows) is within
    tolerance.
    """

    name: str
    summary: str
    steps: list[Step]
    residual_max_abs: float
    residual_ulp: float
    ulp_dtype: str
    accounts: bool
    rows_checked: int
    model: _Model | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "summary": self.summary,
            "steps": [s.to_json() for s in self.steps],
            "residual_max_abs": _num(self.residual_max_abs),
            "residual_ulp": _num(self.residual_ulp),
            "ulp_dtype": self.ulp_dtype,
            "accounts": self.accounts,
            "rows_checked": self.rows_checked,
        }


@dataclass
class Diagnosis:
    """What :func:`diagnose` found: the explanations that account for the difference (best first).

    ``same`` is True when the tables already agree (on the rows checked); ``tried`` holds the closest attempts
    that did not account for it; ``reason`` is one line when nothing does.
    """

    a_name: str
    b_name: str
    shape_a: tuple[int, ...]
    shape_b: tuple[int, ...]
    same: bool
    explanations: list[Explanation] = field(default_factory=list)
    tried: list[Explanation] = field(default_factory=list)
    reason: str = ""

    @property
    def best(self) -> Explanation | None:
        return self.explanations[0] if self.explanations else None

    @property
    def summary(self) -> str:
        """One line: the best explanation, or why there is none."""
        if self.same:
            return f"{self.a_name} and {self.b_name} agree"
        return self.best.summary if self.best is not None else self.reason

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a_name,
            "b": self.b_name,
            "shape_a": list(self.shape_a),
            "shape_b": list(self.shape_b),
            "same": self.same,
            "summary": self.summary,
            "explanations": [e.to_json() for e in self.explanations],
            "tried": [e.to_json() for e in self.tried],
            "reason": self.reason,
        }


def _num(v: float) -> float | str:
    return v if math.isfinite(v) else str(v)


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_jsonable(x) for x in v.tolist()]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return _num(float(v))
    return v


# ----- tables side by side ---------------------------------------------------------------------------------------
class _Stacked:
    """Tensors of equal length read as one table, side by side along the columns (a rotary cos/sin pair)."""

    def __init__(self, parts: list[Any]) -> None:
        self.parts = parts
        self.widths = [int(np.prod(p.shape[1:])) for p in parts]
        self.shape = (int(parts[0].shape[0]), sum(self.widths))
        self.dtype = np.dtype(coarser_dtype(*(np.dtype(p.dtype) for p in parts)) if len(parts) > 1 else parts[0].dtype)

    def rows(self, start: int, stop: int) -> np.ndarray:
        idx = np.arange(start, stop)
        return np.concatenate([an.read_rows(p, idx).reshape(idx.size, -1) for p in self.parts], axis=1)


def _role(name: str) -> str | None:
    low = name.lower()
    if low.startswith("cos"):
        return "cos"
    if low.startswith("sin"):
        return "sin"
    return None


def _rotary_pair(tensors: dict[str, Any] | None) -> tuple[Any, Any] | None:
    """``(cos, sin)`` from a dict keyed by role or by tensor names such as ``cos_cache``."""
    if not tensors:
        return None
    found: dict[str, Any] = {}
    for name, t in tensors.items():
        role = _role(name)
        if role and role not in found and len(getattr(t, "shape", ())) == 2:
            found[role] = t
    if "cos" in found and "sin" in found and found["cos"].shape == found["sin"].shape:
        return found["cos"], found["sin"]
    return None


# ----- the forward model --------------------------------------------------------------------------------------------
@dataclass
class _Model:
    """Predict rows of A from B: ``A[r, j] = round(scale * sign[j] * B'[r + shift, cols[j]])`` where ``B'`` is B
    (transposed when ``transpose``), or ``synth(rows)`` when the prediction is computed rather than read."""

    shift: int = 0
    transpose: bool = False
    cols: np.ndarray | None = None
    signs: np.ndarray | None = None
    scale: float = 1.0
    round_to: np.dtype | None = None
    synth: Any = None
    atol: float | None = None

    def predict(self, b: Any, rows: np.ndarray) -> np.ndarray:
        if self.synth is not None:
            y = self.synth(rows)
        else:
            y = _read(b, rows + self.shift, self.transpose)
            if self.cols is not None:
                y = y[:, self.cols]
        if self.signs is not None:
            y = y * self.signs[None, :]
        if self.scale != 1.0:
            y = y * self.scale
        if self.round_to is not None:
            with np.errstate(over="ignore"):
                y = y.astype(self.round_to).astype(np.float64)
        return y


def _read(t: Any, rows: np.ndarray, transpose: bool = False) -> np.ndarray:
    """Rows of a 2-D table (of its transpose when ``transpose``) as float64."""
    if not transpose:
        return an.read_rows(t, rows).reshape(len(rows), -1)
    if isinstance(t, np.ndarray):
        return np.asarray(t[:, rows], dtype=np.float64).T
    return an.read_rows(t, np.arange(t.shape[0]))[:, rows].T


@dataclass
class _Ctx:
    a: Any
    b: Any
    a_name: str
    b_name: str
    blocks: list[str] | None
    dtype_a: np.dtype
    dtype_b: np.dtype
    eff_a: np.dtype
    eff_b: np.dtype

    @property
    def n_a(self) -> int:
        return int(self.a.shape[0])

    @property
    def n_b(self) -> int:
        return int(self.b.shape[0])

    @property
    def d_a(self) -> int:
        return int(np.prod(self.a.shape[1:]))

    @property
    def d_b(self) -> int:
        return int(np.prod(self.b.shape[1:]))

    @property
    def stored(self) -> np.dtype:
        return coarser_dtype(self.dtype_a, self.dtype_b)

    @property
    def precision(self) -> np.dtype | None:
        """The coarse dtype one table was rounded to, when their effective precisions differ."""
        if self.eff_a == self.eff_b:
            return None
        coarse = coarser_dtype(self.eff_a, self.eff_b)
        # float16 and bfloat16 only: a float32 table against a float64 one is compare's ordinary business
        return coarse if finfo(coarse).eps > finfo(np.dtype(np.float32)).eps else None

    @property
    def match_dtype(self) -> np.dtype:
        return self.precision if self.precision is not None else self.stored


def _close(x: np.ndarray, y: np.ndarray, dt: np.dtype, atol: float | None = None) -> np.ndarray:
    """Elementwise agreement: within ULP_TOL ulps of ``dt`` or within ``atol`` (2 ulps of 1.0) times the size."""
    tol = tolerance.default_atol(dt) if atol is None else atol
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(x - y)
    same = (x == y) | (np.isnan(x) & np.isnan(y))
    mag = np.maximum(1.0, np.maximum(np.abs(np.nan_to_num(x)), np.abs(np.nan_to_num(y))))
    near = same | (d <= tol * mag)
    if np.all(near):
        return near
    far = ~near
    near[far] = an.ulps(x[far], y[far], dt) <= ULP_TOL
    return near


# ----- column maps -----------------------------------------------------------------------------------------------
def _match_columns(xa: np.ndarray, xb: np.ndarray, dt: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
            ok = np.all(_close(xa[:, todo], xb[:, c[todo]] * sign_try[todo][None, :], dt), axis=0)
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
    keep = cos[ar, best] > 0.999
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
    return bool(np.all(_close(xb[:, c1], xb[:, c2], dt)))


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
    return d % 2 == 0 and d > 0 and bool(np.all(_close(x[:, : d // 2], x[:, d // 2 :], dt)))


def _qk_permutation_step(layout: Step, ctx: _Ctx) -> Step:
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


def _layout_step(tag: str, xa: np.ndarray, xb: np.ndarray, dt: np.dtype, ctx: _Ctx, block: str = "") -> Step:
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


def _within(res: an.Residual, stored: np.dtype) -> str:
    unit = "ulp" if res.ulp_dtype == _dtype_name(stored) else f"{res.ulp_dtype} ulp"
    if res.max_abs == 0:
        return "they agree exactly"
    if res.ulp <= 64:
        return f"they agree within {max(1, math.ceil(res.ulp - 1e-9)):d} {unit}"
    return f"they agree within {res.max_abs:.2g}"


def _dtype_name(dt: np.dtype) -> str:
    from ..encodings.base import dtype_name

    return dtype_name(np.dtype(dt))


def _join(parts: list[str]) -> str:
    parts = list(dict.fromkeys(p for p in parts if p))
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _clauses(steps: list[Step]) -> str:
    """The steps' clauses, those that start alike ("B is A with ...") merged into one sentence."""
    merged: dict[str, list[str]] = {}
    for s in steps:
        head, sep, tail = s.clause.partition(" with ")
        key = head if sep else s.clause
        merged.setdefault(key, [])
        if sep and tail not in merged[key]:
            merged[key].append(tail)
    return "; ".join(f"{k} with {_join(v)}" if v else k for k, v in merged.items())


def _explain(steps: list[Step], res: an.Residual, ctx: _Ctx, model: _Model) -> Explanation:
    name = "+".join(s.name for s in steps)
    clauses = _clauses(steps)
    summary = f"{clauses}: after {_join([s.undo for s in steps])} {_within(res, ctx.stored)}"
    return Explanation(name, summary, steps, res.max_abs, res.ulp, res.ulp_dtype, res.within, res.rows_checked, model)


# ----- verification -------------------------------------------------------------------------------------------------
def _valid_rows(ctx: _Ctx, shift: int, transpose: bool) -> tuple[int, int]:
    n_b = ctx.d_b if transpose else ctx.n_b
    lo = max(0, -shift)
    hi = min(ctx.n_a, n_b - shift)
    return lo, hi


def _rows_in(lo: int, hi: int, count: int, seed: int = 0) -> np.ndarray:
    if hi <= lo:
        return np.zeros(0, dtype=np.int64)
    return lo + an.spread_rows(hi - lo, count, seed=seed)


def _verify(ctx: _Ctx, model: _Model, cols_a: np.ndarray | None = None) -> an.Residual:
    """The residual of ``model`` on an independent sample of A's rows (every row for small tables)."""
    lo, hi = _valid_rows(ctx, model.shift, model.transpose)
    if model.synth is not None:
        lo, hi = 0, ctx.n_a
    width = ctx.d_a
    if hi - lo <= 0:
        return an.Residual(math.inf, math.inf, _dtype_name(ctx.stored), 0.0, False, 0)
    if (hi - lo) * max(width, 1) <= an.FULL_CHECK_ELEMENTS:
        rows = np.arange(lo, hi, dtype=np.int64)
    else:
        rows = _rows_in(lo, hi, CHECK_ROWS, seed=1)
    xa = _read(ctx.a, rows)
    if cols_a is not None:
        xa = xa[:, cols_a]
    pred = model.predict(ctx.b, rows)
    dt = ctx.match_dtype if model.round_to is None else np.dtype(model.round_to)
    if model.round_to is not None:
        with np.errstate(over="ignore"):
            xa = xa.astype(model.round_to).astype(np.float64)
    return an.residual(xa, pred, dt, dt, rows_checked=int(rows.size), row_index=rows, ulp_tol=ULP_TOL, atol=model.atol)


# ----- geometry + columns + values --------------------------------------------------------------------------------
def _geometry_steps(ctx: _Ctx, shift: int, transpose: bool) -> list[Step]:
    A, B = ctx.a_name, ctx.b_name
    steps: list[Step] = []
    if transpose:
        steps.append(Step("transpose", f"{A} is {B} transposed", "transposing", {}))
    n_a = ctx.n_a
    n_b = ctx.d_b if transpose else ctx.n_b
    if n_a == n_b and shift:
        steps.append(
            Step(
                "row-offset",
                f"{A} is {B} shifted by {shift} rows ({A}'s row r is {B}'s row r{shift:+d})",
                f"shifting rows by {shift}",
                {"offset": shift},
            )
        )
    elif n_a < n_b and shift >= 0 and shift + n_a <= n_b:
        what = f"the first {n_a} rows" if shift == 0 else f"rows {shift}..{shift + n_a - 1}"
        steps.append(
            Step(
                "sub-range",
                f"{A} is {what} of {B}",
                f"taking {what} of {B}",
                {"start": shift, "stop": shift + n_a, "of": "b"},
            )
        )
    elif n_b < n_a and shift <= 0 and n_b - shift <= n_a:
        what = f"the first {n_b} rows" if shift == 0 else f"rows {-shift}..{-shift + n_b - 1}"
        steps.append(
            Step(
                "sub-range",
                f"{B} is {what} of {A}",
                f"comparing {what} of {A}",
                {"start": -shift, "stop": -shift + n_b, "of": "a"},
            )
        )
    elif shift:
        steps.append(
            Step(
                "row-offset",
                f"{A} is {B} shifted by {shift} rows ({A}'s row r is {B}'s row r{shift:+d})",
                f"shifting rows by {shift}",
                {"offset": shift},
            )
        )
    return steps


def _column_steps(
    ctx: _Ctx, xa: np.ndarray, xb: np.ndarray, cols: np.ndarray, signs: np.ndarray, dt: np.dtype
) -> list[Step] | None:
    """Name a column map (with signs): identity, a conventional layout change, a cos/sin swap, a partial-rotary
    subset, or any other permutation; plus the negated columns. None if it is not a clean map."""
    A, B = ctx.a_name, ctx.b_name
    d_a, d_b = xa.shape[1], xb.shape[1]
    steps: list[Step] = []
    if d_a == d_b:
        named = _stacked_maps(d_a // 2) if ctx.blocks else [((), np.arange(d_a)), *_named_maps(d_a)]
        tags_found: tuple[str, ...] | None = None
        for tags, p in named:
            if np.array_equal(cols, p) or _equivalent(xb, cols, p, dt):
                tags_found = tags
                break
        if tags_found is None:
            pairs = ", ".join(f"{j}->{int(c)}" for j, c in enumerate(cols[:6]))
            steps.append(
                Step(
                    "column-permutation",
                    f"{B} is {A} with its columns reordered ({A} column j is {B} "
                    f"column p[j]: {pairs}{', ...' if d_a > 6 else ''})",
                    "reordering columns",
                    {"permutation": cols},
                )
            )
        else:
            block_d = d_a // 2 if ctx.blocks else d_a
            for tag in tags_found:
                if tag == "cos-sin-swap":
                    steps.append(
                        Step("cos-sin-swap", f"{A}'s cos and sin are {B}'s sin and cos", "swapping cos and sin", {})
                    )
                else:
                    xa1, xb1 = xa[:, :block_d], xb[:, :block_d]
                    steps.append(_layout_step(tag, xa1, xb1, dt, ctx))
            steps = sorted(steps, key=lambda s: s.name == "cos-sin-swap")
            rotary = [s for s in steps if s.name in ("layout-interleaved-to-half", "layout-half-to-interleaved")]
            if rotary:
                steps.append(_qk_permutation_step(rotary[0], ctx))
    else:
        subset = None
        for label, p in _subset_maps(d_a, d_b):
            if np.array_equal(cols, p) or _equivalent(xb, cols, p, dt):
                subset = (label, p)
                break
        if subset is not None and subset[0] == "half":
            text = f"the first {d_a // 2} of {B}'s {d_b // 2} frequencies in each half"
        elif subset is not None:
            text = f"{B}'s first {d_a} columns"
        else:
            text = f"{d_a} of {B}'s {d_b} columns ({_cols_text(np.unique(cols), d_b)})"
        steps.append(
            Step(
                "partial-rotary",
                f"{A} is {text} (partial rotary: {d_a} of {d_b} dims)",
                f"restricting {B} to {A}'s columns",
                {"columns": cols if subset is None else subset[1], "rotary_dim": d_a, "dim": d_b},
            )
        )
    neg = np.flatnonzero(signs < 0)
    if neg.size:
        if ctx.blocks and d_a % 2 == 0 and np.array_equal(neg, np.arange(d_a // 2, d_a)):
            text = f"{A}'s sin is {B}'s sin negated"
            detail: dict[str, Any] = {"tensor": "sin", "columns": neg}
        elif ctx.blocks and d_a % 2 == 0 and np.array_equal(neg, np.arange(d_a // 2)):
            text = f"{A}'s cos is {B}'s cos negated"
            detail = {"tensor": "cos", "columns": neg}
        elif neg.size == d_a:
            text = f"{A} is -{B} (every value negated)"
            detail = {"columns": neg}
        else:
            text = f"{B} is {A} with {_cols_text(neg, d_a)} negated"
            detail = {"columns": neg}
        steps.append(Step("sign-flip", text, f"negating {neg.size} column{'s' if neg.size > 1 else ''}", detail))
    return steps


def _try_columns(ctx: _Ctx, shift: int, transpose: bool) -> tuple[Explanation | None, Explanation | None]:
    """Explain A as B (shifted / transposed) with columns mapped, negated, scaled and rounded.

    Returns ``(accounting explanation or None, closest attempt or None)``.
    """
    lo, hi = _valid_rows(ctx, shift, transpose)
    if hi - lo < 1:
        return None, None
    rows = _rows_in(lo, hi, MATCH_ROWS)
    xa = _read(ctx.a, rows)
    xb = _read(ctx.b, rows + shift, transpose)
    if xa.shape[1] > xb.shape[1]:
        return None, None  # a wider A is handled with the roles exchanged (diagnose swaps the tables)
    dt = ctx.match_dtype
    if shift and not _plausible(xa, xb):
        return None, None
    base_steps = _geometry_steps(ctx, shift, transpose)
    prec = ctx.precision
    scale = 1.0
    cols: Any = None
    signs: Any = None
    matched: Any = None
    # identity and conventional maps first: cheap, and they name the result
    candidates = (
        [np.arange(xa.shape[1])]
        if xa.shape[1] == xb.shape[1]
        else [p for _, p in _subset_maps(xa.shape[1], xb.shape[1])]
    )
    if xa.shape[1] == xb.shape[1]:
        named = _stacked_maps(xa.shape[1] // 2) if ctx.blocks else _named_maps(xa.shape[1])
        candidates += [p for _, p in named]
    for p in candidates:
        if np.all(_close(xa, xb[:, p], dt)):
            cols, signs, matched = p, np.ones(xa.shape[1]), np.ones(xa.shape[1], dtype=bool)
            break
    if cols is None:
        cols, signs, matched = _match_columns(xa, xb, dt)
    if not matched.all():
        # a common scale factor: from each column's best-correlated column of B
        ratios = _best_ratios(xa, xb)
        consistent = (
            ratios.size >= 0.9 * xa.shape[1] and np.mean(np.abs(ratios / np.median(ratios) - 1) < 1e-3) >= 0.9
            if ratios.size
            else False
        )
        if consistent:
            s = float(np.median(ratios))
            if abs(s - 1) > tolerance.scale_tol(dt) and math.isfinite(s):
                c2, g2, m2 = _match_columns(xa, xb * s, dt)
                if m2.all():
                    cols, signs, matched, scale = c2, g2, m2, s
    if matched.all() and scale != 1.0:
        # the least-squares factor, shown as the shortest decimal that still matches
        pb = np.nan_to_num(xb[:, cols] * signs[None, :], posinf=0.0, neginf=0.0)
        fa = np.nan_to_num(xa, posinf=0.0, neginf=0.0)
        s_ls = float(np.einsum("ij,ij->", fa, pb) / np.einsum("ij,ij->", pb, pb))
        for tol in (1e-9, 1e-7, 1e-5, 1e-3):
            cand = an.nice_number(s_ls, tol)
            if np.all(_close(xa, xb[:, cols] * signs[None, :] * cand, dt)):
                scale = cand
                break
    if not matched.all():
        model = _Model(shift=shift, transpose=transpose, cols=cols, signs=signs, scale=scale)
        res = an.residual(xa, model.predict(ctx.b, rows), dt, dt, rows_checked=int(rows.size), row_index=rows)
        steps = base_steps or [Step("identity", f"{ctx.a_name} and {ctx.b_name} compared as they are", "", {})]
        return None, _explain(steps, res, ctx, model)
    steps = list(base_steps)
    col_steps = _column_steps(ctx, xa, xb, cols, signs, dt)
    steps += col_steps or []
    if scale != 1.0:
        # a rational-looking factor is shown as such; the model keeps the measured one
        steps.append(
            Step(
                "constant-scale",
                f"{ctx.a_name} is {ctx.b_name} scaled by {scale:.6g}",
                f"scaling by {scale:.6g}",
                {"factor": scale},
            )
        )
    model = _Model(
        shift=shift,
        transpose=transpose,
        cols=None if np.array_equal(cols, np.arange(ctx.d_a)) else cols,
        signs=None if np.all(signs > 0) else signs,
        scale=scale,
        round_to=prec,
    )
    if prec is not None:
        coarse_is_a = finfo(ctx.eff_a).eps >= finfo(ctx.eff_b).eps
        who, other = (ctx.a_name, ctx.b_name) if coarse_is_a else (ctx.b_name, ctx.a_name)
        name = _dtype_name(prec)
        steps.append(
            Step(
                f"precision-{name}",
                f"{who} is {other} rounded to {name}",
                f"rounding {other} to {name}",
                {"dtype": name, "rounded": "a" if coarse_is_a else "b"},
            )
        )
    res = _verify(ctx, model)
    if not steps:
        return None, None  # identical: not an explanation
    return (_explain(steps, res, ctx, model), None) if res.within else (None, _explain(steps, res, ctx, model))


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


def _plausible(xa: np.ndarray, xb: np.ndarray) -> bool:
    """Whether rows of A can be rows of B up to column order, signs, scale and rounding (by their signatures)."""
    sa, sb = _signature(xa), _signature(xb)
    both = np.isfinite(sa) & np.isfinite(sb)
    return bool(np.all(np.abs(sa[both] - sb[both]) <= 2e-2) and np.array_equal(np.isfinite(sa), np.isfinite(sb)))


def _scan_offsets(probe: Any, target: Any, limit: int = 6) -> list[int]:
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
    return [int(i[k]) for k in order if d[k] < 1e-3]


# ----- frequencies --------------------------------------------------------------------------------------------------
def _spectrum(ctx: _Ctx, which: str) -> an.Spectrum | None:
    t = ctx.a if which == "a" else ctx.b
    n = int(t.shape[0])
    sample = an.lag_sample(n)
    if not sample.usable:
        return None
    pairs = None
    if ctx.blocks:
        d = int(t.shape[1]) // 2
        pairs = [(d + j, j) for j in range(d)]
    spec = an.spectrum(t, sample=sample, pairs=pairs, dtype=ctx.dtype_a if which == "a" else ctx.dtype_b)
    return spec if spec.oscillators else None


def _layout_name(spec: an.Spectrum) -> str | None:
    return an.pair_layout(spec.pairs, spec.width)


def _synth_model(
    spec_a: an.Spectrum,
    spec_b: an.Spectrum,
    w_new: np.ndarray,
    amp_ratio: float,
    offset_b: int,
    shift: int,
    width_a: int,
) -> _Model | None:
    """Predict A by re-evaluating B's oscillators with frequencies ``w_new`` (in B's frequency order) at A's
    columns (k-th highest frequency of B -> k-th highest of A)."""
    ob = spec_b.by_frequency()
    oa = spec_a.by_frequency()
    if len(oa) != len(ob) or any(x.paired != y.paired for x, y in zip(oa, ob)):
        return None
    zero_a = list(spec_a.zero_cols)
    phase0 = np.array([o.phase - o.freq * offset_b for o in ob])
    # with the offset known, what remains of a phase is 0 (cos) or -pi/2 (a single sin column): snap it
    quarter = np.round(phase0 / (math.pi / 2))
    phase0 = np.where(np.abs(phase0 - quarter * math.pi / 2) < 1e-5, quarter * math.pi / 2, phase0)
    amps = np.array([o.amplitude for o in ob]) * amp_ratio
    s_cols = [o.sin_col for o in oa]
    c_cols = [o.cos_col for o in oa]
    w_new = np.asarray(w_new, dtype=np.float64)

    def synth(rows: np.ndarray) -> np.ndarray:
        t = rows.astype(np.float64)[:, None] + offset_b + shift
        theta = t * w_new[None, :] + phase0[None, :]
        out = np.zeros((rows.size, width_a))
        for k in range(len(oa)):
            if s_cols[k] is not None:
                out[:, s_cols[k]] = amps[k] * np.sin(theta[:, k])
            out[:, c_cols[k]] = amps[k] * np.cos(theta[:, k])
        if zero_a:
            out[:, zero_a] = 0.0
        return out

    return _Model(synth=synth)


def _synth_atol(n: int, w: np.ndarray, offset: int, amp: float, dt: np.dtype) -> float:
    """What float64 evaluation of sin(w t) may be off by (angle rounding), next to the table's own ulps."""
    t_max = abs(offset) + n
    return tolerance.synth_atol(dt, t_max, float(np.max(np.abs(w), initial=0.0)), amp)


def _try_frequencies(ctx: _Ctx) -> tuple[list[Explanation], list[Explanation]]:
    """Explanations from the tables' own frequencies: base, scaling, partial rotary, offset, scale, layout."""
    if len(ctx.a.shape) != 2 or len(ctx.b.shape) != 2:
        return [], []
    spec_a, spec_b = _spectrum(ctx, "a"), _spectrum(ctx, "b")
    if spec_a is None or spec_b is None or not spec_a.sinusoidal or not spec_b.sinusoidal:
        return [], []
    oa, ob = spec_a.by_frequency(), spec_b.by_frequency()
    A, B = ctx.a_name, ctx.b_name
    steps: list[Step] = []
    w_a, w_b = np.array([o.freq for o in oa]), np.array([o.freq for o in ob])
    e_a = np.array([o.err for o in oa])
    partial = ctx.d_a != ctx.d_b
    if len(oa) > len(ob) or (not partial and len(oa) != len(ob)):
        return [], []
    if partial:
        # the narrower A against B's highest frequencies
        ob_used = ob[: len(oa)]
        w_b = w_b[: len(oa)]
    else:
        ob_used = ob
    e_b = np.array([o.err for o in ob_used])
    w_a_all = w_a
    # a frequency written to two columns (rotary cos/sin tables) is measured twice: the laws see each once
    group_b = _groups(w_b, e_b)
    if np.array_equal(group_b, _groups(w_a, e_a)) and group_b[-1] + 1 < group_b.size:
        first = np.searchsorted(group_b, np.arange(group_b[-1] + 1))
        w_a, e_a, w_b, e_b = w_a[first], e_a[first], w_b[first], e_b[first]
    else:
        group_b = np.arange(w_b.size)
    width_b = spec_b.width if group_b[-1] + 1 == group_b.size and not ctx.blocks else 2 * (group_b[-1] + 1)
    geo_b = an.geometric_fit(w_b, e_b)
    w_b = _idealise(w_b, e_b, geo_b, w_b.size, width_b)
    prof = an.scaling_profile(w_a, w_b, e_a, e_b)
    if prof.kind in ("linear", "ramp-frequency", "ramp-index"):
        # a round factor, if it holds, makes the model exact
        trial = dataclasses.replace(prof, factor=an.nice_number(prof.factor, 1e-6))
        if np.all(np.abs(trial.predict(w_b) / w_a - 1) <= np.maximum(1e-6, 6 * np.hypot(e_a / w_a, e_b / w_b))):
            prof = trial
    lay_a, lay_b = _layout_name(spec_a), _layout_name(spec_b)
    off_a, off_b = an.position_offset(spec_a), an.position_offset(spec_b)
    o_a = off_a[0] if off_a and off_a[1] < 1e-3 else 0
    o_b = off_b[0] if off_b and off_b[1] < 1e-3 else 0
    amp_a = float(np.median([o.amplitude for o in oa]))
    amp_b = float(np.median([o.amplitude for o in ob_used]))
    ratio = amp_a / amp_b if amp_b > 0 else 1.0
    if lay_a and lay_b and lay_a != lay_b:
        steps.append(
            Step(
                f"layout-{_slug_layout(lay_a)}-to-{_slug_layout(lay_b)}",
                f"{B} is {A} with its columns in {lay_b} order ({lay_a} -> {lay_b})",
                "reordering columns",
                {"from": lay_a, "to": lay_b},
            )
        )
    if ctx.n_a != ctx.n_b:
        what = "fewer" if ctx.n_a < ctx.n_b else "more"
        steps.append(
            Step(
                "sub-range",
                f"{A} has {what} rows than {B} ({ctx.n_a} vs {ctx.n_b})",
                f"comparing {min(ctx.n_a, ctx.n_b)} rows",
                {"rows_a": ctx.n_a, "rows_b": ctx.n_b},
            )
        )
    if o_a != o_b:
        steps.append(
            Step(
                "row-offset",
                f"{A} starts at position {o_a - o_b:+d} relative to {B}",
                f"shifting positions by {o_a - o_b}",
                {"offset": o_a - o_b},
            )
        )
    if abs(ratio - 1) > 1e-6:
        steps.append(
            Step("constant-scale", f"{A} is {B} scaled by {ratio:.6g}", f"scaling by {ratio:.6g}", {"factor": ratio})
        )
    kind = prof.kind
    base_b = base_a = None
    conv = "2k/width"
    if geo_b is not None and geo_b.count == len(w_b) and len(w_b) > 1:
        base_b, conv = an.infer_base(geo_b.ratio, geo_b.w0, w_b.size, width_b)
    if kind in ("power", "power-linear") and base_b is not None:
        if partial and abs(prof.exponent - ctx.d_b / ctx.d_a) < 1e-6 * ctx.d_b:
            steps.append(
                Step(
                    "partial-rotary",
                    f"{A} rotates {ctx.d_a} of {B}'s {ctx.d_b} dims with frequencies over its own width "
                    f"(base^(-2k/{ctx.d_a}) where {B} has base^(-2k/{ctx.d_b}))",
                    f"recomputing {B}'s frequencies over {ctx.d_a} dims",
                    {"rotary_dim": ctx.d_a, "dim": ctx.d_b, "exponent": prof.exponent},
                )
            )
        else:
            base_a = base_b**prof.exponent
            nb, na_ = an.nice_number(base_b, 1e-6), an.nice_number(base_a, 1e-6)
            if kind == "power":
                # the round bases, if they hold, make the model exact
                trial = dataclasses.replace(prof, exponent=math.log(na_) / math.log(nb))
                if np.all(np.abs(trial.predict(w_b) / w_a - 1) <= np.maximum(1e-6, 6 * e_a / w_a)):
                    prof = trial
            r = 2 * w_b.size
            ntk = (base_a / base_b) ** ((r - 2) / r) if r > 2 else math.nan
            detail = {
                "base_a": base_a,
                "base_b": base_b,
                "exponent": prof.exponent,
                "convention": conv,
                "ntk_factor": ntk,
            }
            ntk_nice = an.nice_number(ntk, 1e-4) if math.isfinite(ntk) else math.nan
            ntk_text = (
                f"; NTK factor {ntk_nice:g}"
                if math.isfinite(ntk_nice) and abs(ntk_nice - 1) > 1e-3 and an.nice_digits(ntk_nice) <= 3
                else ""
            )
            steps.append(
                Step(
                    "base",
                    f"{A} uses base {na_:g} where {B} uses base {nb:g} "
                    f"(w_k = base^{_convention_text(conv, w_b.size, width_b)}{ntk_text})",
                    f"recomputing {B}'s frequencies with base {na_:g}",
                    detail,
                )
            )
        if kind == "power-linear":
            steps.append(
                Step(
                    "frequency-scaling",
                    f"{A} divides {B}'s frequencies by {prof.factor:.6g} as well",
                    f"dividing by {prof.factor:.6g}",
                    {"profile": "linear", "factor": prof.factor},
                )
            )
    elif kind == "linear":
        f = an.nice_number(prof.factor, 1e-6)
        steps.append(
            Step(
                "frequency-scaling",
                f"{A} divides {B}'s frequencies by {f:g} (linear scaling)",
                f"dividing {B}'s frequencies by {f:g}",
                {"profile": "linear", "factor": prof.factor},
            )
        )
    elif kind == "ramp-frequency" and prof.ramp is not None:
        f = an.nice_number(prof.factor, 1e-6)
        lo, hi = prof.ramp
        wl_hi, wl_lo = 2 * math.pi / lo if lo > 0 else math.inf, 2 * math.pi / hi
        steps.append(
            Step(
                "frequency-scaling",
                f"{A} divides {B}'s low frequencies by {f:g}, ramping linearly in frequency between "
                f"wavelengths {wl_lo:.6g} and {wl_hi:.6g} (llama3-style)",
                f"scaling {B}'s frequencies by that ramp",
                {
                    "profile": "ramp-frequency",
                    "factor": prof.factor,
                    "ramp": list(prof.ramp),
                    "wavelengths": [wl_lo, wl_hi],
                    "divisors": prof.divisors,
                },
            )
        )
    elif kind == "ramp-index" and prof.ramp is not None:
        f = an.nice_number(prof.factor, 1e-6)
        steps.append(
            Step(
                "frequency-scaling",
                f"{A} divides {B}'s frequencies by {f:g} from index {prof.ramp[1]:.4g} on, ramping linearly "
                f"in the index from {prof.ramp[0]:.4g} (YaRN-style)",
                f"scaling {B}'s frequencies by that ramp",
                {"profile": "ramp-index", "factor": prof.factor, "ramp": list(prof.ramp), "divisors": prof.divisors},
            )
        )
    elif kind == "per-column":
        d = prof.divisors
        steps.append(
            Step(
                "frequency-scaling",
                f"{A}'s frequencies are {B}'s divided column by column ({d.min():.4g} .. {d.max():.4g})",
                f"dividing {B}'s frequencies column by column",
                {"profile": "per-column", "divisors": d},
            )
        )
    if not steps:
        return [], []
    w_new = prof.predict(w_b)[group_b] if kind != "per-column" else w_a_all
    model = _synth_model(spec_a, _restricted(spec_b, ob_used), w_new, ratio, o_b, o_a - o_b, ctx.d_a)
    if model is None:
        return [], []
    dt = ctx.match_dtype
    model.atol = _synth_atol(ctx.n_a, w_new, o_a, max(amp_a, 1.0), dt)
    res = _verify(ctx, model)
    exp = _explain(steps, res, ctx, model)
    return ([exp], []) if res.within else ([], [exp])


def _groups(w: np.ndarray, err: np.ndarray) -> np.ndarray:
    """Group index of each frequency (in order), consecutive equal ones (within 6 sigma) sharing a group."""
    if w.size == 0:
        return np.zeros(0, dtype=np.int64)
    same = np.concatenate([[False], np.abs(np.diff(w)) <= 6 * np.hypot(err[1:], err[:-1])])
    return np.cumsum(~same) - 1


def _idealise(w: np.ndarray, err: np.ndarray, geo: an.GeometricFit | None, n_freqs: int, width: int) -> np.ndarray:
    """Measured frequencies replaced by their exact law ``w0 * base^(-e_k)`` when it has round parameters and
    stays within 6 sigma of every measurement (so a re-synthesised table is correctly rounded, not ~1e-8 off)."""
    # duplicated columns (a rotary cos table written twice) measure each frequency twice: fit the distinct ones
    same_as_prev = np.concatenate([[False], np.abs(np.diff(w)) <= 6 * np.hypot(err[1:], err[:-1])])
    group = np.cumsum(~same_as_prev) - 1
    if same_as_prev.any():
        uniq = np.array([w[group == g].mean() for g in range(group[-1] + 1)])
        uerr = np.array([err[group == g].min() for g in range(group[-1] + 1)])
        geo_u = an.geometric_fit(uniq, uerr)
        exact_u = _idealise(uniq, uerr, geo_u, uniq.size, width)
        return exact_u[group] if not np.array_equal(exact_u, uniq) else w
    if geo is None or geo.count != w.size or w.size < 2:
        return w
    base, conv = an.infer_base(geo.ratio, geo.w0, n_freqs, width)
    nb, w0 = an.nice_number(base, 1e-6), an.nice_number(geo.w0, 1e-6)
    k = np.arange(w.size, dtype=np.float64)
    expo = {"2k/width": 2 * k / width, "k/(n-1)": k / max(n_freqs - 1, 1), "k/n": k / n_freqs}[conv]
    exact = w0 * np.exp(-expo * math.log(nb)) if nb > 0 else w
    if np.all(np.abs(exact - w) <= np.maximum(6 * err, 1e-12 * w)):
        return exact
    return w


def _convention_text(conv: str, n_freqs: int, width: int) -> str:
    return {"2k/width": f"(-2k/{width})", "k/(n-1)": f"(-k/{n_freqs - 1})", "k/n": f"(-k/{n_freqs})"}[conv]


def _restricted(spec_b: an.Spectrum, used: list[an.Oscillator]) -> an.Spectrum:
    """``spec_b`` restricted to the oscillators ``used`` (a partial-rotary comparison uses the highest ones)."""
    return an.Spectrum(spec_b.width, list(used), spec_b.zero_cols, spec_b.other_cols, spec_b.tol, spec_b.positions)


def _slug_layout(name: str) -> str:
    return {"interleaved-cos-first": "interleaved", "split-cos-first": "split"}.get(name, name)


def _try_float32_angles(ctx: _Ctx) -> tuple[list[Explanation], list[Explanation]]:
    """One table evaluated ``sin(fl32(fl32(t) * w32))`` with float32 frequencies ``w32``: simulated from the other
    table's frequencies.

    Each frequency is the float32 nearest the one measured in the exact table, or an adjacent float32 (float32
    ``pow`` in the reference implementations is not always correctly rounded), whichever fits the rows best.
    Only tried when the difference grows with position.
    """
    out: list[Explanation] = []
    tried: list[Explanation] = []
    if ctx.a.shape != ctx.b.shape or len(ctx.a.shape) != 2 or ctx.n_a < 8:
        return out, tried
    probe = an.spread_rows(ctx.n_a, 128)
    xa_p, xb_p = _read(ctx.a, probe), _read(ctx.b, probe)
    diff = np.max(np.abs(xa_p - xb_p), axis=1)
    quarter = max(1, diff.size // 4)
    grows = float(np.max(diff[-quarter:])) > 4 * float(np.max(diff[:quarter])) and float(np.max(diff)) < 0.5
    if not grows:
        return out, tried
    worst = int(probe[int(np.argmax(diff))])
    f32 = np.float32
    for ref in ("b", "a"):
        c = (
            ctx
            if ref == "b"
            else _Ctx(ctx.b, ctx.a, ctx.b_name, ctx.a_name, ctx.blocks, ctx.dtype_b, ctx.dtype_a, ctx.eff_b, ctx.eff_a)
        )
        spec = _spectrum(c, "b")
        if spec is None or not spec.sinusoidal:
            continue
        off = an.position_offset(spec)
        o = off[0] if off and off[1] < 1e-3 else 0
        target = xa_p if ref == "b" else xb_p
        far = probe[-quarter:]
        t_far = (far + o).astype(f32)
        chosen: list[tuple[an.Oscillator, float, float]] = []
        for osc in spec.oscillators:
            w32 = f32(osc.freq)
            ph = osc.phase - osc.freq * o
            q = round(ph / (math.pi / 2))
            ph = q * math.pi / 2 if abs(ph - q * math.pi / 2) < 1e-5 else ph
            best = (math.inf, float(w32))
            for cand in (np.nextafter(w32, f32(0)), w32, np.nextafter(w32, f32(np.inf))):
                ang = (t_far * f32(cand)).astype(np.float64) + ph
                err = float(np.max(np.abs(osc.amplitude * np.cos(ang) - target[-quarter:, osc.cos_col])))
                best = min(best, (err, float(cand)))
            chosen.append((osc, best[1], ph))
        zero = list(spec.zero_cols)
        width = c.d_a

        def synth(
            rows: np.ndarray, chosen: list = chosen, o: int = o, zero: list[int] = zero, width: int = width
        ) -> np.ndarray:
            t32 = (rows + o).astype(f32)
            res_ = np.zeros((rows.size, width))
            for osc_k, w32_k, ph_k in chosen:
                angle = (t32 * f32(w32_k)).astype(np.float64) + ph_k
                if osc_k.sin_col is not None:
                    res_[:, osc_k.sin_col] = osc_k.amplitude * np.sin(angle)
                res_[:, osc_k.cos_col] = osc_k.amplitude * np.cos(angle)
            if zero:
                res_[:, zero] = 0.0
            return res_

        model = _Model(synth=synth)
        res = _verify(c, model)
        who = ctx.a_name if ref == "b" else ctx.b_name
        ref_name = ctx.b_name if ref == "b" else ctx.a_name
        step = Step(
            "float32-angle-error",
            f"{who} computes the angles t*w in float32: the difference grows with position "
            f"(max {float(diff.max()):.2g} at row {worst})",
            f"evaluating {ref_name}'s frequencies with float32 angles",
            {
                "table": "a" if ref == "b" else "b",
                "max_abs_difference": float(diff.max()),
                "at_row": worst,
                "float32_frequencies": [w for _, w, _ in chosen],
            },
        )
        exp = _explain([step], res, ctx, model)
        (out if res.within else tried).append(exp)
        if res.within:
            break
    return out, tried


# ----- 3-D (heads x len x len) --------------------------------------------------------------------------------------
def _diagnose_3d(a: Any, b: Any, a_name: str, b_name: str) -> tuple[list[Explanation], list[Explanation], str]:
    """Heads x query x key tables: transposed (key x query), the first positions of the other, heads reordered,
    negated or scaled, rounded."""
    ha, na = int(a.shape[0]), int(a.shape[1])
    hb, nb = int(b.shape[0]), int(b.shape[1])
    if a.shape[1] != a.shape[2] or b.shape[1] != b.shape[2]:
        return [], [], f"shapes {tuple(a.shape)} and {tuple(b.shape)}: 3-D tables must be heads x len x len"
    if ha != hb:
        return [], [], f"{a_name} has {ha} heads and {b_name} {hb}; heads cannot be matched"
    n = min(na, nb)
    q = an.spread_rows(n, 24)

    def sample(t: Any, transpose: bool) -> np.ndarray:
        cols = []
        for h in range(int(t.shape[0])):
            m = np.asarray(t[h] if isinstance(t, np.ndarray) else t.rows(h, h + 1)[0], dtype=np.float64)[:n, :n]
            cols.append((m.T if transpose else m)[q].reshape(-1))
        return np.stack(cols, axis=1)

    xa = sample(a, False)
    dt_a, dt_b = np.dtype(a.dtype), np.dtype(b.dtype)
    ctx = _Ctx(
        a, b, a_name, b_name, None, dt_a, dt_b, an.effective_dtype(xa, dt_a), an.effective_dtype(sample(b, False), dt_b)
    )
    dt = ctx.match_dtype
    explanations: list[Explanation] = []
    tried: list[Explanation] = []
    for transpose in (False, True):
        xb = sample(b, transpose)
        cols, signs, matched = _match_columns(xa, xb, dt)
        scale = 1.0
        if not matched.all():
            fb = np.nan_to_num(xb[:, cols], posinf=0, neginf=0)
            fa = np.nan_to_num(xa, posinf=0, neginf=0)
            den = float(np.einsum("ij,ij->", fb, fb))
            if den > 0:
                scale = float(np.einsum("ij,ij->", fa, fb)) / den
                with np.errstate(invalid="ignore"):
                    cols, signs, matched = _match_columns(xa, xb * scale, dt)
        with np.errstate(invalid="ignore"):
            pred = xb[:, cols] * signs[None, :] * scale
        if ctx.precision is not None:
            pred = pred.astype(ctx.precision).astype(np.float64)
            xa_c = xa.astype(ctx.precision).astype(np.float64)
        else:
            xa_c = xa
        res = an.residual(xa_c, pred, dt, dt, rows_checked=int(q.size))
        steps: list[Step] = []
        if na != nb:
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
        if not np.array_equal(cols, np.arange(ha)):
            steps.append(
                Step(
                    "column-permutation",
                    f"{b_name} is {a_name} with its heads reordered",
                    "reordering heads",
                    {"permutation": cols},
                )
            )
        neg = np.flatnonzero(signs < 0)
        if neg.size:
            steps.append(
                Step(
                    "sign-flip", f"{b_name} is {a_name} with {neg.size} heads negated", "negating heads", {"heads": neg}
                )
            )
        if scale != 1.0:
            steps.append(
                Step(
                    "constant-scale",
                    f"{a_name} is {b_name} scaled by {scale:.6g}",
                    f"scaling by {scale:.6g}",
                    {"factor": scale},
                )
            )
        if ctx.precision is not None:
            name = _dtype_name(ctx.precision)
            coarse_is_a = finfo(ctx.eff_a).eps >= finfo(ctx.eff_b).eps
            who, other = (a_name, b_name) if coarse_is_a else (b_name, a_name)
            steps.append(
                Step(
                    f"precision-{name}",
                    f"{who} is {other} rounded to {name}",
                    f"rounding {other} to {name}",
                    {"dtype": name},
                )
            )
        if not steps:
            if res.within and matched.all():
                return [], [], "same"  # agrees as it is: nothing to explain
            continue
        exp = _explain(steps, res, ctx, _Model())
        exp.model = None
        (explanations if res.within and matched.all() else tried).append(exp)
        if explanations:
            break
    if not explanations and na == nb:
        scaled = _head_scales(a, b, xa, sample(b, False), ctx, int(q.size))
        if scaled is not None:
            explanations.append(scaled)
    return explanations, tried, ""


def _head_scales(a: Any, b: Any, xa: np.ndarray, xb: np.ndarray, ctx: _Ctx, rows: int) -> Explanation | None:
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
    if not res.within or np.allclose(k, k[0], rtol=1e-9):
        return None  # not per-head factors (one common factor is constant-scale's business)
    heads = int(xa.shape[1])
    rule_a, rule_b = _slope_rule(a, heads), _slope_rule(b, heads)
    summary = f"{ctx.a_name} is {ctx.b_name} with each head scaled by its own factor (other slopes)"
    if rule_a and rule_b and rule_a != rule_b:
        summary = f"{ctx.a_name} has slopes {rule_a}; {ctx.b_name} {rule_b}"
    step = Step("head-scale", summary, "scaling each head", {"factors": k, "rule_a": rule_a, "rule_b": rule_b})
    return Explanation("head-scale", summary, [step], res.max_abs, res.ulp, res.ulp_dtype, True, res.rows_checked, None)


#: Slope rules of linear attention biases, by the frameworks that compute them (see ``alibi_slopes``).
SLOPE_RULES = {
    "paper": "as the paper, HF Bloom and MPT compute them for {n} heads",
    "geometric": "as MLX computes them for {n} heads (2^(-8k/n))",
}


def _slope_rule(t: Any, heads: int) -> str:
    """Which published rule the per-head slopes of a linear-bias table follow (slope = -T[h, 1, 0]), or ''."""
    from ..encodings.relative import alibi_slopes

    if int(t.shape[1]) < 2:
        return ""
    got = np.array(
        [-float(np.asarray(t[h] if isinstance(t, np.ndarray) else t.rows(h, h + 1)[0])[1, 0]) for h in range(heads)]
    )
    if heads & (heads - 1) == 0:
        return ""  # the rules agree for powers of two
    for rule, text in SLOPE_RULES.items():
        if np.allclose(got, alibi_slopes(heads, 8.0, rule), rtol=tolerance.slope_rtol(t.dtype), atol=0):
            return text.format(n=heads)
    return ""


# ----- the entry point ----------------------------------------------------------------------------------------------
def _make_ctx(a: Any, b: Any, a_name: str, b_name: str, blocks: list[str] | None) -> _Ctx | None:
    if a.shape[0] == 0 or b.shape[0] == 0:
        return None
    dt_a, dt_b = np.dtype(a.dtype), np.dtype(b.dtype)
    ra = an.spread_rows(int(a.shape[0]), 64)
    rb = an.spread_rows(int(b.shape[0]), 64)
    xa, xb = _read(a, ra), _read(b, rb)
    return _Ctx(a, b, a_name, b_name, blocks, dt_a, dt_b, an.effective_dtype(xa, dt_a), an.effective_dtype(xb, dt_b))


def _finish(diag: Diagnosis, explanations: list[Explanation], tried: list[Explanation], reason: str) -> Diagnosis:
    explanations.sort(key=lambda e: (len(e.steps), e.residual_ulp, e.residual_max_abs))
    tried.sort(key=lambda e: e.residual_max_abs)
    diag.explanations = explanations
    diag.tried = tried[:3]
    diag.reason = reason
    return diag


# ----- undo ---------------------------------------------------------------------------------------------------------
def undo(a: np.ndarray, explanation: Explanation, shape_b: tuple[int, ...] | None = None) -> np.ndarray:
    """``a`` brought back to the reference's convention: columns put back, signs and scale undone, rows shifted.

    Rows or columns of the reference that ``a`` does not cover are NaN. Rounding, float32 angles and frequency
    changes cannot be undone from ``a`` alone (a :class:`ValueError` says so).

    Parameters
    ----------
    a : ndarray
        The first table of the diagnosis (2-D).
    explanation : Explanation
        One of ``diagnose(a, b).explanations``.
    shape_b : tuple of int, optional
        The reference's shape (default: ``a``'s shape, or the transposed one for a transposition).
    """
    model = explanation.model
    lossy = {"float32-angle-error", "base", "frequency-scaling", "precision-float16", "precision-bfloat16"}
    if model is None or model.synth is not None or any(s.name in lossy for s in explanation.steps):
        raise ValueError(f"{explanation.name} cannot be undone from the table alone")
    x = np.asarray(a, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError("undo works on 2-D tables")
    n_a, d_a = x.shape
    if shape_b is None:
        shape_b = (d_a, n_a) if model.transpose else (n_a, d_a)
    rows_b, cols_b = (shape_b[1], shape_b[0]) if model.transpose else shape_b
    out = np.full((rows_b, cols_b), np.nan)
    vals = x / model.scale
    if model.signs is not None:
        vals = vals * model.signs[None, :]
    cols = model.cols if model.cols is not None else np.arange(d_a)
    r = np.arange(n_a) + model.shift
    keep = (r >= 0) & (r < rows_b)
    out[np.ix_(r[keep], cols)] = vals[keep]
    return out.T if model.transpose else out
