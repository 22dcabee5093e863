"""The only module that imports rich: human tables for every command, and the progress bar.

Data goes to stdout, messages and progress to stderr. Rich already honours NO_COLOR and drops colour when
the stream is not a terminal; ``COLUMNS`` fixes the width (tests use it for stable snapshots).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

STATUS_STYLE = {"PASS": "green", "FAIL": "bold red", "INFO": "cyan"}


def stdout_console() -> Console:
    return Console(file=sys.stdout, highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    return Console(file=sys.stderr, highlight=False, soft_wrap=False)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    sys.stdout.flush()


def fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return "-"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if v == 0:
            return "0"
        if not np.isfinite(v):
            return str(v)
        if abs(v) >= 1e5 or abs(v) < 1e-3:
            return f"{v:.{max(digits - 1, 1)}e}"
        return f"{v:.{digits}f}"
    return str(v)


# ----- generate ------------------------------------------------------------------------------------
def preview(
    title: str,
    specs: list[tuple[str, tuple[int, ...], str]],
    params: dict[str, str],
    primary: str,
    corner: np.ndarray,
    shape: tuple[int, ...],
    value_range: tuple[float, float] | None,
    range_note: str,
    small: dict[str, np.ndarray],
    precision: int,
) -> None:
    con = stdout_console()
    con.print(f"[bold]{title}[/bold]")
    info = Table.grid(padding=(0, 2))
    info.add_column(style="bold")
    info.add_column()
    for name, shp, dt in specs:
        info.add_row(f"tensor {name}", f"{' x '.join(map(str, shp))}  {dt}")
    info.add_row("parameters", ", ".join(f"{k}={v}" for k, v in params.items()))
    if value_range is not None:
        info.add_row("value range", f"[{fmt(value_range[0])}, {fmt(value_range[1])}]{range_note}")
    con.print(info)
    for name, arr in small.items():
        values = np.asarray(arr, dtype=np.float64)
        text = np.array2string(values, precision=precision + 1, threshold=12, edgeitems=4, max_line_width=10_000)
        con.print(f"[bold]{name}[/bold] ({values.size}) = ", end="")
        con.print(text, markup=False, soft_wrap=True)
    rows_shown, cols_shown = corner.shape[0], (corner.shape[1] if corner.ndim > 1 else 1)
    more_rows, more_cols = shape[0] > rows_shown, len(shape) > 1 and shape[-1] > cols_shown
    con.print(f"[bold]{primary}[/bold] rows 0..{rows_shown - 1}" + (f" of {shape[0]}" if more_rows else "")
              + (f", columns 0..{cols_shown - 1} of {shape[-1]}" if more_cols else ""))
    grid = corner.reshape(corner.shape[0], -1)
    text = np.array2string(np.asarray(grid, dtype=np.float64), precision=precision, suppress_small=True,
                           floatmode="fixed" if grid.dtype.kind == "f" else "maxprec", max_line_width=10_000)
    con.print(text, markup=False)


# ----- check ---------------------------------------------------------------------------------------
def check_table(label: str, kind: str | None, results: list, required: list[str]) -> None:
    con = stdout_console()
    t = Table(title=escape(label) + (f"  (kind: {kind})" if kind else "  (kind unknown: pass --expect KIND)"),
              title_justify="left")
    for col in ("property", "status", "value", "tolerance", "method", "detail"):
        t.add_column(col, overflow="fold")
    for r in results:
        d = r.to_json()
        status = d["status"] if (r.name in required or d["status"] != "FAIL") else "fail"
        style = STATUS_STYLE.get(status, "yellow")
        name = r.name + ("" if r.name in required else " (not required)")
        t.add_row(escape(name), f"[{style}]{status}[/{style}]", escape(fmt(r.value)), escape(fmt(r.tolerance)),
                  escape(r.method), escape(r.detail))
    con.print(t)


def check_summary(label: str, ok: bool, failed: list[str]) -> None:
    con = stderr_console()
    if ok:
        con.print(f"{escape(label)}: [green]every required property holds[/green]")
    else:
        con.print(f"{escape(label)}: [red]required properties failed: {', '.join(failed)}[/red]")


# ----- compare -------------------------------------------------------------------------------------
def compare_table(res, label_a: str, label_b: str) -> None:
    con = stdout_console()
    t = Table(title=escape(f"{label_a}  vs  {label_b}"), title_justify="left")
    t.add_column("metric")
    t.add_column("value", overflow="fold")
    t.add_row("shapes", f"{res.shape_a} vs {res.shape_b}")
    if res.shape_a == res.shape_b:
        where = f" at {res.max_abs_at} ({fmt(res.value_a, 6)} vs {fmt(res.value_b, 6)})" if res.max_abs_at else ""
        t.add_row("max abs difference", fmt(res.max_abs, 6) + where)
        t.add_row("max relative difference", fmt(res.max_rel, 6))
        t.add_row("max ulp difference", fmt(res.max_ulp, 2))
        t.add_row("mean abs difference", fmt(res.mean_abs, 6))
        if res.min_cosine is not None:
            t.add_row("min row cosine similarity", f"{fmt(res.min_cosine, 6)} (row {res.min_cosine_row})")
        t.add_row("elements beyond tolerance", f"{res.mismatched} of {res.total}")
    t.add_row("tolerance", f"atol={fmt(res.atol)} rtol={fmt(res.rtol)}")
    verdict = "[green]SAME[/green]" if res.same else "[bold red]DIFFERENT[/bold red]"
    t.add_row("verdict", verdict + (f": {escape(res.reason)}" if res.reason else ""))
    con.print(t)


# ----- kinds ---------------------------------------------------------------------------------------
def kinds_list(rows: list[dict[str, Any]]) -> None:
    t = Table(title="posenc kinds", title_justify="left")
    for col in ("kind", "summary", "tensors"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(r["kind"], escape(r["summary"]), ", ".join(r["tensors"]))
    stdout_console().print(t)


def kind_detail(info: dict[str, Any]) -> None:
    con = stdout_console()
    con.print(f"[bold]{info['kind']}[/bold]: {escape(info['summary'])}")
    con.print(f"tensors: {', '.join(info['tensors'])} (primary: {info['primary']})")
    t = Table(title="parameters", title_justify="left")
    for col in ("name", "type", "default", "meaning"):
        t.add_column(col, overflow="fold")
    for p in info["parameters"]:
        meaning = p["help"] + (f" (choices: {', '.join(p['choices'])})" if p["choices"] else "")
        t.add_row(p["name"], escape(p["type"]), "-" if p["default"] is None else escape(str(p["default"])), escape(meaning))
    con.print(t)
    if info["presets"]:
        pt = Table(title="presets", title_justify="left")
        pt.add_column("preset")
        pt.add_column("sets")
        pt.add_column("reproduces", overflow="fold")
        for name, p in info["presets"].items():
            pt.add_row(name, escape(", ".join(f"{k}={v}" for k, v in p["sets"].items())), escape(p["doc"]))
        con.print(pt)
    props = info.get("properties") or {}
    if props:
        required = [n for n, how in props.items() if how == "required"]
        reported = [n for n, how in props.items() if how != "required"]
        con.print(f"[bold]check requires[/bold]: {', '.join(required)}", soft_wrap=False)
        if reported:
            con.print(f"[bold]check also reports[/bold]: {', '.join(reported)}")
    if info["references"]:
        con.print("[bold]reproduces[/bold]")
        for ref in info["references"]:
            con.print(f"  - {ref}", markup=False)


# ----- progress ------------------------------------------------------------------------------------
@contextmanager
def progress_bar(description: str, total: int, enabled: bool) -> Iterator[Any]:
    """A Rich progress bar on stderr (a no-op callback when disabled); yields ``advance(n, total=None)`` (a
    ``total`` given there replaces the one given here, for work whose size is known only once it starts)."""
    if not enabled:
        yield lambda n, total=None: None
        return
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>5.1f}%"),
                   TimeRemainingColumn(), console=stderr_console(), transient=True)
    with bar:
        task = bar.add_task(description, total=total)

        def advance(n: int, total: int | None = None) -> None:
            if total is not None:
                bar.update(task, total=total)
            bar.advance(task, n)

        yield advance


# ----- kinds --hf-config -------------------------------------------------------------------------------
def config_report(report: dict[str, Any], width: int | None = None) -> None:
    """What a model config said, one value per line with where it came from, within ``width`` columns."""
    import shutil
    import textwrap

    # a terminal's width (at most 100); piped, 80 whatever the terminal: machines' logs do not depend on it
    width = width or (min(shutil.get_terminal_size((80, 24)).columns, 100) if sys.stdout.isatty() else 80)
    out = sys.stdout
    types = report.get("layer_types") or []
    head = f"model_type {report['model_type']}: read as {report['family'] or 'generic'} ({report['kind']} tables)"
    out.write(head + "\n")
    if types:
        chosen = report.get("layer_type")
        out.write(f"layer types: {', '.join(types)}" + (f"; showing {chosen}" if chosen else "") + "\n")
    out.write("\n".join(textwrap.wrap(f"follows: {report['reference']}", width, subsequent_indent="  ")) + "\n")
    values = {k: v for k, v in report.items() if isinstance(v, dict) and "value" in v}
    name_w = max(len(k) for k in values) if values else 0
    for key, v in values.items():
        line = f"  {key:<{name_w}}  {v['value']}"
        origin = f"({v['from']})"
        if len(line) + 2 + len(origin) <= width:
            out.write(f"{line}  {origin}\n")
        else:
            wrapped = textwrap.wrap(origin, width - 6, break_long_words=False, break_on_hyphens=False)
            out.write(line + "\n" + "".join(f"      {w}\n" for w in wrapped))
    for w in report.get("warnings") or []:
        sys.stderr.write(f"Warning: {w}\n")
