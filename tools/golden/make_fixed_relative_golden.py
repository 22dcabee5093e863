"""Golden arrays for fixed tables kept in weights and T5-family relative bias (issue 36, parts 3 and 4).

Runs once in the side environment (torch + transformers 5.24), never in posenc's tests::

    /work/side/venv/bin/python tools/golden/make_fixed_relative_golden.py

What it writes, each from the model's own transformers code:

* ``tests/data/golden/fixed_relative.npz``:
  ``ctrl_pos_encoding``: ``modeling_ctrl.positional_encoding(256, 32, torch.float)`` (CTRLModel's buffer);
  ``vit_mae_encoder`` / ``vit_mae_decoder``: the tiny ViTMAEForPreTraining's ``position_embeddings`` and
  ``decoder_pos_embed`` after ``from_pretrained``, filled by ``ViTMAEEmbeddings.initialize_weights`` and
  ``ViTMAEDecoder.initialize_weights`` (``build_2d_sinusoidal_position_embedding`` with its h/w halves rotated;
  a fresh model of transformers 5.24 holds zeros there, see below);
  ``marian_create_weight``: ``MarianSinusoidalPositionalEmbedding(20, 16).create_weight()`` (Marian's and
  Pegasus's frozen ``embed_positions.weight``);
  ``omni_audio``: ``modeling_qwen2_5_omni.SinusoidsPositionEmbedding(64, 16)``'s buffer (an audio encoder's);
  ``whisper_sinusoids``: ``modeling_whisper.sinusoids(10, 16)`` (what the tiny Qwen2-Audio encoder stores);
  ``t5_encoder`` / ``t5_decoder``: ``T5Attention.compute_bias(24, 24)`` of the tiny T5's block 0 (heads x N x N);
  ``umt5_encoder_<i>`` / ``umt5_decoder_<i>``: ``UMT5Attention.compute_bias(24, 24)`` of every block.
* ``tests/data/golden/positions_hf.json``'s ``class_defaults`` (the config class's value of every key the records
  read, :func:`make_hf_positions_golden.class_defaults`), refreshed for the families added with these records; the
  rest of that file is left as it is.
* ``tests/data/models/tiny_{vit_mae,qwen2_audio_encoder,t5,umt5}/``: the tiny random models those came from
  (``save_pretrained``; the Qwen2-Audio encoder's ``embed_positions`` set to Whisper's ``sinusoids``, as the
  released checkpoints, converted from Whisper's encoder, hold it: transformers' Qwen2AudioEncoder leaves it
  to the checkpoint).
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch
import transformers

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden" / "fixed_relative.npz"
MODELS = ROOT / "tests" / "data" / "models"
N = 24


def mod(name: str):
    return importlib.import_module(f"transformers.models.{name}.modeling_{name}")


def save(model, name: str) -> Path:
    out = MODELS / name
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out)
    for extra in out.glob("generation_config.json"):
        extra.unlink()
    return out


def main() -> None:
    torch.manual_seed(0)
    arrays: dict[str, np.ndarray] = {}
    arrays["ctrl_pos_encoding"] = mod("ctrl").positional_encoding(256, 32, torch.float).numpy()

    mae = transformers.ViTMAEConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                                    image_size=32, patch_size=8, num_channels=3, decoder_hidden_size=8,
                                    decoder_num_hidden_layers=1, decoder_num_attention_heads=2,
                                    decoder_intermediate_size=8)  # fmt: skip
    model = transformers.ViTMAEForPreTraining(mae)
    # transformers 5.24 leaves both tables zero in a fresh model: ViTMAEEmbeddings.initialize_weights returns early
    # because post_init marked the patch projection initialised first, and _init_weights zeroes decoder_pos_embed
    # after ViTMAEDecoder.__init__ filled it; a pretrained checkpoint holds the sin-cos tables, so fill them here
    # with the modules' own initialize_weights
    assert float(model.vit.embeddings.position_embeddings.abs().max()) == 0.0
    model.vit.embeddings.patch_embeddings.projection._is_hf_initialized = False
    with torch.no_grad():
        model.vit.embeddings.initialize_weights()
        model.decoder.initialize_weights(model.vit.embeddings.patch_embeddings.num_patches)
    path = save(model, "tiny_vit_mae")
    m = transformers.ViTMAEForPreTraining.from_pretrained(path)
    arrays["vit_mae_encoder"] = m.vit.embeddings.position_embeddings.detach()[0].numpy()
    arrays["vit_mae_decoder"] = m.decoder.decoder_pos_embed.detach()[0].numpy()

    omni = mod("qwen2_5_omni").SinusoidsPositionEmbedding(64, 16)
    arrays["omni_audio"] = omni.positional_embedding.numpy()
    whisper = mod("whisper").sinusoids(10, 16)
    arrays["whisper_sinusoids"] = whisper.numpy()
    qa = transformers.Qwen2AudioEncoderConfig(d_model=16, encoder_layers=1, encoder_attention_heads=2,
                                              encoder_ffn_dim=16, num_mel_bins=4, max_source_positions=10)  # fmt: skip
    enc = mod("qwen2_audio").Qwen2AudioEncoder(qa)
    with torch.no_grad():
        enc.embed_positions.weight.copy_(whisper)
    save(enc, "tiny_qwen2_audio_encoder")

    t5 = transformers.T5Config(d_model=16, d_kv=8, d_ff=16, num_layers=1, num_decoder_layers=1, num_heads=2,
                               relative_attention_num_buckets=8, relative_attention_max_distance=20, vocab_size=32,
                               decoder_start_token_id=0)  # fmt: skip
    model = transformers.T5Model(t5)
    with torch.no_grad():  # spread the values so that a wrong bucket shows
        for name, p in model.named_parameters():
            if "relative_attention_bias" in name:
                p.copy_(torch.randn_like(p))
    path = save(model, "tiny_t5")
    m = transformers.T5Model.from_pretrained(path)
    with torch.no_grad():
        arrays["t5_encoder"] = m.encoder.block[0].layer[0].SelfAttention.compute_bias(N, N)[0].numpy()
        arrays["t5_decoder"] = m.decoder.block[0].layer[0].SelfAttention.compute_bias(N, N)[0].numpy()

    umt5 = transformers.UMT5Config(d_model=16, d_kv=8, d_ff=16, num_layers=2, num_decoder_layers=2, num_heads=3,
                                   relative_attention_num_buckets=10, relative_attention_max_distance=16,
                                   vocab_size=32, decoder_start_token_id=0)  # fmt: skip
    model = transformers.UMT5Model(umt5)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "relative_attention_bias" in name:
                p.copy_(torch.randn_like(p))
    path = save(model, "tiny_umt5")
    m = transformers.UMT5Model.from_pretrained(path)
    with torch.no_grad():
        for side in ("encoder", "decoder"):
            for i, block in enumerate(getattr(m, side).block):
                arrays[f"umt5_{side}_{i}"] = block.layer[0].SelfAttention.compute_bias(N, N)[0].numpy()
    marian = mod("marian").MarianSinusoidalPositionalEmbedding(20, 16)
    arrays["marian_create_weight"] = marian.create_weight().numpy()
    np.savez_compressed(GOLDEN, **arrays)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_hf_positions_golden import class_defaults

    positions = ROOT / "tests" / "data" / "golden" / "positions_hf.json"
    data = json.loads(positions.read_text())
    data["class_defaults"] = class_defaults()
    positions.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size} bytes): {', '.join(arrays)}")


if __name__ == "__main__":
    main()
