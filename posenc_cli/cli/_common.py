"""What every posenc command shares: the Typer app, option types, source opening and writing.

Heavy modules (numpy, rich, safetensors) are imported inside functions so that ``posenc --help``,
``--version`` and shell completion start instantly.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from .. import __version__
from ..encodings import KINDS
from ..errors import OutputError, ParameterError

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
    from ..sources import parse_param_options

    params: dict[str, object] = {}
    if hf_config is not None:
        params.update(_hf_params(hf_config, length))
    if grid is not None:
        params["grid"] = grid
    params.update(parse_param_options(options))
    return params


def _hf_params(path: str, length: int | None) -> dict[str, object]:
    import json

    from ..encodings.rope import params_from_hf_config

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
    from ..sources import open_source

    return open_source(text, length=length, dim=dim, params=params, dtype=dtype, max_bytes=max_bytes, like=like)


def _progress_enabled(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


def _write(dest: str, tensors: dict, metadata: dict, fmt: str | None, force: bool, quiet: bool) -> None:
    """Write through the formats package, with a progress bar for big outputs."""
    from .. import formats

    fmt_name = formats.format_for(dest, fmt) if dest != "-" else (fmt or "npy")
    if dest == "-" and sys.stdout.isatty() and fmt_name in ("npy", "npz", "safetensors") and not force:
        raise OutputError("refusing to write binary data to a terminal; redirect stdout, use -o FILE, or pass --force")
    total = sum(int(t.shape[0]) if len(t.shape) else 1 for t in tensors.values())
    nbytes = sum(int(t.dtype.itemsize) * _prod(t.shape) for t in tensors.values())
    if not (_progress_enabled(quiet) and nbytes > 64 * 1024**2):  # rich is only imported for a bar
        formats.write_table(dest, tensors, metadata, fmt_name, force=force)
        return
    from ..render import progress_bar

    with progress_bar(f"writing {dest}", total, True) as advance:
        formats.write_table(dest, tensors, metadata, fmt_name, force=force, progress=advance)


def _prod(shape) -> int:
    out = 1
    for s in shape:
        out *= int(s)
    return out


def _validate_table(table, name: str, label: str) -> None:
    from ..formats import validate_table_array

    validate_table_array(table, name, label, need_float=False)


def _quiet_broken_pipe() -> None:
    """The reader of stdout went away: exit quietly like a Unix filter (128 + SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
    os._exit(141)
