"""Accurate sin/cos of ``t * w`` for integer positions ``t`` and real frequencies ``w``.

Why: the usual ``np.sin(t * w)`` rounds the angle ``t * w`` to float64 first, an absolute error of up to
``|t w| * 2**-53`` (2e-9 at t = 2**24), which is dozens of float32 ulps for small results and hundreds of
float64 ulps. Float32 angle formulas (PyTorch tutorial, HF RoPE) are off by ~1e-2 at such positions.

How: the frequency is known to ~100 bits as a double-double ``w_hi + w_lo`` (computed once per column with
:mod:`decimal`). ``w_hi`` is split into a head with few enough bits that ``t * head`` is exact; the angle is
then reduced modulo 2*pi by Cody-Waite with 2*pi in four 22-bit pieces, so the reduced angle ``r`` is known
as a double-double ``r_hi + r_lo`` to ~2**-60 absolute. Finally
``sin(r_hi + r_lo) = sin(r_hi) + cos(r_hi) * r_lo`` (and likewise for cos), accurate to about 1 float64 ulp.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Hashable
from decimal import Decimal, localcontext
from typing import Any, TypeVar

import numpy as np

_TWO_PI_DIGITS = "6.283185307179586476925286766559005768394338798750211641949889184615632812572417997256069650684234136"


def _split_decimal(value: Decimal, pieces: int, bits: int) -> tuple[float, ...]:
    """``value`` as floats whose first ``pieces - 1`` have at most ``bits`` significant bits."""
    out = []
    rest = value
    for _ in range(pieces - 1):
        x = float(rest)
        m, e = math.frexp(x)
        head = math.ldexp(math.floor(m * 2.0**bits), e - bits)
        out.append(head)
        rest = rest - Decimal(head)
    out.append(float(rest))
    return tuple(out)


with localcontext() as _ctx:
    _ctx.prec = 80
    #: 2 pi to 100 digits, for frequency formulas that need it exactly (e.g. RoPE llama3 wavelengths).
    TWO_PI = _TWO_PI = Decimal(_TWO_PI_DIGITS)
    _C1, _C2, _C3, _C4 = _split_decimal(_TWO_PI, 4, 22)
    _INV_TWO_PI = float(1 / _TWO_PI)


#: Elements per chunk in :func:`sincos` (its temporaries then fit in L2).
_CHUNK = 1 << 13


def geometric(first: Decimal, ratio: Decimal, n: int) -> list[Decimal]:
    """``first * ratio**k`` for ``k < n`` by repeated multiplication, in the caller's Decimal context.

    Every frequency formula here is geometric in ``k``; one ``exp`` for the ratio and ``n`` products instead of
    ``n`` exps (~0.4 ms instead of ~50 ms for 512 frequencies at 60 digits). Each product rounds once, so the
    relative error is at most ``n`` units of the context's last digit (1e-57 for 512 values at 60 digits), far
    below the ~1e-32 a double-double keeps: the float64 pairs are the same.
    """
    out = []
    value = first
    for _ in range(n):
        out.append(value)
        value = value * ratio
    return out


def double_double(values: list[Decimal]) -> tuple[np.ndarray, np.ndarray]:
    """Split high-precision decimals into float64 ``hi`` and ``lo`` parts (``hi + lo`` ~ value to ~106 bits).

    New arrays on every call; the split of the same values is kept (:func:`_double_double`): reading a model's
    config builds its frequencies once per layer type and length, most with the same base and width."""
    hi, lo = _double_double(tuple(values))
    return hi.copy(), lo.copy()


@functools.lru_cache(maxsize=256)
def _double_double(values: tuple[Decimal, ...]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`double_double` of ``values`` (a tuple: the cache's key; equal decimals split alike). Each value
    costs ~10 us (``float`` of a 60-digit decimal parses its string), its hash ~0.5 us."""
    hi = np.array([float(v) for v in values], dtype=np.float64)
    with localcontext() as ctx:
        ctx.prec = 80
        lo = np.array([float(v - Decimal(float(h))) for v, h in zip(values, hi)], dtype=np.float64)
    return hi, lo


#: Frequency pairs kept by :func:`frequencies_once`, at most.
FREQ_CACHE = 256
_FREQS: dict[Hashable, tuple[np.ndarray, np.ndarray]] = {}


def frequencies_once(
    key: Hashable, compute: Callable[[], tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """``compute()`` (a double-double of frequencies), computed once per ``key`` and shared read-only.

    A kind's frequencies follow from its parameters alone; evaluating them to 60 digits costs ~0.5 ms (the
    Decimal arithmetic and the hash of 60-digit decimals for :func:`_double_double`'s key), and check, compare,
    identify and every block reader build the same encoding again and again. ``key`` must hold every value
    ``compute`` reads (a kind passes its class and all its parameters)."""
    try:
        got = _FREQS.get(key)
    except TypeError:  # a parameter that cannot be a key (a list given to the class directly): not kept
        hi, lo = compute()
        return np.array(hi, dtype=np.float64), np.array(lo, dtype=np.float64)
    if got is None:
        hi, lo = compute()
        hi, lo = np.array(hi, dtype=np.float64), np.array(lo, dtype=np.float64)
        hi.flags.writeable = lo.flags.writeable = False  # shared: nobody may write into them
        got = (hi, lo)
        if len(_FREQS) >= FREQ_CACHE:
            for old in list(_FREQS)[: FREQ_CACHE // 4]:  # the oldest quarter (list() is one atomic copy)
                _FREQS.pop(old, None)
        _FREQS[key] = got
    return got


def _head(w: np.ndarray, bits: int) -> np.ndarray:
    """``w`` truncated to ``bits`` significant bits (exactly representable)."""
    m, e = np.frexp(w)
    return np.ldexp(np.trunc(m * 2.0**bits), e - bits)


def sincos(t: np.ndarray, w_hi: np.ndarray, w_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Accurate ``sin(t w)`` and ``cos(t w)`` as float64 arrays of shape ``(len(t), len(w))``.

    ``t`` holds integer-valued float64 positions with ``|t| < 2**31``; ``w_hi + w_lo`` the frequencies. Both
    come out of one range reduction (a caller that wants one of them keeps the other: :class:`LastBlock`).
    """
    t = np.asarray(t, dtype=np.float64)
    w_hi, w_lo = np.asarray(w_hi, dtype=np.float64), np.asarray(w_lo, dtype=np.float64)
    step = max(1, _CHUNK // max(1, w_hi.size))
    if len(t) <= step:
        return sincos_reduced(*reduce(t[:, None], w_hi, w_lo))
    # Row chunks keep the ~15 temporaries in cache: 2-3x faster than one pass over a big array.
    s, c = np.empty((len(t), w_hi.size)), np.empty((len(t), w_hi.size))
    for a in range(0, len(t), step):
        s[a : a + step], c[a : a + step] = sincos_reduced(*reduce(t[a : a + step, None], w_hi, w_lo))
    return s, c


def sincos_pairs(t: np.ndarray, w_hi: np.ndarray, w_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Like :func:`sincos` but elementwise: ``sin(t[i] w[i])`` and ``cos(t[i] w[i])`` (arrays broadcast)."""
    return sincos_reduced(*reduce(np.asarray(t, dtype=np.float64), np.asarray(w_hi), np.asarray(w_lo)))


def reduce(t: np.ndarray, w_hi: np.ndarray, w_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The angle ``t * (w_hi + w_lo)`` reduced modulo 2 pi into about ``[-pi, pi]``, as a double-double
    ``(r_hi, r_lo)`` with ``|r_lo| <= ulp(r_hi) / 2`` (absolute error ~2**-60); arrays broadcast."""
    t = np.asarray(t, dtype=np.float64)
    tmax = float(np.max(np.abs(t))) if t.size else 0.0
    t_bits = max(1, math.ceil(math.log2(tmax + 1)))
    if t_bits > 31:
        raise ValueError("positions must stay below 2**31 for exact range reduction")
    head = _head(w_hi, 53 - t_bits)
    tail = w_hi - head  # exact: the low t_bits bits of w_hi
    p = t * head  # exact: t_bits + (53 - t_bits) bits
    q = t * tail  # |q| <= |p| * 2**(t_bits - 53); its rounding error is ~|t w| * 2**(2 t_bits - 106)
    n = np.rint((p + q) * _INV_TWO_PI)
    # Cody-Waite: each n * Ck is exact (<= 31 + 22 bits) and the first two subtractions are exact.
    hi = p - n * _C1
    hi -= n * _C2
    del p
    lo = t * w_lo - n * _C4
    for b in (q, -n * _C3):  # two-sum each remaining term into hi, carrying the error into lo
        s_ = hi + b
        bb = s_ - hi
        lo += (hi - (s_ - bb)) + (b - bb)
        hi = s_
    del q, n, s_, bb, b
    s_ = hi + lo  # renormalise so that |lo| <= ulp(hi) / 2
    lo = lo - (s_ - hi)
    return s_, lo


def sincos_reduced(hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sin`` and ``cos`` of a reduced angle ``hi + lo`` (from :func:`reduce`), to about 1 float64 ulp."""
    sin_hi = np.sin(hi)
    cos_hi = np.cos(hi)
    return sin_hi + cos_hi * lo, cos_hi - sin_hi * lo


_T = TypeVar("_T", bound=tuple)


class LastBlock:
    """Each thread's last computed block of rows, kept for the next request of the same block.

    sin and cos of one block of angles come out of one computation (:func:`sincos`), and a reader of a table's
    tensors block by block (a comparison, a check) asks for the cos rows and then the sin rows of the same
    positions: the second request is then free. Blocks of more than :attr:`MAX_ELEMENTS` values are not kept
    (a whole long table asked for at once would stay in memory). The kept arrays are shared: callers must not
    write into them.
    """

    #: values of the largest block kept (all its arrays together): 2**21 float64 values are 16 MiB
    MAX_ELEMENTS = 1 << 21

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()`` (a tuple of arrays), or what it returned for the same ``key`` last time in this thread."""
        last: tuple[Any, _T] | None = getattr(self._local, "last", None)
        if last is not None and last[0] == key:
            return last[1]
        value = compute()
        self._local.last = (key, value) if sum(v.size for v in value) <= self.MAX_ELEMENTS else None
        return value
