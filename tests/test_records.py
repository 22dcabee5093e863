"""Published configs that posenc refused over the names of their keys, or read "like llama", read by their own
records and held against the arrays transformers' own rotary classes made from the same config.json
(tools/golden/make_published_golden.py, transformers 5.24.0); the records' integrity."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from posenc_cli.encodings import make_encoding
from posenc_cli.errors import ParameterError
from posenc_cli.models import records
from posenc_cli.models.hf_config import HEAD_DIM, LAYERS, RULE_STEPS, read_model_config
from posenc_cli.models.readers import describe_model_config, model_config_layers

from .conftest import ROOT, cli
from .each import each

PUBLISHED = ROOT / "tests" / "data" / "configs" / "published"
GOLDEN = json.loads((ROOT / "tests" / "data" / "golden" / "published_rope.json").read_text())["configs"]
ROTARY = sorted(name for name, g in GOLDEN.items() if "layers" in g)


def published(name: str) -> dict:
    return json.loads((PUBLISHED / f"{name}.json").read_text())


def test_published_config_is_read_exactly_as_its_own_class():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(ROTARY, lambda case: _published_config_is_read_exactly_as_its_own_class(case))


def _published_config_is_read_exactly_as_its_own_class(name):
    mc = read_model_config(published(name))
    want = GOLDEN[name]
    assert mc.model_type == want["model_type"]
    rope_types = [lt for lt in mc.layer_types if mc.all_params(1)[lt] is not None]
    for lt, ref in want["layers"].items():
        layer = lt if lt in rope_types else None
        params = mc.params(layer, 8192)
        enc = make_encoding(mc.kind, {**params, "dtype": "float64"})
        inv = np.asarray(ref["inv_freq"], dtype=np.float64)
        np.testing.assert_allclose(enc.inv_freq()[: inv.size], inv, rtol=3e-7, err_msg=f"{name} {lt}")
        assert enc.attention_scaling == pytest.approx(ref["attention_scaling"], rel=1e-6), (name, lt)
        cos = np.asarray(ref["cos"], dtype=np.float64)
        got = np.stack([enc.rows("cos", t, t + 1)[0] for t in ref["positions"]])
        # HF's float32 angles: |t w| 2**-24 at t = 4095 is below 3e-4
        if enc.layout == "half":
            np.testing.assert_allclose(got, cos[:, : got.shape[1]], atol=5e-4, err_msg=f"{name} {lt}")
        else:
            # posenc's interleaved cos is (c0, c0, c1, c1, ...); HF's is that (repeat_interleave) or cat(c, c)
            # with the queries and keys de-interleaved instead (DeepSeek-V3): one frequency per pair either way
            n = got.shape[1]
            repeated = np.array_equal(cos[:, 0:n:2], cos[:, 1:n:2])
            hf = cos[:, 0:n:2] if repeated else cos[:, : n // 2]
            np.testing.assert_allclose(got[:, ::2], hf, atol=5e-4, err_msg=f"{name} {lt}")


IGNORED = {
    "falcon-7b": ["multi_query", "parallel_attn"],
    "moonlight-16b-a3b": ["aux_loss_alpha", "moe_layer_freq"],
    "deepseek-r1-distill-qwen-7b": ["use_mrope"],
    "smollm3-3b": [],
    "minimax-m2": [],
    "granite-4.0-micro": [],
    "ministral-3-8b": ["text_config.rope_parameters.llama_4_scaling_beta"],
    "qwen3-0.6b": ["use_sliding_window"],
}


def test_keys_the_code_never_reads_are_reported_as_ignored_whatever_their_name():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(sorted(IGNORED), _keys_never_read_are_ignored)


def _keys_never_read_are_ignored(name):
    rep = describe_model_config(published(name))
    for key in IGNORED[name]:
        assert key in rep["ignored"], (name, key, rep["ignored"])
        assert "never reads it" in rep["ignored"][key] or key in ATTENTION_ONLY.get(name, ())


#: keys the attention module reads and the rotary class does not (the inventory's attention_keys_read, not its
#: keys_read): transformers 5.24 modeling_falcon.py FalconAttention.__init__ reads ``config.multi_query``
#: (l.232, l.238) where FalconRotaryEmbedding reads max_position_embeddings, rope_parameters, head_dim,
#: hidden_size and num_attention_heads only (l.106-132); modeling_smollm3.py SmolLM3Attention.__init__ reads
#: num_key_value_heads, attention_dropout and attention_bias (l.174-189), SmolLM3RotaryEmbedding none of them.
ATTENTION_ONLY = {"falcon-7b": ("multi_query",), "smollm3-3b": ("attention_bias", "num_key_value_heads")}


def test_keys_only_the_attention_reads_are_not_said_never_read():
    each(sorted(ATTENTION_ONLY), _keys_only_the_attention_reads_are_not_said_never_read)


def _keys_only_the_attention_reads_are_not_said_never_read(name):
    """kinds said "positional code never reads it" of a key the inventory saw the attention read: it says which
    module reads it, and that the rotary class (the table) does not; a key nothing reads keeps "never reads it"."""
    rep = describe_model_config(published(name))
    mt = name.split("-")[0]
    for key in ATTENTION_ONLY[name]:
        assert rep["ignored"][key] == (
            f"transformers' {mt} attention reads it, its rotary class does not: the table does not depend on it"
        ), (key, rep["ignored"].get(key))
    never = [k for k, why in rep["ignored"].items() if "never reads it" in why]
    assert never and not set(never) & set(ATTENTION_ONLY[name]), never


def test_read_keys_are_not_ignored():
    rep = describe_model_config(published("falcon-7b"))
    assert "hidden_size" not in rep["ignored"] and rep["dim"]["value"] == 64
    # alibi is read: false selects FalconRotaryEmbedding
    assert rep["alibi"] == {"value": False, "from": "config key alibi (selects the rotary embedding)"}
    rep = describe_model_config(published("minimax-m2"))
    assert rep["rotated_dims"]["value"] == 64 and "rotary_dim" in rep["partial_rotary_factor"]["from"]
    assert "rotary_dim" not in rep["ignored"]


def test_bloom_offset_alibi_is_never_read():
    from posenc_cli.models.readers import from_model_config

    kind, params, warnings, _ = from_model_config(published("bloom-560m"), length=4)
    assert kind == "alibi" and params["dim"] == 16 and params["form"] == "bloom" and warnings == []
    # build_alibi_tensor of transformers' bloom at key position 3: 2 ** (-8 (k + 1) / 16) * 3
    want = np.asarray(GOLDEN["bloom-560m"]["alibi_row3"])
    np.testing.assert_allclose(3 * 2.0 ** (-8 * np.arange(1, 17) / 16), want, rtol=1e-6)
    assert "offset_alibi" in describe_model_config(published("bloom-560m"))["ignored"]


def test_layers_without_positions_are_named():
    each([("smollm3-3b", "no_rope"), ("granite-4.0-micro", None)], lambda c: _layers_without_positions_are_named(*c))


def _layers_without_positions_are_named(name, nope):
    layers = model_config_layers(published(name), length=4)
    if nope is not None:
        assert layers[nope] is None and any(v is not None for v in layers.values())
        with pytest.raises(ParameterError, match="applies no rotary embedding"):
            read_model_config(published(name)).params(nope, 4)
    else:
        assert all(v is not None for v in layers.values())


def test_smollm3_nope_layers_follow_no_rope_layers():
    # SmolLM3Attention: use_rope = no_rope_layers[layer_idx]; the published file turns off every 4th layer
    c = published("smollm3-3b")
    assert GOLDEN["smollm3-3b"]["no_rope_layers"] == c["no_rope_layers"]
    mc = read_model_config(c)
    assert mc.layer_types == ("full_attention", "no_rope")


def test_granite_without_rope_applies_no_positions():
    c = {**published("granite-4.0-micro"), "position_embedding_type": None}
    with pytest.raises(ParameterError, match="applies no rotary embedding in any layer"):
        read_model_config(c)
    mamba = {**published("granite-4.0-micro"), "layer_types": ["mamba", "attention"] * 20}
    layers = model_config_layers(mamba, length=4)
    # transformers' legacy remap: mamba -> linear_attention (no positions), attention -> full_attention
    assert layers["linear_attention"] is None and layers["full_attention"] is not None


def test_qwen3_and_olmo2_have_their_own_records_and_words(tmp_path_factory):
    each(
        ["qwen3-0.6b", "olmo-2-1124-7b"],
        lambda c: _qwen3_and_olmo2_have_their_own_records_and_words(c, tmp_path_factory.mktemp("case")),
    )


def _qwen3_and_olmo2_have_their_own_records_and_words(name, tmp_path):
    path = PUBLISHED / f"{name}.json"
    out = tmp_path / "t.safetensors"
    code, _, err = cli(["generate", "--hf-config", str(path), "--len", "4", "-o", str(out)])
    assert code == 0 and "Warning" not in err and "like llama" not in err, err
    rep = describe_model_config(published(name))
    assert rep["family"] == published(name)["model_type"]
    assert f"transformers/models/{rep['family']}" in rep["reference"]


def test_a_key_the_inventory_saw_read_and_posenc_does_not_model_is_an_error(monkeypatch):
    entry = {"keys_read": {"default": ["rope_parameters.rope_theta", "head_dim", "rotary_scale_base"]}}
    monkeypatch.setattr(records, "inventory_entry", lambda mt: entry if mt == "qwen3" else None)
    import posenc_cli.models.hf_config as hf

    monkeypatch.setattr(hf, "inventory_entry", records.inventory_entry)
    with pytest.raises(ParameterError, match="rotary_scale_base is read by transformers' qwen3 positional code"):
        read_model_config({**published("qwen3-0.6b"), "rotary_scale_base": 2})
    # one the code never reads passes, reported as ignored
    rep = read_model_config({**published("qwen3-0.6b"), "rotary_fancy": 2}).report()
    assert "rotary_fancy" in rep["ignored"]


# ----- the records' integrity (as scipy's test_WIN_FUNC_DATA_integrity) ---------------------------------------
def test_record_integrity():
    """Every record (:func:`tests.each.each`: each failure named)."""
    each(sorted(records.RECORDS), _record_integrity)


def _record_integrity(name):
    rec = records.RECORDS[name]
    assert rec.model_type == name
    from posenc_cli.encodings import KINDS

    assert rec.scheme in ("rope", "mrope", "wrapper") or set(rec.scheme.split(", ")) <= set(KINDS)
    assert rec.pairing in ("half", "interleaved")
    if rec.positions is not None:  # a non-rotary family (Falcon: both)
        assert rec.positions.name == name and rec.positions.reference.startswith("huggingface/transformers")
    assert "huggingface/transformers src/transformers/models/" in rec.reference
    assert set(rec.rules) <= set(records.RULES) and set(records.RULES) == set(RULE_STEPS)
    assert rec.head_dim in records.HEAD_DIM_RULES and set(records.HEAD_DIM_RULES) == set(HEAD_DIM)
    if rec.layers is not None:
        assert rec.layers[0] in records.LAYER_RULES and set(records.LAYER_RULES) == set(LAYERS)
    if rec.text_model_type is not None:
        assert rec.text_model_type in records.RECORDS
        assert Path(ROOT / "posenc_cli").exists()


def test_no_kind_name_branches_in_models():
    """Nothing in models/ decides by a kind's or a model type's name: the records' data and named rules do."""
    import re

    from posenc_cli.encodings import KINDS

    names = set(KINDS) | set(records.RECORDS)
    compared = re.compile(r"(==|!=)\s*[\"']([\w-]+)[\"']")
    for path in (ROOT / "posenc_cli" / "models").glob("*.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            hits = [m.group(2) for m in compared.finditer(line) if m.group(2) in names]
            assert not hits, f"{path.name}:{n}: {line.strip()}"


def test_every_key_the_source_reads_is_one_the_record_reads():
    """The guard from the source: each key the inventory saw the family's rotary code read (any rope type) is
    one the record models, so no other key can change the table (every rotary record: :func:`tests.each.each`)."""
    each(sorted(n for n, r in records.RECORDS.items() if r.scheme in ("rope", "mrope")), _keys_read_are_the_record_s)


def _keys_read_are_the_record_s(name):
    entry = records.inventory_entry(name)
    if entry is None or not entry.get("keys_read"):
        pytest.skip(f"the inventory observed no rotary reads of {name}")
    rec = records.RECORDS[name]
    prefix = "".join(f"{p}." for p in entry.get("sub_config") or [])
    read = {k.removeprefix(prefix).split(".")[0] for keys in entry["keys_read"].values() for k in keys}
    assert read <= rec.known_top(), sorted(read - rec.known_top())


def test_deepseek_v4_compressed_attention_layers_use_the_compress_table():
    # DeepseekV4Attention.rope_layer_type: sliding layers "main", CSA and HCA layers "compress" (transformers
    # 5.24 modeling_deepseek_v4.py); the tables themselves are held against the class in the coverage test
    cfg = {
        "model_type": "deepseek_v4", "hidden_size": 4096, "num_attention_heads": 64, "head_dim": 512,
        "max_position_embeddings": 1048576,
        "layer_types": ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"],
        "rope_parameters": {
            "main": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.125},
            "compress": {"rope_type": "yarn", "rope_theta": 160000.0, "partial_rotary_factor": 0.125,
                         "factor": 16.0, "original_max_position_embeddings": 65536},
        },
    }  # fmt: skip
    mc = read_model_config(cfg)
    layers = mc.all_params(8)
    assert set(layers) == set(cfg["layer_types"]) and all(p is not None for p in layers.values())
    main, csa, hca = (layers[t] for t in cfg["layer_types"])
    assert main["base"] == 10000.0 and main["scaling"] == "none" and main["partial_rotary_factor"] == 0.125
    assert csa == hca and csa["base"] == 160000.0 and csa["scaling"] == "yarn" and csa["factor"] == 16.0
    assert make_encoding("rope", {**csa, "dtype": "float64"}).rot_dim == 64
    # an entry the config lacks and the class has no default for is refused, never a guessed base
    del cfg["rope_parameters"]["compress"]
    cfg["rope_parameters"]["other"] = {"rope_type": "default"}
    cfg["layer_types"] = ["sliding_attention", "moe"]
    with pytest.raises(ParameterError, match="no entry for layer type 'moe'"):
        read_model_config(cfg)


def test_record_pairing_and_defaults_are_the_inventory_s():
    """A written record agrees with what the inventory observed of the same type's code: the pairing its
    attention applies, and the class defaults of the keys its rotary class reads (every rotary record)."""
    each(
        sorted(n for n, r in records.RECORDS.items() if r.scheme in ("rope", "mrope")),
        _pairing_and_defaults_are_the_inventory_s,
    )


def _pairing_and_defaults_are_the_inventory_s(name):
    entry = records.inventory_entry(name)
    if entry is None or entry.get("status") != "ok" or entry.get("scheme") != "rope":
        pytest.skip(f"the inventory observed no rotary class of {name}")
    rec = records.RECORDS[name]
    observed = entry.get("pairing")
    if observed in ("half", "interleaved", "deinterleave"):
        assert rec.pairing == ("half" if observed == "half" else "interleaved"), observed
    prefix = "".join(f"{p}." for p in entry.get("sub_config") or [])
    raw = {k.removeprefix(prefix): v for k, v in (entry.get("defaults") or {}).items()}
    for key in ("hidden_size", "num_attention_heads", "max_position_embeddings", "head_dim", "qk_rope_head_dim"):
        if key in raw and key in rec.defaults:
            assert rec.defaults[key] == raw[key], key
    for lt, (_, theta) in rec.theta.items():
        key = "rope_parameters.rope_theta" if lt is None else f"rope_parameters.{lt}.rope_theta"
        if key in raw and not rec.has("fixed_base"):
            assert theta == raw[key], key


def test_a_record_never_hides_a_key():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(sorted(p.stem for p in PUBLISHED.glob("*.json")), lambda case: _a_record_never_hides_a_key(case))


def _a_record_never_hides_a_key(name):
    """kinds CONFIG accounts for every key of the (text) config: a value read from it, the switch or layer keys
    it read, or a key ignored with its reason."""
    raw = published(name)
    reports = describe_model_config(raw, layer_type=None) if name != "gemma-3n-e2b" else None
    if reports is None:
        mc = read_model_config(raw)
        reps = [mc.report(lt) for lt in mc.layer_types if mc.all_params(1)[lt] is not None]
    else:
        reps = [reports]
    sub = "text_config." if isinstance(raw.get("text_config"), dict) else ""
    cfg = raw.get("text_config") if sub else raw
    said = " ".join(str(v.get("from")) for r in reps for v in r.values() if isinstance(v, dict) and "from" in v)
    ignored = {k for r in reps for k in r["ignored"]}
    bookkeeping = {"model_type", "architectures", "transformers_version", "torch_dtype", "dtype"}
    for key in cfg:
        full = f"{sub}{key}"
        shown = full in ignored or f"config key {full}" in said or f"{full}." in said or key in bookkeeping
        # a rope dict that is null or empty says nothing; rope_theta/rope_scaling are named where they are read
        shown = shown or (key in ("rope_scaling", "rope_parameters") and not cfg[key])
        assert shown, (name, full)


def test_the_records_are_the_one_family_table():
    """Which reader reads a model type, and the kinds ``--kind`` may name to pick one, come from the records: no
    module of models/ keeps a second table keyed by model type (a family added anywhere but its record fails)."""
    import importlib
    import re
    from collections.abc import Mapping

    from posenc_cli.models import readers
    from posenc_cli.models.data import inventory

    types = set(records.RECORDS) | set(inventory().get("model_types", {}))
    own = [v for v in vars(records).values() if isinstance(v, Mapping)]  # the records' data, imported
    rule_names = set(records.RULES) | set(records.HEAD_DIM_RULES) | set(records.LAYER_RULES)
    # keyed by another namespace whose names happen to be model types' too: llama.cpp's GGUF architectures
    gguf_archs = {r.gguf_arch for r in records.RECORDS.values()} - {None}
    for path in sorted((ROOT / "posenc_cli" / "models").glob("*.py")):
        if path.stem in ("__init__", "records"):
            continue
        module = importlib.import_module(f"posenc_cli.models.{path.stem}")
        for name, value in vars(module).items():
            if not isinstance(value, Mapping) or any(value is v for v in own) or set(value) <= rule_names:
                continue
            if gguf_archs <= set(value):  # llama.cpp's own table of its architectures (llamacpp.ROPE_TYPE)
                continue
            keyed = {k for k in value if isinstance(k, str)} & types
            # a view of the records (hf_positions.FAMILIES) holds their own objects, nothing else
            if keyed and not all(k in records.RECORDS and value[k] is records.RECORDS[k].positions for k in keyed):
                raise AssertionError(f"{path.stem}.{name} is a table keyed by model type: {sorted(keyed)[:5]}")
        text = path.read_text()
        assert not re.search(r"^[A-Z_]+\b.*=\s*\{\s*\n?\s*\"hf_(positions|config)\"", text, re.M), path.name
    # every model type a reader handles is found through its record
    for mt, rec in records.RECORDS.items():
        assert rec.readers, mt
        assert set(rec.readers) <= set(records.reader_names()), mt
        if rec.vision is not None and rec.positions is None:  # a vision table, its own reader
            assert readers.reader_for({"model_type": mt}).__name__.endswith(records.VISION_READER), mt
        elif rec.vision is not None:  # a multimodal wrapper: its text tower's table; the grid with an image size
            assert readers.reader_for({"model_type": mt}).__name__.endswith(records.POSITIONS_READER), mt
            assert records.positions_family(mt) is rec.positions
        elif rec.positions is not None:
            assert records.positions_family(mt) is rec.positions
            config = (
                {"model_type": mt} if rec.positions.when is None else {"model_type": mt, rec.positions.when[0]: True}
            )
            assert readers.reader_for(config).__name__.endswith(rec.readers[0]), mt
        else:
            assert readers.reader_for({"model_type": mt}).__name__.endswith(records.ROTARY_READER), mt
    # --kind picks among the records' own kinds, each reader's
    for name in records.reader_names():
        for kind in records.reader_kinds(name):
            assert readers.reader_for({"model_type": "llama"}, kind).__name__.endswith(name), kind
    assert readers.config_kinds() == ["t5", "alibi", "sinusoidal", "sinusoidal-2d", "deberta", "learned", "rope"]
