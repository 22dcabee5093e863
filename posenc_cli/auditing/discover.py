"""What a SOURCE holds: the model's config.json (HF's reference), and the conversions beside it (GGUF files,
ONNX exports), found by their bytes and suffixes without reading their tensors."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..errors import InputError

#: how deep ``audit DIR`` looks for conversions (DIR/onnx/model.onnx, DIR/gguf/q4/model.gguf)
MAX_DEPTH = 3
#: directories that hold no conversion of the model (caches, version control, virtual environments)
_SKIP_DIRS = {".git", ".cache", "__pycache__", ".venv", "node_modules", ".huggingface"}


@dataclass
class Found:
    """A model as ``audit`` sees it: where its config is, and the files to check against it."""

    label: str
    root: str | None
    config: str | None = None
    ggufs: list[str] = field(default_factory=list)
    onnxs: list[str] = field(default_factory=list)
    #: directories mlx-lm's ``convert`` wrote (their q/k weights are checked against HF's)
    mlxs: list[str] = field(default_factory=list)
    #: True when the learned tables of the config's directory are read (a directory, or a config.json file)
    weights: bool = False
    #: (the Hub id, whether --download may fetch its position tensors) for a model read from the Hub cache
    hub: tuple[str, bool] | None = None

    def relative(self, path: str) -> str:
        """``path`` as the report names it: relative to the audited directory."""
        if self.root is None:
            return path
        rel = os.path.relpath(path, self.root)
        return path if rel.startswith("..") else rel

    def merge(self, other: Found) -> None:
        """Add ``other``'s conversions (``--against``): a config only where this one has none."""
        own_mlx = self.config is not None and os.path.dirname(self.config) in self.mlxs
        if self.config is None or (own_mlx and other.config is not None and not other.mlxs):
            # the reference is the other model's, with its weights and Hub origin (an MLX directory's config is a
            # copy of HF's: the HF model given with --against is the reference)
            self.config, self.weights, self.hub = other.config, other.weights, other.hub
        self.mlxs += [p for p in other.mlxs if p not in self.mlxs]
        self.ggufs += [p for p in other.ggufs if p not in self.ggufs]
        self.onnxs += [p for p in other.onnxs if p not in self.onnxs]


def is_gguf_file(path: str) -> bool:
    if path.lower().endswith(".gguf"):
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"GGUF"
    except OSError:
        return False


def find(path: str, label: str | None = None) -> Found:
    """The model at ``path``: a directory (config.json and every GGUF and ONNX file down to :data:`MAX_DEPTH`
    levels), a config.json, a GGUF file or an ONNX file (its config: a config.json beside it)."""
    label = label or path
    if os.path.isdir(path):
        found = Found(label, path, weights=True)
        config = os.path.join(path, "config.json")
        if os.path.isfile(config):
            found.config = config
        from ..models.mlx_weights import is_mlx_dir

        if is_mlx_dir(path):
            found.mlxs.append(path)
        for file in _walk(path):
            low = file.lower()
            if low.endswith(".onnx"):
                found.onnxs.append(file)
            elif low.endswith(".gguf"):
                found.ggufs.append(file)
        return found
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file or directory")
    root = os.path.dirname(path) or "."
    beside = os.path.join(root, "config.json")
    low = path.lower()
    if low.endswith(".onnx"):
        return Found(label, root, beside if os.path.isfile(beside) else None, onnxs=[path])
    if is_gguf_file(path):
        return Found(label, root, beside if os.path.isfile(beside) else None, ggufs=[path])
    if low.endswith(".json"):
        return Found(label, root, path, weights=True)
    raise InputError(
        f"{path}: not something audit reads; give a model directory, a config.json, a GGUF or ONNX file, or a Hub "
        "id org/name"
    )


def _walk(root: str) -> list[str]:
    out: list[str] = []
    base = root.rstrip(os.sep).count(os.sep)
    for here, dirs, files in os.walk(root):
        depth = here.rstrip(os.sep).count(os.sep) - base
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".") and depth < MAX_DEPTH)
        out += [os.path.join(here, f) for f in sorted(files) if f.lower().endswith((".gguf", ".onnx"))]
    return out
