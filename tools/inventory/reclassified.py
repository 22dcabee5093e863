"""The model types whose classification the evidence-based mechanisms changed (issue 36.1), for review and tests.

    git show main:posenc_cli/models/data/transformers_inventory.json > /tmp/old_inventory.json
    python tools/inventory/reclassified.py /tmp/old_inventory.json

Compares an older inventory's ``scheme`` (name tests: "pos" in a leaf name, "sinusoid" in a class name, ...)
with the current one's ``scheme`` and ``mechanisms``, and writes tests/data/inventory/reclassified.json:
``{model_type: {before, after, mechanisms: {component: [mechanism, ...]}}}`` for every type whose scheme changed
or that was said to have no positions while a component has some. tests/test_inventory_mechanisms.py holds the
inventory to it, so a re-run that changes a classification shows up as a reviewed diff of this file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "posenc_cli" / "models" / "data" / "transformers_inventory.json"
OUT = ROOT / "tests" / "data" / "inventory" / "reclassified.json"


def mechanisms(entry: dict) -> dict[str, list[str]]:
    out: dict[str, set[str]] = {}
    for m in entry.get("mechanisms") or []:
        out.setdefault(f"{m['component']} ({m.get('input')})", set()).add(m["mechanism"])
    return {k: sorted(v) for k, v in sorted(out.items())}


def main(argv: list[str]) -> int:
    old = json.loads(Path(argv[0]).read_text())["model_types"]
    new = json.loads(DATA.read_text())["model_types"]
    changed = {}
    for mt in sorted(new):
        before = (old.get(mt) or {}).get("scheme")
        after = new[mt].get("scheme")
        mech = mechanisms(new[mt])
        has = any(m != "none" for ms in mech.values() for m in ms)
        if before != after or (before == "none" and has):
            changed[mt] = {"before": before, "after": after, "mechanisms": mech}
    none_now_some = sorted(mt for mt, c in changed.items() if c["before"] == "none" and c["after"] != "none")
    other = sorted(mt for mt, c in changed.items() if c["before"] not in ("none", "unobserved") and mt not in
                   none_now_some)  # fmt: skip
    OUT.write_text(json.dumps({
        "how": "tools/inventory/reclassified.py: old scheme (name tests) vs the evidence-based one",
        "none_before": none_now_some, "scheme_changed": other, "types": changed,
    }, indent=1, sort_keys=True) + "\n")  # fmt: skip
    print(f"{len(none_now_some)} said none, have positions; {len(other)} other schemes changed; "
          f"{len(changed)} in all", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
