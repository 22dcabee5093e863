"""The structure readers that propose a kind's parameters from a table, for :func:`posenc_cli.inspect.identification.identify`.

A kind declares which reader serves it as data (``IDENTIFY = "module:function"`` on its class, see
:class:`posenc_cli.encodings.base.Encoding`); this package holds the readers, so that ``encodings/`` never
imports the inspection code (analysis, identification). A reader is called as ``reader(tensors, analysis, kind_cls)``: the kind class
says its name (``KIND``) and what else the reader needs (``NDIM`` of a grid), so no reader names a kind. Nor
does a reader spell a layout: it reads the names off the kind's own ``layout`` parameter (:func:`layouts`), in the
order the kind declares them, so a renamed layout is proposed under its new name and an added or removed one stops
the reader with an error instead of drifting (``tests/test_layout_names.py`` identifies every declared layout).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def choices(kind_cls: Any, name: str) -> tuple[str, ...]:
    """The choices kind class ``kind_cls`` declares for its parameter ``name`` (the field's ``choices``)."""
    for f in kind_cls.param_fields():
        if f.name == name and f.metadata.get("choices"):
            return tuple(f.metadata["choices"])
    raise TypeError(f"{kind_cls.KIND} declares no choices for its parameter {name!r}")


def declared(kind_cls: Any, name: str, count: int) -> tuple[str, ...]:
    """The ``count`` choices kind class ``kind_cls`` declares for parameter ``name``, in its order; a TypeError
    when it declares another number of them (the reader knows ``count`` structures)."""
    got = choices(kind_cls, name)
    if len(got) != count:
        raise TypeError(f"{kind_cls.KIND} declares {name} {got}; its identification reader knows {count}")
    return got


def layouts(kind_cls: Any, count: int) -> tuple[str, ...]:
    """The ``count`` layout names kind class ``kind_cls`` declares: :func:`declared` of ``layout``."""
    return declared(kind_cls, "layout", count)


def reader(kind_cls: Any) -> Callable[[dict[str, Any], Any], list[Any]] | None:
    """The hint function of a kind class (its ``IDENTIFY`` resolved in this package), or None."""
    spec = getattr(kind_cls, "IDENTIFY", None)
    if not spec:
        return None
    module, _, name = spec.partition(":")
    fn = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return lambda tensors, ana: fn(tensors, ana, kind_cls)
