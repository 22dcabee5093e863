"""Reference tables of the non-rotary schemes, from each model's own code (run by make_inventory.py).

What the model adds (or biases) for tokens ``0..N-1``, read from the module the model calls, at its default
config and a few published shapes:

* ALiBi: Bloom ``build_alibi_tensor`` (float32); MPT ``build_mpt_alibi_tensor(n_heads, max_seq_len)`` as
  ``MptModel`` calls it; Falcon (``alibi: true``): the bias ``FalconModel.forward`` folds into the attention mask,
  ``build_alibi_tensor(...) / sqrt(hidden_size // num_attention_heads)``, captured by a hook on the first block of a
  one-layer model (Falcon-RW-1B's 32 heads x 64) and, for the default 71 heads, the same two lines of its code.
  Stored: ``bias`` (heads x positions) at sparse key positions, and ``slopes`` = the bias at key position 1.
* Sinusoids with offsets: M2M100/NLLB, Speech2Text (``*SinusoidalPositionalEmbedding.forward`` on ``input_ids``
  without padding: rows from ``padding_idx + 1``), Marian/Pegasus (``forward`` of the input shape: rows from 0),
  Whisper's encoder (``sinusoids``, added as ``embed_positions(arange)``).
* Learned with offsets: OPT (``OPTLearnedPositionalEmbedding.forward(attention_mask)``: rows from 2), BART/mBART
  (``forward(input_ids)``: rows from 2), RoBERTa (``RobertaEmbeddings``: rows from ``pad_token_id + 1``), Whisper's
  decoder (rows from 0): a small seeded weight matrix, and the rows the module returns for tokens ``0..N-1``.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import torch
from transformers import AutoConfig

ROWS = (0, 1, 2, 7, 100, 1023, 4095, 32767, 131071)


def mod(name: str) -> Any:
    return importlib.import_module(f"transformers.models.{name}.modeling_{name}")


def sparse(n: int) -> list[int]:
    return sorted({r for r in ROWS if r < n} | {n - 1})


def tables(store: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    put = store.put
    torch.manual_seed(0)

    # ----- ALiBi
    for heads in (8, 12, 32, 71, 112):
        n = 131072
        alibi = mod("bloom").build_alibi_tensor(torch.ones(1, n, dtype=torch.long), heads, torch.float32)
        a = alibi.reshape(heads, n)
        cols = sparse(n)
        out[f"bloom:heads={heads}"] = {
            "model_type": "bloom", "code": "modeling_bloom.build_alibi_tensor(ones(1, n), heads, float32)",
            "heads": heads, "positions": cols, "bias": put(a[:, cols].numpy()), "slopes": put(a[:, 1].numpy()),
        }  # fmt: skip
    for heads, n in ((16, 2048), (32, 2048), (12, 1024), (48, 8192)):
        a = mod("mpt").build_mpt_alibi_tensor(heads, n).reshape(heads, n)
        cols = sparse(n)
        out[f"mpt:heads={heads},max_seq_len={n}"] = {
            "model_type": "mpt", "code": "modeling_mpt.build_mpt_alibi_tensor(n_heads, max_seq_len)",
            "heads": heads, "max_seq_len": n, "positions": cols, "bias": put(a[:, cols].numpy()),
            "slopes": put((a[:, n - 1] - a[:, n - 2]).numpy()),
        }  # fmt: skip
    fal = mod("falcon")
    for heads, hidden in ((71, 4544), (32, 2048)):
        n = 131072
        alibi = fal.build_alibi_tensor(torch.ones(1, n, dtype=torch.long), heads, torch.float32)
        bias = (alibi.reshape(1, heads, 1, n) / math.sqrt(hidden // heads)).reshape(heads, n)
        cols = sparse(n)
        out[f"falcon:heads={heads},hidden_size={hidden}"] = {
            "model_type": "falcon", "heads": heads, "head_dim": hidden // heads,
            "code": "modeling_falcon.build_alibi_tensor(mask, heads, float32) / math.sqrt(hidden_size // heads) "
            "(FalconModel.forward, folded into the attention mask)",
            "positions": cols, "bias": put(bias[:, cols].numpy()), "slopes": put(bias[:, 1].numpy()),
        }  # fmt: skip
    out["falcon:hooked:heads=32,hidden_size=2048"] = falcon_hooked(put)

    # ----- sinusoids with offsets
    for mt, cls, key, pad in (
        ("m2m_100", "M2M100SinusoidalPositionalEmbedding", "max_position_embeddings", None),
        ("speech_to_text", "Speech2TextSinusoidalPositionalEmbedding", "max_source_positions", None),
        ("speech_to_text", "Speech2TextSinusoidalPositionalEmbedding", "max_target_positions", None),
    ):
        cfg = AutoConfig.for_model(mt)
        padding = cfg.pad_token_id if pad is None else pad
        num = getattr(cfg, key)
        emb = getattr(mod(mt), cls)(num, cfg.d_model, padding)
        ids = torch.full((1, num), padding + 7, dtype=torch.long)  # no padding token: positions from pad + 1
        rows = emb(ids)[0]
        keep = sparse(num)
        out[f"{mt}:{key}"] = {
            "model_type": mt, "code": f"modeling_{mt}.{cls}(config.{key}, d_model, pad_token_id).forward(input_ids)",
            "length": num, "dim": cfg.d_model, "pad_token_id": padding, "rows": keep,
            "added": put(rows[keep].numpy()), "buffer_rows": int(emb.weights.shape[0]),
            "buffer": put(emb.weights[sparse(emb.weights.shape[0])].numpy()),
            "buffer_rows_kept": sparse(emb.weights.shape[0]),
        }  # fmt: skip
    for mt, cls in (
        ("marian", "MarianSinusoidalPositionalEmbedding"),
        ("pegasus", "PegasusSinusoidalPositionalEmbedding"),
    ):
        cfg = AutoConfig.for_model(mt)
        num = cfg.max_position_embeddings
        emb = getattr(mod(mt), cls)(num, cfg.d_model)
        with torch.no_grad():
            emb.weight.copy_(emb.create_weight())
            rows = emb((1, num))
        rows = rows.reshape(num, -1)
        keep = sparse(num)
        out[f"{mt}:max_position_embeddings"] = {
            "model_type": mt, "code": f"modeling_{mt}.{cls}.forward((1, n)) with create_weight()",
            "length": num, "dim": cfg.d_model, "rows": keep, "added": put(rows[keep].numpy()),
        }  # fmt: skip
    cfg = AutoConfig.for_model("whisper")
    w = mod("whisper").sinusoids(cfg.max_source_positions, cfg.d_model)
    keep = sparse(cfg.max_source_positions)
    out["whisper:encoder"] = {
        "model_type": "whisper", "code": "modeling_whisper.sinusoids(max_source_positions, d_model)",
        "length": cfg.max_source_positions, "dim": cfg.d_model, "rows": keep, "added": put(w[keep].numpy()),
    }  # fmt: skip

    # ----- learned with offsets: a seeded small weight, and the rows the module adds
    n, d = 40, 8
    opt = mod("opt").OPTLearnedPositionalEmbedding(n, d)
    bart = mod("bart").BartLearnedPositionalEmbedding(n, d)
    mbart = mod("mbart").MBartLearnedPositionalEmbedding(n, d)
    whisper = mod("whisper").WhisperPositionalEmbedding(n, d)
    for m in (opt, bart, mbart, whisper):
        with torch.no_grad():
            m.weight.copy_(torch.randn(m.weight.shape))
    k = 30
    with torch.no_grad():
        cases = {
            "opt": (opt, opt(torch.ones(1, k, dtype=torch.long))[0], "OPTLearnedPositionalEmbedding(attention_mask)"),
            "bart": (bart, bart(torch.zeros(1, k, dtype=torch.long))[0], "BartLearnedPositionalEmbedding(input_ids)"),
            "mbart": (mbart, mbart(torch.zeros(1, k, dtype=torch.long))[0],
                      "MBartLearnedPositionalEmbedding(input_ids)"),
            "whisper:decoder": (whisper, whisper(torch.zeros(1, k, dtype=torch.long)),
                                "WhisperPositionalEmbedding(input_ids)"),
        }  # fmt: skip
        rcfg = AutoConfig.for_model(
            "roberta", vocab_size=20, hidden_size=d, max_position_embeddings=n, num_hidden_layers=1,
            num_attention_heads=2, intermediate_size=16, pad_token_id=1,
        )  # fmt: skip
        emb = mod("roberta").RobertaEmbeddings(rcfg).eval()
        emb.position_embeddings.weight.copy_(torch.randn(n, d))
        ids = torch.full((1, k), 5, dtype=torch.long)
        pos = emb.create_position_ids_from_input_ids(ids, rcfg.pad_token_id)
        cases["roberta"] = (emb.position_embeddings, emb.position_embeddings(pos)[0],
                            "RobertaEmbeddings: position_embeddings(create_position_ids_from_input_ids)")  # fmt: skip
    for name, (m, rows, code) in cases.items():
        out[f"{name}:learned"] = {
            "model_type": name.split(":")[0], "code": code, "tokens": k, "weight": put(m.weight.detach().numpy()),
            "added": put(rows.detach().reshape(k, -1).numpy()),
        }  # fmt: skip
    return out


def falcon_hooked(put: Any) -> dict[str, Any]:
    """Falcon-RW-1B's shape (32 heads x 64, alibi): the mask FalconModel hands its first block (SDPA path)."""
    cfg = AutoConfig.for_model(
        "falcon", alibi=True, hidden_size=2048, num_attention_heads=32, num_hidden_layers=1, vocab_size=16,
        new_decoder_architecture=False, multi_query=False, parallel_attn=False, bias=True,
    )  # fmt: skip
    model = mod("falcon").FalconModel(cfg).eval()
    seen: dict[str, Any] = {}

    def grab(module: Any, args: Any, kwargs: Any) -> None:
        seen["mask"] = kwargs["attention_mask"]

    model.h[0].register_forward_pre_hook(grab, with_kwargs=True)
    n = 64
    with torch.no_grad():
        model(torch.zeros(1, n, dtype=torch.long))
    last = seen["mask"][0][:, n - 1, :]  # the last query sees every key: the bias row itself
    return {
        "model_type": "falcon", "heads": 32, "head_dim": 64,
        "code": "FalconModel(alibi=True, hidden_size=2048, num_attention_heads=32, 1 layer): attention_mask of "
        "block 0 (the last query's row)",
        "positions": list(range(n)), "bias": put(last.numpy()), "slopes": put(last[:, 1].numpy()),
    }  # fmt: skip
