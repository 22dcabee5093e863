r"""The sinusoidal encoding of "Attention Is All You Need" (Vaswani et al., 2017) in every published convention.

.. math::

    PE(t, k)_{\sin} = \sin(t\,\omega_k), \qquad PE(t, k)_{\cos} = \cos(t\,\omega_k)

with positions :math:`t = \mathrm{offset}, \dots, \mathrm{offset} + \mathrm{len} - 1` and frequencies

* ``freq=paper``: :math:`\omega_k = \mathrm{base}^{-2k/d}` (the paper, PyTorch tutorial, TF tutorial, Marian);
* ``freq=t2t``: :math:`\omega_k = \mathrm{min\_timescale}\cdot\exp\!\big(-k \ln(\mathrm{max\_timescale}/
  \mathrm{min\_timescale}) / \max(\lfloor d/2\rfloor - 1, 1)\big)` (tensor2tensor ``get_timing_signal_1d``,
  fairseq ``SinusoidalPositionalEmbedding``, MusicGen).

Layouts place the sin and cos columns:

* ``interleaved``: sin at even columns, cos at odd ones (paper, PyTorch tutorial, XLM, positional-encodings);
* ``split``: ``[sin | cos]`` (TF tutorial, tensor2tensor, fairseq, Marian, MAE);
* ``split-cos-first``: ``[cos | sin]`` (MusicGen, diffusion timestep embeddings with flip_sin_to_cos).

Odd ``dim`` (``odd_dim=auto``) follows the convention reproduced: ``interleaved`` has ceil(d/2) sin columns and
floor(d/2) cos columns; ``split`` with ``freq=paper`` is Marian's ceil(d/2) sin then floor(d/2) cos (first block
gets the extra column); ``freq=t2t`` uses floor(d/2) frequencies and a trailing zero column (tensor2tensor,
fairseq, HF MusicGen). ``odd_dim=ceil`` / ``zero-pad`` force one rule.

``padding_idx`` zeroes the row of that position value (fairseq / M2M100: rows are indexed by position).
``scale`` multiplies every value (x-transformers' ``ScaledSinusoidalEmbedding`` starts it at ``dim ** -0.5``:
``cat(sin, cos) * scale``, its ``split`` layout with the paper's frequencies).
Angles are computed with exact range reduction (:mod:`._trig`), so every output dtype is correctly rounded
to within an ulp at any position below 2**31, unlike the float32 formulas most libraries use.

``angle_dtype=float32`` reproduces those float32 formulas where a model's table is what they compute (HF
M2M100 / NLLB and Speech2Text ``get_embedding``, Whisper's ``sinusoids``, the PyTorch tutorial): frequencies
``fl32(exp(fl32(k * fl32(-ln(max/min) / (n - 1)))))`` (t2t) or ``fl32(exp(fl32(2k * fl32(-ln(base) / d))))``
(paper), the angle ``fl32(t * w)`` rounded once, then its sine and cosine (correctly rounded; PyTorch's
vectorised float32 ``sin``/``exp`` are within an ulp or two of these).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, localcontext
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import ParameterError, ref
from . import _angleadd, _trig
from .base import AngleTerms, Encoding, TensorSpec, param

LAYOUTS = ("interleaved", "split", "split-cos-first")
ANGLE_DTYPES = ("float64", "float32")
FREQS = ("paper", "t2t")
ODD_DIM = ("auto", "ceil", "zero-pad")
#: Positions must stay below this for exact range reduction.
MAX_POSITION = 2**31 - 1
#: Elements per exact-path chunk: keeps _trig.sincos's temporaries in cache.
_EXACT_BLOCK = 1 << 14


def frequencies(dim: int, n: int, freq: str, base: float, min_timescale: float, max_timescale: float) -> list[Decimal]:
    """The ``n`` angular frequencies of a ``dim``-wide table, to ~60 significant digits."""
    with localcontext() as ctx:
        ctx.prec = 60
        if freq == "paper":
            log_base = Decimal(base).ln()
            return _trig.geometric(Decimal(1), (-(Decimal(2) / Decimal(dim)) * log_base).exp(), n)
        # the denominator is floor(d/2) - 1 whatever the column count (tensor2tensor, fairseq)
        increment = (Decimal(max_timescale) / Decimal(min_timescale)).ln() / Decimal(max(dim // 2 - 1, 1))
        return _trig.geometric(Decimal(min_timescale), (-increment).exp(), n)


@functools.lru_cache(maxsize=64)
def _columns(dim: int, layout: str, plan: tuple[int, int, int, bool], nonzero: bytes) -> _angleadd.Columns:
    """:attr:`Sinusoidal._columns` of a width, layout and column plan, given which frequencies are non-zero (one
    byte each): the same for every table of that shape, built once."""
    n, n_sin, n_cos, pad = plan
    freq = np.full(dim, -1)
    part = np.full(dim, -1)
    if layout == "interleaved":
        freq[0 : 2 * n_sin : 2], part[0 : 2 * n_sin : 2] = np.arange(n_sin), 0
        freq[1 : 2 * n_cos : 2], part[1 : 2 * n_cos : 2] = np.arange(n_cos), 1
    else:
        n_second = dim - n - pad
        first, second = (0, 1) if layout == "split" else (1, 0)
        freq[:n], part[:n] = np.arange(n), first
        freq[n : n + n_second], part[n : n + n_second] = np.arange(n_second), second
    w = np.frombuffer(nonzero, dtype=np.bool_).astype(np.float64)  # only its zeros matter to Columns
    return _angleadd.Columns(freq, part, w)


@dataclass(frozen=True)
class Sinusoidal(Encoding):
    """Fixed sinusoidal absolute positions; one tensor ``pe`` of shape (len, dim)."""

    KIND = "sinusoidal"
    SUMMARY = "sin/cos absolute positions (Vaswani et al. 2017) in every published convention"
    REFERENCES = (
        "paper: Vaswani et al. 2017, section 3.5 (PE(pos,2i)=sin(pos/10000^(2i/d)), PE(pos,2i+1)=cos(...))",
        "pytorch-tutorial: PyTorch 'Language Modeling with nn.Transformer' PositionalEncoding (interleaved, paper freq)",
        "tf-tutorial: TensorFlow 'Neural machine translation with a Transformer' positional_encoding ([sin | cos])",
        "tensor2tensor: tensor2tensor/layers/common_attention.py get_timing_signal_1d",
        "fairseq: fairseq/modules/sinusoidal_positional_embedding.py SinusoidalPositionalEmbedding.get_embedding",
        "marian: Marian NMT / HF MarianSinusoidalPositionalEmbedding (ceil(d/2) sin columns, then cos)",
        "musicgen: audiocraft create_sin_embedding / HF MusicgenSinusoidalPositionalEmbedding ([cos | sin], t2t freq)",
    )
    PRESETS = {
        "paper": {"layout": "interleaved", "freq": "paper"},
        "pytorch-tutorial": {"layout": "interleaved", "freq": "paper"},
        "tf-tutorial": {"layout": "split", "freq": "paper"},
        "tensor2tensor": {"layout": "split", "freq": "t2t"},
        "fairseq": {"layout": "split", "freq": "t2t"},
        "marian": {"layout": "split", "freq": "paper"},
        "musicgen": {"layout": "split-cos-first", "freq": "t2t"},
    }
    PRESET_DOCS = {
        "paper": "interleaved sin/cos, w_k = base^(-2k/d): the paper's formula",
        "pytorch-tutorial": "same table as paper: pe[:, 0::2] = sin, pe[:, 1::2] = cos, div_term = exp(-2k ln(base)/d)",
        "tf-tutorial": "[sin | cos], w_k = base^(-2k/d): the TF tutorial (seed material) table",
        "tensor2tensor": "[sin | cos], t2t freq, trailing zero column for odd dim: get_timing_signal_1d",
        "fairseq": "[sin | cos], t2t freq, zero pad for odd dim, optional padding_idx row of zeros",
        "marian": "[sin | cos], paper freq, ceil(d/2) sin columns then floor(d/2) cos columns",
        "musicgen": "[cos | sin], t2t freq (max_period = base): audiocraft / HF MusicGen",
    }
    PRIMARY = "pe"
    PROPERTIES = {
        "finite": True, "matches-spec": True, "bounded": True, "unique": True, "constant-norm": True,
        "equidistant": True, "offset-invariant": True, "shift-linear": True, "symmetric": True,
        "decay": False, "precision": False,
    }  # fmt: skip
    VIEWS = ("heatmap", "dot", "circle", "spectrum", "compare")
    EXTRA_ROWS_FROM = ("padding_idx", "offset")

    base: float = param(10000.0, "frequency base (max wavelength / 2 pi)", low=0.0, low_open=True)
    offset: int = param(0, "position of the first row", low=-MAX_POSITION, high=MAX_POSITION)
    layout: str = param("interleaved", "column order of the sin and cos halves", choices=LAYOUTS)
    freq: str = param("paper", "frequency formula: paper base^(-2k/d) or t2t geometric timescales", choices=FREQS)
    min_timescale: float = param(
        1.0, "t2t: shortest timescale (highest frequency = 1/min_timescale)", low=0.0, low_open=True
    )
    max_timescale: float | None = param(None, "t2t: longest timescale (default: base)", low=0.0, low_open=True)
    padding_idx: int | None = param(None, "position value whose row is all zeros (fairseq/M2M100)")
    odd_dim: str = param("auto", "odd dim: auto follows the convention, ceil or zero-pad force one", choices=ODD_DIM)
    angle_dtype: str = param(
        "float64",
        "float32: frequencies and angles t*w rounded to float32 as torch code does (M2M100, Whisper)",
        choices=ANGLE_DTYPES,
    )
    scale: float = param(
        1.0, "multiplier of every value (x-transformers ScaledSinusoidalEmbedding: dim ** -0.5)", low=0.0, low_open=True
    )

    #: the structure reader of posenc_cli/inspect/hints that proposes this kind's parameters from a table (data)
    IDENTIFY = "sinusoid:hints_sinusoidal"

    @classmethod
    def value_bound(cls, metadata: dict[str, str]) -> float:
        # a scaled sinusoid's values reach its scale (posenc files record it)
        return float(cls.metadata_param(metadata, "scale"))

    def validate(self) -> None:
        if self.offset + self.length - 1 > MAX_POSITION:
            raise ParameterError(
                f"last position {self.offset + self.length - 1} exceeds {MAX_POSITION}; lower {ref('length')} or offset"
            )
        if self.angle_dtype == "float32" and self.freq == "t2t" and self.min_timescale != 1.0:
            raise ParameterError(
                f"angle_dtype=float32 follows fairseq/Whisper's float32 code, whose min_timescale is 1; drop "
                f"min_timescale={self.min_timescale} or angle_dtype"
            )
        if self.freq == "t2t" and self.max_timescale is not None and self.max_timescale < self.min_timescale:
            raise ParameterError(
                f"max_timescale={self.max_timescale} is below min_timescale={self.min_timescale}; raise max_timescale"
            )

    # ----- column plan ------------------------------------------------------------------------
    @cached_property
    def _plan(self) -> tuple[int, int, int, bool]:
        """(number of frequencies, sin columns, cos columns, trailing zero column)."""
        d = self.dim
        rule = self.odd_dim
        if rule == "auto":
            rule = "zero-pad" if (self.freq == "t2t" and self.layout != "interleaved") else "ceil"
        if d % 2 == 0:
            return d // 2, d // 2, d // 2, False
        if rule == "zero-pad":
            return d // 2, d // 2, d // 2, True
        return (d + 1) // 2, (d + 1) // 2, d // 2, False

    @cached_property
    def _freqs(self) -> tuple[np.ndarray, np.ndarray]:
        n = self._plan[0]
        max_ts = self.base if self.max_timescale is None else self.max_timescale
        args = (self.dim, n, self.freq, self.base, self.min_timescale, max_ts)
        key = ("sinusoidal", *((type(v), v) for v in args))  # read-only, shared (:func:`_trig.frequencies_once`)
        return _trig.frequencies_once(key, lambda: _trig.double_double(frequencies(*args)))

    def inv_freq(self) -> np.ndarray:
        """The angular frequencies w_k in float64 (``angle_dtype=float32``: the float32 ones, widened)."""
        return self._freqs32.astype(np.float64) if self.angle_dtype == "float32" else self._freqs[0].copy()

    @cached_property
    def _freqs32(self) -> np.ndarray:
        """The frequencies as torch's float32 code computes them (see the module docstring)."""
        n = self._plan[0]
        if self.freq == "t2t":
            max_ts = self.base if self.max_timescale is None else self.max_timescale
            step = np.float32(-math.log(max_ts / self.min_timescale) / max(self.dim // 2 - 1, 1))
            expo = np.arange(n, dtype=np.float32) * step
        else:
            expo = np.arange(0, 2 * n, 2, dtype=np.float32) * np.float32(-math.log(self.base) / self.dim)
        return np.exp(expo.astype(np.float64)).astype(np.float32)

    def extra_rows(self) -> dict[int, str]:
        """fairseq / M2M100 add rows from ``padding_idx + 1`` on (``make_positions``): when the all-zero
        ``padding_idx`` row is in the table, it and the rows of the position values below it (which those models
        never add) are not positions."""
        p = self.padding_idx
        if p is None or not self.offset <= p < self.offset + self.length:
            return {}
        row = p - self.offset
        return {**{i: "offset" for i in range(row)}, row: "padding"}

    def tensor_specs(self) -> dict[str, TensorSpec]:
        return {"pe": TensorSpec("pe", (self.length, self.dim), self.out_dtype)}

    @cached_property
    def _adder(self) -> _angleadd.AngleAdder:
        return _angleadd.shared(*self._freqs)

    @cached_property
    def _columns(self) -> _angleadd.Columns:
        """Frequency and part (0 sin, 1 cos) of each column (-1: the zero pad); read-only, shared."""
        return _columns(self.dim, self.layout, self._plan, (self._freqs[0] != 0).tobytes())

    def _fast(self, dtype: np.dtype) -> tuple[_angleadd.AngleAdder, Callable[[np.ndarray, Any], None]] | None:
        """The angle-addition kernel and its near-zero refiner for outputs of ``dtype``, or None where the exact
        path serves (float64, short tables, positions within a step of -2**31); decided once per dtype."""
        cache = self.__dict__.setdefault("_fast_by_dtype", {})
        if dtype not in cache:
            ok = (
                _angleadd.usable(self._freqs[0], dtype, self.scale)
                and _angleadd.worth(self.length, self._plan[0])
                and _angleadd.reaches(self.offset, self.offset + self.length - 1)
            )
            tiny = _angleadd.tiny_threshold(dtype) if ok else None
            cache[dtype] = (self._adder, self._adder.refiner(self._columns, dtype, tiny, self.scale)) if ok else None
        return cache[dtype]

    def angle_terms(self, name: str) -> AngleTerms | None:
        if name != "pe":
            return None
        cols = self._columns
        freq = np.where(cols.freq >= 0, self._freqs[0][np.maximum(cols.freq, 0)], 0.0)
        return AngleTerms(freq, self.scale, self.offset)

    def _place(self, o: np.ndarray, s: np.ndarray, c: np.ndarray, scaled: bool = False) -> None:
        """sin and cos values (one column per frequency) into the table's columns ``o``."""
        n, n_sin, n_cos, pad = self._plan
        if self.scale != 1.0 and not scaled:  # float64 products, rounded once to the output dtype below
            s, c = s * self.scale, c * self.scale
        if self.layout == "interleaved":
            o[:, 0 : 2 * n_sin : 2] = s[:, :n_sin]
            o[:, 1 : 2 * n_cos : 2] = c[:, :n_cos]
        else:
            n_second = self.dim - n - pad
            first, second = (s, c) if self.layout == "split" else (c, s)
            o[:, :n] = first
            o[:, n : n + n_second] = second[:, :n_second]

    def _complex_pairs(self, out: np.ndarray) -> np.ndarray | None:
        """``out`` as complex64 where its (sin, cos) column pairs are exactly a complex64's (real, imag)."""
        if self.layout == "interleaved" and self.dim % 2 == 0 and out.dtype == np.float32 and out.flags.c_contiguous:
            return out.view(np.complex64)
        return None

    def _take(self, name: str, idx: np.ndarray, out: np.ndarray) -> None:
        fast = self._fast(out.dtype) if self.angle_dtype != "float32" else None
        if fast is None:
            super()._take(name, idx, out)
            return
        # angle addition at each position at once (AngleAdder.at: the products of a block's rows, the same bits)
        adder, refine = fast
        t = self.offset + idx
        pairs = self._complex_pairs(out)
        per = adder.chunk
        for a in range(0, len(t), per):
            u = adder.at(t[a : a + per], self.scale)
            if pairs is not None:
                np.copyto(pairs[a : a + per], u, casting="same_kind")
            else:
                self._place(out[a : a + per], u.real, u.imag, scaled=True)
            refine(out[a : a + per], t[a : a + per])
        if self._plan[3]:
            out[:, -1] = 0
        if self.padding_idx is not None:
            out[idx == self.padding_idx - self.offset] = 0

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        n, _, _, pad = self._plan
        t_start = self.offset + start
        rows = stop - start

        def place(a: int, b: int, s: np.ndarray, c: np.ndarray, scaled: bool = False) -> None:
            self._place(out[a:b], s, c, scaled)

        fast = self._fast(out.dtype)
        if self.angle_dtype == "float32":
            # float32 positions (exact below 2**24) times float32 frequencies: one float32 rounding, as torch
            t = np.arange(t_start, t_start + rows, dtype=np.float64).astype(np.float32)
            angle = (t[:, None] * self._freqs32[None, :]).astype(np.float64)
            place(0, rows, np.sin(angle), np.cos(angle))
        elif fast is None:
            # Exact range reduction per element: float64 outputs (where angle addition's few float64
            # roundings would cost more than an ulp near the zeros) and tables too short to amortise
            # angle addition's tables.
            w_hi, w_lo = self._freqs
            step = max(1, _EXACT_BLOCK // max(1, n))
            for a in range(0, rows, step):
                b = min(a + step, rows)
                s, c = _trig.sincos(np.arange(t_start + a, t_start + b, dtype=np.float64), w_hi, w_lo)
                place(a, b, s, c)
        else:
            adder, refine = fast
            pairs = self._complex_pairs(out)
            for a, b, u in adder.chunks(t_start, rows, self.scale):
                if pairs is not None:
                    np.copyto(pairs[a:b], u, casting="same_kind")
                else:
                    place(a, b, u.real, u.imag, scaled=True)
                refine(out[a:b], t_start + a)
        if pad:
            out[:, -1] = 0
        if self.padding_idx is not None:
            row = self.padding_idx - self.offset
            if start <= row < stop:
                out[row - start] = 0
