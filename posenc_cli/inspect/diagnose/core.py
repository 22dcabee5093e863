"""What every explanation shares: the results (:class:`Step`, :class:`Explanation`, :class:`Diagnosis`), the
forward model that predicts rows of A from B (:class:`Model`), the context of one diagnosis (:class:`Ctx`), how a
model is verified on independent rows and how an explanation is worded, and :func:`undo`."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import analysis as an
from .. import tolerance
from ..metrics import coarser_dtype, finfo

#: Elementwise tolerance of "they agree" (posenc_cli.inspect.tolerance holds every tolerance).
ULP_TOL = tolerance.ULP_TOL
#: Rows read to find an explanation (a second, independent sample verifies it).
MATCH_ROWS = 256
CHECK_ROWS = 512
#: Row offsets tried directly before searching the whole reference for A's first row.
SMALL_SHIFTS = (1, -1, 2, -2, 3, -3, 4, -4)
#: Rows probed to see how a difference grows with position.
PROBE_ROWS = 128
#: Entries of a column map shown in a sentence.
SHOWN_MAP = 6


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
    model: Model | None = field(default=None, repr=False, compare=False)

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

    def named(self, a_name: str, b_name: str) -> Diagnosis:
        """This diagnosis, made under the names :data:`PLACEHOLDERS`, worded with ``a_name`` and ``b_name`` (one
        rotary pair's diagnosis serves its cos and its sin tensor: the same tables, named for each)."""

        def text(v: Any) -> Any:
            if isinstance(v, str):
                return v.replace(PLACEHOLDERS[0], a_name).replace(PLACEHOLDERS[1], b_name)
            if isinstance(v, dict):
                return {k: text(x) for k, x in v.items()}
            if isinstance(v, (list, tuple)):
                return type(v)(text(x) for x in v)
            return v

        def exp(e: Explanation) -> Explanation:
            steps = [Step(s.name, text(s.clause), text(s.undo), text(s.detail)) for s in e.steps]
            return dataclasses.replace(e, summary=text(e.summary), steps=steps)

        return dataclasses.replace(
            self,
            a_name=text(self.a_name),
            b_name=text(self.b_name),
            explanations=[exp(e) for e in self.explanations],
            tried=[exp(e) for e in self.tried],
            reason=text(self.reason),
        )


#: The names a diagnosis made once for several pairs of tensors is worded with, until :meth:`Diagnosis.named`
#: names it for each (characters no label holds).
PLACEHOLDERS = ("\x00A\x00", "\x00B\x00")


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
class Stacked:
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


def rotary_pair(tensors: dict[str, Any] | None) -> tuple[Any, Any] | None:
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
class Model:
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
            y = read(b, rows + self.shift, self.transpose)
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


def read(t: Any, rows: np.ndarray, transpose: bool = False) -> np.ndarray:
    """Rows of a 2-D table (of its transpose when ``transpose``) as float64."""
    if not transpose:
        return an.read_rows(t, rows).reshape(len(rows), -1)
    if isinstance(t, np.ndarray):
        return np.asarray(t[:, rows], dtype=np.float64).T
    return an.read_rows(t, np.arange(t.shape[0]))[:, rows].T


@dataclass
class Ctx:
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

    def swapped(self) -> Ctx:
        """The same two tables with the roles of A and B exchanged."""
        return Ctx(
            self.b, self.a, self.b_name, self.a_name, self.blocks, self.dtype_b, self.dtype_a, self.eff_b, self.eff_a
        )

    @property
    def match_dtype(self) -> np.dtype:
        return self.precision if self.precision is not None else self.stored


def close(x: np.ndarray, y: np.ndarray, dt: np.dtype, atol: float | None = None) -> np.ndarray:
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


#: Rows :func:`all_close` compares first: a map that fails usually fails there, before the whole sample is measured.
FIRST_ROWS = 8


def all_close(x: np.ndarray, y: np.ndarray, dt: np.dtype, atol: float | None = None) -> bool:
    """``np.all(close(x, y, dt, atol))``, the first :data:`FIRST_ROWS` rows first (:func:`close` is elementwise):
    most candidate maps of a diagnosis differ on most elements, and measuring every one of those in ulps cost more
    than the search they serve."""
    if x.ndim and x.shape[0] > FIRST_ROWS and not np.all(close(x[:FIRST_ROWS], y[:FIRST_ROWS], dt, atol)):
        return False
    return bool(np.all(close(x, y, dt, atol)))


def _within(res: an.Residual, stored: np.dtype) -> str:
    unit = "ulp" if res.ulp_dtype == dtype_name(stored) else f"{res.ulp_dtype} ulp"
    if res.max_abs == 0:
        return "they agree exactly"
    if res.ulp <= tolerance.ULPS_SHOWN:
        return f"they agree within {max(1, math.ceil(res.ulp - tolerance.ULP_CEIL_SLACK)):d} {unit}"
    return f"they agree within {res.max_abs:.2g}"


def dtype_name(dt: np.dtype) -> str:
    from ...encodings.base import dtype_name

    return dtype_name(np.dtype(dt))


def join(parts: list[str]) -> str:
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
    return "; ".join(f"{k} with {join(v)}" if v else k for k, v in merged.items())


def explain(steps: list[Step], res: an.Residual, ctx: Ctx, model: Model) -> Explanation:
    name = "+".join(s.name for s in steps)
    clauses = _clauses(steps)
    summary = f"{clauses}: after {join([s.undo for s in steps])} {_within(res, ctx.stored)}"
    return Explanation(name, summary, steps, res.max_abs, res.ulp, res.ulp_dtype, res.within, res.rows_checked, model)


# ----- verification -------------------------------------------------------------------------------------------------
def valid_rows(ctx: Ctx, shift: int, transpose: bool) -> tuple[int, int]:
    n_b = ctx.d_b if transpose else ctx.n_b
    lo = max(0, -shift)
    hi = min(ctx.n_a, n_b - shift)
    return lo, hi


def rows_in(lo: int, hi: int, count: int, seed: int = 0) -> np.ndarray:
    if hi <= lo:
        return np.zeros(0, dtype=np.int64)
    return lo + an.spread_rows(hi - lo, count, seed=seed)


def verify(ctx: Ctx, model: Model, cols_a: np.ndarray | None = None) -> an.Residual:
    """The residual of ``model`` on an independent sample of A's rows (every row for small tables)."""
    lo, hi = valid_rows(ctx, model.shift, model.transpose)
    if model.synth is not None:
        lo, hi = 0, ctx.n_a
    width = ctx.d_a
    if hi - lo <= 0:
        return an.Residual(math.inf, math.inf, dtype_name(ctx.stored), 0.0, False, 0)
    if (hi - lo) * max(width, 1) <= an.FULL_CHECK_ELEMENTS:
        rows = np.arange(lo, hi, dtype=np.int64)
    else:
        rows = rows_in(lo, hi, CHECK_ROWS, seed=1)
    xa = read(ctx.a, rows)
    if cols_a is not None:
        xa = xa[:, cols_a]
    pred = model.predict(ctx.b, rows)
    if np.shape(pred) != np.shape(xa):  # a model that maps B onto other columns than A has: it explains nothing
        return an.Residual(math.inf, math.inf, dtype_name(ctx.stored), 0.0, False, int(rows.size))
    dt = ctx.match_dtype if model.round_to is None else np.dtype(model.round_to)
    if model.round_to is not None:
        with np.errstate(over="ignore"):
            xa = xa.astype(model.round_to).astype(np.float64)
    return an.residual(xa, pred, dt, dt, rows_checked=int(rows.size), row_index=rows, ulp_tol=ULP_TOL, atol=model.atol)


# ----- the entry point ----------------------------------------------------------------------------------------------
def make_ctx(a: Any, b: Any, a_name: str, b_name: str, blocks: list[str] | None) -> Ctx | None:
    if a.shape[0] == 0 or b.shape[0] == 0:
        return None
    dt_a, dt_b = np.dtype(a.dtype), np.dtype(b.dtype)
    ra = an.spread_rows(int(a.shape[0]), 64)
    rb = an.spread_rows(int(b.shape[0]), 64)
    xa, xb = read(a, ra), read(b, rb)
    return Ctx(a, b, a_name, b_name, blocks, dt_a, dt_b, an.effective_dtype(xa, dt_a), an.effective_dtype(xb, dt_b))


def finish(diag: Diagnosis, explanations: list[Explanation], tried: list[Explanation], reason: str) -> Diagnosis:
    # the parameters first (the model's own terms), then the fewest steps and the smallest residual
    explanations.sort(
        key=lambda e: (not e.name.startswith("parameter"), len(e.steps), e.residual_ulp, e.residual_max_abs)
    )
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
