"""Explanations read from the tables' own frequencies: another base, a frequency scaling (linear, ramps, per
column), partial rotary over its own width, a position offset, a constant scale, a layout."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import analysis as an
from .. import tolerance
from .core import Ctx, Explanation, Model, Step, explain, verify


# ----- frequencies --------------------------------------------------------------------------------------------------
def spectrum_of(ctx: Ctx, which: str) -> an.Spectrum | None:
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


def snap_phase(ph: float) -> float:
    """A phase near a multiple of pi/2 snapped to it (cos: 0, a single sin column: -pi/2)."""
    q = round(ph / (math.pi / 2))
    return q * math.pi / 2 if abs(ph - q * math.pi / 2) < tolerance.PHASE_SNAP else ph


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
) -> Model | None:
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
    phase0 = np.where(np.abs(phase0 - quarter * math.pi / 2) < tolerance.PHASE_SNAP, quarter * math.pi / 2, phase0)
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

    return Model(synth=synth)


def _synth_atol(n: int, w: np.ndarray, offset: int, amp: float, dt: np.dtype) -> float:
    """What float64 evaluation of sin(w t) may be off by (angle rounding), next to the table's own ulps."""
    t_max = abs(offset) + n
    return tolerance.synth_atol(dt, t_max, float(np.max(np.abs(w), initial=0.0)), amp)


@dataclass
class _Ladders:
    """Both tables' frequency ladders, highest first, as the laws compare them."""

    spec_a: an.Spectrum
    spec_b: an.Spectrum
    ob_used: list[an.Oscillator]
    w_a: np.ndarray
    w_b: np.ndarray
    e_a: np.ndarray
    e_b: np.ndarray
    w_a_all: np.ndarray
    group_b: np.ndarray
    width_b: int
    geo_b: an.GeometricFit | None
    partial: bool


def _ladders(ctx: Ctx) -> _Ladders | None:
    """Both tables' frequencies, a frequency written to two columns (rotary cos/sin tables) counted once, and B's
    replaced by their exact law when it has round parameters."""
    if len(ctx.a.shape) != 2 or len(ctx.b.shape) != 2:
        return None
    spec_a, spec_b = spectrum_of(ctx, "a"), spectrum_of(ctx, "b")
    if spec_a is None or spec_b is None or not spec_a.sinusoidal or not spec_b.sinusoidal:
        return None
    oa, ob = spec_a.by_frequency(), spec_b.by_frequency()
    w_a, w_b = np.array([o.freq for o in oa]), np.array([o.freq for o in ob])
    e_a = np.array([o.err for o in oa])
    partial = ctx.d_a != ctx.d_b
    if len(oa) > len(ob) or (not partial and len(oa) != len(ob)):
        return None
    ob_used = ob[: len(oa)] if partial else ob  # the narrower A against B's highest frequencies
    w_b = w_b[: len(oa)]
    e_b = np.array([o.err for o in ob_used])
    w_a_all = w_a
    group_b = _groups(w_b, e_b)
    if np.array_equal(group_b, _groups(w_a, e_a)) and group_b[-1] + 1 < group_b.size:
        first = np.searchsorted(group_b, np.arange(group_b[-1] + 1))
        w_a, e_a, w_b, e_b = w_a[first], e_a[first], w_b[first], e_b[first]
    else:
        group_b = np.arange(w_b.size)
    width_b = spec_b.width if group_b[-1] + 1 == group_b.size and not ctx.blocks else 2 * (group_b[-1] + 1)
    geo_b = an.geometric_fit(w_b, e_b)
    w_b = _idealise(w_b, e_b, geo_b, w_b.size, width_b)
    return _Ladders(spec_a, spec_b, ob_used, w_a, w_b, e_a, e_b, w_a_all, group_b, width_b, geo_b, partial)


def _profile(lad: _Ladders) -> an.ScalingProfile:
    """The scaling law from B's frequencies to A's; a round factor, if it holds, makes the model exact."""
    w_a, w_b, e_a, e_b = lad.w_a, lad.w_b, lad.e_a, lad.e_b
    prof = an.scaling_profile(w_a, w_b, e_a, e_b)
    if prof.kind in ("linear", "ramp-frequency", "ramp-index"):
        trial = dataclasses.replace(prof, factor=an.nice_number(prof.factor, tolerance.LAW_ROUNDING))
        bound = np.maximum(tolerance.LAW_ROUNDING, tolerance.LAW_SIGMAS * np.hypot(e_a / w_a, e_b / w_b))
        if np.all(np.abs(trial.predict(w_b) / w_a - 1) <= bound):
            prof = trial
    return prof


def layout_change_step(ctx: Ctx, lay_a: str, lay_b: str) -> Step:
    """``layout-*``: the columns in another order, read from the pairs' structure."""
    return Step(
        f"layout-{_slug_layout(lay_a)}-to-{_slug_layout(lay_b)}",
        f"{ctx.b_name} is {ctx.a_name} with its columns in {lay_b} order ({lay_a} -> {lay_b})",
        "reordering columns",
        {"from": lay_a, "to": lay_b},
    )


def row_count_step(ctx: Ctx) -> Step:
    """``sub-range``: the tables hold different numbers of rows."""
    what = "fewer" if ctx.n_a < ctx.n_b else "more"
    return Step(
        "sub-range",
        f"{ctx.a_name} has {what} rows than {ctx.b_name} ({ctx.n_a} vs {ctx.n_b})",
        f"comparing {min(ctx.n_a, ctx.n_b)} rows",
        {"rows_a": ctx.n_a, "rows_b": ctx.n_b},
    )


def position_offset_step(ctx: Ctx, offset: int) -> Step:
    """``row-offset``: A's positions start elsewhere."""
    return Step(
        "row-offset",
        f"{ctx.a_name} starts at position {offset:+d} relative to {ctx.b_name}",
        f"shifting positions by {offset}",
        {"offset": offset},
    )


def _structure_steps(ctx: Ctx, lad: _Ladders, o_a: int, o_b: int, ratio: float) -> list[Step]:
    steps: list[Step] = []
    lay_a, lay_b = _layout_name(lad.spec_a), _layout_name(lad.spec_b)
    if lay_a and lay_b and lay_a != lay_b:
        steps.append(layout_change_step(ctx, lay_a, lay_b))
    if ctx.n_a != ctx.n_b:
        steps.append(row_count_step(ctx))
    if o_a != o_b:
        steps.append(position_offset_step(ctx, o_a - o_b))
    if abs(ratio - 1) > tolerance.AMP_TOL:
        steps.append(
            Step(
                "constant-scale",
                f"{ctx.a_name} is {ctx.b_name} scaled by {ratio:.6g}",
                f"scaling by {ratio:.6g}",
                {"factor": ratio},
            )
        )
    return steps


def base_step(ctx: Ctx, base_a: float, base_b: float, conv: str, n_freqs: int, width: int, exponent: float) -> Step:
    """``base``: another frequency base (NTK's factor named when it is a round one)."""
    r = 2 * n_freqs
    ntk = (base_a / base_b) ** ((r - 2) / r) if r > 2 else math.nan
    nb, na_ = an.nice_number(base_b, tolerance.LAW_ROUNDING), an.nice_number(base_a, tolerance.LAW_ROUNDING)
    ntk_nice = an.nice_number(ntk, tolerance.NTK_ROUNDING) if math.isfinite(ntk) else math.nan
    round_ntk = math.isfinite(ntk_nice) and abs(ntk_nice - 1) > tolerance.NTK_MIN
    ntk_text = f"; NTK factor {ntk_nice:g}" if round_ntk and an.nice_digits(ntk_nice) <= 3 else ""
    return Step(
        "base",
        f"{ctx.a_name} uses base {na_:g} where {ctx.b_name} uses base {nb:g} "
        f"(w_k = base^{_convention_text(conv, n_freqs, width)}{ntk_text})",
        f"recomputing {ctx.b_name}'s frequencies with base {na_:g}",
        {"base_a": base_a, "base_b": base_b, "exponent": exponent, "convention": conv, "ntk_factor": ntk},
    )


def frequency_scaling_step(ctx: Ctx, prof: an.ScalingProfile, also: bool = False) -> Step | None:
    """``frequency-scaling``: B's frequencies divided by a constant, a ramp in frequency or index, or per column."""
    A, B = ctx.a_name, ctx.b_name
    f = an.nice_number(prof.factor, tolerance.LAW_ROUNDING) if prof.kind != "per-column" else math.nan
    if also:
        text = f"{A} divides {B}'s frequencies by {prof.factor:.6g} as well"
        return Step(
            "frequency-scaling", text, f"dividing by {prof.factor:.6g}", {"profile": "linear", "factor": prof.factor}
        )
    if prof.kind == "linear":
        text = f"{A} divides {B}'s frequencies by {f:g} (linear scaling)"
        return Step(
            "frequency-scaling",
            text,
            f"dividing {B}'s frequencies by {f:g}",
            {"profile": "linear", "factor": prof.factor},
        )
    if prof.kind == "ramp-frequency" and prof.ramp is not None:
        lo, hi = prof.ramp
        wl_hi, wl_lo = 2 * math.pi / lo if lo > 0 else math.inf, 2 * math.pi / hi
        text = (
            f"{A} divides {B}'s low frequencies by {f:g}, ramping linearly in frequency between wavelengths "
            f"{wl_lo:.6g} and {wl_hi:.6g} (llama3-style)"
        )
        detail: dict[str, Any] = {"ramp": list(prof.ramp), "wavelengths": [wl_lo, wl_hi], "divisors": prof.divisors}
        return Step(
            "frequency-scaling",
            text,
            f"scaling {B}'s frequencies by that ramp",
            {"profile": prof.kind, "factor": prof.factor, **detail},
        )
    if prof.kind == "ramp-index" and prof.ramp is not None:
        text = (
            f"{A} divides {B}'s frequencies by {f:g} from index {prof.ramp[1]:.4g} on, ramping linearly in the "
            f"index from {prof.ramp[0]:.4g} (YaRN-style)"
        )
        detail2: dict[str, Any] = {"factor": prof.factor, "ramp": list(prof.ramp), "divisors": prof.divisors}
        return Step(
            "frequency-scaling", text, f"scaling {B}'s frequencies by that ramp", {"profile": prof.kind, **detail2}
        )
    if prof.kind == "per-column":
        d = prof.divisors
        text = f"{A}'s frequencies are {B}'s divided column by column ({d.min():.4g} .. {d.max():.4g})"
        return Step(
            "frequency-scaling",
            text,
            f"dividing {B}'s frequencies column by column",
            {"profile": "per-column", "divisors": d},
        )
    return None


def _law_steps(ctx: Ctx, lad: _Ladders, prof: an.ScalingProfile) -> tuple[list[Step], an.ScalingProfile]:
    """The base, partial-rotary and frequency-scaling steps the law between the ladders names."""
    w_a, w_b, e_a = lad.w_a, lad.w_b, lad.e_a
    steps: list[Step] = []
    base_b, conv = None, "2k/width"
    if lad.geo_b is not None and lad.geo_b.count == len(w_b) and len(w_b) > 1:
        base_b, conv = an.infer_base(lad.geo_b.ratio, lad.geo_b.w0, w_b.size, lad.width_b)
    if prof.kind in ("power", "power-linear") and base_b is not None:
        if lad.partial and abs(prof.exponent - ctx.d_b / ctx.d_a) < tolerance.LAW_ROUNDING * ctx.d_b:
            steps.append(_own_width_step(ctx, prof.exponent))
        else:
            base_a = base_b**prof.exponent
            nb, na_ = an.nice_number(base_b, tolerance.LAW_ROUNDING), an.nice_number(base_a, tolerance.LAW_ROUNDING)
            if prof.kind == "power":
                # the round bases, if they hold, make the model exact
                trial = dataclasses.replace(prof, exponent=math.log(na_) / math.log(nb))
                bound = np.maximum(tolerance.LAW_ROUNDING, tolerance.LAW_SIGMAS * e_a / w_a)
                if np.all(np.abs(trial.predict(w_b) / w_a - 1) <= bound):
                    prof = trial
            steps.append(base_step(ctx, base_a, base_b, conv, w_b.size, lad.width_b, prof.exponent))
        if prof.kind == "power-linear":
            steps.append(frequency_scaling_step(ctx, prof, also=True))  # type: ignore[arg-type]
    else:
        step = frequency_scaling_step(ctx, prof)
        if step is not None:
            steps.append(step)
    return steps, prof


def _own_width_step(ctx: Ctx, exponent: float) -> Step:
    return Step(
        "partial-rotary",
        f"{ctx.a_name} rotates {ctx.d_a} of {ctx.b_name}'s {ctx.d_b} dims with frequencies over its own width "
        f"(base^(-2k/{ctx.d_a}) where {ctx.b_name} has base^(-2k/{ctx.d_b}))",
        f"recomputing {ctx.b_name}'s frequencies over {ctx.d_a} dims",
        {"rotary_dim": ctx.d_a, "dim": ctx.d_b, "exponent": exponent},
    )


def propose_frequencies(ctx: Ctx) -> tuple[list[Explanation], list[Explanation]]:
    """Explanations from the tables' own frequencies: base, scaling, partial rotary, offset, scale, layout."""
    lad = _ladders(ctx)
    if lad is None:
        return [], []
    prof = _profile(lad)
    off_a, off_b = an.position_offset(lad.spec_a), an.position_offset(lad.spec_b)
    o_a = off_a[0] if off_a and off_a[1] < tolerance.OFFSET_FIT else 0
    o_b = off_b[0] if off_b and off_b[1] < tolerance.OFFSET_FIT else 0
    amp_a = float(np.median([o.amplitude for o in lad.spec_a.by_frequency()]))
    amp_b = float(np.median([o.amplitude for o in lad.ob_used]))
    ratio = amp_a / amp_b if amp_b > 0 else 1.0
    steps = _structure_steps(ctx, lad, o_a, o_b, ratio)
    law, prof = _law_steps(ctx, lad, prof)
    steps += law
    if not steps:
        return [], []
    w_new = prof.predict(lad.w_b)[lad.group_b] if prof.kind != "per-column" else lad.w_a_all
    model = _synth_model(lad.spec_a, _restricted(lad.spec_b, lad.ob_used), w_new, ratio, o_b, o_a - o_b, ctx.d_a)
    if model is None:
        return [], []
    model.atol = _synth_atol(ctx.n_a, w_new, o_a, max(amp_a, 1.0), ctx.match_dtype)
    res = verify(ctx, model)
    exp = explain(steps, res, ctx, model)
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
    nb, w0 = an.nice_number(base, tolerance.LAW_ROUNDING), an.nice_number(geo.w0, tolerance.LAW_ROUNDING)
    k = np.arange(w.size, dtype=np.float64)
    expo = {"2k/width": 2 * k / width, "k/(n-1)": k / max(n_freqs - 1, 1), "k/n": k / n_freqs}[conv]
    exact = w0 * np.exp(-expo * math.log(nb)) if nb > 0 else w
    if np.all(np.abs(exact - w) <= np.maximum(tolerance.LAW_SIGMAS * err, tolerance.TOL_FLOOR * w)):
        return exact
    return w


def _convention_text(conv: str, n_freqs: int, width: int) -> str:
    return {"2k/width": f"(-2k/{width})", "k/(n-1)": f"(-k/{n_freqs - 1})", "k/n": f"(-k/{n_freqs})"}[conv]


def _restricted(spec_b: an.Spectrum, used: list[an.Oscillator]) -> an.Spectrum:
    """``spec_b`` restricted to the oscillators ``used`` (a partial-rotary comparison uses the highest ones)."""
    return an.Spectrum(spec_b.width, list(used), spec_b.zero_cols, spec_b.other_cols, spec_b.tol, spec_b.positions)


def _slug_layout(name: str) -> str:
    return {"interleaved-cos-first": "interleaved", "split-cos-first": "split"}.get(name, name)
