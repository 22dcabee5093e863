"""Why two tables differ: a catalogue of explanations, each tested by undoing it and measuring what is left.

``compare`` says *whether* a table ``A`` matches the reference ``B``; :func:`diagnose` says *why not*. Each
explanation is a forward model "``A`` is ``B`` changed by these steps"; it is reported only when predicting ``A``
from ``B`` through the steps leaves a residual within tolerance (2 ulps of the coarser dtype, or compare's
``atol``), and the residual is stated.

The catalogue is a literal registry (:data:`.registry.EXPLANATIONS`: slug, documentation, the tier that proposes
it and the candidate models it tries), searched by a short driver over cost tiers (:data:`.registry.TIERS`);
each search lives in the module of what it explains (:mod:`.columns`, :mod:`.offsets`,
:mod:`.frequencies`, :mod:`.angles`, :mod:`.heads`), on the shared models of :mod:`.core`. Nothing here names an encoding kind: layouts are recognised from the tables'
structure (duplicated halves, sin/cos pairs). Work is bounded: tables are read on a few hundred rows (all rows
below 4M elements), plus one streaming pass over the reference when a row offset has to be searched for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .core import (
    PLACEHOLDERS,
    Diagnosis,
    Explanation,
    Model,
    Stacked,
    Step,
    finish,
    make_ctx,
    rotary_pair,
    undo,
    verify,
)
from .heads import diagnose_3d
from .parameters import explain_readings
from .registry import EXPLANATIONS, TIERS, ExplanationInfo, Search, Tier, drive

__all__ = ["EXPLANATIONS", "PLACEHOLDERS", "TIERS", "Diagnosis", "Explanation", "ExplanationInfo", "Step", "Tier",
           "diagnose", "undo"]  # fmt: skip


def diagnose(
    a: Any,
    b: Any,
    *,
    a_name: str = "A",
    b_name: str = "B",
    tensors_a: dict[str, Any] | None = None,
    tensors_b: dict[str, Any] | None = None,
    readings: tuple[Any, Any] | None = None,
    metadata: tuple[Mapping[str, str], Mapping[str, str]] | None = None,
) -> Diagnosis:
    """Explain why table ``a`` differs from the reference ``b``.

    Parameters
    ----------
    a, b : array_like or LazyTensor
        2-D tables (rows = positions) or 3-D heads x len x len tables; memory maps are read on a sample of rows.
    a_name, b_name : str
        How summaries call the tables.
    tensors_a, tensors_b : dict, optional
        A rotary pair for each side, keyed by role (``cos``, ``sin``) or by tensor names that start with them
        (``cos_cache``); when both are given the pair is diagnosed as one table, so that a negated sin or
        exchanged cos/sin can be named.
    readings : (Reading, Reading), optional
        Both tables read as a kind with parameters (:func:`.parameters.read_source`): their differences are
        stated first, parameter by parameter (``A is rope base 10000; B gives 500000``).
    metadata : (mapping, mapping), optional
        Both tables' metadata: two vision tables of one model at one grid (``grid``, ``resampling``,
        ``model_dir``) are explained by the resampling that made each (:mod:`.resampling`).

    Returns
    -------
    Diagnosis
        ``explanations`` that account for the difference, best (fewest steps, then smallest residual) first.
    """
    shape_a, shape_b = tuple(int(s) for s in a.shape), tuple(int(s) for s in b.shape)
    pa, pb = rotary_pair(tensors_a), rotary_pair(tensors_b)
    blocks = None
    if pa is not None and pb is not None:
        a, b = Stacked(list(pa)), Stacked(list(pb))
        blocks = ["cos", "sin"]
    diag = Diagnosis(a_name, b_name, shape_a, shape_b, False)
    if len(a.shape) == 1:
        a = np.asarray(a).reshape(-1, 1)
    if len(b.shape) == 1:
        b = np.asarray(b).reshape(-1, 1)
    if len(a.shape) == 3 and len(b.shape) == 3:
        exps, tried_3d, reason = diagnose_3d(a, b, a_name, b_name)
        if reason == "same":
            diag.same = True
            return diag
        if readings is not None:
            exps = explain_readings(a_name, b_name, readings)[0] + exps
        return finish(diag, exps, tried_3d, "" if exps else reason)
    if len(a.shape) != 2 or len(b.shape) != 2:
        diag.reason = f"shapes {shape_a} and {shape_b}: diagnosis needs two 2-D tables or two heads x len x len tables"
        return diag
    # the wider table plays B: a partial-rotary A is a subset of B's columns
    if int(a.shape[1]) > int(b.shape[1]) and int(a.shape[1]) != int(b.shape[0]):
        back = None if readings is None else (readings[1], readings[0])
        meta_back = None if metadata is None else (metadata[1], metadata[0])
        flipped = diagnose(b, a, a_name=b_name, b_name=a_name, readings=back, metadata=meta_back)
        flipped.a_name, flipped.b_name, flipped.shape_a, flipped.shape_b = a_name, b_name, shape_a, shape_b
        return flipped
    ctx = make_ctx(a, b, a_name, b_name, blocks)
    if ctx is None:
        diag.reason = f"{a_name} or {b_name} is empty"
        return diag
    if shape_a == shape_b or (blocks and a.shape == b.shape):
        model = Model()
        res = verify(ctx, model)
        if res.within and ctx.precision is None:
            diag.same = True
            return diag
    st = drive(ctx, readings if readings is not None and None not in readings else None, metadata)
    return finish(diag, st.explanations, st.tried, "" if st.explanations else _reason(st, shape_a, shape_b))


def _reason(st: Search, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> str:
    """Why nothing accounts for the difference, with the closest attempt."""
    c = st.ctx
    if shape_a != shape_b and not (st.transposable or c.n_a == c.n_b or c.d_a == c.d_b):
        return (
            f"shapes {shape_a} and {shape_b} differ and neither is a slice, transpose or partial-rotary part "
            f"of the other"
        )
    reason = "no explanation in the catalogue accounts for the difference"
    plain = [e for e in st.tried if e.name in ("identity", "sub-range", "transpose")]
    others = [e for e in st.tried if e not in plain]
    if plain:
        reason += f" (max abs difference {plain[0].residual_max_abs:.3g} on {plain[0].rows_checked} rows"
        reason += f"; closest explanation: {others[0].summary})" if others else ")"
    elif others:
        reason += f" (closest: {others[0].summary})"
    return reason
