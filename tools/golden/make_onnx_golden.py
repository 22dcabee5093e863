"""Reference outputs of ONNX rotary nodes, run once on onnxruntime (CPU) and onnx.reference in a side environment.

    /work/side-23/venv/bin/python tools/golden/make_onnx_golden.py   # onnx 1.23.2, onnxruntime 1.32.0

The models are tests/onnx_models.py's (onnxruntime-genai's conventions, caches from plain numpy). Each is fed
X = ones on the first half of every head (rotate_half layout) or on the even features (interleaved), zeros
elsewhere, so the rotated output is the caches as the runtime applies them: Y[j] = cos[t, j] and
Y[j + r/2] = sin[t, j] (interleaved: Y[2j], Y[2j + 1]). Rows at a few positions are stored in
tests/data/golden/onnx_rotary.json, with which LongRoPE branch the runtime took at that sequence length.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from tests.onnx_models import genai_caches, rotary_model, su_mscale, yarn_mscale  # noqa: E402

HEAD, HEADS, MAXPOS, ORIG, THETA = 64, 4, 8192, 2048, 10000.0
POSITIONS = [0, 1, 2, 17, 1000, 2047, 2048, 4095, 8191]


def probe(interleaved: bool, seq: int, four_d: bool) -> np.ndarray:
    h = HEAD // 2
    one = np.zeros(HEAD, dtype=np.float32)
    if interleaved:
        one[0::2] = 1
    else:
        one[:h] = 1
    if four_d:
        return np.broadcast_to(one, (1, HEADS, seq, HEAD)).copy()
    return np.broadcast_to(np.tile(one, HEADS), (1, seq, HEADS * HEAD)).copy()


def read_off(y: np.ndarray, interleaved: bool, four_d: bool) -> tuple[np.ndarray, np.ndarray]:
    head0 = y[0, 0] if four_d else y[0, :, :HEAD]
    if interleaved:
        return head0[:, 0::2], head0[:, 1::2]
    return head0[:, : HEAD // 2], head0[:, HEAD // 2 :]


def run(model, seq: int, op: str, interleaved: bool, engine: str):
    four_d = op == "onnx"
    feeds = {"X": probe(interleaved, seq, four_d), "position_ids": np.arange(seq, dtype=np.int64)[None, :]}
    if engine == "onnxruntime":
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        (y,) = sess.run(None, feeds)
    else:
        (y,) = ReferenceEvaluator(model).run(None, feeds)
    return read_off(np.asarray(y), interleaved, four_d)


def main() -> None:
    rng = np.random.default_rng(7)
    short = [float(x) for x in np.round(1 + rng.random(HEAD // 2) * 0.2, 4)]
    long = [float(x) for x in np.round(1 + np.linspace(0, 30, HEAD // 2), 4)]
    yarn = {"original": ORIG, "beta_fast": 32.0, "beta_slow": 1.0, "factor": 4.0}
    su = su_mscale(MAXPOS / ORIG, ORIG)
    cases = {
        "yarn-contrib": dict(caches={"": genai_caches(HEAD, THETA, MAXPOS, yarn=yarn, mscale=yarn_mscale(4.0),
                                                        round_range=True)}, op="contrib", interleaved=0),
        "yarn-onnx23": dict(caches={"": genai_caches(HEAD, THETA, MAXPOS, yarn=yarn, mscale=yarn_mscale(4.0),
                                                       round_range=True)}, op="onnx", interleaved=0),
        "plain-onnx23-interleaved": dict(caches={"": genai_caches(HEAD, THETA, MAXPOS)}, op="onnx", interleaved=1),
        "phi-if-contrib": dict(caches={
            "small": genai_caches(HEAD, THETA, ORIG, rescale=np.array(short), mscale=su),
            "large": genai_caches(HEAD, THETA, MAXPOS, rescale=np.array(long), mscale=su)},
            op="contrib", interleaved=0, layout="if", threshold=ORIG),
    }  # fmt: skip
    out = {"onnx": onnx.__version__, "onnxruntime": ort.__version__, "positions": POSITIONS,
           "short_factor": short, "long_factor": long, "how": __doc__.split("\n\n")[2].strip(), "cases": {}}  # fmt: skip
    for name, case in cases.items():
        kw = {k: v for k, v in case.items() if k != "caches"}
        model = rotary_model(case["caches"], num_heads=HEADS, head_size=HEAD, **kw)
        onnx.checker.check_model(model)
        engines = ["onnxruntime"] + (["onnx.reference"] if case["op"] == "onnx" else [])
        res = {}
        for engine in engines:
            for seq in ([ORIG, ORIG + 1, MAXPOS] if kw.get("layout") == "if" else [MAXPOS]):
                cos, sin = run(model, seq, case["op"], bool(case["interleaved"]), engine)
                rows = [p for p in POSITIONS if p < seq]
                res[f"{engine}@{seq}"] = {"positions": rows, "cos": cos[rows].tolist(), "sin": sin[rows].tolist()}
        out["cases"][name] = res
        print(name, list(res))
    dest = ROOT / "tests" / "data" / "golden" / "onnx_rotary.json"
    dest.write_text(json.dumps(out, indent=None, separators=(",", ":")) + "\n")
    print("wrote", dest, dest.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
