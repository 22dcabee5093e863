"""The vision towers' rotary embeddings in the inventory, observed from the towers' own attention.

make_inventory.py observes the language model's rotary class; this pass takes every other module its scan lists in
``rotary_modules`` (a vision tower's) and writes, per model type, ``vision_rotary``: a list of

* ``module``: ``"path Class"`` as in ``rotary_modules``; ``tower``: the module that owns it (``path Class``), a
  vision tower because its forward takes an image (``pixel_values``) or a patch grid (``grid_thw``);
* ``sub_config``: the path of the config the module was built from (``["vision_config"]``, ``[]`` when the
  model type is the tower itself); ``tower_model_type``: that config's ``model_type``;
* ``apply_function``: the function the tower's attention called with the tables;
* ``pairing``: where the unit vectors of one head land, classified as make_inventory's ``classify`` does
  (``half``, ``interleaved``, ...);
* ``grid``, ``rows``: the patch grid the tower ran on (H x W, from its ``image_size`` when its table is fixed) and the
  rows its attention rotated;
* ``matches``: the ``rope-2d`` presets whose table (posenc, at the tower's default ``rope_theta`` and head width)
  gives the same rotation on every one of those rows, within 1e-5 (none: posenc does not reproduce it);
* ``config_defaults``: the numbers of the tower's default config (as the model type builds it; ``rope_theta`` from
  its ``rope_parameters``), which a config.json that leaves a key out gets;
* ``status``: ``ok`` or why it could not be observed.

How: the tower (the rotary module's owner) is built on the CPU from a copy of its config with one layer, and run
once on a zero image of a grid that is not square (its forward's own input: ``grid_thw`` with flattened patches,
or ``pixel_values``); every function of the modeling module whose name applies a rotary embedding is wrapped, and
the first call is run again with the head's unit vectors in place of the queries: ``rot[n, :, j]`` is where the
tower's own arithmetic sends ``e_j`` at row ``n``.

    /work/side/venv/bin/python tools/inventory/vision_rotary.py pixtral qwen2_vl   # merged into the data
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import re
import signal
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
#: the grid a tower with a dynamic table runs on (not square, a multiple of every merge size in use)
GRID = (12, 20)
_APPLY = re.compile(r"apply_rot|rotary_emb$|apply.*rotary")
#: seconds one model type may take
TIMEOUT = 120


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"timed out after {TIMEOUT} s")


#: forward parameters that make a module an image tower (its input is an image or its patch grid)
_IMAGE_INPUTS = {"pixel_values", "grid_thw"}


def _apply_functions(module: Any) -> dict[str, Any]:
    return {
        n: f
        for n, f in vars(module).items()
        if inspect.isfunction(f) and f.__module__ == module.__name__ and _APPLY.search(n)
    }


def _get(cfg: Any, *names: str, default: Any = None) -> Any:
    for n in names:
        v = getattr(cfg, n, None)
        if v is not None:
            return v
    return default


def _side(v: Any) -> int:
    return int(v[0] if isinstance(v, (list, tuple)) else v)


def _inputs(tower: torch.nn.Module, cfg: Any) -> tuple[tuple[int, int], dict[str, Any]]:
    """The tower's forward input for a zero image, by its forward's parameters; and the grid it covers."""
    params = inspect.signature(type(tower).forward).parameters
    patch = _side(_get(cfg, "patch_size", default=14))
    channels = int(_get(cfg, "in_channels", "num_channels", default=3))
    if "grid_thw" in params:
        h, w = GRID
        per = channels * int(_get(cfg, "temporal_patch_size", default=1)) * patch * patch
        return (h, w), {"hidden_states": torch.zeros(h * w, per), "grid_thw": torch.tensor([[1, h, w]])}
    image = _get(cfg, "image_size")
    fixed = "image_sizes" not in params  # a tower that takes any image size says so (Pixtral's image_sizes)
    h, w = (_side(image) // patch,) * 2 if fixed and image is not None else GRID
    return (h, w), {"pixel_values": torch.zeros(1, channels, h * patch, w * patch)}


def _replay(fn: Any, args: tuple, kwargs: dict, heads: int, rows: int) -> np.ndarray:
    """``fn`` called again with unit vectors in place of the queries (and keys): ``rot[n, :, j]``."""
    q = args[0]
    d = int(q.shape[-1])
    seq = [i for i in range(q.dim() - 1) if q.shape[i] == rows]
    head = [i for i in range(q.dim() - 1) if q.shape[i] == heads and i not in seq[-1:]]
    if not seq or not head:
        raise RuntimeError(f"cannot tell the rows and heads of the queries {tuple(q.shape)}")
    s_ax, h_ax = seq[-1], head[0]
    shape = [1] * q.dim()
    shape[s_ax], shape[h_ax], shape[-1] = rows, d, d
    eye = torch.eye(d).reshape([d if i == h_ax else 1 for i in range(q.dim() - 1)] + [d])
    unit = eye.expand(shape).contiguous().to(q.dtype)
    names = list(inspect.signature(fn).parameters)
    pair = len(names) > 1 and len(args) > 1 and torch.is_tensor(args[1]) and args[1].shape == q.shape
    out = fn(unit, unit.clone(), *args[2:], **kwargs) if pair else fn(unit, *args[1:], **kwargs)
    out = out[0] if isinstance(out, (tuple, list)) else out
    o = out.movedim((s_ax, h_ax, out.dim() - 1), (0, 1, 2)).reshape(rows, d, d, -1)[..., 0]
    return o.permute(0, 2, 1).detach().float().numpy()  # o[n, j] is the image of e_j at row n


def observe(mt: str) -> list[dict[str, Any]]:
    """The ``vision_rotary`` entries of model type ``mt``: its rotary modules whose owner takes an image."""
    import transformers
    from make_inventory import CONFIG_MAPPING, classify, config_path, model_class, scan_modules

    cfg = transformers.AutoConfig.for_model(mt)
    pkg = CONFIG_MAPPING[mt].__module__.rsplit(".", 1)[0]
    module = importlib.import_module(pkg + ".modeling_" + pkg.rsplit(".", 1)[1])
    mcls = model_class(cfg, module)
    if mcls is None:
        return []
    with torch.device("meta"):
        model = mcls(copy.deepcopy(cfg))
    rotary = scan_modules(model)["rotary"]
    out = []
    for path, rot in rotary:
        owner = path.rsplit(".", 1)[0] if "." in path else ""
        tower = model.get_submodule(owner)
        if not _IMAGE_INPUTS & set(inspect.signature(type(tower).forward).parameters):
            continue  # not a vision tower's: its owner takes no image
        entry: dict[str, Any] = {"module": f"{path} {type(rot).__name__}"}
        sub_cfg = getattr(rot, "config", None)
        sub = config_path(cfg, sub_cfg) if sub_cfg is not None else None
        if sub is None:
            out.append({**entry, "status": "the rotary module holds no config of the model's"})
            continue
        entry.update(sub_config=sub, tower_model_type=getattr(sub_cfg, "model_type", None),
                     tower=f"{owner} {type(tower).__name__}".strip())  # fmt: skip
        try:
            entry.update(_observe_tower(type(tower), sub_cfg, classify))
        except Exception as exc:  # recorded: the inventory says why
            entry["status"] = f"{type(exc).__name__}: {exc}"[:200]
        out.append(entry)
    return out


def _observe_tower(tcls: type, sub_cfg: Any, classify: Any) -> dict[str, Any]:
    cfg = copy.deepcopy(sub_cfg)
    for key in ("num_hidden_layers", "depth"):
        if hasattr(cfg, key):
            setattr(cfg, key, 1)
    if hasattr(cfg, "fullatt_block_indexes"):
        cfg.fullatt_block_indexes = [0]
    cfg._attn_implementation = "eager"
    tower = tcls(cfg).eval()
    mod = sys.modules[tcls.__module__]
    seen: list[tuple[Any, tuple, dict]] = []
    saved = _apply_functions(mod)

    def wrap(fn: Any) -> Any:
        def inner(*a: Any, **k: Any) -> Any:
            seen.append((fn, a, k))
            return fn(*a, **k)

        return inner

    (h, w), inputs = _inputs(tower, cfg)
    try:
        for n, f in saved.items():
            setattr(mod, n, wrap(f))
        with torch.no_grad():
            try:
                tower(**inputs)
            except Exception:  # a head after the blocks may refuse the toy image
                if not seen:
                    raise
    finally:
        for n, f in saved.items():
            setattr(mod, n, f)
    if not seen:
        raise RuntimeError("the tower's attention called no apply function")
    fn, args, kwargs = seen[0]
    heads = int(_get(cfg, "num_attention_heads", "num_heads"))
    q = args[0]
    rows = next(int(s) for s in q.shape[:-1] if int(s) in (h * w, h * w + 1, h * w + 2))
    rot = _replay(fn, args, kwargs, heads, rows)
    pairings = {classify(m)[0] for m in rot}
    pairings.discard("identity")
    base = float((getattr(cfg, "rope_parameters", None) or {}).get("rope_theta", _get(cfg, "rope_theta", default=1e4)))
    scalars = {k: v for k, v in sub_cfg.to_dict().items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {
        "config_defaults": {**scalars, "rope_theta": base},
        "apply_function": fn.__name__,
        "pairing": pairings.pop() if len(pairings) == 1 else "other",
        "grid": f"{h}x{w}",
        "rows": rows,
        "head_dim": int(rot.shape[-1]),
        "rope_theta": base,
        "matches": _matches(rot, h, w, base),
        "status": "ok",
    }


def _matches(rot: np.ndarray, h: int, w: int, base: float) -> list[str]:
    """The rope-2d presets whose rotations equal the observed ones on every row (posenc, exact angles)."""
    sys.path.insert(0, str(ROOT))
    from posenc_cli import api
    from posenc_cli.errors import ParameterError

    d = rot.shape[-1]
    found = []
    for preset in api.generate("rope-2d", grid="2x2", dim=4).PRESETS:
        try:
            enc = api.generate("rope-2d", preset=preset, grid=f"{h}x{w}", dim=d, base=base, dtype="float64")
        except ParameterError:
            continue
        cos, sin = enc.array("cos"), enc.array("sin")
        if len(cos) != len(rot):
            continue
        turn = np.zeros((d, d))
        for i in range(d // 2):
            a, b = (i, i + d // 2) if enc.layout == "half" else (2 * i, 2 * i + 1)
            turn[a, b], turn[b, a] = -1.0, 1.0
        mats = cos[:, :, None] * np.eye(d)[None] + sin[:, :, None] * turn[None]
        if np.abs(mats - rot).max() < 1e-5:
            found.append(preset)
    return found


def observe_all(records: dict[str, Any], types: list[str]) -> None:
    """Add ``vision_rotary`` to the records of ``types`` that have a vision tower's rotary module (else drop it)."""
    for mt in types:
        rec = records.get(mt)
        if not rec or not rec.get("rotary_modules"):
            continue
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(TIMEOUT)
        try:
            found = observe(mt)
        except Exception as exc:  # a timeout too: the inventory says why
            found = [{"status": f"{type(exc).__name__}: {exc}"[:200]}]
        finally:
            signal.alarm(0)
        if found:
            rec["vision_rotary"] = found
        else:
            rec.pop("vision_rotary", None)
        print(f"vision_rotary {mt}: {json.dumps(found)[:300]}", file=sys.stderr)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    import make_inventory as inv

    data = json.loads(inv.DATA.read_text())
    observe_all(data["model_types"], argv or sorted(data["model_types"]))
    inv.dump(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
