"""The learned vision tables in the inventory: which code resizes each one, observed by running it.

make_inventory's ``mechanisms`` pass lists, per model type, the learned tables a vision component adds to its
patches (``input: vision``, ``mechanism: learned``), and those of a component fed features (``input: features``:
a tower whose forward takes flattened patches and their ``grid_thw``, Qwen3-VL's), kept here only where the tower
ran on an image grid and its own code used the table. This pass takes each of them and writes ``vision_table``, a
list of (one per such table):

* ``component``: the config path of the tower (``vision_config``, ``vlm_config.vision_config``; ``model`` when the
  type is the tower itself), ``tower_model_type``: that config's ``model_type``;
* ``tensor``: the table's full name in the type's model (the tower's prefix inside the wrapper included),
  ``saved_tensor``: the name ``save_pretrained`` writes for it (transformers reverts its checkpoint conversions on
  saving: Step 3.5's ``positional_embedding``), and ``tower_tensor``: its name inside the tower (the component's
  root module); ``tower``: ``"path Class"`` of that
  root; ``holder``: ``"path Class"`` of the module that holds the table (an ``nn.Embedding``'s parent);
* ``shape``: the table's shape at the default config;
* ``ran_at``: the image the tower was run on (``HxW`` pixels, not its native size and not square; a NaFlex tower
  or one that takes ``grid_thw``: its patch grid; ``native HxW`` when every other size raised before the table
  was used: a tower that checks the image size), and ``status``: ``ok``, or what the forward raised (``raised:
  ...``: a tower that never resizes its table, Llama 4's, stops there);
* ``method``: ``Class.name`` of the holder's function that resized the table: the holder-class function (its
  class or a base's) innermost on the stack when a resizing function ran (``F.interpolate``,
  ``grid_sample``, ...; or transformers' ``get_vision_interpolation_indices_and_weights``, whose taps and weights
  the tower gathers: ``by: taps``), else when the table was first used; ``resize``: that resizing call
  (``function``, ``mode``, ``align_corners``, ``antialias``, ``by``: ``size``, ``scale_factor`` or ``taps``, with
  the taps' ``spatial_merge_size`` and ``padding``), absent when none ran;
* ``fingerprint``: the first 16 hex digits of the SHA-1 of ``method``'s source, normalized: parsed and unparsed
  (comments and layout gone), docstrings and type annotations dropped, every name of a class defined in its
  module replaced by ``_C`` (so that a copy under another model's prefix, ``# Copied from`` ones, has the same fingerprint);
  ``forward_fingerprint``: the same of the holder's ``forward`` (what places the rows among the tokens);
* ``config_defaults``: the tower config's image and patch numbers (``image_size``, ``patch_size``,
  ``num_patches``, ``num_channels``, ``num_register_tokens``, ``num_position_embeddings``,
  ``spatial_merge_size``), which a config.json that leaves one out gets.

posenc (``posenc_cli/models/vision.py``) reads a type by the reviewed rule whose code has the same fingerprint
(the ``fingerprints`` of a ``Vision`` record), and refuses one with new code, naming its class and method.

How: the tower (the component's root module) is built on the CPU from a copy of its config with one layer, and run
once under a ``TorchFunctionMode`` that notes, at every torch call taking the table (or resizing anything), which
functions of the holder's class are on the Python stack.

    /work/side/venv/bin/python tools/inventory/vision_tables.py [TYPE ...]   # merged into the data
"""

from __future__ import annotations

import ast
import copy
import hashlib
import importlib
import inspect
import json
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

HERE = Path(__file__).resolve().parent
#: seconds one model type may take
TIMEOUT = 120
#: the largest tower built on the CPU (parameters, one layer)
CPU_LIMIT = 300_000_000
#: torch functions that resize a grid
_RESIZE = {"interpolate", "upsample", "upsample_bilinear", "upsample_nearest", "grid_sample", "adaptive_avg_pool2d"}
#: the patch grid a tower that takes flattened patches and their grid (``grid_thw``) runs on (not square)
GRID = (12, 20)
#: the config numbers of a tower's grid
_GRID_KEYS = (
    "image_size",
    "patch_size",
    "num_patches",
    "num_channels",
    "num_register_tokens",
    "num_position_embeddings",
    "spatial_merge_size",
)


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"timed out after {TIMEOUT} s")


# ----- the fingerprint of a function's code ------------------------------------------------------------------------
def normalized(fn: Any) -> str:
    """``fn``'s source parsed and unparsed: comments and layout gone, docstrings and annotations dropped, the names
    of classes its module defines replaced by ``_C``."""
    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    module = sys.modules.get(fn.__module__)
    own = module.__name__ if module is not None else None
    classes = {n for n, v in vars(module).items() if isinstance(v, type) and v.__module__ == own} if own else set()

    class Strip(ast.NodeTransformer):
        def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
            body = node.body
            first = body[0].value if body and isinstance(body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = body[1:] or [ast.Pass()]
            node.returns = None
            self.generic_visit(node)
            return node

        def visit_arg(self, node: ast.arg) -> Any:
            node.annotation = None
            return node

        def visit_Name(self, node: ast.Name) -> Any:
            if node.id in classes:
                node.id = "_C"
            return node

        def visit_Attribute(self, node: ast.Attribute) -> Any:
            self.generic_visit(node)
            if node.attr in classes:
                node.attr = "_C"
            return node

    return ast.unparse(Strip().visit(tree))


def fingerprint(fn: Any) -> str:
    return hashlib.sha1(normalized(fn).encode()).hexdigest()[:16]


# ----- running a tower ---------------------------------------------------------------------------------------------
class Watch(TorchFunctionMode):
    """Notes which functions of ``holder``'s class are on the stack when a torch call takes ``table`` or resizes."""

    def __init__(self, table: torch.Tensor, holder: type) -> None:
        super().__init__()
        self.table = table
        self.codes: dict[Any, tuple[str, Any]] = {}
        for klass in holder.__mro__:
            if klass is torch.nn.Module or klass is object:
                continue
            for name, v in vars(klass).items():
                f = getattr(v, "__func__", v)
                f = inspect.unwrap(f) if callable(f) else f
                code = getattr(f, "__code__", None)
                if code is not None and code not in self.codes:
                    self.codes[code] = (f"{klass.__name__}.{name}", f)
        self.used: tuple[str, Any] | None = None
        self.resized: tuple[str, Any, dict[str, Any]] | None = None

    def _holder_frame(self) -> tuple[str, Any] | None:
        frame = inspect.currentframe()
        while frame is not None:
            hit = self.codes.get(frame.f_code)
            if hit is not None:
                return hit
            frame = frame.f_back
        return None

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if self.resized is None and name in _RESIZE:
            hit = self._holder_frame()
            if hit is not None:
                call = dict(zip(("input", "size", "scale_factor", "mode", "align_corners"), args, strict=False))
                call.update(kwargs)
                self.resized = (
                    *hit,
                    {
                        "function": name,
                        "mode": call.get("mode", "nearest"),
                        "align_corners": call.get("align_corners"),
                        "antialias": bool(call.get("antialias", False)),
                        "by": "scale_factor" if call.get("scale_factor") is not None else "size",
                    },
                )
        if self.used is None and any(a is self.table for a in (*args, *kwargs.values())):
            self.used = self._holder_frame()
        return func(*args, **kwargs)


def _side(v: Any) -> tuple[int, int]:
    if isinstance(v, (list, tuple)):
        return (int(v[-2]), int(v[-1])) if len(v) >= 2 else (int(v[0]), int(v[0]))
    return int(v), int(v)


def _inputs(tower: torch.nn.Module, cfg: Any) -> list[tuple[str, dict[str, Any]]]:
    """Forward inputs at a size that is not the native one and not square (with ``interpolate_pos_encoding``
    when the forward takes it), as ``(ran_at, kwargs)`` candidates."""
    params = inspect.signature(type(tower).forward).parameters
    patch = _side(getattr(cfg, "patch_size", 14) or 14)
    ch = int(getattr(cfg, "num_channels", None) or getattr(cfg, "in_channels", None) or 3)
    out = []
    if "spatial_shapes" in params:  # NaFlex: flattened patches, their grid per image
        n = int(getattr(cfg, "num_patches", 256) or 256)
        side = max(int(n**0.5), 2)
        gh, gw = max(side // 2, 1), side + 2
        kw = {"pixel_values": torch.zeros(1, gh * gw, ch * patch[0] * patch[1]),
              "spatial_shapes": torch.tensor([[gh, gw]]), "pixel_attention_mask": torch.ones(1, gh * gw, dtype=torch.long)}  # fmt: skip
        out.append((f"grid {gh}x{gw}", {k: v for k, v in kw.items() if k in params}))
    grid_key = next((k for k in ("grid_thw", "image_grid_thw") if k in params), None)
    if grid_key is not None:  # flattened patches and their grid (as vision_rotary.py runs such towers)
        first = next(iter(list(params)[1:]), "pixel_values")
        gh, gw = GRID
        per = ch * int(getattr(cfg, "temporal_patch_size", None) or 1) * patch[0] * patch[1]
        out.append((f"grid {gh}x{gw}", {first: torch.zeros(gh * gw, per), grid_key: torch.tensor([[1, gh, gw]])}))
    image = getattr(cfg, "image_size", None)
    h, w = _side(image) if image is not None else (patch[0] * 16, patch[1] * 16)
    H, W = h + 2 * patch[0], w + 5 * patch[1]
    extra = {"interpolate_pos_encoding": True} if "interpolate_pos_encoding" in params else {}
    out.append((f"{H}x{W}", {"pixel_values": torch.zeros(1, ch, H, W), **extra}))
    out.append((f"{H}x{W}", {"pixel_values": torch.zeros(1, 1, ch, H, W), **extra}))  # video towers
    if image is not None:  # a tower that refuses any other size: the function that adds its table as it is
        out.append((f"native {h}x{w}", {"pixel_values": torch.zeros(1, ch, h, w), **extra}))
    return out


def _one_layer(cfg: Any) -> Any:
    cfg = copy.deepcopy(cfg)
    for key, v in list(vars(cfg).items()):
        if isinstance(v, int) and not isinstance(v, bool) and v > 1 and key in (
            "num_hidden_layers", "depth", "num_layers", "n_layers", "layers"
        ):  # fmt: skip
            setattr(cfg, key, 1)
    cfg._attn_implementation = "eager"
    return cfg


def _at(cfg: Any, component: str) -> Any:
    for part in [] if component == "model" else component.split("."):
        cfg = getattr(cfg, part)
    return cfg


def observe_one(mt: str, mech: dict[str, Any]) -> dict[str, Any]:
    """The ``vision_table`` entry of one learned vision table of model type ``mt``."""
    import transformers
    from make_inventory import CONFIG_MAPPING, model_class
    from mechanisms import components

    tensor = str(mech.get("tensor") or "").split(",")[0].strip()
    entry: dict[str, Any] = {"component": mech["component"], "tensor": tensor}
    cfg = transformers.AutoConfig.for_model(mt)
    sub = _at(cfg, mech["component"])
    entry["tower_model_type"] = getattr(sub, "model_type", None)
    entry["config_defaults"] = {
        k: getattr(sub, k) for k in _GRID_KEYS if isinstance(getattr(sub, k, None), (int, list, tuple))
    }
    pkg = CONFIG_MAPPING[mt].__module__.rsplit(".", 1)[0]
    module = importlib.import_module(pkg + ".modeling_" + pkg.rsplit(".", 1)[1])
    mcls = model_class(cfg, module)
    if mcls is None:
        return {**entry, "status": "no model class"}
    with torch.device("meta"):
        model = mcls(copy.deepcopy(cfg))
    owner_path = tensor.rsplit(".", 1)[0] if "." in tensor else ""
    owner = model.get_submodule(owner_path)
    if isinstance(owner, torch.nn.Embedding):
        owner_path = owner_path.rsplit(".", 1)[0] if "." in owner_path else ""
        owner = model.get_submodule(owner_path)
    entry["holder"] = f"{owner_path} {type(owner).__name__}"
    entry["saved_tensor"] = _saved_name(model, tensor)
    comp = next((c for c in components(model, cfg) if c["component"] == mech["component"]), None)
    if comp is None:
        return {**entry, "status": "the component's root module was not found"}
    root = comp["path"]
    if root and not tensor.startswith(root + "."):
        return {**entry, "status": f"the table is not under the component's root {root}"}
    rel_tensor = tensor[len(root) + 1 :] if root else tensor
    rel_holder = owner_path[len(root) + 1 :] if root and owner_path != root else ("" if root else owner_path)
    entry.update(tower=f"{root} {type(comp['module']).__name__}", tower_tensor=rel_tensor)
    entry["shape"] = list(model.get_parameter(tensor).shape) if _is_param(model, tensor) else None
    hcls = type(owner)
    fwd = getattr(hcls, "forward", None)
    if fwd is not None:
        entry["forward_fingerprint"] = fingerprint(fwd)
    tcls = type(comp["module"])
    tcfg = _one_layer(comp["config"])
    with torch.device("meta"):
        probe = tcls(copy.deepcopy(tcfg))
    n = sum(p.numel() for p in probe.parameters())
    if n > CPU_LIMIT:
        return {**entry, "status": f"the tower has {n / 1e6:.0f}M parameters with one layer: not run"}
    torch.manual_seed(0)
    tower = tcls(tcfg).eval()
    table = tower.get_parameter(rel_tensor) if _is_param(tower, rel_tensor) else tower.get_buffer(rel_tensor)
    holder_mod = tower.get_submodule(rel_holder)
    first = None
    for ran_at, kw in _inputs(tower, tcfg):
        watch = Watch(table, type(holder_mod))
        try:
            with torch.no_grad(), watch, Gathers(sys.modules[tcls.__module__], watch):
                tower(**kw)
            status = "ok"
        except Exception as exc:
            status = "raised: " + f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
        if first is None:
            first = (ran_at, status, watch)
        if status == "ok" or watch.used is not None:
            break
    else:  # no input made the tower use its table: say what the first one raised
        ran_at, status, watch = first
    if ran_at.startswith("native") and first is not None:
        status = f"{status}; at {first[0]}: {first[1]}"  # it ran at its native size only
    entry["ran_at"] = ran_at
    entry["status"] = status
    hit = watch.resized or watch.used
    if hit is None:
        entry["status"] = f"{status}; no function of {hcls.__name__} used the table"
        return entry
    entry["method"] = hit[0]
    entry["fingerprint"] = fingerprint(hit[1])
    if watch.resized is not None:
        entry["resize"] = watch.resized[2]
    return entry


#: transformers' functions that resample a table as per-patch taps and weights, which the tower then gathers (no
#: torch resize runs): ``vision_utils.get_vision_interpolation_indices_and_weights`` (Qwen3-VL's towers)
_GATHERS = ("get_vision_interpolation_indices_and_weights",)


class Gathers:
    """Wraps each :data:`_GATHERS` function the tower's module imported, so that a call (from a function of the
    holder's class) is noted on ``watch.resized`` as ``F.interpolate`` is: ``mode``, ``align_corners``, ``by:
    taps`` and the ``spatial_merge_size`` it orders the patches by."""

    def __init__(self, module: Any, watch: Watch) -> None:
        self.module, self.watch, self.saved = module, watch, {}

    def __enter__(self) -> None:
        for name in _GATHERS:
            fn = getattr(self.module, name, None)
            if fn is None:
                continue
            self.saved[name] = fn

            def wrapped(*args: Any, _fn: Any = fn, _name: str = name, **kwargs: Any) -> Any:
                hit = self.watch._holder_frame()
                if hit is not None and self.watch.resized is None:
                    call = inspect.signature(_fn).bind(*args, **kwargs)
                    call.apply_defaults()
                    a = call.arguments
                    self.watch.resized = (*hit, {
                        "function": _name, "mode": a.get("mode"), "align_corners": a.get("align_corners"),
                        "antialias": False, "by": "taps", "spatial_merge_size": a.get("spatial_merge_size"),
                        "padding": a.get("padding"),
                    })  # fmt: skip
                return _fn(*args, **kwargs)

            setattr(self.module, name, wrapped)

    def __exit__(self, *exc: Any) -> None:
        for name, fn in self.saved.items():
            setattr(self.module, name, fn)


def _saved_name(model: torch.nn.Module, name: str) -> str:
    """The name ``save_pretrained`` writes for the model's tensor ``name``: transformers reverts its checkpoint
    conversions on saving (Step 3.5's ``embeddings.position_embedding.weight`` is saved ``positional_embedding``)."""
    from transformers.core_model_loading import revert_weight_conversion

    try:
        out = revert_weight_conversion(model, {name: torch.zeros(1)})
    except Exception:  # no conversion this tool can apply to one tensor alone
        return name
    return next(iter(out), name) if len(out) == 1 else name


def _is_param(model: torch.nn.Module, name: str) -> bool:
    try:
        model.get_parameter(name)
        return True
    except AttributeError:
        return False


def observe(mt: str, rec: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for mech in rec.get("mechanisms") or []:
        if mech.get("input") not in ("vision", "features") or mech.get("mechanism") != "learned":
            continue
        try:
            entry = observe_one(mt, mech)
        except Exception as exc:  # recorded: the inventory says why
            entry = {"component": mech.get("component"), "tensor": mech.get("tensor"),
                     "status": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}  # fmt: skip
        if mech.get("input") == "features" and not (entry.get("method") and entry.get("status") == "ok"):
            # a component fed features, not pixels: its table is a vision table only where the tower ran on an
            # image (pixels, or flattened patches with their grid_thw) and its own code used the table
            continue
        out.append(entry)
    return out


def observe_all(records: dict[str, Any], types: list[str]) -> None:
    """Add ``vision_table`` to the records of ``types`` with a learned vision table (else drop it)."""
    for mt in types:
        rec = records.get(mt)
        if not rec:
            continue
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(TIMEOUT)
        try:
            found = observe(mt, rec)
        except Exception as exc:  # a timeout too: the inventory says why
            found = [{"status": f"{type(exc).__name__}: {exc}"[:200]}]
        finally:
            signal.alarm(0)
        if found:
            rec["vision_table"] = found
        else:
            rec.pop("vision_table", None)
        print(f"vision_table {mt}: {json.dumps(found)[:400]}", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    import fcntl

    sys.path.insert(0, str(HERE))
    import make_inventory as inv

    dry = argv[:1] == ["--print"]
    argv = argv[1:] if dry else argv
    records = json.loads(inv.DATA.read_text())["model_types"]
    types = argv or sorted(records)
    done = {mt: copy.deepcopy(records[mt]) for mt in types if mt in records}
    observe_all(done, list(done))
    if dry:
        return 0
    with open(inv.DATA.with_suffix(".lock"), "w") as lock:  # other passes may write the data meanwhile
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(inv.DATA.read_text())
        for mt, rec in done.items():
            if "vision_table" in rec:
                data["model_types"][mt]["vision_table"] = rec["vision_table"]
            else:
                data["model_types"][mt].pop("vision_table", None)
        inv.dump(data)
    inv.DATA.with_suffix(".lock").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1]))
    raise SystemExit(main(sys.argv[1:]))
