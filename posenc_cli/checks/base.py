"""The data every property check receives and returns (no math here; see the other modules of this package).

A check is a function ``(ctx: CheckContext) -> CheckResult``. Checks must run in time roughly linear in the
table size with bounded memory: read big tensors block by block (``ctx.blocks``), and where the exact answer
is quadratic use a sound randomized or sampled method and say so in ``method``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Rows per block when streaming a table through a check (bounded memory on memory-mapped files).
BLOCK_ROWS = 8192


#: Relative tolerance of float comparisons by table dtype: a few ulps of the stored values, so that a
#: correctly rounded table passes and a genuinely different one fails.
RTOL = {"float64": 1e-9, "float32": 1e-5, "float16": 4e-3, "bfloat16": 3.2e-2}


def rtol_for(dtype: np.dtype) -> float:
    """The default ``CheckContext.rtol`` for a table of ``dtype`` (integers compare exactly: 1e-9)."""
    return RTOL.get(np.dtype(dtype).name, 1e-9)


@dataclass(frozen=True)
class CheckResult:
    """One measured property.

    ``passed`` is True/False for a property with a verdict and None for a report (e.g. ``decay``) or for a
    property that could not be measured (``needs`` then names what it waits for, e.g. ``finite``: status
    ``NOT RUN``). ``value`` is the measured number shown to users; ``tolerance`` what it was compared against.
    """

    name: str
    passed: bool | None
    value: float | str | None
    tolerance: float | str | None = None
    detail: str = ""
    method: str = "exact"
    data: dict[str, Any] = field(default_factory=dict)
    needs: tuple[str, ...] = ()

    @property
    def not_run(self) -> bool:
        return bool(self.needs)

    @property
    def status(self) -> str:
        if self.needs:
            return "NOT RUN"
        return "INFO" if self.passed is None else ("PASS" if self.passed else "FAIL")

    def to_json(self) -> dict[str, Any]:
        def clean(v: Any) -> Any:
            if isinstance(v, (np.floating, float)):
                v = float(v)
                return v if np.isfinite(v) else str(v)
            if isinstance(v, np.integer):
                return int(v)
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, (list, tuple)):
                return [clean(x) for x in v]
            return v

        return {
            "name": self.name,
            "status": self.status,
            "value": clean(self.value),
            "tolerance": clean(self.tolerance),
            "detail": self.detail,
            "method": self.method,
            "data": clean(self.data),
            "needs": list(self.needs),
        }


@dataclass
class CheckContext:
    """What a check sees of one source.

    ``table`` is the primary tensor (a NumPy array, possibly memory-mapped: read it in blocks),
    ``tensors`` every tensor of the source by name, ``metadata`` the file's string metadata (``kind``
    and every parameter when posenc wrote it), ``kind`` the expected kind (metadata or ``--expect``),
    ``encoding`` the regenerated Encoding object when the metadata allows it (else None),
    ``rtol`` the relative tolerance for float comparisons of this table's dtype, ``seed`` for probes.
    """

    table: np.ndarray
    tensors: Mapping[str, np.ndarray]
    metadata: Mapping[str, str]
    kind: str | None
    encoding: Any = None
    rtol: float = 1e-5
    seed: int = 0
    probes: int = 8
    #: The kind's class (its declarations: ROLES, PROPERTIES, MONOTONE, hooks); None for an unknown kind.
    kind_cls: Any = None
    #: Where ``encoding`` came from, for messages: "the metadata", a spec (``check --against``), "the
    #: identification" (a file without metadata, identified from its structure).
    spec_origin: str = "the metadata"
    #: The properties about to be measured (``api.check`` sets them), so that the first read of the table
    #: feeds all of them (see :mod:`.sweep`); empty: each check reads what it needs.
    planned: tuple[str, ...] = ()
    #: The arithmetic the table is judged within (:class:`posenc_cli.inspect.tolerance.Arithmetic`; ``api.check``
    #: sets it): every tolerance below is widened by what its error bound can do to the measured quantity. None:
    #: float64's (the exact-table tolerances alone).
    arithmetic: Any = None
    #: The rows of the tables that are not positions (:class:`.rows.NotPositions`: class, register, padding
    #: rows), left out of every property of positions (:func:`.rows.positions`); None: every row is a position.
    left_out: Any = None
    #: The row of the source's table where ``table`` starts (the first position row, in a narrowed context).
    first_row: int = 0
    #: The spec (``encoding``) was identified from the position rows and regenerates those only: ``matches-spec``
    #: compares them, not the rows left out.
    spec_of_positions: bool = False
    #: Whole tensors of ``encoding`` the command has built already (``check --against``: the comparison's
    #: reference), by the spec's tensor name: ``matches-spec`` reads its rows there instead of computing them
    #: again (:func:`posenc_cli.inspect.tolerance.spec_rows`).
    regenerated: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind_cls is None and self.kind is not None:
            from ..encodings import KINDS, get_kind

            if self.kind in KINDS:
                self.kind_cls = get_kind(self.kind)

    def role(self, name: str) -> str | None:
        """What tensor ``name`` is (``Encoding.ROLES``), or None when the kind is unknown or does not say."""
        return None if self.kind_cls is None else self.kind_cls.ROLES.get(name)

    def with_role(self, role: str) -> list[str]:
        """The source's tensors of ``role``, in the source's order."""
        return [name for name in self.tensors if self.role(name) == role]

    def blocks(self, array: np.ndarray | None = None, rows: int = BLOCK_ROWS) -> Iterator[tuple[int, np.ndarray]]:
        """``(start, float64 block)`` pairs covering ``array`` (default: ``table``) along axis 0."""
        a = self.table if array is None else array
        for start in range(0, a.shape[0], rows):
            yield start, np.asarray(a[start : start + rows], dtype=np.float64)

    def rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)


#: The most random probes ``check`` takes (Freivalds residuals shrink like 1/sqrt(probes): thousands say nothing more).
MAX_PROBES = 1 << 16
#: The seeds ``check`` takes: what ``numpy.random.SeedSequence`` takes as a 32-bit word.
MAX_SEED = 2**32 - 1
