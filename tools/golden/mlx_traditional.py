"""Print the text tables of posenc_cli/models/mlx_weights.py's mlx_rope_rule from mlx-lm's own sources (side
environment).

    /work/side/mlx-venv/bin/python tools/golden/mlx_traditional.py

For each ``mlx_lm/models/MODULE.py``: ``config:D`` when its ModelArgs has a ``rope_traditional`` field (the rope
reads it; D its default), else the literal ``traditional=`` values its ropes are built with (``false``, ``true``,
or ``mixed`` when both occur), else nothing (the module builds no nn.RoPE with a literal flag). Then mlx-lm's
``MODEL_REMAPPING`` (mlx_lm/utils.py: a model_type run by another's module, e.g. mistral -> llama).
"""

import glob
import importlib.metadata
import os
import re
import textwrap

import mlx_lm
from mlx_lm.utils import MODEL_REMAPPING

out = {}
for path in sorted(glob.glob(os.path.join(os.path.dirname(mlx_lm.__file__), "models", "*.py"))):
    name = os.path.basename(path)[:-3]
    src = open(path).read()
    m = re.search(r"^\s+rope_traditional:\s*bool\s*=\s*(True|False)", src, re.M)
    if m:
        out[name] = f"config:{m.group(1).lower()}"
        continue
    lits = set(re.findall(r"traditional\s*=\s*(True|False)\b", src))
    if lits:
        out[name] = "mixed" if len(lits) > 1 else lits.pop().lower()
print(f"# printed by tools/golden/mlx_traditional.py from mlx-lm {importlib.metadata.version('mlx-lm')}")
pairs = " ".join(f"{k}={v}" for k, v in out.items())
print('_MLX_TRADITIONAL_TEXT = """')
print(textwrap.fill(pairs, 116))
print('"""')
print('_MLX_REMAPPING_TEXT = """')
print(textwrap.fill(" ".join(f"{k}={v}" for k, v in MODEL_REMAPPING.items()), 116))
print('"""')
