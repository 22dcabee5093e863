"""The rotary family: RoPE with its scaling registry (:mod:`.scaling`) and xPos.

* :mod:`.core`: :class:`Rope`, the rotary cos/sin tables;
* :mod:`.scaling`: one entry per HF ``rope_type`` (frequencies, attention factor, HF name, reference);
* :mod:`.xpos`: :class:`XPos`, the per-position scales of xPos.

A model's config.json is read by :mod:`posenc_cli.models.hf_config`, which imports this package (never the
other way round).
"""

from .core import Rope
from .xpos import XPos

__all__ = ["Rope", "XPos"]
