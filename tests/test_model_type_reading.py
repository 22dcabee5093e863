"""A config is read by its own model type, never by a guess (issue 35, part 3).

A config.json without ``model_type`` is read from its ``architectures`` through transformers' own architecture ->
model type mapping (the inventory's ``architectures``, made by ``tools/inventory/make_inventory.py
--architectures``), or refused in one line naming the architecture and the fix. Model types posenc has no table
for are refused in the model's terms, with a hint only where one fits.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from posenc_cli.errors import ParameterError
from posenc_cli.models.data import architecture_model_type, inventory
from posenc_cli.models.readers import from_model_config

from .conftest import ROOT, cli
from .each import each

CONFIGS = ROOT / "tests" / "data" / "configs"


def _neox_without_model_type() -> dict:
    cfg = {k: v for k, v in json.loads((CONFIGS / "gpt_neox.json").read_text()).items() if not k.startswith("_")}
    del cfg["model_type"]
    return cfg


def test_the_architecture_mapping_is_transformers_own_and_names_real_model_types():
    data = inventory()
    archs = data["architectures"]
    types = data["model_types"]
    assert len(archs) > 1000  # every class of every MODEL_*_MAPPING_NAMES of transformers 5.24
    assert archs["GPTNeoXForCausalLM"] == "gpt_neox" and archs["LlamaForCausalLM"] == "llama"
    assert archs["ViTModel"] == "vit" and archs["KimiLinearForCausalLM"] == "kimi_linear"
    for cls, mt in archs.items():
        for t in [mt] if isinstance(mt, str) else mt:
            assert t in types, (cls, t)
    assert architecture_model_type("NoSuchModelForCausalLM") is None


def test_neox_without_model_type_is_read_as_gpt_neox_by_its_architecture():
    """transformers' GPTNeoXRotaryEmbedding rotates rotary_pct of the head (tests/data/golden/hf_gpt_neox.json,
    made by its own code): 24 of 96 columns, not the whole head a llama reading would rotate."""
    golden = json.loads((ROOT / "tests" / "data" / "golden" / "hf_gpt_neox.json").read_text())["layer_types"]
    kind, params, _warnings, _notes = from_model_config(_neox_without_model_type(), length=16)
    assert kind == "rope" and params["dim"] == 96 and params["partial_rotary_factor"] == 0.25
    from posenc_cli.encodings import make_encoding

    enc = make_encoding(kind, params)
    np.testing.assert_allclose(enc.inv_freq(), golden["default"]["inv_freq"], rtol=1e-6)


def test_kinds_says_where_the_model_type_came_from(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_neox_without_model_type()))
    code, out, err = cli(["kinds", str(path)])
    assert code == 0, err
    text = out.decode()
    assert text.startswith("model_type gpt_neox: read as gpt_neox")
    assert "architectures GPTNeoXForCausalLM" in text and "rotated_dims             24" in text


def test_a_config_without_a_readable_model_type_is_refused_in_one_line(tmp_path_factory):
    each(
        [
            ({"architectures": ["FooForCausalLM"]}, ["'FooForCausalLM'", "no class of transformers"]),
            ({"architectures": None}, ["no model_type and no architectures"]),
            ({"architectures": ["GPTNeoXForCausalLM", "LlamaForCausalLM"]}, ["several model types", "gpt_neox, llama"]),
            ({"architectures": "GPTNeoXForCausalLM"}, ["is not a list of class names"]),
        ],
        lambda c: _a_config_without_a_readable_model_type_is_refused_in_one_line(
            tmp_path_factory.mktemp("case"), c[0], c[1]
        ),
    )


def _a_config_without_a_readable_model_type_is_refused_in_one_line(tmp_path, change, needles):
    cfg = {**_neox_without_model_type(), **change}
    cfg = {k: v for k, v in cfg.items() if v is not None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    for args in (["kinds", str(path)], ["generate", "--hf-config", str(path), "-o", str(tmp_path / "x.npy")],
                 ["audit", str(path), "--engine", "hf"]):  # fmt: skip
        code, out, err = cli(args)
        assert code == 2 and not out, (args, err)
        assert err.count("\n") == 1 and "Traceback" not in err, err
        if args[0] == "audit":  # audit takes no --read-as: the fix it names is the one it has
            assert err.rstrip().endswith("add model_type to config.json") and "read" + "-as" not in err, err
        else:
            assert "add model_type to config.json, or pass --read-as FAMILY" in err, err
        for needle in needles:
            assert needle in err, (needle, err)
    with pytest.raises(ParameterError, match=r"pass read_as=FAMILY"):
        from_model_config(cfg)
    # the fix it names works: read as a family on the user's word
    kind, params, _w, _notes = from_model_config(cfg, read_as="gpt_neox", length=4)
    assert kind == "rope" and params["partial_rotary_factor"] == 0.25


def test_models_without_a_table_are_refused_in_their_own_terms(tmp_path_factory):
    each(
        [
            # (a tower whose placing code the inventory saw is refused naming that code: tests/test_vision_towers.py)
            ("minicpmv4_6_vision", "vision: a learned table (embeddings.position_embedding.weight) added to the token"),
            # ESM's learned table is read now (issue 36); a table posenc does not read is named with what was seen
            (
                "decision_transformer",
                "posenc does not read decision_transformer's position table encoder.wpe.weight (component model)",
            ),
            # (kimi_linear said so from its module names; its forward does not run on meta, so it is unobserved now)
            ("zamba2", "zamba2 applies no positional encoding in any layer"),
            (
                "wav2vec2",
                "positions come from a convolution over the sequence (encoder.pos_conv_embed.conv): there is no "
                "table to write",
            ),
            (
                "swin",
                "swin's positions are a relative position bias per attention window: posenc export DIR writes the index",
            ),
            ("pixtral", "pixtral is a vision tower: its positions are a 2-D rotary over the patch grid (kind rope-2d"),
        ],
        lambda c: _models_without_a_table_are_refused_in_their_own_terms(tmp_path_factory.mktemp("case"), c[0], c[1]),
    )


def _models_without_a_table_are_refused_in_their_own_terms(tmp_path, model_type, said):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type}))
    for args in (["kinds", str(path)], ["audit", str(path)]):
        code, _out, err = cli(args)
        assert code == 2 and said in err and err.count("\n") == 1, err
        assert "read-as" not in err and "read_as" not in err and "FAMILY" not in err, err


def test_an_option_clause_is_left_out_where_the_option_does_not_exist():
    from posenc_cli.errors import option_clause, ref, render_params

    text = "add model_type" + option_clause(f", or pass {ref('read_as')} FAMILY")
    assert render_params(text) == "add model_type, or pass read_as=FAMILY"
    assert render_params(text, {"read_as": "--read-as"}.get) == "add model_type, or pass --read-as FAMILY"
    assert render_params(text, {"read_as": ""}.get) == "add model_type"


def test_an_mla_config_without_model_type_is_refused_not_read_by_its_rope_width():
    """A config without model_type and architectures is refused, whatever rope keys it has (no 'bare' MLA reading
    of qk_rope_head_dim, no generic Llama reading); read_as reads it by that family's rules, the MLA key then one
    the family does not know (said), and every reading names its family."""
    from posenc_cli.models.hf_config import read_model_config

    cfg = {"hidden_size": 512, "num_attention_heads": 8, "qk_rope_head_dim": 32, "max_position_embeddings": 64}
    with pytest.raises(ParameterError, match=r"no model_type and no architectures"):
        from_model_config(cfg)
    model = read_model_config(cfg, read_as="llama")
    assert model.family is not None and model.family.model_type == "llama"
    assert model.report()["reference"] == model.family.reference
    assert model.params(length=4)["dim"] == 64  # llama's head: hidden_size / heads, not qk_rope_head_dim
    assert any("qk_rope_head_dim" in w and "llama" in w for w in model.warnings), model.warnings


def test_an_unobserved_type_is_refused_with_why_the_inventory_could_not_observe_it(tmp_path):
    """A type whose positions the inventory's trace could not see (its forward failed, no tiny instance) is refused
    with the trace's own reason, for every such type: not 'its positions are unobserved, which no record reads'."""
    from posenc_cli.models.records import Refused, derived, inventory_entry

    unobserved = [mt for mt, e in inventory()["model_types"].items() if e.get("scheme") == "unobserved"]
    assert len(unobserved) >= 50  # docs/families.md counts 86
    for mt in unobserved:
        entry = inventory_entry(mt)
        with pytest.raises(Refused) as got:
            derived(mt, entry)
        said = str(got.value)
        assert "which no record of posenc reads" not in said, (mt, said)
        assert str(entry.get("mechanisms_status") or "its modules could not be built or run")[:40] in said, (mt, said)
