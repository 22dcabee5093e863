"""Write docs/families.md: every model type of transformers' inventory and what posenc does with its positions.

    python tools/families.py           # rewrite docs/families.md
    python tools/families.py --check   # exit 1 when docs/families.md is stale (tests/test_families_doc.py)

The rows come from the records (posenc_cli/models/records.py: written ones and those derived from the inventory),
the non-rotary table (posenc_cli/models/hf_positions.py) and the inventory itself
(posenc_cli/models/data/transformers_inventory.json, made by tools/inventory). A rotating type's status is what
posenc does with its default config: "exact" (read; tests/test_inventory_coverage.py holds the table against the
arrays its own class made, for every rope type it supports) or "refused: why".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DOC = ROOT / "docs" / "families.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _read_by_its_towers_code(mt: str) -> bool:
    """A vision tower type with no record whose table is read by the rule of the code it runs (models/vision.py,
    from the inventory's ``vision_table``)."""
    from posenc_cli.errors import ParameterError
    from posenc_cli.models.vision import observed, reading

    if not observed(mt) or any(e.get("component") != "model" for e in observed(mt)):
        return False  # a wrapper (its language model is what it is read as without --image-size)
    try:
        reading({"model_type": mt})
    except ParameterError:
        return False
    return True


def rows() -> list[tuple[str, str, str, str, str, str]]:
    """(model type, scheme, pairing, layer types, reference, status) of every model type."""
    from posenc_cli.errors import ParameterError
    from posenc_cli.models import records
    from posenc_cli.models.hf_config import read_model_config
    from posenc_cli.models.hf_positions import FAMILIES as POSITIONS

    inv = records.inventory().get("model_types", {})
    index = ROOT / "tests" / "data" / "inventory" / "index.json"
    arrays = set(json.loads(index.read_text()).get("rope", {})) if index.is_file() else set()
    out = []
    for mt in sorted(set(inv) | set(records.RECORDS) | set(POSITIONS)):
        entry = inv.get(mt) or {}
        scheme = str(entry.get("scheme") or "")
        rec = records.RECORDS.get(mt)
        ref = f"{entry.get('modeling_module', '')} {entry.get('rotary_class') or ''}".strip()
        pairing, layers = "-", "-"
        if rec is not None and rec.vision is not None:  # a ViT-family table on an image grid (models/vision.py)
            scheme = "learned (image grid)"
            status = "exact (vision record; the model's own arrays in tests/data/vision)"
            tower = rec
            while tower is not None and tower.vision is not None and tower.vision.tower is not None:
                tower = records.RECORDS.get(tower.vision.tower[1])
            if tower is not None and tower.vision is not None and tower.vision.not_read:
                # the table is exact, and the model also places positions in a way posenc does not read
                status = f"partial (vision record: its table exact; not read: {tower.vision.not_read})"
            ref = ref or rec.reference
        elif rec is None and _read_by_its_towers_code(mt):  # models/vision.py: the rule of the code it runs
            scheme = "learned (image grid)"
            status = "exact (vision: the rule of the code its tower runs; a sample's own arrays in tests/data/vision)"
        elif mt in records.VISION_ROTARY:  # a vision tower's own config: its 2-D rotary (models/vision_rope.py)
            scheme = f"rope-2d ({records.VISION_ROTARY[mt].preset})"
            status = "exact (vision tower, --grid or --image-size; the tower's own rotations in tests/data/vision)"
            ref = ref if entry.get("modeling_module") else records.VISION_ROTARY[mt].reference
        elif mt in records.WINDOW_BIAS:  # a relative bias per attention window (models/vision_bias.py)
            scheme = "window relative bias"
            status = (
                "exact (index from the config, -p table=bias from the weights; the model's own in tests/data/vision)"
            )
            ref = ref if entry.get("modeling_module") else records.WINDOW_BIAS[mt].reference
        elif mt in records.DECOMPOSED:  # per-axis relative positions taken with the queries (models/vision_bias.py)
            scheme = "decomposed relative positions"
            status = (
                "exact (index from the config, -p table=bias rel_pos_h/w from the weights; the model's own in "
                "tests/data/vision); its learned pos_embed is not read"
            )
            ref = ref if entry.get("modeling_module") else records.DECOMPOSED[mt].reference
        elif mt in POSITIONS:
            fam = POSITIONS[mt]
            scheme = ", ".join(sorted({layer.kind for layer in fam.layers.values()}))
            layers = ", ".join(fam.layers) if len(fam.layers) > 1 else "-"
            status = "exact"
            ref = ref or fam.reference.split(" ", 1)[1] if " " in fam.reference else fam.reference
        elif scheme == "rope" or (rec is not None and rec.scheme != "wrapper"):
            scheme = "rope"
            try:
                cfg = records.inventory_config(mt) if entry else None
                if cfg is None:
                    raise ParameterError("not in the inventory; read by its record (tests/test_records.py)")
                mc = read_model_config(cfg)
                if mt in arrays:
                    status = "exact"
                elif rec is not None:
                    status = "exact (record; golden arrays in tests/data/golden)"
                else:
                    status = "read, not verified (no reference arrays)"
                used = mc.family
                pairing = used.pairing if used is not None else "-"
                nope = [lt for lt, p in mc.all_params(1).items() if p is None]
                layers = ", ".join(mc.layer_types) + (f" (none: {', '.join(nope)})" if nope else "")
                if layers == "default":
                    layers = "-"
                scheme = mc.kind
            except ParameterError as exc:
                msg = str(exc)
                status = ("refused: " + msg.split("rotary tables: ", 1)[-1].split("; pass ")[0]) if entry else msg
                if rec is not None:
                    status = "exact (record; published configs in tests/test_records.py)"
                    pairing = rec.pairing
        elif scheme in ("none",):
            status = "no positions"
        elif scheme == "unobserved":
            why = entry.get("status") if entry.get("status") != "ok" else entry.get("mechanisms_status")
            status = "not observed: " + str(why or "")[:80]
        elif rec is not None:  # a wrapper: its text model's row says it
            scheme, status = "wrapper", f"reads {rec.text_model_type}"
        else:
            status = f"refused: no record reads its {scheme} positions"
        out.append((mt, scheme or "-", pairing, layers, ref or (rec.reference if rec else "-"), status))
    return out


#: the order mechanisms are listed in (tools/inventory/mechanisms.py names them)
MECHANISMS = ("rotary", "learned", "fixed", "sinusoidal", "convolutional", "relative_bias", "relative", "alibi",
              "other", "queries", "none")  # fmt: skip


def mechanism_counts() -> tuple[list[str], dict[str, dict[str, int]], dict[str, int]]:
    """(inputs, {mechanism: {input: model types}}, {mechanism: model types}) from the inventory's
    ``mechanisms``: a type counts once per mechanism and component input (text, vision, audio, ...)."""
    from posenc_cli.models import records

    inv = records.inventory().get("model_types", {})
    seen: dict[str, dict[str, set[str]]] = {}
    total: dict[str, set[str]] = {}
    for mt, entry in inv.items():
        for m in entry.get("mechanisms") or []:
            mech, what = str(m["mechanism"]), str(m.get("input") or "other")
            seen.setdefault(mech, {}).setdefault(what, set()).add(mt)
            total.setdefault(mech, set()).add(mt)
    inputs = sorted({w for per in seen.values() for w in per}, key=lambda w: (w != "text", w))
    counts = {m: {w: len(seen.get(m, {}).get(w, ())) for w in inputs} for m in MECHANISMS if m in seen}
    counts.update({m: {w: len(v.get(w, ())) for w in inputs} for m, v in seen.items() if m not in counts})
    return inputs, counts, {m: len(v) for m, v in total.items()}


def mechanism_lines() -> list[str]:
    inputs, counts, total = mechanism_counts()
    if not counts:
        return []
    lines = [
        "## Mechanisms by component",
        "",
        "Every mechanism that places positions, per component input, as `tools/inventory/mechanisms.py` observed "
        "it by running each type's own code (a type counts once per mechanism and input; a type with several "
        "components or mechanisms counts in several cells; `queries`: learned query vectors, a set that places no "
        "positions of the input (DETR's object queries); `none`: a component whose forward ran and placed no "
        "positions).",
        "",
        "| mechanism | " + " | ".join(inputs) + " | model types |",
        "| --- | " + " | ".join("---:" for _ in inputs) + " | ---: |",
    ]
    for mech, per in counts.items():
        lines.append(f"| {mech} | " + " | ".join(str(per[w]) for w in inputs) + f" | {total[mech]} |")
    return lines + [""]


def build() -> str:
    from posenc_cli.models import records

    table = rows()
    exact = sum(1 for r in table if r[5].startswith("exact"))
    refused = sum(1 for r in table if r[5].startswith("refused"))
    rope_exact = sum(1 for r in table if r[5].startswith("exact") and r[1] in ("rope", "mrope"))
    rope_refused = sum(1 for r in table if r[5].startswith("refused") and r[1] in ("rope", "mrope"))
    none = sum(1 for r in table if r[5] == "no positions")
    unverified = sum(1 for r in table if r[5].startswith("read, not verified"))
    unobserved = sum(1 for r in table if r[5].startswith("not observed"))
    partial = sum(1 for r in table if r[5].startswith("partial"))
    version = records.inventory().get("transformers_version", records.TRANSFORMERS_VERSION)
    lines = [
        "# Model families",
        "",
        f"_Generated by `tools/families.py` from the records (`posenc_cli/models/records.py`), the non-rotary table "
        f"(`posenc_cli/models/hf_positions.py`) and the inventory of transformers {version} "
        "(`posenc_cli/models/data/transformers_inventory.json`, made by `tools/inventory`); "
        "`tests/test_families_doc.py` fails when it is stale._",
        "",
        f"Of {len(table)} model types: **{exact} exact**, **{refused} refused** (one line naming what is missing), "
        f"{none} apply no positions, {unobserved} could not be observed, {unverified} read without reference "
        f"arrays, {partial} partial (a table read exactly beside a mechanism posenc does not read). Of the rotating "
        f"types: {rope_exact} exact, {rope_refused} refused.",
        "",
        '"exact": posenc reads the type\'s config, and `tests/test_inventory_coverage.py` holds the table against the '
        "arrays its own rotary class made at its default config, for every rope type the class supports (or "
        "`tests/test_records.py` / `tests/test_hf_positions.py` against published configs; a learned table: "
        "`tests/test_learned_tables.py` reads a tiny model folder of the type and holds it against the rows its "
        'own forward added). "refused": '
        "`posenc` answers in one line, exit 2, and writes nothing.",
        "",
        *mechanism_lines(),
        "| model type | scheme | pairing | layer types | reference | status |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in table:
        lines.append("| " + " | ".join(_cell(c) for c in (f"`{row[0]}`", *row[1:])) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = build()
    if "--check" in argv:
        if not DOC.is_file() or DOC.read_text() != text:
            print(f"{DOC.relative_to(ROOT)} is stale; run python tools/regen_docs.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
