"""The ``.npz`` format: a zip archive of ``.npy`` members, as written by ``np.savez``.

Format
------
* A zip archive (PKZIP application note; ZIP64 when a member is over 4 GiB). Each tensor ``NAME`` is the
  member ``NAME.npy`` holding a complete ``.npy`` file (see :mod:`posenc_cli.formats.npy`).
* posenc keeps the table metadata in the archive comment: ``posenc `` followed by a UTF-8 JSON object of
  string -> string. ``np.load`` ignores the comment, so every key of ``np.load(path).files`` is a tensor and
  ``{k: torch.from_numpy(d[k]) for k in d.files}`` works. (posenc 0.1 wrote a ``__metadata__.json`` member
  instead; it is still read.)
* posenc writes members uncompressed (``ZIP_STORED``, like ``np.savez``) with a fixed timestamp
  (1980-01-01) so that the same table gives the same bytes.

Reading
-------
Sizes are checked from the zip central directory *before* anything is decompressed: a member larger than
``max_bytes``, or members adding up to more, are refused (zip bombs). Decompression never yields more than
the directory's size (``zipfile`` enforces it), each member's ``.npy`` header must declare exactly that
size, and the CRC is checked at the end. A member that is not ``*.npy`` (or the metadata) is refused, as
are non-zip files, encrypted or unsupported-compression members and duplicate names.

Writing
-------
Each member is streamed block by block through ``ZipFile.open(name, "w")`` with the same header and data
as ``.npy`` (bytes identical to ``np.lib.format.write_array``), so memory stays bounded here too.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError, ParameterError
from .protocol import ByteStream, check_limit

if TYPE_CHECKING:
    from typing import BinaryIO

    from . import LazyTensor

METADATA_MEMBER = "__metadata__.json"
#: The archive comment that holds posenc's metadata starts with this.
COMMENT_PREFIX = b"posenc "
#: The metadata member is small text; anything bigger is not ours.
MAX_METADATA_BYTES = 16 << 20
_FIXED_DATE = (1980, 1, 1, 0, 0, 0)

# What zipfile (and the decompressors under it) raise on a damaged archive.
_ZIP_ERRORS: tuple[type[BaseException], ...] = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    EOFError,
    OSError,
    ValueError,
    NotImplementedError,
    RuntimeError,
    struct.error,
    OverflowError,
    UnicodeDecodeError,
)
try:  # optional decompressors
    import lzma

    _ZIP_ERRORS += (lzma.LZMAError,)
except ImportError:  # pragma: no cover
    pass


def read_npz(fh: BinaryIO, label: str, *, max_bytes: int) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Read every array of a ``.npz`` archive (and posenc's metadata member) into memory."""
    from .npy import read_npy_stream

    if not zipfile.is_zipfile(fh):
        raise InputError(f"{label}: not a .npz file (not a zip archive)")
    fh.seek(0)
    tensors: dict[str, np.ndarray] = {}
    metadata: dict[str, str] = {}
    try:
        with zipfile.ZipFile(fh) as zf:
            infos = zf.infolist()
            total = 0
            for info in infos:
                if not info.filename.endswith(".npy") and info.filename != METADATA_MEMBER:
                    raise InputError(
                        f"{label}: member {info.filename!r} is not an array (.npy); posenc reads .npz files "
                        "made of .npy members"
                    )
                check_limit(label, info.file_size, max_bytes, f"member {info.filename!r}")
                total += info.file_size
            check_limit(label, total, max_bytes, "the uncompressed archive")
            if zf.comment.startswith(COMMENT_PREFIX):
                comment = zf.comment[len(COMMENT_PREFIX) :]
                metadata = _read_metadata(io.BytesIO(comment), len(comment), f"{label} (archive comment)")
            seen = set()
            for info in infos:
                if info.filename in seen:
                    raise InputError(f"{label}: member {info.filename!r} appears twice")
                seen.add(info.filename)
                member_label = f"{label} (member {info.filename!r})"
                with zf.open(info) as member:
                    if info.filename == METADATA_MEMBER:
                        metadata = _read_metadata(member, info.file_size, member_label)
                        continue
                    array = read_npy_stream(member, member_label, max_bytes=max_bytes, available=info.file_size)
                    if member.read(1):  # reading to the end also verifies the CRC
                        raise InputError(f"{member_label}: unexpected data after the array")
                tensors[info.filename[: -len(".npy")]] = array
    except InputError:
        raise
    except MemoryError:
        raise InputError(f"{label}: not enough memory to read it") from None
    except _ZIP_ERRORS as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{label}: damaged or unsupported .npz archive: {reason}") from None
    if not tensors:
        raise InputError(f"{label}: the .npz archive holds no arrays")
    return tensors, metadata


def _read_metadata(member: ByteStream, size: int, label: str) -> dict[str, str]:
    if size > MAX_METADATA_BYTES:
        raise InputError(f"{label}: metadata of {size} bytes is too large")
    raw = member.read(size + 1)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InputError(f"{label}: metadata is not valid UTF-8 JSON") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise InputError(f"{label}: metadata is not a JSON object of strings")
    return data


def write_npz(
    sink, tensors: Mapping[str, LazyTensor], metadata: Mapping[str, str], progress: Callable[[int], None] | None
) -> None:
    from .npy import write_npy_tensor

    with zipfile.ZipFile(sink, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, tensor in tensors.items():
            with zf.open(_info(f"{name}.npy"), mode="w", force_zip64=True) as member:
                write_npy_tensor(member, tensor, progress)
        if metadata:
            comment = COMMENT_PREFIX + json.dumps(dict(metadata), ensure_ascii=False).encode("utf-8")
            if len(comment) > 0xFFFF:
                raise ParameterError(f".npz metadata of {len(comment)} bytes exceeds a zip comment (65535 bytes)")
            zf.comment = comment


def _info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_FIXED_DATE)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    return info
