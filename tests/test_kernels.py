"""The generation kernels (encodings/_angleadd.py, grid broadcasts) and the shared check sweep (checks/sweep.py).

Tables long enough for angle addition: any block split gives the same bits, every layout and dtype; RoPE tables
(both layouts, scaled by attention_scaling) within 2 ulp of 200-bit mpmath at positions up to 2**24, near-zero
results included; the near-zero scan of the output bits; the float16/bfloat16 roundings on bits; and ``check``
results that do not depend on whether properties share the read of the table.
"""

from __future__ import annotations

import json
import math
import os
import signal
import time
from decimal import Decimal

import ml_dtypes
import numpy as np
import pytest

from posenc_cli.encodings import _angleadd, make_encoding
from posenc_cli.errors import ParameterError

from .each import each

LONG = 2 * _angleadd.STEP_ROWS + 300  # long enough for the kernel, with partial steps at both ends


def ranges(n: int, rng: np.random.Generator, count: int = 6) -> list[tuple[int, int]]:
    """Row ranges that start and stop mid-step and mid-chunk, plus one-row and whole ranges."""
    out = [(0, n), (0, 1), (n - 1, n), (_angleadd.STEP_ROWS - 3, _angleadd.STEP_ROWS + 5)]
    for _ in range(count):
        a = int(rng.integers(0, n - 1))
        out.append((a, int(rng.integers(a + 1, n + 1))))
    return out


SINUSOIDAL_BLOCK_CASES = [
    {"dim": 256},
    {"dim": 255, "layout": "split"},
    {"dim": 129, "layout": "split", "freq": "t2t"},
    {"dim": 64, "layout": "split-cos-first", "freq": "t2t", "offset": -5000},
    {"dim": 127, "offset": 2**24 - LONG},
]


def test_sinusoidal_blocks_equal_the_whole_table():
    """Each case in each dtype (one test over the 15: :func:`tests.each.each` names each failing one)."""

    def check(case):
        params, dtype = case
        enc = make_encoding("sinusoidal", {"length": LONG, "dtype": dtype, **params})
        full = enc.array()
        for a, b in ranges(LONG, np.random.default_rng(len(str(params)))):
            np.testing.assert_array_equal(enc.rows("pe", a, b), full[a:b])

    each([(p, dt) for dt in ("float32", "float16", "bfloat16") for p in SINUSOIDAL_BLOCK_CASES], check)


ROPE_BLOCK_CASES = [
    {"layout": "half"},
    {"layout": "interleaved", "scaling": "yarn", "factor": 4.0, "original_max_position_embeddings": 512},
    {"preset": "llama3.1", "offset": 10**6},
    {"cache": "onnx", "scaling": "linear", "factor": 2.0},
    {"scaling": "proportional", "partial_rotary_factor": 0.25},
    {"scaling": "yarn", "factor": 4.0, "original_max_position_embeddings": 512, "attention_factor": 0.0},
]


def test_rope_blocks_equal_the_whole_table():
    def check(params):
        enc = make_encoding("rope", {"length": LONG, "dim": 64, **params})
        for name in enc.tensor_specs():
            if name == "inv_freq":
                continue
            full = enc.array(name)
            for a, b in ranges(LONG, np.random.default_rng(7)):
                np.testing.assert_array_equal(enc.rows(name, a, b), full[a:b], err_msg=name)

    each(ROPE_BLOCK_CASES, check)


TAKE_CASES = [
    ("rope", {"dim": 64}),  # angle addition at each position (Rope._take)
    ("rope", {"dim": 48, "layout": "interleaved", "dtype": "bfloat16", "offset": -5000, "sin_sign": -1}),
    ("rope", {"dim": 64, "cache": "onnx", "dtype": "float16", "scaling": "yarn", "factor": 4.0,
              "original_max_position_embeddings": 512}),
    ("rope", {"dim": 32, "offset": 2**31 - LONG}),  # the last steps of the exact seeds' range
    ("rope", {"dim": 32, "dtype": "float64"}),  # the exact path: runs of rows (Encoding._take)
    ("sinusoidal", {"dim": 64}),  # angle addition at each position, as complex64 pairs (Sinusoidal._take)
    ("sinusoidal", {"dim": 65, "layout": "split", "freq": "t2t", "dtype": "float16", "padding_idx": 700}),  # row 700 read
    ("sinusoidal", {"dim": 64, "dtype": "float64", "scale": 0.125}),  # the exact path: runs of rows
    ("learned", {"dim": 24, "init": "truncated-normal", "dtype": "bfloat16"}),  # only the rows asked for
]  # fmt: skip


def test_take_gives_the_rows_of_the_whole_table_bit_for_bit():
    """Sampled rows in any order, repeats, both ends and both sides of a step boundary: ``take`` is the whole
    table's rows, bit for bit, on the kernel path and on the runs-of-rows path."""
    from posenc_cli.inspect import analysis as an

    rng = np.random.default_rng(5)
    idx = np.concatenate(
        [rng.integers(0, LONG, 300), [0, LONG - 1, 7, 7, 700, _angleadd.STEP_ROWS - 1, _angleadd.STEP_ROWS]]
    )

    def check(case):
        kind, params = case
        enc = make_encoding(kind, {"length": LONG, **params})
        for name, spec in enc.tensor_specs().items():
            if len(spec.shape) != 2:
                continue
            got, want = enc.lazy(name).take(idx), enc.array(name)[idx]
            assert got.dtype == want.dtype and got.view(np.uint8).tobytes() == want.view(np.uint8).tobytes(), name
            read = an.read_rows(enc.lazy(name), idx)  # identify's reader gathers through take
            assert read.dtype == np.float64 and np.array_equal(read, want.astype(np.float64)), name

    each(TAKE_CASES, check)
    with pytest.raises(ParameterError, match=f"row {LONG} of rope tensor 'cos' is outside its {LONG} rows"):
        make_encoding("rope", {"length": LONG, "dim": 8}).take("cos", [3, LONG])


def test_grid_blocks_equal_the_whole_table():
    """2-D and 3-D grids in each layout, with and without a class token (one test over the 12 cases)."""
    grids = [("sinusoidal-2d", "37x61", 64), ("sinusoidal-3d", "5x7x90", 66)]

    def check(case):
        kind, grid, dim, layout, cls_token = case
        enc = make_encoding(
            kind, {"grid": grid, "dim": dim, "layout": layout, "channels": "ceil", "cls_token": cls_token}
        )
        full = enc.array()
        for a, b in ranges(full.shape[0], np.random.default_rng(dim)):
            np.testing.assert_array_equal(enc.rows("pe", a, b), full[a:b])

    layouts = ("split", "interleaved", "sin-block")
    each([(*g, layout, cls) for g in grids for layout in layouts for cls in (False, True)], check)


@pytest.mark.parametrize("layout", ["split", "interleaved", "sin-block"])
def test_grid_values_are_the_exact_axis_tables_rounded_once(layout):
    enc = make_encoding("sinusoidal-2d", {"grid": "6x9", "dim": 24, "layout": layout})
    f = enc.n_freqs
    w = [float(v) for v in (Decimal(10000) ** (-Decimal(k) / f) for k in range(f))]
    h, x = np.divmod(np.arange(54), 9)
    rows = enc.array().astype(np.float64)
    sin_x, cos_x = np.sin(np.outer(x, w)), np.cos(np.outer(x, w))
    sin_h, cos_h = np.sin(np.outer(h, w)), np.cos(np.outer(h, w))
    if layout == "split":  # MAE: [sin w | cos w | sin h | cos h]
        want = np.hstack([sin_x, cos_x, sin_h, cos_h])
    elif layout == "interleaved":
        want = np.hstack([np.stack([sin_x, cos_x], -1).reshape(54, -1), np.stack([sin_h, cos_h], -1).reshape(54, -1)])
    else:
        want = np.hstack([sin_x, sin_h, cos_x, cos_h])
    np.testing.assert_allclose(rows, want.astype(np.float32), rtol=0, atol=1e-7)


# ----- RoPE accuracy against mpmath ---------------------------------------------------------------------------
mp = pytest.importorskip("mpmath")


def _exact_freqs(enc) -> list:
    from posenc_cli.encodings.rope.scaling import SCALINGS

    return [mp.mpf(str(v)) for v in SCALINGS[enc.scaling].exact(enc)]


def _float32_ulp(x) -> float:
    """The float32 spacing at the exact ``x`` (subnormal spacing at 0), from its mpf integers: |x| = man 2**exp
    with a man of ``bits`` bits, so 2**(exp + bits - 1) <= |x| (a 200-bit log2 cost more than the cos)."""
    if not x:
        return math.ldexp(1.0, -149)
    _sign, _man, exp, bits = x._mpf_
    return math.ldexp(1.0, max(exp + bits - 1, -126) - 23)


def _near_zero_positions(ws: list, lo: int, hi: int, count: int) -> list[tuple[int, int]]:
    """(position, frequency index) where sin or cos of some column comes closest to zero (continued fractions)."""
    found = []
    for k, w in enumerate(ws):
        x0 = x = 2 * w / mp.pi  # t w ~ m pi / 2
        a = int(mp.floor(x))
        p0, q0, p1, q1, frac = 1, 0, a, 1, x - a
        while frac != 0:
            x = 1 / frac
            a = int(mp.floor(x))
            frac = x - a
            p0, q0, p1, q1 = p1, q1, a * p1 + p0, a * q1 + q0
            if q1 >= hi:
                break
            if q1 >= lo:  # |sin(2 q w)| = sin(pi d), d = |q x0 - p| < 1 / q: d ranks them (no 200-bit sin)
                found.append((float(abs(q1 * x0 - p1)), q1, k))
    found.sort()
    return [(t, k) for _, t, k in found[:count]]


@pytest.mark.parametrize(
    "params",
    [
        {"layout": "half", "dim": 128},
        {"layout": "interleaved", "dim": 64, "base": 500000.0},
        {"layout": "half", "dim": 128, "scaling": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096},
        {"layout": "interleaved", "dim": 96, "preset": "llama3.1"},
    ],
)
def test_rope_float32_within_two_ulp_of_mpmath(params):
    mp.mp.prec = 200
    window = LONG
    probe = make_encoding("rope", {"length": window, **params})
    ws = _exact_freqs(probe)
    scale = mp.mpf(str(Decimal(repr(float(probe.attention_scaling)))))
    h = len(ws)
    rng = np.random.default_rng(h)
    starts = [0, 2**24 - window, 1_000_000, int(rng.integers(0, 2**24 - window))]
    targets = {
        s: [(int(r), int(k)) for r, k in zip(rng.integers(0, window, 120), rng.integers(0, h, 120))] for s in starts
    }
    for t, k in _near_zero_positions(ws, 1000, 2**24, 8):
        s = min(max(t - 700, 0), 2**24 - window)
        targets.setdefault(s, []).append((t - s, k))
    worst = 0.0
    for start, pairs in targets.items():
        enc = make_encoding("rope", {"length": window, "offset": start, **params})
        tables = {name: enc.array(name) for name in ("cos", "sin")}
        for row, k in pairs:
            cos, sin = mp.cos_sin((start + row) * ws[k])  # (one 200-bit evaluation for both)
            for name, exact in (("cos", scale * cos), ("sin", scale * sin)):
                col = k if enc.layout == "half" else 2 * k
                ulp = _float32_ulp(exact)
                for c in (col, col + h if enc.layout == "half" else col + 1):
                    worst = max(worst, float(abs(mp.mpf(float(tables[name][row, c])) - exact)) / ulp)
    assert worst <= 2.0, worst
    print(f"{params}: max {worst:.3f} ulp")


# ----- the near-zero scan and the bit roundings -----------------------------------------------------------------
def test_refine_recomputes_exactly_what_is_below_tiny():
    """Below the dtype's tiny threshold (|factor| < 1) the entry is recomputed, at or above it kept; each factor
    in float32 and bfloat16 (one test over the 14 cases)."""
    factors = (0.9, -0.9, 0.0, -0.0, 0.5, -2.0, 2.0)
    dtypes = (np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16))
    each([(dt, f) for dt in dtypes for f in factors], lambda case: _refine_case(*case))


def _refine_case(dtype, factor):
    adder = _angleadd.AngleAdder(np.array([0.5, 0.25]), np.zeros(2))
    tiny = _angleadd.tiny_threshold(dtype)
    cols = _angleadd.Columns(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]))
    out = np.full((4, 4), 0.5, dtype=dtype)
    out[2, 1] = factor * tiny
    at_rows = out.copy()  # the same rows, their positions given one by one (as Encoding.take gives them)
    adder.refiner(cols, dtype, tiny)(out, 100)
    adder.refiner(cols, dtype, tiny)(at_rows, np.array([100, 101, 102, 103]))
    if abs(factor) < 1:  # recomputed: cos(102 * 0.5)
        assert float(out[2, 1]) == float(np.array(np.cos(51.0), dtype=dtype))
    else:
        assert float(out[2, 1]) == float(np.array(factor * tiny, dtype=dtype))
    assert np.all(out[[0, 1, 3]] == 0.5)
    assert at_rows.tobytes() == out.tobytes()


def test_bit_roundings_equal_numpy_and_ml_dtypes_casts():
    from posenc_cli.checks.absolute import round_bfloat16_bits, round_float16_bits

    rng = np.random.default_rng(3)
    edges = [0x38800000, 0x33000000, 0x33800000, 0x477FE000, 0x477FF000, 0x47800000, 0x7F7F8000, 0x7F7FFFFF, 0]
    u = np.concatenate(
        [rng.integers(0, 0x7F800000, 200_000, dtype=np.uint32)]
        + [np.arange(max(0, c - 3000), min(0x7F800000, c + 3000), dtype=np.uint32) for c in edges]
    )
    x = u.view(np.float32)
    with np.errstate(over="ignore"):
        f16 = x.astype(np.float16).astype(np.float32).view(np.uint32)
        bf16 = x.astype(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32)
    np.testing.assert_array_equal(round_float16_bits(u.copy()), f16)
    np.testing.assert_array_equal(round_bfloat16_bits(u.copy()), bf16)


# ----- check: shared reads ----------------------------------------------------------------------------------------
def test_shared_read_gives_the_same_results_as_separate_reads():
    from posenc_cli import api, checks
    from posenc_cli.checks.base import CheckContext

    table = make_encoding("sinusoidal", {"length": 5000, "dim": 64}).array()
    together = api.check(table, expect="sinusoidal", identify=False)  # no matches-spec: the contexts below have no spec
    assert len(together.passes) == 2 and "shift-linear" in together.passes[1]["properties"]
    for r in together.results:
        ctx = CheckContext(table=table, tensors={"pe": table}, metadata={}, kind="sinusoidal", rtol=1e-5)
        (alone,) = checks.run_checks(ctx, [r.name])
        assert json.dumps(alone.to_json(), sort_keys=True) == json.dumps(r.to_json(), sort_keys=True), r.name


def test_verbose_check_names_the_shared_passes(tmp_path):
    from tests.conftest import inproc

    path = tmp_path / "pe.npy"
    np.save(path, make_encoding("sinusoidal", {"length": 300, "dim": 16}).array())
    out = inproc(["check", str(path), "--expect", "sinusoidal", "--verbose"]).stdout.decode()
    assert "pass 1 over the table (1 block of up to 300 rows) shared by finite, bounded" in out.replace("\n  ", " ")
    assert "pass 2 over the table" in out


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_fills_tables_after_the_parent_used_the_pool():
    """A DataLoader worker or multiprocessing child forked after posenc filled a big table gets the pool object
    without its threads: the child must start its own instead of waiting forever on the parent's. It also starts
    without the parent's shared angle-addition tables (whose locks a parent thread may have held at the fork)."""
    make_encoding("sinusoidal", {"length": 8192, "dim": 256}).array()  # 8 MiB: filled by the thread pool
    assert _angleadd._shared  # the parent keeps the table's adder
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        fresh = not _angleadd._shared
        a = make_encoding("sinusoidal", {"length": 8192, "dim": 256}).array()
        os._exit(0 if fresh and a.shape == (8192, 256) and float(a[1, 0]) == np.float32(np.sin(1.0)) else 3)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung filling a table (it waited on the parent's pool threads)")
