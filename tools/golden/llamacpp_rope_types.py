"""llama_model_rope_type of the real llama.cpp for GGUFs written with gguf.GGUFWriter (side environment).

    /work/side-22/bin/python tools/golden/llamacpp_rope_types.py tests/data/llamacpp/rope_types.json

Each GGUF holds only metadata (no tensors, tokenizer model ``none``) and is loaded with ``vocab_only`` through
llama-cpp-python's bindings: load_hparams runs (and with it the architecture's own loader) and sets the rope type,
which ``llama_model_rope_type`` returns. Keys an architecture's loader requires are added with plain values.

A vocab-only load stops load_hparams before the per-architecture keys (src/llama-model.cpp: "everything past this
point is not vocab-related"), and llama_model_rope_type reads the architecture plus, for the conditional ones (GLM4,
HunYuan-VL, BailingMoE3, DFlash), hparams.rope_sections: those stay zero here, so the glm4 case with sections in
the file still reports the no-sections branch (NORM). Each case records ``sections_seen: false``.
"""

import ctypes
import json
import os
import sys
import tempfile

import gguf
import llama_cpp

COMMON = {
    "context_length": 4096, "embedding_length": 256, "block_count": 2, "feed_forward_length": 64,
    "attention.head_count": 2, "attention.head_count_kv": 1, "attention.layer_norm_rms_epsilon": 1e-6,
    "attention.layer_norm_epsilon": 1e-5, "rope.dimension_count": 128,
}
EXTRA = {
    "deepseek2": {"attention.q_lora_rank": 16, "attention.kv_lora_rank": 16, "expert_feed_forward_length": 16,
                  "expert_shared_count": 1, "leading_dense_block_count": 1, "expert_count": 2,
                  "expert_used_count": 1, "attention.key_length_mla": 64, "attention.value_length_mla": 64},
    "gpt-oss": {"attention.sliding_window": 128, "expert_count": 2, "expert_used_count": 1,
                "expert_feed_forward_length": 16},
    "gemma3": {"attention.sliding_window": 512},
    "qwen2vl": {"rope.dimension_sections": [16, 24, 24, 0]},
    "qwen3vl": {"rope.dimension_sections": [24, 20, 20, 0], "n_deepstack_layers": 0},
    "glm4": {"rope.dimension_sections": [8, 12, 12, 0]},
    "phi3": {},
}
CASES = [("llama", None), ("qwen2", None), ("phi3", None), ("gemma3", None), ("gpt-oss", None),
         ("deepseek2", None), ("qwen2vl", None), ("qwen3vl", None), ("glm4", None), ("glm4", "nosections"),
         ("orion", None), ("falcon", None), ("starcoder2", None), ("cohere2", None), ("olmo2", None)]


def write(path, arch, keys):
    w = gguf.GGUFWriter(path, arch)
    for k, v in keys.items():
        key = f"{arch}.{k}"
        if isinstance(v, list):
            w.add_array(key, v)
        elif isinstance(v, float):
            w.add_float32(key, v)
        else:
            w.add_uint32(key, v)
    w.add_string("tokenizer.ggml.model", "none")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


llama_cpp.llama_backend_init()
out = {"llama_cpp_python": llama_cpp.__version__, "cases": []}
tmp = tempfile.mkdtemp()
for arch, variant in CASES:
    keys = dict(COMMON)
    keys.update(EXTRA.get(arch, {}))
    if variant == "nosections":
        keys.pop("rope.dimension_sections", None)
    path = os.path.join(tmp, f"{arch}-{variant}.gguf")
    write(path, arch, keys)
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(path.encode(), params)
    if not model:
        print(arch, variant, "FAILED to load")
        continue
    rt = llama_cpp.llama_model_rope_type(model)
    llama_cpp.llama_model_free(model)
    case = {"arch": arch, "rope_type": int(rt)}
    if "rope.dimension_sections" in keys:
        case["sections_in_file"] = keys["rope.dimension_sections"]
    case["sections_seen"] = False  # vocab-only: load_hparams returned before the arch's keys
    out["cases"].append(case)
    print(case)
json.dump(out, open(sys.argv[1], "w"), indent=1)
