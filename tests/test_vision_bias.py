"""Windowed relative position bias (Swin, BEiT, Data2Vec-vision): the index and the per-head bias, against the
arrays each model's own modules give (tools/golden/make_vision_bias_golden.py, transformers 5.24)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from posenc_cli.errors import ParameterError
from posenc_cli.models.vision_bias import relative_position_index
from posenc_cli.scopes import SourceOptions

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "vision" / "bias_golden.npz"
MODELS = ("tiny_swin", "tiny_beit", "tiny_data2vec_vision")


@pytest.fixture(scope="module")
def golden() -> dict[str, np.ndarray]:
    with np.load(GOLDEN) as data:
        return {k: data[k] for k in data.files}


def read(model: str, table: str | None = None):
    from posenc_cli import api

    params = (f"table={table}",) if table else ()
    return api.open_source(str(DATA / "vision" / "models" / model), SourceOptions(params=params))


@pytest.mark.parametrize("model", MODELS)
def test_index_is_the_models(golden: dict[str, np.ndarray], model: str) -> None:
    src = read(model)
    np.testing.assert_array_equal(np.asarray(src.lazy["index"].rows(0, len(golden[f"{model}/index"]))),
                                  golden[f"{model}/index"])  # fmt: skip
    assert src.metadata["grid"] == "4x4"
    assert (src.metadata["grid_offset"], src.metadata["extra_rows"]) == (("0", "") if model == "tiny_swin" else
                                                                         ("1", "0:cls"))  # fmt: skip


@pytest.mark.parametrize("model", MODELS)
def test_bias_is_what_the_model_adds(golden: dict[str, np.ndarray], model: str) -> None:
    src = read(model, "bias")
    want = {k.split("/", 1)[1]: v for k, v in golden.items() if k.startswith(model + "/") and not k.endswith("/index")}
    names = sorted(k for k in src.lazy if k.startswith("bias_"))
    assert len(names) == len(want)
    for name in names:
        arr = np.asarray(src.lazy[name].rows(0, src.lazy[name].shape[0]))
        np.testing.assert_array_equal(arr, want[src.metadata[name]])  # a gather: exact


@pytest.mark.parametrize("window", ["7x7", "3x5", "6x2", "2x2"])
def test_index_of_other_windows(golden: dict[str, np.ndarray], window: str) -> None:
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


@pytest.mark.parametrize(
    ("model", "params", "message"),
    [
        ("tiny_swin", ("table=heads",), "unknown table='heads'; choose from: index, bias"),
        ("tiny_swin", ("table=index", "base=3"), "cannot apply to a relative bias table"),
    ],
)
def test_bad_options_are_one_line(model: str, params: tuple, message: str) -> None:
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
