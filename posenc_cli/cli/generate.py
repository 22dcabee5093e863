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
    max_bytes,
    msg,
    refuse,
    refuse_layer_type_without_config,
    spec_params,
    write,
)

NAME = "generate"
SUMMARY = "Generate a table (preview on a terminal, .npy when piped, a file with -o)."
DESCRIPTION = f"""\
Generate a table. On a terminal: a preview; piped: .npy bytes (and a posenc
trailer with the other tensors and the metadata); with -o: a file in the
format of its suffix.

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
    p.add_argument(
        "-t",
        "--tensor",
        metavar="NAME",
        help="Write (or preview) only this tensor (default: all; .npy/.csv: the primary one).",
    )
    add_force(p)
    add_hf_config(p)
    p.add_argument(
        "--all-layer-types",
        action="store_true",
        help="With --hf-config and -o: one table per attention type, tensors named TYPE.cos, ...",
    )
    p.add_argument("--precision", type=int, metavar="N", help="Decimals in the terminal preview (default 3).")
    add_max_bytes(p)
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from .. import formats
    from ..encodings import make_encoding
    from ..sources import check_size

    refuse_layer_type_without_config(args)
    params = spec_params(args)
    if args.all_layer_types:
        return _all_layer_types(args, params)
    if args.hf_config is not None:
        refuse(args, [("dim", "--dim")], "the model config sets the head dim; use -p dim=N to override it")
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
    check_size(enc.nbytes(), max_bytes(args), f"{enc.KIND} table")
    tensors = enc.lazy_tensors()
    if args.tensor is not None and args.tensor not in tensors:
        raise ParameterError(f"{enc.KIND} has no tensor {args.tensor!r}; choose from: {', '.join(tensors)}")
    if args.output is None and sys.stdout.isatty():
        refuse(
            args,
            [("format", "--format"), ("force", "--force")],
            "stdout is a terminal, which gets a preview; pass -o FILE (or pipe) to write a table",
        )
        _preview(enc, 3 if args.precision is None else args.precision, args.tensor)
        return ExitCode.OK
    refuse(args, [("precision", "--precision")], "it sets the decimals of the terminal preview, not of a file")
    dest = "-" if args.output is None else args.output
    fmt_name = formats.format_for(dest, args.format)
    metadata = enc.metadata()
    if args.tensor is not None:
        tensors = {args.tensor: tensors[args.tensor]}
    elif fmt_name in formats.SINGLE_TENSOR_FORMATS and not (dest == "-" and fmt_name == "npy"):
        metadata["_all_tensors"] = ",".join(tensors)  # for the note on what a one-tensor file leaves out
        tensors = {enc.PRIMARY: tensors[enc.PRIMARY]}
    write(dest, tensors, metadata, args.format, args.force, args.quiet)
    if dest != "-":
        msg(f"wrote {dest} ({', '.join(f'{n} {tuple(t.shape)}' for n, t in tensors.items())}, {enc.dtype})", args.quiet)
    return ExitCode.OK


def _all_layer_types(args: argparse.Namespace, params: dict[str, object]) -> int:
    """--all-layer-types: every attention type's tables in one file, tensors ``TYPE.NAME``."""
    from .. import formats
    from ..api import from_config_layers
    from ..sources import Source, check_size

    if args.hf_config is None:
        raise ParameterError(
            "--all-layer-types cannot apply: it writes every attention type of --hf-config; "
            "pass --hf-config config.json"
        )
    refuse(
        args,
        [("layer_type", "--layer-type"), ("dim", "--dim"), ("tensor", "--tensor"), ("precision", "--precision")],
        "--all-layer-types writes every tensor of every attention type",
    )
    if args.output is None and sys.stdout.isatty():
        raise ParameterError("--all-layer-types writes a file: pass -o FILE.safetensors (or .npz, .json)")
    dest = "-" if args.output is None else args.output
    if formats.format_for(dest, args.format) in formats.SINGLE_TENSOR_FORMATS:
        raise ParameterError(
            f"--all-layer-types writes several tensors, which {dest} cannot hold; use .safetensors, .npz or .json"
        )
    if args.length is not None:
        params["length"] = args.length
    if args.dtype is not None:
        params["dtype"] = args.dtype
    encs, nope = from_config_layers(args.hf_config, kind=args.kind, **params)
    for lt in nope:
        msg(f"{lt}: applies no position encoding (NoPE layers); nothing to write for it", args.quiet)
    if not encs:
        raise ParameterError(f"{args.hf_config}: no attention type of this model applies a position encoding")
    src = Source.from_groups(encs, dest)
    check_size(sum(e.nbytes() for e in encs.values()), max_bytes(args), "the tables")
    write(dest, src.lazy, src.metadata, args.format, args.force, args.quiet)
    if dest != "-":
        msg(f"wrote {dest} ({', '.join(f'{n} {tuple(t.shape)}' for n, t in src.lazy.items())})", args.quiet)
    return ExitCode.OK


def _preview(enc, precision: int, tensor: str | None) -> None:
    from ..api import preview as preview_data
    from ..render import preview

    p = preview_data(enc, tensor=tensor)
    preview(
        title=p.title,
        specs=p.specs,
        params=p.params,
        primary=p.primary,
        corner=p.corner,
        shape=p.shape,
        value_range=p.value_range,
        range_note=p.range_note,
        small=p.small,
        precision=precision,
    )
