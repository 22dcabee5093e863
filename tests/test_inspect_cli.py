"""`posenc identify`, `check` of a table without a kind, `check --against`, and `check --tensor` (repeatable):
nothing is checked in part without saying so, and a wrong table fails with the reason.

Every mistaken table here is built with plain NumPy (never with posenc's generator and a flag flipped).
"""

from __future__ import annotations

import functools
import json
import shlex
from pathlib import Path

import numpy as np
import pytest

from .conftest import cli
from .each import each


def sinusoidal(n: int, d: int, base: float = 10000.0, layout: str = "interleaved") -> np.ndarray:
    """Vaswani et al.'s table in NumPy: angle t * base^(-2k/d), sin/cos pairs interleaved or split."""
    t = np.arange(n, dtype=np.float64)[:, None]
    w = base ** (-2.0 * np.arange(d // 2) / d)[None, :]
    s, c = np.sin(t * w), np.cos(t * w)
    if layout == "split":
        return np.concatenate([s, c], axis=1)
    out = np.empty((n, d))
    out[:, 0::2], out[:, 1::2] = s, c
    return out


def rope_half(n: int, d: int, base: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """HF Llama's cos/sin cache (rotate_half layout): cat(freqs, freqs)."""
    inv = 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    f = np.outer(np.arange(n, dtype=np.float64), inv)
    emb = np.concatenate([f, f], axis=1)
    return np.cos(emb), np.sin(emb)


@functools.cache
def _tables() -> dict[str, np.ndarray]:
    """The tables of the tests below, built once per process."""
    perm = np.random.default_rng(3).permutation(64)
    # a "trained" table: sinusoidal start plus 500 steps of N(0, 0.01) updates, drawn as their sum
    # N(0, 0.01 * sqrt(500)) (no analytic kind reproduces it)
    trained = sinusoidal(128, 32) + np.random.default_rng(1).normal(0, 0.01 * np.sqrt(500), (128, 32))
    nan = sinusoidal(64, 16)
    nan[5, 3] = np.nan
    tables = {
        "base500k": sinusoidal(256, 64, 500000.0),
        "split": sinusoidal(256, 64, layout="split"),
        "good": sinusoidal(256, 64),
        "permuted": sinusoidal(256, 64)[:, perm],
        "noise": np.random.default_rng(0).normal(size=(128, 32)),
        "trained": trained,
        "nan": nan,
    }
    return {name: table.astype(np.float32) for name, table in tables.items()}


@pytest.fixture()
def tmp(tmp_path: Path) -> Path:
    for name, table in _tables().items():
        np.save(tmp_path / f"{name}.npy", table)
    return tmp_path


def run(*args: str, input: bytes = b"") -> tuple[int, str, str]:
    code, out, err = cli([str(a) for a in args], input=input)
    return code, out.decode(), err


# ----- identify ---------------------------------------------------------------------------------------------------
def test_identify_names_the_base_and_its_command_regenerates_the_table(tmp):
    code, out, err = run("identify", tmp / "base500k.npy")
    assert code == 0, err
    assert "identified: sinusoidal base 500000" in out and "0 float32 ulp" in out
    command = next(line.strip() for line in out.splitlines() if line.strip().startswith("posenc generate"))
    assert command == "posenc generate --kind sinusoidal --len 256 --dim 64 -p base=500000"
    # the printed command, run, writes the same table
    args = shlex.split(command)[1:] + ["-o", str(tmp / "again.npy"), "-q"]
    assert cli(args)[0] == 0
    again, want = np.load(tmp / "again.npy"), np.load(tmp / "base500k.npy")
    assert np.max(np.abs(again.astype(np.float64) - want)) <= 2 * np.spacing(np.float32(1))
    assert err.strip() == f"{tmp / 'base500k.npy'}: identified as sinusoidal base 500000"


def test_identify_layout_preset_and_json(tmp):
    code, out, _ = run("identify", tmp / "split.npy", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["identified"] and doc["best"]["kind"] == "sinusoidal"
    assert doc["best"]["preset"] == "tf-tutorial" and doc["best"]["accounts"] and doc["best"]["ulp"] == 0
    assert doc["command"].endswith("-p preset=tf-tutorial") and doc["source"].endswith("split.npy")


def test_identify_a_rope_pair_from_stdin_and_one_tensor(tmp):
    cos, sin = rope_half(64, 32, 500000.0)
    from safetensors.numpy import save_file

    save_file({"cos": cos.astype(np.float32), "sin": sin.astype(np.float32)}, str(tmp / "hf.safetensors"))
    code, out, _ = run("identify", "-", input=(tmp / "hf.safetensors").read_bytes())
    assert code == 0 and "identified: rope" in out and "base 500000" in out, out
    code, out, _ = run("identify", tmp / "hf.safetensors", "-t", "sin", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["best"]["kind"] == "rope" and doc["best"]["tensor_map"] == {"sin": "sin"}


def test_identify_refuses_noise_trained_tables_and_nan(tmp):
    each(["noise.npy", "trained.npy", "nan.npy"], lambda c: _identify_refuses_noise_trained_tables_and_nan(tmp, c))


def _identify_refuses_noise_trained_tables_and_nan(tmp, name):
    code, out, err = run("identify", tmp / name)
    assert code == 1 and "not identified:" in out and err.strip().endswith("not identified"), out
    if name == "nan.npy":
        assert "NaN" in out
    else:
        assert "no analytic kind reproduces it; closest" in out
    doc = json.loads(run("identify", tmp / name, "--json")[1])
    assert doc["identified"] is False and doc["best"] is None and doc["command"] is None


def test_identify_refuses_a_spec_by_name():
    code, _, err = run("identify", "sinusoidal")
    assert code == 2 and err.startswith("Error: 'sinusoidal' is a spec") and len(err.strip().splitlines()) == 1


# ----- check of a table without a kind ----------------------------------------------------------------------------
def test_check_identifies_a_table_without_a_kind_and_says_so(tmp):
    code, out, _ = run("check", tmp / "base500k.npy")
    assert code == 0
    assert "(kind: sinusoidal)" in out and "identified (no kind in the file): sinusoidal base 500000" in out
    assert "matches-spec" in out and "constant-norm" in out  # judged by sinusoidal's properties
    doc = json.loads(run("check", tmp / "base500k.npy", "--json")[1])[0]
    assert doc["kind"] == "sinusoidal" and doc["assumed_command"].endswith("-p base=500000")
    # without identification: an unknown kind, only what every table needs required
    doc = json.loads(run("check", tmp / "base500k.npy", "--json", "--no-identify")[1])[0]
    assert doc["kind"] is None and doc["assumed"] == "" and doc["required"] == ["finite", "distinct"]


def test_check_of_noise_says_nothing_was_identified(tmp):
    code, out, _ = run("check", tmp / "noise.npy")
    assert code == 0 and "kind unknown" in out and "not identified: no analytic kind reproduces it" in out


# ----- check --against ---------------------------------------------------------------------------------------------
def test_wrong_base_fails_against_the_spec_with_the_reason(tmp):
    code, out, err = run("check", tmp / "base500k.npy", "--against", "sinusoidal")
    assert code == 1
    assert "✗ FAIL  matches-spec" in out or "x FAIL  matches-spec" in out
    # in the kind's parameters, both values named (the file identified as sinusoidal base 500000)
    assert "why:" in out and "base500k.npy is sinusoidal base 500000; sinusoidal gives base 10000" in " ".join(
        out.split()
    )
    assert "matches sinusoidal" in err
    doc = json.loads(run("check", tmp / "base500k.npy", "--against", "sinusoidal", "--json")[1])[0]
    assert doc["ok"] is False and doc["against"]["same"] is False
    best = doc["against"]["tensors"][0]["diagnosis"]["explanations"][0]
    assert best["name"] == "parameter-base" and best["accounts"]
    assert best["steps"][0]["detail"] == {"parameter": "base", "a": 500000.0, "b": 10000.0}
    # the same with --expect KIND -p key=value
    code, out, _ = run("check", tmp / "base500k.npy", "--expect", "sinusoidal", "-p", "base=10000")
    assert code == 1 and "why:" in out
    # and the right spec passes
    code, out, _ = run("check", tmp / "base500k.npy", "--against", "sinusoidal:base=500000")
    assert code == 0 and "against sinusoidal:base=500000: SAME" in out


def test_layout_swap_and_permuted_columns_fail_against_the_spec(tmp):
    code, out, _ = run("check", tmp / "split.npy", "--against", "sinusoidal", "--json")
    doc = json.loads(out)[0]
    # the layout parameter first, then the column map that undoes it
    names = [e["name"] for e in doc["against"]["tensors"][0]["diagnosis"]["explanations"]]
    assert code == 1 and names[:2] == ["parameter-layout", "layout-split-to-interleaved"]
    code, out, _ = run("check", tmp / "permuted.npy", "--against", "sinusoidal", "--json")
    doc = json.loads(out)[0]
    assert code == 1 and doc["against"]["tensors"][0]["diagnosis"]["explanations"][0]["name"] == ("column-permutation")
    # the good table passes
    assert run("check", tmp / "good.npy", "--against", "sinusoidal", "-q")[0] == 0


def test_against_refuses_what_cannot_apply(tmp):
    code, _, err = run("check", "sinusoidal", "-n", "8", "-d", "8", "--against", "sinusoidal")
    assert code == 2 and "--against compares files with a spec" in err
    code, _, err = run("check", tmp / "good.npy", "--against", "sinusoidal", "--no-identify")
    assert code == 2 and "--no-identify cannot apply with --against" in err


# ----- a source is judged as a whole; --tensor narrows it and says so --------------------------------------------
def test_check_judges_every_tensor_and_tensor_repeats(tmp):
    rope = tmp / "rope.safetensors"
    assert cli(["generate", "--kind", "rope", "-n", "32", "-d", "16", "-o", str(rope), "-q"])[0] == 0
    doc = json.loads(run("check", rope, "--json")[1])[0]
    assert doc["tensors"] == ["cos", "sin", "inv_freq"] and doc["not_checked"] == [] and doc["unmeasured"] == []
    code, out, _ = run("check", rope, "-t", "cos", "-t", "sin")
    assert code == 0 and f"{rope} [cos, sin]" in out and "not checked (--tensor): inv_freq" in out
    assert "pythagorean" in out  # the pair is there: its properties are measured
    doc = json.loads(run("check", rope, "-t", "sin", "--json")[1])[0]
    assert doc["tensors"] == ["sin"] and doc["not_checked"] == ["cos", "inv_freq"]
    assert {"pythagorean", "relative"} <= set(doc["unmeasured"])
    out = run("check", rope, "-t", "sin")[1]
    assert "not measurable on these tensors: pythagorean" in out


def test_a_nan_in_the_second_tensor_fails_check_and_the_pipe_keeps_every_tensor(tmp):
    code, npy, _ = cli(["generate", "--kind", "rope", "-n", "16", "-d", "8"])
    assert code == 0
    doc = json.loads(run("check", "-", "--json", input=npy)[1])[0]
    assert doc["kind"] == "rope" and doc["tensors"] == ["cos", "sin", "inv_freq"]
    cos, sin = rope_half(16, 8)
    sin[3, 2] = np.nan
    from safetensors.numpy import save_file

    save_file({"cos": cos.astype(np.float32), "sin": sin.astype(np.float32)}, str(tmp / "bad.safetensors"))
    code, out, _ = run("check", tmp / "bad.safetensors", "--json")
    doc = json.loads(out)[0]
    assert code == 1 and doc["tensors"] == ["cos", "sin"] and "finite" in doc["failed"]


def test_compare_a_3d_bias_file_with_a_spec_takes_heads_and_length_from_it(tmp):
    bias = tmp / "alibi.npy"
    assert cli(["generate", "--kind", "alibi", "-n", "12", "-d", "4", "-t", "bias", "-o", str(bias), "-q"])[0] == 0
    assert run("compare", bias, "alibi", "-q")[0] == 0
    code, out, _ = run("compare", bias, "alibi:causal=true", "--json")
    assert code == 1 and json.loads(out)["tensors"][0]["shape_b"] == [4, 12, 12]


def test_a_kindless_cos_table_is_judged_under_the_identified_kinds_names(tmp):
    np.save(tmp / "cos.npy", rope_half(64, 32)[0].astype(np.float32))
    doc = json.loads(run("check", tmp / "cos.npy", "--json")[1])[0]
    results = {r["name"]: r for r in doc["results"]}
    assert doc["kind"] == "rope" and doc["ok"] and doc["tensors"] == ["pe"]
    assert results["matches-spec"]["status"] == "PASS"  # the file's 'pe' is judged as rope's 'cos'


def test_against_a_plain_file_fails_on_the_comparison_alone(tmp):
    code, out, err = run("check", tmp / "good.npy", "--against", tmp / "split.npy")
    assert code == 1 and "matches-spec" not in out and f"matches {tmp / 'split.npy'}" in err
    assert run("check", tmp / "good.npy", "--against", tmp / "good.npy", "-q")[0] == 0


def test_against_compares_only_the_tensors_kept(tmp):
    rope = tmp / "rope.safetensors"
    assert cli(["generate", "--kind", "rope", "-n", "32", "-d", "16", "-o", str(rope), "-q"])[0] == 0
    doc = json.loads(run("check", rope, "--against", "rope:base=500000", "--json")[1])[0]
    assert [t["a"] for t in doc["against"]["tensors"]] == ["cos", "sin", "inv_freq"]
    doc = json.loads(run("check", rope, "-t", "sin", "--against", "rope:base=500000", "--json")[1])[0]
    assert [t["a"] for t in doc["against"]["tensors"]] == ["sin"] and doc["against"]["only_in_b"] == []
