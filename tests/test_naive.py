"""The naive baselines: the seed's binary table, index and normalized values, offsets, refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_cli.encodings import make_encoding
from posenc_cli.errors import ParameterError

from .each import each

#: The seed material's table: positions 0..15 as 4 bits, most significant first.
SEED_BINARY_4 = np.array(
    [
        [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0], [0, 0, 1, 1],
        [0, 1, 0, 0], [0, 1, 0, 1], [0, 1, 1, 0], [0, 1, 1, 1],
        [1, 0, 0, 0], [1, 0, 0, 1], [1, 0, 1, 0], [1, 0, 1, 1],
        [1, 1, 0, 0], [1, 1, 0, 1], [1, 1, 1, 0], [1, 1, 1, 1],
    ]
)  # fmt: skip


def table(kind: str, length: int, dim: int, **params) -> np.ndarray:
    return make_encoding(kind, {"length": length, "dim": dim, "dtype": "float64", **params}).array()


def test_binary_seed_table():
    np.testing.assert_array_equal(table("binary", 16, 4), SEED_BINARY_4)
    np.testing.assert_array_equal(table("binary", 16, 4)[5], [0, 1, 0, 1])


def test_binary_wide_and_offset():
    # dim 10, positions 1000..1003: the bits of t, written out by hand from format(t, "010b")
    got = table("binary", 4, 10, offset=1000)
    want = [[int(b) for b in format(t, "010b")] for t in range(1000, 1004)]
    np.testing.assert_array_equal(got, want)
    # columns beyond 63 bits are zero for small positions
    wide = table("binary", 3, 70, offset=5)
    assert not wide[:, :67].any()
    np.testing.assert_array_equal(wide[:, 67:], [[1, 0, 1], [1, 1, 0], [1, 1, 1]])


def test_binary_refuses_positions_beyond_dim_bits():
    with pytest.raises(
        ParameterError, match=r"dim=4 holds positions below 16, but the last position is 16; pass dim=5 or more"
    ):
        make_encoding("binary", {"length": 17, "dim": 4})


def test_index_values():
    got = table("index", 5, 3, offset=7)
    np.testing.assert_array_equal(got, np.repeat(np.arange(7, 12)[:, None], 3, axis=1))


def test_normalized_values():
    np.testing.assert_array_equal(table("normalized", 5, 2), [[0, 0], [0.25, 0.25], [0.5, 0.5], [0.75, 0.75], [1, 1]])
    np.testing.assert_array_equal(table("normalized", 1, 3), [[0, 0, 0]])
    # with an offset the last position is still 1.0: offset 2, len 3 -> 2/4, 3/4, 4/4
    np.testing.assert_array_equal(table("normalized", 3, 1, offset=2)[:, 0], [0.5, 0.75, 1.0])
    # float32 output is the correctly rounded quotient
    got = make_encoding("normalized", {"length": 4, "dim": 1}).array()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got[:, 0], np.float32([0.0, 1 / 3, 2 / 3, 1.0]))


def test_needs_dim_and_rejects_negative_offset():
    each(["index", "normalized", "binary"], _needs_dim_and_rejects_negative_offset)


def _needs_dim_and_rejects_negative_offset(kind):
    with pytest.raises(ParameterError, match=r"needs dim: pass dim=128, say"):
        make_encoding(kind, {"length": 4})
    with pytest.raises(ParameterError, match=r"offset=-1 is out of range"):
        make_encoding(kind, {"length": 4, "dim": 4, "offset": -1})


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(["index", "normalized", "binary"]), length=st.integers(1, 300), data=st.data())
def test_rows_match_array(kind, length, data):
    enc = make_encoding(kind, {"length": length, "dim": 9})
    a = data.draw(st.integers(0, length))
    b = data.draw(st.integers(a, length))
    np.testing.assert_array_equal(enc.rows("pe", a, b), enc.array()[a:b])
