"""`posenc export`: the deliberate writer for other frameworks."""

from __future__ import annotations

import argparse
import dataclasses

from ..errors import ExitCode, ParameterError
from ._common import (
    add_force,
    add_format,
    add_hf_config,
    add_max_bytes,
    add_quiet,
    add_table_options,
    config_params,
    msg,
    open_src,
    prod,
    refuse_layer_type_without_config,
    spec_params,
    write,
)

NAME = "export"
SUMMARY = "Write a table for other frameworks, atomically, C-contiguous, with metadata."
DESCRIPTION = """\
Write a table for other frameworks, atomically, C-contiguous, with posenc metadata.

Example:
  posenc export sinusoidal --len 2048 --dim 512 --dtype bfloat16 -o pe.safetensors"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", metavar="SOURCE", help="File, - or spec KIND[:key=value,...].")
    p.add_argument("-o", "--output", metavar="PATH", required=True,
                   help="Output file (.safetensors, .npy, .npz, .csv, .json) or -.")
    add_table_options(p)
    p.add_argument("-t", "--tensor", action="append", metavar="NAME", help="Export only these tensors (repeatable).")
    p.add_argument("--name", action="append", metavar="NEW|OLD=NEW",
                   help="Rename: NEW (single tensor) or OLD=NEW (repeatable).")
    add_format(p)
    add_force(p)
    add_hf_config(p)
    p.add_argument("--onnx-rope", action="store_true",
                   help="RoPE: write cos_cache/sin_cache [len, rot_dim/2] for the ONNX RotaryEmbedding operator.")
    add_max_bytes(p)
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from .. import formats
    from ..sources import CastTensor, Source, check_size, is_spec

    refuse_layer_type_without_config(args)
    source = args.source
    is_file = not is_spec(source)
    params = spec_params(args)
    if args.hf_config is not None:
        if is_file:
            raise ParameterError(f"--hf-config builds tables from a model config; {source} is a file: drop one of them")
        kind, cfg = config_params(args, source.split(":", 1)[0])
        params = {**cfg, **params}
        source = kind + source[len(source.split(":", 1)[0]) :]
    if args.onnx_rope and not is_file:  # a file is regenerated with cache=onnx below
        params["cache"] = "onnx"
    src = open_src(source, args, params, dtype=None if is_file else args.dtype)
    if args.onnx_rope and is_file:  # a posenc rope file: regenerate its encoding with the ONNX cache layout
        enc = src.encoding
        if enc is None or "cache" not in {f.name for f in enc.param_fields()}:
            raise ParameterError("--onnx-rope needs a rope spec or a posenc-written rope file")
        enc = dataclasses.replace(enc, cache="onnx", **({"dtype": args.dtype} if args.dtype else {}))  # --dtype wins
        src = Source.from_encoding(enc, src.label)
    lazy = dict(src.lazy)
    if args.tensor:
        missing = [t for t in args.tensor if t not in lazy]
        if missing:
            raise ParameterError(f"{src.label} has no tensor {missing[0]!r}; choose from: {', '.join(lazy)}")
        lazy = {t: lazy[t] for t in args.tensor}
    fmt_name = formats.format_for(args.output, args.format)
    if fmt_name in formats.SINGLE_TENSOR_FORMATS and len(lazy) > 1:
        lazy = {src.tensor_name(None): lazy[src.tensor_name(None)]}
    lazy = _renamed(lazy, args.name)
    if args.dtype is not None and src.tensors:
        lazy = {k: CastTensor(v, args.dtype) for k, v in lazy.items()}
    meta = dict(src.metadata)
    if args.dtype is not None:
        meta["dtype"] = args.dtype
    check_size(sum(prod(t.shape) * t.dtype.itemsize for t in lazy.values()), args.max_bytes, src.label)
    write(args.output, lazy, meta, args.format, args.force, args.quiet)
    if args.output != "-":
        msg(f"wrote {args.output} ({', '.join(f'{n} {tuple(t.shape)}' for n, t in lazy.items())})", args.quiet)
    return ExitCode.OK


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
