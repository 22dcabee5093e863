"""Golden RoPE tables from HF transformers' own code, for tests/test_hf_configs.py (run once, in a side environment).

posenc never imports torch or transformers; this script does, so it runs in a venv of its own::

    python3 -m venv /tmp/side && /tmp/side/bin/pip install torch==2.13.0 transformers==5.18.0 numpy
    /tmp/side/bin/python tools/golden/make_hf_golden.py            # writes tests/data/golden/*.json

What it writes, for every config in tests/data/configs/<family>.json:

* ``hf_<family>.json``: per layer type the model's ``inv_freq`` buffer and ``attention_scaling`` (from the
  family's own rotary class), and for groups of positions the rotation the model *applies*: the family's own
  ``apply_rotary_pos_emb`` (or ``apply_rotary_emb`` / GPT-J's sincos gather) is run on the unit vectors
  ``e_j`` of the head, so ``R_t[i, j] = apply(e_j)[i]`` is exactly the rotation at position ``t`` (one float32
  multiply by 1 and an add of 0: exact). From ``R_t`` we store ``partner[j]`` (the feature ``j`` is rotated
  with; ``j`` itself for a pass-through feature), ``cos[t, j] = R_t[j, j]`` and
  ``sin[t, j] = R_t[max(j, p), min(j, p)]`` with ``p = partner[j]`` (posenc's convention: the lower feature of a
  pair is the "first"). This is independent of how the family lays out its cos/sin buffers (GLM's half-width
  repeat_interleave, Llama 4's complex numbers, DeepSeek-V3's interleaved weights).
* ``hf_rope_types.json``: every ``ROPE_INIT_FUNCTIONS`` rule (plus the default rule) on a small Llama config:
  ``inv_freq``, ``attention_scaling`` and ``LlamaRotaryEmbedding`` cos/sin rows (GitHub issue 13).
* ``hf_class_defaults.json``: what each family's config class fills in when a field is missing.
* ``tests/data/configs/<name>_v5.json``: configs with per-layer rope (Gemma 3, ModernBERT) loaded and saved again
  by transformers 5 (``to_json_string``), i.e. the ``rope_parameters`` format transformers 5 writes.

Positions are float32 in HF (exact below 2**24), so every stored position is below 2**24.
"""

from __future__ import annotations

import functools
import importlib
import json
import sys
import types
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import CONFIG_MAPPING
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "data" / "configs"
GOLDEN = ROOT / "tests" / "data" / "golden"
M = transformers.models


class F32(float):
    """A float32 value written with the shortest decimal that reads back to the same float32."""

    def __repr__(self) -> str:
        return repr(np.float32(self)).removeprefix("np.float32(").removesuffix(")")


def f32_list(a) -> list:
    return [F32(x) for x in np.asarray(a, dtype=np.float32).ravel()]


def load(name: str):
    raw = json.loads((CONFIGS / f"{name}.json").read_text())
    clean = {k: v for k, v in raw.items() if not k.startswith("_") or k == "_sliding_window_pattern"}
    cfg = CONFIG_MAPPING[clean["model_type"]].from_dict(clean)
    return raw, cfg


# ----- the rotation a family applies -------------------------------------------------------------------
def rotation(apply, d: int, n_pos: int) -> np.ndarray:
    """R[p, i, j] = apply(e_j)[i] at the p-th position; ``apply(q)`` takes q of shape (1, d, n_pos, d)."""
    q = torch.eye(d, dtype=torch.float32)[None, :, None, :].expand(1, d, n_pos, d).contiguous()
    out = apply(q)  # (1, d, n_pos, d): out[0, j, p, i]
    return out[0].permute(1, 2, 0).numpy()  # (p, i, j)


def summarise(R: np.ndarray) -> tuple[list[int], np.ndarray, np.ndarray]:
    n, d, _ = R.shape
    partner = []
    for j in range(d):
        col = np.abs(R[:, :, j]).max(axis=0)
        col[j] = 0
        others = np.nonzero(col > 0)[0]
        assert len(others) <= 1, f"feature {j} mixes with {others}"
        partner.append(int(others[0]) if len(others) else j)
    for j, p in enumerate(partner):
        assert partner[p] == j
    cos = np.stack([R[:, j, j] for j in range(d)], axis=1)
    sin = np.stack([R[:, max(j, p), min(j, p)] if p != j else np.zeros(n, np.float32) for j, p in enumerate(partner)],
                   axis=1)
    return partner, cos, sin


def std_apply(module, rot, x_dtype=torch.float32, layer_type=None, pos_shape=None):
    """``apply(q)`` for families with (cos, sin) = rotary(x, position_ids) and apply_rotary_pos_emb(q, k, cos, sin)."""

    def run(positions):
        pos = torch.tensor([positions], dtype=torch.long)
        x = torch.zeros(1, dtype=x_dtype)
        cos, sin = rot(x, pos) if layer_type is None else rot(x, pos, layer_type)

        def apply(q):
            out, _ = module.apply_rotary_pos_emb(q, q, cos, sin)
            return out

        return apply

    return run


def family_runs(name: str, raw: dict, cfg):
    """(text config, {layer_type: (rotary module factory, apply(positions) factory, width of q)})."""
    text = cfg.get_text_config()
    mt = raw["model_type"]
    out = {}
    if mt in ("gptj", "codegen"):
        mod = M.gptj.modeling_gptj if mt == "gptj" else M.codegen.modeling_codegen
        r = text.rotary_dim

        def run(positions):
            table = mod.create_sinusoidal_positions(max(positions) + 1, r)  # the model's own table, made long enough
            sincos = table[torch.tensor([positions])]
            sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)

            def apply(q):  # q (1, d, n, d) -> GPT-J wants (b, s, h, d): heads and positions swap
                qt = q.transpose(1, 2)
                rot = mod.apply_rotary_pos_emb(qt[..., :r], sin, cos)
                return torch.cat([rot, qt[..., r:]], dim=-1).transpose(1, 2)

            return apply

        head = text.n_embd // text.n_head
        return text, {"default": (None, run, head, {"inv_freq": 1.0 / (10000 ** (torch.arange(0, r, 2) / r))})}
    if mt in ("deepseek_v2",):
        mod = M.deepseek_v2.modeling_deepseek_v2
        rot = mod.DeepseekV2RotaryEmbedding(text)

        def run(positions):
            fc = rot(torch.zeros(1), torch.tensor([positions]))

            def apply(q):
                out, _ = mod.apply_rotary_emb(q, q, fc)
                return out

            return apply

        return text, {"default": (rot, run, text.qk_rope_head_dim, {})}
    if mt == "llama4":
        mod = M.llama4.modeling_llama4
        rot = mod.Llama4TextRotaryEmbedding(text)

        def run(positions):
            fc = rot(torch.zeros(1), torch.tensor([positions]))

            def apply(q):  # Llama 4 wants (b, s, h, d)
                out, _ = mod.apply_rotary_emb(q.transpose(1, 2), q.transpose(1, 2), fc)
                return out.transpose(1, 2)

            return apply

        types_ = sorted(set(text.layer_types))
        for lt in types_:
            uses_rope = lt == "chunked_attention"  # no_rope_layers[i] == 1 <=> chunked_attention <=> RoPE
            out[lt] = (rot, run, text.head_dim, {}) if uses_rope else None
        return text, out
    if mt == "deepseek_v3":
        mod = M.deepseek_v3.modeling_deepseek_v3
        rot = mod.DeepseekV3RotaryEmbedding(text)
        d = text.qk_rope_head_dim

        def run(positions):
            cos, sin = rot(torch.zeros(1), torch.tensor([positions]))

            def apply(q):
                if text.rope_interleave:
                    o, _ = mod.apply_rotary_pos_emb_interleave(q, q, cos, sin)
                    # the output is de-interleaved (rotated evens, then rotated odds), the same fixed permutation
                    # for q and k (q.k unchanged); put the features back where they came from
                    back = torch.empty_like(o)
                    back[..., 0::2], back[..., 1::2] = o[..., : d // 2], o[..., d // 2 :]
                    return back
                o, _ = mod.apply_rotary_pos_emb(q, q, cos, sin)
                return o

            return apply

        return text, {"default": (rot, run, d, {})}
    if mt in ("qwen2_vl", "qwen2_5_vl"):
        return text, {}  # see mrope()
    fam = {"gemma3_text": "gemma3", "gemma3": "gemma3"}.get(mt, mt)
    if mt == "llava":
        fam = text.model_type
    mod = importlib.import_module(f"transformers.models.{fam}.modeling_{fam}")
    cls = next(getattr(mod, n) for n in dir(mod) if n.endswith("RotaryEmbedding") and "Vision" not in n)
    rot = cls(text)
    head = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    layered = hasattr(rot, "layer_types") and isinstance(rot.rope_type, dict)
    types_ = sorted(set(getattr(text, "layer_types", None) or ["default"]))
    for lt in types_:
        if mt == "cohere2" and lt == "full_attention":
            out[lt] = None  # Cohere2Attention applies RoPE only where sliding_window is set
            continue
        run = std_apply(mod, rot, layer_type=lt if layered else None)
        out[lt] = (rot, run, head, {"layer_type": lt if layered else None})
    return text, out


def positions_for(text) -> tuple[list[int], list[int], int]:
    L = text.max_position_embeddings
    rp = getattr(text, "rope_parameters", None) or {}
    if rp and all(isinstance(v, dict) for v in rp.values()):
        rp = next(iter(rp.values()))
    omp = rp.get("original_max_position_embeddings") or L
    within = sorted({0, 1, 2, 3, 17, omp // 2 + 1, omp - 1})
    beyond = sorted({omp, omp + 1, L // 2 + 3, L - 1, L, L + 1000} - {x for x in within})
    beyond = [p for p in beyond if p < 2**24 - 2]
    return within, within + beyond, omp


def inv_freq_of(rot, lt):
    if rot is None:
        return None
    if isinstance(getattr(rot, "rope_type", None), dict):
        return getattr(rot, f"{lt}_original_inv_freq"), getattr(rot, f"{lt}_attention_scaling")
    return rot.original_inv_freq, getattr(rot, "attention_scaling", 1.0)


def golden_family(name: str) -> dict:
    raw, cfg = load(name)
    text, runs = family_runs(name, raw, cfg)
    within, everything, _omp = positions_for(text)
    res = {
        "_model_id": raw["_model_id"], "config": f"tests/data/configs/{name}.json", "model_type": raw["model_type"],
        "transformers": transformers.__version__, "torch": torch.__version__,
        "how": "tools/golden/make_hf_golden.py: rotation applied by the family's own code on unit vectors",
        "layer_types": {},
    }
    for lt, spec in runs.items():
        if spec is None:
            res["layer_types"][lt] = {"rope": False}
            continue
        rot, _run, d, extra = spec
        entry: dict = {"rope": True, "head_dim": d, "groups": []}
        if rot is not None:
            inv, att = inv_freq_of(rot, extra.get("layer_type"))
            entry["inv_freq"], entry["attention_scaling"] = f32_list(inv), float(att)
        else:
            entry["inv_freq"], entry["attention_scaling"] = f32_list(extra["inv_freq"]), 1.0
        for positions in (within, everything):
            _, cfg2 = load(name)  # a fresh module per group: dynamic/longrope rules keep state
            _text2, runs2 = family_runs(name, raw, cfg2)
            apply = runs2[lt][1](positions)
            R = rotation(apply, d, len(positions))
            partner, cos, sin = summarise(R)
            entry["partner"] = partner
            entry["groups"].append({"positions": positions, "seq_len": max(positions) + 1,
                                    "cos": [f32_list(r) for r in cos], "sin": [f32_list(r) for r in sin]})
        res["layer_types"][lt] = entry
    return res


# ----- M-RoPE ---------------------------------------------------------------------------------------------
def mrope(name: str, cases_wanted: tuple[str, ...] = ("text", "image", "video")) -> dict:
    raw, cfg = load(name)
    text = cfg.get_text_config()
    fam = raw["model_type"]
    mod = importlib.import_module(f"transformers.models.{fam}.modeling_{fam}")
    rot_cls = next(getattr(mod, n) for n in dir(mod) if n.endswith("RotaryEmbedding") and "Vision" not in n)
    model_cls = next(getattr(mod, n) for n in dir(mod) if n.endswith("Model") and "Vision" not in n
                     and hasattr(getattr(mod, n), "get_rope_index"))
    fake = types.SimpleNamespace(config=cfg)
    fake.get_vision_position_ids = functools.partial(model_cls.get_vision_position_ids, fake)
    merge = cfg.vision_config.spatial_merge_size
    head = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    cases = []
    # (name, text before, modality 1 image / 2 video, grid_thw before merging, text after, second_per_grid_t)
    plans = [("text", 12, None, None, 0, None), ("image", 5, 1, (1, 4 * merge, 6 * merge), 7, None),
             ("video", 3, 2, (3, 2 * merge, 4 * merge), 4, 2.0)]
    for cname, before, modality, grid, after, spg in plans:
        if cname not in cases_wanted:
            continue
        if modality is None:
            pos = torch.arange(before)[None].expand(3, 1, -1)
        else:
            n_vis = grid[0] * (grid[1] // merge) * (grid[2] // merge)
            types_ = torch.tensor([[0] * before + [modality] * n_vis + [0] * after])
            ids = torch.zeros_like(types_)
            kw = {"image_grid_thw": torch.tensor([grid])} if modality == 1 else {"video_grid_thw": torch.tensor([grid])}
            if fam == "qwen2_5_vl" and modality == 2:
                kw["second_per_grid_ts"] = torch.tensor([spg])
            if fam == "qwen2_vl" and modality == 2:
                spg = None  # Qwen2-VL has no temporal spacing
            pos, _ = model_cls.get_rope_index(fake, ids, types_, **kw)
        rot = rot_cls(text)
        cos, sin = rot(torch.zeros(1), pos)

        def apply(q, cos=cos, sin=sin):
            out, _ = mod.apply_rotary_pos_emb(q, q, cos, sin)
            return out

        R = rotation(apply, head, pos.shape[-1])
        partner, c, s = summarise(R)
        case = {"name": cname, "position_ids": pos[:, 0].tolist(), "partner": partner,
                "cos": [f32_list(r) for r in c], "sin": [f32_list(r) for r in s]}
        if modality is not None:
            case.update({"text_before": before, "grid_thw": list(grid), "text_after": after,
                         "llm_grid": [grid[0], grid[1] // merge, grid[2] // merge],
                         "time_interval": (cfg.vision_config.tokens_per_second * spg) if spg else 1.0})
        cases.append(case)
    rot = rot_cls(text)
    return {"_model_id": raw["_model_id"], "config": f"tests/data/configs/{name}.json", "model_type": fam,
            "transformers": transformers.__version__, "torch": torch.__version__,
            "mrope_section": list(text.rope_parameters.get("mrope_section")),
            "inv_freq": f32_list(rot.inv_freq), "attention_scaling": float(rot.attention_scaling), "cases": cases}


# ----- every rope_type (issue 13) --------------------------------------------------------------------------
def rope_types() -> dict:
    base = {"hidden_size": 512, "num_attention_heads": 8, "max_position_embeddings": 4096, "rope_theta": 10000.0}
    cases = {
        "default": {},
        "linear": {"rope_type": "linear", "factor": 4.0},
        "dynamic": {"rope_type": "dynamic", "factor": 2.0},
        "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
        "yarn_no_truncate": {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 1024,
                             "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False},
        "yarn_mscale": {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 1024,
                        "mscale": 1.0, "mscale_all_dim": 0.8},
        "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 1024},
        "longrope": {"rope_type": "longrope", "original_max_position_embeddings": 1024,
                     "short_factor": [1.0 + 0.02 * k for k in range(32)],
                     "long_factor": [1.0 + 0.5 * k for k in range(32)]},
        "proportional": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "factor": 2.0},
    }
    out = {"transformers": transformers.__version__, "torch": torch.__version__, "config": base,
           "rope_init_functions": sorted(ROPE_INIT_FUNCTIONS), "cases": {}}
    mod = M.llama.modeling_llama
    for name, rp in cases.items():
        conf = dict(base, rope_parameters={**rp, "rope_theta": base["rope_theta"]} if rp else None)
        groups = []
        for positions in ([0, 1, 2, 3, 100, 1023], [0, 1, 2, 3, 100, 1023, 1024, 3000, 4095, 8000]):
            cfg = transformers.LlamaConfig(**conf)
            rot = mod.LlamaRotaryEmbedding(cfg)
            inv0, att0 = rot.original_inv_freq.clone(), rot.attention_scaling
            cos, sin = rot(torch.zeros(1), torch.tensor([positions]))
            groups.append({"positions": positions, "seq_len": max(positions) + 1,
                           "inv_freq_used": f32_list(rot.inv_freq),
                           "attention_scaling_used": float(rot.attention_scaling),
                           "cos": [f32_list(r) for r in cos[0]], "sin": [f32_list(r) for r in sin[0]]})
        out["cases"][name] = {"rope_parameters": rp, "inv_freq": f32_list(inv0), "attention_scaling": float(att0),
                              "groups": groups}
    return out


def class_defaults() -> dict:
    names = ["llama", "mistral", "qwen2", "phi3", "deepseek_v2", "deepseek_v3", "gpt_neox", "gptj", "codegen",
             "cohere", "cohere2", "glm", "llama4_text", "gemma2", "gemma3_text", "modernbert", "qwen2_vl_text",
             "qwen2_5_vl_text", "gpt_oss"]
    out = {}
    for n in names:
        cfg = CONFIG_MAPPING[n]()
        get = lambda k: getattr(cfg, k, None)
        rp = json.loads(json.dumps(get("rope_parameters"), default=str))
        out[n] = {"hidden_size": get("hidden_size"), "num_attention_heads": get("num_attention_heads"),
                  "head_dim": get("head_dim"), "max_position_embeddings": get("max_position_embeddings"),
                  "rope_parameters": rp, "rotary_dim": get("rotary_dim"),
                  "default_theta": json.loads(json.dumps(type(cfg).default_theta)),
                  "layer_types": sorted(set(get("layer_types") or []))}
    return out


def resave_v5(name: str, out_name: str) -> None:
    raw, cfg = load(name)
    d = json.loads(cfg.to_json_string(use_diff=False))
    d = {"_model_id": raw["_model_id"],
         "_source": f"tests/data/configs/{name}.json loaded and saved again by transformers {transformers.__version__} "
                    "(to_json_string(use_diff=False)) in tools/golden/make_hf_golden.py", **d}
    (CONFIGS / f"{out_name}.json").write_text(json.dumps(d, indent=2) + "\n")


class _F32Encoder(json.JSONEncoder):
    def iterencode(self, o, _one_shot=False):
        return json.encoder._make_iterencode(
            {}, self.default, json.encoder.encode_basestring_ascii, self.indent,
            lambda x: repr(x) if isinstance(x, F32) else float.__repr__(x), self.key_separator,
            self.item_separator, self.sort_keys, self.skipkeys, _one_shot)(o, 0)


def dump(obj, path: Path) -> None:
    # json writes floats with float.__repr__; F32 overrides it for the float32 values
    text = json.dumps(obj, separators=(",", ":"), cls=_F32Encoder)
    path.write_text(text + "\n")
    print("wrote", path.relative_to(ROOT), path.stat().st_size, "bytes")


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, out_name in (("gemma3_text", "gemma3_text_v5"), ("gemma3", "gemma3_v5"), ("modernbert", "modernbert_v5")):
        resave_v5(name, out_name)
    only = set(sys.argv[1:])
    for path in sorted(CONFIGS.glob("*.json")):
        name = path.stem
        if only and name not in only:
            continue
        obj = mrope(name) if name in ("qwen2_vl", "qwen2_5_vl") else golden_family(name)
        dump(obj, GOLDEN / f"hf_{name}.json")
    if not only:
        dump(rope_types(), GOLDEN / "hf_rope_types.json")
        dump(class_defaults(), GOLDEN / "hf_class_defaults.json")


if __name__ == "__main__":
    torch.set_grad_enabled(False)
    main()
