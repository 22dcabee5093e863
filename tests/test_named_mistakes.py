"""identify names precision mistakes before free fits, and never identifies a broken table (issue 35, part 4).

The rotary caches are transformers' own (``LlamaRotaryEmbedding`` with its ``inv_freq`` buffer cast to bfloat16 /
float16, or with float16 position ids), made once in the side environment by tools/golden/make_issue35_golden.py;
each is also rebuilt here with plain NumPy in float32 as transformers computes it (the two must agree).
"""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

import posenc_cli as pe
from posenc_cli.encodings import make_encoding

from .conftest import ROOT, cli

GOLDEN = ROOT / "tests" / "data" / "golden" / "issue35"


def _hf_cos(n: int, head: int, inv_dtype: object = None, pos_dtype: object = None) -> np.ndarray:
    """``LlamaRotaryEmbedding.forward``'s cos in float32 (rope_theta 10000), plain NumPy: inv_freq in float32,
    then (a model cast) rounded to ``inv_dtype`` and widened back; positions rounded to ``pos_dtype``."""
    inv = (1.0 / np.float32(10000.0) ** (np.arange(0, head, 2, dtype=np.float32) / np.float32(head))).astype(np.float32)
    if inv_dtype is not None:
        inv = inv.astype(inv_dtype).astype(np.float32)
    t = np.arange(n).astype(pos_dtype if pos_dtype is not None else np.float32).astype(np.float32)
    freqs = np.multiply.outer(t, inv).astype(np.float32)
    return np.cos(np.concatenate([freqs, freqs], axis=1)).astype(np.float32)


CASES = {
    # golden file -> (the same table in plain NumPy, the parameter that names the mistake, its value, the words)
    "llama_inv_freq_bf16": (
        lambda: _hf_cos(1024, 16, inv_dtype=ml_dtypes.bfloat16),
        "inv_freq_dtype",
        "bfloat16",
        "inv_freq rounded to bfloat16",
    ),
    "llama_inv_freq_fp16": (
        lambda: _hf_cos(1024, 16, inv_dtype=np.float16),
        "inv_freq_dtype",
        "float16",
        "inv_freq rounded to float16",
    ),
    "llama_positions_fp16": (
        lambda: _hf_cos(2560, 8, pos_dtype=np.float16),
        "position_dtype",
        "float16",
        "positions rounded to float16",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_rounded_rope_is_named_not_fitted(name):
    numpy_table, param, value, words = CASES[name]
    golden = np.load(GOLDEN / f"{name}.npy")
    # the plain NumPy construction is transformers' arithmetic (float32 cos/sin within an ulp or two)
    np.testing.assert_allclose(numpy_table(), golden, rtol=0, atol=4e-7)
    found = pe.identify(golden)
    best = found.best
    assert best is not None, found.reason
    assert best.params.get(param) == value and best.params.get("scaling", "none") == "none", best.params
    assert best.params.get("base", 10000.0) == 10000.0 and "short_factor" not in best.params
    assert words in found.summary and best.mistake == {param: words}
    # the named reading regenerates the table within the float32 formula's error (or exactly)
    enc = make_encoding("rope", best.params)
    assert np.max(np.abs(enc.array("cos").astype(np.float64) - golden)) < 1e-4


def test_bf16_inv_freq_at_the_issue_size_is_not_a_longrope_fit(tmp_path):
    """The case of the issue: head 128, base 500000, bf16 inv_freq, 4096 rows: once 'identified as rope base
    434500 scaling longrope factor 1' with 64 fitted short factors."""
    d, base = 128, 500000.0
    inv = (1.0 / np.float32(base) ** (np.arange(0, d, 2, dtype=np.float32) / np.float32(d))).astype(np.float32)
    inv = inv.astype(ml_dtypes.bfloat16).astype(np.float32)
    freqs = np.multiply.outer(np.arange(4096, dtype=np.float32), inv).astype(np.float32)
    np.save(tmp_path / "bf16_inv.npy", np.cos(np.concatenate([freqs, freqs], axis=1)).astype(np.float32))
    code, out, _ = cli(["identify", str(tmp_path / "bf16_inv.npy")])
    text = out.decode()
    assert code == 0, text
    assert "rope base 500000 with inv_freq rounded to bfloat16" in " ".join(text.split()), text
    assert "longrope" not in text


def test_a_rounded_reading_is_refused_where_it_cannot_hold():
    with pytest.raises(pe.ParameterError, match="position_dtype"):
        make_encoding("rope", {"length": 70000, "dim": 8, "position_dtype": "float16"})
    # 2049 rounds to 2048 in float16 (ties to even): rows 2048 and 2049 share an angle
    cos = make_encoding("rope", {"length": 2051, "dim": 8, "position_dtype": "float16"}).array("cos")
    assert np.array_equal(cos[2048], cos[2049]) and not np.array_equal(cos[2049], cos[2050])


def _broken() -> dict[str, np.ndarray]:
    good = _hf_cos(512, 64)
    rng = np.random.default_rng(0)
    return {
        "zeros": np.zeros((512, 128), np.float32),
        "constant": np.full((512, 128), 0.5, np.float32),
        "repeated-row": np.tile(good[7:8], (512, 1)),
        "one-row": good[5:6],
        "shuffled": good[rng.permutation(512)],
        "noise": rng.standard_normal((512, 128)).astype(np.float32),
    }


BROKEN_WORDS = {
    "zeros": "every value of the table is 0",
    "constant": "every value of the table is 0.5",
    "repeated-row": "every row of the table is the same",
    "one-row": "has one row",
    "shuffled": "no analytic kind reproduces it",
    "noise": "no analytic kind reproduces it",
}


@pytest.mark.parametrize("name", sorted(BROKEN_WORDS))
def test_broken_tables_are_never_identified(tmp_path, name):
    path = tmp_path / f"{name}.npy"
    np.save(path, _broken()[name])
    code, out, err = cli(["identify", str(path)])
    text = " ".join(out.decode().split())
    assert code == 1 and "not identified" in text and BROKEN_WORDS[name] in text, (code, text, err)


def test_a_one_row_sinusoid_is_not_a_sinusoidal_table():
    """Row 0 of the paper's table (sin 0, cos 0, ...) was 'identified as sinusoidal'."""
    row = np.zeros((1, 64), np.float32)
    row[0, 1::2] = 1.0
    found = pe.identify(row)
    assert found.best is None and "one row" in found.reason


def test_falcon_rw_alibi_is_the_bias_transformers_adds():
    """transformers' build_alibi_tensor converts the positions to bfloat16 before the bfloat16 product (257 becomes
    256): posenc's falcon form is that bias, divided by sqrt(head_dim) (golden: heads 0, 1, 15, 31)."""
    enc = make_encoding("alibi", {"length": 1024, "dim": 32, "form": "falcon", "divide_by": 8.0})
    np.testing.assert_array_equal(enc.array("bias")[[0, 1, 15, 31], 0, :], np.load(GOLDEN / "falcon_rw_alibi.npy"))


def test_falcon_rw_alibi_from_its_config_matches_the_golden(tmp_path):
    cfg = ROOT / "tests" / "data" / "configs" / "positions" / "pos_falcon_rw_1b.json"
    out = tmp_path / "falcon.safetensors"
    code, _, err = cli(["generate", "--hf-config", str(cfg), "-o", str(out)])
    assert code == 0, err
    from safetensors.numpy import load_file

    bias = load_file(str(out))["bias"][[0, 1, 15, 31], 0, :]
    np.testing.assert_array_equal(bias, np.load(GOLDEN / "falcon_rw_alibi.npy"))


# ----- forms people use, named ------------------------------------------------------------------------------------
def _x_transformers(n: int, dim: int, theta: float = 10000.0) -> np.ndarray:
    """lucidrains/x-transformers ``ScaledSinusoidalEmbedding`` in float32, as torch computes it: ``scale =
    ones(1) * dim ** -0.5``, ``inv_freq = theta ** -(arange(dim // 2) / (dim // 2))``, ``emb = einsum('i, j -> i
    j', pos, inv_freq)``, ``cat((emb.sin(), emb.cos()), -1) * scale``."""
    half = dim // 2
    freq_seq = (np.arange(half, dtype=np.float32) / np.float32(half)).astype(np.float32)
    inv_freq = np.power(np.float32(theta), -freq_seq).astype(np.float32)
    emb = np.multiply.outer(np.arange(n, dtype=np.float32), inv_freq).astype(np.float32)
    scale = np.float32(dim**-0.5)
    return (np.concatenate([np.sin(emb), np.cos(emb)], axis=-1) * scale).astype(np.float32)


def _torchtune_cache(n: int, dim: int, base: float = 10000.0) -> np.ndarray:
    """torchtune ``RotaryPositionalEmbeddings.build_rope_cache`` in float32: ``theta = 1 / base ** (arange(0, dim,
    2)[: dim // 2].float() / dim)``, ``idx_theta = einsum('i, j -> ij', seq_idx, theta)``, ``cache =
    stack([cos(idx_theta), sin(idx_theta)], -1)`` (n x dim/2 x 2); Meta's ``precompute_freqs_cis`` is the same
    angles as ``polar(1, freqs)`` (complex64), whose ``view_as_real`` is this cache."""
    theta = (1.0 / np.power(np.float32(base), np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim))).astype(
        np.float32
    )
    idx_theta = np.multiply.outer(np.arange(n, dtype=np.float32), theta).astype(np.float32)
    return np.stack([np.cos(idx_theta), np.sin(idx_theta)], axis=-1).astype(np.float32)


def test_x_transformers_scaled_sinusoid_is_named():
    table = _x_transformers(512, 256)
    found = pe.identify(table)
    best = found.best
    assert best is not None, found.reason
    assert best.kind == "sinusoidal" and best.params["layout"] == "split" and best.params.get("base", 1e4) == 1e4
    assert best.params["scale"] == 256**-0.5 and "x-transformers" in found.summary and "dim ** -0.5" in found.summary
    # the scale is a parameter of the kind: its table is the unscaled one times the scale, rounded once
    plain = make_encoding("sinusoidal", {"length": 64, "dim": 256, "layout": "split", "dtype": "float64"})
    scaled = make_encoding("sinusoidal", {"length": 64, "dim": 256, "layout": "split", "scale": 256**-0.5})
    np.testing.assert_allclose(scaled.array("pe"), plain.array("pe") * 256**-0.5, rtol=0, atol=2**-24 * 256**-0.5)


def test_a_sinusoid_scaled_by_another_constant_reads_its_scale():
    table = (_x_transformers(256, 64) * np.float32(64**0.5) * np.float32(3.0)).astype(np.float32)
    best = pe.identify(table).best
    assert best is not None and best.params["scale"] == 3.0 and not best.convention


def test_torchtune_cache_and_meta_freqs_cis_are_named(tmp_path):
    cache = _torchtune_cache(1024, 64)
    np.save(tmp_path / "cache.npy", cache)
    code, out, _ = cli(["identify", str(tmp_path / "cache.npy")])
    text = " ".join(out.decode().split())
    assert code == 0 and "1024x32x2 float32" in text and "torchtune's RotaryPositionalEmbeddings cache" in text, text
    freqs_cis = (cache[..., 0] + 1j * cache[..., 1]).astype(np.complex64)  # torch.polar(ones, freqs)
    for source in (freqs_cis, cache):
        found = pe.identify(source)
        assert found.best is not None and found.best.params.get("cache") == "onnx", found.reason
        assert found.best.params.get("base", 1e4) == 1e4 and "freqs_cis" in found.summary
    np.save(tmp_path / "z.npy", freqs_cis)
    code, _, err = cli(["identify", str(tmp_path / "z.npy")])
    assert code == 2 and "view_as_real" in err and err.count("\n") == 1


def _tf_tutorial(position: int, d_model: int) -> np.ndarray:
    """The TensorFlow tutorial's ``get_angles`` / ``positional_encoding`` in its own NumPy (float64: an int64
    array over np.float32(d_model) promotes to float64), before its ``tf.cast``."""

    def get_angles(pos, i, d_model):
        angle_rates = 1 / np.power(10000, (2 * (i // 2)) / np.float32(d_model))
        return pos * angle_rates

    angle_rads = get_angles(np.arange(position)[:, np.newaxis], np.arange(d_model)[np.newaxis, :], d_model)
    angle_rads[:, 0::2] = np.sin(angle_rads[:, 0::2])
    angle_rads[:, 1::2] = np.cos(angle_rads[:, 1::2])
    return angle_rads


def test_tf_tutorial_float64_table_is_identified_within_float64_formula_error():
    table = _tf_tutorial(2048, 128)
    assert table.dtype == np.float64
    found = pe.identify(table)
    best = found.best
    assert best is not None, found.reason
    assert best.kind == "sinusoidal" and best.params.get("layout", "interleaved") == "interleaved"
    assert best.formula is not None and best.formula.compute == "float64" and "float64 formula" in found.summary
    # off by more than float64 arithmetic allows (base 10001): not identified as base 10000
    wrong = table.copy()
    wrong[:, 0::2] = np.sin(np.arange(2048)[:, None] / np.power(10001.0, np.arange(0, 128, 2) / 128.0))
    other = pe.identify(wrong).best
    assert other is None or other.params.get("base") != 10000.0


# ----- a model that permutes q/k: its HF cache is the same as its config says ---------------------------------------
def test_deepseek_v3_hf_cache_is_the_same_as_its_config(tmp_path):
    """transformers' DeepseekV3RotaryEmbedding gives the half layout (golden); DeepseekV3Attention de-interleaves q
    and k before rotate_half (apply_rotary_pos_emb_interleave, rope_interleave true), so the config reads as pairs
    (2k, 2k+1): the cache compares SAME, and the verdict says the model permutes q/k (the inventory's
    'deinterleave', observed in transformers' code)."""
    cache = GOLDEN / "deepseek_v3.safetensors"
    cfg = ROOT / "tests" / "data" / "configs" / "deepseek_v3.json"
    code, out, err = cli(["compare", str(cache), str(cfg), "-q"])
    line = " ".join((out.decode() + err).split())
    assert code == 0 and "SAME" in line, (line, err)
    assert "deepseek_v3 permutes q and k" in line and "apply_rotary_pos_emb_interleave" in line
    assert "1.36889" not in line and "attention" not in line
    code, out, _ = cli(["compare", str(cache), str(cfg), "--json"])
    found = json.loads(out)
    assert code == 0 and found["same"] and all("permutes q and k" in t["note"] for t in found["tensors"])
    # the interleaved table (what the scores see) is the config's own table: the same, with nothing to add
    own = pe.from_config(str(cfg), length=256)
    assert own.params()["layout"] == "interleaved"
    save_file({"cos": own.array("cos"), "sin": own.array("sin")}, str(tmp_path / "own.safetensors"))
    code, _out, err = cli(["compare", str(tmp_path / "own.safetensors"), str(cfg), "-q"])
    assert code == 0 and "SAME" in err and "permutes q and k" not in err, err


def test_a_layout_mistake_of_a_model_without_the_permutation_still_differs(tmp_path):
    """Only a model whose attention permutes q/k excuses the other layout: llama's config against an interleaved
    cache still differs, and says the layout."""
    cfg = ROOT / "tests" / "data" / "configs" / "llama.json"
    enc = pe.from_config(str(cfg), length=64, layout="interleaved")
    save_file({"cos": enc.array("cos"), "sin": enc.array("sin")}, str(tmp_path / "inter.safetensors"))
    code, _out, err = cli(["compare", str(tmp_path / "inter.safetensors"), str(cfg), "-q"])
    assert code == 1 and "DIFFERENT" in err and "layout interleaved" in err and "permutes q and k" not in err, err


def test_an_attention_factor_read_off_a_table_is_the_configs_mscale_ratio():
    """mscale = mscale_all_dim (DeepSeek-V3) gives an attention factor of 1 (transformers' _compute_yarn_parameters:
    get_mscale(f, mscale) / get_mscale(f, mscale_all_dim)); a table's reading of 1 (to its amplitude's
    tolerance) is no difference, and against a config without mscale the default 0.1 ln(40) + 1 is B's own."""
    from posenc_cli.inspect.diagnose.parameters import Reading, differences, parameter_steps

    common = {"length": 256, "dim": 64, "dtype": "float32", "base": 10000.0, "scaling": "yarn", "factor": 40.0,
              "original_max_position_embeddings": 4096}  # fmt: skip
    table = Reading("rope", {**common, "attention_factor": 1.000000001047963}, how="within float32", rows=256)
    config = Reading("rope", {**common, "mscale": 1.0, "mscale_all_dim": 1.0})
    assert not {"attention_factor", "mscale", "mscale_all_dim"} & set(differences(table, config))
    plain = Reading("rope", dict(common))
    steps = parameter_steps("A", "B", table, plain)
    text = " ".join(s.clause for s in steps)
    assert "B gives 1.36889" in text, text


# ----- nanochat: a rotate_half that flips the signs ------------------------------------------------------------------
NANOCHAT = {"model_type": "nanochat", "hidden_size": 768, "num_attention_heads": 6, "max_position_embeddings": 2048}


def test_nanochat_table_rotates_as_nanochat_does(tmp_path):
    """transformers' modeling_nanochat rotate_half is cat(x2, -x1) (karpathy/nanochat's apply_rotary_emb: y1 = x1
    cos + x2 sin): the scores rotate by -angle. posenc's nanochat table, applied with the usual rotate_half
    (cat(-x2, x1)), gives what transformers' own apply_rotary_pos_emb gives (golden)."""
    from safetensors.numpy import load_file

    golden = load_file(str(GOLDEN / "nanochat.safetensors"))
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(NANOCHAT))
    enc = pe.from_config(str(cfg), length=32)
    assert enc.params()["sin_sign"] == -1
    cos, sin = enc.array("cos").astype(np.float64), enc.array("sin").astype(np.float64)
    q = (np.arange(128, dtype=np.float64) + 1) / 128
    rotate_half = np.concatenate([-q[64:], q[:64]])  # HF's usual rotate_half, the convention posenc's tables follow
    mine = q * cos + rotate_half * sin
    np.testing.assert_allclose(mine, golden["rotated"], rtol=0, atol=2e-5)
    # the class's own cache is the usual one (positive sin): the same as the config says, and the verdict says why
    save_file({"cos": golden["cos"], "sin": golden["sin"]}, str(tmp_path / "hf.safetensors"))
    code, _out, err = cli(["compare", str(tmp_path / "hf.safetensors"), str(cfg), "-q"])
    line = " ".join(err.split())
    assert code == 0 and "SAME" in line and "nanochat's rotate_half flips the signs" in line, line
    code, out, _ = cli(["kinds", "--hf-config", str(cfg)])
    assert code == 0 and "sin_sign" in out.decode() and "flips the signs" in " ".join(out.decode().split())


def test_sin_sign_negates_sin_only():
    plain = make_encoding("rope", {"length": 300, "dim": 16})
    flipped = make_encoding("rope", {"length": 300, "dim": 16, "sin_sign": -1})
    assert np.array_equal(flipped.array("sin"), -plain.array("sin"))
    assert np.array_equal(flipped.array("cos"), plain.array("cos"))
    with pytest.raises(pe.ParameterError, match="sin_sign"):
        make_encoding("rope", {"length": 4, "dim": 4, "sin_sign": 0})


def test_nanochat_own_buffers_are_identified(tmp_path):
    """karpathy/nanochat's _precompute_rotary_embeddings: half-width cos/sin of float32 angles, cast to bfloat16,
    kept as cos[None, :, None, :] (plain NumPy as its torch code computes them)."""
    head, n = 64, 512
    inv = (1.0 / np.power(np.float32(10000), np.arange(0, head, 2, dtype=np.float32) / np.float32(head))).astype(
        np.float32
    )
    freqs = np.multiply.outer(np.arange(n, dtype=np.float32), inv).astype(np.float32)
    cos = np.cos(freqs).astype(ml_dtypes.bfloat16)[None, :, None, :]
    sin = np.sin(freqs).astype(ml_dtypes.bfloat16)[None, :, None, :]
    save_file({"cos": cos.copy(), "sin": sin.copy()}, str(tmp_path / "nanochat.safetensors"))
    code, out, _ = cli(["identify", str(tmp_path / "nanochat.safetensors")])
    text = " ".join(out.decode().split())
    assert code == 0 and "rope cache onnx rounded to bfloat16" in text and "nanochat" in text, text


def test_compare_explains_a_rounded_rope_by_its_named_mistake():
    """compare's diagnosis names the mistake before a free per-column fit (once: 'frequencies divided column by
    column (0.9964 .. 1.001)')."""
    code, _out, err = cli(["compare", str(GOLDEN / "llama_inv_freq_bf16.npy"), "rope:dim=16", "-q"])
    line = " ".join(err.split())
    assert code == 1 and "has inv_freq rounded to bfloat16" in line and "column by column" not in line, line
    code, _out, err = cli(["compare", str(GOLDEN / "llama_positions_fp16.npy"), "rope:dim=8", "-q"])
    line = " ".join(err.split())
    assert code == 1 and "has positions rounded to float16" in line, line


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16])
def test_angles_computed_in_half_precision_are_named(dtype):
    """torch.outer of half-precision positions and inv_freq (as under autocast), cos in float32, plain NumPy: the
    product of two half-precision values is exact in float32, then rounded to the half-precision dtype."""
    d, n = 64, 1024
    inv = (1.0 / np.power(np.float32(10000), np.arange(0, d, 2, dtype=np.float32) / np.float32(d))).astype(np.float32)
    t = np.arange(n).astype(dtype).astype(np.float32)
    ang = np.multiply.outer(t, inv.astype(dtype).astype(np.float32)).astype(dtype).astype(np.float32)
    cos = np.cos(np.concatenate([ang, ang], axis=1)).astype(np.float32)
    name = np.dtype(dtype).name if dtype is np.float16 else "bfloat16"
    found = pe.identify({"cos": cos})
    assert found.best is not None, found.reason
    assert found.best.params.get("angle_dtype") == name and f"angles computed in {name}" in found.summary
    with pytest.raises(pe.ParameterError, match="angle_dtype"):
        make_encoding("rope", {"length": 4, "dim": 4, "angle_dtype": name, "inv_freq_dtype": "float32"})
