r"""The RoPE scaling registry: one entry per rule (HF ``rope_type``), each with everything it needs.

An entry says which optional parameters the rule reads (a parameter given for another rule is refused),
which it cannot do without, its defaults, its HF name and the public code it reproduces, and three functions
of a :class:`~posenc_cli.encodings.rope.core.Rope`:

* ``exact(rope) -> list[Decimal]``: the ``rot_dim/2`` angular frequencies evaluated to ~60 digits from the
  float64 parameters (posenc's default, correctly rounded tables);
* ``float32(rope) -> np.ndarray``: HF transformers' float32 ``inv_freq`` arithmetic, step by step
  (``inv_freq_dtype=float32``);
* ``attention(rope) -> float``: the multiplier HF applies to cos and sin (``attention_factor``).

With :math:`d` = ``rot_dim``, :math:`b` = ``base``, :math:`L` = ``original_max_position_embeddings`` and
:math:`f` = ``factor`` the rules are documented in :mod:`posenc_cli.encodings.rope.core`. Adding a rule = one
function pair and one entry of :data:`SCALINGS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from typing import Any, Protocol

import numpy as np

from .. import _trig


class Rope(Protocol):
    """What a scaling rule reads of a rope kind (``core.Rope`` is one): declared here, so that this module
    needs nothing from ``core``, which imports the registry below."""

    @property
    def base(self) -> float: ...

    @property
    def dim(self) -> int: ...

    @property
    def scaling(self) -> str: ...

    @property
    def rot_dim(self) -> int: ...

    @property
    def opt(self) -> dict[str, Any]: ...

    @property
    def effective_seq_len(self) -> int: ...

    def ext_factors(self) -> tuple[float, ...]: ...


#: Decimal digits of the exact frequency formulas.
PREC = 60
f32 = np.float32


@dataclass(frozen=True)
class Scaling:
    """One RoPE scaling rule."""

    name: str
    hf_name: str
    reference: str
    exact: Callable[[Rope], list[Decimal]]
    float32: Callable[[Rope], np.ndarray]
    attention: Callable[[Rope], float] = lambda rope: 1.0
    uses: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)


# ----- shared pieces ------------------------------------------------------------------------------------
def _powf(base: float, expo: np.ndarray) -> np.ndarray:
    """float32 ``base ** expo``, correctly rounded (NumPy's own float32 pow is off by up to ~1 ulp)."""
    return np.power(np.float64(f32(base)), expo.astype(np.float64)).astype(f32)


def _default_f32(base: float, d: int, n: int | None = None) -> np.ndarray:
    """HF's ``1.0 / (base ** (torch.arange(0, 2n, 2, dtype=torch.int64).float() / d))`` in float32."""
    n = d // 2 if n is None else n
    expo = np.arange(0, 2 * n, 2, dtype=np.int64).astype(f32) / f32(d)
    return f32(1.0) / _powf(base, expo)


def _default_exact(base: Decimal, d: int, n: int) -> list[Decimal]:
    """:math:`b^{-2k/d}` for ``k < n`` (call inside a Decimal context of :data:`PREC` digits)."""
    return _trig.geometric(Decimal(1), (-(Decimal(2) / Decimal(d)) * base.ln()).exp(), n)


def _exact(rule: Callable[[Rope], list[Decimal]]) -> Callable[[Rope], list[Decimal]]:
    def run(rope: Rope) -> list[Decimal]:
        with localcontext() as ctx:
            ctx.prec = PREC
            return rule(rope)

    return run


def yarn_correction_range(
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


def yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _ntk_exponent_base(rope: Rope, ratio: Decimal) -> Decimal:
    d = Decimal(rope.rot_dim)
    return Decimal(rope.base) * (ratio.ln() * d / (d - 2)).exp()


def _dynamic_ratio(rope: Rope) -> tuple[float, float]:
    """(HF's float64 ratio f * S / L - (f - 1), with S = max(seq_len, L)) and its exact twin's inputs."""
    o = rope.opt
    L = o["original_max_position_embeddings"]
    S = max(rope.effective_seq_len, L)
    return (o["factor"] * S / L) - (o["factor"] - 1), S


# ----- the rules ------------------------------------------------------------------------------------------
def _none_exact(rope: Rope) -> list[Decimal]:
    return _default_exact(Decimal(rope.base), rope.rot_dim, rope.rot_dim // 2)


def _none_f32(rope: Rope) -> np.ndarray:
    return _default_f32(rope.base, rope.rot_dim)


def _linear_exact(rope: Rope) -> list[Decimal]:
    f = Decimal(rope.opt["factor"])
    return [x / f for x in _none_exact(rope)]


def _linear_f32(rope: Rope) -> np.ndarray:
    return _none_f32(rope) / f32(rope.opt["factor"])


def _ntk_exact(rope: Rope) -> list[Decimal]:
    base = _ntk_exponent_base(rope, Decimal(rope.opt["factor"]))
    return _default_exact(base, rope.rot_dim, rope.rot_dim // 2)


def _ntk_f32(rope: Rope) -> np.ndarray:
    r = rope.rot_dim
    return _default_f32(rope.base * rope.opt["factor"] ** (r / (r - 2)), r)


def _dynamic_exact(rope: Rope) -> list[Decimal]:
    o = rope.opt
    L = Decimal(o["original_max_position_embeddings"])
    S = max(Decimal(rope.effective_seq_len), L)
    f = Decimal(o["factor"])
    base = _ntk_exponent_base(rope, f * S / L - (f - 1))
    return _default_exact(base, rope.rot_dim, rope.rot_dim // 2)


def _dynamic_f32(rope: Rope) -> np.ndarray:
    r = rope.rot_dim
    ratio, _ = _dynamic_ratio(rope)
    return _default_f32(rope.base * ratio ** (r / (r - 2)), r)


def _yarn_range(rope: Rope) -> tuple[float, float]:
    o = rope.opt
    return yarn_correction_range(
        o["beta_fast"], o["beta_slow"], rope.rot_dim, rope.base, o["original_max_position_embeddings"], o["truncate"]
    )


def _yarn_exact(rope: Rope) -> list[Decimal]:
    f = Decimal(rope.opt["factor"])
    low, high = _yarn_range(rope)
    lo_d, span = Decimal(low), Decimal(high) - Decimal(low)
    out = []
    for k, x in enumerate(_none_exact(rope)):
        ramp = min(max((Decimal(k) - lo_d) / span, Decimal(0)), Decimal(1))
        out.append(x * (ramp / f + (1 - ramp)))
    return out


def _yarn_f32(rope: Rope) -> np.ndarray:
    r = rope.rot_dim
    pos = _powf(rope.base, np.arange(0, r, 2).astype(f32) / f32(r))
    extra = f32(1.0) / pos
    inter = f32(1.0) / (f32(rope.opt["factor"]) * pos)
    low, high = _yarn_range(rope)
    ramp = np.clip((np.arange(r // 2, dtype=f32) - f32(low)) / f32(high - low), f32(0), f32(1))
    ef = f32(1) - ramp
    return inter * (f32(1) - ef) + extra * ef


def _yarn_attention(rope: Rope) -> float:
    o = rope.opt
    f = o["factor"]
    if o["mscale"] and o["mscale_all_dim"]:
        return float(yarn_mscale(f, o["mscale"]) / yarn_mscale(f, o["mscale_all_dim"]))
    return yarn_mscale(f)


def _llama3_exact(rope: Rope) -> list[Decimal]:
    o = rope.opt
    D = Decimal
    f, L = D(o["factor"]), D(o["original_max_position_embeddings"])
    lff, hff = D(o["low_freq_factor"]), D(o["high_freq_factor"])
    low_wl, high_wl = L / lff, L / hff
    out = []
    for x in _none_exact(rope):
        wl = _trig.TWO_PI / x
        if wl < high_wl:
            out.append(x)
        elif wl > low_wl:
            out.append(x / f)
        else:
            smooth = (L / wl - lff) / (hff - lff)
            out.append((1 - smooth) * x / f + smooth * x)
    return out


def _llama3_f32(rope: Rope) -> np.ndarray:
    o = rope.opt
    inv = _none_f32(rope)
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


def _longrope_exact(rope: Rope) -> list[Decimal]:
    return [x / Decimal(e) for x, e in zip(_none_exact(rope), rope.ext_factors())]


def _longrope_f32(rope: Rope) -> np.ndarray:
    r = rope.rot_dim
    ext = np.array(rope.ext_factors(), dtype=f32)
    shape = np.arange(0, r, 2, dtype=np.int64).astype(f32) / f32(r)
    return f32(1.0) / (ext * _powf(rope.base, shape))


def _longrope_attention(rope: Rope) -> float:
    f, omp = rope.opt["factor"], rope.opt["original_max_position_embeddings"]
    return 1.0 if f <= 1.0 else math.sqrt(1 + math.log(f) / math.log(omp))


def _proportional_exact(rope: Rope) -> list[Decimal]:
    r, f = rope.rot_dim, Decimal(rope.opt["factor"])
    rotated = [x / f for x in _default_exact(Decimal(rope.base), rope.dim, r // 2)]
    return rotated + [Decimal(0)] * (rope.dim // 2 - r // 2)


def _proportional_f32(rope: Rope) -> np.ndarray:
    n_rot = rope.rot_dim // 2
    inv = np.concatenate([_default_f32(rope.base, rope.dim, n_rot), np.zeros(rope.dim // 2 - n_rot, dtype=f32)])
    return inv / f32(rope.opt["factor"])


_HF = "huggingface/transformers src/transformers/modeling_rope_utils.py"

#: Every scaling rule, by posenc's name (``scaling=``). Keep in the order users meet them.
SCALINGS: dict[str, Scaling] = {
    "none": Scaling("none", "default", f"{_HF} _compute_default_rope_parameters",
                    _exact(_none_exact), _none_f32),
    "linear": Scaling("linear", "linear", f"{_HF} _compute_linear_scaling_rope_parameters",
                      _exact(_linear_exact), _linear_f32, uses=("factor",), required=("factor",)),
    "ntk": Scaling("ntk", "ntk", "lucidrains/rotary-embedding-torch RotaryEmbedding theta_rescale_factor",
                   _exact(_ntk_exact), _ntk_f32, uses=("factor",), required=("factor",)),
    "dynamic": Scaling("dynamic", "dynamic", f"{_HF} _compute_dynamic_ntk_parameters",
                       _exact(_dynamic_exact), _dynamic_f32,
                       uses=("factor", "original_max_position_embeddings", "seq_len"),
                       required=("factor", "original_max_position_embeddings")),
    "yarn": Scaling("yarn", "yarn", f"{_HF} _compute_yarn_parameters", _exact(_yarn_exact), _yarn_f32,
                    _yarn_attention,
                    uses=("factor", "original_max_position_embeddings", "attention_factor", "beta_fast",
                          "beta_slow", "mscale", "mscale_all_dim", "truncate"),
                    required=("factor", "original_max_position_embeddings"),
                    defaults={"beta_fast": 32.0, "beta_slow": 1.0, "truncate": True}),
    "llama3": Scaling("llama3", "llama3", f"{_HF} _compute_llama3_parameters", _exact(_llama3_exact), _llama3_f32,
                      uses=("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
                      defaults={"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                "original_max_position_embeddings": 8192}),
    "longrope": Scaling("longrope", "longrope", f"{_HF} _compute_longrope_parameters",
                        _exact(_longrope_exact), _longrope_f32, _longrope_attention,
                        uses=("factor", "original_max_position_embeddings", "seq_len", "attention_factor",
                              "short_factor", "long_factor"),
                        required=("short_factor", "long_factor", "original_max_position_embeddings")),
    "proportional": Scaling("proportional", "proportional", f"{_HF} _compute_proportional_rope_parameters (Gemma 4)",
                            _exact(_proportional_exact), _proportional_f32, uses=("factor",),
                            defaults={"factor": 1.0}),
}  # fmt: skip

#: HF ``rope_type`` -> posenc scaling name.
HF_NAMES: dict[str, str] = {s.hf_name: name for name, s in SCALINGS.items() if s.hf_name != "ntk"}


def attention_scaling(rope: Rope) -> float:
    """The cos/sin multiplier: an explicit ``attention_factor`` wins, else the rule's formula."""
    o = rope.opt
    if o.get("attention_factor") is not None:
        return float(o["attention_factor"])
    return float(SCALINGS[rope.scaling].attention(rope))


def optional_parameters() -> dict[str, tuple[str, ...]]:
    """Optional parameter -> the rules that read it (derived from the registry)."""
    out: dict[str, list[str]] = {}
    for name, s in SCALINGS.items():
        for p in s.uses:
            out.setdefault(p, []).append(name)
    return {p: tuple(users) for p, users in out.items()}
