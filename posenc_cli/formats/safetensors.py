"""The ``.safetensors`` format, read memory-mapped and written block by block without the safetensors API.

Format (https://github.com/huggingface/safetensors, as validated by its Rust ``read_metadata``)
-------------------------------------------------------------------------------------------------
* 8 bytes: ``N``, the header length, an unsigned little-endian 64-bit integer. ``N`` is at most
  100,000,000 (``MAX_HEADER_SIZE``) and ``8 + N`` is at most the file size.
* ``N`` bytes: the header, UTF-8 JSON text starting with ``{``, a JSON object. Each key is a tensor name
  mapping to ``{"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]}``; the optional key
  ``"__metadata__"`` maps to an object of string -> string. Writers pad the header with trailing spaces
  (``0x20``) so that ``N`` is a multiple of 8, which aligns the data.
* The data: the rest of the file, ``data_offsets`` being relative to its start. Sorted by offsets the
  tensors must be contiguous from 0 (``begin`` of each is the ``end`` of the previous: no gap, no
  overlap), each one's ``end - begin`` must equal ``prod(shape) * itemsize``, and the last ``end`` must be
  the data size exactly. Data is little-endian and C-contiguous.
* Dtypes (posenc's subset): ``F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL``; BF16 is ml_dtypes' ``bfloat16``.

Reading
-------
Every rule above is checked before anything is mapped, with one :class:`InputError` line naming the file.
The data region is memory-mapped read-only once and each tensor is a view of it (``np.memmap``).

Writing
-------
The header depends only on names, dtypes and shapes, so it is written first (compact JSON like
safetensors', tensors in the caller's order with consecutive offsets, ``__metadata__`` first if any), then
each tensor's data is streamed in row blocks. ``safetensors.numpy.save`` needs every tensor in memory at
once and, in 0.8.0, silently writes a strided view's raw memory order; this writer converts every block
to C-contiguous little-endian itself, and the tests read its output back with safetensors' own loaders.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from .dtypes import bfloat16, dtype_label, little_endian
from .protocol import ByteStream, as_bytes, check_limit, iter_blocks, read_exact, read_exact_into

if TYPE_CHECKING:
    from typing import BinaryIO

    from . import LazyTensor

#: safetensors' own limit on the header length.
MAX_HEADER_SIZE = 100_000_000

#: safetensors dtype -> posenc dtype name.
ST_TO_NAME = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
}
NAME_TO_ST = {v: k for k, v in ST_TO_NAME.items()}


def st_dtype(code: str) -> np.dtype:
    name = ST_TO_NAME[code]
    return bfloat16() if name == "bfloat16" else little_endian(np.dtype(name))


# ----- header -------------------------------------------------------------------------------------------
Entry = tuple[str, np.dtype, tuple[int, ...], int, int]


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


class _Duplicate(Exception):
    pass


def parse_header(raw: bytes, label: str) -> tuple[list[Entry], dict[str, str], int]:
    """Validate a header like safetensors does; return entries sorted by offset, metadata and data size."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{label}: safetensors header is not valid UTF-8") from None
    if not text.startswith("{"):
        raise InputError(f"{label}: safetensors header does not start with '{{'; not a .safetensors file")
    try:
        header = json.loads(text, object_pairs_hook=_no_duplicates)
    except _Duplicate as dup:
        raise InputError(f"{label}: safetensors header names {dup.args[0]!r} twice") from None
    except (ValueError, RecursionError):
        raise InputError(f"{label}: safetensors header is not valid JSON") from None
    if not isinstance(header, dict):
        raise InputError(f"{label}: safetensors header is not a JSON object")
    metadata = header.pop("__metadata__", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise InputError(f"{label}: safetensors __metadata__ is not an object of strings")
    for key, value in metadata.items():
        if not isinstance(value, str):
            raise InputError(f"{label}: safetensors metadata {key!r} is not a string ({type(value).__name__})")
    entries: list[Entry] = []
    for name, info in header.items():
        entries.append(_entry(name, info, label))
    entries.sort(key=lambda e: (e[3], e[4]))
    position = 0
    for name, dtype, shape, begin, end in entries:
        if begin != position or end < begin:
            if end < begin:
                problem = "ends before it begins"
            elif begin > position:
                problem = f"leaves a gap after byte {position}"
            else:
                problem = f"overlaps the previous tensor, which ends at byte {position}"
            raise InputError(f"{label}: tensor {name!r} has invalid data_offsets [{begin}, {end}]: it {problem}")
        nbytes = math.prod(shape) * dtype.itemsize
        if end - begin != nbytes:
            raise InputError(
                f"{label}: tensor {name!r} has shape {list(shape)} of {dtype_label(dtype)} ({nbytes} bytes) "
                f"but data_offsets [{begin}, {end}] hold {end - begin} bytes"
            )
        position = end
    return entries, metadata, position


def _entry(name: str, info: object, label: str) -> Entry:
    if not isinstance(info, dict):
        raise InputError(f"{label}: safetensors entry {name!r} is not an object")
    missing = [k for k in ("dtype", "shape", "data_offsets") if k not in info]
    if missing:
        raise InputError(f"{label}: safetensors entry {name!r} lacks {', '.join(missing)}")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(code, str) or code not in ST_TO_NAME:
        raise InputError(
            f"{label}: tensor {name!r} has unsupported dtype {code!r}; posenc reads {', '.join(ST_TO_NAME)}"
        )
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise InputError(f"{label}: tensor {name!r} has an invalid shape {shape!r}")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(type(n) is int and n >= 0 for n in offsets):
        raise InputError(f"{label}: tensor {name!r} has invalid data_offsets {offsets!r}")
    return name, st_dtype(code), tuple(shape), offsets[0], offsets[1]


def _check_header_length(n: int, label: str, file_size: int | None) -> None:
    if n > MAX_HEADER_SIZE:
        raise InputError(f"{label}: safetensors header length {n} is over the 100 MB limit; not a .safetensors file")
    if file_size is not None and 8 + n > file_size:
        raise InputError(
            f"{label}: safetensors header length {n} is larger than the file ({file_size} bytes); truncated?"
        )


def _check_data_size(label: str, needed: int, available: int) -> None:
    if available < needed:
        raise InputError(f"{label}: truncated: the tensors need {needed} data bytes but the file holds {available}")
    if available > needed:
        raise InputError(f"{label}: {available - needed} unexpected bytes after the last tensor's data")


def _views(data: np.ndarray, entries: list[Entry]) -> dict[str, np.ndarray]:
    tensors = {}
    for name, dtype, shape, begin, end in entries:
        tensors[name] = data[begin:end].view(dtype).reshape(shape)
    return tensors


# ----- reading ------------------------------------------------------------------------------------------
def read_safetensors(fh: BinaryIO, label: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Validate an open ``.safetensors`` file and memory-map its tensors (read-only)."""
    size = os.fstat(fh.fileno()).st_size
    if size < 8:
        raise InputError(f"{label}: truncated: {size} bytes is too short for a .safetensors file")
    n = int.from_bytes(read_exact(fh, 8, label, "the header length"), "little")
    _check_header_length(n, label, size)
    entries, metadata, needed = parse_header(read_exact(fh, n, label, "the header"), label)
    _check_data_size(label, needed, size - 8 - n)
    if needed == 0:
        data = np.zeros(0, dtype=np.uint8)
    else:
        data = np.memmap(fh, dtype=np.uint8, mode="r", offset=8 + n, shape=(needed,))
    return _views(data, entries), dict(metadata)


def read_safetensors_stream(
    stream: ByteStream, label: str, *, max_bytes: int, first8: bytes | None = None
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Read a ``.safetensors`` table from a stream: header, then exactly the data it declares."""
    raw_n = first8 if first8 is not None else read_exact(stream, 8, label, "the header length")
    n = int.from_bytes(raw_n, "little")
    _check_header_length(n, label, None)
    check_limit(label, n, max_bytes, "the safetensors header")
    head = read_exact(stream, n, label, "the safetensors header")
    entries, metadata, needed = parse_header(head, label)
    check_limit(label, needed, max_bytes)
    data = read_exact_into(stream, needed, label, "the tensor data")
    if stream.read(1):
        raise InputError(f"{label}: unexpected data after the last tensor")
    return _views(data, entries), dict(metadata)


# ----- writing ------------------------------------------------------------------------------------------
def header_bytes(tensors: Mapping[str, LazyTensor], metadata: Mapping[str, str]) -> bytes:
    """The length prefix and the space-padded JSON header for ``tensors`` in order."""
    header: dict[str, object] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for name, tensor in tensors.items():
        shape = [int(n) for n in tensor.shape]
        nbytes = math.prod(shape) * np.dtype(tensor.dtype).itemsize
        header[name] = {
            "dtype": NAME_TO_ST[dtype_label(tensor.dtype)],
            "shape": shape,
            "data_offsets": [offset, offset + nbytes],
        }
        offset += nbytes
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return len(raw).to_bytes(8, "little") + raw


def write_safetensors(
    sink, tensors: Mapping[str, LazyTensor], metadata: Mapping[str, str], progress: Callable[[int], None] | None
) -> None:
    sink.write(header_bytes(tensors, metadata))
    for tensor in tensors.values():
        for block in iter_blocks(tensor, little_endian(tensor.dtype)):
            sink.write(as_bytes(block))
            if progress:
                progress(len(block))
