"""Readers and writers of encoding tables: ``.npy``, ``.npz``, ``.safetensors``, ``.csv`` and ``.json``.

A *table* is a set of named tensors plus string metadata (how to regenerate it). This package is the only
place that touches table files. Its promises:

Writers (:func:`write_table`; :func:`write_atomic` writes any bytes, pictures included, the same way)
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

from .atomic import write_atomic, write_table
from .dtypes import READABLE_DTYPES, WRITABLE_DTYPES, bfloat16, dtype_label, is_bfloat16, is_float, little_endian
from .npy import TrailerNotRead
from .protocol import (
    BLOCK_BYTES,
    DEFAULT_MAX_BYTES,
    FORMATS,
    SINGLE_TENSOR_FORMATS,
    ArrayTensor,
    LazyTensor,
    ReadTable,
    as_bytes,
    block_rows,
    check_limit,
    format_for,
    human_bytes,
    iter_blocks,
    read_exact,
    read_exact_into,
    validate_table_array,
)
from .reading import read_stream, read_table

__all__ = [
    "BLOCK_BYTES",
    "DEFAULT_MAX_BYTES",
    "FORMATS",
    "SINGLE_TENSOR_FORMATS",
    "READABLE_DTYPES",
    "WRITABLE_DTYPES",
    "ArrayTensor",
    "LazyTensor",
    "ReadTable",
    "as_bytes",
    "bfloat16",
    "block_rows",
    "check_limit",
    "dtype_label",
    "format_for",
    "human_bytes",
    "is_bfloat16",
    "is_float",
    "iter_blocks",
    "little_endian",
    "read_exact",
    "read_exact_into",
    "TrailerNotRead",
    "read_stream",
    "read_table",
    "validate_table_array",
    "write_atomic",
    "write_table",
]
