"""Sinusoidal tables against 200-bit mpmath: within 2 ulp of the exact value at positions up to 2**24.

The exact value of a column is ``sin(t w_k)`` / ``cos(t w_k)`` with ``w_k`` the exact real frequency
(``base**(-2k/d)`` or the tensor2tensor geometric formula) computed in mpmath, independently of the engine.
Positions are sampled in windows at the start, near 1,000,000, at the end (2**24) and at random, plus the
adversarial positions where some column lands closest to a zero of sin or cos (continued fractions of
``w_k / pi``): there angle addition's absolute error is largest in ulps and the exact fix-up must kick in.
A second test shows the float32-angle formula (PyTorch tutorial) and the float64-angle formula (TF tutorial)
are far outside that bound at the same positions, so the comparison can fail.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

mp = pytest.importorskip("mpmath")

from posenc_cli.encodings import _angleadd, make_encoding  # noqa: E402 (after importorskip)

TOP = 2**24
WINDOW = 2048
#: random (row, column) samples per window, beside its first and last rows at every (dim / 16)-th column (each
#: window's smallest and largest angles) and the adversarial positions: ~2 mpmath evaluations a sample are the cost
SAMPLES_PER_WINDOW = 150

CONFIGS = [
    # dim, base, layout, freq, dtype
    (1024, 10000.0, "interleaved", "paper", "float32"),
    (1024, 10000.0, "split", "paper", "float32"),
    (1024, 10000.0, "interleaved", "paper", "float64"),
    (256, 500000.0, "split-cos-first", "t2t", "float32"),
    (256, 10000.0, "split", "t2t", "float64"),
    (64, 100.0, "interleaved", "paper", "float32"),
    (127, 10000.0, "interleaved", "paper", "float32"),
    (129, 10000.0, "split", "t2t", "float32"),
]


@functools.cache  # pure in its arguments (every test sets mp.prec = 200 first): tests share one computation
def exact_freqs(dim: int, n: int, freq: str, base: float) -> tuple:
    """The exact real frequencies, from the published formulas (not from the engine)."""
    assert mp.mp.prec == 200
    return tuple(_exact_freqs(dim, n, freq, base))


def _exact_freqs(dim: int, n: int, freq: str, base: float) -> list:
    if freq == "paper":
        return [mp.power(mp.mpf(base), mp.mpf(-2 * k) / dim) for k in range(n)]
    inc = mp.log(mp.mpf(base)) / max(dim // 2 - 1, 1)  # min_timescale = 1, max_timescale = base
    return [mp.exp(-k * inc) for k in range(n)]


def column_map(dim: int, layout: str, freq: str) -> list[tuple[int, str] | None]:
    """Output column -> (frequency index, 'sin' or 'cos'), or None for tensor2tensor's zero pad column."""
    if dim % 2 == 0:
        n, n_sin, n_cos, pad = dim // 2, dim // 2, dim // 2, False
    elif freq == "t2t" and layout != "interleaved":
        n, n_sin, n_cos, pad = dim // 2, dim // 2, dim // 2, True
    else:
        n, n_sin, n_cos, pad = (dim + 1) // 2, (dim + 1) // 2, dim // 2, False
    if layout == "interleaved":
        cols = [(c // 2, "sin" if c % 2 == 0 else "cos") for c in range(2 * n_sin - 1 + (n_cos == n_sin))]
    else:
        first, second = ("sin", "cos") if layout == "split" else ("cos", "sin")
        cols = [(k, first) for k in range(n)] + [(k, second) for k in range(dim - n - pad)]
    cols += [None] * pad
    assert len(cols) == dim
    return cols


def ulp(x, dtype: np.dtype) -> float:
    """The spacing of ``dtype`` numbers at the exact value ``x`` (subnormal spacing near 0): a power of two."""
    fi = np.finfo(dtype)
    if x == 0:
        return float(fi.smallest_subnormal)
    _sign, _man, exp, bits = x._mpf_  # |x| = _man 2**exp with a man of `bits` bits: 2**(e-1) <= |x| < 2**e
    e = exp + bits  # frexp's exponent, from the integers (mp.frexp costs a 200-bit division)
    return math.ldexp(1.0, max(e - 1, fi.minexp) - fi.nmant)


def ulp_error(value: float, exact, dtype: np.dtype) -> float:
    # |value - exact| rounded once to float64 (a relative 2**-53 of the error), over a power of two: exact
    return float(abs(mp.mpf(float(value)) - exact)) / ulp(exact, dtype)


@functools.cache  # pure in its arguments; four tests ask for the same frequencies
def near_zeros(ws: tuple, count: int, lo: int, hi: int) -> tuple[tuple[int, int, str], ...]:
    """(position, frequency index, 'sin'/'cos') in ``[lo, hi)`` closest to a zero of sin or cos.

    The convergents p/q of x = w/pi (sin: t w near a multiple of pi, t = q) and of x = 2w/pi (cos: t w near an
    odd multiple of pi/2, p odd) are the best rational approximations, so t = q puts t w closest to a zero. The
    continued fraction runs in integers on the exact value of the 200-bit x (Euclid's algorithm), and so does the
    distance to the zero: with d = |q x - p| (exact, a ratio of integers), |sin(t w)| = sin(pi d) and, p odd,
    |cos(t w)| = sin(pi d / 2); d is tiny, so its float64 value ranks the candidates (no 200-bit sin)."""
    assert mp.mp.prec == 200
    found = []
    for k, w in enumerate(ws):
        for scale, which in ((1, "sin"), (2, "cos")):
            man, exp = (scale * w / mp.pi).man_exp  # x = man * 2**exp exactly, exp < 0 here
            x_num, x_den = int(man), 1 << -int(exp)
            a, rem = divmod(x_num, x_den)
            p0, q0, p1, q1 = 1, 0, a, 1
            num, den = x_den, rem
            while den:
                a, rem = divmod(num, den)
                num, den = den, rem
                p0, q0, p1, q1 = p1, q1, a * p1 + p0, a * q1 + q0
                if q1 >= hi:
                    break
                if q1 >= lo and (which == "sin" or p1 % 2):
                    d = abs(q1 * x_num - p1 * x_den) / x_den  # int / int: the correctly rounded float64
                    found.append((math.sin(math.pi / scale * d), q1, k, which))
    found.sort()
    return tuple((t, k, which) for _, t, k, which in found[:count])


def windows(rng: np.random.Generator) -> list[int]:
    starts = [0, 1_000_000 - WINDOW // 2, TOP - WINDOW, TOP - 3 * WINDOW // 2]
    starts += [int(s) for s in rng.integers(0, TOP - WINDOW, 3)]
    return starts


@pytest.mark.parametrize("dim,base,layout,freq,dtype", CONFIGS)
def test_within_two_ulp_of_mpmath(dim, base, layout, freq, dtype):
    mp.mp.prec = 200
    out_dtype = np.dtype(dtype)
    cols = column_map(dim, layout, freq)
    n = max(c[0] for c in cols if c) + 1
    ws = exact_freqs(dim, n, freq, base)
    rng = np.random.default_rng(dim * 7 + len(layout))
    params = {"dim": dim, "base": base, "layout": layout, "freq": freq, "dtype": dtype, "length": WINDOW}
    if out_dtype == np.float32:
        # The window is long enough for angle addition (the float32 fast path) to be used.
        assert 2 * _angleadd.step_rows(n) <= WINDOW

    targets: dict[int, set[tuple[int, int]]] = {}  # window start -> {(row, col)}
    for start in windows(rng):
        targets[start] = {
            (int(r), int(c))
            for r, c in zip(rng.integers(0, WINDOW, SAMPLES_PER_WINDOW), rng.integers(0, dim, SAMPLES_PER_WINDOW))
        }
        targets[start] |= {(r, c) for r in (0, WINDOW - 1) for c in range(0, dim, max(1, dim // 16))}
    col_of = {kw: c for c, kw in enumerate(cols) if kw}
    adversarial = near_zeros(ws, 6, 1000, TOP)
    for t, k, which in adversarial:
        if (k, which) not in col_of:
            continue
        start = min(max(t - 700, 0), TOP - WINDOW)  # not aligned to a step: the element sits mid-step
        targets.setdefault(start, set()).add((t - start, col_of[(k, which)]))

    worst, worst_at, checked = 0.0, None, 0
    for start, pairs in targets.items():
        enc = make_encoding("sinusoidal", {**params, "offset": start})
        if out_dtype == np.float32:
            table = enc.array()
        else:  # float64 is computed element by element (exact range reduction): the sampled rows, as rows() serves
            table = {r: enc.rows("pe", r, r + 1)[0] for r in {r for r, _ in pairs}}  # them, not 2048 x dim values
        assert {table[r].dtype for r, _ in pairs} == {out_dtype}
        for row, col in sorted(pairs):
            t = start + row
            kw = cols[col]
            if kw is None:
                exact = mp.mpf(0)
            else:
                k, which = kw
                exact = mp.sin(t * ws[k]) if which == "sin" else mp.cos(t * ws[k])
            err = ulp_error(table[row][col], exact, out_dtype)
            checked += 1
            if err > worst:
                worst, worst_at = err, (t, col, float(table[row][col]), float(exact))
    assert worst <= 2.0, f"max error {worst:.3f} ulp at (t, col, got, exact)={worst_at}; {checked} samples"
    # Visible in -rP / on failure: the observed bound for this configuration.
    print(f"{dim} {layout} {freq} {dtype}: max {worst:.3f} ulp over {checked} samples")


def test_naive_formulas_are_off_at_large_positions():
    """The same comparison catches the float32-angle (PyTorch tutorial) and float64-angle (TF) formulas."""
    mp.mp.prec = 200
    dim = 512
    ws = exact_freqs(dim, dim // 2, "paper", 10000.0)
    t = np.array([1_000_003, 5_000_011, TOP - 1], dtype=np.int64)
    ks = np.arange(0, dim // 2, 8)
    # PyTorch tutorial: div_term = exp(arange(0, d, 2) * (-ln(10000) / d)) and the angle in float32.
    div_term = np.exp(np.arange(0, dim, 2, dtype=np.float32) * np.float32(-math.log(10000.0) / dim))
    angle32 = t.astype(np.float32)[:, None] * div_term[None, ks]
    torch_like = np.sin(angle32.astype(np.float64)).astype(np.float32)  # even with an exact float32 sin
    # TF tutorial: float64 angle, np.sin, kept in float64.
    rates = 1 / (10000 ** (np.arange(dim // 2) / (dim // 2)))
    tf_like = np.sin(t[:, None].astype(np.float64) * rates[None, ks])
    ours32 = np.stack(
        [make_encoding("sinusoidal", {"length": 1, "dim": dim, "offset": int(p)}).array()[0, 2 * ks] for p in t]
    )
    ours64 = np.stack(
        [
            make_encoding("sinusoidal", {"length": 1, "dim": dim, "offset": int(p), "dtype": "float64"}).array()[
                0, 2 * ks
            ]
            for p in t
        ]
    )
    err = {"torch32": 0.0, "tf64": 0.0, "ours32": 0.0, "ours64": 0.0}
    for i, p in enumerate(t):
        for j, k in enumerate(ks):
            exact = mp.sin(int(p) * ws[k])
            err["torch32"] = max(err["torch32"], ulp_error(torch_like[i, j], exact, np.dtype(np.float32)))
            err["tf64"] = max(err["tf64"], ulp_error(tf_like[i, j], exact, np.dtype(np.float64)))
            err["ours32"] = max(err["ours32"], ulp_error(ours32[i, j], exact, np.dtype(np.float32)))
            err["ours64"] = max(err["ours64"], ulp_error(ours64[i, j], exact, np.dtype(np.float64)))
    assert err["torch32"] > 1e4, err
    assert err["tf64"] > 1e4, err
    assert err["ours32"] <= 2 and err["ours64"] <= 2, err


def test_fixup_handles_results_near_zero():
    """Near a zero of sin/cos, angle addition's absolute error is many float32 ulps: those are recomputed."""
    mp.mp.prec = 200
    dim, n = 1024, 512
    ws = exact_freqs(dim, n, "paper", 10000.0)
    enc = make_encoding("sinusoidal", {"length": WINDOW, "dim": dim})
    adder = enc._adder
    f32 = np.dtype(np.float32)
    fixed, unfixed, smallest = [], [], 1.0
    for t, k, which in near_zeros(ws, 6, 1000, TOP):
        exact = mp.sin(t * ws[k]) if which == "sin" else mp.cos(t * ws[k])
        smallest = min(smallest, abs(float(exact)))
        col = 2 * k + (which == "cos")
        for tiny, errs in ((_angleadd.tiny_threshold(f32), fixed), (None, unfixed)):
            rows = np.empty((3, n), dtype=np.complex64)
            adder.fill(t - 1, rows, tiny)
            errs.append(ulp_error(rows.view(np.float32)[1, col], exact, f32))
    assert smallest < _angleadd.tiny_threshold(f32), smallest  # the fix-up path is exercised
    # Without the fix-up these reach ~2 ulp (2.04 with NumPy 2.4 on x86-64); with it they are correctly rounded.
    assert max(fixed) <= 1.0, f"fixed {fixed}; without the fix-up {unfixed}"
