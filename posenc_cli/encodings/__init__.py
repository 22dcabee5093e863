"""The literal registry of encoding kinds.

Each entry maps a kind's name to the module and class that implement it; modules load on first use so
that ``posenc --help`` and shell completion never import NumPy. Adding a kind = one module + one line: the
class declares everything else about itself (parameters, tensors and their roles, presets, properties,
model-config reading, plot views), and every command reads those declarations.
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
    "mrope": ("rope.mrope", "MRope"),
    "rope-2d": ("rope.vision", "Rope2D"),
    "learned": ("learned", "Learned"),
    "index": ("naive", "Index"),
    "normalized": ("naive", "Normalized"),
    "binary": ("naive", "Binary"),
    "alibi": ("relative", "Alibi"),
    "t5": ("relative", "T5"),
    "relative": ("relative", "ShawRelative"),
    "deberta": ("deberta", "Deberta"),
}

#: The kind ``posenc generate`` builds when none is named: the first entry.
DEFAULT_KIND = next(iter(KINDS))


def kind_names() -> list[str]:
    return list(KINDS)


def resolve_kind(name: str) -> str:
    """The registered name ``name`` means: itself, or a case-insensitive match; else a :class:`ParameterError`
    naming the closest kinds ("did you mean") and every valid one."""
    from ..errors import ParameterError

    if name in KINDS:
        return name
    folded = [k for k in KINDS if k.lower() == name.strip().lower()]
    if len(folded) == 1:
        return folded[0]
    import difflib

    close = difflib.get_close_matches(name.strip().lower(), list(KINDS), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    raise ParameterError(f"unknown encoding {name!r}; {hint}choose from: {', '.join(sorted(KINDS))}")


def get_kind(name: str) -> type[Encoding]:
    """The class of kind ``name`` (see :func:`resolve_kind` for the names it accepts)."""
    module, cls = KINDS[resolve_kind(name)]
    kind_cls: type[Encoding] = getattr(importlib.import_module(f"{__name__}.{module}"), cls)
    return kind_cls


def kind_classes() -> dict[str, type[Encoding]]:
    """Every registered kind's class, in registry order (imports every kind module)."""
    return {name: get_kind(name) for name in KINDS}


def make_encoding(kind: str, params: dict[str, Any]) -> Encoding:
    """Build a validated encoding of ``kind`` from ``name -> value`` parameters (strings are parsed)."""
    return get_kind(kind).from_params(params)
