"""Structure readers of the vision towers' 2-D rotary tables (kind ``rope-2d``).

The pairing shows in the columns (``half``: cos columns ``k`` and ``k + d/2`` equal; ``interleaved``: ``2k`` and
``2k + 1`` equal), the unrotated class rows are all-ones cos and all-zero sin at the top or the bottom, and the base
is ``1 / inv_freq[1] ** (d / 4)`` (both frequency rules give pair 1 the frequency ``base^(-4/d)``) when the table
comes with its ``inv_freq``. Each preset whose pairing and class rows fit is proposed at every grid ``H x W`` of the
remaining rows that its merge size divides, the squarest first; verification keeps the one that regenerates the
table.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import analysis as an
from ..candidates import Candidate
from . import layouts

#: grids proposed per preset at most (the driver verifies a few dozen candidates per kind)
MAX_GRIDS = 6


def _stored(t: Any) -> np.ndarray:
    """A tensor's values in its own dtype where NumPy compares and sorts it natively (float16/32/64: widening
    keeps every value, so every equality and every order this reader looks at), else as float64: a 131072-row
    cache is not copied to float64 to be compared and sorted."""
    x = np.asarray(t[:])
    return x if x.dtype in (np.float16, np.float32, np.float64) else x.astype(np.float64)


def _unrotated(c: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.all(c == 1, axis=1) & np.all(s == 0, axis=1)


def _values_per_axis(c: np.ndarray, s: np.ndarray, interleaved: bool) -> tuple[int, int]:
    """The most distinct values a column of the first d/4 pairs holds, and of the last d/4 pairs (cos and sin;
    pair ``k`` in column ``k``, or ``2k`` when interleaved)."""
    d = c.shape[1]
    q = d // 4
    cols = np.arange(2 * q) * (2 if interleaved else 1)
    out = []
    for part in (cols[:q], cols[q:]):
        most = 0
        for x in (c[:, part], s[:, part]):
            ordered = np.sort(x, axis=0)
            steps = np.count_nonzero(ordered[1:] != ordered[:-1], axis=0) if len(x) > 1 else np.zeros(1, int)
            most = max(most, 1 + int(steps.max(initial=0)))
        out.append(most)
    return out[0], out[1]


def _divisors(n: int) -> list[int]:
    """Every divisor of ``n`` (at least 1), ascending: the pairs up to its square root (a 131072-row cache has 18,
    found in 362 steps rather than one per row)."""
    low = [h for h in range(1, math.isqrt(n) + 1) if n % h == 0]
    return low + [n // h for h in reversed(low) if h * h != n]


def hints_rope2d(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    cos, sin = ana.tensor("cos"), ana.tensor("sin")
    if cos is None or sin is None or len(cos[1].shape) != 2 or tuple(cos[1].shape) != tuple(sin[1].shape):
        return []
    n, d = int(cos[1].shape[0]), int(cos[1].shape[1])
    if d % 4 or n < 2 or n * d > 1 << 22:
        return []
    c, s = _stored(cos[1]), _stored(sin[1])
    half, interleaved = layouts(kind_cls, 2)
    found = []
    if np.array_equal(c[:, : d // 2], c[:, d // 2 :]) and np.array_equal(s[:, : d // 2], s[:, d // 2 :]):
        found.append(half)
    if np.array_equal(c[:, 0::2], c[:, 1::2]) and np.array_equal(s[:, 0::2], s[:, 1::2]):
        found.append(interleaved)
    if not found:
        return []
    plain = _unrotated(c, s)
    base = kind_cls.__dataclass_fields__["base"].default
    inv = ana.tensor("inv_freq")
    if inv is not None and len(inv[1].shape) == 1 and inv[1].shape[0] == d // 2 and d >= 8:
        f1 = float(np.asarray(inv[1][:], dtype=np.float64)[1])
        if 0 < f1 < 1:
            base = float(f"{f1 ** (-d / 4):.6g}")
    params_base: dict[str, Any] = {"length": n, "dim": d, "base": base}
    if ana.dtype_param:
        params_base["dtype"] = ana.dtype_param
    out: list[Candidate] = []
    # the first d/4 pairs turn with one grid coordinate and the last d/4 with the other (the kind's ``coordinates``
    # and ``angles``), so over the H x W grid rows a column of the first takes at most H values (axes hw; W for
    # wh) and of the last at most W: a grid with a shorter side cannot be the table's (a 1-D cache holds a value
    # per position in its fastest columns)
    axes_default = kind_cls.__dataclass_fields__["axes"].default
    counts: dict[tuple[int, int, bool], tuple[int, int]] = {}
    # each preset, then the kind's defaults in each pairing the columns show
    readings = [*kind_cls.PRESETS.items(), *((f"layout={lay}", {"layout": lay}) for lay in found)]
    for name, preset in readings:
        first, last = int(preset.get("prefix_rows", 0)), int(preset.get("suffix_rows", 0))
        if preset.get("layout", half) not in found or not (plain[:first].all() and plain[n - last :].all()):
            continue
        cells, merge = n - first - last, int(preset.get("merge", 1))
        key = (first, last, preset.get("layout", half) == interleaved)
        if key not in counts:
            counts[key] = _values_per_axis(c[first : n - last], s[first : n - last], key[2])
        first_axis, second_axis = counts[key] if preset.get("axes", axes_default) == "hw" else counts[key][::-1]
        grids = [(h, cells // h) for h in _divisors(cells)]
        grids = [(h, w) for h, w in grids if h % merge == 0 and w % merge == 0]
        grids = [(h, w) for h, w in grids if h >= first_axis and w >= second_axis]
        grids.sort(key=lambda hw: (abs(hw[0] - hw[1]), hw))
        for h, w in grids[:MAX_GRIDS]:
            params = {**preset, **params_base, "grid": f"{h}x{w}"}
            out.append(Candidate(kind_cls.KIND, params, note=f"{name}: {preset.get('layout')} pairs, grid {h}x{w}"))
    return out
