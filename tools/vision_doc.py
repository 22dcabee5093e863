"""docs/vision.md's table of the vision towers posenc reads by the code they run, and of those it refuses::

    python tools/vision_doc.py           # rewrite the block between the towers markers
    python tools/vision_doc.py --check   # exit 1 when it is stale

The block is ``posenc_cli.models.vision.towers_markdown()``: every reviewed rule (a record's ``Vision`` with its
``fingerprints``) and each inventory type whose ``vision_table`` observation ran that code.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "vision.md"
BEGIN, END = "<!-- towers:begin (tools/vision_doc.py) -->\n", "<!-- towers:end -->\n"


def render(text: str) -> str:
    sys.path.insert(0, str(ROOT))
    from posenc_cli.models.vision import towers_markdown

    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + towers_markdown() + END + tail


def main(argv: list[str]) -> int:
    text = DOC.read_text()
    new = render(text)
    if "--check" in argv:
        if new != text:
            print(
                f"{DOC.relative_to(ROOT)}: the towers table is stale; run python tools/vision_doc.py", file=sys.stderr
            )
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
