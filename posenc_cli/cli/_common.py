"""What every posenc command shares: option declarations, opening sources, writing, messages.

Heavy modules (numpy, rich, safetensors) are imported inside functions so that ``posenc --help``,
``--version`` and shell completion start instantly.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..encodings import KINDS
from ..errors import OutputError, ParameterError
from ._parser import choices, float_value, int_value, with_completer

FORMAT_NAMES = ("npy", "npz", "safetensors", "csv", "json")
DTYPE_NAMES = ("float64", "float32", "float16", "bfloat16")
DEFAULT_MAX_BYTES = 8 * 1024**3


def complete_kind(prefix: str) -> list[str]:
    return [k for k in KINDS if k.startswith(prefix)]


# ----- shared options ------------------------------------------------------------------------------
def add_table_options(p: argparse.ArgumentParser, *, dtype_help: str | None = None) -> None:
    """--len, --dim, -p, --dtype, --grid: the parameters of a spec (and of generate)."""
    p.add_argument("-n", "--len", dest="length", type=int_value, metavar="N",
                   help="Number of positions (rows); the parameter 'length'.")
    p.add_argument("-d", "--dim", type=int_value, metavar="D", help="Feature dimension (columns); heads for alibi.")
    p.add_argument("-p", "--param", action="append", metavar="KEY=VALUE",
                   help="Encoding parameter (repeatable, or comma-separated; see `posenc kinds KIND`).")
    with_completer(
        p.add_argument("--dtype", metavar="DTYPE",
                       help=dtype_help or "Output dtype: float64, float32 (default), float16, bfloat16."),
        choices(DTYPE_NAMES),
    )
    p.add_argument("--grid", metavar="HxW", help="Grid of the 2-D/3-D kinds, e.g. 14x14 or 8x14x14.")


def add_max_bytes(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-bytes", type=int_value, default=DEFAULT_MAX_BYTES, metavar="N",
                   help=f"Refuse tables larger than this many bytes (default {DEFAULT_MAX_BYTES}).")


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="count", default=0,
                   help="No messages or progress on stderr (-qq: not even the verdict).")


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", dest="json_out", action="store_true", help="Machine-readable JSON on stdout.")


def add_format(p: argparse.ArgumentParser) -> None:
    with_completer(
        p.add_argument("--format", metavar="FMT",
                       help="Output format: npy, npz, safetensors, csv, json (default: from the suffix)."),
        choices(FORMAT_NAMES),
    )


def add_force(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--force", action="store_true",
                   help="Overwrite an existing file; allow binary output to a terminal.")


def add_hf_config(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hf-config", metavar="PATH",
                   help="A model's config.json (or its directory, or -): build exactly the tables it uses.")
    p.add_argument("--layer-type", metavar="NAME",
                   help="With --hf-config: the attention type of a per-layer config (e.g. sliding_attention).")


def kind_option(p: argparse.ArgumentParser, flags: tuple[str, ...], help: str) -> None:
    with_completer(p.add_argument(*flags, metavar="KIND", help=help), complete_kind)


def float_option(p: argparse.ArgumentParser, flag: str, help: str, default: float | None = None) -> None:
    p.add_argument(flag, type=float_value, default=default, metavar="X", help=help)


# ----- helpers -------------------------------------------------------------------------------------
def msg(text: str, quiet: int) -> None:
    if not quiet:
        sys.stderr.write(text + "\n")


def spec_params(args: argparse.Namespace) -> dict[str, Any]:
    """The ``-p`` pairs and ``--grid`` of a command line (the kind's parameters, as strings)."""
    from ..sources import parse_param_options

    params: dict[str, Any] = {}
    if getattr(args, "grid", None) is not None:
        params["grid"] = args.grid
    params.update(parse_param_options(args.param))
    return params


def config_params(args: argparse.Namespace, explicit_kind: str | None) -> tuple[str, dict[str, Any]]:
    """``(kind, parameters)`` from ``--hf-config`` (and ``--layer-type``, ``--len``); warnings go to stderr."""
    from ..api import load_config
    from ..encodings import from_model_config

    config = load_config(args.hf_config)
    kind, params, warnings = from_model_config(config, kind=explicit_kind, length=args.length,
                                               layer_type=args.layer_type)
    for w in warnings:
        msg(f"Warning: {w}", getattr(args, "quiet", 0))
    return kind, params


def refuse_layer_type_without_config(args: argparse.Namespace) -> None:
    if getattr(args, "layer_type", None) is not None and getattr(args, "hf_config", None) is None:
        raise ParameterError("--layer-type applies to --hf-config; drop it or pass --hf-config config.json")


def open_src(text: str, args: argparse.Namespace, params: dict[str, Any], like: Any = None, dtype: Any = "args") -> Any:
    from ..sources import open_source

    return open_source(text, length=args.length, dim=args.dim, params=params,
                       dtype=args.dtype if dtype == "args" else dtype, max_bytes=args.max_bytes, like=like)


def progress_enabled(quiet: int) -> bool:
    return not quiet and sys.stderr.isatty()


def write(dest: str, tensors: dict[str, Any], metadata: dict[str, str], fmt: str | None, force: bool,
          quiet: int) -> None:
    """Write through the formats package, with a progress bar for big outputs."""
    from .. import formats

    fmt_name = formats.format_for(dest, fmt)
    if dest == "-" and sys.stdout.isatty() and fmt_name in ("npy", "npz", "safetensors") and not force:
        raise OutputError("refusing to write binary data to a terminal; redirect stdout, use -o FILE, or pass --force")
    total = sum(int(t.shape[0]) if len(t.shape) else 1 for t in tensors.values())
    nbytes = sum(int(t.dtype.itemsize) * prod(t.shape) for t in tensors.values())
    if not (progress_enabled(quiet) and nbytes > 64 * 1024**2):  # rich is only imported for a bar
        formats.write_table(dest, tensors, metadata, fmt_name, force=force)
        return
    from ..render import progress_bar

    with progress_bar(f"writing {dest}", total, True) as advance:
        formats.write_table(dest, tensors, metadata, fmt_name, force=force, progress=advance)


def prod(shape: Any) -> int:
    out = 1
    for s in shape:
        out *= int(s)
    return out


def quiet_broken_pipe() -> None:
    """The reader of stdout went away: exit quietly like a Unix filter (128 + SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
    os._exit(141)
