"""Atomic writing: the one writer of every file posenc makes (tables, and pictures through :mod:`posenc_cli.plot`).

:func:`write_atomic` hands a binary sink over a temporary file in the target directory to a callback, then
fsyncs it and renames (or links) it onto the target. On any exception (``KeyboardInterrupt`` included) the
temporary file is removed and an existing target is left untouched; an existing target is only replaced with
``force=True``. The new file's permissions follow the umask. :func:`write_table` writes a table through it;
``dest="-"`` writes to ``sys.stdout.buffer``, where a ``BrokenPipeError`` propagates unchanged.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..errors import OutputError, ParameterError, interrupted, param
from .dtypes import WRITABLE_DTYPES, dtype_label, is_bfloat16
from .protocol import FORMATS, LazyTensor

if TYPE_CHECKING:
    from typing import BinaryIO


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
                f"write .safetensors or pass {param('dtype')} float32"
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
    if fmt == "npy+trailer":
        from .npy import write_npy_with_trailer

        write_npy_with_trailer(sink, tensors, metadata, progress)
    elif fmt == "npy":
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
    trailer: bool = False,
) -> None:
    """Write ``tensors`` and ``metadata`` to ``dest`` (a path, or ``"-"`` for stdout) in format ``fmt``.

    ``trailer`` (``.npy`` only): the first tensor as a plain ``.npy``, then the metadata and the other tensors in
    a posenc trailer (see :func:`.npy.write_npy_with_trailer`): what a pipe between posenc commands carries.

    ``progress`` is called after each block with the number of rows (along axis 0) just written; the total
    is the sum of ``shape[0]`` over the tensors, whatever the format.
    Raises :class:`ParameterError` for a table the format cannot hold (checked before anything is created)
    and :class:`OutputError` when the destination cannot be written.
    """
    _check_tensors(tensors, metadata, fmt)
    if trailer and fmt != "npy":
        raise ParameterError(f"a posenc trailer follows .npy data; .{fmt} keeps every tensor by itself")
    if fmt in ("npy", "csv") and len(tensors) != 1 and not trailer:
        raise ParameterError(
            f".{fmt} holds one tensor but the table has {len(tensors)} ({', '.join(tensors)}); "
            "write .npz, .safetensors or .json to keep them all"
        )
    if dest == "-":
        sink = _StreamSink(sys.stdout.buffer)
        _write_to(sink, tensors, metadata, "npy+trailer" if trailer else fmt, progress)
        sink.flush()
        return
    kind = "npy+trailer" if trailer else fmt
    write_atomic(dest, lambda sink: _write_to(sink, tensors, metadata, kind, progress), force=force)


def _make_temp(directory: str, prefix: str, claimed: list[str] | None = None) -> tuple[int, str]:
    """A new file ``<prefix><random>.tmp`` in ``directory``, mode 0600, opened exclusively: what
    ``tempfile.mkstemp`` does, without importing tempfile (and shutil, random, bz2, lzma) at every start.

    ``claimed`` receives the name before the file is created, so that a caller interrupted (Ctrl-C) anywhere
    between the creation and the return still knows which file to remove: a name this random, opened with
    ``O_EXCL``, is this call's file whenever it exists (a name found taken is taken back)."""
    for _ in range(100):
        path = os.path.join(directory, f"{prefix}{os.urandom(6).hex()}.tmp")
        if claimed is not None:
            claimed.append(path)
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600), path
        except FileExistsError:
            if claimed is not None:
                claimed.remove(path)
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", directory)


def exists_message(dest: str) -> str:
    """What a refused overwrite says, for tables and pictures alike."""
    return f"{dest} exists; pass {param('force')} to overwrite"


def write_atomic(dest: str, produce: Callable[[_FdSink], object], *, force: bool = False) -> None:
    """Write the bytes ``produce(sink)`` writes into ``sink`` (``write``, ``tell``, ``seek``, ``flush``) to the
    file ``dest``, atomically: a temporary file beside it, fsynced, then renamed (``force``) or linked (no
    ``force``: an existing ``dest`` is refused, without a race between the test and the rename) onto ``dest``.

    Raises :class:`OutputError` when ``dest`` exists (without ``force``) or cannot be written; on any exception,
    ``KeyboardInterrupt`` included, the temporary file is removed and an existing ``dest`` is left as it was.
    """
    directory = os.path.dirname(dest) or "."
    if not os.path.isdir(directory):
        raise OutputError(f"cannot write {dest}: directory {directory} does not exist")
    if os.path.isdir(dest):
        raise OutputError(f"cannot write {dest}: it is a directory")
    if not force and os.path.lexists(dest):
        raise OutputError(exists_message(dest))
    claimed: list[str] = []  # the temporary file's name, known before it exists (Ctrl-C at any point removes it)
    try:
        try:
            fd, tmp = _make_temp(directory, f".{os.path.basename(dest)}.", claimed)
        except OSError as exc:
            raise OutputError(f"cannot write {dest}: {exc.strerror or exc}") from None
        try:
            produce(_FdSink(fd))
            if hasattr(os, "fchmod"):  # mkstemp makes 0600; regular output follows the umask
                os.fchmod(fd, 0o666 & ~_umask())
            os.fsync(fd)
        finally:
            os.close(fd)
        if interrupted():  # a Ctrl-C whose KeyboardInterrupt was lost (errors._Interrupt): never commit the file
            raise KeyboardInterrupt
        if force:
            os.replace(tmp, dest)
        else:
            _link_no_clobber(tmp, dest)
        _fsync_dir(directory)
    except BaseException as exc:
        for name in claimed:
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass
            except OSError:
                pass  # nothing better to do; the original error matters more
        if isinstance(exc, FileExistsError):
            raise OutputError(exists_message(dest)) from None
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
