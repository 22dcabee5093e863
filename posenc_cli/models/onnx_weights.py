r"""The query/key projections of an ONNX export against HF's weights, where they are initializers.

An exporter keeps a linear layer's weight as an initializer, under HF's parameter name or a name of its own
(torch.onnx's ``val_N``), as HF's ``[out, in]`` or transposed for ``MatMul`` (``[in, out]``: torch 2.13's dynamo
exporter writes every q/k projection that way). Each HF query/key projection (named by ``gguf``'s
``TensorNameMap``, as for MLX) is matched first to the initializer of its own name, else to the float
initializers of its shape either way round, and decided by its values: the first ``FLOAT_COLUMNS`` inputs of every
output row, rounded to the initializer's type, equal HF's under the expected row order or a known wrong one
(:func:`posenc_cli.models.qk_weights.candidates`). A projection no initializer holds (fused into one QKV matrix,
quantized, folded into another constant, or changed) is reported as not matched, never guessed. Each candidate
initializer is read once (whole, by onnx's ``numpy_helper``; external data only from the model's directory) and
only its first columns kept: unlike the GGUF check this reads every float initializer of a q/k shape, so an
export of a large model costs a read of those initializers.

The expected order follows from the graph's rotary op: ``RotaryEmbedding`` / ``GroupQueryAttention`` with
``interleaved`` (``rotary_interleaved``) 1 rotates consecutive pairs, so the rows must be permuted per head as
``convert_hf_to_gguf.py``'s ``LlamaModel.permute`` does; 0 rotates HF's halves. A graph with no such op rotates
with primitive ops (an export of HF's own ``rotate_half``: Slice, Neg, Concat), and its rows are expected as HF's;
the report says that this was assumed from the graph having no rotary op.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .qk_weights import FLOAT_COLUMNS, WeightsCheck, WeightsError, _one, _ranges, _rounded, hf_tensors, hf_weight_files

_FLOATS = {1: "F32", 10: "F16", 16: "BF16", 11: "F64"}


def _initializers(path: str) -> tuple[Any, dict[str, Any]]:
    from .onnx import _onnx

    onnx = _onnx()
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as exc:
        raise WeightsError(f"{path}: not an ONNX model ({type(exc).__name__}); give a .onnx file") from None
    inits: dict[str, Any] = {}
    for g in _graphs(model.graph):
        for init in g.initializer:
            inits.setdefault(init.name, init)
    return onnx, inits


def _graphs(graph: Any, depth: int = 0) -> list[Any]:
    out = [graph]
    if depth < 8:
        for node in graph.node:
            for attr in node.attribute:
                for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                    out += _graphs(sub, depth + 1)
    return out


def _array(onnx: Any, init: Any, path: str) -> np.ndarray:
    """An initializer's values (external data read only from inside the model's directory)."""
    base = os.path.dirname(os.path.abspath(path))
    if init.data_location == onnx.TensorProto.EXTERNAL:
        where = {e.key: e.value for e in init.external_data}.get("location", "")
        full = os.path.realpath(os.path.join(base, where))
        if os.path.isabs(where) or not full.startswith(os.path.realpath(base) + os.sep) or not os.path.isfile(full):
            raise WeightsError(f"{path}: initializer {init.name}'s external data {where!r} is not a file beside it")
    try:
        arr = onnx.numpy_helper.to_array(init, base_dir=base)
    except Exception as exc:
        raise WeightsError(f"{path}: initializer {init.name} cannot be read ({type(exc).__name__})") from None
    if _FLOATS.get(init.data_type) == "BF16" and arr.dtype != np.float32:
        arr = np.asarray(arr, dtype=np.float32)
    return np.asarray(arr)


def rotary_interleaved(onnx: Any, path: str) -> tuple[bool | None, str]:
    """Whether the graph's rotary ops rotate consecutive pairs (None: no rotary op), and what says so."""
    from .onnx import ROTARY_OPS

    model = onnx.load(path, load_external_data=False)
    seen: set[bool] = set()
    ops = []
    for g in _graphs(model.graph):
        for node in g.node:
            spec = ROTARY_OPS.get((node.domain, node.op_type))
            if spec is None or (node.op_type == "GroupQueryAttention"
                                and not any(a.name == "do_rotary" and a.i == 1 for a in node.attribute)):  # fmt: skip
                continue
            inter = next((a.i for a in node.attribute if a.name == spec[2]), 0)
            seen.add(bool(inter))
            ops.append(f"{node.op_type} {spec[2]}={inter}")
    if not seen:
        return None, "the graph has no rotary op (RotaryEmbedding, GroupQueryAttention): assumed HF's rotate_half"
    if len(seen) > 1:
        raise WeightsError(f"{path}: its rotary ops rotate both consecutive pairs and halves ({', '.join(ops)})")
    return seen.pop(), f"the graph's {ops[0]}"


def check_onnx_weights(path: str, hf_dir: str | None) -> WeightsCheck:
    """The ONNX model's q/k projection initializers against HF's weights in ``hf_dir``."""
    from .config_file import load_config
    from .mlx_weights import _projection_names
    from .readers import rotary_config

    check = WeightsCheck(path, hf_dir, "not checked", "", "", kind="onnx")
    files = hf_weight_files(hf_dir) if hf_dir and os.path.isdir(hf_dir) else []
    if not files:
        check.summary = "weights not checked: no HF safetensors beside the config"
        return check
    raw = load_config(os.path.join(hf_dir or ".", "config.json"))
    text = raw["text_config"] if isinstance(raw.get("text_config"), dict) else raw
    n_head = int(text.get("num_attention_heads") or 0)
    n_kv = int(text.get("num_key_value_heads") or n_head)
    head_dim = int(text.get("head_dim") or (int(text.get("hidden_size") or 0) // n_head if n_head else 0))
    mc = rotary_config(raw)
    rep = mc.report(None if mc.layer_types == ("default",) else mc.layer_types[0])
    hf_layout = str(rep.get("layout", {}).get("value", "half"))
    rot = int(rep.get("rotated_dims", {}).get("value") or head_dim)
    if not n_head or not head_dim or head_dim % 2 or rot % 2:
        raise WeightsError(f"{hf_dir}: head count {n_head} / head dim {head_dim} cannot split the Q/K rows")
    onnx, inits = _initializers(path)
    inter, why = rotary_interleaved(onnx, path)
    layout = "interleaved" if inter else "half"
    expected = "none" if layout == hf_layout else ("permute" if inter else "inverse")
    rows_text = "Q/K rows as HF's" if expected == "none" else f"Q rows permuted per {n_head} heads and K per {n_kv}"
    check.expected = f"{why}, which needs {rows_text}"
    if inter is None:
        check.notes.append(f"pairing: {why}")
    hf_all = hf_tensors(files)
    names = _projection_names(int(text.get("num_hidden_layers") or 0))
    floats = {n: i for n, i in inits.items() if i.data_type in _FLOATS}
    used: set[str] = set()
    how = {"by name": 0, "by shape and values": 0, "transposed": 0}
    views_of: dict[tuple[str, tuple[int, ...], int], list[tuple[np.ndarray, bool]]] = {}
    for hname in sorted(hf_all, key=lambda n: (names.get(n.rsplit(".", 1)[0], (0, ""))[0], n)):
        base, _, kind = hname.rpartition(".")
        if base not in names or kind not in ("weight", "bias"):
            continue
        layer, role = names[base]
        ht = hf_all[hname]
        heads, other = (n_head, n_kv) if role == "q" else (n_kv, n_head)
        shape = tuple(ht.shape)
        if shape[0] != heads * head_dim:
            raise WeightsError(f"{hname} has {shape[0]} rows; {heads} heads of {head_dim} need {heads * head_dim}")
        width = shape[1] if len(shape) > 1 else 1
        cols = min(FLOAT_COLUMNS, width)
        h = ht.first(cols)
        pool = [hname] if hname in floats else []
        pool += [n for n, i in floats.items() if n != hname and n not in used
                 and tuple(i.dims) in (shape, shape[::-1])]  # fmt: skip
        best = None
        for iname in pool:
            init = floats[iname]
            qname = _FLOATS[init.data_type]
            if (iname, shape, cols) not in views_of:  # each initializer read once: the first columns either way
                arr = _array(onnx, init, path)
                views = [(arr, False)] if arr.shape == shape else []
                if len(shape) == 2 and arr.shape == shape[::-1]:
                    views.append((arr.T, True))
                views_of[(iname, shape, cols)] = [
                    (np.asarray(v.reshape(shape[0], -1)[:, :cols], dtype=np.float32), t) for v, t in views
                ]
            for g, transposed in views_of[(iname, shape, cols)]:
                r = _one(iname, hname, layer, role, kind, heads, other, head_dim, rot, expected, g,
                         _rounded(h, qname), None)  # fmt: skip
                if r.found is not None and (best is None or r.found == "expected"):
                    best = (r, transposed)
                if r.found == "expected":
                    break
            if best is not None and best[0].found == "expected":
                break
        if best is None:
            check.unmatched.append(f"{hname} {list(shape)}" + (" (no initializer of its shape)" if not pool else
                                   f" ({len(pool)} initializer(s) of its shape, none holding its values)"))  # fmt: skip
            continue
        used.add(best[0].gguf)
        check.tensors.append(best[0])
        how["by name" if best[0].gguf == hname else "by shape and values"] += 1
        how["transposed"] += best[1]
    if check.tensors:
        check.notes.append(
            f"matched {how['by name']} HF projection(s) to the initializer of their name and "
            f"{how['by shape and values']} by shape and values ({how['transposed']} transposed, [in, out] for "
            "MatMul); the initializer of each is in --json's tensors"
        )
    _decide(check, inter, why, n_head, n_kv, rot)
    return check


def _decide(check: WeightsCheck, inter: bool | None, why: str, n_head: int, n_kv: int, rot: int) -> None:
    ts = check.tensors
    check.notes += [f"not matched: {u}" for u in check.unmatched]
    if not ts:
        check.summary = ("weights not checked: no initializer holds HF's query/key projections under any known "
                         f"row order ({len(check.unmatched)} not matched: fused, quantized, folded, or another "
                         "model's)")  # fmt: skip
        return
    if check.unmatched:
        check.notes.insert(0, f"matched {len(ts)} of {len(ts) + len(check.unmatched)} HF query/key projections")
    layers = _ranges([t.layer for t in ts])
    if all(t.found == "expected" for t in ts):
        check.status = "agree"
        check.summary = (f"weights: Q/K initializers of layers {layers} equal HF's ({check.expected.split(', which needs ')[1]})"
                         + (f"; {len(check.unmatched)} projection(s) not matched" if check.unmatched else ""))  # fmt: skip
        return
    check.status = "differ"
    by: dict[str, list[Any]] = {}
    for t in ts:
        if t.found != "expected":
            by.setdefault(t.found or "", []).append(t)
    pairs = "consecutive pairs" if inter else f"HF's rotate_half pairs (i, i+{rot // 2})"
    for found, members in by.items():
        names = sorted(dict.fromkeys(f"{m.role}_proj.{m.kind}" for m in members), key=lambda n: (n[0] != "q", n))
        what = {"norm-permuted": "are permuted per head to consecutive pairs (llama.cpp's NORM order)",
                "none": "hold HF's rows unpermuted", "other-heads": "are permuted with the other side's head count",
                "whole-head": "are permuted over whole heads where only part rotates", "twice": "are permuted twice",
                "inverse": "hold the inverse permutation"}.get(found, f"hold {found}")  # fmt: skip
        check.findings.append(
            f"{' and '.join(names)} of layers {_ranges([m.layer for m in members])} {what} where the graph rotates "
            f"{pairs} ({why}): scores differ; re-export from the HF checkpoint"
        )
    check.summary = "weights: Q/K rows differ: " + check.findings[0]


def weights_for(path: str, config: Any) -> WeightsCheck | None:
    """The weights check of an ONNX model against the HF weights beside ``config`` (None: there are none, so
    nothing is said about them)."""
    from .qk_weights import hf_weights_dir

    hf_dir = hf_weights_dir(config)
    if hf_dir is None or not hf_weight_files(hf_dir):
        return None
    return check_onnx_weights(path, hf_dir)


def audit_verdict(path: str, config_path: str) -> tuple[str, str, list[str]] | None:
    """``(verdict, explanation, details)`` of an audit's ONNX weights row; None without HF weights."""
    from ..errors import PosencError

    try:
        check = weights_for(path, config_path)
    except PosencError as exc:
        return "error", f"weights not checked: {' '.join(str(exc).split())}", []
    if check is None:
        return None
    verdict = {"agree": "agree", "differ": "differ"}.get(check.status, "skipped")
    details = [f"divergence: {f}" for f in check.findings] + [f"note: {n}" for n in check.notes]
    if check.expected:
        details.append(f"expected: {check.expected}")
    return verdict, check.summary, details
