"""``check`` judges each table within its own arithmetic, and passes nothing vacuously (issue 35, parts 1-4).

Tables made by common libraries' own code in their own dtype (tests/check_goldens.py: the libraries' bytes, SHA-256
checked) pass, every property and not only the required ones; zero, constant, repeated-row and one-row tables
fail whatever their kind; tables off by more than their arithmetic allows (made with plain NumPy: another base, a
swapped layout, noise above the float32 formula's bound, shuffled rows) fail; ``--json``'s ``ok`` is exactly
"``failed`` is empty".
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

import posenc_cli as pe
from posenc_cli.blocks import rows_per_block
from posenc_cli.inspect import tolerance as tol

from .check_goldens import library_tables
from .conftest import cli
from .each import each

#: Rows of the PyTorch tutorial's table judged (of its 5000): enough that today's exact-table thresholds fail it
#: (the float32 angle error grows with the row), few enough for the suite's budget.
TUTORIAL_ROWS = 1536


def _judged(report) -> dict[str, str]:
    return {r.name: r.status for r in report.results}


def _file(tables: dict[str, np.ndarray], path) -> str:
    save_file({k: np.ascontiguousarray(v) for k, v in tables.items()}, str(path))
    return str(path)


def keras_hub_sine(seq_length: int, hidden_size: int, max_wavelength: float = 10000.0) -> np.ndarray:
    """keras-hub's ``SinePositionEncoding.call`` (keras_hub/src/layers/modeling/sine_position_encoding.py at
    0e1444f) in float32, its compute dtype, with NumPy's float32 ops for keras.ops: ``positions`` cast to float32,
    ``min_freq = 1 / max_wavelength``, ``timescales = min_freq ** (2 (i // 2) / hidden_size)``, ``angles =
    positions * timescales``, then ``sin(angles) * sin_mask + cos(angles) * cos_mask`` (even columns sin)."""
    f32 = np.float32
    positions = np.arange(seq_length).astype(f32)
    min_freq = f32(1 / max_wavelength)
    timescales = np.power(min_freq, (2 * (np.arange(hidden_size) // 2)).astype(f32) / f32(hidden_size))
    angles = positions[:, None] * timescales[None, :]
    cos_mask = (np.arange(hidden_size) % 2).astype(f32)
    sin_mask = f32(1) - cos_mask
    return np.sin(angles) * sin_mask + np.cos(angles) * cos_mask


# ----- part 1: a correct table made by a common library passes, within its own arithmetic -------------------------
def test_pytorch_tutorial_and_annotated_transformer_pass_within_the_float32_formula():
    tutorial = library_tables("tutorial")["pe"][:TUTORIAL_ROWS]
    # the Annotated Transformer's expression order (-(log(10000) / d) against (-log(10000) / d)) gives the same
    # float32 bytes: one verdict judges both
    assert np.array_equal(library_tables("annotated")["pe"][:TUTORIAL_ROWS], tutorial)
    report = pe.check(tutorial)
    statuses = _judged(report)
    assert report.ok and report.failed == [], report.failed
    assert "FAIL" not in statuses.values(), statuses
    for prop in ("distinct", "unique", "constant-norm", "equidistant", "offset-invariant", "shift-linear", "symmetric"):
        assert statuses[prop] == "PASS", prop
    a = report.arithmetic
    assert (a["compute"], a["stored"], a["source"]) == ("float32", "float32", "inferred from the data")
    # the bound at the worst row: the float32 formula's, largest at the last row, of the angle's size there
    assert a["worst_row"] == TUTORIAL_ROWS - 1
    assert 2 * (TUTORIAL_ROWS - 1) * tol.U32 < a["value_bound"] < 0.5
    # the tolerances are the table's arithmetic's: at float64's (rtol of the largest row norm, today's exact-table
    # threshold) its measured spreads would fail
    exact_tol = 1e-5 * float(np.linalg.norm(tutorial[0].astype(np.float64)))
    for prop in ("equidistant", "symmetric"):
        r = next(r for r in report.results if r.name == prop)
        assert exact_tol < r.value <= r.tolerance, (prop, r.value, r.tolerance)


#: Rows of the 8192-row rotary caches judged: long enough that the float32 angle's error is far above float32's
#: exact-table thresholds, few enough for the suite's budget.
ROTARY_ROWS = 2048


@pytest.mark.parametrize("case", ["hf-f32", "hf-bf16", "ret", "torchtune"])
def test_rotary_caches_of_common_libraries_pass(case, tmp_path):
    tables = {k: v[:ROTARY_ROWS] for k, v in library_tables(case).items()}
    path = _file(tables, tmp_path / f"{case}.safetensors")
    report = pe.check(path)
    statuses = _judged(report)
    assert report.ok and report.failed == [], (report.failed, statuses)
    assert "FAIL" not in statuses.values(), statuses  # not even a property no kind requires
    assert statuses["distinct"] == "PASS"
    a = report.arithmetic
    if case == "torchtune":  # one angle per pair: judged as a pair of unknown layout, float64 assumed and said
        assert report.kind is None or report.kind == "rope"
        assert a["source"] in ("assumed", "inferred from the data")
    elif case == "hf-bf16":  # float32 formula, rounded to bfloat16: the rounding covers the angle's error
        assert report.kind == "rope" and a["stored"] == "bfloat16" and a["source"] == "inferred from the data"
    else:
        assert report.kind == "rope" and (a["compute"], a["source"]) == ("float32", "inferred from the data")
        assert a["worst_row"] == ROTARY_ROWS - 1 and a["value_bound"] > (ROTARY_ROWS - 1) * tol.U32


def test_bfloat16_values_widened_to_float32_are_judged_as_bfloat16():
    cos = library_tables("hf-bf16")["cos"][:512].astype(np.float32)  # how NumPy users save a bfloat16 cache
    report = pe.check(cos)
    assert report.ok and report.arithmetic["stored"] == "bfloat16", report.arithmetic


def test_keras_hub_sine_position_encoding_passes():
    table = keras_hub_sine(1024, 128)
    report = pe.check(table)
    assert report.ok and "FAIL" not in _judged(report).values(), report.failed
    assert report.arithmetic["compute"] == "float32"


def test_the_report_prints_the_arithmetic_and_the_bound(tmp_path):
    path = tmp_path / "paper32.npy"
    np.save(path, _paper32(512, 64))
    code, out, err = cli(["check", str(path)])
    text = " ".join(out.decode().split())  # unwrapped
    assert code == 0, err
    assert "arithmetic: float32 formula, stored as float32 (inferred from the data" in text
    assert "at row 511" in text
    code, out, _ = cli(["check", str(path), "--json"])
    data = json.loads(out)[0]
    assert code == 0 and data["ok"] and data["arithmetic"]["compute"] == "float32"


def test_metadata_says_the_arithmetic(tmp_path):
    # posenc's own float32-formula table: the metadata's angle_dtype says how it was computed
    path = tmp_path / "m.safetensors"
    code, _, err = cli(["generate", "sinusoidal:angle_dtype=float32", "-n", "2048", "-d", "64", "-o", str(path)])
    assert code == 0, err
    report = pe.check(str(path))
    assert report.ok and report.arithmetic["source"] == "metadata" and report.arithmetic["compute"] == "float32"
    # and a float64 table with no kind to regenerate it from is judged as float64, and says so
    report = pe.check(np.random.default_rng(0).standard_normal((64, 8)))
    assert report.arithmetic["compute"] == "float64" and report.arithmetic["source"] == "assumed"


# ----- part 1, the other direction: off by more than the arithmetic allows, it fails ------------------------------
def _paper32(n: int, d: int, base: float = 10000.0, layout: str = "interleaved") -> np.ndarray:
    """The paper's sinusoid in float32 the way the tutorial computes it (plain NumPy)."""
    w = np.exp(np.arange(0, d, 2, dtype=np.float32) * np.float32(-math.log(base) / d))
    ang = np.arange(n, dtype=np.float32)[:, None] * w[None, :]
    s, c = np.sin(ang), np.cos(ang)
    out = np.empty((n, d), np.float32)
    if layout == "interleaved":
        out[:, 0::2], out[:, 1::2] = s, c
    else:
        out[:, : d // 2], out[:, d // 2 :] = c, s  # [cos | sin]: a swapped layout
    return out


def test_mistaken_float32_tables_fail():
    n, d = 512, 64
    good = _paper32(n, d)
    assert pe.check(good, against="sinusoidal").ok
    # another base, a swapped layout: sinusoids still, but not the table asked for
    for wrong in (_paper32(n, d, base=1000.0), _paper32(n, d, layout="split-cos-first")):
        report = pe.check(wrong, against="sinusoidal")
        assert not report.ok and "against" in report.failed
    # noise ten times the float32 formula's bound at each row: no arithmetic explains it, and its properties fail
    w = 10000.0 ** (-np.arange(0, d, 2) / d)
    bound_at = (np.arange(n)[:, None] * w * (2 * np.abs(np.log(w)) + tol.K_OMEGA) * tol.U32).max(axis=1)
    noise = np.random.default_rng(1).choice([-1.0, 1.0], size=(n, d)) * 10 * (bound_at[:, None] + 1e-6)
    noisy = (good + noise).astype(np.float32)
    report = pe.check(noisy, expect="sinusoidal")
    assert not report.ok
    assert report.arithmetic["compute"] == "float64"
    assert {"equidistant", "offset-invariant"} & set(report.failed), report.failed
    # against the spec itself, off by three times the float32 formula's bound (its own, per element): the
    # arithmetic judged on the exact table it regenerates is not float32's, and matches-spec fails
    enc = pe.generate("sinusoidal", length=n, dim=d)
    bound = tol.formula_bound(enc.angle_terms("pe"), np.arange(n), np.dtype(np.float32), np.float32)
    off = (good + np.random.default_rng(2).choice([-1.0, 1.0], size=(n, d)) * 3 * bound).astype(np.float32)
    report = pe.check(off, against="sinusoidal")
    assert not report.ok and report.arithmetic["compute"] == "float64", report.arithmetic
    assert "matches-spec" in report.failed


def test_check_against_reads_the_spec_the_comparison_built_row_for_row():
    """check --against builds the spec's table once (the comparison's reference) and the arithmetic and matches-spec
    read their rows there: each value is judged against its own row (a wrong slice would move the worst value or
    fail the exact rows), and the rows handed out are read-only views, never the reference changed."""
    # three blocks of posenc_cli.blocks.rows_per_block(256) (256 rows), the last one short: the blocks are the
    # property, not their size (3000 x 64 made the same three, with 16 times the work of the exact nearest pair)
    n, d = 700, 256
    assert 2 * rows_per_block(d) < n < 3 * rows_per_block(d)
    enc = pe.generate("sinusoidal", length=n, dim=d)
    exact = np.asarray(enc.array("pe"))
    assert pe.check(exact.copy(), against="sinusoidal").ok  # every row its own: exact
    off = exact.copy()
    off[645, 17] += np.float32(1e-3)  # one value in the last block, far beyond float32's rounding
    report = pe.check(off, against="sinusoidal")
    assert not report.ok and "matches-spec" in report.failed
    assert report.against.tensors[0].result.max_abs_at == (645, 17)
    (ms,) = [r for r in report.results if r.name == "matches-spec"]
    assert ms.detail.startswith("pe[645, 17] differs") and ms.value == pytest.approx(1e-3, rel=1e-3)
    assert report.arithmetic["compute"] == "float64"
    whole = enc.array("pe")
    part = tol.spec_rows(enc, "pe", 300, 450, {"pe": whole})
    np.testing.assert_array_equal(part, enc.rows("pe", 300, 450))
    assert not part.flags.writeable and np.shares_memory(part, whole)
    np.testing.assert_array_equal(tol.spec_rows(enc, "pe", 5, 9), exact[5:9])  # nothing built: computed


def test_matches_spec_regenerates_in_the_files_value_dtype_not_from_the_comparisons_table(tmp_path):
    """A bfloat16 table written widened to float32 (metadata value_dtype bfloat16) checked --against the float32
    spec: matches-spec regenerates it in bfloat16, as its values were computed, and so finds it exact; the
    comparison's float32 table (built once for the other verdicts) is not what it reads."""
    enc = pe.generate("rope", length=700, dim=256, base=10000.0, dtype="bfloat16")  # three blocks, as above
    path = tmp_path / "widened.safetensors"
    pe.write(path, enc, dtype="float32")
    report = pe.check(str(path), against="rope:base=10000.0")
    (ms,) = [r for r in report.results if r.name == "matches-spec"]
    assert report.ok and ms.passed and ms.value == 0.0, ms.to_json()


def test_shuffled_and_noise_tables_fail_their_intended_kind(tmp_path):
    rng = np.random.default_rng(0)
    n = 256
    table = _paper32(n, 64)
    shuffled = table[rng.permutation(n)]
    noise = rng.standard_normal((n, 64)).astype(np.float32)
    for t in (shuffled, noise):
        assert not pe.check(t, expect="sinusoidal").ok
    cos, sin = library_tables("hf-f32")["cos"][:n], library_tables("hf-f32")["sin"][:n]
    perm = rng.permutation(n)
    for tables in (
        {"cos": cos[perm], "sin": sin[perm]},
        {"cos": rng.random((n, 128)), "sin": rng.random((n, 128))},
    ):
        path = _file({k: v.astype(np.float32) for k, v in tables.items()}, tmp_path / "r.safetensors")
        assert not pe.check(path, expect="rope").ok


# ----- part 2: nothing passes vacuously ----------------------------------------------------------------------------
#: 128 rows of 32 (a third of the checks' time of 512 x 128): their size is not what makes them vacuous
VACUOUS = {
    "zeros": lambda: np.zeros((128, 32)),
    "constant": lambda: np.full((128, 32), 0.25, np.float32),
    "repeated-row": lambda: np.tile(_paper32(8, 32)[5:6], (128, 1)),
    "one-row": lambda: _paper32(1, 32),
}


def test_vacuous_tables_fail_whatever_the_kind():
    def fails(case: tuple[str, str | None]) -> None:
        name, expect = case
        report = pe.check(VACUOUS[name](), expect=expect)
        assert not report.ok and "distinct" in report.failed, (report.failed, _judged(report))
        assert "distinct" in report.required

    each([(name, expect) for name in sorted(VACUOUS) for expect in (None, "sinusoidal", "rope", "learned")], fails)


@pytest.mark.parametrize("name", sorted(VACUOUS))
def test_vacuous_tables_exit_1(name, tmp_path):
    path = tmp_path / f"{name}.npy"
    np.save(path, VACUOUS[name]())
    code, out, err = cli(["check", str(path)])
    assert code == 1, err
    assert "distinct" in err
    code, out, _ = cli(["check", str(path), "--json"])
    data = json.loads(out)[0]
    assert code == 1 and data["ok"] is False and "distinct" in data["failed"]


def test_an_unknown_kind_names_what_it_could_not_judge():
    noise = np.random.default_rng(3).standard_normal((256, 16))
    report = pe.check(noise, identify=False)
    assert report.ok and report.required == ["finite", "distinct"]
    assert "matches-spec" in report.not_judged and "equidistant" in report.not_judged
    assert "regenerate" in report.not_judged["matches-spec"]


# ----- part 3: ok agrees with failed -------------------------------------------------------------------------------
def test_gemma3_cache_with_one_types_inv_freq_passes_against_its_model(tmp_path):
    # transformers' own cache of the sliding layers: cos, sin and only that type's inv_freq buffers
    # (Gemma3RotaryEmbedding registers {layer_type}_inv_freq and {layer_type}_original_inv_freq)
    path = _file(library_tables("gemma3-sliding"), tmp_path / "gemma3_sliding.safetensors")
    config = str(Path(__file__).parent / "data" / "configs" / "gemma3_text_v5.json")
    code, out, err = cli(["check", path, "--against", config, "--json"])
    data = json.loads(out)
    assert code == 0, err
    assert [d["ok"] for d in data] == [True] and data[0]["failed"] == []


def test_json_ok_is_exactly_failed_empty(tmp_path):
    rope_table = tmp_path / "rope.safetensors"
    _file({"cos": library_tables("hf-f32")["cos"][:64], "sin": library_tables("hf-f32")["sin"][:64]}, rope_table)
    nan = _paper32(64, 16).astype(np.float64)
    nan[3, 2] = np.nan
    nan_path = tmp_path / "nan.npy"
    np.save(nan_path, nan)
    cases = [
        [str(rope_table), "--against", "rope:base=500000"],  # differs: failed names 'against'
        [str(nan_path), "--require", "bounded"],  # a required property that could not run
        [str(nan_path)],
        [str(rope_table)],
    ]
    answers = []
    for args in cases:
        code, out, _ = cli(["check", *args, "--json"])
        answers.append(json.loads(out))
        for d in answers[-1]:
            assert d["ok"] == (not d["failed"]), (args, d["ok"], d["failed"])
            assert (code == 0) == d["ok"], args
    assert answers[0][0]["failed"][-1] == "against"


# ----- part 4: NaN and infinity ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [256, 64])  # 64: the shift fits start beside the first read (sweep.EARLY)
def test_nan_and_inf_fail_finite_by_name_and_nothing_else_is_judged_on_them(dim, capfd):
    t = np.random.default_rng(0).standard_normal((4096, dim))
    t[100, 3] = np.nan
    t[2000, 7] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "invalid value encountered" on the way
        report = pe.check(t)
    # nor LAPACK's own complaint about the non-finite rows ("On entry to DLASCL parameter number 4 had an
    # illegal value", written by the SVD of a least-squares fit straight to the process's stdout)
    assert capfd.readouterr() == ("", "")
    statuses = _judged(report)
    assert statuses["finite"] == "FAIL" and report.failed[0] == "finite"
    finite = next(r for r in report.results if r.name == "finite")
    assert list(finite.data["counts"].values()) == [{"nan": 1, "inf": 1}]
    assert all(s == "NOT RUN" for n, s in statuses.items() if n != "finite"), statuses
    assert all(r.needs == ("finite",) for r in report.results if r.not_run)
    # bounded by work: the table is read once (the scan finds the NaN); the second read (the Freivalds products
    # of offset-invariant and shift-linear) and its least-squares fits are not made for properties not judged
    assert len(report.passes) == 1, report.passes
