"""The table protocol every reader and writer speaks: lazy tensors, read tables, row blocks, limits.

A *table* is a set of named tensors plus string metadata. Writers take :class:`LazyTensor` objects (any row
range on demand) and stream them in row blocks of about :data:`BLOCK_BYTES`; readers return a
:class:`ReadTable` of arrays (memory-mapped where the format allows).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ..errors import InputError, ParameterError, param
from .dtypes import dtype_label, is_float, little_endian

if TYPE_CHECKING:
    pass

FORMATS = ("npy", "npz", "safetensors", "csv", "json")
#: Formats that hold exactly one tensor (and no metadata).
SINGLE_TENSOR_FORMATS = ("npy", "csv")

#: The most bytes a reader holds in memory (stdin, .npz members, .csv, .json): 8 GiB.
#: Raise it with ``--max-bytes``; memory-mapped ``.npy``/``.safetensors`` files are not limited.
DEFAULT_MAX_BYTES = 8 << 30

#: Target size of one streamed block: big enough to amortise per-block overhead, small enough that the
#: writer's peak memory stays a few tens of MiB whatever the table size.
BLOCK_BYTES = 8 << 20


#: Dtypes a writer accepts, by posenc's name for them.
# ----- the LazyTensor protocol -------------------------------------------------------------------------
@runtime_checkable
class LazyTensor(Protocol):
    """A tensor that can produce any row range on demand (see ``encodings.base.EncodingTensor``)."""

    name: str

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> np.dtype: ...

    def rows(self, start: int, stop: int) -> np.ndarray: ...

    def fill(self, start: int, stop: int, out: np.ndarray) -> None: ...


def check_rows(start: int, stop: int, length: int, label: str) -> None:
    """The one rule of every ``rows(start, stop)``: ``0 <= start <= stop <= length`` (integers), else a
    :class:`~posenc_cli.errors.ParameterError` naming the range and the tensor's length. ``start == stop`` is an
    empty block; nothing is clipped, so a caller that asks past the end hears about it."""
    ok = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, stop))
    if not ok or not 0 <= start <= stop <= length:
        raise ParameterError(
            f"rows [{start}, {stop}) of {label} are outside its {length} rows; ask for 0 <= start <= stop <= {length}"
        )


class ByteStream(Protocol):
    """What the stream readers need of a source: ``read(n)`` (a file, a pipe, a zip member, a prefixed stream)."""

    def read(self, n: int, /) -> bytes: ...


@dataclass(frozen=True)
class ArrayTensor:
    """An ``np.ndarray`` (or memmap) in the :class:`LazyTensor` protocol, for tables read from files."""

    name: str
    array: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.array.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` as a new array (a copy, so a memmap can be closed afterwards); the range must
        satisfy ``0 <= start <= stop <= shape[0]`` (:func:`check_rows`)."""
        check_rows(start, stop, int(self.array.shape[0]), f"tensor {self.name!r}")
        return np.array(self.array[start:stop], copy=True)

    def fill(self, start: int, stop: int, out: np.ndarray) -> None:
        """Rows ``[start, stop)`` into ``out`` (any layout and byte order; NumPy converts)."""
        out[...] = self.array[start:stop]


@dataclass
class ReadTable:
    """What a reader returns: tensors (possibly read-only ``np.memmap``), string metadata, and the source."""

    tensors: dict[str, np.ndarray]
    metadata: dict[str, str] = field(default_factory=dict)
    source: str = ""


# ----- small helpers ------------------------------------------------------------------------------------
def human_bytes(n: int) -> str:
    """``n`` bytes in binary units with one decimal: ``human_bytes(4 << 30) == "4.0 GiB"``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if value < 1024 or unit == "PiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def format_for(path: str, override: str | None) -> str:
    """The format of ``path``: ``override`` if given, else its suffix (``"-"`` defaults to ``npy``).

    An ``override`` that disagrees with a table suffix of ``path`` (``out.npy`` as ``safetensors``) is refused:
    the file would hold one format under another's name. ``"-"`` and names without a table suffix take any
    format."""
    if override is not None:
        fmt = override.strip().lower().lstrip(".")
        if fmt not in FORMATS:
            raise ParameterError(f"unknown {param('format')} {override!r}; choose from: {', '.join(FORMATS)}")
        suffix = "" if path == "-" else _suffix(path)
        if suffix in FORMATS and suffix != fmt:
            raise ParameterError(
                f"{path} ends in .{suffix} but {param('format')} {override!r} asks for {fmt}; "
                f"name the file .{fmt} or drop {param('format')}"
            )
        return fmt
    if path == "-":
        return "npy"
    fmt = _suffix(path)
    if fmt not in FORMATS:
        raise ParameterError(
            f"cannot tell the format of {path!r} from its suffix; use one of "
            f"{', '.join('.' + f for f in FORMATS)} or pass {param('format')} ({', '.join(FORMATS)})"
        )
    return fmt


def _suffix(path: str) -> str:
    base = os.path.basename(path)
    return base.rsplit(".", 1)[-1].lower() if "." in base.lstrip(".") else ""


def block_rows(shape: tuple[int, ...], itemsize: int) -> int:
    """Rows per streamed block so that a block holds about :data:`BLOCK_BYTES` (at least one row)."""
    row_bytes = math.prod(shape[1:]) * itemsize
    return max(1, BLOCK_BYTES // max(1, row_bytes))


def iter_blocks(tensor: LazyTensor, dtype: np.dtype | None = None) -> Iterator[np.ndarray]:
    """Yield ``tensor`` as consecutive C-contiguous row blocks of ``dtype`` (default: its own dtype, made
    little-endian), filled with ``tensor.fill``. Each block is only valid until the next one is requested.

    Two buffers alternate: while the caller writes one block, a background thread computes the next, so a
    streamed export costs max(compute, write) rather than their sum, with memory bounded by two blocks.
    """
    shape = tuple(int(n) for n in tensor.shape)
    dtype = little_endian(tensor.dtype if dtype is None else dtype)
    n_rows = shape[0]
    if n_rows == 0 or math.prod(shape) == 0:
        return
    step = block_rows(shape, dtype.itemsize)
    ranges = [(start, min(start + step, n_rows)) for start in range(0, n_rows, step)]
    bufs = [np.empty((min(step, n_rows), *shape[1:]), dtype=dtype) for _ in range(min(2, len(ranges)))]

    def compute(i: int) -> np.ndarray:
        start, stop = ranges[i]
        out = bufs[i % len(bufs)][: stop - start]
        tensor.fill(start, stop, out)
        return out

    if len(ranges) == 1:
        yield compute(0)
        return
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="posenc-block")
    try:
        pending = pool.submit(compute, 0)
        for i in range(len(ranges)):
            block = pending.result()
            if i + 1 < len(ranges):  # the other buffer is free: the caller is done with block i - 1
                pending = pool.submit(compute, i + 1)
            yield block
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def as_bytes(block: np.ndarray) -> memoryview:
    """The raw bytes of a C-contiguous block (works for ml_dtypes' bfloat16 too)."""
    return np.ascontiguousarray(block).reshape(-1).view(np.uint8).data


# ----- validation for callers ---------------------------------------------------------------------------
def validate_table_array(array: np.ndarray, name: str, source: str, *, need_float: bool) -> None:
    """Raise :class:`InputError` unless ``array`` can be an encoding table: 1-D, 2-D or 3-D, at least one
    row and one value, real numbers (floating when ``need_float``)."""
    dtype = np.dtype(array.dtype)
    where = f"{source}: tensor {name!r}"
    if dtype.kind == "c":
        raise InputError(f"{where} holds complex values; complex values are not an encoding table")
    if not (is_float(dtype) or dtype.kind in "iub"):
        raise InputError(f"{where} has non-numeric dtype {dtype_label(dtype)}; an encoding table holds numbers")
    if array.ndim not in (1, 2, 3):
        raise InputError(f"{where} has shape {tuple(array.shape)}; an encoding table is 1-D, 2-D or 3-D")
    if array.shape[0] == 0:
        raise InputError(f"{where} has zero rows (shape {tuple(array.shape)})")
    if array.size == 0:
        raise InputError(f"{where} is empty (shape {tuple(array.shape)})")
    if need_float and not is_float(dtype):
        raise InputError(
            f"{where} has {dtype_label(dtype)} values; this command needs floating values "
            "(float16, bfloat16, float32 or float64)"
        )


def check_limit(label: str, nbytes: int, max_bytes: int, what: str = "the table") -> None:
    """Refuse to hold more than ``max_bytes`` in memory, naming the size and the fix."""
    if nbytes > max_bytes:
        raise InputError(
            f"{label}: {what} is {human_bytes(nbytes)}, over the {human_bytes(max_bytes)} limit; "
            f"pass a larger {param('max_bytes')} to raise the limit"
        )


def read_exact(stream: ByteStream, n: int, label: str, what: str) -> bytes:
    """Exactly ``n`` bytes of ``stream`` (a pipe is fine); a clean :class:`InputError` when it ends early."""
    chunks = []
    got = 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            raise InputError(f"{label}: truncated: {what} needs {n} bytes but only {got} were there")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_exact_into(stream: ByteStream, n: int, label: str, what: str) -> np.ndarray:
    """Exactly ``n`` bytes of ``stream`` into a new ``uint8`` array, read in place (no second copy)."""
    out = np.empty(n, dtype=np.uint8)
    view = out.data
    got = 0
    readinto = getattr(stream, "readinto", None)
    while got < n:
        if readinto is not None:
            k = readinto(view[got : min(n, got + BLOCK_BYTES)])
        else:
            chunk = stream.read(min(n - got, BLOCK_BYTES))
            k = len(chunk) if chunk else 0
            view[got : got + k] = chunk
        if not k:
            raise InputError(
                f"{label}: truncated: {what} needs {human_bytes(n)} ({n} bytes) but the data ends after {got} bytes"
            )
        got += k
    return out
