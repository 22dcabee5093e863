r"""An ``.onnx`` file as a source: the rotary cos/sin caches stored inside an ONNX model.

ONNX exports of decoders carry RoPE as data: half-width caches ``cos_cache`` / ``sin_cache`` of shape
``(positions, rotary_dim / 2)``, row ``t`` holding :math:`s \cos(t\,\omega_k)` (``s`` the attention scaling baked
in), in the model's I/O dtype. Three operators take them:

* ``com.microsoft`` ``RotaryEmbedding`` (inputs ``input, position_ids, cos_cache, sin_cache``; attributes
  ``interleaved``, ``num_heads``, ``rotary_embedding_dim``, ``scale``): onnxruntime contrib op;
* ONNX ``RotaryEmbedding`` (opset 23; inputs ``X, cos_cache, sin_cache, position_ids``; attributes
  ``interleaved``, ``num_heads``, ``rotary_embedding_dim``);
* ``com.microsoft`` ``GroupQueryAttention`` with ``do_rotary=1`` (inputs 7 and 8 are ``cos_cache`` and
  ``sin_cache``; ``rotary_interleaved``, ``num_heads``, ``kv_num_heads``, ``scale``).

The caches are found by following each such input back through ``Identity``, ``Cast``, ``Concat`` (axis 0: a
``[small; large]`` LongRoPE cache) and ``If`` (onnxruntime-genai's Phi LongRoPE: ``Greater(seq_len, original)``
chooses the *then* branch, the large cache) to initializers (embedded, or in an external data file such as
onnxruntime-genai's ``model.onnx.data``, read by offset: only the caches' bytes) and ``Constant`` nodes.
Conventions: onnxruntime-genai ``src/python/py/models/builders/base.py`` (v0.16 dev, commit a0c04eb)
``make_rotary_embedding_caches``, ``make_rotary_embedding_multi_cache``.

Hostile files are refused with one line (:class:`~posenc_cli.errors.InputError`, exit 2), memory bounded: a
file over the byte limit is not parsed; an initializer's declared size is checked against the limit, its data
length and its file before anything is read; external data must lie inside the model's directory (no absolute
path, no ``..``, no symlink out); ``If`` nesting is bounded and a value that feeds itself is a cycle.

Tensors written: ``cos_cache`` and ``sin_cache`` exactly as stored (bit for bit; the name posenc's ``rope`` gives
half-width caches with ``cache=onnx``; its ``cos``/``sin`` are full width). Several caches (LongRoPE ``If``
branches, or different caches for different nodes) become groups (``short.cos_cache``, ``long.cos_cache``, ...).
Metadata ``onnx.*`` names the node(s), the initializer or Constant each tensor came from and the nodes'
attributes.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from ..blocks import rows_per_block
from ..errors import InputError, NoTableError, ParameterError

EXTRA = "pip install 'posenc-cli[onnx]'"
#: nested If subgraphs followed at most this deep
MAX_DEPTH = 16
#: ONNX TensorProto data types posenc reads (caches are floats; If thresholds ints)
_DTYPES = {1: "float32", 10: "float16", 11: "float64", 16: "bfloat16", 6: "int32", 7: "int64"}
_FLOATS = ("float32", "float16", "float64", "bfloat16")
#: (domain, op_type) -> (cos input index, sin input index, attribute holding the pairing)
ROTARY_OPS = {
    ("com.microsoft", "RotaryEmbedding"): (2, 3, "interleaved"),
    ("", "RotaryEmbedding"): (1, 2, "interleaved"),
    ("ai.onnx", "RotaryEmbedding"): (1, 2, "interleaved"),
    ("com.microsoft", "GroupQueryAttention"): (7, 8, "rotary_interleaved"),
}


def is_onnx(text: str) -> bool:
    """Whether a source names an ONNX model (by its suffix)."""
    return text.lower().endswith(".onnx")


def _onnx() -> Any:
    """The ``onnx`` package, imported on first use; without it one line naming the extra."""
    try:
        import onnx
    except ImportError:
        raise InputError(f"reading .onnx models needs the onnx extra: {EXTRA}") from None
    return onnx


# ----- what is found ---------------------------------------------------------------------------------------
@dataclass
class RotaryNode:
    """One node that rotates with stored caches, and the attributes that say how."""

    name: str
    op: str
    cos_input: str
    sin_input: str
    interleaved: int
    rotary_embedding_dim: int
    num_heads: int
    kv_num_heads: int | None
    scale: float | None
    io_dtype: str | None  # element type of the node's data input, when the graph declares it


@dataclass
class Cache:
    """One cos/sin cache pair as stored, with where each came from."""

    group: str  # "" (the only cache), "short"/"long" (If branches), "then"/"else", "cacheN"
    cos: np.ndarray
    sin: np.ndarray
    cos_from: str
    sin_from: str
    nodes: list[RotaryNode]
    parts: list[tuple[int, str]] = field(default_factory=list)  # a Concat's pieces: (rows, origin)
    threshold: int | None = None  # If: the sequence length above which the long branch is taken


@dataclass
class OnnxRope:
    """The rotary caches of one ONNX model."""

    path: str
    caches: list[Cache]

    def tables(self, groups_key: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        """The caches as tensors and metadata: ``cos_cache``/``sin_cache`` for one cache, else one group per
        cache (tensors ``G.cos_cache``, metadata ``G.KEY``, the group names under ``groups_key``), as posenc's
        grouped tables hold them."""
        if len(self.caches) == 1 and not self.caches[0].group:
            c = self.caches[0]
            return {"cos_cache": c.cos, "sin_cache": c.sin}, _cache_metadata(c)
        tensors: dict[str, np.ndarray] = {}
        meta = {groups_key: ",".join(c.group for c in self.caches)}
        for c in self.caches:
            tensors.update({f"{c.group}.cos_cache": c.cos, f"{c.group}.sin_cache": c.sin})
            meta.update({f"{c.group}.{k}": v for k, v in _cache_metadata(c).items()})
        return tensors, meta


def _distinct(values: list[Any]) -> str:
    return ",".join(dict.fromkeys("" if v is None else str(v) for v in values))


def _cache_metadata(c: Cache) -> dict[str, str]:
    names = [n.name for n in c.nodes]
    shown = ",".join(names[:4]) + (f",... ({len(names)} nodes)" if len(names) > 4 else "")
    meta = {
        "onnx.cos_cache.from": c.cos_from,
        "onnx.sin_cache.from": c.sin_from,
        "onnx.nodes": shown,
        "onnx.op": _distinct([n.op for n in c.nodes]),
        "onnx.interleaved": _distinct([n.interleaved for n in c.nodes]),
        "onnx.rotary_embedding_dim": _distinct([n.rotary_embedding_dim for n in c.nodes]),
        "onnx.num_heads": _distinct([n.num_heads for n in c.nodes]),
        "onnx.scale": _distinct([n.scale for n in c.nodes]),
        "onnx.io_dtype": _distinct([n.io_dtype for n in c.nodes]),
    }
    if c.parts:
        meta["onnx.concat"] = ";".join(f"{rows} rows from {origin}" for rows, origin in c.parts)
    if c.threshold is not None:
        meta["onnx.switch_above"] = str(c.threshold)
    return meta


# ----- reading ---------------------------------------------------------------------------------------------
class _Budget:
    """Bytes read so far, against the limit."""

    def __init__(self, limit: int, path: str) -> None:
        self.limit, self.used, self.path = limit, 0, path

    def take(self, nbytes: int, what: str) -> None:
        from ..errors import param

        self.used += nbytes
        if self.used > self.limit:
            raise InputError(
                f"{self.path}: {what} needs {nbytes} bytes, above the {self.limit}-byte limit; "
                f"pass {param('max_bytes')} to raise it"
            )


class Observer(Protocol):
    """What a caller that needs more of an ONNX check than its verdict sees, within :func:`observing` (in its own
    thread): each cache compared with the expected tables is shown block by block (:meth:`block`), then
    :meth:`finished` says whether every row was shown (a scan stops at the first block beyond the tolerance).
    ``key`` is ``(layer_type, engine, id(cache), role)``, ``cache`` a :class:`Cache` of the model read once."""

    def block(self, key: tuple[Any, ...], rows: int, start: int, stop: int, stored: np.ndarray,
              expected: np.ndarray) -> None:  # fmt: skip
        """Rows ``start:stop`` (of ``rows``) of the stored cos and sin side by side (float64) and of the expected
        ones, unscaled; ``expected`` is overwritten once this returns."""

    def finished(self, key: tuple[Any, ...], complete: bool) -> None:
        """The scan of ``key`` ended; ``complete``: every row was shown."""


_LOCAL = threading.local()
_O = TypeVar("_O", bound=Observer)


@contextlib.contextmanager
def observing(observer: _O) -> Iterator[_O]:
    """Within it, in this thread: :func:`read_onnx` reads each model once (the same path and limit give the same
    :class:`OnnxRope`), and :func:`check_against` shows ``observer`` the caches it compares."""
    old = getattr(_LOCAL, "held", None)
    _LOCAL.held = (observer, {})
    try:
        yield observer
    finally:
        _LOCAL.held = old


def read_onnx(path: str, *, max_bytes: int | None = None) -> OnnxRope:
    """The rotary caches of the ONNX model at ``path``; :class:`InputError` (one line) for anything else."""
    held = getattr(_LOCAL, "held", None)
    if held is None:
        return _read_onnx(path, max_bytes)
    key = (os.path.realpath(path), max_bytes)
    if key not in held[1]:
        held[1][key] = _read_onnx(path, max_bytes)
    return held[1][key]


def _read_onnx(path: str, max_bytes: int | None) -> OnnxRope:
    from ..formats import DEFAULT_MAX_BYTES

    limit = DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes)
    onnx = _onnx()
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file; give an .onnx model")
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if size > limit or size > 2**31:  # protobuf cannot hold more than 2 GiB; a model's weights go to external data
        raise InputError(f"{path}: {size} bytes is above the {min(limit, 2**31)}-byte limit for an ONNX graph file")
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as exc:  # DecodeError and friends: whatever protobuf says, it is not a model
        raise InputError(f"{path}: not an ONNX model ({type(exc).__name__}); give a .onnx file") from None
    if not model.HasField("graph") or not model.graph.node:
        raise InputError(f"{path}: not an ONNX model (no graph nodes); give a .onnx file")
    reader = _Reader(onnx, path, _Budget(limit, path))
    return OnnxRope(path, reader.caches(model.graph))


@dataclass
class _Scope:
    graph: Any
    parent: _Scope | None
    label: str
    inits: dict[str, Any] = field(default_factory=dict)
    producers: dict[str, Any] = field(default_factory=dict)
    types: dict[str, int] = field(default_factory=dict)
    inputs: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, graph: Any, parent: _Scope | None, label: str) -> _Scope:
        s = cls(graph, parent, label)
        s.inits = {t.name: t for t in graph.initializer}
        for node in graph.node:
            for out in node.output:
                if out:
                    s.producers[out] = node
        for vi in [*graph.input, *graph.output, *graph.value_info]:
            if vi.type.HasField("tensor_type"):
                s.types[vi.name] = vi.type.tensor_type.elem_type
        s.inputs = {i.name for i in graph.input}
        return s

    def find(self, name: str) -> tuple[_Scope, str, Any] | None:
        """Where ``name`` is defined, searching outward: ("init", tensor), ("node", node) or ("input", None)."""
        s: _Scope | None = self
        while s is not None:
            if name in s.producers:
                return s, "node", s.producers[name]
            if name in s.inits:
                return s, "init", s.inits[name]
            if name in s.inputs:
                return s, "input", None
            s = s.parent
        return None

    def elem_type(self, name: str) -> int | None:
        s: _Scope | None = self
        while s is not None:
            if name in s.types:
                return s.types[name]
            s = s.parent
        return None


@dataclass
class _Leaf:
    array: np.ndarray
    origin: str
    parts: list[tuple[int, str]] = field(default_factory=list)


def _trusted_root(base: str) -> str:
    """The directory external data may resolve into: the model's own, or for a model in a Hugging Face cache
    snapshot (``models--ORG--NAME/snapshots/REV/...``, whose files are links into ``models--ORG--NAME/blobs``)
    that repository's directory."""
    parts = base.split(os.sep)
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] == "snapshots" and parts[i - 1].startswith("models--") and i + 1 < len(parts):
            return os.sep.join(parts[:i])
    return base


class _Reader:
    def __init__(self, onnx: Any, path: str, budget: _Budget) -> None:
        self.onnx, self.path, self.budget = onnx, path, budget
        self.base = os.path.dirname(os.path.abspath(path))
        self.trusted = os.path.realpath(_trusted_root(self.base))

    # -- the rotary nodes ------------------------------------------------------------------------------------
    def nodes(self, scope: _Scope, depth: int = 0) -> list[tuple[_Scope, Any]]:
        if depth > MAX_DEPTH:
            raise InputError(f"{self.path}: subgraphs nested deeper than {MAX_DEPTH} levels; not a model posenc reads")
        out = []
        for node in scope.graph.node:
            if (node.domain, node.op_type) in ROTARY_OPS and self._rotates(node):
                out.append((scope, node))
            for attr in node.attribute:
                subs = list(attr.graphs) + ([attr.g] if attr.HasField("g") else [])
                for sub in subs:
                    out += self.nodes(_Scope.of(sub, scope, f"{node.name}.{attr.name}"), depth + 1)
        return out

    @staticmethod
    def _rotates(node: Any) -> bool:
        if node.op_type != "GroupQueryAttention":
            return True
        return any(a.name == "do_rotary" and a.i == 1 for a in node.attribute)

    def number(self, attrs: dict[str, Any], key: str, node: str, kind: Any, default: Any) -> Any:
        """Attribute ``key`` of a node as ``kind`` (int or float), ``default`` when absent; an attribute of another
        type (a damaged or hand-edited model) is refused in one line."""
        if key not in attrs:
            return default
        value = attrs[key]
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or (kind is int and value != int(value))
        ):
            raise InputError(
                f"{self.path}: node {node}'s attribute {key} is {str(value)[:40]!r}, not a number; the model is damaged"
            )
        return kind(value)

    def rotary_node(self, scope: _Scope, node: Any) -> RotaryNode:
        ci, si, inter = ROTARY_OPS[(node.domain, node.op_type)]
        attrs = {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}
        name = node.name or f"<unnamed {node.op_type}>"
        what = f"{node.op_type}, do_rotary=1" if node.op_type == "GroupQueryAttention" else node.op_type
        names = []
        for idx, role in ((ci, "cos_cache"), (si, "sin_cache")):
            if len(node.input) <= idx or not node.input[idx]:
                raise InputError(
                    f"{self.path}: node {name} ({what}) has no {role} input (input {idx}); the model is incomplete"
                )
            names.append(node.input[idx])
        io = scope.elem_type(node.input[0]) if node.input else None
        return RotaryNode(
            name=name,
            op=node.op_type if not node.domain else f"{node.domain}.{node.op_type}",
            cos_input=names[0],
            sin_input=names[1],
            interleaved=self.number(attrs, inter, name, int, 0),
            rotary_embedding_dim=self.number(attrs, "rotary_embedding_dim", name, int, 0),
            num_heads=self.number(attrs, "num_heads", name, int, 0),
            kv_num_heads=self.number(attrs, "kv_num_heads", name, int, None),
            scale=self.number(attrs, "scale", name, float, None),
            io_dtype=_DTYPES.get(io) if io else None,
        )

    def caches(self, graph: Any) -> list[Cache]:
        top = _Scope.of(graph, None, "graph")
        found = self.nodes(top)
        if not found:
            raise NoTableError(
                f"{self.path}: no rotary node (RotaryEmbedding, or GroupQueryAttention with do_rotary=1) in the "
                "graph; posenc reads the cos/sin caches those nodes take"
            )
        by_key: dict[tuple[int, str, str], tuple[_Scope, list[RotaryNode]]] = {}
        for scope, node in found:
            rn = self.rotary_node(scope, node)
            by_key.setdefault((id(scope.graph), rn.cos_input, rn.sin_input), (scope, []))[1].append(rn)
        out: list[Cache] = []
        for (_, cos_name, sin_name), (scope, nodes) in by_key.items():
            cos = self.trace(cos_name, scope, nodes[0].name)
            sin = self.trace(sin_name, scope, nodes[0].name)
            if [p for p, _ in cos] != [p for p, _ in sin]:
                raise InputError(
                    f"{self.path}: node {nodes[0].name}: cos_cache and sin_cache come from differently shaped "
                    "graphs (one chosen by an If, the other not); posenc cannot pair them"
                )
            roles = self.branch_roles(cos_name, scope)
            for (path, cl), (_, sl) in zip(cos, sin):
                if cl.array.shape != sl.array.shape or cl.array.ndim != 2:
                    raise InputError(
                        f"{self.path}: node {nodes[0].name}: cos_cache {cl.array.shape} and sin_cache "
                        f"{sl.array.shape} are not two matrices of one shape"
                    )
                group = "/".join(roles[0].get(p, p) for p in path)
                out.append(Cache(group, cl.array, sl.array, cl.origin, sl.origin, nodes, cl.parts, roles[1]))
        if len(out) > 1:
            unnamed = [c for c in out if not c.group]
            for i, c in enumerate(unnamed):
                c.group = f"cache{i}"
            if len({c.group for c in out}) != len(out):
                for i, c in enumerate(out):
                    c.group = f"cache{i}"
        return out

    def branch_roles(self, name: str, scope: _Scope) -> tuple[dict[str, str], int | None]:
        """An If choosing caches: which branch is the long cache, by its condition (Greater(x, C): then = long),
        and the threshold C; ({}, None) when the cache is not chosen by an If or the condition is not such."""
        seen: set[str] = set()
        while True:
            where = scope.find(name)
            if where is None or where[1] != "node" or name in seen:
                return {}, None
            seen.add(name)
            node = where[2]
            if node.op_type in ("Identity", "Cast"):
                name, scope = node.input[0], where[0]
                continue
            if node.op_type != "If":
                return {}, None
            cond = where[0].find(node.input[0]) if node.input else None
            if cond is None or cond[1] != "node":
                return {}, None
            op = cond[2].op_type
            threshold = self.constant_int(cond[2].input[1], cond[0]) if len(cond[2].input) > 1 else None
            if op in ("Greater", "GreaterOrEqual"):
                return {"then": "long", "else": "short"}, threshold
            if op in ("Less", "LessOrEqual"):
                return {"then": "short", "else": "long"}, threshold
            return {}, None

    def constant_int(self, name: str, scope: _Scope) -> int | None:
        where = scope.find(name)
        if where is None:
            return None
        tensor = where[2] if where[1] == "init" else None
        if where[1] == "node" and where[2].op_type == "Constant":
            tensor = next((a.t for a in where[2].attribute if a.name == "value"), None)
        if tensor is None or _DTYPES.get(tensor.data_type) not in ("int32", "int64"):
            return None
        arr = self.array(tensor, f"constant {name}")
        return int(arr.reshape(-1)[0]) if arr.size == 1 else None

    # -- following a cache back to its data -----------------------------------------------------------------
    def trace(
        self, name: str, scope: _Scope, node_name: str, stack: tuple[tuple[int, str], ...] = ()
    ) -> list[tuple[tuple[str, ...], _Leaf]]:
        """Every array ``name`` can be, each with its path of If branches."""
        key = (id(scope.graph), name)
        if key in stack:
            raise InputError(f"{self.path}: value {name} feeds itself (a cycle in the graph); not a valid model")
        if len(stack) > 64:
            raise InputError(f"{self.path}: the cache {name} of node {node_name} is computed through over 64 nodes")
        stack = (*stack, key)
        where = scope.find(name)
        if where is None:
            raise InputError(
                f"{self.path}: node {node_name} reads {name}, which no initializer, input or node produces; "
                "the model is incomplete"
            )
        home, how, obj = where
        if how == "input":
            raise InputError(
                f"{self.path}: node {node_name} takes its cache {name} as a graph input, given at run time; "
                "posenc reads caches stored in the model"
            )
        if how == "init":
            return [((), _Leaf(self.array(obj, f"initializer {name}"), f"initializer {name}"))]
        node = obj
        op = node.op_type
        label = node.name or f"<unnamed {op}>"
        if op == "Constant":
            t = next((a.t for a in node.attribute if a.name == "value"), None)
            if t is None:
                raise InputError(f"{self.path}: Constant node {label} holds no tensor 'value' for the cache {name}")
            return [((), _Leaf(self.array(t, f"Constant {label}"), f"Constant node {label}"))]
        if op == "Identity":
            return self.trace(node.input[0], home, node_name, stack)
        if op == "Cast":
            to = next((a.i for a in node.attribute if a.name == "to"), None)
            dtype = _DTYPES.get(to) if to is not None else None
            if dtype not in _FLOATS:
                raise InputError(f"{self.path}: Cast node {label} casts the cache {name} to a non-float type")
            return [
                (p, _Leaf(_as_dtype(leaf.array, dtype), f"{leaf.origin} cast to {dtype} by {label}", leaf.parts))
                for p, leaf in self.trace(node.input[0], home, node_name, stack)
            ]
        if op == "Concat":
            axis = next((a.i for a in node.attribute if a.name == "axis"), None)
            pieces = [self.trace(i, home, node_name, stack) for i in node.input]
            if axis != 0 or any(len(p) != 1 or p[0][0] for p in pieces):
                raise InputError(
                    f"{self.path}: Concat node {label} joins caches other than along rows; posenc reads [small; large]"
                )
            leaves = [p[0][1] for p in pieces]
            if len({leaf.array.shape[1:] for leaf in leaves}) != 1 or len({leaf.array.dtype for leaf in leaves}) != 1:
                raise InputError(f"{self.path}: Concat node {label} joins caches of different widths or dtypes")
            self.budget.take(sum(int(leaf.array.nbytes) for leaf in leaves), f"Concat node {label}")
            arr = np.concatenate([leaf.array for leaf in leaves], axis=0)
            parts = [(int(leaf.array.shape[0]), leaf.origin) for leaf in leaves]
            return [((), _Leaf(arr, f"Concat node {label}", parts))]
        if op == "If":
            idx = list(node.output).index(name)
            out = []
            for branch in ("then_branch", "else_branch"):
                g = next((a.g for a in node.attribute if a.name == branch), None)
                if g is None or len(g.output) <= idx:
                    raise InputError(f"{self.path}: If node {label} has no {branch} output {idx} for the cache {name}")
                if len(stack) > MAX_DEPTH:
                    raise InputError(f"{self.path}: If nodes nested deeper than {MAX_DEPTH} levels")
                sub = _Scope.of(g, home, f"{label}.{branch}")
                tag = branch.split("_")[0]
                for p, leaf in self.trace(g.output[idx].name, sub, node_name, stack):
                    out.append(((tag, *p), _Leaf(leaf.array, f"{leaf.origin} in If {label} {tag}", leaf.parts)))
            return out
        raise InputError(
            f"{self.path}: node {node_name}'s cache {name} is computed at run time by {op} node {label}; "
            "posenc reads caches stored as data (initializers, Constants, Concat, If)"
        )

    def array(self, tensor: Any, what: str) -> np.ndarray:
        """A TensorProto's values, checked for size before anything is read."""
        dtype_name = _DTYPES.get(tensor.data_type)
        if dtype_name is None:
            raise InputError(f"{self.path}: {what} has ONNX data type {tensor.data_type}; caches are float tensors")
        dtype = _np_dtype(dtype_name)
        dims = [int(d) for d in tensor.dims]
        if any(d < 0 for d in dims):
            raise InputError(f"{self.path}: {what} has a negative dimension {dims}")
        n = 1
        for d in dims:
            n *= d
        nbytes = n * dtype.itemsize
        self.budget.take(nbytes, what)
        if tensor.data_location == 1:  # EXTERNAL
            arr = self._external(tensor, what, nbytes, dtype)
        elif tensor.raw_data:
            if len(tensor.raw_data) != nbytes:
                raise InputError(f"{self.path}: {what} holds {len(tensor.raw_data)} bytes for shape {dims} ({nbytes})")
            arr = np.frombuffer(tensor.raw_data, dtype=dtype).copy()
        else:
            try:
                arr = np.asarray(self.onnx.numpy_helper.to_array(tensor))
            except Exception as exc:
                raise InputError(f"{self.path}: {what} cannot be read ({type(exc).__name__})") from None
            if arr.size != n:
                raise InputError(f"{self.path}: {what} holds {arr.size} values for shape {dims}")
            if arr.dtype != dtype:
                arr = arr.view(dtype) if arr.dtype.itemsize == dtype.itemsize else arr.astype(dtype)
        return arr.reshape(dims)

    def _external(self, tensor: Any, what: str, nbytes: int, dtype: np.dtype) -> np.ndarray:
        info = {e.key: e.value for e in tensor.external_data}
        loc = info.get("location", "")
        try:
            offset = int(info.get("offset", "0") or 0)
            length = int(info["length"]) if info.get("length") else nbytes
        except ValueError:
            raise InputError(f"{self.path}: {what}: external data offset/length are not integers") from None
        if not loc or os.path.isabs(loc) or ".." in loc.replace("\\", "/").split("/"):
            raise InputError(
                f"{self.path}: {what} points to external data {loc!r} outside the model's directory; refused"
            )
        full = os.path.realpath(os.path.join(self.base, loc))
        if os.path.commonpath([full, self.trusted]) != self.trusted:
            raise InputError(
                f"{self.path}: {what} points to external data {loc!r} outside the model's directory; refused"
            )
        if length != nbytes or offset < 0:
            raise InputError(f"{self.path}: {what}: external data length {length} does not match its shape ({nbytes})")
        try:
            size = os.path.getsize(full)
            if offset + length > size:
                raise InputError(
                    f"{self.path}: {what} reads bytes {offset}..{offset + length} of {loc}, which holds {size}"
                )
            arr = np.empty(nbytes // dtype.itemsize, dtype=dtype)
            with open(full, "rb") as fh:  # read into the array itself: no second copy of a long cache
                fh.seek(offset)
                got = fh.readinto(arr.view(np.uint8).data)
        except OSError as exc:
            raise InputError(f"{self.path}: {what}: cannot read external data {loc} ({exc.strerror or exc})") from None
        if got != nbytes:
            raise InputError(f"{self.path}: {what} reads bytes {offset}..{offset + length} of {loc}, which ended early")
        return arr


def _np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _as_dtype(arr: np.ndarray, name: str) -> np.ndarray:
    return arr.astype(_np_dtype(name))


__all__ = ["EXTRA", "Cache", "OnnxCheck", "OnnxRope", "RotaryNode", "check_against", "is_onnx", "read_onnx"]


# ----- checking an export against the model's config --------------------------------------------------------
#: ulp of 1.0 per cache dtype
_ULP1 = {"float64": 2.0**-52, "float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}
_WIDTH = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}


@dataclass
class OnnxCheck:
    """What ``check MODEL.onnx --against config.json`` found: each divergence named, and what matched."""

    label: str
    against: str
    engine: str
    divergences: list[str]
    matched: list[str]
    warnings: list[str] = field(default_factory=list)  # what HF's reader of the config had to say

    @property
    def ok(self) -> bool:
        return not self.divergences

    def to_json(self) -> dict[str, Any]:
        return {"source": self.label, "against": self.against, "engine": self.engine, "ok": self.ok,
                "divergences": self.divergences, "matched": self.matched, "warnings": self.warnings}  # fmt: skip


def check_against(path: str, config: str, *, engine: str = "hf", layer_type: str | None = None,
                  max_bytes: int | None = None, model: OnnxRope | None = None,
                  caches: list[str] | None = None) -> OnnxCheck:  # fmt: skip
    """Compare the caches of an ONNX model with the tables ``engine`` computes for ``config`` (default: HF
    transformers'), naming each divergence (see :mod:`posenc_cli.models.onnx`); ``model``: the model already read,
    ``caches``: only the caches of these groups (those of one layer type)."""
    from .engines import engine_params, model_facts

    model = read_onnx(path, max_bytes=max_bytes) if model is None else model
    facts = model_facts(config, layer_type=layer_type)
    expect = engine_params(facts, engine, seq_len=None)
    out: list[str] = []
    matched: list[str] = []
    longrope = facts.params.get("scaling") == "longrope"
    for cache in model.caches:
        if caches is not None and cache.group not in caches:
            continue
        _check_nodes(cache, facts, out)
        roles = _roles(cache, facts, longrope)
        if roles is None:
            out.append(
                f"{_name(cache)}: {cache.cos.shape[0]} rows cannot be split into LongRoPE's short "
                f"({facts.original}) and long ({facts.max_positions}) caches"
            )
            continue
        for role, _rows, cos, sin in roles:
            where = _name(cache) + (f" [{role} part]" if role and not cache.group else "")
            _check_one(
                where, role, cos, sin, cache, facts, expect, engine, out, matched, (layer_type, engine, id(cache), role)
            )
    if longrope:
        _check_swap(model, facts, engine, out)
    return OnnxCheck(path, config, engine, list(dict.fromkeys(out)), matched, list(facts.warnings))


def _name(cache: Cache) -> str:
    return f"cache {cache.group}" if cache.group else f"cos/sin cache ({cache.cos_from})"


def _roles(cache: Cache, facts: Any, longrope: bool) -> list[tuple[str, int, np.ndarray, np.ndarray]] | None:
    """The (role, rows, cos, sin) pieces of one stored cache: a [small; large] concatenation is split."""
    n = cache.cos.shape[0]
    if not longrope:
        return [("", n, cache.cos, cache.sin)]
    if cache.group in ("short", "long"):
        return [(cache.group, n, cache.cos, cache.sin)]
    o = facts.original
    if cache.parts and len(cache.parts) == 2:
        o = cache.parts[0][0]
    elif n != facts.original + facts.max_positions:
        return [("long", n, cache.cos, cache.sin)] if n >= facts.max_positions else None
    return [("short", o, cache.cos[:o], cache.sin[:o]), ("long", n - o, cache.cos[o:], cache.sin[o:])]


def _check_nodes(cache: Cache, facts: Any, out: list[str]) -> None:
    """The nodes' attributes against the model: pairing, rotary dimension, heads."""
    r, head = facts.rot_dim, facts.head_dim
    width = int(cache.cos.shape[1])
    for node in cache.nodes:
        want = 1 if facts.layout == "interleaved" else 0
        if node.interleaved != want:
            say = "interleaved pairs (2k, 2k+1)" if node.interleaved else "rotate_half pairs (j, j + r/2)"
            out.append(
                f"node {node.name}: interleaved={node.interleaved} rotates {say}, but {facts.model_type} uses "
                f"layout {facts.layout} (interleaved={want})"
            )
        if node.rotary_embedding_dim and node.rotary_embedding_dim != r:
            out.append(
                f"node {node.name}: rotary_embedding_dim={node.rotary_embedding_dim}, but the model rotates {r} "
                f"of its head size {head}"
            )
        if not node.rotary_embedding_dim and r != head and node.op.endswith("RotaryEmbedding"):
            out.append(
                f"node {node.name}: rotary_embedding_dim=0 rotates the whole head ({head}), but the model rotates "
                f"only {r} features (partial rotary)"
            )
        heads = {facts.heads, facts.kv_heads} - {None}
        if node.num_heads and heads and node.num_heads not in heads:
            out.append(
                f"node {node.name}: num_heads={node.num_heads}, but the model has {facts.heads} query heads"
                + (f" and {facts.kv_heads} key/value heads" if facts.kv_heads else "")
            )
        if node.kv_num_heads and facts.kv_heads and node.kv_num_heads != facts.kv_heads:
            out.append(f"node {node.name}: kv_num_heads={node.kv_num_heads}, but the model has {facts.kv_heads}")
    if 2 * width != r:
        out.append(
            f"{_name(cache)}: {width} columns hold rotary dimension {2 * width}, but the model rotates {r} of its "
            f"head size {head}; values not compared"
        )
    io = {n.io_dtype for n in cache.nodes if n.io_dtype is not None}
    dt = _dtype_name(cache.cos.dtype)
    for io_dtype in io:
        if _WIDTH.get(io_dtype, 0) > _WIDTH.get(dt, 0):
            out.append(
                f"{_name(cache)}: stored as {dt}, but the nodes compute in {io_dtype}: precision lost to a "
                "narrower dtype"
            )
    held = _held_dtype(cache.cos, cache.sin)
    if held != dt:
        out.append(
            f"{_name(cache)}: stored as {dt}, but every value is a {held} number: computed or rounded in {held}, "
            "precision lost to a narrower dtype"
        )


def _dtype_name(dt: np.dtype) -> str:
    return "bfloat16" if dt.name == "bfloat16" or "bfloat16" in str(dt) else dt.name


def _held_dtype(cos: np.ndarray, sin: np.ndarray) -> str:
    """The narrowest float dtype that holds every value of a cache (its stored dtype unless it was rounded to a
    narrower one on the way); judged only on caches large enough for that to be no accident."""
    dt = _dtype_name(cos.dtype)
    if dt not in ("float32", "float64") or cos.size < 64:
        return dt
    for narrow in ("bfloat16", "float16", "float32"):
        if _WIDTH[narrow] >= _WIDTH[dt]:
            break
        nd = _np_dtype(narrow)
        if all(_round_trips(part, nd) for part in (cos, sin)):
            return narrow
    return dt


def _round_trips(values: np.ndarray, narrow: np.dtype) -> bool:
    """Whether every value survives a round trip through ``narrow``: block by block, so that a cache of wider
    values (the common case) is told after its first block and a long cache needs no full-size copies."""
    step = rows_per_block(int(np.prod(values.shape[1:])))
    for start in range(0, values.shape[0], step):
        block = values[start : start + step]
        if not np.array_equal(block.astype(narrow).astype(values.dtype), block):
            return False
    return True


def expected_encoding(params: dict[str, Any], rows: int, role: str, facts: Any) -> tuple[Any, float, float]:
    """The encoding whose ``cos_cache``/``sin_cache`` (float64, half width, scaled) an export of ``params`` holds
    for ``rows`` positions, its attention scaling and its largest frequency; ``role`` short/long picks LongRoPE's
    factors."""
    from ..encodings import make_encoding

    p = {k: v for k, v in params.items() if k not in ("length", "dtype", "cache", "seq_len")}
    p.update(length=rows, dtype="float64", cache="onnx")
    if p.get("scaling") == "longrope":
        p["seq_len"] = facts.original + 1 if role == "long" else facts.original
    enc = make_encoding(facts.kind, p)
    return enc, float(enc.attention_scaling), float(np.max(enc.inv_freq()))  # type: ignore[attr-defined]


def _ratio(cos: np.ndarray, sin: np.ndarray, enc: Any, s_exp: float, s: float, wmax: float,
           above: float | None = None, shown: tuple[Any, ...] | None = None) -> tuple[float, int, int, float]:  # fmt: skip
    """Largest error over its tolerance: float32 angle rounding of the exporter (|t w| 2**-24 with margin) plus
    two ulps of the stored dtype; (ratio, row, column, error). The expected caches are ``enc``'s unscaled
    (divided by ``s_exp``) and scaled by the measured ``s``, computed block by block over the rows. With
    ``above``, the first block whose ratio exceeds it ends the scan (a hypothesis needs only a yes or no).
    ``shown``: the key under which an :class:`Observer` (:func:`observing`) sees the blocks."""
    held = getattr(_LOCAL, "held", None)
    observer = held[0] if held is not None and shown is not None else None
    dt = _held_dtype(cos, sin)  # a float32 cache of float16 values is judged as float16 (its loss named apart)
    width = cos.shape[1]
    best = (-1.0, 0, 0, 0.0)
    # the expected rows within 10 |s| 2**-53 of the exact ones (Rope.fill_near, ~15x faster): the tolerance is at
    # least |s| 2**-21, so a ratio moves by less than 10 * 2**-32 < 2.4e-9 and an error by 1.2e-15 |s|; an
    # observer (the audit, which reports the differences in full) sees the exact rows
    near = getattr(enc, "fill_near", None) if observer is None else None
    # without an observer, NumPy's own float dtypes are subtracted as stored (each value widened exactly to float64
    # in the ufunc's loop: the same differences as from a float64 copy, without making it)
    as_stored = observer is None and cos.dtype.kind == sin.dtype.kind == "f"
    block = rows_per_block(2 * width)  # cos and sin side by side
    for start in range(0, cos.shape[0], block):
        stop = min(cos.shape[0], start + block)
        e = np.empty((stop - start, 2 * width))
        if near is not None:
            near(("cos_cache", "sin_cache"), start, stop, (e[:, :width], e[:, width:]))
        else:
            enc.fill("cos_cache", start, stop, e[:, :width])
            enc.fill("sin_cache", start, stop, e[:, width:])
        if as_stored:
            e *= s / s_exp
            np.subtract(cos[start:stop], e[:, :width], out=e[:, :width])
            np.subtract(sin[start:stop], e[:, width:], out=e[:, width:])
        else:
            # cos and sin side by side, each written into its half (no concatenated copies; float64 as before)
            a = np.empty_like(e)
            a[:, :width], a[:, width:] = cos[start:stop], sin[start:stop]
            if observer is not None:
                observer.block(shown, int(cos.shape[0]), start, stop, a, e)
            e *= s / s_exp
            np.subtract(a, e, out=e)
        err = np.abs(e, out=e)  # |stored - expected| in e's own memory
        t = np.arange(start, stop, dtype=np.float64)
        tol = abs(s) * (8 * 2.0**-24 * (t * wmax + 1) + 2 * _ULP1.get(dt, 2.0**-23))
        # the tolerance is one per row: the largest ratio is in the row whose largest error over its tolerance is
        # largest (x / t rounds monotonically in x), at that row's first column of the largest err / t: the cell
        # np.argmax(err / tol) finds (a nan first: in the first row holding one, at its first), without the
        # full-size quotient
        row = int(np.argmax(np.max(err, axis=1) / tol))
        ratios = err[row] / tol[row]
        col = int(np.argmax(ratios))
        ratio = ratios[col]
        if np.isnan(ratio) or float(ratio) > best[0]:
            best = (float(ratio), start + row, col % width, float(err[row, col]))
            if np.isnan(ratio) or (above is not None and best[0] > above):
                if observer is not None:
                    observer.finished(shown, stop == cos.shape[0])
                return best
    if observer is not None:
        observer.finished(shown, True)
    return best


def _check_one(where: str, role: str, cos: np.ndarray, sin: np.ndarray, cache: Cache, facts: Any,
               expect: dict[str, Any], engine: str, out: list[str], matched: list[str],
               shown: tuple[Any, ...] | None = None) -> None:  # fmt: skip
    rows = int(cos.shape[0])
    need = facts.original if role == "short" else facts.max_positions
    if rows < need:
        what = "original_max_position_embeddings" if role == "short" else "max_position_embeddings"
        out.append(f"{where}: {rows} rows, shorter than the model's {what} {need}")
    if 2 * cos.shape[1] != facts.rot_dim or rows == 0:
        return
    enc, s_exp, wmax = expected_encoding(expect, rows, role, facts)
    s_meas = float(cos[0, 0])  # position 0: cos = s exactly
    dt = _held_dtype(cos, sin)
    tol_s = 4 * _ULP1.get(dt, 2.0**-23) * max(1.0, abs(s_exp))
    if abs(s_meas - s_exp) > tol_s:
        if abs(s_meas - 1.0) <= tol_s:
            out.append(
                f"{where}: attention scaling missing: cos at position 0 is 1, the model's scaling is {s_exp:.7g}"
            )
        elif abs(s_meas - s_exp * s_exp) <= 2 * tol_s:
            out.append(f"{where}: attention scaling applied twice: cos at position 0 is {s_meas:.7g} = {s_exp:.7g}**2")
        else:
            out.append(f"{where}: attention scaling {s_meas:.7g}, the model's is {s_exp:.7g}")
    if s_meas == 0 or not np.isfinite(s_meas):
        out.append(f"{where}: cos at position 0 is {s_meas}; not a rotary cache")
        return
    # a scan that stops at the first block beyond the tolerance: a cache that matches is read in full all the
    # same; one that does not is measured in full only when no known mistake explains it (for the message)
    ratio, row, col, err = _ratio(cos, sin, enc, s_exp, s_meas, wmax, above=1.0, shown=shown)
    if ratio <= 1.0:
        matched.append(
            f"{where}: equals {engine}'s tables for the config (largest error {err:.2g}, {ratio:.2f} of the "
            f"tolerance); {rows} rows of {dt} from {cache.cos_from}"
        )
        return
    for why, variant in _hypotheses(expect, facts, cos, role):
        try:
            venc, vs_exp, vmax = expected_encoding(variant, rows, role, facts)
        except ParameterError:
            continue
        if _ratio(cos, sin, venc, vs_exp, s_meas, vmax, above=1.0)[0] <= 1.0:
            out.append(f"{where}: {why}")
            return
    ratio, row, col, err = _ratio(cos, sin, enc, s_exp, s_meas, wmax)
    out.append(
        f"{where}: values differ from {engine}'s tables for the config by {err:.3g} at position {row}, pair {col} "
        f"({ratio:.3g} times the tolerance), not explained by a known mistake"
    )


def _hypotheses(params: dict[str, Any], facts: Any, cos: np.ndarray, role: str) -> list[tuple[str, dict[str, Any]]]:
    """Known export mistakes, each as the parameters that would produce it."""
    out: list[tuple[str, dict[str, Any]]] = []
    scaling = params.get("scaling", "none")
    if scaling == "yarn":
        trunc = params.get("truncate")
        flipped = dict(params, truncate=not (trunc if trunc is not None else True))
        if trunc is None or trunc:
            out.append(("YaRN correction range not rounded (floor/ceil), as the config's truncate (default true) "
                        "asks", flipped))  # fmt: skip
        else:
            out.append(("YaRN correction range rounded, though the config says truncate: false", flipped))
    if scaling != "none":
        plain = {k: v for k, v in params.items() if k in ("base", "dim", "rotary_dim", "partial_rotary_factor",
                                                            "layout", "length")}  # fmt: skip
        rule = "YaRN" if scaling == "yarn" else f"rope scaling {scaling}"
        out.append((f"{rule} not applied: the frequencies are plain RoPE's (base {params.get('base')})", plain))
    if scaling == "longrope":
        other = "long" if role == "short" else "short"
        key = f"{other}_factor"
        out.append(
            (f"LongRoPE's {other} factors used for the {role} cache", dict(params, **{f"{role}_factor": params[key]}))
        )
    # another base: estimated from the first pair's angle at position 1 (w_0 = 1 always; w_1 = base^(-2/r))
    if cos.shape[0] > 1 and cos.shape[1] > 1:
        s = float(cos[0, 0])
        c1 = float(cos[1, 1]) / s
        w1 = float(np.arccos(np.clip(c1, -1, 1)))
        base0 = float(params.get("base", 10000.0))
        r = facts.rot_dim
        if 0 < w1 < 1:
            exp_w1 = base0 ** (-2.0 / r)
            est = base0 * (w1 / exp_w1) ** (-r / 2.0)
            nice = float(f"{est:.3g}")
            if abs(nice - base0) > 1e-6 * base0:
                out.append((f"base {nice:g} (the config's rope_theta is {base0:g})", dict(params, base=nice)))
    return out


def _check_swap(model: OnnxRope, facts: Any, engine: str, out: list[str]) -> None:
    """LongRoPE: a short cache that holds the long factors and a long one that holds the short: swapped."""
    groups = {c.group: c for c in model.caches}
    msgs = [m for m in out if "LongRoPE's long factors used for the short cache" in m]
    msgs2 = [m for m in out if "LongRoPE's short factors used for the long cache" in m]
    if msgs and msgs2:
        for m in msgs + msgs2:
            out.remove(m)
        which = "If branches" if {"short", "long"} <= set(groups) else "parts of the concatenated cache"
        out.append(f"LongRoPE small/large caches swapped: the {which} hold each other's factors")
