"""An inventory of every model type in transformers, observed from its own code (issue 28, items 1 and 2).

posenc never imports torch or transformers; this tool does, once, in the side venv::

    /work/side/hf/bin/python tools/inventory/make_inventory.py            # every model type
    /work/side/hf/bin/python tools/inventory/make_inventory.py llama t5   # a few (merged into the data)
    /work/side/hf/bin/python tools/inventory/make_inventory.py --architectures  # the architecture mapping only

It writes ``posenc_cli/models/data/transformers_inventory.json`` (one record per ``CONFIG_MAPPING`` model type;
the schema is in ``tools/inventory/README.md``) and ``tests/data/inventory/`` (the reference arrays each type's
own rotary class produces: ``rope.npz`` + ``index.json``; the non-RoPE tables: ``positions.npz``).

How each field is observed (nothing is typed from memory):

* The config is ``AutoConfig.for_model(model_type)``; the saved keys are what ``save_pretrained`` writes.
* The base model (``MODEL_MAPPING``, else another auto mapping) is built on the ``meta`` device (no memory, no
  arithmetic) at the default config; its modules name the position scheme: a module holding ``inv_freq`` (or a
  ``*Rotary*``/``*Rope*`` class) is RoPE, an ``nn.Embedding`` that the embeddings call positions is learned, a
  ``*Sinusoidal*`` module or buffer is sinusoidal, ``relative_attention_bias`` is T5 buckets; ALiBi is the
  modeling module calling an alibi builder; nothing of these is "none".
* The rotary class is built again on the CPU from a copy of its own config (the sub-config it was given in the
  model: the ``sub_config`` path) whose class records every attribute read and whose ``rope_parameters`` dicts
  record every key read, once per rope type (the ones ``ROPE_INIT_FUNCTIONS`` offers when the class dispatches
  on ``rope_type``, plus the family's own names found in its source), and its forward run at sparse positions.
  Reads made by the config machinery itself (``standardize_rope_params`` and the other methods of
  ``configuration_utils``/``RotaryEmbeddingConfigMixin``) are not the positional code's and are not recorded.
* The attention's position path: the whole model's forward runs on ``meta`` tensors with the modeling module's
  ``apply_rotary*`` functions wrapped, so each layer says whether it applies positions (``layer_positions``);
  the apply function is then run on unit vectors with the rotary class's own cos/sin, and where each basis
  vector lands names the ``pairing``.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import hashlib
import importlib
import inspect
import io
import json
import re
import signal
import sys
import tempfile
import textwrap
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch


def _torchvision_stand_in() -> None:
    """timm imports torchvision, which has no build for the side venv's torch: where the stand-in
    (``sitecustomize_tv``, on ``PYTHONPATH``) is present, it is imported before transformers and its modules get
    import specs, so transformers' ``is_torchvision_available`` (hence ``is_timm_available``) holds and the types
    with a timm backbone (DETR's default ``resnet50``) build. Its functions are never called by the code the
    inventory runs."""
    import importlib.machinery

    try:
        import sitecustomize_tv  # noqa: F401
    except ImportError:
        return
    for name, mod in list(sys.modules.items()):
        if name.split(".")[0] == "torchvision" and getattr(mod, "__spec__", None) is None:
            mod.__spec__ = importlib.machinery.ModuleSpec(name, None)


_torchvision_stand_in()
import transformers  # noqa: E402
from transformers import CONFIG_MAPPING, AutoConfig  # noqa: E402
from transformers.models.auto import modeling_auto  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import learned_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "posenc_cli" / "models" / "data" / "transformers_inventory.json"
ARRAYS = ROOT / "tests" / "data" / "inventory"
#: sparse positions of the reference arrays (plus the model's max position - 1)
POSITIONS = (0, 1, 2, 7, 100, 1023, 4095, 32767, 131071)
#: seconds one model type may take
TIMEOUT = 90

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
torch.set_num_threads(1)

_MAPPINGS = (
    "MODEL_MAPPING_NAMES",
    "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
    "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES",
    "MODEL_FOR_CTC_MAPPING_NAMES",
    "MODEL_FOR_TEXT_TO_WAVEFORM_MAPPING_NAMES",
    "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES",
    "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES",
)


class Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Timeout


# ----- recording configs ----------------------------------------------------------------------------------------
_RECORDING = [False]
#: code of the config machinery: reads made there are not the positional code's
_MACHINERY = {"configuration_utils.py"}
_MACHINERY_FUNCS = {
    "standardize_rope_params", "convert_rope_params_to_dict", "nested_rope_parameter_keys", "validate_rope",
    "__getattribute__", "__setattr__", "__repr__", "to_dict", "to_diff_dict", "__deepcopy__", "__eq__",
    "get_text_config", "_get_text_config",
}  # fmt: skip


def _from_positional_code() -> bool:
    f = sys._getframe(2)
    code = f.f_code
    return not (code.co_name in _MACHINERY_FUNCS or Path(code.co_filename).name in _MACHINERY)


class RecDict(dict):
    """A dict that records every key read (as ``prefix.key``), also the keys asked for and absent."""

    def __init__(self, data: dict, log: set[str], prefix: str) -> None:
        super().__init__()
        self._log, self._prefix = log, prefix
        for k, v in data.items():
            dict.__setitem__(self, k, RecDict(v, log, f"{prefix}.{k}") if isinstance(v, dict) else v)

    def _note(self, key: Any) -> None:
        if _RECORDING[0] and _from_positional_code():
            self._log.add(f"{self._prefix}.{key}")

    def __getitem__(self, key: Any) -> Any:
        self._note(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._note(key)
        return dict.get(self, key, default)

    def __contains__(self, key: Any) -> bool:
        self._note(key)
        return dict.__contains__(self, key)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self._note(key)
        return dict.setdefault(self, key, default)

    def pop(self, key: Any, *default: Any) -> Any:
        self._note(key)
        return dict.pop(self, key, *default)

    def __deepcopy__(self, memo: dict) -> dict:
        return copy.deepcopy(dict(self), memo)


_REC_CLASSES: dict[type, type] = {}


def recording(cfg: Any, log: set[str]) -> Any:
    """A copy of ``cfg`` whose attribute reads (by their saved key, through ``attribute_map``) go to ``log``,
    its rope dicts wrapped in :class:`RecDict`, its sub-configs recording under their path."""
    cfg = copy.deepcopy(cfg)
    _wrap(cfg, log, "")
    return cfg


def _wrap(cfg: Any, log: set[str], prefix: str) -> None:
    base = type(cfg)
    if base not in _REC_CLASSES:
        amap = dict(getattr(base, "attribute_map", {}) or {})

        def __getattribute__(self: Any, name: str) -> Any:
            if name.startswith("_") or not _RECORDING[0]:
                return base.__getattribute__(self, name)
            try:
                value = base.__getattribute__(self, name)
            except AttributeError:
                if _from_positional_code():
                    log_ = object.__getattribute__(self, "_inv_log")
                    log_.add(object.__getattribute__(self, "_inv_prefix") + amap.get(name, name))
                raise
            cls_attr = getattr(base, name, None)
            is_method = callable(cls_attr) and not isinstance(cls_attr, (dict, list))
            if not is_method and (not isinstance(cls_attr, property) or name in amap) and _from_positional_code():
                log_ = object.__getattribute__(self, "_inv_log")
                log_.add(object.__getattribute__(self, "_inv_prefix") + amap.get(name, name))
            return value

        _REC_CLASSES[base] = type(base.__name__, (base,), {"__getattribute__": __getattribute__})
    object.__setattr__(cfg, "_inv_log", log)
    object.__setattr__(cfg, "_inv_prefix", prefix)
    for name in ("rope_parameters", "rope_scaling"):
        v = cfg.__dict__.get(name)
        if isinstance(v, dict):
            cfg.__dict__[name] = RecDict(v, log, prefix + name)
    for name, v in list(cfg.__dict__.items()):
        if isinstance(v, transformers.PretrainedConfig):
            _wrap(v, log, f"{prefix}{name}.")
    cfg.__class__ = _REC_CLASSES[base]


@contextlib.contextmanager
def record() -> Any:
    _RECORDING[0] = True
    try:
        yield
    finally:
        _RECORDING[0] = False


# ----- the model and its position modules -------------------------------------------------------------------------
def model_class(cfg: Any, module: Any = None) -> type | None:
    """The type's base model class: from the auto mappings, else the modeling module's model class whose
    ``config_class`` is the type's (sub-model types such as ``*_text_model``, ``blt_local_encoder``)."""
    found = _auto_class(cfg)
    if found is not None or module is None:
        return found
    mine = [
        c for c in vars(module).values()
        if isinstance(c, type) and issubclass(c, torch.nn.Module) and getattr(c, "config_class", None) is type(cfg)
        and c.__module__ == module.__name__
    ]  # fmt: skip
    mine.sort(key=lambda c: (("For" in c.__name__), "PreTrained" in c.__name__, len(c.__name__)))
    mine = [c for c in mine if "PreTrained" not in c.__name__]
    return mine[0] if mine else None


def _auto_class(cfg: Any) -> type | None:
    mt = cfg.model_type
    for name in _MAPPINGS:
        names = getattr(modeling_auto, name, {})
        if mt in names:
            cls_name = names[mt]
            if isinstance(cls_name, (list, tuple)):
                cls_name = cls_name[0]
            try:
                return getattr(transformers, cls_name)
            except (AttributeError, ImportError, RuntimeError):
                continue
    return None


def sub_configs(cfg: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out = [(path, cfg)]
    for name, v in sorted(vars(cfg).items()):
        if isinstance(v, transformers.PretrainedConfig):
            out += sub_configs(v, path + (name,))
    return out


def config_path(cfg: Any, target: Any) -> list[str] | None:
    for path, c in sub_configs(cfg):
        if c is target:
            return list(path)
    for path, c in sub_configs(cfg):  # a copy handed down (e.g. text_config rebuilt from a dict)
        if type(c) is type(target) and c.to_dict() == target.to_dict():
            return list(path)
    return None


def is_rotary(m: torch.nn.Module) -> bool:
    """A leaf module named rotary/rope, or one holding ``inv_freq`` beside an ``apply_rotary*`` function (not a
    Transformer-XL-style relative sinusoid such as Parakeet's, which holds ``inv_freq`` too)."""
    if list(m.children()):
        return False
    name = type(m).__name__.lower()
    if "rotary" in name or "rope" in name:
        return True
    bufs = [n for n, _ in m.named_buffers(recurse=False)]
    takes_positions = "position_ids" in inspect.signature(type(m).forward).parameters
    return (
        any(b.endswith("inv_freq") for b in bufs)
        and takes_positions
        and bool(apply_functions(sys.modules[type(m).__module__]))
    )


def scan_modules(model: torch.nn.Module) -> dict[str, Any]:
    rotary, learned, sinusoidal, relative = [], [], [], []
    for name, m in model.named_modules():
        cls = type(m).__name__
        low = cls.lower()
        if is_rotary(m):
            rotary.append((name, m))
        elif "sinusoid" in low:
            sinusoidal.append((name, cls))
        elif isinstance(m, torch.nn.Embedding):
            leaf = name.rsplit(".", 1)[-1].lower()
            if "relative_attention_bias" in leaf or ("rel" in leaf and "bias" in leaf):
                relative.append((name, cls))
            elif "pos" in leaf or leaf in ("wpe",):
                learned.append((name, cls))
            elif "relative" in leaf or "rel_" in leaf:
                relative.append((name, cls))
        elif "positional" in low or ("position" in low and "embedding" in low):
            # a learned class named *PositionalEmbedding* subclassing nn.Embedding is caught above
            bufs = [n for n, _ in m.named_buffers(recurse=False)]
            if "rel" in low:  # Transformer-XL-style relative sinusoids (Parakeet, Conformer)
                relative.append((name, cls))
            elif any("sin" in n or n.endswith("inv_freq") for n in bufs):
                sinusoidal.append((name, cls))
            else:
                learned.append((name, cls))
        else:
            for bname, _ in m.named_buffers(recurse=False):
                if "sinusoid" in bname or bname in ("positional_embedding",):
                    sinusoidal.append((f"{name}.{bname}", cls))
            # a table held as a bare parameter (ViT's ``position_embeddings = nn.Parameter(...)``, Swin's
            # ``absolute_pos_embed``): learned positions the embeddings add, though no Embedding module holds them
            for pname, _ in m.named_parameters(recurse=False):
                low_p = pname.lower()
                if "pos" in low_p and "emb" in low_p and "rel" not in low_p:
                    learned.append((f"{name}.{pname}" if name else pname, "Parameter"))
    return {"rotary": rotary, "learned": learned, "sinusoidal": sinusoidal, "relative": relative}


def text_rotary(cfg: Any, rotary: list[tuple[str, torch.nn.Module]]) -> tuple[str, torch.nn.Module] | None:
    """The rotary module of the text (language) part: the one built from the text config, else the first whose
    name does not speak of vision or audio."""
    try:
        text = cfg.get_text_config(decoder=True)
    except Exception:
        text = cfg
    for name, m in rotary:
        if getattr(m, "config", None) is text:
            return name, m
    others = ("vision", "visual", "image", "audio", "vit", "patch", "encoder.layers")
    for name, m in rotary:
        if not any(o in name.lower() or o in type(m).__name__.lower() for o in others):
            return name, m
    return rotary[0] if rotary else None


# ----- running a rotary class -------------------------------------------------------------------------------------
def family_rope_types(cls: type) -> list[str]:
    try:
        src = inspect.getsource(cls)
    except (OSError, TypeError):
        return []
    found = set(re.findall(r'rope_type[^\n]*?(?:==|!=|in)\s*[\[(]?\s*"([a-z0-9_]+)"', src))
    return sorted(found - {"default"} - set(_ROPE_INIT))


def _rope_init() -> dict[str, Any]:
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    return dict(ROPE_INIT_FUNCTIONS)


_ROPE_INIT = _rope_init()


def variant_params(rope_type: str, n_freq: int, mpe: int) -> dict[str, Any]:
    orig = max(mpe // 4, 16)
    ramp = [round(1.0 + 0.05 * i, 6) for i in range(n_freq)]
    return {
        "default": {},
        "linear": {"factor": 4.0},
        "dynamic": {"factor": 2.0},
        "yarn": {"factor": 4.0, "original_max_position_embeddings": orig},
        "longrope": {"short_factor": [1.0] * n_freq, "long_factor": ramp, "original_max_position_embeddings": orig},
        "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": orig},
        "proportional": {"factor": 2.0},
    }.get(rope_type, {"factor": 2.0, "alpha": 1000.0})  # fmt: skip


def with_rope_type(cfg: Any, rope_type: str, n_freq: int) -> Any:
    """A deep copy of ``cfg`` whose rope dicts (flat or one per layer type) name ``rope_type`` and its
    parameters (the base and partial factor kept)."""
    cfg = copy.deepcopy(cfg)
    rp = getattr(cfg, "rope_parameters", None)
    if not isinstance(rp, dict):
        return cfg
    mpe = getattr(cfg, "max_position_embeddings", None) or 4096
    nested = cfg.nested_rope_parameter_keys(rp) if hasattr(cfg, "nested_rope_parameter_keys") else []
    dicts = [rp[k] for k in nested if isinstance(rp.get(k), dict)] or [rp]
    for d in dicts:
        keep = {k: d[k] for k in ("rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved")
                if k in d}  # fmt: skip
        d.clear()
        d.update(keep)
        d["rope_type"] = rope_type
        d.update(variant_params(rope_type, n_freq, int(mpe)))
    return cfg


def build_rotary(cls: type, cfg: Any) -> torch.nn.Module:
    try:
        return cls(cfg)
    except TypeError:
        return cls(config=cfg)


def run_rotary(rot: torch.nn.Module, positions: list[int], layer_type: str | None, width: int) -> tuple:
    pos = torch.tensor([positions], dtype=torch.long)
    x = torch.zeros(1, len(positions), max(width, 2), dtype=torch.float32)
    params = list(inspect.signature(rot.forward).parameters)
    attempts = []
    for p in (pos, pos[None].expand(3, 1, -1), pos[None].expand(4, 1, -1)):
        if layer_type is not None and "layer_type" in params:
            attempts.append(lambda p=p: rot(x, p, layer_type=layer_type))
        attempts.append(lambda p=p: rot(x, p))
    err: Exception | None = None
    for a in attempts:
        try:
            with torch.no_grad():
                return a()
        except Exception as exc:
            err = err or exc
    raise RuntimeError(f"rotary forward: {err}")


def inv_freqs(rot: torch.nn.Module) -> dict[str, tuple[np.ndarray, float]]:
    """``{layer_type or "": (inv_freq, attention_scaling)}`` of a built rotary module."""
    out = {}
    for name, buf in rot.named_buffers(recurse=False):
        if name.endswith("inv_freq") and "original" not in name:
            lt = name[: -len("inv_freq")].rstrip("_")
            scale = getattr(rot, f"{lt}_attention_scaling" if lt else "attention_scaling", None)
            if isinstance(scale, dict):
                scale = scale.get(lt)
            out[lt] = (buf.detach().float().numpy().copy(), float(scale) if scale is not None else None)
    return out


def as_cos_sin(out: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(out, (tuple, list)) and len(out) >= 2:
        cos, sin = out[0], out[1]
    elif torch.is_tensor(out) and out.is_complex():
        cos, sin = out.real, out.imag
    else:
        raise RuntimeError(f"rotary forward returned {type(out).__name__}")
    cos = cos.detach().float().numpy()
    sin = sin.detach().float().numpy()
    while cos.ndim > 2:  # (batch,) [sections,] positions, width: the first of each leading axis
        cos, sin = cos[0], sin[0]
    return cos, sin


# ----- pairing ----------------------------------------------------------------------------------------------------
def apply_functions(module: Any) -> dict[str, Any]:
    return {
        n: f
        for n, f in vars(module).items()
        if inspect.isfunction(f) and f.__module__ == module.__name__ and re.match(r"apply_(multimodal_)?rotary", n)
    }


def classify(mat: np.ndarray, r: int | None = None) -> tuple[str, int]:
    """Pairing of a rotation matrix (columns: where each basis vector lands), over its first ``r`` columns (the
    cos width) when the others pass through, else over all of them (GPT-J: half-width cos, repeated); returns
    the pairing and the rotated width it was judged on."""
    d = mat.shape[0]
    r = d if r is None or r > d else r
    support = [set(np.nonzero(np.abs(mat[:, i]) > 1e-6)[0].tolist()) for i in range(d)]
    if any(support[i] != {i} for i in range(r, d)):
        r = d  # the apply function rotates more than the cos width says: judge the whole head
    h = r // 2
    rot = support[:r]
    if not any(len(s) > 1 for s in rot):
        return "identity", r
    if all(s <= {i, (i + h) % r} for i, s in enumerate(rot)):
        return "half", r
    if all(s <= {i, i ^ 1} for i, s in enumerate(rot)):
        return "interleaved", r
    if all(s <= {i // 2, i // 2 + h} for i, s in enumerate(rot)):
        return "deinterleave", r
    return "other", r


_Q = {"q", "query", "xq", "tensor", "x", "t", "hidden_states", "query_states", "q_states", "q_pe", "q_rot"}
_K = {"k", "key", "xk", "key_states", "k_states", "k_pe", "k_rot"}


def observe_pairing(fn: Any, cos: torch.Tensor, sin: torch.Tensor, head_dim: int) -> tuple[str, int, int]:
    """Run ``fn`` (an apply_rotary function) on the unit vectors, its arguments given by their names (GPT-J's
    ``(tensor, sin, cos)``); returns (pairing, width of the unit vectors, rotated width)."""
    errs = []
    names = list(inspect.signature(fn).parameters)
    cw = int(cos.shape[-1])
    for d in dict.fromkeys((head_dim, cw, 2 * cw)):  # 2 x: GPT-J's half-width sin/cos, repeated inside
        eye = torch.eye(d, dtype=torch.float32)
        for shape in ((1, d, 1, d), (1, 1, d, d)):  # heads before or after positions
            q = eye.reshape(shape)
            udim = 2 if shape[1] == 1 else 1
            byname = {"cos": cos, "sin": sin}
            args = []
            for n in names:
                if n in byname:
                    args.append(byname[n])
                elif n in _Q:
                    args.append(q)
                elif n in _K:
                    args.append(q.clone())
                else:
                    break
            attempts = [(tuple(args), {}), (tuple(args), {"unsqueeze_dim": udim})] if len(args) >= 3 else []
            attempts += [((q, q.clone(), cos, sin), {}), ((q, q.clone(), cos, sin), {"unsqueeze_dim": udim})]
            for a, kw in attempts:
                try:
                    out = fn(*a, **kw)
                except Exception as exc:
                    errs.append(str(exc)[:80])
                    continue
                out = out[0] if isinstance(out, (tuple, list)) else out
                if out.shape != q.shape:
                    continue
                m = out.reshape(d, d).T.detach().float().numpy()
                pairing, r = classify(m, cw)
                return pairing, d, r
    raise RuntimeError("apply function could not be run: " + (errs[0] if errs else "?"))


def cos_first(out: Any, positions: list[int]) -> Any:
    """``(cos, sin)`` of a rotary forward's pair, whichever order it returns them in: at position 0 the sine is
    zero and the cosine is not (GPT-J and CodeGen return ``(sin, cos)``)."""
    if not (isinstance(out, (tuple, list)) and len(out) >= 2 and 0 in positions):
        return out
    a, b = out[0], out[1]
    row = positions.index(0)
    a0 = a.reshape(-1, *a.shape[-2:])[0][row] if a.dim() >= 2 else a
    b0 = b.reshape(-1, *b.shape[-2:])[0][row] if b.dim() >= 2 else b
    if bool((a0 == 0).all()) and bool((b0 != 0).any()):
        return (b, a, *out[2:])
    return out


# ----- one model type ---------------------------------------------------------------------------------------------
def saved_keys(cfg: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        cfg.save_pretrained(tmp)
        return json.loads((Path(tmp) / "config.json").read_text())


def flat_keys(d: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for k, v in d.items():
        out.append(prefix + k)
        if isinstance(v, dict) and k not in ("id2label", "label2id"):
            out += flat_keys(v, f"{prefix}{k}.")
    return out


def lookup(d: dict[str, Any], dotted: str) -> Any:
    cur: Any = d
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return "<absent>"
        cur = cur[part]
    return cur


def jsonable(v: Any) -> Any:
    if isinstance(v, float) and not np.isfinite(v):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return repr(v)


class Store:
    """Content-addressed arrays: identical arrays (many types share a class and a default) are stored once."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def put(self, a: np.ndarray) -> str:
        a = np.ascontiguousarray(a)
        h = hashlib.sha1(a.tobytes() + str((a.dtype, a.shape)).encode()).hexdigest()[:16]
        self.arrays.setdefault(h, a)
        return h


def visit(mt: str, store: Store) -> tuple[dict[str, Any], dict[str, Any]]:
    rec: dict[str, Any] = {"model_type": mt}
    refs: dict[str, Any] = {}
    cls = CONFIG_MAPPING[mt]
    rec["config_class"] = cls.__name__
    pkg = cls.__module__.rsplit(".", 1)[0]
    rec["modeling_module"] = None
    try:
        module = importlib.import_module(pkg + ".modeling_" + pkg.rsplit(".", 1)[1])
        rec["modeling_module"] = module.__name__.replace("transformers.", "", 1)
    except ImportError:
        module = None
    try:
        cfg = AutoConfig.for_model(mt)
    except Exception as exc:
        rec.update(scheme="unobserved", status=f"AutoConfig.for_model failed: {type(exc).__name__}: {exc}"[:200])
        return rec, refs
    saved = saved_keys(cfg)
    saved_flat = sorted(flat_keys(saved))
    mcls = model_class(cfg, module)
    rec["model_class"] = mcls.__name__ if mcls else None
    if mcls is None:
        rec.update(scheme="unobserved", status="no model class in transformers' auto mappings")
        return rec, refs
    cfg_eager = copy.deepcopy(cfg)
    with contextlib.suppress(Exception):
        cfg_eager._attn_implementation = "eager"
    try:
        with torch.device("meta"):
            model = mcls(cfg_eager)
    except Exception as exc:
        why = f"{mcls.__name__} not built: {type(exc).__name__}: {exc}"[:200]
        built = parent_built(mt, mcls, cfg_eager)
        if built is not None:  # the sub-config a parent type builds (T5Gemma 2's encoder and decoder)
            rec["built_from"], cfg_eager, model = built
            rec["default_not_built"] = why
        elif not rotary_alone(rec, refs, module, cfg_eager, store, why, mcls):
            rec.update(scheme="unobserved", status=why)
            rec.setdefault("status", why)
            place_mechanisms(rec, mcls, cfg_eager, built=False)
            return rec, refs
        else:
            finish(rec, saved, saved_flat)
            rec.setdefault("status", why)
            place_mechanisms(rec, mcls, cfg_eager, built=False)
            return rec, refs
    found = scan_modules(model)
    src = inspect.getsource(module) if module is not None else ""
    alibi = bool(re.search(r"def \w*alibi\w*\(|build_\w*alibi", src))
    rec["position_modules"] = {k: sorted({f"{n} {c}" for n, c in v}) for k, v in found.items() if k != "rotary" and v}
    rot = text_rotary(cfg_eager, found["rotary"])
    rec["rotary_modules"] = sorted({f"{n} {type(m).__name__}" for n, m in found["rotary"]})
    if rot is not None:
        rec["scheme"] = "rope"
    elif alibi:
        rec["scheme"] = "alibi"
    elif found["relative"]:
        rec["scheme"] = "relative"
    elif found["sinusoidal"]:
        rec["scheme"] = "sinusoidal"
    elif found["learned"]:
        rec["scheme"] = "learned"
    else:
        rec["scheme"] = "none"
    if alibi and rot is not None:
        rec["also"] = "alibi"  # e.g. Falcon: RoPE or ALiBi by config
    text = cfg_eager
    with contextlib.suppress(Exception):
        text = cfg_eager.get_text_config(decoder=True)
    rec["text_model_type"] = getattr(text, "model_type", None)
    rec["sub_config"] = config_path(cfg_eager, text) or None
    if rot is None:
        pos_cfg = text
    else:
        name, m = rot
        rec["rotary_class"] = type(m).__name__
        rec["rotary_module_file"] = type(m).__module__.replace("transformers.", "", 1)
        rec["rotary_path"] = name
        pos_cfg = getattr(m, "config", None)
        if pos_cfg is None:
            params = list(inspect.signature(type(m).__init__).parameters)
            if params[1:2] == ["config"]:
                pos_cfg = text  # built from the config, which it does not keep: the text config
                m.config = text
            else:
                rec["status"] = "rotary class is not built from a config: " + str(inspect.signature(type(m).__init__))
                pos_cfg = text
        else:
            rec["sub_config"] = config_path(cfg_eager, pos_cfg) or None
            rec["text_model_type"] = getattr(pos_cfg, "model_type", None)
    lts = getattr(pos_cfg, "layer_types", None)
    rec["layer_types"] = list(lts) if isinstance(lts, (list, tuple)) else None
    rec["head_dim"] = head_dim_of(model, pos_cfg)
    rec["max_position_embeddings"] = getattr(pos_cfg, "max_position_embeddings", None)
    if rot is not None and "status" not in rec:
        rope_section(rec, refs, type(rot[1]), pos_cfg, store)
    if rot is not None:
        # the apply functions live beside the rotary class (a composite's language model may be another type's)
        positions_path(rec, sys.modules[type(rot[1]).__module__], model, cfg_eager, rot[1], store)
    else:
        owner_reads(rec, model, found, cfg_eager)
        learned_rows.add(rec, model, mcls, cfg)  # which table rows the forward adds (learned_rows.py)
    finish(rec, saved, saved_flat)
    rec.setdefault("status", "ok")
    place_mechanisms(rec, mcls, cfg_eager, built=True)
    window_bias_reads(rec, mcls, cfg_eager, saved)
    return rec, refs


def window_bias_reads(rec: dict, mcls: type, cfg: Any, saved: dict) -> None:
    """``window_bias.config_defaults``: for a type whose vision component adds a relative bias per attention window
    (a ``relative_bias`` mechanism, Swin's family), the class defaults of every config key its model reads while it
    is built again on meta from a recording copy of the config (window_size, image_size, patch_size, depths,
    pretrained_window_sizes, ...: the window of each stage is fixed by them), dotted from the top config."""
    if not any(
        m.get("mechanism") == "relative_bias" and m.get("input") == "vision" for m in rec.get("mechanisms") or []
    ):
        return
    log: set[str] = set()
    try:
        with torch.device("meta"), record():
            mcls(recording(cfg, log))
    except Exception as exc:
        rec["window_bias"] = {"status": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}
        return
    rec["window_bias"] = {"config_defaults": {
        k: jsonable(v) for k in sorted(log) if (v := lookup(saved, k)) != "<absent>" and not isinstance(v, dict)
    }}  # fmt: skip


def parent_built(mt: str, mcls: type, cfg: Any) -> tuple[str, Any, torch.nn.Module] | None:
    """When ``mt``'s model cannot be built at its default config: the config of the same class that another
    model type of the same package builds as its sub-config (its defaults filled in by the parent: T5Gemma 2's
    encoder and decoder), with the model built from it on meta - ``("parent:path", config, model)``, or None."""
    pkg = type(cfg).__module__.rsplit(".", 1)[0]
    for pmt in sorted(CONFIG_MAPPING.keys()):
        if pmt == mt or CONFIG_MAPPING[pmt].__module__.rsplit(".", 1)[0] != pkg:
            continue
        try:
            parent = AutoConfig.for_model(pmt)
        except Exception:
            continue
        for path, sub in sub_configs(parent):
            if not path or type(sub) is not type(cfg):
                continue
            sub = copy.deepcopy(sub)
            with contextlib.suppress(Exception):
                sub._attn_implementation = "eager"
            try:
                with torch.device("meta"):
                    model = mcls(sub)
            except Exception:
                continue
            return f"{pmt}:{'.'.join(path)}", sub, model
    return None


def place_mechanisms(rec: dict, mcls: type, cfg: Any, built: bool) -> None:
    """``mechanisms`` and ``components`` (tools/inventory/mechanisms.py: every mechanism of every component,
    from a traced build and forward), and ``scheme`` from them: the text component's main mechanism. A rotary
    class this tool found and ran in the built model keeps ``rope``; ALiBi found by its builder keeps
    ``alibi`` (also recorded as a mechanism, ``evidence: name``); where nothing is found, ``unobserved`` (never
    the scheme an earlier pass wrote)."""
    import mechanisms

    before = rec.get("scheme")
    try:
        mechanisms.observe(rec, mcls, cfg, mechanisms.fallback)
    except Exception as exc:
        rec["mechanisms_status"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        return
    main = mechanisms.main_mechanism(rec)
    try:
        src = inspect.getsource(sys.modules[mcls.__module__])
    except (OSError, TypeError, KeyError):
        src = ""
    if re.search(r"def \w*alibi\w*\(|build_\w*alibi", src):  # the modeling module builds ALiBi biases
        rec.setdefault("mechanisms", []).append(
            {
                "component": "model",
                "input": "text",
                "mechanism": "alibi",
                "module": rec.get("model_class") or "",
                "evidence": "name",
            }
        )
        return
    if before == "rope" and built and rec.get("rotary_path"):
        return
    if main is None:
        # the trace found nothing and no component's forward ran (a component that ran says ``none``): a scheme
        # stands only where the module scan named its modules (``position_modules``: MLlama's gated table);
        # else a scheme a former pass wrote (Inkling2's ``convolutional``, by a name rule since dropped) or the
        # scan's ``none`` (which only says no module is named for positions) has no evidence
        if (rec.get("position_modules") or {}).get(before):
            return
        rec["scheme"] = "unobserved"
        why = "; ".join(f"{c}: {v.get('forward')}" for c, v in (rec.get("components") or {}).items())
        rec.setdefault("mechanisms_status", f"nothing observed ({why})"[:200])
        return
    if main == "rope" and not rec.get("rotary_class"):
        main = "rotary"  # rotates (the trace saw it) without a rotary class this tool ran: no rope fields
    rec["scheme"] = main


def owner_reads(rec: dict, model: torch.nn.Module, found: dict, cfg: Any) -> None:
    """Non-rotary schemes: the config keys (dotted from the top config) read when the module that owns each
    position module (BertEmbeddings, T5Attention with its relative bias, ...) is built again on meta from a
    recording copy of its config. Its other settings come along: a key read here is simply not ignored."""
    log: set[str] = set()
    problems = []
    for kind in ("learned", "sinusoidal", "relative"):
        for path, _ in found.get(kind, []):
            parent = path.rsplit(".", 1)[0] if "." in path else ""
            owner = model.get_submodule(parent) if parent else model
            ocfg = getattr(owner, "config", None)
            if ocfg is None:
                ocfg = next((getattr(m, "config", None) for m in reversed(list(_ancestors(model, parent)))
                             if getattr(m, "config", None) is not None), cfg)  # fmt: skip
            where = config_path(cfg, ocfg)
            prefix = ".".join(where) + "." if where else ""
            sub: set[str] = set()
            rcfg = recording(ocfg, sub)
            params = inspect.signature(type(owner).__init__).parameters
            kwargs = {n: True for n, p in params.items() if p.default is False and "relative" in n}
            built = False
            for args in ((rcfg,), (rcfg, 0)):
                try:
                    with torch.device("meta"), record():
                        type(owner)(*args, **kwargs)
                    built = True
                    break
                except Exception as exc:
                    problems.append(f"{type(owner).__name__}: {type(exc).__name__}: {exc}"[:120])
            if built:
                log |= {prefix + k for k in sub}
    if log:
        rec["position_keys_read"] = sorted(k for k in log if not k.rsplit(".", 1)[-1].startswith("_"))
    elif problems:
        rec["position_keys_status"] = problems[0]


def _ancestors(model: torch.nn.Module, path: str) -> list[torch.nn.Module]:
    out = [model]
    parts = path.split(".") if path else []
    for i in range(1, len(parts) + 1):
        out.append(model.get_submodule(".".join(parts[:i])))
    return out


def finish(rec: dict, saved: dict, saved_flat: list[str]) -> None:
    """``defaults`` and ``ignored_keys`` from the keys read."""
    prefix = ".".join(rec["sub_config"] or [])
    prefix = prefix + "." if prefix else ""
    read = set()
    for keys in rec.get("keys_read", {}).values():
        read |= {prefix + k for k in keys}
    read |= {prefix + k for k in rec.get("attention_keys_read", [])}
    if rec.get("layer_positions") and rec.get("layer_types") is not None:
        # the layer types decide which layers rotate (``layer_positions``), whichever module reads them (Bailing
        # hybrid's decoder, not its attention): a config that names them is read with them
        read.add(prefix + "layer_types")
    if rec.get("keys_read"):
        defaults = {}
        for k in sorted(read):
            v = lookup(saved, k)
            if v != "<absent>" and not isinstance(v, dict):
                defaults[k] = jsonable(v)
        rec["defaults"] = defaults
    if rec.get("position_keys_read"):  # non-rotary schemes: dotted from the top already
        read = set(rec["position_keys_read"])
        prefix = ""
        rec["defaults"] = {
            k: jsonable(v) for k in sorted(read) if (v := lookup(saved, k)) != "<absent>" and not isinstance(v, dict)
        }
    if (rec.get("keys_read") and "attention_keys_read" in rec) or rec.get("position_keys_read"):
        containers = {k.rsplit(".", 1)[0] for k in read if "." in k}
        # conservative where other modules (BLT's four rotaries, a vision tower's) read their own sub-configs:
        # a key that is, under any prefix, one the observed positional code read is never called ignored
        rel = {k.removeprefix(prefix) for k in read} | {c.removeprefix(prefix) for c in containers}
        rel |= {k.split(".", 1)[1] for k in read if "." in k}  # the same key under a sibling sub-config
        rec["ignored_keys"] = sorted(
            k
            for k in saved_flat
            if k not in read and k not in containers and not any(k == r or k.endswith("." + r) for r in rel)
        )


def head_dim_of(model: torch.nn.Module, cfg: Any) -> int | None:
    for _, m in model.named_modules():
        if "attention" in type(m).__name__.lower():
            hd = getattr(m, "head_dim", None) or getattr(m, "attention_head_size", None)
            if isinstance(hd, int):
                return hd
    hd = getattr(cfg, "head_dim", None)
    if isinstance(hd, int):
        return hd
    with contextlib.suppress(Exception):
        return int(cfg.hidden_size // cfg.num_attention_heads)
    return None


def rope_section(rec: dict, refs: dict, rcls: type, pos_cfg: Any, store: Store) -> None:
    """Build the rotary class once per rope type with a recording config; keys read and reference arrays."""
    mpe = rec["max_position_embeddings"]
    positions = sorted(set(POSITIONS) | ({int(mpe) - 1} if isinstance(mpe, int) and mpe > 0 else set()))
    keys_read: dict[str, list[str]] = {}
    arrays: dict[str, Any] = {}
    problems: dict[str, str] = {}
    base_cfg = copy.deepcopy(pos_cfg)
    with contextlib.suppress(Exception):
        base_cfg.standardize_rope_params()
    dispatches = None
    n_freq = None
    types = ["default"] + list(_ROPE_INIT) + family_rope_types(rcls)
    dr = getattr(pos_cfg, "default_rope_type", "default")
    if dr not in types:
        types.append(dr)
    for rt in types:
        log: set[str] = set()
        cfg = base_cfg if rt == "default" else with_rope_type(base_cfg, rt, n_freq or 64)
        rcfg = recording(cfg, log)
        try:
            with record():
                rot = build_rotary(rcls, rcfg)
            freqs = inv_freqs(rot)
            if n_freq is None and freqs:
                n_freq = len(next(iter(freqs.values()))[0])
            per_lt: dict[str, Any] = {}
            for lt in [x for x in freqs if x] or [None]:
                width = 2 * len(freqs.get(lt or "", freqs.get("", (np.zeros(1), None)))[0])
                with record():
                    try:
                        out = run_rotary(rot, positions, lt, max(width, rec["head_dim"] or 2))
                        used = positions
                    except RuntimeError:  # a cache of max_position_embeddings rows (GPT-J, CodeGen)
                        used = [p for p in positions if p < (mpe or 0)]
                        out = run_rotary(rot, used, lt, max(width, rec["head_dim"] or 2))
                swapped = cos_first(out, used)
                if swapped is not out:
                    rec["rotary_returns"] = "sin, cos"
                out = swapped
                cos, sin = as_cos_sin(out)
                if torch.is_tensor(out) and out.is_complex():
                    rec["rotary_output"] = "complex"
                inv, scale = freqs.get(lt or "", (None, None))
                entry = {"positions": used, "cos": store.put(cos), "sin": store.put(sin)}
                # False: not one row per position (vision classes: a grid of patches, whatever the positions)
                entry["rows_are_positions"] = bool(cos.ndim == 2 and cos.shape[0] == len(used))
                if inv is not None:
                    entry["inv_freq"] = store.put(inv)
                    entry["attention_scaling"] = scale
                per_lt[lt or "default"] = entry
        except Exception as exc:
            problems[rt] = f"{type(exc).__name__}: {exc}"[:160]
            continue
        if rt == "default":
            reads_type = any(k.endswith(".rope_type") for k in log)
            dispatches = reads_type
        elif not dispatches:
            break
        keys_read[rt] = sorted(log)
        arrays[rt] = per_lt
    if "default" not in keys_read and dr in keys_read:
        pass
    rec["rope_types"] = sorted(keys_read)
    rec["keys_read"] = keys_read
    if problems:
        rec["rope_type_errors"] = problems
    first = arrays.get("default") or next(iter(arrays.values()), None)
    if first:
        widths = {}
        for lt, e in first.items():
            widths[lt] = int(store.arrays[e["cos"]].shape[-1]) * (2 if rec.get("rotary_output") == "complex" else 1)
        rec["rotary_dim"] = widths.get("default", max(widths.values())) if len(set(widths.values())) == 1 else widths
    if arrays:
        refs.update(arrays)
        rec["reference"] = rec["model_type"]
    if "default" in keys_read:
        try:
            rec["width_probes"] = width_probes(rcls, base_cfg, keys_read["default"], store)
        except Exception as exc:
            rec["width_probes_status"] = f"{type(exc).__name__}: {exc}"[:160]
    if not keys_read:
        rec["status"] = "rotary class not run: " + "; ".join(f"{k}: {v}" for k, v in problems.items())[:300]


def _probe(rot: torch.nn.Module, store: Store) -> dict[str, Any]:
    """``n_freq`` (``{layer_type or "default": number of frequencies}``) and ``inv_freq`` (their arrays' names in
    rope.npz) of a built rotary module."""
    freqs = inv_freqs(rot)
    return {
        "n_freq": {lt or "default": int(inv.size) for lt, (inv, _) in freqs.items()},
        "inv_freq": {lt or "default": store.put(inv) for lt, (inv, _) in freqs.items()},
    }


def _with_key(d: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """A deep copy of the config dict ``d`` with ``dotted`` (``head_dim``,
    ``rope_parameters.full_attention.partial_rotary_factor``) set to ``value``."""
    d = copy.deepcopy(d)
    *parents, last = dotted.split(".")
    node = d
    for part in parents:
        node = node[part]
    node[last] = value
    return d


def width_probes(rcls: type, base_cfg: Any, reads: list[str], store: Store) -> list[dict[str, Any]]:
    """The rotated width as a function of the keys the class read: the config class built again from its own
    dict (as from a config.json) with one read key changed at a time - an integer doubled (40 where the default
    config leaves it absent or null), a partial factor set to 0.25 (0.5 where it is 0.25 already) - and the
    class's number of frequencies per layer type (and the frequencies, in rope.npz) recorded with the change
    (``set``, and the value it replaced: ``was``; the first probe is the default config, ``set`` empty). Every
    other positive integer of the config is changed the same way and kept where the width follows it. A change
    the config or class cannot be built with is left out. posenc holds its width rule against every probe
    (records.py)."""
    cls = type(base_cfg)
    base = base_cfg.to_dict()
    first = _probe(build_rotary(rcls, cls.from_dict(copy.deepcopy(base))), store)
    probes = [{"set": {}, **first}]
    # every integer of the config (the config class may derive a read key from another: head_dim from
    # qk_rope_head_dim), the keys read and absent, and the partial factors read
    keys = [k for k, v in base.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    keys += [k for k in reads if k not in keys and ("." not in k or k.endswith(".partial_rotary_factor"))]
    for key in keys:
        leaf = key.rsplit(".", 1)[-1]
        value = lookup(base, key)
        if leaf == "partial_rotary_factor" and isinstance(value, (int, float)) and not isinstance(value, bool):
            new: Any = 0.5 if value == 0.25 else 0.25
        elif isinstance(value, int) and not isinstance(value, bool) and "." not in key:
            new = 2 * value if value > 0 else 40
        elif value in (None, "<absent>") and "." not in key:
            new = 40
        else:
            continue
        try:
            got = _probe(build_rotary(rcls, cls.from_dict(_with_key(base, key, new))), store)
        except Exception:
            continue
        if key not in reads and got["n_freq"] == first["n_freq"]:
            continue  # an integer the width does not follow: nothing to record
        probes.append({"set": {key: new}, "was": {key: None if value == "<absent>" else value}, **got})
    return probes


def _layer_index(name: str, i: int) -> int:
    """The layer index in a module path (``model.layers.12.self_attn``: 12), else ``i``."""
    found = re.findall(r"\.(\d+)\.", name)
    return int(found[-1]) if found else i


def positions_path(rec: dict, module: Any, model: torch.nn.Module, cfg: Any, rot: torch.nn.Module,
                   store: Store) -> None:  # fmt: skip
    """Which layers call an apply function (a meta forward of the whole model), and the pairing it applies."""
    fns = apply_functions(module)
    rec["apply_functions"] = sorted(fns)
    if not fns:
        rec.setdefault("pairing", "unobserved: no apply_rotary* function in the modeling module")
        return
    calls: list[tuple[str, str]] = []
    stack: list[str] = []
    originals = dict(fns)

    def wrap(n: str, f: Any) -> Any:
        def inner(*a: Any, **k: Any) -> Any:
            calls.append((stack[-1] if stack else "", n))
            return f(*a, **k)

        return inner

    layers: list[tuple[str, torch.nn.Module]] = []
    for name, m in model.named_modules():
        leaf = name.rsplit(".", 1)[-1].lower()
        if not (re.search(r"(attention|attn)$", leaf) and re.search(r"\.\d+\.", name) and rec.get("rotary_path")):
            continue
        if _same_branch(name, rec["rotary_path"]) and not any(name.startswith(n + ".") for n, _ in layers):
            layers.append((name, m))
    if layers and rec["head_dim"] is not None:
        hd = getattr(layers[0][1], "head_dim", None)
        if isinstance(hd, int):
            rec["head_dim"] = hd
    for n, f in fns.items():
        setattr(module, n, wrap(n, f))
    per_layer: list[str] = []
    try:
        lts = rec.get("layer_types")
        for i, (name, m) in enumerate(layers):
            stack.append(name)
            try:
                idx = _layer_index(name, i)  # a hybrid's attention modules sit among other layers (LFM3's convs)
                forward_attention(m, rot, lts[idx] if lts and idx < len(lts) else None)
            finally:
                stack.pop()
            per_layer.append("rope" if any(layer == name for layer, _ in calls) else "none")
        ran = True
    except Exception as exc:
        rec["layer_positions_status"] = f"meta forward of {name} failed: {type(exc).__name__}: {exc}"[:200]
        ran = False
    finally:
        for n, f in originals.items():
            setattr(module, n, f)
    if layers:
        attention_reads(rec, layers, rot)
    used = sorted({n for _, n in calls})
    if ran and layers:
        rec["layer_rope"] = per_layer
        lts = rec.get("layer_types")
        indices = [_layer_index(name, i) for i, (name, _) in enumerate(layers)]
        if lts and all(idx < len(lts) for idx in indices):
            lp: dict[str, set[str]] = {}
            for idx, p in zip(indices, per_layer):
                lp.setdefault(lts[idx], set()).add(p)
            rec["layer_positions"] = {lt: "/".join(sorted(v)) for lt, v in lp.items()}
        else:
            rec["layer_positions"] = {"default": "/".join(sorted(set(per_layer)))}
    fn_name = used[0] if used else ("apply_rotary_pos_emb" if "apply_rotary_pos_emb" in fns else sorted(fns)[0])
    rec["apply_function"] = fn_name
    observe_apply(rec, fns[fn_name], type(rot), rot.config)


def observe_apply(rec: dict, fn: Any, rcls: type, cfg: Any) -> None:
    """The pairing ``fn`` applies, on the unit vectors, with the cos/sin of ``rcls`` (built on the CPU from a
    copy of ``cfg``, default rope type) at position 7."""
    try:
        real = build_rotary(rcls, copy.deepcopy(cfg))
        lt = None
        names = [n for n, _ in real.named_buffers(recurse=False) if n.endswith("inv_freq") and "original" not in n]
        if names and names[0] != "inv_freq":
            lt = names[0][: -len("inv_freq")].rstrip("_")
        out = cos_first(run_rotary(real, [0, 7], lt, rec.get("head_dim") or 2), [0, 7])
        if isinstance(out, (tuple, list)):
            cos, sin = out[0][..., 1:2, :].float(), out[1][..., 1:2, :].float()
            pairing, d, r = observe_pairing(fn, cos, sin, rec.get("head_dim") or cos.shape[-1])
            rec["pairing"] = pairing
            rec["pairing_width"] = d
            if r == 2 * cos.shape[-1]:  # cos/sin hold one column per pair (GPT-J, CodeGen)
                rec["cos_width"] = int(cos.shape[-1])
                rec["rotary_dim"] = r
        else:
            rec["pairing"] = "interleaved" if torch.is_tensor(out) and out.is_complex() else "unobserved"
            rec["pairing_note"] = "complex freqs_cis (view_as_complex of consecutive pairs)"
    except Exception as exc:
        rec["pairing"] = "unobserved"
        rec["pairing_note"] = f"{type(exc).__name__}: {exc}"[:200]


def rotary_alone(
    rec: dict, refs: dict, module: Any, cfg: Any, store: Store, why: str, mcls: type | None = None
) -> bool:
    """When the model cannot be built at its default config: the modeling module's own rotary class, built
    alone from the text config (keys read, arrays, pairing; no layer positions). False when there is none."""
    if module is None:
        return False
    text = cfg
    with contextlib.suppress(Exception):
        text = cfg.get_text_config(decoder=True)
    others = ("vision", "visual", "image", "audio", "vit", "patch")
    found = []
    for name, c in vars(module).items():
        if not (isinstance(c, type) and issubclass(c, torch.nn.Module) and c.__module__ == module.__name__):
            continue
        low = name.lower()
        if ("rotary" in low or "rope" in low) and not any(o in low for o in others):
            params = list(inspect.signature(c.__init__).parameters)
            if params[1:2] == ["config"]:
                found.append(c)
    if not found:
        return False
    rcls = sorted(found, key=lambda c: len(c.__name__))[0]
    rec.update(
        scheme="rope", rotary_class=rcls.__name__, rotary_module_file=rcls.__module__.replace("transformers.", "", 1)
    )
    rec["sub_config"] = config_path(cfg, text) or None
    rec["text_model_type"] = getattr(text, "model_type", None)
    lts = getattr(text, "layer_types", None)
    rec["layer_types"] = list(lts) if isinstance(lts, (list, tuple)) else None
    hd = getattr(text, "head_dim", None)
    if not isinstance(hd, int):
        with contextlib.suppress(Exception):
            hd = int(text.hidden_size // text.num_attention_heads)
    rec["head_dim"] = hd if isinstance(hd, int) else None
    rec["max_position_embeddings"] = getattr(text, "max_position_embeddings", None)
    rec["layer_positions_status"] = why
    rope_section(rec, refs, rcls, text, store)
    fns = apply_functions(module)
    rec["apply_functions"] = sorted(fns)
    if fns:
        fn_name = "apply_rotary_pos_emb" if "apply_rotary_pos_emb" in fns else sorted(fns)[0]
        rec["apply_function"] = fn_name
        observe_apply(rec, fns[fn_name], rcls, text)
    else:
        rec["pairing"] = "unobserved: no apply_rotary* function in the modeling module"
    if rec.get("keys_read"):
        rec["status"] = f"ok (rotary class alone: {why})"[:200]
        if fns and layers_alone(rec, module, text, rcls, fns, mcls):
            rec["status"] = "ok"
            rec["default_not_built"] = why
    return True


_POSITION_ARGS = ("position_embeddings", "freqs_cis", "rotary_pos_emb")


def _is_layer_class(c: Any, module: Any) -> bool:
    """A class of the modeling module built per layer (``__init__(self, config, layer_idx)``) whose forward takes
    the rotary embedding's output, outside the vision and audio towers."""
    others = ("vision", "visual", "image", "audio", "vit", "patch")
    if not (isinstance(c, type) and issubclass(c, torch.nn.Module) and c.__module__ == module.__name__):
        return False
    if any(o in c.__name__.lower() for o in others):
        return False
    init = list(inspect.signature(c.__init__).parameters)
    fwd = inspect.signature(c.forward).parameters
    return init[1:3] == ["config", "layer_idx"] and any(a in fwd for a in _POSITION_ARGS)


def _built_calls(cls: type, module: Any) -> list[tuple[type, bool]]:
    """The modeling module's classes ``cls.__init__`` builds, each with whether it is built unconditionally (no
    ``if``, conditional expression or loop over a choice around the call): read from the code's syntax tree."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))
    except (OSError, TypeError, SyntaxError):
        return []
    out: list[tuple[type, bool]] = []

    def walk(node: ast.AST, guarded: bool) -> None:
        for child in ast.iter_child_nodes(node):
            g = guarded or isinstance(child, (ast.If, ast.IfExp, ast.Try, ast.BoolOp))
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
                c = getattr(module, child.func.id, None)
                if isinstance(c, type) and getattr(c, "__module__", None) == module.__name__:
                    out.append((c, not g))
            walk(child, g)

    walk(tree, False)
    return out


def _layer_classes(module: Any, mcls: type | None) -> list[type]:
    """The classes the model builds per layer, as its own code says: the layer classes ``mcls.__init__`` (or a
    model class it builds: a composite's language model) constructs, then the attention class each of them
    builds unconditionally (a decoder layer whose MoE or mixer cannot be built at the default config: its
    attention alone, where the layer always holds it)."""
    if mcls is None:
        return []
    seen: list[type] = []
    frontier = [mcls]
    for _ in range(3):  # the model, its language model, ...
        nxt = []
        for c in frontier:
            for built, _ in _built_calls(c, module):
                if _is_layer_class(built, module):
                    seen.append(built)
                elif issubclass(built, torch.nn.Module) and built not in nxt:
                    nxt.append(built)
        if seen:
            break
        frontier = nxt
    out = list(dict.fromkeys(seen))
    for layer in list(out):
        attn = [c for c, always in _built_calls(layer, module) if _is_layer_class(c, module)]
        always = [c for c, a in _built_calls(layer, module) if a and _is_layer_class(c, module)]
        if len(set(attn)) == 1 and always:
            out.append(always[0])
    return list(dict.fromkeys(out))


def layers_alone(rec: dict, module: Any, text: Any, rcls: type, fns: dict[str, Any], mcls: type | None) -> bool:
    """When the model cannot be built at its default config: which layers apply positions, from the layer class
    the model's code builds (else the attention class that layer always builds: :func:`_layer_classes`) built
    alone on meta for each layer index and run once with the rotary class's cos/sin and the apply functions wrapped
    (``layer_rope``, ``layer_positions``, ``attention_keys_read``; ``layer_positions_from`` names the class).
    False when no class builds and runs for every layer."""
    n = getattr(text, "num_hidden_layers", None)
    if not isinstance(n, int) or n <= 0:
        return False
    lts = rec.get("layer_types")
    calls: list[int] = []
    current = [-1]

    def wrap(f: Any) -> Any:
        def inner(*a: Any, **k: Any) -> Any:
            calls.append(current[0])
            return f(*a, **k)

        return inner

    for cls in _layer_classes(module, mcls):
        try:
            with torch.device("meta"):
                rot = build_rotary(rcls, copy.deepcopy(text))
        except Exception:
            return False
        per_layer: list[str] = []
        layers: list[tuple[str, torch.nn.Module]] = []
        originals = dict(fns)
        for name, f in fns.items():
            setattr(module, name, wrap(f))
        try:
            for i in range(n):
                current[0] = i
                with torch.device("meta"):
                    layer = cls(copy.deepcopy(text), i)
                forward_attention(layer, rot, lts[i] if lts and i < len(lts) else None)
                per_layer.append("rope" if i in calls else "none")
                layers.append((f"layers.{i}.{cls.__name__}", layer))
        except Exception:
            continue
        finally:
            for name, f in originals.items():
                setattr(module, name, f)
        rec["layer_rope"] = per_layer
        if lts and len(lts) == len(per_layer):
            lp: dict[str, set[str]] = {}
            for lt, p in zip(lts, per_layer):
                lp.setdefault(lt, set()).add(p)
            rec["layer_positions"] = {lt: "/".join(sorted(v)) for lt, v in lp.items()}
        else:
            rec["layer_positions"] = {"default": "/".join(sorted(set(per_layer)))}
        rec["layer_positions_from"] = f"{cls.__name__} built alone on meta for each of the {n} layers"
        rec.pop("layer_positions_status", None)
        attention_reads(rec, layers, rot)
        return True
    return False


def _same_branch(layer: str, rotary_path: str) -> bool:
    """Whether an attention module sits in the same sub-model as the rotary module (language model, not vision)."""
    parent = rotary_path.rsplit(".", 1)[0] if "." in rotary_path else ""
    return layer.startswith(parent + ".") if parent else not re.search(r"vision|visual|audio|image", layer)


def forward_attention(attn: torch.nn.Module, rot: torch.nn.Module, layer_type: str | None, *,
                      zero_mask: bool = False) -> None:  # fmt: skip
    """One attention module's forward on meta tensors, with the position embeddings its rotary module makes;
    ``zero_mask``: where it fails without a mask, again with a zero one (the attention probes only: the layer
    trace keeps its observations, since a forward that runs further calls more functions - DeepSeek-V3.2's
    indexer applies rotate_half beside the attention's interleaved pairs, and ``positions_path`` takes the
    first function called)."""
    n = 6
    lin = next((c for c in attn.modules() if isinstance(c, torch.nn.Linear)), None)
    hidden = lin.in_features if lin is not None else 16
    h = torch.zeros(1, n, hidden, device="meta")
    pos = torch.arange(n, device="meta")[None]
    rparams = inspect.signature(rot.forward).parameters
    pe = None
    for p in (pos, pos[None].expand(3, 1, -1), pos[None].expand(4, 1, -1)):
        try:
            pe = rot(h, p, layer_type) if layer_type is not None and "layer_type" in rparams else rot(h, p)
            break
        except Exception:
            continue
    params = inspect.signature(attn.forward).parameters
    kwargs: dict[str, Any] = {}
    for name in params:
        if name == "hidden_states":
            kwargs[name] = h
        elif name in ("position_embeddings", "freqs_cis", "rotary_pos_emb"):
            kwargs[name] = pe
        elif name == "position_ids":
            kwargs[name] = pos
        elif name == "attention_mask":
            kwargs[name] = None
        elif params[name].default is inspect.Parameter.empty and params[name].kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            kwargs[name] = None  # e.g. Falcon's alibi: None on its rotary path
    with torch.no_grad():
        try:
            attn(**kwargs)
        except Exception:
            if not zero_mask or "attention_mask" not in kwargs:
                raise
            # an attention that adds or slices its mask without a None check (Falcon, DeepSeek-V3.2): a zero mask
            kwargs["attention_mask"] = torch.zeros(1, 1, n, n, device="meta")
            attn(**kwargs)


def attention_reads(rec: dict, layers: list[tuple[str, torch.nn.Module]], rot: torch.nn.Module) -> None:
    """The config keys the attention reads when built and run (meta), first layer of each layer type: the
    position path's arguments (partial rotary width, ``rope_interleave``, scaling) among its other settings. Not
    all positional, but a key read here is not one the positional code provably ignores."""
    cfg = getattr(rot, "config", None)
    if cfg is None:
        return
    lts = rec.get("layer_types") or []
    firsts: dict[Any, int] = {}
    for i, _ in enumerate(layers):
        firsts.setdefault(lts[i] if i < len(lts) else None, i)
    log: set[str] = set()
    problems = []
    for lt, i in firsts.items():
        name, m = layers[i]
        idx = int(re.findall(r"\.(\d+)\.", name)[-1]) if re.findall(r"\.(\d+)\.", name) else i
        rcfg = recording(cfg, log)
        built = None
        for args in ((rcfg, idx), (rcfg,)):
            try:
                with torch.device("meta"), record():
                    built = type(m)(*args)
                break
            except Exception as exc:
                problems.append(f"{type(exc).__name__}: {exc}"[:120])
        if built is None:
            continue
        try:
            with record():
                forward_attention(built, rot, lt)
        except Exception as exc:
            problems.append(f"forward: {type(exc).__name__}: {exc}"[:120])
    rec["attention_keys_read"] = sorted(k for k in log if not k.startswith("_"))
    if problems and not log:
        rec["attention_keys_status"] = problems[0]


# ----- non-RoPE reference tables ----------------------------------------------------------------------------------
def non_rope_tables() -> None:
    """tests/data/inventory/positions.npz and index.json's ``positions``: see non_rope.py."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from non_rope import tables

    store = Store()
    found = tables(store)
    ARRAYS.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(ARRAYS / "positions.npz", **{h: store.arrays[h] for h in sorted(store.arrays)})
    index = json.loads((ARRAYS / "index.json").read_text())
    index["positions"] = found
    (ARRAYS / "index.json").write_text(json.dumps(index, sort_keys=True, indent=0) + "\n")


# ----- architectures -> model type ----------------------------------------------------------------------------
def architectures() -> dict[str, Any]:
    """transformers' own architecture -> model type mapping: every ``MODEL_*_MAPPING_NAMES`` of
    ``transformers.models.auto.modeling_auto`` (model type -> class name) inverted. A class several model types
    name (``LlamaForCausalLM``: llama, exaone, internlm3, ...) is the type whose ``config_class`` the class
    declares; when that is none of them, the sorted list of the types (a config naming it is refused)."""
    types: dict[str, set[str]] = {}
    for name in sorted(n for n in dir(modeling_auto) if n.startswith("MODEL") and n.endswith("_MAPPING_NAMES")):
        for mt, cls in getattr(modeling_auto, name).items():
            for c in cls if isinstance(cls, (list, tuple)) else (cls,):
                types.setdefault(str(c), set()).add(str(mt))
    out: dict[str, Any] = {}
    for cls_name, mts in sorted(types.items()):
        if len(mts) == 1:
            out[cls_name] = next(iter(mts))
            continue
        own = None
        with contextlib.suppress(Exception):
            own = getattr(getattr(transformers, cls_name).config_class, "model_type", None)
        out[cls_name] = own if own in mts else sorted(mts)
    return out


def write_architectures() -> None:
    """Only the ``architectures`` part of the data, the model types' records kept as they are."""
    data = json.loads(DATA.read_text())
    data["architectures"] = architectures()
    dump(data)


# ----- driver -----------------------------------------------------------------------------------------------------
def main(argv: list[str]) -> int:
    if argv == ["--positions"]:
        non_rope_tables()
        return 0
    if argv == ["--architectures"]:
        write_architectures()
        return 0
    if argv[:1] == ["--mechanisms"]:
        mechanisms_pass(argv[1:])
        return 0
    if argv[:1] == ["--attention-probes"]:
        attention_probes_pass(argv[1:])
        return 0
    types = argv or sorted(CONFIG_MAPPING.keys())
    old = json.loads(DATA.read_text()) if DATA.exists() and argv else {"model_types": {}}
    index = json.loads((ARRAYS / "index.json").read_text()) if (ARRAYS / "index.json").exists() and argv else {}
    store = Store()
    if argv and (ARRAYS / "rope.npz").exists():
        with np.load(ARRAYS / "rope.npz") as z:
            store.arrays.update({k: z[k] for k in z.files})
    records = old["model_types"]
    refs = index.get("rope", {})
    signal.signal(signal.SIGALRM, _alarm)
    for i, mt in enumerate(types):
        signal.alarm(TIMEOUT)
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink):
                rec, ref = visit(mt, store)
                if rec.get("rotary_path") and rec.get("attention_keys_read"):
                    try:  # issue 36.5: the attention keys whose values change the pairing or the rotating layers
                        rec["attention_probes"] = attention_probes(mt, rec)
                    except Exception as exc:
                        rec["attention_probes_status"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        except Timeout:
            rec, ref = {"model_type": mt, "config_class": CONFIG_MAPPING[mt].__name__, "scheme": "unobserved",
                        "status": f"timed out after {TIMEOUT} s"}, {}  # fmt: skip
        except Exception as exc:
            rec, ref = {"model_type": mt, "config_class": CONFIG_MAPPING[mt].__name__, "scheme": "unobserved",
                        "status": f"{type(exc).__name__}: {exc}"[:200]}, {}  # fmt: skip
            traceback.print_exc(limit=2, file=sys.stderr)
        finally:
            signal.alarm(0)
        records[mt] = jsonable(rec)
        if ref:
            refs[mt] = ref
        else:
            refs.pop(mt, None)
        print(f"{i + 1}/{len(types)} {mt}: {rec.get('scheme')} {rec.get('pairing', '')} {rec.get('status')}",
              file=sys.stderr, flush=True)  # fmt: skip
    from vision_rotary import observe_all  # the vision towers' rotary modules (tools/inventory/vision_rotary.py)

    observe_all(records, types)
    from vision_tables import observe_all as observe_tables  # the code resizing each learned vision table

    observe_tables(records, types)
    write(records, refs, store, index)
    if not argv:
        non_rope_tables()
    return 0


def mechanisms_pass(types: list[str]) -> None:
    """``--mechanisms [TYPE ...]``: only ``mechanisms``, ``components`` and the ``scheme`` they give, observed
    again for the types (all by default) and merged into the data under a lock (several passes may run at
    once, each on its own types); the other fields are kept as the last full run wrote them."""
    import fcntl

    records = json.loads(DATA.read_text())["model_types"]
    types = types or sorted(records)
    done: dict[str, dict] = {}
    signal.signal(signal.SIGALRM, _alarm)
    for i, mt in enumerate(types):
        rec = {k: v for k, v in records[mt].items()
               if k not in ("mechanisms", "components", "mechanisms_status", "mechanisms_config")}  # fmt: skip
        signal.alarm(TIMEOUT)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                cfg = AutoConfig.for_model(mt)
                with contextlib.suppress(Exception):
                    cfg._attn_implementation = "eager"
                pkg = CONFIG_MAPPING[mt].__module__.rsplit(".", 1)[0]
                try:
                    module = importlib.import_module(pkg + ".modeling_" + pkg.rsplit(".", 1)[1])
                except ImportError:
                    module = None
                mcls = model_class(cfg, module)
                if mcls is not None:
                    place_mechanisms(rec, mcls, cfg, built="not built" not in str(rec.get("status")))
        except Timeout:
            rec["mechanisms_status"] = f"timed out after {TIMEOUT} s"
        except Exception as exc:
            rec["mechanisms_status"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        finally:
            signal.alarm(0)
        done[mt] = jsonable(rec)
        print(f"{i + 1}/{len(types)} {mt}: {rec.get('scheme')} {rec.get('mechanisms_status', '')}", file=sys.stderr,
              flush=True)  # fmt: skip
    with open(DATA.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(DATA.read_text())
        for mt, rec in done.items():  # only this pass's fields: another pass may have written others since
            now = data["model_types"].setdefault(mt, {})
            for k in ("mechanisms", "components", "mechanisms_status", "mechanisms_config", "scheme"):
                now.pop(k, None)
                if k in rec:
                    now[k] = rec[k]
        dump(data)
    DATA.with_suffix(".lock").unlink(missing_ok=True)


#: layers an attention probe builds (enough for every-n-th rules of the usual intervals)
PROBE_LAYERS = 12


def _optional(cls: type, key: str) -> bool:
    """Whether ``cls`` (a config class) annotates ``key`` as optional (``int | None``): None is then a value its
    own code takes (Cohere2's ``sliding_window``: no window, no rotation), so the attention is probed with it."""
    for klass in cls.__mro__:
        ann = getattr(klass, "__annotations__", {}).get(key)
        if ann is not None:
            return "None" in str(ann)
    return False


def _alternatives(v: Any, optional: bool = False) -> list[Any]:
    """Other values of a config value to probe the attention with: a bool flipped, an integer doubled (or 1
    where it is 0), a list of 0/1 flags flipped; ``None`` too where the config class annotates the key as optional,
    and 1 for an optional key whose default is ``None``."""
    if isinstance(v, bool):
        out: list[Any] = [not v]
    elif isinstance(v, int):
        out = [2 * v if v else 1]
    elif isinstance(v, list) and v and all(isinstance(x, (bool, int)) and x in (0, 1) for x in v):
        out = [[type(x)(1 - x) for x in v]]
    elif v is None and optional:
        return [1]
    else:
        return []
    return [*out, None] if optional else out


def attention_observed(layers: list[tuple[str, torch.nn.Module]], rot: torch.nn.Module, cfg: Any,
                       fns: dict[str, Any], module: Any, lts: list | None) -> dict[str, Any]:  # fmt: skip
    """Each layer's attention class built alone on meta from ``cfg`` (for its own layer index) and run once:
    which layers call an apply function (``layer_rope``) and which functions (``apply_functions_called``)."""
    calls: list[tuple[int, str]] = []
    current = [-1]

    def wrap(n: str, f: Any) -> Any:
        def inner(*a: Any, **k: Any) -> Any:
            calls.append((current[0], n))
            return f(*a, **k)

        return inner

    per_layer = []
    for n, f in fns.items():
        setattr(module, n, wrap(n, f))
    try:
        for i, (name, m) in enumerate(layers[:PROBE_LAYERS]):
            idx = _layer_index(name, i)
            current[0] = idx
            built = None
            for args in ((cfg, idx), (cfg,)):
                try:
                    with torch.device("meta"):
                        built = type(m)(*args)
                    break
                except Exception:
                    continue
            if built is None:
                raise RuntimeError(f"{type(m).__name__} not built from the probed config")
            lt = getattr(cfg, "layer_types", None)
            forward_attention(built, rot, lt[idx] if isinstance(lt, list) and idx < len(lt) else None, zero_mask=True)
            per_layer.append("rope" if any(c[0] == idx for c in calls) else "none")
    finally:
        for n, f in fns.items():
            setattr(module, n, f)
    return {"layer_rope": per_layer, "apply_functions_called": sorted({n for _, n in calls})}


def attention_probes(mt: str, rec: dict) -> list[dict[str, Any]]:
    """Issue 36.5: which config keys the attention reads change the pairing or which layers rotate. The model is
    built on meta at the default config; each attention-read key of the rotary module's config (not one the
    rotary class reads: the width probes cover those) is given another value (``_alternatives``) and each layer's
    attention class built and run again; a key whose value changed the layers that call an apply function, or
    the function called, is a probe ``{set, was, layer_rope, apply_functions_called, pairing?}`` (the first
    entry: the default config, ``set`` empty, and ``tried``: every key -> the values its attention was built and
    run with, changed or not, so that a reader tells a value observed to change nothing from one never tried)."""
    cfg = AutoConfig.for_model(mt)
    with contextlib.suppress(Exception):
        cfg._attn_implementation = "eager"
    pkg = CONFIG_MAPPING[mt].__module__.rsplit(".", 1)[0]
    try:
        module = importlib.import_module(pkg + ".modeling_" + pkg.rsplit(".", 1)[1])
    except ImportError:  # a type built by another family's classes (EXAONE, InternLM3: Llama's), as visit does
        module = None
    mcls = model_class(cfg, module)
    if mcls is None:
        raise RuntimeError("no model class in transformers' auto mappings")
    with torch.device("meta"):
        model = mcls(cfg)
    rot = model.get_submodule(rec["rotary_path"])
    layers: list[tuple[str, torch.nn.Module]] = []
    for name, m in model.named_modules():
        leaf = name.rsplit(".", 1)[-1].lower()
        if (
            re.search(r"(attention|attn)$", leaf)
            and re.search(r"\.\d+\.", name)
            and _same_branch(name, rec["rotary_path"])
            and not any(name.startswith(n + ".") for n, _ in layers)
        ):
            layers.append((name, m))
    if not layers:
        raise RuntimeError("no attention layer in the rotary module's branch")
    amod = sys.modules[type(layers[0][1]).__module__]
    fns = apply_functions(amod)
    rcfg = getattr(rot, "config", None)
    if rcfg is None:  # a rotary class not built from a config (GPT-J's, CodeGen's): the text config the model keeps
        rcfg = cfg.get_text_config(decoder=True) if hasattr(cfg, "get_text_config") else cfg
    base = attention_observed(layers, rot, rcfg, fns, amod, None)
    tried: dict[str, list[Any]] = {}
    out = [{"set": {}, **base, "tried": tried}]
    rotary_reads = {k.split(".")[0] for keys in (rec.get("keys_read") or {}).values() for k in keys}
    for key in rec.get("attention_keys_read") or []:
        if "." in key or key in rotary_reads:
            continue
        try:
            was = getattr(rcfg, key)
        except Exception:  # absent, or one value per layer (EmbeddingGemma 2's per_layer_config): not probed here
            continue
        for value in _alternatives(was, _optional(type(rcfg), key)):
            probe = copy.deepcopy(rcfg)
            try:
                setattr(probe, key, value)
                got = attention_observed(layers, rot, probe, fns, amod, None)
            except Exception:
                continue
            tried.setdefault(key, []).append(value)  # observed (changed or not): the values posenc may trust
            if got != base:
                entry = {"set": {key: value}, "was": {key: was}, **got}
                new = [f for f in got["apply_functions_called"] if f not in base["apply_functions_called"]]
                if new:  # another apply function: its pairing, observed as the default one was
                    tmp: dict[str, Any] = {"head_dim": rec.get("head_dim")}
                    observe_apply(tmp, fns[new[0]], type(rot), rcfg)
                    entry["pairing"] = tmp.get("pairing")
                out.append(entry)
    return out


def attention_probes_pass(types: list[str]) -> None:
    """``--attention-probes [TYPE ...]``: only ``attention_probes`` (see :func:`attention_probes`), for the
    types whose rotary class this tool ran (all such by default), merged field by field under the lock."""
    import fcntl

    records = json.loads(DATA.read_text())["model_types"]
    types = types or sorted(mt for mt, r in records.items() if r.get("rotary_path") and r.get("attention_keys_read"))
    done: dict[str, dict[str, Any]] = {}
    signal.signal(signal.SIGALRM, _alarm)
    for i, mt in enumerate(types):
        rec = records[mt]
        got: dict[str, Any] = {}
        signal.alarm(TIMEOUT)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                got["attention_probes"] = attention_probes(mt, rec)
        except Timeout:
            got["attention_probes_status"] = f"timed out after {TIMEOUT} s"
        except Exception as exc:
            got["attention_probes_status"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        finally:
            signal.alarm(0)
        done[mt] = jsonable(got)
        print(f"{i + 1}/{len(types)} {mt}: {len(got.get('attention_probes') or []) - 1} probes "
              f"{got.get('attention_probes_status', '')}", file=sys.stderr, flush=True)  # fmt: skip
    with open(DATA.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(DATA.read_text())
        for mt, got in done.items():
            rec = data["model_types"][mt]
            rec.pop("attention_probes", None)
            rec.pop("attention_probes_status", None)
            rec.update(got)
        dump(data)
    DATA.with_suffix(".lock").unlink(missing_ok=True)


def dump(data: dict[str, Any]) -> None:
    """The data file: compact, sorted keys, one architecture and one record per line (a re-run's diff shows the
    entries that changed)."""
    DATA.parent.mkdir(parents=True, exist_ok=True)
    head = {k: v for k, v in data.items() if k not in ("model_types", "architectures")}
    lines = ['{"architectures":{']
    lines.append(",\n".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in sorted(data["architectures"].items())))
    lines.append("}," + json.dumps(head, sort_keys=True, separators=(",", ":"))[1:-1] + ',"model_types":{')
    recs = [
        f"{json.dumps(k)}:{json.dumps(v, sort_keys=True, separators=(',', ':'))}"
        for k, v in sorted(data["model_types"].items())
    ]
    lines.append(",\n".join(recs))
    lines.append("}}")
    DATA.write_text("\n".join(lines) + "\n")


def write(records: dict, refs: dict, store: Store, index: dict) -> None:
    data = {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__.split("+")[0],
        "generator": "tools/inventory/make_inventory.py",
        "config_mapping": {
            "count": len(list(CONFIG_MAPPING.keys())),
            "sha1": hashlib.sha1("\n".join(sorted(CONFIG_MAPPING.keys())).encode()).hexdigest(),
        },
        "architectures": architectures(),
        "model_types": {k: records[k] for k in sorted(records)},
    }
    dump(data)
    used = {h for ref in refs.values() for per in ref.values() for e in per.values() for k, h in e.items()
            if k in ("cos", "sin", "inv_freq")}  # fmt: skip
    used |= {
        h for rec in records.values() for p in rec.get("width_probes") or [] for h in p.get("inv_freq", {}).values()
    }
    ARRAYS.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(ARRAYS / "rope.npz", **{h: store.arrays[h] for h in sorted(used)})
    index = {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__.split("+")[0],
        "generator": "tools/inventory/make_inventory.py",
        "how": "rope[model_type][rope_type][layer_type] = {positions, cos, sin, inv_freq, attention_scaling}: "
        "names of float32 arrays in rope.npz (content-addressed, shared between types); cos/sin as the type's "
        "own rotary class returns them for one forward call over all the positions",
        "rope": {k: refs[k] for k in sorted(refs)},
        **{k: v for k, v in index.items() if k not in ("rope", "transformers_version", "torch_version", "generator",
                                                          "how")},
    }  # fmt: skip
    (ARRAYS / "index.json").write_text(json.dumps(index, sort_keys=True, indent=0) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
