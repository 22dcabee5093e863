"""Non-rotary positions read from HF configs (posenc_cli/models/hf_positions.py), held against the tables each
family's own transformers code built (tests/data/golden/positions_hf.json, made once by
tools/golden/make_hf_positions_golden.py in a side environment), plus the CLI wiring and bad input.

Equality is exact except where the model computes sinusoids in float32 torch (M2M100 / NLLB, Speech2Text,
Whisper's encoder): posenc then rounds frequencies and angles to float32 as that code does, but PyTorch's
vectorised ``exp``/``sin`` are not correctly rounded, so a frequency may differ by one float32 ulp: the bound is
that ulp times the position, plus two ulps of the value.
"""

from __future__ import annotations

import json
import random
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from posenc_cli.encodings import make_encoding
from posenc_cli.encodings.relative import bloom_slopes, mpt_slopes
from posenc_cli.errors import ParameterError
from posenc_cli.formats import read_table
from posenc_cli.sources import open_source

from .conftest import ROOT, cli
from .each import drawn, each
from .test_hf_configs import Mutation

CONFIGS = ROOT / "tests" / "data" / "configs" / "positions"
MODELS = ROOT / "tests" / "data" / "models"
GOLDEN = json.loads((ROOT / "tests" / "data" / "golden" / "positions_hf.json").read_text())["tables"]
#: families whose table transformers computes with float32 torch exp/sin (see the module docstring)
FLOAT32_TORCH = {"pos_m2m100_418m", "pos_nllb_600m", "pos_s2t_small", "pos_whisper_tiny", "tiny_whisper:encoder"}
CASES = [(name, lt) for name, layers in GOLDEN.items() for lt in layers]
#: goldens that are the module's whole buffer (``weights``: offset rows, padding row zero), read with rows=buffer;
#: the rows the model adds are tested against its forward in tests/test_inventory_positions.py
BUFFERS = {"pos_m2m100_418m", "pos_nllb_600m", "pos_s2t_small"}


def source_path(name: str) -> str:
    return str(CONFIGS / f"{name}.json") if name.startswith("pos_") else str(MODELS / name)


def opened(name: str, lt: str, **kw):
    g = GOLDEN[name][lt]
    learned = name.startswith("tiny_") and not (name == "tiny_whisper" and lt == "encoder")
    length = None if learned else g["length"]
    if name in BUFFERS:
        kw["params"] = {"rows": "buffer"}
    return open_source(source_path(name), length=length, layer_type=None if lt == "default" else lt, **kw)


def selected(a: np.ndarray, g: dict) -> np.ndarray:
    if a.ndim == 3:  # ALiBi heads x 1 x len (the model's row), or Falcon's heads x len x len mask: its last row
        a = a[:, 0, :] if a.shape[1] == 1 else a[:, -1, :]
    sub = a[g["rows"]]
    return sub if g["cols"] is None else sub[:, g["cols"]]


def test_tables_equal_transformers():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(CASES, lambda case: _tables_equal_transformers(*case))


def _tables_equal_transformers(name, lt):
    g = GOLDEN[name][lt]
    src = opened(name, lt)
    a = np.asarray(src.array(src.tensor_name(None)))
    ref = np.asarray(g["values"])
    got = selected(a, g).astype(ref.dtype)
    ref = ref.reshape(got.shape)
    shape = [s for s in g["shape"] if s != 1] if len(g["shape"]) == 3 and g["shape"][1] == 1 else g["shape"]
    assert [s for s in a.shape if s != 1] == [s for s in shape if s != 1]
    if name in FLOAT32_TORCH or f"{name}:{lt}" in FLOAT32_TORCH:
        t = np.asarray(g["rows"], dtype=np.float64)[:, None]
        enc = src.encoding
        w = np.tile(enc.inv_freq(), 2)[: a.shape[1]]
        w = w[g["cols"]] if g["cols"] is not None else w
        bound = t * w * 2.0**-23 + 2 * 2.0**-24
        assert np.all(np.abs(got - ref) <= bound), np.max(np.abs(got - ref) - bound)
        assert np.mean(got == ref) > 0.9  # nearly every value is bit-exact
    else:
        np.testing.assert_array_equal(got, ref)
    if "c2p" in g:
        np.testing.assert_array_equal(selected(np.asarray(src.array("c2p")), g), np.asarray(g["c2p"]))


def test_float32_sinusoids_beat_exact_angles_against_the_model():
    """The float32 angle rounding is the model's table: exact angles sit further from it (M2M100, row 1000)."""
    g = GOLDEN["pos_m2m100_418m"]["default"]
    ref = np.asarray(g["values"])
    ours = selected(np.asarray(opened("pos_m2m100_418m", "default").array("pe")), g)
    exact = make_encoding("sinusoidal", {**opened("pos_m2m100_418m", "default").encoding.params(),
                                         "angle_dtype": "float64"})  # fmt: skip
    far = selected(exact.array("pe"), g)
    assert np.max(np.abs(ours - ref)) < np.max(np.abs(far - ref)) / 5


# ----- ALiBi forms against plain formulas --------------------------------------------------------------------
def test_bloom_and_mpt_slopes_are_the_published_sets():
    # 8 heads: powers of two, exactly; 12 heads: 8 of 2^-k then the odd powers of 2^-1/2
    np.testing.assert_array_equal(bloom_slopes(8), 2.0 ** -np.arange(1, 9))
    np.testing.assert_array_equal(mpt_slopes(8), 2.0 ** -np.arange(1, 9))
    want12 = np.concatenate([2.0 ** -np.arange(1, 9), 2.0 ** (-np.arange(1, 8, 2) / 2)]).astype(np.float32)
    np.testing.assert_allclose(bloom_slopes(12), want12, rtol=2**-23)
    # MPT orders a non power of two as odd indices then even ones of 16 slopes 2^(-k/2)
    s16 = (2.0 ** (-np.arange(1, 17) / 2)).astype(np.float32)
    np.testing.assert_allclose(mpt_slopes(12), np.concatenate([s16[1::2], s16[::2]])[:12], rtol=2**-23)


def test_alibi_forms_are_the_models_rows():
    n = 6
    bloom = make_encoding("alibi", {"length": n, "dim": 4, "form": "bloom"}).array("bias")
    mpt = make_encoding("alibi", {"length": n, "dim": 4, "form": "mpt"}).array("bias")
    slopes = 2.0 ** -np.arange(2, 10, 2)  # 4 heads: 2^(-8/4 * k)
    np.testing.assert_array_equal(bloom[:, 0, :], slopes[:, None] * np.arange(n))
    np.testing.assert_array_equal(mpt[:, 0, :], slopes[:, None] * (np.arange(n) - (n - 1)))
    falcon = make_encoding("alibi", {"length": n, "dim": 4, "form": "falcon", "divide_by": 8.0}).array("bias")
    np.testing.assert_array_equal(falcon[:, 0, :], slopes[:, None] * np.arange(n) / 8)


def test_alibi_form_refusals():
    cases = [
        ({"form": "bloom", "causal": "true"}, "drop causal"),
        ({"form": "bloom", "max_bias": "4"}, "fixes max_bias"),
        ({"divide_by": "2"}, "form=falcon only"),
    ]

    def check(case):
        params, needle = case
        with pytest.raises(ParameterError, match=needle):
            make_encoding("alibi", {"length": 4, "dim": 4, **params})

    each(cases, check)


# ----- DeBERTa against a plain transcription -------------------------------------------------------------------
def test_deberta_buckets_plain_formula():
    n, b, p = 40, 8, 16
    enc = make_encoding("deberta", {"length": n, "position_buckets": b, "max_relative_positions": p})
    r = np.arange(n)[:, None] - np.arange(n)[None, :]
    mid = b // 2
    a = np.abs(r)
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.ceil(np.log(a / mid) / np.log((p - 1) / mid) * (mid - 1)) + mid
        want = np.where(a <= mid, r, np.sign(r) * logp).astype(np.int64)
    np.testing.assert_array_equal(enc.array("rel_pos"), want)
    np.testing.assert_array_equal(enc.array("c2p"), np.clip(want + b, 0, 2 * b - 1))
    no_buckets = make_encoding("deberta", {"length": 5, "position_buckets": 0, "max_relative_positions": 3})
    np.testing.assert_array_equal(no_buckets.array("rel_pos"), np.arange(5)[:, None] - np.arange(5)[None, :])


# ----- learned tables ------------------------------------------------------------------------------------------
def test_learned_from_sharded_weights_equals_single_file():
    one = opened("tiny_gpt2", "default")
    shards = open_source(str(MODELS / "tiny_gpt2_sharded"))
    np.testing.assert_array_equal(shards.array("pe"), one.array("pe"))
    assert shards.metadata["weights_file"].startswith("model-0000")
    assert shards.metadata["weights_tensor"] == "transformer.wpe.weight"


def test_opt_rows_start_at_two(tmp_path):
    code, _, err = cli(["export", str(MODELS / "tiny_opt"), "-o", str(tmp_path / "opt.safetensors")])
    assert code == 0, err
    t = read_table(str(tmp_path / "opt.safetensors"))
    assert t.metadata["first_row"] == "2" and t.metadata["weights_tensor"] == "model.decoder.embed_positions.weight"
    g = GOLDEN["tiny_opt"]["default"]
    np.testing.assert_array_equal(t.tensors["pe"], np.asarray(g["values"], dtype=np.float32))
    assert "kind" not in t.metadata  # a trained table: no spec rebuilds it


def test_config_alone_says_where_the_table_lives(tmp_path):
    """GPT-2, BERT and OPT (one test over the three: :func:`tests.each.each` names each failing model)."""

    def check(name):
        (tmp_path / name).mkdir()
        _config_alone_says_where_the_table_lives(name, tmp_path / name)

    each(["tiny_gpt2", "tiny_bert", "tiny_opt"], check)


def _config_alone_says_where_the_table_lives(name, tmp_path):
    shutil.copy(MODELS / name / "config.json", tmp_path / "config.json")
    code, out, err = cli(["generate", "--hf-config", str(tmp_path / "config.json"), "-o", "-"])
    assert code == 2 and out == b""
    assert err.count("\n") == 1 and "lives in the weights" in err and "model.safetensors" in err, err
    # the directory without weights: the same error, not a table
    code, _, err = cli(["generate", "--hf-config", str(tmp_path), "-o", "-"])
    assert code == 2 and "lives in the weights" in err


def test_learned_length_and_parameters(tmp_path):
    code, _, err = cli(["export", str(MODELS / "tiny_gpt2"), "--len", "5", "-o", str(tmp_path / "g.npy")])
    assert code == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "g.npy"), np.asarray(GOLDEN["tiny_gpt2"]["default"]["values"])[:5])
    code, _, err = cli(["export", str(MODELS / "tiny_gpt2"), "--len", "99", "-o", str(tmp_path / "h.npy")])
    assert code == 2 and "24 usable rows" in err
    code, _, err = cli(["export", str(MODELS / "tiny_gpt2"), "-p", "std=1", "-o", str(tmp_path / "i.npy")])
    assert code == 2 and "cannot apply" in err


def test_weights_that_disagree_with_the_config(tmp_path):
    for f in (MODELS / "tiny_gpt2").iterdir():
        shutil.copy(f, tmp_path / f.name)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["n_embd"] = 32
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, _, err = cli(["export", str(tmp_path), "-o", str(tmp_path / "x.npy")])
    assert code == 2 and "disagree" in err and "n_embd" in err


# ----- what the config says, and from where --------------------------------------------------------------------
def report(path: str, *extra: str) -> dict:
    code, out, err = cli(["kinds", "--hf-config", path, "--json", *extra])
    assert code == 0, err
    return json.loads(out)


def test_kinds_reports_keys_and_defaults():
    t5 = report(str(CONFIGS / "pos_t5_small.json"))
    assert [r["kind"] for r in t5] == ["t5", "t5"] and [r["layer_type"] for r in t5] == ["encoder", "decoder"]
    assert t5[0]["num_buckets"] == {"value": 32, "from": "config key relative_attention_num_buckets"}
    assert t5[0]["max_distance"] == {"value": 128, "from": "default of t5"}
    assert t5[1]["bidirectional"]["value"] is False
    gpt2 = report(str(MODELS / "tiny_gpt2"))
    assert gpt2["kind"] == "learned" and gpt2["dim"] == {"value": 16, "from": "config key n_embd"}
    assert gpt2["weights_tensor"]["value"] == "wpe.weight"
    falcon = report(str(CONFIGS / "pos_falcon_rw_1b.json"))
    assert falcon["form"]["value"] == "falcon" and falcon["divide_by"]["value"] == 8.0
    deb = report(str(CONFIGS / "pos_deberta_v3_base.json"))
    assert deb["max_relative_positions"]["value"] == 512
    assert "max_position_embeddings" in deb["max_relative_positions"]["from"]
    roberta = report(str(MODELS / "tiny_roberta"))
    assert roberta["first_row"]["value"] == 2 and "pad_token_id" in roberta["first_row"]["from"]


def test_mpt_keys_its_code_ignores_are_said(tmp_path):
    cfg = json.loads((CONFIGS / "pos_mpt_30b.json").read_text())
    cfg["attn_config"]["alibi_bias_max"] = 16
    (tmp_path / "mpt.json").write_text(json.dumps(cfg))
    code, _, err = cli(["generate", "--hf-config", str(tmp_path / "mpt.json"), "--len", "4", "-o", "-"])
    assert code == 0 and "alibi_bias_max=16 is ignored" in err


def test_bert_is_not_rope_and_gpt2_needs_no_hidden_size(tmp_path):
    bert = {"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12, "max_position_embeddings": 512}
    (tmp_path / "bert.json").write_text(json.dumps(bert))
    code, out, err = cli(["generate", "--hf-config", str(tmp_path / "bert.json"), "-o", "-"])
    assert code == 2 and out == b"" and "learned" in err and "RoPE" not in err
    gpt2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_positions": 1024}
    (tmp_path / "gpt2.json").write_text(json.dumps(gpt2))
    code, _, err = cli(["kinds", "--hf-config", str(tmp_path / "gpt2.json")])
    assert code == 0 and "hidden_size" not in err


def test_falcon_without_alibi_stays_with_the_rope_reader():
    from posenc_cli.models import hf_config, hf_positions
    from posenc_cli.models.readers import reader_for

    cfg = {"model_type": "falcon", "alibi": False, "hidden_size": 64, "num_attention_heads": 4,
           "max_position_embeddings": 16}  # fmt: skip
    for c in (cfg, {k: v for k, v in cfg.items() if k != "alibi"}):
        assert not hf_positions.claims(c) and reader_for(c) is hf_config
    assert reader_for({**cfg, "alibi": True}) is hf_positions
    assert reader_for({**cfg, "alibi": "yes"}) is hf_positions  # claimed, so that reading it names the key


# ----- bad input: one line naming the key and the fix, exit 2 -----------------------------------------------------
BAD_CONFIGS = [
    ("pos_t5_small", {"relative_attention_num_buckets": "32"}, ["--layer-type", "encoder"],
     "relative_attention_num_buckets"),
    ("pos_t5_small", {"relative_attention_max_distance": 4}, ["--layer-type", "encoder"], "max_distance"),
    ("pos_t5_small", {}, [], "--layer-type"),
    ("pos_t5_small", {}, ["--layer-type", "cross"], "choose from: encoder, decoder"),
    ("pos_bloom_560m", {"n_head": 0}, [], "n_head"),
    ("pos_falcon_rw_1b", {"num_attention_heads": None, "n_head": 32}, [], "rename it to num_attention_heads"),
    ("pos_falcon_rw_1b", {"alibi": "yes"}, [], "alibi"),
    ("pos_falcon_rw_1b", {"hidden_size": 2047}, [], "not a multiple"),
    ("pos_m2m100_418m", {"pad_token_id": 5000}, ["-p", "rows=buffer"], "pad_token_id"),
    ("pos_m2m100_418m", {"d_model": 1.5}, [], "d_model"),
    ("pos_whisper_tiny", {"d_model": 383}, ["--layer-type", "encoder"], "d_model"),
    ("pos_deberta_v3_base", {"relative_attention": False}, [], "relative_attention"),
    ("pos_deberta_v3_base", {"position_buckets": 1.5}, [], "position_buckets"),
    ("pos_deberta_v3_base", {"position_buckets": 2}, [], "position_buckets"),
    ("pos_marian_en_de", {"max_position_embeddings": -1}, [], "max_position_embeddings"),
]  # fmt: skip


def test_bad_configs(tmp_path):
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(BAD_CONFIGS, lambda case: _bad_configs(tmp_path, *case))


def _bad_configs(tmp_path, base, change, args, needle):
    cfg = json.loads((CONFIGS / f"{base}.json").read_text())
    for k, v in change.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    length = [] if "--len" in args else ["--len", "8"]
    code, out, err = cli(["generate", "--hf-config", str(tmp_path / "c.json"), *length, *args, "-o", "-"])
    assert code == 2 and out == b"", err
    assert err.count("\n") == 1 and needle in err, err


NEVER_READ = {  # config, the keys changed, the arguments, the key kinds reports as ignored
    "pos_t5_small": ({"rope_theta": 10000.0}, ["--layer-type", "encoder"], "rope_theta"),
    "pos_bloom_560m": ({"alibi_bias_max": 4, "offset_alibi": 100}, [], "alibi_bias_max"),
    "pos_mpt_30b": ({"attn_config": {"alibi": True, "alibi_slopes": [1]}}, [], "attn_config.alibi_slopes"),
    "pos_m2m100_418m": ({"max_source_positions": 10}, [], "max_source_positions"),
}  # fmt: skip


def test_keys_the_code_never_reads_change_nothing_whatever_their_name(tmp_path):
    """The family's table lists every key its code reads (from transformers' source): another key cannot change
    the table, so it is reported as ignored (kinds), never refused over its name; the table is the same (one test
    over :data:`NEVER_READ`: :func:`tests.each.each` names each failing config)."""

    def check(base):
        (tmp_path / base).mkdir()
        _never_read_changes_nothing(tmp_path / base, base, *NEVER_READ[base])

    each(NEVER_READ, check)


def _never_read_changes_nothing(tmp_path, base, change, args, key):
    cfg = json.loads((CONFIGS / f"{base}.json").read_text())
    (tmp_path / "a.json").write_text(json.dumps(cfg))
    (tmp_path / "b.json").write_text(json.dumps({**cfg, **change}))
    outs = []
    for name in ("a", "b"):
        code, out, err = cli(["generate", "--hf-config", str(tmp_path / f"{name}.json"), "--len", "8", *args,
                              "-o", "-", "--format", "npy"])  # fmt: skip
        assert code == 0, err
        outs.append(out)
    assert outs[0] == outs[1]
    code, out, err = cli(["kinds", "--hf-config", str(tmp_path / "b.json"), *args, "--json"])
    assert code == 0 and key in json.loads(out)["ignored"], err


def test_bert_relative_position_types_are_refused(tmp_path):
    for mt in ("bert", "electra"):
        cfg = {"model_type": mt, "hidden_size": 16, "position_embedding_type": "relative_key"}
        (tmp_path / "c.json").write_text(json.dumps(cfg))
        code, _, err = cli(["kinds", "--hf-config", str(tmp_path / "c.json")])
        assert code == 2 and "position_embedding_type" in err, err


def test_rotary_position_embedding_type_goes_to_the_rope_reader():
    from posenc_cli.models.hf_positions import read_positions

    cfg = {"model_type": "esm", "hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 16,
           "position_embedding_type": "rotary"}  # fmt: skip
    assert read_positions(cfg) is None
    # absolute (ESM's default): its learned table, rows counted from pad_token_id + 1 (issue 36: read from weights)
    reader = read_positions({**cfg, "position_embedding_type": "absolute"})
    assert reader is not None and reader.family.layers["default"].first_row == "pad_token_id+1"


def test_harmless_keys_pass_and_falcon_rope_keys_are_unused_with_alibi(tmp_path):
    cfg = json.loads((CONFIGS / "pos_falcon_rw_1b.json").read_text())
    cfg["rope_theta"] = 10000.0
    (tmp_path / "f.json").write_text(json.dumps(cfg))
    code, _, err = cli(["kinds", "--hf-config", str(tmp_path / "f.json")])
    assert code == 0, err


def test_kind_that_the_model_does_not_use_is_refused():
    code, _, err = cli(["generate", "--kind", "rope", "--hf-config", str(CONFIGS / "pos_bloom_560m.json"),
                        "--len", "4", "-o", "-"])  # fmt: skip
    assert code == 2 and err.startswith("Error: ") and err.count("\n") == 1  # the RoPE reader, strictly


def test_t5_needs_a_length():
    code, _, err = cli(["generate", "--hf-config", str(CONFIGS / "pos_t5_small.json"), "--layer-type", "decoder",
                        "-o", "-"])  # fmt: skip
    assert code == 2 and "pass --len" in err


def test_config_lengths_are_the_models_rows():
    """Without --len, the table has the rows the model adds to its longest input; M2M100/Speech2Text's module
    holds two more (offset rows, padding row), read with rows=buffer (one test over the seven (config, layer
    type) cases: :func:`tests.each.each` names each failing one)."""
    cases = [("pos_marian_en_de", "default"), ("pos_pegasus_large", "default"), ("pos_m2m100_418m", "default"),
             ("pos_s2t_small", "encoder"), ("pos_s2t_small", "decoder"), ("pos_whisper_tiny", "encoder"),
             ("pos_mpt_30b", "default")]  # fmt: skip
    each(cases, lambda case: _config_length_is_the_models_rows(*case))


def _config_length_is_the_models_rows(name, lt):
    layer_type = None if lt == "default" else lt
    buffer = {"params": {"rows": "buffer"}} if name in BUFFERS else {}
    src = open_source(source_path(name), layer_type=layer_type, **buffer)
    shape = [s for s in src.array(src.tensor_name(None)).shape if s != 1]  # ALiBi: heads x 1 x len
    assert shape == [s for s in GOLDEN[name][lt]["shape"] if s != 1]
    if name in BUFFERS:
        added = open_source(source_path(name), layer_type=layer_type)
        assert added.array("pe").shape[0] == shape[0] - 2


# ----- fuzz: mutated configs of these families only ever raise ParameterError -----------------------------------
REAL = {p.stem: json.loads(p.read_text()) for p in sorted(CONFIGS.glob("*.json"))}
# the tiny models of these families (tests/data/models/vision_* are vision tables: tests/test_vision.py)
REAL.update({p.name: json.loads((p / "config.json").read_text()) for p in sorted(MODELS.glob("tiny_*"))})
ODD = [0, -1, 1, 2, 3, 0.5, 1.5, 1e308, -1e308, 2**40, 2**63, float("nan"), float("inf"), True, False, None, "",
       "x", "128", [], [1, 2], {}, {"alibi": "yes"}]  # fmt: skip
KEYS = ["relative_attention_num_buckets", "relative_attention_max_distance", "n_head", "num_attention_heads",
        "n_heads", "hidden_size", "n_embd", "d_model", "max_position_embeddings", "max_seq_len", "n_positions",
        "max_source_positions", "max_target_positions", "pad_token_id", "position_buckets", "max_relative_positions",
        "relative_attention", "alibi", "attn_config", "embedding_size", "dim", "model_type",
        "position_embedding_type"]  # fmt: skip


# (the edits come from a drawn seed, as tests/test_hf_configs.py's fuzz draws them: hypothesis drawing a list of
# tuples itself spent three times as long as the 1000 examples' own work; and its own work for an example, ~1.6 ms,
# was five times the config's: each example now mutates ten configs drawn from its seed, 1000 configs a run)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_fuzz_mutated_configs_raise_only_parameter_error(seed):
    each(drawn(seed, 10, _draw_mutation), lambda case: _mutated_config_raises_only_parameter_error(*case))


def _draw_mutation(rnd: random.Random) -> Mutation:
    name, n_edits = rnd.choice(sorted(REAL)), rnd.randint(1, 3)
    layer, edits = rnd.choice([None, "encoder", "decoder", "default"]), rnd.randrange(2**32)
    return Mutation(name, edits, n_edits, layer)


def _mutated_config_raises_only_parameter_error(name, seed, n_edits, layer):
    from posenc_cli.models.readers import describe_model_config, from_model_config

    rnd = random.Random(seed)
    cfg = json.loads(json.dumps(REAL[name]))
    for _ in range(n_edits):
        keys = [*cfg, *KEYS]  # the config's own keys as often as the position keys of every family
        key, value = rnd.choice(keys), rnd.choice(ODD)
        cfg[key] = json.loads(json.dumps(value)) if isinstance(value, (list, dict)) else value
    try:
        kind, params, *_ = from_model_config(cfg, length=8, layer_type=layer)
        enc = make_encoding(kind, params)
        enc.array(enc.PRIMARY)
        describe_model_config(cfg, layer_type=layer)
    except ParameterError:
        pass


def test_every_single_odd_value_of_every_read_key_is_a_parameter_error():
    """Exhaustive over one edit: each key a family reads (or a shared position key present), each odd value."""
    from posenc_cli.models.hf_positions import FAMILIES as POSITIONS
    from posenc_cli.models.readers import describe_model_config, from_model_config

    for base in REAL.values():
        fam = POSITIONS[base["model_type"]]
        read = {k for layer in fam.layers.values() for keys in layer.keys.values() for k in keys}
        text = json.dumps(base)  # (each edit reads a fresh copy of it)
        for key in sorted((read | set(KEYS)) & set(base) | read):
            for value in ODD:
                cfg = {**json.loads(text), key: json.loads(json.dumps(value))}
                for layer in fam.layers if len(fam.layers) > 1 else [None]:
                    try:
                        kind, params, *_ = from_model_config(cfg, length=8, layer_type=layer)
                        enc = make_encoding(kind, params)
                        enc.array(enc.PRIMARY)
                        describe_model_config(cfg, layer_type=layer)
                    except ParameterError:
                        pass


def test_class_defaults_are_the_config_classes():
    """Every default in the family table is what the family's transformers 5 config class holds (recorded by
    tools/golden/make_hf_positions_golden.py); a key the class lacks falls to the modeling code's getattr default."""
    from posenc_cli.models.hf_positions import FAMILIES as POSITIONS
    from posenc_cli.models.records import inventory_entry

    recorded = json.loads((ROOT / "tests" / "data" / "golden" / "positions_hf.json").read_text())["class_defaults"]
    assert set(recorded) <= set(POSITIONS)
    for name, fam in POSITIONS.items():
        if name not in recorded:  # a learned table the inventory observed: its defaults are the saved config's
            saved = (inventory_entry(name) or {}).get("defaults") or {}
            for layer in fam.layers.values():
                for param, keys in layer.keys.items():
                    if keys[0] in saved:
                        assert layer.defaults[param] == saved[keys[0]], (name, param, keys)
            continue
        cls = recorded[name]
        for layer in fam.layers.values():
            for param, keys in layer.keys.items():
                if param not in layer.defaults:
                    continue
                held = [cls[k] for k in keys if cls.get(k) is not None]
                if held:
                    assert layer.defaults[param] == held[0], (name, param, keys)
                else:  # deberta's position_buckets: getattr(config, "position_buckets", -1) in the modeling code
                    assert (name, param) == ("deberta-v2", "position_buckets"), (name, param)
            if layer.first_row == "pad+1" or "padding_idx" in layer.keys:
                assert cls["pad_token_id"] == 1, name  # the default padding row the code offsets by


def test_read_as_does_not_apply_to_these_families(tmp_path):
    """--read-as is the RoPE reader's opt-in for unknown families: refused by name here, never ignored."""
    out = str(tmp_path / "x.safetensors")
    t5 = ["export", str(CONFIGS / "pos_t5_small.json"), "--len", "4", "--layer-type", "encoder", "-o", out]
    gpt2 = ["export", str(MODELS / "tiny_gpt2"), "-o", out]
    for args in (t5, gpt2):
        code, _, err = cli([*args, "--read-as", "llama"])
        assert code == 2 and "--read-as" in err and "drop it" in err, err
