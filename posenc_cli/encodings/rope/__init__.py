"""The rotary family: RoPE with its scaling registry (:mod:`.scaling`), xPos, and the HF config reader.

* :mod:`.core`: :class:`Rope`, the rotary cos/sin tables;
* :mod:`.scaling`: one entry per HF ``rope_type`` (frequencies, attention factor, HF name, reference);
* :mod:`.xpos`: :class:`XPos`, the per-position scales of xPos;
* :mod:`.hf_config`: a model's config.json -> ``rope`` parameters.
"""

from .core import Rope
from .hf_config import params_from_hf_config
from .xpos import XPos

__all__ = ["Rope", "XPos", "params_from_hf_config"]
