"""`posenc generate`: build a table; preview it on a terminal, stream .npy when piped, write a file with -o."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ..errors import ParameterError
from ._common import (
    DEFAULT_MAX_BYTES,
    DimOpt,
    DtypeOpt,
    ForceOpt,
    FormatOpt,
    GridOpt,
    HfConfigOpt,
    LenOpt,
    MaxBytesOpt,
    ParamOpt,
    QuietOpt,
    TensorOpt,
    _complete_kind,
    _msg,
    _params,
    _pipe_safe,
    _write,
    app,
)


# ----- generate ------------------------------------------------------------------------------------
@app.command()
@_pipe_safe
def generate(
    kind: Annotated[str, typer.Option("--kind", "-k", help="Encoding kind (see `posenc kinds`).", autocompletion=_complete_kind)] = "sinusoidal",
    length: LenOpt = None,
    dim: DimOpt = None,
    param: ParamOpt = None,
    dtype: DtypeOpt = None,
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Output file, or - for stdout.", show_default=False)] = None,
    format: FormatOpt = None,
    tensor: TensorOpt = None,
    force: ForceOpt = False,
    grid: GridOpt = None,
    hf_config: HfConfigOpt = None,
    precision: Annotated[int, typer.Option("--precision", help="Decimals in the terminal preview.")] = 3,
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
    quiet: QuietOpt = False,
) -> None:
    """Generate a table. On a terminal: a preview; piped: .npy bytes; with -o: a file (format from the suffix).

    Examples: posenc generate --len 512 --dim 128;  posenc generate -n 5 -d 6 -p preset=tf-tutorial;
    posenc generate -n 512 -d 128 -o pe.safetensors;  posenc generate -n 512 -d 128 | posenc check -
    """
    from ..encodings import make_encoding
    from ..sources import check_size

    if hf_config is not None and kind == "sinusoidal":
        kind = "rope"
    params = _params(param, grid, hf_config, length)
    merged: dict[str, object] = dict(params)
    if length is not None:
        merged["length"] = length
    if dim is not None and "dim" not in params:
        merged["dim"] = dim
    if dtype is not None:
        merged["dtype"] = dtype
    enc = make_encoding(kind, merged)
    check_size(enc.nbytes(), max_bytes, f"{kind} table")
    if output is None and sys.stdout.isatty():
        _preview(enc, precision)
        return
    dest = "-" if output is None else output
    tensors = enc.lazy_tensors()
    from .. import formats

    fmt_name = formats.format_for(dest, format) if dest != "-" else (format or "npy")
    if fmt_name in ("npy", "csv") or tensor is not None:
        name = tensor or enc.PRIMARY
        if name not in tensors:
            raise ParameterError(f"{kind} has no tensor {name!r}; choose from: {', '.join(tensors)}")
        if fmt_name in ("npy", "csv"):
            tensors = {name: tensors[name]}
    _write(dest, tensors, enc.metadata(), format, force, quiet)
    if dest != "-":
        _msg(f"wrote {dest} ({', '.join(f'{n} {tuple(t.shape)}' for n, t in tensors.items())}, {enc.dtype})", quiet)


def _preview(enc, precision: int) -> None:
    import numpy as np

    from ..encodings.base import dtype_name
    from ..render import preview

    specs = enc.tensor_specs()
    primary = specs[enc.PRIMARY]
    rows = min(primary.shape[0], 10)
    corner = enc.rows(primary.name, 0, rows)
    if corner.ndim > 2:
        corner = corner[0]  # e.g. alibi bias: the first head
    if corner.ndim == 2:
        corner = corner[:, :8]
    # value range over the whole table when it is cheap, else over a sample of row blocks
    cheap = primary.nbytes <= 256 * 1024**2
    lo, hi = np.inf, -np.inf
    n = primary.shape[0]
    starts = range(0, n, 4096) if cheap else sorted({0, n // 2, max(n - 4096, 0)})
    for s in starts:
        block = np.asarray(enc.rows(primary.name, s, min(s + 4096, n)), dtype=np.float64)
        if block.size:
            lo, hi = min(lo, float(np.nanmin(block))), max(hi, float(np.nanmax(block)))
    small = {name: enc.rows(name, 0, spec.shape[0]) for name, spec in specs.items()
             if name != primary.name and len(spec.shape) == 1 and spec.shape[0] <= 64}
    preview(
        title=f"{enc.KIND} positional encoding",
        specs=[(s.name, s.shape, dtype_name(s.dtype)) for s in specs.values()],
        params={k: v for k, v in enc.metadata().items() if k not in ("kind", "posenc_version")},
        primary=primary.name,
        corner=corner,
        shape=primary.shape,
        value_range=(lo, hi),
        range_note="" if cheap else " (sampled rows)",
        small=small,
        precision=precision,
    )
