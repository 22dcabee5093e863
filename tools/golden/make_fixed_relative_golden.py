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


def towers(types: list[str]) -> None:
    """``--towers TYPE ...``: a tiny folder per wrapper whose tower keeps a fixed table (posenc's
    ``records.tower_family``: Qwen2-Audio's ``audio_tower``), ``tests/data/models/towers/<type>/``: the wrapper's
    own config class at its defaults with the tower's sub-config tiny (width 16, 10 positions, one layer), and in
    ``model.safetensors`` the tower's position table under the name the wrapper's own model (built on meta from
    that config) gives it, filled as the released checkpoints hold it (the tower's own class built alone from the
    sub-config; a stored table set to ``modeling_whisper.sinusoids``, a non-persistent buffer left out)."""
    from safetensors.torch import save_file

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tools" / "inventory"))
    import learned_rows
    from posenc_cli.models.data import model_type_record
    from posenc_cli.models.records import tower_family

    for mt in types:
        fam = tower_family(mt)
        entry = model_type_record(mt)
        assert fam is not None and entry is not None, mt
        cfg = transformers.AutoConfig.for_model(mt)
        out = MODELS / "towers" / mt
        tensors: dict[str, torch.Tensor] = {}
        for lt, layer in fam.layers.items():
            comp = next(k for keys in layer.keys.values() for k in keys).rsplit(".", 1)[0]
            node = cfg
            for part in comp.split("."):
                node = getattr(node, part)
            for keys, value in ((layer.keys["dim"], 16), (layer.keys["length"], 10)):
                for key in keys:
                    if hasattr(node, key.rsplit(".", 1)[1]):
                        setattr(node, key.rsplit(".", 1)[1], value)
            for k, v in list(vars(node).items()):
                if "layers" in k and type(v) is int:
                    setattr(node, k, 1)
                elif ("heads" in k) and type(v) is int:
                    setattr(node, k, 2)
                elif ("ffn" in k or "intermediate" in k or "output_dim" in k) and type(v) is int:
                    setattr(node, k, 16)
            with torch.device("meta"):
                whole = model_class(entry)(learned_rows.shrunk(cfg))
            names = dict(whole.state_dict())
            for name in layer.stored:
                assert name in names and list(names[name].shape) == [10, 16], (mt, name, names.get(name))
                tower = transformers.AutoModel._model_mapping[type(node)](node)
                table = mod("whisper").sinusoids(10, 16)
                assert list(dict(tower.state_dict())[name.removeprefix(layer.prefix)].shape) == [10, 16]
                tensors[name] = table.contiguous()
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        cfg.save_pretrained(out)
        if tensors:
            save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
        print(f"{mt}: {out} ({', '.join(tensors) or 'no stored table'})")


FORMULAS = ROOT / "tests" / "data" / "golden" / "fixed_formulas.npz"


def formulas() -> None:
    """``--formulas``: ``tests/data/golden/fixed_formulas.npz``, the rows each type's own position module adds to
    12 tokens (ids 5, none padding) at width 16, for the records that read them by a formula copied from another
    type's: ``nllb_moe`` (``NllbMoeSinusoidalPositionalEmbedding(12, 16, padding_idx=1)``), ``kosmos2_text``
    (``Kosmos2TextSinusoidalPositionalEmbedding(12, 16, padding_idx=1)``), ``qwen3_asr`` (the buffer of
    ``modeling_qwen3_asr.SinusoidsPositionEmbedding(13, 16)``, the encoder's default 13 rows), ``xglm``
    (``XGLMSinusoidalPositionalEmbedding(12, 16, padding_idx=1)`` at position_ids 0..11, as XGLMModel passes them)."""
    ids = torch.full((1, 12), 5, dtype=torch.long)
    arrays = {
        "nllb_moe": mod("nllb_moe").NllbMoeSinusoidalPositionalEmbedding(12, 16, 1)(ids)[0],
        "kosmos2_text": importlib.import_module("transformers.models.kosmos2.modeling_kosmos2")
        .Kosmos2TextSinusoidalPositionalEmbedding(12, 16, 1)(input_ids=ids)[0],
        "qwen3_asr": mod("qwen3_asr").SinusoidsPositionEmbedding(13, 16).positional_embedding,
        "xglm": mod("xglm").XGLMSinusoidalPositionalEmbedding(12, 16, 1)(torch.arange(12)[None])[0],
    }
    np.savez_compressed(FORMULAS, **{k: v.detach().numpy().astype(np.float32) for k, v in arrays.items()})
    print(f"wrote {FORMULAS}: {', '.join(arrays)}")


def model_class(entry: dict) -> type:
    name = entry["model_class"]
    if hasattr(transformers, name):
        return getattr(transformers, name)
    return getattr(importlib.import_module("transformers." + entry["modeling_module"]), name)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--towers"]:
        towers(sys.argv[2:])
    elif sys.argv[1:2] == ["--formulas"]:
        formulas()
    else:
        main()
