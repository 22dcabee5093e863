"""The tiny llama of tools/golden/llamacpp_qk_weights.py exported by torch.onnx (torch 2.13.0, onnx, onnxscript in a
side venv), and a copy whose q/k initializers hold llama.cpp's NORM row order (side environment; not run by the
suite).

    /work/side/mlx-venv/bin/python tools/golden/onnx_qk_weights.py tests/data/qk_weights

The HF model is rebuilt from the same seed, checked equal to the stored ``llama_hf`` q/k projections, cast to
float32 (exact from bf16) and exported with ``torch.onnx.export(model, (input_ids,), dynamo=True)``; the
exporter keeps HF's parameter names for the initializers it does not fold. ``llama_onnx/model.onnx``: the export
as written (weights inside the file) beside HF's config.json; ``llama_onnx_norm_rows/model.onnx``: the same graph
with every q_proj/k_proj initializer's output rows permuted per head as convert_hf_to_gguf.py's
``LlamaModel.permute`` does (plain numpy on the initializer, transposed or not as stored). ``onnx.json``
records the initializers (name, shape) the export holds and, found here by exact equality with HF's float32
values, which initializer holds which HF projection (and whether transposed: MatMul's [in, out]), the truth the
tests hold posenc's matching to. The exporter's per-node stack traces (doc strings, metadata) are dropped.
"""

import json
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
import safetensors.torch
import torch
import transformers
from onnx import numpy_helper

OUT = os.path.abspath(sys.argv[1])
config = transformers.LlamaConfig(vocab_size=64, intermediate_size=16, max_position_embeddings=256, pad_token_id=None,
                                  bos_token_id=1, eos_token_id=1, num_attention_heads=4, num_key_value_heads=2,
                                  hidden_size=32, num_hidden_layers=3)
config.architectures = ["LlamaForCausalLM"]
torch.manual_seed(0)
model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
work = tempfile.mkdtemp(prefix="onnxqk-")
model.save_pretrained(work)
stored = safetensors.torch.load_file(os.path.join(OUT, "llama_hf", "model.safetensors"))
mine = safetensors.torch.load_file(os.path.join(work, "model.safetensors"))
assert all(torch.equal(stored[k], mine[k]) for k in stored), "the rebuilt HF model is not the stored llama_hf"
model = model.to(torch.float32).eval()
model.config.use_cache = False
ids = torch.tensor([[3, 17, 5, 60, 2, 9, 44, 31]])
dest = os.path.join(OUT, "llama_onnx")
os.makedirs(dest, exist_ok=True)
path = os.path.join(dest, "model.onnx")
torch.onnx.export(model, (ids,), path, dynamo=True, external_data=False)
shutil.copy(os.path.join(OUT, "llama_hf", "config.json"), os.path.join(dest, "config.json"))
m = onnx.load(path)
for n in m.graph.node:  # the exporter's stack traces per node: 80% of the file, nothing posenc reads
    n.doc_string = ""
    del n.metadata_props[:]
onnx.save(m, path)
inits = {i.name: list(i.dims) for i in m.graph.initializer}


def permute(rows, n_head):
    return np.arange(rows).reshape(n_head, 2, rows // n_head // 2).swapaxes(1, 2).reshape(-1)


# the truth, by exact values: which initializer holds which HF projection, and whether transposed
truth = {}
for name, t in stored.items():
    hf = t.float().numpy()
    for init in m.graph.initializer:
        a = numpy_helper.to_array(init)
        if a.shape == hf.shape and np.array_equal(a, hf):
            truth[name] = [init.name, False]
        elif a.shape == hf.shape[::-1] and np.array_equal(a.T, hf):
            truth[name] = [init.name, True]
by_init = {v[0]: (k, v[1]) for k, v in truth.items()}
for init in m.graph.initializer:
    if init.name in by_init:
        name, transposed = by_init[init.name]
        heads = 4 if "q_proj" in name else 2
        a = numpy_helper.to_array(init)
        new = a[:, permute(a.shape[1], heads)] if transposed else a[permute(a.shape[0], heads)]
        init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(new), init.name))
bad = os.path.join(OUT, "llama_onnx_norm_rows")
os.makedirs(bad, exist_ok=True)
onnx.save(m, os.path.join(bad, "model.onnx"))
shutil.copy(os.path.join(OUT, "llama_hf", "config.json"), os.path.join(bad, "config.json"))
json.dump({"torch": torch.__version__, "onnx": onnx.__version__, "transformers": transformers.__version__,
           "initializers": inits, "hf_to_initializer": truth}, open(os.path.join(OUT, "onnx.json"), "w"), indent=1)
print(json.dumps(truth))
shutil.rmtree(work)
