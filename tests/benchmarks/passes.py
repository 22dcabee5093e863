"""Where the time of a generated table goes: each NumPy pass over a chunk, chunk sizes, 1 vs 2 threads.

Run from the repository root: ``.venv/bin/python tests/benchmarks/passes.py [--rows N] [--reps N]``. Times are
the minimum over repetitions (the machine is shared: the minimum is the run least disturbed by others), in
nanoseconds per output element, for the ``rows x 1024`` float32 sinusoidal table (512 frequencies) unless
said otherwise. Three tables:

1. per pass: every NumPy call the angle-addition kernel makes on one chunk, timed alone on the same
   cache-resident data, next to the whole kernel per element (which adds Python overhead per chunk and
   the writes to memory of the real table);
2. chunk size: the whole fill (one thread, output memory already touched) for several scratch sizes;
3. threads: ``np.ones``, then one and two threads, into fresh memory (page faults included, as
   ``Encoding.array`` pays them) and into memory already touched;
4. scheduler: two threads filling half the table each, with each thread's time on a CPU and its time waiting
   for one (``/proc/self/task/TID/schedstat``): when the waits are as long as the time on a CPU, only one core
   was free for this process (other work on the machine), whatever the code does.

Not collected by pytest (no ``test_`` prefix).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from posenc_cli.encodings import _angleadd, make_encoding, parallel  # noqa: E402 (after the path insert)

DIM = 1024


def best(fn: Callable[[], object], reps: int) -> float:
    """Minimum wall time of ``fn`` over ``reps`` calls (one warm-up call first)."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def per_pass(reps: int) -> None:
    enc = make_encoding("sinusoidal", {"length": 1 << 17, "dim": DIM})
    adder = enc._adder
    n, b = adder.n, adder.sub
    rows = adder.chunk
    per = rows // b
    els = rows * 2 * n
    rng = np.random.default_rng(0)
    seed = adder.coarse[5] * (0.6 + 0.8j)
    sub_seeds = np.empty((per, n), np.complex128)
    scratch = np.empty((per, b, n), np.complex128)
    np.multiply(adder.coarse[:per], seed, out=sub_seeds)
    np.multiply(sub_seeds[:, None, :], adder.fine[None], out=scratch)
    u = scratch.reshape(rows, n)
    out = np.empty((rows, 2 * n), np.float32)
    pairs = out.view(np.complex64)
    np.copyto(pairs, u, casting="same_kind")
    mag = np.empty_like(out)
    split = np.empty_like(out)
    half = np.empty_like(out)
    k = max(1, 4000 // rows)
    cols = adder.w_hi.size

    def loop(f: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(k):
                f()

        return run

    passes: list[tuple[str, Callable[[], object]]] = [
        ("sub-step seeds: coarse table x step seed", lambda: np.multiply(adder.coarse[:per], seed, out=sub_seeds)),
        ("rows: broadcast complex multiply (complex128)", lambda: np.multiply(sub_seeds[:, None, :], adder.fine[None], out=scratch)),
        ("cast to complex64 = interleaved float32 pairs", lambda: np.copyto(pairs, u, casting="same_kind")),
        ("split layout: real and imag parts to halves", lambda: (np.copyto(split[:, :cols], u.real, casting="same_kind"), np.copyto(split[:, cols:], u.imag, casting="same_kind"))),
        ("RoPE half layout: imag to first half, copy", lambda: (np.copyto(half[:, :cols], u.imag, casting="same_kind"), np.copyto(half[:, cols:], half[:, :cols]))),
        ("RoPE interleaved: imag to both columns", lambda: (np.copyto(half[:, 0::2], u.imag, casting="same_kind"), np.copyto(half[:, 1::2], u.imag, casting="same_kind"))),
        ("near-zero scan, old: abs into a buffer", lambda: np.abs(out, out=mag)),
        ("near-zero scan, old: min of the buffer", lambda: mag.min()),
        ("near-zero scan: min of the bits as uint32", lambda: out.view(np.uint32).min()),
        ("near-zero scan: min of the bits as int32", lambda: out.view(np.int32).min()),
    ]  # fmt: skip
    print(f"\n1. per pass, one chunk of {rows} rows x {2 * n} columns ({rows * n * 16 >> 10} KiB complex128 scratch, "
          f"sub-step {b} rows), one thread, ns per output element")  # fmt: skip
    for name, f in passes:
        print(f"   {name:48s} {best(loop(f), reps) / (k * els) * 1e9:6.3f}")
    _ = rng
    length = 1 << 15
    table = np.ones((length, DIM), np.float32)
    whole = best(lambda: enc.fill("pe", 0, length, table), reps)
    print(f"   {'whole kernel (fill of 32768 rows, touched memory)':48s} {whole / (length * DIM) * 1e9:6.3f}")


def chunk_sweep(reps: int) -> None:
    length = 1 << 15
    table = np.ones((length, DIM), np.float32)
    print("\n2. chunk size (scratch bytes), whole fill of 32768 x 1024, one thread, touched memory, ns per element")
    saved = _angleadd.CHUNK_BYTES
    try:
        for kib in (64, 128, 256, 512, 1024, 2048):
            _angleadd.CHUNK_BYTES = kib << 10
            enc = make_encoding("sinusoidal", {"length": 1 << 17, "dim": DIM})
            adder = enc._adder
            t = best(lambda enc=enc: enc.fill("pe", 0, length, table), reps)
            print(f"   {kib:5d} KiB  ({adder.chunk:4d} rows, sub-step {adder.sub:2d})  {t / (length * DIM) * 1e9:6.3f}")
    finally:
        _angleadd.CHUNK_BYTES = saved


def threads(length: int, reps: int) -> None:
    print(f"\n3. threads: {length} x {DIM} float32 sinusoidal, ms (ns per element)")
    enc = make_encoding("sinusoidal", {"length": length, "dim": DIM})
    assert enc._adder is not None  # its tables, built before timing
    touched = np.ones((length, DIM), np.float32)

    def fill(out: np.ndarray, workers: int) -> None:
        saved = parallel.workers
        parallel.workers = lambda: workers  # type: ignore[assignment]
        try:
            parallel.fill_parallel(enc, "pe", out)
        finally:
            parallel.workers = saved  # type: ignore[assignment]

    rows = [
        ("np.ones (fresh memory)", lambda: np.ones((length, DIM), np.float32)),
        ("1 thread, fresh memory", lambda: fill(np.empty((length, DIM), np.float32), 1)),
        ("2 threads, fresh memory", lambda: fill(np.empty((length, DIM), np.float32), 2)),
        ("1 thread, touched memory", lambda: fill(touched, 1)),
        ("2 threads, touched memory", lambda: fill(touched, 2)),
    ]
    for name, f in rows:
        t = best(f, reps)
        print(f"   {name:28s} {t * 1e3:7.1f} ms  ({t / (length * DIM) * 1e9:.3f})")


def scheduler(length: int) -> None:
    import threading

    print(f"\n4. scheduler: two threads, each filling half of a {length} x {DIM} table (touched memory)")
    enc = make_encoding("sinusoidal", {"length": length, "dim": DIM})
    assert enc._adder is not None
    out = np.ones((length, DIM), np.float32)
    half = length // 2
    res: dict[int, tuple[float, float, float]] = {}

    def stat() -> tuple[float, float]:
        on, wait, _ = Path(f"/proc/self/task/{threading.get_native_id()}/schedstat").read_text().split()
        return int(on) / 1e9, int(wait) / 1e9

    def work(i: int) -> None:
        s0, t0 = stat(), time.perf_counter()
        for a in range(i * half, (i + 1) * half, 1024):
            enc.fill("pe", a, a + 1024, out[a : a + 1024])
        s1 = stat()
        res[i] = (time.perf_counter() - t0, s1[0] - s0[0], s1[1] - s0[1])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (wall, on, wait) in sorted(res.items()):
        print(
            f"   thread {i}: wall {wall * 1e3:6.1f} ms, on a CPU {on * 1e3:6.1f} ms, waiting for a CPU {wait * 1e3:6.1f} ms"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=131072, help="rows of the table in the thread table")
    ap.add_argument("--reps", type=int, default=7, help="repetitions (minimum taken)")
    args = ap.parse_args()
    import os

    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    per_pass(args.reps)
    chunk_sweep(args.reps)
    threads(args.rows, args.reps)
    scheduler(args.rows)


if __name__ == "__main__":
    main()
