"""A vision tower's 2-D rotary tables from a model's config.json (kind ``rope-2d``).

Which tower, and how it rotates, is what the inventory observed (``vision_rotary`` of
``data/transformers_inventory.json``, made by ``tools/inventory/vision_rotary.py``): the sub-config the tower's
rotary module is built from, the rotation its own attention applies (its ``pairing``) and the ``rope-2d`` presets
that reproduce that rotation. The tower's record (:data:`.records.VISION_ROTARY`, keyed by the tower config's
``model_type``) says which config keys give the head width, the base, the spatial merge and the window, each
cited from the tower's code; its preset must be one the observation matched, or the tower is refused.

A config that *is* a tower (``model_type`` ``pixtral``, ``qwen2_vl_vision``, ...) is read as one. A multimodal
config's tower is read with ``tower="vision"`` (``--tower vision``); without it the language model is read as
before (``tower="language"`` says so explicitly). The patch grid comes from ``grid`` (``--grid HxW``) or from
``image_size`` (``--image-size HxW`` in pixels, ``H`` for a square) through the tower's patching: ``H //
patch_size`` patches per side (the patch convolution's floor), refused where the model's processor would resize the
image first (a side not a multiple of ``patch_size * spatial_merge_size``: Qwen2-VL's ``smart_resize``).

A timm checkpoint's own config.json (``architecture`` + ``pretrained_cfg``) names only its architecture; what timm
builds for it is ``data/timm_rotary.json`` (``tools/inventory/timm_rotary.py``, from timm 1.0.31's
``models/eva.py``). The architectures that rotate with ``RotaryEmbeddingCat`` over its index grid (EVA02,
Perception Encoder, ``vit_*_rope_*``) are read as the ``eva02`` preset with their ``ref_feat_shape``,
``rope_grid_offset``, ``rope_grid_indexing`` (``xy``: width on the first pairs), ``rope_temperature`` and prefix
tokens; one that also adds a learned table gives that table unless ``--tower vision`` is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ParameterError, param
from .records import TRANSFORMERS_VERSION, VISION_ROTARY, VisionRotary, inventory_entry, model_type_of

TOWERS = ("language", "vision")


def _observed(model_type: str | None) -> list[dict[str, Any]]:
    entry = inventory_entry(model_type) if isinstance(model_type, str) else None
    return [e for e in (entry or {}).get("vision_rotary") or [] if e.get("status") == "ok"]


def _sub(config: Mapping[str, Any], path: list[str]) -> dict[str, Any]:
    node: Any = config
    for part in path:
        node = node.get(part) if isinstance(node, Mapping) else None
        if node is None:
            return {}  # the sub-config left out: the tower's class defaults
    if not isinstance(node, Mapping):
        raise ParameterError(f"config key {'.'.join(path)} is not an object; a vision tower's config is")
    return dict(node)


def _has_grid_table(model_type: Any) -> bool:
    """The model type's record also has a learned grid table (:mod:`.vision` reads it from the weights)."""
    from .records import RECORDS

    rec = RECORDS.get(model_type) if isinstance(model_type, str) else None
    return rec is not None and rec.vision is not None


def _has_vision_table(model_type: Any) -> bool:
    """The model type's vision tower adds a learned grid table: its record's (CLIP's, through its tower), or one
    the inventory saw its code place (Qwen3-VL's)."""
    from .vision import observed

    return _has_grid_table(model_type) or (
        isinstance(model_type, str) and any(e.get("method") for e in observed(model_type))
    )


def tower_of(config: Mapping[str, Any], tower: str | None) -> tuple[VisionRotary, dict[str, Any], dict, str] | None:
    """``(record, tower config, observation, where)`` of the vision tower ``tower`` names (None: the config
    itself when it is a tower, unless it also adds a learned grid table, which is then read; else None: the
    language model is read)."""
    if tower is not None and tower not in TOWERS:
        raise ParameterError(f"{param('tower')} {tower!r} is not a tower; choose from: {', '.join(TOWERS)}")
    mt = model_type_of(config, strict=False)[0]
    seen = _observed(mt)
    itself = [e for e in seen if e.get("sub_config") == []]
    if itself and tower is None and _has_grid_table(mt):
        return None  # a tower that also adds a learned grid table (Llama 4's): that table, --tower vision its rotary
    if itself:  # the config is a vision tower
        if tower == "language":
            raise ParameterError(f"{mt} is a vision tower's config: it has no language model; drop {param('tower')}")
        obs, sub, where = itself[0], dict(config), str(mt)
    elif tower != "vision":
        return None
    else:
        subs = {tuple(e["sub_config"]) for e in seen}
        if not subs and _has_vision_table(mt):
            return None  # no rotary tower observed, but a learned vision table: that table (.vision reads it)
        if not subs:
            raise ParameterError(
                f"model type {mt} has no vision tower with a rotary embedding in transformers {TRANSFORMERS_VERSION}'s "
                f"inventory; drop {param('tower')}"
            )
        if len(subs) > 1:
            raise ParameterError(f"model type {mt} has several rotary vision towers ({', '.join(map('.'.join, subs))})")
        obs = seen[0]
        sub = _sub(config, list(obs["sub_config"]))
        where = ".".join(obs["sub_config"])
    tmt = sub.get("model_type") or obs.get("tower_model_type")
    own = [e for e in _observed(tmt) if e.get("sub_config") == []]
    if own and tmt != obs.get("tower_model_type"):
        obs = own[0]  # a tower of another type than the wrapper's default (llava with a pixtral vision_config)
    rec = VISION_ROTARY.get(str(tmt))
    if rec is None or rec.preset not in (obs.get("matches") or []):
        raise ParameterError(
            f"its vision tower ({tmt}) rotates patches in a way posenc has no record of (inventory: pairing "
            f"{obs.get('pairing')}, reproduced by {', '.join(obs.get('matches') or []) or 'no rope-2d preset'})"
        )
    return rec, sub, obs, f"{where} ({tmt})" if where != tmt else str(tmt)


def _int(value: Any, key: str) -> int:
    if isinstance(value, (list, tuple)) and value and all(v == value[0] for v in value):
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(f"vision config key {key}={value!r} is not a positive integer")
    return value


def _sides(text: str, what: str) -> tuple[int, int]:
    parts = str(text).lower().replace("×", "x").split("x")
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        nums = []
    if len(nums) == 1:
        nums = nums * 2
    if len(nums) != 2 or min(nums) < 1:
        raise ParameterError(
            f"{param(what)} {text!r} is not HxW (or H for a square) of positive sizes; use e.g. 448x308"
        )
    return nums[0], nums[1]


def timm_record(architecture: str) -> dict[str, Any] | None:
    """What timm builds for ``architecture`` (``data/timm_rotary.json``, made by ``tools/inventory/timm_rotary.py``
    from timm's own ``models/eva.py``), or None when it is no EVA-family architecture there; a pretrained tag
    (``eva02_base_patch14_224.mim_in22k``) names the architecture before the dot."""
    import json
    from functools import cache
    from pathlib import Path

    @cache
    def load() -> dict[str, Any]:
        path = Path(__file__).resolve().parent / "data" / "timm_rotary.json"
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        return data

    archs = load().get("architectures") or {}
    rec = archs.get(architecture, archs.get(architecture.split(".", 1)[0]))
    return rec if isinstance(rec, dict) else None


#: timm's ``grid_type`` of integer patch coordinates (``_build_grid``), the grid the ``eva02`` preset rotates by
_INDEX_GRID = "index"

#: ``model_args`` keys of a timm config.json that change no position: anything else there is refused (it could).
_TIMM_ARGS_KEPT = frozenset({"in_chans", "num_classes", "global_pool", "drop_rate", "drop_path_rate", "pos_drop_rate",
                             "proj_drop_rate", "attn_drop_rate", "patch_drop_rate"})  # fmt: skip


def _timm(config: Mapping[str, Any], given: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, str]] | None:
    """A timm checkpoint's own config.json whose architecture rotates its patches (EVA02, timm's rotary ViTs):
    ``("rope-2d", preset eva02 with the architecture's parameters, notes)``; None when the learned table is read
    (no rotary, or a learned table too and no ``--tower vision``)."""
    arch = str(config.get("architecture"))
    rec = timm_record(arch)
    tower = given.pop("tower", None)
    if tower is not None and tower not in TOWERS:
        raise ParameterError(f"{param('tower')} {tower!r} is not a tower; choose from: {', '.join(TOWERS)}")
    if rec is None or rec.get("rope") is None:
        if tower == "vision":
            raise ParameterError(f"timm architecture {arch} has no rotary embedding (timm 1.0.31 models/eva.py) "
                                 f"posenc knows of; drop {param('tower')}")  # fmt: skip
        return None
    if tower == "language":
        raise ParameterError(f"{arch} is a timm vision model: it has no language model; drop {param('tower')}")
    if tower is None and rec.get("abs_pos_embed"):
        return None  # it adds a learned table too: that table (read from the weights), --tower vision its rotary
    where = f"timm:{arch}"
    if rec["rope"] != "RotaryEmbeddingCat" or rec.get("grid_type") != _INDEX_GRID or rec.get("in_pixels"):
        raise ParameterError(
            f"{where} rotates with timm's {rec['rope']} (rope_type {rec.get('rope_type')}: "
            f"{'learned frequencies per layer, in the weights' if rec.get('rope_type') == 'mixed' else 'coordinates centred and normalised'}"
            "), which posenc does not reproduce; the rope-2d eva02 preset is RotaryEmbeddingCat's index grid"
        )  # fmt: skip
    args = config.get("model_args") or {}
    if not isinstance(args, Mapping):
        raise ParameterError(f"{where}: model_args={args!r} is not an object")
    unread = sorted(set(args) - _TIMM_ARGS_KEPT - {"img_size"})
    if unread:
        raise ParameterError(f"{where}: model_args.{unread[0]} could change its rotary and posenc does not model it; "
                             "drop it")  # fmt: skip
    patch = tuple(int(p) for p in rec["patch_size"])
    pcfg = config.get("pretrained_cfg") or {}
    size = args.get("img_size", (pcfg.get("input_size") or [None, *rec["img_size"]])[1:])
    native = tuple(size) if isinstance(size, (list, tuple)) else (size, size)
    if len(native) != 2 or not all(isinstance(v, int) and v >= 1 for v in native):
        raise ParameterError(f"{where}: its image size {size!r} is not [height, width]; fix pretrained_cfg.input_size")
    params: dict[str, Any] = {
        "preset": "eva02", "dim": int(rec["dim"]), "base": float(rec["temperature"]),
        "prefix_rows": int(rec["num_prefix_tokens"]), "registers": int(rec.get("num_reg_tokens", 0)), "axes": "hw" if rec["grid_indexing"] == "ij" else "wh",
        "position_start": float(rec["grid_offset"]), "layout": "half" if rec.get("rotate_half") else "interleaved",
    }  # fmt: skip
    if rec.get("ref_feat_shape") is not None:
        ref_h, ref_w = rec["ref_feat_shape"]
        params["ref_grid"] = f"{ref_h}x{ref_w}"
    notes = {"timm_architecture": arch, "patch_size": f"{patch[0]}x{patch[1]}",
             "reference": "timm 1.0.31 timm/models/eva.py Eva (rope, num_prefix_tokens), "
                          "timm/layers/pos_embed_sincos.py RotaryEmbeddingCat (_build_grid, build_rotary_pos_embed)"}  # fmt: skip
    grid, image = given.pop("grid", None), given.pop("image_size", None)
    if grid is not None and image is not None:
        raise ParameterError(f"{param('grid')} and {param('image_size')} both give the patch grid; give one")
    if grid is not None:
        h, w = _sides(str(grid), "grid")
    else:
        ih, iw = _sides(str(image), "image_size") if image is not None else native
        if min(ih // patch[0], iw // patch[1]) < 1:
            raise ParameterError(f"{param('image_size')} {ih}x{iw} is smaller than one {patch[0]}x{patch[1]} patch; "
                                 f"give at least {patch[0]}x{patch[1]}")  # fmt: skip
        h, w = ih // patch[0], iw // patch[1]
        notes["image_size"] = f"{ih}x{iw}"
    params["grid"] = f"{h}x{w}"
    return "rope-2d", params, notes


def from_config(config: Mapping[str, Any], given: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, str]] | None:
    """``("rope-2d", parameters, metadata notes)`` of the vision tower ``given["tower"]`` names (or the config when
    it is a tower); None when the language model is read. Pops ``tower``, and ``grid`` / ``image_size`` when it
    reads a tower. A timm checkpoint's own config.json whose architecture rotates (EVA02, timm's rotary ViTs) is
    read as timm builds it (:func:`_timm`)."""
    from .vision import is_timm_config

    if is_timm_config(config):
        return _timm(config, given)
    found = tower_of(config, given.pop("tower", None))
    if found is None:
        return None
    rec, sub, obs, where = found
    dv = obs.get("config_defaults") or {}

    def get(key: str) -> Any:
        return sub[key] if key in sub else dv.get(key)

    rope = sub.get("rope_parameters") or {}
    if not isinstance(rope, Mapping):
        raise ParameterError(f"{where}: rope_parameters={rope!r} is not an object")
    rtype = rope.get("rope_type", rope.get("type"))
    if rtype is not None and rtype not in rec.rope_types:
        raise ParameterError(f"{where}: rope_type {rtype!r}; its rotary class accepts only {', '.join(rec.rope_types)}")
    unread = sorted(set(rope) - {"rope_type", "type", "rope_theta"})
    if unread:
        raise ParameterError(f"{where}: rope_parameters.{unread[0]} is not read by the tower's rotary class as posenc "
                             "models it; drop it")  # fmt: skip
    theta = rope.get("rope_theta", sub.get("rope_theta", dv.get("rope_theta", 10000.0)))
    width, heads = _int(get(rec.width), rec.width), _int(get(rec.heads), rec.heads)
    head = _int(sub["head_dim"], "head_dim") if rec.head_dim == "config" and "head_dim" in sub else width // heads
    patch = _int(get("patch_size"), "patch_size")
    merge = _int(get(rec.merge), rec.merge) if rec.merge else 1
    params: dict[str, Any] = {"preset": rec.preset, "dim": head, "base": float(theta)}
    notes = {"hf_tower": where, "patch_size": str(patch)}
    if rec.merge:
        params["merge"] = merge
    if rec.window:
        params["window"] = _int(get(rec.window), rec.window) // merge // patch
        notes["window_size"] = str(get(rec.window))
    if rec.note:
        notes["tower_note"] = rec.note
    grid, image = given.pop("grid", None), given.pop("image_size", None)
    if grid is not None and image is not None:
        raise ParameterError(f"{param('grid')} and {param('image_size')} both give the patch grid; give one")
    if image is not None:
        ih, iw = _sides(str(image), "image_size")
        if min(ih, iw) < patch:
            raise ParameterError(
                f"{param('image_size')} {image} is smaller than one patch ({patch}x{patch} pixels); give at least "
                f"{patch * merge}x{patch * merge}"
            )
        unit = patch * merge
        if merge > 1 and (ih % unit or iw % unit):
            up = f"{-(-ih // unit) * unit}x{-(-iw // unit) * unit}"
            raise ParameterError(
                f"{param('image_size')} {image} is not a multiple of {unit} pixels (patch {patch} x spatial merge "
                f"{merge}): the model's processor resizes it first (smart_resize); give the resized size, e.g. {up}"
            )
        h, w = ih // patch, iw // patch
        notes["image_size"] = f"{ih}x{iw}"
    elif grid is not None:
        h, w = _sides(str(grid), "grid")
    elif rec.grid == "fixed" or get("image_size") is not None:
        side = _int(get("image_size"), "image_size") // patch
        h, w = side, side
    else:
        raise ParameterError(
            f"{where} takes images of any size; give the patch grid with {param('grid')} HxW or the image with "
            f"{param('image_size')} HxW"
        )
    if rec.grid == "fixed":
        side = _int(get("image_size"), "image_size") // patch
        if (h, w) != (side, side):
            raise ParameterError(
                f"{where} rotates one fixed {side}x{side} grid (image_size {get('image_size')} // patch_size "
                f"{patch}), not {h}x{w}; its processor tiles larger images; set image_size in the config for another"
            )
    if h % merge or w % merge:
        raise ParameterError(
            f"grid {h}x{w} does not fit spatial_merge_size {merge}: both sides must be multiples of {merge}; use "
            f"e.g. {-(-h // merge) * merge}x{-(-w // merge) * merge}"
        )
    params["grid"] = f"{h}x{w}"
    return "rope-2d", params, notes
