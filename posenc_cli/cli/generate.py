"""`posenc generate`: build a table; preview it on a terminal, stream .npy when piped, write a file with -o."""

from __future__ import annotations

import argparse
import sys

from ..encodings import DEFAULT_KIND
from ..errors import ExitCode, ParameterError
from ._common import (
    add_force,
    add_format,
    add_hf_config,
    add_max_bytes,
    add_quiet,
    add_table_options,
    config_params,
    kind_option,
    msg,
    refuse_layer_type_without_config,
    spec_params,
    write,
)

NAME = "generate"
SUMMARY = "Generate a table (preview on a terminal, .npy when piped, a file with -o)."
DESCRIPTION = f"""\
Generate a table. On a terminal: a preview; piped: .npy bytes; with -o: a file (format from the suffix).

Examples:
  posenc generate --len 512 --dim 128
  posenc generate -n 5 -d 6 -p preset=tf-tutorial
  posenc generate -n 512 -d 128 -o pe.safetensors
  posenc generate -n 512 -d 128 | posenc check -
  posenc generate --hf-config config.json -o rope.safetensors

The kind defaults to {DEFAULT_KIND}; with --hf-config, to the kind the model's config describes."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    kind_option(p, ("-k", "--kind"), f"Encoding kind (see `posenc kinds`; default {DEFAULT_KIND}).")
    add_table_options(p)
    p.add_argument("-o", "--output", metavar="PATH", help="Output file, or - for stdout.")
    add_format(p)
    p.add_argument("-t", "--tensor", metavar="NAME", help="Tensor to write to a single-tensor format (.npy, .csv).")
    add_force(p)
    add_hf_config(p)
    p.add_argument("--precision", type=int, default=3, metavar="N", help="Decimals in the terminal preview.")
    add_max_bytes(p)
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from .. import formats
    from ..encodings import make_encoding
    from ..sources import check_size

    refuse_layer_type_without_config(args)
    params = spec_params(args)
    if args.hf_config is not None:
        kind, cfg = config_params(args, args.kind)
        params = {**cfg, **params}
    else:
        kind = args.kind or DEFAULT_KIND
    merged: dict[str, object] = dict(params)
    if args.length is not None:
        merged["length"] = args.length
    if args.dim is not None and "dim" not in params:
        merged["dim"] = args.dim
    if args.dtype is not None:
        merged["dtype"] = args.dtype
    enc = make_encoding(kind, merged)
    check_size(enc.nbytes(), args.max_bytes, f"{enc.KIND} table")
    if args.output is None and sys.stdout.isatty():
        _preview(enc, args.precision)
        return ExitCode.OK
    dest = "-" if args.output is None else args.output
    tensors = enc.lazy_tensors()
    fmt_name = formats.format_for(dest, args.format)
    if fmt_name in formats.SINGLE_TENSOR_FORMATS or args.tensor is not None:
        name = args.tensor or enc.PRIMARY
        if name not in tensors:
            raise ParameterError(f"{enc.KIND} has no tensor {name!r}; choose from: {', '.join(tensors)}")
        if fmt_name in formats.SINGLE_TENSOR_FORMATS:
            tensors = {name: tensors[name]}
    write(dest, tensors, enc.metadata(), args.format, args.force, args.quiet)
    if dest != "-":
        msg(f"wrote {dest} ({', '.join(f'{n} {tuple(t.shape)}' for n, t in tensors.items())}, {enc.dtype})",
            args.quiet)
    return ExitCode.OK


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
