"""The positions of HF transformers models that do not rotate: T5 buckets, ALiBi, sinusoids, DeBERTa, learned.

The families' tables are records (:mod:`.records`, one record per ``model_type``; :data:`FAMILIES` here is their
non-rotary layer tables), each citing the transformers modeling file and class it mirrors (transformers 5.x, read
in ``src/transformers/models/<m>/modeling_<m>.py``). An entry is data:
the posenc kind each attention type (``encoder``/``decoder`` where the two differ) uses, the config keys (first
found wins) and class defaults each of its parameters comes from, the parameters the model's code fixes, and
for learned tables the tensor name inside the weights and the first row the model reads.

:func:`read_positions` returns ``None`` for a ``model_type`` not in the table (the RoPE reader takes it), else a
:class:`PositionsConfig` with the RoPE reader's interface (``params``, ``all_params``, ``report``): each value
reported with the key or default it came from. Learned tables live in the weights: :func:`learned_table` reads
them from a model directory (``model.safetensors``, or shards named by ``model.safetensors.index.json``), row
``first_row`` onwards (OPT: 2, RoBERTa: ``pad_token_id + 1``); from a config alone ``params`` is a one-line error
saying where the table lives.

What each model's code does that its config does not say:

* T5 / mT5 / UMT5 (``T5Attention._relative_position_bucket``): ``bidirectional = not is_decoder``, so the
  encoder's buckets are two-sided and the decoder's causal; no maximum length (``--len`` is needed).
* Bloom (``build_alibi_tensor``): float32 slopes ``pow(2^(-8/c), k)`` times the key position, heads x 1 x len;
  Falcon with ``alibi: true``: the same slopes rounded to bfloat16, the product in bfloat16, and FalconModel
  divides it by ``sqrt(hidden_size // num_attention_heads)`` and passes it as the attention mask (the SDPA
  path, the default; transformers 5.24's eager path adds the unscaled bias to the scores as well, a second time,
  which posenc does not reproduce); MPT (``build_mpt_alibi_tensor``):
  MptModel passes ``max_seq_len`` but *not* ``attn_config.alibi_bias_max`` (always 8), and never reads
  ``attn_config.alibi`` (always ALiBi) or ``learned_pos_emb``: each is reported as ignored when it says otherwise.
* Marian / Pegasus (``*SinusoidalPositionalEmbedding.create_weight``): [sin | cos] halves, frequencies
  ``10000^(-2k/d)``, float64 NumPy rounded to float32; M2M100 / NLLB and Speech2Text
  (``*SinusoidalPositionalEmbedding.get_embedding``): [sin | cos] with t2t frequencies, ``max_positions + 2`` rows
  (``offset = 2``), the ``pad_token_id`` row zero, positions counted from ``pad_token_id + 1``; Whisper's encoder
  (``sinusoids``): [sin | cos] t2t frequencies over ``max_source_positions`` rows.
* DeBERTa-v2/v3 (``build_relative_position``, ``make_log_bucket_position``): ``max_relative_positions < 1`` means
  ``max_position_embeddings``; ``position_buckets <= 0`` means no buckets.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import ParameterError, param, ref
from .records import (
    POSITIONS_READER,
    Family,
    Layer,
    model_type_of,
    positions_families,
    positions_family,
    reader_kinds,
    unread_line,
)

#: Largest size accepted from a config (heads, positions, buckets, ...).
MAX_SIZE = 2**31 - 1


# The layer tables of the non-rotary families are records (:mod:`.records`: one record per model_type); this
# module reads them from there (:func:`.records.positions_family`). FAMILIES is a read-only view of them, for
# the tools that list the families: it holds nothing the records do not.
FAMILIES: Mapping[str, Family] = MappingProxyType(positions_families())

#: BERT-style keys that name another position scheme than the learned absolute table (refused, not guessed).
_ABSOLUTE = ("absolute",)
#: position_embedding_type values of rotary models (the RoPE reader's, not ours)
_ROTARY = ("rotary", "rope")


# ----- values ----------------------------------------------------------------------------------------------
def _show(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _int(value: Any, key: str, *, low: int = 1) -> int:
    """An integer from config key ``key`` (>= ``low``); a one-line error naming it otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(f"config key {key}={_show(value)} is not an integer; fix config.json")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ParameterError(f"config key {key}={_show(value)} is not an integer; fix config.json")
    value = int(value)
    if value < low or value > MAX_SIZE:
        raise ParameterError(f"config key {key}={value} is out of range; it must be >= {low} and <= {MAX_SIZE}")
    return value


@dataclass(frozen=True)
class _Value:
    value: Any
    origin: str


# ----- the reading -------------------------------------------------------------------------------------------
@dataclass
class PositionsConfig:
    """What a config.json says about a model's (non-rotary) positions, read with its family's rules; the same
    interface as the RoPE reader's ``ModelConfig``."""

    model_type: str
    family: Family
    config: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    #: config keys the family's code never reads -> why they are ignored
    ignored: dict[str, str] = field(default_factory=dict)
    #: ``added`` (default): the rows the model adds to tokens 0..N-1; ``buffer``: the module's raw buffer
    rows: str = "added"

    def rows_note(self, layer_type: str | None) -> dict[str, str]:
        """Metadata saying which rows a table holds, for families whose buffer and added rows differ."""
        layer = self.family.layers[self._layer(layer_type)]
        if layer.first_row == 0 and not layer.buffer_rows:
            return {}
        if self.rows == "buffer":
            return {"position_rows": "buffer: the module's whole buffer (row i is position value i)"}
        first = self._first_row(layer).value
        return {"position_rows": f"added: the rows the model adds to tokens 0..N-1 (buffer rows {first}..)"}

    @property
    def layer_types(self) -> tuple[str, ...]:
        return tuple(self.family.layers)

    def kind_of(self, layer_type: str | None) -> str:
        return self.family.layers[self._layer(layer_type)].kind

    # ----- public ----------------------------------------------------------------------------------------
    def params(self, layer_type: str | None = None, length: int | None = None) -> dict[str, Any]:
        """The parameters of :meth:`kind_of` ``layer_type``; a learned layer is an error saying where its table
        lives (read it with :func:`learned_table`)."""
        lt = self._layer(layer_type)
        layer = self.family.layers[lt]
        if layer.learned:
            raise ParameterError(self._weights_hint(layer))
        values = self._values(lt, length)
        if "length" not in values:
            raise ParameterError(
                f"{self.model_type} configs set no sequence length ({layer.kind} positions apply at any length); "
                f"pass {ref('length')} N"
            )
        return {k: v.value for k, v in values.items() if not k.startswith("_")}

    def all_params(self, length: int | None = None) -> dict[str, tuple[str, dict[str, Any]]]:
        """``(kind, params)`` of every attention type; a learned type's params name the tensor in the weights
        (no kind builds from them: its table is read by :func:`learned_table`)."""
        out: dict[str, tuple[str, dict[str, Any]]] = {}
        for lt, layer in self.family.layers.items():
            values = self._values(lt, length)
            if layer.learned:
                out[lt] = (layer.kind, {"weights_tensor": layer.tensor, **{k: v.value for k, v in values.items()}})
            else:
                out[lt] = (layer.kind, {k: v.value for k, v in values.items() if not k.startswith("_")})
        return out

    def report(self, layer_type: str | None = None) -> dict[str, Any]:
        """Family, kind and every parameter of ``layer_type``, each ``{"value": v, "from": origin}``."""
        lt = self._layer(layer_type)
        layer = self.family.layers[lt]
        out: dict[str, Any] = {
            "model_type": self.model_type, "family": self.family.name, "kind": layer.kind,
            "reference": self.family.reference,
            "layer_type": lt if len(self.family.layers) > 1 else None, "layer_types": list(self.family.layers),
        }  # fmt: skip
        for key, val in self._values(lt, None).items():
            out[key.lstrip("_")] = {"value": val.value, "from": val.origin}
        if layer.learned:
            out["weights_tensor"] = {"value": layer.tensor, "from": f"{self.family.name}'s module in transformers"}
            out["first_row"] = {"value": self._first_row(layer).value, "from": self._first_row(layer).origin}
        out["ignored"] = dict(self.ignored)
        out["warnings"] = list(self.warnings)
        return out

    # ----- internals -------------------------------------------------------------------------------------
    def _layer(self, layer_type: str | None) -> str:
        types = list(self.family.layers)
        if layer_type is None:
            if len(types) == 1:
                return types[0]
            raise ParameterError(
                f"{self.model_type} places positions differently per attention type; pass {ref('layer_type')}, "
                f"one of: {', '.join(types)}"
            )
        if layer_type not in self.family.layers:
            raise ParameterError(
                f"unknown layer_type {layer_type!r} for {self.model_type}; choose from: {', '.join(types)}"
            )
        return layer_type

    def _get(self, key: str) -> Any:
        """A config value by dotted key (``attn_config.alibi``); None when absent."""
        node: Any = self.config
        for part in key.split("."):
            if not isinstance(node, Mapping):
                return None
            node = node.get(part)
        return node

    def _values(self, lt: str, length: int | None) -> dict[str, _Value]:
        layer, fam = self.family.layers[lt], self.family
        out: dict[str, _Value] = {}
        for name, keys in layer.keys.items():
            for key in keys:
                if self._get(key) is not None:
                    out[name] = _Value(self._get(key), f"config key {key}")
                    break
            else:
                if name in layer.defaults:
                    out[name] = _Value(layer.defaults[name], f"default of {fam.name}")
        for name, value in layer.fixed.items():
            out[name] = _Value(value, f"fixed by transformers' {fam.name} code")
        return self._compute(layer, out, length)

    def _compute(self, layer: Layer, out: dict[str, _Value], length: int | None) -> dict[str, _Value]:
        """Type checks and what the model's code derives from the raw values."""
        for name in ("dim", "length", "num_buckets", "max_distance", "=divide_by", "_heads"):
            if name in out:
                v = out[name]
                out[name] = _Value(_int(v.value, v.origin.removeprefix("config key ")), v.origin)
        if "padding_idx" in out:
            v = out["padding_idx"]
            out["padding_idx"] = _Value(_int(v.value, v.origin.removeprefix("config key "), low=0), v.origin)
        if "divide_by_sqrt_head_dim" in layer.rules:  # Falcon: alibi / sqrt(hidden_size // heads)
            hidden = out.pop("=divide_by")
            heads = out["dim"].value
            if hidden.value % heads:
                raise ParameterError(
                    f"{hidden.origin.removeprefix('config key ')}={hidden.value} is not a multiple of the "
                    f"{heads} heads; fix config.json"
                )
            out["divide_by"] = _Value(math.sqrt(hidden.value // heads), f"sqrt(head_dim), {hidden.origin} / heads")
        if "deberta_relative" in layer.rules:
            self._deberta(out)
        if "patch_grid" in layer.rules:  # vit_mae: a square grid of int(num_patches ** 0.5) patches, a class row
            self._patch_grid(out)
        if "padding_row_outside" in layer.rules and self.rows != "buffer":  # XGLM: rows 2.., the padding row zero
            pad, first, n = out["padding_idx"], self._first_row(layer).value, out["length"].value
            if first <= pad.value < first + n:
                raise ParameterError(
                    f"{pad.origin.removeprefix('config key ')}={pad.value} puts the zeroed padding row among the rows "
                    f"{first}..{first + n - 1} {self.family.name} adds to tokens, which the sinusoids posenc writes do "
                    "not zero; posenc refuses (fix config.json, or pass -p rows=buffer for the module's buffer)"
                )
        if "extra_rows" in layer.rules:  # fairseq sinusoids: a buffer with offset rows and a zero padding row
            if self.rows == "buffer":  # the module's whole buffer: offset rows first, the padding_idx row zero
                n = out["length"]
                out["length"] = _Value(n.value + layer.buffer_rows, f"{n.origin} + {layer.buffer_rows} (the module's "
                                       "buffer: offset rows, padding_idx row zero)")  # fmt: skip
                out["offset"] = _Value(0, "rows=buffer (row i is position value i)")
                if out["padding_idx"].value >= out["length"].value:
                    raise ParameterError(
                        f"config key pad_token_id={out['padding_idx'].value} is outside the {out['length'].value} "
                        "position rows; fix config.json"
                    )
            else:  # the rows added to tokens 0..N-1: position values first_row.. (the padding row is never added)
                out.pop("padding_idx")
                out["offset"] = self._first_row(layer)
        if "even_dim" in layer.rules and out["dim"].value % 2:
            where = out["dim"].origin.removeprefix("config key ")
            raise ParameterError(f"{where}={out['dim'].value} is odd; {self.family.name}'s sinusoids need it even")
        if length is not None:
            out["length"] = _Value(_int(length, "length"), "--len")
        return out

    def _deberta(self, out: dict[str, _Value]) -> None:
        ra = self._get("relative_attention")
        if ra is not True:
            raise ParameterError(
                f"config key relative_attention={_show(ra)}: this DeBERTa has no relative positions, only learned "
                "ones (embeddings.position_embeddings.weight in the weights); set it true or read the weights"
            )
        pb = out["position_buckets"]
        pbv = pb.value
        if isinstance(pbv, bool) or not isinstance(pbv, int):
            raise ParameterError(f"config key position_buckets={_show(pbv)} is not an integer; fix config.json")
        out["position_buckets"] = _Value(max(pbv, 0), pb.origin + (" (<= 0: no buckets)" if pbv <= 0 else ""))
        mr = out["max_relative_positions"]
        if isinstance(mr.value, bool) or not isinstance(mr.value, int):
            raise ParameterError(f"config key max_relative_positions={_show(mr.value)} is not an integer")
        if mr.value < 1:
            mp = self._get("max_position_embeddings")
            mpv = _int(mp, "max_position_embeddings") if mp is not None else 512
            where = "config key max_position_embeddings" if mp is not None else "default of deberta-v2"
            out["max_relative_positions"] = _Value(mpv, f"{where} ({mr.origin} < 1)")
        if self._get("position_biased_input") is not False:
            self._warn(
                "position_biased_input is true (or absent: its default): the model also adds learned absolute "
                "positions (embeddings.position_embeddings.weight); this table is the relative positions"
            )

    def _patch_grid(self, out: dict[str, _Value]) -> None:
        """ViTMAE's grid: ``num_patches = (H // ph) * (W // pw)`` (ViTMAEPatchEmbeddings) and a square grid of side
        ``int(num_patches ** 0.5)`` (``initialize_weights``), which fills the table only when it is a square."""
        size, patch = out.pop("=image_size"), out.pop("=patch_size")

        def pair(v: _Value) -> tuple[int, int]:
            key = v.origin.removeprefix("config key ")
            raw = v.value if isinstance(v.value, (list, tuple)) else [v.value, v.value]
            if len(raw) != 2:
                raise ParameterError(f"config key {key}={_show(v.value)} is not one size or two; fix config.json")
            return _int(raw[0], key), _int(raw[1], key)

        (h, w), (ph, pw) = pair(size), pair(patch)
        cells = (h // ph) * (w // pw)
        side = math.isqrt(cells)
        if cells < 1 or side * side != cells:
            raise ParameterError(
                f"image_size {_show(size.value)} / patch_size {_show(patch.value)} makes {cells} patches, not a square "
                f"grid: {self.family.name}'s initialize_weights builds int(sqrt({cells}))**2 + 1 rows for a table of "
                f"{cells + 1}, which transformers cannot fill"
            )
        why = f"{size.origin} / {patch.origin}: {cells} patches, a {side}x{side} grid"
        out["grid"] = _Value(f"{side}x{side}", why)
        out["length"] = _Value(cells + 1, f"{why}, plus the class row")

    def _warn(self, text: str) -> None:
        if text not in self.warnings:  # values are read once per call: say each thing once
            self.warnings.append(text)

    def _first_row(self, layer: Layer) -> _Value:
        """The buffer row the model adds to token 0 (0 with ``rows="buffer"``: the whole buffer is read)."""
        if self.rows == "buffer":
            return _Value(0, "rows=buffer (the module's whole buffer)")
        if isinstance(layer.first_row, str):
            return self._key_row(layer.first_row, layer, "positions start after padding_idx")
        return _Value(layer.first_row, f"{self.family.name}'s module in transformers")

    def _key_row(self, rule: str, layer: Layer, why: str) -> _Value:
        """A row given as a config key plus a number (``pad_token_id+1``; ``pad+1`` is the fairseq sinusoids'
        name of the same rule); the key's class default when config.json omits it."""
        key, add = ("pad_token_id", 1) if rule == "pad+1" else (rule.rsplit("+", 1)[0], int(rule.rsplit("+", 1)[1]))
        value = self._get(key)
        default = layer.first_row_default if layer.first_row_default is not None else 1
        p = _int(value, key, low=0) if value is not None else default
        where = f"config key {key}" if value is not None else f"default of {self.family.name}"
        return _Value(p + add, f"{where} + {add} ({why})" if add else where)

    def _weights_hint(self, layer: Layer) -> str:
        return (
            f"{self.model_type}'s position table is learned: it lives in the weights ({layer.tensor} in "
            "model.safetensors), not in config.json; pass the model directory (config.json + model.safetensors) "
            "as the source"
        )


#: values of the ``rows`` option (``-p rows=buffer``)
ROWS = ("added", "buffer")


def rows_option(config: Mapping[str, Any], rows: Any, label: str) -> dict[str, str]:
    """``{"rows": value}`` for the readers when the user gave ``-p rows=...``; refused for a config these
    families do not read (its RoPE tables have no buffer rows)."""
    if rows is None:
        return {}
    if not claims(config):
        raise ParameterError(
            f"{param('params')} rows={rows} applies to learned and sinusoidal tables read from a model (OPT, BART, "
            f"M2M100, ...); {label} is read as RoPE: drop it"
        )
    return {"rows": str(rows)}


def read_positions(config: Mapping[str, Any], rows: str | None = None) -> PositionsConfig | None:
    """The positions reader of ``config``'s ``model_type``, or None when the RoPE reader takes it. ``rows``:
    ``added`` (default) reads the rows the model adds to tokens 0..N-1, ``buffer`` the module's raw buffer."""
    if rows is not None and rows not in ROWS:
        raise ParameterError(f"unknown rows={rows!r}; choose from: {', '.join(ROWS)}")
    mt = model_type_of(config, strict=False)[0]
    fam = positions_family(mt)
    if not isinstance(mt, str) or fam is None:
        pet = config.get("position_embedding_type")
        if isinstance(mt, str) and pet is not None and pet not in _ROTARY:
            raise ParameterError(
                f"config key position_embedding_type={_show(pet)}: posenc has no reader for {mt!r}; its positions "
                "are not RoPE, so no table is guessed"
            )
        return None
    pet, seen = config.get("position_embedding_type"), fam.observed_at.get("position_embedding_type")
    if pet in _ROTARY and seen is not None and pet != seen:
        return None  # its code reads the key (the table was observed at another value): the rotary reading (ESM)
    if fam.when is not None:
        key, want = fam.when
        value = config.get(key)
        if value is not None and not isinstance(value, bool):
            raise ParameterError(f"config key {key}={_show(value)} is not true or false; fix config.json")
        if value is not want:
            return None
    reader = PositionsConfig(mt, fam, dict(config), rows=rows or "added")
    for key, read in fam.unread.items():
        if config.get(key) is not None and config.get(read) is None:
            raise ParameterError(
                f"config key {key}={_show(config[key])} is not read by transformers' {fam.name} (it reads {read}); "
                f"rename it to {read} in config.json"
            )
    reader.ignored = _ignored_keys(config, fam)
    unread = unread_line(mt, fam)  # a table of another component this reading leaves (each named, with why)
    if unread is not None:
        reader.warnings.append(unread)
    for key, same in fam.ignored.items():
        value = reader._get(key)
        if value is not None and value != same:
            reader.warnings.append(
                f"{key}={_show(value)} is ignored: transformers' {fam.name} code does not read it "
                f"(it behaves as {_show(same)})"
            )
    # seen: the value the inventory observed the table at
    if pet is not None and pet not in _ABSOLUTE and (seen is None or pet != seen):
        raise ParameterError(
            f"config key position_embedding_type={_show(pet)}: transformers 5's {mt} no longer reads it and applies "
            "the absolute table only, so this model's relative positions cannot be reproduced; posenc refuses"
        )
    return reader


def _ignored_keys(config: Mapping[str, Any], fam: Family) -> dict[str, str]:
    """Keys (top level, or one level down as ``parent.key``) the family's code never reads -> why they are
    ignored: the family's table lists every key its positional code reads (from transformers' source), so any
    other key cannot change the table, whatever its name (BLOOM's ``offset_alibi``)."""
    known = {k for layer in fam.layers.values() for keys in layer.keys.values() for k in keys}
    for layer in fam.layers.values():  # the key a first row or padding row follows (pad_token_id + 1)
        for rule in (layer.first_row, layer.padding_row):
            if isinstance(rule, str):
                known.add("pad_token_id" if rule == "pad+1" else rule.rsplit("+", 1)[0])
    known |= set(fam.ignored) | set(fam.unread) | set(fam.harmless) | {"position_embedding_type", "model_type"}
    if fam.when is not None:
        known.add(fam.when[0])
    why = f"transformers' {fam.name} positional code never reads it"
    out, nested = {}, []
    for k, v in config.items():  # the top-level keys first, then those one level down, each in config order
        if isinstance(v, Mapping):
            nested.append((k, v))
        elif k not in known:
            out[k] = why
    for k, v in nested:
        for sub in v:
            if (name := f"{k}.{sub}") not in known:
                out[name] = why
    return out


# ----- the reader interface (models/readers.py READERS) ----------------------------------------------------------
def claims(config: Mapping[str, Any]) -> bool:
    """Whether this table reads ``config``: its model_type is a family here (Falcon: unless ``alibi`` is absent or
    false; a bad value is claimed, so that reading it names the key)."""
    fam = positions_family(model_type_of(config, strict=False)[0])
    if fam is None:
        return False
    when = fam.when
    return when is None or config.get(when[0]) not in (None, False)


def _kinds_text() -> str:
    """The kinds this module reads, as words (``t5, alibi, ... or learned``), from the records."""
    *head, last = reader_kinds(POSITIONS_READER)
    return f"{', '.join(head)} or {last}" if head else last


def _reader(config: Mapping[str, Any], read_as: str | None, rows: str | None = None) -> PositionsConfig:
    """The positions reader of ``config``; refused when it is not one of these families, or with ``read_as``
    (an opt-in of the RoPE reader's for families posenc does not know: these have their own rules)."""
    reader = read_positions(config, rows)
    if reader is None:
        mt = model_type_of(config, strict=False)[0]
        what = f"model_type {mt!r}" if mt is not None else "a config without model_type"
        raise ParameterError(
            f"{ref('config')}: {what} is not one posenc reads as {_kinds_text()} positions; drop {ref('kind')} to "
            "read it by its own rules"
        )
    if read_as is not None:
        raise ParameterError(
            f"{ref('read_as')} {read_as} reads an unknown RoPE family with another's rules; {reader.model_type} "
            "is read by its own (transformers' code for it): drop it"
        )
    return reader


def from_model_config(
    config: dict[str, Any],
    *,
    length: int | None = None,
    layer_type: str | None = None,
    read_as: str | None = None,
    rows: str | None = None,
    **options: Any,
) -> tuple[str, dict[str, Any], list[str], dict[str, str]]:
    """The kind, parameters, warnings and metadata notes (which rows: ``position_rows``) of the model's position
    tables; ``rows="buffer"`` reads the module's raw buffer instead of the rows the model adds."""
    reader = _reader(config, read_as, rows)
    params = reader.params(layer_type, length)
    return reader.kind_of(layer_type), params, list(reader.warnings), reader.rows_note(layer_type)


def model_config_layers(
    config: dict[str, Any],
    *,
    length: int | None = None,
    read_as: str | None = None,
    rows: str | None = None,
    **options: Any,
) -> dict[str, tuple[str, dict[str, Any]] | None]:
    """Every attention type -> ``(kind, parameters)`` (a learned type's parameters name its tensor, see
    :meth:`PositionsConfig.all_params`)."""
    return dict(_reader(config, read_as, rows).all_params(length))


def model_config_notes(
    config: dict[str, Any],
    *,
    read_as: str | None = None,
    rows: str | None = None,
    layer_type: str | None = None,
    **options: Any,
) -> dict[str, str]:
    """Which rows the table holds (``position_rows``), for families whose buffer has rows the model does not
    add to tokens 0..N-1."""
    reader = _reader(config, read_as, rows)
    types = [layer_type] if layer_type is not None else list(reader.family.layers)
    for lt in types:
        if note := reader.rows_note(lt):
            return note
    return {}


def describe_model_config(
    config: dict[str, Any], *, layer_type: str | None = None, read_as: str | None = None, **options: Any
) -> dict[str, Any]:
    """What was read, each value with the key or class default it came from."""
    return _reader(config, read_as).report(layer_type)


# ----- learned tables from the weights -------------------------------------------------------------------------
_SAFETENSORS_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16"}


def learned_table(
    path: str,
    config: Mapping[str, Any],
    *,
    length: int | None = None,
    layer_type: str | None = None,
    read_as: str | None = None,
    rows: str | None = None,
) -> tuple[Any, dict[str, str]] | None:
    """``(rows, metadata)`` of a learned position table read from the model directory ``path`` (row
    ``first_row`` onwards, as the model indexes it); None when ``path`` holds no weights or the config's layer is
    not learned (the caller then reads the config)."""
    reader = read_positions(config, rows)
    if reader is None or not os.path.isdir(path):
        return None
    _reader(config, read_as, rows)  # refuses read_as
    lt = reader._layer(layer_type)
    layer = reader.family.layers[lt]
    if not layer.learned:
        return None
    files = weight_files(path, str(layer.tensor))
    if files is None:
        return None
    found = find_tensors(files, str(layer.tensor))
    if len(found) != 1:
        what = "no tensor" if not found else f"{len(found)} tensors ({', '.join(n for _, n in found)})"
        said = reader._values(lt, None)
        shape = (
            f" (the config says [{said['length'].value + layer.table_rows}, {said['dim'].value}])"
            if layer.table_rows is not None and "length" in said and "dim" in said
            else ""
        )
        raise ParameterError(
            f"{path}: {what} named *{layer.tensor} in the weights{shape}, where {reader.model_type} keeps its "
            "positions; pass the model's own directory"
        )
    file, name = found[0]
    table = _read_tensor(file, name)
    first = int(reader._first_row(layer).value)
    values = reader._values(lt, None)
    usable = table.shape[0] - first
    if table.ndim != 2 or usable < 1:
        raise ParameterError(
            f"{file}: tensor {name} has shape {list(table.shape)}; expected rows x dim beyond row {first}"
        )
    # the width and rows the config says, where the inventory saw the table follow a key (else not checked)
    checked = [what for what in ("dim", "length") if what in values and (what == "dim" or layer.table_rows is not None)]
    dim = values["dim"].value if "dim" in values else table.shape[1]
    want = [table.shape[0], dim]
    if "length" in checked:  # rows observed to follow the length key (+ offset rows)
        want[0] = values["length"].value + (layer.table_rows or 0)
    if table.shape[1] != dim or table.shape[0] != want[0]:
        says = [values["dim"].origin.removeprefix("config key ")] if table.shape[1] != dim else []
        if table.shape[0] != want[0]:
            extra = f" + {layer.table_rows} offset rows" if layer.table_rows else ""
            says.insert(0, values["length"].origin.removeprefix("config key ") + extra)
        raise ParameterError(
            f"{file}: tensor {name} has shape {list(table.shape)} but the config ({', '.join(says)}) says {want}; "
            "the config and weights disagree"
        )
    pad: _Value | None = None
    if layer.padding_row is not None and reader.rows != "buffer":
        pad = (
            reader._key_row(layer.padding_row, layer, "padding_idx")
            if isinstance(layer.padding_row, str)
            else _Value(layer.padding_row, f"{reader.family.name}'s module in transformers")
        )
        if 0 <= pad.value < table.shape[0] and bool((table[pad.value] != 0).any()):
            raise ParameterError(
                f"{file}: tensor {name} (shape {list(table.shape)}) row {pad.value} is not zero, where "
                f"{reader.model_type}'s model keeps its padding row ({pad.origin}) zero; the weights are not this "
                "model's"
            )
    n = usable if length is None else _int(length, "length")
    if n > usable:
        raise ParameterError(f"{name} has {usable} usable rows (from row {first}); lower {ref('length')} to {usable}")
    from .. import __version__

    meta = {
        "posenc_version": __version__, "source": "model weights", "model_type": reader.model_type,
        "weights_file": os.path.basename(file), "weights_tensor": name, "first_row": str(first),
        "position_rows": "buffer: the module's whole buffer" if reader.rows == "buffer" else
        f"added: the rows the model adds to tokens 0..N-1 (buffer rows {first}..)",
        "reference": reader.family.reference,
    }  # fmt: skip
    held: list[str] = []
    if "dim" in checked:
        held.append(f"width {dim} ({values['dim'].origin})")
    if "length" in checked:
        held.append(f"{want[0]} rows ({values['length'].origin} + {layer.table_rows or 0})")
    if pad is not None:
        held.append(f"padding row {pad.value} zero ({pad.origin})")
    meta["config_checked"] = ", ".join(held) or "nothing (the inventory saw no config key the table follows)"
    rows_out = table[first : first + n]
    if layer.scale != 1.0:  # the module multiplies its rows (observed by the inventory)
        rows_out = rows_out * rows_out.dtype.type(layer.scale)
        meta["scale"] = repr(layer.scale)
    return rows_out, meta


def learned_tensor(
    path: str, config: Mapping[str, Any], *, layer_type: str | None = None, read_as: str | None = None
) -> tuple[Any, dict[str, Any]] | None:
    """``(table, layout)``: the whole learned table of a model directory (every row of the tensor, as stored) and
    what each of its rows is, for readers that build on it (a vision table's grid): ``layout`` holds the tensor's
    name and file, its shape, ``first_row`` (the row added to token 0), ``positions`` (``[first, end)``: the rows
    added to tokens 0..N-1), ``padding_row`` (zero, never added; None without one), ``offset_rows`` (rows before
    ``first_row`` that are not the padding row), ``scale`` and the config keys the width and rows follow. The
    table was held against its config as :func:`learned_table` holds it. None as :func:`learned_table`."""
    added = learned_table(path, config, layer_type=layer_type, read_as=read_as)
    if added is None:
        return None
    whole = learned_table(path, config, layer_type=layer_type, read_as=read_as, rows="buffer")
    assert whole is not None
    table, meta = whole
    reader = read_positions(config, "added")
    assert reader is not None
    layer = reader.family.layers[reader._layer(layer_type)]
    first = int(added[1]["first_row"])
    pad = None
    if layer.padding_row is not None:
        pad = (
            reader._key_row(layer.padding_row, layer, "padding_idx").value
            if isinstance(layer.padding_row, str)
            else layer.padding_row
        )
    layout = {
        "model_type": reader.model_type, "tensor": meta["weights_tensor"], "file": meta["weights_file"],
        "shape": list(table.shape), "first_row": first, "positions": [first, int(table.shape[0])],
        "padding_row": pad, "offset_rows": [r for r in range(first) if r != pad], "scale": layer.scale,
        "keys": {k: list(v) for k, v in layer.keys.items()}, "config_checked": added[1].get("config_checked"),
    }  # fmt: skip
    return table, layout


# ----- finding tensors in a model directory (every reader of weights here: learned, stored, vision tables) -------
def tensor_pattern(suffix: str) -> Any:
    """A saved name ending with ``suffix`` (after a dot, or whole); ``*`` is a block index (captured)."""
    import re

    return re.compile(r"(?:^|\.)" + re.escape(suffix).replace(r"\*", r"(\d+)") + "$")


def weight_files(path: str, suffix: str | None = None) -> list[str] | None:
    """The safetensors files of model directory ``path``: ``model.safetensors``, else the shards its index names
    (kept inside the directory; with ``suffix``, only those the index says hold a tensor named ``*suffix``); None
    when it holds no weights."""
    if not os.path.isdir(path):
        return None
    single = os.path.join(path, "model.safetensors")
    if os.path.isfile(single):
        return [single]
    index = os.path.join(path, "model.safetensors.index.json")
    if not os.path.isfile(index):
        return None
    from .config_file import weight_map

    pat = tensor_pattern(suffix) if suffix is not None else None
    names = weight_map(index)
    # shard names stay inside the model directory (an index naming ../x or /x is not followed)
    shards = dict.fromkeys(os.path.basename(str(f)) for n, f in names.items() if pat is None or pat.search(n))
    return [os.path.join(path, s) for s in shards]


def find_tensors(files: list[str], suffix: str) -> list[tuple[str, str]]:
    """``(file, saved name)`` of every tensor whose name ends with ``suffix`` (``*``: any block index)."""
    pat = tensor_pattern(suffix)
    return [(file, name) for file in files for name in _header(file)[0] if pat.search(name)]


def _header(file: str) -> tuple[dict[str, Any], int]:
    """A safetensors file's header (tensor name -> entry) and the offset of its data."""
    try:
        with open(file, "rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            if not 2 <= size <= 100_000_000:
                raise ValueError("bad header size")
            header = json.loads(fh.read(size))
    except (OSError, ValueError) as exc:
        raise ParameterError(f"{file}: not a readable safetensors file ({exc})") from None
    if not isinstance(header, dict):
        raise ParameterError(f"{file}: not a safetensors file (its header is not an object)")
    header.pop("__metadata__", None)
    return header, 8 + size


def _read_tensor(file: str, name: str) -> Any:
    """One tensor of a safetensors file, memory-mapped (only its bytes are read); a damaged entry or a file
    shorter than the entry says (a truncated download) is refused in one line."""
    import numpy as np

    from ..encodings.base import resolve_dtype

    header, start = _header(file)
    entry = header[name]
    damaged = f"{file}: tensor {name}'s header entry is damaged; download the weights again"
    if not isinstance(entry, dict):
        raise ParameterError(damaged)
    dtype = _SAFETENSORS_DTYPES.get(str(entry.get("dtype")))
    if dtype is None:
        raise ParameterError(f"{file}: tensor {name} has dtype {entry.get('dtype')}; a position table is floating")
    raw_shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not (isinstance(raw_shape, list) and all(type(s) is int and s >= 0 for s in raw_shape)) or not (
        isinstance(offsets, list) and len(offsets) == 2 and all(type(x) is int and x >= 0 for x in offsets)
    ):
        raise ParameterError(damaged)
    shape = tuple(raw_shape)
    a, b = offsets
    dt = resolve_dtype(dtype)
    if b - a != int(np.prod(shape)) * dt.itemsize:
        raise ParameterError(f"{file}: tensor {name}'s offsets do not match its shape; the file is damaged")
    size = os.path.getsize(file)
    if start + b > size:
        raise ParameterError(
            f"{file}: truncated: tensor {name} ends at byte {start + b} and the file holds {size}; download the "
            "weights again"
        )
    return np.memmap(file, dtype=dt, mode="r", offset=start + a, shape=shape)
