"""Every layer type of a model with several, by default (issue 29 item 4), and rows from the file (item 3).

Gemma 3's text config (tests/data/configs/gemma3_text.json) rotates full-attention layers at base 1e6 and
sliding-window layers at base 1e4, half layout, head dim 256 (transformers' Gemma3RotaryEmbedding). The tables
here are built with plain NumPy from that formula (float64 angles, cast to float32), never with posenc's
generator."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from .conftest import cli

DATA = Path(__file__).parent / "data"
GEMMA3 = str(DATA / "configs" / "gemma3_text.json")
LLAMA = str(DATA / "configs" / "llama.json")
BASES = {"full_attention": 1e6, "sliding_attention": 1e4}
# Tables of 16 rows (20 where the rows must come from the file): at t = 1 the second frequencies of the bases
# already differ by 3.3e-2 rad (1e6 vs 1e4) and 1.2e-2 (5e4 vs 1e4), far above float32's rounding; what these
# tests hold (which layer type a table is paired with, and its verdict) does not depend on the table's length.


def half_rope(rows: int, base: float, dim: int = 256) -> dict[str, np.ndarray]:
    """HF's rotate_half tables: inv_freq = base^(-2i/d), angles t * inv_freq repeated over both halves."""
    inv_freq = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    ang = np.arange(rows, dtype=np.float64)[:, None] * inv_freq[None, :]
    ang = np.concatenate([ang, ang], axis=1)
    return {
        "cos": np.cos(ang).astype(np.float32),
        "sin": np.sin(ang).astype(np.float32),
        "inv_freq": inv_freq.astype(np.float32),
    }


def grouped(path: Path, tables: dict[str, dict[str, np.ndarray]]) -> str:
    """A metadata-free file of one table per attention type, tensors TYPE.NAME."""
    save_file({f"{g}.{n}": a for g, t in tables.items() for n, a in t.items()}, str(path))
    return str(path)


def verdict_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": SAME" in line or ": DIFFERENT" in line]


# ----- compare ----------------------------------------------------------------------------------------------
def test_compare_engines_of_a_model_with_two_layer_types_covers_each():
    """compare gemma3.json@mlx gemma3.json@hf used to exit 2 asking for --layer-type."""
    code, out, err = cli(["compare", f"{GEMMA3}@mlx", f"{GEMMA3}@hf", "--len", "16"])
    assert code == 0, err
    lines = verdict_lines(err)
    assert len(lines) == 2, err
    assert "[full_attention]" in lines[0] and "[sliding_attention]" in lines[1], lines
    code, out, _ = cli(["compare", f"{GEMMA3}@mlx", f"{GEMMA3}@hf", "--len", "16", "--json"])
    data = json.loads(out)
    assert [d["layer_type"] for d in data] == ["full_attention", "sliding_attention"]
    assert all(d["same"] for d in data)


def test_layer_type_narrows_the_comparison_to_one():
    code, _, err = cli(["compare", f"{GEMMA3}@mlx", f"{GEMMA3}@hf", "--len", "16", "--layer-type", "sliding_attention"])
    assert code == 0, err
    lines = verdict_lines(err)
    assert len(lines) == 1 and "sliding_attention" in lines[0], err


def test_a_file_of_both_layer_types_is_compared_type_by_type(tmp_path):
    """The full-attention table stored for both types: the sliding layers differ (base 1e6 vs 1e4), named."""
    good = grouped(tmp_path / "good.safetensors", {lt: half_rope(16, b) for lt, b in BASES.items()})
    code, _, err = cli(["compare", good, GEMMA3])
    assert code == 0, err
    assert len(verdict_lines(err)) == 2, err
    wrong = {lt: half_rope(16, 1e6) for lt in BASES}
    bad = grouped(tmp_path / "bad.safetensors", wrong)
    code, _, err = cli(["compare", bad, GEMMA3])
    assert code == 1, err
    full, sliding = verdict_lines(err)
    assert "full_attention" in full and ": SAME" in full, full
    assert "sliding_attention" in sliding and ": DIFFERENT" in sliding, sliding


# ----- check --against ---------------------------------------------------------------------------------------
def test_check_against_a_model_checks_each_layer_type(tmp_path):
    good = grouped(tmp_path / "good.safetensors", {lt: half_rope(16, b) for lt, b in BASES.items()})
    code, out, err = cli(["check", good, "--against", GEMMA3, "--json"])
    assert code == 0, err
    reports = json.loads(out)
    assert len(reports) == 2
    assert [r["against"]["b"].rsplit("[", 1)[1] for r in reports] == ["full_attention]", "sliding_attention]"]
    bad = grouped(tmp_path / "bad.safetensors", {lt: half_rope(16, 1e6) for lt in BASES})
    code, out, _ = cli(["check", bad, "--against", GEMMA3, "--json"])
    assert code == 1
    assert [r["ok"] for r in json.loads(out)] == [True, False]
    # --layer-type narrows to that type's group
    for lt, ok in (("full_attention", True), ("sliding_attention", False)):
        code, out, err = cli(["check", bad, "--against", GEMMA3, "--layer-type", lt, "--json"])
        (report,) = json.loads(out)
        assert code == (0 if ok else 1) and report["source"].endswith(f"[{lt}]") and report["ok"] is ok, err


def test_one_table_is_checked_against_the_layer_type_it_equals(tmp_path):
    """A single (sliding-window) table against a config of two layer types: matched to its type, not refused."""
    path = tmp_path / "local.safetensors"
    save_file(half_rope(16, 1e4), str(path))
    code, out, err = cli(["check", str(path), "--against", GEMMA3, "--json"])
    assert code == 0, err
    (report,) = json.loads(out)
    assert report["against"]["b"].endswith("[sliding_attention]")
    assert report["against"]["same"] and report["ok"]
    # the full-attention table (base 1e6) is not taken for it: a table of neither type fails against both
    save_file(half_rope(16, 5e4), str(path))
    code, out, err = cli(["check", str(path), "--against", GEMMA3, "--json"])
    assert code == 1, err
    assert [r["against"]["b"].rsplit("[", 1)[1] for r in json.loads(out)] == ["full_attention]", "sliding_attention]"]


# ----- rows from the file --------------------------------------------------------------------------------------
def llama_cache(rows: int) -> dict[str, np.ndarray]:
    """cos, sin and inv_freq of llama.json as transformers computes them (_compute_llama3_parameters), in NumPy."""
    cfg = json.loads(Path(LLAMA).read_text())
    scaling = cfg.get("rope_scaling") or {}
    inv = 1.0 / cfg.get("rope_theta", 10000.0) ** (np.arange(0, 128, 2, dtype=np.float64) / 128)
    if scaling.get("rope_type", scaling.get("type")) == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        wavelen = 2 * np.pi / inv
        scaled = np.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        mid = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old / high) & (wavelen <= old / low)
        inv = np.where(medium, mid, scaled)
    ang = np.arange(rows, dtype=np.float64)[:, None] * inv[None, :]
    ang = np.concatenate([ang, ang], axis=1)
    return {
        "cos": np.cos(ang).astype(np.float32),
        "sin": np.sin(ang).astype(np.float32),
        "inv_freq": inv.astype(np.float32),
    }


def test_a_cache_under_other_names_is_paired_by_its_roles(tmp_path):
    """cos_cached and sin_cached (an older transformers' buffers) against a config or a spec: paired with cos and
    sin by name, rows from the file; --tensor cos_cached narrows it (both used to say "holds several tensors;
    pick one with --tensor", --tensor or not)."""
    cache = llama_cache(16)
    path = tmp_path / "cached.safetensors"
    save_file({"cos_cached": cache["cos"], "sin_cached": cache["sin"]}, str(path))
    for against in (LLAMA, "rope:preset=llama3.1"):
        code, out, err = cli(["check", str(path), "--against", against, "--json"])
        assert code == 0, err
        (report,) = json.loads(out)
        assert [(t["a"], t["b"]) for t in report["against"]["tensors"]] == [
            ("cos_cached", "cos"),
            ("sin_cached", "sin"),
        ]
        code, out, err = cli(["check", str(path), "--against", against, "--tensor", "cos_cached", "--json"])
        assert code == 0, err
        assert json.loads(out)[0]["not_checked"] == ["sin_cached"]
    code, _, err = cli(["compare", str(path), LLAMA, "--tensor", "sin_cached"])
    assert code == 0, err
    wrong = half_rope(16, 10000.0, dim=128)
    save_file({"cos_cached": wrong["cos"], "sin_cached": wrong["sin"]}, str(path))
    code, _, err = cli(["check", str(path), "--against", LLAMA])
    assert code == 1 and "matches-spec" in err, err


def test_rows_come_from_a_metadata_free_cos_sin_file(tmp_path):
    """check l32.safetensors --against llama.json without --len: the file's 20 rows (it used to ask for
    --tensor, and --tensor cos gave the same error)."""
    path = tmp_path / "l32.safetensors"
    save_file(llama_cache(20), str(path))
    code, out, err = cli(["check", str(path), "--against", LLAMA, "--json"])
    assert code == 0, err
    (report,) = json.loads(out)
    assert sorted(report["tensors"]) == ["cos", "inv_freq", "sin"] and report["ok"]
    code, out, err = cli(["check", str(path), "--against", LLAMA, "--tensor", "cos", "--json"])
    assert code == 0, err
    (report,) = json.loads(out)
    assert report["tensors"] == ["cos"] and report["not_checked"] == ["inv_freq", "sin"]
    # and a wrong table still fails: base 10000 instead of the config's
    wrong = half_rope(20, 10000.0, dim=128)
    save_file(wrong, str(tmp_path / "wrong.safetensors"))
    code, _, err = cli(["check", str(tmp_path / "wrong.safetensors"), "--against", LLAMA])
    assert code == 1, err


# ----- GGUF ---------------------------------------------------------------------------------------------------
def test_the_gguf_verdict_covers_each_layer_type_and_layer_type_narrows_it():
    gguf, config = str(DATA / "llamacpp" / "gemma3.gguf"), str(DATA / "llamacpp" / "gemma3.config.json")
    code, out, _ = cli(["check", gguf, "--against", config, "--len", "16", "--json"])
    assert code == 0
    assert sorted(json.loads(out)["numbers"]) == ["full_attention", "sliding_attention"]
    code, out, _ = cli(
        ["check", gguf, "--against", config, "--len", "16", "--json", "--layer-type", "sliding_attention"]
    )
    assert code == 0
    data = json.loads(out)
    assert list(data["numbers"]) == ["sliding_attention"]
    assert all("sliding_attention" in e for e in data["equivalences"]), data["equivalences"]
    code, _, err = cli(["check", gguf, "--against", config, "--len", "16", "--layer-type", "chunked"])
    assert code == 2 and err.startswith("Error: unknown --layer-type 'chunked'") and err.count("\n") == 1, err


# ----- plot ---------------------------------------------------------------------------------------------------
def test_plot_draws_every_layer_type_by_default(tmp_path, undrawn):
    """Which sources reach the figure (the spectrum of several sources is drawn and read back in test_plot)."""
    out = tmp_path / "spectrum.png"
    code, stdout, err = cli(["plot", GEMMA3, "--len", "64", "--view", "spectrum", "-o", str(out), "--json"])
    assert code == 0, err
    drawn = json.loads(stdout)["sources"]
    assert [d.rsplit("[", 1)[1] for d in drawn] == ["full_attention]", "sliding_attention]"], drawn
    code, stdout, err = cli(
        ["plot", GEMMA3, "--len", "64", "--view", "spectrum", "-o", str(out), "--json", "-f", "--layer-type",
         "full_attention"]
    )  # fmt: skip
    assert code == 0, err
    assert len(json.loads(stdout)["sources"]) == 1


# ----- ONNX: each cache matched to its layer type through the config -------------------------------------------
def two_cache_model(caches: dict, path: Path, num_heads: int = 4, head_size: int = 256) -> str:
    """An onnxruntime-genai-style model whose layers 0 and 1 rotate with their own caches (initializers), as an
    export of a model with local and global attention holds them."""
    from onnx import TensorProto, helper, numpy_helper, save

    inits, nodes, prev = [], [], "X"
    for i, (tag, (cos, sin)) in enumerate(caches.items()):
        inits += [numpy_helper.from_array(cos, f"cos_cache_{tag}"), numpy_helper.from_array(sin, f"sin_cache_{tag}")]
        out = "Y" if i == len(caches) - 1 else f"Y{i}"
        nodes.append(
            helper.make_node(
                "RotaryEmbedding",
                [prev, "position_ids", f"cos_cache_{tag}", f"sin_cache_{tag}"],
                [out],
                name=f"/model/layers.{i}/attn/q_rotary/RotaryEmbedding",
                domain="com.microsoft",
                interleaved=0,
            )
        )
        prev = out
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, "seq", num_heads * head_size])
    pos = helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "seq"])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, "seq", num_heads * head_size])
    model = helper.make_model(
        helper.make_graph(nodes, "rope", [x, pos], [y], initializer=inits),
        opset_imports=[helper.make_opsetid("", 23), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 10
    save(model, str(path))
    return str(path)


def test_onnx_caches_are_matched_to_their_layer_types_through_the_config(tmp_path):
    """An export of Gemma 3 with its local (base 1e4) and global (base 1e6) caches: each checked against its own
    layer type, one verdict each (it used to need --layer-type, and then checked every cache against that one)."""
    pytest.importorskip("onnx")
    from .onnx_models import genai_caches

    cfg = json.loads(Path(GEMMA3).read_text())
    cfg["max_position_embeddings"] = 128
    config = tmp_path / "config.json"
    config.write_text(json.dumps(cfg))
    local, glob = genai_caches(256, 1e4, 128), genai_caches(256, 1e6, 128)
    good = two_cache_model({"local": local, "global": glob}, tmp_path / "good.onnx")
    code, out, err = cli(["check", good, "--against", str(config), "--json"])
    assert code == 0, err
    reports = json.loads(out)
    assert [r["source"].rsplit("[", 1)[1] for r in reports] == ["full_attention]", "sliding_attention]"]
    assert all(r["ok"] and r["matched"] for r in reports), reports
    # the global cache stored for both layers: the sliding type has no cache, named
    bad = two_cache_model({"local": glob, "global": glob}, tmp_path / "bad.onnx")
    code, out, err = cli(["check", bad, "--against", str(config)])
    assert code == 1, err
    assert b"no cache of" in out and b"sliding_attention layers' tables" in out, out
    # --layer-type narrows: every cache against that type
    code, out, err = cli(["check", good, "--against", str(config), "--layer-type", "full_attention", "--json"])
    one = json.loads(out)  # one report: the object itself
    assert code == 1 and one["source"].endswith("[full_attention]") and not one["ok"], out


def test_a_model_of_one_table_is_compared_with_each_type_of_the_other(tmp_path):
    """A side with one table serves every attention type of the other side (it is not asked for a type it does
    not have); a spec takes each type's shape."""
    code, _, err = cli(["compare", GEMMA3, LLAMA, "--len", "16", "--no-explain"])
    assert code == 1 and not err.startswith("Error"), err
    assert len(verdict_lines(err)) == 2, err
    code, _, err = cli(["compare", GEMMA3, "rope:base=10000", "--len", "16"])
    full, sliding = verdict_lines(err)
    assert code == 1 and ": DIFFERENT" in full and ": SAME" in sliding, err


def test_check_of_a_model_with_two_layer_types_checks_each():
    """check gemma3.json (its properties) and check gemma3.gguf --against a spec: one report per attention type;
    llama.cpp's full-attention table is base 1e6, so only the sliding one equals rope base 1e4."""
    code, out, err = cli(["check", GEMMA3, "--len", "16", "--json"])
    assert code == 0, err
    assert [r["source"].rsplit("[", 1)[1] for r in json.loads(out)] == ["full_attention]", "sliding_attention]"]
    gguf = str(DATA / "llamacpp" / "gemma3.gguf")
    code, out, err = cli(["check", gguf, "--against", "rope:base=10000", "--len", "16", "--json"])
    assert code == 1, err
    assert [(r["source"].rsplit("[", 1)[1], r["ok"]) for r in json.loads(out)] == [
        ("full_attention]", False),
        ("sliding_attention]", True),
    ]
