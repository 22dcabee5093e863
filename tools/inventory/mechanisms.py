"""Every mechanism that places positions, per component, observed by running the model's own code (issue 36.1).

Called from ``make_inventory.visit`` in the side venv. The model is built on the ``meta`` device (no memory, no
arithmetic) under a :class:`Trace` (a ``TorchFunctionMode``) that follows two kinds of values through every torch
call, from the constructor on:

* *positions*: what ``torch.arange`` or ``cumsum`` makes (position ids, relative distances, Swin's
  ``relative_position_index``, sinusoids' angles), and whatever is computed from it without the tokens; a
  comparison (a mask) ends it. ``sin``/``cos``/``polar`` of positions marks them trigonometric.
* *token states*: the component's input (``input_ids``, ``pixel_values``, ``input_values``, ...) and everything
  computed from it; a product of two token-state tensors (``q @ k``) is attention *scores*.

A parameter or buffer that is looked up or indexed (``F.embedding``, ``t[index]``, ``gather``) or carried by
shape-only ops (slicing, ``expand``, ``interpolate``) is a *table*; one that enters ``linear``/``matmul`` is a
weight, not a table. Each component's root module (the module built from the config or sub-config) runs its own
forward on meta inputs made from its signature; where positions meet token states the trace records:

========================  ======================================================================================
mechanism                 what met the token states
========================  ======================================================================================
``learned``               a trainable table (parameter, ``requires_grad``) added to token states, looked up by
                          positions or added whole (ViT's ``position_embeddings``)
``fixed``                 a table held as a buffer or a frozen parameter added to token states (CTRL's
                          ``pos_encoding``, Whisper's encoder, ViT-MAE's sin-cos); ``sinusoid: true`` when the
                          trace saw it made by ``sin``/``cos`` of positions
``sinusoidal``            sinusoids of positions computed in the forward, added to token states (DETR's 2-D sine)
``convolutional``         a convolution over the sequence (kernel > 1) of the token states, added back to them
                          before any other mixing (wav2vec2's ``pos_conv_embed``, PVT's position generators)
``rotary``                token states (q, k) multiplied by sinusoids of positions
``relative_bias``         a table gathered by (relative) positions and added to attention scores (T5, Swin, CPM-Ant)
``relative``              positions (sinusoids, a table looked up by distances) multiplied with token states
                          (Transformer-XL / XLNet / Funnel, DeBERTa's c2p/p2c, distance embeddings), or scores
                          gathered by relative positions
``alibi``                 a bias of positions without a table added to attention scores
========================  ======================================================================================

A component whose forward ran and where nothing of these happened has ``none`` (evidence ``trace``). Where the
forward cannot run on meta, the module tree is read instead: ``evidence: structure`` (a rotary module holding
``inv_freq``, a frozen or buffer table) or ``evidence: name`` (a module or tensor named for positions: the last
resort, said so in the record).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import re
import sys
from typing import Any

import torch
import transformers
from torch.overrides import TorchFunctionMode

F = torch.nn.functional

#: the component's input, by the name its forward takes it under (first found wins)
INPUTS = (
    ("input_ids", "text"),
    ("pixel_values", "vision"),
    ("pixel_values_videos", "video"),
    ("input_values", "audio"),
    ("input_features", "audio"),
    ("inputs_embeds", "text"),
    ("past_values", "time series"),
    ("hidden_states", "features"),
)

_SHAPE = {
    "view", "reshape", "permute", "transpose", "unsqueeze", "squeeze", "expand", "expand_as", "flatten",
    "contiguous", "clone", "to", "float", "type_as", "type", "detach", "narrow", "__getitem__", "repeat",
    "interpolate", "chunk", "split", "unflatten", "t", "movedim", "half", "bfloat16", "double", "long", "int",
    "repeat_interleave", "tile", "flip", "roll", "select", "index_select", "embedding", "gather", "take",
    "cat", "stack", "concat", "concatenate", "broadcast_to", "unbind", "meshgrid", "requires_grad_", "mul",
    "__mul__", "__rmul__", "div", "__truediv__", "add", "__add__", "__radd__", "sub", "__sub__", "__rsub__",
    "neg", "__neg__", "copy", "fill", "zero", "pad", "__setitem__", "reshape_as", "view_as",
}  # fmt: skip
_LOOKUP = {"embedding", "__getitem__", "index_select", "gather", "take"}
_TRIG = {"sin", "cos", "polar", "sin_", "cos_"}
_COMPARE = {
    "eq", "ne", "lt", "le", "gt", "ge", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
    "logical_and", "logical_or", "logical_not", "__and__", "__or__", "__invert__", "isin", "tril", "triu",
    "masked_fill", "masked_fill_", "where", "bool",
}  # fmt: skip
#: ops whose second tensor gives only a shape, dtype or device
_LIKE = {"expand_as", "type_as", "view_as", "reshape_as", "to", "broadcast_to"}
#: ops whose output holds none of their input's values
_FRESH = {"ones_like", "zeros_like", "full_like", "empty_like", "new_ones", "new_zeros", "new_full", "new_empty",
          "size", "dim", "numel", "shape"}  # fmt: skip
#: fresh tensors shaped like their input: a sequence made from a table's shape keeps the table as its origin
_FRESH_OF = {"ones_like", "zeros_like", "full_like", "empty_like"}
_C2P_KEEP = {"squeeze", "unsqueeze", "expand", "div", "__truediv__", "mul", "__mul__"}
_DIV = {"div", "__truediv__", "__rtruediv__", "true_divide"}
_ADD = {"add", "__add__", "__radd__", "add_", "__iadd__", "sub", "__sub__", "__rsub__", "sub_", "__isub__"}
_MUL = {"mul", "__mul__", "__rmul__", "mul_", "__imul__"}
_PRODUCT = {"matmul", "__matmul__", "bmm", "einsum", "baddbmm", "mm", "linear", "scaled_dot_product_attention"}
_UNARY = {"gelu", "relu", "silu", "tanh", "sigmoid", "elu", "leaky_relu", "dropout", "mish", "softplus"}
#: ops through which a convolution's output stays "the convolution's" (activation, padding removal, reshapes)
_CONV_KEEP = _UNARY | {"view", "reshape", "permute", "transpose", "__getitem__", "contiguous", "flatten",
                       "narrow", "to", "float", "type_as", "chunk", "unflatten", "layer_norm", "group_norm",
                       "batch_norm"}  # fmt: skip


def _name(func: Any) -> str:
    return str(getattr(func, "__name__", "") or getattr(func, "_name", "") or func)


class Tag:
    """What one tensor carries: ``pos`` (positional sources: ``arange``, ``cumsum``, ``trig``), ``tables``
    (parameters/buffers carried as tables), ``tok`` (token state), ``scores``, ``conv`` (``(module, base)`` of
    the convolution it came from), ``base`` (id of the token-state tensor it is a reshape of), ``lookup_nonpos``
    (looked up by indices that are not positions: token types)."""

    __slots__ = (
        "base",
        "c2p",
        "conv",
        "nonpos",
        "pos",
        "proj",
        "rot",
        "scores",
        "seq",
        "tables",
        "tok",
        "trig",
        "where",
    )

    def __init__(self) -> None:
        self.pos: frozenset[str] = frozenset()
        self.tables: frozenset[str] = frozenset()
        self.tok = False
        self.scores = False
        self.conv: tuple[str, int] | None = None
        self.base: int | None = None
        self.nonpos = False
        self.where: str | None = None
        self.proj = False  # weights (a parameter in linear/matmul) were applied to the positions
        self.trig = False  # sin/cos of token-state values (LightGlue's keypoint coordinates, projected)
        self.rot: tuple[str, Tag] | None = None  # token states times sinusoids of positions, not yet summed
        self.c2p = False  # token states times a projected table (DeBERTa's content-to-position scores)
        self.seq: frozenset[str] = frozenset()  # tables the sequence axis was made from (DETR's object queries)


class Trace(TorchFunctionMode):
    """Follows positions and token states through every torch call (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[int, tuple[Any, Tag]] = {}  # id -> (tensor, tag): the tensor kept alive so ids stay unique
        self.names: dict[int, str] = {}  # parameters / buffers: id -> dotted path
        self.frozen: set[str] = set()
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.buffers: set[str] = set()
        self.stack: list[str] = []
        self.classes: dict[str, str] = {}
        self.events: list[dict[str, Any]] = []

    # ----- tags
    def tag(self, t: Any) -> Tag | None:
        if not torch.is_tensor(t):
            return None
        got = self.tags.get(id(t))
        if got is not None and got[0] is t:
            return got[1]
        name = self.names.get(id(t))
        if name is not None:
            tag = Tag()
            tag.tables = frozenset({name})
            return tag
        return None

    def set(self, t: Any, tag: Tag) -> None:
        if torch.is_tensor(t):
            self.tags[id(t)] = (t, tag)

    def name_tensors(self, model: torch.nn.Module) -> None:
        """Parameters and buffers by path; a buffer keeps the tag its constructor gave it."""
        for n, t in [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False)]:
            self.shapes[n] = tuple(t.shape)
        for n, p in model.named_parameters(remove_duplicate=False):
            self.names.setdefault(id(p), n)
            if not p.requires_grad:
                self.frozen.add(n)
        for n, b in model.named_buffers(remove_duplicate=False):
            self.names.setdefault(id(b), n)
            self.buffers.add(n)
        for n, m in model.named_modules():
            self.classes[n] = type(m).__name__

    def token_input(self, t: torch.Tensor) -> None:
        tag = Tag()
        tag.tok = True
        self.set(t, tag)

    # ----- the mode
    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        with contextlib.suppress(Exception):  # the observation must never change what the model does
            self.observe(_name(func), func, args, kwargs, out)
        return out

    def observe(self, op: str, func: Any, args: Any, kwargs: Any, out: Any) -> None:
        if op.endswith("_") and not op.endswith("__") and op not in ("masked_fill_", "index_put_", "masked_scatter_"):
            op = op[:-1]  # in place: the same op (add_ is add)
        flat: list[Any] = []
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, (list, tuple)):
                flat.extend(a)
            else:
                flat.append(a)
        tensors = [a for a in flat if torch.is_tensor(a)]
        if op in _LIKE and args and torch.is_tensor(args[0]):
            tensors = [args[0]]  # the other tensor gives only a shape, dtype or device (XLM's expand_as)
            args, kwargs = (args[0],), {}
        outs = [o for o in (out if isinstance(out, (list, tuple)) else [out]) if torch.is_tensor(o)]
        if op in ("__setitem__", "index_put_", "masked_scatter_") and args and torch.is_tensor(args[0]):
            outs = [args[0]]  # written in place: the target now holds what was written (its old tag kept too)
        if not outs:
            return
        if op in _FRESH:
            t0 = self.tag(tensors[0]) if op in _FRESH_OF and tensors else None
            if t0 is not None and not t0.tok and not t0.pos and (t0.seq or t0.tables):
                # zeros_like(table): a sequence made from the table's shape (DETR's decoder queries start so)
                tag = Tag()
                tag.seq = _seq(t0)
                for o in outs:
                    self.set(o, tag)
            return
        if op == "arange":
            tag = Tag()
            tag.pos = frozenset({"arange"})
            tag.where = self.stack[-1] if self.stack else ""
            for o in outs:
                self.set(o, tag)
            return
        tags = [(a, self.tag(a)) for a in tensors]
        toks = [(a, t) for a, t in tags if t is not None and t.tok]
        others = [(a, t) for a, t in tags if t is None or not t.tok]
        new = Tag()
        if toks:
            new.tok = True
            self.meet(op, args, kwargs, out, toks, others, new)
        else:
            if op in _COMPARE:
                # compared positions (T5's direction bit, a causal mask): still positions, marked
                pos = [t.pos for _, t in others if t is not None and t.pos]
                if pos:
                    new.pos = frozenset().union(*pos) | {"cmp"}
            else:
                present = [t for _, t in others if t is not None]
                if op in _LOOKUP and len(tensors) >= 2:
                    data_t = self.tag(tensors[1] if op == "embedding" else tensors[0])
                    index_t = self.tag(tensors[0] if op == "embedding" else tensors[1])
                    data = tensors[1] if op == "embedding" else tensors[0]
                    if not data.is_floating_point() and not data.is_complex():
                        # an integer table looked up gives its own values: positions only if they are
                        new.pos = data_t.pos if data_t else frozenset()
                        new.nonpos = not new.pos
                    elif index_t is not None and index_t.pos and _whole(tensors, op):
                        # every row of the table, by an arange as long as it is: the table itself (Pegasus-X's
                        # global tokens, CLIP's position_ids), not positions looked up in it
                        new.tables = data_t.tables if data_t else frozenset()
                    elif index_t is not None and index_t.pos:
                        new.pos = index_t.pos
                        new.tables = (data_t.tables if data_t else frozenset()) | index_t.tables
                    elif op in ("embedding", "index_select", "gather", "take") or (
                        index_t is not None and index_t.tables
                    ):
                        # looked up by token types, or ids that are no positions: not a table of positions
                        # (Kosmos-2.5's segment embedding added to its sinusoids is not part of them)
                        new.nonpos = True
                    else:
                        new.pos = frozenset().union(*(t.pos for t in present)) if present else frozenset()
                        new.tables = frozenset().union(*(t.tables for t in present)) if present else frozenset()
                        new.nonpos = any(t.nonpos for t in present)
                else:
                    new.pos = frozenset().union(*(t.pos for t in present)) if present else frozenset()
                    if (
                        op in _SHAPE
                        or op in _TRIG
                        or op
                        in (
                            "cumsum",
                            "exp",
                            "pow",
                            "floor_divide",
                            "log",
                            "abs",
                            "clamp",
                            "min",
                            "max",
                            "sign",
                            "sqrt",
                            "outer",
                        )
                    ):
                        new.tables = frozenset().union(*(t.tables for t in present)) if present else frozenset()
                    new.nonpos = any(t.nonpos for t in present)
                    if op == "cumsum":
                        new.pos = new.pos | {"cumsum"}
                    if op in _MUL | _DIV | {"outer"} and new.pos and "cumsum" not in new.pos and len(tensors) == 2:
                        # values that are not positions (a float tensor of two or more values) times frequencies
                        # made by arange (not counted positions: OPT's cumsum of the mask times the mask): sinusoids of coordinates the model computes (DAB-DETR's anchor boxes,
                        # Conditional DETR's reference points), not of token positions
                        plain = [
                            a for a in tensors
                            if a.is_floating_point() and a.numel() > 1 and a.ndim >= 2
                            and _coordinates(self.tag(a))
                        ]  # fmt: skip
                        if plain:
                            new.pos = new.pos | {"coord"}
                    if op in _TRIG and new.pos:
                        new.pos = new.pos | {"trig"}
                    if op in ("outer", "einsum", "matmul", "mul", "__mul__", "__rmul__") and any(
                        "trig" in t.pos for t in present
                    ):
                        pass
                wh = [t.where for t in present if t.where]
                new.where = wh[0] if wh else (self.stack[-1] if self.stack else "")
                new.proj = any(t.proj for t in present) or (
                    op in _PRODUCT | {"conv1d", "conv2d"} and any(t.tables and not t.pos for t in present)
                )
                if op in _TRIG and new.pos:
                    new.where = self.stack[-1] if self.stack else ""
        if not new.tok:
            first = self.tag(tensors[0]) if tensors else None
            if op in _PRODUCT:  # rows of a product are its first operand's
                new.seq = _seq(first) if first is not None else frozenset()
            else:
                new.seq = frozenset().union(*(_seq(t) for _, t in tags if t is not None))
        if new.tok or new.pos or new.tables or new.nonpos or new.proj or new.seq:
            for o in outs:
                self.set(o, new)

    def meet(self, op: str, args: Any, kwargs: Any, out: Any, toks: list, others: list, new: Tag) -> None:
        """An op with token states among its inputs: what it does with positions there, and the output's tag."""
        tt = [t for _, t in toks]
        where = self.stack[-1] if self.stack else ""
        out0 = out if torch.is_tensor(out) else next((o for o in out if torch.is_tensor(o)), None)
        if (
            out0 is not None
            and not out0.is_floating_point()
            and not out0.is_complex()
            and op not in ("cat", "stack", "concat", "concatenate")
        ):
            # integer/bool results (indices: CPM-Ant's buckets of segments and distances) keep their positions
            pos = [t.pos for _, t in toks + others if t is not None and t.pos]
            if op in _LOOKUP and len(args) >= (2 if op == "embedding" else 1):  # an integer table's values
                data_t = self.tag(args[1] if op == "embedding" else args[0])
                pos = [data_t.pos] if data_t is not None and data_t.pos else []
            if op == "cumsum":  # counting tokens: positions (ESM's and RoBERTa's ids after padding)
                pos.append(frozenset({"cumsum"}))
            if pos:
                new.pos = frozenset().union(*pos)
        if op in _LOOKUP and len(toks) == 1 and toks[0][1].pos:
            index_t = toks[0][1]
            data = args[1] if op == "embedding" else args[0]
            data_t = self.tag(data)
            if data_t is not None and not data_t.tok and torch.is_tensor(data) and data.is_floating_point():
                # a table looked up by indices made of positions (and token segments): a table of positions
                new.tok, new.pos, new.tables = False, index_t.pos, data_t.tables
                return
        # the output: token state; scores when two token states multiply
        if (op in _PRODUCT and op != "linear" and len(toks) >= 2) or (all(t.scores for t in tt) and op not in _PRODUCT):
            new.scores = True
        if op in _CONV_KEEP and len(toks) == 1 and tt[0].conv is not None:
            new.conv = tt[0].conv
        first_t = next((a for a in _flat(args) if torch.is_tensor(a)), None)  # (einsum's equation skipped)
        first = self.tag(first_t) if first_t is not None else None
        if op in _PRODUCT and first is not None:  # a product's rows are its first operand's (q in q @ k)
            new.seq = _seq(first)
        elif op in _ADD:
            new.seq = frozenset().union(*(t.seq for t in tt))
        else:  # weights of the queries times sampled values (Deformable DETR), grid_sample's grid: theirs too
            new.seq = frozenset().union(*(t.seq for t in tt), *(_seq(t) for _, t in others if t is not None))
        # token states times a projected table (DeBERTa's c2p/p2c: query x key_proj(rel_embeddings)), reshaped
        product = op in _PRODUCT and op != "linear" and len(toks) == 1
        new.c2p = (product and any(t is not None and t.proj and not t.pos and not t.tok for _, t in others)) or (
            len(toks) == 1 and tt[0].c2p and op in _CONV_KEEP | _C2P_KEEP
        )
        if len(toks) == 1 and tt[0].rot is not None and op in _CONV_KEEP:
            new.rot = tt[0].rot
        new.trig = len(toks) == 1 and (op in _TRIG or (tt[0].trig and op in _SHAPE))
        if op in (
            "view",
            "reshape",
            "permute",
            "transpose",
            "contiguous",
            "unsqueeze",
            "squeeze",
            "flatten",
            "__getitem__",
            "avg_pool1d",
            "max_pool1d",
            "narrow",
        ):  # the same states, reshaped or pooled
            new.base = tt[0].base if tt[0].base is not None else id(toks[0][0])
        if op in ("conv1d", "conv2d", "conv3d") and len(args) >= 2 and torch.is_tensor(args[1]):
            w = args[1]
            groups = args[6] if len(args) > 6 else kwargs.get("groups", 1)
            if tt[0].conv is not None:  # a stack of convolutions (data2vec-audio's): the first one's input
                new.conv = tt[0].conv
            elif any(int(k) > 1 for k in w.shape[2:]) and isinstance(groups, int) and groups > 1:
                base = tt[0].base if tt[0].base is not None else id(toks[0][0])
                new.conv = (f"{where} groups={groups} kernel={tuple(int(k) for k in w.shape[2:])}", base)
        pos_others = [(a, t) for a, t in others if t is not None and t.pos]
        ref = toks[0][0]
        table_others = [
            (a, t) for a, t in others
            if t is not None and t.tables and not t.nonpos and not t.pos and torch.is_tensor(a)
            and _along_sequence(a, ref)
        ]  # fmt: skip
        if op in _ADD:
            if len(toks) >= 2 and all(t.rot is not None for t in tt):
                # x * cos + rotated(x) * sin: a rotation of the token states by angles of positions
                self.event("rotary", tt[0].rot[0], tt[0].rot[1])
                return
            if len(toks) >= 2:
                for (_, t), (b, u) in ((toks[0], toks[1]), (toks[1], toks[0])):
                    if t.conv is not None and t.conv[1] == (u.base if u.base is not None else id(b)):
                        self.event("convolutional", where, conv=t.conv[0])  # conv(x) added to x
                        break
                return
            if tt[0].scores:
                for _, t in pos_others:
                    if t.tables or "cmp" not in t.pos:
                        self.event("score_bias", where, t)
                return
            made_from = frozenset().union(*(t.seq for t in tt))
            for a, t in pos_others + table_others:
                if t.tables and not t.pos and t.tables & made_from:
                    # a table added to states made from that table: a set of queries (DETR's object queries,
                    # Pegasus-X's global tokens), not positions of the input
                    self.event("queries", where, t)
                elif (t.tables or "cmp" not in t.pos) and _along_sequence(a, ref):
                    self.event("absolute", where, t)
            return
        if op in _MUL and len(toks) == 2 and sum(t.trig for t in tt) == 1:
            # token states times sinusoids of values computed from the input (LightGlue's keypoints):
            # a rotation by coordinates, once summed with the rotated states times the other sinusoid
            data = Tag()
            data.pos = frozenset({"data", "trig"})
            new.rot = (where, data)
            return
        if op in _MUL or op in ("addcmul",):
            for a, t in pos_others:
                if "trig" in t.pos or t.tables:  # sinusoids, computed or a table of them (RoFormer's)
                    if a.is_complex() or op == "addcmul":  # a complex product (freqs_cis) rotates by itself
                        self.event("rotary", where, t)
                    else:  # a rotation once summed with the rotated states times the other sinusoid
                        new.rot = (where, t)
            return
        if (op in _PRODUCT and op != "linear") or op in ("baddbmm",):
            for _, t in pos_others:
                if "cmp" in t.pos and not t.tables:
                    continue  # compared positions: a mask (Longformer's sliding window), not a position
                self.event("relative" if not tt[0].scores or op != "baddbmm" else "score_bias", where, t)
            return
        if op in ("gather", "take_along_dim", "__getitem__", "index_select") and any(t.scores or t.c2p for t in tt):
            for _, t in pos_others:
                self.event("relative_gather", where, t)
            return

    def event(self, kind: str, where: str, t: Tag | None = None, **extra: Any) -> None:
        self.events.append({"kind": kind, "where": where, "pos": sorted(t.pos) if t else [],
                            "tables": sorted(t.tables) if t else [], "made": t.where if t else None,
                            "proj": bool(t and t.proj),
                            **extra})  # fmt: skip


def _coordinates(t: Tag | None) -> bool:
    """Values computed without positions, tokens or a parameter of their own (a table's projection, a sigmoid
    of it): coordinates, when sinusoids are made of them."""
    return t is None or not (t.pos or t.tok or t.tables)


def _flat(args: Any) -> list[Any]:
    out: list[Any] = []
    for a in args:
        out.extend(a) if isinstance(a, (list, tuple)) else out.append(a)
    return out


def _seq(t: Tag) -> frozenset[str]:
    """The tables a tensor's sequence axis was made from: its own record, or the tables it is (a table used as
    states, not looked up by positions)."""
    if t.seq:
        return t.seq
    return t.tables if t.tables and not t.pos and not t.tok and not t.nonpos else frozenset()


def _whole(tensors: list, op: str) -> bool:
    """A lookup whose indices (made by ``arange``) are as many as the table's rows: all of it."""
    data, index = (tensors[1], tensors[0]) if op == "embedding" else (tensors[0], tensors[1])
    return data.ndim == 2 and index.numel() == data.shape[0] and index.shape[-1] == data.shape[0]


def _along_sequence(a: torch.Tensor, ref: torch.Tensor) -> bool:
    """``a`` (right-aligned to ``ref``) spans every axis of ``ref`` but the batch: one value per token (or per
    pixel) and feature, a table of positions; not a bias, a per-head vector (Conformer's ``pos_bias_u``,
    ``(1, heads, 1, head_dim)`` beside ``(batch, heads, tokens, head_dim)``) or a scale."""
    if ref.ndim < 3 or a.ndim < 2 or a.ndim > ref.ndim:
        return False
    shape = [1] * (ref.ndim - a.ndim) + [int(s) for s in a.shape]
    full = [int(s) for s in ref.shape]
    # (tokens, features) states: every axis but the first (frames folded into the batch: TimeSformer); heads split
    # off: every axis longer than 1 (the traced batch is 1), so XLNet's (heads, head_dim) content bias beside its
    # (tokens, batch, heads, head_dim) queries is no table
    start = 1 if ref.ndim == 3 else 0
    return all(shape[i] == full[i] for i in range(start, ref.ndim) if full[i] > 1) and sum(s > 1 for s in shape) >= 2


# ----- building and running ---------------------------------------------------------------------------------------
def _hooks(trace: Trace) -> Any:
    def pre(m: torch.nn.Module, a: Any) -> None:
        trace.stack.append(trace.paths.get(id(m), type(m).__name__))

    def post(m: torch.nn.Module, a: Any, kw: Any, o: Any) -> None:
        if trace.stack:
            trace.stack.pop()
        with contextlib.suppress(Exception):
            # a module given token states returns token states, even where its code left the trace (LightGlue's
            # keypoint detector: keypoints and descriptors of the images); positions it returns keep their tags
            given = [x for x in _flat(list(a) + list((kw or {}).values())) if torch.is_tensor(x)]
            if any((t := trace.tag(x)) is not None and t.tok for x in given):
                values = o.values() if hasattr(o, "values") else (o if isinstance(o, (list, tuple)) else [o])
                for x in _flat(list(values)):
                    if torch.is_tensor(x) and x.is_floating_point() and trace.tag(x) is None:
                        trace.token_input(x)  # (not a mask: DETR's backbone returns the pixel mask beside)

    return (
        torch.nn.modules.module.register_module_forward_pre_hook(pre),
        torch.nn.modules.module.register_module_forward_hook(post, with_kwargs=True, always_call=True),
    )


def build(mcls: type, cfg: Any) -> tuple[torch.nn.Module, Trace]:
    """The model built on meta under a trace (buffers made from ``arange`` carry positions)."""
    trace = Trace()
    with torch.device("meta"), trace:
        model = mcls(cfg)
    # tags given during construction were keyed by the tensors' ids: carry them over to the names
    _adopt(model, trace)
    return model, trace


def _adopt(model: torch.nn.Module, trace: Trace) -> None:
    trace.name_tensors(model)
    for t_id, name in trace.names.items():
        got = trace.tags.get(t_id)
        if got is not None:
            tag = Tag()
            tag.pos, tag.where = got[1].pos, got[1].where
            tag.tables = frozenset({name})
            trace.tags[t_id] = (got[0], tag)
    trace.paths = {id(m): n for n, m in model.named_modules()}  # type: ignore[attr-defined]


def components(model: torch.nn.Module, cfg: Any) -> list[dict[str, Any]]:
    """The model's components: the shallowest module built from each (sub-)config, with the input its forward
    takes (which says text, vision, audio, ...)."""
    from make_inventory import sub_configs

    out = []
    mods = list(model.named_modules())
    for path, sub in sub_configs(cfg):
        root = None
        for n, m in mods:
            c = getattr(m, "config", None)
            if c is sub or (not path and m is model):
                root = (n, m)
                break
        if root is None:
            for n, m in mods:
                c = getattr(m, "config", None)
                if c is not None and type(c) is type(sub) and path and c is not cfg:
                    root = (n, m)
                    break
        if root is None:
            continue
        n, m = root
        if any(o["path"] == n for o in out):
            continue
        try:
            params = list(inspect.signature(m.forward).parameters)
        except (TypeError, ValueError):
            params = []
        kind = next((k for name, k in INPUTS if name in params), "other")
        out.append({"component": ".".join(path) or "model", "config": sub, "path": n, "module": m, "input": kind,
                    "params": params})  # fmt: skip
    return out + _encoder_decoder(model, cfg, out)


def _encoder_decoder(model: torch.nn.Module, cfg: Any, comps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An encoder-decoder whose encoder and decoder take different inputs (Whisper: audio features, then text)
    has each as a component of its own (``encoder``, ``decoder``: the modules its ``get_encoder`` /
    ``get_decoder`` return), so each states its own positions."""
    found = []
    for name in ("encoder", "decoder"):
        try:
            m = getattr(model, f"get_{name}")()
        except Exception:
            return []
        if not isinstance(m, torch.nn.Module) or m is model:
            return []
        path = next((n for n, x in model.named_modules() if x is m), None)
        if path is None or any(c["path"] == path for c in comps):
            return []
        try:
            params = list(inspect.signature(m.forward).parameters)
        except (TypeError, ValueError):
            return []
        kind = next((k for p, k in INPUTS if p in params), "other")
        found.append({"component": name, "config": getattr(m, "config", cfg), "path": path, "module": m,
                      "input": kind, "params": params})  # fmt: skip
    kinds = {c["input"] for c in found}
    return found if len(kinds) == 2 and not kinds & {"other", "features"} else []  # (Funnel's decoder: states)


def _ids(n: int, dev: str) -> torch.Tensor:
    return (torch.arange(n, device="cpu") + 3)[None].to(dev)


def _size(cfg: Any, *names: str, default: Any = None) -> Any:
    for n in names:
        v = getattr(cfg, n, None)
        if v is not None:
            return v
    return default


def inputs(comp: dict[str, Any], n: int = 8, dev: str = "meta") -> list[dict[str, Any]]:
    """Candidate inputs for a component's forward, from its signature and config (token ids 3..3+n: below any
    vocabulary, above the usual special ids)."""
    cfg, params = comp["config"], comp["params"]
    cands: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    for name in ("decoder_input_ids",):
        if name in params:
            extra[name] = _ids(n, dev)
    if "use_cache" in params:  # no cache (a hybrid's cache of linear-attention layers fails to say its length)
        extra["use_cache"] = False
    if "input_ids" in params:
        cands.append({"input_ids": _ids(n, dev), **extra})
    img = _size(cfg, "image_size", "img_size", "input_size", default=224)
    if isinstance(img, (list, tuple)):
        hw = [int(x) for x in img[-2:]] if len(img) >= 2 else [int(img[0])] * 2
    elif isinstance(img, dict):
        hw = [int(img.get("height", 224)), int(img.get("width", 224))]
    else:
        hw = [int(img)] * 2
    ch = int(_size(cfg, "num_channels", "in_channels", "in_chans", default=3))
    for name in ("pixel_values", "pixel_values_videos"):
        if name in params:
            frames = int(_size(cfg, "num_frames", default=8))
            cands.append({name: torch.zeros(1, ch, *hw, device=dev), **extra})
            cands.append({name: torch.zeros(1, frames, ch, *hw, device=dev), **extra})
            cands.append({name: torch.zeros(1, ch, frames, *hw, device=dev), **extra})
    if "input_values" in params:
        length, mel = _size(cfg, "max_length"), _size(cfg, "num_mel_bins")
        if isinstance(length, int) and isinstance(mel, int):  # a spectrogram (batch, frames, bins): AST
            cands.append({"input_values": torch.zeros(1, length, mel, device=dev), **extra})
        cands.append({"input_values": torch.zeros(1, 16000, device=dev), **extra})
        cands.append({"input_values": torch.zeros(1, 1, 16000, device=dev), **extra})
    if "input_features" in params:
        mel = int(_size(cfg, "num_mel_bins", "feature_size", "input_feat_size", "n_mels", default=80))
        frames = 2 * int(_size(cfg, "max_source_positions", default=1500))
        cands.append({"input_features": torch.zeros(1, mel, frames, device=dev), **extra})
        cands.append({"input_features": torch.zeros(1, 100, mel, device=dev), **extra})
        cands.append({"input_features": torch.zeros(1, mel, 100, device=dev), **extra})
        first = next(
            (m for m in comp["module"].modules() if isinstance(m, (torch.nn.LayerNorm, torch.nn.Linear))), None
        )
        if first is not None:  # features as wide as the first layer that reads them (wav2vec2-bert: 160)
            width = first.in_features if isinstance(first, torch.nn.Linear) else int(first.normalized_shape[-1])
            cands.append({"input_features": torch.zeros(1, 100, width, device=dev), **extra})
    if "pixel_values" in params:
        cands.append({"pixel_values": torch.zeros(1, 2, ch, *hw, device=dev), **extra})  # image pairs
        if dev != "meta":  # small images on a CPU instance (LightGlue's keypoints: one per pixel of a blank image)
            cands.append({"pixel_values": torch.zeros(1, 2, ch, 64, 64, device=dev), **extra})
            cands.append({"pixel_values": torch.zeros(1, ch, 64, 64, device=dev), **extra})
    if "input_features_mask" in params:  # a mask of the features' frames (Audio Flamingo 3's encoder needs it)
        for c in cands:
            f = c.get("input_features")
            if f is not None:
                frames = f.shape[1] if f.shape[1] == 100 else f.shape[-1]
                c["input_features_mask"] = torch.ones(1, frames, dtype=torch.long, device=dev)
    if not cands and "hidden_states" in params:
        lin = next((m for m in comp["module"].modules() if isinstance(m, (torch.nn.Linear, torch.nn.Conv1d))), None)
        if lin is not None:
            width = lin.in_features if isinstance(lin, torch.nn.Linear) else lin.in_channels
            cands.append({"hidden_states": torch.zeros(1, n, width, device=dev)})
    if not cands and "inputs_embeds" in params:
        hidden = int(_size(cfg, "hidden_size", "d_model", default=16))
        cands.append({"inputs_embeds": torch.zeros(1, n, hidden, device=dev), **extra})
    return cands


def run(comp: dict[str, Any], trace: Trace, dev: str = "meta") -> str | None:
    """The component's forward on ``dev`` under the trace; None when it ran, else why not."""
    err = "no input its forward takes"
    for kw in inputs(comp, dev=dev):
        trace.events.clear()
        for v in kw.values():
            trace.token_input(v)
        hooks = _hooks(trace)
        trace.stack.clear()
        try:
            with torch.no_grad(), trace:
                comp["module"](**kw)
            return None
        except Exception as exc:
            err = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
        finally:
            for h in hooks:
                h.remove()
    return err


# ----- from events to mechanisms ----------------------------------------------------------------------------------
def _table_kind(trace: Trace, name: str) -> str:
    return "fixed" if name in trace.buffers or name in trace.frozen else "learned"


def mechanisms_of(events: list[dict[str, Any]], trace: Trace, comp: dict[str, Any],
                  comps: list[dict[str, Any]]) -> list[dict[str, Any]]:  # fmt: skip
    """``[{component, input, mechanism, module, tensor, evidence}]`` from the trace's events."""
    out: dict[tuple, dict[str, Any]] = {}
    nested = sorted(
        (
            c
            for c in comps
            if (c is not comp and c["path"].startswith(comp["path"] + "."))
            or (comp["path"] == "" and c is not comp and c["path"])
        ),
        key=lambda c: -len(c["path"]),
    )

    def owner(where: str) -> dict[str, Any]:
        for c in nested:
            if where == c["path"] or where.startswith(c["path"] + "."):
                return c
        return comp

    def module(path: str) -> str:
        return f"{path} {trace.classes.get(path, '?')}"

    queue = list(events)
    while queue:
        e = queue.pop(0)
        kind = e["kind"]
        tables = [t for t in e["tables"] if _is_float_table(trace, t)]
        entry: dict[str, Any] = {"evidence": "trace"}
        if kind == "rotary" and "data" in e["pos"]:
            mech = "rotary"
            entry["coordinates"] = "angles computed from the input (keypoint coordinates), not token positions"
        elif "coord" in e["pos"] and kind != "queries":
            # sinusoids of coordinates the model computes from its queries (DAB-DETR's anchor boxes, Conditional
            # DETR's reference points): part of its object queries, not positions of the input
            mech = "queries"
            entry["coordinates"] = True
        elif kind == "absolute":
            if tables:
                kinds = {_table_kind(trace, t) for t in tables}
                mech = "fixed" if kinds == {"fixed"} else "learned"
                entry["tensor"] = ", ".join(tables)
                if mech == "fixed" and "trig" in e["pos"]:
                    entry["sinusoid"] = True
                elif "trig" in e["pos"] and e.get("made"):
                    # sinusoids computed in forward, with a learned table added to them (Mask2Former's level
                    # embedding): both
                    queue.append({**e, "tables": [], "kind": "absolute"})
            elif "trig" in e["pos"]:
                mech = "sinusoidal"
            else:
                mech = "other"
        elif kind == "convolutional":
            mech = "convolutional"
            entry["conv"] = e["conv"]
        elif kind == "rotary":
            mech = "rotary"
            tables = [t for t in tables if len(trace.shapes.get(t, ())) >= 2]  # not inv_freq: a table of rows
            if tables:  # rotated by a table of sinusoids looked up by positions (RoFormer's)
                entry["tensor"] = ", ".join(tables)
        elif kind == "queries":
            mech = "queries"
            entry["tensor"] = ", ".join(e["tables"])
        elif kind == "score_bias":
            # gathered from a table, indexed by a table of relative positions (Swin-v2's log-spaced coordinates
            # through an MLP), or weights applied to bucketed distances (LayoutLMv3): a relative bias; a bias of
            # positions and constants only: ALiBi
            mech = "relative_bias" if e["tables"] or e.get("proj") else "alibi"
            if tables or e["tables"]:
                entry["tensor"] = ", ".join(tables or e["tables"])
        else:  # relative, relative_gather
            mech = "relative"
            if tables:
                entry["tensor"] = ", ".join(tables)
        where = e["where"]
        c = owner(where)
        made = e.get("made")
        path = made if mech in ("rotary", "sinusoidal") and made else where
        if entry.get("tensor") and mech != "rotary":
            path = entry["tensor"].split(", ")[0].rsplit(".", 1)[0]
        key = (c["component"], mech, re.sub(r"\.\d+(?=[. ,]|$)", ".*", f"{path} {entry.get('tensor')}"))
        if key in out:
            if path not in out[key]["_paths"]:
                out[key]["_paths"].append(path)
                out[key]["modules"] = len(out[key]["_paths"])
            continue
        out[key] = {"component": c["component"], "input": c["input"], "mechanism": mech, "module": module(path),
                    **entry, "_paths": [path]}  # fmt: skip
    for v in out.values():
        del v["_paths"]
    return list(out.values())


def _is_float_table(trace: Trace, name: str) -> bool:
    return not re.search(r"(^|\.)(position_ids|.*_index|.*_ids)$", name) or name not in trace.buffers


#: parameters a tiny CPU instance may hold (the default config's widths, one layer)
CPU_LIMIT = 200_000_000


#: layers a shrunk config keeps (the first two: T5's bias lives in the first, a second shows what repeats)
LAYERS = 2


def shrunk(cfg: Any) -> tuple[Any, list[str]]:
    """A copy of ``cfg`` with every layer count (an int attribute counting layers, of it and its sub-configs)
    set to :data:`LAYERS`, per-layer lists cut to their first entries, the vocabulary made small where every
    special id is below it, and the widths left as the type's default."""
    from make_inventory import sub_configs

    cfg = copy.deepcopy(cfg)
    changed = []
    for path, sub in sub_configs(cfg):
        for k, v in list(vars(sub).items()):
            if isinstance(v, int) and not isinstance(v, bool) and v > LAYERS and re.search(r"(^|_)(layers?|layer)$", k):
                setattr(sub, k, LAYERS)
                changed.append(".".join(path + (k,)))
                for k2, v2 in list(vars(sub).items()):
                    if isinstance(v2, (list, tuple)) and len(v2) == v and k2 != k:
                        setattr(sub, k2, v2[:LAYERS])  # per-layer lists and tuples (SEW's conv_dim)
        vocab = getattr(sub, "vocab_size", None)
        ids = [v for k, v in vars(sub).items() if isinstance(v, int) and re.search(r"_(id|index)$", k)]
        if isinstance(vocab, int) and vocab > SMALL_VOCAB and all(i < SMALL_VOCAB for i in ids):
            sub.vocab_size = SMALL_VOCAB  # the ids the forward is given are 3..10
            changed.append(".".join(path + ("vocab_size",)))
    return cfg, changed


#: the vocabulary of a tiny instance (where every special id the config names is below it)
SMALL_VOCAB = 1024


def tiny(mcls: type, cfg: Any) -> tuple[torch.nn.Module, Trace, list[str]] | str:
    """A tiny CPU instance (of ``cfg``, shrunk already where it could be) built under a trace, or why not."""
    small, changed = cfg, []
    try:
        with torch.device("meta"):
            probe = mcls(copy.deepcopy(small))
    except Exception:
        probe = None
    n = sum(p.numel() for p in (probe.parameters() if probe is not None else []))
    if probe is None or n > CPU_LIMIT:
        return (
            f"no tiny instance ({n / 1e6:.0f}M parameters with one layer)" if probe is not None else "no tiny instance"
        )
    try:
        torch.manual_seed(0)
        trace = Trace()
        with trace:
            model = mcls(small)
        model.eval()
        _adopt(model, trace)
        return model, trace, changed
    except Exception as exc:
        return f"tiny instance not built: {type(exc).__name__}: {exc}".splitlines()[0][:160]


def observe(rec: dict[str, Any], mcls: type, cfg: Any, fallback: Any) -> None:
    """``rec["mechanisms"]`` (and ``rec["components"]``): every component's mechanisms, from a traced meta build
    and forward of each component; ``fallback(model)`` gives the module-tree reading where a forward fails."""
    small, changed = shrunk(cfg)
    try:
        model, trace = build(mcls, small)
        rec["mechanisms_config"] = ("shrunk: " + ", ".join(changed)) if changed else "default"
        cfg = small
    except Exception:
        changed = []
    try:
        if not changed:
            model, trace = build(mcls, cfg)
            rec["mechanisms_config"] = "default"
    except Exception as exc:
        patched = _patched(cfg)
        if patched is None:
            rec["mechanisms_status"] = f"not built: {type(exc).__name__}: {exc}".splitlines()[0][:200]
            return
        cfg, what = patched
        try:
            model, trace = build(mcls, cfg)
        except Exception as exc2:
            rec["mechanisms_status"] = f"not built: {type(exc2).__name__}: {exc2}".splitlines()[0][:200]
            return
        rec["mechanisms_config"] = what
    comps = components(model, cfg)
    cpu: Any = None
    found: list[dict[str, Any]] = []
    status = {}
    for comp in sorted(comps, key=lambda c: len(c["path"])):
        if comp["input"] == "other" or (
            comp["path"] == ""
            and any(c["path"] for c in comps)
            and comp["input"] != "text"
            and len([c for c in comps if c["path"]]) > 0
            and "input_ids" in comp["params"]
            and any(p in comp["params"] for p in ("pixel_values", "input_features", "input_values"))
        ):
            status[comp["component"]] = f"not run: its forward takes {comp['input']}"
            continue
        why = run(comp, trace)
        how = "trace"
        if why is not None:
            if cpu is None:
                cpu = tiny(mcls, cfg)
            if isinstance(cpu, str):
                why += f"; {cpu}"
            else:
                cmod = dict(cpu[0].named_modules()).get(comp["path"])
                if cmod is not None:
                    ccomp = {**comp, "module": cmod, "config": getattr(cmod, "config", comp["config"])}
                    why2 = run(ccomp, cpu[1], dev="cpu")
                    if why2 is None:
                        why, how = None, "tiny CPU instance"
                        got = mechanisms_of(list(cpu[1].events), cpu[1], comp, comps)
                        for g in got:
                            g["evidence"] = "trace (tiny CPU instance)"
                        found += [g for g in got if not any(_same(g, f) for f in found)]
                        status[comp["component"]] = "ran: " + how
                        continue
                    why += f"; on a tiny CPU instance: {why2}"
            if why is not None and comp["path"] and isinstance(comp["config"], transformers.PretrainedConfig):
                # the component alone, a tiny CPU instance of its own class from its sub-config (an audio
                # tower too big to build with the whole model: Audio Flamingo 3's)
                alone = tiny(type(comp["module"]), comp["config"])
                if isinstance(alone, str):
                    why += f"; alone: {alone}"
                else:
                    acomp = {**comp, "module": alone[0], "path": ""}
                    why3 = run(acomp, alone[1], dev="cpu")
                    if why3 is None:
                        got = mechanisms_of(_prefixed(alone[1], comp["path"]), alone[1], comp, [comp])
                        for g in got:
                            g["evidence"] = "trace (tiny CPU instance of the component alone)"
                        found += [g for g in got if not any(_same(g, f) for f in found)]
                        status[comp["component"]] = "ran: tiny CPU instance of the component alone"
                        continue
                    why += f"; alone on a tiny CPU instance: {why3}"
        if why is None:
            got = mechanisms_of(list(trace.events), trace, comp, comps)
            found += [g for g in got if not any(_same(g, f) for f in found)]
            status[comp["component"]] = "ran"
        else:
            status[comp["component"]] = f"forward failed: {why}"
    ran = {c for c, s in status.items() if s.startswith("ran")}
    for comp in comps:
        name = comp["component"]
        if name in ran and not any(f["component"] == name for f in found):
            nested = [
                c for c in comps if c is not comp and (not comp["path"] or c["path"].startswith(comp["path"] + "."))
            ]
            named = [g for g in fallback(model, trace, comp, comps) if g["mechanism"] != "none"]
            if named:  # the trace saw none where modules are named for positions: said, by name (RoFormer)
                for g in named:
                    g["trace"] = "saw no positions meet the token states"
                found += named
            elif not nested:
                found.append(
                    {
                        "component": name,
                        "input": comp["input"],
                        "mechanism": "none",
                        "module": f"{comp['path']} {type(comp['module']).__name__}",
                        "evidence": "trace",
                    }
                )
        elif name not in ran and not any(f["component"] == name for f in found):
            for g in fallback(model, trace, comp, comps):
                if not any(_same(g, f) for f in found):
                    found.append(g)
    for f in found:
        if f["mechanism"] == "none" and f.get("input") == "text":
            if cpu is None:
                cpu = tiny(mcls, cfg)
            comp = next(c for c in comps if c["component"] == f["component"])
            f.update(permutation(cpu, comp))
        if f["mechanism"] in ("learned", "fixed", "rotary") and not f.get("sinusoid") and f.get("tensor"):
            name = f["tensor"].split(", ")[0]
            values = initialised(model, name)
            if values is not None and sinusoid_values(values):
                # the model's own initialisation writes sinusoids of the row into the table (FSMT's fairseq
                # SinusoidalPositionalEmbedding, an nn.Embedding the forward never trains into anything else)
                f["sinusoid"] = True
                f["sinusoid_evidence"] = "values: the model's own _init_weights writes sin/cos of the row"
                if f["mechanism"] == "learned":
                    f["mechanism"], f["trainable"] = "fixed", True
                continue
        if f["mechanism"] == "fixed" and not f.get("sinusoid") and f.get("tensor"):
            if cpu is None:
                cpu = tiny(mcls, cfg)
            if not isinstance(cpu, str):
                tensors = dict(cpu[0].named_parameters()) | dict(cpu[0].named_buffers())
                t = tensors.get(f["tensor"].split(", ")[0])
                if t is not None and sinusoid_values(t.detach()):
                    f["sinusoid"] = True
                    f["sinusoid_evidence"] = "values (tiny CPU instance): columns pair into sin/cos of one angle"
    rec["components"] = {
        c["component"]: {"input": c["input"], "module": f"{c['path']} {type(c['module']).__name__}",
                         "forward": status.get(c["component"], "not run")}
        for c in comps
    }  # fmt: skip
    rec["mechanisms"] = sorted(found, key=lambda f: (f["component"], f["mechanism"], f["module"]))


def initialised(model: torch.nn.Module, name: str) -> torch.Tensor | None:
    """The values the model's own ``_init_weights`` gives the parameter or buffer ``name`` of a meta-built
    model: that one tensor made on the CPU, then ``_init_weights`` of its module and of each ancestor (the
    others stay on meta, where initialising does nothing), the meta tensor put back after."""
    owner_path, _, leaf = name.rpartition(".")
    try:
        owner = model.get_submodule(owner_path)
    except AttributeError:
        return None
    params, buffers = owner._parameters, owner._buffers
    old = params.get(leaf) if leaf in params else buffers.get(leaf)
    if old is None or not old.is_floating_point() or old.numel() > 50_000_000:
        return None
    new = torch.zeros(old.shape, dtype=torch.float32)
    if leaf in params:
        params[leaf] = torch.nn.Parameter(new, requires_grad=old.requires_grad)
    else:
        buffers[leaf] = new
    init = getattr(model, "_init_weights", None)
    try:
        parts = owner_path.split(".") if owner_path else []
        for i in range(len(parts), -1, -1):
            with contextlib.suppress(Exception):
                init(model.get_submodule(".".join(parts[:i])))
        got = (params[leaf] if leaf in params else buffers[leaf]).detach().clone()
    except Exception:
        got = None
    finally:
        if leaf in params:
            params[leaf] = old
        else:
            buffers[leaf] = old
    return got if got is not None and got.device.type == "cpu" else None


def _prefixed(trace: Trace, prefix: str) -> list[dict[str, Any]]:
    """A component-alone trace's events with its module and tensor paths put under ``prefix`` (the
    component's path in the whole model); its module classes are named under the prefix too."""

    def put(p: Any) -> Any:
        return f"{prefix}.{p}" if p else (prefix if p == "" else p)

    trace.classes.update({put(k): v for k, v in list(trace.classes.items())})
    trace.buffers |= {put(b) for b in trace.buffers}
    trace.frozen |= {put(b) for b in trace.frozen}
    trace.shapes.update({put(k): v for k, v in list(trace.shapes.items())})
    return [{**e, "where": put(e["where"]), "made": put(e.get("made")), "tables": [put(t) for t in e["tables"]]}
            for e in trace.events]  # fmt: skip


def permutation(cpu: Any, comp: dict[str, Any]) -> dict[str, str]:
    """A text component the trace saw place no positions, run on a tiny CPU instance for ids and for the same
    ids permuted: ``confirmed_by: permutation`` when its output is the permuted output (an encoder without
    positions), else what was seen (a causal mask, a recurrence or a convolution orders tokens without a
    positional encoding)."""
    if isinstance(cpu, str):
        return {"permutation": f"not run: {cpu}"}
    module = dict(cpu[0].named_modules()).get(comp["path"])
    if module is None:
        return {"permutation": "not run: no such module in the tiny instance"}
    n = 8
    ids = torch.arange(n)[None] + 3
    perm = torch.tensor([3, 0, 6, 1, 7, 2, 5, 4])
    try:
        with torch.no_grad():
            a, b = _first(module(input_ids=ids)), _first(module(input_ids=ids[:, perm]))
    except Exception as exc:
        return {"permutation": f"not run: {type(exc).__name__}: {exc}".splitlines()[0][:120]}
    if a is None or b is None or a.ndim < 2 or a.shape[1] != n:
        return {"permutation": "not run: no per-token output"}
    if torch.allclose(a[:, perm], b, rtol=1e-4, atol=1e-5 * float(a.abs().max()) + 1e-6):
        return {"confirmed_by": "permutation"}
    return {"permutation": "outputs do not permute with the inputs (a causal mask, recurrence or convolution "
            "orders the tokens)"}  # fmt: skip


def _first(out: Any) -> torch.Tensor | None:
    if torch.is_tensor(out):
        return out.float()
    values = out.values() if hasattr(out, "values") else out
    for v in values:
        if torch.is_tensor(v) and v.is_floating_point():
            return v.float()
    return None


def sinusoid_values(t: torch.Tensor) -> bool:
    """Whether a table's rows are sinusoids of their positions: its columns pair (``c`` with ``c + d/2``, or
    ``2k`` with ``2k+1``) into sin/cos of one angle (``sin^2 + cos^2 = 1`` on every row), with row 0 holding
    only 0s and 1s (angle 0) or the table starting from a padding offset."""
    w = t.reshape(-1, t.shape[-1]).double()
    if w.shape[0] < 2 or w.shape[1] < 2 or w.shape[1] % 2 or not torch.isfinite(w).all():
        return False
    h = w.shape[1] // 2
    for a, b in ((w[:, :h], w[:, h:]), (w[:, 0::2], w[:, 1::2])):
        rows = (a**2 + b**2 - 1).abs().amax(dim=1) < 1e-3
        if rows.float().mean() > 0.9 and w.abs().max() <= 1 + 1e-6:  # a padding row of zeros may stay
            return True
    return False


def _patched(cfg: Any) -> tuple[Any, str] | None:
    """A config the model can be built from where the default leaves its vocabulary unset (ESM: None)."""
    from make_inventory import sub_configs

    cfg = copy.deepcopy(cfg)
    what = []
    for path, sub in sub_configs(cfg):
        if "vocab_size" in vars(sub) and sub.vocab_size is None:
            sub.vocab_size = SMALL_VOCAB
            what.append(".".join(path + ("vocab_size",)) + f"={SMALL_VOCAB} (default None)")
            if "pad_token_id" in vars(sub) and sub.pad_token_id is None:
                sub.pad_token_id = 1
                what.append(".".join(path + ("pad_token_id",)) + "=1 (default None)")
    return (cfg, ", ".join(what)) if what else None


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in ("component", "mechanism", "module", "tensor"))


def _words(name: str) -> set[str]:
    """The words of a module or parameter path (split at ``.`` and ``_``, lowercased): ``pos`` is a word of
    ``encoder.pos_conv_embed``, not of ``post_conv_dds``."""
    return set(re.split(r"[._]", name.lower()))


def fallback(model: torch.nn.Module, trace: Trace, comp: dict[str, Any], comps: list) -> list[dict[str, Any]]:
    """Where a component's forward could not run: the module tree under its root."""
    from make_inventory import apply_functions, is_rotary

    root = comp["path"]
    nested = [c["path"] for c in comps if c is not comp and c["path"] and c["path"].startswith(root)
              and c["path"] != root]  # fmt: skip
    out = []

    def mine(path: str) -> bool:
        inside = path == root or not root or path.startswith(root + ".")
        return inside and not any(path == p or path.startswith(p + ".") for p in nested)

    base = {"component": comp["component"], "input": comp["input"]}
    for name, m in model.named_modules():
        if not mine(name):
            continue
        cls = type(m).__name__
        low = cls.lower()
        if is_rotary(m):
            out.append({**base, "mechanism": "rotary", "module": f"{name} {cls}", "evidence": "structure"})
            continue
        leaf = name.rsplit(".", 1)[-1].lower()
        if isinstance(m, torch.nn.Conv1d) and m.groups > 1 and "pos" in _words(name):  # pos_conv, not post_
            out.append({**base, "mechanism": "convolutional", "module": f"{name} {cls}", "evidence": "name"})
        if isinstance(m, torch.nn.Embedding):
            tensor = f"{name}.weight" if name else "weight"
            kind = "fixed" if tensor in trace.frozen else "learned"
            if "relative_attention_bias" in leaf or ("rel" in leaf and "bias" in leaf):
                out.append({**base, "mechanism": "relative_bias", "module": f"{name} {cls}", "tensor": tensor,
                            "evidence": "name"})  # fmt: skip
            elif "relative" in leaf or "rel_" in leaf or "distance" in leaf:
                out.append({**base, "mechanism": "relative", "module": f"{name} {cls}", "tensor": tensor,
                            "evidence": "name"})  # fmt: skip
            elif "pos" in leaf or leaf == "wpe":
                out.append({**base, "mechanism": kind, "module": f"{name} {cls}", "tensor": tensor,
                            "evidence": "name"})  # fmt: skip
            continue
        for pname, _ in list(m.named_parameters(recurse=False)) + list(m.named_buffers(recurse=False)):
            full = f"{name}.{pname}" if name else pname
            lp = pname.lower()
            if "relative_position_bias_table" in lp or ("rel" in lp and "pos" in lp and "bias" in lp):
                out.append({**base, "mechanism": "relative_bias", "module": f"{name} {cls}", "tensor": full,
                            "evidence": "name"})  # fmt: skip
            elif {"emb", "rel"} <= _words(pname):  # VITS's emb_rel_k / emb_rel_v: relative key and value tables
                out.append({**base, "mechanism": "relative", "module": f"{name} {cls}", "tensor": full,
                            "evidence": "name"})  # fmt: skip
            elif ("pos" in lp and ("emb" in lp or "enc" in lp)) or "sinusoid" in lp:
                if "rel" in lp:
                    mech = "relative"
                elif full in trace.buffers or full in trace.frozen:
                    mech = "fixed"
                else:
                    mech = "learned"
                out.append({**base, "mechanism": mech, "module": f"{name} {cls}", "tensor": full,
                            "evidence": "name"})  # fmt: skip
        if "positional" in low and list(m.children()) and apply_functions(sys.modules[type(m).__module__]):
            # a module computing the positions an apply_rotary* function of its modeling module applies
            out.append({**base, "mechanism": "rotary", "module": f"{name} {cls}", "evidence": "name"})
        if "sinusoid" in low and not list(m.parameters(recurse=False)):
            out.append({**base, "mechanism": "sinusoidal", "module": f"{name} {cls}", "evidence": "name"})
    return out


def main_mechanism(rec: dict[str, Any]) -> str | None:
    """The text component's (else the first component's) main mechanism, as a ``scheme`` value."""
    mechs = rec.get("mechanisms")
    if not mechs:
        return None
    comps = rec.get("components") or {}
    text = [c for c, v in comps.items() if v.get("input") == "text"]
    order = [c for c in text] + [c for c in comps if c not in text]
    priority = ("rotary", "alibi", "relative_bias", "relative", "convolutional", "sinusoidal", "fixed", "learned",
                "other", "queries", "none")  # fmt: skip
    for comp in order:
        here = {m["mechanism"] for m in mechs if m["component"] == comp}
        for p in priority:
            if p in here:
                return SCHEME[p](next(m for m in mechs if m["component"] == comp and m["mechanism"] == p))
    return None


#: mechanism -> the ``scheme`` value the existing readers know
SCHEME = {
    "rotary": lambda m: "rope",
    "alibi": lambda m: "alibi",
    "relative_bias": lambda m: "relative",
    "relative": lambda m: "relative",
    "convolutional": lambda m: "convolutional",
    "sinusoidal": lambda m: "sinusoidal",
    "fixed": lambda m: "sinusoidal" if m.get("sinusoid") else "fixed",
    "learned": lambda m: "learned",
    "other": lambda m: "other",
    "queries": lambda m: "none",  # a set of learned queries places no positions of the input
    "none": lambda m: "none",
}

__all__ = ["observe", "main_mechanism", "fallback", "Trace", "contextlib", "copy", "transformers"]
