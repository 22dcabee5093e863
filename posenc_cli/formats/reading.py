"""Reading a table from a path or a (possibly non-seekable) stream: dispatch by suffix or by sniffed bytes."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ..errors import InputError
from .protocol import BLOCK_BYTES, DEFAULT_MAX_BYTES, FORMATS, ReadTable, _suffix, check_limit

if TYPE_CHECKING:
    from typing import BinaryIO


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

                tensors, metadata = read_npy(fh, label, max_bytes=max_bytes)
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
            from .npy import read_npy_stream, read_trailer, with_trailer

            array = read_npy_stream(_Prefixed(head, stream), label, max_bytes=max_bytes)
            tensors, metadata = with_trailer(label, array, read_trailer(stream, label, max_bytes=max_bytes))
            return ReadTable(tensors, metadata, label)
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
