"""The ``.npy`` format: one array, read memory-mapped and written block by block.

Format (as specified in ``numpy/lib/format.py``; posenc writes exactly the bytes ``np.save`` writes)
---------------------------------------------------------------------------------------------------
* 6 bytes of magic ``b"\\x93NUMPY"``, then the major and minor version bytes (``1 0``, ``2 0`` or ``3 0``).
* The header length ``HEADER_LEN``: a little-endian ``uint16`` in version 1.0, ``uint32`` in 2.0 and 3.0.
* ``HEADER_LEN`` bytes of header: the ``repr`` of a Python dict literal with exactly the keys
  ``'descr'`` (``dtype.str``, e.g. ``'<f4'``), ``'fortran_order'`` (bool) and ``'shape'`` (a tuple of
  ints), padded with spaces and ended by ``"\\n"`` so that magic + length + header is a multiple of 64
  bytes. It is latin-1 in versions 1.0 and 2.0, UTF-8 in 3.0. ``np.save`` also leaves room for the first
  axis to grow (``GROWTH_AXIS_MAX_DIGITS``); version 2.0 is used only when the header exceeds 65535 bytes.
* The data: ``prod(shape) * itemsize`` bytes in C order (Fortran order when ``fortran_order``), nothing
  after it.

Reading
-------
The header is parsed with :func:`ast.literal_eval` (no code is ever run and object arrays are refused, so
no pickle is ever loaded), limited to numpy's ``max_header_size`` (10000 bytes). Only plain numeric dtypes
are accepted: floats, signed and unsigned integers and bool; structured, subarray, complex, string, object
and datetime dtypes are refused. The data size implied by the shape must match the file exactly. A file is
memory-mapped (``np.memmap``, read-only) at the exact data offset; a stream is read into memory, exactly
the declared number of bytes and only below ``max_bytes``.

Writing
-------
The header is built here (identical to ``np.save``'s), then the data is streamed in C order, little-endian,
row block by row block from ``tensor.fill``. ``.npy`` cannot hold metadata (numpy refuses extra header
keys) nor bfloat16 (numpy has no such type; ml_dtypes' arrays would be saved as opaque ``|V2``).
"""

from __future__ import annotations

import ast
import math
import os
import struct
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal

import numpy as np

from ..errors import InputError
from .dtypes import dtype_label, little_endian
from .protocol import ByteStream, as_bytes, check_limit, iter_blocks, read_exact, read_exact_into

if TYPE_CHECKING:
    from typing import BinaryIO

    from . import LazyTensor

MAGIC_PREFIX = b"\x93NUMPY"
MAGIC_LEN = 8
ARRAY_ALIGN = 64
#: Room np.save leaves for the first axis to grow in place.
GROWTH_AXIS_MAX_DIGITS = 21
#: numpy's default ``max_header_size``: longer headers are refused as possibly unsafe to parse.
MAX_HEADER_SIZE = 10000
#: version -> (struct format of HEADER_LEN, header encoding)
HEADER_SIZE_INFO = {(1, 0): ("<H", "latin1"), (2, 0): ("<I", "latin1"), (3, 0): ("<I", "utf8")}

#: numpy type names of the dtypes accepted on reading.
_READABLE = {
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
}


# ----- header -------------------------------------------------------------------------------------------
def npy_header(dtype: np.dtype, shape: tuple[int, ...], fortran_order: bool = False) -> bytes:
    """The header bytes ``np.save`` writes for an array of ``dtype`` and ``shape``."""
    d = {"descr": np.dtype(dtype).str, "fortran_order": fortran_order, "shape": tuple(int(n) for n in shape)}
    text = "{" + "".join(f"'{key}': {value!r}, " for key, value in sorted(d.items())) + "}"
    if shape:
        text += " " * (GROWTH_AXIS_MAX_DIGITS - len(repr(int(shape[-1 if fortran_order else 0]))))
    for version in ((1, 0), (2, 0)):
        fmt, encoding = HEADER_SIZE_INFO[version]
        raw = text.encode(encoding)
        hlen = len(raw) + 1
        padlen = ARRAY_ALIGN - ((MAGIC_LEN + struct.calcsize(fmt) + hlen) % ARRAY_ALIGN)
        try:
            prefix = MAGIC_PREFIX + bytes(version) + struct.pack(fmt, hlen + padlen)
        except struct.error:
            continue  # too long for 1.0: use 2.0
        return prefix + raw + b" " * padlen + b"\n"
    raise ValueError(f"npy header of {len(text)} bytes is too long")  # unreachable for real shapes


def parse_header(read: Callable[[int, str], bytes], label: str) -> tuple[np.dtype, tuple[int, ...], bool, int]:
    """Read and validate an npy header with ``read(n, what)``; return dtype, shape, fortran_order and the
    header's total length in bytes."""
    magic = read(MAGIC_LEN, "the .npy magic")
    if magic[:6] != MAGIC_PREFIX:
        raise InputError(f"{label}: not a .npy file (it does not start with the .npy magic bytes)")
    version = (magic[6], magic[7])
    if version not in HEADER_SIZE_INFO:
        raise InputError(f"{label}: unsupported .npy format version {version[0]}.{version[1]} (known: 1.0, 2.0, 3.0)")
    fmt, encoding = HEADER_SIZE_INFO[version]
    size = struct.calcsize(fmt)
    (hlen,) = struct.unpack(fmt, read(size, "the .npy header length"))
    if hlen > MAX_HEADER_SIZE:
        raise InputError(
            f"{label}: .npy header of {hlen} bytes is over numpy's {MAX_HEADER_SIZE}-byte limit; refusing to parse it"
        )
    raw = read(hlen, "the .npy header")
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError:
        raise InputError(f"{label}: .npy header is not valid {encoding.upper()} text") from None
    try:
        d = ast.literal_eval(text)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        raise InputError(f"{label}: .npy header is not a Python dict literal") from None
    if not isinstance(d, dict) or set(d) != {"descr", "fortran_order", "shape"}:
        raise InputError(f"{label}: .npy header must be a dict with keys 'descr', 'fortran_order' and 'shape'")
    shape = d["shape"]
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape) or len(shape) > 64:
        raise InputError(f"{label}: .npy header has an invalid shape {shape!r}")
    fortran = d["fortran_order"]
    if not isinstance(fortran, bool):
        raise InputError(f"{label}: .npy header has an invalid fortran_order {fortran!r}")
    dtype = descr_dtype(d["descr"], label)
    return dtype, shape, fortran, MAGIC_LEN + size + hlen


def descr_dtype(descr: object, label: str) -> np.dtype:
    """The dtype of an npy ``descr``, refusing everything but plain real numbers and bool."""
    if isinstance(descr, list):
        raise InputError(f"{label}: holds a structured array (fields), not an encoding table")
    if not isinstance(descr, str):
        raise InputError(f"{label}: .npy header has an invalid descr {descr!r}")
    try:
        dtype = np.dtype(descr)
    except (TypeError, ValueError, SyntaxError, OverflowError, MemoryError, RecursionError):
        raise InputError(f"{label}: .npy header has an unknown dtype {descr!r}") from None
    if dtype.hasobject:
        raise InputError(f"{label}: holds Python objects (dtype {descr!r}); posenc never loads pickled data")
    if dtype.kind == "c":
        raise InputError(
            f"{label}: holds {dtype.name} data; complex values are not an encoding table: save real pairs "
            "(torch.view_as_real(z), numpy.stack([z.real, z.imag], -1)), read as a cos/sin cache"
        )
    if dtype.fields is not None or dtype.subdtype is not None:
        raise InputError(f"{label}: holds a structured array ({descr!r}), not an encoding table")
    if dtype.name not in _READABLE:
        raise InputError(
            f"{label}: unsupported dtype {descr!r} ({dtype_label(dtype)}); posenc reads float16/32/64, "
            "signed and unsigned integers and bool"
        )
    return dtype


# ----- reading ------------------------------------------------------------------------------------------
def _file_reader(fh: BinaryIO, label: str) -> Callable[[int, str], bytes]:
    return lambda n, what: read_exact(fh, n, label, what)


def _check_size(label: str, shape: tuple[int, ...], dtype: np.dtype, available: int, where: str = "file") -> int:
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > available:
        raise InputError(
            f"{label}: truncated: shape {shape} of {dtype_label(dtype)} needs {nbytes} data bytes "
            f"but the {where} holds {max(available, 0)}"
        )
    if nbytes < available:
        raise InputError(f"{label}: {available - nbytes} unexpected bytes after the array data")
    return nbytes


def read_npy(fh: BinaryIO, label: str, *, max_bytes: int) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Memory-map the array of an open ``.npy`` file, as tensor :data:`NPY_TENSOR` (or, with a posenc trailer,
    under its own name beside the trailer's tensors and metadata)."""
    size = os.fstat(fh.fileno()).st_size
    dtype, shape, fortran, offset = parse_header(_file_reader(fh, label), label)
    nbytes = math.prod(shape) * dtype.itemsize
    trailer: tuple[dict[str, np.ndarray], dict[str, str]] = ({}, {})
    if size - offset > nbytes and _starts_with_trailer(fh, offset + nbytes):  # a posenc trailer follows
        fh.seek(offset + nbytes)
        trailer = read_trailer(fh, label, max_bytes=max_bytes)
    else:
        _check_size(label, shape, dtype, size - offset)  # any other bytes after the array are an error
    order: Literal["F", "C"] = "F" if fortran else "C"
    if nbytes == 0:
        try:
            array = np.zeros(shape, dtype=dtype, order=order)
        except ValueError:  # e.g. (0, 2**61): empty, yet a shape NumPy cannot index
            raise InputError(f"{label}: shape {shape} is too large for an array (even an empty one)") from None
        array.flags.writeable = False
    else:
        array = np.memmap(fh, dtype=dtype, mode="r", offset=offset, shape=shape, order=order)
    return with_trailer(label, array, trailer)


def read_npy_stream(
    stream: ByteStream, label: str, *, max_bytes: int, available: int | None = None, what: str = "the array"
) -> np.ndarray:
    """Read one ``.npy`` array from a stream (a pipe, a zip member): exactly the declared bytes.

    ``available`` is the stream's size when known (a zip member): then the declared size must match it.
    """
    dtype, shape, fortran, offset = parse_header(lambda n, w: read_exact(stream, n, label, w), label)
    nbytes = math.prod(shape) * dtype.itemsize
    if available is not None:
        _check_size(label, shape, dtype, available - offset, "member")
    check_limit(label, nbytes, max_bytes, what)
    data = read_exact_into(stream, nbytes, label, f"shape {shape} of {dtype_label(dtype)}")
    try:
        return data.view(dtype).reshape(shape, order="F" if fortran else "C")
    except ValueError:  # e.g. (0, 2**61): empty, yet a shape NumPy cannot index
        raise InputError(f"{label}: shape {shape} is too large for an array (even an empty one)") from None


#: The name of the one tensor of an ``.npy`` file or stream (the primary tensor's usual name), fixed so
#: that ``compare a.npy b.npy`` matches tensors whatever the file names.
NPY_TENSOR = "pe"


# ----- writing ------------------------------------------------------------------------------------------
def write_npy_tensor(sink, tensor: LazyTensor, progress: Callable[[int], None] | None) -> None:
    """Header then C-order little-endian data, block by block."""
    dtype = little_endian(tensor.dtype)
    sink.write(npy_header(dtype, tuple(int(n) for n in tensor.shape)))
    for block in iter_blocks(tensor, dtype):
        sink.write(as_bytes(block))
        if progress:
            progress(len(block))


def write_npy(sink, tensors: Mapping[str, LazyTensor], metadata: Mapping[str, str], progress) -> None:
    """Write the one tensor of ``tensors``; ``.npy`` has no room for metadata, which is dropped."""
    (tensor,) = tensors.values()
    write_npy_tensor(sink, tensor, progress)


# ----- the posenc trailer: a .npy stream that keeps the whole table ------------------------------------
#: Bytes after the array data that start a posenc trailer (``np.load`` stops at the array and never sees it).
TRAILER_MAGIC = b"\x93POSENC-TRAILER\x01"  # 16 bytes
#: Metadata key naming the tensor that the ``.npy`` part holds.
TRAILER_PRIMARY = "posenc_npy_tensor"


class TrailerNotRead(Exception):
    """The reader of a ``.npy`` stream went away after the array, before the trailer: a plain .npy consumer
    (``np.load(sys.stdin.buffer)``) that read all it wanted."""


def write_npy_with_trailer(
    sink, tensors: Mapping[str, LazyTensor], metadata: Mapping[str, str], progress: Callable[[int], None] | None
) -> None:
    """The first tensor as a plain ``.npy``, then a trailer with the table's metadata and the other tensors.

    Trailer: :data:`TRAILER_MAGIC` (16 bytes), the length N of what follows (8 bytes, little-endian), then N
    bytes of a ``.safetensors`` table holding the metadata (plus :data:`TRAILER_PRIMARY`, the first tensor's
    name) and every other tensor. A posenc reader gets the whole table back; any ``.npy`` reader reads the
    first tensor and stops there. A reader that goes away once the array is read raises
    :class:`TrailerNotRead`, not ``BrokenPipeError``.
    """
    from .safetensors import header_bytes

    names = list(tensors)
    write_npy_tensor(sink, tensors[names[0]], progress)
    rest = {name: tensors[name] for name in names[1:]}
    meta = {**metadata, TRAILER_PRIMARY: names[0]}
    head = header_bytes(rest, meta)
    size = len(head) + sum(math.prod(int(n) for n in t.shape) * little_endian(t.dtype).itemsize for t in rest.values())
    try:
        sink.write(TRAILER_MAGIC + size.to_bytes(8, "little") + head)
        for tensor in rest.values():
            for block in iter_blocks(tensor, little_endian(tensor.dtype)):
                sink.write(as_bytes(block))
                if progress:
                    progress(len(block))
        sink.flush()
    except BrokenPipeError:
        raise TrailerNotRead() from None


def _starts_with_trailer(fh: BinaryIO, at: int) -> bool:
    fh.seek(at)
    return fh.read(len(TRAILER_MAGIC)) == TRAILER_MAGIC


def read_trailer(stream: ByteStream, label: str, *, max_bytes: int) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """After a ``.npy`` array: ``({}, {})`` at the end of the data, else the trailer's tensors and metadata."""
    from .safetensors import read_safetensors_stream

    first = stream.read(len(TRAILER_MAGIC))
    while first and len(first) < len(TRAILER_MAGIC):  # a pipe may deliver it in pieces
        more = stream.read(len(TRAILER_MAGIC) - len(first))
        if not more:
            break
        first += more
    if not first:
        return {}, {}
    if first != TRAILER_MAGIC:
        raise InputError(f"{label}: unexpected data after the array")
    n = int.from_bytes(read_exact(stream, 8, label, "the posenc trailer length"), "little")
    check_limit(label, n, max_bytes, "the posenc trailer")
    tensors, metadata = read_safetensors_stream(_Limited(stream, n), f"{label} (posenc trailer)", max_bytes=max_bytes)
    if stream.read(1):
        raise InputError(f"{label}: unexpected bytes after the posenc trailer")
    return tensors, metadata


class _Limited:
    """The next ``n`` bytes of a stream, then end of data."""

    def __init__(self, stream: ByteStream, n: int) -> None:
        self.stream, self.left = stream, n

    def read(self, n: int = -1, /) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.stream.read(n) if n else b""
        self.left -= len(data)
        return data


def with_trailer(
    label: str, array: np.ndarray, trailer: tuple[dict[str, np.ndarray], dict[str, str]]
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The table of a ``.npy`` array and its trailer: the array under its own name, first."""
    tensors, metadata = trailer
    if not metadata and not tensors:
        return {NPY_TENSOR: array}, {}
    metadata = dict(metadata)
    name = metadata.pop(TRAILER_PRIMARY, NPY_TENSOR)
    if name in tensors:
        raise InputError(f"{label}: the posenc trailer repeats tensor {name!r}")
    return {name: array, **tensors}, metadata
