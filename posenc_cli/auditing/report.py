"""The audit's typed report: rows (artifact x layer type x engine) with a verdict, the largest difference and a
one-line explanation, and the data of the pictures that show where a diverging row diverges.

``AuditReport.to_json()`` is what ``posenc audit --json`` prints; ``schema.json`` beside this module describes it
(``SCHEMA_ID``); a change that a reader of the old JSON would misread bumps the version.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

#: the JSON's version: ``schema`` in every report; schema.json's ``$id`` ends with it
SCHEMA_VERSION = 2
SCHEMA_ID = f"posenc-audit/{SCHEMA_VERSION}"  # schema.json says the same in its "schema" const
SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "schema.json")

#: Row verdicts. ``reference`` is the HF table the others are checked against; ``agree``: equal to it, or (a table
#: checked for its properties) every required property holds; ``differ``: two tables differ; ``failed``: a
#: required property of a table fails (nothing was compared with it: the table is what the model itself
#: computes); ``skipped`` says why a row could not be computed (not a failure of the model); ``error`` is a file
#: that cannot be read (exit 2); ``refused``: a table the model computes with code posenc does not reproduce, named
#: in one line (exit 2, as every refusal).
VERDICTS = ("agree", "differ", "failed", "error", "refused", "skipped", "reference")
#: the verdicts of a row that judged a table (compared it, or checked its properties)
JUDGED = ("agree", "differ", "failed")


@dataclass
class Picture:
    """Where a diverging row diverges: |difference| binned over positions and columns (frequencies), and the
    two sides' frequencies (a spectrum) when both have them."""

    tensor: str
    rows: int
    columns: int
    #: the first position of each position bin, and the largest |difference| in it
    positions: list[int]
    by_position: list[float]
    #: the largest |difference| in each column (each frequency pair of a rotary table)
    by_column: list[float]
    #: position bins x column bins of the largest |difference|
    grid: list[list[float]]
    #: per frequency index: the artifact's and the reference's angular frequency (radians per position)
    spectrum: dict[str, list[float]] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "tensor": self.tensor, "rows": self.rows, "columns": self.columns, "positions": self.positions,
            "by_position": _nums(self.by_position), "by_column": _nums(self.by_column),
            "grid": [_nums(row) for row in self.grid],
            "spectrum": None if self.spectrum is None else {k: _nums(v) for k, v in self.spectrum.items()},
        }  # fmt: skip


@dataclass
class AuditRow:
    """One checked thing: ``artifact`` (a file, relative to the audited directory) for ``layer_type`` as
    ``engine`` computes or stores it, against HF's table for the same layer type."""

    artifact: str
    layer_type: str
    engine: str
    verdict: str
    explanation: str
    max_abs_diff: float | None = None
    length: int | None = None
    details: list[str] = field(default_factory=list)
    picture: Picture | None = None
    #: an engine limit met within the asked positions (:meth:`posenc_cli.models.engines.EngineLimit.to_json`)
    limit: dict[str, Any] | None = None
    #: the properties that fail as the model's own arithmetic makes them (rows it repeats by design), each with
    #: what showed it: expected of the model, not a failure (the row agrees)
    expected: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return self.verdict in ("agree", "reference", "skipped")

    def to_json(self, details: bool = True) -> dict[str, Any]:
        """The row; ``details=False`` leaves the picture's grids out (its tensor and shape stay)."""
        from ..errors import render_params

        p = self.picture
        # compact: the picture's tensor and shape only (its grids are not made, to be dropped)
        picture = None if p is None else p.to_json() if details else {"tensor": p.tensor, "rows": p.rows,
                                                                      "columns": p.columns}  # fmt: skip
        return {
            "artifact": self.artifact, "layer_type": self.layer_type, "engine": self.engine, "verdict": self.verdict,
            "max_abs_diff": None if self.max_abs_diff is None else _num(self.max_abs_diff), "length": self.length,
            "explanation": render_params(self.explanation), "details": [render_params(d) for d in self.details],
            "picture": picture, "limit": self.limit, "expected": [render_params(x) for x in self.expected],
        }  # fmt: skip


@dataclass
class AuditReport:
    """Everything ``audit`` found about one model. ``exit_code``: 0 when every row agrees, 2 when a file could not
    be read or a table is refused, else 1 (a table differs, a property failed, or nothing was judged)."""

    source: str
    config: str | None
    model_type: str | None
    length: int | None
    engines: list[str]
    rows: list[AuditRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    against: str | None = None
    #: the engines' options given (``n_ctx``, ``max_model_len``): what the rows assumed
    settings: dict[str, int] = field(default_factory=dict)

    def respelled(self, spell: Any) -> AuditReport:
        """A copy whose explanations, details and notes name each parameter as ``spell`` does (the CLI: its flags,
        ``--len``); the report itself keeps the references (:func:`posenc_cli.errors.param`) its errors carried."""
        import dataclasses

        from ..errors import render_params

        rows = [dataclasses.replace(r, explanation=render_params(r.explanation, spell),
                                    details=[render_params(d, spell) for d in r.details],
                                    expected=[render_params(x, spell) for x in r.expected]) for r in self.rows]  # fmt: skip
        for new, old in zip(rows, self.rows):
            new.picture = old.picture
        return dataclasses.replace(self, rows=rows, notes=[render_params(n, spell) for n in self.notes])

    @property
    def compared(self) -> int:
        """How many rows judged a table (``agree``, ``differ`` or ``failed``: compared it with something, or checked
        its properties): an audit of none is no pass."""
        return sum(r.verdict in JUDGED for r in self.rows)

    @property
    def ok(self) -> bool:
        """Every row agrees, and at least one compared something."""
        return self.compared > 0 and all(r.agrees for r in self.rows)

    @property
    def exit_code(self) -> int:
        """2 when a row is an error (a file could not be read, a table not built) or refused, else 0 when :attr:`ok`,
        else 1 (a row differs, a property failed, or nothing was compared)."""
        from ..errors import ExitCode

        if any(r.verdict in ("error", "refused") for r in self.rows):
            return int(ExitCode.ERROR)
        return int(ExitCode.OK if self.ok else ExitCode.FAILED)

    def counts(self) -> dict[str, int]:
        return {v: sum(r.verdict == v for r in self.rows) for v in VERDICTS if any(r.verdict == v for r in self.rows)}

    def summary(self) -> str:
        """One line: how many rows, and how they came out."""
        counts = ", ".join(f"{n} {v}" for v, n in self.counts().items())
        head = (
            "every row agrees"
            if self.ok
            else (
                "a row could not be made"
                if self.exit_code == 2
                else ("NOTHING COMPARED" if not self.compared else failure_words(self.counts()))
            )
        )
        return f"{self.source}: {len(self.rows)} row(s) ({counts}): {head}"

    def to_json(self, details: bool = False) -> dict[str, Any]:
        """The report in the versioned schema (``schema.json``): compact (each diverging row's picture is its tensor
        and shape) unless ``details``, which adds the pictures' grids and spectra (what ``--html`` draws). Parameters
        are named as in Python (``length=``) unless :meth:`respelled` named them otherwise."""
        from .. import __version__
        from ..errors import render_params

        return {
            "schema": SCHEMA_ID, "posenc_version": __version__, "source": self.source, "against": self.against,
            "config": self.config, "model_type": self.model_type, "length": self.length, "engines": self.engines,
            "settings": dict(self.settings),
            "ok": self.ok, "exit_code": self.exit_code, "counts": self.counts(), "compared": self.compared,
            "details": details, "rows": [r.to_json(details) for r in self.rows],
            "notes": [render_params(n) for n in self.notes],
        }  # fmt: skip


def failure_words(counts: dict[str, int]) -> str:
    """What went wrong in words, a difference told apart from a property failure: ``DIFFERS``, ``A PROPERTY
    FAILED`` or both."""
    said = (["DIFFERS"] if counts.get("differ") else []) + (["A PROPERTY FAILED"] if counts.get("failed") else [])
    return "; ".join(said) or "DIFFERS"


def _nums(values: Any) -> list[float | str]:
    """:func:`_num` of each value: the finite case (every value of nearly every picture) at C speed (a picture's
    grid is 16384 values, each a Python call of :func:`_num` otherwise)."""
    out: list[Any] = list(map(float, values))
    return out if all(map(math.isfinite, out)) else [_num(x) for x in out]


def _num(x: float) -> float | str:
    """A number for JSON: non-finite values as the strings 'nan', 'inf', '-inf' (as check --json writes them)."""
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
