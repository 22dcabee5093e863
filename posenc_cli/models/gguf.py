r"""Reading the RoPE description of a GGUF file (llama.cpp's model format).

A GGUF file is (all little-endian; spec: ggml-org/ggml docs/gguf.md)::

    magic  "GGUF"          4 bytes
    version                uint32 (2 or 3)
    tensor_count           uint64
    kv_count               uint64
    kv_count x  { key: string, value_type: uint32, value }
    tensor_count x { name: string, n_dims: uint32, dims: uint64[n_dims], type: uint32, offset: uint64 }
    padding to general.alignment (default 32), then the tensor data (offsets are relative to its start)

    string = uint64 length + UTF-8 bytes;  array = uint32 item type + uint64 count + items
    value types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool, 8 string, 9 array, 10 u64, 11 i64, 12 f64

The values are read with the ``gguf`` package (llama.cpp's own reader, ``pip install 'posenc-cli[gguf]'``),
imported on first use. Before it sees a file, :func:`validate` walks the header itself with every length checked
against the bytes that remain, so a hostile file (bad magic, absurd counts, strings or arrays longer than the file,
unknown value types, tensor data past the end) is refused in one line with memory bounded by the header's size,
never handed to a reader that would allocate what the file claims.

:func:`read_gguf` returns :class:`GgufRope`: the ``{arch}.rope.*`` keys and the ``rope_freqs`` /
``rope_factors_long`` / ``rope_factors_short`` tensors, each value with the key or tensor it came from.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError, ParameterError

EXTRA_HINT = "pip install 'posenc-cli[gguf]'"
MAGIC = b"GGUF"
#: Bytes of the fixed-size value types.
_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9
#: Longest key the spec allows; longest dims a tensor has in ggml.
MAX_KEY = 65535
MAX_DIMS = 4
#: Tensors posenc reads (others are only walked): name -> what it is.
ROPE_TENSORS = ("rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight")
#: ggml type id of float32 tensors.
GGML_F32 = 0
#: Bytes per element of the unquantised ggml types (F32, F16, BF16): enough to check where a rope tensor ends.
_GGML_ELEM = {0: 4, 1: 2, 30: 2}


class GgufError(InputError):
    """A GGUF file posenc cannot read (exit 2)."""


def is_gguf(text: str) -> bool:
    """Whether ``text`` names a GGUF file: a ``.gguf`` path, or an existing file that starts with ``GGUF``."""
    if text == "-":
        return False
    if text.lower().endswith(".gguf"):
        return True
    if not os.path.isfile(text):
        return False
    try:
        with open(text, "rb") as fh:
            return fh.read(4) == MAGIC
    except OSError:
        return False


def import_gguf() -> Any:
    """The ``gguf`` package, or a one-line error naming the extra."""
    try:
        import gguf
    except ImportError:
        raise InputError(f"reading GGUF files needs the gguf package; {EXTRA_HINT}") from None
    return gguf


@dataclass
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    type: int
    offset: int  # absolute, in the file


@dataclass
class Header:
    """What :func:`validate` learnt walking the header: the version, the keys' value types, the tensors."""

    version: int
    n_tensors: int
    key_types: dict[str, int]
    tensors: dict[str, TensorInfo]
    data_start: int
    size: int


class _Walker:
    def __init__(self, fh: Any, size: int, label: str) -> None:
        self.fh, self.size, self.label, self.pos = fh, size, label, 0

    def fail(self, what: str) -> GgufError:
        return GgufError(f"{self.label}: {what}; not a valid GGUF file (re-download or re-convert it)")

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > self.size:
            raise self.fail(f"{what} at byte {self.pos} runs past the end of the file ({self.size} bytes)")
        self.fh.seek(self.pos)
        data = self.fh.read(n)
        if len(data) != n:
            raise self.fail(f"{what} at byte {self.pos} is truncated")
        self.pos += n
        return bytes(data)

    def skip(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.size:
            raise self.fail(f"{what} at byte {self.pos} runs past the end of the file ({self.size} bytes)")
        self.pos += n

    def u32(self, what: str) -> int:
        return int(struct.unpack("<I", self.take(4, what))[0])

    def u64(self, what: str) -> int:
        return int(struct.unpack("<Q", self.take(8, what))[0])

    def string(self, what: str, limit: int | None = None, keep: bool = True) -> str:
        n = self.u64(f"the length of {what}")
        if limit is not None and n > limit:
            raise self.fail(f"{what} claims {n} bytes (at most {limit})")
        if not keep:
            self.skip(n, what)
            return ""
        raw = self.take(n, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8") from None

    def value(self, vtype: int, what: str, depth: int = 0) -> None:
        if vtype in _SIZES:
            self.skip(_SIZES[vtype], what)
        elif vtype == _STRING:
            self.string(what, keep=False)
        elif vtype == _ARRAY:
            if depth > 1:
                raise self.fail(f"{what} nests arrays deeper than llama.cpp reads")
            itype = self.u32(f"the item type of {what}")
            count = self.u64(f"the length of {what}")
            if itype in _SIZES:
                self.skip(count * _SIZES[itype], f"{what} ({count} items)")
            elif itype in (_STRING, _ARRAY):
                minimum = 8 if itype == _STRING else 12
                if count * minimum > self.size - self.pos:
                    raise self.fail(f"{what} claims {count} items, more than the file can hold")
                for _ in range(count):
                    self.value(itype, what, depth + 1)
            else:
                raise self.fail(f"{what} has unknown item type {itype}")
        else:
            raise self.fail(f"{what} has unknown value type {vtype}")


def validate(path: str, label: str | None = None) -> Header:
    """Walk a GGUF file's header with every length checked against the file's size (see the module docstring)."""
    label = label or path
    try:
        size = os.path.getsize(path)
        fh = open(path, "rb")  # noqa: SIM115 - closed by the with below, after the errors are translated
    except FileNotFoundError:
        raise GgufError(f"{label}: no such file; pass a .gguf model file") from None
    except IsADirectoryError:
        raise GgufError(f"{label}: is a directory; pass a .gguf model file") from None
    except OSError as exc:
        raise GgufError(f"{label}: cannot read ({exc.strerror or exc})") from None
    with fh:
        w = _Walker(fh, size, label)
        magic = w.take(4, "the magic") if size >= 4 else b""
        if magic != MAGIC:
            raise GgufError(f"{label}: does not start with GGUF (starts with {magic!r}); pass a .gguf model file")
        version = w.u32("the version")
        if version not in (2, 3):
            raise w.fail(f"version {version} (posenc reads GGUF v2 and v3)")
        n_tensors = w.u64("the tensor count")
        n_kv = w.u64("the key count")
        # every key needs >= 8 + 4 + 1 bytes, every tensor info >= 8 + 4 + 4 + 8 bytes: counts beyond are lies
        if n_kv * 13 > size - w.pos:
            raise w.fail(f"{n_kv} keys claimed, more than the file can hold")
        if n_tensors * 24 > size - w.pos:
            raise w.fail(f"{n_tensors} tensors claimed, more than the file can hold")
        key_types: dict[str, int] = {}
        alignment = 32
        for i in range(n_kv):
            key = w.string(f"key {i}", limit=MAX_KEY)
            vtype = w.u32(f"the type of key {key!r}")
            if key == "general.alignment":
                if vtype != 4:
                    raise w.fail(f"general.alignment has value type {vtype}, not uint32")
                alignment = w.u32("general.alignment")
                if alignment == 0 or alignment & (alignment - 1):
                    raise w.fail(f"general.alignment {alignment} is not a power of two")
            else:
                w.value(vtype, f"the value of {key!r}")
            key_types[key] = vtype
        tensors: dict[str, TensorInfo] = {}
        infos = []
        for i in range(n_tensors):
            name = w.string(f"tensor name {i}", limit=MAX_KEY)
            n_dims = w.u32(f"the dims of tensor {name!r}")
            if n_dims > MAX_DIMS:
                raise w.fail(f"tensor {name!r} has {n_dims} dims (ggml has at most {MAX_DIMS})")
            shape = tuple(w.u64(f"a dim of tensor {name!r}") for _ in range(n_dims))
            ttype = w.u32(f"the type of tensor {name!r}")
            offset = w.u64(f"the offset of tensor {name!r}")
            infos.append((name, shape, ttype, offset))
        data_start = -(-w.pos // alignment) * alignment
        for name, shape, ttype, offset in infos:
            start = data_start + offset
            if start > size:
                raise w.fail(f"tensor {name!r} starts at byte {start}, past the end of the file ({size} bytes)")
            if name in ROPE_TENSORS:
                count = 1
                for d in shape:
                    count *= d
                nbytes = count * _GGML_ELEM.get(ttype, 0)
                if ttype not in _GGML_ELEM:
                    raise w.fail(f"tensor {name!r} has ggml type {ttype}; llama.cpp stores it as float32")
                if start + nbytes > size:
                    raise w.fail(f"tensor {name!r} ({nbytes} bytes at {start}) runs past the end of the file")
            tensors[name] = TensorInfo(name, shape, ttype, start)
    return Header(version, n_tensors, key_types, tensors, data_start, size)


@dataclass
class GgufRope:
    """The RoPE description of a GGUF file.

    ``values`` maps llama.cpp's hparam names (``freq_base``, ``n_rot``, ...) to their values as stored, and
    ``origins`` says which key or tensor each came from; ``factors`` holds the per-pair divisor tensors present.
    """

    path: str
    arch: str
    values: dict[str, Any]
    origins: dict[str, str]
    factors: dict[str, Any] = field(default_factory=dict)  # tensor name -> float32 array
    keys: dict[str, Any] = field(default_factory=dict)  # every {arch}.rope.* / context / head key as stored
    n_layer: int = 0
    warnings: list[str] = field(default_factory=list)


#: GGUF value type ids posenc accepts for each kind of value.
_INT_TYPES = {0, 1, 2, 3, 4, 5, 10, 11}
_FLOAT_TYPES = {6, 12}


def read_gguf(path: str, label: str | None = None) -> GgufRope:
    """The rope keys and tensors of a GGUF file (validated first, then read with the ``gguf`` package)."""
    label = label or path
    header = validate(path, label)
    gguf = import_gguf()
    try:
        reader = gguf.GGUFReader(path, "r")
    except Exception as exc:  # the header walk passed: anything left is the reader's own refusal
        raise GgufError(f"{label}: the gguf reader refused it ({type(exc).__name__}: {exc})") from None

    def _contents(f: Any, key: str) -> Any:
        try:
            return f.contents()
        except UnicodeDecodeError as exc:  # the gguf package decodes strings as UTF-8
            raise GgufError(f"{label}: {key} is not UTF-8 text (byte {exc.start}); the file is malformed") from None

    def get(key: str, kind: str) -> Any:
        f = reader.fields.get(key)
        if f is None:
            return None
        vtype = header.key_types.get(key)
        want = {"int": _INT_TYPES, "float": _FLOAT_TYPES | _INT_TYPES, "str": {_STRING}, "bool": {7}}.get(kind)
        if kind == "ints":
            if vtype != _ARRAY:
                raise GgufError(f"{label}: {key} has value type {vtype}, expected an array of integers")
            vals = _contents(f, key)
            if not all(isinstance(v, int) for v in vals):
                raise GgufError(f"{label}: {key} holds {vals!r}, expected integers")
            return [int(v) for v in vals]
        if want is not None and vtype not in want:
            raise GgufError(f"{label}: {key} has GGUF value type {vtype}, expected {kind}; the file is malformed")
        value = _contents(f, key)
        if kind == "float":
            value = float(value)
        elif kind == "int":
            value = int(value)
        return value

    arch = get("general.architecture", "str")
    if arch is None:
        raise GgufError(f"{label}: no general.architecture key; not a llama.cpp model file")
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    keys: dict[str, Any] = {}
    spec = {
        "context_length": ("context_length", "int"),
        "n_embd": ("embedding_length", "int"),
        "n_head": ("attention.head_count", "int"),
        "n_layer": ("block_count", "int"),
        "key_length": ("attention.key_length", "int"),
        "key_length_swa": ("attention.key_length_swa", "int"),
        "sliding_window": ("attention.sliding_window", "int"),
        "n_rot": ("rope.dimension_count", "int"),
        "n_rot_swa": ("rope.dimension_count_swa", "int"),
        "sections": ("rope.dimension_sections", "ints"),
        "freq_base": ("rope.freq_base", "float"),
        "freq_base_swa": ("rope.freq_base_swa", "float"),
        "scaling_type": ("rope.scaling.type", "str"),
        "scaling_factor": ("rope.scaling.factor", "float"),
        "scale_linear": ("rope.scale_linear", "float"),
        "attn_factor": ("rope.scaling.attn_factor", "float"),
        "orig_ctx": ("rope.scaling.original_context_length", "int"),
        "finetuned": ("rope.scaling.finetuned", "bool"),
        "yarn_log_mul": ("rope.scaling.yarn_log_multiplier", "float"),
        "yarn_ext_factor": ("rope.scaling.yarn_ext_factor", "float"),
        "yarn_attn_factor": ("rope.scaling.yarn_attn_factor", "float"),
        "yarn_beta_fast": ("rope.scaling.yarn_beta_fast", "float"),
        "yarn_beta_slow": ("rope.scaling.yarn_beta_slow", "float"),
    }
    for name, (suffix, kind) in spec.items():
        key = f"{arch}.{suffix}"
        if name in ("n_head",) and header.key_types.get(key) == _ARRAY:
            v = get(key, "ints")  # per-layer head counts: llama.cpp's n_head() is layer 0's
            v = v[0] if v else None
        else:
            v = get(key, kind)
        if v is not None:
            values[name] = v
            origins[name] = f"key {key}"
            keys[key] = v
    for key in reader.fields:
        if key.startswith(f"{arch}.rope.") and key not in keys:
            keys[key] = _plain(_contents(reader.fields[key], key))
    factors: dict[str, Any] = {}
    import numpy as np

    for t in reader.tensors:
        if t.name in ROPE_TENSORS:
            if int(t.tensor_type) != GGML_F32:
                raise GgufError(f"{label}: tensor {t.name} has ggml type {t.tensor_type.name}; llama.cpp needs F32")
            arr = np.array(t.data, dtype=np.float32).reshape(-1)
            if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
                raise GgufError(f"{label}: tensor {t.name} holds non-positive or non-finite divisors")
            factors[t.name] = arr
            origins[t.name] = f"tensor {t.name} ({arr.size} float32)"
    n_layer = int(values.get("n_layer", 0))
    return GgufRope(path, str(arch), values, origins, factors, keys, n_layer)


def _plain(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "item"):
        return v.item()
    return v


def require_key(rope: GgufRope, name: str, what: str) -> Any:
    if name not in rope.values:
        raise ParameterError(f"{rope.path}: no {what} key; llama.cpp cannot load it either")
    return rope.values[name]
