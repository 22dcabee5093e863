"""A proposed reading of a table (:class:`Candidate`) and the helpers the kinds' structure readers share.

The structure readers (:mod:`posenc_cli.inspect.hints`) propose candidates; :mod:`.identification` verifies and
names them. Both import this module and neither imports the other's internals, so imports run one way:
identification -> hints -> candidates -> analysis, tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import analysis as an
from . import tolerance as tol

#: A hint: the tensors and their analysis -> candidate parameter sets for one kind.
Hint = Callable[[dict[str, Any], an.TableAnalysis], list["Candidate"]]


@dataclass
class Candidate:
    """A kind and parameters proposed from the table's structure, and how well they reproduce it.

    ``params`` are every parameter given to ``make_encoding`` (``length``, ``dim``, ``dtype`` included);
    ``tensor_map`` maps input tensor names to the encoding's tensor names (default: same names, or the primary
    tensor for a single input); ``note`` is the structure that suggested it. ``structural`` is False for a guess
    made because the structure did not fit (kept so that failures can name the closest kind); a ``fallback`` is
    verified only when no other candidate of its kind accounts. Verification fills ``max_abs``, ``ulp`` (of
    ``ulp_dtype``), ``cosine``, ``accounts``, ``rows_checked`` and ``why`` (why it fails); naming fills
    ``preset``, ``presets`` (every preset whose values hold), ``explicit`` (what differs from the defaults and the
    preset) and ``command``.
    """

    kind: str
    params: dict[str, Any]
    tensor_map: dict[str, str] = field(default_factory=dict)
    note: str = ""
    structural: bool = True
    fallback: bool = False
    max_abs: float = math.inf
    ulp: float = math.inf
    ulp_dtype: str = ""
    cosine: float = float("nan")
    accounts: bool = False
    rows_checked: int = 0
    why: str = ""
    preset: str | None = None
    presets: list[str] = field(default_factory=list)
    explicit: dict[str, Any] = field(default_factory=dict)
    command: str = ""
    tolerance: str = ""
    formula: tol.FormulaVerdict | None = None
    #: the framework convention the parameters follow, when the reading knows it ("slopes as MLX computes them")
    convention: str = ""
    #: parameters that name a precision mistake (``inv_freq_dtype`` -> "inv_freq rounded to bfloat16"): the label
    #: says them in words, after the kind's own parameters
    mistake: dict[str, str] = field(default_factory=dict)

    def key(self) -> tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
        from ..encodings.base import format_value

        return (
            self.kind,
            tuple(sorted((k, format_value(v)) for k, v in self.params.items())),
            tuple(sorted(self.tensor_map.items())),
        )

    def label(self) -> str:
        """``kind`` with its preset and distinctive parameters, for one-line messages."""

        bits = [f"preset {self.preset}"] if self.preset else []
        shown = self.explicit if (self.explicit or self.preset or self.command) else _short_params(self.params)
        bits += [f"{k} {show_value(v)}" for k, v in shown.items() if k not in self.mistake]
        named = f" with {' and '.join(self.mistake.values())}" if self.mistake else ""
        return " ".join([self.kind, *bits[:4]]) + named

    def to_json(self) -> dict[str, Any]:
        from ..encodings.base import format_value

        def num(v: float) -> float | str:
            return v if math.isfinite(v) else str(v)

        return {
            "kind": self.kind,
            "label": self.label(),
            "preset": self.preset,
            "presets": self.presets,
            "params": {k: format_value(v) for k, v in self.params.items()},
            "explicit": {k: format_value(v) for k, v in self.explicit.items()},
            "tensor_map": self.tensor_map,
            "note": self.note,
            "accounts": self.accounts,
            "max_abs": num(self.max_abs),
            "ulp": num(self.ulp),
            "ulp_dtype": self.ulp_dtype,
            "cosine": num(self.cosine),
            "rows_checked": self.rows_checked,
            "tolerance": self.tolerance,
            "formula_bound": None if self.formula is None else self.formula.to_json(),
            "convention": self.convention,
            "mistake": list(self.mistake.values()),
            "why": self.why,
            "command": self.command,
        }


def show_value(value: Any) -> str:
    """A parameter value as a person types it: ``format_value``, with integral floats without ``.0``
    (``base=500000``; the kind's parser reads it back as the same float)."""
    from ..encodings.base import format_value

    if isinstance(value, float) and value.is_integer() and abs(value) < tol.INTEGRAL_SHOWN:
        return str(int(value))
    return format_value(value)


def _short_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in ("length", "dim", "dtype")}


# ----- helpers the hints share (generic: no kind names) ----------------------------------------------------------
def round_variants(value: float, *, tols: tuple[float, ...] = tol.VALUE_ROUNDINGS, keep: bool = True) -> list[float]:
    """``value`` rounded to its shortest decimal within each relative tolerance (distinct, shortest first),
    plus the value itself when ``keep``."""
    out = []
    for t in sorted(tols, reverse=True):
        v = an.nice_number(value, t)
        if v not in out:
            out.append(v)
    if keep and value not in out:
        out.append(float(value))
    return out


def base_params(ana: an.TableAnalysis, *, dim: bool = True) -> dict[str, Any]:
    """``length``, ``dim`` (the columns) and ``dtype`` of the main table."""
    p: dict[str, Any] = {"length": ana.n}
    if dim and ana.ndim >= 2:
        p["dim"] = ana.width
    if ana.dtype_param is not None:
        p["dtype"] = ana.dtype_param
    return p


def ladder(spec: an.Spectrum) -> tuple[np.ndarray, np.ndarray, list[an.Oscillator]]:
    """Oscillators from the highest frequency down, with their frequencies and errors."""
    osc = spec.by_frequency()
    return np.array([o.freq for o in osc]), np.array([o.err for o in osc]), osc


def base_readings(value: float, coarse: bool = False) -> list[float]:
    """Round readings of a frequency base (``coarse``: a float16/bfloat16 table, read to 1e-3 .. 1e-2 too); a base
    of 1 or below is degenerate (no frequency ladder) and dropped."""
    # slow columns read on few rows (or a coarse dtype) know the base to 1e-3 .. 1e-2 only; regeneration decides
    tols = tol.BASE_ROUNDINGS + (tol.COARSE_BASE_ROUNDINGS if coarse else ())
    return [b for b in round_variants(value, tols=tols) if b > 1.0 and math.isfinite(b)]


def round_base(value: float) -> float | None:
    """``value`` as a base of at most three significant digits within 1e-9 .. 1e-5 (None if it is not one)."""
    for rel in tol.ROUND_BASE_ROUNDINGS:
        nice = an.nice_number(value, rel)
        if an.nice_digits(nice) <= 3 and nice > 1:
            return nice
    return None


def near_one(x: float, within: float = tol.LAW_ROUNDING) -> bool:
    return abs(x - 1.0) <= within
