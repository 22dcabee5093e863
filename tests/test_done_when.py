"""The issues' "done when" lines, end to end: the real ``posenc`` command in subprocesses.

Each test runs the exact user flow (generate -> check, export, kinds, check of a foreign checkpoint) and
asserts exit codes plus the key output. Expected numbers come from the published formulas (Llama 3.1's
``rope_scaling`` rule, YaRN's attention factor, ALiBi's slopes) or are computed here (bfloat16's distinct
positions), never from posenc's own output.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.encodings import KINDS, get_kind
from posenc_cli.encodings.base import format_value

from .conftest import clean_env
from .conftest import inproc as run
from .each import each

#: Llama-3.1-8B's rope settings (head_dim 64 from hidden_size / heads), shrunk where it does not matter.
LLAMA31 = {
    "model_type": "llama",
    "rope_theta": 500000.0,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
    "hidden_size": 256,
    "num_attention_heads": 4,
    "max_position_embeddings": 131072,
}
YARN = {
    "model_type": "llama",
    "rope_theta": 10000.0,
    "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
    "hidden_size": 128,
    "num_attention_heads": 2,
    "max_position_embeddings": 4096,
}
ROPE_CHECKS = ("pythagorean", "norm-preserving", "relative", "long-term-decay")
#: What check runs on a table with one row per position.
ABSOLUTE_CHECKS = (
    "finite",
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
WIDE = clean_env(COLUMNS="200")  # table cells on one line each


# ----- helpers -------------------------------------------------------------------------------------------------
def ok(proc, code: int = 0) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == code, (proc.returncode, err, proc.stdout.decode()[-2000:])
    assert "Traceback" not in err
    return proc.stdout.decode()


def one_error_line(proc) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == 2, (proc.returncode, err)
    assert "Traceback" not in err and proc.stdout == b""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    return lines[0]


def check_json(args: list[str], code: int = 0) -> dict:
    (report,) = json.loads(ok(run(["check", *args, "--json"]), code))
    return report


def results(report: dict) -> dict[str, dict]:
    return {r["name"]: r for r in report["results"]}


def table_rows(text: str) -> dict[str, list[str]]:
    """Each property line of a check report: name -> [status, the rest of the line split on 2+ spaces]
    (status PASS/FAIL for a required property, pass/fail for a reported one, INFO for a report)."""
    import re

    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\S+ (PASS|FAIL|pass|fail|INFO)\s+(\S+)\s{2,}(.*)$", line)
        if m:
            rows[m.group(2)] = [m.group(1), *re.split(r"\s{2,}", m.group(3).strip())]
    return rows


def grid_rows(text: str) -> dict[str, list[str]]:
    """Rows of a plain-text grid (columns 2+ spaces apart): first cell -> the other cells; a first cell too long
    for its column stands alone on its line and the row goes on below it."""
    import re

    rows: dict[str, list[str]] = {}
    pending = None
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if not line.strip():
            continue
        if pending is not None and line.startswith(" " * 8):
            rows[pending] = cells
            pending = None
            continue
        if len(cells) == 1 and line.startswith("  "):
            pending = cells[0]
            continue
        rows[cells[0]] = cells[1:]
    return rows


def write_config(tmp_path: Path, config: dict, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return path


def load(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    import ml_dtypes  # noqa: F401  (lets safetensors.numpy read bfloat16)
    from safetensors import safe_open

    with safe_open(str(path), "np") as fh:
        return {k: fh.get_tensor(k) for k in fh.keys()}, fh.metadata()  # noqa: SIM118 (safe_open has no __iter__)


def llama3_inv_freq(base: float, dim: int, factor: float, low: float, high: float, original: int) -> np.ndarray:
    """HF ``_compute_llama3_parameters``, transcribed in float64."""
    inv_freq = 1.0 / base ** (np.arange(0, dim, 2) / dim)
    wavelen = 2 * math.pi / inv_freq
    low_wavelen, high_wavelen = original / low, original / high
    scaled = np.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
    smooth = (original / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, scaled)


# ----- rope from a HF config: generate -> check ----------------------------------------------------------------
def test_rope_from_llama31_config_generate_then_check(tmp_path):
    config = write_config(tmp_path, LLAMA31)
    out = tmp_path / "rope.safetensors"
    proc = run(["generate", "--kind", "rope", "--hf-config", str(config), "--len", "8192", "-o", str(out)])
    assert ok(proc) == ""
    assert (
        proc.stderr.decode().strip()
        == f"wrote {out} (cos (8192, 64) float32, sin (8192, 64) float32, inv_freq (32,) float64)"
    )

    tensors, meta = load(out)
    assert meta["kind"] == "rope" and meta["scaling"] == "llama3" and meta["layout"] == "half"
    assert float(meta["base"]) == 500000.0 and float(meta["factor"]) == 8.0
    assert int(meta["original_max_position_embeddings"]) == 8192 and meta["dim"] == "64"
    want = llama3_inv_freq(500000.0, 64, 8.0, 1.0, 4.0, 8192)
    np.testing.assert_allclose(tensors["inv_freq"], want, rtol=1e-13, atol=0)
    emb = np.arange(8192)[:, None] * np.concatenate([want, want])[None]
    np.testing.assert_allclose(tensors["cos"], np.cos(emb), rtol=0, atol=1e-6)
    np.testing.assert_allclose(tensors["sin"], np.sin(emb), rtol=0, atol=1e-6)

    proc = run(["check", str(out)], env=WIDE)
    text = ok(proc)
    assert "(kind: rope)" in text
    rows = table_rows(text)
    for name in ROPE_CHECKS:
        # PASS for a required property, pass for a reported one (long-term-decay)
        assert name in rows and rows[name][0].upper() == "PASS", (name, rows.get(name))
    assert "every required property holds" in proc.stderr.decode()

    report = check_json([str(out)])
    assert report["ok"] is True and report["kind"] == "rope" and report["tensor"] == "cos"
    assert {"pythagorean", "norm-preserving", "relative", "matches-spec"} <= set(report["required"])
    assert all(results(report)[n]["status"] == "PASS" for n in (*ROPE_CHECKS, "matches-spec"))


def test_rope_from_yarn_config_generate_then_check(tmp_path):
    config = write_config(tmp_path, YARN)
    out = tmp_path / "yarn.safetensors"
    ok(run(["generate", "--kind", "rope", "--hf-config", str(config), "-o", str(out), "-q"]))  # len from the config
    tensors, meta = load(out)
    assert tensors["cos"].shape == (4096, 64) and meta["scaling"] == "yarn"
    attention = 0.1 * math.log(4.0) + 1.0  # YaRN's get_mscale(factor)
    assert float(meta["attention_scaling"]) == pytest.approx(attention, rel=1e-12)

    report = check_json([str(out)])
    assert report["ok"] is True
    res = results(report)
    for name in (*ROPE_CHECKS, "matches-spec", "bounded"):
        assert res[name]["status"] == "PASS", res[name]
    assert res["bounded"]["value"] == pytest.approx(attention, rel=1e-6)  # |cos| reaches the scaling, not 1
    assert res["pythagorean"]["data"]["attention_scaling"] == pytest.approx(attention, rel=1e-12)


def test_hf_config_without_a_length_names_the_fix(tmp_path):
    # read as written (--read-as: no class default of max_position_embeddings fills the gap)
    config = write_config(
        tmp_path, {k: v for k, v in LLAMA31.items() if k not in ("max_position_embeddings", "model_type")}
    )
    line = one_error_line(
        run(["generate", "--hf-config", str(config), "--read-as", "llama", "-o", str(tmp_path / "r.safetensors")])
    )
    assert "max_position_embeddings" in line and "--len" in line
    assert not (tmp_path / "r.safetensors").exists()


# ----- ONNX RotaryEmbedding caches -----------------------------------------------------------------------------
def _full_and_onnx(tmp_path: Path, source: list[str], export_extra: list[str] = ()) -> tuple[dict, dict, dict]:
    full = tmp_path / "full.safetensors"
    onnx = tmp_path / "onnx.safetensors"
    ok(run(["export", *source, "-o", str(full), "-q"]))
    ok(run(["export", *source, "--onnx-rope", *export_extra, "-o", str(onnx), "-q"]))
    f, _ = load(full)
    o, meta = load(onnx)
    return f, o, meta


ONNX_CACHE_CASES = {
    "default": (["rope", "--len", "64", "--dim", "32"], 32),
    "partial": (["rope:partial_rotary_factor=0.5", "--len", "64", "--dim", "32"], 16),
    "llama3.1-preset": (["rope", "--len", "64", "--dim", "32", "-p", "preset=llama3.1"], 32),
    "hf-config": (["rope", "--hf-config", "CONFIG", "--len", "256"], 64),
}


def test_export_onnx_rope_caches_are_the_first_half_columns(tmp_path):
    """Each of :data:`ONNX_CACHE_CASES`, in a folder of its own (one test over the four: :func:`tests.each.each`
    names each failing case)."""

    def check(case):
        (tmp_path / case).mkdir()
        _onnx_caches_are_the_first_half_columns(tmp_path / case, *ONNX_CACHE_CASES[case])

    each(ONNX_CACHE_CASES, check)


def _onnx_caches_are_the_first_half_columns(tmp_path, source, rot_dim):
    source = [str(write_config(tmp_path, LLAMA31)) if s == "CONFIG" else s for s in source]
    full, onnx, meta = _full_and_onnx(tmp_path, source)
    n = full["cos"].shape[0]
    assert set(onnx) >= {"cos_cache", "sin_cache"} and "cos" not in onnx
    assert full["cos"].shape == (n, rot_dim)
    assert onnx["cos_cache"].shape == onnx["sin_cache"].shape == (n, rot_dim // 2)
    assert meta["cache"] == "onnx" and meta["layout"] == "half"
    np.testing.assert_array_equal(onnx["cos_cache"], full["cos"][:, : rot_dim // 2])
    np.testing.assert_array_equal(onnx["sin_cache"], full["sin"][:, : rot_dim // 2])
    # half layout: the full table is cat(cache, cache)
    np.testing.assert_array_equal(full["cos"], np.concatenate([onnx["cos_cache"]] * 2, axis=1))


def test_export_onnx_rope_from_a_posenc_rope_file(tmp_path_factory):
    each([None, "float16"], lambda c: _export_onnx_rope_from_a_posenc_rope_file(tmp_path_factory.mktemp("case"), c))


def _export_onnx_rope_from_a_posenc_rope_file(tmp_path, dtype):
    """Regression: a file source used to fail with '-p applies to specs', and then ignored --dtype."""
    config = write_config(tmp_path, LLAMA31)
    rope = tmp_path / "rope.safetensors"
    ok(run(["generate", "--hf-config", str(config), "--len", "512", "-o", str(rope), "-q"]))
    onnx = tmp_path / "onnx.safetensors"
    ok(run(["export", str(rope), "--onnx-rope", "-o", str(onnx), "-q", *(["--dtype", dtype] if dtype else [])]))
    full, _ = load(rope)
    caches, meta = load(onnx)
    want = dtype or "float32"
    assert meta["dtype"] == want and caches["cos_cache"].dtype == np.dtype(want)
    assert caches["cos_cache"].shape == (512, 32)
    # written straight from float64 angles, so within one float16 ulp of the float32 table's columns
    atol = 0 if dtype is None else 2.0**-10
    np.testing.assert_allclose(caches["cos_cache"], full["cos"][:, :32], rtol=0, atol=atol)
    np.testing.assert_allclose(caches["sin_cache"], full["sin"][:, :32], rtol=0, atol=atol)


def test_check_an_onnx_cache_file(tmp_path):
    """Regression: rotating by half-width caches used to raise a ValueError traceback."""
    out = tmp_path / "x.safetensors"
    ok(run(["export", "rope", "--len", "64", "--dim", "32", "--onnx-rope", "-o", str(out), "-q"]))
    report = check_json([str(out)])
    assert report["ok"] is True and report["tensor"] == "cos_cache"
    for name in ("pythagorean", "norm-preserving", "relative"):
        assert results(report)[name]["status"] == "PASS"


# ----- generate -> check for the other families ----------------------------------------------------------------
GENERATE_CHECK_CASES = dict(
    zip(
        ["alibi", "alibi-causal", "t5", "relative", "sinusoidal-2d-mae"],
        [
            (["--kind", "alibi", "--len", "64", "--dim", "8"], "bias", (8, 64, 64), ("finite", "toeplitz", "monotone")),
            (
                ["--kind", "alibi", "--len", "64", "--dim", "8", "-p", "causal=true"],
                "bias",
                (8, 64, 64),
                ("finite", "toeplitz", "monotone"),
            ),
            (["--kind", "t5", "--len", "64"], "buckets", (64, 64), ("toeplitz", "monotone", "t5-saturation")),
            (["--kind", "relative", "--len", "64"], "index", (64, 64), ("toeplitz", "monotone")),
            (
                ["--kind", "sinusoidal-2d", "--grid", "14x14", "--dim", "64", "-p", "preset=mae"],
                "pe",
                (196, 64),
                ("finite", "bounded", "unique", "constant-norm"),
            ),
        ],
        strict=True,
    )
)


def test_generate_then_check(tmp_path):
    """Each of :data:`GENERATE_CHECK_CASES`, in a folder of its own (one test over the five:
    :func:`tests.each.each` names each failing case)."""

    def check(case):
        (tmp_path / case).mkdir()
        _generated_then_checked(tmp_path / case, *GENERATE_CHECK_CASES[case])

    each(GENERATE_CHECK_CASES, check)


def _generated_then_checked(tmp_path, args, primary, shape, required):
    out = tmp_path / "table.safetensors"
    proc = run(["generate", *args, "-o", str(out)])
    assert ok(proc) == "" and proc.stderr.decode().startswith(f"wrote {out} ({primary} {shape}")
    tensors, meta = load(out)
    assert tensors[primary].shape == shape and meta["kind"] == args[1]

    report = check_json([str(out)])
    assert report["ok"] is True and report["tensor"] == primary and report["failed"] == []
    assert set(required) | {"matches-spec"} <= set(report["required"])
    res = results(report)
    for name in (*required, "matches-spec"):
        assert res[name]["status"] == "PASS", res[name]

    if args[1] == "alibi":
        np.testing.assert_array_equal(tensors["slopes"], 2.0 ** -np.arange(1, 9))  # 1/2 .. 1/256
        i, j = np.arange(64)[:, None], np.arange(64)[None]
        want = -tensors["slopes"][:, None, None] * np.abs(i - j)
        if "causal=true" in args:
            want = np.where(j > i, -np.inf, want)
            assert res["finite"]["data"]["masked"] == 8 * 64 * 63 // 2
        np.testing.assert_array_equal(tensors["bias"], want)


def test_generated_file_that_was_edited_fails_matches_spec(tmp_path):
    from safetensors.numpy import save_file

    out = tmp_path / "alibi.safetensors"
    ok(run(["generate", "--kind", "alibi", "--len", "16", "--dim", "8", "-o", str(out), "-q"]))
    tensors, meta = load(out)
    tensors["slopes"][3] *= 1.5
    save_file(tensors, str(out), metadata=meta)
    report = check_json([str(out)], code=1)
    assert report["failed"] == ["matches-spec"] and "slopes[3]" in results(report)["matches-spec"]["detail"]


# ----- kinds ---------------------------------------------------------------------------------------------------
def test_kinds_lists_every_kind():
    text = ok(run(["kinds"], env=WIDE))
    rows = {k: v for k, v in grid_rows(text).items() if k in KINDS or k not in ("posenc kinds", "kind")}
    assert list(rows) == list(KINDS)  # every kind, in registry order
    for kind in KINDS:
        assert rows[kind][0].startswith(get_kind(kind).SUMMARY[:40])
    listed = [row["kind"] for row in json.loads(ok(run(["kinds", "--json"])))]
    assert listed == list(KINDS)


def test_kinds_rope_shows_every_parameter_with_its_default():
    text = ok(run(["kinds", "rope"], env=WIDE))
    rows = grid_rows(text)
    for p in get_kind("rope").param_infos():
        name = p.name  # one vocabulary: length everywhere
        assert name in rows, f"{name} missing from `posenc kinds rope`"
        default = "-" if p.default is None else format_value(p.default)
        assert rows[name][1] == default, (name, rows[name])
    for preset in get_kind("rope").PRESETS:
        assert preset in rows


def test_kinds_json_documents_every_parameter_of_every_kind():
    infos = {info["kind"]: info for info in json.loads(ok(run(["kinds", "--json"])))}
    for kind in KINDS:
        params = {p["name"]: p for p in infos[kind]["parameters"]}
        for p in get_kind(kind).param_infos():
            name = p.name  # one vocabulary: length everywhere
            assert name in params and params[name]["help"], (kind, name)
            assert params[name]["default"] == (None if p.default is None else format_value(p.default))


def test_kinds_unknown_names_the_choices():
    line = one_error_line(run(["kinds", "rotary2"]))
    assert "'rotary2'" in line and all(k in line for k in KINDS)


# ----- a foreign checkpoint: BERT's learned position table -----------------------------------------------------
BERT_POS = "bert.embeddings.position_embeddings.weight"


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> Path:
    """A small BERT-style checkpoint as transformers saves it (learned tables at N(0, 0.02^2) init)."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(2018)

    def normal(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    tensors = {
        "bert.embeddings.word_embeddings.weight": normal(1000, 64),
        BERT_POS: normal(512, 64),
        "bert.embeddings.token_type_embeddings.weight": normal(2, 64),
        "bert.embeddings.LayerNorm.weight": np.ones(64, np.float32),
        "bert.embeddings.LayerNorm.bias": np.zeros(64, np.float32),
        "bert.encoder.layer.0.attention.self.query.weight": normal(64, 64),
        "bert.encoder.layer.0.attention.self.query.bias": np.zeros(64, np.float32),
        "bert.encoder.layer.0.attention.self.key.weight": normal(64, 64),
        "bert.encoder.layer.0.attention.self.value.weight": normal(64, 64),
        "bert.pooler.dense.weight": normal(64, 64),
    }
    path = tmp_path_factory.mktemp("bert") / "model.safetensors"
    save_file(tensors, str(path), metadata={"format": "pt"})
    return path


def test_bert_position_table_just_works(bert):
    proc = run(["check", str(bert), "--tensor", BERT_POS], env=WIDE)
    text = ok(proc)
    assert "kind unknown" in text and BERT_POS in text
    rows = table_rows(text)
    # what a learned table has of the seed's properties ...
    assert rows["finite"][0] == rows["distinct"][0] == "PASS"  # what every table needs, its kind unknown
    for name in ("bounded", "unique"):  # reported, not required: lowercase
        assert rows[name][0] == "pass", (name, rows[name])
    # ... and what it lacks (reported, not required: an unknown kind only requires finite)
    for name in ("constant-norm", "equidistant", "offset-invariant", "shift-linear", "symmetric"):
        assert rows[name][0] == "fail", (name, rows[name])
    assert "every required property holds" in proc.stderr.decode()

    report = check_json([str(bert), "--tensor", BERT_POS])
    assert report["ok"] is True and report["kind"] is None and report["required"] == ["finite", "distinct"]
    assert report["tensor"] == BERT_POS
    res = results(report)
    assert set(ABSOLUTE_CHECKS) <= set(res), "every absolute-table check runs"
    assert "matches-spec" not in res  # nothing to regenerate from
    assert res["bounded"]["value"] < 0.2  # |N(0, 0.02^2)| over 32768 draws stays far below 1
    assert res["decay"]["status"] == res["precision"]["status"] == "INFO"


def test_bert_position_table_expect_learned_passes(bert):
    report = check_json([str(bert), "--tensor", BERT_POS, "--expect", "learned"])
    assert report["ok"] is True and report["kind"] == "learned"
    assert report["required"] == ["finite", "distinct", "unique"]  # matches-spec needs posenc metadata


def test_bert_position_table_expect_sinusoidal_fails(bert):
    proc = run(["check", str(bert), "--tensor", BERT_POS, "--expect", "sinusoidal", "--json"])
    (report,) = json.loads(ok(proc, 1))
    assert report["ok"] is False
    assert set(report["failed"]) == {"constant-norm", "equidistant", "offset-invariant", "shift-linear", "symmetric"}
    proc = run(["check", str(bert), "--tensor", BERT_POS, "--expect", "sinusoidal"])
    ok(proc, 1)
    assert "required properties failed: constant-norm" in proc.stderr.decode()


def test_bert_checkpoint_without_tensor_lists_the_names(bert):
    from safetensors.numpy import load_file

    line = one_error_line(run(["check", str(bert)]))
    assert "--tensor" in line
    for name in load_file(str(bert)):
        assert name in line


def test_bert_unknown_tensor_lists_the_names(bert):
    line = one_error_line(run(["check", str(bert), "--tensor", "bert.embeddings.position_ids"]))
    assert "'bert.embeddings.position_ids'" in line and BERT_POS in line


def test_finite_judges_the_chosen_tensor_of_a_foreign_checkpoint(tmp_path):
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    path = tmp_path / "model.safetensors"
    save_file(
        {
            BERT_POS: (rng.standard_normal((64, 16)) * 0.02).astype(np.float32),
            "bert.unused.buffer": np.full(4, np.nan, np.float32),
        },
        str(path),
        metadata={"format": "pt"},
    )
    report = check_json([str(path), "--tensor", BERT_POS])
    assert report["ok"] is True and results(report)["finite"]["status"] == "PASS"


# ----- precision report ----------------------------------------------------------------------------------------
def test_precision_reports_the_raw_position_baseline(tmp_path):
    import ml_dtypes

    positions = np.arange(4096)
    bf16 = len(np.unique(positions.astype(ml_dtypes.bfloat16)))
    f16 = len(np.unique(positions.astype(np.float16)))
    assert bf16 == 769  # 0..256 exact, then 128 per octave: 257 + 4 * 128

    out = tmp_path / "pe.safetensors"
    ok(run(["generate", "--len", "4096", "--dim", "64", "-o", str(out), "-q"]))
    report = check_json([str(out)])
    assert report["ok"] is True
    precision = results(report)["precision"]
    assert precision["status"] == "INFO"
    assert precision["data"]["bfloat16"]["raw_positions_distinct"] == bf16
    assert precision["data"]["float16"]["raw_positions_distinct"] == f16
    assert precision["data"]["bfloat16"]["distinct_rows"] == 4096  # the encoding keeps every position apart
    assert "769 distinct" in precision["detail"]


# ----- bfloat16 tables (export --dtype bfloat16 is in the help's example) --------------------------------------
def test_bfloat16_sinusoidal_generate_then_check(tmp_path):
    out = tmp_path / "pe.safetensors"
    ok(run(["export", "sinusoidal", "--len", "64", "--dim", "16", "--dtype", "bfloat16", "-o", str(out), "-q"]))
    report = check_json([str(out)])
    assert report["ok"] is True and report["failed"] == []


def test_bfloat16_export_compares_same_as_its_spec(tmp_path):
    out = tmp_path / "pe.safetensors"
    ok(run(["export", "sinusoidal", "--len", "64", "--dim", "16", "--dtype", "bfloat16", "-o", str(out), "-q"]))
    result = json.loads(ok(run(["compare", str(out), "sinusoidal", "--json"])))
    assert result["same"] is True and result["tensors"][0]["atol"] == 2.0**-6  # 2 ulp of 1.0 in bfloat16
