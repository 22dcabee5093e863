"""The structure readers that propose a kind's parameters from a table, for :func:`posenc_cli.identification.identify`.

A kind declares which reader serves it as data (``IDENTIFY = "module:function"`` on its class, see
:class:`posenc_cli.encodings.base.Encoding`); this package holds the readers, so that ``encodings/`` never
imports the inspection code (analysis, identification). A reader is called as ``reader(tensors, analysis, kind_cls)``: the kind class
says its name (``KIND``) and what else the reader needs (``NDIM`` of a grid), so no reader names a kind.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def reader(kind_cls: Any) -> Callable[[dict[str, Any], Any], list[Any]] | None:
    """The hint function of a kind class (its ``IDENTIFY`` resolved in this package), or None."""
    spec = getattr(kind_cls, "IDENTIFY", None)
    if not spec:
        return None
    module, _, name = spec.partition(":")
    fn = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return lambda tensors, ana: fn(tensors, ana, kind_cls)
