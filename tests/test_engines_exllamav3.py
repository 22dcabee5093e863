"""--engine exllamav3 against the tables exllamav3 1.6.5's own code computed (tests/data/engines/exllamav3.npz, made
once in a side environment by tools/golden/engines_exllamav3_reference.py: the architecture's own Config class
parses the config, ``RoPE("cpu", settings).compute_sincos`` computes sin and cos in float32 torch).

posenc must equal them to float32 rounding (a few roundings of the angle |t w| 2**-24 and of the result), refuse
what exllamav3 refuses with its reason, and name the rules where exllamav3 departs from HF. The divergences are also
checked against HF's rules written out here in plain numpy: the stored tables are outside float32 rounding of HF's."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.errors import ParameterError
from posenc_cli.models.engines import engine_encoding, engine_params, model_facts, rule_lines

from .conftest import cli
from .each import each

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"
EXL = np.load(DATA / "engines" / "exllamav3.npz")
EPS = 2.0**-24


def _meta(case: str) -> dict:
    return json.loads(str(EXL[f"{case}.meta"]))


CASES = sorted({k.rsplit(".", 1)[0] for k in EXL.files})
TABLES = [c for c in CASES if "refused" not in _meta(c)]
REFUSED = [c for c in CASES if "refused" in _meta(c)]


def _config(case: str, tmp_path: Path | None = None) -> Path:
    meta = _meta(case)
    path = ROOT / meta["config"]
    if "dropped" in meta:  # the config the reference script parsed: a key removed
        assert tmp_path is not None
        cfg = json.loads(path.read_text())
        del cfg[meta["dropped"]]
        path = tmp_path / "config.json"
        path.write_text(json.dumps(cfg))
    return path


def _pairs(enc, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """posenc's table at ``rows``, one column per rotated pair (the pair's first feature)."""
    cos = np.concatenate([enc.rows("cos", int(r) - enc.offset, int(r) - enc.offset + 1) for r in rows])
    sin = np.concatenate([enc.rows("sin", int(r) - enc.offset, int(r) - enc.offset + 1) for r in rows])
    if enc.layout == "half":
        h = cos.shape[1] // 2
        return cos[:, :h], sin[:, :h]
    return cos[:, 0::2], sin[:, 0::2]


def _within(ours: np.ndarray, theirs: np.ndarray, positions: np.ndarray, w: np.ndarray, scale: float) -> np.ndarray:
    """float32 rounding: 4 roundings of the angle |t w| and 4 of the (scaled) result."""
    tol = abs(scale) * (4 * EPS * np.abs(positions[:, None] * w[None, :]) + 4 * EPS)
    return np.abs(np.asarray(ours, np.float64) - np.asarray(theirs, np.float64)) <= tol


def test_exllamav3_equals_its_own_code():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(TABLES, _exllamav3_equals_its_own_code)


def _exllamav3_equals_its_own_code(case):
    meta = _meta(case)
    pos = EXL[f"{case}.positions"]
    # the whole context in one table, and a short pass (the first 4096 rows): exllamav3's table does not depend
    # on the sequence length (LongRoPE included), HF's does
    for length in (int(pos.max()) + 1, 4096):
        enc, _ = engine_encoding(_config(case), "exllamav3", length=length)
        at = pos[pos < length]
        cos, sin = _pairs(enc, at)
        want_c, want_s = EXL[f"{case}.cos"][: len(at)], EXL[f"{case}.sin"][: len(at)]
        assert cos.shape == want_c.shape, case
        assert enc.attention_scaling == pytest.approx(meta["attn_factor"], rel=1e-15)
        w = np.asarray(EXL[f"{case}.inv_freq"], np.float64)
        assert np.allclose(enc.inv_freq(), w, rtol=2**-22, atol=0)  # torch's float32 pow: within an ulp
        assert enc.layout == ("half" if meta["rope_style"] == "NEOX" else "interleaved")
        assert _within(cos, want_c, at, w, meta["attn_factor"]).all(), case
        assert _within(sin, want_s, at, w, meta["attn_factor"]).all(), case


def test_what_exllamav3_refuses_is_refused_with_its_reason(tmp_path):
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(REFUSED, lambda case: _refused_with_its_reason(case, tmp_path / case))


def _refused_with_its_reason(case, tmp_path):
    tmp_path.mkdir()
    refused = _meta(case)["refused"]
    # exllamav3's own words ("Unknown rope_type", "No architecture defined", ...), or the exception of a comparison
    # with None (LongRoPE without its original length: "'>' not supported ...")
    said = refused["type"] if refused["type"] == "TypeError" else refused["message"].split(":")[0]
    with pytest.raises(ParameterError) as exc:
        engine_encoding(_config(case, tmp_path), "exllamav3", length=16)
    text = str(exc.value)
    assert said in text and "exllamav3 1.6.5" in text and "exllamav3/" in text and "\n" not in text


# ----- the divergences from HF, against plain numpy --------------------------------------------------------------
def _yarn(d: int, base: float, orig: int, factor: float) -> np.ndarray:
    """HF's _compute_yarn_parameters (truncate, beta 32/1) in float64."""

    def corr(n):
        return d * math.log(orig / (n * 2 * math.pi)) / (2 * math.log(base))

    lo, hi = max(math.floor(corr(32)), 0), min(math.ceil(corr(1)), d - 1)
    pos = base ** (np.arange(0, d, 2) / d)
    ramp = np.clip((np.arange(d // 2) - lo) / (hi - lo), 0, 1)
    return (1 / (factor * pos)) * ramp + (1 / pos) * (1 - ramp)


def test_yarn_factor_is_derived_from_the_lengths():
    """exllamav3/util/rope.py:305-308: the factor is max_position_embeddings / original_max_position_embeddings,
    not the config's 4 (HF's); its attention factor follows (0.1 ln f + 1; 1 for equal lengths: plain RoPE)."""
    cases = [("qwen25_yarn_equal", 32768 / 32768), ("qwen3_yarn", 40960 / 32768)]
    each(cases, lambda case: _yarn_factor_is_derived_from_the_lengths(*case))


def _yarn_factor_is_derived_from_the_lengths(case, exl_factor):
    pos = EXL[f"{case}.positions"]
    want = EXL[f"{case}.cos"]
    for factor, matches in ((exl_factor, True), (4.0, False)):
        w = _yarn(128, 1e6, 32768, factor)
        scale = 0.1 * math.log(factor) + 1 if factor > 1 else 1.0
        mine = scale * np.cos(pos[:, None] * w[None, :])
        assert _within(mine, want, pos, w, scale).all() == matches, (case, factor)
    if exl_factor == 1:  # plain RoPE
        w = 1e6 ** (-np.arange(0, 128, 2) / 128)
        assert _within(np.cos(pos[:, None] * w[None, :]), want, pos, w, 1.0).all()


def test_longrope_is_long_at_every_length():
    """exllamav3/util/rope.py:347: long factors whenever max_position_embeddings > original; HF uses the short ones
    for a pass of up to 4096 positions."""
    each(["phi35", "phi4_mini"], _longrope_is_long_at_every_length)


def _longrope_is_long_at_every_length(case):
    cfg = json.loads(_config(case).read_text())
    pos = EXL[f"{case}.positions"]
    short = pos < 4096
    d = int(cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"]) * cfg.get("partial_rotary_factor", 1))
    base = 10000.0 ** (-np.arange(0, d, 2) / d)
    scale = math.sqrt(1 + math.log(131072 / 4096) / math.log(4096))
    want = EXL[f"{case}.cos"][short]
    for factors, matches in (("long_factor", True), ("short_factor", False)):
        w = base / np.array(cfg["rope_scaling"][factors])
        mine = scale * np.cos(pos[short, None] * w[None, :])
        assert _within(mine, want, pos[short], w, scale).all() == matches, (case, factors)


def test_yarn_mscale_ratio_only_where_the_architecture_opts_in(tmp_path):
    """exllamav3/util/rope.py:310-328: without attention_factor, the mscale / mscale_all_dim ratio only for an
    architecture that opts in (DeepSeek-V3: the stored table's attention factor 1 for mscale = mscale_all_dim = 1);
    for another (Qwen3 here) 0.1 ln f + 1 although both keys are given (HF: their ratio, 1), and 1 with
    llama_4_scaling_beta."""
    assert _meta("deepseek_v3")["attn_factor"] == 1.0 and _meta("deepseek_v3")["yarn_mscale_ratio"]
    cfg = json.loads((DATA / "engines" / "exllamav3" / "qwen3_yarn.json").read_text())
    cfg["max_position_embeddings"] = 131072  # factor 4 from the lengths, as the config says
    cfg["rope_scaling"].update(mscale=1.0, mscale_all_dim=1.0)
    # Ministral 3 (Ministral3Config: llama_4_scaling_beta scales the queries): exllamav3 drops the YaRN factor
    ministral = {**cfg, "architectures": ["Ministral3ForCausalLM"], "model_type": "ministral3",
                 "rope_scaling": {**cfg["rope_scaling"], "llama_4_scaling_beta": 0.1}}  # fmt: skip
    for config, want in ((cfg, 0.1 * math.log(4) + 1), (ministral, 1.0)):
        (tmp_path / "config.json").write_text(json.dumps(config))
        enc, _ = engine_encoding(tmp_path / "config.json", "exllamav3", length=1)
        hf, _ = engine_encoding(tmp_path / "config.json", "hf", length=1)
        assert enc.attention_scaling == pytest.approx(want, rel=1e-15)
        assert hf.attention_scaling == pytest.approx(1.0, rel=1e-15)
        assert np.allclose(enc.inv_freq(), hf.inv_freq(), rtol=2**-22)  # the frequencies agree


def test_defaults_are_exllamav3_s_own(tmp_path):
    """read_rope_settings_default (exllamav3/model/config.py:311-334): partial_rotary_factor defaults to 1 and
    rope_theta to 10000 whatever HF's model class says (Glm4Config: 0.5; Qwen2Config: 1e6 in the records)."""
    cfg = json.loads((DATA / "engines" / "exllamav3" / "glm4.json").read_text())
    del cfg["partial_rotary_factor"], cfg["rope_theta"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    facts = model_facts(tmp_path / "config.json")
    p = engine_params(facts, "exllamav3")
    assert p["dim"] == 128 and p.get("partial_rotary_factor") is None and p["base"] == 10000.0
    assert p["layout"] == "interleaved"  # Glm4Config: RopeStyle.GPTJ
    assert facts.rot_dim == 64  # HF's Glm4 rotates half the head
    (line,) = rule_lines(facts, "exllamav3")
    assert "rotated features 128 (HF 64)" in line and "base 10000 (HF" not in line  # Glm4Config: 10000 too


def test_a_key_its_parser_demands(tmp_path):
    """LlamaConfig reads hidden_size and num_attention_heads with no default (exllamav3/architecture/llama.py:27-28):
    a config without hidden_size is refused by exllamav3 although it gives head_dim (HF's defaults fill it)."""
    cfg = json.loads((DATA / "configs" / "gpt_oss.json").read_text())
    del cfg["hidden_size"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ParameterError, match=r"exllamav3 1.6.5 refuses a config without hidden_size: .*Missing any"):
        engine_encoding(tmp_path / "config.json", "exllamav3", length=4)
    assert engine_encoding(tmp_path / "config.json", "hf", length=4)[0].dim == 64


def test_an_architecture_posenc_does_not_mirror_or_exllamav3_does_not_load(tmp_path):
    with pytest.raises(ParameterError, match=r"exllamav3 1.6.5 does not load architecture 'GPTNeoXForCausalLM'"):
        engine_encoding(DATA / "configs" / "gpt_neox.json", "exllamav3", length=4)
    with pytest.raises(ParameterError, match=r"posenc does not mirror how exllamav3 1.6.5 reads architecture "
                                             r"'Gemma3ForCausalLM'"):  # fmt: skip
        engine_encoding(DATA / "configs" / "gemma3_text.json", "exllamav3", length=4, layer_type="full_attention")


def test_rule_lines_name_the_divergence_with_its_values():
    facts = model_facts(DATA / "engines" / "qwen2_5_yarn.json")
    (line,) = rule_lines(facts, "exllamav3", seq_len=4096)
    assert line.startswith(
        "exllamav3 derives the YaRN factor from max_position_embeddings / original_max_position_embeddings = "
        "32768 / 32768 = 1: no YaRN; HF applies factor 4, attention factor 1.1386"
    )
    assert "exllamav3/util/rope.py:305" in line
    assert rule_lines(model_facts(DATA / "configs" / "llama.json"), "exllamav3") == []  # llama3: HF's table


# ----- the command line -----------------------------------------------------------------------------------------
def test_compare_and_audit_name_the_rule(tmp_path):
    cfg = str(DATA / "engines" / "qwen2_5_yarn.json")
    code, out, err = cli(["compare", f"{cfg}@exllamav3", f"{cfg}@hf", "--len", "64", "--json"])
    assert code == 1, err
    cmp = json.loads(out)
    assert any("= 32768 / 32768 = 1: no YaRN" in r for r in cmp["rules"])
    assert "no YaRN; HF applies factor 4, attention factor 1.1386" in cmp["reason"]
    code, out, err = cli(["compare", f"{cfg}@exllamav3", f"{cfg}@exllamav3", "--len", "64", "--json"])
    assert code == 0, err
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(Path(cfg).read_text())
    code, out, err = cli(["audit", str(d), "--engine", "hf,exllamav3", "--len", "64", "--json"])
    data = json.loads(out)
    (row,) = [r for r in data["rows"] if r["engine"] == "exllamav3"]
    assert row["verdict"] == "differ" and "= 32768 / 32768 = 1: no YaRN" in row["explanation"]


def test_check_against_exllamav3(tmp_path):
    """A table exllamav3 computes for Qwen2.5's YaRN config (plain RoPE) is the config's table by exllamav3, not
    by HF."""
    cfg = str(DATA / "engines" / "qwen2_5_yarn.json")
    out = tmp_path / "t.npz"
    assert cli(["generate", cfg, "--engine", "exllamav3", "--len", "16", "-o", str(out)])[0] == 0
    code, text, err = cli(["check", str(out), "--against", cfg, "--engine", "exllamav3"])
    assert code == 0, err
    code, text, err = cli(["check", str(out), "--against", f"{cfg}@hf"])
    assert code == 1 and b"DIFFERENT" in text


def test_dynamic_is_refused_in_one_line_and_is_a_divergence_in_compare():
    cfg = str(DATA / "engines" / "llama2_dynamic.json")
    code, _out, err = cli(["generate", cfg, "--engine", "exllamav3", "--len", "4", "-o", "-"])
    assert code == 2 and len(err.splitlines()) == 1
    assert "exllamav3 1.6.5 refuses rope_type 'dynamic'" in err and "exllamav3/util/rope.py:200-216" in err
    code, out, err = cli(["compare", f"{cfg}@exllamav3", cfg, "--len", "4", "-q"])
    assert code == 1 and "refuses rope_type 'dynamic'" in out.decode() + err
