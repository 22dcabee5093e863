"""Which kind, preset and parameters reproduce a table: read from its structure, confirmed by regenerating it.

:func:`identify` measures the table once (:class:`~posenc_cli.inspect.analysis.TableAnalysis`: column frequencies and
phases, sin/cos pairs and their layout, duplicated halves, value range, Toeplitz structure, per-head slopes, grid
strides), asks each kind's *hint* function which parameters that structure implies, and regenerates every
proposed candidate with posenc's own engine (``make_encoding(kind, params).rows(name, start, stop)``) on a sample
of rows (every row of tables below 4M elements). A candidate *accounts* for the table when every compared value is
within 2 ulps of the table's dtype (or within compare's ``atol``); the simplest such candidate is ``best`` and
:attr:`Identification.command` is the ``posenc generate`` line that regenerates it. When none is exact but one
agrees within the error of the usual float32 formula (the bound of :mod:`posenc_cli.inspect.tolerance`: published code that
computes frequencies and angles in float32), that one is ``best`` with ``tolerance="float32-formula"``. When none
accounts (a trained table, noise), ``best`` is None and the candidates, closest first, each say why they fail.

The hints belong to the kinds: each kind's class names its structure reader (``IDENTIFY``, data) in :mod:`posenc_cli.inspect.hints`, a function ``(tensors, analysis) -> list[Candidate]``
(``IDENTIFY``, resolved by :mod:`posenc_cli.inspect.hints`), and the driver asks every registered kind in registry
order; this module names no kind. The helpers at the bottom are shared by the kinds' hints.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import shlex
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from . import analysis as an
from . import tolerance as tol
from .candidates import Candidate, Hint, show_value

#: Elementwise tolerance of "reproduces" (posenc_cli.inspect.tolerance holds every tolerance).
ULP_TOL = tol.ULP_TOL
#: The coarse dtypes a table is read as "an exact table rounded to" (see :attr:`Identification.precision`).
ROUNDED_DTYPES = ("bfloat16", "float16")
#: Candidates verified at most per kind (structure proposes few; this bounds a pathological hint).
MAX_VERIFY = 24
#: Fallback readings verified at most per kind (each structural reading may bring a float32-inv_freq twin, and
#: per-column readings such as LongRoPE's come last by complexity).
MAX_FALLBACKS = 64


@dataclass
class Identification:
    """What :func:`identify` found: ``best`` (None when no analytic kind reproduces the table), every verified
    candidate (accounting ones first, then the closest by cosine) and, when nothing accounts, ``reason``."""

    shape: tuple[int, ...]
    dtype: str
    candidates: list[Candidate]
    best: Candidate | None
    reason: str = ""
    #: tensors of the source the answer does not account for, each with why (none is skipped silently)
    skipped: dict[str, str] = field(default_factory=dict)
    #: a source of several tensor groups (each layer type of a Gemma 3 file): every group's identification,
    #: this one being the first group's
    groups: dict[str, Identification] = field(default_factory=dict)
    #: the dtype the values are stored in when they are a coarser dtype's values widened (bfloat16 values saved as
    #: float32); the identification reads them as the coarser one
    widened: str = ""
    #: the rows identified are the table's positions only: the rows left out as not positions, and why
    #: (:class:`posenc_cli.checks.rows.NotPositions`'s JSON; ``command`` regenerates the positions); None: every row
    left_out: dict[str, Any] | None = None

    @property
    def precision(self) -> str:
        """``bfloat16`` or ``float16`` when the identified table is an exact one rounded to it, else ''."""
        b = self.best
        dt = "" if b is None else str(b.params.get("dtype", ""))
        return dt if dt in ROUNDED_DTYPES else ""

    @property
    def identified(self) -> bool:
        """Every group (or the one table) is identified."""
        found = list(self.groups.values()) or [self]
        return all(g.best is not None for g in found)

    @property
    def command(self) -> str | None:
        """The ``posenc generate`` command line that regenerates the table (None if unidentified)."""
        return self.best.command if self.best is not None else None

    @property
    def summary(self) -> str:
        if self.best is None:
            return self.reason
        b = self.best
        name = b.label()
        if self.precision:
            stored = f", stored widened to {self.widened}" if self.widened else ""
            name += f" rounded to {self.precision}{stored}"
        name = f"{name} ({b.convention})" if b.convention else name
        if self.precision:
            return (
                f"{name}: regenerated and rounded to {self.precision}, it agrees within {self.precision} rounding "
                f"(max {b.max_abs:.2g}) on {b.rows_checked} rows"
            )
        if b.tolerance == tol.FORMULA and b.formula is not None:
            return (
                f"{name}: regenerated, it agrees within {b.max_abs:.2g}, {b.formula.text()}: the formula "
                f"evaluated in {b.formula.compute}, on {b.rows_checked} rows"
            )
        return (
            f"{name}: regenerated, it agrees within {b.max_abs:.2g} ({_ulps(b.ulp)} {b.ulp_dtype} ulp) "
            f"on {b.rows_checked} rows"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "dtype": self.dtype,
            "identified": self.best is not None,
            "summary": self.summary,
            "best": self.best.to_json() if self.best is not None else None,
            "command": self.command,
            "reason": self.reason,
            "candidates": [c.to_json() for c in self.candidates],
            "skipped": self.skipped,
            "groups": {g: r.to_json() for g, r in self.groups.items() if r is not self},
            "precision": self.precision,
            "widened": self.widened,
            "left_out": self.left_out,
        }


def _ulps(u: float) -> str:
    return "0" if u == 0 else f"{max(1, math.ceil(u - tol.ULP_CEIL_SLACK))}" if u <= tol.ULPS_COUNTED else f"{u:.3g}"


# ----- the driver -----------------------------------------------------------------------------------------------
class _Narrowed:
    """A table whose values all lie on a coarser dtype's grid (bfloat16 values saved as float32), read as that
    dtype: the analysis and the readers then use its tolerances, and candidates regenerate in it."""

    def __init__(self, inner: Any, dtype: np.dtype) -> None:
        self.inner = inner
        self.shape = tuple(int(s) for s in inner.shape)
        self.dtype = np.dtype(dtype)

    def rows(self, start: int, stop: int) -> np.ndarray:
        block = self.inner[start:stop] if isinstance(self.inner, np.ndarray) else self.inner.rows(start, stop)
        return np.asarray(block).astype(self.dtype)

    def __getitem__(self, key: Any) -> np.ndarray:
        return np.asarray(self.inner[key]).astype(self.dtype)


def _narrowed(tensors: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The tensors with each widened one read as the coarse dtype its values are on, and that dtype's name ('' when
    no tensor is widened). A float32 tensor is widened when every sampled value lies on the bfloat16 or float16
    grid (how NumPy users save a bfloat16 cache)."""
    out, coarse = dict(tensors), ""
    for name, t in tensors.items():
        if len(t.shape) < 2 or tol.finfo(t.dtype) is None or tol.coarse(t.dtype) or 0 in t.shape:
            continue
        x = an.read_rows(t, an.spread_rows(int(t.shape[0]))).reshape(-1)
        eff = an.rounded_dtype(x, np.dtype(t.dtype))
        if eff is not None:
            out[name] = _Narrowed(t, eff)
            coarse = _dtype_name(eff)
    return out, coarse


def identify(
    tensors: dict[str, Any] | Any,
    metadata: dict[str, str] | None = None,
    *,
    hints: list[tuple[str, Hint]] | None = None,
) -> Identification:
    """Find the kind, preset and parameters that reproduce ``tensors``.

    A table whose values are bfloat16 or float16 values (stored as such, or widened to float32) is read as that
    precision: it is identified as a kind's exact table rounded to it (``rope preset llama3.1 rounded to
    bfloat16``), the candidates regenerated in that dtype.

    Parameters
    ----------
    tensors : dict of str to array_like, or array_like
        The tensors of one source (e.g. ``{"cos": ..., "sin": ..., "inv_freq": ...}``, or ``{"pe": table}``); a
        bare array is ``{"table": array}``. Arrays may be memory-mapped: only sampled rows are read, plus one
        streaming pass for NaN/infinity counts.
    metadata : dict, optional
        String metadata of the source (e.g. ``dim`` for a partial-rotary table whose head is wider than it).
    hints : list of (kind, hint function), optional
        The per-kind hints to ask, in order (default: every registered kind's reader, :func:`registry_hints`).

    Returns
    -------
    Identification
    """
    if not isinstance(tensors, dict):
        tensors = {"table": tensors}
    tensors = {k: (v if hasattr(v, "shape") and hasattr(v, "dtype") else np.asarray(v)) for k, v in tensors.items()}
    shape = tuple(int(s) for s in next(iter(tensors.values())).shape) if len(tensors) == 1 else None
    tensors = {k: _broadcast_rows(v) for k, v in tensors.items()}
    tensors, form = _stacked_cache(tensors)
    found = _identify_narrowed(tensors, metadata, hints)
    if form and shape is not None:  # the stacked table's own shape, and its readings name the form
        found.shape = shape
        for c in found.candidates:
            c.convention = form
    return found


#: How identify names a cos/sin cache stacked on a last axis of two (or complex: cos + i sin).
STACKED_CACHE = (
    "a half-width cos/sin cache stacked as [..., 0] = cos, [..., 1] = sin: torchtune's RotaryPositionalEmbeddings "
    "cache, and Meta's complex freqs_cis (precompute_freqs_cis) as view_as_real holds it"
)


def _broadcast_rows(t: Any) -> Any:
    """A table kept in the broadcast shape its model multiplies by (1, positions, 1, dim): nanochat's cos/sin
    buffers, ``cos[None, :, None, :]``) as its positions x dim table; any other tensor as it is."""
    shape = tuple(int(s) for s in t.shape)
    if len(shape) == 4 and shape[0] == 1 and shape[2] == 1:
        return np.asarray(t[...]).reshape(shape[1], shape[3])
    return t


def _stacked_cache(tensors: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A lone complex tensor (cos + i sin: Meta's ``freqs_cis``) or real tensor whose last axis holds two planes
    (torchtune's ``cache``, ``view_as_real(freqs_cis)``) as its ``cos_cache`` and ``sin_cache`` planes, and the
    words that name the form ('' for any other source)."""
    if len(tensors) != 1:
        return tensors, ""
    t = next(iter(tensors.values()))
    if np.dtype(t.dtype).kind == "c":
        arr = np.asarray(t[...])
        t = np.stack([arr.real, arr.imag], axis=-1)
    shape = tuple(int(s) for s in t.shape)
    if len(shape) != 3 or shape[2] != 2 or tol.finfo(t.dtype) is None or 0 in shape:
        return tensors, ""
    arr = t if isinstance(t, np.ndarray) else np.asarray(t[...])
    return {"cos_cache": arr[:, :, 0], "sin_cache": arr[:, :, 1]}, STACKED_CACHE


def _identify_narrowed(
    tensors: dict[str, Any], metadata: dict[str, str] | None, hints: list[tuple[str, Hint]] | None
) -> Identification:
    """:func:`identify` of the tensors as stored, or, when nothing names them exactly, as the coarser dtype their
    values lie on."""
    found = _identify(tensors, metadata, hints)
    if found.best is not None and found.best.tolerance != tol.FORMULA:
        return found
    narrow, coarse = _narrowed(tensors)
    if not coarse:
        return found
    again = _identify(narrow, metadata, hints)
    if again.best is None:
        return found
    again.widened = _dtype_name(np.dtype(next(iter(tensors.values())).dtype))
    again.dtype = again.widened
    return again


def _identify(
    tensors: dict[str, Any], metadata: dict[str, str] | None, hints: list[tuple[str, Hint]] | None
) -> Identification:
    """:func:`identify` of the tensors as they are stored."""
    if not tensors:
        raise ValueError("identify needs at least one tensor")
    ana = an.TableAnalysis(tensors, metadata)
    shape, dtype = ana.shape, _dtype_name(ana.dtype)
    if 0 in ana.shape:
        return Identification(shape, dtype, [], None, "the table is empty; no encoding is identified from no values")
    vals = ana.values
    if vals.n_nan or vals.n_posinf:
        what = f"{vals.n_nan} NaN" if vals.n_nan else f"{vals.n_posinf} +inf"
        return Identification(
            shape, dtype, [], None, f"the table has {what} values, which no encoding produces; nothing is identified"
        )
    broken = _broken(tensors)
    if broken:
        return Identification(shape, dtype, [], None, f"{broken}; nothing is identified")
    proposed: list[Candidate] = []
    seen: set[Any] = set()
    for _kind, hint in registry_hints() if hints is None else hints:
        for cand in hint(tensors, ana):
            k = cand.key()
            if k not in seen:
                seen.add(k)
                proposed.append(cand)
    verified = _verify_all(proposed, tensors)
    for cand in verified:
        _name(cand)
    return _result(verified, tensors, shape, dtype)


def _broken(tensors: dict[str, Any]) -> str:
    """Why the source's tables encode no position ('' when one of them may): every table with a position axis
    (two or more dimensions) is constant (zeros included), has one row, or repeats one row. Read on a spread of
    rows: positions a table tells apart differ somewhere among them."""
    reasons = []
    for name, t in tensors.items():
        shape = tuple(int(s) for s in t.shape)
        if len(shape) < 2:
            continue
        rows = an.spread_rows(shape[0])
        x = an.read_rows(t, rows).reshape(rows.size if len(shape) == 2 else 1, -1)
        what = f"{name} ({'x'.join(map(str, shape))})" if len(tensors) > 1 else "the table"
        if x.size and np.all(x == x.flat[0]):
            value = "0" if x.flat[0] == 0 else f"{float(x.flat[0]):.6g}"
            reasons.append(f"every value of {what} is {value}: it encodes no position")
        elif len(shape) == 2 and shape[0] == 1:
            reasons.append(f"{what} has one row: no second position to tell it from")
        elif len(shape) == 2 and np.all(x == x[:1]):
            reasons.append(f"every row of {what} is the same: it tells no position from another")
        else:
            return ""
    return "; ".join(reasons)


def _verify_all(proposed: list[Candidate], tensors: dict[str, Any]) -> list[Candidate]:
    """Verify the proposed candidates, simplest first within each kind: once one accounts, the more complex
    readings of that kind are moot; fallbacks have a budget of their own (many structural readings must not
    starve them)."""
    verified: list[Candidate] = []
    accounted_kinds: set[str] = set()
    # once a kind has a reading within the float32 formula's error, its more complex readings are read in full
    # only when their quick check is exact (the simplest reading within the error is the answer otherwise)
    near_kinds: set[str] = set()
    reads: dict[Any, Any] = {}  # the table's rows as each verification reads them, read once (and measured)
    for fallback in (False, True):
        per_kind: dict[str, int] = {}
        todo = sorted((c for c in proposed if c.fallback == fallback), key=_rough_complexity)
        for cand in todo:
            if cand.kind in accounted_kinds:
                continue
            if per_kind.get(cand.kind, 0) >= (MAX_FALLBACKS if fallback else MAX_VERIFY):
                continue
            per_kind[cand.kind] = per_kind.get(cand.kind, 0) + 1
            _verify(cand, tensors, quick=True, reads=reads)
            if cand.accounts or (cand.tolerance and cand.kind not in near_kinds):
                _verify(cand, tensors, reads=reads)
            elif cand.tolerance:
                cand.tolerance, cand.formula = "", None  # not read in full: not a reading within the error
            verified.append(cand)
            if cand.accounts:
                accounted_kinds.add(cand.kind)
            elif cand.tolerance:
                near_kinds.add(cand.kind)
    return verified


def _result(verified: list[Candidate], tensors: dict[str, Any], shape: tuple[int, ...], dtype: str) -> Identification:
    """The accounting candidates, simplest first, then the closest others; the reason when none accounts."""
    good = sorted((c for c in verified if c.accounts), key=lambda c: (_complexity(c), c.ulp, c.max_abs))
    bad = sorted(
        (c for c in verified if not c.accounts),
        key=lambda c: (not c.structural, -(c.cosine if math.isfinite(c.cosine) else -2.0)),
    )
    if not good:
        # nothing exact: a candidate within the error of the usual float32 formula still names the table
        near = sorted((c for c in bad if c.tolerance == tol.FORMULA), key=lambda c: (_complexity(c), c.max_abs))
        if near:
            near[0].accounts = True
            near[0].why = ""
            good, bad = [near[0]], [c for c in bad if c is not near[0]]
    best = good[0] if good else None
    reason = ""
    if best is None:
        if bad:
            c = bad[0]
            cos = f"cosine {c.cosine:.2f}" if math.isfinite(c.cosine) else "no comparable values"
            reason = f"no analytic kind reproduces it; closest {c.label()}, {cos} ({c.why})"
        else:
            reason = f"no analytic kind reproduces it; no kind fits a {'x'.join(map(str, shape))} {dtype} table"
    skipped = {}
    if best is not None and best.tensor_map:
        skipped = {
            n: f"{best.kind} accounts for {', '.join(best.tensor_map)}; {n} was not compared"
            for n in tensors
            if n not in best.tensor_map
        }
    return Identification(shape, dtype, good + bad, best, reason, skipped)


def registry_hints() -> list[tuple[str, Hint]]:
    """Every registered kind's structure reader (:func:`posenc_cli.inspect.hints.reader`), in registry order."""
    from ..encodings import kind_classes
    from .hints import reader

    return [(name, fn) for name, cls in kind_classes().items() if (fn := reader(cls)) is not None]


def _dtype_name(dt: np.dtype) -> str:
    from ..encodings.base import dtype_name

    return dtype_name(np.dtype(dt))


def _rough_complexity(c: Candidate) -> float:
    """:func:`_complexity` before naming: parameters that differ from the kind's declared defaults, by digits."""
    from ..encodings import get_kind

    cls = get_kind(c.kind)
    defaults = _defaults(c.kind)
    explicit = {
        k: v
        for k, v in c.params.items()
        if k not in ("length", "dim", "dtype") and not (k in defaults and _same(v, defaults[k]))
    }

    def score(params: dict[str, Any]) -> float:
        out = 0.0
        for v in params.values():
            out += 1.0
            if isinstance(v, float):
                out += an.nice_digits(v) / 4
            elif isinstance(v, tuple):
                out += sum(an.nice_digits(x) / 4 for x in v if isinstance(x, float))
        return out

    best = score(explicit)
    for values in cls.PRESETS.values():
        full = {**defaults, **c.params}
        if all(k in full and _same(full[k], v) for k, v in values.items()):
            best = min(best, score({k: v for k, v in explicit.items() if k not in values}) - 0.5)
    return best


@functools.cache
def _defaults(kind: str) -> dict[str, Any]:
    """The declared default of each parameter of ``kind`` that has one (read-only: shared)."""
    from ..encodings import get_kind

    return {f.name: f.default for f in get_kind(kind).param_fields() if f.default is not dataclasses.MISSING}


def _encoding(cand: Candidate) -> Any:
    """``make_encoding(cand.kind, cand.params)``, built once per candidate and parameters: the quick and the full
    verification and the naming each need it (a build validates every parameter: ~1 ms, as much as reading the
    quick rows). A ParameterError is raised again each time it is asked for."""
    from ..encodings import make_encoding

    said = (cand.kind, dict(cand.params))
    memo: tuple[Any, Any, ParameterError | None] | None = cand.__dict__.get("_built")
    try:
        fresh = memo is not None and memo[0] == said
    except (TypeError, ValueError):  # a parameter that compares element-wise (an array): build it again
        fresh = False
    if memo is None or not fresh:
        try:
            memo = (said, make_encoding(cand.kind, cand.params), None)
        except ParameterError as exc:
            memo = (said, None, exc)
        cand.__dict__["_built"] = memo
    if memo[2] is not None:
        raise memo[2]
    return memo[1]


def _complexity(c: Candidate) -> float:
    """Fewer explicit parameters and shorter numbers first: the simplest description that reproduces the table."""
    score = 0.0
    for v in c.explicit.values():
        score += 1.0
        if isinstance(v, float):
            score += an.nice_digits(v) / 4
        elif isinstance(v, tuple):
            score += sum(an.nice_digits(x) / 4 for x in v if isinstance(x, float))
    return score - (0.5 if c.preset else 0.0)


def _verify(
    cand: Candidate, tensors: dict[str, Any], *, quick: bool = False, reads: dict[Any, Any] | None = None
) -> None:
    """Regenerate ``cand`` with posenc's engine and measure it against the input on sampled rows (``quick``: 48
    rows spread to the end of the table, a cheap first filter). ``reads``: the input's rows read by an earlier
    verification of the same tensors (each candidate compares the same rows of the table; kept read-only), and
    the quick checks' measurements by the values regenerated (the same values measure the same)."""
    try:
        enc = _encoding(cand)
        enc.tensor_specs()
    except ParameterError as exc:
        cand.why = f"not a valid {cand.kind} table: {exc}"
        return
    specs = enc.tensor_specs()
    tmap = dict(cand.tensor_map)
    if not tmap:
        if len(tensors) == 1:
            tmap = {next(iter(tensors)): enc.PRIMARY}
        else:
            tmap = {k: k for k in tensors if k in specs}
    if not tmap:
        cand.why = f"{cand.kind} has none of the tensors {', '.join(tensors)}"
        return
    worst_abs, worst_ulp, cosines, ok, rows_checked = 0.0, 0.0, [], True, 0
    loose = True
    formula: tol.FormulaVerdict | None = None
    ulp_dtype = ""
    for in_name, enc_name in tmap.items():
        x = tensors[in_name]
        if enc_name not in specs:
            cand.why = f"{cand.kind} has no tensor {enc_name!r}"
            return
        spec = specs[enc_name]
        if tuple(int(s) for s in x.shape) != tuple(spec.shape):
            cand.why = f"{cand.kind} gives {enc_name} of shape {tuple(spec.shape)}, the table is {tuple(x.shape)}"
            return
        if len(spec.shape) == 3:
            xs, ys, rows = _sample_3d(x, enc, enc_name)
        else:
            xs, rows = _table_rows(in_name, x, quick, reads)
            try:
                ys = an.read_rows(enc.lazy(enc_name), rows).reshape(rows.size, -1)
            except (ArithmeticError, ParameterError) as exc:  # e.g. a degenerate base the engine does not refuse
                cand.why = f"{cand.kind} cannot build it: {type(exc).__name__}: {exc}"
                return
        res, fv = _measure(x, xs, ys, rows, spec, enc, enc_name, in_name, reads if quick else None)
        if fv is not None:
            loose &= fv.ok
            if formula is None or fv.bound > formula.bound:
                formula = fv
        elif not res.within:
            loose = False
        worst_abs = max(worst_abs, res.max_abs)
        if res.ulp > worst_ulp or not ulp_dtype:  # the ulps of the worst tensor, in its own dtype
            worst_ulp, ulp_dtype = res.ulp, res.ulp_dtype
        cosines.append(res.cosine)
        ok &= res.within
        rows_checked = max(rows_checked, res.rows_checked)
    cand.max_abs, cand.ulp, cand.ulp_dtype = worst_abs, worst_ulp, ulp_dtype
    cand.cosine = float(min(cosines)) if cosines else float("nan")
    cand.accounts, cand.rows_checked = bool(ok), rows_checked
    cand.tolerance = "ulp" if ok else tol.FORMULA if loose and formula is not None and math.isfinite(worst_abs) else ""
    cand.formula = formula if cand.tolerance == tol.FORMULA else None
    if not ok:
        cand.why = f"regenerated, it differs by up to {worst_abs:.3g} ({_ulps(worst_ulp)} ulp)"
        if cand.note and not cand.structural:
            cand.why = f"{cand.note}; {cand.why}"


def _measure(
    x: Any,
    xs: np.ndarray,
    ys: np.ndarray,
    rows: np.ndarray,
    spec: Any,
    enc: Any,
    enc_name: str,
    in_name: str,
    memo: dict[Any, Any] | None,
) -> tuple[Any, Any]:
    """The residual of the input's rows ``xs`` from the regenerated ``ys``, and, when they differ beyond it on a
    table of angles, whether they are within the float32 formula's error (None: not asked). ``memo``: a quick
    check's, which measures its rows once per values regenerated (readings that regenerate the same values, a base
    written two ways or bases equal once inv_freq is float32, share the measurement; found by the last row
    regenerated, then confirmed bit for bit on every row)."""
    memo = memo if len(spec.shape) == 2 and len(ys) else None
    seen = (
        (in_name, np.dtype(x.dtype).str, np.dtype(spec.dtype).str, ys.shape, ys[-1].tobytes())
        if memo is not None
        else None
    )
    res = _measured(
        memo if seen is not None else None,
        ("residual", seen),
        ys,
        an.residual,
        xs,
        ys,
        np.dtype(x.dtype),
        spec.dtype,
        rows_checked=int(rows.size),
        row_index=rows,
        ulp_tol=ULP_TOL,
    )
    terms = enc.angle_terms(enc_name) if len(spec.shape) == 2 and not res.within else None
    if terms is None:
        return res, None
    # a table computed with the usual float32 formula (HF, fairseq, ...) is off by an error that grows with
    # position: within the bound of posenc_cli.inspect.tolerance it is "reproduced to float32-formula accuracy"
    said = (seen, np.asarray(terms.freq).tobytes(), float(terms.amplitude), int(terms.offset))
    fv = _measured(
        memo if seen is not None else None,
        ("formula", said),
        ys,
        _formula_verdict,
        xs,
        ys,
        rows,
        terms,
        x.dtype,
        spec.dtype,
    )
    return res, fv


def _measured(memo: dict[Any, Any] | None, key: Any, ys: np.ndarray, compute: Any, *args: Any, **kwargs: Any) -> Any:
    """``compute(*args, **kwargs)``, or what it gave earlier in this identification (``memo``; None: nothing kept)
    for the same ``key`` and regenerated rows equal to ``ys`` (each candidate of a quick check measures the same
    input rows)."""
    if memo is None:
        return compute(*args, **kwargs)
    kept = memo.setdefault(key, [])
    for ys0, value in kept:
        if ys0.dtype == ys.dtype and ys0.shape == ys.shape and ys0.tobytes() == ys.tobytes():  # bit for bit
            return value
    value = compute(*args, **kwargs)
    kept.append((ys, value))
    return value


def _formula_verdict(xs: np.ndarray, ys: np.ndarray, rows: np.ndarray, terms: Any, x_dtype: Any, y_dtype: Any) -> Any:
    """Whether ``xs`` is ``ys`` within the usual float32 formula's error (float64's, for a float64 table that is not
    within float32's: NumPy code such as the TF tutorial's get_angles computes in float64, a much smaller error)."""
    fv = tol.formula_check_rows(xs, ys, rows, terms, np.dtype(x_dtype), y_dtype)
    if not fv.ok and np.dtype(x_dtype) == np.float64:
        fv64 = tol.formula_check_rows(xs, ys, rows, terms, np.dtype(x_dtype), y_dtype, np.float64)
        fv = fv64 if fv64.ok else fv
    return fv


def _table_rows(name: str, x: Any, quick: bool, reads: dict[Any, Any] | None) -> tuple[np.ndarray, np.ndarray]:
    """The rows of input tensor ``name`` a verification compares (every row of a small table; ``quick``: 48 spread
    to its end) as float64 rows x values, and their indices. They depend on the table's shape alone, so ``reads``
    keeps them for the next candidate (read-only)."""
    shape = tuple(int(s) for s in x.shape)
    rows = an.check_rows(shape[0], int(np.prod(shape[1:])) if len(shape) > 1 else 1)
    if quick and rows.size > 48:
        rows = an.spread_rows(shape[0], 48, head=8, tail=8)
    key = (name, shape, int(rows.size), quick)
    if reads is not None and key in reads:
        return reads[key], rows
    xs = an.read_rows(x, rows).reshape(rows.size, -1)
    if reads is not None:
        xs.flags.writeable = False
        reads[key] = xs
    return xs, rows


def _sample_3d(x: Any, enc: Any, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Heads x len x len: every head (up to 64, else a sample) on a sample of query rows."""
    heads = an.spread_rows(int(x.shape[0]), 64)
    q = an.check_rows(int(x.shape[1]), int(x.shape[2]), count=256)
    xs, ys = [], []
    for h in heads.tolist():
        xh = np.asarray(x[h] if isinstance(x, np.ndarray) else x.rows(h, h + 1)[0], dtype=np.float64)
        yh = np.asarray(enc.rows(name, h, h + 1)[0], dtype=np.float64)
        xs.append(xh[q].reshape(-1))
        ys.append(yh[q].reshape(-1))
    return np.stack(xs), np.stack(ys), heads


def _name(cand: Candidate) -> None:
    """Fill ``explicit``, ``preset``/``presets`` and ``command`` from the kind's declared defaults and presets."""
    from ..encodings import get_kind

    cls = get_kind(cand.kind)
    try:
        full = _encoding(cand).params()
    except ParameterError:
        full = dict(cand.params)
    defaults = _defaults(cand.kind)
    explicit = {
        k: v for k, v in full.items() if k not in ("length", "dim", "dtype") and (k not in defaults or v != defaults[k])
    }
    best_preset, best_cover = None, -1
    matching = []
    for pname, values in cls.PRESETS.items():
        if all(k in full and _same(full[k], v) for k, v in values.items()):
            matching.append(pname)
            cover = sum(1 for k in values if k in explicit)
            if cover > best_cover:
                best_preset, best_cover = pname, cover
    cand.presets = matching
    # a preset names the table when it accounts for some of its parameters, or when there is nothing else to say
    if best_preset is not None and (best_cover > 0 or not set(explicit) - set(cand.mistake)):
        cand.preset = best_preset
        explicit = {k: v for k, v in explicit.items() if k not in cls.PRESETS[best_preset]}
    else:
        best_preset = None
    cand.explicit = explicit
    parts = ["posenc", "generate", "--kind", cand.kind, "--len", str(full.get("length", cand.params.get("length")))]
    if full.get("dim") is not None:
        parts += ["--dim", str(full["dim"])]
    if full.get("dtype") not in (None, defaults.get("dtype")):
        parts += ["--dtype", str(full["dtype"])]
    pairs = ([f"preset={best_preset}"] if best_preset else []) + [f"{k}={show_value(v)}" for k, v in explicit.items()]
    if pairs:
        parts += ["-p", ",".join(pairs)]
    enc_primary = cls.PRIMARY
    single = list(cand.tensor_map.values())
    if len(single) == 1 and single[0] != enc_primary:
        parts += ["--tensor", single[0]]
    cand.command = " ".join(shlex.quote(p) for p in parts)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return float(a) == float(b)
        except (TypeError, ValueError):
            return False
    return bool(a == b)
