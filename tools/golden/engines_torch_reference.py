"""Reference rotary tables of vLLM and SGLang, from their own rotary-embedding code (side environment; not run by
the suite).

    python3 -m venv /work/side/engines/venv
    /work/side/engines/venv/bin/pip install torch==2.13.0 transformers==5.24.0 numpy
    pip download --no-deps -d wheels vllm==0.33.0 sglang==0.5.23      # unpacked into SRC, never installed
    /work/side/engines/venv/bin/python tools/golden/engines_torch_reference.py SRC tests/data/engines/torch.npz

SRC holds the two wheels unpacked (``vllm/`` and ``sglang/``). Only the packages
``vllm.model_executor.layers.rotary_embedding`` and ``sglang.srt.layers.rotary_embedding`` are imported from
them as they are; every other ``vllm.*`` / ``sglang.*`` module they import is a stub (CUDA kernels, platforms,
loggers, environment flags, the distributed and config machinery). The stubs, all of them:

* any stubbed module's attribute is a permissive object: calling it returns None (so ``is_cuda()``,
  ``is_hip()``, ``publish_role()``, ``envs.X.get()`` and ``current_platform.is_out_of_tree()`` are all falsy: the
  CPU path), used as a decorator it returns the function unchanged (``CustomOp.register``, ``triton.jit``), as a
  base class it is ``object``;
* ``vllm.model_executor.custom_op.CustomOp`` and ``sglang.kernels.fused_op.BaseFusedOp``: ``torch.nn.Module``
  whose ``forward`` is ``forward_native`` (the pure-torch path), ``CustomOp.enabled()`` False;
* ``vllm.config.get_current_vllm_config()``: an object whose ``model_config.max_model_len`` is the value this
  script sets (what vLLM's engine would have derived: see ``vllm_default_max_model_len``);
* ``vllm.logger.init_logger``: the standard ``logging.getLogger``.

No line of the two packages' arithmetic is replaced: ``get_rope`` (the factory each model file calls) builds the
module, and the table is read by rotating unit vectors through the module's own ``forward_native`` (``forward``
for the LongRoPE classes): the query holds 1 in the first feature of each rotated pair and 0 in the second, so
the output holds ``cos`` there and ``sin`` in the pair's second feature exactly (``1 cos - 0 sin``,
``0 cos + 1 sin``). vLLM's default ``max_model_len`` comes from its own ``_get_and_verify_max_len``
(vllm/config/model.py, executed from its source with the same stubs) on the config as transformers 5.24 reads
it, as vLLM does.

Stored per case NAME: ``NAME.positions`` (int64), ``NAME.cos``/``NAME.sin`` (float32, positions x rotated pairs,
the pair's first feature order: neox = columns 0..r/2-1, gpt-j = even columns), ``NAME.meta`` (JSON: engine,
version, config, options, batch semantics).
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import json
import logging
import math
import sys
import types
from pathlib import Path

import numpy as np
import torch

SRC, OUT = Path(sys.argv[1]), Path(sys.argv[2])
ROOT = Path(__file__).resolve().parents[2]
REAL = ("vllm.model_executor.layers.rotary_embedding", "sglang.srt.layers.rotary_embedding")


class Anything:
    """A stubbed attribute: falsy, callable (returns None; as a decorator returns the function), subclassable."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, key: str) -> Anything:
        if key.startswith("__"):
            raise AttributeError(key)
        return Anything(f"{self._name}.{key}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return None

    def __bool__(self) -> bool:
        return False

    def __mro_entries__(self, bases):
        return (object,)


class StubModule(types.ModuleType):
    def __getattr__(self, key: str):
        if key.startswith("__"):
            raise AttributeError(key)
        return Anything(f"{self.__name__}.{key}")


class Stubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Every vllm.* / sglang.* / kernel module outside REAL is a StubModule (a package, so submodules resolve)."""

    PREFIXES = ("vllm", "sglang", "sgl_kernel", "sgl_kernel_npu", "aiter", "flashinfer", "torch_npu")

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in self.PREFIXES:
            return None
        if any(fullname == r or fullname.startswith(r + ".") for r in REAL):
            return None  # the real file, found on sys.path
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        m = StubModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, Stubs())
sys.path.insert(0, str(SRC))
for pkg in ("vllm", "vllm.model_executor", "vllm.model_executor.layers", "sglang", "sglang.srt", "sglang.srt.layers"):
    m = StubModule(pkg)
    m.__path__ = [str(SRC / pkg.replace(".", "/"))]  # real directories: REAL's files load, their __init__ do not
    sys.modules[pkg] = m


class CustomOp(torch.nn.Module):
    def __init__(self, *args, **kwargs) -> None:  # enforce_enable=...: dispatch settings only
        super().__init__()

    @classmethod
    def register(cls, name):
        return lambda c: c

    @classmethod
    def enabled(cls) -> bool:
        return False

    def forward(self, *args, **kwargs):
        return self.forward_native(*args, **kwargs)


class BaseFusedOp(torch.nn.Module):
    def forward(self, *args, **kwargs):
        return self.forward_native(*args, **kwargs)


MAX_MODEL_LEN = [0]
vconfig = types.SimpleNamespace(model_config=types.SimpleNamespace(max_model_len=0))


def get_current_vllm_config():
    vconfig.model_config.max_model_len = MAX_MODEL_LEN[0]
    return vconfig


for name, attrs in {
    "vllm.model_executor.custom_op": {"CustomOp": CustomOp, "PluggableLayer": CustomOp},
    "sglang.kernels.fused_op": {"BaseFusedOp": BaseFusedOp},
    "vllm.config": {"get_current_vllm_config": get_current_vllm_config},
    "vllm.logger": {"init_logger": logging.getLogger},
}.items():
    m = StubModule(name)
    m.__path__ = []
    m.__dict__.update(attrs)
    sys.modules[name] = m

import transformers  # noqa: E402
vrope = importlib.import_module("vllm.model_executor.layers.rotary_embedding")
sfactory = importlib.import_module("sglang.srt.layers.rotary_embedding.factory")


def vllm_default_max_model_len(hf_config) -> int:
    """vLLM's own _get_and_verify_max_len and derive_max_model_len_and_key, executed from the wheel's source."""
    from transformers.configuration_utils import ALLOWED_LAYER_TYPES

    env = {"logger": logging.getLogger("vllm"), "ALLOWED_LAYER_TYPES": ALLOWED_LAYER_TYPES, "envs": Anything("envs"),
           "current_platform": types.SimpleNamespace(check_max_model_len=lambda n: n)}
    for rel, fname in (("vllm/config/model.py", "_get_and_verify_max_len"),
                       ("vllm/transformers_utils/config.py", "iter_rope_parameters"),
                       ("vllm/transformers_utils/config.py", "is_rope_parameters_nested"),
                       ("vllm/transformers_utils/model_arch_config_convertor.py", "derive_max_model_len_and_key")):
        tree = ast.parse((SRC / rel).read_text())
        node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == fname)
        node.decorator_list = []
        node.returns = None
        for a in node.args.args + node.args.kwonlyargs:
            a.annotation = None
        code = compile(ast.Module([node], []), rel, "exec")
        exec(code, env)
    conv = types.SimpleNamespace(hf_text_config=hf_config)
    arch = types.SimpleNamespace(derived_max_model_len_and_key=env["derive_max_model_len_and_key"](conv))
    return env["_get_and_verify_max_len"](hf_config, arch, None, None, False, None)


POSITIONS = [0, 1, 2, 3, 17, 100, 1000, 2047, 2048, 4095, 4096, 4097, 8191, 8192, 16383, 32767, 32768, 65535,
             131071, 131072, 163839]


def hf_config(path: Path):
    raw = json.loads(path.read_text())
    return transformers.AutoConfig.for_model(**raw)


def rope_args(cfg):
    """What the model files pass to get_rope: head size, max_position (config.max_position_embeddings), the
    rope_parameters dict as transformers 5.24 standardises it (vLLM) or the rope_scaling dict (SGLang's get_rope
    reads rope_theta and rope_scaling separately)."""
    text = cfg.get_text_config()
    rp = dict(text.rope_parameters or {})
    head = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    if getattr(text, "qk_rope_head_dim", None):
        head = text.qk_rope_head_dim
    return text, head, int(text.max_position_embeddings), rp


def cache_rows(module) -> int:
    for name in ("cos_sin_cache", "long_short_cos_sin_cache"):
        if name in module._buffers or name in module.__dict__:
            return int(getattr(module, name).shape[0])
    raise SystemExit(f"{type(module).__name__}: no cache among {list(module._buffers)} {sorted(module.__dict__)}")


def read_table(module, positions: list[int], rot: int, head: int, neox: bool) -> tuple[np.ndarray, np.ndarray]:
    """Rotate unit vectors through the module's forward: cos and sin per rotated pair."""
    n = len(positions)
    q = torch.zeros(n, head, dtype=torch.float32)
    if neox:
        q[:, : rot // 2] = 1
    else:
        q[:, 0:rot:2] = 1
    pos = torch.tensor(positions, dtype=torch.int64)
    fwd = module.forward_native if hasattr(module, "forward_native") else module.forward
    if "Deepseek" in type(module).__name__:  # its forward takes (tokens, heads, head_size)
        q = q[:, None, :]
    out, _ = fwd(pos, q.clone(), q.clone())
    out = out.reshape(n, head).numpy()
    if neox:
        return out[:, : rot // 2].copy(), out[:, rot // 2 : rot].copy()
    return out[:, 0:rot:2].copy(), out[:, 1:rot:2].copy()


CASES = {  # name: (config, neox pairing as the model file passes it)
    "llama31": ("configs/llama.json", True),
    "mistral": ("configs/mistral.json", True),
    "phi35": ("configs/phi3.json", True),
    "gpt_oss": ("configs/gpt_oss.json", True),
    "qwen25_yarn": ("engines/qwen2_5_yarn.json", True),
    "deepseek_v3": ("configs/deepseek_v3.json", False),
    "cohere": ("configs/cohere.json", False),
    # GlmForCausalLM has no model file in vLLM (registry: Transformers backend) nor SGLang: both run HF's rotary
    # code for it; get_rope with GLM's settings (interleaved, half rotated) is what their glm4.py files build
    "glm4": ("configs/glm.json", False),
    "llama2_dynamic": ("engines/llama2_dynamic.json", True),
}
out: dict[str, np.ndarray] = {}


def store(name: str, positions, cos, sin, meta: dict) -> None:
    out[f"{name}.positions"] = np.asarray(positions, dtype=np.int64)
    out[f"{name}.cos"] = np.asarray(cos, dtype=np.float32)
    out[f"{name}.sin"] = np.asarray(sin, dtype=np.float32)
    out[f"{name}.meta"] = np.array(json.dumps(meta))
    print(name, len(positions), "rows", file=sys.stderr)


for case, (rel, neox) in CASES.items():
    cfg = hf_config(ROOT / "tests" / "data" / rel)
    text, head, max_pos, rp = rope_args(cfg)
    rot = int(head * rp.get("partial_rotary_factor", getattr(text, "partial_rotary_factor", None) or 1.0))
    rp_v = {**rp, "partial_rotary_factor": rot / head}
    if case == "deepseek_v3":
        rp_v["rope_type"] = "deepseek_yarn"  # vllm/model_executor/models/deepseek_v2.py sets it for yarn
    # ----- vLLM
    default_len = vllm_default_max_model_len(text)
    for label, mml in (("default", default_len), ("long", None)):
        if label == "long" and rp.get("rope_type") != "longrope":
            continue
        MAX_MODEL_LEN[0] = max_pos if mml is None else mml
        vrope._ROPE_DICT.clear()
        module = vrope.get_rope(head, max_pos, is_neox_style=neox, rope_parameters=rp_v, dtype=torch.float32)
        rows = cache_rows(module)
        limit = min(rows, MAX_MODEL_LEN[0])
        if rp.get("rope_type") == "longrope":
            limit = MAX_MODEL_LEN[0]
        pos = [p for p in POSITIONS if p < limit]
        cos, sin = read_table(module, pos, rot, head, neox)
        store(f"vllm.{case}.{label}", pos, cos, sin, {
            "engine": "vllm", "version": "0.33.0", "config": rel, "max_model_len": MAX_MODEL_LEN[0],
            "default_max_model_len": default_len, "cache_rows": int(rows), "class": type(module).__name__})
    # ----- SGLang
    theta = rp.get("rope_theta", 10000)
    scaling = None if rp.get("rope_type", "default") == "default" else {
        k: v for k, v in rp.items() if k not in ("rope_theta", "partial_rotary_factor")}
    if scaling is not None and case == "deepseek_v3":
        scaling["rope_type"] = "deepseek_yarn"  # sglang/srt/models/deepseek_v2.py: yarn -> deepseek_yarn
    module = sfactory.get_rope(head, rot, max_pos, theta, neox, scaling, torch.float32)
    batches = [("all", POSITIONS)]
    if rp.get("rope_type") == "longrope":
        o = int(rp["original_max_position_embeddings"])
        batches = [("short", [p for p in POSITIONS if p < o]), ("boundary", [p for p in POSITIONS if p <= o]),
                   ("long", POSITIONS)]
    for label, pos in batches:
        rows = cache_rows(module)
        pos = [p for p in pos if p < rows] if rp.get("rope_type") != "longrope" else [p for p in pos if p < max_pos]
        cos, sin = read_table(module, pos, rot, head, neox)
        store(f"sglang.{case}.{label}", pos, cos, sin, {
            "engine": "sglang", "version": "0.5.23", "config": rel, "batch": "one batch holding these positions",
            "cache_rows": int(rows), "class": type(module).__name__})

np.savez_compressed(OUT, **out)
print("wrote", OUT, OUT.stat().st_size, "bytes", file=sys.stderr)
