"""ONNX models built with onnx.helper in onnxruntime-genai's conventions, their caches computed with plain numpy
following microsoft/onnxruntime-genai src/python/py/models/builders/base.py (commit a0c04eb):
``make_rotary_embedding_caches_from_scratch`` (float32 inv_freq = 1 / (rescale * theta ** (arange(0, d, 2) / d)),
``make_inv_freq_rescaled_with_ntk`` (YaRN, correction range never rounded), ``make_mscale``, the cast to the I/O
dtype and the half-width slice), and ``make_rotary_embedding_multi_cache`` (Phi LongRoPE: an If whose then
branch, taken when Greater(seq_len, original), holds the large caches; or [small; large] concatenated).

Used by tests/test_onnx.py and by tools/golden/make_onnx_golden.py (which runs them on onnxruntime and
onnx.reference). Nothing here is posenc's code.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

#: the unscaled float32 cos/sin rows built so far in this process (and the inv_freq they come from), by the
#: arguments that decide a row's values: length, mscale and the I/O dtype only scale, cut and cast those rows
_RAW: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def genai_caches(
    head_size: int,
    theta: float,
    length: int,
    *,
    rot_dim: int | None = None,
    rescale: float | np.ndarray = 1.0,
    yarn: dict | None = None,
    mscale: float = 1.0,
    io_dtype: str = "float32",
    round_range: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin caches (length, rot_dim/2) as the builder makes them (``round_range``: floor/ceil the YaRN
    correction range, as HF does with truncate true, which the builder never does); new arrays for each caller
    (a test may change them).

    Each row depends only on its position: the unscaled rows of one set of frequencies are computed once per
    process and grown when a longer cache is asked for (LongRoPE's short cache is the first rows of a long one
    with the same factors; an export without the mscale holds the same rows unscaled)."""
    f32 = np.float32
    r = np.asarray(rescale, dtype=np.float64)
    key = (head_size, float(theta), rot_dim, r.shape, r.tobytes(), repr(sorted((yarn or {}).items())), yarn is None,
           round_range)  # fmt: skip
    if key not in _RAW:
        inv = _inv_freq(head_size, theta, rot_dim=rot_dim, rescale=rescale, yarn=yarn, round_range=round_range)
        _RAW[key] = (inv, np.empty((0, inv.size), f32), np.empty((0, inv.size), f32))
    inv_freq, cos, sin = _RAW[key]
    if cos.shape[0] < length:  # grown in place of a new pair: the rows so far copied, the others computed into it
        have = cos.shape[0]
        grown = np.empty((length, inv_freq.size), f32), np.empty((length, inv_freq.size), f32)
        grown[0][:have], grown[1][:have] = cos, sin
        _unscaled_rows(inv_freq, have, length, out=grown)
        cos, sin = grown
        _RAW[key] = (inv_freq, cos, sin)
    # the builder's steps: the float32 cos/sin times the float32 mscale, then the cast to the I/O dtype
    scaled = [(part[:length] * f32(mscale)).astype(f32, copy=False) for part in (cos, sin)]  # new arrays
    return scaled[0].astype(io_dtype, copy=False), scaled[1].astype(io_dtype, copy=False)


def _inv_freq(
    head_size: int,
    theta: float,
    *,
    rot_dim: int | None = None,
    rescale: float | np.ndarray = 1.0,
    yarn: dict | None = None,
    round_range: bool = False,
) -> np.ndarray:
    """The builder's float32 inv_freq (rescaled; YaRN's ramp between the interpolated and plain frequencies)."""
    f32 = np.float32
    dim = rot_dim or head_size
    expo = np.arange(0, dim, 2).astype(f32) / f32(dim)
    # float32 steps, each correctly rounded (computed in float64, rounded once): NumPy's own float32 power and
    # cos/sin differ in the last bit with the CPU's vector width, and the stored runtime outputs must not
    pw = np.power(np.float64(f32(theta)), expo.astype(np.float64)).astype(f32)
    inv_freq = (f32(1.0) / (np.asarray(rescale, dtype=f32) * pw)).astype(f32)
    if yarn is not None:
        d_half = head_size / 2
        orig, bf, bs, factor = yarn["original"], yarn["beta_fast"], yarn["beta_slow"], yarn["factor"]
        low = d_half * np.log(orig / (bf * 2 * np.pi)) / np.log(theta)
        high = d_half * np.log(orig / (bs * 2 * np.pi)) / np.log(theta)
        if round_range:
            low, high = max(math.floor(low), 0), min(math.ceil(high), dim - 1)
        ramp = (np.arange(int(d_half), dtype=f32) - f32(low)) / f32(high - low)
        mask = f32(1) - np.clip(ramp, 0, 1)
        interp = inv_freq / f32(factor)
        inv_freq = (interp * (f32(1) - mask) + inv_freq * mask).astype(f32)
    return inv_freq


def _unscaled_rows(inv_freq: np.ndarray, start: int, stop: int, out: tuple[np.ndarray, np.ndarray]) -> None:
    """float32 cos/sin of positions ``start .. stop - 1`` times ``inv_freq`` (the float32 angles, their cosine
    and sine correctly rounded to float32), before the mscale, into those rows of ``out`` (cos, sin): no array of
    the rows' size is made (a fresh 25 MB array cost ~0.05-0.09 CPU-s of page faults here, more than its copy)."""
    f32 = np.float32
    t = np.arange(start, stop, dtype=np.int64).astype(f32)
    cos, sin = out
    for a in range(0, stop - start, 4096):  # row by row the same values; blocks keep the float64 temporaries small
        freqs = np.outer(t[a : a + 4096], inv_freq).astype(f32).astype(np.float64)
        cos[start + a : start + a + 4096] = np.cos(freqs)  # (assigned into float32: the same rounding as astype)
        sin[start + a : start + a + 4096] = np.sin(freqs)


def yarn_mscale(factor: float) -> float:
    return 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0


def su_mscale(factor: float, original: int) -> float:
    return math.sqrt(1 + math.log(factor) / math.log(original)) if factor > 1 else 1.0


_ONNX_TYPES = {"float32": 1, "float16": 10, "bfloat16": 16}


def rotary_model(
    caches: dict,
    *,
    num_heads: int,
    head_size: int,
    op: str = "contrib",
    interleaved: int = 0,
    rotary_dim: int = 0,
    io_dtype: str = "float32",
    layout: str = "initializer",
    threshold: int | None = None,
    kv_num_heads: int | None = None,
    data_file: str | None = None,
):
    """A model with one rotary node (``op``: contrib RotaryEmbedding, onnx RotaryEmbedding opset 23, or gqa) that
    rotates ``X`` (batch 1, seq, num_heads * head_size) at ``position_ids``.

    ``caches``: {"": (cos, sin)} for one cache, {"small": ..., "large": ...} for LongRoPE; ``layout``:
    "initializer", "constant", "if" (then = large) or "concat" ([small; large] as one initializer).
    ``data_file``: the caches' bytes are written there (a new file, one after the other, as ``save(..., external=)``
    lays them out) and the model refers to them as external data (``save(model, path)`` in the same folder then
    writes the graph alone): no copy of the caches into the protos and out again (the docs' 50 MB of LongRoPE
    caches, written three times by tools/make_onnx_example.py)."""
    from onnx import TensorProto, helper, numpy_helper

    out = open(data_file, "xb") if data_file is not None else None  # noqa: SIM115 (closed below)

    def tensor(name, arr):
        arr = np.ascontiguousarray(arr)
        if out is None or arr.size == 0:
            return numpy_helper.from_array(arr, name)
        assert sys.byteorder == "little"  # ONNX stores little-endian bytes, as tofile writes them here
        t = numpy_helper.from_array(arr[:0], name)
        t.ClearField("raw_data")
        t.dims[:] = arr.shape
        offset = out.tell()
        arr.tofile(out)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", os.path.basename(data_file)), ("offset", offset), ("length", arr.nbytes)):
            entry = t.external_data.add()
            entry.key, entry.value = key, str(value)
        return t

    nodes, inits = [], []
    if layout in ("initializer", "constant"):
        cos, sin = caches[""]
        if layout == "initializer":
            inits += [tensor("cos_cache", cos), tensor("sin_cache", sin)]
        else:
            nodes += [
                helper.make_node(
                    "Constant", [], ["cos_cache"], name="/model/cos_cache/Constant", value=tensor("c", cos)
                ),
                helper.make_node(
                    "Constant", [], ["sin_cache"], name="/model/sin_cache/Constant", value=tensor("s", sin)
                ),
            ]
    elif layout == "concat":
        (cs, ss), (cl, sl) = caches["small"], caches["large"]
        inits += [tensor("cos_cache", np.concatenate([cs, cl])), tensor("sin_cache", np.concatenate([ss, sl]))]
    elif layout == "concat-node":  # [small; large] joined by a Concat node in the graph
        (cs, ss), (cl, sl) = caches["small"], caches["large"]
        inits += [tensor("cos_small", cs), tensor("cos_large", cl), tensor("sin_small", ss), tensor("sin_large", sl)]
        nodes += [
            helper.make_node("Concat", ["cos_small", "cos_large"], ["cos_cache"], name="/model/cos/Concat", axis=0),
            helper.make_node("Concat", ["sin_small", "sin_large"], ["sin_cache"], name="/model/sin/Concat", axis=0),
        ]
    elif layout == "cast":  # narrow caches stored, cast to the I/O dtype in the graph
        cos, sin = caches[""]
        inits += [tensor("cos_stored", cos), tensor("sin_stored", sin)]
        nodes += [
            helper.make_node("Cast", ["cos_stored"], ["cos_cache"], name="/model/cos/Cast", to=_ONNX_TYPES[io_dtype]),
            helper.make_node("Cast", ["sin_stored"], ["sin_cache"], name="/model/sin/Cast", to=_ONNX_TYPES[io_dtype]),
        ]
    elif layout == "if":
        # the branches' Constant nodes hold empty tensors while the graphs are nested (each nesting copies the
        # protos: 5 copies of the docs' 50 MB of LongRoPE caches); the values are put in the finished model
        fill: dict[str, np.ndarray] = {}

        def branch(name, cos, sin, tag):
            fill[f"/{tag}/cos_cache/Constant"], fill[f"/{tag}/sin_cache/Constant"] = cos, sin
            c = helper.make_node(
                "Constant", [], [f"cos_cache_{tag}"], name=f"/{tag}/cos_cache/Constant", value=tensor("c", cos[:0])
            )
            s = helper.make_node(
                "Constant", [], [f"sin_cache_{tag}"], name=f"/{tag}/sin_cache/Constant", value=tensor("s", sin[:0])
            )
            outs = [
                helper.make_tensor_value_info(f"cos_cache_{tag}", _ONNX_TYPES[str(cos.dtype)], list(cos.shape)),
                helper.make_tensor_value_info(f"sin_cache_{tag}", _ONNX_TYPES[str(sin.dtype)], list(sin.shape)),
            ]
            return helper.make_graph([c, s], name, [], outs)

        inits.append(numpy_helper.from_array(np.array(threshold, dtype=np.int64), "/model/constants/INT64/original"))
        nodes += [
            helper.make_node("Shape", ["position_ids"], ["/model/pos_shape"], name="/model/rope_caches_subgraph/Shape"),
            helper.make_node(
                "Gather",
                ["/model/pos_shape", "/model/constants/INT64/one"],
                ["/model/seq_len"],
                name="/model/rope_caches_subgraph/Gather",
                axis=0,
            ),
            helper.make_node(
                "Greater",
                ["/model/seq_len", "/model/constants/INT64/original"],
                ["/model/greater"],
                name="/model/rope_caches_subgraph/Greater",
            ),
            helper.make_node(
                "If",
                ["/model/greater"],
                ["cos_cache", "sin_cache"],
                name="/model/rope_caches_subgraph/If",
                then_branch=branch("large_rope_caches_graph", *caches["large"], "large"),
                else_branch=branch("small_rope_caches_graph", *caches["small"], "small"),
            ),
        ]
        inits.append(numpy_helper.from_array(np.array(1, dtype=np.int64), "/model/constants/INT64/one"))
    hidden = num_heads * head_size
    t_io = _ONNX_TYPES[io_dtype]
    x = helper.make_tensor_value_info("X", t_io, [1, "seq", hidden])
    pos = helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, "seq"])
    y = helper.make_tensor_value_info("Y", t_io, [1, "seq", hidden])
    opsets = [helper.make_opsetid("", 23)]
    if op == "contrib":
        nodes.append(
            helper.make_node(
                "RotaryEmbedding",
                ["X", "position_ids", "cos_cache", "sin_cache"],
                ["Y"],
                name="/model/layers.0/attn/q_rotary/RotaryEmbedding",
                domain="com.microsoft",
                interleaved=interleaved,
                num_heads=num_heads if rotary_dim else 0,
                rotary_embedding_dim=rotary_dim,
            )
        )
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    elif op == "onnx":
        x = helper.make_tensor_value_info("X", t_io, [1, num_heads, "seq", head_size])
        y = helper.make_tensor_value_info("Y", t_io, [1, num_heads, "seq", head_size])
        nodes.append(
            helper.make_node(
                "RotaryEmbedding",
                ["X", "cos_cache", "sin_cache", "position_ids"],
                ["Y"],
                name="/model/layers.0/attn/RotaryEmbedding",
                interleaved=interleaved,
                rotary_embedding_dim=rotary_dim,
            )
        )
    else:  # GroupQueryAttention(do_rotary=1): the caches are inputs 7 and 8
        nodes.append(
            helper.make_node(
                "GroupQueryAttention",
                ["X", "", "", "", "", "seqlens_k", "total_seq_len", "cos_cache", "sin_cache"],
                ["Y"],
                name="/model/layers.0/attn/GroupQueryAttention",
                domain="com.microsoft",
                do_rotary=1,
                rotary_interleaved=interleaved,
                num_heads=num_heads,
                kv_num_heads=kv_num_heads or num_heads,
            )
        )
        opsets.append(helper.make_opsetid("com.microsoft", 1))
        inits += [
            numpy_helper.from_array(np.array([0], dtype=np.int32), "seqlens_k"),
            numpy_helper.from_array(np.array(1, dtype=np.int32), "total_seq_len"),
        ]
    graph = helper.make_graph(nodes, "rope", [x, pos], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=opsets, producer_name="tests/onnx_models.py")
    model.ir_version = 10
    if layout == "if":
        for node in model.graph.node:
            for attr in node.attribute if node.op_type == "If" else ():
                for const in attr.g.node:
                    value = const.attribute[0].t
                    value.CopyFrom(tensor(value.name, fill[const.name]))
    if out is not None:
        out.close()
    return model


def save(model, path: str, external: str | None = None) -> None:
    """Save ``model``; ``external``: every initializer's data in that file next to it (as model.onnx.data)."""
    import onnx

    if external is None:
        onnx.save(model, path)
    else:
        onnx.save(
            model,
            path,
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=external,
            size_threshold=0,
            convert_attribute=True,
        )
