"""Properties of a table whose rows are the patches of a 2-D grid (ViT-family learned tables): a report of how local
it is over the grid.

A table says it is a grid in its metadata: ``grid`` = ``HxW``, ``grid_offset`` = the row of patch (0, 0) (the class
and register rows come first), ``extra_rows`` = ``"index:name,..."`` (rows that are not patches: left out of every
property of positions, :mod:`.rows`), rows in row-major order (``row_order`` absent or ``raster``).
``grid-locality`` measures the mean cosine similarity of each patch's row to its 4 neighbours on the grid and to the patches at least half the grid's longer side away (Manhattan
distance), exactly over every pair; a table learned on images is smooth (neighbours near 1, distant patches lower),
a shuffled or untrained one is not. Reported, never required.
"""

from __future__ import annotations

import numpy as np

from ..encodings.grid import grid_layout
from .base import CheckContext, CheckResult

NAME = "grid-locality"


def fits(ctx: CheckContext) -> bool:
    t = ctx.table
    return grid_layout(ctx.metadata) is not None and t.ndim == 2 and t.dtype.kind == "f"


def check_grid_locality(ctx: CheckContext) -> CheckResult:
    layout = grid_layout(ctx.metadata)
    assert layout is not None
    h, w, first = layout
    # ``ctx`` holds the position rows only (:mod:`.rows`): the class and register rows are left out already
    rows = ctx.table.shape[0]
    if rows != h * w or ctx.first_row != first:
        detail = (
            f"not measured: {rows} position rows from row {ctx.first_row} are not the grid {h}x{w} ({h * w} "
            f"patches from row {first})"
        )
        return CheckResult(NAME, None, None, None, detail, "skipped")
    patches = np.asarray(ctx.table, dtype=np.float64)
    if not np.isfinite(patches).all() or h * w < 2:
        return CheckResult(NAME, None, None, None, "not measured: non-finite values or one patch", "skipped")
    norms = np.linalg.norm(patches, axis=1)
    unit = patches / np.where(norms > 0, norms, 1.0)[:, None]
    sim = unit @ unit.T
    y, x = np.divmod(np.arange(h * w), w)
    dist = np.abs(y[:, None] - y[None, :]) + np.abs(x[:, None] - x[None, :])
    far_from = max(2, (max(h, w) + 1) // 2)
    near, far = sim[dist == 1], sim[dist >= far_from]
    near_mean = float(near.mean())
    far_mean = float(far.mean()) if far.size else float("nan")
    detail = (
        f"mean cosine to the 4 neighbours {near_mean:.3f}, to patches >= {far_from} apart {far_mean:.3f} "
        f"(grid {h}x{w} from row {first})"
    )
    data = {"neighbours": near_mean, "distant": far_mean, "distant_from": far_from}
    return CheckResult(NAME, None, near_mean, None, detail, "exact over every pair of patches", data)
