"""Every mechanism that places positions, per component, in the inventory (issue 36.1), held against facts made by
the types' own code.

tests/data/inventory/mechanism_facts.json is written once by tools/golden/inventory_mechanism_facts.py in the
side environment, independently of the inventory's tracer: for a sample of each mechanism it builds a tiny CPU
instance, resolves the tensor or module the modeling file's forward uses for positions (named there with the
line that uses it), and records what the running code says (trainable parameter, frozen parameter or buffer;
the output changes when it is perturbed; a convolution's kernel and groups; the calls of the modeling module's
own rotary functions). tests/data/inventory/reclassified.json (tools/inventory/reclassified.py) lists the types
the evidence reclassified, old scheme vs new.
"""

from __future__ import annotations

import json
import re

import pytest

from posenc_cli.models.data import inventory
from posenc_cli.models.mechanisms import describe, has_positions, summary

from .conftest import ROOT, cli
from .each import each

ARRAYS = ROOT / "tests" / "data" / "inventory"
MECHANISMS = {"rotary", "learned", "fixed", "sinusoidal", "convolutional", "relative_bias", "relative", "alibi",
              "queries", "other", "none"}  # fmt: skip
EVIDENCE = re.compile(r"^(trace|trace \(tiny CPU instance( of the component alone)?\)|structure|name)$")
#: every model type issue 36's "Why" names (its "no positions" and "wrong scheme" lists), and the ones its second
#: session found doubtful (the DETR family, evidence by name only, longformer, pegasus_x, fsmt, kosmos-2.5, whisper)
ISSUE_TYPES = {
    "vit", "deit", "dinov2", "dpt", "sam_vision_model", "vivit", "timesformer", "audio-spectrogram-transformer",
    "swin", "swinv2", "vit_mae", "ctrl", "xlnet", "funnel", "wav2vec2-bert", "vjepa2",
    "wav2vec2", "hubert", "data2vec-audio", "sew", "unispeech", "qwen2_audio", "voxtral", "audioflamingo3",
    "rt_detr", "d_fine", "mask2former", "granite_speech", "cpmant", "lightglue", "esm",
    "detr", "conditional_detr", "deformable_detr", "dab-detr", "table-transformer", "sew-d",
    "audioflamingo3_encoder", "roformer", "longformer", "pegasus_x", "fsmt", "kosmos-2.5", "whisper",
}  # fmt: skip


@pytest.fixture(scope="module")
def types():
    return inventory()["model_types"]


@pytest.fixture(scope="module")
def facts():
    return json.loads((ARRAYS / "mechanism_facts.json").read_text())["facts"]


@pytest.fixture(scope="module")
def reclassified():
    return json.loads((ARRAYS / "reclassified.json").read_text())


def _fold(path: str) -> str:
    return re.sub(r"\.\d+(?=\.|$| )", ".*", path)


def test_every_mechanism_record_is_well_formed(types):
    seen = set()
    for mt, rec in types.items():
        for m in rec.get("mechanisms") or []:
            assert m["mechanism"] in MECHANISMS, (mt, m)
            assert EVIDENCE.match(m["evidence"]), (mt, m)
            assert m["component"] in (rec.get("components") or {}), (mt, m)
            seen.add(m["mechanism"])
    assert {"rotary", "learned", "fixed", "sinusoidal", "convolutional", "relative_bias", "relative"} <= seen


def _holder_fits(mech: str, fact: dict) -> bool:
    holder = fact.get("holder")
    if mech == "learned":
        return holder == "parameter"
    if mech == "fixed":  # frozen, or filled by the model's own formula (FSMT's trainable sinusoid table)
        return holder in ("frozen parameter", "buffer") or fact.get("formula") is True
    if mech == "queries":  # a set: permuting its rows permutes the decoder's outputs, where that was run
        return holder == "parameter" and fact.get("set_permutes", True) is True
    if mech == "convolutional":
        conv = fact.get("conv") or {}
        return conv.get("groups", 1) > 1 and max(conv.get("kernel", [1])) > 1
    if mech == "rotary":
        return bool(fact.get("calls"))
    return bool(fact.get("exists"))


def test_the_facts_are_facts(facts):
    """What the running code said fits the mechanism its source names (so a fact that broke is seen here)."""
    assert len({f["mechanism"] for f in facts.values()}) >= 7
    for mt, fact in facts.items():
        assert "error" not in fact, (mt, fact.get("error"))
        if fact["mechanism"] == "none":
            assert isinstance(fact["permutes"], bool), mt
            continue
        assert fact["exists"], mt
        assert _holder_fits(fact["mechanism"], fact), (mt, fact)
        if "formula" in fact:
            assert fact["formula"], mt  # the table holds the model's own formula (sinusoids)
        if fact["mechanism"] in ("learned", "fixed", "relative_bias", "relative", "convolutional", "queries"):
            assert fact["used"], mt  # perturbing the tensor changed the output: the forward reads it


def test_inventory_agrees_with_the_facts(types, facts):
    """Each sampled type's inventory names the mechanism the type's own code uses, at the tensor or module the
    fact names, in the fact's component (at least two types per mechanism)."""
    per: dict[str, int] = {}
    assert {k.split(":")[0] for k in facts} >= ISSUE_TYPES, ISSUE_TYPES - {k.split(":")[0] for k in facts}
    for key, fact in facts.items():
        mt = key.split(":")[0]
        mechs = [m for m in types[mt].get("mechanisms") or [] if m["mechanism"] == fact["mechanism"]]
        assert mechs, (mt, fact["mechanism"], types[mt].get("mechanisms"))
        per[fact["mechanism"]] = per.get(fact["mechanism"], 0) + 1
        if fact["mechanism"] == "none":  # the inventory's own permutation run agrees with the golden one
            assert all(m["mechanism"] == "none" for m in types[mt]["mechanisms"]), mt
            assert (mechs[0].get("confirmed_by") == "permutation") == fact["permutes"], (mt, mechs[0])
            continue
        want = _fold(fact["path_in_model"])
        places = [_fold(p) for m in mechs for p in [m["module"].split(" ")[0], *str(m.get("tensor", "")).split(", ")]]
        comps = {m["component"] for m in mechs}
        assert fact["component"] in comps, (mt, comps)
        if "only" in fact:  # nothing else places positions in that component (read in the modeling file)
            here = {m["mechanism"] for m in types[mt]["mechanisms"] if m["component"] == fact["component"]}
            assert here == set(fact["only"]), (mt, sorted(here))
        if all(m.get("coordinates") for m in mechs):
            continue  # sinusoids of reference points computed from the queries (Conditional DETR): no table named
        assert any(p == want or want.startswith(p + ".") or p.startswith(want + ".") for p in places if p), (
            mt, want, places)  # fmt: skip
    assert all(n >= 2 for n in per.values()), per


def test_issue_s_types_said_to_have_no_positions_have_them(types, reclassified):
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            "vit",
            "deit",
            "dinov2",
            "dpt",
            "sam_vision_model",
            "vivit",
            "timesformer",
            "audio-spectrogram-transformer",
            "swin",
            "vit_mae",
            "ctrl",
            "xlnet",
            "funnel",
            "wav2vec2-bert",
            "vjepa2",
        ],
        lambda case: _issue_s_types_said_to_have_no_positions_have_them(types, reclassified, case),
    )


def _issue_s_types_said_to_have_no_positions_have_them(types, reclassified, model_type):
    """The issue's list (from name tests of an older inventory: main's had fixed some of them by more names);
    now each is placed by evidence: the trace of its own forward saw positions meet the token states."""
    rec = types[model_type]
    assert has_positions(rec) and rec["scheme"] != "none", (model_type, rec.get("mechanisms"))
    traced = [m for m in rec["mechanisms"] if m["mechanism"] != "none" and m["evidence"].startswith("trace")]
    assert traced, (model_type, rec["mechanisms"])
    assert model_type not in reclassified["types"] or reclassified["types"][model_type]["after"] != "none"


def test_issue_s_wrong_schemes_are_the_model_s_mechanisms(types):
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            ("wav2vec2", "model", "convolutional"),
            ("hubert", "model", "convolutional"),
            ("data2vec-audio", "model", "convolutional"),
            ("sew", "model", "convolutional"),
            ("unispeech", "model", "convolutional"),
            ("qwen2_audio", "audio_config", "fixed"),
            ("voxtral", "audio_config", "fixed"),
            ("audioflamingo3", "audio_config", "fixed"),
            ("rt_detr", "model", "sinusoidal"),
            ("d_fine", "model", "sinusoidal"),
            ("granite_speech", "encoder_config", "relative"),
            ("cpmant", "model", "relative_bias"),
            ("lightglue", "model", "rotary"),
            ("esm", "model", "learned"),
        ],
        lambda case: _issue_s_wrong_schemes_are_the_model_s_mechanisms(types, *case),
    )


def _issue_s_wrong_schemes_are_the_model_s_mechanisms(types, model_type, component, mechanism):
    mechs = {(m["component"], m["mechanism"]) for m in types[model_type].get("mechanisms") or []}
    assert (component, mechanism) in mechs, (model_type, sorted(mechs))


def test_esm_is_learned_not_rotary(types):
    """ESM's default position_embedding_type is "absolute": a learned table (the rotary class exists, unused)."""
    assert types["esm"]["scheme"] == "learned"


def test_reclassified_types_are_as_reviewed(types, reclassified):
    """Every reclassified type keeps the classification reviewed in reclassified.json (a re-run that changes one
    must update the file, which shows the change)."""
    for mt, c in reclassified["types"].items():
        rec = types[mt]
        assert rec.get("scheme") == c["after"], mt
        got: dict[str, set[str]] = {}
        for m in rec.get("mechanisms") or []:
            got.setdefault(f"{m['component']} ({m.get('input')})", set()).add(m["mechanism"])
        assert {k: sorted(v) for k, v in got.items()} == c["mechanisms"], mt
    assert all(reclassified["types"][mt]["before"] == "none" for mt in reclassified["none_before"])


def test_no_type_with_positions_is_said_to_have_none(types):
    """``scheme`` none only where no component places positions."""
    for mt, rec in types.items():
        if rec.get("scheme") == "none" and rec.get("mechanisms"):
            assert not has_positions(rec) or all(
                m["mechanism"] == "none" or m.get("input") != "text" for m in rec["mechanisms"]
            ), (mt, rec["mechanisms"])


def test_describe_states_each_component_in_the_model_s_terms(types):
    text = describe("wav2vec2", types["wav2vec2"], "5.24.0")
    assert "positions come from a convolution over the sequence (encoder.pos_conv_embed.conv): there is no table" \
        " to write" in text  # fmt: skip
    vit = describe("vit", types["vit"], "5.24.0")
    assert "a learned table (embeddings.position_embeddings)" in vit and "no positional" not in vit
    qa = dict(summary(types["qwen2_audio"]))
    assert any("fixed table (audio_tower.embed_positions.weight" in t for t in qa["audio"])
    assert any("rotary" in t for t in qa["text"])
    swin = describe("swin", types["swin"], "5.24.0")
    assert "relative bias table" in swin and "relative_position_bias_table" in swin


def test_kinds_names_the_mechanism_it_does_not_read(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text('{"model_type": "wav2vec2"}')
    code, out, err = cli(["kinds", str(cfg)])
    assert code == 2 and out == b""
    assert "convolution over the sequence" in err and "Traceback" not in err
    cfg.write_text('{"model_type": "hunyuan_vl_vision"}')  # (vit's, vivit's, hiera's, pvt's tables are read now)
    code, out, err = cli(["kinds", str(cfg)])
    # its tower's code was seen placing the table (tools/inventory/vision_tables.py): the refusal names it
    assert code == 2 and "HunYuanVLVisionPatchEmbed.interpolate_pos_encoding" in err
    assert "no positional encoding" not in err


def test_the_reclassified_counts_stated_hold_on_the_inventory(types, reclassified):
    """tools/inventory/README.md states issue 36's counts as reproduced on this inventory (said none, have
    positions; another scheme than the model's; still none): each count is its list's length, and each list holds
    on the inventory as it is (a re-run that moves a type shows here until reclassified.py is run again)."""
    text = (ROOT / "tools" / "inventory" / "README.md").read_text()
    block = text.split("<!-- reclassified:", 1)[1].split("<!-- /reclassified -->", 1)[0]
    stated = [int(n) for n in re.findall(r"\*\*(\d+)\*\*", block)]
    assert stated == [len(reclassified[k]) for k in ("none_before", "scheme_changed", "still_none")]
    assert all(has_positions(types[mt]) for mt in reclassified["none_before"])
    assert not any(has_positions(types[mt]) for mt in reclassified["still_none"])
    for mt in reclassified["scheme_changed"]:
        c = reclassified["types"][mt]
        assert c["before"] != c["after"] == types[mt]["scheme"], mt
    for mt in reclassified["none_before"]:
        assert f"| `{mt}` | none |" in block, mt
