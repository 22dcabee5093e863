"""`posenc identify`: which kind, preset and parameters reproduce a table."""

from ..errors import ExitCode
from . import _options as o
from ._common import msg, print_json, stdin_source

DESCRIPTION = """\
Name the kind, preset and parameters that reproduce a table, read from its own
structure (column frequencies and layout, value range, Toeplitz structure,
per-head slopes, grid strides), and print the posenc generate command that
regenerates it with what is left (max abs, ulp). A table no analytic kind
reproduces (a trained table, noise) gets the closest readings and why each
fails. Rows that are not positions (a learned class row before a sin-cos grid)
are left out when the metadata's extra_rows or --extra-rows INDEX:NAME,...
names them: the positions are identified, and the rows left out are said.

Exit 0 identified, 1 not identified, 2 bad input.

Examples:

  posenc identify exported.npy
  posenc identify rope_cache.safetensors --json"""


def run(
    source: o.Source = None,
    length: o.Length = None,
    n_ctx: o.NCtx = None,
    tensor: o.Tensors = None,
    extra_rows: o.ExtraRows = None,
    verbose: o.Verbose = False,
    json_out: o.Json = False,
    max_bytes: o.MaxBytes = None,
    quiet: o.Quiet = 0,
) -> int:
    from ..api import identify_source

    text = source or stdin_source("identify", "a file or - for stdin")
    label, found, warnings = identify_source(
        text, length=length, n_ctx=n_ctx, tensor=tensor, max_bytes=max_bytes, extra_rows=extra_rows
    )
    for w in warnings:
        msg(f"Warning: {w}", quiet)
    from ..render import identification_json, identification_report

    if json_out:
        print_json(identification_json(found, label))
    else:
        identification_report(found, label, verbose=verbose, quiet=quiet)
    return ExitCode.OK if found.identified else ExitCode.FAILED
