"""Fill a preallocated tensor in row blocks on every core (NumPy releases the GIL in its kernels)."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: Target bytes per block: big enough to amortise Python overhead, small enough to stay in cache-ish sizes.
BLOCK_BYTES = 1 << 20


def block_rows(row_bytes: int, target: int = BLOCK_BYTES) -> int:
    """Rows per block so that a block holds about ``target`` bytes."""
    return max(1, target // max(1, row_bytes))


def row_blocks(n_rows: int, rows_per_block: int) -> list[tuple[int, int]]:
    return [(s, min(s + rows_per_block, n_rows)) for s in range(0, n_rows, rows_per_block)]


def workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def fill_parallel(
    encoding,
    name: str,
    out: np.ndarray,
    start: int = 0,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Fill ``out`` with rows ``[start, start + len(out))`` of tensor ``name``, block by block, on all cores.

    ``progress`` (if given) is called with the number of rows finished, from the calling thread.
    """
    n = out.shape[0]
    if n == 0:
        return
    row_bytes = out.itemsize * (out.size // n if n else 0)
    blocks = row_blocks(n, block_rows(row_bytes))
    if len(blocks) == 1 or workers() == 1:
        for a, b in blocks:
            encoding.fill(name, start + a, start + b, out[a:b])
            if progress:
                progress(b - a)
        return
    with ThreadPoolExecutor(max_workers=workers()) as pool:
        futures = [(pool.submit(encoding.fill, name, start + a, start + b, out[a:b]), b - a) for a, b in blocks]
        try:
            for fut, rows in futures:
                fut.result()
                if progress:
                    progress(rows)
        except BaseException:
            for fut, _ in futures:
                fut.cancel()
            raise
