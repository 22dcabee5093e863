"""The transformers inventory (posenc_cli/models/data/transformers_inventory.json) and its reference arrays
(tests/data/inventory/), both made once by tools/inventory/make_inventory.py from transformers 5.24's own code.

Integrity: every CONFIG_MAPPING type has a record (the names' count and hash, recorded at generation, are checked
against the records), versions are recorded, every reference a record names exists with every array it names.
Values: the cos/sin each rotary class produced are checked against its own inv_freq and attention scaling by an
independent float64 computation; facts of the modeling code known from its source (pairings, NoPE layers,
sub-config paths) against the observed records.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from posenc_cli.models.data import inventory, model_type_record

from .conftest import ROOT
from .test_inventory_coverage import TOOL as VERIFY_RECORDS

ARRAYS = ROOT / "tests" / "data" / "inventory"
SCHEMES = {"rope", "rotary", "alibi", "relative", "convolutional", "sinusoidal", "fixed", "learned", "other", "none",
           "unobserved"}  # fmt: skip
PAIRINGS = {"half", "interleaved", "deinterleave", "other", "identity", "unobserved"}


@pytest.fixture(scope="module")
def data():
    return inventory()


@pytest.fixture(scope="module")
def index():
    return json.loads((ARRAYS / "index.json").read_text())


@pytest.fixture(scope="module")
def rope_arrays():
    """rope.npz's arrays (read-only), read once in a process: tools/verify_records.py's, which the coverage test
    reads too (its reader takes half np.load's time over 1797 small members)."""
    return VERIFY_RECORDS.arrays()


@pytest.fixture(scope="module")
def position_arrays():
    return VERIFY_RECORDS.read_npz(ARRAYS / "positions.npz")


def test_every_config_mapping_type_has_a_record(data):
    names = sorted(data["model_types"])
    assert len(names) == data["config_mapping"]["count"] > 800
    assert hashlib.sha1("\n".join(names).encode()).hexdigest() == data["config_mapping"]["sha1"]
    for mt, rec in data["model_types"].items():
        assert rec["model_type"] == mt and rec["config_class"].endswith("Config"), mt
        assert rec["scheme"] in SCHEMES, (mt, rec["scheme"])
        assert rec["status"] == "ok" or rec["scheme"] == "unobserved" or rec["status"], mt
    assert model_type_record("llama") is data["model_types"]["llama"]
    assert model_type_record("no-such-type") is None


def test_one_loader_reads_the_inventory_once(monkeypatch):
    """The records and the inventory's callers share one loader: the 2.4 MB file is parsed once per process."""
    import json

    from posenc_cli.models import records

    assert records.inventory is inventory and records.inventory_entry is model_type_record
    data = inventory()

    def no_second_load(*args, **kwargs):
        raise AssertionError("the inventory was parsed a second time")

    monkeypatch.setattr(json, "load", no_second_load)
    monkeypatch.setattr(json, "loads", no_second_load)
    entry = records.inventory_entry("llama")
    assert entry is not None and entry is model_type_record("llama") is data["model_types"]["llama"]
    records.inventory_config("qwen3_moe")
    assert records.inventory() is data and inventory.cache_info().misses == 1


def test_versions_are_recorded(data, index):
    assert data["transformers_version"] == index["transformers_version"] == "5.24.0"
    assert data["torch_version"] == index["torch_version"] == "2.13.0"
    assert data["generator"] == index["generator"] == "tools/inventory/make_inventory.py"


def test_with_transformers_installed_the_names_are_its_config_mapping():
    transformers = pytest.importorskip("transformers")
    if transformers.__version__ != inventory()["transformers_version"]:
        pytest.skip(f"transformers {transformers.__version__} is not the inventory's")
    assert sorted(transformers.CONFIG_MAPPING.keys()) == sorted(inventory()["model_types"])


def test_rope_records_are_complete(data, index):
    rope = {mt: r for mt, r in data["model_types"].items() if r["scheme"] == "rope"}
    assert len(rope) > 250
    for mt, rec in rope.items():
        assert rec["rotary_class"] and rec["rotary_module_file"].startswith("models."), mt
        assert rec["pairing"].split(":")[0] in PAIRINGS, (mt, rec["pairing"])
        if rec["status"] != "ok":
            continue
        assert "default" in rec["rope_types"] or rec["rope_types"], mt
        assert set(rec["keys_read"]) == set(rec["rope_types"]), mt
        assert rec["reference"] == mt and set(index["rope"][mt]) == set(rec["rope_types"]), mt
        prefix = ".".join(rec["sub_config"] or [])
        for key in rec["defaults"]:
            assert not prefix or key.startswith(prefix + "."), (mt, key)
        read = {k for keys in rec["keys_read"].values() for k in keys}
        ignored = {k.removeprefix(prefix + ".") if prefix else k for k in rec.get("ignored_keys", [])}
        assert not (read & ignored), (mt, read & ignored)


def test_every_reference_exists(data, index, rope_arrays, position_arrays):
    for mt, rec in data["model_types"].items():
        if rec.get("reference"):
            assert rec["reference"] in index["rope"], mt
    for mt, per_type in index["rope"].items():
        assert mt in data["model_types"]
        for rt, per_layer in per_type.items():
            for lt, e in per_layer.items():
                for name in ("cos", "sin", "inv_freq"):
                    if name in e:
                        assert e[name] in rope_arrays, (mt, rt, lt, name)
                cos = rope_arrays[e["cos"]]
                assert cos.dtype == np.float32 and cos.shape == rope_arrays[e["sin"]].shape
                assert (cos.shape[0] == len(e["positions"])) is e["rows_are_positions"], (mt, rt, lt)
    for name, e in index["positions"].items():
        for key in ("bias", "slopes", "added", "weight", "buffer"):
            if key in e:
                assert e[key] in position_arrays, (name, key)
    size = sum(p.stat().st_size for p in ARRAYS.iterdir())
    assert size < 8 * 2**20, size


def _angles_cover(cos, sin, inv_freq, scale, positions):
    """The float64 cos/sin of positions x inv_freq (the class's own float32 frequencies), laid out as the class's
    columns (each frequency's pair of columns found by matching), within the float32 angle's rounding."""
    t = np.asarray(positions, dtype=np.float64)[:, None]
    w = inv_freq.astype(np.float64)
    ang = t * w
    want_c = np.cos(ang) * scale
    want_s = np.sin(ang) * scale
    # float32 angle t*w: error up to half an ulp of the angle, plus the float32 cos/sin rounding
    tol = (np.abs(ang) * 2.0**-23 + 2.0**-22) * abs(scale) + 1e-7
    return want_c, want_s, tol


def test_reference_cos_sin_follow_their_own_frequencies(data, index, rope_arrays):
    """Each stored default-type table against an independent float64 computation from its own inv_freq: every
    column of cos/sin is one of the frequencies' (half layout: [w, w]; interleaved: repeat_interleave)."""
    checked = 0
    for mt, per_type in index["rope"].items():
        for lt, e in per_type.get("default", {}).items():
            if "inv_freq" not in e or e.get("attention_scaling") is None or not e["rows_are_positions"]:
                continue
            if "rope_parameters.mrope_section" in data["model_types"][mt]["keys_read"]["default"]:
                continue  # multimodal sections: the columns come from three position axes
            cos, sin = rope_arrays[e["cos"]], rope_arrays[e["sin"]]
            w = rope_arrays[e["inv_freq"]]
            if cos.ndim != 2 or cos.shape[1] != 2 * len(w):
                continue  # multimodal sections or partial layouts: per-type tests
            half = np.concatenate([w, w])
            inter = np.repeat(w, 2)
            for layout in (half, inter):
                wc, ws, tol = _angles_cover(cos, sin, layout, e["attention_scaling"], e["positions"])
                if np.all(np.abs(cos - wc) <= tol) and np.all(np.abs(sin - ws) <= tol):
                    checked += 1
                    break
            else:
                raise AssertionError(f"{mt} {lt}: cos/sin are not cos/sin of positions x inv_freq")
    assert checked > 200


def test_a_wrong_frequency_fails_the_cross_check(index, rope_arrays):
    e = index["rope"]["llama"]["default"]["default"]
    cos, w = rope_arrays[e["cos"]], rope_arrays[e["inv_freq"]].copy()
    w[5] *= 1.0001
    wc, _, tol = _angles_cover(cos, cos, np.concatenate([w, w]), 1.0, e["positions"])
    assert not np.all(np.abs(cos - wc) <= tol)


# ----- facts of the modeling code, known from its source ---------------------------------------------------------
#: each type's pairing, read from its modeling code
PAIRINGS_OF = [
    ("llama", "half"), ("qwen2", "half"), ("gemma3", "half"), ("phi", "half"),
    ("cohere", "interleaved"),  # repeat_interleave of cos/sin, rotate_half on pairs
    ("glm", "interleaved"),
    ("gptj", "interleaved"),  # rotate_every_two
    ("llama4", "interleaved"),  # view_as_complex of consecutive pairs
    ("deepseek_v3", "deinterleave"),  # rope_interleave: q/k de-interleaved, then rotate_half
]  # fmt: skip


def test_pairings_observed_are_the_codes(data):
    wrong = {
        mt: data["model_types"][mt]["pairing"]
        for mt, pairing in PAIRINGS_OF
        if data["model_types"][mt]["pairing"] != pairing
    }
    assert wrong == {}, wrong


def test_layers_without_positions_are_observed(data):
    mts = data["model_types"]
    assert mts["cohere2"]["layer_positions"] == {"full_attention": "none", "sliding_attention": "rope"}
    assert mts["llama4"]["layer_positions"]["full_attention"] == "none"
    smol = mts["smollm3"]
    assert smol["layer_positions"] == {"full_attention": "none/rope"}
    assert smol["layer_rope"][3::4] == ["none"] * len(smol["layer_rope"][3::4])  # every 4th layer: NoPE
    assert mts["llama"]["layer_positions"] == {"default": "rope"}


def test_composite_types_name_their_sub_config(data):
    mts = data["model_types"]
    assert mts["gemma3"]["sub_config"] == ["text_config"] and mts["gemma3"]["text_model_type"] == "gemma3_text"
    assert mts["llama4"]["sub_config"] == ["text_config"]
    assert mts["llama"]["sub_config"] is None
    g3 = mts["gemma3"]
    assert "text_config.rope_parameters.full_attention.rope_theta" in g3["defaults"]
    assert g3["rotary_dim"] == g3["head_dim"] == 256


def test_keys_read_are_observed_per_rope_type(data):
    llama = data["model_types"]["llama"]
    assert "rope_parameters.factor" not in llama["keys_read"]["default"]
    assert {"rope_parameters.low_freq_factor", "rope_parameters.high_freq_factor"} <= set(llama["keys_read"]["llama3"])
    assert "rope_parameters.beta_fast" in llama["keys_read"]["yarn"]
    assert "vocab_size" in llama["ignored_keys"] and "rope_parameters.rope_theta" not in llama["ignored_keys"]
    phi = data["model_types"]["phi"]
    assert phi["rotary_dim"] == phi["head_dim"] // 2  # partial_rotary_factor 0.5


def test_the_attentions_reads_are_observed(data):
    mts = data["model_types"]
    assert "rope_interleave" in mts["deepseek_v3"]["attention_keys_read"]
    smol = mts["smollm3"]
    assert "no_rope_layers" in smol["attention_keys_read"]
    assert "no_rope_layer_interval" in smol["ignored_keys"]  # read by the config class only, never by the model
    assert "rope_parameters.partial_rotary_factor" in mts["phi"]["attention_keys_read"]


def test_rotary_classes_returning_sin_first_and_half_width(data, index, rope_arrays):
    gptj = data["model_types"]["gptj"]
    assert gptj["rotary_returns"] == "sin, cos" and gptj["pairing"] == "interleaved"
    assert (gptj["cos_width"], gptj["rotary_dim"], gptj["head_dim"]) == (32, 64, 256)
    e = index["rope"]["gptj"]["default"]["default"]
    assert 0 in e["positions"] and max(e["positions"]) < gptj["max_position_embeddings"]  # its cache's rows
    row0 = e["positions"].index(0)
    np.testing.assert_array_equal(rope_arrays[e["cos"]][row0], 1.0)
    np.testing.assert_array_equal(rope_arrays[e["sin"]][row0], 0.0)


def test_schemes_of_known_families(data):
    known = [("bloom", "alibi"), ("mpt", "alibi"), ("t5", "relative"), ("gpt2", "learned"), ("opt", "learned"),
             ("m2m_100", "sinusoidal"), ("marian", "sinusoidal"), ("mamba", "none"), ("falcon", "rope")]  # fmt: skip
    wrong = {
        mt: data["model_types"][mt]["scheme"] for mt, scheme in known if data["model_types"][mt]["scheme"] != scheme
    }
    assert wrong == {}, wrong
    assert data["model_types"]["falcon"]["also"] == "alibi"


def test_non_rotary_schemes_name_the_keys_their_position_modules_read(data):
    mts = data["model_types"]
    t5 = mts["t5"]
    assert {"relative_attention_num_buckets", "relative_attention_max_distance"} <= set(t5["position_keys_read"])
    assert t5["defaults"]["relative_attention_num_buckets"] == 32
    bert = mts["bert"]
    assert {"max_position_embeddings", "pad_token_id"} <= set(bert["position_keys_read"])
    assert "num_attention_heads" in bert["ignored_keys"] and "max_position_embeddings" not in bert["ignored_keys"]


def test_partial_rotation_inside_the_apply_function_is_half_on_the_rotated_block(data):
    """apply_rotary_pos_emb slicing q[..., :rot_dim] itself: the rotated block pairs (i, i + rot_dim/2), the
    rest passes through (judged over the whole head, this was 'other')."""
    for model_type in ("qwen3_next", "bamba", "nemotron"):
        rec = data["model_types"][model_type]
        assert rec["pairing"] == "half" and rec["rotary_dim"] < rec["head_dim"], model_type
