"""`posenc plot`: pictures of encodings (matplotlib, with -o) or a heatmap on the terminal."""

import sys
from typing import Any

from ..errors import ExitCode, ParameterError
from . import _options as o
from ._common import TableOptions, msg, print_json, refuse

DESCRIPTION = """\
Draw a table as a picture with -o FILE.png|.svg|.pdf (needs matplotlib:
pip install 'posenc-cli[plot]'), or, on a terminal without -o, as a heatmap.

Views: heatmap (positions x dims), dot (dot product of rows t and t+k
against k), circle (one frequency pair around the circle), spectrum
(wavelength per frequency against the original context), bias (ALiBi, T5,
relative matrices per head), compare (two tables and their difference),
grid (a 2-D table's features over its patch grid), patch (each patch's
similarity to one patch, --patch R,C).
Several sources overlay where it makes sense (dot, circle, spectrum); a model
with several attention types is drawn type by type (--layer-type: one).

Examples:

  posenc plot sinusoidal --len 128 --dim 64
  posenc plot sinusoidal --len 128 --dim 64 -o pe.png
  posenc plot rope rope:preset=llama3.1 --len 4096 --dim 128 \\
      --view spectrum -o spectrum.svg"""

#: options that only the named views read: given for another view, they are refused
VIEW_OPTIONS = {
    "pair": ("circle", "--pair"),
    "positions": ("circle", "--positions"),
    "at": ("dot", "--at"),
    "max_offset": ("dot", "--max-offset"),
    "cosine": ("dot", "--cosine"),
    "head": ("bias", "--head"),
    "patch": ("patch", "--patch"),
}


def run(
    sources: o.Sources = None,
    output: o.Output = None,
    view: o.View = None,
    length: o.Length = None,
    dim: o.Dim = None,
    param: o.Params = None,
    dtype: o.Dtype = None,
    grid: o.Grid = None,
    image_size: o.ImageSizes = None,
    layer_type: o.LayerType = None,
    read_as: o.ReadAs = None,
    pair: o.Pair = None,
    positions: o.Positions = None,
    at: o.At = None,
    max_offset: o.MaxOffset = None,
    cosine: o.Cosine = False,
    head: o.Head = None,
    patch: o.Patch = None,
    size: o.Size = None,
    dpi: o.Dpi = None,
    force: o.Force = False,
    json_out: o.Json = False,
    max_bytes: o.MaxBytes = None,
    quiet: o.Quiet = 0,
) -> int:
    from .. import plot
    from ..api import plot_tables

    chosen, drawn, warnings = plot_tables(sources or [], options=TableOptions.of(locals()), view=view)
    for w in warnings:
        msg(f"Warning: {w}", quiet)
    given = {"pair": pair, "positions": positions, "at": at, "max_offset": max_offset, "cosine": cosine, "head": head,
             "patch": patch}  # fmt: skip
    for dest, (owner, flag) in VIEW_OPTIONS.items():
        if owner != chosen:
            refuse([(flag, given[dest])], f"it sets the {owner} view, and this plot is {chosen}")
    if output is None:
        if not sys.stdout.isatty():
            raise ParameterError(plot.NEEDS_OUTPUT)
        refuse(
            [("--size", size), ("--dpi", dpi), ("--force", force), ("--json", json_out)],
            "they describe a picture file; the terminal has its own",
        )
        if chosen != "heatmap" or len(drawn) != 1:
            raise ParameterError(
                f"the terminal shows one table's heatmap; pass -o FILE.png for --view {chosen}"
                + (" or several sources" if len(drawn) != 1 else "")
            )
        _terminal(drawn[0])
        return ExitCode.OK
    kwargs: dict[str, Any] = {
        "pair": pair or 0,
        "positions": positions,
        "starts": at or None,
        "max_offset": max_offset,
        "cosine": cosine,
        "head": head,
        "patch": _patch(patch) if patch else None,
        "size": _size(size) if size else None,
        "force": force,
        "max_bytes": max_bytes,
    }
    if dpi is not None:
        kwargs["dpi"] = dpi
    result = plot.plot(chosen, drawn, output, **kwargs)
    if json_out:
        print_json({**result.to_json(), "sources": [d.label for d in drawn]})
    else:
        msg(result.summary(), quiet)
    return ExitCode.OK


def _terminal(src) -> None:
    import shutil

    from .. import plot, termplot

    size = shutil.get_terminal_size((80, 24))
    for line in termplot.panel_lines(plot.terminal_panels(src), size.columns, max(6, size.lines - 2)):
        sys.stdout.write(line + "\n")


def _patch(text: str) -> tuple[int, int]:
    """``R,C``: a patch's row and column."""
    try:
        r, c = (int(x) for x in text.replace("x", ",").split(","))
    except ValueError:
        raise ParameterError(f"--patch {text!r} is not R,C (a patch's row and column); use e.g. --patch 3,4") from None
    return r, c


def _size(text: str) -> tuple[float, float]:
    """``WxH`` in inches (the library checks the range)."""
    try:
        w, h = (float(x) for x in text.lower().split("x"))
    except ValueError:
        raise ParameterError(f"--size {text!r} is not WxH in inches; use e.g. --size 8x5") from None
    return w, h
