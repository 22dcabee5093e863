r"""Multimodal RoPE (M-RoPE, Qwen2-VL / Qwen2.5-VL), kind ``mrope``: rotary tables for 3-D position ids.

Each token has three position ids :math:`(p^{(0)}, p^{(1)}, p^{(2)})` = (temporal, height, width). The
``d/2`` frequencies :math:`\omega_k = \mathrm{base}^{-2k/d}` are split into consecutive sections of sizes
``mrope_section`` (e.g. ``[16, 24, 24]`` for a head of 128); frequency :math:`k` in section :math:`s(k)` turns
with position id :math:`p^{(s(k) \bmod 3)}`, and the tables use the ``half`` layout:

.. math::

    \cos_{i,j} = \cos\big(p_i^{(s(k))}\,\omega_k\big),\quad \sin_{i,j} = \sin\big(p_i^{(s(k))}\,\omega_k\big),
    \qquad k = j \bmod d/2

(huggingface/transformers ``Qwen2VLRotaryEmbedding.recomposition_frequencies``: ``cat([m[i % 3] for i, m in
enumerate(freq.split(mrope_section))])`` then ``cat((freq, freq))``; ``apply_rotary_pos_emb`` with
``rotate_half``).

Position ids, following ``Qwen2VLModel.get_rope_index`` / ``get_vision_position_ids`` (transformers 5.x) for
one image or video:

* text only (``grid`` unset): all three ids equal the row index, so the tables equal ``rope`` with ``layout=half``;
* ``grid=TxHxW`` (the language model's grid, i.e. the vision grid divided by ``spatial_merge_size``), a vision
  block of ``T*H*W`` tokens starting at row ``s = text_offset``: token :math:`(t, h, w)` (row-major) gets
  :math:`(\lfloor t \cdot \mathrm{time\_interval} \rfloor + s,\ h + s,\ w + s)`; rows before it are text
  :math:`(i, i, i)`, rows after it continue as text from :math:`s + \max(H, W)`:
  :math:`i - T H W + \max(H, W)` (transformers 5 advances by ``max(grid_h, grid_w) // spatial_merge_size``).
  ``time_interval`` is 1 for images and Qwen2-VL videos, ``tokens_per_second * second_per_grid_t`` for
  Qwen2.5-VL videos.

``mrope_interleaved`` (Qwen3-VL, ``Qwen3VLTextRotaryEmbedding.recomposition_frequencies``): instead of
consecutive sections, frequency :math:`k` turns with height when :math:`k \bmod 3 = 1` and
:math:`k < 3\,\mathrm{section}_1`, with width when :math:`k \bmod 3 = 2` and :math:`k < 3\,\mathrm{section}_2`,
else with the temporal id.

Angles are exact (:mod:`.._trig`), like ``rope``; HF computes them in float32 (error ~ ``|p w| * 2**-24``).
``inv_freq_dtype=float32`` takes HF's float32 frequencies (as ``rope`` does) and keeps the angles exact;
``offset`` adds to every position id (text-only M-RoPE equals ``rope`` at the same offset, row for row).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...errors import ParameterError
from .. import _trig
from ..base import Encoding, TensorSpec, param
from .core import INV_FREQ_DTYPES, MAX_POSITION
from .scaling import _default_exact, _default_f32, _exact


def parse_grid(text: str) -> tuple[int, int, int]:
    """``"TxHxW"`` (or ``"HxW"`` for one frame) as three positive ints."""
    parts = [p.strip() for p in str(text).lower().split("x")]
    if len(parts) == 2:
        parts = ["1", *parts]
    try:
        t, h, w = (int(p) for p in parts)
    except ValueError:
        raise ParameterError(f"grid={text!r} is not TxHxW; use e.g. grid=1x16x16 (temporal x height x width)") from None
    if min(t, h, w) < 1:
        raise ParameterError(f"grid={text!r} has a zero or negative size; every side must be >= 1")
    return t, h, w


@dataclass(frozen=True)
class MRope(Encoding):
    """Qwen2-VL multimodal RoPE tables: ``cos`` and ``sin`` (len x dim, half layout) and ``inv_freq``."""

    KIND = "mrope"
    SUMMARY = "multimodal RoPE (Qwen2-VL M-RoPE): 3-D position ids (temporal, height, width) by frequency section"
    REFERENCES = (
        "paper: Wang et al. 2024, Qwen2-VL (arXiv:2409.12191), section 2.1 M-RoPE",
        (
            "huggingface/transformers src/transformers/models/qwen2_vl/modeling_qwen2_vl.py Qwen2VLRotaryEmbedding "
            "(recomposition_frequencies), apply_rotary_pos_emb (rotate_half), Qwen2VLModel.get_rope_index"
        ),
        (
            "huggingface/transformers src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py get_rope_index "
            "(video time_interval = tokens_per_second * second_per_grid_t)"
        ),
    )
    PRIMARY = "cos"
    ROLES = {"cos": "cos", "sin": "sin", "inv_freq": "inv-freq"}
    PROPERTIES = {"finite": True, "matches-spec": True, "bounded": True, "pythagorean": True, "norm-preserving": True}
    VIEWS = ("heatmap", "compare")
    EXAMPLE = {"length": 16, "dim": 8, "mrope_section": (2, 1, 1)}

    base: float = param(1_000_000.0, "frequency base theta (HF rope_theta; Qwen2-VL 1e6)", low=0.0, low_open=True)
    mrope_section: tuple[int, ...] = param(
        (16, 24, 24), "frequencies per axis (temporal, height, width); sum dim/2", low=1
    )
    grid: str | None = param(None, "vision block TxHxW (language-model grid, after spatial merge); none: text only")
    text_offset: int = param(0, "text tokens before the vision block", low=0, high=MAX_POSITION)
    time_interval: float = param(
        1.0, "temporal id step (Qwen2.5-VL video: tokens_per_second * second_per_grid_t)", low=0.0
    )
    mrope_interleaved: bool = param(
        False, "sections interleaved T, H, W frequency by frequency (Qwen3-VL); false: consecutive (Qwen2-VL)"
    )
    inv_freq_dtype: str = param(
        "float64", "float32 follows HF's float32 inv_freq arithmetic; angles stay exact", choices=INV_FREQ_DTYPES
    )
    offset: int = param(0, "added to every position id (as rope's offset: row i of text is offset + i)",
                        low=-MAX_POSITION, high=MAX_POSITION)  # fmt: skip

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "rotary:hints_mrope"

    def validate(self) -> None:
        if self.dim % 2:
            raise ParameterError(f"dim={self.dim} is odd; rotary tables need an even head dim")
        if self.mrope_interleaved and len(self.mrope_section) != 3:
            raise ParameterError(
                f"mrope_interleaved needs mrope_section of three sizes (T, H, W), got {list(self.mrope_section)}"
            )
        if sum(self.mrope_section) != self.dim // 2:
            raise ParameterError(
                f"mrope_section={list(self.mrope_section)} sums to {sum(self.mrope_section)}; it must sum to "
                f"dim/2 = {self.dim // 2} (the rotated half)"
            )
        # ids do not grow with the row: text after a vision block restarts at s + max(H, W), below the block's
        # last temporal id. The largest |id| is in the first row (a negative offset), the last row or the
        # block's last row (every axis peaks there).
        rows = [0, self.length - 1]
        if self.grid is not None:
            t, h, w = self.grid_thw
            if t * h * w > MAX_POSITION or (t - 1) * self.time_interval > MAX_POSITION:
                raise ParameterError(f"grid={self.grid} is too large; positions must stay below {MAX_POSITION}")
            block_end = min(self.text_offset + t * h * w, self.length) - 1
            if block_end >= self.text_offset:
                rows.append(block_end)
        top = max(int(np.abs(self.position_ids(r, r + 1)).max()) for r in rows) if self.length else 0
        if top > MAX_POSITION:
            raise ParameterError(f"position {top} exceeds {MAX_POSITION}; lower length, the grid or time_interval")

    @cached_property
    def grid_thw(self) -> tuple[int, int, int]:
        assert self.grid is not None
        return parse_grid(self.grid)

    @cached_property
    def _freqs(self) -> tuple[np.ndarray, np.ndarray]:
        """The dim/2 frequencies as a double-double, read-only (shared: :func:`_trig.frequencies_once`)."""
        return _trig.frequencies_once(self.params_key(), self._compute_freqs)

    def _compute_freqs(self) -> tuple[np.ndarray, np.ndarray]:
        from decimal import Decimal

        if self.inv_freq_dtype == "float32":
            hi = _default_f32(self.base, self.dim).astype(np.float64)
            return hi, np.zeros_like(hi)  # the float32 values are the frequencies, exactly

        def rule(_: object) -> list:
            return _default_exact(Decimal(self.base), self.dim, self.dim // 2)

        return _trig.double_double(_exact(rule)(self))  # type: ignore[arg-type]

    @cached_property
    def axis(self) -> np.ndarray:
        """The position axis (0 temporal, 1 height, 2 width) of each of the dim/2 frequencies."""
        if self.mrope_interleaved:
            axis = np.zeros(self.dim // 2, dtype=np.intp)
            for a in (1, 2):  # Qwen3-VL: freqs_thw[..., a:3 * section[a]:3] = freq[a]
                axis[a : 3 * self.mrope_section[a] : 3] = a
            return axis
        return np.concatenate([np.full(n, i % 3) for i, n in enumerate(self.mrope_section)]).astype(np.intp)

    def inv_freq(self) -> np.ndarray:
        return self._freqs[0].copy()

    def position_ids(self, start: int, stop: int) -> np.ndarray:
        """The (temporal, height, width) ids of rows ``[start, stop)``, shape (stop - start, 3), int64."""
        i = np.arange(start, stop, dtype=np.int64)
        ids = np.repeat(i[:, None], 3, axis=1)
        if self.grid is None:
            return ids + self.offset
        t, h, w = self.grid_thw
        s, n = self.text_offset, t * h * w
        vis = (i >= s) & (i < s + n)
        k = i[vis] - s
        tt = np.floor((k // (h * w)).astype(np.float64) * self.time_interval).astype(np.int64)
        ids[vis, 0] = tt + s
        ids[vis, 1] = (k // w) % h + s
        ids[vis, 2] = k % w + s
        after = i >= s + n
        # text after the block continues from s + max(H, W) whatever the frames (transformers 5.18's
        # get_rope_index, tests/data/golden/hf_qwen2_5_vl.json: a 3-frame video, time_interval 4)
        ids[after] = (i[after] - n + max(h, w))[:, None]
        return ids + self.offset

    def extra_metadata(self) -> dict[str, str]:
        return {"layout": "half", "attention_scaling": "1.0"}

    def tensor_specs(self) -> dict[str, TensorSpec]:
        n, d = self.length, self.dim
        return {
            "cos": TensorSpec("cos", (n, d), self.out_dtype),
            "sin": TensorSpec("sin", (n, d), self.out_dtype),
            "inv_freq": TensorSpec("inv_freq", (d // 2,), np.dtype(self.inv_freq_dtype)),
        }

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        w_hi, w_lo = self._freqs
        if name == "inv_freq":
            out[...] = w_hi[start:stop]
            return
        if name not in ("cos", "sin"):
            raise ParameterError(f"mrope has no tensor {name!r}; choose from: cos, sin, inv_freq")
        pos = self.position_ids(start, stop)[:, self.axis].astype(np.float64)  # (rows, d/2)
        s, c = _trig.sincos_pairs(pos, w_hi[None, :], w_lo[None, :])
        v = s if name == "sin" else c
        half = self.dim // 2
        out[:, :half] = v
        out[:, half:] = v


def rows_needed(grid: str | None, text_offset: int, text_after: int) -> int:
    """Rows of a sequence of ``text_offset`` text tokens, the grid's vision tokens and ``text_after`` text."""
    n = math.prod(parse_grid(grid)) if grid else 0
    return text_offset + n + text_after
