"""The positions of HF transformers models that do not rotate: T5 buckets, ALiBi, sinusoids, DeBERTa, learned.

A literal table :data:`FAMILIES`, one entry per ``model_type``, each citing the transformers modeling file and
class it mirrors (transformers 5.x, read in ``src/transformers/models/<m>/modeling_<m>.py``). An entry is data:
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
from typing import Any

from ..errors import ParameterError, ref

_HF = "huggingface/transformers src/transformers/models"
#: Largest size accepted from a config (heads, positions, buckets, ...).
MAX_SIZE = 2**31 - 1


@dataclass(frozen=True)
class Layer:
    """One attention type's table: its posenc ``kind``, the parameters the model's code fixes (``fixed``), and
    where each other parameter comes from: ``keys`` (parameter -> config keys, first found wins; a name that
    starts with ``=`` is computed, see :meth:`PositionsConfig._compute`) and ``defaults`` (the config class's
    value when the config omits every key)."""

    kind: str
    keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)
    #: learned tables: the tensor's name in the weights (a suffix of the saved name) and the first row read
    tensor: str | None = None
    first_row: int | str = 0
    #: named rules where the model's code derives a parameter (see :data:`LAYER_RULES`)
    rules: tuple[str, ...] = ()

    @property
    def learned(self) -> bool:
        """The table lives in the weights (a tensor name), not in the config."""
        return self.tensor is not None


@dataclass(frozen=True)
class Family:
    """How one ``model_type`` places positions: its attention types' :class:`Layer` entries and the code it
    mirrors. ``when``: ``(key, value)`` the config must hold for this reading (Falcon: ``alibi`` true; else the
    RoPE reader takes the config). ``ignored``: keys the model's code does not read -> their value that makes
    no difference (anything else is reported as ignored)."""

    name: str
    reference: str
    layers: dict[str, Layer]
    when: tuple[str, Any] | None = None
    ignored: dict[str, Any] = field(default_factory=dict)
    #: keys the family reads elsewhere or that
    #: cannot change its table (checked, so that no other such key passes unread)
    harmless: tuple[str, ...] = ()
    #: keys older configs carry that the family's transformers 5 config class no longer reads -> the key it reads
    #: (Falcon's n_head: FalconConfig has no attribute_map, so n_head leaves num_attention_heads at 71)
    unread: dict[str, str] = field(default_factory=dict)


def _t5(name: str, reference: str) -> Family:
    keys: dict[str, tuple[str, ...]] = {
        "num_buckets": ("relative_attention_num_buckets",),
        "max_distance": ("relative_attention_max_distance",),
    }
    defaults = {"num_buckets": 32, "max_distance": 128}
    return Family(name, reference, {
        "encoder": Layer("t5", keys, defaults, {"bidirectional": True}),
        "decoder": Layer("t5", keys, defaults, {"bidirectional": False}),
    }, harmless=("n_positions",))  # fmt: skip


def _learned(name: str, reference: str, dim: tuple[str, ...], length: tuple[str, ...], defaults: dict[str, Any],
             tensor: str, first_row: int | str = 0) -> Family:  # fmt: skip
    layer = Layer("learned", {"dim": dim, "length": length}, defaults, tensor=tensor, first_row=first_row)
    return Family(name, reference, {"default": layer})


def _bart(name: str, reference: str) -> Family:
    keys: dict[str, tuple[str, ...]] = {"dim": ("d_model",), "length": ("max_position_embeddings",)}
    defaults = {"dim": 1024, "length": 1024}
    return Family(name, reference, {
        lt: Layer("learned", keys, defaults, tensor=f"{lt}.embed_positions.weight", first_row=2)
        for lt in ("encoder", "decoder")
    })  # fmt: skip


def _fairseq_sinusoids(length: tuple[str, ...], length_default: int, dim_default: int) -> Layer:
    return Layer(
        "sinusoidal",
        {"dim": ("d_model",), "length": length, "padding_idx": ("pad_token_id",)},
        {"dim": dim_default, "length": length_default, "padding_idx": 1},
        {"layout": "split", "freq": "t2t", "offset": 0, "base": 10000.0, "angle_dtype": "float32", "_extra_rows": 2},
        rules=("extra_rows",),
    )


_MARIAN = {"layout": "split", "freq": "paper", "offset": 0, "base": 10000.0}
_BERT_DIMS = {"dim": 768, "length": 512}

#: model_type -> how its positions are read. Keep grouped by scheme.
FAMILIES: dict[str, Family] = {f.name: f for f in (
    _t5("t5", f"{_HF}/t5/modeling_t5.py T5Attention._relative_position_bucket (bidirectional = not is_decoder)"),
    _t5("mt5", f"{_HF}/mt5/modeling_mt5.py MT5Attention._relative_position_bucket (as T5)"),
    _t5("umt5", f"{_HF}/umt5/modeling_umt5.py UMT5Attention._relative_position_bucket (as T5, per layer)"),
    Family("bloom", f"{_HF}/bloom/modeling_bloom.py _get_alibi_slopes, build_alibi_tensor (float32 slopes x j)",
           {"default": Layer("alibi", {"dim": ("n_head", "num_attention_heads")}, {"dim": 8}, {"form": "bloom"})}),
    Family("falcon", f"{_HF}/falcon/modeling_falcon.py build_alibi_tensor (bfloat16 slopes x j), FalconModel.forward "
           "(alibi / sqrt(head_dim))",
           {"default": Layer("alibi", {"dim": ("num_attention_heads",), "length": ("max_position_embeddings",),
                                       "=divide_by": ("n_embed", "hidden_size")},
                             {"dim": 71, "length": 2048, "=divide_by": 4544}, {"form": "falcon"},
                             rules=("divide_by_sqrt_head_dim",))},
           when=("alibi", True), unread={"n_head": "num_attention_heads"},
           harmless=("rope_theta", "rope_scaling", "rope_parameters")),
    Family("mpt", f"{_HF}/mpt/modeling_mpt.py build_mpt_alibi_tensor (max_seq_len; alibi_bias_max not passed: 8)",
           {"default": Layer("alibi", {"dim": ("n_heads",), "length": ("max_seq_len",)}, {"dim": 16, "length": 2048},
                             {"form": "mpt", "max_bias": 8.0})},
           ignored={"attn_config.alibi": True, "attn_config.alibi_bias_max": 8, "learned_pos_emb": False,
                    "attn_config.rope": False},
           harmless=("attn_config.rope_theta", "attn_config.rope_impl", "attn_config.rope_dail_config",
                     "attn_config.rope_hf_config")),
    Family("marian", f"{_HF}/marian/modeling_marian.py MarianSinusoidalPositionalEmbedding.create_weight",
           {"default": Layer("sinusoidal", {"dim": ("d_model",), "length": ("max_position_embeddings",)},
                             {"dim": 1024, "length": 1024}, _MARIAN)},
           harmless=("static_position_embeddings",)),
    Family("pegasus", f"{_HF}/pegasus/modeling_pegasus.py PegasusSinusoidalPositionalEmbedding.create_weight",
           {"default": Layer("sinusoidal", {"dim": ("d_model",), "length": ("max_position_embeddings",)},
                             {"dim": 1024, "length": 1024}, _MARIAN)},
           harmless=("static_position_embeddings",)),
    Family("m2m_100", f"{_HF}/m2m_100/modeling_m2m_100.py M2M100SinusoidalPositionalEmbedding (offset 2, padding_idx "
           "row zero)", {"default": _fairseq_sinusoids(("max_position_embeddings",), 1024, 1024)}),
    Family("speech_to_text", f"{_HF}/speech_to_text/modeling_speech_to_text.py Speech2TextSinusoidalPositionalEmbedding "
           "(offset 2; encoder max_source_positions, decoder max_target_positions)",
           {"encoder": _fairseq_sinusoids(("max_source_positions",), 6000, 256),
            "decoder": _fairseq_sinusoids(("max_target_positions",), 1024, 256)}),
    Family("whisper", f"{_HF}/whisper/modeling_whisper.py sinusoids (encoder embed_positions), "
           "WhisperPositionalEmbedding (decoder, learned)",
           {"encoder": Layer("sinusoidal", {"dim": ("d_model",), "length": ("max_source_positions",)},
                             {"dim": 384, "length": 1500}, {"layout": "split", "freq": "t2t", "offset": 0,
                                                            "base": 10000.0, "angle_dtype": "float32"},
                             rules=("even_dim",)),
            "decoder": Layer("learned", {"dim": ("d_model",), "length": ("max_target_positions",)},
                             {"dim": 384, "length": 448}, tensor="decoder.embed_positions.weight")}),
    Family("deberta-v2", f"{_HF}/deberta_v2/modeling_deberta_v2.py build_relative_position, make_log_bucket_position "
           "(DebertaV2Encoder: max_relative_positions < 1 -> max_position_embeddings)",
           {"default": Layer("deberta", {"position_buckets": ("position_buckets",),
                                         "max_relative_positions": ("max_relative_positions",),
                                         "length": ("max_position_embeddings",)},
                             {"position_buckets": -1, "max_relative_positions": -1, "length": 512},
                             rules=("deberta_relative",))},
           harmless=("position_biased_input", "relative_attention")),
    _learned("gpt2", f"{_HF}/gpt2/modeling_gpt2.py GPT2Model.wpe (nn.Embedding(n_positions, n_embd))",
             ("n_embd", "hidden_size"), ("n_positions", "max_position_embeddings"), {"dim": 768, "length": 1024},
             "wpe.weight"),
    _learned("bert", f"{_HF}/bert/modeling_bert.py BertEmbeddings.position_embeddings (position_ids = arange)",
             ("hidden_size",), ("max_position_embeddings",), _BERT_DIMS, "embeddings.position_embeddings.weight"),
    _learned("roberta", f"{_HF}/roberta/modeling_roberta.py RobertaEmbeddings (positions from padding_idx + 1)",
             ("hidden_size",), ("max_position_embeddings",), _BERT_DIMS, "embeddings.position_embeddings.weight",
             "pad+1"),
    _learned("xlm-roberta", f"{_HF}/xlm_roberta/modeling_xlm_roberta.py XLMRobertaEmbeddings (from padding_idx + 1)",
             ("hidden_size",), ("max_position_embeddings",), _BERT_DIMS, "embeddings.position_embeddings.weight",
             "pad+1"),
    _learned("xlm-roberta-xl", f"{_HF}/xlm_roberta_xl/modeling_xlm_roberta_xl.py XLMRobertaXLEmbeddings (from "
             "padding_idx + 1)", ("hidden_size",), ("max_position_embeddings",), {"dim": 2560, "length": 514},
             "embeddings.position_embeddings.weight", "pad+1"),
    _learned("electra", f"{_HF}/electra/modeling_electra.py ElectraEmbeddings.position_embeddings (embedding_size "
             "wide)", ("embedding_size",), ("max_position_embeddings",), {"dim": 128, "length": 512},
             "embeddings.position_embeddings.weight"),
    Family("distilbert", f"{_HF}/distilbert/modeling_distilbert.py Embeddings.position_embeddings (learned, or "
           "sinusoids written into the same weights when sinusoidal_pos_embds)",
           {"default": Layer("learned", {"dim": ("dim",), "length": ("max_position_embeddings",)},
                             {"dim": 768, "length": 512}, tensor="embeddings.position_embeddings.weight")},
           harmless=("sinusoidal_pos_embds",)),
    _learned("gpt_neo", f"{_HF}/gpt_neo/modeling_gpt_neo.py GPTNeoModel.wpe", ("hidden_size",),
             ("max_position_embeddings",), {"dim": 2048, "length": 2048}, "wpe.weight"),
    _learned("gpt_bigcode", f"{_HF}/gpt_bigcode/modeling_gpt_bigcode.py GPTBigCodeModel.wpe (attribute_map n_embd, "
             "n_positions)", ("n_embd", "hidden_size"), ("n_positions", "max_position_embeddings"),
             {"dim": 768, "length": 1024}, "wpe.weight"),
    _bart("bart", f"{_HF}/bart/modeling_bart.py BartLearnedPositionalEmbedding (offset 2: rows 2..; encoder and "
          "decoder tables)"),
    _bart("mbart", f"{_HF}/mbart/modeling_mbart.py MBartLearnedPositionalEmbedding (offset 2, encoder and decoder)"),
    _learned("opt", f"{_HF}/opt/modeling_opt.py OPTLearnedPositionalEmbedding (offset 2: rows 2..)",
             ("hidden_size",), ("max_position_embeddings",), {"dim": 768, "length": 2048},
             "decoder.embed_positions.weight", 2),
)}  # fmt: skip

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
        for name in ("dim", "length", "num_buckets", "max_distance", "=divide_by"):
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
        if "extra_rows" in layer.rules:
            extra = out.pop("_extra_rows").value
            n = out["length"]
            out["length"] = _Value(n.value + extra, f"{n.origin} + {extra} (offset rows, padding_idx row zero)")
            if out["padding_idx"].value >= out["length"].value:
                raise ParameterError(
                    f"config key pad_token_id={out['padding_idx'].value} is outside the {out['length'].value} "
                    "position rows; fix config.json"
                )
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

    def _warn(self, text: str) -> None:
        if text not in self.warnings:  # values are read once per call: say each thing once
            self.warnings.append(text)

    def _first_row(self, layer: Layer) -> _Value:
        if layer.first_row == "pad+1":
            pad = self._get("pad_token_id")
            p = _int(pad, "pad_token_id", low=0) if pad is not None else 1
            where = "config key pad_token_id" if pad is not None else f"default of {self.family.name}"
            return _Value(p + 1, f"{where} + 1 (positions start after padding_idx)")
        return _Value(layer.first_row, f"{self.family.name}'s module in transformers")

    def _weights_hint(self, layer: Layer) -> str:
        return (
            f"{self.model_type}'s position table is learned: it lives in the weights ({layer.tensor} in "
            "model.safetensors), not in config.json; pass the model directory (config.json + model.safetensors) "
            "as the source"
        )


def read_positions(config: Mapping[str, Any]) -> PositionsConfig | None:
    """The positions reader of ``config``'s ``model_type``, or None when the RoPE reader takes it."""
    mt = config.get("model_type")
    if not isinstance(mt, str) or mt not in FAMILIES:
        pet = config.get("position_embedding_type")
        if isinstance(mt, str) and pet is not None and pet not in _ROTARY:
            raise ParameterError(
                f"config key position_embedding_type={_show(pet)}: posenc has no reader for {mt!r}; its positions "
                "are not RoPE, so no table is guessed"
            )
        return None
    fam = FAMILIES[mt]
    if fam.when is not None:
        key, want = fam.when
        value = config.get(key)
        if value is not None and not isinstance(value, bool):
            raise ParameterError(f"config key {key}={_show(value)} is not true or false; fix config.json")
        if value is not want:
            return None
    reader = PositionsConfig(mt, fam, dict(config))
    for key, read in fam.unread.items():
        if config.get(key) is not None and config.get(read) is None:
            raise ParameterError(
                f"config key {key}={_show(config[key])} is not read by transformers' {fam.name} (it reads {read}); "
                f"rename it to {read} in config.json"
            )
    reader.ignored = _ignored_keys(config, fam)
    for key, same in fam.ignored.items():
        value = reader._get(key)
        if value is not None and value != same:
            reader.warnings.append(
                f"{key}={_show(value)} is ignored: transformers' {fam.name} code does not read it "
                f"(it behaves as {_show(same)})"
            )
    pet = config.get("position_embedding_type")
    if pet is not None and pet not in _ABSOLUTE:
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
    known |= set(fam.ignored) | set(fam.unread) | set(fam.harmless) | {"position_embedding_type", "model_type"}
    if fam.when is not None:
        known.add(fam.when[0])
    names = [k for k, v in config.items() if not isinstance(v, Mapping)]
    names += [f"{k}.{sub}" for k, v in config.items() if isinstance(v, Mapping) for sub in v]
    return {n: f"transformers' {fam.name} positional code never reads it" for n in names if n not in known}


# ----- the reader interface (models/readers.py READERS) ----------------------------------------------------------
def claims(config: Mapping[str, Any]) -> bool:
    """Whether this table reads ``config``: its model_type is a family here (Falcon: unless ``alibi`` is absent or
    false; a bad value is claimed, so that reading it names the key)."""
    mt = config.get("model_type")
    if not isinstance(mt, str) or mt not in FAMILIES:
        return False
    when = FAMILIES[mt].when
    return when is None or config.get(when[0]) not in (None, False)


def _reader(config: Mapping[str, Any], read_as: str | None, kind: str | None = None) -> PositionsConfig:
    """The positions reader of ``config``; refused when it is not one of these families, or with ``read_as``
    (an opt-in of the RoPE reader's for families posenc does not know: these have their own rules)."""
    reader = read_positions(config)
    if reader is None:
        mt = config.get("model_type")
        what = f"model_type {mt!r}" if mt is not None else "a config without model_type"
        raise ParameterError(
            f"{ref('config')}: {what} is not one posenc reads as t5, alibi, sinusoidal, deberta or learned "
            f"positions; drop {ref('kind')} to read it by its own rules"
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
    **options: Any,
) -> tuple[str, dict[str, Any], list[str], dict[str, str]]:
    """The kind, parameters, warnings and metadata notes (none) of the model's position tables."""
    reader = _reader(config, read_as)
    return reader.kind_of(layer_type), reader.params(layer_type, length), list(reader.warnings), {}


def model_config_layers(
    config: dict[str, Any], *, length: int | None = None, read_as: str | None = None, **options: Any
) -> dict[str, tuple[str, dict[str, Any]] | None]:
    """Every attention type -> ``(kind, parameters)`` (a learned type's parameters name its tensor, see
    :meth:`PositionsConfig.all_params`)."""
    return dict(_reader(config, read_as).all_params(length))


def model_config_notes(config: dict[str, Any], *, read_as: str | None = None, **options: Any) -> dict[str, str]:
    """Nothing is assumed in reading these families: no notes."""
    _reader(config, read_as)
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
) -> tuple[Any, dict[str, str]] | None:
    """``(rows, metadata)`` of a learned position table read from the model directory ``path`` (row
    ``first_row`` onwards, as the model indexes it); None when ``path`` holds no weights or the config's layer is
    not learned (the caller then reads the config)."""
    reader = read_positions(config)
    if reader is None or not os.path.isdir(path):
        return None
    _reader(config, read_as)  # refuses read_as
    lt = reader._layer(layer_type)
    layer = reader.family.layers[lt]
    if not layer.learned:
        return None
    single = os.path.join(path, "model.safetensors")
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.isfile(single):
        files = {single: None}
    elif os.path.isfile(index):
        try:
            with open(index, encoding="utf-8") as fh:
                weight_map = json.load(fh).get("weight_map")
        except (OSError, ValueError) as exc:
            raise ParameterError(f"{index}: cannot read ({exc}); fix or remove it") from None
        if not isinstance(weight_map, dict):
            raise ParameterError(f"{index}: no weight_map object; it is not a safetensors index")
        names = [n for n in weight_map if n == layer.tensor or n.endswith("." + str(layer.tensor))]
        # shard names stay inside the model directory (an index naming ../x or /x is not followed)
        files = {os.path.join(path, os.path.basename(str(weight_map[n]))): n for n in names}
    else:
        return None
    found: list[tuple[str, str]] = []
    for file in files:
        header, _ = _header(file)
        found += [(file, n) for n in header if n == layer.tensor or n.endswith("." + str(layer.tensor))]
    if len(found) != 1:
        what = "no tensor" if not found else f"{len(found)} tensors ({', '.join(n for _, n in found)})"
        raise ParameterError(
            f"{path}: {what} named *{layer.tensor} in the weights, where {reader.model_type} keeps its positions; "
            "pass the model's own directory"
        )
    file, name = found[0]
    table = _read_tensor(file, name)
    first = reader._first_row(layer).value
    values = reader._values(lt, None)
    rows = table.shape[0] - first
    if table.ndim != 2 or rows < 1:
        raise ParameterError(
            f"{file}: tensor {name} has shape {list(table.shape)}; expected rows x dim beyond row {first}"
        )
    dim = values["dim"].value
    if table.shape[1] != dim:
        raise ParameterError(
            f"{file}: tensor {name} has {table.shape[1]} columns but {values['dim'].origin} says {dim}; the config and "
            "weights disagree"
        )
    n = rows if length is None else _int(length, "length")
    if n > rows:
        raise ParameterError(f"{name} has {rows} usable rows (from row {first}); lower {ref('length')} to {rows}")
    from .. import __version__

    meta = {
        "posenc_version": __version__, "source": "model weights", "model_type": reader.model_type,
        "weights_file": os.path.basename(file), "weights_tensor": name, "first_row": str(first),
        "reference": reader.family.reference,
    }  # fmt: skip
    return table[first : first + n], meta


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
    """One tensor of a safetensors file, memory-mapped (only its bytes are read)."""
    import numpy as np

    from ..encodings.base import resolve_dtype

    header, start = _header(file)
    entry = header[name]
    dtype = _SAFETENSORS_DTYPES.get(entry.get("dtype"))
    if dtype is None:
        raise ParameterError(f"{file}: tensor {name} has dtype {entry.get('dtype')}; a position table is floating")
    shape = tuple(int(s) for s in entry["shape"])
    a, b = (int(x) for x in entry["data_offsets"])
    dt = resolve_dtype(dtype)
    if b - a != int(np.prod(shape)) * dt.itemsize:
        raise ParameterError(f"{file}: tensor {name}'s offsets do not match its shape; the file is damaged")
    return np.memmap(file, dtype=dt, mode="r", offset=start + a, shape=shape)
