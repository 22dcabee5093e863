"""The human output (render.py) and the terminal heatmap (termplot.py): golden check reports at 80 and 120
columns (numbers compared as numbers, tests/printed_numbers.py), nothing wider than the width, not-run
properties, quiet levels, unwrapped verdicts, --json against its schema, previews and kinds that fit, and colours
that follow values."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest

from posenc_cli import render, termplot
from posenc_cli.checks.base import CheckResult as R

from .conftest import ROOT
from .each import each
from .printed_numbers import assert_same_output

SCHEMA_PATH = ROOT / "docs" / "check-report.schema.json"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ----- hand-built results: the seed's table (pass), a broken learned table (fail), a table with NaN ----------------
LABEL_PASS = "sinusoidal:preset=tf-tutorial [pe]"
PASS = [
    R("finite", True, 0, 0, "every value of pe is finite", "exact", {"counts": {"pe": {"nan": 0, "inf": 0}}}),
    R(
        "matches-spec",
        True,
        0.0,
        1e-05,
        "pe match sinusoidal regenerated from the metadata",
        "exact (regenerated block by block)",
    ),
    R("bounded", True, 1.0, 1.00001, "max |x| = 1; bound 1", "exact", {"max_abs": 1.0, "bound": 1.0}),
    R(
        "unique",
        True,
        0.9599788,
        1.7320508e-05,
        "closest distinct positions 1 and 2 are 0.96 apart",
        "exact (blocked Gram matrix, nearest pair re-measured directly)",
        {"closest": [1, 2]},
    ),
    R(
        "constant-norm",
        True,
        2.617e-08,
        1.7320508e-05,
        "every row has norm 1.7321",
        "exact",
        {"norm": 1.7320508, "min": 1.7320508, "max": 1.7320508},
    ),
    R(
        "equidistant",
        True,
        2.396e-08,
        1.7320508e-05,
        "every consecutive pair is 0.9600 apart",
        "exact",
        {"distance": 0.9599788, "min": 0.9599788, "max": 0.9599788},
    ),
    R(
        "offset-invariant",
        True,
        0.0056,
        1.0,
        "distance and dot product depend only on k (k=1: distance 0.9600, "
        "dot product 2.5392); Gram Toeplitz residual 5.61e-08",
        "exact over k in {1,2,3,4} + Freivalds, 8 probes",
        {"distance_k1": 0.9599788, "dot_k1": 2.5392},
    ),
    R(
        "shift-linear",
        True,
        2.876e-12,
        2e-05,
        "P[t+k] = P[t] M_k for every t, k in {1}; M_k is a rotation on the data (norms preserved to 1.511e-08)",
        "least squares (ridge on the Gram matrix) on min(len-k, 4*dim) = 4 rows, Freivalds on all rows, 8 probes",
    ),
    R("symmetric", True, 1.74e-08, 1.7320508e-05, "distance to t+k equals distance to t-k", "exact over k in {1,2}"),
    R(
        "decay",
        None,
        0.443,
        None,
        "mean P[t].P[t+k] / mean |P|^2: k=1: 0.846, k=2: 0.527, k=3: 0.333, k=4: 0.443; "
        "falls at 2 of 3 steps, min 0.333 at k=3",
        "exact over k in {1,2,3,4}",
        {"curve": {1: 0.846, 2: 0.527, 3: 0.333, 4: 0.443}},
    ),
    R(
        "precision",
        None,
        5,
        None,
        "float16: 5 of 5 rows distinct, max abs error 0.0002419 (raw positions 0..4: "
        "5 distinct); bfloat16: 5 of 5 rows distinct, max abs error 0.001867 (raw positions 0..4: 5 distinct)",
        "exact (cast block by block, rows compared by 64-bit hashes)",
    ),
]
REQUIRED_PASS = [
    "finite",
    "matches-spec",
    "bounded",
    "unique",
    "constant-norm",
    "equidistant",
    "offset-invariant",
    "shift-linear",
    "symmetric",
]

LABEL_FAIL = "runs/2024-06-01/checkpoints/model-final/position_embeddings.safetensors [pe]"
FAIL = [
    R("finite", True, 0, 0, "every value of pe is finite"),
    R("bounded", False, 3.126, 1.00001, "max |x| = 3.126; bound 1", "exact", {"max_abs": 3.126, "bound": 1.0}),
    R(
        "unique",
        False,
        0.0,
        1.2e-06,
        "rows 17 and 18 are identical",
        "exact duplicates via 64-bit row hashes",
        {"closest": [17, 18]},
    ),
    R(
        "constant-norm",
        False,
        0.0703,
        1.2e-06,
        "norms range 0.04412 (row 3) .. 0.1144 (row 40)",
        "exact",
        {"norm": 0.080441, "min": 0.04412, "max": 0.1144},
    ),
    R(
        "offset-invariant",
        False,
        312600.0,
        1.0,
        "at k=1 distances vary by 0.09171 and dot products by 0.01127 over t; offsets failing: 1,2,3,5,8,13,21,34,55",
        "exact over k in {1,2,3,5,8,13,21,34,55,63} + Freivalds, 8 probes",
    ),
    R(
        "decay",
        None,
        0.168,
        None,
        "mean P[t].P[t+k] / mean |P|^2: k=1: 0.012, k=63: 0.168",
        "exact over k in {1,63}",
        {"curve": {1: 0.012, 63: 0.168}},
    ),
]
REQUIRED_FAIL = ["finite", "bounded", "unique"]

NAN = [R("finite", False, 3, 0, "pe: 2 NaN, 1 inf", "exact", {"counts": {"pe": {"nan": 2, "inf": 1}}})] + [
    R(name, None if name in ("decay", "precision") else False, None, None, "table has non-finite values", "skipped")
    for name in (
        "bounded",
        "unique",
        "constant-norm",
        "equidistant",
        "offset-invariant",
        "shift-linear",
        "symmetric",
        "decay",
        "precision",
    )
]

# ----- goldens (UTF-8, no colour) ------------------------------------------------------------------------------------
GOLDEN_PASS_80 = """\
sinusoidal:preset=tf-tutorial [pe]  (kind: sinusoidal)
✓ PASS  finite            0 non-finite values            needs 0
✓ PASS  matches-spec      max rel. diff 0                needs ≤ 1e-05
✓ PASS  bounded           max |x| 1                      needs ≤ 1.00001
✓ PASS  unique            closest rows 0.96 apart        needs > 1.73e-05
✓ PASS  constant-norm     norms 1.7321, spread 2.62e-08  needs ≤ 1.73e-05
✓ PASS  equidistant       steps 0.9600, spread 2.4e-08   needs ≤ 1.73e-05
✓ PASS  offset-invariant  worst 0.0056 × tolerance       needs ≤ 1
✓ PASS  shift-linear      residual 2.88e-12 × RMS norm   needs ≤ 2e-05
✓ PASS  symmetric         distance gap 1.74e-08          needs ≤ 1.73e-05
· INFO  decay             dot ratio 0.443 at k=4         report
· INFO  precision         5 rows distinct in bf16        report
"""

GOLDEN_PASS_120 = """\
sinusoidal:preset=tf-tutorial [pe]  (kind: sinusoidal)
✓ PASS  finite            0 non-finite values            needs 0
✓ PASS  matches-spec      max rel. diff 0                needs ≤ 1e-05
✓ PASS  bounded           max |x| 1                      needs ≤ 1.00001
✓ PASS  unique            closest rows 0.96 apart        needs > 1.73e-05
✓ PASS  constant-norm     norms 1.7321, spread 2.62e-08  needs ≤ 1.73e-05
✓ PASS  equidistant       steps 0.9600, spread 2.4e-08   needs ≤ 1.73e-05
✓ PASS  offset-invariant  worst 0.0056 × tolerance       needs ≤ 1
✓ PASS  shift-linear      residual 2.88e-12 × RMS norm   needs ≤ 2e-05
✓ PASS  symmetric         distance gap 1.74e-08          needs ≤ 1.73e-05
· INFO  decay             dot ratio 0.443 at k=4         report
· INFO  precision         5 rows distinct in bf16        report
"""

GOLDEN_FAIL_80 = """\
runs/2024-06-01/checkpoints/model-final/position_embeddings.safetensors [pe]
(kind: learned); lowercase: not required
✓ PASS  finite            0 non-finite values          needs 0
✗ FAIL  bounded           max |x| 3.13                 needs ≤ 1
✗ FAIL  unique            closest rows 0 apart         needs > 1.2e-06
✗ fail  constant-norm     norms 0.0804, spread 0.0703  needs ≤ 1.2e-06
✗ fail  offset-invariant  worst 3.13e+05 × tolerance   needs ≤ 1
· INFO  decay             dot ratio 0.168 at k=63      report
"""

GOLDEN_FAIL_120 = """\
runs/2024-06-01/checkpoints/model-final/position_embeddings.safetensors [pe]  (kind: learned); lowercase: not required
✓ PASS  finite            0 non-finite values          needs 0
✗ FAIL  bounded           max |x| 3.13                 needs ≤ 1
✗ FAIL  unique            closest rows 0 apart         needs > 1.2e-06
✗ fail  constant-norm     norms 0.0804, spread 0.0703  needs ≤ 1.2e-06
✗ fail  offset-invariant  worst 3.13e+05 × tolerance   needs ≤ 1
· INFO  decay             dot ratio 0.168 at k=63      report
"""

GOLDEN_FAIL_VERBOSE_80 = """\
runs/2024-06-01/checkpoints/model-final/position_embeddings.safetensors [pe]
(kind: learned); lowercase: not required
✓ PASS  finite            0 non-finite values          needs 0
        method: exact
        detail: every value of pe is finite
✗ FAIL  bounded           max |x| 3.13                 needs ≤ 1
        method: exact
        detail: max |x| = 3.126; bound 1
✗ FAIL  unique            closest rows 0 apart         needs > 1.2e-06
        method: exact duplicates via 64-bit row hashes
        detail: rows 17 and 18 are identical
✗ fail  constant-norm     norms 0.0804, spread 0.0703  needs ≤ 1.2e-06
        method: exact
        detail: norms range 0.04412 (row 3) .. 0.1144 (row 40)
✗ fail  offset-invariant  worst 3.13e+05 × tolerance   needs ≤ 1
        method: exact over k in {1,2,3,5,8,13,21,34,55,63} + Freivalds, 8 probes
        detail: at k=1 distances vary by 0.09171 and dot products by 0.01127
          over t; offsets failing: 1,2,3,5,8,13,21,34,55
· INFO  decay             dot ratio 0.168 at k=63      report
        method: exact over k in {1,63}
        detail: mean P[t].P[t+k] / mean |P|^2: k=1: 0.012, k=63: 0.168
"""

GOLDEN_FAIL_VERBOSE_120 = """\
runs/2024-06-01/checkpoints/model-final/position_embeddings.safetensors [pe]  (kind: learned); lowercase: not required
✓ PASS  finite            0 non-finite values          needs 0
        method: exact
        detail: every value of pe is finite
✗ FAIL  bounded           max |x| 3.13                 needs ≤ 1
        method: exact
        detail: max |x| = 3.126; bound 1
✗ FAIL  unique            closest rows 0 apart         needs > 1.2e-06
        method: exact duplicates via 64-bit row hashes
        detail: rows 17 and 18 are identical
✗ fail  constant-norm     norms 0.0804, spread 0.0703  needs ≤ 1.2e-06
        method: exact
        detail: norms range 0.04412 (row 3) .. 0.1144 (row 40)
✗ fail  offset-invariant  worst 3.13e+05 × tolerance   needs ≤ 1
        method: exact over k in {1,2,3,5,8,13,21,34,55,63} + Freivalds, 8 probes
        detail: at k=1 distances vary by 0.09171 and dot products by 0.01127 over t; offsets failing:
          1,2,3,5,8,13,21,34,55
· INFO  decay             dot ratio 0.168 at k=63      report
        method: exact over k in {1,63}
        detail: mean P[t].P[t+k] / mean |P|^2: k=1: 0.012, k=63: 0.168
"""

GOLDEN_NOT_RUN_80 = """\
nan.npy [pe]  (kind unknown: pass --expect KIND)
✗ FAIL  finite  3 non-finite values  needs 0
– not run, needs finite: bounded, unique, constant-norm, equidistant,
        offset-invariant, shift-linear, symmetric, decay, precision
"""


def text(lines) -> str:
    return "".join(line + "\n" for line, _style in lines)


class FakeStream(io.StringIO):
    """A stream that says whether it is a terminal, with the encoding a real one would have."""

    def __init__(self, tty: bool, encoding: str = "utf-8") -> None:
        super().__init__()
        self._tty, self._encoding = tty, encoding

    def isatty(self) -> bool:
        return self._tty

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for var in ("NO_COLOR", "FORCE_COLOR", "COLORTERM", "TERM", "COLUMNS"):
        monkeypatch.delenv(var, raising=False)


# ----- the check report: goldens ------------------------------------------------------------------------------------
def test_reports_match_golden():
    """The passing report at 80 and 120 columns, the failing one at each width, plain and verbose (one test over
    the six: :func:`tests.each.each` names each failing one)."""
    goldens = {
        ("pass", 80, False): GOLDEN_PASS_80, ("pass", 120, False): GOLDEN_PASS_120,
        ("fail", 80, False): GOLDEN_FAIL_80, ("fail", 120, False): GOLDEN_FAIL_120,
        ("fail", 80, True): GOLDEN_FAIL_VERBOSE_80, ("fail", 120, True): GOLDEN_FAIL_VERBOSE_120,
    }  # fmt: skip

    def check(case):
        which, width, verbose = case
        if which == "pass":
            lines = render.check_lines(LABEL_PASS, "sinusoidal", PASS, REQUIRED_PASS, width=width)
        else:
            lines = render.check_lines(LABEL_FAIL, "learned", FAIL, REQUIRED_FAIL, width=width, verbose=verbose)
        assert_same_output(goldens[case], text(lines))

    each(goldens, check)


@pytest.mark.parametrize("columns", ["80", "120"])
def test_check_table_follows_COLUMNS_on_stdout(monkeypatch, capsys, columns):
    monkeypatch.setenv("COLUMNS", columns)
    render.check_table(LABEL_FAIL, "learned", FAIL, REQUIRED_FAIL)
    out = capsys.readouterr().out
    assert_same_output(GOLDEN_FAIL_80 if columns == "80" else GOLDEN_FAIL_120, out)
    assert "\x1b" not in out  # not a terminal: no colour


def test_report_is_one_line_per_property_with_units():
    lines = text(render.check_lines(LABEL_PASS, "sinusoidal", PASS, REQUIRED_PASS, width=80)).splitlines()
    assert len(lines) == 1 + len(PASS)
    by_name = {line.split()[2]: line for line in lines[1:]}
    assert "0.96 apart" in by_name["unique"] and "needs > 1.73e-05" in by_name["unique"]
    assert "norms 1.7321" in by_name["constant-norm"]  # the seed's numbers are on the line
    assert "× tolerance" in by_name["offset-invariant"]  # a ratio says so ('3.126e+05' against '1.0000' was the bug)
    assert "exact" not in "\n".join(lines)  # the method is behind --verbose


def test_every_property_has_a_unit_and_every_unit_names_a_property():
    from posenc_cli.checks import CHECKS

    assert set(render.FIGURES) == set(CHECKS)
    for name, fig in render.FIGURES.items():
        assert fig.unit and fig.op in ("<=", ">", "=", "falls", "report"), name


def test_a_figure_never_prints_equal_to_a_threshold_it_fails():
    d = {"name": "bounded", "status": "FAIL", "value": 1.0000312, "tolerance": 1.00001, "data": {}}
    fig, thr = render.figure_text(d)
    assert fig == "max |x| 1.00003" and thr == "needs ≤ 1.00001"


def test_ascii_fallback_when_the_stream_is_not_utf8():
    out = text(render.check_lines(LABEL_FAIL, "learned", FAIL, REQUIRED_FAIL, width=80, unicode=False))
    assert out.isascii()
    assert "x FAIL  bounded" in out and "needs <= 1" in out and "3.13e+05 x tolerance" in out
    stream = FakeStream(tty=False, encoding="ascii")
    render.check_table(LABEL_FAIL, "learned", FAIL, REQUIRED_FAIL, file=stream)
    assert stream.getvalue().isascii()


# ----- nothing wider than the width ---------------------------------------------------------------------------------
def real_reports():
    from posenc_cli import api

    bad = np.asarray(api.generate("sinusoidal", length=64, dim=16).array()).copy()
    bad[3, 2] = np.nan
    sources = [
        api.generate("sinusoidal", length=64, dim=16),
        api.generate("learned", length=64, dim=16),
        api.generate("alibi", length=16, dim=4),
        api.generate("t5", length=16),
        {"pe": bad},
        {
            "cos": api.generate("rope", length=32, dim=8).array("cos"),
            "sin": api.generate("rope", length=32, dim=8).array("sin"),
        },
    ]
    return [api.check(s, tensor="cos" if isinstance(s, dict) and "cos" in s else None) for s in sources]


@pytest.fixture(scope="module")
def reports():
    return real_reports()


def test_no_report_line_exceeds_the_width(reports):
    """Every width, plain and verbose (:func:`tests.each.each`)."""
    cases = [(f"{r.source} [{r.tensor}]", r.kind, r.results, r.required) for r in reports]
    cases += [
        (LABEL_PASS, "sinusoidal", PASS, REQUIRED_PASS),
        (LABEL_FAIL, "learned", FAIL, REQUIRED_FAIL),
        ("x" * 150 + " [pe]", None, NAN, ["finite"]),
    ]

    def fits(width_verbose):
        width, verbose = width_verbose
        for label, kind, results, required in cases:
            for line, _ in render.check_lines(label, kind, results, required, width=width, verbose=verbose):
                assert len(line) <= width, line

    each([(w, v) for v in (False, True) for w in (40, 60, 80, 120)], fits)


def test_narrow_reports_shorten_the_figure_and_keep_the_threshold():
    lines = [line for line, _ in render.check_lines(LABEL_FAIL, "learned", FAIL, REQUIRED_FAIL, width=60)][2:]
    for line, r in zip(lines, FAIL):
        _fig, threshold = render.figure_text(r.to_json())
        assert len(line) <= 60 and line.endswith(threshold), line
    assert any("…" in line for line in lines)


# ----- properties that could not run --------------------------------------------------------------------------------
def test_not_run_properties_are_listed_once_instead_of_failing_each():
    out = text(render.check_lines("nan.npy [pe]", None, NAN, ["finite"], width=80))
    assert out == GOLDEN_NOT_RUN_80
    assert out.count("FAIL") == 1 and out.count("not run") == 1


def test_not_run_verdict_names_required_properties_that_could_not_run():
    stream = FakeStream(tty=False)
    failed = ["finite", "bounded", "unique"]  # what the engine reports today: skipped required checks as failures
    render.check_summary("nan.npy", False, failed, results=NAN, file=stream)
    assert stream.getvalue() == (
        "nan.npy: required properties failed: finite; required properties not run (needs finite): bounded, unique\n"
    )


def test_not_run_in_json_has_status_and_needs(reports):
    nan_report = next(r for r in reports if not r.ok)
    data = render.report_json(nan_report)
    statuses = {r["name"]: r["status"] for r in data["results"]}
    assert statuses["finite"] == "FAIL"
    assert {n for n, s in statuses.items() if s == "NOT RUN"} == set(data["not_run"]) and len(data["not_run"]) >= 8
    assert all(r["needs"] == ["finite"] for r in data["results"] if r["status"] == "NOT RUN")
    # failed names the required properties that failed or could not run: ok is exactly "failed is empty"
    assert data["failed"][0] == "finite" and data["ok"] is False
    assert data["failed"] == [n for n in data["required"] if statuses[n] in ("FAIL", "NOT RUN")]


def test_engine_status_not_run_is_passed_through():
    d = {
        "name": "bounded",
        "status": "NOT RUN",
        "value": None,
        "tolerance": None,
        "detail": "",
        "method": "",
        "data": {},
        "needs": ["finite"],
    }
    assert render.result_json(d, True)["status"] == "NOT RUN"
    assert "not run, needs finite: bounded" in text(render.check_lines("x", None, [d], ["bounded"], width=80))


# ----- verdicts and quiet levels ------------------------------------------------------------------------------------
LONG = "very/long/" * 30 + "pe.npy"


def test_verdict_is_one_unwrapped_line_when_not_a_tty(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    stream = FakeStream(tty=False)
    render.check_summary(LONG, False, ["constant-norm", "equidistant", "offset-invariant"], file=stream)
    out = stream.getvalue()
    assert out == f"{LONG}: required properties failed: constant-norm, equidistant, offset-invariant\n"
    assert out.count("\n") == 1 and "\x1b" not in out


def test_verdict_on_a_tty_is_coloured_but_still_one_line(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    stream = FakeStream(tty=True)
    render.check_summary(LONG, True, [], file=stream)
    out = stream.getvalue()
    assert out.count("\n") == 1 and "\x1b[32m" in out
    assert ANSI.sub("", out) == f"{LONG}: every required property holds\n"
    monkeypatch.setenv("NO_COLOR", "1")
    stream = FakeStream(tty=True)
    render.check_summary(LONG, True, [], file=stream)
    assert "\x1b" not in stream.getvalue()


def test_check_quiet_levels(capsys, reports):
    report = reports[0]

    def check(quiet):
        render.check_report(report, quiet=quiet)
        out, err = capsys.readouterr()
        assert (out != "") == (quiet == 0)
        assert err == ("" if quiet == 2 else f"{report.source}: every required property holds\n")

    each([0, 1, 2], check)


@pytest.fixture(scope="module")
def differing():
    from posenc_cli import api

    comparison = api.compare(
        api.generate("sinusoidal", length=64, dim=16),
        api.generate("sinusoidal", length=64, dim=16, preset="tf-tutorial"),
        explain=False,
    )
    return comparison.tensors[0].result  # one tensor pair's metrics


def test_compare_quiet_levels_match_check(capsys, differing):
    def check(quiet):
        render.compare_report(differing, quiet=quiet)
        out, err = capsys.readouterr()
        assert (out != "") == (quiet == 0)
        if quiet == 2:
            assert err == ""
        else:
            assert err.count("\n") == 1 and ": DIFFERENT: " in err and "elements differ" in err
        assert "DIFFERENT" not in out  # the verdict is on stderr, as for check

    each([0, 1, 2], check)


def test_compare_lines_one_metric_a_line_within_80(differing):
    lines = [line for line, _ in render.compare_lines(differing, "a" * 70, "b" * 70, width=80)]
    assert all(len(line) <= 80 for line in lines)
    metrics = [line for line in lines if line.startswith(("max ", "mean ", "min ", "elements", "shapes", "tolerance"))]
    assert len(metrics) == 8
    assert any(re.match(r"max abs difference +\d.* at \(\d+, \d+\): ", m) for m in metrics)


# ----- --json and its schema ----------------------------------------------------------------------------------------
def validate(instance, schema, root=None, path="$"):
    """A validator for the JSON Schema subset the repository's schemas use: type, enum, properties, required,
    additionalProperties (false), items, $ref to #/$defs/..."""
    root = schema if root is None else root
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/"), f"{path}: unsupported $ref {ref}"
        return validate(instance, root["$defs"][ref.removeprefix("#/$defs/")], root, path)
    known = {
        "$schema",
        "$id",
        "$defs",
        "title",
        "description",
        "type",
        "enum",
        "properties",
        "required",
        "additionalProperties",
        "items",
    }
    assert set(schema) <= known, f"{path}: keywords outside the validated subset: {set(schema) - known}"
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        checks = {
            "object": lambda v: isinstance(v, dict),
            "array": lambda v: isinstance(v, list),
            "string": lambda v: isinstance(v, str),
            "boolean": lambda v: isinstance(v, bool),
            "null": lambda v: v is None,
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        }
        assert any(checks[t](instance) for t in types), f"{path}: {instance!r} is not {types}"
    if "enum" in schema:
        assert instance in schema["enum"], f"{path}: {instance!r} not in {schema['enum']}"
    if isinstance(instance, dict):
        for key in schema.get("required", []):
            assert key in instance, f"{path}: missing {key}"
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is False:
            extra = set(instance) - set(props)
            assert not extra, f"{path}: unexpected {sorted(extra)}"
        for key, sub in props.items():
            if key in instance:
                validate(instance[key], sub, root, f"{path}.{key}")
    if isinstance(instance, list) and "items" in schema:
        for i, item in enumerate(instance):
            validate(item, schema["items"], root, f"{path}[{i}]")


@pytest.fixture(scope="module")
def schema():
    return json.loads(SCHEMA_PATH.read_text())


def test_check_json_of_real_reports_follows_the_schema(schema, reports):
    data = json.loads(json.dumps(render.check_json(reports), default=str))  # exactly what print_json writes
    validate(data, schema)
    assert {r["status"] for report in data for r in report["results"]} == {"PASS", "FAIL", "INFO", "NOT RUN"}


def test_check_json_of_hand_built_reports_follows_the_schema(schema):
    reports = [
        {
            "source": "a",
            "tensor": "pe",
            "kind": "sinusoidal",
            "ok": True,
            "required": REQUIRED_PASS,
            "failed": [],
            "results": [r.to_json() for r in PASS],
        },
        {
            "source": "b",
            "tensor": "pe",
            "kind": None,
            "ok": False,
            "required": ["finite"],
            "failed": ["finite"],
            "results": [r.to_json() for r in NAN],
        },
    ]
    data = json.loads(json.dumps(render.check_json(reports)))
    validate(data, schema)
    units = {r["name"]: r["unit"] for r in data[0]["results"]}
    assert units["offset-invariant"] == "worst spread / its tolerance"
    assert {r["name"]: r["comparison"] for r in data[0]["results"]}["unique"] == ">"


BREAKAGES = [
    lambda d: d[0].pop("not_run"),
    lambda d: d[0]["results"][0].update(status="SKIPPED"),
    lambda d: d[0]["results"][0].update(extra=1),
    lambda d: d[0]["results"][0].update(needs="finite"),
    lambda d: d[0].update(ok="yes"),
]  # fmt: skip


def test_the_schema_test_can_fail(schema):
    """Each breakage of a valid report (:func:`tests.each.each`) fails the schema."""
    each(range(len(BREAKAGES)), lambda i: _schema_rejects(schema, BREAKAGES[i]))


def _schema_rejects(schema, breakage):
    data = json.loads(
        json.dumps(
            render.check_json(
                [
                    {
                        "source": "a",
                        "tensor": "pe",
                        "kind": None,
                        "ok": True,
                        "required": ["finite"],
                        "failed": [],
                        "results": [PASS[0].to_json()],
                    }
                ]
            )
        )
    )
    validate(data, schema)
    breakage(data)
    with pytest.raises(AssertionError):
        validate(data, schema)


# ----- previews -----------------------------------------------------------------------------------------------------
def preview_text(kind, width=80, **params):
    from posenc_cli.encodings import make_encoding
    from posenc_cli.encodings.base import dtype_name

    enc = make_encoding(kind, params)
    specs = enc.tensor_specs()
    primary = specs[enc.PRIMARY]
    corner = enc.rows(primary.name, 0, min(primary.shape[0], 10))
    if corner.ndim > 2:  # what cli/generate.py passes for heads x len x len
        corner = corner[0]
    small = {
        n: enc.rows(n, 0, s.shape[0])
        for n, s in specs.items()
        if n != primary.name and len(s.shape) == 1 and s.shape[0] <= 64
    }
    full = np.asarray(enc.array(primary.name), dtype=np.float64)
    lines = render.preview_lines(
        f"{kind} positional encoding",
        [(s.name, s.shape, dtype_name(s.dtype)) for s in specs.values()],
        {k: v for k, v in enc.metadata().items() if k not in ("kind", "posenc_version")},
        primary.name,
        corner,
        primary.shape,
        (float(full.min()), float(full.max())),
        "",
        small,
        3,
        width=width,
    )
    return text(lines)


def test_alibi_preview_says_which_head_it_shows():
    out = preview_text("alibi", length=512, dim=8)
    assert re.search(r"^bias head 0 of 8, rows 0\.\.9 of 512, columns 0\.\.\d+ of 512$", out, re.MULTILINE)
    assert max(len(line) for line in out.splitlines()) <= 80 and "..." not in out
    assert out.count("\n [") == 9  # ten rows of head 0, not 512 rows elided


def test_rope_preview_fits_80_columns_and_elides_long_vectors():
    out = preview_text("rope", length=256, dim=128, preset="llama3.1")
    assert max(len(line) for line in out.splitlines()) <= 80
    inv = next(line for line in out.splitlines() if line.startswith("inv_freq (64) = ["))
    assert " ... " in inv and inv.startswith("inv_freq (64) = [1.0000e+00 ") and inv.endswith("3.0689e-07]")
    params = [line for line in out.splitlines() if line.startswith(("parameters", " " * 17))]
    assert len(params) > 3 and all(line.rstrip().endswith(",") for line in params[:-1])  # wrapped at commas


def test_integer_tables_preview_as_integers():
    out = preview_text("t5", length=64)
    assert "value range     [0, 29]" in out and "[[ 0 17 18" in out


def test_preview_of_a_wide_table_drops_columns_to_fit():
    each([40, 80], _preview_of_a_wide_table_drops_columns_to_fit)


def _preview_of_a_wide_table_drops_columns_to_fit(width):
    out = preview_text("sinusoidal", width=width, length=20, dim=64)
    assert max(len(line) for line in out.splitlines()) <= width
    header = next(line for line in out.splitlines() if line.startswith("pe rows"))
    assert "columns 0.." in header and "of 64" in header


def test_short_vectors_are_shown_whole():
    assert render.vector_text("slopes", np.array([0.5, 0.25]), 3, 80) == "slopes (2) = [0.5 0.25]"


# ----- kinds --------------------------------------------------------------------------------------------------------
def words(s: str) -> set[str]:
    return set(re.findall(r"[A-Za-z]+", s))


def test_kinds_list_fits_80_and_never_splits_a_word():
    from posenc_cli.api import kinds

    rows = kinds()
    out = text(render.kinds_lines(rows, width=80))
    assert max(len(line) for line in out.splitlines()) <= 80
    for r in rows:
        assert words(r["summary"]) <= words(out), r["kind"]
        assert re.search(rf"^{re.escape(r['kind'])}  ", out, re.MULTILINE)


def test_kind_detail_fits_80_and_never_splits_a_word():
    each(["rope", "sinusoidal", "alibi", "t5", "learned"], _kind_detail_fits)


def _kind_detail_fits(kind):
    from posenc_cli.encodings import get_kind
    from posenc_cli.kindinfo import kind_info

    info = kind_info(get_kind(kind))
    out = text(render.kind_detail_lines(info, width=80))
    assert max(len(line) for line in out.splitlines()) <= 80
    source = " ".join(
        [
            info["summary"],
            *(p["help"] for p in info["parameters"]),
            *(p["doc"] for p in info["presets"].values()),
            *info["references"],
        ]
    )
    assert words(source) <= words(out)
    for p in info["parameters"]:
        assert re.search(rf"^  {re.escape(p['name'])}( |$)", out, re.MULTILINE), p["name"]


def test_wrap_splits_long_tokens_after_separators_not_inside_words():
    lines = render.wrap("scaling factor (linear/ntk/dynamic/yarn/longrope; llama3 default 8)", 28)
    assert lines == ["scaling factor (linear/ntk/", "dynamic/yarn/longrope;", "llama3 default 8)"]
    assert all(len(line) <= 12 for line in render.wrap("a" * 40, 12))  # no separator: cut, but never overflow


# ----- the terminal heatmap -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 6), (200, 64), (4096, 128), (3, 500), (1, 1)])
def test_termplot_fits_the_width_and_height(shape):
    """Every width and colour mode (:func:`tests.each.each`), over one random table of ``shape``."""
    a = np.random.default_rng(1).standard_normal(shape)
    each([(w, c) for w in (20, 80, 133) for c in ("truecolor", "256", "none")], lambda case: _fits(a, *case))


def _fits(a, width, color):
    lines = termplot.heatmap_lines(a, width, 12, color=color)
    assert len(lines) <= 12
    assert all(termplot.visible_len(line) <= width for line in lines)
    assert all(line.endswith(termplot.RESET) for line in lines[:-1]) or color == "none"


def fg_colors(line: str) -> list[tuple[int, int, int]]:
    return [tuple(map(int, m)) for m in re.findall(r"\x1b\[38;2;(\d+);(\d+);(\d+)m", line)]


def test_termplot_colours_follow_values():
    ramp = np.linspace(0.0, 1.0, 8)[None, :]  # one row: 8 cells left to right
    body = termplot.heatmap_lines(ramp, 8, 2, color="truecolor")[0]
    got = fg_colors(body)
    want = [tuple(int(x) for x in c) for c in termplot.ramp_rgb("viridis", ramp[0])]
    assert got == want
    # viridis gets lighter with the value: the picture is monotone in brightness
    lum = [0.2126 * r + 0.7152 * g + 0.0722 * b for r, g, b in got]
    assert lum == sorted(lum)


def test_termplot_signed_values_use_a_map_centred_on_zero():
    a = np.array([[-2.0, 0.0, 2.0]])
    body = termplot.heatmap_lines(a, 3, 2, color="truecolor")[0]
    low, mid, high = fg_colors(body)
    assert mid == tuple(int(x) for x in termplot.ramp_rgb("RdBu_r", np.array(0.5)))
    assert low[2] > low[0] and high[0] > high[2]  # blue below zero, red above


def test_termplot_upper_and_lower_pixels_of_a_cell():
    a = np.array([[0.0], [1.0]])  # two rows -> one character: upper pixel fg, lower pixel bg
    body = termplot.heatmap_lines(a, 1, 2, color="truecolor")[0]
    assert "▀" in body
    bg = tuple(map(int, re.search(r"\x1b\[48;2;(\d+);(\d+);(\d+)m", body).groups()))
    assert fg_colors(body)[0] == tuple(int(x) for x in termplot.ramp_rgb("viridis", np.array(0.0)))
    assert bg == tuple(int(x) for x in termplot.ramp_rgb("viridis", np.array(1.0)))


def test_termplot_plain_shades_follow_values_and_NO_COLOR_turns_colour_off(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    lines = termplot.heatmap_lines(np.linspace(0, 1, 5)[None, :], 5, 3)
    assert lines[0] == " ░▒▓█" and "\x1b" not in "".join(lines)
    assert termplot.heatmap_lines(np.linspace(0, 1, 5)[None, :], 5, 3, ascii=True)[0] == " .:*#"


def test_termplot_legend_says_what_each_cell_aggregates():
    lines = termplot.heatmap_lines(np.zeros((100, 160)), 80, 11, color="256")
    legend = termplot.visible_len(lines[-1]) and ANSI.sub("", lines[-1])
    assert "rows 0..99, cols 0..159" in legend and "mean of 5 rows x 2 cols per half block" in legend
    assert len(lines) == 11


def test_termplot_leaves_non_finite_cells_blank():
    a = np.array([[np.nan, 1.0], [np.nan, 2.0]])
    plain = termplot.heatmap_lines(a, 2, 3, color="none")
    assert plain[0][0] == "?" and plain[1][0] == "?"
    colour = termplot.heatmap_lines(a, 2, 2, color="truecolor")[0]
    assert ANSI.sub("", colour).startswith(" ")


def test_panel_lines_stack_titled_heatmaps_within_the_terminal():
    from posenc_cli.plot import PlotSource, terminal_panels

    t = np.arange(64)[:, None] * np.array([1.0, 0.1])[None, :]
    src = PlotSource("rope " + "x" * 100, {"cos": np.cos(t), "sin": np.sin(t)}, {"cos": "cos", "sin": "sin"})
    lines = termplot.panel_lines(terminal_panels(src), 40, 20, color="256")
    assert len(lines) <= 20 and all(termplot.visible_len(line) <= 40 for line in lines)
    titles = [line for line in lines if line.startswith("rope ")]
    assert len(titles) == 2 and all(t.endswith("...") for t in titles)


def test_color_mode_from_the_environment():
    assert termplot.color_mode({"NO_COLOR": "1", "COLORTERM": "truecolor"}) == "none"
    assert termplot.color_mode({"TERM": "dumb"}) == "none"
    assert termplot.color_mode({"COLORTERM": "truecolor"}) == "truecolor"
    assert termplot.color_mode({}) == "256"


def test_256_colour_mapping_is_nearest():
    assert termplot.rgb_to_256((255, 0, 0)) == 196
    assert termplot.rgb_to_256((0, 0, 0)) == 16
    assert termplot.rgb_to_256((128, 128, 128)) == 244


# ----- start-up: the human views import neither rich nor matplotlib --------------------------------------------------
def test_render_and_termplot_import_neither_rich_nor_matplotlib():
    import subprocess
    import sys

    code = (
        "import sys, posenc_cli.render, posenc_cli.termplot, posenc_cli.plot; "
        "print(sorted(m for m in ('rich', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
