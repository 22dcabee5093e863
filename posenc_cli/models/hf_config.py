r"""Reading a HF transformers config.json into ``rope`` (or ``mrope``) parameters, by the model type's record.

``--hf-config`` promises "the cos/sin that model X uses", so the reader follows transformers' own rules
(transformers 5.x: ``PreTrainedConfig.convert_rope_params_to_dict``, ``standardize_rope_params``, each
family's ``configuration_<family>.py`` and the rotary class and ``apply_rotary_pos_emb`` of its
``modeling_<family>.py``), as written in the model type's :class:`~.records.Record` (:mod:`.records`: one
record per ``model_type``, data plus named rules):

* **key aliases**: GPT-2 names (``n_embd``, ``n_head``, ``n_positions``), GPT-NeoX ``rotary_pct`` /
  ``rotary_emb_base``, Gemma 3 ``rope_local_base_freq``, ModernBERT ``global_rope_theta`` / ``local_rope_theta``,
  DeepSeek ``qk_rope_head_dim``, MiniMax-M2's legacy ``rotary_dim``;
* **class defaults**: the value the config class fills in when config.json omits a field.
  :meth:`ModelConfig.report` says which values came from such defaults;
* **nesting**: multimodal configs keep the language model under ``text_config``; its own ``model_type`` (or
  the wrapper record's text model) picks the record and *that* class's defaults apply to missing fields;
* **pairing**: ``half`` pairs :math:`(j, j + r/2)` (``rotate_half``); ``interleaved`` pairs
  :math:`(2k, 2k + 1)` (``rotate_every_two``, ``repeat_interleave`` of the frequencies, ``view_as_complex``,
  DeepSeek-V3's de-interleave, which permutes queries and keys alike);
* **per-layer attention types** and the types that apply no RoPE (Cohere2's full layers, Llama 4's full
  layers, SmolLM3's ``no_rope_layers``, Granite 4's mamba layers), from the config at hand: its
  ``layer_types``, else the record's layer rule over its period keys; a type whose layers differ in rotation and
  of which posenc has no such rule is refused when the config names no types (its config class would build
  them). An attention key the inventory's ``attention_probes`` saw change which layers rotate or the pairing
  (Cohere2's ``sliding_window: null``, DeepSeek-V3's ``rope_interleave``) re-derives them from what the probe
  saw at that value, holds at a value of the kind of the probed values that changed nothing, and is refused by
  name at any other.

Never a table from a guess, and never a refusal over a name. A key of the config is either one the record
reads (reported with where it came from), or one the model's positional code never reads (reported as
ignored, with that reason, whatever its name: Falcon's ``alibi: false``, BLOOM's ``offset_alibi``, Qwen2's
``use_mrope``, DeepSeek-V3's ``aux_loss_alpha``), or - for a model type whose inventory entry
(:func:`.records.inventory_entry`, observed from transformers' code) says its positional code reads it - an
error naming it. A rope dict key outside :data:`ROPE_KEYS` and the record's ``rope_keys`` is an error; one the
rule in force does not read is a warning ("ignored, as transformers does"). A ``model_type`` without a record
is refused in one line; the user may opt in with ``read_as=FAMILY`` (``--read-as``): the config is read with
that record's rules, what was not understood becomes a warning, and :attr:`ModelConfig.assumption`
(recorded in the output's metadata as ``hf_read_as``) says so.

Precedence (transformers 5): ``rope_scaling`` (if non-empty) replaces ``rope_parameters``; values inside the
rope dict win over top-level ``rope_theta`` / ``partial_rotary_factor``; ``rope_type`` falls back to the legacy
``type``; ``original_max_position_embeddings`` at top level wins over the rope dict's for llama3/yarn/longrope
(Phi-3's exception in ``standardize_rope_params``), else the dict's, else ``max_position_embeddings``.

Bad input never escapes as a traceback: :func:`load_config` refuses files over :data:`MAX_CONFIG_BYTES` before
reading them, non-UTF-8 bytes, invalid JSON, nesting deeper than :data:`MAX_DEPTH` (checked on the token
stream before ``json`` recurses) and non-object documents; every value is checked for type, finiteness and
range with a :class:`~posenc_cli.errors.ParameterError` that names the key.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ParameterError, option_clause, ref
from .config_file import _check_depth_obj, _json_type
from .records import (
    DECOMPOSED,
    LEGACY_LAYER_TYPES,
    RECORDS,
    TRANSFORMERS_VERSION,
    VISION_ROTARY,
    WINDOW_BIAS,
    Record,
    Refused,
    inventory_entry,
    model_type_of,
    record_for,
)

#: Largest size (hidden size, head dim, positions...) accepted from a config.
MAX_SIZE = 2**31 - 1

#: Keys a rope dict may hold, and the HF rules (``rope_type``) that read each.
ROPE_KEYS: dict[str, tuple[str, ...]] = {
    "rope_type": (), "type": (), "rope_theta": (), "partial_rotary_factor": (),
    "factor": ("linear", "dynamic", "yarn", "longrope", "llama3", "proportional"),
    "original_max_position_embeddings": ("yarn", "longrope", "llama3", "dynamic"),
    "attention_factor": ("yarn", "longrope"),
    "beta_fast": ("yarn",), "beta_slow": ("yarn",), "mscale": ("yarn",), "mscale_all_dim": ("yarn",),
    "truncate": ("yarn",), "low_freq_factor": ("llama3",), "high_freq_factor": ("llama3",),
    "short_factor": ("longrope",), "long_factor": ("longrope",),
}  # fmt: skip

#: HF rope_type -> posenc ``scaling``.
HF_SCALINGS = {"default": "none", "linear": "linear", "dynamic": "dynamic", "yarn": "yarn", "llama3": "llama3",
               "longrope": "longrope", "proportional": "proportional"}  # fmt: skip
#: Keys every config carries that are not about positions at all (never listed as ignored).
_BOOKKEEPING = ("model_type", "architectures", "transformers_version", "torch_dtype", "dtype", "_name_or_path",
                "text_config", "vision_config", "audio_config")  # fmt: skip
#: The schemes this reader builds tables for.
ROTARY = ("rope", "mrope")
#: the rope_type M-RoPE configs write (Qwen2-VL): a record with sections reads it
MROPE_TYPES = ("mrope",)


def rotary_records() -> dict[str, Record]:
    """The records written for this reader (rotary, M-RoPE): what ``read_as`` may name."""
    return {name: r for name, r in RECORDS.items() if r.scheme in ROTARY}


# ----- values ----------------------------------------------------------------------------------------------
def _number(
    value: Any,
    key: str,
    *,
    integer: bool = False,
    positive: bool = True,
    allow_zero: bool = False,
    high: float | None = None,
) -> Any:
    """A finite number (an int when ``integer``) from config key ``key``; a one-line error naming it otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        want = "an integer" if integer else "a number"
        raise ParameterError(f"config key {key}={_show(value)} is not {want}; fix config.json")
    if isinstance(value, float) and not math.isfinite(value):
        raise ParameterError(f"config key {key}={_show(value)} is not a finite number; fix config.json")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise ParameterError(f"config key {key}={_show(value)} is not an integer; fix config.json")
        value = int(value)
    if positive and (value < 0 or (value == 0 and not allow_zero)):
        bound = ">= 0" if allow_zero else "> 0"
        raise ParameterError(f"config key {key}={_show(value)} is out of range; it must be {bound}")
    limit = high if high is not None else (MAX_SIZE if integer else 1e300)
    if abs(value) > limit:
        raise ParameterError(f"config key {key}={_show(value)} is out of range; it must be <= {limit:g}")
    return value if integer else float(value)


def _show(value: Any) -> str:
    if isinstance(value, str):
        text = repr(value)
    else:
        text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True)
class _Value:
    """A resolved value and where it came from (``config key X``, ``default of FAMILY`` ...)."""

    value: Any
    origin: str


# ----- the model config ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelConfig:
    """What a model's config.json says about its rotary embedding, read with its family's rules.

    Attributes
    ----------
    model_type : str
        The (text) model type read (``gemma3_text`` for a ``gemma3`` wrapper).
    family : Record
        The :mod:`.records` entry used (a config without ``model_type`` is read by its ``architectures``' model
        type, or refused).
    kind : str
        The posenc kind that reproduces the tables: ``rope``, or ``mrope`` for Qwen2-VL / Qwen2.5-VL.
    layer_types : tuple of str
        The distinct attention types (e.g. ``("full_attention", "sliding_attention")``), ``("default",)`` for a
        model whose layers all use one RoPE and say nothing about types.
    warnings : list of str
        One line each: unknown model type, rope keys the rule does not read, values transformers ignores.
    assumption : str or None
        What the user told posenc to assume (``read_as``): the family whose rules read the config. Outputs
        record it in their metadata (``hf_read_as``).
    """

    model_type: str
    family: Record
    kind: str
    layer_types: tuple[str, ...]
    warnings: list[str]
    _head: dict[str, _Value]
    _ropes: dict[str, dict[str, _Value] | None]
    #: config keys the family's positional code never reads -> why they are ignored
    ignored: dict[str, str]
    assumption: str | None = None
    #: where ``model_type`` came from when config.json has none (its ``architectures``, through transformers'
    #: mapping); None when the config names it
    model_type_from: str | None = None
    #: the attention type of each layer, in order, as this config's layer rule gives them (``()``: one RoPE for
    #: every layer, the config naming no types); a NoPE type's layers apply none
    layers: tuple[str, ...] = ()

    # ----- public ----------------------------------------------------------------------------------------
    def params(
        self,
        layer_type: str | None = None,
        length: int | None = None,
        *,
        offset: int = 0,
        seq_len: int | None = None,
    ) -> dict[str, Any]:
        """The parameters of :attr:`kind` (names its class accepts) for ``layer_type``; ``length`` defaults
        to ``max_position_embeddings``. ``offset`` and ``seq_len`` (the table's first position and the sequence
        length a rule sees, as the user will set them) matter where the parameters depend on the sequence
        length (Phimoe's mscale)."""
        rope = self._rope(layer_type)
        out = {k: v.value for k, v in rope.items() if not k.startswith("_")}
        if length is None:
            mp = self._head.get("max_position_embeddings")
            if mp is None:
                raise ParameterError(f"config has no max_position_embeddings; pass {ref('length')} N")
            length = mp.value
        out["length"] = _number(length, "length", integer=True)
        if "_long_mscale" in rope:
            # Phimoe: max(position_ids) + 1 of the table's rows decides which mscale multiplies cos/sin
            seq = seq_len if seq_len is not None else max(1, offset + out["length"])
            long = seq > out["original_max_position_embeddings"]
            out["attention_factor"] = rope["_long_mscale" if long else "_short_mscale"].value
        return out

    def report(self, layer_type: str | None = None) -> dict[str, Any]:
        """Family, head dim, rotated dims, layout, base, scaling and its factors, attention scaling and max
        positions of ``layer_type``, each ``{"value": v, "from": origin}``, origin naming the config key or the
        class default it came from."""
        rope = self._rope(layer_type)
        out: dict[str, Any] = {
            "model_type": self.model_type, "family": self.family.model_type, "kind": self.kind,
            "reference": self.family.reference,
            "layer_type": layer_type, "layer_types": list(self.layer_types),
            "nope_layer_types": [lt for lt in self.layer_types if self._ropes[lt] is None],
        }  # fmt: skip
        for key, val in {**self._head, **rope}.items():
            if key.startswith("_"):
                continue
            out[key] = {"value": val.value, "from": val.origin}
        if "_layout" in rope:
            out["layout"] = {"value": rope["_layout"].value, "from": rope["_layout"].origin}
        r = rope.get("_rot_dim")
        if r is not None:
            out["rotated_dims"] = {"value": r.value, "from": r.origin}
        for key in ("_short_mscale", "_long_mscale"):
            if key in rope:
                out[key[1:]] = {"value": rope[key].value, "from": rope[key].origin}
        if self.model_type_from is not None:
            out["model_type_from"] = self.model_type_from
        if self.assumption is not None:
            out["read_as"] = {"value": self.family.model_type, "from": self.assumption}
        out["attention_scaling"] = {
            "value": _attention_scaling(self.kind, self.params(layer_type, 1)),
            "from": "HF's formula for this rule",
        }
        if "_long_mscale" in rope:
            out["attention_scaling"]["from"] = (
                "short_mscale for tables up to original_max_position_embeddings rows, long_mscale beyond"
            )
        out["ignored"] = dict(self.ignored)
        out["warnings"] = list(self.warnings)
        return out

    def all_params(self, length: int | None = None) -> dict[str, dict[str, Any] | None]:
        """``params`` of every layer type (``None`` for a NoPE type)."""
        return {lt: (None if self._ropes[lt] is None else self.params(lt, length)) for lt in self.layer_types}

    # ----- internals -------------------------------------------------------------------------------------
    def _rope(self, layer_type: str | None) -> dict[str, _Value]:
        ropes = {lt: r for lt in self.layer_types if (r := self._ropes[lt]) is not None}
        rope_types = list(ropes)
        if layer_type is None:
            distinct = {
                json.dumps({k: v.value for k, v in r.items()}, sort_keys=True, default=str) for r in ropes.values()
            }
            if len(distinct) != 1:
                raise ParameterError(
                    f"{self.model_type} uses a different RoPE per attention type; pass {ref('layer_type')}, "
                    f"one of: {', '.join(rope_types)}"
                )
            layer_type = rope_types[0]
        if layer_type not in self._ropes:
            if self.layer_types == ("default",):
                raise ParameterError(
                    f"{ref('layer_type')} {layer_type} cannot apply to {self.model_type}: one RoPE serves every "
                    "layer (the config names no attention types); drop it"
                )
            raise ParameterError(
                f"unknown {ref('layer_type')} {layer_type!r} for {self.model_type}; choose from: "
                f"{', '.join(self.layer_types)}"
            )
        rope = self._ropes[layer_type]
        if rope is None:
            raise ParameterError(
                f"layer type {layer_type!r} of {self.model_type} applies no rotary embedding (NoPE); "
                f"choose from: {', '.join(rope_types)}"
            )
        return rope


def _attention_scaling(kind: str, params: dict[str, Any]) -> float:
    """The multiplier on cos/sin the kind's tables carry (1 for kinds without one)."""
    from ..encodings import make_encoding

    return float(getattr(make_encoding(kind, params), "attention_scaling", 1.0))


# ----- reading ---------------------------------------------------------------------------------------------
def read_model_config(config: Mapping[str, Any], *, read_as: str | None = None) -> ModelConfig:
    """Read a config.json dict with its model type's record (see the module docstring); raise ParameterError.

    ``read_as`` (a rotary record's model_type) reads the config with that record's rules whatever its
    model_type says, and turns what posenc does not understand into warnings; the result's ``assumption`` says
    so."""
    if not isinstance(config, Mapping):
        raise ParameterError(f"config must be a JSON object, got {_json_type(config)}")
    if read_as is not None and read_as not in rotary_records():
        raise ParameterError(
            f"{ref('read_as')} {read_as!r} is no family posenc reads; choose from: "
            f"{', '.join(sorted(rotary_records()))}"
        )
    _check_depth_obj(config, "config")
    return _Reader(dict(config), read_as).read()


def class_table(config: Mapping[str, Any], params: Mapping[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The parameters of the cache a model's rotary class itself holds, when its attention changes it before q and
    k meet it (a table read from the config is what the scores see), and what the attention does, in words; None
    when the class's cache is the table. DeepSeek-V3 and kin (the inventory's ``deinterleave``) permute q and k:
    the class gives the half layout of the pairs (2k, 2k+1); nanochat's rotate_half flips the signs: the class
    gives the sin the scores see negated."""
    if params.get("layout") == "interleaved" and (text := qk_permutation(config)):
        return {"layout": "half"}, text
    if params.get("sin_sign") == -1:
        try:
            mt = _text_model_type(config)[0]
        except ParameterError:
            mt = None
        return {"sin_sign": 1}, (
            f"{mt or 'the model'}'s rotate_half flips the signs (a rotation by -angle): its rotary class's own sin "
            "is the negative of the sin the scores see"
        )
    return None


def qk_permutation(config: Mapping[str, Any]) -> str:
    """What a model's attention does to q and k before HF's rotary tables apply, as the inventory observed it in
    transformers' code ('' when nothing): ``deinterleave`` (DeepSeek-V3 and kin: ``apply_rotary_pos_emb_interleave``
    permutes q and k, then ``rotate_half`` with the rotary class's half-layout cos/sin: the scores of pairs
    (2k, 2k+1), which is how a config of that model reads)."""
    try:
        mt = _text_model_type(config)[0]
    except ParameterError:
        return ""
    entry = inventory_entry(mt) if mt else None
    if not entry or entry.get("pairing") != "deinterleave":
        return ""
    return (
        f"{mt} permutes q and k ({entry.get('apply_function')} de-interleaves them) before rotate_half with "
        f"{entry.get('rotary_class')}'s half-layout cos/sin: those rotate the pairs (2k, 2k+1) of the features"
    )


def _text_model_type(
    outer: Mapping[str, Any], strict: bool = True
) -> tuple[str | None, dict[str, Any], str, list[str]]:
    """(the text model_type, the dict holding its keys, their prefix, warnings) of a config, following the
    wrapper records' ``text_config`` (``strict``: see :func:`.records.model_type_of`)."""
    outer_type = model_type_of(outer, strict=strict)[0]
    if outer_type is not None and not isinstance(outer_type, str):
        raise ParameterError(f"config key model_type={_show(outer_type)} is not a string; fix config.json")
    wrapper = RECORDS.get(outer_type or "")
    text = outer.get("text_config")
    if text is not None:
        if not isinstance(text, dict):
            raise ParameterError(f"config key text_config={_show(text)} is not an object; fix config.json")
        mt = text.get("model_type")
        if mt is None:
            mt = wrapper.text_model_type if wrapper is not None else outer_type
        if mt is not None and not isinstance(mt, str):
            raise ParameterError(f"config key text_config.model_type={_show(mt)} is not a string; fix config.json")
        return mt, text, "text_config.", []
    try:
        composite = record_for(outer_type) if outer_type and wrapper is None else None
    except Refused:
        composite = None
    if composite is not None and composite.sub_config:
        # the rotary settings sit in a sub-config read with the outer type's record (Dia's decoder_config)
        node: Any = outer
        for part in composite.sub_config:
            node = node.get(part) if isinstance(node, dict) else None
        path = ".".join(composite.sub_config)
        if not isinstance(node, dict):
            raise ParameterError(f"config needs {path} (an object): {outer_type}'s rotary settings sit there")
        return outer_type, dict(node), f"{path}.", []
    if wrapper is not None and wrapper.text_model_type is not None:
        warn = (
            []
            if wrapper.text_at_top
            else [f"{outer_type} config has no text_config; reading the text model's keys at top level"]
        )
        return wrapper.text_model_type, dict(outer), "", warn
    return outer_type, dict(outer), "", []


class _Reader:
    def __init__(self, config: dict[str, Any], read_as: str | None = None) -> None:
        self.outer = config
        self.read_as = read_as
        self.warnings: list[str] = []
        #: keys posenc does not understand that could change the table: an error unless read_as is given
        self.unknown: list[str] = []
        self.ignored: dict[str, str] = {}
        #: keys the layer rule read (reported with the values)
        self.layer_keys: dict[str, _Value] = {}
        #: the attention type of each layer (:meth:`layer_types`)
        self.layer_list: list[str] = []

    # where a key lives, for messages ("text_config.rope_theta")
    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def read(self) -> ModelConfig:
        mt, self.cfg, self.prefix, self.warnings = _text_model_type(self.outer, strict=self.read_as is None)
        cfg = self.cfg
        rec, refused = _record(mt)
        assumption = None
        if self.read_as is not None:
            rec = rotary_records()[self.read_as]
            assumption = f"model_type {mt or 'unset'!r} read with {self.read_as}'s rules, as the user asked (read_as)"
        elif rec is None and mt is not None:
            raise ParameterError(_refusal(mt, refused))
        if rec is None:
            # no model_type and no architectures: no family is guessed (a family's defaults would make the table)
            raise ParameterError(
                "config has no model_type and no architectures, so its family is unknown and no table is guessed; "
                "add model_type to config.json"
                + option_clause(f", or pass {ref('read_as')} FAMILY to read it with that family's rules")
            )
        self.model_type_from = model_type_of(self.outer, strict=False)[1]
        self.fam: Record = rec
        #: the family read by its own rules (not through read_as)
        self.known = assumption is None
        self.family_name = rec.model_type
        self.model_type = mt or "unknown"
        outer = model_type_of(self.outer, strict=False)[0]
        if isinstance(outer, str) and assumption is None:  # a table of another component it leaves, named (issue 36)
            from .records import unread_line

            told = unread_line(outer)
            if told is not None:
                self.warnings.append(told)
        switch = self.check_when()
        head = {**switch, **self.read_head()}
        self.guard()
        rec = self.fam  # a pairing re-derived from the config at hand (guard: the attention's probes)
        try:
            ropes, layer_types = self.read_ropes(head)
        except ParameterError:
            self.refuse_unknown()  # a key posenc does not model is the first reason (it may be why no layer rotates)
            raise
        head.update(self.layer_keys)
        self.unused(head, ropes)
        if rec.has("fixed_base") and "rope_theta" in cfg:
            self.warnings.append(
                f"{self.key('rope_theta')} is ignored: transformers' {rec.model_type} hard-codes base "
                f"{rec.defaults.get('rope_theta', 10000.0):g}"
            )
        self.refuse_unknown()
        if self.unknown:
            self.warnings.extend(f"{u}; ignored: read with {self.read_as}'s rules, as asked" for u in self.unknown)
        return ModelConfig(
            self.model_type, rec, rec.scheme, layer_types, self.warnings,
            head, ropes, self.ignored, assumption, self.model_type_from, tuple(self.layer_list),
        )  # fmt: skip

    def refuse_unknown(self) -> None:
        """Keys posenc does not model that could change the tables: an error, unless ``read_as`` was given."""
        if self.unknown and self.read_as is None:
            more = f" (and {len(self.unknown) - 1} more)" if len(self.unknown) > 1 else ""
            raise ParameterError(
                f"{self.unknown[0]}{more}, and it could change the tables of model_type {self.model_type!r}"
                + option_clause(
                    f"; check the model's code, then pass {ref('read_as')} FAMILY (e.g. llama) to read it as "
                    "that family"
                )
            )

    def check_when(self) -> dict[str, _Value]:
        """A record that holds for one value of a switch key only (Falcon's alibi, Granite 4's
        position_embedding_type): a value of the wrong type is an error; the other value is not this reading."""
        rec = self.fam
        if rec.when is None or not self.known:
            return {}
        key, want = rec.when
        value = self.cfg.get(key, rec.defaults.get(key))
        if isinstance(want, bool) and value is not None and not isinstance(value, bool):
            raise ParameterError(f"config key {self.key(key)}={_show(value)} is not true or false; fix config.json")
        if (value or None) != (want or None):
            raise ParameterError(
                f"config key {self.key(key)}={_show(value)}: transformers' {rec.model_type} then applies no rotary "
                "embedding in any layer; no RoPE table to build"
            )
        origin = f"config key {self.key(key)}" if key in self.cfg else f"default of {rec.model_type}"
        return {key: _Value(value, f"{origin} (selects the rotary embedding)")}

    # ----- the guard: keys the positional code reads, from the source ----------------------------------------
    def guard(self) -> None:
        """Every top-level key is read by the record, or ignored because the family's positional code never
        reads it; a key the inventory saw that code read and the record does not model is an error."""
        rec, cfg = self.fam, self.cfg
        known = rec.known_top()
        observed = _keys_read(self.model_type if self.known else "")
        attention = _attention_keys_read(self.model_type if self.known else "")
        saved = _saved_top(rec.model_type) if rec.origin == "inventory" else None
        for k in cfg:
            if k in known or k in _BOOKKEEPING:
                continue
            probes = _attention_probes(rec.model_type).get(k) if self.known else None
            if probes:
                self.probed(k, probes)
            elif rec.origin == "inventory" and saved is not None and k not in saved:
                self.unknown.append(
                    f"config key {self.key(k)} is no attribute of transformers' {rec.model_type} config class (a "
                    "legacy key its class may convert), and posenc has no record of that"
                )
            elif k in observed:
                self.unknown.append(
                    f"config key {self.key(k)} is read by transformers' {self.model_type} positional code, and "
                    "posenc does not model it"
                )
            elif self.known and k in attention:  # the attention module reads it; the rotary class does not
                self.ignored[self.key(k)] = (
                    f"transformers' {rec.model_type} attention reads it, its rotary class does not: the table does "
                    "not depend on it"
                )
            elif self.known:
                self.ignored[self.key(k)] = f"transformers' {rec.model_type} positional code never reads it"
            else:  # read through read_as
                self.unknown.append(f"config key {self.key(k)} is one {rec.model_type}'s reading does not know")

    def probed(self, k: str, probes: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
        """A key the attention reads whose other value the inventory saw change the pairing or which layers
        rotate (its ``attention_probes``, issue 36.5). At the default the observation holds, and at a value of
        the same kind the probes saw change nothing (an integer window doubled) too; at a probed value that
        changes only the apply function, the pairing is re-derived from what that function does; at one that
        changes which layers rotate, the layer types that rotate are re-derived from the probe's layers (Cohere2's
        ``sliding_window: null``: none; Exaone 4's: every type); any other value is refused by name."""
        base, changed = probes
        value, was = self.cfg[k], changed[0]["was"][k]
        mt = self.fam.model_type
        if value == was:
            self.ignored[self.key(k)] = (
                f"the value transformers' {mt} attention was observed with (its pairing and layers are the record's)"
            )
            return
        hit = next((p for p in changed if p["set"][k] == value), None)
        if hit is None:
            tried = [v for v in (base.get("tried") or {}).get(k, []) if not any(p["set"][k] == v for p in changed)]
            kind = _kind(value)
            same = [v for v in (was, *tried) if _kind(v) == kind]
            if len(same) > 1 and not any(_kind(p["set"][k]) == kind for p in changed):
                self.ignored[self.key(k)] = (
                    f"transformers' {mt} attention pairs and rotates the same layers at {k}="
                    f"{' and '.join(_show(v) for v in same)} (probed); of the values probed only "
                    f"{', '.join(_show(p['set'][k]) for p in changed)} changes that, and {_show(value)} is of their kind "
                    f"({kind})"
                )
                return
        if hit is not None and hit["layer_rope"] == base["layer_rope"] and hit.get("pairing") in PAIRINGS:
            self.fam = replace(self.fam, pairing=hit["pairing"])
            self.layer_keys[k] = _Value(
                value, f"config key {self.key(k)} (transformers' {mt} attention then calls "
                f"{', '.join(hit['apply_functions_called'])}: {hit['pairing']} pairs)",
            )  # fmt: skip
            return
        nope = None if hit is None else _nope_types(mt, base, hit)
        if (
            hit is not None
            and nope is not None
            and not set(hit["apply_functions_called"]) - set(base["apply_functions_called"])
        ):
            self.fam = replace(self.fam, nope=nope)
            rotate = sorted(set(_probe_types(mt)) - set(nope))
            self.layer_keys[k] = _Value(
                value, f"config key {self.key(k)} (transformers' {mt} attention then rotates "
                f"{' and '.join(rotate) or 'no'} layers, observed on its own layers)",
            )  # fmt: skip
            return
        what = (
            "the pairing or which layers rotate" if hit is None
            else "which layers rotate" if hit["layer_rope"] != base["layer_rope"] else "the pairing"
        )  # fmt: skip
        self.unknown.append(
            f"config key {self.key(k)}={_show(value)} changes {what} in transformers' {mt} attention, which posenc "
            f"derived at {k}={_show(was)} and does not re-derive for this value"
        )

    def unused(self, head: dict[str, _Value], ropes: dict[str, dict[str, _Value] | None]) -> None:
        """Keys the record knows that this config's reading did not need (hidden_size where head_dim gives the
        width): reported with the key that made them unneeded, so that no key goes unmentioned."""
        values = [*head.values(), *(v for r in ropes.values() if r for v in r.values())]
        said = " ".join(v.origin for v in values)
        used = {m.split(".")[0] for m in re.findall(r"config key " + re.escape(self.prefix) + r"([\w.]+)", said)}
        used |= {k for k in ("rope_scaling", "rope_parameters") if f"{self.prefix}{k}." in said}
        why = {
            "hidden_size": "the head width comes from another key (see dim)",
            "num_attention_heads": "the head width comes from another key (see dim)",
            "num_hidden_layers": "layer_types (or one RoPE for every layer) leaves it no role",
            "no_rope_layer_interval": "no_rope_layers names each layer",
            "rope_theta": "the rope dict's rope_theta wins",
            "partial_rotary_factor": "the rope dict's value wins, or this rotary class rotates the whole head",
        }
        for k in self.cfg:
            if k in used or self.key(k) in self.ignored or k in _BOOKKEEPING or k in self.fam.when_keys():
                continue
            if k in ("rope_scaling", "rope_parameters") and not self.cfg[k]:
                continue
            self.ignored[self.key(k)] = f"not needed here: {why.get(k, 'this config gives what it would')}"

    # ----- scalar fields ------------------------------------------------------------------------------------
    def get(self, canonical: str, *, integer: bool = True, required: bool = False, **kw: Any) -> _Value | None:
        """A top-level (text) config value: the record's aliases, then the class default."""
        for key in self.fam.aliases.get(canonical, (canonical,)):
            if self.cfg.get(key) is not None:
                value = _number(self.cfg[key], self.key(key), integer=integer, **kw)
                return _Value(value, f"config key {self.key(key)}")
        if canonical in self.fam.defaults and self.fam.defaults[canonical] is not None and self.known:
            return _Value(self.fam.defaults[canonical], f"default of {self.family_name}")
        if required:
            names = " or ".join(self.fam.aliases.get(canonical, (canonical,)))
            raise ParameterError(f"config needs {names}; missing {self.key(names.split(' or ')[0])}")
        return None

    def read_head(self) -> dict[str, _Value]:
        out: dict[str, _Value] = {}
        mp = self.get("max_position_embeddings")
        if mp is not None:
            out["max_position_embeddings"] = mp
        out["dim"] = HEAD_DIM[self.fam.head_dim](self)
        return out

    def head_from_config(self) -> _Value:
        for key in self.fam.aliases.get("head_dim", ("head_dim",)):  # JetMoE's kv_channels
            v = self.cfg.get(key)
            if v is not None:
                return _Value(_number(v, self.key(key), integer=True), f"config key {self.key(key)}")
        if self.fam.defaults.get("head_dim") is not None and self.known:
            return _Value(self.fam.defaults["head_dim"], f"default of {self.family_name}")
        return self.head_computed()

    def head_computed(self) -> _Value:
        hs = self.get("hidden_size")
        nh = self.get("num_attention_heads")
        if hs is None or nh is None:
            missing = "hidden_size" if hs is None else "num_attention_heads"
            names = self.fam.aliases.get(missing, (missing,))[0]
            raise ParameterError(
                f"config needs head_dim or hidden_size and num_attention_heads; missing {self.key(names)}"
            )
        if hs.value // nh.value < 1:
            raise ParameterError(
                f"config keys {self.key('hidden_size')}={hs.value} and {self.key('num_attention_heads')}="
                f"{nh.value} give a head dim of 0; fix config.json"
            )
        return _Value(hs.value // nh.value, f"{hs.origin} // {nh.origin}")

    def head_ignoring_head_dim(self) -> _Value:
        if "head_dim" in self.cfg:
            self.warnings.append(
                f"{self.key('head_dim')} is ignored: transformers' {self.family_name} uses hidden_size // "
                "num_attention_heads"
            )
        return self.head_computed()

    def head_qk_rope(self) -> _Value:
        value = self.get("qk_rope_head_dim", required=True)
        assert value is not None
        given = self.cfg.get("head_dim")
        if given is not None and given != value.value:
            # DeepseekV2Config.__post_init__ sets head_dim = qk_rope_head_dim over a given one; DeepseekV3Config
            # sets it before a head_dim given in config.json is applied, and its rotary class then reads that
            # (configuration_deepseek_v3.py:121-123, modeling_deepseek_v3.py:87)
            raise ParameterError(
                f"config key {self.key('head_dim')}={given} differs from {value.origin.removeprefix('config key ')}"
                f"={value.value}: transformers' MLA config classes differ on which one their rotary class reads; "
                "remove head_dim from config.json or make it equal"
            )
        return value

    # ----- rope dicts ---------------------------------------------------------------------------------------
    def rope_source(self) -> tuple[dict[str, Any], str, bool]:
        """(rope dict, its key prefix, given?) following convert_rope_params_to_dict: rope_scaling wins."""
        cfg = self.cfg
        for name in ("rope_scaling", "rope_parameters"):
            v = cfg.get(name)
            if v is None:
                continue
            if not isinstance(v, dict):
                raise ParameterError(f"config key {self.key(name)}={_show(v)} is not an object; fix config.json")
            if v:
                if name == "rope_scaling" and isinstance(cfg.get("rope_parameters"), dict) and cfg["rope_parameters"]:
                    self.warnings.append(
                        f"{self.key('rope_scaling')} and {self.key('rope_parameters')} both given; "
                        "transformers uses rope_scaling"
                    )
                return dict(v), self.key(name) + ".", True
        if self.fam.default_rope is not None:
            return dict(self.fam.default_rope), f"default of {self.family_name}: ", False
        return {}, self.key("rope_parameters") + ".", False

    def read_ropes(self, head: dict[str, _Value]) -> tuple[dict[str, dict[str, _Value] | None], tuple[str, ...]]:
        fam = self.fam
        rope, where, given = self.rope_source()
        layer_list = self.layer_list = [str(t) for t in self.layer_types()]
        types_ = sorted(set(layer_list)) if layer_list else ["default"]
        per_layer_keys = set(fam.theta) - {None}
        nested = bool(rope) and all(isinstance(v, dict) or v is None for v in rope.values())
        if nested and not layer_list:
            types_ = sorted(rope)  # transformers 5 per-layer rope_parameters: one entry per attention type
        elif per_layer_keys and not layer_list:
            raise ParameterError(
                f"{self.model_type} has a RoPE per attention type and the config names none; add "
                f"{self.key('layer_types')} (or a per-type {self.key('rope_parameters')}) to config.json"
            )
        if rope and not nested and fam.has("per_layer_parameters_only") and where.endswith("rope_parameters."):
            self.warnings.append(
                f"{where[:-1]} is flat, and transformers' {fam.model_type} reads it per layer type only: its keys "
                "are ignored, as transformers does (rope_scaling applies a flat dict to full_attention)"
            )
            rope = {}
        ropes: dict[str, dict[str, _Value] | None] = {}
        for lt in types_:
            if lt in fam.nope:
                ropes[lt] = None
                continue
            if nested:
                key = fam.rope_entry.get(lt, lt)  # the rope dict entry this layer type uses (DeepSeek-V4)
                entry = rope.get(key)
                if entry is None:
                    if key in rope or not per_layer_keys:
                        ropes[lt] = None
                        continue
                    if key not in fam.theta:
                        raise ParameterError(
                            f"{where[:-1]} has no entry for layer type {lt!r}, and transformers' {fam.model_type} "
                            f"has no default for it; add {where}{key} to config.json"
                        )
                    entry = {}
                ewhere = f"{where}{key}."
            elif per_layer_keys:
                # one flat dict: Gemma 3 applies rope_scaling to full only, ModernBERT to both
                applies = not given or lt in fam.scaling_to
                entry, ewhere = (dict(rope) if applies else {}), where
            else:
                entry, ewhere = dict(rope), where
            if not isinstance(entry, dict):
                raise ParameterError(f"config key {ewhere[:-1]}={_show(entry)} is not an object; fix config.json")
            ropes[lt] = self.read_rope(entry, ewhere, head, lt if per_layer_keys else None)
        if nested and per_layer_keys:
            extra = sorted(set(rope) - {fam.rope_entry.get(t, t) for t in types_})
            if extra:
                self.warnings.append(f"{where}{extra[0]} names no attention type of this model; ignored")
        if not any(r is not None for r in ropes.values()):
            raise ParameterError(f"{self.model_type}: no layer applies a rotary embedding; nothing to build")
        return ropes, tuple(types_)

    def layer_types(self) -> list[str]:
        """The attention type of each layer (config ``layer_types``, else the record's layer rule), or []."""
        fam, cfg = self.fam, self.cfg
        lts = next((cfg[k] for k in fam.aliases.get("layer_types", ("layer_types",)) if cfg.get(k) is not None), None)
        if fam.layers is not None and fam.layers[0] in ("no_rope_layers", "llama4"):
            # the flags decide which layers rotate, whatever layer_types says (smollm3/modeling_smollm3.py
            # use_rope = config.no_rope_layers[layer_idx]; llama4/modeling_llama4.py:318 the same)
            return LAYERS[fam.layers[0]](self, self.n_layers(), fam.layers[1])
        if lts is not None:
            if not isinstance(lts, list) or not all(isinstance(x, str) for x in lts) or not lts:
                raise ParameterError(f"config key {self.key('layer_types')} must be a non-empty list of strings")
            counts = {t: lts.count(t) for t in dict.fromkeys(lts)}
            self.layer_keys["layer_types"] = _Value(
                ", ".join(f"{n} {t}" for t, n in counts.items()), f"config key {self.key('layer_types')}"
            )
            return [LEGACY_LAYER_TYPES.get(x) or x for x in lts]
        if fam.layers is None:
            if fam.nope and self.known:
                # the config class builds the types itself (Qwen3-Next from full_attention_interval, Exaone 4 from
                # sliding_window_pattern, Granite 4 all linear): a rule in its own code, not one posenc has
                cls = (inventory_entry(fam.model_type) or {}).get("config_class") or f"{fam.model_type} config"
                raise ParameterError(
                    f"config has no {self.key('layer_types')}, and transformers' {cls} then builds them itself (a "
                    f"rule posenc has no record of); they decide which layers rotate ({' and '.join(fam.nope)} layers apply "
                    "none), "
                    f"so no table is guessed; add {self.key('layer_types')} (one attention type per layer) to "
                    "config.json"
                )
            return []
        rule, arg = fam.layers
        return LAYERS[rule](self, self.n_layers(), arg)

    def n_layers(self) -> int:
        n = self.get("num_hidden_layers")
        n_layers = n.value if n is not None else 1
        if n_layers > 100_000:
            raise ParameterError(f"config key {self.key('num_hidden_layers')}={n_layers} is out of range")
        return int(n_layers)

    def every(self, arg: str | int, fallback: int) -> int:
        """The period a layer rule reads: a config key (``arg``), its class default, or a fixed ``=N``."""
        if isinstance(arg, str) and arg.startswith("="):
            return int(arg[1:])
        if isinstance(arg, int):
            return arg
        v = self.cfg.get(arg, self.cfg.get(f"_{arg}"))
        if v is not None:
            n = int(_number(v, self.key(arg), integer=True))
            self.layer_keys[arg] = _Value(n, f"config key {self.key(arg)} (which layers are which)")
            return n
        default = self.fam.defaults.get(arg)
        n = int(default) if default is not None else fallback
        self.layer_keys[arg] = _Value(n, f"default of {self.family_name} (which layers are which)")
        return n

    def theta(self, entry: dict[str, Any], where: str, lt: str | None) -> _Value:
        v = self._theta(entry, where, lt)
        if v.value <= 1.0:
            # frequencies base**(-2k/d) must fall; yarn and dynamic divide by log(base)
            raise ParameterError(
                f"{v.origin.removeprefix('config key ')}={v.value!r} is out of range; the RoPE base must be > 1"
            )
        return v

    def _theta(self, entry: dict[str, Any], where: str, lt: str | None) -> _Value:
        fam, cfg = self.fam, self.cfg
        if fam.has("fixed_base"):
            base = float(fam.defaults.get("rope_theta", 10000.0))
            return _Value(base, f"fixed in transformers' {fam.model_type} (create_sinusoidal_positions)")
        if entry.get("rope_theta") is not None:
            return _Value(_number(entry["rope_theta"], f"{where}rope_theta"), f"config key {where}rope_theta")
        lt = fam.rope_entry.get(lt, lt) if lt is not None else None
        key, default = fam.theta.get(lt, fam.theta.get(None, ("rope_theta", 10000.0)))
        if cfg.get(key) is not None:
            return _Value(_number(cfg[key], self.key(key)), f"config key {self.key(key)}")
        if (
            key != "rope_theta"
            and cfg.get("rope_theta") is not None
            and "rope_theta" not in fam.known_top() - {"rope_theta"}
        ):
            self.warnings.append(f"{self.key('rope_theta')} is ignored: transformers' {fam.model_type} reads {key}")
        if not self.known:
            default = 10000.0
        return _Value(default, f"default of {self.family_name}")

    def layer_dim(self, head: dict[str, _Value], lt: str | None) -> _Value:
        """The head width of layer type ``lt``: the record's per-type key (Gemma 4's global_head_dim), else the
        config's head dim."""
        if lt is None or lt not in self.fam.layer_dims:
            return head["dim"]
        key, default = self.fam.layer_dims[lt]
        if self.cfg.get(key) is not None:
            return _Value(_number(self.cfg[key], self.key(key), integer=True), f"config key {self.key(key)} ({lt})")
        return _Value(default, f"default of {self.family_name} ({key}, {lt})")

    def rope_type(self, entry: dict[str, Any], where: str) -> tuple[str, str, str]:
        """(the rope_type as written, the HF rule it names after the record's renames, posenc's scaling)."""
        fam = self.fam
        raw_type = entry.get("rope_type", entry.get("type", "default"))
        if not isinstance(raw_type, str):
            raise ParameterError(f"config key {where}rope_type={_show(raw_type)} is not a string; fix config.json")
        hf_type = fam.renames.get(raw_type, raw_type)
        if raw_type in MROPE_TYPES and not fam.sectioned:
            raise ParameterError(f"{where}rope_type 'mrope' needs a qwen2_vl or qwen2_5_vl model_type")
        if hf_type not in HF_SCALINGS:
            raise ParameterError(
                f"unknown {where}rope_type {raw_type!r}; choose from: {', '.join(HF_SCALINGS)}"
                + ("" if fam.sectioned else ", mrope (Qwen2-VL)")
            )
        return raw_type, hf_type, HF_SCALINGS[hf_type]

    def check_rope_keys(self, entry: dict[str, Any], where: str, rule: str) -> None:
        """Each rope dict key is read by the rule in force, ignored by it (as transformers does), or unknown."""
        fam = self.fam
        for k in entry:
            if k == "mrope_section" and fam.sectioned:
                continue
            if k not in ROPE_KEYS and k not in fam.rope_keys:
                self.unknown.append(f"{where}{k} is a RoPE key posenc does not know")
                continue
            readers = ROPE_KEYS.get(k) or fam.rope_keys.get(k) or ()
            if k in fam.rope_keys and not fam.rope_keys[k]:
                self.ignored[f"{where}{k}"] = f"transformers' {fam.model_type} rotary class never reads it"
                continue
            read = rule in readers if rule != "ntk_alpha" else k in ("rope_type", "type", "rope_theta", "alpha")
            if (readers or rule == "ntk_alpha") and not read:
                self.warnings.append(
                    f"{where}{k} is not read by {self.family_name}'s rope_type {rule!r}; ignored, as transformers does"
                )

    def read_rope(
        self, entry: dict[str, Any], where: str, head: dict[str, _Value], lt: str | None
    ) -> dict[str, _Value]:
        fam = self.fam
        raw_type, hf_type, scaling = self.rope_type(entry, where)
        # Hunyuan: "dynamic" with a (truthy) alpha is transformers' ntk_alpha, a fixed NTK base at every length
        alpha = fam.has("ntk_alpha") and hf_type == "dynamic" and bool(entry.get("alpha"))
        self.check_rope_keys(entry, where, "ntk_alpha" if alpha else hf_type)
        dim = self.layer_dim(head, lt)
        out: dict[str, _Value] = {"dim": dim, "base": self.theta(entry, where, lt)}
        out["layout"] = _Value(fam.pairing, f"layout of {self.family_name}")
        if fam.sin_sign != 1:
            out["sin_sign"] = _Value(fam.sin_sign, f"{self.family_name}'s rotate_half flips the signs (sin negated)")
        if fam.sectioned:
            return self.read_mrope(out, entry, where, raw_type, scaling, head)
        out["scaling"] = _Value(
            scaling,
            f"config key {where}rope_type"
            if "rope_type" in entry or "type" in entry
            else f"default of {self.family_name}",
        )
        if alpha:
            return self.read_ntk_alpha(out, entry, where, head)
        rot_dim = self.read_width(out, entry, where, scaling, dim.value)
        self.read_scaling(out, entry, where, hf_type, scaling, head, rot_dim)
        for name in fam.rules:
            RULE_STEPS.get(name, _no_step)(self, out, entry, where, raw_type, scaling)
        return out

    def read_mrope(
        self, out: dict[str, _Value], entry: dict[str, Any], where: str, raw_type: str, scaling: str,
        head: dict[str, _Value],
    ) -> dict[str, _Value]:  # fmt: skip
        fam = self.fam
        out["_layout"] = out.pop("layout")  # mrope has one layout (half); reported, not a parameter
        if scaling != "none":
            raise ParameterError(f"{where}rope_type {raw_type!r}: posenc's mrope supports the default rule only")
        sec = entry.get("mrope_section", fam.defaults["mrope_section"])
        origin = f"config key {where}mrope_section" if "mrope_section" in entry else f"default of {self.family_name}"
        if not isinstance(sec, list) or not sec:
            raise ParameterError(f"config key {where}mrope_section={_show(sec)} must be a list of integers")
        sec = [_number(x, f"{where}mrope_section", integer=True) for x in sec]
        half = head["dim"].value // 2
        if sum(sec) != half:
            raise ParameterError(
                f"config key {where}mrope_section={sec} sums to {sum(sec)}; it must sum to head_dim/2 = {half} "
                "(the rotated half)"
            )
        out["mrope_section"] = _Value(tuple(sec), origin)
        if fam.mrope_sections == "interleaved":
            flag = entry.get("mrope_interleaved", True)
            if flag is not True:
                raise ParameterError(
                    f"config key {where}mrope_interleaved={_show(flag)}, but transformers' {fam.model_type} always "
                    "interleaves the M-RoPE sections; drop the key or set it to true"
                )
            out["mrope_interleaved"] = _Value(True, f"layout of {self.family_name} (recomposition_frequencies)")
        return out

    def read_ntk_alpha(
        self, out: dict[str, _Value], entry: dict[str, Any], where: str, head: dict[str, _Value]
    ) -> dict[str, _Value]:
        # transformers' compute_ntk_alpha_rope_parameters reads config.head_dim itself (None fails there)
        if "head_dim" not in head["dim"].origin:
            raise ParameterError(
                f"{where}alpha needs config key {self.key('head_dim')}: transformers' {self.family_name} computes "
                "the NTK-alpha base from config.head_dim; add head_dim to config.json"
            )
        out["scaling"] = _Value(
            "ntk", f"config key {where}rope_type 'dynamic' with {where}alpha (transformers' ntk_alpha)"
        )
        out["factor"] = _Value(_number(entry["alpha"], f"{where}alpha"), f"config key {where}alpha")
        out["_rot_dim"] = _Value(head["dim"].value, "the head dim")
        return out

    def partial_factor(self, entry: dict[str, Any], where: str, dim: int) -> _Value | None:
        """partial_rotary_factor: the rope dict's, else the record's partial keys at top level (``=rotary_dim``:
        rotary_dim / head_dim, MiniMax-M2's legacy key), else the class default."""
        fam, cfg = self.fam, self.cfg
        if entry.get("partial_rotary_factor") is not None:
            return _Value(
                _number(entry["partial_rotary_factor"], f"{where}partial_rotary_factor", high=1.0),
                f"config key {where}partial_rotary_factor",
            )
        for key in fam.partial_keys:
            if key.startswith("="):
                name = key[1:]
                if cfg.get(name) is not None:
                    rd = _number(cfg[name], self.key(name), integer=True)
                    if rd > dim:
                        raise ParameterError(f"config key {self.key(name)}={rd} exceeds the head dim {dim}")
                    return _Value(rd / dim, f"config key {self.key(name)} / the head dim")
            elif cfg.get(key) is not None:
                return _Value(_number(cfg[key], self.key(key), high=1.0), f"config key {self.key(key)}")
        if fam.partial_keys[0] != "partial_rotary_factor" and "partial_rotary_factor" in cfg:
            self.warnings.append(
                f"{self.key('partial_rotary_factor')} is ignored: transformers' {fam.model_type} reads "
                f"{fam.partial_keys[0]}"
            )
        if fam.defaults.get("partial_rotary_factor") is not None and self.known:
            return _Value(fam.defaults["partial_rotary_factor"], f"default of {self.family_name}")
        return None

    def read_width(self, out: dict[str, _Value], entry: dict[str, Any], where: str, scaling: str, dim: int) -> int:
        """The rotated width: rotary_dim (GPT-J), else head dim x partial_rotary_factor."""
        fam = self.fam
        rot_dim = dim
        if fam.head_dim == "rotary_dim":
            rd = self.cfg.get("rotary_dim", None) if "rotary_dim" in self.cfg else fam.defaults["rotary_dim"]
            if rd is None:
                raise ParameterError(
                    f"config key {self.key('rotary_dim')}=null: transformers' {fam.model_type} then rotates "
                    "hidden_size features, which fits one head only; set rotary_dim"
                )
            rd = _number(rd, self.key("rotary_dim"), integer=True)
            if rd > dim or rd % 2:
                raise ParameterError(f"config key {self.key('rotary_dim')}={rd} must be even and <= the head dim {dim}")
            origin = (
                f"config key {self.key('rotary_dim')}" if "rotary_dim" in self.cfg else f"default of {fam.model_type}"
            )
            out["rotary_dim"] = _Value(rd, origin)
            rot_dim = rd
        else:
            prf = self.partial_factor(entry, where, dim)
            if prf is not None and (prf.value != 1.0 or scaling == "proportional"):
                if scaling == "none" and fam.has("default_ignores_partial") and self.known:
                    self.warnings.append(
                        f"{prf.origin.removeprefix('config key ')} is ignored: transformers' {fam.model_type} "
                        "default rotary rotates the whole head"
                    )
                else:
                    out["partial_rotary_factor"] = prf
                    rot_dim = int(dim * prf.value)
                    if rot_dim < 2 and scaling != "proportional":
                        raise ParameterError(
                            f"config key {prf.origin.removeprefix('config key ')}={prf.value} rotates "
                            f"{rot_dim} of {dim} features; RoPE needs at least 2"
                        )
        if rot_dim % 2 and scaling != "proportional":
            raise ParameterError(
                f"the head dim {dim} gives {rot_dim} rotated features, an odd number: transformers builds "
                f"{(rot_dim + 1) // 2} frequencies over a width of {rot_dim} (int(head_dim x partial_rotary_factor)), "
                "a table posenc's rope does not build; check head_dim and partial_rotary_factor in config.json"
            )
        out["_rot_dim"] = _Value(rot_dim, "head dim x partial rotary factor" if rot_dim != dim else "the head dim")
        return rot_dim

    def read_mscale_pair(
        self, out: dict[str, _Value], entry: dict[str, Any], where: str, raw_type: str, scaling: str
    ) -> None:
        """Phimoe: cos/sin times short_mscale or long_mscale (by sequence length), inv_freq from short_factor."""
        name = self.fam.model_type
        if scaling != "longrope":
            raise ParameterError(
                f"{where}rope_type {raw_type!r}: posenc reads {name}'s short_mscale/long_mscale with longrope only "
                "(the rule its published configs use); set rope_type to longrope"
            )
        for key in ("short_mscale", "long_mscale"):
            if entry.get(key) is None:
                raise ParameterError(
                    f"{name} with rope_type longrope needs {where}{key} (transformers' PhimoeConfig.validate_rope "
                    "requires it); add it to config.json"
                )
            out[f"_{key}"] = _Value(_number(entry[key], f"{where}{key}"), f"config key {where}{key}")
        if "attention_factor" in out:
            self.warnings.append(
                f"{where}attention_factor is ignored: transformers' {name} multiplies cos/sin by short_mscale or "
                "long_mscale"
            )
            del out["attention_factor"]
        out["long_factor"] = _Value(
            out["short_factor"].value,
            f"config key {where}short_factor (transformers' {name} recomputes inv_freq without seq_len, so "
            "the short factors apply at every length)",
        )

    def read_scaling(
        self,
        out: dict[str, _Value],
        entry: dict[str, Any],
        where: str,
        hf_type: str,
        scaling: str,
        head: dict[str, _Value],
        rot_dim: int,
    ) -> None:
        cfg = self.cfg

        def num(key: str, **kw: Any) -> _Value | None:
            if entry.get(key) is None:
                return None
            return _Value(_number(entry[key], f"{where}{key}", **kw), f"config key {where}{key}")

        def need(key: str, **kw: Any) -> _Value:
            v = num(key, **kw)
            if v is None:
                raise ParameterError(f"rope_type {hf_type!r} needs {where}{key}; the config has none")
            return v

        def max_pos() -> _Value:
            mp = head.get("max_position_embeddings")
            if mp is None:
                raise ParameterError(f"rope_type {hf_type!r} needs max_position_embeddings; the config has none")
            return mp

        def original() -> _Value:
            top = cfg.get("original_max_position_embeddings")
            if top is not None:
                return _Value(
                    _number(top, self.key("original_max_position_embeddings"), integer=True),
                    f"config key {self.key('original_max_position_embeddings')}",
                )
            if self.fam.defaults.get("original_max_position_embeddings") is not None:  # Phi-3's class field
                return _Value(self.fam.defaults["original_max_position_embeddings"], f"default of {self.family_name}")
            v = num("original_max_position_embeddings", integer=True)
            return v if v is not None else _Value(max_pos().value, f"{max_pos().origin} (no original given)")

        if scaling in ("linear", "dynamic"):
            out["factor"] = need("factor")
        if scaling == "dynamic":
            out["original_max_position_embeddings"] = _Value(
                max_pos().value, f"{max_pos().origin} (HF's dynamic rule reads max_position_embeddings)"
            )
        elif scaling == "llama3":
            for key in ("factor", "low_freq_factor", "high_freq_factor"):
                out[key] = need(key)
            out["original_max_position_embeddings"] = original()
            if out["high_freq_factor"].value < out["low_freq_factor"].value:
                # transformers only warns and then flips the smoothing ramp; equal factors (Llama 4) are fine
                raise ParameterError(
                    f"config keys {where}high_freq_factor={out['high_freq_factor'].value} < "
                    f"{where}low_freq_factor={out['low_freq_factor'].value}; llama3 needs high >= low"
                )
        elif scaling in ("yarn", "longrope"):
            omp = original()
            out["original_max_position_embeddings"] = omp
            f = num("factor")
            out["factor"] = (
                f
                if f is not None
                else _Value(max_pos().value / omp.value, f"{max_pos().origin} / original_max_position_embeddings")
            )
            af = num("attention_factor", allow_zero=True)
            if af is not None:
                out["attention_factor"] = af
        if scaling == "yarn":
            for key in ("mscale", "mscale_all_dim"):
                v = num(key, positive=False)
                if v is not None:
                    out[key] = v
            for key, default in (("beta_fast", 32.0), ("beta_slow", 1.0)):
                v = num(key, allow_zero=True)
                # HF: rope_parameters.get(key) or default, so 0 means the default too
                out[key] = v if v is not None and v.value else _Value(default, "default of transformers' yarn")
            if out["beta_fast"].value <= out["beta_slow"].value:
                raise ParameterError(
                    f"config keys {where}beta_fast={out['beta_fast'].value} <= {where}beta_slow="
                    f"{out['beta_slow'].value}; yarn needs beta_fast > beta_slow"
                )
            if entry.get("truncate") is not None:
                if not isinstance(entry["truncate"], bool):
                    raise ParameterError(f"config key {where}truncate={_show(entry['truncate'])} is not true or false")
                out["truncate"] = _Value(entry["truncate"], f"config key {where}truncate")
        elif scaling == "longrope":
            for key in ("short_factor", "long_factor"):
                value = entry.get(key)
                if value is None:
                    raise ParameterError(f"rope_type 'longrope' needs {where}{key}; the config has none")
                if not isinstance(value, list):
                    raise ParameterError(f"config key {where}{key} must be a list of numbers")
                vals = tuple(_number(x, f"{where}{key}") for x in value)
                if len(vals) != rot_dim // 2:
                    raise ParameterError(
                        f"config key {where}{key} has {len(vals)} entries; longrope needs rotated dims / 2 = "
                        f"{rot_dim // 2} (one per frequency)"
                    )
                out[key] = _Value(vals, f"config key {where}{key}")
        elif scaling == "proportional":
            f = num("factor")
            if f is not None:
                out["factor"] = f


# ----- the named rules of the records (records.RULES, HEAD_DIM_RULES, LAYER_RULES) ------------------------------
def _no_step(reader: _Reader, *args: Any) -> None:
    """A rule that acts elsewhere (while reading the base, the width or the layer types)."""


def _mscale_pair(
    reader: _Reader, out: dict[str, _Value], entry: dict[str, Any], where: str, raw_type: str, scaling: str
) -> None:
    if scaling != "none":
        reader.read_mscale_pair(out, entry, where, raw_type, scaling)


def _no_attention_scaling(
    reader: _Reader, out: dict[str, _Value], entry: dict[str, Any], where: str, raw_type: str, scaling: str
) -> None:
    if scaling in ("yarn", "longrope"):
        out["attention_factor"] = _Value(
            1.0, f"transformers' {reader.family_name} does not multiply cos/sin by attention_scaling"
        )


#: records.RULES name -> its step after the scaling rule is read (the others act where their value is read).
RULE_STEPS = {
    "mscale_pair": _mscale_pair,
    "no_attention_scaling": _no_attention_scaling,
    "fixed_base": _no_step,
    "ntk_alpha": _no_step,
    "per_layer_parameters_only": _no_step,
    "default_ignores_partial": _no_step,
}

#: records.HEAD_DIM_RULES name -> how the reader finds the head width.
HEAD_DIM = {
    "config": _Reader.head_from_config,
    "computed": _Reader.head_ignoring_head_dim,
    "qk_rope": _Reader.head_qk_rope,
    "rotary_dim": _Reader.head_computed,
}


def _alternate(reader: _Reader, n: int, arg: str | int) -> list[str]:
    return ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]


def _every_nth_full(reader: _Reader, n: int, arg: str | int) -> list[str]:
    k = reader.every(arg, 1)
    return ["sliding_attention" if (i + 1) % k else "full_attention" for i in range(n)]


def _every_nth_from_zero(reader: _Reader, n: int, arg: str | int) -> list[str]:
    k = reader.every(arg, 1)
    return ["sliding_attention" if i % k else "full_attention" for i in range(n)]


def _flags(reader: _Reader, n: int, arg: str | int) -> list[int]:
    """no_rope_layers (1: the layer rotates, 0: NoPE), else every ``arg``-th layer NoPE."""
    nrl = reader.cfg.get("no_rope_layers")
    if nrl:
        if not isinstance(nrl, list) or not all(x in (0, 1) and not isinstance(x, float) for x in nrl):
            raise ParameterError(f"config key {reader.key('no_rope_layers')} must be a list of 0 and 1")
        off = [i for i, x in enumerate(nrl) if not x]
        shown = f"{len(nrl)} layers, no RoPE in {len(off)}: {', '.join(map(str, off[:6]))}" + (
            ", ..." if len(off) > 6 else ""
        )
        reader.layer_keys["no_rope_layers"] = _Value(shown, f"config key {reader.key('no_rope_layers')}")
        return [int(x) for x in nrl]
    k = reader.every(arg if arg else "no_rope_layer_interval", 4)
    return [int((i + 1) % k != 0) for i in range(n)]


def _llama4(reader: _Reader, n: int, arg: str | int) -> list[str]:
    return ["chunked_attention" if f else "full_attention" for f in _flags(reader, n, arg)]


def _no_rope_layers(reader: _Reader, n: int, arg: str | int) -> list[str]:
    flags = _flags(reader, n, arg)
    lts = reader.cfg.get("layer_types")
    types = lts if isinstance(lts, list) and len(lts) == len(flags) else ["full_attention"] * len(flags)
    return [str(t) if f else "no_rope" for t, f in zip(types, flags, strict=True)]


#: records.LAYER_RULES name -> the attention type of each layer.
LAYERS = {
    "alternate": _alternate,
    "every_nth_full": _every_nth_full,
    "every_nth_sliding_from_zero": _every_nth_from_zero,
    "llama4": _llama4,
    "no_rope_layers": _no_rope_layers,
}


#: pairings a record of posenc applies (records.Record.pairing)
PAIRINGS = ("half", "interleaved")


def _attention_probes(model_type: str) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """``{key: (default observation, [probes that changed it])}`` from the inventory's ``attention_probes``:
    the config keys the attention reads whose other values changed the pairing or which layers rotate."""
    entry = inventory_entry(model_type) or {}
    probes = entry.get("attention_probes") or []
    if not probes:
        return {}
    out: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    for p in probes[1:]:
        for k in p.get("set") or {}:
            out.setdefault(k, (probes[0], []))[1].append(p)
    return out


def _kind(v: Any) -> str:
    """The kind of a config value a probe stands for: values of one kind the probes saw behave alike."""
    return "none" if v is None else type(v).__name__


def _probe_types(model_type: str) -> list[str]:
    """The attention type of each layer the inventory's probes built (the default config's ``layer_types``)."""
    lts = (inventory_entry(model_type) or {}).get("layer_types")
    return [str(t) for t in lts] if isinstance(lts, list) else []


def _nope_types(model_type: str, base: dict[str, Any], hit: dict[str, Any]) -> tuple[str, ...] | None:
    """The layer types that apply no RoPE at a probed value, from the probe's layers (``layer_rope``, one per
    layer of the default config's types); None where a type has layers of both kinds, or no types are known."""
    lts = _probe_types(model_type)
    rope = hit.get("layer_rope") or []
    if not lts or len(rope) > len(lts) or len(rope) != len(base.get("layer_rope") or []):
        return None
    seen: dict[str, set[str]] = {}
    for lt, r in zip(lts, rope):
        seen.setdefault(lt, set()).add(r)
    if any(len(v) != 1 for v in seen.values()) or set(seen) != set(lts):
        return None
    return tuple(sorted(lt for lt, v in seen.items() if v == {"none"}))


def _keys_read(model_type: str) -> set[str]:
    """The top-level config keys the inventory saw ``model_type``'s positional code read (any rope type)."""
    entry = inventory_entry(model_type) if model_type else None
    if entry is None:
        return set()
    out: set[str] = set()
    for keys in (entry.get("keys_read") or {}).values():
        out |= {str(k).split(".")[0] for k in keys}
    return out


def _attention_keys_read(model_type: str) -> set[str]:
    """The top-level config keys the inventory saw ``model_type``'s attention module read when built and run
    (``attention_keys_read``: the attention's own settings, with the position path's arguments among them)."""
    entry = inventory_entry(model_type) if model_type else None
    if entry is None:
        return set()
    return {str(k).split(".")[0] for k in entry.get("attention_keys_read") or ()}


def _record(model_type: str | None) -> tuple[Record | None, str | None]:
    """(the rotary record of ``model_type``, or None with why posenc does not read it)."""
    if not model_type:
        return None, None
    try:
        rec = record_for(model_type)
    except Refused as exc:
        return None, str(exc)
    if rec is not None and rec.scheme not in ROTARY:
        return None, f"its positions are {rec.scheme}, not rotary"
    return rec, None


#: inventory scheme -> why a model of it has no table posenc reads, in the model's terms (no ``read_as`` hint:
#: no rotary family's rules would make its table)
_NOT_READ = {
    "none": "{model_type} applies no positional encoding in any layer (transformers {version}'s own code, as the "
    "inventory observed it): there is no table to build",
    "learned": "{model_type} keeps learned positions in its weights, which posenc does not read yet ({why})",
    "relative": "{model_type} applies relative positions (its attention's own bias), which posenc does not read yet",
    "sinusoidal": "{model_type} adds sinusoidal positions of its own code, which posenc does not read yet",
    "alibi": "{model_type} applies ALiBi biases of its own code, which posenc does not read yet",
}


def _refusal(model_type: str, why: str | None) -> str:
    """Why ``model_type`` has no rotary reading, in the model's terms; the ``read_as`` hint only where reading
    it with a rotary family's rules could be right (never for a model without positions, with learned ones, or
    with a reader of its own)."""
    if why is not None and why.endswith("not rotary"):  # a record of posenc reads them (T5, Bloom, Marian, ...)
        return f"model_type {model_type!r} has no rotary table: {why}; posenc reads them without a rotary reading"
    if model_type in VISION_ROTARY:  # a vision tower: its 2-D rotary over a patch grid (models/vision_rope.py)
        return (
            f"{model_type} is a vision tower: its positions are a 2-D rotary over the patch grid (kind rope-2d, "
            f"preset {VISION_ROTARY[model_type].preset}), built from this config with {ref('grid')} HxW or "
            f"{ref('image_size')} HxW (posenc generate --hf-config CONFIG --grid HxW)"
        )
    if model_type in WINDOW_BIAS:  # a relative bias per attention window (models/vision_bias.py)
        return (
            f"{model_type}'s positions are a relative position bias per attention window: posenc export DIR writes "
            "the index it gathers with, -p table=bias the per-head bias from the weights"
        )
    if model_type in DECOMPOSED:  # per-axis relative positions taken with the queries (models/vision_bias.py)
        return (
            f"{model_type}'s attention takes relative positions per axis with its queries: posenc export DIR writes "
            "the index it gathers with, -p table=bias each layer's rel_pos_h/rel_pos_w from the weights (its "
            "learned pos_embed is not read)"
        )
    entry = inventory_entry(model_type) or {}
    if entry.get("scheme") not in ROTARY:
        from .records import unread_line  # each table posenc does not read, and what the inventory saw of it

        told = unread_line(model_type)
        if told is not None:
            return told
        from .mechanisms import describe  # every component's mechanism, in the model's terms (issue 36)

        told = describe(model_type, entry, TRANSFORMERS_VERSION)
        if told is not None:
            return told
    said = _NOT_READ.get(str(entry.get("scheme")))
    if said is not None:
        seen = entry.get("learned_table") or {}
        why = str(seen.get("status") or "the inventory saw no table gathered by token position")[:120]
        return said.format(model_type=model_type, version=TRANSFORMERS_VERSION, why=why)
    if why is not None:
        return f"model_type {model_type!r}: posenc does not read its rotary tables: {why}" + option_clause(
            f"; pass {ref('read_as')} FAMILY to read it with that family's rules"
        )
    return (
        f"unknown model_type {model_type!r}: it is no model type of transformers {TRANSFORMERS_VERSION} posenc "
        "reads, and no table is guessed"
        + option_clause(f"; check the model's code, then pass {ref('read_as')} FAMILY (e.g. llama)")
    )


def _saved_top(model_type: str) -> set[str] | None:
    """The top-level keys transformers' config class of ``model_type`` writes (its attributes), from the
    inventory; None when unknown."""
    entry = inventory_entry(model_type)
    if entry is None or not entry.get("saved_keys"):
        return None
    prefix = "".join(f"{p}." for p in entry.get("sub_config") or [])
    return {str(k).removeprefix(prefix).split(".")[0] for k in entry["saved_keys"]}


# ----- the former API ----------------------------------------------------------------------------------------
def params_from_hf_config(
    config: Mapping[str, Any], length: int | None = None, *, layer_type: str | None = None
) -> dict[str, Any]:
    """The parameters that reproduce a HF model's rotary tables from its config.json dict (see
    :func:`read_model_config`; kind ``rope``, or ``mrope`` for Qwen2-VL, as :attr:`ModelConfig.kind` says)."""
    return read_model_config(config).params(layer_type, length)


# ----- the reader interface (see :mod:`.readers`) -------------------------------------------------------------
def claims(config: Mapping[str, Any]) -> bool:
    """The RoPE table reads every config no other reader claims (an unknown model type: strictly, generically)."""
    return True


def from_model_config(
    config: dict[str, Any],
    *,
    length: int | None = None,
    layer_type: str | None = None,
    read_as: str | None = None,
    offset: int = 0,
    seq_len: int | None = None,
    **options: Any,
) -> tuple[str, dict[str, Any], list[str], dict[str, str]]:
    """The kind (``rope``, or ``mrope`` for Qwen2-VL), parameters, warnings and metadata notes (``hf_read_as``
    when ``read_as`` was given) of a HF transformers model's rotary tables from its config.json."""
    model = read_model_config(config, read_as=read_as)
    notes = {} if model.assumption is None else {"hf_read_as": model.assumption}
    params = model.params(layer_type, length, offset=offset, seq_len=seq_len)
    return model.kind, params, list(model.warnings), notes


def model_config_layers(
    config: dict[str, Any], *, length: int | None = None, read_as: str | None = None, **options: Any
) -> dict[str, tuple[str, dict[str, Any]] | None]:
    """Every attention type -> ``(kind, parameters)``, None for a NoPE type."""
    model = read_model_config(config, read_as=read_as)
    return {lt: None if p is None else (model.kind, p) for lt, p in model.all_params(length).items()}


def model_config_notes(config: dict[str, Any], *, read_as: str | None = None, **options: Any) -> dict[str, str]:
    """``{"hf_read_as": ...}`` when ``read_as`` made posenc read the config with another family's rules."""
    model = read_model_config(config, read_as=read_as)
    return {} if model.assumption is None else {"hf_read_as": model.assumption}


def describe_model_config(
    config: dict[str, Any], *, layer_type: str | None = None, read_as: str | None = None, **options: Any
) -> dict[str, Any]:
    """What was read, each value with the key or class default it came from."""
    return read_model_config(config, read_as=read_as).report(layer_type)
