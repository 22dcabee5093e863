"""Windowed relative position bias (Swin, BEiT, Data2Vec-vision): the index and the per-head bias, against the
arrays each model's own modules give (tools/golden/make_vision_bias_golden.py, transformers 5.24)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from posenc_cli.errors import ParameterError
from posenc_cli.models.vision_bias import relative_position_index
from posenc_cli.scopes import SourceOptions

from .each import each

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "vision" / "bias_golden.npz"
MODELS = ("tiny_swin", "tiny_beit", "tiny_data2vec_vision")


@pytest.fixture(scope="module")
def golden() -> dict[str, np.ndarray]:
    with np.load(GOLDEN) as data:
        return {k: data[k] for k in data.files}


def read(model: str, table: str | None = None, *more: str):
    from posenc_cli import api

    params = ((f"table={table}",) if table else ()) + more
    return api.open_source(str(DATA / "vision" / "models" / model), SourceOptions(params=params))


def test_index_is_the_models(golden: dict[str, np.ndarray]) -> None:
    """One test over its cases (:func:`tests.each.each` names each failing one)."""
    each(MODELS, lambda case: _index_is_the_models(golden, case))


def _index_is_the_models(golden: dict[str, np.ndarray], model: str) -> None:
    src = read(model)
    np.testing.assert_array_equal(np.asarray(src.lazy["index"].rows(0, len(golden[f"{model}/index"]))),
                                  golden[f"{model}/index"])  # fmt: skip
    assert src.metadata["grid"] == "4x4"
    assert (src.metadata["grid_offset"], src.metadata["extra_rows"]) == (("0", "") if model == "tiny_swin" else
                                                                         ("1", "0:cls"))  # fmt: skip


def test_bias_is_what_the_model_adds(golden: dict[str, np.ndarray]) -> None:
    """One test over its cases (:func:`tests.each.each` names each failing one)."""
    each(MODELS, lambda case: _bias_is_what_the_model_adds(golden, case))


def _bias_is_what_the_model_adds(golden: dict[str, np.ndarray], model: str) -> None:
    src = read(model, "bias")
    want = {k.split("/", 1)[1]: v for k, v in golden.items() if k.startswith(model + "/") and not k.endswith("/index")}
    names = sorted(k for k in src.lazy if k.startswith("bias_"))
    assert len(names) == len(want)
    for name in names:
        arr = np.asarray(src.lazy[name].rows(0, src.lazy[name].shape[0]))
        np.testing.assert_array_equal(arr, want[src.metadata[name]])  # a gather: exact


def test_index_of_other_windows(golden: dict[str, np.ndarray]) -> None:
    """One test over its cases (:func:`tests.each.each` names each failing one)."""
    each(["7x7", "3x5", "6x2", "2x2"], lambda case: _index_of_other_windows(golden, case))


def _index_of_other_windows(golden: dict[str, np.ndarray], window: str) -> None:
    h, w = (int(s) for s in window.split("x"))
    np.testing.assert_array_equal(relative_position_index(h, w), golden[f"swin_window/{window}"])
    np.testing.assert_array_equal(relative_position_index(h, w, cls=True), golden[f"beit_window/{window}"])


def test_numpy_built_mistaken_index_differs(golden: dict[str, np.ndarray]) -> None:
    """A port that scales the row offset by 2*Wh-1 (not 2*Ww-1), or swaps the class entries, is caught."""
    h, w = 3, 5
    y, x = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    y, x = y.ravel(), x.ravel()
    wrong = (y[:, None] - y[None, :] + h - 1) * (2 * h - 1) + (x[:, None] - x[None, :] + w - 1)
    assert (wrong != golden["swin_window/3x5"]).any()
    swapped = golden["beit_window/3x5"].copy()
    swapped[0, 1:], swapped[1:, 0] = swapped[1:, 0].copy(), swapped[0, 1:].copy()
    assert (swapped != relative_position_index(h, w, cls=True)).any()


def test_bad_options_are_one_line() -> None:
    """One test over its cases (:func:`tests.each.each` names each failing one)."""
    each(
        [
            ("tiny_swin", ("table=heads",), "unknown table='heads'; choose from: index, bias"),
            ("tiny_swin", ("table=index", "base=3"), "cannot apply to a relative bias table"),
        ],
        lambda case: _bad_options_are_one_line(*case),
    )


def _bad_options_are_one_line(model: str, params: tuple, message: str) -> None:
    from posenc_cli import api

    with pytest.raises(ParameterError, match=message) as err:
        api.open_source(str(DATA / "vision" / "models" / model), SourceOptions(params=params))
    assert "\n" not in str(err.value)


def test_bias_needs_the_weights(tmp_path: Path) -> None:
    from posenc_cli import api

    config = (DATA / "vision" / "models" / "tiny_swin" / "config.json").read_text()
    (tmp_path / "config.json").write_text(config)
    with pytest.raises(ParameterError, match=r"no model\.safetensors"):
        api.open_source(str(tmp_path), SourceOptions(params=("table=bias",)))
    assert api.open_source(str(tmp_path)).lazy["index"].shape == (16, 16)  # the index needs the config only


# ----- Swin V2's continuous bias, Swin2SR, and each stage's window at an image size ------------------------------
STAGES = DATA / "vision" / "bias_stages_golden.npz"
#: 16 * sigmoid of a 512-term float32 sum: a few float32 steps of 16 (the model's own float32 against float64 here)
ATOL_16 = 64 * 16 * float(np.finfo(np.float32).eps)


@pytest.fixture(scope="module")
def staged() -> dict[str, np.ndarray]:
    with np.load(STAGES) as data:
        return {k: data[k] for k in data.files}


def _layer_stages(staged: dict[str, np.ndarray], model: str, src) -> list[int]:
    """Each layer's stage, from the metadata posenc wrote (``... (stage K: ...)``)."""
    n = len(staged[f"{model}/window_shift"])
    return [int(src.metadata[f"bias_{k}"].split("(stage ", 1)[1].split(":")[0]) for k in range(n)]


def test_continuous_bias_is_what_the_model_adds(staged: dict[str, np.ndarray]) -> None:
    """One test over its cases (:func:`tests.each.each` names each failing one)."""
    each(["tiny_swinv2", "tiny_swin2sr"], lambda case: _continuous_bias_is_what_the_model_adds(staged, case))


def _continuous_bias_is_what_the_model_adds(staged: dict[str, np.ndarray], model: str) -> None:
    """Index, coordinates table and bias of each layer, against the model's own buffers and the ``16 * sigmoid``
    its forward computed at every image size it ran at (the windows are set at construction: the same each time)."""
    index_src, bias_src = read(model), read(model, "bias")
    layers = _layer_stages(staged, model, bias_src)
    assert [bias_src.metadata[f"bias_{k}"].split(" (")[0] for k in range(len(layers))] == list(
        staged[f"{model}/weights"]
    )
    sizes = sorted({k.split("/")[1] for k in staged if k.startswith(model + "/") and k.endswith("/bias_0")})
    assert len(sizes) >= 3
    for k, stage in enumerate(layers):
        index = np.asarray(index_src.lazy[f"index_{stage}"].rows(0, index_src.lazy[f"index_{stage}"].shape[0]))
        np.testing.assert_array_equal(index, staged[f"{model}/index_{k}"])
        coords = np.asarray(index_src.lazy[f"coords_{stage}"].rows(0, index_src.lazy[f"coords_{stage}"].shape[0]))
        np.testing.assert_allclose(coords, staged[f"{model}/coords_{k}"].reshape(-1, 2), rtol=0, atol=4e-7)
        bias = np.asarray(bias_src.lazy[f"bias_{k}"].rows(0, bias_src.lazy[f"bias_{k}"].shape[0]))
        for size in sizes:
            np.testing.assert_allclose(bias, staged[f"{model}/{size}/bias_{k}"], rtol=0, atol=ATOL_16)
    win = [int(d.split("window ")[1].split(",")[0]) for d in index_src.metadata["stages"].split("; ")]
    np.testing.assert_array_equal([win[s] for s in layers], staged[f"{model}/window_shift"][:, 0])


def test_numpy_built_mistaken_coords_differ(staged: dict[str, np.ndarray]) -> None:
    """Dividing by the stage's own window where the config gives a pretrained one (stage 0: 4), or leaving out the
    log spacing, is caught by the model's table."""
    from posenc_cli.models.vision_bias import coords_table

    d = np.arange(-5, 6, dtype=np.float64)
    t = np.stack(np.meshgrid(d, d, indexing="ij"), -1).reshape(-1, 2) / 5 * 8  # own window 6, not pretrained 4
    own = np.sign(t) * np.log2(np.abs(t) + 1) / 3
    want = staged["tiny_swinv2/coords_0"].reshape(-1, 2)
    assert np.abs(own - want).max() > 0.1
    assert np.abs(d.repeat(11).reshape(-1, 1) / 3 * 8 - want[:, :1]).max() > 0.1  # linear, not log-spaced
    np.testing.assert_allclose(coords_table(6, 6, (4, 4)), want, rtol=0, atol=4e-7)


def _tiny(model_type: str) -> dict:
    """The configuration the golden's per-size windows were recorded with (make_vision_bias_golden.stage_windows)."""
    return {"model_type": model_type, "image_size": 16, "patch_size": 2, "embed_dim": 8, "depths": [2, 2],
            "num_heads": [1, 2], "window_size": 4}  # fmt: skip


def test_stage_windows_follow_the_image_size(staged: dict[str, np.ndarray]) -> None:
    """One test over its cases (:func:`tests.each.each` names each failing one)."""
    each(["swin", "donut-swin", "maskformer-swin"], lambda case: _stage_windows_follow_the_image_size(staged, case))


def _stage_windows_follow_the_image_size(staged: dict[str, np.ndarray], model_type: str) -> None:
    """Each block's window and shift and each stage's grid at eight image sizes, as the model's forward set them; where
    its forward failed (a stage's window shrunk below the bias's), posenc refuses the size by name."""
    from posenc_cli.models.vision_bias import WINDOW_BIAS, stages, tables

    rec, config = WINDOW_BIAS[model_type], _tiny(model_type)
    sizes = sorted({k.split("/")[2] for k in staged if k.startswith(f"stages/{model_type}/")})
    assert len(sizes) == 8
    failed = 0
    for size in sizes:
        h, w = (int(s) for s in size.split("x"))
        error = str(staged[f"stages/{model_type}/{size}/error"])
        if error:
            failed += 1
            with pytest.raises(ParameterError, match=r"smaller than its window_size 4.*forward fails"):
                tables("unused", config, None, size)
            continue
        got = stages(rec, config, (h, w))
        blocks = [(s.window, shift) for s in got for shift in s.shifts]
        np.testing.assert_array_equal(blocks, staged[f"stages/{model_type}/{size}/window_shift"], err_msg=size)
        dims = [s.grid for s in got for _ in s.shifts]
        np.testing.assert_array_equal(dims, staged[f"stages/{model_type}/{size}/dims"], err_msg=size)
        arrays, meta = tables("unused", config, None, size)
        assert arrays["index"].shape == (16, 16) and meta["image_size"] == size
    assert failed == (0 if model_type == "maskformer-swin" else 3)


def test_class_defaults_fill_a_bare_config() -> None:
    """A Swin config without window_size (or any size) takes its class's defaults, as the inventory observed them:
    window 7 over 224 // 4 = 56 patches, four stages."""
    from posenc_cli.models.vision_bias import tables

    arrays, meta = tables("unused", {"model_type": "swin"})
    assert arrays["index"].shape == (49, 49) and meta["grid"] == "7x7"
    assert meta["stages"].startswith("stage 0: grid 56x56, window 7, shift 0/3; stage 1: grid 28x28")
    assert meta["stages"].endswith("stage 3: grid 7x7, window 7, shift 0/0")


def test_continuous_bad_weights_are_one_line(tmp_path: Path) -> None:
    """A Swin V2 directory whose weights hold fewer networks than its depths make: both named, one line."""
    import json

    from posenc_cli import api

    config = json.loads((DATA / "vision" / "models" / "tiny_swinv2" / "config.json").read_text())
    config["depths"] = [1, 2, 2]
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "model.safetensors").hardlink_to(DATA / "vision" / "models" / "tiny_swinv2" / "model.safetensors")
    with pytest.raises(ParameterError, match=r"hold 4 continuous_position_bias_mlp networks.*make 5 layers") as err:
        api.open_source(str(tmp_path), SourceOptions(params=("table=bias",)))
    assert "\n" not in str(err.value)


def test_construction_windows_follow_the_config(staged: dict[str, np.ndarray]) -> None:
    """One test over its cases (:func:`tests.each.each` names each failing one)."""
    each(["swinv2", "swin2sr"], lambda case: _construction_windows_follow_the_config(staged, case))


def _construction_windows_follow_the_config(staged: dict[str, np.ndarray], model_type: str) -> None:
    """Swin V2 and Swin2SR set each layer's window at construction from the config's image size, the grid's height
    deciding (a 16x8 grid keeps window 6): against the layers the model built at four non-square sizes."""
    from posenc_cli.models.vision_bias import WINDOW_BIAS, stages

    keys = [k for k in staged if k.startswith(f"built/{model_type}/")]
    assert len(keys) == 4
    for key in keys:
        h, w = (int(s) for s in key.rsplit("/", 1)[1].split("x"))
        config = {"model_type": model_type, "image_size": [h, w], "patch_size": 2, "depths": [2, 2, 2],
                  "window_size": 6}  # fmt: skip
        got = stages(WINDOW_BIAS[model_type], config, (999, 999))  # the image size asked changes nothing
        np.testing.assert_array_equal([(s.window, t) for s in got for t in s.shifts], staged[key], err_msg=key)


def test_swin_copies_bias_is_what_their_forward_adds(staged: dict[str, np.ndarray]) -> None:
    """One test over its cases (:func:`tests.each.each` names each failing one)."""
    each(
        ["tiny_donut_swin", "tiny_maskformer_swin"],
        lambda case: _swin_copies_bias_is_what_their_forward_adds(staged, case),
    )


def _swin_copies_bias_is_what_their_forward_adds(staged: dict[str, np.ndarray], model: str) -> None:
    """Donut-Swin's and MaskFormer-Swin's attention gathers its table inline: the bias their forward added (read
    at its softmax with query and key zero) is the gather posenc makes, exactly."""
    src = read(model, "bias")
    want = {k.split("/", 1)[1]: v for k, v in staged.items() if k.startswith(model + "/")}
    names = sorted(k for k in src.lazy if k.startswith("bias_"))
    assert len(names) == len(want) == 2
    for name in names:
        got = np.asarray(src.lazy[name].rows(0, src.lazy[name].shape[0]))
        np.testing.assert_array_equal(got, want[src.metadata[name]])
    index = read(model).lazy["index"]
    np.testing.assert_array_equal(np.asarray(index.rows(0, 16)), relative_position_index(4, 4))


def test_sam_decomposed_relative_positions(staged: dict[str, np.ndarray], tmp_path: Path) -> None:
    """SAM's and SAM-HQ's encoders: each layer's rel_pos_h / rel_pos_w gathered as its own get_rel_pos gives them (windowed
    layers at the window, the global one at the grid); the full SAM config reads its vision_config with --tower
    vision, and table=bias without it says so in one line."""
    from posenc_cli import api

    for model in ("tiny_sam_vision", "tiny_sam_hq_vision"):
        src = read(model, "bias")
        assert src.metadata["layer_sides"] == "2,8,2"
        want = {k.split("/", 1)[1]: v for k, v in staged.items() if k.startswith(model + "/")}
        names = sorted(k for k in src.lazy if k.startswith("rel_"))
        assert len(names) == len(want) == 6
        for name in names:
            got = np.asarray(src.lazy[name].rows(0, src.lazy[name].shape[0]))
            np.testing.assert_array_equal(got, want[src.metadata[name]])
    index = read("tiny_sam_vision", "index").lazy["index_8"]
    np.testing.assert_array_equal(np.asarray(index.rows(0, 8)), np.subtract.outer(np.arange(8), np.arange(8)) + 7)
    config = DATA / "vision" / "configs" / "sam"
    whole = api.open_source(str(config), SourceOptions(params=("tower=vision", "table=index")))
    assert whole.metadata["read_from"] == "sam vision_config (sam_vision_model)"
    assert sorted(whole.lazy) == ["index_2", "index_8"]
    with pytest.raises(ParameterError, match=r"table=bias on sam: its vision encoder \(vision_config\) takes "
                       r"relative positions with the queries.*(--)?tower vision") as err:  # fmt: skip
        api.open_source(str(config), SourceOptions(params=("table=bias",)))
    assert "\n" not in str(err.value)


def test_swin_backbone_of_a_composite_with_tower_vision(staged: dict[str, np.ndarray]) -> None:
    """Mask2Former's Swin backbone_config (where the inventory traced its windowed bias): with --tower vision its
    bias is each backbone block's SwinRelativePositionBias output; without, the composite keeps its own reading."""
    src = read("tiny_mask2former", "bias", "tower=vision")
    assert src.metadata["read_from"] == "mask2former backbone_config (swin)"
    want = {k.split("/", 1)[1]: v for k, v in staged.items() if k.startswith("tiny_mask2former/")}
    names = sorted(k for k in src.lazy if k.startswith("bias_"))
    assert len(names) == len(want) == 2
    for name in names:
        got = np.asarray(src.lazy[name].rows(0, src.lazy[name].shape[0]))
        np.testing.assert_array_equal(got, want[src.metadata[name]])
    with pytest.raises(ParameterError, match="mask2former places positions"):
        read("tiny_mask2former")
