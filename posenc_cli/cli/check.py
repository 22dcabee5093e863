"""`posenc check`: measure every property of one or more tables."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ..encodings import KINDS
from ..errors import ExitCode, InputError, ParameterError
from ._common import (
    DEFAULT_MAX_BYTES,
    DimOpt,
    DtypeOpt,
    GridOpt,
    JsonOpt,
    LenOpt,
    MaxBytesOpt,
    ParamOpt,
    QuietOpt,
    TensorOpt,
    _complete_kind,
    _params,
    _pipe_safe,
    _progress_enabled,
    _source,
    app,
)


# ----- check ---------------------------------------------------------------------------------------
@app.command()
@_pipe_safe
def check(
    sources: Annotated[Optional[list[str]], typer.Argument(help="Files, - for stdin, or specs KIND[:key=value,...].", show_default=False)] = None,
    length: LenOpt = None,
    dim: DimOpt = None,
    param: ParamOpt = None,
    dtype: DtypeOpt = None,
    tensor: TensorOpt = None,
    grid: GridOpt = None,
    expect: Annotated[Optional[str], typer.Option("--expect", help="Judge the table as this kind (default: the kind in its metadata).", autocompletion=_complete_kind, show_default=False)] = None,
    require: Annotated[Optional[str], typer.Option("--require", help="Comma-separated properties that must hold (default: the kind's).", show_default=False)] = None,
    probes: Annotated[int, typer.Option("--probes", help="Random probes for randomized checks.")] = 8,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random probes.")] = 0,
    json_out: JsonOpt = False,
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
    quiet: QuietOpt = False,
) -> None:
    """Measure every property of a table (finite, bounded, unique, constant-norm, equidistant, ...).

    Exit 0 when every required property holds, 1 when one fails, 2 on bad input.
    Example: posenc check pe.safetensors;  posenc check sinusoidal:preset=tf-tutorial --len 5 --dim 6
    """
    from .. import checks
    from ..checks.base import CheckContext, rtol_for
    from ..encodings import get_kind

    if not sources:
        if sys.stdin.isatty():
            raise ParameterError("give a source: a file, - for stdin, or a spec like sinusoidal (see posenc check --help)")
        sources = ["-"]
    if expect is not None:
        get_kind(expect)
    required_names = [r.strip() for r in require.split(",") if r.strip()] if require else None
    params = _params(param, grid)
    reports = []
    all_ok = True
    for text in sources:
        src = _source(text, length, dim, params, dtype, max_bytes)
        name = src.tensor_name(tensor)
        table = src.array(name)
        kind = expect or src.kind
        _validate_checkable(table, name, src.label, kind)
        ctx = CheckContext(
            table=table,
            # a foreign file (no posenc metadata) is judged by the chosen tensor alone
            tensors={n: src.array(n) for n in src.names} if src.encoding is not None
            else {name: table},
            metadata=src.metadata,
            kind=kind,
            encoding=src.encoding if (src.encoding is not None and (expect is None or expect == src.kind)) else None,
            rtol=rtol_for(table.dtype),
            seed=seed,
            probes=probes,
        )
        results = _run_checks_with_progress(checks, ctx, src.label, quiet)
        if not results:
            raise InputError(
                f"{src.label}: no property can be measured on tensor {name!r} ({table.dtype} {tuple(table.shape)}); "
                "pass --expect KIND or pick a table with --tensor"
            )
        available = [r.name for r in results]
        required = checks.required_for(kind, required_names, available)
        failed = [r.name for r in results if r.name in required and r.passed is False]
        missing = [n for n in required if n not in available]
        if missing:
            raise ParameterError(f"--require {','.join(missing)}: not measurable on {src.label}; measurable: {', '.join(available)}")
        ok = not failed
        all_ok &= ok
        reports.append((src, kind, results, required, failed, ok, name))
    if json_out:
        from ..render import print_json

        print_json([
            {"source": src.label, "tensor": name, "kind": kind, "ok": ok, "required": required, "failed": failed,
             "results": [r.to_json() for r in results]}
            for src, kind, results, required, failed, ok, name in reports
        ])
    else:
        from ..render import check_summary, check_table

        for src, kind, results, required, failed, ok, name in reports:
            check_table(f"{src.label} [{name}]", kind, results, required)
            if not quiet:
                check_summary(src.label, ok, failed)
    raise typer.Exit(ExitCode.OK if all_ok else ExitCode.FAILED)


def _run_checks_with_progress(checks, ctx, label: str, quiet: bool) -> list:
    """Every applicable check; a progress bar on a terminal when the table is big enough to take a while."""
    names = checks.applicable(ctx)
    if not (_progress_enabled(quiet) and ctx.table.size * ctx.table.itemsize > 32 * 1024**2):
        return checks.run_checks(ctx, names)
    from ..render import progress_bar

    results = []
    with progress_bar(f"checking {label}", len(names), True) as advance:
        for name in names:
            results.extend(checks.run_checks(ctx, [name]))
            advance(1)
    return results


def _validate_checkable(table, name: str, label: str, kind: str | None) -> None:
    """A table ``check`` can judge: one row per position (2-D, or heads x len x len), floats unless the kind is integer."""
    from ..encodings import get_kind
    from ..formats import validate_table_array

    integer_kind = kind in KINDS and get_kind(kind).INTEGER_TABLE
    validate_table_array(table, name, label, need_float=kind in KINDS and not integer_kind)
    if table.ndim == 1:
        raise InputError(
            f"{label}: tensor {name!r} is 1-D (shape {tuple(table.shape)}); an encoding table has one row per "
            "position: pick a 2-D tensor with --tensor or compare 1-D tensors with posenc compare"
        )
