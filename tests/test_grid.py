"""2-D/3-D grid encodings against NumPy transcriptions of MAE, timm and positional-encodings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_cli.encodings import make_encoding
from posenc_cli.errors import ParameterError

from .each import each


def grid2d(grid: str, dim: int, **params) -> np.ndarray:
    return make_encoding("sinusoidal-2d", {"grid": grid, "dim": dim, "dtype": "float64", **params}).array()


def grid3d(grid: str, dim: int, **params) -> np.ndarray:
    return make_encoding("sinusoidal-3d", {"grid": grid, "dim": dim, "dtype": "float64", **params}).array()


# ----- facebookresearch/mae util/pos_embed.py, transcribed (dtype selectable; MAE itself uses float32) -------
def mae_1d_from_grid(embed_dim, pos, dtype):
    assert embed_dim % 2 == 0
    omega = np.arange(embed_dim // 2, dtype=dtype)
    omega /= embed_dim / 2.0
    omega = 1.0 / 10000**omega
    pos = pos.reshape(-1)
    out = np.einsum("m,d->md", pos, omega)
    return np.concatenate([np.sin(out), np.cos(out)], axis=1)


def mae_2d(embed_dim, grid_hw, cls_token=False, dtype=np.float64):
    """get_2d_sincos_pos_embed generalised from grid_size to (h, w) the usual way (reshape [2, 1, h, w])."""
    h, w = grid_hw
    grid_h = np.arange(h, dtype=dtype)
    grid_w = np.arange(w, dtype=dtype)
    grid = np.meshgrid(grid_w, grid_h)  # here w goes first
    grid = np.stack(grid, axis=0).reshape([2, 1, h, w])
    emb_h = mae_1d_from_grid(embed_dim // 2, grid[0], dtype)
    emb_w = mae_1d_from_grid(embed_dim // 2, grid[1], dtype)
    emb = np.concatenate([emb_h, emb_w], axis=1)
    if cls_token:
        emb = np.concatenate([np.zeros([1, embed_dim]), emb], axis=0)
    return emb


# ----- timm/layers/pos_embed_sincos.py build_sincos2d_pos_embed, transcribed to NumPy ----------------------
def timm_sincos2d(feat_shape, dim=64, temperature=10000.0, reverse_coord=False, interleave_sin_cos=False):
    assert dim % 4 == 0
    pos_dim = dim // 4
    bands = 1.0 / (temperature ** (np.arange(0, pos_dim, 1).astype(np.float64) / pos_dim))
    if reverse_coord:
        feat_shape = feat_shape[::-1]
    grid = np.stack(np.meshgrid(*[np.arange(s, dtype=np.float64) for s in feat_shape], indexing="ij"))
    grid = grid.reshape(2, -1).T
    pos2 = grid[:, :, None] * bands[None, :]
    stack_dim = 2 if interleave_sin_cos else 1
    return np.stack([np.sin(pos2), np.cos(pos2)], axis=stack_dim).reshape(grid.shape[0], -1)


# ----- tatp22/multidim-positional-encoding positional_encodings/torch_encodings.py, transcribed -------------
def get_emb(sin_inp):
    emb = np.stack((np.sin(sin_inp), np.cos(sin_inp)), axis=-1)
    return emb.reshape(*emb.shape[:-2], -1)


def pe_2d(x, y, org_channels):
    channels = int(np.ceil(org_channels / 4) * 2)
    inv_freq = 1.0 / (10000 ** (np.arange(0, channels, 2).astype(np.float64) / channels))
    emb_x = get_emb(np.einsum("i,j->ij", np.arange(x, dtype=np.float64), inv_freq))[:, None, :]
    emb_y = get_emb(np.einsum("i,j->ij", np.arange(y, dtype=np.float64), inv_freq))
    emb = np.zeros((x, y, channels * 2))
    emb[:, :, :channels] = emb_x
    emb[:, :, channels : 2 * channels] = emb_y
    return emb[:, :, :org_channels].reshape(x * y, org_channels)


def pe_3d(x, y, z, org_channels):
    channels = int(np.ceil(org_channels / 6) * 2)
    if channels % 2:
        channels += 1
    inv_freq = 1.0 / (10000 ** (np.arange(0, channels, 2).astype(np.float64) / channels))
    emb_x = get_emb(np.einsum("i,j->ij", np.arange(x, dtype=np.float64), inv_freq))[:, None, None, :]
    emb_y = get_emb(np.einsum("i,j->ij", np.arange(y, dtype=np.float64), inv_freq))[:, None, :]
    emb_z = get_emb(np.einsum("i,j->ij", np.arange(z, dtype=np.float64), inv_freq))
    emb = np.zeros((x, y, z, channels * 3))
    emb[:, :, :, :channels] = emb_x
    emb[:, :, :, channels : 2 * channels] = emb_y
    emb[:, :, :, 2 * channels :] = emb_z
    return emb[:, :, :, :org_channels].reshape(x * y * z, org_channels)


# ----- MAE ---------------------------------------------------------------------------------------------------
def test_mae_matches_transcription():
    each(
        [((14, 14), 768, False), ((14, 14), 64, True), ((6, 10), 32, False), ((9, 4), 16, True)],
        lambda c: _mae_matches_transcription(*c),
    )


def _mae_matches_transcription(hw, dim, cls_token):
    got = grid2d(f"{hw[0]}x{hw[1]}", dim, cls_token=cls_token)
    np.testing.assert_allclose(got, mae_2d(dim, hw, cls_token), rtol=0, atol=1e-12)
    # and MAE's own float32 arithmetic, to float32 angle rounding
    got32 = make_encoding("sinusoidal-2d", {"grid": f"{hw[0]}x{hw[1]}", "dim": dim, "cls_token": cls_token}).array()
    np.testing.assert_allclose(got32, mae_2d(dim, hw, cls_token, np.float32), rtol=0, atol=2e-6)


def test_mae_axis_order_is_w_first():
    # row h*W + w; column 0 is sin(w * 1) (MAE's "emb_h" half really encodes w, mae#18), column D/2 sin(h * 1)
    pe = grid2d("3x5", 8)
    h, w = 2, 3
    row = pe[h * 5 + w]
    np.testing.assert_allclose(row, [np.sin(w), np.sin(w / 100), np.cos(w), np.cos(w / 100),
                                     np.sin(h), np.sin(h / 100), np.cos(h), np.cos(h / 100)], atol=1e-15)  # fmt: skip


# ----- timm --------------------------------------------------------------------------------------------------
def test_timm_matches_transcription():
    each([((14, 14), 384), ((7, 11), 64), ((1, 5), 8)], lambda c: _timm_matches_transcription(*c))


def _timm_matches_transcription(hw, dim):
    got = grid2d(f"{hw[0]}x{hw[1]}", dim, preset="timm")
    np.testing.assert_allclose(got, timm_sincos2d(list(hw), dim), rtol=0, atol=1e-12)


def test_timm_interleave_sin_cos_is_grid_order_split():
    got = grid2d("5x7", 32, axis_order="grid", layout="split")
    np.testing.assert_allclose(got, timm_sincos2d([5, 7], 32, interleave_sin_cos=True), rtol=0, atol=1e-12)


def test_timm_temperature_is_base():
    got = grid2d("4x6", 16, preset="timm", base=100.0)
    np.testing.assert_allclose(got, timm_sincos2d([4, 6], 16, temperature=100.0), rtol=0, atol=1e-12)


# ----- positional-encodings ----------------------------------------------------------------------------------
def test_positional_encodings_2d():
    each(
        [((14, 14), 64), ((5, 9), 6), ((5, 9), 7), ((3, 4), 10), ((4, 3), 1), ((8, 2), 3)],
        lambda c: _positional_encodings_2d(*c),
    )


def _positional_encodings_2d(xy, ch):
    got = grid2d(f"{xy[0]}x{xy[1]}", ch, preset="positional-encodings")
    assert got.shape == (xy[0] * xy[1], ch)
    np.testing.assert_allclose(got, pe_2d(*xy, ch), rtol=0, atol=1e-12)


def test_positional_encodings_3d():
    each(
        [((2, 3, 4), 12), ((4, 5, 3), 5), ((3, 3, 3), 7), ((2, 2, 6), 64), ((5, 1, 2), 1)],
        lambda c: _positional_encodings_3d(*c),
    )


def _positional_encodings_3d(xyz, ch):
    got = grid3d("x".join(map(str, xyz)), ch)  # positional-encodings is the 3-D default
    assert got.shape == (int(np.prod(xyz)), ch)
    np.testing.assert_allclose(got, pe_3d(*xyz, ch), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(grid3d("x".join(map(str, xyz)), ch, preset="positional-encodings"), got)


# ----- length, cls row, refusals -----------------------------------------------------------------------------
def test_length_derived_or_checked():
    enc = make_encoding("sinusoidal-2d", {"grid": "8x12", "dim": 16})
    assert enc.length == 96 and enc.shape == (8, 12)
    assert make_encoding("sinusoidal-2d", {"grid": "8x12", "dim": 16, "length": 96}).length == 96
    assert make_encoding("sinusoidal-2d", {"grid": "8x12", "dim": 16, "cls_token": True}).length == 97
    assert make_encoding("sinusoidal-3d", {"grid": "2x3x4", "dim": 6}).length == 24
    with pytest.raises(
        ParameterError, match=r"length=96 does not match grid 8x12 = 96 cells \+ 1 \[CLS\] row = 97 rows"
    ):
        make_encoding("sinusoidal-2d", {"grid": "8x12", "dim": 16, "length": 96, "cls_token": True})
    with pytest.raises(
        ParameterError,
        match=r"length=100 does not match grid 8x12 = 96 cells = 96 rows; omit length or pass length=96",
    ):
        make_encoding("sinusoidal-2d", {"grid": "8x12", "dim": 16, "length": 100})


def test_square_grid_from_length():
    enc = make_encoding("sinusoidal-2d", {"length": 197, "dim": 16, "cls_token": True})
    assert enc.shape == (14, 14)
    np.testing.assert_array_equal(
        enc.array(), make_encoding("sinusoidal-2d", {"grid": "14x14", "dim": 16, "cls_token": True}).array()
    )
    with pytest.raises(ParameterError, match=r"sinusoidal-2d needs grid=HxW"):
        make_encoding("sinusoidal-2d", {"length": 10, "dim": 16})
    with pytest.raises(ParameterError, match=r"sinusoidal-3d needs grid=TxHxW"):
        make_encoding("sinusoidal-3d", {"length": 8, "dim": 6})


def test_cls_row_is_zero():
    pe = grid2d("3x3", 8, cls_token=True)
    assert pe.shape == (10, 8)
    assert not pe[0].any()
    np.testing.assert_array_equal(pe[1:], grid2d("3x3", 8))


def test_refusals():
    each(
        [
            (
                "sinusoidal-2d",
                {"grid": "14x14", "dim": 66},
                r"channels=exact needs dim divisible by 4 .* got dim=66; pass dim=68 or channels=ceil",
            ),
            (
                "sinusoidal-2d",
                {"grid": "14", "dim": 64},
                r"grid='14' is not a 2-D grid HxW of positive sizes; use e.g. grid=14x14",
            ),
            ("sinusoidal-2d", {"grid": "0x4", "dim": 64}, r"grid='0x4' is not a 2-D grid"),
            ("sinusoidal-3d", {"grid": "14x14", "dim": 64}, r"grid='14x14' is not a 3-D grid TxHxW .* grid=8x14x14"),
            (
                "sinusoidal-3d",
                {"grid": "2x2x2", "dim": 8, "channels": "exact"},
                r"needs dim divisible by 6 .* pass dim=12",
            ),
            ("sinusoidal-2d", {"grid": "4x4"}, r"needs dim: pass dim=128, say"),
            (
                "sinusoidal-2d",
                {"grid": "4x4", "dim": 8, "layout": "zigzag"},
                r"unknown layout 'zigzag' for sinusoidal-2d; choose from: split, interleaved, sin-block",
            ),
        ],
        lambda c: _refusals(*c),
    )


def _refusals(kind, params, message):
    with pytest.raises(ParameterError, match=message):
        make_encoding(kind, params)


@settings(max_examples=25, deadline=None)
@given(
    h=st.integers(1, 9), w=st.integers(1, 9), cls_token=st.booleans(),
    preset=st.sampled_from(["mae", "timm", "positional-encodings"]), data=st.data(),
)  # fmt: skip
def test_rows_match_array_2d(h, w, cls_token, preset, data):
    enc = make_encoding("sinusoidal-2d", {"grid": f"{h}x{w}", "dim": 12, "cls_token": cls_token, "preset": preset})
    full = enc.array()
    a = data.draw(st.integers(0, enc.length))
    b = data.draw(st.integers(a, enc.length))
    np.testing.assert_array_equal(enc.rows("pe", a, b), full[a:b])


@settings(max_examples=15, deadline=None)
@given(t=st.integers(1, 5), h=st.integers(1, 5), w=st.integers(1, 5), dim=st.integers(1, 20), data=st.data())
def test_rows_match_array_3d(t, h, w, dim, data):
    enc = make_encoding("sinusoidal-3d", {"grid": f"{t}x{h}x{w}", "dim": dim})
    full = enc.array()
    a = data.draw(st.integers(0, enc.length))
    b = data.draw(st.integers(a, enc.length))
    np.testing.assert_array_equal(enc.rows("pe", a, b), full[a:b])
