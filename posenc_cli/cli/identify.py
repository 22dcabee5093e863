"""`posenc identify`: which kind, preset and parameters reproduce a table."""

from ..errors import ExitCode, ParameterError
from . import _options as o
from ._common import print_json, say_warnings, stdin_source

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


def run(
    source: o.Source = None,
    length: o.Length = None,
    n_ctx: o.NCtx = None,
    tensor: o.Tensors = None,
    verbose: o.Verbose = False,
    json_out: o.Json = False,
    max_bytes: o.MaxBytes = None,
    quiet: o.Quiet = 0,
) -> int:
    from ..api import identify
    from ..sources import is_config, is_gguf, is_spec, open_source

    text = source or stdin_source("identify", "a file or - for stdin")
    if is_spec(text) or is_config(text):
        what = "a spec" if is_spec(text) else "a model config"
        raise ParameterError(f"{text!r} is {what}, whose tables are known; identify reads files and stdin")
    if not is_gguf(text) and (length is not None or n_ctx is not None):
        raise ParameterError("--len and --n-ctx apply to a GGUF file (what llama.cpp computes); drop them")
    if is_gguf(text):
        src = open_source(text, length=length, n_ctx=n_ctx, max_bytes=max_bytes)
        say_warnings(src, quiet)
    else:
        src = open_source(text, max_bytes=max_bytes)  # a mistyped kind gets "unknown encoding ... did you mean"
    found = identify(src, tensor=tensor or None)
    if json_out:
        print_json({"source": src.label, **found.to_json()})
    else:
        from ..render import identification_report

        identification_report(found, src.label, verbose=verbose, quiet=quiet)
    return ExitCode.OK if found.identified else ExitCode.FAILED
