"""Windowed relative position bias of vision models (Swin, BEiT, Data2Vec-vision): the index and the bias.

Inside a window of ``Wh x Ww`` patches (flattened row-major), the attention of patch :math:`i` to patch :math:`j`
adds ``table[index[i, j]]`` per head, where (``SwinRelativePositionBias._create_relative_position_index``,
``BeitRelativePositionBias.generate_relative_position_index``, written here in NumPy)

.. math::

    \\mathrm{index}[i, j] = (y_i - y_j + W_h - 1)(2 W_w - 1) + (x_i - x_j + W_w - 1)

and BEiT's tables have three more entries for its class token (row and column 0 of a ``(N + 1) x (N + 1)``
index): class to token ``M``, token to class ``M + 1``, class to class ``M + 2``, with
:math:`M = (2 W_h - 1)(2 W_w - 1)`.

``table=index`` (the default) is the index the model gathers with, from the config alone; ``table=bias`` gathers
every table the model directory's weights hold (``*.relative_position_bias_table``, ``M (+ 3) x heads``) into the
bias the model adds, ``heads x N x N`` per table, each tensor named after the weight it comes from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import ParameterError
from .records import WINDOW_BIAS, WindowBias, model_type_of

TABLES = ("index", "bias")


def relative_position_index(wh: int, ww: int, cls: bool = False) -> np.ndarray:
    """The ``(N, N)`` (``(N + 1, N + 1)`` with ``cls``) int64 index of a ``wh x ww`` window (module docstring)."""
    grid_y, grid_x = np.meshgrid(np.arange(wh), np.arange(ww), indexing="ij")
    y, x = grid_y.reshape(-1), grid_x.reshape(-1)
    index = (y[:, None] - y[None, :] + wh - 1) * (2 * ww - 1) + (x[:, None] - x[None, :] + ww - 1)
    if not cls:
        return index.astype(np.int64)
    m = (2 * wh - 1) * (2 * ww - 1)
    out = np.zeros((wh * ww + 1,) * 2, dtype=np.int64)
    out[1:, 1:] = index
    out[0, :] = m  # class to token
    out[:, 0] = m + 1  # token to class
    out[0, 0] = m + 2  # class to class
    return out


def record_of(config: Mapping[str, Any]) -> WindowBias | None:
    mt = model_type_of(config, strict=False)[0]
    return WINDOW_BIAS.get(mt) if isinstance(mt, str) else None


def _side(value: Any, key: str) -> tuple[int, int]:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        a, b = value
    else:
        a = b = value
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (a, b)):
        raise ParameterError(f"config key {key}={value!r} is not a positive size (or [H, W])")
    return int(a), int(b)


def window(rec: WindowBias, config: Mapping[str, Any]) -> tuple[int, int]:
    """The window ``(Wh, Ww)`` the model's bias covers."""
    if rec.window == "window_size":
        if "window_size" not in config:
            raise ParameterError(f"{rec.model_type} config has no window_size; its relative bias needs it")
        return _side(config["window_size"], "window_size")
    if "image_size" not in config or "patch_size" not in config:
        raise ParameterError(f"{rec.model_type} config needs image_size and patch_size for its relative bias window")
    ih, iw = _side(config["image_size"], "image_size")
    p, _ = _side(config["patch_size"], "patch_size")
    return ih // p, iw // p


def tables(path: str, config: Mapping[str, Any], table: Any = None) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """``({name: array}, metadata)`` of ``table`` (``index``, the default, or ``bias``) for the model at ``path``."""
    rec = record_of(config)
    assert rec is not None
    table = TABLES[0] if table is None else str(table)
    if table not in TABLES:
        raise ParameterError(f"unknown table={table!r}; choose from: {', '.join(TABLES)}")
    if rec.switches and not any(config.get(k) is True for k in rec.switches):
        raise ParameterError(
            f"{rec.model_type} config turns its relative position bias off ({' and '.join(rec.switches)} false)"
        )
    wh, ww = window(rec, config)
    index = relative_position_index(wh, ww, rec.cls)
    from .. import __version__

    meta = {
        "posenc_version": __version__, "source": "model weights" if table == "bias" else "model config",
        "model_type": rec.model_type, "table": table, "grid": f"{wh}x{ww}", "grid_offset": "1" if rec.cls else "0",
        "extra_rows": "0:cls" if rec.cls else "", "reference": rec.reference,
    }  # fmt: skip
    if table != "bias":  # the index: from the config alone
        return {"index": index}, meta
    weights = _weights(path, rec)
    out: dict[str, np.ndarray] = {}
    rows = int(index.max()) + 1
    for k, (name, values) in enumerate(weights):
        if values.ndim != 2 or values.shape[0] != rows:
            raise ParameterError(
                f"{path}: tensor {name} has shape {list(values.shape)}; a {wh}x{ww} window needs {rows} rows x heads "
                "(the config and the weights disagree)"
            )
        out[f"bias_{k}"] = np.ascontiguousarray(np.asarray(values)[index].transpose(2, 0, 1))
        meta[f"bias_{k}"] = name
    return out, meta


def _weights(path: str, rec: WindowBias) -> list[tuple[str, np.ndarray]]:
    from safetensors import SafetensorError, safe_open

    from .readers import weight_files

    if not os.path.isdir(path):
        raise ParameterError(f"{path}: table=bias reads the relative bias from the weights; pass the model directory")
    files = weight_files(path)  # the model's safetensors files, shard names kept inside the directory
    if files is None:
        raise ParameterError(f"{path}: no model.safetensors; table=bias reads the relative bias from the weights")
    found: list[tuple[str, np.ndarray]] = []
    for file in files:
        try:
            with safe_open(file, "np") as f:
                names = list(f.keys())
                found += [(n, f.get_tensor(n)) for n in names if n == rec.table or n.endswith("." + rec.table)]
        except (OSError, SafetensorError) as exc:
            raise ParameterError(f"{file}: not a readable safetensors file ({str(exc)[:80]})") from None
    if not found:
        raise ParameterError(f"{path}: no tensor named *{rec.table} in the weights, where {rec.model_type} keeps it")
    return sorted(found, key=lambda t: _natural(t[0]))


def _natural(name: str) -> list[Any]:
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in name.split(".")]
