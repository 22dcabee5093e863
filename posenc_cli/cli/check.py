"""`posenc check`: measure every property of one or more tables."""

import os
import sys

from ..errors import ExitCode, ParameterError
from . import _options as o
from ._common import (
    TableOptions,
    msg,
    open_src,
    print_json,
    progress_enabled,
    refuse,
    refuse_spec_options_for_files,
    stdin_source,
)

DESCRIPTION = """\
Measure every property of a table (finite, bounded, unique, constant-norm,
equidistant, ...).

A source is judged as a whole (a RoPE file's cos and sin get their pair
properties) unless --tensor narrows it. A table without a kind (a plain .npy)
is identified from its structure and judged as what it is; the report says
what was assumed. --against SOURCE also requires the table to equal that spec,
file or model config (a spec's length and dim default to the table's; --len,
--dim, -p set the rest), and says why when it does not.

Exit 0 when every required property holds, 1 when one fails, 2 on bad input.

Examples:

  posenc check pe.safetensors
  posenc check sinusoidal:preset=tf-tutorial --len 5 --dim 6
  posenc generate -n 512 -d 128 | posenc check -
  posenc check exported.npy --against rope:base=500000"""


def run(
    sources: o.Sources = None,
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
    expect: o.Expect = None,
    against: o.Against = None,
    no_identify: o.NoIdentify = False,
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
    from ..sources import is_config, is_gguf, is_spec

    opts = TableOptions.of(locals())
    texts = list(sources or []) or [stdin_source("check", "a file, - for stdin, or a spec like sinusoidal")]
    if against is not None and is_config(against) and any(is_gguf(t) for t in texts):
        from ._common import refuse

        given = [("--dim", dim), ("-p", param), ("--dtype", dtype), ("--grid", grid), ("--layer-type", layer_type),
                 ("--tensor", tensor), ("--expect", expect), ("--require", require), ("--no-identify", no_identify),
                 ("--engine", engine), ("--max-model-len", max_model_len)]  # fmt: skip
        refuse(given, "a GGUF file checked --against a model config is judged on llama.cpp's RoPE as a whole")
        return gguf_verdicts(texts, against, n_ctx, length, json_out, quiet)
    if against is not None and is_config(against) and any(t.lower().endswith(".onnx") for t in texts):
        return _onnx_against(texts, against, opts, verbose, json_out, quiet)
    if expect is not None:
        from ..encodings import resolve_kind

        expect = resolve_kind(expect)
    builds = [t for t in texts if is_spec(t) or is_config(t)]
    if against is not None:
        if not is_spec(against) and expect is not None:
            raise ParameterError(
                f"--expect {expect} and --against {against}: {against} says what the table is; give one of them"
            )
        if builds:
            raise ParameterError(
                f"--against compares files with a spec; {builds[0]} is built already: compare two specs with "
                "posenc compare"
            )
    elif expect is not None and not builds and (param or grid):
        against = expect  # --expect KIND -p key=value on files: the table must equal that spec
    refuse_spec_options_for_files(opts, [*texts, *([against] if against is not None else [])])
    required = [r.strip() for r in require.split(",") if r.strip()] if require else None
    srcs = [open_src(text, opts, quiet=quiet) for text in texts]
    if no_identify:
        from ..encodings import KINDS

        if against is not None:
            raise ParameterError("--no-identify cannot apply with --against: it says what the table is")
        known = [s for s in srcs if s.kind in KINDS]
        if len(known) == len(srcs):
            raise ParameterError(
                f"--no-identify cannot apply: {known[0].label} says its kind ({known[0].kind}); only a table "
                "without one is identified"
            )
    # a file to match is read once; a spec or config is built per source, with that source's length and dim
    builds_ref = against is not None and (is_spec(against) or is_config(against))
    ref_file = open_src(against, opts, quiet=quiet) if against is not None and not builds_ref else None
    reports: list = []
    for src in srcs:
        ref = ref_file
        if builds_ref and against is not None:
            ref = open_src(against, opts, like=src, quiet=quiet)
        for group in _tables(src, tensor):
            reports.append(_run_one(group, tensor, expect, ref, required, no_identify, probes, seed, max_bytes, quiet))
    if json_out:
        from ..render import check_json

        print_json(check_json(reports))
    else:
        from ..render import check_report

        for r in reports:
            check_report(r, quiet=quiet, verbose=verbose)
    return ExitCode.OK if all(r.ok for r in reports) else ExitCode.FAILED


def _tables(src, tensor) -> list:
    """The tables of a source: each group of a grouped file, else the source."""
    if src.groups and tensor:
        raise ParameterError(
            f"{src.label} holds one table per group ({', '.join(src.groups)}); --tensor cannot "
            "apply: every group's tables are checked"
        )
    return list(src.groups.values()) or [src]


def _run_one(src, tensor, expect, against, required, no_identify, probes, seed, max_bytes, quiet):
    """api.check, with a progress bar on a terminal when the table is big enough to take a while."""
    from ..api import _chosen_tensors
    from ..api import check as check_table

    kwargs = {
        "expect": expect,
        "against": against,
        "require": required,
        "tensor": tensor or None,
        "identify": not no_identify,
        "probes": probes,
        "seed": seed,
    }
    if max_bytes is not None:
        kwargs["max_bytes"] = max_bytes
    size = sum(int(getattr(src.tensors.get(n), "nbytes", 0)) for n in _chosen_tensors(src, tensor or None))
    if not (progress_enabled(quiet) and size > 32 * 1024**2):
        return check_table(src, **kwargs)
    from ..render import progress_bar

    with progress_bar(f"checking {src.label}", 1, True) as advance:
        return check_table(src, on_check=lambda _name, total: advance(1, total), **kwargs)


def gguf_verdicts(texts: list[str], config: str, n_ctx, length, json_out: bool, quiet: int) -> int:
    """``check MODEL.gguf --against config.json``: llama.cpp's tables against HF's, each divergence named."""
    from ..models.llamacpp import verdict
    from ..render import wrap
    from ..sources import is_gguf

    bad = [t for t in texts if not is_gguf(t)]
    if bad:
        raise ParameterError(f"{bad[0]} is not a GGUF file; check GGUF files --against a config one kind at a time")
    results = [verdict(t, config, n_ctx=n_ctx, length=length) for t in texts]
    if json_out:
        print_json([v.to_json() for v in results] if len(results) > 1 else results[0].to_json())
    else:
        for v in results:
            for line in v.lines():
                indent = "  " if line.startswith("  ") else ""
                print("\n".join(wrap(line[len(indent) :], 80, indent, indent + "    ")))
    return ExitCode.OK if all(v.ok for v in results) else ExitCode.FAILED


def _onnx_against(texts, against, opts: TableOptions, verbose: bool, json_out: bool, quiet: int) -> int:
    """check MODEL.onnx --against config.json: the stored caches against the model's tables, each export mistake
    named (posenc_cli.models.onnx.check_against)."""
    from ..models.onnx import check_against
    from ..sources import split_engine

    refuse(
        [("--len", opts.length), ("--dim", opts.dim), ("-p", opts.params), ("--grid", opts.grid),
         ("--dtype", opts.dtype), ("--max-model-len", opts.max_model_len), ("--n-ctx", opts.n_ctx)],
        "an ONNX model is checked against its config as stored",
    )  # fmt: skip
    if not all(t.lower().endswith(".onnx") for t in texts):
        raise ParameterError("check --against a config takes ONNX models, or other tables, not both at once")
    config, engine = split_engine(against)
    if engine is not None and opts.engine is not None and engine != opts.engine:
        raise ParameterError(f"the engine is given twice: {against} and --engine {opts.engine}")
    engine = engine or opts.engine or "hf"
    results = [
        check_against(t, config, engine=engine, layer_type=opts.layer_type, max_bytes=opts.max_bytes) for t in texts
    ]
    for w in dict.fromkeys(w for r in results for w in r.warnings):
        msg(f"Warning: {w}", quiet)
    if json_out:
        print_json([r.to_json() for r in results] if len(results) > 1 else results[0].to_json())
    elif quiet < 2:
        from ..render import wrap

        def say(text: str, first: str) -> None:
            print("\n".join(wrap(text, 80, first, "    ")))

        for r in results:
            verdict = "OK" if r.ok else f"{len(r.divergences)} divergence(s)"
            say(f"{r.label} against {r.against} ({r.engine}): {verdict}", "")
            for d in r.divergences:
                say(d, "  DIVERGES ")
            if verbose or r.ok:
                for m in r.matched:
                    say(m, "  ok ")
    return ExitCode.OK if all(r.ok for r in results) else ExitCode.FAILED
