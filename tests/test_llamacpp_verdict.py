"""``check MODEL.gguf --against config.json`` and ``compare MODEL.gguf config.json`` on real conversions.

tests/data/llamacpp/NAME.gguf are real ``convert_hf_to_gguf.py`` outputs (keys and rope tensors kept; see
tools/golden/llamacpp_convert.py) of tiny checkpoints whose config is NAME.config.json. A faithful conversion must
pass; each mistake is made here by rewriting the real file's keys or tensors with ``gguf.GGUFWriter`` and must be
named. Needs the gguf extra (skipped without it).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from .conftest import cli
from .each import each

gguf = pytest.importorskip("gguf", reason="the GGUF tests need the gguf extra: pip install 'posenc-cli[gguf]'")

DATA = Path(__file__).resolve().parent / "data" / "llamacpp"
MODELS = ["llama31", "phi3", "qwen2", "gemma3", "gpt_oss", "deepseek_v2", "qwen2_vl"]


def mutate(src: Path, dest: Path, *, set_keys=None, drop_keys=(), drop_tensors=(), tensors=None, arch=None) -> str:
    """A copy of the GGUF ``src`` with keys set (name -> (value, GGUFValueType)) or dropped, tensors dropped or
    replaced, or every ``{arch}.`` key renamed to another architecture."""
    r = gguf.GGUFReader(str(src))
    old_arch = r.fields["general.architecture"].contents()
    new_arch = arch or old_arch
    w = gguf.GGUFWriter(str(dest), new_arch)
    for key, f in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture" or key in drop_keys or key in (set_keys or {}):
            continue
        name = new_arch + key[len(old_arch) :] if key.startswith(old_arch + ".") else key
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            w.add_key_value(name, f.contents(), f.types[0], sub_type=f.types[-1])
        else:
            w.add_key_value(name, f.contents(), f.types[0])
    for key, (value, vtype) in (set_keys or {}).items():
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, value, vtype, sub_type=gguf.GGUFValueType.INT32)
        else:
            w.add_key_value(key, value, vtype)
    new = dict(tensors or {})
    for t in r.tensors:
        if t.name in drop_tensors:
            continue
        w.add_tensor(t.name, np.asarray(new.pop(t.name, t.data), dtype=np.float32))
    for name, arr in new.items():
        w.add_tensor(name, np.asarray(arr, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(dest)


def verdict(gguf_path, config, *args):
    code, out, err = cli(["check", str(gguf_path), "--against", str(config), "--json", *args])
    assert code in (0, 1), err
    return code, json.loads(out)


F32, U32, STR, ARR = (gguf.GGUFValueType.FLOAT32, gguf.GGUFValueType.UINT32, gguf.GGUFValueType.STRING,
                      gguf.GGUFValueType.ARRAY)  # fmt: skip


def test_faithful_conversions_agree():
    """Every model but gpt-oss (one test over them: :func:`tests.each.each` names each failing model)."""
    each([m for m in MODELS if m != "gpt_oss"], _faithful_conversion_agrees)


def _faithful_conversion_agrees(name):
    code, v = verdict(DATA / f"{name}.gguf", DATA / f"{name}.config.json", "--len", "4096", "--n-ctx", "4096")
    assert code == 0 and v["divergences"] == [], v
    assert any("float32" in e for e in v["equivalences"])
    for nums in v["numbers"].values():  # ggml's iteration error at 4096 positions: float32-sized, reported
        assert 1e-6 < nums["iteration_error"] < 2e-3
        assert nums["max_rel_inv_freq"] < 2e-6


def test_gpt_oss_truncate_false_is_named():
    """gpt-oss says yarn truncate: false; llama.cpp always floors/ceils the correction range (issue text: up to
    76% off on 9 of 32 pairs). The real conversion therefore differs, and says why."""
    code, v = verdict(DATA / "gpt_oss.gguf", DATA / "gpt_oss.config.json", "--len", "4096")
    assert code == 1
    assert len(v["divergences"]) == 1 and "truncate: false" in v["divergences"][0]


def test_llama31_without_rope_freqs(tmp_path):
    bad = mutate(DATA / "llama31.gguf", tmp_path / "m.gguf", drop_tensors=("rope_freqs.weight",))
    code, v = verdict(bad, DATA / "llama31.config.json", "--len", "8192")
    assert code == 1
    assert len(v["divergences"]) == 1 and "no rope_freqs tensor" in v["divergences"][0]
    assert "#8676" in v["divergences"][0]


def test_wrong_base_and_rotated_width(tmp_path):
    bad = mutate(DATA / "qwen2.gguf", tmp_path / "m.gguf", set_keys={"qwen2.rope.freq_base": (10000.0, F32)})
    code, v = verdict(bad, DATA / "qwen2.config.json", "--len", "64")
    assert code == 1 and len(v["divergences"]) == 1 and v["divergences"][0].startswith("base")
    bad = mutate(DATA / "qwen2.gguf", tmp_path / "w.gguf", set_keys={"qwen2.rope.dimension_count": (64, U32)})
    code, v = verdict(bad, DATA / "qwen2.config.json", "--len", "64")
    assert code == 1 and any(d.startswith("rotated width") for d in v["divergences"])


def test_yarn_settings(tmp_path):
    """The config with truncate (only the mistake made here left) agrees; each YaRN key changed in the GGUF is
    named (one test over the three: :func:`tests.each.each` names each failing key)."""
    cfg = json.loads((DATA / "gpt_oss.config.json").read_text())
    cfg["rope_parameters"]["truncate"] = True  # leave only the mistake made here
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, v = verdict(DATA / "gpt_oss.gguf", tmp_path / "config.json", "--len", "64")
    assert code == 0, v
    cases = {
        "gpt-oss.rope.scaling.type": (("linear", STR), "scaling type"),
        "gpt-oss.rope.scaling.factor": ((16.0, F32), "factor: llama.cpp 16"),
        "gpt-oss.rope.scaling.original_context_length": ((8192, U32), "original context: llama.cpp 8192"),
    }

    def check(key):
        value, needle = cases[key]
        bad = mutate(DATA / "gpt_oss.gguf", tmp_path / "m.gguf", set_keys={key: value})
        code, v = verdict(bad, tmp_path / "config.json", "--len", "64")
        assert code == 1 and any(needle in d for d in v["divergences"]), v

    each(cases, check)


def test_yarn_beta_keys_the_loader_ignores(tmp_path):
    cfg = json.loads((DATA / "gpt_oss.config.json").read_text())
    cfg["rope_parameters"].update(truncate=True, beta_fast=16.0)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    # the converter writes rope.scaling.yarn_beta_fast; gpt-oss's loader does not read it
    bad = mutate(
        DATA / "gpt_oss.gguf", tmp_path / "m.gguf", set_keys={"gpt-oss.rope.scaling.yarn_beta_fast": (16.0, F32)}
    )
    code, v = verdict(bad, tmp_path / "config.json", "--len", "64")
    assert code == 1 and any("reads no yarn_beta_* keys" in d for d in v["divergences"]), v


def test_attention_factor_keys(tmp_path):
    bad = mutate(DATA / "phi3.gguf", tmp_path / "p.gguf", drop_keys=("phi3.rope.scaling.attn_factor",))
    code, v = verdict(bad, DATA / "phi3.config.json", "--len", "64", "--n-ctx", "4096")
    assert code == 1 and any(d.startswith("attention factor") for d in v["divergences"]), v
    bad = mutate(
        DATA / "deepseek_v2.gguf", tmp_path / "d.gguf", drop_keys=("deepseek2.rope.scaling.yarn_log_multiplier",)
    )
    code, v = verdict(bad, DATA / "deepseek_v2.config.json", "--len", "64")
    assert code == 1 and any("yarn_log_multiplier" in d for d in v["divergences"]), v


def test_longrope_swapped_and_missing(tmp_path):
    r = gguf.GGUFReader(str(DATA / "phi3.gguf"))
    t = {x.name: np.array(x.data) for x in r.tensors}
    swapped = mutate(
        DATA / "phi3.gguf",
        tmp_path / "s.gguf",
        tensors={"rope_factors_long.weight": t["rope_factors_short.weight"],
                 "rope_factors_short.weight": t["rope_factors_long.weight"]},
    )  # fmt: skip
    code, v = verdict(swapped, DATA / "phi3.config.json", "--len", "64", "--n-ctx", "4096")
    assert code == 1 and any("swapped" in d for d in v["divergences"]), v
    missing = mutate(DATA / "phi3.gguf", tmp_path / "m.gguf", drop_tensors=("rope_factors_long.weight",))
    code, v = verdict(missing, DATA / "phi3.config.json", "--len", "64", "--n-ctx", "4096")
    assert code == 1 and any("no rope_factors_long" in d for d in v["divergences"]), v


def test_longrope_choice_at_n_ctx():
    """llama.cpp picks long factors when n_ctx (padded to 256) > 4096; HF when the sequence is > 4096 (#24823)."""
    code, v = verdict(DATA / "phi3.gguf", DATA / "phi3.config.json", "--len", "512", "--n-ctx", "8192")
    assert code == 1 and any(d.startswith("LongRoPE choice") for d in v["divergences"]), v
    code, v = verdict(DATA / "phi3.gguf", DATA / "phi3.config.json", "--len", "512", "--n-ctx", "4000")
    assert code == 0, v  # 4000 pads to 4096, not > 4096: short, as HF at 512 positions


def test_mrope_sections(tmp_path):
    bad = mutate(
        DATA / "qwen2_vl.gguf",
        tmp_path / "m.gguf",
        set_keys={"qwen2vl.rope.dimension_sections": ([24, 20, 20, 0], ARR)},
    )
    code, v = verdict(bad, DATA / "qwen2_vl.config.json", "--len", "64")
    assert code == 1 and any(d.startswith("mrope sections") for d in v["divergences"]), v


def test_wrong_rope_type_pairing(tmp_path):
    """DeepSeek-V2 rotates consecutive pairs (HF view_as_complex); a file that says qwen2 gets NEOX halves from
    llama.cpp and no Q/K permutation: the scores differ (the Orion bug, PR #13261, in reverse)."""
    bad = mutate(DATA / "deepseek_v2.gguf", tmp_path / "m.gguf", arch="qwen2")
    code, v = verdict(bad, DATA / "deepseek_v2.config.json", "--len", "64")
    assert code == 1 and any(d.startswith("pairing") for d in v["divergences"]), v


def test_compare_says_the_same_and_text_fits_80_columns(tmp_path):
    bad = mutate(DATA / "llama31.gguf", tmp_path / "m.gguf", drop_tensors=("rope_freqs.weight",))
    code, out, _ = cli(["compare", bad, str(DATA / "llama31.config.json"), "--len", "8192"])
    assert code == 1
    text = out.decode()
    assert "divergence: no rope_freqs tensor" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    code, out2, _ = cli(["check", bad, "--against", str(DATA / "llama31.config.json"), "--len", "8192"])
    assert code == 1 and out2 == out


def test_generate_from_a_real_conversion_matches_the_golden_emulation(tmp_path):
    """The GGUF path (reader -> hparams -> context -> emulation) against the emulation called with the numbers
    read by hand from the file: Llama 3.1's rope_freqs divide NORM pairs."""
    from posenc_cli.formats import read_table
    from posenc_cli.models.llamacpp import rope_cache

    out = tmp_path / "t.safetensors"
    assert cli(["generate", str(DATA / "llama31.gguf"), "--len", "300", "-o", str(out)])[0] == 0
    t = read_table(str(out))
    r = gguf.GGUFReader(str(DATA / "llama31.gguf"))
    ff = np.array(next(x for x in r.tensors if x.name == "rope_freqs.weight").data)
    cos, _ = rope_cache(np.arange(300), 128, freq_base=500000.0, freq_factors=ff, mode="NORM")
    assert np.array_equal(t.tensors["cos"][:, 0::2], cos)
    assert t.metadata["freq_factors"] == "rope_freqs" and t.metadata["layout"] == "interleaved"


def test_what_a_faithful_conversion_gives_equals_the_real_converter():
    """Every converted model at two contexts (:func:`tests.each.each`: each failure named)."""
    each([(name, n_ctx) for n_ctx in (4096, 8192) for name in MODELS], lambda c: _faithful_conversion(*c))


def _faithful_conversion(name, n_ctx):
    """llamacpp_tables_for(config) models convert_hf_to_gguf.py (the --engine llamacpp entry point); the real
    converter's file, read as llama.cpp reads it, gives the same float32 tables bit for bit (both layer types)."""
    from posenc_cli.models.llamacpp import llamacpp_tables_for

    for lt in [None, "sliding_attention"] if name in ("gemma3", "gpt_oss") else [None]:
        real = llamacpp_tables_for(str(DATA / f"{name}.gguf"), n_ctx, 512, lt)
        ours = llamacpp_tables_for(str(DATA / f"{name}.config.json"), n_ctx, 512, lt)
        assert real["layout"] == ours["layout"]
        assert np.array_equal(real["cos"], ours["cos"]) and np.array_equal(real["sin"], ours["sin"]), (name, lt)
        assert real["context"].factors_from == ours["context"].factors_from


def test_unknown_architecture_is_assumed_and_said(tmp_path):
    odd = mutate(DATA / "qwen2.gguf", tmp_path / "m.gguf", arch="zorp")
    code, out, err = cli(["check", odd, "--against", str(DATA / "qwen2.config.json"), "--len", "64"])
    assert code == 0
    assert "architecture 'zorp' unknown" in out.decode().replace("\n    ", " ")
    assert "NEOX was assumed" in (out.decode() + err).replace("\n    ", " ")


def test_an_absurd_length_is_refused_before_computing():
    code, _, err = cli(["check", str(DATA / "qwen2.gguf"), "--against", str(DATA / "qwen2.config.json"), "--len",
                        "4000000000"])  # fmt: skip
    assert code == 2 and "limit" in err, err
