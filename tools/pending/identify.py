"""Which kind, preset and parameters reproduce a table: read from its structure, confirmed by regenerating it.

:func:`identify` measures the table once (:class:`~posenc_cli.analysis.TableAnalysis`: column frequencies and
phases, sin/cos pairs and their layout, duplicated halves, value range, Toeplitz structure, per-head slopes, grid
strides), asks each kind's *hint* function which parameters that structure implies, and regenerates every
proposed candidate with posenc's own engine (``make_encoding(kind, params).rows(name, start, stop)``) on a sample
of rows (every row of tables below 4M elements). A candidate *accounts* for the table when every compared value is
within 2 ulps of the table's dtype (or within compare's ``atol``); the simplest such candidate is ``best`` and
:attr:`Identification.command` is the ``posenc generate`` line that regenerates it. When none is exact but one
agrees within the error of the usual float32 formula (``2^-22 (t + 1)`` at position ``t``: published code that
computes frequencies and angles in float32), that one is ``best`` with ``tolerance="float32-formula"``. When none
accounts (a trained table, noise), ``best`` is None and the candidates, closest first, each say why they fail.

Hints are plain functions ``hints_<kind>(tensors, analysis) -> list[Candidate]``, grouped at the bottom of this
module; the driver takes them as an argument (``hints=``), so they can later move into each kind's class.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import analysis as an
from .errors import ParameterError

#: A hint: the tensors and their analysis -> candidate parameter sets for one kind.
Hint = Callable[[dict[str, Any], an.TableAnalysis], list["Candidate"]]
#: Elementwise tolerance of "reproduces": ulps of the table's dtype (or compare's atol).
ULP_TOL = 2.0
#: Candidates verified at most per kind (structure proposes few; this bounds a pathological hint).
MAX_VERIFY = 24


@dataclass
class Candidate:
    """A kind and parameters proposed from the table's structure, and how well they reproduce it.

    ``params`` are every parameter given to ``make_encoding`` (``length``, ``dim``, ``dtype`` included);
    ``tensor_map`` maps input tensor names to the encoding's tensor names (default: same names, or the primary
    tensor for a single input); ``note`` is the structure that suggested it. ``structural`` is False for a guess
    made because the structure did not fit (kept so that failures can name the closest kind); a ``fallback`` is
    verified only when no other candidate of its kind accounts. Verification fills ``max_abs``, ``ulp`` (of
    ``ulp_dtype``), ``cosine``, ``accounts``, ``rows_checked`` and ``why`` (why it fails); naming fills
    ``preset``, ``presets`` (every preset whose values hold), ``explicit`` (what differs from the defaults and the
    preset) and ``command``.
    """

    kind: str
    params: dict[str, Any]
    tensor_map: dict[str, str] = field(default_factory=dict)
    note: str = ""
    structural: bool = True
    fallback: bool = False
    max_abs: float = math.inf
    ulp: float = math.inf
    ulp_dtype: str = ""
    cosine: float = float("nan")
    accounts: bool = False
    rows_checked: int = 0
    why: str = ""
    preset: str | None = None
    presets: list[str] = field(default_factory=list)
    explicit: dict[str, Any] = field(default_factory=dict)
    command: str = ""
    tolerance: str = ""

    def key(self) -> tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
        from .encodings.base import format_value

        return (
            self.kind,
            tuple(sorted((k, format_value(v)) for k, v in self.params.items())),
            tuple(sorted(self.tensor_map.items())),
        )

    def label(self) -> str:
        """``kind`` with its preset and distinctive parameters, for one-line messages."""
        from .encodings.base import format_value

        bits = [f"preset {self.preset}"] if self.preset else []
        shown = self.explicit if (self.explicit or self.preset or self.command) else _short_params(self.params)
        bits += [f"{k} {format_value(v)}" for k, v in shown.items()]
        return " ".join([self.kind, *bits[:4]])

    def to_json(self) -> dict[str, Any]:
        from .encodings.base import format_value

        def num(v: float) -> float | str:
            return v if math.isfinite(v) else str(v)

        return {
            "kind": self.kind,
            "preset": self.preset,
            "presets": self.presets,
            "params": {k: format_value(v) for k, v in self.params.items()},
            "explicit": {k: format_value(v) for k, v in self.explicit.items()},
            "tensor_map": self.tensor_map,
            "note": self.note,
            "accounts": self.accounts,
            "max_abs": num(self.max_abs),
            "ulp": num(self.ulp),
            "ulp_dtype": self.ulp_dtype,
            "cosine": num(self.cosine),
            "rows_checked": self.rows_checked,
            "tolerance": self.tolerance,
            "why": self.why,
            "command": self.command,
        }


def _short_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in ("length", "dim", "dtype")}


@dataclass
class Identification:
    """What :func:`identify` found: ``best`` (None when no analytic kind reproduces the table), every verified
    candidate (accounting ones first, then the closest by cosine) and, when nothing accounts, ``reason``."""

    shape: tuple[int, ...]
    dtype: str
    candidates: list[Candidate]
    best: Candidate | None
    reason: str = ""

    @property
    def command(self) -> str | None:
        """The ``posenc generate`` command line that regenerates the table (None if unidentified)."""
        return self.best.command if self.best is not None else None

    @property
    def summary(self) -> str:
        if self.best is None:
            return self.reason
        b = self.best
        if b.tolerance == "float32-formula":
            return (
                f"{b.label()}: regenerated, it agrees within {b.max_abs:.2g}, the error of evaluating the formula "
                f"in float32 (growing with position), on {b.rows_checked} rows"
            )
        return (
            f"{b.label()}: regenerated, it agrees within {b.max_abs:.2g} ({_ulps(b.ulp)} {b.ulp_dtype} ulp) "
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
        }


def _ulps(u: float) -> str:
    return "0" if u == 0 else f"{max(1, math.ceil(u - 1e-9))}" if u <= 1e6 else f"{u:.3g}"


# ----- the driver -----------------------------------------------------------------------------------------------
def identify(
    tensors: dict[str, Any] | Any,
    metadata: dict[str, str] | None = None,
    *,
    hints: list[tuple[str, Hint]] | None = None,
) -> Identification:
    """Find the kind, preset and parameters that reproduce ``tensors``.

    Parameters
    ----------
    tensors : dict of str to array_like, or array_like
        The tensors of one source (e.g. ``{"cos": ..., "sin": ..., "inv_freq": ...}``, or ``{"pe": table}``); a
        bare array is ``{"table": array}``. Arrays may be memory-mapped: only sampled rows are read, plus one
        streaming pass for NaN/infinity counts.
    metadata : dict, optional
        String metadata of the source (e.g. ``dim`` for a partial-rotary table whose head is wider than it).
    hints : list of (kind, hint function), optional
        The per-kind hints to ask, in order (default :data:`DEFAULT_HINTS`).

    Returns
    -------
    Identification
    """
    if not isinstance(tensors, dict):
        tensors = {"table": tensors}
    tensors = {k: (v if hasattr(v, "shape") and hasattr(v, "dtype") else np.asarray(v)) for k, v in tensors.items()}
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
    hints = DEFAULT_HINTS if hints is None else hints
    proposed: list[Candidate] = []
    seen: set[Any] = set()
    for _kind, hint in hints:
        for cand in hint(tensors, ana):
            k = cand.key()
            if k not in seen:
                seen.add(k)
                proposed.append(cand)
    verified: list[Candidate] = []
    accounted_kinds: set[str] = set()

    def check(cand: Candidate) -> None:
        _verify(cand, tensors, quick=True)
        if cand.accounts or cand.tolerance:
            _verify(cand, tensors)
        verified.append(cand)
        if cand.accounts:
            accounted_kinds.add(cand.kind)

    per_kind: dict[str, int] = {}
    for fallback in (False, True):
        # simplest first within each kind: once one accounts, the more complex readings of that kind are moot
        todo = sorted((c for c in proposed if c.fallback == fallback), key=_rough_complexity)
        for cand in todo:
            if cand.kind in accounted_kinds:
                continue
            if per_kind.get(cand.kind, 0) >= MAX_VERIFY:
                continue
            per_kind[cand.kind] = per_kind.get(cand.kind, 0) + 1
            check(cand)
    for cand in verified:
        _name(cand)
    good = sorted((c for c in verified if c.accounts), key=lambda c: (_complexity(c), c.ulp, c.max_abs))
    bad = sorted(
        (c for c in verified if not c.accounts),
        key=lambda c: (not c.structural, -(c.cosine if math.isfinite(c.cosine) else -2.0)),
    )
    if not good:
        # nothing exact: a candidate within the error of the usual float32 formula still names the table
        near = sorted((c for c in bad if c.tolerance == "float32-formula"), key=lambda c: (_complexity(c), c.max_abs))
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
    return Identification(shape, dtype, good + bad, best, reason)


def _dtype_name(dt: np.dtype) -> str:
    from .encodings.base import dtype_name

    return dtype_name(np.dtype(dt))


def _rough_complexity(c: Candidate) -> float:
    """:func:`_complexity` before naming: parameters that differ from the kind's declared defaults, by digits."""
    from .encodings import get_kind

    cls = get_kind(c.kind)
    defaults = {f.name: f.default for f in cls.param_fields() if f.default is not dataclasses.MISSING}
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


def _runs(rows: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """Consecutive runs of sorted rows: ``(start, stop, positions in rows)``."""
    out = []
    breaks = np.flatnonzero(np.diff(rows) > 1) + 1
    start = 0
    for stop in [*breaks.tolist(), rows.size]:
        out.append((int(rows[start]), int(rows[stop - 1]) + 1, np.arange(start, stop)))
        start = stop
    return out


def _verify(cand: Candidate, tensors: dict[str, Any], *, quick: bool = False) -> None:
    """Regenerate ``cand`` with posenc's engine and measure it against the input on sampled rows (``quick``: 48
    rows spread to the end of the table, a cheap first filter)."""
    from .encodings import make_encoding

    try:
        enc = make_encoding(cand.kind, cand.params)
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
            rows = an.check_rows(int(spec.shape[0]), int(np.prod(spec.shape[1:])) if len(spec.shape) > 1 else 1)
            if quick and rows.size > 48:
                rows = an.spread_rows(int(spec.shape[0]), 48, head=8, tail=8)
            xs = an.read_rows(x, rows).reshape(rows.size, -1)
            ys = np.empty_like(xs)
            try:
                for lo, hi, where in _runs(rows):
                    ys[where] = np.asarray(enc.rows(enc_name, lo, hi), dtype=np.float64).reshape(hi - lo, -1)
            except (ArithmeticError, ParameterError) as exc:  # e.g. a degenerate base the engine does not refuse
                cand.why = f"{cand.kind} cannot build it: {type(exc).__name__}: {exc}"
                return
        res = an.residual(
            xs, ys, np.dtype(x.dtype), spec.dtype, rows_checked=int(rows.size), row_index=rows, ulp_tol=ULP_TOL
        )
        if len(spec.shape) == 2 and not res.within and np.dtype(x.dtype) == np.float32 and not cand.fallback:
            # a table computed with the usual float32 formula is off by ~|t w| 2^-24: within 2^-22 (t + 1) of the
            # exact one (frequencies below 1 rad per position) is "reproduced to float32-formula accuracy"; the
            # offset counts at most the table's length, so that a wild offset cannot widen the bound
            shift = min(abs(int(cand.params.get("offset", 0) or 0)), int(spec.shape[0]))
            t = (rows + shift).astype(np.float64) + 1
            mag = np.maximum(1.0, np.maximum(np.abs(xs), np.abs(ys)))
            with np.errstate(invalid="ignore"):
                loose &= bool(np.all(np.abs(xs - ys) <= 2.0**-22 * t[:, None] * mag))
        elif not res.within:
            loose = False
        worst_abs, worst_ulp = max(worst_abs, res.max_abs), max(worst_ulp, res.ulp)
        cosines.append(res.cosine)
        ok &= res.within
        rows_checked = max(rows_checked, res.rows_checked)
        ulp_dtype = res.ulp_dtype
    cand.max_abs, cand.ulp, cand.ulp_dtype = worst_abs, worst_ulp, ulp_dtype
    cand.cosine = float(min(cosines)) if cosines else float("nan")
    cand.accounts, cand.rows_checked = bool(ok), rows_checked
    cand.tolerance = "ulp" if ok else "float32-formula" if loose and math.isfinite(worst_abs) else ""
    if not ok:
        cand.why = f"regenerated, it differs by up to {worst_abs:.3g} ({_ulps(worst_ulp)} ulp)"
        if cand.note and not cand.structural:
            cand.why = f"{cand.note}; {cand.why}"


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
    from .encodings import get_kind, make_encoding
    from .encodings.base import format_value

    cls = get_kind(cand.kind)
    try:
        full = make_encoding(cand.kind, cand.params).params()
    except ParameterError:
        full = dict(cand.params)
    defaults = {f.name: f.default for f in cls.param_fields() if f.default is not dataclasses.MISSING}
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
    if best_preset is not None and (best_cover > 0 or not explicit):
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
    pairs = ([f"preset={best_preset}"] if best_preset else []) + [f"{k}={format_value(v)}" for k, v in explicit.items()]
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


# ----- helpers the hints share (generic: no kind names) ----------------------------------------------------------
def round_variants(
    value: float, *, tols: tuple[float, ...] = (1e-10, 1e-8, 1e-6, 1e-4), keep: bool = True
) -> list[float]:
    """``value`` rounded to its shortest decimal within each relative tolerance (distinct, shortest first),
    plus the value itself when ``keep``."""
    out = []
    for t in sorted(tols, reverse=True):
        v = an.nice_number(value, t)
        if v not in out:
            out.append(v)
    if keep and value not in out:
        out.append(float(value))
    return out


def base_params(ana: an.TableAnalysis, *, dim: bool = True) -> dict[str, Any]:
    """``length``, ``dim`` (the columns) and ``dtype`` of the main table."""
    p: dict[str, Any] = {"length": ana.n}
    if dim and ana.ndim >= 2:
        p["dim"] = ana.width
    if ana.dtype_param is not None:
        p["dtype"] = ana.dtype_param
    return p


def ladder(spec: an.Spectrum) -> tuple[np.ndarray, np.ndarray, list[an.Oscillator]]:
    """Oscillators from the highest frequency down, with their frequencies and errors."""
    osc = spec.by_frequency()
    return np.array([o.freq for o in osc]), np.array([o.err for o in osc]), osc


def phase_tol(dtype: Any) -> float:
    """How far (rad) a phase read from a table of ``dtype`` may be off: 1e-3, or 4 ulps for coarse dtypes."""
    return max(1e-3, 4 * an.data_eps(np.dtype(dtype)))


def _bases(value: float, coarse: bool = False) -> list[float]:
    """Round readings of a frequency base (``coarse``: a float16/bfloat16 table, read to 1e-3 .. 1e-2 too); a base
    of 1 or below is degenerate (no frequency ladder) and dropped."""
    # slow columns read on few rows (or a coarse dtype) know the base to 1e-3 .. 1e-2 only; regeneration decides
    tols = (1e-10, 1e-8, 1e-6, 1e-4, 1e-3, 1e-2) + ((3e-3,) if coarse else ())
    return [b for b in round_variants(value, tols=tols) if b > 1.0 and math.isfinite(b)]


def _round_base(value: float) -> float | None:
    """``value`` as a base of at most three significant digits within 1e-9 .. 1e-5 (None if it is not one)."""
    for tol in (1e-9, 1e-7, 1e-5):
        nice = an.nice_number(value, tol)
        if an.nice_digits(nice) <= 3 and nice > 1:
            return nice
    return None


def _near_one(x: float, tol: float = 1e-6) -> bool:
    return abs(x - 1.0) <= tol


# --- per-kind hints: to be moved into each kind's module ---------------------------------------------------------
def hints_sinusoidal(tensors: dict[str, Any], ana: an.TableAnalysis) -> list[Candidate]:
    """sin/cos pairs in an interleaved, split or cos-first layout with a geometric frequency ladder."""
    if ana.ndim != 2 or not ana.floating or ana.width < 2:
        return []
    d = ana.width
    base = base_params(ana)
    guess = [Candidate("sinusoidal", dict(base), structural=False)]
    if ana.zero_rows.size == 1:
        guess[0].params["padding_idx"] = int(ana.zero_rows[0])
    spec = ana.spectrum
    if spec is None or not spec.oscillators:
        guess[0].note = "its columns are not sinusoids of the position"
        return guess
    layout = an.pair_layout(spec.pairs, d)
    if layout not in ("interleaved", "split", "split-cos-first"):
        guess[0].note = "its columns are not sin/cos pairs in an interleaved or split layout"
        return guess
    if spec.other_cols:
        guess[0].note = f"{len(spec.other_cols)} of {d} columns are not sinusoids"
        guess[0].params["layout"] = layout
        return guess
    freqs, errs, osc = ladder(spec)
    geo = an.geometric_fit(freqs, errs)
    # the lowest frequencies of a coarse (float16) or very long-wavelength table are measured poorly: a leading
    # geometric run of three or more still gives the ladder, and regeneration has the last word
    if geo is None or geo.count < min(len(freqs), 3):
        guess[0].note = "its frequencies are not a geometric ladder"
        guess[0].params["layout"] = layout
        return guess
    ptol = phase_tol(ana.dtype)
    # the odd column of an odd dim has no partner: a sin column, or a cos one when cos comes first
    single = 0.0 if layout == "split-cos-first" else -math.pi / 2
    found = an.position_offsets(spec, single_phase=single, tol=ptol)
    # alternatives only when the phases are too coarse to single one offset out (float16, bfloat16)
    offsets = [o for o, mis in found if found[0][1] > 1e-4 or o == found[0][0]] or [0]
    n = len(freqs)
    out: list[Candidate] = []
    for offset, freq in [(o, f) for o in offsets for f in ("paper", "t2t")]:
        params: dict[str, Any] = {**base, "layout": layout, "freq": freq}
        if offset:
            params["offset"] = offset
        if ana.zero_rows.size == 1:
            params["padding_idx"] = int(ana.zero_rows[0]) + offset
        if d % 2:
            rule = "zero-pad" if (d - 1) in spec.zero_cols else "ceil"
            auto = "zero-pad" if (freq == "t2t" and layout != "interleaved") else "ceil"
            if rule != auto:
                params["odd_dim"] = rule
        if n == 1:
            out.append(Candidate("sinusoidal", params, note="one frequency: any base gives this table"))
            continue
        if freq == "paper":
            if not _near_one(geo.w0, 1e-6):
                continue
            for b in _bases(geo.ratio ** (-d / 2.0), an.data_eps(ana.dtype) > 1e-4):
                out.append(
                    Candidate("sinusoidal", {**params, "base": b}, note=f"{layout} sin/cos pairs, w_k = base^(-2k/{d})")
                )
        else:
            min_ts = 1.0 / geo.w0
            span = geo.ratio ** (-float(max(d // 2 - 1, 1)))
            for m in round_variants(min_ts, tols=(1e-8, 1e-6)):
                for mx in round_variants(m * span):
                    p = dict(params)
                    if _near_one(m, 1e-12):
                        p["base"] = mx
                    else:
                        p.update(min_timescale=m, max_timescale=mx)
                    out.append(Candidate("sinusoidal", p, note=f"{layout} sin/cos pairs, geometric timescales"))
    return out or guess


def _grid_plan(
    ndim_grid: int, f: int, d: int, axis_order: str, layout: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column: grid axis (0 = slowest), 0 for sin / 1 for cos, and frequency index k, for one convention."""
    axes = list(range(ndim_grid))
    if axis_order == "reversed":
        axes.reverse()
    width = 2 * ndim_grid * f
    ax, trig, k = np.full(width, -1), np.full(width, -1), np.full(width, -1)
    ks = np.arange(f)
    for slot, axis in enumerate(axes):
        if layout == "split":
            spans = [
                (0, np.arange(2 * f * slot, 2 * f * slot + f)),
                (1, np.arange(2 * f * slot + f, 2 * f * (slot + 1))),
            ]
        elif layout == "interleaved":
            spans = [
                (0, np.arange(2 * f * slot, 2 * f * (slot + 1), 2)),
                (1, np.arange(2 * f * slot + 1, 2 * f * (slot + 1), 2)),
            ]
        else:
            spans = [
                (0, np.arange(f * slot, f * (slot + 1))),
                (1, np.arange(f * (ndim_grid + slot), f * (ndim_grid + slot + 1))),
            ]
        for t, cols in spans:
            ax[cols], trig[cols], k[cols] = axis, t, ks
    return ax[:d], trig[:d], k[:d]


def _axis_frequencies(
    table: Any, first: int, stride: int, side: int, sin_cols: np.ndarray, cos_cols: np.ndarray
) -> np.ndarray:
    """Angular frequencies of one grid axis: the angle atan2(sin, cos) at coordinates 1, 2, 4, ..., side - 1,
    each unwrapped with the estimate from the shorter ones (error ~ ulp / coordinate)."""
    coords = sorted({1, *[2**i for i in range(1, max(1, side - 1).bit_length())], side - 1} - {0})
    coords = [c for c in coords if c < side]
    x = an.read_rows(table, [first + stride * c for c in coords]).reshape(len(coords), -1)
    has_cos = cos_cols >= 0
    cc = np.where(has_cos, cos_cols, 0)
    # a sin column whose cos was truncated away: arcsin at coordinate 1 (w < pi/2 beyond the first frequency)
    w = np.where(has_cos, np.arctan2(x[0, sin_cols], x[0, cc]), np.arcsin(np.clip(x[0, sin_cols], -1, 1)))
    for row, c in zip(x[1:], coords[1:]):
        theta = np.arctan2(row[sin_cols], row[cc])
        pred = c * w
        w = np.where(has_cos, (theta + an.TWO_PI * np.round((pred - theta) / an.TWO_PI)) / c, w)
    return w


def _factorizations(cells: int, k: int) -> list[tuple[int, ...]]:
    """Every ordered way to write ``cells`` as a product of ``k`` positive integers."""
    if k == 1:
        return [(cells,)]
    out = []
    for a in range(1, cells + 1):
        if cells % a == 0:
            out += [(a, *rest) for rest in _factorizations(cells // a, k - 1)]
    return out


def _grid_hints(kind: str, ndim_grid: int, ana: an.TableAnalysis) -> list[Candidate]:
    """Find the grid shape, axis order and layout by exact equalities: moving one step along axis ``a`` changes
    exactly the columns the layout gives to ``a`` (values at equal coordinates are computed identically, so
    this holds bit for bit whatever the dtype); then each axis' frequencies give the base."""
    if ana.ndim != 2 or not ana.floating or ana.n < 1:
        return []
    first = 1 if ana.n > 1 and 0 in ana.zero_rows.tolist() else 0
    cells = ana.n - first
    if cells < 1 or cells > 1 << 24:
        return []
    d = ana.width
    f = -(-d // (2 * ndim_grid))
    row0 = an.read_rows(ana.table, [first])[0]
    trig_of = np.where(row0 == 0, 0, np.where(row0 == 1, 1, -1))
    plans = []
    for axis_order in ("reversed", "grid"):
        for layout in ("split", "interleaved", "sin-block"):
            exp_axis, exp_trig, exp_k = _grid_plan(ndim_grid, f, d, axis_order, layout)
            if np.array_equal(exp_trig, trig_of):
                plans.append((axis_order, layout, exp_axis, exp_k))
    if not plans:
        return []
    rng = np.random.default_rng(0)
    cache: dict[int, np.ndarray] = {}

    def row(r: int) -> np.ndarray:
        if r not in cache:
            cache[r] = an.read_rows(ana.table, [first + r])[0]
        return cache[r]

    out = []
    shapes = _factorizations(cells, ndim_grid)
    for shape in shapes:
        strides = [math.prod(shape[a + 1 :]) for a in range(ndim_grid)]
        for axis_order, layout, exp_axis, exp_k in plans:
            ok = True
            for a in range(ndim_grid):
                if shape[a] < 2:
                    # an axis of length 1 never changes: its columns equal the first row's everywhere
                    mine_all = exp_axis == a
                    if mine_all.any() and any(
                        not np.array_equal(row(int(r))[mine_all], row0[mine_all])
                        for r in rng.integers(0, cells, size=6)
                    ):
                        ok = False
                        break
                    continue
                others = exp_axis != a
                mine = (exp_axis == a) & (exp_k == 0)
                # cells r (coordinate a below its last value) and r + stride_a differ in axis a only: along the
                # whole line of axis a through the origin (a wrong side length crosses a true boundary there), and
                # at a few random cells
                line = [c * strides[a] for c in range(min(shape[a] - 1, 512))]
                starts = line + [int(x) for x in rng.integers(0, cells, size=6)]
                for r in starts:
                    coord = (r // strides[a]) % shape[a]
                    if coord == shape[a] - 1:
                        r -= strides[a]
                    x0, x1 = row(r), row(r + strides[a])
                    moved = not mine.any() or not np.array_equal(x0[mine], x1[mine])
                    if not np.array_equal(x0[others], x1[others]) or not moved:
                        ok = False
                        break
                if not ok:
                    break
            if not ok:
                continue
            grid = "x".join(map(str, shape))
            params = {
                "length": ana.n,
                "dim": d,
                "grid": grid,
                "cls_token": bool(first),
                "axis_order": axis_order,
                "layout": layout,
                "channels": "exact" if d % (2 * ndim_grid) == 0 else "ceil",
            }
            # with dim divisible, ceil builds the same table: offer it too, so a preset that says ceil is named
            channel_options = ["exact", "ceil"] if params["channels"] == "exact" else ["ceil"]
            if ana.dtype_param:
                params["dtype"] = ana.dtype_param
            bases = [10000.0]
            _, exp_trig, _ = _grid_plan(ndim_grid, f, d, axis_order, layout)
            # the longest axis that has a sin/cos pair beyond k = 0 (truncated columns may lack one)
            for axis in sorted(range(ndim_grid), key=lambda a: -shape[a]):
                pairs = []
                for k in range(1, f):
                    sc = np.flatnonzero((exp_axis == axis) & (exp_trig == 0) & (exp_k == k))
                    cc = np.flatnonzero((exp_axis == axis) & (exp_trig == 1) & (exp_k == k))
                    if sc.size:
                        pairs.append((k, sc[0], cc[0] if cc.size else -1))
                if shape[axis] < 2 or not pairs:
                    continue
                w = _axis_frequencies(
                    ana.table,
                    first,
                    strides[axis],
                    shape[axis],
                    np.array([p[1] for p in pairs]),
                    np.array([p[2] for p in pairs]),
                )
                e = np.array([p[0] for p in pairs]) / f
                good = w > 0
                if good.any():
                    log_base = -float(np.sum(e[good] * np.log(w[good])) / np.sum(e[good] ** 2))
                    bases = round_variants(math.exp(log_base), tols=(1e-8, 1e-6, 1e-4, 1e-3, 1e-2))
                break
            note = f"{grid} grid, {layout} per axis, {axis_order} axes"
            for b in bases:
                for ch in channel_options:
                    out.append(Candidate(kind, {**params, "base": b, "channels": ch}, note=note))
        if len(out) >= 24:
            break
    return out


def hints_sinusoidal_2d(tensors: dict[str, Any], ana: an.TableAnalysis) -> list[Candidate]:
    """Rows are cells of a row-major H x W grid: columns change with one axis each (found by stride)."""
    return _grid_hints("sinusoidal-2d", 2, ana)


def hints_sinusoidal_3d(tensors: dict[str, Any], ana: an.TableAnalysis) -> list[Candidate]:
    """Rows are cells of a row-major T x H x W grid."""
    return _grid_hints("sinusoidal-3d", 3, ana)


#: Factors tried for NTK's base change b' = b * f^(d/(d-2)) when the plain base is not a round number.
_NTK_FACTORS = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 1.5, 3.0, 5.0, 10.0, 20.0)


def _rotary_structure(ana: an.TableAnalysis) -> dict[str, Any] | None:
    """Rotary cos/sin tables: their tensors, layout, width, and one oscillator per rotation pair."""
    cos, sin = ana.tensor("cos"), ana.tensor("sin")
    names = {}
    if cos is None and sin is None:
        if ana.ndim != 2 or not ana.floating:
            return None
        names["table"] = ana.name
    else:
        if cos is not None:
            names["cos"] = cos[0]
        if sin is not None:
            names["sin"] = sin[0]
    first = ana.tensors[next(iter(names.values()))]
    if len(first.shape) != 2:
        return None
    n, width = int(first.shape[0]), int(first.shape[1])
    onnx = any(v.endswith("_cache") for v in names.values())
    sample = an.lag_sample(n)
    if not sample.usable:
        return None
    xs = {role: ana.read(name, sample.rows) for role, name in names.items()}
    eps = an.data_eps(np.dtype(first.dtype))
    tol = max(4 * eps, 1e-12)
    layout = None if onnx else an.duplicate_layout(next(iter(xs.values())), tol)
    if layout is None and not onnx:
        # no duplicated columns: an ONNX half-width cache if every column is a lone cos (or sin) of the position
        if len(names) != 1:
            return None
        x0 = next(iter(xs.values()))
        single = an.spectrum(first, sample=sample, x=x0, find=False, dtype=first.dtype)
        if not single.sinusoidal or any(o.paired for o in single.oscillators):
            return None
        onnx = True
    uniq = np.arange(width) if onnx else np.arange(width // 2) if layout == "half" else np.arange(0, width, 2)
    m = uniq.size
    if "cos" in xs and "sin" in xs:
        x = np.concatenate([xs["sin"][:, uniq], xs["cos"][:, uniq]], axis=1)
        spec = an.spectrum(first, sample=sample, x=x, pairs=[(j, m + j) for j in range(m)], dtype=first.dtype)
        role = None
    else:
        role_name, x0 = next(iter(xs.items()))
        # one table alone: the amplitude (attention scaling) read on the columns that turn at least a radian pins
        # the slow columns, whose amplitude and frequency cannot be told apart on their own
        free = an.spectrum(first, sample=sample, x=x0[:, uniq], find=False, dtype=first.dtype)
        fast = [o.amplitude for o in free.oscillators if o.freq * n >= 1]
        amp_known = float(np.median(fast)) if fast else 1.0
        spec = an.spectrum(first, sample=sample, x=x0[:, uniq], find=False, dtype=first.dtype, amplitude=amp_known)
        if not spec.sinusoidal:
            spec = free
        role = role_name
    if not spec.sinusoidal and spec.zero_cols == []:
        return None
    return {
        "names": names,
        "layout": layout,
        "onnx": onnx,
        "width": width,
        "rot": 2 * m,
        "spec": spec,
        "role": role,
        "n": n,
        "dtype": first.dtype,
        "m": m,
    }


def hints_rope(tensors: dict[str, Any], ana: an.TableAnalysis) -> list[Candidate]:
    """Rotary tables: duplicated columns (half or interleaved), one frequency per pair, an amplitude (attention
    scaling) and a frequency law: geometric (none, linear, NTK), ramps (llama3, YaRN), per column (longrope), or
    trailing zero frequencies (proportional)."""
    st = _rotary_structure(ana)
    if st is None:
        return []
    spec: an.Spectrum = st["spec"]
    n, m, r = st["n"], st["m"], st["rot"]
    coarse = an.data_eps(np.dtype(st["dtype"])) > 1e-4
    # one entry per rotation pair, in column order (zero-frequency pairs are zero sin columns)
    by_col: dict[int, an.Oscillator] = {}
    for o in spec.oscillators:
        by_col[o.cos_col - (m if o.sin_col is not None else 0)] = o
    freqs = np.array([by_col[k].freq if k in by_col else 0.0 for k in range(m)])
    errs = np.array([by_col[k].err if k in by_col else 0.0 for k in range(m)])
    inv = ana.tensor("inv_freq")
    inv_dtype = "float64"
    if inv is not None and len(inv[1].shape) == 1 and inv[1].shape[0] == m:
        freqs = np.asarray(inv[1], dtype=np.float64)
        errs = np.maximum(np.abs(freqs) * 1e-15, 1e-300)
        inv_dtype = "float32" if np.dtype(inv[1].dtype) == np.float32 else "float64"
    amps = [o.amplitude for o in spec.oscillators if o.amplitude > 0]
    amp = float(np.median(amps)) if amps else 1.0
    role = st["role"]
    ptol = phase_tol(st["dtype"])
    off = an.position_offset(spec, single_phase=-math.pi / 2 if role == "sin" else 0.0, tol=ptol)
    offset = off[0] if off is not None and off[1] < ptol else 0
    params: dict[str, Any] = {"length": n}
    dim = r if not st["onnx"] else r
    meta_dim = ana.metadata.get("dim")
    if meta_dim is not None and meta_dim.isdigit() and int(meta_dim) > r:
        params["dim"], params["rotary_dim"] = int(meta_dim), r
    else:
        params["dim"] = dim
    if ana.dtype_param:
        params["dtype"] = ana.dtype_param
    if st["layout"] is not None:
        params["layout"] = st["layout"]
    if st["onnx"]:
        params["cache"] = "onnx"
    if offset:
        params["offset"] = offset
    if inv_dtype == "float32":
        params["inv_freq_dtype"] = "float32"
    tmap = {
        name: (
            {"cos": "cos", "sin": "sin", "table": "cos"}[role_]
            if not st["onnx"]
            else {"cos": "cos_cache", "sin": "sin_cache", "table": "cos_cache"}[role_]
        )
        for role_, name in st["names"].items()
    }
    if role == "sin" or (role == "table" and off is not None and off[1] >= ptol):
        alt = an.position_offset(spec, single_phase=-math.pi / 2, tol=ptol)
        if role == "table" and alt is not None and alt[1] < ptol:
            offset = alt[0]
            params["offset"] = offset
            if not offset:
                params.pop("offset")
            tmap = {st["names"]["table"]: "sin_cache" if st["onnx"] else "sin"}
    if inv is not None and inv[0] not in tmap:
        tmap[inv[0]] = "inv_freq"
    note = f"{st['layout'] or 'onnx'} rotary pairs, {m} frequencies"
    out: list[Candidate] = []
    nz = int(np.sum(freqs > 0))
    amp_tol = max(1e-6, 8 * an.data_eps(np.dtype(st["dtype"])))
    scaled_amp = not _near_one(amp, amp_tol)

    def add(p: dict[str, Any], why: str, fallback: bool = False) -> None:
        out.append(Candidate("rope", p, tensor_map=dict(tmap), note=f"{note}; {why}", fallback=fallback))
        if inv_dtype == "float64" and "inv_freq_dtype" not in p:
            out.append(
                Candidate(
                    "rope",
                    {**p, "inv_freq_dtype": "float32"},
                    tensor_map=dict(tmap),
                    note=f"{note}; {why}; float32 inv_freq",
                    fallback=True,
                )
            )

    if nz < m and np.all(freqs[nz:] == 0) and nz >= 1:
        # proportional: the first rot/2 frequencies over the whole head, the rest 0
        geo = an.geometric_fit(freqs[:nz], errs[:nz])
        if geo is not None and geo.count == nz:
            for f_ in round_variants(1.0 / geo.w0, tols=(1e-8, 1e-6)):
                for b in _bases(geo.ratio ** (-r / 2.0), coarse) if nz > 1 else [10000.0]:
                    add(
                        {**params, "dim": r, "scaling": "proportional", "rotary_dim": 2 * nz, "factor": f_, "base": b},
                        f"{m - nz} trailing zero frequencies (proportional)",
                    )
    # frequencies too low to move a value on this many rows read as 0 too: fit the ladder on the others
    zero_tail = 1 <= nz < m and bool(np.all(freqs[nz:] == 0))
    fit_n = nz if zero_tail else m
    geo = an.geometric_fit(freqs[:fit_n], errs[:fit_n])
    if geo is None:
        return out
    if geo.count == fit_n or m == 1:
        ratio = geo.ratio if m > 1 else 10000.0 ** (-2.0 / r)
        bases = _bases(ratio ** (-r / 2.0), coarse) if m > 1 else [10000.0]
        if _near_one(geo.w0, max(1e-7, amp_tol)):
            for b in bases:
                if scaled_amp:
                    add(
                        {
                            **params,
                            "base": b,
                            "scaling": "yarn",
                            "factor": 1.0,
                            "original_max_position_embeddings": max(n + offset, 1),
                            "attention_factor": amp,
                        },
                        f"w_k = base^(-2k/{r}), amplitude {amp:.6g} (attention scaling)",
                    )
                else:
                    add({**params, "base": b}, f"w_k = base^(-2k/{r})")
            if r > 2 and m > 1 and not scaled_amp and bases:
                # dynamic NTK at sequence length S: base * (f S / L - (f - 1))^(r/(r-2)), S = offset + length
                S = offset + n
                for f_ in (2.0, 4.0, 8.0, 16.0, 32.0):
                    for L in (2**e for e in range(4, 21)):
                        if L >= S:
                            break
                        nice = _round_base(bases[-1] / (f_ * S / L - (f_ - 1)) ** (r / (r - 2.0)))
                        if nice is not None:
                            add(
                                {
                                    **params,
                                    "base": nice,
                                    "scaling": "dynamic",
                                    "factor": f_,
                                    "original_max_position_embeddings": L,
                                },
                                f"dynamic NTK at sequence length {S}",
                            )
                for f_ in _NTK_FACTORS:
                    nice = _round_base(bases[-1] / f_ ** (r / (r - 2.0)))
                    if nice is not None:
                        add(
                            {**params, "base": nice, "scaling": "ntk", "factor": f_},
                            f"NTK: base {nice:g} * {f_:g}^({r}/{r - 2})",
                        )
        else:
            for f_ in round_variants(1.0 / geo.w0, tols=(1e-9, 1e-7, 1e-5)):
                for b in bases:
                    if scaled_amp:
                        add(
                            {
                                **params,
                                "base": b,
                                "scaling": "longrope",
                                "short_factor": tuple([f_] * m),
                                "long_factor": tuple([f_] * m),
                                "original_max_position_embeddings": max(n + offset, 1),
                                "factor": 1.0,
                                "attention_factor": amp,
                            },
                            "every frequency divided by one factor",
                        )
                    else:
                        add(
                            {**params, "base": b, "scaling": "linear", "factor": f_},
                            f"every frequency divided by {f_:g} (linear)",
                        )
        if not coarse or m < 3 or zero_tail:
            return out
        # a float16/bfloat16 ladder hides a ramp within its rounding: try the laws below as well
    if zero_tail:
        return out
    # a law on top of a geometric ladder: the kept high frequencies and the divided low ones are both geometric
    ratios = []
    tail = an.geometric_fit(freqs[::-1], errs[::-1])
    for run, ratio in sorted(
        ((geo.count, geo.ratio), (tail.count if tail else 0, 1 / tail.ratio if tail else 0.0)), reverse=True
    ):
        if run >= 2 and 0 < ratio < 1:
            ratios.append(ratio)
    w0 = an.nice_number(float(freqs[0]), 1e-6)
    bases_seen: set[float] = set()
    k = np.arange(m, dtype=np.float64)
    for ratio in ratios:
        for b in _bases(ratio ** (-r / 2.0), coarse)[:2]:
            if b in bases_seen:
                continue
            bases_seen.add(b)
            ref = w0 * np.exp(-2 * k / r * math.log(b))
            q = freqs / ref
            if not (q.min() > 0 and q.max() < 1 + 1e-6):
                continue
            for f_ in round_variants(1 / q.min(), tols=(1e-6, 1e-4, 1e-3), keep=False)[::-1]:
                if f_ <= 1:
                    continue
                s_ = np.clip((q - 1 / f_) / (1 - 1 / f_), 0, 1)  # 1 = kept, 0 = divided by f
                for L, lff, hff, f_l in _llama3_options(q, s_, f_, 2 * math.pi / ref):
                    add(
                        {
                            **params,
                            "base": b,
                            "scaling": "llama3",
                            "factor": f_l,
                            "original_max_position_embeddings": L,
                            "low_freq_factor": lff,
                            "high_freq_factor": hff,
                        },
                        f"low frequencies divided by {f_l:g}, ramp in frequency (llama3)",
                    )
                yarn_default_amp = 0.1 * math.log(f_) + 1.0
                for L, truncate in _yarn_lengths(1 - s_, r, b):
                    p = {**params, "base": b, "scaling": "yarn", "factor": f_, "original_max_position_embeddings": L}
                    if not truncate:
                        p["truncate"] = False
                    if not _near_one(amp / yarn_default_amp, amp_tol):
                        p["attention_factor"] = amp
                    add(p, f"frequencies divided by {f_:g}, ramp in the index (YaRN)")
            for L, f_y in _yarn_unsaturated(q, r, b):
                p = {**params, "base": b, "scaling": "yarn", "factor": f_y, "original_max_position_embeddings": L}
                if not _near_one(amp / (0.1 * math.log(f_y) + 1.0), amp_tol):
                    p["attention_factor"] = amp
                add(p, f"frequencies divided by up to {f_y:g}, ramp in the index not reaching its end (YaRN)")
            div = ref / freqs
            factors = tuple(an.nice_number(float(x), 1e-7) for x in div)
            p = {
                **params,
                "base": b,
                "scaling": "longrope",
                "short_factor": factors,
                "long_factor": factors,
                "original_max_position_embeddings": max(n + offset, 1),
                "factor": 1.0,
            }
            if scaled_amp:
                p["attention_factor"] = amp
            add(p, "each frequency divided by its own factor (longrope)", fallback=True)
    return out


def _llama3_options(
    q: np.ndarray, s: np.ndarray, f: float, wavelength: np.ndarray
) -> list[tuple[int, float, float, float]]:
    """(original_max_position_embeddings L, low_freq_factor, high_freq_factor, factor) consistent with the
    frequency ratios ``q`` (1 = kept; ``s`` the same on the scale where 0 = divided by ``f``), round values first.

    When no frequency is divided all the way, ``f`` is not the smallest ratio: it is solved from the ramp with
    Llama 3.1's L, low and high (8192, 1, 4).
    """
    kept, div = s > 1 - 1e-6, s < 1e-6
    inner = ~kept & ~div
    inv = 1 / wavelength
    out: list[tuple[int, float, float, float]] = []

    def add(L: float, lff: float, hff: float, factor: float) -> None:
        Li = int(round(L))
        if Li >= 1 and hff > lff > 0 and factor > 1 and (Li, lff, hff, factor) not in out:
            out.append((Li, lff, hff, factor))

    if inner.sum() >= 2:
        a, b = np.polyfit(inv[inner], s[inner], 1)  # s = a / wavelength + b
        if a > 0 and b < 0:
            hff = an.nice_number(1 - 1 / b, 1e-4)
            add(an.nice_number(-a / b, 1e-4), 1.0, hff, f)
    # nothing need be divided all the way: with L, low, high = 8192, 1, 4 the ramp value is known and
    # q = (1 - s) / f + s gives f
    s_def = np.clip((8192 * inv - 1) / 3, 0, 1)
    ramp = (s_def > 0) & (s_def < 1) & (q < 1 - 1e-9)
    if ramp.any():
        f_sol = float(np.median((1 - s_def[ramp]) / (q[ramp] - s_def[ramp])))
        if f_sol > 1:
            add(8192, 1.0, 4.0, an.nice_number(f_sol, 1e-4))
    if inner.any():
        # defaults low 1, high 4: L = wavelength * (3 s + 1)
        add(an.nice_number(float(np.median(wavelength[inner] * (3 * s[inner] + 1))), 1e-4), 1.0, 4.0, f)
        hff = float(np.median(1 + (8192 * inv[inner] - 1) / s[inner]))
        add(8192, 1.0, an.nice_number(hff, 1e-4), f)
    else:
        # a step: every kept wavelength below L / high, every divided one above L / low
        low = 4 * float(wavelength[kept].max()) if kept.any() else 0.0
        high = float(wavelength[div].min()) if div.any() else math.inf
        for L in _round_lengths(low, min(high, 1 << 30)):
            add(L, 1.0, 4.0, f)
        add(8192, 1.0, 4.0, f)
    return out[:5]


def _yarn_lengths(rho: np.ndarray, r: int, base: float) -> list[tuple[int, bool]]:
    """Context lengths L whose YaRN correction range (beta_fast 32, beta_slow 1) gives the ramp ``rho``
    (0 = kept, 1 = divided, linear in the index between ``low`` and ``high``); round lengths first."""
    k = np.arange(rho.size)
    kept, div = k[rho < 1e-6], k[rho > 1 - 1e-6]
    inner = (rho > 1e-6) & (rho < 1 - 1e-6)

    def c_inv(c: float, beta: float) -> float:
        # the L at which correction_dim(beta) = d ln(L / (2 pi beta)) / (2 ln base) equals c
        return 2 * math.pi * beta * math.exp(2 * math.log(base) * c / r)

    if inner.sum() >= 2:
        slope, icpt = np.polyfit(k[inner].astype(np.float64), rho[inner], 1)
        lo, hi = -icpt / slope, (1 - icpt) / slope
    elif kept.size and div.size:
        lo, hi = float(kept.max()), float(div.min())
    else:
        return []
    out: list[tuple[int, bool]] = []
    if abs(lo - round(lo)) < 1e-4 and abs(hi - round(hi)) < 1e-4:
        lo_i, hi_i = round(lo), round(hi)
        # floor(c(32)) = lo (or below 0 when lo is 0) and ceil(c(1)) = hi (or above r - 1 when hi is r - 1)
        a1 = c_inv(lo_i, 32) if lo_i > 0 else 0.0
        b1 = c_inv(lo_i + 1, 32)
        a2 = c_inv(hi_i - 1, 1)
        b2 = c_inv(hi_i, 1) if hi_i < r - 1 else math.inf
        low, high = max(a1, a2), min(b1, b2)
        if low < high:
            out += [(L, True) for L in _round_lengths(low, min(high, 1 << 30))]
    else:
        out.append((int(round(an.nice_number(c_inv(lo, 32), 1e-6))), False))
    return out[:3]


def _yarn_unsaturated(q: np.ndarray, r: int, base: float) -> list[tuple[int, float]]:
    """(L, factor) for a YaRN ramp that has not reached its end within the table's frequencies.

    ``1 - q_k = (k - low) / (high - low) * (1 - 1/f)``: the line through the ramp gives ``low`` (an integer with
    truncation), ``low`` gives the context lengths L (beta_fast 32), L gives ``high`` (beta_slow 1) and the slope
    then gives f.
    """
    y = 1 - q
    k = np.arange(q.size, dtype=np.float64)
    top = y.max()
    ramp = (y > 1e-6) & (y < top * (1 - 1e-6)) if np.sum(y > top * (1 - 1e-6)) > 1 else y > 1e-6
    if ramp.sum() < 2:
        return []
    slope, icpt = np.polyfit(k[ramp], y[ramp], 1)
    if slope <= 0:
        return []
    lo_real = -icpt / slope
    lo = round(lo_real)
    if abs(lo_real - lo) > 1e-3 or lo < 0:
        return []

    def c_inv(c: float, beta: float) -> float:
        return 2 * math.pi * beta * math.exp(2 * math.log(base) * c / r)

    out = []
    for L in _round_lengths(c_inv(lo, 32) if lo > 0 else 0.0, c_inv(lo + 1, 32)):
        hi = min(math.ceil(r * math.log(L / (2 * math.pi)) / (2 * math.log(base))), r - 1)
        c = slope * (hi - lo)
        if hi > lo and 0 < c < 1:
            out.append((L, an.nice_number(1 / (1 - c), 1e-4)))
    return out


def _round_lengths(low: float, high: float) -> list[int]:
    """Round context lengths in (low, high]: powers of two first, then multiples of 1024, 100, 1."""
    out: list[int] = []
    p = 1
    while p <= high:
        if p > low:
            out.append(p)
        p *= 2
    for step in (1024, 100, 1):
        v = (math.floor(low / step) + 1) * step
        if v <= high and v not in out:
            out.append(int(v))
    return out[:3]


def hints_xpos(tensors: dict[str, Any], ana: an.TableAnalysis) -> list[Candidate]:
    """Positive scales whose logarithm is rank one: (t - center) / scale_base times log zeta_k with
    zeta_k = (2k + 0.4 d) / (1.4 d), written to both columns of each pair."""
    if ana.ndim != 2 or not ana.floating or ana.width < 2 or ana.width % 2:
        return []
    x = ana.x if ana.sample.usable else ana.head
    rows = ana.sample.rows if ana.sample.usable else np.arange(min(ana.n, 16))
    if not np.all(x > 0):
        return []
    d = ana.width
    layout = an.duplicate_layout(x, 4 * an.data_eps(ana.dtype))
    if layout is None:
        return []
    uniq = np.arange(d // 2) if layout == "half" else np.arange(0, d, 2)
    v = np.log((np.arange(0, d, 2) + 0.4 * d) / (1.4 * d))
    lx = np.log(x[:, uniq])
    u = lx @ v / (v @ v)  # per row: (t - center) / scale_base
    if np.max(np.abs(lx - np.outer(u, v))) > 1e-3 or rows.size < 2:
        return []
    slope, icpt = np.polyfit(rows.astype(np.float64), u, 1)
    if slope <= 0:
        return []
    params = {**base_params(ana), "layout": layout}
    out = []
    for sb in round_variants(1.0 / slope, tols=(1e-6, 1e-4, 1e-3)):
        center = -icpt * sb
        c = int(round(center))
        p = {**params, "scale_base": sb}
        if c != ana.n // 2:
            p["center"] = c
        out.append(Candidate("xpos", p, note=f"{layout} pairs, log scale rank one in (position, zeta_k)"))
    return out


def hints_alibi(tensors: dict[str, Any], ana: an.TableAnalysis) -> list[Candidate]:
    """Heads x len x len biases, each head -slope * distance (causal: -inf above the diagonal); the slopes give
    the head count and max_bias."""
    if ana.ndim != 3 or ana.shape[1] != ana.shape[2] or not ana.floating:
        return []
    heads, n = ana.shape[0], ana.shape[1]
    slopes, causal = [], None
    for h in range(heads):
        head = np.asarray(ana.table[h] if isinstance(ana.table, np.ndarray) else ana.table.rows(h, h + 1)[0])
        fit = an.toeplitz_fit(head, an.spread_rows(n, 16))
        if fit is None or fit.max_dev > 0:
            return []
        lin = an.linear_distance_fit(fit.lut)
        # rounding to the table's dtype bends the line by up to half an ulp of its largest value
        tol = 4 * an.data_eps(ana.dtype) * abs(lin.slope) * max(n - 1, 1) + 1e-300
        if not math.isfinite(lin.slope) or lin.max_dev > tol:
            return []
        slopes.append(lin.slope)
        causal = lin.causal if causal is None else causal
    c = 1 << (heads.bit_length() - 1)
    if n < 2 or not slopes[0] > 0:
        params = {"length": n, "dim": heads, "causal": bool(causal)}
        return [Candidate("alibi", params, note="one position: any slope gives this table")]
    max_bias = -c * math.log2(slopes[0])
    params = {"length": n, "dim": heads, "causal": bool(causal)}
    if ana.dtype_param:
        params["dtype"] = ana.dtype_param
    return [
        Candidate("alibi", {**params, "max_bias": b}, note=f"{heads} heads of linear biases, slope 2^-(b/{c})")
        for b in round_variants(max_bias, tols=(1e-6, 1e-4, 1e-3, 1e-2))
    ]


def _integer_toeplitz(ana: an.TableAnalysis) -> an.ToeplitzFit | None:
    if ana.ndim != 2 or ana.shape[0] != ana.shape[1] or not ana.values.integer:
        return None
    fit = an.toeplitz_fit(ana.table)
    return fit if fit is not None and fit.max_dev == 0 else None


def hints_t5(tensors: dict[str, Any], ana: an.TableAnalysis) -> list[Candidate]:
    """Integer Toeplitz buckets: exact small distances, then logarithmic buckets up to max_distance; keys after
    the query get their own buckets when bidirectional."""
    fit = _integer_toeplitz(ana)
    if fit is None:
        return []
    n = fit.n
    lut = fit.lut.astype(np.int64)
    rel = np.arange(-(n - 1), n)
    back = lut[rel <= 0][::-1]  # distance d = 0, 1, ... looking backwards (r = -d)
    fwd = lut[rel > 0]
    bidirectional = bool(fwd.size and np.any(fwd != 0))
    if bidirectional:
        half = int(fwd[0]) - 1 if fwd.size else 0
        if half < 2:
            return []
        nb_options = [(2 * half, half)]
    else:
        top = int(back.max()) + 1
        nb_options = [(nb, nb) for nb in range(max(top, 2), 2 * top + 2)]
    out = []
    for num_buckets, per_dir in nb_options:
        exact = per_dir // 2
        if exact < 1 or not np.array_equal(back[: min(exact, back.size)], np.arange(min(exact, back.size))):
            continue
        for md in _t5_distances(back, per_dir, exact):
            direction = "bidirectional" if bidirectional else "unidirectional"
            out.append(
                Candidate(
                    "t5",
                    {"length": n, "num_buckets": num_buckets, "max_distance": md, "bidirectional": bidirectional},
                    note=f"Toeplitz buckets, {exact} exact, {direction}",
                )
            )
        if len(out) >= 6:
            break
    return out


def _t5_distances(back: np.ndarray, n: int, exact: int) -> list[int]:
    """max_distance values consistent with the logarithmic buckets observed (128 and round ones first)."""
    lo, hi = exact + 1.0, math.inf  # max_distance > exact
    for dist in range(exact + 1, back.size):
        b = int(back[dist]) - exact
        if b < 0:
            return []
        frac = math.log(dist / exact) * (n - exact)
        if b >= n - 1 - exact:
            # saturated: frac / ln(D/E) >= n-1-E  ->  D <= E * exp(frac / (n-1-E))
            hi = min(hi, exact * math.exp(frac / max(n - 1 - exact, 1e-300)))
        else:
            # b <= frac / ln(D/E) < b + 1
            if b > 0:
                hi = min(hi, exact * math.exp(frac / b))
            lo = max(lo, exact * math.exp(frac / (b + 1)))
    picks = []
    if hi == math.inf:
        hi = max(lo * 64, 128.0)
    for cand in (128, 256, 64, 512, 32, 1024, 16, 2048, 4096):
        if lo * (1 - 1e-6) <= cand <= hi * (1 + 1e-6):
            picks.append(cand)
    for cand in (math.ceil(lo), math.floor(hi)):
        if lo * (1 - 1e-6) <= cand <= hi * (1 + 1e-6) and cand not in picks and cand > exact:
            picks.append(int(cand))
    return picks[:3]


def hints_relative(tensors: dict[str, Any], ana: an.TableAnalysis) -> list[Candidate]:
    """Integer Toeplitz indices clip(j - i, -k, k) + k: k is the value on the diagonal."""
    fit = _integer_toeplitz(ana)
    if fit is None:
        return []
    n = fit.n
    k = int(fit.value(0))
    rel = np.arange(-(n - 1), n)
    if k < 0 or not np.array_equal(fit.lut, np.clip(rel, -k, k) + k):
        return []
    return [Candidate("relative", {"length": n, "max_relative_position": k}, note=f"Toeplitz indices clipped at {k}")]


def _row_constant(ana: an.TableAnalysis) -> np.ndarray | None:
    """The per-row value when every column of each sampled row is equal (else None)."""
    if ana.ndim != 2 or not ana.floating:
        return None
    rows = np.unique(np.concatenate([np.arange(min(ana.n, 16)), an.spread_rows(ana.n, 64)]))
    x = an.read_rows(ana.table, rows).reshape(rows.size, -1)
    if not np.all(x == x[:, :1]):
        return None
    return x[:, 0]


def hints_index(tensors: dict[str, Any], ana: an.TableAnalysis) -> list[Candidate]:
    """Every column holds the position itself: t = offset + row."""
    v = _row_constant(ana)
    if v is None or v[0] < 0 or v[0] != round(v[0]):
        return []
    offset = int(v[0])
    p = {**base_params(ana)}
    if offset:
        p["offset"] = offset
    return [Candidate("index", p, note=f"every column is the position (first {offset})")]


def hints_normalized(tensors: dict[str, Any], ana: an.TableAnalysis) -> list[Candidate]:
    """Every column holds (offset + row) / (offset + len - 1): the first value gives the offset."""
    v = _row_constant(ana)
    if v is None or not (0 <= v[0] < 1) or ana.n < 2:
        return [] if v is None or ana.n >= 2 or v[0] != 0 else [Candidate("normalized", base_params(ana))]
    x0 = float(v[0])
    offset = int(round(x0 * (ana.n - 1) / (1 - x0)))
    p = {**base_params(ana)}
    if offset:
        p["offset"] = offset
    return [Candidate("normalized", p, note=f"every column is position / last position (offset {offset})")]


def hints_binary(tensors: dict[str, Any], ana: an.TableAnalysis) -> list[Candidate]:
    """0/1 values: the bits of offset + row, most significant first."""
    if ana.ndim != 2 or not ana.floating:
        return []
    head = ana.head
    if not np.all((head == 0) | (head == 1)):
        return []
    bits = head[0].astype(np.int64)
    offset = int("".join(map(str, bits.tolist())) or "0", 2) if bits.size <= 62 else 0
    p = {**base_params(ana)}
    if offset:
        p["offset"] = offset
    return [Candidate("binary", p, note=f"rows are bit patterns (first {offset})")]


def hints_learned(tensors: dict[str, Any], ana: an.TableAnalysis) -> list[Candidate]:
    """A freshly initialised table: zero-mean values of standard deviation std; reproducible only with its seed
    (from the metadata, else the default 0). A trained table is not reproduced by any seed."""
    if ana.ndim != 2 or not ana.floating:
        return []
    x = ana.x if ana.sample.usable else ana.head
    rms = float(np.sqrt(np.mean(x * x))) if x.size else 0.0
    if not rms > 0:
        return []
    seed = ana.metadata.get("seed", "0")
    seed_i = int(seed) if seed.isdigit() else 0
    peak = float(np.max(np.abs(x))) / rms
    out = []
    for init, trunc, shrink in (("normal", None, 1.0), ("truncated-normal", 2.0, 0.8796)):
        # a normal cut at 2 std has a standard deviation of 0.88 std and no value beyond 2 std
        if trunc is not None and peak > trunc / shrink * 1.25:
            continue
        for std in round_variants(rms / shrink, tols=(0.25, 0.15, 0.1, 0.05), keep=False):
            p = {**base_params(ana), "init": init, "std": std, "seed": seed_i}
            if trunc is not None:
                p["truncation"] = trunc
            out.append(
                Candidate("learned", p, note=f"zero-mean values, std ~{rms:.3g}, seed {seed_i}", structural=False)
            )
    return out


#: The hints :func:`identify` asks by default, in registry order.
DEFAULT_HINTS: list[tuple[str, Hint]] = [
    ("sinusoidal", hints_sinusoidal),
    ("sinusoidal-2d", hints_sinusoidal_2d),
    ("sinusoidal-3d", hints_sinusoidal_3d),
    ("rope", hints_rope),
    ("xpos", hints_xpos),
    ("learned", hints_learned),
    ("index", hints_index),
    ("normalized", hints_normalized),
    ("binary", hints_binary),
    ("alibi", hints_alibi),
    ("t5", hints_t5),
    ("relative", hints_relative),
]
