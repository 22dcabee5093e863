"""Property checks and their registry: what ``posenc check`` measures and which properties each kind must have.

A check is ``(ctx: CheckContext) -> CheckResult`` (see :mod:`posenc_cli.checkbase`). The registry
:data:`CHECKS` is literal and ordered for display; :data:`DEFAULT_EXPECT` says which properties each kind is
required to have unless ``--require`` overrides it. The measurements live in ``checks_absolute`` (tables with
one row per position), ``checks_rope`` (cos/sin tables) and ``checks_relative`` (len x len matrices).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from ..formats import is_float
from .absolute import (
    check_bounded,
    check_constant_norm,
    check_decay,
    check_equidistant,
    check_offset_invariant,
    check_precision,
    check_shift_linear,
    check_symmetric,
    check_unique,
)
from .base import CheckContext, CheckResult
from .common import blocks, fmt, scan, tensor, verdict
from .matrix import check_monotone, check_t5_saturation, check_toeplitz, has_matrix
from .rotary import check_long_term_decay, check_norm_preserving, check_pythagorean, check_relative, has_tables

#: Kinds whose primary tensor has one row per position (the absolute-table checks apply).
ABSOLUTE_KINDS = ("sinusoidal", "sinusoidal-2d", "sinusoidal-3d", "learned", "index", "normalized", "binary")
ROPE_KINDS = ("rope", "xpos")
MATRIX_KINDS = ("alibi", "t5", "relative")


@dataclass(frozen=True)
class CheckDef:
    """A registered check: the function, the kinds it is meant for (None: any kind) and a one-line doc.

    ``fits`` says whether the source holds the data the check needs (e.g. a 2-D float table). For a source
    of unknown kind (a raw .npy), ``applies_to`` is not consulted: only ``fits``.
    """

    func: Callable[[CheckContext], CheckResult]
    applies_to: tuple[str, ...] | None
    doc: str
    fits: Callable[[CheckContext], bool] = lambda ctx: True


def _float_table(ctx: CheckContext) -> bool:
    t = ctx.table
    return t.ndim == 2 and t.shape[0] >= 1 and is_float(t.dtype)


def _position_table(ctx: CheckContext) -> bool:
    """A float table whose rows are positions and that is not a cos/sin pair (rope has its own checks)."""
    return _float_table(ctx) and not has_tables(ctx) and ctx.kind not in ROPE_KINDS


def _has_float_tensor(ctx: CheckContext) -> bool:
    return is_float(ctx.table.dtype) or any(is_float(tensor(ctx, name).dtype) for name in ctx.tensors)


# ----- checks that look at every tensor --------------------------------------------------------------
def check_finite(ctx: CheckContext) -> CheckResult:
    """No NaN or infinity in any floating tensor (ALiBi's causal -inf above the diagonal is a mask, not a fault)."""
    arrays = {name: tensor(ctx, name) for name in ctx.tensors}
    if not any(a is ctx.table for a in arrays.values()):
        arrays = {"table": ctx.table, **arrays}
    counts, masked = {}, 0
    causal_mask = ctx.kind == "alibi" and ctx.metadata.get("causal", "false").lower() in ("1", "true", "yes", "on")
    for name, a in arrays.items():
        if not is_float(a.dtype):
            continue
        if a is ctx.table and a.ndim == 2:  # the scan every absolute check shares has counted it already
            sc = scan(ctx)
            counts[name] = {"nan": sc.nan, "inf": sc.inf}
            continue
        nan = inf = 0
        above = None  # strictly above the diagonal: where a causal ALiBi bias holds its -inf mask
        if causal_mask and name == "bias" and a.ndim == 3:
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
        detail = f"every value of {', '.join(counts)} is finite" + (f" ({masked} -inf causal-mask entries above the diagonal)" if masked else "")
    else:
        detail = "; ".join(f"{name}: {c['nan']} NaN, {c['inf']} inf" for name, c in counts.items() if c["nan"] + c["inf"])
    return verdict("finite", total == 0, total, 0, detail, counts=counts, masked=masked)


def check_matches_spec(ctx: CheckContext) -> CheckResult:
    """Regenerate every tensor block by block from the metadata and compare with the file's."""
    enc = ctx.encoding
    specs = enc.tensor_specs()
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
        step = max(1, (1 << 21) // max(1, int(np.prod(spec.shape[1:], dtype=np.int64))))
        for s in range(0, spec.shape[0], step):
            e = min(s + step, spec.shape[0])
            want = np.asarray(enc.rows(name, s, e), dtype=np.float64)
            got = np.asarray(a[s:e], dtype=np.float64)
            same = (got == want) | (np.isnan(got) & np.isnan(want))
            with np.errstate(invalid="ignore"):
                rel = np.where(same, 0.0, np.abs(got - want) / np.maximum(1.0, np.abs(want)))
            rel = np.where(np.isnan(rel), np.inf, rel)
            if rel.size and rel.max() > err:
                err = float(rel.max())
                if err > worst:
                    idx = np.unravel_index(int(rel.argmax()), rel.shape)
                    worst, where = err, f"{name}[{s + idx[0]}{''.join(f', {i}' for i in idx[1:])}]"
        per[name] = err
    tol = ctx.rtol
    ok = bool(compared) and not shape_bad and worst <= tol
    if not compared and not shape_bad:
        detail = f"none of the spec's tensors ({', '.join(specs)}) is in the source"
    elif shape_bad:
        detail = "; ".join(shape_bad)
    elif ok:
        detail = f"{', '.join(compared)} match {enc.KIND} regenerated from the metadata"
    else:
        detail = f"{where} differs from the regenerated value by {fmt(worst)} (relative to max(1, |value|))"
    if missing and compared:
        detail += f"; not in the source: {', '.join(missing)}"
    return verdict("matches-spec", ok, worst, tol, detail, "exact (regenerated block by block)", per_tensor=per, missing=missing)


# ----- the registry ----------------------------------------------------------------------------------
_ABS_OR_ROPE = ABSOLUTE_KINDS + ROPE_KINDS

#: Every check, in display order.
CHECKS: dict[str, CheckDef] = {
    "finite": CheckDef(check_finite, None, "no NaN or infinity in any floating tensor", _has_float_tensor),
    "matches-spec": CheckDef(check_matches_spec, None, "every tensor equals the table regenerated from its metadata",
                             lambda ctx: ctx.encoding is not None),
    "bounded": CheckDef(check_bounded, _ABS_OR_ROPE, "every |value| <= 1 (rope: <= attention_scaling)", _float_table),
    "unique": CheckDef(check_unique, _ABS_OR_ROPE, "distinct positions get distinct rows", _float_table),
    "constant-norm": CheckDef(check_constant_norm, ABSOLUTE_KINDS, "every row has the same norm", _position_table),
    "equidistant": CheckDef(check_equidistant, ABSOLUTE_KINDS, "|P[t+1] - P[t]| is the same for every t", _position_table),
    "offset-invariant": CheckDef(check_offset_invariant, ABSOLUTE_KINDS,
                                 "distance and dot product of P[t], P[t+k] depend only on k", _position_table),
    "shift-linear": CheckDef(check_shift_linear, ABSOLUTE_KINDS, "one matrix M_k maps every P[t] to P[t+k]", _position_table),
    "symmetric": CheckDef(check_symmetric, ABSOLUTE_KINDS, "distance to t+k equals distance to t-k", _position_table),
    "decay": CheckDef(check_decay, ABSOLUTE_KINDS, "report: how the mean dot product P[t].P[t+k] falls with k", _position_table),
    "precision": CheckDef(check_precision, _ABS_OR_ROPE, "report: rows that stay distinct in float16 and bfloat16", _float_table),
    "pythagorean": CheckDef(check_pythagorean, ("rope",), "cos^2 + sin^2 = attention_scaling^2 at every entry", has_tables),
    "norm-preserving": CheckDef(check_norm_preserving, ("rope",), "rotating by any row keeps vector norms", has_tables),
    "relative": CheckDef(check_relative, ("rope",), "<R_m q, R_n k> depends only on m - n", has_tables),
    "long-term-decay": CheckDef(check_long_term_decay, ("rope",),
                                "RoFormer's bound on |<R_m q, R_n k>| falls with distance", has_tables),
    "toeplitz": CheckDef(check_toeplitz, MATRIX_KINDS, "the matrix depends only on j - i (per head)", has_matrix),
    "monotone": CheckDef(check_monotone, MATRIX_KINDS, "bias/bucket/index moves one way with distance", has_matrix),
    "t5-saturation": CheckDef(check_t5_saturation, ("t5",), "saturates at max_distance, uses the expected buckets", has_matrix),
}

_ABS_TABLE = ("finite", "bounded", "unique", "constant-norm")
#: kind -> properties required by default (only those measurable on the source are required).
#: index: P[t] = t*1 is equidistant and symmetric but affine, not shift-linear (row 0 is 0, and no linear map
#: sends 0 to k*1), unbounded, and its dot products t(t+k)d depend on t. normalized: the same line scaled into
#: [0, 1], so bounded too. binary: bounded and unique only (7 -> 8 flips every bit, so steps differ).
DEFAULT_EXPECT: dict[str | None, tuple[str, ...]] = {
    "sinusoidal": (*_ABS_TABLE, "equidistant", "offset-invariant", "shift-linear", "symmetric", "matches-spec"),
    "sinusoidal-2d": (*_ABS_TABLE, "matches-spec"),
    "sinusoidal-3d": (*_ABS_TABLE, "matches-spec"),
    "rope": ("finite", "bounded", "pythagorean", "norm-preserving", "relative", "matches-spec"),
    "xpos": ("finite", "unique", "matches-spec"),
    "learned": ("finite", "unique", "matches-spec"),
    "index": ("finite", "unique", "equidistant", "symmetric", "matches-spec"),
    "normalized": ("finite", "bounded", "unique", "equidistant", "symmetric", "matches-spec"),
    "binary": ("finite", "bounded", "unique", "matches-spec"),
    "alibi": ("finite", "toeplitz", "monotone", "matches-spec"),
    "t5": ("toeplitz", "monotone", "t5-saturation", "matches-spec"),
    "relative": ("toeplitz", "monotone", "matches-spec"),
    None: ("finite",),
}


def _known(kind: str | None) -> str | None:
    return kind if kind in DEFAULT_EXPECT else None


def applicable(ctx: CheckContext) -> list[str]:
    """Every check that can run on this source, in display order."""
    kind = _known(ctx.kind)
    return [name for name, c in CHECKS.items()
            if (kind is None or c.applies_to is None or kind in c.applies_to) and c.fits(ctx)]


def run_checks(ctx: CheckContext, names: Iterable[str] | None = None) -> list[CheckResult]:
    """Run ``names`` (default: every applicable check) in display order."""
    wanted = applicable(ctx) if names is None else list(names)
    _validate(wanted)
    return [CHECKS[name].func(ctx) for name in CHECKS if name in wanted]


def _validate(names: Iterable[str]) -> None:
    for name in names:
        if name not in CHECKS:
            raise ParameterError(f"unknown check {name!r}; choose from: {', '.join(CHECKS)}")


def required_for(kind: str | None, require: list[str] | None, available: list[str]) -> list[str]:
    """The properties that must hold: ``require`` when given (validated), else the kind's defaults that
    are measurable (``available``)."""
    if require is not None:
        _validate(require)
        return list(dict.fromkeys(require))
    return [name for name in DEFAULT_EXPECT[_known(kind)] if name in available]
