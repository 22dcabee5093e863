"""``posenc audit`` and ``posenc_cli.audit``: every checkable thing of a model against HF's tables, one report.

Expected numbers are built with plain NumPy from the formulas (cos(t w), LongRoPE's factors, a changed base),
never with posenc's own generator; the mistaken artifacts are made by rewriting real files (a real
convert_hf_to_gguf.py output with another freq_base, weights with a NaN, a truncated GGUF, an ONNX model of
random bytes). The report's JSON is validated against posenc_cli/auditing/schema.json with jsonschema.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import posenc_cli
from posenc_cli.auditing import hub
from posenc_cli.auditing.report import SCHEMA_PATH

from .conftest import cli
from .each import each

DATA = Path(__file__).resolve().parent / "data"
LLAMACPP = DATA / "llamacpp"

HEAD, HEADS, MAXPOS, ORIG, THETA = 64, 4, 8192, 2048, 10000.0
rng = np.random.default_rng(11)
SHORT = [float(x) for x in np.round(1 + rng.random(HEAD // 2) * 0.2, 4)]
LONG = [float(x) for x in np.round(1 + np.linspace(0, 30, HEAD // 2), 4)]
PHI = {
    "model_type": "phi3", "hidden_size": HEAD * HEADS, "num_attention_heads": HEADS, "num_key_value_heads": HEADS,
    "max_position_embeddings": MAXPOS, "original_max_position_embeddings": ORIG, "rope_theta": THETA,
    "rope_scaling": {"type": "longrope", "short_factor": SHORT, "long_factor": LONG},
}  # fmt: skip


def audit_json(args: list[str], env: dict | None = None) -> tuple[int, dict, str]:
    """The audit's JSON with its pictures' grids (--json-details; --json alone is compact)."""
    code, out, err = cli(["audit", *args, "--json-details"], env=env)
    return code, (json.loads(out) if out.strip() else {}), err


def rows(data: dict, **match) -> list[dict]:
    return [r for r in data["rows"] if all(r[k] == v for k, v in match.items())]


@pytest.fixture(scope="module")
def schema() -> dict:
    import jsonschema

    loaded = json.loads(Path(SCHEMA_PATH).read_text())
    jsonschema.Draft202012Validator.check_schema(loaded)  # once: the schema itself is a valid 2020-12 schema
    return loaded


#: a picture's arrays: long runs of one item schema (``$defs/number``, or an array of them for ``grid``)
_PICTURE_RUNS = ("positions", "by_position", "by_column", "grid")


def _is_number(x: object) -> bool:
    """``$defs/number`` of schema.json in plain Python: a JSON number, or 'nan', 'inf', '-inf'."""
    return type(x) in (int, float) or x in ("nan", "inf", "-inf")


def validate(data: dict, schema: dict) -> None:
    """``data`` against ``schema`` (checked once by the fixture), the first error raised: ``jsonschema.validate``
    checks the schema on every call and walks every error of a broken report. A picture is 16384 numbers of one
    item schema, which jsonschema walks at about 0.5 CPU-s a report: the schema validates each run's first items,
    and every item of it is held to the same rule in plain Python (``_is_number``; ``positions`` integers)."""
    import jsonschema

    short = json.loads(json.dumps(data))
    for row, full in zip(short.get("rows") or [], data.get("rows") or []):
        pic, whole = row.get("picture"), full.get("picture")
        for key in _PICTURE_RUNS if pic else ():
            run = whole.get(key)
            if not isinstance(run, list) or not run:
                continue
            rows_ok = key != "grid" or all(isinstance(r, list) for r in run)
            items = [x for r in run for x in r] if key == "grid" and rows_ok else run
            good = (lambda x: type(x) is int) if key == "positions" else _is_number
            if not (rows_ok and all(good(x) for x in items)):
                raise jsonschema.ValidationError(f"picture {key}: an item is not what $defs allows")
            pic[key] = [r[:2] for r in run[:2]] if key == "grid" else run[:2]
    jsonschema.Draft202012Validator(schema).validate(short)


def model_dir(tmp_path: Path, name: str = "qwen2") -> Path:
    """A model directory holding a real config.json and its real GGUF conversion."""
    d = tmp_path / "model"
    d.mkdir(exist_ok=True)
    shutil.copy(LLAMACPP / f"{name}.config.json", d / "config.json")
    shutil.copy(LLAMACPP / f"{name}.gguf", d / f"{name}.gguf")
    return d


# ----- a model directory: the config, every engine, the GGUF beside it ---------------------------------------
def test_a_faithful_model_directory_agrees_everywhere(tmp_path, schema):
    pytest.importorskip("gguf")
    d = model_dir(tmp_path)
    code, data, err = audit_json([str(d), "--len", "1024"])  # every engine's verdict, not the length, is the property
    assert code == 0, err
    validate(data, schema)
    assert data["ok"] and data["exit_code"] == 0 and data["model_type"] == "qwen2" and data["length"] == 1024
    (ref,) = rows(data, verdict="reference")
    assert (ref["artifact"], ref["engine"]) == ("config.json", "hf") and "base 1e+06" in ref["explanation"]
    engines = {r["engine"] for r in rows(data, artifact="config.json")}
    assert engines == {"hf", "llamacpp", "mlx", "vllm", "sglang", "onnx-genai", "exllamav3"}
    (g,) = [r for r in rows(data, artifact="qwen2.gguf") if r["layer_type"] != "weights"]
    assert g["verdict"] == "agree" and g["engine"] == "llamacpp" and g["length"] == 1024
    # ggml's float32 iteration: within ~1e-4 of the exact angles at 1024 positions, and not exactly 0
    assert 0 < g["max_abs_diff"] < 1e-3


def test_a_gguf_with_another_base_differs_and_shows_where(tmp_path, schema):
    pytest.importorskip("gguf")
    import gguf

    from .test_llamacpp_verdict import mutate

    d = model_dir(tmp_path)
    (d / "qwen2.gguf").unlink()
    mutate(LLAMACPP / "qwen2.gguf", d / "wrong.gguf",
           set_keys={"qwen2.rope.freq_base": (500000.0, gguf.GGUFValueType.FLOAT32)})  # fmt: skip
    n = 2048
    code, data, err = audit_json([str(d), "--len", str(n), "--engine", "hf"])
    assert code == 1, err
    validate(data, schema)
    (g,) = [r for r in rows(data, artifact="wrong.gguf") if r["layer_type"] != "weights"]
    assert g["verdict"] == "differ"
    assert "500000" in g["explanation"] and "1e+06" in g["explanation"]
    # the largest difference per column, from the formula: cos(t w) with w = base^(-2j/d), both bases
    t = np.arange(n, dtype=np.float64)[:, None]
    j = np.arange(64, dtype=np.float64)
    cos_a, cos_b = np.cos(t * 500000.0 ** (-2 * j / 128)), np.cos(t * 1e6 ** (-2 * j / 128))
    sin_a, sin_b = np.sin(t * 500000.0 ** (-2 * j / 128)), np.sin(t * 1e6 ** (-2 * j / 128))
    want = {"cos": np.abs(cos_a - cos_b).max(axis=0), "sin": np.abs(sin_a - sin_b).max(axis=0)}
    pic = g["picture"]
    assert pic is not None and pic["rows"] == n and pic["columns"] == 128
    per_column = np.asarray(pic["by_column"], dtype=float)
    np.testing.assert_allclose(per_column[:64], want[pic["tensor"]], atol=2e-3)
    np.testing.assert_allclose(per_column[64:], want[pic["tensor"]], atol=2e-3)  # rotate_half: both halves
    assert g["max_abs_diff"] == pytest.approx(max(want["cos"].max(), want["sin"].max()), abs=2e-3)
    assert pic["spectrum"]["artifact"][1] == pytest.approx(500000.0 ** (-2 / 128), rel=1e-6)
    assert pic["spectrum"]["reference"][1] == pytest.approx(1e6 ** (-2 / 128), rel=1e-6)


#: positions of :func:`gemma_export`'s caches: two of the ONNX check's blocks at its 128 frequencies (a scan that
#: stops at the first block is seen), as many as Gemma 3's sliding window
GEMMA_ROWS = 512


def gemma_export(tmp_path: Path, full_base: float, local_base: float) -> Path:
    """A Gemma 3 directory (its published config, GEMMA_ROWS positions) with an ONNX export holding two caches, one
    per attention type (two RotaryEmbedding nodes), made with plain NumPy as onnxruntime-genai's builder makes them."""
    from onnx import TensorProto, helper, numpy_helper

    from .onnx_models import genai_caches, save

    d = tmp_path / "gemma"
    (d / "onnx").mkdir(parents=True)
    config = json.loads((LLAMACPP / "gemma3.config.json").read_text())
    config["max_position_embeddings"] = n = GEMMA_ROWS
    (d / "config.json").write_text(json.dumps(config))
    full, local = genai_caches(256, full_base, n), genai_caches(256, local_base, n)
    inits = [numpy_helper.from_array(a, n) for n, a in (("cos_full", full[0]), ("sin_full", full[1]),
                                                        ("cos_local", local[0]), ("sin_local", local[1]))]  # fmt: skip
    nodes = [
        helper.make_node("RotaryEmbedding", ["X", "position_ids", f"cos_{g}", f"sin_{g}"], [f"Y{i}"],
                         name=f"/model/layers.{i}/attn/q_rotary/RotaryEmbedding", domain="com.microsoft",
                         interleaved=0, num_heads=0, rotary_embedding_dim=0)
        for i, g in enumerate(("full", "local"))
    ]  # fmt: skip
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, "seq", 256])
    pos = helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "seq"])
    ys = [helper.make_tensor_value_info(f"Y{i}", TensorProto.FLOAT, [1, "seq", 256]) for i in range(2)]
    model = helper.make_model(helper.make_graph(nodes, "rope", [x, pos], ys, initializer=inits),
                              opset_imports=[helper.make_opsetid("", 23), helper.make_opsetid("com.microsoft", 1)])  # fmt: skip
    model.ir_version = 10
    save(model, str(d / "onnx" / "model.onnx"))
    return d


def test_an_onnx_export_with_a_cache_per_layer_type_is_matched_to_them(tmp_path, schema):
    pytest.importorskip("onnx")
    d = gemma_export(tmp_path, 1e6, 1e4)
    code, data, err = audit_json([str(d), "--engine", "hf"])
    assert code == 0, err
    validate(data, schema)
    onnx_rows = rows(data, engine="onnx")
    assert {r["layer_type"] for r in onnx_rows} == {"full_attention", "sliding_attention"}
    # the builder rounds t * w to float32: within n * 2**-23 at n positions, not exactly 0
    assert all(r["verdict"] == "agree" and 0 < r["max_abs_diff"] < GEMMA_ROWS * 2**-23 for r in onnx_rows)
    assert all(r["picture"] is None for r in onnx_rows)  # pictures are drawn for diverging rows only
    # the local cache exported with the global base: the sliding layers' row differs, by what the bases make
    d2 = gemma_export(tmp_path / "bad", 1e6, 1e6)
    code, data, err = audit_json([str(d2), "--engine", "hf"])
    assert code == 1, err
    verdicts = {r["layer_type"]: r for r in rows(data, engine="onnx")}
    assert verdicts["full_attention"]["verdict"] == "agree"
    t = np.arange(float(GEMMA_ROWS))[:, None]
    j = np.arange(128.0)
    want = max(np.abs(np.cos(t * 1e6 ** (-j / 128)) - np.cos(t * 1e4 ** (-j / 128))).max(),
               np.abs(np.sin(t * 1e6 ** (-j / 128)) - np.sin(t * 1e4 ** (-j / 128))).max())  # fmt: skip
    bad = verdicts.get("sliding_attention")
    assert bad is not None and bad["verdict"] == "differ", data["rows"]
    assert bad["max_abs_diff"] == pytest.approx(want, abs=1e-4)
    assert bad["picture"]["tensor"] in ("cos_cache", "sin_cache") and max(
        bad["picture"]["by_position"]
    ) == pytest.approx(bad["max_abs_diff"])


# ----- engines ---------------------------------------------------------------------------------------------
def test_an_engine_that_departs_from_hf_differs_by_the_formula(diverging_report, schema):
    """mlx-lm's SuScaledRoPE uses the long factors at every length; HF uses the short ones up to the original
    context: at 2048 positions the tables differ by exactly what the two factor lists make. (The report of the
    reports' tests below: the same audit, built once.)"""
    data = json.loads(json.dumps(diverging_report.to_json(details=True)))
    validate(data, schema)
    assert data["engines"] == ["hf", "mlx", "vllm"] and data["exit_code"] == 1
    (m,) = rows(data, engine="mlx")
    assert m["verdict"] == "differ" and "long_factor" in m["explanation"]
    s = math.sqrt(1 + math.log(MAXPOS / ORIG) / math.log(ORIG))
    t = np.arange(ORIG, dtype=np.float64)[:, None]
    base = THETA ** (np.arange(0, HEAD, 2) / HEAD)
    w_short, w_long = 1 / (np.array(SHORT) * base), 1 / (np.array(LONG) * base)
    worst = max(np.abs(s * np.cos(t * w_long) - s * np.cos(t * w_short)).max(),
                np.abs(s * np.sin(t * w_long) - s * np.sin(t * w_short)).max())  # fmt: skip
    assert m["max_abs_diff"] == pytest.approx(worst, abs=1e-5)
    np.testing.assert_allclose(m["picture"]["spectrum"]["artifact"], w_long, rtol=1e-6)
    np.testing.assert_allclose(m["picture"]["spectrum"]["reference"], w_short, rtol=1e-6)


def test_engines_are_validated_by_name():
    code, _out, err = cli(["audit", str(LLAMACPP / "qwen2.config.json"), "--engine", "vllm,tgi"])
    assert code == 2 and err.count("\n") == 1
    assert "unknown engine 'tgi'" in err and "vllm" in err and "--engine" in err


# ----- learned tables in the weights ------------------------------------------------------------------------
def test_a_learned_table_is_read_from_the_weights_and_checked(tmp_path, schema):
    from safetensors.numpy import load_file, save_file

    d = tmp_path / "gpt2"
    shutil.copytree(DATA / "models" / "tiny_gpt2", d)
    code, data, err = audit_json([str(d)])
    assert code == 0, err
    validate(data, schema)
    (row,) = data["rows"]
    assert (row["artifact"], row["engine"], row["verdict"]) == ("model.safetensors", "hf", "agree")
    assert "wpe.weight (24x16)" in row["explanation"]
    weights = load_file(str(d / "model.safetensors"))
    name = next(n for n in weights if n.endswith("wpe.weight"))
    weights[name] = weights[name].copy()
    weights[name][5, 3] = np.nan
    save_file(weights, str(d / "model.safetensors"))
    code, data, err = audit_json([str(d)])
    assert code == 1, err
    assert data["rows"][0]["verdict"] == "failed" and "finite" in data["rows"][0]["explanation"]


# ----- vision tables: a property of the table told apart from a difference ---------------------------------
MODELS = DATA / "models"


def test_the_rows_a_model_repeats_by_design_are_those_its_own_forward_repeats():
    """``designed_repeats`` (the model's rule run over weights of distinct random rows) groups the rows as the
    model's own forward repeats them (tools/golden/vision_rules.py: tiny random weights, torch): SAM 3's tiling
    at its default size and at 30x18, TimeSformer's nearest upsampling of its time-summed grid; none where the
    table is kept as it is."""
    from posenc_cli.models.config_file import load_config
    from posenc_cli.models.vision import designed_repeats

    cases = (("sam3_vit_model", "native"), ("sam3_vit_model", "30x18"), ("timesformer", "24x12"),
             ("timesformer", "30x18"), ("timesformer", "native"))  # fmt: skip
    with np.load(DATA / "vision" / "rules_goldens.npz") as goldens:
        for mt, size in cases:
            golden = goldens[f"{mt}|{size}"]
            path = str(MODELS / f"vision_{mt}")
            got = designed_repeats(path, load_config(path), image_size=None if size == "native" else size)
            _, first, inverse = np.unique(golden, axis=0, return_index=True, return_inverse=True)
            if len(first) == len(golden):
                assert got is None, (mt, size)
            else:  # each row -> the first row equal to it in the model's own output
                np.testing.assert_array_equal(got, first[np.asarray(inverse).reshape(-1)], err_msg=f"{mt} {size}")


def test_rows_the_model_repeats_are_expected_and_a_failed_property_is_no_difference(tmp_path, schema):
    """SAM 3 tiles its 4x4 table to 6x6 at its default size, TimeSformer upsamples by nearest at 24x12: their
    tables are what the models compute, and ``distinct`` fails as their arithmetic makes it (exit 0, said as
    expected of them). A checkpoint whose own rows repeat (row 1 = row 0 of the weights) fails ``distinct`` over
    the rows the model keeps apart: a property failure, told apart from a difference in every report."""
    from safetensors.numpy import load_file, save_file

    from posenc_cli.render import audit_lines, audit_verdict
    from posenc_cli.report_html import markdown, page

    tiled = posenc_cli.audit(str(MODELS / "vision_sam3_vit_model"))
    (row,) = tiled.rows
    assert (row.verdict, tiled.exit_code) == ("agree", 0), row.explanation
    assert len(row.expected) == 1 and row.expected[0].startswith("distinct fails: 20 of 36 position rows repeat")
    assert "over the 16 rows it keeps apart, distinct holds" in row.expected[0]
    assert "the model's own table" in row.explanation and "expected" in row.explanation
    validate(tiled.to_json(), schema)
    nearest = posenc_cli.audit(str(MODELS / "vision_timesformer"), image_size=["24x12"])
    assert [r.verdict for r in nearest.rows] == ["agree", "agree"] and nearest.exit_code == 0
    assert not nearest.rows[0].expected and "18 of 54 position rows" in nearest.rows[1].expected[0]

    d = tmp_path / "sam3"
    shutil.copytree(MODELS / "vision_sam3_vit_model", d)
    weights = load_file(str(d / "model.safetensors"))
    table = weights["embeddings.position_embeddings"].copy()
    table[0, 1] = table[0, 0]  # the checkpoint itself repeats a row: the tiling repeats it again
    weights["embeddings.position_embeddings"] = table
    save_file(weights, str(d / "model.safetensors"))
    broken = posenc_cli.audit(str(d))
    (row,) = broken.rows
    assert (row.verdict, broken.exit_code, row.expected) == ("failed", 1, []), row.explanation
    assert "nothing differs; a required property fails: distinct" in row.explanation
    data = broken.to_json(details=True)
    validate(data, schema)
    assert data["counts"] == {"failed": 1} and data["compared"] == 1 and data["schema"] == "posenc-audit/2"
    text = "\n".join(audit_lines(broken, width=80))
    assert " FAILED " in text and "DIFFER" not in text
    assert audit_verdict(broken) == "A PROPERTY FAILED (1 rows: 1 failed)"
    md = markdown(broken)
    assert "⚠️ failed" in md and "❌" not in md and "DIFFERS" not in md
    html = page(broken)
    assert 'data-verdict="failed"' in html and "DIFFER" not in html and 'data-exit-code="1"' in html
    code, _out, err = cli(["audit", str(d), "-q"])
    assert (code, err.strip()) == (1, "A PROPERTY FAILED (1 rows: 1 failed)")


def test_a_tower_posenc_refuses_is_one_line_and_a_table_the_config_turns_off_is_not_checked(tmp_path, schema):
    """RADIO (its config as transformers 5.24 builds it from its defaults) places positions with code posenc
    does not reproduce: one ``refused`` row and a verdict line naming it, exit 2 (not "a file could not be
    read"). AIMv2 with ``is_native``, InternVL without absolute positions and SAM without ``use_abs_pos`` keep
    no learned table (their checkpoints save none): not checked, said so, not a missing tensor."""
    from safetensors.numpy import load_file, save_file

    from posenc_cli.render import audit_verdict

    mt, method = "radio", "RadioPatchEmbeddings._interpolate_position_embedding"
    (tmp_path / mt).mkdir()
    shutil.copy(DATA / "configs" / "refused_towers" / f"{mt}.json", tmp_path / mt / "config.json")
    # a model directory, and a config file of another name (read as given, not the config.json beside it)
    for given in (tmp_path / mt, DATA / "configs" / "refused_towers" / f"{mt}.json"):
        report = posenc_cli.audit(str(given))
        (row,) = report.rows
        assert (row.verdict, report.exit_code) == ("refused", 2) and method in row.explanation
        assert "does not reproduce" in row.explanation
        assert audit_verdict(report).startswith(f"REFUSED: {mt}'s vision tower places positions with {method} (")
        validate(report.to_json(), schema)
    code, _out, err = cli(["audit", str(tmp_path / "radio"), "-q"])
    assert code == 2 and err.startswith("REFUSED: radio's") and len(err.strip().splitlines()) == 1
    # a wrapper: its text model's rotary is still audited beside the refused tower
    (tmp_path / "molmo2").mkdir()
    shutil.copy(DATA / "configs" / "refused_towers" / "molmo2.json", tmp_path / "molmo2" / "config.json")
    report = posenc_cli.audit(str(tmp_path / "molmo2"), engine="hf,vllm", length=64)
    assert [(r.layer_type, r.engine, r.verdict) for r in report.rows] == [
        ("default", "hf", "reference"), ("default", "vllm", "agree"), ("vision tower", "hf", "refused")]  # fmt: skip
    assert "Molmo2VisionModel.forward" in report.rows[-1].explanation and report.exit_code == 2

    for mt, key, value in (("aimv2_vision_model", "is_native", True),
                           ("internvl_vision", "use_absolute_position_embeddings", False),
                           ("sam_vision_model", "use_abs_pos", False)):  # fmt: skip
        d = tmp_path / mt
        shutil.copytree(MODELS / f"vision_{mt}", d)
        config = json.loads((d / "config.json").read_text())
        config[key] = value
        (d / "config.json").write_text(json.dumps(config))
        weights = load_file(str(d / "model.safetensors"))  # the model made with that config saves no table
        kept = {k: v for k, v in weights.items() if "position_embedding" not in k and not k.endswith("pos_embed")}
        save_file(kept, str(d / "model.safetensors"))
        report = posenc_cli.audit(str(d))
        (row,) = report.rows
        assert row.verdict == "skipped" and row.explanation.startswith("not checked: ")
        assert f"config key {key} is {json.dumps(value)}: this {mt} keeps no learned position table" in row.explanation
        assert "no tensor" not in row.explanation and report.exit_code == 1 and report.notes
        validate(report.to_json(), schema)
        code, _out, err = cli(["export", str(d), "-o", str(tmp_path / f"{mt}.npy")])
        assert code == 2 and "no table to read" in err and "no tensor" not in err
        code, out, _err = cli(["kinds", "--hf-config", str(d / "config.json")])
        assert code == 0 and f"table           none (config key {key} is {json.dumps(value)})" in out.decode()


# ----- bad input ---------------------------------------------------------------------------------------------
def test_a_directory_with_nothing_checkable_is_one_line_exit_2(tmp_path):
    (tmp_path / "README.md").write_text("not a model")
    code, out, err = cli(["audit", str(tmp_path)])
    assert code == 2 and out == b"" and err.count("\n") == 1
    assert "nothing to audit" in err and "config.json" in err


def test_a_gguf_without_a_config_names_against(tmp_path):
    shutil.copy(LLAMACPP / "qwen2.gguf", tmp_path / "m.gguf")
    code, _, err = cli(["audit", str(tmp_path / "m.gguf")])
    assert code == 2 and "--against" in err and err.count("\n") == 1


def test_broken_files_are_their_own_rows_and_the_rest_is_still_checked(tmp_path, schema):
    pytest.importorskip("gguf")
    pytest.importorskip("onnx")
    d = model_dir(tmp_path)
    good = (d / "qwen2.gguf").read_bytes()
    (d / "truncated.gguf").write_bytes(good[: len(good) // 3])
    (d / "onnx").mkdir()
    (d / "onnx" / "model.onnx").write_bytes(np.random.default_rng(0).bytes(4096))
    code, data, err = audit_json([str(d), "--len", "1024", "--engine", "hf,vllm"])
    assert code == 2, err
    validate(data, schema)
    assert data["exit_code"] == 2 and not data["ok"]
    (t,) = rows(data, artifact="truncated.gguf", layer_type="-")
    (o,) = rows(data, artifact=os.path.join("onnx", "model.onnx"))
    assert t["verdict"] == "error" and "truncated.gguf" in t["explanation"]
    assert o["verdict"] == "error" and "model.onnx" in o["explanation"]
    assert rows(data, artifact="qwen2.gguf")[0]["verdict"] == "agree"
    assert rows(data, engine="vllm")[0]["verdict"] == "agree"


def test_an_existing_report_path_is_refused_without_force(tmp_path):
    cfg = str(LLAMACPP / "qwen2.config.json")
    dests = {flag: tmp_path / f"report.{flag[2:]}" for flag in ("--markdown", "--html")}
    for flag, dest in dests.items():
        dest.write_text("keep me")
        code, _out, err = cli(["audit", cfg, "--engine", "hf,vllm", "--len", "64", flag, str(dest)])
        assert code == 2 and f"{dest} exists; pass --force to overwrite" in err
        assert dest.read_text() == "keep me"
    # with --force both are replaced: one audit writes both (64 positions: the size is not what is tested)
    both = [x for flag, dest in dests.items() for x in (flag, str(dest))]
    code, _, err = cli(["audit", cfg, "--engine", "hf,vllm", "--len", "64", *both, "--force"])
    assert code == 0, err
    assert all(dest.read_text() != "keep me" for dest in dests.values())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


# ----- Hub ids: the local cache, the download of position tensors only --------------------------------------
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def fake_cache(root: Path, repo: str, files: dict[str, Path], ref: str = "main") -> Path:
    base = root / ("models--" + repo.replace("/", "--"))
    snap = base / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (base / "refs").mkdir()
    (base / "refs" / ref).write_text(COMMIT)
    for name, src in files.items():
        shutil.copy(src, snap / name)
    return snap


def test_a_cached_hub_id_is_audited_from_the_cache(tmp_path):
    pytest.importorskip("gguf")
    fake_cache(tmp_path / "hub", "Qwen/tiny", {"config.json": LLAMACPP / "qwen2.config.json",
                                               "q.gguf": LLAMACPP / "qwen2.gguf"})  # fmt: skip
    env = {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    for source in ("Qwen/tiny", f"Qwen/tiny@{COMMIT}", "Qwen/tiny@main"):
        code, data, err = audit_json([source, "--len", "512", "--engine", "hf"], env=env)
        assert code == 0, err
        assert data["source"] == source and rows(data, artifact="q.gguf")[0]["verdict"] == "agree"
    # HF_HOME/hub when HF_HUB_CACHE is not set; refs/<branch> for a named revision
    (tmp_path / "home").mkdir()
    os.rename(tmp_path / "hub", tmp_path / "home" / "hub")
    (tmp_path / "home" / "hub" / "models--Qwen--tiny" / "refs" / "v1").write_text(COMMIT)
    env = {"HF_HOME": str(tmp_path / "home"), "HF_HUB_CACHE": "", "HUGGINGFACE_HUB_CACHE": ""}
    code, data, err = audit_json(["Qwen/tiny@v1", "--len", "512", "--engine", "hf"], env=env)
    assert code == 0, err
    code, _, err = cli(["audit", "Qwen/tiny@v2"], env={**env, "HF_HUB_OFFLINE": "1"})
    assert code == 2 and "Qwen/tiny@v2 is not in the Hugging Face cache" in err


def test_a_cached_onnx_export_reads_its_external_data_through_the_cache_links(tmp_path):
    """In the Hugging Face cache a snapshot's files are links into the repository's blobs/: the ONNX model's
    external data resolves there, inside the repository's cache directory, and is read; a link out of it is
    still refused."""
    pytest.importorskip("onnx")
    from .onnx_models import save

    d = gemma_export(tmp_path / "src", 1e6, 1e4)
    import onnx

    save(onnx.load(str(d / "onnx" / "model.onnx")), str(d / "onnx" / "model.onnx"), external="model.onnx_data")
    repo = tmp_path / "hub" / "models--google--gemma-tiny"
    snap = repo / "snapshots" / COMMIT
    (snap / "onnx").mkdir(parents=True)
    (repo / "blobs").mkdir()
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    for i, rel in enumerate(["config.json", "onnx/model.onnx", "onnx/model.onnx_data"]):
        blob = repo / "blobs" / f"{i:040x}"
        shutil.copy(d / rel, blob)
        os.symlink(os.path.relpath(blob, (snap / rel).parent), snap / rel)
    env = {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    code, data, err = audit_json(["google/gemma-tiny", "--engine", "hf"], env=env)
    assert code == 0, err
    assert [r["verdict"] for r in rows(data, engine="onnx")] == ["agree", "agree"]
    # a link out of the repository's directory is refused as before
    outside = tmp_path / "elsewhere.bin"
    shutil.copy(d / "onnx" / "model.onnx_data", outside)
    (snap / "onnx" / "model.onnx_data").unlink()
    os.symlink(outside, snap / "onnx" / "model.onnx_data")
    code, data, err = audit_json(["google/gemma-tiny", "--engine", "hf"], env=env)
    assert code == 2 and "outside the model's directory" in rows(data, engine="onnx")[0]["explanation"]


def test_a_hub_id_not_cached_offline_says_how_to_allow_a_download(tmp_path):
    env = {"HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    code, out, err = cli(["audit", "nobody/nothing"], env=env)
    assert code == 2 and out == b"" and err.count("\n") == 1
    assert "nobody/nothing is not in the Hugging Face cache" in err and "HF_HUB_OFFLINE" in err
    code, out, err = cli(["audit", "nobody/nothing", "--download"], env=env)
    assert code == 2 and "HF_HUB_OFFLINE" in err
    code, out, err = cli(["audit", "nobody/nothing"], env={"HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": ""})
    assert code == 2 and "--download" in err and "posenc-cli[hub]" in err


def test_download_fetches_config_and_only_the_position_tensor_by_ranges(tmp_path, monkeypatch):
    """A GPT-2 whose weights are a sparse 3 GiB file on the "Hub": --download reads its header and the wpe
    tensor's bytes, never the rest; the audit then checks that tensor."""
    import sys
    import types

    from safetensors.numpy import load_file

    remote = tmp_path / "remote"
    remote.mkdir()
    shutil.copy(DATA / "models" / "tiny_gpt2" / "config.json", remote / "config.json")
    wpe = load_file(str(DATA / "models" / "tiny_gpt2" / "model.safetensors"))
    name = next(n for n in wpe if n.endswith("wpe.weight"))
    big = 3 * 2**30
    header = {name: {"dtype": "F32", "shape": list(wpe[name].shape), "data_offsets": [big, big + wpe[name].nbytes]},
              "h.0.big": {"dtype": "F32", "shape": [big // 4], "data_offsets": [0, big]}}  # fmt: skip
    raw = json.dumps(header).encode()
    with open(remote / "model.safetensors", "wb") as fh:  # sparse: the 3 GiB are a hole
        fh.write(len(raw).to_bytes(8, "little") + raw)
        fh.seek(8 + len(raw) + big)
        fh.write(np.ascontiguousarray(wpe[name], dtype=np.float32).tobytes())
    cache = tmp_path / "cache"

    def hf_hub_download(repo, filename, revision=None):
        if not (remote / filename).exists():
            raise FileNotFoundError(filename)
        snap = cache / ("models--" + repo.replace("/", "--")) / "snapshots" / COMMIT
        snap.mkdir(parents=True, exist_ok=True)
        shutil.copy(remote / filename, snap / filename)
        return str(snap / filename)

    read: list[tuple[int, int]] = []

    def range_fetcher(repo, rev):
        def for_file(filename):
            def get(_name, start, stop):
                read.append((start, stop))
                with open(remote / filename, "rb") as fh:
                    fh.seek(start)
                    return fh.read(stop - start)

            return get

        return for_file

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(hf_hub_download=hf_hub_download))
    monkeypatch.setattr(hub, "range_fetcher", range_fetcher)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    report = posenc_cli.audit("openai/gpt2-tiny", download=True)
    assert report.exit_code == 0, report.to_json()
    (row,) = report.rows
    assert row.verdict == "agree" and "wpe.weight (24x16)" in row.explanation
    assert sum(b - a for a, b in read) < 4096 + len(raw)  # header and one 24 x 16 tensor, not 3 GiB
    assert not (cache / "models--openai--gpt2-tiny" / "snapshots" / COMMIT / "model.safetensors").exists()


# ----- reports: JSON, Markdown, HTML -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def diverging_report(tmp_path_factory):
    cfg = tmp_path_factory.mktemp("phi") / "config.json"
    cfg.write_text(json.dumps(PHI))
    return posenc_cli.audit(str(cfg), length=ORIG, engine="hf,mlx,vllm")


def test_the_python_api_returns_a_typed_report(diverging_report, schema):
    r = diverging_report
    assert isinstance(r, posenc_cli.AuditReport)
    assert r.exit_code == 1 and not r.ok
    assert [x.engine for x in r.rows] == ["hf", "mlx", "vllm"]
    validate(json.loads(json.dumps(r.to_json())), schema)


def test_the_schema_rejects_what_it_should(diverging_report, schema):
    import jsonschema

    data = json.loads(json.dumps(diverging_report.to_json()))
    detailed = json.loads(json.dumps(diverging_report.to_json(details=True)))
    (m,) = [r for r in detailed["rows"] if r["picture"] is not None]
    pictures = [{**m["picture"], "grid": [*m["picture"]["grid"][:-1], [*m["picture"]["grid"][-1][:-1], "x"]]},
                {**m["picture"], "by_column": [*m["picture"]["by_column"][:-1], None]},
                {**m["picture"], "positions": [*m["picture"]["positions"][:-1], 1.5]}]  # fmt: skip
    for broken in (
        {**data, "schema": "posenc-audit/0"},
        {**data, "rows": [{**data["rows"][0], "verdict": "maybe"}]},
        {**data, "extra": 1},
        {k: v for k, v in data.items() if k != "exit_code"},
        *({**detailed, "rows": [{**m, "picture": p}]} for p in pictures),  # the last item of each run
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate(broken, schema)


def test_progress_is_reported_step_by_step(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(PHI))
    seen = []
    posenc_cli.audit(str(cfg), length=64, engine="hf,mlx,vllm", on_progress=lambda w, d, n: seen.append((d, n)))
    assert [d for d, _ in seen] == list(range(len(seen))) and len(seen) >= 3
    assert len({n for _, n in seen}) == 1


def test_the_terminal_table_fits_80_columns(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(PHI))
    code, out, err = cli(["audit", str(cfg), "--len", str(ORIG), "--engine", "hf,mlx"], env={"COLUMNS": "200"})
    assert code == 1
    lines = out.decode().splitlines()
    assert max(len(x) for x in lines) <= 80
    assert any(x.split()[:4] == ["config.json", "default", "mlx", "DIFFER"] for x in lines)
    assert err.startswith("DIFFERS (2 rows: 1 differ, 1 reference)")


def test_markdown_holds_the_table(diverging_report, tmp_path):
    from posenc_cli.report_html import markdown

    text = markdown(diverging_report)
    table = [x for x in text.splitlines() if x.startswith("| ")]
    assert table[0].startswith("| artifact | layer type | engine | verdict |")
    assert len(table) == 2 + len(diverging_report.rows)
    assert "❌ differ" in text and "long_factor" in text


class _Page:
    """What html.parser sees: tags, attributes, the verdict table's rows and cells, text."""

    def __init__(self, text: str) -> None:
        from html.parser import HTMLParser

        self.tags: list[tuple[str, dict]] = []
        self.rows: list[list[str]] = []
        self.text: list[str] = []
        page = self

        class P(HTMLParser):
            in_table = False
            cell: list[str] | None = None

            def handle_starttag(self, tag, attrs):
                page.tags.append((tag, dict(attrs)))
                if tag == "table" and dict(attrs).get("id") == "verdicts":
                    self.in_table = True
                if self.in_table and tag == "tr":
                    page.rows.append([])
                if self.in_table and tag == "td":
                    self.cell = []

            def handle_endtag(self, tag):
                if tag == "table":
                    self.in_table = False
                if tag == "td" and self.cell is not None:
                    page.rows[-1].append("".join(self.cell).strip())
                    self.cell = None

            def handle_data(self, data):
                page.text.append(data)
                if self.cell is not None:
                    self.cell.append(data)

        P().feed(text)

    def count(self, tag: str) -> int:
        return sum(t == tag for t, _ in self.tags)


def assert_page(text: str, report) -> None:
    page = _Page(text)
    cells = [r for r in page.rows if r]
    assert len(cells) == len(report.rows)
    for got, row in zip(cells, report.rows):
        assert got[:4] == [row.artifact, row.layer_type, row.engine, row.verdict]
        assert got[5] == row.explanation
    diverging = [r for r in report.rows if r.picture is not None]
    assert diverging and page.count("svg") >= 3 * len(diverging)
    # self-contained: no script, no external resource of any kind
    assert page.count("script") == 0 and page.count("link") == 0 and page.count("img") == 0
    for _tag, attrs in page.tags:
        for key, value in attrs.items():
            if key in ("src", "href") or (value or "").startswith(("http:", "https:", "//")):
                assert key == "xmlns", (key, value)


def test_the_html_page_parses_and_is_self_contained(diverging_report):
    from posenc_cli.report_html import page

    assert_page(page(diverging_report), diverging_report)


def _browser() -> str | None:
    return shutil.which("chromium-headless-shell") or shutil.which("chromium") or shutil.which("google-chrome")


def test_the_html_page_renders_in_a_real_browser(diverging_report, tmp_path):
    """The page as a headless Chromium renders it: the DOM it dumps holds the verdict table and the pictures,
    and its screenshot is not blank. Without a browser (CI installs Debian's chromium-headless-shell), the
    same checks run on what html.parser reads."""
    import subprocess

    from posenc_cli.report_html import page

    text = page(diverging_report)
    browser = _browser()
    if browser is None:
        assert_page(text, diverging_report)
        return
    path = tmp_path / "audit.html"
    path.write_text(text, encoding="utf-8")
    flags = ["--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    env = {**os.environ, "HOME": str(tmp_path)}
    shot = tmp_path / "shot.png"
    # one browser run: the DOM it dumps to stdout and the screenshot it writes
    run = subprocess.run([browser, *flags, "--dump-dom", f"--screenshot={shot}", "--window-size=1000,1400",
                          path.as_uri()], capture_output=True, timeout=120, env=env, cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    assert_page(run.stdout.decode("utf-8"), diverging_report)
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))[..., :3]
    assert pixels.shape[0] > 100 and pixels.std() > 0.02  # not one colour
    red = (pixels[..., 0] > 0.6) & (pixels[..., 1] < 0.35) & (pixels[..., 2] < 0.35)
    assert red.sum() > 50  # the "differ" verdict and the difference curves are drawn


def test_reports_are_written_atomically_with_the_same_rows(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(PHI))
    md, page = tmp_path / "a.md", tmp_path / "a.html"
    code, out, err = cli(["audit", str(cfg), "--len", "256", "--engine", "hf,mlx", "--markdown", str(md),
                          "--html", str(page), "--json"])  # fmt: skip
    assert code == 1, err
    data = json.loads(out)
    assert md.read_text().count("\n| ") == 2 + len(data["rows"])  # the header, its rule, the rows
    assert page.read_text().count('<tr id="row-') == len(data["rows"])


def test_a_long_audit_shows_progress_on_a_terminal_only(tmp_path, monkeypatch):
    """Progress appears on stderr once an audit has run for a while (here: at once) and only on a terminal;
    piped, stderr holds the verdict line alone."""
    from posenc_cli.cli import audit as audit_cli

    from .conftest import cli_tty

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(PHI))
    monkeypatch.setattr(audit_cli._LateProgress, "AFTER", 0.0)
    code, screen = cli_tty(["audit", str(cfg), "--len", "64", "--engine", "hf,mlx,vllm"], env={"COLUMNS": "80"})
    assert code == 1 and "auditing" in screen and "%" in screen
    code, _, err = cli(["audit", str(cfg), "--len", "64", "--engine", "hf,mlx,vllm"])
    assert code == 1 and "auditing" not in err and err.count("\n") == 1


def test_an_option_nothing_reads_is_refused_by_name(tmp_path):
    """Each option (:func:`tests.each.each`: each failure named)."""
    env = {"HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}

    def refused(case):
        args, needle = case
        code, out, err = cli(["audit", str(LLAMACPP / "qwen2.config.json"), *args], env=env)
        assert code == 2 and out == b"" and err.count("\n") == 1 and needle in err, err

    each([
        (["--engine", "hf", "--n-ctx", "4096"], "--n-ctx cannot apply"),
        (["--engine", "hf,mlx", "--max-model-len", "4096"], "--max-model-len cannot apply"),
        (["--max-bytes", "1000"], "--max-bytes cannot apply"),
        (["--download"], "--download cannot apply"),
        (["--force"], "--force cannot apply"),
        (["--against", "nowhere/at-all"], "--against nowhere/at-all is not in the Hugging Face cache"),
    ], refused)  # fmt: skip


def test_the_engines_options_are_stated_in_the_report(tmp_path):
    cfg = str(LLAMACPP / "qwen2.config.json")
    code, out, _ = cli(
        ["audit", cfg, "--engine", "hf,llamacpp,vllm", "--len", "8192", "--n-ctx", "4096", "--max-model-len", "8192"]
    )
    assert code == 0 and "llama.cpp n_ctx 4096, vLLM max_model_len 8192" in " ".join(out.decode().split())


def test_range_requests_read_only_the_bytes_asked_for(tmp_path, monkeypatch):
    """hub.range_fetcher's HTTP range requests against a local server that honours Range: the header and the
    tensor's bytes come back exactly, and only those bytes are sent."""
    import http.server
    import sys
    import threading
    import types

    blob = np.random.default_rng(3).bytes(1 << 20)
    sent: list[int] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            m = re.match(r"bytes=(\d+)-(\d+)$", self.headers.get("Range", ""))
            assert m and self.headers.get("Authorization") == "Bearer t0ken", self.headers
            a, b = int(m.group(1)), int(m.group(2)) + 1
            sent.append(b - a)  # before the reply: the client may go on as soon as it has the bytes
            self.send_response(206)
            self.send_header("Content-Length", str(b - a))
            self.end_headers()
            self.wfile.write(blob[a:b])

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        fake = types.SimpleNamespace(
            hf_hub_url=lambda repo, filename, revision=None: f"{base}/{repo}/resolve/{revision}/{filename}",
            utils=types.SimpleNamespace(build_hf_headers=lambda: {"Authorization": "Bearer t0ken"}),
        )
        monkeypatch.setitem(sys.modules, "huggingface_hub", fake)
        get = hub.range_fetcher("org/name", "main")("model.safetensors")
        assert get("model.safetensors", 1000, 1100) == blob[1000:1100]
        assert get("model.safetensors", 0, 8) == blob[:8]
        assert sent == [100, 8]
    finally:
        server.shutdown()


def test_a_multimodal_model_is_audited_in_both_towers(tmp_path, schema):
    """A wrapper whose vision tower posenc reads (CLIP, Qwen3-VL): one audit holds the text model's positions and
    the tower's table (at its native size and at each --image-size), the tower's rows labelled ``vision``; the
    tower's table is the one ``export`` reads (row count from safetensors with plain numpy). Weights without the
    tower's table (a text-only checkpoint): the tower is not checked, and says why; --image-size then is refused."""
    from safetensors.numpy import load_file

    report = posenc_cli.audit(str(MODELS / "vision_clip"))
    stored = load_file(str(MODELS / "vision_clip" / "model.safetensors"))
    vision_rows = stored["vision_model.embeddings.position_embedding.weight"].shape[0]
    got = [(r.layer_type, r.verdict, r.length) for r in report.rows]
    assert got == [("text_model", "agree", stored["text_model.embeddings.position_embedding.weight"].shape[0]),
                   ("vision native", "agree", vision_rows)], got  # fmt: skip
    assert report.rows[1].explanation.startswith("vision tower at ") and report.exit_code == 0
    validate(report.to_json(), schema)
    # the text model's M-RoPE checked at 512 positions, not its 128000 (the tower's rows are the property here)
    report = posenc_cli.audit(str(MODELS / "vision_qwen3_vl"), image_size=["64x48"], length=512)
    labels = [(r.layer_type, r.engine, r.verdict) for r in report.rows]
    assert labels[:2] == [("default", "hf", "reference"), ("default", "check", "agree")], labels
    assert labels[2:] == [("vision native", "hf", "agree"), ("vision 64x48", "hf", "agree")], labels
    from posenc_cli.models.config_file import load_config
    from posenc_cli.models.vision import vision_table

    q3 = str(MODELS / "vision_qwen3_vl")
    assert report.rows[-1].length == vision_table(q3, load_config(q3), image_size="64x48")[0].shape[0] == 16 * 12
    # the weights of the text model only
    d = tmp_path / "clip_text_only"
    shutil.copytree(MODELS / "vision_clip", d)
    from safetensors.numpy import save_file

    save_file({k: v for k, v in stored.items() if not k.startswith("vision_model.")}, str(d / "model.safetensors"))
    report = posenc_cli.audit(str(d))
    assert [(r.layer_type, r.verdict) for r in report.rows] == [("text_model", "agree"), ("vision tower", "skipped")]
    assert "no tensor named *vision_model.embeddings.position_embedding.weight" in report.rows[1].explanation
    assert report.exit_code == 0
    code, _out, err = cli(["audit", str(d), "--image-size", "32"])
    assert code == 2 and "vision tower: the weights hold no tensor" in err and len(err.strip().splitlines()) == 1
