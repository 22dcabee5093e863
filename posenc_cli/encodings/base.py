"""The one mechanism every encoding kind is built on.

An encoding is a frozen, validated dataclass of parameters. Its tensors are described by
:meth:`Encoding.tensor_specs` (name -> shape and dtype) and any row range ``[start, stop)`` (along axis 0)
of any tensor is computed by :meth:`Encoding.fill`. Writers stream with it, threads split work with it,
and ``check`` regenerates huge tables block by block with it.

Writing a new kind means subclassing :class:`Encoding`, declaring parameters as dataclass fields made
with :func:`param`, and implementing ``tensor_specs`` and ``_rows`` (or ``fill`` where speed matters).
Parameters are parsed from ``key=value`` strings using each field's type hint, so the CLI, the spec
grammar ``KIND:key=value,...`` and file metadata share one parser.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import ParameterError, ref

#: The dtype of every integer table (``INTEGER_TABLE`` kinds: T5 buckets, Shaw indices), and of their ``dtype``.
INTEGER_DTYPE = "int64"
#: Output dtypes for floating tensors, by name.
FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16")


def resolve_dtype(name: str) -> np.dtype:
    """The NumPy dtype for a dtype name (``bfloat16`` comes from ml_dtypes)."""
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if name in ("float64", "float32", "float16", "int64", "int32", "bool"):
        return np.dtype(name)
    raise ParameterError(f"unknown dtype {name!r}; choose from: {', '.join(FLOAT_DTYPES)}")


@functools.cache  # a dtype's name costs ~40 us in NumPy 2, and every verdict names its arithmetic
def dtype_name(dtype: np.dtype) -> str:
    """The name posenc uses for a dtype (``bfloat16`` rather than ml_dtypes' repr)."""
    return "bfloat16" if dtype.name == "bfloat16" else np.dtype(dtype).name


def param(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    choices: tuple[str, ...] | None = None,
    low: float | None = None,
    low_open: bool = False,
    high: float | None = None,
) -> Any:
    """A parameter field: its default, its meaning, and the range or choices that validate it.

    ``low``/``high`` bound numeric values (``low_open`` makes the lower bound strict).
    """
    meta = {"help": help, "choices": choices, "low": low, "low_open": low_open, "high": high}
    if default is dataclasses.MISSING:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


#: Rows at most this far apart are read by :meth:`Encoding.take` in one call to ``rows``, the rows between them
#: included (a call costs about what computing a few dozen rows does).
TAKE_GAP = 64

#: Other names users may type for a parameter (``-p len=512``, ``generate("sinusoidal", len=512)``).
ALIASES = {"len": "length"}


def display_name(name: str) -> str:
    """A parameter as users type it: the same name in Python, ``-p key=value``, specs and ``--json``."""
    return name


class TensorSpec(typing.NamedTuple):
    """Shape and dtype of one named tensor; rows run along axis 0 (a named tuple, like :class:`AngleTerms`)."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


class AngleTerms(typing.NamedTuple):
    """How a tensor's values follow angles, as data for the inspection code's error model
    (:mod:`posenc_cli.inspect.tolerance`): column ``c`` holds ``amplitude`` times the sin or cos of
    ``(offset + row) * freq[c]`` (``freq`` 0: a constant or zero column). A named tuple, not a dataclass: records
    built at import cost start-up (a dataclass compiles five methods)."""

    freq: np.ndarray
    amplitude: float
    offset: int = 0


class ParamInfo(typing.NamedTuple):
    """What ``posenc kinds`` shows of one parameter (a named tuple, like :class:`AngleTerms`)."""

    name: str
    type: str
    default: Any
    help: str
    choices: tuple[str, ...] | None


_TYPE_HINTS: dict[type, dict[str, Any]] = {}
_ANNOTATIONS: dict[tuple[str, str], Any] = {}


def _type_hints(cls: type) -> dict[str, Any]:
    """The types of ``cls``'s parameter fields, evaluated once per class.

    Like ``typing.get_type_hints(cls)`` for the init fields only, but each distinct annotation string of a
    module is compiled once for every kind (``get_type_hints`` compiles every string of every class in the
    MRO each time: a tenth of ``posenc generate``'s start-up). Read only: the dict is shared."""
    if cls not in _TYPE_HINTS:
        hints = {}
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            tp = f.type
            if isinstance(tp, str):
                owner = next(c for c in cls.__mro__ if f.name in vars(c).get("__annotations__", {}))
                key = (owner.__module__, tp)
                if key not in _ANNOTATIONS:  # the kinds' own annotations, in their module's namespace
                    _ANNOTATIONS[key] = eval(tp, vars(sys.modules[owner.__module__]))
                tp = _ANNOTATIONS[key]
            hints[f.name] = tp
        _TYPE_HINTS[cls] = hints
    return _TYPE_HINTS[cls]


def _type_label(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _type_label(inner[0]) + "?"
    if origin is tuple:
        return f"list[{_type_label(typing.get_args(tp)[0])}]"
    return getattr(tp, "__name__", str(tp))


def _parse_scalar(tp: type, name: str, text: str) -> Any:
    t = text.strip()
    if tp is bool:
        low = t.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ParameterError(f"parameter {name}={text!r} is not a boolean; use true or false")
    if tp is int:
        try:
            return int(t)
        except ValueError:
            try:
                f = float(t)
            except ValueError:
                f = math.nan
            if math.isfinite(f) and f == int(f):
                return int(f)
            raise ParameterError(f"parameter {name}={text!r} is not an integer; use e.g. {name}=8") from None
    if tp is float:
        try:
            value = float(t)
        except ValueError:
            raise ParameterError(f"parameter {name}={text!r} is not a number; use e.g. {name}=1.5") from None
        if not math.isfinite(value):
            raise ParameterError(f"parameter {name}={text!r} must be a finite number")
        return value
    return t


@functools.cache
def _type_shape(tp: Any) -> tuple[str, Any]:
    """``("optional", inner)``, ``("tuple", item)`` or ``("plain", tp)``: what :func:`parse_value` reads of a type
    hint, once per hint (``typing.get_origin`` / ``get_args`` on every value of every construction cost more than
    the parsing itself)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return "optional", next(a for a in typing.get_args(tp) if a is not type(None))
    if origin is tuple:
        (item,) = [a for a in typing.get_args(tp) if a is not Ellipsis]
        return "tuple", item
    return "plain", tp


def parse_value(tp: Any, name: str, value: Any) -> Any:
    """Convert ``value`` (a string from the command line or metadata, or a Python value) to type ``tp``."""
    try:
        shape, inner = _type_shape(tp)
    except TypeError:  # an unhashable hint: read it afresh
        shape, inner = _type_shape.__wrapped__(tp)
    if shape == "optional":
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null")):
            return None
        return parse_value(inner, name, value)
    if shape == "tuple":
        item = inner
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                import json

                try:
                    value = json.loads(text)
                except json.JSONDecodeError:
                    raise ParameterError(
                        f"parameter {name}={value!r} is not a JSON list; use e.g. {name}=[1.0,1.5]"
                    ) from None
            else:
                value = [v for v in text.replace(";", ",").split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise ParameterError(f"parameter {name}={value!r} is not a list; use e.g. {name}=1.0;1.5")
        return tuple(parse_value(item, name, v) for v in value)
    if isinstance(value, str):
        return _parse_scalar(tp, name, value)
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ParameterError(f"parameter {name}={value!r} must be a finite number")
        return float(value)
    if tp is int and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if tp is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if tp is bool and isinstance(value, bool):
        return value
    if tp is str and isinstance(value, str):
        return value
    return _parse_scalar(tp, name, str(value))


def format_value(value: Any) -> str:
    """The string form of a parameter value, as written to metadata (``parse_value`` reads it back)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, tuple):
        import json

        return json.dumps([v for v in value])
    return str(value)


_FIELD_RULES: dict[type, tuple[tuple[dataclasses.Field, Any, Any, bool, Any], ...]] = {}


def _field_rules(cls: type) -> tuple[tuple[dataclasses.Field, Any, Any, bool, Any], ...]:
    """``(field, choices, low, low_open, high)`` of each field of ``cls`` that :meth:`Encoding._check_field` can
    refuse, read once per class (a build checks each of its fields: a rope has 27)."""
    rules = _FIELD_RULES.get(cls)
    if rules is None:
        rules = _FIELD_RULES[cls] = tuple(
            (f, m.get("choices"), m.get("low"), bool(m.get("low_open")), m.get("high"))
            for f in dataclasses.fields(cls)
            for m in (f.metadata,)
            if m.get("choices") or m.get("low") is not None or m.get("high") is not None
        )
    return rules


@dataclass(frozen=True)
class Encoding:
    """Base class of every encoding kind.

    Subclasses are frozen dataclasses whose fields are the kind's parameters. ``length`` is the number of
    positions (rows); ``dim`` the model/feature dimension where the kind has one; ``dtype`` the output dtype
    of its floating tensors.
    """

    KIND: ClassVar[str] = ""
    #: Which structure reader of :mod:`posenc_cli.inspect.hints` proposes this kind's parameters from a table
    #: (``"module:function"``), or None (never proposed by identify). Data: the kinds import no inspection code.
    IDENTIFY: ClassVar[str | None] = None
    SUMMARY: ClassVar[str] = ""
    #: The public implementations each convention reproduces, one line each.
    REFERENCES: ClassVar[tuple[str, ...]] = ()
    #: Named bundles of parameter values (``preset=NAME``); explicit parameters override them.
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {}
    #: Documentation of each preset: what public implementation it reproduces.
    PRESET_DOCS: ClassVar[dict[str, str]] = {}
    #: The tensor a single-table consumer (check, compare, preview) uses by default.
    PRIMARY: ClassVar[str] = "pe"
    #: Whether ``dim`` is required (False: the kind ignores it or derives it).
    NEEDS_DIM: ClassVar[bool] = True
    #: Whether the primary tensor holds integers (T5 buckets, Shaw indices) rather than floats. Such a kind
    #: declares ``dtype`` as :data:`INTEGER_DTYPE` (its only choice), so that its metadata says what its bytes
    #: are; asking it for a float dtype is a ParameterError naming the tensor.
    INTEGER_TABLE: ClassVar[bool] = False
    #: What each tensor this kind can produce *is*, by name, so that checks, plots and diagnosis pick their
    #: data by role and never by kind: ``table`` (one row per position), ``cos`` / ``sin`` (a rotary pair,
    #: rows = positions), ``cos-cache`` / ``sin-cache`` (ONNX half-width caches), ``inv-freq`` (1-D angular
    #: frequencies), ``scale`` (per-position multipliers), ``matrix`` (query x key, or heads x query x key).
    ROLES: ClassVar[dict[str, str]] = {"pe": "table"}
    #: The properties this kind is judged by (names in ``posenc_cli.checks.CHECKS``), each with whether it
    #: is required by default. A property not listed is not measured on this kind.
    PROPERTIES: ClassVar[dict[str, bool]] = {"finite": True, "matches-spec": True}
    #: ``check``'s ``monotone`` property: how a ``matrix`` moves with distance (see checks/matrix.py).
    MONOTONE: ClassVar[str | None] = None
    #: The plot views (``posenc plot --view``) that show this kind.
    VIEWS: ClassVar[tuple[str, ...]] = ()
    #: Small parameters that build an example (``posenc kinds`` lists its tensors, tests build it).
    EXAMPLE: ClassVar[dict[str, Any]] = {"length": 4, "dim": 8}
    #: The length a kind that applies at any length is audited at when neither ``--len`` nor the model's config
    #: gives one: ``(rows, where it comes from)``; None for kinds whose configs say their length.
    DEFAULT_LENGTH: ClassVar[tuple[int, str] | None] = None
    #: The parameters that say which rows are not positions (:meth:`extra_rows`), named when a report says so.
    EXTRA_ROWS_FROM: ClassVar[tuple[str, ...]] = ()

    length: int = param(help="number of positions (rows)", low=1)
    # typed int: __post_init__ refuses a missing dim for every kind with NEEDS_DIM; the kinds that do without it
    # declare their own ``dim: int | None``
    dim: int = param(None, "feature dimension (columns)", low=1)
    dtype: str = param("float32", "output dtype of floating tensors", choices=FLOAT_DTYPES)

    # ----- hooks that later work reads (defaults: the kind has none) ---------------------------
    @classmethod
    def value_bound(cls, metadata: dict[str, str]) -> float:
        """The largest magnitude a value of this kind's tables may have (``check``'s ``bounded``)."""
        return 1.0

    @classmethod
    def causal_mask(cls, metadata: dict[str, str]) -> bool:
        """Whether -inf above a ``matrix``'s diagonal is a causal mask rather than a fault (``finite``)."""
        return False

    @classmethod
    def shape_params(cls, shape: tuple[int, ...]) -> dict[str, int]:
        """``length`` and ``dim`` of a table of this kind whose primary tensor has ``shape`` (a spec compared with
        a file takes them from the file): rows are positions and columns ``dim``; a ``matrix`` is query x key
        (``length`` x ``length``), or heads x query x key with ``dim`` the heads."""
        role = cls.ROLES.get(cls.PRIMARY)
        if not shape:
            return {}
        if role == "matrix":
            return {"length": shape[1], "dim": shape[0]} if len(shape) == 3 else {"length": shape[0]}
        return {"length": shape[0], "dim": shape[1]} if len(shape) >= 2 else {"length": shape[0]}

    def angle_terms(self, name: str) -> AngleTerms | None:
        """Tensor ``name`` as sines and cosines of ``position * frequency`` per column (for the float32
        formula's error model), or None when its values are not such angles. Default: None."""
        return None

    @classmethod
    def metadata_param(cls, metadata: dict[str, str], name: str) -> Any:
        """Parameter ``name`` as a file's metadata states it, else this kind's default for it."""
        hints = _type_hints(cls)
        text = metadata.get(name)
        if text is not None:
            try:
                return parse_value(hints[name], name, text)
            except ParameterError:
                pass
        f = next(f for f in cls.param_fields() if f.name == name)
        return None if f.default is dataclasses.MISSING else f.default

    # ----- construction -------------------------------------------------------------------------
    def __post_init__(self) -> None:
        if self.INTEGER_TABLE and self.dtype in FLOAT_DTYPES:
            # the metadata must say what the bytes are: an integer table is never cast to a float dtype

            raise ParameterError(
                f"{self.KIND}'s tensor {self.PRIMARY!r} holds {INTEGER_DTYPE} integers; {ref('dtype')} "
                f"{self.dtype} cannot apply to it: drop {ref('dtype')}"
            )
        for f, choices, low, low_open, high in _field_rules(type(self)):
            v = getattr(self, f.name)
            if v is None:
                continue
            t = type(v)
            # the common case decided inline; anything else (a refusal, a tuple, a boolean) by _check_field
            if (t is int or t is float) and not choices:
                if (low is None or (v > low if low_open else v >= low)) and (high is None or v <= high):
                    continue
            elif t is str and (not choices or v in choices):
                continue
            self._check_field(f, v)
        if self.NEEDS_DIM and self.dim is None:
            raise ParameterError(f"{self.KIND} needs dim: pass {ref('dim')} 128, say")
        self.validate()

    def _check_field(self, f: dataclasses.Field, value: Any) -> None:
        meta = f.metadata
        if value is None or not meta:
            return
        name = display_name(f.name)
        choices = meta.get("choices")
        if choices and value not in choices:
            raise ParameterError(f"unknown {name} {value!r} for {self.KIND}; choose from: {', '.join(choices)}")
        low, high = meta.get("low"), meta.get("high")
        if low is None and high is None:
            return
        values = value if isinstance(value, tuple) else (value,)
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            if low is not None and (v <= low if meta.get("low_open") else v < low):
                op = ">" if meta.get("low_open") else ">="
                raise ParameterError(
                    f"parameter {name}={format_value(v)} is out of range; {self.KIND} needs {name} {op} {format_value(low)}"
                )
            if high is not None and v > high:
                raise ParameterError(
                    f"parameter {name}={format_value(v)} is out of range; {self.KIND} needs {name} <= {format_value(high)}"
                )

    def validate(self) -> None:
        """Cross-parameter validation; raise :class:`ParameterError`."""

    @classmethod
    def param_fields(cls) -> list[dataclasses.Field]:
        return [f for f in dataclasses.fields(cls) if f.init]

    @classmethod
    def param_infos(cls) -> list[ParamInfo]:
        hints = _type_hints(cls)
        out = []
        for f in cls.param_fields():
            default = None if f.default is dataclasses.MISSING else f.default
            out.append(
                ParamInfo(
                    f.name, _type_label(hints[f.name]), default, f.metadata.get("help", ""), f.metadata.get("choices")
                )
            )
        if cls.PRESETS:
            out.append(
                ParamInfo("preset", "str", None, "one word that sets several parameters at once", tuple(cls.PRESETS))
            )
        return out

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Encoding:
        """Build from ``name -> value`` (strings are parsed); ``preset`` expands first, explicit values win."""
        doubled = [k for k in params if k in ALIASES and ALIASES[k] in params]
        if doubled:
            from ..errors import DuplicateParameterError

            k = doubled[0]
            raise DuplicateParameterError(
                f"{ALIASES[k]} is given twice: {k}={params[k]!r} and {ALIASES[k]}={params[ALIASES[k]]!r}; give it once"
            )
        params = {ALIASES.get(k, k): v for k, v in params.items()}
        names = {f.name for f in cls.param_fields()}
        preset = params.pop("preset", None)
        merged: dict[str, Any] = {}
        if preset is not None:
            if preset not in cls.PRESETS:
                raise ParameterError(f"unknown preset {preset!r} for {cls.KIND}; choose from: {', '.join(cls.PRESETS)}")
            merged.update(cls.PRESETS[preset])
        merged.update(params)
        unknown = sorted(set(merged) - names)
        if unknown:
            import difflib

            valid = sorted(display_name(n) for n in names | ({"preset"} if cls.PRESETS else set()))
            close = difflib.get_close_matches(unknown[0], valid, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ParameterError(
                f"unknown parameter {unknown[0]!r} for {cls.KIND}; {hint}choose from: {', '.join(valid)}"
            )
        hints = _type_hints(cls)
        kwargs = {k: parse_value(hints[k], k, v) for k, v in merged.items()}
        if "length" not in kwargs:
            derived = cls.derive_length(kwargs)
            if derived is not None:
                kwargs["length"] = derived
        if "length" not in kwargs:
            raise ParameterError(f"{cls.KIND} needs length: pass {ref('length')} 512, say")
        try:
            return cls(**kwargs)
        except TypeError as exc:  # a missing required parameter
            raise ParameterError(f"{cls.KIND}: {exc}") from None

    @classmethod
    def derive_length(cls, kwargs: dict[str, Any]) -> int | None:
        """The number of rows implied by other parameters (e.g. a 2-D grid), or None when ``--len`` is needed."""
        return None

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in self.param_fields()}

    def params_key(self) -> tuple:
        """This encoding's class and every parameter with its type: a key for what the parameters alone fix
        (:func:`._trig.frequencies_once`); ``1`` and ``1.0`` or ``True`` are different keys."""
        return (type(self), *((type(v), v) for v in self.params().values()))

    def metadata(self) -> dict[str, str]:
        """String metadata that says exactly how to regenerate this table."""
        from .. import __version__

        meta = {"kind": self.KIND, "posenc_version": __version__}
        meta.update({k: format_value(v) for k, v in self.params().items()})
        meta.update(self.extra_metadata())
        return meta

    def extra_metadata(self) -> dict[str, str]:
        """Derived values worth recording (e.g. RoPE's attention_scaling)."""
        return {}

    def extra_rows(self) -> dict[int, str]:
        """The rows of this table that are not positions, row -> name (a class token's row, a padding row), which
        ``check`` leaves out of the properties of positions (:mod:`posenc_cli.checks.rows`). Default: what the
        metadata's ``extra_rows`` (``"index:name,..."``) says, else none."""
        text = self.extra_metadata().get("extra_rows")
        if not text:
            return {}
        from .grid import parse_extra_rows

        return parse_extra_rows(text, f"{self.KIND}'s extra_rows")

    # ----- tensors ------------------------------------------------------------------------------
    @property
    def out_dtype(self) -> np.dtype:
        return resolve_dtype(self.dtype)

    def tensor_specs(self) -> dict[str, TensorSpec]:
        """Every tensor this encoding produces, primary first."""
        raise NotImplementedError

    def _rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` of tensor ``name``, in any dtype (cast by :meth:`fill`)."""
        raise NotImplementedError

    def fill(self, name: str, start: int, stop: int, out: np.ndarray) -> None:
        """Write rows ``[start, stop)`` of tensor ``name`` into ``out`` (shape ``(stop-start, *shape[1:])``)."""
        out[...] = self._rows(name, start, stop)

    def spec(self, name: str | None = None) -> TensorSpec:
        """The :class:`TensorSpec` of tensor ``name`` (default: the primary one); an unknown name is an
        :class:`~posenc_cli.errors.UnknownTensorError` (also a ``KeyError``) naming the choices."""
        specs = self.__dict__.get("_spec_table")
        if specs is None:  # the tensors of a frozen encoding never change: described once (rows asks every block)
            specs = self.__dict__["_spec_table"] = self.tensor_specs()
        key = self.PRIMARY if name is None else name
        if key not in specs:
            from ..errors import UnknownTensorError

            raise UnknownTensorError(f"{self.KIND} has no tensor {key!r}; choose from: {', '.join(specs)}")
        return specs[key]

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` of tensor ``name`` as a new array of the tensor's dtype.

        The range must satisfy ``0 <= start <= stop <= length`` of the tensor (its ``shape[0]``); anything else
        is a :class:`~posenc_cli.errors.ParameterError` naming the range and the length: nothing is clipped."""
        spec = self.spec(name)
        if not (type(start) is int and type(stop) is int and 0 <= start <= stop <= spec.shape[0]):
            from ..formats.protocol import check_rows  # the rule and its message (imported only when needed)

            check_rows(start, stop, spec.shape[0], f"{self.KIND} tensor {name!r}")
        out = np.empty((stop - start, *spec.shape[1:]), dtype=spec.dtype)
        if stop > start:
            self.fill(name, start, stop, out)
        return out

    def take(self, name: str, index: Any) -> np.ndarray:
        """Rows ``index`` (integers in any order, repeats allowed) of tensor ``name`` as a new array of the
        tensor's dtype: ``take(name, idx)[i]`` is ``rows(name, idx[i], idx[i] + 1)[0]``, bit for bit. A row outside
        ``0 <= row < length`` is a :class:`~posenc_cli.errors.ParameterError` naming it and the length."""
        spec = self.spec(name)
        idx = np.asarray(index, dtype=np.int64).reshape(-1)
        n = spec.shape[0]
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
            bad = int(idx[(idx < 0) | (idx >= n)][0])
            raise ParameterError(
                f"row {bad} of {self.KIND} tensor {name!r} is outside its {n} rows; ask for 0 <= row < {n}"
            )
        out = np.empty((idx.size, *spec.shape[1:]), dtype=spec.dtype)
        if idx.size:
            self._take(name, idx, out)
        return out

    def _take(self, name: str, idx: np.ndarray, out: np.ndarray) -> None:
        """Rows ``idx`` (int64, in range) into ``out``: :meth:`rows` of each run of rows at most :data:`TAKE_GAP`
        apart, the rows between them included (a kind with a faster way overrides this)."""
        order = np.argsort(idx, kind="stable")
        s = idx[order]
        start = 0
        for stop in [*(np.flatnonzero(np.diff(s) > TAKE_GAP) + 1).tolist(), s.size]:
            lo, hi = int(s[start]), int(s[stop - 1]) + 1
            out[order[start:stop]] = self.rows(name, lo, hi)[s[start:stop] - lo]
            start = stop

    def array(self, name: str | None = None) -> np.ndarray:
        """The whole tensor ``name`` (default: the primary one), computed in row blocks on all cores."""
        from .parallel import fill_parallel

        spec = self.spec(name)
        out = np.empty(spec.shape, dtype=spec.dtype)
        fill_parallel(self, spec.name, out)
        return out

    def nbytes(self) -> int:
        return sum(s.nbytes for s in self.tensor_specs().values())

    def lazy(self, name: str | None = None) -> EncodingTensor:
        """A lazy view of tensor ``name`` that writers and checks read block by block."""
        return EncodingTensor(self, name or self.PRIMARY)

    def lazy_tensors(self) -> dict[str, EncodingTensor]:
        return {name: EncodingTensor(self, name) for name in self.tensor_specs()}


class EncodingTensor(typing.NamedTuple):
    """One tensor of an encoding, computed on demand: the :class:`LazyTensor` protocol (a named tuple, like
    :class:`AngleTerms`).

    The protocol (shared with ``formats.ArrayTensor`` for arrays read from files) is: ``name``, ``shape``,
    ``dtype`` and ``rows(start, stop) -> np.ndarray`` returning rows ``[start, stop)`` along axis 0.
    """

    encoding: Encoding
    name: str

    @property
    def spec(self) -> TensorSpec:
        return self.encoding.tensor_specs()[self.name]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.spec.shape

    @property
    def dtype(self) -> np.dtype:
        return self.spec.dtype

    def rows(self, start: int, stop: int) -> np.ndarray:
        return self.encoding.rows(self.name, start, stop)

    def take(self, index: Any) -> np.ndarray:
        """Rows ``index`` (any order), as :meth:`Encoding.take`: sampled rows in one call."""
        return self.encoding.take(self.name, index)

    def fill(self, start: int, stop: int, out: np.ndarray) -> None:
        """Rows ``[start, stop)`` into ``out``, using every core (the fast path for writers)."""
        from .parallel import fill_parallel

        fill_parallel(self.encoding, self.name, out, start=start)
