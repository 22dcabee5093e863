r"""The query/key weights of a GGUF conversion against HF's: the row permutation the converter applied, verified.

Why rows move
-------------
A RoPE model rotates pairs of query/key features. HF's ``rotate_half`` pairs feature ``i`` with ``i + r/2`` of
each head (``r`` the rotated width); llama.cpp's rope type NORM pairs ``(2i, 2i+1)``, NEOX (and M-RoPE) pairs
``(i, i + r/2)`` like HF (:data:`posenc_cli.models.llamacpp.LAYOUTS`). A conversion is faithful when llama.cpp's
pairs hold HF's pairs, so the rows of each ``q_proj`` / ``k_proj`` (and their biases) must be reordered per head
from HF's pairing to llama.cpp's: for NORM from half, ``convert_hf_to_gguf.py``'s ``LlamaModel.permute``
(conversion/llama.py:176 of :data:`~posenc_cli.models.llamacpp.LLAMACPP_VERSION`)::

    w.reshape(n_head, 2, rows // n_head // 2, cols).swapaxes(1, 2).reshape(rows, cols)

with ``n_head`` the query heads for Q and the KV heads for K; for NEOX nothing moves. Under partial rotary only the
first ``r`` rows of each head rotate, so only they move. Which converter classes call the permute is
:data:`~posenc_cli.models.llamacpp.QK_PERMUTE` (printed from the converter's registry by
``tools/golden/llamacpp_qk_permute.py``); the check itself needs no table of families: the permutation it expects
follows from llama.cpp's pairing for the architecture (``ROPE_TYPE``) and HF's (the config's record).

What is compared
----------------
For every layer, the GGUF's ``blk.N.attn_q`` / ``attn_k`` (weight and bias; a fused ``attn_qkv`` split into
``[Q; K; V]`` rows, llama.cpp's layout) against HF's tensors of the same name under ``gguf``'s own
``TensorNameMap`` (the converter's name table), fused HF tensors split as ``[Q; K; V]`` or per head
``(n_head, 3, d)`` (gpt-neox's ``query_key_value``, which the converter re-formats). Only those tensors are read,
memory-mapped, and of each row only its first :data:`FLOAT_COLUMNS` columns (float types) or its first
quantization block (quantized types): a permutation of rows is decided by where each row went.

A GGUF value equals HF's when it equals HF's value rounded to the GGUF tensor's type (F32, F16, BF16: exact), or,
for a quantized type (dequantized with ``gguf``'s own ``quants`` code), lies within the type's rounding bound:
a ``b``-bit code spans the block's ``[-amax, amax]`` in ``2^b - 1`` steps, so rounding moves a value by at most
half a step, and a clamped end (Q4_0's codes reach -8 but +7 steps) or the scales' own rounding (f16, 6-bit
sub-scales) at most doubles that: ``2 amax / (2^b - 1)``, with ``b`` the type's whole bits per weight from
``GGML_QUANT_SIZES`` less one for its scales (:func:`code_bits`; Q8_0 7 bits: amax/63.5, where its rounding is at
most amax/254 plus the f16 scale's; Q4_0 3 bits: 0.29 amax, where its clamp reaches amax/8). Types coarser than
:data:`MIN_CODE_BITS` cannot tell rows apart and are reported not checked.

When a tensor does not hold the expected permutation, the known wrong ones are tried (:func:`candidates`): none,
the other side's head count, the whole head where only part rotates, twice, the inverse, the NORM permute of a
NEOX model; a tensor matching none is reported with the rows and heads that differ, and when most rows differ
under every candidate the weights are said to come from a different model.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError

#: Columns of each row read from float tensors (a row permutation is decided by them).
FLOAT_COLUMNS = 32
#: Fraction of rows that must differ under every candidate for "a different model".
DIFFERENT_MODEL = 0.5

_FLOAT = {"F32": np.float32, "F16": np.float16}
_HF_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64}


class WeightsError(InputError):
    """Weights posenc cannot compare (exit 2)."""


# ----- the permutations ----------------------------------------------------------------------------------------
def llama_permute(rows: int, n_head: int) -> np.ndarray:
    """Row indices of ``LlamaModel.permute`` with ``n_head`` heads: GGUF row ``i`` holds HF row ``idx[i]``."""
    return np.arange(rows).reshape(n_head, 2, rows // n_head // 2).swapaxes(1, 2).reshape(-1)


def rotated_permute(n_head: int, head_dim: int, rot: int) -> np.ndarray:
    """Half pairs to consecutive pairs over the first ``rot`` rows of each head (the rest stay)."""
    idx = np.arange(n_head * head_dim).reshape(n_head, head_dim)
    head = np.arange(head_dim)
    head[:rot] = np.arange(rot).reshape(2, rot // 2).T.reshape(-1)
    return (idx[:, head]).reshape(-1)


def candidates(
    rows: int, n_own: int, n_other: int, head_dim: int, rot: int, expected: str
) -> Iterator[tuple[str, np.ndarray]]:
    """``(name, idx)`` for the expected permutation then the known wrong ones, duplicates dropped, each built
    only when the ones before it did not match.

    ``expected`` is ``"permute"`` (half to consecutive pairs), ``"inverse"`` (consecutive to half) or ``"none"``;
    ``n_own`` is this tensor's head count, ``n_other`` the other side's (K: the query heads; Q: the KV heads)."""
    ident = np.arange(rows)

    def perm() -> np.ndarray:
        return rotated_permute(n_own, head_dim, rot)

    exp = {"permute": perm, "inverse": lambda: np.argsort(perm()), "none": lambda: ident}[expected]()
    makers: list[tuple[str, Callable[[], np.ndarray]]] = [("expected", lambda: exp), ("none", lambda: ident)]
    if expected == "none":
        makers.append(("norm-permuted", lambda: llama_permute(rows, n_own)))  # the converter's: whole heads
        makers.append(("norm-permuted", perm))  # only the rotated rows
    else:
        if n_other != n_own and rows % (2 * n_other) == 0:
            makers.append(("other-heads", lambda: llama_permute(rows, n_other)))
        makers.append(("whole-head", lambda: llama_permute(rows, n_own)))
        makers.append(("twice", lambda: exp[exp]))
        makers.append(("inverse", lambda: np.argsort(exp)))
    seen: list[np.ndarray] = []
    for name, make in makers:
        idx = make()
        if any(np.array_equal(idx, s) for s in seen):
            continue
        seen.append(idx)
        yield name, idx


# ----- reading -------------------------------------------------------------------------------------------------
@dataclass
class GgufTensor:
    """One GGUF tensor as ``rows x cols`` (ggml's ``ne0`` is the columns), memory-mapped."""

    path: str
    name: str
    rows: int
    cols: int
    qtype: Any  # gguf.GGMLQuantizationType
    offset: int

    def first(self, gguf: Any) -> tuple[np.ndarray, int]:
        """The first columns of every row as float32 (one block of a quantized type), and the column count."""
        block, tsize = gguf.GGML_QUANT_SIZES[self.qtype]
        nb = max(1, min(self.cols // block, -(-FLOAT_COLUMNS // block)))
        row_bytes = self.cols // block * tsize
        raw = np.memmap(self.path, dtype=np.uint8, mode="r", offset=self.offset, shape=(self.rows, row_bytes))
        part = np.ascontiguousarray(raw[:, : nb * tsize])
        name = self.qtype.name
        if name in _FLOAT:
            return part.view(_FLOAT[name]).astype(np.float32), nb * block
        if name == "BF16":
            return (part.view(np.uint16).astype(np.uint32) << 16).view(np.float32), nb * block
        try:
            out = _dequantize(gguf, part, self.qtype)
        except NotImplementedError:
            raise WeightsError(
                f"{self.path}: tensor {self.name} has ggml type {name}, which gguf's quants cannot dequantize; "
                "its weights cannot be checked"
            ) from None
        return np.asarray(out, dtype=np.float32).reshape(self.rows, nb * block), nb * block


def _dequantize(gguf: Any, part: np.ndarray, qtype: Any) -> np.ndarray:
    """``gguf.quants.dequantize`` of ``part`` (whole blocks of every row), in one call of the type's own
    ``dequantize_rows`` over all rows: ``dequantize`` hands the rows over 16 at a time (``_apply_over_grouped_rows``),
    1.3 s for an 8B model's Q/K first blocks in Q8_0 against 20 ms at once. Every block is dequantized alone, so the
    values are the same; a gguf without the per-type classes takes its public ``dequantize``."""
    traits = getattr(gguf.quants, "_type_traits", {}).get(qtype)
    if traits is None or not hasattr(traits, "dequantize_rows") or not hasattr(traits, "init_grid"):
        return gguf.quants.dequantize(part, qtype)
    traits.init_grid()
    return traits.dequantize_rows(part)


def gguf_qk(path: str, label: str) -> tuple[dict[str, GgufTensor], dict[str, Any]]:
    """The GGUF's attention q/k/qkv tensors (by name) and its attention keys (head counts, key length)."""
    from .gguf import import_gguf, validate

    header = validate(path, label)
    gguf = import_gguf()
    out: dict[str, GgufTensor] = {}
    for name, info in header.tensors.items():
        base = name.split(".")
        if len(base) < 4 or base[0] != "blk" or base[2] not in ("attn_q", "attn_k", "attn_qkv"):
            continue
        try:
            qt = gguf.GGMLQuantizationType(info.type)
        except ValueError:
            raise WeightsError(
                f"{label}: tensor {name} has ggml type {info.type}, unknown to the gguf package; its weights cannot "
                "be checked (a newer gguf may know it)"
            ) from None
        if qt not in gguf.GGML_QUANT_SIZES:
            raise WeightsError(f"{label}: tensor {name} has ggml type {qt.name} with no known block size")
        block, tsize = gguf.GGML_QUANT_SIZES[qt]
        shape = info.shape
        cols = int(shape[0]) if len(shape) > 1 else 1
        rows = int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else int(shape[0])
        if len(shape) == 1:  # a bias: one column per row
            if block != 1:
                raise WeightsError(f"{label}: tensor {name} is a 1-D {qt.name} tensor; expected F32/F16/BF16")
            nbytes = rows * tsize
        else:
            if cols % block:
                raise WeightsError(
                    f"{label}: tensor {name} has {cols} columns, not a multiple of {qt.name}'s block {block}"
                )
            nbytes = rows * (cols // block) * tsize
        if info.offset + nbytes > header.size:
            raise WeightsError(
                f"{label}: tensor {name} ({nbytes} bytes at {info.offset}) runs past the end of the file "
                f"({header.size} bytes); the file is truncated"
            )
        out[name] = GgufTensor(path, name, rows, cols, qt, info.offset)
    reader_keys = _attention_keys(path, gguf)
    return out, reader_keys


def _attention_keys(path: str, gguf: Any) -> dict[str, Any]:
    try:
        reader = gguf.GGUFReader(path, "r")
    except Exception as exc:  # the header walk passed: anything left is the reader's own refusal
        raise WeightsError(f"{path}: the gguf reader refused it ({type(exc).__name__}: {exc})") from None
    arch = reader.fields["general.architecture"].contents()
    keys: dict[str, Any] = {"arch": arch}
    for short, key in (("n_head", "attention.head_count"), ("n_head_kv", "attention.head_count_kv"),
                       ("key_length", "attention.key_length"), ("n_embd", "embedding_length"),
                       ("n_layer", "block_count"), ("n_rot", "rope.dimension_count")):  # fmt: skip
        f = reader.fields.get(f"{arch}.{key}")
        if f is not None:
            v = f.contents()
            keys[short] = [int(x) for x in v] if isinstance(v, list) else int(v)
    return keys


@dataclass
class HfTensor:
    file: str
    name: str
    dtype: str
    shape: tuple[int, ...]
    offset: int

    def first(self, cols: int) -> np.ndarray:
        """The first ``cols`` columns of every row as float32 (a 1-D tensor: one column)."""
        rows = self.shape[0]
        width = int(np.prod(self.shape[1:], dtype=np.int64)) if len(self.shape) > 1 else 1
        if self.dtype == "BF16":
            mm = np.memmap(self.file, dtype=np.uint16, mode="r", offset=self.offset, shape=(rows, width))
            return (np.ascontiguousarray(mm[:, :cols]).astype(np.uint32) << 16).view(np.float32)
        if self.dtype not in _HF_DTYPES:
            raise WeightsError(
                f"{self.file}: tensor {self.name} has dtype {self.dtype}; the weights check reads F32, F16, BF16 and "
                "F64 checkpoints (a quantized HF checkpoint cannot be compared row by row)"
            )
        mm = np.memmap(self.file, dtype=_HF_DTYPES[self.dtype], mode="r", offset=self.offset, shape=(rows, width))
        return np.asarray(mm[:, :cols], dtype=np.float32)


def hf_weight_files(directory: str) -> list[str]:
    """The safetensors files of an HF model directory (one file, or the shards its index names); [] if none, or if
    a shard the index names is not there (a Hub snapshot fetched for its position tensors only)."""
    single = os.path.join(directory, "model.safetensors")
    if os.path.isfile(single):
        return [single]
    index = os.path.join(directory, "model.safetensors.index.json")
    if not os.path.isfile(index):
        return []
    from .config_file import weight_map as read_weight_map

    weight_map = read_weight_map(index, WeightsError)
    # shard names stay inside the model directory (an index naming ../x or /x is not followed); a Hub snapshot
    # holding the index but not every shard (audit --download fetches only position tensors) has no weights here
    shards = sorted({os.path.join(directory, os.path.basename(str(v))) for v in weight_map.values()})
    return shards if all(os.path.isfile(s) for s in shards) else []


def hf_tensors(files: list[str]) -> dict[str, HfTensor]:
    out: dict[str, HfTensor] = {}
    for file in files:
        try:
            size = os.path.getsize(file)
            with open(file, "rb") as fh:
                n = int.from_bytes(fh.read(8), "little")
                if not 2 <= n <= min(100_000_000, size - 8):
                    raise ValueError("bad header length")
                header = json.loads(fh.read(n))
        except (OSError, ValueError) as exc:
            raise WeightsError(f"{file}: not a readable safetensors file ({exc})") from None
        if not isinstance(header, dict):
            raise WeightsError(f"{file}: not a safetensors file (its header is not an object)")
        header.pop("__metadata__", None)
        for name, e in header.items():
            try:
                a, b = (int(x) for x in e["data_offsets"])
                shape = tuple(int(s) for s in e["shape"])
                dtype = str(e["dtype"])
            except (KeyError, TypeError, ValueError):
                raise WeightsError(f"{file}: tensor {name} has a malformed header entry") from None
            if 8 + n + b > size:
                raise WeightsError(f"{file}: tensor {name} runs past the end of the file; the file is truncated")
            item = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8}.get(dtype)
            if item is not None and b - a != int(np.prod(shape, dtype=np.int64)) * item:
                raise WeightsError(f"{file}: tensor {name}'s data_offsets do not match its shape; the file is damaged")
            out[name] = HfTensor(file, name, dtype, shape, 8 + n + a)
    return out


# ----- the verdict ---------------------------------------------------------------------------------------------
@dataclass
class TensorResult:
    """One GGUF tensor (or a Q/K part of a fused one) against HF's."""

    gguf: str
    hf: str
    layer: int
    role: str  # "q" or "k"
    kind: str  # "weight" or "bias"
    heads: int
    found: str | None  # the candidate it holds (None: none of them)
    bad_rows: list[int] = field(default_factory=list)  # rows that differ under the expected permutation
    best_fraction: float = 1.0  # rows matching under the best candidate

    @property
    def label(self) -> str:
        return f"{self.role}.{self.kind}"


@dataclass
class WeightsCheck:
    """The verdict on a conversion's query/key weights: ``status`` is ``agree``, ``differ`` or ``not checked``;
    ``summary`` one line; ``findings`` one line per mistake (tensor, layers, what llama.cpp computes, the fix);
    ``notes`` what was compared and assumed."""

    gguf: str
    hf: str | None
    status: str
    summary: str
    expected: str
    findings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tensors: list[TensorResult] = field(default_factory=list)
    #: the converted model's format: ``gguf`` (the file in ``gguf``) or ``mlx`` (mlx-lm's directory in ``gguf``)
    kind: str = "gguf"
    #: HF projections with no counterpart in the converted model (MLX: by name and shape)
    unmatched: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status != "differ"

    def to_json(self) -> dict[str, Any]:
        own = {} if self.kind == "gguf" else {"kind": self.kind, "unmatched": self.unmatched}
        return {
            self.kind: self.gguf, **own, "hf": self.hf, "status": self.status, "summary": self.summary,
            "expected": self.expected, "findings": self.findings, "notes": self.notes,
            "tensors": [{self.kind: t.gguf, "hf": t.hf, "layer": t.layer, "role": t.role, "kind": t.kind,
                         "heads": t.heads, "found": t.found, "bad_rows": t.bad_rows[:64]} for t in self.tensors],
        }  # fmt: skip


def _ranges(values: list[int]) -> str:
    from .llamacpp import _ranges as r

    return r(np.asarray(sorted(set(values))))


def _rounded(hf: np.ndarray, qname: str) -> np.ndarray:
    if qname == "F16":
        return hf.astype(np.float16).astype(np.float32)
    if qname == "BF16":
        from ..formats.dtypes import bfloat16

        return hf.astype(bfloat16()).astype(np.float32)
    return hf


def _tolerance(hf: np.ndarray, gguf: Any, qtype: Any) -> np.ndarray | None:
    """Per element bound of a quantized type (see the module docstring); None for the exact float types."""
    block = gguf.GGML_QUANT_SIZES[qtype][0]
    if block == 1:
        return None
    bits = code_bits(gguf, qtype)
    rows, cols = hf.shape
    amax = np.abs(hf.reshape(rows, cols // block, block)).max(axis=2, keepdims=True)
    return np.broadcast_to(2.0 * amax / (2**bits - 1), (rows, cols // block, block)).reshape(rows, cols)


def code_bits(gguf: Any, qtype: Any) -> int:
    """The bits of a quantized type's codes the bound assumes: its whole bits per weight less one (a block's
    scale, minimum and sub-scales take at most one bit per weight: Q8_0 8.5 -> 7, Q4_0 4.5 -> 3, Q4_1 5 -> 4)."""
    block, tsize = gguf.GGML_QUANT_SIZES[qtype]
    return math.floor(8 * tsize / block) - 1


#: Fewest code bits whose rounding bound (2/(2^b - 1) of the block's largest value: 0.29 at 3 bits) still tells
#: one row from another; coarser types (Q2_K, Q3_K, the 1- to 3-bit IQ types) are not checked.
MIN_CODE_BITS = 3


def _row_ok(g: np.ndarray, h: np.ndarray, tol: np.ndarray | None) -> np.ndarray:
    if tol is None:
        return np.all((g == h) | (np.isnan(g) & np.isnan(h)), axis=1)
    return np.all(np.abs(g - h) <= tol, axis=1)


def expected_permutation(arch: str, hf_layout: str) -> str:
    """``permute`` / ``inverse`` / ``none``: what makes llama.cpp's pairs for ``arch`` HF's ``hf_layout`` pairs."""
    from .llamacpp import LAYOUTS, rope_type_of

    ours = LAYOUTS[rope_type_of(arch)[0]]
    if ours == hf_layout or hf_layout not in ("half", "interleaved") or ours not in ("half", "interleaved"):
        return "none"
    return "permute" if ours == "interleaved" else "inverse"


_WHAT = {
    "none": "is not permuted",
    "other-heads": "is permuted with {other} heads where the model has {own} {side} heads",
    "whole-head": "is permuted over the whole head of {head_dim} rows where only the first {rot} rotate",
    "twice": "is permuted twice",
    "inverse": "holds the inverse permutation (consecutive pairs to half)",
    "norm-permuted": "is permuted as for a NORM model (LlamaModel.permute)",
}


def _finding(members: list[TensorResult], ctx: dict[str, Any]) -> str:
    t0 = members[0]
    f = t0.found or ""
    side = "KV" if t0.role == "k" else "query"
    own = t0.heads
    other = ctx["n_head"] if t0.role == "k" else ctx["n_head_kv"]
    what = _WHAT[f].format(other=other, own=own, side=side, head_dim=ctx["head_dim"], rot=ctx["rot"])
    names = []
    for m in members:
        n = f"attn_{m.role}.{m.kind}" + (" (in attn_qkv)" if "attn_qkv" in m.gguf else "")
        if n not in names:
            names.append(n)
    tensors = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    layers = _ranges([m.layer for m in members])
    arch = ctx["arch"]
    if f == "norm-permuted":
        effect = (
            f"llama.cpp ({ctx['rope_type']} for {arch}) rotates pairs (i, i+{ctx['rot'] // 2}) of rows the "
            "permute moved to consecutive pairs, features from two of HF's pairs together"
        )
        fix = f"re-convert without the permute (convert_hf_to_gguf.py does not permute {arch})"
    else:
        effect = (
            f"llama.cpp ({ctx['rope_type']} for {arch}) rotates consecutive rows that are not HF's "
            f"rotate_half pairs (i, i+{ctx['rot'] // 2})"
        )
        if f == "other-heads" and t0.role == "k":
            fix = "re-convert with a convert_hf_to_gguf.py after PR #3364 (K permuted with the KV head count)"
        else:
            fix = (
                f"re-convert with convert_hf_to_gguf.py, which permutes Q per {ctx['n_head']} and K per "
                f"{ctx['n_head_kv']} heads, once"
            )
    if ctx.get("reverse") is not None:  # the HF side is the copy: its loader's un-permute went wrong
        effect = f"transformers' model rotates rotate_half pairs that are not llama.cpp's {ctx['rope_type']} pairs"
        fix = (f"reload {ctx['reverse']} with a transformers whose GGUF loader un-permutes Q per {ctx['n_head']} and "
               f"K per {ctx['n_head_kv']} heads (transformers #31766, #31788)")  # fmt: skip
    verb = "is" if len(names) == 1 else "are"
    return f"{tensors} of layers {layers} {verb} {what.removeprefix('is ')}: {effect}, so scores differ; {fix}"


def check_weights(gguf_path: str, config: Any, hf_dir: str | None, label: str | None = None) -> WeightsCheck:
    """The GGUF file's query/key rows against the HF weights in ``hf_dir`` (None or no safetensors there: not
    checked, with what the converter is expected to have done). ``config`` is the HF config (dict or path)."""
    from .config_file import load_config
    from .gguf import import_gguf
    from .llamacpp import QK_PERMUTE, rope_type_of
    from .readers import rotary_config

    label = label or gguf_path
    gguf = import_gguf()
    tensors, keys = gguf_qk(gguf_path, label)
    arch = str(keys["arch"])
    raw = load_config(config)
    cfg = rotary_config(raw)
    lt = (
        None
        if cfg.layer_types == ("default",)
        else next((t for t in cfg.layer_types if cfg.all_params(1)[t] is not None), None)
    )
    rep = cfg.report(lt)
    hf_layout = str(rep.get("layout", {}).get("value", "half"))
    text: dict[str, Any] = raw["text_config"] if isinstance(raw.get("text_config"), dict) else raw
    n_head = _first(keys.get("n_head")) or int(text.get("num_attention_heads", 0))
    n_head_kv = _first(keys.get("n_head_kv")) or int(text.get("num_key_value_heads") or n_head)
    head_dim = int(keys.get("key_length") or (keys["n_embd"] // n_head if n_head and "n_embd" in keys else 0))
    rot = int(rep.get("rotated_dims", {}).get("value") or head_dim)
    rope_type = rope_type_of(arch)[0]
    expected = expected_permutation(arch, hf_layout)
    conv = QK_PERMUTE.get(arch, "unknown")
    conv_text = {"yes": f"permutes Q/K rows for {arch} (LlamaModel.permute)",
                 "no": f"writes {arch}'s Q/K rows as HF's",
                 "mixed": f"permutes Q/K rows for {arch} in most of its converter classes (LlamaModel.permute)",
                 "unknown": f"has no converter class for {arch}"}[conv]  # fmt: skip
    exp_text = (
        f"Q rows permuted per {n_head} heads and K rows per {n_head_kv} heads from HF's half pairs to "
        f"{rope_type}'s consecutive pairs" + (f" (the first {rot} rows of each head)" if rot < head_dim else "")
        if expected == "permute"
        else ("Q/K rows as HF's" if expected == "none" else "Q/K rows permuted from consecutive pairs to half")
    )
    expect_line = f"llama.cpp's {rope_type} pairs for {arch} need {exp_text}; convert_hf_to_gguf.py {conv_text}"
    if expected == "permute":
        short = f"permuted Q per {n_head} heads and K per {n_head_kv} (LlamaModel.permute)"
    else:
        short = "left the Q/K rows as HF's" if expected == "none" else "permuted Q/K from consecutive pairs to half"
    check = WeightsCheck(gguf_path, hf_dir, "not checked", "", expect_line)
    if (expected == "permute") != (conv in ("yes", "mixed")) and conv != "unknown":
        check.notes.append(
            f"convert_hf_to_gguf.py {conv_text}, where llama.cpp's {rope_type} pairs and HF's "
            f"{hf_layout} pairs need {exp_text}: a faithful converter run gives scores that differ"
        )
    files = hf_weight_files(hf_dir) if hf_dir and os.path.isdir(hf_dir) else []
    if not files:
        where = "no HF safetensors beside config.json" if hf_dir is not None else "no HF weights for a loose config"
        if hf_dir is not None and os.path.isfile(os.path.join(hf_dir, "model.safetensors.index.json")):
            where = "no HF safetensors beside config.json: its index names shards that are not there"
        check.summary = f"weights not checked ({where}): the converter should have {short}"
        return check
    if not tensors:
        check.summary = f"weights not checked: {label} holds no blk.N.attn_q/attn_k/attn_qkv tensors"
        return check
    coarse = sorted(n for n, t in tensors.items() if gguf.GGML_QUANT_SIZES[t.qtype][0] > 1
                    and code_bits(gguf, t.qtype) < MIN_CODE_BITS)  # fmt: skip
    if coarse:
        qname = tensors[coarse[0]].qtype.name
        check.summary = (f"weights not checked: {coarse[0]} is {qname}, whose rounding is too coarse to tell its "
                         f"rows apart; the converter should have {short}")  # fmt: skip
        return check
    # every layer holds the Q/K tensors the others hold (a layer without them would go unchecked)
    per_layer: dict[int, set[str]] = {}
    for name in tensors:
        per_layer.setdefault(int(name.split(".")[1]), set()).add(name.split(".", 2)[2])
    every = set().union(*per_layer.values())
    for layer in range(max(int(keys.get("n_layer") or 0), max(per_layer) + 1)):
        lacking = sorted(every - per_layer.get(layer, set()))
        if lacking:
            raise WeightsError(
                f"{label}: tensor blk.{layer}.{lacking[0]} is missing (other layers hold it); the file is incomplete"
            )
    if not n_head or not head_dim or head_dim % 2 or rot % 2:
        raise WeightsError(f"{label}: head count {n_head} / head dim {head_dim} cannot split the Q/K rows")
    hf_all = hf_tensors(files)
    n_layer = int(keys.get("n_layer") or 0)
    try:
        arch_enum = next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == arch)
        name_map = gguf.get_tensor_name_map(arch_enum, max(n_layer, 1))
    except StopIteration:
        check.summary = f"weights not checked: the gguf package has no tensor names for architecture {arch!r}"
        return check
    # HF tensor -> GGUF name (the converter's own table)
    hf_of: dict[str, Any] = {}
    mapped: dict[str, HfTensor] = {}
    for name, t in hf_all.items():
        g = name_map.get_name(name, try_suffixes=(".weight", ".bias"))
        if g is not None:
            mapped[g] = t
            if g in tensors:
                hf_of[g] = t
    # a fused attn_qkv from HF's separate projections (convert_hf_to_gguf.py --fuse-qkv: ModelBase.modify_tensors
    # concatenates [Q; K; V] after the class's own permute): its Q and K rows against HF's q_proj and k_proj
    for gname in tensors:
        stem, _, kind = gname.rpartition(".")
        if gname not in hf_of and stem.endswith(".attn_qkv"):
            q, k = (mapped.get(f"{stem.removesuffix('_qkv')}_{p}.{kind}") for p in "qk")
            if q is not None and k is not None:
                hf_of[gname] = _Stacked(q, k, tensors[gname].rows)
    missing = sorted(n for n in tensors if n not in hf_of)
    if missing:
        raise WeightsError(
            f"{label}: tensor {missing[0]} has no HF counterpart in {hf_dir}"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
            + "; pass the directory of the model it was converted from"
        )
    # an HF directory made from a GGUF by transformers' GGUF loading says so in its config (the reverse trip)
    qc: dict[str, Any] = raw["quantization_config"] if isinstance(raw.get("quantization_config"), dict) else {}
    reverse = str(qc.get("gguf_file") or "?") if qc.get("quant_method") == "gguf" else None
    if reverse is not None:
        check.notes.append(
            f"the HF weights were made from a GGUF ({reverse}) by transformers' GGUF loading: checked the same way"
        )
    ctx = {"arch": arch, "rope_type": rope_type, "n_head": n_head, "n_head_kv": n_head_kv, "head_dim": head_dim,
           "rot": rot, "reverse": reverse}  # fmt: skip
    q_rows, k_rows = n_head * head_dim, n_head_kv * head_dim
    col_note = ""
    for gname in sorted(tensors, key=_order):
        gt, ht = tensors[gname], hf_of[gname]
        layer, part, kind = int(gname.split(".")[1]), gname.split(".")[2], gname.split(".")[-1]
        g, ncols = gt.first(gguf)
        if ht.shape[0] != gt.rows or (len(ht.shape) > 1 and ht.shape[1] != gt.cols):
            raise WeightsError(
                f"{label}: tensor {gname} is {gt.rows} x {gt.cols}, HF's {ht.name} {list(ht.shape)}; not the same model"
            )
        h = ht.first(ncols)
        tol = _tolerance(h, gguf, gt.qtype)
        hr = _rounded(h, gt.qtype.name)
        col_note = f"first {ncols} column{'s' if ncols > 1 else ''}"
        if part == "attn_qkv":
            if gt.rows < q_rows + k_rows:
                raise WeightsError(f"{label}: tensor {gname} has {gt.rows} rows, fewer than Q+K's {q_rows + k_rows}")
            splits = [("q", slice(0, q_rows), n_head), ("k", slice(q_rows, q_rows + k_rows), n_head_kv)]
            stacked = isinstance(ht, _Stacked)
            hf_orders = _fused_orders(gt.rows, n_head, n_head_kv, head_dim, fused_hf=not stacked and ht.name != gname)
            note = ("HF's separate q/k projections fused by the converter (attn_qkv = [Q; K; V], "
                    "convert_hf_to_gguf.py --fuse-qkv): their Q and K rows compared")  # fmt: skip
            if stacked and note not in check.notes:
                check.notes.append(note)
        else:
            role = "q" if part == "attn_q" else "k"
            heads = n_head if role == "q" else n_head_kv
            if gt.rows != heads * head_dim:
                raise WeightsError(
                    f"{label}: tensor {gname} has {gt.rows} rows; {heads} {'query' if role == 'q' else 'KV'} heads "
                    f"of {head_dim} need {heads * head_dim}"
                )
            splits = [(role, slice(0, gt.rows), heads)]
            hf_orders = [("", np.arange(gt.rows))]
        results = []
        for order_name, order in hf_orders:
            res = []
            for role, sl, heads in splits:
                other = n_head_kv if role == "q" else n_head
                hsrc = order[sl]
                r = _one(gname, ht.name, layer, role, kind, heads, other, head_dim, rot, expected,
                         g[sl], hr[hsrc], None if tol is None else tol[hsrc])  # fmt: skip
                res.append(r)
            results.append((order_name, res))
            if all(r.found == "expected" for r in res):
                break
        order_name, res = max(results, key=lambda x: sum(r.best_fraction for r in x[1]))
        if order_name:
            check.notes.append(f"HF's fused {ht.name} split {order_name}")
        check.tensors += res
    check.notes.append(
        f"compared {len(check.tensors)} Q/K tensors of {len({t.layer for t in check.tensors})} layers on the "
        f"{col_note} of every row, "
        + ("exactly after rounding HF's values to the GGUF's type"
           if all(tensors[t.gguf].qtype.name in ("F32", "F16", "BF16") for t in check.tensors)
           else "within each quantized type's rounding bound (gguf's own dequantization)")
    )  # fmt: skip
    _decide(check, ctx)
    return check


@dataclass
class _Stacked:
    """HF's separate q and k projections read as the first rows of a fused ``[Q; K; V]`` tensor of ``rows`` rows
    (V is not read: its rows are never compared)."""

    q: HfTensor
    k: HfTensor
    rows: int

    @property
    def name(self) -> str:
        return f"{self.q.name} + {self.k.name}"

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.rows, *self.q.shape[1:])

    def first(self, cols: int) -> np.ndarray:
        qk = np.vstack([self.q.first(cols), self.k.first(cols)])
        pad = np.full((self.rows - qk.shape[0], qk.shape[1]), np.nan, dtype=np.float32)
        return np.vstack([qk, pad])


def _first(v: Any) -> int | None:
    if isinstance(v, list):
        return int(v[0]) if v else None
    return None if v is None else int(v)


def _order(name: str) -> tuple[int, str]:
    parts = name.split(".")
    return int(parts[1]), ".".join(parts[2:])


def _fused_orders(rows: int, n_head: int, n_kv: int, head_dim: int, fused_hf: bool) -> list[tuple[str, np.ndarray]]:
    """How HF's rows map onto llama.cpp's ``[Q; K; V]``: as they are, or (a fused HF tensor with as many KV as
    query heads) gpt-neox's per-head ``(n_head, 3, d)`` order, which its converter re-formats."""
    out = [("as [Q; K; V] rows" if fused_hf else "", np.arange(rows))]
    if fused_hf and n_head == n_kv and rows == 3 * n_head * head_dim:
        out.append(("per head as (heads, 3, head_dim)",
                    np.arange(rows).reshape(n_head, 3, head_dim).transpose(1, 0, 2).reshape(-1)))  # fmt: skip
    return out


def _one(gname: str, hname: str, layer: int, role: str, kind: str, heads: int, other: int, head_dim: int, rot: int,
         expected: str, g: np.ndarray, h: np.ndarray, tol: np.ndarray | None,
         tol_of_g: bool = False) -> TensorResult:  # fmt: skip
    """Which candidate permutation of HF's rows ``h`` the converted rows ``g`` hold; ``tol`` is per element of
    ``h`` (moved with its rows), or with ``tol_of_g`` of ``g`` (a bound the converted file's own scales give)."""
    rows = g.shape[0]
    res = TensorResult(gname, hname, layer, role, kind, heads, None)
    best = 0.0
    for name, idx in candidates(rows, heads, other, head_dim, rot, expected):
        ok = _row_ok(g, h[idx], None if tol is None else (tol if tol_of_g else tol[idx]))
        frac = float(ok.mean()) if rows else 1.0
        if name == "expected":
            res.bad_rows = [int(i) for i in np.flatnonzero(~ok)]
        best = max(best, frac)
        if ok.all():
            res.found = name
            break
    res.best_fraction = best
    return res


def _decide(check: WeightsCheck, ctx: dict[str, Any]) -> None:
    ts = check.tensors
    if all(t.found == "expected" for t in ts):
        check.status = "agree"
        check.summary = (
            f"weights: Q/K rows of {len({t.layer for t in ts})} layers equal HF's under the permutation llama.cpp "
            f"needs ({check.expected.split(' need ', 1)[1].split(';')[0]})"
        )
        return
    check.status = "differ"
    unmatched = [t for t in ts if t.found is None]
    if unmatched and sum(t.best_fraction < DIFFERENT_MODEL for t in ts) > len(ts) / 2:
        check.summary = (
            f"weights: Q/K rows differ from HF's under every permutation in {len(unmatched)} of {len(ts)} "
            "tensors (most rows): the GGUF and the HF weights are from different models"
        )
        return
    # one line per mistake: the tensors holding it in the same layers (other-heads names its side's heads)
    by: dict[tuple[str, str], list[TensorResult]] = {}
    for t in ts:
        if t.found not in ("expected", None):
            key = (t.found or "", t.role if t.found == "other-heads" else "")
            by.setdefault(key, []).append(t)
    for _key, members in sorted(by.items()):
        per_label: dict[str, list[TensorResult]] = {}
        for m in members:
            per_label.setdefault(m.gguf.split(".", 2)[2] + m.role, []).append(m)
        layer_sets: dict[tuple[int, ...], list[TensorResult]] = {}
        for group in per_label.values():
            layer_sets.setdefault(tuple(sorted({m.layer for m in group})), []).extend(group)
        for group in layer_sets.values():
            check.findings.append(_finding(sorted(group, key=lambda m: (m.role != "q", m.kind != "weight")), ctx))
    for t in unmatched:
        heads = sorted({r // ctx["head_dim"] for r in t.bad_rows})
        check.findings.append(
            f"{t.gguf} matches no known permutation of {t.hf}: rows {_ranges(t.bad_rows)} (heads {_ranges(heads)}) "
            "differ under the expected one"
        )
    roles = {t.role for t in ts if t.found != "expected"}
    only = " (K only)" if roles == {"k"} else (" (Q only)" if roles == {"q"} else "")
    check.summary = "weights: Q/K rows differ" + only + ": " + check.findings[0]


def hf_weights_dir(config: Any) -> str | None:
    """Where HF's weights are for a config given as a path: the directory itself, or a ``config.json``'s own
    directory (a loose JSON file has none)."""
    if not isinstance(config, (str, os.PathLike)) or str(config) == "-":
        return None
    path = os.fspath(config)
    if os.path.isdir(path):
        return path
    if os.path.basename(path) == "config.json":
        return os.path.dirname(path) or "."
    return None


def audit_verdict(gguf_path: str, config_path: str) -> tuple[str, str, list[str]]:
    """``(verdict, explanation, details)`` of an audit's weights row: ``agree`` / ``differ``, ``skipped`` when
    there are no HF weights beside the config (what the converter is expected to have done), ``error`` when the
    files cannot be compared (the reason naming the tensor)."""
    from ..errors import PosencError

    hf_dir = hf_weights_dir(config_path)
    try:
        check = check_weights(gguf_path, config_path, hf_dir)
    except PosencError as exc:
        return "error", f"weights not checked: {' '.join(str(exc).split())}", []
    verdict = {"agree": "agree", "differ": "differ"}.get(check.status, "skipped")
    details = [f"divergence: {f}" for f in check.findings] + [f"note: {n}" for n in check.notes]
    details.append(f"expected: {check.expected}")
    return verdict, check.summary, details
