"""Per-layer rotary arrays of non-default configs, from each model's own forward (issue 36, part 5: layer rules).

A layer rule (which layers are sliding or full, which apply no RoPE, which RoPE each layer type uses) that
posenc observed or wrote at a type's default config must hold for the config at hand. For each case below the
config dict is read as transformers reads a config.json (``CONFIG_MAPPING[model_type].from_dict``), a tiny
instance of the model is built on the CPU and run once over positions 0..N-1, and the modeling module's own
``apply_rotary*`` functions are wrapped so that every decoder layer's call records the cos/sin it applies (a
complex ``freqs_cis`` as its real and imaginary parts); a layer that calls none is a NoPE layer (``null``).

Run once in the side environment (writes tests/data/golden/layer_rules.json)::

    /work/side/venv/bin/python tools/golden/make_layer_rule_golden.py

Every case's ``config`` is what posenc reads; the tiny sizes (hidden, heads, experts, vocab) change no layer
rule: the rules read ``num_hidden_layers``, ``layer_types`` and the period keys only.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import CONFIG_MAPPING, AutoModel

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "golden" / "layer_rules.json"
N = 12  # positions 0..N-1

_TINY = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 64,
         "vocab_size": 128, "max_position_embeddings": 64}  # fmt: skip

CASES: dict[str, dict[str, Any]] = {
    # Cohere2Config.__post_init__ pops the legacy sliding_window_pattern (default 4) when layer_types is absent;
    # Cohere2Attention rotates only where sliding_window is set (sliding layers)
    "cohere2_pattern3": {"model_type": "cohere2", **_TINY, "num_hidden_layers": 7, "sliding_window_pattern": 3,
                         "sliding_window": 16, "rope_theta": 5000.0},
    # ... and with no window no layer rotates (the layer types must then all be full: transformers' masks
    # refuse a sliding layer without a window)
    "cohere2_no_window": {"model_type": "cohere2", **_TINY, "num_hidden_layers": 3, "sliding_window": None,
                          "layer_types": ["full_attention"] * 3, "rope_theta": 5000.0},
    # Gemma3TextConfig: _sliding_window_pattern from the legacy key (default 6); a RoPE per layer type
    "gemma3_text_pattern3": {"model_type": "gemma3_text", **_TINY, "head_dim": 16, "num_hidden_layers": 7,
                             "sliding_window_pattern": 3, "sliding_window": 16, "rope_theta": 100000.0,
                             "rope_local_base_freq": 100.0},
    # Llama4TextConfig: no_rope_layers from no_rope_layer_interval when absent; chunked layers rotate
    "llama4_text_interval3": {"model_type": "llama4_text", **_TINY, "head_dim": 16, "num_hidden_layers": 7,
                              "no_rope_layer_interval": 3, "num_local_experts": 2, "intermediate_size_mlp": 64,
                              "interleave_moe_layer_step": 1, "attention_chunk_size": 16, "rope_theta": 20000.0,
                              "rope_scaling": None},
    # SmolLM3Config: no_rope_layers from no_rope_layer_interval
    "smollm3_interval3": {"model_type": "smollm3", **_TINY, "num_hidden_layers": 7, "no_rope_layer_interval": 3,
                          "rope_theta": 30000.0, "pad_token_id": None, "bos_token_id": None, "eos_token_id": None},
    # Exaone4 (a record posenc derives from the inventory): the layer types given, not the default's every-4th
    "exaone4_types": {"model_type": "exaone4", **_TINY, "num_hidden_layers": 6, "sliding_window": 16,
                      "layer_types": ["sliding_attention", "full_attention", "full_attention", "sliding_attention",
                                      "sliding_attention", "full_attention"], "rope_theta": 40000.0},
    # ... and with no window every layer rotates (Exaone4Attention: sliding_window is None or the layer slides;
    # the layer types must then all be full: transformers' masks refuse a sliding layer without a window), where
    # the default config's observation says full layers apply none
    "exaone4_no_window": {"model_type": "exaone4", **_TINY, "num_hidden_layers": 3, "sliding_window": None,
                          "layer_types": ["full_attention"] * 3, "rope_theta": 40000.0},
    # Qwen3-Next (derived): full-attention layers rotate a quarter of the head, linear-attention layers none
    "qwen3_next_types": {"model_type": "qwen3_next", **_TINY, "head_dim": 16, "num_hidden_layers": 5,
                         "layer_types": ["full_attention", "linear_attention", "full_attention", "full_attention",
                                         "linear_attention"], "num_experts": 2, "num_experts_per_tok": 1,
                         "moe_intermediate_size": 16, "shared_expert_intermediate_size": 16,
                         "linear_num_key_heads": 2, "linear_num_value_heads": 2, "linear_key_head_dim": 8,
                         "linear_value_head_dim": 8, "rope_theta": 50000.0},
}


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    for name, m in model.named_modules():
        if name.endswith("layers") and isinstance(m, torch.nn.ModuleList):
            return m
    raise RuntimeError("no decoder layers")


def as_cos_sin(args: tuple, kwargs: dict) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """The cos and sin an apply function was called with (after the query and key), or the real and imaginary
    parts of a complex ``freqs_cis`` (then True)."""
    rest = [a for a in args[2:] if isinstance(a, torch.Tensor)]
    rest += [v for k, v in kwargs.items() if isinstance(v, torch.Tensor) and k not in ("q", "k")]
    if rest and rest[0].is_complex():
        return rest[0].real, rest[0].imag, True
    return rest[0], rest[1], False


def run(case: dict[str, Any]) -> dict[str, Any]:
    cfg_dict = {k: v for k, v in case.items() if k != "model_type"}
    cls = CONFIG_MAPPING[case["model_type"]]
    cfg = cls.from_dict(cfg_dict)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = AutoModel.from_config(cfg).eval()
    module = sys.modules[type(model).__module__]
    fns = {n: f for n, f in vars(module).items() if n.startswith("apply_rotary") and callable(f)}
    current = [-1]
    seen: dict[int, tuple[torch.Tensor, torch.Tensor, bool]] = {}

    def wrap(f: Any) -> Any:
        def inner(*a: Any, **k: Any) -> Any:
            if current[0] >= 0 and current[0] not in seen:
                cos, sin, cplx = as_cos_sin(a, k)
                seen[current[0]] = (cos.detach().clone(), sin.detach().clone(), cplx)
            return f(*a, **k)

        return inner

    layers = decoder_layers(model)
    hooks = []
    for i, layer in enumerate(layers):
        hooks.append(layer.register_forward_pre_hook(lambda m, a, i=i: current.__setitem__(0, i)))
    for n, f in fns.items():
        setattr(module, n, wrap(f))
    try:
        with torch.no_grad():
            model(input_ids=torch.arange(N)[None] % cfg.vocab_size, use_cache=False)
    finally:
        for n, f in fns.items():
            setattr(module, n, f)
        for h in hooks:
            h.remove()
    out: list[Any] = []
    for i in range(len(layers)):
        if i not in seen:
            out.append(None)
            continue
        cos, sin, cplx = seen[i]
        w = cos.shape[-1]
        cos, sin = cos.reshape(-1, w)[-N:], sin.reshape(-1, w)[-N:]
        out.append({"cos": cos.float().tolist(), "sin": sin.float().tolist(), "complex": cplx})
    return {"config": case, "layer_types": list(getattr(cfg, "layer_types", None) or []), "layers": out,
            "modeling": type(model).__module__, "apply_functions": sorted(fns)}  # fmt: skip


def main() -> int:
    data = {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__.split("+")[0],
        "generator": "tools/golden/make_layer_rule_golden.py",
        "positions": N,
        "cases": {},
    }
    for name, case in CASES.items():
        try:
            data["cases"][name] = run(case)
        except Exception as exc:  # a config transformers itself refuses: recorded, posenc must refuse it too
            data["cases"][name] = {"config": case, "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}
        got = data["cases"][name]
        print(name, got.get("error") or ["-" if x is None else len(x["cos"][0]) for x in got["layers"]])
    OUT.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    importlib.import_module("transformers.models.auto")
    raise SystemExit(main())
