"""The literal registry of encoding kinds.

Each entry maps a kind's name to the module and class that implement it; modules load on first use so
that ``posenc --help`` and shell completion never import NumPy. Adding a kind = one module + one line.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Encoding

#: kind name -> (module under posenc_cli.encodings, class name). Keep sorted by family.
KINDS: dict[str, tuple[str, str]] = {
    "sinusoidal": ("sinusoidal", "Sinusoidal"),
    "sinusoidal-2d": ("grid", "Sinusoidal2D"),
    "sinusoidal-3d": ("grid", "Sinusoidal3D"),
    "rope": ("rope.core", "Rope"),
    "xpos": ("rope.xpos", "XPos"),
    "learned": ("learned", "Learned"),
    "index": ("naive", "Index"),
    "normalized": ("naive", "Normalized"),
    "binary": ("naive", "Binary"),
    "alibi": ("relative", "Alibi"),
    "t5": ("relative", "T5"),
    "relative": ("relative", "ShawRelative"),
}


def kind_names() -> list[str]:
    return list(KINDS)


def get_kind(name: str) -> type[Encoding]:
    """The class of kind ``name``; a :class:`ParameterError` naming the valid kinds otherwise."""
    from ..errors import ParameterError

    if name not in KINDS:
        raise ParameterError(f"unknown encoding {name!r}; choose from: {', '.join(sorted(KINDS))}")
    module, cls = KINDS[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def make_encoding(kind: str, params: dict[str, Any]) -> Encoding:
    """Build a validated encoding of ``kind`` from ``name -> value`` parameters (strings are parsed)."""
    return get_kind(kind).from_params(params)
