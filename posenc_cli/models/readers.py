"""The model-config readers as a literal registry: a config.json dict -> the kind and parameters of its tables.

Each entry of :data:`READERS` names a module of this package that exposes ``claims(config) -> bool``,
``from_model_config``, ``model_config_layers`` and ``describe_model_config``, and the kinds a user may name with
``--kind`` to pick it. The first reader that claims a config reads it; the last entry (the RoPE family table,
:mod:`.hf_config`) claims every config, so an unknown model type meets its strict generic reading (an error
naming each unread key, unless the user opts in with ``read_as``).

Imports run one way: ``api``/``sources``/``cli`` -> this module -> the readers -> ``encodings``.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from ..errors import ParameterError, ref

#: reader module (in this package) -> the kinds ``--kind`` may name to choose it. Order matters: first claim wins.
READERS: dict[str, tuple[str, ...]] = {
    "hf_config": ("rope",),
}


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{name}")


def config_kinds() -> list[str]:
    """The kinds a user may name (``--kind``) with a model config."""
    return [k for kinds in READERS.values() for k in kinds]


def reader_for(config: dict[str, Any], kind: str | None = None) -> ModuleType:
    """The reader module of ``config``: the one ``kind`` names (refused unless some reader builds it), else the
    first that claims the config."""
    if kind is not None:
        from ..encodings import resolve_kind

        kind = resolve_kind(kind)
        for name, kinds in READERS.items():
            if kind in kinds:
                return _module(name)
        raise ParameterError(
            f"{ref('config')} builds the tables a model's config describes, which kind {kind!r} cannot read; "
            f"drop {ref('kind')} or use one of: {', '.join(config_kinds())}"
        )
    for name in READERS:
        module = _module(name)
        if module.claims(config):
            return module
    raise AssertionError("the last reader claims every config")  # pragma: no cover


def from_model_config(
    config: dict[str, Any], *, kind: str | None = None, **options: Any
) -> tuple[str, dict[str, Any], list[str], dict[str, str]]:
    """``(kind, parameters, warnings, notes)`` that reproduce a model's tables from its config.json dict;
    ``notes`` is metadata the output records (what the reading assumed, e.g. ``hf_read_as``)."""
    result: tuple[str, dict[str, Any], list[str], dict[str, str]] = reader_for(config, kind).from_model_config(
        config, **options
    )
    return result


def model_config_layers(
    config: dict[str, Any], *, kind: str | None = None, **options: Any
) -> dict[str, tuple[str, dict[str, Any]] | None]:
    """Every attention type of a model's config -> ``(kind, parameters)``, None where it applies no encoding."""
    result: dict[str, tuple[str, dict[str, Any]] | None] = reader_for(config, kind).model_config_layers(
        config, **options
    )
    return result


def model_config_notes(config: dict[str, Any], *, kind: str | None = None, **options: Any) -> dict[str, str]:
    """The metadata a table built from ``config`` records about its reading (``hf_read_as`` under ``read_as``)."""
    result: dict[str, str] = reader_for(config, kind).model_config_notes(config, **options)
    return result


def describe_model_config(config: dict[str, Any], *, kind: str | None = None, **options: Any) -> dict[str, Any]:
    """What a model's config says about its position encoding, each value with where it came from."""
    result: dict[str, Any] = reader_for(config, kind).describe_model_config(config, **options)
    return result
