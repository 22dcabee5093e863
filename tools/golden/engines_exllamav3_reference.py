"""Reference rotary tables of exllamav3, from its own config parsing and ``RoPE`` class (side environment; not run by
the suite), and the architecture table of posenc_cli/models/engines.py (EXL3_ARCHITECTURES, EXL3_READERS).

    pip download --no-deps -d wheels exllamav3==1.6.5          # unpacked into SRC, never installed
    /work/side/venv/bin/python tools/golden/engines_exllamav3_reference.py SRC tests/data/engines/exllamav3.npz

(/work/side/venv: torch 2.13.0 CPU.) exllamav3's CUDA extension (``exllamav3.ext``, ``exllamav3_ext``) and the
optional packages its model files import (triton, flash_attn, PIL, ...) are stubs: a stubbed attribute is a
permissive object (calling it returns another, as a decorator it returns the function). Nothing of
``exllamav3/util/rope.py`` or ``exllamav3/model/config.py`` is replaced, except ``SafetensorsCollection`` (the
weights' index, which RoPE never reads): each case's config.json is written to a directory, the architecture's own
``Config`` class parses it (``Config.from_directory``), ``RoPE("cpu", config.rope_settings)`` builds the module,
and ``RoPE.compute_sincos`` (the float32 torch path of ``apply_torch``, the same ``inv_freq`` and attention factor
that the CUDA kernel ``ext.rope`` reads) gives sin and cos at the stored positions.

A config's keys that RoPE never reads but the parser demands (``intermediate_size``, ``rms_norm_eps``, ...) are
filled with FILL when missing: the filler is said per case in its meta (``filled``).

Stored per case NAME: ``NAME.positions`` (int64), ``NAME.cos``/``NAME.sin`` (float32, positions x rotated pairs:
NEOX columns 0..r/2-1, GPT-J even columns), ``NAME.inv_freq`` (float32), ``NAME.meta`` (JSON: config, the
RopeSettings exllamav3 read, its attention factor, the filler). A refused config stores only ``NAME.meta`` with
``refused``: exllamav3's exception, type and message.

Printed on stdout: EXL3_ARCHITECTURES (every architecture ``get_architectures()`` loads) and EXL3_READERS (the
architectures whose Config class reads RoPE with one plain ``read_rope_settings_default`` call: its arguments),
read from the classes' source with ``ast``.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import inspect
import json
import sys
import tempfile
import textwrap
import types
from pathlib import Path

import numpy as np
import torch

SRC, OUT = Path(sys.argv[1]), Path(sys.argv[2])
ROOT = Path(__file__).resolve().parents[2]


class Anything:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, key: str) -> Anything:
        if key.startswith("__"):
            raise AttributeError(key)
        return Anything(f"{self._name}.{key}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return Anything(f"{self._name}()")

    def __bool__(self) -> bool:
        return False

    def __mro_entries__(self, bases):
        return (object,)


class StubModule(types.ModuleType):
    def __getattr__(self, key: str):
        if key.startswith("__"):
            raise AttributeError(key)
        return Anything(f"{self.__name__}.{key}")


STUBBED = ("exllamav3.ext", "exllamav3_ext", "flash_attn", "flashinfer", "marisa_trie", "formatron", "kbnf", "triton",
           "PIL", "cv2", "av", "decord", "numba")


class Stubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if any(fullname == s or fullname.startswith(s + ".") for s in STUBBED):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        m = StubModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, Stubs())
sys.path.insert(0, str(SRC))

import exllamav3  # noqa: E402
from exllamav3.architecture.architectures import get_architectures  # noqa: E402
from exllamav3.model import config as exl_config  # noqa: E402
from exllamav3.model.config import Config  # noqa: E402
from exllamav3.util.rope import RoPE, RopeStyle  # noqa: E402

exl_config.SafetensorsCollection = lambda *args, **kwargs: None
VERSION = exllamav3.__version__ if hasattr(exllamav3, "__version__") else "1.6.5"
ARCHS = get_architectures()


# ----- the architecture table -------------------------------------------------------------------------------
def readers() -> dict[str, tuple]:
    """arch -> (rope style, default theta, default partial factor, yarn_mscale_ratio, head-dim key) for each
    Config class whose __init__ (its own or inherited) makes exactly one ``read_rope_settings_default`` call, into
    ``self.rope_settings``, with literal arguments and no config_dict / theta_key / override_type, and reads the
    head dim as ``read_cfg(int, "head_dim", None)`` falling back to hidden_size // num_q_heads (both read with
    no_default: demanded), or passes ``override_head_dim = self.qk_rope_head_dim`` read from "qk_rope_head_dim"
    (demanded)."""
    out = {}
    for arch, d in sorted(ARCHS.items()):
        cls = d["config_class"]
        # the first __init__ up the MRO that reads RoPE; those below it may only pass arguments up (no "rope",
        # no "head_dim" in their source: Qwen2Config and MistralConfig call LlamaConfig's)
        src = None
        for c in cls.__mro__:
            if "__init__" not in c.__dict__ or c is Config:
                continue
            text = textwrap.dedent(inspect.getsource(c.__dict__["__init__"]))
            if "read_rope_settings_default" in text:
                src = text
                break
            if "rope" in text or "head_dim" in text or "super().__init__(" not in text:
                break
        if src is None:
            continue
        tree = ast.parse(src)
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == "read_rope_settings_default"]
        if len(calls) != 1:
            continue
        call = calls[0]
        assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.value is call]
        if not (assigns and ast.unparse(assigns[0].targets[0]) == "self.rope_settings"):
            continue
        if len(call.args) != 1 or not ast.unparse(call.args[0]).startswith("RopeStyle."):
            continue
        style = ast.unparse(call.args[0]).split(".")[1]
        kw = {k.arg: k.value for k in call.keywords}
        if set(kw) - {"default_rope_theta", "default_partial_rotary_factor", "yarn_mscale_ratio", "override_head_dim"}:
            continue
        try:
            theta = float(ast.literal_eval(kw["default_rope_theta"])) if "default_rope_theta" in kw else 10000.0
            prf = float(ast.literal_eval(kw["default_partial_rotary_factor"])) if "default_partial_rotary_factor" in kw else 1.0
            ratio = bool(ast.literal_eval(kw["yarn_mscale_ratio"])) if "yarn_mscale_ratio" in kw else False
        except ValueError:
            continue
        if "override_head_dim" in kw:
            if ast.unparse(kw["override_head_dim"]) != "self.qk_rope_head_dim" or \
                    'self.qk_rope_head_dim = self.read_cfg(int, "qk_rope_head_dim", no_default)' not in src:
                continue
            head = "qk_rope_head_dim"
        else:
            if 'self.head_dim = self.read_cfg(int, "head_dim", None)' not in src or \
                    "self.head_dim = self.hidden_size // self.num_q_heads" not in src or \
                    'self.hidden_size = self.read_cfg(int, "hidden_size", no_default)' not in src or \
                    'self.num_q_heads = self.read_cfg(int, "num_attention_heads", no_default)' not in src:
                continue
            head = "head_dim"
        out[arch] = (style, theta, prf, ratio, head)
    return out


print(f"# exllamav3 {VERSION}: {len(ARCHS)} architectures")
print(f"EXL3_ARCHITECTURES = frozenset({sorted(ARCHS)!r})  # fmt: skip")
print(f"EXL3_READERS = {readers()!r}  # fmt: skip")

# ----- the tables -------------------------------------------------------------------------------------------
FILL = {"intermediate_size": 1024, "rms_norm_eps": 1e-6, "num_hidden_layers": 2, "vocab_size": 32000,
        "hidden_act": "silu", "num_local_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 512,
        "n_routed_experts": 4, "n_shared_experts": 1, "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1,
        "routed_scaling_factor": 1.0, "norm_topk_prob": True, "kv_lora_rank": 512, "q_lora_rank": 1536,
        "sliding_window": 128, "layer_norm_eps": 1e-5}
POSITIONS = [0, 1, 2, 3, 17, 100, 1000, 2047, 2048, 4095, 4096, 4097, 8191, 8192, 16383, 32767, 32768, 40959,
             65535, 131071]

CASES = {  # name: config (relative to the repository)
    "llama31": "tests/data/configs/llama.json",
    "mistral": "tests/data/configs/mistral.json",
    "llama2_linear": "tests/data/engines/exllamav3/llama2_linear.json",
    "qwen25_yarn_equal": "tests/data/engines/qwen2_5_yarn.json",
    "qwen3_yarn": "tests/data/engines/exllamav3/qwen3_yarn.json",
    "phi35": "docs/examples/phi-3.5-mini.json",
    "phi4_mini": "tests/data/engines/exllamav3/phi4_mini.json",
    "deepseek_v3": "tests/data/configs/deepseek_v3.json",
    "gpt_oss": "tests/data/configs/gpt_oss.json",
    "glm4": "tests/data/engines/exllamav3/glm4.json",
    # refused
    "llama2_dynamic": "tests/data/engines/llama2_dynamic.json",
    "phi4_no_architectures": "tests/data/configs/phi3.json",
    "gpt_oss_no_max_positions": "tests/data/configs/gpt_oss.json",  # without max_position_embeddings (DROP)
    "phi35_no_original": "docs/examples/phi-3.5-mini.json",  # without original_max_position_embeddings (DROP)
}
DROP = {"gpt_oss_no_max_positions": "max_position_embeddings", "phi35_no_original": "original_max_position_embeddings"}
out: dict[str, np.ndarray] = {}


def parse(cfg: dict) -> tuple[object, list[str]]:
    """The architecture's Config class on ``cfg``, filling the non-RoPE keys its parser demands."""
    filled: list[str] = []
    while True:
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "config.json").write_text(json.dumps({**cfg, **{k: FILL[k] for k in filled}}))
            try:
                return Config.from_directory(d), filled
            except ValueError as exc:
                missing = [k for k in FILL if k not in filled and k not in cfg and f"'{k}'" in str(exc)]
                if not missing:
                    raise
                filled += missing


for name, rel in CASES.items():
    cfg = json.loads((ROOT / rel).read_text())
    meta: dict = {"engine": "exllamav3", "version": VERSION, "config": rel}
    if name in DROP:
        del cfg[DROP[name]]
        meta["dropped"] = DROP[name]
    try:
        config, filled = parse(cfg)
        rs = config.rope_settings
        rope = RoPE("cpu", rs)
    except (AssertionError, ValueError, TypeError, KeyError) as exc:
        meta["refused"] = {"type": type(exc).__name__, "message": str(exc).split(" in /")[0]}  # no temp path
        out[f"{name}.meta"] = np.array(json.dumps(meta))
        print(name, "refused:", type(exc).__name__, exc, file=sys.stderr)
        continue
    pos = [p for p in POSITIONS if p < 131072]
    sin, cos = rope.compute_sincos(torch.tensor(pos, dtype=torch.int64))
    r = 2 * rope.inv_freq.shape[0]
    if rs.rope_style == RopeStyle.NEOX:
        c, s = cos[:, : r // 2], sin[:, : r // 2]
    else:
        c, s = cos[:, 0:r:2], sin[:, 0:r:2]
    meta.update(filled=filled, attn_factor=float(rope.attn_factor), rope_style=rs.rope_style.name,
                head_dim=rs.head_dim, rope_theta=rs.rope_theta, rotary_dim=rs.rotary_dim,
                partial_rotary_factor=rs.partial_rotary_factor, max_position_embeddings=rs.max_position_embeddings,
                original_max_position_embeddings=rs.original_max_position_embeddings,
                yarn_mscale_ratio=rs.yarn_mscale_ratio, arch=config.architecture)
    out[f"{name}.positions"] = np.asarray(pos, dtype=np.int64)
    out[f"{name}.cos"] = c.numpy().astype(np.float32)
    out[f"{name}.sin"] = s.numpy().astype(np.float32)
    out[f"{name}.inv_freq"] = rope.inv_freq.numpy().astype(np.float32)
    out[f"{name}.meta"] = np.array(json.dumps(meta))
    print(name, len(pos), "rows, attn", rope.attn_factor, "filled", filled, file=sys.stderr)

np.savez_compressed(OUT, **out)
print("wrote", OUT, OUT.stat().st_size, "bytes", file=sys.stderr)
