"""Audits that compare something, and reports people keep (issue 35, parts 2 and 7).

A model whose reading sets no length (T5 buckets, Bloom's ALiBi) is audited at the config's context or its kind's
own default, and its table is checked for the properties its kind requires; an audit that compared nothing says
so and exits 1. ``--json`` is compact (each diverging row's picture is its tensor and shape), ``--json-details``
carries the grids, ``--html`` draws what the eye can see. Every api verb taking a spec takes ``length``/``dim``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import posenc_cli as pe
from posenc_cli.auditing.report import SCHEMA_PATH
from posenc_cli.errors import ParameterError

from .conftest import ROOT, cli

CONFIGS = ROOT / "tests" / "data" / "configs"
EXAMPLES = ROOT / "docs" / "examples"


@pytest.fixture(scope="module")
def validate():
    """A report against schema.json: jsonschema for all but the pictures' long runs of one item schema, whose
    items are held to it in plain Python (tests/test_audit.py's ``validate``: the detailed report's grids took
    jsonschema 0.6 CPU-s)."""
    from .test_audit import validate as against

    schema = json.loads(Path(SCHEMA_PATH).read_text())
    return lambda data: against(data, schema)


def _audit(args: list[str]) -> tuple[int, dict, str]:
    code, out, err = cli(["audit", *args, "--json"])
    return code, json.loads(out), err


# ----- part 2: a default length, and tables compared --------------------------------------------------------------
def test_a_t5_config_is_audited_at_its_n_positions_and_its_buckets_checked(validate):
    code, data, err = _audit([str(CONFIGS / "positions" / "pos_t5_small.json")])
    validate(data)
    assert code == 0 and data["ok"] and data["compared"] == 2, err
    assert data["length"] == 512  # t5-small's n_positions
    assert [(r["layer_type"], r["engine"], r["verdict"]) for r in data["rows"]] == [
        ("encoder", "hf", "reference"), ("encoder", "check", "agree"),
        ("decoder", "hf", "reference"), ("decoder", "check", "agree"),
    ]  # fmt: skip
    assert all("t5-saturation" in r["explanation"] for r in data["rows"] if r["engine"] == "check")
    assert any("compared at 512 positions (config key n_positions)" in n for n in data["notes"]), data["notes"]
    code, data, _ = _audit([str(CONFIGS / "positions" / "pos_t5_small.json"), "--len", "300"])
    assert code == 0 and data["length"] == 300 and not any("compared at" in n for n in data["notes"])


def test_a_bloom_config_without_a_length_is_audited_at_alibis_own_default(validate):
    code, data, err = _audit([str(CONFIGS / "published" / "bloom-560m.json")])
    validate(data)
    assert code == 0 and data["compared"] == 1, err
    (check,) = [r for r in data["rows"] if r["engine"] == "check"]
    assert check["verdict"] == "agree" and check["length"] == 512
    assert any("alibi's own default" in n and "Press et al. 2022" in n for n in data["notes"]), data["notes"]


def test_an_audit_that_compared_nothing_says_so_and_exits_1(tmp_path):
    config = tmp_path / "config.json"
    config.write_text((CONFIGS / "llama.json").read_text())
    code, data, _ = _audit([str(config), "--engine", "hf"])
    assert code == 1 and data["compared"] == 0 and data["ok"] is False and data["exit_code"] == 1
    assert any(n.startswith("nothing compared: only the reference tables were built") for n in data["notes"])
    code, _out, err = cli(["audit", str(config), "--engine", "hf"])
    assert code == 1 and err.startswith("NOTHING COMPARED: no row compared a table"), err


# ----- part 7: compact JSON, details on request, small HTML -------------------------------------------------------
@pytest.fixture(scope="module")
def diverging():
    """A GGUF that lost its llama3 scaling, against its config: one row differs, with a picture."""
    pytest.importorskip("gguf")
    args = [str(EXAMPLES / "llama-3.1-no-rope-freqs.gguf"), "--against", str(EXAMPLES / "llama-3.1-8b.json"),
            "--len", "2048", "--engine", "hf"]  # fmt: skip
    report = pe.audit(args[0], against=args[2], length=2048, engine="hf")
    return args, report


def test_json_is_compact_and_details_carry_the_grids(diverging, validate):
    args, report = diverging
    code, out, _ = cli(["audit", *args, "--json"])
    code_d, out_d, _ = cli(["audit", *args, "--json-details"])
    assert code == code_d == 1
    compact, detailed = json.loads(out), json.loads(out_d)
    validate(compact)
    validate(detailed)
    assert compact["details"] is False and detailed["details"] is True
    (row,) = [r for r in compact["rows"] if r["verdict"] == "differ"]
    assert row["picture"] == {"tensor": row["picture"]["tensor"], "rows": 2048, "columns": 128}
    (full,) = [r for r in detailed["rows"] if r["verdict"] == "differ"]
    assert len(full["picture"]["grid"]) > 100 and full["picture"]["spectrum"] is not None
    assert len(out) < 8_000 < len(out_d)
    # everything but the grids is the same report
    full["picture"] = row["picture"]
    assert {**detailed, "details": False} == compact
    assert report.to_json() == compact and report.to_json(details=True)["details"] is True


def test_html_draws_what_the_eye_can_see(diverging, tmp_path):
    _args, report = diverging
    from posenc_cli.report_html import CELL_PX, W, page

    text = page(report)
    assert len(text) < 150_000, len(text)  # 2.4 MB for the Phi-3.5 audit before
    assert "<script" not in text and "http" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    for svg in re.findall(r"<svg.*?</svg>", text, re.S):
        cells = [float(w) for w in re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)" height="([\d.]+)"',
                                              svg) for w in w]  # fmt: skip
        assert all(c >= CELL_PX - 0.01 for c in cells[2:]), "a heatmap cell smaller than the eye sees"
        assert svg.count("<rect") <= (W // CELL_PX) * (150 // CELL_PX)
        for points in re.findall(r'points="([^"]*)"', svg):
            assert len(points.split()) <= 300  # a few hundred points per curve


def test_py_typed_ships_in_the_package():
    """PEP 561: the marker sits in the package directory, which hatch's wheel target takes whole."""
    assert (ROOT / "posenc_cli" / "py.typed").is_file()
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["posenc_cli"] and not wheel.get("exclude") and not wheel.get("only-include")


# ----- every api verb that takes a spec takes length= / dim= ------------------------------------------------------
def test_every_api_verb_taking_a_spec_takes_length_and_dim(tmp_path):
    rope = pe.generate("rope", length=1024, dim=64)
    spec = "rope:base=1000000"
    assert pe.open_table(spec, length=1024, dim=64).array("cos").shape == (1024, 64)
    assert pe.check(spec, length=32, dim=8).kind == "rope"
    assert pe.check_all(spec, length=32, dim=8)[0].ok
    assert pe.identify("sinusoidal", length=64, dim=16).best is not None
    res = pe.compare(rope, spec, length=1024)  # was a TypeError
    assert res.same is False
    assert pe.compare(spec, spec, length=16, dim=8).same
    written = pe.write(tmp_path / "x.safetensors", spec, length=16, dim=8)
    assert dict(written)["cos"] == (16, 8)
    for verb, args in ((pe.check, (rope,)), (pe.identify, (rope,)), (pe.compare, (rope, rope))):
        with pytest.raises(ParameterError, match=r"length=16 applies to a spec"):
            verb(*args, length=16)


def test_an_audit_row_names_parameters_as_its_reader_spells_them():
    """The audit's rows carry the references of the errors they hold: ``--len`` on the command line (the option
    audit takes), ``length=`` for Python callers (the issue's 'pass length=512' in a CLI report)."""
    pytest.importorskip("gguf")
    gguf, config = str(EXAMPLES / "llama-3.1-no-rope-freqs.gguf"), str(EXAMPLES / "llama-3.1-8b.json")
    report = pe.audit(gguf, against=config, length=100_000_000, engine="hf")
    (row,) = [r for r in report.to_json()["rows"] if r["verdict"] == "error"]
    assert row["explanation"].startswith("length=100000000: the verdict would hold"), row
    code, out, _ = cli(["audit", gguf, "--against", config, "--len", "100000000", "--engine", "hf", "--json"])
    (row,) = [r for r in json.loads(out)["rows"] if r["verdict"] == "error"]
    assert code == 2 and row["explanation"].startswith("--len 100000000: the verdict would hold"), row


def test_a_picture_s_non_finite_values_are_spelled_and_pooled_as_the_largest():
    """A picture holding nan and inf: the JSON spells them 'nan' / 'inf' / '-inf' (finite values stay numbers),
    and the HTML heatmap's max-pooling takes a non-finite cell as a block's largest (plain max otherwise)."""
    import math

    from posenc_cli.auditing.report import Picture
    from posenc_cli.report_html import _pool

    grid = [[0.5, 2.0, 1.0, 0.25], [1.5, math.nan, 3.0, 0.5], [0.1, 0.2, -math.inf, 0.3], [4.0, 0.0, 0.0, math.inf]]
    pic = Picture("cos", 4, 4, [0, 1, 2, 3], [2.0, math.nan, 0.3, math.inf], [4.0, 2.0, 3.0, 0.5], grid)
    data = pic.to_json()
    assert data["by_position"] == [2.0, "nan", 0.3, "inf"] and data["by_column"] == [4.0, 2.0, 3.0, 0.5]
    assert data["grid"][0] == [0.5, 2.0, 1.0, 0.25] and data["grid"][1][1] == "nan" and data["grid"][2][2] == "-inf"
    assert all(type(x) is float for x in data["grid"][0])
    pooled = _pool(grid, 2, 2)
    assert pooled[0][1] == 3.0 and pooled[1][0] == 4.0  # finite blocks: their maximum
    assert math.isnan(pooled[0][0]) and pooled[1][1] == -math.inf  # the first non-finite cell of a block
    spelled = _pool(data["grid"], 2, 2)  # the JSON report's spelling
    assert spelled == [["nan", 3.0], [4.0, "-inf"]]
