"""`posenc plot`: pictures of encodings (matplotlib, with -o) or a heatmap on the terminal."""

from __future__ import annotations

import argparse
import sys

from ..errors import ExitCode, ParameterError
from ._common import (
    add_max_bytes,
    add_quiet,
    add_table_options,
    msg,
    open_src,
    refuse,
    refuse_spec_options_for_files,
    spec_params,
)
from ._parser import choices, with_completer

NAME = "plot"
SUMMARY = "Draw a table: heatmap, dot-product curves, circle, spectrum, bias, compare."
VIEW_NAMES = ("heatmap", "dot", "circle", "spectrum", "bias", "compare")
DESCRIPTION = """\
Draw a table as a picture with -o FILE.png|.svg|.pdf (needs matplotlib:
pip install 'posenc-cli[plot]'), or, on a terminal without -o, as a heatmap.

Views: heatmap (positions x dims), dot (dot product of rows t and t+k
against k), circle (one frequency pair around the circle), spectrum
(wavelength per frequency against the original context), bias (ALiBi, T5,
relative matrices per head), compare (two tables and their difference).
Several sources overlay where it makes sense (dot, circle, spectrum).

Examples:
  posenc plot sinusoidal --len 128 --dim 64
  posenc plot sinusoidal --len 128 --dim 64 -o pe.png
  posenc plot rope rope:preset=llama3.1 --len 4096 --dim 128 \\
      --view spectrum -o spectrum.svg"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ._common import complete_kind

    with_completer(
        p.add_argument(
            "sources", nargs="+", metavar="SOURCE", help="Files, - for stdin, or specs KIND[:key=value,...]."
        ),
        complete_kind,
    )
    p.add_argument("-o", "--output", metavar="PATH", help="The picture: .png, .svg or .pdf.")
    with_completer(
        p.add_argument(
            "--view", metavar="VIEW", help=f"What to draw: {', '.join(VIEW_NAMES)} (default: the kind's first view)."
        ),
        choices(VIEW_NAMES),
    )
    add_table_options(p)
    p.add_argument("--pair", type=int, metavar="N", help="circle: the frequency pair (0 = highest frequency).")
    p.add_argument("--positions", type=int, metavar="N", help="circle: consecutive positions to place (default 16).")
    p.add_argument("--at", type=int, action="append", metavar="T", help="dot: a row t to start from (repeatable).")
    p.add_argument("--max-offset", type=int, metavar="K", help="dot: the largest offset k.")
    p.add_argument("--cosine", action="store_true", help="dot: cosine similarity instead of the dot product.")
    p.add_argument("--head", type=int, metavar="H", help="bias: one head (default: several).")
    p.add_argument("--size", metavar="WxH", help="Figure size in inches, e.g. 8x5.")
    p.add_argument("--dpi", type=int, metavar="N", help="Resolution of a .png (default 100).")
    add_max_bytes(p)
    add_quiet(p)


#: options that only the named views read: given for another view, they are refused
VIEW_OPTIONS = {
    "pair": ("circle", "--pair"),
    "positions": ("circle", "--positions"),
    "at": ("dot", "--at"),
    "max_offset": ("dot", "--max-offset"),
    "cosine": ("dot", "--cosine"),
    "head": ("bias", "--head"),
}


def run(args: argparse.Namespace) -> int:
    from .. import plot
    from ..encodings import KINDS, get_kind

    refuse_spec_options_for_files(args, args.sources)
    params = spec_params(args)
    opened = [open_src(text, args, params, like=None) for text in args.sources]
    sources = []
    for src in opened:
        for part in list(src.groups.values()) or [src]:
            kind = part.kind
            roles = dict(get_kind(kind).ROLES) if kind in KINDS else {}
            sources.append(
                plot.PlotSource(part.label, {n: part.array(n) for n in part.names}, roles, dict(part.metadata))
            )
    view = args.view or _default_view(opened, sources)
    for dest, (owner, flag) in VIEW_OPTIONS.items():
        if owner != view:
            refuse(args, [(dest, flag)], f"it sets the {owner} view, and this plot is {view}")
    if args.output is None:
        if not sys.stdout.isatty():
            raise ParameterError(plot.NEEDS_OUTPUT)
        refuse(args, [("size", "--size"), ("dpi", "--dpi")], "they size a picture file; the terminal has its own")
        if view != "heatmap" or len(sources) != 1:
            raise ParameterError(
                f"the terminal shows one table's heatmap; pass -o FILE.png for --view {view}"
                + (" or several sources" if len(sources) != 1 else "")
            )
        _terminal(sources[0])
        return ExitCode.OK
    size = _size(args.size) if args.size else None
    kwargs = {
        "pair": args.pair or 0,
        "positions": args.positions or 16,
        "starts": args.at,
        "max_offset": args.max_offset,
        "cosine": args.cosine,
        "head": args.head,
        "size": size,
    }
    if args.dpi is not None:
        kwargs["dpi"] = args.dpi
    result = plot.plot(view, sources, args.output, **kwargs)
    msg(f"wrote {result.path} ({view}, {result.format}, {result.size[0]} x {result.size[1]} px)", args.quiet)
    return ExitCode.OK


def _default_view(opened: list, sources: list) -> str:
    """compare for two tables; else the first view the kind declares (VIEWS) that can draw them."""
    from .. import plot
    from ..encodings import KINDS, get_kind

    if len(opened) == 2 and len(sources) == 2:
        return "compare"
    fits = plot.applicable(sources)
    kinds = [s.kind for s in opened if s.kind in KINDS]
    declared = get_kind(kinds[0]).VIEWS if kinds else ()
    for view in (*declared, *fits):
        if view in fits:
            return view
    raise ParameterError(f"no view can draw {', '.join(s.label for s in sources)}")


def _terminal(src) -> None:
    import shutil

    from .. import plot, termplot

    size = shutil.get_terminal_size((80, 24))
    for line in termplot.panel_lines(plot.terminal_panels(src), size.columns, max(6, size.lines - 2)):
        sys.stdout.write(line + "\n")


def _size(text: str) -> tuple[float, float]:
    try:
        w, h = (float(x) for x in text.lower().split("x"))
    except ValueError:
        raise ParameterError(f"--size {text!r} is not WxH in inches; use e.g. --size 8x5") from None
    if not (0 < w <= 50 and 0 < h <= 50):
        raise ParameterError(f"--size {text!r} is out of range; use 0 < W, H <= 50 inches")
    return w, h
