"""The catalogue of explanations, as a literal registry, and the tiers that search for them.

:data:`EXPLANATIONS` lists every step slug a diagnosis can name (several combine, ``row-offset+sign-flip``):
its documentation, which tier proposes it, the candidate models it tries and the cost of that tier.
:data:`TIERS` lists the searches, cheapest first; :func:`drive` runs them in order and stops at the first tier
that accounts for the difference (3-D heads x len x len tables have their own search, tier ``heads``:
transposition, heads reordered, negated, scaled, rounded). tests/test_diagnosis_registry.py holds every entry to its documentation in
docs/inspect.md and to an independently built (A, B) pair that it explains.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from . import search as s


@dataclass(frozen=True)
class ExplanationInfo:
    """One entry of the catalogue: ``slug`` (a step's name), ``doc`` (one line), ``tier`` (the search that
    proposes it, :data:`TIERS`) and ``models`` (the candidate models it tries)."""

    slug: str
    doc: str
    tier: str
    models: str


#: Every explanation a diagnosis can name.
EXPLANATIONS: tuple[ExplanationInfo, ...] = (
    ExplanationInfo("transpose", "A is B transposed (positions along columns)", "transpose", "A = B^T"),
    ExplanationInfo(
        "row-offset",
        "A's row r is B's row r + k",
        "small-offsets",
        "k = +-1..4, then offsets found by scanning B for A's first row",
    ),
    ExplanationInfo(
        "sub-range", "A is rows i..j of B (or B of A)", "columns", "the shorter table's rows inside the longer"
    ),
    ExplanationInfo(
        "partial-rotary",
        "one table's columns are a subset of the other's",
        "columns",
        "A = B[:, subset]; a narrower ladder of frequencies",
    ),
    ExplanationInfo(
        "layout-half-to-interleaved",
        "rotary pairs cat(f, f) in one, (2k, 2k+1) in the other",
        "columns",
        "the column maps between the two rotary layouts",
    ),
    ExplanationInfo(
        "layout-interleaved-to-half",
        "rotary pairs (2k, 2k+1) in one, cat(f, f) in the other",
        "columns",
        "the column maps between the two rotary layouts",
    ),
    ExplanationInfo(
        "qk-permutation",
        "rotary consecutive pairs (llama.cpp NORM, GPT-J, MLX traditional=True) vs rotate_half: the pairing "
        "llama.cpp NORM uses; convert_hf_to_gguf.py permutes Q/K so scores match",
        "columns",
        "named beside either rotary layout map",
    ),
    ExplanationInfo(
        "layout-split-to-interleaved",
        "[sin | cos] in one, alternating columns in the other",
        "columns",
        "the column maps between split and interleaved sinusoids",
    ),
    ExplanationInfo(
        "layout-interleaved-to-split",
        "alternating columns in one, [sin | cos] in the other",
        "columns",
        "the column maps between split and interleaved sinusoids",
    ),
    ExplanationInfo(
        "sin-cos-order",
        "[sin | cos] vs [cos | sin], or every pair's members swapped",
        "columns",
        "the two blocks (or the members of each pair) exchanged",
    ),
    ExplanationInfo(
        "column-permutation",
        "any other reordering of the columns",
        "columns",
        "a permutation found by matching columns",
    ),
    ExplanationInfo("sign-flip", "some columns negated", "columns", "columns whose values match up to sign"),
    ExplanationInfo(
        "cos-sin-swap", "a rotary pair's cos and sin tensors exchanged", "columns", "the pair read the other way round"
    ),
    ExplanationInfo(
        "constant-scale",
        "A is B times a constant (attention scaling)",
        "columns",
        "the best ratio of A to B, per table",
    ),
    ExplanationInfo(
        "precision-float16", "one table is the other rounded to float16", "columns", "B rounded to float16"
    ),
    ExplanationInfo(
        "precision-bfloat16", "one table is the other rounded to bfloat16", "columns", "B rounded to bfloat16"
    ),
    ExplanationInfo(
        "float32-angle-error",
        "angles evaluated in float32: an error growing with position",
        "float32-angles",
        "sin/cos(fl32(t) * w32) with B's frequencies in float32",
    ),
    ExplanationInfo(
        "head-scale",
        "each head of a heads x len x len table scaled by its own factor (other ALiBi slopes, rule named)",
        "heads",
        "A[h] = k_h B[h]; the slopes read as -T[h, 1, 0] and matched to the paper's and MLX's rules",
    ),
    ExplanationInfo(
        "base",
        "another frequency base (frequencies w**alpha, NTK included)",
        "frequencies",
        "each table's frequencies read from its columns; w_A = w_B**alpha",
    ),
    ExplanationInfo(
        "frequency-scaling",
        "frequencies scaled: linear, ramps in frequency or index, per column",
        "frequencies",
        "w_A / w_B as a constant, a ramp or per column",
    ),
)


@dataclass
class Search:
    """What the tiers share: the context, the explanations found and the closest attempts."""

    ctx: s._Ctx
    explanations: list[s.Explanation] = field(default_factory=list)
    tried: list[s.Explanation] = field(default_factory=list)

    def columns(self, shift: int, transpose: bool) -> None:
        exp, near = s._try_columns(self.ctx, shift, transpose)
        if exp is not None:
            self.explanations.append(exp)
        if near is not None and shift == 0:
            self.tried.append(near)

    @property
    def narrower(self) -> bool:
        return self.ctx.d_a <= self.ctx.d_b

    @property
    def transposable(self) -> bool:
        c = self.ctx
        return (c.n_a, c.d_a) == (c.d_b, c.n_b)


def _small_offsets(st: Search) -> None:
    for k in s.SMALL_SHIFTS:
        lo, hi = s._valid_rows(st.ctx, k, False)
        if hi - lo >= max(2, min(st.ctx.n_a, st.ctx.n_b) // 2):
            st.columns(k, False)
        if st.explanations:
            return


def _offset_scan(st: Search) -> None:
    c = st.ctx
    probe, target = (c.a, c.b) if c.n_a <= c.n_b else (c.b, c.a)
    for r in s._scan_offsets(probe, target):
        k = r if c.n_a <= c.n_b else -r
        if k in (0, *s.SMALL_SHIFTS):
            continue
        st.columns(k, False)
        if st.explanations:
            return


def _found(st: Search, found: tuple[list[s.Explanation], list[s.Explanation]]) -> None:
    st.explanations += found[0]
    st.tried += found[1]


@dataclass(frozen=True)
class Tier:
    """One search: ``name``, ``cost`` (1: the sampled rows only; 2: fits on them; 3: a pass over the reference),
    ``doc``, whether it applies and what it runs."""

    name: str
    cost: int
    doc: str
    applies: Callable[[Search], bool]
    run: Callable[[Search], None]


#: The searches, in the order they run; the first that accounts for the difference ends the search.
TIERS: tuple[Tier, ...] = (
    Tier(
        "columns",
        1,
        "column maps, signs, scale and precision, on aligned rows",
        lambda st: st.narrower,
        lambda st: st.columns(0, False),
    ),
    Tier("transpose", 1, "the same, with A transposed", lambda st: st.transposable, lambda st: st.columns(0, True)),
    Tier("small-offsets", 2, "the same, with A's rows shifted by +-1..4", lambda st: st.narrower, _small_offsets),
    Tier("offset-scan", 3, "the same, at offsets where B holds A's first row", lambda st: st.narrower, _offset_scan),
    Tier(
        "frequencies",
        2,
        "another base or frequency scaling, read from the columns",
        lambda st: True,
        lambda st: _found(st, s._try_frequencies(st.ctx)),
    ),
    Tier(
        "float32-angles",
        2,
        "angles evaluated in float32",
        lambda st: True,
        lambda st: _found(st, s._try_float32_angles(st.ctx)),
    ),
)


def drive(ctx: s._Ctx) -> Search:
    """Run :data:`TIERS` in order until one accounts for the difference."""
    st = Search(ctx)
    for tier in TIERS:
        if st.explanations:
            break
        if tier.applies(st):
            tier.run(st)
    return st
