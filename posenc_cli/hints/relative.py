"""Identification hints of the relative kinds: which parameters a table's structure implies (moved out of
``encodings/relative.py`` so that the kinds do not import the inspection code; the kind names its reader in
``IDENTIFY``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import analysis as an
from .. import tolerance
from ..identification import Candidate


# ----- identification hints (read by posenc_cli.identification; analysis loads only when identifying) -
def hints_alibi(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """Heads x len x len biases, each head -slope * distance (causal: -inf above the diagonal); the slopes give
    the head count and max_bias."""
    from .. import analysis as an
    from ..identification import Candidate, round_variants

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
        tol = tolerance.line_tol(ana.dtype, lin.slope, n)
        if not math.isfinite(lin.slope) or lin.max_dev > tol:
            return []
        slopes.append(lin.slope)
        causal = lin.causal if causal is None else causal
    c = 1 << (heads.bit_length() - 1)
    params: dict[str, Any] = {"length": n, "dim": heads, "causal": bool(causal)}
    if n < 2 or not slopes[0] > 0:
        return [Candidate(kind_cls.KIND, params, note="one position: any slope gives this table")]
    max_bias = -c * math.log2(slopes[0])
    params = {"length": n, "dim": heads, "causal": bool(causal)}
    if ana.dtype_param:
        params["dtype"] = ana.dtype_param
    out = [
        Candidate(
            kind_cls.KIND,
            {**params, "max_bias": b},
            note=f"{heads} heads of linear biases, slope 2^-(b/{c})",
            convention=(
                f"slopes as the paper, HF Bloom and MPT compute them for {heads} heads"
                if c != heads
                else f"slopes 2^(-8k/n) for {heads} heads: the paper, HF Bloom, MPT and MLX agree"
            ),
        )
        for b in round_variants(max_bias, tols=(1e-6, 1e-4, 1e-3, 1e-2))
    ]
    if c != heads:
        # 2^(-b k / n) at every head count (MLX's nn.ALiBi up to 3576b547, and ports of it)
        out += [
            Candidate(
                kind_cls.KIND,
                {**params, "max_bias": b, "slopes": "geometric"},
                note=f"{heads} heads of linear biases, slope 2^-(b k/{heads})",
                convention=f"slopes as MLX computes them for {heads} heads",
            )
            for b in round_variants(-heads * math.log2(slopes[0]), tols=(1e-6, 1e-4, 1e-3, 1e-2))
        ]
    return out


def _integer_toeplitz(ana: an.TableAnalysis) -> an.ToeplitzFit | None:
    from .. import analysis as an

    if ana.ndim != 2 or ana.shape[0] != ana.shape[1] or not ana.values.integer:
        return None
    fit = an.toeplitz_fit(ana.table)
    return fit if fit is not None and fit.max_dev == 0 else None


def hints_t5(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """Integer Toeplitz buckets: exact small distances, then logarithmic buckets up to max_distance; keys after
    the query get their own buckets when bidirectional."""
    from ..identification import Candidate

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
                    kind_cls.KIND,
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


def hints_relative(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """Integer Toeplitz indices clip(j - i, -k, k) + k: k is the value on the diagonal."""
    from ..identification import Candidate

    fit = _integer_toeplitz(ana)
    if fit is None:
        return []
    n = fit.n
    k = int(fit.value(0))
    rel = np.arange(-(n - 1), n)
    if k < 0 or not np.array_equal(fit.lut, np.clip(rel, -k, k) + k):
        return []
    return [
        Candidate(kind_cls.KIND, {"length": n, "max_relative_position": k}, note=f"Toeplitz indices clipped at {k}")
    ]
