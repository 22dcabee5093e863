r"""Reading a HF transformers config.json into ``rope`` (or ``mrope``) parameters, family by family.

``--hf-config`` promises "the cos/sin that model X uses", so the reader follows transformers' own rules
(transformers 5.x: ``PreTrainedConfig.convert_rope_params_to_dict``, ``standardize_rope_params``, each
family's ``configuration_<family>.py`` and the rotary class and ``apply_rotary_pos_emb`` of its
``modeling_<family>.py``), as a literal table :data:`FAMILIES` with one entry per ``model_type``:

* **key aliases**: GPT-2 names (``n_embd``, ``n_head``, ``n_positions``; GPT-J, CodeGen ``attribute_map``),
  GPT-NeoX ``rotary_pct`` / ``rotary_emb_base``, Gemma 3 ``rope_local_base_freq``, ModernBERT
  ``global_rope_theta`` / ``local_rope_theta``, DeepSeek ``qk_rope_head_dim``;
* **class defaults**: the value the family's config class fills in when config.json omits a field (Gemma 3
  text: ``rope_theta`` 1e6, ``head_dim`` 256; Cohere: ``rope_theta`` 5e5; GLM: ``partial_rotary_factor`` 0.5;
  gpt-oss: yarn factor 32 ...). :meth:`ModelConfig.report` says which values came from such defaults;
* **nesting**: multimodal configs (Gemma 3 ``*-it``, Llama 4, Llava, Qwen2-VL saved by transformers 5) keep
  the language model under ``text_config``; its own ``model_type`` (or the family's text model) picks the entry
  and *that* class's defaults apply to missing fields;
* **layout**: which features are rotated together. ``half`` pairs :math:`(j, j + r/2)` (``rotate_half``:
  Llama and most); ``interleaved`` pairs :math:`(2k, 2k + 1)`: GPT-J / CodeGen (``rotate_every_two``), Cohere /
  Cohere2 (``repeat_interleave`` of the frequencies), GLM (``cos[..., :r/2].repeat_interleave(2)`` on the first
  ``r = head_dim * partial_rotary_factor`` features, the rest pass through), Llama 4 and DeepSeek-V2
  (``view_as_complex`` of consecutive pairs times :math:`e^{i t \omega_k}`), DeepSeek-V3 with
  ``rope_interleave`` (its default; the output is then de-interleaved, the same permutation for queries and keys,
  so scores are those of the interleaved rotation);
* **per-layer attention types**: Gemma 2 / gpt-oss (sliding and full layers share one RoPE), Gemma 3 and
  ModernBERT (a different base per type), Cohere2 (RoPE on sliding layers only, full layers are NoPE), Llama 4
  (``chunked_attention`` layers rotate, ``full_attention`` layers are NoPE).

Never a table from a guess: a key posenc does not know that could change the table is an error naming it.
That is any key of ``rope_scaling`` / ``rope_parameters`` outside :data:`ROPE_KEYS` and the family's own
``rope_keys``, and any top-level key whose name speaks of positions (:data:`POSITIONAL_KEY`: rope, rotary,
position, mscale, alpha, theta, freq ...) that the family's reader does not know. An unknown ``model_type`` is
read generically (Llama's rules) only when every such key is one the generic reading reads (a rope key the rule
in force does not read is then an error too, since the unknown model's class might read it); a known family's
rope key that transformers' own rule does not read is a warning ("ignored, as transformers does"). The user opts
in with ``read_as=FAMILY`` (``--read-as``): the config is read with that family's rules, what was not understood
becomes a warning, and :attr:`ModelConfig.assumption` (recorded in the output's metadata as ``hf_read_as``)
says so.

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
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParameterError, ref
from .config_file import _check_depth_obj, _json_type

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
#: Top-level key names that speak of positions: such a key the family's reader does not know is an error.
POSITIONAL_KEY = re.compile(r"rope|rotary|position|pos_emb|mscale|alpha|theta|freq|sinusoid|alibi|bucket", re.I)
#: Top-level keys every family's reading knows (each family adds its aliases, theta keys and ``top_keys``).
COMMON_TOP = ("rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor", "max_position_embeddings",
              "original_max_position_embeddings", "head_dim", "layer_types")  # fmt: skip

#: HF rope_type -> posenc ``scaling``.
HF_SCALINGS = {"default": "none", "linear": "linear", "dynamic": "dynamic", "yarn": "yarn", "llama3": "llama3",
               "longrope": "longrope", "proportional": "proportional"}  # fmt: skip
_HF = "huggingface/transformers src/transformers/models"


# ----- the family table ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Family:
    """How one ``model_type`` reads its rope fields (transformers 5.x), and the class defaults it applies.

    ``aliases`` maps posenc's canonical key to the keys the family's config accepts, first wins.
    ``defaults`` holds the config class's defaults for missing fields (``None``: computed, e.g. head_dim from
    hidden_size // num_attention_heads). ``theta_keys`` maps each per-layer rope entry (or ``None`` for one
    shared entry) to the top-level key holding its base. ``layers`` says how the attention type of each layer is
    derived when config.json has no ``layer_types``; ``nope`` lists the types that apply no RoPE.
    """

    name: str
    reference: str
    layout: str = "half"
    kind: str = "rope"
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    theta_keys: dict[str | None, str] = field(default_factory=lambda: {None: "rope_theta"})
    theta_defaults: dict[str | None, float] = field(default_factory=lambda: {None: 10000.0})
    #: head_dim rule: "config" (head_dim or hidden//heads), "computed" (always hidden//heads: Cohere2),
    #: "qk_rope" (DeepSeek MLA), "gpt2" (n_embd // n_head, rotary_dim rotated)
    head_dim: str = "config"
    partial_key: tuple[str, ...] = ("partial_rotary_factor",)
    layers: str | None = None
    nope: tuple[str, ...] = ()
    #: rope_scaling given at top level applies to these per-layer entries (Gemma 3: full only)
    scaling_to: tuple[str, ...] = ()
    #: rope_type renamed by the family's config class (Phi-3: su/yarn -> longrope; Qwen2-VL: mrope -> default)
    renames: dict[str, str] = field(default_factory=dict)
    #: cos/sin are not multiplied by attention_scaling (DeepSeek-V2's complex freqs_cis)
    no_attention_scaling: bool = False
    #: a rope dict given when the config has none (gpt-oss)
    default_rope: dict[str, Any] | None = None
    #: the multimodal wrapper's text model type (its text_config's default model_type)
    text_model_type: str | None = None
    #: rope is applied in float32 math with a fixed base (GPT-J: 10000 hard-coded; rope_theta is ignored)
    fixed_base: float | None = None
    #: top-level keys (beyond COMMON_TOP, aliases, theta and partial keys) the family's class reads or ignores
    top_keys: tuple[str, ...] = ()
    #: rope dict keys of this family only -> the rope_types that read them
    rope_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: longrope with Phi-3.5-MoE's short_mscale / long_mscale: cos/sin times long_mscale when the sequence is
    #: longer than original_max_position_embeddings, else short_mscale; inv_freq from short_factor at every length
    mscale_pair: bool = False
    #: "dynamic" with ``alpha`` is a fixed NTK base theta * alpha ** (d / (d - 2)) at every length (Hunyuan)
    ntk_alpha: bool = False
    #: M-RoPE sections: "chunked" (Qwen2-VL: consecutive blocks) or "interleaved" (Qwen3-VL: T, H, W in turn)
    mrope_sections: str = "chunked"
    #: a flat (not per-layer-type) rope_parameters is ignored by the config class (Olmo3Config keeps only its
    #: full_attention / sliding_attention entries; rope_scaling is how a flat dict reaches full_attention)
    flat_parameters_ignored: bool = False

    def known_top(self) -> set[str]:
        """The top-level keys this family's reading knows."""
        keys = set(COMMON_TOP) | set(self.top_keys) | set(self.partial_key)
        keys |= {k for names in self.aliases.values() for k in names}
        keys |= {k for k in self.theta_keys.values()}
        if self.head_dim == "gpt2":
            keys.add("rotary_dim")
        if self.head_dim == "qk_rope":
            keys.add("qk_rope_head_dim")
        return keys


_LLAMA = Family(
    "llama",
    f"{_HF}/llama LlamaConfig, LlamaRotaryEmbedding, apply_rotary_pos_emb (rotate_half)",
    defaults={"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 2048},
)

#: An unknown model_type: Llama's reading without any class default (a missing field is an error, not a guess),
#: plus DeepSeek's qk_rope_head_dim, which only MLA models carry.
_GENERIC = Family(
    "generic",
    "generic reading (LlamaRotaryEmbedding rules, rope_scaling rules of modeling_rope_utils)",
    top_keys=("qk_rope_head_dim",),
)

FAMILIES: dict[str, Family] = {f.name: f for f in (
    _LLAMA,
    Family("phi", f"{_HF}/phi PhiConfig (partial_rotary_factor 0.5), PhiRotaryEmbedding (rotate_half, partial)",
           defaults={"hidden_size": 2048, "num_attention_heads": 32, "max_position_embeddings": 2048,
                     "partial_rotary_factor": 0.5}),
    Family("mistral", f"{_HF}/mistral MistralConfig, MistralRotaryEmbedding (rotate_half)",
           defaults={"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072}),
    Family("qwen2", f"{_HF}/qwen2 Qwen2Config, Qwen2RotaryEmbedding (rotate_half)",
           defaults={"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 32768}),
    Family("phi3", f"{_HF}/phi3 Phi3Config.convert_rope_params_to_dict (su/yarn -> longrope), Phi3RotaryEmbedding",
           defaults={"hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 4096,
                     "original_max_position_embeddings": 4096, "partial_rotary_factor": 1.0},
           renames={"su": "longrope", "yarn": "longrope"}),
    Family("deepseek_v2", f"{_HF}/deepseek_v2 DeepseekV2Config (head_dim = qk_rope_head_dim), "
           "DeepseekV2RotaryEmbedding (complex freqs_cis, no attention scaling), apply_rotary_emb",
           layout="interleaved", head_dim="qk_rope", no_attention_scaling=True,
           defaults={"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 2048,
                     "qk_rope_head_dim": 64}),
    Family("deepseek_v3", f"{_HF}/deepseek_v3 DeepseekV3Config (head_dim = qk_rope_head_dim), "
           "DeepseekV3RotaryEmbedding, apply_rotary_pos_emb_interleave (rope_interleave, default true)",
           layout="interleaved", head_dim="qk_rope", top_keys=("rope_interleave",),
           defaults={"hidden_size": 7168, "num_attention_heads": 128, "max_position_embeddings": 4096,
                     "qk_rope_head_dim": 64, "rope_interleave": True}),
    Family("gpt_neox", f"{_HF}/gpt_neox GPTNeoXConfig.convert_rope_params_to_dict (rotary_emb_base, rotary_pct), "
           "GPTNeoXRotaryEmbedding (rotate_half on the first rotary_pct of the head)",
           theta_keys={None: "rotary_emb_base"}, partial_key=("rotary_pct",),
           defaults={"hidden_size": 6144, "num_attention_heads": 64, "max_position_embeddings": 2048,
                     "partial_rotary_factor": 0.25}),
    Family("gptj", f"{_HF}/gptj GPTJConfig.attribute_map, create_sinusoidal_positions (base 10000), "
           "rotate_every_two on the first rotary_dim features",
           layout="interleaved", head_dim="gpt2", fixed_base=10000.0, top_keys=("rotary",),
           aliases={"hidden_size": ("n_embd", "hidden_size"), "num_attention_heads": ("n_head", "num_attention_heads"),
                    "max_position_embeddings": ("n_positions", "max_position_embeddings")},
           defaults={"hidden_size": 4096, "num_attention_heads": 16, "max_position_embeddings": 2048,
                     "rotary_dim": 64}),
    Family("codegen", f"{_HF}/codegen CodeGenConfig.attribute_map, create_sinusoidal_positions (base 10000), "
           "rotate_every_two on the first rotary_dim features",
           layout="interleaved", head_dim="gpt2", fixed_base=10000.0,
           aliases={"hidden_size": ("n_embd", "hidden_size"), "num_attention_heads": ("n_head", "num_attention_heads"),
                    "max_position_embeddings": ("n_positions", "max_position_embeddings")},
           defaults={"hidden_size": 4096, "num_attention_heads": 16, "max_position_embeddings": 2048,
                     "rotary_dim": 64}),
    Family("cohere", f"{_HF}/cohere CohereConfig (default_theta 500000), CohereRotaryEmbedding "
           "(repeat_interleave), rotate_half on (2k, 2k+1)",
           layout="interleaved", theta_defaults={None: 500000.0},
           defaults={"hidden_size": 8192, "num_attention_heads": 64, "max_position_embeddings": 8192}),
    Family("cohere2", f"{_HF}/cohere2 Cohere2Config (head_dim = hidden_size // num_attention_heads, "
           "sliding_window_pattern 4), Cohere2Attention (RoPE only where sliding_window is set)",
           layout="interleaved", head_dim="computed", layers="every_nth_full:sliding_window_pattern:4",
           nope=("full_attention",),
           defaults={"hidden_size": 8192, "num_attention_heads": 64, "max_position_embeddings": 8192,
                     "num_hidden_layers": 40}),
    Family("glm", f"{_HF}/glm GlmConfig (partial_rotary_factor 0.5), apply_rotary_pos_emb "
           "(cos[..., :r/2].repeat_interleave(2) on the first r features)",
           layout="interleaved",
           defaults={"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
                     "max_position_embeddings": 131072, "partial_rotary_factor": 0.5}),
    Family("glm4", f"{_HF}/glm4 Glm4Config, apply_rotary_pos_emb as GLM (partial interleaved)",
           layout="interleaved",
           defaults={"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
                     "max_position_embeddings": 131072, "partial_rotary_factor": 0.5}),
    Family("llama4_text", f"{_HF}/llama4 Llama4TextConfig (no_rope_layers, default_theta 500000), "
           "Llama4TextRotaryEmbedding (torch.polar), apply_rotary_emb (view_as_complex pairs)",
           layout="interleaved", theta_defaults={None: 500000.0}, layers="llama4", nope=("full_attention",),
           top_keys=("no_rope_layers", "no_rope_layer_interval"),
           defaults={"hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
                     "max_position_embeddings": 131072, "num_hidden_layers": 48}),
    Family("gemma", f"{_HF}/gemma GemmaConfig, GemmaRotaryEmbedding (rotate_half)",
           defaults={"hidden_size": 3072, "num_attention_heads": 16, "head_dim": 256,
                     "max_position_embeddings": 8192}),
    Family("gemma2", f"{_HF}/gemma2 Gemma2Config (layer_types alternate sliding/full), Gemma2RotaryEmbedding "
           "(one RoPE for every layer)",
           layers="alternate", defaults={"hidden_size": 2304, "num_attention_heads": 8, "head_dim": 256,
                                         "max_position_embeddings": 8192, "num_hidden_layers": 26}),
    Family("gemma3_text", f"{_HF}/gemma3 Gemma3TextConfig.convert_rope_params_to_dict (rope_theta -> full, "
           "rope_local_base_freq -> sliding, rope_scaling -> full), Gemma3RotaryEmbedding per layer type",
           theta_keys={"full_attention": "rope_theta", "sliding_attention": "rope_local_base_freq"},
           theta_defaults={"full_attention": 1_000_000.0, "sliding_attention": 10_000.0},
           layers="every_nth_full:sliding_window_pattern:6", scaling_to=("full_attention",),
           defaults={"hidden_size": 2304, "num_attention_heads": 8, "head_dim": 256,
                     "max_position_embeddings": 131072, "num_hidden_layers": 26}),
    Family("modernbert", f"{_HF}/modernbert ModernBertConfig.convert_rope_params_to_dict (global_rope_theta -> "
           "full, local_rope_theta -> sliding, rope_scaling -> both), ModernBertRotaryEmbedding per layer type",
           theta_keys={"full_attention": "global_rope_theta", "sliding_attention": "local_rope_theta"},
           theta_defaults={"full_attention": 160_000.0, "sliding_attention": 10_000.0},
           layers="modernbert", scaling_to=("full_attention", "sliding_attention"),
           top_keys=("position_embedding_type",),  # a legacy key ModernBertConfig never reads
           defaults={"hidden_size": 768, "num_attention_heads": 12, "max_position_embeddings": 8192,
                     "num_hidden_layers": 22}),
    Family("gpt_oss", f"{_HF}/gpt_oss GptOssConfig (default yarn factor 32, truncate false, default_theta 150000), "
           "GptOssRotaryEmbedding, _apply_rotary_emb (halves)",
           theta_defaults={None: 150000.0}, layers="alternate",
           default_rope={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                         "truncate": False, "original_max_position_embeddings": 4096},
           defaults={"hidden_size": 2880, "num_attention_heads": 64, "head_dim": 64,
                     "max_position_embeddings": 131072, "num_hidden_layers": 24}),
    Family("qwen2_vl_text", f"{_HF}/qwen2_vl Qwen2VLTextConfig (mrope -> default, default_theta 1e6), "
           "Qwen2VLRotaryEmbedding (mrope_section), Qwen2VLModel.get_rope_index",
           kind="mrope", theta_defaults={None: 1_000_000.0}, renames={"mrope": "default"},
           defaults={"hidden_size": 8192, "num_attention_heads": 64, "max_position_embeddings": 32768,
                     "mrope_section": [16, 24, 24]}),
    Family("qwen2_5_vl_text", f"{_HF}/qwen2_5_vl Qwen2_5_VLTextConfig (mrope -> default, default_theta 1e6), "
           "Qwen2_5_VLRotaryEmbedding (mrope_section), Qwen2_5_VLModel.get_rope_index",
           kind="mrope", theta_defaults={None: 1_000_000.0}, renames={"mrope": "default"},
           defaults={"hidden_size": 8192, "num_attention_heads": 64, "max_position_embeddings": 32768,
                     "mrope_section": [16, 24, 24]}),
    Family("qwen3_vl_text", f"{_HF}/qwen3_vl Qwen3VLTextConfig (default_theta 500000, head_dim 128, "
           "ignore_keys_at_rope_validation mrope_section/mrope_interleaved), Qwen3VLTextRotaryEmbedding "
           "(recomposition_frequencies: frequency j turns with T, H or W by j % 3 inside 3 * mrope_section), "
           "Qwen3VLModel.get_rope_index",
           kind="mrope", theta_defaults={None: 500_000.0}, renames={"mrope": "default"}, mrope_sections="interleaved",
           rope_keys={"mrope_interleaved": ("default",)},
           defaults={"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
                     "max_position_embeddings": 128000, "mrope_section": [24, 20, 20]}),
    Family("qwen3_vl_moe_text", f"{_HF}/qwen3_vl_moe Qwen3VLMoeTextConfig (default_theta 500000), "
           "Qwen3VLMoeTextRotaryEmbedding (recomposition_frequencies as Qwen3-VL: interleaved T, H, W), "
           "Qwen3VLMoeModel.get_rope_index",
           kind="mrope", theta_defaults={None: 500_000.0}, renames={"mrope": "default"}, mrope_sections="interleaved",
           rope_keys={"mrope_interleaved": ("default",)},
           defaults={"hidden_size": 2048, "num_attention_heads": 16, "max_position_embeddings": 128000,
                     "mrope_section": [24, 20, 20]}),
    Family("phimoe", f"{_HF}/phimoe PhimoeConfig (default_theta 1e6; validate_rope: short_mscale, long_mscale), "
           "PhimoeRotaryEmbedding.forward (inv_freq = rope_init_fn(config) without seq_len, so short_factor at "
           "every length; cos/sin times long_mscale if max(position_ids) + 1 > original_max_position_embeddings, "
           "else short_mscale), apply_rotary_pos_emb (rotate_half)",
           theta_defaults={None: 1_000_000.0}, mscale_pair=True,
           rope_keys={"short_mscale": ("longrope",), "long_mscale": ("longrope",)},
           defaults={"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072}),
    Family("olmo3", f"{_HF}/olmo3 Olmo3Config.convert_rope_params_to_dict (rope_scaling -> full_attention only, "
           "rope_theta -> both, default_theta 500000; layer_types: every 4th full), Olmo3RotaryEmbedding (one "
           "inv_freq and attention_scaling per layer type), apply_rotary_pos_emb (rotate_half)",
           theta_keys={"full_attention": "rope_theta", "sliding_attention": "rope_theta"},
           theta_defaults={"full_attention": 500_000.0, "sliding_attention": 500_000.0},
           layers="every_nth_full::4", scaling_to=("full_attention",), flat_parameters_ignored=True,
           defaults={"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 2048,
                     "num_hidden_layers": 32}),
    Family("ernie4_5", f"{_HF}/ernie4_5 Ernie4_5Config (default_theta 500000, head_dim 128), "
           "Ernie4_5RotaryEmbedding, apply_rotary_pos_emb (cos[..., :d/2].repeat_interleave(2): interleaved pairs)",
           layout="interleaved", theta_defaults={None: 500_000.0},
           defaults={"hidden_size": 1024, "num_attention_heads": 16, "head_dim": 128,
                     "max_position_embeddings": 131072}),
    Family("ernie4_5_moe", f"{_HF}/ernie4_5_moe Ernie4_5_MoeConfig (default_theta 500000), "
           "Ernie4_5_MoeRotaryEmbedding, apply_rotary_pos_emb (cos[..., :d/2].repeat_interleave(2): interleaved)",
           layout="interleaved", theta_defaults={None: 500_000.0},
           defaults={"hidden_size": 2560, "num_attention_heads": 20, "max_position_embeddings": 131072}),
    Family("hunyuan_v1_dense", f"{_HF}/hunyuan_v1_dense HunYuanDenseV1Config, HunYuanDenseV1RotaryEmbedding "
           "(rope_type dynamic with alpha -> ntk_alpha: base = rope_theta * alpha ** (head_dim / (head_dim - 2)) "
           "at every length, compute_ntk_alpha_rope_parameters), apply_rotary_pos_emb (rotate_half)",
           ntk_alpha=True, rope_keys={"alpha": ("dynamic",)},
           defaults={"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 2048}),
)}  # fmt: skip

#: Multimodal wrappers -> the model_type of their text model when text_config does not say (the wrapper's
#: default text config class). Qwen2-VL configs before transformers 5 keep the text fields at top level.
WRAPPERS: dict[str, str] = {
    "gemma3": "gemma3_text", "llama4": "llama4_text", "llava": "llama", "llava_next": "llama",
    "llava_onevision": "qwen2", "mistral3": "mistral", "qwen2_vl": "qwen2_vl_text", "qwen2_5_vl": "qwen2_5_vl_text",
    "paligemma": "gemma", "cohere2_vision": "cohere2", "qwen3_vl": "qwen3_vl_text",
    "qwen3_vl_moe": "qwen3_vl_moe_text",
}  # fmt: skip
#: Wrappers whose text fields may sit at top level (the config class builds text_config from them).
TOP_LEVEL_TEXT = ("qwen2_vl", "qwen2_5_vl")


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
    family : Family or None
        The :data:`FAMILIES` entry used; ``None`` for an unknown model type (generic Llama reading).
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
    family: Family | None
    kind: str
    layer_types: tuple[str, ...]
    warnings: list[str]
    _head: dict[str, _Value]
    _ropes: dict[str, dict[str, _Value] | None]
    _where: dict[str, str]
    assumption: str | None = None

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
        fam = self.family.name if self.family else None
        out: dict[str, Any] = {
            "model_type": self.model_type, "family": fam, "kind": self.kind,
            "reference": self.family.reference if self.family else "generic (Llama) reading",
            "layer_type": layer_type, "layer_types": list(self.layer_types),
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
        if self.assumption is not None:
            out["read_as"] = {"value": self.family.name if self.family else None, "from": self.assumption}
        out["attention_scaling"] = {
            "value": _attention_scaling(self.kind, self.params(layer_type, 1)),
            "from": "HF's formula for this rule",
        }
        if "_long_mscale" in rope:
            out["attention_scaling"]["from"] = (
                "short_mscale for tables up to original_max_position_embeddings rows, long_mscale beyond"
            )
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
    if kind != "rope":
        return 1.0
    from ..encodings.rope.core import Rope

    return float(Rope.from_params(params).attention_scaling)  # type: ignore[attr-defined]


# ----- reading ---------------------------------------------------------------------------------------------
def read_model_config(config: Mapping[str, Any], *, read_as: str | None = None) -> ModelConfig:
    """Read a config.json dict with its family's rules (see the module docstring); raise ParameterError.

    ``read_as`` (a :data:`FAMILIES` name) reads the config with that family's rules whatever its model_type
    says, and turns what posenc does not understand into warnings; the result's ``assumption`` says so."""
    if not isinstance(config, Mapping):
        raise ParameterError(f"config must be a JSON object, got {_json_type(config)}")
    if read_as is not None and read_as not in FAMILIES:
        raise ParameterError(
            f"{ref('read_as')} {read_as!r} is no family posenc reads; choose from: {', '.join(sorted(FAMILIES))}"
        )
    _check_depth_obj(config, "config")
    return _Reader(dict(config), read_as).read()


class _Reader:
    def __init__(self, config: dict[str, Any], read_as: str | None = None) -> None:
        self.outer = config
        self.read_as = read_as
        self.warnings: list[str] = []
        #: keys posenc does not understand that could change the table: an error unless read_as is given
        self.unknown: list[str] = []

    # where a key lives, for messages ("text_config.rope_theta")
    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def read(self) -> ModelConfig:
        outer_type = self.outer.get("model_type")
        if outer_type is not None and not isinstance(outer_type, str):
            raise ParameterError(f"config key model_type={_show(outer_type)} is not a string; fix config.json")
        cfg, self.prefix = self.outer, ""
        text = self.outer.get("text_config")
        if text is not None:
            if not isinstance(text, dict):
                raise ParameterError(f"config key text_config={_show(text)} is not an object; fix config.json")
            cfg, self.prefix = text, "text_config."
        self.cfg = cfg
        mt = cfg.get("model_type") if text is not None else outer_type
        if text is not None and mt is None:
            mt = WRAPPERS.get(outer_type or "")
        if mt is not None and not isinstance(mt, str):
            raise ParameterError(f"config key {self.key('model_type')}={_show(mt)} is not a string; fix config.json")
        if text is None and outer_type in WRAPPERS and outer_type in TOP_LEVEL_TEXT:
            mt = WRAPPERS[outer_type]  # Qwen2-VL before transformers 5: text fields at top level
        elif text is None and outer_type in WRAPPERS:
            mt = WRAPPERS[outer_type]
            self.warnings.append(f"{outer_type} config has no text_config; reading the text model's keys at top level")
        fam = FAMILIES.get(mt or "")
        assumption = None
        if self.read_as is not None:
            fam = FAMILIES[self.read_as]
            assumption = f"model_type {mt or 'unset'!r} read with {self.read_as}'s rules, as the user asked (read_as)"
        elif fam is None and mt is not None:  # a bare config without model_type is read generically, unwarned
            self.warnings.append(
                f"unknown model_type {mt!r}: reading it like llama (rotate_half, base 10000), as every key that "
                "could change the table is one posenc reads; check the model's modeling code"
            )
        self.fam = fam or _GENERIC
        self.known = fam is not None
        self.family_name = self.fam.name
        self.model_type = mt or "unknown"
        head = self.read_head()
        known = self.fam.known_top()
        for k in cfg:
            if POSITIONAL_KEY.search(k) and k not in known:
                self.unknown.append(
                    f"config key {self.key(k)} is one {self.family_name if fam else 'the generic'} reading does "
                    "not know"
                )
        ropes, layer_types = self.read_ropes(head)
        if fam is not None and fam.fixed_base is not None:
            for name in ("rope_theta",):
                if name in cfg:
                    self.warnings.append(
                        f"{self.key(name)} is ignored: transformers' {fam.name} hard-codes base {fam.fixed_base:g}"
                    )
        if self.unknown:
            if self.read_as is None:
                more = f" (and {len(self.unknown) - 1} more)" if len(self.unknown) > 1 else ""
                what = f"model_type {self.model_type!r}" if fam else f"unknown model_type {self.model_type!r}"
                raise ParameterError(
                    f"{self.unknown[0]}{more}, and it could change the tables of {what}; check the model's code, "
                    f"then pass {ref('read_as')} FAMILY (e.g. llama) to read it as that family"
                )
            self.warnings.extend(f"{u}; ignored: read with {self.read_as}'s rules, as asked" for u in self.unknown)
        return ModelConfig(self.model_type, fam, self.fam.kind, layer_types, self.warnings, head, ropes, {}, assumption)

    # ----- scalar fields ------------------------------------------------------------------------------------
    def get(self, canonical: str, *, integer: bool = True, required: bool = False, **kw: Any) -> _Value | None:
        """A top-level (text) config value: the family's aliases, then the class default."""
        for key in self.fam.aliases.get(canonical, (canonical,)):
            if self.cfg.get(key) is not None:
                value = _number(self.cfg[key], self.key(key), integer=integer, **kw)
                return _Value(value, f"config key {self.key(key)}")
        if canonical in self.fam.defaults and self.fam.defaults[canonical] is not None:
            return _Value(self.fam.defaults[canonical], f"default of {self.family_name}")
        if required:
            names = " or ".join(self.fam.aliases.get(canonical, (canonical,)))
            raise ParameterError(f"config needs {names}; missing {self.key(names.split(' or ')[0])}")
        return None

    def read_head(self) -> dict[str, _Value]:
        fam, out = self.fam, {}
        mp = self.get("max_position_embeddings")
        if mp is not None:
            out["max_position_embeddings"] = mp
        if fam.head_dim == "qk_rope" or (not self.known and self.cfg.get("qk_rope_head_dim") is not None):
            out["dim"] = self.get("qk_rope_head_dim", required=True)  # type: ignore[assignment]
            return out
        hd = None
        if fam.head_dim == "config":
            v = self.cfg.get("head_dim")
            if v is not None:
                hd = _Value(_number(v, self.key("head_dim"), integer=True), f"config key {self.key('head_dim')}")
            elif fam.defaults.get("head_dim") is not None:
                hd = _Value(fam.defaults["head_dim"], f"default of {self.family_name}")
        elif "head_dim" in self.cfg and fam.head_dim == "computed":
            self.warnings.append(
                f"{self.key('head_dim')} is ignored: transformers' {fam.name} uses hidden_size // num_attention_heads"
            )
        if hd is None:
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
            hd = _Value(hs.value // nh.value, f"{hs.origin} // {nh.origin}")
        out["dim"] = hd
        return out

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
        layer_list = self.layer_types()
        types_ = sorted(set(layer_list)) if layer_list else ["default"]
        per_layer_keys = set(fam.theta_keys) - {None}
        nested = bool(rope) and all(isinstance(v, dict) or v is None for v in rope.values())
        if nested and not per_layer_keys and not layer_list:
            types_ = sorted(rope)  # transformers 5 per-layer rope_parameters of a family posenc reads generically
        if rope and not nested and fam.flat_parameters_ignored and where.endswith("rope_parameters."):
            self.warnings.append(
                f"{where[:-1]} is flat, and transformers' {fam.name} reads it per layer type only: its keys are "
                "ignored, as transformers does (rope_scaling applies a flat dict to full_attention)"
            )
            rope = {}
        ropes: dict[str, dict[str, _Value] | None] = {}
        for lt in types_:
            if lt in fam.nope:
                ropes[lt] = None
                continue
            if nested:
                entry = rope.get(lt)
                if entry is None:
                    if lt in rope or not per_layer_keys:
                        ropes[lt] = None
                        continue
                    entry, ewhere = {}, f"{where}{lt}."
                else:
                    ewhere = f"{where}{lt}."
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
            extra = sorted(set(rope) - set(types_))
            if extra:
                self.warnings.append(f"{where}{extra[0]} names no attention type of this model; ignored")
        if not any(r is not None for r in ropes.values()):
            raise ParameterError(f"{self.model_type}: no layer applies a rotary embedding; nothing to build")
        return ropes, tuple(types_)

    def layer_types(self) -> list[str]:
        """The attention type of each layer (config ``layer_types``, else the family's rule), or []."""
        fam, cfg = self.fam, self.cfg
        lts = cfg.get("layer_types")
        if lts is not None:
            if not isinstance(lts, list) or not all(isinstance(x, str) for x in lts) or not lts:
                raise ParameterError(f"config key {self.key('layer_types')} must be a non-empty list of strings")
            remap = {"attention": "full_attention"}
            return [remap.get(x) or x for x in lts]
        if fam.layers is None:
            return []
        n = self.get("num_hidden_layers")
        n_layers = n.value if n is not None else 1
        if n_layers > 100_000:
            raise ParameterError(f"config key {self.key('num_hidden_layers')}={n_layers} is out of range")
        if fam.layers == "alternate":
            return ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n_layers)]
        if fam.layers.startswith("every_nth_full:"):
            _, key, default = fam.layers.split(":")
            v = cfg.get(key, cfg.get(f"_{key}")) if key else None  # olmo3: no key, every 4th layer is full
            k = _number(v, self.key(key), integer=True) if v is not None else int(default)
            return ["sliding_attention" if (i + 1) % k else "full_attention" for i in range(n_layers)]
        if fam.layers == "modernbert":
            v = cfg.get("global_attn_every_n_layers")
            k = _number(v, self.key("global_attn_every_n_layers"), integer=True) if v is not None else 3
            return ["sliding_attention" if i % k else "full_attention" for i in range(n_layers)]
        if fam.layers == "llama4":
            nrl = cfg.get("no_rope_layers")
            if nrl:
                if not isinstance(nrl, list) or not all(x in (0, 1) and not isinstance(x, float) for x in nrl):
                    raise ParameterError(f"config key {self.key('no_rope_layers')} must be a list of 0 and 1")
                flags = nrl
            else:
                v = cfg.get("no_rope_layer_interval")
                k = _number(v, self.key("no_rope_layer_interval"), integer=True) if v is not None else 4
                flags = [int((i + 1) % k != 0) for i in range(n_layers)]
            return ["chunked_attention" if f else "full_attention" for f in flags]
        raise AssertionError(fam.layers)  # pragma: no cover

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
        if fam.fixed_base is not None:
            return _Value(fam.fixed_base, f"fixed in transformers' {fam.name} (create_sinusoidal_positions)")
        if entry.get("rope_theta") is not None:
            return _Value(_number(entry["rope_theta"], f"{where}rope_theta"), f"config key {where}rope_theta")
        key = fam.theta_keys.get(lt, fam.theta_keys.get(None, "rope_theta"))
        if cfg.get(key) is not None:
            return _Value(_number(cfg[key], self.key(key)), f"config key {self.key(key)}")
        if fam.name == "gpt_neox" and cfg.get("rope_theta") is not None:
            self.warnings.append(f"{self.key('rope_theta')} is ignored: transformers' gpt_neox reads rotary_emb_base")
        default = fam.theta_defaults.get(lt, fam.theta_defaults.get(None, 10000.0))
        return _Value(default, f"default of {self.family_name}")

    def read_rope(
        self, entry: dict[str, Any], where: str, head: dict[str, _Value], lt: str | None
    ) -> dict[str, _Value]:
        fam, cfg = self.fam, self.cfg
        raw_type = entry.get("rope_type", entry.get("type", "default"))
        if not isinstance(raw_type, str):
            raise ParameterError(f"config key {where}rope_type={_show(raw_type)} is not a string; fix config.json")
        hf_type = fam.renames.get(raw_type, raw_type)
        if raw_type == "mrope" and fam.kind != "mrope":
            raise ParameterError(f"{where}rope_type 'mrope' needs a qwen2_vl or qwen2_5_vl model_type")
        if hf_type not in HF_SCALINGS:
            raise ParameterError(
                f"unknown {where}rope_type {raw_type!r}; choose from: {', '.join(HF_SCALINGS)}"
                + (", mrope (Qwen2-VL)" if fam.kind != "mrope" else "")
            )
        scaling = HF_SCALINGS[hf_type]
        # Hunyuan: "dynamic" with a (truthy) alpha is transformers' ntk_alpha, a fixed NTK base at every length
        alpha = fam.ntk_alpha and hf_type == "dynamic" and bool(entry.get("alpha"))
        rule = "ntk_alpha" if alpha else hf_type
        for k in entry:
            if k == "mrope_section" and fam.kind == "mrope":
                continue
            if k not in ROPE_KEYS and k not in fam.rope_keys:
                self.unknown.append(f"{where}{k} is a RoPE key posenc does not know")
                continue
            readers = ROPE_KEYS.get(k) or fam.rope_keys.get(k) or ()
            read = rule in readers if rule != "ntk_alpha" else k in ("rope_type", "type", "rope_theta", "alpha")
            if readers or rule == "ntk_alpha":
                if read:
                    continue
                if self.known or self.read_as is not None:
                    self.warnings.append(
                        f"{where}{k} is not read by {self.family_name}'s rope_type {rule!r}; ignored, as transformers does"
                    )
                else:
                    self.unknown.append(
                        f"{where}{k} is not read by rope_type {rule!r} in Llama's rules, though this model's class "
                        "might read it"
                    )
        out: dict[str, _Value] = {"dim": head["dim"], "base": self.theta(entry, where, lt)}
        out["layout"] = _Value(fam.layout, f"layout of {self.family_name}")
        if fam.kind == "mrope":
            out["_layout"] = out.pop("layout")  # mrope has one layout (half); reported, not a parameter
            if scaling != "none":
                raise ParameterError(f"{where}rope_type {raw_type!r}: posenc's mrope supports the default rule only")
            sec = entry.get("mrope_section", fam.defaults["mrope_section"])
            origin = (
                f"config key {where}mrope_section" if "mrope_section" in entry else f"default of {self.family_name}"
            )
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
                        f"config key {where}mrope_interleaved={_show(flag)}, but transformers' {fam.name} always "
                        "interleaves the M-RoPE sections; drop the key or set it to true"
                    )
                out["mrope_interleaved"] = _Value(True, f"layout of {self.family_name} (recomposition_frequencies)")
            return out
        out["scaling"] = _Value(
            scaling,
            f"config key {where}rope_type"
            if "rope_type" in entry or "type" in entry
            else f"default of {self.family_name}",
        )
        if alpha:
            # transformers' compute_ntk_alpha_rope_parameters reads config.head_dim itself (None fails there)
            if "head_dim" not in head["dim"].origin:
                raise ParameterError(
                    f"{where}alpha needs config key {self.key('head_dim')}: transformers' {fam.name} computes the "
                    "NTK-alpha base from config.head_dim; add head_dim to config.json"
                )
            out["scaling"] = _Value(
                "ntk", f"config key {where}rope_type 'dynamic' with {where}alpha (transformers' ntk_alpha)"
            )
            out["factor"] = _Value(_number(entry["alpha"], f"{where}alpha"), f"config key {where}alpha")
            out["_rot_dim"] = _Value(head["dim"].value, "the head dim")
            return out
        dim = head["dim"].value
        # partial rotary: GPT-J's rotary_dim, else partial_rotary_factor (rope dict first, then top level)
        rot_dim = dim
        if fam.head_dim == "gpt2":
            rd = self.cfg.get("rotary_dim", None) if "rotary_dim" in self.cfg else fam.defaults["rotary_dim"]
            if rd is None:
                raise ParameterError(
                    f"config key {self.key('rotary_dim')}=null: transformers' {fam.name} then rotates hidden_size "
                    "features, which fits one head only; set rotary_dim"
                )
            rd = _number(rd, self.key("rotary_dim"), integer=True)
            if rd > dim or rd % 2:
                raise ParameterError(f"config key {self.key('rotary_dim')}={rd} must be even and <= the head dim {dim}")
            origin = f"config key {self.key('rotary_dim')}" if "rotary_dim" in self.cfg else f"default of {fam.name}"
            out["rotary_dim"] = _Value(rd, origin)
            rot_dim = rd
        else:
            prf = None
            if entry.get("partial_rotary_factor") is not None:
                prf = _Value(
                    _number(entry["partial_rotary_factor"], f"{where}partial_rotary_factor", high=1.0),
                    f"config key {where}partial_rotary_factor",
                )
            else:
                for key in fam.partial_key:
                    if cfg.get(key) is not None:
                        prf = _Value(_number(cfg[key], self.key(key), high=1.0), f"config key {self.key(key)}")
                        break
                if prf is None and fam.partial_key != ("partial_rotary_factor",) and "partial_rotary_factor" in cfg:
                    self.warnings.append(
                        f"{self.key('partial_rotary_factor')} is ignored: transformers' {fam.name} reads "
                        f"{fam.partial_key[0]}"
                    )
                if prf is None and fam.defaults.get("partial_rotary_factor") is not None:
                    prf = _Value(fam.defaults["partial_rotary_factor"], f"default of {self.family_name}")
            if prf is not None and (prf.value != 1.0 or scaling == "proportional"):
                if scaling != "proportional" and self._default_ignores_partial(scaling):
                    self.warnings.append(
                        f"{prf.origin.removeprefix('config key ')} is ignored: transformers' {fam.name} default "
                        "rotary rotates the whole head"
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
            raise ParameterError(f"the head dim {dim} gives {rot_dim} rotated features, an odd number; fix config.json")
        out["_rot_dim"] = _Value(rot_dim, "head dim x partial rotary factor" if rot_dim != dim else "the head dim")
        self.read_scaling(out, entry, where, hf_type, scaling, head, rot_dim)
        if fam.mscale_pair and scaling != "none":
            self.read_mscale_pair(out, entry, where, raw_type, scaling)
        if fam.no_attention_scaling and scaling in ("yarn", "longrope"):
            out["attention_factor"] = _Value(
                1.0, f"transformers' {fam.name} does not multiply cos/sin by attention_scaling"
            )
        return out

    def read_mscale_pair(
        self, out: dict[str, _Value], entry: dict[str, Any], where: str, raw_type: str, scaling: str
    ) -> None:
        """Phimoe: cos/sin times short_mscale or long_mscale (by sequence length), inv_freq from short_factor."""
        name = self.fam.name
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

    def _default_ignores_partial(self, scaling: str) -> bool:
        # Llama-style default rotary classes never read partial_rotary_factor; NeoX, Phi-3, GLM-style do. The
        # scaling rules of modeling_rope_utils always read it.
        return (
            self.known
            and scaling == "none"
            and self.fam.name
            in (
                "llama",
                "mistral",
                "qwen2",
                "cohere",
                "cohere2",
                "gemma",
                "gemma2",
                "gemma3_text",
                "modernbert",
                "gpt_oss",
                "llama4_text",
                "deepseek_v2",
                "deepseek_v3",
                "phimoe",
                "olmo3",
                "ernie4_5",
                "ernie4_5_moe",
                "hunyuan_v1_dense",
            )
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
