"""The model-config readers, chosen by the records: a config.json dict -> the kind and parameters of its tables.

Which reader reads a model type is its record's :attr:`~.records.Record.readers` (from its scheme): a module of
this package that exposes ``claims(config) -> bool``, ``from_model_config``, ``model_config_layers`` and
``describe_model_config``. The first of them that claims a config reads it (Falcon: the ALiBi reader when
``alibi`` is true, else the rotary one); a model type without a record goes to the rotary reader
(:mod:`.hf_config`), where it meets its inventory entry or its strict generic reading (an error naming each
unread key, unless the user opts in with ``read_as``). The kinds a user may name with ``--kind`` to pick a reader
are the records' kinds too (:func:`.records.reader_kinds`), so adding a family is one record, here as elsewhere.

Imports run one way: ``api``/``sources``/``cli`` -> this module -> the readers -> ``encodings``. The engines' rules,
the GGUF and ONNX checks and the audit read a config's rotary tables through :func:`rotary_config` too: this module
is the one door to the readers.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..errors import ParameterError, ref
from .records import POSITIONS_READER, RECORDS, ROTARY_READER, model_type_of, reader_kinds, reader_names

if TYPE_CHECKING:
    from .hf_config import ModelConfig


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{name}")


def config_kinds() -> list[str]:
    """The kinds a user may name (``--kind``) with a model config."""
    return [k for name in reader_names() for k in reader_kinds(name)]


def reader_for(config: dict[str, Any], kind: str | None = None) -> ModuleType:
    """The reader module of ``config``: the one ``kind`` names (refused unless some reader builds it), else the
    first of its record's readers that claims the config (the rotary reader without a record)."""
    if kind is not None:
        from ..encodings import resolve_kind

        kind = resolve_kind(kind)
        for name in reader_names():
            if kind in reader_kinds(name):
                return _module(name)
        raise ParameterError(
            f"{ref('config')} builds the tables a model's config describes, which kind {kind!r} cannot read; "
            f"drop {ref('kind')} or use one of: {', '.join(config_kinds())}"
        )
    mt = model_type_of(config, strict=False)[0]  # the reader refuses what cannot be read
    rec = RECORDS.get(mt) if isinstance(mt, str) else None
    for name in rec.readers if rec is not None else ():
        module = _module(name)
        if module.claims(config):
            return module
    return _module(ROTARY_READER)


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


def rotary_config(config: dict[str, Any], *, read_as: str | None = None) -> ModelConfig:
    """The rotary reading of a config (:class:`.hf_config.ModelConfig`): what the engines' rules, the GGUF check and
    the ONNX check compare with. A model type whose positions are not rotary is refused in its own terms (T5's
    buckets, Bloom's ALiBi: their readers read them; a model with learned positions or none)."""
    result: ModelConfig = _module(ROTARY_READER).read_model_config(config, read_as=read_as)
    return result


def learned_table(path: str, config: dict[str, Any], **options: Any) -> tuple[Any, dict[str, str]] | None:
    """The learned table a model keeps in its weights (``path``: its directory), read with its record's rules
    (:func:`.hf_positions.learned_table`: the table, its metadata), or None when its positions are not learned."""
    result: tuple[Any, dict[str, str]] | None = _module(POSITIONS_READER).learned_table(path, config, **options)
    return result


def learned_tensor(path: str, config: dict[str, Any], **options: Any) -> tuple[Any, dict[str, Any]] | None:
    """The whole learned table of a model directory and the role of each of its rows (offset rows, padding row,
    the rows added to tokens: :func:`.hf_positions.learned_tensor`), for readers that build on it."""
    result: tuple[Any, dict[str, Any]] | None = _module(POSITIONS_READER).learned_tensor(path, config, **options)
    return result


def rows_option(config: dict[str, Any], rows: Any, label: str) -> dict[str, str]:
    """``-p rows=buffer|added`` for the readers (:func:`.hf_positions.rows_option`): refused for a config whose
    tables have no buffer rows."""
    result: dict[str, str] = _module(POSITIONS_READER).rows_option(config, rows, label)
    return result


def class_table(config: dict[str, Any], params: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The parameters of the cache a model's rotary class itself holds where its attention changes it before q and
    k meet it, and what the attention does in words (:func:`.hf_config.class_table`); None otherwise."""
    result: tuple[dict[str, Any], str] | None = _module(ROTARY_READER).class_table(config, params)
    return result


def stored_copies(path: str, config: dict[str, Any], **options: Any) -> list[Any]:
    """Every fixed table a model keeps in its weights (``path``: its directory) against its formula
    (:func:`.stored_tables.stored_copies`: one :class:`~.stored_tables.StoredCopy` per copy), empty when its model
    type keeps none."""
    result: list[Any] = _module("stored_tables").stored_copies(path, config, **options)
    return result


def relative_bias(path: str, config: dict[str, Any], **options: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The per-head relative bias a T5-family model adds for an N x N window, its ``relative_attention_bias``
    gathered through the buckets (:func:`.stored_tables.relative_bias`): tensors and metadata."""
    result: tuple[dict[str, Any], dict[str, str]] = _module("stored_tables").relative_bias(path, config, **options)
    return result


def table_option(config: dict[str, Any], table: Any) -> str | None:
    """``-p table=buckets|bias`` (:func:`.stored_tables.table_option`): refused for a model without relative bias
    in its weights."""
    result: str | None = _module("stored_tables").table_option(config, table)
    return result


def weights_header(file: str) -> tuple[dict[str, Any], int]:
    """A safetensors file's header (tensor name -> entry) and the offset of its data (:func:`.hf_positions._header`:
    a damaged file is one line)."""
    result: tuple[dict[str, Any], int] = _module(POSITIONS_READER)._header(file)
    return result


def weight_files(path: str, suffix: str | None = None) -> list[str] | None:
    """The safetensors files of a model directory (:func:`.hf_positions.weight_files`; with ``suffix``, only the
    shards that hold a tensor named ``*suffix``), None without weights."""
    result: list[str] | None = _module(POSITIONS_READER).weight_files(path, suffix)
    return result


def find_tensors(files: list[str], suffix: str) -> list[tuple[str, str]]:
    """``(file, saved name)`` of every tensor named ``*suffix`` in ``files`` (:func:`.hf_positions.find_tensors`)."""
    result: list[tuple[str, str]] = _module(POSITIONS_READER).find_tensors(files, suffix)
    return result


def weights_tensor(file: str, name: str) -> Any:
    """One tensor of a safetensors file, memory-mapped (:func:`.hf_positions._read_tensor`: a damaged or truncated
    entry is one line)."""
    return _module(POSITIONS_READER)._read_tensor(file, name)
