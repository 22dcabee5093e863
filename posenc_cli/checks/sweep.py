"""One read of a table, block by block, that feeds every property measured from the same blocks.

Each property of a position table needs a few sums over its rows: norms and magnitudes (``finite``,
``bounded``, ``constant-norm``), dot products of rows ``k`` apart (``equidistant``, ``offset-invariant``,
``symmetric``, ``decay``), random projections (the Freivalds probes of ``offset-invariant`` and
``shift-linear``, the sketch of ``unique``), exact row hashes (``unique``) and casts (``precision``). Read one at
a time, each was a pass over the table with its own float64 copy of every block. Here each block is read and
converted once and handed to every *feed* (the work one property or a family of them needs from a block); the
blocks go to the worker threads of :func:`posenc_cli.encodings.parallel.pool`, and each feed reduces its
per-block results in block order, so the numbers do not depend on the number of threads.

:func:`shared` is how a check asks for a feed's result: the first request runs one sweep with every feed that
the properties planned for this context need (``CheckContext.planned``, set by ``api.check``), so a whole
``posenc check`` reads a position table twice (the second read is the Freivalds Gram probe, which needs the
first one's sums); a check run alone computes only its own feeds. :func:`passes` says which properties shared
which read (``check --verbose``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .base import CheckContext
from .common import rows_per_block

#: Offsets up to this many rows read their second row from the block's own float64 copy (extended by them).
HALO = 8
#: float64 elements of a block (4 MiB): two workers' blocks and their float64 copies stay small next to the table.
BLOCK_ELEMS = 1 << 19
#: float64 elements of a chunk: every feed reads a chunk while it is in L2 (512 KiB), so a block's float64 copy
#: is read from memory once by the chunks instead of once per feed.
CHUNK_ELEMS = 1 << 18


@dataclass
class Block:
    """Rows ``[start, stop)`` of the table: ``raw`` as stored, ``x`` in float64 with ``halo`` more rows after them
    (as many as the table has)."""

    start: int
    stop: int
    raw: np.ndarray
    x: np.ndarray
    #: feed key -> the block's rows times that feed's ``right`` matrix (one product for every feed)
    right: dict[str, np.ndarray] = field(default_factory=dict)
    #: feed key -> what the feed's ``chunk`` calls gathered for this block (its partial when it has no ``block``)
    acc: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def rows(self) -> np.ndarray:
        """The block's own rows in float64."""
        return self.x[: self.stop - self.start]


@dataclass
class Feed:
    """Work a block feeds, in a worker thread: ``chunk(blk, s, e)`` for each run of rows ``[s, e)`` of the block
    (relative to its start) small enough to stay in cache while every feed reads it, then ``block(blk)``, whose
    result is the block's partial (without ``block``: the list the chunks gathered in ``blk.acc[key]``);
    ``finish(partials)`` (in block order) returns the value :func:`shared` caches under ``key``."""

    key: str
    what: str
    block: Callable[[Block], Any] | None
    finish: Callable[[list[Any]], Any]
    #: a matrix to multiply every block's float64 rows by: the sweep makes one product for all feeds that
    #: have one (``Block.right[key]``), one read of the block instead of one each.
    right: np.ndarray | None = None
    chunk: Callable[[Block, int, int], None] | None = None


@dataclass
class Pass:
    """One read of a table: what it computed and for which properties (``check --verbose``)."""

    tensor: str
    blocks: int
    rows: int
    feeds: list[str] = field(default_factory=list)
    properties: list[str] = field(default_factory=list)


#: key -> the function building that feed for a context, in the order feeds finish (a feed's ``finish`` may
#: read the results of feeds before it: every ``finish`` reads ``scan``).
FEEDS: dict[str, Callable[[CheckContext], Feed]] = {}
#: key -> the feeds whose results its ``finish`` reads (swept with it when not computed yet).
AFTER: dict[str, tuple[str, ...]] = {}
#: Feeds that need another feed's complete result to start (the second read of the table).
SECOND: set[str] = set()
#: key -> work a second-read feed needs first that reads no first-read result (e.g. least-squares fits on
#: sampled rows): ``(tasks, combine)``, the tasks run on the worker threads while the first read runs, and
#: ``combine(results)`` is cached under ``key + ":early"`` for the feed's builder.
EARLY: dict[str, Callable[[CheckContext], tuple[list[Callable[[], Any]], Callable[[list[Any]], Any]]]] = {}
#: property -> the feeds it reads, given the context (filled by the check modules).
NEEDS: dict[str, Callable[[CheckContext], tuple[str, ...]]] = {}


def register(
    key: str, after: tuple[str, ...] = ("scan",), second: bool = False
) -> Callable[[Callable[[CheckContext], Feed]], Callable[[CheckContext], Feed]]:
    """Add a feed (decorator of the function that builds it from a context)."""

    def add(make: Callable[[CheckContext], Feed]) -> Callable[[CheckContext], Feed]:
        FEEDS[key] = make
        AFTER[key] = after
        if second:
            SECOND.add(key)
        return make

    return add


def cache(ctx: CheckContext) -> dict[str, Any]:
    return ctx.__dict__.setdefault("_check_cache", {})


def passes(ctx: CheckContext) -> list[Pass]:
    """The reads of the table the checks of ``ctx`` made so far, in order."""
    return ctx.__dict__.setdefault("_passes", [])


def shared(ctx: CheckContext, key: str) -> Any:
    """The result of feed ``key`` on ``ctx``'s table: computed together with every other feed the planned
    properties need (see the module docstring), then cached on the context."""
    memo = cache(ctx)
    if key in memo:
        return memo[key]
    wanted = {key}
    planned = tuple(getattr(ctx, "planned", None) or ())
    for prop in planned:
        if prop in NEEDS:
            wanted.update(NEEDS[prop](ctx))
    for k in list(wanted):
        wanted.update(AFTER.get(k, ()))
    todo = [k for k in FEEDS if k in wanted and k not in memo]
    first = [k for k in todo if k not in SECOND]
    second = [k for k in todo if k in SECOND]
    early = {}
    from ..encodings.parallel import pool, workers

    for k in second:
        if k in EARLY and k + ":early" not in memo:
            tasks, combine = EARLY[k](ctx)
            early[k] = ([pool(workers()).submit(t) for t in tasks], combine)
    if first:
        run(ctx, first, planned)
    scanned = memo.get("scan")
    if scanned is not None and not scanned.finite and key not in second:
        # a NaN or an infinity: every property that reads the second read is not judged (it needs ``finite``), so
        # neither it nor the fits it waits for are worth their work
        for futures, _ in early.values():
            for f in futures:
                f.cancel()
        for futures, _ in early.values():
            for f in futures:
                if not f.cancelled():
                    f.exception()  # a fit already running ends (its result is dropped)
        return memo[key]
    for k, (futures, combine) in early.items():
        memo[k + ":early"] = combine([f.result() for f in futures])
    if second:
        run(ctx, second, planned)
    return memo[key]


def run(ctx: CheckContext, keys: list[str], planned: tuple[str, ...] = ()) -> None:
    """One read of ``ctx.table`` feeding ``keys`` (in registry order, so dependencies finish first)."""
    table = ctx.table
    feeds = [FEEDS[k](ctx) for k in keys]
    n = table.shape[0]
    step = rows_per_block(int(np.prod(table.shape[1:], dtype=np.int64)) if table.ndim > 1 else 1, BLOCK_ELEMS)
    starts = list(range(0, n, step))
    rights = [(f, f.right) for f in feeds if f.right is not None]
    right = np.hstack([r for _, r in rights]) if rights else None
    edges = np.cumsum([0] + [r.shape[1] for _, r in rights])

    def work(a: int) -> list[Any]:
        # a NaN or an infinity makes sums of its rows NaN without a warning: ``finite`` fails it by name and the
        # properties that read those sums are not judged (``skipped``); errstate is thread-local, so set here
        with np.errstate(invalid="ignore", over="ignore"):
            return _work(a)

    def _work(a: int) -> list[Any]:
        b = min(a + step, n)
        x = np.asarray(table[a : min(b + HALO, n)], dtype=np.float64)
        blk = Block(a, b, np.asarray(table[a:b]), x)
        if right is not None:
            prod = blk.rows @ right
            blk.right = {f.key: prod[:, edges[i] : edges[i + 1]] for i, (f, _) in enumerate(rights)}
        chunked = [f.chunk for f in feeds if f.chunk is not None]
        if chunked:
            sub = max(1, CHUNK_ELEMS // max(1, x.size // max(1, len(x))))
            for s in range(0, b - a, sub):
                e = min(s + sub, b - a)
                for chunk in chunked:
                    chunk(blk, s, e)
        return [blk.acc.pop(f.key, []) if f.block is None else f.block(blk) for f in feeds]

    if len(starts) > 1:
        from ..encodings.parallel import pool, workers

        jobs = [pool(workers()).submit(work, a) for a in starts]
        results = [j.result() for j in jobs]
    else:
        results = [work(a) for a in starts]
    memo = cache(ctx)
    for i, f in enumerate(feeds):
        memo[f.key] = f.finish([r[i] for r in results])
    served = [p for p in planned if p in NEEDS and set(NEEDS[p](ctx)) & set(keys)]
    passes(ctx).append(Pass("table", len(starts), n, [f.what for f in feeds], served))


# ----- one scan of the primary table ---------------------------------------------------------------
@dataclass
class Scan:
    """What one pass over a 2-D table measures: finiteness, magnitude and row norms."""

    rows: int
    cols: int
    nan: int
    inf: int
    max_abs: float  # over finite entries
    norms: np.ndarray  # float64 row norms (NaN for rows with non-finite entries)

    @property
    def finite(self) -> bool:
        return self.nan == 0 and self.inf == 0

    @property
    def max_norm(self) -> float:
        return float(np.nanmax(self.norms)) if self.rows and not np.all(np.isnan(self.norms)) else 0.0

    @property
    def rms_norm(self) -> float:
        return float(np.sqrt(np.nanmean(self.norms**2))) if self.rows else 0.0


def scan(ctx: CheckContext) -> Scan:
    """Finiteness, magnitude and row norms of ``ctx.table`` (the ``scan`` feed of the shared sweep)."""
    return shared(ctx, "scan")


def _scan_feed(ctx: CheckContext) -> Any:
    t = ctx.table
    norms = np.empty(t.shape[0], dtype=np.float64)

    def chunk(blk: Block, s: int, e: int) -> None:
        b = blk.x[s:e]
        sq = np.einsum("ij,ij->i", b, b)
        a = blk.start + s
        if np.isfinite(sq).all():  # a non-finite entry makes its row's sum non-finite: nothing to count
            norms[a : a + len(b)] = np.sqrt(sq)
            blk.acc.setdefault("scan", []).append((0, 0, max(float(b.max()), -float(b.min())) if b.size else 0.0))
            return
        nan = inf = 0
        fin = np.isfinite(b)
        bad = None
        if not fin.all():
            nan = int(np.isnan(b).sum())
            inf = int(np.isinf(b).sum())
            bad = ~fin.all(axis=1)
            b = np.where(fin, b, 0.0)
        n = np.sqrt(np.einsum("ij,ij->i", b, b))
        if bad is not None:
            n[bad] = np.nan
        norms[a : a + len(b)] = n
        blk.acc.setdefault("scan", []).append((nan, inf, float(np.abs(b).max()) if b.size else 0.0))

    def finish(parts: list[list[tuple[int, int, float]]]) -> Scan:
        flat = [c for p in parts for c in p]
        return Scan(
            t.shape[0],
            t.shape[1],
            sum(c[0] for c in flat),
            sum(c[1] for c in flat),
            max([c[2] for c in flat], default=0.0),
            norms,
        )

    return Feed(
        "scan",
        "non-finite counts, largest magnitude, row norms",
        None,
        finish,
        chunk=chunk,
    )


FEEDS["scan"] = _scan_feed
