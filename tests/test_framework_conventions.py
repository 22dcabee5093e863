"""Framework conventions: ALiBi slopes as each framework computes them, built with plain NumPy from each framework's own formula
(the paper's fairseq get_slopes, MPT's gen_slopes, MLX's nn.ALiBi.create_alibi_slope up to ml-explore/mlx
3576b547), generated (``alibi:preset=mlx``) and named by identify."""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc_cli as pe

from .each import each


def paper_slopes(n: int) -> list[float]:
    def pow2(k: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(k) - 3)))
        return [start * start**i for i in range(k)]

    if math.log2(n).is_integer():
        return pow2(n)
    c = 2 ** math.floor(math.log2(n))
    return pow2(c) + paper_slopes(2 * c)[0::2][: n - c]


def mpt_slopes(n: int, alibi_bias_max: float = 8.0) -> np.ndarray:
    big = 2 ** math.ceil(math.log2(n))
    m = np.arange(1, big + 1, dtype=np.float32) * np.float32(alibi_bias_max / big)
    slopes = np.float32(1.0) / np.power(np.float32(2), m)
    if big != n:
        slopes = np.concatenate([slopes[1::2], slopes[::2]])[:n]
    return slopes


def mlx_slopes(n: int) -> np.ndarray:
    x = (2**8) ** (1 / n)
    return np.power(x, -np.arange(1, n + 1, dtype=np.float64))


def symmetric_bias(slopes, n: int) -> np.ndarray:
    d = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    return (-np.asarray(slopes, dtype=np.float64)[:, None, None] * d).astype(np.float32)


def test_generated_slopes_follow_each_framework() -> None:
    """Every case (:func:`tests.each.each`: each failure named)."""
    each([1, 2, 3, 5, 6, 8, 12, 16, 20, 24, 40, 64], lambda case: _generated_slopes_follow_each_framework(case))


def _generated_slopes_follow_each_framework(heads) -> None:
    np.testing.assert_allclose(
        pe.generate("alibi", length=2, dim=heads).array("slopes"), paper_slopes(heads), rtol=1e-7
    )
    np.testing.assert_allclose(mpt_slopes(heads), paper_slopes(heads), rtol=1e-6)  # MPT's rule: the paper's values
    mlx = pe.generate("alibi", length=2, dim=heads, preset="mlx").array("slopes")
    np.testing.assert_allclose(mlx, mlx_slopes(heads), rtol=1e-7)
    if heads & (heads - 1) == 0:
        np.testing.assert_allclose(mlx_slopes(heads), paper_slopes(heads), rtol=1e-12)
    else:
        assert not np.allclose(mlx_slopes(heads), paper_slopes(heads), rtol=1e-3)


def test_identify_names_mlx_slopes_for_12_heads() -> None:
    found = pe.identify(symmetric_bias(mlx_slopes(12), 48))
    assert found.best is not None and found.best.preset == "mlx"
    assert "slopes as MLX computes them for 12 heads" in found.summary
    assert found.command == "posenc generate --kind alibi --len 48 --dim 12 -p preset=mlx"


def test_identify_names_paper_slopes_for_12_heads() -> None:
    found = pe.identify(symmetric_bias(paper_slopes(12), 48))
    assert found.best is not None and found.best.params.get("slopes", "paper") == "paper"
    assert "slopes as the paper, HF Bloom and MPT compute them for 12 heads" in found.summary


def test_powers_of_two_say_the_frameworks_agree() -> None:
    found = pe.identify(symmetric_bias(mlx_slopes(8), 32))
    assert found.best is not None and found.best.preset is None
    assert "the paper, HF Bloom, MPT and MLX agree" in found.summary


def test_other_slopes_are_not_named_as_a_framework() -> None:
    rng = np.random.default_rng(0)
    found = pe.identify(symmetric_bias(np.sort(rng.uniform(0.01, 0.9, 12))[::-1], 32))
    assert found.best is None or "MLX" not in found.summary


# ----- RoPE pairings, by the frameworks that use them --------------------------------------------------------------
def rope_cos(n: int, d: int, layout: str) -> np.ndarray:
    w = 10000.0 ** (-np.arange(0, d, 2) / d)
    ang = np.arange(n, dtype=np.float64)[:, None] * w
    cols = np.concatenate([ang, ang], axis=1) if layout == "half" else np.repeat(ang, 2, axis=1)
    return np.cos(cols).astype(np.float32)


def test_identify_names_the_pairing_frameworks() -> None:
    half = pe.identify(rope_cos(64, 32, "half"))
    assert "pairs (k, k + d/2) as HF rotate_half and GPT-NeoX rotate them" in half.summary
    inter = pe.identify(rope_cos(64, 32, "interleaved"))
    assert "pairs (2k, 2k+1) as GPT-J, llama.cpp NORM and MLX traditional=True rotate them" in inter.summary


def test_compare_names_the_pairing_frameworks() -> None:
    cmp = pe.compare(rope_cos(64, 32, "interleaved"), rope_cos(64, 32, "half"))
    diag = cmp.tensors[0].diagnosis
    # in the parameters first (both tables identified), then the column map that undoes it
    assert "pairs (2k, 2k+1) as GPT-J, llama.cpp NORM and MLX traditional=True rotate them" in diag.best.summary
    assert "pairs (k, k + d/2) as HF rotate_half and GPT-NeoX rotate them" in diag.best.summary
    assert "GPT-J, llama.cpp NORM and MLX traditional=True -> HF rotate_half's layout" in diag.explanations[1].summary


def test_compare_names_the_slope_rules() -> None:
    """An MLX-slope bias against posenc's default (the paper's rule): the diagnosis names both frameworks."""
    cmp = pe.compare(symmetric_bias(mlx_slopes(12), 24), "alibi")
    assert not cmp.same
    diag = cmp.tensors[0].diagnosis
    # the slopes parameter, then the per-head factors that undo it: both name the frameworks
    assert [e.name for e in diag.explanations] == ["parameter-other", "head-scale"]
    for why in diag.explanations:
        assert "slopes as MLX computes them for 12 heads" in why.summary
        assert "as the paper, HF Bloom and MPT compute them for 12 heads" in why.summary
    assert pe.compare(symmetric_bias(mlx_slopes(12), 24), "alibi:preset=mlx").same


def test_a_model_form_keeps_its_own_slope_rule():
    """form=bloom/falcon/mpt compute their model's slopes; slopes=geometric (MLX's rule) cannot apply to them and
    is refused by name rather than ignored."""
    import posenc_cli as pe
    from posenc_cli.errors import ParameterError

    for form in ("bloom", "falcon", "mpt"):
        with pytest.raises(ParameterError, match=rf"^slopes=geometric applies to form=paper; form={form} has"):
            pe.generate("alibi", length=4, dim=12, form=form, slopes="geometric")
    assert pe.generate("alibi", length=4, dim=12, form="paper", slopes="geometric").slopes == "geometric"


# ----- the models' own ALiBi tensors (heads x 1 x len), built with plain NumPy as transformers builds them ---------
def hf_bloom_slopes(heads: int) -> np.ndarray:
    """transformers' build_alibi_tensor / _get_alibi_slopes, in float32."""
    c = 2 ** math.floor(math.log2(heads))
    base = np.float32(2 ** (-(2 ** -(math.log2(c) - 3))))
    slopes = [base ** np.float32(k) for k in range(1, c + 1)]
    if c != heads:
        extra = np.float32(2 ** (-(2 ** -(math.log2(2 * c) - 3))))
        slopes += [extra ** np.float32(k) for k in range(1, 1 + 2 * min(c, heads - c), 2)]
    return np.array(slopes, dtype=np.float32)


def hf_mpt_slopes(heads: int, alibi_bias_max: float = 8.0) -> np.ndarray:
    """transformers' build_mpt_alibi_tensor slopes, in float32."""
    c = 2 ** math.ceil(math.log2(heads))
    m = np.arange(1, c + 1, dtype=np.float32) * np.float32(alibi_bias_max / c)
    slopes = (np.float32(1.0) / np.power(np.float32(2.0), m)).astype(np.float32)
    if c != heads:
        slopes = np.concatenate([slopes[1::2], slopes[::2]])[:heads]
    return slopes


def test_identify_names_the_models_own_alibi_tensors():
    each([12, 16], _identify_names_the_models_own_alibi_tensors)


def _identify_names_the_models_own_alibi_tensors(heads: int) -> None:
    """Bloom's key vector +slope*j, Falcon's bfloat16 one divided by sqrt(head_dim) and MPT's slope*(j - L + 1)
    are named as those models' forms, with their parameters."""
    import ml_dtypes

    n = 9
    j = np.arange(n)
    bloom = (hf_bloom_slopes(heads)[:, None] * j.astype(np.float32)).astype(np.float32)[:, None, :]
    found = pe.identify({"bias": bloom})
    assert found.best is not None and found.best.params.get("form") == "bloom", found.summary
    assert f"Bloom's key-position vector +slope*j (HF BloomModel build_alibi_tensor) for {heads} heads" in found.summary

    bf = ml_dtypes.bfloat16
    s16 = hf_bloom_slopes(heads).astype(bf).astype(np.float32)
    falcon = ((s16[:, None] * j).astype(bf).astype(np.float32) / np.float32(8.0)).astype(np.float32)[:, None, :]
    found = pe.identify({"bias": falcon})
    assert found.best is not None and found.best.params.get("form") == "falcon", found.summary
    assert found.best.params.get("divide_by") == 8.0 and "Falcon's bfloat16" in found.summary

    for b in (8.0, 16.0):
        mpt = (hf_mpt_slopes(heads, b)[:, None] * (j - (n - 1)).astype(np.float32)).astype(np.float32)[:, None, :]
        found = pe.identify({"bias": mpt})
        assert found.best is not None and found.best.params.get("form") == "mpt", found.summary
        assert found.best.params.get("max_bias", 8.0) == b and "MPT's (j - len + 1)*slope" in found.summary


def test_a_heads_by_one_table_that_is_no_line_is_not_named() -> None:
    rng = np.random.default_rng(3)
    noise = rng.uniform(0, 1, (12, 1, 9)).astype(np.float32)
    noise[:, 0, 0] = 0  # zero at the first key, like Bloom's, but no line
    found = pe.identify({"bias": noise})
    assert found.best is None
