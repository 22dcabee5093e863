r"""Structure measured from a positional-encoding table itself, on a bounded sample of its rows.

Diagnosis (:mod:`.diagnose`) and identification (:mod:`.identification`) share these primitives. Each reads only the
rows it needs (:func:`read_rows`: a fancy index on an array or memory map, ``rows(start, stop)`` runs on a lazy
tensor), so a 131072 x 1024 table costs a few hundred rows, never a pass over the file.

Frequencies
-----------
A column :math:`x_t = A\cos(\omega t + \varphi)` satisfies, for every lag :math:`m`,

.. math::

    x_{t+m} + x_{t-m} = 2\cos(m\omega)\,x_t ,

and a sin/cos pair :math:`z_t = c_t + i s_t = A e^{i(\omega t + \theta)}` satisfies
:math:`z_{t+m}\bar z_t = A^2 e^{im\omega}`. :func:`lag_sample` picks rows at lags :math:`m = 1, 2, 3, 5, 8, \dots`
(growing by about 1.5 up to half the table) around a few centres; :func:`pair_frequencies` and
:func:`column_frequencies` measure
:math:`m\omega` at each lag (the angle of the averaged product for pairs, the arc cosine of the least-squares
Chebyshev ratio for single columns), unwraps it with the estimate from the shorter lags and refits
:math:`\omega` by weighted least squares. The error is about (rounding error of the table) / (largest lag): on a
512-row float32 table the lowest frequency of base 10000 is known to ~1e-7 relative, so base 10000 and 10001
(1e-4 apart) are told apart by a factor of ~1000. Pairs (:func:`find_pairs`) are columns whose squares sum to a
constant; the sin member is the one whose angle advances with the position.

Other structure
---------------
:func:`geometric_fit` (frequencies :math:`\omega_0 \rho^k`), :func:`infer_base`, :func:`scaling_profile`
(ratio of two frequency sets: linear, power = base change / NTK, ramps in frequency (llama3) or index (YaRN),
per column), :func:`pair_layout` / :func:`duplicate_layout` (interleaved, split, half), :func:`toeplitz_fit` and
:func:`linear_distance_fit` (relative biases and per-head slopes), :func:`axis_groups` (grids flattened row-major),
:func:`value_summary`, :func:`effective_dtype` and :func:`nice_number`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import tolerance
from .metrics import abs_difference, coarser_dtype, finfo

TWO_PI = 2.0 * math.pi
#: Tables with at most this many elements are verified on every row; bigger ones on a sample.
FULL_CHECK_ELEMENTS = 1 << 22
#: Rows per block when a whole table is scanned.
SCAN_ROWS = 4096


# ----- reading ---------------------------------------------------------------------------------------------------
def n_rows(table: Any) -> int:
    """Rows (length of axis 0) of an array, memory map or lazy tensor."""
    return int(table.shape[0])


#: Sampled rows at most this far apart are read from a lazy tensor in one call, the rows between them included: a
#: call costs about what computing a few hundred rows of a generated table does (a rope row: ~0.2 us, a call ~50 us)
JOIN_GAP = 64


def read_rows(table: Any, rows: np.ndarray | list[int]) -> np.ndarray:
    """Rows ``rows`` (sorted or not) of ``table`` as float64 (integers are converted, bfloat16 too).

    Parameters
    ----------
    table : array_like or LazyTensor
        A NumPy array or memory map (read by fancy indexing: only those rows are touched), or an object with
        ``shape`` and ``rows(start, stop)`` (posenc's lazy tensors), read in runs of nearby rows
        (:data:`JOIN_GAP`).
    rows : array_like of int
        Row indices along axis 0.
    """
    idx = np.asarray(rows, dtype=np.int64)
    if isinstance(table, np.ndarray):
        if (
            idx.ndim == 1
            and idx.size > 1
            and idx[0] >= 0
            and idx[-1] - idx[0] == idx.size - 1
            and np.all(idx[1:] > idx[:-1])
        ):
            # a run of consecutive rows (every row of a small table): a slice converted in one pass, not a gather
            # then a conversion (the same values; always a new array, as the gather was)
            return np.array(table[int(idx[0]) : int(idx[-1]) + 1], dtype=np.float64)
        return np.asarray(table[idx], dtype=np.float64)
    if idx.size == 0:
        return np.empty((0, *table.shape[1:]), dtype=np.float64)
    if idx.ndim == 1 and idx[0] >= 0 and idx[-1] - idx[0] == idx.size - 1 and np.all(idx[1:] > idx[:-1]):
        # a run of consecutive rows (every row of a table identify verifies in full): one call converted in one
        # pass, not a gather and a scatter of the whole table (the same values, in a new array as before)
        return np.array(table.rows(int(idx[0]), int(idx[-1]) + 1), dtype=np.float64)
    take = getattr(table, "take", None)
    if take is not None:  # posenc's own tensors gather sampled rows in one call (encodings' Encoding.take)
        return np.asarray(take(idx), dtype=np.float64)
    order = np.argsort(idx, kind="stable")
    s = idx[order]
    out = np.empty((idx.size, *table.shape[1:]), dtype=np.float64)
    breaks = np.flatnonzero(np.diff(s) > JOIN_GAP) + 1  # rows this close are read in one call, the gap with them
    start = 0
    for stop in [*breaks.tolist(), s.size]:
        lo, hi = int(s[start]), int(s[stop - 1]) + 1
        block = np.asarray(table.rows(lo, hi), dtype=np.float64)
        out[order[start:stop]] = block[s[start:stop] - lo]
        start = stop
    return out


def spread_rows(n: int, count: int = 256, *, head: int = 32, tail: int = 8, seed: int = 0) -> np.ndarray:
    """A sorted sample of row indices: the first ``head``, the last ``tail``, geometric and random ones.

    The whole range when ``n <= count``. Deterministic (``seed``), so repeated runs read the same rows.
    """
    if n <= count:
        return np.arange(n, dtype=np.int64)
    # a new array each call (callers may change theirs); the sample itself is made once per arguments: identify
    # asks for the same few samples once per candidate (a random generator and a geomspace cost ~0.5 ms each)
    return _spread_rows(int(n), int(count), int(head), int(tail), int(seed)).copy()


@functools.lru_cache(maxsize=256)
def _spread_rows(n: int, count: int, head: int, tail: int, seed: int) -> np.ndarray:
    """:func:`spread_rows` for ``n > count``, shared read-only by every call with these arguments."""
    parts = [np.arange(min(head, n)), np.arange(max(0, n - tail), n)]
    parts.append(np.unique(np.geomspace(1, n - 1, num=count // 4).astype(np.int64)))
    rng = np.random.default_rng(seed)
    parts.append(rng.integers(0, n, size=max(0, count - sum(p.size for p in parts))))
    out = np.unique(np.concatenate(parts)).astype(np.int64)
    out.flags.writeable = False
    return out


def check_rows(n: int, width: int, *, count: int = 512) -> np.ndarray:
    """Rows on which a verdict is measured: all of them for small tables, else :func:`spread_rows`."""
    if n * max(width, 1) <= FULL_CHECK_ELEMENTS:
        return np.arange(n, dtype=np.int64)
    return spread_rows(n, count, head=64, tail=16)


# ----- the lag sample --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LagSample:
    """Rows chosen so that every lag ``m`` has triples ``(c - m, c, c + m)`` around a few centres ``c``.

    ``rows`` are the sorted row indices to read, ``pos`` their positions along the sampled axis (float64);
    ``minus[i]``, ``center[i]``, ``plus[i]`` index into ``rows`` for
    lag ``lags[i]``.
    """

    n: int
    rows: np.ndarray
    pos: np.ndarray
    lags: np.ndarray
    minus: list[np.ndarray] = field(default_factory=list)
    center: list[np.ndarray] = field(default_factory=list)
    plus: list[np.ndarray] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        """Whether at least one lag exists (three or more rows)."""
        return len(self.lags) > 0


def lag_sample(
    n: int,
    *,
    centers: int = 8,
    growth: float = tolerance.LAG_GROWTH,
    start: int = 0,
    stride: int = 1,
    exclude: Any = (),
) -> LagSample:
    """The rows :func:`pair_frequencies` and :func:`column_frequencies` need for a table of ``n`` positions.

    Parameters
    ----------
    n : int
        Positions available.
    centers : int
        Centres per lag (spread evenly over the rows where ``c +- m`` stays inside the table).
    growth : float
        Ratio between successive lags (1, 2, 3, 5, 8, ... for 1.5).
    start, stride : int
        Position ``p`` is table row ``start + stride * p`` (a grid axis inside a flattened grid).
    exclude : iterable of int
        Positions no triple may use (e.g. a padding row of zeros).

    Returns
    -------
    LagSample
        Shared by every call with the same arguments (identify asks for the same sample several times per table
        and per candidate; building one costs ~2 ms), so its arrays are read-only.
    """
    skip = tuple(sorted({int(e) for e in exclude}))
    return _lag_sample(int(n), int(centers), float(growth), int(start), int(stride), skip)


@functools.lru_cache(maxsize=256)
def _lag_sample(n: int, centers: int, growth: float, start: int, stride: int, exclude: tuple[int, ...]) -> LagSample:
    """:func:`lag_sample`, made once per arguments, its arrays read-only."""
    skip = np.array(exclude, dtype=np.int64)
    lags: list[int] = []
    m = 1
    while 2 * m <= n - 1:
        lags.append(m)
        m = max(m + 1, round(m * growth))
    triples = []
    for m in lags:
        c = np.unique(np.linspace(m, n - 1 - m, num=centers + skip.size).round().astype(np.int64))
        if skip.size:
            c = c[~(np.isin(c, skip) | np.isin(c - m, skip) | np.isin(c + m, skip))]
        if c.size == 0:
            continue
        triples.append((c - m, c, c + m))
    lags = [int(t[2][0] - t[1][0]) for t in triples]  # the lags whose triples survived ``exclude``
    allpos = np.unique(np.concatenate([np.concatenate(t) for t in triples])) if triples else np.arange(n)
    if not triples and skip.size:
        allpos = np.setdiff1d(allpos, skip)

    def look(p: np.ndarray) -> np.ndarray:
        return np.searchsorted(allpos, p).astype(np.int64)

    out = LagSample(
        n=n,
        rows=start + stride * allpos.astype(np.int64),
        pos=allpos.astype(np.float64),
        lags=np.array(lags, dtype=np.int64),
        minus=[look(t[0]) for t in triples],
        center=[look(t[1]) for t in triples],
        plus=[look(t[2]) for t in triples],
    )
    for a in (out.rows, out.pos, out.lags, *out.minus, *out.center, *out.plus):
        a.flags.writeable = False
    return out


# ----- frequency estimation --------------------------------------------------------------------------------------
@dataclass
class FrequencyEstimate:
    """Angular frequency per column (radians per position), its 1-sigma error, and whether unwrapping held."""

    freq: np.ndarray
    err: np.ndarray
    ok: np.ndarray


def _fit_lags(theta: np.ndarray, lags: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares ``theta[l] = lags[l] * w`` per column (weights per lag and column)."""
    m = lags[:, None].astype(np.float64)
    num = np.sum(weights * m * theta, axis=0)
    den = np.sum(weights * m * m, axis=0)
    w = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    res = theta - m * w[None, :]
    dof = np.maximum(np.sum(weights > 0, axis=0) - 1, 1)
    var = np.sum(weights * res * res, axis=0) / dof
    err = np.sqrt(var / np.where(den > 0, den, np.inf))
    return w, err


def _unwrap(
    measured: np.ndarray, lags: np.ndarray, weights: np.ndarray, *, cosine: bool, floor: float
) -> FrequencyEstimate:
    """Unwrap per-lag angle measurements progressively and fit one frequency per column.

    ``measured[l]`` is the angle of ``exp(i m_l w)`` in (-pi, pi] (``cosine=False``), or ``arccos(cos(m_l w))``
    in [0, pi] (``cosine=True``: the sign of each angle is unknown and chosen to follow the estimate).
    """
    n_lags, _n_cols = measured.shape
    theta = np.zeros_like(measured)
    used = np.zeros_like(measured, dtype=bool)
    active = np.isfinite(measured[0])
    theta[0] = np.where(active, measured[0], 0.0)
    used[0] = active
    w = theta[0] / lags[0]
    ok = active.copy()
    # the running fit's sums over the lags so far, one lag added per step: NumPy sums axis 0 of two or more
    # columns row by row, so these are the sums _fit_lags takes (one column it sums pairwise: that case refits)
    running = _n_cols >= 2
    wt = np.where(used[0], weights[0], 0.0)
    num, den = wt * float(lags[0]) * theta[0], wt * float(lags[0]) * float(lags[0])
    for i in range(1, n_lags):
        m = float(lags[i])
        pred = m * w
        a = measured[i]
        if cosine:
            c1 = a + TWO_PI * np.round((pred - a) / TWO_PI)
            c2 = -a + TWO_PI * np.round((pred + a) / TWO_PI)
            cand = np.where(np.abs(c1 - pred) <= np.abs(c2 - pred), c1, c2)
        else:
            cand = a + TWO_PI * np.round((pred - a) / TWO_PI)
        dev = np.abs(cand - pred)
        good = active & np.isfinite(a) & (dev < math.pi / 3)
        # a column whose prediction no longer pins the branch stops here (its estimate keeps the shorter lags)
        ok &= ~(active & ~good & np.isfinite(a) & (dev >= math.pi / 2))
        active &= good
        theta[i] = np.where(good, cand, 0.0)
        used[i] = good
        if running:
            wt = np.where(good, weights[i], 0.0)
            num, den = num + wt * m * theta[i], den + wt * m * m
            w_new = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        else:
            wts = np.where(used, weights, 0.0)
            w_new, _ = _fit_lags(theta[: i + 1], lags[: i + 1], wts[: i + 1])
        w = np.where(np.isfinite(w_new), w_new, w)
    wts = np.where(used, weights, 0.0)
    w, err = _fit_lags(theta, lags, wts)
    # the scatter of a few lags can underestimate the error: never report less than the rounding error of the
    # table (``floor`` per measured angle, weighted like the fit) allows
    info = np.sum(wts * (lags[:, None].astype(np.float64) ** 2), axis=0)
    err = np.maximum(np.nan_to_num(err, nan=np.inf), floor / np.sqrt(np.maximum(info, tolerance.TINY)))
    return FrequencyEstimate(freq=w, err=err, ok=ok & np.isfinite(w))


def pair_frequencies(s: np.ndarray, c: np.ndarray, sample: LagSample, eps: float) -> FrequencyEstimate:
    """Frequencies of sin/cos column pairs read on ``sample.rows`` (``s``, ``c``: rows x pairs).

    A negative frequency means the roles are the other way round (``c`` is the sin member).
    """
    z = c + 1j * s
    measured = np.empty((len(sample.lags), z.shape[1]))
    weights = np.empty_like(measured)
    for i in range(len(sample.lags)):
        e = np.sum(z[sample.plus[i]] * np.conj(z[sample.center[i]]), axis=0)
        e = e + np.sum(z[sample.center[i]] * np.conj(z[sample.minus[i]]), axis=0)
        mag = np.abs(e)
        measured[i] = np.where(mag > 0, np.angle(e), np.nan)
        weights[i] = np.where(mag > 0, 1.0, 0.0)
    return _unwrap(measured, sample.lags, weights, cosine=False, floor=eps)


def column_frequencies(x: np.ndarray, sample: LagSample, eps: float) -> FrequencyEstimate:
    """Frequencies of single columns ``A cos(w t + phi)`` read on ``sample.rows`` (``x``: rows x columns).

    The sign of a single column's frequency cannot be observed; it is reported non-negative.
    """
    measured = np.empty((len(sample.lags), x.shape[1]))
    weights = np.empty_like(measured)
    for i in range(len(sample.lags)):
        xc = x[sample.center[i]]
        num = np.sum(xc * (x[sample.plus[i]] + x[sample.minus[i]]), axis=0)
        den = 2.0 * np.sum(xc * xc, axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = num / den
        a = np.arccos(np.clip(ratio, -1.0, 1.0))
        measured[i] = np.where(den > 0, a, np.nan)
        # arccos is ill-conditioned near 0 and pi: weight each lag by sin^2 of its angle
        weights[i] = np.where(den > 0, np.maximum(np.sin(a) ** 2, tolerance.ARCCOS_WEIGHT_FLOOR), 0.0)
    return _unwrap(measured, sample.lags, weights, cosine=True, floor=eps)


# ----- pairs, oscillators, spectra -------------------------------------------------------------------------------
@dataclass
class Oscillator:
    """One frequency of a table: a sin/cos column pair or a single column.

    The columns hold ``amplitude * sin(freq * t + phase)`` (``sin_col``) and ``amplitude * cos(freq * t + phase)``
    (``cos_col``) at position ``t`` (0 = the first sampled row). A single column is stored as ``cos_col`` with
    its own phase (a single sin column is a cos column with phase shifted by -pi/2).
    """

    freq: float
    err: float
    amplitude: float
    phase: float
    sin_col: int | None
    cos_col: int | None
    residual: float = 0.0

    @property
    def columns(self) -> tuple[int, ...]:
        return tuple(c for c in (self.sin_col, self.cos_col) if c is not None)

    @property
    def paired(self) -> bool:
        return self.sin_col is not None and self.cos_col is not None


@dataclass
class Spectrum:
    """The columns of a table as sinusoids of the position.

    ``oscillators`` follow the column order of their first column; ``zero_cols`` are all zero, ``other_cols``
    are not sinusoids (their fit residual exceeded ``tol``). ``residual`` is the largest fit residual of an
    accepted oscillator.
    """

    width: int
    oscillators: list[Oscillator]
    zero_cols: list[int]
    other_cols: list[int]
    tol: float
    positions: int

    @property
    def freqs(self) -> np.ndarray:
        return np.array([o.freq for o in self.oscillators], dtype=np.float64)

    @property
    def errs(self) -> np.ndarray:
        return np.array([o.err for o in self.oscillators], dtype=np.float64)

    @property
    def pairs(self) -> list[tuple[int, int]]:
        return [(o.sin_col, o.cos_col) for o in self.oscillators if o.paired]  # type: ignore[misc]

    @property
    def sinusoidal(self) -> bool:
        """Every non-zero column is part of an accepted oscillator."""
        return bool(self.oscillators) and not self.other_cols

    @property
    def residual(self) -> float:
        return max((o.residual for o in self.oscillators), default=0.0)

    def by_frequency(self) -> list[Oscillator]:
        """Oscillators from the highest frequency to the lowest."""
        return sorted(self.oscillators, key=lambda o: -abs(o.freq))


def _square_sum_spread(x: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Per pair: the largest deviation of ``x_i^2 + x_j^2`` from its mean over the sample rows."""
    q = x[:, i] ** 2 + x[:, j] ** 2
    return np.max(np.abs(q - q.mean(axis=0)), axis=0)


def standard_pairings(width: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The column pairings conventions use: ``interleaved`` (2k, 2k+1) and ``split`` (k, k + h), h = ceil(w/2)."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    k = np.arange(width // 2)
    out["interleaved"] = (2 * k, 2 * k + 1)
    for h in sorted({width // 2, (width + 1) // 2}):
        kk = np.arange(width - h)
        out[f"split@{h}"] = (kk, kk + h)
    return out


def find_pairs(x: np.ndarray, tol: float, *, skip: np.ndarray | None = None) -> list[tuple[int, int]]:
    """Columns of ``x`` (sample rows x columns) whose squares sum to a constant: candidate sin/cos pairs.

    A standard pairing (:func:`standard_pairings`) wins when all its pairs hold; otherwise columns are matched
    greedily by the spread of ``x_i^2 + x_j^2`` (smallest first). Columns in ``skip`` (e.g. zero columns) are not
    paired. The order inside a pair is not yet meaningful (see :func:`spectrum`).
    """
    width = x.shape[1]
    skip_set = set() if skip is None else {int(c) for c in skip}
    amp = np.max(np.abs(x), axis=0)
    best: list[tuple[int, int]] | None = None
    best_key = (0, math.inf)
    for i, j in standard_pairings(width).values():
        keep = np.array([a not in skip_set and b not in skip_set for a, b in zip(i, j)], dtype=bool)
        if not keep.any():
            continue
        i2, j2 = i[keep], j[keep]
        spread = _square_sum_spread(x, i2, j2)
        scale = np.maximum(np.maximum(amp[i2], amp[j2]) ** 2, tolerance.TINY)
        worst = float(np.max(spread / scale))
        # the pairing with the most pairs, then the tightest one, wins (low-precision tables fit loosely)
        if worst <= tol and (len(i2), -worst) > (best_key[0], -best_key[1]):
            best, best_key = list(zip(i2.tolist(), j2.tolist())), (len(i2), worst)
    if best is not None and 2 * len(best) + len(skip_set) >= width - 1:
        return best
    cols = np.array([c for c in range(width) if c not in skip_set], dtype=np.int64)
    if cols.size < 2:
        return []
    q = x[:, cols] ** 2
    qc = q - q.mean(axis=0)
    norms = np.einsum("ij,ij->j", qc, qc)
    spread2 = norms[:, None] + norms[None, :] + 2.0 * (qc.T @ qc)
    rows = x.shape[0]
    scale = np.maximum(amp[cols][:, None], amp[cols][None, :]) ** 2
    ok = spread2 <= (tol * scale) ** 2 * rows
    np.fill_diagonal(ok, False)
    cand = np.argwhere(np.triu(ok))
    order = np.argsort(spread2[cand[:, 0], cand[:, 1]], kind="stable")
    taken: set[int] = set()
    pairs = []
    col = cols.tolist()
    # Python ints: a slow-column table (a rope cos cache) has thousands of candidate pairs to walk
    for a, b in cand[order].tolist():
        if a in taken or b in taken:
            continue
        taken.update((a, b))
        pairs.append((col[a], col[b]))
    return sorted(pairs)


def data_eps(dtype: np.dtype) -> float:
    """Machine epsilon of a table's dtype (float64 for integers): :func:`posenc_cli.inspect.tolerance.eps`."""
    return tolerance.eps(dtype)


def spectrum(
    table: Any,
    *,
    sample: LagSample | None = None,
    x: np.ndarray | None = None,
    pairs: list[tuple[int, int]] | None = None,
    find: bool = True,
    tol: float | None = None,
    dtype: np.dtype | None = None,
    amplitude: float | None = None,
    fits: dict[Any, Any] | None = None,
) -> Spectrum:
    """Describe the columns of a 2-D table as sinusoids of the row position.

    Parameters
    ----------
    table : array_like or LazyTensor
        The table (rows = positions). Only ``sample.rows`` are read (or ``x`` is used when given).
    sample : LagSample, optional
        Rows to read; default :func:`lag_sample` of the table's length.
    x : ndarray, optional
        The table already read on ``sample.rows`` (float64).
    pairs : list of (int, int), optional
        Known (sin, cos) column pairs; otherwise found with :func:`find_pairs` when ``find``.
    tol : float, optional
        Fit tolerance relative to the amplitude (default :func:`posenc_cli.inspect.tolerance.fit_tol`: 64 ulps of the
        table's dtype, at least 1e-12).
    dtype : numpy dtype, optional
        The dtype the table was stored in (default: ``table.dtype``).
    amplitude : float, optional
        The amplitude of single (unpaired) columns when known; otherwise that of the pairs, if they agree.
    fits : dict, optional
        Where the free fits of single columns are kept for another spectrum of the same ``x`` and ``sample`` (a
        caller that reads one table with and without a known ``amplitude`` fits each column freely once).

    Returns
    -------
    Spectrum
    """
    n = n_rows(table)
    known_amp = amplitude
    sample = sample or lag_sample(n)
    if x is None:
        x = read_rows(table, sample.rows)
    x = x.reshape(x.shape[0], -1)
    dt = np.dtype(dtype if dtype is not None else getattr(table, "dtype", np.float64))
    eps = data_eps(dt)
    tol = tolerance.fit_tol(dt) if tol is None else tol
    width = x.shape[1]
    finite = np.all(np.isfinite(x), axis=0)
    zero = finite & np.all(x == 0, axis=0)
    zero_cols = np.flatnonzero(zero)
    bad = np.flatnonzero(~finite)
    if not sample.usable:
        return Spectrum(width, [], zero_cols.tolist(), [c for c in range(width) if not zero[c]], tol, n)
    if pairs is None:
        # x^2 + y^2 of a rounded pair is off by about 2 ulps of the larger member
        pairs = (
            find_pairs(np.where(finite, x, 0.0), tolerance.pair_tol(dt), skip=np.concatenate([zero_cols, bad]))
            if find
            else []
        )
    oscillators, paired = _paired_oscillators(x, pairs or [], sample, eps, tol)
    singles = np.array([c for c in range(width) if c not in paired and not zero[c] and finite[c]], dtype=np.int64)
    other: list[int] = sorted(set(bad.tolist()))
    if singles.size:
        amps = [o.amplitude for o in oscillators] if known_amp is None else [known_amp]
        found, rest = _distinct_single_oscillators(x, singles, sample, eps, tol, dt, amps, fits)
        oscillators += found
        other += rest
    oscillators.sort(key=lambda o: min(o.columns))
    return Spectrum(width, oscillators, zero_cols.tolist(), sorted(other), tol, n)


def _paired_oscillators(
    x: np.ndarray, pairs: list[tuple[int, int]], sample: LagSample, eps: float, tol: float
) -> tuple[list[Oscillator], set[int]]:
    """The oscillators of (sin, cos) column ``pairs`` of ``x`` (read on ``sample.rows``): each pair's frequency,
    amplitude and phase as one complex exponential, kept when its fit is rounding (:func:`_fits`); with the
    columns they account for."""
    oscillators: list[Oscillator] = []
    paired: set[int] = set()
    if not pairs:
        return oscillators, paired
    pos = sample.pos
    pi = np.array([p[0] for p in pairs])
    pj = np.array([p[1] for p in pairs])
    est = pair_frequencies(x[:, pi], x[:, pj], sample, eps)
    for k in range(len(pairs)):
        w = float(est.freq[k])
        s_col, c_col = int(pi[k]), int(pj[k])
        if not math.isfinite(w) or not est.ok[k]:  # (a pair whose unwrapping failed is not fitted: not kept)
            continue
        if w < 0:
            s_col, c_col, w = c_col, s_col, -w
        z = x[:, c_col] + 1j * x[:, s_col]
        coef = np.mean(z * np.exp(-1j * w * pos))
        amplitude, phase = float(abs(coef)), float(np.angle(coef))
        fit = amplitude * np.exp(1j * (w * pos + phase))
        dev = np.abs(z - fit)
        res = float(np.max(dev))
        if est.ok[k] and _fits(
            dev, tol * max(amplitude, tolerance.TINY) * tolerance.FIT_SLACK, amplitude, w, pos, float(est.err[k])
        ):
            oscillators.append(Oscillator(w, float(est.err[k]), amplitude, phase, s_col, c_col, res))
            paired.update((s_col, c_col))
    return oscillators, paired


def _distinct_single_oscillators(
    x: np.ndarray,
    singles: np.ndarray,
    sample: LagSample,
    eps: float,
    tol: float,
    dt: np.dtype,
    amps: list[float],
    fits: dict[Any, Any] | None = None,
) -> tuple[list[Oscillator], list[int]]:
    """:func:`_single_oscillators`, each distinct column fitted once: a column whose sampled values are bit for bit
    an earlier one's (a rotary cos table holds each frequency in two columns) is given that column's fit under its
    own index. Every step of the fit reads its own column only (NumPy sums two or more columns row by row), so
    the answer is the one of fitting every column."""
    first: dict[bytes, int] = {}
    rep = [first.setdefault(np.ascontiguousarray(x[:, c]).tobytes(), c) for c in singles.tolist()]
    if len(first) == len(rep) or len(first) < 2:
        return _single_oscillators(x, singles, sample, eps, tol, dt, amps, fits)
    distinct = np.array(sorted(first.values()), dtype=np.int64)
    found, rest = _single_oscillators(x, distinct, sample, eps, tol, dt, amps, fits)
    fit = {o.cos_col: o for o in found}
    failed = set(rest)
    out: list[Oscillator] = []
    other: list[int] = []
    for col, r in zip(singles.tolist(), rep):
        if r in failed:
            other.append(col)
        else:
            out.append(fit[r] if r == col else dataclasses.replace(fit[r], cos_col=col))
    return out, other


def _single_oscillators(
    x: np.ndarray,
    singles: np.ndarray,
    sample: LagSample,
    eps: float,
    tol: float,
    dt: np.dtype,
    amps: list[float],
    fits: dict[Any, Any] | None = None,
) -> tuple[list[Oscillator], list[int]]:
    """The oscillators of unpaired columns ``singles`` of ``x``: a free sinusoid fitted to each
    (:func:`_free_single_fits`), refitted with the amplitude fixed when ``amps`` (the pairs' or the caller's)
    agree on one (:func:`_fixed_amplitude_refit`); kept when the fit is rounding, else returned as other columns.
    ``fits``: the free fits of these columns kept from a spectrum of the same ``x`` and ``sample`` (read-only)."""
    pos = sample.pos
    key = (singles.tobytes(), eps)
    if fits is not None and key in fits:
        est, xs, w_s, amp_s, phase_s, res_s = fits[key]
    else:
        est = column_frequencies(x[:, singles], sample, eps)
        w_s = np.where(np.isfinite(est.freq), est.freq, 0.0)
        xs = x[:, singles]
        amp_s, phase_s, res_s = _free_single_fits(xs, pos, w_s)
        if fits is not None:
            for a in (est.freq, est.err, est.ok, xs, w_s, amp_s, phase_s, res_s):
                a.flags.writeable = False
            fits[key] = (est, xs, w_s, amp_s, phase_s, res_s)
    err_s = est.err
    # a single column cannot tell amplitude from frequency when its angle barely moves (sin x ~ x): with the
    # amplitude of the pairs (or the caller's) known, refine frequency and phase by Gauss-Newton
    if amps and np.ptp(amps) <= tolerance.AMPS_AGREE * max(amps):
        amp = float(np.median(amps))
        w_s, phase_s, res_s, amp_s, err_s = _fixed_amplitude_refit(xs, pos, w_s, phase_s, res_s, amp_s, err_s, amp, dt)
    dev_s = np.abs(xs - amp_s[None, :] * np.cos(np.outer(pos, w_s) + phase_s[None, :]))
    found: list[Oscillator] = []
    other: list[int] = []
    # the columns within the plain tolerance, all at once (what _fits tests first, column by column)
    plain = np.all(dev_s <= (tol * np.maximum(amp_s, tolerance.TINY) * tolerance.FIT_SLACK)[None, :], axis=0)
    for k, col in enumerate(singles.tolist()):
        if est.ok[k] and (
            plain[k]
            or _fits(
                dev_s[:, k],
                tol * max(float(amp_s[k]), tolerance.TINY) * tolerance.FIT_SLACK,
                float(amp_s[k]),
                w_s[k],
                pos,
                float(err_s[k]),
            )
        ):
            found.append(
                Oscillator(
                    float(w_s[k]), float(err_s[k]), float(amp_s[k]), float(phase_s[k]), None, col, float(res_s[k])
                )
            )
        else:
            other.append(col)
    return found, other


def _free_single_fits(xs: np.ndarray, pos: np.ndarray, w_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Amplitude, phase and largest residual of ``a cos(wt) + b sin(wt)`` fitted by least squares to each column of
    ``xs`` at its frequency ``w_s`` (2 x 2 normal equations; a singular system fits the cos term alone)."""
    design_c = np.cos(np.outer(pos, w_s))
    design_s = np.sin(np.outer(pos, w_s))
    cc = np.einsum("ij,ij->j", design_c, design_c)
    ss = np.einsum("ij,ij->j", design_s, design_s)
    cs = np.einsum("ij,ij->j", design_c, design_s)
    xc = np.einsum("ij,ij->j", xs, design_c)
    xsn = np.einsum("ij,ij->j", xs, design_s)
    det = cc * ss - cs * cs
    flat = np.abs(det) <= tolerance.SINGULAR_REL * np.maximum(cc * ss, tolerance.TINY)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(flat, xc / np.where(cc > 0, cc, 1.0), (xc * ss - xsn * cs) / np.where(flat, 1.0, det))
        b = np.where(flat, 0.0, (xsn * cc - xc * cs) / np.where(flat, 1.0, det))
    amp_s = np.hypot(a, b)
    phase_s = np.arctan2(-b, a)
    fit = amp_s[None, :] * np.cos(np.outer(pos, w_s) + phase_s[None, :])
    return amp_s, phase_s, np.max(np.abs(xs - fit), axis=0)


def _fixed_amplitude_refit(
    xs: np.ndarray,
    pos: np.ndarray,
    w_s: np.ndarray,
    phase_s: np.ndarray,
    res_s: np.ndarray,
    amp_s: np.ndarray,
    err_s: np.ndarray,
    amp: float,
    dt: np.dtype,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Single columns refitted with the amplitude fixed at ``amp`` (Gauss-Newton on frequency and phase, from the
    free fit and from the angles read directly): ``(w, phase, residual, amplitude, frequency error)``, the
    refit's where it fits the data (:func:`posenc_cli.inspect.tolerance.refit_tol`), the free fit's elsewhere."""
    w2, p2, r2, gn_err = _refine_singles(xs, pos, w_s, phase_s, amp, np.full_like(res_s, np.inf))
    # on a few rows the Chebyshev start can be far off for slow columns: also start from the angle read
    # directly (arcsin for a sin column, arccos for a cos column) between the first and last rows
    span = max(pos[-1] - pos[0], 1.0)
    u0, u1 = np.clip(xs[0] / amp, -1, 1), np.clip(xs[-1] / amp, -1, 1)
    starts = (
        (np.abs(np.arcsin(u1) - np.arcsin(u0)) / span, np.arcsin(u0) - math.pi / 2),
        (np.abs(np.arccos(u1) - np.arccos(u0)) / span, np.arccos(u0)),
    )
    for w0_, p0_ in starts:
        w3, p3, r3, e3 = _refine_singles(xs, pos, w0_, p0_ - w0_ * pos[0], amp, np.full_like(res_s, np.inf))
        better = r3 < r2
        w2, p2 = np.where(better, w3, w2), np.where(better, p3, p2)
        r2, gn_err = np.where(better, r3, r2), np.where(better, e3, gn_err)
    # the free-amplitude fit can look as good on a few rows; the fixed amplitude wins if it fits the data
    use = np.isfinite(w2) & (r2 <= np.maximum(tolerance.REFIT_FREE * res_s, tolerance.refit_tol(dt, amp)))
    w_s, phase_s, res_s = np.where(use, w2, w_s), np.where(use, p2, phase_s), np.where(use, r2, res_s)
    amp_s = np.where(use, amp, amp_s)
    err_s = np.where(use, np.maximum(np.nan_to_num(gn_err, nan=np.inf), tolerance.freq_err_floor(dt)), err_s)
    return w_s, phase_s, res_s, amp_s, err_s


def _fits(dev: np.ndarray, tol: float, amplitude: float, w: float, pos: np.ndarray, err: float = 0.0) -> bool:
    """Whether a sinusoid's fit deviations ``dev`` (per sampled row) are rounding: within ``tol``, plus the
    angle error of the float32 formula at each position (:func:`posenc_cli.inspect.tolerance.angle_allowance`), which
    grows with the position and would otherwise hide every long float32-computed table's sinusoids. Where that
    error is present, the fitted frequency is off by up to a few of its own 1-sigma ``err`` too."""
    from .tolerance import angle_allowance

    if bool(np.all(dev <= tol)):
        return True
    allow = angle_allowance(float(w), pos)
    top = float(np.max(allow))
    if top == 0.0:  # no formula error to allow (w = 0, a constant column): the plain tolerance decided
        return False
    centre = float(np.mean(pos))
    # the fit's own error counts only as far as the formula's error explains it (never widened by noise)
    fit_err = (
        np.minimum(tolerance.FIT_ERR_SIGMAS * (err if math.isfinite(err) else 0.0) * np.abs(pos - centre), top) + top
    )
    return bool(np.all(dev <= tol + abs(amplitude) * np.minimum(2.0, allow + fit_err)))


def _refine_singles(
    x: np.ndarray, pos: np.ndarray, w: np.ndarray, phase: np.ndarray, amp: float, res: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gauss-Newton on ``x = amp * cos(w t + phase)`` per column (amplitude fixed); keeps improvements only.
    Returns frequency, phase, max residual and the frequency's 1-sigma error."""
    w, phase, res = w.copy(), phase.copy(), res.copy()
    err = np.full(w.shape, np.inf)
    t = pos[:, None]
    cos = np.cos(t * w[None, :] + phase[None, :])
    for _ in range(6):
        ang = t * w[None, :] + phase[None, :]
        r = x - amp * cos
        sin = np.sin(ang)
        jw = -amp * t * sin
        jp = -amp * sin
        a11, a12, a22 = np.einsum("ij,ij->j", jw, jw), np.einsum("ij,ij->j", jw, jp), np.einsum("ij,ij->j", jp, jp)
        b1, b2 = np.einsum("ij,ij->j", jw, r), np.einsum("ij,ij->j", jp, r)
        det = a11 * a22 - a12 * a12
        good = np.abs(det) > tolerance.TINY
        with np.errstate(invalid="ignore", divide="ignore"):
            dw = np.where(good, (b1 * a22 - b2 * a12) / np.where(good, det, 1.0), 0.0)
            dp = np.where(good, (a11 * b2 - a12 * b1) / np.where(good, det, 1.0), 0.0)
        w_new, p_new = w + dw, phase + dp
        cos_new = np.cos(t * w_new[None, :] + p_new[None, :])
        res_new = np.max(np.abs(x - amp * cos_new), axis=0)
        better = np.isfinite(res_new) & (res_new <= res)
        w, phase, res = np.where(better, w_new, w), np.where(better, p_new, phase), np.where(better, res_new, res)
        cos = np.where(better[None, :], cos_new, cos)  # the cosines of the kept angles, for the next step
        # 1-sigma of w for values rounded to about res: sqrt((J^T J)^-1)[w, w] * res
        with np.errstate(invalid="ignore", divide="ignore"):
            err = np.where(
                good, np.sqrt(np.abs(a22 / np.where(good, det, 1.0))) * np.maximum(res, tolerance.TINY), np.inf
            )
    # cos is even: report the same column with a non-negative frequency
    neg = w < 0
    return np.where(neg, -w, w), np.where(neg, -phase, phase), res, err


def _wrap(x: np.ndarray) -> np.ndarray:
    """Angles folded into [-pi, pi)."""
    return np.mod(x + math.pi, TWO_PI) - math.pi


def _offset_candidates(
    spec: Spectrum, single_phase: float, tol: float, max_offset: int
) -> tuple[np.ndarray, np.ndarray] | None:
    osc = [o for o in spec.oscillators if o.freq > 0]
    if any(o.paired for o in osc):
        # a single cos column cannot tell +phase from -phase when its angle barely moves: pairs decide
        osc = [o for o in osc if o.paired]
    elif any(o.freq * spec.positions >= 1 for o in osc):
        osc = [o for o in osc if o.freq * spec.positions >= 1]
    if not osc:
        return None
    freqs = np.array([o.freq for o in osc])
    phases = np.array([o.phase - (0.0 if o.paired else single_phase) for o in osc])
    errs = np.array([o.err for o in osc])
    order = np.argsort(freqs)
    k0 = order[0]
    w0, ph0 = freqs[k0], phases[k0]
    turns = int(min(max_offset * w0 / TWO_PI + 1, 100_000))
    j = np.arange(-turns, turns + 1, dtype=np.float64)
    cand = np.unique(np.concatenate([np.round((ph0 + TWO_PI * j) / w0), [0.0]]))
    cand = cand[np.abs(cand) <= max_offset]
    for k in order[1:]:
        if cand.size <= 1:
            break
        mis = np.abs(_wrap(phases[k] - cand * freqs[k]))
        keep = mis <= tol + 6 * errs[k] * np.abs(cand)
        cand = cand[keep] if keep.any() else cand[np.argsort(mis)[:1]]
    # rank by misfit (in steps of tol / 16), then by |o|; few oscillators leave many candidates: in chunks
    mis_all = np.concatenate(
        [
            np.max(np.abs(_wrap(phases[None, :] - c[:, None] * freqs[None, :])), axis=1)
            for c in np.array_split(cand, max(1, cand.size * len(osc) // 2_000_000 + 1))
        ]
    )
    # float32 phases tell a true fit from a near one; coarse (float16) phases only within their noise, ~tol
    step = tol / 16 if tol <= tolerance.OFFSET_FINE else tol
    order = np.lexsort((np.abs(cand), np.round(mis_all / max(step, tolerance.OFFSET_STEP_FLOOR))))[:64]
    return cand[order], mis_all[order]


def position_offset(
    spec: Spectrum, *, single_phase: float = 0.0, max_offset: int = 1 << 24, tol: float | None = None
) -> tuple[int, float] | None:
    """The integer position ``o`` of the first row: every oscillator's phase is ``o * freq`` (mod 2 pi).

    Paired oscillators use their cos-member phase; single columns are assumed to have phase ``single_phase`` at
    position 0 (0 for cos columns, -pi/2 for sin columns). Candidates come from the lowest frequency (every ``o``
    within ``max_offset`` that fits it, at most 200001 of them, and 0) and are filtered by the next frequencies in
    turn (misfit within ``tol`` rad plus 6 sigma of the frequency times ``|o|``); the best fit wins, the smallest
    ``|o|`` among equal fits. Returns ``(o, max phase misfit)`` or None when there are no oscillators.
    """
    found = _offset_candidates(spec, single_phase, tolerance.OFFSET_PHASE_TOL if tol is None else tol, max_offset)
    if found is None or found[0].size == 0:
        return None
    return int(found[0][0]), float(found[1][0])


def position_offsets(
    spec: Spectrum,
    *,
    single_phase: float = 0.0,
    tol: float = tolerance.OFFSET_PHASE_TOL,
    count: int = 3,
    max_offset: int = 1 << 24,
) -> list[tuple[int, float]]:
    """Up to ``count`` offsets that fit the phases within ``tol``, best first (low-precision tables leave several
    plausible; 0 is among them whenever it fits)."""
    found = _offset_candidates(spec, single_phase, tol, max_offset)
    if found is None:
        return []
    cand, mis = found
    out = [(int(c), float(m)) for c, m in zip(cand[:count], mis[:count])]
    zero = np.flatnonzero(cand == 0)
    if zero.size and all(o != 0 for o, _ in out) and mis[zero[0]] <= tol:
        out[-1] = (0, float(mis[zero[0]]))
    return out


# ----- layouts ------------------------------------------------------------------------------------------------------
#: :func:`pair_layout`'s answers: sin at 2k and cos at 2k+1 (or the reverse), a sin block then the cos block at a
#: fixed distance (or the reverse).
PAIR_INTERLEAVED = "interleaved"
PAIR_INTERLEAVED_COS_FIRST = "interleaved-cos-first"
PAIR_SPLIT = "split"
PAIR_SPLIT_COS_FIRST = "split-cos-first"


def pair_layout(pairs: list[tuple[int, int]], width: int) -> str | None:
    """Name the placement of (sin, cos) column pairs.

    Returns :data:`PAIR_INTERLEAVED` (sin at 2k, cos at 2k+1), :data:`PAIR_INTERLEAVED_COS_FIRST`,
    :data:`PAIR_SPLIT` (sin block, then the cos block at a fixed distance), :data:`PAIR_SPLIT_COS_FIRST`, or None
    for any other placement.
    """
    if not pairs:
        return None
    ordered = sorted(pairs, key=lambda p: min(p))
    ps = np.array([p[0] for p in ordered])
    pc = np.array([p[1] for p in ordered])
    k = np.arange(len(ordered))
    if np.array_equal(ps, 2 * k) and np.array_equal(pc, 2 * k + 1):
        return PAIR_INTERLEAVED
    if np.array_equal(pc, 2 * k) and np.array_equal(ps, 2 * k + 1):
        # one pair [cos, sin] is also the split cos-first layout
        return PAIR_SPLIT_COS_FIRST if len(ordered) == 1 else PAIR_INTERLEAVED_COS_FIRST
    if np.array_equal(ps, k) and np.all(pc - ps == pc[0] - ps[0]) and pc[0] - ps[0] >= len(ordered):
        return PAIR_SPLIT
    if np.array_equal(pc, k) and np.all(ps - pc == ps[0] - pc[0]) and ps[0] - pc[0] >= len(ordered):
        return PAIR_SPLIT_COS_FIRST
    return None


#: :func:`duplicate_layout`'s answers: each value in columns (k, k + w/2), or in columns (2k, 2k + 1).
DUPLICATE_HALF = "half"
DUPLICATE_INTERLEAVED = "interleaved"


def duplicate_layout(x: np.ndarray, tol: float) -> str | None:
    """Whether each value is written to two columns: :data:`DUPLICATE_HALF` (k, k + w/2) or
    :data:`DUPLICATE_INTERLEAVED` (2k, 2k + 1).

    ``x`` is the table on sample rows; ``tol`` the allowed absolute difference. None when neither holds.
    """
    width = x.shape[1]
    if width < 2 or width % 2:
        return None
    h = width // 2
    if np.all(np.abs(x[:, :h] - x[:, h:]) <= tol):
        return DUPLICATE_HALF
    if np.all(np.abs(x[:, 0::2] - x[:, 1::2]) <= tol):
        return DUPLICATE_INTERLEAVED
    return None


# ----- frequency laws -----------------------------------------------------------------------------------------------
@dataclass
class GeometricFit:
    """``freq_k = w0 * ratio**k`` for the first ``count`` frequencies (highest first)."""

    w0: float
    ratio: float
    count: int
    max_rel_dev: float

    def predict(self, k: np.ndarray | int) -> np.ndarray:
        return self.w0 * self.ratio ** np.asarray(k, dtype=np.float64)


def geometric_fit(
    freqs: np.ndarray, errs: np.ndarray | None = None, *, rel_tol: float = tolerance.LADDER_REL_TOL
) -> GeometricFit | None:
    """Fit ``log w_k = log w0 + k log ratio`` to positive frequencies in their given order.

    The longest leading run that the fit of that run explains within ``max(rel_tol, 6 sigma)`` is kept (a
    ramp that changes the low frequencies leaves the leading, high-frequency run geometric).
    """
    w = np.asarray(freqs, dtype=np.float64)
    n = w.size
    if n == 0 or not np.all(w > 0):
        pos = np.flatnonzero(~(w > 0))
        n = int(pos[0]) if pos.size else n
        w = w[:n]
    if n == 0:
        return None
    if n == 1:
        return GeometricFit(float(w[0]), 1.0, 1, 0.0)
    e = np.full(n, tolerance.LADDER_DEFAULT_ERR) if errs is None else np.asarray(errs, dtype=np.float64)[:n]
    sig = np.maximum(e / w, tolerance.LADDER_SIGMA_FLOOR)
    y = np.log(w)
    k = np.arange(n, dtype=np.float64)

    def fit(m: int) -> tuple[float, float, float]:
        wt = 1.0 / sig[:m] ** 2
        sw, sk, sy = wt.sum(), (wt * k[:m]).sum(), (wt * y[:m]).sum()
        skk, sky = (wt * k[:m] ** 2).sum(), (wt * k[:m] * y[:m]).sum()
        det = sw * skk - sk * sk
        if m < 2 or det <= 0:
            return float(y[0]), 0.0, 0.0
        slope = (sw * sky - sk * sy) / det
        icpt = (sy - slope * sk) / sw
        dev = np.abs(y[:m] - icpt - slope * k[:m])
        return float(icpt), float(slope), float(np.max(dev / np.maximum(6 * sig[:m], rel_tol)))

    icpt, slope, worst = fit(n)
    m = n
    if worst > 1.0:
        m = 2
        icpt, slope, _ = fit(2)
        while m < n:
            pred = icpt + slope * k[m]
            if abs(y[m] - pred) > max(6 * sig[m], rel_tol) * 4:
                break
            m += 1
            icpt, slope, worst2 = fit(m)
            if worst2 > tolerance.LADDER_BREAK:
                m -= 1
                icpt, slope, _ = fit(m)
                break
    dev = float(np.max(np.abs(y[:m] - icpt - slope * k[:m])))
    return GeometricFit(float(math.exp(icpt)), float(math.exp(slope)), m, dev)


def infer_base(ratio: float, w0: float, n_freqs: int, width: int) -> tuple[float, str]:
    """The base of a geometric frequency ladder and the exponent convention that makes it a round number.

    Conventions: ``2k/width`` (w_k = base^(-2k/d): the paper, RoPE), ``k/(n-1)`` (last frequency = w0 / base:
    tensor2tensor timescales), ``k/n`` (grid axes: w_k = base^(-k/F)). Returns ``(base, convention)``; the
    first convention whose base is a round number wins, else ``2k/width``.
    """
    if not (0 < ratio < 1):
        return (math.inf if ratio == 1 else float("nan")), "2k/width"
    options = [("2k/width", ratio ** (-width / 2.0)), ("k/n", ratio ** (-float(n_freqs)))]
    if n_freqs > 1:
        options.insert(1, ("k/(n-1)", ratio ** (-(n_freqs - 1.0))))
    for name, base in options:
        nice = nice_number(base, tolerance.LADDER_BASE_ROUNDING)
        if nice_digits(nice) <= 4:
            return base, name
    return options[0][1], options[0][0]


@dataclass
class ScalingProfile:
    """How one set of frequencies relates to a reference set, column by column.

    ``kind`` is ``same``, ``linear`` (every frequency divided by ``factor``), ``power`` (``w = ref**exponent``:
    another base, e.g. NTK), ``power-linear`` (both), ``ramp-frequency`` (1 at high frequencies, ``1/factor`` at
    low ones, linear in frequency between ``ramp[0]`` and ``ramp[1]`` (rad/position): llama3),
    ``ramp-index`` (the same, linear in the index between ``ramp[0]`` and ``ramp[1]``: YaRN), or ``per-column``.
    ``divisors`` are ``ref / w`` per column; ``max_rel_dev`` the misfit of the named law.
    """

    kind: str
    divisors: np.ndarray
    factor: float = 1.0
    exponent: float = 1.0
    ramp: tuple[float, float] | None = None
    max_rel_dev: float = 0.0

    def predict(self, reference: np.ndarray) -> np.ndarray:
        """The frequencies this law makes of ``reference``."""
        ref = np.asarray(reference, dtype=np.float64)
        if self.kind == "same":
            return ref.copy()
        if self.kind == "linear":
            return ref / self.factor
        if self.kind in ("power", "power-linear"):
            with np.errstate(divide="ignore"):
                return np.where(ref > 0, ref**self.exponent / self.factor, 0.0)
        if self.kind == "ramp-frequency" and self.ramp is not None:
            lo, hi = self.ramp
            s = np.clip((ref - lo) / (hi - lo), 0.0, 1.0)
            return ref * ((1 - s) / self.factor + s)
        if self.kind == "ramp-index" and self.ramp is not None:
            lo, hi = self.ramp
            rho = np.clip((np.arange(ref.size) - lo) / (hi - lo), 0.0, 1.0)
            return ref * (rho / self.factor + 1 - rho)
        return ref / self.divisors


def scaling_profile(
    freqs: np.ndarray,
    reference: np.ndarray,
    errs: np.ndarray | None = None,
    ref_errs: np.ndarray | None = None,
    *,
    rel_tol: float = tolerance.PROFILE_REL_TOL,
) -> ScalingProfile:
    """Classify ``freqs`` against ``reference`` (same order, e.g. both highest first).

    Parameters
    ----------
    freqs, reference : ndarray
        Angular frequencies; zeros in the reference are skipped.
    errs, ref_errs : ndarray, optional
        1-sigma errors of ``freqs`` and ``reference``: each law must hold within
        ``max(rel_tol, 6 sigma)`` (relative, both errors combined) and is fitted with weights ``1 / sigma^2``.
    """
    w = np.asarray(freqs, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    valid = (ref > 0) & (w > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        div = np.where(valid, ref / w, 1.0)
        e = np.zeros_like(w) if errs is None else np.asarray(errs, dtype=np.float64) / np.where(w > 0, w, 1.0)
        er = (
            np.zeros_like(w)
            if ref_errs is None
            else np.asarray(ref_errs, dtype=np.float64) / np.where(ref > 0, ref, 1.0)
        )
    tol = np.maximum(rel_tol, 6 * np.where(valid, np.hypot(e, er), 0.0))
    wt = np.where(valid, 1.0 / tol**2, 0.0)
    q = 1.0 / div
    if not valid.any():
        return ScalingProfile("same", div)

    def misfit(pred: np.ndarray) -> float:
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.abs(pred / np.where(w > 0, w, 1.0) - 1.0) / tol
        return float(np.max(np.where(valid, rel, 0.0)))

    if misfit(ref) <= 1.0:
        return ScalingProfile("same", div, max_rel_dev=misfit(ref))
    factor = float(np.exp(np.sum(wt * np.log(div)) / np.sum(wt)))
    if misfit(ref / factor) <= 1.0:
        return ScalingProfile("linear", div, factor=factor, max_rel_dev=misfit(ref / factor))
    lr, lw, lwt = np.log(ref[valid]), np.log(w[valid]), wt[valid]
    if valid.sum() >= 2 and np.ptp(lr) > 0:
        alpha, beta = np.polyfit(lr, lw, 1, w=np.sqrt(lwt))
        for kind, a, b in (("power", (lwt * lr) @ lw / ((lwt * lr) @ lr), 0.0), ("power-linear", alpha, beta)):
            prof = ScalingProfile(kind, div, factor=float(math.exp(-b)), exponent=float(a))
            if misfit(prof.predict(ref)) <= 1.0:
                prof.max_rel_dev = misfit(prof.predict(ref))
                return prof
    ramp = _ramp_profile(ref, q, div, valid, misfit)
    if ramp is not None:
        return ramp
    return ScalingProfile("per-column", div, max_rel_dev=0.0)


def _ramp_profile(ref: np.ndarray, q: np.ndarray, div: np.ndarray, valid: np.ndarray, misfit: Any) -> Any:
    """A ramp between kept high frequencies (q = 1) and divided low ones (q = 1/f), linear in frequency
    (llama3) or in the index (YaRN); a step when no column sits inside it. None when neither holds."""
    order = np.argsort(-ref)
    qs = q[order]
    edge = 1 - tolerance.RAMP_EDGE
    if not (qs[0] > edge and qs[-1] < edge):
        return None
    f = float(1.0 / np.min(q[valid]))
    s = (q - 1.0 / f) / (1.0 - 1.0 / f)  # 1 = kept, 0 = divided by f
    inner = valid & (s > tolerance.RAMP_INSIDE) & (s < 1 - tolerance.RAMP_INSIDE)
    cands: list[ScalingProfile] = []
    if inner.sum() >= 2:
        a, b = np.polyfit(ref[inner], s[inner], 1)
        if a > 0:
            cands.append(ScalingProfile("ramp-frequency", div, factor=f, ramp=(-b / a, (1 - b) / a)))
        idx = np.arange(ref.size, dtype=np.float64)
        a2, b2 = np.polyfit(idx[inner], 1 - s[inner], 1)
        if a2 > 0:
            cands.append(ScalingProfile("ramp-index", div, factor=f, ramp=(-b2 / a2, (1 - b2) / a2)))
    else:
        # no column inside the ramp: the step sits between the last kept and the first divided frequency
        kept = valid & (s > 0.5)
        lo_f = float(np.max(ref[valid & ~kept])) if np.any(valid & ~kept) else 0.0
        hi_f = float(np.min(ref[kept])) if np.any(kept) else lo_f
        hi_f = hi_f if hi_f > lo_f else lo_f * (1 + tolerance.STEP_WIDTH)
        cands.append(ScalingProfile("ramp-frequency", div, factor=f, ramp=(lo_f, hi_f)))
    for prof in cands:
        prof.max_rel_dev = misfit(prof.predict(ref))
    cands.sort(key=lambda p: p.max_rel_dev)
    return cands[0] if cands and cands[0].max_rel_dev <= 1.0 else None


# ----- relative structure -------------------------------------------------------------------------------------------
@dataclass
class ToeplitzFit:
    """A square matrix as a function of ``j - i``: ``lut[n - 1 + j - i]``, and its largest misfit."""

    lut: np.ndarray
    max_dev: float
    rows_checked: int

    @property
    def n(self) -> int:
        return (self.lut.size + 1) // 2

    def value(self, r: np.ndarray | int) -> np.ndarray:
        """The value at offset ``r = j - i``."""
        return self.lut[self.n - 1 + np.asarray(r)]


def _nan_aware_dev(x: np.ndarray, y: np.ndarray) -> float:
    with np.errstate(invalid="ignore"):
        d = np.abs(x - y)
    same = (x == y) | (np.isnan(x) & np.isnan(y))
    d = np.where(same, 0.0, d)
    return float(np.max(np.where(np.isnan(d), np.inf, d))) if d.size else 0.0


def toeplitz_fit(matrix: Any, rows: np.ndarray | None = None) -> ToeplitzFit | None:
    """Read a square matrix as ``T[i, j] = lut[j - i]`` from its first and last rows; check it on ``rows``.

    Infinities (causal masks) must match exactly. Returns None for a non-square matrix.
    """
    if len(matrix.shape) != 2 or matrix.shape[0] != matrix.shape[1]:
        return None
    n = int(matrix.shape[0])
    ends = read_rows(matrix, [0, n - 1])
    lut = np.concatenate([ends[1][:-1], ends[0]])  # r = -(n-1)..-1 from the last row, 0..n-1 from the first
    rows = spread_rows(n, 96) if rows is None else rows
    x = read_rows(matrix, rows)
    idx = (n - 1 - rows)[:, None] + np.arange(n)[None, :]
    return ToeplitzFit(lut, _nan_aware_dev(x, lut[idx]), int(rows.size))


@dataclass
class LinearDistanceFit:
    """A relative lookup as ``-slope * distance``: symmetric (``|j - i|``) or causal (``i - j`` for ``j <= i``,
    ``-inf`` for ``j > i``)."""

    slope: float
    causal: bool
    max_dev: float


def linear_distance_fit(lut: np.ndarray) -> LinearDistanceFit:
    """Fit ``lut[n - 1 + r] = -slope * |r|`` (or the causal form) by least squares on the finite values."""
    n = (lut.size + 1) // 2
    r = np.arange(-(n - 1), n, dtype=np.float64)
    future = r > 0
    causal = bool(np.any(future) and np.all(np.isneginf(lut[future])))
    use = ~future if causal else np.ones_like(future)
    y, d = lut[use], np.abs(r[use])
    finite = np.isfinite(y)
    if not finite.all() or not np.any(d > 0):
        return LinearDistanceFit(float("nan"), causal, math.inf)
    slope = float(-(y @ d) / (d @ d))
    return LinearDistanceFit(slope, causal, float(np.max(np.abs(y + slope * d))))


# ----- grids --------------------------------------------------------------------------------------------------------
def _equal_cols(x: np.ndarray, y: np.ndarray, cols: np.ndarray) -> bool:
    return bool(np.all(x[cols] == y[cols]))


def axis_groups(table: Any, first: int = 0, *, max_groups: int = 4) -> list[tuple[int, np.ndarray]]:
    """Columns grouped by how often they change along the rows of a grid flattened row-major.

    Starting at row ``first``, the columns that change at row ``first + 1`` change with the fastest grid axis
    (period 1); of the rest, those that first change at row ``first + p`` follow an axis of stride ``p``, and so
    on. Found by binary search on ``p`` (O(log n) rows read). Returns ``[(stride, columns), ...]`` fastest first;
    columns that never change are left out. A plain 1-D table gives one group of stride 1.
    """
    n = n_rows(table)
    if n - first < 2:
        return []
    row0 = read_rows(table, [first])[0].reshape(-1)
    remaining = np.arange(row0.size)
    groups: list[tuple[int, np.ndarray]] = []
    lo = 1
    while remaining.size and len(groups) < max_groups:
        last = read_rows(table, [n - 1])[0].reshape(-1)
        if _equal_cols(row0, last, remaining) and lo > 1:
            break
        # smallest p >= lo such that some remaining column differs at row first + p
        a, b = lo, n - 1 - first
        if _equal_cols(row0, read_rows(table, [first + b])[0].reshape(-1), remaining):
            break
        while a < b:
            mid = (a + b) // 2
            if _equal_cols(row0, read_rows(table, [first + mid])[0].reshape(-1), remaining):
                a = mid + 1
            else:
                b = mid
        row = read_rows(table, [first + a])[0].reshape(-1)
        changed = remaining[row0[remaining] != row[remaining]]
        groups.append((a, changed))
        remaining = np.setdiff1d(remaining, changed)
        lo = a + 1
    return groups


# ----- values ------------------------------------------------------------------------------------------------------
@dataclass
class ValueSummary:
    """Range and kind of the values of a whole table (scanned in blocks)."""

    shape: tuple[int, ...]
    dtype: str
    minimum: float
    maximum: float
    n_nan: int
    n_posinf: int
    n_neginf: int
    integer: bool
    max_abs: float
    zero_rows: tuple[int, ...] = ()

    @property
    def finite(self) -> bool:
        return self.n_nan == 0 and self.n_posinf == 0 and self.n_neginf == 0


def value_summary(table: Any) -> ValueSummary:
    """Scan ``table`` block by block: min/max over finite values, NaN and infinity counts, integer-ness, and the
    first 16 rows that are all zero (padding or [CLS] rows)."""
    n = n_rows(table) if len(table.shape) else 1
    lo, hi, mabs = math.inf, -math.inf, 0.0
    zero_rows: list[int] = []
    n_nan = n_pinf = n_ninf = 0
    integer = True
    for start in range(0, max(n, 1), SCAN_ROWS):
        stop = min(n, start + SCAN_ROWS)
        if isinstance(table, np.ndarray):
            block = np.asarray(table[start:stop] if table.ndim else table.reshape(1))
        else:
            block = np.asarray(table.rows(start, stop))
        if block.dtype.kind in "iub":
            block = block.astype(np.float64)
        elif block.dtype.kind != "f":
            block = block.astype(np.float32 if block.dtype.itemsize <= 4 else np.float64)
        if block.ndim >= 2 and len(zero_rows) < 16:
            flat = block.reshape(block.shape[0], -1)
            zero_rows += (start + np.flatnonzero(~np.any(flat != 0, axis=1))[: 16 - len(zero_rows)]).tolist()
        # NaN propagates through min and max: both finite means no NaN and no infinity (the usual block: two
        # passes instead of a mask per kind of value and a copy of the finite ones)
        ends = (block.min(), block.max()) if block.size else (np.nan, np.nan)
        if np.isfinite(ends[0]) and np.isfinite(ends[1]):
            fin, lo_hi = block, (float(ends[0]), float(ends[1]))
        else:
            nan = np.isnan(block)
            pinf = np.isposinf(block)
            ninf = np.isneginf(block)
            n_nan += int(nan.sum())
            n_pinf += int(pinf.sum())
            n_ninf += int(ninf.sum())
            fin = block[~(nan | pinf | ninf)]
            lo_hi = (float(fin.min()), float(fin.max())) if fin.size else (math.inf, -math.inf)
        if fin.size:
            lo = min(lo, lo_hi[0])
            hi = max(hi, lo_hi[1])
            mabs = max(mabs, abs(lo), abs(hi))
            if integer and not np.all(fin == np.round(fin)):
                integer = False
    from ..encodings.base import dtype_name

    return ValueSummary(
        tuple(int(s) for s in table.shape),
        dtype_name(np.dtype(table.dtype)),
        lo,
        hi,
        n_nan,
        n_pinf,
        n_ninf,
        integer,
        mabs,
        tuple(zero_rows),
    )


def _on_grid(x: np.ndarray, dtype: Any) -> bool:
    fin = x[np.isfinite(x)]
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return bool(np.all(fin.astype(dtype).astype(np.float64) == fin))


def effective_dtype(x: np.ndarray, stored: np.dtype) -> np.dtype:
    """The coarsest float dtype whose values contain every (finite) sampled value: bfloat16, float16, float32 or
    ``stored``. A float32 table written from float16 values reports float16."""
    import ml_dtypes

    stored = np.dtype(stored)
    for dt in (np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16), np.dtype(np.float32)):
        info = finfo(stored)
        if info is not None and float(info.eps) >= float(finfo(dt).eps):
            break
        if _on_grid(x, dt):
            return dt
    return stored if finfo(stored) is not None else np.dtype(np.float64)


def rounded_dtype(x: np.ndarray, stored: np.dtype) -> np.dtype | None:
    """The bfloat16 or float16 whose rounding made values stored in a wider dtype (a bfloat16 cache saved as
    float32), or None. Values on that grid only because they are simple numbers (0, 1, small integers times powers
    of two: an identity, ALiBi's biases) are not rounded data: some value must use the dtype's last mantissa bits
    (:data:`~posenc_cli.inspect.tolerance.ROUNDED_BITS` of them)."""
    stored = np.dtype(stored)
    fin = np.asarray(x, dtype=np.float64)
    fin = fin[np.isfinite(fin) & (fin != 0)]
    eff = effective_dtype(fin, stored)
    if eff == stored or not tolerance.coarse(eff) or fin.size == 0:
        return None
    bits = round(-math.log2(float(finfo(eff).eps))) + 1  # the mantissa, its implicit bit included
    m, _ = np.frexp(fin)  # fin = m * 2**e, 0.5 <= |m| < 1
    coarse_grid = np.ldexp(m, bits - tolerance.ROUNDED_BITS)
    return eff if bool(np.any(coarse_grid != np.round(coarse_grid))) else None


#: Values smaller than this are measured in ulps of it: a value that should be 0 and is 1e-12 is a tiny absolute
#: error, not a billion ulps of 1e-12.
ULP_FLOOR = tolerance.ULP_FLOOR


def ulps(x: np.ndarray, y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``|x - y|`` in ulps of ``dtype`` at the larger of ``|x|``, ``|y|`` and :data:`ULP_FLOOR` (equal values,
    equal infinities and NaN = NaN are 0; other non-finite differences are inf)."""
    d = abs_difference(x, y, np.isnan(x) & np.isnan(y))
    with np.errstate(invalid="ignore"):
        big = np.maximum(np.abs(x), np.abs(y))
    return _in_ulps(d, big, np.dtype(dtype))


def _in_ulps(d: np.ndarray, big: np.ndarray, dt: np.dtype, finite: bool = False) -> np.ndarray:
    """Differences ``d`` (0 where equal, inf where not comparable) in ulps of ``dt`` at magnitude ``big``
    (``finite``: every magnitude is finite)."""
    info = finfo(dt)
    mag = np.asarray(np.maximum(big, ULP_FLOOR), dtype=np.float64)
    if not finite:
        mag = np.where(np.isfinite(mag), mag, 1.0)
    # the spacing of dt at mag: 2**(floor(log2 mag) - mantissa bits), never below the smallest normal's.
    # 2**floor(log2 mag) is mag with its mantissa bits cleared (mag >= ULP_FLOOR is a normal float64; log2 would
    # round up just below 2**k), and eps is a power of two: both steps are exact, one pass each (frexp and ldexp
    # took 5x as long on the full-table verifications of identify)
    power = (np.ascontiguousarray(mag).view(np.uint64) & np.uint64(0x7FF0_0000_0000_0000)).view(np.float64)
    spacing = np.maximum(power * float(info.eps), float(info.tiny) * float(info.eps))
    with np.errstate(invalid="ignore"):
        return d / spacing


@dataclass
class Residual:
    """How far one table is from another on the rows compared.

    ``ulp`` counts ulps of ``ulp_dtype`` at each value (see :func:`ulps`); ``within`` says every element is within
    tolerance; ``cosine`` is the cosine similarity of the two (flattened) samples.
    """

    max_abs: float
    ulp: float
    ulp_dtype: str
    cosine: float
    within: bool
    rows_checked: int
    worst_row: int = 0


def residual(
    x: np.ndarray,
    y: np.ndarray,
    dtype_x: Any,
    dtype_y: Any,
    *,
    rows_checked: int,
    row_index: np.ndarray | None = None,
    ulp_tol: float = tolerance.ULP_TOL,
    atol: float | None = None,
    ulp_dtype: Any = None,
) -> Residual:
    """Max abs and ulp difference of ``x`` from the reference ``y`` (same shape), and whether it is within
    tolerance: every element within ``ulp_tol`` ulps (:func:`ulps`) of the coarser dtype or within ``atol``
    (default 2 ulps of 1.0 in that dtype, compare's default), scaled by the larger magnitude when values exceed 1.

    Measured in blocks of rows whose temporaries stay in cache (:func:`posenc_cli.blocks.rows_per_block`: a full
    verification of a 4M-value table made a dozen 32 MiB temporaries), each block's maxima and sums combined.
    """
    from ..blocks import rows_per_block

    x, y = np.asarray(x), np.asarray(y)
    dt = np.dtype(ulp_dtype) if ulp_dtype is not None else coarser_dtype(np.dtype(dtype_x), np.dtype(dtype_y))
    atol = tolerance.default_atol(dt) if atol is None else atol
    step = rows_per_block(int(np.prod(x.shape[1:], dtype=np.int64))) if x.ndim > 1 else max(1, x.size)
    d_max, u_max, ok, num, sxx, syy, worst = 0.0, 0.0, True, 0.0, 0.0, 0.0, 0
    for start in range(0, max(1, x.shape[0] if x.ndim else 1), step):
        part = _residual_part(x[start : start + step] if x.ndim else x, y[start : start + step] if y.ndim else y,
                              dt, atol, ulp_tol)  # fmt: skip
        if part is None:
            continue
        if part[0] > d_max or start == 0:
            d_max, worst = part[0], start + part[1]
        u_max, ok = max(u_max, part[2]), ok and part[3]
        num, sxx, syy = num + part[4], sxx + part[5], syy + part[6]
    den = math.sqrt(sxx * syy)
    cosine = num / den if den > 0 else (1.0 if np.array_equal(x, y) else 0.0)
    if row_index is not None and x.size:
        worst = int(row_index[worst])
    from ..encodings.base import dtype_name

    return Residual(d_max, u_max, dtype_name(dt), cosine, ok, rows_checked, worst if x.size else 0)


def _residual_part(
    x: np.ndarray, y: np.ndarray, dt: np.dtype, atol: float, ulp_tol: float
) -> tuple[float, int, float, bool, float, float, float] | None:
    """One block of :func:`residual`: its largest difference and the row (in the block) where it first is, its
    largest ulp difference, whether every element is within tolerance, and its sums of x*y, x*x and y*y (None for
    an empty block)."""
    if not x.size:
        return None
    fx, fy = np.isfinite(x), np.isfinite(y)
    finite = bool(fx.all() and fy.all())
    d = abs_difference(x, y, None if finite else np.isnan(x) & np.isnan(y))
    with np.errstate(invalid="ignore"):
        big = np.maximum(np.abs(x), np.abs(y))  # nan where either is: d is then inf or 0
    u = _in_ulps(d, big, dt, finite)
    with np.errstate(invalid="ignore"):
        # a finite difference has both values finite: the larger magnitude scales atol past 1
        ok = (u <= ulp_tol) | (d <= atol * np.maximum(big, 1.0))
    with np.errstate(invalid="ignore", over="ignore"):
        if finite:
            num, sxx, syy = float(np.sum(x * y)), float(np.sum(x * x)), float(np.sum(y * y))
        else:
            num = float(np.sum(np.where(fx & fy, x * y, 0.0)))
            sxx, syy = float(np.sum(np.where(fx, x * x, 0.0))), float(np.sum(np.where(fy, y * y, 0.0)))
    row = int(np.argmax(d.reshape(d.shape[0], -1).max(axis=1))) if d.ndim > 1 else int(np.argmax(d))
    return float(d.max()), row, float(u.max()), bool(np.all(ok)), num, sxx, syy


# ----- numbers ------------------------------------------------------------------------------------------------------
def nice_number(value: float, rel_tol: float) -> float:
    """The number with the fewest significant decimal digits within ``rel_tol`` of ``value`` (itself if none)."""
    if not math.isfinite(value) or value == 0:
        return value  # (itself: -0.0 stays -0.0)
    if type(value) is float and type(rel_tol) is float:  # (not NumPy scalars: their arithmetic is their own)
        return _nice_number(value, rel_tol)
    return _nice_number.__wrapped__(value, rel_tol)


# identify reads the same numbers again and again (every candidate's parameters, ranked by their digits)
@functools.lru_cache(maxsize=8192)
def _nice_number(value: float, rel_tol: float) -> float:
    for digits in range(1, 18):
        r = float(f"{value:.{digits - 1}e}")
        if abs(r - value) <= rel_tol * abs(value):
            return r
    return value


def nice_digits(value: float) -> int:
    """Significant decimal digits of ``value`` as its shortest repr writes it."""
    return _nice_digits(float(value))


@functools.lru_cache(maxsize=8192)
def _nice_digits(value: float) -> int:
    if not math.isfinite(value) or value == 0:
        return 1
    short = repr(abs(value))
    if "e" in short:
        short = short.split("e")[0]
    digits = short.replace(".", "").lstrip("0").rstrip("0")
    return max(1, len(digits))


# ----- one table, measured lazily -------------------------------------------------------------------------------
class TableAnalysis:
    """The tensors to identify and what has been measured of them, computed on first use and shared.

    ``name`` is the main tensor (the first with two or more dimensions), ``table`` that tensor. Nothing here knows
    about encoding kinds: per-kind hints read these measurements and decide.
    """

    def __init__(self, tensors: dict[str, Any], metadata: dict[str, str] | None = None) -> None:
        self.tensors = tensors
        self.metadata = dict(metadata or {})
        names = list(tensors)
        self.name = next((k for k in names if len(tensors[k].shape) >= 2), names[0])
        self.table = tensors[self.name]
        self._cache: dict[str, Any] = {}

    # ----- shape and dtype ------------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.table.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def n(self) -> int:
        return self.shape[0] if self.shape else 1

    @property
    def width(self) -> int:
        return int(np.prod(self.shape[1:])) if self.ndim >= 2 else 1

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.table.dtype)

    @property
    def floating(self) -> bool:
        return finfo(self.dtype) is not None

    @property
    def dtype_param(self) -> str | None:
        """The posenc dtype name of a floating table (None for integers)."""
        from ..encodings.base import FLOAT_DTYPES, dtype_name

        name = dtype_name(self.dtype)
        return name if name in FLOAT_DTYPES else None

    def _memo(self, key: str, fn: Any) -> Any:
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    # ----- measurements -------------------------------------------------------------------------------------------
    @property
    def values(self) -> ValueSummary:
        """Range, NaN/infinity counts and integer-ness of the whole main table (one streaming pass)."""
        return self._memo("values", lambda: value_summary(self.table))

    @property
    def head(self) -> np.ndarray:
        """The first (up to) 16 rows, float64, 2-D."""
        return self._memo(
            "head", lambda: read_rows(self.table, np.arange(min(self.n, 16))).reshape(min(self.n, 16), -1)
        )

    @property
    def zero_rows(self) -> np.ndarray:
        """The first (up to 16) rows that are all zero: padding or [CLS] rows (from the full scan)."""
        if self.width <= 1:
            return np.zeros(0, dtype=np.int64)
        return np.array(self.values.zero_rows, dtype=np.int64)

    @property
    def sample(self) -> LagSample:
        """The lag sample of the main table's rows, avoiding zero rows."""

        def make() -> LagSample:
            s = lag_sample(self.n, exclude=self.zero_rows)
            # a short table whose zero row is its first (a sin table at position 0) keeps that row
            return s if s.usable or not self.zero_rows.size else lag_sample(self.n)

        return self._memo("sample", make)

    @property
    def x(self) -> np.ndarray:
        """The main table on ``sample.rows`` (float64, rows x columns)."""
        return self._memo("x", lambda: read_rows(self.table, self.sample.rows).reshape(self.sample.rows.size, -1))

    @property
    def spectrum(self) -> Spectrum | None:
        """The main table's columns as sinusoids of the row position (2-D floating tables only)."""

        def make() -> Spectrum | None:
            if self.ndim != 2 or not self.floating or not self.sample.usable:
                return None
            return spectrum(self.table, sample=self.sample, x=self.x, dtype=self.dtype)

        return self._memo("spectrum", make)

    @property
    def effective_dtype(self) -> np.dtype:
        return self._memo("eff", lambda: effective_dtype(self.x, self.dtype) if self.floating else self.dtype)

    def tensor(self, prefix: str) -> tuple[str, Any] | None:
        """The first tensor whose name starts with ``prefix`` (case-insensitive), as ``(name, tensor)``."""
        for k, v in self.tensors.items():
            if k.lower().startswith(prefix):
                return k, v
        return None

    def read(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Rows of tensor ``name`` as float64, 2-D."""
        t = self.tensors[name]
        return read_rows(t, rows).reshape(len(rows), -1)
