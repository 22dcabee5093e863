"""Vision tables whose layout or resize code is their own: SAM (and SAM-HQ), DPT, Depth Anything (a DINOv2
backbone), YOLOS (and its per-layer tables), ViTDet, ViTPose, ViViT, TimeSformer, the Audio Spectrogram
Transformer.

Goldens come from each model's own code (transformers 5.24, torch 2.13), run once in the side environment by
tools/golden/vision_rules.py: tiny random models saved under tests/data/models/vision_<type>/ and, per image size,
the rows the model's embeddings add (or the error its code raised at that size).
"""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.errors import ParameterError
from posenc_cli.inspect.diagnose.resampling import noise
from posenc_cli.models.config_file import load_config
from posenc_cli.models.records import RECORDS
from posenc_cli.models.vision import vision_table

from .conftest import cli

DATA = Path(__file__).resolve().parent / "data"
MODELS = DATA / "models"


@cache
def goldens() -> dict[str, np.ndarray]:
    with np.load(DATA / "vision" / "rules_goldens.npz") as z:
        return {k: z[k] for k in z.files}


@cache
def config(mt: str) -> dict:
    return load_config(str(MODELS / f"vision_{mt}"))


def _table(mt: str, size: str | None, **kw: object) -> tuple[np.ndarray, dict[str, str]]:
    return vision_table(str(MODELS / f"vision_{mt}"), config(mt), image_size=size, **kw)


def _cases() -> list[tuple[str, str, str]]:
    """(model type, size, kind) of every golden: kind ``rows``, ``refused`` or ``mid``."""
    out = []
    for key in goldens():
        parts = key.split("|")
        if len(parts) >= 2:
            out.append((parts[0], parts[1], parts[2] if len(parts) == 3 else "rows"))
    return out


def test_goldens_cover_each_type_at_four_sizes_or_its_refusals() -> None:
    g = goldens()
    assert str(g["transformers_version"]) == "5.24.0" and str(g["torch_version"]).startswith("2.13")
    types = {mt for mt, _, _ in _cases()}
    for mt in types:
        assert RECORDS[mt].vision is not None, mt
        rows = {s for m, s, k in _cases() if m == mt and k == "rows"}
        refused = {s for m, s, k in _cases() if m == mt and k == "refused"}
        assert "native" in rows, mt
        # at least three other sizes, one of them not square, either made or refused by the model's own code
        others = (rows | refused) - {"native"}
        assert len(others) >= 3 and any(len(set(s.split("x"))) == 2 for s in others), (mt, others)
        vision = RECORDS[mt].vision
        if vision.tower is not None:  # a wrapper: its tower's (or backbone's) rule
            vision = RECORDS[vision.tower[1]].vision
        if vision.resampling is not None and not vision.fixed_input:  # resized at >= 3 sizes, one not square
            assert len(rows - {"native"}) >= 3 and any(len(set(s.split("x"))) == 2 for s in rows - {"native"})


def test_rows_are_the_models_own_at_every_size() -> None:
    g = goldens()
    wrong = []
    for mt, size, kind in _cases():
        if kind != "rows":
            continue
        want = g[f"{mt}|{size}"]
        got, _ = _table(mt, None if size == "native" else size)
        if got.shape != want.shape or got.dtype != np.float32:
            wrong.append((mt, size, got.shape, want.shape))
        elif np.abs(got - want).max() > noise(want):
            wrong.append((mt, size, float(np.abs(got - want).max())))
    assert not wrong, wrong


def test_sizes_the_models_code_refuses_are_refused_by_name() -> None:
    g = goldens()
    for mt, size, kind in _cases():
        if kind != "refused":
            continue
        assert str(g[f"{mt}|{size}|refused"]).startswith(("ValueError", "RuntimeError"))
        with pytest.raises(ParameterError) as err:
            _table(mt, size)
        text = str(err.value)
        assert "\n" not in text and any(w in text for w in (size, "runs at", "cannot apply", "pixels only")), text


def test_yolos_per_layer_tables_are_its_encoders() -> None:
    g = goldens()
    for mt, size, kind in _cases():
        if kind != "mid":
            continue
        want = g[f"{mt}|{size}|mid"]
        for layer in range(want.shape[0]):
            got, meta = _table(mt, None if size == "native" else size, layer=layer)
            assert np.abs(got - want[layer]).max() <= noise(want), (size, layer)
            assert meta["weights_tensor"].endswith(f"mid_position_embeddings[{layer}]")
    # the first table and the per-layer ones are different tables
    assert not np.allclose(_table("yolos", None)[0], _table("yolos", None, layer=0)[0])


# the layout metadata, as each model's code lays its rows out (at the size given)
LAYOUTS = {
    ("sam", None): {"grid": "4x4", "grid_offset": "0", "extra_rows": ""},
    ("sam_hq", None): {"grid": "4x4", "grid_offset": "0", "extra_rows": ""},
    ("dpt", "24x12"): {"grid": "6x3", "grid_offset": "1", "extra_rows": "0:cls"},
    ("depth_anything", "30x18"): {"grid": "7x4", "grid_offset": "1", "extra_rows": "0:cls", "model_type": "dinov2"},
    ("yolos", None): {"grid": "4x5", "grid_offset": "1", "extra_rows": "0:cls,21:det0,22:det1,23:det2"},
    ("yolos", "24x12"): {"grid": "6x3", "grid_offset": "1", "extra_rows": "0:cls,19:det0,20:det1,21:det2"},
    ("vitdet", "24x12"): {"grid": "6x3", "grid_offset": "0", "extra_rows": "", "dropped_rows": "0:cls (no such token)"},
    ("vitpose", None): {"grid": "4x3", "grid_offset": "0", "extra_rows": "",
                        "folded_rows": "0:cls (added to every grid row; no such token)"},
    ("vivit", None): {"grid": "2x4x4", "grid_axes": "t,h,w", "grid_offset": "1", "extra_rows": "0:cls"},
    ("timesformer", "24x12"): {"grid": "6x3x3", "grid_axes": "h,w,t", "grid_offset": "1", "extra_rows": "0:cls",
                               "resampling": "engine=hf, nearest, size"},
    ("timesformer", "32x8"): {"grid": "8x2x3", "resampling": "engine=hf, none: the native table, kept as it is "
                              "(the native patch count)"},
    ("sam3_vit_model", None): {"grid": "6x6", "image_size": "24x24", "native_grid": "4x4",
                               "resampling": "engine=hf, tile: the grid repeated and cropped (not interpolated)"},
    ("sam3_vision_model", "16x16"): {"grid": "4x4", "resampling": "engine=hf, none: the native table, kept as it is "
                                     "(the native grid)"},
    ("deepseek_ocr2_sam_vision_model", "24x12"): {"grid": "6x3", "extra_rows": "", "resampling": "engine=hf, bicubic, "
                                                  "antialias=True, align_corners=False, size"},
    ("seggpt", None): {"grid": "6x4", "native_grid": "4x4", "image_size": "24x16", "extra_rows": "",
                       "dropped_rows": "0:cls (no such token)"},
    ("pixio", "24x12"): {"grid": "6x3", "grid_offset": "3", "extra_rows": "0:cls0,1:cls1,2:cls2"},
    ("mgp-str", None): {"grid": "4x6", "grid_offset": "1", "extra_rows": "0:cls"},
    ("sam2_vision_model", "30x16"): {"grid": "8x4", "native_grid": "3x5", "extra_rows": "", "resampling": "engine=hf, "
                                     "bicubic, antialias=False, align_corners=False, size; plus the 2x2 window table "
                                     "tiled"},
    ("hiera", "30x18"): {"grid": "15x9", "native_grid": "8x8", "patch_size": "2x2", "extra_rows": ""},
    ("audio-spectrogram-transformer", None): {"grid": "4x5", "grid_axes": "frequency,time", "grid_offset": "2",
                                              "extra_rows": "0:cls,1:dist"},
}  # fmt: skip


def test_layout_metadata_says_the_truth() -> None:
    for (mt, size), want in LAYOUTS.items():
        rows, meta = _table(mt, size)
        assert {k: meta.get(k) for k in want} == want, (mt, size)
        dims = [int(v) for v in meta["grid"].split("x")]
        extra = [e for e in meta["extra_rows"].split(",") if e]
        assert rows.shape[0] == int(np.prod(dims)) + len(extra), (mt, size)


def test_folded_and_time_rows_are_sums_of_the_weights_rows() -> None:
    """ViTPose adds its class row to every grid row; TimeSformer adds frame t's row to every patch of frame t:
    cross-checked from the weights' own tensors with plain numpy."""
    from safetensors.numpy import load_file

    pose = load_file(str(MODELS / "vision_vitpose" / "model.safetensors"))["backbone.embeddings.position_embeddings"]
    rows, _ = _table("vitpose", None)
    np.testing.assert_array_equal(rows, pose[0, 1:] + pose[0, :1])
    ts = load_file(str(MODELS / "vision_timesformer" / "model.safetensors"))
    pos, time = ts["embeddings.position_embeddings"][0], ts["embeddings.time_embeddings"][0]
    rows, _ = _table("timesformer", None)
    want = np.concatenate([pos[:1], (pos[1:, None, :] + time[None, :, :]).reshape(-1, pos.shape[1])])
    np.testing.assert_array_equal(rows, want)
    sam = load_file(str(MODELS / "vision_sam" / "model.safetensors"))["vision_encoder.pos_embed"]
    np.testing.assert_array_equal(_table("sam", None)[0], sam.reshape(-1, sam.shape[-1]))


# ----- bad input: one line, exit 2 --------------------------------------------------------------------------
def _copy(tmp_path: Path, model: str) -> Path:
    dest = tmp_path / model
    shutil.copytree(MODELS / f"vision_{model}", dest)
    return dest


def _edit_config(model: Path, path: tuple[str, ...], value: object) -> None:
    cfg = json.loads((model / "config.json").read_text())
    node = cfg
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    (model / "config.json").write_text(json.dumps(cfg))


def _write_table(model: Path, name: str, table: np.ndarray) -> None:
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(model / "model.safetensors"))
    tensors[name] = table
    save_file(tensors, str(model / "model.safetensors"))


def _fails(args: list[str], needle: str) -> None:
    code, _, err = cli(args)
    assert code == 2 and err.count("\n") == 1 and needle in err, (code, err)


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    out = ["-o", str(tmp_path / "x.npy")]
    _fails(["export", str(MODELS / "vision_dpt"), "--image-size", "3x300", *out], "smaller than one 4x4 patch")
    _fails(["export", str(MODELS / "vision_timesformer"), "--image-size", "16x4", *out], "one patch wide")
    _fails(["export", str(MODELS / "vision_audio-spectrogram-transformer"), "--image-size", "16", *out],
           "--image-size cannot apply")  # fmt: skip
    _fails(["export", str(MODELS / "vision_yolos"), "--engine", "timm", "--image-size", "24", *out],
           "keeps 3 rows (det0..) after it")  # fmt: skip
    _fails(["export", str(MODELS / "vision_vitdet"), "--engine", "timm", *out], "has no cls token")
    _fails(["export", str(MODELS / "vision_yolos"), "-p", "layer=2", *out], "give 0..1")
    _fails(["export", str(MODELS / "vision_dpt"), "-p", "layer=0", *out], "adds one table")
    _fails(["export", str(MODELS / "vision_vivit"), "--image-size", "24", *out], "runs at 16x16 only")
    _fails(["export", str(MODELS / "vision_sam2_hiera_det_model"), "--image-size", "2", *out],
           "makes a 1x1 grid, which the 2x2 window table does not tile")  # fmt: skip
    _fails(["export", str(MODELS / "vision_sam2_hiera_det_model"), "--engine", "timm", *out], "window table tiled")


def test_a_table_that_is_not_its_grid_plus_its_extra_rows(tmp_path: Path) -> None:
    out = ["-o", str(tmp_path / "x.npy")]
    yolos = _copy(tmp_path, "yolos")  # 4x5 grid + cls + 3 detection rows = 24; one row short
    _write_table(yolos, "embeddings.position_embeddings", np.zeros((1, 23, 8), np.float32))
    _fails(["export", str(yolos), *out], "has 23 rows and the config's image_size 16x20 / patch 4x4 make a 4x5 grid")
    vitdet = _copy(tmp_path, "vitdet")  # a square grid + its class row, or the model's reshape fails
    _write_table(vitdet, "embeddings.position_embeddings", np.zeros((1, 20, 8), np.float32))
    _fails(["export", str(vitdet), *out], "has 20 rows, which is not a square grid + 1 extra (cls)")
    sam = _copy(tmp_path, "sam_vision_model")  # the same 16 rows, as a 2x8 grid the config does not make
    _write_table(sam, "vision_encoder.pos_embed", np.zeros((1, 2, 8, 8), np.float32))
    _fails(["export", str(sam), *out], "is a 2x8 grid and the config makes 4x4")
    ts = _copy(tmp_path, "timesformer")
    _edit_config(ts, ("num_frames",), 4)
    _fails(["export", str(ts), *out], "has 3 rows and config key num_frames says 4 frames")
    vivit = _copy(tmp_path, "vivit")
    _edit_config(vivit, ("num_frames",), 6)
    _fails(["export", str(vivit), *out], "make a 3x4x4 grid + 1 extra (cls) (49 rows)")


def test_config_values_the_rules_do_not_model_are_refused_by_name(tmp_path: Path) -> None:
    out = ["-o", str(tmp_path / "x.npy")]
    vitdet = _copy(tmp_path, "vitdet")
    _edit_config(vitdet, ("use_absolute_position_embeddings",), False)
    _fails(["export", str(vitdet), *out], "use_absolute_position_embeddings is false")
    dpt = _copy(tmp_path, "dpt")
    _edit_config(dpt, ("is_hybrid",), True)
    _fails(["export", str(dpt), *out], "config key is_hybrid=True: DPT-hybrid")
    ts = _copy(tmp_path, "timesformer")
    _edit_config(ts, ("attention_type",), "space_only")
    _fails(["export", str(ts), *out], "attention_type='space_only'")
    depth = _copy(tmp_path, "depth_anything")  # the backbone's own model type chooses its code
    _edit_config(depth, ("backbone_config", "model_type"), "swinv2")
    _fails(["export", str(depth), *out], "its backbone_config is a swinv2")


def test_compare_names_tiling_and_bilinear_against_timm(tmp_path: Path) -> None:
    """``compare`` finds the call that made each side among the candidates, tiling included."""
    for mt, hf_call in (
        ("sam3_vit_model", "tile: the grid repeated and cropped"),
        ("dpt", "bilinear, antialias=False"),
    ):
        a, b = str(tmp_path / f"{mt}-a.safetensors"), str(tmp_path / f"{mt}-b.safetensors")
        path = str(MODELS / f"vision_{mt}")
        assert cli(["export", path, "--image-size", "30x18", "-o", a])[0] == 0
        assert cli(["export", path, "--engine", "timm", "--image-size", "30x18", "-o", b])[0] == 0
        code, out, err = cli(["compare", a, b, "-q"])
        text = out.decode() + err
        assert code == 1 and f"resampled as {hf_call}" in text and "as bicubic, antialias=True" in text, text
