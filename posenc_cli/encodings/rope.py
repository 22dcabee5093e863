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

xPos (Sun et al. 2022, "A Length-Extrapolatable Transformer"), kind ``xpos``: the per-position scale that
rotary-embedding-torch multiplies into queries (and divides out of keys),

.. math::

    \zeta_k = \frac{2k + 0.4\,d}{1.4\,d}, \qquad
    \mathrm{scale}_{t,j} = \zeta_{k(j)}^{\,(t/\mathrm{interpolate\_factor} - c)/\mathrm{scale\_base}}

with :math:`c` = ``center`` (default ``len // 2``, rotary-embedding-torch's ``len(t) // 2``) and the
``interleaved`` (current rotary-embedding-torch: ``repeat(scale, 'n d -> n (d r)', r=2)``) or ``half`` (its
releases before the ``src/`` layout: ``cat((scale, scale))``) column order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import ParameterError
from . import _trig
from .base import Encoding, TensorSpec, format_value, param

LAYOUTS = ("half", "interleaved")
SCALINGS = ("none", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope", "proportional")
CACHES = ("full", "onnx")
INV_FREQ_DTYPES = ("float64", "float32")
#: Positions must stay below this for exact range reduction.
MAX_POSITION = 2**31 - 1

#: Which scaling rules read each optional parameter (a parameter given for another rule is refused).
_USED_BY: dict[str, tuple[str, ...]] = {
    "factor": ("linear", "ntk", "dynamic", "yarn", "llama3", "longrope", "proportional"),
    "original_max_position_embeddings": ("dynamic", "yarn", "llama3", "longrope"),
    "seq_len": ("dynamic", "longrope"),
    "attention_factor": ("yarn", "longrope"),
    "beta_fast": ("yarn",),
    "beta_slow": ("yarn",),
    "mscale": ("yarn",),
    "mscale_all_dim": ("yarn",),
    "truncate": ("yarn",),
    "low_freq_factor": ("llama3",),
    "high_freq_factor": ("llama3",),
    "short_factor": ("longrope",),
    "long_factor": ("longrope",),
}

#: Defaults that depend on the scaling rule (HF's defaults, or the Llama 3.1 release values).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "yarn": {"beta_fast": 32.0, "beta_slow": 1.0, "truncate": True},
    "llama3": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
    "proportional": {"factor": 1.0},
}

#: Parameters a scaling rule cannot do without.
_REQUIRED: dict[str, tuple[str, ...]] = {
    "linear": ("factor",),
    "ntk": ("factor",),
    "dynamic": ("factor", "original_max_position_embeddings"),
    "yarn": ("factor", "original_max_position_embeddings"),
    "longrope": ("short_factor", "long_factor", "original_max_position_embeddings"),
}

_PREC = 60


def _place_pairs(v: np.ndarray, out: np.ndarray, layout: str) -> None:
    """Write one value per rotation pair into both columns of the pair: ``half`` = cat(v, v), ``interleaved``
    = columns (2k, 2k+1)."""
    if layout == "half":
        h = v.shape[1]
        out[:, :h] = v
        out[:, h:] = v
    else:
        out[:, 0::2] = v
        out[:, 1::2] = v


def _yarn_correction_range(
    beta_fast: float, beta_slow: float, d: int, base: float, omp: int, truncate: bool
) -> tuple[float, float]:
    """HF's ``find_correction_range`` (float64 Python math, exactly as HF evaluates it)."""

    def correction_dim(rotations: float) -> float:
        return (d * math.log(omp / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001  # HF's guard against a zero-width ramp
    return low, high


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


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

    base: float = param(10000.0, "frequency base theta (HF rope_theta)", low=0.0, low_open=True)
    layout: str = param(
        "half", "column order: half = cat(f, f) (NeoX/Llama), interleaved = pairs (GPT-J/RoFormer)", choices=LAYOUTS
    )
    rotary_dim: int | None = param(None, "rotated features (default: dim); the table is rotary_dim wide", low=1)
    partial_rotary_factor: float | None = param(
        None, "rotate int(dim * factor) features (HF semantics)", low=0.0, low_open=True, high=1.0
    )
    offset: int = param(0, "position of the first row", low=-MAX_POSITION, high=MAX_POSITION)
    scaling: str = param("none", "context-extension rule (HF rope_type)", choices=SCALINGS)
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
        "float64", "float32 follows HF's float32 inv_freq arithmetic; angles stay exact", choices=INV_FREQ_DTYPES
    )

    # ----- validation ---------------------------------------------------------------------------
    def __post_init__(self) -> None:
        super().__post_init__()
        if self.cache == "onnx":
            # The primary tensor follows the cache layout (an instance attribute shadows the ClassVar).
            object.__setattr__(self, "PRIMARY", "cos_cache")

    def validate(self) -> None:
        if self.offset + self.length - 1 > MAX_POSITION:
            raise ParameterError(
                f"last position {self.offset + self.length - 1} exceeds {MAX_POSITION}; lower --len or offset"
            )
        for name, users in _USED_BY.items():
            if getattr(self, name) is not None and self.scaling not in users:
                raise ParameterError(
                    f"parameter {name} is not used by scaling={self.scaling}; drop it or choose scaling from: {', '.join(users)}"
                )
        for name in _REQUIRED.get(self.scaling, ()):
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
        opt = self._opt
        if self.scaling == "yarn" and opt["beta_fast"] <= opt["beta_slow"]:
            raise ParameterError(
                f"yarn needs beta_fast > beta_slow; got beta_fast={opt['beta_fast']}, beta_slow={opt['beta_slow']}"
            )
        if self.scaling == "llama3" and opt["high_freq_factor"] <= opt["low_freq_factor"]:
            raise ParameterError(
                f"llama3 needs high_freq_factor > low_freq_factor; got {opt['high_freq_factor']} <= {opt['low_freq_factor']}"
            )
        if self.scaling == "longrope":
            for name in ("short_factor", "long_factor"):
                n = len(getattr(self, name))
                if n != r // 2:
                    raise ParameterError(
                        f"{name} has {n} entries; longrope needs rot_dim/2 = {r // 2} (one per frequency)"
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
    def _opt(self) -> dict[str, Any]:
        """Optional parameters with the scaling rule's defaults filled in."""
        out = {name: getattr(self, name) for name in _USED_BY}
        for name, value in _DEFAULTS.get(self.scaling, {}).items():
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
        o = self._opt
        if o["attention_factor"] is not None:
            return float(o["attention_factor"])
        if self.scaling == "yarn":
            f = o["factor"]
            if o["mscale"] and o["mscale_all_dim"]:
                return float(_yarn_mscale(f, o["mscale"]) / _yarn_mscale(f, o["mscale_all_dim"]))
            return _yarn_mscale(f)
        if self.scaling == "longrope":
            f, omp = o["factor"], o["original_max_position_embeddings"]
            return 1.0 if f <= 1.0 else math.sqrt(1 + math.log(f) / math.log(omp))
        return 1.0

    def _ext_factors(self) -> tuple[float, ...]:
        long = self.effective_seq_len > self._opt["original_max_position_embeddings"]
        return self.long_factor if long else self.short_factor

    @cached_property
    def _freqs(self) -> tuple[np.ndarray, np.ndarray]:
        """The width/2 angular frequencies as a double-double (hi, lo)."""
        if self.inv_freq_dtype == "float32":
            hi = self._hf_float32_inv_freq().astype(np.float64)
            return hi, np.zeros_like(hi)  # the float32 values are the frequencies, exactly
        return _trig.double_double(self._exact_inv_freq())

    def _exact_inv_freq(self) -> list[Decimal]:
        """Each scaling formula evaluated to ~60 digits from the float64 parameters."""
        o, s, r = self._opt, self.scaling, self.rot_dim
        with localcontext() as ctx:
            ctx.prec = _PREC
            D = Decimal
            base = D(self.base)
            d = D(r)
            if s == "ntk":
                base = base * (D(o["factor"]).ln() * d / (d - 2)).exp()
            elif s == "dynamic":
                L = D(o["original_max_position_embeddings"])
                S = max(D(self.effective_seq_len), L)
                f = D(o["factor"])
                ratio = f * S / L - (f - 1)
                base = base * (ratio.ln() * d / (d - 2)).exp()
            log_base = base.ln()
            if s == "proportional":
                head = D(self.dim)
                rotated = [(-(D(2 * k) / head) * log_base).exp() / D(o["factor"]) for k in range(r // 2)]
                return rotated + [D(0)] * (self.dim // 2 - r // 2)
            w = [(-(D(2 * k) / d) * log_base).exp() for k in range(r // 2)]
            if s == "linear":
                f = D(o["factor"])
                w = [x / f for x in w]
            elif s == "yarn":
                f = D(o["factor"])
                low, high = _yarn_correction_range(
                    o["beta_fast"], o["beta_slow"], r, self.base, o["original_max_position_embeddings"], o["truncate"]
                )
                lo_d, span = D(low), D(high) - D(low)
                out = []
                for k, x in enumerate(w):
                    ramp = min(max((D(k) - lo_d) / span, D(0)), D(1))
                    out.append(x * (ramp / f + (1 - ramp)))
                w = out
            elif s == "llama3":
                f = D(o["factor"])
                L = D(o["original_max_position_embeddings"])
                lff, hff = D(o["low_freq_factor"]), D(o["high_freq_factor"])
                low_wl, high_wl = L / lff, L / hff
                two_pi = _trig.TWO_PI
                out = []
                for x in w:
                    wl = two_pi / x
                    if wl < high_wl:
                        out.append(x)
                    elif wl > low_wl:
                        out.append(x / f)
                    else:
                        smooth = (L / wl - lff) / (hff - lff)
                        out.append((1 - smooth) * x / f + smooth * x)
                w = out
            elif s == "longrope":
                w = [x / D(e) for x, e in zip(w, self._ext_factors())]
            return w

    def _hf_float32_inv_freq(self) -> np.ndarray:
        """HF transformers' float32 ``inv_freq`` arithmetic, step by step, in NumPy float32."""
        f32 = np.float32
        o, s, r = self._opt, self.scaling, self.rot_dim

        def powf(base: float, expo: np.ndarray) -> np.ndarray:
            # float32 base ** float32 exponent, correctly rounded (NumPy's own float32 pow is off by up to ~1 ulp)
            return np.power(np.float64(f32(base)), expo.astype(np.float64)).astype(f32)

        def default(base: float, d: int, n: int | None = None) -> np.ndarray:
            # 1.0 / (base ** (torch.arange(0, 2n, 2, dtype=torch.int64).float() / d))
            n = d // 2 if n is None else n
            expo = np.arange(0, 2 * n, 2, dtype=np.int64).astype(f32) / f32(d)
            return f32(1.0) / powf(base, expo)

        if s in ("none", "linear"):
            inv = default(self.base, r)
            return inv / f32(o["factor"]) if s == "linear" else inv
        if s in ("ntk", "dynamic"):
            if s == "ntk":
                base = self.base * o["factor"] ** (r / (r - 2))
            else:
                L = o["original_max_position_embeddings"]
                S = max(self.effective_seq_len, L)
                base = self.base * ((o["factor"] * S / L) - (o["factor"] - 1)) ** (r / (r - 2))
            return default(base, r)
        if s == "proportional":
            n_rot = r // 2
            inv = np.concatenate([default(self.base, self.dim, n_rot), np.zeros(self.dim // 2 - n_rot, dtype=f32)])
            return inv / f32(o["factor"])
        if s == "yarn":
            factor = o["factor"]
            pos = powf(self.base, np.arange(0, r, 2).astype(f32) / f32(r))
            extra = f32(1.0) / pos
            inter = f32(1.0) / (f32(factor) * pos)
            low, high = _yarn_correction_range(
                o["beta_fast"], o["beta_slow"], r, self.base, o["original_max_position_embeddings"], o["truncate"]
            )
            ramp = np.clip((np.arange(r // 2, dtype=f32) - f32(low)) / f32(high - low), f32(0), f32(1))
            ef = f32(1) - ramp
            return inter * (f32(1) - ef) + extra * ef
        if s == "llama3":
            inv = default(self.base, r)
            L = o["original_max_position_embeddings"]
            lff, hff, factor = o["low_freq_factor"], o["high_freq_factor"], o["factor"]
            low_wl, high_wl = L / lff, L / hff
            # torch evaluates `scalar / tensor` as tensor.reciprocal() * scalar
            wavelen = (f32(1) / inv) * f32(2 * math.pi)
            inv_l = np.where(wavelen > f32(low_wl), inv / f32(factor), inv)
            smooth = ((f32(1) / wavelen) * f32(L) - f32(lff)) / f32(hff - lff)
            smoothed = (f32(1) - smooth) * inv_l / f32(factor) + smooth * inv_l
            medium = ~(wavelen < f32(high_wl)) & ~(wavelen > f32(low_wl))
            return np.where(medium, smoothed, inv_l).astype(f32)
        # longrope
        ext = np.array(self._ext_factors(), dtype=f32)
        shape = np.arange(0, r, 2, dtype=np.int64).astype(f32) / f32(r)
        return f32(1.0) / (ext * powf(self.base, shape))

    def inv_freq(self) -> np.ndarray:
        """The angular frequencies in float64 (rounded to float32 first when inv_freq_dtype=float32)."""
        return self._freqs[0].copy()

    def extra_metadata(self) -> dict[str, str]:
        return {"attention_scaling": format_value(float(self.attention_scaling)), "rot_dim": str(self.rot_dim)}

    # ----- tensors ------------------------------------------------------------------------------
    def tensor_specs(self) -> dict[str, TensorSpec]:
        n, w = self.length, self.width
        freq = TensorSpec("inv_freq", (w // 2,), np.dtype(self.inv_freq_dtype))
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

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        w_hi, w_lo = self._freqs
        if name == "inv_freq":
            out[...] = w_hi[start:stop]
            return
        if name not in self.tensor_specs():
            raise ParameterError(f"rope has no tensor {name!r}; choose from: {', '.join(self.tensor_specs())}")
        t = np.arange(self.offset + start, self.offset + stop, dtype=np.float64)
        want_sin = name.startswith("sin")
        s, c = _trig.sincos(t, w_hi, w_lo, want_sin=want_sin, want_cos=not want_sin)
        v = s if want_sin else c
        if self.attention_scaling != 1.0:
            v *= self.attention_scaling
        if name.endswith("_cache"):
            out[...] = v
        else:
            _place_pairs(v, out, self.layout)


_EXAMPLES = {
    "factor": "4.0",
    "original_max_position_embeddings": "4096",
    "short_factor": "1.0;1.0",
    "long_factor": "1.0;4.0",
}


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

    scale_base: float = param(512.0, "xpos_scale_base: positions per unit of the exponent", low=0.0, low_open=True)
    layout: str = param(
        "interleaved", "column order: interleaved pairs (current) or half = cat(s, s) (older)", choices=LAYOUTS
    )
    offset: int = param(0, "position of the first row", low=-MAX_POSITION, high=MAX_POSITION)
    center: int | None = param(None, "position with scale 1 (default len // 2, rotary-embedding-torch's len(t) // 2)")
    interpolate_factor: float = param(1.0, "positions are divided by this first (rotary-embedding-torch)", low=1.0)

    def validate(self) -> None:
        if self.dim % 2:
            raise ParameterError(f"dim={self.dim} is odd; xpos scales come in pairs, use an even dim")
        if self.offset + self.length - 1 > MAX_POSITION:
            raise ParameterError(
                f"last position {self.offset + self.length - 1} exceeds {MAX_POSITION}; lower --len or offset"
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
        _place_pairs(v, out, self.layout)


# ----- HF config.json -> parameters ------------------------------------------------------------
_HF_TYPES = {"default": "none", "linear": "linear", "dynamic": "dynamic", "yarn": "yarn", "llama3": "llama3",
             "longrope": "longrope", "proportional": "proportional"}  # fmt: skip


def _number(src: dict[str, Any], key: str, where: str, kind: type = float) -> Any:
    value = src[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(f"config key {where}{key}={value!r} is not a number")
    if kind is int:
        if isinstance(value, float) and not value.is_integer():
            raise ParameterError(f"config key {where}{key}={value!r} is not an integer")
        return int(value)
    return float(value)


def params_from_hf_config(
    config: dict[str, Any], length: int | None = None, *, layer_type: str | None = None
) -> dict[str, Any]:
    """The ``rope`` parameters that reproduce the tables of a HF transformers model from its config.json dict.

    Reads ``rope_parameters`` (transformers >= 5) or ``rope_scaling`` (older), ``rope_type`` or ``type``,
    ``rope_theta``, ``head_dim`` (DeepSeek: ``qk_rope_head_dim``; else ``hidden_size // num_attention_heads``),
    ``partial_rotary_factor`` (GPT-NeoX ``rotary_pct``/``rotary_emb_base`` too; GPT-J/CodeGen ``rotary_dim`` with
    interleaved pairs),
    ``max_position_embeddings`` and ``original_max_position_embeddings`` with the precedence of HF's
    ``standardize_rope_params``. ``length`` defaults to ``max_position_embeddings``. Per-layer
    ``rope_parameters`` (Gemma 3/4: ``{"full_attention": {...}, "sliding_attention": {...}}``) need
    ``layer_type``. Raises :class:`ParameterError` naming the bad or missing key.
    """
    if not isinstance(config, dict):
        raise ParameterError(f"config must be a JSON object (dict), got {type(config).__name__}")
    rope = config.get("rope_parameters")
    where = "rope_parameters."
    if rope is None:
        rope, where = config.get("rope_scaling"), "rope_scaling."
    rope = dict(rope or {})
    if rope and all(isinstance(v, dict) for v in rope.values()):
        if layer_type is None:
            raise ParameterError(f"config has per-layer rope_parameters; pass layer_type, one of: {', '.join(rope)}")
        if layer_type not in rope:
            raise ParameterError(f"unknown layer_type {layer_type!r}; choose from: {', '.join(rope)}")
        rope, where = dict(rope[layer_type]), f"rope_parameters.{layer_type}."
    elif layer_type is not None and rope:
        raise ParameterError(f"layer_type={layer_type!r} given but the config has a single rope_parameters dict")

    hf_type = rope.get("rope_type", rope.get("type", "default"))
    if hf_type not in _HF_TYPES:
        raise ParameterError(f"unknown {where}rope_type {hf_type!r}; choose from: {', '.join(_HF_TYPES)}")
    scaling = _HF_TYPES[hf_type]

    # head dim: DeepSeek-V2/V3 (MLA) configs set head_dim = qk_rope_head_dim, the rotated width; otherwise HF
    # uses config.head_dim when set, else hidden_size // num_attention_heads
    if config.get("qk_rope_head_dim") is not None:
        head_dim = _number(config, "qk_rope_head_dim", "", int)
    elif config.get("head_dim") is not None:
        head_dim = _number(config, "head_dim", "", int)
    else:
        for key in ("hidden_size", "num_attention_heads"):
            if key not in config:
                raise ParameterError(f"config needs head_dim or hidden_size and num_attention_heads; missing {key}")
        head_dim = _number(config, "hidden_size", "", int) // _number(config, "num_attention_heads", "", int)

    # rope_theta: rope_parameters first, then the top-level key (GPT-NeoX: rotary_emb_base), else HF's 10000
    if rope.get("rope_theta") is not None:
        base = _number(rope, "rope_theta", where)
    elif config.get("rope_theta") is not None:
        base = _number(config, "rope_theta", "")
    elif config.get("rotary_emb_base") is not None:
        base = _number(config, "rotary_emb_base", "")
    else:
        base = 10000.0

    params: dict[str, Any] = {"dim": head_dim, "base": base, "layout": "half", "scaling": scaling}
    # partial rotary: a top-level value overrides rope_parameters (standardize_rope_params)
    prf_src = next((src for src in (config, rope) if src.get("partial_rotary_factor") is not None), None)
    if prf_src is not None:
        prf = _number(prf_src, "partial_rotary_factor", "" if prf_src is config else where)
        if prf != 1.0 or scaling == "proportional":
            params["partial_rotary_factor"] = prf
    elif config.get("rotary_pct") is not None:
        params["partial_rotary_factor"] = _number(config, "rotary_pct", "")
    if config.get("model_type") in ("gptj", "codegen"):
        params["layout"] = "interleaved"  # rotate_every_two
        if config.get("rotary_dim") is not None:
            params["rotary_dim"] = _number(config, "rotary_dim", "", int)

    max_pos = config.get("max_position_embeddings")
    if length is None:
        if max_pos is None:
            raise ParameterError("config has no max_position_embeddings; pass a length")
        length = _number(config, "max_position_embeddings", "", int)
    params["length"] = length

    def need(key: str, kind: type = float) -> Any:
        if rope.get(key) is None:
            raise ParameterError(f"rope_type {hf_type!r} needs {where}{key}; the config has none")
        return _number(rope, key, where, kind)

    def max_position() -> int:
        if max_pos is None:
            raise ParameterError(f"rope_type {hf_type!r} needs max_position_embeddings; the config has none")
        return _number(config, "max_position_embeddings", "", int)

    def original_max() -> int:
        # standardize_rope_params: a top-level original_max_position_embeddings wins (Phi-3), then the rope
        # dict's, then max_position_embeddings
        if config.get("original_max_position_embeddings") is not None:
            return _number(config, "original_max_position_embeddings", "", int)
        if rope.get("original_max_position_embeddings") is not None:
            return _number(rope, "original_max_position_embeddings", where, int)
        return max_position()

    if scaling in ("linear", "dynamic"):
        params["factor"] = need("factor")
    if scaling == "dynamic":
        params["original_max_position_embeddings"] = max_position()  # HF's dynamic rule reads max_position_embeddings
    elif scaling == "llama3":
        for key in ("factor", "low_freq_factor", "high_freq_factor"):
            params[key] = need(key)
        params["original_max_position_embeddings"] = original_max()
    elif scaling == "yarn":
        omp = original_max()
        params["original_max_position_embeddings"] = omp
        params["factor"] = _number(rope, "factor", where) if rope.get("factor") is not None else max_position() / omp
        for key in ("attention_factor", "mscale", "mscale_all_dim"):
            if rope.get(key) is not None:
                params[key] = _number(rope, key, where)
        for key, default in (("beta_fast", 32.0), ("beta_slow", 1.0)):
            params[key] = (_number(rope, key, where) if rope.get(key) is not None else 0.0) or default  # HF: `or 32`
        if rope.get("truncate") is not None:
            if not isinstance(rope["truncate"], bool):
                raise ParameterError(f"config key {where}truncate={rope['truncate']!r} is not true or false")
            params["truncate"] = rope["truncate"]
    elif scaling == "longrope":
        omp = original_max()
        params["original_max_position_embeddings"] = omp
        for key in ("short_factor", "long_factor"):
            value = rope.get(key)
            if value is None:
                raise ParameterError(f"rope_type 'longrope' needs {where}{key}; the config has none")
            if not isinstance(value, list) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in value
            ):
                raise ParameterError(f"config key {where}{key} must be a list of numbers")
            params[key] = tuple(float(x) for x in value)
        params["factor"] = _number(rope, "factor", where) if rope.get("factor") is not None else max_position() / omp
        if rope.get("attention_factor") is not None:
            params["attention_factor"] = _number(rope, "attention_factor", where)
    elif scaling == "proportional" and rope.get("factor") is not None:
        params["factor"] = _number(rope, "factor", where)
    return params
