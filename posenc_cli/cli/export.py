"""`posenc export`: the deliberate writer for other frameworks."""

import sys

from ..errors import ExitCode, ParameterError
from . import _options as o
from ._common import (
    TableOptions,
    byte_limit,
    print_json,
    say_warnings,
    write_source,
    wrote,
)

DESCRIPTION = """\
Write a table for other frameworks, atomically, C-contiguous, with posenc
metadata. SOURCE is a file, -, a spec or a model config (or give
--hf-config). A file's tensors are cast by --dtype, the metadata saying so.

Examples:

  posenc export sinusoidal --len 2048 --dim 512 --dtype bfloat16 \\
      -o pe.safetensors
  posenc export --hf-config config.json --len 8192 -o rope.safetensors"""


def run(
    source: o.Source = None,
    output: o.Output = None,
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
    tensor: o.Tensors = None,
    name: o.Names = None,
    format: o.Format = None,
    force: o.Force = False,
    onnx_rope: o.OnnxRope = False,
    json_out: o.Json = False,
    max_bytes: o.MaxBytes = None,
    quiet: o.Quiet = 0,
) -> int:
    from ..api import export_source

    if output is None:
        if sys.stdout.isatty():
            raise ParameterError("export writes a file: pass -o FILE (or -o - to write stdout)")
        output = "-"
    if output == "-" and json_out:
        raise ParameterError("--json and -o - both write stdout; give -o FILE to write the table and describe it")
    src, builds = export_source(source, hf_config=hf_config, options=TableOptions.of(locals()), onnx_rope=onnx_rope)
    say_warnings(src, quiet)
    cast = None if builds else dtype  # a built table is in --dtype already
    written = write_source(
        output,
        src,
        fmt=format,
        tensors=tensor,
        force=force,
        quiet=quiet,
        limit=byte_limit(max_bytes),
        rename=_renames(src, tensor, name, output, format),
        dtype=cast,
    )
    if json_out:
        print_json(written.to_json())
    else:
        wrote(output, written, quiet, src)
    return ExitCode.OK


def _renames(src, tensor, names, output, fmt) -> dict[str, str]:
    """``--name NEW`` (one tensor) and ``--name OLD=NEW`` as a mapping."""
    from .. import formats

    selected = list(tensor or []) or src.names
    single = formats.format_for(output, fmt) in formats.SINGLE_TENSOR_FORMATS
    mapping: dict[str, str] = {}
    for item in names or []:
        old, sep, new = item.partition("=")
        if not sep:
            if len(selected) != 1 and not single:
                raise ParameterError(f"--name {item}: several tensors ({', '.join(selected)}); write --name OLD=NEW")
            old, new = (selected[0] if len(selected) == 1 else src.tensor_name(None)), item
        mapping[old] = new
    return mapping
