"""A heatmap drawn with text, for ``posenc plot`` on a terminal: no matplotlib, no rich.

Each character cell shows two vertically stacked pixels with the upper half block ``▀``: the foreground colour
is the upper pixel, the background colour the lower one, so ``h`` lines show ``2h`` pixel rows. A pixel is the
mean of a block of table rows and columns (the legend says how many), coloured with the same maps as the
matplotlib heatmap (a diverging red/blue map centred on 0 when the values have both signs, else viridis), in
24-bit or 256-colour ANSI. Without colour (``NO_COLOR``, ``TERM=dumb``, or ``color="none"``) each character is one
pixel drawn with a shade character (``' ░▒▓█'``, or ``' .:*#'`` with ``ascii=True``).

Layout: the picture is at most ``width`` columns wide (a table narrower than that is stretched by an integer
factor, never squeezed unevenly) and, with the legend, at most ``height`` lines high.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping, Sequence

import numpy as np

#: Colour maps as RGB anchors at 0, 1/8, ..., 1 (sampled from matplotlib's viridis and RdBu_r).
RAMPS: dict[str, tuple[tuple[int, int, int], ...]] = {
    "viridis": ((68, 1, 84), (71, 45, 123), (59, 82, 139), (44, 114, 142), (33, 145, 140), (40, 174, 128),
                (94, 201, 98), (173, 220, 48), (253, 231, 37)),
    "RdBu_r": ((5, 48, 97), (42, 113, 178), (107, 172, 209), (194, 221, 236), (247, 246, 246), (251, 204, 180),
               (228, 128, 102), (186, 40, 50), (103, 0, 31)),
}  # fmt: skip
SHADES = " ░▒▓█"
ASCII_SHADES = " .:*#"
UPPER_HALF = "▀"
LOWER_HALF = "▄"
RESET = "\x1b[0m"
COLOR_MODES = ("truecolor", "256", "none")
_CUBE = (0, 95, 135, 175, 215, 255)


def color_mode(env: Mapping[str, str] | None = None) -> str:
    """The colour mode the environment asks for: ``none`` (NO_COLOR set, TERM=dumb), ``truecolor``
    (COLORTERM=truecolor/24bit) or ``256``. Whether the output is a terminal is the caller's business."""
    vars_: Mapping[str, str] = os.environ if env is None else env
    if vars_.get("NO_COLOR") or vars_.get("TERM") == "dumb":
        return "none"
    if vars_.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
        return "truecolor"
    return "256"


def colormap_for(lo: float, hi: float) -> tuple[str, float, float]:
    """(map name, vmin, vmax): diverging and symmetric about 0 when the values have both signs, else viridis."""
    if lo < 0 < hi:
        m = max(-lo, hi)
        return "RdBu_r", -m, m
    return "viridis", lo, hi


def ramp_rgb(name: str, x: np.ndarray) -> np.ndarray:
    """RGB (uint8, shape ``x.shape + (3,)``) of the map ``name`` at ``x`` in [0, 1] (clipped), linear between
    anchors."""
    anchors = np.asarray(RAMPS[name], dtype=np.float64)
    pos = np.clip(np.asarray(x, dtype=np.float64), 0.0, 1.0) * (len(anchors) - 1)
    i = np.minimum(np.floor(pos).astype(int), len(anchors) - 2)
    f = (pos - i)[..., None]
    return np.rint(anchors[i] * (1 - f) + anchors[i + 1] * f).astype(np.uint8)


def rgb_to_256(rgb: Sequence[int]) -> int:
    """The xterm 256-colour index nearest to ``rgb`` (the 6x6x6 cube or the 24-step grey ramp)."""
    r, g, b = (int(v) for v in rgb)
    return _xterm_index(r, g, b)


@functools.lru_cache(maxsize=1 << 14)
def _xterm_index(r: int, g: int, b: int) -> int:
    """:func:`rgb_to_256` of one colour, once per colour in a process: a 256-colour heatmap asks for each of its
    cells' colours, most of them the same few hundred ramp colours (it was two thirds of such a heatmap's time)."""
    idx = [min(range(6), key=lambda k: abs(_CUBE[k] - v)) for v in (r, g, b)]
    cube = tuple(_CUBE[k] for k in idx)
    grey_level = min(23, max(0, round((r + g + b) / 3 - 8) // 10))
    grey = 8 + 10 * grey_level

    def dist(c: Sequence[int]) -> int:
        return sum((int(x) - int(y)) ** 2 for x, y in zip(c, (r, g, b)))

    if dist((grey, grey, grey)) < dist(cube):
        return 232 + grey_level
    return 16 + 36 * idx[0] + 6 * idx[1] + idx[2]


def _fg(rgb: Sequence[int], mode: str) -> str:
    if mode == "truecolor":
        return f"\x1b[38;2;{rgb[0]};{rgb[1]};{rgb[2]}m"
    return f"\x1b[38;5;{rgb_to_256(rgb)}m"


def _bg(rgb: Sequence[int], mode: str) -> str:
    if mode == "truecolor":
        return f"\x1b[48;2;{rgb[0]};{rgb[1]};{rgb[2]}m"
    return f"\x1b[48;5;{rgb_to_256(rgb)}m"


def block_means(a: np.ndarray, row_step: int, col_step: int) -> np.ndarray:
    """Mean of each ``row_step x col_step`` block over its finite values (NaN where a block has none)."""
    a = np.asarray(a, dtype=np.float64)
    n, m = a.shape
    rows, cols = -(-n // row_step), -(-m // col_step)
    pad = np.full((rows * row_step, cols * col_step), np.nan)
    pad[:n, :m] = a
    pad[~np.isfinite(pad)] = np.nan
    blocks = pad.reshape(rows, row_step, cols, col_step)
    fin = np.isfinite(blocks)
    count = fin.sum(axis=(1, 3))
    total = np.where(fin, blocks, 0.0).sum(axis=(1, 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def heatmap_lines(
    array: np.ndarray,
    width: int = 80,
    height: int = 24,
    *,
    color: str = "auto",
    ascii: bool = False,
    vmin: float | None = None,
    vmax: float | None = None,
) -> list[str]:
    """A heatmap of a 2-D array (rows = positions top to bottom, columns left to right) as terminal lines.

    Parameters
    ----------
    array : array_like
        2-D (a 1-D array is one row). Non-finite values are left blank (they do not count in a block's mean).
    width, height : int
        At most ``width`` visible columns per line and ``height`` lines, the legend line included.
    color : {'auto', 'truecolor', '256', 'none'}
        ``auto`` follows the environment (:func:`color_mode`); ``none`` draws shade characters.
    ascii : bool
        With ``color='none'``, ASCII shades ``' .:*#'`` instead of block characters.
    vmin, vmax : float, optional
        The value range of the colour map (default: the finite values', symmetric about 0 when they have both
        signs).

    Returns
    -------
    list of str
        The picture's lines, then one legend line: the value range with a colour ramp, and which rows and
        columns each pixel averages. Visible width (ANSI codes excluded) never exceeds ``width``.
    """
    a = np.asarray(array)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.size == 0:
        raise ValueError(f"heatmap_lines needs a non-empty 2-D array, got shape {a.shape}")
    mode = color_mode() if color == "auto" else color
    if mode not in COLOR_MODES:
        raise ValueError(f"unknown color mode {color!r}; choose from: auto, {', '.join(COLOR_MODES)}")
    width, height = max(int(width), 8), max(int(height), 2)
    n, m = a.shape
    f = np.asarray(a, dtype=np.float64)
    fin = f[np.isfinite(f)]
    lo = float(fin.min()) if fin.size else 0.0
    hi = float(fin.max()) if fin.size else 0.0
    cmap, lo_c, hi_c = colormap_for(lo, hi)
    lo_c = lo_c if vmin is None else float(vmin)
    hi_c = hi_c if vmax is None else float(vmax)
    # pixel grid: each text line holds two pixel rows in colour, one in shade mode
    per_line = 1 if mode == "none" else 2
    body_lines = height - 1
    row_step = max(1, math.ceil(n / (body_lines * per_line)))
    col_step = max(1, math.ceil(m / width))
    cells = block_means(f, row_step, col_step)
    repeat = max(1, width // cells.shape[1])  # stretch narrow tables by a whole number of characters
    span = hi_c - lo_c
    norm = np.zeros_like(cells) if span <= 0 else (cells - lo_c) / span
    lines = _shade_lines(norm, repeat, ascii) if mode == "none" else _color_lines(norm, repeat, cmap, mode)
    lines.append(_legend(lo_c, hi_c, cmap, mode, ascii, n, m, row_step, col_step, width, per_line, lo, hi))
    return lines


def _shade_lines(norm: np.ndarray, repeat: int, ascii: bool) -> list[str]:
    shades = ASCII_SHADES if ascii else SHADES
    top = len(shades) - 1
    out = []
    for row in norm:
        chars = []
        for v in row:
            ch = "?" if np.isnan(v) else shades[int(np.clip(np.rint(v * top), 0, top))]
            chars.append(ch * repeat)
        out.append("".join(chars))
    return out


def _color_lines(norm: np.ndarray, repeat: int, cmap: str, mode: str) -> list[str]:
    rgb = ramp_rgb(cmap, np.nan_to_num(norm, nan=0.0))
    nan = np.isnan(norm)
    out = []
    for i in range(0, norm.shape[0], 2):
        parts: list[str] = []
        state: tuple[str, str] | None = None
        for j in range(norm.shape[1]):
            upper = None if nan[i, j] else tuple(rgb[i, j])
            lower = None if i + 1 >= norm.shape[0] or nan[i + 1, j] else tuple(rgb[i + 1, j])
            if upper is not None:
                ch, codes = UPPER_HALF, (_fg(upper, mode), _bg(lower, mode) if lower is not None else "\x1b[49m")
            elif lower is not None:
                ch, codes = LOWER_HALF, (_fg(lower, mode), "\x1b[49m")
            else:
                ch, codes = " ", ("\x1b[39m", "\x1b[49m")
            if codes != state:
                parts.append("".join(codes))
                state = codes
            parts.append(ch * repeat)
        parts.append(RESET)
        out.append("".join(parts))
    return out


def _legend(
    lo: float,
    hi: float,
    cmap: str,
    mode: str,
    ascii: bool,
    n: int,
    m: int,
    row_step: int,
    col_step: int,
    width: int,
    per_line: int,
    data_lo: float,
    data_hi: float,
) -> str:
    """``lo ████████ hi  rows 0..n-1, cols 0..m-1  mean of R rows x C cols per half block``, to fit."""
    if mode == "none":
        shades = ASCII_SHADES if ascii else SHADES
        ramp_text, ramp_len = shades, len(shades)
    else:
        colours = ramp_rgb(cmap, np.linspace(0, 1, 8))
        ramp_text = "".join(_fg(tuple(c), mode) + "█" for c in colours) + RESET
        ramp_len = 8
    what = (
        "one value"
        if row_step == col_step == 1
        else (f"mean of {_plural(row_step, 'row')} x {_plural(col_step, 'col')}")
    )
    unit = "char" if mode == "none" else "half block"
    pieces = [f"rows 0..{n - 1}, cols 0..{m - 1}", f"{what} per {unit}"]
    if (data_lo, data_hi) != (lo, hi):
        pieces.insert(0, f"values {_fmt(data_lo)}..{_fmt(data_hi)}")
    text = f"{_fmt(lo)} " + "\0" * ramp_len + f" {_fmt(hi)}"  # placeholder: the ramp's visible width
    for p in pieces:  # add what fits, in order of importance
        if len(text) + 2 + len(p) <= width:
            text += "  " + p
    if len(text) > width:  # a very narrow terminal: just the range
        return f"{_fmt(lo)}..{_fmt(hi)}"[:width]
    return text.replace("\0" * ramp_len, ramp_text, 1)


def panel_lines(
    panels: Sequence[tuple[str, np.ndarray]],
    width: int = 80,
    height: int = 24,
    *,
    color: str = "auto",
    ascii: bool = False,
) -> list[str]:
    """Several titled heatmaps stacked in ``width`` x ``height`` (e.g. ``plot.terminal_panels``: cos and sin).

    Each panel gets a title line (cut to the width) and an equal share of the remaining lines, at least 3.
    """
    if not panels:
        return []
    share = max(3, height // len(panels) - 1)
    out: list[str] = []
    for title, array in panels:
        out.append(title if len(title) <= width else title[: max(width - 3, 1)] + "...")
        out.extend(heatmap_lines(array, width, share, color=color, ascii=ascii))
    return out


def visible_len(line: str) -> int:
    """Printed width of a line, ANSI escape sequences excluded."""
    import re

    return len(re.sub(r"\x1b\[[0-9;]*m", "", line))


__all__ = [
    "RAMPS",
    "color_mode",
    "colormap_for",
    "heatmap_lines",
    "panel_lines",
    "ramp_rgb",
    "rgb_to_256",
    "visible_len",
]
