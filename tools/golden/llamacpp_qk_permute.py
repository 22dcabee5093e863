"""Print which GGUF architectures convert_hf_to_gguf.py writes with the Q/K rows permuted (side tool).

    /work/side/venv/bin/python tools/golden/llamacpp_qk_permute.py /path/to/llama.cpp

Imports the converter's own model registry (``ModelBase._model_classes``, conversion/base.py) and, for every
registered text-model class, walks its MRO the way ``modify_tensors`` runs: the first class whose
``modify_tensors`` calls a permute function of the converter (``LlamaModel.permute``, ``self.permute``,
``_reverse_hf_permute``) on the query/key projections decides (``self.undo_permute`` guards it: the class
attribute), a ``modify_tensors`` that calls no ``super().modify_tensors`` ends the walk unpermuted. The output
(``arch=yes|no|mixed`` plus the class and file:line of each decision) goes into posenc_cli/models/llamacpp.py.
"""

import collections
import inspect
import os
import re
import sys

root = sys.argv[1]
sys.path.insert(0, os.path.join(root, "gguf-py"))
sys.path.insert(0, root)
import gguf  # noqa: E402
from conversion import load_all_models  # noqa: E402
from conversion.base import ModelBase, ModelType  # noqa: E402

load_all_models()  # the registry fills as the modules are imported

CALL = re.compile(r"(LlamaModel\.permute|self\.permute|\w+Model\.permute|_reverse_hf_permute(_part)?)\(")
QK = re.compile(r"q_proj|k_proj|ATTN_Q|ATTN_K|wq|wk|\"q\"|\"k\"|\bq\b|\bk\b")


def decide(cls):
    for k in cls.__mro__:
        if "modify_tensors" not in k.__dict__:
            continue
        fn = k.__dict__["modify_tensors"]
        src = inspect.getsource(fn)
        line = inspect.getsourcelines(fn)[1]
        where = f"{os.path.relpath(inspect.getsourcefile(fn), root)}:{line}"
        if CALL.search(src) and QK.search(src):
            if "self.undo_permute" in src:
                return bool(getattr(cls, "undo_permute", False)), f"{k.__name__}.modify_tensors {where}, undo_permute"
            return True, f"{k.__name__}.modify_tensors {where}"
        if "super().modify_tensors" not in src and "super(" not in src:
            return False, f"{k.__name__}.modify_tensors {where} (no permute, no super)"
    return False, "ModelBase (no permute)"


by_arch = collections.defaultdict(dict)
for hf_name, cls in ModelBase._model_classes[ModelType.TEXT].items():
    arch = gguf.MODEL_ARCH_NAMES[cls.model_arch]
    by_arch[arch][cls.__name__] = decide(cls)
items = []
for arch in sorted(by_arch):
    got = {v[0] for v in by_arch[arch].values()}
    items.append(f"{arch}={'mixed' if len(got) > 1 else ('yes' if got == {True} else 'no')}")
lines, cur = [], ""
for it in items:
    if len(cur) + len(it) + 1 > 112:
        lines.append(cur.rstrip())
        cur = ""
    cur += it + " "
lines.append(cur.rstrip())
print('_QK_PERMUTE_TEXT = """')
print("\n".join(lines))
print('"""')
for arch in sorted(by_arch):
    for name, (p, where) in sorted(by_arch[arch].items()):
        if p or len({v[0] for v in by_arch[arch].values()}) > 1:
            print(f"# {arch}: {name} {'permutes' if p else 'does not permute'} ({where})")
