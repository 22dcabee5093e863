"""Vision towers read by the reviewed rule of the code they run (the inventory's ``vision_table`` observation).

tools/inventory/vision_tables.py ran each inventory type's tower once at a size that is not its native one and
noted which function resized its learned table, with a fingerprint of that function's normalized source;
posenc_cli/models/vision.py reads a type by the record whose ``Vision.fingerprints`` hold it, with the tensor
prefix and sub-config observed, and refuses any other by name. Goldens: tools/golden/vision_models.py --towers
(tiny random models of a sample of every rule and every wrapper path, saved by transformers 5.24, and the rows the
module holding the table adds to a zero image at seven sizes, by its own forward).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from posenc_cli.errors import ParameterError
from posenc_cli.inspect.diagnose.resampling import noise
from posenc_cli.models.config_file import load_config
from posenc_cli.models.data import inventory
from posenc_cli.models.records import RECORDS, REVIEWED_REFUSALS
from posenc_cli.models.vision import claims, observed, reading, vision_table

from .conftest import cli
from .each import each

DATA = Path(__file__).resolve().parent / "data"
MODELS = DATA / "models"


@cache
def goldens() -> dict[str, np.ndarray]:
    with np.load(DATA / "vision" / "tower_goldens.npz") as z:
        return {k: z[k] for k in z.files}


@cache
def learned_vision_types() -> tuple[str, ...]:
    """Every inventory type whose ``mechanisms`` saw a learned table in a vision component, and every type whose
    component fed features (Qwen3-VL's tower: flattened patches and their grid) the observer saw place a table on
    an image grid (its ``vision_table``)."""
    types = inventory()["model_types"]
    return tuple(
        sorted(
            mt
            for mt, e in types.items()
            if any(m.get("input") == "vision" and m.get("mechanism") == "learned" for m in e.get("mechanisms") or [])
            or e.get("vision_table")
        )
    )


def towers() -> list[str]:
    """The towers of the goldens (read when a test asks: collecting this module opens no npz)."""
    return sorted({k.split("|")[0] for k in goldens() if k.count("|") == 2})


# ----- every type: read, or refused by name ---------------------------------------------------------------------
def test_every_learned_vision_table_is_read_or_refused_by_name() -> None:
    read, refused = [], []
    for mt in learned_vision_types():
        try:
            r = reading({"model_type": mt})
        except ParameterError as exc:
            text = str(exc)
            assert "\n" not in text and mt in text, text
            methods = [e["method"] for e in observed(mt) if e.get("method")]
            if len(observed(mt)) == 1 and methods and "could not be observed" not in text:
                assert methods[0] in text, text  # the class and method that place the positions
            refused.append(mt)
            continue
        assert r.vision.tensor and (RECORDS.get(mt) is not None or r.reference.count(mt) >= 1), mt
        read.append(mt)
    assert len(learned_vision_types()) >= 160 and len(read) >= 90, (len(read), refused)


def test_each_reviewed_fingerprint_is_the_code_its_record_was_read_from() -> None:
    """A record's fingerprints are observed in the inventory (a transformers release that changes the code
    changes the fingerprint: the type is then refused, never read by a stale rule), and its own type's
    observation (where it has one) is one of them."""
    seen = {e.get("fingerprint") for mt in learned_vision_types() for e in observed(mt)}
    for mt, rec in RECORDS.items():
        if rec.vision is None or not rec.vision.fingerprints:
            continue
        assert set(rec.vision.fingerprints) <= seen, mt
        own = [e["fingerprint"] for e in observed(mt) if e.get("fingerprint")]
        assert not own or own[0] in rec.vision.fingerprints, (mt, own)
    assert set(REVIEWED_REFUSALS) <= seen


def test_the_observed_call_is_the_rules() -> None:
    """Where the observation saw ``F.interpolate`` run, its mode, align_corners, antialias and size-vs-factor
    are the reviewed rule's (two independent readings: the running code and the record)."""
    checked = 0
    for mt in learned_vision_types():
        try:
            r = reading({"model_type": mt})
        except ParameterError:
            continue
        entries = observed(mt) or ({},)
        if len(entries) != 1:
            continue  # a table with per-frame or per-layer companions: tests/test_vision_rules.py holds its record
        (entry,) = entries
        call = entry.get("resize")
        if RECORDS.get(mt) is not None and RECORDS[mt].vision is not None and RECORDS[mt].vision.tower is not None:
            continue  # a wrapper's record: its tower's rule is checked on the tower's type
        rule = r.vision.resampling
        if rule is None or rule[0] == "bucket":
            # a model with another position mechanism (SAM's decomposed relative positions, resized by get_rel_pos
            # with mode="linear" in the same forward) may show that call: the observer sees the call, not its tensor
            assert call is None or r.vision.not_read, (mt, call)
            continue
        if call is None:
            continue
        assert (call["mode"], bool(call["align_corners"]), call["antialias"], call["by"]) == rule, (mt, call, rule)
        checked += 1
    assert checked >= 60


def test_a_wrapper_is_its_text_model_unless_an_image_size_is_asked() -> None:
    assert not claims({"model_type": "llava"}) and claims({"model_type": "llava"}, "336")
    assert claims({"model_type": "idefics2_vision"})  # a tower alone: its table is all it has


# ----- rows against each type's own code -----------------------------------------------------------------------
def test_tower_rows_match_the_models_own_code() -> None:
    """Every tower (:func:`tests.each.each`: each failure named)."""
    each(towers(), _tower_rows_match_the_models_own_code)


def _tower_rows_match_the_models_own_code(model: str) -> None:
    path = str(MODELS / f"vision_{model}")
    config = load_config(path)
    sizes = sorted(k.split("|")[2] for k in goldens() if k.startswith(model + "|"))
    assert "native" in sizes and (len(sizes) >= 4 or reading(config).vision.resampling is None), sizes
    assert len(sizes) == 1 or any(len(set(s.split("x"))) == 2 for s in sizes if s != "native")
    for size in sizes:
        rows, _ = vision_table(path, config, image_size=None if size == "native" else size)
        want = goldens()[f"{model}|hf|{size}"]
        assert rows.shape == want.shape, (size, rows.shape, want.shape)
        assert np.abs(rows - want).max() <= noise(want), (size, np.abs(rows - want).max())


def test_the_output_names_the_code_it_was_read_by(tmp_path: Path) -> None:
    out = tmp_path / "t.safetensors"
    code, _, err = cli(["export", str(MODELS / "vision_llava"), "--image-size", "24x12", "-o", str(out)])
    assert code == 0, err
    from posenc_cli.formats import read_table

    meta = read_table(str(out)).metadata
    assert meta["weights_tensor"].endswith("vision_tower.embeddings.position_embedding.weight")
    assert (
        "CLIPVisionEmbeddings.interpolate_pos_encoding" in meta["reference"] and "vision_tables.py" in meta["reference"]
    )


def test_a_tower_with_code_no_rule_was_read_from_is_refused_in_one_line(tmp_path: Path) -> None:
    refused = next(
        mt
        for mt in learned_vision_types()
        if len(observed(mt)) == 1
        and observed(mt)[0].get("method")
        and observed(mt)[0]["component"] == "model"
        and not any(
            observed(mt)[0]["fingerprint"] in (r.vision.fingerprints if r.vision else ()) for r in RECORDS.values()
        )
        and RECORDS.get(mt) is None
    )
    (tmp_path / "config.json").write_text(f'{{"model_type": "{refused}"}}')
    code, _, err = cli(["kinds", "--hf-config", str(tmp_path)])
    assert code == 2 and err.count("\n") == 1, err
    assert f"{refused}'s vision tower places positions with {observed(refused)[0]['method']}" in err


def test_the_docs_table_of_towers_is_fresh() -> None:
    """docs/vision.md's generated block is what tools/vision_doc.py makes of the records and the inventory."""
    from posenc_cli.models.vision import towers_markdown

    text = (DATA.parent.parent / "docs" / "vision.md").read_text()
    block = text.split("<!-- towers:begin (tools/vision_doc.py) -->\n", 1)[1].split("<!-- towers:end -->", 1)[0]
    assert block == towers_markdown(), "docs/vision.md is stale: run python tools/vision_doc.py"
