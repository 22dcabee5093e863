"""`posenc compare`: metrics between two tables and a verdict."""

from ..errors import ExitCode, ParameterError
from . import _options as o
from ._common import TableOptions

DESCRIPTION = """\
Compare every tensor two tables share: max abs / relative / ulp difference and
where, mean difference, row cosine; where they differ, why (a layout swap, an
offset, another base or scaling, a sign, a precision, ...), with what is left
after undoing it. A tensor on one side only is a difference unless --tensor
narrows the comparison. Either side may be a file, -, a spec or a model config;
a model with several attention types is compared type by type, one verdict
line each (--layer-type narrows it to one).

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
    image_size: o.ImageSizes = None,
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
    from ..api import compare_sources
    from ..render import render_verdicts

    if a is None or b is None:
        raise ParameterError("compare needs two sources A and B (files, -, specs or model configs)")
    found = compare_sources(
        a, b, options=TableOptions.of(locals()), tensor=tensor, atol=atol, rtol=rtol, explain=not no_explain
    )
    render_verdicts(found, json_out=json_out, quiet=quiet, verbose=verbose)
    return ExitCode.OK if found.ok else ExitCode.FAILED
