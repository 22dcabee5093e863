"""The tiny llama of tools/golden/llamacpp_qk_weights.py converted by mlx-lm's own ``convert`` (mlx-lm 0.32.2,
mlx 0.32.4 CPU, a side venv), plain and quantized, and the two MLX mistakes built from those outputs (side
environment; not run by the suite).

    /work/side/venv/bin/python tools/golden/mlx_qk_weights.py /work/side/mlx-venv/bin/python tests/data/qk_weights

The HF model is rebuilt from the same seed and checked equal to the stored ``llama_hf`` q/k projections; then
``python -m mlx_lm convert --hf-path HF --mlx-path OUT`` (float, the checkpoint's bf16) and with
``-q --q-group-size 32 --q-bits 4`` / ``--q-bits 8`` (mlx-lm's affine quantization: the hidden size is 32, so a
group of 32). The mistakes, from the float output with plain numpy:

* ``llama_mlx_norm_rows``: q_proj/k_proj rows copied from the faithful float32 GGUF (llama.cpp's NORM order:
  Q permuted per 4 heads, K per 2), the config unchanged (mlx-lm's llama rotates halves: rope_traditional false).
* ``llama_mlx_traditional``: the rows as mlx-lm wrote them, the config given ``"rope_traditional": true``.
* ``llama_mlx_traditional_permuted``: both: consecutive pairs in the rows and in the rope (faithful).

For each, mlx-lm's own model (``mlx_lm.load``) runs the same 16 tokens and the largest logit difference from the
faithful float conversion is stored in ``mlx.json`` (the evidence that the mistakes break the model);
``NAME.dequantized.npz``: mx.dequantize of each quantized q/k weight (float32), the reference for posenc's own. Stored per
directory: config.json and model.safetensors with the attention q/k tensors only (for the quantized ones their
``scales`` and ``biases`` too), the safetensors metadata mlx-lm wrote (``format: mlx``) kept.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import safetensors.numpy
import torch
import transformers

MLX_PY, OUT = sys.argv[1], os.path.abspath(sys.argv[2])
work = tempfile.mkdtemp(prefix="mlxqk-")
hf = os.path.join(work, "llama")
config = transformers.LlamaConfig(vocab_size=64, intermediate_size=16, max_position_embeddings=256, pad_token_id=None,
                                  bos_token_id=1, eos_token_id=1, num_attention_heads=4, num_key_value_heads=2,
                                  hidden_size=32, num_hidden_layers=3)
config.architectures = ["LlamaForCausalLM"]
torch.manual_seed(0)
model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
model.save_pretrained(hf)
# mlx-lm's convert loads a tokenizer: a word-level one over the 64 ids
from tokenizers import Tokenizer, models  # noqa: E402

Tokenizer(models.WordLevel({f"t{i}": i for i in range(64)}, unk_token="t0")).save(os.path.join(hf, "tokenizer.json"))
json.dump({"tokenizer_class": "PreTrainedTokenizerFast"}, open(os.path.join(hf, "tokenizer_config.json"), "w"))
import safetensors.torch  # noqa: E402

stored = safetensors.torch.load_file(os.path.join(OUT, "llama_hf", "model.safetensors"))
mine = safetensors.torch.load_file(os.path.join(hf, "model.safetensors"))
assert all(torch.equal(stored[k], mine[k]) for k in stored), "the rebuilt HF model is not the stored llama_hf"

RUNS = {"llama_mlx": [], "llama_mlx_q4": ["-q", "--q-group-size", "32", "--q-bits", "4"],
        "llama_mlx_q8": ["-q", "--q-group-size", "32", "--q-bits", "8"]}
full = {}
for name, extra in RUNS.items():
    dest = os.path.join(work, name)
    r = subprocess.run([MLX_PY, "-m", "mlx_lm", "convert", "--hf-path", hf, "--mlx-path", dest, *extra],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"{name} FAILED\n{r.stderr[-3000:]}")
    full[name] = dest

# the mistakes: full directories (for mlx-lm to run) from the float output
import gguf  # noqa: E402

reader = gguf.GGUFReader(os.path.join(OUT, "llama.f32.gguf"))
gg = {t.name: np.array(t.data) for t in reader.tensors}


def variant(name, rows_from_gguf, traditional):
    dest = os.path.join(work, name)
    shutil.copytree(full["llama_mlx"], dest)
    if rows_from_gguf:
        path = os.path.join(dest, "model.safetensors")
        with open(path, "rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            meta = json.loads(fh.read(n)).get("__metadata__")
        tensors = safetensors.numpy.load_file(path) if False else None
        # bf16 is not a numpy dtype: rewrite through torch
        sd = safetensors.torch.load_file(path)
        for layer in range(3):
            for p, g in (("q_proj", "attn_q"), ("k_proj", "attn_k")):
                w = torch.from_numpy(gg[f"blk.{layer}.{g}.weight"].copy()).to(torch.bfloat16)
                key = f"model.layers.{layer}.self_attn.{p}.weight"
                assert w.shape == sd[key].shape
                sd[key] = w
        safetensors.torch.save_file(sd, path, metadata=meta)
        del tensors
    if traditional:
        cfg_path = os.path.join(dest, "config.json")
        cfg = json.load(open(cfg_path))
        cfg["rope_traditional"] = True
        json.dump(cfg, open(cfg_path, "w"), indent=4)
    full[name] = dest


variant("llama_mlx_norm_rows", True, False)
variant("llama_mlx_traditional", False, True)
variant("llama_mlx_traditional_permuted", True, True)

# mlx-lm's own model on each: logits against the faithful float conversion
driver = (
    "import json, sys, mlx.core as mx, numpy as np\n"
    "from mlx_lm import load\n"
    "paths = json.loads(sys.argv[1]); toks = mx.array([[3, 17, 5, 60, 2, 9, 44, 31, 8, 1, 12, 50, 27, 6, 38, 19]])\n"
    "out = {k: np.array(load(p)[0](toks).astype(mx.float32)) for k, p in paths.items()}\n"
    "ref = out['llama_mlx']\n"
    "print(json.dumps({k: float(np.abs(v - ref).max()) for k, v in out.items()}))\n"
)
r = subprocess.run([MLX_PY, "-c", driver, json.dumps(full)], capture_output=True, text=True)
if r.returncode:
    raise SystemExit(r.stderr[-3000:])
logits = json.loads(r.stdout.strip().splitlines()[-1])

# mx.dequantize of the stored q4/q8 q/k against the float weights (the bound the check uses: one step)
deq = (
    "import json, sys, mlx.core as mx, numpy as np\n"
    "w = mx.load(sys.argv[1]); f = mx.load(sys.argv[2]); cfg = json.load(open(sys.argv[3]))['quantization']\n"
    "res = {}; arrs = {}\n"
    "for k in f:\n"
    "    if ('q_proj' in k or 'k_proj' in k) and k.endswith('.weight'):\n"
    "        b = k[:-len('.weight')]\n"
    "        d = mx.dequantize(w[k], w[b + '.scales'], w[b + '.biases'], cfg['group_size'], cfg['bits'])\n"
    "        err = mx.abs(d.astype(mx.float32) - f[k].astype(mx.float32))\n"
    "        step = mx.repeat(w[b + '.scales'].astype(mx.float32), cfg['group_size'], axis=1)\n"
    "        res[k] = [float(err.max()), float((err / step).max())]\n"
    "        arrs[k] = np.array(d.astype(mx.float32))\n"
    "np.savez(sys.argv[4], **arrs)\n"
    "print(json.dumps(res))\n"
)
quant = {}
for name in ("llama_mlx_q4", "llama_mlx_q8"):
    r = subprocess.run([MLX_PY, "-c", deq, os.path.join(full[name], "model.safetensors"),
                        os.path.join(full["llama_mlx"], "model.safetensors"), os.path.join(full[name], "config.json"),
                        os.path.join(OUT, f"{name}.dequantized.npz")],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr[-3000:])
    quant[name] = json.loads(r.stdout.strip().splitlines()[-1])

# store: config.json and the attention q/k tensors only (with scales/biases), mlx-lm's metadata kept
for name, dest in full.items():
    out = os.path.join(OUT, name)
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.join(dest, "config.json"), os.path.join(out, "config.json"))
    path = os.path.join(dest, "model.safetensors")
    with open(path, "rb") as fh:
        n = int.from_bytes(fh.read(8), "little")
        meta = json.loads(fh.read(n)).get("__metadata__")
    sd = safetensors.torch.load_file(path)
    keep = {k: v.contiguous() for k, v in sd.items() if "q_proj" in k or "k_proj" in k}
    safetensors.torch.save_file(keep, os.path.join(out, "model.safetensors"), metadata=meta)

import importlib.metadata as md  # noqa: E402

ver = subprocess.run([MLX_PY, "-c", "import importlib.metadata as m; print(m.version('mlx'), m.version('mlx-lm'))"],
                     capture_output=True, text=True).stdout.split()
json.dump({"mlx": ver[0], "mlx_lm": ver[1], "transformers": transformers.__version__, "hf": "llama_hf",
           "logits_max_abs_vs_llama_mlx": logits, "dequantize_vs_float": quant,
           "expected": {"llama_mlx": "agree", "llama_mlx_q4": "agree", "llama_mlx_q8": "agree",
                        "llama_mlx_norm_rows": "differ: rows permuted, rope halves",
                        "llama_mlx_traditional": "differ: rope_traditional true, rows unpermuted",
                        "llama_mlx_traditional_permuted": "agree"}},
          open(os.path.join(OUT, "mlx.json"), "w"), indent=1)
print(json.dumps(logits), json.dumps(quant))
shutil.rmtree(work)
