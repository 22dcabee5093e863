"""Re-run README's examples and paste their real output under each `<!-- run: ARGS -->` marker.

Run: python tests/readme_examples.py   (not a test; the output is checked by eye in the diff)
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import ROOT, clean_env, run_tty  # noqa: E402  (the same terminal runner the tests use)

README = ROOT / "README.md"
MARK = re.compile(r"(<!-- run: (?P<args>.+?) -->\n```text\n)(?P<body>.*?)(```)", re.S)


def on_a_terminal(args: list[str]) -> str:
    """Run posenc with stdout on a pseudo-terminal (as a user sees it), 100 columns, no colour."""
    code, text = run_tty(args, cwd=ROOT, env=clean_env(COLUMNS="100", TERM="dumb"))
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return f"$ posenc {' '.join(shlex.quote(a) for a in args)}\n{text}\n" + (f"(exit {code})\n" if code else "")


def main() -> None:
    text = README.read_text()
    text = MARK.sub(lambda m: m.group(1) + on_a_terminal(shlex.split(m.group("args"))) + m.group(4), text)
    README.write_text(text)


if __name__ == "__main__":
    main()
