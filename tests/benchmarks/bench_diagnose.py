"""Diagnose and identify against compare on the same pair, side by side in one run (issue 11, item 6).

Run from the repository root: ``.venv/bin/python tests/benchmarks/bench_diagnose.py [--rows N] [--dim D] [--reps R]``.
For each scenario, a float32 reference B (posenc's sinusoidal or rope table) and a mistaken A (built with NumPy
from B or from the published formula) are saved to ``.npy`` files in a temporary directory and memory-mapped, as
the CLI reads them; ``compare(A, B)``, ``diagnose(A, B)`` and ``identify(A)`` are timed in interleaved repetitions
and compared by medians; and the library's ``posenc_cli.compare`` of the two files with its explanation (both
sides read as a kind with parameters - the identification of A - then the diagnosis) against the same call with
``explain=False``. Two scenarios are caches built as transformers builds them (float32 ``inv_freq``, angles and
cos; one rounded to bfloat16 and saved widened). Target: each within 3x compare. Not collected by pytest.
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

import posenc_cli as pe  # noqa: E402
from posenc_cli.encodings import make_encoding  # noqa: E402
from posenc_cli.inspect.diagnose import diagnose  # noqa: E402
from posenc_cli.inspect.identification import identify  # noqa: E402
from posenc_cli.inspect.metrics import compare  # noqa: E402


def hf_cos(n: int, d: int, base: float, bf16: bool = False) -> np.ndarray:
    """transformers' float32 cache with Llama 3.1's llama3 scaling (tests/formula_tables.py, plain NumPy)."""
    from tests import formula_tables as ft

    cos, _ = ft.hf_cos_sin(ft.hf_llama3(ft.hf_inv_freq(d, base), 8.0, 1.0, 4.0, 8192), n)
    if bf16:
        import ml_dtypes

        cos = cos.astype(ml_dtypes.bfloat16).astype(np.float32)
    return cos


def scenarios(n: int, d: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    b = make_encoding("sinusoidal", {"length": n, "dim": d}).array()
    llama31 = make_encoding("rope", {"length": n, "dim": d, "preset": "llama3.1"}).array("cos")
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
        "HF cache, base 10000": (hf_cos(n, d, 10000.0), llama31),
        "HF cache in bf16, widened": (hf_cos(n, d, 500000.0, bf16=True), llama31),
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
            times: dict[str, list[float]] = {k: [] for k in ("compare", "diagnose", "identify", "plain", "explained")}
            summary = ""
            for _ in range(args.reps):
                times["compare"].append(timed(partial(compare, ma, mb)))
                t = time.perf_counter()
                summary = diagnose(ma, mb).summary
                times["diagnose"].append(time.perf_counter() - t)
                times["identify"].append(timed(partial(identify, {"a": ma})))
                times["plain"].append(timed(partial(pe.compare, str(pa), str(pb), explain=False)))
                t = time.perf_counter()
                res = pe.compare(str(pa), str(pb))
                times["explained"].append(time.perf_counter() - t)
                why = res.tensors[0].diagnosis
                summary += f"\n    compare: {'SAME' if res.same else why.summary if why else ''}"
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append((name, med, summary))
            print(
                f"  {name}: compare {med['compare']:.2f}s, diagnose {med['diagnose']:.2f}s "
                f"({med['diagnose'] / med['compare']:.2f}x), identify {med['identify']:.2f}s "
                f"({med['identify'] / med['compare']:.2f}x), compare with its why {med['explained']:.2f}s "
                f"({med['explained'] / med['plain']:.2f}x without)",
                flush=True,
            )
            print(f"    {summary}", flush=True)
    print()
    head = f"{'scenario':27} {'compare':>8} {'diagnose':>8} {'ratio':>6} {'identify':>8} {'ratio':>6}"
    print(head + f" {'why':>6}  target < 3x")
    ok = True
    for name, med, _ in rows:
        rd, ri = med["diagnose"] / med["compare"], med["identify"] / med["compare"]
        rw = med["explained"] / med["plain"]
        good = rd < 3 and ri < 3 and rw < 3
        ok &= good
        print(
            f"{name:27} {med['compare']:7.2f}s {med['diagnose']:7.2f}s {rd:5.2f}x {med['identify']:7.2f}s {ri:5.2f}x"
            f" {rw:5.2f}x  {'OK' if good else 'MISS'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
