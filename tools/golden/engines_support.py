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
