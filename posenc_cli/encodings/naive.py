r"""The naive baselines every positional-encoding tutorial starts from, kept so ``check`` can show why they fail.

Positions are :math:`t = \mathrm{offset} + r` for row :math:`r = 0, \dots, \mathrm{len} - 1`.

``index`` writes the position itself into every column:

.. math::

    PE(t, k) = t

It is unbounded: values grow with the sequence and swamp the token embeddings it is added to.

``normalized`` divides by the last position so that every value lies in :math:`[0, 1]`:

.. math::

    PE(t, k) = \frac{t}{\mathrm{offset} + \mathrm{len} - 1} \quad (0 \text{ when the denominator is } 0)

It is bounded but not consistent: the same position gets a different value in sequences of different
lengths, and the step between neighbours shrinks as the sequence grows.

``binary`` writes the bits of :math:`t` over the ``dim`` columns, most significant bit first:

.. math::

    PE(t, k) = \left\lfloor t / 2^{\,d-1-k} \right\rfloor \bmod 2, \qquad k = 0, \dots, d - 1

so with ``dim=4``, :math:`t = 5` gives ``[0, 1, 0, 1]`` and positions 0..15 enumerate every 4-bit pattern
(the table quoted in the seed material). It is bounded and consistent, but discrete: neighbouring
positions can differ in many columns (7 -> 8 flips all four bits), so distances are not smooth.
Positions must fit in ``dim`` bits; a longer table would silently repeat rows, so it is refused.

All three write exact small integers (or the correctly rounded quotient) in the output dtype; ``index``
in float16/bfloat16 loses exactness above 2048/256, which is part of why it fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError, ref
from .base import Encoding, TensorSpec, param

#: Positions stay below this so that int64 arithmetic and float64 values are exact.
MAX_POSITION = 2**53


@dataclass(frozen=True)
class _Naive(Encoding):
    """Shared parameters and validation of the naive baselines."""

    offset: int = param(0, "position of the first row", low=0, high=MAX_POSITION)

    def validate(self) -> None:
        last = self.offset + self.length - 1
        if last > MAX_POSITION:
            raise ParameterError(f"last position {last} exceeds {MAX_POSITION}; lower {ref('length')} or offset")

    def tensor_specs(self) -> dict[str, TensorSpec]:
        return {"pe": TensorSpec("pe", (self.length, self.dim), self.out_dtype)}

    def _positions(self, start: int, stop: int) -> np.ndarray:
        return np.arange(self.offset + start, self.offset + stop, dtype=np.int64)


@dataclass(frozen=True)
class Index(_Naive):
    """The raw position in every column: ``pe[t, :] = t``."""

    KIND = "index"
    PROPERTIES = {
        "finite": True,
        "matches-spec": True,
        "bounded": False,
        "unique": True,
        "constant-norm": False,
        "equidistant": True,
        "offset-invariant": False,
        "shift-linear": False,
        "symmetric": True,
        "decay": False,
        "precision": False,
    }
    VIEWS = ("heatmap", "dot", "compare")
    SUMMARY = "naive baseline: the position index itself in every column (unbounded)"
    REFERENCES = ("seed: the 'use the index as the encoding' strawman of positional-encoding tutorials (pe[t, :] = t)",)

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "naive:hints_index"

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        out[...] = self._positions(start, stop).astype(np.float64)[:, None]


@dataclass(frozen=True)
class Normalized(_Naive):
    """The position divided by the last position: ``pe[t, :] = t / (offset + len - 1)``."""

    KIND = "normalized"
    PROPERTIES = {
        "finite": True,
        "matches-spec": True,
        "bounded": True,
        "unique": True,
        "constant-norm": False,
        "equidistant": True,
        "offset-invariant": False,
        "shift-linear": False,
        "symmetric": True,
        "decay": False,
        "precision": False,
    }
    VIEWS = ("heatmap", "dot", "compare")
    SUMMARY = "naive baseline: position / last position in every column (length-dependent)"
    REFERENCES = (
        "seed: the 'normalise the index to [0, 1]' strawman: pe[t, :] = t / (len - 1), 0 for a one-row table",
    )

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "naive:hints_normalized"

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        denom = self.offset + self.length - 1
        t = self._positions(start, stop).astype(np.float64)
        # t and denom are exact in float64 (<= 2**53), so t / denom is the correctly rounded quotient.
        values = t / denom if denom else np.zeros_like(t)
        out[...] = values[:, None]


@dataclass(frozen=True)
class Binary(_Naive):
    """The bits of the position over ``dim`` columns, most significant first."""

    KIND = "binary"
    PROPERTIES = {
        "finite": True,
        "matches-spec": True,
        "bounded": True,
        "unique": True,
        "constant-norm": False,
        "equidistant": False,
        "offset-invariant": False,
        "shift-linear": False,
        "symmetric": False,
        "decay": False,
        "precision": False,
    }
    VIEWS = ("heatmap", "dot", "compare")
    SUMMARY = "naive baseline: the bits of the position, most significant first (discrete)"
    REFERENCES = ("seed: the binary-counter table (positions 0..15 in 4 bits, most significant bit first)",)

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "naive:hints_binary"

    def validate(self) -> None:
        super().validate()
        last = self.offset + self.length - 1
        if self.dim < 63 and last >= 2**self.dim:
            need = last.bit_length()
            raise ParameterError(
                f"binary with dim={self.dim} holds positions below {2**self.dim}, but the last position is {last}; "
                f"pass {ref('dim')} {need} or more"
            )

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        t = self._positions(start, stop)
        shifts = np.arange(self.dim - 1, -1, -1, dtype=np.int64)
        # Positions are < 2**53, so bits at shift >= 53 are zero; clamp shifts to keep >> well defined.
        bits = (t[:, None] >> np.minimum(shifts, 62)[None, :]) & 1
        bits[:, shifts >= 62] = 0
        out[...] = bits
