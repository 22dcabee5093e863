"""`posenc check`: measure every property of one or more tables."""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import ExitCode, ParameterError
from ._common import (
    add_json,
    add_max_bytes,
    add_quiet,
    add_table_options,
    kind_option,
    open_src,
    progress_enabled,
    refuse_spec_options_for_files,
    spec_params,
)
from ._parser import with_completer

NAME = "check"
SUMMARY = "Measure every property of a table (finite, bounded, unique, constant-norm, ...)."
DESCRIPTION = """\
Measure every property of a table (finite, bounded, unique, constant-norm, equidistant, ...).

Exit 0 when every required property holds, 1 when one fails, 2 on bad input.

Examples:
  posenc check pe.safetensors
  posenc check sinusoidal:preset=tf-tutorial --len 5 --dim 6
  posenc generate -n 512 -d 128 | posenc check -"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ._common import complete_kind

    with_completer(
        p.add_argument(
            "sources", nargs="*", metavar="SOURCE", help="Files, - for stdin, or specs KIND[:key=value,...]."
        ),
        complete_kind,
    )
    add_table_options(p)
    p.add_argument("-t", "--tensor", metavar="NAME", help="Tensor to judge from a multi-tensor source.")
    kind_option(p, ("--expect",), "Judge the table as this kind (default: the kind in its metadata).")
    p.add_argument(
        "--require", metavar="NAMES", help="Comma-separated properties that must hold (default: the kind's)."
    )
    p.add_argument("--probes", type=int, default=8, metavar="N", help="Random probes for randomized checks.")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="Seed of the random probes.")
    p.add_argument("-v", "--verbose", action="store_true", help="How each property was measured, and its details.")
    add_json(p)
    add_max_bytes(p)
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    # The checks run their own two worker threads (checks/sweep.py) and keep BLAS products small or one per
    # thread; OpenBLAS's own threads would then only spin (measured: ~30% more CPU and a slower check on a busy
    # 2-core machine). Only before NumPy loads (it reads the variable then); a user's own setting wins.
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sources = args.sources
    if not sources:
        if sys.stdin.isatty():
            raise ParameterError(
                "give a source: a file, - for stdin, or a spec like sinusoidal (see posenc check --help)"
            )
        sources = ["-"]
    refuse_spec_options_for_files(args, sources)
    if args.expect is not None:
        from ..encodings import resolve_kind

        args.expect = resolve_kind(args.expect)
    required = [r.strip() for r in args.require.split(",") if r.strip()] if args.require else None
    params = spec_params(args)
    reports: list = []
    for text in sources:
        src = open_src(text, args, params)
        reports.extend(_run_one(group, args, required) for group in _tables(src, args))
    if args.json_out:
        from ..render import check_json, print_json

        print_json(check_json(reports))
    else:
        from ..render import check_report

        for r in reports:
            check_report(r, quiet=args.quiet, verbose=args.verbose)
    return ExitCode.OK if all(r.ok for r in reports) else ExitCode.FAILED


def _tables(src, args: argparse.Namespace) -> list:
    """The tables of a source: each group of a grouped file, else the source."""
    if src.groups and args.tensor is not None:
        raise ParameterError(
            f"{src.label} holds one table per group ({', '.join(src.groups)}); --tensor cannot "
            "apply: every group's tables are checked"
        )
    return list(src.groups.values()) or [src]


def _run_one(src, args: argparse.Namespace, required):
    """api.check, with a progress bar on a terminal when the table is big enough to take a while."""
    from ..api import check as check_table
    from ..render import progress_bar

    kwargs = {
        "expect": args.expect,
        "require": required,
        "tensor": args.tensor,
        "probes": args.probes,
        "seed": args.seed,
    }
    name = src.tensor_name(args.tensor)
    big = progress_enabled(args.quiet) and src.tensors.get(name) is not None and src.tensors[name].nbytes > 32 * 1024**2
    if not big:
        return check_table(src, **kwargs)
    with progress_bar(f"checking {src.label}", 1, True) as advance:
        return check_table(src, on_check=lambda _name, total: advance(1, total), **kwargs)
