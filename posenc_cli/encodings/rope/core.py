r"""Rotary position embeddings (RoPE, Su et al. 2021, "RoFormer") with every HF scaling rule, and xPos scales.

RoPE rotates each pair of query/key features by an angle proportional to the position. With ``rot_dim = r``
rotated features (``r <= dim``, the head dim) there are ``r/2`` angular frequencies

.. math::

    \omega_k = \mathrm{base}^{-2k/r}, \qquad k = 0, \dots, r/2 - 1

and the tables are, for positions :math:`t = \mathrm{offset}, \dots, \mathrm{offset} + \mathrm{len} - 1`,

.. math::

    \cos_{t,j} = s\,\cos(t\,\omega_{k(j)}), \qquad \sin_{t,j} = s\,\sin(t\,\omega_{k(j)})

where :math:`s` is ``attention_scaling`` (1 except for ``yarn`` and ``longrope``; HF multiplies cos and sin by it)
and :math:`k(j)` places the frequencies in the columns:

* ``layout=half``: :math:`k(j) = j \bmod r/2`, i.e. ``cos = cat(f, f)`` (GPT-NeoX, Llama and every HF
  ``rotate_half`` model);
* ``layout=interleaved``: :math:`k(j) = \lfloor j/2 \rfloor`, the pairs ``(2k, 2k+1)`` (RoFormer, GPT-J,
  rotary-embedding-torch).

Partial rotary: ``rotary_dim`` sets ``r`` directly (GPT-J), ``partial_rotary_factor`` sets
``r = int(dim * factor)`` as HF transformers does (GPT-NeoX ``rotary_pct``, Phi-2).

Scaling rules (``scaling=``), with :math:`d = r`, :math:`b = \mathrm{base}`, :math:`L` =
``original_max_position_embeddings`` and :math:`f` = ``factor``:

* ``none``: :math:`\omega_k = b^{-2k/d}`.
* ``linear`` (position interpolation): :math:`\omega_k = b^{-2k/d} / f`.
* ``ntk`` (static NTK-aware, rotary-embedding-torch ``theta_rescale_factor``): base
  :math:`b' = b\,f^{d/(d-2)}`.
* ``dynamic`` (dynamic NTK at sequence length :math:`S` = ``seq_len``, default ``offset + len``, i.e. HF's
  ``max(position_ids) + 1``): :math:`b' = b\,\big(f\,S'/L - (f - 1)\big)^{d/(d-2)}` with :math:`S' = \max(S, L)`,
  so the table equals ``none`` while :math:`S \le L`. HF uses the model's ``max_position_embeddings`` as
  :math:`L` here.
* ``yarn`` (Peng et al. 2023): with the correction range
  :math:`c(n) = d\,\ln\!\big(L / (2\pi n)\big) / (2 \ln b)`, :math:`lo = \max(\lfloor c(\beta_{fast})\rfloor, 0)`,
  :math:`hi = \min(\lceil c(\beta_{slow})\rceil, d - 1)` (no floor/ceil when ``truncate=false``), the ramp
  :math:`\rho_k = \mathrm{clip}\big((k - lo)/(hi - lo), 0, 1\big)` and
  :math:`\omega_k = b^{-2k/d}\big(\rho_k / f + 1 - \rho_k\big)`; attention scaling
  :math:`s = 0.1 \ln f + 1` (or :math:`m(f, \mathrm{mscale}) / m(f, \mathrm{mscale\_all\_dim})` with
  :math:`m(f, a) = 0.1\,a \ln f + 1`, 1 for :math:`f \le 1`), unless ``attention_factor`` is given.
* ``llama3`` (Llama 3.1): with wavelengths :math:`\lambda_k = 2\pi/\omega_k`, components with
  :math:`\lambda_k < L/\mathrm{high\_freq\_factor}` are kept, those with :math:`\lambda_k > L/\mathrm{low\_freq\_factor}`
  are divided by :math:`f`, and in between
  :math:`\omega'_k = (1 - \sigma_k)\,\omega_k / f + \sigma_k\,\omega_k` with
  :math:`\sigma_k = (L/\lambda_k - \mathrm{low\_freq\_factor}) / (\mathrm{high\_freq\_factor} - \mathrm{low\_freq\_factor})`.
* ``longrope`` (Phi-3): :math:`\omega_k = b^{-2k/d} / e_k` with :math:`e` = ``long_factor`` when
  :math:`S > L` else ``short_factor``; :math:`s = \sqrt{1 + \ln f / \ln L}` for :math:`f > 1`.
* ``proportional`` (Gemma 4 p-RoPE): the table spans the whole head dim; the first ``r/2`` frequencies are
  :math:`b^{-2k/\mathrm{dim}} / f` (exponent over the *head* dim) and the remaining ``dim/2 - r/2`` are 0
  (cos 1, sin 0).

Tensors (``cache=full``): ``cos`` and ``sin`` of shape (len, r) and ``inv_freq`` (r/2). ``cache=onnx`` gives
``cos_cache`` and ``sin_cache`` of shape (len, r/2), the inputs of the ONNX ``RotaryEmbedding`` operator
(opset 23; its ``interleaved`` attribute chooses the layout; row ``i`` holds position ``offset + i``), scaled
by ``attention_scaling`` like the full tables, plus ``inv_freq``.

Precision. HF transformers computes ``inv_freq`` in float32 (``base ** (arange(0, d, 2).float() / d)``, then
the scaling arithmetic in float32), multiplies it by float32 positions and takes cos/sin of float32 angles,
so its tables are off by about ``|t w| * 2**-24`` (1e-3 at t = 8192). posenc evaluates each scaling formula to
~60 digits (:mod:`decimal`), keeps :math:`\omega_k` as a double-double and takes exactly range-reduced cos/sin
(:mod:`._trig`), so every table is correctly rounded to within about an ulp of the output dtype.
``inv_freq_dtype=float32`` instead follows HF's float32 arithmetic for ``inv_freq`` step by step (float32
exponent ``2k/d``, float32 ``pow`` rounded correctly, float32 reciprocal and scaling; torch's own float32
``pow`` is not always correctly rounded, so values can differ from torch's by up to 2 float32 ulps) and then uses those float32 frequencies
exactly: the angles are still exact, so this reproduces HF's frequencies but not its float32 angle error.

Named precision mistakes. ``inv_freq_dtype=bfloat16`` / ``float16`` are HF's float32 ``inv_freq`` rounded to
that dtype, as ``model.to(torch.bfloat16)`` rounds the ``inv_freq`` buffer (the forward widens it back to float32
before the product: the frequencies are then off by up to 2**-9 relative, and the angles by that times the
position). ``sin_sign=-1`` negates the sin tables: the table in ``rotate_half``'s convention of a model whose own
``rotate_half`` flips the signs (``cat(x2, -x1)``: nanochat's ``apply_rotary_emb``, transformers'
``modeling_nanochat.py`` ``rotate_half``), which rotates by minus the angle.
``angle_dtype=float16`` / ``bfloat16`` computes the angles in that dtype (``torch.outer`` of half-precision
positions and ``inv_freq``, as under autocast): positions, frequencies and their product rounded to it.
``position_dtype=float16`` / ``bfloat16`` rounds each position to that dtype before the product
(``torch.arange(n, dtype=x.dtype)`` in a half-precision model): exact integers end at 2048 (float16) or 256
(bfloat16), beyond them neighbouring rows share an angle.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ...errors import ParameterError, ref
from .. import _angleadd, _trig
from ..base import AngleTerms, Encoding, TensorSpec, format_value, param, resolve_dtype
from .scaling import SCALINGS, attention_scaling, optional_parameters

LAYOUTS = ("half", "interleaved")
CACHES = ("full", "onnx")
INV_FREQ_DTYPES = ("float64", "float32")
#: inv_freq rounded to a half-precision dtype (a model cast to it rounds the buffer): rope only.
ROUNDED_INV_FREQ = ("bfloat16", "float16")
#: Positions exact (integers), or rounded to a half-precision dtype before the product.
POSITION_DTYPES = ("exact", "float16", "bfloat16")
#: Positions must stay below this for exact range reduction.
MAX_POSITION = 2**31 - 1
#: Optional parameter -> the scaling rules that read it (a parameter given for another rule is refused).
USED_BY = optional_parameters()


def place_pairs(v: np.ndarray, out: np.ndarray, layout: str) -> None:
    """Write one value per rotation pair into both columns of the pair: ``half`` = cat(v, v), ``interleaved``
    = columns (2k, 2k+1); ``cache`` writes ``v`` once (ONNX half-width caches)."""
    if layout == "cache":
        out[...] = v
    elif layout == "half":
        h = v.shape[1]
        out[:, :h] = v
        out[:, h:] = out[:, :h]  # a copy of what was just written (in cache), cheaper than a second cast
    else:
        out[:, 0::2] = v
        out[:, 1::2] = v


@dataclass(frozen=True)
class Rope(Encoding):
    """Rotary position embedding tables: ``cos``, ``sin`` and ``inv_freq`` (or ONNX half-width caches)."""

    KIND = "rope"
    SUMMARY = "rotary cos/sin tables (RoFormer) with HF scaling: linear, ntk, dynamic, yarn, llama3, longrope"
    REFERENCES = (
        "paper: Su et al. 2021, RoFormer (arXiv:2104.09864), eq. 34: pairs (2k, 2k+1) rotated by t * base^(-2k/d)",
        "layout=half: EleutherAI/gpt-neox megatron/model/positional_embeddings.py RotaryEmbedding (cat(freqs, freqs), rotate_half)",
        "layout=half: huggingface/transformers LlamaRotaryEmbedding (emb = cat(freqs, freqs); cos * attention_scaling)",
        "layout=interleaved: GPT-J / RoFormer rotate_every_two; lucidrains/rotary-embedding-torch repeat '(n r)', r=2",
        "scaling=linear|dynamic|yarn|llama3|longrope|proportional: huggingface/transformers src/transformers/modeling_rope_utils.py ROPE_INIT_FUNCTIONS",
        "scaling=ntk: lucidrains/rotary-embedding-torch RotaryEmbedding theta_rescale_factor (theta *= f ** (d / (d - 2)))",
        "partial_rotary_factor: HF rot_dim = int(head_dim * partial_rotary_factor) (GPT-NeoX rotary_pct, Phi-2)",
        "cache=onnx: ONNX RotaryEmbedding (opset 23) cos_cache / sin_cache of shape [max_position_id + 1, rot_dim / 2]",
    )
    PRESETS = {
        "roformer": {"layout": "interleaved"},
        "gpt-j": {"layout": "interleaved"},
        "gpt-neox": {"layout": "half", "partial_rotary_factor": 0.25},
        "llama": {"layout": "half"},
        "llama3.1": {
            "layout": "half",
            "base": 500000.0,
            "scaling": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
    }
    PRESET_DOCS = {
        "roformer": "interleaved pairs (2k, 2k+1), base 10000: the RoFormer paper and its reference code",
        "gpt-j": "interleaved pairs (rotate_every_two); pass rotary_dim=64 for GPT-J-6B's head of 256",
        "gpt-neox": "rotate_half layout on the first 25% of the head (Pythia / GPT-NeoX rotary_pct=0.25)",
        "llama": "rotate_half layout over the whole head, base 10000 (Llama 1/2, most HF decoders)",
        "llama3.1": "Llama 3.1 rope_scaling: base 500000, llama3 rule, factor 8, low/high 1/4, original 8192",
    }
    PRIMARY = "cos"
    ROLES = {"cos": "cos", "sin": "sin", "cos_cache": "cos-cache", "sin_cache": "sin-cache", "inv_freq": "inv-freq"}
    PROPERTIES = {
        "finite": True, "matches-spec": True, "bounded": True, "unique": False, "precision": False,
        "pythagorean": True, "norm-preserving": True, "relative": True, "long-term-decay": False,
    }  # fmt: skip
    VIEWS = ("heatmap", "dot", "circle", "spectrum", "compare")

    base: float = param(10000.0, "frequency base theta (HF rope_theta)", low=0.0, low_open=True)
    layout: str = param(
        "half", "column order: half = cat(f, f) (NeoX/Llama), interleaved = pairs (GPT-J/RoFormer)", choices=LAYOUTS
    )
    rotary_dim: int | None = param(None, "rotated features (default: dim); the table is rotary_dim wide", low=1)
    partial_rotary_factor: float | None = param(
        None, "rotate int(dim * factor) features (HF semantics)", low=0.0, low_open=True, high=1.0
    )
    offset: int = param(0, "position of the first row", low=-MAX_POSITION, high=MAX_POSITION)
    scaling: str = param("none", "context-extension rule (HF rope_type)", choices=tuple(SCALINGS))
    factor: float | None = param(
        None,
        "scaling factor (linear/ntk/dynamic/yarn/longrope; llama3 default 8, proportional 1)",
        low=0.0,
        low_open=True,
    )
    original_max_position_embeddings: int | None = param(
        None, "pre-training context length (dynamic/yarn/longrope; llama3 default 8192)", low=1
    )
    seq_len: int | None = param(None, "dynamic/longrope: current sequence length (default offset + len)", low=1)
    attention_factor: float | None = param(None, "yarn/longrope: cos/sin multiplier (default: HF's formula)", low=0.0)
    beta_fast: float | None = param(
        None, "yarn: rotations that bound extrapolation (default 32)", low=0.0, low_open=True
    )
    beta_slow: float | None = param(
        None, "yarn: rotations that bound interpolation (default 1)", low=0.0, low_open=True
    )
    mscale: float | None = param(None, "yarn: attention-factor numerator multiplier (DeepSeek)")
    mscale_all_dim: float | None = param(None, "yarn: attention-factor denominator multiplier (DeepSeek)")
    truncate: bool | None = param(None, "yarn: floor/ceil the correction range (default true; gpt-oss uses false)")
    low_freq_factor: float | None = param(
        None, "llama3: low-frequency wavelength divisor (default 1)", low=0.0, low_open=True
    )
    high_freq_factor: float | None = param(
        None, "llama3: high-frequency wavelength divisor (default 4)", low=0.0, low_open=True
    )
    short_factor: tuple[float, ...] | None = param(
        None, "longrope: rot_dim/2 divisors used when seq_len <= original", low=0.0, low_open=True
    )
    long_factor: tuple[float, ...] | None = param(
        None, "longrope: rot_dim/2 divisors used when seq_len > original", low=0.0, low_open=True
    )
    cache: str = param(
        "full", "tensors: full (cos, sin, inv_freq) or onnx (cos_cache, sin_cache: len x rot_dim/2)", choices=CACHES
    )
    inv_freq_dtype: str = param(
        "float64",
        "float32 follows HF's float32 inv_freq arithmetic (bfloat16/float16: then rounded to it); angles stay exact",
        choices=INV_FREQ_DTYPES + ROUNDED_INV_FREQ,
    )
    sin_sign: int = param(
        1, "-1: sin negated, for a model whose rotate_half flips signs (it rotates by -angle: nanochat)", low=-1, high=1
    )
    position_dtype: str = param(
        "exact",
        "positions rounded to float16/bfloat16 before the product (a half-precision arange)",
        choices=POSITION_DTYPES,
    )
    angle_dtype: str = param(
        "exact",
        "angles t * inv_freq computed in float16/bfloat16 (positions, inv_freq and product rounded to it)",
        choices=POSITION_DTYPES,
    )

    # ----- validation ---------------------------------------------------------------------------

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "rotary:hints_rope"

    @classmethod
    def value_bound(cls, metadata: dict[str, str]) -> float:
        # HF multiplies cos and sin by attention_scaling, which posenc files record
        try:
            return float(metadata.get("attention_scaling", 1.0))
        except ValueError:
            return 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.cache == "onnx":
            # The primary tensor follows the cache layout (an instance attribute shadows the ClassVar).
            object.__setattr__(self, "PRIMARY", "cos_cache")

    def validate(self) -> None:
        if self.offset + self.length - 1 > MAX_POSITION:
            raise ParameterError(
                f"last position {self.offset + self.length - 1} exceeds {MAX_POSITION}; lower {ref('length')} or offset"
            )
        if self.sin_sign not in (1, -1):
            raise ParameterError(
                f"sin_sign={self.sin_sign}; choose 1 (rotate_half) or -1 (rotate_half with flipped signs)"
            )
        if self.angle_dtype != "exact" and (
            self.inv_freq_dtype not in ("float64", self.angle_dtype)
            or self.position_dtype not in ("exact", self.angle_dtype)
        ):
            raise ParameterError(
                f"angle_dtype={self.angle_dtype} rounds positions and inv_freq to {self.angle_dtype} too; drop "
                "inv_freq_dtype and position_dtype"
            )
        if self.position_dtype != "exact" or self.angle_dtype != "exact":
            top = max(abs(self.offset), abs(self.offset + self.length - 1))
            with np.errstate(over="ignore"):
                finite = np.isfinite(np.asarray(top, dtype=resolve_dtype(self._position_rounding)))
            if not finite:
                raise ParameterError(
                    f"position {top} is infinite in {self._position_rounding}; lower {ref('length')} or drop "
                    "position_dtype / angle_dtype"
                )
        for name, users in USED_BY.items():
            if getattr(self, name) is not None and self.scaling not in users:
                raise ParameterError(
                    f"parameter {name} is not used by scaling={self.scaling}; drop it or choose scaling from: {', '.join(users)}"
                )
        for name in SCALINGS[self.scaling].required:
            if getattr(self, name) is None:
                raise ParameterError(f"scaling={self.scaling} needs {name}; pass e.g. {name}={_EXAMPLES[name]}")
        if self.rotary_dim is not None and self.partial_rotary_factor is not None:
            raise ParameterError("pass rotary_dim or partial_rotary_factor, not both")
        if self.rotary_dim is not None and self.rotary_dim > self.dim:
            raise ParameterError(f"rotary_dim={self.rotary_dim} exceeds dim={self.dim}; use rotary_dim <= dim")
        r = self.rot_dim
        if self.scaling == "proportional":
            if self.dim % 2:
                raise ParameterError(f"dim={self.dim} is odd; proportional RoPE needs an even head dim")
        else:
            if r < 2:
                raise ParameterError(f"rot_dim={r} (dim={self.dim}); rotary tables need at least 2 rotated features")
            if r % 2:
                hint = (
                    "an even rotary_dim"
                    if self.rotary_dim is not None or self.partial_rotary_factor is not None
                    else "an even dim"
                )
                raise ParameterError(f"rot_dim={r} is odd; features rotate in pairs, use {hint}")
        if self.scaling in ("ntk", "dynamic") and r <= 2:
            raise ParameterError(f"scaling={self.scaling} needs rot_dim > 2 (its exponent is d/(d-2)); got rot_dim={r}")
        opt = self.opt
        if self.scaling == "yarn" and self.base <= 1.0:  # its correction range divides by log(base)
            raise ParameterError(
                f"yarn needs base > 1 (its correction range divides by log(base)); got base={self.base}"
            )
        if self.scaling == "yarn" and opt["beta_fast"] <= opt["beta_slow"]:
            raise ParameterError(
                f"yarn needs beta_fast > beta_slow; got beta_fast={opt['beta_fast']}, beta_slow={opt['beta_slow']}"
            )
        # equal factors leave no smoothing band (Llama 4 Scout: both 1.0), which HF accepts
        if self.scaling == "llama3" and opt["high_freq_factor"] < opt["low_freq_factor"]:
            raise ParameterError(
                f"llama3 needs high_freq_factor > low_freq_factor (or equal: no smoothing band); "
                f"got {opt['high_freq_factor']} < {opt['low_freq_factor']}"
            )
        if self.scaling == "longrope":
            for name in ("short_factor", "long_factor"):
                n = len(getattr(self, name))
                if n != r // 2:
                    raise ParameterError(
                        f"{name} has {n} entries; longrope needs rot_dim/2 = {r // 2} (one per frequency)"
                    )
            if self.opt["original_max_position_embeddings"] < 2:  # the attention factor divides by its log
                raise ParameterError(
                    "longrope needs original_max_position_embeddings >= 2 (its attention factor divides by "
                    f"log of it); got {self.opt['original_max_position_embeddings']}"
                )
            if self.factor is None and self.attention_factor is None:
                raise ParameterError(
                    "longrope needs factor (max_position_embeddings / original_max_position_embeddings) or attention_factor"
                )

    # ----- derived values -----------------------------------------------------------------------
    @property
    def rot_dim(self) -> int:
        """Rotated features ``r``: rotary_dim, or int(dim * partial_rotary_factor) as HF computes it."""
        if self.rotary_dim is not None:
            return self.rotary_dim
        if self.partial_rotary_factor is not None:
            return int(self.dim * self.partial_rotary_factor)
        return self.dim

    @property
    def width(self) -> int:
        """Columns of the cos/sin tables: rot_dim, or the whole head for proportional RoPE."""
        return self.dim if self.scaling == "proportional" else self.rot_dim

    @cached_property
    def opt(self) -> dict[str, Any]:
        """Optional parameters with the scaling rule's defaults filled in."""
        out = {name: getattr(self, name) for name in USED_BY}
        for name, value in SCALINGS[self.scaling].defaults.items():
            if out[name] is None:
                out[name] = value
        return out

    @property
    def effective_seq_len(self) -> int:
        """dynamic/longrope: the sequence length the rule sees (HF: max(position_ids) + 1)."""
        return self.seq_len if self.seq_len is not None else max(1, self.offset + self.length)

    @cached_property
    def attention_scaling(self) -> float:
        """The multiplier HF applies to cos and sin (``attention_factor`` of the rope init function)."""
        return attention_scaling(self)

    def ext_factors(self) -> tuple[float, ...]:
        """longrope: the per-frequency divisors in force (long_factor past the original context)."""
        long = self.effective_seq_len > self.opt["original_max_position_embeddings"]
        factors = self.long_factor if long else self.short_factor
        assert factors is not None  # validate() requires both for longrope
        return factors

    #: what the computing keeps on an instance for its own threads (locks, thread-local scratch, the last block):
    #: not pickled (a pickled rope, e.g. sent to a DataLoader worker, makes its own)
    _RUNTIME = ("_adder", "_fast_by_dtype", "_last_block", "_last_pairs")

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self._RUNTIME}

    @cached_property
    def _last_block(self) -> _trig.LastBlock:
        """sin and cos of the last block of the exact path, for the other part's request (:class:`_trig.LastBlock`)."""
        return _trig.LastBlock()

    @cached_property
    def _freqs(self) -> tuple[np.ndarray, np.ndarray]:
        """The width/2 angular frequencies as a double-double (hi, lo), read-only (shared by every rope of the
        same parameters: :func:`_trig.frequencies_once`)."""
        return _trig.frequencies_once(self.params_key(), self._compute_freqs)

    def _compute_freqs(self) -> tuple[np.ndarray, np.ndarray]:
        rule = SCALINGS[self.scaling]
        dt = self.angle_dtype if self.angle_dtype != "exact" else self.inv_freq_dtype
        if dt != "float64":
            # HF's float32 values (rounded once more to a half-precision dtype) are the frequencies, exactly
            hi = rule.float32(self).astype(resolve_dtype(dt)).astype(np.float64)
            return hi, np.zeros_like(hi)
        return _trig.double_double(rule.exact(self))

    def inv_freq(self) -> np.ndarray:
        """The angular frequencies in float64 (HF's float32 ones, rounded to inv_freq_dtype, unless float64)."""
        return self._freqs[0].copy()

    def extra_metadata(self) -> dict[str, str]:
        return {"attention_scaling": format_value(float(self.attention_scaling)), "rot_dim": str(self.rot_dim)}

    # ----- tensors ------------------------------------------------------------------------------
    def tensor_specs(self) -> dict[str, TensorSpec]:
        return dict(self._specs)

    @cached_property
    def _specs(self) -> dict[str, TensorSpec]:
        """The tensors, built once (``rows`` asks for them on every block: 130000 times in the test suite)."""
        n, w = self.length, self.width
        freq = TensorSpec(
            "inv_freq",
            (w // 2,),
            resolve_dtype(self.angle_dtype if self.angle_dtype != "exact" else self.inv_freq_dtype),
        )
        if self.cache == "onnx":
            return {
                "cos_cache": TensorSpec("cos_cache", (n, w // 2), self.out_dtype),
                "sin_cache": TensorSpec("sin_cache", (n, w // 2), self.out_dtype),
                "inv_freq": freq,
            }
        return {
            "cos": TensorSpec("cos", (n, w), self.out_dtype),
            "sin": TensorSpec("sin", (n, w), self.out_dtype),
            "inv_freq": freq,
        }

    @cached_property
    def _adder(self) -> _angleadd.AngleAdder:
        return _angleadd.shared(*self._freqs)

    @cached_property
    def _column_maps(self) -> dict[str, _angleadd.Columns]:
        """Frequency and part (0 sin, 1 cos) of each column of every cos/sin tensor (read-only: shared)."""
        names = tuple(name for name in self._specs if name != "inv_freq")
        return _column_maps(self.layout, names, (self._freqs[0] != 0).tobytes())

    def _fast(
        self, name: str, dtype: np.dtype
    ) -> tuple[_angleadd.AngleAdder, Callable[[np.ndarray, Any], None]] | None:
        """The angle-addition kernel and the near-zero refiner of tensor ``name`` in ``dtype``, or None where the
        exact path serves (float64, short tables, odd scales, positions within a step of -2**31); decided once."""
        cache = self.__dict__.setdefault("_fast_by_dtype", {})
        key = (name, dtype)
        if key not in cache:
            scale = float(self.attention_scaling)
            ok = _angleadd.narrow(dtype) and self._adds_angles(self.offset, self.offset + self.length - 1)
            tiny = _angleadd.tiny_threshold(dtype) if ok else None
            refine = self._adder.refiner(self._column_maps[name], dtype, tiny, scale) if ok else None
            cache[key] = (self._adder, refine) if refine is not None else None
        return cache[key]

    def _adds_angles(self, first: int, last: int) -> bool:
        """Whether angle addition computes positions ``first`` .. ``last`` of this table within its bound: one position
        per row (no rounded positions or angles), frequencies and scaling it serves, a table long enough to be worth
        it, positions within its reach."""
        w_hi = self._freqs[0]
        return (
            self._position_rounding == "exact"
            and _angleadd.serves(w_hi, float(self.attention_scaling))
            and _angleadd.worth(self.length, len(w_hi))
            and _angleadd.reaches(first, last)
        )

    def _positions(self, start: int, count: int) -> np.ndarray:
        """Positions ``start .. start + count - 1`` as the product sees them (rounded to position_dtype)."""
        t = np.arange(start, start + count, dtype=np.float64)
        if self._position_rounding != "exact":
            t = t.astype(resolve_dtype(self._position_rounding)).astype(np.float64)
        return t

    @property
    def _position_rounding(self) -> str:
        """The dtype positions are rounded to before the product ('exact': none)."""
        return self.angle_dtype if self.angle_dtype != "exact" else self.position_dtype

    def _half_angles(self, start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        """sin and cos of angles computed in angle_dtype: the product of the rounded position and frequency (exact
        in float64: two half-precision significands) rounded to it, then its sine and cosine in float64."""
        ang = np.multiply.outer(self._positions(start, count), self._freqs[0])
        ang = ang.astype(resolve_dtype(self.angle_dtype)).astype(np.float64)
        return np.sin(ang), np.cos(ang)

    def angle_terms(self, name: str) -> AngleTerms | None:
        cols = self._column_maps.get(name)
        if cols is None:
            return None
        freq = np.where(cols.freq >= 0, self._freqs[0][np.maximum(cols.freq, 0)], 0.0)
        return AngleTerms(freq, float(self.attention_scaling), self.offset)

    def _take(self, name: str, idx: np.ndarray, out: np.ndarray) -> None:
        fast = self._fast(name, out.dtype) if name in self._column_maps else None
        if fast is None:
            super()._take(name, idx, out)
            return
        # angle addition at each position at once (AngleAdder.at: the products of a block's rows, the same bits)
        adder, refine = fast
        scale = float(self.attention_scaling)
        is_sin = name.startswith("sin")
        layout = "cache" if name.endswith("_cache") else self.layout
        t = self.offset + idx
        per = adder.chunk
        for a in range(0, len(t), per):
            u = adder.at(t[a : a + per], scale)
            place_pairs(u.real if is_sin else u.imag, out[a : a + per], layout)
            refine(out[a : a + per], t[a : a + per])
        if self.sin_sign == -1 and is_sin:
            np.negative(out, out=out)

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        self._fill(name, start, stop, out)
        if self.sin_sign == -1 and name.startswith("sin"):
            np.negative(out, out=out)  # exact: the model's rotate_half flips the signs (a rotation by -angle)

    def fill_near(self, names: tuple[str, ...], start: int, stop: int, outs: tuple[np.ndarray, ...]) -> None:
        """:meth:`fill` of each tensor of ``names`` into its float64 ``outs``, each value within ``10 s 2**-53`` of
        the exact one (``s`` the attention scaling; :mod:`._angleadd`'s bound, without its exact recomputation near
        the zeros of sin and cos, which only an output rounded to fewer bits needs), every tensor from the same
        chunks of angle addition: ~15x faster than the exact path at 131072 x 48. For a reference whose tolerance
        is far coarser than that (an ONNX check's is at least ``s 2**-21``); the exact path where angle addition
        does not serve (rounded positions or angles, short tables)."""
        scale = float(self.attention_scaling)
        first = self.offset + start
        if not (all(name in self._column_maps for name in names) and self._adds_angles(first, self.offset + stop - 1)):
            for name, out in zip(names, outs):
                self.fill(name, start, stop, out)
            return
        parts = [(name.startswith("sin"), "cache" if name.endswith("_cache") else self.layout, out)
                 for name, out in zip(names, outs)]  # fmt: skip
        for a, b, u in self._adder.chunks(first, stop - start, scale):
            for is_sin, layout, out in parts:
                place_pairs(u.real if is_sin else u.imag, out[a:b], layout)
        for is_sin, _layout, out in parts:
            if self.sin_sign == -1 and is_sin:
                np.negative(out, out=out)

    def _fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        w_hi, w_lo = self._freqs
        if name == "inv_freq":
            out[...] = w_hi[start:stop]
            return
        if name not in self._specs:
            raise ParameterError(f"rope has no tensor {name!r}; choose from: {', '.join(self._specs)}")
        scale = float(self.attention_scaling)
        is_sin = name.startswith("sin")
        t_start = self.offset + start
        fast = self._fast(name, out.dtype)
        if fast is not None:
            # Angle addition (see _angleadd): both parts come out of one complex multiply, and each output
            # row needs one value per frequency twice (two columns per pair), so nothing is computed in vain.
            adder, refine = fast
            layout = "cache" if name.endswith("_cache") else self.layout
            for a, b, u in adder.chunks(t_start, stop - start, scale):
                place_pairs(u.real if is_sin else u.imag, out[a:b], layout)
                refine(out[a:b], t_start + a)
            return
        if self.angle_dtype != "exact":
            s, c = self._half_angles(t_start, stop - start)
        else:
            s, c = self._last_block.get(
                (t_start, stop - start), lambda: _trig.sincos(self._positions(t_start, stop - start), w_hi, w_lo)
            )
        v = s if is_sin else c  # shared with the other part's request: scaled into a new array
        place_pairs(v * scale if scale != 1.0 else v, out, "cache" if name.endswith("_cache") else self.layout)


@functools.lru_cache(maxsize=64)
def _column_maps(layout: str, names: tuple[str, ...], nonzero: bytes) -> dict[str, _angleadd.Columns]:
    """:attr:`Rope._column_maps` of a layout, tensors and which frequencies are non-zero (one byte each): the
    same for every rope of that shape, built once (two Columns cost ~0.1 ms, as much as a block of rows)."""
    w = np.frombuffer(nonzero, dtype=np.bool_).astype(np.float64)  # only its zeros matter to Columns
    k0 = np.arange(len(w))
    out = {}
    for name in names:
        k = k0
        if not name.endswith("_cache"):
            k = np.concatenate([k, k]) if layout == "half" else np.repeat(k, 2)
        out[name] = _angleadd.Columns(k, np.full(k.shape, 0 if name.startswith("sin") else 1), w)
    return out


_EXAMPLES = {
    "factor": "4.0",
    "original_max_position_embeddings": "4096",
    "short_factor": "1.0;1.0",
    "long_factor": "1.0;4.0",
}
