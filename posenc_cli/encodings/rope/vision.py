r"""2-D rotary tables of vision towers over a patch grid, kind ``rope-2d``.

A grid ``grid=HxW`` of patches, each at coordinates :math:`(y, x)` (row, column). The head's :math:`d/2`
rotation pairs are split in two halves: the first :math:`d/4` pairs turn with the first axis of ``axes``, the
other :math:`d/4` with the second. Pair :math:`k` of a half turns by angle :math:`(c + s)\,\omega_k`, where
:math:`c` is the patch's coordinate on that axis, :math:`s` = ``position_start``, optionally rescaled to a
reference grid (``ref_grid``: :math:`c \cdot r / n`, EVA's rule) and

* ``frequencies=shared``: both axes take the same :math:`d/4` frequencies
  :math:`\omega_k = \mathrm{base}^{-4k/d}` (Qwen2-VL, Llama 4, EVA02);
* ``frequencies=alternate``: the head's :math:`d/2` frequencies :math:`\mathrm{base}^{-2j/d}` are dealt
  alternately, even :math:`j` to the first axis and odd :math:`j` to the second (Pixtral).

``layout`` says which features form pair :math:`k` (as rope's ``layout``): ``half`` pairs :math:`(k, k + d/2)`
(``rotate_half``: cos/sin are the :math:`d/2` angles written twice), ``interleaved`` pairs
:math:`(2k, 2k + 1)` (complex pairs, timm's ``rot``: each angle written twice in a row).

Rows: the grid's patches in the order the attention blocks see them, between ``prefix_rows`` rows before the
grid and ``suffix_rows`` after it that are not rotated (class and register tokens: cos 1, sin 0; the last
``registers`` of the prefix rows are register tokens, after the class token as timm's ``Eva._pos_embed`` puts
them, and are labelled ``reg0, reg1, ...``). Patches are
row-major (``y * W + x``), or with ``merge=m`` in spatial-merge order (each :math:`m \times m` block of patches
consecutive, blocks row-major: ``get_vision_position_ids``), or with ``window=w`` (Qwen2.5-VL) the merge
blocks in window order (each :math:`w \times w` window of blocks consecutive, windows row-major, partial
windows at the right and bottom edges: ``get_vision_window_index``).

Towers (presets; each from the model's own code, transformers 5.24 / timm 1.0.31):

* ``pixtral``: ``models/pixtral/modeling_pixtral.py`` ``PixtralVisionRotaryEmbedding``
  (``inv_freq_2d = cat([inv_freq[0::2], inv_freq[1::2]])``; ``recomposition_frequencies`` takes height with the
  even frequencies and width with the odd ones, then ``cat([freq_hw, freq_hw])``), ``apply_rotary_pos_emb``
  (``rotate_half``), positions ``meshgrid(arange(H), arange(W), indexing="ij")``;
* ``qwen2-vl``: ``models/qwen2_vl/modeling_qwen2_vl.py`` ``Qwen2VLVisionRotaryEmbedding`` (``spatial_dim =
  head_dim // 2``: ``base^(-arange(0, spatial_dim, 2) / spatial_dim)``, ``cat([freq_h, freq_w])`` twice),
  ``apply_rotary_pos_emb_vision`` (``rotate_half``), rows in spatial-merge order (``vision_utils.py``
  ``get_vision_position_ids``: ``reshape(h // m, m, w // m, m).transpose(1, 2)``), ``merge=2``;
* ``qwen2.5-vl``: the same with the blocks' rows permuted to window order (``modeling_qwen2_5_vl.py``
  ``Qwen2_5_VisionTransformerPretrainedModel.forward``: ``permute_input_for_window_attn`` on the hidden states
  and on the cos/sin alike, before every block; ``fullatt_block_indexes`` only change which rows attend to
  which), ``window = window_size // spatial_merge_size // patch_size`` (112 // 2 // 14 = 4);
* ``llama4``: ``models/llama4/modeling_llama4.py`` ``Llama4VisionRotaryEmbedding._compute_freqs_ci``: the class
  token is the last row (``img_idx[-1, -1] = -2``, masked to angle 0), positions start at 1
  (``frequencies_x + 1``), x (width) takes the first half, ``rope_freq = base^(-arange(0, d/2, 2) / (d/2))``,
  pairs interleaved (``vision_apply_rotary_emb``: ``view_as_complex``);
* ``eva02``: timm ``layers/pos_embed_sincos.py`` ``RotaryEmbeddingCat`` with ``in_pixels=False`` (``freq_bands(d
  // 4, temperature, step=1)``, ``_build_grid`` index grid rescaled ``t / feat_shape * ref_feat_shape``,
  ``_rope_layout`` interleaved), ``models/eva.py`` ``EvaAttention`` rotating all rows after
  ``num_prefix_tokens`` (the class token is not rotated); EVA02's ``ref_feat_shape`` is its pretraining grid
  (16x16 at 224 / 14); pass ``ref_grid``.

HF and timm compute the angles in float32 (error ~ :math:`|\theta| \cdot 2^{-24}`); posenc computes each angle
exactly (:mod:`.._trig`) from the frequencies (``inv_freq_dtype=float32``: the float32 frequencies the models
use) and rounds once to ``dtype``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ...errors import ParameterError, ref
from .. import _trig
from ..base import Encoding, TensorSpec, param
from ..grid import parse_grid
from .core import INV_FREQ_DTYPES

FREQUENCIES = ("shared", "alternate")
AXES = ("hw", "wh")
LAYOUTS = ("half", "interleaved")
#: Largest grid side: positions stay far below 2**31 for exact range reduction.
MAX_SIDE = 1 << 16


def window_order(h: int, w: int, merge: int, window: int) -> np.ndarray:
    """The merge blocks of an ``h x w`` patch grid (``h``, ``w`` multiples of ``merge``) in Qwen2.5-VL's window
    order: block indices (row-major over the ``h/merge x w/merge`` blocks) window by window, windows row-major,
    edge windows partial (``vision_utils.get_vision_window_index``, written in NumPy)."""
    bh, bw = h // merge, w // merge
    index = np.arange(bh * bw).reshape(bh, bw)
    pad_h, pad_w = window - bh % window, window - bw % window
    padded = np.full((bh + pad_h, bw + pad_w), -100, dtype=np.int64)
    padded[:bh, :bw] = index
    nh, nw = (bh + pad_h) // window, (bw + pad_w) // window
    tiles = padded.reshape(nh, window, nw, window).transpose(0, 2, 1, 3).reshape(-1)
    return tiles[tiles != -100]


def grid_rows(h: int, w: int, merge: int = 1, window: int = 0) -> np.ndarray:
    """The (y, x) coordinates of an ``h x w`` grid's patches in the order the blocks see them, shape (h*w, 2)."""
    y, x = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    if merge > 1:
        shape = (h // merge, merge, w // merge, merge)
        y = y.reshape(shape).transpose(0, 2, 1, 3)
        x = x.reshape(shape).transpose(0, 2, 1, 3)
    yx = np.stack([y.reshape(-1), x.reshape(-1)], axis=-1)
    if window:
        unit = merge * merge
        blocks = window_order(h, w, merge, window)
        yx = yx.reshape(-1, unit, 2)[blocks].reshape(-1, 2)
    return yx


@dataclass(frozen=True)
class Rope2D(Encoding):
    """2-D rotary tables of a vision tower: ``cos`` and ``sin`` (rows x dim) per patch row and ``inv_freq``."""

    KIND = "rope-2d"
    SUMMARY = "2-D rotary embedding of vision towers (Pixtral, Qwen2-VL, Llama 4, EVA02) over a patch grid"
    REFERENCES = (
        "huggingface/transformers src/transformers/models/pixtral/modeling_pixtral.py PixtralVisionRotaryEmbedding",
        "huggingface/transformers src/transformers/models/qwen2_vl/modeling_qwen2_vl.py Qwen2VLVisionRotaryEmbedding",
        "huggingface/transformers src/transformers/vision_utils.py get_vision_position_ids, get_vision_window_index",
        "huggingface/transformers src/transformers/models/llama4/modeling_llama4.py Llama4VisionRotaryEmbedding",
        "huggingface/pytorch-image-models timm/layers/pos_embed_sincos.py RotaryEmbeddingCat; timm/models/eva.py",
    )
    PRIMARY = "cos"
    ROLES = {"cos": "cos", "sin": "sin", "inv_freq": "inv-freq"}
    PROPERTIES = {"finite": True, "matches-spec": True, "bounded": True, "pythagorean": True, "norm-preserving": True}
    VIEWS = ("heatmap", "compare")
    EXTRA_ROWS_FROM = ("prefix_rows", "suffix_rows", "registers")
    EXAMPLE = {"dim": 8, "grid": "4x10"}  # wider than one Qwen2.5-VL window (4 x 4 merge blocks of 2 x 2)
    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "vision:hints_rope2d"
    PRESETS = {
        "pixtral": {"frequencies": "alternate", "axes": "hw", "layout": "half", "base": 10000.0},
        "qwen2-vl": {"frequencies": "shared", "axes": "hw", "layout": "half", "merge": 2, "base": 10000.0},
        "qwen2.5-vl": {"frequencies": "shared", "axes": "hw", "layout": "half", "merge": 2, "window": 4,
                       "base": 10000.0},
        "llama4": {"frequencies": "shared", "axes": "wh", "layout": "interleaved", "position_start": 1.0,
                   "suffix_rows": 1, "base": 10000.0},
        "eva02": {"frequencies": "shared", "axes": "hw", "layout": "interleaved", "prefix_rows": 1,
                  "base": 10000.0},
    }  # fmt: skip
    PRESET_DOCS = {
        "pixtral": "Pixtral vision: rotate_half, height on the even frequencies, width on the odd ones",
        "qwen2-vl": "Qwen2-VL vision: rotate_half, d/4 frequencies for height then width, 2x2 spatial-merge order",
        "qwen2.5-vl": "Qwen2.5-VL vision: as qwen2-vl, rows in window order (4x4 merge blocks per window)",
        "llama4": "Llama 4 vision: interleaved pairs, width then height, positions from 1, class token last",
        "eva02": "timm EVA02: interleaved pairs, height then width, class token first and unrotated; "
        "pass ref_grid (16x16 at 224/14)",
    }

    grid: str | None = param(None, "patch grid HxW (rows x columns of patches)")
    base: float = param(10000.0, "frequency base theta (rope_theta; timm's temperature)", low=0.0, low_open=True)
    frequencies: str = param(
        "shared", "shared: both axes take base^(-4k/d); alternate: even/odd of base^(-2j/d) (Pixtral)",
        choices=FREQUENCIES,
    )  # fmt: skip
    axes: str = param("hw", "the axis of the first d/4 pairs, then the other: hw (height first) or wh", choices=AXES)
    layout: str = param("half", "pairs (k, k+d/2) (rotate_half) or (2k, 2k+1) (interleaved)", choices=LAYOUTS)
    position_start: float = param(0.0, "added to every coordinate (Llama 4: 1; timm's grid_offset)")
    ref_grid: str | None = param(None, "rescale coordinates to this reference grid HxW, c * ref / n (EVA)")
    prefix_rows: int = param(0, "unrotated rows before the grid (class and register tokens)", low=0, high=64)
    suffix_rows: int = param(0, "unrotated rows after the grid (Llama 4's class token)", low=0, high=64)
    registers: int = param(0, "of the prefix rows, the last N are register tokens (after the class token)", low=0,
                           high=64)  # fmt: skip
    merge: int = param(1, "spatial merge size: m x m blocks of patches are consecutive rows", low=1, high=64)
    window: int = param(0, "window side in merge blocks (Qwen2.5-VL): rows in window order; 0: none", low=0)
    inv_freq_dtype: str = param(
        "float64", "float32 follows the models' float32 frequencies; angles stay exact", choices=INV_FREQ_DTYPES
    )

    @classmethod
    def derive_length(cls, kwargs: dict[str, Any]) -> int | None:
        grid = kwargs.get("grid")
        if grid is None:
            return None
        h, w = parse_grid(str(grid), 2)
        fields = cls.__dataclass_fields__
        extra = [int(kwargs.get(k, fields[k].default)) for k in ("prefix_rows", "suffix_rows")]
        return h * w + sum(extra)

    @cached_property
    def shape(self) -> tuple[int, int]:
        if self.grid is None:
            raise ParameterError(f"{self.KIND} needs grid=HxW (the patch grid, e.g. grid=16x16)")
        h, w = parse_grid(self.grid, 2)
        return h, w

    def validate(self) -> None:
        h, w = self.shape
        if self.dim % 4:
            raise ParameterError(f"dim={self.dim} is not a multiple of 4; a 2-D rotary head rotates d/4 pairs per axis")
        if max(h, w) > MAX_SIDE:
            raise ParameterError(f"grid={self.grid} is too large; each side must be <= {MAX_SIDE}")
        if h % self.merge or w % self.merge:
            raise ParameterError(
                f"grid={self.grid} does not fit merge={self.merge}: both sides must be multiples of {self.merge}; "
                f"use e.g. grid={_up(h, self.merge)}x{_up(w, self.merge)}"
            )
        if self.registers > self.prefix_rows:
            raise ParameterError(
                f"registers={self.registers} is more than prefix_rows={self.prefix_rows}: register tokens are prefix "
                f"rows; pass prefix_rows={self.registers} or more"
            )
        expected = h * w + self.prefix_rows + self.suffix_rows
        if self.length != expected:
            raise ParameterError(
                f"{ref('length')} {self.length} does not match grid {h}x{w} = {h * w} patches + "
                f"{self.prefix_rows + self.suffix_rows} unrotated rows = {expected} rows; omit {ref('length')} or "
                f"pass {ref('length')} {expected}"
            )
        if self.ref_grid is not None:
            parse_grid(self.ref_grid, 2)

    # ----- frequencies and coordinates ------------------------------------------------------------------
    @cached_property
    def _freqs(self) -> tuple[np.ndarray, np.ndarray]:
        """The d/2 pair frequencies (first axis's d/4, then the second's) as double-double (hi, lo), read-only
        (shared: :func:`_trig.frequencies_once`)."""
        return _trig.frequencies_once(self.params_key(), self._compute_freqs)

    def _compute_freqs(self) -> tuple[np.ndarray, np.ndarray]:
        from decimal import Decimal, localcontext

        d, q = self.dim, self.dim // 4
        # exponents 2j/d of base^(-2j/d): shared takes j = 2k for both axes; alternate j = 2k, then j = 2k + 1
        js = (
            [2 * k for k in range(q)] * 2
            if self.frequencies == "shared"
            else [2 * k for k in range(q)] + [2 * k + 1 for k in range(q)]
        )
        if self.inv_freq_dtype == "float32":
            f32 = np.float32
            # HF: 1.0 / (base ** (arange(0, n, 2).float() / n)) in float32 (n = d/2 shared: 2k/(d/2) = 4k/d)
            if self.frequencies == "shared":
                expo = (np.arange(0, d // 2, 2, dtype=np.int64).astype(f32) / f32(d // 2))[:q]
                one = f32(1.0) / np.power(f32(self.base), expo, dtype=f32)
                hi = np.concatenate([one, one]).astype(np.float64)
            else:
                expo = np.arange(0, d, 2, dtype=np.int64).astype(f32) / f32(d)
                full = f32(1.0) / np.power(f32(self.base), expo, dtype=f32)
                hi = np.concatenate([full[0::2], full[1::2]]).astype(np.float64)
            return hi, np.zeros_like(hi)
        with localcontext() as ctx:
            ctx.prec = 60
            ln = Decimal(self.base).ln()
            values = [(-(Decimal(2 * j) / Decimal(d)) * ln).exp() for j in js]
        return _trig.double_double(values)

    def inv_freq(self) -> np.ndarray:
        return self._freqs[0].copy()

    @cached_property
    def coordinates(self) -> np.ndarray:
        """Per grid row (in the blocks' order), the (first-axis, second-axis) coordinates, float64 (h*w, 2)."""
        h, w = self.shape
        yx = grid_rows(h, w, self.merge, self.window).astype(np.float64)
        sides = (h, w)
        out = yx + self.position_start
        if self.ref_grid is not None:
            ref_hw = parse_grid(self.ref_grid, 2)
            out = np.stack([out[:, a] * ref_hw[a] / sides[a] for a in (0, 1)], axis=-1)
        return out if self.axes == "hw" else out[:, ::-1]

    @cached_property
    def _exact_positions(self) -> bool:
        """Whether every coordinate is an integer (exact range reduction applies)."""
        c = self.coordinates
        return bool(np.all(c == np.rint(c)))

    def extra_metadata(self) -> dict[str, str]:
        h, w = self.shape
        n = h * w
        classes = self.prefix_rows - self.registers
        extra = [f"{i}:{'cls' if classes == 1 else f'cls{i}'}" for i in range(classes)]
        extra += [f"{classes + i}:reg{i}" for i in range(self.registers)]
        extra += [f"{self.prefix_rows + n + i}:cls" for i in range(self.suffix_rows)]
        order = "window" if self.window else "merge" if self.merge > 1 else "raster"
        return {
            "pairing": self.layout,
            "attention_scaling": "1.0",
            "grid_offset": str(self.prefix_rows),
            "extra_rows": ",".join(extra),
            "row_order": order,
        }

    def tensor_specs(self) -> dict[str, TensorSpec]:
        n, d = self.length, self.dim
        return {
            "cos": TensorSpec("cos", (n, d), self.out_dtype),
            "sin": TensorSpec("sin", (n, d), self.out_dtype),
            "inv_freq": TensorSpec("inv_freq", (d // 2,), np.dtype(self.inv_freq_dtype)),
        }

    def angles(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """sin and cos of the d/2 pair angles of rows ``[start, stop)`` (float64, identity on unrotated rows)."""
        w_hi, w_lo = self._freqs
        q = self.dim // 4
        rows = np.arange(start, stop)
        grid_i = rows - self.prefix_rows
        inside = (grid_i >= 0) & (grid_i < len(self.coordinates))
        s = np.zeros((len(rows), 2 * q))
        c = np.ones((len(rows), 2 * q))
        if inside.any():
            coords = self.coordinates[grid_i[inside]]
            pos = np.concatenate([np.repeat(coords[:, :1], q, 1), np.repeat(coords[:, 1:], q, 1)], axis=1)
            if self._exact_positions:
                si, ci = _trig.sincos_pairs(pos, w_hi[None, :], w_lo[None, :])
            else:  # rescaled (EVA): fractional coordinates, angles of a few hundred radians at most
                theta = pos * (w_hi + w_lo)[None, :]
                si, ci = np.sin(theta), np.cos(theta)
            s[inside], c[inside] = si, ci
        return s, c

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        if name == "inv_freq":
            out[...] = self._freqs[0][start:stop]
            return
        if name not in ("cos", "sin"):
            raise ParameterError(f"rope-2d has no tensor {name!r}; choose from: cos, sin, inv_freq")
        s, c = self.angles(start, stop)
        v = s if name == "sin" else c
        if self.layout == "half":
            half = self.dim // 2
            out[:, :half] = v
            out[:, half:] = v
        else:
            out[:, 0::2] = v
            out[:, 1::2] = v


def _up(n: int, m: int) -> int:
    return max(m, -(-n // m) * m)
