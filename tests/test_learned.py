"""Learned initial tables: distribution, truncation, the documented per-row Philox stream, golden values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_cli.encodings import make_encoding
from posenc_cli.errors import ParameterError

from .each import each


def learned(length: int, dim: int, **params):
    return make_encoding("learned", {"length": length, "dim": dim, "dtype": "float64", **params})


def documented_row(seed: int, row: int, dim: int, std: float = 0.02, truncation: float | None = None) -> np.ndarray:
    """The stream exactly as the module docstring specifies it, built from NumPy primitives directly."""
    key = np.random.SeedSequence(seed).generate_state(2, np.uint64)
    g = np.random.Generator(np.random.Philox(key=key, counter=row << 128))
    z = g.standard_normal(dim)
    if truncation is not None:
        while (np.abs(z) > truncation).any():
            bad = np.flatnonzero(np.abs(z) > truncation)
            z[bad] = g.standard_normal(bad.size)
    return std * z


def test_distribution_normal():
    pe = learned(2000, 64).array()
    assert abs(pe.mean()) < 0.02 * 5 / np.sqrt(pe.size)  # within 5 standard errors of 0
    assert pe.std() == pytest.approx(0.02, rel=0.01)
    assert np.abs(pe).max() > 0.02 * 4  # an untruncated normal of 128k draws reaches past 4 std


def test_distribution_truncated():
    pe = learned(2000, 64, init="truncated-normal").array()
    assert np.abs(pe).max() <= 2 * 0.02
    assert np.abs(pe).max() > 0.0399  # the bound is reached, not undershot
    # the standard deviation of N(0, 1) truncated to [-2, 2] is 0.8796256610342398
    assert pe.std() == pytest.approx(0.02 * 0.8796256610342398, rel=0.01)
    assert abs(pe.mean()) < 0.02 * 5 / np.sqrt(pe.size)


def test_std_and_truncation_parameters():
    pe = learned(500, 32, init="truncated-normal", std=1.5, truncation=1.0).array()
    assert np.abs(pe).max() <= 1.5
    assert pe.std() == pytest.approx(1.5 * 0.5395386, rel=0.03)  # sd of N(0,1) cut at +-1


def test_rows_follow_documented_stream():
    each([0, 1, 17, 999], _rows_follow_documented_stream)


def _rows_follow_documented_stream(row):
    np.testing.assert_array_equal(learned(1000, 24).rows("pe", row, row + 1)[0], documented_row(0, row, 24))
    enc = learned(1000, 24, seed=7, init="truncated-normal", truncation=0.5)
    np.testing.assert_array_equal(enc.rows("pe", row, row + 1)[0], documented_row(7, row, 24, truncation=0.5))


def test_golden_values():
    # Pinned from NumPy 2.x: a change here means NumPy changed Generator.standard_normal's stream.
    np.testing.assert_array_equal(
        learned(1001, 4).rows("pe", 0, 1)[0],
        [-0.0041194805725844755, -0.0025768990186925515, -0.005795797509818251, -0.0254388656914779],
    )
    np.testing.assert_array_equal(
        learned(1001, 4).rows("pe", 1000, 1001)[0],
        [0.028314744655978, -0.02295131485043189, -0.017368230412143446, 0.01589384919991903],
    )
    enc = learned(3, 4, seed=12345, init="truncated-normal", truncation=0.5, std=1.0)
    np.testing.assert_array_equal(
        enc.rows("pe", 2, 3)[0], [0.4767230996127083, 0.10035719154799853, -0.13840821426720426, 0.249397132661673]
    )


def test_reproducible_and_seed_dependent():
    a = learned(300, 16, seed=3).array()
    np.testing.assert_array_equal(a, learned(300, 16, seed=3).array())
    assert not np.array_equal(a, learned(300, 16, seed=4).array())
    # a row does not depend on the table's length, so longer tables extend shorter ones
    np.testing.assert_array_equal(learned(500, 16, seed=3).array()[:300], a)


def test_dtype_is_rounded_float64():
    a64 = learned(100, 8).array()
    a32 = make_encoding("learned", {"length": 100, "dim": 8}).array()
    assert a32.dtype == np.float32
    np.testing.assert_array_equal(a32, a64.astype(np.float32))


@settings(max_examples=30, deadline=None)
@given(length=st.integers(1, 400), init=st.sampled_from(["normal", "truncated-normal"]), data=st.data())
def test_block_independence(length, init, data):
    enc = make_encoding("learned", {"length": length, "dim": 5, "init": init, "seed": 11})
    full = enc.array()
    a = data.draw(st.integers(0, length))
    b = data.draw(st.integers(a, length))
    np.testing.assert_array_equal(enc.rows("pe", a, b), full[a:b])


def test_presets_and_refusals():
    assert learned(2, 2, preset="vit").truncation == 100.0
    assert learned(2, 2, preset="bert-tf").init == "truncated-normal"
    with pytest.raises(
        ParameterError, match=r"unknown init 'uniform' for learned; choose from: normal, truncated-normal"
    ):
        learned(2, 2, init="uniform")
    with pytest.raises(ParameterError, match=r"std=0.0 is out of range"):
        learned(2, 2, std=0)
    with pytest.raises(ParameterError, match=r"truncation=0.05 rejects nearly every draw"):
        learned(2, 2, init="truncated-normal", truncation=0.05)
    with pytest.raises(ParameterError, match=r"seed=-1 is out of range"):
        learned(2, 2, seed=-1)
