r"""The query/key weights of an MLX conversion (mlx-lm's ``convert``) against HF's: rows and rope flag, verified.

mlx-lm keeps HF's tensor names and config keys, and each model module builds its rope as
``nn.RoPE(dims, traditional=...)``: ``traditional=False`` rotates HF's ``rotate_half`` pairs ``(i, i + r/2)``,
``traditional=True`` consecutive pairs ``(2i, 2i+1)`` (mlx's ``fast.rope``). Which flag a model type gets is
:func:`mlx_rope_rule`, from the text printed from mlx-lm's own ``mlx_lm/models/*.py`` by
``tools/golden/mlx_traditional.py`` (``config:D``: the module reads the config's ``rope_traditional``, default ``D``; ``true`` / ``false``: a literal;
``mixed``: both literals, per layer or per rope, which posenc does not model), through mlx-lm's
``MODEL_REMAPPING`` (mistral runs llama's module). ``convert`` copies HF's rows unchanged (mlx_lm/convert.py,
mlx_lm/utils.py ``load_model``/``save_model``), so a faithful directory holds HF's rows when the flag is false; a
directory with the flag true holds faithful weights only when its rows are permuted per head as
``convert_hf_to_gguf.py``'s ``LlamaModel.permute`` does (the same consecutive pairs).

Which tensors are the projections: HF names of ``MODEL_TENSOR.ATTN_Q`` / ``ATTN_K`` in ``gguf``'s
``TensorNameMap`` (the converters' name table), each matched to the MLX tensor of the same name; HF tensors with
no MLX counterpart of the same name and shape are listed as not matched.

Quantized tensors (``convert -q``, mlx's affine mode): ``weight`` is uint32 words packing ``bits``-bit codes
little-endian, one ``scales`` and ``biases`` per ``group_size`` columns from the config's ``quantization`` (a
per-module entry overrides it), ``w = scales * q + biases`` (``mx.dequantize``); rounding to the nearest code
moves a value by at most half a step, and the scale's and bias's own rounding to their dtype by at most its unit
roundoff times ``|bias| + (2^bits - 1) |scale|``: the bound is one step plus that. Only the first group of each
row is read. tests/test_mlx_weights.py compares this dequantization with ``mx.dequantize``'s own output. Codes
of fewer than 3 bits (:data:`~posenc_cli.models.qk_weights.MIN_CODE_BITS`: a step of a third of the range or more)
cannot tell rows apart: such weights are reported not checked.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from .qk_weights import (
    FLOAT_COLUMNS,
    MIN_CODE_BITS,
    HfTensor,
    TensorResult,
    WeightsCheck,
    WeightsError,
    _one,
    _ranges,
    _rounded,
    hf_tensors,
    hf_weight_files,
)

# printed by tools/golden/mlx_traditional.py from mlx-lm 0.32.2
_MLX_TRADITIONAL_TEXT = """
Klear=false apertus=config:false baichuan_m1=false bailing_hybrid=false bailing_moe=false
bailing_moe_linear=config:false bailing_moe_v3=true bitnet=config:false cohere=true cohere2=true dbrx=false
deepseek_v2=true deepseek_v3=true deepseek_v32=true deepseek_v41=true dots1=false ernie4_5=true ernie4_5_moe=true
exaone=config:false exaone4=false exaone_moe=false falcon_h1=config:false gear=false gemma=config:false
gemma2=config:false gemma3_text=false gemma3n=false gemma4_text=config:false glm=true glm4=config:true
glm4_moe=false glm4_moe_lite=true gpt_neox=false gpt_oss=false gptj=true helium=true hunyuan=false
hunyuan_v1_dense=false internlm2=config:false internlm3=config:false iquestloopcoder=false laguna=false lfm2=false
lfm2_moe=false llama=config:false llama4=true llama4_text=true longcat_flash=true mellum=false mimo=config:false
mimo_v2_flash=false minicpm=config:false minicpm3=config:false minimax=false minimax_m3_vl=false
mixtral=config:false muse_glimmer=false muse_spark=true nanbeige=false nanochat=false nemotron-nas=false
nemotron=config:false olmo=config:false olmo2=config:false olmo3=false olmo_hybrid=false olmoe=config:false
openelm=false phi=false phi3=config:false phi3small=false phixtral=false plamo=config:false plamo3=false qwen=false
qwen2=config:false qwen2_moe=config:false qwen3=false qwen3_moe=false qwen3_next=false recurrent_gemma=false
rope_utils=false seed_oss=config:false spark2_5=false stablelm=false starcoder2=false step3p5=false talkie=false
telechat3=false youtu_llm=config:true
"""
_MLX_REMAPPING_TEXT = """
mistral=llama llava=mistral3 phi-msft=phixtral falcon_mamba=mamba joyai_llm_flash=deepseek_v3 kimi_k2=deepseek_v3
qwen2_5_vl=qwen2_vl minimax_m2=minimax iquestcoder=llama xverse=llama gemma4_unified=gemma4
deepseek_v41_text=deepseek_v41
"""


def mlx_rope_rule(model_type: str) -> tuple[str, str | None]:
    """mlx-lm's module for ``model_type`` (through its ``MODEL_REMAPPING``) and that module's rope flag:
    ``config:D`` (the config's rope_traditional, default D), ``true``, ``false``, ``mixed``, or None (no literal
    flag). The tables are mlx-lm's own, keyed by its module names, read from the printed text above (not a second
    family table: a model type posenc has no record for is still looked up, as mlx-lm would)."""
    remap = dict(pair.split("=", 1) for pair in _MLX_REMAPPING_TEXT.split())
    module = remap.get(model_type, model_type)
    for pair in _MLX_TRADITIONAL_TEXT.split():
        name, _, rule = pair.partition("=")
        if name == module:
            return module, rule
    return module, None


#: unit roundoff of the dtypes mlx-lm stores scales and biases in
_UNIT = {"BF16": 2.0**-8, "F16": 2.0**-11, "F32": 2.0**-24}


def is_mlx_dir(path: str) -> bool:
    """A directory whose safetensors mlx-lm wrote (``save_model`` stamps ``{"format": "mlx"}``)."""
    if not os.path.isdir(path) or not os.path.isfile(os.path.join(path, "config.json")):
        return False
    try:
        files = hf_weight_files(path)
        if not files:
            return False
        with open(files[0], "rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            if not 2 <= n <= 100_000_000:
                return False
            meta = json.loads(fh.read(n)).get("__metadata__") or {}
    except (OSError, ValueError, WeightsError, AttributeError):
        return False
    return isinstance(meta, dict) and meta.get("format") == "mlx"


def traditional_of(raw: dict[str, Any]) -> tuple[bool | None, str]:
    """mlx-lm's ``traditional`` flag for a config (None: mlx-lm's module for it sets none posenc reads), and where
    it comes from."""
    mt = str(raw.get("model_type") or "")
    module, rule = mlx_rope_rule(mt)
    via = f"mlx_lm/models/{module}.py" + (f" (model_type {mt})" if module != mt else "")
    if rule is None or rule == "mixed":
        what = "builds its ropes with both flags" if rule == "mixed" else "has no rope flag posenc reads"
        return None, f"{via} {what}"
    if rule.startswith("config:"):
        default = rule.split(":", 1)[1] == "true"
        value = raw.get("rope_traditional", default)
        if not isinstance(value, bool):
            raise WeightsError(f"config.json: rope_traditional is {value!r}; mlx-lm reads it as true or false")
        src = "config.json's rope_traditional" if "rope_traditional" in raw else f"rope_traditional's default in {via}"
        return value, f"{src}: {str(value).lower()}"
    return rule == "true", f"{via}: traditional={rule.title()}"


def _projection_names(n_layer: int) -> dict[str, tuple[int, str]]:
    """HF tensor base names of the query/key projections (gguf's TensorNameMap) -> (layer, ``q`` / ``k``)."""
    from .gguf import import_gguf

    gguf = import_gguf()
    cfg = gguf.TensorNameMap.block_mappings_cfg
    out: dict[str, tuple[int, str]] = {}
    for role, key in (("q", gguf.MODEL_TENSOR.ATTN_Q), ("k", gguf.MODEL_TENSOR.ATTN_K)):
        for template in cfg[key]:
            for layer in range(n_layer):
                out.setdefault(template.format(bid=layer), (layer, role))
    return out


def _quant_params(raw: dict[str, Any], base: str) -> tuple[int, int]:
    q = raw.get("quantization") if isinstance(raw.get("quantization"), dict) else raw.get("quantization_config")
    if not isinstance(q, dict):
        raise WeightsError(f"{base}.weight is packed (uint32) but config.json has no quantization entry")
    own = q.get(base)
    if isinstance(own, dict):
        q = own
    mode = q.get("mode", "affine")
    if mode != "affine":
        raise WeightsError(f"{base}.weight is quantized in mlx's {mode!r} mode; the weights check reads affine only")
    try:
        return int(q["group_size"]), int(q["bits"])
    except (KeyError, TypeError, ValueError):
        raise WeightsError(f"config.json: quantization has no group_size/bits for {base}") from None


def dequantize_first(w: HfTensor, scales: HfTensor, biases: HfTensor, group: int, bits: int) -> tuple[Any, Any]:
    """The first group of every row of an mlx affine-quantized weight, dequantized (``scales * q + biases``), and
    the per-element bound (one step plus the scale's and bias's rounding)."""
    if w.dtype != "U32" or len(w.shape) != 2 or (group * bits) % 32:
        raise WeightsError(f"{w.file}: tensor {w.name} is not mlx's packed uint32 for {bits}-bit groups of {group}")
    rows, words = w.shape
    per = group * bits // 32
    if scales.shape != (rows, words * 32 // bits // group) or biases.shape != scales.shape:
        raise WeightsError(f"{w.file}: tensor {w.name}'s scales/biases do not match {bits}-bit groups of {group}")
    mm = np.memmap(w.file, dtype="<u4", mode="r", offset=w.offset, shape=(rows, words))
    packed = np.ascontiguousarray(mm[:, :per]).view(np.uint8)
    stream = np.unpackbits(packed, axis=1, bitorder="little")[:, : group * bits]
    q = (stream.reshape(rows, group, bits).astype(np.uint32) << np.arange(bits, dtype=np.uint32)).sum(axis=2)
    s, b = scales.first(1), biases.first(1)
    unit = _UNIT.get(scales.dtype, 2.0**-24)
    tol = np.abs(s) + unit * (np.abs(b) + (2**bits - 1) * np.abs(s))
    return (s * q.astype(np.float32) + b).astype(np.float32), np.broadcast_to(tol, (rows, group))


def check_mlx(mlx_dir: str, hf_dir: str) -> WeightsCheck:
    """The MLX directory's query/key rows and rope flag against the HF weights in ``hf_dir``."""
    from .readers import rotary_config

    def cfg(d: str) -> dict[str, Any]:
        path = os.path.join(d, "config.json")
        try:
            with open(path, encoding="utf-8") as fh:
                out = json.load(fh)
        except (OSError, ValueError) as exc:
            raise WeightsError(f"{path}: cannot read ({exc})") from None
        if not isinstance(out, dict):
            raise WeightsError(f"{path}: not a JSON object")
        return out

    raw, hf_raw = cfg(mlx_dir), cfg(hf_dir)
    text = hf_raw["text_config"] if isinstance(hf_raw.get("text_config"), dict) else hf_raw
    n_head = int(text.get("num_attention_heads") or 0)
    n_kv = int(text.get("num_key_value_heads") or n_head)
    n_layer = int(text.get("num_hidden_layers") or 0)
    head_dim = int(text.get("head_dim") or (int(text.get("hidden_size") or 0) // n_head if n_head else 0))
    mc = rotary_config(hf_raw)
    rep = mc.report(None if mc.layer_types == ("default",) else mc.layer_types[0])
    hf_layout = str(rep.get("layout", {}).get("value", "half"))
    rot = int(rep.get("rotated_dims", {}).get("value") or head_dim)
    trad, why = traditional_of(raw)
    check = WeightsCheck(mlx_dir, hf_dir, "not checked", "", "", kind="mlx")
    if trad is None:
        check.summary = f"weights not checked: {why}"
        return check
    mlx_layout = "interleaved" if trad else "half"
    expected = "none" if mlx_layout == hf_layout else ("permute" if trad else "inverse")
    pairs = "consecutive pairs (2i, 2i+1)" if trad else f"HF's rotate_half pairs (i, i+{rot // 2})"
    rows = "Q/K rows as HF's" if expected == "none" else f"Q rows permuted per {n_head} heads and K per {n_kv}"
    check.expected = f"mlx-lm rotates {pairs} ({why}), which needs {rows}"
    if not n_head or not head_dim or head_dim % 2 or rot % 2:
        raise WeightsError(f"{hf_dir}: head count {n_head} / head dim {head_dim} cannot split the Q/K rows")
    hf_files, mlx_files = hf_weight_files(hf_dir), hf_weight_files(mlx_dir)
    if not hf_files:
        check.summary = f"weights not checked: no HF safetensors in {hf_dir}"
        return check
    hf_all, mx_all = hf_tensors(hf_files), hf_tensors(mlx_files)
    names = _projection_names(n_layer)
    unmatched: list[str] = []
    for hname in sorted(hf_all, key=lambda n: (names.get(n.rsplit(".", 1)[0], (0, ""))[0], n)):
        base, kind = hname.rsplit(".", 1) if "." in hname else (hname, "")
        if base not in names or kind not in ("weight", "bias"):
            continue
        layer, role = names[base]
        ht, mt = hf_all[hname], mx_all.get(hname)
        heads = n_head if role == "q" else n_kv
        if mt is None:
            unmatched.append(f"{hname} (no tensor of that name)")
            continue
        quantized = mt.dtype == "U32" and f"{base}.scales" in mx_all and kind == "weight"
        if not quantized and mt.shape != ht.shape:
            unmatched.append(f"{hname} (MLX {list(mt.shape)}, HF {list(ht.shape)})")
            continue
        if ht.shape[0] != heads * head_dim:
            raise WeightsError(f"{hname} has {ht.shape[0]} rows; {heads} heads of {head_dim} need {heads * head_dim}")
        if quantized:
            group, bits = _quant_params(raw, base)
            if bits < MIN_CODE_BITS:  # one step is a third of the group's range: rows cannot be told apart
                check.tensors.clear()
                check.summary = (f"weights not checked: {base}.weight is quantized to {bits} bits, too coarse to "
                                 f"tell its rows apart; mlx-lm rotates {pairs} ({why})")  # fmt: skip
                return check
            if mx_all.get(f"{base}.biases") is None:
                raise WeightsError(f"{mlx_dir}: {base}.weight is quantized but {base}.biases is missing")
            g, tol = dequantize_first(mt, mx_all[f"{base}.scales"], mx_all[f"{base}.biases"], group, bits)
            h = ht.first(group)
        else:
            cols = min(FLOAT_COLUMNS, ht.shape[1] if len(ht.shape) > 1 else 1)
            g, h, tol = mt.first(cols), _rounded(ht.first(cols), mt.dtype), None
        other = n_kv if role == "q" else n_head
        r = _one(hname, hname, layer, role, kind, heads, other, head_dim, rot, expected, g, h, tol, tol_of_g=True)
        check.tensors.append(r)
    check.unmatched = unmatched
    if not check.tensors:
        check.summary = f"weights not checked: no HF query/key projection in {hf_dir} has an MLX counterpart"
        check.notes += [f"not matched: {u}" for u in unmatched]
        return check
    quant = any(mx_all[t.hf].dtype == "U32" for t in check.tensors)
    check.notes.append(
        f"compared {len(check.tensors)} Q/K tensors of {len({t.layer for t in check.tensors})} layers by name, "
        + ("within mlx's affine rounding bound (dequantized as scales * q + biases)" if quant
           else "exactly after rounding HF's values to the MLX dtype")
    )  # fmt: skip
    check.notes += [f"not matched to an MLX tensor: {u}" for u in unmatched]
    _decide(check, trad, why, n_head, n_kv, head_dim, rot, raw)
    return check


def _decide(check: WeightsCheck, trad: bool, why: str, n_head: int, n_kv: int, head_dim: int, rot: int,
            raw: dict[str, Any]) -> None:  # fmt: skip
    from .qk_weights import DIFFERENT_MODEL

    ts = check.tensors
    if all(t.found == "expected" for t in ts):
        check.status = "agree"
        check.summary = (f"weights: Q/K rows of {len({t.layer for t in ts})} layers equal HF's as mlx-lm's rope "
                         f"needs ({check.expected.rsplit(', which needs ', 1)[1]})")  # fmt: skip
        return
    check.status = "differ"
    lost = [t for t in ts if t.found is None]
    if lost and sum(t.best_fraction < DIFFERENT_MODEL for t in ts) > len(ts) / 2:
        check.summary = (f"weights: Q/K rows differ from HF's under every permutation in {len(lost)} of {len(ts)} "
                         "tensors (most rows): the MLX and the HF weights are from different models")  # fmt: skip
        return
    reads_flag = str(mlx_rope_rule(str(raw.get("model_type") or ""))[1]).startswith("config:")
    by: dict[str | None, list[TensorResult]] = {}
    for t in ts:
        if t.found != "expected":
            by.setdefault(t.found, []).append(t)
    for found, members in by.items():
        names = sorted(dict.fromkeys(f"{m.role}_proj.{m.kind}" for m in members), key=lambda n: (n[0] != "q", n))
        tensors = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        layers = _ranges([m.layer for m in members])
        verb = "is" if len(names) == 1 else "are"
        if found is None:
            for m in members:
                heads = sorted({r // head_dim for r in m.bad_rows})
                check.findings.append(f"{m.hf} matches no known permutation of HF's: rows {_ranges(m.bad_rows)} "
                                      f"(heads {_ranges(heads)}) differ")  # fmt: skip
        elif found == "norm-permuted":
            fix = "take the rows from the HF checkpoint (mlx_lm convert --hf-path HF)"
            if reads_flag:
                fix += ", or set rope_traditional true in config.json"
            check.findings.append(
                f"{tensors} of layers {layers} {verb} permuted per head to consecutive pairs (llama.cpp's NORM order, "
                f"as copied from a GGUF) but mlx-lm rotates HF's rotate_half pairs (i, i+{rot // 2}) ({why}): it "
                f"pairs features from two of HF's pairs, so scores differ; {fix}"
            )
        elif found == "none" and trad:
            fix = ("remove rope_traditional from config.json (or set it false)" if reads_flag
                   else f"permute Q per {n_head} and K per {n_kv} heads (LlamaModel.permute)")  # fmt: skip
            check.findings.append(
                f"{tensors} of layers {layers} {verb} HF's rows but mlx-lm rotates consecutive pairs (2i, 2i+1) "
                f"({why}), not HF's rotate_half pairs (i, i+{rot // 2}): scores differ; {fix}"
            )
        else:
            from .qk_weights import _WHAT

            t0 = members[0]
            what = _WHAT[found or "none"].format(
                other=n_head if t0.role == "k" else n_kv, own=t0.heads, side="KV" if t0.role == "k" else "query",
                head_dim=head_dim, rot=rot)  # fmt: skip
            check.findings.append(f"{tensors} of layers {layers} {what} where mlx-lm rotates "
                                  f"{'consecutive pairs' if trad else 'HF rotate_half pairs'} ({why}): scores "
                                  "differ; re-convert with mlx_lm convert from the HF checkpoint")  # fmt: skip
    check.summary = "weights: Q/K rows differ: " + check.findings[0]


def audit_verdict(mlx_dir: str, hf_dir: str) -> tuple[str, str, list[str]]:
    """``(verdict, explanation, details)`` of an audit's MLX weights row (see :func:`check_mlx`)."""
    from ..errors import PosencError

    try:
        check = check_mlx(mlx_dir, hf_dir)
    except PosencError as exc:
        return "error", f"weights not checked: {' '.join(str(exc).split())}", []
    verdict = {"agree": "agree", "differ": "differ"}.get(check.status, "skipped")
    details = [f"divergence: {f}" for f in check.findings] + [f"note: {n}" for n in check.notes]
    if check.expected:
        details.append(f"expected: {check.expected}")
    return verdict, check.summary, details
