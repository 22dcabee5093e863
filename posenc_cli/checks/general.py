"""Checks that look at every tensor of a source: ``finite`` and ``matches-spec``."""

from __future__ import annotations

import math

import numpy as np

from ..blocks import rows_per_block
from ..formats import is_float
from .base import CheckContext, CheckResult
from .common import blocks, fmt, tensor, verdict
from .sweep import scan


def check_finite(ctx: CheckContext) -> CheckResult:
    """No NaN or infinity in any floating tensor (ALiBi's causal -inf above the diagonal is a mask, not a fault)."""
    arrays = {name: a for name in ctx.tensors if (a := tensor(ctx, name)) is not None}
    if not any(a is ctx.table for a in arrays.values()):
        arrays = {"table": ctx.table, **arrays}
    counts, masked = {}, 0
    causal_mask = ctx.kind_cls is not None and ctx.kind_cls.causal_mask(dict(ctx.metadata))
    for name, a in arrays.items():
        if not is_float(a.dtype):
            continue
        if a is ctx.table and a.ndim == 2:  # the scan every absolute check shares has counted it already
            sc = scan(ctx)
            counts[name] = {"nan": sc.nan, "inf": sc.inf}
            continue
        nan = inf = 0
        above = None  # strictly above the diagonal: where a causal ALiBi bias holds its -inf mask
        if causal_mask and ctx.role(name) == "matrix" and a.ndim == 3:
            above = np.triu(np.ones(a.shape[1:], dtype=bool), k=1)
        for _, b in blocks(ctx, a):
            bad = ~np.isfinite(b)
            if not bad.any():
                continue
            if above is not None:
                mask = (b == -np.inf) & above[None]
                masked += int(mask.sum())
                bad &= ~mask
            nan += int(np.isnan(b).sum())
            inf += int((bad & ~np.isnan(b)).sum())
        counts[name] = {"nan": nan, "inf": inf}
    total = sum(c["nan"] + c["inf"] for c in counts.values())
    if total == 0:
        detail = f"every value of {', '.join(counts)} is finite" + (
            f" ({masked} -inf causal-mask entries above the diagonal)" if masked else ""
        )
    else:
        detail = "; ".join(
            f"{name}: {c['nan']} NaN, {c['inf']} inf" for name, c in counts.items() if c["nan"] + c["inf"]
        )
    return verdict("finite", total == 0, total, 0, detail, counts=counts, masked=masked)


def check_matches_spec(ctx: CheckContext) -> CheckResult:
    """Regenerate every tensor block by block from the metadata and compare with the file's.

    A file whose values were computed in a coarser dtype than its bytes (``export --dtype float32`` of a bfloat16
    file) says so in ``value_dtype``: the table is regenerated in that dtype, as its values were.
    """
    import dataclasses

    from ..inspect.tolerance import spec_rows

    enc = ctx.encoding
    specs = enc.tensor_specs()
    through = ctx.metadata.get("value_dtype")
    if through is not None and through != enc.dtype and "dtype" in {f.name for f in enc.param_fields()}:
        enc = dataclasses.replace(enc, dtype=through)
    # rows the command built already from this encoding (not from one of another dtype)
    regenerated = ctx.regenerated if enc is ctx.encoding else None
    compared, missing, worst, where, shape_bad = [], [], 0.0, "", []
    per = {}
    for name, spec in specs.items():
        a = tensor(ctx, name)
        if a is None:
            missing.append(name)
            continue
        if tuple(a.shape) != tuple(spec.shape):
            shape_bad.append(f"{name} is {tuple(a.shape)}, spec {tuple(spec.shape)}")
            continue
        compared.append(name)
        err = 0.0
        # blocks whose float64 copies stay in cache (posenc_cli.blocks): a differing table's every block is widened
        step = rows_per_block(int(np.prod(spec.shape[1:], dtype=np.int64)))
        for s in range(0, spec.shape[0], step):
            e = min(s + step, spec.shape[0])
            want_raw, got_raw = spec_rows(enc, name, s, e, regenerated), np.asarray(a[s:e])
            if want_raw.dtype == got_raw.dtype and np.array_equal(
                got_raw, want_raw, equal_nan=want_raw.dtype.kind in "fc"
            ):
                continue  # the block is bit for bit the regenerated one (the usual case): one pass, no float64 copy
            want, got = want_raw.astype(np.float64), got_raw.astype(np.float64)
            with np.errstate(invalid="ignore"):  # |got - want| / max(1, |want|), in place
                rel = np.subtract(got, want, out=got)
                np.abs(rel, out=rel)
                np.abs(want, out=want)
                np.maximum(want, 1.0, out=want)
                rel /= want
            top = float(rel.max()) if rel.size else 0.0
            if math.isnan(top):  # a nan or an inf somewhere: equal values (both nan, the same inf) differ by 0
                want, got = want_raw.astype(np.float64), got_raw.astype(np.float64)
                rel[(got == want) | (np.isnan(got) & np.isnan(want))] = 0.0
                rel[np.isnan(rel)] = np.inf
                top = float(rel.max())
            if top > err:
                err = top
                if err > worst:
                    idx = np.unravel_index(int(rel.argmax()), rel.shape)
                    worst, where = err, f"{name}[{s + idx[0]}{''.join(f', {i}' for i in idx[1:])}]"
        per[name] = err
    tol = ctx.rtol
    ok = bool(compared) and not shape_bad and worst <= tol
    formula = None
    # only the tensors off by more than ``rtol`` need the bound (an inv_freq beside them is exact or not)
    off = [n for n in compared if per[n] > tol]
    known = getattr(ctx.arithmetic, "formula", None)
    angles = all(enc.angle_terms(n) is not None for n in off)
    if not ok and compared and not shape_bad and known is not None and known.ok and enc is ctx.encoding and angles:
        formula, ok = known, True  # the arithmetic was inferred from these very tensors against this encoding
    elif not ok and compared and not shape_bad:
        # computed with the float32 formula (HF, fairseq, ...): within that error, with the bound, it matches
        from ..inspect.tolerance import formula_check_table

        verdicts = [
            formula_check_table(a, enc, n, regenerated=regenerated) for n in off if (a := tensor(ctx, n)) is not None
        ]
        if verdicts and all(v is not None and v.ok for v in verdicts):
            formula = max(verdicts, key=lambda v: v.bound)  # type: ignore[union-attr]
            ok = True
    if not compared and not shape_bad:
        detail = f"none of the spec's tensors ({', '.join(specs)}) is in the source"
    elif shape_bad:
        detail = "; ".join(shape_bad)
    elif ok and formula is not None:
        detail = f"{', '.join(compared)} match {enc.KIND} regenerated from {ctx.spec_origin}, {formula.text()}"
    elif ok:
        detail = f"{', '.join(compared)} match {enc.KIND} regenerated from {ctx.spec_origin}"
    else:
        detail = f"{where} differs from the regenerated value by {fmt(worst)} (relative to max(1, |value|))"
    if missing and compared:
        detail += f"; not in the source: {', '.join(missing)}"
    return verdict(
        "matches-spec",
        ok,
        worst,
        tol if formula is None else formula.bound,  # every difference is within its bound, the largest
        detail,
        "exact (regenerated block by block)" if formula is None else "float32 formula's error bound",
        per_tensor=per,
        missing=missing,
        **({} if formula is None else {"formula": formula.to_json()}),
    )
