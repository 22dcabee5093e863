r"""Fast rows of ``sin(t w) + i cos(t w)`` by angle addition from exactly computed seeds.

.. math::

    u(t_0 + j) = \sin((t_0 + j) w) + i \cos((t_0 + j) w) = u(t_0) \cdot \overline{z(j)},
    \qquad z(j) = \cos(j w) + i \sin(j w)

For a step of ``B`` rows starting at ``t0`` the seed ``u(t0)`` (one value per column) comes from the exact
range-reduced :func:`._trig.sincos`, and the table ``conj(z(j))`` for ``j`` in ``[0, B)`` (also exact, shared
by every step) is built once. One complex multiply per (sin, cos) pair, in float64, then a cast on
assignment: 6 flops per two outputs instead of a range reduction per element, about 1 ns per element.

Accuracy (``eps = 2**-53``). Seeds and table entries are within 1 float64 ulp (<= eps for values below 1),
so each is off by a complex error of modulus <= sqrt(2) eps; the multiply ``re = a c - b d`` adds at most
``eps (|a c| + |b d|) + eps |re| <= 2 eps`` per component (Cauchy-Schwarz: ``|a c| + |b d| <= 1``). The
absolute error is therefore ``E <= (2 sqrt(2) + 2) eps < 5 eps`` at *any* position: the seed is exact however
large ``t0`` is, so nothing grows with the position. A result with ``|v| >= 2**(m - 48)`` (``m`` mantissa bits
of the output dtype) has an output ulp >= ``2**-48 = 32 eps``, so ``E`` is under half an ulp (even with seeds
2 ulp off: ``E < 8 eps``) and the final rounding lands within 1 ulp of the exact value. Results below
``tiny = 2**(m - 47)`` (float32: ``2**-24``; near the zeros of sin and cos, about 4 elements in 10**8, where
``E`` could be several output ulps) are detected after each step and recomputed exactly, element by element.
Float64 outputs must not use this kernel (``E`` is several float64 ulps), so :mod:`.sinusoidal` keeps the
exact path for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import _trig

#: Target size of the shared table ``conj(z(j))`` (complex128): large steps amortise the exact seeds;
#: the table is read-only and shared by all threads, so it only has to fit in the last-level cache.
TABLE_BYTES = 1 << 21


def step_rows(n_freqs: int) -> int:
    """Rows per angle-addition step for ``n_freqs`` columns."""
    return int(max(8, min(1024, TABLE_BYTES // (16 * max(1, n_freqs)))))


def tiny_threshold(dtype: np.dtype) -> float | None:
    """Results below this magnitude must be recomputed exactly for ``dtype`` (None: never needed)."""
    dtype = np.dtype(dtype)
    if dtype.name == "bfloat16":
        import ml_dtypes

        fi: Any = ml_dtypes.finfo(dtype)
    else:
        fi = np.finfo(dtype)
    if fi.nmant >= 52:
        raise ValueError("angle addition is not accurate enough for float64 outputs; use the exact path")
    tiny = 2.0 ** (fi.nmant - 47)
    # Below the smallest subnormal spacing no result can be off by an ulp: nothing to check.
    return None if tiny <= float(fi.smallest_subnormal) else tiny


class AngleAdder:
    """Angle addition for fixed frequencies ``w_hi + w_lo`` (double-double); thread-safe once built.

    Steps are aligned to absolute positions (multiples of ``rows``), and a result is recomputed with the
    exact path whenever it is tiny, so every value depends only on its position and column: any split of a table
    into blocks (threads, streaming writers, ``check``) gives the same bits.
    """

    def __init__(self, w_hi: np.ndarray, w_lo: np.ndarray, rows: int | None = None) -> None:
        self.w_hi = np.ascontiguousarray(w_hi, dtype=np.float64)
        self.w_lo = np.ascontiguousarray(w_lo, dtype=np.float64)
        self.n = len(self.w_hi)
        self.rows = rows or step_rows(self.n)
        s, c = _trig.sincos(np.arange(self.rows, dtype=np.float64), self.w_hi, self.w_lo)
        table = np.empty((self.rows, self.n), dtype=np.complex128)
        table.real = c
        table.imag = -s
        self.table = table  # conj(z(j)) = cos(j w) - i sin(j w); row 0 is exactly 1 + 0i

    def fill(self, t_start: int, out: np.ndarray, tiny: float | None) -> None:
        """Write ``sin(t w) + i cos(t w)`` for ``t`` in ``[t_start, t_start + len(out))`` into ``out``.

        ``out``: a C-contiguous complex64 or complex128 array of shape ``(rows, n)``. ``tiny``: results of
        smaller magnitude are recomputed exactly (see :func:`tiny_threshold`).
        """
        self._run(t_start, out.shape[0], out, tiny, None)

    def fill_steps(
        self, t_start: int, n_rows: int, tiny: float | None, emit: Callable[[int, int, np.ndarray], None]
    ) -> None:
        """The same values, a step at a time in a reused complex128 scratch: ``emit(a, b, values)``.

        ``a``, ``b`` are rows relative to ``t_start``; ``values`` is only valid during the call.
        """
        scratch = np.empty((min(self.rows, n_rows), self.n), dtype=np.complex128)
        self._run(t_start, n_rows, scratch, tiny, emit)

    def _run(
        self,
        t_start: int,
        n_rows: int,
        target: np.ndarray,
        tiny: float | None,
        emit: Callable[[int, int, np.ndarray], None] | None,
    ) -> None:
        if n_rows <= 0:
            return
        B = self.rows
        first = (t_start // B) * B  # steps start at multiples of B: results independent of the split
        t0 = np.arange(first, t_start + n_rows, B, dtype=np.float64)
        s0, c0 = _trig.sincos(t0, self.w_hi, self.w_lo)
        seeds = np.empty((len(t0), self.n), dtype=np.complex128)
        seeds.real = s0
        seeds.imag = c0
        del s0, c0
        real_dtype = target.real.dtype
        abs_buf = np.empty((B, 2 * self.n), dtype=real_dtype) if tiny else None
        narrow = emit is None and target.dtype != np.complex128
        scratch = np.empty((min(B, n_rows), self.n), dtype=np.complex128) if narrow else None
        for i in range(len(t0)):
            step = first + i * B
            ta, tb = max(step, t_start), min(step + B, t_start + n_rows)  # absolute positions of this piece
            a, b = ta - t_start, tb - t_start
            blk = target[a:b] if emit is None else target[: b - a]
            if scratch is None:
                np.multiply(self.table[ta - step : tb - step], seeds[i], out=blk)
            else:
                # Multiply in complex128 then cast-copy: ~20% faster than NumPy's buffered cast into ``blk``.
                np.multiply(self.table[ta - step : tb - step], seeds[i], out=scratch[: b - a])
                np.copyto(blk, scratch[: b - a], casting="same_kind")
            if tiny:
                flat = blk.view(real_dtype)
                assert abs_buf is not None
                buf = abs_buf[: b - a]
                np.abs(flat, out=buf)
                if buf.min() < tiny:
                    self._fix(ta, flat, buf < tiny)
            if emit is not None:
                emit(a, b, blk)

    def _fix(self, t0: int, flat: np.ndarray, mask: np.ndarray) -> None:
        """Recompute the masked results exactly (too close to a zero of sin or cos for angle addition).

        ``flat``: a step's values as reals, columns ``(sin w_0, cos w_0, sin w_1, ...)``; rows from ``t0``.
        """
        rows, cols = np.nonzero(mask)
        k = cols // 2
        s, c = _trig.sincos_pairs(t0 + rows.astype(np.float64), self.w_hi[k], self.w_lo[k])
        flat[rows, cols] = np.where(cols % 2 == 0, s, c)
