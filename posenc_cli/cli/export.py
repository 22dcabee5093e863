"""`posenc export`: the deliberate writer for other frameworks."""

from __future__ import annotations

import dataclasses
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
    _msg,
    _params,
    _pipe_safe,
    _prod,
    _source,
    _write,
    app,
)


# ----- export --------------------------------------------------------------------------------------
@app.command()
@_pipe_safe
def export(
    source: Annotated[str, typer.Argument(help="File, - or spec KIND[:key=value,...].")],
    output: Annotated[str, typer.Option("--output", "-o", help="Output file (.safetensors, .npy, .npz, .csv, .json) or -.")],
    length: LenOpt = None,
    dim: DimOpt = None,
    param: ParamOpt = None,
    dtype: DtypeOpt = None,
    tensor: Annotated[Optional[list[str]], typer.Option("--tensor", "-t", help="Export only these tensors (repeatable).", show_default=False)] = None,
    name: Annotated[Optional[list[str]], typer.Option("--name", help="Rename: NEW (single tensor) or OLD=NEW (repeatable).", show_default=False)] = None,
    format: FormatOpt = None,
    force: ForceOpt = False,
    grid: GridOpt = None,
    hf_config: HfConfigOpt = None,
    onnx_rope: Annotated[bool, typer.Option("--onnx-rope", help="RoPE: write cos_cache/sin_cache [len, rot_dim/2] for the ONNX RotaryEmbedding operator.")] = False,
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
    quiet: QuietOpt = False,
) -> None:
    """Write a table for other frameworks, atomically, C-contiguous, with posenc metadata.

    Example: posenc export sinusoidal --len 2048 --dim 512 --dtype bfloat16 -o pe.safetensors
    """
    from .. import formats
    from ..sources import CastTensor, Source, is_spec

    is_file = not is_spec(source)
    params = _params(param, grid, hf_config, length)
    if onnx_rope and not is_file:  # a file is regenerated with cache=onnx below
        params["cache"] = "onnx"
    if hf_config is not None and source == "sinusoidal":
        source = "rope"
    src = _source(source, length, dim, params, None if is_file else dtype, max_bytes)
    if onnx_rope and is_file:  # a posenc rope file: regenerate its encoding with the ONNX cache layout
        enc = src.encoding
        if enc is None or "cache" not in {f.name for f in enc.param_fields()}:
            raise ParameterError("--onnx-rope needs a rope spec or a posenc-written rope file")
        enc = dataclasses.replace(enc, cache="onnx", **({"dtype": dtype} if dtype else {}))  # --dtype wins
        src = Source.from_encoding(enc, src.label)
    lazy = dict(src.lazy)
    if tensor:
        missing = [t for t in tensor if t not in lazy]
        if missing:
            raise ParameterError(f"{src.label} has no tensor {missing[0]!r}; choose from: {', '.join(lazy)}")
        lazy = {t: lazy[t] for t in tensor}
    fmt_name = formats.format_for(output, format) if output != "-" else (format or "npy")
    if fmt_name in ("npy", "csv") and len(lazy) > 1:
        lazy = {src.tensor_name(None): lazy[src.tensor_name(None)]}
    lazy = _renamed(lazy, name)
    if dtype is not None and src.tensors:
        lazy = {k: CastTensor(v, dtype) for k, v in lazy.items()}
    meta = dict(src.metadata)
    if dtype is not None:
        meta["dtype"] = dtype
    check_bytes = sum(_prod(t.shape) * t.dtype.itemsize for t in lazy.values())
    from ..sources import check_size

    check_size(check_bytes, max_bytes, src.label)
    _write(output, lazy, meta, format, force, quiet)
    if output != "-":
        _msg(f"wrote {output} ({', '.join(f'{n} {tuple(t.shape)}' for n, t in lazy.items())})", quiet)


def _renamed(lazy: dict, names: list[str] | None) -> dict:
    if not names:
        return lazy
    mapping: dict[str, str] = {}
    for item in names:
        old, sep, new = item.partition("=")
        if not sep:
            if len(lazy) != 1:
                raise ParameterError(f"--name {item}: several tensors ({', '.join(lazy)}); write --name OLD=NEW")
            old, new = next(iter(lazy)), item
        if old not in lazy:
            raise ParameterError(f"--name {item}: no tensor {old!r}; choose from: {', '.join(lazy)}")
        if not new or new == "__metadata__":
            raise ParameterError(f"--name {item}: {new!r} is not a valid tensor name")
        mapping[old] = new
    out = {mapping.get(k, k): v for k, v in lazy.items()}
    if len(out) != len(lazy):
        raise ParameterError(f"--name {' '.join(names)} gives two tensors the same name")
    return out
