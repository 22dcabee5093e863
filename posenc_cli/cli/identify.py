"""`posenc identify`: which kind, preset and parameters reproduce a table."""

from __future__ import annotations

import argparse

from ..errors import ExitCode, ParameterError
from ._common import add_json, add_max_bytes, add_quiet, stdin_source

NAME = "identify"
SUMMARY = "Name the kind, preset and parameters that reproduce a table."
DESCRIPTION = """\
Name the kind, preset and parameters that reproduce a table, read from its own
structure (column frequencies and layout, value range, Toeplitz structure,
per-head slopes, grid strides), and print the posenc generate command that
regenerates it with what is left (max abs, ulp). A table no analytic kind
reproduces (a trained table, noise) gets the closest readings and why each
fails.

Exit 0 identified, 1 not identified, 2 bad input.

Examples:
  posenc identify exported.npy
  posenc identify rope_cache.safetensors --json"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", nargs="?", metavar="SOURCE", help="File (npy, npz, safetensors, csv, json) or -.")
    p.add_argument(
        "-t",
        "--tensor",
        action="append",
        metavar="NAME",
        help="Tensor to identify (repeatable, e.g. -t cos -t sin; default: every tensor).",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="Every reading tried, with why it fails.")
    add_json(p)
    add_max_bytes(p)
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from ..api import identify
    from ..sources import is_spec, open_source

    source = args.source or stdin_source(NAME, "a file or - for stdin")
    if is_spec(source):
        raise ParameterError(
            f"{source!r} is a spec, whose kind and parameters are known; identify reads files and stdin"
        )
    src = open_source(source, max_bytes=args.max_bytes)  # a mistyped kind gets "unknown encoding ... did you mean"
    found = identify(src, tensor=args.tensor)
    if args.json_out:
        from ..render import print_json

        print_json({"source": src.label, **found.to_json()})
    else:
        from ..render import identification_report

        identification_report(found, src.label, verbose=args.verbose, quiet=args.quiet)
    return ExitCode.OK if found.best is not None else ExitCode.FAILED
