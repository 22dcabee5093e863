"""The Python API's errors: every number is checked where it enters (a one-line ParameterError naming the
parameter and its range), every unknown tensor is an UnknownTensorError, every rows() follows one rule, what write
writes is what it says (format, tensors, dtypes), and nothing reaches a caller as a bare ValueError or KeyError."""

from __future__ import annotations

import io
import os
import sys

import numpy as np
import pytest

import posenc_cli as pe
from posenc_cli import formats
from posenc_cli.checks import probe_bytes
from posenc_cli.checks.base import MAX_PROBES
from posenc_cli.errors import ParameterError, PosencError, UnknownTensorError
from posenc_cli.formats import ArrayTensor

from .each import each


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text and isinstance(err.value, PosencError)
    return text


# ----- check: probes, seed, max_bytes ---------------------------------------------------------------------------
def test_check_refuses_bad_numbers_by_name():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            ({"probes": 0}, f"probes=0 is out of range; pass an integer from 1 to {MAX_PROBES}"),
            ({"probes": -5}, f"probes=-5 is out of range; pass an integer from 1 to {MAX_PROBES}"),
            ({"probes": MAX_PROBES + 1}, f"probes={MAX_PROBES + 1} is out of range"),
            ({"probes": 2.5}, "probes=2.5 is not an integer"),
            ({"probes": True}, "probes=True is not an integer"),
            ({"seed": -1}, "seed=-1 is out of range; pass an integer from 0 to 4294967295"),
            ({"seed": 2**32}, "seed=4294967296 is out of range; pass an integer from 0 to 4294967295"),
            ({"seed": "7"}, "seed='7' is not an integer"),
            ({"max_bytes": 0}, "max_bytes=0 is out of range; pass an integer >= 1"),
        ],
        lambda case: _check_refuses_bad_number_by_name(*case),
    )


def _check_refuses_bad_number_by_name(kwargs, message):
    with pytest.raises(ParameterError) as err:
        pe.check("sinusoidal:length=16,dim=8", **kwargs)
    assert one_line(err) == message or one_line(err).startswith(message)


def test_check_takes_the_edges_of_its_ranges():
    assert pe.check("sinusoidal:length=16,dim=8", probes=1, seed=0).ok
    assert pe.check("sinusoidal:length=16,dim=8", probes=3, seed=2**32 - 1).ok


def test_probe_bytes_counts_every_probe_driven_array():
    # 12 n + (16 + 2 blocks) d + 6 * 256 d float64 values per probe; 16 x 8 is one block
    assert probe_bytes((16, 8), 1) == 8 * (12 * 16 + 18 * 8 + 6 * 256 * 8)
    assert probe_bytes((16, 8), 10) == 10 * probe_bytes((16, 8), 1)
    big = probe_bytes((8192, 128), 8)
    assert big > 8 * 8 * 12 * 8192  # at least the Gram and shift probes' n x probes arrays


def test_check_refuses_probes_that_would_pass_max_bytes_before_allocating(monkeypatch):
    """probes=100000000 used to try to allocate n x probes float64 arrays; now the limit refuses it first."""
    from posenc_cli.checks import absolute

    def never(*args, **kwargs):  # pragma: no cover - reached only when the limit is not enforced
        raise AssertionError("a probe was allocated")

    monkeypatch.setattr(absolute, "_gram_feed", never)
    need = probe_bytes((64, 16), 64)
    with pytest.raises(ParameterError) as err:
        pe.check("sinusoidal:length=64,dim=16", probes=64, max_bytes=need - 1)
    text = one_line(err)
    assert text.startswith("probes=64 would allocate about ")
    assert "on sinusoidal:length=64,dim=16 (64, 16), above the" in text
    assert text.endswith(f"pass probes={64 * (need - 1) // need} or fewer, or raise max_bytes")
    monkeypatch.undo()
    assert pe.check("sinusoidal:length=64,dim=16", probes=64, max_bytes=need).ok


def test_check_with_huge_probes_is_refused_under_the_default_limit():
    with pytest.raises(ParameterError, match=r"^probes=65536 would allocate about .* above the 8.0 GiB limit"):
        pe.check("sinusoidal:length=8192,dim=128", probes=MAX_PROBES)


# ----- compare: atol, rtol --------------------------------------------------------------------------------------
def test_compare_refuses_tolerances_that_are_not_finite_and_non_negative():
    """Every case (:func:`tests.each.each`: each failure named)."""
    cases = [(name, value) for value in (float("nan"), float("inf"), -1e-9) for name in ("atol", "rtol")]
    each(cases, lambda case: _compare_refuses_tolerance(*case))


def _compare_refuses_tolerance(name, value):
    with pytest.raises(ParameterError) as err:
        pe.compare("sinusoidal:length=8,dim=4", "sinusoidal:length=8,dim=4,base=500", **{name: value})
    assert one_line(err) == f"{name}={value!r} is out of range; pass a finite number >= 0"


def test_rtol_inf_no_longer_makes_different_tables_the_same():
    assert not pe.compare("sinusoidal:length=8,dim=4", "sinusoidal:length=8,dim=4,base=500").same
    assert pe.compare("sinusoidal:length=8,dim=4", "sinusoidal:length=8,dim=4", rtol=0.0, atol=0.0).same


# ----- formats: suffix and format, one-tensor files -------------------------------------------------------------
def test_a_suffix_that_disagrees_with_the_format_is_refused():
    """Every case (:func:`tests.each.each`: each failure named)."""
    cases = [("out.npy", "safetensors"), ("out.safetensors", "npz"), ("a/b.CSV", "json")]
    each(cases, lambda case: _a_suffix_that_disagrees_with_the_format_is_refused(*case))


def _a_suffix_that_disagrees_with_the_format_is_refused(path, fmt):
    with pytest.raises(ParameterError) as err:
        formats.format_for(path, fmt)
    suffix = path.rsplit(".", 1)[1].lower()
    assert one_line(err) == (
        f"{path} ends in .{suffix} but format={fmt!r} asks for {fmt}; name the file .{fmt} or drop format"
    )


def test_stdout_and_names_without_a_table_suffix_take_any_format():
    for path, fmt in [("-", "safetensors"), ("out", "npz"), ("out.bin", "json"), ("o.npy", "npy")]:
        assert formats.format_for(path, fmt) == fmt, (path, fmt)


def test_write_refuses_a_disagreeing_suffix_and_creates_nothing(tmp_path):
    with pytest.raises(ParameterError, match=r"ends in \.npy but format='safetensors'"):
        pe.write(tmp_path / "out.npy", "sinusoidal:length=4,dim=4", format="safetensors")
    assert os.listdir(tmp_path) == []


def test_a_table_of_several_tensors_needs_one_chosen_for_a_one_tensor_file(tmp_path_factory):
    each(
        ["npy", "csv"],
        lambda c: _a_table_of_several_tensors_needs_one_chosen_for_a_one_tensor_file(
            tmp_path_factory.mktemp("case"), c
        ),
    )


def _a_table_of_several_tensors_needs_one_chosen_for_a_one_tensor_file(tmp_path, suffix):
    out = tmp_path / f"rope.{suffix}"
    with pytest.raises(ParameterError) as err:
        pe.write(out, "rope:length=8,dim=4")
    assert one_line(err) == (
        f"{out} is .{suffix}, which holds one tensor, but rope:length=8,dim=4 has 3 (cos, sin, inv_freq); "
        "choose one with tensor or write .safetensors, .npz or .json to keep them all"
    )
    assert os.listdir(tmp_path) == []
    written = pe.write(out, "rope:length=8,dim=4", tensors=["sin"])
    assert written.tensors == [("sin", (8, 4), "float32")]
    np.testing.assert_array_equal(
        pe.read(out).array(pe.read(out).names[0]), pe.generate("rope", length=8, dim=4).array("sin")
    )


def test_npy_on_stdout_keeps_the_whole_table_in_its_trailer(monkeypatch):
    buf = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(buf))
    written = pe.write("-", "rope:length=8,dim=4")
    assert [n for n, _, _ in written.tensors] == ["cos", "sin", "inv_freq"]
    table = formats.read_stream(io.BytesIO(buf.getvalue()), "stdin")
    assert list(table.tensors) == ["cos", "sin", "inv_freq"]


# ----- integer tensors and float dtypes --------------------------------------------------------------------------
def test_write_refuses_a_float_dtype_for_an_integer_tensor(tmp_path):
    with pytest.raises(ParameterError) as err:
        pe.write(tmp_path / "b.safetensors", "t5:length=8", dtype="float16")
    assert one_line(err) == (
        "tensor 'buckets' of t5:length=8 holds int64 integers, which are not cast to dtype float16; "
        "drop dtype or choose the floating tensors with tensor"
    )
    with pytest.raises(ParameterError, match=r"tensor 'idx' of arrays holds int32 integers"):
        pe.write(tmp_path / "m.npz", {"x": np.zeros((2, 2)), "idx": np.zeros((2, 2), np.int32)}, dtype="float32")
    assert os.listdir(tmp_path) == []


def test_integer_table_metadata_equals_its_bytes(tmp_path):
    written = pe.write(tmp_path / "b.safetensors", "t5:length=8")
    assert written.tensors == [("buckets", (8, 8), "int64")]
    src = pe.read(tmp_path / "b.safetensors")
    assert src.metadata["dtype"] == "int64" and src.array("buckets").dtype == np.int64
    assert pe.check(src).ok


# ----- write returns what it wrote -------------------------------------------------------------------------------
def test_write_returns_each_tensor_with_its_dtype_as_written(tmp_path):
    out = tmp_path / "rope.safetensors"
    written = pe.write(out, "rope:length=16,dim=8", dtype="float16")
    assert written.path == str(out) and written.format == "safetensors"
    assert written.tensors == [("cos", (16, 8), "float16"), ("sin", (16, 8), "float16"), ("inv_freq", (4,), "float64")]
    assert written.summary() == (f"wrote {out} (cos (16, 8) float16, sin (16, 8) float16, inv_freq (4,) float64)")
    # still the mapping name -> shape that callers used
    assert dict(written) == {"cos": (16, 8), "sin": (16, 8), "inv_freq": (4,)} and written["inv_freq"] == (4,)
    assert [f"{n} {s}" for n, s in written.items()] == ["cos (16, 8)", "sin (16, 8)", "inv_freq (4,)"]
    renamed = pe.write(tmp_path / "r.npz", "rope:length=16,dim=8", rename={"cos": "c"}, tensors=["cos"])
    assert renamed.tensors == [("c", (16, 8), "float32")] and renamed.format == "npz"


def test_arrays_and_dicts_of_arrays_are_tables_to_write(tmp_path):
    a = np.arange(16.0).reshape(4, 4)
    written = pe.write(tmp_path / "arr.npy", a)
    assert written.summary() == f"wrote {tmp_path / 'arr.npy'} (pe (4, 4) float64)"
    np.testing.assert_array_equal(np.load(tmp_path / "arr.npy"), a)
    both = pe.write(tmp_path / "two.npz", {"a": a, "b": np.ones(3, np.float32)})
    assert both.tensors == [("a", (4, 4), "float64"), ("b", (3,), "float32")]
    back = pe.read(tmp_path / "two.npz")
    np.testing.assert_array_equal(back.array("a"), a)
    np.testing.assert_array_equal(back.array("b"), np.ones(3, np.float32))


# ----- unknown tensors -------------------------------------------------------------------------------------------
def test_an_unknown_tensor_of_an_encoding_is_named_with_the_choices():
    enc = pe.generate("sinusoidal", length=8, dim=4)
    with pytest.raises(UnknownTensorError) as err:
        enc.array("cos")
    assert one_line(err) == "sinusoidal has no tensor 'cos'; choose from: pe"
    assert isinstance(err.value, KeyError) and isinstance(err.value, ParameterError)
    with pytest.raises(UnknownTensorError, match=r"^rope has no tensor 'pe'; choose from: cos, sin, inv_freq$"):
        pe.generate("rope", length=8, dim=4).rows("pe", 0, 1)


def test_an_unknown_tensor_of_a_source_is_named_with_the_choices(tmp_path):
    pe.write(tmp_path / "r.safetensors", "rope:length=8,dim=4")
    src = pe.read(tmp_path / "r.safetensors")
    for call in (lambda: src.array("pe"), lambda: src.tensor_name("pe")):
        with pytest.raises(UnknownTensorError) as err:
            call()
        assert (
            one_line(err) == f"{tmp_path / 'r.safetensors'} has no tensor 'pe'; choose tensor from: cos, sin, inv_freq"
        )
    with pytest.raises(UnknownTensorError, match=r"has no tensor 'nope'; choose tensor from: cos, sin, inv_freq"):
        pe.write(tmp_path / "x.npz", src, tensors=["nope"])
    with pytest.raises(UnknownTensorError, match=r"cannot rename 'nope' \(rename\): no such tensor"):
        pe.write(tmp_path / "x.npz", src, rename={"nope": "x"})


# ----- one rule for rows() ---------------------------------------------------------------------------------------
def test_rows_outside_the_table_are_refused_not_clipped():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each([(5, 100), (-1, 3), (4, 2), (0, 9), (9, 9)], lambda case: _rows_outside_the_table_are_refused(*case))


def _rows_outside_the_table_are_refused(start, stop):
    enc = pe.generate("sinusoidal", length=8, dim=4)
    with pytest.raises(ParameterError) as err:
        enc.rows("pe", start, stop)
    assert one_line(err) == (
        f"rows [{start}, {stop}) of sinusoidal tensor 'pe' are outside its 8 rows; ask for 0 <= start <= stop <= 8"
    )
    with pytest.raises(ParameterError, match=rf"rows \[{start}, {stop}\) of tensor 'pe' are outside its 8 rows"):
        ArrayTensor("pe", enc.array()).rows(start, stop)


def test_rows_inside_the_table_are_exact():
    enc = pe.generate("sinusoidal", length=8, dim=4)
    full = enc.array()
    np.testing.assert_array_equal(enc.rows("pe", 5, 8), full[5:8])
    assert enc.rows("pe", 8, 8).shape == (0, 4) and enc.rows("pe", 0, 0).shape == (0, 4)
    np.testing.assert_array_equal(ArrayTensor("pe", full).rows(2, 6), full[2:6])


def test_preview_checks_its_numbers_and_tensor():
    enc = pe.generate("rope", length=8, dim=4)
    with pytest.raises(ParameterError, match=r"^rows=0 is out of range; pass an integer >= 1$"):
        pe.api.preview(enc, rows=0)
    with pytest.raises(ParameterError, match=r"^cols=-1 is out of range"):
        pe.api.preview(enc, cols=-1)
    with pytest.raises(UnknownTensorError, match=r"rope has no tensor 'pe'"):
        pe.api.preview(enc, tensor="pe")
    assert pe.api.preview(enc, rows=3, cols=2, tensor="sin").corner.shape == (3, 2)


def test_read_and_open_table_check_max_bytes(tmp_path_factory):
    each([0, -1, 1.5], lambda c: _read_and_open_table_check_max_bytes(tmp_path_factory.mktemp("case"), c))


def _read_and_open_table_check_max_bytes(tmp_path, value):
    pe.write(tmp_path / "pe.npy", np.zeros((4, 4)))
    for call in (pe.read, pe.open_table):
        with pytest.raises(
            ParameterError, match=r"^max_bytes=.* (is out of range|is not an integer); pass an integer >= 1$"
        ):
            call(tmp_path / "pe.npy", max_bytes=value)
