"""Real GGUF conversions of tiny random-weight HF checkpoints (side environment; not run by the suite).

    /work/side-22/bin/python tools/golden/llamacpp_convert.py LLAMA_CPP_DIR tests/data/llamacpp

For each model below: the real config.json of tests/data/configs (its RoPE metadata untouched: rope_theta,
rope_scaling, head dims, max_position_embeddings, sliding windows, mrope sections), with the sizes that do not touch
RoPE shrunk (layers, hidden size where the head dim is explicit, experts, vocabulary), random weights from
transformers' own model class, saved, then converted with llama.cpp's convert_hf_to_gguf.py (the one in
LLAMA_CPP_DIR, the llama-cpp-python sdist's vendor/llama.cpp). The tokenizer is replaced by an empty one
(``tokenizer.ggml.model = none``): the converter's tokenizer code needs real tokenizer files and is no part of RoPE.

What is stored: ``NAME.gguf`` with every key the converter wrote, byte for byte the values, and of the tensors only
the rope ones (``rope_freqs``, ``rope_factors_long/short``), so each file is a few kB; ``conversions.json`` lists,
per model, the tensors dropped and the config used (``NAME.config.json``, the shrunk config the converter read).
"""

import copy
import json
import os
import subprocess
import sys
import tempfile

import gguf
import numpy as np
import torch
import transformers

LLAMA_CPP, OUT = sys.argv[1], sys.argv[2]
CONFIGS = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "configs")
ROPE_TENSORS = ("rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight")


def shrink(cfg, text):
    c = text
    heads = c.get("num_attention_heads")
    head_dim = c.get("head_dim") or (c["hidden_size"] // heads)
    c["num_hidden_layers"] = c.get("_keep_layers", 2)
    c["vocab_size"] = 64
    for k in ("pad_token_id", "bos_token_id", "eos_token_id"):  # class defaults point past a 64-token vocab
        c[k] = None if k == "pad_token_id" else 1
    c["intermediate_size"] = 16
    for k in ("moe_intermediate_size", "shared_expert_intermediate_size"):
        if k in c:
            c[k] = 16
    if "num_local_experts" in c:
        c["num_local_experts"], c["num_experts_per_tok"] = 2, 1
    if "n_routed_experts" in c:
        c["n_routed_experts"], c["num_experts_per_tok"], c["n_shared_experts"] = 2, 1, 1
        c["first_k_dense_replace"] = 1
        c["n_group"], c["topk_group"] = 1, 1
    if "layer_types" in c:
        c["layer_types"] = c["layer_types"][: c["num_hidden_layers"]]
    if "sliding_window_pattern" in c:
        pass
    return cfg


MODELS = {
    # name: (config file, edits to the text config that keep RoPE; head dims kept)
    "llama31": ("llama.json", {"num_attention_heads": 2, "num_key_value_heads": 1, "hidden_size": 256}),
    "phi3": ("phi3.json", {"num_attention_heads": 2, "num_key_value_heads": 2, "hidden_size": 256}),
    "qwen2": ("qwen2.json", {"num_attention_heads": 2, "num_key_value_heads": 1, "hidden_size": 256}),
    "gemma3": ("gemma3_text.json", {"num_attention_heads": 1, "num_key_value_heads": 1, "hidden_size": 64,
                                    "_keep_layers": 6}),
    "gpt_oss": ("gpt_oss.json", {"num_attention_heads": 2, "num_key_value_heads": 1, "hidden_size": 64}),
    "deepseek_v2": ("deepseek_v2.json", {"num_attention_heads": 2, "num_key_value_heads": 2, "hidden_size": 64,
                                         "kv_lora_rank": 16, "q_lora_rank": None, "qk_nope_head_dim": 16,
                                         "v_head_dim": 16, "_keep_layers": 1}),
    "qwen2_vl": ("qwen2_vl.json", {"num_attention_heads": 2, "num_key_value_heads": 1, "hidden_size": 256}),
}


#: The model class where a stored config names none.
CLASSES = {"phi3": "Phi3ForCausalLM", "gemma3": "Gemma3ForCausalLM", "gpt_oss": "GptOssForCausalLM",
           "deepseek_v2": "DeepseekV2ForCausalLM", "qwen2": "Qwen2ForCausalLM",
           "qwen2_vl": "Qwen2VLForConditionalGeneration", "llama31": "LlamaForCausalLM"}


def tiny_vocab(self):
    self.gguf_writer.add_tokenizer_model("none")


def convert(name, cfg_file, edits):
    cfg = json.load(open(os.path.join(CONFIGS, cfg_file)))
    cfg = copy.deepcopy(cfg)
    text = cfg["text_config"] if "text_config" in cfg else cfg
    text.update({k: v for k, v in edits.items()})
    shrink(cfg, text)
    text.pop("_keep_layers", None)
    if "vision_config" in cfg:
        v = cfg["vision_config"]
        v.update({"depth": 1, "embed_dim": 32, "hidden_size": 256 if "qwen2_vl" in name else 32, "num_heads": 2,
                  "mlp_ratio": 1, "intermediate_size": 16})
    cfg.pop("quantization_config", None)
    work = tempfile.mkdtemp(prefix=f"conv-{name}-")
    arch = cfg.setdefault("architectures", [CLASSES[name]])[0]
    json.dump(cfg, open(os.path.join(work, "config.json"), "w"), indent=1)
    config = transformers.AutoConfig.from_pretrained(work)
    torch.manual_seed(0)
    cls = getattr(transformers, arch)
    model = cls(config).to(torch.bfloat16)
    model.save_pretrained(work)
    # Gemma's converter trims the embedding to the tokenizer's size: a 64-token stand-in (tokens are no part of RoPE)
    json.dump({"model": {"vocab": {f"t{i}": i for i in range(64)}}, "added_tokens": []},
              open(os.path.join(work, "tokenizer.json"), "w"))
    saved = json.load(open(os.path.join(work, "config.json")))
    out = os.path.join(work, "out.gguf")
    driver = (
        "import sys; sys.argv=['convert_hf_to_gguf.py', %r, '--outfile', %r, '--outtype', 'bf16'];"
        "sys.path.insert(0, %r); import convert_hf_to_gguf as c;"
        "orig = c.get_model_class\n"
        "def patched(*a, **k):\n"
        "    cls = orig(*a, **k)\n"
        "    return type(cls.__name__, (cls,), {'set_vocab': lambda self: self.gguf_writer.add_tokenizer_model('none'),"
        " 'model_arch': cls.model_arch})\n"
        "c.get_model_class = patched\n"
        "c.main()\n"
    ) % (work, out, LLAMA_CPP)
    r = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, cwd=LLAMA_CPP)
    if r.returncode != 0:
        print(name, "FAILED\n", r.stderr[-3000:])
        return None
    reader = gguf.GGUFReader(out)
    dest = os.path.join(OUT, f"{name}.gguf")
    arch_name = reader.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dest, arch_name)
    for key, f in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = f.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, f.contents(), vtype, sub_type=f.types[-1])
        else:
            w.add_key_value(key, f.contents(), vtype)
    dropped = []
    for t in reader.tensors:
        if t.name in ROPE_TENSORS:
            w.add_tensor(t.name, np.array(t.data, dtype=np.float32))
        else:
            dropped.append(t.name)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    json.dump(saved, open(os.path.join(OUT, f"{name}.config.json"), "w"), indent=1)
    return {"config": f"tests/data/configs/{cfg_file}", "architecture": arch, "gguf_arch": arch_name,
            "dropped_tensors": len(dropped), "kept": [t.name for t in reader.tensors if t.name in ROPE_TENSORS]}


manifest = {"transformers": transformers.__version__, "torch": torch.__version__, "gguf": gguf.__version__
            if hasattr(gguf, "__version__") else "?", "llama_cpp": LLAMA_CPP, "models": {}}
only = sys.argv[3:] or list(MODELS)
for name in only:
    res = convert(name, *MODELS[name])
    if res is not None:
        manifest["models"][name] = res
        print(name, "ok", res)
path = os.path.join(OUT, "conversions.json")
if os.path.exists(path):
    old = json.load(open(path))
    old["models"].update(manifest["models"])
    manifest["models"] = old["models"]
json.dump(manifest, open(path, "w"), indent=1)
