"""The catalogue of explanations, as a literal registry whose entries carry their own functions.

Each :class:`ExplanationInfo` names a step slug a diagnosis can state (several combine,
``row-offset+sign-flip``) with its documentation, the models it tries and three functions: ``applies`` (whether
its search can run on these two tables), ``proposes`` (the search that fits its models on sampled rows and
verifies them on others) and ``explains`` (the function that words the step). Entries whose steps one search
finds together (a column map, its signs, a scale and a rounding) share that search: :class:`Tier` holds it, with
its cost. :data:`TIERS` is read off the entries, cheapest first; :func:`drive` runs them in order and stops at
the first that accounts for the difference. Adding an explanation is one function and one line here.
3-D heads x len x len tables have their own search (tier ``heads``: transposition, heads reordered, negated,
scaled, rounded, each head scaled). tests/test_diagnosis_registry.py holds every entry to its documentation in
docs/inspect.md and to an independently built (A, B) pair that it explains.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import angles, columns, frequencies, heads, offsets, parameters, resampling
from .core import SMALL_SHIFTS, Ctx, Explanation, valid_rows


@dataclass
class Search:
    """What the tiers share: the context, the explanations found and the closest attempts."""

    ctx: Ctx
    explanations: list[Explanation] = field(default_factory=list)
    tried: list[Explanation] = field(default_factory=list)
    #: both tables read as a kind with parameters (:mod:`.parameters`), when the caller has them
    readings: tuple[Any, Any] | None = None
    #: both tables' metadata, when the caller has them (a vision table's names its model and its resampling)
    metadata: tuple[Mapping[str, str], Mapping[str, str]] | None = None

    def columns(self, shift: int, transpose: bool) -> None:
        exp, near = columns.propose_columns(self.ctx, shift, transpose)
        if exp is not None:
            self.explanations.append(exp)
        if near is not None and shift == 0:
            self.tried.append(near)

    def found(self, found: tuple[list[Explanation], list[Explanation]]) -> None:
        self.explanations += found[0]
        self.tried += found[1]

    @property
    def narrower(self) -> bool:
        return self.ctx.d_a <= self.ctx.d_b

    @property
    def transposable(self) -> bool:
        c = self.ctx
        return (c.n_a, c.d_a) == (c.d_b, c.n_b)


def _small_offsets(st: Search) -> None:
    for k in SMALL_SHIFTS:
        lo, hi = valid_rows(st.ctx, k, False)
        if hi - lo >= max(2, min(st.ctx.n_a, st.ctx.n_b) // 2):
            st.columns(k, False)
        if st.explanations:
            return


def _offset_scan(st: Search) -> None:
    c = st.ctx
    probe, target = (c.a, c.b) if c.n_a <= c.n_b else (c.b, c.a)
    for r in offsets.scan_offsets(probe, target):
        k = r if c.n_a <= c.n_b else -r
        if k in (0, *SMALL_SHIFTS):
            continue
        st.columns(k, False)
        if st.explanations:
            return


@dataclass(frozen=True)
class Tier:
    """One search: ``name``, ``cost`` (0: the readings only; 1: the sampled rows only; 2: fits on them; 3: a pass
    over the reference), ``doc``, whether it applies and what it proposes."""

    name: str
    cost: int
    doc: str
    applies: Callable[[Search], bool]
    proposes: Callable[[Search], None]

    @property
    def run(self) -> Callable[[Search], None]:
        return self.proposes


PARAMETERS = Tier(
    "parameters",
    0,
    "both tables read as a kind with parameters: the parameters that differ",
    lambda st: st.readings is not None,
    lambda st: st.found(parameters.propose(st.ctx, st.readings)),  # type: ignore[arg-type]
)
RESAMPLING = Tier(
    "resampling",
    3,
    "two vision tables of one model at one grid, their metadata given: the native table resampled by every call",
    lambda st: st.metadata is not None and resampling.applies(*st.metadata),
    lambda st: st.found(resampling.propose(st.ctx, st.metadata)),  # type: ignore[arg-type]
)
COLUMNS = Tier(
    "columns",
    1,
    "column maps, signs, scale and precision, on aligned rows",
    lambda st: st.narrower,
    lambda st: st.columns(0, False),
)
TRANSPOSE = Tier(
    "transpose", 1, "the same, with A transposed", lambda st: st.transposable, lambda st: st.columns(0, True)
)
SMALL_OFFSETS = Tier(
    "small-offsets", 2, "the same, with A's rows shifted by +-1..4", lambda st: st.narrower, _small_offsets
)
OFFSET_SCAN = Tier(
    "offset-scan", 3, "the same, at offsets where B holds A's first row", lambda st: st.narrower, _offset_scan
)
FREQUENCIES = Tier(
    "frequencies",
    2,
    "another base or frequency scaling, read from the columns",
    lambda st: True,
    lambda st: st.found(frequencies.propose_frequencies(st.ctx)),
)
FLOAT32_ANGLES = Tier(
    "float32-angles",
    2,
    "angles evaluated in float32",
    lambda st: True,
    lambda st: st.found(angles.propose_float32_angles(st.ctx)),
)
#: 3-D tables: searched by :func:`.heads.diagnose_3d` as a whole (the driver of 2-D tables never runs it).
HEADS = Tier("heads", 1, "heads x len x len tables", lambda st: False, lambda st: None)


@dataclass(frozen=True)
class ExplanationInfo:
    """One entry of the catalogue: ``slug`` (a step's name), ``doc`` (one line), the :class:`Tier` whose search
    proposes it, ``models`` (the candidate models it tries) and ``explains`` (the function that words it)."""

    slug: str
    doc: str
    search: Tier
    models: str
    explains: Callable[..., Any]

    @property
    def tier(self) -> str:
        return self.search.name

    @property
    def applies(self) -> Callable[[Search], bool]:
        return self.search.applies

    @property
    def proposes(self) -> Callable[[Search], None]:
        return self.search.proposes


#: Every explanation a diagnosis can name.
EXPLANATIONS: tuple[ExplanationInfo, ...] = (
    ExplanationInfo(
        "parameter-kind",
        "the two tables are different kinds of encoding",
        PARAMETERS,
        "both readings' kinds",
        parameters.parameter_step,
    ),
    ExplanationInfo(
        "parameter-base",
        "another frequency base, both values named",
        PARAMETERS,
        "both readings' base",
        parameters.parameter_step,
    ),
    ExplanationInfo(
        "parameter-scaling",
        "a scaling rule missing, added or replaced, or one of its parameters (factor, low, high, original, ...)",
        PARAMETERS,
        "both readings' scaling rule and its parameters",
        parameters.scaling_step,
    ),
    ExplanationInfo(
        "parameter-layout",
        "pairs (2k, 2k+1) in one, halves in the other",
        PARAMETERS,
        "both readings' layout",
        parameters.parameter_step,
    ),
    ExplanationInfo(
        "parameter-rotary-dim",
        "another rotated width",
        PARAMETERS,
        "rotary_dim, partial_rotary_factor",
        parameters.parameter_step,
    ),
    ExplanationInfo(
        "parameter-offset", "another first position", PARAMETERS, "both readings' offset", parameters.parameter_step
    ),
    ExplanationInfo(
        "parameter-precision",
        "a named precision mistake: inv_freq rounded to bfloat16/float16, positions rounded to float16/bfloat16",
        PARAMETERS,
        "inv_freq_dtype, position_dtype",
        parameters.parameter_step,
    ),
    ExplanationInfo(
        "parameter-attention-scaling",
        "another attention scaling (cos/sin multiplier)",
        PARAMETERS,
        "attention_factor, mscale, mscale_all_dim",
        parameters.parameter_step,
    ),
    ExplanationInfo(
        "parameter-other",
        "any other parameter of the kind (ALiBi slopes and form, bucket settings, ...), both values named",
        PARAMETERS,
        "every other parameter that moves the table",
        parameters.parameter_step,
    ),
    ExplanationInfo(
        "resampling",
        "two resamplings of one native vision table: which call made each (HF vs timm, antialias, mode, "
        "align_corners, size vs scale_factor)",
        RESAMPLING,
        "every F.interpolate call of encodings.resample.CALLS, and the table kept as it is",
        resampling.resampling_step,
    ),
    ExplanationInfo(
        "transpose", "A is B transposed (positions along columns)", TRANSPOSE, "A = B^T", columns.transpose_step
    ),
    ExplanationInfo(
        "row-offset",
        "A's row r is B's row r + k",
        SMALL_OFFSETS,
        "k = +-1..4, then offsets found by scanning B for A's first row",
        columns.row_offset_step,
    ),
    ExplanationInfo(
        "sub-range",
        "A is rows i..j of B (or B of A)",
        COLUMNS,
        "the shorter table's rows inside the longer",
        columns.sub_range_step,
    ),
    ExplanationInfo(
        "partial-rotary",
        "one table's columns are a subset of the other's",
        COLUMNS,
        "A = B[:, subset]; a narrower ladder of frequencies",
        columns.partial_rotary_step,
    ),
    ExplanationInfo(
        "layout-half-to-interleaved",
        "rotary pairs cat(f, f) in one, (2k, 2k+1) in the other",
        COLUMNS,
        "the column maps between the two rotary layouts",
        columns.layout_step,
    ),
    ExplanationInfo(
        "layout-interleaved-to-half",
        "rotary pairs (2k, 2k+1) in one, cat(f, f) in the other",
        COLUMNS,
        "the column maps between the two rotary layouts",
        columns.layout_step,
    ),
    ExplanationInfo(
        "qk-permutation",
        "rotary consecutive pairs (llama.cpp NORM, GPT-J, MLX traditional=True) vs rotate_half: the pairing "
        "llama.cpp NORM uses; convert_hf_to_gguf.py permutes Q/K so scores match",
        COLUMNS,
        "named beside either rotary layout map",
        columns.qk_permutation_step,
    ),
    ExplanationInfo(
        "layout-split-to-interleaved",
        "[sin | cos] in one, alternating columns in the other",
        COLUMNS,
        "the column maps between split and interleaved sinusoids",
        columns.layout_step,
    ),
    ExplanationInfo(
        "layout-interleaved-to-split",
        "alternating columns in one, [sin | cos] in the other",
        COLUMNS,
        "the column maps between split and interleaved sinusoids",
        columns.layout_step,
    ),
    ExplanationInfo(
        "sin-cos-order",
        "[sin | cos] vs [cos | sin], or every pair's members swapped",
        COLUMNS,
        "the two blocks (or the members of each pair) exchanged",
        columns.layout_step,
    ),
    ExplanationInfo(
        "column-permutation",
        "any other reordering of the columns",
        COLUMNS,
        "a permutation found by matching columns",
        columns.column_permutation_step,
    ),
    ExplanationInfo(
        "sign-flip", "some columns negated", COLUMNS, "columns whose values match up to sign", columns.sign_flip_step
    ),
    ExplanationInfo(
        "cos-sin-swap",
        "a rotary pair's cos and sin tensors exchanged",
        COLUMNS,
        "the pair read the other way round",
        columns.cos_sin_swap_step,
    ),
    ExplanationInfo(
        "constant-scale",
        "A is B times a constant (attention scaling)",
        COLUMNS,
        "the best ratio of A to B, per table",
        columns.constant_scale_step,
    ),
    ExplanationInfo(
        "precision-float16",
        "one table is the other rounded to float16",
        COLUMNS,
        "B rounded to float16",
        columns.precision_step,
    ),
    ExplanationInfo(
        "precision-bfloat16",
        "one table is the other rounded to bfloat16",
        COLUMNS,
        "B rounded to bfloat16",
        columns.precision_step,
    ),
    ExplanationInfo(
        "float32-angle-error",
        "angles evaluated in float32: an error growing with position",
        FLOAT32_ANGLES,
        "sin/cos(fl32(t) * w32) with B's frequencies in float32",
        angles.float32_angle_step,
    ),
    ExplanationInfo(
        "head-scale",
        "each head of a heads x len x len table scaled by its own factor (other ALiBi slopes, rule named)",
        HEADS,
        "A[h] = k_h B[h]; the slopes read as -T[h, 1, 0] and matched to the paper's and MLX's rules",
        heads.head_scale_step,
    ),
    ExplanationInfo(
        "base",
        "another frequency base (frequencies w**alpha, NTK included)",
        FREQUENCIES,
        "each table's frequencies read from its columns; w_A = w_B**alpha",
        frequencies.base_step,
    ),
    ExplanationInfo(
        "frequency-scaling",
        "frequencies scaled: linear, ramps in frequency or index, per column",
        FREQUENCIES,
        "w_A / w_B as a constant, a ramp or per column",
        frequencies.frequency_scaling_step,
    ),
)


#: The searches, in the order they run (the readings, then the cheap column searches, then fits); the first
#: that accounts for the difference ends the search. The resampling search is dear (it reads the native table
#: from the model directory and resamples it by every call) but runs only on the vision tables whose metadata
#: names their model and resampling, where no column map can explain two interpolations: it goes first of them.
TIERS: tuple[Tier, ...] = (
    PARAMETERS,
    RESAMPLING,
    COLUMNS,
    TRANSPOSE,
    SMALL_OFFSETS,
    OFFSET_SCAN,
    FREQUENCIES,
    FLOAT32_ANGLES,
    HEADS,
)


def drive(
    ctx: Ctx,
    readings: tuple[Any, Any] | None = None,
    metadata: tuple[Mapping[str, str], Mapping[str, str]] | None = None,
) -> Search:
    """Run :data:`TIERS` in order until one accounts for the difference."""
    st = Search(ctx, readings=readings, metadata=metadata)
    said = False  # the parameters account: only the cheap structural tiers run, to name a map beside them
    for tier in TIERS:
        # a tier that does not apply is not there (the resampling tier applies to vision tables only)
        if not tier.applies(st):
            continue
        if st.explanations and not said:
            said = tier.cost > 0 and all(e.name.startswith("parameter") for e in st.explanations)
            if not said:
                break
        if said and (tier.cost > 1 or len(st.explanations) > 1):
            break
        tier.proposes(st)
    return st
