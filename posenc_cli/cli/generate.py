"""`posenc generate`: build a table; preview it on a terminal, stream .npy when piped, write a file with -o."""

import sys

from ..encodings import DEFAULT_KIND
from ..errors import ExitCode, ParameterError
from . import _options as o
from ._common import (
    TableOptions,
    byte_limit,
    msg,
    open_src,
    print_json,
    refuse,
    refuse_spec_options_for_files,
    say_warnings,
    write_source,
    wrote,
)

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
    hf_config: o.HfConfig = None,
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
    from ..sources import is_config, is_gguf

    opts = TableOptions.of(locals())
    text = _source_text(source, kind, hf_config)
    config = text == "-" or is_config(text)
    gguf = is_gguf(text)
    if gguf:
        refuse(
            [("--all-layer-types", all_layer_types), ("--kind", kind), ("--read-as", read_as), ("--engine", engine),
             ("--max-model-len", max_model_len)],
            "a GGUF file says its own RoPE",
        )  # fmt: skip
    elif not config:
        refuse(
            [("--layer-type", layer_type), ("--all-layer-types", all_layer_types), ("--read-as", read_as),
             ("--engine", engine), ("--max-model-len", max_model_len), ("--n-ctx", n_ctx)],
            "they apply to a model config (--layer-type and --n-ctx also to a GGUF file)",
        )  # fmt: skip
    if all_layer_types:
        from ..sources import split_engine

        refuse(
            [("--engine", engine or split_engine(text)[1]), ("--max-model-len", max_model_len), ("--n-ctx", n_ctx)],
            "--all-layer-types writes HF's tables of every attention type",
        )
        return _all_layer_types(text, kind, opts, output, format, force, tensor, precision, json_out, quiet)
    if _is_onnx(text):
        refuse_spec_options_for_files(opts, [text])
        refuse([("--kind", kind)], f"{text} is an ONNX model: its caches are read, not built")
    src = _config_source(text, kind, opts, quiet) if config else open_src(text, opts, quiet=quiet)
    enc = src.encoding
    if enc is None and config:  # a learned table read from a model's weights: data to export, not a table to build
        raise ParameterError(
            f"{text} holds a trained position table in its weights; export it: posenc export {text} -o FILE"
        )
    names = list(src.lazy)
    for t in tensor or []:
        if t not in names:
            raise ParameterError(f"{src.label} has no tensor {t!r}; choose from: {', '.join(names)}")
    if gguf and output is None and (sys.stdout.isatty() or json_out):
        raise ParameterError(f"{text}: llama.cpp's tables have no terminal preview; pass -o FILE (or pipe)")
    if enc is None and output is None and sys.stdout.isatty() and not json_out:
        raise ParameterError(f"{text} is read, not built: pass -o FILE to write its tables (or pipe them)")
    if enc is None and output is None and json_out:
        raise ParameterError(f"--json describes a built table; {text} is read: pass -o FILE to write it")
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


def _source_text(source: str | None, kind: str | None, hf_config: str | None) -> str:
    """What generate builds from: SOURCE, ``--kind`` or ``--hf-config`` (each given once)."""
    from ..sources import is_config, is_gguf, is_spec

    if source is not None and not (
        source == "-" or is_spec(source) or is_config(source) or is_gguf(source) or _is_onnx(source)
    ):
        from ..sources import looks_like_a_kind

        if looks_like_a_kind(source):
            from ..encodings import resolve_kind

            resolve_kind(source.split(":", 1)[0])  # unknown encoding ...; did you mean ...
        raise ParameterError(
            f"{source} is not a spec or a model config: generate builds tables (to write a file's table in "
            "another format, use posenc export)"
        )
    if source is not None and hf_config is not None:
        if is_spec(source):
            raise ParameterError(
                f"SOURCE {source} and --hf-config {hf_config} both say what to build; name the kind with --kind"
            )
        raise ParameterError(f"the model config is given twice: SOURCE {source} and --hf-config {hf_config}")
    if source is not None and kind is not None and is_spec(source):
        raise ParameterError(f"the kind is given twice: SOURCE {source} and --kind {kind}; give it once")
    if hf_config is not None:
        return hf_config
    if source is not None:
        return source
    from ..encodings import resolve_kind

    return resolve_kind(kind or DEFAULT_KIND)  # unknown encoding ...; did you mean ...


def _is_onnx(text: str) -> bool:
    """An ONNX model: generate writes the rotary caches stored in it (see posenc_cli.models.onnx)."""
    return text.lower().endswith(".onnx")


def _config_source(text: str, kind: str | None, opts: TableOptions, quiet: int):
    from ..sources import open_config

    refuse_spec_options_for_files(opts, [text], stdin_config=True)
    src = open_config(
        text,
        layers=opts.layers(),
        kind=kind,
        layer_type=opts.layer_type,
        max_bytes=opts.max_bytes,
        read_as=opts.read_as,
        engine=opts.engine,
        engine_options=opts.engine_options(),
    )
    say_warnings(src, quiet)
    return src


def _all_layer_types(text, kind, opts: TableOptions, output, format, force, tensor, precision, json_out, quiet) -> int:
    """--all-layer-types: every attention type's tables in one file, tensors ``TYPE.NAME``."""
    from .. import formats
    from ..api import from_config_layers
    from ..sources import Source, check_size, merge_given

    refuse(
        [("--layer-type", opts.layer_type), ("--dim", opts.dim), ("--tensor", tensor), ("--precision", precision)],
        "--all-layer-types writes every tensor of every attention type",
    )
    if output is None and sys.stdout.isatty():
        raise ParameterError("--all-layer-types writes a file: pass -o FILE.safetensors (or .npz, .json)")
    dest = "-" if output is None else output
    if formats.format_for(dest, format) in formats.SINGLE_TENSOR_FORMATS:
        raise ParameterError(
            f"--all-layer-types writes several tensors, which {dest} cannot hold; use .safetensors, .npz or .json"
        )
    encs, nope = from_config_layers(text, kind=kind, read_as=opts.read_as, **merge_given(opts.layers()))
    for lt in nope:
        msg(f"{lt}: applies no position encoding (NoPE layers); nothing to write for it", quiet)
    if not encs:
        raise ParameterError(f"{text}: no attention type of this model applies a position encoding")
    src = Source.from_groups(encs, dest)
    if opts.read_as is not None:  # the assumption is recorded with the tables, as for one layer type
        from ..api import load_config
        from ..models.readers import model_config_notes

        src.metadata.update(model_config_notes(load_config(text), kind=kind, read_as=opts.read_as))
    check_size(sum(e.nbytes() for e in encs.values()), byte_limit(opts.max_bytes), "the tables")
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
