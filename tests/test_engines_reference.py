"""--engine X against the tables engine X's own code computed (tests/data/engines, made once in a side environment by
tools/golden/engines_torch_reference.py: vLLM 0.33.0 and SGLang 0.5.23 from their wheels; engines_mlx_reference.py:
mlx-lm 0.32.2 on mlx 0.32.4; engines_llamacpp_reference.py: ggml of llama-cpp-python 0.3.36).

Each stored case holds the engine's cos and sin (float32, one column per rotated pair) at sparse positions up to
131071 or the engine's last row, including LongRoPE's boundary rows. posenc must equal them to float32 rounding:
within a few roundings of the float32 angle (|t w| 2**-24 each) and of the result. The same comparison fails for
the rules posenc had before (the mistaken tables written out in plain numpy), so it can tell."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.models.engines import engine_encoding, model_facts

from .each import each

DATA = Path(__file__).parent / "data"
TORCH = np.load(DATA / "engines" / "torch.npz")
MLX = np.load(DATA / "engines" / "mlx.npz")
GGML = np.load(DATA / "engines" / "llamacpp.npz")
EPS = 2.0**-24


def _cases(z) -> list[str]:
    return sorted({k.rsplit(".", 1)[0] for k in z.files})


def _meta(z, case: str) -> dict:
    return json.loads(str(z[f"{case}.meta"]))


def _pairs(enc, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """posenc's table at ``rows``, one column per rotated pair (the pair's first feature)."""
    cos = np.concatenate([enc.rows("cos", int(r), int(r) + 1) for r in rows])
    sin = np.concatenate([enc.rows("sin", int(r), int(r) + 1) for r in rows])
    if enc.layout == "half":
        h = cos.shape[1] // 2
        return cos[:, :h], sin[:, :h]
    return cos[:, 0::2], sin[:, 0::2]


def _within(ours: np.ndarray, theirs: np.ndarray, positions: np.ndarray, w: np.ndarray, scale: float) -> np.ndarray:
    """float32 rounding: 4 roundings of the angle |t w| and 4 of the (scaled) result."""
    tol = abs(scale) * (4 * EPS * np.abs(positions[:, None] * w[None, :]) + 4 * EPS)
    return np.abs(ours.astype(np.float64) - theirs.astype(np.float64)) <= tol


def _torch_case(case: str):
    engine, _name, label = case.split(".")
    meta = _meta(TORCH, case)
    kw = {"max_model_len": meta["max_model_len"]} if engine == "vllm" and label == "long" else {}
    pos = TORCH[f"{case}.positions"]
    # one batch holding positions 0..max: SGLang's LongRoPE choice is by the batch's largest position
    enc, _ = engine_encoding(DATA / meta["config"], engine, length=int(pos.max()) + 1, **kw)
    return enc, pos, meta


def test_vllm_and_sglang_equal_their_own_code():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(_cases(TORCH), lambda case: _vllm_and_sglang_equal_their_own_code(case))


def _vllm_and_sglang_equal_their_own_code(case):
    enc, pos, _ = _torch_case(case)
    cos, sin = _pairs(enc, pos)
    want_c, want_s = TORCH[f"{case}.cos"], TORCH[f"{case}.sin"]
    assert cos.shape == want_c.shape, case
    w = enc.inv_freq()[: cos.shape[1]]
    scale = float(np.abs(want_c[0]).max())
    assert _within(cos, want_c, pos, w, scale).all(), case
    assert _within(sin, want_s, pos, w, scale).all(), case


def test_mlx_equals_its_own_code():
    each(_cases(MLX), _mlx_equals_its_own_code)


def _mlx_equals_its_own_code(case):
    meta = _meta(MLX, case)
    pos = MLX[f"{case}.positions"]
    rows_c, rows_s = [], []
    facts = model_facts(DATA / meta["config"])  # the config read once for every position
    for t in pos:  # one position per call, offset=t (how mlx-lm's KV cache calls its rope)
        enc, _ = engine_encoding(DATA / meta["config"], "mlx", length=1, overrides={"offset": int(t)}, facts=facts)
        c, s = _pairs(enc, np.array([0]))
        rows_c.append(c[0])
        rows_s.append(s[0])
    cos, sin = np.array(rows_c), np.array(rows_s)
    want_c, want_s = MLX[f"{case}.cos"], MLX[f"{case}.sin"]
    assert cos.shape == want_c.shape, case
    w = enc.inv_freq()[: cos.shape[1]]
    scale = float(np.abs(want_c[0]).max())
    assert _within(cos, want_c, pos, w, scale).all(), case
    assert _within(sin, want_s, pos, w, scale).all(), case


def test_llamacpp_equals_ggml():
    each(_cases(GGML), _llamacpp_equals_ggml)


def _llamacpp_equals_ggml(case):
    """ggml's own float32 rope (iterated powf theta) for a faithful conversion at the stored context size."""
    meta = _meta(GGML, case)
    pos = GGML[f"{case}.positions"]
    enc, _ = engine_encoding(DATA / meta["config"], "llamacpp", length=int(pos.max()) + 1, n_ctx=meta["n_ctx"])
    cos, sin = _pairs(enc, pos)
    want_c, want_s = GGML[f"{case}.cos"], GGML[f"{case}.sin"]
    assert cos.shape == want_c.shape, case
    w = enc.inv_freq()[: cos.shape[1]]
    scale = float(np.abs(want_c[0]).max())
    assert _within(cos, want_c, pos, w, scale).all(), case
    assert _within(sin, want_s, pos, w, scale).all(), case


def test_llamacpp_old_float64_tables_are_not_ggml_s():
    each(["llama31", "gpt_oss", "mistral"], _llamacpp_old_float64_tables_are_not_ggml_s)


def _llamacpp_old_float64_tables_are_not_ggml_s(case):
    """posenc's old --engine llamacpp (exact float64 rope with llama.cpp's rules) is outside float32 rounding of
    ggml's iterated powf at the far positions: the arithmetic matters."""
    from posenc_cli.encodings import make_encoding
    from posenc_cli.models.engines import engine_params, model_facts

    meta = _meta(GGML, case)
    pos = GGML[f"{case}.positions"]
    facts = model_facts(DATA / meta["config"])
    old = make_encoding("rope", {**engine_params(facts, "llamacpp", n_ctx=meta["n_ctx"]), "length": 1,
                                 "dtype": "float64"})  # fmt: skip
    w = old.inv_freq()
    h = len(w)
    cos = GGML[f"{case}.cos"]
    mine = float(cos[0, 0]) * np.cos(pos[:, None].astype(np.float64) * w[None, :])
    assert not _within(mine[:, :h], cos, pos, w, float(cos[0, 0])).all()


def test_mlx_exp_is_mlx_s_own():
    """mlx's CPU exp is Cephes' polynomial, up to 8 ulp from the true exp: the plain-base tables depend on it
    (Mistral's stored table is outside float32 rounding with a correctly rounded exp at the far positions)."""
    from posenc_cli.models.engines import mlx_exp

    x = -np.arange(64, dtype=np.float32) * np.float32(np.float32(math.log(10000.0)) / np.float32(64))
    ulps = np.abs(mlx_exp(x).view(np.int32).astype(np.int64) - np.exp(x.astype(np.float64)).astype(np.float32).view(
        np.int32))  # fmt: skip
    assert ulps.max() >= 4
    pos = MLX["mistral.positions"]
    w = np.exp(x.astype(np.float64)).astype(np.float32).astype(np.float64)
    ang = (pos[:, None].astype(np.float32) * w[None, :].astype(np.float32)).astype(np.float64)
    near = np.cos(ang).astype(np.float32)
    assert not _within(near, MLX["mistral.cos"], pos, w, 1.0).all()


# ----- the three divergences of issue 30 and the old rules, written out in plain numpy -----------------------
def _phi():
    cfg = json.loads((DATA / "configs" / "phi3.json").read_text())
    d = int(cfg["head_dim"] * cfg["partial_rotary_factor"])
    base = cfg["rope_theta"] ** (-np.arange(0, d, 2) / d)
    scale = math.sqrt(1 + math.log(cfg["max_position_embeddings"] / 4096) / math.log(4096))
    return cfg, base, scale


def test_vllm_default_for_longrope_is_the_short_table():
    """vLLM's default max_model_len for Phi-3.5 is original_max_position_embeddings (4096): short factors, and
    its rows end at 4095. The old rule (max_model_len = max_position_embeddings: the long table) is refused."""
    cfg, base, scale = _phi()
    pos = TORCH["vllm.phi35.default.positions"]
    assert pos.max() == 4095 and _meta(TORCH, "vllm.phi35.default")["default_max_model_len"] == 4096
    w_long = base / np.array(cfg["rope_scaling"]["long_factor"])
    old = scale * np.cos(pos[:, None] * w_long[None, :])
    assert not _within(old, TORCH["vllm.phi35.default.cos"], pos, w_long, scale).all()
    enc, _ = engine_encoding(DATA / "configs" / "phi3.json", "vllm")
    assert enc.length == 4096  # the rows vLLM computes by default


def test_sglang_dynamic_ntk_is_static():
    """SGLang's 'dynamic' for Llama-2 factor 2: base 1e4 * 3**(128/126) at every position; HF's rule (posenc's
    old one for SGLang) is plain RoPE up to max_position_embeddings."""
    pos = TORCH["sglang.llama2_dynamic.all.positions"]
    want = TORCH["sglang.llama2_dynamic.all.cos"]
    k = np.arange(0, 128, 2) / 128
    static = (1e4 * 3 ** (128 / 126)) ** -k
    assert _within(np.cos(pos[:, None] * static[None, :]), want, pos, static, 1.0).all()
    plain = 1e4**-k
    small = pos < 4096
    assert not _within(np.cos(pos[small, None] * plain[None, :]), want[small], pos[small], plain, 1.0).all()
    # a short batch (largest position 1000): SGLang's table is still the static one
    enc, _ = engine_encoding(DATA / "engines" / "llama2_dynamic.json", "sglang", length=1001)
    at = np.flatnonzero(pos == 1000)
    cos, _sin = _pairs(enc, pos[at])
    assert _within(cos, want[at], pos[at], static, 1.0).all()


def test_sglang_longrope_boundary_row_is_the_long_table_s_position_zero():
    cfg, base, scale = _phi()
    case = "sglang.phi35.boundary"
    pos, cos, sin = TORCH[f"{case}.positions"], TORCH[f"{case}.cos"], TORCH[f"{case}.sin"]
    assert pos[-1] == 4096
    assert np.allclose(cos[-1], scale, rtol=1e-6) and np.all(sin[-1] == 0)
    w_short = base / np.array(cfg["rope_scaling"]["short_factor"])
    old_row = scale * np.cos(4096 * w_short)  # posenc's old row 4096: the short table's
    assert not _within(old_row[None, :], cos[-1:], pos[-1:], w_short, scale).all()
    enc, _ = engine_encoding(DATA / "configs" / "phi3.json", "sglang", length=4097)
    c, s = _pairs(enc, np.array([4095, 4096]))
    assert np.allclose(c[1], scale, rtol=1e-6) and np.all(s[1] == 0)
    assert np.allclose(c[0], scale * np.cos(4095 * w_short), atol=1e-3)  # the rows before: short


def test_vllm_dynamic_ntk_cache_ends_before_max_model_len():
    meta = _meta(TORCH, "vllm.llama2_dynamic.default")
    assert meta["cache_rows"] == 4096 and meta["default_max_model_len"] == 8192
    from posenc_cli.errors import ParameterError

    with pytest.raises(ParameterError, match=r"no table for position 4096.*cache holds 4096 rows"):
        engine_encoding(DATA / "engines" / "llama2_dynamic.json", "vllm", length=8192)
    enc, _ = engine_encoding(DATA / "engines" / "llama2_dynamic.json", "vllm")
    assert enc.length == 4096


def test_full_length_tables_keep_float32_rounding():
    """131072 rows of gpt-oss through vLLM's arithmetic: the last stored row (131071) equals vLLM's own."""
    case = "vllm.gpt_oss.default"
    enc, _ = engine_encoding(DATA / "configs" / "gpt_oss.json", "vllm", length=131072)
    assert enc.length == 131072
    pos = TORCH[f"{case}.positions"]
    cos, _sin = _pairs(enc, pos)
    w = enc.inv_freq()[: cos.shape[1]]
    assert _within(cos, TORCH[f"{case}.cos"], pos, w, float(TORCH[f"{case}.cos"][0, 0])).all()
