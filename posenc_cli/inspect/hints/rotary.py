"""Identification hints of the rotary kinds: which rope / xpos parameters a cos/sin (or scale) table's structure
implies. Imported only by :mod:`posenc_cli.inspect.identification` (through ``IDENTIFY`` of Rope, XPos and MRope),
never when generating."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

import numpy as np

from ...encodings.base import resolve_dtype
from .. import analysis as an
from .. import tolerance
from ..candidates import Candidate, base_params, base_readings, near_one, round_base, round_variants
from . import declared, layouts

#: The frameworks that pair rotary columns each way (named in identify's answer), by the analysis's measurement
#: (None: a half-width cache, no duplicated columns).
PAIRINGS = {
    an.DUPLICATE_HALF: "pairs (k, k + d/2) as HF rotate_half and GPT-NeoX rotate them",
    an.DUPLICATE_INTERLEAVED: "pairs (2k, 2k+1) as GPT-J, llama.cpp NORM and MLX traditional=True rotate them",
    None: "half-width caches, one column per frequency, as ONNX Runtime's RotaryEmbedding reads them and "
    "nanochat keeps its cos/sin buffers",
}


def _layout_names(kind_cls: Any) -> dict[str | None, str]:
    """The analysis's duplicated-column measurements by the layout names a rotary kind declares (half-split first,
    then interleaved), and None (no duplicated columns) by its half-width cache's name (``cache``'s second)."""
    half, interleaved = layouts(kind_cls, 2)
    out: dict[str | None, str] = {an.DUPLICATE_HALF: half, an.DUPLICATE_INTERLEAVED: interleaved}
    if any(f.name == "cache" for f in kind_cls.param_fields()):
        out[None] = declared(kind_cls, "cache", 2)[1]
    return out


#: Bases tried when per-column factors hide the ladder (LongRoPE).
LONGROPE_BASES = tolerance.LONGROPE_BASES
#: Factors tried for dynamic NTK's base at the table's sequence length.
_DYNAMIC_FACTORS = tolerance.DYNAMIC_FACTORS
#: Factors tried for NTK's base change b' = b * f^(d/(d-2)) when the plain base is not a round number.
_NTK_FACTORS = tolerance.NTK_FACTORS


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
    tol = tolerance.duplicate_tol(first.dtype)
    layout = None if onnx else an.duplicate_layout(next(iter(xs.values())), tol)
    if layout is None and not onnx and len(names) == 2:
        # a cos and a sin table without duplicated columns: a half-width cache (nanochat's cos/sin buffers,
        # torchtune's, Meta's freqs_cis parts); the spectrum of the pairs decides below
        onnx = True
    if layout is None and not onnx:
        # no duplicated columns: an ONNX half-width cache if every column is a lone cos (or sin) of the position
        if len(names) != 1:
            return None
        main = ana.spectrum if names.get("table") == ana.name else None
        if main is not None and any(o.paired for o in main.oscillators):
            return None  # sin/cos pairs of one frequency (a sinusoidal table), not lone cos (or sin) columns
        x0 = next(iter(xs.values()))
        single = an.spectrum(first, sample=sample, x=x0, find=False, dtype=first.dtype)
        if not single.sinusoidal or any(o.paired for o in single.oscillators):
            return None
        onnx = True
    uniq = (
        np.arange(width) if onnx else np.arange(width // 2) if layout == an.DUPLICATE_HALF else np.arange(0, width, 2)
    )
    m = uniq.size
    if "cos" in xs and "sin" in xs:
        x = np.concatenate([xs["sin"][:, uniq], xs["cos"][:, uniq]], axis=1)
        spec = an.spectrum(first, sample=sample, x=x, pairs=[(j, m + j) for j in range(m)], dtype=first.dtype)
        role = None
    else:
        role_name, x0 = next(iter(xs.items()))
        # one table alone: the amplitude (attention scaling) read on the columns that turn at least a radian pins
        # the slow columns, whose amplitude and frequency cannot be told apart on their own (the second reading
        # refits the first one's free fits)
        xu, fits = x0[:, uniq], dict[Any, Any]()
        free = an.spectrum(first, sample=sample, x=xu, find=False, dtype=first.dtype, fits=fits)
        fast = [o.amplitude for o in free.oscillators if o.freq * n >= 1]
        amp_known = float(np.median(fast)) if fast else 1.0
        spec = an.spectrum(first, sample=sample, x=xu, find=False, dtype=first.dtype, amplitude=amp_known, fits=fits)
        if not spec.sinusoidal:
            spec = free
        role = role_name
    if not spec.sinusoidal and spec.zero_cols == []:
        return None
    return {
        "names": names,
        "layout": layout,
        "half_width": onnx,
        "width": width,
        "rot": 2 * m,
        "spec": spec,
        "role": role,
        "n": n,
        "dtype": first.dtype,
        "m": m,
    }


def _ladder(st: dict[str, Any], ana: an.TableAnalysis) -> tuple[np.ndarray, np.ndarray, Any, str]:
    """One frequency (and its error) per rotation pair, in column order (zero-frequency pairs are zero sin
    columns); an ``inv_freq`` tensor, when there is one, gives them exactly (and says their dtype)."""
    spec: an.Spectrum = st["spec"]
    m = st["m"]
    by_col: dict[int, an.Oscillator] = {}
    for o in spec.oscillators:
        col = o.cos_col if o.cos_col is not None else o.sin_col
        assert col is not None  # an oscillator has at least one column
        by_col[col - (m if o.sin_col is not None else 0)] = o
    freqs = np.array([by_col[k].freq if k in by_col else 0.0 for k in range(m)])
    errs = np.array([by_col[k].err if k in by_col else 0.0 for k in range(m)])
    inv = ana.tensor("inv_freq")
    inv_dtype = "float64"
    if inv is not None and len(inv[1].shape) == 1 and inv[1].shape[0] == m:
        freqs = np.asarray(inv[1], dtype=np.float64)
        errs = np.maximum(np.abs(freqs) * tolerance.EXACT_FREQ_REL, tolerance.TINY)
        inv_dtype = "float32" if np.dtype(inv[1].dtype) == np.float32 else "float64"
    return freqs, errs, inv, inv_dtype


def _rope_params(
    st: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any, inv: Any, inv_dtype: str
) -> tuple[dict[str, Any], dict[str, str], int]:
    """The parameters the structure fixes (length, dim, dtype, layout, cache, offset, inv_freq's dtype), the map of
    the input tensors to the kind's, and the position offset."""
    spec: an.Spectrum = st["spec"]
    n, r, role = st["n"], st["rot"], st["role"]
    ptol = tolerance.phase_tol(st["dtype"])
    off = an.position_offset(spec, single_phase=-math.pi / 2 if role == "sin" else 0.0, tol=ptol)
    offset = off[0] if off is not None and off[1] < ptol else 0
    params: dict[str, Any] = {"length": n}
    meta_dim = ana.metadata.get("dim")
    if meta_dim is not None and meta_dim.isdigit() and int(meta_dim) > r:
        params["dim"], params["rotary_dim"] = int(meta_dim), r
    else:
        params["dim"] = r
    if ana.dtype_param:
        params["dtype"] = ana.dtype_param
    named = _layout_names(kind_cls)
    if st["layout"] is not None:
        params["layout"] = named[st["layout"]]
    if st["half_width"]:
        params["cache"] = named[None]
    if offset:
        params["offset"] = offset
    if inv_dtype == "float32":
        params["inv_freq_dtype"] = "float32"
    roles = {"cos": "cos", "sin": "sin", "table": "cos"}
    if st["half_width"]:
        roles = {"cos": "cos_cache", "sin": "sin_cache", "table": "cos_cache"}
    tmap = {name: roles[role_] for role_, name in st["names"].items()}
    if role == "sin" or (role == "table" and off is not None and off[1] >= ptol):
        alt = an.position_offset(spec, single_phase=-math.pi / 2, tol=ptol)
        if role == "table" and alt is not None and alt[1] < ptol:
            offset = alt[0]
            params["offset"] = offset
            if not offset:
                params.pop("offset")
            tmap = {st["names"]["table"]: "sin_cache" if st["half_width"] else "sin"}
    if inv is not None and inv[0] not in tmap:
        tmap[inv[0]] = "inv_freq"
    return params, tmap, offset


def hints_rope(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """Rotary tables: duplicated columns (half or interleaved), one frequency per pair, an amplitude (attention
    scaling) and a frequency law: geometric (none, linear, NTK), ramps (llama3, YaRN), per column (longrope), or
    trailing zero frequencies (proportional); and the named precision mistakes before any per-column fit:
    ``inv_freq`` rounded to bfloat16 / float16 (a geometric ladder within that rounding), positions rounded to
    float16 / bfloat16 (the rows where they are exact integers read as a rotary table)."""
    st = _rotary_structure(ana)
    out = _hints_rope(st, ana, kind_cls) if st is not None else []
    if st is None or not _clean_ladder(st, ana):
        out += _rounded_positions(tensors, ana, kind_cls) + _rounded_angles(ana, kind_cls)
    return out


#: A rope kind's parameters that name a precision mistake, by value: what identify's answer says of them.
MISTAKES = {
    "inv_freq_dtype": {dt: f"inv_freq rounded to {dt}" for dt in ("bfloat16", "float16")},
    "position_dtype": {dt: f"positions rounded to {dt}" for dt in ("bfloat16", "float16")},
    "angle_dtype": {dt: f"angles computed in {dt}" for dt in ("bfloat16", "float16")},
}


#: ... and what the other values of those parameters say beside a mistake (a diagnosis names both sides).
NO_MISTAKE = {
    "inv_freq_dtype": "inv_freq not rounded to a half-precision dtype",
    "position_dtype": "exact positions",
    "angle_dtype": "exact angles",
}


def _mistakes(params: dict[str, Any]) -> dict[str, str]:
    """The named mistakes among ``params`` (parameter -> what it says)."""
    return {k: MISTAKES[k][v] for k, v in params.items() if k in MISTAKES and v in MISTAKES[k]}


def _clean_ladder(st: dict[str, Any], ana: an.TableAnalysis) -> bool:
    """Whether every frequency of the structure lies on one geometric ladder (nothing for a mistake to explain)."""
    freqs, errs, _inv, _dt = _ladder(st, ana)
    nz = int(np.sum(freqs > 0))
    geo = an.geometric_fit(freqs[:nz], errs[:nz]) if nz else None
    return geo is not None and geo.count == nz


def _rounded_positions(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """Positions rounded to a half-precision dtype before the product: the first rows, where its integers are
    exact (2048 in float16, 256 in bfloat16), read as a rotary table; each reading then spans every row."""
    from ...encodings.rope.core import POSITION_DTYPES
    from ..tolerance import finfo

    if ana.ndim != 2 or any(len(t.shape) != 2 or int(t.shape[0]) != ana.n for t in tensors.values()):
        return []
    out: list[Candidate] = []
    for dt in POSITION_DTYPES[1:]:
        exact = 2 ** (int(finfo(resolve_dtype(dt)).nmant) + 1)  # the last of the run of exact integers
        if ana.n <= exact + 1 or exact < tolerance.POSITIONS_READ_MIN:
            continue
        head = {k: _Head(t, exact + 1) for k, t in tensors.items()}
        sub = an.TableAnalysis(head, ana.metadata)
        st = _rotary_structure(sub)
        if st is None:
            continue
        for c in _hints_rope(st, sub, kind_cls, inv_mistakes=False, plain=True):
            if c.params.get("offset", 0) or "seq_len" in c.params or c.params.get("scaling", "none") != "none":
                continue  # the plain laws only: a ramp read on the first rows need not hold past them
            c.params.update(length=ana.n, position_dtype=dt)
            c.mistake = _mistakes(c.params)
            c.note = f"{c.note}; positions exact up to {exact}, rounded to {dt} beyond"
            out.append(c)
    return out


def _rounded_angles(ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """Angles computed in a half-precision dtype (``torch.outer`` of half-precision positions and ``inv_freq``,
    as under autocast): no column is a sinusoid of the position any more, but row 1 holds each angle exactly (1
    times the rounded frequency): the frequencies read there lie on that dtype's grid and on a geometric ladder
    within its rounding; each reading is regenerated (the verification decides)."""
    from ...encodings.rope.core import POSITION_DTYPES

    cos, sin = ana.tensor("cos"), ana.tensor("sin")
    pair = {"cos": cos, "sin": sin} if cos is not None or sin is not None else {"table": (ana.name, ana.table)}
    pair = {k: v for k, v in pair.items() if v is not None}
    first = next(iter(pair.values()))[1]
    if len(first.shape) != 2 or ana.n < 3 or not ana.floating:
        return []
    head = {k: an.read_rows(v[1], np.arange(min(ana.n, 16))).reshape(min(ana.n, 16), -1) for k, v in pair.items()}
    x0 = next(iter(head.values()))
    layout = an.duplicate_layout(x0, tolerance.duplicate_tol(first.dtype))
    if layout is None:
        return []
    width = int(first.shape[1])
    uniq = np.arange(width // 2) if layout == an.DUPLICATE_HALF else np.arange(0, width, 2)
    c1 = head["cos"][1, uniq] if "cos" in head else head["table"][1, uniq] if "table" in head else None
    if "sin" in head:
        s1 = head["sin"][1, uniq]
        w = np.arctan2(s1, c1) if c1 is not None else np.arcsin(np.clip(s1, -1, 1))
    else:
        assert c1 is not None  # a cos table or a lone table
        w = np.arccos(np.clip(c1, -1.0, 1.0))
    # a frequency well above the table's own rounding at row 1 is read to it; slower ones say nothing there
    readable = np.flatnonzero(w > np.sqrt(tolerance.eps(first.dtype)) * 64)
    if readable.size < 3 or readable[0] != 0 or not np.all(np.diff(readable) == 1):
        return []
    w = w[readable]
    named = _layout_names(kind_cls)
    out: list[Candidate] = []
    for dt in POSITION_DTYPES[1:]:
        half_ulp = tolerance.eps(resolve_dtype(dt)) / 2
        geo = an.geometric_fit(w, w * half_ulp * 4)
        if geo is None or geo.count < w.size or not near_one(geo.w0, half_ulp * 4):
            continue
        for b in base_readings(geo.ratio ** (-width / 2.0), True)[:4]:
            p = {"length": ana.n, "dim": width, "layout": named[layout], "base": b, "angle_dtype": dt}
            if ana.dtype_param:
                p["dtype"] = ana.dtype_param
            tmap = {v[0]: ("cos" if k != "sin" else "sin") for k, v in pair.items()}
            out.append(
                Candidate(
                    kind_cls.KIND,
                    p,
                    tensor_map=tmap,
                    note=f"angles on the {dt} grid at row 1",
                    convention=PAIRINGS.get(layout, ""),
                    mistake=_mistakes(p),
                )
            )
    return out


class _Head:
    """The first ``n`` rows of a table (array or row-block source), for a reading of those rows alone."""

    def __init__(self, inner: Any, n: int) -> None:
        self.inner = inner
        self.shape = (n, *tuple(int(s) for s in inner.shape[1:]))
        self.dtype = inner.dtype

    def rows(self, start: int, stop: int) -> np.ndarray:
        stop = min(stop, self.shape[0])
        return np.asarray(
            self.inner[start:stop] if isinstance(self.inner, np.ndarray) else self.inner.rows(start, stop)
        )

    def __getitem__(self, key: Any) -> np.ndarray:
        return np.asarray(
            self.inner[: self.shape[0]] if isinstance(self.inner, np.ndarray) else self.rows(0, self.shape[0])
        )[key]


def _hints_rope(
    st: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any, inv_mistakes: bool = True, plain: bool = False
) -> list[Candidate]:
    """:func:`hints_rope` of one rotary structure (``inv_mistakes``: with the rounded-inv_freq readings; ``plain``:
    the plain law's readings only, a base and nothing else, in the order they come among all the readings: what
    :func:`_rounded_positions` keeps, without reading every ramp and scaling of the first rows to drop them)."""
    n, m, r = st["n"], st["m"], st["rot"]
    freqs, errs, inv, inv_dtype = _ladder(st, ana)
    amps = [o.amplitude for o in st["spec"].oscillators if o.amplitude > 0]
    amp = float(np.median(amps)) if amps else 1.0
    params, tmap, offset = _rope_params(st, ana, kind_cls, inv, inv_dtype)
    named = _layout_names(kind_cls)
    note = f"{named[st['layout'] if st['layout'] is not None else None]} rotary pairs, {m} frequencies"
    convention = PAIRINGS.get(st["layout"], "")
    out: list[Candidate] = []
    nz = int(np.sum(freqs > 0))
    amp_tol = tolerance.amp_tol(st["dtype"])

    def add(p: dict[str, Any], why: str, fallback: bool = False) -> None:
        note_ = f"{note}; {why}"
        out.append(
            Candidate(
                kind_cls.KIND,
                p,
                tensor_map=dict(tmap),
                note=note_,
                fallback=fallback,
                convention=convention,
                mistake=_mistakes(p),
            )
        )
        if inv_dtype == "float64" and "inv_freq_dtype" not in p:
            p32 = {**p, "inv_freq_dtype": "float32"}
            note32 = f"{note_}; float32 inv_freq"
            out.append(
                Candidate(kind_cls.KIND, p32, tensor_map=dict(tmap), note=note32, fallback=True, convention=convention)
            )

    law = _Law(add, params, r, tolerance.coarse(st["dtype"]), amp, amp_tol, not near_one(amp, amp_tol))
    if not plain and nz < m and np.all(freqs[nz:] == 0) and nz >= 1:
        _proportional(law, freqs, errs, nz, m)
    # frequencies too low to move a value on this many rows read as 0 too: fit the ladder on the others
    zero_tail = 1 <= nz < m and bool(np.all(freqs[nz:] == 0))
    fit_n = nz if zero_tail else m
    geo = an.geometric_fit(freqs[:fit_n], errs[:fit_n])
    if inv_mistakes and inv is None and (geo is None or geo.count < fit_n) and fit_n > 1:
        _rounded_inv_freq(law, freqs[:fit_n], errs[:fit_n], m, convention)
    if geo is None:
        return out
    if geo.count == fit_n or m == 1:
        _geometric(law, geo, m, n, offset, plain)
        if plain or not law.coarse or m < 3 or zero_tail:
            return out
    if plain:
        return out  # (every law below names a scaling)
        # a float16/bfloat16 ladder hides a ramp within its rounding: try the laws below as well
    # a law on top of a geometric ladder (with a zero tail: on the frequencies that move on these rows; the ramp
    # then names the factor)
    vis = fit_n if zero_tail else m
    _ladder_laws(law, freqs[:vis], errs[:vis], geo, max(n + offset, 1), not zero_tail)
    return out


def _rounded_inv_freq(law: _Law, freqs: np.ndarray, errs: np.ndarray, m: int, convention: str) -> None:
    """``inv_freq`` rounded to bfloat16 / float16 (a model cast to it rounds the buffer; the forward widens it
    back): the ladder is geometric within that dtype's rounding, its first frequency 1. Tried before any
    per-column reading, which would fit the rounding with one free factor per frequency."""
    from ...encodings.rope.core import ROUNDED_INV_FREQ

    for dt in ROUNDED_INV_FREQ:
        half_ulp = tolerance.eps(resolve_dtype(dt)) / 2
        geo = an.geometric_fit(freqs, np.maximum(errs, freqs * half_ulp))
        if geo is None or geo.count < freqs.size or not near_one(geo.w0, half_ulp):
            continue
        for b in base_readings(geo.ratio ** (-law.r / 2.0), True)[:4]:
            p = {**law.params, "base": b, "inv_freq_dtype": dt}
            law.add(p, f"w_k = base^(-2k/{law.r}) rounded to {dt}")


def _proportional(law: _Law, freqs: np.ndarray, errs: np.ndarray, nz: int, m: int) -> None:
    """Proportional: the first rot/2 frequencies over the whole head, the rest 0."""
    r = law.r
    geo = an.geometric_fit(freqs[:nz], errs[:nz])
    if geo is None or geo.count != nz:
        return
    for f_ in round_variants(1.0 / geo.w0, tols=tolerance.W0_ROUNDINGS):
        for b in base_readings(geo.ratio ** (-r / 2.0), law.coarse) if nz > 1 else [tolerance.DEFAULT_BASE]:
            law.add(
                {**law.params, "dim": r, "scaling": "proportional", "rotary_dim": 2 * nz, "factor": f_, "base": b},
                f"{m - nz} trailing zero frequencies (proportional)",
            )


def _geometric(law: _Law, geo: an.GeometricFit, m: int, n: int, offset: int, plain: bool = False) -> None:
    """A geometric ladder: a base (with an attention scaling: YaRN of factor 1), NTK and dynamic NTK bases, or
    every frequency divided by one factor (linear; with an attention scaling: LongRoPE of equal factors);
    ``plain``: the bases alone."""
    r, amp = law.r, law.amp
    ratio = geo.ratio if m > 1 else tolerance.DEFAULT_BASE ** (-2.0 / r)
    bases = base_readings(ratio ** (-r / 2.0), law.coarse) if m > 1 else [tolerance.DEFAULT_BASE]
    length = max(n + offset, 1)
    if near_one(geo.w0, max(tolerance.W0_ONE, law.amp_tol)):
        for b in bases:
            if law.scaled_amp:
                if plain:
                    continue
                p = {"base": b, "scaling": "yarn", "factor": 1.0, "original_max_position_embeddings": length}
                law.add(
                    {**law.params, **p, "attention_factor": amp},
                    f"w_k = base^(-2k/{r}), amplitude {amp:.6g} (attention scaling)",
                )
            else:
                law.add({**law.params, "base": b}, f"w_k = base^(-2k/{r})")
        if r > 2 and m > 1 and not law.scaled_amp and bases and not plain:
            _ntk(law, bases[-1], n, offset)
        return
    if plain:
        return
    for f_ in round_variants(1.0 / geo.w0, tols=tolerance.W0_FACTOR_ROUNDINGS):
        for b in bases:
            if law.scaled_amp:
                p = {"base": b, "scaling": "longrope", "short_factor": tuple([f_] * m), "long_factor": tuple([f_] * m)}
                p |= {"original_max_position_embeddings": length, "factor": 1.0, "attention_factor": amp}
                law.add({**law.params, **p}, "every frequency divided by one factor")
            else:
                law.add(
                    {**law.params, "base": b, "scaling": "linear", "factor": f_},
                    f"every frequency divided by {f_:g} (linear)",
                )


def _ntk(law: _Law, base: float, n: int, offset: int) -> None:
    """NTK's base change b' = b * f^(r/(r-2)), and dynamic NTK at sequence length S = offset + length:
    b * (f S / L - (f - 1))^(r/(r-2))."""
    r = law.r
    S = offset + n
    for f_ in _DYNAMIC_FACTORS:
        for L in (2**e for e in range(4, 21)):
            if L >= S:
                break
            nice = round_base(base / (f_ * S / L - (f_ - 1)) ** (r / (r - 2.0)))
            if nice is not None:
                p = {"base": nice, "scaling": "dynamic", "factor": f_, "original_max_position_embeddings": L}
                law.add({**law.params, **p}, f"dynamic NTK at sequence length {S}")
    for f_ in _NTK_FACTORS:
        nice = round_base(base / f_ ** (r / (r - 2.0)))
        if nice is not None:
            law.add(
                {**law.params, "base": nice, "scaling": "ntk", "factor": f_},
                f"NTK: base {nice:g} * {f_:g}^({r}/{r - 2})",
            )


@dataclass
class _Law:
    """What the law readings share: the parameters so far, the add function, the amplitude and the dtype."""

    add: Any
    params: dict[str, Any]
    r: int
    coarse: bool
    amp: float
    amp_tol: float
    scaled_amp: bool


def _law_ratios(freqs: np.ndarray, errs: np.ndarray, geo: an.GeometricFit, r: int) -> list[float]:
    """Ladder ratios to read a base from: the longest geometric runs from either end, then the bases published
    LongRoPE models use (per-column factors leave no geometric run: Phi-3/3.5's 10000, then the other usual ones)."""
    ratios = []
    tail = an.geometric_fit(freqs[::-1], errs[::-1])
    for run, ratio in sorted(
        ((geo.count, geo.ratio), (tail.count if tail else 0, 1 / tail.ratio if tail else 0.0)), reverse=True
    ):
        if run >= 2 and 0 < ratio < 1:
            ratios.append(ratio)
    return ratios + [b ** (-2.0 / r) for b in LONGROPE_BASES]


def _ramps(law: _Law, q: np.ndarray, qtol: np.ndarray, ref: np.ndarray, b: float) -> None:
    """llama3 (a ramp in frequency) and YaRN (a ramp in the index) readings of the ratios ``q`` to base ``b``."""
    r, amp, amp_tol = law.r, law.amp, law.amp_tol
    for f_ in round_variants(1 / q.min(), tols=tolerance.factor_roundings(law.coarse), keep=False)[::-1]:
        if f_ <= 1:
            continue
        q_f = np.where(np.abs(q * f_ - 1) < qtol, 1 / f_, q)
        s_ = np.clip((q_f - 1 / f_) / (1 - 1 / f_), 0, 1)  # 1 = kept, 0 = divided by f
        for L, lff, hff, f_l in _llama3_options(q_f, s_, f_, 2 * math.pi / ref, law.coarse):
            law.add(
                {
                    **law.params,
                    "base": b,
                    "scaling": "llama3",
                    "factor": f_l,
                    "original_max_position_embeddings": L,
                    "low_freq_factor": lff,
                    "high_freq_factor": hff,
                },
                f"low frequencies divided by {f_l:g}, ramp in frequency (llama3)",
            )
        for L, truncate in _yarn_lengths(1 - s_, r, b):
            p = {**law.params, "base": b, "scaling": "yarn", "factor": f_, "original_max_position_embeddings": L}
            if not truncate:
                p["truncate"] = False
            if not near_one(amp / (tolerance.YARN_MSCALE * math.log(f_) + 1.0), amp_tol):
                p["attention_factor"] = amp
            law.add(p, f"frequencies divided by {f_:g}, ramp in the index (YaRN)")
    for L, f_y in _yarn_unsaturated(q, r, b):
        p = {**law.params, "base": b, "scaling": "yarn", "factor": f_y, "original_max_position_embeddings": L}
        if not near_one(amp / (tolerance.YARN_MSCALE * math.log(f_y) + 1.0), amp_tol):
            p["attention_factor"] = amp
        law.add(p, f"frequencies divided by up to {f_y:g}, ramp in the index not reaching its end (YaRN)")


def _per_column(law: _Law, div: np.ndarray, b: float, length: int) -> None:
    """LongRoPE: each frequency divided by its own factor, as published (short decimals) when the reading allows,
    else as read; fallbacks, verified only when no simpler reading accounts."""
    for rel in tolerance.LIST_ROUNDINGS:
        factors = tuple(an.nice_number(float(x), rel) for x in div)
        p = {
            **law.params,
            "base": b,
            "scaling": "longrope",
            "short_factor": factors,
            "long_factor": factors,
            "original_max_position_embeddings": length,
            "factor": 1.0,
        }
        if law.scaled_amp:
            p["attention_factor"] = law.amp
        law.add(p, "each frequency divided by its own factor (longrope)", fallback=True)


def _ladder_laws(
    law: _Law, freqs: np.ndarray, errs: np.ndarray, geo: an.GeometricFit, length: int, longrope: bool
) -> None:
    """Readings of a law on top of a geometric ladder: the kept high frequencies and the divided low ones are both
    geometric (llama3's ramp in frequency, YaRN's in the index), or each frequency has its own factor (LongRoPE,
    when every frequency is seen: ``longrope``)."""
    w0 = an.nice_number(float(freqs[0]), tolerance.LAW_ROUNDING)
    bases_seen: set[float] = set()
    k = np.arange(freqs.size, dtype=np.float64)
    # a ratio is known to its measurement's error: a float16/bfloat16 table reads kept frequencies as 1 +- 1e-5,
    # not 1 +- 1e-6; within it a ratio is 1 (kept), or 1/f (divided all the way)
    qtol = tolerance.ratio_tol(freqs, errs)
    for ratio in _law_ratios(freqs, errs, geo, law.r):
        for b in base_readings(ratio ** (-law.r / 2.0), law.coarse)[:2]:
            if b in bases_seen:
                continue
            bases_seen.add(b)
            ref = w0 * np.exp(-2 * k / law.r * math.log(b))
            q = freqs / ref
            if not (q.min() > 0 and np.all(q < 1 + qtol)):
                continue
            _ramps(law, np.where(np.abs(q - 1) < qtol, 1.0, np.minimum(q, 1.0)), qtol, ref, b)
            if longrope:
                _per_column(law, ref / freqs, b, length)


def _llama3_options(
    q: np.ndarray, s: np.ndarray, f: float, wavelength: np.ndarray, coarse: bool = False
) -> list[tuple[int, float, float, float]]:
    """(original_max_position_embeddings L, low_freq_factor, high_freq_factor, factor) consistent with the
    frequency ratios ``q`` (1 = kept; ``s`` the same on the scale where 0 = divided by ``f``), round values first.

    When no frequency is divided all the way, ``f`` is not the smallest ratio: it is solved from the ramp with
    Llama 3.1's L, low and high (8192, 1, 4).
    """
    kept, div = s > 1 - tolerance.RAMP_INSIDE, s < tolerance.RAMP_INSIDE
    inner = ~kept & ~div
    inv = 1 / wavelength
    out: list[tuple[int, float, float, float]] = []

    def add(L: float, lff: float, hff: float, factor: float) -> None:
        Li = round(L)
        if Li >= 1 and hff > lff > 0 and factor > 1 and (Li, lff, hff, factor) not in out:
            out.append((Li, lff, hff, factor))

    if inner.sum() >= 2:
        a, b = np.polyfit(inv[inner], s[inner], 1)  # s = a / wavelength + b
        if a > 0 and b < 0:
            hff = an.nice_number(1 - 1 / b, tolerance.RAMP_ROUNDING)
            add(an.nice_number(-a / b, tolerance.RAMP_ROUNDING), 1.0, hff, f)
    # nothing need be divided all the way: with L, low, high = 8192, 1, 4 the ramp value is known and
    # q = (1 - s) / f + s gives f
    s_def = np.clip((8192 * inv - 1) / 3, 0, 1)
    ramp = (s_def > 0) & (s_def < 1) & (q < 1 - tolerance.RAMP_KEPT)
    if ramp.any():
        f_sol = float(np.median((1 - s_def[ramp]) / (q[ramp] - s_def[ramp])))
        if f_sol > 1:
            for rel in tolerance.factor_roundings(coarse)[1:][::-1]:
                add(8192, 1.0, tolerance.LLAMA3_HIGH, an.nice_number(f_sol, rel))
    if inner.any():
        # defaults low 1, high 4: L = wavelength * (3 s + 1)
        add(
            an.nice_number(float(np.median(wavelength[inner] * (3 * s[inner] + 1))), tolerance.RAMP_ROUNDING),
            1.0,
            tolerance.LLAMA3_HIGH,
            f,
        )
        hff = float(np.median(1 + (8192 * inv[inner] - 1) / s[inner]))
        add(8192, 1.0, an.nice_number(hff, tolerance.RAMP_ROUNDING), f)
    else:
        # a step: every kept wavelength below L / high, every divided one above L / low
        low = 4 * float(wavelength[kept].max()) if kept.any() else 0.0
        high = float(wavelength[div].min()) if div.any() else math.inf
        for L in _round_lengths(low, min(high, 1 << 30)):
            add(L, 1.0, tolerance.LLAMA3_HIGH, f)
        add(8192, 1.0, tolerance.LLAMA3_HIGH, f)
    return out[: 5 + 2 * coarse]


def _yarn_lengths(rho: np.ndarray, r: int, base: float) -> list[tuple[int, bool]]:
    """Context lengths L whose YaRN correction range (beta_fast 32, beta_slow 1) gives the ramp ``rho``
    (0 = kept, 1 = divided, linear in the index between ``low`` and ``high``); round lengths first."""
    k = np.arange(rho.size)
    kept, div = k[rho < tolerance.RAMP_INSIDE], k[rho > 1 - tolerance.RAMP_INSIDE]
    inner = (rho > tolerance.RAMP_INSIDE) & (rho < 1 - tolerance.RAMP_INSIDE)

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
    if abs(lo - round(lo)) < tolerance.RAMP_INTEGRAL and abs(hi - round(hi)) < tolerance.RAMP_INTEGRAL:
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
        out.append((round(an.nice_number(c_inv(lo, 32), tolerance.LAW_ROUNDING)), False))
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
    inside = tolerance.RAMP_INSIDE
    ramp = (y > inside) & (y < top * (1 - inside)) if np.sum(y > top * (1 - inside)) > 1 else y > inside
    if ramp.sum() < 2:
        return []
    slope, icpt = np.polyfit(k[ramp], y[ramp], 1)
    if slope <= 0:
        return []
    lo_real = -icpt / slope
    lo = round(lo_real)
    if abs(lo_real - lo) > tolerance.RAMP_START_INTEGRAL or lo < 0:
        return []

    def c_inv(c: float, beta: float) -> float:
        return 2 * math.pi * beta * math.exp(2 * math.log(base) * c / r)

    out = []
    for L in _round_lengths(c_inv(lo, 32) if lo > 0 else 0.0, c_inv(lo + 1, 32)):
        hi = min(math.ceil(r * math.log(L / (2 * math.pi)) / (2 * math.log(base))), r - 1)
        c = slope * (hi - lo)
        if hi > lo and 0 < c < 1:
            out.append((L, an.nice_number(1 / (1 - c), tolerance.RAMP_ROUNDING)))
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


def hints_xpos(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """Positive scales whose logarithm is rank one: (t - center) / scale_base times log zeta_k with
    zeta_k = (2k + 0.4 d) / (1.4 d), written to both columns of each pair."""
    if ana.ndim != 2 or not ana.floating or ana.width < 2 or ana.width % 2:
        return []
    x = ana.x if ana.sample.usable else ana.head
    rows = ana.sample.rows if ana.sample.usable else np.arange(min(ana.n, 16))
    if not np.all(x > 0):
        return []
    d = ana.width
    layout = an.duplicate_layout(x, tolerance.duplicate_tol(ana.dtype))
    if layout is None:
        return []
    uniq = np.arange(d // 2) if layout == an.DUPLICATE_HALF else np.arange(0, d, 2)
    v = np.log((np.arange(0, d, 2) + tolerance.XPOS_ZETA_SHIFT * d) / (tolerance.XPOS_ZETA_SPAN * d))
    lx = np.log(x[:, uniq])
    u = lx @ v / (v @ v)  # per row: (t - center) / scale_base
    if np.max(np.abs(lx - np.outer(u, v))) > tolerance.XPOS_RANK_ONE or rows.size < 2:
        return []
    slope, icpt = np.polyfit(rows.astype(np.float64), u, 1)
    if slope <= 0:
        return []
    params = {**base_params(ana), "layout": _layout_names(kind_cls)[layout]}
    out = []
    for sb in round_variants(1.0 / slope, tols=tolerance.XPOS_SCALE_BASE_ROUNDINGS):
        center = -icpt * sb
        c = round(center)
        p = {**params, "scale_base": sb}
        if c != ana.n // 2:
            p["center"] = c
        out.append(
            Candidate(kind_cls.KIND, p, note=f"{params['layout']} pairs, log scale rank one in (position, zeta_k)")
        )
    return out


#: Largest table (rows x half width) mrope's hint reads whole: it follows the position ids row by row.
_MROPE_MAX_CELLS = 1 << 24


def hints_mrope(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """Multimodal RoPE (Qwen2-VL): a half-layout cos/sin pair whose frequency chunks (temporal | height | width)
    follow three position ids. Text rows advance every column; inside the vision block, moving one cell leaves
    the chunks of the axes that did not move unchanged (bit for bit), so the columns that move together give
    ``mrope_section``, the rows where a chunk stands still give the text offset and the grid, and the angles
    give the base and the temporal step. A table without a vision block is plain RoPE (that kind names it)."""
    cos, sin = ana.tensor("cos"), ana.tensor("sin")
    if cos is None or sin is None or len(sin[1].shape) != 2 or tuple(cos[1].shape) != tuple(sin[1].shape):
        return []
    n, d = int(sin[1].shape[0]), int(sin[1].shape[1])
    h = d // 2
    if d % 2 or h < 3 or n < 3 or n * h > _MROPE_MAX_CELLS or np.dtype(sin[1].dtype) not in (np.float32, np.float64):
        return []
    # which values are equal is read in the stored dtype (float32 widened to float64 keeps every value, so every
    # comparison), and the angles only where there are chunks to read: a rotary cache without a vision block
    # (131072 x 64: 0.1 CPU-s of arctan2) leaves before
    s_raw, c_raw = np.asarray(sin[1][:]), np.asarray(cos[1][:])
    if not (np.array_equal(s_raw[:, :h], s_raw[:, h:]) and np.array_equal(c_raw[:, :h], c_raw[:, h:])):
        return []
    moved = s_raw[1:, :h] != s_raw[:-1, :h]  # moved[i - 1]: which columns changed from row i - 1 to row i
    still = np.flatnonzero(~moved.all(axis=1))
    if still.size == 0:
        return []  # every column advances every row: no vision block
    offset = int(still[0])  # the block's first cell: the next row is the first where a chunk stands still
    sections = _mrope_sections(moved, h)
    if not sections:
        return []  # no chunk boundaries to read (a plain rotary cache whose slow columns stand still at times)
    s_all, c_all = np.asarray(s_raw, dtype=np.float64), np.asarray(c_raw, dtype=np.float64)
    theta = np.arctan2(s_all[:, :h], c_all[:, :h])
    params_base: dict[str, Any] = {"length": n, "dim": d}
    if ana.dtype_param:
        params_base["dtype"] = ana.dtype_param
    base_value = _mrope_base(ana.tensor("inv_freq"), theta, moved, d)
    if base_value is None:
        return []
    per_section: list[list[Candidate]] = []
    for section in sections:
        width, heights = _mrope_block_shape(s_all, moved, offset, section)
        block = _MropeBlock(theta, moved, offset, section, width, base_value)
        per_section.append(
            [Candidate(kind_cls.KIND, {**params_base, **p}, note=note) for p, note in block.readings(heights)]
        )
    # every chunk reading gets its turn within the driver's budget of candidates per kind
    merged = [c for group in zip_longest(*per_section) for c in group if c is not None]
    return merged[:24]


def _mrope_sections(moved: np.ndarray, h: int) -> list[tuple[int, int, int]]:
    """The (temporal, height, width) chunk widths: where adjacent columns moved differently on some row
    (``moved``: rows x half width). Two axes that never moved apart (a grid one cell long on one of them) leave
    one boundary: that chunk is split every way; no reading when the boundaries are not one or two."""
    cuts = np.flatnonzero((moved[:, 1:] != moved[:, :-1]).any(axis=0)) + 1
    if cuts.size == 2:
        return [(int(cuts[0]), int(cuts[1] - cuts[0]), int(h - cuts[1]))]
    if cuts.size == 1:
        lo, hi = int(cuts[0]), h - int(cuts[0])
        sections = [
            (lo, (hi + 1) // 2, hi // 2),
            (lo, hi // 2, (hi + 1) // 2),
            ((lo + 1) // 2, lo // 2, hi),
            (lo // 2, (lo + 1) // 2, hi),
        ]
        return [s for s in dict.fromkeys(sections) if min(s) >= 1]
    return []


def _mrope_block_shape(
    s_all: np.ndarray, moved: np.ndarray, offset: int, section: tuple[int, int, int]
) -> tuple[int, list[int]]:
    """The vision block's width in cells (where a chunk other than the width one first moves, or where the width
    chunk is back at the block's first value) and its plausible heights (where the height chunk comes back, or a
    row of cells after which text follows; and 1), read from the sin table ``s_all`` from row ``offset``."""
    n, h = s_all.shape[0], moved.shape[1]
    st_, sh, sw = section
    rows = moved[offset:]  # rows[k - 1]: from cell k - 1 to cell k of the block (and on into the text)
    other = rows[:, : h - sw].any(axis=1)
    width = int(np.argmax(other)) + 1 if other.any() else n - offset
    # ... or earlier, where the width chunk is back at the block's first value (a row of cells ends there while
    # the other axes stand still: one row high, a frame step below 1)
    w_cols = slice(h - sw, h)
    wrap = [m for m in range(1, width) if np.array_equal(s_all[offset + m, w_cols], s_all[offset, w_cols])]
    width = wrap[0] if wrap else width
    # the grid's height: the first row of cells whose height chunk is back where the block started
    h_cols = slice(st_, st_ + sh)
    back = [
        m
        for m in range(1, (n - offset - 1) // width + 1)
        if np.array_equal(s_all[offset + m * width, h_cols], s_all[offset, h_cols])
    ]
    # ... or, when the block ends before its height chunk comes back, a row of cells after which text follows
    ends = [m for m in range(1, (n - offset) // width + 1) if _text_follows(moved, offset + m * width, n)]
    return width, sorted({*back[:1], *ends[:3], 1})


def _mrope_base(inv: Any, theta: np.ndarray, moved: np.ndarray, d: int) -> float | None:
    """The base: from ``inv_freq`` when given, else from the slowest column (its smallest turn between two rows is
    one position's worth, ``w_{h-1}``); None when it cannot be read or is not above 1."""
    h = d // 2
    if inv is not None and np.asarray(inv[1]).size == h and float(np.asarray(inv[1])[1]) > 0:
        base_value = float(np.asarray(inv[1], dtype=np.float64)[1]) ** (-d / 2.0)
    else:
        steps = (np.diff(theta[:, h - 1]) % an.TWO_PI)[moved[:, h - 1]]
        steps = steps[(steps > 0) & (steps < math.pi)]
        if steps.size == 0:
            return None
        base_value = float(steps.min()) ** (-d / (2.0 * (h - 1)))
    if not (math.isfinite(base_value) and base_value > 1):
        return None
    return base_value


@dataclass
class _MropeBlock:
    """A vision block read from a table's angles ``theta`` (rows x half width): where it starts, its chunk
    widths, its width in cells and the base; :meth:`readings` gives the parameters of each height and frame count."""

    theta: np.ndarray
    moved: np.ndarray
    offset: int
    section: tuple[int, int, int]
    width: int
    base_value: float

    def t_step(self, frame: int, cells: int) -> int:
        """The temporal id's advance at the first cell of ``frame`` (0-based): the slowest temporal column's angle
        there against the block's first cell."""
        col = self.section[0] - 1
        d = 2 * self.theta.shape[1]
        w_t = self.base_value ** (-2.0 * (self.section[0] - 1) / d)  # the slowest temporal column
        turn = (float(self.theta[self.offset + frame * cells, col]) - float(self.theta[self.offset, col])) % an.TWO_PI
        return round(turn / w_t)

    def time_intervals(self, frames: int, cells: int) -> list[float]:
        """The temporal steps the first frames show: 1 for one frame, else the first frame's advance (0.5 when it
        does not advance: every step below 1 gives it), the second frame's half first when it is fractional."""
        ti_values = [1.0]
        if frames >= 2:
            one = self.t_step(1, cells)
            # a first frame that does not advance: a step below 1 (every one below 1 gives it; 0.5 names it)
            ti_values = [float(one)] if one > 0 else [0.5]
            if frames >= 3:  # a fractional step shows in the second frame: floor(2 t)
                two = self.t_step(2, cells)
                if two > 0 and two != 2 * one:
                    ti_values.insert(0, two / 2.0)
        return ti_values

    def readings(self, heights: list[int]) -> list[tuple[dict[str, Any], str]]:
        """(parameters, note) per height, frame count (the most that fit, or where text follows), base reading
        and temporal step."""
        n = self.theta.shape[0]
        st_, sh, sw = self.section
        width, offset = self.width, self.offset
        out: list[tuple[dict[str, Any], str]] = []
        for height in heights:
            cells = width * height
            frames_max = max(1, (n - offset) // cells)
            ends = [f for f in range(1, frames_max + 1) if _text_follows(self.moved, offset + f * cells, n)]
            for frames in sorted({frames_max, *ends[:2]}):
                ti_values = self.time_intervals(frames, cells)
                readings = base_readings(self.base_value)
                for b in [
                    r
                    for i, r in enumerate(readings[:2])
                    if i == 0 or abs(r / readings[0] - 1) > tolerance.MROPE_BASES_DIFFER
                ]:
                    for ti in ti_values[:2]:
                        p = {
                            "base": b,
                            "mrope_section": (st_, sh, sw),
                            "grid": f"{frames}x{height}x{width}",
                            "text_offset": offset,
                        }
                        if ti != 1.0:
                            p["time_interval"] = ti
                        note = (
                            f"{frames}x{height}x{width} vision block after {offset} text rows, chunks {st_}/{sh}/{sw}"
                        )
                        out.append((p, note))

        return out


def _text_follows(moved: np.ndarray, end: int, n: int) -> bool:
    """Whether row ``end`` may be the first text row after a vision block: every column moves from it to the next
    row (inside a block with more than one cell per row, only the width chunk does there)."""
    return end + 1 >= n or bool(moved[end].all())
