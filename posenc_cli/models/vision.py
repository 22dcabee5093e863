"""ViT-family position tables: read from the weights, at the native grid or at any image size, resampled as the
model (or timm) does it.

A ViT-family model keeps one learned row per patch of its native ``g x g`` grid (row-major), plus rows for its
class (and distillation) tokens; run at another image size, its ``interpolate_pos_encoding`` resizes the grid
rows with ``F.interpolate`` (:mod:`posenc_cli.encodings.resample` reproduces the call in NumPy). Each model
type's rule is its record's :class:`.records.Vision` (:mod:`.records`), read from transformers 5.24's code (``_HF`` paths, lines as in
5.24.0):

* the weights' tensor (a suffix of the saved name) and the extra rows with their order (``cls`` first in ViT,
  ``cls, dist`` in DeiT, none in SigLIP and I-JEPA, ``cls`` *last* in Llama 4's vision tower);
* the interpolation call (mode, ``align_corners``, ``antialias``, ``size=`` or ``scale_factor=``);
* the new grid: ``height // patch_size`` and ``width // patch_size`` (a size that is not a multiple of the patch
  is floored, as the patch convolution floors it);
* when the table is kept as it is (``keep``): ``same_count_square`` is HF's ``num_patches == num_positions and
  height == width`` (pixels: a 448x112 image has 196 patches like 224x224 but is resampled), ``same_grid`` is
  timm's (``new_size == old_size``), ``always`` never resamples (Llama 4: the table is added as it is, so only
  the native size runs), ``never`` always resamples (SigLIP 2 NaFlex resizes for every image, the same size
  included: the identity);
* tokens that get no position (DINOv2 with registers: the register tokens, inserted after ``cls`` once the
  positions are added).

``--engine timm`` applies timm 1.0.31's ``resample_abs_pos_embed`` (``timm/layers/pos_embed.py``: bicubic,
``antialias=True``, ``align_corners`` unset, the rows before the grid kept as prefix tokens) to an HF checkpoint;
a timm checkpoint's own ``config.json`` (``architecture`` + ``pretrained_cfg``) is read as timm's: its grid from
``pretrained_cfg.input_size`` and the patch convolution's kernel, its prefix rows from the ``cls_token`` and
``reg_token`` it holds (``VisionTransformer._pos_embed``: with ``no_embed_class`` the table has no prefix rows).

Reading the table is one small function (:func:`read_table`), so that the generic learned-table reader can take
its place. The output's metadata carries the grid (``grid`` HxW, ``grid_offset``, ``extra_rows``), the
``resampling`` applied, ``image_size`` and ``patch_size``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from ..encodings.resample import Resampling
from ..errors import NoTableError, ParameterError, RefusedError, param
from .records import RECORDS, REVIEWED_REFUSALS, VISION_SWITCHES, Vision

_HF = "transformers 5.24 src/transformers/models"
_TIMM = "timm 1.0.31 timm/layers/pos_embed.py resample_abs_pos_embed (l.18-63)"

#: the engines that resample a vision table: the model's own code (``hf``) or timm's defaults
ENGINES = ("hf", "timm")


def _record(model_type: str) -> Vision | None:
    """The vision part of ``model_type``'s record (:class:`.records.Vision`), or None."""
    rec = RECORDS.get(model_type)
    return rec.vision if rec is not None else None


def _rule(vision: Vision) -> Resampling | Bucketing | Taps | None:
    """The record's ``F.interpolate`` call as a :class:`Resampling` (None: the model never resizes; mode
    ``bucket``: :class:`Bucketing`; ``by`` ``taps``: :class:`Taps`)."""
    if vision.resampling is None:
        return None
    mode, align_corners, antialias, by = vision.resampling
    if mode == "bucket":
        return Bucketing()
    if by == "taps":
        assert mode == "bilinear", "Taps writes the bilinear taps only"
        return Taps(mode, align_corners)
    return Resampling(mode, align_corners=align_corners, antialias=antialias, by=by)


@dataclass(frozen=True)
class Bucketing:
    """NaViT's placement (``Idefics2VisionEmbeddings.forward``, idefics2/modeling_idefics2.py l.102-142, and the
    towers with the same code): no interpolation; a ``gh x gw`` grid's patch ``(i, j)`` takes the native table's row
    ``bucketize(i * (1 / gh), boundaries) * side + bucketize(j * (1 / gw), boundaries)`` with ``boundaries =
    arange(1 / side, 1, 1 / side)`` (``right=True``), the coordinates clamped to ``1 - 1e-6``, all in float32 as
    torch computes them (the boundaries as ``arange``'s double ``start + i * step``, rounded)."""

    def describe(self) -> str:
        return "bucketed fractional coordinates (a row of the native table per patch, no interpolation)"

    def scale_factors(self, old: tuple[int, int], new: tuple[int, int]) -> None:
        return None

    def indices(self, side: int, grid: tuple[int, int]) -> Any:
        import numpy as np

        step = 1.0 / side
        count = math.ceil((1.0 - step) / step)  # arange's length, in double
        boundaries = (step + step * np.arange(count, dtype=np.float64)).astype(np.float32)
        top = np.float32(1.0 - 1e-6)

        def buckets(n: int) -> Any:
            coords = np.arange(n, dtype=np.float32) * (np.float32(1.0) / np.float32(n))
            return np.searchsorted(boundaries, np.minimum(coords, top), side="right")

        return (buckets(grid[0])[:, None] * side + buckets(grid[1])[None, :]).reshape(-1)


@dataclass(frozen=True)
class Taps:
    """Qwen3-VL's placement: transformers 5.24 ``vision_utils.get_vision_interpolation_indices_and_weights``
    (l.231-297) gives each patch of a ``gh x gw`` grid, in ``merge x merge`` block order, the taps of a ``side x
    side`` table and their weights per axis (``_interpolation_axis_taps_weights``, l.191-228: the source
    coordinate ``i * (side - 1) / max(n - 1, 1)`` with ``align_corners``, else ``(i + 0.5) * side / n - 0.5``;
    taps ``floor + (0, 1)`` clamped to the table's border, their weights ``max(1 - distance, 0)``: bilinear, the
    only mode a reviewed tower uses; the code's bicubic taps are not written here), the 2-D weights the outer
    product; the tower sums
    ``table[tap] * weight`` over the taps (``Qwen3VLVisionModel.forward`` l.695). All in float32, in the order the
    code computes it; the sum in tap order."""

    mode: str
    align_corners: bool

    def describe(self) -> str:
        return (
            f"{self.mode}, align_corners={self.align_corners}, as per-patch taps and weights gathered from the "
            "table (get_vision_interpolation_indices_and_weights)"
        )

    def scale_factors(self, old: tuple[int, int], new: tuple[int, int]) -> None:
        return None

    def _axis(self, n: int, side: int) -> tuple[Any, Any]:
        import numpy as np

        f32 = np.float32
        index = np.arange(n, dtype=f32)
        if self.align_corners:
            src = (index * f32(side - 1)) / f32(max(n - 1, 1))
        else:
            src = ((index + f32(0.5)) * f32(side)) / f32(n) - f32(0.5)
        floor = np.floor(src)
        offsets = np.arange(0, 2)  # floor, floor + 1 (bilinear: the only mode a reviewed rule gathers with)
        taps = np.clip(floor.astype(np.int64)[:, None] + offsets, 0, side - 1)
        d = np.abs(src[:, None] - floor[:, None] - offsets.astype(f32))
        return taps, np.maximum(f32(1) - d, f32(0)).astype(f32)

    def rows(self, cells: Any, side: int, grid: tuple[int, int], merge: int) -> Any:
        """The rows the tower adds to a ``grid`` of patches, in its ``merge x merge`` block order."""
        import numpy as np

        h, w = grid
        within = np.arange(h * w)
        blocks_w = w // merge
        row = (within // (merge * merge * blocks_w)) * merge + (within // merge) % merge
        col = ((within // (merge * merge)) % blocks_w) * merge + within % merge
        h_taps, h_w = self._axis(h, side)
        w_taps, w_w = self._axis(w, side)
        n = h_taps.shape[1]
        index = (h_taps[row][:, :, None] * side + w_taps[col][:, None, :]).reshape(-1, n * n)
        weight = (h_w[row][:, :, None] * w_w[col][:, None, :]).reshape(-1, n * n)
        table = np.asarray(cells, dtype=np.float32)
        out = table[index[:, 0]] * weight[:, :1]
        for k in range(1, n * n):
            out = out + table[index[:, k]] * weight[:, k : k + 1]
        return out.astype(np.float32)


#: timm's rule (``--engine timm``, and timm checkpoints): bicubic with antialias, the size passed
TIMM_RESAMPLING = Resampling("bicubic", align_corners=False, antialias=True)


def is_timm_config(config: Mapping[str, Any]) -> bool:
    """A timm checkpoint's own config.json: ``architecture`` and a ``pretrained_cfg`` object, no ``model_type``."""
    return (
        isinstance(config.get("architecture"), str)
        and isinstance(config.get("pretrained_cfg"), Mapping)
        and "model_type" not in config
    )


def claims(config: Mapping[str, Any], image_size: Any = None, *, grid: Any = None, tower: str | None = None) -> bool:
    """Whether this module reads ``config``: a model type whose record has a vision table (a multimodal wrapper:
    its vision tower's, when ``image_size``, a patch ``grid`` or ``tower="vision"`` is given, as its text tower has
    a table too), or a timm checkpoint's config."""
    if image_size is None and (grid is not None or tower == "vision"):
        image_size = grid if grid is not None else "native"  # the vision tower is asked for: its table
    if is_timm_config(config):
        return True
    mt = config.get("model_type")
    if not isinstance(mt, str):
        return False
    rec = _record(mt)
    if rec is not None and rec.tower is not None and image_size is None:
        # a wrapper (CLIP, SigLIP) whose text tower has a table too: the vision grid when an image size is asked
        return _text_table(mt) is None
    if rec is None and len(observed(mt)) > 1 and image_size is None:
        return False  # several tables (object queries, level embeddings beside a grid): its mechanisms say which
    if rec is None and observed(mt):  # a type read (or refused) by the code its tower runs
        # a tower itself is always its table (when the inventory saw which code places it: else the reading of its
        # mechanisms says what it is); a wrapper's other parts (its text model) are read unless an image size is
        # asked
        return image_size is not None or all(e.get("component") == "model" and e.get("method") for e in observed(mt))
    return rec is not None


def _text_table(model_type: str) -> Any:
    """The text tower's table of a multimodal wrapper, when its record has one (else None)."""
    rec = RECORDS.get(model_type)
    return rec.positions if rec is not None else None


# ----- values ---------------------------------------------------------------------------------------------
def parse_image_size(value: Any) -> tuple[int, int]:
    """``H`` (square), ``HxW`` or ``(H, W)`` -> ``(H, W)``; anything else is one line naming it."""
    bad = f"{param('image_size')} {value!r} is not H or HxW (pixels, e.g. 448 or 448x308)"
    if isinstance(value, (tuple, list)):
        parts = list(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        parts = [value, value]
    elif isinstance(value, str):
        text = value.strip().lower().replace("×", "x")
        parts = text.split("x") if "x" in text else [text, text]
    else:
        raise ParameterError(bad)
    if len(parts) != 2:
        raise ParameterError(bad)
    out = []
    for p in parts:
        if isinstance(p, bool):
            raise ParameterError(bad)
        if isinstance(p, str):
            if not p.strip().isdigit():
                raise ParameterError(bad)
            p = int(p)
        if not isinstance(p, int) or p < 1 or p > 2**20:
            raise ParameterError(bad)
        out.append(p)
    return out[0], out[1]


def _size(text: tuple[int, int]) -> str:
    return f"{text[0]}x{text[1]}"


def _config_int(config: Mapping[str, Any], key: str, default: Any, where: str) -> tuple[int, int]:
    """An int or an ``[h, w]`` pair of config key ``key`` (the class default when absent), as ``(h, w)``."""
    value = config.get(key, default)
    if value is None:
        raise ParameterError(f"{where}: config key {key} is missing and its class has no default; fix config.json")
    pair = list(value) if isinstance(value, (list, tuple)) else [value, value]
    if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in pair):
        raise ParameterError(f"{where}: config key {key}={value!r} is not a positive integer or [h, w]; fix it")
    return int(pair[0]), int(pair[1])


def _default(model_type: str, vision: Vision, key: str) -> Any:
    """The config class's default of ``key``: the record's, else the inventory's (made from the class: its
    ``vision_table`` observation's ``config_defaults``, then its ``defaults``)."""
    own = dict(vision.defaults)
    if key in own:
        return own[key]
    for e in observed(model_type):
        if e.get("component") == "model" and key in (e.get("config_defaults") or {}):
            return e["config_defaults"][key]
    from .data import model_type_record

    entry = model_type_record(model_type) or {}
    return (entry.get("defaults") or {}).get(key)


# ----- towers read by a reviewed rule of the same code (the inventory's ``vision_table``) -----------------------
_OBSERVER = "tools/inventory/vision_tables.py"


@cache
def _observations() -> dict[str, tuple[dict[str, Any], ...]]:
    from .data import inventory

    types = inventory().get("model_types") or {}
    return {mt: tuple(e["vision_table"]) for mt, e in types.items() if isinstance(e, dict) and e.get("vision_table")}


def observed(model_type: str) -> tuple[dict[str, Any], ...]:
    """The inventory's ``vision_table`` entries of ``model_type`` (its learned vision tables, the code that
    resizes each, observed running: :data:`_OBSERVER`); ``()`` for a type without one."""
    return _observations().get(model_type, ())


@cache
def _rules() -> dict[str, str]:
    """fingerprint -> the model type whose record's rule was read from that code."""
    out: dict[str, str] = {}
    for mt, rec in RECORDS.items():
        for f in rec.vision.fingerprints if rec.vision is not None else ():
            out.setdefault(f, mt)  # the first record read from it (ViT's before ViT-MSN's: the same rule)
    return out


@dataclass(frozen=True)
class Reading:
    """How one model directory's vision table is read: the rule (its ``tensor`` the full suffix to find in the
    weights), the (sub-)config its grid comes from, whose class defaults fill what it leaves out, and the
    reference the output names."""

    model_type: str
    vision: Vision
    config: Mapping[str, Any]
    defaults_of: str
    reference: str
    #: other names of the table, tried when the weights hold none named ``vision.tensor`` (the module's name,
    #: where transformers saves the tensor under its checkpoint's name)
    also: tuple[str, ...] = ()
    #: the tower's prefix inside its wrapper (the tensors the rule reads beside the table, e.g. SAM 2's window)
    prefix: str = ""
    #: ``(config key, value, what the code does then)``: with that value the tower keeps no learned table
    #: (:data:`~.records.VISION_SWITCHES`, by the fingerprint of the code it runs)
    absent: tuple[str, Any, str] | None = None


def _sub(config: Mapping[str, Any], component: str, where: str) -> tuple[Mapping[str, Any], bool]:
    """The sub-config at the dotted ``component`` path (``model``: the config itself), and whether config.json
    gives it (else its class defaults apply, as the wrapper's config class builds it)."""
    if component == "model":
        return config, True
    node: Any = config
    for part in component.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
        if node is None:
            return {}, False
    if not isinstance(node, Mapping):
        raise ParameterError(f"{where}: config key {component} is not an object; fix config.json")
    return node, True


def _refusal(model_type: str, entry: Mapping[str, Any]) -> str:
    method = entry.get("method")
    if not entry.get("fingerprint") or not method:
        return (
            f"{model_type}'s vision table ({entry.get('tensor')}) could not be observed running "
            f"({entry.get('status')}), so posenc does not read it"
        )
    words = REVIEWED_REFUSALS.get(str(entry["fingerprint"]), f"code posenc has not reviewed: {entry['fingerprint']}")
    return f"{model_type}'s vision tower places positions with {method} ({words}), which posenc does not reproduce"


def reading(config: Mapping[str, Any], where: str = "") -> Reading:
    """How ``config``'s vision table is read: its record's rule, else the rule reviewed for the code its tower
    runs (the inventory's observation), with the observed prefix and sub-config; a type whose code no rule was
    read from is refused naming its class and method."""
    mt = str(config.get("model_type"))
    rec = RECORDS.get(mt)
    vision = rec.vision if rec is not None else None
    if vision is not None:
        if vision.tower is None:
            names = tuple(
                str(e["saved_tensor"]) for e in observed(mt) if e.get("saved_tensor") not in (None, vision.tensor)
            )
            return Reading(mt, vision, config, mt, RECORDS[mt].reference, names)
        prefix = ""
        while vision.tower is not None:  # the vision tower's sub-config (its class defaults where it says nothing)
            key, mt, more = vision.tower
            prefix += more
            sub = config.get(key) or {}
            if not isinstance(sub, Mapping):
                raise ParameterError(f"{where}: config key {key} is not an object; fix config.json")
            # the sub-config's own model_type chooses the tower's (or backbone's) class, as transformers does
            named = sub.get("model_type")
            if isinstance(named, str) and named != mt:
                found = _record(named)
                if found is None or found.tower is not None:
                    raise RefusedError(
                        f"{where}: its {key} is a {named}, whose position table posenc has no rule for (it reads "
                        f"{mt}'s); pass a checkpoint whose {key} is {mt}"
                    )
                mt = named
            config = sub
            vision = _record(mt)
            assert vision is not None
        return Reading(mt, replace(vision, tensor=prefix + vision.tensor), config, mt, RECORDS[mt].reference,
                       prefix=prefix)  # fmt: skip
    entries = observed(mt)
    if not entries:
        raise ParameterError(f"{mt} has no vision position table posenc knows of")
    if len(entries) > 1:
        tables = ", ".join(f"{e.get('tensor')} ({e.get('method') or e.get('status')})" for e in entries)
        raise RefusedError(
            f"{mt} has {len(entries)} learned vision tables ({tables}); posenc reads a tower with one table only"
        )
    entry = entries[0]
    sub, given = _sub(config, str(entry.get("component")), where)
    tower_mt = (
        sub.get("model_type") if given and isinstance(sub.get("model_type"), str) else entry.get("tower_model_type")
    )
    tensor, tower_tensor = str(entry.get("tensor")), str(entry.get("tower_tensor"))
    outer = tensor[: len(tensor) - len(tower_tensor)] if tower_tensor and tensor.endswith(tower_tensor) else None
    if entry.get("component") != "model" and tower_mt != entry.get("tower_model_type"):
        # config.json names another tower than the wrapper's default: that tower's own rule, under the prefix
        if outer is None or not isinstance(tower_mt, str) or (RECORDS.get(tower_mt) is None and not observed(tower_mt)):
            raise RefusedError(
                f"{where or mt}: {entry.get('component')} is a {tower_mt} tower, not {mt}'s default "
                f"{entry.get('tower_model_type')}, and posenc has no reading of it"
            )
        inner = reading({**sub, "model_type": tower_mt}, where)
        return replace(inner, vision=replace(inner.vision, tensor=outer + inner.vision.tensor))
    rule_mt = _rules().get(str(entry.get("fingerprint")))
    if rule_mt is None:
        raise RefusedError(_refusal(mt, entry))
    rule = RECORDS[rule_mt].vision
    assert rule is not None
    note = (
        f"{RECORDS[rule_mt].reference}; {mt}'s tower runs the same code ({entry.get('method')}, fingerprint "
        f"{entry.get('fingerprint')}, observed by {_OBSERVER})"
    )
    saved = str(entry.get("saved_tensor") or tensor)  # the name save_pretrained writes first, the module's after
    vision = replace(rule, tensor=saved, tower=None, defaults=())
    if not given:  # the wrapper builds its default tower: the numbers the inventory saw
        vision = replace(vision, defaults=tuple((entry.get("config_defaults") or {}).items()))
    codes = (str(entry.get("forward_fingerprint")), str(entry.get("fingerprint")))
    absent = next((VISION_SWITCHES[c] for c in codes if c in VISION_SWITCHES), None)
    return Reading(str(tower_mt), vision, sub, str(tower_mt), note, (tensor,) if tensor != saved else (), absent=absent)


# ----- the table from the weights ---------------------------------------------------------------------------
def read_table(path: str, suffix: str) -> tuple[Any, str, str]:
    """``(table, file, tensor name)``: the one tensor of the model directory ``path`` whose name is ``suffix`` or
    ends with ``.suffix`` (``model.safetensors``, or the shards a ``model.safetensors.index.json`` names). This
    is the only place that reads weights here: the generic learned-table reader can take its place."""
    from .readers import find_tensors, weight_files
    from .readers import weights_tensor as _read_tensor

    files = weight_files(path, suffix)
    if files is None:
        raise ParameterError(
            f"{path}: no model.safetensors (or index) beside config.json; the position table lives in the weights: "
            "pass the model's directory"
        )
    found = find_tensors(files, suffix)
    if len(found) != 1:
        what = "no tensor" if not found else f"{len(found)} tensors ({', '.join(n for _, n in found)})"
        raise ParameterError(f"{path}: {what} named *{suffix} in the weights; pass the model's own directory")
    file, name = found[0]
    return _read_tensor(file, name), file, name


def _read_any(path: str, names: tuple[str, ...]) -> tuple[Any, str, str]:
    """:func:`read_table` of the first of ``names`` the weights hold (the first's error when none)."""
    from .readers import find_tensors, weight_files

    files = weight_files(path) if len(names) > 1 else None
    for name in names[1:]:
        if files is not None and not find_tensors(files, names[0]) and find_tensors(files, name):
            return read_table(path, name)
    return read_table(path, names[0])


def tower_table_stored(path: str, config: Mapping[str, Any]) -> str | None:
    """For a multimodal wrapper whose vision tower posenc reads: None when the weights beside ``path`` hold the
    tower's table, else why not (no weights, or no tensor of the tower's names), for an audit to say the tower
    was not checked. A tower refused or switched off raises as :func:`reading` does."""
    from .readers import find_tensors, weight_files

    read = reading(config, path)
    names = (read.vision.tensor, *read.also)
    files = weight_files(path)  # every shard: the names after the first may be in another one
    if files is None:
        return "no weights beside the config (the tower's table lives in the weights)"
    if any(find_tensors(files, n) for n in names):
        return None
    return f"the weights hold no tensor named *{names[0]} (a checkpoint without the vision tower's weights)"


def _is(name: str, suffix: str) -> bool:
    return name == suffix or name.endswith("." + suffix)


def _has(path: str, suffix: str) -> Any:
    """The shape of the tensor named ``*suffix`` in ``path``'s weights, or None."""
    from .readers import weights_header as _header

    single = os.path.join(path, "model.safetensors")
    if not os.path.isfile(single):
        return None
    header = _header(single)[0]
    hits = [n for n in header if _is(n, suffix)]
    return list(header[hits[0]].get("shape", [])) if len(hits) == 1 else None


# ----- the layout of a table ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """Where a table's rows sit: the native grid, the extra rows (index -> name) and the rule that resizes it."""

    model_type: str
    reference: str
    engine: str
    native_grid: tuple[int, int]
    patch: tuple[int, int]
    native_image: tuple[int, int]
    extra: tuple[str, ...]
    extra_at: str
    resampling: Resampling | Bucketing | Taps | None
    keep: str
    unpositioned: str | None = None
    #: the tower's spatial merge: its patches come in ``merge x merge`` blocks (Qwen3-VL), 1 otherwise
    merge: int = 1
    #: the frames of one tubelet (ViViT's ``tubelet_size[0]``), with ``frames``
    tubelet_frames: int = 1
    #: a model with a table per stage (PVT): every stage's ``(kernel, stride, reduction, patch count)``, and the
    #: stage this layout's table belongs to
    chain: tuple[tuple[int, int, int, int], ...] = ()
    stage: int = 0
    #: rows after the grid kept as they are (YOLOS's detection tokens), after ``extra`` when it is at the end
    after: tuple[str, ...] = ()
    #: ``tokens``, ``dropped`` or ``added`` (:class:`.records.Vision` ``extra_use``)
    extra_use: str = "tokens"
    #: a per-frame table (frames x dim) added to every patch (TimeSformer), or None
    time: Any = None
    #: the frames of a 3-D tubelet table (ViViT), or None
    frames: int | None = None
    #: the model infers the grid height with its class token counted (TimeSformer)
    height_from_tokens: bool = False
    #: the table's input is not an image (AST: a spectrogram): ``--image-size`` cannot apply
    not_image: str | None = None
    #: the image size the model runs at when none is given, when it is not the table's (SAM 3), or None
    run_image: tuple[int, int] | None = None
    #: the model accepts that image size only (SegGPT)
    fixed_input: bool = False
    #: ``((kh, kw), (sh, sw), (ph, pw))`` of a patch convolution whose output is the grid (SAM 2), or None
    conv: tuple[tuple[int, int], tuple[int, int], tuple[int, int]] | None = None
    #: a ``w x w x dim`` window table tiled over the grid and added (SAM 2's ``pos_embed_window``), or None
    window: Any = None
    #: the grid is ``image // patch`` and the patch convolution must make that many tokens (Hiera), rather than
    #: the convolution's output being the grid (SAM 2)
    conv_checks: bool = False

    def conv_grid(self, image: tuple[int, int]) -> tuple[int, int]:
        """The patch convolution's output size at ``image``."""
        assert self.conv is not None
        (kh, kw), (sh, sw), (ph, pw) = self.conv
        return ((image[0] + 2 * ph - kh) // sh + 1, (image[1] + 2 * pw - kw) // sw + 1)

    def grid_at(self, image: tuple[int, int]) -> tuple[int, int]:
        """The patch grid of an image: ``size // patch``, or the patch convolution's output size."""
        if self.conv is None or self.conv_checks:
            return (image[0] // self.patch[0], image[1] // self.patch[1])
        return self.conv_grid(image)

    def offset(self) -> int:
        return len(self.extra) if self.extra_at == "start" and self.extra_use == "tokens" else 0

    def before_after(self) -> tuple[int, int]:
        """How many rows of the weights' table sit before the grid and after it."""
        before = len(self.extra) if self.extra_at == "start" else 0
        return before, len(self.extra) - before + len(self.after)

    def cells(self, table: Any) -> Any:
        """The grid rows of the weights' table (row-major)."""
        before, after = self.before_after()
        return table[before : table.shape[0] - after]

    def grid_cells(self) -> int:
        return self.native_grid[0] * self.native_grid[1] * (self.frames or 1)

    def extra_rows(self, grid: tuple[int, int]) -> str:
        if self.extra_use != "tokens":
            names: list[tuple[int, str]] = []
        else:
            first = 0 if self.extra_at == "start" else grid[0] * grid[1] * (self.frames or 1)
            names = [(first + i, name) for i, name in enumerate(self.extra)]
        if self.after:
            last = (names[-1][0] + 1) if names and self.extra_at == "end" else None
            first = last if last is not None else len(names) + grid[0] * grid[1] * (self.frames or 1)
            names += [(first + i, name) for i, name in enumerate(self.after)]
        return ",".join(f"{i}:{name}" for i, name in names)


def _flag(config: Mapping[str, Any], model_type: str, vision: Vision, key: str) -> Any:
    return config.get(key, _default(model_type, vision, key))


def _hf_layout(read: Reading, rows: int, where: str) -> Layout:
    vision, config, model_type = read.vision, read.config, read.defaults_of
    extra = vision.extra
    if vision.before is not None:
        key, default, name = vision.before
        known = _default(model_type, vision, key)
        count = _config_int(config, key, known if known is not None else default, where)[0]
        extra = tuple(f"{name}{i}" for i in range(count))
    n_extra = len(extra)
    frames = None
    tubelet_frames = 1
    not_image = None
    after: tuple[str, ...] = ()
    if vision.after is not None:
        key, default, name = vision.after
        known = _default(model_type, vision, key)
        count = _config_int(config, key, known if known is not None else default, where)[0]
        after = tuple(f"{name}{i}" for i in range(count))
    if vision.grid_from == "strides":  # AST: (bins - patch) // stride + 1 per axis, frequency first
        assert vision.strides is not None
        bins_k, length_k, fs_k, ts_k = vision.strides
        patch = _config_int(config, "patch_size", _default(model_type, vision, "patch_size"), where)
        bins, length = (_config_int(config, k, _default(model_type, vision, k), where)[0] for k in (bins_k, length_k))
        fs, ts = (_config_int(config, k, _default(model_type, vision, k), where)[0] for k in (fs_k, ts_k))
        if bins < patch[0] or length < patch[1]:
            raise ParameterError(
                f"{where}: config {bins_k}={bins} / {length_k}={length} is smaller than one {patch[0]} patch; fix it"
            )
        grid = ((bins - patch[0]) // fs + 1, (length - patch[1]) // ts + 1)
        image = (bins, length)
        said = f"{bins_k} {bins}, {length_k} {length}, patch {patch[0]}, strides {fs}x{ts}"
        not_image = (
            f"{model_type}'s input is a spectrogram ({length_k} {length} frames x {bins_k} {bins} bins) and its "
            f"{_size(grid)} frequency x time table is added as it is"
        )
    elif vision.tubelets is not None:  # ViViT: frames // tubelet_t x image // tubelet_h x image // tubelet_w
        tub = config.get("tubelet_size", _default(model_type, vision, "tubelet_size"))
        if not (isinstance(tub, (list, tuple)) and len(tub) == 3 and all(isinstance(v, int) and v > 0 for v in tub)):
            raise ParameterError(f"{where}: config key tubelet_size={tub!r} is not [t, h, w] of positive ints; fix it")
        patch = (int(tub[1]), int(tub[2]))
        image = _config_int(config, "image_size", _default(model_type, vision, "image_size"), where)
        n_frames = _config_int(config, vision.tubelets, _default(model_type, vision, vision.tubelets), where)[0]
        frames = n_frames // int(tub[0])
        tubelet_frames = int(tub[0])
        grid = (image[0] // patch[0], image[1] // patch[1])
        said = f"{vision.tubelets} {n_frames} / tubelet {tub[0]}, image_size {_size(image)} / {_size(patch)}"
    elif vision.grid_key is not None:  # SAM 2: the table's grid is its own config key; the patch a convolution
        grid = _config_int(config, vision.grid_key, _default(model_type, vision, vision.grid_key), where)
        assert vision.conv is not None
        k, st, pd = (_config_int(config, key, _default(model_type, vision, key), where) for key in vision.conv)
        patch = k
        image = grid  # the table is no image's grid: the model resizes it at every size
        said = f"{vision.grid_key} {_size(grid)}"
    elif vision.grid_from in ("num_patches", "num_position_embeddings"):
        key = vision.grid_from
        patch = _config_int(config, "patch_size", _default(model_type, vision, "patch_size"), where)
        n = _config_int(config, key, _default(model_type, vision, key), where)[0]
        side = math.isqrt(n)
        grid = (side, side)
        image = (side * patch[0], side * patch[1])
        said = f"{key} {n}"
    else:
        patch = _config_int(config, vision.patch_key, _default(model_type, vision, vision.patch_key), where)
        key = vision.image_key
        image = _config_int(config, key, _default(model_type, vision, key), where)
        grid = (image[0] // patch[0], image[1] // patch[1])
        said = f"{key} {_size(image)} / patch {_size(patch)}"
    if min(grid) < 1:
        raise ParameterError(f"{where}: the config's {said} make no patch; fix config.json")
    _check_rows(rows, n_extra + len(after), grid, extra + after, where, said, square=vision.reshape == "sqrt",
                frames=frames)  # fmt: skip
    run = None
    if vision.run_image_key is not None:
        key = vision.run_image_key
        run = _config_int(config, key, _default(model_type, vision, key), where)
    conv = None
    if vision.conv is not None:
        k, st, pd = (_config_int(config, key, _default(model_type, vision, key), where) for key in vision.conv)
        conv = (k, st, pd)
    merge = 1
    if vision.merge is not None:
        merge = _config_int(config, vision.merge, _default(model_type, vision, vision.merge), where)[0]
    return Layout(read.model_type, read.reference, "hf", grid, patch, image, extra, vision.extra_at,
                  _rule(vision), vision.keep, _unpositioned(model_type, vision, config), after=after,
                  extra_use=vision.extra_use, frames=frames, height_from_tokens=vision.height_from_tokens,
                  not_image=not_image, run_image=run, fixed_input=vision.fixed_input, conv=conv,
                  conv_checks=vision.grid_key is None, merge=merge, tubelet_frames=tubelet_frames)  # fmt: skip


def _unpositioned(model_type: str, vision: Vision, config: Mapping[str, Any]) -> str | None:
    """The tokens the model adds with no position, in words (DINOv2's registers), or None."""
    if vision.unpositioned is None:
        return None
    key, default, name = vision.unpositioned
    known = _default(model_type, vision, key)
    count = config.get(key, known if known is not None else default)
    return f"{count} {name} tokens (config key {key}) sit after cls and get no position"


def _check_rows(
    rows: int,
    n_extra: int,
    grid: tuple[int, int],
    extra: tuple[str, ...],
    where: str,
    said: str,
    *,
    square: bool = True,
    frames: int | None = None,
) -> None:
    """Refuse a table that is not the config's grid plus its extra rows (naming both)."""
    grid_rows = rows - n_extra
    names = f" + {n_extra} extra ({', '.join(extra)})" if n_extra else ""
    if not square:  # the model takes its grid from the config: the rows must be exactly that grid
        want = grid[0] * grid[1] * (frames or 1)
        shape = (f"{frames}x" if frames else "") + _size(grid)
        if rows != want + n_extra:
            raise ParameterError(
                f"{where}: the position table has {rows} rows and the config's {said} make a {shape} grid{names} "
                f"({want + n_extra} rows); the config and weights disagree: fix config.json or pass the right weights"
            )
        return
    side = math.isqrt(max(grid_rows, 0))
    if grid_rows < 1 or side * side != grid_rows:
        raise ParameterError(
            f"{where}: the position table has {rows} rows, which is not a square grid{names}; the model reshapes "
            "it to sqrt x sqrt: the weights are not this model's"
        )
    if grid[0] * grid[1] != grid_rows or grid[0] != grid[1]:
        raise ParameterError(
            f"{where}: the weights' table is a {side}x{side} grid{names} ({rows} rows) and the config's {said} make a "
            f"{_size(grid)} grid; the config and weights disagree: fix config.json or pass the right weights"
        )


def _timm_layout(config: Mapping[str, Any], path: str, rows: int) -> Layout:
    """A timm checkpoint's layout, from its config.json and the tensors it holds (see the module docstring)."""
    arch = str(config.get("architecture"))
    pcfg = config["pretrained_cfg"]
    size = pcfg.get("input_size")
    if not (isinstance(size, list) and len(size) == 3 and all(isinstance(v, int) and v > 0 for v in size)):
        raise ParameterError(f"{path}: pretrained_cfg.input_size={size!r} is not [channels, height, width]; fix it")
    proj = _has(path, "patch_embed.proj.weight")
    if not proj or len(proj) != 4:
        raise ParameterError(f"{path}: no patch_embed.proj.weight in the weights; is this a timm ViT ({arch})?")
    patch = (int(proj[2]), int(proj[3]))
    image = (size[1], size[2])
    grid = (image[0] // patch[0], image[1] // patch[1])
    cls = _has(path, "cls_token")
    reg = _has(path, "reg_token")
    tokens = ["cls"] if cls else []
    tokens += [f"reg{i}" for i in range(int(reg[1]) if reg and len(reg) == 3 else 0)]
    # VisionTransformer._pos_embed: without no_embed_class the table holds a row per prefix token; with it, none
    extra = tuple(tokens) if rows == grid[0] * grid[1] + len(tokens) else ()
    unpositioned = None
    if tokens and not extra:
        unpositioned = f"{', '.join(tokens)} tokens sit before the grid and get no position (no_embed_class)"
    if rows != grid[0] * grid[1] + len(extra):
        raise ParameterError(
            f"{path}: pos_embed has {rows} rows and pretrained_cfg.input_size {_size(image)} / patch {_size(patch)} "
            f"make a {_size(grid)} grid + {len(tokens)} prefix tokens ({', '.join(tokens) or 'none'}); the config "
            "and weights disagree"
        )
    return Layout(f"timm:{arch}", _TIMM, "timm", grid, patch, image, extra, "start", TIMM_RESAMPLING, "same_grid",
                  unpositioned)  # fmt: skip


def layout_of(
    path: str, config: Mapping[str, Any], engine: str | None, stage: Any = None
) -> tuple[Layout, Any, str, str]:
    """``(layout, table, file, tensor)`` of the model directory ``path`` under ``engine`` (None: the model's own);
    ``stage``: the stage whose table to read, of a model with one per stage (PVT: ``-p stage=K``)."""
    if engine is not None and engine not in ENGINES:
        raise ParameterError(
            f"{param('engine')} {engine} has no rule for a vision position table; choose from: {', '.join(ENGINES)}"
        )
    if not os.path.isdir(path):
        raise ParameterError(
            f"{path}: a vision model's position table lives in its weights; pass the model's directory "
            "(config.json + model.safetensors)"
        )
    if is_timm_config(config):
        if engine == "hf":
            raise ParameterError(
                f"{path} is a timm checkpoint: transformers has no code for it; drop {param('engine')}"
            )
        table, file, name = read_table(path, "pos_embed")
        table = _rows(table, file, name)
        return _timm_layout(config, path, table.shape[0]), table, file, name
    # the vision tower's sub-config (its class defaults where it says nothing), its tensor under its prefix
    read = reading(config, path)
    vision, mt, config, prefix = read.vision, read.defaults_of, read.config, read.prefix
    _refuse_unmodelled(mt, vision, config, path, read.absent)
    if stage is not None and vision.stages is None:
        raise ParameterError(
            f"{param('stage')} applies to a model with a position table per stage (PVT); {mt} has one table: drop it"
        )
    if vision.stages is not None:
        layout, table, file, name = _stage_layout(read, path, stage)
        if engine == "timm":
            raise ParameterError(
                f"{param('engine')} timm keeps prefix rows before a 2-D grid; {mt} adds a table per stage, each as "
                f"it is: drop {param('engine')}"
            )
        return layout, table, file, name
    table, file, name = _read_any(path, (vision.tensor, *read.also))
    raw_shape = list(table.shape)
    table = _rows(table, file, name, grid=vision.tensor_layout == "hwc", channels_first=vision.tensor_layout == "chw")
    layout = _hf_layout(read, table.shape[0], path)
    if vision.tensor_layout in ("hwc", "chw"):
        hw = tuple(raw_shape[1:3] if vision.tensor_layout == "hwc" else raw_shape[2:4])
        if hw != layout.native_grid:
            raise ParameterError(
                f"{path}: tensor {name} is a {hw[0]}x{hw[1]} grid and the config makes "
                f"{_size(layout.native_grid)}; the config and weights disagree"
            )
    if vision.window is not None:
        layout = _with_window(layout, vision, mt, config, path, prefix)
    if vision.time is not None:
        layout = _with_time(layout, vision, mt, config, path, prefix)
    if engine == "timm":
        what = _not_timm(layout)
        if what is not None:
            raise ParameterError(
                f"{param('engine')} timm keeps prefix rows before a 2-D grid; {mt} {what}: drop {param('engine')}"
            )
        layout = replace(layout, reference=f"{_TIMM} over {layout.reference}", engine="timm",
                         resampling=TIMM_RESAMPLING, keep="same_grid")  # fmt: skip
    return layout, table, file, name


def _stage_layout(read: Reading, path: str, stage: Any) -> tuple[Layout, Any, str, str]:
    """The layout and table of stage ``stage`` (0 when None) of a model with a table per stage (PVT; the record's
    ``stages``): its native grid ``image_size_k // patch_k`` squared, ``image_size_k`` the config's ``image_size``
    for stage 0 and ``image_size // 2**(k+1)`` after (``PvtEncoder.__init__``), a class row before the last
    stage's grid, and every stage's convolutions (:func:`_resize_stages` follows the image through them)."""
    vision, config, mt = read.vision, read.config, read.defaults_of
    assert vision.stages is not None
    template, count_key, patch_key, stride_key, reduce_key = vision.stages
    n = _config_int(config, count_key, _default(mt, vision, count_key), path)[0]

    def per_stage(key: str) -> list[int]:
        value = config.get(key, _default(mt, vision, key))
        if not (isinstance(value, (list, tuple)) and len(value) >= n and all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value[:n])):  # fmt: skip
            raise ParameterError(f"{path}: config key {key}={value!r} is not {n} positive integers (one per stage)")
        return [int(v) for v in value[:n]]

    patches, strides, reduce = per_stage(patch_key), per_stage(stride_key), per_stage(reduce_key)
    image = config.get("image_size", _default(mt, vision, "image_size"))
    if isinstance(image, bool) or not isinstance(image, int) or image < 1:
        raise ParameterError(
            f"{path}: config key image_size={image!r} is not a positive integer; {mt}'s code needs one"
        )
    text = "0" if stage is None else str(stage).strip()
    if isinstance(stage, bool) or not text.isdigit() or int(text) >= n:
        raise ParameterError(f"{param('stage')} {stage!r} is not a stage of {mt}: give 0..{n - 1}")
    k = int(text)
    counts = [((image if i == 0 else image // 2 ** (i + 1)) // patches[i]) ** 2 for i in range(n)]
    prefix = vision.tensor[: -len(template.format(k=0))] if vision.tensor.endswith(template.format(k=0)) else ""
    table, file, name = read_table(path, prefix + template.format(k=k))
    table = _rows(table, file, name)
    extra = ("cls",) if k == n - 1 else ()
    if table.shape[0] != counts[k] + len(extra):
        raise ParameterError(
            f"{path}: tensor {name} has {table.shape[0]} rows and the config makes stage {k} a {counts[k]}-patch grid"
            f"{' + a class row' if extra else ''}; the config and weights disagree"
        )
    side = math.isqrt(counts[k])
    chain = tuple((strides[i], patches[i], reduce[i], counts[i]) for i in range(n))
    layout = Layout(read.model_type, read.reference, "hf", (side, side), (patches[k], patches[k]), (image, image),
                    extra, "start", None, "same_count", chain=chain, stage=k)  # fmt: skip
    return layout, table, file, name


def _resize_stages(layout: Layout, table: Any, image: tuple[int, int] | None) -> tuple[Any, dict[str, str]]:
    """A per-stage table at an image size: the image followed through every stage's patch convolution (``(g -
    kernel) // stride + 1``); a stage whose grid has another patch count than its table, or is smaller than its
    convolution's kernel or its attention's reduction, makes the model's forward fail: refused by name."""
    import numpy as np

    img = layout.native_image if image is None else image
    g = img
    grids = []
    n = len(layout.chain)
    for i, (kernel, stride, reduce, count) in enumerate(layout.chain):
        where = f"{param('image_size')} {_size(img)}: {layout.model_type}'s stage {i}"
        fix = f"give an image whose stages keep their tables' patch counts, e.g. {_size(layout.native_image)}"
        if g[0] < kernel or g[1] < kernel:
            raise ParameterError(f"{where} gets a {_size(g)} input, smaller than its {kernel}x{kernel} patch "
                                 f"convolution: its forward fails there; {fix}")  # fmt: skip
        g = ((g[0] - kernel) // stride + 1, (g[1] - kernel) // stride + 1)
        if g[0] * g[1] != count:
            raise ParameterError(
                f"{where} makes a {_size(g)} patch grid ({g[0] * g[1]} patches) and adds its {count}-patch table as "
                f"it is (interpolate_pos_encoding only reshapes it to that grid): its forward fails there; {fix}"
            )
        if reduce > 1 and (g[0] < reduce or g[1] < reduce or i == n - 1):
            raise ParameterError(
                f"{where} has a {_size(g)} grid and its attention reduces it by a {reduce}x{reduce} convolution"
                + (" over its tokens with the class row" if i == n - 1 else "")
                + f": its forward fails there; {fix}"
            )
        grids.append(g)
    grid = grids[layout.stage]
    before, _ = layout.before_after()
    rows = np.concatenate([np.asarray(table[:before]), np.asarray(layout.cells(table))], axis=0)
    meta = {
        "grid": _size(grid),
        "grid_offset": str(layout.offset()),
        "extra_rows": layout.extra_rows(grid),
        "resampling": "engine=hf, none: the stage's table added as it is, row-major over the stage's patch grid "
        "(interpolate_pos_encoding reshapes it to that grid and resizes it to the same size)",
        "image_size": _size(img),
        "patch_size": _size(layout.patch),
        "native_grid": _size(layout.native_grid),
        "stage": f"{layout.stage} of stages 0..{n - 1} (-p stage=K; each stage adds its own table)",
        "stage_grids": ", ".join(_size(s) for s in grids),
    }
    return rows, meta


def _not_timm(layout: Layout) -> str | None:
    """Why timm's ``resample_abs_pos_embed`` (prefix rows, then one 2-D grid) cannot stand for this model's code,
    or None when it can."""
    if isinstance(layout.resampling, Taps):
        return "gathers its table per patch, by taps and weights, in spatial-merge order (no F.interpolate of a grid)"
    if layout.extra_at != "start":
        return f"keeps its {', '.join(layout.extra)} row after it"
    if layout.after:
        return f"keeps {len(layout.after)} rows ({layout.after[0]}..) after it"
    if layout.extra_use != "tokens":
        return f"has no {', '.join(layout.extra)} token: its row is {layout.extra_use}"
    if layout.frames or layout.time is not None:
        return "adds frames to its grid (a video table)"
    if layout.not_image is not None:
        return "takes a spectrogram, not an image"
    if layout.window is not None or (layout.conv is not None and not layout.conv_checks):
        return "adds a window table tiled over its patch convolution's grid"
    return None


def _switched_off(
    mt: str, vision: Vision, config: Mapping[str, Any], absent: tuple[str, Any, str] | None
) -> tuple[str, str, str] | None:
    """``(config key, its value in JSON, what the model does then)`` when the config turns the learned table off
    (the record's ``switch`` false, or the code's :data:`~.records.VISION_SWITCHES` value), else None."""
    import json

    if vision.switch is not None and not _flag(config, mt, vision, vision.switch):
        return vision.switch, "false", "its code makes the table only when the key is true"
    if absent is not None:
        key, value, does = absent
        got = config.get(key, _default(mt, vision, key))
        if got == value:
            return key, json.dumps(got), does
    return None


def _refuse_unmodelled(
    mt: str, vision: Vision, config: Mapping[str, Any], path: str, absent: tuple[str, Any, str] | None = None
) -> None:
    """A switched-off table (no table to read: :class:`~posenc_cli.errors.NoTableError`), or a config value this
    rule does not model (refused: :class:`~posenc_cli.errors.RefusedError`): one line naming the key."""
    off = _switched_off(mt, vision, config, absent)
    if off is not None:
        key, value, does = off
        raise NoTableError(
            f"{path}: config key {key} is {value}: this {mt} keeps no learned position table ({does}); no table to read"
        )
    for key, value, why in vision.unmodelled:
        got = config.get(key, _default(mt, vision, key))
        if (value is None and got) or (value is not None and got == value):
            raise RefusedError(f"{path}: config key {key}={got!r}: {why}")


def _with_window(layout: Layout, vision: Vision, mt: str, config: Mapping[str, Any], path: str, prefix: str) -> Layout:
    """The layout with its window table (SAM 2's ``pos_embed_window``: ``1 x dim x w x w``), checked against the
    config's window size."""
    import numpy as np

    assert vision.window is not None
    suffix, key = vision.window
    sizes = config.get(key, _default(mt, vision, key))
    if not (isinstance(sizes, list) and sizes and isinstance(sizes[0], int) and sizes[0] > 0):
        raise ParameterError(f"{path}: config key {key}={sizes!r} is not a list of window sizes; fix config.json")
    window, file, name = read_table(path, prefix + suffix)
    shape = list(window.shape)
    if shape[:1] != [1] or len(shape) != 4 or shape[2:] != [sizes[0], sizes[0]]:
        raise ParameterError(
            f"{file}: tensor {name} has shape {shape}; config key {key} makes its window {sizes[0]}x{sizes[0]} "
            "(1 x dim x w x w): the config and weights disagree"
        )
    return replace(layout, window=np.ascontiguousarray(np.asarray(window)[0].transpose(1, 2, 0)))


def _with_time(layout: Layout, vision: Vision, mt: str, config: Mapping[str, Any], path: str, prefix: str) -> Layout:
    """The layout with its per-frame table (TimeSformer's ``time_embeddings``), checked against the frame count."""
    assert vision.time is not None
    suffix, key = vision.time
    frames = _config_int(config, key, _default(mt, vision, key), path)[0]
    time, file, name = read_table(path, prefix + suffix)
    time = _rows(time, file, name)
    if time.shape[0] != frames:
        raise ParameterError(
            f"{path}: tensor {name} has {time.shape[0]} rows and config key {key} says {frames} frames; the config "
            "and weights disagree"
        )
    return replace(layout, time=time)


def _rows(table: Any, file: str, name: str, *, grid: bool = False, channels_first: bool = False) -> Any:
    """The table as rows x dim (a ``(1, rows, dim)`` parameter loses its leading 1; with ``grid``, a ``1 x H x W x
    dim`` one is flattened row-major)."""
    shape = list(table.shape)
    if grid or channels_first:
        form = "1 x dim x H x W" if channels_first else "1 x H x W x dim"
        if len(shape) != 4 or shape[0] != 1:
            raise ParameterError(f"{file}: tensor {name} has shape {shape}; this model keeps its table as {form}")
        if channels_first:
            import numpy as np

            table = np.ascontiguousarray(np.asarray(table)[0].transpose(1, 2, 0))[None]
            shape = list(table.shape)
        table = table.reshape(shape[1] * shape[2], shape[3])
        shape = list(table.shape)
    while len(shape) > 2 and shape[0] == 1:
        table = table[0]
        shape = shape[1:]
    if len(shape) != 2 or shape[0] < 1:
        raise ParameterError(f"{file}: tensor {name} has shape {list(table.shape)}; a position table is rows x dim")
    if str(table.dtype) == "float64":
        raise ParameterError(
            f"{file}: tensor {name} is float64; torch resamples it in float64, which posenc does not reproduce "
            "(it reproduces the float32 kernels)"
        )
    return table


# ----- resizing -----------------------------------------------------------------------------------------------
def _patch_grid(layout: Layout, image: tuple[int, int] | None, grid: Any) -> tuple[tuple[int, int], str]:
    """The patch grid of a tower that takes one (:class:`Taps`), from ``--grid`` or ``--image-size`` as the tower's
    rotary takes them (:func:`.vision_rope.from_config`): the image through the patch, refused where the processor
    would resize it first (a side not a multiple of ``patch * merge``, Qwen2-VL's ``smart_resize``); a grid whose
    sides are not multiples of the merge is refused (the tower's code fails there). And the image size in words."""
    from ..encodings.grid import parse_grid

    merge, patch = layout.merge, layout.patch
    if grid is not None and image is not None:
        raise ParameterError(f"{param('grid')} and {param('image_size')} both give the patch grid; give one")
    if grid is not None:
        h, w = parse_grid(str(grid), 2)
        said = f"{h * patch[0]}x{w * patch[1]} (the {h}x{w} patch grid)"
    elif image is not None:
        ih, iw = image
        if ih < patch[0] or iw < patch[1]:
            raise ParameterError(
                f"{param('image_size')} {_size(image)} is smaller than one {_size(patch)} patch; give at least "
                f"{patch[0] * merge}x{patch[1] * merge}"
            )
        unit = (patch[0] * merge, patch[1] * merge)
        if merge > 1 and (ih % unit[0] or iw % unit[1]):
            up = f"{-(-ih // unit[0]) * unit[0]}x{-(-iw // unit[1]) * unit[1]}"
            raise ParameterError(
                f"{param('image_size')} {_size(image)} is not a multiple of {_size(unit)} pixels (patch "
                f"{_size(patch)} x spatial merge {merge}): the model's processor resizes it first (smart_resize); "
                f"give the resized size, e.g. {up}"
            )
        h, w = ih // patch[0], iw // patch[1]
        said = _size(image)
    else:
        (h, w), said = layout.native_grid, _size(layout.native_image)
    if h % merge or w % merge:
        raise ParameterError(
            f"grid {h}x{w} does not fit spatial_merge_size {merge}: both sides must be multiples of {merge} (the "
            f"tower's code fails there); use e.g. {-(-h // merge) * merge}x{-(-w // merge) * merge}"
        )
    return (h, w), said


def _resize_taps(layout: Layout, table: Any, image: tuple[int, int] | None, grid: Any) -> tuple[Any, dict[str, str]]:
    """A :class:`Taps` tower's rows at a patch grid (``grid``, or ``image`` through the patch) and its metadata."""
    assert isinstance(layout.resampling, Taps)
    patches, said = _patch_grid(layout, image, grid)
    out = layout.resampling.rows(layout.cells(table), layout.native_grid[0], patches, layout.merge)
    meta = {
        "grid": _size(patches),
        "grid_offset": "0",
        "extra_rows": "",
        "resampling": f"engine={layout.engine}, {layout.resampling.describe()}",
        "image_size": said,
        "patch_size": _size(layout.patch),
        "native_grid": _size(layout.native_grid),
        "grid_axes": "h,w",
        # the rotary towers' word (encodings/rope/vision.py): ``merge`` is not raster, so no check reads it as one
        "row_order": "merge" if layout.merge > 1 else "raster",
        "merge": f"{layout.merge}: {layout.merge}x{layout.merge} spatial-merge blocks, block-major, row-major inside "
        "each block (the tower's patch order)",
        "frames": "one image (grid_thw t=1): each frame of a video adds these rows again",
    }
    return out, meta


def resize(layout: Layout, table: Any, image: tuple[int, int] | None, grid: Any = None) -> tuple[Any, dict[str, str]]:
    """The rows the model adds at image size ``image`` (None: its native size), and the grid metadata; ``grid``
    (``HxW`` patches) for a tower that takes a patch grid (:class:`Taps`)."""
    import numpy as np

    from ..encodings.resample import resample

    if isinstance(layout.resampling, Taps):
        return _resize_taps(layout, table, image, grid)
    if grid is not None:
        raise ParameterError(
            f"{param('grid')} applies to a tower that takes a patch grid (Qwen3-VL's); {layout.model_type}'s table "
            f"is resized to an image: give {param('image_size')} HxW"
        )
    if layout.chain:
        return _resize_stages(layout, table, image)
    if layout.not_image is not None and image is not None:
        raise ParameterError(f"{param('image_size')} cannot apply: {layout.not_image}; drop {param('image_size')}")
    img = (layout.run_image or layout.native_image) if image is None else image
    if layout.conv is not None and layout.conv_checks and layout.conv_grid(img) != layout.grid_at(img):
        raise ParameterError(
            f"{param('image_size')} {_size(img)}: the patch convolution makes a {_size(layout.conv_grid(img))} grid "
            f"and {layout.model_type} resizes its table to {_size(layout.grid_at(img))} (size // "
            f"{_size(layout.patch)}): its code fails there; give a multiple of {_size(layout.patch)}"
        )
    if layout.conv is not None and min(layout.grid_at(img)) < 1:
        raise ParameterError(
            f"{param('image_size')} {_size(img)} is smaller than the patch convolution's "
            f"{_size(layout.conv[0])} kernel (with its padding); give a larger size"
        )
    if layout.fixed_input and layout.run_image is not None and img != layout.run_image:
        raise ParameterError(
            f"{layout.model_type}'s patch embeddings accept {_size(layout.run_image)} pixels only (its config's "
            f"image_size; it resizes its {_size(layout.native_grid)} table to that grid); drop {param('image_size')} "
            "or give that size"
        )
    if (layout.conv is None or layout.conv_checks) and (img[0] < layout.patch[0] or img[1] < layout.patch[1]):
        raise ParameterError(
            f"{param('image_size')} {_size(img)} is smaller than one {_size(layout.patch)} patch; give at least "
            f"{_size(layout.patch)}"
        )
    grid = layout.grid_at(img) if layout.not_image is None else layout.native_grid
    native = layout.native_grid
    before, after = layout.before_after()
    head, cells, tail = table[:before], layout.cells(table), table[table.shape[0] - after :]
    kept = _kept(layout, native, grid, img)
    rule = layout.resampling
    if rule is None and not kept:
        raise ParameterError(
            f"{layout.model_type} adds its {_grid_words(layout, native)} table without resampling: it runs at "
            f"{_size(layout.native_image)} only (pixels"
            + (f", or another image of its {native[0] * native[1]} patches" if layout.keep == "same_count" else "")
            + f"); drop {param('image_size')} or give that size"
        )
    if layout.height_from_tokens and grid[1] == 1 and grid != native:
        raise ParameterError(
            f"{param('image_size')} {_size(img)} makes a {_size(grid)} grid one patch wide: {layout.model_type}'s "
            "code takes the grid height as tokens // width with its class token counted and fails there; give a "
            f"width of at least {2 * layout.patch[1]}"
        )
    if kept or rule is None:
        out = np.asarray(cells)
        applied = "none: the native table, kept as it is (" + _KEEP_WORDS[layout.keep] + ")"
    else:
        dtype = np.dtype(str(np.asarray(cells[:1]).dtype)) if hasattr(cells, "dtype") else np.float32
        grid_in = np.asarray(cells, dtype=np.float32).reshape(native[0], native[1], -1)
        factors = rule.scale_factors(native, grid)
        if isinstance(rule, Bucketing):  # rows gathered, not interpolated: the table's own values, any dtype
            out = np.asarray(cells)[rule.indices(native[0], grid)]
            dtype = out.dtype
        elif factors is not None:
            out = resample(grid_in, rule=rule, scale_factor=factors)
        else:
            out = resample(grid_in, grid, rule)
        out = out.reshape(grid[0] * grid[1], -1)
        if dtype != np.float32:
            out = out.astype(dtype)
        applied = rule.describe()
    if layout.window is not None:  # SAM 2: the window table tiled over the grid and added
        ws = layout.window.shape[0]
        if grid[0] % ws or grid[1] % ws:
            raise ParameterError(
                f"{param('image_size')} {_size(img)} makes a {_size(grid)} grid, which the {ws}x{ws} window table "
                f"does not tile: {layout.model_type}'s code fails (or adds no rows) there; give a grid of multiples "
                f"of {ws}"
            )
        win = np.asarray(layout.window, dtype=out.dtype)
        tiled = win[np.arange(grid[0]) % ws][:, np.arange(grid[1]) % ws].reshape(grid[0] * grid[1], -1)
        out = out + tiled
        applied += f"; plus the {ws}x{ws} window table tiled"
    folded = ""
    if layout.extra_use == "added":  # ViTPose: the extra rows added to every grid row, no such token
        assert len(head) == 1, "one row added to the grid (ViTPose's class row)"
        out = out + np.asarray(head[0], dtype=out.dtype)
        folded = ", ".join(f"{i}:{n}" for i, n in enumerate(layout.extra))
    if layout.time is not None:  # TimeSformer: patch-major, frame-minor, each patch + its frame's row
        time = np.asarray(layout.time, dtype=out.dtype)
        out = (out[:, None, :] + time[None, :, :]).reshape(-1, out.shape[-1])
    if layout.extra_use == "tokens":
        parts = [np.asarray(head, dtype=out.dtype), out, np.asarray(tail, dtype=out.dtype)]
    else:
        parts = [out, np.asarray(tail, dtype=out.dtype)]
    rows = np.concatenate(parts, axis=0)
    meta = {
        "grid": _grid_words(layout, grid),
        "grid_offset": str(layout.offset()),
        "extra_rows": layout.extra_rows(grid),
        "resampling": f"engine={layout.engine}, {applied}",
        "image_size": _size(img),
        "patch_size": _size(layout.patch),
        "native_grid": _grid_words(layout, native),
    }
    if layout.frames or layout.time is not None:
        meta["grid_axes"] = "t,h,w" if layout.frames else "h,w,t"
        meta["row_order"] = "tubelets, frame-major" if layout.frames else "patch-major, frame-minor"
    if layout.time is not None:
        meta["time_rows"] = f"{len(layout.time)} frames, each added to every patch of its frame"
    if layout.not_image is not None:
        meta["grid_axes"] = "frequency,time"
        meta["row_order"] = "frequency-major"
        meta["image_size"] = f"{layout.native_image[0]}x{layout.native_image[1]} (mel bins x frames)"
    if layout.extra_use == "dropped":
        meta["dropped_rows"] = ", ".join(f"{i}:{n}" for i, n in enumerate(layout.extra)) + " (no such token)"
    if folded:
        meta["folded_rows"] = folded + " (added to every grid row; no such token)"
    if layout.unpositioned:
        meta["unpositioned_tokens"] = layout.unpositioned
    vision = _record(layout.model_type)
    if vision is not None and vision.not_read:
        meta["not_read"] = vision.not_read
    return rows, meta


def designed_repeats(path: str, config: Mapping[str, Any], *, image_size: Any = None, engine: str | None = None) -> Any:
    """Per row of the table the model adds at ``image_size`` (as :func:`vision_table`), the first row that the
    model's own arithmetic makes it equal to whatever its weights hold (a tiled grid, nearest upsampling, an edge
    clamped by the interpolation), or None when it keeps every row apart.

    Found by running the model's own rule (:func:`resize`, the layout read from this directory) over weights of
    distinct random rows (and random frame and window tables): two rows equal there are copies of one source row
    in every table the model makes; two rows it keeps apart are equal in the real table only if its weights are."""
    import numpy as np

    image = None if image_size is None else parse_image_size(image_size)
    layout, table, _file, _name = layout_of(path, config, engine)
    rng = np.random.default_rng(0)

    def tags(*shape: int) -> Any:
        return rng.standard_normal((*shape, 4)).astype(np.float32)

    tagged = replace(
        layout,
        time=None if layout.time is None else tags(len(layout.time)),
        window=None if layout.window is None else tags(*np.shape(layout.window)[:2]),
    )
    rows, _meta = resize(tagged, tags(int(table.shape[0])), image)
    _values, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    if len(first) == rows.shape[0]:
        return None
    return first[np.asarray(inverse).reshape(-1)]


def _grid_words(layout: Layout, grid: tuple[int, int]) -> str:
    """The grid in the metadata: ``HxW``, ``TxHxW`` (ViViT's tubelets) or ``HxWxT`` (TimeSformer's rows)."""
    if layout.frames:
        return f"{layout.frames}x{_size(grid)}"
    if layout.time is not None:
        return f"{_size(grid)}x{len(layout.time)}"
    return _size(grid)


_KEEP_WORDS = {
    "same_count_square": "a square image of the native patch count",
    "same_grid": "the native grid",
    "always": "the model never resamples it: any image of the native patch count",
    "never": "",
    "same_count": "the native patch count",
}


def _kept(layout: Layout, native: tuple[int, int], grid: tuple[int, int], image: tuple[int, int]) -> bool:
    """Whether the model adds its table as it is at this image size (the record's ``keep`` rule)."""
    if layout.keep == "same_count_square":  # HF: num_patches == num_positions and height == width (pixels)
        return grid[0] * grid[1] == native[0] * native[1] and image[0] == image[1]
    if layout.keep == "same_grid":  # timm: new_size == old_size
        return grid == native
    if layout.keep == "always":
        return grid == native
    if layout.keep == "same_count":  # TimeSformer: the token count equals the table's (the grid may differ)
        return grid[0] * grid[1] == native[0] * native[1]
    return False


def vision_table(
    path: str,
    config: Mapping[str, Any],
    *,
    image_size: Any = None,
    engine: str | None = None,
    layer: Any = None,
    grid: Any = None,
    frames: Any = None,
    stage: Any = None,
) -> tuple[Any, dict[str, str]]:
    """``(rows, metadata)``: the position rows a vision model (its directory ``path``) adds at ``image_size``
    (``H``, ``HxW`` or ``(H, W)``; None: its native size), under ``engine`` (``hf``, the model's own code, or
    ``timm``); every extra row in the model's order, and the grid in the metadata. ``layer`` (YOLOS): the table
    added after encoder layer ``layer`` instead of the first (``mid_position_embeddings[layer]``). ``grid``
    (``HxW`` patches): the patch grid of a tower that takes one (Qwen3-VL's), in place of ``image_size``.
    ``frames``: a video model's frame count, in place of its config's ``num_frames`` (:func:`at_frames`).
    ``stage``: the stage whose table to read, of a model with one per stage (PVT)."""
    from .. import __version__

    image = None if image_size is None else parse_image_size(image_size)
    layout, table, file, name = layout_of(path, config, engine, stage)
    said = None
    if layer is not None:
        table, name, said = _layer_table(path, config, layout, table, layer)
    frames_said = None
    if frames is not None:
        layout, frames_said = at_frames(layout, frames)
    rows, meta = resize(layout, table, image, grid)
    if frames_said is not None:
        meta["frames"] = frames_said
    head = {
        "posenc_version": __version__, "source": "model weights", "model_type": layout.model_type,
        "weights_file": os.path.basename(file), "weights_tensor": name, "reference": layout.reference,
        "model_dir": path,
    }  # fmt: skip
    if said is not None:
        head["layer"] = said
    return rows, {**head, **meta}


def at_frames(layout: Layout, frames: Any) -> tuple[Layout, str]:
    """The layout of a video model run on ``frames`` frames (``-p frames=N``), and what the model does, in words.

    TimeSformer (``TimesformerEmbeddings.forward``, transformers 5.24 timesformer/modeling_timesformer.py
    l.130-137): another frame count resizes ``time_embeddings`` (``1 x frames x dim``, transposed) with
    ``F.interpolate(size=frames, mode="nearest")``; each patch of frame ``t`` then gets row ``t`` of that. ViViT
    (vivit/modeling_vivit.py ``VivitTubeletEmbeddings`` l.54-67, ``VivitEmbeddings.forward`` l.126-142): the
    tubelet convolution makes ``frames // tubelet_size[0]`` tubelets (floored), and the table, of the config's
    tubelet count, is added as it is (``interpolate_pos_encoding`` keeps every tubelet row), so any other tubelet
    count fails in the model's forward: refused by name. A table without frames refuses the option."""
    text = str(frames).strip()
    if isinstance(frames, bool) or not text.isdigit() or int(text) < 1:
        raise ParameterError(f"{param('frames')} {frames!r} is not a frame count; give a positive integer")
    n = int(text)
    if layout.time is not None:  # TimeSformer: the per-frame table resized nearest to n rows
        import numpy as np

        from ..encodings.resample import NEAREST, Resampling, resample

        old = np.asarray(layout.time)
        if n == old.shape[0]:
            return layout, f"{n} (the config's num_frames: its time table as it is)"
        time = resample(old.astype(np.float32)[:, None, :], (n, 1), Resampling(NEAREST))[:, 0, :].astype(old.dtype)
        said = f"{n}: the {old.shape[0]} frame rows of its time table resized nearest, size={n} (TimesformerEmbeddings)"
        return replace(layout, time=time), said
    if layout.frames is not None:  # ViViT: tubelets of tubelet_frames frames, the table's count only
        tt = layout.tubelet_frames
        if n < tt:
            raise ParameterError(
                f"{param('frames')} {n} is fewer than one tubelet ({tt} frames, tubelet_size[0]): "
                f"{layout.model_type}'s tubelet convolution fails there; give {layout.frames * tt} frames"
            )
        if n // tt != layout.frames:
            raise ParameterError(
                f"{param('frames')} {n} makes {n // tt} tubelets of {tt} frames and {layout.model_type} adds its "
                f"{layout.frames}-tubelet table as it is (interpolate_pos_encoding resizes no frame axis): its "
                f"forward fails there; give {layout.frames * tt} to {layout.frames * tt + tt - 1} frames"
            )
        return layout, f"{n}: {layout.frames} tubelets of {tt} frames (floored), the config's count: its table as it is"
    raise ParameterError(
        f"{param('frames')} applies to a video model's table (ViViT, TimeSformer); {layout.model_type}'s has no "
        f"frames: drop it"
    )


def further_tables(path: str, config: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The model's position tables beyond the one :func:`vision_table` reads by default, each as ``(label,
    keyword arguments of vision_table)``: every later stage of a model with a table per stage (PVT's record
    ``stages``: ``stage=K``), every per-layer table of a model that adds one after encoder layers (YOLOS's record
    ``per_layer``, when its config switch is on: ``layer=N``). Empty for a model with one table. An audit reads
    each, so that a check covers every table the weights hold."""
    read = reading(config, path)
    vision, mt, sub = read.vision, read.defaults_of, read.config
    out: list[tuple[str, dict[str, Any]]] = []
    if vision.stages is not None:
        count_key = vision.stages[1]
        n = _config_int(sub, count_key, _default(mt, vision, count_key), path)[0]
        out += [(f"stage {k}", {"stage": k}) for k in range(1, n)]
    if vision.per_layer is not None and _flag(sub, mt, vision, vision.per_layer[1]):
        stack, _file, _name = read_table(path, vision.per_layer[0])
        out += [(f"layer {n}", {"layer": n}) for n in range(int(stack.shape[0]))]
    return out


def _layer_table(path: str, config: Mapping[str, Any], layout: Layout, first: Any, layer: Any) -> tuple[Any, str, str]:
    """``(table, tensor name, words)``: the per-layer table ``layer`` of a model that adds one after each encoder
    layer but the last (YOLOS ``mid_position_embeddings``: ``(layers - 1) x 1 x rows x dim``), laid out as the
    first table."""
    vision = _record(layout.model_type)
    if vision is None or vision.per_layer is None or layout.engine != "hf":
        raise ParameterError(
            f"{param('layer')} applies to a model that adds a position table per layer (YOLOS); "
            f"{layout.model_type} adds one table: drop it"
        )
    suffix, switch = vision.per_layer
    if not _flag(config, layout.model_type, vision, switch):
        raise ParameterError(f"{path}: config key {switch} is false: no per-layer tables; drop {param('layer')}")
    stack, file, name = read_table(path, suffix)
    shape = list(stack.shape)
    if len(shape) != 4 or shape[1] != 1 or shape[2:] != list(first.shape):
        raise ParameterError(
            f"{file}: tensor {name} has shape {shape}; the model keeps (layers - 1) x 1 x {first.shape[0]} x "
            f"{first.shape[1]} (its first table's rows); the weights are not this model's"
        )
    text = str(layer).strip()
    if isinstance(layer, bool) or not text.isdigit() or int(text) >= shape[0]:
        raise ParameterError(
            f"{param('layer')} {layer!r} is not a layer with a table: give 0..{shape[0] - 1} (the table added after "
            f"encoder layer N; the last layer adds none)"
        )
    n = int(text)
    return stack[n, 0], f"{name}[{n}]", f"{n}: added after encoder layer {n} ({suffix}[{n}])"


def describe(path: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """What ``posenc kinds`` says of a vision model: its record's rule, each value with where it came from (the
    native grid from the config; a timm checkpoint's from its weights, when ``path`` holds them)."""
    out: dict[str, Any] = {"layer_type": None, "layer_types": [], "ignored": {}, "warnings": []}
    rule: Resampling | Bucketing | Taps | None
    if is_timm_config(config):
        out.update(model_type=f"timm:{config.get('architecture')}", family="timm ViT", kind="learned", reference=_TIMM)
        rule, keep, tensor, extra = TIMM_RESAMPLING, "same_grid", "pos_embed", "the cls_token and reg_token it holds"
        size = config["pretrained_cfg"].get("input_size")
        out["image_size"] = {"value": size[1:] if isinstance(size, list) else size, "from": "pretrained_cfg.input_size"}
        out["patch_size"] = {"value": "the kernel of patch_embed.proj.weight", "from": "the weights"}
    else:
        read = reading(config, path)
        vision, config, mt, own = read.vision, read.config, read.defaults_of, read.model_type
        out.update(model_type=own, family="vision table", kind="learned", reference=read.reference)
        off = _switched_off(mt, vision, config, read.absent)
        if off is not None:  # the config turns the table off: said first, the rule after it
            out["table"] = {"value": f"none (config key {off[0]} is {off[1]})", "from": f"the model's code: {off[2]}"}
        rule, keep, tensor = _rule(vision), vision.keep, vision.tensor
        extra = ", ".join(vision.extra) + (" (after the grid)" if vision.extra_at == "end" else "") or "none"
        if vision.before is not None:
            extra = f"config key {vision.before[0]} {vision.before[2]} rows ({vision.before[2]}0, ...)"
        if vision.extra_use != "tokens":
            extra = f"{extra} ({vision.extra_use}: no such token)"
        if vision.after is not None:
            extra += f"; after the grid: config key {vision.after[0]} {vision.after[2]} rows"
        if vision.strides is not None:
            keys: tuple[str, ...] = vision.strides
        elif vision.stages is not None:  # PVT: a table per stage
            keys = ("image_size", *vision.stages[1:])
            extra = "a table per stage (-p stage=K); the last stage's has cls before its grid"
        elif vision.tubelets is not None:
            keys = ("image_size", vision.tubelets, "tubelet_size")
        else:
            keys = (vision.grid_from,) if vision.grid_from.startswith("num_") else (vision.image_key,)
        if vision.merge is not None:
            keys += (vision.merge,)
        if vision.time is not None:
            keys += (vision.time[1],)
        for key in keys:
            from_config = key in config
            value = config.get(key, _default(mt, vision, key))
            out[key] = {"value": value, "from": f"config key {key}" if from_config else f"default of {mt}"}
        if vision.tubelets is None and vision.stages is None:
            value = config.get("patch_size", _default(mt, vision, "patch_size"))
            where = "config key patch_size" if "patch_size" in config else f"default of {mt}"
            out["patch_size"] = {"value": value, "from": where}
        if vision.unpositioned is not None:
            key, default, name = vision.unpositioned
            known = _default(mt, vision, key)
            count = config.get(key, known if known is not None else default)
            out["unpositioned"] = {"value": f"{count} {name} tokens after cls", "from": f"config key {key}"}
    out["weights_tensor"] = {"value": tensor, "from": "the model's code"}
    out["extra_rows"] = {"value": extra, "from": "the model's code"}
    said = rule.describe() if rule is not None else "none: it runs at its native size only"
    if not is_timm_config(config) and read.vision.stages is not None:
        said = "none: each stage's table added as it is, at any image whose stages keep their tables' patch counts"
    out["resampling"] = {"value": said, "from": "the model's code, at another --image-size"}
    out["kept_when"] = {"value": _KEEP_WORDS[keep] or "never", "from": "the model's code"}
    return out


# ----- the reader interface (models/readers.py: a record with ``vision`` is read here) ----------------------------
def _in_weights(config: Mapping[str, Any]) -> str:
    mt = config.get("model_type") or config.get("architecture")
    return (
        f"{mt}'s position table is learned over its patch grid: it lives in the weights; pass the model's directory "
        f"(config.json + model.safetensors) as the source, with {param('image_size')} for another image size"
    )


def from_model_config(config: dict[str, Any], **options: Any) -> tuple[str, dict[str, Any], list[str], dict[str, str]]:
    """A vision table is read from the weights, not built from the config: one line saying where it lives."""
    raise ParameterError(_in_weights(config))


def model_config_layers(config: dict[str, Any], **options: Any) -> dict[str, tuple[str, dict[str, Any]] | None]:
    raise ParameterError(_in_weights(config))


def model_config_notes(config: dict[str, Any], **options: Any) -> dict[str, str]:
    return {}


def describe_model_config(config: dict[str, Any], **options: Any) -> dict[str, Any]:
    return describe("", config)


# ----- the table of docs/vision.md (tools/vision_doc.py writes it) ----------------------------------------------
def _rule_words(vision: Vision) -> tuple[str, str, str]:
    rows = ", ".join(vision.extra) or "none"
    if vision.before is not None:
        rows = f"{vision.before[0]} {vision.before[2]} rows (default {vision.before[1]})"
    if vision.extra and vision.extra_at == "end":
        rows += " (after the grid)"
    if vision.unpositioned is not None:
        rows += f"; {vision.unpositioned[2]} tokens unpositioned"
    rule = _rule(vision)
    said = rule.describe() if rule is not None else "none: native size only"
    return rows, said, _KEEP_WORDS[vision.keep] or "never"


def towers_markdown() -> str:
    """Markdown of every reviewed rule with the code it was read from and every inventory type read by it, then
    the types refused, grouped by the code they run (docs/vision.md, between its ``towers`` markers)."""
    by_code: dict[str, list[str]] = {}
    refused: dict[str, list[str]] = {}
    for mt, entries in sorted(_observations().items()):
        rec = RECORDS.get(mt)
        if rec is not None and rec.vision is not None:
            continue
        try:
            reading({"model_type": mt})
        except ParameterError as exc:
            method = entries[0].get("method") if len(entries) == 1 else None
            why = str(exc).split(" with ", 1)[-1].split(", which")[0] if method else "not observed running"
            refused.setdefault(why if len(entries) == 1 else "several learned vision tables", []).append(mt)
            continue
        by_code.setdefault(str(entries[0].get("fingerprint")), []).append(mt)
    lines = [
        "| rule (record) | table rows | resizing | kept as it is when | code it was read from, and the types that run it |",
        "|---|---|---|---|---|",
    ]
    for mt, rec in RECORDS.items():
        if rec.vision is None or not rec.vision.fingerprints:
            continue
        rows, said, kept = _rule_words(rec.vision)
        codes = []
        for fp in rec.vision.fingerprints:
            found = {str(e["method"]) for t in [*by_code.get(fp, []), mt] for e in observed(t)
                     if e.get("fingerprint") == fp and e.get("method")}  # fmt: skip
            types = ", ".join(f"`{t}`" for t in by_code.get(fp, [])) or "none other"
            codes.append(f"{' / '.join(f'`{n}`' for n in sorted(found))} (`{fp}`): {types}")
        lines.append(f"| `{mt}` | {rows} | {said} | {kept} | {'; '.join(codes)} |")
    lines += ["", "Refused, by the code their tower runs (one line each, naming the class and method):", ""]
    for why, names in sorted(refused.items()):
        lines.append(f"* {why}: {', '.join(f'`{t}`' for t in names)}")
    return "\n".join(lines) + "\n"
