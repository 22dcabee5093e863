"""Print the model types mlx-lm serves, as posenc_cli/models/engines.py's MLX_MODEL_TYPES (side tool).

    /work/side/engines/venv/bin/python tools/golden/engines_support.py

mlx-lm loads a model by importing ``mlx_lm.models.<model_type>`` after ``MODEL_REMAPPING``
(mlx_lm/utils.py ``_get_classes``); a model type with neither is refused ("Model type X not supported."). The
list is every module of mlx_lm/models that defines ``Model`` and ``ModelArgs``, plus the remapped names.
"""

import importlib
import pkgutil

import mlx_lm
import mlx_lm.models
from mlx_lm.utils import MODEL_REMAPPING

names = set()
for info in pkgutil.iter_modules(mlx_lm.models.__path__):
    try:
        mod = importlib.import_module(f"mlx_lm.models.{info.name}")
    except (Exception, SystemExit):  # a module needing an optional dependency still serves its model type
        names.add(info.name)
        continue
    if hasattr(mod, "Model") and hasattr(mod, "ModelArgs"):
        names.add(info.name)
names |= set(MODEL_REMAPPING)
print(f"# mlx-lm {mlx_lm.__version__}: {len(names)} model types")
print(f"MLX_MODEL_TYPES = frozenset({sorted(names)!r})  # fmt: skip")


def vllm_and_sglang(src: str) -> None:
    """vLLM's and SGLang's native architectures, from their unpacked wheels in SRC (the Transformers backend, HF's
    own modeling code, serves every other architecture)."""
    import ast
    import pathlib
    import re

    root = pathlib.Path(src)
    tree = ast.parse((root / "vllm/model_executor/models/registry.py").read_text())
    native = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            name = node.targets[0].id if isinstance(node.targets[0], ast.Name) else ""
            if not name.endswith("_MODELS") or name == "_TRANSFORMERS_SUPPORTED_MODELS":
                continue
            for k, v in zip(node.value.keys, node.value.values):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Tuple) and v.elts[0].value != "transformers":
                    native.add(k.value)
    print(f"VLLM_NATIVE_ARCHITECTURES = frozenset({sorted(native)!r})  # fmt: skip")
    sgl = set()
    for path in sorted((root / "sglang/srt/models").glob("*.py")):
        m = re.search(r"^EntryClass\s*=\s*(\[[^\]]*\]|\w+)", path.read_text(), re.M)
        if m:
            sgl.update(re.findall(r"\w+", m.group(1)))
    sgl.discard("TransformersForCausalLM")
    print(f"SGLANG_NATIVE_ARCHITECTURES = frozenset({sorted(sgl)!r})  # fmt: skip")


if len(__import__("sys").argv) > 1:
    vllm_and_sglang(__import__("sys").argv[1])
