"""Structure readers of the vision towers' 2-D rotary tables (kind ``rope-2d``).

The pairing shows in the columns (``half``: cos columns ``k`` and ``k + d/2`` equal; ``interleaved``: ``2k`` and
``2k + 1`` equal), the unrotated class rows are all-ones cos and all-zero sin at the top or the bottom, and the base
is ``1 / inv_freq[1] ** (d / 4)`` (both frequency rules give pair 1 the frequency ``base^(-4/d)``) when the table
comes with its ``inv_freq``. Each preset whose pairing and class rows fit is proposed at every grid ``H x W`` of the
remaining rows that its merge size divides, the squarest first; verification keeps the one that regenerates the
table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import analysis as an
from ..candidates import Candidate
from . import layouts

#: grids proposed per preset at most (the driver verifies a few dozen candidates per kind)
MAX_GRIDS = 6


def _unrotated(c: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.all(c == 1, axis=1) & np.all(s == 0, axis=1)


def hints_rope2d(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    cos, sin = ana.tensor("cos"), ana.tensor("sin")
    if cos is None or sin is None or len(cos[1].shape) != 2 or tuple(cos[1].shape) != tuple(sin[1].shape):
        return []
    n, d = int(cos[1].shape[0]), int(cos[1].shape[1])
    if d % 4 or n < 2 or n * d > 1 << 22:
        return []
    c = np.asarray(cos[1][:], dtype=np.float64)
    s = np.asarray(sin[1][:], dtype=np.float64)
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
    # each preset, then the kind's defaults in each pairing the columns show
    readings = [*kind_cls.PRESETS.items(), *((f"layout={lay}", {"layout": lay}) for lay in found)]
    for name, preset in readings:
        first, last = int(preset.get("prefix_rows", 0)), int(preset.get("suffix_rows", 0))
        if preset.get("layout", half) not in found or not (plain[:first].all() and plain[n - last :].all()):
            continue
        cells, merge = n - first - last, int(preset.get("merge", 1))
        grids = [(h, cells // h) for h in range(1, cells + 1) if cells % h == 0]
        grids = [(h, w) for h, w in grids if h % merge == 0 and w % merge == 0]
        grids.sort(key=lambda hw: (abs(hw[0] - hw[1]), hw))
        for h, w in grids[:MAX_GRIDS]:
            params = {**preset, **params_base, "grid": f"{h}x{w}"}
            out.append(Candidate(kind_cls.KIND, params, note=f"{name}: {preset.get('layout')} pairs, grid {h}x{w}"))
    return out
