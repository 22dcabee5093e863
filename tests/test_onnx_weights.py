"""The q/k projection initializers of ONNX exports against HF's weights (posenc_cli/models/onnx_weights.py).

tests/data/qk_weights/llama_onnx is the tiny llama of llama_hf exported by torch 2.13.0's own ``torch.onnx.export``
(dynamo); llama_onnx_norm_rows the same graph with every q/k initializer's output rows permuted per head as
convert_hf_to_gguf.py does (tools/golden/onnx_qk_weights.py). onnx.json holds which initializer holds which HF
projection, found there by exact equality: the exporter renames them (``val_N``) and transposes them for MatMul.
The graphs with a RotaryEmbedding op below are stand-ins built here with onnx.helper (the export has none: it
computes HF's rotate_half with Slice/Neg/Concat).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from .conftest import cli

onnx = pytest.importorskip("onnx", reason="the ONNX tests need the onnx extra")
pytest.importorskip("gguf", reason="naming the projections needs the gguf extra: pip install 'posenc-cli[gguf]'")

from posenc_cli.models.onnx_weights import check_onnx_weights  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "qk_weights"
HF = str(DATA / "llama_hf")
TRUTH = json.loads((DATA / "onnx.json").read_text())["hf_to_initializer"]


@pytest.fixture(scope="module")
def faithful():
    return check_onnx_weights(str(DATA / "llama_onnx" / "model.onnx"), HF)


def test_the_export_agrees_and_each_projection_is_matched_to_its_initializer(faithful):
    c = faithful
    assert c.status == "agree" and c.unmatched == [], c.summary
    assert {t.hf: t.gguf for t in c.tensors} == {k: v[0] for k, v in TRUTH.items()}
    assert all(v[1] for v in TRUTH.values())  # torch.onnx writes them transposed, [in, out]
    assert "matched 0 HF projection(s) to the initializer of their name and 6 by shape and values (6 transposed" in (
        " ".join(c.notes)
    )
    assert "assumed HF's rotate_half" in c.expected  # no rotary op: said, not claimed


def test_rows_permuted_in_the_export_are_named():
    c = check_onnx_weights(str(DATA / "llama_onnx_norm_rows" / "model.onnx"), HF)
    assert c.status == "differ" and {t.found for t in c.tensors} == {"norm-permuted"}
    assert c.findings[0].startswith("q_proj.weight and k_proj.weight of layers 0-2 are permuted per head to "
                                    "consecutive pairs (llama.cpp's NORM order)")  # fmt: skip


def edited(tmp_path: Path, src: str, edit=None, rotary: int | None = None) -> str:
    """A copy of an export with ``edit(name, array)`` applied to its initializers (plain numpy), and with
    ``rotary`` a com.microsoft RotaryEmbedding node of that ``interleaved`` added (a stand-in)."""
    from onnx import helper, numpy_helper

    m = onnx.load(str(DATA / src / "model.onnx"))
    for init in m.graph.initializer:
        if edit is not None:
            new = edit(init.name, numpy_helper.to_array(init))
            if new is not None:
                init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(new), init.name))
    if rotary is not None:
        m.graph.node.append(helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"],
                                             domain="com.microsoft", interleaved=rotary))  # fmt: skip
    out = tmp_path / f"{src}.edited.onnx"
    onnx.save(m, str(out))
    return str(out)


def test_a_projection_no_initializer_holds_is_listed_not_guessed(tmp_path):
    q0 = TRUTH["model.layers.0.self_attn.q_proj.weight"][0]
    c = check_onnx_weights(edited(tmp_path, "llama_onnx", lambda n, a: a * 2 if n == q0 else None), HF)
    assert c.status == "agree" and len(c.tensors) == 5
    assert c.unmatched == ["model.layers.0.self_attn.q_proj.weight [32, 32] (6 initializer(s) of its shape, none "
                           "holding its values)"]  # fmt: skip
    assert "1 projection(s) not matched" in c.summary


def test_an_interleaved_rotary_op_expects_the_permuted_rows(tmp_path):
    # stand-in graphs: the export's initializers with a RotaryEmbedding interleaved=1 node added
    c = check_onnx_weights(edited(tmp_path, "llama_onnx_norm_rows", rotary=1), HF)
    assert c.status == "agree", c.summary
    assert "RotaryEmbedding interleaved=1" in c.expected
    c = check_onnx_weights(edited(tmp_path, "llama_onnx", rotary=1), HF)
    assert c.status == "differ" and "hold HF's rows unpermuted" in c.summary
    c = check_onnx_weights(edited(tmp_path, "llama_onnx", rotary=0), HF)
    assert c.status == "agree" and "RotaryEmbedding interleaved=0" in c.expected


def test_weights_of_another_model_match_nothing():
    c = check_onnx_weights(str(DATA / "llama_onnx" / "model.onnx"), str(DATA / "llama_other_hf"))
    assert c.status == "not checked" and len(c.unmatched) == 6 and "another model's" in c.summary


def onnx_dir(tmp_path: Path, src: str) -> Path:
    d = tmp_path / "model"
    shutil.copytree(DATA / "llama_hf", d)
    shutil.copy(DATA / src / "model.onnx", d / "model.onnx")
    return d


def test_check_and_audit(tmp_path):
    from .test_audit import SCHEMA_PATH, validate

    d = onnx_dir(tmp_path, "llama_onnx_norm_rows")
    code, out, err = cli(["check", str(d / "model.onnx"), "--against", str(d)])
    text = " ".join(out.decode().split())
    assert code == 1, err
    assert "DIFFER (1 divergence(s))" in text and "the cos/sin caches were not checked" in text
    code, out, _ = cli(["check", str(DATA / "llama_onnx" / "model.onnx"), "--against", HF, "--json"])
    data = json.loads(out)
    assert code == 0 and data["kind"] == "onnx" and data["status"] == "agree" and len(data["tensors"]) == 6
    code, out, _ = cli(["audit", str(d), "--engine", "hf", "--json", "--len", "16"])
    report = json.loads(out)
    validate(report, json.loads(Path(SCHEMA_PATH).read_text()))
    rows = [r for r in report["rows"] if r["layer_type"] == "weights"]
    assert len(rows) == 1 and rows[0]["engine"] == "onnx" and rows[0]["verdict"] == "differ"
    assert code == 1  # the weights differ; the export's caches (no rotary node) are a skipped row, not an error
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    cli(["audit", str(d), "--engine", "hf", "--len", "16", "--markdown", str(md), "--html", str(html), "-qq"])
    assert "| `model.onnx` | weights | onnx | ❌ differ |" in md.read_text()
    assert "NORM order" in html.read_text()
    code, out, _ = cli(["audit", str(d), "--engine", "hf", "--len", "16"])
    table = [line.split() for line in out.decode().splitlines()]
    assert ["model.onnx", "weights", "onnx", "DIFFER", "-"] in table


def test_without_hf_weights_nothing_is_said_about_them():
    code, _, err = cli(["check", str(DATA / "llama_onnx" / "model.onnx"), "--against",
                        str(DATA / "llama_onnx" / "config.json")])  # fmt: skip
    assert code == 2 and "no rotary node" in err


def test_an_export_without_a_rotary_node_is_skipped_in_an_audit_not_an_error(tmp_path):
    """torch.onnx's plain export rotates with ordinary ops (no RotaryEmbedding node): the audit has no cache to
    compare and says so in a skipped row, its weights row still agrees, and the audit exits 0 (it was an error row:
    exit 2 for a file that reads well); ``check`` of the file alone, asked for its table, is still bad input."""
    for f in (DATA / "llama_hf").iterdir():
        shutil.copy(f, tmp_path / f.name)
    shutil.copy(DATA / "llama_onnx" / "model.onnx", tmp_path / "model.onnx")
    code, out, err = cli(["audit", str(tmp_path), "--engine", "hf,vllm", "--len", "16", "--json"])
    rows = {(r["artifact"], r["layer_type"]): r for r in json.loads(out)["rows"]}
    assert code == 0, err
    assert (
        rows[("model.onnx", "-")]["verdict"] == "skipped"
        and "no rotary node" in rows[("model.onnx", "-")]["explanation"]
    )
    assert rows[("model.onnx", "weights")]["verdict"] == "agree"
    code, _out, err = cli(["check", str(tmp_path / "model.onnx")])
    assert code == 2 and "no rotary node" in err
