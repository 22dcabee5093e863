"""Golden ``inv_freq`` of every HF RoPE scaling rule, in float32 and in float64, for tests/test_scaling_golden.py.

Run once, in the side environment of make_hf_golden.py (posenc never imports torch or transformers)::

    python3 -m venv /tmp/side && /tmp/side/bin/pip install torch==2.13.0 transformers==5.18.0 numpy
    /tmp/side/bin/pip install rotary-embedding-torch==0.9.1           # the ntk rule's reference
    /tmp/side/bin/python tools/golden/make_hf_scaling_golden.py     # writes tests/data/golden/hf_scaling.json

For each case it calls transformers' own rule (``ROPE_INIT_FUNCTIONS[rope_type]``, or ``LlamaRotaryEmbedding``'s
default rule) on a Llama config, twice:

* ``inv_freq_f32``: as transformers runs it (float32 tensors): what posenc's ``inv_freq_dtype=float32`` path
  reproduces bit for bit;
* ``inv_freq_f64``: the same code with every float32 tensor made float64 (``torch.float``, ``torch.float32`` and
  ``Tensor.float`` patched to float64 for the call): transformers' formula to ~1e-15, against which posenc's exact
  (60-digit) path is held.

The cases are the rope_types cases of hf_rope_types.json (head_dim 64, base 10000), the YaRN settings of
published models (Qwen2.5, DeepSeek-V3, gpt-oss) at head_dim 64 and base 150000, the Qwen2.5 and DeepSeek-V3
YaRN configs themselves, and Llama 3.1's llama3 rule (head_dim 128, base 500000). posenc's ``ntk`` rule is not an
HF rope_type: its golden values (``ntk_cases``) come from lucidrains/rotary-embedding-torch's ``RotaryEmbedding``
(``theta_rescale_factor``), the code it reproduces, made the same two ways.
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager
from pathlib import Path

import torch
import transformers
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "golden" / "hf_scaling.json"
SMALL = {"hidden_size": 512, "num_attention_heads": 8, "max_position_embeddings": 4096, "rope_theta": 10000.0}

CASES = {
    # the rope_types cases of hf_rope_types.json
    "default": (SMALL, {}),
    "linear": (SMALL, {"rope_type": "linear", "factor": 4.0}),
    "dynamic": (SMALL, {"rope_type": "dynamic", "factor": 2.0}),
    "yarn": (SMALL, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}),
    "yarn_no_truncate": (SMALL, {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 1024,
                                 "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False}),
    "yarn_mscale": (SMALL, {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 1024,
                            "mscale": 1.0, "mscale_all_dim": 0.8}),
    "llama3": (SMALL, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 1024}),
    "longrope": (SMALL, {"rope_type": "longrope", "original_max_position_embeddings": 1024,
                         "short_factor": [1.0 + 0.02 * k for k in range(32)],
                         "long_factor": [1.0 + 0.5 * k for k in range(32)]}),
    "proportional": (SMALL, {"rope_type": "proportional", "partial_rotary_factor": 0.25, "factor": 2.0}),
    # published YaRN settings on head_dim 64, base 150000 (what tests/test_rope.py's test_yarn used to recompute)
    "yarn_qwen2_5": ({**SMALL, "rope_theta": 150000.0},
                     {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}),
    "yarn_deepseek_v3": ({**SMALL, "rope_theta": 150000.0},
                         {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                          "mscale": 1.0, "mscale_all_dim": 1.0, "beta_fast": 32.0, "beta_slow": 1.0}),
    "yarn_mscale_0707": ({**SMALL, "rope_theta": 150000.0},
                         {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 2048,
                          "mscale": 0.707, "mscale_all_dim": 1.0}),
    "yarn_gpt_oss": ({**SMALL, "rope_theta": 150000.0},
                     {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096,
                      "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False}),
    "yarn_attention_factor": ({**SMALL, "rope_theta": 150000.0},
                              {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192,
                               "attention_factor": 1.5}),
    # the YaRN configs of Qwen2.5 (head_dim 128, base 1e6) and DeepSeek-V3 (rotated width 64, base 10000)
    "yarn_qwen2_5_config": ({"hidden_size": 5120, "num_attention_heads": 40, "max_position_embeddings": 131072,
                             "rope_theta": 1e6},
                            {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}),
    "yarn_deepseek_v3_config": ({"hidden_size": 7168, "num_attention_heads": 128, "head_dim": 64,
                                 "max_position_embeddings": 163840, "rope_theta": 10000.0},
                                {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                                 "mscale": 1.0, "mscale_all_dim": 1.0, "beta_fast": 32.0, "beta_slow": 1.0}),
    # the edges of YaRN's correction range and of the attention factors
    "yarn_low_clamp": (SMALL, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256}),
    "yarn_high_clamp": ({**SMALL, "rope_theta": 100.0},
                        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 131072}),
    "yarn_zero_width": (SMALL, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 6}),
    "yarn_factor_below_one": (SMALL, {"rope_type": "yarn", "factor": 0.5, "original_max_position_embeddings": 1024}),
    "longrope_factor_below_one": (SMALL, {"rope_type": "longrope", "original_max_position_embeddings": 1024,
                                          "factor": 0.5, "short_factor": [1.0 + 0.02 * k for k in range(32)],
                                          "long_factor": [1.0 + 0.5 * k for k in range(32)]}),
    "yarn_mscale_only": (SMALL, {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 1024,
                                 "mscale": 0.707}),  # mscale without mscale_all_dim: ignored, as in HF
    "longrope_factor_1_5": (SMALL, {"rope_type": "longrope", "original_max_position_embeddings": 1024,
                                    "factor": 1.5, "short_factor": [1.0 + 0.02 * k for k in range(32)],
                                    "long_factor": [1.0 + 0.5 * k for k in range(32)]}),
    "yarn_wide_ramp": ({**SMALL, "rope_theta": 10.0},  # a ramp from feature 22 past d - 1: high clamped to 63
                       {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}),
    "yarn_collapsed_ramp": ({**SMALL, "rope_theta": 100.0},  # low = high = d - 1 (HF's +0.001 guard)
                            {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1810000}),
    "yarn_head_dim_96": ({**SMALL, "hidden_size": 768},  # k / d is not exact in float32
                         {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}),
    "proportional_factor_3": (SMALL, {"rope_type": "proportional", "partial_rotary_factor": 0.25, "factor": 3.0}),
    "llama3_lff_2": (SMALL, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 2.0, "high_freq_factor": 8.0,
                             "original_max_position_embeddings": 8192}),
    "llama3_band_edges": (SMALL, "llama3 band edges"),  # low/high_freq_factor put on two wavelengths: see below
    # Llama 3.1 8B: head_dim 128, base 500000
    "llama3_1": ({"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
                  "rope_theta": 500000.0},
                 {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192}),
}
#: sequence lengths the rule sees (dynamic and longrope depend on it)
SEQ_LENS = (1024, 8001)


@contextmanager
def float64_everywhere():
    saved = torch.float, torch.float32, torch.Tensor.float
    torch.float = torch.float32 = torch.float64
    torch.Tensor.float = torch.Tensor.double
    try:
        yield
    finally:
        torch.float, torch.float32, torch.Tensor.float = saved


def rule(cfg, rope_type: str, seq_len: int):
    if rope_type == "default":
        return transformers.models.llama.modeling_llama.LlamaRotaryEmbedding.compute_default_rope_parameters(cfg)
    return ROPE_INIT_FUNCTIONS[rope_type](cfg, None, seq_len=seq_len)


#: posenc ntk parameters: (dim, base, factor)
NTK_CASES = {"ntk_64": (64, 10000.0, 4.0), "ntk_128": (128, 500000.0, 8.0)}


def ntk_cases() -> dict:
    from importlib.metadata import version

    import rotary_embedding_torch

    out = {}
    for name, (dim, base, factor) in NTK_CASES.items():
        def freqs():
            return rotary_embedding_torch.RotaryEmbedding(dim, theta=base, theta_rescale_factor=factor).freqs.detach()

        f32 = freqs()
        with float64_everywhere():
            f64 = freqs()
        assert f32.dtype == torch.float32 and f64.dtype == torch.float64
        out[name] = {"dim": dim, "base": base, "factor": factor, "inv_freq_f32": [float(x) for x in f32.numpy()],
                     "inv_freq_f64": [float(x) for x in f64.numpy()]}
    return {"rotary_embedding_torch": version("rotary-embedding-torch"), "cases": out}


def band_edges() -> dict:
    """llama3 with its band edges L/low_freq_factor and L/high_freq_factor exactly on the float32 wavelengths of
    features 20 and 10 (as transformers computes them): both ``<`` / ``>`` comparisons meet equality."""
    cfg = transformers.LlamaConfig(**SMALL)
    inv, _ = rule(cfg, "default", 1024)
    wavelen = 2 * math.pi / inv
    L = 8192
    return {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": L / float(wavelen[20]),
            "high_freq_factor": L / float(wavelen[10]), "original_max_position_embeddings": L}


def main() -> None:
    out = {"transformers": transformers.__version__, "torch": torch.__version__, "seq_lens": list(SEQ_LENS),
           "ntk_cases": ntk_cases(), "cases": {}}
    for name, (base, rp) in CASES.items():
        if rp == "llama3 band edges":
            rp = band_edges()
        conf = dict(base, rope_parameters={**rp, "rope_theta": base["rope_theta"]} if rp else None)
        cfg = transformers.LlamaConfig(**conf)
        rope_type = rp.get("rope_type", "default")
        groups = []
        for seq_len in SEQ_LENS:
            inv32, att32 = rule(cfg, rope_type, seq_len)
            with float64_everywhere():
                inv64, att64 = rule(cfg, rope_type, seq_len)
            assert inv32.dtype == torch.float32 and inv64.dtype == torch.float64, (inv32.dtype, inv64.dtype)
            assert att32 == att64 and math.isfinite(att32)
            groups.append({"seq_len": seq_len, "attention_scaling": float(att32),
                           "inv_freq_f32": [float(x) for x in inv32.numpy()],
                           "inv_freq_f64": [float(x) for x in inv64.numpy()]})
        out["cases"][name] = {"config": base, "rope_parameters": rp, "groups": groups}
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
