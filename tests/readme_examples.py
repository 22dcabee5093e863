"""Re-run README's examples and paste their real output under each `<!-- run: ARGS -->` marker.

Run: python tests/readme_examples.py   (not a test; the output is checked by eye in the diff)
"""

from __future__ import annotations

import os
import pty
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MARK = re.compile(r"(<!-- run: (?P<args>.+?) -->\n```text\n)(?P<body>.*?)(```)", re.S)


def on_a_terminal(args: list[str]) -> str:
    """Run posenc with stdout on a pseudo-terminal (as a user sees it), 100 columns, no colour."""
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1", PYTHONPATH=str(ROOT), TERM="dumb")
    proc = subprocess.Popen([sys.executable, "-m", "posenc_cli", *args], stdout=slave, stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    out = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out.append(chunk)
    code = proc.wait()
    os.close(master)
    text = b"".join(out).decode().replace("\r\n", "\n")
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return f"$ posenc {' '.join(shlex.quote(a) for a in args)}\n{text}\n" + (f"(exit {code})\n" if code else "")


def main() -> None:
    text = README.read_text()
    text = MARK.sub(lambda m: m.group(1) + on_a_terminal(shlex.split(m.group("args"))) + m.group(4), text)
    README.write_text(text)


if __name__ == "__main__":
    main()
