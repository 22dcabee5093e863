"""Writers and readers of posenc_cli.formats: round trips, layouts, streaming, atomicity, stdin/stdout."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import zipfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy
from safetensors import safe_open

from posenc_cli import formats
from posenc_cli.errors import InputError, OutputError, ParameterError
from posenc_cli.formats import (
    DEFAULT_MAX_BYTES,
    FORMATS,
    ArrayTensor,
    ReadTable,
    format_for,
    human_bytes,
    read_table,
    validate_table_array,
    write_table,
)

from .each import each

ROOT = Path(__file__).resolve().parent.parent
BF16 = np.dtype(ml_dtypes.bfloat16)
ALL_DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]
META = {"kind": "sinusoidal", "length": "7", "note": 'ünïcode, "quotes"\nand a newline'}


def sample(dtype: str, shape=(7, 5), seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    values = rng.standard_normal(shape) * 10
    values.flat[:3] = [0.0, -0.0, 1 / 3]
    return values.astype(BF16 if dtype == "bfloat16" else dtype)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return (
        a.shape == b.shape
        and a.dtype == b.dtype
        and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    )


def lazy(**arrays: np.ndarray) -> dict[str, ArrayTensor]:
    return {name: ArrayTensor(name, a) for name, a in arrays.items()}


def no_temp_files(directory: Path) -> bool:
    return not [p for p in directory.iterdir() if p.name.endswith(".tmp")]


@pytest.fixture
def small_blocks(monkeypatch):
    """Stream in blocks of 256 bytes, so that tiny tables take many blocks."""
    monkeypatch.setattr(formats.protocol, "BLOCK_BYTES", 256)


# ----- helpers of the interface -------------------------------------------------------------------------
def test_constants_and_human_bytes():
    assert FORMATS == ("npy", "npz", "safetensors", "csv", "json")
    assert DEFAULT_MAX_BYTES == 8 * 1024**3
    assert human_bytes(4 << 30) == "4.0 GiB"
    assert human_bytes(DEFAULT_MAX_BYTES) == "8.0 GiB"
    assert human_bytes(512) == "512 B"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(5 * 1024**2 + 1) == "5.0 MiB"


def test_format_for_suffix_and_override():
    def case(fmt):
        assert format_for(f"dir.v1/table.{fmt}", None) == fmt
        assert format_for(f"TABLE.{fmt.upper()}", None) == fmt
        assert format_for("table.bin", fmt) == fmt

    each(FORMATS, case)
    assert format_for("-", None) == "npy"


def test_format_for_unknown_lists_formats():
    def case(path_override):
        with pytest.raises(ParameterError) as exc:
            format_for(*path_override)
        assert "npy" in str(exc.value) and "safetensors" in str(exc.value) and "json" in str(exc.value)

    each([("table.txt", None), ("table", None), (".npy", None), ("t.npy", "hdf5")], case)


# ----- round trips --------------------------------------------------------------------------------------
def formats_for(dtype: str) -> list[str]:
    return [f for f in FORMATS if not (dtype == "bfloat16" and f in ("npy", "npz"))]


def test_round_trip_every_format_and_dtype(tmp_path, small_blocks):
    def case(dtype):
        pe = sample(dtype)
        for fmt in formats_for(dtype):
            path = tmp_path / f"{dtype}.{fmt}"
            write_table(str(path), lazy(pe=pe), META, fmt)
            table = read_table(str(path))
            assert isinstance(table, ReadTable) and table.source == str(path)
            assert list(table.tensors) == ["pe"], fmt
            assert same_bits(table.tensors["pe"], pe), fmt
            if fmt != "npy":  # .npy has no room for metadata
                assert table.metadata == META, fmt

    each(ALL_DTYPES, case)


def test_round_trip_several_tensors_keeps_order_and_shapes(tmp_path_factory):
    each(
        ["npz", "safetensors", "json"],
        lambda c: _round_trip_several_tensors_keeps_order_and_shapes(tmp_path_factory.mktemp("case"), c),
    )


def _round_trip_several_tensors_keeps_order_and_shapes(tmp_path, fmt):
    tensors = {
        "pe": sample("float32", (9, 4)),
        "cos": sample("float64", (9,)),
        "bias": sample("float32", (2, 9, 9)),
        "empty": np.zeros((0, 3), np.float32),
    }
    path = tmp_path / f"t.{fmt}"
    write_table(str(path), lazy(**tensors), {"kind": "rope"}, fmt)
    table = read_table(str(path))
    assert list(table.tensors) == list(tensors)
    for name, a in tensors.items():
        assert same_bits(table.tensors[name], a), name


def test_safetensors_own_loaders_read_our_stream_bit_for_bit(tmp_path, small_blocks):
    def case(dtype):
        tensors = {
            "pe": sample(dtype, (33, 7)),
            "b": sample(dtype, (5,), seed=1),
            "c": sample(dtype, (3, 4, 2), seed=2),
        }
        path = tmp_path / f"{dtype}.safetensors"
        write_table(str(path), lazy(**tensors), META, "safetensors")
        loaded = safetensors.numpy.load_file(str(path))
        assert set(loaded) == set(tensors)
        for name, a in tensors.items():
            assert same_bits(loaded[name], a), name
        with safe_open(str(path), framework="np") as f:
            assert f.metadata() == META
            for name, a in tensors.items():
                assert same_bits(f.get_tensor(name), a)
        # the data is 8-byte aligned like safetensors' own writer pads it
        n = int.from_bytes(path.read_bytes()[:8], "little")
        assert n % 8 == 0

    each(ALL_DTYPES, case)


def test_safetensors_header_matches_safetensors_own_serialisation_of_the_same_order(tmp_path):
    # safetensors sorts by dtype alignment then name; with one dtype and sorted names the bytes must agree
    tensors = {"a": sample("float32", (4, 3)), "b": sample("float32", (6,), seed=3)}
    path = tmp_path / "t.safetensors"
    write_table(str(path), lazy(**tensors), {"k": "v"}, "safetensors")
    assert path.read_bytes() == safetensors.numpy.save(tensors, metadata={"k": "v"})


def test_npy_stream_is_byte_identical_to_np_save(tmp_path, small_blocks):
    """Every dtype and shape (:func:`tests.each.each`: each failure named)."""
    shapes = [(7,), (5, 3), (2, 3, 4), (100, 17), (1, 1), (0, 4), (3, 0)]
    dtypes = ["float64", "float32", "float16", "int64", "uint8", "bool"]
    each([(d, s) for d in dtypes for s in shapes], lambda case: _npy_stream_is_np_save(tmp_path, *case))


def _npy_stream_is_np_save(tmp_path, dtype, shape):
    a = sample(dtype, shape)
    ours, ref = tmp_path / "ours.npy", tmp_path / "ref.npy"
    write_table(str(ours), lazy(pe=a), {}, "npy", force=True)
    np.save(ref, a)
    assert ours.read_bytes() == ref.read_bytes()


def test_npz_members_are_byte_identical_to_np_lib_format(tmp_path, small_blocks):
    import zipfile

    tensors = {"pe": sample("float32", (40, 6)), "slopes": sample("float64", (8,))}
    path = tmp_path / "t.npz"
    write_table(str(path), lazy(**tensors), {"kind": "alibi"}, "npz")
    with np.load(path) as npz:  # numpy's own reader, no pickles
        for name, a in tensors.items():
            assert same_bits(npz[name], a)
    with zipfile.ZipFile(path) as zf:
        for name, a in tensors.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, a, allow_pickle=False)
            assert zf.read(f"{name}.npy") == buf.getvalue()
        assert zf.namelist() == [f"{name}.npy" for name in tensors]  # nothing but tensors
        assert json.loads(zf.comment[len(b"posenc ") :]) == {"kind": "alibi"} and zf.comment.startswith(b"posenc ")
    # the usual loop over d.files meets tensors only (torch.from_numpy(d[k]) needs numeric arrays)
    with np.load(path) as d:
        loaded = {k: d[k] for k in d.files}
    assert sorted(loaded) == sorted(tensors) and all(a.dtype.kind == "f" for a in loaded.values())
    assert read_table(str(path)).metadata == {"kind": "alibi"}
    # the same table gives the same bytes (fixed timestamps)
    again = tmp_path / "again.npz"
    write_table(str(again), lazy(**tensors), {"kind": "alibi"}, "npz")
    assert again.read_bytes() == path.read_bytes()


def test_csv_and_json_are_readable_text(tmp_path):
    pe = np.array([[0.1, 1 / 3], [-2.5e-300, 7.0]])
    write_table(str(tmp_path / "t.csv"), lazy(pe=pe), {"kind": "x"}, "csv")
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert lines[0].startswith("# posenc {") and lines[1:] == ["0.1,0.3333333333333333", "-2.5e-300,7.0"]
    assert same_bits(np.loadtxt(tmp_path / "t.csv", delimiter=","), pe)  # plain numpy reads it too
    write_table(str(tmp_path / "t.json"), lazy(pe=pe, s=np.arange(3, dtype=np.int32)), {"kind": "x"}, "json")
    import json

    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc == {
        "metadata": {"kind": "x"},
        "tensors": {
            "pe": {"dtype": "float64", "shape": [2, 2], "data": [[0.1, 1 / 3], [-2.5e-300, 7.0]]},
            "s": {"dtype": "int32", "shape": [3], "data": [0, 1, 2]},
        },
    }


def test_csv_without_posenc_header_reads_as_float64(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("1,2,3\n4,5,6\n")
    table = read_table(str(path))
    assert same_bits(table.tensors["pe"], np.array([[1.0, 2, 3], [4, 5, 6]])) and table.metadata == {}


def test_readers_memory_map_npy_and_safetensors(tmp_path):
    pe = sample("float32", (64, 8))
    for fmt in ("npy", "safetensors"):
        path = tmp_path / f"t.{fmt}"
        write_table(str(path), lazy(pe=pe), {}, fmt)
        got = read_table(str(path)).tensors["pe"]
        assert isinstance(got, np.memmap) and not got.flags.writeable
        assert same_bits(got, pe)


def test_npy_reader_accepts_fortran_order_and_big_endian(tmp_path):
    a = sample("float64", (6, 5))
    np.save(tmp_path / "f.npy", np.asfortranarray(a))
    np.save(tmp_path / "b.npy", a.astype(">f8"))
    assert np.array_equal(read_table(str(tmp_path / "f.npy")).tensors["pe"], a)
    got = read_table(str(tmp_path / "b.npy")).tensors["pe"]
    assert np.array_equal(got, a) and got.dtype == np.dtype(">f8")


def test_safetensors_reader_accepts_entries_listed_out_of_offset_order(tmp_path):
    """safetensors sorts entries by offset before checking contiguity; so do we."""
    import json

    a, b = np.arange(3, dtype="<f4"), np.arange(2, dtype="<f8")
    header = {
        "b": {"dtype": "F64", "shape": [2], "data_offsets": [12, 28]},
        "a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},
    }
    raw = json.dumps(header).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + a.tobytes() + b.tobytes())
    ours = read_table(str(path)).tensors
    theirs = safetensors.numpy.load_file(str(path))
    assert list(ours) == ["a", "b"]
    for name in ("a", "b"):
        assert same_bits(ours[name], theirs[name])


# ----- layouts and byte order: the writer enforces C-contiguous little-endian ----------------------------
def layouts() -> dict[str, np.ndarray]:
    base = sample("float64", (12, 10))
    return {
        "strided": base[::2, ::3],
        "transposed": base.T,
        "fortran": np.asfortranarray(base),
        "big-endian": base.astype(">f8"),
        "negative-stride": base[::-1],
        "bf16-strided": base.astype(BF16)[:, ::2],
    }


def test_writers_enforce_c_contiguous_little_endian(tmp_path, small_blocks):
    """Every layout of :func:`layouts` (:func:`tests.each.each`, each failing layout named)."""

    def enforced(layout: str) -> None:
        a = layouts()[layout]
        expected = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype)
        path = tmp_path / f"{layout}.safetensors"
        write_table(str(path), lazy(pe=a), {}, "safetensors")
        assert same_bits(safetensors.numpy.load_file(str(path))["pe"], expected)
        assert same_bits(read_table(str(path)).tensors["pe"], expected)
        if layout.startswith("bf16"):
            return
        for fmt in ("npy", "npz"):
            path = tmp_path / f"{layout}.{fmt}"
            write_table(str(path), lazy(pe=a), {}, fmt)
            loaded = np.load(path)
            got = loaded if fmt == "npy" else loaded["pe"]
            assert same_bits(got, expected), fmt
            assert got.dtype.byteorder in ("<", "=", "|")

    each(layouts(), enforced)


def test_safetensors_own_writer_gets_strided_views_wrong_which_is_why_we_write_ourselves(tmp_path):
    """Documents the 0.8.0 behaviour STYLE.md warns about; if it is ever fixed, this test says so."""
    a = sample("float64", (8, 6))
    view = a[:, ::2]
    try:
        data = safetensors.numpy.save({"pe": view})
    except Exception:
        return
    theirs = safetensors.numpy.load(data)["pe"]
    if np.array_equal(theirs, view):
        pytest.skip("this safetensors version writes strided views correctly")
    ours = tmp_path / "t.safetensors"
    write_table(str(ours), lazy(pe=view), {}, "safetensors")
    assert np.array_equal(safetensors.numpy.load_file(str(ours))["pe"], view)


def test_real_encoding_tensors_stream_to_every_format(tmp_path, small_blocks):
    from posenc_cli.encodings import make_encoding

    enc = make_encoding("sinusoidal", {"length": 50, "dim": 8})
    expected = enc.array()
    for fmt in FORMATS:
        path = tmp_path / f"pe.{fmt}"
        write_table(str(path), enc.lazy_tensors(), enc.metadata(), fmt)
        got = read_table(str(path)).tensors["pe"]
        assert same_bits(got, expected), fmt


# ----- refusals before anything is written -------------------------------------------------------------
def test_writer_refusals_create_nothing(tmp_path):
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            ("npy", {"pe": np.zeros(3, BF16)}, {}, "bfloat16 cannot be stored in .npy"),
            ("npz", {"pe": np.zeros(3, BF16)}, {}, "write .safetensors or pass dtype float32"),
            ("safetensors", {"__metadata__": np.zeros(3)}, {}, "'__metadata__'"),
            ("npz", {"__metadata__": np.zeros(3)}, {}, "'__metadata__'"),
            ("safetensors", {"pe": np.zeros(3)}, {"length": 7}, "not a string"),
            ("json", {"pe": np.zeros(3)}, {1: "x"}, "not a string"),
            ("csv", {"pe": np.zeros((2, 2, 2))}, {}, "1-D or 2-D"),
            ("csv", {"pe": np.zeros(2), "cos": np.zeros(2)}, {}, "holds one tensor"),
            ("npy", {"pe": np.zeros(2), "cos": np.zeros(2)}, {}, "holds one tensor"),
            ("safetensors", {"pe": np.zeros(2, np.complex64)}, {}, "complex64"),
            ("safetensors", {"pe": np.zeros(2, "U3")}, {}, "does not write"),
            ("safetensors", {}, {}, "no tensors"),
            ("yaml", {"pe": np.zeros(2)}, {}, "unknown format"),
        ],
        lambda case: _writer_refusals_create_nothing(tmp_path, *case),
    )


def _writer_refusals_create_nothing(tmp_path, fmt, tensors, metadata, fragment):
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # a folder of its own: the cases share tmp_path
    path = tmp_path / f"t.{fmt}"
    with pytest.raises(ParameterError) as exc:
        write_table(str(path), lazy(**tensors), metadata, fmt)
    assert fragment in str(exc.value)
    assert list(tmp_path.iterdir()) == []


# ----- atomicity ------------------------------------------------------------------------------------------
class FailingTensor:
    """A LazyTensor whose ``fill`` raises ``exc`` on block number ``fail_on`` (1-based)."""

    def __init__(self, shape, exc: BaseException, fail_on: int = 3) -> None:
        self.name, self.shape, self.dtype = "pe", shape, np.dtype(np.float32)
        self.exc, self.fail_on, self.calls = exc, fail_on, 0

    def rows(self, start, stop):
        out = np.empty((stop - start, *self.shape[1:]), self.dtype)
        self.fill(start, stop, out)
        return out

    def fill(self, start, stop, out):
        self.calls += 1
        if self.calls == self.fail_on:
            raise self.exc
        out[...] = start


def test_existing_target_is_not_clobbered_without_force(tmp_path):
    """Every format (:func:`tests.each.each`, each failing format named)."""

    def kept(fmt: str) -> None:
        path = tmp_path / f"out.{fmt}"
        path.write_bytes(b"precious")
        with pytest.raises(OutputError) as exc:
            write_table(str(path), lazy(pe=np.ones((3, 2))), {}, fmt)
        assert str(exc.value) == f"{path} exists; pass force to overwrite"
        assert path.read_bytes() == b"precious" and no_temp_files(tmp_path)
        write_table(str(path), lazy(pe=np.ones((3, 2))), {}, fmt, force=True)
        assert same_bits(read_table(str(path)).tensors["pe"], np.ones((3, 2)))
        assert no_temp_files(tmp_path)

    each(FORMATS, kept)


def test_fault_mid_write_leaves_old_target_and_no_temp_file(tmp_path, small_blocks):
    """Ctrl-C and an error, each in every format (:func:`tests.each.each`)."""

    def case(fmt_exc):
        fmt, exc = fmt_exc
        folder = tmp_path / f"{fmt}-{type(exc).__name__}"
        folder.mkdir()
        path = folder / f"out.{fmt}"
        path.write_bytes(b"old table")
        tensor = FailingTensor((100, 4), exc)
        with pytest.raises(type(exc)):
            write_table(str(path), {"pe": tensor}, {}, fmt, force=True)
        assert tensor.calls == 3  # it really died mid-stream, after two blocks were written
        assert path.read_bytes() == b"old table"
        assert no_temp_files(folder) and sorted(p.name for p in folder.iterdir()) == [path.name]

    each([(fmt, exc) for exc in (KeyboardInterrupt(), RuntimeError("boom")) for fmt in FORMATS], case)


def test_fault_mid_write_of_a_new_target_leaves_nothing(tmp_path, small_blocks):
    with pytest.raises(KeyboardInterrupt):
        write_table(
            str(tmp_path / "new.safetensors"), {"pe": FailingTensor((100, 4), KeyboardInterrupt())}, {}, "safetensors"
        )
    assert list(tmp_path.iterdir()) == []


def test_permissions_follow_the_umask(tmp_path_factory):
    each([0o022, 0o077, 0o002], lambda c: _permissions_follow_the_umask(tmp_path_factory.mktemp("case"), c))


def _permissions_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        for fmt in FORMATS:
            path = tmp_path / f"t.{fmt}"
            write_table(str(path), lazy(pe=np.ones((2, 2))), {}, fmt)
            assert (path.stat().st_mode & 0o777) == 0o666 & ~umask, fmt
    finally:
        os.umask(old)


def test_enospc_is_a_clean_output_error(tmp_path, monkeypatch, small_blocks):
    path = tmp_path / "big.npy"
    path.write_bytes(b"old")
    real_write = os.write
    calls = []

    def full_disk(fd, data):
        calls.append(len(data))
        if len(calls) >= 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(OutputError) as exc:
        write_table(str(path), lazy(pe=np.ones((100, 8))), {}, "npy", force=True)
    monkeypatch.undo()
    assert str(exc.value) == f"cannot write {path}: No space left on device"
    assert path.read_bytes() == b"old" and no_temp_files(tmp_path)


def test_short_writes_are_completed(tmp_path, monkeypatch):
    """os.write may write less than asked; the sink loops until everything is written."""
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data)[:7]))
    a = sample("float64", (20, 3))
    write_table(str(tmp_path / "t.npy"), lazy(pe=a), {}, "npy")
    monkeypatch.undo()
    assert same_bits(np.load(tmp_path / "t.npy"), a)


def test_enospc_on_a_real_tiny_filesystem(tmp_path):
    """A 64 KiB tmpfs; skipped where mounting is not permitted (not root, no CAP_SYS_ADMIN)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=False, capture_output=True
    ).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (mnt / "t.safetensors").write_bytes(b"old")
        with pytest.raises(OutputError) as exc:
            write_table(str(mnt / "t.safetensors"), lazy(pe=np.ones((512, 128))), {}, "safetensors", force=True)
        assert str(exc.value) == f"cannot write {mnt / 't.safetensors'}: No space left on device"
        assert (mnt / "t.safetensors").read_bytes() == b"old"
        assert sorted(p.name for p in mnt.iterdir()) == ["t.safetensors"]
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_missing_directory_is_named(tmp_path):
    dest = tmp_path / "nope" / "t.npy"
    with pytest.raises(OutputError) as exc:
        write_table(str(dest), lazy(pe=np.ones(2)), {}, "npy")
    assert str(exc.value) == f"cannot write {dest}: directory {tmp_path / 'nope'} does not exist"


def test_unwritable_directory_is_an_output_error(tmp_path, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(formats.atomic, "_make_temp", denied)
    with pytest.raises(OutputError) as exc:
        write_table(str(tmp_path / "t.npy"), lazy(pe=np.ones(2)), {}, "npy")
    assert str(exc.value) == f"cannot write {tmp_path / 't.npy'}: Permission denied"


def test_directory_target_is_refused(tmp_path):
    (tmp_path / "t.npy").mkdir()
    with pytest.raises(OutputError, match="is a directory"):
        write_table(str(tmp_path / "t.npy"), lazy(pe=np.ones(2)), {}, "npy", force=True)


def test_progress_reports_every_row(tmp_path, small_blocks):
    seen = []
    tensors = lazy(pe=np.ones((300, 4)), cos=np.ones((50,)))
    write_table(str(tmp_path / "t.safetensors"), tensors, {}, "safetensors", progress=seen.append)
    assert sum(seen) == 350 and len(seen) > 2


# ----- stdout -------------------------------------------------------------------------------------------
class FakeStdout:
    def __init__(self, buffer) -> None:
        self.buffer = buffer


def test_stdout_gets_the_same_bytes_as_a_file(tmp_path, small_blocks):
    """Every format (:func:`tests.each.each`, each failing format named)."""
    pe = sample("float32", (30, 4))

    def same(fmt: str) -> None:
        write_table(str(tmp_path / f"t.{fmt}"), lazy(pe=pe), {"k": "v"}, fmt)
        buffer = io.BytesIO()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sys, "stdout", FakeStdout(buffer))
            write_table("-", lazy(pe=pe), {"k": "v"}, fmt)
        if fmt == "npz":  # zip data descriptors differ on a non-seekable stream; the arrays do not
            with np.load(io.BytesIO(buffer.getvalue())) as npz:
                assert same_bits(npz["pe"], pe)
        else:
            assert buffer.getvalue() == (tmp_path / f"t.{fmt}").read_bytes()

    each(FORMATS, same)


def test_broken_pipe_propagates(monkeypatch):
    class Closed(io.RawIOBase):
        def writable(self):
            return True

        def write(self, data):
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", FakeStdout(Closed()))
    with pytest.raises(BrokenPipeError):
        write_table("-", lazy(pe=np.ones((10, 4))), {}, "npy")


# ----- stdin ----------------------------------------------------------------------------------------------
def pipe_into_reader(data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> subprocess.CompletedProcess:
    """Feed ``data`` through a real (non-seekable) pipe to read_table("-"): the pipe's read end is stdin, and a
    thread writes ``data`` into it as a producer would (a pipe holds 64 KiB, so a bigger table arrives in
    pieces). Returned like a child process's result: exit code 0 with every tensor as .npy bytes on stdout, or
    2 with "InputError: ..." on stdout; stderr is what was printed there (nothing, on every path)."""
    r, w = os.pipe()

    def feed() -> None:
        # (BrokenPipeError: the reader stopped early, at a limit or at bad bytes)
        with open(w, "wb", buffering=0) as sink, contextlib.suppress(BrokenPipeError):
            sink.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    saved, err = (sys.stdin, sys.stderr), io.StringIO()
    try:
        with open(r, "rb") as source:
            sys.stdin, sys.stderr = FakeStdout(source), err
            try:
                table = read_table("-", max_bytes=max_bytes)
                out = io.BytesIO()
                for array in table.tensors.values():
                    np.save(out, np.asarray(array).astype(np.float64))
                code, stdout = 0, out.getvalue()
            except InputError as exc:
                code, stdout = 2, f"InputError: {exc}\n".encode()
    finally:
        sys.stdin, sys.stderr = saved
    writer.join(timeout=30)
    assert not writer.is_alive(), "the writer is stuck: the reader neither read to the end nor closed the pipe"
    return subprocess.CompletedProcess(["read_table('-')"], code, stdout, err.getvalue().encode())


def test_stdin_pipe_npy_and_safetensors(tmp_path):
    pe = sample("float64", (300, 70))  # > 64 KiB: the pipe delivers it in pieces
    np.save(tmp_path / "t.npy", pe)
    proc = pipe_into_reader((tmp_path / "t.npy").read_bytes())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert same_bits(np.load(io.BytesIO(proc.stdout)), pe)
    write_table(str(tmp_path / "t.safetensors"), lazy(pe=pe), {}, "safetensors")
    proc = pipe_into_reader((tmp_path / "t.safetensors").read_bytes())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert same_bits(np.load(io.BytesIO(proc.stdout)), pe)


#: (what the piped bytes are, made from a .npy file's bytes; max_bytes; what the one line says)
PIPE_PROBLEMS = {
    "the last 5 bytes cut": (lambda npy: npy[:-5], DEFAULT_MAX_BYTES, "InputError: <stdin>: truncated"),
    "30 bytes": (lambda npy: npy[:30], DEFAULT_MAX_BYTES, "InputError: <stdin>: truncated"),
    "above max_bytes": (lambda npy: npy, 1000, "over the 1000 B limit; pass a larger max_bytes to raise the limit"),
    "nothing": (lambda npy: b"", DEFAULT_MAX_BYTES, "InputError: <stdin>: no data"),
    "text": (lambda npy: b"hello world, not a table", DEFAULT_MAX_BYTES, "InputError: <stdin>: not a .npy"),
    "bytes after": (
        lambda npy: npy + b"extra",
        DEFAULT_MAX_BYTES,
        "InputError: <stdin>: unexpected data after the array",
    ),
}


def test_stdin_pipe_problems_are_clean(tmp_path):
    """Every case of PIPE_PROBLEMS (:func:`tests.each.each`, each failing case named)."""
    np.save(tmp_path / "t.npy", sample("float64", (40, 8)))
    npy = (tmp_path / "t.npy").read_bytes()

    def clean(case: str) -> None:
        make, max_bytes, fragment = PIPE_PROBLEMS[case]
        proc = pipe_into_reader(make(npy), max_bytes)
        assert proc.returncode == 2 and fragment in proc.stdout.decode(), proc.stdout + proc.stderr
        assert proc.stderr == b""

    each(PIPE_PROBLEMS, clean)


def test_stdin_npz_and_in_process_stream(monkeypatch, tmp_path):
    pe = sample("float32", (20, 3))
    write_table(str(tmp_path / "t.npz"), lazy(pe=pe), {"k": "v"}, "npz")
    monkeypatch.setattr(sys, "stdin", FakeStdout(io.BytesIO((tmp_path / "t.npz").read_bytes())))
    table = read_table("-")
    assert table.source == "<stdin>" and table.metadata == {"k": "v"} and same_bits(table.tensors["pe"], pe)


def test_named_pipe_is_read_as_a_stream(tmp_path):
    """``posenc check <(posenc generate ...)`` hands us /dev/fd/N: a FIFO without a suffix."""
    import threading

    pe = sample("float32", (500, 40))
    buf = io.BytesIO()
    np.save(buf, pe)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(buf.getvalue())

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        table = read_table(str(fifo))
    finally:
        writer.join(timeout=10)
    assert table.source == str(fifo) and same_bits(table.tensors["pe"], pe)


# ----- validate_table_array ------------------------------------------------------------------------------
REFUSED_TABLES = [
    (np.zeros(()), False, "has shape ()"),
    (np.zeros((2, 2, 2, 2)), False, "has shape (2, 2, 2, 2)"),
    (np.zeros((0, 4)), False, "zero rows"),
    (np.zeros((4, 0)), False, "is empty"),
    (np.zeros((2, 2), np.complex128), False, "complex values are not an encoding table"),
    (np.array(["a", "b"]), False, "non-numeric"),
    (np.zeros(3, "M8[s]"), False, "non-numeric"),
    (np.zeros(3, np.int64), True, "needs floating values"),
    (np.zeros(3, bool), True, "needs floating values"),
]


def test_validate_table_array_refusals():
    def case(refused):
        array, need_float, fragment = refused
        with pytest.raises(InputError) as exc:
            validate_table_array(array, "pe", "t.npy", need_float=need_float)
        assert str(exc.value).startswith("t.npy: tensor 'pe'") and fragment in str(exc.value)

    each(REFUSED_TABLES, case)


def test_validate_table_array_accepts_tables():
    def case(dtype_shape):
        dtype, shape = dtype_shape
        validate_table_array(sample(dtype, shape), "pe", "t.npy", need_float=True)
        validate_table_array(np.zeros(shape, np.int32), "pe", "t.npy", need_float=False)

    each([(d, s) for d in ("float64", "float32", "float16", "bfloat16") for s in ((5,), (5, 3), (2, 5, 5))], case)


# ----- bounded memory -----------------------------------------------------------------------------------
PEAK_RSS = textwrap.dedent(
    """
    import json, sys, numpy as np
    from posenc_cli.formats import write_table

    class Big:
        name, dtype = "pe", np.dtype(np.float32)
        def __init__(self, rows, cols): self.shape = (rows, cols)
        def rows(self, a, b): raise AssertionError("writers must use fill")
        def fill(self, a, b, out): out[...] = a

    def peak_mib():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) // 1024

    grew = {}
    for fmt in sys.argv[2:]:
        try:
            with open("/proc/self/clear_refs", "w") as refs:
                refs.write("5")  # the peak RSS starts again from the RSS of now
        except OSError:
            if len(sys.argv) > 3:
                sys.exit(3)  # no reset here: a process per format
        before = peak_mib()
        write_table(f"{sys.argv[1]}.{fmt}", {"pe": Big(16 * 1024, 1024)}, {"kind": "x"}, fmt)  # 64 MiB
        grew[fmt] = peak_mib() - before
    print(json.dumps(grew))
    """
)


def test_streaming_export_keeps_memory_bounded(tmp_path):
    """A 64 MiB table is written with a few tens of MiB of extra peak RSS (two 8 MiB blocks), never the whole
    table, by each streaming writer: one process writes them in turn, its peak RSS reset before each (Linux's
    ``clear_refs``; a process per format cost its start-up again)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    fmts = ["npy", "safetensors"]

    def peaks(*formats: str) -> subprocess.CompletedProcess:
        script = [sys.executable, "-c", PEAK_RSS, str(tmp_path / "big"), *formats]
        return subprocess.run(script, capture_output=True, env=env, timeout=120)

    runs = [peaks(*fmts)]
    if runs[0].returncode == 3:  # the peak cannot be reset here (no clear_refs)
        runs = [peaks(fmt) for fmt in fmts]
    assert all(proc.returncode == 0 for proc in runs), [proc.stderr for proc in runs]
    grew = {fmt: mib for proc in runs for fmt, mib in json.loads(proc.stdout).items()}
    for fmt in fmts:
        out = tmp_path / f"big.{fmt}"
        assert out.stat().st_size > 64 * 1024**2
        out.unlink()
    assert set(grew) == set(fmts) and all(mib < 32 for mib in grew.values()), f"peak RSS grew by {grew} MiB"


def test_npz_of_posenc_01_with_a_metadata_member_still_reads(tmp_path):
    path = tmp_path / "old.npz"
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ones((2, 2), np.float32), allow_pickle=False)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("pe.npy", buf.getvalue())
        zf.writestr("__metadata__.json", json.dumps({"kind": "sinusoidal"}))
    table = read_table(str(path))
    assert list(table.tensors) == ["pe"] and table.metadata == {"kind": "sinusoidal"}


@pytest.mark.parametrize("where", ["open", "return"])
def test_ctrl_c_as_the_temporary_file_is_created_leaves_none(tmp_path: Path, monkeypatch, where: str) -> None:
    """Ctrl-C the moment the temporary file exists (inside the exclusive open, or as its descriptor is handed back,
    before the writer's cleanup block): the file is still removed and the old target kept."""
    from posenc_cli.formats import atomic

    target = tmp_path / "pe.npy"
    target.write_bytes(b"old")
    real_open = os.open

    def interrupted(path, flags, mode=0o777):
        fd = real_open(path, flags, mode)
        if where == "open":
            os.close(fd)
            raise KeyboardInterrupt
        return fd

    monkeypatch.setattr(atomic.os, "open", interrupted)
    if where == "return":
        real_make = atomic._make_temp

        def make(*args, **kwargs):
            real_make(*args, **kwargs)
            raise KeyboardInterrupt  # after the file exists, before the caller holds its name

        monkeypatch.setattr(atomic, "_make_temp", make)
    with pytest.raises(KeyboardInterrupt):
        atomic.write_atomic(str(target), lambda sink: sink.write(b"new"), force=True)
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["pe.npy"]
