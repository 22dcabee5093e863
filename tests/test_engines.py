"""--engine: the tables each inference engine computes for one config, rules as data.

mlx: against mlx-lm's own rope_utils run on mlx[cpu] (tools/golden/make_mlx_golden.py, stored arrays); hf: against
transformers' goldens (tests/data/golden/hf_*.json, tools/golden/make_hf_golden.py); vllm, sglang, onnx-genai,
llamacpp: their rules (read from their source, cited in posenc_cli/models/engines.py) checked on the quantities
they change, against formulas written out here in plain numpy."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.errors import ParameterError
from posenc_cli.models.engines import ENGINE_NAMES, ENGINES, engine_encoding, engine_params, model_facts

from .conftest import cli
from .each import each

DATA = Path(__file__).parent / "data"
CONFIGS = DATA / "configs"
MLX = json.loads((DATA / "golden" / "mlx_rope.json").read_text())
EPS32 = 2.0**-24


def rows_at(config: Path, engine: str, positions: list[int], seq_len: int | None = None, **kw) -> tuple:
    cos, sin = [], []
    facts = model_facts(config, layer_type=kw.get("layer_type"))  # the config read once for every position
    for t in positions:
        enc, _ = engine_encoding(config, engine, length=1, overrides={"offset": t}, seq_len=seq_len, facts=facts,
                                 **kw)  # fmt: skip
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
    """No rule applies to Llama 3.1 in mlx: its table is HF's but for the two float32 arithmetics (mlx's
    1/freqs and its own exp, torch's pow), within a few float32 roundings of each angle."""
    ref = MLX["models"]["llama"]
    a = rows_at(CONFIGS / "llama.json", "mlx", ref["positions"])
    b = rows_at(CONFIGS / "llama.json", "hf", ref["positions"])
    tol = f32_tolerance(ref["positions"], 1.0)
    assert (np.abs(a[0] - b[0]) <= tol).all() and (np.abs(a[1] - b[1]) <= tol).all()


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
    """The engine's rules (its parameters) evaluated exactly: what the rule tests below check."""
    from posenc_cli.encodings import make_encoding

    facts = model_facts(CONFIGS / config)
    enc = make_encoding("rope", {**engine_params(facts, engine, seq_len=1, **kw), "length": 1})
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


def test_gpt_oss_yarn_truncate_per_engine():
    """Which engines round YaRN's correction range (:func:`tests.each.each`: each failure named)."""
    each([("hf", False), ("vllm", False), ("sglang", False), ("mlx", True), ("llamacpp", True),
          ("onnx-genai", False)], lambda c: _gpt_oss_yarn_truncate(*c))  # fmt: skip


def _gpt_oss_yarn_truncate(engine, rounds):
    w, s = _inv_freq(engine, "gpt_oss.json")
    np.testing.assert_allclose(w, _yarn_plain(64, 150000.0, 4096, 32.0, rounds), rtol=1e-14)
    assert s == pytest.approx(0.1 * math.log(32) + 1, rel=1e-15)


def _phi_facts():
    return model_facts(CONFIGS / "phi3.json")


def test_longrope_choice_per_engine():
    """Each engine's LongRoPE choice at the sequence lengths around its switch (:func:`tests.each.each`)."""
    each([
        ("hf", {}, 4096, False), ("hf", {}, 4097, True),
        ("sglang", {}, 4097, False), ("sglang", {}, 4098, True),  # one position off HF
        ("mlx", {}, 10, True),
        ("vllm", {}, 10**5, False), ("vllm", {"max_model_len": 4096}, 10**5, False),
        ("vllm", {"max_model_len": 4097}, 10, True),
        ("llamacpp", {"n_ctx": 4096}, 10**5, False), ("llamacpp", {"n_ctx": 8192}, 10, True),
        ("onnx-genai", {}, 4096, False), ("onnx-genai", {}, 4097, True),
    ], lambda c: _longrope_choice(*c))  # fmt: skip


def _longrope_choice(engine, kw, seq, long):
    from posenc_cli.encodings import make_encoding

    cfg = json.loads((CONFIGS / "phi3.json").read_text())["rope_scaling"]
    factors = np.array(cfg["long_factor"] if long else cfg["short_factor"])
    enc = make_encoding("rope", {**engine_params(_phi_facts(), engine, seq_len=seq, **kw), "length": 1})
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
            assert r.source and r.says
            assert r.effect.split(":")[0] in ("longrope", "yarn", "pairing", "dynamic", "partial", "limit", "linear",
                                              "read", "refuse")  # fmt: skip
            if e.name in ("vllm", "sglang", "mlx", "llamacpp", "exllamav3"):  # read from the mirrored version
                assert re.search(r"\.(py|cpp|c):\d+", r.source), (e.name, r.source)


# ----- the command line ------------------------------------------------------------------------------------------
def test_compare_two_engines_is_one_command():
    cfg = str(CONFIGS / "gpt_oss.json")
    # the verdicts (exit codes) are the property: --no-explain leaves out the diagnosis of why mlx's table differs
    code, _out, err = cli(["compare", f"{cfg}@mlx", f"{cfg}@hf", "--len", "4096", "--json", "--no-explain"])
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
    # vLLM's default max_model_len for LongRoPE is original_max_position_embeddings: the short factors at every
    # length (HF: long from 4097 on); SGLang's boundary batch (largest position 4096) differs from HF's at 4097
    # exllamav3: phi3.json names no architecture, which exllamav3 refuses (no table to differ)
    assert phi == {"hf": [], "llamacpp": [], "mlx": [4096], "vllm": [4097, 131072], "sglang": [4097],
                   "onnx-genai": [], "exllamav3": []}  # fmt: skip
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
        cli(["compare", f"{phi}@vllm", f"{phi}@hf", "--len", "64", "--max-model-len", "131072", "-t", "inv_freq"])[0]
        == 1
    )  # long factors for the whole run; HF's 64-row pass uses the short ones
    assert cli(["compare", f"{phi}@vllm", f"{phi}@hf", "--len", "64", "-t", "inv_freq"])[0] == 0  # default 4096
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
    # mscale_all_dim 0 given: SGLang takes the ratio of the two (yarn.py:122 tests "is not None"), HF and vLLM
    # only nonzero pairs
    cfg["rope_scaling"]["mscale_all_dim"] = 0
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    want = {"hf": 0.1 * math.log(f) + 1, "vllm": 0.1 * math.log(f) + 1, "sglang": 0.1 * 0.707 * math.log(f) + 1}
    for engine, s in want.items():
        assert _inv_freq(engine, tmp_path / "config.json")[1] == pytest.approx(s, rel=1e-12), engine


def test_the_hf_reader_s_warnings_are_said_with_an_engine_too(tmp_path):
    cfg = json.loads((CONFIGS / "llama.json").read_text())
    cfg["model_type"] = "mystery"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    plain = cli(["generate", str(tmp_path / "config.json"), "--len", "4", "-o", str(tmp_path / "a.npz")])
    code, _, err = cli(["generate", f"{tmp_path / 'config.json'}@vllm", "--len", "4", "-o", str(tmp_path / "b.npz")])
    assert code == plain[0]
    if plain[0] == 0:  # an unknown model type read generically: the warning is said on both paths
        assert "Warning:" in plain[2] and "mystery" in err and "Warning:" in err


def test_llamacpp_rules_agree_with_the_ggml_emulation():
    """Every converted model at two contexts (:func:`tests.each.each`: each failure named)."""
    names = ["llama31", "phi3", "qwen2", "gpt_oss", "deepseek_v2", "gemma3"]
    each([(name, n_ctx) for n_ctx in (4096, 131072) for name in names], lambda c: _llamacpp_rules_agree(*c))


def _llamacpp_rules_agree(name, n_ctx):
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


def test_a_model_type_an_engine_does_not_load_is_named():
    """mlx-lm loads a model type only through a module of mlx_lm/models (or its remapping): a model type it lacks
    is refused as the engine's; llama.cpp's conversions posenc tabulates only for some types: another is refused
    as posenc's limit, and kinds --engines says which."""
    cfg = str(CONFIGS / "codegen.json")
    code, _, err = cli(["generate", cfg, "--engine", "mlx", "--len", "4", "-o", "-"])
    assert code == 2 and "mlx-lm 0.32.2 does not support model_type 'codegen'" in err
    rows = {r["engine"]: r for r in json.loads(cli(["kinds", cfg, "--engines", "--json"])[1])}
    assert "does not support model_type 'codegen'" in rows["mlx"]["note"]
    assert "posenc does not mirror how llama-cpp-python 0.3.36 handles model_type 'codegen'" in rows["llamacpp"]["note"]
    assert rows["vllm"]["note"] == "" and rows["hf"]["note"] == ""


def test_engine_versions_and_options_are_refused_by_name():
    phi = str(CONFIGS / "phi3.json")
    code, _, err = cli(["generate", f"{phi}@vllm==0.30.0", "--len", "4", "-o", "-"])
    assert code == 2 and "posenc mirrors vllm 0.33.0 only, not vllm 0.30.0" in err and len(err.splitlines()) == 1
    assert cli(["generate", phi, "--engine", "sglang==0.5.23", "--len", "4", "-o", "-"])[0] == 0
    code, _, err = cli(["generate", phi, "--engine", "mlx", "--max-model-len", "4096", "--len", "4", "-o", "-"])
    assert code == 2 and "--max-model-len cannot apply" in err and "engine vllm" in err
    code, _, err = cli(["generate", phi, "--engine", "vllm", "--max-model-len", "200000", "--len", "4", "-o", "-"])
    assert code == 2 and "vllm 0.33.0 refuses --max-model-len 200000" in err and "at most 131072" in err


def test_kinds_engines_names_the_version_of_every_rule_and_the_limits():
    rows = json.loads(cli(["kinds", str(DATA / "engines" / "llama2_dynamic.json"), "--engines", "--json"])[1])
    for row in rows:
        for r in row["rules"]:
            assert r["source"].startswith(row["version"] + " "), r
    vllm = next(r for r in rows if r["engine"] == "vllm")
    assert [lim["from_position"] for lim in vllm["limits"]] == [4096, 8192]


def test_an_architecture_served_by_the_transformers_backend_gets_hf_s_rules(tmp_path):
    """vLLM and SGLang run an architecture without a model file of their own (vLLM's registry maps GlmForCausalLM
    to its Transformers backend; SGLang has no EntryClass for it) through HF's modeling code: HF's rotary rules,
    with the engine's context limit only."""
    cfg = json.loads((DATA / "engines" / "llama2_dynamic.json").read_text())
    native = model_facts(DATA / "engines" / "llama2_dynamic.json")
    assert engine_params(native, "sglang", seq_len=100) != engine_params(native, "hf", seq_len=100)
    cfg["architectures"] = ["GlmForCausalLM"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    facts = model_facts(tmp_path / "config.json")
    for engine in ("vllm", "sglang"):
        assert engine_params(facts, engine, seq_len=100) == engine_params(facts, "hf", seq_len=100), engine
    rows = {r["engine"]: r for r in json.loads(cli(["kinds", str(tmp_path / "config.json"), "--engines", "--json"])[1])}
    assert "Transformers backend" in rows["vllm"]["rules"][0]["says"]
    assert [lim["from_position"] for lim in rows["vllm"]["limits"]] == [8192]  # no cache of vLLM's own


@pytest.mark.parametrize("engine", ["hf", "vllm", "sglang", "mlx"])
def test_an_engine_table_s_metadata_rebuilds_its_bytes(tmp_path, engine):
    """The metadata of a table written by --engine names the engine's arithmetic (and SGLang's boundary row), so
    matches-spec regenerates the same bytes, not posenc's exact table (which differs by the float32 angles)."""
    from posenc_cli.sources import encoding_from_metadata, open_source

    out = tmp_path / "t.npz"
    args = ["generate", str(CONFIGS / "phi3.json"), "--engine", engine, "--len", "4097", "-o", str(out)]
    if engine == "vllm":
        args += ["--max-model-len", "131072"]
    assert cli(args)[0] == 0
    src = open_source(str(out))
    assert src.metadata["engine"] == engine and src.metadata["engine_arithmetic"] != "exact"
    enc, why = encoding_from_metadata(src.metadata)
    assert enc is not None, why
    assert np.array_equal(enc.array("cos"), np.load(out)["cos"])
    _code, stdout, _ = cli(["check", str(out), "--json"])
    report = json.loads(stdout)[0]
    spec = next(c for c in report["results"] if c["name"] == "matches-spec")
    assert spec["status"] == "PASS", spec


# ----- an engine's limits are divergences ----------------------------------------------------------------------
def _rope_cos(positions: np.ndarray, base: float, dim: int = 128) -> np.ndarray:
    """HF's half-layout cos table at these positions, in float64 (plain numpy)."""
    w = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    ang = np.asarray(positions, dtype=np.float64)[:, None] * w[None, :]
    return np.cos(np.concatenate([ang, ang], axis=1))


def test_a_position_out_of_an_engine_s_cache_is_a_difference_with_the_rows_it_computes():
    """vLLM's dynamic-NTK cache holds max_position_embeddings (4096) rows while its default max_model_len is 8192:
    comparing 8192 rows with HF's is DIFFERENT (exit 1), the limit named in one line (engine, version, position,
    file:line), and vLLM's 4096 rows (base 1e4, never raised) compared with HF's rows of the 8192-token sequence
    (base 1e4 * 3^(128/126) at every position); generate still refuses the rows it cannot write."""
    cfg = str(DATA / "engines" / "llama2_dynamic.json")
    # --no-explain: the limit and the rows compared are the property; why the rows differ (the diagnosis, which
    # -q's line adds) is docs/engines.md's, which test_docs runs for this config
    code, out, err = cli(
        ["compare", f"{cfg}@vllm", f"{cfg}@hf", "--len", "8192", "-t", "cos", "--json", "--no-explain"]
    )
    assert code == 1, err
    found = json.loads(out)
    assert found["same"] is False
    (lim,) = found["limits"]
    assert (lim["engine"], lim["version"], lim["from_position"], lim["rows"], lim["asked"]) == (
        "vllm", "vllm 0.33.0", 4096, 4096, 8192)  # fmt: skip
    assert "dynamic_ntk_scaling_rope.py:67" in lim["source"] and lim["line"] in found["reason"]
    (cos,) = found["tensors"]
    assert cos["shape_a"] == cos["shape_b"] == [4096, 128]
    t, c = cos["max_abs_at"]
    tol = 4096 * 2.0**-23 + 2.0**-22  # float32 angles and cos of both sides
    assert cos["value_a"] == pytest.approx(_rope_cos(np.array([t]), 1e4)[0, c], abs=tol)
    assert cos["value_b"] == pytest.approx(_rope_cos(np.array([t]), 1e4 * 3 ** (128 / 126))[0, c], abs=tol)

    # the verdict line -q prints (docs/engines.md shows it for this config, docs/examples/llama-2-7b-dynamic.json)
    assert found["reason"].startswith("vllm 0.33.0 computes no row from position 4096")
    assert "compared its rows 0-4095 of 8192 asked" in found["reason"]
    assert cli(["compare", f"{cfg}@vllm", f"{cfg}@hf", "--len", "4096", "-t", "cos", "-q"])[0] == 0  # in the cache
    code, _, err = cli(["generate", cfg, "--engine", "vllm", "--len", "8192", "-o", "-"])
    assert code == 2 and len(err.splitlines()) == 1 and "lower --len to 4096" in err

    from posenc_cli.api import SourceOptions, compare_sources
    from posenc_cli.models.engines import EngineLimit

    found = compare_sources(f"{cfg}@vllm", f"{cfg}@hf", options=SourceOptions(length=8192), tensor=["inv_freq"])
    (cmp,) = found.items
    assert not found.ok and not cmp.same and isinstance(cmp.limits[0], EngineLimit)
    assert cmp.limits[0].from_position == 4096


def test_a_file_longer_than_an_engine_computes_is_compared_on_the_engine_s_rows(tmp_path):
    """A file of 8192 rows (plain RoPE, base 1e4, built with numpy) against CONFIG@vllm: the engine's side takes
    its rows from the file and stops at its cache; the file's first 4096 rows equal vLLM's, and the verdict is
    still DIFFERENT, by the limit alone; past the max_model_len of a --max-model-len the limit is that length."""
    cfg = str(DATA / "engines" / "llama2_dynamic.json")
    path = tmp_path / "cos.npz"
    np.savez(path, cos=_rope_cos(np.arange(8192), 1e4).astype(np.float32))
    code, out, err = cli(["compare", str(path), f"{cfg}@vllm", "-t", "cos", "--atol", "1e-3", "--json"])
    assert code == 1, err
    found = json.loads(out)
    assert [lim["from_position"] for lim in found["limits"]] == [4096]
    assert found["tensors"][0]["same"] is True and found["tensors"][0]["shape_a"] == [4096, 128]
    assert "those rows: same" in found["reason"]
    code, out, _ = cli(["compare", str(path), f"{cfg}@vllm", "-t", "cos", "--max-model-len", "2048", "--json"])
    (lim,) = json.loads(out)["limits"]
    assert (lim["from_position"], lim["rows"]) == (2048, 2048) and "max_model_len 2048" in lim["says"]


def test_a_model_type_an_engine_does_not_load_is_a_difference_in_compare():
    cfg = str(CONFIGS / "codegen.json")
    code, out, err = cli(["compare", f"{cfg}@mlx", f"{cfg}@hf", "--len", "16", "--json"])
    assert code == 1, err
    found = json.loads(out)
    (lim,) = found["limits"]
    assert lim["engine"] == "mlx" and lim["from_position"] is None and lim["rows"] == 0
    assert "mlx-lm 0.32.2 does not support model_type 'codegen'" in found["reason"]
    assert "mlx_lm/utils.py:220" in lim["source"] and found["tensors"] == []
    code, _, err = cli(["compare", f"{cfg}@mlx", f"{cfg}@hf", "--len", "16", "-q"])
    assert code == 1 and "DIFFERENT: mlx-lm 0.32.2 does not support model_type 'codegen'" in err


# ----- an engine's float32 table judged against HF's exact one (audit's engine rows, compare's engines) ------
def _plain_rope(base: float, n: int, dim: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin of rotate_half RoPE in float64, built here with plain NumPy."""
    w = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    a = np.arange(n, dtype=np.float64)[:, None] * np.concatenate([w, w])[None, :]
    return np.cos(a), np.sin(a)


def test_an_engines_float32_table_is_hfs_within_its_arithmetic_and_a_departure_is_not():
    from posenc_cli.api import from_config
    from posenc_cli.models.engines import within_arithmetic

    dyn = str(DATA.parent.parent / "docs" / "examples" / "llama-2-7b-dynamic.json")
    ref = from_config(dyn, length=4096)
    cos, _sin = _plain_rope(10000.0, 4096)  # below max_position_embeddings HF's dynamic NTK keeps the base
    np.testing.assert_allclose(ref.array("cos"), cos, atol=1e-6)
    vllm, _ = engine_encoding(dyn, "vllm", length=4096)
    assert "within the float32 formula's error" in within_arithmetic(vllm, ref)
    np.testing.assert_allclose(vllm.array("cos"), cos, atol=2e-3)  # the float32 angles, and no more
    sglang, _ = engine_encoding(dyn, "sglang", length=4096)  # static NTK: base 1e4 * 3^(128/126) everywhere
    s_cos, _ = _plain_rope(1e4 * 3 ** (128 / 126), 4096)
    np.testing.assert_allclose(sglang.array("cos"), s_cos, atol=2e-3)
    assert within_arithmetic(sglang, ref) is None
    # at 8192 tokens HF raises the base to what SGLang uses at every length: the same table in float32
    assert within_arithmetic(engine_encoding(dyn, "sglang", length=8192)[0], from_config(dyn, length=8192))


def test_an_audit_row_at_an_engines_limit_differs_and_carries_the_limit():
    import jsonschema

    from posenc_cli.auditing.report import SCHEMA_PATH

    dyn = str(DATA.parent.parent / "docs" / "examples" / "llama-2-7b-dynamic.json")
    code, out, err = cli(["audit", dyn, "--len", "8192", "--engine", "hf,vllm", "--json"])
    assert code == 1, err
    data = json.loads(out)
    jsonschema.Draft202012Validator(json.loads(Path(SCHEMA_PATH).read_text())).validate(data)
    (row,) = [r for r in data["rows"] if r["engine"] == "vllm"]
    assert row["verdict"] == "differ" and row["limit"]["from_position"] == 4096 and row["limit"]["rows"] == 4096
    assert "computes no row from position 4096" in row["explanation"]
    # the rows vLLM computes (base 1e4) against HF's at 8192 tokens (base raised to 1e4 * 3^(128/126))
    c_v, s_v = _plain_rope(1e4, 4096)
    c_h, s_h = _plain_rope(1e4 * 3 ** (128 / 126), 4096)
    assert row["max_abs_diff"] == pytest.approx(max(np.abs(c_v - c_h).max(), np.abs(s_v - s_h).max()), abs=1e-3)


def test_a_model_type_posenc_does_not_mirror_for_an_engine_is_posencs_limit_not_the_engines():
    """llama.cpp converts OLMo 2; posenc tabulates no conversion of it: the audit skips that row and says why,
    it never reports llama.cpp as unsupported (a DIFFER), while mlx-lm's own list of model types does."""
    olmo = str(DATA / "configs" / "published" / "olmo-2-1124-7b.json")
    code, out, err = cli(["audit", olmo, "--engine", "hf,llamacpp", "--json"])
    assert code == 1 and json.loads(out)["compared"] == 0, err  # a skipped row compares nothing: no pass
    (row,) = [r for r in json.loads(out)["rows"] if r["engine"] == "llamacpp"]
    assert row["verdict"] == "skipped" and "posenc does not mirror" in row["explanation"]
    assert "does not support" not in row["explanation"]
    code, _, err = cli(["compare", f"{olmo}@llamacpp", f"{olmo}@hf", "-q"])
    assert code == 2 and "posenc does not mirror" in err


def test_compare_judges_an_engines_table_against_an_exact_one_as_the_audit_does():
    """CONFIG@vllm against CONFIG (posenc's exact table): the same table in torch float32, as the audit's vllm row
    says; SGLang's static NTK base against HF's at 4096 rows stays DIFFERENT (built here with plain NumPy)."""
    llama = str(DATA.parent.parent / "docs" / "examples" / "llama-3.1-8b.json")
    code, _out, err = cli(["compare", f"{llama}@vllm", llama, "--len", "4096", "-q"])
    assert code == 0 and "SAME within the float32 formula's error" in err, err
    dyn = str(DATA.parent.parent / "docs" / "examples" / "llama-2-7b-dynamic.json")
    # cos tells it; its exit code is the property (--no-explain: the diagnosis would not change it)
    assert cli(["compare", f"{dyn}@sglang", dyn, "--len", "4096", "-t", "cos", "-q", "--no-explain"])[0] == 1
    s_cos, _ = _plain_rope(1e4 * 3 ** (128 / 126), 4096)
    h_cos, _ = _plain_rope(1e4, 4096)
    assert np.abs(s_cos - h_cos).max() > 0.5  # far beyond any float32 arithmetic
