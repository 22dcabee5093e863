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
    p.add_argument(
        "-n",
        "--len",
        dest="length",
        type=int_value,
        metavar="N",
        help="Number of positions (rows); the parameter 'length'.",
    )
    p.add_argument("-d", "--dim", type=int_value, metavar="D", help="Feature dimension (columns); heads for alibi.")
    p.add_argument(
        "-p",
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="Encoding parameter (repeatable, or comma-separated; see `posenc kinds KIND`).",
    )
    with_completer(
        p.add_argument(
            "--dtype",
            metavar="DTYPE",
            help=dtype_help or "Output dtype: float64, float32 (default), float16, bfloat16.",
        ),
        choices(DTYPE_NAMES),
    )
    p.add_argument("--grid", metavar="HxW", help="Grid of the 2-D/3-D kinds, e.g. 14x14 or 8x14x14.")


def add_max_bytes(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-bytes",
        type=int_value,
        metavar="N",
        help="Refuse tables larger than this many bytes (default: 8 GiB for what is built or read into "
        "memory; memory-mapped files only when given).",
    )


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-q",
        "--quiet",
        action="count",
        default=0,
        help="No messages or progress on stderr (-qq: not even the verdict).",
    )


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", dest="json_out", action="store_true", help="Machine-readable JSON on stdout.")


def add_format(p: argparse.ArgumentParser) -> None:
    with_completer(
        p.add_argument(
            "--format",
            metavar="FMT",
            help="Output format: npy, npz, safetensors, csv, json (default: from the suffix).",
        ),
        choices(FORMAT_NAMES),
    )


def add_force(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-f", "--force", action="store_true", help="Overwrite an existing file; allow binary output to a terminal."
    )


def add_hf_config(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--hf-config",
        metavar="PATH",
        help="A model's config.json (or its directory, or -): build exactly the tables it uses.",
    )
    p.add_argument(
        "--layer-type",
        metavar="NAME",
        help="With --hf-config: the attention type of a per-layer config (e.g. sliding_attention).",
    )


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
    kind, params, warnings = from_model_config(
        config, kind=explicit_kind, length=args.length, layer_type=args.layer_type
    )
    for w in warnings:
        msg(f"Warning: {w}", getattr(args, "quiet", 0))
    return kind, params


#: The options that set a spec's parameters: they apply to sources generated from a spec, not to files.
SPEC_OPTIONS = (
    ("length", "--len"),
    ("dim", "--dim"),
    ("param", "-p/--param"),
    ("grid", "--grid"),
    ("dtype", "--dtype"),
)


def refuse(args: argparse.Namespace, options: list[tuple[str, str]], why: str) -> None:
    """A one-line error naming every option of ``options`` (``(dest, flag)``) that was given, and why it cannot
    apply: never accept an option and do nothing with it."""

    def given_(v: Any) -> bool:  # 0 is a value (--head 0); None, False and [] are not
        return not (v is None or v is False or (isinstance(v, list) and not v))

    given = [flag for dest, flag in options if given_(getattr(args, dest, None))]
    if given:
        raise ParameterError(f"{', '.join(given)} cannot apply: {why}")


def refuse_spec_options_for_files(args: argparse.Namespace, sources: list[str], *, dtype: bool = True) -> None:
    """--len/--dim/-p/--grid (and --dtype where it means the spec's dtype) build specs; refuse them when no
    source is a spec."""
    from ..encodings import resolve_kind
    from ..sources import is_spec, looks_like_a_kind

    for s in sources:
        if looks_like_a_kind(s):  # a mistyped kind, not a file: say so first
            resolve_kind(s.split(":", 1)[0])
    if not any(is_spec(s) for s in sources):
        options = [o for o in SPEC_OPTIONS if dtype or o[0] != "dtype"]
        what = "the source is a file" if len(sources) == 1 else "the sources are files"
        if "-" in sources:
            what = "the source is stdin" if len(sources) == 1 else "the sources are files and stdin"
        refuse(
            args,
            options,
            f"{what}, and these options set the parameters of a spec; drop them or give a spec such as KIND:key=value",
        )


def refuse_layer_type_without_config(args: argparse.Namespace) -> None:
    if getattr(args, "layer_type", None) is not None and getattr(args, "hf_config", None) is None:
        raise ParameterError("--layer-type applies to --hf-config; drop it or pass --hf-config config.json")


def open_src(text: str, args: argparse.Namespace, params: dict[str, Any], like: Any = None, dtype: Any = "args") -> Any:
    from ..sources import is_spec, open_source, parse_spec

    if is_spec(text):  # a value the spec sets and an option sets too: say which wins instead of picking one
        pairs = parse_spec(text)[1]
        for key, flag in (("length", "--len"), ("dim", "--dim"), ("dtype", "--dtype"), *((k, "-p") for k in params)):
            if key in pairs and (getattr(args, key, None) is not None if flag != "-p" else True):
                raise ParameterError(f"{flag} sets {key}, which the spec {text!r} sets too; give it once")
    return open_source(
        text,
        length=args.length,
        dim=args.dim,
        params=params,
        dtype=args.dtype if dtype == "args" else dtype,
        max_bytes=args.max_bytes,
        like=like,
    )


def stdin_source(command: str, what: str) -> str:
    """``-`` when no source was given and stdin is a pipe or a file; on a terminal, a one-line error saying what
    to give (``what``)."""
    if sys.stdin.isatty():
        raise ParameterError(f"give a source: {what} (see posenc {command} --help)")
    return "-"


def max_bytes(args: argparse.Namespace) -> int:
    return DEFAULT_MAX_BYTES if args.max_bytes is None else int(args.max_bytes)


def progress_enabled(quiet: int) -> bool:
    return not quiet and sys.stderr.isatty()


def write(
    dest: str, tensors: dict[str, Any], metadata: dict[str, str], fmt: str | None, force: bool, quiet: int
) -> None:
    """Write through the formats package, with a progress bar for big outputs.

    ``.npy`` on stdout (a pipe) carries the whole table: the first tensor as plain ``.npy`` bytes, then a posenc
    trailer with the metadata and the other tensors (``np.load(sys.stdin.buffer)`` reads the first and stops).
    A ``.npy`` or ``.csv`` file holds one tensor and no metadata: what it leaves out is said on stderr.
    """
    from .. import formats

    fmt_name = formats.format_for(dest, fmt)
    trailer = dest == "-" and fmt_name == "npy" and (len(tensors) > 1 or bool(metadata))
    note = ""
    if not trailer and fmt_name in formats.SINGLE_TENSOR_FORMATS and len(tensors) == 1:
        dropped = [n for n in metadata.get("_all_tensors", "").split(",") if n and n not in tensors]
        no_meta = fmt_name == "npy"  # .csv keeps the metadata in its header line
        lost = ([f"the other tensors ({', '.join(dropped)})"] if dropped else []) + (
            ["the metadata"] if metadata and no_meta else []
        )
        if lost and dest != "-":
            note = (
                f"note: {dest} holds {next(iter(tensors))} only, without {' and '.join(lost)}; write "
                ".safetensors, .npz or .json to keep the whole table"
            )
    metadata = {k: v for k, v in metadata.items() if k != "_all_tensors"}
    if dest == "-" and sys.stdout.isatty() and fmt_name in ("npy", "npz", "safetensors") and not force:
        raise OutputError("refusing to write binary data to a terminal; redirect stdout, use -o FILE, or pass --force")
    total = sum(int(t.shape[0]) if len(t.shape) else 1 for t in tensors.values())
    nbytes = sum(int(t.dtype.itemsize) * prod(t.shape) for t in tensors.values())
    try:
        if not (progress_enabled(quiet) and nbytes > 64 * 1024**2):  # rich is only imported for a bar
            formats.write_table(dest, tensors, metadata, fmt_name, force=force, trailer=trailer)
        else:
            from ..render import progress_bar

            with progress_bar(f"writing {dest}", total, True) as advance:
                formats.write_table(dest, tensors, metadata, fmt_name, force=force, progress=advance, trailer=trailer)
    except formats.TrailerNotRead:
        # the reader took the .npy array and went away (np.load): all it asked for was written
        quiet_exit()
    if note:
        msg(note, quiet)


def prod(shape: Any) -> int:
    out = 1
    for s in shape:
        out *= int(s)
    return out


def _exit_without_stdout(code: int) -> None:
    """Exit with ``code`` now, with stdout pointed at /dev/null for good (no flush may raise at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
    os._exit(code)


def quiet_exit() -> None:
    """Exit 0 now: the reader took all it asked for and is gone."""
    _exit_without_stdout(0)


def quiet_broken_pipe() -> None:
    """The reader of stdout went away: exit quietly like a Unix filter (128 + SIGPIPE)."""
    _exit_without_stdout(141)
