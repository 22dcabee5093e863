"""The Q/K weights of GGUF conversions against HF's (posenc_cli/models/qk_weights.py).

tests/data/qk_weights/ holds tiny random HF checkpoints (their q/k projections, bf16) and their conversions by
llama.cpp's own convert_hf_to_gguf.py, faithful and with each known mistake patched into the converter at run time
(tools/golden/llamacpp_qk_weights.py; conversions.json says which file holds which mistake). The verdict on every
file must name exactly the mistake the converter was made to commit, in every layer; the permutations are also
checked against the converter's formula written here in plain numpy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from .conftest import cli

gguf = pytest.importorskip("gguf", reason="the GGUF tests need the gguf extra: pip install 'posenc-cli[gguf]'")

from posenc_cli.models import qk_weights  # noqa: E402
from posenc_cli.models.qk_weights import WeightsError, check_weights  # noqa: E402

from .each import each  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "qk_weights"
MANIFEST = json.loads((DATA / "conversions.json").read_text())["files"]

#: the patch each file's converter ran with -> what every Q/K tensor must be found holding (role -> candidate)
TRUTH = {
    None: {"q": "expected", "k": "expected"},
    "k_with_q_heads": {"q": "expected", "k": "other-heads"},
    "no_permute": {"q": "none", "k": "none"},
    "twice": {"q": "twice", "k": "twice"},
    "neox_permuted": {"q": "norm-permuted", "k": "norm-permuted"},
}
WORDS = {
    "k_with_q_heads": "attn_k.weight of layers 0-2 is permuted with 4 heads where the model has 2 KV heads",
    "no_permute": "attn_q.weight and attn_k.weight of layers 0-2 are not permuted",
    "twice": "attn_q.weight and attn_k.weight of layers 0-2 are permuted twice",
    "neox_permuted": "attn_q.weight, attn_q.bias, attn_k.weight and attn_k.bias of layers 0-1 are permuted as for "
    "a NORM model",
}


@pytest.fixture(scope="module")
def checks():
    return {name: check_weights(str(DATA / f"{name}.gguf"), str(DATA / e["hf"]), str(DATA / e["hf"]))
            for name, e in MANIFEST.items()}  # fmt: skip


def test_every_conversion_is_named_as_the_converter_made_it(checks):
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(sorted(MANIFEST), lambda case: _every_conversion_is_named_as_the_converter_made_it(checks, case))


def _every_conversion_is_named_as_the_converter_made_it(checks, name):
    entry, c = MANIFEST[name], checks[name]
    truth = TRUTH[entry["mistake"]]
    assert c.tensors, name
    assert {(t.role, t.found) for t in c.tensors} == set(truth.items()), [(t.gguf, t.found) for t in c.tensors]
    # every layer of the model, weights and (where the model has them) biases
    n_layers = len({t.split(".")[1] for t in entry["tensors"]})
    assert {t.layer for t in c.tensors} == set(range(n_layers))
    assert len(c.tensors) == sum(2 if "attn_qkv" in t else 1 for t in entry["tensors"])
    if entry["mistake"] is None:
        assert c.status == "agree" and not c.findings, c.findings
    else:
        assert c.status == "differ"
        # a fused attn_qkv names its part: "attn_k.weight (in attn_qkv)"
        assert any(f.replace(" (in attn_qkv)", "").startswith(WORDS[entry["mistake"]]) for f in c.findings), c.findings
    if "--fuse-qkv" in entry["outtype"]:  # HF's separate projections against the converter's fused tensor
        assert any("fused by the converter" in n for n in c.notes) and all("attn_qkv" in t.gguf for t in c.tensors)
    if entry["mistake"] == "k_with_q_heads":
        assert "(K only)" in c.summary and "PR #3364" in c.summary


def test_a_quantized_faithful_file_agrees_within_its_rounding_and_not_exactly(checks):
    assert checks["llama.q8_0"].status == "agree"
    assert "rounding bound" in " ".join(checks["llama.q8_0"].notes)
    # Q8_0 really rounds: the dequantized rows are not HF's values, so an exact comparison could not pass
    tensors, _ = qk_weights.gguf_qk(str(DATA / "llama.q8_0.gguf"), "q8")
    g, cols = tensors["blk.0.attn_k.weight"].first(gguf)
    assert cols == 32 and tensors["blk.0.attn_k.weight"].qtype.name == "Q8_0"
    hf = qk_weights.hf_tensors([str(DATA / "llama_hf" / "model.safetensors")])["model.layers.0.self_attn.k_proj.weight"]
    h = hf.first(cols)[converter_permute(16, 2)]
    assert 0 < np.max(np.abs(g - h)) <= np.max(np.abs(h)) / 127


def test_the_first_blocks_dequantize_as_gguf_s_own_dequantize():
    """The weights check dequantizes every row's first blocks in one call of the type's own rows code; gguf's
    public ``dequantize`` (16 rows at a time) gives the same values, for block types of every family."""
    rng = np.random.default_rng(3)

    def same(name):
        qt = gguf.GGMLQuantizationType[name]
        block, tsize = gguf.GGML_QUANT_SIZES[qt]
        part = rng.integers(0, 256, (37, max(1, 256 // block) * tsize), dtype=np.uint8)  # any bytes are blocks
        with np.errstate(all="ignore"):  # random scales: some are inf or nan, the same on both sides
            want = np.asarray(gguf.quants.dequantize(part, qt), dtype=np.float32)
            got = np.asarray(qk_weights._dequantize(gguf, part, qt), dtype=np.float32)
        assert got.shape == want.shape and np.array_equal(got, want, equal_nan=True)

    each(["Q8_0", "Q4_0", "Q5_1", "Q4_K", "Q6_K", "IQ4_NL", "TQ1_0"], same)


def requantized(src: Path, dest: Path, qtype: str) -> str:
    """``src`` with its 2-D tensors quantized to ``qtype`` by gguf's own quantizer (the reference's code)."""
    r = gguf.GGUFReader(str(src))
    w = gguf.GGUFWriter(str(dest), r.fields["general.architecture"].contents())
    for key, f in r.fields.items():
        if not key.startswith("GGUF.") and key != "general.architecture":
            sub = {"sub_type": f.types[-1]} if f.types[0] == gguf.GGUFValueType.ARRAY else {}
            w.add_key_value(key, f.contents(), f.types[0], **sub)
    qt = gguf.GGMLQuantizationType[qtype]
    for t in r.tensors:
        data = np.array(t.data, dtype=np.float32)
        w.add_tensor(t.name, gguf.quants.quantize(data, qt), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(dest)


def test_coarser_quantizations_agree_and_still_name_the_mistake(tmp_path):
    """Each of Q4_0, Q4_1, Q5_0 and Q5_1 (one test over the four: :func:`tests.each.each` names each failing
    type)."""
    hf = str(DATA / "llama_hf")

    def check(qtype):
        good = check_weights(requantized(DATA / "llama.f32.gguf", tmp_path / f"g.{qtype}.gguf", qtype), hf, hf)
        assert good.status == "agree", good.findings
        bad = check_weights(
            requantized(DATA / "llama.k_with_q_heads.gguf", tmp_path / f"b.{qtype}.gguf", qtype), hf, hf
        )
        assert {(t.role, t.found) for t in bad.tensors} == {("q", "expected"), ("k", "other-heads")}

    each(["Q4_0", "Q4_1", "Q5_0", "Q5_1"], check)


def test_a_type_too_coarse_to_tell_rows_apart_is_not_checked(tmp_path):
    src = gguf.GGUFReader(str(DATA / "llama.f32.gguf"))
    w = gguf.GGUFWriter(str(tmp_path / "q2.gguf"), "llama")
    for key, f in src.fields.items():
        if not key.startswith("GGUF.") and key != "general.architecture":
            sub = {"sub_type": f.types[-1]} if f.types[0] == gguf.GGUFValueType.ARRAY else {}
            w.add_key_value(key, f.contents(), f.types[0], **sub)
    block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q2_K]  # 2.625 bits per weight
    for t in src.tensors:
        raw = np.zeros((t.data.shape[0], 256 // block * size), dtype=np.uint8)
        w.add_tensor(t.name, raw, raw_dtype=gguf.GGMLQuantizationType.Q2_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    c = check_weights(str(tmp_path / "q2.gguf"), str(DATA / "llama_hf"), str(DATA / "llama_hf"))
    assert c.status == "not checked" and "is Q2_K, whose rounding is too coarse" in c.summary


def test_weights_from_another_model_are_said_to_be(tmp_path):
    c = check_weights(str(DATA / "llama.f16.gguf"), str(DATA / "llama_other_hf"), str(DATA / "llama_other_hf"))
    assert c.status == "differ" and "different models" in c.summary and not c.findings


def test_the_reverse_trip_through_transformers_gguf_loading():
    # llama_from_gguf_hf: llama.f32.gguf loaded by transformers' own GGUF loading and saved; the k_wrong copy's
    # loader un-permuted K with the query head count (patched in by tools/golden/llamacpp_qk_weights.py)
    reverse = json.loads((DATA / "conversions.json").read_text())["reverse"]
    assert reverse == {"llama_from_gguf_hf": {"gguf": "llama.f32", "k_wrong": False},
                       "llama_from_gguf_k_wrong_hf": {"gguf": "llama.f32", "k_wrong": True}}  # fmt: skip
    good = check_weights(
        str(DATA / "llama.f32.gguf"), str(DATA / "llama_from_gguf_hf"), str(DATA / "llama_from_gguf_hf")
    )
    assert good.status == "agree" and any("transformers' GGUF loading" in n for n in good.notes)
    bad = check_weights(str(DATA / "llama.f32.gguf"), str(DATA / "llama_from_gguf_k_wrong_hf"),
                        str(DATA / "llama_from_gguf_k_wrong_hf"))  # fmt: skip
    assert bad.status == "differ" and {(t.role, t.found) for t in bad.tensors} == {
        ("q", "expected"),
        ("k", "other-heads"),
    }
    (finding,) = bad.findings
    assert finding.startswith("attn_k.weight of layers 0-2 is permuted with 4 heads where the model has 2 KV heads")
    assert "reload out-f32-None.gguf with a transformers whose GGUF loader un-permutes" in finding


def converter_permute(rows: int, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf.py's LlamaModel.permute (conversion/llama.py:176) applied to row numbers, in numpy."""
    w = np.arange(rows)
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2).swapaxes(1, 2).reshape(w.shape)


def test_the_permutations_are_the_converters():
    """(heads, head_dim) = (4, 8), (2, 16), (32, 128), (8, 4): one test over the four (:func:`tests.each.each`
    names each failing one)."""
    each([(4, 8), (2, 16), (32, 128), (8, 4)], lambda case: _permutations_are_the_converters(*case))


def _permutations_are_the_converters(heads, head_dim):
    rows = heads * head_dim
    assert np.array_equal(qk_weights.llama_permute(rows, heads), converter_permute(rows, heads))
    assert np.array_equal(qk_weights.rotated_permute(heads, head_dim, head_dim), converter_permute(rows, heads))
    # partial rotary: only the first rot rows of each head move, as HF's rotate_half over rot features pairs them
    rot = head_dim // 2 if head_dim >= 4 else head_dim
    idx = qk_weights.rotated_permute(heads, head_dim, rot).reshape(heads, head_dim)
    assert np.array_equal(idx[:, rot:] % head_dim, np.tile(np.arange(rot, head_dim), (heads, 1)))
    pairs = idx[:, :rot].reshape(heads, rot // 2, 2) % head_dim  # consecutive GGUF rows = HF's (i, i + rot/2)
    assert np.array_equal(pairs[..., 1] - pairs[..., 0], np.full((heads, rot // 2), rot // 2))


def test_the_converter_table_comes_from_its_registry():
    from posenc_cli.models.llamacpp import QK_PERMUTE, QK_PERMUTED, ROPE_TYPE

    # LlamaModel permutes; Llama4Model and ApertusModel set undo_permute = False (conversion/llama.py)
    assert QK_PERMUTE["llama"] == "mixed" and QK_PERMUTE["llama4"] == "no" and QK_PERMUTE["apertus"] == "no"
    assert QK_PERMUTE["qwen2"] == "no" and "llama" in QK_PERMUTED
    assert set(QK_PERMUTE) <= set(ROPE_TYPE) | {"t5encoder"}


def test_without_hf_weights_nothing_is_claimed():
    from posenc_cli.models.conversion import verdict

    v = verdict(str(DATA / "llama.f16.gguf"), str(DATA / "llama_hf" / "config.json"), length=16)
    assert any("Q/K rows, compared with HF's weights" in e for e in v.equivalences)
    loose = json.loads((DATA / "llama_hf" / "config.json").read_text())
    v = verdict(str(DATA / "llama.no_permute.gguf"), loose, length=16)
    assert v.ok and v.weights.status == "not checked"
    assert not any("scores are the same" in e for e in v.equivalences), v.equivalences
    assert any(n.startswith("weights not checked (no HF weights for a loose config)") for n in v.notes)
    assert any("the weights were not checked" in n for n in v.notes)


def test_check_names_the_mistake_and_fails(tmp_path):
    code, out, err = cli(["check", str(DATA / "llama.twice.gguf"), "--against", str(DATA / "llama_hf"), "--len", "16"])
    text = " ".join(out.decode().split())
    assert code == 1, err
    assert "divergence: weights: attn_q.weight and attn_k.weight of layers 0-2 are permuted twice" in text
    code, out, _ = cli(["check", str(DATA / "llama.f16.gguf"), "--against", str(DATA / "llama_hf"), "--json"])
    data = json.loads(out)
    assert code == 0 and data["weights"]["status"] == "agree" and len(data["weights"]["tensors"]) == 6


def audit_dir(tmp_path: Path, gguf_name: str, hf: str) -> Path:
    d = tmp_path / "model"
    shutil.copytree(DATA / hf, d)
    shutil.copy(DATA / f"{gguf_name}.gguf", d / "model.gguf")
    return d


def test_audit_has_one_weights_row_in_every_format(tmp_path):
    from .test_audit import SCHEMA_PATH, validate

    schema = json.loads(Path(SCHEMA_PATH).read_text())
    d = audit_dir(tmp_path, "qwen2.neox_permuted", "qwen2_hf")
    code, out, err = cli(["audit", str(d), "--engine", "hf", "--json", "--len", "64"])
    data = json.loads(out)
    validate(data, schema)
    rows = [r for r in data["rows"] if r["layer_type"] == "weights"]
    assert code == 1 and len(rows) == 1, err
    assert rows[0]["verdict"] == "differ" and rows[0]["artifact"] == "model.gguf"
    assert "permuted as for a NORM model" in rows[0]["explanation"]
    other = [r for r in data["rows"] if r["artifact"] == "model.gguf" and r["layer_type"] != "weights"]
    assert other and all(r["verdict"] == "agree" for r in other)  # the tables agree; only the weights differ
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    code, _, _ = cli(["audit", str(d), "--engine", "hf", "--len", "64", "--markdown", str(md), "--html", str(html),
                      "-qq"])  # fmt: skip
    assert code == 1
    assert "| `model.gguf` | weights | llamacpp | ❌ differ |" in md.read_text()
    assert "permuted as for a NORM model" in html.read_text()


def test_a_faithful_audit_agrees(tmp_path):
    d = audit_dir(tmp_path, "phi3.f32", "phi3_hf")
    code, out, err = cli(["audit", str(d), "--engine", "hf", "--json", "--len", "64"])
    rows = [r for r in json.loads(out)["rows"] if r["layer_type"] == "weights"]
    assert code == 0, err
    assert rows[0]["verdict"] == "agree"


# ----- bad input -------------------------------------------------------------------------------------------------
def patched_copy(tmp_path: Path, name: str, edit) -> Path:
    raw = bytearray((DATA / f"{name}.gguf").read_bytes())
    out = tmp_path / f"{name}.bad.gguf"
    out.write_bytes(bytes(edit(raw)))
    return out


def type_field(raw: bytearray, tensor: str) -> int:
    """Where the ggml type of ``tensor`` sits in a GGUF header (name, n_dims u32, dims u64 x n, type u32)."""
    at = raw.index(tensor.encode()) + len(tensor)
    n_dims = int.from_bytes(raw[at : at + 4], "little")
    return at + 4 + 8 * n_dims


def bad(args: list[str]) -> str:
    code, out, err = cli(args)
    assert code == 2 and out == b"", (code, err)
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_truncated_tensor_data_is_refused_naming_the_tensor(tmp_path):
    p = patched_copy(tmp_path, "llama.f16", lambda raw: raw[:-200])
    err = bad(["check", str(p), "--against", str(DATA / "llama_hf")])
    assert "runs past the end of the file" in err and "attn_" in err


def test_a_file_truncated_past_its_q_k_tensors_is_one_row_of_an_audit(tmp_path):
    # the Q/K tensors whole, a later tensor cut short: the gguf reader's refusal is a row, not a crash
    d = audit_dir(tmp_path, "llama.f32", "llama_hf")
    src = gguf.GGUFReader(str(DATA / "llama.f32.gguf"))
    w = gguf.GGUFWriter(str(d / "model.gguf"), "llama")
    for key, f in src.fields.items():
        if not key.startswith("GGUF.") and key != "general.architecture":
            sub = {"sub_type": f.types[-1]} if f.types[0] == gguf.GGUFValueType.ARRAY else {}
            w.add_key_value(key, f.contents(), f.types[0], **sub)
    for t in src.tensors:
        w.add_tensor(t.name, np.array(t.data))
    w.add_tensor("output_norm.weight", np.ones(64, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    whole = (d / "model.gguf").read_bytes()
    (d / "model.gguf").write_bytes(whole[:-16])
    code, out, _ = cli(["audit", str(d), "--engine", "hf", "--json", "--len", "16"])
    rows = {r["layer_type"]: r for r in json.loads(out)["rows"] if r["artifact"] == "model.gguf"}
    assert code == 2 and rows["weights"]["verdict"] == "error"
    assert "the gguf reader refused it" in rows["weights"]["explanation"]


def test_an_unknown_quantization_type_is_refused_naming_the_tensor(tmp_path):
    def edit(raw):
        at = type_field(raw, "blk.1.attn_q.weight")
        raw[at : at + 4] = (250).to_bytes(4, "little")
        return raw

    p = patched_copy(tmp_path, "llama.f16", edit)
    err = bad(["check", str(p), "--against", str(DATA / "llama_hf")])
    assert "blk.1.attn_q.weight has ggml type 250" in err


def test_a_missing_hf_tensor_is_refused_naming_it(tmp_path):
    import ml_dtypes  # noqa: F401  (safetensors.numpy reads bf16 as ml_dtypes' bfloat16, which must be imported)
    from safetensors.numpy import load_file, save_file

    d = tmp_path / "hf"
    shutil.copytree(DATA / "llama_hf", d)
    tensors = load_file(str(d / "model.safetensors"))
    del tensors["model.layers.2.self_attn.k_proj.weight"]
    save_file(tensors, str(d / "model.safetensors"))
    err = bad(["check", str(DATA / "llama.f16.gguf"), "--against", str(d)])
    assert "blk.2.attn_k.weight has no HF counterpart" in err


def test_a_missing_gguf_tensor_is_refused_naming_it(tmp_path):
    src = gguf.GGUFReader(str(DATA / "llama.f32.gguf"))
    w = gguf.GGUFWriter(str(tmp_path / "m.gguf"), "llama")
    for key, f in src.fields.items():
        if not key.startswith("GGUF.") and key != "general.architecture":
            sub = {"sub_type": f.types[-1]} if f.types[0] == gguf.GGUFValueType.ARRAY else {}
            w.add_key_value(key, f.contents(), f.types[0], **sub)
    for t in src.tensors:
        if t.name != "blk.1.attn_k.weight":
            w.add_tensor(t.name, np.array(t.data))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    err = bad(["check", str(tmp_path / "m.gguf"), "--against", str(DATA / "llama_hf")])
    assert "tensor blk.1.attn_k.weight is missing" in err


def test_shapes_that_disagree_with_the_head_counts_are_refused(tmp_path):
    from .test_llamacpp_verdict import mutate

    # a GGUF claiming 8 query heads over the same 32 rows: 8 heads of 4 (key_length 8 kept) cannot hold them
    src = DATA / "llama.f32.gguf"
    p = mutate(src, tmp_path / "heads.gguf", set_keys={"llama.attention.head_count": (8, gguf.GGUFValueType.UINT32)})
    with pytest.raises(WeightsError, match=r"blk\.0\.attn_q\.weight has 32 rows; 8 query heads of 8 need 64"):
        check_weights(p, str(DATA / "llama_hf"), str(DATA / "llama_hf"))
    # the same through the audit: a row saying what could not be checked, the tables' rows still there
    d = tmp_path / "audit"
    shutil.copytree(DATA / "llama_hf", d)
    shutil.copy(p, d / "model.gguf")
    code, out, _ = cli(["audit", str(d), "--engine", "hf", "--json", "--len", "16"])
    assert code == 2
    rows = {r["layer_type"]: r for r in json.loads(out)["rows"] if r["artifact"] == "model.gguf"}
    assert rows["weights"]["verdict"] == "error" and "attn_q.weight has 32 rows" in rows["weights"]["explanation"]


# ----- which layers slide: llama.cpp's pattern against the config's layer types ------------------------------
GEMMA3 = Path(__file__).resolve().parent / "data" / "llamacpp"


def test_sliding_layers_follow_the_pattern_llama_cpp_reads(tmp_path_factory):
    each(
        [
            (
                None,
                "llama.cpp treats layers 2 as sliding (no gemma3.attention.sliding_window_pattern key: llama.cpp's "
                "default for gemma3, 6) where HF's layer_types say full_attention",
            ),
            ((3, gguf.GGUFValueType.UINT32), None),
            (([True, True, False, True, True, False], gguf.GGUFValueType.ARRAY), None),
            (
                (2, gguf.GGUFValueType.UINT32),
                "llama.cpp treats layers 1, 3 as full (key "
                "gemma3.attention.sliding_window_pattern = 2) where HF's layer_types say sliding",
            ),
        ],
        lambda c: _sliding_layers_follow_the_pattern_llama_cpp_reads(tmp_path_factory.mktemp("case"), c[0], c[1]),
    )


def _sliding_layers_follow_the_pattern_llama_cpp_reads(tmp_path, pattern, expect):
    from posenc_cli.models.conversion import verdict

    from .test_llamacpp_verdict import mutate

    # a Gemma 3 whose every third layer is global; the real converter writes no pattern key
    config = json.loads((GEMMA3 / "gemma3.config.json").read_text())
    config["layer_types"] = ["sliding_attention", "sliding_attention", "full_attention"] * 2
    keys = {} if pattern is None else {"gemma3.attention.sliding_window_pattern": pattern}
    if pattern is not None and pattern[1] == gguf.GGUFValueType.ARRAY:
        src = gguf.GGUFReader(str(GEMMA3 / "gemma3.gguf"))
        w = gguf.GGUFWriter(str(tmp_path / "g.gguf"), "gemma3")
        for key, f in src.fields.items():
            if not key.startswith("GGUF.") and key != "general.architecture":
                sub = {"sub_type": f.types[-1]} if f.types[0] == gguf.GGUFValueType.ARRAY else {}
                w.add_key_value(key, f.contents(), f.types[0], **sub)
        w.add_array("gemma3.attention.sliding_window_pattern", pattern[0])
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        path = str(tmp_path / "g.gguf")
    else:
        path = mutate(GEMMA3 / "gemma3.gguf", tmp_path / "g.gguf", set_keys=keys)
    v = verdict(path, config, length=64)
    slide = [d for d in v.divergences if d.startswith("sliding layers:")]
    if expect is None:
        assert not slide and any(n.startswith("sliding layers: llama.cpp's (key") for n in v.notes), v.notes
    else:
        assert any(expect in d for d in slide), slide
        assert len(slide) == (2 if pattern is not None else 1)  # pattern 2 also makes layer 2 sliding


def test_a_cached_hub_id_with_weights_is_checked_at_the_weights(tmp_path):
    """The HF model as a Hub id whose cached snapshot holds its safetensors (links into blobs/, as
    huggingface_hub writes them): the conversion's Q/K rows are compared with them, and the mistake named."""
    import os

    from .test_audit import COMMIT

    repo = tmp_path / "hub" / "models--org--tiny-llama"
    snap = repo / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (repo / "blobs").mkdir()
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    for i, rel in enumerate(["config.json", "model.safetensors"]):
        blob = repo / "blobs" / f"{i:040x}"
        shutil.copy(DATA / "llama_hf" / rel, blob)
        os.symlink(os.path.relpath(blob, snap), snap / rel)
    env = {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    cases = (
        ("llama.twice.gguf", "differ", "permuted twice"),
        ("llama.q8_0.gguf", "agree", "equal HF's"),
        ("llama_mlx_traditional", "differ", "rope_traditional: true"),
        ("llama_mlx_q4", "agree", "equal HF's"),
    )
    for name, verdict, words in cases:
        code, out, err = cli(["audit", "org/tiny-llama", "--against", str(DATA / name), "--engine", "hf", "--json",
                              "--len", "16"], env=env)  # fmt: skip
        rows = [r for r in json.loads(out)["rows"] if r["layer_type"] == "weights"]
        assert len(rows) == 1 and rows[0]["verdict"] == verdict, (name, rows, err)
        assert words in rows[0]["explanation"] and code == (1 if verdict == "differ" else 0)


def test_an_index_whose_shards_are_not_all_here_is_not_checked(tmp_path):
    """A snapshot with the safetensors index but not its shards (audit --download fetches only position
    tensors): the weights were not checked, which is said, not an error."""
    d = tmp_path / "hf"
    d.mkdir()
    shutil.copy(DATA / "llama_hf" / "config.json", d / "config.json")
    shutil.copy(DATA / "llama_hf" / "model.safetensors", d / "model-00001-of-00002.safetensors")
    index = {"weight_map": {"model.layers.0.self_attn.q_proj.weight": "model-00001-of-00002.safetensors",
                            "lm_head.weight": "model-00002-of-00002.safetensors"}}  # fmt: skip
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    c = check_weights(str(DATA / "llama.twice.gguf"), str(d), str(d))
    assert c.status == "not checked" and "no HF safetensors" in c.summary
