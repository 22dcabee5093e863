"""Why two resampled vision tables differ: which ``F.interpolate`` call made each, from their native table.

Two tables of the same model at the same image size (``grid`` metadata equal, the native table read again from
the ``model_dir`` and ``weights_tensor`` their metadata name) differ when their resampling differs: HF's
``interpolate_pos_encoding`` against timm's ``resample_abs_pos_embed`` (antialias), bicubic against bilinear
(SigLIP 2 NaFlex), ``align_corners``, ``size=`` against ``scale_factor=`` (DINO's original code passed
``(new + 0.1) / old``). :func:`explain` resamples the native grid with every candidate call
(:data:`CANDIDATES`, :mod:`posenc_cli.encodings.resample`) and says which one reproduces each side, within the
float32 rounding of the kernels (:func:`noise`), and how the two calls differ. A side that no candidate reproduces
is said as such ("not checked" is an answer: nothing is guessed).

It is an entry of the diagnosis registry (:data:`.registry.EXPLANATIONS`, slug ``resampling``, tier
``resampling``): :func:`propose` runs when :func:`..diagnose` is given both tables' metadata and :func:`applies`
to them; ``compare`` and ``audit`` reach it through :func:`..diagnose`, like every other explanation.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ...encodings.resample import CALLS
from .core import Diagnosis, Explanation, Step

#: every call tried (:data:`posenc_cli.encodings.resample.CALLS`)
CANDIDATES = CALLS


def applies(meta_a: Mapping[str, str], meta_b: Mapping[str, str]) -> bool:
    """Both sides are vision tables (``grid`` and ``resampling`` in their metadata) of one grid."""
    keys = ("grid", "resampling", "grid_offset", "extra_rows")
    return all(k in meta_a and k in meta_b for k in keys) and meta_a["grid"] == meta_b["grid"]


def noise(native: Any) -> float:
    """The float32 rounding a resized table may carry (:func:`..tolerance.resample_tol` of its largest value)."""
    import numpy as np

    from ..tolerance import resample_tol

    return resample_tol(float(np.abs(native).max()))


def _native(meta: Mapping[str, str]) -> tuple[Any, Any] | None:
    """``(layout, table)`` of the model a table's metadata names, or None when it is not at hand."""
    from ...errors import PosencError
    from ...models.config_file import load_config
    from ...models.vision import layout_of

    path = meta.get("model_dir")
    if not path or not os.path.isdir(path):
        return None
    try:
        layout, table, _, _ = layout_of(path, load_config(path), None)
    except PosencError:
        return None
    return layout, table


def _grid_rows(meta: Mapping[str, str], rows: Any) -> Any:
    """The grid rows of a table, row-major, from its ``grid``, ``grid_offset`` metadata."""
    h, w = (int(v) for v in meta["grid"].split("x"))
    first = int(meta["grid_offset"])
    return rows[first : first + h * w]


def _matches(native_grid: Any, grid: tuple[int, int], rows: Any, tol: float) -> list[tuple[str, float]]:
    """Every candidate call (and keeping the table, when the grid is the native one) that reproduces ``rows``."""
    import numpy as np

    from ...encodings.resample import resample

    found: list[tuple[str, float]] = []
    old = (native_grid.shape[0], native_grid.shape[1])
    if old == grid:
        diff = float(np.abs(native_grid.reshape(-1, native_grid.shape[-1]) - rows).max())
        if diff <= tol:
            found.append(("kept as it is", diff))
    for rule in CANDIDATES:
        factors = rule.scale_factors(old, grid)
        if factors is not None:
            from ...encodings.resample import output_size

            if output_size(old, factors) != grid:
                continue
            out = resample(native_grid, rule=rule, scale_factor=factors)
        else:
            out = resample(native_grid, grid, rule)
        diff = float(np.abs(out.reshape(-1, out.shape[-1]) - rows).max())
        if diff <= tol:
            found.append((rule.describe(), diff))
    return found


def _differences(a: str, b: str) -> str:
    """The parts of two calls that differ: ``antialias=False`` vs ``antialias=True``."""
    pa, pb = [p.strip() for p in a.split(",")], [p.strip() for p in b.split(",")]
    if len(pa) != len(pb):
        return f"{a} vs {b}"
    return "; ".join(f"{x} vs {y}" for x, y in zip(pa, pb) if x != y) or "nothing"


def explain(
    a_name: str, meta_a: Mapping[str, str], rows_a: Any, b_name: str, meta_b: Mapping[str, str], rows_b: Any
) -> Diagnosis | None:
    """Which resampling made each side, and how they differ; None when the native table is not at hand (or the
    two sides are not of one model)."""
    import numpy as np

    found = _native(meta_a)
    other = _native(meta_b)
    if found is None or other is None:
        return None
    layout, table = found
    if other[1].shape != table.shape or not np.array_equal(np.asarray(other[1]), np.asarray(table)):
        return None
    # rows that are not one resized 2-D grid (a frame table added, tubelets, a folded row, a layer's table)
    if layout.time is not None or layout.frames or layout.extra_use == "added" or "layer" in {**meta_a, **meta_b}:
        return None
    cells = layout.cells(table)
    native_grid = np.asarray(cells, dtype=np.float32).reshape(layout.native_grid[0], layout.native_grid[1], -1)
    grid = tuple(int(v) for v in meta_a["grid"].split("x"))
    tol = noise(native_grid)
    ga = np.asarray(_grid_rows(meta_a, rows_a), dtype=np.float32)
    gb = np.asarray(_grid_rows(meta_b, rows_b), dtype=np.float32)
    ma = _matches(native_grid, (grid[0], grid[1]), ga, tol)
    mb = _matches(native_grid, (grid[0], grid[1]), gb, tol)
    engines = (meta_a["resampling"].split(",")[0], meta_b["resampling"].split(",")[0])
    shape_a, shape_b = tuple(np.shape(rows_a)), tuple(np.shape(rows_b))
    if not ma or not mb:
        which = [n for n, m in ((a_name, ma), (b_name, mb)) if not m]
        text = (
            f"{' and '.join(which)}: no resampling of the native {layout.native_grid[0]}x{layout.native_grid[1]} "
            f"table reproduces it (tried {len(CANDIDATES)} calls of F.interpolate); not explained"
        )
        return Diagnosis(a_name, b_name, shape_a, shape_b, False, reason=text)
    call_a, res_a = ma[0]
    call_b, res_b = mb[0]
    same_call = any(c == call_b for c, _ in ma)
    if same_call:
        text = f"both are the native table resampled as {call_b}; the grids agree, the extra rows differ"
    else:
        text = (
            f"{a_name} is the native table resampled as {call_a} ({engines[0]}); {b_name} as {call_b} "
            f"({engines[1]}): they differ by {_differences(call_a, call_b)}"
        )
    step = resampling_step(call_a, call_b, engines, same_call)
    exp = Explanation(
        name="resampling",
        summary=text,
        steps=[step],
        residual_max_abs=max(res_a, res_b),
        residual_ulp=max(res_a, res_b) / float(np.spacing(np.float32(np.abs(native_grid).max()))),
        ulp_dtype="float32",
        accounts=True,
        rows_checked=int(ga.shape[0]),
    )
    return Diagnosis(a_name, b_name, shape_a, shape_b, False, explanations=[exp])


def resampling_step(call_a: str, call_b: str, engines: tuple[str, str], same_call: bool) -> Step:
    """The step that words a resampling difference: the call that made each side, and what differs."""
    clause = (
        f"both are the native table resampled as {call_b}"
        if same_call
        else f"A was resampled as {call_a} ({engines[0]}), B as {call_b} ({engines[1]})"
    )
    detail = {"a": call_a, "b": call_b, "engines": list(engines), "differs": _differences(call_a, call_b)}
    return Step("resampling", clause, f"resample the native table as {call_b}", detail)


def propose(ctx: Any, metadata: tuple[Mapping[str, str], Mapping[str, str]]) -> tuple[list[Explanation], list[Any]]:
    """The registry's search (tier ``resampling``): the explanation when one call of the native table reproduces
    each side; else, when the native table is at hand, the attempt that says no call does (closest attempts)."""
    import math

    found = explain(ctx.a_name, metadata[0], ctx.a, ctx.b_name, metadata[1], ctx.b)
    if found is None:
        return [], []
    if found.explanations:
        return list(found.explanations), []
    return [], [Explanation("resampling", found.reason, [], math.inf, math.inf, "float32", False, 0)]
