r"""One record per ``model_type``: everything posenc knows about the positions of a transformers model type.

A :class:`Record` is data - the scheme, the pairing, the key aliases and the config class's defaults, the layer
types and which apply no positions, the keys its positional code reads, the transformers file and class it
mirrors, the GGUF architecture ``convert_hf_to_gguf.py`` writes for it - plus the names of the small rules
where its arithmetic differs from the plain reading (:data:`RULES` documents each; the readers hold their
functions). Config reading (:mod:`.hf_config`), the GGUF check's HF side (:mod:`.llamacpp`) and ``--engine``
(:mod:`.engines`, through the config reading) all look a rotary model type up here, so adding a family is one
record. The non-rotary families (T5 buckets, ALiBi, sinusoids, DeBERTa, learned tables read from the weights)
are records too: their layer tables (:class:`Layer`) are read by :mod:`.hf_positions`.

Records come from two places:

* :data:`RECORDS` below, written from each family's ``configuration_<m>.py`` and ``modeling_<m>.py`` of
  transformers :data:`TRANSFORMERS_VERSION`;
* the inventory (``data/transformers_inventory.json``, made by ``tools/inventory`` from transformers' own code,
  every ``model_type`` of its ``CONFIG_MAPPING``): a model type without a record here is read from its inventory
  entry when that entry's reading is plain (:func:`record_for`), and the keys its positional code reads
  (``keys_read``) make the guard of :mod:`.hf_config`: a key that code reads and posenc does not model is an
  error, a key it never reads is reported as ignored, whatever its name.

Imports: this module is data only (no numpy), imported by the readers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from . import data as _data

#: The transformers release the records mirror.
TRANSFORMERS_VERSION = "5.24.0"
_HF = "huggingface/transformers src/transformers/models"
INVENTORY = _data.INVENTORY

#: The named rules a record may list in ``rules`` (the readers implement each; a test checks the names).
RULES: dict[str, str] = {
    "no_attention_scaling": "cos/sin are not multiplied by attention_scaling (DeepSeek-V2's complex freqs_cis)",
    "fixed_base": "the base is fixed in the modeling code (GPT-J's create_sinusoidal_positions: 10000); "
    "rope_theta is never read",
    "mscale_pair": "longrope with short_mscale / long_mscale by sequence length, short factors everywhere (Phimoe)",
    "ntk_alpha": "rope_type dynamic with alpha is a fixed NTK base theta * alpha ** (d / (d - 2)) (Hunyuan)",
    "per_layer_parameters_only": "a flat rope_parameters is ignored: the class keeps per-layer-type entries "
    "(Olmo3Config)",
    "default_ignores_partial": "the default rotary class rotates the whole head: partial_rotary_factor is read by "
    "the scaling rules of modeling_rope_utils only",
}

#: Named rules for the head width the rotary embedding sees.
HEAD_DIM_RULES: dict[str, str] = {
    "config": "head_dim, else hidden_size // num_attention_heads",
    "computed": "hidden_size // num_attention_heads (head_dim is never read)",
    "qk_rope": "qk_rope_head_dim (MLA: the rotated part of each query/key head)",
    "rotary_dim": "rotary_dim features of hidden_size // n_head (GPT-J, CodeGen)",
}

#: Named rules that derive each layer's attention type when config.json has no ``layer_types``.
LAYER_RULES: dict[str, str] = {
    "alternate": "sliding, full, sliding, full, ... (Gemma 2, gpt-oss)",
    "every_nth_full": "every n-th layer full, the rest sliding (n from a config key or the class default)",
    "every_nth_sliding_from_zero": "layer i is full when i % n == 0 (ModernBERT's global_attn_every_n_layers)",
    "no_rope_layers": "no_rope_layers[i] == 0 marks a NoPE layer, else no_rope_layer_interval (every n-th NoPE)",
    "llama4": "Llama 4's no_rope_layers / no_rope_layer_interval: chunked layers rotate, full layers are NoPE",
}


@dataclass(frozen=True)
class Record:
    """How one ``model_type`` places positions (transformers :data:`TRANSFORMERS_VERSION`).

    ``aliases`` maps posenc's canonical key to the keys the config accepts, first wins; ``defaults`` holds the
    config class's values for missing fields. ``theta`` maps each per-layer rope entry (``None``: one shared
    entry) to ``(top-level key holding its base, class default)``. ``layers`` names a :data:`LAYER_RULES`
    entry and its argument; ``nope`` lists the layer types that apply no positions. ``rules`` names
    :data:`RULES` entries. ``reads``: the top-level keys the family's positional code reads beyond posenc's
    common ones (a key outside every list is ignored: that code never reads it).
    """

    model_type: str
    reference: str
    scheme: str = "rope"
    pairing: str = "half"
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    theta: dict[str | None, tuple[str, float]] = field(default_factory=lambda: {None: ("rope_theta", 10000.0)})
    head_dim: str = "config"
    partial_keys: tuple[str, ...] = ("partial_rotary_factor",)
    layers: tuple[str, str | int] | None = None
    nope: tuple[str, ...] = ()
    #: rope_scaling given at top level applies to these per-layer entries (Gemma 3: full only)
    scaling_to: tuple[str, ...] = ()
    #: rope_type renamed by the config class (Phi-3: su/yarn -> longrope; Qwen2-VL: mrope -> default)
    renames: dict[str, str] = field(default_factory=dict)
    #: a rope dict the class fills in when the config has none (gpt-oss)
    default_rope: dict[str, Any] | None = None
    #: rope dict keys of this family only -> the rope_types that read them
    rope_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: M-RoPE sections: "chunked" (Qwen2-VL) or "interleaved" (Qwen3-VL)
    mrope_sections: str = "chunked"
    rules: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    #: a multimodal wrapper: the default model_type of its text_config
    text_model_type: str | None = None
    #: the wrapper's text fields may sit at top level (Qwen2-VL before transformers 5)
    text_at_top: bool = False
    #: the path of the sub-config the rotary settings sit in, read with this record (Dia's decoder_config)
    sub_config: tuple[str, ...] = ()
    #: per layer type, the head width when it is not the config's head dim: (config key, class default)
    #: (Gemma 4's full-attention layers: global_head_dim, 512)
    layer_dims: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: per layer type, the entry of a per-table rope dict it uses when the entries are not named after layer
    #: types (DeepSeek-V4: sliding layers "main", compressed-attention layers "compress")
    rope_entry: dict[str, str] = field(default_factory=dict)
    #: top-level ``(key, value)`` that selects this reading (Falcon's ``alibi: false``; Granite 4's
    #: ``position_embedding_type: rope``); another value applies no rotary embedding here
    when: tuple[str, Any] | None = None
    #: the GGUF architecture convert_hf_to_gguf.py writes for this type, when posenc mirrors the conversion
    gguf_arch: str | None = None
    #: where the record came from: "record" (written here) or "inventory"
    origin: str = "record"
    #: -1 when the model's rotate_half flips the signs (nanochat: cat(x2, -x1)): its scores see sin negated
    sin_sign: int = 1
    #: the non-rotary positions' layer tables (read by :mod:`.hf_positions`): T5, ALiBi, sinusoids, learned
    positions: Family | None = None
    #: a ViT-family table on an image grid (read by :mod:`.vision`): its rows, and how the model resizes it
    vision: Vision | None = None

    def known_top(self) -> set[str]:
        """The top-level keys this record's reading uses."""
        keys = set(COMMON_TOP) | set(self.reads) | {k.lstrip("=") for k in self.partial_keys}
        keys |= {k for names in self.aliases.values() for k in names}
        keys |= {key for key, _ in self.theta.values()}
        if self.head_dim == "rotary_dim":
            keys.add("rotary_dim")
        if self.head_dim == "qk_rope":
            keys.add("qk_rope_head_dim")
        if self.layers is not None and isinstance(self.layers[1], str) and self.layers[1][:1] not in ("", "="):
            keys.add(self.layers[1])
        if self.when is not None:
            keys.add(self.when[0])
        keys |= {key for key, _ in self.layer_dims.values()}
        return keys

    def when_keys(self) -> tuple[str, ...]:
        """The switch key that selects this reading (reported with the values)."""
        return (self.when[0],) if self.when is not None else ()

    def has(self, rule: str) -> bool:
        return rule in self.rules

    @property
    def readers(self) -> tuple[str, ...]:
        """The reader modules of :mod:`posenc_cli.models` that may read this model type, first claim wins
        (:mod:`.readers`): :mod:`.hf_positions` for a non-rotary table, :mod:`.hf_config` for a rotary one, both
        when a switch key picks between them (Falcon: ALiBi with ``alibi: true``, else RoPE)."""
        if self.vision is not None and self.positions is None:
            return (VISION_READER,)
        if self.vision is not None:  # a multimodal wrapper: its vision tower's grid, else its text tower's table
            return (VISION_READER, POSITIONS_READER)
        if self.positions is None:
            return (ROTARY_READER,)
        if self.positions.when is None:
            return (POSITIONS_READER,)
        return (POSITIONS_READER, ROTARY_READER)

    @property
    def sectioned(self) -> bool:
        """The rotary splits its frequencies into M-RoPE sections (temporal, height, width)."""
        return "mrope_section" in self.defaults


#: The reader modules (of this package) of the two kinds of record; :attr:`Record.readers` picks. The rotary
#: reader also reads every model type without a record (strictly, from its inventory entry, or refused).
POSITIONS_READER = "hf_positions"
ROTARY_READER = "hf_config"
#: the reader of ViT-family tables on image grids (a record's ``vision``)
VISION_READER = "vision"

#: Top-level keys every rotary record's reading knows.
COMMON_TOP = ("rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor", "max_position_embeddings",
              "original_max_position_embeddings", "head_dim", "layer_types", "hidden_size", "num_attention_heads",
              "num_hidden_layers")  # fmt: skip

_DEFAULT_FULL = ("default_ignores_partial",)
_GPT2_NAMES: dict[str, tuple[str, ...]] = {"hidden_size": ("n_embd", "hidden_size"), "num_attention_heads": ("n_head", "num_attention_heads"),
               "max_position_embeddings": ("n_positions", "max_position_embeddings")}  # fmt: skip


def _dims(hidden: int, heads: int, max_pos: int, **more: Any) -> dict[str, Any]:
    return {"hidden_size": hidden, "num_attention_heads": heads, "max_position_embeddings": max_pos, **more}


def _wrapper(model_type: str, text: str, reference: str, **kw: Any) -> Record:
    return Record(model_type, reference, scheme="wrapper", text_model_type=text, **kw)


_RECORDS: tuple[Record, ...] = (
    Record("llama", f"{_HF}/llama LlamaConfig, LlamaRotaryEmbedding, apply_rotary_pos_emb (rotate_half)",
           defaults=_dims(4096, 32, 2048), rules=_DEFAULT_FULL, gguf_arch="llama"),
    Record("phi", f"{_HF}/phi PhiConfig (partial_rotary_factor 0.5), PhiRotaryEmbedding (rotate_half, partial)",
           defaults=_dims(2048, 32, 2048, partial_rotary_factor=0.5)),
    Record("mistral", f"{_HF}/mistral MistralConfig, MistralRotaryEmbedding (rotate_half)",
           defaults=_dims(4096, 32, 131072), rules=_DEFAULT_FULL, gguf_arch="llama"),
    Record("qwen2", f"{_HF}/qwen2 Qwen2Config, Qwen2RotaryEmbedding (rotate_half); use_mrope is never read",
           defaults=_dims(4096, 32, 32768), rules=_DEFAULT_FULL, gguf_arch="qwen2"),
    Record("qwen3", f"{_HF}/qwen3 Qwen3Config (head_dim 128), Qwen3RotaryEmbedding, apply_rotary_pos_emb "
           "(rotate_half)", defaults=_dims(4096, 32, 32768, head_dim=128), rules=_DEFAULT_FULL, gguf_arch="qwen3"),
    Record("olmo2", f"{_HF}/olmo2 Olmo2Config, Olmo2RotaryEmbedding, apply_rotary_pos_emb (rotate_half)",
           defaults=_dims(4096, 32, 2048), rules=_DEFAULT_FULL),
    Record("ministral3", f"{_HF}/ministral3 Ministral3Config (default_theta 1e6, head_dim 128; rope dict's "
           "llama_4_scaling_beta scales queries in the attention, never the rotary table), "
           "Ministral3RotaryEmbedding (rotate_half)",
           theta={None: ("rope_theta", 1_000_000.0)}, defaults=_dims(4096, 32, 262144, head_dim=128),
           rope_keys={"llama_4_scaling_beta": ()}, rules=_DEFAULT_FULL),
    Record("minimax_m2", f"{_HF}/minimax_m2 MiniMaxM2Config (legacy rotary_dim -> partial_rotary_factor = "
           "rotary_dim / head_dim, default_theta 5e6), MiniMaxM2RotaryEmbedding (partial), apply_rotary_pos_emb",
           theta={None: ("rope_theta", 5_000_000.0)}, partial_keys=("partial_rotary_factor", "=rotary_dim"),
           defaults=_dims(3072, 48, 196608, head_dim=128)),
    Record("phi3", f"{_HF}/phi3 Phi3Config.convert_rope_params_to_dict (su/yarn -> longrope), Phi3RotaryEmbedding",
           defaults=_dims(3072, 32, 4096, original_max_position_embeddings=4096, partial_rotary_factor=1.0),
           renames={"su": "longrope", "yarn": "longrope"}, gguf_arch="phi3"),
    Record("deepseek_v2", f"{_HF}/deepseek_v2 DeepseekV2Config (head_dim = qk_rope_head_dim), "
           "DeepseekV2RotaryEmbedding (complex freqs_cis times attention_scaling), apply_rotary_emb",
           pairing="interleaved", head_dim="qk_rope", rules=_DEFAULT_FULL,
           defaults=_dims(4096, 32, 2048, qk_rope_head_dim=64), gguf_arch="deepseek2"),
    Record("deepseek_v3", f"{_HF}/deepseek_v3 DeepseekV3Config (head_dim = qk_rope_head_dim), "
           "DeepseekV3RotaryEmbedding, apply_rotary_pos_emb_interleave (rope_interleave, default true)",
           pairing="interleaved", head_dim="qk_rope", rules=_DEFAULT_FULL,
           defaults=_dims(7168, 128, 4096, qk_rope_head_dim=64, rope_interleave=True),
           gguf_arch="deepseek2"),  # llama.cpp conversion/deepseek.py:225 DeepseekV2Model registers V3
    Record("deepseek_v4", f"{_HF}/deepseek_v4 DeepseekV4Config (rope_parameters per table: main, compress; "
           "partial_rotary_factor 0.125 of head_dim 512), DeepseekV4RotaryEmbedding (one table per entry), "
           "DeepseekV4Attention.rope_layer_type (sliding_attention: main; compressed_sparse_attention and "
           "heavily_compressed_attention: compress), apply_rotary_pos_emb (pairs)",
           pairing="interleaved",
           theta={"main": ("rope_theta", 10_000.0), "compress": ("rope_theta", 160_000.0)},
           rope_entry={"sliding_attention": "main", "compressed_sparse_attention": "compress",
                       "heavily_compressed_attention": "compress"},
           default_rope={"main": {"rope_type": "default", "rope_theta": 10_000.0, "partial_rotary_factor": 0.125},
                         "compress": {"rope_type": "default", "rope_theta": 160_000.0,
                                      "partial_rotary_factor": 0.125}},
           defaults=_dims(4096, 64, 1048576, head_dim=512)),
    Record("gpt_neox", f"{_HF}/gpt_neox GPTNeoXConfig.convert_rope_params_to_dict (rotary_emb_base, rotary_pct), "
           "GPTNeoXRotaryEmbedding (rotate_half on the first rotary_pct of the head)",
           theta={None: ("rotary_emb_base", 10000.0)}, partial_keys=("rotary_pct",),
           defaults=_dims(6144, 64, 2048, partial_rotary_factor=0.25)),
    Record("gptj", f"{_HF}/gptj GPTJConfig.attribute_map, create_sinusoidal_positions (base 10000), "
           "rotate_every_two on the first rotary_dim features",
           pairing="interleaved", head_dim="rotary_dim", rules=("fixed_base",), reads=("rotary",),
           aliases=_GPT2_NAMES, defaults=_dims(4096, 16, 2048, rotary_dim=64)),
    Record("codegen", f"{_HF}/codegen CodeGenConfig.attribute_map, create_sinusoidal_positions (base 10000), "
           "rotate_every_two on the first rotary_dim features",
           pairing="interleaved", head_dim="rotary_dim", rules=("fixed_base",),
           aliases=_GPT2_NAMES, defaults=_dims(4096, 16, 2048, rotary_dim=64)),
    Record("cohere", f"{_HF}/cohere CohereConfig (default_theta 500000), CohereRotaryEmbedding "
           "(repeat_interleave), rotate_half on (2k, 2k+1)",
           pairing="interleaved", theta={None: ("rope_theta", 500000.0)}, rules=_DEFAULT_FULL,
           defaults=_dims(8192, 64, 8192), gguf_arch="command-r"),  # llama.cpp conversion/command_r.py:14
    Record("cohere2", f"{_HF}/cohere2 Cohere2Config (head_dim = hidden_size // num_attention_heads, unless "
           "config.json gives head_dim: the config's remaining kwargs are set after __post_init__ and "
           "Cohere2RotaryEmbedding reads it; sliding_window_pattern 4), Cohere2Attention (RoPE only where "
           "sliding_window is set)",
           pairing="interleaved", head_dim="config", layers=("every_nth_full", "sliding_window_pattern"),
           nope=("full_attention",), rules=_DEFAULT_FULL,
           defaults=_dims(8192, 64, 8192, num_hidden_layers=40, sliding_window_pattern=4)),
    Record("glm", f"{_HF}/glm GlmConfig (partial_rotary_factor 0.5), apply_rotary_pos_emb "
           "(cos[..., :r/2].repeat_interleave(2) on the first r features)",
           pairing="interleaved", defaults=_dims(4096, 32, 131072, head_dim=128, partial_rotary_factor=0.5),
           gguf_arch="chatglm"),  # llama.cpp conversion/chatglm.py:11 GlmForCausalLM (freq_base: :154)
    Record("glm4", f"{_HF}/glm4 Glm4Config, apply_rotary_pos_emb as GLM (partial interleaved)",
           pairing="interleaved", defaults=_dims(4096, 32, 131072, head_dim=128, partial_rotary_factor=0.5)),
    Record("llama4_text", f"{_HF}/llama4 Llama4TextConfig (no_rope_layers, default_theta 500000), "
           "Llama4TextRotaryEmbedding (torch.polar), apply_rotary_emb (view_as_complex pairs)",
           pairing="interleaved", theta={None: ("rope_theta", 500000.0)}, layers=("llama4", ""),
           nope=("full_attention",), reads=("no_rope_layers", "no_rope_layer_interval"), rules=_DEFAULT_FULL,
           defaults=_dims(5120, 40, 131072, head_dim=128, num_hidden_layers=48)),
    Record("smollm3", f"{_HF}/smollm3 SmolLM3Config (no_rope_layers from no_rope_layer_interval 4, default_theta "
           "2e6), SmolLM3Attention (use_rope = no_rope_layers[layer_idx]), SmolLM3RotaryEmbedding (rotate_half)",
           theta={None: ("rope_theta", 2_000_000.0)}, layers=("no_rope_layers", "no_rope_layer_interval"),
           nope=("no_rope",), reads=("no_rope_layers",), rules=_DEFAULT_FULL,
           defaults=_dims(2048, 16, 32768, num_hidden_layers=36, no_rope_layer_interval=4)),
    Record("gemma", f"{_HF}/gemma GemmaConfig, GemmaRotaryEmbedding (rotate_half)", rules=_DEFAULT_FULL,
           defaults=_dims(3072, 16, 8192, head_dim=256)),
    Record("gemma2", f"{_HF}/gemma2 Gemma2Config (layer_types alternate sliding/full), Gemma2RotaryEmbedding "
           "(one RoPE for every layer)", layers=("alternate", ""), rules=_DEFAULT_FULL, gguf_arch="gemma2",
           defaults=_dims(2304, 8, 8192, head_dim=256, num_hidden_layers=26)),
    Record("gemma3_text", f"{_HF}/gemma3 Gemma3TextConfig.convert_rope_params_to_dict (rope_theta -> full, "
           "rope_local_base_freq -> sliding, rope_scaling -> full), Gemma3RotaryEmbedding per layer type",
           theta={"full_attention": ("rope_theta", 1_000_000.0),
                  "sliding_attention": ("rope_local_base_freq", 10_000.0)},
           layers=("every_nth_full", "sliding_window_pattern"), scaling_to=("full_attention",), rules=_DEFAULT_FULL,
           defaults=_dims(2304, 8, 131072, head_dim=256, num_hidden_layers=26, sliding_window_pattern=6),
           gguf_arch="gemma3"),
    Record("gemma3n_text", f"{_HF}/gemma3n Gemma3nTextConfig.convert_rope_params_to_dict (rope_theta -> full, "
           "rope_local_base_freq -> sliding, rope_scaling -> full; every 5th layer full), Gemma3nRotaryEmbedding "
           "per layer type", theta={"full_attention": ("rope_theta", 1_000_000.0),
                                    "sliding_attention": ("rope_local_base_freq", 10_000.0)},
           layers=("every_nth_full", "=5"), scaling_to=("full_attention",), rules=_DEFAULT_FULL,
           defaults=_dims(2048, 8, 32768, head_dim=256, num_hidden_layers=35)),
    Record("gemma4_text", f"{_HF}/gemma4 Gemma4TextConfig (global_head_dim 512 for full_attention layers via "
           "per_layer_config; full: proportional RoPE, partial_rotary_factor 0.25, theta 1e6; sliding: theta 1e4; "
           "every 6th layer full), Gemma4TextRotaryEmbedding per layer type (head dim of that type)",
           theta={"full_attention": ("rope_theta", 1_000_000.0), "sliding_attention": ("rope_theta", 10_000.0)},
           layers=("every_nth_full", "=6"), layer_dims={"full_attention": ("global_head_dim", 512)},
           default_rope={"sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
                         "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                            "rope_theta": 1_000_000.0}},
           reads=("per_layer_config",), rules=_DEFAULT_FULL,
           defaults=_dims(2304, 8, 131072, head_dim=256, num_hidden_layers=30)),
    Record("modernbert", f"{_HF}/modernbert ModernBertConfig.convert_rope_params_to_dict (global_rope_theta -> "
           "full, local_rope_theta -> sliding, rope_scaling -> both), ModernBertRotaryEmbedding per layer type",
           theta={"full_attention": ("global_rope_theta", 160_000.0),
                  "sliding_attention": ("local_rope_theta", 10_000.0)},
           layers=("every_nth_sliding_from_zero", "global_attn_every_n_layers"),
           scaling_to=("full_attention", "sliding_attention"), rules=_DEFAULT_FULL,
           defaults=_dims(768, 12, 8192, num_hidden_layers=22, global_attn_every_n_layers=3)),
    Record("gpt_oss", f"{_HF}/gpt_oss GptOssConfig (default yarn factor 32, truncate false, default_theta 150000), "
           "GptOssRotaryEmbedding, _apply_rotary_emb (halves)",
           theta={None: ("rope_theta", 150000.0)}, layers=("alternate", ""), rules=_DEFAULT_FULL, gguf_arch="gpt-oss",
           default_rope={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                         "truncate": False, "original_max_position_embeddings": 4096},
           defaults=_dims(2880, 64, 131072, head_dim=64, num_hidden_layers=24)),
    Record("qwen2_vl_text", f"{_HF}/qwen2_vl Qwen2VLTextConfig (mrope -> default, default_theta 1e6), "
           "Qwen2VLRotaryEmbedding (mrope_section), Qwen2VLModel.get_rope_index",
           scheme="mrope", theta={None: ("rope_theta", 1_000_000.0)}, renames={"mrope": "default"},
           defaults=_dims(8192, 64, 32768, mrope_section=[16, 24, 24]), gguf_arch="qwen2vl"),
    Record("qwen2_5_vl_text", f"{_HF}/qwen2_5_vl Qwen2_5_VLTextConfig (mrope -> default, default_theta 1e6), "
           "Qwen2_5_VLRotaryEmbedding (mrope_section), Qwen2_5_VLModel.get_rope_index",
           scheme="mrope", theta={None: ("rope_theta", 1_000_000.0)}, renames={"mrope": "default"},
           defaults=_dims(8192, 64, 32768, mrope_section=[16, 24, 24]), gguf_arch="qwen2vl"),
    Record("qwen3_vl_text", f"{_HF}/qwen3_vl Qwen3VLTextConfig (default_theta 500000, head_dim 128, "
           "ignore_keys_at_rope_validation mrope_section/mrope_interleaved), Qwen3VLTextRotaryEmbedding "
           "(recomposition_frequencies: frequency j turns with T, H or W by j % 3 inside 3 * mrope_section), "
           "Qwen3VLModel.get_rope_index",
           scheme="mrope", theta={None: ("rope_theta", 500_000.0)}, renames={"mrope": "default"},
           mrope_sections="interleaved", rope_keys={"mrope_interleaved": ("default",)},
           defaults=_dims(4096, 32, 128000, head_dim=128, mrope_section=[24, 20, 20])),
    Record("qwen3_vl_moe_text", f"{_HF}/qwen3_vl_moe Qwen3VLMoeTextConfig (default_theta 500000), "
           "Qwen3VLMoeTextRotaryEmbedding (recomposition_frequencies as Qwen3-VL: interleaved T, H, W), "
           "Qwen3VLMoeModel.get_rope_index",
           scheme="mrope", theta={None: ("rope_theta", 500_000.0)}, renames={"mrope": "default"},
           mrope_sections="interleaved", rope_keys={"mrope_interleaved": ("default",)},
           defaults=_dims(2048, 16, 128000, mrope_section=[24, 20, 20])),
    Record("phimoe", f"{_HF}/phimoe PhimoeConfig (default_theta 1e6; validate_rope: short_mscale, long_mscale), "
           "PhimoeRotaryEmbedding.forward (inv_freq = rope_init_fn(config) without seq_len, so short_factor at "
           "every length; cos/sin times long_mscale if max(position_ids) + 1 > original_max_position_embeddings, "
           "else short_mscale), apply_rotary_pos_emb (rotate_half)",
           theta={None: ("rope_theta", 1_000_000.0)}, rules=("mscale_pair", *_DEFAULT_FULL),
           rope_keys={"short_mscale": ("longrope",), "long_mscale": ("longrope",)},
           defaults=_dims(4096, 32, 131072)),
    Record("nanochat", f"{_HF}/nanochat/modeling_nanochat.py NanoChatRotaryEmbedding (cat(freqs, freqs)), "
           "rotate_half 'with flipped signs' (cat(x2, -x1)), apply_rotary_pos_emb: q cos + rotate_half(q) sin rotates "
           "by -angle, as karpathy/nanochat's apply_rotary_emb (y1 = x1 cos + x2 sin)",
           defaults=_dims(768, 6, 2048), sin_sign=-1),
    Record("olmo3", f"{_HF}/olmo3 Olmo3Config.convert_rope_params_to_dict (rope_scaling -> full_attention only, "
           "rope_theta -> both, default_theta 500000; layer_types: every 4th full), Olmo3RotaryEmbedding (one "
           "inv_freq and attention_scaling per layer type), apply_rotary_pos_emb (rotate_half)",
           theta={"full_attention": ("rope_theta", 500_000.0), "sliding_attention": ("rope_theta", 500_000.0)},
           layers=("every_nth_full", "=4"), scaling_to=("full_attention",),
           rules=("per_layer_parameters_only", *_DEFAULT_FULL), defaults=_dims(4096, 32, 2048, num_hidden_layers=32)),
    Record("ernie4_5", f"{_HF}/ernie4_5 Ernie4_5Config (default_theta 500000, head_dim 128), "
           "Ernie4_5RotaryEmbedding, apply_rotary_pos_emb (cos[..., :d/2].repeat_interleave(2): interleaved pairs)",
           pairing="interleaved", theta={None: ("rope_theta", 500_000.0)}, rules=_DEFAULT_FULL,
           defaults=_dims(1024, 16, 131072, head_dim=128)),
    Record("ernie4_5_moe", f"{_HF}/ernie4_5_moe Ernie4_5_MoeConfig (default_theta 500000), "
           "Ernie4_5_MoeRotaryEmbedding, apply_rotary_pos_emb (cos[..., :d/2].repeat_interleave(2): interleaved)",
           pairing="interleaved", theta={None: ("rope_theta", 500_000.0)}, rules=_DEFAULT_FULL,
           defaults=_dims(2560, 20, 131072)),
    Record("hunyuan_v1_dense", f"{_HF}/hunyuan_v1_dense HunYuanDenseV1Config, HunYuanDenseV1RotaryEmbedding "
           "(rope_type dynamic with alpha -> ntk_alpha: base = rope_theta * alpha ** (head_dim / (head_dim - 2)) "
           "at every length, compute_ntk_alpha_rope_parameters), apply_rotary_pos_emb (rotate_half)",
           rules=("ntk_alpha", *_DEFAULT_FULL), rope_keys={"alpha": ("dynamic",)}, defaults=_dims(4096, 32, 2048)),
    Record("hunyuan_v1_moe", f"{_HF}/hunyuan_v1_moe HunYuanMoEV1Config, HunYuanMoEV1RotaryEmbedding "
           "(rope_type dynamic with alpha -> ntk_alpha, as the dense model), apply_rotary_pos_emb (rotate_half)",
           rules=("ntk_alpha", *_DEFAULT_FULL), rope_keys={"alpha": ("dynamic",)}, defaults=_dims(4096, 32, 2048)),
    Record("falcon", f"{_HF}/falcon FalconConfig (alibi false: rotary), FalconRotaryEmbedding, "
           "apply_rotary_pos_emb (rotate_half); head_dim = hidden_size // num_attention_heads",
           when=("alibi", False), rules=_DEFAULT_FULL,
           defaults=_dims(4544, 71, 2048)),
    Record("granitemoehybrid", f"{_HF}/granitemoehybrid GraniteMoeHybridConfig (position_embedding_type 'rope' "
           "builds GraniteMoeHybridRotaryEmbedding, else no positions), apply_rotary_pos_emb (rotate_half)",
           when=("position_embedding_type", "rope"), rules=_DEFAULT_FULL,
           nope=("linear_attention",), aliases={"layer_types": ("layer_types", "layers_block_type")},
           defaults=_dims(4096, 32, 2048)),
    _wrapper("gemma3", "gemma3_text", f"{_HF}/gemma3 Gemma3Config (text_config: Gemma3TextConfig)",
             gguf_arch="gemma3"),
    _wrapper("gemma3n", "gemma3n_text", f"{_HF}/gemma3n Gemma3nConfig (text_config: Gemma3nTextConfig)"),
    _wrapper("gemma4", "gemma4_text", f"{_HF}/gemma4 Gemma4Config (text_config: Gemma4TextConfig)"),
    _wrapper("llama4", "llama4_text", f"{_HF}/llama4 Llama4Config (text_config: Llama4TextConfig)"),
    _wrapper("llava", "llama", f"{_HF}/llava LlavaConfig (text_config: LlamaConfig by default)"),
    _wrapper("llava_next", "llama", f"{_HF}/llava_next LlavaNextConfig (text_config: LlamaConfig by default)"),
    _wrapper("llava_onevision", "qwen2", f"{_HF}/llava_onevision LlavaOnevisionConfig (text_config: Qwen2Config)"),
    _wrapper("mistral3", "mistral", f"{_HF}/mistral3 Mistral3Config (text_config: MistralConfig by default)"),
    _wrapper("qwen2_vl", "qwen2_vl_text", f"{_HF}/qwen2_vl Qwen2VLConfig (text_config, or text fields at top)",
             text_at_top=True, gguf_arch="qwen2vl"),
    _wrapper("qwen2_5_vl", "qwen2_5_vl_text", f"{_HF}/qwen2_5_vl Qwen2_5_VLConfig (text_config, or text fields at "
             "top)", text_at_top=True, gguf_arch="qwen2vl"),
    _wrapper("paligemma", "gemma", f"{_HF}/paligemma PaliGemmaConfig (text_config: GemmaConfig)"),
    _wrapper("cohere2_vision", "cohere2", f"{_HF}/cohere2_vision Cohere2VisionConfig (text_config: Cohere2Config)"),
    _wrapper("qwen3_vl", "qwen3_vl_text", f"{_HF}/qwen3_vl Qwen3VLConfig (text_config: Qwen3VLTextConfig)"),
    _wrapper("qwen3_vl_moe", "qwen3_vl_moe_text", f"{_HF}/qwen3_vl_moe Qwen3VLMoeConfig (text_config)"),
)  # fmt: skip


# ----- the non-rotary families: T5 buckets, ALiBi, sinusoids, DeBERTa, learned (read by .hf_positions) --------
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
    #: learned tables: the tensor's name in the weights (a suffix of the saved name); learned and sinusoidal
    #: tables: the row of the model's buffer it adds to token 0 (``"pad+1"``: ``pad_token_id + 1``)
    tensor: str | None = None
    first_row: int | str = 0
    #: rows the model's buffer holds beyond the positions it adds (fairseq sinusoids: 2), for ``rows="buffer"``
    buffer_rows: int = 0
    #: named rules where the model's code derives a parameter (``extra_rows``, ``divide_by_sqrt_head_dim``,
    #: ``even_dim``, ``deberta_relative``, ``patch_grid``, ``padding_row_outside``: the zeroed padding_idx row must
    #: not be one of the rows added, XGLM's fixed offset; :meth:`.hf_positions.PositionsConfig._compute` applies
    #: each)
    rules: tuple[str, ...] = ()
    #: a fixed table the model also keeps in its weights (a frozen parameter or a persistent buffer): the names
    #: of the stored copies (suffixes of the saved names), which :mod:`.stored_tables` checks against the formula
    stored: tuple[str, ...] = ()
    #: a fixed table the model computes and never saves (a non-persistent buffer): where and why, said instead
    unstored: str | None = None
    #: the buffer (a suffix of its state-dict name) the model fills with this formula and never saves (fairseq
    #: sinusoids' ``embed_positions.weights``, CTRL's ``pos_encoding``): what the inventory's ``mechanisms`` name
    buffer: str | None = None
    #: a tower's layer (:func:`_tower_family`): the tower's module path its names begin with
    prefix: str = ""
    #: why weights without a ``stored`` copy are the model's own (its class drops the copy when saving:
    #: ``_keys_to_ignore_on_save``); else a missing copy is an error
    unsaved: str | None = None
    #: relative bias tables in the weights (num_buckets x heads, gathered through this layer's buckets): the
    #: saved name's suffix, ``*`` standing for the block index where every block has its own (UMT5)
    bias: str | None = None
    #: learned tables observed by the inventory (:func:`learned_layer`): rows the table holds beyond its length
    #: key (OPT/BART: 2 offset rows), the row the model's init keeps zero (``padding_idx``, as a config key +
    #: add like ``first_row``, or a row number), the factor the module applies to the rows, and the default of
    #: the key ``first_row`` names
    table_rows: int | None = None
    padding_row: int | str | None = None
    scale: float = 1.0
    first_row_default: int | None = None

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
    #: the default config's values of the keys its position modules read, where the inventory observed the table
    #: (a value equal to the observed one is the config the rows were seen at: Grounding DINO's
    #: ``position_embedding_type: sine`` is its vision backbone's, and its text table was observed with it)
    observed_at: dict[str, Any] = field(default_factory=dict)


def _t5(name: str, reference: str, heads: int, *, every_block: bool = False) -> Family:
    # ``_heads`` (num_heads: the columns of relative_attention_bias) is read for the bias only, not by the kind
    keys: dict[str, tuple[str, ...]] = {
        "num_buckets": ("relative_attention_num_buckets",),
        "max_distance": ("relative_attention_max_distance",),
        "_heads": ("num_heads",),
    }
    defaults = {"num_buckets": 32, "max_distance": 128, "_heads": heads}
    block = "*" if every_block else "0"  # T5Stack: has_relative_attention_bias=bool(i == 0); UMT5: every block
    return Family(name, reference, {
        side: Layer("t5", keys, defaults, {"bidirectional": side == "encoder"},
                    bias=f"{side}.block.{block}.layer.0.SelfAttention.relative_attention_bias.weight")
        for side in ("encoder", "decoder")
    }, harmless=("n_positions",))  # fmt: skip


def _fairseq_sinusoids(length: tuple[str, ...], length_default: int, dim_default: int, *,
                       dim: tuple[str, ...] = ("d_model",), pad_default: int = 1) -> Layer:  # fmt: skip
    # the model adds buffer rows padding_idx + 1 .. padding_idx + N to tokens 0..N-1 (positions counted from
    # padding_idx + 1); the buffer holds N + 2 rows, the padding_idx row zero
    return Layer(
        "sinusoidal",
        {"dim": dim, "length": length, "padding_idx": ("pad_token_id",)},
        {"dim": dim_default, "length": length_default, "padding_idx": pad_default},
        {"layout": "split", "freq": "t2t", "base": 10000.0, "angle_dtype": "float32"},
        first_row="pad+1",
        buffer_rows=2,
        rules=("extra_rows",),
        buffer="embed_positions.weights",
    )


_MARIAN = {"layout": "split", "freq": "paper", "offset": 0, "base": 10000.0}
_EMBED_POSITIONS = ("encoder.embed_positions.weight", "decoder.embed_positions.weight")
#: Whisper's ``sinusoids`` (modeling_whisper.py): [sin | cos], t2t frequencies, float32 angles
_WHISPER = {"layout": "split", "freq": "t2t", "offset": 0, "base": 10000.0, "angle_dtype": "float32"}


def _whisper_sinusoids(dim: tuple[str, ...], dim_default: int, *, stored: tuple[str, ...] = (),
                       unstored: str | None = None) -> Layer:  # fmt: skip
    """An audio encoder's table of Whisper's ``sinusoids(max_source_positions, d_model)``."""
    return Layer("sinusoidal", {"dim": dim, "length": ("max_source_positions",)}, {"dim": dim_default, "length": 1500},
                 _WHISPER, rules=("even_dim",), stored=stored, unstored=unstored)  # fmt: skip


def _audio_encoder(name: str, reference: str, dim: tuple[str, ...]) -> Family:
    """A Whisper-style audio encoder whose ``embed_positions`` is a frozen ``nn.Embedding`` the checkpoint fills with
    Whisper's sinusoids (the class never computes them: its ``_init_weights`` leaves a random table)."""
    return Family(name, reference, {"default": _whisper_sinusoids(dim, 1280, stored=("embed_positions.weight",))})


def _omni_audio(name: str, module: str, cls: str, lines: str = "", length: tuple[str, int] | None = None,
                dim_default: int = 1280) -> Family:  # fmt: skip
    """A Qwen-Omni audio encoder: ``SinusoidsPositionEmbedding(max_source_positions, d_model)``, a non-persistent
    buffer of Whisper's sinusoids (``compute_default_singular_positional_embedding``); ``length``: the config key
    and default of its rows where the class passes another (Qwen3-ASR: ``max_position_embeddings``)."""
    where = f"{module} {cls}.positional_embedding"
    layer = _whisper_sinusoids(("d_model",), dim_default, unstored=f"{where} is a non-persistent buffer: the model computes "
                               "it when built and never saves it")  # fmt: skip
    if length is not None:
        layer = replace(layer, keys={**layer.keys, "length": (length[0],)}, defaults={**layer.defaults,
                        "length": length[1]})  # fmt: skip
    return Family(name, f"{_HF}/{module} SinusoidsPositionEmbedding.compute_default_singular_positional_embedding "
                  f"({cls}.positional_embedding: Whisper's sinusoids, a non-persistent buffer{lines})",
                  {"default": replace(layer, buffer="positional_embedding.positional_embedding")})  # fmt: skip


#: model_type -> how its (non-rotary) positions are read. Keep grouped by scheme.
_POSITIONS: dict[str, Family] = {f.name: f for f in (
    _t5("t5", f"{_HF}/t5/modeling_t5.py T5Attention._relative_position_bucket (bidirectional = not is_decoder), "
        "T5Attention.compute_bias (relative_attention_bias in block 0 of each stack: T5Stack)", 8),
    _t5("mt5", f"{_HF}/mt5/modeling_mt5.py MT5Attention._relative_position_bucket, compute_bias (as T5)", 6),
    _t5("umt5", f"{_HF}/umt5/modeling_umt5.py UMT5Attention._relative_position_bucket, compute_bias (as T5; "
        "every block has its own relative_attention_bias)", 6, every_block=True),
    _t5("switch_transformers", f"{_HF}/switch_transformers/modeling_switch_transformers.py "
        "SwitchTransformersAttention._relative_position_bucket, compute_bias (as T5, block 0)", 12),
    _t5("pop2piano", f"{_HF}/pop2piano/modeling_pop2piano.py Pop2PianoAttention._relative_position_bucket, "
        "compute_bias (as T5, block 0)", 8),
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
    Family("marian", f"{_HF}/marian/modeling_marian.py MarianSinusoidalPositionalEmbedding.create_weight (a frozen "
           "nn.Embedding in the encoder and the decoder; MarianMTModel._keys_to_ignore_on_save drops both)",
           {"default": Layer("sinusoidal", {"dim": ("d_model",), "length": ("max_position_embeddings",)},
                             {"dim": 1024, "length": 1024}, _MARIAN, stored=_EMBED_POSITIONS,
                             unsaved="MarianMTModel._keys_to_ignore_on_save drops embed_positions.weight (transformers "
                                     "fills it with create_weight when loading); older checkpoints keep a copy")},
           harmless=("static_position_embeddings",)),
    Family("pegasus", f"{_HF}/pegasus/modeling_pegasus.py PegasusSinusoidalPositionalEmbedding.create_weight (a "
           "frozen nn.Embedding in the encoder and the decoder)",
           {"default": Layer("sinusoidal", {"dim": ("d_model",), "length": ("max_position_embeddings",)},
                             {"dim": 1024, "length": 1024}, _MARIAN, stored=_EMBED_POSITIONS)},
           harmless=("static_position_embeddings",)),
    Family("m2m_100", f"{_HF}/m2m_100/modeling_m2m_100.py M2M100SinusoidalPositionalEmbedding (offset 2, padding_idx "
           "row zero)", {"default": _fairseq_sinusoids(("max_position_embeddings",), 1024, 1024)}),
    # M2M100SinusoidalPositionalEmbedding copied whole ("# Copied from ... M2M100SinusoidalPositionalEmbedding")
    Family("nllb-moe", f"{_HF}/nllb_moe/modeling_nllb_moe.py NllbMoeSinusoidalPositionalEmbedding (l.63-64: copied "
           "from M2M100's; NllbMoeEncoder l.693-697, NllbMoeDecoder l.775-779: max_position_embeddings, d_model, "
           "pad_token_id)", {"default": _fairseq_sinusoids(("max_position_embeddings",), 1024, 1024)}),
    Family("xglm", f"{_HF}/xglm/modeling_xglm.py XGLMSinusoidalPositionalEmbedding (l.54-100: M2M100's get_embedding, "
           "the padding_idx row zero, but position_ids + offset 2 whatever the padding: rows 2..N+1; XGLMModel "
           "l.383-387: max_position_embeddings, d_model, pad_token_id; l.448-465: position_ids = arange)",
           {"default": replace(_fairseq_sinusoids(("max_position_embeddings",), 2048, 1024), first_row=2,
                               rules=("extra_rows", "padding_row_outside"))}),
    Family("kosmos_2_text_model", f"{_HF}/kosmos2/modeling_kosmos2.py Kosmos2TextSinusoidalPositionalEmbedding "
           "(l.529-605: M2M100's __init__, make_weights, get_embedding and position ids, copied; "
           "Kosmos2TextTransformer l.888-892: max_position_embeddings, embed_dim, pad_token_id)",
           {"default": _fairseq_sinusoids(("max_position_embeddings",), 2048, 2048, dim=("embed_dim",))}),
    Family("speech_to_text", f"{_HF}/speech_to_text/modeling_speech_to_text.py Speech2TextSinusoidalPositionalEmbedding "
           "(offset 2; encoder max_source_positions, decoder max_target_positions)",
           {"encoder": _fairseq_sinusoids(("max_source_positions",), 6000, 256),
            "decoder": _fairseq_sinusoids(("max_target_positions",), 1024, 256)}),
    Family("whisper", f"{_HF}/whisper/modeling_whisper.py sinusoids (encoder embed_positions, frozen, filled by "
           "WhisperPreTrainedModel._init_weights), WhisperPositionalEmbedding (decoder, learned)",
           {"encoder": _whisper_sinusoids(("d_model",), 384, stored=("encoder.embed_positions.weight",)),
            "decoder": Layer("learned", {"dim": ("d_model",), "length": ("max_target_positions",)},
                             {"dim": 384, "length": 448}, tensor="decoder.embed_positions.weight")}),
    _audio_encoder("qwen2_audio_encoder", f"{_HF}/qwen2_audio/modeling_qwen2_audio.py Qwen2AudioEncoder."
                   "embed_positions (nn.Embedding, requires_grad_(False); copied from WhisperEncoder, whose "
                   "_init_weights fills it with whisper's sinusoids: checkpoints hold them)", ("d_model", "hidden_size")),
    _audio_encoder("voxtral_encoder", f"{_HF}/voxtral/modeling_voxtral.py VoxtralEncoder.embed_positions "
                   "(nn.Embedding, float32, requires_grad_(False), filled by the checkpoint with whisper's sinusoids)",
                   ("hidden_size", "d_model")),
    _audio_encoder("audioflamingo3_encoder", f"{_HF}/audioflamingo3/modeling_audioflamingo3.py "
                   "AudioFlamingo3Encoder.embed_positions (nn.Embedding, requires_grad_(False), filled by the "
                   "checkpoint with whisper's sinusoids)", ("hidden_size", "d_model")),
    _omni_audio("qwen2_5_omni_audio_encoder", "qwen2_5_omni/modeling_qwen2_5_omni.py", "Qwen2_5OmniAudioEncoder"),
    _omni_audio("qwen3_omni_moe_audio_encoder", "qwen3_omni_moe/modeling_qwen3_omni_moe.py",
                "Qwen3OmniMoeAudioEncoder"),
    _omni_audio("qwen3_asr_encoder", "qwen3_asr/modeling_qwen3_asr.py", "Qwen3ASREncoder", "; l.250-265, "
                "l.342-345: SinusoidsPositionEmbedding(config.max_position_embeddings, config.d_model); "
                "configuration_qwen3_asr.py l.56, l.68: d_model 1024, max_position_embeddings 13",
                ("max_position_embeddings", 13), dim_default=1024),
    Family("ctrl", f"{_HF}/ctrl/modeling_ctrl.py positional_encoding, angle_defn (1 / pow(10000, 2 (i // 2) / d) "
           "in float32; sines of the even columns then cosines of the odd ones: [sin | cos]), CTRLModel.pos_encoding",
           {"default": Layer("sinusoidal", {"dim": ("n_embd",), "length": ("n_positions",)},
                             {"dim": 1280, "length": 256},
                             {"layout": "split", "freq": "paper", "offset": 0, "base": 10000.0,
                              "angle_dtype": "float32"},
                             rules=("even_dim",),
                             unstored="CTRLModel.pos_encoding is a non-persistent buffer (modeling_ctrl.py "
                                      "CTRLModel.__init__): the model computes it when built and never saves it",
                             buffer="pos_encoding")}),
    Family("vit_mae", f"{_HF}/vit_mae/modeling_vit_mae.py build_2d_sinusoidal_position_embedding (cls_token row "
           "zero), ViTMAEEmbeddings.initialize_weights and ViTMAEDecoder.initialize_weights (grid "
           "int(num_patches ** 0.5) square; the h and w halves rotated: [sin_w | cos_w | sin_h | cos_h], MAE's "
           "layout), frozen nn.Parameter position_embeddings / decoder_pos_embed",
           {lt: Layer("sinusoidal-2d", {"dim": (dim,), "=image_size": ("image_size",), "=patch_size": ("patch_size",)},
                      {"dim": default, "=image_size": 224, "=patch_size": 16},
                      {"axis_order": "reversed", "layout": "split", "channels": "exact", "base": 10000.0,
                       "cls_token": True},
                      rules=("patch_grid",), stored=(tensor,))
            for lt, dim, default, tensor in (("encoder", "hidden_size", 768, "embeddings.position_embeddings"),
                                             ("decoder", "decoder_hidden_size", 512, "decoder.decoder_pos_embed"))}),
    Family("deberta-v2", f"{_HF}/deberta_v2/modeling_deberta_v2.py build_relative_position, make_log_bucket_position "
           "(DebertaV2Encoder: max_relative_positions < 1 -> max_position_embeddings)",
           {"default": Layer("deberta", {"position_buckets": ("position_buckets",),
                                         "max_relative_positions": ("max_relative_positions",),
                                         "length": ("max_position_embeddings",)},
                             {"position_buckets": -1, "max_relative_positions": -1, "length": 512},
                             rules=("deberta_relative",))},
           harmless=("position_biased_input", "relative_attention")),
)}  # fmt: skip


def learned_layer(table: dict[str, Any]) -> Layer:
    """The :class:`Layer` of one learned table the inventory observed (``learned_table.tables[layer]``, made by
    ``tools/inventory/learned_rows.py`` running the model's forward): the tensor, the config keys its width and
    rows follow (each verified by a rebuild), the first row the model adds to token 0 (a number, or a config key
    plus a number: ``pad_token_id + 1``), its padding row and factor. Every rule is data observed there."""
    shape = table["shape"]
    first = table["first_row"]
    first_row: int | str = first if isinstance(first, int) else f"{first['key']}+{first['add']}"
    pad = table.get("padding_idx") if table.get("padding_row_zero") else None
    padding_row: int | str | None = pad
    if isinstance(pad, int) and not isinstance(first, int) and table.get("pad_key") == first["key"]:
        padding_row = f"{first['key']}+0"  # the padding row moves with the key, as the first row does
    keys = {"dim": tuple(table.get("dim_keys") or ()), "length": tuple(table.get("length_keys") or ())}
    defaults = {"dim": shape[1], "length": table.get("length_default", shape[0])}
    first_default = first.get("default") if isinstance(first, dict) else None
    return Layer(
        "learned", {k: v for k, v in keys.items() if v}, defaults, tensor=table["tensor"], first_row=first_row,
        table_rows=int(table.get("extra_rows", 0)), padding_row=padding_row, scale=float(table.get("scale", 1.0)),
        first_row_default=first_default if isinstance(first_default, int) else None,
    )  # fmt: skip


def _rows_from(first: Any) -> str:
    return str(first) if isinstance(first, int) else f"{first['key']} + {first['add']}"


#: The schemes a record can be derived from the inventory for (the others need a record written here).
DERIVABLE = ("rope",)
#: Sub-config names of towers that are not the language model: their rotary tables are not the text's.
_NOT_TEXT = ("vision_config", "backbone_config", "audio_config", "detector_config", "word_timestamp_config")


def _learned_families() -> dict[str, Family]:
    """model_type -> its learned tables, for every inventory type whose ``learned_table`` observation found one
    (and which no record above reads)."""
    out: dict[str, Family] = {}
    for mt, entry in sorted((_data.inventory().get("model_types") or {}).items()):
        tables = (entry.get("learned_table") or {}).get("tables") if isinstance(entry, dict) else None
        if not tables or mt in _POSITIONS:
            continue
        sub = entry.get("sub_config") or []
        if entry.get("scheme") in DERIVABLE and not any(part in _NOT_TEXT for part in sub):
            continue  # its text rotates (CLVP): the rotary reading is its record, the tables are named beside it
        module = str(entry.get("modeling_module") or "").replace("models.", "", 1).replace(".", "/")
        where = "; ".join(f"{t['module']}, rows from {_rows_from(t['first_row'])}" for t in tables.values())
        reference = f"{_HF}/{module}.py {where} (observed: tools/inventory/learned_rows.py)"
        observed = dict(entry.get("defaults") or {})
        out[mt] = Family(mt, reference, {lt: learned_layer(t) for lt, t in tables.items()}, observed_at=observed)
    return out


# ----- ViT-family tables on image grids (read by .vision) ------------------------------------------------------
@dataclass(frozen=True)
class Vision:
    """How one model type keeps and resizes its position table over the patch grid (:mod:`.vision` reads it).

    ``tensor``: the table's name in the weights (a suffix of the saved name). ``extra``: the rows that are not
    grid rows, in the table's order, before the grid (``extra_at="start"``) or after it (``"end"``).
    ``resampling``: the ``F.interpolate`` call of its ``interpolate_pos_encoding`` as ``(mode, align_corners,
    antialias, "size" or "scale_factor")``, None when it never resizes. ``keep``: when the table is added as it is
    (``same_count_square``: HF's ``num_patches == num_positions and height == width``; ``same_grid``: the native
    grid; ``always``: the native grid only, the model adding the table as it is; ``same_count``: any image of the
    native patch count, the rows added as they are (resampled otherwise, when ``resampling`` is given); ``never``).
    ``unpositioned``: ``(config key, class default, name)`` of tokens that get no position. ``defaults``: class
    defaults the inventory lacks. ``grid_from``: ``image_size`` (``image_size // patch_size``) or
    ``num_patches`` (its square root). ``tower``: a multimodal wrapper's ``(sub-config, tower model type, prefix
    of the tower's tensors)``. ``fingerprints``: the fingerprints (tools/inventory/vision_tables.py: the normalized
    source's SHA-1) of the code this rule was read from, the function that resizes the table; any other model type
    whose tower runs code of one of them is read by this rule (its tensor, prefix and sub-config as the inventory
    observed them), with no record of its own.
    """

    tensor: str = "embeddings.position_embeddings"
    extra: tuple[str, ...] = ("cls",)
    extra_at: str = "start"
    resampling: tuple[str, bool, bool, str] | None = ("bicubic", False, False, "size")
    keep: str = "same_count_square"
    unpositioned: tuple[str, int, str] | None = None
    defaults: tuple[tuple[str, Any], ...] = ()
    grid_from: str = "image_size"
    tower: tuple[str, str, str] | None = None
    # ----- fields of the tables whose layout or resize code is their own (SAM, DPT, YOLOS, ViTDet, ViTPose,
    # ViViT, TimeSformer, AST); each default is the ViT-family's behaviour above
    #: ``rows``: the weights keep ``(1,) rows x dim``; ``hwc``: a ``1 x H x W x dim`` grid (SAM's ``pos_embed``);
    #: ``chw``: a ``1 x dim x H x W`` one (SAM 2's)
    tensor_layout: str = "rows"
    #: ``sqrt``: the model reshapes the grid rows to ``sqrt x sqrt`` of their count (``torch_int(n ** 0.5)``), so
    #: the native grid is square; ``config``: it takes the grid from the config (any ``h x w``)
    reshape: str = "sqrt"
    #: the config key of the native image size (ViTDet: ``pretrain_image_size``)
    image_key: str = "image_size"
    #: ``(config key, class default, name)`` of tokens whose rows follow the grid, kept as they are (YOLOS's
    #: detection tokens: ``det0, det1, ...``)
    after: tuple[str, int, str] | None = None
    #: what the model does with ``extra``: ``tokens`` (each is its token's position), ``dropped`` (sliced off: no
    #: such token, ViTDet), ``added`` (added to every grid row: no such token, ViTPose)
    extra_use: str = "tokens"
    #: a config key that must be true for the table to exist (SAM ``use_abs_pos``)
    switch: str | None = None
    #: ``(config key, value, why)``: a config value this rule does not model, refused by name (``None``: any true
    #: value; DPT's ``is_hybrid``)
    unmodelled: tuple[tuple[str, Any, str], ...] = ()
    #: ``(tensor suffix, frames key)`` of a per-frame table added to every patch of frame ``t`` (TimeSformer's
    #: ``time_embeddings``; the rows then run patch-major, frame-minor: a grid ``HxWxT``)
    time: tuple[str, str] | None = None
    #: the config key of the frame count of a 3-D tubelet table (ViViT: ``num_frames // tubelet_size[0]`` frames
    #: of ``image_size // tubelet_size[1:]`` patches, rows ``TxHxW``); the patch is ``tubelet_size[1:]``
    tubelets: str | None = None
    #: ``(bins key, length key, frequency stride key, time stride key)`` (AST: a frequency x time grid of a
    #: spectrogram, added as it is: no image size applies)
    strides: tuple[str, str, str, str] | None = None
    #: the model infers the grid height as ``tokens // width`` with the class token counted (TimeSformer): a
    #: one-patch-wide grid gets one row too many, and its code fails there
    height_from_tokens: bool = False
    #: a per-layer table (tensor suffix, config switch): ``(layers - 1) x 1 x rows x dim`` resized like the first
    #: and added after each layer but the last (YOLOS ``mid_position_embeddings``), read with ``-p layer=N``
    per_layer: tuple[str, str] | None = None
    #: other position mechanisms of the model that this table is not (and posenc does not read), in words
    not_read: str = ""
    #: the config key of the image size the model runs at when it differs from the table's (SAM 3: the table is
    #: ``pretrain_image_size``'s grid, tiled to ``image_size``'s); the size used when none is given
    run_image_key: str | None = None
    #: the model accepts only that image size (its patch embeddings refuse another: SegGPT); another is refused
    fixed_input: bool = False
    #: ``(config key, class default, name)`` of counted tokens whose rows come before the grid, in place of
    #: ``extra`` (Pixio's ``n_cls_tokens``: ``cls0, cls1, ...``)
    before: tuple[str, int, str] | None = None
    #: the config key of the table's own ``[h, w]`` grid (SAM 2's ``window_positional_embedding_background_size``)
    grid_key: str | None = None
    #: ``(kernel, stride, padding)`` config keys: the grid at an image size is the patch convolution's output,
    #: ``(size + 2 * padding - kernel) // stride + 1`` per axis (SAM 2's Hiera), not ``size // patch_size``
    conv: tuple[str, str, str] | None = None
    #: ``(tensor suffix, config key)`` of a window table tiled over the resized grid and added (SAM 2's
    #: ``pos_embed_window``, a ``1 x C x w x w`` of the key's first entry; a grid it does not tile is refused)
    window: tuple[str, str] | None = None
    #: the config key of the patch the grid is counted in (``image // patch``; Hiera: ``patch_stride``, its
    #: ``patch_size`` being the convolution's kernel)
    patch_key: str = "patch_size"
    #: the config key of a spatial merge ``m`` (Qwen3-VL's ``spatial_merge_size``): the patch grid, given as
    #: ``--grid`` or ``--image-size`` as the tower's rotary takes it, has sides of multiples of ``m`` and its rows
    #: come in ``m x m`` blocks (block-major, row-major inside a block), as the tower orders its patches
    merge: str | None = None
    #: ``(tensor template with {k}, stage count key, patch key, stride key, reduction key)`` of a model with a table
    #: per stage (PVT), read with ``-p stage=K`` (0 by default): each stage's patch convolution (kernel the stride
    #: key's entry, stride the patch key's) makes its grid from the last one's, and its attention reduces that grid
    #: by a convolution of the reduction key's entry
    stages: tuple[str, str, str, str, str] | None = None
    fingerprints: tuple[str, ...] = ()


_EMBEDDING = "embeddings.position_embedding.weight"  # an nn.Embedding's table (CLIP, SigLIP)


def _vision(model_type: str, reference: str, **kw: Any) -> Record:
    return Record(model_type, f"{_HF}/{reference}", scheme="learned", vision=Vision(**kw))


#: SAM's image encoder table: ``1 x H x W x C`` of ``image_size // patch_size``, present when ``use_abs_pos``, added
#: as it is (the patch embeddings refuse another size), beside the decomposed relative positions its attention adds
_SAM_STYLE: dict[str, Any] = dict(
    tensor="pos_embed", extra=(), resampling=None, keep="always", tensor_layout="hwc", reshape="config",
    switch="use_abs_pos", not_read="the decomposed relative positions its attention adds (rel_pos_h, rel_pos_w; "
    "use_rel_pos)",
)  # fmt: skip

#: ViT-family model types, from transformers 5.24's modeling files (lines as in 5.24.0). ``fingerprints``: the code
#: each rule was read from (tools/inventory/vision_tables.py); every other inventory type whose tower runs one of
#: them is read by that rule with no record (models/vision.py ``reading``)
_VISION: tuple[Record, ...] = (
    # ViT's interpolate_pos_encoding (l.89-127); the same arithmetic in BLIP's (blip/modeling_blip.py l.191-229,
    # BLIP-2's and InstructBLIP's: the attribute named position_embedding) and InternVL's
    # (internvl/modeling_internvl.py l.254-292: patch_size a pair); ViT-MSN's and FLAVA's are ViT's code
    _vision("vit", "vit/modeling_vit.py ViTEmbeddings.interpolate_pos_encoding (l.89-127)",
            fingerprints=("9d3b784b1ed0acf9", "0d0a46abda33a25e", "0575bf341ecd8619")),
    _vision("vit_msn", "vit_msn/modeling_vit_msn.py ViTMSNEmbeddings.interpolate_pos_encoding (l.86-124)",
            fingerprints=("9d3b784b1ed0acf9",)),
    _vision("deit", "deit/modeling_deit.py DeiTEmbeddings.interpolate_pos_encoding (l.94-132: class and "
            "distillation rows)", extra=("cls", "dist"), fingerprints=("e827cfeb1506bf36",)),
    _vision("ijepa", "ijepa/modeling_ijepa.py IJepaEmbeddings.interpolate_pos_encoding (l.70-107: no class row)",
            extra=(), fingerprints=("44071bae81c31bcb",)),
    _vision("dinov2", "dinov2/modeling_dinov2.py Dinov2Embeddings.interpolate_pos_encoding (l.87-123: in float32)",
            fingerprints=("1843e8e6d39a0cb7",)),
    _vision("dinov2_with_registers", "dinov2_with_registers/modeling_dinov2_with_registers.py "
            "Dinov2WithRegistersEmbeddings.interpolate_pos_encoding (l.91-132: antialias=True; registers inserted "
            "after cls at l.149, with no position)", resampling=("bicubic", False, True, "size"),
            unpositioned=("num_register_tokens", 4, "reg"), fingerprints=("3f05f97fe11376b0",)),
    # CLIP's interpolate_pos_encoding: also AltCLIP's, Chinese-CLIP's, MetaCLIP 2's, GIT's, Kosmos-2's, OWL-ViT's,
    # OWLv2's, CLIPSeg's and X-CLIP's (the same code under their prefixes: the inventory compares it)
    _vision("clip_vision_model", "clip/modeling_clip.py CLIPVisionEmbeddings.interpolate_pos_encoding (l.161-200)",
            tensor=_EMBEDDING, fingerprints=("f22d1b3381486d19",)),
    _vision("siglip_vision_model", "siglip/modeling_siglip.py SiglipVisionEmbeddings.interpolate_pos_encoding "
            "(l.137-173: no class row)", tensor=_EMBEDDING, extra=(), fingerprints=("ad386bdfcf76ab16",)),
    _vision("siglip2_vision_model", "siglip2/modeling_siglip2.py Siglip2VisionEmbeddings."
            "resize_positional_embeddings (l.130-174: the weights of bilinear, align_corners=False, antialias=True, "
            "per image, as a matmul)", tensor=_EMBEDDING, extra=(), resampling=("bilinear", False, True, "size"),
            keep="never", grid_from="num_patches", fingerprints=("eb93c9d8748788ae",)),
    _vision("llama4_vision_model", "llama4/modeling_llama4.py Llama4VisionModel (l.1016-1022, l.1084-1100: the "
            "class row last, added without resampling)", tensor="positional_embedding_vlm", extra_at="end",
            resampling=None, keep="same_count", defaults=(("image_size", 448), ("patch_size", 14)),
            fingerprints=("68c6ca3a7bd280d5",)),
    _vision("tipsv2_vision_model", "tipsv2/modeling_tipsv2.py Tipsv2VisionEmbeddings.interpolate_pos_encoding "
            "(l.126-178: bilinear, antialias=True; registers inserted after cls at l.194-196, with no position)",
            resampling=("bilinear", False, True, "size"), unpositioned=("num_register_tokens", 1, "reg"),
            fingerprints=("ba0f57e815953947",)),
    _vision("step3p5_vision", "step3p7/modeling_step3p7.py Step3p7VisionEmbeddings.interpolate_pos_encoding "
            "(l.298-322: bilinear, no class row; kept when the new grid is the native one)", tensor=_EMBEDDING,
            extra=(), resampling=("bilinear", False, False, "size"), keep="same_grid",
            fingerprints=("29b4e996b999be2b",)),
    # the table added as it is (a tower that never resizes it runs at its native size only): Ovis2's forward
    # (l.147-155); AIMv2's (aimv2/modeling_aimv2.py l.181-203, with is_native false: else no table, sinusoids);
    # Granite Docling's (granite_docling/modeling_granite_docling.py l.755-765, called without the flag at l.995)
    _vision("ovis2_vision", "ovis2/modeling_ovis2.py Ovis2VisionEmbeddings.forward (l.147-155: the table added as "
            "it is)", tensor="transformer." + _EMBEDDING, extra=(), resampling=None, keep="same_count",
            fingerprints=("af0ff532b206c2bf", "11084f0aa87cbe82", "c1453bb813421173")),
    # NaViT's buckets: Idefics2's forward; Idefics3's, SmolVLM's and Phi-4-multimodal's are its code
    _vision("idefics2_vision", "idefics2/modeling_idefics2.py Idefics2VisionEmbeddings.forward (l.102-142: each "
            "patch takes the row of the bucket its fractional coordinate falls in, no interpolation)",
            tensor=_EMBEDDING, extra=(), resampling=("bucket", False, False, "size"), keep="never",
            fingerprints=("62639230f865eab0",)),
    # Qwen3-VL's tower: the square num_position_embeddings table resampled per patch by taps and weights
    # (vision_utils.py get_vision_interpolation_indices_and_weights l.231-297, _interpolation_axis_taps_weights
    # l.191-228: bilinear, align_corners=True set at Qwen3VLVisionModel.__init__ l.639-643, the patches in
    # spatial-merge order), gathered and summed in Qwen3VLVisionModel.forward (l.670-696). The same forward in
    # Qwen3-VL-MoE's, Qwen3-Omni's, Cosmos 3 Omni's and Cohere Compass's towers; Qwen3.5's forward
    # (qwen3_5/modeling_qwen3_5.py l.1156-1180, no deepstack) makes the same call (its __init__ l.1136-1140)
    _vision("qwen3_vl_vision", "qwen3_vl/modeling_qwen3_vl.py Qwen3VLVisionModel.forward (l.670-696: pos_embed "
            "gathered by get_vision_interpolation_indices_and_weights, vision_utils.py l.231-297, with "
            "_interpolation_axis_taps_weights l.191-228; mode bilinear, align_corners=True from __init__ l.639-643; "
            "rows in spatial_merge_size blocks)", tensor="pos_embed.weight", extra=(),
            resampling=("bilinear", True, False, "taps"), keep="never", grid_from="num_position_embeddings",
            merge="spatial_merge_size", fingerprints=("17e4ae629eef661d", "6a7dfd11e7d043cf")),
    # PVT: a table per stage, added as it is (its interpolate_pos_encoding reshapes the table to the new grid and
    # resizes it to that same grid: only the table's patch count runs)
    _vision("pvt", "pvt/modeling_pvt.py PvtPatchEmbeddings (l.58-67: (image_size_k // patch_sizes[k])^2 rows, the "
            "last stage's after a class row; image_size_k is image_size, then image_size // 2**(k+1), PvtEncoder "
            "l.331-342; interpolate_pos_encoding l.72-81: the table reshaped to the new grid and resized to that same "
            "grid, so it is added as it is and only at its patch count; forward l.83-102: the grid of the patch "
            "convolution, kernel strides[k], stride patch_sizes[k]); PvtEfficientSelfAttention l.143-168 reduces "
            "each grid by a sequence_reduction_ratios[k] convolution", tensor="encoder.patch_embeddings.0."
            "position_embeddings", extra=(), resampling=None, keep="same_count", reshape="config",
            stages=("encoder.patch_embeddings.{k}.position_embeddings", "num_encoder_blocks", "patch_sizes", "strides",
                    "sequence_reduction_ratios"), fingerprints=("6e8973955f27d2bd",)),
    # multimodal wrappers: their vision tower's table (their text tower's learned table is not read here)
    _vision("clip", "clip/modeling_clip.py CLIPModel.vision_model", tower=("vision_config", "clip_vision_model",
            "vision_model.")),
    _vision("siglip", "siglip/modeling_siglip.py SiglipModel.vision_model", tower=("vision_config",
            "siglip_vision_model", "vision_model.")),
    _vision("siglip2", "siglip2/modeling_siglip2.py Siglip2Model.vision_model", tower=("vision_config",
            "siglip2_vision_model", "vision_model.")),
    # ----- tables whose layout or resize code is their own (tools/golden/vision_rules.py made their goldens)
    _vision("sam_vision_model", "sam/modeling_sam.py SamVisionEncoder (l.1028-1038: pos_embed 1 x H x W x C of "
            "image_size // patch_size, if use_abs_pos; l.1066: added as it is; SamPatchEmbeddings.forward l.124-127 "
            "refuses another image size)", tensor="vision_encoder.pos_embed", extra=(), resampling=None,
            keep="always", tensor_layout="hwc", reshape="config", switch="use_abs_pos",
            not_read="the decomposed relative positions its attention adds (rel_pos_h, rel_pos_w; use_rel_pos): "
            "another table, read with -p table=index or table=bias"),
    _vision("sam_hq_vision_model", "sam_hq/modeling_sam_hq.py SamHQVisionEncoder (l.527-537, l.565: SAM's; "
            "SamHQPatchEmbeddings.forward l.486-489 refuses another image size)", tensor="vision_encoder.pos_embed",
            extra=(), resampling=None, keep="always", tensor_layout="hwc", reshape="config", switch="use_abs_pos",
            not_read="the decomposed relative positions its attention adds (rel_pos_h, rel_pos_w; use_rel_pos): "
            "another table, read with -p table=index or table=bias"),
    _vision("dpt", "dpt/modeling_dpt.py DPTViTEmbeddings._resize_pos_embed (l.201-214: bilinear, size=, at every "
            "size; forward l.216-221)", resampling=("bilinear", False, False, "size"), keep="never",
            unmodelled=(("is_hybrid", None, "DPT-hybrid's embeddings (DPTViTHybridEmbeddings, l.89-183) run a "
                         "ResNet backbone; not read here"),
                        ("backbone_config", None, "its positions are its backbone's (DPTForDepthEstimation l.926-928); "
                         "read the backbone's own checkpoint"))),
    _vision("yolos", "yolos/modeling_yolos.py YolosEmbeddings (l.88-91: cls, the image_size[0] // patch x "
            "image_size[1] // patch grid, then num_detection_tokens rows) and InterpolateInitialPositionEmbeddings "
            "(l.123-144: bicubic, size=, at every size); InterpolateMidPositionEmbeddings (l.147-184) the same per "
            "layer, added after each layer but the last (YolosEncoder.forward l.419-427)",
            after=("num_detection_tokens", 100, "det"), keep="never", reshape="config",
            per_layer=("mid_position_embeddings", "use_mid_position_embeddings")),
    _vision("vitdet", "vitdet/modeling_vitdet.py VitDetEmbeddings.get_absolute_positions (l.64-100: the class row "
            "dropped, the sqrt x sqrt grid resized bicubic unless it is the image's grid; l.111-118)",
            image_key="pretrain_image_size", extra_use="dropped", keep="same_grid",
            switch="use_absolute_position_embeddings", not_read="the decomposed relative positions its attention "
            "adds when use_relative_position_embeddings is true (rel_pos_h, rel_pos_w)"),
    _vision("vitpose_backbone", "vitpose_backbone/modeling_vitpose_backbone.py VitPoseBackboneEmbeddings.forward "
            "(l.88-93: position_embeddings[:, 1:] + position_embeddings[:, :1], no class token); "
            "VitPoseBackbonePatchEmbeddings.forward l.63-67 refuses another image size", resampling=None,
            keep="always", reshape="config", extra_use="added"),
    _vision("vitpose", "vitpose/modeling_vitpose.py VitPoseForPoseEstimation.backbone (l.193: load_backbone)",
            tower=("backbone_config", "vitpose_backbone", "backbone.")),
    _vision("vivit", "vivit/modeling_vivit.py VivitEmbeddings (l.78-81: cls, then num_frames // tubelet_size[0] x "
            "image_size // tubelet_size[1] x image_size // tubelet_size[2] tubelets, l.54-58, row-major; "
            "interpolate_pos_encoding l.87-124 reshapes the tubelet rows to a 2-D sqrt x sqrt grid, which fails for "
            "more than one frame: it runs at its native size only)", resampling=None, keep="always",
            reshape="config", tubelets="num_frames"),
    _vision("timesformer", "timesformer/modeling_timesformer.py TimesformerEmbeddings.forward (l.101-117: the "
            "sqrt x sqrt grid resized nearest, size=, when the token count differs; l.120-142: time_embeddings "
            "added per frame, the tokens then patch-major, frame-minor)", resampling=("nearest", False, False,
            "size"), keep="same_count", time=("time_embeddings", "num_frames"), height_from_tokens=True,
            unmodelled=(("attention_type", "space_only", "space_only runs each frame as its own sequence with no "
                         "time table; not read here"),)),
    _vision("audio-spectrogram-transformer", "audio_spectrogram_transformer/modeling_audio_spectrogram_transformer"
            ".py ASTEmbeddings (l.76-96: cls, distillation, then the (num_mel_bins - patch_size) // frequency_stride "
            "+ 1 x (max_length - patch_size) // time_stride + 1 frequency x time grid, l.82-87; added as it is) and "
            "ASTPatchEmbeddings.forward (l.57-61: frequency-major rows)", extra=("cls", "dist"), resampling=None,
            keep="always", reshape="config", grid_from="strides",
            strides=("num_mel_bins", "max_length", "frequency_stride", "time_stride")),
    # SAM-style OCR vision encoders: a 1 x H x W x C pos_embed (and the decomposed relative positions SAM adds)
    _vision("got_ocr2_vision", "got_ocr2/modeling_got_ocr2.py GotOcr2VisionEncoder (l.415-425: pos_embed 1 x H x W "
            "x C, if use_abs_pos; l.452-453: added as it is; GotOcr2PatchEmbeddings.forward l.350-353 refuses another "
            "image size)", **_SAM_STYLE),
    _vision("pp_formulanet_vision", "pp_formulanet/modeling_pp_formulanet.py PPFormulaNetVisionModel (l.442-451, "
            "l.480-481: SAM's; PPFormulaNetPatchEmbeddings.forward l.378-380 refuses another image size)",
            **_SAM_STYLE),
    _vision("slanext_vision", "slanext/modeling_slanext.py SLANeXtVisionEncoder (l.474-483, l.511-512: SAM's; "
            "SLANeXtPatchEmbeddings.forward l.410-412 refuses another image size)", **_SAM_STYLE),
    _vision("deepseek_ocr2_sam_vision_model", "deepseek_ocr2/modeling_deepseek_ocr2.py DeepseekOcr2SamVisionEncoder "
            "(l.539-549: pos_embed 1 x H x W x C; forward l.570-573 and interpolate_pos_encoding l.582-597: bicubic, "
            "antialias=True, size=, in float32, unless the grid is the table's)",
            **{**_SAM_STYLE, "resampling": ("bicubic", False, True, "size"), "keep": "same_grid"}),
    _vision("unlimited_ocr_sam_vision_model", "unlimited_ocr/modeling_unlimited_ocr.py UnlimitedOcrSamVisionEncoder "
            "(l.564-574, forward l.595-598, interpolate_pos_encoding l.607-622: DeepSeek-OCR2's)",
            **{**_SAM_STYLE, "resampling": ("bicubic", False, True, "size"), "keep": "same_grid"}),
    _vision("sam3_vit_model", "sam3/modeling_sam3.py Sam3ViTEmbeddings (l.603-605: no class row, the "
            "pretrain_image_size // patch_size grid, l.573-578; _tile_position_embeddings l.610-638: the sqrt x sqrt "
            "grid tiled and cropped to the image's grid, not interpolated, unless it is that grid; forward "
            "l.645-657); the model runs at image_size", extra=(), resampling=("tile", False, False, "size"),
            keep="same_grid", image_key="pretrain_image_size", run_image_key="image_size",
            not_read="the 2-D rotary its attention applies (Sam3ViTRotaryEmbedding, l.406)"),
    _vision("sam3_vision_model", "sam3/modeling_sam3.py Sam3VisionModel.backbone (l.1095: AutoModel of "
            "backbone_config, a sam3_vit_model)", tower=("backbone_config", "sam3_vit_model", "backbone.")),
    _vision("seggpt", "seggpt/modeling_seggpt.py SegGptEmbeddings (l.141-142: cls + the pretrain_image_size grid; "
            "interpolate_pos_encoding l.145-161: the class row dropped, bicubic, size=, unless the grid is the "
            "table's; forward l.180-189: the same rows added to the input's and the prompt's patches); "
            "SegGptPatchEmbeddings.forward l.116-118 accepts image_size only", image_key="pretrain_image_size",
            run_image_key="image_size", fixed_input=True, extra_use="dropped", keep="same_grid",
            not_read="the decomposed relative positions its attention adds when use_relative_position_embeddings "
            "is true (rel_pos_h, rel_pos_w)"),
    _vision("mgp-str", "mgp_str/modeling_mgp_str.py MgpstrEmbeddings (l.76-84: cls + the image_size // patch_size "
            "grid, h x w; forward l.87-99: added as it is, another image size refused)", tensor="embeddings.pos_embed",
            resampling=None, keep="always", reshape="config",
            unmodelled=(("distilled", None, "a distilled MGP-STR keeps 2 rows before the grid but adds 1 token "
                         "(l.78, l.82-84): its own forward fails"),)),
    _vision("pixio", "pixio/modeling_pixio.py PixioEmbeddings (l.79-82: n_cls_tokens rows, then the grid; "
            "interpolate_pos_encoding l.88-125: bicubic, size=, in float32, unless a square image of the native "
            "patch count)", before=("n_cls_tokens", 8, "cls"), fingerprints=("e7c3868cdc43601f",)),
    _vision("sam2_hiera_det_model", "sam2/modeling_sam2.py Sam2HieraDetModel (l.615-620: pos_embed 1 x C x the "
            "window_positional_embedding_background_size grid, pos_embed_window 1 x C x window_size_per_stage[0] "
            "squared; _get_pos_embed l.637-643: bicubic, size=, to the patch convolution's grid (Sam2PatchEmbeddings "
            "l.125-131), at every size, plus the window table tiled; forward l.656)", tensor="pos_embed", extra=(),
            keep="never", tensor_layout="chw", reshape="config", grid_key="window_positional_embedding_background_size",
            conv=("patch_kernel_size", "patch_stride", "patch_padding"),
            window=("pos_embed_window", "window_size_per_stage"), run_image_key="image_size"),
    _vision("sam2_vision_model", "sam2/modeling_sam2.py Sam2VisionModel.backbone (l.688: AutoModel of "
            "backbone_config, a sam2_hiera_det_model)", tower=("backbone_config", "sam2_hiera_det_model",
            "backbone.")),
    _vision("hiera", "hiera/modeling_hiera.py HieraEmbeddings (l.245-252: no class row, image_size // patch_stride; "
            "interpolate_pos_encoding l.254-290: bicubic, size=, height // patch_stride, unless a square image of the "
            "native patch count; forward l.307-309: added to the patch convolution's tokens, HieraPatchEmbeddings "
            "l.165-171, before they are unrolled)", extra=(), patch_key="patch_stride",
            conv=("patch_size", "patch_stride", "patch_padding")),
    # wrappers whose vision tower (or backbone) holds the table: its sub-config's model type decides the code
    _vision("sam", "sam/modeling_sam.py SamModel.vision_encoder (l.1118)", tower=("vision_config",
            "sam_vision_model", "")),
    _vision("sam_hq", "sam_hq/modeling_sam_hq.py SamHQModel.vision_encoder (l.1243)", tower=("vision_config",
            "sam_hq_vision_model", "")),
    _vision("depth_anything", "depth_anything/modeling_depth_anything.py DepthAnythingForDepthEstimation.backbone "
            "(l.320: load_backbone of backbone_config, DINOv2 by default: Dinov2Embeddings runs)",
            tower=("backbone_config", "dinov2", "backbone.")),
    _vision("prompt_depth_anything", "prompt_depth_anything/modeling_prompt_depth_anything.py "
            "PromptDepthAnythingForDepthEstimation.backbone (l.378: load_backbone of backbone_config, DINOv2 by "
            "default)", tower=("backbone_config", "dinov2", "backbone.")),
)  # fmt: skip


#: the inputs of a component whose tables lie over a patch grid or image features (read by :mod:`.vision`)
VISION_INPUTS = ("vision", "video", "features")


def table_mechanisms(entry: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``[(component, mechanism, tensor), ...]``: every ``learned`` or ``fixed`` table the inventory's
    ``mechanisms`` saw in a component that is not a vision one (those are the vision readers')."""
    out = []
    for m in entry.get("mechanisms") or []:
        if m.get("mechanism") in ("learned", "fixed") and m.get("input") not in VISION_INPUTS:
            for tensor in str(m.get("tensor") or m.get("module", "").split(" ")[0]).split(", "):
                if (str(m["component"]), str(m["mechanism"]), tensor) not in out:
                    out.append((str(m["component"]), str(m["mechanism"]), tensor))
    return out


def _prefixed(layer: Layer, config: str, module: str) -> Layer:
    """``layer`` of a tower's own model type as its wrapper holds it: config keys under the tower's sub-config,
    tensors under the tower's module path."""
    keys = {k: tuple(f"{config}{key}" for key in v) for k, v in layer.keys.items()}

    def rule(row: Any) -> Any:  # a row given by a config key + n: the key under the tower's sub-config
        return f"{config}{'pad_token_id+1' if row == 'pad+1' else row}" if isinstance(row, str) else row

    return replace(layer, keys=keys, first_row=rule(layer.first_row), padding_row=rule(layer.padding_row), tensor=None if layer.tensor is None else f"{module}{layer.tensor}",
                   stored=tuple(f"{module}{t}" for t in layer.stored),
                   buffer=None if layer.buffer is None else f"{module}{layer.buffer}", prefix=module,
                   unstored=None if layer.unstored is None else f"{module.rstrip('.')}: {layer.unstored}")  # fmt: skip


def _tower_family(mt: str, entry: dict[str, Any], families: dict[str, Family]) -> Family | None:
    """The tables of ``mt``'s components that are towers of another model type (the inventory entry whose
    ``model_class`` is the component's root class: Qwen2-Audio's ``audio_tower`` is a ``Qwen2AudioEncoder``,
    model type ``qwen2_audio_encoder``) with a family of its own, under the tower's sub-config and module prefix;
    only components where the inventory saw a learned or fixed table."""
    classes = _model_classes()
    comps = entry.get("components") or {}
    layers: dict[str, Layer] = {}
    refs = []
    own = families.get(mt)
    for comp in dict.fromkeys(c for c, _, _ in table_mechanisms(entry)):
        if comp == "model" or comp not in comps:
            continue
        if own is not None and all(covers(own, t) for c, _, t in table_mechanisms(entry) if c == comp):
            continue
        path, _, cls = str(comps[comp].get("module", "")).partition(" ")
        sub = classes.get(cls)
        fam = families.get(sub) if sub is not None and sub != mt else None
        if fam is None or not path:
            continue
        name = comp.removesuffix("_config").replace("_config.", ".")
        for lt, layer in fam.layers.items():
            layers[name if len(fam.layers) == 1 else f"{name}.{lt}"] = _prefixed(layer, f"{comp}.", f"{path}.")
        refs.append(f"{fam.reference} (the {path} tower: {cls}, model type {sub})")
    if not layers:
        return None
    return Family(mt, "; ".join(refs), layers)


@cache
def _model_classes() -> dict[str, str]:
    """model class name -> the inventory's model type built as it (a class several types build is left out)."""
    seen: dict[str, list[str]] = {}
    for mt, entry in (_data.inventory().get("model_types") or {}).items():
        if isinstance(entry, dict) and entry.get("model_class"):
            seen.setdefault(str(entry["model_class"]), []).append(mt)
    return {cls: types[0] for cls, types in seen.items() if len(types) == 1}


def covers(fam: Family, tensor: str) -> str | None:
    """The layer of ``fam`` that reads or generates the table the inventory names ``tensor`` (its learned
    ``tensor``, a ``stored`` copy, or the buffer its ``unstored`` note names), else None."""
    for lt, layer in fam.layers.items():
        if not tensor.startswith(layer.prefix):
            continue
        inner = tensor.removeprefix(layer.prefix)  # a tower's names: the tower's own, under its module path
        names = [n.removeprefix(layer.prefix) for n in (layer.tensor, *layer.stored, layer.buffer) if n]
        if any(inner == n or inner.endswith("." + n) or n.endswith("." + inner) for n in names):
            return lt
    return None


def unread_tables(model_type: str, family: Family | None = None) -> list[tuple[str, str, str]]:
    """``[(component, tensor, why), ...]``: every learned or fixed table the inventory saw in a non-vision component
    of ``model_type`` (:func:`table_mechanisms`) that neither ``family`` (the type's own positions, when it has
    some) nor its towers' (:func:`tower_family`) read; ``why`` is what the inventory's observation of its rows saw
    (``learned_table``: ``unread`` per tensor, else its ``status``; tools/inventory/learned_rows.py)."""
    entry = _data.model_type_record(model_type)
    if entry is None:
        return []
    towers = tower_family(model_type)
    seen = entry.get("learned_table") or {}
    unread: dict[str, str] = dict(seen.get("unread") or {})
    out: list[tuple[str, str, str]] = []
    for comp, mechanism, tensor in table_mechanisms(entry):
        if any(f is not None and covers(f, tensor) for f in (family, towers)):
            continue
        why = unread.get(tensor) or next((w for t, w in unread.items() if tensor.startswith(t + ".")), None)
        observed = next((t for t in (seen.get("tables") or {}).values() if t.get("tensor") == tensor), None)
        if why is None and observed is not None:  # observed, but the type's record reads other positions
            kinds = ", ".join(dict.fromkeys(layer.kind for layer in family.layers.values())) if family else "rotary"
            why = (f"observed (rows from {_rows_from(observed['first_row'])}), but {model_type}'s record reads its "
                   f"{kinds} positions and not this table")  # fmt: skip
        if why is None:
            why = str(seen.get("status") or f"the inventory observed no rows of this {mechanism} table")
        if mechanism == "fixed":  # a table its code fills: what is missing is the formula's record, not rows
            why += "; a fixed table: posenc writes one only from a record of its formula, which this type lacks"
        out.append((comp, tensor, why))
    return out


def unread_line(model_type: str, family: Family | None = None) -> str | None:
    """One line naming each table :func:`unread_tables` finds, its component and why posenc does not read it."""
    found = unread_tables(model_type, family)
    if not found:
        return None
    said = "; ".join(f"{tensor} (component {comp}): {why}" for comp, tensor, why in found)
    return f"posenc does not read {model_type}'s position table {said}"


@cache
def tower_family(model_type: str) -> Family | None:
    """The tables of ``model_type``'s towers read as their own model types' (:func:`_tower_family`), or None."""
    entry = _data.model_type_record(model_type)
    if entry is None:
        return None
    families = {mt: r.positions for mt, r in RECORDS.items() if r.positions is not None}
    return _tower_family(model_type, entry, families)


#: fingerprint (tools/inventory/vision_tables.py) -> what the code does, for the towers' code read and not
#: reproduced: a type whose tower runs it is refused with these words (one with code never read: "not reviewed")
REVIEWED_REFUSALS: dict[str, str] = {
    # radio/modeling_radio.py RadioPatchEmbeddings._interpolate_position_embedding (l.110-120)
    "cb12ca2f64fbd647": "resized bilinearly to a max(h, w) square, cropped to the grid, then resized again",
}

#: fingerprint (tools/inventory/vision_tables.py: of the function that places the table, ``fingerprint``, or of
#: its embeddings' forward, ``forward_fingerprint``) -> ``(config key, value, what the code does then)``: code read
#: from a tower that builds its learned table only when the key does not have that value; with it, there is no
#: table to read (a record's own rule says the same with :attr:`Vision.switch`)
VISION_SWITCHES: dict[str, tuple[str, Any, str]] = {
    # aimv2/modeling_aimv2.py Aimv2VisionEmbeddings: __init__ l.177-178 makes position_embedding only when not
    # is_native; forward l.186-198 adds a 2-D sin-cos table built at the image's grid instead
    "11084f0aa87cbe82": (
        "is_native",
        True,
        "its forward builds a 2-D sin-cos table at each image's grid instead, from no weights",
    ),
    # internvl/modeling_internvl.py InternVLVisionEmbeddings: __init__ l.248-251 sets position_embeddings = None;
    # forward l.312-313 adds a table only when it is not None
    "4769fe7677065b3d": ("use_absolute_position_embeddings", False, "its forward adds no absolute position table"),
}


def _with_positions(records: tuple[Record, ...]) -> dict[str, Record]:
    """One record per model_type: the rotary ones above, each non-rotary family as a record of its scheme, and
    Falcon's both (rotary with ``alibi: false``, ALiBi with ``alibi: true``); the learned tables the inventory
    observed last."""
    out = {r.model_type: r for r in records}
    observed = _learned_families()
    for name, fam in {**_POSITIONS, **observed}.items():
        kinds = ", ".join(dict.fromkeys(layer.kind for layer in fam.layers.values()))
        if name in out:
            out[name] = replace(out[name], positions=fam)
        else:
            origin = "inventory" if name in observed else "record"
            out[name] = Record(name, fam.reference, scheme=kinds, positions=fam, origin=origin)
    return out


#: model_type -> its record: rotary, M-RoPE, multimodal wrappers and the non-rotary families.
def _with_vision(out: dict[str, Record]) -> dict[str, Record]:
    """The ViT-family records added; a multimodal wrapper that also has a text table (CLIP, SigLIP: learned, as
    the inventory observed) keeps both, its vision tower read when an image size is asked for."""
    for r in _VISION:
        out[r.model_type] = replace(out[r.model_type], vision=r.vision) if r.model_type in out else r
    return out


def _with_towers(out: dict[str, Record]) -> dict[str, Record]:
    """A type without a record whose every non-vision table is a tower's (Kosmos-2's text model, a
    ``kosmos_2_text_model``) gains a record reading them (:func:`_tower_family`); a rotary type keeps its rotary
    reading, its towers' tables checked beside it (:func:`tower_family`)."""
    families = {mt: r.positions for mt, r in out.items() if r.positions is not None}
    for mt, entry in sorted((_data.inventory().get("model_types") or {}).items()):
        if mt in out or not isinstance(entry, dict) or entry.get("scheme") in (*DERIVABLE, "rotary"):
            continue
        fam = _tower_family(mt, entry, families)
        if fam is not None and all(covers(fam, t) for _, _, t in table_mechanisms(entry)):
            kinds = ", ".join(dict.fromkeys(layer.kind for layer in fam.layers.values()))
            out[mt] = Record(mt, fam.reference, scheme=kinds, positions=fam, origin="inventory")
    return out


RECORDS: dict[str, Record] = _with_towers(_with_vision(_with_positions(_RECORDS)))


def positions_family(model_type: object) -> Family | None:
    """The non-rotary layer tables of ``model_type``'s record (what :mod:`.hf_positions` reads), or None."""
    rec = RECORDS.get(model_type) if isinstance(model_type, str) else None
    return rec.positions if rec is not None else None


def positions_families() -> dict[str, Family]:
    """model_type -> the non-rotary layer tables of its record, grouped by scheme (T5, ALiBi, sinusoids,
    DeBERTa, then the learned tables) as the records list them: a view, for the tables of the docs and tools."""
    names = [*_POSITIONS, *(mt for mt, r in RECORDS.items() if r.positions is not None and mt not in _POSITIONS)]
    return {mt: fam for mt in names if (fam := positions_family(mt)) is not None}


def reader_names() -> tuple[str, ...]:
    """Every reader module the records name, the rotary reader last (it reads the model types without a
    record)."""
    names = dict.fromkeys(name for rec in RECORDS.values() for name in rec.readers)
    names.pop(ROTARY_READER, None)
    return (*names, ROTARY_READER)


def reader_kinds(reader: str) -> tuple[str, ...]:
    """The kinds ``--kind`` may name with a model config to choose ``reader``: the layer kinds of the records it
    reads (each family's first layer's kind, in the order the families are grouped, then any other), ``rope`` for the rotary reader."""
    if reader == ROTARY_READER:
        return ("rope",)
    if reader == VISION_READER:  # a vision table is read by image size, not picked by a kind
        return ()
    fams = [fam for mt, fam in positions_families().items() if reader in RECORDS[mt].readers]
    firsts = [next(iter(f.layers.values())).kind for f in fams]
    return tuple(dict.fromkeys([*firsts, *(layer.kind for f in fams for layer in f.layers.values())]))


#: The inventory's one loader (:mod:`.data`, loaded once per process) and the entry of one model type.
inventory = _data.inventory
inventory_entry = _data.model_type_record


#: The config keys transformers' config classes name a model's context with (GPT-2's ``n_positions``, most
#: others' ``max_position_embeddings``, Megatron-style ``seq_length``, MPT's ``max_seq_len``), first found wins:
#: the length an audit uses when ``--len`` is not given and the family's own reading sets none.
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "seq_length", "max_seq_len")


def model_type_of(config: Any, *, strict: bool = True) -> tuple[str | None, str | None]:
    """``(model_type, where it came from)`` of a config.json dict: its ``model_type`` key (origin None), else
    the one transformers' own auto mappings give its ``architectures`` (the inventory's ``architectures``); a
    config with neither is ``(None, None)``. A config whose architectures name no model type, or several, is
    refused in one line naming the architecture and the fix: posenc never guesses a model's family
    (``strict=False``: ``(None, None)`` then, for a reading the user named with ``read_as``)."""
    if not isinstance(config, dict):
        return None, None
    mt = config.get("model_type")
    archs = config.get("architectures")
    if mt is not None or archs is None:
        return mt, None
    if not strict:
        try:
            return model_type_of(config)
        except Exception:  # the strict reading refuses it; the caller reads it without a type
            return None, None
    from ..errors import ParameterError, option_clause, ref

    fix = "add model_type to config.json" + option_clause(
        f", or pass {ref('read_as')} FAMILY to read it with that family's rules"
    )
    if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
        raise ParameterError(f"config key architectures={str(archs)[:60]} is not a list of class names; {fix}")
    types = {a: _data.architecture_model_type(a) for a in archs}
    for arch, found in types.items():
        if found is None:
            raise ParameterError(
                f"config has no model_type, and its architecture {arch!r} is no class of transformers "
                f"{TRANSFORMERS_VERSION}'s auto mappings; {fix}"
            )
        if isinstance(found, list):
            raise ParameterError(
                f"config has no model_type, and its architecture {arch!r} is the class of several model types "
                f"({', '.join(found)}); {fix}"
            )
    named = sorted({str(t) for t in types.values()})
    if len(named) > 1:
        raise ParameterError(
            f"config has no model_type, and its architectures name several model types ({', '.join(named)}); {fix}"
        )
    return named[0], (
        f"architectures {archs[0]}, through transformers {TRANSFORMERS_VERSION}'s architecture -> model type "
        "mapping (config.json has no model_type)"
    )


#: transformers' remap of legacy layer type names (configuration_utils._LEGACY_LAYER_TYPE_REMAP)
LEGACY_LAYER_TYPES = {
    "mamba": "linear_attention",
    "attention": "full_attention",
    "deepseek_sparse_attention": "indexed_attention",
    "qwen_sparse_attention": "indexed_attention",
}
#: Top-level keys a derived record's rotary code may read: posenc models each of them.
_PLAIN_READS = {
    "head_dim",
    "hidden_size",
    "num_attention_heads",
    "max_position_embeddings",
    "rope_parameters",
    "rope_scaling",
    "rope_theta",
    "partial_rotary_factor",
    "layer_types",
}
#: Keys of the same meaning under another name, as the inventory saw them read (config attribute_map or a
#: rotary class that reads the other name).
_READ_ALIASES = {
    "num_heads": "num_attention_heads",
    "kv_channels": "head_dim",
    "decoder_num_attention_heads": "num_attention_heads",
    "model_max_length": "max_position_embeddings",
}


#: The inventory's words for a layer type whose layers rotate, or apply no positions (``layer_positions``)
_ROTATES, _NONE = "rope", "none"


class Refused(Exception):
    """A model type posenc does not read, with the one-line reason (what is missing)."""


def record_for(model_type: str) -> Record | None:
    """The record of ``model_type``: written here, else derived from its inventory entry (None: neither).
    Raises :class:`Refused` when the inventory has the type and its reading is not one posenc has."""
    rec = RECORDS.get(model_type)
    if rec is not None:
        return rec
    entry = inventory_entry(model_type)
    if entry is None:
        return None
    return derived(model_type, entry)


#: Derived records are used only where tools/verify_records.py found them equal to their class's tables (the
#: tool turns this off while it verifies).
VERIFY = True
VERIFIED = Path(__file__).resolve().parent / "data" / "verified_records.json"


@cache
def _unverified() -> dict[str, str]:
    """Derived model type -> why posenc refuses it (data/verified_records.json, made by tools/verify_records.py)."""
    if not VERIFIED.is_file():
        return {}
    data: dict[str, str] = json.loads(VERIFIED.read_text(encoding="utf-8")).get("refused", {})
    return data


def _derived(model_type: str) -> Record | str:
    """:func:`_derived_as` under the verification setting in force (:data:`VERIFY`)."""
    return _derived_as(model_type, VERIFY)


@cache
def _derived_as(model_type: str, verify: bool) -> Record | str:
    """The derived record of ``model_type`` or why it is refused, once per type and ``verify`` (the value of
    :data:`VERIFY` it was derived under) in a process: reading a config asks for its record several times (the
    type, its text model, each layer's reading), and every ask derived it again (0.5 ms each)."""
    entry = inventory_entry(model_type)
    assert entry is not None
    try:
        return _derive(model_type, entry)
    except Refused as exc:
        told = unread_line(model_type)  # the tables of its other components, each named (they are not read either)
        return f"{exc}; {told}" if told is not None and told not in str(exc) else str(exc)


def derived(model_type: str, entry: dict[str, Any]) -> Record:
    """The record of an inventory entry whose rotary reading is plain (see :func:`_derive`)."""
    out = _derived(model_type)
    if isinstance(out, str):
        raise Refused(out)
    return out


def _derive(model_type: str, entry: dict[str, Any]) -> Record:
    """A record from what the inventory observed: the rotary class reads only keys posenc models (head and
    rotated widths, max positions, the rope dict, layer types), its pairing is rotate_half or pairs, each layer
    type applies RoPE or none, and the rotated width is the head's or its partial_rotary_factor's share."""
    scheme = entry.get("scheme")
    if scheme not in DERIVABLE:
        # what the inventory's run of its forward saw, when it ran one (tools/inventory/learned_rows.py)
        told = unread_line(model_type)
        if told is not None:  # each table, with what the inventory's run of its forward saw (learned_rows.py)
            raise Refused(told)
        if scheme == "unobserved":  # why the inventory could not see them (its trace's own words)
            reason = str(entry.get("mechanisms_status") or "its modules could not be built or run")[:160]
            raise Refused(f"the inventory could not observe its positions ({reason})")
        seen = str((entry.get("learned_table") or {}).get("status") or "")[:120]
        raise Refused(f"its positions are {scheme}, which no record of posenc reads" + (f" ({seen})" if seen else ""))
    if entry.get("status") != "ok":
        raise Refused(f"the inventory could not observe its rotary class ({str(entry.get('status'))[:60]})")
    sub = list(entry.get("sub_config") or [])
    if any(part in _NOT_TEXT for part in sub):
        raise Refused(f"its rotary embedding is the {'.'.join(sub)}'s, a vision or audio tower's")
    pairing = entry.get("pairing")
    if pairing not in ("half", "interleaved", "deinterleave"):
        raise Refused(f"its attention pairs features in a way posenc does not reproduce ({pairing})")
    reads: dict[str, list[str]] = entry.get("keys_read") or {}
    default_reads = set(reads.get("default", []))
    top = {k.split(".")[0] for k in default_reads}
    aliases: dict[str, tuple[str, ...]] = {}
    mla = "qk_rope_head_dim" in top  # MLA: the rotated part of each query/key head
    for key in sorted(top - _PLAIN_READS - {"qk_rope_head_dim"}):
        if key not in _READ_ALIASES:
            raise Refused(f"its rotary class reads config key {key}, which posenc does not model")
        aliases[_READ_ALIASES[key]] = (key, _READ_ALIASES[key])
    positions = entry.get("layer_positions") or {}
    if any(v not in (_ROTATES, _NONE) for v in positions.values()):
        raise Refused("some layers of one layer type rotate and others do not (a rule posenc has no record of)")
    if positions and _ROTATES not in positions.values():
        raise Refused("no layer applies its rotary embedding at the default config")
    defaults: dict[str, Any] = {}
    prefix = "".join(f"{p}." for p in sub)
    raw = {k.removeprefix(prefix): v for k, v in (entry.get("defaults") or {}).items()}
    nope_types = {lt for lt, v in positions.items() if v == _NONE}
    if positions:  # layer types with no attention layer the inventory saw (Dory's "mlp" layers) apply none
        nope_types |= {str(t) for t in (raw.get("layer_types") or []) if t not in positions}
    nope = tuple(sorted(nope_types))
    for key in ("hidden_size", "num_attention_heads", "head_dim", "max_position_embeddings", "qk_rope_head_dim"):
        for name in aliases.get(key, (key,)):
            if isinstance(raw.get(name), int):
                defaults[key] = raw[name]
                break
    theta: dict[str | None, tuple[str, float]] = {
        None: ("rope_theta", float(raw.get("rope_parameters.rope_theta", 10000.0)))
    }
    per_layer = sorted({k.split(".")[1] for k in raw if k.count(".") == 2 and k.startswith("rope_parameters.")})
    if per_layer:
        theta = {lt: ("rope_theta", float(raw.get(f"rope_parameters.{lt}.rope_theta", 10000.0))) for lt in per_layer}
    default_types = raw.get("layer_types")
    if per_layer and isinstance(default_types, list) and not set(per_layer) <= set(default_types):
        raise Refused(
            f"its rope parameters are per table ({', '.join(per_layer)}), not per layer type; which layers use "
            "which is a rule posenc has no record of"
        )
    partial_read = any(k.endswith("partial_rotary_factor") for k in default_reads)
    prf = raw.get("rope_parameters.partial_rotary_factor")
    if isinstance(prf, (int, float)) and partial_read:
        defaults["partial_rotary_factor"] = float(prf)
    saved = {str(k).removeprefix(prefix).split(".")[0] for k in entry.get("saved_keys") or []}
    if "original_max_position_embeddings" in saved:
        # standardize_rope_params lets this class attribute win over the rope dict's (Phi-3's exception)
        raise Refused(
            "its config class keeps original_max_position_embeddings at top level, whose default "
            "the inventory does not record"
        )
    head_rule = "qk_rope" if mla else "config" if "head_dim" in top or "kv_channels" in top else "computed"
    head_rule = _check_width(entry, defaults, raw, head_rule, per_layer, partial_read, aliases)
    was = {k: v for p in entry.get("width_probes") or [] for k, v in (p.get("was") or {}).items()}
    qk_rope = raw.get("qk_rope_head_dim", was.get("qk_rope_head_dim"))
    if head_rule == "qk_rope" and "qk_rope_head_dim" not in defaults and isinstance(qk_rope, int):
        defaults["qk_rope_head_dim"] = qk_rope
    rules = () if partial_read else ("default_ignores_partial",)
    module = str(entry.get("modeling_module") or "").replace("models.", "", 1).replace(".", "/")
    reference = (
        f"{_HF}/{module}.py {entry.get('config_class')}, {entry.get('rotary_class')}, "
        f"{entry.get('apply_function')} ({pairing}; derived from the inventory)"
    )
    why = _unverified().get(model_type) if VERIFY else None
    if why is not None:
        raise Refused(why)
    return Record(
        model_type, reference, pairing="half" if pairing == "half" else "interleaved", aliases=aliases,
        defaults=defaults, theta=theta, head_dim=head_rule, nope=nope, rules=rules, origin="inventory",
        reads=tuple(sorted(top)), sub_config=tuple(sub) if sub != ["text_config"] else (),
    )  # fmt: skip


def _head_width(cfg: dict[str, Any], head_rule: str, aliases: dict[str, tuple[str, ...]]) -> Any:
    """The head width the record's rule reads from ``cfg`` (keys relative to the sub-config, under the names
    the class reads them by: ``aliases``): transformers' ``getattr(config, "head_dim", None) or
    config.hidden_size // config.num_attention_heads`` (modeling_rope_utils.py:180, glm4_moe/modeling_glm4_moe.py:
    76), ``qk_rope_head_dim`` for MLA."""

    def key(name: str) -> Any:
        return next((cfg[k] for k in aliases.get(name, (name,)) if cfg.get(k) is not None), None)

    if head_rule == "qk_rope":
        return key("qk_rope_head_dim")
    if head_rule == "config" and key("head_dim") is not None:
        return key("head_dim")
    hidden, heads = key("hidden_size"), key("num_attention_heads")
    if isinstance(hidden, int) and isinstance(heads, int) and heads > 0:
        return hidden // heads
    return None


def rotated_frequencies(head: int, share: float, rope_type: str = "default") -> int:
    """How many frequencies transformers' rotary class builds for a head of ``head`` features rotated by
    ``share``: ``dim = int(head_dim * partial_rotary_factor)`` then ``arange(0, dim, 2)`` - one per pair, an odd
    ``dim`` rounding up (modeling_rope_utils.py:181-185, glm4_moe/modeling_glm4_moe.py:77-81); proportional
    RoPE keeps ``head_dim // 2`` of them, the unrotated ones zero (modeling_rope_utils.py:240-255)."""
    if rope_type == "proportional":
        return head // 2
    dim = int(head * share)
    return (dim + 1) // 2


def _check_width(
    entry: dict[str, Any],
    defaults: dict[str, Any],
    raw: dict[str, Any],
    head_rule: str,
    per_layer: list[str],
    partial_read: bool,
    aliases: dict[str, tuple[str, ...]] | None = None,
) -> str:
    """The head rule (:data:`HEAD_DIM_RULES`) under which the rotated width is the one posenc derives, by the
    model's own rule, from the config at hand: the head width times partial_rotary_factor (per layer type where
    the rope dict is). The rule is held against the inventory's ``width_probes`` - the class's number of
    frequencies at its default config and at configs with one key changed - so it is observed as a function of
    the config, never a width fixed at the default (an odd width there, GLM-4 MoE's 42 x 0.5, says nothing of
    GLM-4.5-Air's 128 x 0.5: the config at hand is judged when it is read). ``head_rule`` (from the keys the
    class read) is tried first, then the others; none fitting every probe is refused. Entries without probes
    (a class that keeps no ``inv_freq``) are checked on the width the class produced at the default config."""
    aliases = aliases or {}
    probes = [p for p in entry.get("width_probes") or [] if p.get("n_freq")]
    if not probes:
        _check_default_width(entry, defaults, raw, head_rule, per_layer, partial_read, aliases)
        return head_rule
    base = dict(raw)
    for probe in probes:  # the values the probes replaced: keys the class did not read directly
        base.update({k: v for k, v in (probe.get("was") or {}).items() if k not in base})
    first: Refused | None = None
    for rule in dict.fromkeys((head_rule, "config", "computed", "qk_rope")):
        try:
            for probe in probes:
                _check_probe(probe, base, rule, per_layer, partial_read, aliases)
        except Refused as exc:
            first = first or exc
            continue
        return rule
    assert first is not None
    raise first


def _check_probe(
    probe: dict[str, Any],
    base: dict[str, Any],
    head_rule: str,
    per_layer: list[str],
    partial_read: bool,
    aliases: dict[str, tuple[str, ...]],
) -> None:
    cfg = {**base, **probe.get("set", {})}
    head = _head_width(cfg, head_rule, aliases)
    where = ", ".join(f"{k}={v}" for k, v in probe.get("set", {}).items()) or "its default config"
    for lt, n_freq in probe["n_freq"].items():
        pre = f"rope_parameters.{lt}." if lt in per_layer else "rope_parameters."
        share = cfg.get(f"{pre}partial_rotary_factor") if partial_read else None
        share = float(share) if isinstance(share, (int, float)) else 1.0
        rope_type = str(cfg.get(f"{pre}rope_type") or "default")
        if not isinstance(head, int):
            raise Refused(f"its head width at {where} is not one posenc derives from its config")
        want = rotated_frequencies(head, share, rope_type)
        if n_freq != want:
            raise Refused(
                f"at {where} its rotary class builds {n_freq} frequencies where the head of {head} times "
                f"partial_rotary_factor {share:g} gives {want}: a width posenc does not derive"
            )


def _check_default_width(
    entry: dict[str, Any],
    defaults: dict[str, Any],
    raw: dict[str, Any],
    head_rule: str,
    per_layer: list[str],
    partial_read: bool,
    aliases: dict[str, tuple[str, ...]],
) -> None:
    """The width the class produced at its default config (``rotary_dim``) against the rule, where the inventory
    has no probes: the rotated width, or half of it where cos holds one column per frequency (gpt-oss style)."""
    head = _head_width(defaults, head_rule, {})
    if head is None:
        head = entry.get("head_dim")
    rot = entry.get("rotary_dim")
    types: list[str | None] = list(per_layer) or [None]
    rots = rot if isinstance(rot, dict) else {lt: rot for lt in types}
    for lt, width in rots.items():
        pre = f"rope_parameters.{lt}." if lt in per_layer else "rope_parameters."
        share = raw.get(f"{pre}partial_rotary_factor") if partial_read else None
        share = float(share) if isinstance(share, (int, float)) else 1.0
        if not isinstance(width, int) or not isinstance(head, int):
            raise Refused(f"its rotated width ({rot}) is not one posenc derives from its config")
        want = 2 * rotated_frequencies(head, share, str(raw.get(f"{pre}rope_type") or "default"))
        if width not in (want, want // 2):
            raise Refused(f"its rotary class rotates {width} of {head} features, a width posenc does not derive")


def inventory_config(model_type: str) -> dict[str, Any]:
    """``model_type``'s default config.json as far as its positional code reads it: the inventory's
    ``defaults`` (dotted from the top) as nested dicts, with the sub-config's ``model_type``."""
    entry = inventory_entry(model_type)
    if entry is None:
        raise KeyError(model_type)
    cfg: dict[str, Any] = {"model_type": model_type}
    for key, value in (entry.get("defaults") or {}).items():
        node = cfg
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    text = cfg
    for p in entry.get("sub_config") or []:
        text = text.setdefault(p, {})
    if entry.get("sub_config") and entry.get("text_model_type"):
        text["model_type"] = entry["text_model_type"]
    return cfg


def wrappers() -> dict[str, str]:
    """Multimodal wrapper model_type -> its default text model_type."""
    return {r.model_type: r.text_model_type for r in RECORDS.values() if r.text_model_type is not None}


def gguf_arch(model_type: str) -> str | None:
    """The GGUF architecture convert_hf_to_gguf.py writes for ``model_type`` (when posenc mirrors it)."""
    rec = RECORDS.get(model_type)
    return rec.gguf_arch if rec is not None else None


# ----- vision towers' 2-D rotary embeddings (kind rope-2d) ------------------------------------------------------
@dataclass(frozen=True)
class VisionRotary:
    """How one vision tower's rotary embedding reads its config (keyed by the tower config's ``model_type``).

    ``preset`` is the ``rope-2d`` preset that reproduces it: the inventory's ``vision_rotary`` observation (the
    rotation the tower's own attention applies) must list it among its ``matches``, or the tower is refused.
    ``head_dim``: ``config`` reads ``head_dim`` first, else ``width // heads``; ``computed`` is ``width // heads``
    whatever the config says. ``grid``: ``dynamic`` (any patch grid; ``image_size`` is not read by the rotary) or
    ``fixed`` (the table is built for ``image_size // patch_size`` squared). ``merge``/``window``: the config keys
    of the spatial merge size and of Qwen2.5-VL's window (in pixels: ``window_size // merge // patch`` blocks).
    """

    model_type: str
    reference: str
    preset: str
    width: str
    heads: str
    head_dim: str = "config"
    grid: str = "dynamic"
    merge: str | None = None
    window: str | None = None
    #: rope types the tower's class accepts (another is refused by the class itself)
    rope_types: tuple[str, ...] = ("axial",)
    #: what the tower's blocks do with the rows beyond the table (reported in the metadata)
    note: str = ""


VISION_ROTARY: dict[str, VisionRotary] = {v.model_type: v for v in (
    VisionRotary("pixtral", f"{_HF}/pixtral/modeling_pixtral.py PixtralVisionRotaryEmbedding; configuration_pixtral.py "
                 "__post_init__ sets head_dim = hidden_size // num_attention_heads", "pixtral", "hidden_size",
                 "num_attention_heads", head_dim="computed"),
    VisionRotary("qwen2_vl_vision", f"{_HF}/qwen2_vl/modeling_qwen2_vl.py Qwen2VLVisionRotaryEmbedding "
                 "(head_dim or embed_dim // num_heads); vision_utils.py get_vision_position_ids", "qwen2-vl",
                 "embed_dim", "num_heads", merge="spatial_merge_size"),
    VisionRotary("qwen2_5_vl_vision", f"{_HF}/qwen2_5_vl/modeling_qwen2_5_vl.py Qwen2_5_VLVisionRotaryEmbedding "
                 "(head_dim or hidden_size // num_heads), Qwen2_5_VisionTransformerPretrainedModel.forward "
                 "(permute_input_for_window_attn); vision_utils.py get_vision_window_index", "qwen2.5-vl",
                 "hidden_size", "num_heads", merge="spatial_merge_size", window="window_size",
                 note="every block sees the rows in window order; the fullatt_block_indexes blocks attend across "
                      "windows, the others within each window"),
    # Qwen3-VL's towers: Qwen2-VL's axial rotary (compute_axial_rope_parameters: head_dim or hidden_size //
    # num_heads, spatial_dim = dim // 2, inv_freq over arange(0, spatial_dim, 2); cos/sin of (h, w) concatenated,
    # then repeated: rotate_half), the patches in spatial-merge order (get_vision_position_ids); the same class,
    # names aside, in each file below (its line)
    *(VisionRotary(mt, f"{_HF}/{path} {cls}VisionRotaryEmbedding (l.{line}: Qwen3-VL's axial rotary); "
                   f"{cls}Vision{tower}.forward: vision_utils.py get_vision_position_ids", "qwen2-vl", "hidden_size",
                   "num_heads", merge="spatial_merge_size")
      for mt, path, cls, line, tower in (
          ("qwen3_vl_vision", "qwen3_vl/modeling_qwen3_vl.py", "Qwen3VL", "111-167", "Model"),
          ("qwen3_vl_moe_vision", "qwen3_vl_moe/modeling_qwen3_vl_moe.py", "Qwen3VLMoe", "428-484", "Model"),
          ("qwen3_5_vision", "qwen3_5/modeling_qwen3_5.py", "Qwen3_5", "76-132", "Model"),
          ("qwen3_5_moe_vision", "qwen3_5_moe/modeling_qwen3_5_moe.py", "Qwen3_5Moe", "93-149", "Model"),
          ("qwen3_omni_moe_vision_encoder", "qwen3_omni_moe/modeling_qwen3_omni_moe.py", "Qwen3OmniMoe", "987-1043",
           "Encoder"),
          ("cohere_compass_vision", "cohere_compass/modeling_cohere_compass.py", "CohereCompass", "651-707", "Model"),
          ("qwen4_exp_vision", "qwen4_exp/modeling_qwen4_exp.py", "Qwen4Exp", "1694-1750", "Model"),
      )),
    VisionRotary("llama4_vision_model", f"{_HF}/llama4/modeling_llama4.py Llama4VisionRotaryEmbedding._compute_freqs_ci "
                 "(idx = image_size // patch_size; hidden_size // num_attention_heads)", "llama4", "hidden_size",
                 "num_attention_heads", head_dim="computed", grid="fixed", rope_types=("default",)),
)}  # fmt: skip


# ----- windowed relative position bias (Swin, BEiT) --------------------------------------------------------------
@dataclass(frozen=True)
class WindowBias:
    """A vision model type whose attention adds a learned bias gathered by relative position within a window.

    ``window``: ``window_size`` (Swin: the config key, square windows) or ``patch_grid`` (BEiT: ``image_size //
    patch_size`` per side, the whole image is one window). ``cls``: the table has 3 more entries (class to token,
    token to class, class to class) and the index one more row and column, first. ``switches``: config keys of
    which one must be true for any bias to be added (BEiT's per-layer or shared bias). ``table``: the name the
    weights keep each table under (its last component). ``continuous``: the table is not kept but made by a small
    network over log-spaced relative coordinates, ``16 * sigmoid`` (Swin V2's ``continuous_position_bias_mlp``).
    ``stages``: how each stage's patch grid follows the image's (``halving``: stage ``i`` at the grid halved ``i``
    times; ``same``: every stage at the grid; empty: one window). ``shrink``: when a stage's grid is not larger
    than the window, the window becomes the grid and the shift 0: ``forward`` (from the grid the forward sees,
    ``set_shift_and_window_size``), ``init`` (once, at construction, from the config's image size, the height
    deciding: ``_compute_window_shift``), or empty (never: the stage is padded to the window).
    """

    model_type: str
    reference: str
    window: str
    cls: bool = False
    switches: tuple[str, ...] = ()
    table: str = "relative_position_bias_table"
    continuous: bool = False
    stages: str = ""
    shrink: str = ""


@dataclass(frozen=True)
class DecomposedRelPos:
    """A vision encoder whose attention adds, per axis, the query times a table of relative positions (MViTv2's
    decomposed relative positions): ``rel_pos_h`` and ``rel_pos_w`` of ``2S - 1`` rows each per layer, ``S`` the
    layer's window (``window_size``) or, for the layers in ``global_attn_indexes``, the patch grid
    (``image_size // patch_size``), gathered at ``i - j + S - 1`` (``get_rel_pos``: its linear resize is the
    identity at the size the weights have)."""

    model_type: str
    reference: str


DECOMPOSED: dict[str, DecomposedRelPos] = {d.model_type: d for d in (
    DecomposedRelPos("sam_vision_model", f"{_HF}/sam/modeling_sam.py SamVisionAttention (__init__, get_rel_pos, "
                     "get_decomposed_rel_pos), SamVisionEncoder (window_size, global_attn_indexes)"),
    DecomposedRelPos("sam_hq_vision_model", f"{_HF}/sam_hq/modeling_sam_hq.py SamHQVisionAttention (as SAM's), "
                     "SamHQVisionEncoder"),
)}  # fmt: skip


WINDOW_BIAS: dict[str, WindowBias] = {w.model_type: w for w in (
    WindowBias("swin", f"{_HF}/swin/modeling_swin.py SwinRelativePositionBias (_create_relative_position_index, "
               "forward), SwinLayer.set_shift_and_window_size", "window_size", stages="halving", shrink="forward"),
    WindowBias("donut-swin", f"{_HF}/donut/modeling_donut_swin.py DonutSwinSelfAttention "
               "(create_relative_position_index, forward), DonutSwinLayer.set_shift_and_window_size", "window_size",
               stages="halving", shrink="forward"),
    WindowBias("maskformer-swin", f"{_HF}/maskformer/modeling_maskformer_swin.py MaskFormerSwinSelfAttention "
               "(forward); MaskFormerSwinLayer pads every stage to the window (maybe_pad), never shrinks it",
               "window_size", stages="halving"),
    WindowBias("swinv2", f"{_HF}/swinv2/modeling_swinv2.py Swinv2SelfAttention (create_coords_table_and_index, "
               "forward: 16 * sigmoid(continuous_position_bias_mlp(coords)[index])), Swinv2Layer._compute_window_shift, "
               "Swinv2Encoder (pretrained_window_sizes)", "window_size", table="continuous_position_bias_mlp",
               continuous=True, stages="halving", shrink="init"),
    WindowBias("swin2sr", f"{_HF}/swin2sr/modeling_swin2sr.py Swin2SRSelfAttention (as Swin V2's), "
               "Swin2SRLayer._compute_window_shift, Swin2SREncoder (every stage at the grid, pretrained window 0)",
               "window_size", table="continuous_position_bias_mlp", continuous=True, stages="same", shrink="init"),
    WindowBias("beit", f"{_HF}/beit/modeling_beit.py BeitRelativePositionBias (generate_relative_position_index, "
               "forward at the native window)", "patch_grid", cls=True,
               switches=("use_relative_position_bias", "use_shared_relative_position_bias")),
    WindowBias("data2vec-vision", f"{_HF}/data2vec/modeling_data2vec_vision.py Data2VecVisionRelativePositionBias "
               "(as BEiT's)", "patch_grid", cls=True,
               switches=("use_relative_position_bias", "use_shared_relative_position_bias")),
)}  # fmt: skip
