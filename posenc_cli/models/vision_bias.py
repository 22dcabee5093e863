"""Windowed relative position bias of vision models (Swin, Swin V2, Swin2SR, Donut-Swin, MaskFormer-Swin, BEiT,
Data2Vec-vision): the index, Swin V2's coordinates table, and the bias.

Inside a window of ``Wh x Ww`` patches (flattened row-major), the attention of patch :math:`i` to patch :math:`j`
adds ``table[index[i, j]]`` per head, where (``SwinRelativePositionBias._create_relative_position_index``,
``BeitRelativePositionBias.generate_relative_position_index``, written here in NumPy)

.. math::

    \\mathrm{index}[i, j] = (y_i - y_j + W_h - 1)(2 W_w - 1) + (x_i - x_j + W_w - 1)

and BEiT's tables have three more entries for its class token (row and column 0 of a ``(N + 1) x (N + 1)``
index): class to token ``M``, token to class ``M + 1``, class to class ``M + 2``, with
:math:`M = (2 W_h - 1)(2 W_w - 1)`.

Swin V2 (and Swin2SR) keep no table: each layer makes it from the relative coordinates ``(dy, dx)`` of the
window, divided by ``P - 1`` (``P`` the stage's pretrained window, else its own window), times 8, then
``sign(t) * log2(|t| + 1) / 3`` (``Swinv2SelfAttention.create_coords_table_and_index``), through its
``continuous_position_bias_mlp`` (``Linear(2, 512) -> ReLU -> Linear(512, heads, bias=False)``), and adds
``16 * sigmoid(table[index])`` (``forward``).

Each stage has its own patch grid and window. Swin and Donut-Swin set the window of every block from the grid its
forward sees (``set_shift_and_window_size``: a stage whose grid's smaller side is not larger than the window gets
that side as window and shift 0); but the bias stays the configured window's, so the forward fails when the window
shrinks below it (transformers 5.24): such an image size is refused by name. Swin V2 and Swin2SR shrink once, at
construction, from the config's image size, the grid's height deciding (``_compute_window_shift``), and keep those
windows at every image size. MaskFormer-Swin never shrinks (it pads each stage to the window).

``table=index`` (the default) is the index the model gathers with, from the config alone (with Swin V2's
``coords`` per stage); ``table=bias`` reads every table the model directory's weights hold into the bias the model
adds, ``heads x N x N`` per table, each tensor named after the weight it comes from. Config keys a config.json
omits take the config class's defaults, as the inventory observed them (``window_bias.config_defaults``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError, param
from .records import DECOMPOSED, WINDOW_BIAS, DecomposedRelPos, WindowBias, model_type_of

TABLES = ("index", "bias")
#: The inventory's mechanism of relative positions combined with the queries in attention (tools/inventory/
#: mechanisms.py: SAM's rel_pos_h / rel_pos_w), as opposed to ``relative_bias``, a table added to the scores
_WITH_QUERIES = "relative"


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


def coords_table(wh: int, ww: int, pretrained: tuple[int, int] = (0, 0)) -> np.ndarray:
    """Swin V2's log-spaced relative coordinates of a ``wh x ww`` window, ``((2wh-1)(2ww-1), 2)`` float32 in the
    order its MLP sees them (``create_coords_table_and_index``, in float32 as the model computes them)."""
    dy = np.arange(-(wh - 1), wh, dtype=np.float32)
    dx = np.arange(-(ww - 1), ww, dtype=np.float32)
    t = np.stack(np.meshgrid(dy, dx, indexing="ij"), axis=-1)  # (2wh-1, 2ww-1, 2)
    if pretrained[0] > 0:
        t[..., 0] /= np.float32(pretrained[0] - 1)
        t[..., 1] /= np.float32(pretrained[1] - 1)
    elif wh > 1:
        t[..., 0] /= np.float32(wh - 1)
        t[..., 1] /= np.float32(ww - 1)
    t *= np.float32(8)
    t = np.sign(t) * np.log2(np.abs(t) + np.float32(1)) / np.float32(math.log2(8))
    return np.ascontiguousarray(t.reshape(-1, 2), dtype=np.float32)


def continuous_bias(
    coords: np.ndarray, index: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray
) -> np.ndarray:
    """``16 * sigmoid(mlp(coords)[index])`` as ``heads x N x N`` float32 (``Swinv2SelfAttention.forward``), the MLP
    in float64 from the float32 weights."""
    hidden = np.maximum(coords.astype(np.float64) @ w1.astype(np.float64).T + b1.astype(np.float64), 0.0)
    table = hidden @ w2.astype(np.float64).T  # ((2wh-1)(2ww-1), heads)
    bias = 16.0 / (1.0 + np.exp(-table[index]))
    return np.ascontiguousarray(bias.transpose(2, 0, 1), dtype=np.float32)


def _traced_components(mt: str, config: Mapping[str, Any], mechanism: str) -> list[tuple[str, Any]]:
    """``[(component, its sub-config in config or None), ...]``: each vision component of ``mt`` (not the model
    itself) where the inventory traced ``mechanism``, in the inventory's order."""
    from .data import model_type_record

    out = []
    for m in (model_type_record(mt) or {}).get("mechanisms") or []:
        comp = str(m.get("component") or "")
        if m.get("mechanism") != mechanism or m.get("input") != "vision" or comp in ("", "model"):
            continue
        sub: Any = config
        for part in comp.split("."):
            sub = sub.get(part) if isinstance(sub, Mapping) else None
        out.append((comp, sub))
    return out


def located(config: Mapping[str, Any], tower: str | None = None) -> tuple[WindowBias, Mapping[str, Any], str] | None:
    """``(record, the config it reads, where)``: the config itself when its model type adds a windowed bias; else,
    with ``tower="vision"`` (``--tower vision``: the model's other positions, Grounding DINO's text table, stay its
    default reading), the sub-config where the inventory traced a vision component's windowed bias (Mask2Former's,
    OneFormer's, Grounding DINO's Swin ``backbone_config``), when that sub-config's type has a record; else None."""
    mt = model_type_of(config, strict=False)[0]
    if not isinstance(mt, str):
        return None
    if mt in WINDOW_BIAS:
        return WINDOW_BIAS[mt], config, mt
    for comp, sub in _traced_components(mt, config, "relative_bias") if tower == "vision" else ():
        sub_mt = sub.get("model_type") if isinstance(sub, Mapping) else None
        if sub_mt in WINDOW_BIAS:
            assert isinstance(sub, Mapping)
            return WINDOW_BIAS[sub_mt], sub, f"{mt} {comp} ({sub_mt})"
        if sub is None:
            raise ParameterError(
                f"{mt}'s {comp} adds a windowed relative bias (as the inventory traced its default), but this config "
                f"has no {comp} (a timm backbone, or its class default) that posenc reads: give {comp} in config.json"
            )
    return None


def record_of(config: Mapping[str, Any], tower: str | None = None) -> WindowBias | None:
    found = located(config, tower)
    return found[0] if found is not None else None


# ----- decomposed relative positions (SAM's encoder) --------------------------------------------------------------
def decomposed_located(
    config: Mapping[str, Any], tower: str | None = None
) -> tuple[DecomposedRelPos, Mapping[str, Any], str] | None:
    """``(record, the encoder's config, where)``: the config itself when it is such an encoder's (SAM's
    ``sam_vision_model``); with ``tower="vision"`` the sub-config where the inventory traced the vision component's
    relative positions (SAM's ``vision_config``); else None."""
    mt = model_type_of(config, strict=False)[0]
    if not isinstance(mt, str):
        return None
    if mt in DECOMPOSED:
        return DECOMPOSED[mt], config, mt
    for comp, sub in _traced_components(mt, config, _WITH_QUERIES) if tower == "vision" else ():
        sub_mt = sub.get("model_type") if isinstance(sub, Mapping) else None
        if isinstance(sub, Mapping) and sub_mt in DECOMPOSED:
            return DECOMPOSED[sub_mt], sub, f"{mt} {comp} ({sub_mt})"
        raise ParameterError(f"{mt}'s {comp} {'has no model_type posenc reads' if sub is not None else 'is missing'}: "
                             f"its relative positions are read from the encoder's config; give {comp} with its "
                             "model_type in config.json")  # fmt: skip
    return None


def _dget(rec: DecomposedRelPos, config: Mapping[str, Any], key: str) -> Any:
    if key in config:
        return config[key]
    from .data import model_type_record

    value = ((model_type_record(rec.model_type) or {}).get("defaults") or {}).get(key)
    if value is None:
        raise ParameterError(f"{rec.model_type} config has no {key} and posenc knows no class default; add it")
    return value


def decomposed_sizes(rec: DecomposedRelPos, config: Mapping[str, Any]) -> list[int]:
    """Each layer's side ``S``: ``window_size``, or ``image_size // patch_size`` for the ``global_attn_indexes``."""
    if _dget(rec, config, "use_rel_pos") is not True:
        raise ParameterError(f"{rec.model_type} config turns its relative positions off (use_rel_pos false)")
    layers, window = int(_dget(rec, config, "num_hidden_layers")), int(_dget(rec, config, "window_size"))
    glob = set(_dget(rec, config, "global_attn_indexes") or [])
    image, patch = _side(_dget(rec, config, "image_size"), "image_size"), _side(_dget(rec, config, "patch_size"), "p")
    side = image[0] // patch[0]
    return [side if i in glob or window == 0 else window for i in range(layers)]


def decomposed_tables(
    path: str, config: Mapping[str, Any], table: Any = None, tower: str | None = None
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """``index`` (the default): the gather index ``i - j + S - 1`` of each layer's side (``index_S``); ``bias``:
    each layer's ``rel_pos_h`` and ``rel_pos_w`` from the weights gathered to ``S x S x head_dim``
    (``rel_h_K``, ``rel_w_K``), what ``get_decomposed_rel_pos`` multiplies the queries by."""
    found = decomposed_located(config, tower)
    assert found is not None
    rec, config, where = found
    table = TABLES[0] if table is None else str(table)
    if table not in TABLES:
        raise ParameterError(f"unknown table={table!r}; choose from: {', '.join(TABLES)}")
    sizes = decomposed_sizes(rec, config)
    from .. import __version__

    meta = {
        "posenc_version": __version__, "source": "model weights" if table == "bias" else "model config",
        "model_type": rec.model_type, "table": table, "reference": rec.reference,
        "layer_sides": ",".join(str(n) for n in sizes),
        "adds": "scores[(y, x), (y', x')] += q . rel_h[y, y'] + q . rel_w[x, x'] (get_decomposed_rel_pos)",
    }  # fmt: skip
    if where != rec.model_type:
        meta["read_from"] = where
    idx = {n: (np.arange(n)[:, None] - np.arange(n)[None, :] + n - 1).astype(np.int64) for n in sorted(set(sizes))}
    if table != "bias":
        return {f"index_{n}": v for n, v in idx.items()}, meta
    if not os.path.isdir(path):
        raise ParameterError(
            f"{path}: table=bias reads the relative positions from the weights; pass the model directory"
        )
    out: dict[str, np.ndarray] = {}
    for axis in ("h", "w"):
        name = f"rel_pos_{axis}"
        found_t = sorted(_tensors(path, lambda n, nm=name: n.endswith("." + nm)), key=lambda t: _natural(t[0]))
        if len(found_t) != len(sizes):
            raise ParameterError(f"{path}: the weights hold {len(found_t)} *.{name} tensors and the config makes "
                                 f"{len(sizes)} layers (the config and the weights disagree)")  # fmt: skip
        for k, ((tname, values), n) in enumerate(zip(found_t, sizes, strict=True)):
            values = np.asarray(values)
            if values.ndim != 2 or values.shape[0] != 2 * n - 1:
                raise ParameterError(
                    f"{path}: tensor {tname} has shape {list(values.shape)}; layer {k}'s side {n} needs {2 * n - 1} "
                    "rows x head_dim (the config and the weights disagree)"
                )
            out[f"rel_{axis}_{k}"] = np.ascontiguousarray(values[idx[n]])
            meta[f"rel_{axis}_{k}"] = tname
    return out, meta


def refuse_query_relative(config: Mapping[str, Any]) -> None:
    """``table=bias`` on a model whose vision attention combines relative positions with its queries (SAM's
    encoder: ``rel_pos_h`` / ``rel_pos_w`` through ``get_rel_pos``, then ``einsum`` with the query, as the
    inventory traced it): there is no per-head bias to read without the queries; refused by name."""
    mt = model_type_of(config, strict=False)[0]
    if not isinstance(mt, str):
        return
    from .data import model_type_record

    seen = [m for m in (model_type_record(mt) or {}).get("mechanisms") or []
            if m.get("mechanism") == _WITH_QUERIES and m.get("input") == "vision" and m.get("evidence") == "trace"]  # fmt: skip
    if seen and any(str(m.get("component")) not in ("", "model") for m in seen):
        comp = next(str(m.get("component")) for m in seen if str(m.get("component")) not in ("", "model"))
        sub: Any = config
        for part in comp.split("."):
            sub = sub.get(part) if isinstance(sub, Mapping) else None
        if isinstance(sub, Mapping) and sub.get("model_type") in DECOMPOSED:
            raise ParameterError(
                f"table=bias on {mt}: its vision encoder ({comp}) takes relative positions with the queries, per "
                f"axis; posenc reads those tables (rel_h, rel_w per layer) with {param('tower')} vision"
            )
    if seen:
        where = str(seen[0].get("module") or "").split(" ")[0]
        tensors = ", ".join(str(m.get("tensor")).rsplit(".", 1)[-1] for m in seen if m.get("tensor"))
        raise ParameterError(
            f"table=bias cannot apply to {mt}: its vision attention ({where}) combines relative positions "
            f"({tensors or 'its own'}) with the queries, per axis, so there is no per-head bias table to read; "
            "posenc does not read them yet"
        )


def _side(value: Any, key: str) -> tuple[int, int]:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        a, b = value
    else:
        a = b = value
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (a, b)):
        raise ParameterError(f"config key {key}={value!r} is not a positive size (or [H, W])")
    return int(a), int(b)


def _get(rec: WindowBias, config: Mapping[str, Any], key: str) -> Any:
    """Config key ``key``, else the config class's default as the inventory observed it; None when neither."""
    if key in config:
        return config[key]
    from .data import model_type_record

    seen = (model_type_record(rec.model_type) or {}).get("window_bias") or {}
    return (seen.get("config_defaults") or {}).get(key)


def _need(rec: WindowBias, config: Mapping[str, Any], key: str) -> Any:
    value = _get(rec, config, key)
    if value is None:
        raise ParameterError(
            f"{rec.model_type} config has no {key} and its class has no default posenc knows; its relative bias "
            f"needs it: add {key} to config.json"
        )
    return value


def window(rec: WindowBias, config: Mapping[str, Any]) -> tuple[int, int]:
    """The window ``(Wh, Ww)`` the model's bias covers (Swin: the configured one, before any stage shrinks it)."""
    if rec.window == "window_size":
        return _side(_need(rec, config, "window_size"), "window_size")
    if "image_size" not in config or "patch_size" not in config:
        raise ParameterError(f"{rec.model_type} config needs image_size and patch_size for its relative bias window")
    ih, iw = _side(config["image_size"], "image_size")
    p, _ = _side(config["patch_size"], "patch_size")
    return ih // p, iw // p


@dataclass(frozen=True)
class Stage:
    """One stage of a windowed model: its patch grid, the window its blocks attend within and each block's shift."""

    grid: tuple[int, int]
    window: int
    shifts: tuple[int, ...]
    pretrained: int = 0

    def describe(self, k: int) -> str:
        return (f"stage {k}: grid {self.grid[0]}x{self.grid[1]}, window {self.window}, shift "
                f"{'/'.join(str(s) for s in self.shifts)}")  # fmt: skip


def stages(rec: WindowBias, config: Mapping[str, Any], image: tuple[int, int] | None = None) -> list[Stage]:
    """Each stage's grid, window and shifts: at ``image`` (pixels; the config's image size when None) where the
    model sets them at forward, at the config's image size where it sets them at construction (module docstring)."""
    ws = _side(_need(rec, config, "window_size"), "window_size")[0]
    patch = _side(_need(rec, config, "patch_size"), "patch_size")
    depths = _need(rec, config, "depths")
    if not isinstance(depths, (list, tuple)) or not all(isinstance(d, int) and d >= 0 for d in depths):
        raise ParameterError(f"{rec.model_type} config key depths={depths!r} is not a list of block counts")
    pre = _get(rec, config, "pretrained_window_sizes") if rec.continuous and rec.stages == "halving" else None
    pre = [0] * len(depths) if pre is None else list(pre)
    if len(pre) < len(depths) or not all(isinstance(p, int) and p >= 0 and p != 1 for p in pre):
        raise ParameterError(f"{rec.model_type} config key pretrained_window_sizes={pre!r} needs one size per stage, "
                             "0 or at least 2 (1 divides by zero in the model's code)")  # fmt: skip
    built = rec.shrink == "init"  # the windows are set at construction, from the config's image size
    h, w = image if image is not None and not built else _side(_need(rec, config, "image_size"), "image_size")
    if built:  # the grid of the patch embedding's construction: image_size // patch_size (floor)
        grid = (h // patch[0], w // patch[1])
    else:  # the forward pads the image to whole patches (SwinPatchEmbeddings.maybe_pad)
        grid = (-(-h // patch[0]), -(-w // patch[1]))
    out = []
    for k, depth in enumerate(depths):
        if k and rec.stages == "halving":
            # at construction the stage's resolution is grid // 2**k; the forward's patch merging pads odd sides
            grid = (grid[0] // 2, grid[1] // 2) if built else ((grid[0] + 1) // 2, (grid[1] + 1) // 2)
        side = min(grid) if rec.shrink == "forward" else grid[0]
        small = rec.shrink != "" and side <= ws
        win = min(side, ws) if small else ws
        shifts = tuple(0 if small or b % 2 == 0 else ws // 2 for b in range(depth))
        out.append(Stage(grid, win, shifts, pre[k]))
    return out


def tables(
    path: str, config: Mapping[str, Any], table: Any = None, image_size: Any = None, tower: str | None = None
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """``({name: array}, metadata)`` of ``table`` (``index``, the default, or ``bias``) for the model at ``path``,
    with each stage's window at ``image_size`` (pixels, H or HxW) where the model's windows follow it; ``tower``
    as :func:`located`."""
    found = located(config, tower)
    assert found is not None
    rec, config, where = found
    table = TABLES[0] if table is None else str(table)
    if table not in TABLES:
        raise ParameterError(f"unknown table={table!r}; choose from: {', '.join(TABLES)}")
    if rec.switches and not any(config.get(k) is True for k in rec.switches):
        raise ParameterError(
            f"{rec.model_type} config turns its relative position bias off ({' and '.join(rec.switches)} false)"
        )
    image = None
    if image_size is not None:
        from .vision import parse_image_size

        if not rec.stages and rec.window != "patch_grid":
            raise ParameterError(
                f"{param('image_size')} cannot apply to {rec.model_type}'s relative bias: it is made for the "
                "config's patch grid (one window over the whole image); drop it"
            )
        image = parse_image_size(image_size)
    from .. import __version__

    meta = {
        "posenc_version": __version__, "source": "model weights" if table == "bias" else "model config",
        "model_type": rec.model_type, "table": table, "grid_offset": "1" if rec.cls else "0",
        "extra_rows": "0:cls" if rec.cls else "", "reference": rec.reference,
    }  # fmt: skip
    if where != rec.model_type:
        meta["read_from"] = where
    staged = stages(rec, config, image) if rec.stages else []
    if staged:
        ws = _side(_need(rec, config, "window_size"), "window_size")[0]
        if image is not None:
            meta["image_size"] = f"{image[0]}x{image[1]}"
            if rec.shrink == "init":
                meta["image_size"] += " (the windows were set at construction from the config's image_size)"
        meta["stages"] = "; ".join(s.describe(k) for k, s in enumerate(staged))
        if rec.shrink == "forward":
            _runs_or_refuse(rec, staged, ws, image, config)
    if rec.continuous:
        return _continuous(path, rec, staged, table, meta)
    wh, ww = window(rec, config)
    resizes = rec.window == "patch_grid"  # BEiT: one window, the image's patch grid, its table resized to it
    new = _image_window(rec, config, image) if resizes and image is not None else (wh, ww)
    meta["grid"] = f"{new[0]}x{new[1]}"
    if resizes and image is not None:
        meta["image_size"] = f"{image[0]}x{image[1]}"
        meta["native_grid"] = f"{wh}x{ww}"
    if table == "bias" and resizes and (image is not None or wh != ww):
        meta["resampling"] = _RESIZED.format(h=2 * wh - 1, w=2 * ww - 1, nh=2 * new[0] - 1, nw=2 * new[1] - 1)
    index = relative_position_index(new[0], new[1], rec.cls)
    if table != "bias":  # the index: from the config alone
        return {"index": index}, meta
    out: dict[str, np.ndarray] = {}
    rows = (2 * wh - 1) * (2 * ww - 1) + (3 if rec.cls else 0)
    for k, (name, values) in enumerate(_weights(path, rec)):
        if values.ndim != 2 or values.shape[0] != rows:
            raise ParameterError(
                f"{path}: tensor {name} has shape {list(values.shape)}; a {wh}x{ww} window needs {rows} rows x heads "
                "(the config and the weights disagree)"
            )
        if resizes:
            values = _resized_table(np.asarray(values), (wh, ww), new, rows - (3 if rec.cls else 0), f"{path}: {name}")
        out[f"bias_{k}"] = np.ascontiguousarray(np.asarray(values)[index].transpose(2, 0, 1))
        meta[f"bias_{k}"] = name
    return out, meta


#: what BEiT's bias does at another image size, in the metadata (``{h}x{w}``: the native table's grid)
_RESIZED = (
    "engine=hf, bilinear, antialias=False, align_corners=False, size: the {h}x{w} relative-position table (its class "
    "rows kept) resized to {nh}x{nw} for the image's window, viewed as the model's code views it (width first: "
    "reshape(1, 2 * Ww - 1, 2 * Wh - 1, heads), so a non-square table is resized even at its own window), then "
    "gathered by the new window's index "
    "(BeitRelativePositionBias.forward); with interpolate_pos_encoding the bias is resized again to its own size, "
    "which changes nothing"
)


def _image_window(rec: WindowBias, config: Mapping[str, Any], image: tuple[int, int]) -> tuple[int, int]:
    """BEiT's window at an image size: ``(height // patch_size, width // patch_size)`` (``BeitLayer.forward``,
    ``BeitModel.forward``: the resolution is the pixels' shape); an image smaller than one patch is refused (the
    patch convolution fails there)."""
    p = _side(_need(rec, config, "patch_size"), "patch_size")
    if image[0] < p[0] or image[1] < p[1]:
        raise ParameterError(
            f"{param('image_size')} {image[0]}x{image[1]} is smaller than one {p[0]}x{p[1]} patch: {rec.model_type}'s "
            f"patch convolution fails there; give at least {p[0]}x{p[1]}"
        )
    return image[0] // p[0], image[1] // p[1]


def _resized_table(values: np.ndarray, old: tuple[int, int], new: tuple[int, int], grid_rows: int, where: str) -> Any:
    """BEiT's relative-position table for the window ``new`` (``BeitRelativePositionBias.forward``, transformers 5.24
    beit/modeling_beit.py l.220-245): the ``grid_rows`` rows of the ``old`` window's ``(2 Wh - 1)(2 Ww - 1)``
    table reshaped ``(2 Ww - 1) x (2 Wh - 1)`` (width first, as the code writes it), resized bilinearly
    (``align_corners=False``, no antialias, ``size=``) to ``(2 Wh' - 1) x (2 Ww' - 1)``, flattened, and its class
    rows appended unchanged. A square window's table at its own window is copied (torch copies a grid resized to
    its own size, and so does :func:`.resample`); a non-square one is resized even there, its sides swapped."""
    from ..encodings.resample import Resampling, resample

    if values.dtype != np.float32:
        raise ParameterError(
            f"{where} is {values.dtype}; the model resizes it in that dtype, which posenc does not reproduce (it "
            "reproduces the float32 kernels): drop --image-size or pass float32 weights"
        )
    oh, ow = 2 * old[0] - 1, 2 * old[1] - 1
    nh, nw = 2 * new[0] - 1, 2 * new[1] - 1
    grid = values[:grid_rows].reshape(ow, oh, -1)
    resized = resample(grid, (nh, nw), Resampling("bilinear", align_corners=False, antialias=False))
    return np.concatenate([resized.reshape(nh * nw, -1), values[grid_rows:]], axis=0)


def _runs_or_refuse(
    rec: WindowBias, staged: list[Stage], ws: int, image: tuple[int, int] | None, config: Mapping[str, Any]
) -> None:
    """Swin's forward shrinks a stage's window below the bias's window and then fails: refuse that image size."""
    for k, s in enumerate(staged):
        if s.window < ws:
            p = _side(_need(rec, config, "patch_size"), "patch_size")
            least = ws * 2 ** (len(staged) - 1)
            size = "the config's image_size" if image is None else f"{param('image_size')} {image[0]}x{image[1]}"
            raise ParameterError(
                f"{size}: {rec.model_type}'s stage {k} has a {s.grid[0]}x{s.grid[1]} patch grid, smaller than its "
                f"window_size {ws}: the model shrinks the window to {s.window} there (set_shift_and_window_size) but "
                f"adds the {ws}x{ws} window's bias, and its forward fails (transformers 5.24); give at least "
                f"{least * p[0]}x{least * p[1]} pixels"
            )


def _continuous(
    path: str, rec: WindowBias, staged: list[Stage], table: str, meta: dict[str, str]
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Swin V2's per-stage index and coordinates table, or the bias of each layer from its MLP's weights."""
    per_stage = []
    for s in staged:
        pre = (s.pretrained, s.pretrained)
        per_stage.append((relative_position_index(s.window, s.window), coords_table(s.window, s.window, pre)))
    windows = {s.window for s in staged}
    if len(windows) == 1:
        meta["grid"] = f"{staged[0].window}x{staged[0].window}"
    out: dict[str, np.ndarray] = {}
    if table != "bias":
        for k, (index, coords) in enumerate(per_stage):
            out[f"index_{k}"], out[f"coords_{k}"] = index, coords
            meta[f"index_{k}"] = meta[f"coords_{k}"] = staged[k].describe(k)
        return out, meta
    mlps = _mlps(path, rec)
    layers = [k for k, s in enumerate(staged) for _ in s.shifts]  # each layer's stage, in the model's order
    if len(mlps) != len(layers):
        raise ParameterError(
            f"{path}: the weights hold {len(mlps)} {rec.table} networks and the config's depths "
            f"{[len(s.shifts) for s in staged]} make {len(layers)} layers (the config and the weights disagree)"
        )
    for k, ((name, (w1, b1, w2)), stage) in enumerate(zip(mlps, layers, strict=True)):
        index, coords = per_stage[stage]
        out[f"bias_{k}"] = continuous_bias(coords, index, w1, b1, w2)
        meta[f"bias_{k}"] = f"{name} ({staged[stage].describe(stage)})"
    return out, meta


def _tensors(path: str, keep: Any) -> list[tuple[str, np.ndarray]]:
    from safetensors import SafetensorError, safe_open

    from .readers import weight_files

    files = weight_files(path)  # the model's safetensors files, shard names kept inside the directory
    if files is None:
        raise ParameterError(f"{path}: no model.safetensors; table=bias reads the relative bias from the weights")
    found: list[tuple[str, np.ndarray]] = []
    for file in files:
        try:
            with safe_open(file, "np") as f:
                found += [(n, f.get_tensor(n)) for n in list(f.keys()) if keep(n)]
        except (OSError, SafetensorError) as exc:
            raise ParameterError(f"{file}: not a readable safetensors file ({str(exc)[:80]})") from None
    return found


def _weights(path: str, rec: WindowBias) -> list[tuple[str, np.ndarray]]:
    if not os.path.isdir(path):
        raise ParameterError(f"{path}: table=bias reads the relative bias from the weights; pass the model directory")
    found = _tensors(path, lambda n: n == rec.table or n.endswith("." + rec.table))
    if not found:
        raise ParameterError(f"{path}: no tensor named *{rec.table} in the weights, where {rec.model_type} keeps it")
    return sorted(found, key=lambda t: _natural(t[0]))


#: The parts of Swin V2's ``continuous_position_bias_mlp`` (``nn.Sequential(Linear(2, 512), ReLU, Linear(512,
#: heads, bias=False))``: items 0 and 2 of the Sequential), as the weights name them under each layer's prefix.
_MLP = ("0.weight", "0.bias", "2.weight")


def _mlps(path: str, rec: WindowBias) -> list[tuple[str, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    if not os.path.isdir(path):
        raise ParameterError(f"{path}: table=bias reads the relative bias from the weights; pass the model directory")
    mark = rec.table + "."
    found = _tensors(path, lambda n: n.startswith(mark) or ("." + mark) in n)
    groups: dict[str, dict[str, np.ndarray]] = {}
    for name, values in found:
        prefix, _, part = name.rpartition(mark)
        groups.setdefault(prefix + rec.table, {})[part] = np.asarray(values)
    if not groups:
        raise ParameterError(f"{path}: no tensor named *{rec.table}.* in the weights, where {rec.model_type} keeps it")
    out: list[tuple[str, tuple[np.ndarray, np.ndarray, np.ndarray]]] = []
    for prefix in sorted(groups, key=_natural):
        parts = groups[prefix]
        if set(parts) != set(_MLP):
            raise ParameterError(f"{path}: {prefix} has tensors {sorted(parts)}; the model's network has "
                                 f"{', '.join(_MLP)}")  # fmt: skip
        w1, b1, w2 = parts[_MLP[0]], parts[_MLP[1]], parts[_MLP[2]]
        if w1.ndim != 2 or w1.shape[1] != 2 or b1.shape != (w1.shape[0],) or w2.ndim != 2 or w2.shape[1] != w1.shape[0]:
            raise ParameterError(
                f"{path}: {prefix} has shapes {[list(parts[p].shape) for p in _MLP]}; the model's network is "
                "Linear(2, H), Linear(H, heads)"
            )
        out.append((prefix, (w1, b1, w2)))
    return out


def _natural(name: str) -> list[Any]:
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in name.split(".")]
