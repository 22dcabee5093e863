"""What every integer-table kind shares (T5 buckets, Shaw indices, DeBERTa relative positions).

Such a kind's tables hold integers, one per query x key pair: it takes no ``dim``, its ``dtype`` is
:data:`.base.INTEGER_DTYPE` only (so that its metadata says what its bytes are; a float dtype is a ParameterError
naming the tensor), and it is drawn as a bias.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .base import INTEGER_DTYPE, Encoding, param


@dataclass(frozen=True)
class IntegerTable(Encoding):
    """The base of the integer-table kinds: no ``dim``, ``dtype`` int64 only, drawn as a query x key bias."""

    INTEGER_TABLE: ClassVar[bool] = True
    NEEDS_DIM: ClassVar[bool] = False
    VIEWS: ClassVar[tuple[str, ...]] = ("bias",)
    EXAMPLE: ClassVar[dict[str, Any]] = {"length": 4}
    dim: int | None = param(None, "unused by this kind", low=1)  # type: ignore[assignment]
    dtype: str = param(INTEGER_DTYPE, "dtype of the integer table (int64 only; a float dtype is refused)",
                       choices=(INTEGER_DTYPE,))  # fmt: skip
