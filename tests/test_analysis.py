"""The structure primitives of posenc_cli.inspect.analysis, on tables built here with plain NumPy from the published
formulas (never with posenc's generators)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from posenc_cli.inspect import analysis as an

from .each import each


# ----- independent transcriptions (float64 NumPy, rounded once) -------------------------------------------------
def sinusoidal(
    n: int, d: int, base: float = 10000.0, layout: str = "interleaved", offset: int = 0, dtype=np.float32
) -> np.ndarray:
    """Vaswani et al. 2017: pe[t, 2k] = sin(t w_k), pe[t, 2k+1] = cos(t w_k), w_k = base^(-2k/d)."""
    t = np.arange(offset, offset + n, dtype=np.float64)[:, None]
    w = base ** (-np.arange(0, d, 2) / d)
    pe = np.zeros((n, d))
    if layout == "interleaved":
        pe[:, 0::2], pe[:, 1::2] = np.sin(t * w), np.cos(t * w)
    elif layout == "split":
        pe[:, : d // 2], pe[:, d // 2 :] = np.sin(t * w), np.cos(t * w)
    else:  # split-cos-first
        pe[:, : d // 2], pe[:, d // 2 :] = np.cos(t * w), np.sin(t * w)
    return pe.astype(dtype)


def rotary(n: int, d: int, inv_freq: np.ndarray | None = None, base: float = 10000.0, layout: str = "half"):
    """HF rotate_half tables: emb = cat(freqs, freqs); GPT-J: repeat each frequency twice."""
    w = base ** (-np.arange(0, d, 2) / d) if inv_freq is None else inv_freq
    ang = np.arange(n, dtype=np.float64)[:, None] * w
    if layout == "half":
        return np.concatenate([np.cos(ang)] * 2, 1).astype(np.float32), np.concatenate([np.sin(ang)] * 2, 1).astype(
            np.float32
        )
    return np.repeat(np.cos(ang), 2, 1).astype(np.float32), np.repeat(np.sin(ang), 2, 1).astype(np.float32)


def llama3_inv_freq(d: int, base: float, factor: float, low: float, high: float, old: int) -> np.ndarray:
    """HF _compute_llama3_parameters in float64."""
    inv = base ** (-np.arange(0, d, 2) / d)
    wl = 2 * math.pi / inv
    low_wl, high_wl = old / low, old / high
    out = np.where(wl > low_wl, inv / factor, inv)
    smooth = (old / wl - low) / (high - low)
    mid = (wl >= high_wl) & (wl <= low_wl)
    return np.where(mid, (1 - smooth) * out / factor + smooth * out, out)


def yarn_inv_freq(d: int, base: float, factor: float, low: int, high: int) -> np.ndarray:
    inv = base ** (-np.arange(0, d, 2) / d)
    ramp = np.clip((np.arange(d // 2) - low) / (high - low), 0, 1)
    return inv * (ramp / factor + 1 - ramp)


def alibi(heads: int, n: int) -> np.ndarray:
    """Press et al.: bias[h, i, j] = -m_h |i - j| with m_h = 2^(-8 (h+1) / heads) (heads a power of two)."""
    m = 2.0 ** (-8 * np.arange(1, heads + 1) / heads)
    i = np.arange(n)
    return (-m[:, None, None] * np.abs(i[None, :, None] - i[None, None, :])).astype(np.float32)


# ----- frequencies --------------------------------------------------------------------------------------------------
def test_frequencies_tell_base_10000_from_10001_on_512_rows():
    each(["interleaved", "split", "split-cos-first"], _frequencies_tell_base_10000_from_10001_on_512_rows)


def _frequencies_tell_base_10000_from_10001_on_512_rows(layout):
    for base in (10000.0, 10001.0):
        pe = sinusoidal(512, 128, base, layout)
        spec = an.spectrum(pe)
        w = base ** (-np.arange(0, 128, 2) / 128)
        assert len(spec.oscillators) == 64 and spec.sinusoidal
        assert np.max(np.abs(np.sort(spec.freqs)[::-1] / w - 1)) < 1e-6
        fit = an.geometric_fit(*an_ladder(spec))
        estimate, convention = an.infer_base(fit.ratio, fit.w0, 64, 128)
        assert convention == "2k/width"
        assert abs(estimate - base) < 0.01, estimate


def an_ladder(spec: an.Spectrum) -> tuple[np.ndarray, np.ndarray]:
    osc = spec.by_frequency()
    return np.array([o.freq for o in osc]), np.array([o.err for o in osc])


def test_single_cos_columns_without_their_sin():
    cos, _ = rotary(512, 64)
    spec = an.spectrum(cos, find=False)
    w = 10000 ** (-np.arange(0, 64, 2) / 64)
    assert spec.sinusoidal and not spec.pairs
    assert np.max(np.abs(spec.freqs[:32] / w - 1)) < 1e-4
    assert np.all(np.abs(spec.freqs[:32] / w - 1) <= 6 * spec.errs[:32] / w + 1e-12)


def test_pairs_and_their_layout():
    each(
        [("interleaved", "interleaved"), ("split", "split"), ("split-cos-first", "split-cos-first")],
        lambda c: _pairs_and_their_layout(*c),
    )


def _pairs_and_their_layout(layout, expected):
    spec = an.spectrum(sinusoidal(200, 32, layout=layout))
    assert an.pair_layout(spec.pairs, 32) == expected
    # the sin member is the one whose angle advances with the position
    sin_cols = sorted(s for s, _ in spec.pairs)
    assert (
        sin_cols
        == {"interleaved": list(range(0, 32, 2)), "split": list(range(16)), "split-cos-first": list(range(16, 32))}[
            layout
        ]
    )


def test_duplicate_layouts_of_rotary_tables():
    for layout in ("half", "interleaved"):
        cos, sin = rotary(64, 32, layout=layout)
        assert an.duplicate_layout(cos, 0.0) == layout
        assert an.duplicate_layout(sin, 0.0) == layout
    assert an.duplicate_layout(sinusoidal(64, 32), 0.0) is None


def test_position_offset_from_phases():
    each([0, 1, 2, 517, 70000], _position_offset_from_phases)


def _position_offset_from_phases(offset):
    spec = an.spectrum(sinusoidal(256, 64, offset=offset))
    o, misfit = an.position_offset(spec)
    assert o == offset and misfit < 1e-4


def test_lag_sample_avoids_excluded_rows():
    s = an.lag_sample(100, exclude=[1, 50])
    assert 1 not in s.rows and 50 not in s.rows
    for m, lo, c, hi in zip(s.lags, s.minus, s.center, s.plus):
        assert np.all(s.pos[hi] - s.pos[c] == m) and np.all(s.pos[c] - s.pos[lo] == m)


# ----- frequency laws -----------------------------------------------------------------------------------------------
def test_geometric_fit_keeps_the_leading_run_of_a_ramp():
    w = llama3_inv_freq(128, 500000.0, 8.0, 1.0, 4.0, 8192)
    fit = an.geometric_fit(w)
    plain = 500000.0 ** (-np.arange(0, 128, 2) / 128)
    kept = int(np.sum(np.isclose(w, plain, rtol=1e-12)))
    assert fit.count == kept
    assert abs(fit.ratio**-64 - 500000.0) / 500000.0 < 1e-9


def test_scaling_profiles():
    ref = 10000.0 ** (-np.arange(0, 64, 2) / 64)
    assert an.scaling_profile(ref, ref).kind == "same"
    lin = an.scaling_profile(ref / 4, ref)
    assert lin.kind == "linear" and abs(lin.factor - 4) < 1e-9
    ntk = an.scaling_profile(500000.0 ** (-np.arange(0, 64, 2) / 64), ref)
    assert ntk.kind == "power" and abs(ntk.exponent - math.log(500000) / math.log(10000)) < 1e-9
    ref128 = 500000.0 ** (-np.arange(0, 128, 2) / 128)
    l3 = an.scaling_profile(llama3_inv_freq(128, 500000.0, 8.0, 1.0, 4.0, 8192), ref128)
    assert l3.kind == "ramp-frequency" and abs(l3.factor - 8) < 1e-9
    # the ramp runs between the frequencies of wavelengths 8192 / 1 and 8192 / 4
    assert np.allclose(l3.ramp, (2 * math.pi / 8192, 2 * math.pi * 4 / 8192), rtol=1e-9)
    yarn = an.scaling_profile(yarn_inv_freq(128, 10000.0, 16.0, 20, 41), 10000.0 ** (-np.arange(0, 128, 2) / 128))
    assert yarn.kind == "ramp-index" and np.allclose(yarn.ramp, (20, 41)) and abs(yarn.factor - 16) < 1e-9
    rng = np.random.default_rng(0)
    assert an.scaling_profile(ref / rng.uniform(1, 3, ref.size), ref).kind == "per-column"


# ----- relative structure -------------------------------------------------------------------------------------------
def test_toeplitz_and_linear_distance_slopes():
    bias = alibi(8, 40)
    for h in range(8):
        fit = an.toeplitz_fit(bias[h])
        assert fit.max_dev == 0 and fit.value(0) == 0
        lin = an.linear_distance_fit(fit.lut)
        assert not lin.causal and lin.slope == 2.0 ** (-(h + 1)) and lin.max_dev < 1e-6
    causal = bias[0].copy()
    causal[np.triu_indices(40, 1)] = -np.inf
    fit = an.toeplitz_fit(causal)
    assert fit.max_dev == 0 and an.linear_distance_fit(fit.lut).causal
    broken = bias[0].copy()
    broken[5, 9] += 1
    assert an.toeplitz_fit(broken, np.arange(40)).max_dev == 1
    assert an.toeplitz_fit(np.zeros((3, 4))) is None


def test_axis_groups_of_a_flattened_grid():
    # MAE get_2d_sincos_pos_embed: columns [sin w | cos w | sin h | cos h], rows h * W + w
    H, W, F = 3, 5, 4
    omega = 1.0 / 10000 ** (np.arange(F) / F)
    h, w = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    w, h = w.reshape(-1)[:, None] * omega, h.reshape(-1)[:, None] * omega
    pe = np.concatenate([np.sin(w), np.cos(w), np.sin(h), np.cos(h)], axis=1)
    groups = an.axis_groups(pe)
    assert [g[0] for g in groups] == [1, W]
    assert set(groups[0][1]) <= set(range(2 * F)) and set(groups[1][1]) <= set(range(2 * F, 4 * F))


# ----- values, dtypes, reading --------------------------------------------------------------------------------------
def test_value_summary_counts_and_zero_rows():
    x = sinusoidal(100, 8)
    x[3] = 0
    x[7, 2] = np.nan
    x[8, 1] = np.inf
    v = an.value_summary(x)
    assert (v.n_nan, v.n_posinf, v.n_neginf) == (1, 1, 0) and not v.finite
    assert v.zero_rows == (3,) and not v.integer
    assert an.value_summary(np.arange(12).reshape(3, 4)).integer


def test_effective_dtype_sees_rounded_values():
    x = sinusoidal(64, 16).astype(np.float64)
    assert an.effective_dtype(x.astype(np.float16).astype(np.float64), np.dtype(np.float32)) == np.float16
    bf = x.astype(ml_dtypes.bfloat16).astype(np.float64)
    assert an.effective_dtype(bf, np.dtype(np.float32)) == np.dtype(ml_dtypes.bfloat16)
    assert an.effective_dtype(x, np.dtype(np.float32)) == np.float32


def test_ulps_are_measured_at_the_value_with_a_floor():
    one = np.array([1.0])
    assert an.ulps(one + 2.0**-23, one, np.dtype(np.float32))[0] == 1
    # a value that should be 0 and is 1e-12 is a tiny absolute error, not a billion ulps of 1e-12
    assert an.ulps(np.array([1e-12]), np.array([0.0]), np.dtype(np.float32))[0] < 0.01


def test_ulps_equal_numpy_s_spacing_at_the_larger_value():
    each([np.float16, np.float32, np.float64], _ulps_equal_numpy_s_spacing_at_the_larger_value)


def _ulps_equal_numpy_s_spacing_at_the_larger_value(dtype):
    """Against ``np.spacing`` of the dtype (an independent path): values just below a power of two included,
    where ``floor(log2(x))`` in float64 rounds up to the power."""
    rng = np.random.default_rng(5)
    info = np.finfo(dtype)
    big = np.concatenate([
        np.ldexp(1.0, rng.integers(-9, 10, 200)) * (1 - 2.0**-53),  # just below 2**k: log2 rounds to k
        np.ldexp(1.0, rng.integers(-9, 10, 200)),
        rng.uniform(1e-3, 1e3, 600),
    ])  # fmt: skip
    small = big * (1 - rng.uniform(0, 1e-2, big.size))
    # the value rounded toward zero into dtype stays in its binade: np.spacing there is the spacing posenc means
    v = big.astype(dtype)
    v = np.where(v.astype(np.float64) > big, np.nextafter(v, dtype(0)), v)
    want = np.abs(big - small) / np.spacing(v).astype(np.float64)
    got = an.ulps(big, small, np.dtype(dtype))
    assert big.min() >= an.ULP_FLOOR and big.min() > float(info.tiny)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_read_rows_of_a_lazy_tensor_joins_nearby_rows_in_one_call():
    table = np.arange(300 * 3, dtype=np.float32).reshape(300, 3)
    calls: list[tuple[int, int]] = []

    class Lazy:
        shape, dtype = table.shape, table.dtype

        def rows(self, start, stop):
            calls.append((start, stop))
            return table[start:stop]

    rows = [201, 0, 2, 1, 50, 200, 299]  # unsorted: read in the order asked
    np.testing.assert_array_equal(an.read_rows(Lazy(), rows), table[rows].astype(np.float64))
    assert calls == [(0, 51), (200, 202), (299, 300)]  # 50 - 2 <= JOIN_GAP < 200 - 50, 299 - 201


def test_read_rows_of_a_consecutive_run_is_one_call_into_a_new_float64_array():
    table = np.arange(300 * 3, dtype=np.float64).reshape(300, 3)  # float64: a conversion would copy nothing
    calls: list[tuple[int, int]] = []

    class Lazy:
        shape, dtype = table.shape, table.dtype

        def rows(self, start, stop):
            calls.append((start, stop))
            return table[start:stop]  # a view of the tensor's own buffer: the answer must not be it

    got = an.read_rows(Lazy(), np.arange(7, 300))
    assert calls == [(7, 300)] and got.dtype == np.float64
    np.testing.assert_array_equal(got, table[7:].astype(np.float64))
    got[0, 0] = -1.0
    assert table[7, 0] == 21.0
    # a run with a repeat or out of order is no run: gathered in the order asked
    np.testing.assert_array_equal(an.read_rows(Lazy(), [3, 3, 4]), table[[3, 3, 4]].astype(np.float64))
    np.testing.assert_array_equal(an.read_rows(Lazy(), [5, 4, 6]), table[[5, 4, 6]].astype(np.float64))


def test_formula_check_in_row_blocks_is_the_whole_rows_verdict():
    """identify's full verification measures the float32 formula's bound in row blocks: the verdict (ratio, the
    largest bound and its row, informative, ok) is the one of a single call on every row."""
    from posenc_cli.encodings import make_encoding
    from posenc_cli.inspect import tolerance as tol

    n, d = 9000, 64  # several blocks of posenc_cli.blocks.rows_per_block(64)
    enc = make_encoding("rope", {"length": n, "dim": d, "base": 10000.0})
    y = np.asarray(enc.rows("cos", 0, n), dtype=np.float64)
    pos = np.arange(n, dtype=np.float32)[:, None]
    inv = (1.0 / (np.float32(10000.0) ** (np.arange(0, d, 2, dtype=np.float32) / np.float32(d)))).astype(np.float32)
    x32 = np.cos(np.concatenate([pos * inv, pos * inv], axis=1)).astype(np.float64)  # the float32 formula
    rows = np.arange(n, dtype=np.int64)
    terms = enc.angle_terms("cos")
    for x in (x32, x32 + 1e-3 * (rows[:, None] == 4321)):  # within the bound, and one row beyond it
        whole = tol.formula_check(x, y, rows, terms, np.dtype(np.float32), np.dtype(np.float32))
        blocked = tol.formula_check_rows(x, y, rows, terms, np.dtype(np.float32), np.dtype(np.float32))
        assert blocked == whole
    # a float64 table judged within the float64 formula's error (NumPy code): the blocks keep that arithmetic
    f64 = np.dtype(np.float64)
    whole64 = tol.formula_check(y, y, rows, terms, f64, f64, np.float64)
    assert tol.formula_check_rows(y, y, rows, terms, f64, f64, np.float64) == whole64
    assert whole64.compute == "float64"
    assert tol.formula_check_rows(x32, y, rows, terms, np.dtype(np.float32), np.dtype(np.float32)).ok
    assert not blocked.ok


def test_nice_numbers():
    assert an.nice_number(10000.0000013, 1e-8) == 10000.0
    assert an.nice_number(499999.7, 1e-6) == 500000.0
    assert an.nice_number(1.23456789, 1e-12) == 1.23456789
    assert an.nice_digits(8192.0) == 4 and an.nice_digits(0.02) == 1


def test_read_rows_touches_only_the_rows_asked_for(tmp_path):
    x = sinusoidal(1000, 16)
    path = tmp_path / "t.npy"
    np.save(path, x)
    mm = np.load(path, mmap_mode="r")
    rows = np.array([999, 3, 500])
    assert np.array_equal(an.read_rows(mm, rows), x[rows].astype(np.float64))

    class Lazy:
        shape, dtype = x.shape, x.dtype
        calls: list[tuple[int, int]] = []

        def rows(self, a: int, b: int) -> np.ndarray:
            self.calls.append((a, b))
            return x[a:b]

    lazy = Lazy()
    assert np.array_equal(an.read_rows(lazy, [5, 6, 7, 900]), x[[5, 6, 7, 900]].astype(np.float64))
    assert lazy.calls == [(5, 8), (900, 901)]


def test_table_analysis_is_lazy_and_generic():
    pe = sinusoidal(300, 32, offset=4)
    ana = an.TableAnalysis({"pe": pe})
    assert ana.name == "pe" and ana.dtype_param == "float32" and ana.width == 32
    assert "spectrum" not in ana._cache
    assert ana.spectrum.sinusoidal and "spectrum" in ana._cache
    assert an.position_offset(ana.spectrum)[0] == 4


def test_residual_of_finite_values_is_unchanged_by_nans_in_place():
    each(range(4), _residual_of_finite_values_is_unchanged_by_nans_in_place)


def _residual_of_finite_values_is_unchanged_by_nans_in_place(seed):
    """Finite tables take a shorter path: the same values with a row of NaN in place on both sides (equal, so no
    difference) measure the same largest difference, ulps and verdict, which plain NumPy gives."""
    rng = np.random.default_rng(seed)
    y = rng.standard_normal((30, 6))
    x = (y + rng.standard_normal(y.shape) * 1e-7 * (rng.random(y.shape) < 0.2)).astype(np.float32).astype(np.float64)
    plain = an.residual(x, y, np.float32, np.float64, rows_checked=30)
    nan_row = np.full((1, 6), np.nan)
    mixed = an.residual(np.vstack([x, nan_row]), np.vstack([y, nan_row]), np.float32, np.float64, rows_checked=31)
    d = np.abs(x - y)
    assert plain.max_abs == mixed.max_abs == d.max()
    assert plain.ulp == mixed.ulp == an.ulps(x, y, np.dtype(np.float32)).max()
    assert plain.within == mixed.within and plain.worst_row == mixed.worst_row == int(np.argmax(d.max(axis=1)))
