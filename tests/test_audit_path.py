"""The audit's path, straightened (issue 35, part 6): one reading of the model's config per audit, one GGUF
verdict per file, one door to the readers, and no import circle between the api and the audit."""

from __future__ import annotations

import shutil

import pytest

import posenc_cli as pe
from posenc_cli.models import config_file, llamacpp

from .conftest import ROOT
from .test_import_graph import cycles, graph

LLAMACPP = ROOT / "tests" / "data" / "llamacpp"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """Gemma 3 (two attention types) with its GGUF conversion and an ONNX export beside its config."""
    pytest.importorskip("gguf")
    pytest.importorskip("onnx")
    from .onnx_models import genai_caches, rotary_model, save

    root = tmp_path_factory.mktemp("model")
    shutil.copy(LLAMACPP / "gemma3.config.json", root / "config.json")
    shutil.copy(LLAMACPP / "gemma3.gguf", root / "gemma3.gguf")
    save(rotary_model({"": genai_caches(16, 10000.0, 64)}, num_heads=2, head_size=16), str(root / "m.onnx"))
    return root


def test_an_audit_reads_its_config_once_and_makes_one_gguf_verdict(model, monkeypatch):
    reads, verdicts = [], []
    read_file, verdict = config_file._read_file, llamacpp.verdict

    def counting_read(path):
        reads.append(path)
        return read_file(path)

    def counting_verdict(*args, **kwargs):
        verdicts.append(kwargs.get("layer_type"))
        return verdict(*args, **kwargs)

    monkeypatch.setattr(config_file, "_read_file", counting_read)
    monkeypatch.setattr(llamacpp, "verdict", counting_verdict)
    report = pe.audit(str(model), engine="hf,vllm", length=256)
    engines = {r.engine for r in report.rows}
    assert {"hf", "vllm", "llamacpp", "onnx"} <= engines  # every kind of step asked for the config
    assert len(reads) == 1, reads  # 33 reads of config.json before (2 x engines + 4 and more)
    assert verdicts == [None]  # once for the file, not once more per layer type
    gguf_rows = {r.layer_type: r for r in report.rows if r.engine == "llamacpp" and r.layer_type != "weights"}
    assert set(gguf_rows) == {"full_attention", "sliding_attention"}
    # each type's row is what a verdict of that type alone says (an independent pass per type)
    for lt, row in gguf_rows.items():
        alone = verdict(str(model / "gemma3.gguf"), str(model / "config.json"), length=256, layer_type=lt)
        assert (row.verdict == "agree") == alone.ok
        assert row.max_abs_diff == pytest.approx(alone.numbers[lt]["max_abs_vs_hf"], abs=0)
    # outside an audit, every call reads the file again (the memo lives only while an audit runs)
    reads.clear()
    pe.load_config(str(model))
    pe.load_config(str(model))
    assert len(reads) == 2


def test_the_audit_imports_nothing_of_the_api_and_no_circle_holds_the_api():
    edges = graph()
    auditing = {m: deps for m, deps in edges.items() if m.startswith("posenc_cli.auditing")}
    assert not {m for m, deps in auditing.items() if "posenc_cli.api" in deps}
    assert not [c for c in cycles(edges) if "posenc_cli.api" in c]
    # the test can fail: the edge the audit had
    edges["posenc_cli.auditing.run"].add("posenc_cli.api")
    assert any("posenc_cli.api" in c for c in cycles(edges))


def test_configs_are_read_through_one_door():
    """Everything outside the readers (the engines' rules, the GGUF and ONNX checks, the audit, sources with its
    learned tables, the api) reaches them through models.readers only (its TYPE_CHECKING import of ModelConfig
    aside)."""
    edges = graph()
    # stored_tables reads the weights by the records (fixed tables' stored copies, T5's relative bias): a reader too
    readers = {"posenc_cli.models.hf_config", "posenc_cli.models.hf_positions", "posenc_cli.models.stored_tables"}
    inside = readers | {"posenc_cli.models.readers"}
    leaks = {m: deps & readers for m, deps in edges.items() if m not in inside and deps & readers}
    assert leaks == {}
