"""Regenerate every generated part of the docs, with one command, from the repository root::

    python tools/regen_docs.py           # rewrite them
    python tools/regen_docs.py --check   # exit 1 when any is stale (nothing written)

What it refreshes, each by the one code that makes it (so the docs and their tests cannot disagree):

* ``docs/families.md``: every model type and what posenc does with its positions (``tools/families.py``);
* ``docs/vision.md``'s table of the vision towers read by the code they run (``tools/vision_doc.py``);
* ``docs/kinds.md``'s generated blocks (the kinds, the rotary families, the non-rotary families) and every
  command output shown in README.md and docs/*.md (``tests/test_docs.py`` with ``POSENC_UPDATE_DOCS=1``: an
  output that agrees with what is shown, numbers within their printed precision, is left as written).

The pictures (``tools/pictures.py``, needs matplotlib) and the example tables (``tools/examples.py``) are data,
not text: run them when what they draw changes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    steps = [
        [sys.executable, str(ROOT / "tools" / "families.py"), *(["--check"] if check else [])],
        [sys.executable, str(ROOT / "tools" / "vision_doc.py"), *(["--check"] if check else [])],
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            str(ROOT / "tests" / "test_docs.py"),
        ],
    ]
    if not check:
        env["POSENC_UPDATE_DOCS"] = "1"
    failed = 0
    for cmd in steps:
        print("$", " ".join(os.path.relpath(c, ROOT) if c.startswith(str(ROOT)) else c for c in cmd), flush=True)
        failed |= subprocess.run(cmd, cwd=ROOT, env=env).returncode != 0
    if failed:
        print("some docs are stale or a shown command failed (see above)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
