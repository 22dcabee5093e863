"""Write the example tables of docs/inspect.md with plain NumPy (not with posenc, so that the docs show posenc
finding out what someone else's code computed). Run from the repository root: ``python tools/examples.py``.

- ``docs/examples/ported_cos.npy``: the cos cache of a rotary port that repeats each angle twice (GPT-J's
  ``repeat_interleave``, pairs (2k, 2k+1)) where the model rotates halves (Llama's ``rotate_half``, which wants
  ``cat(freqs, freqs)``); 64 positions, head dim 32, base 10000, float32.
- ``docs/examples/fixed_cos.npy``: the same cache after the fix, ``cat(freqs, freqs)``.
- ``docs/examples/trained_pe.npy``: a "trained" table: Vaswani's sinusoidal table (32 positions, dim 16) after
  500 steps of small random updates; no analytic kind reproduces it.
- ``docs/examples/hf_cos.npy``: the cos cache Hugging Face's ``LlamaRotaryEmbedding`` computes for Llama 3.1's
  rope (base 500000, llama3 scaling; head dim 32 to keep the file small), 2048 positions, in float32 as
  transformers does: ``inv_freq`` in float32, ``freqs = inv_freq @ positions`` in float32, ``cos`` in float32.
- ``docs/examples/hf_base10k_cos.npy``: the same computation with the base mistaken (10000, Llama 2's, where the
  config gives 500000), 1024 positions.
- ``docs/examples/hf_bf16_cos.npy``: ``hf_cos.npy``'s first 1024 positions cast to bfloat16 (``.to(torch.bfloat16)``
  rounds to nearest even, as ml_dtypes does) and saved widened to float32, as NumPy users save bfloat16 caches.
- ``docs/examples/hf_inv_bf16_cos.npy``: Llama 2's cos cache (base 10000, head dim 16) from a model cast to bfloat16
  (``model.to(torch.bfloat16)`` rounds the ``inv_freq`` buffer; the forward widens it back to float32 before the
  float32 product), 1024 positions, float32.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "docs" / "examples"


def main() -> None:
    n, d, base = 64, 32, 10000.0
    inv_freq = 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    freqs = np.outer(np.arange(n, dtype=np.float64), inv_freq)
    ported = np.repeat(freqs, 2, axis=1)  # GPT-J: each angle twice, side by side
    fixed = np.concatenate([freqs, freqs], axis=1)  # Llama: the angles, then the angles again
    np.save(OUT / "ported_cos.npy", np.cos(ported).astype(np.float32))
    np.save(OUT / "fixed_cos.npy", np.cos(fixed).astype(np.float32))
    t = np.arange(32, dtype=np.float64)[:, None]
    w = 10000.0 ** (-np.arange(0, 16, 2) / 16.0)
    pe = np.empty((32, 16))
    pe[:, 0::2], pe[:, 1::2] = np.sin(t * w), np.cos(t * w)
    steps = np.random.default_rng(0).normal(0.0, 0.01, size=(500, 32, 16))
    np.save(OUT / "trained_pe.npy", (pe + steps.sum(axis=0)).astype(np.float32))
    np.save(OUT / "hf_cos.npy", hf_llama31_cos(2048, 32))
    np.save(OUT / "hf_base10k_cos.npy", hf_llama31_cos(1024, 32, base=10000.0))
    import ml_dtypes

    np.save(OUT / "hf_bf16_cos.npy", hf_llama31_cos(1024, 32).astype(ml_dtypes.bfloat16).astype(np.float32))
    f32 = np.float32
    inv = f32(1.0) / np.power(f32(10000.0), np.arange(0, 16, 2, dtype=np.int64).astype(f32) / f32(16))
    inv = inv.astype(ml_dtypes.bfloat16).astype(f32)  # the buffer rounded by the cast, widened in the forward
    freqs = np.multiply.outer(np.arange(1024, dtype=f32), inv)
    np.save(OUT / "hf_inv_bf16_cos.npy", np.cos(np.concatenate([freqs, freqs], axis=1)).astype(f32))


def hf_llama31_cos(n: int, d: int, base: float = 500000.0) -> np.ndarray:
    """transformers' float32 arithmetic step by step (NumPy's float32 ufuncs round each operation as torch's do)."""
    f32 = np.float32
    inv = f32(1.0) / np.power(f32(base), np.arange(0, d, 2, dtype=np.int64).astype(f32) / f32(d))
    factor, low, high, old = 8.0, 1.0, 4.0, 8192
    wavelen = f32(2 * np.pi) / inv
    llama = np.where(wavelen > f32(old / low), inv / f32(factor), inv)
    smooth = (f32(old) / wavelen - f32(low)) / f32(high - low)
    smoothed = (f32(1) - smooth) * llama / f32(factor) + smooth * llama
    medium = ~(wavelen < f32(old / high)) & ~(wavelen > f32(old / low))
    inv = np.where(medium, smoothed, llama).astype(f32)
    freqs = np.multiply.outer(np.arange(n, dtype=f32), inv)
    return np.cos(np.concatenate([freqs, freqs], axis=1)).astype(f32)


if __name__ == "__main__":
    main()
