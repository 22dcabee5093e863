"""Print posenc_cli/models/llamacpp.py's per-architecture tables from a llama.cpp source tree (side tool).

    python tools/golden/llamacpp_arch_table.py /path/to/llama.cpp

Reads src/llama-arch.cpp (LLM_ARCH_NAMES), src/llama-model.cpp (llama_model_rope_type, the arch -> model
class switch) and src/models/*.cpp (which load_arch_hparams read the per-arch rope keys).
"""

import collections
import glob
import os
import re
import sys

root = sys.argv[1]
arch_src = open(os.path.join(root, "src/llama-arch.cpp")).read()
names = dict(re.findall(r'\{\s*(LLM_ARCH_\w+),\s*"([^"]+)"\s*\}', arch_src))
model = open(os.path.join(root, "src/llama-model.cpp")).read()
i = model.index("llama_rope_type llama_model_rope_type(const llama_model * model) {")
body = model[i : model.index("float llama_model_rope_freq_scale_train", i)]
pending, rope = [], {}
for line in body.splitlines():
    c = re.match(r"\s*case (LLM_ARCH_\w+):", line)
    if c:
        pending.append(c.group(1))
        continue
    r = re.search(r"return (.*);", line)
    if r and pending:
        for p in pending:
            rope[p] = r.group(1)
        pending = []
short = {"LLAMA_ROPE_TYPE_NONE": "NONE", "LLAMA_ROPE_TYPE_NORM": "NORM", "LLAMA_ROPE_TYPE_NEOX": "NEOX",
         "LLAMA_ROPE_TYPE_MROPE": "MROPE", "LLAMA_ROPE_TYPE_IMROPE": "IMROPE", "LLAMA_ROPE_TYPE_VISION": "VISION"}
out = {}
for enum, ret in rope.items():
    if enum == "LLM_ARCH_UNKNOWN":
        continue
    m = re.match(r"model->hparams\.use_mrope\(\) \? (\w+) : (\w+)", ret)
    out[names[enum]] = f"MROPE-if-sections:{short[m.group(2)]}" if m else short[ret]
out["dflash"] = "MROPE-if-sections:NEOX"  # multi-line case: sections -> MROPE, DSV4 drafters NORM, else NEOX
classes = dict(re.findall(r"case (LLM_ARCH_\w+):\s*return new (llama_model_\w+)\(", model))
keys = collections.defaultdict(list)
for path in sorted(glob.glob(os.path.join(root, "src/models/*.cpp"))):
    text = open(path).read()
    for m in re.finditer(r"void (llama_model_\w+)::load_arch_hparams", text):
        cls = m.group(1)
        arches = [names[a] for a, c in classes.items() if c == cls]
        for kv in ("YARN_LOG_MUL", "YARN_BETA_FAST", "YARN_EXT_FACTOR", "YARN_ATTN_FACTOR", "FREQ_BASE_SWA",
                   "DIMENSION_SECTIONS"):
            if re.search(rf"LLM_KV_ROPE_(SCALING_)?{kv}\b", text):
                keys[kv].extend(arches)
# the sliding-window layers: load_swa_pattern(ml, N[, dense_first]) (llama-model.cpp; a GGUF's
# {arch}.attention.sliding_window_pattern array or number overrides N), set_swa_pattern(N) (no key read), or a
# required get_arr of the pattern key; "if" when the call sits inside a condition (the loaders' condition is a
# sliding_window key > 0), "always" at the top of load_arch_hparams
swa = {}
for path in sorted(glob.glob(os.path.join(root, "src/models/*.cpp"))):
    text = open(path).read()
    for m in re.finditer(r"void (llama_model_\w+)::load_arch_hparams", text):
        cls = m.group(1)
        body = text[m.end() : text.find("\nvoid ", m.end()) if "\nvoid " in text[m.end() :] else len(text)]
        arches = [names[a] for a, c in classes.items() if c == cls]
        c = re.search(r"\n( +)load_swa_pattern\(ml, (\d+)(?:, *(?:/\*[^*]*\*/)?(true|false))?\)", body)
        a = re.search(r"\n( +)ml\.get_arr\(LLM_KV_ATTENTION_SLIDING_WINDOW_PATTERN, hparams\.is_swa_impl\)", body)
        if c:
            when = "always" if len(c.group(1)) == 4 else "if"
            dense = "dense-first" if c.group(3) == "true" else "dense-last"
            for arch in arches:
                swa[arch] = f"{c.group(2)}:{dense}:{when}"
        elif a:
            for arch in arches:
                swa[arch] = f"array:{'always' if len(a.group(1)) == 4 else 'if'}"
print("_SWA_PATTERN_TEXT = " + repr(" ".join(f"{k}={v}" for k, v in sorted(swa.items()))))
# printed as text (arch=TYPE pairs): an architecture's name may be a posenc kind's too (t5)
items = [f"{k}={out[k]}" for k in sorted(out)]
lines, cur = [], ""
for it in items:
    if len(cur) + len(it) + 1 > 112:
        lines.append(cur.rstrip())
        cur = ""
    cur += it + " "
lines.append(cur.rstrip())
print('_ROPE_TYPE_TEXT = """')
print("\n".join(lines))
print('"""')
for kv, arches in keys.items():
    print(f"{kv} = frozenset({sorted(set(arches))!r})")
