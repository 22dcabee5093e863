"""xPos (Sun et al. 2022, "A Length-Extrapolatable Transformer"), kind ``xpos``: the per-position scale that
rotary-embedding-torch multiplies into queries (and divides out of keys),

.. math::

    \\zeta_k = \frac{2k + 0.4\\,d}{1.4\\,d}, \\qquad
    \\mathrm{scale}_{t,j} = \\zeta_{k(j)}^{\\,(t/\\mathrm{interpolate\\_factor} - c)/\\mathrm{scale\\_base}}

with :math:`c` = ``center`` (default ``len // 2``, rotary-embedding-torch's ``len(t) // 2``) and the
``interleaved`` (current rotary-embedding-torch: ``repeat(scale, 'n d -> n (d r)', r=2)``) or ``half`` (its
releases before the ``src/`` layout: ``cat((scale, scale))``) column order.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...errors import ParameterError, ref
from ..base import Encoding, TensorSpec, param
from .core import LAYOUTS, MAX_POSITION, place_pairs


@dataclass(frozen=True)
class XPos(Encoding):
    """xPos per-position scales (rotary-embedding-torch ``get_scale``): one tensor ``scale`` of shape (len, dim)."""

    KIND = "xpos"
    SUMMARY = "xPos length-extrapolatable RoPE scales (Sun et al. 2022), as rotary-embedding-torch computes them"
    REFERENCES = (
        "paper: Sun et al. 2022, A Length-Extrapolatable Transformer (arXiv:2212.10554), zeta_k = (2k/d + 0.4) / 1.4",
        "layout=interleaved: lucidrains/rotary-embedding-torch src/rotary_embedding_torch/rotary_embedding_torch.py get_scale (repeat 'n d -> n (d r)', r=2)",
        "layout=half: lucidrains/rotary-embedding-torch rotary_embedding_torch/rotary_embedding_torch.py get_scale, older releases (cat((scale, scale)))",
    )
    PRIMARY = "scale"
    ROLES = {"scale": "scale"}
    PROPERTIES = {"finite": True, "matches-spec": True, "bounded": False, "unique": True, "precision": False}
    VIEWS = ("heatmap", "compare")

    scale_base: float = param(512.0, "xpos_scale_base: positions per unit of the exponent", low=0.0, low_open=True)
    layout: str = param(
        "interleaved", "column order: interleaved pairs (current) or half = cat(s, s) (older)", choices=LAYOUTS
    )
    offset: int = param(0, "position of the first row", low=-MAX_POSITION, high=MAX_POSITION)
    center: int | None = param(None, "position with scale 1 (default len // 2, rotary-embedding-torch's len(t) // 2)")
    interpolate_factor: float = param(1.0, "positions are divided by this first (rotary-embedding-torch)", low=1.0)

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "rotary:hints_xpos"

    def validate(self) -> None:
        if self.dim % 2:
            raise ParameterError(f"dim={self.dim} is odd; xpos scales come in pairs, use an even dim")
        if self.offset + self.length - 1 > MAX_POSITION:
            raise ParameterError(
                f"last position {self.offset + self.length - 1} exceeds {MAX_POSITION}; lower {ref('length')} or offset"
            )

    @cached_property
    def zeta(self) -> np.ndarray:
        """The dim/2 per-pair bases ``(2k + 0.4 d) / (1.4 d)``."""
        d = self.dim
        return (np.arange(0, d, 2, dtype=np.float64) + 0.4 * d) / (1.4 * d)

    def tensor_specs(self) -> dict[str, TensorSpec]:
        return {"scale": TensorSpec("scale", (self.length, self.dim), self.out_dtype)}

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        center = self.length // 2 if self.center is None else self.center
        t = np.arange(self.offset + start, self.offset + stop, dtype=np.float64) / self.interpolate_factor
        power = (t - center) / self.scale_base
        v = np.power(self.zeta[None, :], power[:, None])
        place_pairs(v, out, self.layout)
