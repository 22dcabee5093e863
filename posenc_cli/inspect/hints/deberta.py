"""The structure reader of the DeBERTa relative-position kind (``encodings/deberta.py``): integer Toeplitz
``i - j`` with logarithmic buckets beyond ``B/2``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...encodings.deberta import COMMON_P, deberta_log_bucket
from .. import analysis as an
from ..candidates import Candidate
from .relative import _integer_toeplitz


def hints_deberta(tensors: dict[str, Any], ana: an.TableAnalysis, kind_cls: Any) -> list[Candidate]:
    """Integer Toeplitz ``i - j`` (decreasing along a row), exact up to B/2 then logarithmic buckets; a table
    shorter than B/2 cannot show the buckets, so DeBERTa-v3's published values are proposed first."""
    fit = _integer_toeplitz(ana)
    if fit is None:
        return []
    n = fit.n
    r = -np.arange(-(n - 1), n, dtype=np.int64)  # i - j along the lookup
    lut = fit.lut.astype(np.int64)
    if np.array_equal(lut, r):
        out = [Candidate(kind_cls.KIND, {"length": n, "position_buckets": 256, "max_relative_positions": 512},
                         note="i - j, no bucket reached at this length (DeBERTa-v3 values)")]  # fmt: skip
        out.append(Candidate(kind_cls.KIND, {"length": n, "position_buckets": 0, "max_relative_positions": 512},
                             note="i - j without buckets"))  # fmt: skip
        return out
    # the first |r| off the diagonal rule bounds B/2 from above (a few buckets past B/2 still equal r)
    first = int(np.abs(r)[lut != r].min())
    sizes = sorted({2**k for k in range(2, 14) if 2 ** (k - 1) < first} | {2 * (first - 1)})
    out = []
    for b in sizes:
        for p in COMMON_P:
            if b // 2 >= 2 and p - 1 > b // 2 and np.array_equal(deberta_log_bucket(r, b, p), lut):
                params = {"length": n, "position_buckets": b, "max_relative_positions": p}
                out.append(Candidate(kind_cls.KIND, params, note=f"i - j, log buckets beyond {b // 2}"))
    return out[:6]
