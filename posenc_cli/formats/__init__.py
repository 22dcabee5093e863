"""Readers and writers of encoding tables: ``.npy``, ``.npz``, ``.safetensors``, ``.csv`` and ``.json``.

A *table* is a set of named tensors plus string metadata (how to regenerate it). This package is the only
place that touches table files. Its promises:

Writers (:func:`write_table`)
    * stream block by block: ``.npy``, ``.npz``, ``.safetensors``, ``.csv`` and ``.json`` are written from a
      :class:`LazyTensor` in row blocks of about :data:`BLOCK_BYTES` into one reused buffer, so the peak
      memory is bounded whatever the table size;
    * always write C-contiguous little-endian data, whatever the layout of the array they are given;
    * are atomic: the table is written to ``.<name>.<random>.tmp`` in the target directory, flushed,
      fsynced and renamed onto the target. On any exception (``KeyboardInterrupt`` included) the temporary
      file is removed and an existing target is left untouched. An existing target is only replaced with
      ``force=True``. The new file's permissions follow the umask like any other tool's output.
    * ``dest="-"`` writes to ``sys.stdout.buffer``; a ``BrokenPipeError`` propagates unchanged.

Readers (:func:`read_table`)
    * raise :class:`~posenc_cli.errors.InputError` with one line naming the file for every problem: never a
      traceback, never an allocation larger than the file (or stream) can hold, never a pickle;
    * memory-map ``.npy`` and ``.safetensors`` files, so a 4 GiB table can be checked block by block;
    * read stdin (``"-"``), and named pipes such as ``<(posenc generate ...)``, as ``.npy`` bytes (also
      ``.safetensors`` and ``.npz``, sniffed from the first bytes) from a non-seekable pipe, reading exactly
      the declared number of bytes;
    * refuse to hold more than ``max_bytes`` (default :data:`DEFAULT_MAX_BYTES`, 8 GiB) in memory: this
      limit applies to stdin, ``.npz`` members, ``.csv`` and ``.json``; memory-mapped files need no limit.

Semantic checks (1-D to 3-D, non-empty, floating) are left to the caller, who may use
:func:`validate_table_array`.
"""

from __future__ import annotations

import errno
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ..errors import InputError, OutputError, ParameterError

if TYPE_CHECKING:
    from typing import BinaryIO

#: Every table format, by the suffix that selects it.
FORMATS = ("npy", "npz", "safetensors", "csv", "json")

#: The most bytes a reader holds in memory (stdin, .npz members, .csv, .json): 8 GiB.
#: Raise it with ``--max-bytes``; memory-mapped ``.npy``/``.safetensors`` files are not limited.
DEFAULT_MAX_BYTES = 8 << 30

#: Target size of one streamed block: big enough to amortise per-block overhead, small enough that the
#: writer's peak memory stays a few tens of MiB whatever the table size.
BLOCK_BYTES = 8 << 20

#: Dtypes a writer accepts, by posenc's name for them.
WRITABLE_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")

#: Dtypes a reader returns (``.npy``/``.npz`` may also hold unsigned 16-64 bit integers).
READABLE_DTYPES = WRITABLE_DTYPES + ("uint16", "uint32", "uint64")


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
        """Rows ``[start, stop)`` as a new array (a copy, so a memmap can be closed afterwards)."""
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
    """The format of ``path``: ``override`` if given, else its suffix (``"-"`` defaults to ``npy``)."""
    if override is not None:
        fmt = override.strip().lower().lstrip(".")
        if fmt not in FORMATS:
            raise ParameterError(f"unknown format {override!r}; choose from: {', '.join(FORMATS)}")
        return fmt
    if path == "-":
        return "npy"
    fmt = _suffix(path)
    if fmt not in FORMATS:
        raise ParameterError(
            f"cannot tell the format of {path!r} from its suffix; use one of "
            f"{', '.join('.' + f for f in FORMATS)} or pass --format ({', '.join(FORMATS)})"
        )
    return fmt


def _suffix(path: str) -> str:
    base = os.path.basename(path)
    return base.rsplit(".", 1)[-1].lower() if "." in base.lstrip(".") else ""


def dtype_label(dtype: np.dtype) -> str:
    """posenc's name for a dtype, without importing the encodings package."""
    dtype = np.dtype(dtype)
    return "bfloat16" if dtype.name == "bfloat16" else dtype.name


def is_bfloat16(dtype: np.dtype) -> bool:
    return np.dtype(dtype).name == "bfloat16"


def is_float(dtype: np.dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or is_bfloat16(dtype)


def bfloat16() -> np.dtype:
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def little_endian(dtype: np.dtype) -> np.dtype:
    """``dtype`` with little-endian byte order (what every format here stores)."""
    dtype = np.dtype(dtype)
    if dtype.byteorder == ">" or (dtype.byteorder == "=" and sys.byteorder == "big" and dtype.itemsize > 1):
        return dtype.newbyteorder("<")
    return dtype


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
    return memoryview(np.ascontiguousarray(block).reshape(-1).view(np.uint8))


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


# ----- reading ------------------------------------------------------------------------------------------
def read_table(source: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ReadTable:
    """Read the table at ``source`` (a path, or ``"-"`` for stdin); :class:`InputError` on any problem."""
    if source == "-":
        return read_stream(sys.stdin.buffer, "<stdin>", max_bytes=max_bytes)
    label = source
    try:
        st = os.stat(source)
    except FileNotFoundError:
        raise InputError(f"{label}: no such file") from None
    except PermissionError:
        raise InputError(f"{label}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{label}: cannot read: {exc.strerror or exc}") from None
    import stat

    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{label}: is a directory, not a table file")
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):  # <(posenc generate ...), /dev/stdin
        try:
            with open(source, "rb") as fh:
                table = read_stream(fh, label, max_bytes=max_bytes)
        except PermissionError:
            raise InputError(f"{label}: permission denied") from None
        except OSError as exc:
            raise InputError(f"{label}: cannot read: {exc.strerror or exc}") from None
        return table
    fmt = _suffix(source)
    if fmt not in FORMATS:
        raise InputError(
            f"{label}: unknown table format {('.' + fmt) if fmt else '(no suffix)'}; "
            f"use one of {', '.join('.' + f for f in FORMATS)}"
        )
    try:
        with open(source, "rb") as fh:
            if fmt == "npy":
                from .npy import read_npy

                tensors, metadata = read_npy(fh, label)
            elif fmt == "safetensors":
                from .safetensors import read_safetensors

                tensors, metadata = read_safetensors(fh, label)
            elif fmt == "npz":
                from .npz import read_npz

                tensors, metadata = read_npz(fh, label, max_bytes=max_bytes)
            else:
                from .text import read_csv, read_json

                reader = read_csv if fmt == "csv" else read_json
                tensors, metadata = reader(fh, label, max_bytes=max_bytes)
    except PermissionError:
        raise InputError(f"{label}: permission denied") from None
    except IsADirectoryError:
        raise InputError(f"{label}: is a directory, not a table file") from None
    except MemoryError:
        raise InputError(f"{label}: not enough memory to read it") from None
    except OSError as exc:
        raise InputError(f"{label}: cannot read: {exc.strerror or exc}") from None
    return ReadTable(tensors=tensors, metadata=metadata, source=label)


def read_stream(stream: BinaryIO, label: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ReadTable:
    """Read a table from a binary stream that may not be seekable (stdin from a pipe).

    The format is sniffed from the first bytes: the ``.npy`` magic, a zip signature (``.npz``, read into
    memory up to ``max_bytes``), else a ``.safetensors`` header length. Exactly the declared bytes are read.
    """
    try:
        head = stream.read(8) or b""
        while 0 < len(head) < 8:  # a pipe may deliver the first bytes in pieces
            more = stream.read(8 - len(head))
            if not more:
                break
            head += more
        if not head:
            raise InputError(f"{label}: no data (empty input); pipe a .npy or .safetensors table into it")
        if head[:1] == b"\x93":  # the .npy magic (checked in full by the npy reader)
            from .npy import NPY_TENSOR, read_npy_stream

            array = read_npy_stream(_Prefixed(head, stream), label, max_bytes=max_bytes)
            if stream.read(1):
                raise InputError(f"{label}: unexpected data after the array")
            return ReadTable({NPY_TENSOR: array}, {}, label)
        if head.startswith(b"PK"):
            import io

            from .npz import read_npz

            chunks, total = [head], len(head)
            while total <= max_bytes:  # a zip must be seekable: hold it in memory, within the limit
                chunk = stream.read(min(BLOCK_BYTES, max_bytes + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            check_limit(label, total, max_bytes, "the .npz stream")
            tensors, metadata = read_npz(io.BytesIO(b"".join(chunks)), label, max_bytes=max_bytes)
            return ReadTable(tensors, metadata, label)
        if len(head) < 8:
            raise InputError(f"{label}: truncated: {len(head)} bytes is not a table")
        from .safetensors import read_safetensors_stream

        if int.from_bytes(head, "little") > 100_000_000:
            raise InputError(f"{label}: not a .npy, .npz or .safetensors stream")
        tensors, metadata = read_safetensors_stream(stream, label, max_bytes=max_bytes, first8=head)
        return ReadTable(tensors, metadata, label)
    except MemoryError:
        raise InputError(f"{label}: not enough memory to read it") from None
    except OSError as exc:
        raise InputError(f"{label}: cannot read: {exc.strerror or exc}") from None


class _Prefixed:
    """A stream with some bytes already read from it put back in front."""

    def __init__(self, prefix: bytes, stream: BinaryIO) -> None:
        self.prefix = prefix
        self.stream = stream

    def read(self, n: int) -> bytes:
        if self.prefix:
            out, self.prefix = self.prefix[:n], self.prefix[n:]
            return out
        return self.stream.read(n)

    def readinto(self, buf) -> int:
        if self.prefix:
            data = self.read(len(buf))
            buf[: len(data)] = data
            return len(data)
        readinto = getattr(self.stream, "readinto", None)
        if readinto is None:
            data = self.stream.read(len(buf))
            buf[: len(data)] = data
            return len(data)
        return readinto(buf)


def check_limit(label: str, nbytes: int, max_bytes: int, what: str = "the table") -> None:
    """Refuse to hold more than ``max_bytes`` in memory, naming the size and the fix."""
    if nbytes > max_bytes:
        raise InputError(
            f"{label}: {what} is {human_bytes(nbytes)}, over the {human_bytes(max_bytes)} limit; "
            "pass --max-bytes to raise the limit"
        )


def read_exact(stream: BinaryIO, n: int, label: str, what: str) -> bytes:
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


def read_exact_into(stream: BinaryIO, n: int, label: str, what: str) -> np.ndarray:
    """Exactly ``n`` bytes of ``stream`` into a new ``uint8`` array, read in place (no second copy)."""
    out = np.empty(n, dtype=np.uint8)
    view = memoryview(out)
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


# ----- writing ------------------------------------------------------------------------------------------
class _FdSink:
    """A minimal binary file object over a file descriptor, writing with ``os.write`` until done.

    ``zipfile`` needs ``write``/``tell``/``seek``/``flush``; the other writers only ``write``.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        n = len(view)
        done = 0
        while done < n:
            done += os.write(self.fd, view[done:])
        return n

    def tell(self) -> int:
        return os.lseek(self.fd, 0, os.SEEK_CUR)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return os.lseek(self.fd, offset, whence)

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        pass


class _StreamSink:
    """Writes to a binary stream (``sys.stdout.buffer``), not seekable; ``BrokenPipeError`` propagates."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        self.stream.write(view)
        return len(view)

    def flush(self) -> None:
        self.stream.flush()


def _check_tensors(tensors: Mapping[str, LazyTensor], metadata: Mapping[str, str], fmt: str) -> None:
    if fmt not in FORMATS:
        raise ParameterError(f"unknown format {fmt!r}; choose from: {', '.join(FORMATS)}")
    if not tensors:
        raise ParameterError("nothing to write: the table has no tensors")
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ParameterError(f"metadata {key!r}: {value!r} is not a string; table metadata holds strings only")
    for name, tensor in tensors.items():
        if not isinstance(name, str) or not name:
            raise ParameterError(f"tensor name {name!r} is not a non-empty string")
        if name == "__metadata__":
            raise ParameterError("a tensor cannot be named '__metadata__' (safetensors reserves it); rename it")
        label = dtype_label(tensor.dtype)
        if label not in WRITABLE_DTYPES:
            raise ParameterError(
                f"tensor {name!r} has dtype {label}, which posenc does not write; use one of: "
                f"{', '.join(WRITABLE_DTYPES)}"
            )
        if any((not isinstance(n, (int, np.integer))) or n < 0 for n in tensor.shape):
            raise ParameterError(f"tensor {name!r} has an invalid shape {tuple(tensor.shape)}")
        if not tensor.shape:
            raise ParameterError(f"tensor {name!r} has shape (); posenc tables have at least one axis")
        if fmt == "csv" and len(tensor.shape) > 2:
            raise ParameterError(
                f".csv holds a 1-D or 2-D tensor but {name!r} has shape {tuple(tensor.shape)}; "
                "write .npy, .npz, .safetensors or .json"
            )
        if fmt in ("npy", "npz") and is_bfloat16(tensor.dtype):
            raise ParameterError(
                f"bfloat16 cannot be stored in .{fmt} (NumPy has no bfloat16 type); "
                "write .safetensors or pass --dtype float32"
            )


def _umask() -> int:
    try:  # Linux >= 4.7 reports it without changing it
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_to(sink, tensors, metadata, fmt, progress) -> None:
    if fmt == "npy":
        from .npy import write_npy

        write_npy(sink, tensors, metadata, progress)
    elif fmt == "npz":
        from .npz import write_npz

        write_npz(sink, tensors, metadata, progress)
    elif fmt == "safetensors":
        from .safetensors import write_safetensors

        write_safetensors(sink, tensors, metadata, progress)
    elif fmt == "csv":
        from .text import write_csv

        write_csv(sink, tensors, metadata, progress)
    else:
        from .text import write_json

        write_json(sink, tensors, metadata, progress)


def write_table(
    dest: str,
    tensors: Mapping[str, LazyTensor],
    metadata: Mapping[str, str],
    fmt: str,
    *,
    force: bool = False,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Write ``tensors`` and ``metadata`` to ``dest`` (a path, or ``"-"`` for stdout) in format ``fmt``.

    ``progress`` is called after each block with the number of rows (along axis 0) just written; the total
    is the sum of ``shape[0]`` over the tensors, whatever the format.
    Raises :class:`ParameterError` for a table the format cannot hold (checked before anything is created)
    and :class:`OutputError` when the destination cannot be written.
    """
    _check_tensors(tensors, metadata, fmt)
    if fmt in ("npy", "csv") and len(tensors) != 1:
        raise ParameterError(
            f".{fmt} holds one tensor but the table has {len(tensors)} ({', '.join(tensors)}); "
            "write .npz, .safetensors or .json to keep them all"
        )
    if dest == "-":
        sink = _StreamSink(sys.stdout.buffer)
        _write_to(sink, tensors, metadata, fmt, progress)
        sink.flush()
        return
    _write_atomic(dest, tensors, metadata, fmt, force, progress)


def _write_atomic(dest, tensors, metadata, fmt, force, progress) -> None:
    directory = os.path.dirname(dest) or "."
    if not os.path.isdir(directory):
        raise OutputError(f"cannot write {dest}: directory {directory} does not exist")
    if os.path.isdir(dest):
        raise OutputError(f"cannot write {dest}: it is a directory")
    if not force and os.path.lexists(dest):
        raise OutputError(f"{dest} exists; pass --force to overwrite")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(dest)}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise OutputError(f"cannot write {dest}: {exc.strerror or exc}") from None
    try:
        try:
            _write_to(_FdSink(fd), tensors, metadata, fmt, progress)
            if hasattr(os, "fchmod"):  # mkstemp makes 0600; regular output follows the umask
                os.fchmod(fd, 0o666 & ~_umask())
            os.fsync(fd)
        finally:
            os.close(fd)
        if force:
            os.replace(tmp, dest)
        else:
            _link_no_clobber(tmp, dest)
        _fsync_dir(directory)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        except OSError:
            pass  # nothing better to do; the original error matters more
        if isinstance(exc, FileExistsError):
            raise OutputError(f"{dest} exists; pass --force to overwrite") from None
        if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
            reason = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
            raise OutputError(f"cannot write {dest}: {reason}") from None
        raise


def _link_no_clobber(tmp: str, dest: str) -> None:
    """Move ``tmp`` onto ``dest`` only if ``dest`` does not exist (no race between check and rename)."""
    try:
        os.link(tmp, dest)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        # A filesystem without hard links: fall back to check-then-rename.
        if os.path.lexists(dest):
            raise FileExistsError(errno.EEXIST, "exists", dest) from None
        os.replace(tmp, dest)
        return
    os.unlink(tmp)


def _fsync_dir(directory: str) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
