"""Human output of every command (the check report, compare metrics, previews, kinds) and ``--json``.

Data goes to stdout, verdicts and messages to stderr. Every human view is built as plain lines that fit the
width (``COLUMNS``, else the terminal's, else 80) and never breaks a word unless the word alone is wider than
its column; colour is added only when the stream is a terminal (``NO_COLOR`` turns it off, ``FORCE_COLOR`` on).
A verdict is one line that is never hard-wrapped, so ``grep`` finds it in CI logs. ``quiet`` is the same for
every command: 0 prints everything, 1 only the verdict line, 2 nothing.

The check report shows one line per property: status, name, the measured figure with its unit, the threshold
(:data:`FIGURES` says how each property's value reads); ``verbose`` adds the method and detail below each.
Properties that could not run because an earlier one failed (a ``skipped`` result, or status ``NOT RUN``) are
listed once on a ``not run, needs finite`` line instead of failing one by one. ``check_json`` is the same data
for ``--json``, described by ``docs/check-report.schema.json``.

rich is imported only by :func:`progress_bar`.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from .reports import AGAINST, check_verdict

#: Quiet levels shared by every command.
QUIET_NONE, QUIET_VERDICT, QUIET_ALL = 0, 1, 2
#: Status of a check result in ``--json`` and in the report.
STATUSES = ("PASS", "FAIL", "INFO", "NOT RUN")
DEFAULT_WIDTH = 80


# ----- streams: width, colour, glyphs ----------------------------------------------------------------
def term_width(stream: IO[str] | None = None) -> int:
    """``COLUMNS`` when set, else the terminal's width when ``stream`` is a terminal, else 80."""
    text = os.environ.get("COLUMNS", "")
    if text.strip().isdigit() and int(text) > 0:
        return int(text)
    stream = sys.stdout if stream is None else stream
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns or DEFAULT_WIDTH
    except (AttributeError, OSError, ValueError):
        pass
    return DEFAULT_WIDTH


def use_color(stream: IO[str]) -> bool:
    """Colour on a terminal, unless ``NO_COLOR`` or ``TERM=dumb``; ``FORCE_COLOR`` forces it."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def use_unicode(stream: IO[str]) -> bool:
    """Whether ``stream`` encodes UTF-8 (marks like ✓ and ≤); else plain ASCII."""
    enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    return enc in ("utf8", "utf8sig")


_SGR = {"green": "32", "red": "1;31", "cyan": "36", "yellow": "33", "bold": "1", "dim": "2"}


def paint(text: str, style: str | None, color: bool) -> str:
    """``text`` in an ANSI style (green, red, cyan, yellow, bold, dim) when ``color``; unchanged otherwise."""
    if not color or not style or not text:
        return text
    return f"\x1b[{_SGR[style]}m{text}\x1b[0m"


def _emit(lines: Sequence[str | tuple[str, str | None]], stream: IO[str]) -> None:
    """Write lines (plain strings, or ``(text, style)``) to ``stream``, styled only when it takes colour."""
    color = use_color(stream)
    out = []
    for line in lines:
        text, style = (line, None) if isinstance(line, str) else line
        out.append(paint(text, style, color))
    stream.write("".join(s + "\n" for s in out))
    stream.flush()


#: Characters after which an over-long token may be split (paths, a/b/c lists, snake_case, k=v,k=v).
SPLIT_AFTER = "/_,;|=.:)]-"


def _pieces(word: str, first_room: int, room: int) -> list[str]:
    """``word`` cut into pieces of at most ``first_room`` then ``room`` characters, after a separator when
    possible (``SPLIT_AFTER``), mid-word only when a piece has none."""
    out = []
    limit = first_room
    while len(word) > limit:
        cut = max((i + 1 for i in range(min(limit, len(word) - 1)) if word[i] in SPLIT_AFTER), default=0)
        cut = cut if cut >= max(1, limit // 3) else limit
        out.append(word[:cut])
        word = word[cut:]
        limit = room
    out.append(word)
    return out


def wrap(text: str, width: int, indent: str = "", subsequent: str | None = None) -> list[str]:
    """``text`` wrapped at spaces to ``width``, the first line starting with ``indent``, the others with
    ``subsequent`` (default ``indent``). A token longer than a whole line is split after ``/``, ``_``, ``,``,
    ``=`` and the like; mid-word only when it has none of them."""
    sub = indent if subsequent is None else subsequent
    width = max(width, len(sub) + 8, len(indent) + 8)
    lines: list[str] = []
    cur, empty = indent, True
    for gap, word in re.findall(r"(\s*)(\S+)", text):
        gap = " " * len(gap.replace("\n", " ")) or " "  # keep the text's own spacing ("label  (kind: x)")
        room = width - len(cur) - (0 if empty else len(gap))
        if len(word) <= room:
            cur, empty = (cur + word, False) if empty else (cur + gap + word, False)
            continue
        if not empty and len(word) <= width - len(sub):
            lines.append(cur)
            cur, empty = sub + word, False
            continue
        pieces = _pieces(word, room if room >= 4 else width - len(sub), width - len(sub))
        if room < 4 and not empty:
            lines.append(cur)
            cur, empty = sub, True
        first, *rest = pieces
        cur = cur + first if empty else cur + " " + first
        for piece in rest:
            lines.append(cur)
            cur = sub + piece
        empty = False
    lines.append(cur.rstrip())
    return lines


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    sys.stdout.flush()


# ----- numbers ---------------------------------------------------------------------------------------
def _plain(v: Any) -> str | None:
    """What :func:`fmt` and :func:`num` print alike: ``-`` for None, yes/no, integers as is, 0, nan/inf, any
    non-number as ``str``; None for a finite non-zero float (each formats that its own way)."""
    if v is None:
        return "-"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if not isinstance(v, (float, np.floating)):
        return str(v)
    v = float(v)
    if v == 0:
        return "0"
    return None if np.isfinite(v) else str(v)


def fmt(v: Any, digits: int = 4) -> str:
    """A value for a table cell: ``-`` for None, yes/no, integers as is, floats with ``digits`` decimals or in
    scientific notation when very large or small."""
    plain = _plain(v)
    if plain is not None:
        return plain
    v = float(v)
    if abs(v) >= 1e5 or abs(v) < 1e-3:
        return f"{v:.{max(digits - 1, 1)}e}"
    return f"{v:.{digits}f}"


def num(v: Any, sig: int = 3) -> str:
    """A measured figure with ``sig`` significant digits (``0.96``, ``2.62e-08``, ``3.13e+05``, ``12``)."""
    plain = _plain(v)
    if plain is not None:
        return plain
    v = float(v)
    if v == int(v) and abs(v) < 1e4:
        return str(int(v))
    return f"{v:.{sig}g}"


def num_pair(value: Any, threshold: Any) -> tuple[str, str]:
    """``value`` and ``threshold`` with just enough digits that different numbers never print the same."""
    for sig in range(3, 13):
        a, b = num(value, sig), num(threshold, sig)
        if a != b or not isinstance(value, (float, np.floating)) or not isinstance(threshold, (float, np.floating)):
            return a, b
        if float(value) == float(threshold):
            return a, b
    return a, b


# ----- check: how each property's value reads --------------------------------------------------------
@dataclass(frozen=True)
class Figure:
    """How a property's measured value reads: ``text`` with ``{v}`` for the value, ``op`` how it is compared
    with the tolerance (``<=``, ``>``, ``=``, ``falls``: a trend, ``report``: no verdict), ``unit`` what the number
    counts or measures (``--json``'s ``unit``)."""

    text: str
    op: str
    unit: str
    #: ``text`` without the fields taken from the result's ``data`` (used when they are missing).
    short: str = ""


#: Keyed by property name (``posenc_cli.checks.CHECKS``); a property missing here reads as a bare number.
FIGURES: dict[str, Figure] = {
    "finite": Figure("{v} non-finite value{s}", "=", "non-finite values"),
    "matches-spec": Figure("max rel. diff {v}", "<=", "relative difference from the regenerated table"),
    "bounded": Figure("max |x| {v}", "<=", "max |value|"),
    "distinct": Figure("{v} distinct row{s} of {rows}", "=", "rows no other row equals"),
    "unique": Figure("closest rows {v} apart", ">", "distance between the closest distinct rows"),
    "constant-norm": Figure("norms {norm}, spread {v}", "<=", "max - min row norm", "norm spread {v}"),
    "equidistant": Figure("steps {distance}, spread {v}", "<=", "max - min distance between consecutive rows",
                          "step spread {v}"),
    "offset-invariant": Figure("worst {v} {x} tolerance", "<=", "worst spread / its tolerance"),
    "shift-linear": Figure("residual {v} {x} RMS norm", "<=", "residual / RMS row norm"),
    "symmetric": Figure("distance gap {v}", "<=", "max |d(t, t+k) - d(t, t-k)|"),
    "decay": Figure("dot ratio {v} at k={k}", "report", "mean P[t].P[t+k] / mean |P|^2 at the largest k",
                    "dot ratio {v}"),
    "precision": Figure("{v} row{s} distinct in bf16", "report", "rows still distinct in bfloat16"),
    "grid-locality": Figure("near {v}, far {distant}", "report",
                            "mean cosine of a patch's row to its 4 grid neighbours", "neighbours {v}"),
    "pythagorean": Figure("max error {v}", "<=", "max |cos^2 + sin^2 - scaling^2|"),
    "norm-preserving": Figure("max rel. norm change {v}", "<=", "relative change of a rotated vector's norm"),
    "relative": Figure("max rel. score change {v}", "<=", "relative change of <R_m q, R_n k> under a shift"),
    "long-term-decay": Figure("bound {v} at distance 1", "falls", "RoFormer bound at distance 1"),
    "toeplitz": Figure("max deviation {v}", "<=", "max |M[i+1, j+1] - M[i, j]|"),
    "monotone": Figure("{v} pair{s} out of order", "=", "neighbouring pairs out of order"),
    "t5-saturation": Figure("{v} bucket{s} used", "=", "distinct buckets used"),
}  # fmt: skip
GENERIC = Figure("{v}", "<=", "")


def _result_dict(r: Any) -> dict[str, Any]:
    """A check result as ``CheckResult.to_json`` gives it (a CheckResult or such a dict)."""
    return dict(r) if isinstance(r, Mapping) else r.to_json()


def _not_run(d: Mapping[str, Any]) -> bool:
    return d.get("status") == "NOT RUN" or d.get("method") == "skipped"


def result_json(r: Any, required: bool | None = None) -> dict[str, Any]:
    """One result for ``--json``: ``CheckResult.to_json`` plus ``status`` NOT RUN for a check that could not
    run, ``needs`` (the properties it waits for), ``unit``, ``comparison`` and ``required``."""
    d = _result_dict(r)
    fig = FIGURES.get(d["name"], GENERIC)
    not_run = _not_run(d)
    status = "NOT RUN" if not_run else d["status"]
    compared = status in ("PASS", "FAIL") and (d.get("tolerance") is not None or fig.op == "falls")
    comparison = fig.op if compared else None
    out = {
        "name": d["name"],
        "status": status,
        "required": required,
        "value": d.get("value"),
        "unit": fig.unit or None,
        "tolerance": d.get("tolerance"),
        "comparison": comparison,
        "detail": d.get("detail", ""),
        "method": d.get("method", ""),
        "data": d.get("data", {}),
        "needs": list(d.get("needs") or (["finite"] if not_run and d["name"] != "finite" else [])),
    }
    if required is None:
        del out["required"]
    return out


def report_json(report: Any) -> dict[str, Any]:
    """A check report (``api.CheckReport`` or its ``to_json()``) for ``--json``: every result as
    :func:`result_json`, ``failed`` the required properties that ran and failed, ``not_run`` the properties that
    could not run. Validates against ``docs/check-report.schema.json``."""
    d = dict(report) if isinstance(report, Mapping) else report.to_json()
    required = list(d["required"])
    results = [result_json(r, r["name"] in required) for r in d["results"]]
    not_run = [r["name"] for r in results if r["status"] == "NOT RUN"]
    against = d.get("against")
    ok, failed = check_verdict(
        {r["name"]: r["status"] for r in results}, required, None if against is None else bool(against["same"])
    )
    return {
        "source": d["source"],
        "tensor": d["tensor"],
        "tensors": list(d.get("tensors") or [d["tensor"]]),
        "not_checked": list(d.get("not_checked", [])),
        "kind": d["kind"],
        "assumed": d.get("assumed", ""),
        "assumed_command": d.get("assumed_command"),
        "ok": ok,
        "required": required,
        "failed": failed,
        "not_run": not_run,
        "unmeasured": list(d.get("unmeasured", [])),
        "not_judged": dict(d.get("not_judged") or {}),
        "arithmetic": d.get("arithmetic"),
        "left_out": d.get("left_out"),
        "against": against,
        "results": results,
    }


def check_json(reports: Sequence[Any]) -> list[dict[str, Any]]:
    """What ``posenc check --json`` prints: one :func:`report_json` per source."""
    return [report_json(r) for r in reports]


# ----- check: the human report -----------------------------------------------------------------------
@dataclass(frozen=True)
class Glyphs:
    ok: str
    bad: str
    info: str
    skip: str
    le: str
    times: str


UNICODE = Glyphs("✓", "✗", "·", "–", "≤", "×")
ASCII = Glyphs("+", "x", ".", "-", "<=", "x")


def figure_text(d: Mapping[str, Any], g: Glyphs = UNICODE) -> tuple[str, str]:
    """(measured figure with its unit, threshold) of one result dict, e.g.
    ``("closest rows 0.96 apart", "needs > 1.73e-05")``."""
    fig = FIGURES.get(d["name"], GENERIC)
    value, tol = d.get("value"), d.get("tolerance")
    if isinstance(value, (float, np.floating)) and isinstance(tol, (float, np.floating, int, np.integer)):
        v_text, t_text = num_pair(value, float(tol))
    else:
        v_text, t_text = num(value), num(tol)
    data = d.get("data") or {}
    extra: dict[str, Any] = {k: fmt(x) for k, x in data.items() if isinstance(x, (int, float, np.number))}
    extra.update({"x": g.times, "s": "" if v_text == "1" else "s"})
    if d["name"] == "decay" and data.get("curve"):
        extra["k"] = list(data["curve"])[-1]
    try:
        text = fig.text.format(v=v_text, **extra)
    except KeyError:
        text = (fig.short or "{v}").format(v=v_text, **extra)
    if value is None:
        text = "-"
    if d.get("status") == "INFO" and fig.op != "report":
        return text, "report"
    if fig.op == "report":
        return text, "report"
    if fig.op == "falls":
        return text, "needs a falling bound"
    if tol is None:
        return text, ""
    op = {"<=": f"{g.le} ", ">": "> ", "=": ""}[fig.op]
    return text, f"needs {op}{t_text}"


def check_lines(
    label: str,
    kind: str | None,
    results: Sequence[Any],
    required: Sequence[str],
    *,
    verbose: bool = False,
    width: int = DEFAULT_WIDTH,
    unicode: bool = True,
    passes: Sequence[Mapping[str, Any]] = (),
) -> list[tuple[str, str | None]]:
    """The check report as ``(line, style)`` pairs, every line at most ``width`` characters.

    Parameters
    ----------
    label : str
        The header, e.g. ``"pe.safetensors [pe]"``.
    kind : str or None
        The kind the table was judged as (None: unknown).
    results : list of CheckResult or dict
        What the checks returned (``CheckResult`` or its ``to_json()``); a result with method ``skipped`` or
        status ``NOT RUN`` did not run.
    required : list of str
        The properties that must hold (others print ``pass``/``fail`` in lowercase).
    verbose : bool
        Add each property's method and detail below it, wrapped and indented.
    width : int
        Columns (at least 40).
    unicode : bool
        Marks ✓ ✗ · – ≤ × (else ASCII ``+ x . - <= x``).
    passes : list of dict
        With ``verbose``: the reads of the table that properties shared (``CheckReport.passes``), one line each.

    Returns
    -------
    list of (str, str or None)
        Lines and their style (green, red, yellow, cyan, bold, dim or None): a header, one line per property
        that ran (``✓ PASS  name  measured figure  threshold``), then one ``– not run, needs finite: a, b`` line
        per group of properties that could not run.
    """
    g = UNICODE if unicode else ASCII
    width = max(int(width), 40)
    dicts = [_result_dict(r) for r in results]
    ran = [d for d in dicts if not _not_run(d)]
    skipped = [d for d in dicts if _not_run(d)]
    lowercase = any(d["name"] not in required and d["status"] in ("PASS", "FAIL") for d in ran)
    head = f"{label}  (kind: {kind})" if kind else f"{label}  (kind unknown: pass --expect KIND)"
    if lowercase:
        head += "; lowercase: not required"
    out: list[tuple[str, str | None]] = [(line, "bold") for line in wrap(head, width)]
    rows = []
    for d in ran:
        status = d["status"]
        req = d["name"] in required
        if status == "PASS":
            mark, word, style = g.ok, "PASS" if req else "pass", "green"
        elif status == "FAIL":
            mark, word, style = g.bad, "FAIL" if req else "fail", "red" if req else "yellow"
        else:
            mark, word, style = g.info, "INFO", "cyan"
        fig, thr = figure_text(d, g)
        rows.append((f"{mark} {word}", d["name"], fig, thr, style, d))
    name_w = max([len(r[1]) for r in rows] + [4])
    fig_w = max([len(r[2]) for r in rows] + [1])
    thr_w = max([len(r[3]) for r in rows] + [0])
    fixed = 6 + 2 + name_w + 2
    fig_w = max(8, min(fig_w, width - fixed - 2 - thr_w))
    for status, name, fig, thr, style, d in rows:
        if len(fig) > fig_w:
            fig = fig[: fig_w - 1] + "…" if unicode else fig[: fig_w - 3] + "..."
        line = f"{status}  {name:<{name_w}}  {fig:<{fig_w}}  {thr}".rstrip()
        if len(line) > width:  # a pathological name: keep the figure, cut the threshold
            line = line[:width]
        out.append((line, style))
        if verbose:
            indent = " " * 8
            for key in ("method", "detail"):
                if d.get(key):
                    out.extend(
                        (s, "dim" if key == "method" else None)
                        for s in wrap(f"{key}: {d[key]}", width, indent, indent + "  ")
                    )
    if verbose:
        for i, p in enumerate(passes, 1):
            text = (
                f"pass {i} over the table ({p['blocks']} block{'s' if p['blocks'] != 1 else ''} of up to "
                f"{-(-p['rows'] // max(1, p['blocks']))} rows) "
                f"shared by {', '.join(p['properties']) or 'no property'}: {'; '.join(p['computed'])}"
            )
            out.extend((s, "dim") for s in wrap(text, width, "", "  "))
    groups: dict[tuple[str, ...], list[str]] = {}
    for d in skipped:
        needs = tuple(d.get("needs") or (["finite"] if d["name"] != "finite" else []))
        groups.setdefault(needs, []).append(d["name"])
    for needs, names in groups.items():
        why = f"not run, needs {', '.join(needs)}: " if needs else "not run: "
        for s in wrap(why + ", ".join(names), width, f"{g.skip} ", " " * 8):
            out.append((s, "yellow"))
    return out


def verdict_line(
    label: str, ok: bool, failed: Sequence[str], not_run: Sequence[str] = (), needs: Sequence[str] = ("finite",)
) -> str:
    """The one-line verdict of a check: ``LABEL: every required property holds`` or ``LABEL: required
    properties failed: a, b; not run (needs finite): c, d``."""
    if ok:
        return f"{label}: every required property holds"
    parts = []
    if failed:
        parts.append(f"required properties failed: {', '.join(failed)}")
    if not_run:
        parts.append(f"required properties not run (needs {', '.join(needs)}): {', '.join(not_run)}")
    return f"{label}: " + ("; ".join(parts) or "required properties failed")


def check_table(
    label: str,
    kind: str | None,
    results: Sequence[Any],
    required: Sequence[str],
    *,
    verbose: bool = False,
    width: int | None = None,
    file: IO[str] | None = None,
    passes: Sequence[Mapping[str, Any]] = (),
) -> None:
    """Print the check report (:func:`check_lines`) on stdout, fitted to the terminal or ``COLUMNS``."""
    stream = sys.stdout if file is None else file
    lines = check_lines(
        label,
        kind,
        results,
        required,
        verbose=verbose,
        width=term_width(stream) if width is None else width,
        unicode=use_unicode(stream),
        passes=passes,
    )
    _emit(lines, stream)


def check_summary(
    label: str,
    ok: bool,
    failed: Sequence[str],
    *,
    results: Sequence[Any] | None = None,
    quiet: int = QUIET_NONE,
    file: IO[str] | None = None,
) -> None:
    """The verdict line on stderr; never hard-wrapped, coloured only on a terminal.

    Parameters
    ----------
    label : str
        The source, as the line starts (``LABEL: every required property holds``).
    ok : bool
        The verdict.
    failed : list of str
        Required properties that failed (the engine's list; may include ones that could not run).
    results : list of CheckResult or dict, optional
        When given, required properties that could not run are named as such instead of as failures.
    quiet : int
        0 or 1: print the line; 2: print nothing.
    file : text stream, optional
        Default ``sys.stderr``.
    """
    if quiet >= QUIET_ALL:
        return
    stream = sys.stderr if file is None else file
    not_run: list[str] = []
    needs: list[str] = []
    if results is not None:
        dicts = {d["name"]: d for d in map(_result_dict, results)}
        not_run = [n for n in failed if n in dicts and _not_run(dicts[n])]
        for n in not_run:
            needs.extend(x for x in (dicts[n].get("needs") or ["finite"]) if x not in needs)
        failed = [n for n in failed if n not in not_run]
    line = verdict_line(label, ok, failed, not_run, needs or ["finite"])
    _emit([(line, "green" if ok else "red")], stream)


def check_report(report: Any, *, quiet: int = QUIET_NONE, verbose: bool = False) -> None:
    """One source's whole human output: what ``posenc check`` prints per source.

    Parameters
    ----------
    report : api.CheckReport or dict
        The report or its ``to_json()``.
    quiet : int
        0: the report on stdout and the verdict on stderr; 1: the verdict only; 2: nothing.
    verbose : bool
        Method and detail below each property.
    """
    d = dict(report) if isinstance(report, Mapping) else report.to_json()
    if quiet < QUIET_VERDICT:
        tensors = ", ".join(d.get("tensors") or [d["tensor"]])
        check_table(
            f"{d['source']} [{tensors}]",
            d["kind"],
            d["results"],
            d["required"],
            verbose=verbose,
            passes=d.get("passes") or (),
        )
        _emit(check_notes(d, width=term_width(sys.stdout), verbose=verbose), sys.stdout)
    failed = list(d["failed"])
    if d.get("against") is not None and not d["against"]["same"]:
        failed = [f"matches {d['against']['b']}" if n == AGAINST else n for n in failed]
        if f"matches {d['against']['b']}" not in failed:
            failed.append(f"matches {d['against']['b']}")
    check_summary(d["source"], d["ok"], failed, results=d["results"], quiet=quiet)


def check_notes(
    d: Mapping[str, Any], *, width: int = DEFAULT_WIDTH, verbose: bool = False
) -> list[tuple[str, str | None]]:
    """What a check report says below its properties: what a kindless table was taken to be, the tensors left
    out and the properties they would have shown, and the comparison with ``--against`` (with why they differ)."""
    out: list[tuple[str, str | None]] = []

    def note(text: str, style: str | None = None, indent: str = "  ") -> None:
        out.extend((s, style) for s in wrap(text, width, "", indent))

    if d.get("assumed"):
        if d.get("assumed_command"):
            note(f"identified (no kind in the file): {d['assumed']}", "cyan")
            out.extend((s, None) for s in command_lines(d["assumed_command"], width))
        else:
            note(f"not identified: {d['assumed']}", "yellow")
    if d.get("not_checked"):
        note(f"not checked (--tensor): {', '.join(d['not_checked'])}", "yellow")
    if d.get("unmeasured"):
        note(f"not measurable on these tensors: {', '.join(d['unmeasured'])}", "yellow")
    if d.get("left_out"):
        note(d["left_out"]["text"], "yellow")
    arith = d.get("arithmetic")
    if arith and (arith["compute"] != "float64" or arith["source"] == "assumed"):  # what widened or was assumed
        note(f"arithmetic: {arith['text']}", None)
    judged = d.get("not_judged") or {}
    if judged:
        by_why: dict[str, list[str]] = {}
        for name, why in judged.items():
            by_why.setdefault(why, []).append(name)
        for why, names in by_why.items():
            note(f"not judged ({why}): {', '.join(names)}", "yellow")
    cmp = d.get("against")
    if cmp is not None:
        if cmp["same"]:
            formulas = [tc["formula"] for tc in cmp["tensors"] if tc.get("formula")]
            worst = max(formulas, key=lambda f: f["bound"], default=None)
            within = (
                f" within the float32 formula's error (bound {worst['bound']:.2g} at row {worst['bound_row']})"
                if worst
                else ""
            )
            rounded = sorted({tc["precision"] for tc in cmp["tensors"] if tc.get("precision")})
            within += "".join(f" within {p} rounding" for p in rounded)
            note(f"against {cmp['b']}: SAME (every tensor){within}", "green")
            if cmp.get("skipped"):
                note(f"not compared: {', '.join(cmp['skipped'])} (only the spec computes them)", None)
        for tc in cmp["tensors"]:
            if tc["same"]:
                continue
            note(f"against {cmp['b']} [{tc['b']}]: DIFFERENT: {tc['reason']}", "red")
            diag = tc.get("diagnosis")
            if diag is not None:
                found = diag.get("explanations") or []
                out.extend(
                    why_lines(
                        [(e["summary"], None) for e in (found if verbose else found[:1])], diag.get("reason", ""), width
                    )
                )
        for side, key in ((cmp["a"], "only_in_a"), (cmp["b"], "only_in_b")):
            if cmp.get(key):
                note(f"only in {side}: {', '.join(cmp[key])}", "red")
    return out


# ----- compare ---------------------------------------------------------------------------------------
def compare_lines(res: Any, label_a: str, label_b: str, *, width: int = DEFAULT_WIDTH) -> list[tuple[str, str | None]]:
    """One line per metric (``metric  value``), at most ``width`` characters; the verdict is not among them
    (:func:`compare_verdict`)."""
    width = max(int(width), 40)
    out: list[tuple[str, str | None]] = [(s, "bold") for s in wrap(f"{label_a}  vs  {label_b}", width)]
    rows = [("shapes", f"{tuple(res.shape_a)} vs {tuple(res.shape_b)}")]
    if tuple(res.shape_a) == tuple(res.shape_b):
        where = ""
        if res.max_abs_at:
            where = f" at {tuple(res.max_abs_at)}: {num(res.value_a, 6)} vs {num(res.value_b, 6)}"
        rows.append(("max abs difference", num(res.max_abs, 4) + where))
        rows.append(("max relative difference", num(res.max_rel, 4)))
        rows.append(("max ulp difference", f"{num(res.max_ulp, 3)} ulp"))
        rows.append(("mean abs difference", num(res.mean_abs, 4)))
        if res.min_cosine is not None:
            rows.append(("min row cosine similarity", f"{num(res.min_cosine, 6)} (row {res.min_cosine_row})"))
        share = f" ({100 * res.mismatched / res.total:.3g}%)" if res.total and res.mismatched else ""
        # beyond atol, yet the same: within the float32 formula's bound, or the rounding to a coarser dtype
        excused = getattr(res, "formula", None) or getattr(res, "precision", "")
        if excused and res.mismatched:
            within = "the float32 formula's bound" if getattr(res, "formula", None) else f"{res.precision} rounding"
            rows.append(("elements beyond atol", f"{res.mismatched} of {res.total}{share}, each within {within}"))
        else:
            rows.append(("elements beyond tolerance", f"{res.mismatched} of {res.total}{share}"))
    rows.append(("tolerance", f"atol {num(res.atol)}, rtol {num(res.rtol)}"))
    if getattr(res, "formula", None):
        f = res.formula
        rows.append(
            ("float32 formula", f"bound {num(f['bound'], 3)} at row {f['bound_row']} (the error grows with position)")
        )
    if getattr(res, "note", ""):
        rows.append(("taken into account", res.note))
    key_w = max(len(k) for k, _ in rows)
    for key, value in rows:
        out.extend((s, None) for s in wrap(f"{key:<{key_w}}  {value}", width, "", " " * (key_w + 2)))
    return out


def compare_verdict(res: Any, label_a: str, label_b: str) -> str:
    """``A vs B: SAME`` or ``A vs B: DIFFERENT: <reason>`` on one line."""
    word = "SAME" if res.same else "DIFFERENT"
    formulas = [t.result.formula for t in getattr(res, "tensors", [])] or [getattr(res, "formula", None)]
    worst = max((f for f in formulas if f), key=lambda f: f["bound"], default=None)
    if res.same and worst is not None:
        word += f" within the float32 formula's error (bound {worst['bound']:.2g} at row {worst['bound_row']})"
    rounded = sorted({p for t in getattr(res, "tensors", []) if (p := getattr(t.result, "precision", ""))})
    rounded = rounded or ([res.precision] if getattr(res, "precision", "") else [])
    if res.same:
        word += "".join(f" within {p} rounding" for p in rounded)
    return f"{label_a} vs {label_b}: {word}" + (f": {res.reason}" if res.reason else "")


def compare_table(
    res: Any, label_a: str, label_b: str, *, width: int | None = None, file: IO[str] | None = None
) -> None:
    """Print the compare metrics (:func:`compare_lines`) on stdout."""
    stream = sys.stdout if file is None else file
    _emit(compare_lines(res, label_a, label_b, width=term_width(stream) if width is None else width), stream)


def compare_summary(
    res: Any, label_a: str, label_b: str, *, quiet: int = QUIET_NONE, file: IO[str] | None = None
) -> None:
    """The compare verdict line on stderr, like :func:`check_summary` (nothing at ``quiet >= 2``)."""
    if quiet >= QUIET_ALL:
        return
    stream = sys.stderr if file is None else file
    _emit([(compare_verdict(res, label_a, label_b), "green" if res.same else "red")], stream)


def compare_report(res: Any, *, quiet: int = QUIET_NONE) -> None:
    """The whole human output of ``posenc compare``.

    Parameters
    ----------
    res : compare.CompareResult
        The comparison (its ``labels`` name the two sides).
    quiet : int
        0: one line per metric on stdout and the verdict on stderr; 1: the verdict only; 2: nothing.
    """
    a, b = res.labels.get("a", "A"), res.labels.get("b", "B")
    if quiet < QUIET_VERDICT:
        compare_table(res, a, b)
    compare_summary(res, a, b, quiet=quiet)


def why_lines(found: Sequence[tuple[str, str | None]], reason: str, width: int) -> list[tuple[str, str | None]]:
    """``why: ...`` lines under a difference: each explanation's summary (bold) with its detail when given, or
    ``why: not found; REASON`` when there is none (compare's report and check --against share them)."""
    out: list[tuple[str, str | None]] = []
    for summary, detail in found:
        out.extend((s, "bold") for s in wrap(f"why: {summary}", width, "", "     "))
        if detail:
            out.extend((s, None) for s in wrap(detail, width, "     ", "     "))
    if not found:
        out.extend((s, None) for s in wrap(f"why: not found; {reason}", width, "", "     "))
    return out


def comparison_report(cmp: Any, *, quiet: int = QUIET_NONE, verbose: bool = False) -> None:
    """The human output of ``posenc compare`` for every tensor pair (``api.Comparison``): each pair's metrics and,
    where they differ, the explanation found (``why:``) with the residual after undoing it; tensors on one side
    only; the verdict line on stderr."""
    stream = sys.stdout
    if quiet < QUIET_VERDICT:
        width = term_width(stream)
        for lim in getattr(cmp, "limits", []):  # an engine's limit: a difference, the rows it computes below
            _emit([(s, "red") for s in wrap(f"limit: {lim.line()}", width, "", "  ")], stream)
        if not cmp.same:  # an engine's rules that make its table differ from HF's
            for rule in getattr(cmp, "rules", []):
                _emit([(s, "red") for s in wrap(f"rule: {rule}", width, "", "  ")], stream)
        for i, tc in enumerate(cmp.tensors):
            res = tc.result
            if i:
                stream.write("\n")
            _emit(
                compare_lines(res, res.labels.get("a", tc.name_a), res.labels.get("b", tc.name_b), width=width), stream
            )
            d = tc.diagnosis
            if d is not None and not res.same:
                found = [
                    (
                        e.summary,
                        f"steps {e.name}; residual max abs {num(e.residual_max_abs)} "
                        f"({num(e.residual_ulp)} ulp of {e.ulp_dtype}) on {e.rows_checked} rows"
                        if verbose
                        else None,
                    )
                    for e in (d.explanations if verbose else d.explanations[:1])
                ]
                _emit(why_lines(found, d.reason, width), stream)
        for label, names in ((cmp.label_a, cmp.only_a), (cmp.label_b, cmp.only_b)):
            if names:
                _emit([(s, "red") for s in wrap(f"only in {label}: {', '.join(names)}", width)], stream)
        if getattr(cmp, "skipped", None):
            by = getattr(cmp, "skipped_by", "") or cmp.label_b
            held = cmp.label_a if by == cmp.label_b else cmp.label_b
            note = f"not compared: {', '.join(cmp.skipped)} (computed by {by}, not in {held})"
            _emit([(s, None) for s in wrap(note, width)], stream)
    compare_summary(cmp, *_typed_labels(cmp), quiet=quiet)


def _typed_labels(cmp: Any) -> tuple[str, str]:
    """The two sides' labels, the attention type compared added where a label does not say it already."""
    lt = getattr(cmp, "layer_type", None)
    labels = (cmp.label_a, cmp.label_b)
    if lt is None:
        return labels
    return labels[0], labels[1] if f"[{lt}]" in labels[0] + labels[1] else f"{labels[1]} [{lt}]"


# ----- verdicts against a model config: a GGUF file, an ONNX model ---------------------------------------
def gguf_verdict_lines(v: Any, width: int = DEFAULT_WIDTH) -> list[str]:
    """The report for people of llama.cpp's tables for a GGUF file against HF's (``models.llamacpp.Verdict``),
    one finding a line, each wrapped under its own indent."""
    data = v.to_json()
    head = "agree" if v.ok else f"DIFFER ({len(v.divergences)} divergence(s))"
    out = wrap(f"{v.gguf}: the tables llama.cpp computes vs HF's for {v.config} (as {data['llama_cpp']})", width,
               "", "    ")  # fmt: skip
    out += wrap(f"at --n-ctx {v.n_ctx}, --len {v.length}: {head}", width, "", "    ")
    for word, items in (("divergence", v.divergences), ("equivalent", v.equivalences), ("note", v.notes)):
        for item in items:
            out += wrap(f"{word}: {item}", width, "  ", "      ")
    return out


def weights_check_lines(w: Any, width: int = DEFAULT_WIDTH) -> list[str]:
    """The report for people of a conversion's query/key weights against HF's
    (``models.qk_weights.WeightsCheck``): the verdict, each finding, what was compared and expected."""
    head = {"agree": "agree", "differ": f"DIFFER ({len(w.findings)} divergence(s))"}.get(w.status, "not checked")
    out = wrap(f"{w.gguf}: the query/key weights vs HF's in {w.hf}: {head}", width, "", "    ")
    out += wrap(w.summary, width, "  ", "      ")
    for word, items in (("divergence", w.findings[1:] if w.status == "differ" else w.findings),
                        ("note", w.notes), ("expected", [w.expected] if w.expected else [])):  # fmt: skip
        for item in items:
            out += wrap(f"{word}: {item}", width, "  ", "      ")
    return out


def onnx_check_lines(r: Any, *, verbose: bool = False, width: int = DEFAULT_WIDTH) -> list[str]:
    """The report for people of an ONNX model's caches against its config (``models.onnx.OnnxCheck``): the
    verdict, each divergence, and what matched (always when it agrees, else with ``verbose``)."""
    verdict = "OK" if r.ok else f"{len(r.divergences)} divergence(s)"
    out = wrap(f"{r.label} against {r.against} ({r.engine}): {verdict}", width, "", "    ")
    for d in r.divergences:
        out += wrap(d, width, "  DIVERGES ", "    ")
    if verbose or r.ok:
        for m in r.matched:
            out += wrap(m, width, "  ok ", "    ")
    return out


def verdicts_json(v: Any) -> Any:
    """What ``--json`` prints for a command's :class:`posenc_cli.reports.Verdicts`: a list of check reports; a
    comparison (a list of them, one per attention type, for a model with several); a GGUF or ONNX verdict (a list
    of them for several)."""
    if v.what == "check":
        return check_json(v.items)
    items = [r.to_json() for r in v.items]
    return items[0] if len(items) == 1 else items


def verdicts_report(v: Any, *, quiet: int = QUIET_NONE, verbose: bool = False) -> None:
    """The human output of a command's :class:`posenc_cli.reports.Verdicts`, each report in order: the warnings
    of reading the sources on stderr first."""
    for w in v.warnings:
        if not quiet:
            sys.stderr.write(f"Warning: {w}\n")
    if v.what == "check":
        for r in v.items:
            check_report(r, quiet=quiet, verbose=verbose)
    elif v.what == "compare":
        for i, cmp in enumerate(v.items):
            if i and quiet < QUIET_VERDICT:
                sys.stdout.write("\n")
            comparison_report(cmp, quiet=quiet, verbose=verbose)
    elif quiet < QUIET_ALL:
        width = DEFAULT_WIDTH  # a verdict's findings wrap at 80 on any terminal, as in CI logs
        for r in v.items:
            if v.what == "mlx" or hasattr(r, "findings"):  # a conversion's weights (MLX; ONNX initializers)
                lines = weights_check_lines(r, width)
            elif v.what == "gguf":
                lines = gguf_verdict_lines(r, width)
            else:
                lines = onnx_check_lines(r, verbose=verbose, width=width)
            sys.stdout.write("\n".join(lines) + "\n")


def render_verdicts(v: Any, *, json_out: bool, quiet: int = QUIET_NONE, verbose: bool = False) -> None:
    """A command's verdicts for people, or as ``--json`` on stdout (the warnings still on stderr)."""
    if json_out:
        for w in v.warnings:
            if not quiet:
                sys.stderr.write(f"Warning: {w}\n")
        print_json(verdicts_json(v))
    else:
        verdicts_report(v, quiet=quiet, verbose=verbose)


# ----- identify --------------------------------------------------------------------------------------
def command_lines(command: str, width: int, indent: str = "  ") -> list[str]:
    """A shell command in lines of at most ``width`` characters, broken between words with `` \\``
    continuations, so that it still pastes as one command (a word longer than a line stays whole)."""
    import shlex

    words = [shlex.quote(w) for w in shlex.split(command)]
    lines: list[str] = []
    cur = indent
    for w in words:
        sep = "" if cur.strip() == "" else " "
        if cur.strip() and len(cur) + len(sep) + len(w) + 2 > width:
            lines.append(cur + " \\")
            cur = indent + "    " + w
        else:
            cur += sep + w
    lines.append(cur)
    return lines


def identification_lines(
    found: Any, label: str, *, verbose: bool = False, width: int = DEFAULT_WIDTH
) -> list[tuple[str, str | None]]:
    """``posenc identify``'s report: the kind and parameters found with the command that regenerates the table
    and its residual, or why nothing was identified and the closest readings (every reading with ``verbose``)."""
    width = max(int(width), 40)
    d = found if isinstance(found, Mapping) else found.to_json()
    shape = "x".join(map(str, d["shape"]))
    out: list[tuple[str, str | None]] = [(s, "bold") for s in wrap(f"{label}  ({shape} {d['dtype']})", width)]

    def line(text: str, style: str | None = None, indent: str = "", more: str = "  ") -> None:
        out.extend((s, style) for s in wrap(text, width, indent, more))

    best = d["best"]
    if best is not None:
        line(f"identified: {d['summary']}", "green", "", "  ")
        line("regenerate with:")
        out.extend((s, None) for s in command_lines(d["command"], width))
        others = [c for c in d["candidates"] if c["accounts"] and c is not best and c["command"] != d["command"]]
        if others and verbose:
            line("also reproduced by:", None)
            for c in others:
                line(f"- {c['command']}", None, "  ", "    ")
    else:
        line(f"not identified: {d['reason']}", "red", "", "  ")
    for name, why in (d.get("skipped") or {}).items():
        line(f"skipped {name}: {why}", None, "", "  ")
    if d.get("left_out"):
        line(d["left_out"]["text"].replace(": not checked", ": not identified"), "yellow", "", "  ")
    tried = [c for c in d["candidates"] if not c["accounts"]]
    if tried:
        # the closest is named in the reason already
        shown = tried if verbose else tried[1:4] if best is None else []
        if shown:
            line("readings tried:" if verbose else "other readings:")
        for c in shown:
            cos = c["cosine"]
            cos_text = f", cosine {cos:.3g}" if isinstance(cos, float) else ""
            line(f"- {c['label']}{cos_text}: {c['why']}", None, "  ", "    ")
    return out


def identification_json(found: Any, label: str) -> dict[str, Any]:
    """What ``posenc identify --json`` prints: the source's label and the identification."""
    return {"source": label, **found.to_json()}


def identification_report(found: Any, label: str, *, verbose: bool = False, quiet: int = QUIET_NONE) -> None:
    """The human output of ``posenc identify``: the report on stdout (:func:`identification_lines`) and a verdict
    line on stderr."""
    groups = dict(getattr(found, "groups", {}) or {}) or {"": found}
    if quiet < QUIET_VERDICT:
        for i, (g, one) in enumerate(groups.items()):
            if i:
                sys.stdout.write("\n")
            where = f"{label} [{g}]" if g else label
            _emit(identification_lines(one, where, verbose=verbose, width=term_width(sys.stdout)), sys.stdout)
    if quiet < QUIET_ALL:
        for g, one in groups.items():
            where = f"{label} [{g}]" if g else label
            ok = one.best is not None
            text = f"{where}: identified as {one.best.label()}" if ok else f"{where}: not identified"
            _emit([(text, "green" if ok else "red")], sys.stderr)


# ----- generate: the preview -------------------------------------------------------------------------
def vector_text(name: str, values: np.ndarray, precision: int, width: int) -> str:
    """``name (n) = [a b c ... x y z]`` in at most ``width`` characters: as many leading and trailing values as
    fit, the middle elided."""
    v = np.asarray(values, dtype=np.float64).ravel()
    full = np.array2string(v, precision=precision + 1, threshold=v.size + 1, max_line_width=10**9)
    items = full.strip("[]").split()
    prefix = f"{name} ({v.size}) = ["
    whole = prefix + " ".join(items) + "]"
    if len(whole) <= width:
        return whole
    best = prefix + items[0] + " ...]"
    for k in range(1, (len(items) + 1) // 2 + 1):
        text = prefix + " ".join(items[:k]) + " ... " + " ".join(items[-k:]) + "]"
        if len(text) > width:
            break
        best = text
    return best


def matrix_text(corner: np.ndarray, precision: int, width: int) -> tuple[str, int]:
    """The corner of a table as NumPy prints it, with as many leading columns as fit ``width``; (text, columns)."""
    grid = np.asarray(corner)
    grid = grid.reshape(grid.shape[0], -1) if grid.ndim > 1 else grid.reshape(-1, 1)
    integer = grid.dtype.kind in "iub"
    for cols in range(min(grid.shape[1], width // 2), 0, -1):  # a column takes at least 2 characters
        part = grid[:, :cols]
        if integer:
            text = np.array2string(part.astype(np.int64), max_line_width=10**9, threshold=10**9)
        else:
            text = np.array2string(
                part.astype(np.float64),
                precision=precision,
                suppress_small=True,
                floatmode="fixed",
                max_line_width=10**9,
                threshold=10**9,
            )
        if max(len(s) for s in text.splitlines()) <= width or cols == 1:
            return text, cols
    return text, 1  # pragma: no cover - the loop always returns


def preview_lines(
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
    *,
    width: int = DEFAULT_WIDTH,
    head: int | None = None,
    max_rows: int = 10,
) -> list[tuple[str, str | None]]:
    """The preview of ``posenc generate`` as ``(line, style)`` pairs, every line at most ``width`` characters.

    Parameters
    ----------
    title : str
        First line, e.g. ``"rope positional encoding"``.
    specs : list of (name, shape, dtype name)
        Every tensor.
    params : dict
        Every parameter (wrapped at commas).
    primary : str
        The tensor whose corner is shown.
    corner : ndarray
        Its top-left rows (2-D; for a heads x len x len tensor, one head's rows, or all heads' rows).
    shape : tuple of int
        The primary tensor's full shape.
    value_range : (float, float) or None
        Its smallest and largest values (integers print as integers).
    range_note : str
        Appended to the range, e.g. ``" (sampled rows)"``.
    small : dict of name -> 1-D array
        Short vectors shown on one line each, the middle elided to fit (``inv_freq``, ``slopes``).
    precision : int
        Decimals of the corner.
    width : int
        Columns (at least 40); columns of the corner that do not fit are dropped and the header says which show.
    head : int, optional
        Which head ``corner`` belongs to (default 0 when ``shape`` has 3 axes): the header says
        ``bias head 0 of 8``.
    max_rows : int
        Rows of the corner shown.
    """
    width = max(int(width), 40)
    out: list[tuple[str, str | None]] = [(title, "bold")]
    keys = [f"tensor {name}" for name, _, _ in specs] + ["parameters", "value range"]
    key_w = max(len(k) for k in keys) + 2
    pad = " " * key_w
    for name, shp, dt in specs:
        line = f"{'tensor ' + name:<{key_w}}{' x '.join(map(str, shp))}  {dt}"
        out.extend((s, None) for s in wrap(line, width, "", pad))
    out.extend(
        (s, None)
        for s in wrap(f"{'parameters':<{key_w}}" + ", ".join(f"{k}={v}" for k, v in params.items()), width, "", pad)
    )
    if value_range is not None:
        lo, hi = value_range
        integer = any(name == primary and np.dtype(dt).kind in "iub" for name, _, dt in specs if dt != "bfloat16")
        show = (lambda x: num(x, 6)) if integer else fmt
        line = f"{'value range':<{key_w}}[{show(lo)}, {show(hi)}]{range_note}"
        out.extend((s, None) for s in wrap(line, width, "", pad))
    for name, arr in small.items():
        out.append((vector_text(name, arr, precision, width), None))
    grid = np.asarray(corner)
    if len(shape) >= 3 and grid.ndim == len(shape):
        grid = grid[0 if head is None else head]
    if len(shape) >= 3 and head is None:
        head = 0
    grid = grid[:max_rows]
    text, cols = matrix_text(grid, precision, width)
    rows_total, cols_total = (shape[-2], shape[-1]) if len(shape) >= 2 else (shape[0], 1)
    rows_shown = grid.shape[0]
    where = [f"head {head} of {shape[0]}"] if len(shape) >= 3 else []
    where.append(f"rows 0..{rows_shown - 1}" + (f" of {rows_total}" if rows_total > rows_shown else ""))
    if len(shape) >= 2 and cols_total > cols:
        where.append(f"columns 0..{cols - 1} of {cols_total}")
    out.extend((s, "bold") for s in wrap(f"{primary} " + ", ".join(where), width))
    out.extend((s, None) for s in text.splitlines())
    return out


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
    *,
    head: int | None = None,
    width: int | None = None,
) -> None:
    """Print :func:`preview_lines` on stdout, fitted to the terminal or ``COLUMNS``."""
    stream = sys.stdout
    w = term_width(stream) if width is None else width
    _emit(
        preview_lines(
            title, specs, params, primary, corner, shape, value_range, range_note, small, precision, width=w, head=head
        ),
        stream,
    )


# ----- kinds -----------------------------------------------------------------------------------------
def grid_lines(
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    flex: int,
    indent: str = "",
    gap: int = 2,
    max_first: int | None = None,
) -> list[str]:
    """Columns of wrapped text: each column as wide as its widest cell except ``flex``, which takes the rest of
    ``width``; a first-column cell wider than ``max_first`` gets a line of its own. Words are never split
    unless one is wider than its whole column."""
    ncol = len(rows[0])
    widths = [max(len(r[i]) for r in rows) for i in range(ncol)]
    if max_first is not None:
        widths[0] = min(widths[0], max_first)
    room = width - len(indent) - gap * (ncol - 1) - sum(w for i, w in enumerate(widths) if i != flex)
    widths[flex] = max(12, min(widths[flex], room))
    out = []
    sep = " " * gap
    for row in rows:
        cells = list(row)
        if len(cells[0]) > widths[0]:
            out.append((indent + cells[0]).rstrip())
            cells[0] = ""
        wrapped = [wrap(c, widths[i]) for i, c in enumerate(cells)]
        for k in range(max(len(w) for w in wrapped)):
            parts = [(w[k] if k < len(w) else "").ljust(widths[i]) for i, w in enumerate(wrapped)]
            out.append((indent + sep.join(parts)).rstrip())
    return out


def kinds_lines(rows: list[dict[str, Any]], *, width: int = DEFAULT_WIDTH) -> list[tuple[str, str | None]]:
    """``posenc kinds``: kind, summary (wrapped at words), tensors, at most ``width`` characters a line."""
    width = max(int(width), 40)
    table = [["kind", "summary", "tensors"]] + [[r["kind"], r["summary"], ", ".join(r["tensors"])] for r in rows]
    lines = grid_lines(table, width, flex=1)
    return [("posenc kinds", "bold"), (lines[0], "bold")] + [(s, None) for s in lines[1:]]


def kinds_list(rows: list[dict[str, Any]], *, width: int | None = None) -> None:
    stream = sys.stdout
    _emit(kinds_lines(rows, width=term_width(stream) if width is None else width), stream)


def kind_detail_lines(info: dict[str, Any], *, width: int = DEFAULT_WIDTH) -> list[tuple[str, str | None]]:
    """``posenc kinds KIND``: summary, tensors, parameters, presets, references; at most ``width`` a line."""
    width = max(int(width), 40)
    out: list[tuple[str, str | None]] = [(s, None) for s in wrap(f"{info['kind']}: {info['summary']}", width, "", "  ")]
    out.extend(
        (s, None) for s in wrap(f"tensors: {', '.join(info['tensors'])} (primary: {info['primary']})", width, "", "  ")
    )
    out.append(("parameters", "bold"))
    table = [["name", "type", "default", "meaning"]]
    for p in info["parameters"]:
        meaning = p["help"] + (f" (choices: {', '.join(p['choices'])})" if p["choices"] else "")
        table.append([p["name"], p["type"], "-" if p["default"] is None else str(p["default"]), meaning])
    for i, s in enumerate(grid_lines(table, width, flex=3, indent="  ", max_first=24)):
        out.append((s, "dim" if i == 0 else None))
    if info["presets"]:
        out.append(("presets", "bold"))
        name_w = max(len(n) for n in info["presets"]) + 2
        pad = "  " + " " * name_w
        for name, p in info["presets"].items():
            sets = ", ".join(f"{k}={v}" for k, v in p["sets"].items())
            out.extend((s, None) for s in wrap(f"{name:<{name_w}}{sets}", width, "  ", pad))
            if p["doc"]:
                out.extend((s, "dim") for s in wrap(p["doc"], width, pad, pad))
    props = info.get("properties") or {}  # main's kind_info: name -> "required" | "reported"
    if props:
        required = [n for n, how in props.items() if how == "required"]
        reported = [n for n, how in props.items() if how != "required"]
        out.extend((s, None) for s in wrap(f"check requires: {', '.join(required)}", width, "", "  "))
        if reported:
            out.extend((s, None) for s in wrap(f"check also reports: {', '.join(reported)}", width, "", "  "))
    if info["references"]:
        out.append(("reproduces", "bold"))
        for ref in info["references"]:
            out.extend((s, None) for s in wrap(ref, width, "  - ", "    "))
    return out


def kind_detail(info: dict[str, Any], *, width: int | None = None) -> None:
    stream = sys.stdout
    _emit(kind_detail_lines(info, width=term_width(stream) if width is None else width), stream)


# ----- kinds --hf-config (ported from main) -----------------------------------------------------------
def config_report(report: dict[str, Any], width: int | None = None, quiet: int = 0) -> None:
    """What a model config said, one value per line with where it came from, within ``width`` columns
    (default: the terminal's width, at most 100; piped, 80 whatever the terminal, so logs do not depend on it)."""
    if width is None:
        width = min(term_width(sys.stdout), 100) if sys.stdout.isatty() else DEFAULT_WIDTH
    out = sys.stdout
    types = report.get("layer_types") or []
    head = f"model_type {report['model_type']}: read as {report['family'] or 'generic'} ({report['kind']} tables)"
    out.write(head + "\n")
    if report.get("model_type_from"):
        out.write("\n".join(wrap(f"model_type from: {report['model_type_from']}", width, "", "  ")) + "\n")
    if types:
        chosen = report.get("layer_type")
        nope = report.get("nope_layer_types") or []
        line = f"layer types: {', '.join(types)}" + (f"; showing {chosen}" if chosen else "")
        line += f"; no positions in: {', '.join(nope)}" if nope else ""
        out.write("\n".join(wrap(line, width, "", "  ")) + "\n")
    out.write("\n".join(wrap(f"follows: {report['reference']}", width, "", "  ")) + "\n")
    values = {k: v for k, v in report.items() if isinstance(v, dict) and "value" in v}
    name_w = max(len(k) for k in values) if values else 0
    for key, v in values.items():
        line = f"  {key:<{name_w}}  {v['value']}"
        origin = f"({v['from']})"
        if len(line) + 2 + len(origin) <= width:
            out.write(f"{line}  {origin}\n")
        else:
            out.write(line + "\n" + "".join(f"{w}\n" for w in wrap(origin, width, " " * 6)))
    by_reason: dict[str, list[str]] = {}
    for key, why in (report.get("ignored") or {}).items():
        by_reason.setdefault(why, []).append(key)
    for why, keys in by_reason.items():
        out.write("\n".join(wrap(f"ignored ({why}): {', '.join(keys)}", width, "", "  ")) + "\n")
    for w in [] if quiet else report.get("warnings") or []:
        sys.stderr.write(f"Warning: {w}\n")


# ----- kinds: the registry, a model config, a GGUF file, the engines ----------------------------------
def description_report(
    d: Any, *, json_out: bool = False, quiet: int = QUIET_NONE, spell: Callable[[str], str | None] | None = None
) -> None:
    """What ``posenc kinds`` prints for a :class:`posenc_cli.reports.Description`, for people or as ``--json``;
    ``spell`` names a parameter as the caller does (the command line: its flag) where an engine's rule needs
    one."""
    if d.what == "gguf":
        rows = d.data
        if json_out:
            print_json([{"name": n, "value": v, "from": f} for n, v, f in rows])
            return
        for name, value, origin in rows:
            if name == "warning":
                if not quiet:
                    sys.stderr.write(f"Warning: {value}\n")
                continue
            line = f"{name:<22} {value}" + (f"  ({origin})" if origin else "")
            print("\n".join(wrap(line, 80, "", " " * 23)))
        return
    if d.what == "engines":
        for row in d.data:  # an option a rule needs, spelled as the caller gives it
            exc = row.pop("error", None)
            if exc is not None:
                row["note"] = exc.render(spell) if spell is not None else str(exc)
        if json_out:
            print_json(d.data)
            return
        for row in d.data:
            verdict = "DIFFERS" if row["differs"] else ("n/a" if row["note"] else "same as hf")
            print(f"{row['engine']:<11} {verdict:<10} {row['version']}")
            for r in row["rules"]:
                print("\n".join(wrap(f"{r['says']} ({r['source']})", 74, "  rule: ", " " * 8)))
            for lim in row.get("limits", ()):
                text = f"no table from position {lim['from_position']} on: {lim['says']} ({lim['source']})"
                print("\n".join(wrap(text, 73, "  limit: ", " " * 9)))
            if row["note"]:
                print("\n".join(wrap(row["note"], 76, "  ", "    ")))
        return
    if d.what == "config":
        if json_out:
            for w in dict.fromkeys(w for r in d.data for w in r.get("warnings") or []):
                if not quiet:
                    sys.stderr.write(f"Warning: {w}\n")
            print_json(d.data if d.several else d.data[0])
            return
        for i, report in enumerate(d.data):
            if i:
                print()
            config_report(report, quiet=quiet)
        return
    if json_out:
        print_json(d.data)
    elif d.what == "kinds":
        kinds_list(d.data)
    else:
        kind_detail(d.data)


# ----- progress --------------------------------------------------------------------------------------
#: A table checked with a progress bar is at least this big (a smaller one is done before a bar would show).
PROGRESS_BYTES = 32 * 1024**2


@contextmanager
def table_progress(description: str, nbytes: int) -> Iterator[Any]:
    """A progress bar for one table's check when it is big enough to take a while (``api.check_sources``'s
    ``progress``); yields None for a small table."""
    if nbytes <= PROGRESS_BYTES:
        yield None
        return
    with progress_bar(description, 1, True) as advance:
        yield advance


@contextmanager
def progress_bar(description: str, total: int, enabled: bool) -> Iterator[Any]:
    """A Rich progress bar on stderr (a no-op callback when disabled); yields ``advance(n, total=None)`` (a
    ``total`` given there replaces the one given here, for work whose size is known only once it starts)."""
    if not enabled:
        yield lambda n, total=None: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>5.1f}%"),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr, highlight=False, soft_wrap=False),
        transient=True,
    )
    with bar:
        task = bar.add_task(description, total=total)

        def advance(n: int, total: int | None = None) -> None:
            if total is not None:
                bar.update(task, total=total)
            bar.advance(task, n)

        yield advance


# ----- posenc audit ----------------------------------------------------------------------------------------
#: the audit table's columns: name and width (the explanation goes below each row, wrapped to the width)
AUDIT_COLUMNS = (("artifact", 24), ("layer type", 18), ("engine", 10), ("verdict", 9), ("max |diff|", 10))


def _clip(text: str, width: int) -> str:
    """``text`` in ``width`` characters: a long path keeps its end (the file's name)."""
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def audit_lines(report: Any, *, width: int | None = None, verbose: bool = False) -> list[str]:
    """The audit report for people: a header, one line per row and its explanation below it (``verbose``: every
    detail), then the notes; fits ``width`` (default: the terminal's, at most 80)."""
    d = report if isinstance(report, Mapping) else report.to_json()
    w = min(width or term_width(sys.stdout), DEFAULT_WIDTH)
    model = d.get("model_type") or "model"
    head = f"{d['source']}: {model}, reference {d.get('config') or '-'}" + (
        f", {d['length']} positions" if d.get("length") else ""
    )
    names = {"n_ctx": "llama.cpp n_ctx", "max_model_len": "vLLM max_model_len"}
    head += "".join(f", {names.get(k, k)} {v}" for k, v in (d.get("settings") or {}).items())
    out = wrap(head, w)
    out.append("  ".join(f"{name:<{n}}" if i < 4 else f"{name:>{n}}" for i, (name, n) in enumerate(AUDIT_COLUMNS)))
    for row in d["rows"]:
        diff = row.get("max_abs_diff")
        cells = [row["artifact"], row["layer_type"], row["engine"], row["verdict"].upper() if row["verdict"] in
                 ("differ", "failed", "error", "refused") else row["verdict"], "-" if diff is None else num(diff)]  # fmt: skip
        out.append(
            "  ".join(
                f"{_clip(str(c), n):<{n}}" if i < 4 else f"{_clip(str(c), n):>{n}}"
                for i, (c, (_, n)) in enumerate(zip(cells, AUDIT_COLUMNS))
            ).rstrip()
        )
        out += wrap(row["explanation"], w, "    ", "      ")
        if verbose:
            for detail in row.get("details") or []:
                out += wrap(detail, w, "      - ", "        ")
    for note in d.get("notes") or []:
        out += wrap(note, w, "note: ", "  ")
    return out


def audit_verdict(report: Any) -> str:
    """The audit's one-line verdict (never wrapped, so grep finds it in CI logs)."""
    from .auditing.report import failure_words

    d = report if isinstance(report, Mapping) else report.to_json()
    counts = ", ".join(f"{n} {v}" for v, n in d["counts"].items())
    errors = [r for r in d["rows"] if r["verdict"] == "error"]
    refused = [r for r in d["rows"] if r["verdict"] == "refused"]
    if d["exit_code"] == 2 and not errors and refused:  # what posenc refuses, named (the rest still audited)
        head = f"REFUSED: {refused[0]['explanation']}" + (f" (and {len(refused) - 1} more)" if len(refused) > 1 else "")
    elif d["exit_code"] == 2 and errors:  # the first error in its own words (a file not read, a table not built,
        # an option the model refuses at a size): the rows say the rest
        head = f"ERROR: {errors[0]['explanation']}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
    elif d["exit_code"] == 2:
        head = "ERROR: a file could not be read"
    elif d.get("compared") == 0:
        head = "NOTHING COMPARED: no row compared a table (the notes say why)"
    else:
        head = "OK: every row agrees" if d["ok"] else failure_words(d["counts"])
    return f"{head} ({len(d['rows'])} rows: {counts})"


def audit_report(report: Any, *, quiet: int = QUIET_NONE, verbose: bool = False) -> None:
    """What ``posenc audit`` prints: the table on stdout (quiet 0), the verdict line on stderr (quiet < 2)."""
    if quiet < QUIET_VERDICT:
        sys.stdout.write("\n".join(audit_lines(report, verbose=verbose)) + "\n")
        sys.stdout.flush()
    if quiet < QUIET_ALL:
        sys.stderr.write(audit_verdict(report) + "\n")
