"""`posenc check`: measure every property of one or more tables."""

import os
import sys

from ..errors import ExitCode
from . import _options as o
from ._common import TableOptions, progress_enabled, stdin_source

DESCRIPTION = """\
Measure every property of a table (finite, bounded, unique, constant-norm,
equidistant, ...).

A source is judged as a whole (a RoPE file's cos and sin get their pair
properties) unless --tensor narrows it. A table without a kind (a plain .npy)
is identified from its structure and judged as what it is; the report says
what was assumed. Rows that are not positions (a class token's, a padding
row) are left out of every property but finite and matches-spec, and named:
a table says them through its kind's parameters or its metadata's
extra_rows, else --extra-rows INDEX:NAME,... does. --against SOURCE also requires the table to equal that spec,
file or model config (a spec's length and dim default to the table's; --len,
--dim, -p set the rest), and says why when it does not. A model with several
attention types is checked type by type (--layer-type narrows it); a GGUF or
ONNX model --against its config is judged on its RoPE as a whole.

Exit 0 when every required property holds, 1 when one fails, 2 on bad input.

Examples:

  posenc check pe.safetensors
  posenc check sinusoidal:preset=tf-tutorial --len 5 --dim 6
  posenc generate -n 512 -d 128 | posenc check -
  posenc check exported.npy --against rope:base=500000
  posenc check mae_table.npy --extra-rows 0:cls"""


def run(
    sources: o.Sources = None,
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
    expect: o.Expect = None,
    against: o.Against = None,
    no_identify: o.NoIdentify = False,
    extra_rows: o.ExtraRows = None,
    require: o.Require = None,
    probes: o.Probes = 8,
    seed: o.Seed = 0,
    verbose: o.Verbose = False,
    json_out: o.Json = False,
    max_bytes: o.MaxBytes = None,
    quiet: o.Quiet = 0,
) -> int:
    # The checks run their own two worker threads (checks/sweep.py) and keep BLAS products small or one per
    # thread; OpenBLAS's own threads would then only spin (measured: ~30% more CPU and a slower check on a busy
    # 2-core machine). Only before NumPy loads (it reads the variable then); a user's own setting wins.
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from ..api import check_sources
    from ..render import render_verdicts, table_progress

    texts = list(sources or []) or [stdin_source("check", "a file, - for stdin, or a spec like sinusoidal")]
    found = check_sources(
        texts,
        against=against,
        options=TableOptions.of(locals()),
        expect=expect,
        require=[r.strip() for r in require.split(",") if r.strip()] if require else None,
        tensor=tensor,
        identify=not no_identify,
        extra_rows=extra_rows,
        probes=probes,
        seed=seed,
        progress=table_progress if progress_enabled(quiet) else None,
    )
    render_verdicts(found, json_out=json_out, quiet=quiet, verbose=verbose)
    return ExitCode.OK if found.ok else ExitCode.FAILED
