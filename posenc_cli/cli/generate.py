"""`posenc generate`: build a table; preview it on a terminal, stream .npy when piped, write a file with -o."""

import sys

from ..encodings import DEFAULT_KIND
from ..errors import ExitCode, ParameterError
from . import _options as o
from ._common import TableOptions, byte_limit, msg, print_json, refuse, say_warnings, write_source, wrote

DESCRIPTION = f"""\
Generate a table. On a terminal: a preview; piped: .npy bytes (and a posenc
trailer with the other tensors and the metadata); with -o: a file in the
format of its suffix.

SOURCE is a spec KIND[:key=value,...] (default {DEFAULT_KIND}) or a model's
config.json, its directory, or - for a config on stdin: the tables that model
uses.

Examples:

  posenc generate --len 512 --dim 128
  posenc generate sinusoidal:preset=tf-tutorial -n 5 -d 6
  posenc generate rope:preset=llama3.1 --len 4096 -o rope.safetensors
  posenc generate -n 512 -d 128 | posenc check -
  posenc generate path/config.json --len 8192 -o rope.safetensors"""


def run(
    source: o.Spec = None,
    kind: o.Kind = None,
    length: o.Length = None,
    dim: o.Dim = None,
    param: o.Params = None,
    dtype: o.Dtype = None,
    grid: o.Grid = None,
    image_size: o.ImageSizes = None,
    hf_config: o.HfConfig = None,
    tower: o.Tower = None,
    layer_type: o.LayerType = None,
    read_as: o.ReadAs = None,
    engine: o.Engine = None,
    max_model_len: o.MaxModelLen = None,
    n_ctx: o.NCtx = None,
    all_layer_types: o.AllLayerTypes = False,
    output: o.Output = None,
    format: o.Format = None,
    tensor: o.Tensors = None,
    force: o.Force = False,
    precision: o.Precision = None,
    json_out: o.Json = False,
    max_bytes: o.MaxBytes = None,
    quiet: o.Quiet = 0,
) -> int:
    from ..api import built_source

    src, nope = built_source(
        source,
        kind=kind,
        hf_config=hf_config,
        options=TableOptions.of(locals()),
        all_layer_types=all_layer_types,
        tensor=tensor,
    )
    say_warnings(src, quiet)
    for lt in nope:
        msg(f"{lt}: applies no position encoding (NoPE layers); nothing to write for it", quiet)
    enc = src.encoding
    if all_layer_types:
        return _all_layer_types(src, output, format, force, precision, json_out, quiet)
    names = list(src.lazy)
    for t in tensor or []:
        if t not in names:
            raise ParameterError(f"{src.label} has no tensor {t!r}; choose from: {', '.join(names)}")
    read = "a GGUF file: llama.cpp" in src.encoding_note
    if read and output is None and (sys.stdout.isatty() or json_out):
        raise ParameterError(f"{src.label}: llama.cpp's tables have no terminal preview; pass -o FILE (or pipe)")
    if enc is None and output is None and sys.stdout.isatty() and not json_out:
        raise ParameterError(f"{src.label} is read, not built: pass -o FILE to write its tables (or pipe them)")
    if enc is None and output is None and json_out:
        raise ParameterError(f"--json describes a built table; {src.label} is read: pass -o FILE to write it")
    if output is None and sys.stdout.isatty() and not json_out:
        refuse(
            [("--format", format), ("--force", force)],
            "stdout is a terminal, which gets a preview; pass -o FILE (or pipe) to write a table",
        )
        if tensor and len(tensor) > 1:
            raise ParameterError("the preview shows one tensor; give --tensor once (or -o FILE to write several)")
        _preview(enc, 3 if precision is None else precision, tensor[0] if tensor else None)
        return ExitCode.OK
    if output is None and json_out:
        refuse([("--format", format), ("--force", force)], "--json without -o describes the table; nothing is written")
        refuse([("--precision", precision)], "it sets the decimals of the terminal preview")
        from ..api import preview

        print_json(preview(enc, tensor=tensor[0] if tensor else None).to_json())
        return ExitCode.OK
    refuse([("--precision", precision)], "it sets the decimals of the terminal preview, not of a file")
    dest = "-" if output is None else output
    if dest == "-" and json_out:
        raise ParameterError("--json and -o - both write stdout; give -o FILE to write the table and describe it")
    written = write_source(dest, src, fmt=format, tensors=tensor, force=force, quiet=quiet, limit=byte_limit(max_bytes))
    if json_out:
        print_json(written.to_json())
    else:
        wrote(dest, written, quiet, src)
    return ExitCode.OK


def _all_layer_types(src, output, format, force, precision, json_out, quiet) -> int:
    """--all-layer-types: every attention type's tables in one file, tensors ``TYPE.NAME``."""
    from .. import formats

    refuse([("--precision", precision)], "--all-layer-types writes every tensor of every attention type")
    if output is None and sys.stdout.isatty():
        raise ParameterError("--all-layer-types writes a file: pass -o FILE.safetensors (or .npz, .json)")
    dest = "-" if output is None else output
    if formats.format_for(dest, format) in formats.SINGLE_TENSOR_FORMATS:
        raise ParameterError(
            f"--all-layer-types writes several tensors, which {dest} cannot hold; use .safetensors, .npz or .json"
        )
    written = write_source(dest, src, fmt=format, tensors=None, force=force, quiet=quiet, limit=None)
    if json_out and dest != "-":
        print_json(written.to_json())
    else:
        wrote(dest, written, quiet, src)
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
