"""The model types whose classification the evidence-based mechanisms changed (issue 36.1), for review and tests.

    git show b75f68b:posenc_cli/models/data/transformers_inventory.json > /tmp/old_inventory.json
    python tools/inventory/reclassified.py /tmp/old_inventory.json

``b75f68b`` is the inventory issue 36 describes (ViT, DeiT, DINOv2 said to have no positions): its ``scheme`` came
from name tests ("pos" in a leaf name, "sinusoid" in a class name, ...). The next version (61d9e89) widened the
name tests (ViT's table by name), and the one before the 'classify' merge (000d3ec^1) kept them: against it only
17 types said none have positions, as the README's block says too. This compares it with the
current ``scheme`` and ``mechanisms`` and writes

* tests/data/inventory/reclassified.json: ``{model_type: {before, after, mechanisms: {component: [...]}}}`` for
  every type whose scheme changed or that was said to have no positions while a component has some, and
  ``none_before`` (said none, has positions), ``scheme_changed`` (another scheme before, not the model's),
  ``still_none`` (none before and now: ``{type: how it is confirmed}``);
* the generated block of tools/inventory/README.md between ``<!-- reclassified -->`` markers: the counts and
  lists (issue 36's "62 said none" and "32 wrong scheme", reproduced on this inventory).

tests/test_inventory_mechanisms.py holds the inventory to the JSON and the README's counts to both, so a re-run
that changes a classification shows up as a reviewed diff of these files.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "posenc_cli" / "models" / "data" / "transformers_inventory.json"
OUT = ROOT / "tests" / "data" / "inventory" / "reclassified.json"
README = ROOT / "tools" / "inventory" / "README.md"
BEGIN, END = "<!-- reclassified: tools/inventory/reclassified.py writes this block -->", "<!-- /reclassified -->"
#: mechanisms that place no positions of the input
NO_POSITIONS = ("none", "queries")


def mechanisms(entry: dict) -> dict[str, list[str]]:
    out: dict[str, set[str]] = {}
    for m in entry.get("mechanisms") or []:
        out.setdefault(f"{m['component']} ({m.get('input')})", set()).add(m["mechanism"])
    return {k: sorted(v) for k, v in sorted(out.items())}


def has_positions(entry: dict) -> bool:
    return any(m.get("mechanism") not in NO_POSITIONS for m in entry.get("mechanisms") or [])


def confirmed(entry: dict) -> str:
    """How a type without positions is confirmed: a permutation of a tiny instance, or why not."""
    nones = [m for m in entry.get("mechanisms") or [] if m["mechanism"] == "none"]
    if not nones:
        comps = "; ".join(f"{c}: {v.get('forward')}" for c, v in (entry.get("components") or {}).items())
        return ("not confirmed: no mechanism recorded ("
                + str(entry.get("mechanisms_status") or comps or "no component found")[:100] + ")")  # fmt: skip
    said = []
    for m in nones:
        how = "outputs permute with inputs" if m.get("confirmed_by") == "permutation" else m.get("permutation")
        said.append(f"{m['component']} ({m.get('input')}): {how or 'forward ran, no positions met the states'}")
    return "; ".join(said)


def compare(old: dict, new: dict) -> dict:
    changed = {}
    for mt in sorted(new):
        before = (old.get(mt) or {}).get("scheme")
        after = new[mt].get("scheme")
        if before != after or (before == "none" and has_positions(new[mt])):
            changed[mt] = {"before": before, "after": after, "mechanisms": mechanisms(new[mt])}
    none_before = sorted(mt for mt in new if (old.get(mt) or {}).get("scheme") == "none" and has_positions(new[mt]))
    still_none = {mt: confirmed(new[mt]) for mt in sorted(new)
                  if (old.get(mt) or {}).get("scheme") == "none" and not has_positions(new[mt])}  # fmt: skip
    scheme_changed = sorted(mt for mt, c in changed.items()
                            if c["before"] not in ("none", "unobserved", None) and c["before"] != c["after"])  # fmt: skip
    return {
        "how": "tools/inventory/reclassified.py: the inventory issue 36 describes (b75f68b, name tests) vs the "
        "evidence-based one",
        "none_before": none_before,
        "scheme_changed": scheme_changed,
        "still_none": still_none,
        "types": changed,
    }


def block(r: dict) -> str:
    def said(mt: str) -> str:
        c = r["types"][mt]
        return f"| `{mt}` | {c['before']} | {c['after']} | " + "; ".join(
            f"{k}: {', '.join(v)}" for k, v in c["mechanisms"].items()
        ) + " |"  # fmt: skip

    lines = [
        BEGIN,
        "",
        f"Against the inventory issue 36 describes (`b75f68b`, scheme from name tests; against `000d3ec^1`, whose "
        f"name tests were wider, 17 said none have positions): "
        f"**{len(r['none_before'])}** types it said have no positions have some (issue 36 counted 62), "
        f"**{len(r['scheme_changed'])}** types had another scheme than the one the model uses (issue 36 "
        f"counted 32), and **{len(r['still_none'])}** types are still without positions.",
        "",
        f"Said none, have positions ({len(r['none_before'])}):",
        "",
        "| type | before | scheme now | mechanisms per component |",
        "|---|---|---|---|",
        *[said(mt) for mt in r["none_before"]],
        "",
        f"Another scheme than the model's ({len(r['scheme_changed'])}):",
        "",
        "| type | before | scheme now | mechanisms per component |",
        "|---|---|---|---|",
        *[said(mt) for mt in r["scheme_changed"]],
        "",
        f"Still without positions ({len(r['still_none'])}), each confirmed by a tiny instance whose outputs "
        "permute with its inputs, or with the reason it could not be:",
        "",
        "| type | confirmed |",
        "|---|---|",
        *[f"| `{mt}` | {how.replace('|', '/')} |" for mt, how in r["still_none"].items()],
        "",
        END,
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    old = json.loads(Path(argv[0]).read_text())["model_types"]
    new = json.loads(DATA.read_text())["model_types"]
    r = compare(old, new)
    OUT.write_text(json.dumps(r, indent=1, sort_keys=True) + "\n")
    text = README.read_text()
    pat = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    text = pat.sub(lambda _: block(r), text) if pat.search(text) else text.rstrip("\n") + "\n\n" + block(r) + "\n"
    README.write_text(text)
    print(f"{len(r['none_before'])} said none, have positions; {len(r['scheme_changed'])} another scheme; "
          f"{len(r['still_none'])} still none; {len(r['types'])} in all", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
