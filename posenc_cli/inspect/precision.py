"""Precision as a reading: a table of bfloat16 or float16 values (stored as such, or widened to float32) compared
with a finer one is the same when the finer one, rounded to that dtype, agrees (:func:`within_rounding`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..blocks import rows_per_block
from . import tolerance
from .analysis import read_rows, rounded_dtype, spread_rows
from .metrics import CompareResult, coarser_dtype, finfo


def within_rounding(res: CompareResult, a: Any, b: Any) -> None:
    """When one table holds bfloat16 or float16 values (stored as such or widened) and the other is finer, the
    finer one rounded to that dtype is compared again: agreeing within its default tolerance, ``res`` is SAME
    "within bfloat16 rounding" (``res.precision``)."""
    if a.shape != b.shape or a.size == 0:
        return
    rows = spread_rows(int(a.shape[0]))
    eff_a = _precision(read_rows(a, rows).reshape(-1), np.dtype(a.dtype))
    eff_b = _precision(read_rows(b, rows).reshape(-1), np.dtype(b.dtype))
    coarse, fine, fine_is_b = (eff_a, eff_b, True) if finfo(eff_a).eps > finfo(eff_b).eps else (eff_b, eff_a, False)
    if not tolerance.coarse(coarse) or tolerance.coarse(fine):
        return
    if res.same and coarser_dtype(np.dtype(a.dtype), np.dtype(b.dtype)) != coarse:
        return  # already the same at the stored dtypes' tolerance, and neither is stored coarse
    x, y = (a, b) if fine_is_b else (b, a)
    atol = tolerance.default_atol(coarse)
    step = rows_per_block(int(np.prod(x.shape[1:])))
    for start in range(0, int(x.shape[0]), step):
        xs = np.asarray(x[start : start + step], dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            ys = np.asarray(y[start : start + step]).astype(coarse).astype(np.float64)
            bad = ~((xs == ys) | (np.abs(xs - ys) <= atol))
        if np.any(bad):
            return
    from ..encodings.base import dtype_name

    res.same, res.reason, res.precision = True, "", dtype_name(coarse)


def _precision(x: np.ndarray, stored: np.dtype) -> np.dtype:
    """The dtype a table's values were rounded to: the stored one, or the bfloat16/float16 of widened values."""
    rounded = rounded_dtype(x, stored)
    return stored if rounded is None else rounded
