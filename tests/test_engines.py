"""--engine: the tables each inference engine computes for one config, rules as data.

mlx: against mlx-lm's own rope_utils run on mlx[cpu] (tools/golden/make_mlx_golden.py, stored arrays); hf: against
transformers' goldens (tests/data/golden/hf_*.json, tools/golden/make_hf_golden.py); vllm, sglang, onnx-genai,
llamacpp: their rules (read from their source, cited in posenc_cli/models/engines.py) checked on the quantities
they change, against formulas written out here in plain numpy."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.errors import ParameterError
from posenc_cli.models.engines import ENGINE_NAMES, ENGINES, engine_encoding, engine_params, model_facts

from .conftest import cli

DATA = Path(__file__).parent / "data"
CONFIGS = DATA / "configs"
MLX = json.loads((DATA / "golden" / "mlx_rope.json").read_text())
EPS32 = 2.0**-24


def rows_at(config: Path, engine: str, positions: list[int], seq_len: int | None = None, **kw) -> tuple:
    cos, sin = [], []
    for t in positions:
        enc, _ = engine_encoding(config, engine, length=1, overrides={"offset": t}, seq_len=seq_len, **kw)
        cos.append(enc.array("cos")[0])
        sin.append(enc.array("sin")[0])
    return np.array(cos), np.array(sin)


def f32_tolerance(positions, scale: float) -> np.ndarray:
    """mlx computes in float32: angle t*w rounded (|t w| 2**-24, w <= 1), cos/sin of it, times the scale."""
    t = np.asarray(positions, dtype=np.float64)[:, None]
    return abs(scale) * (4 * EPS32 * (t + 1) + 4 * EPS32)


@pytest.mark.parametrize("model", ["gpt_oss", "llama", "phi3"])
def test_engine_mlx_equals_mlx(model):
    ref = MLX["models"][model]
    h = len(ref["cos"][0])
    cos, sin = rows_at(CONFIGS / f"{model}.json", "mlx", ref["positions"])
    scale = abs(ref["cos"][0][0])
    tol = f32_tolerance(ref["positions"], scale)
    assert cos.shape[1] == 2 * h
    assert (np.abs(cos[:, :h] - ref["cos"]) <= tol).all()
    assert (np.abs(sin[:, :h] - ref["sin"]) <= tol).all()


@pytest.mark.parametrize("model", ["gpt_oss", "phi3"])
def test_engine_hf_departs_from_mlx_where_the_rules_say(model):
    """The comparison above can fail: HF's own tables are outside mlx's tolerance for these two models."""
    ref = MLX["models"][model]
    h = len(ref["cos"][0])
    cos, _ = rows_at(CONFIGS / f"{model}.json", "hf", ref["positions"])
    tol = f32_tolerance(ref["positions"], abs(ref["cos"][0][0]))
    assert (np.abs(cos[:, :h] - ref["cos"]) > tol).any()


def test_engine_mlx_equals_hf_where_no_rule_applies():
    ref = MLX["models"]["llama"]
    a = rows_at(CONFIGS / "llama.json", "mlx", ref["positions"])
    b = rows_at(CONFIGS / "llama.json", "hf", ref["positions"])
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


@pytest.mark.parametrize("model", ["gpt_oss", "phi3", "llama"])
def test_engine_hf_equals_transformers(model):
    gold = json.loads((DATA / "golden" / f"hf_{model}.json").read_text())
    layer = next(iter(gold["layer_types"].values()))
    for group in layer["groups"]:
        pos = group["positions"]
        cos, sin = rows_at(CONFIGS / f"{model}.json", "hf", pos, seq_len=group["seq_len"])
        tol = f32_tolerance(pos, float(layer["attention_scaling"])) * 4
        r = cos.shape[1]  # golden rows span the head; a partial rotary's rotated part comes first
        assert (np.abs(cos - np.asarray(group["cos"])[:, :r]) <= tol).all(), (model, group["seq_len"])
        assert (np.abs(sin - np.asarray(group["sin"])[:, :r]) <= tol).all(), (model, group["seq_len"])


# ----- the rules, one by one, against plain formulas -------------------------------------------------------------
def _inv_freq(engine, config, **kw):
    enc, _ = engine_encoding(CONFIGS / config, engine, length=1, **kw)
    return enc.inv_freq(), float(enc.attention_scaling)


def _yarn_plain(d, base, orig, factor, truncate):
    """HF's _compute_yarn_parameters written out in float64."""

    def corr(n):
        return d * math.log(orig / (n * 2 * math.pi)) / (2 * math.log(base))

    lo, hi = corr(32), corr(1)
    if truncate:
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, d - 1)
    pos = base ** (np.arange(0, d, 2) / d)
    ramp = np.clip((np.arange(d // 2) - lo) / (hi - lo), 0, 1)
    extra = 1 - ramp
    return (1 / (factor * pos)) * (1 - extra) + (1 / pos) * extra


@pytest.mark.parametrize("engine,rounds", [("hf", False), ("vllm", False), ("sglang", False), ("mlx", True),
                                           ("llamacpp", True), ("onnx-genai", False)])  # fmt: skip
def test_gpt_oss_yarn_truncate_per_engine(engine, rounds):
    w, s = _inv_freq(engine, "gpt_oss.json")
    np.testing.assert_allclose(w, _yarn_plain(64, 150000.0, 4096, 32.0, rounds), rtol=1e-14)
    assert s == pytest.approx(0.1 * math.log(32) + 1, rel=1e-15)


def _phi_facts():
    return model_facts(CONFIGS / "phi3.json")


@pytest.mark.parametrize(
    "engine,kw,seq,long",
    [
        ("hf", {}, 4096, False), ("hf", {}, 4097, True),
        ("sglang", {}, 4097, False), ("sglang", {}, 4098, True),  # one position off HF
        ("mlx", {}, 10, True),
        ("vllm", {}, 10, True), ("vllm", {"max_model_len": 4096}, 10**5, False), ("vllm", {"max_model_len": 4097}, 10, True),
        ("llamacpp", {"n_ctx": 4096}, 10**5, False), ("llamacpp", {"n_ctx": 8192}, 10, True),
        ("onnx-genai", {}, 4096, False), ("onnx-genai", {}, 4097, True),
    ],
)  # fmt: skip
def test_longrope_choice_per_engine(engine, kw, seq, long):
    cfg = json.loads((CONFIGS / "phi3.json").read_text())["rope_scaling"]
    factors = np.array(cfg["long_factor"] if long else cfg["short_factor"])
    enc, _ = engine_encoding(CONFIGS / "phi3.json", engine, length=1, seq_len=seq, **kw)
    base = 10000.0 ** (-np.arange(0, 96, 2) / 96)
    np.testing.assert_allclose(enc.inv_freq(), base / factors, rtol=1e-14)


def test_llamacpp_longrope_needs_n_ctx_and_options_apply_to_their_engine():
    with pytest.raises(ParameterError, match="n_ctx"):
        engine_encoding(CONFIGS / "phi3.json", "llamacpp", length=1)
    with pytest.raises(ParameterError, match="applies to engine vllm, not mlx"):
        engine_params(_phi_facts(), "mlx", max_model_len=10)


def test_onnx_genai_yarn_needs_beta_fast_and_ignores_attention_factor(tmp_path):
    cfg = json.loads((CONFIGS / "gpt_oss.json").read_text())
    del cfg["rope_scaling"]["beta_fast"]
    cfg["rope_scaling"]["attention_factor"] = 2.0
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    w, s = _inv_freq("onnx-genai", tmp_path / "config.json")
    np.testing.assert_allclose(w, 150000.0 ** (-np.arange(0, 64, 2) / 64), rtol=1e-14)
    assert s == 1.0
    w_hf, s_hf = _inv_freq("hf", tmp_path / "config.json")
    assert s_hf == 2.0 and not np.allclose(w, w_hf)
    _w_sg, s_sg = _inv_freq("sglang", tmp_path / "config.json")
    assert s_sg == pytest.approx(0.1 * math.log(32) + 1)


def test_every_engine_cites_version_and_source():
    assert set(ENGINES) == set(ENGINE_NAMES)
    for e in ENGINES.values():
        assert e.version and e.reference
        for r in e.rules:
            assert r.source and r.says and r.effect.split(":")[0] in ("longrope", "yarn", "pairing")


# ----- the command line ------------------------------------------------------------------------------------------
def test_compare_two_engines_is_one_command():
    cfg = str(CONFIGS / "gpt_oss.json")
    code, _out, err = cli(["compare", f"{cfg}@mlx", f"{cfg}@hf", "--len", "4096", "--json"])
    assert code == 1, err
    code, _out, err = cli(["compare", f"{cfg}@vllm", f"{cfg}@hf", "--len", "4096"])
    assert code == 0, err


def test_generate_engine_flag_equals_suffix(tmp_path):
    cfg = str(CONFIGS / "gpt_oss.json")
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    assert cli(["generate", cfg, "--engine", "mlx", "--len", "64", "-o", str(a)])[0] == 0
    assert cli(["generate", f"{cfg}@mlx", "--len", "64", "-o", str(b)])[0] == 0
    assert np.array_equal(np.load(a)["cos"], np.load(b)["cos"])
    code, _, err = cli(["generate", f"{cfg}@mlx", "--engine", "hf", "--len", "4", "-o", str(a), "--force"])
    assert code == 2 and "the engine is given twice" in err
    code, _, err = cli(["generate", "rope", "--engine", "mlx", "--len", "4", "-o", str(a), "--force"])
    assert code == 2 and "--engine" in err
    code, _, err = cli(["generate", cfg, "--engine", "tpu", "--len", "4", "-o", str(a), "--force"])
    assert code == 2 and "unknown engine 'tpu'" in err


def test_kinds_engines_tabulates_departures():
    code, out, err = cli(["kinds", str(CONFIGS / "gpt_oss.json"), "--engines", "--json"])
    assert code == 0, err
    rows = {r["engine"]: r for r in json.loads(out)}
    phi = {
        r["engine"]: r["differs_at"]
        for r in json.loads(cli(["kinds", str(CONFIGS / "phi3.json"), "--engines", "--json"])[1])
    }
    assert phi == {"hf": [], "llamacpp": [], "mlx": [4096], "vllm": [4096], "sglang": [4097], "onnx-genai": []}
    assert [r for r in rows] == list(ENGINE_NAMES)
    assert {e for e, r in rows.items() if r["differs"]} == {"mlx", "llamacpp"}
    code, out, err = cli(["kinds", str(CONFIGS / "phi3.json"), "--engines"])
    assert code == 0, err
    text = out.decode()
    assert "pass --n-ctx N" in text and "at sequence length 4097" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_engine_options_apply_to_the_side_whose_engine_reads_them():
    phi = str(CONFIGS / "phi3.json")
    assert (
        cli(["compare", f"{phi}@vllm", f"{phi}@hf", "--len", "64", "--max-model-len", "4096", "-t", "inv_freq"])[0] == 0
    )
    assert cli(["compare", f"{phi}@vllm", f"{phi}@hf", "--len", "64", "-t", "inv_freq"])[0] == 1
    code, _, err = cli(["compare", f"{phi}@mlx", f"{phi}@hf", "--len", "64", "--n-ctx", "4096"])
    assert code == 2 and "--n-ctx cannot apply" in err and "model config read by engine llamacpp" in err
    code, _, err = cli(["generate", phi, "--len", "4", "--max-model-len", "9", "-o", "-"])
    assert code == 2 and "--max-model-len" in err


def test_the_command_line_lists_the_engines_the_library_has():
    from posenc_cli.cli._options import ENGINE_NAMES as CLI_NAMES

    assert CLI_NAMES == ENGINE_NAMES


def test_yarn_mscale_alone_per_engine(tmp_path):
    """``mscale`` without ``mscale_all_dim``: HF ignores it (0.1 ln f + 1), mlx multiplies the log term by it,
    onnxruntime-genai takes it as the multiplier itself (base.py make_mscale)."""
    cfg = json.loads((CONFIGS / "gpt_oss.json").read_text())
    cfg["rope_scaling"]["mscale"] = 0.707
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    f = 32.0
    want = {"hf": 0.1 * math.log(f) + 1, "mlx": 0.1 * 0.707 * math.log(f) + 1, "onnx-genai": 0.707,
            "vllm": 0.1 * math.log(f) + 1}  # fmt: skip
    for engine, s in want.items():
        assert _inv_freq(engine, tmp_path / "config.json")[1] == pytest.approx(s, rel=1e-12), engine


def test_the_hf_reader_s_warnings_are_said_with_an_engine_too(tmp_path):
    cfg = json.loads((CONFIGS / "llama.json").read_text())
    cfg["model_type"] = "mystery"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    plain = cli(["generate", str(tmp_path / "config.json"), "--len", "4", "-o", str(tmp_path / "a.npz")])
    code, _, err = cli(["generate", f"{tmp_path / 'config.json'}@mlx", "--len", "4", "-o", str(tmp_path / "b.npz")])
    assert code == plain[0]
    if plain[0] == 0:  # an unknown model type read generically: the warning is said on both paths
        assert "Warning:" in plain[2] and "mystery" in err and "Warning:" in err


@pytest.mark.parametrize("name", ["llama31", "phi3", "qwen2", "gpt_oss", "deepseek_v2", "gemma3"])
@pytest.mark.parametrize("n_ctx", [4096, 131072])
def test_llamacpp_rules_agree_with_the_ggml_emulation(name, n_ctx):
    """Two independent readings of llama.cpp: the engine table's rules (applied to posenc's rope) and the float32
    emulation of ggml behind GGUF sources (models/llamacpp.py, itself checked against real ggml) give the same
    frequencies (to ggml's float32 rounding) and the same attention factor, for each converted model and context:
    the LongRoPE choice, YaRN's rounding and llama3's factors agree."""
    from posenc_cli.models.llamacpp import llamacpp_tables_for

    cfg = str(Path(__file__).parent / "data" / "llamacpp" / f"{name}.config.json")
    types = ["full_attention", "sliding_attention"] if name == "gemma3" else [None]
    for lt in types:
        ggml = llamacpp_tables_for(cfg, n_ctx, 64, layer_type=lt)
        enc, _ = engine_encoding(cfg, "llamacpp", length=64, n_ctx=n_ctx, layer_type=lt)
        ours = enc.array("inv_freq").astype(np.float64)
        theirs = np.asarray(ggml["inv_freq"], dtype=np.float64)
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(theirs, ours, rtol=4 * 2.0**-23, atol=0)
        assert float(ggml["cos"][0, 0]) == pytest.approx(float(enc.array("cos")[0, 0]), rel=2.0**-23)
    if name == "phi3":  # the context picks the factors: the comparison can tell short from long
        short = llamacpp_tables_for(cfg, 4096, 64)["inv_freq"]
        long = llamacpp_tables_for(cfg, 131072, 64)["inv_freq"]
        assert not np.allclose(short, long, rtol=1e-3)


def test_a_mistyped_engine_after_a_config_is_named():
    """CONFIG@ENGINE with an engine posenc does not know is that mistake, said with the choices (not "no such
    file" or "not a model config")."""
    phi = str(DATA / "configs" / "phi3.json")
    code, _, err = cli(["generate", f"{phi}@mxl", "--len", "4", "-o", "x.npz"])
    assert code == 2 and f"unknown engine 'mxl' in {phi}@mxl; did you mean 'mlx'? choose from: " in err
