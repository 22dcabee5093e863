"""Identification hints of the naive kinds: which parameters a table's structure implies (moved out of
``encodings/naive.py`` so that the kinds do not import the inspection code; the kind names its reader in
``IDENTIFY``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import analysis as an
from ..candidates import Candidate


# ----- identification hints (read by posenc_cli.inspect.identification; analysis loads only when identifying) -
def _row_constant(ana: an.TableAnalysis) -> np.ndarray | None:
    """The per-row value when every column of each sampled row is equal (else None)."""
    from .. import analysis as an

    if ana.ndim != 2 or not ana.floating:
        return None
    rows = np.unique(np.concatenate([np.arange(min(ana.n, 16)), an.spread_rows(ana.n, 64)]))
    x = an.read_rows(ana.table, rows).reshape(rows.size, -1)
    if not np.all(x == x[:, :1]):
        return None
    return x[:, 0]


def hints_index(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """Every column holds the position itself: t = offset + row."""
    from ..candidates import Candidate, base_params

    v = _row_constant(ana)
    if v is None or v[0] < 0 or v[0] != round(v[0]):
        return []
    offset = int(v[0])
    p = {**base_params(ana)}
    if offset:
        p["offset"] = offset
    return [Candidate(kind_cls.KIND, p, note=f"every column is the position (first {offset})")]


def hints_normalized(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """Every column holds (offset + row) / (offset + len - 1): the first value gives the offset."""
    from ..candidates import Candidate, base_params

    v = _row_constant(ana)
    if v is None or not (0 <= v[0] < 1) or ana.n < 2:
        return [] if v is None or ana.n >= 2 or v[0] != 0 else [Candidate(kind_cls.KIND, base_params(ana))]
    x0 = float(v[0])
    offset = round(x0 * (ana.n - 1) / (1 - x0))
    p = {**base_params(ana)}
    if offset:
        p["offset"] = offset
    return [Candidate(kind_cls.KIND, p, note=f"every column is position / last position (offset {offset})")]


def hints_binary(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """0/1 values: the bits of offset + row, most significant first."""
    from ..candidates import Candidate, base_params

    if ana.ndim != 2 or not ana.floating:
        return []
    head = ana.head
    if not np.all((head == 0) | (head == 1)):
        return []
    bits = head[0].astype(np.int64)
    offset = int("".join(map(str, bits.tolist())) or "0", 2) if bits.size <= 62 else 0
    p = {**base_params(ana)}
    if offset:
        p["offset"] = offset
    return [Candidate(kind_cls.KIND, p, note=f"rows are bit patterns (first {offset})")]
