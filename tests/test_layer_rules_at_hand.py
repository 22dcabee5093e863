"""A layer rule observed at a type's default config is re-derived from the config given (issue 36, part 5).

Which layers rotate, and with which RoPE, is read from the config at hand: its ``layer_types``, or the period
keys a record's rule reads (Cohere2's and Gemma 3's legacy ``sliding_window_pattern``, Llama 4's and SmolLM3's
``no_rope_layer_interval``), and the attention keys the inventory's probes saw change which layers rotate
(``sliding_window: null``: Cohere2 rotates no layer, Exaone 4 every layer). A config that leaves the types to its
config class's own code, for a type whose layers differ in rotation and of which posenc has no rule, is refused by
name.

Held against tests/data/golden/layer_rules.json (tools/golden/make_layer_rule_golden.py, run once in the side
environment): for 7 non-default configs of 6 types, the cos/sin each decoder layer's own attention applies in a
forward of a tiny instance (null: the layer calls no apply function), from transformers 5.24's code.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import numpy as np
import pytest

from posenc_cli.encodings import make_encoding
from posenc_cli.errors import ParameterError
from posenc_cli.models.hf_config import read_model_config

from .conftest import ROOT, cli
from .each import each

GOLDEN = json.loads((ROOT / "tests" / "data" / "golden" / "layer_rules.json").read_text())
N = GOLDEN["positions"]
RAN = {name: case for name, case in GOLDEN["cases"].items() if "layers" in case}


@cache
def tables(name: str) -> tuple[tuple[str, ...], dict[str, Any]]:
    """posenc's per-layer types and each rotating type's (cos, sin) rows 0..N-1, built once per case."""
    model = read_model_config(RAN[name]["config"])
    out: dict[str, Any] = {}
    for lt, params in model.all_params(N).items():
        if params is not None:
            enc = make_encoding(model.kind, params)
            out[lt] = (enc.rows("cos", 0, N).astype(np.float64), enc.rows("sin", 0, N).astype(np.float64), params)
    return model.layers, out


def test_each_layer_rotates_as_the_models_own_forward():
    each(sorted(RAN), _each_layer_rotates_as_the_models_own_forward)


def _each_layer_rotates_as_the_models_own_forward(name):
    golden = RAN[name]["layers"]
    layers, by_type = tables(name)
    assert len(layers) == len(golden), (layers, name)
    for i, (lt, ref) in enumerate(zip(layers, golden, strict=True)):
        if ref is None:
            assert lt not in by_type, f"{name}: layer {i} ({lt}) applies no RoPE in transformers"
            continue
        assert lt in by_type, f"{name}: layer {i} ({lt}) rotates in transformers"
        cos, sin, params = by_type[lt]
        want_cos, want_sin = np.asarray(ref["cos"]), np.asarray(ref["sin"])
        if ref["complex"]:  # freqs_cis (Llama 4): one column per pair, as posenc's interleaved pairs
            assert params["layout"] == "interleaved"
            cos, sin = cos[:, ::2], sin[:, ::2]
        w = want_cos.shape[1]  # the rotated features (Qwen3-Next: a quarter of the head)
        # float32 angles t*w for t < 12: |error| below 1e-6
        np.testing.assert_allclose(cos[:, :w], want_cos, atol=2e-6, err_msg=f"{name} layer {i}")
        np.testing.assert_allclose(sin[:, :w], want_sin, atol=2e-6, err_msg=f"{name} layer {i}")
        if not ref["complex"]:
            assert cos.shape[1] >= w


def test_the_goldens_are_not_all_the_default_rule():
    """Each case differs from its type's default layer rule (else the test above would hold without re-deriving)."""
    patterns = {n: tuple(x is None for x in c["layers"]) for n, c in RAN.items()}
    assert patterns["cohere2_pattern3"] == (False, False, True, False, False, True, False)  # default: every 4th
    assert patterns["exaone4_types"] == (False, True, True, False, False, True)
    assert patterns["exaone4_no_window"] == (False, False, False)  # default observation: full layers apply none
    assert patterns["qwen3_next_types"] == (False, True, False, False, True)
    gemma = RAN["gemma3_text_pattern3"]["layers"]
    assert gemma[2]["cos"] != gemma[1]["cos"]  # full (base 1e5) and sliding (base 100) layers differ


def test_a_window_of_none_leaves_cohere2_no_layer_to_rotate():
    # transformers' forward refuses sliding layers without a window (the golden records its error); with
    # full layers only and no window, Cohere2Attention rotates nothing
    assert "error" in GOLDEN["cases"]["cohere2_no_window"]
    with pytest.raises(ParameterError, match="no layer applies a rotary embedding"):
        read_model_config(GOLDEN["cases"]["cohere2_no_window"]["config"])


def test_a_window_of_another_integer_is_read_as_the_probed_ones():
    cfg = dict(RAN["cohere2_pattern3"]["config"])
    report = read_model_config(cfg).report()
    assert "4096 and 8192 (probed)" in report["ignored"]["sliding_window"]


def test_layer_types_left_to_the_config_class_are_refused_by_name():
    each(
        [
            (
                {
                    "model_type": "qwen3_next",
                    "num_hidden_layers": 8,
                    "head_dim": 16,
                    "hidden_size": 64,
                    "num_attention_heads": 4,
                },
                "Qwen3NextConfig",
            ),
            (
                {"model_type": "exaone4", "num_hidden_layers": 8, "hidden_size": 64, "num_attention_heads": 4},
                "Exaone4Config",
            ),
            (
                {"model_type": "granitemoehybrid", "num_hidden_layers": 4, "position_embedding_type": "rope"},
                "GraniteMoeHybridConfig",
            ),
        ],
        lambda c: _layer_types_left_to_the_config_class_are_refused_by_name(*c),
    )


def _layer_types_left_to_the_config_class_are_refused_by_name(config, cls):
    with pytest.raises(ParameterError) as exc:
        read_model_config(config)
    msg = str(exc.value)
    assert "\n" not in msg and cls in msg and "add layer_types" in msg, msg


def test_the_refusal_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "exaone4", "num_hidden_layers": 8}))
    code, out, err = cli(["kinds", "--hf-config", str(path)])
    assert code == 2 and out == b"", err
    assert len(err.strip().splitlines()) == 1 and "Exaone4Config" in err and "Traceback" not in err, err


# ----- the attention probes: keys whose value changes which layers rotate ----------------------------------------
def _layer_probes() -> list[tuple[str, str, Any, list[str]]]:
    """(model type, key, probed value, each probed layer's rope/none) for every probe of the inventory that changed
    which layers rotate and nothing else (found from the data, not typed)."""
    from posenc_cli.models.data import inventory
    from posenc_cli.models.records import inventory_entry

    out = []
    for mt in sorted(inventory()["model_types"]):
        probes = (inventory_entry(mt) or {}).get("attention_probes") or []
        for p in probes[1:]:
            ((key, value),) = p["set"].items()
            same_function = p["apply_functions_called"] in ([], probes[0]["apply_functions_called"])
            if p["layer_rope"] != probes[0]["layer_rope"] and same_function:
                out.append((mt, key, value, p["layer_rope"]))
    return out


def test_a_probed_value_re_derives_which_layers_rotate():
    from posenc_cli.models.records import inventory_entry

    cases = _layer_probes()
    assert {mt for mt, *_ in cases} >= {"cohere2", "cohere2_moe", "exaone4", "kolibri1"}, cases
    checked = 0
    for mt, key, value, rope in cases:
        lts = inventory_entry(mt)["layer_types"]
        cfg = {"model_type": mt, "layer_types": lts[: len(rope)], "num_hidden_layers": len(rope), key: value}
        by_type: dict[str, set[str]] = {}
        for lt, r in zip(lts, rope):
            by_type.setdefault(lt, set()).add(r)
        try:
            model = read_model_config(cfg)
        except ParameterError as exc:
            if "no layer applies" in str(exc):  # every layer NoPE at this value
                assert set(rope) == {"none"}, (mt, key)
            else:  # refused by name where one layer type has layers of both kinds (Mistral Large 4's flags)
                assert f"config key {key}=" in str(exc) and "does not re-derive" in str(exc), str(exc)
                assert any(len(v) > 1 for v in by_type.values()), (mt, key)
            checked += 1
            continue
        nope = {lt for lt in model.layer_types if lt not in model.all_params(1) or model.all_params(1)[lt] is None}
        # the probes built the first layers (a list of flags may name more)
        assert [("none" if lt in nope else "rope") for lt in model.layers[: len(rope)]] == rope, (mt, key, value)
        checked += 1
    assert checked >= 4


def test_a_probed_key_at_a_value_not_observed_is_refused_by_name():
    each(
        [
            ({"model_type": "deepseek_v3", "rope_interleave": "false"}, "rope_interleave='false'"),  # a string: truthy
            (
                {"model_type": "exaone4", "sliding_window": "4096", "layer_types": ["full_attention"]},
                "sliding_window='4096'",
            ),
        ],
        lambda c: _a_probed_key_at_a_value_not_observed_is_refused_by_name(*c),
    )


def _a_probed_key_at_a_value_not_observed_is_refused_by_name(config, key):
    """A value of a kind the probes never tried, of a key whose other values change the pairing or the layers."""
    with pytest.raises(ParameterError) as exc:
        read_model_config(config)
    msg = str(exc.value)
    assert key in msg and config["model_type"] in msg and "\n" not in msg, msg


def test_a_probed_null_re_derives_the_pairing():
    # DeepseekV3Attention: apply_rotary_pos_emb_interleave if config.rope_interleave else apply_rotary_pos_emb
    # (rotate_half): null is the latter, as the inventory's probe of the optional key saw
    assert read_model_config({"model_type": "deepseek_v3"}).params(None, 1)["layout"] == "interleaved"
    model = read_model_config({"model_type": "deepseek_v3", "rope_interleave": None})
    assert model.params(None, 1)["layout"] == "half"
