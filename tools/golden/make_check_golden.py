"""Whole tables made by common libraries' own code in their own dtype, for tests/test_check_arithmetic.py.

Run once, in the side environment (posenc never imports torch, transformers, einops or torchtune)::

    pip download --no-deps rotary-embedding-torch==0.9.1 einops==0.8.2 torchtune==0.6.1   # unzip the wheels
    PYTHONPATH=unzipped /work/side/venv/bin/python tools/golden/make_check_golden.py

writes ``tests/data/golden/check_tables.npz``. Tables of millions of values are not stored: the libraries compute
one float32 angle ``fl32(t * w)`` per position and frequency, then its ``sin`` and ``cos`` in float32, so the file
keeps, per angle table (``tutorial``: the first 2048 rows; ``hf``: HF's and torchtune's, which share their
frequencies; ``ret``), the library's float32 frequencies (``<name>:freq``) and where its ``sin``/``cos`` (torch's,
within an ulp) rounded to the other float32 neighbour of the correctly rounded value (``<name>:<sin|cos>:mask``,
packed bits, and ``:up``, one packed bit per masked element); and per case and tensor the SHA-256 of the
library's own bytes (``<case>:<tensor>:sha256``). tests/check_goldens.py lays the tables out from the angles as
each library does and checks every digest: a test judges the library's real output, bit for bit.

Cases (the code each one runs, as the library has it):

* ``tutorial``: the PyTorch tutorial's ``PositionalEncoding`` (max_len 5000, d_model 512): ``div_term =
  torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))``, ``pe[:, 0, 0::2] = sin(position *
  div_term)``, ``pe[:, 0, 1::2] = cos(...)``.
* ``annotated``: the Annotated Transformer (harvardnlp/annotated-transformer, the_annotated_transformer.py:756-762
  at debc9fd): ``torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))``, same layout.
* ``hf-f32`` / ``hf-bf16``: transformers 5.24's ``LlamaRotaryEmbedding`` (head_dim 128, rope_theta 10000, 8192
  positions) called with a float32 / bfloat16 ``x``: ``cos``, ``sin`` as it returns them (``cat(freqs, freqs)``,
  ``.to(x.dtype)``).
* ``ret``: rotary-embedding-torch 0.9.1 ``RotaryEmbedding(dim=64)``'s cached frequencies for 8192 positions
  (rotary_embedding_torch.py:119 ``1 / theta ** (arange(0, dim, 2) / dim)``, :343-344 ``einsum`` then ``repeat``
  ``(n r)``: interleaved), as ``apply_rotary_emb`` (:71) uses them: ``freqs.cos()``, ``freqs.sin()``.
* ``torchtune``: torchtune 0.6.1 ``RotaryPositionalEmbeddings(dim=128, max_seq_len=8192)``'s ``cache``
  (modules/position_embeddings.py:46-67: ``stack([cos(idx_theta), sin(idx_theta)], -1)``, one angle per pair,
  pairs ``(2k, 2k + 1)``): ``cos = cache[..., 0]``, ``sin = cache[..., 1]`` (len x dim/2).
* ``gemma3-sliding``: transformers 5.24's ``Gemma3RotaryEmbedding`` for tests/data/configs/gemma3_text_v5.json,
  called for ``sliding_attention`` on 128 positions: ``cos``, ``sin`` and the buffers of that type only
  (``sliding_attention_inv_freq``, ``sliding_attention_original_inv_freq``), as a user saves one type's cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "golden" / "check_tables.npz"


def tutorial(n: int = 5000, d: int = 512) -> tuple[dict, torch.Tensor]:
    position = torch.arange(n).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, 1, d)
    pe[:, 0, 0::2] = torch.sin(position * div_term)
    pe[:, 0, 1::2] = torch.cos(position * div_term)
    return {"pe": pe[:, 0]}, div_term


def annotated(n: int = 5000, d: int = 512) -> tuple[dict, torch.Tensor]:
    pe = torch.zeros(n, d)
    position = torch.arange(0, n).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2) * -(math.log(10000.0) / d))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return {"pe": pe}, div_term


def hf(dtype: torch.dtype, n: int = 8192) -> tuple[dict, torch.Tensor]:
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    cfg = LlamaConfig(hidden_size=4096, num_attention_heads=32, max_position_embeddings=n, rope_theta=10000.0)
    rot = LlamaRotaryEmbedding(cfg)
    cos, sin = rot(torch.zeros(1, 1, 1, dtype=dtype), torch.arange(n, dtype=torch.int64)[None, :])
    return {"cos": cos[0], "sin": sin[0]}, rot.inv_freq


def ret(n: int = 8192) -> tuple[dict, torch.Tensor]:
    from rotary_embedding_torch import RotaryEmbedding

    rot = RotaryEmbedding(dim=64, cache_max_seq_len=n)
    freqs = rot.forward(rot.get_seq_pos(n), seq_len=n)
    return {"cos": freqs.cos(), "sin": freqs.sin()}, rot.freqs.detach()


def torchtune(n: int = 8192) -> tuple[dict, torch.Tensor]:
    # the module is loaded alone (it imports torch only): torchtune's __init__ wants torchao, which is not needed
    found = importlib.util.find_spec("torchtune")
    path = Path(list(found.submodule_search_locations)[0]) / "modules" / "position_embeddings.py"
    spec = importlib.util.spec_from_file_location("tt_position_embeddings", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rope = mod.RotaryPositionalEmbeddings(dim=128, max_seq_len=n)
    return {"cos": rope.cache[..., 0], "sin": rope.cache[..., 1]}, rope.theta


def gemma3_sliding(n: int = 128) -> tuple[dict, torch.Tensor]:
    """transformers 5.24's Gemma3RotaryEmbedding for tests/data/configs/gemma3_text_v5.json, its sliding layers:
    ``cos``, ``sin`` and the buffers of that type (``sliding_attention_inv_freq`` and its original copy), as a
    user saves the cache of one layer type."""
    import json

    from transformers import Gemma3TextConfig
    from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding

    cfg = Gemma3TextConfig(**json.loads((ROOT / "tests" / "data" / "configs" / "gemma3_text_v5.json").read_text()))
    rot = Gemma3RotaryEmbedding(cfg)
    cos, sin = rot(torch.zeros(1, 1, 1), torch.arange(n)[None], "sliding_attention")
    bufs = {k: b for k, b in rot.named_buffers() if k.startswith("sliding_attention")}
    return {"cos": cos[0], "sin": sin[0], **bufs}, bufs["sliding_attention_inv_freq"]


def np_dtype(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.detach().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.detach().numpy()


def main() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from check_goldens import ANGLE_ROWS, CASES, bits, layout, plain_angles  # the test's own rebuild

    made = {
        "tutorial": tutorial(),
        "annotated": annotated(),
        "hf-f32": hf(torch.float32),
        "hf-bf16": hf(torch.bfloat16),
        "ret": ret(),
        "torchtune": torchtune(),
        "gemma3-sliding": gemma3_sliding(),
    }
    out: dict[str, np.ndarray] = {}
    angle_of = {"tutorial": ("tutorial", "pe"), "hf": ("hf-f32", "cos"), "ret": ("ret", "cos"),
                "gemma3": ("gemma3-sliding", "cos")}  # fmt: skip
    for name, (case, _) in angle_of.items():
        tables, freq = made[case]
        n = ANGLE_ROWS[name]
        freq32 = freq.detach().float().numpy()
        out[f"{name}:freq"] = freq32
        s_plain, c_plain = plain_angles(freq32, n)
        first = {k: np_dtype(v)[:n] for k, v in tables.items()}
        if case == "tutorial":
            s_lib, c_lib = first["pe"][:, 0::2], first["pe"][:, 1::2]
        elif case in ("hf-f32", "gemma3-sliding"):
            h = first["cos"].shape[1] // 2
            s_lib, c_lib = first["sin"][:, :h], first["cos"][:, :h]
        else:
            s_lib, c_lib = first["sin"][:, 0::2], first["cos"][:, 0::2]
        for part, lib, plain in (("sin", s_lib, s_plain), ("cos", c_lib, c_plain)):
            diff = bits(lib) != bits(plain)
            steps = bits(lib).astype(np.int64) - bits(plain).astype(np.int64)
            assert np.all(np.abs(steps[diff]) == 1) and np.all(np.sign(lib.reshape(-1)[diff]) ==
                                                              np.sign(plain.reshape(-1)[diff])), name
            up = np.abs(lib.reshape(-1)[diff]) > np.abs(plain.reshape(-1)[diff])
            up ^= plain.reshape(-1)[diff] < 0  # toward +inf
            out[f"{name}:{part}:mask"] = np.packbits(diff)
            out[f"{name}:{part}:up"] = np.packbits(up)
            print(f"{name}:{part}: {int(diff.sum())} of {diff.size} rounded to the other neighbour")
    for case, (angles, names) in CASES.items():
        tables, freq = made[case]
        same = freq.detach().float().numpy()
        assert np.array_equal(bits(same), bits(out[f"{angles}:freq"])), f"{case} has other frequencies"
        n = ANGLE_ROWS[angles]
        for tname in names:
            got = np.ascontiguousarray(np_dtype(tables[tname])[:n] if tables[tname].ndim > 1 else np_dtype(tables[tname]))
            out[f"{case}:{tname}:sha256"] = np.frombuffer(hashlib.sha256(got.tobytes()).digest(), np.uint8)
    out["versions"] = np.array([torch.__version__, __import__("transformers").__version__])
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
