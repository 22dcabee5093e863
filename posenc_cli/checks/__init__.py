"""Property checks and their registry: what ``posenc check`` measures.

A check is ``(ctx: CheckContext) -> CheckResult`` (see :mod:`.base`). The registry :data:`CHECKS` is literal
and ordered for display. Which properties a kind is judged by, and which of them it must have, is the kind's
own declaration (``Encoding.PROPERTIES``); a check finds its data by tensor role (``Encoding.ROLES``), never
by kind. Every check but those of the tensors as stored (``finite``, ``matches-spec``) judges the rows that are
positions only: a class, register or padding row is left out, and said (:mod:`.rows`). The measurements live in :mod:`.general` (every tensor), :mod:`.absolute` (tables with one row per
position), :mod:`.rotary` (cos/sin tables) and :mod:`.matrix` (len x len matrices).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError
from ..formats import is_float
from .absolute import (
    check_bounded,
    check_constant_norm,
    check_decay,
    check_distinct,
    check_equidistant,
    check_offset_invariant,
    check_precision,
    check_shift_linear,
    check_symmetric,
    check_unique,
)
from .base import CheckContext, CheckResult
from .common import rows_per_block, tensor
from .general import check_finite, check_matches_spec
from .grid import check_grid_locality
from .grid import fits as grid_fits
from .matrix import check_monotone, check_t5_saturation, check_toeplitz, has_matrix
from .rotary import (
    RELATIVE_PAIRS,
    check_long_term_decay,
    check_norm_preserving,
    check_pythagorean,
    check_relative,
    has_tables,
)
from .rows import positions
from .sweep import BLOCK_ELEMS

__all__ = [
    "CHECKS", "CheckContext", "CheckDef", "CheckResult", "applicable", "not_judged", "required_for", "run_checks",
]  # fmt: skip


@dataclass(frozen=True)
class CheckDef:
    """A registered check: the function, a one-line doc, and ``fits``: whether the source holds the data the
    check needs (e.g. a 2-D float table). A kind's ``PROPERTIES`` say which checks it is judged by; a source of
    unknown kind (a raw .npy) gets every check that fits."""

    func: Callable[[CheckContext], CheckResult]
    doc: str
    fits: Callable[[CheckContext], bool] = lambda ctx: True
    #: True: a property of the tensors as stored, judged on every row (``finite``, ``matches-spec``); False: a
    #: property of positions, judged on the rows that are positions only (:func:`.rows.positions`).
    whole: bool = False
    #: the check compares with the spec (``matches-spec``): the position rows only when the spec was identified
    #: from them (``CheckContext.spec_of_positions``)
    regenerates: bool = False

    def context(self, ctx: CheckContext) -> CheckContext:
        """The context this check judges: ``ctx``, or its position rows."""
        whole = self.whole and not (self.regenerates and ctx.spec_of_positions)
        return ctx if whole else positions(ctx)


def _float_table(ctx: CheckContext) -> bool:
    t = ctx.table
    return t.ndim == 2 and t.shape[0] >= 1 and is_float(t.dtype)


def _position_table(ctx: CheckContext) -> bool:
    """A float table whose rows are positions and that is not a cos/sin pair (those have their own checks)."""
    return _float_table(ctx) and not has_tables(ctx)


def _has_float_tensor(ctx: CheckContext) -> bool:
    return is_float(ctx.table.dtype) or any(
        (a := tensor(ctx, name)) is not None and is_float(a.dtype) for name in ctx.tensors
    )


#: Every check, in display order.
CHECKS: dict[str, CheckDef] = {
    "finite": CheckDef(check_finite, "no NaN or infinity in any floating tensor", _has_float_tensor, whole=True),
    "matches-spec": CheckDef(check_matches_spec, "every tensor equals the table regenerated from its metadata",
                             lambda ctx: ctx.encoding is not None, whole=True, regenerates=True),
    "bounded": CheckDef(check_bounded, "every |value| <= the kind's bound (1; rope: attention_scaling)", _float_table),
    "distinct": CheckDef(check_distinct, "at least two rows, no two identical (every kind's table)", _float_table),
    "unique": CheckDef(check_unique, "distinct positions get distinct rows", _float_table),
    "constant-norm": CheckDef(check_constant_norm, "every row has the same norm", _position_table),
    "equidistant": CheckDef(check_equidistant, "|P[t+1] - P[t]| is the same for every t", _position_table),
    "offset-invariant": CheckDef(check_offset_invariant,
                                 "distance and dot product of P[t], P[t+k] depend only on k", _position_table),
    "shift-linear": CheckDef(check_shift_linear, "one matrix M_k maps every P[t] to P[t+k]", _position_table),
    "symmetric": CheckDef(check_symmetric, "distance to t+k equals distance to t-k", _position_table),
    "decay": CheckDef(check_decay, "report: how the mean dot product P[t].P[t+k] falls with k", _position_table),
    "precision": CheckDef(check_precision, "report: rows that stay distinct in float16 and bfloat16", _float_table),
    "grid-locality": CheckDef(check_grid_locality, "report: cosine of patches to their grid neighbours vs far ones",
                              grid_fits),
    "pythagorean": CheckDef(check_pythagorean, "cos^2 + sin^2 = attention_scaling^2 at every entry", has_tables),
    "norm-preserving": CheckDef(check_norm_preserving, "rotating by any row keeps vector norms", has_tables),
    "relative": CheckDef(check_relative, "<R_m q, R_n k> depends only on m - n", has_tables),
    "long-term-decay": CheckDef(check_long_term_decay,
                                "RoFormer's bound on |<R_m q, R_n k>| falls with distance", has_tables),
    "toeplitz": CheckDef(check_toeplitz, "the matrix depends only on j - i (per head)", has_matrix),
    "monotone": CheckDef(check_monotone, "bias/bucket/index moves one way with distance", has_matrix),
    "t5-saturation": CheckDef(check_t5_saturation, "saturates at max_distance, uses the expected buckets", has_matrix),
}  # fmt: skip

#: What every table must have whatever its kind, the kind unknown too: finite values, and (a table of positions,
#: one row each) at least two rows, no two alike: a zero, constant, repeated-row or one-row table encodes no
#: position, and no property it passes vacuously (equidistant steps of 0) makes it one.
UNKNOWN_KIND_REQUIRES = ("finite", "distinct")


def applicable(ctx: CheckContext) -> list[str]:
    """Every check that can run on this source, in display order: the kind's declared properties and what every
    table needs (:data:`UNKNOWN_KIND_REQUIRES`) that fit the data, or every check that fits when the kind is
    unknown."""
    declared = ctx.kind_cls.PROPERTIES if ctx.kind_cls is not None else None
    return [
        name
        for name, c in CHECKS.items()
        if (declared is None or name in declared or name in UNKNOWN_KIND_REQUIRES) and c.fits(c.context(ctx))
    ]


def run_checks(ctx: CheckContext, names: Iterable[str] | None = None) -> list[CheckResult]:
    """Run ``names`` (default: every applicable check) in display order."""
    wanted = applicable(ctx) if names is None else list(names)
    _validate(wanted)
    return [(c := CHECKS[name]).func(c.context(ctx)) for name in CHECKS if name in wanted]


def _validate(names: Iterable[str]) -> None:
    for name in names:
        if name not in CHECKS:
            raise ParameterError(f"unknown check {name!r}; choose from: {', '.join(CHECKS)}")


def required_for(kind: str | type | None, require: list[str] | None, available: list[str]) -> list[str]:
    """The properties that must hold: ``require`` when given (validated), else the declared required properties
    of ``kind`` (a name or a kind's class) that are measurable (``available``)."""
    if require is not None:
        _validate(require)
        return list(dict.fromkeys(require))
    kind_cls: Any = kind
    if isinstance(kind, str):
        from ..encodings import KINDS, get_kind

        kind_cls = get_kind(kind) if kind in KINDS else None
    if kind_cls is None:
        return [name for name in CHECKS if name in UNKNOWN_KIND_REQUIRES and name in available]
    declared = kind_cls.PROPERTIES
    return [name for name in CHECKS if (declared.get(name) or name in UNKNOWN_KIND_REQUIRES) and name in available]


def not_judged(kind: str | type | None, available: list[str]) -> dict[str, str]:
    """The properties a table of unknown kind cannot be judged by, and why: every property ``check`` measured
    beyond :data:`UNKNOWN_KIND_REQUIRES` (whether it must hold is the kind's to say), and ``matches-spec`` (nothing
    to regenerate the table from). Empty for a known kind."""
    if kind is not None:
        return {}
    why = "no kind says whether it must hold: measured, shown in lowercase"
    out = {"matches-spec": "no kind or spec to regenerate the table from"}
    out.update({n: why for n in available if n not in UNKNOWN_KIND_REQUIRES and n != "matches-spec"})
    return out


def probe_bytes(shape: tuple[int, ...], probes: int) -> int:
    """An upper bound on the float64 bytes the probes allocate on a table of ``shape`` (rows ``n``, width ``d``,
    the columns of every further axis).

    Per probe: the Gram probe (:func:`.absolute.gram_toeplitz_probe`) holds ``x``, ``xa``, ``xb`` (``n`` each),
    ``[xa | xb]`` and ``w = P u`` (``2 n`` each); shift-linear holds ``w = P [x | M_k x]`` for up to 3 offsets
    (``4 n``) and its residual (``n``), with ``d``-long vectors of both (``16 d``) and one ``(d, 2)`` partial per
    block of the shared read; the rotary ``relative`` check rotates ``RELATIVE_PAIRS`` rows for q and k (about
    6 temporaries of ``RELATIVE_PAIRS x d``)."""
    # the shared read's blocks (BLOCK_ELEMS), the rotary check's pairs: this module imports every check module
    n = int(shape[0]) if shape else 1
    d = math.prod(int(s) for s in shape[1:]) if len(shape) > 1 else 1
    blocks = -(-n // rows_per_block(d, BLOCK_ELEMS))
    per_probe = 12 * n + (16 + 2 * blocks) * d + 6 * RELATIVE_PAIRS * d
    return 8 * probes * per_probe
