"""`posenc compare`: metrics between two tables and a verdict."""

from __future__ import annotations

import argparse

from ..errors import ExitCode, ParameterError
from ._common import (
    add_json,
    add_max_bytes,
    add_quiet,
    add_table_options,
    float_option,
    open_src,
    refuse_spec_options_for_files,
    spec_params,
)

NAME = "compare"
SUMMARY = "Compare two tables: max abs / relative / ulp difference and where, row cosine."
DESCRIPTION = """\
Compare every tensor two tables share: max abs / relative / ulp difference and
where, mean difference, row cosine; where they differ, why (a layout swap, an
offset, another base or scaling, a sign, a precision, ...), with what is left
after undoing it. A tensor on one side only is a difference unless --tensor
narrows the comparison.

Exit 0 same, 1 different, 2 trouble.

Example:
  posenc compare exported.npy sinusoidal --len 512 --dim 128"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", metavar="A", help="First table: file, - or spec.")
    p.add_argument("b", metavar="B", help="Reference table: file, - or spec (len/dim default to the first's shape).")
    add_table_options(p)
    p.add_argument("-t", "--tensor", metavar="NAME", help="Tensor to compare from multi-tensor sources.")
    float_option(p, "--atol", "Absolute tolerance (default: 2 ulp of 1.0 in the coarser dtype).")
    float_option(p, "--rtol", "Relative tolerance (default 0).", default=0.0)
    p.add_argument("--no-explain", action="store_true", help="Do not look for why tables differ (faster).")
    p.add_argument("-v", "--verbose", action="store_true", help="Every explanation found, not only the best.")
    add_json(p)
    add_max_bytes(p)
    add_quiet(p)


def run(args: argparse.Namespace) -> int:
    from ..api import compare as compare_tables

    if args.atol is not None and not args.atol >= 0:
        raise ParameterError(f"--atol {args.atol} must be >= 0")
    if not args.rtol >= 0:
        raise ParameterError(f"--rtol {args.rtol} must be >= 0")
    if args.a == "-" and args.b == "-":
        raise ParameterError("only one source can be - (stdin)")
    refuse_spec_options_for_files(args, [args.a, args.b])
    from ..sources import is_spec

    params = spec_params(args)
    if is_spec(args.a) and not is_spec(args.b):  # spec first, file second: the file gives the spec its shape
        src_b = open_src(args.b, args, params)
        src_a = open_src(args.a, args, params, like=src_b)
    else:
        src_a = open_src(args.a, args, params)
        src_b = open_src(args.b, args, params, like=src_a)
    res = compare_tables(src_a, src_b, tensor=args.tensor, atol=args.atol, rtol=args.rtol, explain=not args.no_explain)
    if args.json_out:
        from ..render import print_json

        print_json(res.to_json())
    else:
        from ..render import comparison_report

        comparison_report(res, quiet=args.quiet, verbose=args.verbose)
    return ExitCode.OK if res.same else ExitCode.FAILED
