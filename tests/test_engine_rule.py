"""One judgement for engine rows (issue 35, part 5): ``audit``'s engine rows and ``compare X@ENGINE Y`` share
:class:`posenc_cli.models.engines.ArithmeticJudge`: a row differs only beyond the bound of the arithmetic both
sides use, and says what differs (a parameter, a sequence length, frequencies) or within which arithmetic it
agrees. The configs are the published ones under docs/examples (Phi-3.5-mini's LongRoPE, Gemma 3's two RoPEs)."""

from __future__ import annotations

import json

from .conftest import ROOT, cli

PHI = str(ROOT / "docs" / "examples" / "phi-3.5-mini.json")
GEMMA = str(ROOT / "docs" / "examples" / "gemma3.json")


def _rows(args: list[str]) -> dict[str, dict]:
    code, out, err = cli(["audit", *args, "--json"])
    assert code in (0, 1), err
    return {r["engine"]: r for r in json.loads(out)["rows"]}


def test_phi35_engine_rows_follow_one_rule():
    """llama.cpp (ggml) and MLX (float32) both compute hf's table of Phi-3.5 (long factors at 8192 positions,
    llama.cpp's n_ctx 8192): both agree, each within its own arithmetic (once llama.cpp differed at 8.2e-4 without a
    named difference while MLX agreed at 1.1e-3)."""
    rows = _rows([PHI, "--len", "8192", "--engine", "hf,llamacpp,mlx"])
    llama, mlx = rows["llamacpp"], rows["mlx"]
    assert llama["verdict"] == "agree" and "ggml float32" in llama["explanation"], llama
    assert mlx["verdict"] == "agree" and "float32 formula's error" in mlx["explanation"], mlx
    assert 1e-4 < llama["max_abs_diff"] < 1e-2 and 1e-4 < mlx["max_abs_diff"] < 1e-2


def test_an_engine_row_that_differs_names_what_differs():
    """llama.cpp picks LongRoPE's factors by its context (n_ctx 131072: long), HF by the positions (2048: short):
    the row differs and says so in the terms of the rule (the sequence length each reads)."""
    rows = _rows([PHI, "--len", "2048", "--n-ctx", "131072", "--engine", "hf,llamacpp"])
    llama = rows["llamacpp"]
    assert llama["verdict"] == "differ"
    assert "reads sequence length 4097 where hf reads 2048" in llama["explanation"], llama
    # the tables really differ by the factors: far beyond any float32 arithmetic
    assert llama["max_abs_diff"] > 0.5


def test_compare_of_two_engines_agrees_with_the_audit():
    """Gemma 3's sliding layers (base 10000): llama.cpp's ggml table against hf's, compared, is SAME as the audit
    row says (once DIFFERENT: the float32 formula's bound does not model ggml's iterated powf; the judge does)."""
    code, _out, err = cli(["compare", f"{GEMMA}@llamacpp", f"{GEMMA}@hf", "--len", "1024", "--n-ctx", "1024", "-q"])
    lines = [ln for ln in err.splitlines() if "sliding_attention" in ln]
    assert code == 0 and lines and "SAME" in lines[0] and "ggml float32" in lines[0], err
    rows = _rows([GEMMA, "--len", "1024", "--engine", "hf,llamacpp"])
    assert rows["llamacpp"]["verdict"] == "agree"


def test_a_real_difference_between_engines_still_differs():
    """The judge is no blanket pass: gpt-oss's YaRN is read without truncation by HF (truncate false) and
    with the rule's default by llama.cpp, and the comparison stays DIFFERENT, naming it."""
    cfg = str(ROOT / "docs" / "examples" / "gpt-oss-20b.json")
    code, _out, err = cli(["compare", f"{cfg}@llamacpp", f"{cfg}@hf", "--len", "4096", "--n-ctx", "4096", "-q"])
    assert code == 1 and "DIFFERENT" in err and "truncate" in err, err


def test_compare_of_an_engine_with_its_config_judges_every_tensor_by_the_audit_s_rule():
    """``compare CONFIG@llamacpp CONFIG``: ggml's float32 frequencies (its inv_freq, 1.9e-7 from HF's at most for
    Llama 3.1's llama3 scaling) are HF's within ggml's arithmetic, as the audit's row says; every tensor, inv_freq
    too, is judged by that rule (inv_freq alone once made it DIFFERENT), and another config's table still differs."""
    llama = str(ROOT / "docs" / "examples" / "llama-3.1-8b.json")
    qwen = str(ROOT / "docs" / "examples" / "qwen2.5-7b-yarn.json")
    code, out, err = cli(["compare", f"{llama}@llamacpp", llama, "--len", "2048", "--json"])
    data = json.loads(out)
    assert code == 0 and data["same"], data["reason"]
    inv = next(t for t in data["tensors"] if t["a"] == "inv_freq")
    assert inv["same"] and inv["max_abs"] > 0 and "ggml float32" in inv["note"], inv
    # the verdict is the property (--no-explain: no diagnosis of why the two configs differ)
    code, out, err = cli(["compare", f"{llama}@llamacpp", qwen, "--len", "2048", "-q", "--no-explain"])
    assert code == 1 and "DIFFERENT" in out.decode() + err


def test_a_table_ggml_computed_is_checked_within_ggml_s_arithmetic(tmp_path):
    """A table written by ``--engine llamacpp`` (ggml's iterated float32 powf frequencies, which the float32
    formula's bound does not model) passes ``check`` and ``check --against`` its config within ggml's arithmetic,
    as the metadata says it was computed (it failed ``relative`` at 16384 rows, and its inv_freq made
    ``--against`` DIFFERENT); the same file with its frequencies off by 1e-4 (plain numpy) still fails."""
    from safetensors import safe_open
    from safetensors.numpy import save_file

    llama = str(ROOT / "docs" / "examples" / "llama-3.1-8b.json")
    path = tmp_path / "ggml.safetensors"
    code, _out, err = cli(["generate", "--hf-config", llama, "--engine", "llamacpp", "--len", "16384", "-o", str(path)])
    assert code == 0, err
    # one run: the properties (the report) and the comparison with the config (its "against")
    code, out, err = cli(["check", str(path), "--against", llama, "--json"])
    (report,) = json.loads(out)
    assert code == 0 and report["ok"], report["failed"]
    assert "ggml-float32" in report["arithmetic"]["why"] and report["arithmetic"]["compute"] == "float32"
    assert report["against"]["same"], report["against"]["reason"]
    with safe_open(str(path), "np") as f:
        meta, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (not iterable)
    tensors["inv_freq"] = tensors["inv_freq"] * (1 + 1e-4)
    wrong = tmp_path / "wrong.safetensors"
    save_file(tensors, str(wrong), metadata=meta)
    code, out, err = cli(["check", str(wrong), "--against", llama, "-q"])
    assert code == 1, out.decode() + err
