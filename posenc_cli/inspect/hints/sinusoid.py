"""Identification hints of the sinusoidal kinds: which parameters a table's structure implies (moved out of
``encodings/sinusoidal.py`` so that the kinds do not import the inspection code; the kind names its reader in
``IDENTIFY``)."""

from __future__ import annotations

import math
from typing import Any

from .. import analysis as an
from ..candidates import Candidate


# ----- identification hints (read by posenc_cli.inspect.identification; analysis loads only when identifying) -
def hints_sinusoidal(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """sin/cos pairs in an interleaved, split or cos-first layout with a geometric frequency ladder."""
    from .. import analysis as an
    from ..candidates import Candidate, base_params, ladder
    from . import layouts

    interleaved, split, split_cos_first = layouts(kind_cls, 3)
    # the analysis's measured placements, by the names the kind declares
    named = {an.PAIR_INTERLEAVED: interleaved, an.PAIR_SPLIT: split, an.PAIR_SPLIT_COS_FIRST: split_cos_first}

    if ana.ndim != 2 or not ana.floating or ana.width < 2:
        return []
    d = ana.width
    base = base_params(ana)
    guess = [Candidate(kind_cls.KIND, dict(base), structural=False)]
    if ana.zero_rows.size == 1:
        guess[0].params["padding_idx"] = int(ana.zero_rows[0])
    spec = ana.spectrum
    if spec is None or not spec.oscillators:
        guess[0].note = "its columns are not sinusoids of the position"
        return guess
    layout = named.get(an.pair_layout(spec.pairs, d) or "")
    if layout is None:
        guess[0].note = "its columns are not sin/cos pairs in an interleaved or split layout"
        return guess
    if spec.other_cols:
        guess[0].note = f"{len(spec.other_cols)} of {d} columns are not sinusoids"
        guess[0].params["layout"] = layout
        return guess
    freqs, errs, _osc = ladder(spec)
    geo = an.geometric_fit(freqs, errs)
    # the lowest frequencies of a coarse (float16) or very long-wavelength table are measured poorly: a leading
    # geometric run of three or more still gives the ladder, and regeneration has the last word
    if geo is None or geo.count < min(len(freqs), 3):
        guess[0].note = "its frequencies are not a geometric ladder"
        guess[0].params["layout"] = layout
        return guess
    offsets = _offsets(ana, spec, layout == split_cos_first)
    scales = _scales(ana, spec)
    out = []
    for c in _readings(kind_cls, ana, spec, geo, base, layout, interleaved, offsets, len(freqs)) or guess:
        for scale, why, convention in scales:
            p = dict(c.params) if scale is None else {**c.params, "scale": scale}
            note = f"{c.note}{why}" if c.note else ""
            out.append(Candidate(kind_cls.KIND, p, note=note, structural=c.structural, convention=convention))
    return out


def _scales(ana: Any, spec: Any) -> list[tuple[float | None, str, str]]:
    """The amplitude of the sin/cos pairs as a ``scale`` reading: none at 1; ``dim ** -0.5`` (x-transformers'
    ScaledSinusoidalEmbedding) when it is that within the amplitude's tolerance, else its short decimals."""
    from ..candidates import near_one, round_variants
    from ..tolerance import amp_tol

    amps = [o.amplitude for o in spec.oscillators if o.amplitude > 0]
    amp = float(sorted(amps)[len(amps) // 2]) if amps else 1.0
    tol = amp_tol(ana.dtype)
    if near_one(amp, tol):
        return [(None, "", "")]
    inv_sqrt = ana.width**-0.5
    if near_one(amp / inv_sqrt, tol):
        named = "scaled by dim ** -0.5 as x-transformers' ScaledSinusoidalEmbedding starts"
        return [(inv_sqrt, f", {named}", named)]
    return [(v, f", scaled by {v:.6g}", "") for v in round_variants(amp)[:3]]


def _offsets(ana: Any, spec: Any, cos_first: bool) -> list[int]:
    """The position offsets the phases allow: one, or alternatives when they are too coarse to single one out
    (float16, bfloat16)."""
    from .. import analysis as an
    from ..tolerance import OFFSET_ALTERNATIVES, phase_tol

    # the odd column of an odd dim has no partner: a sin column, or a cos one when cos comes first
    single = 0.0 if cos_first else -math.pi / 2
    found = an.position_offsets(spec, single_phase=single, tol=phase_tol(ana.dtype))
    return [o for o, mis in found if found[0][1] > OFFSET_ALTERNATIVES or o == found[0][0]] or [0]


def _readings(
    kind_cls: Any,
    ana: Any,
    spec: Any,
    geo: Any,
    base: dict[str, Any],
    layout: str,
    interleaved: str,
    offsets: list[int],
    n: int,
) -> list[Any]:
    """The paper's ladder (a base) and tensor2tensor's (timescales), at each offset."""
    from ..candidates import Candidate, base_readings, near_one, round_variants
    from ..tolerance import LAW_ROUNDING, TIMESCALE_ONE, W0_ROUNDINGS, coarse

    d = ana.width
    out: list[Candidate] = []
    for offset, freq in [(o, f) for o in offsets for f in ("paper", "t2t")]:
        params: dict[str, Any] = {**base, "layout": layout, "freq": freq}
        if offset:
            params["offset"] = offset
        if ana.zero_rows.size == 1:
            params["padding_idx"] = int(ana.zero_rows[0]) + offset
        if d % 2:
            rule = "zero-pad" if (d - 1) in spec.zero_cols else "ceil"
            auto = "zero-pad" if (freq == "t2t" and layout != interleaved) else "ceil"
            if rule != auto:
                params["odd_dim"] = rule
        if n == 1:
            out.append(Candidate(kind_cls.KIND, params, note="one frequency: any base gives this table"))
            continue
        if freq == "paper":
            if not near_one(geo.w0, LAW_ROUNDING):
                continue
            for b in base_readings(geo.ratio ** (-d / 2.0), coarse(ana.dtype)):
                out.append(
                    Candidate(
                        kind_cls.KIND, {**params, "base": b}, note=f"{layout} sin/cos pairs, w_k = base^(-2k/{d})"
                    )
                )
        else:
            min_ts = 1.0 / geo.w0
            span = geo.ratio ** (-float(max(d // 2 - 1, 1)))
            for m in round_variants(min_ts, tols=W0_ROUNDINGS):
                for mx in round_variants(m * span):
                    p = dict(params)
                    if near_one(m, TIMESCALE_ONE):
                        p["base"] = mx
                    else:
                        p.update(min_timescale=m, max_timescale=mx)
                    out.append(Candidate(kind_cls.KIND, p, note=f"{layout} sin/cos pairs, geometric timescales"))
    return out
