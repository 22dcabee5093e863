r"""Fast rows of ``sin(t w) + i cos(t w)`` by angle addition from exactly computed seeds.

.. math::

    u(t) = \sin(t w) + i \cos(t w), \qquad
    u(T + b a + j) = \big(u(T) \cdot \overline{z(b a)}\big) \cdot \overline{z(j)}, \qquad
    z(j) = \cos(j w) + i \sin(j w)

Steps of ``B`` rows start at absolute positions ``T`` that are multiples of ``B``; the seed ``u(T)`` (one value
per column) comes from the exact range-reduced :func:`._trig.sincos`. Inside a step, rows go in sub-steps of
``b``: the sub-step seed ``S_a = u(T) conj(z(b a))`` is one complex multiply per column, and the rows of the
sub-step are ``S_a conj(z(j))`` for ``j < b``. Both tables (``conj(z(b a))``, ``a < B / b``, and
``conj(z(j))``, ``j < b``, each exact) are small, so a chunk of rows is one broadcast complex multiply into a
cache-sized scratch, which the caller casts into its output: two passes per element, ~6 flops per two outputs
instead of a range reduction per element. An optional real ``scale`` (RoPE's attention scaling) multiplies the
seeds.

Accuracy (``eps = 2**-53``). Seeds and table entries are within 1 float64 ulp (<= eps for values below 1), so
each is off by a complex error of modulus <= sqrt(2) eps; a complex multiply ``re = a c - b d`` adds at most
``eps (|a c| + |b d|) + eps |re| <= 2 eps`` per component (Cauchy-Schwarz: ``|a c| + |b d| <= 1``). The
sub-step seed is thus off by ``<= (2 sqrt(2) + 2) eps``, a row by ``E <= (3 sqrt(2) + 4) eps < 8.3 eps``, and
with a scaled seed ``E < 10 s eps`` (``s`` the scale): at *any* position, since the seed is exact however large
``T`` is. A result with ``|v| >= s 2**(m - 47)`` (``m`` mantissa bits of the output dtype) has an output ulp
``> s 2**-48 = 32 s eps``, so ``E`` is under a third of an ulp and the final rounding lands within 1 ulp of the
exact value. Results below that (near the zeros of sin and cos, about 4 elements in 10**8 in float32, where ``E``
could be several output ulps) are recomputed exactly (:meth:`AngleAdder.refiner`). They are found in the output
as the caller placed it, while a chunk is still in cache: two read-only integer minima of its bits (as unsigned
integers the smallest non-negative value has the smallest bits; as signed integers the negative value nearest
zero is the most negative), ~0.35 ns per element; predicting them from the angles instead (``B sum(w) / (pi/2)``
zero crossings per step, ~3% of the elements of a 1024-wide table) measured ~2 ns per element in NumPy.

Float64 outputs must not use this kernel (``E`` is several float64 ulps), so the kinds keep the exact path for
them. Every value depends only on its position and column (steps and sub-steps are aligned to absolute
positions, and NumPy's complex multiply gives the same bits wherever an element sits in the inner loop), so any
split of a table into blocks (threads, streaming writers, ``check``) gives the same bits.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import _trig

#: Rows per exactly seeded step (steps start at multiples of it).
STEP_ROWS = 1024
#: Bytes of the complex128 scratch a chunk is computed into. The chunk-size sweep of tests/benchmarks/passes.py
#: (and whole 131072 x 1024 tables on two threads) put the best at 0.5-1.5 MiB: below, NumPy's per-call overhead
#: (~1-2 us a call, a dozen calls a chunk) dominates; above, the scratch no longer stays in cache.
CHUNK_BYTES = 1 << 20
#: Steps whose exact seeds are computed together (:meth:`AngleAdder._seed`), at most (and at most 512 KiB of
#: seeds a batch, for wide tables).
SEED_BATCH = 64
#: Largest sub-step (rows of the fine table ``conj(z(j))``).
MAX_SUB_ROWS = 32


def step_rows(n_freqs: int) -> int:
    """Rows per exactly seeded angle-addition step (the same for every width)."""
    return STEP_ROWS


def chunk_rows(n_freqs: int) -> int:
    """Rows per chunk of ``n_freqs`` columns: about :data:`CHUNK_BYTES` of complex128, a whole number of
    sub-steps."""
    sub = sub_rows(n_freqs)
    rows = max(sub, CHUNK_BYTES // (16 * max(1, n_freqs)))
    return rows - rows % sub


def sub_rows(n_freqs: int) -> int:
    """Rows per sub-step: a power of two dividing :data:`STEP_ROWS`, the fine table within CHUNK_BYTES."""
    rows = MAX_SUB_ROWS
    while rows > 1 and rows * 16 * n_freqs > CHUNK_BYTES:
        rows //= 2
    return rows


def worth(length: int, n_freqs: int) -> bool:
    """Whether a table of ``length`` rows amortises the exact tables (else the exact path is as fast); a
    function of the table, not of the rows asked for, so that every block of a table takes the same path."""
    sub = sub_rows(n_freqs)
    return n_freqs >= 1 and length >= 4 * (STEP_ROWS // sub + sub)


def reaches(first: int, last: int) -> bool:
    """Whether every step start for positions ``first..last`` is in the range of exact seeds (``|T| < 2**31``):
    steps start at multiples of :data:`STEP_ROWS` at or below a position, so a table starting within a step of
    ``-2**31`` takes the exact path."""
    return (first // STEP_ROWS) * STEP_ROWS > -(2**31) and last < 2**31


@functools.lru_cache(maxsize=16)
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


def usable(w_hi: np.ndarray, dtype: np.dtype, scale: float = 1.0) -> bool:
    """Whether this kernel serves frequencies ``w_hi`` and output ``dtype`` (else: the exact path)."""
    return narrow(dtype) and serves(w_hi, scale)


def narrow(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is an output this kernel rounds to correctly (a float narrower than float64)."""
    return np.dtype(dtype).itemsize < 8 and np.dtype(dtype).kind in "fV"


def serves(w_hi: np.ndarray, scale: float = 1.0) -> bool:
    """Whether this kernel's error bound holds for frequencies ``w_hi`` and attention scaling ``scale``."""
    # E and the subnormal argument scale with ``scale``
    return bool(np.all(np.isfinite(w_hi))) and (scale == 0 or 2.0**-64 <= scale <= 16)


#: Adders kept for frequencies asked for again (:func:`shared`), the most recently used last.
SHARED_ADDERS = 8
_shared: dict[tuple[bytes, bytes], AngleAdder] = {}
_shared_lock = threading.Lock()


def _forget_shared_lock_in_child() -> None:
    """A fork while another thread held a lock (this one, or an adder's seed lock) would leave it held forever in
    the child: the child starts with no shared adders and a new lock (a DataLoader worker, a forked mutant)."""
    global _shared_lock
    _shared_lock = threading.Lock()
    _shared.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_shared_lock_in_child)


def shared(w_hi: np.ndarray, w_lo: np.ndarray) -> AngleAdder:
    """The :class:`AngleAdder` of frequencies ``w_hi + w_lo``: one object for equal frequencies (compared bit for
    bit), of the last :data:`SHARED_ADDERS` asked for. Its exact tables and seeds (three range reductions, ~0.6 ms
    for 64 frequencies) then serve every encoding of the same base and width: a check, a comparison and each
    identification candidate build their own encoding of the same table. An adder is read-only once built (its
    seed cache and scratch are guarded per thread), so sharing it changes no value."""
    w_hi = np.ascontiguousarray(w_hi, dtype=np.float64)
    w_lo = np.ascontiguousarray(w_lo, dtype=np.float64)
    key = (w_hi.tobytes(), w_lo.tobytes())
    with _shared_lock:
        adder = _shared.pop(key, None)
        if adder is not None:
            _shared[key] = adder  # the most recently used last
            return adder
    adder = AngleAdder(w_hi, w_lo)
    with _shared_lock:
        adder = _shared.setdefault(key, adder)  # another thread's, if it built the same one meanwhile
        while len(_shared) > SHARED_ADDERS:
            del _shared[next(iter(_shared))]
    return adder


class AngleAdder:
    """Angle addition for fixed frequencies ``w_hi + w_lo`` (double-double);
    thread-safe once built (each call has its own scratch)."""

    def __init__(self, w_hi: np.ndarray, w_lo: np.ndarray, rows: int | None = None) -> None:
        self.w_hi = np.ascontiguousarray(w_hi, dtype=np.float64)
        self.w_lo = np.ascontiguousarray(w_lo, dtype=np.float64)
        self.n = len(self.w_hi)
        self.rows = rows or step_rows(self.n)
        self.sub = math.gcd(sub_rows(self.n), self.rows)
        self.chunk = max(self.sub, chunk_rows(self.n) - chunk_rows(self.n) % self.sub)
        self.fine = _conj_z(np.arange(self.sub, dtype=np.float64), self.w_hi, self.w_lo)
        self.coarse = _conj_z(np.arange(0, self.rows, self.sub, dtype=np.float64), self.w_hi, self.w_lo)
        self._seed_batches: dict[int, np.ndarray] = {}
        self.seed_batch = max(1, min(SEED_BATCH, (1 << 19) // (16 * max(1, self.n))))
        self._local = threading.local()
        self._lock = threading.Lock()  # cos 1, sin 0 exactly: never near a zero of cos

    # ----- seeds and scratch ------------------------------------------------------------------------
    def _seed(self, index: int) -> np.ndarray:
        """``sin + i cos`` at the start of step ``index`` (position ``index * B``), exactly range-reduced.

        Seeds are computed up to :data:`SEED_BATCH` steps at a time and the last 4 batches kept: a table is filled
        a few steps per call (threads, streaming writers), and one range reduction of a single row costs as much
        NumPy overhead as one of a hundred rows."""
        size = self.seed_batch
        batch, i = divmod(index, size)
        seeds = self._seed_batches.get(batch)
        if seeds is None:
            t0 = np.arange(batch * size, (batch + 1) * size, dtype=np.float64) * self.rows
            t0[np.abs(t0) >= 2**31] = 0.0  # steps out of range are never used (see :func:`reaches`)
            s0, c0 = _trig.sincos(t0, self.w_hi, self.w_lo)
            seeds = np.empty(s0.shape, dtype=np.complex128)
            seeds.real = s0
            seeds.imag = c0
            with self._lock:  # threads fill neighbouring blocks: one may evict while another inserts
                if len(self._seed_batches) >= 4:
                    self._seed_batches.pop(next(iter(self._seed_batches)), None)
                self._seed_batches[batch] = seeds
        return seeds[i]

    def _buffers(self) -> tuple[np.ndarray, np.ndarray]:
        """This thread's chunk scratch and sub-step seeds (allocated once per thread, not once per call)."""
        bufs = getattr(self._local, "bufs", None)
        if bufs is None:
            b, n = self.sub, self.n
            bufs = (
                np.empty((self.chunk // b, b, n), dtype=np.complex128),
                np.empty((self.rows // b, n), dtype=np.complex128),
            )
            self._local.bufs = bufs
        return bufs

    # ----- the rows --------------------------------------------------------------------------------
    def chunks(self, t_start: int, n_rows: int, scale: float = 1.0) -> Iterator[tuple[int, int, np.ndarray]]:
        """``(a, b, u)`` covering rows ``[0, n_rows)`` in order: ``u[i, k] = scale * (sin + i cos)`` of
        ``(t_start + a + i) w_k``, complex128, valid until the next item (a reused, cache-sized scratch).

        Values near a zero of sin or cos are not yet exact enough: the caller places ``u`` in its output and
        passes the placed rows to :meth:`refine`, as :meth:`fill` does.
        """
        if n_rows <= 0:
            return
        B, b, n = self.rows, self.sub, self.n
        first = (t_start // B) * B
        steps = -(-(t_start + n_rows - first) // B)
        per = self.chunk // b  # sub-steps per chunk
        scratch, sub_seeds = self._buffers()
        for i in range(steps):
            step = first + i * B
            seed = self._seed(step // B)
            if scale != 1.0:
                seed = seed * scale
            ja, jb = max(step, t_start) - step, min(step + B, t_start + n_rows) - step  # rows of this step
            a_first, a_end = ja // b, -(-jb // b)
            np.multiply(self.coarse[a_first:a_end], seed, out=sub_seeds[a_first:a_end])
            for a0 in range(a_first, a_end, per):
                a1 = min(a0 + per, a_end)
                m = a1 - a0
                np.multiply(sub_seeds[a0:a1, None, :], self.fine[None], out=scratch[:m])
                u = scratch[:m].reshape(m * b, n)
                lo, hi = max(ja, a0 * b), min(jb, a1 * b)  # rows of the step this chunk gives
                yield step + lo - t_start, step + hi - t_start, u[lo - a0 * b : hi - a0 * b]

    def at(self, t: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """``scale * (sin + i cos)`` of ``t[i] w_k`` for any integer positions ``t`` (int64, any order), complex128
        of shape ``(len(t), n)``: the same products as :meth:`chunks` (seed times its sub-step's coarse entry,
        then times the fine entry of the row), so the same bits as the rows of a block. A reader of sampled rows
        gets them in one pass instead of one block per row; like :meth:`chunks`, values near a zero of sin or cos
        still need :meth:`refiner` (called with the positions)."""
        t = np.asarray(t, dtype=np.int64)
        B, b = self.rows, self.sub
        step = t // B  # floor: steps start at multiples of B at or below the position, as in chunks
        j = t - step * B
        uniq, inv = np.unique(step, return_inverse=True)
        seeds = np.empty((len(uniq), self.n), dtype=np.complex128)
        for i, s in enumerate(uniq.tolist()):
            seeds[i] = self._seed(s)
        if scale != 1.0:
            seeds = seeds * scale
        sub = np.multiply(self.coarse[j // b], seeds[inv.reshape(-1)])
        return np.multiply(sub, self.fine[j % b], out=sub)

    def refine(self, out: np.ndarray, t_start: int, cols: Columns, tiny: float | None, scale: float = 1.0) -> None:
        """Recompute exactly the values of ``out`` (rows from position ``t_start``, placed from :meth:`chunks`)
        whose magnitude is below ``tiny * scale``: near a zero of sin or cos, where angle addition's absolute
        error can be several output ulps. ``cols`` says which frequency and part each column holds. In a loop,
        :meth:`refiner` does the same with its constants computed once."""
        self.refiner(cols, out.dtype, tiny, scale)(out, t_start)

    def refiner(
        self, cols: Columns, dtype: np.dtype, tiny: float | None, scale: float = 1.0
    ) -> Callable[[np.ndarray, Any], None]:
        """:meth:`refine` for outputs of ``dtype`` as a function ``(out, t_start)``.

        The test reads the bits: as unsigned integers, the smallest non-negative value has the smallest bits;
        as signed integers, the negative value nearest zero is the most negative. Two read-only integer
        minima (~0.3 ns per element) instead of a float ``abs`` into a buffer and its minimum.
        """
        if tiny is None or scale == 0:
            return lambda out, t_start: None
        size = np.dtype(dtype).itemsize
        limit = np.array(tiny * scale * (1 + 2.0**-6), dtype=dtype)  # rounded: still >= tiny * scale
        as_u, as_i = np.dtype(f"u{size}"), np.dtype(f"i{size}")
        u_bits = limit.view(as_u)[()]
        i_bits = np.array(-(1 << (8 * size - 1)) + int(u_bits), dtype=as_i)[()]
        runs, low = cols.runs, float(limit)
        minimum = np.minimum.reduce
        w_hi, w_lo = self.w_hi, self.w_lo

        def refine(out: np.ndarray, t_start: int | np.ndarray) -> None:
            """``t_start``: the position of the first row (rows in order), or each row's position (int64)."""
            for c0, c1 in runs:
                o = out[:, c0:c1]
                if minimum(o.view(as_u), axis=None) >= u_bits and minimum(o.view(as_i), axis=None) >= i_bits:
                    continue
                r, c = np.nonzero(np.abs(o.astype(np.float64)) < low)
                k, part = cols.freq[c0 + c], cols.part[c0 + c]
                t = t_start[r].astype(np.float64) if isinstance(t_start, np.ndarray) else t_start + r.astype(np.float64)
                s, cv = _trig.sincos_pairs(t, w_hi[k], w_lo[k])
                o[r, c] = np.where(part == 0, s, cv) * scale

        return refine

    def fill(self, t_start: int, out: np.ndarray, tiny: float | None, scale: float = 1.0) -> None:
        """Write ``scale * (sin(t w) + i cos(t w))`` for ``t`` in ``[t_start, t_start + len(out))`` into ``out``
        (complex64 or complex128, shape ``(rows, n)``)."""
        flat = out.view(out.real.dtype)
        refine = self.refiner(Columns.pairs(self.n), flat.dtype, tiny, scale)
        for a, b, u in self.chunks(t_start, out.shape[0], scale):
            np.copyto(out[a:b], u, casting="same_kind")
            refine(flat[a:b], t_start + a)


class Columns:
    """Which frequency ``freq[c]`` and part ``part[c]`` (0 sin, 1 cos) each output column ``c`` holds (-1:
    neither, e.g. a zero pad), and the runs of columns :meth:`AngleAdder.refine` must scan (frequency 0 excluded:
    its sin 0 and cos 1 are exact)."""

    def __init__(self, freq: np.ndarray, part: np.ndarray, w_hi: np.ndarray | None = None) -> None:
        self.freq = np.asarray(freq, dtype=np.int64)
        self.part = np.asarray(part, dtype=np.int64)
        scan = self.freq >= 0
        if w_hi is not None and len(w_hi):
            scan &= np.asarray(w_hi)[np.maximum(self.freq, 0)] != 0
        edges = np.flatnonzero(np.diff(np.r_[0, scan.astype(np.int8), 0]))
        self.runs = [(int(a), int(b)) for a, b in zip(edges[0::2], edges[1::2])]

    @classmethod
    def pairs(cls, n: int) -> Columns:
        """``(sin w_0, cos w_0, sin w_1, ...)``: a complex array viewed as reals."""
        c = np.arange(2 * n)
        return cls(c // 2, c % 2)


def _conj_z(j: np.ndarray, w_hi: np.ndarray, w_lo: np.ndarray) -> np.ndarray:
    """``cos(j w) - i sin(j w)`` (exact to ~1 ulp), shape ``(len(j), len(w))``; row ``j = 0`` is exactly 1."""
    s, c = _trig.sincos(j, w_hi, w_lo)
    z = np.empty(s.shape, dtype=np.complex128)
    z.real = c
    z.imag = -s
    return z
