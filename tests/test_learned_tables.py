"""Learned position tables read from a model directory by the one generic reader (issue 36 part 2).

Each model type whose inventory record has a ``learned_table`` (observed by tools/inventory/learned_rows.py
running the model's forward) is read from its tiny model folder and held against the rows that model's own
forward added to tokens 0..N-1 (tests/data/golden/learned_tables.json, made once by
tools/golden/make_learned_golden.py in the side environment, which names each type's folder). The rows are a
gather of stored float32 values, so they are compared exactly.
"""

from __future__ import annotations

import json
import shutil
from functools import cache

import numpy as np
import pytest

from posenc_cli.models.data import inventory
from posenc_cli.models.records import RECORDS
from posenc_cli.sources import open_source

from .conftest import ROOT, cli
from .each import each

MODELS = ROOT / "tests" / "data" / "models"
GOLDEN = json.loads((ROOT / "tests" / "data" / "golden" / "learned_tables.json").read_text())["types"]


@cache
def golden_rows() -> dict[str, np.ndarray]:
    """The rows each type's own module adds (learned_tables.npz), loaded when a test first asks."""
    with np.load(ROOT / "tests" / "data" / "golden" / "learned_tables.npz") as z:
        return {k: z[k] for k in z.files}


CASES = [(mt, lt) for mt, g in sorted(GOLDEN.items()) for lt in g["layers"]]
#: the types issue 36 names as refused before the generic reader, and the ones read by hand-typed records
NAMED = ("albert", "megatron-bert", "ernie", "layoutlm", "camembert", "mpnet", "xmod", "plbart", "mvp", "blenderbot",
         "biogpt", "openai-gpt", "imagegpt", "xlm", "clip_text_model", "gpt2", "bert", "roberta", "xlm-roberta",
         "electra", "distilbert", "gpt_neo", "gpt_bigcode", "bart", "mbart", "opt")  # fmt: skip


def folder(mt: str) -> str:
    return str(MODELS / GOLDEN[mt]["fixture"])


@cache
def read(mt: str, lt: str) -> tuple[np.ndarray, dict[str, str]]:
    src = open_source(folder(mt), layer_type=None if lt == "default" else lt)
    return np.asarray(src.array(src.names[0])), dict(src.metadata)


def test_the_rows_the_model_adds():
    """Every type and layer of the goldens (:func:`tests.each.each`: each failure named)."""
    each(CASES, lambda case: _the_rows_the_model_adds(*case))


def _the_rows_the_model_adds(mt, lt):
    g = GOLDEN[mt]["layers"][lt]
    got, meta = read(mt, lt)
    want = golden_rows()[g["rows"]]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert meta["first_row"] == str(g["first_row"]) and meta["weights_tensor"].endswith(g["tensor"])


def learned_types() -> list[str]:
    return sorted(
        mt for mt, r in RECORDS.items() if r.positions and any(x.learned for x in r.positions.layers.values())
    )


def test_every_learned_record_has_a_golden_and_the_named_types_are_read():
    golden_rules = {_rule(RECORDS[mt].positions.layers[lt]) for mt, lt in CASES}

    def tower_with_golden_rule(mt: str) -> bool:
        # a wrapper read through its tower's record (records.tower_family: OmDet-Turbo's CLIP text model, under
        # its prefix): held by the golden of a type with the same observed rule, as the walk below holds towers
        layers = [x for x in RECORDS[mt].positions.layers.values() if x.learned]
        return all(x.prefix and _rule(x) in golden_rules for x in layers)

    missing = [mt for mt in learned_types() if mt not in GOLDEN and mt != "whisper" and not tower_with_golden_rule(mt)]
    assert not missing, f"run tools/golden/make_learned_golden.py: {missing}"
    assert not [mt for mt in NAMED if mt not in GOLDEN]


def test_every_inventory_type_with_a_learned_table_is_read_or_refused_in_one_line():
    from posenc_cli.models.records import Refused, record_for

    types = inventory()["model_types"]
    seen = 0
    for mt, entry in types.items():
        if "learned" not in (entry.get("position_modules") or {}):
            continue
        seen += 1
        try:
            rec = record_for(mt)
        except Refused as exc:
            assert "\n" not in str(exc) and str(exc)
            continue
        assert rec is not None, mt
    assert seen > 40


def _rule(layer) -> tuple:
    """The observed rule of a learned layer: which row token 0 gets (a number, or a config key + n, the key's
    sub-config left out), the offset rows, the padding row's form, whether a factor applies."""
    first, pad = layer.first_row, layer.padding_row
    first = first.rsplit(".", 1)[-1] if isinstance(first, str) else first
    return (first, layer.table_rows, None if pad is None else type(pad).__name__, layer.scale != 1.0)


def _one_per_rule() -> list[tuple[str, str]]:
    """The first golden (type, layer) of each observed rule."""
    out: dict[tuple, tuple[str, str]] = {}
    for mt, lt in CASES:
        if RECORDS[mt].origin == "inventory":  # (Whisper's hand-written record reads its encoder's sinusoids too)
            out.setdefault(_rule(RECORDS[mt].positions.layers[lt]), (mt, lt))
    return sorted(out.values())


#: the wrappers' towers that keep a fixed table (tests/data/models/towers/, make_fixed_relative_golden.py --towers)
TOWERS = sorted(p.name for p in (MODELS / "towers").iterdir())


def test_every_non_vision_table_in_the_inventory_is_read_or_refused_by_name():
    """Issue 36: every model type whose inventory ``mechanisms`` saw a learned or fixed table in a text, audio or
    other non-vision component is read by a record (its own or its tower's; a learned one with a golden and a
    tiny folder of its own or of a type with the same observed rule), or refused in one line naming the table,
    its component and what the observation saw (never a bare "no record reads it")."""
    from posenc_cli.models.records import Refused, covers, record_for, table_mechanisms, tower_family, unread_line

    golden_rules = {_rule(RECORDS[mt].positions.layers[lt]) for mt, lt in CASES}
    read, refused, bad = set(), set(), []
    for mt, entry in sorted(inventory()["model_types"].items()):
        tables = table_mechanisms(entry)
        if not tables:
            continue
        try:
            rec, why = record_for(mt), None
        except Refused as exc:
            rec, why = None, str(exc)
        fam = rec.positions if rec is not None else None
        towers = tower_family(mt)
        line = why if rec is None else unread_line(mt, fam)
        for comp, _, tensor in tables:
            owner = next((f for f in (fam, towers) if f is not None and covers(f, tensor)), None)
            if owner is not None:
                layer = owner.layers[covers(owner, tensor)]
                if layer.learned and _rule(layer) not in golden_rules:
                    bad.append((mt, tensor, f"read by the rule {_rule(layer)}, which no golden holds"))
                read.add(mt)
                continue
            refused.add(mt)
            if (
                not line
                or "\n" in line
                or tensor not in line
                or f"component {comp}" not in line
                or "no record of posenc reads" in line
            ):
                bad.append((mt, tensor, line))
    assert not bad, "\n".join(map(str, bad))
    assert len(read) > 120 and refused, (len(read), len(refused))


def test_a_refused_table_is_one_line_naming_it_exit_2(tmp_path):
    from posenc_cli.models.records import Refused, record_for, unread_tables

    mt = "decision_transformer"  # its forward takes states, actions and timesteps, not input_ids
    with pytest.raises(Refused):
        record_for(mt)
    (comp, tensor, _), *_ = unread_tables(mt)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": mt}))
    code, out, err = cli(["kinds", "--hf-config", str(tmp_path)])
    assert code == 2 and out == b"" and err.count("\n") == 1, err
    assert tensor in err and f"component {comp}" in err and "no record of posenc reads" not in err, err


def test_the_cli_exports_a_type_posenc_had_no_record_for(tmp_path):
    out = tmp_path / "albert.npy"
    code, _, err = cli(["export", folder("albert"), "-o", str(out)])
    assert code == 0, err
    np.testing.assert_array_equal(np.load(out), golden_rows()["albert:default"])
    code, _, err = cli(["export", "--hf-config", folder("camembert"), "--len", "3", "-o", str(tmp_path / "c.npy")])
    assert code == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), golden_rows()["camembert:default"][:3])


def test_the_old_goldens_cross_check_the_new_reader():
    """The folders of make_hf_positions_golden.py, read through the inventory's records, equal the rows that
    tool captured from each model's own position module."""
    old = json.loads((ROOT / "tests" / "data" / "golden" / "positions_hf.json").read_text())["tables"]
    for name in ("tiny_roberta", "tiny_opt", "tiny_bart", "tiny_electra"):
        for lt, g in old[name].items():
            src = open_source(str(MODELS / name), layer_type=None if lt == "default" else lt)
            np.testing.assert_array_equal(src.array(src.names[0]), np.asarray(g["values"], np.float32))


# ----- bad input: one line naming the tensor and both shapes, exit 2 --------------------------------------------
def _copy(mt: str, tmp_path):
    d = tmp_path / mt
    shutil.copytree(folder(mt), d)
    return d


def _export(d) -> tuple[int, str]:
    code, out, err = cli(["export", str(d), "-o", str(d / "out.npy")])
    assert out == b""
    return code, err


def test_weights_without_the_tensor(tmp_path):
    from safetensors.numpy import load_file, save_file

    d = _copy("albert", tmp_path)
    w = load_file(str(d / "model.safetensors"))
    save_file({k: v for k, v in w.items() if "position" not in k} or {"x": np.zeros(1, np.float32)},
              str(d / "model.safetensors"))  # fmt: skip
    code, err = _export(d)
    assert code == 2 and err.count("\n") == 1 and "embeddings.position_embeddings.weight" in err, err


def test_a_table_narrower_or_shorter_than_the_config_says(tmp_path_factory):
    each(
        [("embedding_size", 8), ("max_position_embeddings", 30)],
        lambda c: _a_table_narrower_or_shorter_than_the_config_says(tmp_path_factory.mktemp("case"), c[0], c[1]),
    )


def _a_table_narrower_or_shorter_than_the_config_says(tmp_path, key, value):
    d = _copy("albert", tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    shape = [cfg["max_position_embeddings"], cfg["embedding_size"]]
    cfg[key] = value
    (d / "config.json").write_text(json.dumps(cfg))
    code, err = _export(d)
    want = [cfg["max_position_embeddings"], cfg["embedding_size"]]
    assert code == 2 and err.count("\n") == 1, err
    assert str(shape) in err and str(want) in err and key in err and "position_embeddings.weight" in err


def test_offset_rows_are_part_of_the_shape_the_config_says(tmp_path):
    d = _copy("opt", tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["max_position_embeddings"] += 2  # the table holds max_position_embeddings + 2 rows: now 2 short
    (d / "config.json").write_text(json.dumps(cfg))
    code, err = _export(d)
    assert code == 2 and "+ 2 offset rows" in err and "embed_positions.weight" in err, err


def test_a_padding_row_that_is_not_zero(tmp_path):
    from safetensors.numpy import load_file, save_file

    d = _copy("camembert", tmp_path)
    w = load_file(str(d / "model.safetensors"))
    name = next(k for k in w if k.endswith("position_embeddings.weight"))
    pad = json.loads((d / "config.json").read_text())["pad_token_id"]
    assert not w[name][pad].any()  # the model's init keeps it zero
    w[name] = w[name].copy()
    w[name][pad, 0] = 0.5
    save_file(w, str(d / "model.safetensors"))
    code, err = _export(d)
    assert code == 2 and err.count("\n") == 1 and f"row {pad} is not zero" in err and name in err, err


# ----- audit: each learned table held against its config and its properties --------------------------------------
def _audit(d) -> tuple[int, dict]:
    code, out, err = cli(["audit", str(d), "--json"])
    return code, json.loads(out) if out else {"err": err}


def test_audit_checks_a_learned_table_against_its_config(tmp_path):
    code, data = _audit(_copy("bart", tmp_path))
    assert code == 0, data
    rows = {r["layer_type"]: r for r in data["rows"]}
    assert set(rows) == {"encoder", "decoder"} and all(r["verdict"] == "agree" for r in rows.values())
    config = next(d for d in rows["encoder"]["details"] if d.startswith("config: "))
    assert "width 16 (config key d_model)" in config and "14 rows (config key max_position_embeddings + 2)" in config
    code, data = _audit(_copy("camembert", tmp_path))
    assert code == 0 and "padding row 1 zero (config key pad_token_id)" in data["rows"][0]["details"][0]


def test_audit_holds_each_rules_table_against_its_config():
    """Issue 36 part 6, one type per observed rule: the audit reads the table from the weights, holds its width,
    rows (with the offset rows) and padding row against the config keys the inventory saw them follow, and
    checks its properties (one test over the (model type, layer type) cases: :func:`tests.each.each` names each
    failing one)."""
    each(_one_per_rule(), lambda case: _audit_holds_the_rules_table(*case))


def _audit_holds_the_rules_table(mt, lt):
    code, data = _audit(folder(mt))
    assert code == 0, data
    row = next(r for r in data["rows"] if r["layer_type"] == lt or len(data["rows"]) == 1)
    layer = RECORDS[mt].positions.layers[lt]
    g = GOLDEN[mt]["layers"][lt]
    config = next(d for d in row["details"] if d.startswith("config: "))
    assert row["verdict"] == "agree" and "every required property holds" in row["explanation"], row
    assert f"width {g['shape'][1]} (config key {layer.keys['dim'][0]})" in config, config
    if layer.table_rows is not None:
        assert f"{g['shape'][0]} rows (config key {layer.keys['length'][0]} + {layer.table_rows})" in config, config
    if layer.padding_row is not None:
        assert "padding row " in config and " zero (" in config, config


def test_audit_checks_a_towers_fixed_table():
    """A wrapper's audio tower (Qwen2-Audio, Voxtral, Audio Flamingo 3, Music Flamingo: Whisper's sinusoids in
    ``audio_tower.embed_positions.weight``; the Qwen-Omni thinkers: a buffer never saved) is held against its
    formula at the tower's config, beside the wrapper's own rotary tables (one test over :data:`TOWERS`:
    :func:`tests.each.each` names each failing type)."""
    each(TOWERS, _audit_checks_the_towers_table)


def _audit_checks_the_towers_table(mt):
    from posenc_cli.models.records import tower_family

    stored = (MODELS / "towers" / mt / "model.safetensors").exists()
    code, out, err = cli(["audit", str(MODELS / "towers" / mt), "--engine", "hf", "--json"])
    assert code == (0 if stored else 1), err  # a buffer never saved: nothing compared (exit 1, said)
    rows = [r for r in json.loads(out)["rows"] if r["layer_type"] in tower_family(mt).layers]
    assert rows, out
    for row in rows:
        if stored:
            assert row["verdict"] == "agree" and row["length"] == 10, row
            assert "audio_tower.embed_positions.weight (10 x 16 float32) equals the formula" in row["explanation"]
        else:
            assert row["verdict"] == "skipped" and "non-persistent buffer" in row["explanation"], row


def test_a_towers_stored_table_that_is_not_the_formula(tmp_path):
    from safetensors.numpy import load_file, save_file

    d = tmp_path / "qwen2_audio"
    shutil.copytree(MODELS / "towers" / "qwen2_audio", d)
    w = load_file(str(d / "model.safetensors"))
    save_file({k: np.zeros_like(v) for k, v in w.items()}, str(d / "model.safetensors"))
    code, out, _ = cli(["audit", str(d), "--engine", "hf", "--json"])
    (row,) = [r for r in json.loads(out)["rows"] if r["layer_type"] == "audio"]
    assert code == 1 and row["verdict"] == "differ" and "all zeros" in row["explanation"], row
    w = {k: v[:8] for k, v in w.items()}  # 8 rows where audio_config.max_source_positions says 10
    save_file(w, str(d / "model.safetensors"))
    code, out, _ = cli(["audit", str(d), "--engine", "hf", "--json"])
    (row,) = [r for r in json.loads(out)["rows"] if r["layer_type"] == "-"]
    assert row["verdict"] == "error" and "8 x 16" in row["explanation"] and "10 x 16" in row["explanation"], row


def test_audit_names_a_table_shorter_than_its_config(tmp_path):
    d = _copy("biogpt", tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["max_position_embeddings"] += 5
    (d / "config.json").write_text(json.dumps(cfg))
    code, data = _audit(d)
    assert code != 0, data
    (row,) = data["rows"]
    assert row["verdict"] == "error" and "embed_positions.weight has shape [14, 16]" in row["explanation"]
    assert "says [19, 16]" in row["explanation"], row


def test_the_whole_table_and_its_row_roles_for_readers_that_build_on_it():
    from posenc_cli.models.config_file import load_config
    from posenc_cli.models.readers import learned_tensor

    for mt, pad, first in (("camembert", 1, 2), ("opt", None, 2), ("bert", None, 0)):
        d = folder(mt)
        table, layout = learned_tensor(d, load_config(d))
        assert layout["padding_row"] == pad and layout["first_row"] == first and list(table.shape) == layout["shape"]
        assert layout["offset_rows"] == [r for r in range(first) if r != pad]
        lt = next(iter(GOLDEN[mt]["layers"]))
        np.testing.assert_array_equal(table[first:], golden_rows()[f"{mt}:{lt}"])


def test_the_goldens_are_of_the_records_layers():
    for mt, g in GOLDEN.items():
        assert set(g["layers"]) <= set(RECORDS[mt].positions.layers), mt


def test_the_key_a_first_row_follows_is_read_not_ignored():
    code, out, err = cli(["kinds", "--hf-config", folder("camembert"), "--json"])
    assert code == 0, err
    report = json.loads(out)
    assert report["first_row"] == {
        "value": 2,
        "from": "config key pad_token_id + 1 (positions start after padding_idx)",
    }
    assert "pad_token_id" not in report["ignored"] and "vocab_size" in report["ignored"]
