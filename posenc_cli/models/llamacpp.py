r"""llama.cpp's RoPE, emulated: the cos/sin tables llama.cpp computes for a GGUF file, and the verdict against
the model's HF config.json.

Everything here mirrors one llama.cpp version, :data:`LLAMACPP_VERSION` (the tables below were printed from its
source by ``tools/golden/llamacpp_arch_table.py``; ``tests/data/llamacpp/`` holds what the real ggml computed).

What llama.cpp does, step by step
---------------------------------
1. **Loading** (``src/llama-model.cpp`` ``load_hparams`` and each ``src/models/<arch>.cpp``
   ``load_arch_hparams``): ``{arch}.rope.freq_base`` (default 10000), ``rope.scaling.type`` (default
   ``linear``), ``rope.scaling.factor`` (else the old ``rope.scale_linear``; ``freq_scale = 1/factor``, 1 when
   absent or 0), ``rope.scaling.attn_factor`` (default 1), ``rope.scaling.original_context_length`` (default
   ``context_length``), ``rope.dimension_count`` (default the key length, ``embedding_length / head_count``),
   ``rope.dimension_count_swa``; and only where the architecture's loader reads them: ``freq_base_swa``
   (:data:`READS_FREQ_BASE_SWA`), ``dimension_sections`` (:data:`READS_DIMENSION_SECTIONS`),
   ``yarn_log_multiplier`` (:data:`READS_YARN_LOG_MUL`; DeepSeek-V2 divides it by 0.1, cancelling the
   converter's factor), the yarn beta keys (:data:`READS_YARN_BETA_FAST`; everyone else uses 32 and 1).
   The rope type is :data:`ROPE_TYPE` (``llama_model_rope_type``).
2. **The context** (``src/llama-context.cpp``): ``n_ctx`` is padded up to a multiple of 256; a scaling type
   ``none`` forces ``freq_scale = 1``; ``ext_factor`` is 1 for YaRN, else 0; with ``ext_factor != 0`` the
   attention factor becomes ``get_mscale(factor, m) / get_mscale(factor, m_all)`` (``m_all`` the
   yarn_log_multiplier, ``m`` 1 except DeepSeek-V2) or ``get_mscale(factor, 1)``, then is divided by
   ``1 + 0.1 ln(factor)``, which ggml multiplies back in (PR #17945); finally times ``rope.scaling.attn_factor``.
   The per-pair divisors are ``rope_freqs`` when present, else ``rope_factors_long`` when
   ``n_ctx_seq > n_ctx_orig_yarn``, else ``rope_factors_short`` (``llama_model::get_rope_factors``).
3. **ggml** (``ggml/src/ggml-cpu/ops.cpp`` ``ggml_rope_cache_init``, ``rope_yarn``; ``ggml.c``
   ``ggml_rope_yarn_corr_dims``), all in float32: ``theta_scale = powf(base, -2/n_dims)``; per position
   ``theta = p`` then ``theta *= theta_scale`` once per pair (an iterated product, not ``p * base^(-2i/d)``);
   ``theta_extrap = theta / ff[i]``; ``theta_interp = freq_scale * theta_extrap``; with ``ext_factor != 0``
   ``ramp = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1)`` with ``lo = max(0, floor(c(beta_fast)))``,
   ``hi = min(n_dims - 1, ceil(c(beta_slow)))``, ``c(b) = n_dims ln(n_ctx_orig / (2 pi b)) / (2 ln base)``,
   ``theta = theta_interp (1 - ramp) + theta_extrap ramp`` and ``mscale *= 1 + 0.1 ln(1/freq_scale)``;
   ``cos = cosf(theta) mscale``, ``sin = sinf(theta) mscale``. NORM rotates pairs ``(2i, 2i+1)``; NEOX, MROPE and
   IMROPE pairs ``(i, i + n_dims/2)``; VISION pairs ``(i, i + n_dims)`` over ``2 n_dims`` features. M-RoPE picks
   per pair the temporal, height, width or extra position by ``dimension_sections`` (IMROPE interleaves them);
   text tokens have positions ``(p, p, p, 0)``.

The emulation does each float32 operation with NumPy float32 (IEEE round-to-nearest, as ggml's scalar C code),
the YaRN mix as the fused multiply-add GCC makes of it, and ``cosf``/``sinf``/``powf``/``logf`` as the float64
function of the float32 argument rounded to float32. Measured against the real ggml (``tests/data/llamacpp``):
over 99% of the values are bit for bit equal, the rest 1 ulp apart (glibc's ``cosf``/``sinf`` are not always
correctly rounded), 2 ulp where that 1 ulp is then multiplied by a YaRN mscale.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..blocks import rows_per_block
from ..errors import ParameterError, param

#: The llama.cpp these tables mirror.
LLAMACPP_VERSION = "llama.cpp vendored in llama-cpp-python 0.3.36 (ggml 0.25.3)"

#: ggml's mode numbers (ggml.h GGML_ROPE_TYPE_*).
MODES = {"NORM": 0, "NEOX": 2, "MROPE": 8, "VISION": 24, "IMROPE": 40}
#: The pairing each mode applies, as posenc's ``layout`` names it.
LAYOUTS = {"NORM": "interleaved", "NEOX": "half", "MROPE": "half", "IMROPE": "half", "VISION": "vision"}
M_ROPE = ("MROPE", "IMROPE", "VISION")

# ----- llama_model_rope_type and the per-arch loaders, as data (printed by tools/golden/llamacpp_arch_table.py) --
#: ``MROPE-if-sections:X``: MROPE when ``dimension_sections`` has its first two entries > 0, else X.
_ROPE_TYPE_TEXT = """
afmoe=NEOX apertus=NEOX arcee=NORM arctic=NORM arwkv7=NONE baichuan=NORM bailingmoe=NORM bailingmoe2=NEOX
bailingmoe3=MROPE-if-sections:NORM bert=NEOX bitnet=NEOX bloom=NONE chameleon=NORM chatglm=NORM clip=NONE
codeshell=NEOX cogvlm=NEOX cohere2=NORM cohere2moe=NORM command-r=NORM dbrx=NEOX deci=NORM deepseek=NORM
deepseek2=NORM deepseek2-ocr=NORM deepseek32=NORM deepseek4=NORM dflash=MROPE-if-sections:NEOX dots1=NEOX
dots3note=NORM dream=NEOX eagle3=NORM ernie4_5=NORM ernie4_5-moe=NORM eurobert=NEOX exaone=NEOX exaone-moe=NEOX
exaone4=NEOX falcon=NEOX falcon-h1=NEOX gemma=NEOX gemma-embedding=NEOX gemma2=NEOX gemma3=NEOX gemma3n=NEOX
gemma4=NEOX gemma4-assistant=NEOX glm-dsa=NORM glm4=MROPE-if-sections:NORM glm4moe=MROPE-if-sections:NEOX
glm5-next=NONE gpt-oss=NEOX gpt2=NONE gptj=NONE gptneox=NEOX granite=NORM granite_swa=NORM granitehybrid=NORM
granitemoe=NORM graniteswitch=NORM grok=NEOX grovemoe=NEOX hrm_text=NEOX hunyuan-dense=NEOX hunyuan-moe=NEOX
hunyuan_vl=MROPE-if-sections:NEOX hy_v3=NEOX hy_v4=NORM internlm2=NORM jais=NONE jais2=NEOX jamba=NONE
jina-bert-v2=NONE jina-bert-v3=NEOX kimi-k3=NONE kimi-linear=NONE laguna=NEOX lfm2=NEOX lfm2moe=NEOX llada=NORM
llada-moe=NEOX llama=NORM llama-embed=NORM llama4=NORM maincoder=NORM mamba=NONE mamba2=NONE maple=NEOX
mellum=NEOX mimo2=NEOX minicpm=NORM minicpm3=NEOX minimax-01=NEOX minimax-m2=NEOX minimax-m3=NEOX mistral3=NORM
mistral4=NORM modern-bert=NEOX mpt=NONE muse-glimmer=NORM nanbeige=NORM nemotron=NEOX nemotron_h=NONE
nemotron_h_moe=NONE neo-bert=NORM nomic-bert=NEOX nomic-bert-moe=NEOX olmo=NORM olmo2=NEOX olmoe=NEOX
openelm=NEOX orion=NEOX paddleocr=MROPE pangu-embedded=NEOX phi2=NEOX phi3=NEOX phimoe=NEOX plamo=NEOX
plamo2=NEOX plamo3=NEOX plm=NORM pockettts=NORM qwen=NEOX qwen2=NEOX qwen2moe=NEOX qwen2vl=MROPE qwen3=NEOX
qwen35=IMROPE qwen35moe=IMROPE qwen3moe=NEOX qwen3next=NEOX qwen3tts=IMROPE qwen3vl=IMROPE qwen3vlmoe=IMROPE
qwen4exp=IMROPE refact=NONE rnd1=NEOX rwkv6=NONE rwkv6qwen2=NONE rwkv7=NONE seed_oss=NEOX smallthinker=NEOX
smollm3=NORM spark2_5=NEOX stablelm=NEOX starcoder=NORM starcoder2=NEOX step35=NEOX t5=NONE t5encoder=NONE
talkie=NEOX wavtokenizer-dec=NONE xverse=NORM
"""
ROPE_TYPE: dict[str, str] = dict(pair.split("=", 1) for pair in _ROPE_TYPE_TEXT.split())
READS_FREQ_BASE_SWA = frozenset(['afmoe', 'cohere2', 'cohere2moe', 'dots3note', 'exaone-moe', 'exaone4', 'gemma-embedding', 'gemma2', 'gemma3', 'gemma3n', 'gemma4', 'gemma4-assistant', 'gpt-oss', 'laguna', 'llama4', 'maple', 'mellum', 'mimo2', 'modern-bert', 'muse-glimmer', 'olmo2', 'plamo3', 'smallthinker', 'spark2_5', 'step35'])  # fmt: skip
READS_DIMENSION_SECTIONS = frozenset(['bailingmoe3', 'deepseek32', 'dflash', 'ernie4_5', 'glm-dsa', 'glm4', 'glm4moe', 'hunyuan_vl', 'qwen2vl', 'qwen35', 'qwen35moe', 'qwen3vl', 'qwen3vlmoe', 'qwen4exp'])  # fmt: skip
READS_YARN_LOG_MUL = frozenset(['deepseek2', 'deepseek32', 'mistral3'])  # fmt: skip
READS_YARN_BETA_FAST = frozenset(['grok', 'mistral3'])  # fmt: skip
READS_YARN_EXT_FACTOR = frozenset(['grok'])  # fmt: skip
READS_YARN_ATTN_FACTOR = frozenset(['grok'])  # fmt: skip
#: Architectures whose loader defaults ``freq_base_swa`` to ``freq_base`` (the others default it to 10000).
SWA_BASE_FROM_TRAIN = frozenset(['afmoe', 'cohere2', 'cohere2moe', 'dflash', 'exaone-moe', 'exaone4', 'gemma2', 'gpt-oss', 'laguna', 'llama4', 'maple', 'mellum', 'muse-glimmer', 'olmo2', 'smallthinker', 'spark2_5'])  # fmt: skip
#: Whether convert_hf_to_gguf.py writes an architecture's Q/K rows permuted (``LlamaModel.permute`` and its kin):
#: ``yes``, ``no``, or ``mixed`` (some of its converter classes do); printed from the converter's own registry by
#: tools/golden/llamacpp_qk_permute.py (each decision's class and file:line are in its output).
_QK_PERMUTE_TEXT = """
afmoe=no apertus=no arcee=yes arctic=yes arwkv7=no baichuan=yes bailingmoe=yes bailingmoe2=no bailingmoe3=no
bert=no bitnet=no bloom=no chameleon=yes chatglm=no codeshell=no cogvlm=yes cohere2=no cohere2moe=no
command-r=no dbrx=no deci=yes deepseek=yes deepseek2=no deepseek32=no deepseek4=no dflash=no dots1=no
dots3note=no dream=no ernie4_5=no ernie4_5-moe=no eurobert=no exaone=no exaone-moe=no exaone4=no falcon=no
falcon-h1=no gemma=no gemma-embedding=no gemma2=no gemma3=no gemma3n=no gemma4=no gemma4-assistant=no
glm-dsa=no glm4=no glm4moe=no glm5-next=no gpt-oss=no gpt2=no gptneox=no granite=yes granite_swa=yes
granitehybrid=no granitemoe=yes graniteswitch=yes grok=no grovemoe=no hrm_text=no hunyuan-dense=no
hunyuan-moe=no hunyuan_vl=no hy_v3=no hy_v4=no internlm2=yes jais=no jais2=no jamba=no jina-bert-v2=no
kimi-k3=no kimi-linear=no laguna=no lfm2=no lfm2moe=no llada=yes llada-moe=no llama=mixed llama-embed=yes
llama4=no maincoder=no mamba=no mamba2=no maple=no mellum=no mimo2=no minicpm=yes minicpm3=no minimax-01=no
minimax-m2=no minimax-m3=no mistral3=no modern-bert=no mpt=no muse-glimmer=no nanbeige=yes nemotron=no
nemotron_h=no nemotron_h_moe=no neo-bert=no olmo=yes olmo2=no olmoe=no openelm=no orion=no paddleocr=no
pangu-embedded=no phi2=no phi3=no phimoe=no plamo=no plamo2=no plamo3=no plm=no pockettts=no qwen=no qwen2=no
qwen2moe=no qwen2vl=no qwen3=no qwen35=no qwen35moe=no qwen3moe=no qwen3next=no qwen3tts=no qwen3vl=no
qwen3vlmoe=no qwen4exp=no refact=no rnd1=no rwkv6=no rwkv6qwen2=no rwkv7=no seed_oss=no smallthinker=no
smollm3=yes spark2_5=no stablelm=no starcoder=no starcoder2=no step35=no t5=no t5encoder=no talkie=no
wavtokenizer-dec=no xverse=yes
"""
QK_PERMUTE: dict[str, str] = dict(pair.split("=", 1) for pair in _QK_PERMUTE_TEXT.split())
#: Architectures whose converter permutes the Q/K rows (for some classes at least) so that NORM (consecutive
#: pairs) equals HF's rotate_half.
QK_PERMUTED = frozenset(a for a, v in QK_PERMUTE.items() if v != "no")

#: Which layers llama.cpp treats as sliding, per architecture (each loader's ``load_swa_pattern(ml, N,
#: dense_first)``, or a required ``get_arr`` of the pattern key; printed by tools/golden/llamacpp_arch_table.py):
#: ``N:dense-first|dense-last:always|if`` (``if``: only when ``attention.sliding_window`` > 0) or ``array:...``;
#: read through :func:`swa_pattern` (text, like ``_ROPE_TYPE_TEXT``: its names are GGUF architectures).
#: A GGUF's ``{arch}.attention.sliding_window_pattern`` (an array of booleans, or a number N) overrides the
#: default N; ``llama_hparams::set_swa_pattern``: layer il is sliding when N == 0, else dense-last
#: ``il % N < N - 1``, dense-first ``il % N != 0``.
_SWA_PATTERN_TEXT = (
    "afmoe=4:dense-last:if cohere2=4:dense-last:always cohere2moe=4:dense-first:always dflash=array:if "
    "dots3note=array:always exaone-moe=4:dense-last:always exaone4=4:dense-last:if "
    "gemma-embedding=6:dense-last:always gemma2=2:dense-last:always gemma3=6:dense-last:if "
    "gemma3n=5:dense-last:always gemma4=array:always gemma4-assistant=array:always gpt-oss=2:dense-last:always "
    "granite_swa=array:always laguna=4:dense-first:if llama4=4:dense-last:if maple=array:always "
    "mellum=4:dense-last:if mimo2=array:always modern-bert=3:dense-first:if muse-glimmer=4:dense-last:always "
    "olmo2=4:dense-last:if plamo3=8:dense-last:if smallthinker=4:dense-first:if spark2_5=array:always "
    "step35=array:always"
)


def swa_pattern(arch: str) -> str | None:
    """The sliding-layer rule of ``arch``'s loader (see ``_SWA_PATTERN_TEXT``), None where it has none."""
    for pair in _SWA_PATTERN_TEXT.split():
        name, rule = pair.split("=", 1)
        if name == arch:
            return rule
    return None


SCALING_TYPES = ("none", "linear", "yarn", "longrope")


def rope_type_of(arch: str, sections: tuple[int, ...] = ()) -> tuple[str, bool]:
    """llama.cpp's rope type for ``arch`` and whether the architecture is known (unknown: NEOX assumed)."""
    entry = ROPE_TYPE.get(arch)
    if entry is None:
        return "NEOX", False
    if entry.startswith("MROPE-if-sections:"):
        use = len(sections) >= 2 and sections[0] > 0 and sections[1] > 0
        return ("MROPE" if use else entry.split(":", 1)[1]), True
    return entry, True


def _f32(x: Any) -> np.float32:
    return np.float32(x)


def _logf(x: Any) -> np.float32:
    v = float(x)
    return np.float32(math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan))


@dataclass
class LlamaRope:
    """The RoPE hparams llama.cpp loads for one attention type of a model (see the module docstring, step 1)."""

    arch: str
    rope_type: str
    known_arch: bool
    n_rot: int
    head_dim: int
    freq_base: float
    freq_scale: float  # 1/factor, float32
    scaling_type: str
    n_ctx_train: int
    n_ctx_orig: int
    attn_factor: float = 1.0  # rope.scaling.attn_factor
    yarn_log_mul: float = 0.0  # after DeepSeek-V2's /0.1
    yarn_ext_factor: float = -1.0  # hparam (-1: not set)
    yarn_attn_factor: float = 1.0  # hparam
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    sections: tuple[int, ...] = ()
    freqs: np.ndarray | None = None  # rope_freqs
    long: np.ndarray | None = None  # rope_factors_long
    short: np.ndarray | None = None  # rope_factors_short
    layer_type: str = "full_attention"
    origins: dict[str, str] = field(default_factory=dict)
    #: cparams.rope_freq_scale (the full layers'): what llama-context's attention factor is computed from
    ctx_freq_scale: float | None = None


@dataclass
class Context:
    """llama-context's choices for one ``n_ctx`` (step 2)."""

    n_ctx: int  # as asked (or the training context)
    n_ctx_seq: int  # padded to 256
    freq_scale: float
    ext_factor: float
    attn_factor: float  # what ggml receives
    factors: np.ndarray | None
    factors_from: str  # rope_freqs / rope_factors_long / rope_factors_short / none
    mscale: float  # the amplitude of cos/sin: attn_factor, times ggml's own 1 + 0.1 ln(1/freq_scale) for YaRN


def context(rope: LlamaRope, n_ctx: int | None = None) -> Context:
    """llama-context's ``ext_factor``, attention factor and per-pair divisors at ``n_ctx`` (default: training)."""
    asked = rope.n_ctx_train if not n_ctx else int(n_ctx)
    if asked <= 0:
        raise ParameterError(f"{param('n_ctx')} {asked} must be positive")
    n_ctx_seq = -(-asked // 256) * 256
    train = rope.freq_scale if rope.ctx_freq_scale is None else rope.ctx_freq_scale
    cscale = _f32(1.0) if rope.scaling_type == "none" else _f32(train)  # cparams.rope_freq_scale
    freq_scale = _f32(1.0) if rope.scaling_type == "none" else _f32(rope.freq_scale)  # this layer's
    ext = _f32(rope.yarn_ext_factor if rope.yarn_ext_factor >= 0 else (1.0 if rope.scaling_type == "yarn" else 0.0))
    attn = _f32(rope.yarn_attn_factor)
    if ext != 0:
        factor = _f32(_f32(1.0) / cscale)

        def get_mscale(scale: np.float32, m: np.float32) -> np.float32:
            return _f32(1.0) if scale <= 1 else _f32(_f32(_f32(0.1) * m) * _logf(scale) + _f32(1.0))

        if rope.yarn_log_mul != 0:
            m_all = _f32(rope.yarn_log_mul)
            m = m_all if (rope.arch == "deepseek2" and m_all != 1) else _f32(1.0)
            attn = _f32(get_mscale(factor, m) / get_mscale(factor, m_all))
        else:
            attn = get_mscale(factor, _f32(1.0))
        attn = _f32(attn * _f32(_f32(1.0) / _f32(_f32(1.0) + _f32(0.1) * _logf(factor))))
    attn = _f32(attn * _f32(rope.attn_factor))
    if rope.freqs is not None:
        factors, src = rope.freqs, "rope_freqs"
    elif rope.long is not None and n_ctx_seq > rope.n_ctx_orig:
        factors, src = rope.long, "rope_factors_long"
    elif rope.short is not None:
        factors, src = rope.short, "rope_factors_short"
    else:
        factors, src = None, "none"
    mscale = attn
    if ext != 0:
        mscale = _f32(attn * _f32(_f32(1.0) + _f32(0.1) * _logf(_f32(_f32(1.0) / freq_scale))))
    return Context(asked, n_ctx_seq, float(freq_scale), float(ext), float(attn), factors, src, float(mscale))


def corr_dims(n_dims: int, n_ctx_orig: int, base: float, beta_fast: float, beta_slow: float) -> tuple[float, float]:
    """ggml_rope_yarn_corr_dims in float32."""

    def dim(n_rot: float) -> np.float32:
        inner = _f32(_f32(n_ctx_orig) / _f32(_f32(_f32(n_rot) * _f32(2)) * _f32(math.pi)))
        return _f32(_f32(_f32(n_dims) * _logf(inner)) / _f32(_f32(2) * _logf(_f32(base))))

    with np.errstate(all="ignore"):  # n_ctx_orig 0 (no YaRN): C gives -inf, and MAX/MIN pick 0 and -inf
        start = float(np.floor(dim(beta_fast)))
        end = float(np.ceil(dim(beta_slow)))
    return (start if start > 0 else 0.0), (end if end < n_dims - 1 else float(n_dims - 1))


def rope_cache(
    positions: Any,
    n_dims: int,
    *,
    freq_base: float,
    freq_scale: float = 1.0,
    ext_factor: float = 0.0,
    attn_factor: float = 1.0,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    n_ctx_orig: int = 0,
    freq_factors: Any = None,
    mode: str = "NEOX",
    sections: tuple[int, ...] = (),
    ne0: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """ggml's cos/sin cache, one column per pair ``i0/2`` (float32, shape ``(len(positions), ne0/2)``).

    ``positions`` is a 1-D sequence of positions, or for M-RoPE modes an array ``(4, n)`` of the temporal,
    height, width and extra positions. ``ne0`` is the row width ggml iterates (the head dim; default n_dims,
    2 n_dims for VISION); only the first ``n_dims/2`` pairs are rotated except in VISION mode."""
    if mode not in MODES:
        raise ParameterError(f"unknown ggml rope mode {mode!r}; choose from: {', '.join(MODES)}")
    if n_dims <= 0 or n_dims % 2:
        raise ParameterError(f"n_dims {n_dims} must be positive and even")
    mrope = mode in M_ROPE
    pos = np.asarray(positions, dtype=np.int64)
    if mrope:
        if pos.ndim == 1:
            pos = np.stack([pos, pos, pos, np.zeros_like(pos)])
        if pos.shape[0] != 4:
            raise ParameterError("M-RoPE positions are 4 rows: temporal, height, width, extra")
        if len(sections) != 4 or not any(s > 0 for s in sections[:3]):
            raise ParameterError(f"M-RoPE needs 4 dimension_sections with one of the first three > 0; got {sections}")
    if ne0 is None:
        ne0 = 2 * n_dims if mode == "VISION" else n_dims
    n_pairs = ne0 // 2
    theta_scale = _f32(math.pow(float(_f32(freq_base)), float(_f32(_f32(-2.0) / _f32(n_dims)))))
    lo, hi = corr_dims(n_dims, n_ctx_orig, freq_base, beta_fast, beta_slow)
    fs, ext, mscale = _f32(freq_scale), _f32(ext_factor), _f32(attn_factor)
    if ext != 0:
        mscale = _f32(mscale * _f32(_f32(1.0) + _f32(_f32(0.1) * _logf(_f32(_f32(1.0) / fs)))))
    ff = None
    if freq_factors is not None:
        ff = np.asarray(freq_factors, dtype=np.float32).reshape(-1)
        if ff.size < n_dims // 2:
            raise ParameterError(f"freq_factors has {ff.size} values; ggml needs at least n_dims/2 = {n_dims // 2}")
    n = pos.shape[-1]
    if not mrope and (ff is None or ff.size >= n_pairs):
        return _plain_cache(pos, n_pairs, theta_scale, ff, fs, ext, mscale, lo, hi)
    cos = np.empty((n, n_pairs), dtype=np.float32)
    sin = np.empty((n, n_pairs), dtype=np.float32)
    if mrope:
        bases = [pos[j].astype(np.float32) for j in range(4)]
        thetas = [b.copy() for b in bases]
        s = [int(x) for x in sections]
        sect_dims = sum(s)
        sec_w = s[0] + s[1]
        sec_e = s[2] + sec_w
    else:
        theta = pos.astype(np.float32)
    denom = _f32(max(_f32(0.001), _f32(_f32(hi) - _f32(lo))))
    for i in range(n_pairs):
        i0 = 2 * i
        if mrope:
            sector = i % sect_dims
            if mode == "VISION":  # indep_sects: each section restarts its theta
                for start, j in ((0, 0), (s[0], 1), (sec_w, 2), (sec_e, 3)):
                    if sector == start:
                        thetas[j] = bases[j].copy()
            if mode == "IMROPE":
                if sector % 3 == 1 and sector < 3 * s[1]:
                    t = thetas[1]
                elif sector % 3 == 2 and sector < 3 * s[2]:
                    t = thetas[2]
                elif sector % 3 == 0 and sector < 3 * s[0]:
                    t = thetas[0]
                else:
                    t = thetas[3]
            else:
                if s[0] <= sector < sec_w:
                    t = thetas[1]
                elif sec_w <= sector < sec_w + s[2]:
                    t = thetas[2]
                elif sector >= sec_w + s[2]:
                    t = thetas[3]
                else:
                    t = thetas[0]
        else:
            t = theta
        extrap = t if ff is None else (t / ff[i]).astype(np.float32)
        interp = (fs * extrap).astype(np.float32)
        if ext != 0:
            y = _f32(_f32(_f32(i0 // 2) - _f32(lo)) / denom)
            ramp = _f32(_f32(1) - _f32(min(_f32(1), max(_f32(0), y))))
            mix = _f32(ramp * ext)
            # GCC contracts `theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix` into one fused multiply-add
            # on FMA machines (llama.cpp's native x86-64 builds): measured against the real ggml, the unfused
            # sum is up to 21 ulp off, the fused one 2 (tests/test_llamacpp.py). The product of two float32 is
            # exact in float64, so one float64 add and a float32 rounding is the fma (up to a rare double rounding).
            second = (extrap * mix).astype(np.float32).astype(np.float64)
            th = (interp.astype(np.float64) * np.float64(_f32(_f32(1) - mix)) + second).astype(np.float32)
        else:
            th = interp
        th64 = th.astype(np.float64)
        cos[:, i] = (np.cos(th64).astype(np.float32) * mscale).astype(np.float32)
        sin[:, i] = (np.sin(th64).astype(np.float32) * mscale).astype(np.float32)
        if mrope:
            thetas = [(x * theta_scale).astype(np.float32) for x in thetas]
        else:
            theta = (theta * theta_scale).astype(np.float32)
    return cos, sin


#: Elements per row chunk of :func:`_plain_cache` (its float64 temporaries stay a few MiB at any length)
_CHUNK_ELEMENTS = 1 << 18


def _plain_cache(pos: np.ndarray, n_pairs: int, theta_scale: np.float32, ff: np.ndarray | None, fs: np.float32,
                 ext: np.float32, mscale: np.float32, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """:func:`rope_cache` without M-RoPE sections: the same float32 operations, element by element, as its loop
    over pairs, on whole row chunks at once (ggml's theta is iterated pair by pair: that loop stays, one multiply
    per pair; the rest is one array operation per step instead of one per pair and step)."""
    n = pos.shape[-1]
    cos = np.empty((n, n_pairs), dtype=np.float32)
    sin = np.empty((n, n_pairs), dtype=np.float32)
    mix = one_minus = None
    if ext != 0:  # the ramp of each pair, in ggml's float32 scalars (rope_yarn_ramp)
        denom = _f32(max(_f32(0.001), _f32(_f32(hi) - _f32(lo))))
        mixes = []
        for i in range(n_pairs):
            y = _f32(_f32(_f32(i) - _f32(lo)) / denom)
            ramp = _f32(_f32(1) - _f32(min(_f32(1), max(_f32(0), y))))
            mixes.append(_f32(ramp * ext))
        mix = np.array(mixes, dtype=np.float32)
        one_minus = (np.float32(1) - mix).astype(np.float32).astype(np.float64)
    step = max(1, _CHUNK_ELEMENTS // max(1, n_pairs))
    for a in range(0, n, step):
        b = min(n, a + step)
        theta = pos[a:b].astype(np.float32)
        th = np.empty((b - a, n_pairs), dtype=np.float32)
        for i in range(n_pairs):
            th[:, i] = theta
            theta = (theta * theta_scale).astype(np.float32)
        extrap = th if ff is None else (th / ff[None, :n_pairs]).astype(np.float32)
        interp = (fs * extrap).astype(np.float32)
        if mix is not None and one_minus is not None:
            # the fused multiply-add of :func:`rope_cache`: exact float32 product, one float64 add, one rounding
            second = (extrap * mix[None, :]).astype(np.float32).astype(np.float64)
            th = (interp.astype(np.float64) * one_minus[None, :] + second).astype(np.float32)
        else:
            th = interp
        th64 = th.astype(np.float64)
        cos[a:b] = (np.cos(th64).astype(np.float32) * mscale).astype(np.float32)
        sin[a:b] = (np.sin(th64).astype(np.float32) * mscale).astype(np.float32)
    return cos, sin


#: The largest cos/sin cache (bytes, both arrays) a :func:`sharing` scope keeps for its rows' other readers.
SHARED_CACHE_BYTES = 2**28


class _Share:
    """The caches computed within :func:`sharing` scopes: one per distinct argument set, computed once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.scopes: list[int] = []  # the length of every open scope
        self.tables: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
        self.key_locks: dict[Any, Any] = {}


_SHARE = _Share()


@contextlib.contextmanager
def sharing(length: int) -> Iterator[None]:
    """Within this scope, :func:`cache_rows` of positions in ``0..length-1`` computes each distinct cache once for
    the whole range and hands every caller a copy of its rows: the audit's llama.cpp engine row and its GGUF
    verdict read the same float32 table (every row of ggml's cache depends on its own position only, so the rows
    of the whole table equal those of any block). Kept until the last open scope closes."""
    with _SHARE.lock:
        _SHARE.scopes.append(int(length))
    try:
        yield
    finally:
        with _SHARE.lock:
            _SHARE.scopes.remove(int(length))
            if not _SHARE.scopes:
                _SHARE.tables.clear()
                _SHARE.key_locks.clear()


def cache_rows(positions: Any, n_dims: int, **kw: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rope_cache` of ``positions`` (the same arguments), from the table a :func:`sharing` scope shares when
    ``positions`` is a run ``start..stop-1`` inside it (fresh arrays the caller may change), else computed."""
    pos = np.asarray(positions)
    with _SHARE.lock:
        length = max(_SHARE.scopes, default=0)
    n = pos.size
    n_pairs = (kw.get("ne0") or (2 * n_dims if kw.get("mode") == "VISION" else n_dims)) // 2
    if (
        pos.ndim != 1
        or n == 0
        or length * n_pairs * 8 > SHARED_CACHE_BYTES
        or not np.issubdtype(pos.dtype, np.integer)
        or not 0 <= int(pos[0]) <= int(pos[0]) + n <= length
        or not np.array_equal(pos, np.arange(int(pos[0]), int(pos[0]) + n))
    ):
        return rope_cache(pos, n_dims, **kw)
    # every argument, arrays by dtype, shape and bytes: two calls share a table only if ggml's inputs are equal
    key = (length, n_dims, tuple((k, _key_of(v)) for k, v in sorted(kw.items())))
    with _SHARE.lock:
        key_lock = _SHARE.key_locks.setdefault(key, threading.Lock())
    with key_lock:  # a second reader waits for the first one's table instead of computing its own
        table = _SHARE.tables.get(key)
        if table is None:
            table = rope_cache(np.arange(length), n_dims, **kw)
            with _SHARE.lock:
                if _SHARE.scopes:
                    _SHARE.tables[key] = table
    start = int(pos[0])
    return table[0][start : start + n].copy(), table[1][start : start + n].copy()


def _key_of(v: Any) -> Any:
    if v is None or isinstance(v, (str, int, float, tuple)):
        return (type(v).__name__, v)
    a = np.asarray(v)
    return ("array", a.dtype.str, a.shape, a.tobytes())


def intended_inv_freq(rope: LlamaRope, ctx: Context, n_rot: int | None = None) -> np.ndarray:
    """The per-pair frequency llama.cpp means (float64, from its float32 parameters): ``base^(-2i/d) / ff_i``,
    YaRN-mixed; the rotated angle of pair ``i`` at position ``p`` is ``p`` times it, up to ggml's iteration."""
    d = rope.n_rot if n_rot is None else n_rot
    i = np.arange(d // 2, dtype=np.float64)
    w = float(_f32(rope.freq_base)) ** (-2.0 * i / d)
    if ctx.factors is not None:
        w = w / ctx.factors[: d // 2].astype(np.float64)
    fs = ctx.freq_scale
    if ctx.ext_factor != 0:
        lo, hi = corr_dims(d, rope.n_ctx_orig, rope.freq_base, rope.beta_fast, rope.beta_slow)
        y = (i - lo) / max(0.001, hi - lo)
        ramp = (1 - np.clip(y, 0, 1)) * ctx.ext_factor
        return w * fs * (1 - ramp) + w * ramp
    return w * fs


def llamacpp_tables(rope: LlamaRope, n_ctx: int | None, length: int) -> dict[str, Any]:
    """The cos/sin llama.cpp applies to positions ``0..length-1`` at context ``n_ctx``: ``cos``, ``sin``
    (float32, ``(length, n_rot)``, in the pairing llama.cpp applies, see ``layout``), ``inv_freq`` (float64,
    :func:`intended_inv_freq`), ``layout`` and the :class:`Context` used."""
    if length <= 0:
        raise ParameterError(f"{param('length')} {length} must be positive")
    ctx = context(rope, n_ctx)
    mode = rope.rope_type
    if mode == "NONE":
        raise ParameterError(f"architecture {rope.arch} applies no RoPE (llama.cpp's rope type NONE)")
    kw: dict[str, Any] = dict(
        freq_base=rope.freq_base, freq_scale=ctx.freq_scale, ext_factor=ctx.ext_factor, attn_factor=ctx.attn_factor,
        beta_fast=rope.beta_fast, beta_slow=rope.beta_slow, n_ctx_orig=rope.n_ctx_orig, freq_factors=ctx.factors,
    )  # fmt: skip
    if mode in M_ROPE:
        kw.update(mode=mode, sections=tuple(rope.sections) + (0,) * (4 - len(rope.sections)))
    else:
        kw.update(mode=mode)
    c, s = rope_cache(np.arange(length), rope.n_rot, **kw)
    c, s = c[:, : rope.n_rot // 2], s[:, : rope.n_rot // 2]
    layout = LAYOUTS[mode]
    return {
        "cos": expand(c, layout),
        "sin": expand(s, layout),
        "inv_freq": intended_inv_freq(rope, ctx),
        "layout": layout,
        "context": ctx,
    }


def expand(pairs: np.ndarray, layout: str) -> np.ndarray:
    """One column per pair -> one per rotated feature: ``interleaved`` repeats each (2i, 2i+1), ``half`` (and
    ``vision``) concatenates the halves (i, i + d/2)."""
    if layout == "interleaved":
        return np.repeat(pairs, 2, axis=1)
    return np.concatenate([pairs, pairs], axis=1)


# ----- from a GGUF file ------------------------------------------------------------------------------------
def from_gguf(g: Any, layer_type: str | None = None) -> tuple[LlamaRope, list[str]]:
    """The :class:`LlamaRope` llama.cpp loads from a :class:`~posenc_cli.models.gguf.GgufRope` (step 1), for
    ``layer_type`` ``full_attention`` (default) or ``sliding_attention``; and warnings (an unknown
    architecture: keys read generically, rope type assumed)."""
    v, o = g.values, dict(g.origins)
    warnings: list[str] = []
    arch = g.arch
    sections = tuple(int(x) for x in v.get("sections", ())) if arch in READS_DIMENSION_SECTIONS else ()
    rope_type, known = rope_type_of(arch, sections)
    if not known:
        sections = tuple(int(x) for x in v.get("sections", ()))
        warnings.append(
            f"architecture {arch!r} is not in {LLAMACPP_VERSION}'s llama_model_rope_type table; its "
            f"{arch}.rope.* keys were read generically and the rope type NEOX was assumed"
        )
        if sections and len(sections) >= 2 and sections[0] > 0 and sections[1] > 0:
            rope_type = "MROPE"
    if "n_head" not in v or "n_embd" not in v:
        missing = f"{arch}.attention.head_count" if "n_head" not in v else f"{arch}.embedding_length"
        raise ParameterError(f"{g.path}: no {missing} key; llama.cpp cannot load it either")
    if "context_length" not in v:
        raise ParameterError(f"{g.path}: no {arch}.context_length key; llama.cpp cannot load it either")
    n_head = int(v["n_head"])
    if n_head <= 0:
        raise ParameterError(f"{g.path}: {arch}.attention.head_count is {n_head}; it must be positive")
    head = int(v.get("key_length", int(v["n_embd"]) // n_head))
    if "key_length" not in v:
        o["head_dim"] = f"key {arch}.embedding_length / key {arch}.attention.head_count"
    else:
        o["head_dim"] = o["key_length"]
    n_rot = int(v.get("n_rot", head))
    o.setdefault("n_rot", f"the key length (no {arch}.rope.dimension_count key)")
    base = _positive_base(g.path, f"{arch}.rope.freq_base", v.get("freq_base", 10000.0))
    o.setdefault("freq_base", f"llama.cpp's default 10000 (no {arch}.rope.freq_base key)")
    scaling = str(v.get("scaling_type", "linear"))
    o.setdefault("scaling_type", f"llama.cpp's default 'linear' (no {arch}.rope.scaling.type key)")
    if scaling not in SCALING_TYPES:
        raise ParameterError(
            f"{g.path}: {arch}.rope.scaling.type is {scaling!r}; llama.cpp knows {', '.join(SCALING_TYPES)} "
            "and refuses to load anything else"
        )
    factor = v.get("scaling_factor")
    if factor is None:
        factor = v.get("scale_linear")
        if factor is not None:
            o["scaling_factor"] = o.pop("scale_linear")
    freq_scale = 1.0 if not factor else float(_f32(_f32(1.0) / _f32(factor)))
    n_ctx_train = int(v["context_length"])
    n_ctx_orig = int(v.get("orig_ctx", n_ctx_train))
    o.setdefault("orig_ctx", f"key {arch}.context_length (no rope.scaling.original_context_length key)")
    log_mul = 0.0
    if arch in READS_YARN_LOG_MUL and "yarn_log_mul" in v:
        log_mul = float(_f32(v["yarn_log_mul"]))
        if arch == "deepseek2":
            log_mul = float(_f32(_f32(log_mul) / _f32(0.1)))
    rope = LlamaRope(
        arch=arch, rope_type=rope_type, known_arch=known, n_rot=n_rot, head_dim=head, freq_base=base,
        freq_scale=freq_scale, scaling_type=scaling, n_ctx_train=n_ctx_train, n_ctx_orig=n_ctx_orig,
        attn_factor=float(_f32(v.get("attn_factor", 1.0))), yarn_log_mul=log_mul, sections=sections,
        freqs=g.factors.get("rope_freqs.weight"), long=g.factors.get("rope_factors_long.weight"),
        short=g.factors.get("rope_factors_short.weight"), origins=o,
    )  # fmt: skip
    if arch in READS_YARN_BETA_FAST:
        rope.beta_fast = float(_f32(v.get("yarn_beta_fast", 32.0)))
        rope.beta_slow = float(_f32(v.get("yarn_beta_slow", 1.0)))
    if arch in READS_YARN_EXT_FACTOR:
        rope.yarn_ext_factor = float(_f32(v.get("yarn_ext_factor", -1.0)))
        rope.yarn_attn_factor = float(_f32(v.get("yarn_attn_factor", 1.0)))
    for name, t in (("rope_freqs", rope.freqs), ("rope_factors_long", rope.long), ("rope_factors_short", rope.short)):
        if t is not None and t.size < n_rot // 2:
            raise ParameterError(f"{g.path}: tensor {name}.weight holds {t.size} values; n_rot/2 = {n_rot // 2}")
    if layer_type in (None, "full_attention", "default"):
        return rope, warnings
    if layer_type != "sliding_attention":
        raise ParameterError(
            f"{param('layer_type')} {layer_type}: a GGUF file has full_attention and (with a sliding window) "
            "sliding_attention layers"
        )
    if "sliding_window" not in v:
        raise ParameterError(f"{g.path} has no {arch}.attention.sliding_window key: every layer is full_attention")
    rope.layer_type = "sliding_attention"
    rope.ctx_freq_scale = freq_scale
    if "n_rot_swa" in v:
        rope.n_rot = int(v["n_rot_swa"])
        o["n_rot"] = o["n_rot_swa"]
    if "key_length_swa" in v:
        rope.head_dim = int(v["key_length_swa"])
    if arch in READS_FREQ_BASE_SWA:
        default = base if arch in SWA_BASE_FROM_TRAIN else 10000.0
        rope.freq_base = _positive_base(g.path, f"{arch}.rope.freq_base_swa", v.get("freq_base_swa", default))
        o["freq_base"] = o.get(
            "freq_base_swa", f"llama.cpp's default for {arch} sliding layers ({default:g}; no freq_base_swa key)"
        )
        rope.freq_scale = freq_scale if arch in SWA_BASE_FROM_TRAIN else 1.0
    else:
        rope.freq_base, rope.freq_scale = 10000.0, 1.0  # hparams' defaults, never set for this arch
        o["freq_base"] = f"llama.cpp's default 10000 ({arch}'s loader reads no freq_base_swa)"
    return rope, warnings


def _positive_base(path: str, key: str, value: Any) -> float:
    """A RoPE base from a GGUF key as llama.cpp stores it (float32): refused unless finite and positive (ggml's
    ``powf(freq_base, -2i/n)`` of a base <= 0 is no frequency, and posenc's arithmetic refuses it)."""
    base = float(_f32(value))
    if not (math.isfinite(base) and base > 0):
        raise ParameterError(f"{path}: {key} is {base:g}; a RoPE base is a positive number; fix the GGUF's metadata")
    return base


# ----- the verdict against a HF config ---------------------------------------------------------------------
#: Most memory the verdict's tables may take (it holds both sides' cos and sin, float64, while comparing).
MAX_VERDICT_BYTES = 8 * 2**30

#: Relative agreement of frequencies and amplitudes that counts as equal: llama.cpp stores base, factors and
#: divisors as float32 (relative rounding 6e-8; a per-pair frequency carries a few of them).
REL_TOL = 2e-6


@dataclass
class Verdict:
    """llama.cpp's tables for a GGUF file against HF's for a config: ``divergences`` (each one line; empty means
    they agree), ``equivalences`` (documented differences that do not change the attention scores), ``notes``
    (what was assumed, the float32 sizes)."""

    gguf: str
    config: str
    n_ctx: int
    length: int
    divergences: list[str] = field(default_factory=list)
    equivalences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    numbers: dict[str, dict[str, float]] = field(default_factory=dict)
    #: the Q/K weights against HF's (:class:`posenc_cli.models.qk_weights.WeightsCheck`; None: not asked)
    weights: Any = None
    #: each attention type's own verdict (what ``layer_type=`` that type gives), made in the same pass
    by_type: dict[str, Verdict] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return not self.divergences

    def to_json(self) -> dict[str, Any]:
        return {
            "gguf": self.gguf, "config": self.config, "n_ctx": self.n_ctx, "length": self.length, "ok": self.ok,
            "divergences": self.divergences, "equivalences": self.equivalences, "notes": self.notes,
            "numbers": self.numbers, "llama_cpp": LLAMACPP_VERSION,
            "weights": None if self.weights is None else self.weights.to_json(),
        }  # fmt: skip


def _rel(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))) if a.size else 0.0


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(float(a) - float(b)) <= REL_TOL * max(abs(float(b)), 1e-30)


def compare_rope(
    rope: LlamaRope,
    hf: dict[str, Any],
    hf_enc: Any,
    n_ctx: int | None,
    length: int,
    arch_note: str = "",
    weights_ok: bool | None = None,
) -> tuple[list[str], list[str], list[str], dict[str, float]]:
    """Divergences, equivalences, notes and numbers for one attention type: llama.cpp's ``rope`` against HF's
    parameters ``hf`` (posenc's ``rope``/``mrope`` parameters read from config.json) and their encoding.
    ``weights_ok`` is whether the Q/K weights were compared with HF's and hold the permutation llama.cpp's pairs
    need (None: not compared), the only evidence on which a pairing difference is called equivalent."""
    div: list[str] = []
    eq: list[str] = []
    notes: list[str] = []
    ctx = context(rope, n_ctx)
    o = rope.origins
    a = rope.arch
    where = "" if rope.layer_type == "full_attention" else f" ({rope.layer_type} layers)"
    hf_rot = int(getattr(hf_enc, "rot_dim", hf["dim"]))
    hf_scaling = hf.get("scaling") or "none"
    if not rope.known_arch:
        notes.append(f"architecture {a!r} unknown to {LLAMACPP_VERSION}: rope type NEOX was assumed")
    # -- the rotated width and the pairing
    if rope.n_rot != hf_rot:
        div.append(
            f"rotated width{where}: llama.cpp rotates {rope.n_rot} features ({o.get('n_rot')}), HF {hf_rot} "
            f"(partial rotary); set {a}.rope.dimension_count to {hf_rot}"
        )
    hf_layout = hf.get("layout", "half")
    ours = LAYOUTS[rope.rope_type]
    if ours != hf_layout:
        if ours == "interleaved" and hf_layout == "half" and a in QK_PERMUTED:
            pairing = f"pairing: llama.cpp rotates consecutive pairs (rope type NORM for {a}), HF rotate_half"
            if weights_ok:
                eq.append(f"{pairing}; the Q/K rows, compared with HF's weights, are permuted per head to match, "
                          "so the scores are the same")  # fmt: skip
            elif weights_ok is None:
                notes.append(
                    f"{pairing}: the scores are the same only if the Q/K rows are permuted per head, as "
                    "convert_hf_to_gguf.py does for this architecture; the weights were not checked"
                )
        else:
            div.append(
                f"pairing: llama.cpp's rope type for {a} is {rope.rope_type.upper()} ({ours} pairs), HF's model "
                f"rotates {hf_layout} pairs, and the converter does not permute Q/K for {a}: a wrong architecture "
                "or rope type"
            )
    # -- base
    if not _same(rope.freq_base, hf["base"]):
        div.append(
            f"base{where}: llama.cpp uses {rope.freq_base:g} ({o.get('freq_base')}), HF {hf['base']:g}; set "
            f"{a}.rope.freq_base{'_swa' if where else ''} to {hf['base']:g}"
        )
    # -- scaling
    has_scale = ctx.freq_scale != 1.0
    g_type = rope.scaling_type if (has_scale or rope.scaling_type in ("yarn", "longrope")) else "none"
    hf_factor = hf.get("factor")
    if hf_scaling == "llama3":
        if rope.freqs is None:
            div.append(
                f"no rope_freqs tensor: HF applies llama3 scaling (factor {hf_factor:g}, original context "
                f"{hf['original_max_position_embeddings']}) and llama.cpp applies none; re-convert with a "
                "convert_hf_to_gguf.py that writes rope_freqs.weight (llama.cpp PR #8676)"
            )
        else:
            base_w = float(_f32(rope.freq_base)) ** (-2.0 * np.arange(hf_rot // 2) / hf_rot)
            want = base_w / np.asarray(hf_enc.array("inv_freq"), dtype=np.float64)[: hf_rot // 2]
            got = rope.freqs[: hf_rot // 2].astype(np.float64)
            if got.size == want.size and _rel(got, want) > 1e-5:
                div.append(
                    f"rope_freqs.weight differs from HF's llama3 divisors (max relative {_rel(got, want):.2g}); "
                    "check factor, low/high_freq_factor and original_max_position_embeddings"
                )
        if g_type != "none":
            div.append(f"scaling type: the GGUF also sets {rope.scaling_type} (freq_scale {ctx.freq_scale:g}) on "
                       "top of rope_freqs; HF's llama3 scaling is rope_freqs alone")  # fmt: skip
    elif hf_scaling in ("none", "default"):
        if g_type != "none":
            div.append(
                f"scaling type: the GGUF sets {rope.scaling_type} ({o.get('scaling_type')}, factor "
                f"{1 / ctx.freq_scale:g}), HF none; drop {a}.rope.scaling.*"
            )
        if rope.freqs is not None:
            div.append("rope_freqs.weight is present but HF applies no per-frequency scaling; drop the tensor")
    elif hf_scaling == "dynamic":
        div.append("HF's dynamic NTK scaling is not honoured: llama.cpp has no dynamic scaling type")
    elif hf_scaling == "linear":
        if g_type != "linear":
            div.append(f"scaling type: HF linear (factor {hf_factor:g}), the GGUF {g_type}; set "
                       f"{a}.rope.scaling.type linear and factor {hf_factor:g}")  # fmt: skip
        elif not _same(1 / ctx.freq_scale, hf_factor):
            div.append(f"factor: llama.cpp {1 / ctx.freq_scale:g} ({o.get('scaling_factor')}), HF {hf_factor:g}")
    elif hf_scaling == "yarn":
        if g_type != "yarn":
            div.append(f"scaling type: HF yarn (factor {hf_factor:g}), the GGUF {rope.scaling_type}; set "
                       f"{a}.rope.scaling.type yarn")  # fmt: skip
        else:
            if not _same(1 / ctx.freq_scale, hf_factor):
                div.append(f"factor: llama.cpp {1 / ctx.freq_scale:g} ({o.get('scaling_factor')}), HF {hf_factor:g}")
            omp = hf.get("original_max_position_embeddings")
            if omp is not None and rope.n_ctx_orig != omp:
                div.append(
                    f"original context: llama.cpp {rope.n_ctx_orig} ({o.get('orig_ctx')}), HF {omp}; set "
                    f"{a}.rope.scaling.original_context_length to {omp}"
                )
            bf, bs = hf.get("beta_fast") or 32.0, hf.get("beta_slow") or 1.0
            if not (_same(rope.beta_fast, bf) and _same(rope.beta_slow, bs)):
                reads = a in READS_YARN_BETA_FAST
                why = "from its keys" if reads else f"(its loader for {a} reads no yarn_beta_* keys)"
                div.append(
                    f"yarn beta: llama.cpp uses beta_fast {rope.beta_fast:g}, beta_slow {rope.beta_slow:g} {why}, "
                    f"HF {bf:g}, {bs:g}"
                )
            if hf.get("truncate") is False:
                div.append(
                    "HF's yarn truncate: false (no floor/ceil of the correction range) is not honoured: llama.cpp "
                    "always rounds the correction dims"
                )
    elif hf_scaling == "longrope":
        if rope.freqs is not None:
            div.append("rope_freqs.weight is present: llama.cpp uses it instead of the LongRoPE factors")
        for name, t, hf_key in (("long", rope.long, "long_factor"), ("short", rope.short, "short_factor")):
            if t is None:
                div.append(f"no rope_factors_{name}.weight tensor: HF's LongRoPE {hf_key} is not applied")
        if rope.long is not None and rope.short is not None and hf.get("long_factor") and hf.get("short_factor"):
            n = hf_rot // 2
            hl, hs = np.asarray(hf["long_factor"][:n]), np.asarray(hf["short_factor"][:n])
            gl, gs = rope.long[:n].astype(np.float64), rope.short[:n].astype(np.float64)
            if _rel(gl, hs) <= 1e-6 and _rel(gs, hl) <= 1e-6 and _rel(hl, hs) > 1e-6:
                div.append("rope_factors_long and rope_factors_short are swapped (long holds HF's short_factor)")
            else:
                if _rel(gl, hl) > 1e-6:
                    div.append(f"rope_factors_long differs from HF's long_factor (max relative {_rel(gl, hl):.2g})")
                if _rel(gs, hs) > 1e-6:
                    div.append(f"rope_factors_short differs from HF's short_factor (max relative {_rel(gs, hs):.2g})")
        omp = hf.get("original_max_position_embeddings")
        if omp is not None and rope.n_ctx_orig != omp:
            div.append(f"original context: llama.cpp {rope.n_ctx_orig} ({o.get('orig_ctx')}), HF {omp}")
        if omp is not None and rope.long is not None and rope.short is not None:
            ours_long = ctx.factors_from == "rope_factors_long"
            hf_long = int(getattr(hf_enc, "effective_seq_len", length)) > int(omp)
            if ours_long != hf_long:
                div.append(
                    f"LongRoPE choice: at --n-ctx {ctx.n_ctx} (n_ctx_seq {ctx.n_ctx_seq} after llama.cpp's padding "
                    f"to 256) llama.cpp uses the {'long' if ours_long else 'short'} factors, HF at --len {length} "
                    f"the {'long' if hf_long else 'short'} ones (original context {omp}; llama.cpp issue #24823)"
                )
            else:
                notes.append(
                    f"LongRoPE: both use the {'long' if ours_long else 'short'} factors (llama.cpp: n_ctx_seq "
                    f"{ctx.n_ctx_seq} vs original {rope.n_ctx_orig})"
                )
    # -- mrope sections
    hf_sec = hf.get("mrope_section")
    if hf_sec is not None:
        g_sec = [int(x) for x in rope.sections if x][: len(hf_sec)]
        if list(hf_sec) != g_sec:
            div.append(f"mrope sections: llama.cpp {list(rope.sections)} ({o.get('sections', 'no key')}), HF "
                       f"{list(hf_sec)}; set {a}.rope.dimension_sections")  # fmt: skip
        elif rope.rope_type not in ("MROPE", "IMROPE"):
            div.append(f"mrope: HF rotates by sections {list(hf_sec)}, llama.cpp's rope type is {rope.rope_type}")
    # -- the amplitude (attention factor)
    hf_att = float(getattr(hf_enc, "attention_scaling", 1.0))
    if not _same(ctx.mscale, hf_att):
        keys = f"{a}.rope.scaling.attn_factor" + (
            f" / {a}.rope.scaling.yarn_log_multiplier" if a in READS_YARN_LOG_MUL else ""
        )
        div.append(
            f"attention factor{where}: llama.cpp scales cos/sin by {ctx.mscale:.6g} (attn_factor {ctx.attn_factor:.6g}"
            f"{', times ggml own 1 + 0.1 ln(factor)' if ctx.ext_factor else ''}), HF by {hf_att:.6g}; check {keys}"
        )
    # -- the numbers: frequencies, then the float32 tables at this length
    n = min(rope.n_rot, hf_rot) // 2
    ours_w = intended_inv_freq(rope, ctx)[:n]
    hf_w = np.asarray(hf_enc.array("inv_freq"), dtype=np.float64)[:n]
    rel_w = _rel(ours_w, hf_w)
    if rel_w > 1e-5 and not div:
        bad = np.flatnonzero(np.abs(ours_w - hf_w) > 1e-5 * np.abs(hf_w))
        div.append(f"per-pair frequencies differ at pairs {_ranges(bad)} (max relative {rel_w:.2g})")
    # block by block over positions (a row of ggml's cache depends on its position only), so that a 131072-row
    # verdict holds a few MiB of tables instead of a dozen full-length float64 arrays
    intended = intended_inv_freq(rope, ctx)
    it_err = vs_hf = 0.0
    step = rows_per_block(intended.size)
    same_w = np.array_equal(intended[:n], hf_w)
    for start in range(0, length, step):
        stop = min(length, start + step)
        pairs, spairs = _pairs_rows(rope, n_ctx, start, stop)
        p = np.arange(start, stop, dtype=np.float64)[:, None]
        cos_i, sin_i = np.cos(p * intended[None, :]), np.sin(p * intended[None, :])
        exact, exact_s = cos_i * ctx.mscale, sin_i * ctx.mscale
        it_err = max(it_err, float(np.max(np.abs(pairs - exact))), float(np.max(np.abs(spairs - exact_s))))
        if same_w:  # the same angles, bit for bit: their cos/sin once
            hf_c, hf_s = cos_i[:, :n] * hf_att, sin_i[:, :n] * hf_att
        else:
            hf_c, hf_s = np.cos(p * hf_w[None, :]) * hf_att, np.sin(p * hf_w[None, :]) * hf_att
        vs_hf = max(vs_hf, float(np.max(np.abs(pairs[:, :n] - hf_c))), float(np.max(np.abs(spairs[:, :n] - hf_s))))
    eq.append(
        f"ggml's float32 arithmetic{where} (powf theta_scale iterated per pair) moves cos/sin by up to "
        f"{it_err:.2g} from llama.cpp's exact angles at --len {length}"
    )
    notes.append(f"largest |cos/sin difference| from HF's tables{where} at --len {length}: {vs_hf:.2g}")
    if arch_note:
        notes.append(arch_note)
    return div, eq, notes, {"iteration_error": it_err, "max_abs_vs_hf": vs_hf, "max_rel_inv_freq": rel_w}


def _pairs_rows(rope: LlamaRope, n_ctx: int | None, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """llama.cpp's float32 cos and sin for positions ``start..stop-1``, one column per pair."""
    ctx = context(rope, n_ctx)
    kw: dict[str, Any] = dict(
        freq_base=rope.freq_base, freq_scale=ctx.freq_scale, ext_factor=ctx.ext_factor, attn_factor=ctx.attn_factor,
        beta_fast=rope.beta_fast, beta_slow=rope.beta_slow, n_ctx_orig=rope.n_ctx_orig, freq_factors=ctx.factors,
        mode=rope.rope_type,
    )  # fmt: skip
    if rope.rope_type in M_ROPE:
        kw.update(sections=tuple(rope.sections) + (0,) * (4 - len(rope.sections)))
    c, s = cache_rows(np.arange(start, stop), rope.n_rot, **kw)
    return c[:, : rope.n_rot // 2], s[:, : rope.n_rot // 2]


def _ranges(idx: np.ndarray) -> str:
    if idx.size == 0:
        return "none"
    out, start, prev = [], int(idx[0]), int(idx[0])
    for x in idx[1:]:
        if x != prev + 1:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = int(x)
        prev = int(x)
    out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out)


def verdict(gguf_path: str, config: Any, *, n_ctx: int | None = None, length: int | None = None,
            layer_type: str | None = None, weights_ok: bool | None = None) -> Verdict:  # fmt: skip
    """llama.cpp's tables for ``gguf_path`` against HF's for ``config`` (a config.json path, its directory or a
    dict) at ``n_ctx`` (default: the GGUF's training context) and ``length`` positions (default: ``n_ctx``), for
    every attention type of the config (``layer_type``: that one only). ``weights_ok``: whether the Q/K weights
    were compared with HF's and agree (None: not compared; :func:`posenc_cli.models.conversion.verdict` compares
    them and adds the weights and sliding-layer findings)."""
    from ..encodings import make_encoding
    from .config_file import load_config
    from .gguf import read_gguf
    from .readers import rotary_config

    g = read_gguf(gguf_path)
    cfg = rotary_config(load_config(config))
    full, warnings = from_gguf(g)
    asked = full.n_ctx_train if not n_ctx else int(n_ctx)
    length = asked if length is None else int(length)
    label = config if isinstance(config, str) else "the config"
    v = Verdict(gguf_path, label, asked, length)
    v.notes += list(warnings) + list(cfg.warnings)
    nope = {lt for lt, params in cfg.all_params(1).items() if params is None}
    need = length * full.n_rot * 8 * 8  # float64 tables of both sides, cos and sin, while they are compared
    if need > MAX_VERDICT_BYTES:
        raise ParameterError(
            f"{param('length')} {length}: the verdict would hold {need / 2**30:.1f} GiB of tables (limit "
            f"{MAX_VERDICT_BYTES // 2**30} GiB); give a smaller {param('length')}"
        )
    if layer_type is not None and layer_type not in cfg.layer_types:
        raise ParameterError(
            f"unknown {param('layer_type')} {layer_type!r} for {label}; choose from: {', '.join(cfg.layer_types)}"
        )
    for lt in cfg.layer_types:
        if layer_type is not None and lt != layer_type:
            continue
        if lt in nope:  # a NoPE layer type
            v.notes.append(f"HF layer type {lt} applies no RoPE; not compared")
            continue
        hf = cfg.params(None if lt == "default" else lt, length)
        enc = make_encoding(cfg.kind, hf)
        rope = full
        own = v.by_type[lt] = Verdict(gguf_path, label, asked, length, notes=list(warnings) + list(cfg.warnings))
        if lt == "sliding_attention":
            try:
                rope, _ = from_gguf(g, "sliding_attention")
            except ParameterError as exc:
                v.divergences.append(f"sliding layers: HF has them, the GGUF does not ({exc})")
                own.divergences.append(v.divergences[-1])
                continue
        d, e, nts, nums = compare_rope(rope, hf, enc, asked, length, weights_ok=weights_ok)
        for whole in (v, own):
            whole.divergences += [x for x in d if x not in whole.divergences]  # a setting both types share: once
            whole.equivalences += [x for x in e if x not in whole.equivalences]
            whole.notes += [x for x in nts if x not in whole.notes]
            whole.numbers[lt] = nums
    return v


# ----- a GGUF file as a table source -----------------------------------------------------------------------
def gguf_tables(
    path: str, *, n_ctx: int | None = None, length: int | None = None, layer_type: str | None = None
) -> tuple[dict[str, np.ndarray], dict[str, str], list[str]]:
    """The tensors (``cos``, ``sin``, ``inv_freq``), metadata and warnings of the table llama.cpp computes for the
    GGUF file ``path``: ``length`` positions (default: the context) at context ``n_ctx`` (default: training)."""
    from .gguf import read_gguf

    g = read_gguf(path)
    rope, warnings = from_gguf(g, layer_type)
    if length is None:
        length = rope.n_ctx_train if not n_ctx else int(n_ctx)
    t = llamacpp_tables(rope, n_ctx, length)
    ctx: Context = t["context"]
    from .. import __version__

    meta = {
        "posenc_version": __version__,
        "source": "gguf",
        "engine": "llama.cpp",
        "llama_cpp": LLAMACPP_VERSION,
        "arch": rope.arch,
        "rope_type": rope.rope_type,
        "layout": t["layout"],
        "layer_type": rope.layer_type,
        "length": str(length),
        "n_rot": str(rope.n_rot),
        "head_dim": str(rope.head_dim),
        "n_ctx": str(ctx.n_ctx),
        "n_ctx_seq": str(ctx.n_ctx_seq),
        "n_ctx_orig": str(rope.n_ctx_orig),
        "freq_base": repr(rope.freq_base),
        "freq_scale": repr(ctx.freq_scale),
        "scaling_type": rope.scaling_type,
        "ext_factor": repr(ctx.ext_factor),
        "attn_factor": repr(ctx.attn_factor),
        "mscale": repr(ctx.mscale),
        "beta_fast": repr(rope.beta_fast),
        "beta_slow": repr(rope.beta_slow),
        "freq_factors": ctx.factors_from,
        "sections": ",".join(str(s) for s in rope.sections),
        "inv_freq_note": "float64 per-pair frequency llama.cpp means; cos/sin are ggml's float32 iteration",
    }
    tensors = {"cos": t["cos"], "sin": t["sin"], "inv_freq": t["inv_freq"]}
    return tensors, meta, warnings


def describe(path: str, *, n_ctx: int | None = None) -> list[tuple[str, str, str]]:
    """What was read from a GGUF file and from where: ``(name, value, origin)`` rows, then llama-context's
    choices at ``n_ctx``."""
    from .gguf import read_gguf

    g = read_gguf(path)
    rope, warnings = from_gguf(g)
    ctx = context(rope, n_ctx)
    o = rope.origins
    rows = [
        ("architecture", rope.arch, "key general.architecture"),
        ("rope type", rope.rope_type + ("" if rope.known_arch else " (assumed)"),
         f"llama_model_rope_type, {LLAMACPP_VERSION}" if rope.known_arch else "unknown architecture"),
        ("head dim", str(rope.head_dim), o.get("head_dim", "")),
        ("rotated dims", str(rope.n_rot), o.get("n_rot", "")),
        ("freq_base", f"{rope.freq_base:g}", o.get("freq_base", "")),
        ("scaling type", rope.scaling_type, o.get("scaling_type", "")),
        ("factor", f"{1 / rope.freq_scale:g}", o.get("scaling_factor", "no factor key (1)")),
        ("original context", str(rope.n_ctx_orig), o.get("orig_ctx", "")),
        ("training context", str(rope.n_ctx_train), o.get("context_length", "")),
        ("attn_factor", f"{rope.attn_factor:g}", o.get("attn_factor", "no key (1)")),
    ]  # fmt: skip
    if rope.arch in READS_YARN_LOG_MUL:
        rows.append(("yarn_log_multiplier", f"{rope.yarn_log_mul:g}", o.get("yarn_log_mul", "no key (0)")))
    if rope.arch in READS_YARN_BETA_FAST:
        rows.append(
            ("yarn beta fast/slow", f"{rope.beta_fast:g}/{rope.beta_slow:g}", o.get("yarn_beta_fast", "defaults"))
        )
    if rope.sections:
        rows.append(("dimension_sections", ",".join(map(str, rope.sections)), o.get("sections", "")))
    for name in ("rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight"):
        if name in g.factors:
            arr = g.factors[name]
            rows.append((name.removesuffix(".weight"), f"{arr.size} values, {arr.min():g}..{arr.max():g}", o[name]))
    if "sliding_window" in g.values:
        try:
            swa, _ = from_gguf(g, "sliding_attention")
            rows.append(("sliding layers base", f"{swa.freq_base:g}", swa.origins.get("freq_base", "")))
            rows.append(("sliding layers rotated", str(swa.n_rot), swa.origins.get("n_rot", "")))
        except ParameterError:
            pass
    rows += [
        ("n_ctx / n_ctx_seq", f"{ctx.n_ctx} / {ctx.n_ctx_seq}", "--n-ctx (default: training), padded to 256"),
        ("ext_factor", f"{ctx.ext_factor:g}", "llama-context: 1 for yarn, else 0"),
        ("attn_factor (to ggml)", f"{ctx.attn_factor:.6g}", "llama-context"),
        ("cos/sin amplitude", f"{ctx.mscale:.6g}", "ggml rope_yarn"),
        ("per-pair divisors", ctx.factors_from, "llama_model::get_rope_factors"),
    ]
    rows += [("warning", w, "") for w in warnings]
    return rows


# ----- what a faithful conversion gives llama.cpp: an HF config as convert_hf_to_gguf.py writes it ----------
#: Architectures whose converter writes its own freq_base, not the config's rope_theta (conversion/*.py).
CONVERTER_FREQ_BASE = {"chatglm": (10000.0, "rope_ratio")}  # conversion/chatglm.py:154: 10000 * rope_ratio


def _converter_base(arch: str, raw: dict[str, Any], base: float) -> float:
    if arch not in CONVERTER_FREQ_BASE:
        return base
    fixed, ratio = CONVERTER_FREQ_BASE[arch]
    tc = raw.get("text_config")
    text: dict[str, Any] = tc if isinstance(tc, dict) else raw
    return fixed * float(text.get(ratio, 1.0))


def rope_from_hf_config(config: Any, layer_type: str | None = None) -> LlamaRope:
    """The :class:`LlamaRope` llama.cpp loads from a faithful conversion of ``config`` (a config.json path, its
    directory or a dict): the keys and tensors ``convert_hf_to_gguf.py`` writes for its RoPE (llama3 scaling as a
    float32 ``rope_freqs``, computed as the converter does; LongRoPE factors and the converter's attention factor;
    YaRN type, factor and original context; DeepSeek-V2's ``0.1 * mscale_all_dim``; M-RoPE sections), read back
    as llama.cpp reads them. What an engine running the HF model through llama.cpp would compute."""
    from .config_file import load_config
    from .readers import rotary_config
    from .records import RECORDS, gguf_arch

    raw = load_config(config)
    cfg = rotary_config(raw)
    # the record's gguf_arch: the families whose rope keys this function writes as the converter does
    # (conversion/*.py of LLAMACPP_VERSION)
    arch = gguf_arch(cfg.model_type)
    if arch is None:
        known = sorted(name for name, r in RECORDS.items() if r.gguf_arch is not None)
        raise ParameterError(
            f"model type {cfg.model_type!r}: posenc does not know what convert_hf_to_gguf.py writes for it; "
            f"known: {', '.join(known)}"
        )
    sliding = layer_type == "sliding_attention"
    lts = [lt for lt, params in cfg.all_params(1).items() if params is not None]
    lt = layer_type if layer_type is not None else ("full_attention" if "full_attention" in lts else lts[0])
    p = cfg.params(None if lt == "default" else lt, 1)
    report = cfg.report(None if lt == "default" else lt)
    from ..encodings import make_encoding

    enc = make_encoding(cfg.kind, p)
    n_rot = int(getattr(enc, "rot_dim", p["dim"]))
    max_pos = int(report["max_position_embeddings"]["value"])
    sections = tuple(int(s) for s in p.get("mrope_section", ())) + (0,) if "mrope_section" in p else ()
    rope_type, _ = rope_type_of(arch, sections)
    scaling = p.get("scaling") or "none"
    o = {"source": "the HF config, as convert_hf_to_gguf.py writes it"}
    rope = LlamaRope(
        arch=arch, rope_type=rope_type, known_arch=True, n_rot=n_rot, head_dim=int(p["dim"]),
        freq_base=float(_f32(_converter_base(arch, raw, p["base"]))), freq_scale=1.0, scaling_type="linear",
        n_ctx_train=max_pos,
        n_ctx_orig=max_pos, sections=sections, origins=o, layer_type=lt,
    )  # fmt: skip
    if scaling == "llama3" and not sliding:
        d = n_rot
        freqs = (1.0 / (np.float32(p["base"]) ** (np.arange(0, d, 2, dtype=np.float32) / np.float32(d)))).astype(
            np.float32
        )
        f, lo, hi = p["factor"], p.get("low_freq_factor", 1.0), p.get("high_freq_factor", 4.0)
        old = p.get("original_max_position_embeddings", 8192)
        out = []
        for w in freqs:
            wl = np.float32(np.float32(2 * math.pi) / w)
            if wl < old / hi:
                out.append(1.0)
            elif wl > old / lo:
                out.append(f)
            else:
                s = np.float32((np.float32(old) / wl - np.float32(lo)) / np.float32(hi - lo))
                out.append(float(np.float32(1) / ((np.float32(1) - s) / np.float32(f) + s)))
        rope.freqs = np.asarray(out, dtype=np.float32)
    elif scaling == "linear":
        rope.freq_scale = float(_f32(_f32(1.0) / _f32(p["factor"])))
    elif scaling == "yarn":
        rope.scaling_type = "yarn"
        rope.freq_scale = float(_f32(_f32(1.0) / _f32(p["factor"])))
        rope.n_ctx_orig = int(p["original_max_position_embeddings"])
        if arch in READS_YARN_LOG_MUL and p.get("mscale_all_dim"):
            v = _f32(_f32(0.1 * p["mscale_all_dim"]))
            rope.yarn_log_mul = float(_f32(v / _f32(0.1))) if arch == "deepseek2" else float(v)
    elif scaling == "longrope":
        rope.scaling_type = "longrope"
        rope.n_ctx_orig = int(p["original_max_position_embeddings"])
        rope.long = np.asarray(p["long_factor"], dtype=np.float32)
        rope.short = np.asarray(p["short_factor"], dtype=np.float32)
        scale = max_pos / rope.n_ctx_orig
        attn = math.sqrt(1 + math.log(scale) / math.log(rope.n_ctx_orig)) if scale > 1.0 else 1.0
        rope.attn_factor = float(_f32(attn))
    elif scaling not in ("none", "default"):
        raise ParameterError(f"HF scaling {scaling!r}: convert_hf_to_gguf.py writes no llama.cpp equivalent")
    if sliding and arch not in SWA_BASE_FROM_TRAIN:
        rope.ctx_freq_scale, rope.freq_scale = rope.freq_scale, 1.0
    return rope


def llamacpp_tables_for(source: Any, n_ctx: int | None, length: int, layer_type: str | None = None) -> dict[str, Any]:
    """llama.cpp's tables for a GGUF file (a path ending in .gguf, read as llama.cpp reads it) or for an HF config
    (path, directory or dict; as a faithful conversion gives llama.cpp): ``cos``, ``sin``, ``inv_freq``,
    ``layout`` and the ``context`` used (see :func:`llamacpp_tables`). The one call an ``--engine llamacpp``
    needs."""
    from .gguf import is_gguf, read_gguf

    if isinstance(source, str) and is_gguf(source):
        rope, _ = from_gguf(read_gguf(source), layer_type)
    else:
        rope = rope_from_hf_config(source, layer_type)
    return llamacpp_tables(rope, n_ctx, length)
