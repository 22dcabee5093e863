"""Inference engines' RoPE as data: the tables each engine computes for one model config, by its rules and in
its arithmetic.

The same config.json gives different cos/sin tables in different runtimes. :data:`ENGINES` holds, per engine,
the one version posenc mirrors, the arithmetic it computes in, and each rule where it departs from HF
transformers (the reference, ``hf``) with the file and line of that version's source it was read from. A rule's
``effect`` is one of a small closed set that :func:`engine_params` (the table's parameters) and
:func:`engine_limits` (the rows the engine computes at all) interpret:

===========================  =============================================================================
effect                       meaning
===========================  =============================================================================
longrope:always-long         LongRoPE's long factors at every length
longrope:max-model-len       long factors iff ``--max-model-len`` > original (fixed for the whole run)
longrope:n-ctx               long factors iff ``--n-ctx`` > original (fixed by the context size)
longrope:positions-boundary  per batch: long factors iff the largest position > original; a batch whose
                             largest position *is* original reads the long table's position 0 there
                             (cos = its scale, sin = 0) and the short table before it
dynamic:static               dynamic NTK computed once at ``factor * max_position_embeddings``: a fixed
                             base ``b (f^2 - f + 1)^(d/(d-2))`` at every position
dynamic:plain                dynamic NTK with the trained length as its own target: plain RoPE
yarn:truncate-ignored        the correction range is always floored/ceiled (``truncate: false`` ignored)
yarn:never-rounds            the correction range is never floored/ceiled (``truncate: true`` ignored)
yarn:needs-beta-fast         YaRN only when the config's rope dict has ``beta_fast``; plain RoPE otherwise
yarn:attention-factor-       the config's ``attention_factor`` is ignored (0.1 ln f + 1 instead)
ignored
yarn:mscale-direct           ``mscale`` alone (no ``mscale_all_dim``) is the cos/sin multiplier itself
yarn:mscale-numerator        ``mscale`` alone multiplies the log term: 0.1 mscale ln f + 1
yarn:mscale-given            ``mscale`` and ``mscale_all_dim`` both present, even 0: their ratio
                             ``(0.1 mscale ln f + 1) / (0.1 mscale_all_dim ln f + 1)``
linear:divides-positions     linear scaling divides the float32 positions, not the frequencies
partial:ignored              the model file rotates the whole head (``partial_rotary_factor`` unread)
pairing:by-arch              rotation pairs follow the GGUF architecture (NORM or NEOX); convert_hf_to_gguf
                             permutes Q/K weights so that scores equal HF's: the table is HF's
limit:max-model-len          positions at or past ``max_model_len`` are refused (a longer request is
                             rejected); a ``--max-model-len`` above the length derived from the config is
                             refused at start-up
limit:cache-rows             the cos/sin cache holds fewer rows than the engine's ``max_model_len``: the
                             positions past it are out of the cache
read:by-architecture         the engine's own parser reads the config (:func:`own_reading`: the keys and
                             defaults of the architecture's reader, :attr:`Engine.readers`), not HF's
refuse:rope-type             a rope type the engine's RoPE does not dispatch is refused (the model does not load)
refuse:needs-max-position-   YaRN without a top-level ``max_position_embeddings`` is refused
embeddings
refuse:needs-lengths         LongRoPE without ``max_position_embeddings`` or ``original_max_position_embeddings``
                             is refused
yarn:factor-from-lengths     the YaRN factor is ``max_position_embeddings / original_max_position_embeddings``
                             whenever the rope dict gives the latter (equal lengths: factor 1, no YaRN)
yarn:mscale-by-architecture  without ``attention_factor``: the ``mscale`` ratio only where the architecture opts
                             in, 1 with ``llama_4_scaling_beta``, else ``0.1 ln f + 1``
longrope:max-position-       long factors at every position iff ``max_position_embeddings`` > original; the
embeddings                   attention factor from the two lengths (``attention_factor`` unread)
===========================  =============================================================================

A divergence is said with this model's values (:func:`rule_lines`, :data:`SAID_WITH_VALUES`), as ``compare`` and
``audit`` name it.

Arithmetic (``Engine.arithmetic``): ``exact`` (posenc's correctly rounded tables: ``onnx-genai``, whose
arithmetic posenc does not mirror: its rules only), ``torch-float32`` (HF transformers' rotary
classes, vLLM, SGLang: float32 ``inv_freq`` as HF's float32 formula, float32 angles ``fl(t w)``,
float32 cos/sin, times the float32 scale; exllamav3's ``RoPE.compute_sincos`` computes the same), ``mlx-float32`` (mlx's CPU rope, ``mlx/fast.cpp``: ``exp(-k ln b /
(d/2))`` in float32 or ``1 / freqs`` of mlx-lm's own float32 frequencies, float32 angles), ``ggml-float32``
(llama.cpp: the float32 emulation of ggml in :mod:`posenc_cli.models.llamacpp`, iterated ``powf``). The stored
tables of ``tests/data/engines`` were made by each engine's own code (``tools/golden/engines_*``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..encodings._trig import LastBlock
from ..encodings.rope.core import Rope, place_pairs
from ..errors import ParameterError, param

# the largest relative difference of ggml's per-pair frequencies (iterated float32 powf) from the exact ones that
# still counts as the same frequencies: the GGUF verdict's rule, kept beside the error model every verdict asks
from ..inspect.tolerance import GGML_FREQ_RTOL, frequency_error

#: Engine names, in the order tables and messages list them.
ENGINE_NAMES = ("hf", "llamacpp", "mlx", "vllm", "sglang", "onnx-genai", "exllamav3")
#: How the arithmetic is named in messages and metadata.
ARITHMETIC = {
    "exact": "exact (correctly rounded)",
    "torch-float32": "torch float32 (inv_freq, angles, cos/sin)",
    "mlx-float32": "mlx float32 (exp-based inv_freq or 1/freqs, angles, cos/sin)",
    "ggml-float32": "ggml float32 (iterated powf theta, cos/sin)",
}


@dataclass(frozen=True)
class Rule:
    """One way an engine departs from HF transformers, read from ``source`` (file:line of the mirrored version)."""

    effect: str
    scalings: tuple[str, ...]
    says: str
    source: str
    #: the HF model types whose model file the rule is in ("*": every model)
    model_types: tuple[str, ...] = ("*",)


@dataclass(frozen=True)
class MaxLen:
    """How an engine derives its default context (vLLM's ``_get_and_verify_max_len``), as data."""

    keys: tuple[str, ...]  # the smallest present wins
    override: str  # a key that replaces the smallest when present
    unscaled: tuple[str, ...]  # HF rope types whose factor does not multiply it
    longrope_default: str  # the key the default falls back to for LongRoPE models
    source: str


@dataclass(frozen=True)
class Engine:
    name: str
    package: str
    version: str
    reference: str
    arithmetic: str = "exact"
    rules: tuple[Rule, ...] = field(default_factory=tuple)
    #: engine options (the CLI flags' parameters) that its rules read
    options: tuple[str, ...] = ()
    max_len: MaxLen | None = None
    #: the model types the engine loads, where it refuses the others (None: not tabulated)
    model_types: frozenset[str] | None = None
    model_types_source: str = ""
    #: the model types whose handling by this engine posenc mirrors, when that is fewer than the engine loads
    #: (llama.cpp: the conversions of convert_hf_to_gguf.py posenc tabulates); another type is refused as
    #: posenc's limit, never reported as the engine's
    mirrored_types: frozenset[str] | None = None
    mirrored_types_source: str = ""
    #: the architectures the engine's own model files serve; others run HF's code (None: every architecture)
    native: frozenset[str] | None = None
    native_source: str = ""
    #: the architectures (the config's architectures[0]) the engine loads, where it refuses the others and a config
    #: without one (None: not keyed by architecture)
    architectures: frozenset[str] | None = None
    architectures_source: str = ""
    #: how the engine's own config parser reads RoPE, per architecture (:data:`EXL3_READERS`: pairing style, default
    #: rope_theta, default partial_rotary_factor, the DeepSeek mscale ratio, the head dim's key); an architecture
    #: the engine loads that this table lacks is refused as posenc's limit
    readers: dict[str, tuple[str, float, float, bool, str]] | None = None
    readers_source: str = ""

    @property
    def label(self) -> str:
        return f"{self.package} {self.version}"


#: The model types mlx-lm 0.32.2 loads (a module of mlx_lm/models, or MODEL_REMAPPING; mlx_lm/utils.py:220 refuses
#: any other): printed by tools/golden/engines_support.py.
MLX_MODEL_TYPES = frozenset(['Klear', 'afm7', 'afmoe', 'apertus', 'baichuan_m1', 'bailing_hybrid', 'bailing_moe', 'bailing_moe_linear', 'bailing_moe_v3', 'bitnet', 'cohere', 'cohere2', 'dbrx', 'deepseek', 'deepseek_v2', 'deepseek_v3', 'deepseek_v32', 'deepseek_v41', 'deepseek_v41_text', 'dots1', 'ernie4_5', 'ernie4_5_moe', 'exaone', 'exaone4', 'exaone_moe', 'falcon_h1', 'falcon_mamba', 'gear', 'gemma', 'gemma2', 'gemma3', 'gemma3_text', 'gemma3n', 'gemma4', 'gemma4_text', 'gemma4_unified', 'glm', 'glm4', 'glm4_moe', 'glm4_moe_lite', 'glm_moe_dsa', 'gpt2', 'gpt_bigcode', 'gpt_neox', 'gpt_oss', 'gptj', 'granite', 'granitemoe', 'granitemoehybrid', 'helium', 'hunyuan', 'hunyuan_v1_dense', 'internlm2', 'internlm3', 'iquestcoder', 'iquestloopcoder', 'jamba', 'joyai_llm_flash', 'kimi_k2', 'kimi_k25', 'kimi_k3', 'kimi_linear', 'kimi_vl', 'laguna', 'lfm2', 'lfm2-vl', 'lfm2_moe', 'lille-130m', 'llama', 'llama4', 'llama4_text', 'llava', 'longcat_flash', 'longcat_flash_ngram', 'mamba', 'mamba2', 'mellum', 'mimo', 'mimo_v2_flash', 'minicpm', 'minicpm3', 'minimax', 'minimax_m2', 'minimax_m3_vl', 'ministral3', 'mistral', 'mistral3', 'mistral4', 'mixtral', 'muse_glimmer', 'muse_spark', 'nanbeige', 'nanochat', 'nemotron', 'nemotron-nas', 'nemotron_h', 'olmo', 'olmo2', 'olmo3', 'olmo_hybrid', 'olmoe', 'openelm', 'phi', 'phi-msft', 'phi3', 'phi3small', 'phimoe', 'phixtral', 'pixtral', 'plamo', 'plamo2', 'plamo3', 'prism_hadamard_qwen35', 'qwen', 'qwen2', 'qwen2_5_vl', 'qwen2_moe', 'qwen2_vl', 'qwen3', 'qwen3_5', 'qwen3_5_moe', 'qwen3_moe', 'qwen3_next', 'qwen3_vl', 'qwen3_vl_moe', 'recurrent_gemma', 'rwkv7', 'seed_oss', 'smollm3', 'solar_open', 'spark2_5', 'stablelm', 'starcoder2', 'step3p5', 'talkie', 'telechat3', 'xverse', 'youtu_llm'])  # fmt: skip

#: The architectures vLLM 0.33.0 and SGLang 0.5.23 serve with their own model files (vLLM's registry less its
#: Transformers-backend entries; SGLang's EntryClass lists): any other runs through the engine's Transformers
#: backend, HF's own modeling and rotary code. Printed by tools/golden/engines_support.py from the wheels.
VLLM_NATIVE_ARCHITECTURES = frozenset(['AXK1ForCausalLM', 'AfmoeForCausalLM', 'AliceAIForCausalLM', 'Alpamayo2Super', 'ApertusForCausalLM', 'AriaForConditionalGeneration', 'AudioFlamingo3ForConditionalGeneration', 'BagelForConditionalGeneration', 'BailingMoeForCausalLM', 'BailingMoeV25MTPModel', 'BailingMoeV2ForCausalLM', 'BailingMoeV2_5ForCausalLM', 'BailingMoeV3ForCausalLM', 'BailingMoeV3MTPModel', 'BailingMoeV3VLForConditionalGeneration', 'BeamForCausalLM', 'BeeForConditionalGeneration', 'BertForMaskedLM', 'BertForSequenceClassification', 'BertForTokenClassification', 'BertModel', 'BertSpladeSparseEmbeddingModel', 'BgeM3EmbeddingModel', 'Blip2ForConditionalGeneration', 'BloomForCausalLM', 'CLIPModel', 'ChatGLMForConditionalGeneration', 'ChatGLMModel', 'ClefFlashForJointSchema', 'ClefOmniForJointSchema', 'Cohere2ForCausalLM', 'Cohere2MoeForCausalLM', 'Cohere2VisionForConditionalGeneration', 'CohereAsrForConditionalGeneration', 'CohereCompassForConditionalGeneration', 'CohereForCausalLM', 'ColBERTJinaRobertaModel', 'ColBERTLfm2Model', 'ColBERTModernBertModel', 'ColModernVBertForRetrieval', 'ColPaliForRetrieval', 'ColQwen3', 'ColQwen3_5', 'ColUltraVBertForRetrieval', 'Cosmos3EdgeForConditionalGeneration', 'Cosmos3ForConditionalGeneration', 'D3ForSequenceClassification', 'DFlash2BeamDraftModel', 'DFlash2DraftModel', 'DFlashDraftModel', 'DFlashLagunaForCausalLM', 'DFlashMuseGlimmerAssistantModel', 'DFlashQwen3XPressModel', 'DSparkDraftModel', 'DSparkV41DraftModel', 'DbrxForCausalLM', 'DeciLMForCausalLM', 'DeepSeekMTPModel', 'DeepSeekV4MTPModel', 'DeepseekForCausalLM', 'DeepseekOCR2ForCausalLM', 'DeepseekOCRForCausalLM', 'DeepseekV2ForCausalLM', 'DeepseekV32ForCausalLM', 'DeepseekV32MTPModel', 'DeepseekV3BidirectionalModel', 'DeepseekV3ForCausalLM', 'DeepseekV41ForCausalLM', 'DeepseekV4ForCausalLM', 'DeepseekV4ForConditionalGeneration', 'DeepseekVLV2ForCausalLM', 'DiffusionGemmaForBlockDiffusion', 'DomynEdgeForCausalLM', 'DoryForCausalLM', 'Dots3NoteForCausalLM', 'Dots3NoteMTPModel', 'DotsOCRForCausalLM', 'Eagle2_5_VLForConditionalGeneration', 'Eagle3DeepseekV2ForCausalLM', 'Eagle3DeepseekV3ForCausalLM', 'Eagle3LlamaForCausalLM', 'Eagle3MiniMaxM2ForCausalLM', 'Eagle3Qwen2_5vlForCausalLM', 'Eagle3Qwen3ForCausalLM', 'Eagle3Qwen3vlForCausalLM', 'EagleCohereForCausalLM', 'EagleDeepSeekMTPModel', 'EagleLlama4ForCausalLM', 'EagleLlamaForCausalLM', 'EagleMiniCPMForCausalLM', 'EagleMistralForCausalLM', 'EagleMistralLarge3ForCausalLM', 'EmbeddingGemma2Model', 'Ernie4_5ForCausalLM', 'Ernie4_5_MoeForCausalLM', 'Ernie4_5_VLMoeForConditionalGeneration', 'ErnieMTPModel', 'Exaone4ForCausalLM', 'Exaone4_5_ForConditionalGeneration', 'Exaone4_5_MTP', 'ExaoneForCausalLM', 'ExaoneMoEForCausalLM', 'ExaoneMoeForCausalLM', 'ExaoneMoeMTP', 'ExtractHiddenStatesModel', 'FalconForCausalLM', 'FalconH1ForCausalLM', 'FalconMambaForCausalLM', 'FireRedASR2ForConditionalGeneration', 'FlintForCausalLM', 'FunASRForConditionalGeneration', 'FunAudioChatForConditionalGeneration', 'GLM4VForCausalLM', 'GPT2ForSequenceClassification', 'GPT2LMHeadModel', 'GPTJForCausalLM', 'Gemma2ForCausalLM', 'Gemma2Model', 'Gemma3ForCausalLM', 'Gemma3ForConditionalGeneration', 'Gemma3TextModel', 'Gemma3nForCausalLM', 'Gemma3nForConditionalGeneration', 'Gemma4DSparkModel', 'Gemma4ForCausalLM', 'Gemma4ForConditionalGeneration', 'Gemma4MTPModel', 'Gemma4UnifiedForConditionalGeneration', 'GemmaForCausalLM', 'Glm4ForCausalLM', 'Glm4MoeForCausalLM', 'Glm4MoeLiteForCausalLM', 'Glm4MoeLiteMTPModel', 'Glm4MoeMTPModel', 'Glm4vForConditionalGeneration', 'Glm4vMoeForConditionalGeneration', 'Glm5NextForCausalLM', 'Glm5NextForConditionalGeneration', 'Glm5NextMTPModel', 'GlmAsrForConditionalGeneration', 'GlmMoeDsaForCausalLM', 'GlmOcrForConditionalGeneration', 'GlmOcrMTPModel', 'GptOssForCausalLM', 'Granite4VisionForConditionalGeneration', 'GraniteForCausalLM', 'GraniteMoeForCausalLM', 'GraniteMoeHybridForCausalLM', 'GraniteMoeSWAForCausalLM', 'GraniteMoeSharedForCausalLM', 'GraniteSWAForCausalLM', 'GraniteSpeechForConditionalGeneration', 'GraniteSpeechPlusForConditionalGeneration', 'GteModel', 'GteNewForSequenceClassification', 'GteNewModel', 'H2OVLChatModel', 'HCXVisionV2ForCausalLM', 'HF_ColBERT', 'HYV3ForCausalLM', 'HYV3MTPModel', 'HYV4ForCausalLM', 'HYV4MTPModel', 'HfMoondream', 'HrmTextForCausalLM', 'HyperCLOVAXForCausalLM', 'IQuestCoderForCausalLM', 'IQuestLoopCoderForCausalLM', 'Idefics3ForConditionalGeneration', 'InklingForCausalLM', 'InklingForConditionalGeneration', 'InklingMTPModel', 'InternLM2ForCausalLM', 'InternLM2ForRewardModel', 'InternLM3ForCausalLM', 'InternS1ForConditionalGeneration', 'InternS1ProForConditionalGeneration', 'InternS2MobiusForConditionalGeneration', 'InternS2MobiusMTP', 'InternS2PreviewForConditionalGeneration', 'InternVLChatModel', 'InternVLForConditionalGeneration', 'IsaacForConditionalGeneration', 'JambaForCausalLM', 'JambaForSequenceClassification', 'JinaEmbeddingsV5Model', 'JinaForRanking', 'JinaVLForRanking', 'K2HorizonForCausalLM', 'K3DSparkModel', 'KananaVForConditionalGeneration', 'KeyeForConditionalGeneration', 'KeyeVL1_5ForConditionalGeneration', 'KimiK25ForConditionalGeneration', 'KimiK3ForConditionalGeneration', 'KimiK3MTPModel', 'KimiLinearForCausalLM', 'KimiVLForConditionalGeneration', 'LLaMAForCausalLM', 'LagunaForCausalLM', 'Lfm2BidirectionalModel', 'Lfm2ForCausalLM', 'Lfm2MoeForCausalLM', 'Lfm2VlForConditionalGeneration', 'LiLiCorrDraftModel', 'LightOnOCRForConditionalGeneration', 'Llama4ForCausalLM', 'Llama4ForConditionalGeneration', 'LlamaBidirectionalForSequenceClassification', 'LlamaBidirectionalModel', 'LlamaForCausalLM', 'LlamaForCausalLMEagle3', 'LlamaModel', 'LlamaNemotronVLForSequenceClassification', 'LlamaNemotronVLModel', 'Llama_Nemotron_Nano_VL', 'LlavaForConditionalGeneration', 'LlavaNextForConditionalGeneration', 'LlavaNextVideoForConditionalGeneration', 'LlavaOnevision2ForConditionalGeneration', 'LlavaOnevisionForConditionalGeneration', 'LongCatFlashMTPModel', 'LongcatFlashForCausalLM', 'LongcatFlashNgramForCausalLM', 'Mamba2ForCausalLM', 'MambaForCausalLM', 'MiDashengLMModel', 'MiMoForCausalLM', 'MiMoMTPModel', 'MiMoV2FlashForCausalLM', 'MiMoV2ForCausalLM', 'MiMoV2MTPModel', 'MiMoV2OmniForCausalLM', 'MiMoV2OmniMTPModel', 'MiniCPM3ForCausalLM', 'MiniCPMForCausalLM', 'MiniCPMO', 'MiniCPMOcrForConditionalGeneration', 'MiniCPMV', 'MiniCPMV4_6ForConditionalGeneration', 'MiniCPMV4_7ForConditionalGeneration', 'MiniMaxM2ForCausalLM', 'MiniMaxM3MTP', 'MiniMaxM3SparseForCausalLM', 'MiniMaxM3SparseForConditionalGeneration', 'Ministral3ForCausalLM', 'Mistral3ForConditionalGeneration', 'MistralForCausalLM', 'MistralLarge3ForCausalLM', 'MistralModel', 'MixtralForCausalLM', 'ModernBertForSequenceClassification', 'ModernBertForTokenClassification', 'ModernBertModel', 'ModernVBertModel', 'Molmo2ForConditionalGeneration', 'MolmoForCausalLM', 'Moondream3ForCausalLM', 'MoonshotKimiaForCausalLM', 'MossAudioModel', 'MossTranscribeDiarizeForConditionalGeneration', 'MuseGlimmerAssistantModel', 'MuseGlimmerForCausalLM', 'MuseGlimmerForConditionalGeneration', 'MuseSparkDSparkModel', 'MuseSparkForConditionalGeneration', 'NVLM_D', 'NemotronForCausalLM', 'NemotronHForCausalLM', 'NemotronHMTPModel', 'NemotronHPuzzleForCausalLM', 'NemotronH_Nano_Omni_Reasoning_V3', 'NemotronH_Nano_VL_V2', 'NemotronH_Omni_Reasoning_V3', 'NemotronH_Super_Omni_Reasoning_V3', 'NemotronParseForConditionalGeneration', 'NomicBertModel', 'OPTForCausalLM', 'OlmoHybridForCausalLM', 'OlmoeForCausalLM', 'OpenAIPrivacyFilterForTokenClassification', 'OpenCUAForConditionalGeneration', 'OpenPanguMTPModel', 'OpenPanguVLForConditionalGeneration', 'OpenVLAForActionPrediction', 'OpsColQwen3Model', 'OrionForCausalLM', 'Ovis', 'Ovis2_5', 'Ovis2_6ForCausalLM', 'Ovis2_6_MoeForCausalLM', 'PEagleDraftModel', 'PaddleOCRVLForConditionalGeneration', 'PaliGemmaForConditionalGeneration', 'PanguEmbeddedForCausalLM', 'PanguProMoEV2ForCausalLM', 'PanguUltraMoEForCausalLM', 'Param2MoEForCausalLM', 'ParseAuxMTPModel', 'PeagleLlamaForCausalLM', 'PeagleQwen3ForCausalLM', 'Phi3ForCausalLM', 'Phi3VForCausalLM', 'Phi4ForCausalLMV', 'Phi4MMForCausalLM', 'PhiMoEForCausalLM', 'PixtralForConditionalGeneration', 'Plamo3ForCausalLM', 'QianfanOCRForConditionalGeneration', 'Qwen2AudioForConditionalGeneration', 'Qwen2ForCausalLM', 'Qwen2ForProcessRewardModel', 'Qwen2ForRewardModel', 'Qwen2Model', 'Qwen2MoeForCausalLM', 'Qwen2VLForConditionalGeneration', 'Qwen2_5OmniForConditionalGeneration', 'Qwen2_5OmniModel', 'Qwen2_5_VLForConditionalGeneration', 'Qwen3ASRForConditionalGeneration', 'Qwen3ASRForcedAlignerForTokenClassification', 'Qwen3ASRRealtimeGeneration', 'Qwen3DSparkModel', 'Qwen3ForCausalLM', 'Qwen3MoeForCausalLM', 'Qwen3NextForCausalLM', 'Qwen3NextMTP', 'Qwen3OmniDSparkModel', 'Qwen3OmniMoeForConditionalGeneration', 'Qwen3VLForConditionalGeneration', 'Qwen3VLMoeForConditionalGeneration', 'Qwen3VLNemotronEmbedModel', 'Qwen3XPressModel', 'Qwen3_5ForCausalLM', 'Qwen3_5ForConditionalGeneration', 'Qwen3_5MTP', 'Qwen3_5MoeForCausalLM', 'Qwen3_5MoeForConditionalGeneration', 'Qwen3_5MoeMTP', 'Qwen4ExpForCausalLM', 'Qwen4ExpForConditionalGeneration', 'Qwen4ExpMTP', 'RForConditionalGeneration', 'RadioMBartPrefixForCausalLM', 'Rnj1ForCausalLM', 'RobertaForMaskedLM', 'RobertaForSequenceClassification', 'RobertaForTokenClassification', 'RobertaModel', 'SarvamMLAForCausalLM', 'SarvamMoEForCausalLM', 'SiglipModel', 'SkyworkR1VChatModel', 'SmolVLMForConditionalGeneration', 'SolarForCausalLM', 'StableLmForCausalLM', 'Step1ForCausalLM', 'Step3TextForCausalLM', 'Step3VLForConditionalGeneration', 'Step3p5ForCausalLM', 'Step3p5MTP', 'Step3p7ForConditionalGeneration', 'Step5ForCausalLM', 'Step5ForConditionalGeneration', 'Step5MTP', 'StepVLForConditionalGeneration', 'TeleChat2ForCausalLM', 'TeleChat3ForCausalLM', 'TeleFLMForCausalLM', 'Terratorch', 'UltravoxModel', 'UnlimitedOCRForCausalLM', 'VoxtralForConditionalGeneration', 'VoxtralRealtimeGeneration', 'VoyageQwen3BidirectionalEmbedModel', 'WhisperForConditionalGeneration', 'XLMRobertaForSequenceClassification', 'XLMRobertaForTokenClassification', 'XLMRobertaModel', 'Zamba2ForCausalLM'])  # fmt: skip
SGLANG_NATIVE_ARCHITECTURES = frozenset(['AfmoeForCausalLM', 'ApertusForCausalLM', 'ArceeForCausalLM', 'BaichuanForCausalLM', 'BailingMM2NativeForConditionalGeneration', 'BailingMMNativeForConditionalGeneration', 'BailingMoEForCausalLM', 'BailingMoeForCausalLM', 'BailingMoeForCausalLMNextN', 'BailingMoeV2ForCausalLM', 'BailingMoeV2_5ForCausalLM', 'BailingMoeV3ForCausalLM', 'BailingMoeV3VLForConditionalGeneration', 'BeamForCausalLM', 'BertForSequenceClassification', 'BertModel', 'CLIPModel', 'ChatGLMModel', 'Cohere2ForCausalLM', 'Cohere2MoeForCausalLM', 'Cohere2VisionForConditionalGeneration', 'CohereForCausalLM', 'Contriever', 'Cosmos3EdgeForConditionalGeneration', 'Cosmos3ForConditionalGeneration', 'DFlash2BeamDraftModel', 'DFlash2DraftModel', 'DFlashDraftModel', 'DFlashLagunaForCausalLM', 'DSparkDraftModel', 'DSparkMiniMaxDraftModel', 'DbrxForCausalLM', 'DeciLMForCausalLM', 'DeepseekForCausalLM', 'DeepseekOCRForCausalLM', 'DeepseekV2ForCausalLM', 'DeepseekV32ForCausalLM', 'DeepseekV3ForCausalLM', 'DeepseekV3ForCausalLMNextN', 'DeepseekV4ForCausalLM', 'DeepseekV4ForCausalLMDSpark', 'DeepseekV4ForCausalLMNextN', 'DeepseekVL2ForCausalLM', 'DiffusionGemmaForBlockDiffusion', 'Dots3NoteForCausalLM', 'Dots3NoteForCausalLMNextN', 'DotsOCRForCausalLM', 'DotsVLMForCausalLM', 'Eagle3DeepseekV2ForCausalLM', 'EmbeddingGemma2Model', 'EmbeddingGemmaModel', 'Ernie4_5_ForCausalLM', 'Ernie4_5_MoeForCausalLM', 'Ernie4_5_MoeForCausalLMMTP', 'Ernie4_5_VLMoeForConditionalGeneration', 'Exaone4ForCausalLM', 'ExaoneForCausalLM', 'ExaoneMoEForCausalLM', 'ExaoneMoEForCausalLMMTP', 'ExaoneMoeForCausalLM', 'FalconH1ForCausalLM', 'FalconMambaForCausalLM', 'GPT2LMHeadModel', 'GPTBigCodeForCausalLM', 'GPTJForCausalLM', 'Gemma2ForCausalLM', 'Gemma2ForSequenceClassification', 'Gemma3ForCausalLM', 'Gemma3ForConditionalGeneration', 'Gemma3nForCausalLM', 'Gemma3nForConditionalGeneration', 'Gemma4AssistantForCausalLM', 'Gemma4ForCausalLM', 'Gemma4ForConditionalGeneration', 'Gemma4UnifiedAssistantForCausalLM', 'Gemma4UnifiedForConditionalGeneration', 'GemmaForCausalLM', 'GigaChat35ForCausalLM', 'GigaChat35ForCausalLMNextN', 'Glm4ForCausalLM', 'Glm4MoeForCausalLM', 'Glm4MoeForCausalLMNextN', 'Glm4MoeLiteForCausalLM', 'Glm4MoeLiteForCausalLMNextN', 'Glm4vForConditionalGeneration', 'Glm4vMoeForConditionalGeneration', 'Glm5NextForConditionalGeneration', 'Glm5NextForConditionalGenerationNextN', 'GlmAsrForConditionalGeneration', 'GlmImageForConditionalGeneration', 'GlmMoeDsaForCausalLM', 'GlmMoeDsaForCausalLMNextN', 'GlmOcrForConditionalGeneration', 'GlmOcrForConditionalGenerationNextN', 'GptOssForCausalLM', 'GraniteForCausalLM', 'GraniteMoeForCausalLM', 'GraniteMoeHybridForCausalLM', 'GraniteMoeSWAForCausalLM', 'GraniteMoeSharedForCausalLM', 'GraniteSWAForCausalLM', 'Grok1ForCausalLM', 'Grok1ModelForCausalLM', 'HYV3ForCausalLM', 'HYV3ForCausalLMNextN', 'HYV4ForCausalLM', 'HYV4ForCausalLMNextN', 'HrmTextForCausalLM', 'HunYuanDenseV1ForCausalLM', 'HunYuanMoEV1ForCausalLM', 'IQuestCoderForCausalLM', 'IQuestLoopCoderForCausalLM', 'IQuestQ1ForCausalLM', 'IQuestQ1MTP', 'InklingForConditionalGeneration', 'InklingForConditionalGenerationMTP', 'InternLM2ForCausalLM', 'InternLM2ForRewardModel', 'InternLM3ForCausalLM', 'InternS1ForConditionalGeneration', 'InternS1ProForConditionalGeneration', 'InternS2MobiusForConditionalGeneration', 'InternS2PreviewForConditionalGeneration', 'InternVLChatModel', 'JetNemotronForCausalLM', 'JetVLMForConditionalGeneration', 'K2HorizonForCausalLM', 'KimiK25ForConditionalGeneration', 'KimiK3ForConditionalGeneration', 'KimiK3LinearForCausalLM', 'KimiLinearForCausalLM', 'KimiVLForConditionalGeneration', 'LLaDA2MoeModelLM', 'LagunaForCausalLM', 'Lfm2BidirectionalModel', 'Lfm2DSparkDraftModel', 'Lfm2ForCausalLM', 'Lfm2MoeForCausalLM', 'Lfm2VlForConditionalGeneration', 'LiLiCorrDraftModel', 'LightOnOCRForConditionalGeneration', 'LingDSparkModel', 'Llama4ForCausalLM', 'Llama4ForConditionalGeneration', 'LlamaEmbeddingModel', 'LlamaForCausalLM', 'LlamaForCausalLMEagle', 'LlamaForCausalLMEagle3', 'LlamaForClassification', 'LlamaForSequenceClassification', 'LlamaForSequenceClassificationWithNormal_Weights', 'LlavaForConditionalGeneration', 'LlavaLlamaForCausalLM', 'LlavaMistralForCausalLM', 'LlavaQwenForCausalLM', 'LlavaVidForCausalLM', 'LocateAnythingForConditionalGeneration', 'LongcatFlashForCausalLM', 'LongcatFlashForCausalLMNextN', 'Mamba2ForCausalLM', 'MambaForCausalLM', 'MellumForCausalLM', 'MiDashengLMModel', 'MiMoForCausalLM', 'MiMoMTP', 'MiMoV2ASRForCausalLM', 'MiMoV2FlashForCausalLM', 'MiMoV2ForCausalLM', 'MiMoV2MTP', 'MindSporeForCausalLM', 'MiniCPM3ForCausalLM', 'MiniCPMForCausalLM', 'MiniCPMO', 'MiniCPMSALAForCausalLM', 'MiniCPMV', 'MiniCPMV4_6ForConditionalGeneration', 'MiniCPMV4_7ForConditionalGeneration', 'MiniMaxDFlash2DraftModel', 'MiniMaxM2ForCausalLM', 'MiniMaxM3SparseForCausalLM', 'MiniMaxM3SparseForConditionalGeneration', 'Ministral3ForCausalLM', 'Mistral3ForConditionalGeneration', 'MistralForCausalLM', 'MistralForCausalLMEagle', 'MistralLarge3ForCausalLM', 'MistralLarge3ForCausalLMEagle', 'MistralModel', 'MixtralForCausalLM', 'MllamaForConditionalGeneration', 'MossVLForConditionalGeneration', 'MultiModalityCausalLM', 'MuseGlimmerAssistantModel', 'MuseGlimmerForCausalLM', 'MuseGlimmerForConditionalGeneration', 'MuseSparkForConditionalGeneration', 'NVILAForConditionalGeneration', 'NVILALiteForConditionalGeneration', 'NanbeigeForCausalLM', 'NanbeigeForSequenceClassification', 'NemotronHForCausalLM', 'NemotronHForCausalLMMTP', 'NemotronHPuzzleForCausalLM', 'NemotronH_Nano_Omni_Reasoning_V3', 'NemotronH_Nano_VL_V2', 'NemotronH_Omni_Reasoning_V3', 'OPTForCausalLM', 'Olmo2ForCausalLM', 'OlmoForCausalLM', 'OlmoeForCausalLM', 'OrionForCausalLM', 'POINTSV15ChatModel', 'PaddleOCRVLForConditionalGeneration', 'PersimmonForCausalLM', 'Phi3ForCausalLM', 'Phi3SmallForCausalLM', 'Phi4MMForCausalLM', 'PhiForCausalLM', 'PhiMoEForCausalLM', 'PixtralForConditionalGeneration', 'PixtralVisionModel', 'QWenLMHeadModel', 'QuantMixtralForCausalLM', 'Qwen2AudioForConditionalGeneration', 'Qwen2ForCausalLM', 'Qwen2ForCausalLMEagle', 'Qwen2ForRewardModel', 'Qwen2ForSequenceClassification', 'Qwen2MoeForCausalLM', 'Qwen2VLForConditionalGeneration', 'Qwen2_5_VLForConditionalGeneration', 'Qwen3ASRForConditionalGeneration', 'Qwen3DSparkModel', 'Qwen3ForCausalLM', 'Qwen3ForRewardModel', 'Qwen3ForSequenceClassification', 'Qwen3Model', 'Qwen3MoeForCausalLM', 'Qwen3MoeForCausalLMMTP', 'Qwen3NextForCausalLM', 'Qwen3NextForCausalLMMTP', 'Qwen3OmniMoeForConditionalGeneration', 'Qwen3VLForConditionalGeneration', 'Qwen3VLMoeForConditionalGeneration', 'Qwen3_5ForCausalLM', 'Qwen3_5ForCausalLMMTP', 'Qwen3_5ForConditionalGeneration', 'Qwen3_5MoeForCausalLM', 'Qwen3_5MoeForConditionalGeneration', 'Qwen4ExpForCausalLMMTP', 'Qwen4ExpForConditionalGeneration', 'SDARForCausalLM', 'SDARMoeForCausalLM', 'Sarashina2VisionForCausalLM', 'SarvamMLAForCausalLM', 'SarvamMoEForCausalLM', 'SolarForCausalLM', 'Spark2_5ForCausalLM', 'StableLmForCausalLM', 'Starcoder2ForCausalLM', 'Step3VLForConditionalGeneration', 'Step3p5ForCausalLM', 'Step3p5MTP', 'Step3p7ForConditionalGeneration', 'StepVLForConditionalGeneration', 'TeleFLMForCausalLM', 'TorchNativeLlamaForCausalLM', 'TorchNativePhi3ForCausalLM', 'TransformersEmbeddingModel', 'TransformersForSequenceClassification', 'TransformersMoEEmbeddingModel', 'TransformersMoEForCausalLM', 'TransformersMoEForSequenceClassification', 'TransformersMultiModalEmbeddingModel', 'TransformersMultiModalForCausalLM', 'TransformersMultiModalForSequenceClassification', 'TransformersMultiModalMoEEmbeddingModel', 'TransformersMultiModalMoEForCausalLM', 'TransformersMultiModalMoEForSequenceClassification', 'UnlimitedOCRForCausalLM', 'VoxtralForConditionalGeneration', 'WhisperForConditionalGeneration', 'XLMRobertaForSequenceClassification', 'XLMRobertaModel', 'XllmForCausalLM', 'XverseForCausalLM', 'XverseMoeForCausalLM', 'YiVLForCausalLM', 'ZayaForCausalLM'])  # fmt: skip

#: The architectures exllamav3 1.6.5 loads (``get_architectures()``; exllamav3/model/config.py:285 refuses any
#: other) and, of those, the ones whose ``Config`` reads RoPE with one plain ``read_rope_settings_default`` call:
#: architecture -> (rope style, default rope_theta, default partial_rotary_factor, yarn_mscale_ratio, the key of the
#: head dim). Printed by tools/golden/engines_exllamav3_reference.py from the 1.6.5 wheel's own classes.
EXL3_ARCHITECTURES = frozenset(['AfmoeForCausalLM', 'ApertusForCausalLM', 'ArceeForCausalLM', 'BailingMoeV3ForCausalLM', 'Cohere2ForCausalLM', 'CohereForCausalLM', 'DFlash2DraftModel', 'DFlashDraftModel', 'DFlashLagunaForCausalLM', 'DeciLMForCausalLM', 'DeepseekV3ForCausalLM', 'DeepseekV4ForCausalLM', 'Dots1ForCausalLM', 'Ernie4_5_ForCausalLM', 'Ernie4_5_MoeForCausalLM', 'Exaone4ForCausalLM', 'Gemma2ForCausalLM', 'Gemma3ForCausalLM', 'Gemma3ForConditionalGeneration', 'Gemma4AssistantForCausalLM', 'Gemma4ForConditionalGeneration', 'Gemma4UnifiedForConditionalGeneration', 'Glm4ForCausalLM', 'Glm4MoeForCausalLM', 'Glm4MoeLiteForCausalLM', 'Glm4vForConditionalGeneration', 'Glm4vMoeForConditionalGeneration', 'Glm5NextForConditionalGeneration', 'GlmMoeDsaForCausalLM', 'GptOssForCausalLM', 'HCXVisionV2ForCausalLM', 'HYV3ForCausalLM', 'HyperCLOVAXForCausalLM', 'IQuestCoderForCausalLM', 'KimiLinearForCausalLM', 'LagunaForCausalLM', 'Lfm2ForCausalLM', 'Lfm2MoeForCausalLM', 'Lfm2VlForConditionalGeneration', 'LlamaForCausalLM', 'MiMoForCausalLM', 'MiMoV2ForCausalLM', 'MiniMaxM2ForCausalLM', 'Ministral3ForCausalLM', 'Mistral3ForConditionalGeneration', 'MistralForCausalLM', 'MixtralForCausalLM', 'MuseGlimmerAssistantModel', 'MuseGlimmerForConditionalGeneration', 'NemotronHForCausalLM', 'NemotronH_Omni_Reasoning_V3', 'Olmo3ForCausalLM', 'OlmoHybridForCausalLM', 'Phi3ForCausalLM', 'Qwen2ForCausalLM', 'Qwen2_5_VLForConditionalGeneration', 'Qwen3ForCausalLM', 'Qwen3MoeForCausalLM', 'Qwen3NextForCausalLM', 'Qwen3VLForConditionalGeneration', 'Qwen3VLMoeForConditionalGeneration', 'Qwen3_5ForCausalLM', 'Qwen3_5ForConditionalGeneration', 'Qwen3_5MoeForCausalLM', 'Qwen3_5MoeForConditionalGeneration', 'Qwen4ExpForConditionalGeneration', 'SeedOssForCausalLM', 'SmolLM3ForCausalLM', 'SolarOpenForCausalLM', 'Spark2_5ForCausalLM', 'Step3p5ForCausalLM', 'Step3p7ForConditionalGeneration'])  # fmt: skip
EXL3_READERS = {'AfmoeForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'ApertusForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'ArceeForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'BailingMoeV3ForCausalLM': ('GPTJ', 10000.0, 1.0, False, 'qk_rope_head_dim'), 'Cohere2ForCausalLM': ('GPTJ', 10000.0, 1.0, False, 'head_dim'), 'CohereForCausalLM': ('GPTJ', 10000.0, 1.0, False, 'head_dim'), 'DFlash2DraftModel': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'DFlashDraftModel': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'DFlashLagunaForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'DeciLMForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'DeepseekV3ForCausalLM': ('GPTJ', 10000.0, 1.0, True, 'qk_rope_head_dim'), 'Dots1ForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'Ernie4_5_ForCausalLM': ('GPTJ', 10000.0, 1.0, False, 'head_dim'), 'Ernie4_5_MoeForCausalLM': ('GPTJ', 10000.0, 1.0, False, 'head_dim'), 'Exaone4ForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'Gemma2ForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'Glm4ForCausalLM': ('GPTJ', 10000.0, 1.0, False, 'head_dim'), 'Glm4MoeForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'Glm4MoeLiteForCausalLM': ('GPTJ', 10000.0, 1.0, False, 'qk_rope_head_dim'), 'GlmMoeDsaForCausalLM': ('GPTJ', 10000.0, 1.0, False, 'qk_rope_head_dim'), 'GptOssForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'HYV3ForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'HyperCLOVAXForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'IQuestCoderForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'LlamaForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'MiMoForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'MiniMaxM2ForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'Ministral3ForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'MistralForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'MixtralForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'MuseGlimmerAssistantModel': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'Phi3ForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'Qwen2ForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'Qwen2_5_VLForConditionalGeneration': ('NEOX', 5000000.0, 1.0, False, 'head_dim'), 'Qwen3ForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'Qwen3MoeForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'Qwen3NextForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'SeedOssForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'SmolLM3ForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim'), 'SolarOpenForCausalLM': ('NEOX', 10000.0, 1.0, False, 'head_dim')}  # fmt: skip

VLLM_CFG = "vllm/config/model.py"
VLLM_ROPE = "vllm/model_executor/layers/rotary_embedding"
SGL_ROPE = "sglang/srt/layers/rotary_embedding"
MLX_ROPE = "mlx_lm/models/rope_utils.py"
EXL_ROPE = "exllamav3/util/rope.py"
EXL_CFG = "exllamav3/model/config.py"


def _gguf_types() -> list[str]:
    """The model types whose conversion posenc mirrors (their record's ``gguf_arch``)."""
    from .records import RECORDS

    return [name for name, r in RECORDS.items() if r.gguf_arch is not None]


ENGINES: dict[str, Engine] = {e.name: e for e in (
    Engine("hf", "transformers", "5.24.0", "huggingface/transformers src/transformers/modeling_rope_utils.py "
           "ROPE_INIT_FUNCTIONS; LongRoPE per forward pass: max(position_ids) + 1 > original; the rotary "
           "classes' forward: float32 inv_freq @ float32 positions, cos() * attention_scaling",
           "torch-float32"),
    Engine("mlx", "mlx-lm", "0.32.2", "ml-explore/mlx-lm mlx_lm/models (0.32.2 wheel) on mlx 0.32.4 mlx/fast.cpp "
           "(CPU: the pure-mlx rope fallback)", "mlx-float32", (
        Rule("pairing:rope-traditional", ("*",),
             "nn.RoPE(traditional=config.rope_traditional) rotates the pairs (2k, 2k+1) where the model's module "
             "reads the key and the config sets it true (HF rotates halves)", "mlx_lm/models/llama.py:31, :69"),
        Rule("longrope:always-long", ("longrope",),
             "SuScaledRoPE uses long_factor at every length", f"{MLX_ROPE}:50, phi3.py:66"),
        Rule("yarn:truncate-ignored", ("yarn",),
             "YarnRoPE floors/ceils the correction range; truncate is not read", f"{MLX_ROPE}:151, :330"),
        Rule("yarn:attention-factor-ignored", ("yarn",),
             "attention_factor is not passed to YarnRoPE", f"{MLX_ROPE}:330"),
        Rule("yarn:mscale-numerator", ("yarn",),
             "mscale without mscale_all_dim: 0.1 mscale ln f + 1 (HF: 0.1 ln f + 1)",
             f"{MLX_ROPE}:138, :169 (mscale_all_dim default 0)"),
        Rule("partial:ignored", ("*",),
             "glm.py rotates the whole head: nn.RoPE(dims=head_dim), partial_rotary_factor unread",
             "mlx_lm/models/glm.py:58", ("glm",)),
    ), model_types=MLX_MODEL_TYPES, model_types_source="mlx_lm/utils.py:220: no module mlx_lm.models.<model_type>"),
    Engine("vllm", "vllm", "0.33.0", "vllm-project/vllm vllm/model_executor/layers/rotary_embedding/ and "
           "vllm/config/model.py (0.33.0 wheel)", "torch-float32", (
        Rule("longrope:max-model-len", ("longrope",),
             "long factors for the whole run iff max_model_len > original_max_position_embeddings; the default "
             "max_model_len of a LongRoPE model is original_max_position_embeddings",
             f"{VLLM_ROPE}/phi3_long_rope_scaled_rope.py:55, {VLLM_CFG}:2643"),
        Rule("dynamic:plain", ("dynamic",),
             "get_rope passes max_trained_positions = max_position: the NTK base is never raised",
             f"{VLLM_ROPE}/__init__.py:226, dynamic_ntk_scaling_rope.py:59"),
        Rule("linear:divides-positions", ("linear",),
             "linear scaling divides the float32 positions by the factor (HF: the frequencies)",
             f"{VLLM_ROPE}/linear_scaling_rope.py:92"),
        Rule("limit:cache-rows", ("dynamic",),
             "the dynamic-NTK cache holds max_position_embeddings rows while max_model_len is factor times it",
             f"{VLLM_ROPE}/dynamic_ntk_scaling_rope.py:67, {VLLM_CFG}:2634"),
        Rule("limit:cache-rows", ("yarn",),
             "the YaRN cache holds original_max_position_embeddings * factor rows",
             f"{VLLM_ROPE}/yarn_scaling_rope.py:79"),
        Rule("limit:max-model-len", ("*",),
             "positions at or past max_model_len are refused; a --max-model-len above the length derived from "
             "the config is refused at start-up", f"{VLLM_CFG}:2664"),
    ), options=("max_model_len",), native=VLLM_NATIVE_ARCHITECTURES,
       native_source="vllm/model_executor/models/registry.py:747 (Transformers backend)", max_len=MaxLen(
        ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
         "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len"), "model_max_length",
        ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"),
        "original_max_position_embeddings", f"{VLLM_CFG}:2545 _get_and_verify_max_len")),
    Engine("sglang", "sglang", "0.5.23", "sgl-project/sglang python/sglang/srt/layers/rotary_embedding/ "
           "(0.5.23 wheel)", "torch-float32", (
        Rule("longrope:positions-boundary", ("longrope",),
             "long factors per batch iff any position > original (HF: position + 1 > original); a batch whose "
             "largest position is original reads the long table's position 0 there (cos = scale, sin = 0)",
             f"{SGL_ROPE}/rope_variant.py:143"),
        Rule("dynamic:static", ("dynamic",),
             "dynamic NTK computed once for factor * max_position_embeddings: base b (f^2 - f + 1)^(d/(d-2)) at "
             "every position", f"{SGL_ROPE}/rope_variant.py:881"),
        Rule("linear:divides-positions", ("linear",),
             "linear scaling divides the float32 positions by the factor (HF: the frequencies)",
             f"{SGL_ROPE}/base.py:662"),
        Rule("yarn:attention-factor-ignored", ("yarn",),
             "attention_factor is not passed on (mscale from the factor, times attn_factor 1)",
             f"{SGL_ROPE}/factory.py:320, yarn.py:122"),
        Rule("yarn:mscale-given", ("yarn",),
             "mscale and mscale_all_dim both given (even 0): their ratio (HF: only when both are nonzero)",
             f"{SGL_ROPE}/yarn.py:122"),
    ), native=SGLANG_NATIVE_ARCHITECTURES,
       native_source="sglang/srt/models/registry.py, transformers.py (no EntryClass: Transformers backend)"),
    Engine("onnx-genai", "onnxruntime-genai", "0.16 (builder, commit a0c04eb)",
           "microsoft/onnxruntime-genai src/python/py/models/builders/base.py", "exact", (
        Rule("yarn:needs-beta-fast", ("yarn",),
             "YaRN only when the rope dict has beta_fast (else plain RoPE)", "base.py make_rope_init"),
        Rule("yarn:never-rounds", ("yarn",),
             "the correction range is never floored/ceiled", "base.py make_inv_freq_rescaled_with_ntk"),
        Rule("yarn:attention-factor-ignored", ("yarn",),
             "attention_factor is not read", "base.py make_rope_init, make_mscale"),
        Rule("yarn:mscale-direct", ("yarn",),
             "mscale without mscale_all_dim is the multiplier itself", "base.py make_mscale"),
    )),
    Engine("llamacpp", "llama-cpp-python", "0.3.36", "llama.cpp vendored in llama-cpp-python 0.3.36: "
           "src/llama-model.cpp, src/llama-context.cpp, ggml/src/ggml-cpu/ops.cpp", "ggml-float32", (
        Rule("yarn:truncate-ignored", ("yarn",),
             "ggml_rope_yarn_corr_dims floors/ceils the correction range; truncate is not read",
             "ggml/src/ggml.c:4486 ggml_rope_yarn_corr_dims"),
        Rule("longrope:n-ctx", ("longrope",),
             "long factors iff n_ctx per sequence (n_ctx / n_seq_max) > original, chosen once",
             "src/llama-model.cpp:2345 llama_model::get_rope_factors"),
        Rule("pairing:by-arch", ("*",),
             "NORM (adjacent pairs) or NEOX by architecture; convert_hf_to_gguf permutes Q/K to match",
             "src/llama-model.cpp:3023 llama_model_rope_type"),
    ), options=("n_ctx",), mirrored_types=frozenset(_gguf_types()),
           mirrored_types_source="the records' gguf_arch: the conversions posenc tabulates"),
    Engine("exllamav3", "exllamav3", "1.6.5", "turboderp-org/exllamav3 exllamav3/util/rope.py RoPE (compute_sincos: "
           "float32 einsum, sin/cos, times attn_factor), exllamav3/model/config.py read_rope_settings_default, "
           "exllamav3/architecture/*.py Config classes (1.6.5 wheel)", "torch-float32", (
        Rule("read:by-architecture", ("*",),
             "the architecture's Config reads rope_theta (default 10000), rotary_dim or partial_rotary_factor "
             "(default 1: the whole head), the head dim and the pairing (NEOX or GPT-J) with its own keys",
             f"{EXL_CFG}:294-334"),
        Rule("refuse:missing-key", ("*",),
             "its Config reads hidden_size and num_attention_heads (or DeepSeek's qk_rope_head_dim) without a "
             "default (ValueError 'Missing any of the following keys')",
             f"{EXL_CFG}:225-229, exllamav3/util/file.py:120-122, exllamav3/architecture/llama.py:26-32"),
        Rule("refuse:rope-type", ("dynamic", "ntk"),
             "RoPE loads rope_type default, mrope, proportional, llama3, linear, yarn, longrope or su only "
             "(ValueError 'Unknown rope_type')", f"{EXL_ROPE}:200-216"),
        Rule("refuse:needs-max-position-embeddings", ("yarn",),
             "YaRN asserts a top-level max_position_embeddings ('YaRN scaling requires explicit "
             "max_position_embeddings')", f"{EXL_ROPE}:281-283"),
        Rule("yarn:factor-from-lengths", ("yarn",),
             "derives the YaRN factor from max_position_embeddings / original_max_position_embeddings whenever the "
             "rope dict gives original_max_position_embeddings (HF: the config's factor)", f"{EXL_ROPE}:305-308"),
        Rule("yarn:mscale-by-architecture", ("yarn",),
             "without attention_factor: mscale / mscale_all_dim only where the architecture opts in "
             "(yarn_mscale_ratio: DeepSeek-V3), 1 with llama_4_scaling_beta, else 0.1 ln f + 1 (HF: the ratio "
             "whenever both are nonzero)", f"{EXL_ROPE}:310-328"),
        Rule("refuse:needs-lengths", ("longrope",),
             "LongRoPE compares max_position_embeddings with original_max_position_embeddings (rope dict, else top "
             "level): without either, TypeError", f"{EXL_ROPE}:344-347"),
        Rule("longrope:max-position-embeddings", ("longrope",),
             "long factors at every position iff max_position_embeddings > original_max_position_embeddings (HF: "
             "per pass, by the sequence length); attention factor sqrt(1 + ln(a/b) / ln b) from the two lengths, "
             "attention_factor unread", f"{EXL_ROPE}:344-358"),
    ), architectures=EXL3_ARCHITECTURES, architectures_source=f"{EXL_CFG}:281-285", readers=EXL3_READERS,
       readers_source="the architectures whose Config makes one plain read_rope_settings_default call "
                      "(tools/golden/engines_exllamav3_reference.py)"),
)}  # fmt: skip


def resolve_engine(name: str) -> Engine:
    """The engine named ``name`` (``NAME`` or ``NAME==VERSION``); an unknown name, or a version posenc does not
    mirror, is refused naming the choices."""
    base, sep, version = name.partition("==")
    if base not in ENGINES:
        raise ParameterError(f"unknown engine {base!r}; choose {param('engine')} from: {', '.join(ENGINE_NAMES)}")
    e = ENGINES[base]
    if sep and version.strip() != e.version:
        raise ParameterError(
            f"posenc mirrors {e.label} only, not {e.package} {version.strip() or '(empty)'}; "
            f"write {param('engine')} {base} or {base}=={e.version}"
        )
    return e


# ----- the model, as HF reads it (the one place that names the HF reader) -----------------------------------
@dataclass
class ModelFacts:
    """What checks and engines need of one model: HF's rope parameters and the model's shape."""

    kind: str
    model_type: str
    params: dict[str, Any]
    rope_dict: dict[str, Any]
    layout: str
    rot_dim: int
    head_dim: int
    heads: int | None
    kv_heads: int | None
    max_positions: int
    original: int
    #: what HF's reader had to say (assumptions, unknown model type): for the caller to show
    warnings: list[str] = field(default_factory=list)
    #: the text config's own keys (engines read some HF does not: vLLM's max-length keys)
    text: dict[str, Any] = field(default_factory=dict)
    #: the config as read (engines whose reader starts from the config itself: llama.cpp's conversion)
    raw: dict[str, Any] = field(default_factory=dict)
    layer_type: str | None = None
    #: the config's architectures[0] (engines pick their model file by it)
    architecture: str | None = None


def model_facts(config: Any, *, layer_type: str | None = None) -> ModelFacts:
    """Read a config (path, directory, ``-`` or dict) with HF's rules."""
    from ..encodings import make_encoding
    from .config_file import load_config
    from .readers import rotary_config

    raw = load_config(config)
    model = rotary_config(raw)
    from ..encodings import get_kind

    # engines' rules and ONNX checks speak of scaling rules and half-width caches: a kind without them is refused
    if not {"scaling", "cache", "seq_len"} <= {f.name for f in get_kind(model.kind).param_fields()}:
        raise ParameterError(
            f"{model.model_type} uses {model.kind}, which engines' rules and ONNX checks do not cover yet"
        )
    params = model.params(layer_type)
    enc = make_encoding(model.kind, {**params, "length": 1})
    text: dict[str, Any] = raw["text_config"] if isinstance(raw.get("text_config"), dict) else raw
    rope = text.get("rope_scaling") or text.get("rope_parameters") or {}
    heads = text.get("num_attention_heads", text.get("n_head"))
    kv = text.get("num_key_value_heads")
    mp = int(params["length"])
    return ModelFacts(
        kind=model.kind,
        model_type=model.model_type,
        params={k: v for k, v in params.items() if k != "length"},
        rope_dict=dict(rope) if isinstance(rope, dict) else {},
        layout=str(params.get("layout", "half")),
        rot_dim=int(enc.rot_dim),  # type: ignore[attr-defined]
        head_dim=int(params["dim"]),
        heads=int(heads) if isinstance(heads, int) else None,
        kv_heads=int(kv) if isinstance(kv, int) else None,
        max_positions=mp,
        original=int(params.get("original_max_position_embeddings") or mp),
        warnings=list(model.warnings),
        text=dict(text),
        raw=dict(raw),
        layer_type=layer_type,
        architecture=_architecture(raw),
    )


def _architecture(raw: dict[str, Any]) -> str | None:
    arch = raw.get("architectures")
    return str(arch[0]) if isinstance(arch, list) and arch and isinstance(arch[0], str) else None


def runs_hf_code(facts: ModelFacts, e: Engine) -> bool:
    """Whether the engine serves this model through its Transformers backend (HF's rotary code and rules)."""
    return e.native is not None and facts.architecture is not None and facts.architecture not in e.native


def engine_rules(facts: ModelFacts, engine: str) -> list[Rule]:
    """The rules of ``engine`` for this model: its own, or, where its Transformers backend serves the model, only
    its engine-wide limit on the context (the rotary code is HF's)."""
    e = resolve_engine(engine)
    rules = rules_for(e.name, facts.params, facts.model_type)
    if runs_hf_code(facts, e):
        rules = [r for r in rules if r.effect == "limit:max-model-len"]
    return rules


def rules_for(engine: str, params: dict[str, Any], model_type: str | None = None) -> list[Rule]:
    """The rules of ``engine`` that apply to a model with these HF parameters (and model type)."""
    scaling = params.get("scaling", "none")
    return [
        r
        for r in resolve_engine(engine).rules
        if ("*" in r.scalings or scaling in r.scalings)
        and ("*" in r.model_types or (model_type is not None and model_type in r.model_types))
    ]


def _hf_rope_type(facts: ModelFacts) -> str:
    d = facts.rope_dict
    return str(d.get("rope_type") or d.get("type") or "default")


def default_max_model_len(facts: ModelFacts, engine: str = "vllm") -> tuple[int, int]:
    """(the default max_model_len, the largest one the engine accepts) as the engine derives them from the config
    (vLLM's ``_get_and_verify_max_len``, rules in :class:`MaxLen`)."""
    m = resolve_engine(engine).max_len
    if m is None:
        return facts.max_positions, facts.max_positions
    present = [facts.text[k] for k in m.keys if isinstance(facts.text.get(k), (int, float))]
    derived = float(min(present)) if present else 2048.0
    if isinstance(facts.text.get(m.override), (int, float)) and facts.text[m.override]:
        derived = float(facts.text[m.override])
    rope_type = _hf_rope_type(facts)
    if rope_type != "default" and rope_type not in m.unscaled and "gemma3" not in facts.model_type:
        derived *= float(facts.rope_dict.get("factor") or 1.0)
    if rope_type == "longrope":
        top = facts.text.get(m.longrope_default)
        default = int(top) if isinstance(top, (int, float)) else int(derived)
    else:
        default = int(derived)
    return default, int(derived)


@dataclass(frozen=True)
class Limit:
    """Rows an engine computes no table for: positions ``>= rows``, and why."""

    rows: int
    says: str
    source: str


@dataclass(frozen=True)
class EngineLimit:
    """Where an engine stops computing the rows a comparison asked for: a divergence from the reference, not bad
    input (:func:`engine_reach`). ``from_position`` is the first position it computes no row for (None: no row
    at all, a model type it does not load); ``rows`` how many of the ``asked`` rows from ``offset`` it computes;
    ``says`` and ``source`` (file:line of ``version``'s code) the rule."""

    engine: str
    version: str
    from_position: int | None
    rows: int
    asked: int
    says: str
    source: str
    offset: int = 0

    def line(self) -> str:
        """The limit in one line: the engine, its version, where it starts, the rule's source, what was compared."""
        if self.from_position is None:
            head = f"{self.says} ({self.source})"
        else:
            head = f"{self.version} computes no row from position {self.from_position}: {self.says} ({self.source})"
        if not self.rows:
            return head + "; no row to compare"
        return head + f"; compared its rows {self.offset}-{self.offset + self.rows - 1} of {self.asked} asked"

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "version": self.version, "from_position": self.from_position,
                "rows": self.rows, "asked": self.asked, "offset": self.offset, "says": self.says,
                "source": self.source, "line": self.line()}  # fmt: skip


def engine_reach(
    facts: ModelFacts, engine: str, *, length: int, offset: int = 0, max_model_len: int | None = None
) -> EngineLimit | None:
    """The limit ``engine`` meets computing ``length`` rows from ``offset`` for this model (a model type it does
    not load, a length it refuses, positions out of its cache; the first one met), or None when it computes them
    all. A ``max_model_len`` the engine refuses at start-up is bad input and raises."""
    e = resolve_engine(engine)
    refused = engine_refusal(facts, e)
    if refused is not None:
        return EngineLimit(e.name, e.label, None, 0, length, refused[0], refused[1], offset)
    for lim in sorted(engine_limits(facts, e.name, max_model_len=max_model_len), key=lambda x: x.rows):
        if offset + length > lim.rows:
            return EngineLimit(e.name, e.label, max(lim.rows, offset), max(lim.rows - offset, 0), length, lim.says,
                               lim.source, offset)  # fmt: skip
    return None


def engine_refusal(facts: ModelFacts, e: Engine) -> tuple[str, str] | None:
    """(why, source) when the engine itself refuses to load this model: a model type or an architecture it does
    not load, a rope type or a missing key its parser rejects (the ``refuse:`` rules); else None."""
    if e.model_types is not None and facts.model_type not in e.model_types:
        return f"{e.label} does not support model_type {facts.model_type!r}", e.model_types_source
    if e.architectures is not None:
        archs = facts.raw.get("architectures")
        if not isinstance(archs, list) or len(archs) != 1:
            said = "No architecture defined" if not archs else "Multiple architectures defined"
            return f"{e.label} loads a config of exactly one architecture ({said!r})", e.architectures_source
        if facts.architecture not in e.architectures:
            return (f"{e.label} does not load architecture {facts.architecture!r} ('Unknown architecture')",
                    e.architectures_source)  # fmt: skip
    for r in engine_rules(facts, e.name):
        refused = _refuses(r, facts, e) if r.effect.startswith("refuse:") else None
        if refused is not None:
            return f"{e.label} refuses {refused}: {r.says}", r.source
    return None


def _refuses(rule: Rule, facts: ModelFacts, e: Engine) -> str | None:
    """What a ``refuse:`` rule refuses of this model, as the engine's own reading sees it, or None."""
    if e.readers is None or facts.architecture not in e.readers:
        return None
    if rule.effect == "refuse:missing-key":
        missing = [k for k in _demanded(e.readers[str(facts.architecture)]) if facts.raw.get(k) is None]
        return f"a config without {', '.join(missing)}" if missing else None
    own = own_reading(facts, e)
    if rule.effect == "refuse:rope-type" and own.rope_type not in EXL3_ROPE_TYPES:
        return f"rope_type {own.rope_type!r}"
    if rule.effect == "refuse:needs-max-position-embeddings" and own.rope_type == "yarn" and own.max_positions is None:
        return "a YaRN config without max_position_embeddings"
    # rope.py:346: the rope dict's key when present (even null), else the top-level one
    original = own.rope.get("original_max_position_embeddings", own.original)
    if rule.effect == "refuse:needs-lengths" and own.rope_type in ("longrope", "su") and \
            (own.max_positions is None or original is None):  # fmt: skip
        return "a LongRoPE config without max_position_embeddings or original_max_position_embeddings"
    return None


def check_supported(facts: ModelFacts, e: Engine) -> None:
    """Refuse a model the engine does not load (:func:`engine_refusal`), naming it and the engine's source; a model
    whose handling by the engine posenc does not mirror is refused as posenc's limit."""
    refused = engine_refusal(facts, e)
    if refused is not None:
        raise ParameterError(f"{refused[0]} ({refused[1]}); compare with another engine")
    if e.readers is not None and facts.architecture not in e.readers:
        raise ParameterError(
            f"posenc does not mirror how {e.label} reads architecture {facts.architecture!r}'s RoPE (only "
            f"{len(e.readers)} architectures: {e.readers_source}); compare with another engine"
        )
    if e.readers is not None and not _plain_rope(facts):
        raise ParameterError(
            f"posenc mirrors {e.label}'s plain rope tables only; {facts.model_type} uses {facts.kind}; compare with "
            "another engine"
        )
    if e.mirrored_types is not None and facts.model_type not in e.mirrored_types:
        raise ParameterError(
            f"posenc does not mirror how {e.label} handles model_type {facts.model_type!r} (only: "
            f"{', '.join(sorted(e.mirrored_types))}; {e.mirrored_types_source}); compare with another engine"
        )


def engine_limits(facts: ModelFacts, engine: str, *, max_model_len: int | None = None) -> list[Limit]:
    """The engine's limits for this model: each a first position it computes no table for (refused or out of its
    cache), with the rule's words and source. A ``max_model_len`` the engine refuses, or a model type it does not
    load, raises."""
    e = resolve_engine(engine)
    check_supported(facts, e)
    out: list[Limit] = []
    effects = {r.effect: r for r in engine_rules(facts, e.name)}
    cache_rules = [r for r in engine_rules(facts, e.name) if r.effect == "limit:cache-rows"]
    if "limit:max-model-len" in effects:
        default, largest = default_max_model_len(facts, e.name)
        mml = default if max_model_len is None else max_model_len
        rule = effects["limit:max-model-len"]
        if mml > largest:
            raise ParameterError(
                f"{e.label} refuses {param('max_model_len')} {mml}: larger than the {largest} it derives from the "
                f"config ({rule.source}); give at most {largest}"
            )
        how = "its default max_model_len" if max_model_len is None else "max_model_len"
        out.append(Limit(mml, f"{e.label} refuses positions >= {how} {mml}", rule.source))
    scaling = facts.params.get("scaling", "none")
    for r in cache_rules:
        rows = facts.max_positions
        if scaling == "yarn":
            rows = int(facts.original * float(facts.params.get("factor", 1.0)))
        if all(rows < lim.rows for lim in out):  # a cache as long as the context limits nothing more
            out.append(Limit(rows, f"{e.label}'s cos/sin cache holds {rows} rows: {r.says}", r.source))
    return out


#: The rope types exllamav3 1.6.5's RoPE dispatches (exllamav3/util/rope.py:200-214; None: no rope dict or no type)
EXL3_ROPE_TYPES = (None, "default", "mrope", "proportional", "llama3", "linear", "yarn", "longrope", "su")


def _read_key(d: dict[str, Any], types: tuple[type, ...], keys: tuple[str, ...], default: Any,
              wrong_type_as_missing: bool = False) -> Any:  # fmt: skip
    """exllamav3's ``read_dict`` (exllamav3/util/file.py:52): the first of ``keys`` present (``a->b`` nests), an int
    read as a float and an integral float as an int; a value of another type is an error unless
    ``wrong_type_as_missing``; ``default`` when none is present."""
    for key in keys:
        node: Any = d
        *path, last = key.split("->")
        for sub in path:
            node = node.get(sub) if isinstance(node, dict) else None
            if not node:
                break
        if not isinstance(node, dict) or node.get(last) is None:
            continue
        x = node[last]
        for t in types:
            if t is float and isinstance(x, int):  # bool included, as read_dict does
                x = float(x)
            if t is int and isinstance(x, float) and x == int(x):
                x = int(x)
            if isinstance(x, t):
                return x
        if not wrong_type_as_missing:
            raise ParameterError(f"exllamav3 reads {last} as {types[0].__name__}, the config gives {x!r}")
    return default


@dataclass(frozen=True)
class OwnReading:
    """What an engine's own parser reads of a config's RoPE (exllamav3's ``RopeSettings``)."""

    dim: int
    base: float
    rotary_dim: int | None
    partial_rotary_factor: float
    layout: str
    rope: dict[str, Any]
    rope_type: str | None
    max_positions: int | None
    original: int | None
    mscale_ratio: bool


def _demanded(reader: tuple[str, float, float, bool, str]) -> tuple[str, ...]:
    """The keys an exllamav3 reader demands for the head dim (``read_cfg`` with ``no_default``)."""
    return ("hidden_size", "num_attention_heads") if reader[4] == "head_dim" else (reader[4],)


def own_reading(facts: ModelFacts, e: Engine) -> OwnReading:
    """The config's RoPE as ``e``'s own parser reads it: exllamav3's ``read_rope_settings_default``
    (exllamav3/model/config.py:294-334) with the architecture's arguments (:data:`EXL3_READERS`), and the rope type
    as ``RoPE.__init__`` takes it (exllamav3/util/rope.py:186-190)."""
    assert e.readers is not None
    style, theta, prf, ratio, head_key = e.readers[str(facts.architecture)]
    raw = facts.raw
    # the demanded keys are present (refuse:missing-key)
    if head_key == "head_dim":  # e.g. exllamav3/architecture/llama.py:26-32
        head = _read_key(raw, (int,), ("head_dim",), None) or (
            _read_key(raw, (int,), ("hidden_size",), 0) // _read_key(raw, (int,), ("num_attention_heads",), 1)
        )
    else:  # override_head_dim = qk_rope_head_dim (exllamav3/architecture/deepseek_v3.py:31, :65-67)
        head = _read_key(raw, (int,), (head_key,), None)
    rope = _read_key(raw, (dict,), ("rope_scaling", "rope_parameters"), None)
    kind = None if rope is None else rope.get("rope_type", rope.get("type"))
    return OwnReading(
        dim=int(head),
        base=_read_key(raw, (float,), ("rope_theta", "rope_parameters->rope_theta"), theta, True),
        rotary_dim=_read_key(raw, (int,), ("rotary_dim",), None),
        partial_rotary_factor=_read_key(
            raw, (float,), ("partial_rotary_factor", "rope_parameters->partial_rotary_factor"), prf, True
        ),
        layout="half" if style == "NEOX" else "interleaved",
        rope=dict(rope or {}),
        rope_type=kind,
        max_positions=_read_key(raw, (int,), ("max_position_embeddings",), None),
        original=_read_key(raw, (int,), ("original_max_position_embeddings",), None),
        mscale_ratio=ratio,
    )


def _own_params(facts: ModelFacts, e: Engine, effects: set[str]) -> dict[str, Any]:
    """posenc ``rope`` parameters of the engine's own reading and its rules per rope type (exllamav3's
    ``RoPE._rope_params_*``, exllamav3/util/rope.py:219-358)."""
    own = own_reading(facts, e)
    p: dict[str, Any] = {"dim": own.dim, "base": own.base, "layout": own.layout}
    if own.rotary_dim:
        p["rotary_dim"] = own.rotary_dim
    elif own.partial_rotary_factor != 1.0:
        p["partial_rotary_factor"] = own.partial_rotary_factor
    d, kind = own.rope, own.rope_type
    if kind in (None, "default", "mrope"):
        return p
    if kind == "llama3":  # rope.py:230-233: defaults of its own
        return {**p, "scaling": "llama3", "factor": float(d.get("factor", 8.0)),
                "low_freq_factor": float(d.get("low_freq_factor", 1.0)),
                "high_freq_factor": float(d.get("high_freq_factor", 4.0)),
                "original_max_position_embeddings": int(d.get("original_max_position_embeddings", 8192))}  # fmt: skip
    if kind == "linear":  # rope.py:248
        return {**p, "scaling": "linear", "factor": float(d.get("factor", 1.0))}
    if kind == "yarn":
        assert own.max_positions is not None  # refuse:needs-max-position-embeddings
        orig = d.get("original_max_position_embeddings")
        given = d.get("factor")
        if orig is not None and "yarn:factor-from-lengths" in effects:
            given = own.max_positions / int(orig)
        orig = own.max_positions if orig is None else orig
        if given is None:
            raise ParameterError(f"{e.label} needs the YaRN factor (rope dict 'factor') without "
                                 f"original_max_position_embeddings ({EXL_ROPE}:308, :97)")  # fmt: skip
        factor = float(given)
        attention: float | None = d.get("attention_factor")
        if attention is None and "yarn:mscale-by-architecture" in effects:
            mscale, mscale_all = d.get("mscale"), d.get("mscale_all_dim")

            def get_mscale(m: float = 1.0) -> float:
                return 1.0 if factor <= 1 else 0.1 * float(m) * math.log(factor) + 1.0

            if own.mscale_ratio and mscale and mscale_all:
                attention = get_mscale(mscale) / get_mscale(mscale_all)
            elif d.get("llama_4_scaling_beta"):
                attention = 1.0
            else:
                attention = get_mscale()
        if attention is not None:
            p["attention_factor"] = float(attention)
        return {**p, "scaling": "yarn", "factor": factor, "original_max_position_embeddings": int(orig),
                "beta_fast": float(d.get("beta_fast", 32)), "beta_slow": float(d.get("beta_slow", 1)),
                "truncate": bool(d.get("truncate", True))}  # fmt: skip
    if kind in ("longrope", "su") and "longrope:max-position-embeddings" in effects:
        a = own.max_positions
        b = d.get("original_max_position_embeddings", own.original)
        assert a is not None and b is not None  # refuse:needs-lengths
        # factor a / b: the attention factor sqrt(1 + ln(a/b) / ln b) (1 when a <= b), rope's own formula
        return {**p, "scaling": "longrope", "short_factor": tuple(d["short_factor"]),
                "long_factor": tuple(d["long_factor"]), "original_max_position_embeddings": int(b),
                "seq_len": int(b) + 1 if a > b else int(b), "factor": a / b}  # fmt: skip
    raise ParameterError(f"posenc does not mirror {e.label}'s rope_type {kind!r}; compare with another engine")


def engine_params(
    facts: ModelFacts,
    engine: str,
    *,
    seq_len: int | None = None,
    max_model_len: int | None = None,
    n_ctx: int | None = None,
) -> dict[str, Any]:
    """posenc ``rope`` parameters reproducing the tables ``engine`` computes for the model (without length).

    ``seq_len`` is the sequence length for the per-pass choices (HF, SGLang, mlx; default: the table's
    length), ``max_model_len`` vLLM's (default: what vLLM derives, :func:`default_max_model_len`), ``n_ctx``
    llama.cpp's context size (required for LongRoPE). SGLang's LongRoPE boundary row is not a parameter: see
    :func:`boundary_row`."""
    from ..errors import check_int

    p = dict(facts.params)
    e = resolve_engine(engine)
    engine = e.name
    for opt, value in (("max_model_len", max_model_len), ("n_ctx", n_ctx)):
        if value is not None:
            check_int(opt, value, 1, 2**31 - 1)
    for opt, value in (("max_model_len", max_model_len), ("n_ctx", n_ctx)):
        if value is not None and opt not in e.options:
            users = [n for n, x in ENGINES.items() if opt in x.options]
            raise ParameterError(f"{param(opt)} applies to engine {', '.join(users)}, not {engine}; drop it")
    scaling = p.get("scaling", "none")
    effects = {r.effect for r in engine_rules(facts, engine)}
    if "read:by-architecture" in effects:  # the engine's own reading, not HF's
        check_supported(facts, e)
        return _own_params(facts, e, effects)
    if engine == "onnx-genai" and scaling not in ("none", "linear", "yarn", "longrope"):
        raise ParameterError(
            f"onnx-genai's rules for scaling {scaling} are not tabulated in posenc; compare with another engine"
        )
    if "pairing:rope-traditional" in effects:
        p.update(_mlx_traditional(facts))
    if "partial:ignored" in effects:
        p.pop("partial_rotary_factor", None)
        p.pop("rotary_dim", None)
    if scaling == "yarn":
        if "yarn:needs-beta-fast" in effects and "beta_fast" not in facts.rope_dict:
            return _plain(p)
        if "yarn:needs-beta-fast" in effects and facts.rot_dim != facts.head_dim:
            raise ParameterError(
                "onnx-genai's YaRN ramp runs over head_size/2 with partial rotary, which posenc's rope cannot "
                "express; not tabulated"
            )
        if "yarn:truncate-ignored" in effects:
            p.pop("truncate", None)
        if "yarn:never-rounds" in effects:
            p["truncate"] = False
        mscale, mscale_all = facts.rope_dict.get("mscale"), facts.rope_dict.get("mscale_all_dim")
        if "yarn:attention-factor-ignored" in effects:
            p.pop("attention_factor", None)
        f = float(p.get("factor", 1.0))
        given = mscale is not None and mscale_all is not None
        if "yarn:mscale-given" in effects and given and not (mscale and mscale_all):

            def get_mscale(m: Any) -> float:
                return 1.0 if f <= 1 else 0.1 * float(m) * math.log(f) + 1.0

            p["attention_factor"] = get_mscale(mscale) / get_mscale(mscale_all)
            p.pop("mscale", None)
            p.pop("mscale_all_dim", None)
        elif mscale and not mscale_all:
            if "yarn:mscale-direct" in effects:
                p["attention_factor"] = float(mscale)
                p.pop("mscale", None)
                p.pop("mscale_all_dim", None)
            elif "yarn:mscale-numerator" in effects and "attention_factor" not in p:
                p["attention_factor"] = 0.1 * float(mscale) * math.log(f) + 1.0 if f > 1 else 1.0
                p.pop("mscale", None)
                p.pop("mscale_all_dim", None)
    if scaling == "longrope":
        o = facts.original
        if "longrope:always-long" in effects:
            p["seq_len"] = o + 1
        elif "longrope:max-model-len" in effects:
            mml = default_max_model_len(facts, engine)[0] if max_model_len is None else max_model_len
            p["seq_len"] = o + 1 if mml > o else o
        elif "longrope:n-ctx" in effects:
            if n_ctx is None:
                raise ParameterError(
                    f"llama.cpp chooses LongRoPE's factors by its context size; pass {param('n_ctx')} N"
                )
            p["seq_len"] = o + 1 if n_ctx > o else o
        elif "longrope:positions-boundary" in effects and seq_len is not None:
            p["seq_len"] = o + 1 if seq_len - 1 > o else o
        elif seq_len is not None:
            p["seq_len"] = seq_len
    if scaling == "dynamic":
        if "dynamic:plain" in effects:
            return _plain(p)
        if "dynamic:static" in effects:
            p["seq_len"] = round(float(p.get("factor", 1.0)) * facts.max_positions)
        elif seq_len is not None:
            p["seq_len"] = seq_len
    return p


def _mlx_traditional(facts: ModelFacts) -> dict[str, Any]:
    """mlx-lm's pairing where the model's module reads ``rope_traditional`` from the config (mlx-lm 0.32.2's own
    table, :func:`.mlx_weights.mlx_rope_rule`): ``{"layout": ...}`` when the config sets the key, else nothing (the
    module's default is HF's pairing). A module whose flag posenc does not know, with the key set, is refused."""
    if "rope_traditional" not in facts.raw:
        return {}
    from .mlx_weights import mlx_rope_rule

    module, rule = mlx_rope_rule(facts.model_type)
    value = facts.raw["rope_traditional"]
    if rule is None or rule == "mixed" or not isinstance(value, bool):
        raise ParameterError(
            f"config key rope_traditional={value!r}: mlx-lm's {module} module "
            + ("chooses its pairing per layer" if rule == "mixed" else "is not one posenc mirrors")
            + "; compare with another engine"
        )
    if not rule.startswith("config:"):
        return {}  # the module fixes its pairing whatever the config says
    return {"layout": "interleaved" if value else "half"}


def boundary_row(facts: ModelFacts, engine: str, seq_len: int) -> tuple[int, float] | None:
    """SGLang's LongRoPE boundary: (the position, the long table's scale) when a batch of ``seq_len`` rows (largest
    position ``seq_len - 1``) reads the long table's position 0 at position ``original``; else None."""
    effects = {r.effect for r in engine_rules(facts, engine)}
    if "longrope:positions-boundary" not in effects or seq_len - 1 != facts.original:
        return None
    from ..encodings import make_encoding

    long = make_encoding(facts.kind, {**facts.params, "seq_len": facts.original + 1, "length": 1})
    return facts.original, float(long.attention_scaling)  # type: ignore[attr-defined]


def _plain(p: dict[str, Any]) -> dict[str, Any]:
    keep = ("dim", "base", "layout", "rotary_dim", "partial_rotary_factor", "offset", "dtype", "inv_freq_dtype")
    return {k: v for k, v in p.items() if k in keep}


# ----- the engines' arithmetic ------------------------------------------------------------------------------
f32 = np.float32
#: rows -> (cos, sin), float32 (len(positions), pairs): one engine's table at these positions
Pairs = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def _f32_trig(angles: np.ndarray, scale: np.float32) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin of float32 angles rounded to float32 (as a correctly rounded float32 libm would), times the
    float32 scale rounded to float32."""
    a = angles.astype(np.float64)
    cos = np.cos(a).astype(f32)
    sin = np.sin(a).astype(f32)
    if scale != f32(1):
        cos = (cos * scale).astype(f32)
        sin = (sin * scale).astype(f32)
    return cos, sin


def _torch_pairs(rope: Rope, linear_positions: bool) -> tuple[Pairs, tuple[Any, ...]]:
    """vLLM / SGLang: ``freqs = einsum(t, inv_freq)`` in float32, ``cos() * mscale``. inv_freq follows HF's float32
    formula (both engines' ``_compute_inv_freq`` are the same torch expressions). vLLM's and SGLang's linear
    scaling divides the positions instead (``t = t / scaling_factor``). Also the inputs that decide the pairs'
    bits (:attr:`EngineRope.table_key`)."""
    from ..encodings.rope.scaling import SCALINGS

    if linear_positions:
        inv = SCALINGS["none"].float32(rope)
        div = f32(rope.opt["factor"])
    else:
        inv = SCALINGS[rope.scaling].float32(rope)
        div = None
    scale = f32(rope.attention_scaling)

    def pairs(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tt = t.astype(f32)
        if div is not None:
            tt = (tt / div).astype(f32)
        return _f32_trig((tt[:, None] * inv[None, :]).astype(f32), scale)

    return pairs, (inv.tobytes(), None if div is None else float(div), float(scale))


#: mlx/backend/cpu/simd/math.h exp: Cephes' polynomial for 2**fpart, fused multiply-adds in float32
_MLX_EXP_POLY = (1.535336188319500e-4, 1.339887440266574e-3, 9.618437357674640e-3, 5.550332471162809e-2,
                 2.402264791363012e-1, 6.931472028550421e-1, 1.0)  # fmt: skip


def mlx_exp(x: np.ndarray) -> np.ndarray:
    """mlx's CPU ``exp`` in float32 (``simd::exp``: not correctly rounded, up to ~8 ulp off), step by step."""
    x = np.asarray(x, dtype=f32)
    y = (x * f32(1.442695)).astype(f32)
    ipart = np.floor((y + f32(0.5)).astype(f32))
    fpart = (y - ipart).astype(f32)
    p = np.full(x.shape, f32(_MLX_EXP_POLY[0]))
    for c in _MLX_EXP_POLY[1:]:  # fma: the float32 product is exact in float64, one rounding to float32
        p = (p.astype(np.float64) * fpart.astype(np.float64) + float(f32(c))).astype(f32)
    out = np.ldexp(p, ipart.astype(np.int32)).astype(f32)
    out = np.where(x > f32(88.0), f32(np.inf), out)
    return np.where(x < f32(-88.0), f32(0), out).astype(f32)


def _mlx_pow(base: float, expo: np.ndarray) -> np.ndarray:
    return np.power(np.float64(f32(base)), expo.astype(np.float64)).astype(f32)


def _mlx_freqs(rope: Rope) -> tuple[np.ndarray, np.float32, np.float32]:
    """mlx's (inv_freq, position scale, amplitude) in float32, as mlx-lm builds its rope and mlx/fast.cpp's CPU
    fallback evaluates it: ``exp(arange(0, -d/2, -1) * (log(base) / (d/2)))`` for a plain ``base``, else
    ``1 / freqs`` of mlx-lm's own float32 ``freqs`` (Llama3RoPE, YarnRoPE, SuScaledRoPE)."""
    d = rope.rot_dim
    h = d // 2
    o = rope.opt
    scaling = rope.scaling

    def exp_based(base: float) -> np.ndarray:
        c = f32(f32(math.log(float(f32(base)))) / f32(h))  # std::log(float) / half_dims, in float
        k = -np.arange(h, dtype=f32)
        return mlx_exp((k * c).astype(f32))

    expo = (np.arange(0, d, 2, dtype=f32) / f32(d)).astype(f32)
    one = f32(1)
    if scaling in ("none", "linear", "dynamic", "ntk"):
        base = rope.base
        if scaling == "dynamic":  # DynamicNTKScalingRoPE: the base in float64, mlx takes it as float
            r = d
            S = max(rope.effective_seq_len, o["original_max_position_embeddings"])
            f = o["factor"]
            base = rope.base * ((f * S / o["original_max_position_embeddings"]) - (f - 1)) ** (r / (r - 2))
        pscale = f32(1 / o["factor"]) if scaling == "linear" else one
        return exp_based(base), pscale, one
    if scaling == "llama3":
        freqs = _mlx_pow(rope.base, expo)
        wl = (f32(2 * math.pi) * freqs).astype(f32)
        lo_f, hi_f, old, factor = o["low_freq_factor"], o["high_freq_factor"], o["original_max_position_embeddings"], o["factor"]  # fmt: skip
        low_wl, high_wl = old / lo_f, old / hi_f
        freqs = np.where(wl > f32(low_wl), (freqs * f32(factor)).astype(f32), freqs)
        medium = (wl > f32(high_wl)) & (wl < f32(low_wl))
        smooth = (((f32(old) / wl).astype(f32) - f32(lo_f)).astype(f32) / f32(hi_f - lo_f)).astype(f32)
        den = (((one - smooth).astype(f32) / f32(factor)).astype(f32) + smooth).astype(f32)
        freqs = np.where(medium, (freqs / den).astype(f32), freqs)
        return (one / freqs).astype(f32), one, one
    if scaling == "yarn":
        f = float(o["factor"])
        freq_extra = _mlx_pow(rope.base, expo)
        freq_inter = (f32(f) * freq_extra).astype(f32)
        from ..encodings.rope.scaling import yarn_correction_range

        low, high = yarn_correction_range(o["beta_fast"], o["beta_slow"], d, rope.base,
                                          o["original_max_position_embeddings"], True)  # fmt: skip
        if low == high:
            high += 0.001
        ramp = np.clip(((np.arange(h, dtype=f32) - f32(low)).astype(f32) / f32(high - low)).astype(f32), 0, 1)
        mask = (one - ramp).astype(f32)
        num = (freq_inter * freq_extra).astype(f32)
        den = ((freq_inter * mask).astype(f32) + (freq_extra * (one - mask).astype(f32)).astype(f32)).astype(f32)
        return (one / (num / den).astype(f32)).astype(f32), one, f32(rope.attention_scaling)
    if scaling == "longrope":
        freqs = (np.asarray(rope.ext_factors(), dtype=f32) * _mlx_pow(rope.base, expo)).astype(f32)
        return (one / freqs).astype(f32), one, f32(rope.attention_scaling)
    from ..encodings.rope.scaling import SCALINGS

    return SCALINGS[scaling].float32(rope), one, f32(rope.attention_scaling)


def _mlx_pairs(rope: Rope) -> tuple[Pairs, np.ndarray, tuple[Any, ...]]:
    inv, pscale, amp = _mlx_freqs(rope)

    def pairs(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pos = (t.astype(f32) * pscale).astype(f32)
        return _f32_trig((pos[:, None] * inv[None, :]).astype(f32), amp)

    return pairs, (inv.astype(np.float64) * float(pscale)), (inv.tobytes(), float(pscale), float(amp))


def _ggml_pairs(facts: ModelFacts, n_ctx: int | None) -> tuple[Pairs, np.ndarray, tuple[Any, ...]]:
    """llama.cpp: ggml's float32 rope cache for a faithful conversion of the config at context ``n_ctx``
    (:mod:`posenc_cli.models.llamacpp`), and the frequencies llama.cpp means."""
    from . import llamacpp as lc

    rope = lc.rope_from_hf_config(facts.raw, facts.layer_type)
    ctx = lc.context(rope, n_ctx)
    if rope.rope_type == "NONE":
        raise ParameterError(f"architecture {rope.arch} applies no RoPE (llama.cpp's rope type NONE)")
    kw: dict[str, Any] = dict(
        freq_base=rope.freq_base, freq_scale=ctx.freq_scale, ext_factor=ctx.ext_factor, attn_factor=ctx.attn_factor,
        beta_fast=rope.beta_fast, beta_slow=rope.beta_slow, n_ctx_orig=rope.n_ctx_orig, freq_factors=ctx.factors,
        mode=rope.rope_type,
    )  # fmt: skip
    if rope.rope_type in lc.M_ROPE:
        kw["sections"] = tuple(rope.sections) + (0,) * (4 - len(rope.sections))
    h = rope.n_rot // 2

    def pairs(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c, s = lc.cache_rows(t, rope.n_rot, **kw)  # the audit's GGUF verdict reads the same rows
        return c[:, :h], s[:, :h]

    key = tuple((k, v.tobytes() if isinstance(v, np.ndarray) else v) for k, v in sorted(kw.items()))
    return pairs, lc.intended_inv_freq(rope, ctx), (rope.n_rot, *key)


@dataclass(frozen=True)
class EngineRope(Rope):
    """A ``rope`` table as an engine computes it: the parameters say the rules (as posenc's ``rope`` reads them),
    the cos/sin rows come from the engine's own arithmetic (:data:`ARITHMETIC`). Made by :func:`engine_rope`; the
    three fields below are no parameters (a copy with another dtype keeps them)."""

    engine_name: str = field(default="hf", compare=False)
    arithmetic: str = field(default="exact", compare=False)
    #: (rows -> float32 cos/sin pairs, the engine's inv_freq or None, SGLang's boundary row or None, whether
    #: linear scaling divides the positions)
    engine_state: Any = field(default=None, compare=False, repr=False)
    #: what decides every bit of the tables: the arithmetic, the parameters and the engine's float32 inputs (two
    #: engines computing the same float32 expressions of the same inputs, e.g. vLLM and SGLang, have equal keys)
    table_key: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def param_fields(cls) -> list[Any]:
        skip = ("engine_name", "arithmetic", "engine_state", "table_key")
        return [f for f in super().param_fields() if f.name not in skip]

    def exact_reference(self) -> Rope:
        """The correctly rounded ``rope`` of the same parameters: the table this engine's arithmetic approximates
        (``compare`` judges two engines' tables of one model against it, within the float32 formula's error)."""
        return Rope(**{f.name: getattr(self, f.name) for f in Rope.param_fields()})

    def extra_metadata(self) -> dict[str, str]:
        e = ENGINES[self.engine_name]
        out = {**super().extra_metadata(), "engine": e.name, "engine_version": e.version,
               "engine_arithmetic": self.arithmetic}  # fmt: skip
        _pairs, _inv, boundary, divides = self.engine_state
        if divides:
            out["engine_divides_positions"] = "true"
        if boundary is not None:
            out["engine_boundary_row"] = f"{boundary[0]}:{boundary[1]!r}"
        return out

    def _pairs_at(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """The engine's float32 cos and sin of positions ``start:stop`` (shared with the other part's request of
        the same rows: :class:`~posenc_cli.encodings._trig.LastBlock`)."""
        return self._last_pairs.get((start, stop), lambda: self._compute_pairs(start, stop))

    @cached_property
    def _last_pairs(self) -> LastBlock:
        return LastBlock()

    def _compute_pairs(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        pairs, _inv, boundary, _divides = self.engine_state
        t = np.arange(start, stop, dtype=np.int64)
        cos, sin = pairs(t)
        if boundary is not None:
            hit = t == boundary[0]
            cos[hit] = f32(boundary[1])
            sin[hit] = f32(0)
        return cos, sin

    def inv_freq(self) -> np.ndarray:
        inv = self.engine_state[1]
        return super().inv_freq() if inv is None else np.asarray(inv, dtype=np.float64).copy()

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        if name == "inv_freq" and self.engine_state[1] is not None:
            out[...] = self.inv_freq()[start:stop]
            return
        if name == "inv_freq" or name not in self.tensor_specs():
            super().fill(name, start, stop, out)
            return
        cos, sin = self._pairs_at(self.offset + start, self.offset + stop)
        place_pairs(sin if name.startswith("sin") else cos, out, "cache" if name.endswith("_cache") else self.layout)


def _plain_rope(facts: ModelFacts) -> bool:
    """Whether the model's kind is posenc's plain :class:`Rope` (the engines' float32 arithmetic is emulated for
    it; M-RoPE, xPos and other kinds keep posenc's exact tables)."""
    from ..encodings import get_kind

    return get_kind(facts.kind) is Rope


def engine_rope(e: Engine, facts: ModelFacts, params: dict[str, Any], *, n_ctx: int | None = None,
                boundary: tuple[int, float] | None = None) -> Rope:  # fmt: skip
    """The ``rope`` encoding of ``params`` with engine ``e``'s arithmetic (exact engines: posenc's own rope)."""
    from ..encodings import make_encoding

    base = make_encoding(facts.kind, params)
    if e.arithmetic == "exact" or not _plain_rope(facts) or params.get("scaling") == "proportional":
        return base  # type: ignore[return-value]
    assert isinstance(base, Rope)
    inv: np.ndarray | None = None
    effects = {r.effect for r in engine_rules(facts, e.name)}
    divides = e.arithmetic == "torch-float32" and base.scaling == "linear" and "linear:divides-positions" in effects
    if e.arithmetic == "torch-float32":
        pairs, inputs = _torch_pairs(base, divides)
    elif e.arithmetic == "mlx-float32":
        pairs, inv, inputs = _mlx_pairs(base)
    else:
        pairs, inv, inputs = _ggml_pairs(facts, n_ctx)
    return _engine_rope_of(base, e.name, e.arithmetic, pairs, inv, inputs, boundary, divides)


def _engine_rope_of(base: Rope, name: str, arith: str, pairs: Pairs, inv: np.ndarray | None, inputs: tuple[Any, ...],
                    boundary: tuple[int, float] | None, divides: bool) -> EngineRope:  # fmt: skip
    """``base``'s parameters with engine ``name``'s pairs; ``inputs``: what decides the pairs' bits."""
    kw = {f.name: getattr(base, f.name) for f in base.param_fields()}
    key = (arith, tuple((k, repr(v)) for k, v in sorted(kw.items())), inputs, boundary)
    state = (pairs, inv, boundary, divides)
    return EngineRope(**kw, engine_name=name, arithmetic=arith, engine_state=state, table_key=key)


#: the last block's float32 formula bound in each thread (:meth:`ArithmeticJudge.feed`)
_BOUNDS = LastBlock()


class ArithmeticJudge:
    """:func:`within_arithmetic` fed block by block, so that a caller that reads an engine's table anyway (the
    audit's difference and picture) reads it once: :meth:`feed` each block of each 2-D tensor (the engine's
    values ``x`` and ``ref``'s ``y`` on positions ``start:stop``), then :meth:`result`.

    One rule for every engine row (audit, ``compare X@ENGINE Y``): the table is ``ref``'s when it lies within the
    bound of the arithmetic both sides use (:meth:`result` says which, and the bound); otherwise
    :meth:`difference` names what differs: a parameter (both values), llama.cpp's boundary row, frequencies
    beyond ggml's, or values beyond the float32 formula's bound (how far, where)."""

    def __init__(self, enc: Any, ref: Any) -> None:
        import dataclasses

        self.enc, self.ref = enc, ref
        self.verdicts: dict[str, Any] = {}
        self.why: str | None = None
        exact = getattr(enc, "exact_reference", None)
        self.applies = exact is not None and isinstance(ref, Rope)
        self.numeric = self.applies and enc.arithmetic != "ggml-float32"
        if self.applies and not self.numeric:
            self.why = self._ggml(dataclasses)

    def _ggml(self, dataclasses: Any) -> str | None:
        """ggml, whose iterated powf the float32 formula's bound does not model: the same parameters, no
        boundary row in range, per-pair frequencies within :data:`GGML_FREQ_RTOL` (the GGUF verdict's rule)."""
        enc, ref = self.enc, self.ref
        # the frequencies' dtype (HF's float32 inv_freq) is part of the arithmetic, not of the parameters; the
        # sequence length a rule reads (llama.cpp's n_ctx for LongRoPE, HF's max position + 1) is one only through
        # the frequencies and the attention scaling it gives, compared below
        mine = dataclasses.replace(enc.exact_reference(), inv_freq_dtype=ref.inv_freq_dtype, seq_len=ref.seq_len)
        if mine != ref or enc.exact_reference().attention_scaling != ref.attention_scaling:
            return None
        _pairs, _inv, boundary, _divides = enc.engine_state
        if boundary is not None and enc.offset <= boundary[0] < enc.offset + enc.length:
            return None
        rel = frequency_error(enc.inv_freq(), ref.inv_freq())
        if not rel <= GGML_FREQ_RTOL:
            return None
        return f"hf's parameters in {ARITHMETIC[enc.arithmetic]}: per-pair frequencies within {rel:.2g} of hf's"

    def feed(self, name: str, start: int, stop: int, x: np.ndarray, y: np.ndarray) -> None:
        from ..inspect.tolerance import FormulaVerdict, formula_bound, formula_check

        if not self.numeric:
            return
        terms, spec = self.ref.angle_terms(name), self.ref.tensor_specs().get(name)
        mine = self.enc.tensor_specs()[name]
        if terms is None or spec is None or tuple(spec.shape) != tuple(mine.shape):
            self.verdicts[name] = FormulaVerdict(False, np.inf, np.nan, -1, False)
            return
        rows = np.arange(start, stop, dtype=np.int64)
        stored, ref = np.dtype(mine.dtype), np.dtype(spec.dtype)
        # cos and sin of one block, and every engine's table measured against the same reference in one pass
        # (the audit), have the same bound: computed once
        key = (start, stop, terms.freq.tobytes(), terms.amplitude, terms.offset, stored.str, ref.str)
        bound = _BOUNDS.get(key, lambda: (formula_bound(terms, rows, stored, ref),))[0]
        v = formula_check(x, y, rows, terms, stored, ref, bound=bound)
        out = self.verdicts.get(name)
        self.verdicts[name] = v if out is None else out.joined(v)

    def difference(self) -> str:
        """What differs from ``ref``, in one clause ('' when the table is ``ref``'s within the arithmetic, or
        nothing was judged)."""
        from ..inspect.diagnose.parameters import Reading, parameter_steps

        if not self.applies or self.result() is not None:
            return ""
        import dataclasses

        enc, ref = self.enc, self.ref
        mine = enc.exact_reference()
        same_else = dataclasses.replace(mine, seq_len=ref.seq_len, inv_freq_dtype=ref.inv_freq_dtype) == ref
        if same_else and mine.effective_seq_len != ref.effective_seq_len:
            return (
                f"{enc.engine_name} reads sequence length {mine.effective_seq_len} where hf reads "
                f"{ref.effective_seq_len}, and its scaling rule ({ref.scaling}) follows it"
            )
        ra = Reading(ref.KIND, dict(mine.params()), label=enc.engine_name)
        rb = Reading(ref.KIND, dict(ref.params()), label="hf")
        steps = [s.clause for s in parameter_steps(enc.engine_name, "hf", ra, rb) if s.name != "sub-range"]
        if steps:
            return "; ".join(steps)
        if not self.numeric:
            _pairs, _inv, boundary, _divides = enc.engine_state
            if boundary is not None and enc.offset <= boundary[0] < enc.offset + enc.length:
                return f"{enc.engine_name} switches its table at position {boundary[0]}"
            w, w_ref = np.asarray(enc.inv_freq(), np.float64), np.asarray(ref.inv_freq(), np.float64)
            if w.shape == w_ref.shape and w.size:
                rel = frequency_error(w, w_ref)
                return f"its per-pair frequencies differ from hf's by up to {rel:.2g} (beyond {GGML_FREQ_RTOL:g})"
            return f"its frequencies ({w.size}) are not hf's ({w_ref.size})"
        bad = [v for v in self.verdicts.values() if not v.ok]
        if not bad:
            return ""
        v = max(bad, key=lambda x: x.ratio)
        if not v.informative:
            return f"the float32 formula's bound says nothing there (bound {v.bound:.2g} at row {v.bound_row})"
        return f"values {v.ratio:.3g} x beyond the float32 formula's error (bound {v.bound:.2g} at row {v.bound_row})"

    def result(self) -> str | None:
        """Why the table is ``ref`` in the engine's arithmetic, or None (also when no 2-D tensor was fed)."""
        if not self.numeric:
            return self.why
        if not self.verdicts or not all(v.ok for v in self.verdicts.values()):
            return None
        worst = max(self.verdicts.values(), key=lambda v: v.bound)
        return f"hf's table in {ARITHMETIC[self.enc.arithmetic]}, {worst.text()}"


def within_arithmetic(enc: Any, ref: Any) -> str | None:
    """Why ``enc`` (an engine's table, :class:`EngineRope`) is the exact table ``ref`` computed in the engine's
    float32 arithmetic, or None when it is not. torch and mlx: every cos/sin value within the float32 formula's
    bound of :mod:`posenc_cli.inspect.tolerance` around ``ref`` (a numeric judgement, whatever the rules say);
    ggml: :meth:`ArithmeticJudge._ggml`. Reads the tables block by block (:class:`ArithmeticJudge`)."""
    from ..blocks import rows_per_block

    judge = ArithmeticJudge(enc, ref)
    if judge.numeric:
        for name, spec in enc.tensor_specs().items():
            if len(spec.shape) != 2:
                continue
            n = int(spec.shape[0])
            block = rows_per_block(int(spec.shape[1]))
            for start in range(0, n, block):
                stop = min(n, start + block)
                x = np.asarray(enc.rows(name, start, stop), dtype=np.float64)
                y = np.asarray(ref.rows(name, start, stop), dtype=np.float64)
                judge.feed(name, start, stop, x, y)
    return judge.result()


def engine_rope_from_metadata(base: Any, metadata: dict[str, str]) -> tuple[Any, str]:
    """A file's table written by an ``--engine``: its ``rope`` parameters (``base``) in the engine's arithmetic,
    as its metadata records it (engine, arithmetic, boundary row, divided positions); (None, why) where the
    metadata cannot rebuild it (llama.cpp's ggml tables need the model's conversion, not only rope's
    parameters)."""
    name, arith = metadata.get("engine"), metadata.get("engine_arithmetic")
    if name not in ENGINES or arith != ENGINES[name].arithmetic or not isinstance(base, Rope):
        return None, f"metadata names engine {name!r} with arithmetic {arith!r}, which posenc does not mirror"
    if arith == "ggml-float32":
        return None, "a llama.cpp table: ggml's arithmetic is rebuilt from the model's config (--engine llamacpp)"
    boundary = None
    if "engine_boundary_row" in metadata:
        at, _, scale = metadata["engine_boundary_row"].partition(":")
        boundary = (int(at), float(scale))
    divides = metadata.get("engine_divides_positions") == "true"
    if arith == "torch-float32":
        (pairs, inputs), inv = _torch_pairs(base, divides), None
    else:
        pairs, inv, inputs = _mlx_pairs(base)
    return _engine_rope_of(base, name, arith, pairs, inv, inputs, boundary, divides), ""


def llamacpp_encoding(kind: str, params: dict[str, Any], facts: ModelFacts | None = None,
                      n_ctx: int | None = None) -> Any:  # fmt: skip
    """The tables llama.cpp computes: ggml's float32 arithmetic (``models/llamacpp.py``) on llama.cpp's rules."""
    if facts is None:
        from ..encodings import make_encoding

        return make_encoding(kind, params)
    return engine_rope(ENGINES["llamacpp"], facts, params, n_ctx=n_ctx)


def engine_encoding(
    config: Any,
    engine: str,
    *,
    length: int | None = None,
    layer_type: str | None = None,
    overrides: dict[str, Any] | None = None,
    max_model_len: int | None = None,
    n_ctx: int | None = None,
    seq_len: int | None = None,
    facts: ModelFacts | None = None,
) -> tuple[Any, ModelFacts]:
    """The encoding whose tables ``engine`` computes for ``config`` (``length`` rows, default the engine's own
    context: vLLM's max_model_len, else the model's max_position_embeddings), with ``overrides`` (the user's
    parameters) on top; ``seq_len`` the sequence length of the forward pass (default: offset + length, the rows'
    last position + 1). Rows the engine computes no table for (:func:`engine_limits`) are refused by name.
    ``facts``: :func:`model_facts` of ``config`` and ``layer_type`` when the caller has read them already (read,
    never changed)."""
    e = resolve_engine(engine)
    if facts is None:
        facts = model_facts(config, layer_type=layer_type)
    overrides = dict(overrides or {})
    offset = int(overrides.get("offset", 0))
    limits = engine_limits(facts, e.name, max_model_len=max_model_len)
    first = min((lim.rows for lim in limits), default=None)
    n = (facts.max_positions if first is None else max(1, first - offset)) if length is None else int(length)
    for lim in sorted(limits, key=lambda x: x.rows):
        if offset + n > lim.rows:
            raise ParameterError(
                f"{e.label} computes no table for position {max(lim.rows, offset)}: {lim.says} ({lim.source}); "
                f"lower {param('length')} to {max(lim.rows - offset, 0)}"
            )
    if seq_len is None:
        seq_len = int(overrides.get("seq_len") or (offset + n))
    p = engine_params(facts, e.name, seq_len=seq_len, max_model_len=max_model_len, n_ctx=n_ctx)
    p = {**p, **{k: v for k, v in overrides.items() if k != "seq_len"}, "length": n}
    if e.arithmetic in ("torch-float32", "mlx-float32") and _plain_rope(facts):
        p.setdefault("inv_freq_dtype", "float32")
    enc = engine_rope(e, facts, p, n_ctx=n_ctx, boundary=boundary_row(facts, e.name, seq_len))
    return enc, facts


def engine_encoding_within(
    config: Any,
    engine: str,
    *,
    length: int | None = None,
    layer_type: str | None = None,
    overrides: dict[str, Any] | None = None,
    max_model_len: int | None = None,
    n_ctx: int | None = None,
    facts: ModelFacts | None = None,
) -> tuple[Any, ModelFacts, EngineLimit | None]:
    """:func:`engine_encoding` for a comparison: the rows the engine computes of those asked, and the limit it
    meets (:func:`engine_reach`) instead of a refusal. The encoding is None when it computes no row at all.
    ``facts``: as :func:`engine_encoding` takes them."""
    if facts is None:
        facts = model_facts(config, layer_type=layer_type)
    offset = int((overrides or {}).get("offset", 0))
    hit = None
    if length is not None:
        hit = engine_reach(facts, engine, length=int(length), offset=offset, max_model_len=max_model_len)
    if hit is not None and hit.rows == 0:
        return None, facts, hit
    enc, facts = engine_encoding(config, engine, length=length if hit is None else hit.rows, layer_type=layer_type,
                                 overrides=overrides, max_model_len=max_model_len, n_ctx=n_ctx, facts=facts)  # fmt: skip
    return enc, facts, hit


def departures(config: Any, *, layer_type: str | None = None, length: int | None = None,
               max_model_len: int | None = None, n_ctx: int | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Per engine: the rules that apply to this model, its limits, and at which sequence lengths its tables differ
    from HF's (``length``, else the original context, one more, and max_position_embeddings: where LongRoPE
    switches), measured on inv_freq and the attention scaling, which set every row (and SGLang's boundary row).
    A rule that needs an option not given is said in ``note`` (its text keeps posenc's parameter marks:
    :meth:`PosencError.render` spells them)."""
    import numpy as np

    from ..encodings import make_encoding

    facts = model_facts(config, layer_type=layer_type)
    lengths = [int(length)] if length is not None else sorted({facts.original, facts.original + 1, facts.max_positions})
    rows = []
    for name in ENGINE_NAMES:
        e = ENGINES[name]
        row: dict[str, Any] = {"engine": name, "version": e.label, "reference": e.reference, "differs": False,
                               "arithmetic": ARITHMETIC[e.arithmetic], "differs_at": [], "note": "", "error": None,
                               "limits": [],
                               "rules": [{"says": r.says, "source": f"{e.label} {r.source}"}
                                         for r in engine_rules(facts, name)
                                         if not r.effect.startswith(("limit:", "refuse:"))]}  # fmt: skip
        if runs_hf_code(facts, e):
            row["rules"].insert(
                0,
                {
                    "says": f"{facts.architecture} has no model file of its own: its Transformers "
                    "backend runs HF's rotary code",
                    "source": f"{e.label} {e.native_source}",
                },
            )
        notes = []
        try:
            limits = engine_limits(facts, name, max_model_len=max_model_len if "max_model_len" in e.options else None)
        except ParameterError as exc:
            row["error"] = exc
            rows.append(row)
            continue
        row["limits"] = [{"from_position": lim.rows, "says": lim.says, "source": f"{e.label} {lim.source}"}
                         for lim in sorted(limits, key=lambda x: x.rows)]  # fmt: skip
        for n in lengths:
            ref = make_encoding(facts.kind, {**engine_params(facts, "hf", seq_len=n), "length": 1})
            try:
                p = engine_params(
                    facts,
                    name,
                    seq_len=n,
                    max_model_len=max_model_len if "max_model_len" in e.options else None,
                    n_ctx=n_ctx if "n_ctx" in e.options else None,
                )
            except ParameterError as exc:
                row["error"] = exc
                break
            enc = make_encoding(facts.kind, {**p, "length": 1})
            w_ref, w = ref.inv_freq(), enc.inv_freq()  # type: ignore[attr-defined]
            s_ref, s = float(ref.attention_scaling), float(enc.attention_scaling)  # type: ignore[attr-defined]
            edge = boundary_row(facts, name, n)
            if w.shape == w_ref.shape and bool(np.all(w == w_ref)) and s == s_ref and edge is None:
                continue
            row["differs_at"].append(n)
            rel = float(np.max(np.abs(w / w_ref - 1))) if w.shape == w_ref.shape else float("nan")
            what = (f"inv_freq up to {rel:.3g} off (relative)" if w.shape == w_ref.shape
                    else f"{2 * len(w)} rotated features vs {2 * len(w_ref)}")  # fmt: skip
            if edge is not None and w.shape == w_ref.shape:
                what += f"; position {edge[0]} reads the long table's position 0 (cos {edge[1]:.5g}, sin 0)"
            notes.append(f"at sequence length {n}: {what}" +
                         (f", attention scaling {s:.6g} vs {s_ref:.6g}" if s != s_ref else ""))  # fmt: skip
        row["differs"] = bool(row["differs_at"])
        row["note"] = "; ".join(notes)
        rows.append(row)
    return rows


# ----- a divergence in words: the rule and the values it gives ---------------------------------------------------
def _hf_and_own(facts: ModelFacts, engine: str, seq_len: int, options: dict[str, Any]) -> tuple[Any, Any]:
    """HF's and the engine's ``rope`` of this model for a pass of ``seq_len`` rows (one row: their parameters)."""
    from ..encodings import make_encoding

    hf = make_encoding(facts.kind, {**engine_params(facts, "hf", seq_len=seq_len), "length": 1})
    own = make_encoding(facts.kind, {**engine_params(facts, engine, seq_len=seq_len, **options), "length": 1})
    return hf, own


def _yarn_factor_values(facts: ModelFacts, hf: Any, own: Any) -> str | None:
    if own.scaling != "yarn" or hf.scaling != "yarn" or own.opt["factor"] == hf.opt["factor"]:
        return None
    f = own.opt["factor"]
    mpe = _read_key(facts.raw, (int,), ("max_position_embeddings",), None)
    return (f"derives the YaRN factor from max_position_embeddings / original_max_position_embeddings = {mpe} / "
            f"{own.opt['original_max_position_embeddings']} = {f:g}" +
            (": no YaRN" if f == 1 else f", attention factor {own.attention_scaling:.5g}") +
            f"; HF applies factor {hf.opt['factor']:g}, attention factor {hf.attention_scaling:.5g}")  # fmt: skip


def _attention_values(facts: ModelFacts, hf: Any, own: Any) -> str | None:
    """The attention factor, where the factor is HF's (another factor is said with its own rule)."""
    if own.attention_scaling == hf.attention_scaling or own.opt.get("factor") != hf.opt.get("factor"):
        return None
    return f"applies attention factor {own.attention_scaling:.5g}; HF {hf.attention_scaling:.5g}"


def _longrope_values(facts: ModelFacts, hf: Any, own: Any) -> str | None:
    if own.scaling != "longrope" or hf.scaling != "longrope":
        return None
    parts = []
    long, hf_long = own.ext_factors() == own.long_factor, hf.ext_factors() == hf.long_factor
    if long != hf_long:
        a = _read_key(facts.raw, (int,), ("max_position_embeddings",), None)
        b = own.opt["original_max_position_embeddings"]
        parts.append(f"takes the {'long' if long else 'short'} factors at every position (max_position_embeddings "
                     f"{a} {'>' if long else '<='} original {b}); HF the {'long' if hf_long else 'short'} ones for "
                     f"a sequence of {hf.effective_seq_len}")  # fmt: skip
    if own.attention_scaling != hf.attention_scaling:
        parts.append(f"applies attention factor {own.attention_scaling:.5g}; HF {hf.attention_scaling:.5g}")
    return "; ".join(parts) or None


def _reading_values(facts: ModelFacts, hf: Any, own: Any) -> str | None:
    parts = [f"{what} {mine} (HF {theirs})" for what, mine, theirs in (
        ("base", f"{own.base:g}", f"{hf.base:g}"), ("rotated features", own.rot_dim, hf.rot_dim),
        ("pairs", own.layout, hf.layout)) if mine != theirs]  # fmt: skip
    return ("reads the config with its own keys and defaults: " + ", ".join(parts)) if parts else None


#: The effects whose rule is said with the values it gives for one model (and HF's): (facts, HF's rope, the
#: engine's rope) -> the words, or None when the rule changes nothing of this model's table.
def _traditional_values(facts: ModelFacts, hf: Any, own: Any) -> str | None:
    if hf.layout == own.layout:
        return None
    value = facts.raw.get("rope_traditional")
    return (
        f"reads rope_traditional={value} from the config: nn.RoPE(traditional={value}) rotates "
        + ("the pairs (2k, 2k+1)" if own.layout == "interleaved" else "halves")
        + f"; HF rotates {'halves' if hf.layout == 'half' else 'the pairs (2k, 2k+1)'}"
    )


SAID_WITH_VALUES: dict[str, Callable[[ModelFacts, Any, Any], str | None]] = {
    "pairing:rope-traditional": _traditional_values,
    "yarn:factor-from-lengths": _yarn_factor_values,
    "yarn:mscale-by-architecture": _attention_values,
    "longrope:max-position-embeddings": _longrope_values,
    "read:by-architecture": _reading_values,
}


def rule_lines(facts: ModelFacts, engine: str, *, seq_len: int | None = None, valued_only: bool = False,
               max_model_len: int | None = None, n_ctx: int | None = None) -> list[str]:  # fmt: skip
    """The rules of ``engine`` that make its table of this model differ from HF's for a pass of ``seq_len`` rows
    (default: the model's context), each in one line: the engine, what the rule does with this model's values
    and HF's (:data:`SAID_WITH_VALUES`) or its words, and the source. [] where the two tables' parameters agree
    (or the engine refuses the model: :func:`engine_refusal` says that). ``valued_only``: only the rules of
    :data:`SAID_WITH_VALUES`; ``max_model_len``, ``n_ctx``: the engine's options, as :func:`engine_params`."""
    e = resolve_engine(engine)
    if e.name == "hf" or engine_refusal(facts, e) is not None:
        return []
    n = facts.max_positions if seq_len is None else int(seq_len)
    options = {k: v for k, v in (("max_model_len", max_model_len), ("n_ctx", n_ctx)) if v is not None}
    try:
        hf, own = _hf_and_own(facts, e.name, n, options)
    except ParameterError:
        return []
    same = (np.array_equal(hf.inv_freq(), own.inv_freq()) and hf.attention_scaling == own.attention_scaling
            and hf.layout == own.layout and hf.rot_dim == own.rot_dim)  # fmt: skip
    if same:
        return []
    out = []
    for r in engine_rules(facts, e.name):
        if r.effect.startswith(("limit:", "refuse:")):
            continue
        said = SAID_WITH_VALUES.get(r.effect)
        if said is None and valued_only:
            continue
        words = said(facts, hf, own) if said is not None else r.says
        if words:
            out.append(f"{e.package} {words} ({e.label} {r.source})")
    return out


def rule_says(facts: ModelFacts, engine: str, *, seq_len: int | None = None) -> list[str]:
    """The words of the engine's rules that apply to this model (the audit's): each rule's own words, those of
    :data:`SAID_WITH_VALUES` with this model's values and HF's where they change its table (:func:`rule_lines`);
    a ``refuse:`` rule is a refusal (:func:`engine_refusal`), not words about a table."""
    plain = [r.says for r in rules_for(engine, facts.params)
             if r.effect not in SAID_WITH_VALUES and not r.effect.startswith("refuse:")]  # fmt: skip
    return plain + rule_lines(facts, engine, seq_len=seq_len, valued_only=True)
