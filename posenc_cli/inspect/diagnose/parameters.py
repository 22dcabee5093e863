"""Explanations in the model's own terms: both tables read as a kind with parameters, and the parameters that differ.

A *reading* of a table is a kind and every parameter: from the spec or config the user gave, from posenc's
metadata in the file, or from :func:`~posenc_cli.inspect.identification.identify` (within the float32 formula's
error, or as an exact table rounded to bfloat16 / float16). A reading from a file is trusted only after its
regeneration reproduces the file on sampled rows. When both sides have one, the difference is stated parameter by
parameter before any structural search runs: "A is rope base 10000; B gives 500000", "llama3 scaling (factor 8,
low 1, high 4, original 8192) is missing from A", "A pairs (2k, 2k+1) where B rotates halves". A parameter whose
change would not change the table (a rule's parameter where no rule applies, a default written out) is no
difference: each is tried on A's reading and kept only when the regenerated rows move.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import tolerance
from ..candidates import show_value
from .core import Ctx, Explanation, Step
from .heads import SLOPE_RULES

#: Parameters that say how a table was computed or how long it is, not which table it is: never a difference.
NOT_DIFFERENCES = ("length", "seq_len", "dtype", "inv_freq_dtype", "angle_dtype")
#: What each parameter is, for the sentence that names it (a parameter not listed is named as itself).
GROUPS = {
    "base": "base",
    "layout": "layout",
    "dim": "rotary-dim",
    "rotary_dim": "rotary-dim",
    "partial_rotary_factor": "rotary-dim",
    "offset": "offset",
    "inv_freq_dtype": "precision",
    "position_dtype": "precision",
    "angle_dtype": "precision",
    "attention_factor": "attention-scaling",
    "mscale": "attention-scaling",
    "mscale_all_dim": "attention-scaling",
    "scaling": "scaling",
    "factor": "scaling",
    "original_max_position_embeddings": "scaling",
    "low_freq_factor": "scaling",
    "high_freq_factor": "scaling",
    "beta_fast": "scaling",
    "beta_slow": "scaling",
    "truncate": "scaling",
    "short_factor": "scaling",
    "long_factor": "scaling",
}
#: Short names of a scaling rule's parameters, as its papers and configs say them.
SHORT = {"original_max_position_embeddings": "original", "low_freq_factor": "low", "high_freq_factor": "high"}
#: The order a scaling rule's parameters are named in (others follow in the kind's order).
ORDER = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
#: Rows regenerated to see whether a parameter changes the table.
PROBE_ROWS = 16


@dataclass(frozen=True)
class Reading:
    """A table read as ``kind`` with every parameter (``params``); ``how`` says how well its regeneration
    reproduces the table ('' for a spec), ``max_abs`` by how much, on ``rows`` rows."""

    kind: str
    params: dict[str, Any]
    how: str = ""
    max_abs: float = 0.0
    ulp: float = 0.0
    ulp_dtype: str = ""
    rows: int = 0
    #: how sentences name the table (its source, not one of its tensors: a reading is the whole table's)
    label: str = ""

    def value(self, name: str) -> Any:
        return self.params.get(name)


def show(value: Any) -> str:
    """A parameter value as a person writes it (``500000``, ``8``, ``half``; lists shortened)."""
    if value is None:
        return "unset (the rule's default)"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return show_value(value) if value.is_integer() else f"{value:.6g}"
    if isinstance(value, tuple):
        shown = ", ".join(show(v) for v in value[:4])
        return f"[{shown}{', ...' if len(value) > 4 else ''}]"
    return str(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _moves(ra: Reading, changed: dict[str, Any]) -> bool:
    """Whether A's reading with ``changed`` regenerates other rows than A's reading (or cannot be built)."""
    from ...encodings import make_encoding
    from ...errors import ParameterError

    try:
        enc_a = make_encoding(ra.kind, ra.params)
        enc_b = make_encoding(ra.kind, {**ra.params, **changed})
    except (ParameterError, ValueError, TypeError):
        return True
    specs_b = enc_b.tensor_specs()
    for name, spec in enc_a.tensor_specs().items():
        if name not in specs_b or tuple(specs_b[name].shape) != tuple(spec.shape):
            return True
        n = int(spec.shape[0]) if spec.shape else 1
        # the first rows and the last: a rule that moves only slow frequencies shows at the end
        for lo, hi in {(0, min(n, PROBE_ROWS)), (max(0, n - PROBE_ROWS), n)}:
            try:
                xa = np.asarray(enc_a.rows(name, lo, hi), dtype=np.float64)
                xb = np.asarray(enc_b.rows(name, lo, hi), dtype=np.float64)
            except (ParameterError, ValueError, ArithmeticError):
                return True
            if xa.shape != xb.shape or not np.array_equal(xa, xb, equal_nan=True):
                return True
    return False


def differences(ra: Reading, rb: Reading) -> dict[str, tuple[Any, Any]]:
    """The parameters whose values differ and whose change moves the table, as ``{name: (A's, B's)}``."""
    if ra.kind != rb.kind:
        return {"kind": (ra.kind, rb.kind)}
    names = [n for n in dict.fromkeys([*ra.params, *rb.params]) if n not in NOT_DIFFERENCES or _mistake(ra, rb, n)]
    raw = {n: (ra.value(n), rb.value(n)) for n in names if not _same(ra.value(n), rb.value(n))}
    scaling = [n for n in raw if GROUPS.get(n) == "attention-scaling"]
    sa, sb = _own(ra, "attention_scaling"), _own(rb, "attention_scaling")
    if scaling and sa is not None and sb is not None and abs(sa - sb) <= _amp_tol(ra, rb) * max(abs(sb), 1.0):
        # attention_factor 1 read off a table, mscale = mscale_all_dim in a config: the same multiplier (an
        # amplitude read off a table is known to the amplitude's tolerance), no difference
        raw = {n: v for n, v in raw.items() if n not in scaling}
    return {n: v for n, v in raw.items() if _moves(ra, {n: v[1]})}


def _amp_tol(ra: Reading, rb: Reading) -> float:
    """How far apart two readings' attention scalings may be and be one: the amplitude tolerance of the coarser
    of their dtypes (a spec's is exact)."""
    dts = [r.value("dtype") for r in (ra, rb) if r.how and isinstance(r.value("dtype"), str)]
    return max([tolerance.amp_tol(_np_dtype(d)) for d in dts], default=0.0)


def _np_dtype(name: str) -> Any:
    from ...encodings.base import resolve_dtype
    from ...errors import ParameterError

    try:
        return resolve_dtype(name)
    except ParameterError:
        return np.float64


def _mistake(ra: Reading, rb: Reading, name: str) -> str:
    """What a named precision mistake of either reading's ``name`` says ('' when neither is one): ``inv_freq``
    rounded to bfloat16 or float16 moves the table, where float32's rounding is the arithmetic of the formula."""
    from ..hints.rotary import MISTAKES

    said = MISTAKES.get(name, {})
    return said.get(ra.value(name), "") or said.get(rb.value(name), "")


def _own(r: Reading, key: str) -> Any:
    """A derived quantity a reading's kind records in its metadata, from the reading's own parameters (None when
    it cannot be built)."""
    from ...encodings import make_encoding
    from ...errors import ParameterError

    try:
        got = make_encoding(r.kind, r.params).extra_metadata().get(key)
        return float(got) if got is not None else None
    except (ParameterError, ValueError, TypeError):
        return None


def _rule_text(r: Reading, rule: str) -> str:
    """``llama3 scaling (factor 8, low 1, high 4, original 8192)``: a scaling rule and the parameters it sets."""
    names = [n for n, v in r.params.items() if GROUPS.get(n) == "scaling" and n != "scaling" and v is not None]
    names.sort(key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER))
    parts = [f"{SHORT.get(n, n)} {show(r.params[n])}" for n in names]
    return f"{rule} scaling" + (f" ({', '.join(parts)})" if parts else "")


def scaling_step(A: str, B: str, ra: Reading, rb: Reading, diff: dict[str, tuple[Any, Any]]) -> Step:
    """``parameter-scaling``: a scaling rule missing, added or replaced, or one of its parameters changed."""
    rule_a, rule_b = str(ra.value("scaling")), str(rb.value("scaling"))
    names = [n for n in diff if GROUPS.get(n) == "scaling"]
    detail = {n: {"a": diff[n][0], "b": diff[n][1]} for n in names}
    if rule_a != rule_b and rule_a == "none":
        text = f"{_rule_text(rb, rule_b)} is missing from {A} ({B} gives it)"
    elif rule_a != rule_b and rule_b == "none":
        text = f"{A} applies {_rule_text(ra, rule_a)}, which {B} does not"
    elif rule_a != rule_b:
        text = f"{A} applies {_rule_text(ra, rule_a)}; {B} gives {_rule_text(rb, rule_b)}"
    else:
        pairs = [f"{SHORT.get(n, n)} {show(diff[n][0])}; {B} gives {show(diff[n][1])}" for n in names]
        text = f"{A} has {rule_a} " + f", and {rule_a} ".join(pairs)
    return Step("parameter-scaling", text, "", detail)


def _layout_text(kind: str, value: Any) -> str:
    """How a rotary layout pairs the columns, read off the kind's own layout names (first: halves)."""
    from ...encodings import get_kind
    from ..hints import layouts

    try:
        half, interleaved = layouts(get_kind(kind), 2)
    except (TypeError, KeyError):
        return f"layout {show(value)}"
    from ..analysis import DUPLICATE_HALF, DUPLICATE_INTERLEAVED
    from ..hints.rotary import PAIRINGS

    pairs = {half: PAIRINGS[DUPLICATE_HALF], interleaved: PAIRINGS[DUPLICATE_INTERLEAVED]}.get(value)
    return f"layout {show(value)}" + (f", {pairs}" if pairs else "")


def _effective(r: Reading, name: str, value: Any, key: str) -> Any:
    """What a reading with ``name`` set to ``value`` makes of a derived quantity its kind records in its metadata
    (``attention_scaling``: the multiplier a rule's formula gives when the parameter is unset)."""
    from ...encodings import make_encoding
    from ...errors import ParameterError

    try:
        got = make_encoding(r.kind, {**r.params, name: value}).extra_metadata().get(key)
    except (ParameterError, ValueError, TypeError):
        return value
    try:
        return float(got) if got is not None else value
    except ValueError:
        return value


def parameter_step(A: str, B: str, ra: Reading, name: str, va: Any, vb: Any, rb: Reading | None = None) -> Step:
    """``parameter-base``, ``parameter-layout``, ``parameter-rotary-dim``, ``parameter-offset``,
    ``parameter-attention-scaling``, ``parameter-kind`` or ``parameter-other``: one parameter, both values (a
    derived value of B's, such as its attention scaling, from B's own reading ``rb`` when given)."""
    group = GROUPS.get(name, "kind" if name == "kind" else "other")
    detail = {"parameter": name, "a": va, "b": vb}
    if group == "kind":
        text = f"{A} is {va}; {B} gives {vb}"
    elif group == "base":
        text = f"{A} is {ra.kind} base {show(va)}; {B} gives base {show(vb)}"
    elif name == "slopes" and va in SLOPE_RULES and vb in SLOPE_RULES:
        heads = ra.value("dim")
        text = f"{A} has slopes {SLOPE_RULES[va].format(n=heads)}; {B} {SLOPE_RULES[vb].format(n=heads)}"
    elif group == "layout":
        text = f"{A} has {_layout_text(ra.kind, va)}, where {B} has {_layout_text(ra.kind, vb)}"
    elif group == "offset":
        text = f"{A} starts at position {show(va)}; {B} at {show(vb)}"
    elif group == "precision":
        from ..hints.rotary import MISTAKES, NO_MISTAKE

        wa, wb = (MISTAKES[name].get(v) or NO_MISTAKE[name] for v in (va, vb))
        text = f"{A} has {wa} ({name} {show(va)}); {B} has {wb} ({name} {show(vb)})"
    elif group == "attention-scaling":
        ea = _effective(ra, name, va, "attention_scaling")
        eb = _effective(ra, name, vb, "attention_scaling") if rb is None else _own(rb, "attention_scaling")
        text = f"{A} scales cos and sin by {show(ea)} ({name} {show(va)}); {B} gives {show(eb)} ({name} {show(vb)})"
    elif group == "rotary-dim":
        text = f"{A} rotates {name} {show(va)}; {B} gives {show(vb)}"
    else:
        text = f"{A} has {ra.kind} {name} {show(va)}; {B} gives {show(vb)}"
    return Step(f"parameter-{group}", text, "", detail)


def _pairing(kind: str, value: Any) -> str:
    """``consecutive`` or ``halves`` for a rotary kind's two declared layouts, else ''."""
    from ...encodings import get_kind
    from ..hints import layouts

    try:
        half, interleaved = layouts(get_kind(kind), 2)
    except (TypeError, KeyError):
        return ""
    return {half: "halves", interleaved: "consecutive"}.get(value, "")


def qk_step(A: str, B: str, ra: Reading, va: Any, vb: Any) -> Step | None:
    """``qk-permutation`` beside a rotary pairing change: what it means for llama.cpp (see :mod:`.columns`)."""
    pa, pb = _pairing(ra.kind, va), _pairing(ra.kind, vb)
    if {pa, pb} != {"halves", "consecutive"}:
        return None
    consecutive, halves = (A, B) if pa == "consecutive" else (B, A)
    return Step(
        "qk-permutation",
        f"{consecutive}'s consecutive pairs are the pairing llama.cpp NORM uses; convert_hf_to_gguf.py permutes "
        f"Q/K so scores match {halves}'s rotate_half",
        "",
        {"consecutive": consecutive, "rotate_half": halves},
    )


def parameter_steps(A: str, B: str, ra: Reading, rb: Reading) -> list[Step]:
    """Every difference between two readings, one step each (a scaling rule and its parameters as one)."""
    diff = differences(ra, rb)
    steps = [parameter_step(A, B, ra, n, *v, rb=rb) for n, v in diff.items() if GROUPS.get(n) != "scaling"]
    if any(GROUPS.get(n) == "scaling" for n in diff):
        steps.append(scaling_step(A, B, ra, rb, diff))
    if "layout" in diff and (qk := qk_step(A, B, ra, *diff["layout"])) is not None:
        steps.append(qk)
    la, lb = ra.value("length"), rb.value("length")
    if ra.kind == rb.kind and la is not None and lb is not None and la != lb:
        steps.append(rows_step(A, B, la, lb))
    return steps


def rows_step(A: str, B: str, la: int, lb: int) -> Step:
    """``sub-range``: a cache truncated (or longer), both row counts named."""
    which = f"{A} is truncated" if la < lb else f"{A} is longer"
    return Step(
        "sub-range",
        f"{A} holds {la} positions; {B} gives {lb} ({which})",
        "",
        {"rows_a": la, "rows_b": lb},
    )


def propose(ctx: Ctx, readings: tuple[Reading | None, Reading | None]) -> tuple[list[Explanation], list[Explanation]]:
    """The parameters that differ between the two readings, as one explanation (none when they agree)."""
    return explain_readings(ctx.a_name, ctx.b_name, readings)


def explain_readings(
    a_name: str, b_name: str, readings: tuple[Reading | None, Reading | None]
) -> tuple[list[Explanation], list[Explanation]]:
    """:func:`propose` by the tables' names (3-D tables, which have no 2-D context, use it directly)."""
    ra, rb = readings
    if ra is None or rb is None:
        return [], []
    A, B = ra.label or a_name, rb.label or b_name
    steps = parameter_steps(A, B, ra, rb)
    if not steps:
        return [], []
    how = [f"{A} read {ra.how}" if ra.how else "", f"{B} read {rb.how}" if rb.how else ""]
    said = "; ".join(h for h in how if h)
    summary = "; ".join(s.clause for s in steps) + (f" ({said})" if said else "")
    worst = max(ra.max_abs, rb.max_abs)
    ulp, ulp_dtype = max((ra.ulp, ra.ulp_dtype), (rb.ulp, rb.ulp_dtype))
    rows = max(ra.rows, rb.rows)
    exp = Explanation("+".join(s.name for s in steps), summary, steps, worst, ulp, ulp_dtype, True, rows, None)
    return [exp], []


def reading_of(encoding: Any) -> Reading:
    """The reading of a spec or config: its encoding's parameters, exact."""
    return Reading(encoding.KIND, dict(encoding.params()))


def reading_from(candidate: Any, precision: str = "", widened: str = "") -> Reading:
    """The reading of a verified identification candidate (or of a file's metadata, verified the same way)."""
    from ...encodings import make_encoding

    params = dict(make_encoding(candidate.kind, candidate.params).params())
    if precision:
        stored = f", stored widened to {widened}" if widened else ""
        how = f"as {candidate.kind} rounded to {precision}{stored}, within {precision} rounding"
    elif candidate.tolerance == tolerance.FORMULA:
        how = f"as {candidate.kind} within the float32 formula's error (max {candidate.max_abs:.2g})"
    else:
        how = ""
    return dataclasses.replace(
        Reading(candidate.kind, params),
        how=how,
        max_abs=candidate.max_abs,
        ulp=candidate.ulp,
        ulp_dtype=candidate.ulp_dtype,
        rows=candidate.rows_checked,
    )


def read_source(
    encoding: Any, tensors: dict[str, Any], metadata: dict[str, str], kind: str | None = None
) -> Reading | None:
    """A source's reading: its spec's or config's encoding (exact), else posenc's metadata verified on sampled
    rows, else :func:`identify` of its tensors (only ``kind``'s readings when the other side has one); None when
    nothing reproduces the table."""
    from ..candidates import Candidate
    from ..identification import _verify, identify

    if encoding is not None and not tensors:
        return reading_of(encoding)
    if encoding is not None:
        cand = Candidate(encoding.KIND, dict(encoding.params()))
        _verify(cand, tensors)
        if cand.accounts or cand.tolerance:
            return reading_from(cand)
    hints = None
    if kind is not None:
        from ...encodings import get_kind
        from ..hints import reader

        fn = reader(get_kind(kind))
        hints = [(kind, fn)] if fn is not None else []
    try:
        found = identify(tensors, dict(metadata), hints=hints)
    except ValueError:
        return None
    if found.best is None:
        return None
    return reading_from(found.best, found.precision, found.widened)
