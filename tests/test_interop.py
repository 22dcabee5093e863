"""Tables exported by the ``posenc`` command line (run in process), loaded by other frameworks' own loaders.

Optional: each test skips cleanly when its framework (torch, jax, tensorflow) is not importable; none of them
is a posenc dependency. References are reimplementations of the frameworks' published code computed in
float64: the PyTorch tutorial's ``PositionalEncoding`` ("Language Modeling with nn.Transformer and
torchtext") and HF transformers' ``LlamaRotaryEmbedding`` with ``_compute_default_rope_parameters`` and
``_compute_llama3_parameters`` (``src/transformers/modeling_rope_utils.py``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from .conftest import inproc as run
from .each import each

LEN, DIM = 128, 64  # small positions: float32 within 1e-6 of the float64 reference
TUTORIAL = ["sinusoidal", "--len", str(LEN), "--dim", str(DIM), "-p", "preset=pytorch-tutorial"]
BF16_ATOL = 2.0**-9  # half a bfloat16 ulp in [0.5, 1): a correctly rounded table is within it

LLAMA_DEFAULT = {
    "model_type": "llama",
    "rope_theta": 10000.0,
    "hidden_size": 256,
    "num_attention_heads": 4,
    "max_position_embeddings": 2048,
}
LLAMA31 = {
    "model_type": "llama",
    "rope_theta": 500000.0,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
    "hidden_size": 256,
    "num_attention_heads": 4,
    "max_position_embeddings": 2048,  # shrunk from 131072: the rule is the same at every position
}


def export(args: list[str], dest: Path) -> Path:
    proc = run(["export", *args, "-o", str(dest), "-q"])
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr.decode()
    return dest


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """The tutorial table as posenc exports it: float32 and bfloat16 safetensors, float32 and float64 .npy."""
    d = tmp_path_factory.mktemp("interop")
    return {
        "f32": export(TUTORIAL, d / "pe.safetensors"),
        "bf16": export([*TUTORIAL, "--dtype", "bfloat16"], d / "pe_bf16.safetensors"),
        "npy": export(TUTORIAL, d / "pe.npy"),
        "npy64": export([*TUTORIAL, "--dtype", "float64"], d / "pe64.npy"),
    }


def tutorial_numpy(max_len: int, d_model: int) -> np.ndarray:
    """The PyTorch tutorial's PositionalEncoding buffer, transcribed to NumPy float64 (for jax/tf tests)."""
    position = np.arange(max_len, dtype=np.float64)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2, dtype=np.float64) * (-math.log(10000.0) / d_model))
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return pe


# ----- PyTorch -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def tutorial_torch(torch, max_len: int, d_model: int):
    """``PositionalEncoding.__init__`` of the PyTorch tutorial, verbatim except float64 and no batch axis."""
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def test_numpy_transcription_is_the_torch_tutorial(torch):
    # the same float64 formula; exp/sin/cos of torch and NumPy may differ in the last bit
    np.testing.assert_allclose(tutorial_numpy(LEN, DIM), tutorial_torch(torch, LEN, DIM).numpy(), rtol=0, atol=1e-14)


def test_torch_loads_float32_safetensors(torch, files):
    from safetensors import safe_open
    from safetensors.torch import load_file

    tensors = load_file(str(files["f32"]))
    assert list(tensors) == ["pe"]
    pe = tensors["pe"]
    assert pe.dtype == torch.float32 and tuple(pe.shape) == (LEN, DIM) and pe.is_contiguous()
    torch.testing.assert_close(pe.double(), tutorial_torch(torch, LEN, DIM), rtol=0, atol=1e-6)
    with safe_open(str(files["f32"]), "pt") as fh:
        meta = fh.metadata()
    assert meta["kind"] == "sinusoidal" and meta["layout"] == "interleaved" and meta["dtype"] == "float32"


def test_torch_loads_bfloat16_safetensors(torch, files):
    from safetensors.torch import load_file

    pe = load_file(str(files["bf16"]))["pe"]
    assert pe.dtype == torch.bfloat16 and tuple(pe.shape) == (LEN, DIM)
    ref = tutorial_torch(torch, LEN, DIM)
    torch.testing.assert_close(pe.double(), ref, rtol=0, atol=BF16_ATOL)
    # and it is what torch itself gets by rounding the float64 reference (round to nearest even)
    same = (pe == ref.to(torch.bfloat16)).double().mean().item()
    assert same > 0.99, f"only {same:.1%} of entries equal the float64 reference rounded to bfloat16"


def test_torch_from_numpy_npy(torch, files):
    each([("npy", "float32"), ("npy64", "float64")], lambda c: _torch_from_numpy_npy(torch, files, c[0], c[1]))


def _torch_from_numpy_npy(torch, files, key, dtype):
    pe = torch.from_numpy(np.load(files[key]))
    assert pe.dtype == getattr(torch, dtype) and tuple(pe.shape) == (LEN, DIM)
    atol = 1e-6 if dtype == "float32" else 1e-12
    torch.testing.assert_close(pe.double(), tutorial_torch(torch, LEN, DIM), rtol=0, atol=atol)


def test_torch_module_uses_the_exported_buffer(torch, files):
    """Drop the exported table into the tutorial's module as its buffer: the forward pass is unchanged."""
    from safetensors.torch import load_file

    class PositionalEncoding(torch.nn.Module):
        def __init__(self, pe):
            super().__init__()
            self.register_buffer("pe", pe.unsqueeze(1))  # [max_len, 1, d_model] as in the tutorial

        def forward(self, x):
            return x + self.pe[: x.size(0)]

    x = torch.randn(10, 2, DIM, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    ours = PositionalEncoding(load_file(str(files["f32"]))["pe"].double())(x)
    ref = PositionalEncoding(tutorial_torch(torch, LEN, DIM))(x)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-6)


# HF LlamaRotaryEmbedding, float64 ---------------------------------------------------------------------------
def hf_rope_init(torch, config: dict):
    """``ROPE_INIT_FUNCTIONS[rope_type](config)`` for default and llama3, in float64: (inv_freq, attention_scaling)."""
    base = config.get("rope_theta", 10000.0)
    dim = config["hidden_size"] // config["num_attention_heads"]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float64) / dim))
    scaling = config.get("rope_scaling") or {}
    if scaling.get("rope_type", "default") == "default":
        return inv_freq, 1.0
    assert scaling["rope_type"] == "llama3"
    factor = scaling["factor"]
    low_freq_factor = scaling["low_freq_factor"]
    high_freq_factor = scaling["high_freq_factor"]
    old_context_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    inv_freq_llama = torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)
    return inv_freq_llama, 1.0


def hf_llama_rotary(torch, config: dict, position_ids):
    """``LlamaRotaryEmbedding.forward`` (float64 instead of float32): cos, sin of shape [batch, seq, head_dim]."""
    inv_freq, attention_scaling = hf_rope_init(torch, config)
    inv_freq_expanded = inv_freq[None, :, None].expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].to(torch.float64)
    freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * attention_scaling, emb.sin() * attention_scaling, inv_freq


def rotate_half(torch, x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def test_rope_matches_hf_llama_rotary_embedding(torch, tmp_path_factory):
    """Llama's default and Llama 3.1's rule, each in float64 and float32 (tests/each.py names each failing one)."""
    configs = {"default": LLAMA_DEFAULT, "llama3": LLAMA31}
    each(
        [(name, dtype, atol) for name in configs for dtype, atol in (("float64", 1e-12), ("float32", 1e-6))],
        lambda c: _rope_matches_hf_llama_rotary_embedding(torch, tmp_path_factory.mktemp(c[0]), configs[c[0]], *c[1:]),
    )


def _rope_matches_hf_llama_rotary_embedding(torch, tmp_path, config, dtype, atol):
    from safetensors.torch import load_file

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(config))
    out = export(["rope", "--hf-config", str(cfg), "--dtype", dtype], tmp_path / "rope.safetensors")
    tensors = load_file(str(out))
    n = config["max_position_embeddings"]
    assert tensors["cos"].dtype == getattr(torch, dtype) and tuple(tensors["cos"].shape) == (n, 64)

    cos, sin, inv_freq = hf_llama_rotary(torch, config, torch.arange(n)[None])
    torch.testing.assert_close(tensors["inv_freq"].double(), inv_freq, rtol=1e-13, atol=0)
    torch.testing.assert_close(tensors["cos"].double(), cos[0], rtol=0, atol=atol)
    torch.testing.assert_close(tensors["sin"].double(), sin[0], rtol=0, atol=atol)

    # apply_rotary_pos_emb with posenc's tables rotates q exactly as with HF's
    q = torch.randn(2, n, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    ours = q * tensors["cos"].double() + rotate_half(torch, q) * tensors["sin"].double()
    ref = q * cos + rotate_half(torch, q) * sin
    torch.testing.assert_close(ours, ref, rtol=0, atol=atol * 16)


def test_onnx_caches_rebuild_hf_tables(torch, tmp_path):
    """ONNX RotaryEmbedding's [len, rot_dim/2] caches are the first half of HF's cos/sin (rotate_half layout)."""
    from safetensors.torch import load_file

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(LLAMA31))
    out = export(["rope", "--hf-config", str(cfg), "--dtype", "float64", "--onnx-rope"], tmp_path / "onnx.safetensors")
    caches = load_file(str(out))
    cos, sin, _ = hf_llama_rotary(torch, LLAMA31, torch.arange(LLAMA31["max_position_embeddings"])[None])
    torch.testing.assert_close(torch.cat([caches["cos_cache"]] * 2, dim=-1), cos[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(torch.cat([caches["sin_cache"]] * 2, dim=-1), sin[0], rtol=0, atol=1e-12)


# ----- JAX -----------------------------------------------------------------------------------------------------
def test_jax_loads_safetensors_and_npy(files):
    jnp = pytest.importorskip("jax.numpy")
    flax_st = pytest.importorskip("safetensors.flax")
    ref = tutorial_numpy(LEN, DIM)

    pe = flax_st.load_file(str(files["f32"]))["pe"]
    assert pe.dtype == jnp.float32 and pe.shape == (LEN, DIM)
    np.testing.assert_allclose(np.asarray(pe, dtype=np.float64), ref, rtol=0, atol=1e-6)

    pe = flax_st.load_file(str(files["bf16"]))["pe"]
    assert pe.dtype == jnp.bfloat16 and pe.shape == (LEN, DIM)
    np.testing.assert_allclose(np.asarray(pe.astype(jnp.float32), dtype=np.float64), ref, rtol=0, atol=BF16_ATOL)

    pe = jnp.load(files["npy"])
    assert pe.dtype == jnp.float32 and pe.shape == (LEN, DIM)
    np.testing.assert_allclose(np.asarray(pe, dtype=np.float64), ref, rtol=0, atol=1e-6)


# ----- TensorFlow ----------------------------------------------------------------------------------------------
def test_tensorflow_loads_safetensors_and_npy(files):
    tf = pytest.importorskip("tensorflow")
    tf_st = pytest.importorskip("safetensors.tensorflow")
    ref = tutorial_numpy(LEN, DIM)

    pe = tf_st.load_file(str(files["f32"]))["pe"]
    assert pe.dtype == tf.float32 and tuple(pe.shape) == (LEN, DIM)
    np.testing.assert_allclose(pe.numpy().astype(np.float64), ref, rtol=0, atol=1e-6)

    pe = tf_st.load_file(str(files["bf16"]))["pe"]
    assert pe.dtype == tf.bfloat16
    np.testing.assert_allclose(tf.cast(pe, tf.float64).numpy(), ref, rtol=0, atol=BF16_ATOL)

    pe = tf.convert_to_tensor(np.load(files["npy"]))
    assert pe.dtype == tf.float32 and tuple(pe.shape) == (LEN, DIM)
    np.testing.assert_allclose(pe.numpy().astype(np.float64), ref, rtol=0, atol=1e-6)
