"""Regenerate the pictures README.md shows (docs/pictures/*.png) with `posenc plot`.

Run from the repository root with matplotlib installed (`pip install '.[plot]'`):

    python tools/pictures.py

tests/test_plot_cli.py draws them again and fails when the committed ones are stale (with the matplotlib
version recorded in docs/pictures/VERSION; another version renders fonts differently and skips the check).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "pictures"

#: file name -> posenc plot arguments
PICTURES = {
    "heatmap.png": ["sinusoidal:preset=tf-tutorial", "--len", "64", "--dim", "64", "--size", "6x4.5"],
    "dot.png": ["sinusoidal", "sinusoidal:base=100", "--len", "256", "--dim", "64", "--view", "dot", "--size", "7x4"],
    "spectrum.png": [
        "rope",
        "rope:preset=llama3.1",
        "rope:scaling=yarn,factor=8,original_max_position_embeddings=8192",
        "--len",
        "1024",
        "--dim",
        "128",
        "--view",
        "spectrum",
        "--size",
        "7x4",
    ],
}


def draw(out_dir: Path, plot: Callable[[list[str]], None] | None = None) -> list[Path]:
    """Draw every picture into ``out_dir``; ``plot(ARGS)`` runs ``posenc plot ARGS`` (by default in a fresh
    ``python -m posenc_cli``; the freshness test passes one that runs in its own process)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, args in PICTURES.items():
        path = out_dir / name
        plot_args = [*args, "-o", str(path), "-q"]
        if plot is None:
            subprocess.run([sys.executable, "-m", "posenc_cli", "plot", *plot_args], check=True, cwd=ROOT)
        else:
            plot(plot_args)
        written.append(path)
    return written


def main() -> None:
    import matplotlib

    for path in draw(OUT):
        print(path.relative_to(ROOT))
    (OUT / "VERSION").write_text(f"matplotlib {matplotlib.__version__}\n")


if __name__ == "__main__":
    main()
