"""Write the example tables of docs/inspect.md with plain NumPy (not with posenc, so that the docs show posenc
finding out what someone else's code computed). Run from the repository root: ``python tools/examples.py``.

- ``docs/examples/ported_cos.npy``: the cos cache of a rotary port that repeats each angle twice (GPT-J's
  ``repeat_interleave``, pairs (2k, 2k+1)) where the model rotates halves (Llama's ``rotate_half``, which wants
  ``cat(freqs, freqs)``); 64 positions, head dim 32, base 10000, float32.
- ``docs/examples/fixed_cos.npy``: the same cache after the fix, ``cat(freqs, freqs)``.
- ``docs/examples/trained_pe.npy``: a "trained" table: Vaswani's sinusoidal table (32 positions, dim 16) after
  500 steps of small random updates; no analytic kind reproduces it.
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


if __name__ == "__main__":
    main()
