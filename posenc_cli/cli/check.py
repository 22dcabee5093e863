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
    complete_kind,
    kind_option,
    open_src,
    progress_enabled,
    refuse_spec_options_for_files,
    spec_params,
    stdin_source,
)
from ._parser import with_completer

NAME = "check"
SUMMARY = "Measure every property of a table (finite, bounded, unique, constant-norm, ...)."
DESCRIPTION = """\
Measure every property of a table (finite, bounded, unique, constant-norm, equidistant, ...).

A source is judged as a whole (a RoPE file's cos and sin get their pair
properties) unless --tensor narrows it. A table without a kind (a plain .npy)
is identified from its structure and judged as what it is; the report says
what was assumed. --against SPEC also requires the table to equal that spec
(its length and dim default to the table's; --len, --dim, -p set the rest),
and says why when it does not.

Exit 0 when every required property holds, 1 when one fails, 2 on bad input.

Examples:
  posenc check pe.safetensors
  posenc check sinusoidal:preset=tf-tutorial --len 5 --dim 6
  posenc generate -n 512 -d 128 | posenc check -
  posenc check exported.npy --against rope:base=500000"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    with_completer(
        p.add_argument(
            "sources", nargs="*", metavar="SOURCE", help="Files, - for stdin, or specs KIND[:key=value,...]."
        ),
        complete_kind,
    )
    add_table_options(p)
    p.add_argument(
        "-t",
        "--tensor",
        action="append",
        metavar="NAME",
        help="Judge only this tensor (repeatable: -t cos -t sin; default: every tensor).",
    )
    kind_option(p, ("--expect",), "Judge the table as this kind (default: the kind in its metadata).")
    with_completer(
        p.add_argument(
            "--against",
            metavar="SPEC",
            help="The spec (KIND[:key=value,...]) or file the table must equal; differences are explained.",
        ),
        complete_kind,
    )
    p.add_argument(
        "--no-identify", action="store_true", help="Do not identify a table without a kind (judge it as unknown)."
    )
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
    sources = args.sources or [stdin_source(NAME, "a file, - for stdin, or a spec like sinusoidal")]
    from ..sources import is_spec

    if args.expect is not None:
        from ..encodings import resolve_kind

        args.expect = resolve_kind(args.expect)
    against = args.against
    if against is not None:
        if not is_spec(against) and args.expect is not None:
            raise ParameterError(
                f"--expect {args.expect} and --against {against}: the file {against} says what the table is; "
                "give one of them"
            )
    elif args.expect is not None and not any(is_spec(s) for s in sources) and (args.param or args.grid):
        # --expect KIND -p key=value on files: the table must equal that spec
        against = args.expect
    spec_sources = [*sources, *([against] if against is not None else [])]
    refuse_spec_options_for_files(args, spec_sources)
    if against is not None and any(is_spec(s) for s in sources):
        raise ParameterError(
            "--against compares files with a spec; the source is a spec already: compare two specs with posenc compare"
        )
    required = [r.strip() for r in args.require.split(",") if r.strip()] if args.require else None
    params = spec_params(args)
    srcs = [open_src(text, args, params if is_spec(text) else {}) for text in sources]
    if args.no_identify:
        from ..encodings import KINDS

        if against is not None:
            raise ParameterError("--no-identify cannot apply with --against: the spec says what the table is")
        known = [s for s in srcs if s.kind in KINDS]
        if len(known) == len(srcs):
            raise ParameterError(
                f"--no-identify cannot apply: {known[0].label} says its kind ({known[0].kind}); only a table "
                "without one is identified"
            )
    # a file to match is read once; a spec is built per source, with that source's length and dim
    ref_file = open_src(against, args, {}) if against is not None and not is_spec(against) else None
    reports: list = []
    for src in srcs:
        ref = ref_file
        if against is not None and ref_file is None:
            ref = open_src(against, args, params, like=src)
        reports.extend(_run_one(group, args, required, ref) for group in _tables(src, args))
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


def _run_one(src, args: argparse.Namespace, required, against=None):
    """api.check, with a progress bar on a terminal when the table is big enough to take a while."""
    from ..api import check as check_table
    from ..render import progress_bar

    kwargs = {
        "expect": args.expect,
        "against": against,
        "require": required,
        "tensor": args.tensor,
        "identify": not args.no_identify,
        "probes": args.probes,
        "seed": args.seed,
    }
    from ..api import _chosen_tensors

    size = sum(int(getattr(src.tensors.get(n), "nbytes", 0)) for n in _chosen_tensors(src, args.tensor))
    big = progress_enabled(args.quiet) and size > 32 * 1024**2
    if not big:
        return check_table(src, **kwargs)
    with progress_bar(f"checking {src.label}", 1, True) as advance:
        return check_table(src, on_check=lambda _name, total: advance(1, total), **kwargs)
