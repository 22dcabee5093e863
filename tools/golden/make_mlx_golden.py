"""Reference rotary tables of mlx-lm (rope_utils from its wheel, run on mlx[cpu]) for the test configs.

    /work/side-23/venv/bin/python tools/golden/make_mlx_golden.py   # mlx 0.32.4, mlx-lm 0.32.2

Each model's rope is built the way its mlx-lm model file builds it (gpt_oss.py, llama.py: initialize_rope;
phi3.py: SuScaledRoPE without long_mscale) and read off by rotating unit vectors: x = ones on the first half of
the rotated features and zeros on the second (traditional=False pairs (j, j + r/2)), one position at a time with
``offset``, so out[j] = s cos(t w_j) and out[j + r/2] = s sin(t w_j) (s: the mscale mlx multiplies x by).
Stored as tests/data/golden/mlx_rope.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mlx.core as mx
import mlx_lm
import numpy as np
from mlx_lm.models.rope_utils import SuScaledRoPE, initialize_rope

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "data" / "configs"
POSITIONS = [0, 1, 2, 17, 1000, 4095, 4096, 4097, 8191, 32767, 131071]


def read_off(rope, dims: int) -> dict:
    h = dims // 2
    x = mx.concatenate([mx.ones((1, 1, 1, h)), mx.zeros((1, 1, 1, h))], axis=-1)
    cos, sin = [], []
    for t in POSITIONS:
        y = np.array(rope(x, offset=t)).reshape(-1)
        cos.append(y[:h].tolist())
        sin.append(y[h:dims].tolist())
    return {"positions": POSITIONS, "cos": cos, "sin": sin}


def main() -> None:
    out = {"mlx": mx.__version__, "mlx_lm": mlx_lm.__version__, "how": __doc__.split("\n\n")[2].strip(), "models": {}}
    gpt = json.loads((CONFIGS / "gpt_oss.json").read_text())
    rope = initialize_rope(gpt["head_dim"], gpt["rope_theta"], traditional=False, scaling_config=gpt["rope_scaling"])
    out["models"]["gpt_oss"] = read_off(rope, gpt["head_dim"])
    llama = json.loads((CONFIGS / "llama.json").read_text())
    head = llama["hidden_size"] // llama["num_attention_heads"]
    rope = initialize_rope(head, llama["rope_theta"], False, llama["rope_scaling"], llama["max_position_embeddings"])
    out["models"]["llama"] = read_off(rope, head)
    phi = json.loads((CONFIGS / "phi3.json").read_text())
    dims = int(phi["head_dim"] * phi["partial_rotary_factor"])
    rope = SuScaledRoPE(dims, base=phi["rope_theta"], max_position_embeddings=phi["max_position_embeddings"],
                        original_max_position_embeddings=phi["original_max_position_embeddings"],
                        short_factor=phi["rope_scaling"]["short_factor"],
                        long_factor=phi["rope_scaling"]["long_factor"])  # fmt: skip
    out["models"]["phi3"] = read_off(rope, dims)
    dest = ROOT / "tests" / "data" / "golden" / "mlx_rope.json"
    dest.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print("wrote", dest, dest.stat().st_size, "bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
