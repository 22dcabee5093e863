"""Rows of a table that are not positions (class, distillation and register rows, a padding row, the offset rows
before it), and the view of the table that every property of positions judges.

A table says which of its rows are not positions in one convention, ``extra_rows`` = ``"index:name,..."``: in a
file's metadata (ViT-family tables read from a model's weights, vision towers' rotary tables), through its kind's
parameters (:meth:`posenc_cli.encodings.base.Encoding.extra_rows`: ``sinusoidal-2d``'s ``cls_token``, fairseq's
``padding_idx``), or, for a table that carries neither, from the user (``check --extra-rows 0:cls``).
:func:`not_positions` reads them once per source, and :func:`positions` gives the checks the rows that are
positions: they must be one run of consecutive rows (the checks measure steps between neighbouring rows), and the
report says which rows were left out and why ("row 0 (cls) is not a position: not checked"). The checks of the
tensors as stored (``finite``, ``matches-spec``) still read every row: a class row must be what its spec says too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..encodings.grid import parse_extra_rows as parse
from ..errors import ParameterError, param
from .base import CheckContext

#: Tensor roles whose rows are positions (``Encoding.ROLES``): sliced with the primary table.
ROW_ROLES = ("table", "cos", "sin", "cos-cache", "sin-cache", "scale")


def describe(rows: Mapping[int, str]) -> str:
    """``{0: "offset", 1: "offset", 2: "padding"}`` -> ``"rows 0-1 (offset) and row 2 (padding) are not
    positions"``: runs of consecutive rows with one name, in row order."""
    runs: list[tuple[int, int, str]] = []
    for i in sorted(rows):
        if runs and runs[-1][1] == i - 1 and runs[-1][2] == rows[i]:
            runs[-1] = (runs[-1][0], i, rows[i])
        else:
            runs.append((i, i, rows[i]))
    parts = [f"row {a} ({n})" if a == b else f"rows {a}-{b} ({n})" for a, b, n in runs]
    said = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{said} {'is not a position' if len(rows) == 1 else 'are not positions'}"


@dataclass(frozen=True)
class NotPositions:
    """The rows of a source's tables that are not positions: ``rows`` (row -> name), where that was said
    (``origin``), and the run ``[start, stop)`` of rows that are positions."""

    rows: dict[int, str]
    origin: str
    start: int
    stop: int

    def text(self) -> str:
        return f"{describe(self.rows)}: not checked ({self.origin})"

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": {str(i): n for i, n in sorted(self.rows.items())},
            "origin": self.origin,
            "positions": [self.start, self.stop],
            "text": self.text(),
        }


def _position_run(rows: Mapping[int, str], n: int, label: str, origin: str) -> tuple[int, int]:
    """The rows of an ``n``-row table that ``rows`` leaves, as ``[start, stop)``; an error naming the rows when
    they fall outside the table, leave no position, or split the positions in two."""
    outside = [i for i in rows if i >= n]
    if outside:
        raise ParameterError(
            f"{origin}: row {outside[0]} is outside {label}'s {n} rows (0-{n - 1}); name rows of the table"
        )
    kept = [i for i in range(n) if i not in rows]
    if not kept:
        raise ParameterError(f"{origin}: every row of {label} is named as not a position; nothing is left to check")
    start, stop = kept[0], kept[-1] + 1
    if stop - start != len(kept):
        inside = sorted(i for i in rows if start < i < stop)
        raise ParameterError(
            f"{origin}: row {inside[0]} ({rows[inside[0]]}) lies between position rows {start} and {stop - 1}; the "
            "positions of a table are one run of rows: name the rows on one side of it too"
        )
    return start, stop


def not_positions(
    n: int,
    label: str,
    encoding: Any,
    metadata: Mapping[str, str],
    given: str | None,
    positional: bool,
) -> NotPositions | None:
    """Which of the ``n`` rows of ``label``'s tables are not positions, or None when every row is one.

    In order: the kind's parameters (``encoding``: a spec, a file posenc wrote, the identification, ``--against``),
    else (they name none) the metadata's ``extra_rows``; ``given`` (``--extra-rows``) says it for a table that says nothing, and is
    refused where the table says otherwise or its rows are not positions (``positional`` False: a matrix of
    distances, not one row per position).
    """
    option = param("extra_rows")
    if given is not None and not positional:
        raise ParameterError(
            f"{option} {given} cannot apply to {label}: its table is not one row per position (a matrix of query "
            f"and key distances); drop {option}"
        )
    said: dict[int, str] = {}
    origin = ""
    if encoding is not None:
        said = encoding.extra_rows()
        meta = encoding.metadata()
        named = ", ".join(f"{k}={meta[k]}" for k in type(encoding).EXTRA_ROWS_FROM if k in meta)
        origin = (f"{encoding.KIND} with {named}" if named else f"{encoding.KIND}'s parameters") if said else ""
    if not said and metadata.get("extra_rows"):  # the kind says none (or there is no kind): the file may
        said = parse(metadata["extra_rows"], "metadata extra_rows")
        origin = "the metadata's extra_rows"
    if given is not None:
        wanted = parse(given, option)
        if said and wanted != said:
            raise ParameterError(f"{option} {given} contradicts {label}: {origin} says {describe(said)}; drop {option}")
        if not said:
            said, origin = wanted, f"as given: {given}"
    if not said:
        return None
    start, stop = _position_run(said, n, label, f"{option} {given}" if origin.startswith("as given") else origin)
    return NotPositions(dict(said), origin, start, stop)


def positions(ctx: CheckContext) -> CheckContext:
    """The context the properties of positions judge: ``ctx`` itself when every row is a position, else its
    tables narrowed to the position rows (tensors of another length, ``inv_freq``, are kept whole). Made once per
    context."""
    left = ctx.left_out
    if left is None:
        return ctx
    cache = ctx.__dict__.setdefault("_check_cache", {})
    if "positions" not in cache:
        n, a, b = ctx.table.shape[0], left.start, left.stop

        def narrow(name: str | None, t: Any) -> Any:
            rowlike = (name is None or ctx.role(name) in ROW_ROLES or ctx.role(name) is None) and (
                getattr(t, "ndim", 0) >= 2 and t.shape[0] == n
            )
            return t[a:b] if rowlike else t

        table = ctx.table[a:b]
        tensors = {k: (table if v is ctx.table else narrow(k, v)) for k, v in ctx.tensors.items()}
        cache["positions"] = dataclasses.replace(ctx, table=table, tensors=tensors, left_out=None, first_row=a)
    out: CheckContext = cache["positions"]
    return out
