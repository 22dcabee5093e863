"""Fill a preallocated tensor in row blocks on every core (NumPy releases the GIL in its kernels)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

#: Largest block: big enough to amortise per-block Python work (pool hand-offs, the kernels' per-call
#: setup: 16 MiB blocks fill a 512 MiB table ~10% faster than 4 MiB ones, measured on two threads), small
#: enough that a progress bar moves (32 steps for 512 MiB) and a busy core does not hold the last block long.
BLOCK_BYTES = 16 << 20
#: Smallest block worth a thread; tensors up to this size are filled in the calling thread.
MIN_BLOCK_BYTES = 1 << 20
#: Blocks per worker at least (when the tensor is big enough): balances cores shared with other work.
BLOCKS_PER_WORKER = 4


def block_rows(row_bytes: int, target: int = BLOCK_BYTES) -> int:
    """Rows per block so that a block holds about ``target`` bytes."""
    return max(1, target // max(1, row_bytes))


def row_blocks(n_rows: int, rows_per_block: int) -> list[tuple[int, int]]:
    return [(s, min(s + rows_per_block, n_rows)) for s in range(0, n_rows, rows_per_block)]


def workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def pool(n_workers: int) -> ThreadPoolExecutor:
    """One thread pool for the whole process, created on first use (small tables never pay for it) and
    grown if more workers are asked for: streaming writers fill dozens of blocks in a row, each of which
    would otherwise start and join its own threads."""
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL is None or n_workers > _POOL_SIZE:
            from concurrent.futures import ThreadPoolExecutor

            old = _POOL
            _POOL, _POOL_SIZE = ThreadPoolExecutor(max_workers=n_workers, thread_name_prefix="posenc-fill"), n_workers
            if old is not None:
                old.shutdown(wait=False)
        return _POOL


def _forget_pool_in_child() -> None:
    """After ``fork`` the child has the pool object but none of its threads: work handed to it would wait forever
    (a DataLoader worker, a multiprocessing child, mutmut's forked mutants). The child starts its own pool."""
    global _POOL, _POOL_SIZE, _POOL_LOCK
    _POOL, _POOL_SIZE, _POOL_LOCK = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def plan_blocks(n_rows: int, row_bytes: int, n_workers: int) -> list[tuple[int, int]]:
    """Row blocks for ``n_workers`` threads: ~``BLOCK_BYTES`` each, at least ``BLOCKS_PER_WORKER`` each."""
    total = n_rows * row_bytes
    if total <= MIN_BLOCK_BYTES or n_workers == 1:
        target = max(BLOCK_BYTES, MIN_BLOCK_BYTES)
    else:
        target = min(BLOCK_BYTES, max(MIN_BLOCK_BYTES // 4, total // (BLOCKS_PER_WORKER * n_workers)))
    return row_blocks(n_rows, block_rows(row_bytes, target))


def fill_parallel(
    encoding,
    name: str,
    out: np.ndarray,
    start: int = 0,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Fill ``out`` with rows ``[start, start + len(out))`` of tensor ``name``, block by block, on all cores.

    ``progress`` (if given) is called with the number of rows finished, from the calling thread, once per
    block in row order (a few dozen calls for a big table): cheap enough to drive a progress bar directly.
    """
    n = out.shape[0]
    if n == 0:
        return
    row_bytes = out.itemsize * (out.size // n)
    n_workers = workers()
    blocks = plan_blocks(n, row_bytes, n_workers)
    if len(blocks) == 1 or n_workers == 1:
        for a, b in blocks:
            encoding.fill(name, start + a, start + b, out[a:b])
            if progress:
                progress(b - a)
        return
    executor = pool(n_workers)
    futures = [(executor.submit(encoding.fill, name, start + a, start + b, out[a:b]), b - a) for a, b in blocks]
    try:
        for fut, rows in futures:
            fut.result()
            if progress:
                progress(rows)
    except BaseException:
        for fut, _ in futures:
            fut.cancel()
        for fut, _ in futures:  # none may still write into ``out`` once we return
            if not fut.cancelled():
                with contextlib.suppress(BaseException):
                    fut.result()
        raise
