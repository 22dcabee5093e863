"""`posenc compare`: metrics between two tables and a verdict."""

from ..errors import ExitCode, ParameterError
from . import _options as o
from ._common import TableOptions, open_src, print_json, refuse_spec_options_for_files

DESCRIPTION = """\
Compare every tensor two tables share: max abs / relative / ulp difference and
where, mean difference, row cosine; where they differ, why (a layout swap, an
offset, another base or scaling, a sign, a precision, ...), with what is left
after undoing it. A tensor on one side only is a difference unless --tensor
narrows the comparison. Either side may be a file, -, a spec or a model config.

Exit 0 same, 1 different, 2 trouble.

Example:

  posenc compare exported.npy sinusoidal --len 512 --dim 128"""


def run(
    a: o.Source = None,
    b: o.Source = None,
    length: o.Length = None,
    dim: o.Dim = None,
    param: o.Params = None,
    dtype: o.Dtype = None,
    grid: o.Grid = None,
    layer_type: o.LayerType = None,
    read_as: o.ReadAs = None,
    engine: o.Engine = None,
    max_model_len: o.MaxModelLen = None,
    n_ctx: o.NCtx = None,
    tensor: o.Tensors = None,
    atol: o.Atol = None,
    rtol: o.Rtol = 0.0,
    no_explain: o.NoExplain = False,
    verbose: o.Verbose = False,
    json_out: o.Json = False,
    max_bytes: o.MaxBytes = None,
    quiet: o.Quiet = 0,
) -> int:
    from ..api import compare as compare_tables
    from ..sources import is_config, is_gguf, is_spec

    if a is None or b is None:
        raise ParameterError("compare needs two sources A and B (files, -, specs or model configs)")
    if a == "-" and b == "-":
        raise ParameterError("only one source can be - (stdin)")
    pair = (a, b) if is_gguf(a) and is_config(b) else (b, a) if is_gguf(b) and is_config(a) else None
    if pair is not None:  # llama.cpp's RoPE for a GGUF against HF's for its config: the divergences named
        from ._common import refuse
        from .check import gguf_verdicts

        given = [("--dim", dim), ("-p", param), ("--dtype", dtype), ("--grid", grid), ("--layer-type", layer_type),
                 ("--tensor", tensor), ("--atol", atol), ("--rtol", rtol or None), ("--no-explain", no_explain),
                 ("--engine", engine), ("--max-model-len", max_model_len)]  # fmt: skip
        refuse(given, "a GGUF file and a model config are compared on llama.cpp's RoPE as a whole")
        return gguf_verdicts([pair[0]], pair[1], n_ctx, length, json_out, quiet)
    opts = TableOptions.of(locals())
    refuse_spec_options_for_files(opts, [a, b])

    def builds(text: str) -> bool:
        return is_spec(text) or is_config(text)

    if builds(a) and not builds(b):  # built first, file second: the file gives the spec its shape
        src_b = open_src(b, opts, quiet=quiet)
        src_a = open_src(a, opts, like=src_b, quiet=quiet)
    else:
        src_a = open_src(a, opts, quiet=quiet)
        src_b = open_src(b, opts, like=src_a, quiet=quiet)
    narrowed = None if not tensor else (tensor[0] if len(tensor) == 1 else list(tensor))
    res = compare_tables(src_a, src_b, tensor=narrowed, atol=atol, rtol=rtol, explain=not no_explain)
    if json_out:
        print_json(res.to_json())
    else:
        from ..render import comparison_report

        comparison_report(res, quiet=quiet, verbose=verbose)
    return ExitCode.OK if res.same else ExitCode.FAILED
