"""Dtype rules shared by every format: posenc's dtype names, floating tests, byte order."""

from __future__ import annotations

import sys

import numpy as np

WRITABLE_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")

#: Dtypes a reader returns (``.npy``/``.npz`` may also hold unsigned 16-64 bit integers).
READABLE_DTYPES = WRITABLE_DTYPES + ("uint16", "uint32", "uint64")


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
