r"""Relative position schemes: ALiBi biases, T5 buckets and Shaw et al.'s clipped relative indices.

All three are functions of the relative position :math:`j - i` between a query row :math:`i` and a key
column :math:`j`, so every ``len x len`` table is Toeplitz. Each is built from a 1-D lookup over
:math:`j - i \in [-(\mathrm{len}-1), \mathrm{len}-1]` viewed as a sliding window, so a row block never needs a
``len x len`` float64 temporary.

ALiBi (``alibi``)
-----------------
Press, Smith & Lewis, "Train Short, Test Long: Attention with Linear Biases Enables Input Length
Extrapolation" (ICLR 2022). ``--dim`` is the number of attention heads :math:`n`. With
:math:`c = 2^{\lfloor \log_2 n \rfloor}` and :math:`b` = ``max_bias`` (8 in the paper):

.. math::

    m_h = 2^{-b (h+1) / c} \quad (h < c), \qquad
    m_{c+k} = 2^{-b (2k+1) / (2c)} \quad (k < n - c)

i.e. for a power of two the geometric sequence :math:`2^{-8/n}, 2^{-16/n}, \dots` (8 heads:
1/2, 1/4, ..., 1/256), otherwise the slopes of the closest power of two below, then every other slope of
twice that (the published ``get_slopes`` rule; MPT's ``gen_slopes`` gives the same set). Slopes are
computed exactly (correctly rounded powers of two), not by repeated multiplication.

.. math::

    \mathrm{bias}[h, i, j] = -m_h\,|i - j| \qquad (\texttt{causal=false})

    \mathrm{bias}[h, i, j] = \begin{cases} -m_h (i - j) & j \le i \\ -\infty & j > i \end{cases}
    \qquad (\texttt{causal=true})

The paper (Figure 3) adds :math:`-m_h (i - j)` to causal attention scores. The reference fairseq code and
BLOOM add :math:`m_h\,j` instead (same row up to a constant, which softmax ignores) plus a separate causal
mask; MPT adds :math:`m_h (j - \mathrm{len} + 1)` when causal and :math:`-m_h |i - j|` when not
(``full=True``). posenc writes the paper's form, which equals MPT's full (bidirectional) bias and, with
``causal=true``, bakes the causal mask in as ``-inf`` so the table is exactly what is added to the scores.
Rows of ``bias`` run along the head axis: block ``[start, stop)`` is heads ``start..stop-1``.

``form`` writes a model's own tensor instead, heads x 1 x len (the row the model broadcasts over queries; the
causal mask is separate), with that code's slope arithmetic: ``bloom`` is transformers'
``models/bloom/modeling_bloom.py`` ``build_alibi_tensor`` (float32 ``pow(2^(-8/c), k)`` slopes times the key
position :math:`j`); ``falcon`` is ``models/falcon/modeling_falcon.py`` ``build_alibi_tensor`` (the same slopes
rounded to bfloat16, the positions converted to bfloat16 and the product rounded to bfloat16) divided by ``divide_by`` (FalconModel divides it by
:math:`\sqrt{d_{head}}` before adding it to the scaled scores); ``mpt`` is ``models/mpt/modeling_mpt.py``
``build_mpt_alibi_tensor`` (float32 slopes ``1 / 2^(k b / c')`` with :math:`c'` the power of two at or
above the heads, times :math:`j - (\mathrm{len} - 1)`).

T5 buckets (``t5``)
-------------------
Raffel et al. 2020, as implemented by ``T5Attention._relative_position_bucket`` in HF transformers
``src/transformers/models/t5/modeling_t5.py`` (mesh-tensorflow's ``_relative_position_bucket`` is the
original). With :math:`r = j - i` (``memory_position - context_position``), :math:`N` = ``num_buckets``:

* bidirectional: :math:`N \leftarrow \lfloor N/2 \rfloor`, bucket offset :math:`N` when :math:`r > 0`,
  :math:`r \leftarrow |r|`; unidirectional: :math:`r \leftarrow \max(-r, 0)`;
* :math:`E = \lfloor N/2 \rfloor` exact buckets: :math:`r < E` maps to :math:`r`;
* otherwise :math:`E + \mathrm{trunc}\big(\ln(r/E) / \ln(D/E) \cdot (N - E)\big)`, capped at :math:`N - 1`,
  with :math:`D` = ``max_distance``.

The logarithmic branch is reproduced in float32 exactly as PyTorch evaluates it:
``fl32(fl32(r) / E)``, a correctly rounded float32 ``log``, division by ``fl32(math.log(D / E))``
(a Python float rounded to float32), multiplication by :math:`N - E` and truncation toward zero. Where
float32 rounding puts the product a hair below an integer, T5 (and posenc) lands in the lower bucket.
(PyTorch's vectorised CPU ``logf`` is within 1 ulp, not always correctly rounded; posenc follows the
correctly rounded value, which is what glibc's ``logf`` and PyTorch's scalar path return.)

Shaw relative indices (``relative``)
------------------------------------
Shaw, Uszkoreit & Vaswani, "Self-Attention with Relative Position Representations" (NAACL 2018): the
index into the :math:`2k + 1` learned relative embeddings, as tensor2tensor's
``_generate_relative_positions_matrix`` (``tensor2tensor/layers/common_attention.py``) builds it:

.. math::

    \mathrm{index}[i, j] = \mathrm{clip}(j - i, -k, k) + k

with :math:`k` = ``max_relative_position``: 16 by default, the paper's base model (section 4.1; its big
model uses 8), 20 in tensor2tensor's ``transformer_relative`` hparams.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from functools import cached_property

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import ParameterError
from ._integer import IntegerTable
from .base import Encoding, TensorSpec, param

INT64 = np.dtype("int64")


def _toeplitz_rows(lut: np.ndarray, length: int, start: int, stop: int) -> np.ndarray:
    """Rows ``[start, stop)`` of ``T[i, j] = lut[j - i + length - 1]`` as a strided view of ``lut``."""
    windows = sliding_window_view(lut, length)  # windows[k, j] = lut[k + j]
    # row i needs k = length - 1 - i
    return windows[length - 1 - start : length - 1 - stop : -1] if stop < length else windows[length - 1 - start :: -1]


def _relative_positions(length: int) -> np.ndarray:
    """``j - i`` for the lookup: ``-(length - 1), ..., length - 1``."""
    return np.arange(-(length - 1), length, dtype=np.int64)


# ----- ALiBi -------------------------------------------------------------------------------------------------
#: How the slopes follow the head count: ``paper`` is the published power-of-two interleaving rule (the paper's
#: fairseq code, HF Bloom, MPT's gen_slopes, current MLX); ``geometric`` is 2^(-b k / n) for k = 1..n at every n
#: (MLX's nn.ALiBi.create_alibi_slope up to ml-explore/mlx 3576b547, and ports of it). They agree for powers of two.
SLOPE_RULES = ("paper", "geometric")


def alibi_slopes(heads: int, max_bias: float = 8.0, rule: str = "paper") -> np.ndarray:
    """The ALiBi slope of every head (float64), by the published power-of-two interleaving rule, or (``rule``
    geometric) as 2^(-max_bias k / heads) for every head count."""
    if rule == "geometric":
        return np.array([2.0 ** (-max_bias * (h + 1) / heads) for h in range(heads)], dtype=np.float64)
    c = 1 << (heads.bit_length() - 1)  # closest power of two <= heads
    slopes = [2.0 ** (-max_bias * (h + 1) / c) for h in range(c)]
    slopes += [2.0 ** (-max_bias * (2 * k + 1) / (2 * c)) for k in range(heads - c)]
    return np.array(slopes, dtype=np.float64)


#: ``form`` values: the paper's matrix, or one model's own heads x 1 x len tensor.
FORMS = ("paper", "bloom", "falcon", "mpt")


def bloom_slopes(heads: int) -> np.ndarray:
    """transformers' Bloom/Falcon ALiBi slopes in float32: ``pow(fl32(2^(-8/c)), k)``, then every other power of
    ``fl32(2^(-4/c))`` for the heads above the power of two :math:`c` (``_get_alibi_slopes``)."""
    c = 1 << (heads.bit_length() - 1)
    base = np.float32(2 ** (-(2 ** -(math.log2(c) - 3))))
    # float32 pow of a float32 base by a small integer: the float64 power rounded once (torch's powf)
    slopes = [np.float32(float(base) ** k) for k in range(1, c + 1)]
    if c != heads:
        extra = np.float32(2 ** (-(2 ** -(math.log2(2 * c) - 3))))
        slopes += [np.float32(float(extra) ** k) for k in range(1, 1 + 2 * min(c, heads - c), 2)]
    return np.array(slopes, dtype=np.float32)


def mpt_slopes(heads: int, max_bias: float = 8.0) -> np.ndarray:
    """transformers' MPT ALiBi slopes in float32 (``build_mpt_alibi_tensor``): ``1 / 2^(k * b / c')`` for
    :math:`k = 1..c'`, :math:`c'` the power of two at or above the heads, odd ones first when they differ."""
    c = 1 << max(heads - 1, 0).bit_length()
    expo = np.arange(1, c + 1, dtype=np.float32) * np.float32(max_bias / c)
    slopes = np.float32(1.0) / (2.0 ** expo.astype(np.float64)).astype(np.float32)
    if c != heads:
        slopes = np.concatenate([slopes[1::2], slopes[::2]])[:heads]
    return slopes.astype(np.float32)


@dataclass(frozen=True)
class Alibi(Encoding):
    """ALiBi: per-head linear attention biases; ``--dim`` is the number of heads."""

    KIND = "alibi"
    SUMMARY = "ALiBi linear attention biases (Press et al. 2022); --dim is the number of heads"
    REFERENCES = (
        "slopes: ofirpress/attention_with_linear_biases fairseq/models/transformer.py get_slopes",
        "slopes: huggingface/transformers models/bloom/modeling_bloom.py build_alibi_tensor (same values)",
        "slopes+bias: mosaicml/llm-foundry MPT gen_slopes / build_alibi_bias (alibi_bias_max = max_bias)",
        "bias: paper Figure 3, -m*(i-j) for j <= i; causal=false is MPT's full=True -m*|i-j|",
        "slopes=geometric: ml-explore/mlx python/mlx/nn/layers/positional_encoding.py ALiBi.create_alibi_slope "
        "(2^(-8k/n) for every n, up to commit 3576b547; later MLX uses the paper's rule)",
    )
    PRESETS = {"mlx": {"slopes": "geometric", "max_bias": 8.0, "causal": False}}
    DEFAULT_LENGTH = (512, "the ALiBi paper's training length L = 512 (Press et al. 2022, section 4)")
    PRESET_DOCS = {"mlx": "ml-explore/mlx nn.ALiBi up to 3576b547: slopes 2^(-8k/n) for every n, bias -slope*|i-j|"}
    PRIMARY = "bias"
    ROLES = {"bias": "matrix", "slopes": "slopes"}
    PROPERTIES = {"finite": True, "matches-spec": True, "toeplitz": True, "monotone": True}
    MONOTONE = "non-increasing-in-distance"
    #: the dtype a ``form``'s own tensor is computed in where it is coarser than its stored float32 (Falcon:
    #: bfloat16 positions times bfloat16 slopes, rounded to bfloat16): the matrix checks hold it to that rounding
    ROW_FORM_ARITHMETIC = {"falcon": "bfloat16"}
    VIEWS = ("bias",)

    causal: bool = param(False, "true: -slope*(i-j) below the diagonal and -inf above; false: -slope*|i-j|")
    max_bias: float = param(
        8.0, "b in slope_h = 2^(-b(h+1)/n): 8 in the paper (MPT's alibi_bias_max)", low=0.0, low_open=True
    )
    form: str = param(
        "paper", "paper: heads x len x len; bloom, falcon, mpt: that model's heads x 1 x len tensor", choices=FORMS
    )
    divide_by: float = param(1.0, "form=falcon: divisor of the bias (FalconModel: sqrt(head_dim))", low=0.0,
                             low_open=True)  # fmt: skip
    slopes: str = param(
        "paper",
        "slope rule for non-power-of-two head counts: paper (fairseq, Bloom, MPT) or geometric 2^(-bk/n) (MLX)",
        choices=SLOPE_RULES,
    )

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "relative:hints_alibi"

    def validate(self) -> None:
        if self.form != "paper" and self.causal:
            raise ParameterError(f"form={self.form} is the model's unmasked bias; drop causal=true or use form=paper")
        if self.form in ("bloom", "falcon") and self.max_bias != 8.0:
            raise ParameterError(f"form={self.form} fixes max_bias at 8 (its slope rule); drop max_bias")
        if self.form != "paper" and self.slopes != "paper":
            raise ParameterError(f"slopes={self.slopes} applies to form=paper; form={self.form} has its model's rule")
        if self.form != "falcon" and self.divide_by != 1.0:
            raise ParameterError("divide_by applies to form=falcon only; drop it or pass form=falcon")

    @cached_property
    def _slopes(self) -> np.ndarray:
        if self.form == "falcon":
            # the slope the model applies: its bfloat16 slope (the bias at key position 1), divided by divide_by
            # in float32 as FalconModel divides the bias (Falcon-RW-1B, head 30: 0.00058, not 0.0046)
            import ml_dtypes

            s16 = bloom_slopes(self.dim).astype(ml_dtypes.bfloat16).astype(np.float32)
            return (s16 / np.float32(self.divide_by)).astype(np.float64)
        if self.form == "bloom":
            return bloom_slopes(self.dim).astype(np.float64)
        if self.form == "mpt":
            return mpt_slopes(self.dim, self.max_bias).astype(np.float64)
        return alibi_slopes(self.dim, self.max_bias, self.slopes)

    @classmethod
    def causal_mask(cls, metadata: dict[str, str]) -> bool:
        return bool(cls.metadata_param(metadata, "causal"))

    def tensor_specs(self) -> dict[str, TensorSpec]:
        dt = self.out_dtype
        rows = 1 if self.form != "paper" else self.length
        return {
            "bias": TensorSpec("bias", (self.dim, rows, self.length), dt),
            "slopes": TensorSpec("slopes", (self.dim,), dt),
        }

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        if name == "slopes":
            out[...] = self._slopes[start:stop]
            return
        if self.form != "paper":
            out[...] = self._model_bias()[start:stop].astype(out.dtype)
            return
        d = _relative_positions(self.length)  # j - i
        dist = np.abs(d).astype(np.float64)
        for h in range(start, stop):
            # float64 slope * |j - i| (exact when the slope is a power of two), then one rounding to the dtype
            lut = (0.0 - self._slopes[h] * dist).astype(out.dtype)  # 0.0 - x: +0 on the diagonal, not -0
            if self.causal:
                lut[d > 0] = -np.inf
            out[h - start] = _toeplitz_rows(lut, self.length, 0, self.length)

    def _model_bias(self) -> np.ndarray:
        """heads x 1 x len: the ``form``'s own tensor (float32; Falcon's in bfloat16 steps), before the output
        dtype's rounding."""
        j = np.arange(self.length, dtype=np.float64)
        if self.form == "mpt":
            s = mpt_slopes(self.dim, self.max_bias)
            return (s[:, None].astype(np.float64) * (j - (self.length - 1))).astype(np.float32)[:, None, :]
        s = bloom_slopes(self.dim)
        if self.form == "bloom":  # float32 slope x int64 position: one float32 rounding of the exact product
            return (s[:, None].astype(np.float64) * j).astype(np.float32)[:, None, :]
        import ml_dtypes

        bf = ml_dtypes.bfloat16
        s16 = s.astype(bf).astype(np.float64)
        # bfloat16 x int64 -> bfloat16: torch converts the positions to bfloat16 first (257 becomes 256), then
        # rounds the product (exact in float64: two 8-bit significands) to bfloat16
        j16 = j.astype(bf).astype(np.float64)
        prod = (s16[:, None] * j16).astype(bf).astype(np.float32)
        return (prod / np.float32(self.divide_by)).astype(np.float32)[:, None, :]


# ----- T5 ----------------------------------------------------------------------------------------------------
def _log_float32(x: np.ndarray) -> np.ndarray:
    """Correctly rounded float32 natural log of positive float32 values.

    float64 ``log`` is within an ulp of float64, so rounding it to float32 is correct unless it lies
    within a few float64 ulps of a float32 rounding boundary; those rare values are redone in decimal.
    """
    x = np.asarray(x, dtype=np.float32)
    l64 = np.log(x.astype(np.float64))
    l32 = l64.astype(np.float32)
    lo = np.nextafter(l32, np.float32(-np.inf)).astype(np.float64)
    hi = np.nextafter(l32, np.float32(np.inf)).astype(np.float64)
    c = l32.astype(np.float64)
    mid_lo, mid_hi = (c + lo) / 2, (c + hi) / 2  # exact: float32 sums fit in float64
    margin = 8 * np.spacing(np.abs(l64))
    risky = np.flatnonzero((np.abs(l64 - mid_lo) <= margin) | (np.abs(l64 - mid_hi) <= margin))
    if risky.size:
        with localcontext() as ctx:
            ctx.prec = 50
            for k in risky:
                exact = Decimal(float(x[k])).ln()
                if exact < Decimal(float(mid_lo[k])):
                    l32[k] = np.float32(lo[k])
                elif exact > Decimal(float(mid_hi[k])):
                    l32[k] = np.float32(hi[k])
                else:
                    l32[k] = np.float32(c[k])
    return l32


def t5_relative_position_bucket(
    relative_position: np.ndarray, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128
) -> np.ndarray:
    """T5's ``_relative_position_bucket`` in NumPy, float32 rounding included (int64 result)."""
    rel = np.asarray(relative_position, dtype=np.int64)
    buckets = np.zeros(rel.shape, dtype=np.int64)
    n = num_buckets
    if bidirectional:
        n //= 2
        buckets += (rel > 0).astype(np.int64) * n
        r = np.abs(rel)
    else:
        r = -np.minimum(rel, 0)
    max_exact = n // 2
    is_small = r < max_exact
    large = r[~is_small]
    x = large.astype(np.float32) / np.float32(max_exact)
    y = _log_float32(x) / np.float32(math.log(max_distance / max_exact))
    z = y * np.float32(n - max_exact)
    if_large = np.minimum(max_exact + np.trunc(z).astype(np.int64), n - 1)
    value = r.copy()
    value[~is_small] = if_large
    return buckets + value


@dataclass(frozen=True)
class T5(IntegerTable):
    """T5 relative position buckets: ``buckets[i, j] = bucket(j - i)``, int64."""

    KIND = "t5"
    SUMMARY = "T5 relative position buckets (Raffel et al. 2020), bit for bit with HF transformers"
    REFERENCES = (
        "huggingface/transformers src/transformers/models/t5/modeling_t5.py T5Attention._relative_position_bucket",
        "tensorflow/mesh mesh_tensorflow/transformer/transformer_layers.py _relative_position_bucket (original)",
    )
    PRIMARY = "buckets"
    ROLES = {"buckets": "matrix"}
    PROPERTIES = {"finite": True, "matches-spec": True, "toeplitz": True, "monotone": True, "t5-saturation": True}
    MONOTONE = "non-decreasing-in-distance-each-side"
    DEFAULT_LENGTH = (512, "the T5 paper's input length of 512 tokens (Raffel et al. 2020, section 3.1.2)")

    num_buckets: int = param(32, "number of buckets (halved per direction when bidirectional)", low=2)
    max_distance: int = param(128, "distance from which every position shares the last bucket", low=1)
    bidirectional: bool = param(True, "true: separate buckets for keys after the query (encoder); false: decoder")

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "relative:hints_t5"

    def validate(self) -> None:
        n = self.num_buckets // 2 if self.bidirectional else self.num_buckets
        if n < 2:
            raise ParameterError(
                f"num_buckets={self.num_buckets} leaves no exact bucket when bidirectional; pass num_buckets=4 or more"
            )
        max_exact = n // 2
        if self.max_distance <= max_exact:
            raise ParameterError(
                f"max_distance={self.max_distance} must exceed the {max_exact} exact buckets "
                f"(num_buckets={self.num_buckets}); pass max_distance={max_exact + 1} or more"
            )

    @cached_property
    def _lut(self) -> np.ndarray:
        return t5_relative_position_bucket(
            _relative_positions(self.length), self.bidirectional, self.num_buckets, self.max_distance
        )

    def tensor_specs(self) -> dict[str, TensorSpec]:
        return {"buckets": TensorSpec("buckets", (self.length, self.length), INT64)}

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        out[...] = _toeplitz_rows(self._lut, self.length, start, stop)


# ----- Shaw et al. -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ShawRelative(IntegerTable):
    """Shaw et al. clipped relative position indices: ``index[i, j] = clip(j - i, -k, k) + k``, int64."""

    KIND = "relative"
    SUMMARY = "Shaw et al. 2018 clipped relative position indices into 2k+1 learned embeddings"
    REFERENCES = (
        "tensorflow/tensor2tensor tensor2tensor/layers/common_attention.py _generate_relative_positions_matrix",
        "paper: Shaw et al. 2018 section 3.2 (clip(j - i, -k, k)); section 4.1 k = 16 (base), k = 8 (big)",
    )
    PRESETS = {
        "paper-base": {"max_relative_position": 16},
        "paper-big": {"max_relative_position": 8},
        "tensor2tensor": {"max_relative_position": 20},
    }
    PRESET_DOCS = {
        "paper-base": "k = 16: the paper's base model (section 4.1)",
        "paper-big": "k = 8: the paper's big model (section 4.1)",
        "tensor2tensor": "k = 20: tensor2tensor/models/transformer.py transformer_relative hparams",
    }
    PRIMARY = "index"
    ROLES = {"index": "matrix"}
    PROPERTIES = {"finite": True, "matches-spec": True, "toeplitz": True, "monotone": True}
    MONOTONE = "non-decreasing-in-signed-distance"

    max_relative_position: int = param(16, "clipping distance k: 2k+1 relative embeddings", low=0)

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "relative:hints_relative"

    @cached_property
    def _lut(self) -> np.ndarray:
        k = self.max_relative_position
        return np.clip(_relative_positions(self.length), -k, k) + k

    def tensor_specs(self) -> dict[str, TensorSpec]:
        return {"index": TensorSpec("index", (self.length, self.length), INT64)}

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        out[...] = _toeplitz_rows(self._lut, self.length, start, stop)
