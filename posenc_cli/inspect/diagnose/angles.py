"""One table computed with float32 angles ``sin(fl32(fl32(t) * w32))``: an error growing with position."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import analysis as an
from .. import tolerance
from .core import PROBE_ROWS, Ctx, Explanation, Model, Step, explain, read, verify
from .frequencies import snap_phase, spectrum_of

_F32 = np.float32


def float32_angle_step(ctx: Ctx, ref: str, max_diff: float, worst: int, chosen: list[Any]) -> Step:
    """``float32-angle-error``: the table other than ``ref`` computes its angles in float32."""
    who = ctx.a_name if ref == "b" else ctx.b_name
    ref_name = ctx.b_name if ref == "b" else ctx.a_name
    return Step(
        "float32-angle-error",
        f"{who} computes the angles t*w in float32: the difference grows with position "
        f"(max {max_diff:.2g} at row {worst})",
        f"evaluating {ref_name}'s frequencies with float32 angles",
        {
            "table": "a" if ref == "b" else "b",
            "max_abs_difference": max_diff,
            "at_row": worst,
            "float32_frequencies": [w for _, w, _ in chosen],
        },
    )


def _grows(ctx: Ctx) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int] | None:
    """The probe rows, both tables on them and the difference per row, when it grows with position."""
    probe = an.spread_rows(ctx.n_a, PROBE_ROWS)
    xa_p, xb_p = read(ctx.a, probe), read(ctx.b, probe)
    diff = np.max(np.abs(xa_p - xb_p), axis=1)
    quarter = max(1, diff.size // 4)
    late, early = float(np.max(diff[-quarter:])), float(np.max(diff[:quarter]))
    if not (late > tolerance.GROWTH * early and float(np.max(diff)) < tolerance.ANGLE_ERROR_MAX):
        return None
    return probe, xa_p, xb_p, diff, quarter


def _float32_frequencies(spec: an.Spectrum, o: int, far: np.ndarray, target: np.ndarray) -> list[Any]:
    """For each oscillator, the float32 frequency (nearest or adjacent) that best fits the far rows."""
    t_far = (far + o).astype(_F32)
    chosen: list[tuple[an.Oscillator, float, float]] = []
    for osc in spec.oscillators:
        w32 = _F32(osc.freq)
        ph = snap_phase(osc.phase - osc.freq * o)
        best = (math.inf, float(w32))
        for cand in (np.nextafter(w32, _F32(0)), w32, np.nextafter(w32, _F32(np.inf))):
            ang = (t_far * _F32(cand)).astype(np.float64) + ph
            err = float(np.max(np.abs(osc.amplitude * np.cos(ang) - target[:, osc.cos_col])))
            best = min(best, (err, float(cand)))
        chosen.append((osc, best[1], ph))
    return chosen


def _synth(chosen: list[Any], o: int, zero: list[int], width: int) -> Model:
    def synth(rows: np.ndarray) -> np.ndarray:
        t32 = (rows + o).astype(_F32)
        out = np.zeros((rows.size, width))
        for osc_k, w32_k, ph_k in chosen:
            angle = (t32 * _F32(w32_k)).astype(np.float64) + ph_k
            if osc_k.sin_col is not None:
                out[:, osc_k.sin_col] = osc_k.amplitude * np.sin(angle)
            out[:, osc_k.cos_col] = osc_k.amplitude * np.cos(angle)
        if zero:
            out[:, zero] = 0.0
        return out

    return Model(synth=synth)


def propose_float32_angles(ctx: Ctx) -> tuple[list[Explanation], list[Explanation]]:
    """One table evaluated ``sin(fl32(fl32(t) * w32))`` with float32 frequencies ``w32``: simulated from the other
    table's frequencies.

    Each frequency is the float32 nearest the one measured in the exact table, or an adjacent float32 (float32
    ``pow`` in the reference implementations is not always correctly rounded), whichever fits the rows best.
    Only tried when the difference grows with position.
    """
    out: list[Explanation] = []
    tried: list[Explanation] = []
    if ctx.a.shape != ctx.b.shape or len(ctx.a.shape) != 2 or ctx.n_a < tolerance.ANGLE_MIN_ROWS:
        return out, tried
    grown = _grows(ctx)
    if grown is None:
        return out, tried
    probe, xa_p, xb_p, diff, quarter = grown
    worst = int(probe[int(np.argmax(diff))])
    for ref in ("b", "a"):
        c = ctx if ref == "b" else ctx.swapped()
        spec = spectrum_of(c, "b")
        if spec is None or not spec.sinusoidal:
            continue
        off = an.position_offset(spec)
        o = off[0] if off and off[1] < tolerance.OFFSET_FIT else 0
        target = (xa_p if ref == "b" else xb_p)[-quarter:]
        chosen = _float32_frequencies(spec, o, probe[-quarter:], target)
        model = _synth(chosen, o, list(spec.zero_cols), c.d_a)
        res = verify(c, model)
        exp = explain([float32_angle_step(ctx, ref, float(diff.max()), worst, chosen)], res, ctx, model)
        (out if res.within else tried).append(exp)
        if res.within:
            break
    return out, tried
