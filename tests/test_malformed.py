"""Every malformed input the readers know about: each one is a one-line InputError naming the file.

One parametrised case per problem. Each case builds the bad bytes from a valid file, so a reader that
silently accepted it (or crashed with anything but InputError) fails the test. The safetensors cases are
also fed to safetensors' own loader where its rules are the same, to prove we follow them.
"""

from __future__ import annotations

import io
import json
import os
import struct
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import safetensors.numpy

from posenc_cli import formats
from posenc_cli.errors import InputError
from posenc_cli.formats import read_table

from .each import each

PE = np.arange(24, dtype="<f4").reshape(6, 4) / 7


# ----- builders -----------------------------------------------------------------------------------------
def npy(header: str | None = None, data: bytes | None = None, version: tuple[int, int] = (1, 0)) -> bytes:
    """An .npy file with a hand-written header (default: PE's) and data (default: PE's bytes)."""
    if header is None:
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (6, 4), }"
    raw = header.encode("latin1" if version < (3, 0) else "utf8") + b"\n"
    fmt = "<H" if version == (1, 0) else "<I"
    return b"\x93NUMPY" + bytes(version) + struct.pack(fmt, len(raw)) + raw + (PE.tobytes() if data is None else data)


def valid_npy() -> bytes:
    buf = io.BytesIO()
    np.save(buf, PE)
    return buf.getvalue()


def st(header: object, data: bytes = PE.tobytes(), *, raw: bytes | None = None, length: int | None = None) -> bytes:
    """A .safetensors file from a header object (or raw header bytes) and data; ``length`` overrides N."""
    body = raw if raw is not None else json.dumps(header).encode()
    n = len(body) if length is None else length
    return n.to_bytes(8, "little") + body + data


def st_entry(dtype="F32", shape=(6, 4), offsets=(0, 96)) -> dict:
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


def valid_st() -> bytes:
    return safetensors.numpy.save({"pe": PE}, metadata={"kind": "x"})


def npz(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def corrupt_crc(data: bytes) -> bytes:
    """Flip one byte of the first member's content (the CRC no longer matches)."""
    i = data.index(b"\x93NUMPY") + 200
    return data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :]


@dataclass
class Case:
    id: str
    name: str  # file name (its suffix selects the reader)
    data: Callable[[], bytes] | None  # None: the case prepares the path itself
    fragment: str  # what the message must say (after the file name)
    max_bytes: int = formats.DEFAULT_MAX_BYTES
    safetensors_refuses: bool = False  # safetensors' own loader must refuse it too

    def __str__(self) -> str:
        return self.id


CASES = [
    # --- .npy ---
    Case("npy-empty-file", "t.npy", lambda: b"", "truncated"),
    Case(
        "npy-truncated-data",
        "t.npy",
        lambda: valid_npy()[:-1],
        "truncated: shape (6, 4) of float32 needs 96 data bytes but the file holds 95",
    ),
    Case("npy-truncated-header", "t.npy", lambda: valid_npy()[:40], "truncated"),
    Case("npy-bad-magic", "t.npy", lambda: b"\x93NUMPZ" + valid_npy()[6:], "not a .npy file"),
    Case(
        "npy-unknown-version",
        "t.npy",
        lambda: valid_npy()[:6] + b"\x09\x00" + valid_npy()[8:],
        "unsupported .npy format version 9.0",
    ),
    Case(
        "npy-object-dtype",
        "t.npy",
        lambda: npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", b"\x80\x04N." * 4),
        "never loads pickled data",
    ),
    Case(
        "npy-header-too-large",
        "t.npy",
        lambda: npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6, 4), }" + " " * 20000, version=(2, 0)),
        "over numpy's 10000-byte limit",
    ),
    Case(
        "npy-structured-dtype",
        "t.npy",
        lambda: npy("{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (12,), }"),
        "structured array",
    ),
    Case(
        "npy-subarray-dtype",
        "t.npy",
        lambda: npy("{'descr': '(4,)<f4', 'fortran_order': False, 'shape': (6,), }"),
        "structured array",
    ),
    Case(
        "npy-complex",
        "t.npy",
        lambda: npy("{'descr': '<c8', 'fortran_order': False, 'shape': (12,), }"),
        "complex values are not an encoding table",
    ),
    Case(
        "npy-unicode",
        "t.npy",
        lambda: npy("{'descr': '<U3', 'fortran_order': False, 'shape': (8,), }"),
        "unsupported dtype '<U3'",
    ),
    Case(
        "npy-datetime",
        "t.npy",
        lambda: npy("{'descr': '<M8[s]', 'fortran_order': False, 'shape': (12,), }"),
        "unsupported dtype",
    ),
    Case(
        "npy-longdouble",
        "t.npy",
        lambda: npy("{'descr': '<f16', 'fortran_order': False, 'shape': (6,), }"),
        "unsupported dtype",
    ),
    Case(
        "npy-unknown-descr",
        "t.npy",
        lambda: npy("{'descr': '<q9', 'fortran_order': False, 'shape': (6, 4), }"),
        "unknown dtype '<q9'",
    ),
    Case(
        "npy-shape-exceeds-file",
        "t.npy",
        lambda: npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000, 1000000), }"),
        "truncated: shape (1000000000000, 1000000) of float64 needs",
    ),
    Case(
        "npy-negative-shape",
        "t.npy",
        lambda: npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-6, 4), }"),
        "invalid shape (-6, 4)",
    ),
    Case(
        "npy-float-shape",
        "t.npy",
        lambda: npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6.0, 4), }"),
        "invalid shape",
    ),
    Case(
        "npy-bad-fortran-order",
        "t.npy",
        lambda: npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (6, 4), }"),
        "invalid fortran_order",
    ),
    Case(
        "npy-header-not-literal", "t.npy", lambda: npy("__import__('os').system('true')"), "not a Python dict literal"
    ),
    Case("npy-header-not-dict", "t.npy", lambda: npy("[1, 2, 3]"), "must be a dict"),
    Case(
        "npy-header-missing-key",
        "t.npy",
        lambda: npy("{'descr': '<f4', 'shape': (6, 4), }"),
        "must be a dict with keys",
    ),
    Case(
        "npy-header-bad-utf8-v3",
        "t.npy",
        lambda: (
            npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6, 4), }", version=(3, 0))[:12]
            + b"\xff\xfe"
            + npy(version=(3, 0))[14:]
        ),
        "not valid UTF8 text",
    ),
    Case("npy-trailing-bytes", "t.npy", lambda: valid_npy() + b"junk", "4 unexpected bytes after the array data"),
    Case("npy-is-safetensors", "t.npy", valid_st, "not a .npy file"),
    # --- .safetensors ---
    Case("st-empty", "t.safetensors", lambda: b"", "too short for a .safetensors file"),
    Case("st-short", "t.safetensors", lambda: b"\x08\x00\x00", "too short"),
    Case(
        "st-header-length-over-file",
        "t.safetensors",
        lambda: st({"pe": st_entry()}, length=10_000),
        "header length 10000 is larger than the file",
        safetensors_refuses=True,
    ),
    Case(
        "st-header-length-over-100mb",
        "t.safetensors",
        lambda: st({"pe": st_entry()}, length=100_000_001),
        "over the 100 MB limit",
        safetensors_refuses=True,
    ),
    Case(
        "st-header-length-2**64-1",
        "t.safetensors",
        lambda: st({"pe": st_entry()}, length=2**64 - 1),
        "header length 18446744073709551615 is over the 100 MB limit",
        safetensors_refuses=True,
    ),
    Case(
        "st-truncated-header",
        "t.safetensors",
        lambda: valid_st()[:30],
        "larger than the file",
        safetensors_refuses=True,
    ),
    Case(
        "st-truncated-data",
        "t.safetensors",
        lambda: valid_st()[:-1],
        "truncated: the tensors need 96 data bytes but the file holds 95",
        safetensors_refuses=True,
    ),
    Case(
        "st-invalid-utf8",
        "t.safetensors",
        lambda: st(None, raw=b'{"pe": "\xff\xfe"}'),
        "not valid UTF-8",
        safetensors_refuses=True,
    ),
    Case(
        "st-invalid-json",
        "t.safetensors",
        lambda: st(None, raw=b'{"pe": {"dtype": "F32",'),
        "not valid JSON",
        safetensors_refuses=True,
    ),
    Case(
        "st-header-not-object",
        "t.safetensors",
        lambda: st(None, raw=b"[1, 2, 3]"),
        "does not start with '{'",
        safetensors_refuses=True,
    ),
    Case(
        "st-header-number",
        "t.safetensors",
        lambda: st(None, raw=b"12345678"),
        "does not start with '{'",
        safetensors_refuses=True,
    ),
    Case(
        "st-entry-not-object",
        "t.safetensors",
        lambda: st({"pe": [1, 2]}),
        "entry 'pe' is not an object",
        safetensors_refuses=True,
    ),
    Case(
        "st-entry-missing-keys",
        "t.safetensors",
        lambda: st({"pe": {"dtype": "F32"}}),
        "lacks shape, data_offsets",
        safetensors_refuses=True,
    ),
    Case(
        "st-unknown-dtype",
        "t.safetensors",
        lambda: st({"pe": st_entry(dtype="F33")}),
        "unsupported dtype 'F33'",
        safetensors_refuses=True,
    ),
    Case(
        "st-unsupported-dtype",
        "t.safetensors",
        lambda: st({"pe": st_entry(dtype="C64", shape=(6, 2))}),
        "unsupported dtype 'C64'",
    ),
    Case(
        "st-negative-shape",
        "t.safetensors",
        lambda: st({"pe": st_entry(shape=(-6, -4))}),
        "invalid shape [-6, -4]",
        safetensors_refuses=True,
    ),
    Case(
        "st-shape-mismatch",
        "t.safetensors",
        lambda: st({"pe": st_entry(shape=(6, 5))}),
        "shape [6, 5] of float32 (120 bytes) but data_offsets [0, 96] hold 96 bytes",
        safetensors_refuses=True,
    ),
    Case(
        "st-offsets-overlap",
        "t.safetensors",
        lambda: st(
            {"a": st_entry(shape=(6, 2), offsets=(0, 48)), "b": st_entry(shape=(6, 2), offsets=(40, 88))},
            PE.tobytes()[:88],
        ),
        "overlaps the previous tensor",
        safetensors_refuses=True,
    ),
    Case(
        "st-offsets-gap",
        "t.safetensors",
        lambda: st({"a": st_entry(shape=(5, 2), offsets=(0, 40)), "b": st_entry(shape=(6, 2), offsets=(48, 96))}),
        "leaves a gap after byte 40",
        safetensors_refuses=True,
    ),
    Case(
        "st-offsets-not-from-zero",
        "t.safetensors",
        lambda: st({"pe": st_entry(shape=(5, 4), offsets=(16, 96))}),
        "leaves a gap after byte 0",
        safetensors_refuses=True,
    ),
    Case(
        "st-offsets-reversed",
        "t.safetensors",
        lambda: st({"pe": st_entry(offsets=(96, 0))}),
        "data_offsets [96, 0]: it ends before it begins",
        safetensors_refuses=True,
    ),
    Case(
        "st-offsets-out-of-range",
        "t.safetensors",
        lambda: st({"pe": st_entry(shape=(6, 8), offsets=(0, 192))}),
        "truncated: the tensors need 192 data bytes but the file holds 96",
        safetensors_refuses=True,
    ),
    Case(
        "st-offsets-huge",
        "t.safetensors",
        lambda: st({"pe": st_entry(shape=(2**40, 2**20), offsets=(0, 2**62))}),
        "truncated: the tensors need 4611686018427387904 data bytes",
        safetensors_refuses=True,
    ),
    Case(
        "st-offsets-three-numbers",
        "t.safetensors",
        lambda: st({"pe": st_entry(offsets=(0, 96, 100))}),
        "invalid data_offsets [0, 96, 100]",
        safetensors_refuses=True,
    ),
    Case(
        "st-offsets-negative",
        "t.safetensors",
        lambda: st({"pe": st_entry(offsets=(-1, 96))}),
        "invalid data_offsets [-1, 96]",
        safetensors_refuses=True,
    ),
    Case(
        "st-trailing-data",
        "t.safetensors",
        lambda: valid_st() + b"\x00" * 8,
        "8 unexpected bytes after the last tensor's data",
        safetensors_refuses=True,
    ),
    Case(
        "st-metadata-not-string",
        "t.safetensors",
        lambda: st({"__metadata__": {"length": 7}, "pe": st_entry()}),
        "metadata 'length' is not a string (int)",
        safetensors_refuses=True,
    ),
    Case(
        "st-metadata-not-object",
        "t.safetensors",
        lambda: st({"__metadata__": ["a"], "pe": st_entry()}),
        "__metadata__ is not an object",
        safetensors_refuses=True,
    ),
    Case(
        "st-duplicate-name",
        "t.safetensors",
        lambda: st(
            None,
            raw=b'{"pe": {"dtype": "F32", "shape": [6, 2], "data_offsets": [0, 48]}, "pe": {"dtype": "F32", "shape": [6, 2], "data_offsets": [48, 96]}}',
        ),
        "names 'pe' twice",
    ),
    Case("st-is-npy", "t.safetensors", valid_npy, "over the 100 MB limit", safetensors_refuses=True),
    # --- .npz ---
    Case("npz-not-zip", "t.npz", valid_npy, "not a .npz file (not a zip archive)"),
    Case("npz-empty-file", "t.npz", lambda: b"", "not a zip archive"),
    Case(
        "npz-non-array-member",
        "t.npz",
        lambda: npz({"pe.npy": valid_npy(), "notes.txt": b"hi"}),
        "member 'notes.txt' is not an array (.npy)",
    ),
    Case("npz-directory-member", "t.npz", lambda: npz({"sub/": b""}), "member 'sub/' is not an array"),
    Case("npz-no-arrays", "t.npz", lambda: npz({}), "holds no arrays"),
    Case(
        "npz-huge-member",
        "t.npz",
        lambda: npz(
            {"pe.npy": npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1048576,), }", bytes(8 << 20))},
            zipfile.ZIP_DEFLATED,
        ),
        "member 'pe.npy' is 8.0 MiB, over the 1.0 MiB limit; pass a larger max_bytes",
        max_bytes=1 << 20,
    ),
    Case(
        "npz-members-add-up",
        "t.npz",
        lambda: npz(
            {
                f"m{i}.npy": npy("{'descr': '<f8', 'fortran_order': False, 'shape': (65536,), }", bytes(1 << 19))
                for i in range(4)
            },
            zipfile.ZIP_DEFLATED,
        ),
        "the uncompressed archive is 2.0 MiB, over the 1.0 MiB limit",
        max_bytes=1 << 20,
    ),
    Case(
        "npz-member-truncated-npy",
        "t.npz",
        lambda: npz({"pe.npy": valid_npy()[:-8]}),
        "(member 'pe.npy'): truncated: shape (6, 4) of float32 needs 96 data bytes but the member holds 88",
    ),
    Case(
        "npz-member-pickle",
        "t.npz",
        lambda: npz({"pe.npy": npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", b"\x80\x04N.")}),
        "never loads pickled data",
    ),
    Case(
        "npz-member-complex",
        "t.npz",
        lambda: npz({"pe.npy": npy("{'descr': '<c8', 'fortran_order': False, 'shape': (12,), }")}),
        "complex values are not an encoding table",
    ),
    Case("npz-member-not-npy", "t.npz", lambda: npz({"pe.npy": b"hello, this is just text"}), "not a .npy file"),
    Case(
        "npz-bad-crc", "t.npz", lambda: corrupt_crc(npz({"pe.npy": valid_npy()})), "damaged or unsupported .npz archive"
    ),
    Case("npz-duplicate-member", "t.npz", lambda: _duplicate_zip(), "appears twice"),
    Case(
        "npz-bad-metadata",
        "t.npz",
        lambda: npz({"pe.npy": valid_npy(), "__metadata__.json": b'{"length": 7}'}),
        "metadata is not a JSON object of strings",
    ),
    Case("npz-truncated-zip", "t.npz", lambda: npz({"pe.npy": valid_npy()})[:-30], "not a zip archive"),
    # --- .csv / .json ---
    Case(
        "csv-ragged",
        "t.csv",
        lambda: b"1,2,3\n4,5\n",
        "not a CSV table of numbers: the number of columns changed from 3 to 2 at row 2",
    ),
    Case("csv-not-numbers", "t.csv", lambda: b"1,2\nx,y\n", "not a CSV table of numbers"),
    Case("csv-empty", "t.csv", lambda: b"", "holds no values"),
    Case("csv-not-utf8", "t.csv", lambda: b"1,2\n\xff\xfe\n", "not UTF-8 text"),
    Case("csv-bad-header", "t.csv", lambda: b"# posenc {nope\n1,2\n", "header line is not valid JSON"),
    Case(
        "csv-header-shape-mismatch",
        "t.csv",
        lambda: b'# posenc {"shape": [3, 3]}\n1,2\n3,4\n',
        "data has shape (2, 2) but the header says (3, 3)",
    ),
    Case(
        "csv-header-bad-dtype",
        "t.csv",
        lambda: b'# posenc {"dtype": "complex64"}\n1,2\n',
        "unsupported dtype 'complex64'",
    ),
    Case(
        "csv-too-big", "t.csv", lambda: b"1,2\n" * 1000, "the file is 3.9 KiB, over the 1.0 KiB limit", max_bytes=1024
    ),
    Case("json-invalid", "t.json", lambda: b'{"tensors": ', "not valid JSON"),
    Case("json-not-table", "t.json", lambda: b"[1, 2]", "not a posenc JSON table"),
    Case("json-entry-not-object", "t.json", lambda: b'{"tensors": {"pe": [1, 2]}}', "tensor 'pe' is not an object"),
    Case(
        "json-ragged",
        "t.json",
        lambda: b'{"tensors": {"pe": {"dtype": "float32", "data": [[1, 2], [3]]}}}',
        "not a regular array of numbers",
    ),
    Case(
        "json-strings",
        "t.json",
        lambda: b'{"tensors": {"pe": {"dtype": "float32", "data": ["a", "b"]}}}',
        "holds strings, not numbers",
    ),
    Case(
        "json-nulls",
        "t.json",
        lambda: b'{"tensors": {"pe": {"dtype": "float32", "data": [1, null]}}}',
        "holds nulls, objects or mixed values",
    ),
    Case(
        "json-shape-mismatch",
        "t.json",
        lambda: b'{"tensors": {"pe": {"dtype": "float32", "shape": [3], "data": [1, 2]}}}',
        "data has shape (2,) but the header says (3,)",
    ),
    Case(
        "json-bad-dtype",
        "t.json",
        lambda: b'{"tensors": {"pe": {"dtype": "object", "data": [1]}}}',
        "unsupported dtype 'object'",
    ),
    Case(
        "json-bad-metadata",
        "t.json",
        lambda: b'{"metadata": {"length": 7}, "tensors": {"pe": {"data": [1]}}}',
        "metadata is not an object of strings",
    ),
    Case(
        "json-non-integer-for-int",
        "t.json",
        lambda: b'{"tensors": {"pe": {"dtype": "int32", "data": [1.5]}}}',
        "non-integer values for dtype int32",
    ),
    Case("json-too-big", "t.json", lambda: b'{"tensors": {}}' + b" " * 4096, "over the 1.0 KiB limit", max_bytes=1024),
    # --- paths ---
    Case("missing-file", "missing.npy", None, "no such file"),
    Case("directory", "adir.safetensors", None, "is a directory, not a table file"),
    Case(
        "unknown-suffix",
        "table.h5",
        lambda: b"whatever",
        "unknown table format .h5; use one of .npy, .npz, .safetensors, .csv, .json",
    ),
    Case("no-suffix", "table", lambda: b"whatever", "unknown table format (no suffix)"),
]


def _duplicate_zip() -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns "Duplicate name": that is the point
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("pe.npy", valid_npy())
            zf.writestr("pe.npy", valid_npy())
    return buf.getvalue()


def _prepare(case: Case, tmp_path) -> str:
    (tmp_path / case.id).mkdir()  # (one folder a case: the cases of a test share its tmp_path)
    path = tmp_path / case.id / case.name
    if case.id == "directory":
        path.mkdir()
    elif case.data is not None:
        path.write_bytes(case.data())
    return str(path)


def test_malformed_input_is_one_clean_line_naming_the_file(tmp_path):
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(CASES, lambda case: _malformed_input_is_one_clean_line_naming_the_file(case, tmp_path))


def _malformed_input_is_one_clean_line_naming_the_file(case, tmp_path):
    path = _prepare(case, tmp_path)
    with pytest.raises(InputError) as exc:
        table = read_table(path, max_bytes=case.max_bytes)
        for array in table.tensors.values():  # pragma: no cover - only reached when the reader is wrong
            np.asarray(array).sum()
    message = str(exc.value)
    assert message.startswith(path), message
    assert case.fragment in message, message
    assert "\n" not in message and len(message) < 400


def test_safetensors_own_loader_refuses_the_same_files(tmp_path):
    """Our rules are safetensors' rules: what we refuse, its Rust validator refuses too (every such case)."""
    each([c for c in CASES if c.safetensors_refuses], lambda case: _safetensors_refuses(case, tmp_path))


def _safetensors_refuses(case, tmp_path):
    path = _prepare(case, tmp_path)
    with pytest.raises(Exception):  # noqa: B017 - safetensors raises SafetensorError or others
        safetensors.numpy.load_file(path)


def test_permission_denied(tmp_path, monkeypatch):
    path = tmp_path / "locked.npy"
    path.write_bytes(valid_npy())
    if os.geteuid() == 0:  # root reads anything: simulate what open() does for others

        def denied(*args, **kwargs):
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(formats.reading, "open", denied, raising=False)
    else:
        path.chmod(0)
    with pytest.raises(InputError) as exc:
        read_table(str(path))
    assert str(exc.value) == f"{path}: permission denied"


def test_object_npy_is_refused_without_unpickling(tmp_path):
    """A real pickle that would run code: it must be refused, never loaded."""
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "evil.npy"
    np.save(path, np.array([Evil()], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="never loads pickled data"):
        read_table(str(path))
    assert not marker.exists()


def test_zip_bomb_is_refused_from_the_directory_before_decompressing(tmp_path, monkeypatch):
    """An 8 MiB member that deflates to ~8 KiB: refused without a single decompression call (the limit lowered
    to 2 MiB: a 64 MiB member over the default limit cost 0.4 CPU-s to deflate, for the same refusal)."""
    big = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1048576,), }", bytes(8 << 20))
    path = tmp_path / "bomb.npz"
    path.write_bytes(npz({"pe.npy": big}, zipfile.ZIP_DEFLATED))
    assert path.stat().st_size < 1 << 14
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, *a, **k: opened.append(a) or real_open(self, *a, **k))
    with pytest.raises(InputError, match=r"8\.0 MiB, over the 2\.0 MiB limit"):
        read_table(str(path), max_bytes=2 << 20)
    assert opened == []


def test_lying_npy_header_in_npz_cannot_allocate_more_than_the_member(tmp_path):
    """The member's .npy header claims 8 TiB; the directory says 200 bytes: refused, nothing allocated."""
    liar = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }", b"\x00" * 64)
    path = tmp_path / "liar.npz"
    path.write_bytes(npz({"pe.npy": liar}))
    with pytest.raises(InputError, match="truncated"):
        read_table(str(path), max_bytes=1 << 50)
