"""Tiny HF checkpoints converted by llama.cpp's own convert_hf_to_gguf.py, faithfully and with the known Q/K
permutation mistakes patched into the converter at run time (side environment; not run by the suite).

    /work/side/venv/bin/python tools/golden/llamacpp_qk_weights.py LLAMA_CPP_DIR tests/data/qk_weights

LLAMA_CPP_DIR is the llama.cpp the converter comes from (the llama-cpp-python 0.3.36 sdist's vendor/llama.cpp, whose
gguf-py is gguf 0.19.0); its gguf-py is put first on the path, so the converter writes with its own gguf.

Each model: a random-weight transformers model (torch.manual_seed; biases drawn too, where transformers
initialises them to zero), saved as bf16, converted in a subprocess. The
mistakes are patches of the converter's own functions, applied before its main() runs:

* ``k_with_q_heads``: ``LlamaModel.permute`` ignores its ``n_head_kv`` (K permuted with the query head count: the
  converter before llama.cpp PR #3364).
* ``no_permute``: ``LlamaModel.undo_permute = False`` (a llama model converted without the permute).
* ``twice``: ``LlamaModel.permute`` applied twice.
* ``neox_permuted``: a NEOX-type model's ``modify_tensors`` runs ``LlamaModel.permute`` on q_proj/k_proj (weights and
  biases) first, as the llama path would.

The reverse trip: the faithful float32 conversion loaded by transformers' own GGUF loading
(``from_pretrained(gguf_file=...)``), faithfully and with its K un-permuted with the query head count, saved as
``llama_from_gguf_hf`` / ``llama_from_gguf_k_wrong_hf`` (q/k only).

What is stored: ``NAME.gguf`` with every key the converter wrote and of the tensors only the attention q/k/qkv
ones (bytes as written: F32, F16, BF16 or Q8_0); ``HF/config.json`` and ``HF/model.safetensors`` with the HF
model's q/k projections only (bf16, as saved); ``conversions.json`` the truth per file: the model, the outtype and
the mistake patched in (every layer).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

LLAMA_CPP, OUT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(LLAMA_CPP, "gguf-py"))

import gguf  # noqa: E402
import numpy as np  # noqa: E402
import safetensors.torch  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

#: name: (model class, config edits, seed)
MODELS = {
    "llama": ("LlamaForCausalLM", {"num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 32,
                                   "num_hidden_layers": 3}, 0),
    "llama_other": ("LlamaForCausalLM", {"num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 32,
                                         "num_hidden_layers": 3}, 1),
    "qwen2": ("Qwen2ForCausalLM", {"num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 32,
                                   "num_hidden_layers": 2}, 0),
    "stablelm": ("StableLmForCausalLM", {"num_attention_heads": 4, "num_key_value_heads": 4, "hidden_size": 64,
                                         "num_hidden_layers": 2, "partial_rotary_factor": 0.25,
                                         "use_qkv_bias": True}, 0),
    "phi3": ("Phi3ForCausalLM", {"num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 32,
                                 "num_hidden_layers": 2}, 0),
}

#: file: (model, outtype, mistake)
CONVERSIONS = {
    "llama.f32": ("llama", "f32", None),
    "llama.f16": ("llama", "f16", None),
    "llama.bf16": ("llama", "bf16", None),
    "llama.q8_0": ("llama", "q8_0", None),
    "llama.k_with_q_heads": ("llama", "f16", "k_with_q_heads"),
    "llama.no_permute": ("llama", "f16", "no_permute"),
    "llama.twice": ("llama", "f16", "twice"),
    "llama.k_with_q_heads.q8_0": ("llama", "q8_0", "k_with_q_heads"),
    "qwen2.f32": ("qwen2", "f32", None),
    "qwen2.neox_permuted": ("qwen2", "f32", "neox_permuted"),
    "stablelm.f16": ("stablelm", "f16", None),
    "stablelm.neox_permuted": ("stablelm", "f16", "neox_permuted"),
    "phi3.f32": ("phi3", "f32", None),
    # --fuse-qkv: the converter's base ModelBase.modify_tensors concatenates [Q; K; V] after the permute
    "llama.f32.fused_qkv": ("llama", "f32 --fuse-qkv", None),
    "llama.fused_qkv.k_with_q_heads": ("llama", "f16 --fuse-qkv", "k_with_q_heads"),
    "qwen2.f32.fused_qkv": ("qwen2", "f32 --fuse-qkv", None),
}

PATCHES = {
    None: "",
    "k_with_q_heads": (
        "from conversion.llama import LlamaModel\n"
        "_orig = LlamaModel.permute\n"
        "LlamaModel.permute = staticmethod(lambda w, n_head, n_head_kv: _orig(w, n_head, None))\n"
    ),
    "no_permute": "from conversion.llama import LlamaModel\nLlamaModel.undo_permute = False\n",
    "twice": (
        "from conversion.llama import LlamaModel\n"
        "_orig = LlamaModel.permute\n"
        "LlamaModel.permute = staticmethod(lambda w, h, hk: _orig(_orig(w, h, hk), h, hk))\n"
    ),
    "neox_permuted": (
        "from conversion.llama import LlamaModel\n"
        "import conversion\n"
        "def _wrap(cls):\n"
        "    orig = cls.modify_tensors\n"
        "    def modify(self, data, name, bid):\n"
        "        nh, nkv = self.hparams['num_attention_heads'], self.hparams.get('num_key_value_heads')\n"
        "        if name.endswith(('q_proj.weight', 'q_proj.bias')):\n"
        "            data = LlamaModel.permute(data, nh, nh)\n"
        "        if name.endswith(('k_proj.weight', 'k_proj.bias')):\n"
        "            data = LlamaModel.permute(data, nh, nkv)\n"
        "        return orig(self, data, name, bid)\n"
        "    cls.modify_tensors = modify\n"
        "from conversion.qwen import Qwen2Model\n"
        "from conversion.stablelm import StableLMModel\n"
        "_wrap(Qwen2Model); _wrap(StableLMModel)\n"
    ),
}

KEEP = ("attn_q.", "attn_k.", "attn_qkv.")


def save_model(name):
    cls_name, edits, seed = MODELS[name]
    cls = getattr(transformers, cls_name)
    config = cls.config_class(vocab_size=64, intermediate_size=16, max_position_embeddings=256,
                              pad_token_id=None, bos_token_id=1, eos_token_id=1, **edits)
    config.architectures = [cls_name]
    torch.manual_seed(seed)
    model = cls(config)
    with torch.no_grad():  # transformers initialises biases to zero, which any permutation leaves as they are
        for mod in model.modules():
            if isinstance(mod, torch.nn.Linear) and mod.bias is not None:
                mod.bias.normal_(0.0, 0.02)
    model = model.to(torch.bfloat16)
    work = os.path.join(tempfile.mkdtemp(prefix="qk-"), name)  # the converter names the model after the directory
    model.save_pretrained(work)
    json.dump({"model": {"vocab": {f"t{i}": i for i in range(64)}}, "added_tokens": []},
              open(os.path.join(work, "tokenizer.json"), "w"))
    # the stored HF side: config.json and the attention q/k/qkv projections only
    hf = os.path.join(OUT, f"{name}_hf")
    os.makedirs(hf, exist_ok=True)
    shutil.copy(os.path.join(work, "config.json"), os.path.join(hf, "config.json"))
    sd = safetensors.torch.load_file(os.path.join(work, "model.safetensors"))
    keep = {k: v.contiguous() for k, v in sd.items() if any(p in k for p in ("q_proj", "k_proj", "qkv_proj"))}
    safetensors.torch.save_file(keep, os.path.join(hf, "model.safetensors"), metadata={"format": "pt"})
    return work


def convert(work, outtype, mistake, dest):
    outtype, *flags = outtype.split()
    out = os.path.join(work, f"out-{outtype}-{mistake}{''.join(flags)}.gguf")
    driver = (
        f"import sys; sys.argv=['convert_hf_to_gguf.py', {work!r}, '--outfile', {out!r}, '--outtype', {outtype!r}, "
        f"*{flags!r}]\n"
        f"sys.path.insert(0, {os.path.join(LLAMA_CPP, 'gguf-py')!r}); sys.path.insert(0, {LLAMA_CPP!r})\n"
        "import convert_hf_to_gguf as c\n"
        + PATCHES[mistake]
        + "orig = c.get_model_class\n"
        "def patched(*a, **k):\n"
        "    cls = orig(*a, **k)\n"
        "    return type(cls.__name__, (cls,), {'set_vocab': lambda self: self.gguf_writer.add_tokenizer_model('none'),"
        " 'model_arch': cls.model_arch})\n"
        "c.get_model_class = patched\n"
        "c.main()\n"
    )
    r = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, cwd=LLAMA_CPP)
    if r.returncode != 0:
        raise SystemExit(f"{dest} FAILED\n{r.stderr[-3000:]}")
    reader = gguf.GGUFReader(out)
    arch = reader.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dest, arch)
    for key, f in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = f.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, f.contents(), vtype, sub_type=f.types[-1])
        else:
            w.add_key_value(key, f.contents(), vtype)
    kept = []
    for t in reader.tensors:
        if not any(p in t.name for p in KEEP):
            continue
        qt = gguf.GGMLQuantizationType(int(t.tensor_type))
        data = np.array(t.data)
        if qt in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            w.add_tensor(t.name, data)
        else:
            w.add_tensor(t.name, data.view(np.uint8), raw_dtype=qt)
        kept.append(f"{t.name} {qt.name}")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return arch, kept, out


def from_gguf(work, full_gguf, name, k_wrong):
    """The reverse trip: transformers' GGUF loading (modeling_gguf_pytorch_utils, LlamaTensorProcessor un-permutes
    Q/K) of the full faithful conversion, saved as an HF directory (its config, its q/k projections). With
    ``k_wrong`` the loader's ``_reverse_permute_weights`` un-permutes K with the query head count (its
    ``num_kv_heads`` dropped), the mistake of transformers #31766/#31788's era."""
    import transformers.modeling_gguf_pytorch_utils as m

    orig = m.LlamaTensorProcessor._reverse_permute_weights
    if k_wrong:
        m.LlamaTensorProcessor._reverse_permute_weights = lambda self, w, n_head, n_kv=None: orig(self, w, n_head)
    try:
        model = transformers.LlamaForCausalLM.from_pretrained(os.path.dirname(full_gguf),
                                                              gguf_file=os.path.basename(full_gguf))
    finally:
        m.LlamaTensorProcessor._reverse_permute_weights = orig
    hf = os.path.join(OUT, name)
    os.makedirs(hf, exist_ok=True)
    model.config.to_json_file(os.path.join(hf, "config.json"))
    keep = {k: v.contiguous() for k, v in model.state_dict().items() if "q_proj" in k or "k_proj" in k}
    safetensors.torch.save_file(keep, os.path.join(hf, "model.safetensors"), metadata={"format": "pt"})


os.makedirs(OUT, exist_ok=True)
manifest = {"transformers": transformers.__version__, "torch": torch.__version__, "gguf": "0.19.0 (vendored)",
            "llama_cpp": LLAMA_CPP, "files": {}}
works = {}
for name in MODELS:
    works[name] = save_model(name)
for fname, (model, outtype, mistake) in CONVERSIONS.items():
    arch, kept, full = convert(works[model], outtype, mistake, os.path.join(OUT, f"{fname}.gguf"))
    manifest["files"][fname] = {"model": model, "hf": f"{model}_hf", "outtype": outtype, "mistake": mistake,
                                "arch": arch, "tensors": kept}
    print(fname, arch, len(kept), "tensors")
    if fname == "llama.f32":  # the reverse trip starts from the faithful float32 conversion
        for name, k_wrong in (("llama_from_gguf_hf", False), ("llama_from_gguf_k_wrong_hf", True)):
            from_gguf(works[model], full, name, k_wrong)
            manifest.setdefault("reverse", {})[name] = {"gguf": fname, "k_wrong": k_wrong}
json.dump(manifest, open(os.path.join(OUT, "conversions.json"), "w"), indent=1)
