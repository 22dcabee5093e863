"""RoPE and sinusoidal tables computed the way other libraries compute them, in float32, with plain NumPy.

Independent of posenc's engine: each function follows one library's own formula step by step, rounding to
float32 where the library's tensors are float32 (NumPy's float32 ufuncs round each operation as torch's do).
Used by the error-model tests; tests/data/golden/formula_rows.json holds the same tables' rows made by torch.
"""

from __future__ import annotations

import math

import numpy as np

f32 = np.float32


def hf_inv_freq(dim: int, base: float) -> np.ndarray:
    """transformers' default rule: ``1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))``."""
    e = np.arange(0, dim, 2, dtype=np.int64).astype(f32) / f32(dim)
    return (f32(1.0) / np.power(f32(base), e)).astype(f32)


def hf_llama3(inv: np.ndarray, factor: float, low: float, high: float, old: int) -> np.ndarray:
    """transformers' ``_compute_llama3_parameters`` on a float32 ``inv_freq``."""
    low_wl, high_wl = old / low, old / high
    wavelen = (f32(2 * math.pi) / inv).astype(f32)
    llama = np.where(wavelen > f32(low_wl), inv / f32(factor), inv).astype(f32)
    smooth = ((f32(old) / wavelen - f32(low)) / f32(high - low)).astype(f32)
    smoothed = ((f32(1) - smooth) * llama / f32(factor) + smooth * llama).astype(f32)
    medium = ~(wavelen < f32(high_wl)) & ~(wavelen > f32(low_wl))
    return np.where(medium, smoothed, llama).astype(f32)


def hf_yarn(dim: int, base: float, factor: float, old: int, beta_fast: float = 32.0, beta_slow: float = 1.0):
    """transformers' ``_compute_yarn_parameters`` (truncate=True): float32 ``inv_freq`` and attention factor."""

    def corr(rot: float) -> float:
        return (dim * math.log(old / (rot * 2 * math.pi))) / (2 * math.log(base))

    low, high = math.floor(corr(beta_fast)), math.ceil(corr(beta_slow))
    low, high = max(low, 0), min(high, dim - 1)
    pos = np.power(f32(base), (np.arange(0, dim, 2, dtype=np.int64).astype(f32) / f32(dim))).astype(f32)
    extra = (f32(1.0) / pos).astype(f32)
    inter = (f32(1.0) / (f32(factor) * pos)).astype(f32)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=f32) - f32(low)) / f32(high - low), 0, 1).astype(f32)
    ext = (f32(1) - ramp).astype(f32)
    inv = (inter * (f32(1) - ext) + extra * ext).astype(f32)
    return inv, 0.1 * math.log(factor) + 1.0


def hf_longrope(dim: int, base: float, ext_factors: list[float]) -> np.ndarray:
    """transformers' ``_compute_longrope_parameters``: ``1.0 / (ext_factors * base**inv_freq_shape)``."""
    shape = np.arange(0, dim, 2, dtype=np.int64).astype(f32) / f32(dim)
    return (f32(1.0) / (np.asarray(ext_factors, dtype=f32) * np.power(f32(base), shape))).astype(f32)


def hf_cos_sin(inv: np.ndarray, n: int, scaling: float = 1.0, cast: str | None = None, *, positions=None):
    """``LlamaRotaryEmbedding.forward``: ``freqs = inv_freq @ position_ids`` in float32, ``cat(freqs, freqs)``,
    ``cos()``/``sin()`` in float32 times ``attention_scaling``, then ``.to(x.dtype)``. ``positions``: those rows
    only (``position_ids`` as given, each < ``n``), the same values as those rows of the whole table (every step
    is elementwise)."""
    t = np.arange(n, dtype=f32) if positions is None else np.asarray(positions).astype(f32)
    assert t.size == 0 or float(t.max()) < n, "positions beyond the table"
    freqs = np.multiply.outer(t, inv.astype(f32)).astype(f32, copy=False)  # a K=1 matmul: one rounding per product
    # ``emb = cat(freqs, freqs)``: cos and sin are elementwise, so each half is computed once and copied (the same
    # values as cos(emb), in half the work), and scaled in float32 as the library does
    half = freqs.shape[1]
    out = []
    for fn in (np.cos, np.sin):
        full = np.empty((freqs.shape[0], 2 * half), dtype=f32)
        np.multiply(fn(freqs), f32(scaling), out=full[:, :half])
        full[:, half:] = full[:, :half]
        out.append(_cast(full, cast))
    return out[0], out[1]


def _cast(x: np.ndarray, cast: str | None) -> np.ndarray:
    if cast is None:
        return x
    if cast == "float16":
        return x.astype(np.float16)
    import ml_dtypes

    return x.astype(ml_dtypes.bfloat16)
