"""The posenc command line: parse, make one engine call, render or write.

Heavy modules (numpy, rich, safetensors) are imported inside the commands so that ``posenc --help``,
``--version`` and shell completion start instantly. Every engine error (:class:`PosencError`) is printed
once, as ``Error: ...`` on stderr, by :func:`main`; an unexpected exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from . import __version__
from .encodings import KINDS
from .errors import ExitCode, InputError, OutputError, ParameterError, PosencError

app = typer.Typer(
    name="posenc",
    help="Generate, check, compare and export transformer positional-encoding tables.",
    rich_markup_mode=None,  # plain help: no rich import on --help
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

FORMAT_NAMES = ("npy", "npz", "safetensors", "csv", "json")
DTYPE_NAMES = ("float64", "float32", "float16", "bfloat16")
DEFAULT_MAX_BYTES = 8 * 1024**3


def _complete_kind(incomplete: str) -> list[str]:
    return [k for k in KINDS if k.startswith(incomplete)]


def _complete_choice(choices: tuple[str, ...]):
    return lambda incomplete: [c for c in choices if c.startswith(incomplete)]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"posenc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """posenc: positional-encoding tables for transformers.

    Exit codes: 0 ok, 1 a property failed or tables differ, 2 bad input or I/O trouble, 130 on Ctrl-C.
    """


# ----- shared options ------------------------------------------------------------------------------
LenOpt = Annotated[Optional[int], typer.Option("--len", "-n", help="Number of positions (rows).", show_default=False)]
DimOpt = Annotated[Optional[int], typer.Option("--dim", "-d", help="Feature dimension (columns); heads for alibi.", show_default=False)]
ParamOpt = Annotated[
    Optional[list[str]],
    typer.Option("--param", "-p", help="Encoding parameter key=value (repeatable; see `posenc kinds KIND`).", show_default=False),
]
DtypeOpt = Annotated[
    Optional[str],
    typer.Option("--dtype", help="Output dtype: float64, float32 (default), float16, bfloat16.",
                 autocompletion=_complete_choice(DTYPE_NAMES), show_default=False),
]
TensorOpt = Annotated[Optional[str], typer.Option("--tensor", "-t", help="Tensor to use from a multi-tensor source.", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No messages or progress on stderr.")]
ForceOpt = Annotated[bool, typer.Option("--force", "-f", help="Overwrite an existing file; allow binary output to a terminal.")]
FormatOpt = Annotated[
    Optional[str],
    typer.Option("--format", help="Output format: npy, npz, safetensors, csv, json (default: from the suffix).",
                 autocompletion=_complete_choice(FORMAT_NAMES), show_default=False),
]
MaxBytesOpt = Annotated[int, typer.Option("--max-bytes", help="Refuse tables larger than this many bytes.")]
GridOpt = Annotated[Optional[str], typer.Option("--grid", help="Grid for sinusoidal-2d/3d, e.g. 14x14 or 8x14x14.", show_default=False)]
HfConfigOpt = Annotated[
    Optional[str],
    typer.Option("--hf-config", help="A model's config.json: build exactly the RoPE tables it uses (kind rope).", show_default=False),
]


def _pipe_safe(command):
    """Run a command; when the reader of stdout goes away, exit quietly like a Unix filter (typer would exit 1)."""
    import functools

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except BrokenPipeError:
            _quiet_broken_pipe()

    return wrapper


def _msg(text: str, quiet: bool) -> None:
    if not quiet:
        sys.stderr.write(text + "\n")


def _params(options: list[str] | None, grid: str | None = None, hf_config: str | None = None, length: int | None = None) -> dict[str, str]:
    from .sources import parse_param_options

    params: dict[str, object] = {}
    if hf_config is not None:
        params.update(_hf_params(hf_config, length))
    if grid is not None:
        params["grid"] = grid
    params.update(parse_param_options(options))
    return params


def _hf_params(path: str, length: int | None) -> dict[str, object]:
    import json

    from .encodings.rope import params_from_hf_config

    try:
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except FileNotFoundError:
        raise ParameterError(f"--hf-config {path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ParameterError(f"--hf-config {path}: not a readable JSON config ({exc})") from None
    if not isinstance(config, dict):
        raise ParameterError(f"--hf-config {path}: expected a JSON object")
    return params_from_hf_config(config, length)


def _source(text: str, length, dim, params, dtype, max_bytes, like=None):
    from .sources import open_source

    return open_source(text, length=length, dim=dim, params=params, dtype=dtype, max_bytes=max_bytes, like=like)


def _progress_enabled(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


def _write(dest: str, tensors: dict, metadata: dict, fmt: str | None, force: bool, quiet: bool) -> None:
    """Write through the formats package, with a progress bar for big outputs."""
    from . import formats

    fmt_name = formats.format_for(dest, fmt) if dest != "-" else (fmt or "npy")
    if dest == "-" and sys.stdout.isatty() and fmt_name in ("npy", "npz", "safetensors") and not force:
        raise OutputError("refusing to write binary data to a terminal; redirect stdout, use -o FILE, or pass --force")
    total = sum(int(t.shape[0]) if len(t.shape) else 1 for t in tensors.values())
    nbytes = sum(int(t.dtype.itemsize) * _prod(t.shape) for t in tensors.values())
    if not (_progress_enabled(quiet) and nbytes > 64 * 1024**2):  # rich is only imported for a bar
        formats.write_table(dest, tensors, metadata, fmt_name, force=force)
        return
    from .render import progress_bar

    with progress_bar(f"writing {dest}", total, True) as advance:
        formats.write_table(dest, tensors, metadata, fmt_name, force=force, progress=advance)


def _prod(shape) -> int:
    out = 1
    for s in shape:
        out *= int(s)
    return out


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
    from .encodings import make_encoding
    from .sources import check_size

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
    from . import formats

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

    from .encodings.base import dtype_name
    from .render import preview

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


# ----- check ---------------------------------------------------------------------------------------
@app.command()
@_pipe_safe
def check(
    sources: Annotated[Optional[list[str]], typer.Argument(help="Files, - for stdin, or specs KIND[:key=value,...].", show_default=False)] = None,
    length: LenOpt = None,
    dim: DimOpt = None,
    param: ParamOpt = None,
    dtype: DtypeOpt = None,
    tensor: TensorOpt = None,
    grid: GridOpt = None,
    expect: Annotated[Optional[str], typer.Option("--expect", help="Judge the table as this kind (default: the kind in its metadata).", autocompletion=_complete_kind, show_default=False)] = None,
    require: Annotated[Optional[str], typer.Option("--require", help="Comma-separated properties that must hold (default: the kind's).", show_default=False)] = None,
    probes: Annotated[int, typer.Option("--probes", help="Random probes for randomized checks.")] = 8,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random probes.")] = 0,
    json_out: JsonOpt = False,
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
    quiet: QuietOpt = False,
) -> None:
    """Measure every property of a table (finite, bounded, unique, constant-norm, equidistant, ...).

    Exit 0 when every required property holds, 1 when one fails, 2 on bad input.
    Example: posenc check pe.safetensors;  posenc check sinusoidal:preset=tf-tutorial --len 5 --dim 6
    """
    from . import checks
    from .checkbase import CheckContext, rtol_for
    from .encodings import get_kind

    if not sources:
        if sys.stdin.isatty():
            raise ParameterError("give a source: a file, - for stdin, or a spec like sinusoidal (see posenc check --help)")
        sources = ["-"]
    if expect is not None:
        get_kind(expect)
    required_names = [r.strip() for r in require.split(",") if r.strip()] if require else None
    params = _params(param, grid)
    reports = []
    all_ok = True
    for text in sources:
        src = _source(text, length, dim, params, dtype, max_bytes)
        name = src.tensor_name(tensor)
        table = src.array(name)
        kind = expect or src.kind
        _validate_checkable(table, name, src.label, kind)
        ctx = CheckContext(
            table=table,
            # a foreign file (no posenc metadata) is judged by the chosen tensor alone
            tensors={n: src.array(n) for n in (list(src.tensors) or list(src.lazy))} if src.encoding is not None
            else {name: table},
            metadata=src.metadata,
            kind=kind,
            encoding=src.encoding if (src.encoding is not None and (expect is None or expect == src.kind)) else None,
            rtol=rtol_for(table.dtype),
            seed=seed,
            probes=probes,
        )
        results = _run_checks_with_progress(checks, ctx, src.label, quiet)
        if not results:
            raise InputError(
                f"{src.label}: no property can be measured on tensor {name!r} ({table.dtype} {tuple(table.shape)}); "
                "pass --expect KIND or pick a table with --tensor"
            )
        available = [r.name for r in results]
        required = checks.required_for(kind, required_names, available)
        failed = [r.name for r in results if r.name in required and r.passed is False]
        missing = [n for n in required if n not in available]
        if missing:
            raise ParameterError(f"--require {','.join(missing)}: not measurable on {src.label}; measurable: {', '.join(available)}")
        ok = not failed
        all_ok &= ok
        reports.append((src, kind, results, required, failed, ok, name))
    if json_out:
        from .render import print_json

        print_json([
            {"source": src.label, "tensor": name, "kind": kind, "ok": ok, "required": required, "failed": failed,
             "results": [r.to_json() for r in results]}
            for src, kind, results, required, failed, ok, name in reports
        ])
    else:
        from .render import check_summary, check_table

        for src, kind, results, required, failed, ok, name in reports:
            check_table(f"{src.label} [{name}]", kind, results, required)
            if not quiet:
                check_summary(src.label, ok, failed)
    raise typer.Exit(ExitCode.OK if all_ok else ExitCode.FAILED)


def _run_checks_with_progress(checks, ctx, label: str, quiet: bool) -> list:
    """Every applicable check; a progress bar on a terminal when the table is big enough to take a while."""
    names = checks.applicable(ctx)
    if not (_progress_enabled(quiet) and ctx.table.size * ctx.table.itemsize > 32 * 1024**2):
        return checks.run_checks(ctx, names)
    from .render import progress_bar

    results = []
    with progress_bar(f"checking {label}", len(names), True) as advance:
        for name in names:
            results.extend(checks.run_checks(ctx, [name]))
            advance(1)
    return results


def _validate_checkable(table, name: str, label: str, kind: str | None) -> None:
    """A table ``check`` can judge: one row per position (2-D, or heads x len x len), floats unless the kind is integer."""
    from .encodings import get_kind
    from .formats import validate_table_array

    integer_kind = kind in KINDS and get_kind(kind).INTEGER_TABLE
    validate_table_array(table, name, label, need_float=kind in KINDS and not integer_kind)
    if table.ndim == 1:
        raise InputError(
            f"{label}: tensor {name!r} is 1-D (shape {tuple(table.shape)}); an encoding table has one row per "
            "position: pick a 2-D tensor with --tensor or compare 1-D tensors with posenc compare"
        )


def _validate_table(table, name: str, label: str) -> None:
    from .formats import validate_table_array

    validate_table_array(table, name, label, need_float=False)


# ----- compare -------------------------------------------------------------------------------------
@app.command()
@_pipe_safe
def compare(
    a: Annotated[str, typer.Argument(help="First table: file, - or spec.")],
    b: Annotated[str, typer.Argument(help="Reference table: file, - or spec (len/dim default to the first's shape).")],
    length: LenOpt = None,
    dim: DimOpt = None,
    param: ParamOpt = None,
    dtype: DtypeOpt = None,
    tensor: TensorOpt = None,
    grid: GridOpt = None,
    atol: Annotated[Optional[float], typer.Option("--atol", help="Absolute tolerance (default: 2 ulp of 1.0 in the coarser dtype).", show_default=False)] = None,
    rtol: Annotated[float, typer.Option("--rtol", help="Relative tolerance.")] = 0.0,
    json_out: JsonOpt = False,
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
) -> None:
    """Compare two tables: max abs / relative / ulp difference and where, mean difference, row cosine.

    Exit 0 same, 1 different, 2 trouble. Example: posenc compare exported.npy sinusoidal --len 512 --dim 128
    """
    from .compare import compare as compare_tables

    if atol is not None and not (atol >= 0):
        raise ParameterError(f"--atol {atol} must be >= 0")
    if not (rtol >= 0):
        raise ParameterError(f"--rtol {rtol} must be >= 0")
    if a == "-" and b == "-":
        raise ParameterError("only one source can be - (stdin)")
    params = _params(param, grid)
    src_a = _source(a, length, dim, params, dtype, max_bytes)
    src_b = _source(b, length, dim, params, dtype, max_bytes, like=src_a)
    if src_a.encoding is not None and not src_a.tensors and src_b.tensors:  # spec first, file second
        src_a = _source(a, length, dim, params, dtype, max_bytes, like=src_b)
    ta, tb = src_a.tensor_name(tensor), src_b.tensor_name(tensor)
    arr_a, arr_b = src_a.array(ta), src_b.array(tb)
    _validate_table(arr_a, ta, src_a.label)
    _validate_table(arr_b, tb, src_b.label)
    res = compare_tables(arr_a, arr_b, atol=atol, rtol=rtol)
    res.labels = {"a": f"{src_a.label} [{ta}]", "b": f"{src_b.label} [{tb}]"}
    if json_out:
        from .render import print_json

        print_json(res.to_json())
    else:
        from .render import compare_table

        compare_table(res, res.labels["a"], res.labels["b"])
    raise typer.Exit(ExitCode.OK if res.same else ExitCode.FAILED)


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
    from . import formats
    from .sources import CastTensor

    params = _params(param, grid, hf_config, length)
    if onnx_rope and not src_is_file(source):  # a file is regenerated with cache=onnx below
        params["cache"] = "onnx"
    if hf_config is not None and source == "sinusoidal":
        source = "rope"
    src = _source(source, length, dim, params, None if src_is_file(source) else dtype, max_bytes)
    lazy = dict(src.lazy)
    if onnx_rope and src.encoding is None:
        raise ParameterError("--onnx-rope needs a rope spec or a posenc-written rope file")
    if onnx_rope and src.tensors:  # a rope file: regenerate with the ONNX cache layout
        src = _source(_spec_of(src) + (f",dtype={dtype}" if dtype else ""),  # --dtype wins over the file's
                      None, None, {"cache": "onnx"}, dtype, max_bytes)
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
    from .sources import check_size

    check_size(check_bytes, max_bytes, src.label)
    _write(output, lazy, meta, format, force, quiet)
    if output != "-":
        _msg(f"wrote {output} ({', '.join(f'{n} {tuple(t.shape)}' for n, t in lazy.items())})", quiet)


def src_is_file(text: str) -> bool:
    from .sources import is_spec

    return not is_spec(text)


def _spec_of(src) -> str:
    meta = {k: v for k, v in src.metadata.items() if k not in ("posenc_version",)}
    kind = meta.pop("kind")
    names = {f.name for f in src.encoding.param_fields()}
    return kind + ":" + ",".join(f"{k}={v}" for k, v in meta.items() if k in names and k != "cache")


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


# ----- kinds ---------------------------------------------------------------------------------------
@app.command()
@_pipe_safe
def kinds(
    kind: Annotated[Optional[str], typer.Argument(help="Show one kind in detail.", autocompletion=_complete_kind, show_default=False)] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the encoding kinds, or show one kind's tensors, parameters, presets and references."""
    from .encodings import get_kind
    from .kindinfo import kind_info

    if kind is None:
        rows = [kind_info(get_kind(k)) for k in KINDS]
        if json_out:
            from .render import print_json

            print_json(rows)
        else:
            from .render import kinds_list

            kinds_list(rows)
        return
    info = kind_info(get_kind(kind))
    if json_out:
        from .render import print_json

        print_json(info)
    else:
        from .render import kind_detail

        kind_detail(info)


# ----- entry point ---------------------------------------------------------------------------------
def main() -> None:
    """Console-script entry point: run the app and turn every way out into one line and an exit code.

    Typer runs in non-standalone mode so that usage errors reach us: they become one ``Error:`` line (the
    bad value and where to look) instead of click's three-line usage block.
    """
    if "_POSENC_COMPLETE" in os.environ:
        _plain_completion_help()
    try:
        code = app(prog_name="posenc", standalone_mode=False)
    except PosencError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        sys.stderr.write("Interrupted\n")
        sys.exit(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except _click_exception() as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `posenc`: show the help
            exc.show()
            sys.exit(exc.exit_code)
        command = exc.ctx.command_path if getattr(exc, "ctx", None) is not None else "posenc"
        sys.stderr.write(f"Error: {exc.format_message()} (see {command} --help)\n")
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else ExitCode.OK)


def _click_exception() -> type[Exception]:
    try:  # typer >= 0.26 vendors click
        from typer._click.exceptions import ClickException
    except ImportError:  # pragma: no cover - older typer on real click
        from click.exceptions import ClickException
    return ClickException


def _plain_completion_help() -> None:
    """Typer's zsh/fish completion imports rich to strip markup from help texts; ours has none (plain mode)."""
    try:
        from typer import _completion_classes
    except ImportError:  # pragma: no cover - a typer without this private module
        return
    if hasattr(_completion_classes, "_sanitize_help_text"):
        _completion_classes._sanitize_help_text = lambda text: text


def _quiet_broken_pipe() -> None:
    """The reader of stdout went away: exit quietly like a Unix filter (128 + SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
    os._exit(141)
