"""Facts about where sampled model types place positions, made by the types' own code (issue 36.1's tests).

Run once in the side venv (transformers 5.24.0, torch 2.13.0 CPU)::

    /work/side/venv/bin/python tools/golden/inventory_mechanism_facts.py

Independently of tools/inventory/mechanisms.py (no trace, no taint): for each sampled type, a tiny CPU instance
(its default config with the layer counts below set to 1 and a small vocabulary) is built and run, and for the
tensor or module that the modeling file's forward uses for positions (named below, with the line that uses it,
read from transformers' source) the script records what the running code says:

* ``exists``: the path resolves in the instance; ``holder``: ``parameter`` (trainable), ``frozen parameter``
  (``requires_grad`` False) or ``buffer`` for a tensor, the class name for a module;
* ``used``: the output changes when that tensor is perturbed (a tensor), or when the module's output is
  perturbed through a forward hook (a module): the forward really reads it;
* ``conv``: for a convolution, its kernel and groups;
* ``calls``: for rotary types, how many times the modeling module's own ``apply_rotary*``/``rotate*``
  functions were called during the forward (wrapped by name in the module);
* ``permutes``: for types without positions (``NONE``), whether the output for permuted ids is the permuted output.

Writes tests/data/inventory/mechanism_facts.json.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import torch


def _torchvision_stand_in() -> None:
    """As tools/inventory/make_inventory.py: the torchvision stand-in (on PYTHONPATH) before transformers, so the
    DETR family's default timm backbone builds."""
    import importlib.machinery

    try:
        import sitecustomize_tv  # noqa: F401
    except ImportError:
        return
    for name, mod in list(sys.modules.items()):
        if name.split(".")[0] == "torchvision" and getattr(mod, "__spec__", None) is None:
            mod.__spec__ = importlib.machinery.ModuleSpec(name, None)


_torchvision_stand_in()
import transformers  # noqa: E402
from transformers import AutoConfig, AutoModel  # noqa: E402

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
torch.set_num_threads(1)
OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "inventory" / "mechanism_facts.json"

#: model type -> (mechanism, component, path in the base model, what the modeling file does with it, overrides)
SAMPLE: dict[str, tuple[str, str, str, str, dict[str, Any]]] = {
    # learned tables
    "vit": ("learned", "model", "embeddings.position_embeddings",
            "modeling_vit.py ViTEmbeddings.forward: embeddings = embeddings + self.position_embeddings", {}),
    "deit": ("learned", "model", "embeddings.position_embeddings",
             "modeling_deit.py DeiTEmbeddings.forward: embeddings = embeddings + position_embedding", {}),
    "dinov2": ("learned", "model", "embeddings.position_embeddings",
               "modeling_dinov2.py Dinov2Embeddings.forward: embeddings + self.interpolate_pos_encoding(...)", {}),
    "esm": ("learned", "model", "embeddings.position_embeddings.weight",
            "modeling_esm.py EsmEmbeddings.forward: position_embedding_type 'absolute' (the config default): "
            "embeddings + self.position_embeddings(position_ids)", {"vocab_size": 33, "pad_token_id": 1}),
    "gpt2": ("learned", "model", "wpe.weight", "modeling_gpt2.py GPT2Model.forward: inputs_embeds + self.wpe(...)",
             {}),
    # fixed tables (buffers, frozen parameters)
    "vit_mae": ("fixed", "model", "embeddings.position_embeddings",
                "modeling_vit_mae.py ViTMAEEmbeddings: nn.Parameter(..., requires_grad=False) (fixed sin-cos), "
                "added in forward", {"mask_ratio": 0.0}),
    "ctrl": ("fixed", "model", "pos_encoding",
             "modeling_ctrl.py CTRLModel: register_buffer('pos_encoding', positional_encoding(...)); "
             "pos_embeds = self.pos_encoding[position_ids, :]", {}),
    "qwen2_audio": ("fixed", "audio_config", "audio_tower.embed_positions.weight",
                    "modeling_qwen2_audio.py Qwen2AudioEncoder: embed_positions.requires_grad_(False) "
                    "(Whisper-style sinusoids); inputs_embeds + embed_pos", {}),
    "whisper": ("fixed", "model", "encoder.embed_positions.weight",
                "modeling_whisper.py WhisperEncoder: embed_positions.requires_grad_(False); "
                "inputs_embeds + self.embed_positions.weight", {}),
    # convolutions over the sequence
    "wav2vec2": ("convolutional", "model", "encoder.pos_conv_embed.conv",
                 "modeling_wav2vec2.py Wav2Vec2Encoder.forward: hidden_states + self.pos_conv_embed(hidden_states)",
                 {}),
    "hubert": ("convolutional", "model", "encoder.pos_conv_embed.conv",
               "modeling_hubert.py HubertEncoder.forward: hidden_states + self.pos_conv_embed(hidden_states)", {}),
    "sew": ("convolutional", "model", "encoder.pos_conv_embed.conv",
            "modeling_sew.py SEWEncoder.forward: pooled_hidden_states + position_embeddings", {}),
    # relative bias tables
    "swin": ("relative_bias", "model",
             "encoder.layers.0.blocks.0.attention.relative_position_bias.relative_position_bias_table",
             "modeling_swin.py SwinRelativePositionBias.forward: relative_position_bias_table[relative_position_index], "
             "added to attention_scores (SwinAttention.relative_position_bias, line 416)",
             {}),
    "t5": ("relative_bias", "model", "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
           "modeling_t5.py T5Attention.compute_bias: relative_attention_bias(bucket) added to scores", {}),
    "cpmant": ("relative_bias", "model", "position_bias.relative_attention_bias",
               "modeling_cpmant.py CpmAntSegmentPositionEmbedding: F.embedding(bucket, relative_attention_bias); "
               "CpmAntAttention: score = score + position_bias", {}),
    # relative schemes
    "xlnet": ("relative", "model", "layer.0.rel_attn.r",
              "modeling_xlnet.py XLNetRelativeAttention.rel_attn_core: bd = einsum(q_head + r_r_bias, k_head_r) "
              "with k_head_r = einsum(pos_emb, self.r): sinusoids of relative distances", {}),
    "funnel": ("relative", "model", "encoder.blocks.0.0.attention.r_kernel",
               "modeling_funnel.py FunnelRelMultiheadAttention.relative_positional_attention: einsum with "
               "position_embeds (sinusoids of relative distances) and r_kernel", {}),
    "wav2vec2-bert": ("relative", "model", "encoder.layers.0.self_attn.distance_embedding.weight",
                      "modeling_wav2vec2_bert.py Wav2Vec2BertSelfAttention: distance_embedding(distance) "
                      "einsum'd with the query ('relative_key')", {}),
    "granite_speech": ("relative", "encoder_config", "encoder.layers.0.attn.rel_pos_emb.weight",
                       "modeling_granite_speech.py GraniteSpeechConformerAttention: rel_pos_emb(attention_dists) "
                       "einsum'd with the query (Shaw)", {}),
    # rotary
    "vjepa2": ("rotary", "model", "encoder.layer.0.attention",
               "modeling_vjepa2.py VJEPA2RopeAttention: rotate_queries_or_keys on q and k",
               {"frames_per_clip": 4, "crop_size": 64}),
    "llama": ("rotary", "model", "rotary_emb", "modeling_llama.py apply_rotary_pos_emb", {}),
    # sinusoids computed in forward
    "rt_detr": ("sinusoidal", "model", "encoder.aifi.0.position_embedding",
                "modeling_rt_detr.py RTDetrSinePositionEmbedding: 2-D sin/cos of the grid, added to q/k", {}),
    "d_fine": ("sinusoidal", "model", "encoder.aifi.0.position_embedding",
               "modeling_d_fine.py DFineSinePositionEmbedding: 2-D sin/cos of the grid, added to q/k", {}),
    # issue 36's "no positions" list (the rest of it)
    "dpt": ("learned", "model", "embeddings.position_embeddings",
            "modeling_dpt.py:128 nn.Parameter(zeros(1, num_patches + 1, hidden)); :176 embeddings + "
            "position_embeddings (resized by _resize_pos_embed)", {}),
    "sam_vision_model": ("learned", "model", "vision_encoder.pos_embed",
                         "modeling_sam.py:1031 self.pos_embed = nn.Parameter(...); :1066 hidden_states + "
                         "self.pos_embed", {}),
    "vivit": ("learned", "model", "embeddings.position_embeddings",
              "modeling_vivit.py:81 nn.Parameter(zeros(1, num_patches + 1, hidden)), added to the tubelet "
              "embeddings", {}),
    "timesformer": ("learned", "model", "embeddings.position_embeddings",
                    "modeling_timesformer.py:86 nn.Parameter(zeros(1, num_patches + 1, embed_dim)) (and :89 "
                    "time_embeddings), added to the patch embeddings", {}),
    "audio-spectrogram-transformer": ("learned", "model", "embeddings.position_embeddings",
                                      "modeling_audio_spectrogram_transformer.py:78 nn.Parameter(zeros(1, "
                                      "num_patches + 2, hidden)); :96 embeddings + self.position_embeddings", {}),
    "swinv2": ("relative_bias", "model", "encoder.layers.0.blocks.0.attention.self.continuous_position_bias_mlp",
               "modeling_swinv2.py:418 continuous_position_bias_mlp(relative_coords_table) gathered by "
               "relative_position_index (:422) and added to the attention scores", {}),
    # issue 36's "wrong scheme" list (the rest of it)
    "data2vec-audio": ("convolutional", "model", "encoder.pos_conv_embed.layers.0.conv",
                       "modeling_data2vec_audio.py:377 position_embeddings = self.pos_conv_embed(hidden_states), "
                       "added to hidden_states", {}),
    "unispeech": ("convolutional", "model", "encoder.pos_conv_embed.conv",
                  "modeling_unispeech.py:467 position_embeddings = self.pos_conv_embed(hidden_states), added to "
                  "hidden_states", {}),
    "voxtral": ("fixed", "audio_config", "audio_tower.embed_positions.weight",
                "modeling_voxtral.py:268 nn.Embedding(max_source_positions, embed_dim); :269 requires_grad_(False); "
                ":316 embed_pos = self.embed_positions.weight, added to the features", {}),
    "audioflamingo3": ("fixed", "audio_config", "audio_tower.embed_positions.weight",
                       "modeling_audioflamingo3.py:334 nn.Embedding(max_source_positions, embed_dim); :335 "
                       "requires_grad_(False); :382 inputs_embeds + self.embed_positions.weight", {}),
    "audioflamingo3_encoder": ("fixed", "model", "embed_positions.weight",
                               "modeling_audioflamingo3.py:334-335, :382 (the encoder as its own model type)", {}),
    "mask2former": ("sinusoidal", "model", "transformer_module.position_embedder",
                    "modeling_mask2former.py:2074 Mask2FormerSinePositionEmbedding of the pixel decoder's "
                    "feature maps, added to keys", {}),
    "mask2former:queries": ("queries", "model", "transformer_module.queries_features.weight",
                            "modeling_mask2former.py:2077-2078 queries_embedder / queries_features = "
                            "nn.Embedding(num_queries, hidden_dim): the decoder's learned object queries", {}),
    "lightglue": ("rotary", "model", "positional_encoder",
                  "modeling_lightglue.py:92-95 projector(keypoints).repeat_interleave(2); cos/sin of it; "
                  "apply_rotary_pos_emb (:109) rotates q and k by keypoint coordinates",
                  {"num_hidden_layers": 2}),  # (one layer: :768-780 leave keypoint_confidences unset)
    # the DETR family: 2-D sine of the feature map, and learned object queries
    "detr": ("sinusoidal", "model", "position_embedding",
             "modeling_detr.py:1121 DetrSinePositionEmbedding(d_model // 2, normalize=True): 2-D sin/cos of the "
             "feature map, added to q and k", {}),
    "detr:queries": ("queries", "model", "query_position_embeddings.weight",
                     "modeling_detr.py:1126 nn.Embedding(num_queries, d_model); :1250 its weight repeated per "
                     "image; :1258 queries = torch.zeros_like(it): the decoder's states start as zeros and the "
                     "table is added to them in every layer (DETR paper, sec. 3.2: object queries)", {}),
    "conditional_detr": ("sinusoidal", "model", "position_embedding",
                         "modeling_conditional_detr.py ConditionalDetrSinePositionEmbedding of the feature map",
                         {}),
    "conditional_detr:queries": ("queries", "model", "query_position_embeddings.weight",
                                 "modeling_conditional_detr.py:1348 nn.Embedding(num_queries, d_model); :1278 "
                                 "ref_point_head(them): reference points whose sine embedding is the decoder's "
                                 "spatial query", {}),
    "deformable_detr": ("sinusoidal", "model", "position_embedding",
                        "modeling_deformable_detr.py DeformableDetrSinePositionEmbedding of each feature level", {}),
    "deformable_detr:queries": ("queries", "model", "query_position_embeddings.weight",
                                "modeling_deformable_detr.py:1201 nn.Embedding(num_queries, 2 * d_model); :1481 "
                                "split into the queries' position and their initial states (target)", {}),
    "dab-detr": ("sinusoidal", "model", "backbone.position_embedding",
                 "modeling_dab_detr.py DabDetrSinePositionEmbedding of the feature map", {}),
    "dab-detr:queries": ("queries", "model", "query_refpoint_embeddings.weight",
                         "modeling_dab_detr.py:1153 nn.Embedding(num_queries, query_dim): learned anchor boxes, "
                         "embedded by sinusoids of their coordinates in the decoder", {}),
    "table-transformer": ("sinusoidal", "model", "backbone.position_embedding",
                          "modeling_table_transformer.py:329 TableTransformerSinePositionEmbedding, :974 given to "
                          "the conv model, :257 computed of each feature map",
                          {}),
    "table-transformer:queries": ("queries", "model", "query_position_embeddings.weight",
                                  "modeling_table_transformer.py:979 nn.Embedding(num_queries, d_model); :1099 "
                                  "queries = torch.zeros_like(them)", {}),
    # the types whose evidence was a name only
    "sew-d": ("relative", "model", "encoder.encoder.layer.0.attention.self",
              "modeling_sew_d.py:984 rel_embeddings = nn.Embedding(pos_ebd_size, hidden); :801-803 in "
              "DisentangledSelfAttention: c2p_att = bmm(query, key_proj(rel_embeddings)) gathered by relative "
              "positions (DeBERTa's)", {}),
    "sew-d:conv": ("convolutional", "model", "encoder.pos_conv_embed.conv",
                   "modeling_sew_d.py SEWDEncoder: hidden_states + pos_conv_embed(hidden_states)", {}),
    "roformer": ("rotary", "model", "encoder.embed_positions.weight",
                 "modeling_roformer.py:50 RoFormerSinusoidalPositionalEmbedding(nn.Embedding), filled by "
                 "_init_weights (:630 init.copy_(module.weight, module.create_weight())); :221 "
                 "apply_rotary_position_embeddings rotates q and k by it", {}),
    # doubtful classifications, read again
    "longformer": ("learned", "model", "embeddings.position_embeddings.weight",
                   "modeling_longformer.py:398 nn.Embedding(max_position_embeddings, hidden, padding_idx); :406 "
                   "create_position_ids_from_input_ids (RoBERTa's padding offset); the sliding-window attention "
                   "(:739 _sliding_chunks_query_key_matmul) masks by distance, it places no positions", {}),
    "pegasus_x": ("sinusoidal", "model", "encoder.embed_positions",
                  "modeling_pegasus_x.py:103-121 PegasusXSinusoidalPositionalEmbedding: sin/cos of arange "
                  "computed in forward; :841-843 inputs_embeds + embed_pos (decoder :1040-1042 the same)", {}),
    "pegasus_x:global": ("queries", "model", "encoder.embed_global.weight",
                         "modeling_pegasus_x.py:750 embed_global = nn.Embedding(num_global_tokens, d); :869 "
                         "looked up by arange(num_global_tokens): learned global token states, not positions; "
                         "PegasusXGlobalLocalAttention (:272) attends in blocks, with no position term", {}),
    "fsmt": ("fixed", "model", "encoder.embed_positions.weight",
             "modeling_fsmt.py:1052 SinusoidalPositionalEmbedding(nn.Embedding); :222-224 _init_weights copies "
             "get_embedding (:1075, fairseq's sinusoids) into it; the forward looks it up by make_positions", {}),
    "kosmos-2.5": ("fixed", "text_config", "text_model.model.embed_positions.weights",
                   "modeling_kosmos2_5.py:607 self.weights = nn.Buffer(get_embedding(...)) (sinusoids); :928 "
                   "positions = self.embed_positions(...); :950 inputs_embeds + positions", {}),
    "whisper": ("fixed", "encoder", "encoder.embed_positions.weight",
                "modeling_whisper.py:574-575 nn.Embedding, requires_grad_(False); :530 _init_weights copies "
                "sinusoids into it; :623 inputs_embeds + embed_positions(all_positions)", {}),
    "whisper:decoder": ("learned", "decoder", "decoder.embed_positions.weight",
                        "modeling_whisper.py:675 WhisperPositionalEmbedding(max_target_positions, d_model) "
                        "(nn.Embedding, trained); :784 looked up by position ids", {}),
}  # fmt: skip

#: the model's own formula for a fixed table, called on the module that holds it (facts ``formula``)
FORMULA: dict[str, Any] = {
    "fsmt": lambda m, t: type(m).get_embedding(t.shape[0], t.shape[1], m.padding_idx),
    "kosmos-2.5": lambda m, t: type(m).get_embedding(t.shape[0], t.shape[1], m.padding_idx),
    "whisper": lambda m, t: importlib.import_module("transformers.models.whisper.modeling_whisper").sinusoids(*t.shape),
    "roformer": lambda m, t: m.create_weight(),
}

#: the mechanisms each component has, read in the modeling file (facts ``only``): nothing else places positions
ONLY: dict[str, list[str]] = {
    "longformer": ["learned"],
    "pegasus_x": ["queries", "sinusoidal"],
    "fsmt": ["fixed"],
    "whisper": ["fixed"],
    "whisper:decoder": ["learned"],
    "roformer": ["rotary"],
    "detr": ["queries", "sinusoidal"],
    "table-transformer": ["queries", "sinusoidal"],
    "kosmos-2.5": ["fixed"],
}

#: queries (facts ``set_permutes``): the tables whose rows are permuted together, and the output whose rows should
#: follow (a set: the decoder's outputs permute with its queries)
SETS: dict[str, tuple[list[str], str]] = {
    "detr:queries": (["query_position_embeddings.weight"], "last_hidden_state"),
    "table-transformer:queries": (["query_position_embeddings.weight"], "last_hidden_state"),
    "conditional_detr:queries": (["query_position_embeddings.weight"], "last_hidden_state"),
    "deformable_detr:queries": (["query_position_embeddings.weight"], "last_hidden_state"),
    "dab-detr:queries": (["query_refpoint_embeddings.weight"], "last_hidden_state"),
    "mask2former:queries": (["transformer_module.queries_features.weight", "transformer_module.queries_embedder.weight"],
                            "transformer_decoder_last_hidden_state"),
}

#: inputs a type's root takes that its signature does not tell (a video's frames, image pairs, text and image)
INPUTS: dict[str, Any] = {
    "vivit": lambda c, g: {"pixel_values": torch.randn(1, c.num_frames, 3, c.image_size, c.image_size, generator=g)},
    "timesformer": lambda c, g: {"pixel_values": torch.randn(1, c.num_frames, 3, c.image_size, c.image_size,
                                                              generator=g)},
    "audio-spectrogram-transformer": lambda c, g: {"input_values": torch.randn(1, c.max_length, c.num_mel_bins,
                                                                               generator=g)},
    "lightglue": lambda c, g: {"pixel_values": torch.zeros(1, 2, 3, 64, 64)},  # blank: keypoints everywhere
}  # fmt: skip

#: types whose text model places no positions (read in their modeling files): whether their outputs permute with
#: their inputs (a recurrence or a causal mask orders tokens without a positional encoding)
NONE = {
    "mamba": "modeling_mamba.py MambaModel: embeddings -> MambaBlocks (a causal conv1d and a selective scan); "
    "no position ids, no table",
    "falcon_mamba": "modeling_falcon_mamba.py FalconMambaModel: embeddings -> FalconMambaBlocks (a causal conv1d "
    "and a selective scan); no position ids, no table",
}

LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "encoder_layers", "decoder_layers", "depth",
              "pred_num_hidden_layers", "num_pooler_layers")  # fmt: skip


def tiny_config(mt: str, overrides: dict[str, Any]) -> Any:
    cfg = AutoConfig.for_model(mt)
    subs = [cfg] + [v for v in vars(cfg).values() if isinstance(v, transformers.PretrainedConfig)]
    for sub in subs:
        for k in LAYER_KEYS:
            if isinstance(getattr(sub, k, None), int) and getattr(sub, k) > 1 and k in vars(sub):
                setattr(sub, k, 1)
        if "layer_types" in vars(sub) and isinstance(sub.layer_types, list):
            sub.layer_types = sub.layer_types[:1]
        if isinstance(getattr(sub, "vocab_size", None), int) and sub.vocab_size > 1024 and all(
            not isinstance(v, int) or v < 1024 for k, v in vars(sub).items() if k.endswith(("_id", "_index"))
        ):
            sub.vocab_size = 1024
    for k, v in overrides.items():
        setattr(cfg, k, v)
    cfg._attn_implementation = "eager"
    return cfg


def build(mt: str, overrides: dict[str, Any]) -> torch.nn.Module:
    cfg = tiny_config(mt, overrides)
    torch.manual_seed(0)
    try:
        model = AutoModel.from_config(cfg)
    except (ValueError, KeyError, TypeError):
        mod = importlib.import_module(type(cfg).__module__.replace("configuration_", "modeling_"))
        cls = next(c for c in vars(mod).values() if isinstance(c, type) and issubclass(c, torch.nn.Module)
                   and getattr(c, "config_class", None) is type(cfg) and c.__name__.endswith("Model")
                   and "PreTrained" not in c.__name__)  # fmt: skip
        model = cls(cfg)
    return model.eval()


def inputs(model: torch.nn.Module) -> dict[str, Any]:
    cfg = model.config
    params = inspect.signature(model.forward).parameters
    g = torch.Generator().manual_seed(1)
    if "input_ids" in params and "input_features" not in params and "pixel_values" not in params:
        kw = {"input_ids": torch.arange(3, 11)[None]}
        if "decoder_input_ids" in params:
            kw["decoder_input_ids"] = torch.arange(3, 9)[None]
        return kw
    if "input_values" in params:
        return {"input_values": torch.randn(1, 16000, generator=g)}
    if "input_features" in params and type(model).__name__.startswith("Wav2Vec2Bert"):
        width = cfg.feature_projection_input_dim  # modeling_wav2vec2_bert.py: LayerNorm(feature_projection_input_dim)
        return {"input_features": torch.randn(1, 50, width, generator=g)}  # (batch, frames, features)
    if "input_features" in params:
        sub = getattr(cfg, "audio_config", None) or getattr(cfg, "encoder_config", None) or cfg
        mel = getattr(sub, "num_mel_bins", None) or getattr(sub, "input_dim", None) or 80
        frames = 2 * getattr(sub, "max_source_positions", 50)
        kw = {"input_features": torch.randn(1, mel, frames, generator=g)}
        if "input_features_mask" in params:  # modeling_audioflamingo3.py:356: the frames' mask, needed
            kw["input_features_mask"] = torch.ones(1, frames, dtype=torch.long)
        if "decoder_input_ids" in params:
            kw["decoder_input_ids"] = torch.arange(3, 9)[None]
        return kw
    if "pixel_values_videos" in params:
        c = cfg.in_chans if hasattr(cfg, "in_chans") else 3
        return {"pixel_values_videos": torch.randn(1, cfg.frames_per_clip, c, cfg.crop_size, cfg.crop_size,
                                                    generator=g)}  # fmt: skip
    if "pixel_values" in params:
        size = getattr(cfg, "image_size", 224)
        size = size if isinstance(size, int) else 224
        return {"pixel_values": torch.randn(1, getattr(cfg, "num_channels", 3), size, size, generator=g)}
    if "hidden_states" in params:  # an encoder fed features (Granite Speech's CTC encoder: input_dim wide)
        lin = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
        return {"hidden_states": torch.randn(1, 12, lin.in_features, generator=g)}
    raise RuntimeError(f"no input for {type(model).__name__}")


def first_tensor(out: Any) -> torch.Tensor:
    if torch.is_tensor(out):
        return out
    if isinstance(out, dict) or hasattr(out, "values"):
        return first_tensor(next(v for v in out.values() if v is not None and not isinstance(v, (int, bool))))
    return first_tensor(next(v for v in out if v is not None))


def component_root(model: torch.nn.Module, component: str) -> torch.nn.Module:
    if component == "model":
        return model
    if component in ("encoder", "decoder"):
        return getattr(model, f"get_{component}")()
    sub = getattr(model.config, component)
    return next(m for m in model.modules() if getattr(m, "config", None) is sub)


def fact(key: str) -> dict[str, Any]:
    mech, component, path, code, overrides = SAMPLE[key]
    mt = key.split(":")[0]
    model = build(mt, overrides)
    root = component_root(model, component)
    prefix = next(n for n, m in model.named_modules() if m is root)
    if mt in INPUTS:
        kw = INPUTS[mt](root.config, torch.Generator().manual_seed(1))
    elif mt == "grounding-dino":  # text and image (modeling_grounding_dino.py GroundingDinoModel.forward)
        kw = {"pixel_values": torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(1)),
              "input_ids": torch.arange(3, 11)[None]}  # fmt: skip
    else:
        kw = inputs(root) if root is not model else inputs(model)
    rec: dict[str, Any] = {"mechanism": mech, "component": component, "path": path, "code": code,
                           "model_class": type(model).__name__}  # fmt: skip
    full = f"{prefix}.{path}" if prefix and not path.startswith(prefix + ".") else path
    rec["path_in_model"] = full
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    modules = dict(model.named_modules())
    fns = {}
    mod = sys.modules[type(root).__module__]
    for n, f in vars(mod).items():
        if inspect.isfunction(f) and ("rotary" in n or "rotate" in n) and f.__module__ == mod.__name__:
            fns[n] = f
    calls = {n: 0 for n in fns}

    def wrap(n: str, f: Any) -> Any:
        def inner(*a: Any, **k: Any) -> Any:
            calls[n] += 1
            return f(*a, **k)

        return inner

    statics = {}  # rotary staticmethods of the module's classes (RoFormer's apply_rotary_position_embeddings)
    for cn, c in vars(mod).items():
        if isinstance(c, type) and c.__module__ == mod.__name__:
            for n, f in vars(c).items():
                if isinstance(f, staticmethod) and ("rotary" in n or "rotate" in n):
                    statics[(c, n)] = f
                    calls[f"{cn}.{n}"] = 0
    for n, f in fns.items():
        setattr(mod, n, wrap(n, f))
    for (c, n), f in statics.items():
        setattr(c, n, staticmethod(wrap(f"{c.__name__}.{n}", f.__func__)))
    try:
        with torch.no_grad():
            out0 = root(**kw)
            base = first_tensor(out0).clone()
    finally:
        for n, f in fns.items():
            setattr(mod, n, f)
        for (c, n), f in statics.items():
            setattr(c, n, f)
    if any(calls.values()):
        rec["calls"] = {n: c for n, c in calls.items() if c}
    rec["exists"] = full in params or full in buffers or full in modules
    if full in params:
        t = params[full]
        rec["holder"] = "parameter" if t.requires_grad else "frozen parameter"
    elif full in buffers:
        t = buffers[full]
        rec["holder"] = "buffer"
    elif full in modules:
        t = None
        m = modules[full]
        rec["holder"] = type(m).__name__
        if isinstance(m, torch.nn.Conv1d):
            rec["conv"] = {"kernel": list(m.kernel_size), "groups": m.groups}
    else:
        return rec
    if key in FORMULA and t is not None:  # the model's own formula for the table, against its values
        owner = modules[full.rsplit(".", 1)[0]]
        want = FORMULA[key](owner, t).to(t.dtype)
        rec["formula"] = bool(want.shape == t.shape and torch.allclose(t.detach(), want, atol=1e-6))
    if key in ONLY:
        rec["only"] = ONLY[key]
    if key in SETS:
        tables, field = SETS[key]
        perm = torch.randperm(params[f"{prefix}.{tables[0]}" if prefix else tables[0]].shape[0],
                              generator=torch.Generator().manual_seed(3))  # fmt: skip
        keep = {n: params[n].detach().clone() for n in tables}
        with torch.no_grad():
            a = getattr(out0, field)
            for n in tables:
                params[n].copy_(keep[n][perm])
            try:
                b = getattr(root(**kw), field)
            finally:
                for n in tables:
                    params[n].copy_(keep[n])
        axis = next(i for i, n in enumerate(a.shape) if n == len(perm))  # the queries' axis
        rec["set_permutes"] = bool(torch.allclose(a.index_select(axis, perm), b, rtol=1e-4, atol=1e-5))
    with torch.no_grad():
        if t is not None:
            keep = t.detach().clone()
            t.add_(torch.randn(t.shape, generator=torch.Generator().manual_seed(2)).to(t.dtype) + 1.0)
            try:
                after = first_tensor(root(**kw))
            finally:
                t.copy_(keep)
        else:

            def noise(x: torch.Tensor) -> torch.Tensor:  # not a constant: a LayerNorm would remove it
                return x + torch.randn(x.shape, generator=torch.Generator().manual_seed(2)).to(x.dtype)

            def bump(m: Any, a: Any, o: Any) -> Any:
                if torch.is_tensor(o):
                    return noise(o)
                if isinstance(o, (tuple, list)) and o and torch.is_tensor(o[0]):
                    return type(o)([noise(o[0]), *o[1:]])
                return o

            h = modules[full].register_forward_hook(bump)
            try:
                after = first_tensor(root(**kw))
            finally:
                h.remove()
    rec["used"] = _differ(after, base)
    if not rec["used"]:  # any of the outputs (a detector's first one is its reference points, made before it)
        rec["used"] = _any_changes(root, kw, t, modules.get(full))
    if key in SETS:  # the queries' own output (Mask2Former's first output is the pixel encoder's)
        rec["used"] = rec["used"] or bool(rec.get("set_permutes") is not None and _changes(root, kw, t, SETS[key][1]))
    return rec


def _tensors(out: Any) -> list[torch.Tensor]:
    values = out.values() if hasattr(out, "values") else out if isinstance(out, (list, tuple)) else [out]
    found = []
    for v in values:
        if torch.is_tensor(v):
            if v.is_floating_point():
                found.append(v.detach().clone())
        elif isinstance(v, (list, tuple)) or hasattr(v, "values"):
            found += _tensors(v)
    return found


def _any_changes(root: torch.nn.Module, kw: dict[str, Any], t: torch.Tensor | None, m: Any) -> bool:
    """Whether any floating output changes when ``t`` (or the output of module ``m``) is perturbed."""
    with torch.no_grad():
        a = _tensors(root(**kw))
        if t is not None:
            keep = t.detach().clone()
            t.add_(torch.randn(t.shape, generator=torch.Generator().manual_seed(2)).to(t.dtype) + 1.0)
            try:
                b = _tensors(root(**kw))
            finally:
                t.copy_(keep)
        else:

            def bump(mod: Any, args: Any, o: Any) -> Any:
                g = torch.Generator().manual_seed(2)
                if torch.is_tensor(o):
                    return o + torch.randn(o.shape, generator=g).to(o.dtype)
                if isinstance(o, (tuple, list)) and o and torch.is_tensor(o[0]):
                    return type(o)([o[0] + torch.randn(o[0].shape, generator=g).to(o[0].dtype), *o[1:]])
                return o

            h = m.register_forward_hook(bump)
            try:
                b = _tensors(root(**kw))
            finally:
                h.remove()
    return any(_differ(x, y) for x, y in zip(a, b))


def _differ(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Relative to the output's own size (a tiny SAM's image embeddings are ~1e-19: an absolute tolerance would
    call any change none)."""
    if a.shape != b.shape:
        return True
    scale = float(a.abs().max())
    return bool(float((a - b).abs().max()) > 1e-4 * scale) if scale > 0 else bool((a != b).any())


def _changes(root: torch.nn.Module, kw: dict[str, Any], t: torch.Tensor, field: str) -> bool:
    """Whether ``field`` of the output changes when ``t`` is perturbed."""
    with torch.no_grad():
        a = getattr(root(**kw), field).clone()
        keep = t.detach().clone()
        t.add_(torch.randn(t.shape, generator=torch.Generator().manual_seed(2)).to(t.dtype))
        try:
            b = getattr(root(**kw), field)
        finally:
            t.copy_(keep)
    return not torch.allclose(a, b, atol=1e-6)


def none_fact(mt: str) -> dict[str, Any]:
    model = build(mt, {})
    ids = torch.arange(3, 11)[None]
    perm = torch.tensor([3, 0, 6, 1, 7, 2, 5, 4])
    with torch.no_grad():
        a = first_tensor(model(input_ids=ids)).float()
        b = first_tensor(model(input_ids=ids[:, perm])).float()
    return {"mechanism": "none", "component": "model", "code": NONE[mt], "model_class": type(model).__name__,
            "permutes": bool(torch.allclose(a[:, perm], b, rtol=1e-4, atol=1e-5))}  # fmt: skip


def main(argv: list[str]) -> int:
    types = argv or [*SAMPLE, *NONE]
    old = json.loads(OUT.read_text()) if OUT.exists() and argv else {}
    facts = {k: v for k, v in old.get("facts", {}).items() if k in SAMPLE or k in NONE}
    types = [k for t in types for k in [*SAMPLE, *NONE] if k == t or k.startswith(t + ":")] if argv else types
    for mt in types:
        try:
            facts[mt] = none_fact(mt) if mt in NONE else fact(mt)
        except Exception as exc:
            facts[mt] = {"mechanism": SAMPLE[mt][0] if mt in SAMPLE else "none",
                         "error": f"{type(exc).__name__}: {exc}"[:200]}  # fmt: skip

        print(mt, facts[mt], file=sys.stderr, flush=True)
    OUT.write_text(json.dumps({
        "transformers_version": transformers.__version__, "torch_version": torch.__version__.split("+")[0],
        "generator": "tools/golden/inventory_mechanism_facts.py", "facts": facts}, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
