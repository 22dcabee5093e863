"""The Q/K weights of MLX conversions against HF's (posenc_cli/models/mlx_weights.py).

tests/data/qk_weights/llama_mlx* are the tiny llama of llama_hf converted by mlx-lm's own ``convert`` (plain, and
``-q`` with 4 and 8 bits in groups of 32), and the two mistakes built from its output (rows copied from the
faithful GGUF's NORM order; ``rope_traditional: true`` with HF's rows) plus the faithful combination of both
(tools/golden/mlx_qk_weights.py). mlx.json holds what mlx-lm's own model computed with each (its logits against
the faithful conversion's) and the NAME.dequantized.npz files ``mx.dequantize``'s own output.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from .conftest import cli

pytest.importorskip("gguf", reason="naming the projections needs the gguf extra: pip install 'posenc-cli[gguf]'")

from posenc_cli.models import mlx_weights
from posenc_cli.models.mlx_weights import check_mlx, is_mlx_dir
from posenc_cli.models.qk_weights import WeightsError, hf_tensors

from .each import each

DATA = Path(__file__).resolve().parent / "data" / "qk_weights"
MANIFEST = json.loads((DATA / "mlx.json").read_text())
HF = str(DATA / "llama_hf")

#: directory -> (status, what every q/k tensor is found holding, words of the finding)
TRUTH = {
    "llama_mlx": ("agree", "expected", None),
    "llama_mlx_q4": ("agree", "expected", None),
    "llama_mlx_q8": ("agree", "expected", None),
    "llama_mlx_traditional_permuted": ("agree", "expected", None),
    "llama_mlx_norm_rows": ("differ", "norm-permuted", "q_proj.weight and k_proj.weight of layers 0-2 are permuted "
                            "per head to consecutive pairs (llama.cpp's NORM order"),
    "llama_mlx_traditional": ("differ", "none", "q_proj.weight and k_proj.weight of layers 0-2 are HF's rows but "
                              "mlx-lm rotates consecutive pairs (2i, 2i+1) (config.json's rope_traditional: true)"),
}  # fmt: skip


@pytest.fixture(scope="module")
def checks():
    return {name: check_mlx(str(DATA / name), HF) for name in TRUTH}


def test_the_truth_is_what_mlx_lm_computed():
    """The stored mistakes change mlx-lm's own logits; the faithful float directories leave them exactly."""
    logits = MANIFEST["logits_max_abs_vs_llama_mlx"]
    assert set(TRUTH) <= set(logits)
    for name, (status, _, _) in TRUTH.items():
        if status == "differ":
            assert logits[name] > 1e-3, name
        elif "_q" not in name:
            assert logits[name] == 0.0, name


def test_every_mlx_directory_is_judged_as_it_was_made(checks):
    each(sorted(TRUTH), lambda c: _every_mlx_directory_is_judged_as_it_was_made(c, checks))


def _every_mlx_directory_is_judged_as_it_was_made(name, checks):
    status, found, words = TRUTH[name]
    c = checks[name]
    assert is_mlx_dir(str(DATA / name))
    assert c.status == status, c.summary
    assert {t.found for t in c.tensors} == {found}
    assert {(t.layer, t.role) for t in c.tensors} == {(layer, r) for layer in range(3) for r in "qk"}
    if words:
        assert words in " ".join(c.summary.split())
    assert c.unmatched == []


def test_an_hf_directory_is_not_an_mlx_one():
    assert not is_mlx_dir(HF) and not is_mlx_dir(str(DATA / "llama.f32.gguf"))


def _read_all(path: Path) -> tuple[dict, bytes, dict]:
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    meta = header.pop("__metadata__", None)
    return header, raw[8 + n :], meta


def _write(path: Path, tensors: dict[str, tuple[str, list[int], bytes]], meta: dict | None) -> None:
    header: dict = {"__metadata__": meta} if meta else {}
    body, at = b"", 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(data)]}
        body += data
        at += len(data)
    h = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(h)) + h + body)


def edited(tmp_path: Path, name: str, edit) -> Path:
    """A copy of an MLX directory whose tensors ``edit(name, dtype, array)`` rewrote (plain numpy)."""
    dest = tmp_path / f"{name}_edited"
    shutil.copytree(DATA / name, dest)
    header, body, meta = _read_all(dest / "model.safetensors")
    np_dtype = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32, "U32": np.uint32}
    out = {}
    for t, e in header.items():
        a, b = e["data_offsets"]
        arr = np.frombuffer(body[a:b], dtype=np_dtype[e["dtype"]]).reshape(e["shape"])
        new = edit(t, e["dtype"], arr)
        if new is not None:
            out[t] = (e["dtype"], list(new.shape), np.ascontiguousarray(new).tobytes())
    _write(dest / "model.safetensors", out, meta)
    return dest


def norm_permute(rows: int, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf.py's LlamaModel.permute, written here: w.reshape(n_head, 2, rows // n_head // 2, ...)
    .swapaxes(1, 2)."""
    return np.arange(rows).reshape(n_head, 2, rows // n_head // 2).swapaxes(1, 2).reshape(-1)


def test_numpy_dequantization_equals_mx_dequantize():
    for name in ("llama_mlx_q4", "llama_mlx_q8"):
        ref = np.load(DATA / f"{name}.dequantized.npz")
        cfg = json.loads((DATA / name / "config.json").read_text())["quantization"]
        ts = hf_tensors([str(DATA / name / "model.safetensors")])
        for key in ref.files:
            base = key.removesuffix(".weight")
            got, tol = mlx_weights.dequantize_first(ts[key], ts[base + ".scales"], ts[base + ".biases"],
                                                    cfg["group_size"], cfg["bits"])  # fmt: skip
            want = ref[key][:, : cfg["group_size"]]
            # mx.dequantize computes scales * q + biases in the scales' bf16 (the product and the sum rounded):
            # within a unit roundoff of each term of the exact value
            s = ts[base + ".scales"].first(1)
            b = ts[base + ".biases"].first(1)
            q = np.rint((got - b) / s)
            assert np.array_equal(q, np.clip(q, 0, 2 ** cfg["bits"] - 1))  # whole codes in range
            bound = 2.0**-8 * (np.abs(s * q) + np.abs(b) + np.abs(want))
            assert np.all(np.abs(got - want) <= bound), (name, key, float((np.abs(got - want) / bound).max()))
            # and the HF bf16 values lie within the bound the check uses, which is under a tenth of the rows' spread
            h = ts[key]  # the quantized tensor; HF's own below
            hf = hf_tensors([str(DATA / "llama_hf" / "model.safetensors")])[key].first(cfg["group_size"])
            assert np.all(np.abs(got - hf) <= tol), (name, key, float(np.abs(got - hf).max()))
            assert float(tol.max()) < 0.25 * float(np.ptp(hf)), (name, key)
            del h


def test_a_quantized_directory_with_norm_rows_is_named(tmp_path_factory):
    each(
        ["llama_mlx_q4", "llama_mlx_q8"],
        lambda c: _a_quantized_directory_with_norm_rows_is_named(tmp_path_factory.mktemp("case"), c),
    )


def _a_quantized_directory_with_norm_rows_is_named(tmp_path, name):
    """Rows of a quantized tensor permuted (weight, scales and biases together): the same mistake, found within
    the rounding bound."""

    def edit(t, dtype, arr):
        if "q_proj" in t or "k_proj" in t:
            return arr[norm_permute(arr.shape[0], 4 if "q_proj" in t else 2)]
        return arr

    c = check_mlx(str(edited(tmp_path, name, edit)), HF)
    assert c.status == "differ" and {t.found for t in c.tensors} == {"norm-permuted"}, c.summary


def test_a_permutation_only_in_some_layers_names_them(tmp_path):
    def edit(t, dtype, arr):
        if t.startswith("model.layers.1.") and "k_proj" in t:
            return arr[norm_permute(arr.shape[0], 2)]
        return arr

    c = check_mlx(str(edited(tmp_path, "llama_mlx", edit)), HF)
    assert c.status == "differ"
    assert c.findings[0].startswith("k_proj.weight of layers 1 is permuted per head"), c.findings


def test_weights_of_another_model_are_said_to_be():
    c = check_mlx(str(DATA / "llama_mlx"), str(DATA / "llama_other_hf"))
    assert c.status == "differ" and "from different models" in c.summary


def test_hf_projections_without_an_mlx_counterpart_are_listed(tmp_path):
    d = edited(tmp_path, "llama_mlx", lambda t, dt, a: None if t.startswith("model.layers.2.") else a)
    c = check_mlx(str(d), HF)
    assert c.status == "agree" and len(c.tensors) == 4
    assert sorted(c.unmatched) == [f"model.layers.2.self_attn.{p}_proj.weight (no tensor of that name)" for p in "kq"]
    assert any(n.startswith("not matched to an MLX tensor: model.layers.2") for n in c.notes)


def test_the_rope_flag_comes_from_mlx_lm_sources():
    # printed from mlx_lm/models/*.py: llama and qwen2 read rope_traditional (default false), stablelm's is a
    # literal False, glm4's default is true; mistral runs llama's module (MODEL_REMAPPING)
    rule = mlx_weights.mlx_rope_rule
    assert rule("llama") == ("llama", "config:false") and rule("qwen2") == ("qwen2", "config:false")
    assert rule("stablelm") == ("stablelm", "false") and rule("glm4") == ("glm4", "config:true")
    assert rule("mistral") == ("llama", "config:false") and rule("no_such_model") == ("no_such_model", None)
    assert mlx_weights.traditional_of({"model_type": "mistral"}) == (
        False, "rope_traditional's default in mlx_lm/models/llama.py (model_type mistral): false")  # fmt: skip
    assert mlx_weights.traditional_of({"model_type": "stablelm", "rope_traditional": True})[0] is False
    assert mlx_weights.traditional_of({"model_type": "no_such_model"})[0] is None


def test_check_against_the_hf_directory(tmp_path):
    code, out, err = cli(["check", str(DATA / "llama_mlx_traditional"), "--against", HF])
    text = " ".join(out.decode().split())
    assert code == 1, err
    assert "DIFFER (1 divergence(s))" in text and "remove rope_traditional from config.json" in text
    code, out, err = cli(["check", str(DATA / "llama_mlx_q4"), "--against", HF, "--json"])
    data = json.loads(out)
    assert code == 0, err
    assert data["mlx"].endswith("llama_mlx_q4") and data["kind"] == "mlx" and data["status"] == "agree"
    assert len(data["tensors"]) == 6 and data["unmatched"] == []


def test_check_refuses_what_cannot_apply(tmp_path):
    from .test_qk_weights import bad

    err = bad(["check", str(DATA / "llama_mlx"), "--against", str(DATA / "llama_hf" / "config.json")])
    assert "an MLX directory is checked against the HF model directory" in err
    err = bad(["check", str(DATA / "llama_mlx"), "--against", HF, "--len", "16"])
    assert "--len" in err


def test_a_quantized_tensor_without_biases_is_refused_naming_it(tmp_path):
    from .test_qk_weights import bad

    d = edited(tmp_path, "llama_mlx_q4", lambda t, dt, a: None if t == "model.layers.0.self_attn.q_proj.biases" else a)
    err = bad(["check", str(d), "--against", HF])
    assert "model.layers.0.self_attn.q_proj.biases is missing" in err
    with pytest.raises(WeightsError):
        check_mlx(str(d), HF)


def test_audit_has_one_mlx_weights_row_in_every_format(tmp_path):
    from .test_audit import SCHEMA_PATH, validate

    schema = json.loads(Path(SCHEMA_PATH).read_text())
    d = str(DATA / "llama_mlx_norm_rows")
    code, out, err = cli(["audit", d, "--against", HF, "--engine", "hf", "--json", "--len", "16"])
    data = json.loads(out)
    validate(data, schema)
    rows = [r for r in data["rows"] if r["layer_type"] == "weights"]
    assert code == 1 and len(rows) == 1, err
    assert rows[0]["engine"] == "mlx" and rows[0]["verdict"] == "differ" and rows[0]["artifact"] == "."
    assert data["config"].endswith("llama_hf/config.json")  # HF's config is the reference, not the MLX copy
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    code, _, _ = cli(["audit", d, "--against", HF, "--engine", "hf", "--len", "16", "--markdown", str(md),
                      "--html", str(html), "-qq"])  # fmt: skip
    assert code == 1
    assert "| `.` | weights | mlx | ❌ differ |" in md.read_text()
    assert "llama.cpp&#x27;s NORM order" in html.read_text() or "llama.cpp's NORM order" in html.read_text()
    # the other way round, and without HF weights: skipped, saying how to check
    code, out, _ = cli(["audit", HF, "--against", str(DATA / "llama_mlx_q8"), "--engine", "hf", "--json"])
    rows = [r for r in json.loads(out)["rows"] if r["layer_type"] == "weights"]
    assert code == 0 and rows[0]["verdict"] == "agree"
    code, out, _ = cli(["audit", str(DATA / "llama_mlx"), "--engine", "hf", "--json"])
    rows = [r for r in json.loads(out)["rows"] if r["layer_type"] == "weights"]
    # the weights skipped and only the reference: the audit compared nothing, and says so (exit 1)
    assert rows[0]["verdict"] == "skipped" and "--against DIR" in rows[0]["explanation"]
    assert code == 1 and json.loads(out)["compared"] == 0


def test_a_quantization_too_coarse_to_tell_rows_apart_is_not_checked(tmp_path):
    d = tmp_path / "q2"
    shutil.copytree(DATA / "llama_mlx_q4", d)
    cfg = json.loads((d / "config.json").read_text())
    cfg["quantization"]["bits"] = 2
    (d / "config.json").write_text(json.dumps(cfg))
    c = check_mlx(str(d), HF)
    assert c.status == "not checked" and "quantized to 2 bits, too coarse" in c.summary and not c.tensors
