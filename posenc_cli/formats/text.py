"""Text formats: ``.csv`` (one 1-D or 2-D tensor) and ``.json`` (any table), streamed row by row.

CSV format
----------
* An optional first line ``# posenc {JSON}`` where the JSON object holds ``name``, ``dtype``, ``shape``
  and ``metadata`` (string -> string), so that posenc reads back exactly what it wrote. Comment lines
  (``#``) are skipped by ``np.loadtxt``, pandas (``comment="#"``) and most CSV tools.
* Then one line per row (for a 1-D tensor: one value per line), values separated by ``,``, each the
  ``repr`` of the value as a Python float (every float16/bfloat16/float32/float64 value is exactly a
  float64, and ``repr`` is the shortest text that reads back to it), integers as integers, bool as 0/1.
  Non-finite values are ``nan``, ``inf`` and ``-inf``.
* A CSV without the ``# posenc`` line reads as one 2-D float64 tensor named ``pe``.

JSON format
-----------
``{"metadata": {"key": "value", ...}, "tensors": {NAME: {"dtype": "float32", "shape": [4, 8],
"data": [[...], ...]}, ...}}`` with ``data`` nested lists in C order. Floats are written with Python's
``repr`` (full precision); non-finite values use Python's ``NaN``/``Infinity`` extension of JSON.

Reading
-------
The file must be at most ``max_bytes`` (its values are parsed into memory). Numbers only: strings,
nulls, ragged rows, a shape that does not match the data or an unknown dtype are :class:`InputError`.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from .dtypes import READABLE_DTYPES, bfloat16, dtype_label
from .protocol import check_limit, iter_blocks

if TYPE_CHECKING:
    from typing import BinaryIO

    from . import LazyTensor

CSV_MAGIC = "# posenc "


def _dtype(name: object, where: str) -> np.dtype:
    if not isinstance(name, str) or name not in READABLE_DTYPES:
        raise InputError(f"{where} has unsupported dtype {name!r}; choose from: {', '.join(READABLE_DTYPES)}")
    return bfloat16() if name == "bfloat16" else np.dtype(name)


def _shape(shape: object, where: str) -> tuple[int, ...]:
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise InputError(f"{where} has an invalid shape {shape!r}")
    return tuple(shape)


def _metadata(meta: object, label: str) -> dict[str, str]:
    if meta is None:
        return {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise InputError(f"{label}: metadata is not an object of strings")
    return dict(meta)


def _numbers(values: object, dtype: np.dtype, shape: tuple[int, ...] | None, where: str) -> np.ndarray:
    """``values`` (nested lists or an array) as an array of ``dtype`` and ``shape``, numbers only."""
    try:
        array = np.array(values)
    except (ValueError, TypeError, OverflowError, RecursionError):
        raise InputError(f"{where}: data is not a regular array of numbers (ragged rows?)") from None
    if array.dtype.kind not in "fiub":
        what = "strings" if array.dtype.kind in "US" else "nulls, objects or mixed values"
        raise InputError(f"{where}: data holds {what}, not numbers")
    if shape is not None and array.shape != shape:
        if array.size == 0 and math.prod(shape) == 0:
            array = np.zeros(shape, dtype=array.dtype)
        else:
            raise InputError(f"{where}: data has shape {tuple(array.shape)} but the header says {shape}")
    if dtype.kind in "iub" and array.dtype.kind == "f" and not np.all(np.isfinite(array) & (array == np.round(array))):
        raise InputError(f"{where}: data holds non-integer values for dtype {dtype_label(dtype)}")
    with np.errstate(all="ignore"):
        return array.astype(dtype)


def _read_text(fh: BinaryIO, label: str, max_bytes: int) -> str:
    size = os.fstat(fh.fileno()).st_size
    check_limit(label, size, max_bytes, "the file")
    try:
        return fh.read().decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{label}: not UTF-8 text") from None


# ----- CSV ----------------------------------------------------------------------------------------------
def read_csv(fh: BinaryIO, label: str, *, max_bytes: int) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    text = _read_text(fh, label, max_bytes)
    header: dict = {}
    if text.startswith(CSV_MAGIC):
        first, _, _ = text.partition("\n")
        try:
            header = json.loads(first[len(CSV_MAGIC) :])
        except (ValueError, RecursionError):
            raise InputError(f"{label}: the '# posenc' header line is not valid JSON") from None
        if not isinstance(header, dict):
            raise InputError(f"{label}: the '# posenc' header line is not a JSON object")
    name = header.get("name", "pe")
    if not isinstance(name, str) or not name:
        raise InputError(f"{label}: the '# posenc' header has an invalid tensor name {name!r}")
    dtype = _dtype(header.get("dtype", "float64"), f"{label}: tensor {name!r}")
    shape = _shape(header["shape"], f"{label}: tensor {name!r}") if "shape" in header else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "input contained no data": reported below
            parse_as = np.int64 if dtype.kind in "iub" else np.float64  # int64 text must not round via float
            values = np.loadtxt(text.splitlines(), delimiter=",", comments="#", dtype=parse_as, ndmin=2)
    except ValueError as exc:
        reason = (str(exc).splitlines() or ["not numbers"])[0].split("; use `usecols`")[0]  # numpy's hint is not ours
        raise InputError(f"{label}: not a CSV table of numbers: {reason}") from None
    if values.size == 0 and (shape is None or math.prod(shape) != 0):
        raise InputError(f"{label}: the CSV holds no values")
    if shape is None:
        shape = tuple(values.shape)
    elif values.shape != shape and values.size == math.prod(shape) and values.size:
        values = values.reshape(shape)  # a 1-D tensor is one value per line: loadtxt reads (n, 1)
    array = _numbers(values, dtype, shape, f"{label}: tensor {name!r}")
    return {name: array}, _metadata(header.get("metadata"), label)


def _row_text(row: list) -> str:
    return ",".join(repr(v) for v in row) if isinstance(row, list) else repr(row)


def _as_python(block: np.ndarray) -> list:
    if block.dtype.kind == "b":
        block = block.astype(np.uint8)
    return block.tolist()


def write_csv(
    sink, tensors: Mapping[str, LazyTensor], metadata: Mapping[str, str], progress: Callable[[int], None] | None
) -> None:
    ((name, tensor),) = tensors.items()
    head = {
        "name": name,
        "dtype": dtype_label(tensor.dtype),
        "shape": [int(n) for n in tensor.shape],
        "metadata": dict(metadata),
    }
    sink.write((CSV_MAGIC + json.dumps(head, ensure_ascii=False) + "\n").encode("utf-8"))
    for block in iter_blocks(tensor):
        rows = _as_python(block)
        sink.write(("".join(_row_text(r) + "\n" for r in rows)).encode("ascii"))
        if progress:
            progress(len(block))


# ----- JSON ---------------------------------------------------------------------------------------------
def read_json(fh: BinaryIO, label: str, *, max_bytes: int) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    text = _read_text(fh, label, max_bytes)
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        raise InputError(f"{label}: not valid JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tensors"), dict):
        raise InputError(f'{label}: not a posenc JSON table (an object with a "tensors" object)')
    tensors = {}
    for name, entry in doc["tensors"].items():
        where = f"{label}: tensor {name!r}"
        if not isinstance(entry, dict) or "data" not in entry:
            raise InputError(f'{where} is not an object with "dtype", "shape" and "data"')
        dtype = _dtype(entry.get("dtype", "float64"), where)
        shape = _shape(entry["shape"], where) if "shape" in entry else None
        tensors[name] = _numbers(entry["data"], dtype, shape, where)
    return tensors, _metadata(doc.get("metadata"), label)


def write_json(
    sink, tensors: Mapping[str, LazyTensor], metadata: Mapping[str, str], progress: Callable[[int], None] | None
) -> None:
    def put(text: str) -> None:
        sink.write(text.encode("utf-8"))

    put('{"metadata": ' + json.dumps(dict(metadata), ensure_ascii=False) + ', "tensors": {')
    for i, (name, tensor) in enumerate(tensors.items()):
        shape = [int(n) for n in tensor.shape]
        head = f'"dtype": {json.dumps(dtype_label(tensor.dtype))}, "shape": {json.dumps(shape)}, "data": ['
        put(("," if i else "") + "\n " + json.dumps(name, ensure_ascii=False) + ": {" + head)
        first = True
        for block in iter_blocks(tensor):
            rows = block.tolist()
            put(("" if first else ",") + "\n  " + ",\n  ".join(json.dumps(r) for r in rows))
            first = False
            if progress:
                progress(len(block))
        put("\n ]}")
    put("\n}}\n")
