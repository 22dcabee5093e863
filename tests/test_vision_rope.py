"""rope-2d: vision towers' 2-D rotary tables against the rotations each tower's own code applies.

tests/data/vision/rope_golden.npz (tools/golden/make_vision_rope_golden.py: transformers 5.24, timm 1.0.31) holds,
per tower and grid, ``rot[n, :, j]``: where the model's own apply function sends basis vector ``e_j`` of a head
of 8 at row ``n`` of the rows its blocks rotate, in their order. Here the rotation is rebuilt from posenc's cos
and sin with the pairing's definition (rotate_half or rotate-every-two, written below from the references), so a
wrong frequency, axis, pairing, row order, class-token rule or position start fails.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from posenc_cli import api
from posenc_cli.errors import ParameterError

from .each import each

GOLDEN = Path(__file__).parent / "data" / "vision" / "rope_golden.npz"
#: the rope-2d parameters of each tower's tiny golden model (its preset; EVA02's reference grid 224/14)
TOWERS = {
    "pixtral": {"preset": "pixtral"},
    "qwen2_vl": {"preset": "qwen2-vl"},
    "qwen2_5_vl": {"preset": "qwen2.5-vl"},
    "llama4": {"preset": "llama4"},
    "eva02": {"preset": "eva02", "ref_grid": "16x16"},
}
#: rows the model's apply function never sees (EVA rotates the rows after its class token: eva.py EvaAttention)
SKIPPED = {"eva02": 1}


@pytest.fixture(scope="module")
def golden() -> dict[str, np.ndarray]:
    with np.load(GOLDEN) as data:
        return {k: data[k] for k in data.files}


def rotations(cos: np.ndarray, sin: np.ndarray, layout: str) -> np.ndarray:
    """``R[n]`` with ``R[n] @ x = x * cos[n] + turn(x) * sin[n]``: ``turn`` is rotate_half ``cat(-x2, x1)`` or
    timm's ``rot`` / a complex product ``[-x1, x0, -x3, x2, ...]``."""
    d = cos.shape[1]
    turn = np.zeros((d, d))
    if layout == "half":
        for i in range(d // 2):
            turn[i, i + d // 2] = -1.0
            turn[i + d // 2, i] = 1.0
    else:
        for i in range(0, d, 2):
            turn[i, i + 1] = -1.0
            turn[i + 1, i] = 1.0
    return cos[:, :, None] * np.eye(d)[None] + sin[:, :, None] * turn[None]


def table(tower: str, grid: str, **more: object) -> tuple[np.ndarray, np.ndarray, str]:
    enc = api.generate("rope-2d", grid=grid, dim=8, dtype="float64", **TOWERS[tower], **more)
    return enc.array("cos"), enc.array("sin"), str(enc.layout)


def test_rotation_matches_the_towers_own_code(golden: dict[str, np.ndarray]) -> None:
    """Every tower at every grid of the goldens (:func:`tests.each.each`: each failure named)."""
    each(sorted(golden), lambda key: _rotation_matches_the_towers_own_code(golden, key))


def _rotation_matches_the_towers_own_code(golden: dict[str, np.ndarray], key: str) -> None:
    tower, grid = key.split("/")
    cos, sin, layout = table(tower, grid)
    skip = SKIPPED.get(tower, 0)
    assert np.all(cos[:skip] == 1.0) and np.all(sin[:skip] == 0.0)  # the class token is not rotated
    got = rotations(cos[skip:], sin[skip:], layout)
    # the models compute angles of at most ~40 rad in float32 (error ~40 * 2**-24 ~ 2.4e-6)
    np.testing.assert_allclose(got, golden[key], rtol=0, atol=5e-6)


def test_goldens_cover_native_and_three_more_grids_per_tower(golden: dict[str, np.ndarray]) -> None:
    for tower in TOWERS:
        grids = [k.split("/")[1] for k in golden if k.startswith(tower + "/")]
        assert len(grids) >= 4
        if tower != "llama4":  # Llama 4's rotary is square: idx = image_size // patch_size
            assert any(len(set(g.split("x"))) == 2 for g in grids)


def test_each_wrong_reading_of_qwen2_5_vl_fails(golden: dict[str, np.ndarray]) -> None:
    """Pixtral's frequencies on Qwen, width first, interleaved pairs, raster instead of merge order, no window
    order, positions from 1 (:func:`tests.each.each`: each failure named)."""
    mistakes = [{"frequencies": "alternate"}, {"axes": "wh"}, {"layout": "interleaved"}, {"merge": 1},
                {"window": 0}, {"position_start": 1.0}]  # fmt: skip
    each(mistakes, lambda mistake: _wrong_reading_fails(golden, mistake))


def _wrong_reading_fails(golden: dict[str, np.ndarray], mistake: dict) -> None:
    cos, sin, layout = table("qwen2_5_vl", "12x18", **mistake)
    assert np.abs(rotations(cos, sin, layout) - golden["qwen2_5_vl/12x18"]).max() > 1e-2


def test_numpy_built_mistaken_tables_fail(golden: dict[str, np.ndarray]) -> None:
    """Tables a port might write, built with plain numpy: 1-D rope over the flattened row index; Llama 4 with
    its class token first."""
    d, q = 8, 2
    want = golden["llama4/4x4"]
    freqs = 10000.0 ** (-np.arange(0, d, 2) / d)
    ang = np.arange(17)[:, None] * freqs[None, :]
    flat = rotations(np.repeat(np.cos(ang), 2, 1), np.repeat(np.sin(ang), 2, 1), "interleaved")
    assert np.abs(flat - want).max() > 0.1
    cos, sin, layout = table("llama4", "4x4")
    first = rotations(np.roll(cos, 1, 0), np.roll(sin, 1, 0), layout)  # class row moved to the front
    assert np.abs(first - want).max() > 0.1
    assert q == d // 4


def test_metadata_names_grid_extra_rows_and_pairing() -> None:
    meta = api.generate("rope-2d:preset=llama4", grid="16x16", dim=8).metadata()
    assert (meta["grid"], meta["grid_offset"], meta["extra_rows"], meta["pairing"]) == ("16x16", "0", "256:cls",
                                                                                        "interleaved")  # fmt: skip
    meta = api.generate("rope-2d:preset=eva02", grid="14x10", dim=8).metadata()
    assert (meta["grid_offset"], meta["extra_rows"], meta["length"]) == ("1", "0:cls", "141")
    assert api.generate("rope-2d:preset=qwen2.5-vl", grid="8x8", dim=8).metadata()["row_order"] == "window"


def test_float32_frequencies_are_the_models() -> None:
    """inv_freq_dtype=float32: HF's float32 ``1 / base ** (arange / n)`` values (Pixtral: even then odd)."""
    enc = api.generate("rope-2d:preset=pixtral", grid="2x2", dim=8, inv_freq_dtype="float32")
    full = np.float32(1) / np.float32(10000) ** (np.arange(0, 8, 2).astype(np.float32) / np.float32(8))
    np.testing.assert_array_equal(enc.array("inv_freq"), np.concatenate([full[0::2], full[1::2]]))


def test_bad_grids_are_one_line_errors() -> None:
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            ({"preset": "qwen2-vl", "grid": "5x4"}, "does not fit merge=2"),
            ({"grid": "0x4"}, "not a 2-D grid"),
            ({"grid": "4x4", "dim": 6}, "not a multiple of 4"),
            ({"grid": "4x4", "length": 17}, "does not match grid 4x4"),
        ],
        lambda case: _bad_grid_is_one_line_error(*case),
    )


def _bad_grid_is_one_line_error(params: dict, message: str) -> None:
    with pytest.raises(ParameterError, match=message) as err:
        api.generate("rope-2d", **{"dim": 8, **params})
    assert "\n" not in str(err.value)


# ----- the towers read from their configs -----------------------------------------------------------------------
CONFIGS = GOLDEN.parent / "configs"
#: the grids each golden tower ran on, read from the model's config: (config, options)
READINGS = {
    "pixtral": ("pixtral", {}),
    "qwen2_vl": ("qwen2_vl", {"tower": "vision"}),
    "qwen2_5_vl": ("qwen2_5_vl", {"tower": "vision"}),
    "llama4": ("llama4", {"tower": "vision"}),
}


def test_config_reading_gives_the_towers_rotation(golden: dict[str, np.ndarray]) -> None:
    """The tiny towers' own config.json (a tower's, or a multimodal model's with --tower vision) read by posenc at
    the golden grid: Llama 4's grid is its image_size // patch_size, so the config's image_size is set. Every
    such golden (:func:`tests.each.each`: each failure named)."""
    keys = [k for k in sorted(golden) if k.split("/")[0] in READINGS]
    each(keys, lambda key: _config_reading_gives_the_towers_rotation(golden, key))


def _config_reading_gives_the_towers_rotation(golden: dict[str, np.ndarray], key: str) -> None:
    import json

    tower, grid = key.split("/")
    name, opts = READINGS[tower]
    config = json.loads((CONFIGS / name / "config.json").read_text())
    if tower == "llama4":
        config["vision_config"]["image_size"] = 2 * int(grid.split("x")[0])
        enc = api.from_config(config, dtype="float64", **opts)
    else:
        enc = api.from_config(config, grid=grid, dtype="float64", **opts)
    assert enc.dim == 8
    got = rotations(enc.array("cos"), enc.array("sin"), str(enc.layout))
    np.testing.assert_allclose(got, golden[key], rtol=0, atol=5e-6)


def test_image_size_goes_through_the_patching() -> None:
    config = CONFIGS / "qwen2_5_vl"
    enc = api.from_config(config, tower="vision", image_size="56x84")  # patch 14: 4 x 6 patches
    assert (enc.grid, enc.window, enc.merge) == ("4x6", 4, 2)
    assert api.from_config(CONFIGS / "pixtral", image_size="9x7").grid == "4x3"  # patch 2, floored


def test_bad_tower_input_is_one_line() -> None:
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            ("qwen2_vl", {"tower": "vision", "image_size": "9x8"}, "is not a multiple of 4 pixels"),
            ("qwen2_vl", {"tower": "vision", "image_size": "1x8"}, "smaller than one patch"),
            ("qwen2_vl", {"tower": "vision", "grid": "3x4"}, "does not fit spatial_merge_size 2"),
            ("qwen2_vl", {"tower": "vision"}, "takes images of any size"),
            ("llama4", {"tower": "vision", "grid": "4x6"}, "fixed 4x4 grid"),
            ("pixtral", {"tower": "language"}, "has no language model"),
            ("qwen2_vl", {"tower": "audio"}, "is not a tower"),
        ],
        lambda case: _bad_tower_input_is_one_line(*case),
    )


def _bad_tower_input_is_one_line(config: str, opts: dict, message: str) -> None:
    with pytest.raises(ParameterError, match=message) as err:
        api.from_config(CONFIGS / config, **opts)
    assert "\n" not in str(err.value)


def test_language_model_keeps_its_mrope() -> None:
    enc = api.from_config(CONFIGS / "qwen2_vl", length=8)
    assert enc.KIND == "mrope"
    assert api.from_config(CONFIGS / "qwen2_vl", tower="language", length=8).KIND == "mrope"


# ----- a timm checkpoint's own config.json (EVA02 and timm's rotary ViTs) -----------------------------------------
TIMM_GOLDEN = Path(__file__).parent / "data" / "vision" / "timm_rope_golden.npz"
TIMM_CONFIGS = Path(__file__).parent / "data" / "vision" / "configs"
#: float32 angles of at most ~32 radians (a reference grid of 32 at frequency 1) are off by up to 32 * 2**-24;
#: sin and cos by as much: twice that
TIMM_ATOL = 2 * 32 * 2.0**-24


@pytest.fixture(scope="module")
def timm_golden() -> dict[str, np.ndarray]:
    with np.load(TIMM_GOLDEN) as data:
        return {k: data[k] for k in data.files}


def _timm_source(arch: str, *params: str):
    from posenc_cli.scopes import SourceOptions

    return api.open_source(str(TIMM_CONFIGS / f"timm_{arch}"), SourceOptions(params=params))


def test_timm_config_is_timms_rotary(timm_golden):
    each(
        [
            "eva02_tiny_patch14_224",
            "vit_pe_core_base_patch16_224",
            "vit_small_patch16_rope_224",
            "vit_betwixt_patch16_rope_reg4_gap_256",
        ],
        lambda c: _timm_config_is_timms_rotary(timm_golden, c),
    )


def _timm_config_is_timms_rotary(timm_golden: dict[str, np.ndarray], arch: str) -> None:
    """The config.json timm writes for the Hub, read as timm builds the architecture (data/timm_rotary.json): the
    sin and cos of every patch row equal what the model's own RotaryEmbeddingCat gives, at its native grid and at
    three others; the prefix tokens (class, registers) come first and unrotated."""
    sizes = sorted({k.split("/")[2] for k in timm_golden if k.startswith(f"timm/{arch}/")})
    assert len(sizes) == 4
    for size in sizes:
        src = _timm_source(arch, "tower=vision", f"grid={size}")
        n, p = src.lazy["cos"].shape[0], int(src.metadata["grid_offset"])
        cos, sin = (np.asarray(src.lazy[t].rows(0, n)) for t in ("cos", "sin"))
        np.testing.assert_allclose(cos[p:], timm_golden[f"timm/{arch}/{size}/cos"], rtol=0, atol=TIMM_ATOL)
        np.testing.assert_allclose(sin[p:], timm_golden[f"timm/{arch}/{size}/sin"], rtol=0, atol=TIMM_ATOL)
        assert (cos[:p] == 1).all() and (sin[:p] == 0).all() and p == (4 if "reg4" in arch else 1)
        # timm's built model holds the prefix: reg4_gap has no class token, four register tokens (eva.py l.708)
        assert src.metadata["extra_rows"] == ("0:reg0,1:reg1,2:reg2,3:reg3" if "reg4" in arch else "0:cls")


def test_register_rows_are_labelled_registers_not_class_rows() -> None:
    """``registers``: the last prefix rows are register tokens (timm: the class token, then reg_token), labelled
    reg0.. in extra_rows and left out of the position checks by that name; more registers than prefix rows is
    refused in one line."""
    from posenc_cli.encodings import make_encoding

    enc = make_encoding("rope-2d", {"preset": "eva02", "dim": 8, "grid": "2x3", "prefix_rows": 3, "registers": 2})
    assert enc.metadata()["extra_rows"] == "0:cls,1:reg0,2:reg1" and enc.length == 9
    rep = api.check(enc)
    assert rep.ok and rep.left_out is not None and "row 0 (cls)" in rep.left_out["text"]
    assert "row 1 (reg0)" in rep.left_out["text"] and "row 2 (reg1)" in rep.left_out["text"]
    with pytest.raises(ParameterError, match="registers=2 is more than prefix_rows=1"):
        make_encoding("rope-2d", {"preset": "eva02", "dim": 8, "grid": "2x3", "registers": 2})


def test_timm_numpy_built_mistakes_differ(timm_golden: dict[str, np.ndarray]) -> None:
    """Perception Encoder's grid is 'xy' (width on the first d/4 pairs) with offset 1 and reference 14x14: a plain
    numpy table of the 'ij' order, or without the offset, is caught by timm's own."""
    want = timm_golden["timm/vit_pe_core_base_patch16_224/10x12/sin"]
    freq = 10000.0 ** (-np.arange(16) / 16)  # dim 64: d/4 = 16 bands, temperature**(-k / 16)
    y, x = np.meshgrid(np.arange(10.0), np.arange(12.0), indexing="ij")

    def table(first: np.ndarray, second: np.ndarray) -> np.ndarray:
        ang = np.concatenate([first.reshape(-1, 1) * freq, second.reshape(-1, 1) * freq], axis=1)
        return np.repeat(np.sin(ang), 2, axis=1)

    right = table((x.ravel() + 1) * 14 / 12, (y.ravel() + 1) * 14 / 10)
    np.testing.assert_allclose(right, want, rtol=0, atol=TIMM_ATOL)  # the rule as posenc reads it, in plain numpy
    assert np.abs(table((y.ravel() + 1) * 14 / 10, (x.ravel() + 1) * 14 / 12) - want).max() > 0.5  # ij
    assert np.abs(table(x.ravel() * 14 / 12, y.ravel() * 14 / 10) - want).max() > 0.5  # no offset


def test_timm_config_reading_rules(tmp_path: Path) -> None:
    """Without a learned table (no pos_embed) the rotary is the default reading; --image-size goes through the
    patch; learned frequencies (rope_mixed) and DINOv3's rope are refused by name; an unmodelled model_args key
    too."""
    import json

    src = _timm_source("vit_small_patch16_rope_224", "image_size=320x224")
    assert (src.metadata["grid"], src.metadata["axes"], src.metadata["image_size"]) == ("20x14", "wh", "320x224")
    assert src.lazy["cos"].shape == (1 + 20 * 14, 64) and src.metadata["timm_architecture"].startswith("vit_small")
    config = json.loads((TIMM_CONFIGS / "timm_vit_small_patch16_rope_224" / "config.json").read_text())
    for arch, message in [("vit_small_patch16_rope_mixed_224", r"RotaryEmbeddingMixed \(rope_type mixed: learned"),
                          ("vit_small_patch16_dinov3", r"RotaryEmbeddingDinoV3 \(rope_type dinov3")]:  # fmt: skip
        (tmp_path / "config.json").write_text(json.dumps({**config, "architecture": arch}))
        with pytest.raises(ParameterError, match=message):
            api.open_source(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_args": {"ref_feat_shape": [8, 8]}}))
    with pytest.raises(ParameterError, match=r"model_args\.ref_feat_shape could change its rotary"):
        api.open_source(str(tmp_path))
