"""How many rows a block-by-block pass over a table reads at a time: one rule for every such pass.

A pass over a long table (a check, a comparison, a difference, a verdict) reads it a block of rows at a time, so
that memory stays bounded whatever the length. Its several NumPy passes over a block run from cache when the
block's float64 copy is about 512 KiB. Measured here: ``compare`` of 131072 x 64 took 0.30 s in 8192-row blocks
and 0.17 s in 1024-row ones; ``check`` of a 131072 x 128 pair of tables 1.8 s with 16 MiB blocks and 1.4 s with
these; the audit's difference without pictures 0.20 s with 2 MiB blocks and 0.02 s with these. (Streamed reads
and writes size their blocks by bytes instead: :func:`posenc_cli.formats.protocol.block_rows`.)
"""

from __future__ import annotations

#: float64 values per block (512 KiB)
CACHE_VALUES = 1 << 16


def rows_per_block(row_values: int, budget: int | None = None) -> int:
    """Rows per block when a row holds ``row_values`` values: about ``budget`` values a block (default
    :data:`CACHE_VALUES`), at least one row."""
    return max(1, (CACHE_VALUES if budget is None else budget) // max(1, row_values))
