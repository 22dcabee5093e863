"""The public Python API: build, read, write, check and compare encoding tables.

Everything here is re-exported lazily by :mod:`posenc_cli` (``import posenc_cli as pe; pe.generate(...)``).
Parameter names are the same everywhere: in Python, in ``-p key=value``, in specs ``KIND:key=value`` and in
``--json`` (``length``, ``dim``, ``base``, ...; ``len`` is accepted as another name for ``length``). Errors are
:class:`~posenc_cli.errors.PosencError` subclasses with one line that names the bad value and the fix.

>>> import posenc_cli as pe
>>> enc = pe.generate("sinusoidal", length=5, dim=6, preset="tf-tutorial")
>>> enc.array().shape
(5, 6)
>>> report = pe.check(enc)
>>> report.ok, report.kind
(True, 'sinusoidal')
>>> pe.compare(enc, "sinusoidal:preset=paper").same
False
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import InputError, ParameterError, param

if TYPE_CHECKING:
    from .auditing.report import AuditReport
    from .checks.base import CheckResult
    from .encodings.base import Encoding
    from .identification import Identification
    from .reports import CheckReport, Comparison, Preview, TensorComparison
    from .sources import Source

#: The result classes live in :mod:`posenc_cli.reports` (built on first use, not at start-up); ``api.CheckReport``
#: and the others still name them.
_REPORTS = ("Preview", "CheckReport", "TensorComparison", "Comparison")


def __getattr__(name: str) -> Any:
    if name in ("AuditReport", "AuditRow"):
        from .auditing import report as audit_report

        return getattr(audit_report, name)
    if name in _REPORTS:
        from . import reports

        return getattr(reports, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: What the API accepts as a table: a file path, ``"-"`` (stdin), a spec string, an Encoding, a Source, an array,
#: or a dict of arrays.
TableLike = Any


# ----- building ---------------------------------------------------------------------------------------
def generate(kind: str, **params: Any) -> Encoding:
    """The encoding of ``kind`` (or a spec ``KIND:key=value,...``) with ``params``.

    Parameters
    ----------
    kind : str
        A registered kind (``posenc kinds``), any case, or a spec string ``KIND:key=value,...``. A parameter that
        the spec and ``params`` both set (or ``params`` sets under two names, ``len`` and ``length``) is refused
        with a :class:`~posenc_cli.errors.DuplicateParameterError` naming both.
    **params
        The kind's parameters (``length``, ``dim``, ``dtype``, ``preset``, ...); strings are parsed as on the
        command line.

    Returns
    -------
    Encoding
        A frozen, validated encoding: ``.array(name)`` computes a tensor, ``.rows(name, start, stop)`` any rows,
        ``.tensor_specs()`` says names, shapes and dtypes, ``.metadata()`` how to regenerate it.
    """
    from .encodings import make_encoding
    from .sources import merge_given, parse_spec, spec_label

    name, pairs = parse_spec(kind)
    return make_encoding(name, merge_given([(spec_label(kind), pairs), (None, params)]))


def from_config(
    config: str | os.PathLike[str] | Mapping[str, Any],
    *,
    kind: str | None = None,
    layer_type: str | None = None,
    read_as: str | None = None,
    **params: Any,
) -> Encoding:
    """The tables a model uses, from its config.json (a path, a model directory, ``"-"`` or a dict).

    ``params`` override what the config says (e.g. ``length=4096``, ``dtype="float64"``); ``layer_type`` picks
    one attention type of a per-layer config (e.g. ``"sliding_attention"``); ``read_as`` (e.g. ``"llama"``)
    reads a config whose keys posenc does not all know with that family's rules (otherwise refused). The
    Encoding carries parameters only: open the config with :func:`open_table` to keep the assumption in the
    metadata.
    """
    from .encodings import make_encoding
    from .models.readers import from_model_config

    data = load_config(config)
    length = params.pop("length", params.pop("len", None))
    hints = {k: params[k] for k in ("offset", "seq_len") if isinstance(params.get(k), int)}
    name, cfg_params, _warnings, _notes = from_model_config(
        data, kind=kind, length=length, layer_type=layer_type, read_as=read_as, **hints
    )
    return make_encoding(name, {**cfg_params, **params})


def load_config(config: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """A config.json as a dict: a path, a directory holding config.json, ``"-"`` (stdin) or a dict; refused by
    size before parsing, and on bad UTF-8, bad JSON, deep nesting or a non-object (one-line errors)."""
    from .models.config_file import load_config as load

    return load(config)


# ----- reading and writing ----------------------------------------------------------------------------
def open_table(table: TableLike, *, max_bytes: int | None = None, **params: Any) -> Source:
    """Any :data:`TableLike` as a :class:`~posenc_cli.sources.Source` (tensors + metadata + encoding)."""
    from .encodings.base import Encoding
    from .errors import check_int
    from .sources import Source, open_source

    if max_bytes is not None:
        check_int("max_bytes", max_bytes, 1)
    if isinstance(table, Source):
        return table
    if isinstance(table, Encoding):
        return Source.from_encoding(table, table.KIND)
    if isinstance(table, (str, os.PathLike)):
        return open_source(os.fspath(table), params=params or None, max_bytes=max_bytes)
    import numpy as np

    from .formats import ArrayTensor

    if isinstance(table, np.ndarray):
        return Source("array", {"pe": table}, {}, lazy={"pe": ArrayTensor("pe", table)})
    if isinstance(table, Mapping):
        arrays = {str(k): np.asarray(v) for k, v in table.items()}
        return Source("arrays", arrays, {}, lazy={k: ArrayTensor(k, v) for k, v in arrays.items()})
    raise ParameterError(f"cannot read a table from {type(table).__name__}; pass a path, a spec, an Encoding or arrays")


def read(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> Source:
    """Read a table file (``.npy``, ``.npz``, ``.safetensors``, ``.csv``, ``.json``) or ``"-"`` (stdin)."""
    from .sources import is_spec

    text = os.fspath(path)
    if is_spec(text):
        raise InputError(f"{text}: no such file (to build a table from a spec, use generate)")
    return open_table(text, max_bytes=max_bytes)


@dataclass(frozen=True)
class Written(Mapping[str, tuple[int, ...]]):
    """What :func:`write` wrote: the path, the format and each tensor's name, shape and dtype as written.

    It is also the mapping ``name -> shape`` that ``write`` used to return (``written["cos"]``, ``.items()``).
    """

    path: str
    format: str
    tensors: list[tuple[str, tuple[int, ...], str]]

    def __getitem__(self, name: str) -> tuple[int, ...]:
        for n, shape, _ in self.tensors:
            if n == name:
                return shape
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter([n for n, _, _ in self.tensors])

    def __len__(self) -> int:
        return len(self.tensors)

    def summary(self) -> str:
        """One line: ``wrote rope.safetensors (cos (8192, 128) float32, sin (8192, 128) float32, ...)``."""
        parts = ", ".join(f"{n} {shape} {dtype}" for n, shape, dtype in self.tensors)
        return f"wrote {'stdout' if self.path == '-' else self.path} ({parts})"

    def to_json(self) -> dict[str, Any]:
        """What ``--json`` prints after writing: the path, the format and each tensor as written."""
        return {
            "path": self.path,
            "format": self.format,
            "tensors": [{"name": n, "shape": list(shape), "dtype": dtype} for n, shape, dtype in self.tensors],
        }


def write(
    path: str | os.PathLike[str],
    table: TableLike,
    *,
    format: str | None = None,
    tensors: list[str] | None = None,
    rename: Mapping[str, str] | None = None,
    dtype: str | None = None,
    force: bool = False,
    max_bytes: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Written:
    """Write ``table`` to ``path`` atomically, C-contiguous, with posenc metadata; return what was written.

    Parameters
    ----------
    table : table-like
        A path, a spec, an Encoding, a Source, an array (written as tensor ``pe``) or a dict of arrays.
    format : str, optional
        The format (default: from the suffix); one that disagrees with a table suffix of ``path`` is refused.
    tensors : list of str, optional
        Write only these tensors (default: all). A one-tensor format (``.npy``, ``.csv``) file takes a table of
        several tensors only when ``tensors`` chooses exactly one; ``"-"`` with ``npy`` carries the whole table
        (the first tensor, then a posenc trailer).
    rename : mapping, optional
        ``old name -> new name``.
    dtype : str, optional
        Cast every tensor to this floating dtype (``float64``, ``float32``, ``float16``, ``bfloat16``); the
        metadata says so, so that metadata and bytes always agree. A table with an integer tensor (T5 buckets,
        Shaw indices) is refused: integers are not cast to floats.
    max_bytes : int, optional
        Refuse to write more than this many bytes of tensors (checked before anything is created).
    progress : callable, optional
        Called after each written block with (rows in that block, total rows of all tensors).

    Returns
    -------
    Written
        The path, format and each tensor's name, shape and dtype as written; ``.summary()`` is the one
        ``wrote ...`` line; as a mapping it is ``name -> shape``.
    """
    from . import formats
    from .errors import UnknownTensorError, param
    from .formats import dtype_label
    from .sources import CastTensor

    if max_bytes is not None:
        from .errors import check_int

        check_int("max_bytes", max_bytes, 1)
    src = open_table(table)
    dest = os.fspath(path)
    fmt = formats.format_for(dest, format)
    lazy = dict(src.lazy)
    if tensors is not None:
        if isinstance(tensors, str):
            tensors = [tensors]
        missing = [t for t in tensors if t not in lazy]
        if missing:
            raise UnknownTensorError(
                f"{src.label} has no tensor {missing[0]!r}; choose {param('tensor')} from: {', '.join(lazy)}"
            )
        if not tensors:
            raise ParameterError(f"{param('tensor')} [] names no tensor; give at least one name, or None for all")
        lazy = {t: lazy[t] for t in tensors}
    # .npy on stdout is a pipe: the first tensor, then a posenc trailer with the metadata and the rest
    trailer = dest == "-" and fmt == "npy" and (len(lazy) > 1 or bool(src.metadata))
    if fmt in formats.SINGLE_TENSOR_FORMATS and len(lazy) > 1 and not trailer:
        raise ParameterError(
            f"{dest} is .{fmt}, which holds one tensor, but {src.label} has {len(lazy)} ({', '.join(lazy)}); "
            f"choose one with {param('tensor')} or write .safetensors, .npz or .json to keep them all"
        )
    metadata = dict(src.metadata)
    if dtype is not None:
        from .encodings.base import dtype_name, resolve_dtype

        target = resolve_dtype(dtype)  # a bad name is refused before anything is written
        integer = [(k, t.dtype) for k, t in lazy.items() if not formats.is_float(t.dtype)]
        if integer:
            name, got = integer[0]
            raise ParameterError(
                f"tensor {name!r} of {src.label} holds {dtype_label(got)} integers, which are not cast to "
                f"{param('dtype')} {dtype}; drop {param('dtype')} or choose the floating tensors with "
                f"{param('tensor')}"
            )
        stated = [resolve_dtype(metadata["value_dtype"])] if "value_dtype" in metadata else []
        coarsest = _coarsest_float([t.dtype for t in lazy.values()] + stated)
        lazy = {k: CastTensor(v, _cast_to(src, k, dtype)) for k, v in lazy.items()}
        # each table's metadata says the new dtype; values computed in a coarser dtype keep that precision in
        # wider bytes: say so (check regenerates them at that precision)
        for pre in [f"{g}." for g in src.groups] or ([""] if metadata else []):
            metadata[f"{pre}dtype"] = dtype
            if coarsest is not None and _eps(coarsest) > _eps(target):
                metadata[f"{pre}value_dtype"] = dtype_name(coarsest)
            else:
                metadata.pop(f"{pre}value_dtype", None)
    lazy = _renamed(lazy, dict(rename or {}))
    if max_bytes is not None:
        from .sources import check_size

        check_size(sum(math.prod(t.shape) * t.dtype.itemsize for t in lazy.values()), max_bytes, src.label)
    total = sum(int(t.shape[0]) if len(t.shape) else 1 for t in lazy.values())
    report = None if progress is None else (lambda n: progress(n, total))
    formats.write_table(dest, lazy, metadata, fmt, force=force, progress=report, trailer=trailer)
    return Written(dest, fmt, [(k, tuple(v.shape), dtype_label(v.dtype)) for k, v in lazy.items()])


def _cast_to(src: Source, name: str, dtype: str) -> str:
    """The dtype tensor ``name`` takes when a table is cast to ``dtype``: for a posenc table, what its encoding
    with that dtype gives the tensor (e.g. RoPE's ``inv_freq`` keeps ``inv_freq_dtype``), so that the metadata
    still describes every tensor; for a foreign table, ``dtype`` for every floating tensor."""
    import dataclasses

    from .encodings.base import dtype_name

    enc = src.encoding
    group, _, short = name.partition(".")
    if enc is None and short and group in src.groups:  # a grouped table: the group's own encoding decides
        enc, name = src.groups[group].encoding, short
    if enc is None or "dtype" not in {f.name for f in enc.param_fields()}:
        return dtype
    specs = dataclasses.replace(enc, dtype=dtype).tensor_specs()
    return dtype_name(specs[name].dtype) if name in specs else dtype


def _eps(dtype: Any) -> float:
    from .tolerance import eps

    return eps(dtype)


def _coarsest_float(dtypes: list[Any]) -> Any:
    from .formats import is_float

    floats = [d for d in dtypes if is_float(d)]
    return max(floats, key=_eps) if floats else None


def _renamed(lazy: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    for old, new in mapping.items():
        if old not in lazy:
            from .errors import UnknownTensorError, param

            raise UnknownTensorError(
                f"cannot rename {old!r} ({param('rename')}): no such tensor; choose from: {', '.join(lazy)}"
            )
        if not new or new == "__metadata__":
            raise ParameterError(f"cannot rename {old!r} to {new!r}: not a valid tensor name")
    out = {mapping.get(k, k): v for k, v in lazy.items()}
    if len(out) != len(lazy):
        raise ParameterError(f"renaming {mapping} gives two tensors the same name")
    return out


def preview(enc: Encoding, rows: int = 10, cols: int = 8, tensor: str | None = None) -> Preview:
    """The corner (``rows`` x ``cols``; the first head of a 3-D table) of ``tensor`` (default: the primary one),
    its value range (over the whole tensor when it is at most 256 MiB, else over three sampled row blocks) and
    the other short 1-D tensors."""
    import numpy as np

    from .encodings.base import dtype_name
    from .errors import check_int

    check_int("rows", rows, 1)
    check_int("cols", cols, 1)
    specs = enc.tensor_specs()
    primary = enc.spec(tensor)
    corner = enc.rows(primary.name, 0, min(primary.shape[0], rows))
    if corner.ndim > 2:
        corner = corner[0]
    if corner.ndim == 2:
        corner = corner[:, :cols]
    cheap = primary.nbytes <= 256 * 1024**2
    lo, hi = np.inf, -np.inf
    n = primary.shape[0]
    for s in range(0, n, 4096) if cheap else sorted({0, n // 2, max(n - 4096, 0)}):
        block = np.asarray(enc.rows(primary.name, s, min(s + 4096, n)), dtype=np.float64)
        if block.size:
            lo, hi = min(lo, float(np.nanmin(block))), max(hi, float(np.nanmax(block)))
    small = {
        name: enc.rows(name, 0, spec.shape[0])
        for name, spec in specs.items()
        if name != primary.name and len(spec.shape) == 1 and spec.shape[0] <= 64
    }
    from .reports import Preview

    return Preview(
        title=f"{enc.KIND} positional encoding",
        specs=[(s.name, s.shape, dtype_name(s.dtype)) for s in specs.values()],
        params={k: v for k, v in enc.metadata().items() if k not in ("kind", "posenc_version")},
        primary=primary.name,
        corner=corner,
        shape=primary.shape,
        value_range=(lo, hi),
        range_note="" if cheap else " (sampled rows)",
        small=small,
    )


# ----- checking ---------------------------------------------------------------------------------------
def check(
    table: TableLike,
    *,
    expect: str | None = None,
    against: TableLike | None = None,
    require: list[str] | None = None,
    tensor: str | list[str] | tuple[str, ...] | None = None,
    identify: bool = True,
    probes: int = 8,
    seed: int = 0,
    on_check: Callable[[str, int], None] | None = None,
    max_bytes: int | None = None,
) -> CheckReport:
    """Measure every property of ``table`` that its kind declares and say whether the required ones hold.

    The source is judged as a whole: every tensor it holds (a RoPE file's cos/sin pair gets its pair properties)
    unless ``tensor`` narrows it, and the report names what was left out.

    Parameters
    ----------
    expect : str, optional
        Judge the table as this kind (default: the kind in its metadata).
    against : str or table, optional
        A spec (``"sinusoidal:base=500000"``; length and dim default to the table's) or another table that
        ``table`` must equal: ``matches-spec`` regenerates from it, and when they differ the report carries the
        comparison with its diagnosis (a layout swap, another base, an offset, ...).
    require : list of str, optional
        The properties that must hold, instead of the kind's defaults.
    tensor : str or list of str, optional
        The tensors to judge (default: all); the first is the primary table.
    identify : bool
        A source without a kind (a plain .npy, a foreign safetensors) is identified from its structure
        (:func:`identify`) and judged as what it is found to be; the report says what was assumed. With
        ``expect`` only that kind's readings are tried. False: judge it as an unknown kind (only ``finite``).
    probes : int
        Random probes of the randomized properties (Freivalds residuals, rotated vectors), from 1 to
        ``checks.base.MAX_PROBES``; their work must fit ``max_bytes``.
    seed : int
        The probes' random seed, from 0 to ``2**32 - 1``.
    on_check : callable, optional
        Called with each property's name and how many there are, before it is measured (progress bars).
    max_bytes : int, optional
        The most bytes the probes may allocate (default: ``formats.DEFAULT_MAX_BYTES``); more probes than fit
        are refused before anything is allocated, naming ``probes`` and ``max_bytes``.
    """
    from . import checks
    from .checks import probe_bytes
    from .checks.base import MAX_PROBES, MAX_SEED, CheckContext, rtol_for
    from .encodings import get_kind, resolve_kind
    from .errors import check_int, param
    from .formats import DEFAULT_MAX_BYTES, human_bytes, validate_table_array

    check_int("probes", probes, 1, MAX_PROBES)
    check_int("seed", seed, 0, MAX_SEED)
    limit = DEFAULT_MAX_BYTES if max_bytes is None else check_int("max_bytes", max_bytes, 1)
    src = open_table(table)
    if expect is not None:
        expect = resolve_kind(expect)
    chosen = _chosen_tensors(src, tensor)
    name = chosen[0]
    array = src.array(name)
    kind = expect or src.kind
    kind_cls = get_kind(kind) if kind is not None and _known_kind(kind) else None
    validate_table_array(array, name, src.label, need_float=kind_cls is not None and not kind_cls.INTEGER_TABLE)
    if array.ndim == 1:
        raise InputError(
            f"{src.label}: tensor {name!r} is 1-D (shape {tuple(array.shape)}); an encoding table has one row per "
            f"position: pick a 2-D tensor with {param('tensor')} or compare 1-D tensors with compare()"
        )
    need = probe_bytes(tuple(array.shape), probes)
    if need > limit:
        fit = max(1, probes * limit // need)
        raise ParameterError(
            f"{param('probes')} {probes} would allocate about {human_bytes(need)} on {src.label} "
            f"{tuple(array.shape)}, above the {human_bytes(limit)} limit; pass {param('probes')} {fit} or fewer, or "
            f"raise {param('max_bytes')}"
        )
    tensors: dict[str, Any] = {n: (array if n == name else src.array(n)) for n in chosen}
    metadata: Mapping[str, str] = src.metadata
    encoding = src.encoding if src.encoding is not None and (expect is None or expect == src.kind) else None
    origin = "the metadata"
    assumed, assumed_command = "", None
    comparison = None
    if against is not None:
        ref = _open_against(against, src)
        comparison = compare(src, ref, tensor=chosen if len(chosen) < len(src.names) else None)
        if ref.encoding is not None:
            encoding, origin = ref.encoding, ref.label
            if kind is None or expect is None:
                kind, kind_cls = ref.encoding.KIND, type(ref.encoding)
            metadata = {**src.metadata, **ref.encoding.metadata()}
            if len(src.names) == 1 and not src.metadata:
                tensors = _as_spec_tensors(tensors, ref.encoding)
    elif encoding is None and identify and (src.kind is None or not _known_kind(src.kind)):
        found = _identify_for_check(tensors, src.metadata, kind_cls)
        if found is not None:
            assumed = found.summary
            best = found.best
            if best is not None:
                from .encodings import make_encoding

                encoding = make_encoding(best.kind, best.params)
                kind, kind_cls, origin = best.kind, type(encoding), "the identification"
                assumed_command = best.command
                metadata = {**src.metadata, **encoding.metadata()}
                tensors = _as_spec_tensors(tensors, encoding, best.tensor_map)
    ctx = CheckContext(
        table=array,
        tensors=tensors,
        metadata=metadata,
        kind=kind,
        encoding=encoding,
        rtol=rtol_for(_value_dtype(src, array)),
        seed=seed,
        probes=probes,
        kind_cls=kind_cls,
        spec_origin=origin,
    )
    names = checks.applicable(ctx)
    ctx.planned = tuple(names)  # the first read of the table feeds all of them (checks/sweep.py)
    results: list[CheckResult] = []
    for prop in names:
        if on_check is not None:
            on_check(prop, len(names))
        results.extend(checks.run_checks(ctx, [prop]))
    if not results:
        raise InputError(
            f"{src.label}: no property can be measured on tensor {name!r} ({array.dtype} {tuple(array.shape)}); "
            f"pass {param('expect')} KIND or pick a table with {param('tensor')}"
        )
    available = [r.name for r in results]
    required = checks.required_for(kind_cls, require, available)
    missing = [n for n in required if n not in available]
    if missing:
        raise ParameterError(
            f"{param('require')} {','.join(missing)}: not measurable on {src.label}; measurable: {', '.join(available)}"
        )
    unmeasured = [] if kind_cls is None else [n for n, req in kind_cls.PROPERTIES.items() if req and n not in available]
    failed = [r.name for r in results if r.name in required and r.passed is False]
    not_run = [r.name for r in results if r.not_run]
    ok = not failed and not any(n in required for n in not_run)  # a required property must have held
    if comparison is not None and not comparison.same:
        ok = False
    from .checks.sweep import passes

    reads = [{"properties": p.properties, "computed": p.feeds, "blocks": p.blocks, "rows": p.rows} for p in passes(ctx)]
    from .reports import CheckReport

    return CheckReport(
        src.label,
        name,
        kind,
        ok,
        required,
        failed,
        results,
        not_run,
        tensors=list(chosen),
        not_checked=[n for n in src.names if n not in chosen],
        unmeasured=unmeasured,
        assumed=assumed,
        assumed_command=assumed_command,
        against=comparison,
        passes=reads,
    )


def _chosen_tensors(src: Source, tensor: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """The tensors ``check`` judges: ``tensor`` (one name or several, each validated), else every tensor of the
    source with its primary first."""
    if tensor is None:
        try:
            primary = src.tensor_name(None)
        except InputError:
            # several tensors and no kind to say which is which: one table in parts (a cos/sin pair: every 2-D
            # tensor of one shape, with 1-D ones no longer than its sides, e.g. inv_freq) is judged whole;
            # anything else (a model checkpoint) needs --tensor
            shapes = {tuple(getattr(src.lazy.get(n, src.tensors.get(n)), "shape", ())) for n in src.names}
            tables = {s for s in shapes if len(s) >= 2}
            if len(tables) != 1 or any(len(s) == 1 and s[0] > max(next(iter(tables))) for s in shapes):
                raise
            primary = src.names[0]
        return [primary, *[n for n in src.names if n != primary]]
    wanted = [tensor] if isinstance(tensor, str) else list(tensor)
    if not wanted:
        raise ParameterError(f"{param('tensor')} [] names no tensor; give at least one name, or None for every tensor")
    return list(dict.fromkeys(src.tensor_name(n) for n in wanted))


def _as_spec_tensors(
    tensors: dict[str, Any], encoding: Encoding, tensor_map: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The judged tensors under the names of the spec they are judged against, so that checks find them by role:
    ``tensor_map`` (source name -> the spec's) when given, else a single array is the spec's primary tensor and
    several keep their names (the rule :mod:`.identification` regenerates by)."""
    if tensor_map:
        return {tensor_map.get(n, n): a for n, a in tensors.items()}
    if len(tensors) == 1:
        return {encoding.PRIMARY: next(iter(tensors.values()))}
    return tensors


def _open_against(against: TableLike, src: Source) -> Source:
    """The reference ``check --against`` compares with: a spec takes its length and dim from ``src``."""
    from .sources import is_spec, open_source

    if isinstance(against, str) and is_spec(against):
        return open_source(against, like=src)
    return open_table(against)


def _identify_for_check(tensors: dict[str, Any], metadata: Mapping[str, str], kind_cls: Any) -> Any:
    """:func:`identify` of the judged tensors (only ``kind_cls``'s readings when a kind is expected); None when
    identification cannot apply (a table with no floating values to read structure from)."""
    from .hints import reader
    from .identification import identify as identify_tensors

    fn = None if kind_cls is None else reader(kind_cls)
    hints = None if kind_cls is None else ([(kind_cls.KIND, fn)] if fn is not None else [])
    try:
        return identify_tensors(tensors, dict(metadata), hints=hints)
    except ValueError:
        return None


def check_all(table: TableLike, **options: Any) -> list[CheckReport]:
    """:func:`check` of every table of a source: each group of a grouped file (one per attention type), else the
    source itself."""
    src = open_table(table)
    if src.groups:
        if options.get("tensor") is not None:
            raise ParameterError(
                f"{src.label} holds one table per group ({', '.join(src.groups)}); {param('tensor')} "
                "cannot apply: every group's tables are checked"
            )
        return [check(g, **options) for g in src.groups.values()]
    return [check(src, **options)]


def identify(table: TableLike, *, tensor: str | list[str] | tuple[str, ...] | None = None) -> Identification:
    """Which kind, preset and parameters reproduce ``table``, read from its own structure (column frequencies and
    layout, value range, Toeplitz structure, per-head slopes, grid strides) and confirmed by regenerating it.

    ``.best`` is the simplest candidate that reproduces every compared value within 2 ulps (or within the error
    of the usual float32 formula, ``tolerance="float32-formula"``), ``.command`` the ``posenc generate`` line that
    regenerates it; when nothing does (a trained table, noise), ``.best`` is None, ``.reason`` says why and
    ``.candidates`` list the closest readings, each with why it fails.

    >>> import posenc_cli as pe
    >>> found = pe.identify(pe.generate("sinusoidal", length=64, dim=16, base=500000).array())
    >>> found.command
    'posenc generate --kind sinusoidal --len 64 --dim 16 -p base=500000'
    """
    from .identification import identify as identify_tensors

    src = open_table(table)
    chosen = _chosen_tensors(src, tensor)
    groups = _tensor_groups(src, chosen)
    if len(groups) <= 1:
        return identify_tensors({n: src.array(n) for n in chosen}, dict(src.metadata))
    found = {
        g: identify_tensors({n[len(g) + 1 :]: src.array(n) for n in names}, _group_metadata(src, g))
        for g, names in groups.items()
    }
    import dataclasses

    return dataclasses.replace(next(iter(found.values())), groups=found)  # a copy: the groups hold the first


def _tensor_groups(src: Source, chosen: list[str]) -> dict[str, list[str]]:
    """A source's tensor groups, ``{prefix: [full tensor names]}``: its ``posenc_groups``, or for a file without
    them the prefixes before the last ``.`` of names that share suffixes (``full_attention.cos``,
    ``sliding_attention.cos``); ``{}`` when the tensors are one group."""
    names = list(src.groups) or sorted({n.rsplit(".", 1)[0] for n in chosen if "." in n})
    if len(names) < 2 or any("." not in n for n in chosen):
        return {}
    out = {g: [n for n in chosen if n.startswith(g + ".") and "." not in n[len(g) + 1 :]] for g in names}
    if sum(len(v) for v in out.values()) != len(chosen) or not all(out.values()):
        return {}
    return out


def _group_metadata(src: Source, group: str) -> dict[str, str]:
    pre = group + "."
    return {k[len(pre) :]: v for k, v in src.metadata.items() if k.startswith(pre)}


def from_config_layers(
    config: str | os.PathLike[str] | Mapping[str, Any],
    *,
    kind: str | None = None,
    read_as: str | None = None,
    **params: Any,
) -> tuple[dict[str, Encoding], list[str]]:
    """One encoding per attention type of a model's config (``{"full_attention": ..., ...}``) and the types that
    apply no position encoding (NoPE); ``params`` override what the config says in every type."""
    from .encodings import make_encoding
    from .models.readers import model_config_layers

    data = load_config(config)
    length = params.pop("length", params.pop("len", None))
    layers = model_config_layers(data, kind=kind, length=length, read_as=read_as)
    for lt, v in layers.items():  # a learned table is data in the weights, not parameters (models.hf_positions)
        if v is not None and "weights_tensor" in v[1]:
            raise ParameterError(
                f"layer type {lt} has learned positions ({v[1]['weights_tensor']} in the weights), which no "
                "parameters build; give the model directory and --layer-type instead of every layer type"
            )
    built = {lt: make_encoding(k, {**p, **params}) for lt, v in layers.items() if v is not None for k, p in [v]}
    return built, [lt for lt, v in layers.items() if v is None]


def _value_dtype(src: Source, array: Any) -> Any:
    """The precision of the values: the bytes' dtype, or the coarser one the metadata says they were computed in."""
    from .encodings.base import resolve_dtype

    stated = src.metadata.get("value_dtype")
    if stated is None:
        return array.dtype
    try:
        return resolve_dtype(stated)
    except ParameterError:
        return array.dtype


def _known_kind(kind: str) -> bool:
    from .encodings import KINDS

    return kind in KINDS


# ----- comparing --------------------------------------------------------------------------------------
def pair_tensors(
    src_a: Source, src_b: Source, tensor: str | list[str] | tuple[str, ...] | None = None
) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """Which tensors of two tables are compared: ``tensor`` on both sides when given; else every name they
    share, and a nameless single array (a plain ``.npy``, read as ``pe``) stands for the other side's primary
    tensor. Several names narrow that pairing to those tensors of ``a``. Returns (pairs, names only in a, names
    only in b)."""
    if isinstance(tensor, str):
        return [(src_a.tensor_name(tensor), src_b.tensor_name(tensor))], [], []
    if tensor is not None:
        keep = {src_a.tensor_name(n) for n in tensor}
        pairs, only_a, _ = pair_tensors(src_a, src_b)
        return [(ta, tb) for ta, tb in pairs if ta in keep], [n for n in only_a if n in keep], []
    names_a, names_b = src_a.names, src_b.names
    nameless_a = len(names_a) == 1 and not src_a.metadata
    nameless_b = len(names_b) == 1 and not src_b.metadata
    if nameless_a or nameless_b:
        return [(src_a.tensor_name(None), src_b.tensor_name(None))], [], []
    shared = [n for n in names_a if n in names_b]
    if not shared:  # different names throughout: the two primary tensors
        return [(src_a.tensor_name(None), src_b.tensor_name(None))], [], []
    return (
        [(n, n) for n in shared],
        [n for n in names_a if n not in names_b],
        [n for n in names_b if n not in names_a],
    )


def compare(
    a: TableLike,
    b: TableLike,
    *,
    tensor: str | list[str] | tuple[str, ...] | None = None,
    atol: float | None = None,
    rtol: float = 0.0,
    explain: bool = True,
) -> Comparison:
    """Compare every tensor of ``a`` with the reference ``b``: per tensor the max abs / relative / ulp difference
    and where, mean difference, row cosine and the verdict (every element within ``atol + rtol * |b|``); ``tensor``
    narrows it to one tensor (or to several of ``a``'s, see :func:`pair_tensors`); for a pair that differs, ``explain`` asks :func:`posenc_cli.diagnose.diagnose` why (a layout swap, an offset, another
    base, ...). ``.same`` is the verdict of the whole comparison."""
    from .errors import check_float
    from .formats import validate_table_array
    from .metrics import compare as compare_arrays
    from .reports import Comparison, TensorComparison

    if atol is not None:
        atol = check_float("atol", atol, 0.0)
    rtol = check_float("rtol", rtol, 0.0)
    src_a, src_b = _open_pair(a, b)
    pairs, only_a, only_b = pair_tensors(src_a, src_b, tensor)
    skipped: list[str] = []
    if src_b.encoding is not None and not src_b.tensors and only_b:
        # a spec computes every tensor of its kind; those the table does not hold are skipped, and said
        skipped, only_b = only_b, []
    compared = []
    for ta, tb in pairs:
        arr_a, arr_b = src_a.array(ta), src_b.array(tb)
        validate_table_array(arr_a, ta, src_a.label, need_float=False)
        validate_table_array(arr_b, tb, src_b.label, need_float=False)
        res = compare_arrays(arr_a, arr_b, atol=atol, rtol=rtol)
        res.labels = {"a": f"{src_a.label} [{ta}]", "b": f"{src_b.label} [{tb}]"}
        why = None
        if not res.same and arr_a.ndim == 2 and arr_b.ndim == 2:
            _within_formula(res, src_a, src_b, arr_a, arr_b, ta, tb)
        if explain and not res.same and arr_a.ndim >= 2 and arr_b.ndim >= 2:
            from .diagnose import diagnose

            why = diagnose(
                arr_a,
                arr_b,
                a_name=res.labels["a"],
                b_name=res.labels["b"],
                tensors_a=_pair_by_role(src_a),
                tensors_b=_pair_by_role(src_b),
            )
        compared.append(TensorComparison(ta, tb, res, why))
    return Comparison(src_a.label, src_b.label, compared, only_a, only_b, skipped)


def _within_formula(res: Any, src_a: Source, src_b: Source, arr_a: Any, arr_b: Any, ta: str, tb: str) -> None:
    """A table that differs from a spec (``rope:preset=llama3.1``) only by the float32 formula's error is the
    same within that error: ``res`` says so, with the bound (:mod:`posenc_cli.tolerance`)."""
    from .tolerance import formula_check_table

    if src_b.encoding is not None and src_a.encoding is None:
        table, enc, name = arr_a, src_b.encoding, tb
    elif src_a.encoding is not None and src_b.encoding is None:
        table, enc, name = arr_b, src_a.encoding, ta
    else:
        return
    try:
        verdict = formula_check_table(table, enc, name)
    except (ParameterError, ValueError):
        return
    if verdict is not None and verdict.ok:
        res.same, res.reason, res.formula = True, "", verdict.to_json()


def _pair_by_role(src: Source) -> dict[str, Any] | None:
    """A source's cos/sin tensors keyed by role (for the diagnosis of a rotary pair), or None."""
    from .encodings import KINDS, get_kind

    if src.kind not in KINDS:
        return None
    roles = get_kind(src.kind).ROLES
    pair = {roles[n]: src.array(n) for n in src.names if roles.get(n) in ("cos", "sin")}
    return pair if len(pair) == 2 else None


def _open_pair(a: TableLike, b: TableLike) -> tuple[Source, Source]:
    """Open two tables; a spec on one side takes its length and dim from the other side's table."""
    from .sources import is_spec, open_source

    def spec(x: TableLike) -> bool:
        return isinstance(x, str) and is_spec(x)

    if spec(b) and not spec(a):
        src_a = open_table(a)
        return src_a, open_source(b, like=src_a)
    if spec(a) and not spec(b):
        src_b = open_table(b)
        return open_source(a, like=src_b), src_b
    return open_table(a), open_table(b)


# ----- auditing a model -------------------------------------------------------------------------------
def audit(
    source: str | os.PathLike[str],
    *,
    against: str | os.PathLike[str] | None = None,
    engines: str | list[str] | tuple[str, ...] | None = None,
    length: int | None = None,
    n_ctx: int | None = None,
    max_model_len: int | None = None,
    download: bool = False,
    max_bytes: int | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> AuditReport:
    """Check everything about a model's positions against HF transformers' tables, in one report.

    Parameters
    ----------
    source : str or path
        A model directory (its config.json, the learned table in its weights, every GGUF and ONNX file in it), a
        config.json, a GGUF or ONNX file (its config: a config.json beside it, or ``against``), or a Hub model id
        ``org/name`` / ``org/name@revision`` read from the local Hugging Face cache.
    against : str or path, optional
        Another directory, config or Hub id: its conversions are audited too, and its config is the reference
        when ``source`` has none.
    engines : str or list of str, optional
        The engines whose tables are checked (comma-separated or a list; default: every engine posenc knows).
    length : int, optional
        Positions compared (default: each layer type's context, max_position_embeddings).
    n_ctx, max_model_len : int, optional
        llama.cpp's context (default: the model's) and vLLM's max_model_len (default: vLLM's).
    download : bool
        A Hub id not in the cache is fetched: config.json, the weights index and position tensors only (needs
        ``huggingface_hub``; ``HF_HUB_OFFLINE=1`` forbids it).
    max_bytes : int, optional
        The most bytes an ONNX model's caches may take when read (default: ``formats.DEFAULT_MAX_BYTES``).
    on_progress : callable, optional
        Called as ``on_progress(what, done, total)`` before each step.

    Returns
    -------
    AuditReport
        ``.rows`` (artifact x layer type x engine: verdict, largest difference, explanation), ``.ok``,
        ``.exit_code`` (0 every row agrees, 1 a row differs, 2 a file could not be read) and ``.to_json()``
        (the versioned schema ``posenc_cli/auditing/schema.json``).
    """
    from .auditing.run import audit as run_audit

    return run_audit(
        source,
        against=against,
        engines=engines,
        length=length,
        n_ctx=n_ctx,
        max_model_len=max_model_len,
        download=download,
        max_bytes=max_bytes,
        on_progress=on_progress,
    )


def kinds() -> list[dict[str, Any]]:
    """What ``posenc kinds --json`` prints: every kind's tensors, parameters, presets and references."""
    from .encodings import KINDS, get_kind
    from .kindinfo import kind_info

    return [kind_info(get_kind(k)) for k in KINDS]


__all__ = [
    "AuditReport",
    "CheckReport",
    "Written",
    "Comparison",
    "TensorComparison",
    "Preview",
    "audit",
    "check",
    "check_all",
    "compare",
    "from_config",
    "from_config_layers",
    "generate",
    "identify",
    "kinds",
    "load_config",
    "open_table",
    "preview",
    "read",
    "write",
]
