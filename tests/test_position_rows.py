"""Rows that are not positions (checks/rows.py): a class row, fairseq's offset and padding rows, a vision tower's
unrotated class row are left out of every property of positions and named in the report, whoever says them (the
kind's parameters, the metadata's ``extra_rows``, ``--extra-rows``); a wrong position row still fails; the tables
are built with plain NumPy from the references' own formulas (MAE's ``get_2d_sincos_pos_embed``, fairseq's
``SinusoidalPositionalEmbedding.get_embedding``), never with posenc's generator."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from posenc_cli import api
from posenc_cli.checks.rows import describe
from posenc_cli.render import report_json

from .conftest import cli
from .each import each

ROOT = Path(__file__).resolve().parent.parent
#: what a table of positions must have to pass as the kind's (the properties a class or padding row broke)
POSITIONS = ("distinct", "unique", "constant-norm")


def mae_table(grid: int = 4, dim: int = 16) -> np.ndarray:
    """facebookresearch/mae util/pos_embed.py get_2d_sincos_pos_embed(dim, grid, cls_token=True), line by line."""

    def one_axis(d: int, pos: np.ndarray) -> np.ndarray:
        omega = 1.0 / 10000 ** (np.arange(d // 2, dtype=np.float64) / (d / 2.0))
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)

    g = np.arange(grid, dtype=np.float32)
    coords = np.stack(np.meshgrid(g, g), axis=0).reshape(2, 1, grid, grid)  # meshgrid(grid_w, grid_h)
    emb = np.concatenate([one_axis(dim // 2, coords[0]), one_axis(dim // 2, coords[1])], axis=1)
    return np.concatenate([np.zeros((1, dim)), emb], axis=0).astype(np.float32)


def fairseq_table(rows: int = 24, dim: int = 16, padding_idx: int = 3) -> np.ndarray:
    """fairseq SinusoidalPositionalEmbedding.get_embedding(rows, dim, padding_idx) in float32, as its torch code."""
    half = dim // 2
    step = math.log(10000) / (half - 1)
    freqs = np.exp(np.arange(half, dtype=np.float32) * np.float32(-step))
    ang = np.arange(rows, dtype=np.float32)[:, None] * freqs[None, :]
    out = np.concatenate([np.sin(ang), np.cos(ang)], axis=1).astype(np.float32)
    out[padding_idx] = 0
    return out


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, str]:
    path = tmp_path_factory.mktemp("rows")
    out = {}
    mae = mae_table()
    wrong = mae.copy()
    wrong[6] *= 1.5  # one patch row off: its norm is not the others'
    fair = fairseq_table()
    fair_wrong = fair.copy()
    fair_wrong[10, :3] = fair_wrong[11, :3]  # one position row off
    for name, t in (("mae", mae), ("mae_wrong", wrong), ("fairseq", fair), ("fairseq_wrong", fair_wrong)):
        out[name] = str(path / f"{name}.npy")
        np.save(out[name], t)
    return out


def statuses(rep) -> dict[str, str]:
    return {r.name: r.status for r in rep.results}


def test_correct_tables_with_rows_that_are_not_positions_pass_and_say_which(tables: dict[str, str]) -> None:
    """Each way a table says its extra rows: identified from its structure (a .npy with no metadata), the kind's
    parameters (a spec), told with extra_rows (the kind given, identification off)."""
    cases = [
        (tables["mae"], {}, {0: "cls"}, "sinusoidal-2d with cls_token=true"),
        (tables["mae"], {"expect": "sinusoidal-2d", "identify": False, "extra_rows": "0:cls"}, {0: "cls"}, "as given"),
        ("sinusoidal-2d:cls_token=true,grid=4x4", {"dim": 16}, {0: "cls"}, "sinusoidal-2d with cls_token=true"),
        (tables["fairseq"], {}, {0: "offset", 1: "offset", 2: "offset", 3: "padding"}, "padding_idx=3"),
        ("sinusoidal:padding_idx=3", {"length": 20, "dim": 16}, {0: "offset", 1: "offset", 2: "offset", 3: "padding"},
         "sinusoidal with padding_idx=3, offset=0"),
        ("rope-2d:preset=eva02,grid=4x4", {"dim": 16}, {0: "cls"}, "prefix_rows=1"),
    ]  # fmt: skip
    for source, kw, rows, origin in cases:
        rep = api.check(source, **kw)
        assert rep.ok, (source, kw, rep.failed)
        assert rep.left_out is not None and rep.left_out["rows"] == {str(i): n for i, n in rows.items()}, rep.left_out
        assert origin in rep.left_out["origin"], rep.left_out
        assert rep.left_out["text"].startswith(describe(rows) + ": not checked"), rep.left_out
        n = api.open_table(source, **{k: v for k, v in kw.items() if k in ("length", "dim")}).array(rep.tensor).shape[0]
        judged = next(r for r in rep.results if r.name == "distinct")
        assert judged.value == n - len(rows) and judged.data["rows"] == n - len(rows), judged  # the positions only
        assert all(statuses(rep)[p] == "PASS" for p in POSITIONS if p in statuses(rep)), statuses(rep)


def test_without_being_told_the_class_row_fails_a_correct_table(tables: dict[str, str]) -> None:
    """What the fix is for: the same correct table, judged on every row, fails constant-norm (the zero class row)."""
    rep = api.check(tables["mae"], expect="sinusoidal-2d", identify=False)
    assert not rep.ok and "constant-norm" in rep.failed and rep.left_out is None


def test_a_wrong_position_row_still_fails(tables: dict[str, str]) -> None:
    rep = api.check(tables["mae_wrong"], expect="sinusoidal-2d", identify=False, extra_rows="0:cls")
    assert rep.left_out is not None and "constant-norm" in rep.failed, statuses(rep)
    rep = api.check(tables["fairseq_wrong"], against="sinusoidal:preset=fairseq,padding_idx=3")
    assert rep.left_out is not None and not rep.ok and {"constant-norm", "equidistant"} <= set(rep.failed), rep.failed


def test_the_rows_left_out_are_still_read_by_the_checks_of_the_stored_tensors() -> None:
    """finite and matches-spec read every row: a class row that is not the spec's zero row fails matches-spec, a
    NaN in it fails finite, while the properties of positions hold."""
    bad_cls = mae_table()
    bad_cls[0] = 0.5
    rep = api.check(bad_cls, against="sinusoidal-2d:cls_token=true,grid=4x4")
    st = statuses(rep)
    assert st["matches-spec"] == "FAIL" and st["constant-norm"] == "PASS" and not rep.ok, st
    nan_cls = mae_table()
    nan_cls[0, 3] = np.nan
    rep = api.check(nan_cls, expect="sinusoidal-2d", identify=False, extra_rows="0:cls")
    assert statuses(rep)["finite"] == "FAIL" and "finite" in rep.failed


def test_the_human_and_json_reports_name_the_rows(tables: dict[str, str]) -> None:
    code, out, err = cli(["check", tables["fairseq"]])
    text = " ".join(out.decode().split())
    assert code == 0, err
    assert "rows 0-2 (offset) and row 3 (padding) are not positions: not checked (sinusoidal with padding_idx=3" in text
    code, out, err = cli(["check", tables["mae"], "--no-identify", "--expect", "sinusoidal-2d", "--extra-rows", "0:cls",
                          "--json"])  # fmt: skip
    assert code == 0, err
    left = json.loads(out)[0]["left_out"]
    assert left == {"rows": {"0": "cls"}, "origin": "as given: 0:cls", "positions": [1, 17],
                    "text": "row 0 (cls) is not a position: not checked (as given: 0:cls)"}  # fmt: skip
    schema = json.loads((ROOT / "docs" / "check-report.schema.json").read_text())
    import jsonschema

    jsonschema.validate([report_json(api.check(tables["mae"]))], schema)


EXTRA_ROWS_REFUSED = [
        (["alibi", "--len", "8", "--dim", "4", "--extra-rows", "0:cls"],
         "--extra-rows 0:cls cannot apply to alibi: its table is not one row per position"),
        (["{mae}", "--no-identify", "--extra-rows", "40:cls"], "row 40 is outside"),
        (["{mae}", "--no-identify", "--extra-rows", "0:cls,5:reg"], "row 5 (reg) lies between position rows 1 and 16"),
        (["sinusoidal-2d:cls_token=true,grid=4x4", "--dim", "16", "--extra-rows", "1:reg"],
         "--extra-rows 1:reg contradicts sinusoidal-2d:cls_token=true,grid=4x4: sinusoidal-2d with cls_token=true says "
         "row 0 (cls) is not a position"),
        (["{mae}", "--extra-rows", "1:reg"], "row 1 (reg) lies between position rows 0 and 16"),
        (["{mae}", "--no-identify", "--extra-rows", "cls"], "'cls' is not INDEX:NAME"),
        (["{mae}", "--no-identify", "--extra-rows", "0:cls,0:reg"], "names row 0 twice"),
        (["{mae}", "--no-identify", "--extra-rows", ",".join(f"{i}:x" for i in range(17))], "nothing is left to check"),
]  # fmt: skip


def test_extra_rows_that_cannot_apply_are_refused_by_name(tables: dict[str, str]) -> None:
    """Each of :data:`EXTRA_ROWS_REFUSED` (one test over the eight: :func:`tests.each.each` names each failing
    case by its needle)."""
    needles = {needle: args for args, needle in EXTRA_ROWS_REFUSED}

    def check(needle: str) -> None:
        args = [a.replace("{mae}", tables["mae"]) for a in needles[needle]]
        code, _, err = cli(["check", *args, "-q"])
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and needle.replace("{mae}", tables["mae"]) in lines[0], err

    assert len(needles) == len(EXTRA_ROWS_REFUSED)
    each(needles, check)


def test_the_audit_of_the_vit_mae_folder_passes_and_names_the_class_row() -> None:
    report = api.audit(str(ROOT / "tests" / "data" / "models" / "tiny_vit_mae"))
    checks = [r for r in report.rows if r.engine == "check"]
    assert report.ok and len(checks) == 2, [(r.engine, r.verdict, r.explanation) for r in report.rows]
    for row in checks:
        assert row.verdict == "agree" and "row 0 (cls) is not a position: not checked" in row.explanation, row


def test_describe_groups_runs_of_one_name() -> None:
    assert describe({0: "cls"}) == "row 0 (cls) is not a position"
    assert describe({3: "padding", 0: "offset", 1: "offset", 2: "offset"}) == (
        "rows 0-2 (offset) and row 3 (padding) are not positions"
    )
    assert describe({0: "cls", 1: "reg", 2: "reg", 9: "cls"}) == (
        "row 0 (cls), rows 1-2 (reg) and row 9 (cls) are not positions"
    )


def test_identify_reads_the_positions_of_a_table_with_a_learned_class_row(tmp_path: Path) -> None:
    """A sin-cos grid behind a learned (nonzero) class row is no table of one kind; told which row is not a position,
    identify names the grid from the positions and says the row it left out."""
    table = mae_table()
    table[0] = np.random.default_rng(0).normal(0, 0.02, table.shape[1])
    path = tmp_path / "learned_cls.npy"
    np.save(path, table)
    assert api.identify(str(path)).best is None
    found = api.identify(str(path), extra_rows="0:cls")
    assert found.command == "posenc generate --kind sinusoidal-2d --len 16 --dim 16 -p grid=4x4", found.summary
    assert found.left_out is not None and found.left_out["rows"] == {"0": "cls"}
    code, out, err = cli(["identify", str(path), "--extra-rows", "0:cls"])
    assert code == 0 and "row 0 (cls) is not a position: not identified (as given: 0:cls)" in out.decode(), err
    # check identifies the positions the same way, and holds them to the spec found (the class row left out)
    rep = api.check(str(path), extra_rows="0:cls")
    assert rep.ok and rep.kind == "sinusoidal-2d" and statuses(rep)["matches-spec"] == "PASS", statuses(rep)
    assert rep.assumed_command == found.command and rep.left_out["rows"] == {"0": "cls"}
    wrong = table.copy()
    wrong[7, :4] = wrong[8, :4]  # a position row off: not what the grid found regenerates
    np.save(path, wrong)
    rep = api.check(str(path), extra_rows="0:cls", expect="sinusoidal-2d")
    assert not rep.ok and "constant-norm" in rep.failed, statuses(rep)
