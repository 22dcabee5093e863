"""Write an ONNX model carrying a config's rotary caches the way onnxruntime-genai's builder does (for the docs).

    python tools/make_onnx_example.py CONFIG OUT.onnx [--mistake swap|no-scaling]

LongRoPE configs get onnxruntime-genai's If (then: the large caches, taken when the sequence is longer than
original_max_position_embeddings); other configs one RotaryEmbedding with initializer caches. The caches are
computed with plain numpy by tests/onnx_models.py, following onnxruntime-genai's builders/base.py; ``--mistake``
makes one of the export mistakes posenc check names. Needs the onnx package (pip install 'posenc-cli[onnx]').
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.onnx_models import genai_caches, rotary_model, save, su_mscale


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("out")
    ap.add_argument("--mistake", choices=("swap", "no-scaling"))
    args = ap.parse_args()
    cfg = json.loads(Path(args.config).read_text())
    heads = cfg["num_attention_heads"]
    head = cfg.get("head_dim") or cfg["hidden_size"] // heads
    theta, mpe = float(cfg.get("rope_theta", 10000.0)), cfg["max_position_embeddings"]
    rs = cfg.get("rope_scaling") or {}
    if rs.get("type", rs.get("rope_type")) not in ("longrope", "su"):
        sys.exit("this example writes LongRoPE (Phi-3) exports only")
    orig = cfg["original_max_position_embeddings"]
    short, long = np.array(rs["short_factor"]), np.array(rs["long_factor"])
    if args.mistake == "swap":
        short, long = long, short
    scale = 1.0 if args.mistake == "no-scaling" else su_mscale(mpe / orig, orig)
    small = genai_caches(head, theta, orig, rescale=short, mscale=scale)
    large = genai_caches(head, theta, mpe, rescale=long, mscale=scale)
    out = Path(args.out)
    # the caches written straight into OUT.onnx.data (as save(..., external=) writes them, without the copies)
    model = rotary_model({"small": small, "large": large}, num_heads=heads, head_size=head, layout="if",
                         threshold=orig, data_file=f"{out}.data")  # fmt: skip
    save(model, str(out))
    print(f"wrote {out} and {out.name}.data: caches of {orig} and {mpe} rows, {head // 2} columns, float32")


if __name__ == "__main__":
    main()
