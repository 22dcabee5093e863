"""Every option and argument of the command line, declared once (``Annotated`` aliases), so that a flag means the
same thing in every command that takes it; ``tests/test_cli_surface.py`` walks every command through Click's
introspection and fails where one name has two meanings, types, defaults or help texts.

A number is checked where it enters (:func:`number`): a value out of range, ``nan`` or ``inf`` is a one-line
usage error naming the value and the range, exit 2. What a value means for a particular table (a pair index
below the table's pair count, a picture within ``--max-bytes``) the library checks, and says in terms of the
parameter, which :data:`FLAGS` turns into the flag.

Nothing here imports NumPy or Rich: completion and ``--help`` load only this module and Typer.
"""

import math
from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer

from . import _complete as complete

# Typer reads these annotations at run time (Python 3.10 has no `X | None` in get_type_hints of a
# string annotation with typing.Annotated in every position), hence Optional.
# ruff: noqa: UP045

DTYPE_NAMES = ("float64", "float32", "float16", "bfloat16")
FORMAT_NAMES = ("npy", "npz", "safetensors", "csv", "json")
VIEW_NAMES = ("heatmap", "dot", "circle", "spectrum", "bias", "compare")


# ----- numbers, checked where they enter ---------------------------------------------------------------
def number(
    *, low: float | None = None, high: float | None = None, integer: bool = True, what: str = ""
) -> Callable[[str], Any]:
    """A parser for a numeric option: an int (or a finite float) in ``[low, high]``; anything else is a usage
    error saying what is allowed."""
    kind = "a whole number" if integer else "a finite number"
    if low is not None and high is not None:
        allowed = f"{kind} from {_num(low)} to {_num(high)}"
    elif low is not None:
        allowed = f"{kind} >= {_num(low)}"
    else:
        allowed = kind
    allowed += f" ({what})" if what else ""

    def parse(text: Any) -> Any:
        if not isinstance(text, str):  # a default, already a number
            return text
        try:
            value: Any = int(text, 10) if integer else float(text)
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not {allowed}") from None
        if not integer and not math.isfinite(value):
            raise typer.BadParameter(f"{text} is not {allowed}")
        if (low is not None and value < low) or (high is not None and value > high):
            raise typer.BadParameter(f"{text} is out of range; give {allowed}")
        return value

    parse.__name__ = "integer" if integer else "number"
    return parse


def _num(x: float) -> str:
    if float(x).is_integer():
        x = int(x)
        return f"2**{x.bit_length() - 1}" if x > 10**6 and x & (x - 1) == 0 else str(x)
    return repr(x)


# ----- the parameters of the tables a command builds ---------------------------------------------------
Length = Annotated[
    Optional[int],
    typer.Option(
        "--len",
        "-n",
        metavar="N",
        parser=number(what="each kind says its own range"),
        help="Number of positions (rows); the parameter 'length'.",
        show_default=False,
    ),
]
Dim = Annotated[
    Optional[int],
    typer.Option(
        "--dim",
        "-d",
        metavar="D",
        parser=number(what="each kind says its own range"),
        help="Feature dimension (columns); heads for alibi.",
        show_default=False,
    ),
]
Params = Annotated[
    Optional[list[str]],
    typer.Option(
        "--param",
        "-p",
        metavar="KEY=VALUE",
        autocompletion=complete.params,
        help="Encoding parameter (repeatable, or comma-separated; see `posenc kinds KIND`).",
        show_default=False,
    ),
]
Dtype = Annotated[
    Optional[str],
    typer.Option(
        "--dtype",
        metavar="DTYPE",
        autocompletion=complete.choices(DTYPE_NAMES),
        help="Dtype of the tables built or written: float64, float32 (default), float16, bfloat16.",
        show_default=False,
    ),
]
Grid = Annotated[
    Optional[str],
    typer.Option("--grid", metavar="HxW", help="Grid of the 2-D/3-D kinds, e.g. 14x14 or 8x14x14.", show_default=False),
]
ImageSizes = Annotated[
    Optional[list[str]],
    typer.Option(
        "--image-size",
        metavar="HxW",
        help="With a vision model's directory: its position table at this image size in pixels (H for square), "
        "resampled as the model does it (or as --engine timm does); a vision tower's rotary: its patch grid at "
        "this size; audit takes several.",
        show_default=False,
    ),
]
Tower = Annotated[
    Optional[str],
    typer.Option(
        "--tower",
        metavar="TOWER",
        autocompletion=complete.choices(("language", "vision")),
        help="With a multimodal model's config: the tower whose tables to build, language (default) or vision.",
        show_default=False,
    ),
]
HfConfig = Annotated[
    Optional[str],
    typer.Option(
        "--hf-config",
        metavar="PATH",
        help="A model's config.json (or its directory, or -): the tables it uses.",
        show_default=False,
    ),
]
LayerType = Annotated[
    Optional[str],
    typer.Option(
        "--layer-type",
        metavar="NAME",
        autocompletion=complete.layer_types,
        help="A model's attention type (e.g. sliding_attention); check, compare and plot take every type by default.",
        show_default=False,
    ),
]
ReadAs = Annotated[
    Optional[str],
    typer.Option(
        "--read-as",
        metavar="FAMILY",
        help="With a model config: read it with FAMILY's rules (e.g. llama) although posenc does not know a key "
        "of it; the output's metadata records the assumption (hf_read_as).",
        show_default=False,
    ),
]

# posenc_cli.models.engines.ENGINE_NAMES
ENGINE_NAMES = ("hf", "llamacpp", "mlx", "vllm", "sglang", "onnx-genai", "exllamav3")
Engine = Annotated[
    Optional[str],
    typer.Option(
        "--engine",
        metavar="NAME",
        autocompletion=complete.choices(ENGINE_NAMES),
        help=f"With a model config: the tables this engine computes ({', '.join(ENGINE_NAMES)}; "
        "NAME==VERSION names the version posenc mirrors); or write CONFIG@ENGINE.",
        show_default=False,
    ),
]
MaxModelLen = Annotated[
    Optional[int],
    typer.Option(
        "--max-model-len",
        metavar="N",
        parser=number(low=1, high=2**31 - 1),
        help="vllm: the max_model_len it runs with (fixes LongRoPE's choice and the last position; default: "
        "what vLLM derives from the config).",
        show_default=False,
    ),
]
# declared as issue 22 (GGUF / llama.cpp) declares it, so that the two branches merge into one option
EnginesTable = Annotated[
    bool,
    typer.Option("--engines", help="With a model config: per engine, where its tables depart from HF's."),
]

# ----- sources ----------------------------------------------------------------------------------------
_SOURCE_HELP = (
    "A file, - for stdin, a spec KIND[:key=value,...], a model's config.json (or its directory), or a GGUF file."
)
Sources = Annotated[
    Optional[list[str]],
    typer.Argument(metavar="[SOURCE]...", autocompletion=complete.specs, help=_SOURCE_HELP, show_default=False),
]
Source = Annotated[
    Optional[str],
    typer.Argument(metavar="[SOURCE]", autocompletion=complete.specs, help=_SOURCE_HELP, show_default=False),
]
Model = Annotated[
    Optional[str],
    typer.Argument(
        metavar="[SOURCE]",
        help="A model directory, a config.json, a GGUF or ONNX file, or a Hub id org/name[@revision].",
        show_default=False,
    ),
]
Spec = Annotated[
    Optional[str],
    typer.Argument(
        metavar="[SOURCE]",
        autocompletion=complete.specs,
        help="What to build: a spec KIND[:key=value,...], a model's config.json (its directory, - for stdin), or a "
        "GGUF file (the tables llama.cpp computes).",
        show_default=False,
    ),
]
Tensors = Annotated[
    Optional[list[str]],
    typer.Option(
        "--tensor",
        "-t",
        metavar="NAME",
        help="Only this tensor (repeatable: -t cos -t sin; default: every tensor).",
        show_default=False,
    ),
]

# ----- output -----------------------------------------------------------------------------------------
Output = Annotated[
    Optional[str],
    typer.Option("--output", "-o", metavar="PATH", help="Write to this file, or - for stdout.", show_default=False),
]
Format = Annotated[
    Optional[str],
    typer.Option(
        "--format",
        metavar="FMT",
        autocompletion=complete.choices(FORMAT_NAMES),
        help="Table format: npy, npz, safetensors, csv, json (default: from the suffix).",
        show_default=False,
    ),
]
Force = Annotated[
    bool,
    typer.Option("--force", "-f", help="Overwrite an existing file; allow binary output to a terminal."),
]
NCtx = Annotated[
    Optional[int],
    typer.Option(
        "--n-ctx",
        metavar="C",
        parser=number(low=1, high=2**31 - 1),
        help="The context size the model runs with (llama.cpp's -c): a GGUF file's, or an --engine's that reads it; "
        "it picks LongRoPE factors (default: the training context).",
        show_default=False,
    ),
]
MaxBytes = Annotated[
    Optional[int],
    typer.Option(
        "--max-bytes",
        metavar="N",
        parser=number(low=1, high=2**62),
        help="Refuse to build, read or draw more than N bytes (default: 8 GiB for what is held in memory; "
        "memory-mapped files only when given).",
        show_default=False,
    ),
]
Quiet = Annotated[
    int,
    typer.Option(
        "--quiet",
        "-q",
        count=True,
        help="No messages or progress on stderr (-qq: not even the verdict).",
        show_default=False,
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout instead of the report.")]
JsonDetails = Annotated[
    bool,
    typer.Option("--json-details", help="--json with every diverging row's pictures (position x column grids)."),
]
Markdown = Annotated[
    Optional[str],
    typer.Option("--markdown", metavar="FILE", help="Also write the report as Markdown (a CI step summary).",
                 show_default=False),
]  # fmt: skip
Html = Annotated[
    Optional[str],
    typer.Option("--html", metavar="FILE", help="Also write the report as one self-contained HTML page.",
                 show_default=False),
]  # fmt: skip
Download = Annotated[
    bool,
    typer.Option("--download", help="A Hub id not in the cache: fetch config.json and position tensors only."),
]
Verbose = Annotated[
    bool,
    typer.Option("--verbose", "-v", help="How each result was reached: every reading, measurement or explanation."),
]

# ----- one command's own options (declared here too, so that the walk sees every name once) ------------
Kind = Annotated[
    Optional[str],
    typer.Option(
        "--kind",
        "-k",
        metavar="KIND",
        autocompletion=complete.kinds,
        help="Encoding kind (see `posenc kinds`); the same as a SOURCE naming it.",
        show_default=False,
    ),
]
Expect = Annotated[
    Optional[str],
    typer.Option(
        "--expect",
        metavar="KIND",
        autocompletion=complete.kinds,
        help="Judge the table as this kind (default: the kind in its metadata).",
        show_default=False,
    ),
]
Against = Annotated[
    Optional[str],
    typer.Option(
        "--against",
        metavar="SOURCE",
        autocompletion=complete.specs,
        help="The spec, file or model config the table must equal; differences are explained.",
        show_default=False,
    ),
]
ExtraRows = Annotated[
    Optional[str],
    typer.Option(
        "--extra-rows",
        metavar="ROWS",
        help="Rows that are not positions, INDEX:NAME,... (0:cls): left out of the properties of positions, for "
        "a table that does not say it (its kind's parameters or metadata extra_rows do).",
        show_default=False,
    ),
]
NoIdentify = Annotated[
    bool, typer.Option("--no-identify", help="Do not identify a table without a kind (judge it as unknown).")
]
Require = Annotated[
    Optional[str],
    typer.Option(
        "--require",
        metavar="NAMES",
        autocompletion=complete.checks,
        help="Comma-separated properties that must hold (default: the kind's).",
        show_default=False,
    ),
]
Probes = Annotated[
    int,
    typer.Option(
        "--probes", metavar="N", parser=number(low=1, high=65536), help="Random probes for randomized checks."
    ),
]
Seed = Annotated[
    int,
    typer.Option("--seed", metavar="N", parser=number(low=0, high=2**32 - 1), help="Seed of the random probes."),
]
Atol = Annotated[
    Optional[float],
    typer.Option(
        "--atol",
        metavar="X",
        parser=number(low=0, integer=False),
        help="Absolute tolerance (default: 2 ulp of 1.0 in the coarser dtype).",
        show_default=False,
    ),
]
Rtol = Annotated[
    float,
    typer.Option("--rtol", metavar="X", parser=number(low=0, high=1, integer=False), help="Relative tolerance of |b|."),
]
NoExplain = Annotated[bool, typer.Option("--no-explain", help="Do not look for why tables differ (faster).")]
AllLayerTypes = Annotated[
    bool,
    typer.Option(
        "--all-layer-types", help="With a model config: one table per attention type, tensors named TYPE.NAME."
    ),
]
Precision = Annotated[
    Optional[int],
    typer.Option(
        "--precision",
        metavar="N",
        parser=number(low=0, high=17),
        help="Decimals in the terminal preview (default 3).",
        show_default=False,
    ),
]
Names = Annotated[
    Optional[list[str]],
    typer.Option(
        "--name",
        metavar="NEW|OLD=NEW",
        help="Rename: NEW (single tensor) or OLD=NEW (repeatable).",
        show_default=False,
    ),
]
OnnxRope = Annotated[
    bool,
    typer.Option("--onnx-rope", help="RoPE: write cos_cache/sin_cache [len, rot_dim/2] for ONNX RotaryEmbedding."),
]
View = Annotated[
    Optional[str],
    typer.Option(
        "--view",
        metavar="VIEW",
        autocompletion=complete.choices(VIEW_NAMES),
        help=f"What to draw: {', '.join(VIEW_NAMES)} (default: the kind's first view).",
        show_default=False,
    ),
]
Pair = Annotated[
    Optional[int],
    typer.Option(
        "--pair",
        metavar="N",
        parser=number(low=0, high=2**31),
        help="circle: the frequency pair (0 = highest frequency).",
        show_default=False,
    ),
]
Positions = Annotated[
    Optional[int],
    typer.Option(
        "--positions",
        metavar="N",
        parser=number(low=1, high=10**5),
        help="circle: consecutive positions to place (default 16).",
        show_default=False,
    ),
]
At = Annotated[
    Optional[list[int]],
    typer.Option(
        "--at",
        metavar="T",
        parser=number(low=0, high=2**40),
        help="dot: a row t to start from (repeatable).",
        show_default=False,
    ),
]
MaxOffset = Annotated[
    Optional[int],
    typer.Option(
        "--max-offset",
        metavar="K",
        parser=number(low=1, high=2**40),
        help="dot: the largest offset k.",
        show_default=False,
    ),
]
Cosine = Annotated[bool, typer.Option("--cosine", help="dot: cosine similarity instead of the dot product.")]
Patch = Annotated[
    Optional[str],
    typer.Option(
        "--patch",
        metavar="R,C",
        help="patch: the patch (row, column) every patch is compared with (default: the centre).",
        show_default=False,
    ),
]
Head = Annotated[
    Optional[int],
    typer.Option(
        "--head",
        metavar="H",
        parser=number(low=0, high=2**31),
        help="bias: one head (default: several).",
        show_default=False,
    ),
]
Size = Annotated[
    Optional[str],
    typer.Option("--size", metavar="WxH", help="Figure size in inches, e.g. 8x5.", show_default=False),
]
Dpi = Annotated[
    Optional[int],
    typer.Option(
        "--dpi",
        metavar="N",
        parser=number(low=1, high=2400),
        help="Resolution of a .png (default 100).",
        show_default=False,
    ),
]
KindArg = Annotated[
    Optional[str],
    typer.Argument(
        metavar="[KIND]", autocompletion=complete.kinds, help="Show one kind in detail.", show_default=False
    ),
]

#: parameter name (as the library's messages name it, :func:`posenc_cli.errors.param`) -> the flag that sets it
FLAGS: dict[str, str] = {
    "length": "--len",
    "dim": "--dim",
    "params": "-p",
    "dtype": "--dtype",
    "grid": "--grid",
    "image_size": "--image-size",
    "config": "--hf-config",
    "hf_config": "--hf-config",
    "tower": "--tower",
    "patch": "--patch",
    "layer_type": "--layer-type",
    "read_as": "--read-as",
    "tensor": "--tensor",
    "tensors": "--tensor",
    "output": "-o",
    "path": "-o",
    "format": "--format",
    "force": "--force",
    "download": "--download",
    "max_bytes": "--max-bytes",
    "kind": "--kind",
    "expect": "--expect",
    "against": "--against",
    "identify": "--no-identify",
    "extra_rows": "--extra-rows",
    "require": "--require",
    "probes": "--probes",
    "seed": "--seed",
    "atol": "--atol",
    "rtol": "--rtol",
    "explain": "--no-explain",
    "precision": "--precision",
    "rename": "--name",
    "view": "--view",
    "pair": "--pair",
    "positions": "--positions",
    "starts": "--at",
    "max_offset": "--max-offset",
    "cosine": "--cosine",
    "head": "--head",
    "size": "--size",
    "dpi": "--dpi",
    "engine": "--engine",
    "max_model_len": "--max-model-len",
    "n_ctx": "--n-ctx",
    "all_layer_types": "--all-layer-types",
    "engines": "--engines",
    "onnx_rope": "--onnx-rope",
}
