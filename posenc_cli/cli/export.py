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
    max_bytes,
    msg,
    open_src,
    prod,
    progress_enabled,
    refuse_layer_type_without_config,
    refuse_spec_options_for_files,
    spec_params,
)

NAME = "export"
SUMMARY = "Write a table for other frameworks, atomically, C-contiguous, with metadata."
DESCRIPTION = """\
Write a table for other frameworks, atomically, C-contiguous, with posenc metadata.

Example:
  posenc export sinusoidal --len 2048 --dim 512 --dtype bfloat16 \\
      -o pe.safetensors"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", metavar="SOURCE", help="File, - or spec KIND[:key=value,...].")
    p.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        required=True,
        help="Output file (.safetensors, .npy, .npz, .csv, .json) or -.",
    )
    add_table_options(p)
    p.add_argument("-t", "--tensor", action="append", metavar="NAME", help="Export only these tensors (repeatable).")
    p.add_argument(
        "--name", action="append", metavar="NEW|OLD=NEW", help="Rename: NEW (single tensor) or OLD=NEW (repeatable)."
    )
    add_format(p)
    add_force(p)
    add_hf_config(p)
    p.add_argument(
        "--onnx-rope",
        action="store_true",
        help="RoPE: write cos_cache/sin_cache [len, rot_dim/2] for the ONNX RotaryEmbedding operator.",
    )
    add_max_bytes(p)
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from ..sources import Source, is_spec

    refuse_layer_type_without_config(args)
    source = args.source
    is_file = not is_spec(source)
    if is_file:
        refuse_spec_options_for_files(args, [source], dtype=False)  # --dtype casts a file's tensors
    params = spec_params(args)
    if args.hf_config is not None:
        if is_file:
            raise ParameterError(f"--hf-config builds tables from a model config; {source} is a file: drop one of them")
        kind, cfg = config_params(args, source.split(":", 1)[0])
        params = {**cfg, **params}
        source = kind + source[len(source.split(":", 1)[0]) :]
    if args.onnx_rope and not is_file:  # a file is regenerated with cache=onnx below
        _onnx_kind(source.split(":", 1)[0])
        params["cache"] = "onnx"
    src = open_src(source, args, params, dtype=None if is_file else args.dtype)
    if args.onnx_rope and is_file:  # a posenc rope file: regenerate its encoding with the ONNX cache layout
        enc = src.encoding
        if enc is None:
            raise ParameterError("--onnx-rope needs a spec or a posenc-written file (its metadata rebuilds the table)")
        _onnx_kind(enc.KIND)
        enc = dataclasses.replace(enc, cache="onnx", **({"dtype": args.dtype} if args.dtype else {}))  # --dtype wins
        src = Source.from_encoding(enc, src.label)
    from ..api import write as write_table
    from ..formats import TrailerNotRead
    from ._common import quiet_exit

    def run_write(progress):
        return write_table(
            args.output,
            src,
            format=args.format,
            tensors=args.tensor,
            rename=_renames(src, args),
            dtype=args.dtype if is_file else None,  # a spec was built in --dtype already
            force=args.force,
            max_bytes=max_bytes(args),
            progress=progress,
        )

    try:
        written = _with_progress(args, src, run_write)
    except TrailerNotRead:  # a plain .npy reader took the array and left: all it asked for was written
        quiet_exit()
    if args.output != "-":
        msg(f"wrote {args.output} ({', '.join(f'{n} {shape}' for n, shape in written.items())})", args.quiet)
    return ExitCode.OK


def _with_progress(args: argparse.Namespace, src, run):
    """``run(progress)``, with a progress bar on a terminal for outputs over 64 MiB (rich only for a bar)."""
    nbytes = sum(prod(t.shape) * t.dtype.itemsize for t in src.lazy.values())
    if not (progress_enabled(args.quiet) and nbytes > 64 * 1024**2):
        return run(None)
    from ..render import progress_bar

    with progress_bar(f"writing {args.output}", 1, True) as advance:
        return run(lambda n, total: advance(n, total))


def _onnx_kind(kind: str) -> None:
    """--onnx-rope applies to the kinds whose ``cache`` parameter offers the ONNX layout."""
    from ..encodings import get_kind, kind_classes

    def onnx(cls) -> bool:
        return any(f.name == "cache" and "onnx" in (f.metadata.get("choices") or ()) for f in cls.param_fields())

    if not onnx(get_kind(kind)):
        kinds = [k for k, cls in kind_classes().items() if onnx(cls)]
        raise ParameterError(f"--onnx-rope cannot apply to {kind}: it writes the ONNX caches of {', '.join(kinds)}")


def _renames(src, args: argparse.Namespace) -> dict[str, str]:
    """``--name NEW`` (one tensor) and ``--name OLD=NEW`` as a mapping."""
    names = args.name or []
    selected = args.tensor or src.names
    mapping: dict[str, str] = {}
    for item in names:
        old, sep, new = item.partition("=")
        if not sep:
            if len(selected) != 1 and not _single_format(args):
                raise ParameterError(f"--name {item}: several tensors ({', '.join(selected)}); write --name OLD=NEW")
            old, new = (selected[0] if len(selected) == 1 else src.tensor_name(None)), item
        mapping[old] = new
    return mapping


def _single_format(args: argparse.Namespace) -> bool:
    from .. import formats

    return formats.format_for(args.output, args.format) in formats.SINGLE_TENSOR_FORMATS
