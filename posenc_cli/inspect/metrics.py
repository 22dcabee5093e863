"""Metrics between two tables, computed in row blocks (bounded memory on memory-mapped files).

For tables ``A`` (the first source) and ``B`` (the reference) of the same shape:

* max abs difference ``max |A - B|`` and where it is (row, column),
* max relative difference ``max |A - B| / |B|`` over elements with ``B != 0``,
* max ulp difference: how many representable values of the coarser of the two dtypes lie between A and B
  after rounding both to it (0 = the same value there; a float32 table compared with a float64 reference
  shows 0 where it is correctly rounded and 1 where it is one ulp off),
* mean abs difference, min cosine similarity between corresponding rows (and which row),
* the verdict: every element satisfies ``|A - B| <= atol + rtol * |B|`` (NaN equals NaN only in place).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..blocks import rows_per_block
from . import tolerance
from .tolerance import finfo


def coarser_dtype(a: np.dtype, b: np.dtype) -> np.dtype:
    """The less precise of two dtypes, for ulp counting (float64 when neither is floating)."""
    floats = [np.dtype(d) for d in (a, b) if finfo(d) is not None] or [np.dtype(np.float64)]
    return max(floats, key=lambda d: float(finfo(d).eps))


_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def ordinal(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Each value rounded to ``dtype``, as its position on the ordered line of that dtype's floats (float64)."""
    bits = np.asarray(x, dtype=dtype).view(_UINT[dtype.itemsize])  # no copy when x holds dtype's values
    sign = np.array(1 << (8 * dtype.itemsize - 1), dtype=bits.dtype)
    magnitude = (bits & ~sign).astype(np.float64)
    return np.where((bits & sign) != 0, -magnitude, magnitude)


_INT = {2: np.int16, 4: np.int32}


def _ordinal_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """:func:`ordinal` of a dtype of at most 4 bytes in its own signed integers (exact: ``|ordinal| < 2**31``),
    in four integer passes of the narrow width instead of six float64 ones: the magnitude, negated where the sign
    bit is set (``(m ^ s) - s`` with ``s`` the sign spread over the word: 0 or -1)."""
    v = np.asarray(x, dtype=dtype).view(_INT[dtype.itemsize])  # no copy when x holds dtype's values
    s = v >> (8 * dtype.itemsize - 1)
    m = v & np.array((1 << (8 * dtype.itemsize - 1)) - 1, dtype=v.dtype)
    m ^= s
    m -= s
    return m


def _steps(a: np.ndarray, b: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``|ordinal(a) - ordinal(b)|`` in float64: the values of ``dtype`` between the two (after rounding to it)."""
    if dtype.itemsize in _INT:  # exact in int64 (a difference below 2**32) and in float64 after it
        d = np.subtract(_ordinal_int(a, dtype), _ordinal_int(b, dtype), dtype=np.int64)
        np.abs(d, out=d)
        return d.astype(np.float64)
    return np.abs(ordinal(a, dtype) - ordinal(b, dtype))


def abs_difference(x: Any, y: Any, both_nan: np.ndarray | None) -> np.ndarray:
    """``|x - y|``: 0 where the values are equal (NaN in place and equal infinities too), inf for other non-finite
    pairs; ``both_nan`` (where both are NaN) None: every value is finite (the common case, fewer passes)."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.asarray(np.abs(x - y))
    if both_nan is not None:
        diff[both_nan | (x == y)] = 0.0
        diff[np.isnan(diff)] = np.inf
    return diff


def _differences(
    x: np.ndarray, y: np.ndarray, both_nan: np.ndarray | None, atol: float, rtol: float
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`abs_difference` and where it is within ``atol + rtol * |y|``."""
    diff = abs_difference(x, y, both_nan)
    with np.errstate(invalid="ignore", over="ignore"):
        if both_nan is None:
            return diff, (diff <= atol + rtol * np.abs(y) if rtol else diff <= atol)
        # equal values (NaN in place, equal infinities included) match whatever the bound; an infinite
        # difference never does (rtol * |inf| would otherwise be NaN, or inf)
        return diff, (diff == 0) | (np.isfinite(diff) & (diff <= atol + rtol * np.abs(y)))


def _rel_and_ulps(ra: np.ndarray, rb: np.ndarray, x: np.ndarray, y: np.ndarray, diff: np.ndarray,
                  both_nan: np.ndarray | None, ulp_dtype: np.dtype) -> tuple[float, float]:  # fmt: skip
    """A block's largest relative difference (over ``y != 0``) and largest difference in ulps of ``ulp_dtype``."""
    rel = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        if both_nan is None:
            # every value finite: |y| made infinite where y is 0 puts those elements at 0 (a finite difference over
            # an infinity), the same maximum as over y != 0 alone (0 when there is none), without gathering them
            ay = np.abs(y)
            ay[ay == 0] = np.inf
            np.divide(diff, ay, out=ay)
            rel = float(ay.max())
        else:
            nz = y != 0
            nz &= ~both_nan  # NaN in place matches: no relative difference
            if np.any(nz):
                r = diff[nz] / np.abs(y[nz])
                # inf / inf (a finite value against an infinity) is no agreement: infinitely far, not NaN (a NaN
                # would hide the block's largest finite value from max())
                rel = float(np.max(np.where(np.isnan(r), np.inf, r)))
        # the values' own bits when they are stored in the dtype the ulps count in (no rounding to do)
        steps = _steps(ra if ra.dtype == ulp_dtype else x, rb if rb.dtype == ulp_dtype else y, ulp_dtype)
        # near zero (a sign flip of two tiny values), a difference is measured in ulps of ULP_FLOOR, as everywhere
        # in posenc: -1e-8 vs 1e-8 is a few hundred float32 ulps, not two billion
        np.minimum(steps, diff / tolerance.floor_spacing(ulp_dtype), out=steps)
        if both_nan is None:
            return rel, float(steps.max())
        steps[both_nan] = 0.0
        return rel, float(np.nanmax(np.where(np.isnan(steps), np.inf, steps)))


def _min_cosine(x: np.ndarray, y: np.ndarray) -> tuple[int, float]:
    """The row of a block whose cosine similarity is smallest (the first on ties), and that cosine."""
    with np.errstate(divide="ignore", invalid="ignore"):
        num = np.einsum("ij,ij->i", x, y)
        den = np.sqrt(np.einsum("ij,ij->i", x, x) * np.einsum("ij,ij->i", y, y))
        pos = den > 0
        if pos.all():  # no zero row: no elementwise x == y over the block for rows that need none
            cos = num / den
        else:
            cos = np.where(pos, num / np.where(pos, den, 1), np.where(np.all(x == y, axis=1), 1.0, 0.0))
    i = int(np.nanargmin(cos)) if not np.all(np.isnan(cos)) else 0
    return i, float(cos[i])


@dataclass
class CompareResult:
    shape_a: tuple[int, ...]
    shape_b: tuple[int, ...]
    same: bool
    atol: float
    rtol: float
    reason: str = ""
    max_abs: float = 0.0
    max_abs_at: tuple[int, ...] | None = None
    value_a: float | None = None
    value_b: float | None = None
    max_rel: float = 0.0
    max_ulp: float = 0.0
    mean_abs: float = 0.0
    min_cosine: float | None = None
    min_cosine_row: int | None = None
    mismatched: int = 0
    total: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    #: set when the values differ but lie within the float32 formula's error of a spec (posenc_cli.inspect.tolerance)
    formula: dict[str, Any] | None = None
    #: ``bfloat16`` or ``float16`` when one table holds that dtype's values and the other, rounded to it, agrees
    #: (the values differ by the rounding alone)
    precision: str = ""
    #: what a verdict of SAME took into account beyond the values (a model that permutes q/k), in words
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        def clean(v: Any) -> Any:
            if isinstance(v, float) and not np.isfinite(v):
                return str(v)
            if isinstance(v, tuple):
                return list(v)
            return v

        return {k: clean(v) for k, v in self.__dict__.items()}


def default_atol(a: np.dtype, b: np.dtype) -> float:
    """Two ulps of 1.0 in the coarser dtype: what two correct implementations may differ by
    (:func:`posenc_cli.inspect.tolerance.default_atol`)."""
    return tolerance.default_atol(coarser_dtype(a, b))


def compare(a: np.ndarray, b: np.ndarray, atol: float | None = None, rtol: float = 0.0) -> CompareResult:
    """Compare ``a`` with the reference ``b`` block by block."""
    atol = default_atol(a.dtype, b.dtype) if atol is None else atol
    res = CompareResult(tuple(a.shape), tuple(b.shape), False, atol, rtol)
    if a.shape != b.shape:
        res.reason = f"shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}"
        return res
    ulp_dtype = coarser_dtype(a.dtype, b.dtype)
    res.total = int(a.size)
    if a.size == 0:
        res.same = True
        return res
    a2 = a.reshape(a.shape[0], -1) if a.ndim != 1 else a.reshape(-1, 1)
    b2 = b.reshape(b.shape[0], -1) if b.ndim != 1 else b.reshape(-1, 1)
    abs_sum = 0.0
    min_cos = np.inf
    step = rows_per_block(a2.shape[1])  # the metrics' two dozen passes over a block run in cache
    for start in range(0, a2.shape[0], step):
        ra, rb = a2[start : start + step], b2[start : start + step]
        x = np.asarray(ra, dtype=np.float64)
        y = np.asarray(rb, dtype=np.float64)
        finite = bool(np.isfinite(x).all() and np.isfinite(y).all())
        both_nan = None if finite else np.isnan(x) & np.isnan(y)
        if finite and not rtol:  # no NaN in diff: every element is within atol when the largest is (no mask)
            diff = abs_difference(x, y, None)
            flat = int(np.argmax(diff))
            if not diff.flat[flat] <= atol:
                res.mismatched += int(np.count_nonzero(diff > atol))
        else:
            diff, within = _differences(x, y, both_nan, atol, rtol)
            res.mismatched += int(within.size - np.count_nonzero(within))
            flat = int(np.argmax(diff))
        abs_sum += float(np.sum(diff)) if finite else float(np.sum(diff[np.isfinite(diff)]))
        if diff.flat[flat] > res.max_abs or res.max_abs_at is None:
            r, c = divmod(flat, diff.shape[1])
            res.max_abs = float(diff.flat[flat])
            # every index of the element: (row, column), or (head, row, column) of a 3-D table
            res.max_abs_at = (start + r, *map(int, np.unravel_index(c, a.shape[1:]))) if a.ndim >= 2 else (start + r,)
            res.value_a, res.value_b = float(x.flat[flat]), float(y.flat[flat])
        rel, ulp = _rel_and_ulps(ra, rb, x, y, diff, both_nan, ulp_dtype)
        res.max_rel, res.max_ulp = max(res.max_rel, rel), max(res.max_ulp, ulp)
        if a.ndim >= 2:
            i, cos = _min_cosine(x, y)
            if cos < min_cos:
                min_cos, res.min_cosine_row = cos, start + i
    res.mean_abs = abs_sum / res.total
    # None as well when no row has a cosine (every row holds an infinity, e.g. a causal ALiBi mask)
    res.min_cosine = None if a.ndim < 2 or res.min_cosine_row is None else min_cos
    res.same = res.mismatched == 0
    if not res.same:
        res.reason = f"{res.mismatched} of {res.total} elements differ by more than atol + rtol*|b|"
    return res
