"""check's grid-locality report on a learned 2-D table (metadata grid / grid_offset / extra_rows), built with plain
numpy: a smooth table, the same rows shuffled, and tables whose rows or metadata do not describe a grid."""

from __future__ import annotations

import numpy as np
import pytest

from posenc_cli.checks.base import CheckContext
from posenc_cli.checks.grid import check_grid_locality, fits
from posenc_cli.checks.rows import not_positions, positions

from .each import each

H, W, D = 6, 8, 16
META = {"grid": f"{H}x{W}", "grid_offset": "1", "extra_rows": "0:cls"}


def smooth_table() -> np.ndarray:
    """A class row, then patches whose features vary slowly over the grid (as trained ViT tables do)."""
    y, x = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    feats = [np.cos(0.4 * y + k) + np.sin(0.3 * (k % 3 + 1) * x) for k in range(D)]
    patches = np.stack(feats, -1).reshape(H * W, D)
    return np.concatenate([np.full((1, D), 5.0), patches]).astype(np.float32)


def ctx(table: np.ndarray, meta: dict) -> CheckContext:
    """What check measures grid-locality on: the table's position rows, the class row left out by the one mechanism
    every check of positions goes through (checks/rows.py)."""
    left = not_positions(table.shape[0], "t", None, meta, None, True)
    return positions(CheckContext(table=table, tensors={"pe": table}, metadata=meta, kind=None, left_out=left))


def reference(table: np.ndarray) -> tuple[float, float]:
    """The same reading with loops over the grid (an independent path): mean cosine to 4-neighbours and to patches
    at Manhattan distance >= max(2, ceil(max(H, W) / 2))."""
    p = table[1:].astype(np.float64)
    cos = lambda a, b: float(p[a] @ p[b] / np.linalg.norm(p[a]) / np.linalg.norm(p[b]))  # noqa: E731
    near, far = [], []
    for a in range(H * W):
        for b in range(H * W):
            d = abs(a // W - b // W) + abs(a % W - b % W)
            if d == 1:
                near.append(cos(a, b))
            elif d >= max(2, (max(H, W) + 1) // 2):
                far.append(cos(a, b))
    return float(np.mean(near)), float(np.mean(far))


def test_smooth_table_reads_local_and_matches_the_loop() -> None:
    table = smooth_table()
    res = check_grid_locality(ctx(table, META))
    near, far = reference(table)
    assert res.passed is None  # reported, never required
    assert res.data["neighbours"] == pytest.approx(near, abs=1e-9)
    assert res.data["distant"] == pytest.approx(far, abs=1e-9)
    assert near > far + 0.3


def test_shuffled_rows_read_less_local() -> None:
    table = smooth_table()
    rng = np.random.default_rng(0)
    shuffled = table[np.r_[0, 1 + rng.permutation(H * W)]]
    res = check_grid_locality(ctx(shuffled, META))
    assert res.data["neighbours"] == pytest.approx(reference(shuffled)[0], abs=1e-9)
    assert res.data["neighbours"] < check_grid_locality(ctx(table, META)).data["neighbours"] - 0.2


def test_the_class_row_is_not_a_patch() -> None:
    """Reading the grid from row 0 (a port that forgets grid_offset) gives another number."""
    table = smooth_table()
    wrong = check_grid_locality(ctx(table[:-1], {**META, "grid_offset": "0", "extra_rows": ""}))
    assert wrong.data["neighbours"] != pytest.approx(check_grid_locality(ctx(table, META)).data["neighbours"])


def test_no_grid_metadata_no_reading():
    each(
        [{}, {"grid": "6"}, {**META, "row_order": "window"}, {"grid": "6x8", "grid_offset": "x"}],
        _no_grid_metadata_no_reading,
    )


def _no_grid_metadata_no_reading(meta: dict) -> None:
    assert not fits(ctx(smooth_table(), meta))


def test_rows_not_a_grid_plus_extra_rows_are_not_measured() -> None:
    res = check_grid_locality(ctx(smooth_table()[:-2], META))
    assert res.method == "skipped" and "not the grid 6x8" in res.detail


def test_check_command_reports_it(tmp_path) -> None:
    from safetensors.numpy import save_file

    from posenc_cli import api

    path = tmp_path / "vit.safetensors"
    save_file({"pe": smooth_table()}, str(path), metadata=META)
    report = api.check(str(path))
    found = [r for r in report.results if r.name == "grid-locality"]
    assert len(found) == 1 and found[0].passed is None


# ----- plot: the grid's pictures ----------------------------------------------------------------------------------
def _source(table: np.ndarray, meta: dict):
    from posenc_cli.plot import PlotSource

    return PlotSource("vit", {"pe": table}, {"pe": "table"}, meta)


def _figure():
    pytest.importorskip("matplotlib")
    from posenc_cli import plot

    return lambda size: plot._figure(size, 50)


def test_patch_view_draws_each_patchs_cosine_to_the_chosen_one() -> None:
    from posenc_cli.plot import _view_patch

    table = smooth_table()
    _fig, (ax,) = _view_patch(_figure(), [_source(table, META)], {"patch": (2, 5)})
    drawn = np.asarray(ax.images[0].get_array())
    p = table[1:].astype(np.float64)
    want = [p[i] @ p[2 * W + 5] / np.linalg.norm(p[i]) / np.linalg.norm(p[2 * W + 5]) for i in range(H * W)]
    np.testing.assert_allclose(drawn, np.reshape(want, (H, W)), atol=1e-12)


def test_grid_view_draws_feature_k_over_the_grid() -> None:
    """21 features (the smooth table's 16, each k scaled by 1 + k/4, then 5 more at 6 times the size): the first 16
    drawn, each over the grid, the title says so; one colour scale, symmetric about 0 at the largest |value| of the
    features shown (not of the 5 left out), and one colour bar for every panel."""
    from posenc_cli.plot import _view_grid

    table = smooth_table() * (1 + np.arange(D, dtype=np.float32) / 4)
    wide = np.concatenate([table, table[:, :5] * 6], axis=1)
    fig, axes = _view_grid(_figure(), [_source(wide, META)], {})
    assert len(axes) == 16 and fig._suptitle.get_text().endswith("(features 0..15 of 21)")
    for k in (0, 3, 15):
        np.testing.assert_array_equal(np.asarray(axes[k].images[0].get_array()), wide[1:, k].reshape(H, W))
    lim = float(np.abs(table[1:]).max())
    assert {ax.images[0].get_clim() for ax in axes} == {(-lim, lim)}
    assert len(fig.axes) == 17  # the 16 panels and one colour bar


def test_grid_views_apply_only_to_grid_tables() -> None:
    from posenc_cli.plot import applicable

    assert {"grid", "patch"} <= set(applicable([_source(smooth_table(), META)]))
    assert not {"grid", "patch"} & set(applicable([_source(smooth_table(), {})]))
    assert not {"grid", "patch"} & set(applicable([_source(smooth_table()[:-1], META)]))  # rows != grid + extra


def test_patch_outside_the_grid_is_one_line(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from posenc_cli import plot
    from posenc_cli.errors import ParameterError

    with pytest.raises(ParameterError, match="outside vit's 6x8 grid") as err:
        plot.plot("patch", [_source(smooth_table(), META)], tmp_path / "p.png", patch=(6, 0))
    assert "\n" not in str(err.value)
