"""`posenc export`: the deliberate writer for other frameworks."""

import dataclasses
import sys

from ..errors import ExitCode, ParameterError
from . import _options as o
from ._common import (
    TableOptions,
    byte_limit,
    open_src,
    print_json,
    refuse,
    refuse_spec_options_for_files,
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
    hf_config: o.HfConfig = None,
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
    from ..sources import Source, is_config, is_spec

    if hf_config is None and (source is None or not is_config(source)):
        refuse(
            [("--engine", engine), ("--max-model-len", max_model_len), ("--n-ctx", n_ctx)],
            "they set an engine's rules for a model config; give the model's config.json",
        )
    opts = TableOptions.of(locals())
    onnx = [("--onnx-rope", {"cache": "onnx"})] if onnx_rope else []
    if output is None:
        if sys.stdout.isatty():
            raise ParameterError("export writes a file: pass -o FILE (or -o - to write stdout)")
        output = "-"
    if output == "-" and json_out:
        raise ParameterError("--json and -o - both write stdout; give -o FILE to write the table and describe it")
    if hf_config is not None:  # SOURCE, if any, is a spec naming the kind that reads the config (and parameters)
        if source is not None and not is_spec(source):
            raise ParameterError(f"--hf-config {hf_config} and SOURCE {source}: both say what to export; give one")
        from ..sources import open_config, parse_spec, spec_label

        refuse_spec_options_for_files(opts, [hf_config], stdin_config=True)

        kind, pairs = parse_spec(source) if source is not None else (None, {})
        spec = [(spec_label(source), pairs)] if source is not None and pairs else []
        src = open_config(
            hf_config,
            layers=[*spec, *opts.layers(), *onnx],
            kind=kind,
            layer_type=layer_type,
            max_bytes=opts.max_bytes,
            read_as=read_as,
            engine=engine,
            engine_options=opts.engine_options(),
        )
        builds = True
    elif source is None:
        raise ParameterError("give a SOURCE to export (a file, -, a spec or a model config) or --hf-config")
    elif is_spec(source) or is_config(source):
        for flag, value in (("--layer-type", layer_type), ("--read-as", read_as)):
            if value is not None and is_spec(source):
                raise ParameterError(f"{flag} applies to a model config, and {source} is a spec; drop it")
        if onnx_rope and is_spec(source):
            _onnx_kind(source.split(":", 1)[0])
        if is_config(source):
            refuse_spec_options_for_files(opts, [source])
        src = open_src(source, opts, quiet=quiet, extra=onnx)
        builds = True
    else:
        refuse_spec_options_for_files(opts, [source], dtype=False)  # --dtype casts a file's tensors
        src = open_src(source, opts, dtype=False, quiet=quiet)
        builds = False
        if onnx_rope:  # a posenc rope file: regenerate its encoding with the ONNX cache layout
            enc = src.encoding
            if enc is None:
                raise ParameterError(
                    "--onnx-rope needs a spec or a posenc-written file (its metadata rebuilds the table)"
                )
            _onnx_kind(enc.KIND)
            builds = True  # rebuilt: in --dtype already
            src = Source.from_encoding(
                dataclasses.replace(enc, cache="onnx", **({"dtype": dtype} if dtype else {})), src.label
            )
    if onnx_rope:
        _onnx_kind(src.encoding.KIND if src.encoding is not None else None)
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


def _onnx_kind(kind: str | None) -> None:
    """--onnx-rope applies to the kinds whose ``cache`` parameter offers the ONNX layout."""
    from ..encodings import get_kind, kind_classes

    def onnx(cls) -> bool:
        return any(f.name == "cache" and "onnx" in (f.metadata.get("choices") or ()) for f in cls.param_fields())

    if kind is None or not onnx(get_kind(kind)):
        kinds = [k for k, cls in kind_classes().items() if onnx(cls)]
        raise ParameterError(f"--onnx-rope cannot apply to {kind}: it writes the ONNX caches of {', '.join(kinds)}")


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
