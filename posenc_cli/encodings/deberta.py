r"""DeBERTa-v2/v3 relative positions: the (log-bucketed) relative position of every query/key pair.

He et al., "DeBERTa: Decoding-enhanced BERT with Disentangled Attention" (ICLR 2021) and DeBERTa-v3, as HF
transformers ``src/transformers/models/deberta_v2/modeling_deberta_v2.py`` computes them
(``build_relative_position`` and ``make_log_bucket_position``). The relative position runs from the query to
the key, :math:`r = i - j` (the opposite sign of T5's), and with ``position_buckets`` :math:`B > 0`,
:math:`m = \lfloor B/2 \rfloor` and :math:`P` = ``max_relative_positions``:

.. math::

    \mathrm{rel\_pos}[i, j] = \begin{cases} r & |r| \le m \\
    \mathrm{sign}(r)\,\Big(\Big\lceil \frac{\ln(|r| / m)}{\ln((P - 1) / m)}\,(m - 1) \Big\rceil + m\Big)
    & |r| > m \end{cases}

The logarithmic branch is evaluated as PyTorch does it, in float32: ``fl32(|r| / m)`` (true division of
integers), a correctly rounded float32 ``log``, division by the float32 ``log`` of ``fl32((P - 1) / m)``
(a Python float made a float32 tensor), multiplication by :math:`m - 1`, ``ceil``. With ``position_buckets=0``
(the config's -1: no buckets) the table is :math:`i - j` itself. The attention then indexes its relative
embeddings with ``clamp(rel_pos + k, 0, 2k - 1)`` (:math:`k` = the buckets, else ``max_relative_positions``):
``c2p`` is that index.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import ParameterError
from ._integer import IntegerTable
from .base import TensorSpec, param
from .relative import _log_float32, _toeplitz_rows

INT64 = np.dtype("int64")


def deberta_log_bucket(relative_pos: np.ndarray, bucket_size: int, max_position: int) -> np.ndarray:
    """``make_log_bucket_position`` of transformers' DeBERTa-v2 in NumPy, float32 rounding included (int64)."""
    rel = np.asarray(relative_pos, dtype=np.int64)
    mid = bucket_size // 2
    a = np.abs(rel)
    big = a > mid
    x = a[big].astype(np.float32) / np.float32(mid)  # int64 / int: float32 true division (exact inputs)
    den = _log_float32(np.array([np.float32((max_position - 1) / mid)]))[0]
    y = (_log_float32(x) / den) * np.float32(mid - 1)
    log_pos = np.ceil(y).astype(np.int64) + mid
    out = rel.copy()
    out[big] = np.sign(rel[big]) * log_pos
    return out


@dataclass(frozen=True)
class Deberta(IntegerTable):
    """DeBERTa-v2/v3 relative positions ``rel_pos[i, j]`` (log buckets of ``i - j``) and the index ``c2p``."""

    KIND = "deberta"
    SUMMARY = "DeBERTa-v2/v3 relative positions i - j in log buckets, bit for bit with HF transformers"
    REFERENCES = (
        "huggingface/transformers src/transformers/models/deberta_v2/modeling_deberta_v2.py "
        "build_relative_position, make_log_bucket_position, DisentangledSelfAttention (c2p_pos)",
        "paper: He et al. 2021 (DeBERTa), section 3.1; DeBERTa-v3 (He et al. 2023) uses position_buckets 256",
    )
    PRESETS = {"v3": {"position_buckets": 256, "max_relative_positions": 512}}
    PRESET_DOCS = {"v3": "microsoft/deberta-v3-*: position_buckets 256, max_relative_positions 512 (max positions)"}
    PRIMARY = "rel_pos"
    ROLES = {"rel_pos": "matrix", "c2p": "matrix"}
    PROPERTIES = {"finite": True, "matches-spec": True, "toeplitz": True}

    position_buckets: int = param(256, "log buckets per side B (0: none, the config's -1)", low=0)
    max_relative_positions: int = param(512, "P: the largest relative position the buckets reach", low=1)

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "deberta:hints_deberta"

    def validate(self) -> None:
        if self.position_buckets and self.position_buckets // 2 < 2:
            raise ParameterError(
                f"position_buckets={self.position_buckets} leaves no logarithmic bucket; pass 4 or more, or 0"
            )
        if self.position_buckets and self.max_relative_positions - 1 <= self.position_buckets // 2:
            raise ParameterError(
                f"max_relative_positions={self.max_relative_positions} must exceed position_buckets/2 + 1 = "
                f"{self.position_buckets // 2 + 1}; raise it"
            )

    @cached_property
    def _lut(self) -> np.ndarray:
        # the lookup runs over j - i; DeBERTa's r is i - j
        r = -np.arange(-(self.length - 1), self.length, dtype=np.int64)
        if self.position_buckets > 0:
            r = deberta_log_bucket(r, self.position_buckets, self.max_relative_positions)
        return r

    @property
    def span(self) -> int:
        """``att_span``: the buckets when given, else max_relative_positions."""
        return self.position_buckets if self.position_buckets > 0 else self.max_relative_positions

    def tensor_specs(self) -> dict[str, TensorSpec]:
        n = self.length
        return {"rel_pos": TensorSpec("rel_pos", (n, n), INT64), "c2p": TensorSpec("c2p", (n, n), INT64)}

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        lut = self._lut if name == "rel_pos" else np.clip(self._lut + self.span, 0, 2 * self.span - 1)
        out[...] = _toeplitz_rows(lut, self.length, start, stop)


# ----- identification hints (read by posenc_cli.inspect.identification; analysis loads only when identifying) -
#: max_relative_positions tried first (DeBERTa-v2/v3 checkpoints: max_position_embeddings 512)
COMMON_P = (512, 256, 1024, 2048, 4096, 128, 8192)
