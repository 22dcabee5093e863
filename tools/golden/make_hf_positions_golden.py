"""Golden position tables of non-rotary HF families from transformers' own code, for tests/test_hf_positions.py.

posenc never imports torch or transformers; this script does, so it runs once in a venv of its own::

    python3 -m venv /work/side-21b && /work/side-21b/bin/pip install torch==2.13.0
    /work/side-21b/bin/pip install transformers safetensors
    /work/side-21b/bin/python tools/golden/make_hf_positions_golden.py

What it writes:

* ``tests/data/golden/positions_hf.json``: for every ``tests/data/configs/positions/pos_*.json`` and attention type, the
  table the family's own code builds, as selected rows (first axis) and, for long rows, selected columns:
  T5/mT5/UMT5: ``T5Attention._relative_position_bucket`` / ``UMT5Attention._relative_position_bucket`` on
  ``j - i`` (``is_decoder`` false/true); Bloom: ``build_alibi_tensor``; Falcon: the additive mask FalconModel
  passes to its blocks (``build_alibi_tensor / sqrt(head_dim)``, captured by a hook on a one-layer model of
  the config's heads and head dim); MPT: ``build_mpt_alibi_tensor(n_heads, max_seq_len)`` as MptModel calls it;
  Marian, Pegasus: ``*SinusoidalPositionalEmbedding.create_weight``; M2M100/NLLB, Speech2Text: the module's
  ``weights`` buffer; Whisper encoder: ``sinusoids``; DeBERTa-v3: ``DebertaV2Encoder.get_rel_pos`` of a
  one-layer encoder (``relative_pos``) and the ``c2p_pos`` clamp ``DisentangledSelfAttention`` applies.
* ``tests/data/models/<name>/``: tiny random-weight models (``save_pretrained`` of shrunk configs: the same
  position module, hidden size 16) of the learned families, and in the golden file the table each model's own
  position module returns for positions ``0..n-1`` (GPT-2 ``wpe``, BERT/RoBERTa ``position_embeddings`` at the
  positions its embeddings compute, OPT ``embed_positions`` (offset 2), Whisper's decoder ``embed_positions``).
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
from transformers import AutoConfig

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
CONFIGS = ROOT / "tests" / "data" / "configs" / "positions"
GOLDEN = ROOT / "tests" / "data" / "golden"
MODELS = ROOT / "tests" / "data" / "models"


def mod(module: str):
    """transformers.models.<module>.modeling_<module> (imported: the package loads its submodules lazily)."""
    return importlib.import_module(f"transformers.models.{module}.modeling_{module}")


def config(name: str):
    data = json.loads((CONFIGS / f"{name}.json").read_text())
    data.pop("_model_id", None)
    mt = data.pop("model_type")
    return AutoConfig.for_model(mt, **data), data


def pick(n: int, k: int = 6) -> list[int]:
    """A few indices spread over ``range(n)``: the ends, the start and the middle."""
    return sorted({0, 1, 2, n // 3, n // 2, n - 2, n - 1} if n > k else set(range(n)))


def entry(table: torch.Tensor | np.ndarray, rows: list[int], cols: list[int] | None = None) -> dict:
    a = table.detach().float().numpy() if isinstance(table, torch.Tensor) else np.asarray(table)
    a = a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64)
    sub = a[rows] if cols is None else a[rows][:, cols]
    return {"shape": list(a.shape), "rows": rows, "cols": cols, "values": sub.tolist()}


def some_cols(d: int) -> list[int]:
    """Every 7th column plus both halves' edges: enough to pin layout, frequencies and padding."""
    return sorted(set(range(0, d, 7)) | {d // 2 - 1, d // 2, d // 2 + 1, d - 2, d - 1})


def t5(name: str, module: str) -> dict:
    cfg, _ = config(name)
    n = 300
    rel = torch.arange(n)[None, :] - torch.arange(n)[:, None]  # memory - context = j - i
    out = {}
    for lt, dec in (("encoder", False), ("decoder", True)):
        if module == "umt5":
            c = cfg.__class__(**{**cfg.to_dict(), "is_decoder": dec})
            att = mod("umt5").UMT5Attention(c, has_relative_attention_bias=True)
            buckets = att._relative_position_bucket(rel)
        else:
            cls = getattr(mod(module), f"{module.upper()}Attention")
            buckets = cls._relative_position_bucket(
                rel,
                bidirectional=not dec,
                num_buckets=cfg.relative_attention_num_buckets,
                max_distance=cfg.relative_attention_max_distance,
            )
        out[lt] = {"length": n, **entry(buckets, pick(n) + [150, 151], list(range(n)))}
    return out


def bloom(name: str) -> dict:
    cfg, _ = config(name)
    n = 64
    alibi = mod("bloom").build_alibi_tensor(torch.ones(1, n, dtype=torch.long), cfg.n_head, torch.float32)
    return {"default": {"length": n, **entry(alibi, pick(cfg.n_head))}}


def mpt(name: str) -> dict:
    cfg, _ = config(name)
    n = cfg.max_seq_len
    alibi = mod("mpt").build_mpt_alibi_tensor(cfg.n_heads, n)  # as MptModel.forward calls it
    cols = pick(n) + list(range(n - 40, n))
    return {"default": {"length": n, **entry(alibi[:, 0, :], pick(cfg.n_heads), sorted(set(cols)))}}


def falcon(name: str) -> dict:
    cfg, _ = config(name)
    heads, head_dim = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    n = 48
    # one layer, tiny vocabulary: the same heads and head dim, so the same slopes and sqrt(head_dim)
    small = cfg.__class__(**{**cfg.to_dict(), "num_hidden_layers": 1, "vocab_size": 32})
    small._attn_implementation = "eager"
    torch.manual_seed(0)
    model = mod("falcon").FalconModel(small).eval()
    seen = {}

    def grab(module, args, kwargs):
        seen["mask"] = kwargs["attention_mask"]

    model.h[0].register_forward_pre_hook(grab, with_kwargs=True)
    with torch.no_grad():
        model(torch.zeros(1, n, dtype=torch.long))
    mask = seen["mask"][0]  # heads x len x len, -inf (min) above the diagonal
    assert mask.shape == (heads, n, n), mask.shape
    last = mask[:, n - 1, :]  # the last query sees every key: the bias row itself
    return {"default": {"length": n, "head_dim": head_dim, **entry(last, pick(heads))}}


def marian_like(name: str, module: str, cls: str) -> dict:
    cfg, _ = config(name)
    emb = getattr(mod(module), cls)(cfg.max_position_embeddings, cfg.d_model)
    w = emb.create_weight()
    return {"default": {"length": w.shape[0], **entry(w, pick(w.shape[0]) + [100, 511], some_cols(w.shape[1]))}}


def fairseq_like(name: str, module: str, cls: str, lengths: dict[str, str]) -> dict:
    cfg, _ = config(name)
    out = {}
    for lt, key in lengths.items():
        emb = getattr(mod(module), cls)(getattr(cfg, key), cfg.d_model, cfg.pad_token_id)
        w = emb.weights
        out[lt] = {
            "length": w.shape[0],
            **entry(w, sorted(set(pick(w.shape[0]) + [3, 100, 1000 % w.shape[0]])), some_cols(w.shape[1])),
        }
    return out


def whisper_encoder(name: str) -> dict:
    cfg, _ = config(name)
    w = mod("whisper").sinusoids(cfg.max_source_positions, cfg.d_model)
    return {"encoder": {"length": w.shape[0], **entry(w, pick(w.shape[0]) + [1000], some_cols(w.shape[1]))}}


def deberta(name: str) -> dict:
    cfg, _ = config(name)
    n = 600
    small = cfg.__class__(**{**cfg.to_dict(), "num_hidden_layers": 1, "hidden_size": 12, "num_attention_heads": 1,
                             "intermediate_size": 8, "vocab_size": 16})  # fmt: skip
    enc = mod("deberta_v2").DebertaV2Encoder(small)
    rel = enc.get_rel_pos(torch.zeros(1, n, 12))[0]
    span = enc.position_buckets if enc.position_buckets > 0 else enc.max_relative_positions
    c2p = torch.clamp(rel + span, 0, span * 2 - 1)
    rows = pick(n) + [300]
    return {
        "default": {"length": n, **entry(rel, rows, list(range(n))), "c2p": entry(c2p, rows, list(range(n)))["values"]}
    }


# ----- tiny learned models -----------------------------------------------------------------------------------
def tiny(name: str, cfg, model_cls, module_of, positions: int) -> dict:
    torch.manual_seed(0)
    model = model_cls(cfg).eval()
    target = MODELS / name
    shutil.rmtree(target, ignore_errors=True)
    model.save_pretrained(target, safe_serialization=True)
    for extra in target.glob("generation_config.json"):
        extra.unlink()
    with torch.no_grad():
        table = module_of(model, positions)
    return {"default": {"length": positions, **entry(table, list(range(positions)), None)}}


def learned() -> dict:
    out = {}
    gpt2 = transformers.GPT2Config(n_embd=16, n_layer=1, n_head=2, n_positions=24, vocab_size=32, n_inner=16)
    out["tiny_gpt2"] = tiny("tiny_gpt2", gpt2, transformers.GPT2LMHeadModel,
                            lambda m, n: m.transformer.wpe(torch.arange(n)), 24)  # fmt: skip
    # the same model saved in shards (model.safetensors.index.json names the file holding wpe.weight)
    torch.manual_seed(0)
    sharded = MODELS / "tiny_gpt2_sharded"
    shutil.rmtree(sharded, ignore_errors=True)
    transformers.GPT2LMHeadModel(gpt2).save_pretrained(sharded, max_shard_size="4KB")
    for extra in sharded.glob("generation_config.json"):
        extra.unlink()
    bert = transformers.BertConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                                   max_position_embeddings=20, vocab_size=32, type_vocab_size=1)  # fmt: skip

    def bert_rows(m, n):
        emb = m.embeddings
        return emb.position_embeddings(emb.position_ids[:, :n])[0]

    out["tiny_bert"] = tiny("tiny_bert", bert, transformers.BertModel, bert_rows, 20)

    def bert_rows_of(prefix):
        def rows(m, n):
            emb = getattr(m, prefix).embeddings
            return emb.position_embeddings(emb.position_ids[:, :n])[0]

        return rows

    roberta = transformers.RobertaConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                         intermediate_size=16, max_position_embeddings=22, vocab_size=32,
                                         type_vocab_size=1, pad_token_id=1)  # fmt: skip

    def roberta_rows(m, n):
        ids = torch.full((1, n), 5)  # no padding: positions padding_idx + 1 ..
        pos = m.embeddings.create_position_ids_from_input_ids(ids, m.embeddings.padding_idx)
        return m.embeddings.position_embeddings(pos)[0]

    out["tiny_roberta"] = tiny("tiny_roberta", roberta, transformers.RobertaModel, roberta_rows, 20)
    opt = transformers.OPTConfig(hidden_size=16, num_hidden_layers=1, ffn_dim=16, num_attention_heads=2,
                                 max_position_embeddings=24, vocab_size=32, word_embed_proj_dim=16)  # fmt: skip

    def opt_rows(m, n):
        mask = torch.ones(1, n, dtype=torch.long)
        return m.model.decoder.embed_positions(mask, 0)[0]

    out["tiny_opt"] = tiny("tiny_opt", opt, transformers.OPTForCausalLM, opt_rows, 24)
    out["tiny_xlm_roberta"] = tiny("tiny_xlm_roberta", transformers.XLMRobertaConfig(**roberta.to_dict()),
                                   transformers.XLMRobertaModel, roberta_rows, 20)  # fmt: skip
    electra = transformers.ElectraConfig(embedding_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                         intermediate_size=16, max_position_embeddings=20, vocab_size=32,
                                         type_vocab_size=1)  # fmt: skip
    out["tiny_electra"] = tiny("tiny_electra", electra, transformers.ElectraForPreTraining, bert_rows_of("electra"), 20)
    distil = transformers.DistilBertConfig(dim=16, n_layers=1, n_heads=2, hidden_dim=16, max_position_embeddings=20,
                                           vocab_size=32)  # fmt: skip

    def distil_rows(m, n):
        return m.embeddings.position_embeddings(torch.arange(n)[None])[0]

    out["tiny_distilbert"] = tiny("tiny_distilbert", distil, transformers.DistilBertModel, distil_rows, 20)
    neo = transformers.GPTNeoConfig(hidden_size=16, num_layers=1, num_heads=2, attention_types=[[["global"], 1]],
                                    max_position_embeddings=22, vocab_size=32, intermediate_size=16)  # fmt: skip
    out["tiny_gpt_neo"] = tiny("tiny_gpt_neo", neo, transformers.GPTNeoForCausalLM,
                               lambda m, n: m.transformer.wpe(torch.arange(n)), 22)  # fmt: skip
    bigcode = transformers.GPTBigCodeConfig(n_embd=16, n_layer=1, n_head=2, n_positions=26, vocab_size=32, n_inner=16)
    out["tiny_gpt_bigcode"] = tiny("tiny_gpt_bigcode", bigcode, transformers.GPTBigCodeForCausalLM,
                                   lambda m, n: m.transformer.wpe(torch.arange(n)), 26)  # fmt: skip
    bart = transformers.BartConfig(d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                                   decoder_attention_heads=2, encoder_ffn_dim=16, decoder_ffn_dim=16,
                                   max_position_embeddings=20, vocab_size=32)  # fmt: skip
    got = tiny("tiny_bart", bart, transformers.BartForConditionalGeneration,
               lambda m, n: m.model.encoder.embed_positions(torch.zeros(1, n, dtype=torch.long))[0], 20)  # fmt: skip
    got["encoder"] = got.pop("default")
    m = transformers.BartForConditionalGeneration.from_pretrained(MODELS / "tiny_bart")
    with torch.no_grad():
        dec = m.model.decoder.embed_positions(torch.zeros(1, 20, dtype=torch.long))[0]
    got["decoder"] = {"length": 20, **entry(dec, list(range(20)))}
    out["tiny_bart"] = got
    whisper = transformers.WhisperConfig(d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                                         decoder_attention_heads=2, encoder_ffn_dim=16, decoder_ffn_dim=16,
                                         max_source_positions=10, max_target_positions=18, vocab_size=64,
                                         num_mel_bins=4, pad_token_id=1, bos_token_id=2, eos_token_id=3,
                                         decoder_start_token_id=4, begin_suppress_tokens=None)  # fmt: skip

    def whisper_rows(m, n):
        return m.model.decoder.embed_positions(torch.zeros(1, n, dtype=torch.long))  # weight[0:n]

    got = tiny("tiny_whisper", whisper, transformers.WhisperForConditionalGeneration, whisper_rows, 18)
    got["decoder"] = got.pop("default")
    with torch.no_grad():
        m = transformers.WhisperForConditionalGeneration.from_pretrained(MODELS / "tiny_whisper")
        enc = m.model.encoder.embed_positions.weight
    got["encoder"] = {"length": enc.shape[0], **entry(enc, list(range(enc.shape[0])))}
    out["tiny_whisper"] = got
    return out


def class_defaults() -> dict:
    """What each family's config class holds for every key posenc's table reads, when config.json omits it
    (``None``: the class has no such attribute; the modeling code's getattr default then applies)."""
    from posenc_cli.models.hf_positions import FAMILIES  # data only: no numpy at import

    out = {}
    for name, fam in FAMILIES.items():
        cfg = AutoConfig.for_model(name)
        keys = {k for layer in fam.layers.values() for ks in layer.keys.values() for k in ks}
        keys |= {"pad_token_id"}
        out[name] = {k: getattr(cfg, k, None) for k in sorted(keys)}
    return out


def main() -> None:
    golden = {
        "class_defaults": class_defaults(),
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "how": "tools/golden/make_hf_positions_golden.py: each family's own transformers code",
        "tables": {
            "pos_t5_small": t5("pos_t5_small", "t5"),
            "pos_flan_ul2": t5("pos_flan_ul2", "t5"),
            "pos_mt5_small": t5("pos_mt5_small", "mt5"),
            "pos_umt5_small": t5("pos_umt5_small", "umt5"),
            "pos_bloom_560m": bloom("pos_bloom_560m"),
            "pos_bloom": bloom("pos_bloom"),
            "pos_mpt_30b": mpt("pos_mpt_30b"),
            "pos_falcon_rw_1b": falcon("pos_falcon_rw_1b"),
            "pos_marian_en_de": marian_like("pos_marian_en_de", "marian", "MarianSinusoidalPositionalEmbedding"),
            "pos_pegasus_large": marian_like("pos_pegasus_large", "pegasus", "PegasusSinusoidalPositionalEmbedding"),
            "pos_m2m100_418m": fairseq_like("pos_m2m100_418m", "m2m_100", "M2M100SinusoidalPositionalEmbedding",
                                            {"default": "max_position_embeddings"}),
            "pos_nllb_600m": fairseq_like("pos_nllb_600m", "m2m_100", "M2M100SinusoidalPositionalEmbedding",
                                          {"default": "max_position_embeddings"}),
            "pos_s2t_small": fairseq_like("pos_s2t_small", "speech_to_text", "Speech2TextSinusoidalPositionalEmbedding",
                                          {"encoder": "max_source_positions", "decoder": "max_target_positions"}),
            "pos_whisper_tiny": whisper_encoder("pos_whisper_tiny"),
            "pos_deberta_v3_base": deberta("pos_deberta_v3_base"),
            **learned(),
        },
    }  # fmt: skip
    text = json.dumps(golden, separators=(",", ":"))
    (GOLDEN / "positions_hf.json").write_text(text + "\n")
    print(f"wrote {GOLDEN / 'positions_hf.json'} ({len(text)} bytes)")


if __name__ == "__main__":
    main()
