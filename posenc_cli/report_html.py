"""The audit report as Markdown (a CI step summary, a pull-request comment) and as one self-contained HTML page.

The page needs nothing but a browser: no network, no script, no external style sheet, font or image. Its
pictures are inline SVG drawn here from the report's numbers (no matplotlib): for each diverging row, the
largest |difference| over positions, over columns (each frequency of a rotary table), a heatmap of both, and the
two sides' frequencies (the spectrum) when both have them. Both writers go through the one atomic writer
(:func:`posenc_cli.formats.write_atomic`): an existing file is refused unless ``force``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

#: the verdicts' colours on the page (text stays readable without them)
_COLOURS = {"agree": "#1a7f37", "reference": "#57606a", "skipped": "#9a6700", "differ": "#cf222e", "failed": "#bc4c00",
            "error": "#8250df", "refused": "#8250df"}  # fmt: skip


def _data(report: Any) -> dict[str, Any]:
    return dict(report) if isinstance(report, Mapping) else report.to_json(details=True)


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return "0" if v == 0 else f"{float(v):.3g}"


# ----- Markdown ---------------------------------------------------------------------------------------------
def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(report: Any) -> str:
    """The report as GitHub-flavoured Markdown: the verdict, the table (explanations in their column), notes."""
    from .render import audit_verdict

    d = _data(report)
    icon = {"agree": "✅", "reference": "📐", "skipped": "⏭️", "differ": "❌", "failed": "⚠️", "error": "⛔",
            "refused": "🚫"}  # fmt: skip
    out = [
        f"## posenc audit: `{_cell(d['source'])}`",
        "",
        f"**{_cell(audit_verdict(d))}**"
        + (f" — {d['model_type']}" if d.get("model_type") else "")
        + (f", {d['length']} positions" if d.get("length") else ""),
        "",
        "| artifact | layer type | engine | verdict | max \\|diff\\| | why |",
        "| --- | --- | --- | --- | ---: | --- |",
    ]
    for r in d["rows"]:
        out.append(
            f"| `{_cell(r['artifact'])}` | {_cell(r['layer_type'])} | {_cell(r['engine'])} | "
            f"{icon.get(r['verdict'], '')} {r['verdict']} | {_fmt(r['max_abs_diff'])} | {_cell(r['explanation'])} |"
        )
    if d.get("notes"):
        out += ["", *[f"- {_cell(n)}" for n in d["notes"]]]
    out += ["", f"<sub>posenc {d['posenc_version']}, report schema {d['schema']}</sub>", ""]
    return "\n".join(out)


# ----- inline SVG -------------------------------------------------------------------------------------------
W, H, PAD = 360, 150, 34


def _scale(values: list[float]) -> tuple[list[float], str]:
    """Values for a log axis when they span decades (zeros at the floor), else linear; and the axis name."""
    finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    pos = [v for v in finite if v > 0]
    if pos and max(pos) / min(pos) > 100:
        floor = min(pos) / 10
        return [
            math.log10(v if isinstance(v, (int, float)) and math.isfinite(v) and v > 0 else floor) for v in values
        ], "log10"
    big = max(finite) if finite else 1.0
    return [v if isinstance(v, (int, float)) and math.isfinite(v) else big for v in values], ""


def _line_chart(title: str, xs: list[float], series: dict[str, list[float]], xlabel: str) -> str:
    colours = ["#cf222e", "#0969da", "#1a7f37"]
    all_y: list[float] = []
    scaled = {}
    for name, ys in series.items():
        s, axis = _scale(ys)
        scaled[name] = s
        all_y += s
    lo, hi = (min(all_y), max(all_y)) if all_y else (0.0, 1.0)
    hi = hi if hi > lo else lo + 1.0
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    x1 = x1 if x1 > x0 else x0 + 1

    def px(x: float) -> float:
        return PAD + (x - x0) / (x1 - x0) * (W - PAD - 8)

    def py(y: float) -> float:
        return H - PAD + 8 - (y - lo) / (hi - lo) * (H - PAD - 8)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
        f'aria-label="{html.escape(title)}"><title>{html.escape(title)}</title>',
        f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>',
        f'<line x1="{PAD}" y1="{H - PAD + 8}" x2="{W - 8}" y2="{H - PAD + 8}" stroke="#888"/>',
        f'<line x1="{PAD}" y1="8" x2="{PAD}" y2="{H - PAD + 8}" stroke="#888"/>',
        f'<text x="{W / 2:.0f}" y="{H - 4}" font-size="10" text-anchor="middle">{html.escape(xlabel)}</text>',
        f'<text x="2" y="14" font-size="9">{_fmt(10**hi if axis else hi)}</text>',
        f'<text x="2" y="{H - PAD + 8}" font-size="9">{_fmt(10**lo if axis else lo)}</text>',
    ]
    for i, (name, ys) in enumerate(scaled.items()):
        pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys))
        c = colours[i % len(colours)]
        parts.append(
            f'<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{pts}"><title>{html.escape(name)}</title></polyline>'
        )
        parts.append(
            f'<text x="{W - 10}" y="{16 + 12 * i}" font-size="10" text-anchor="end" fill="{c}">{html.escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


#: the heatmap's cells are at least this many pixels on a side (finer cells are more than the eye can see: the
#: grid is max-pooled down to them), and its colours this many levels (neighbouring cells of one level merge)
CELL_PX, LEVELS = 4, 16


def _pool(grid: list[list[float]], rows: int, cols: int) -> list[list[float]]:
    """``grid`` max-pooled to at most ``rows`` x ``cols`` cells (non-finite values count as the largest)."""

    def key(v: Any) -> float:
        return v if isinstance(v, (int, float)) and math.isfinite(v) else math.inf

    def largest(cells: list[Any]) -> Any:
        try:  # all finite numbers (nearly every cell): the same maximum at C speed, without a key call per cell
            if all(map(math.isfinite, cells)):
                return max(cells)
        except TypeError:  # 'nan' / 'inf' as the JSON report spells them
            pass
        return max(cells, key=key)

    n, m = len(grid), len(grid[0]) if grid else 0
    ri = [i * n // min(n, rows) for i in range(min(n, rows) + 1)]
    ci = [j * m // min(m, cols) for j in range(min(m, cols) + 1)]
    out = []
    for a, b in zip(ri, ri[1:]):
        line = []
        for c, d in zip(ci, ci[1:]):
            cells = [grid[i][j] for i in range(a, b) for j in range(c, d)]
            line.append(largest(cells))
        out.append(line)
    return out


def _heatmap(title: str, grid: list[list[float]], positions: list[int], columns: int) -> str:
    area_w, area_h = W - PAD - 8, H - PAD - 8
    grid = _pool(grid, max(1, area_h // CELL_PX), max(1, area_w // CELL_PX)) if grid and grid[0] else grid
    rows = len(grid)
    cols = len(grid[0]) if grid else 0
    flat = [v for r in grid for v in r]
    scaled, _ = _scale(flat)
    lo, hi = (min(scaled), max(scaled)) if scaled else (0.0, 1.0)
    span = hi - lo if hi > lo else 1.0
    cw, ch = area_w / max(cols, 1), area_h / max(rows, 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
        f'aria-label="{html.escape(title)}"><title>{html.escape(title)}</title>',
        f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>',
        f'<text x="{W / 2:.0f}" y="{H - 4}" font-size="10" text-anchor="middle">column (frequency) →</text>',
        '<text x="10" y="70" font-size="10" transform="rotate(-90 10 70)" text-anchor="middle">position →</text>',
    ]
    for i in range(rows):
        levels = [round((scaled[i * cols + j] - lo) / span * (LEVELS - 1)) for j in range(cols)]
        j = 0
        while j < cols:  # a run of cells of one level is one rectangle
            k = j
            while k + 1 < cols and levels[k + 1] == levels[j]:
                k += 1
            t = levels[j] / (LEVELS - 1)
            r, g, b = int(255 * min(1, 2 * t)), int(255 * (1 - abs(2 * t - 1))), int(255 * max(0, 1 - 2 * t))
            parts.append(
                f'<rect x="{PAD + j * cw:.1f}" y="{8 + i * ch:.1f}" width="{(k - j + 1) * cw + 0.3:.1f}" '
                f'height="{ch + 0.3:.1f}" fill="rgb({r},{g},{b})"/>'
            )
            j = k + 1
    parts.append("</svg>")
    return "".join(parts)


def pictures(picture: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The inline SVG pictures of one diverging row, each with its caption."""
    tensor = picture["tensor"]
    titles = [
        f"largest |difference| of {tensor} over positions",
        f"largest |difference| of {tensor} per column (frequency)",
        f"|difference| of {tensor}: positions (down) x columns (across)",
    ]
    out = [
        _line_chart(titles[0], [float(p) for p in picture["positions"]], {"max |diff|": list(picture["by_position"])},
                    "position"),
        _line_chart(titles[1], [float(i) for i in range(len(picture["by_column"]))],
                    {"max |diff|": list(picture["by_column"])}, "column"),
        _heatmap(titles[2], picture["grid"], picture["positions"], picture["columns"]),
    ]  # fmt: skip
    spectrum = picture.get("spectrum")
    if spectrum:
        n = max(len(v) for v in spectrum.values())
        titles.append("spectrum: each frequency (radians per position) of the artifact and of the reference")
        out.append(
            _line_chart(
                titles[-1], [float(i) for i in range(n)], {k: list(v) for k, v in spectrum.items()}, "frequency index"
            )
        )
    return list(zip(titles, out))


# ----- HTML -------------------------------------------------------------------------------------------------
_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em;color:#1f2328;max-width:75em}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #d0d7de;padding:.3em .6em;text-align:left;
vertical-align:top}th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.verdict{font-weight:600}code{font-size:90%}.row{margin:1.2em 0;padding-top:.4em;border-top:1px solid #d0d7de}
.pictures{display:flex;flex-wrap:wrap}.pictures figure{margin:.3em .8em .3em 0;max-width:{W}px}
.pictures svg{border:1px solid #eee}figcaption{font-size:85%;color:#57606a}ul.details{font-size:90%;color:#57606a}
"""


def page(report: Any) -> str:
    """The whole report as one HTML document (UTF-8, no external resource): the verdict table, then each row's
    details and, for each diverging row, its pictures with captions."""
    from .render import audit_verdict

    d = _data(report)
    e = html.escape
    rows_html = []
    sections = []
    for i, r in enumerate(d["rows"]):
        colour = _COLOURS.get(r["verdict"], "#1f2328")
        rows_html.append(
            f'<tr id="row-{i}" data-verdict="{e(r["verdict"])}"><td><code>{e(r["artifact"])}</code></td>'
            f"<td>{e(r['layer_type'])}</td><td>{e(r['engine'])}</td>"
            f'<td class="verdict" style="color:{colour}">{e(r["verdict"])}</td>'
            f'<td class="num">{e(_fmt(r["max_abs_diff"]))}</td><td>{e(r["explanation"])}</td></tr>'
        )
        details = "".join(f"<li>{e(x)}</li>" for x in r.get("details") or [])
        pics = "".join(
            f"<figure>{svg}<figcaption>{e(title)}</figcaption></figure>" for title, svg in pictures(r["picture"])
        ) if r.get("picture") else ""  # fmt: skip
        if details or pics:
            sections.append(
                f'<section class="row" id="detail-{i}"><h3>{e(r["artifact"])} · {e(r["layer_type"])} · '
                f'{e(r["engine"])}: <span style="color:{colour}">{e(r["verdict"])}</span></h3>'
                f"<p>{e(r['explanation'])}</p>"
                + (f'<div class="pictures">{pics}</div>' if pics else "")
                + (f'<ul class="details">{details}</ul>' if details else "")
                + "</section>"
            )
    notes = "".join(f"<li>{e(n)}</li>" for n in d.get("notes") or [])
    meta = ", ".join(
        x
        for x in (
            d.get("model_type"),
            f"reference {d['config']}" if d.get("config") else None,
            f"{d['length']} positions" if d.get("length") else None,
        )
        if x
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>posenc audit: {e(d['source'])}</title><style>{_STYLE.replace('{W}', str(W))}</style></head><body>"
        f"<h1>posenc audit: <code>{e(d['source'])}</code></h1>"
        f'<p id="verdict" data-exit-code="{d["exit_code"]}"><strong>{e(audit_verdict(d))}</strong></p>'
        f"<p>{e(meta)}</p>"
        '<table id="verdicts"><thead><tr><th>artifact</th><th>layer type</th><th>engine</th><th>verdict</th>'
        "<th>max |diff|</th><th>explanation</th></tr></thead><tbody>"
        + "".join(rows_html)
        + "</tbody></table>"
        + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "")
        + ("<h2>Rows in detail</h2>" + "".join(sections) if sections else "")
        + f"<footer><small>posenc {e(str(d['posenc_version']))}, report schema {e(d['schema'])}</small></footer>"
        "</body></html>\n"
    )


def write_report(report: Any, dest: str, fmt: str, *, force: bool = False) -> None:
    """Write ``report`` as ``fmt`` (``markdown`` or ``html``) to ``dest`` atomically; an existing ``dest`` is
    refused unless ``force``."""
    from .formats import write_atomic

    text = markdown(report) if fmt == "markdown" else page(report)
    data = text.encode("utf-8")
    write_atomic(dest, lambda sink: sink.write(data), force=force)


def refuse_existing(dest: str | None, force: bool) -> None:
    """An existing report path, refused before the audit runs (it is refused again, atomically, when written)."""
    import os

    from .errors import OutputError
    from .formats.atomic import exists_message

    if dest is not None and not force and os.path.lexists(dest) and dest != "-":
        raise OutputError(exists_message(dest))
