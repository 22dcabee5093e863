"""The result objects of the library's verbs: :func:`posenc_cli.api.preview`, :func:`~posenc_cli.api.check`,
:func:`~posenc_cli.api.compare`, and the whole commands :func:`~posenc_cli.api.check_sources` and
:func:`~posenc_cli.api.compare_sources` (:class:`Verdicts`), whose items are these reports, GGUF verdicts
(:class:`posenc_cli.models.llamacpp.Verdict`) and ONNX checks (:class:`posenc_cli.models.onnx.OnnxCheck`). Also
``posenc_cli.api.Preview`` etc., and ``posenc_cli.Comparison``; :mod:`posenc_cli.render` renders every one.

They live apart from the functions so that a command that only writes a table (``posenc generate -o``) does not
build their classes at start-up: each dataclass costs about as much as 1.5% of ``import numpy``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .checks.base import CheckResult
    from .inspect.metrics import CompareResult


@dataclass
class Preview:
    """What a person sees first of an encoding: tensors, parameters, value range and the table's corner."""

    title: str
    specs: list[tuple[str, tuple[int, ...], str]]
    params: dict[str, str]
    primary: str
    corner: Any
    shape: tuple[int, ...]
    value_range: tuple[float, float]
    range_note: str
    small: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """What ``posenc generate --json`` prints without ``-o``: the tensors, parameters, value range and the
        corner of the primary tensor (as floats; ``null`` for non-finite values)."""
        import math

        import numpy as np

        def num(x: Any) -> Any:
            x = float(x)
            return x if math.isfinite(x) else None

        return {
            "title": self.title,
            "tensors": [{"name": n, "shape": list(shape), "dtype": dtype} for n, shape, dtype in self.specs],
            "parameters": dict(self.params),
            "primary": self.primary,
            "shape": list(self.shape),
            "value_range": [num(v) for v in self.value_range],
            "corner": [[num(v) for v in np.atleast_1d(row)] for row in np.asarray(self.corner, dtype=np.float64)],
        }


#: The name ``failed`` gives a table that differs from what ``check --against`` compared it with.
AGAINST = "against"


def check_verdict(
    statuses: Mapping[str, str], required: Sequence[str], against_same: bool | None = None
) -> tuple[bool, list[str]]:
    """``check``'s verdict from each property's status (``PASS``, ``FAIL``, ``INFO``, ``NOT RUN``), the required
    properties and, with ``--against``, whether the table equals its reference: ``(ok, failed)``, where
    ``failed`` names every required property that failed or could not run (a required property must have held)
    and :data:`AGAINST` when the table differs, and ``ok`` is exactly ``not failed``: the one rule the report,
    its JSON and the exit code read."""
    failed = [n for n in required if statuses.get(n) in ("FAIL", "NOT RUN")]
    if against_same is False:
        failed.append(AGAINST)
    return not failed, failed


@dataclass
class CheckReport:
    """What ``check`` measured on one source: every property, which were required, and the verdict.

    ``tensor`` is the primary table judged; ``tensors`` every tensor judged (a RoPE source: cos, sin and
    inv_freq), ``not_checked`` the source's tensors left out (``tensor=`` narrowed), ``unmeasured`` the kind's
    required properties that the judged tensors cannot show (e.g. a rotary pair property with only ``sin``).
    ``assumed`` says what the table was taken to be when it carries no kind (its identification, or why none was
    found); ``against`` is the comparison with the spec it was checked against (``check --against``).
    """

    source: str
    tensor: str
    kind: str | None
    ok: bool
    required: list[str]
    failed: list[str]
    results: list[CheckResult] = field(default_factory=list)
    #: the properties that could not be measured because one they need failed (e.g. every one after a NaN)
    not_run: list[str] = field(default_factory=list)
    tensors: list[str] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)
    unmeasured: list[str] = field(default_factory=list)
    assumed: str = ""
    assumed_command: str | None = None
    against: Comparison | None = None
    #: the reads of the table that several properties shared (``check --verbose``): for each, the properties it
    #: served, what it computed, and its blocks
    passes: list[dict[str, Any]] = field(default_factory=list)
    #: property -> why it could not be judged (a table of unknown kind: what no kind says must hold)
    not_judged: dict[str, str] = field(default_factory=dict)
    #: the arithmetic the table was judged within (:class:`posenc_cli.inspect.tolerance.Arithmetic`'s JSON)
    arithmetic: dict[str, Any] | None = None
    #: the rows that are not positions, left out of every property of positions, and why
    #: (:class:`posenc_cli.checks.rows.NotPositions`'s JSON); None: every row is a position
    left_out: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "tensor": self.tensor,
            "tensors": self.tensors,
            "not_checked": self.not_checked,
            "kind": self.kind,
            "assumed": self.assumed,
            "assumed_command": self.assumed_command,
            "ok": self.ok,
            "required": self.required,
            "failed": self.failed,
            "not_run": self.not_run,
            "unmeasured": self.unmeasured,
            "not_judged": self.not_judged,
            "arithmetic": self.arithmetic,
            "left_out": self.left_out,
            "against": None if self.against is None else self.against.to_json(),
            "results": [r.to_json() for r in self.results],
            "passes": self.passes,
        }


@dataclass
class TensorComparison:
    """One pair of tensors compared: their names, the metrics, and (when they differ) why."""

    name_a: str
    name_b: str
    result: CompareResult
    diagnosis: Any = None  # posenc_cli.inspect.diagnose.Diagnosis, when the tensors differ and diagnosis was asked for

    def to_json(self) -> dict[str, Any]:
        out = {"a": self.name_a, "b": self.name_b, **self.result.to_json()}
        out["diagnosis"] = None if self.diagnosis is None else self.diagnosis.to_json()
        return out


@dataclass
class Comparison:
    """Every tensor two tables share, compared; a tensor on one side only is a difference (``only_a``,
    ``only_b``) unless the comparison was narrowed to one tensor."""

    label_a: str
    label_b: str
    tensors: list[TensorComparison]
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    #: tensors a spec computes that the table does not hold: not compared, said, not a difference
    skipped: list[str] = field(default_factory=list)
    #: the label of the side that computes the ``skipped`` tensors (the spec, on either side)
    skipped_by: str = ""
    #: the attention type compared, for a model with several (None: the model's one table, or no model)
    layer_type: str | None = None
    #: the limits an engine's side met (:class:`posenc_cli.models.engines.EngineLimit`: a model type it does not
    #: load, a length it refuses, positions out of its cache): each a difference; ``tensors`` then compare the
    #: rows it does compute (none when it computes none)
    limits: list[Any] = field(default_factory=list)
    #: an engine's side: the engine's rules that make its table differ from HF's, each one line with its values
    #: (said where the comparison differs)
    rules: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return all(t.result.same for t in self.tensors) and not self.only_a and not self.only_b and not self.limits

    @property
    def reason(self) -> str:
        """One line: what differs."""
        parts = [lim.line() for lim in self.limits] + ([] if self.same else list(self.rules))
        if self.limits and self.tensors and all(t.result.same for t in self.tensors):
            parts.append("those rows: same")
        parts += self._tensor_reasons()
        if not parts:  # the same: what the verdict took into account, once
            parts = list(dict.fromkeys(t.result.note for t in self.tensors if t.result.note))
        return "; ".join(parts)

    def _tensor_reasons(self) -> list[str]:
        parts = []
        for tc in self.tensors:
            if not tc.result.same:
                why = tc.diagnosis.best.summary if tc.diagnosis is not None and tc.diagnosis.best else ""
                parts.append(f"{tc.name_a}: {tc.result.reason}" + (f" ({why})" if why else ""))
        if self.only_a:
            parts.append(f"only in {self.label_a}: {', '.join(self.only_a)}")
        if self.only_b:
            parts.append(f"only in {self.label_b}: {', '.join(self.only_b)}")
        return parts

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.label_a,
            "b": self.label_b,
            **({} if self.layer_type is None else {"layer_type": self.layer_type}),
            "same": self.same,
            "reason": self.reason,
            "tensors": [t.to_json() for t in self.tensors],
            "only_in_a": self.only_a,
            "only_in_b": self.only_b,
            "skipped": self.skipped,
            **({"skipped_by": self.skipped_by} if self.skipped else {}),
            "limits": [lim.to_json() for lim in self.limits],
            "rules": [] if self.same else list(self.rules),
        }


@dataclass
class Verdicts:
    """What one command judged, every report in order: checks of tables (:class:`CheckReport`), comparisons
    (:class:`Comparison`, one per layer type of a model with several), llama.cpp's tables for a GGUF file against
    HF's (``models.llamacpp.Verdict``) and an ONNX model's caches against its config (``models.onnx.OnnxCheck``).

    ``ok`` holds when every report does; ``warnings`` are what reading the sources had to say, for the caller to
    show once; ``what`` is the kind of the reports (``check``, ``compare``, ``gguf``, ``onnx``)."""

    what: str
    items: list[Any] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(bool(getattr(r, "ok", getattr(r, "same", False))) for r in self.items)


@dataclass
class Description:
    """What ``posenc kinds`` shows (:func:`posenc_cli.api.describe`): ``what`` is ``kinds`` (every kind), ``kind``
    (one kind's tensors, parameters and presets), ``config`` (what a model config sets and from which key, one
    entry per attention type; ``several`` when more than one), ``engines`` (per engine, where its tables depart
    from HF's) or ``gguf`` (what llama.cpp reads from a GGUF file: rows of name, value, origin)."""

    what: str
    source: str | None
    data: Any
    several: bool = False
