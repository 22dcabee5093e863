"""Reference rotary tables of published configs (tests/data/configs/published), from transformers' own classes.

Run once in the side environment (transformers 5.24.0, torch 2.13.0 CPU):

    /work/side/hf/bin/python tools/golden/make_published_golden.py

For each config: the config class (CONFIG_MAPPING[model_type](**config.json)), its text sub-config, the modeling
module's rotary class built from it, and per layer type its inv_freq, attention_scaling and cos/sin rows at a few
positions (float32, as the class computes them); BLOOM's ALiBi slopes from build_alibi_tensor. Writes
tests/data/golden/published_rope.json.
"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path

import torch
import transformers
from transformers import CONFIG_MAPPING

ROOT = Path(__file__).resolve().parents[2]
POSITIONS = [0, 1, 7, 100, 4095]


def text_config(cfg):
    sub = getattr(cfg, "text_config", None)
    return sub if sub is not None else cfg


def rotary_class(model_type: str):
    module = importlib.import_module(f"transformers.models.{CONFIG_MAPPING[model_type].__module__.split('.')[-2]}"
                                     f".modeling_{CONFIG_MAPPING[model_type].__module__.split('.')[-2]}")
    names = [n for n, c in inspect.getmembers(module, inspect.isclass)
             if n.endswith("RotaryEmbedding") and c.__module__ == module.__name__ and "Vision" not in n]
    return module, getattr(module, sorted(names, key=len)[0])


def rope_tables(raw: dict) -> dict:
    cfg = CONFIG_MAPPING[raw["model_type"]](**raw)
    text = text_config(cfg)
    module, cls = rotary_class(text.model_type)
    out = {"model_type": text.model_type, "rotary_class": f"{module.__name__}.{cls.__name__}", "layers": {}}
    types = sorted(set(getattr(text, "layer_types", None) or [])) or [None]
    for lt in types:
        params = inspect.signature(cls.__init__).parameters
        rot = cls(text, layer_type=lt) if ("layer_type" in params and lt is not None) else cls(text)
        try:
            inv = getattr(rot, f"{lt}_inv_freq") if lt is not None and hasattr(rot, f"{lt}_inv_freq") else rot.inv_freq
        except AttributeError:
            continue
        pos = torch.tensor([POSITIONS])
        x = torch.zeros(1, 1, 8, dtype=torch.float32)
        fwd = inspect.signature(rot.forward).parameters
        cos, sin = rot(x, pos, layer_type=lt) if ("layer_type" in fwd and lt is not None) else rot(x, pos)
        scaling = getattr(rot, f"{lt}_attention_scaling", None) if lt is not None else None
        scaling = scaling if scaling is not None else getattr(rot, "attention_scaling", 1.0)
        out["layers"][lt or "default"] = {
            "inv_freq": inv.float().tolist(), "attention_scaling": float(scaling),
            "positions": POSITIONS, "cos": cos[0].float().tolist(), "sin": sin[0].float().tolist(),
        }
    nrl = getattr(text, "no_rope_layers", None)
    if nrl is not None:
        out["no_rope_layers"] = list(nrl)
    return out


def main() -> None:
    out = {"transformers_version": transformers.__version__, "torch_version": torch.__version__, "configs": {}}
    for path in sorted((ROOT / "tests/data/configs/published").glob("*.json")):
        raw = json.loads(path.read_text())
        if raw["model_type"] == "bloom":
            from transformers.models.bloom.modeling_bloom import build_alibi_tensor

            heads = raw["n_head"]
            alibi = build_alibi_tensor(torch.ones(1, 4), heads, torch.float32)  # (heads, 1, 4): slope * j
            out["configs"][path.stem] = {"model_type": "bloom", "alibi_row3": alibi[:, 0, 3].tolist()}
            continue
        out["configs"][path.stem] = rope_tables(raw)
        print(path.stem, list(out["configs"][path.stem]["layers"]))
    (ROOT / "tests/data/golden/published_rope.json").write_text(json.dumps(out, indent=None) + "\n")


if __name__ == "__main__":
    main()
