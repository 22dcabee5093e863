r"""Tolerances of inspection, in one place, and the error model of tables computed in float32 arithmetic.

``identify``, ``compare`` (with its diagnosis), ``plot`` and ``check --against`` / ``matches-spec`` read every
tolerance from here, so "reproduces" means the same thing in all of them. Every threshold that is a multiple of a
dtype's machine epsilon is a named constant below, with a function that applies it; no other module multiplies an
epsilon by a number of its own (``tests/test_tolerance_home.py`` reads the source to keep it so).

Exact agreement
    A regenerated value reproduces a table's value when it is within :data:`ULP_TOL` ulps of the table's dtype
    (or within ``atol`` times the magnitude).

The float32 formula's error
    Published code computes a sinusoid table in float32: Hugging Face's ``inv_freq = 1 / base **
    (arange(0, d, 2).float() / d)``, ``freqs = inv_freq @ positions`` (one rounding per product),
    ``cos(cat(freqs, freqs)) * attention_scaling``; rotary-embedding-torch the same; the PyTorch tutorial, fairseq
    and tensor2tensor ``exp(k * -log(base) / n)`` frequencies times the position, then ``sin``/``cos``; often the
    result is then cast to bfloat16 or float16. With :math:`u = 2^{-24}` (float32's unit roundoff), an exact
    value :math:`A\cos(p\,\omega)` at position :math:`p` and angular frequency :math:`\omega` (radians per
    position), such a table holds

    .. math::

        |x - A\cos(p\omega)| \le A\Big(\min\big(2,\ |p|\,\omega\,u\,(2|\ln\omega| + K_\omega)\big)
        + K_{\mathrm{trig}}\,u\Big) + \tfrac12\varepsilon_{\mathrm{stored}}(A + e_{32})
        + \tfrac12\varepsilon_{\mathrm{ref}}A

    term by term: the frequency's relative error (the exponent ``k/d`` rounded, amplified by
    :math:`\ln\omega`; ``pow``/``exp`` within an ulp; the division and a scaling rule's few operations:
    :data:`K_OMEGA`), times the angle :math:`p\omega`, plus the product ``t * inv_freq`` and a position above
    :math:`2^{24}` rounded to float32 (cos is 1-Lipschitz, so an angle error is a value error); ``cos``/``sin``
    within two ulps and the attention scaling rounded and multiplied (:data:`K_TRIG`); a final cast to the
    stored dtype (half an ulp of the value, :math:`e_{32}` the float32 error so far) and the reference's own
    rounding to its dtype (half an ulp). It grows with position; it does not depend on the CPU's vector width
    (NumPy's and torch's SIMD ``sin``/``cos`` are within two ulps either way).

    The model vouches for a table only while it says something: where the bound reaches the amplitude the
    values no longer pin the formula, and :func:`formula_check` refuses (``informative`` False).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..blocks import rows_per_block

if TYPE_CHECKING:
    from ..encodings.base import AngleTerms

#: Elementwise tolerance of "reproduces": ulps of the table's dtype.
ULP_TOL = 2.0
#: Unit roundoff of the float32 arithmetic the published formulas use.
U32 = 2.0**-24
#: The frequency's relative error beyond the exponent's rounding, in units of U32 (pow/exp within an ulp: 2,
#: the division: 1, a scaling rule's blend: 2, the angle product: 1, a position above 2**24 rounded: 1, margin).
K_OMEGA = 8.0
#: cos/sin within two ulps of a value below 1 (2 U32), the attention scaling rounded and multiplied (2 U32).
K_TRIG = 6.0
#: The model vouches for a table only while its bound stays below this fraction of the amplitude.
INFORMATIVE = 0.5
#: How the float32 formula's tolerance is named in reports and JSON.
FORMULA = "float32-formula"


#: No ulp-based tolerance goes below this (float64 arithmetic on values near 1 needs some room).
TOL_FLOOR = 1e-12
#: compare's default ``atol``, in ulps of 1.0 of the coarser dtype: what two correct implementations may differ by
#: (``compare``, the diagnosis's residuals, identify's verification).
ATOL_ULPS = 2.0
#: A sinusoid fitted to a table's column reproduces it within this many ulps of the dtype, relative to its
#: amplitude (the table analysis's default fit tolerance), and never less than :data:`TOL_FLOOR`.
FIT_ULPS = 64.0
#: ``x^2 + y^2`` of a rounded sin/cos pair is off by about 2 ulps of the larger member: two columns pair when their
#: squares' sum stays constant within this many ulps (relative to the squared amplitude).
PAIR_ULPS = 8.0
#: A single column refitted with the pairs' amplitude fixed keeps the fixed amplitude while its residual stays
#: within this many ulps of the amplitude (or within :data:`REFIT_FREE` times the free fit's residual).
REFIT_ULPS = 16.0
REFIT_FREE = 10.0
#: The smallest 1-sigma error claimed for a refitted single column's frequency, as a fraction of an ulp.
FREQ_ERR_ULPS = 1e-3
#: Two columns that hold the same value (a rotary table's ``cat(f, f)`` or interleaved copies) differ by at most
#: this many ulps of 1.0, and at least :data:`TOL_FLOOR` is allowed.
DUPLICATE_ULPS = 4.0
#: A phase (radians) read from a table is off by at most :data:`PHASE_TOL`, or this many ulps of a coarse dtype.
PHASE_ULPS = 4.0
PHASE_TOL = 1e-3
#: An amplitude (attention scaling) read from a table counts as 1 within :data:`AMP_TOL`, or this many ulps.
AMP_ULPS = 8.0
AMP_TOL = 1e-6
#: A linear distance bias (ALiBi) rounded to its dtype bends by up to half an ulp of its largest value: a fitted
#: line may deviate by this many ulps of ``|slope| * (n - 1)``.
LINE_ULPS = 4.0
#: A common factor between two tables counts as a scale (the diagnosis's ``scale`` step) only when it differs from
#: 1 by more than this many ulps.
SCALE_ULPS = 4.0
#: ALiBi slopes read off a table follow a slope rule when each is within this many ulps, relative.
SLOPE_ULPS = 4.0
#: A dtype whose epsilon exceeds this (float16, bfloat16) is coarse: bases read from it are known to 1e-3 .. 1e-2.
COARSE_EPS = 1e-4
#: float64 evaluation of ``sin(w t)`` rounds the angle by up to this many float64 ulps of ``w t`` (plus one).
ANGLE64_ULPS = 4.0

# ----- the diagnosis's thresholds (posenc_cli.inspect.diagnose) -------------------------------------------------
#: Two columns are the same column up to a factor when their |cosine| exceeds this (the scale search's pairing).
SCALE_COSINE = 0.999
#: A common scale holds when at least this fraction of columns pair up and read the same ratio ...
SCALE_COVERAGE = 0.9
#: ... within this relative spread of the median ratio.
SCALE_SPREAD = 1e-3
#: A measured scale is shown as the shortest decimal within these relative tolerances that still matches.
SCALE_ROUNDINGS = (1e-9, 1e-7, 1e-5, 1e-3)
#: A frequency law's parameter (factor, base) is shown rounded to this relative tolerance, and the rounded law is
#: kept when every frequency still lies within this (or :data:`LAW_SIGMAS` standard errors) of its measurement.
LAW_ROUNDING = 1e-6
LAW_SIGMAS = 6.0
#: An NTK factor read from two bases is named when, rounded to :data:`NTK_ROUNDING`, it differs from 1 by more
#: than :data:`NTK_MIN`.
NTK_ROUNDING = 1e-4
NTK_MIN = 1e-3
#: A measured frequency ratio equals 1 (or 1/factor) within this many standard errors of the measurement, and
#: never less than :data:`RATIO_FLOOR` (an exact table's frequencies are read to about 1e-9).
RATIO_SIGMAS = 6.0
RATIO_FLOOR = 1e-6
#: A frequency factor read from a table is tried rounded to these relative tolerances; a float16/bfloat16 table's
#: slowest columns know it to a few parts in a thousand, so :data:`COARSE_FACTOR_ROUNDINGS` too (the simplest factor
#: that reproduces the table within its rounding is its reading).
FACTOR_ROUNDINGS = (1e-6, 1e-4, 1e-3)
COARSE_FACTOR_ROUNDINGS = (1e-2, 5e-2)
#: An exact ``inv_freq`` tensor's frequencies are known to this relative error (never below :data:`TINY`, the
#: smallest positive divisor or scale anywhere in inspection).
EXACT_FREQ_REL = 1e-15
TINY = 1e-300
#: A ladder's first frequency counts as 1 (no factor) within this (or the amplitude's tolerance, if larger).
W0_ONE = 1e-7
#: A factor read off a ladder's first frequency is tried rounded to these relative tolerances (proportional
#: rope's, then linear scaling's).
W0_ROUNDINGS = (1e-8, 1e-6)
W0_FACTOR_ROUNDINGS = (1e-9, 1e-7, 1e-5)
#: An integral float below this is shown without its ``.0`` (``base=500000``); ulps up to this many are counted,
#: beyond they are shown in 3 significant digits.
INTEGRAL_SHOWN = 1e15
ULPS_COUNTED = 1e6
#: A value read from a table is tried as the shortest decimal within each of these relative tolerances.
VALUE_ROUNDINGS = (1e-10, 1e-8, 1e-6, 1e-4)
#: A frequency base likewise (slow columns read on few rows know it to 1e-3 .. 1e-2 only; regeneration decides),
#: and a float16/bfloat16 table's to 3e-3 too; a base of at most three digits within these is a round base.
BASE_ROUNDINGS = (1e-10, 1e-8, 1e-6, 1e-4, 1e-3, 1e-2)
COARSE_BASE_ROUNDINGS = (3e-3,)
ROUND_BASE_ROUNDINGS = (1e-9, 1e-7, 1e-5)
#: A frequency ratio below 1 - RAMP_EDGE is divided (a ramp's low end); a ramp value within RAMP_INSIDE of 0 or 1
#: is outside the ramp; a step with no column inside it is given this relative width.
RAMP_EDGE = 1e-3
RAMP_INSIDE = 1e-6
STEP_WIDTH = 1e-9
#: The readers' fallbacks, not thresholds: the base of a ladder too short to read one from (one rotation pair, a
#: short grid axis), and where a truncated-normal initialiser cuts (in standard deviations) with the standard
#: deviation of what it keeps.
DEFAULT_BASE = 10000.0
TRUNCATION = 2.0
TRUNCATED_STD = 0.8796
#: A learned table's standard deviation is tried rounded to these relative tolerances; a truncated-normal reading
#: holds only while no value exceeds the cut by more than this factor (a sample's peak is noisy).
STD_ROUNDINGS = (0.25, 0.15, 0.1, 0.05)
TRUNCATION_MARGIN = 1.25
#: A grid axis's base is tried rounded to these relative tolerances.
GRID_BASE_ROUNDINGS = (1e-8, 1e-6, 1e-4, 1e-3, 1e-2)
#: A minimum timescale this close to 1 is none (tensor2tensor's ladder is then the paper's, with a base).
TIMESCALE_ONE = 1e-12
#: Phases whose best offset still misses by more than this (radians) leave the next offsets as alternatives.
OFFSET_ALTERNATIVES = 1e-4
#: Positions rounded to a half-precision dtype are read from the rows where its integers are exact only when
#: those are at least this many (bfloat16's 256, float16's 2048).
POSITIONS_READ_MIN = 64
#: Per-column factors read from a table are tried rounded to these relative tolerances (as published, else as
#: read).
LIST_ROUNDINGS = (1e-5, 1e-7)


#: Values widened from bfloat16 / float16 are read as rounded data only when some value uses the last this many
#: bits of that dtype's mantissa (simple numbers, 0.5 or 3 * 2**-6, fit on its grid by themselves).
ROUNDED_BITS = 3
#: Values smaller than this are measured in ulps of it (``analysis.ULP_FLOOR``): a sign flip of two tiny values is
#: a tiny absolute difference, not billions of ulps.
ULP_FLOOR = 2.0**-10


def floor_spacing(dtype: Any) -> float:
    """The spacing of ``dtype`` at :data:`ULP_FLOOR`: the unit of a difference between two values near zero."""
    return ULP_FLOOR * eps(dtype)


def ratio_tol(freqs: Any, errs: Any) -> Any:
    """Per frequency, how far a ratio of it to a law may be from 1 and still be 1: :data:`RATIO_SIGMAS` standard
    errors of its measurement, relative, and never less than :data:`RATIO_FLOOR`."""
    f = np.asarray(freqs, dtype=np.float64)
    e = np.asarray(errs, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(f > 0, e / f, 0.0)
    return np.maximum(RATIO_FLOOR, RATIO_SIGMAS * np.nan_to_num(rel, nan=0.0, posinf=0.0))


def factor_roundings(coarse_table: bool) -> tuple[float, ...]:
    """:data:`FACTOR_ROUNDINGS`, with :data:`COARSE_FACTOR_ROUNDINGS` for a float16/bfloat16 table."""
    return FACTOR_ROUNDINGS + (COARSE_FACTOR_ROUNDINGS if coarse_table else ())


#: A position offset read from the phases counts when its fit's residual (radians) is below this.
OFFSET_FIT = 1e-3
#: A phase within this (radians) of a multiple of pi/2 is that multiple (cos: 0, a single sin column: -pi/2).
PHASE_SNAP = 1e-5
#: float32 angles are tried only when the difference at the last quarter of the rows exceeds this many times the
#: first quarter's, and stays below :data:`ANGLE_ERROR_MAX` (beyond it the tables differ by more than rounding);
#: and only on tables of at least :data:`ANGLE_MIN_ROWS` rows.
GROWTH = 4.0
ANGLE_ERROR_MAX = 0.5
ANGLE_MIN_ROWS = 8
#: Row signatures (unchanged by reordering, negating or scaling columns) of a row of A and of B agree within this
#: when the rows can be the same up to those changes and rounding; a scanned row matches A's first within
#: :data:`SIGNATURE_MATCH`.
SIGNATURE_TOL = 2e-2
SIGNATURE_MATCH = 1e-3
#: Per-head factors equal within this (relative) are one common factor, not other slopes.
HEAD_FACTORS_SAME = 1e-9
#: A residual is stated in ulps up to this many (beyond, as an absolute difference); rounded up after this slack.
ULPS_SHOWN = 64
ULP_CEIL_SLACK = 1e-9

# ----- the table analysis's numerics (posenc_cli.inspect.analysis) ---------------------------------------------
#: The lags a table is sampled at grow geometrically by this factor.
LAG_GROWTH = 1.5
#: A lag whose measured angle sits at 0 or pi (where arccos is ill-conditioned) keeps at least this weight.
ARCCOS_WEIGHT_FLOOR = 1e-12
#: A single column's 2 x 2 least-squares system is singular when its determinant is below this fraction of its
#: diagonal's product (the column is then fitted by its cos term alone).
SINGULAR_REL = 1e-12
#: The pairs' amplitudes agree (so a single column's amplitude is known) within this relative spread.
AMPS_AGREE = 1e-6
#: A sinusoid's fit deviations are rounding while within this many times the fit tolerance times the amplitude ...
FIT_SLACK = 8.0
#: ... plus the fitted frequency's error, counted this many standard errors, times the distance from the centre.
FIT_ERR_SIGMAS = 8.0
#: Phases fit a position offset within this (radians) by default.
OFFSET_PHASE_TOL = 1e-3
#: A phase tolerance at most this (float32 phases) ranks offset candidates in steps of a sixteenth of it; a
#: coarser one in steps of itself; a step is never below :data:`OFFSET_STEP_FLOOR`.
OFFSET_FINE = 1e-3
OFFSET_STEP_FLOOR = 1e-12
#: A geometric ladder's log-frequencies lie on a line within this (or six standard errors) ...
LADDER_REL_TOL = 1e-5
#: ... frequencies given without errors are taken as known to this, and never to better than
#: :data:`LADDER_SIGMA_FLOOR` relative ...
LADDER_DEFAULT_ERR = 1e-16
LADDER_SIGMA_FLOOR = 1e-15
#: ... and a ladder grown one frequency at a time stops where its worst deviation exceeds this many allowances.
LADDER_BREAK = 4.0
#: A ladder's base is tried as the shortest decimal within this relative tolerance (a round base names its
#: exponent convention).
LADDER_BASE_ROUNDING = 1e-7
#: A frequency ratio equals 1 (kept) or the smallest ratio (divided) within this relative tolerance by default
#: (:func:`posenc_cli.inspect.analysis.scaling_profile`).
PROFILE_REL_TOL = 1e-6

# ----- the rotary readers' thresholds (posenc_cli.inspect.hints.rotary) -----------------------------------------
#: A ramp's parameters read off its line (llama3's original length and high factor, YaRN's factor) are shown
#: rounded to this relative tolerance.
RAMP_ROUNDING = 1e-4
#: A frequency ratio within this of 1 is kept when llama3's factor is solved from its default ramp.
RAMP_KEPT = 1e-9
#: A YaRN ramp's ends read from its line are integers (a truncated correction range) within this ...
RAMP_INTEGRAL = 1e-4
#: ... and an unsaturated ramp's start is an integer within this.
RAMP_START_INTEGRAL = 1e-3
#: log xPos scales are rank one in (position, zeta_k) while no value strays from the rank-one fit by more than this.
XPOS_RANK_ONE = 1e-3
#: xPos's scale_base is tried rounded to these relative tolerances.
XPOS_SCALE_BASE_ROUNDINGS = (1e-6, 1e-4, 1e-3)
#: mrope's second base reading is tried only when it differs from the first by more than this, relative.
MROPE_BASES_DIFFER = 1e-9

# ----- the relative readers' thresholds (posenc_cli.inspect.hints.relative) -------------------------------------
#: An ALiBi max_bias read from the slopes is tried rounded to these relative tolerances ...
MAX_BIAS_ROUNDINGS = (1e-6, 1e-4, 1e-3, 1e-2)
#: ... MPT's (from a heads x 1 x len bias) to these ...
MPT_BIAS_ROUNDINGS = (1e-4, 1e-3, 1e-2)
#: ... and Falcon's divisor to these, kept only when it differs from 1 by more than :data:`DIVISOR_ONE`.
DIVISOR_ROUNDINGS = (1e-2, 1e-3)
DIVISOR_ONE = 1e-3
#: A heads x 1 x len bias is one line per head within this relative tolerance (regeneration then decides).
LINE_PER_HEAD_RTOL = 1e-2
#: T5 buckets' max_distance: a range open above is capped at no less than T5's default, and round candidates
#: count inside the range within this relative slack.
MAX_DISTANCE_CAP = 128.0
DISTANCE_SLACK = 1e-6

# ----- the readers' candidates and formula constants, not thresholds --------------------------------------------
#: Bases tried when per-column factors hide the ladder (LongRoPE).
LONGROPE_BASES = (10000.0, 500000.0, 1000000.0)
#: Factors tried for dynamic NTK's base at the table's sequence length.
DYNAMIC_FACTORS = (2.0, 4.0, 8.0, 16.0, 32.0)
#: Factors tried for NTK's base change b' = b * f^(d/(d-2)) when the plain base is not a round number.
NTK_FACTORS = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 1.5, 3.0, 5.0, 10.0, 20.0)
#: llama3 scaling's default high_freq_factor (Llama 3.1's; low_freq_factor 1, original length 8192).
LLAMA3_HIGH = 4.0
#: YaRN's default attention factor is ``YARN_MSCALE * ln(factor) + 1``.
YARN_MSCALE = 0.1
#: xPos's per-pair bases ``zeta_k = (2k + XPOS_ZETA_SHIFT d) / (XPOS_ZETA_SPAN d)``.
XPOS_ZETA_SHIFT = 0.4
XPOS_ZETA_SPAN = 1.4


def finfo(dtype: Any) -> Any:
    """Float info of a floating dtype, ml_dtypes' bfloat16 included (its kind is 'V'); None otherwise."""
    return _finfo(np.dtype(dtype))


@functools.cache  # a handful of dtypes, asked for a hundred thousand times a suite (every verdict's bound)
def _finfo(dtype: np.dtype) -> Any:
    if dtype.kind == "f":
        return np.finfo(dtype)
    if dtype.name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.finfo(dtype)
    return None


def eps(dtype: Any) -> float:
    """Machine epsilon of a floating dtype (bfloat16 included); float64's for anything else."""
    return _eps(np.dtype(dtype))


@functools.cache
def _eps(dtype: np.dtype) -> float:
    info = _finfo(dtype)
    return float(info.eps) if info is not None else float(np.finfo(np.float64).eps)


def default_atol(dtype: Any) -> float:
    """compare's default absolute tolerance for a table of ``dtype`` (the coarser of two): :data:`ATOL_ULPS` ulps
    of 1.0."""
    return ATOL_ULPS * eps(dtype)


def fit_tol(dtype: Any) -> float:
    """The table analysis's default fit tolerance, relative to the amplitude: :data:`FIT_ULPS` ulps."""
    return max(FIT_ULPS * eps(dtype), TOL_FLOOR)


def pair_tol(dtype: Any) -> float:
    """How far ``x^2 + y^2`` of a sin/cos pair may stray, relative to the squared amplitude: :data:`PAIR_ULPS`."""
    return PAIR_ULPS * eps(dtype)


def refit_tol(dtype: Any, amplitude: float) -> float:
    """The residual up to which a fixed-amplitude refit of a single column is kept: :data:`REFIT_ULPS` ulps of
    the amplitude."""
    return REFIT_ULPS * eps(dtype) * amplitude


def freq_err_floor(dtype: Any) -> float:
    """The smallest frequency error claimed for a refitted single column: :data:`FREQ_ERR_ULPS` of an ulp."""
    return FREQ_ERR_ULPS * eps(dtype)


#: A table resized by torch's interpolation kernels and by posenc's NumPy ones (:mod:`posenc_cli.encodings.resample`)
#: differ by the order of up to 16 products of weights at most 1.25 in size (Keys' cubic): this many units of
#: float32 rounding of the table's largest value bound it (torch 2.13's goldens show at most 14); another
#: ``F.interpolate`` call (mode, antialias, align_corners) changes a table by 1e-2 of it and more.
RESAMPLE_ULPS = 64


def resample_tol(largest: float) -> float:
    """How far a resized float32 table may be from torch's, for a table whose largest magnitude is ``largest``."""
    return RESAMPLE_ULPS * eps("float32") * max(largest, TOL_FLOOR)


def duplicate_tol(dtype: Any) -> float:
    """Two columns that hold the same value differ by at most :data:`DUPLICATE_ULPS` ulps of 1.0 in ``dtype``:
    :func:`posenc_cli.inspect.analysis.duplicate_layout`'s tolerance."""
    return max(DUPLICATE_ULPS * eps(dtype), TOL_FLOOR)


def phase_tol(dtype: Any) -> float:
    """How far (rad) a phase read from a table of ``dtype`` may be off: :data:`PHASE_TOL`, or :data:`PHASE_ULPS`
    ulps for coarse dtypes."""
    return max(PHASE_TOL, PHASE_ULPS * eps(dtype))


def amp_tol(dtype: Any) -> float:
    """How far from 1 an amplitude read from a table of ``dtype`` may be and still be 1: :data:`AMP_TOL`, or
    :data:`AMP_ULPS` ulps for coarse dtypes."""
    return max(AMP_TOL, AMP_ULPS * eps(dtype))


def line_tol(dtype: Any, slope: float, n: int) -> float:
    """How far a linear distance bias of ``n`` positions stored as ``dtype`` may stray from its fitted line."""
    return LINE_ULPS * eps(dtype) * abs(slope) * max(n - 1, 1) + 1e-300


def scale_tol(dtype: Any) -> float:
    """How far from 1 a common factor between two tables of ``dtype`` stays before it is a scale."""
    return SCALE_ULPS * eps(dtype)


def slope_rtol(dtype: Any) -> float:
    """Relative tolerance of ALiBi slopes read off a table of ``dtype`` against a slope rule."""
    return SLOPE_ULPS * eps(dtype)


def coarse(dtype: Any) -> bool:
    """Whether ``dtype`` is coarse (float16, bfloat16): its epsilon exceeds :data:`COARSE_EPS`."""
    return eps(dtype) > COARSE_EPS


def synth_atol(dtype: Any, t_max: float, w_max: float, amplitude: float) -> float:
    """What a sinusoid table re-evaluated in float64 up to position ``t_max`` (largest frequency ``w_max``) may
    differ by: :data:`ATOL_ULPS` ulps of ``dtype`` plus :data:`ANGLE64_ULPS` float64 ulps of the angle."""
    return default_atol(dtype) + ANGLE64_ULPS * 2.0**-52 * (t_max * w_max + 1) * max(amplitude, 1.0)


def _floor(dtype: Any) -> float:
    """Half the smallest subnormal of a floating dtype: the absolute rounding error near zero."""
    info = finfo(np.dtype(dtype))
    if info is None:
        return 0.0
    tiny = float(getattr(info, "smallest_subnormal", 0.0) or info.tiny * info.eps)
    return tiny / 2


def angle_allowance(w: float, pos: np.ndarray) -> np.ndarray:
    """The float32 formula's angle error at positions ``pos`` for frequency ``w`` (radians; at most 2): what a
    sinusoid fitted to a float32-computed column may deviate by beyond the values' own rounding."""
    w = abs(float(w))
    if not (w > 0 and math.isfinite(w)):
        return np.zeros(np.shape(pos))
    rel = 2.0 * abs(math.log(w)) + K_OMEGA
    return np.minimum(2.0, np.abs(np.asarray(pos, dtype=np.float64)) * (w * rel * U32))


def formula_bound(
    terms: AngleTerms, rows: np.ndarray, stored: Any, ref: Any, compute: Any = np.float32, freq_rtol: float = 0.0
) -> np.ndarray:
    """The bound on ``|table - exact|`` of :mod:`this module's docstring <posenc_cli.inspect.tolerance>`, per element of
    ``rows`` (rows x columns): a table computed in ``compute`` arithmetic and stored as ``stored``, against a
    reference regenerated in ``ref``.

    With ``angle = min(2, |t| w rel_w u)`` and ``e32 = amp (angle + K_TRIG u)`` the bound is
    ``e32 + e_stored (amp + e32) + e_ref amp + floors``, which is affine in ``angle``: ``a angle + b``, computed
    in place (four passes over the block instead of eleven; the check reads whole tables through it).
    ``freq_rtol``: a relative error of the frequencies the arithmetic is known to reach beyond the formula's own
    (ggml's iterated powf: :data:`GGML_FREQ_RTOL`, or what a table's own inv_freq shows), in units of 1."""
    u = eps(compute) / 2
    w = np.abs(np.asarray(terms.freq, dtype=np.float64))
    p = np.abs(np.asarray(rows, dtype=np.float64) + float(terms.offset))
    amp = abs(float(terms.amplitude))
    # (no errstate: the log only sees positive frequencies, or 1; a NaN one is not > 0)
    rel_w = np.where(w > 0, 2.0 * np.abs(np.log(np.where(w > 0, w, 1.0))) + K_OMEGA, 0.0)
    rel_w = np.maximum(rel_w, freq_rtol / u)
    e_stored = eps(stored) / 2 if eps(stored) > 2 * u else 0.0  # a cast to a coarser dtype than the arithmetic
    e_ref = eps(ref) / 2
    a = amp * (1 + e_stored)
    b = amp * K_TRIG * u * (1 + e_stored) + e_stored * amp + e_ref * amp + _floor(stored) + _floor(ref)
    bound = np.multiply.outer(p, w * rel_w * u)
    np.minimum(bound, 2.0, out=bound)
    bound *= a
    bound += b
    return bound


@dataclass
class FormulaVerdict:
    """:func:`formula_check`'s answer: whether every value lies within the bound (``ok``), the largest
    difference relative to its bound (``ratio``; at most 1 when ``ok``), the largest bound on the rows checked
    (``bound``) and where (``bound_row``), and whether the bound says anything there (``informative``)."""

    ok: bool
    ratio: float
    bound: float
    bound_row: int
    informative: bool
    compute: str = "float32"

    def text(self) -> str:
        """``within the float32 formula's error (bound 1.2e-03 at row 8191)``."""
        return f"within the {self.compute} formula's error (bound {self.bound:.2g} at row {self.bound_row})"

    def joined(self, other: FormulaVerdict) -> FormulaVerdict:
        """The verdict of this block's rows and ``other``'s together (the largest bound names its row), in the
        same arithmetic (``compute``: a float64 formula's blocks stay float64's)."""
        top = other if other.bound > self.bound else self
        return FormulaVerdict(self.ok and other.ok, max(self.ratio, other.ratio), top.bound, top.bound_row,
                              self.informative and other.informative, self.compute)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "tolerance": FORMULA,
            "ok": self.ok,
            "ratio": self.ratio,
            "bound": self.bound,
            "bound_row": self.bound_row,
            "informative": self.informative,
            "compute": self.compute,
        }


def formula_check(
    x: np.ndarray,
    y: np.ndarray,
    rows: np.ndarray,
    terms: AngleTerms,
    stored: Any,
    ref: Any,
    compute: Any = np.float32,
    *,
    bound: np.ndarray | None = None,
) -> FormulaVerdict:
    """Whether table values ``x`` (rows x columns, read on ``rows``) are the exact ``y`` up to the error of the
    formula evaluated in ``compute`` arithmetic (float32 by default; float64 for NumPy code such as the TF
    tutorial's ``get_angles``). A table stored finer than ``compute`` must hold ``compute`` values (it was
    computed in it and widened). ``bound``: ``formula_bound(terms, rows, stored, ref, compute)`` when the caller
    has computed it already (read, never changed)."""
    x = np.asarray(x, dtype=np.float64).reshape(len(rows), -1)
    y = np.asarray(y, dtype=np.float64).reshape(len(rows), -1)
    if bound is None:
        bound = formula_bound(terms, rows, stored, ref, compute)
    if bound.shape != x.shape:
        return FormulaVerdict(False, math.inf, math.nan, -1, False)
    amp = abs(float(terms.amplitude))
    row_bound = bound.max(axis=1) if bound.size else np.zeros(len(rows))
    k = int(np.argmax(row_bound)) if row_bound.size else 0
    top = float(row_bound[k]) if row_bound.size else 0.0
    informative = bool(amp > 0 and top <= INFORMATIVE * amp)
    ratio = 0.0
    if x.size:
        with np.errstate(invalid="ignore"):
            diff = np.subtract(x, y)
            np.abs(diff, out=diff)
            diff /= bound  # the bound is positive (its floors): an equal value is 0, a nan anywhere stays nan
        ratio = float(diff.max())
        if math.isnan(ratio):
            ratio = math.inf  # a nan on either side, or an infinite one: outside every bound
    from ..encodings.base import dtype_name

    name = dtype_name(np.dtype(compute))
    widened = eps(stored) < eps(compute)
    if widened and x.size and not np.array_equal(x.astype(compute).astype(np.float64), x, equal_nan=True):
        return FormulaVerdict(False, ratio, top, int(rows[k]) if len(rows) else 0, informative, name)
    ok = bool(informative and ratio <= 1.0)
    return FormulaVerdict(ok, ratio, top, int(rows[k]) if len(rows) else 0, informative, name)


def spec_rows(
    encoding: Any, name: str, start: int, stop: int, regenerated: Mapping[str, np.ndarray] | None = None
) -> np.ndarray:
    """Rows ``[start, stop)`` of tensor ``name`` of ``encoding``: a read-only slice of ``regenerated[name]`` when
    the command has built that whole tensor from this very encoding already (``check --against``: the comparison's
    reference), else computed (``encoding.rows``). One table is then regenerated once per command, not once per
    verdict that reads it (the comparison, the arithmetic, ``matches-spec``)."""
    whole = None if regenerated is None else regenerated.get(name)
    if whole is None:
        return np.asarray(encoding.rows(name, start, stop))
    part = whole[start:stop]
    part.flags.writeable = False  # a view of the comparison's reference: read, never changed
    return part


def formula_check_rows(
    x: np.ndarray, y: np.ndarray, rows: np.ndarray, terms: AngleTerms, stored: Any, ref: Any, compute: Any = np.float32
) -> FormulaVerdict:
    """:func:`formula_check` of ``x`` against ``y`` (rows x columns, read on ``rows``) measured in blocks of rows
    whose bound and difference stay in cache (:func:`posenc_cli.blocks.rows_per_block`), the blocks' verdicts
    joined (:meth:`FormulaVerdict.joined`, as :func:`formula_check_table` joins its blocks): the verdict of one
    call on the whole rows, without its two whole-table temporaries."""
    x = np.asarray(x, dtype=np.float64).reshape(len(rows), -1)
    y = np.asarray(y, dtype=np.float64).reshape(len(rows), -1)
    step = rows_per_block(int(x.shape[1]))
    if len(rows) <= step:
        return formula_check(x, y, rows, terms, stored, ref, compute)
    out: FormulaVerdict | None = None
    for start in range(0, len(rows), step):
        part = slice(start, start + step)
        v = formula_check(x[part], y[part], rows[part], terms, stored, ref, compute)
        out = v if out is None else out.joined(v)
    assert out is not None
    return out


def formula_check_table(
    table: Any,
    encoding: Any,
    name: str,
    *,
    block_rows: int | None = None,
    regenerated: Mapping[str, np.ndarray] | None = None,
) -> FormulaVerdict | None:
    """:func:`formula_check` of a whole 2-D ``table`` against tensor ``name`` of ``encoding`` (read block by
    block); None when that tensor is not made of angles (``encoding.angle_terms`` is None) or the shapes differ.
    ``regenerated``: whole tensors of ``encoding`` built already (:func:`spec_rows`)."""
    terms = encoding.angle_terms(name)
    spec = encoding.tensor_specs().get(name)
    if terms is None or spec is None or len(spec.shape) != 2 or tuple(table.shape) != tuple(spec.shape):
        return None
    n = int(spec.shape[0])
    if block_rows is None:
        block_rows = rows_per_block(int(spec.shape[1]))
    out: FormulaVerdict | None = None
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        rows = np.arange(start, stop, dtype=np.int64)
        x = np.asarray(table[start:stop], dtype=np.float64)
        y = np.asarray(spec_rows(encoding, name, start, stop, regenerated), dtype=np.float64)
        v = formula_check(x, y, rows, terms, np.dtype(table.dtype), spec.dtype)
        out = v if out is None else out.joined(v)
    return out


#: ggml's per-pair frequencies (theta_scale^i by iterated float32 powf, llama.cpp's ggml_rope_cache_init) are hf's
#: within this relative error (the GGUF verdict's and the engines' judge's rule)
GGML_FREQ_RTOL = 1e-5


def frequency_error(w: Any, w_ref: Any) -> float:
    """The largest relative difference of frequencies ``w`` from ``w_ref`` (per pair: ``|w - w_ref| / |w_ref|``; a
    pair whose reference is 0 counts 0 when ``w`` is 0 too); inf when the two do not pair up (other shapes, none,
    a value that is not finite). The one measure behind :data:`GGML_FREQ_RTOL`'s rule."""
    a, b = np.asarray(w, np.float64), np.asarray(w_ref, np.float64)
    if a.shape != b.shape or not a.size or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return math.inf
    diff = np.abs(a - b)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(b != 0, diff / np.abs(b), np.where(diff == 0, 0.0, np.inf))
    return float(np.max(rel))


# ----- the arithmetic a table was computed in, for every verdict of ``check`` -----------------------------------
#: How the arithmetic was known: a file's metadata said it, the data showed it, or neither (then float64).
FROM_METADATA, INFERRED, ASSUMED = "metadata", "inferred from the data", "assumed"


@dataclass
class Arithmetic:
    """The arithmetic ``check`` judges a table within: ``compute`` (``float64``: the exact formula rounded once
    to the stored dtype; ``float32``: the float32 formula of the module docstring), the dtype the values are
    ``stored`` in, how it was known (``source``: :data:`FROM_METADATA`, :data:`INFERRED` or :data:`ASSUMED`, with
    ``why``), and with ``float32`` the bound of :func:`formula_bound` per row: its largest element
    (``row_value``) and its Euclidean norm over the row (``row_norm``).

    Every property check widens its exact-table tolerance by what this error can do to the quantity it measures
    (a distance by the two rows' norm bounds, a dot product by ``2 s`` times them, ...): a table within its
    arithmetic's error of one that has the property passes, one off by more fails."""

    compute: str
    stored: str
    source: str
    why: str = ""
    row_value: np.ndarray | None = None
    row_norm: np.ndarray | None = None
    #: the float32 formula's verdict on every angle tensor, when it was inferred from it (``matches-spec`` reads it)
    formula: FormulaVerdict | None = None

    @property
    def worst_row(self) -> int:
        return int(np.argmax(self.row_norm)) if self.row_norm is not None and self.row_norm.size else 0

    def value_bound(self) -> float:
        """The largest elementwise bound beyond the stored rounding (0 for float64 arithmetic)."""
        return float(self.row_value.max()) if self.row_value is not None and self.row_value.size else 0.0

    def norm_bound(self) -> float:
        """The largest bound on ``|row - exact row|`` (0 for float64 arithmetic)."""
        return float(self.row_norm.max()) if self.row_norm is not None and self.row_norm.size else 0.0

    def rms_norm_bound(self) -> float:
        """The root mean square over rows of the row bound (what a random probe of all rows sees)."""
        if self.row_norm is None or not self.row_norm.size:
            return 0.0
        return float(np.sqrt(np.mean(self.row_norm**2)))

    def text(self) -> str:
        """``float32 formula stored as float32 (inferred from the data: ...); bound 0.0024 at row 4999``."""
        what = f"{self.compute} formula, stored as {self.stored}"
        how = self.source + (f": {self.why}" if self.why else "")
        bound = (
            f"; bound {self.value_bound():.2g} per value, {self.norm_bound():.2g} per row, at row {self.worst_row}"
            if self.compute != "float64"
            else ""
        )
        return f"{what} ({how}){bound}"

    def to_json(self) -> dict[str, Any]:
        return {
            "compute": self.compute,
            "stored": self.stored,
            "source": self.source,
            "why": self.why,
            "value_bound": self.value_bound(),
            "row_bound": self.norm_bound(),
            "worst_row": self.worst_row,
            "text": self.text(),
        }


def table_arithmetic(
    tensors: dict[str, Any],
    encoding: Any,
    metadata: dict[str, str],
    stored: Any,
    rtol: float,
    *,
    regenerated: Mapping[str, np.ndarray] | None = None,
) -> Arithmetic:
    """The arithmetic ``check`` judges ``tensors`` within (:class:`Arithmetic`).

    Read from the metadata when a file says how its angles were computed (``angle_dtype``); else inferred from
    the data when ``encoding`` (the kind and parameters the table is judged as) regenerates its angle tensors:
    within ``rtol`` of the exact table (relative to ``max(1, |value|)``) it is float64's, within the float32
    formula's bound (:func:`formula_check`: a residual that grows with the position as the angle's rounding does)
    it is float32's; else, or without an exact table to compare with, float64 is assumed and said.
    ``regenerated``: whole tensors of ``encoding`` the command has built already (:func:`spec_rows`)."""
    from ..encodings.base import dtype_name

    stored_name = dtype_name(np.dtype(stored))
    named = [(n, a, encoding.angle_terms(n)) for n, a in tensors.items()] if encoding is not None else []
    specs = encoding.tensor_specs() if encoding is not None else {}
    angles = [
        (n, a, t)
        for n, a, t in named
        if t is not None and n in specs and getattr(a, "ndim", 0) == 2 and tuple(a.shape) == tuple(specs[n].shape)
    ]
    stated = metadata.get("angle_dtype")
    engine = metadata.get("engine_arithmetic", "exact")
    freq_rtol = 0.0
    if engine not in ("", "exact", "none") and angles:
        # an engine's table (``--engine``): its own float32 arithmetic, said by the metadata; ggml's frequencies
        # are off by what the file's own inv_freq shows, else by the engines' rule
        stated = "float32"
        freq_rtol = _engine_freq_rtol(engine, tensors, encoding)
    elif stated == "float64":
        return Arithmetic("float64", stored_name, FROM_METADATA, "angle_dtype float64")
    if stated != "float32" and "posenc_version" in metadata and "kind" in metadata:
        # posenc evaluates its parameters exactly (correctly rounded angles), rounding once to the stored dtype;
        # rope's angle_dtype (exact, or a named half-precision mistake) is one of those parameters
        return Arithmetic("float64", stored_name, FROM_METADATA, f"computed by posenc {metadata['posenc_version']}")
    if not angles:
        why = (
            "no kind and parameters regenerate its angles"
            if stated != "float32"
            else "angle_dtype float32, but no angles to bound"
        )
        return Arithmetic("float64", stored_name, ASSUMED, why)
    row_value, row_norm, exact, formula = _scan_angles(
        angles, specs, encoding, stored, stated != "float32", rtol, freq_rtol, regenerated
    )
    if stated == "float32":
        said = f"engine_arithmetic {engine}" if engine not in ("", "exact", "none") else "angle_dtype float32"
        if freq_rtol:
            said += f", frequencies within {freq_rtol:.2g}"
        return Arithmetic("float32", stored_name, FROM_METADATA, said, row_value, row_norm)
    if exact:
        return Arithmetic("float64", stored_name, INFERRED, "it equals the exact table within its dtype's rounding")
    if formula is not None and formula.ok:
        return Arithmetic(
            "float32",
            stored_name,
            INFERRED,
            f"its difference from the exact table stays within the float32 formula's bound (at most "
            f"{formula.ratio:.2g} of it)",
            row_value,
            row_norm,
            formula,
        )
    ratio = math.inf if formula is None else formula.ratio
    why = (
        f"it differs from the exact table by {ratio:.3g} times the float32 formula's bound: no arithmetic explains it"
        if math.isfinite(ratio)
        else "some of its values are not finite: no arithmetic explains them"
    )
    return Arithmetic("float64", stored_name, ASSUMED, why)


def _engine_freq_rtol(engine: str, tensors: dict[str, Any], encoding: Any) -> float:
    """How far an engine's frequencies are from the exact ones beyond float32's rounding: 0 for the engines whose
    frequencies the float32 formula models (torch, mlx); for ggml, the largest relative difference of the table's
    own ``inv_freq`` from the exact one where the file holds it, else :data:`GGML_FREQ_RTOL`."""
    if not engine.startswith("ggml"):
        return 0.0
    own = tensors.get("inv_freq")
    exact = encoding.inv_freq() if hasattr(encoding, "inv_freq") else None
    worst = math.inf if own is None or exact is None else frequency_error(own, exact)
    return worst if worst <= GGML_FREQ_RTOL else GGML_FREQ_RTOL


def _same_terms(a: Any, b: Any) -> bool:
    """Whether two tensors' :class:`~posenc_cli.encodings.base.AngleTerms` are the same angles (so the same bound)."""
    return a is b or (
        a.amplitude == b.amplitude and a.offset == b.offset and np.array_equal(np.asarray(a.freq), np.asarray(b.freq))
    )


def _scan_angles(
    angles: list[Any],
    specs: dict[str, Any],
    encoding: Any,
    stored: Any,
    judge: bool,
    rtol: float,
    freq_rtol: float,
    regenerated: Mapping[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, bool, FormulaVerdict | None]:
    """One pass over the angle tensors of :func:`table_arithmetic`, block by block: the float32 formula's bound per
    row (its largest element, its norm), whether the table is the exact one within ``rtol``, and (``judge``) the
    float32 formula's verdict on it. Tensors of the same angles and dtype (a rotary cache's cos and sin) share
    each block's bound: it is computed, and counted in the rows' bounds, once."""
    n = int(angles[0][1].shape[0])
    row_value = np.zeros(n)
    row_sq = np.zeros(n)
    exact = True
    formula: FormulaVerdict | None = None
    verdicts: dict[str, FormulaVerdict] = {}  # each tensor's blocks joined in row order
    # the tensors read together block by block, grouped by the block height their width gives
    groups: dict[int, list[Any]] = {}
    for name, table, terms in angles:
        groups.setdefault(rows_per_block(int(specs[name].shape[1])), []).append((name, table, terms))
    for step, members in groups.items():
        for start in range(0, n, step):
            stop = min(n, start + step)
            rows = np.arange(start, stop, dtype=np.int64)
            bounds: list[tuple[Any, Any, np.ndarray]] = []  # (terms, dtype, bound) of this block
            for name, table, terms in members:
                spec = specs[name]
                x = np.asarray(table[start:stop], dtype=np.float64)
                y = np.asarray(spec_rows(encoding, name, start, stop, regenerated), dtype=np.float64)
                if exact:
                    with np.errstate(invalid="ignore"):
                        exact = bool(np.all(np.abs(x - y) <= rtol * np.maximum(1.0, np.abs(y))))
                bound = next((b for t, dt, b in bounds if dt == spec.dtype and _same_terms(t, terms)), None)
                if bound is None:
                    bound = formula_bound(terms, rows, np.dtype(stored), spec.dtype, freq_rtol=freq_rtol)
                    bounds.append((terms, spec.dtype, bound))
                    np.maximum(row_value[start:stop], bound.max(axis=1), out=row_value[start:stop])
                    row_sq[start:stop] = np.maximum(row_sq[start:stop], np.einsum("ij,ij->i", bound, bound))
                if judge:  # the same bound as above (freq_rtol is 0 unless the metadata states float32: no judging)
                    v = formula_check(x, y, rows, terms, np.dtype(stored), spec.dtype, bound=bound)
                    verdicts[name] = v if name not in verdicts else verdicts[name].joined(v)
    for name, _table, _terms in angles:  # joined tensor by tensor, as when each was read whole in turn
        if name in verdicts:
            formula = verdicts[name] if formula is None else formula.joined(verdicts[name])
    row_norm = np.sqrt(row_sq)
    return row_value, row_norm, exact, formula
