"""The vision tables read last: Qwen3-VL's learned grid (gathered per patch by taps, in spatial-merge order), BEiT's
and Data2Vec-Vision's relative bias at other image sizes, and ViViT / TimeSformer at other frame counts.

Goldens come from each model's own code (transformers 5.24, torch 2.13), run once in the side environment by
tools/golden/vision_gaps.py: tiny random models (tests/data/models/vision_qwen3_*, tests/data/vision/models/
tiny_beit_rect; the BEiT, ViViT and TimeSformer models already committed) and, per grid, image size or frame
count, what the model's forward adds (or the error its code raised there).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.errors import ParameterError
from posenc_cli.inspect.diagnose.resampling import noise
from posenc_cli.models.config_file import load_config
from posenc_cli.models.vision import claims, observed, reading, vision_table
from posenc_cli.models.vision_bias import tables

from .conftest import cli

DATA = Path(__file__).resolve().parent / "data"
MODELS = DATA / "models"
BIAS_MODELS = DATA / "vision" / "models"


@cache
def goldens() -> dict[str, np.ndarray]:
    with np.load(DATA / "vision" / "gaps_goldens.npz") as z:
        return {k: z[k] for k in z.files}


def _keys(prefix: str) -> list[list[str]]:
    return [k.split("|") for k in goldens() if k.startswith(prefix + "|")]


def _weights(path: Path, suffix: str) -> np.ndarray:
    from safetensors.numpy import load_file

    found = [v for k, v in load_file(str(path / "model.safetensors")).items() if k.endswith(suffix)]
    assert len(found) == 1, suffix
    return found[0]


def test_goldens_are_the_side_environments() -> None:
    g = goldens()
    assert str(g["transformers_version"]) == "5.24.0" and str(g["torch_version"]).startswith("2.13")


# ----- 1. Qwen3-VL's tower table ---------------------------------------------------------------------------------
QWEN = ("qwen3_vl_vision", "qwen3_5_vision", "qwen3_vl")


def test_qwen3_tower_rows_are_the_models_own_at_every_grid() -> None:
    """Each tower (and the full Qwen3-VL, its tower under model.visual) at its native grid and at grids down,
    up and non-square, against its own forward; a grid the tower's code refuses is refused by name."""
    wrong = []
    for model in QWEN:
        path = MODELS / f"vision_{model}"
        config = load_config(str(path))
        cases = _keys(model)
        made = {g for _, g, kind in cases if kind == "rows"}
        native = "x".join([str(int(np.sqrt(_weights(path, "pos_embed.weight").shape[0])))] * 2)
        assert native in made and len(made - {native}) >= 3 and any(len(set(g.split("x"))) == 2 for g in made)
        for _, grid, kind in cases:
            if kind not in ("rows", "refused"):
                continue  # the rotary's cos and sin: test_qwen3_tower_rotary_is_the_towers_own
            if kind == "refused":
                with pytest.raises(ParameterError, match="does not fit spatial_merge_size 2"):
                    vision_table(str(path), config, grid=grid)
                continue
            want = goldens()[f"{model}|{grid}|rows"]
            got, meta = vision_table(str(path), config, grid=None if grid == native else grid)
            if got.shape != want.shape or np.abs(got - want).max() > noise(want) or meta["grid"] != grid:
                wrong.append((model, grid))
    assert not wrong, wrong


def test_qwen3_image_size_is_the_grid_through_the_patch_and_merge() -> None:
    path = str(MODELS / "vision_qwen3_vl_vision")
    config = load_config(path)
    rows, meta = vision_table(path, config, image_size="32x48")  # patch 4: the 8x12 grid
    assert np.array_equal(rows, goldens()["qwen3_vl_vision|8x12|rows"]) and meta["grid"] == "8x12"
    with pytest.raises(ParameterError, match=r"not a multiple of 8x8 pixels .* e\.g\. 40x48"):
        vision_table(path, config, image_size="36x48")  # the processor's smart_resize would resize it first
    with pytest.raises(ParameterError, match="both give the patch grid"):
        vision_table(path, config, image_size="32x48", grid="8x12")


def test_qwen3_rows_come_in_merge_blocks() -> None:
    """At the native grid the tower adds its table as it is, in 2x2 spatial-merge block order: the weights' table
    put in that order with plain numpy is the golden, and the row-major table is not."""
    path = MODELS / "vision_qwen3_vl_vision"
    table = _weights(path, "pos_embed.weight")
    want = goldens()["qwen3_vl_vision|6x6|rows"]
    blocks = table.reshape(3, 2, 3, 2, -1).transpose(0, 2, 1, 3, 4).reshape(36, -1)
    assert np.array_equal(blocks, want) and not np.allclose(table, want)


def test_every_type_running_the_same_code_is_read_by_its_fingerprint() -> None:
    types = ["qwen3_vl", "qwen3_vl_moe", "qwen3_vl_moe_vision", "qwen3_5", "qwen3_5_moe_vision",
             "qwen3_omni_moe_thinker", "qwen3_omni_moe_vision_encoder", "cosmos3_omni"]  # fmt: skip
    for mt in types:
        r = reading({"model_type": mt})
        assert r.vision.resampling == ("bilinear", True, False, "taps") and r.vision.merge == "spatial_merge_size"
        (entry,) = observed(mt)
        # the call the inventory saw run: the code's own arguments (the rule writes the border padding only)
        assert entry["resize"]["spatial_merge_size"] == 2 and entry["resize"]["padding"] == "border", mt
    # a wrapper reads its language model unless its vision tower is asked for
    assert not claims({"model_type": "qwen3_vl"})
    assert claims({"model_type": "qwen3_vl"}, grid="8x12") and claims({"model_type": "qwen3_vl"}, tower="vision")
    # --tower vision names the tower's rotary where one was observed (Qwen3-VL's), its table where none was (CLIP's),
    # and stays an error for a model with no vision tower
    from posenc_cli.models.vision_rope import tower_of

    found = tower_of({"model_type": "qwen3_vl"}, "vision")
    assert found is not None and found[0].preset == "qwen2-vl"
    assert tower_of({"model_type": "clip"}, "vision") is None
    with pytest.raises(ParameterError, match="has no vision tower"):
        tower_of({"model_type": "llama"}, "vision")


def test_qwen3_tower_rotary_is_the_towers_own() -> None:
    """--tower vision reads the tower's 2-D rotary (the qwen2-vl preset, which the inventory saw reproduce its
    attention), against the cos and sin the tower's own rotary gives its blocks, at every golden grid."""
    from posenc_cli import api

    checked = 0
    for model in QWEN:
        config = load_config(str(MODELS / f"vision_{model}"))
        for _, grid, kind in _keys(model):
            if kind != "cos":
                continue
            enc = api.from_config(config, tower="vision", grid=grid, dtype="float64")
            for name in ("cos", "sin"):
                want = goldens()[f"{model}|{grid}|{name}"]
                assert np.abs(enc.array(name) - want).max() < 1e-6, (model, grid, name)
            checked += 1
    assert checked >= 12
    # the merge is the config's (the goldens' 2 is also the preset's default): a tower of spatial_merge_size 1
    config = {**load_config(str(MODELS / "vision_qwen3_vl_vision")), "spatial_merge_size": 1}
    assert api.from_config(config, tower="vision", grid="5x3").merge == 1


def test_qwen3_cli_table_at_a_grid(tmp_path: Path) -> None:
    from posenc_cli.formats import read_table

    out = tmp_path / "q.safetensors"
    code, _, err = cli(["export", str(MODELS / "vision_qwen3_vl"), "--grid", "8x12", "-o", str(out)])
    assert code == 0, err
    table = read_table(str(out))
    assert np.array_equal(table.tensors["pe"], goldens()["qwen3_vl|8x12|rows"])
    assert table.metadata["row_order"] == "merge" and table.metadata["merge"].startswith("2: 2x2 spatial-merge blocks")
    assert table.metadata["weights_tensor"].endswith("visual.pos_embed.weight")
    code, _, err = cli(["export", str(MODELS / "vision_qwen3_vl"), "--grid", "5x6", "-o", str(out), "--force"])
    assert code == 2 and err.count("\n") == 1 and "5x6" in err and "spatial_merge_size" in err, err


# ----- 2. BEiT's relative bias at another image size ---------------------------------------------------------------
BEIT = ("tiny_beit", "tiny_data2vec_vision", "tiny_beit_rect")


def test_beit_bias_and_index_are_the_models_own_at_every_size() -> None:
    """The bias each layer's (or the shared) RelativePositionBias adds in the model's forward, at the native size
    and at other sizes (non-square ones too; a non-square native table is resized even at its own size, as the
    code views it width first), with and without interpolate_pos_encoding; the index of the new window."""
    wrong = []
    for model in BEIT:
        path = str(BIAS_MODELS / model)
        config = load_config(path)
        sizes = sorted({s for _, s, _ in (k[:3] for k in _keys(model))})
        assert "native" in sizes and len(sizes) >= 4
        for size in sizes:
            image = None if size == "native" else size
            if f"{model}|{size}|refused" in goldens():
                with pytest.raises(ParameterError, match="smaller than one 2x2 patch"):
                    tables(path, config, "index", image)
                continue
            index, _ = tables(path, config, "index", image)
            if not np.array_equal(index["index"], goldens()[f"{model}|{size}|index"]):
                wrong.append((model, size, "index"))
            bias, _ = tables(path, config, "bias", image)
            names = sorted({k[2] for k in _keys(model) if k[1] == size} - {"index"})
            assert len(names) == len(bias)
            for k, name in enumerate(names):  # the modules in the model's order, as the weights sort
                for variant in ("", "|interpolate_pos_encoding"):
                    want = goldens()[f"{model}|{size}|{name}{variant}"]
                    got = bias[f"bias_{k}"]
                    if got.shape != want.shape or np.abs(got - want).max() > noise(want):
                        wrong.append((model, size, name, variant))
    assert not wrong, wrong


def test_a_non_square_beit_table_is_not_its_raw_gather() -> None:
    """The width-first view matters: the raw table gathered by the index (plain numpy) is not what the model adds."""
    from posenc_cli.models.vision_bias import relative_position_index

    raw = _weights(BIAS_MODELS / "tiny_beit_rect", "relative_position_bias_table")
    gathered = raw[relative_position_index(4, 6, cls=True)].transpose(2, 0, 1)
    want = goldens()["tiny_beit_rect|native|layers.0.relative_position_bias.relative_position_bias_table"]
    assert gathered.shape == want.shape and np.abs(gathered - want).max() > 0.1


# ----- 3. ViViT and TimeSformer at another frame count ---------------------------------------------------------------
def test_video_tables_at_other_frame_counts_are_the_models_own() -> None:
    wrong = []
    for model in ("vivit", "timesformer"):
        path = str(MODELS / f"vision_{model}")
        config = load_config(path)
        cases = [k for k in _keys(model) if "interpolate_pos_encoding" not in k]
        assert sum(k[-1] == "rows" for k in cases) >= 2 and len(cases) >= 5
        for _, spec, kind in cases:
            frames, _, size = spec[1:].partition("@")
            if kind == "refused":
                with pytest.raises(ParameterError, match="tubelet"):
                    vision_table(path, config, frames=frames, image_size=size or None)
                continue
            want = goldens()[f"{model}|{spec}|rows"]
            got, meta = vision_table(path, config, frames=frames, image_size=size or None)
            if got.shape != want.shape or np.abs(got - want).max() > noise(want) or "frames" not in meta:
                wrong.append((model, spec))
    assert not wrong, wrong


def test_timesformer_frames_cross_check_in_plain_numpy() -> None:
    """5 frames of a 3-frame model: each patch's row plus the time row torch's nearest picks, floor(t * 3 / 5)."""
    path = MODELS / "vision_timesformer"
    pos = _weights(path, "embeddings.position_embeddings")[0]
    time = _weights(path, "embeddings.time_embeddings")[0]
    pick = [0, 0, 1, 1, 2]
    rows = [pos[0]] + [pos[1 + p] + time[pick[t]] for p in range(16) for t in range(5)]
    assert np.allclose(np.stack(rows), goldens()["timesformer|f5|rows"], atol=1e-6, rtol=0)


def test_frames_is_refused_by_name_where_it_cannot_apply() -> None:
    path = str(MODELS / "vision_vit")
    with pytest.raises(ParameterError, match=r"applies to a video model.s table .* vit.s has no frames"):
        vision_table(path, load_config(path), frames=4)
    path = str(MODELS / "vision_timesformer")
    with pytest.raises(ParameterError, match="is not a frame count"):
        vision_table(path, load_config(path), frames="0")


# ----- 4. PVT: a table per stage -------------------------------------------------------------------------------------
def test_pvt_stage_tables_are_the_models_own_at_every_size() -> None:
    """Each stage's table, added as it is over the grid its patch convolutions make; a size where the model's forward
    fails (another patch count, a grid smaller than a convolution or than the attention's reduction) is refused."""
    path = str(MODELS / "vision_pvt")
    config = load_config(path)
    sizes = sorted({k[1] for k in _keys("pvt")})
    ran = [s for s in sizes if f"pvt|{s}|refused" not in goldens()]
    assert "native" in ran and len(ran) >= 4 and any(len(set(s.split("x"))) == 2 for s in ran)
    wrong = []
    for size in sizes:
        image = None if size == "native" else size
        for stage in range(4):
            if size not in ran:
                with pytest.raises(ParameterError, match="its forward fails there"):
                    vision_table(path, config, image_size=image, stage=stage)
                continue
            want = goldens()[f"pvt|{size}|stage{stage}"]
            got, meta = vision_table(path, config, image_size=image, stage=stage)
            if got.shape != want.shape or not np.array_equal(got, want):
                wrong.append((size, stage))
    assert not wrong, wrong
    # 128x8: 32x2 then 16x1 patches, the table's counts, but stage 1's attention reduces by 2x2 and fails there (the
    # golden's error: a 16 x 1 input to a 2 x 2 kernel)
    assert "(16 x 1). Kernel size: (2 x 2)" in str(goldens()["pvt|128x8|refused"])
    with pytest.raises(ParameterError, match="stage 1 has a 16x1 grid and its attention reduces it by a 2x2"):
        vision_table(path, config, image_size="128x8", stage=0)
    _, meta = vision_table(path, config, image_size="66x19", stage=3)  # floored: 16x4, 8x2, 4x1, 4x1
    assert meta["extra_rows"] == "0:cls" and meta["grid"] == "4x1" and meta["stage_grids"] == "16x4, 8x2, 4x1, 4x1"
    with pytest.raises(ParameterError, match=r"is not a stage of pvt: give 0\.\.3"):
        vision_table(path, config, stage=4)
    from posenc_cli.models.vision import describe

    said = describe(path, config)  # what posenc kinds shows: every key the stages are made from
    assert said["strides"]["value"] == [4, 2, 2, 1] and "-p stage=K" in said["extra_rows"]["value"]
    vit = str(MODELS / "vision_vit")
    with pytest.raises(ParameterError, match="applies to a model with a position table per stage"):
        vision_table(vit, load_config(vit), stage=1)


def test_an_audit_checks_every_stage_and_every_per_layer_table() -> None:
    """An audit covers every position table the weights hold: PVT's four stage tables and YOLOS's table after
    each encoder layer, each a row of its own holding the tensor's rows (counted here from the safetensors file with
    plain numpy), at the native size and at an --image-size where the model runs; at a size the model refuses,
    the first table's row says why and no further row repeats it."""
    from safetensors.numpy import load_file

    import posenc_cli

    pvt = load_file(str(MODELS / "vision_pvt" / "model.safetensors"))
    stage_rows = [pvt[k].reshape(-1, pvt[k].shape[-1]).shape[0] for k in sorted(pvt) if "position_embeddings" in k]
    assert len(stage_rows) == 4
    report = posenc_cli.audit(str(MODELS / "vision_pvt"), image_size=["64"])
    got = [(r.layer_type, r.verdict, r.length) for r in report.rows]
    assert got == [("32x32 native", "agree", stage_rows[0]), ("64x64", "error", None),
                   *((f"32x32 native stage {k}", "agree", stage_rows[k]) for k in (1, 2, 3))]  # fmt: skip
    yolos = load_file(str(MODELS / "vision_yolos" / "model.safetensors"))
    (mid,) = [v for k, v in yolos.items() if k.endswith("mid_position_embeddings")]
    report = posenc_cli.audit(str(MODELS / "vision_yolos"), image_size=["24"])
    layers = [r.layer_type for r in report.rows if " layer " in r.layer_type]
    assert len(layers) == 2 * mid.shape[0] and all(r.verdict == "agree" for r in report.rows), report.rows
    assert layers[0].endswith("native layer 0") and layers[-1] == f"24x24 layer {mid.shape[0] - 1}"
