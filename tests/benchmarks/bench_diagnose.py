"""Diagnose and identify against compare on the same pair, side by side in one run (issue 11, item 6).

Run from the repository root: ``.venv/bin/python tests/benchmarks/bench_diagnose.py [--rows N] [--dim D] [--reps R]``.
For each scenario, a float32 reference B (posenc's sinusoidal or rope table) and a mistaken A (built with NumPy
from B or from the published formula) are saved to ``.npy`` files in a temporary directory and memory-mapped, as
the CLI reads them; ``compare(A, B)``, ``diagnose(A, B)`` and ``identify(A)`` are timed in interleaved repetitions
and compared by medians. Target: diagnose and identify within 3x compare. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from posenc_cli.encodings import make_encoding  # noqa: E402
from posenc_cli.inspect.diagnose import diagnose  # noqa: E402
from posenc_cli.inspect.identification import identify  # noqa: E402
from posenc_cli.inspect.metrics import compare  # noqa: E402


def scenarios(n: int, d: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    b = make_encoding("sinusoidal", {"length": n, "dim": d}).array()
    split = np.ascontiguousarray(b[:, np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])])
    shifted = make_encoding("sinusoidal", {"length": n, "dim": d, "offset": 2}).array()
    base = make_encoding("sinusoidal", {"length": n, "dim": d, "base": 500000.0}).array()
    half = make_encoding("rope", {"length": n, "dim": d}).array("cos")
    inter = make_encoding("rope", {"length": n, "dim": d, "layout": "interleaved"}).array("cos")
    return {
        "split vs interleaved": (split, b),
        "offset 2 (fairseq)": (shifted, b),
        "base 500000 vs 10000": (base, b),
        "rope half vs interleaved": (half, inter),
        "float16 rounding": (b.astype(np.float16), b),
    }


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=131072)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    print(f"{args.rows} x {args.dim} float32, {args.reps} interleaved repetitions, medians", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (a, b) in scenarios(args.rows, args.dim).items():
            pa, pb = Path(tmp) / "a.npy", Path(tmp) / "b.npy"
            np.save(pa, a)
            np.save(pb, b)
            ma, mb = np.load(pa, mmap_mode="r"), np.load(pb, mmap_mode="r")
            times: dict[str, list[float]] = {"compare": [], "diagnose": [], "identify": []}
            summary = ""
            for _ in range(args.reps):
                times["compare"].append(timed(partial(compare, ma, mb)))
                t = time.perf_counter()
                summary = diagnose(ma, mb).summary
                times["diagnose"].append(time.perf_counter() - t)
                times["identify"].append(timed(partial(identify, {"a": ma})))
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append((name, med, summary))
            print(
                f"  {name}: compare {med['compare']:.2f}s, diagnose {med['diagnose']:.2f}s "
                f"({med['diagnose'] / med['compare']:.2f}x), identify {med['identify']:.2f}s "
                f"({med['identify'] / med['compare']:.2f}x)",
                flush=True,
            )
            print(f"    {summary}", flush=True)
    print()
    print(f"{'scenario':28} {'compare':>9} {'diagnose':>9} {'ratio':>6} {'identify':>9} {'ratio':>6}  target < 3x")
    ok = True
    for name, med, _ in rows:
        rd, ri = med["diagnose"] / med["compare"], med["identify"] / med["compare"]
        ok &= rd < 3 and ri < 3
        print(
            f"{name:28} {med['compare']:8.2f}s {med['diagnose']:8.2f}s {rd:5.2f}x {med['identify']:8.2f}s {ri:5.2f}x"
            f"  {'OK' if rd < 3 and ri < 3 else 'MISS'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
