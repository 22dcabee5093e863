"""`posenc compare`: metrics between two tables and a verdict."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..errors import ExitCode, ParameterError
from ._common import (
    DEFAULT_MAX_BYTES,
    DimOpt,
    DtypeOpt,
    GridOpt,
    JsonOpt,
    LenOpt,
    MaxBytesOpt,
    ParamOpt,
    TensorOpt,
    _params,
    _pipe_safe,
    _source,
    _validate_table,
    app,
)


# ----- compare -------------------------------------------------------------------------------------
@app.command()
@_pipe_safe
def compare(
    a: Annotated[str, typer.Argument(help="First table: file, - or spec.")],
    b: Annotated[str, typer.Argument(help="Reference table: file, - or spec (len/dim default to the first's shape).")],
    length: LenOpt = None,
    dim: DimOpt = None,
    param: ParamOpt = None,
    dtype: DtypeOpt = None,
    tensor: TensorOpt = None,
    grid: GridOpt = None,
    atol: Annotated[Optional[float], typer.Option("--atol", help="Absolute tolerance (default: 2 ulp of 1.0 in the coarser dtype).", show_default=False)] = None,
    rtol: Annotated[float, typer.Option("--rtol", help="Relative tolerance.")] = 0.0,
    json_out: JsonOpt = False,
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
) -> None:
    """Compare two tables: max abs / relative / ulp difference and where, mean difference, row cosine.

    Exit 0 same, 1 different, 2 trouble. Example: posenc compare exported.npy sinusoidal --len 512 --dim 128
    """
    from ..compare import compare as compare_tables

    if atol is not None and not (atol >= 0):
        raise ParameterError(f"--atol {atol} must be >= 0")
    if not (rtol >= 0):
        raise ParameterError(f"--rtol {rtol} must be >= 0")
    if a == "-" and b == "-":
        raise ParameterError("only one source can be - (stdin)")
    params = _params(param, grid)
    src_a = _source(a, length, dim, params, dtype, max_bytes)
    src_b = _source(b, length, dim, params, dtype, max_bytes, like=src_a)
    if src_a.encoding is not None and not src_a.tensors and src_b.tensors:  # spec first, file second
        src_a = _source(a, length, dim, params, dtype, max_bytes, like=src_b)
    ta, tb = src_a.tensor_name(tensor), src_b.tensor_name(tensor)
    arr_a, arr_b = src_a.array(ta), src_b.array(tb)
    _validate_table(arr_a, ta, src_a.label)
    _validate_table(arr_b, tb, src_b.label)
    res = compare_tables(arr_a, arr_b, atol=atol, rtol=rtol)
    res.labels = {"a": f"{src_a.label} [{ta}]", "b": f"{src_b.label} [{tb}]"}
    if json_out:
        from ..render import print_json

        print_json(res.to_json())
    else:
        from ..render import compare_table

        compare_table(res, res.labels["a"], res.labels["b"])
    raise typer.Exit(ExitCode.OK if res.same else ExitCode.FAILED)
