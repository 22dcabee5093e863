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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import InputError, ParameterError, PosencError, param
from .scopes import SourceOptions

if TYPE_CHECKING:
    from .auditing.report import AuditReport
    from .checks.base import CheckResult
    from .encodings.base import Encoding
    from .inspect.identification import Identification
    from .reports import CheckReport, Comparison, Description, Preview, TensorComparison, Verdicts
    from .sources import Source

#: The result classes live in :mod:`posenc_cli.reports` (built on first use, not at start-up); ``api.CheckReport``
#: and the others still name them.
_REPORTS = ("Preview", "CheckReport", "TensorComparison", "Comparison", "Verdicts", "Description")


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

    ``params`` override what the config says (e.g. ``length=4096``, ``dtype="float64"``); ``tower="vision"`` reads a
    multimodal model's vision tower (its 2-D rotary over ``grid="HxW"`` patches or ``image_size="HxW"`` pixels;
    :mod:`posenc_cli.models.vision_rope`); ``layer_type`` picks
    one attention type of a per-layer config (e.g. ``"sliding_attention"``); ``read_as`` (e.g. ``"llama"``)
    reads a config whose keys posenc does not all know with that family's rules (otherwise refused). The
    Encoding carries parameters only: open the config with :func:`open_table` to keep the assumption in the
    metadata.
    """
    from .encodings import make_encoding
    from .models.readers import from_model_config

    data = load_config(config)
    from .models.vision_rope import from_config as vision_tower

    given: dict[str, Any] = {k: params.pop(k) for k in ("tower", "grid", "image_size") if k in params}
    vision = vision_tower(data, given)  # a vision tower's 2-D rotary (tower="vision", or a tower's own config)
    params.update(given)  # what the tower reading did not take (grid: M-RoPE's)
    if vision is not None:
        return make_encoding(vision[0], {**vision[1], **params})
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
    if params and not isinstance(table, (str, os.PathLike)):
        name = next(iter(params))
        raise ParameterError(
            f"{param(name)} {params[name]} applies to a spec (KIND:key=value), and the table is a "
            f"{type(table).__name__}, whose shape is its own; drop it"
        )
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
    length: int | None = None,
    dim: int | None = None,
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
    src = open_table(table, **_shape(length, dim))
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
    from .inspect.tolerance import eps

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
    length: int | None = None,
    dim: int | None = None,
    extra_rows: str | None = None,
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
    extra_rows : str, optional
        The rows of a table that are not positions, ``"index:name,..."`` (``"0:cls"``), for a table that does not
        say it itself (its kind's parameters or its metadata's ``extra_rows`` do): they are left out of every
        property of positions, and the report names them (:mod:`posenc_cli.checks.rows`). Refused where it
        contradicts the table or cannot apply (a matrix of distances).
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
    src = open_table(table, **_shape(length, dim))
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
    spec_of_positions = False  # the spec was identified from the position rows: it regenerates those only
    comparison = None
    # the whole tensors the spec ``against`` built for the comparison, and the encoding that built them: the
    # arithmetic and matches-spec read their rows there (one table regenerated once per command)
    regenerated: dict[str, Any] = {}
    built_by = None
    if against is not None:
        ref = _open_against(against, src)
        computes = _computes(ref)
        comparison = compare(src, ref, tensor=chosen if len(chosen) < len(src.names) else None)
        if computes:  # every tensor it holds now is its encoding's own, built once by the comparison
            regenerated, built_by = dict(ref.tensors), ref.encoding
        if ref.encoding is not None:
            encoding, origin = ref.encoding, ref.label
            if kind is None or expect is None:
                kind, kind_cls = ref.encoding.KIND, type(ref.encoding)
            metadata = {**src.metadata, **ref.encoding.metadata()}
            # the table's tensors under the spec's names, as the comparison paired them (cos_cached is cos)
            renamed = {tc.name_a: tc.name_b for tc in comparison.tensors if tc.name_a != tc.name_b}
            if len(src.names) == 1 and not src.metadata:
                tensors = _as_spec_tensors(tensors, ref.encoding)
            elif renamed:
                tensors = _as_spec_tensors(tensors, ref.encoding, renamed)
    elif encoding is None and identify and (src.kind is None or not _known_kind(src.kind)):
        # rows the table or the user says are not positions: the positions are identified (a learned class row
        # before a sin-cos grid is no table of one kind), and the spec found regenerates those rows only
        told = _rows_left_out(src, {name: array}, extra_rows)
        found = _identify_for_check(tensors if told is None else _rows_of(tensors, told), src.metadata, kind_cls)
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
                spec_of_positions = told is not None
    from .inspect.tolerance import table_arithmetic

    value_dtype = _value_dtype(src, array)
    rtol = rtol_for(value_dtype)
    # how the values were computed is the file's own statement (its metadata), never the identification's; a
    # table an engine wrote (ggml's, which posenc cannot regenerate from the metadata alone) is bounded against
    # the exact table of its parameters
    judged_as = encoding
    if judged_as is None and src.metadata.get("engine_arithmetic") not in (None, "exact"):
        from .sources import encoding_from_metadata

        judged_as = encoding_from_metadata(dict(src.metadata), exact=True)[0]
    from .checks.rows import not_positions, positions

    primary_role = None if kind_cls is None else kind_cls.ROLES.get(next(iter(tensors)))
    left_out = not_positions(
        int(array.shape[0]), src.label, encoding, metadata, extra_rows, array.ndim == 2 and primary_role != "matrix"
    )
    judged_tensors = _rows_of(tensors, left_out) if spec_of_positions and left_out is not None else tensors
    arithmetic = table_arithmetic(
        dict(judged_tensors),
        judged_as,
        dict(src.metadata),
        value_dtype,
        rtol,
        regenerated=regenerated if judged_as is not None and judged_as is built_by else None,
    )
    ctx = CheckContext(
        table=array,
        tensors=tensors,
        metadata=metadata,
        kind=kind,
        encoding=encoding,
        rtol=rtol,
        seed=seed,
        probes=probes,
        kind_cls=kind_cls,
        spec_origin=origin,
        arithmetic=arithmetic,
        left_out=left_out,
        spec_of_positions=spec_of_positions,
        regenerated=regenerated if encoding is not None and encoding is built_by else {},
    )
    names = checks.applicable(ctx)
    ctx.planned = tuple(names)  # the first read of the table feeds all of them (checks/sweep.py)
    positions(ctx).planned = ctx.planned  # so does the first read of the position rows
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
    not_run = [r.name for r in results if r.not_run]
    from .reports import check_verdict

    ok, failed = check_verdict(
        {r.name: r.status for r in results}, required, None if comparison is None else comparison.same
    )
    judged = [r.name for r in results if r.status in ("PASS", "FAIL")]
    not_judged = checks.not_judged(kind_cls, [n for n in judged if n not in required])
    if comparison is not None:
        not_judged.pop("matches-spec", None)  # judged by the comparison with what --against names
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
        not_judged=not_judged,
        arithmetic=arithmetic.to_json(),
        left_out=None if left_out is None else left_out.to_json(),
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
            shape_of = {n: tuple(getattr(src.lazy.get(n, src.tensors.get(n)), "shape", ())) for n in src.names}
            shapes = set(shape_of.values())
            tables = {s for s in shapes if len(s) >= 2}
            if len(tables) != 1 or any(len(s) == 1 and s[0] > max(next(iter(tables))) for s in shapes):
                raise
            # the primary is a table (cos before sin, whatever order the file keeps), never the 1-D inv_freq
            two_d = [n for n in src.names if len(shape_of[n]) >= 2]
            primary = "cos" if "cos" in two_d else two_d[0]
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
    from .inspect.hints import reader
    from .inspect.identification import identify as identify_tensors

    fn = None if kind_cls is None else reader(kind_cls)
    hints = None if kind_cls is None else ([(kind_cls.KIND, fn)] if fn is not None else [])
    try:
        return identify_tensors(tensors, dict(metadata), hints=hints)
    except ValueError:
        return None


def check_all(table: TableLike, **options: Any) -> list[CheckReport]:
    """:func:`check` of every table of a source: each group of a grouped file (one per attention type), else the
    source itself (``length``/``dim`` open a spec, as :func:`check` does)."""
    src = open_table(table, **_shape(options.pop("length", None), options.pop("dim", None)))
    if src.groups:
        if options.get("tensor") is not None:
            raise ParameterError(
                f"{src.label} holds one table per group ({', '.join(src.groups)}); {param('tensor')} "
                "cannot apply: every group's tables are checked"
            )
        return [check(g, **options) for g in src.groups.values()]
    return [check(src, **options)]


def identify(
    table: TableLike,
    *,
    tensor: str | list[str] | tuple[str, ...] | None = None,
    length: int | None = None,
    dim: int | None = None,
    extra_rows: str | None = None,
) -> Identification:
    """Which kind, preset and parameters reproduce ``table``, read from its own structure (column frequencies and
    layout, value range, Toeplitz structure, per-head slopes, grid strides) and confirmed by regenerating it.

    Rows that are not positions (``extra_rows`` = ``"index:name,..."``, or the metadata's ``extra_rows``: a learned
    class row before a sin-cos grid) are left out: the position rows are identified, and ``.left_out`` says which
    rows were not (:mod:`posenc_cli.checks.rows`).

    ``.best`` is the simplest candidate that reproduces every compared value within 2 ulps (or within the error
    of the usual float32 formula, ``tolerance="float32-formula"``), ``.command`` the ``posenc generate`` line that
    regenerates it; when nothing does (a trained table, noise), ``.best`` is None, ``.reason`` says why and
    ``.candidates`` list the closest readings, each with why it fails.

    >>> import posenc_cli as pe
    >>> found = pe.identify(pe.generate("sinusoidal", length=64, dim=16, base=500000).array())
    >>> found.command
    'posenc generate --kind sinusoidal --len 64 --dim 16 -p base=500000'
    """
    from .inspect.identification import identify as identify_tensors

    src = open_table(table, **_shape(length, dim))
    chosen = _chosen_tensors(src, tensor)
    groups = _tensor_groups(src, chosen)
    if len(groups) <= 1:
        arrays = {n: src.array(n) for n in chosen}
        left = _rows_left_out(src, arrays, extra_rows)
        if left is None:
            return identify_tensors(arrays, dict(src.metadata))
        rows = _rows_of(arrays, left)
        meta = {k: v for k, v in src.metadata.items() if k != "extra_rows"}
        import dataclasses

        return dataclasses.replace(identify_tensors(rows, meta), left_out=left.to_json())
    if extra_rows is not None:
        raise ParameterError(
            f"{param('extra_rows')} {extra_rows} cannot apply to {src.label}: it holds one table per group "
            f"({', '.join(groups)}); identify one group's file"
        )
    found = {
        g: identify_tensors({n[len(g) + 1 :]: src.array(n) for n in names}, _group_metadata(src, g))
        for g, names in groups.items()
    }
    import dataclasses

    return dataclasses.replace(next(iter(found.values())), groups=found)  # a copy: the groups hold the first


def _rows_of(tensors: Mapping[str, Any], left: Any) -> dict[str, Any]:
    """``tensors`` narrowed to the position rows ``[left.start, left.stop)`` (those of the table's length)."""
    n = int(next(iter(tensors.values())).shape[0])
    a, b = left.start, left.stop
    return {k: (v[a:b] if getattr(v, "ndim", 0) >= 2 and v.shape[0] == n else v) for k, v in tensors.items()}


def _rows_left_out(src: Source, arrays: Mapping[str, Any], given: str | None) -> Any:
    """The rows of a table to identify that are not positions (its metadata's ``extra_rows`` or ``given``), or None
    (:func:`posenc_cli.checks.rows.not_positions`: refused by name where they cannot apply)."""
    from .checks.rows import not_positions

    first = next(iter(arrays.values()))
    if given is None and not src.metadata.get("extra_rows"):
        return None
    return not_positions(int(first.shape[0]), src.label, None, src.metadata, given, first.ndim == 2)


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
    from .models.readers import model_config_layers, rows_option

    data = load_config(config)
    length = params.pop("length", params.pop("len", None))
    rows = rows_option(data, params.pop("rows", None), "the config")
    layers = model_config_layers(data, kind=kind, length=length, read_as=read_as, **rows)
    for lt, v in layers.items():  # a learned table is data in the weights, not parameters (models.hf_positions)
        if v is not None and "weights_tensor" in v[1]:
            raise ParameterError(
                f"layer type {lt} has learned positions ({v[1]['weights_tensor']} in the weights), which no "
                f"parameters build; give the model directory and {param('layer_type')} instead of every layer type"
            )
    built = {lt: make_encoding(k, {**p, **params}) for lt, v in layers.items() if v is not None for k, p in [v]}
    return built, [lt for lt, v in layers.items() if v is None]


def _value_dtype(src: Source, array: Any) -> Any:
    """The precision of the values: the bytes' dtype, or the coarser one the metadata says they were computed in."""
    from .encodings.base import resolve_dtype

    stated = src.metadata.get("value_dtype")
    if stated is None:
        # bfloat16 or float16 values widened to float32 (how NumPy users save them) are that precision's values
        import numpy as np

        from .inspect.analysis import read_rows, rounded_dtype, spread_rows

        if array.ndim < 1 or array.shape[0] == 0 or np.dtype(array.dtype).kind != "f":
            return array.dtype
        rounded = rounded_dtype(read_rows(array, spread_rows(int(array.shape[0]))).reshape(-1), array.dtype)
        return array.dtype if rounded is None else rounded
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
        name_a = src_a.tensor_name(tensor)
        if tensor not in src_b.names and len(src_b.names) > 1:  # cos_cached here, cos there: by its role's name
            role_of = dict(_pairs_by_role_name(src_a.names, src_b.names))
            if name_a in role_of:
                return [(name_a, role_of[name_a])], [], []
        return [(name_a, src_b.tensor_name(tensor))], [], []
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
    if not shared:  # different names throughout: by their roles' names (cos_cached and cos), else the primaries
        by_role = _pairs_by_role_name(names_a, names_b)
        if by_role:
            paired_a, paired_b = {a for a, _ in by_role}, {b for _, b in by_role}
            return (
                by_role,
                [n for n in names_a if n not in paired_a],
                [n for n in names_b if n not in paired_b],
            )
        return [(src_a.tensor_name(None), src_b.tensor_name(None))], [], []
    left_a = [n for n in names_a if n not in names_b]
    left_b = [n for n in names_b if n not in names_a]
    # the rest by their roles' names: HF keeps one inv_freq per attention type (``sliding_attention_inv_freq``,
    # and its ``..._original_inv_freq`` copy) where the reference of that type has ``inv_freq``
    by_role = _pairs_by_role_name(left_a, left_b)
    paired_a, paired_b = {a for a, _ in by_role}, {b for _, b in by_role}
    return (
        [(n, n) for n in shared] + by_role,
        [n for n in left_a if n not in paired_a],
        [n for n in left_b if n not in paired_b],
    )


def _pairs_by_role_name(names_a: list[str], names_b: list[str]) -> list[tuple[str, str]]:
    """Tensors of two tables paired by the name of their role: a name of ``b`` that is one word of a name of
    ``a``, or the words it ends with (``cos_cached``, ``rotary.cos`` and ``cos`` hold the cosines;
    ``sliding_attention_inv_freq`` and ``inv_freq`` the frequencies), where each name of ``a`` finds one (several
    names of ``a`` may hold the same values: HF's ``original_inv_freq`` beside its ``inv_freq``)."""
    import re

    pairs = []
    for a in names_a:
        words = re.split(r"[._\-]+", a)
        found = [
            b for b in names_b if b in words or (len(bw := re.split(r"[._\-]+", b)) > 1 and words[-len(bw) :] == bw)
        ]
        if len(found) == 1:
            pairs.append((a, found[0]))
    return pairs


def compare(
    a: TableLike,
    b: TableLike,
    *,
    tensor: str | list[str] | tuple[str, ...] | None = None,
    atol: float | None = None,
    rtol: float = 0.0,
    explain: bool = True,
    length: int | None = None,
    dim: int | None = None,
) -> Comparison:
    """Compare every tensor of ``a`` with the reference ``b``: per tensor the max abs / relative / ulp difference
    and where, mean difference, row cosine and the verdict (every element within ``atol + rtol * |b|``); ``tensor``
    narrows it to one tensor (or to several of ``a``'s, see :func:`pair_tensors`); for a pair that differs, ``explain`` asks :func:`posenc_cli.inspect.diagnose.diagnose` why (a layout swap, an offset, another
    base, ...). ``.same`` is the verdict of the whole comparison."""
    from .errors import check_float
    from .formats import validate_table_array
    from .inspect.metrics import compare as compare_arrays
    from .inspect.precision import within_rounding
    from .reports import Comparison, TensorComparison

    if atol is not None:
        atol = check_float("atol", atol, 0.0)
    rtol = check_float("rtol", rtol, 0.0)
    src_a, src_b = _open_pair(a, b, _shape(length, dim))
    pairs, only_a, only_b = pair_tensors(src_a, src_b, tensor)
    # a spec computes every tensor of its kind; those the table on the other side does not hold are skipped, and
    # said, whichever side the spec is on (two that compute: those of the reference ``b``, as before)
    skipped: list[str] = []
    skipped_by = ""
    if _computes(src_b) and only_b:
        skipped, only_b, skipped_by = only_b, [], src_b.label
    elif _computes(src_a) and not _computes(src_b) and only_a:
        skipped, only_a, skipped_by = only_a, [], src_a.label
    compared = []
    readings: Any = None
    pair_why: Any = None  # (shapes, diagnosis) of the rotary pair, diagnosed once for its cos and its sin
    computes_b = _computes(src_b)  # before its tensors are built: then every one is its encoding's own
    for ta, tb in pairs:
        arr_a, arr_b = src_a.array(ta), src_b.array(tb)
        validate_table_array(arr_a, ta, src_a.label, need_float=False)
        validate_table_array(arr_b, tb, src_b.label, need_float=False)
        res = compare_arrays(arr_a, arr_b, atol=atol, rtol=rtol)
        res.labels = {"a": f"{src_a.label} [{ta}]", "b": f"{src_b.label} [{tb}]"}
        why = None
        if not res.same and ((arr_a.ndim == 2 and arr_b.ndim == 2) or _engine_side(src_a, src_b)):
            # an engine's inv_freq is judged with its tables: ggml's frequencies in float32 are hf's within its
            # arithmetic when the judge says so (one rule for engine rows)
            _within_formula(res, src_a, src_b, arr_a, arr_b, ta, tb, built_b=computes_b)
        if not res.same and arr_a.ndim == 1 and arr_b.ndim == 1:
            _within_engine_frequencies(res, src_a, src_b, arr_a, arr_b)
        if not res.same and arr_a.ndim == 2 and arr_b.ndim == 2:
            res = _class_table(res, (src_a, arr_a, ta), (src_b, arr_b, tb), atol, rtol)
        if not res.formula and arr_a.ndim >= 2:
            within_rounding(res, arr_a, arr_b)
        if explain and not res.same and arr_a.ndim >= 2 and arr_b.ndim >= 2:
            from .inspect.diagnose import PLACEHOLDERS, diagnose, rotary_pair

            readings = _readings(src_a, src_b) if readings is None else readings  # one reading per table
            by_role = _pair_by_role(src_a), _pair_by_role(src_b)
            # a rotary pair on both sides is diagnosed as one table, whichever of its tensors differs: once, under
            # placeholder names, then named for each tensor
            pair = all(rotary_pair(t) is not None for t in by_role)
            shapes = (arr_a.shape, arr_b.shape)
            if not pair or pair_why is None or pair_why[0] != shapes:
                found = diagnose(
                    arr_a,
                    arr_b,
                    a_name=PLACEHOLDERS[0] if pair else res.labels["a"],
                    b_name=PLACEHOLDERS[1] if pair else res.labels["b"],
                    tensors_a=by_role[0],
                    tensors_b=by_role[1],
                    readings=readings,
                    metadata=(src_a.metadata, src_b.metadata),  # two resampled vision tables: which call made each
                )
                pair_why = (shapes, found) if pair else pair_why
            why = pair_why[1].named(res.labels["a"], res.labels["b"]) if pair else found
        compared.append(TensorComparison(ta, tb, res, why))
    return Comparison(src_a.label, src_b.label, compared, only_a, only_b, skipped, skipped_by=skipped_by)


def _computes(src: Source) -> bool:
    """``src`` is a spec (or a model config, an engine): it computes every tensor of its kind, holding none."""
    return src.encoding is not None and not src.tensors


def _within_formula(
    res: Any, src_a: Source, src_b: Source, arr_a: Any, arr_b: Any, ta: str, tb: str, *, built_b: bool = False
) -> None:
    """A table that differs from a spec (``rope:preset=llama3.1``) only by the float32 formula's error is the
    same within that error: ``res`` says so, with the bound (:mod:`posenc_cli.inspect.tolerance`). So is an
    engine's float32 table (``CONFIG@vllm``) within that error of an exact one (``CONFIG``), and two engines' tables
    (``CONFIG@mlx`` vs ``CONFIG@hf``) each within it of the exact table of the second one's parameters.
    ``built_b``: ``arr_b`` is ``src_b``'s encoding's own tensor ``tb`` (a spec's), read instead of computed again."""
    from .inspect.tolerance import formula_check_table

    regenerated: dict[str, Any] | None = None
    if src_a.encoding is not None and src_b.encoding is not None:
        # an engine's table (``exact_reference``: computed in its own float32 arithmetic) is judged against the
        # other side's exact table, or two engines' against the exact table of one of them: numerically, as the
        # audit's engine rows are (posenc_cli.models.engines.ArithmeticJudge)
        sides = ((src_a, arr_a, ta), (src_b, arr_b, tb))
        engine_sides = [
            (arr, name, src.encoding) for src, arr, name in sides if hasattr(src.encoding, "exact_reference")
        ]
        if not engine_sides:
            return
        exact = [src.encoding for src, _arr, _name in sides if not hasattr(src.encoding, "exact_reference")]
        ref = exact[0] if exact else src_b.encoding.exact_reference()
        checks = [(arr, ref, name, engine) for arr, name, engine in engine_sides]
    elif src_b.encoding is not None:
        checks = [(arr_a, src_b.encoding, tb, None)]
        if built_b:
            regenerated = {tb: arr_b}
    elif src_a.encoding is not None:
        checks = [(arr_b, src_a.encoding, ta, None)]
    else:
        return
    verdicts, notes = [], []
    for table, enc, name, engine in checks:
        if engine is not None and not _numeric_engine(engine):
            # the audit's one rule for engine rows (posenc_cli.models.engines.ArithmeticJudge): ggml's table is
            # hf's when its parameters and per-pair frequencies are, whatever the float32 formula's bound says
            from .models.engines import within_arithmetic

            why = (
                within_arithmetic(engine, enc)
                if engine.tensor_specs().get(name) == enc.tensor_specs().get(name)
                else None
            )
            if why is None:
                return
            notes.append(why)
            continue
        try:
            verdict = formula_check_table(table, enc, name, regenerated=regenerated)
        except (ParameterError, ValueError):
            return
        if verdict is None or not verdict.ok:
            return
        verdicts.append(verdict)
    worst = max(verdicts, key=lambda v: v.ratio) if verdicts else None
    res.same, res.reason = True, ""
    res.formula = None if worst is None else worst.to_json()
    res.note = "; ".join(notes)


def _within_engine_frequencies(res: Any, src_a: Source, src_b: Source, arr_a: Any, arr_b: Any) -> None:
    """Frequencies a file says ggml computed (its metadata's ``engine_arithmetic``: iterated float32 powf, which
    posenc cannot regenerate from the metadata alone) are the other side's when every one is within the engines'
    rule (:data:`posenc_cli.inspect.tolerance.GGML_FREQ_RTOL`), as the audit's llama.cpp rows judge them."""
    from .inspect.tolerance import GGML_FREQ_RTOL, frequency_error

    said = [s.metadata.get("engine_arithmetic", "") for s in (src_a, src_b)]
    if not any(a.startswith("ggml") for a in said):
        return
    rel = frequency_error(arr_a, arr_b)
    if rel <= GGML_FREQ_RTOL:
        res.same, res.reason = True, ""
        res.note = f"ggml float32 frequencies (engine_arithmetic in the metadata): within {rel:.2g} of each other"


def _engine_side(src_a: Source, src_b: Source) -> bool:
    """Whether one side of a comparison is an engine's table (``CONFIG@ENGINE``)."""
    return any(s.encoding is not None and hasattr(s.encoding, "exact_reference") for s in (src_a, src_b))


def _numeric_engine(engine: Any) -> bool:
    """Whether an engine's table is judged on its values against the float32 formula's bound (torch, mlx), not
    by its parameters and frequencies (ggml: :meth:`posenc_cli.models.engines.ArithmeticJudge._ggml`)."""
    from .models.engines import ArithmeticJudge

    return bool(ArithmeticJudge(engine, engine.exact_reference()).numeric)


def _class_table(
    res: Any, a: tuple[Source, Any, str], b: tuple[Source, Any, str], atol: float | None, rtol: float
) -> Any:
    """A table compared with the config of a model whose attention changes HF's rotary tables before q and k meet
    them (:attr:`Source.class_table`: DeepSeek-V3 permutes q/k, so the config reads as the pairs (2k, 2k+1) the
    scores see while HF's rotary class gives the half layout; nanochat's rotate_half flips signs): the same when it
    is the rotary class's own table (exactly, or within the float32 formula's error), and the verdict says what the
    attention does; else ``res`` as it was."""
    import dataclasses

    from .encodings import make_encoding
    from .inspect.metrics import compare as compare_arrays
    from .inspect.tolerance import formula_check_table

    def spec(src: Source) -> bool:
        return src.encoding is not None and bool(src.lazy)

    config, table = (b, a) if b[0].class_table else (a, b)
    src_c, _arr_c, name_c = config
    src_t, arr_t, _name_t = table
    if src_c.class_table is None or spec(src_t):
        return res
    changes, note = src_c.class_table
    try:
        half = make_encoding(src_c.encoding.KIND, {**src_c.encoding.params(), **changes})
        arr_h = half.array(name_c)
    except (ParameterError, ValueError, KeyError):
        return res
    if tuple(arr_h.shape) != tuple(arr_t.shape):
        return res
    first, second = (arr_t, arr_h) if table is a else (arr_h, arr_t)
    alt = compare_arrays(first, second, atol=atol, rtol=rtol)
    if not alt.same:
        verdict = formula_check_table(arr_t, half, name_c)
        if verdict is None or not verdict.ok:
            return res
        alt.same, alt.reason, alt.formula = True, "", verdict.to_json()
    alt.labels = dict(res.labels)
    return dataclasses.replace(alt, note=note)


def _readings(src_a: Source, src_b: Source) -> tuple[Any, Any]:
    """Both sources read as a kind with parameters (a spec's or config's own, a file's metadata or its
    identification, :func:`posenc_cli.inspect.diagnose.parameters.read_source`), so that a diagnosis states
    their differences as parameters; None for a side nothing reproduces."""
    import dataclasses

    from .inspect.diagnose.parameters import read_source

    def read(src: Source, kind: str | None) -> Any:
        if src.groups:
            return None
        if src.lazy and src.encoding is not None:  # a spec or a config: its own parameters
            found = read_source(src.encoding, {}, src.metadata)
        else:
            found = read_source(src.encoding, {n: src.array(n) for n in src.names}, dict(src.metadata), kind)
        return None if found is None else dataclasses.replace(found, label=src.label)

    kind_b = src_a.encoding.KIND if src_a.encoding is not None else None
    rb = read(src_b, kind_b)
    ra = read(src_a, rb.kind if rb is not None else None)
    if rb is None and ra is not None and ra.kind != kind_b:  # (read as ra's kind already: nothing reproduced it)
        rb = read(src_b, ra.kind)
    return ra, rb


def _pair_by_role(src: Source) -> dict[str, Any] | None:
    """A source's cos/sin tensors keyed by role (for the diagnosis of a rotary pair), or None."""
    from .encodings import KINDS, get_kind

    if src.kind not in KINDS:
        return None
    roles = get_kind(src.kind).ROLES
    pair = {roles[n]: src.array(n) for n in src.names if roles.get(n) in ("cos", "sin")}
    return pair if len(pair) == 2 else None


def _open_pair(a: TableLike, b: TableLike, shape: Mapping[str, int] | None = None) -> tuple[Source, Source]:
    """Open two tables; a spec or a model config on one side takes its length and dim from ``shape``
    (``length``/``dim`` given), else from the other side's table (as ``posenc compare`` does)."""
    from .sources import is_config, is_spec, open_source

    def spec(x: TableLike) -> bool:  # a side that builds its tables: a spec, or a model config
        return isinstance(x, (str, os.PathLike)) and (is_spec(os.fspath(x)) or is_config(os.fspath(x)))

    given = dict(shape or {})
    if given and not (spec(a) or spec(b)):
        raise ParameterError(
            f"{param(next(iter(given)))} {next(iter(given.values()))} applies to a spec (KIND:key=value) or a model "
            "config, and neither table is one; drop it"
        )
    if spec(b) and not spec(a):
        src_a = open_table(a)
        return src_a, open_source(os.fspath(b), like=src_a, params=given or None)
    if spec(a) and not spec(b):
        src_b = open_table(b)
        return open_source(os.fspath(a), like=src_b, params=given or None), src_b
    return open_table(a, **given), open_table(b, **given)


def _shape(length: int | None, dim: int | None) -> dict[str, int]:
    """``length``/``dim`` as given to a verb taking a spec (``generate``'s keywords): the parameters its spec is
    opened with (a table that is no spec refuses them by name)."""
    return {k: v for k, v in (("length", length), ("dim", dim)) if v is not None}


# ----- auditing a model -------------------------------------------------------------------------------
def audit(
    source: str | os.PathLike[str],
    *,
    against: str | os.PathLike[str] | None = None,
    engine: str | list[str] | tuple[str, ...] | None = None,
    length: int | None = None,
    n_ctx: int | None = None,
    max_model_len: int | None = None,
    download: bool = False,
    max_bytes: int | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
    image_size: Sequence[Any] | None = None,
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
    engine : str or list of str, optional
        The engines whose tables are checked (``"hf,vllm"`` or a list; default: every engine posenc knows).
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
        Called as ``on_progress(what, done, total)`` before each step's rows, in report order and in the
        calling thread (the steps themselves run concurrently on every core).
    image_size : list, optional
        A vision model (ViT, DeiT, DINOv2, CLIP, SigLIP, a timm ViT): the image sizes (``H``, ``"HxW"`` or
        ``(H, W)``) at which its position table is checked besides its native one; ``engine="timm"`` adds timm's
        resampling of it at each size, measured against the model's own.

    Returns
    -------
    AuditReport
        ``.rows`` (artifact x layer type x engine: verdict, largest difference, explanation), ``.ok``,
        ``.exit_code`` (0 every row agrees, 1 a row differs, 2 a file could not be read) and ``.to_json()``
        (the versioned schema ``posenc_cli/auditing/schema.json``).
    """
    from .auditing.run import Verbs
    from .auditing.run import audit as run_audit

    return run_audit(
        source,
        verbs=Verbs(check=check, check_onnx=check_onnx, layer_types=layer_types),
        against=against,
        engine=engine,
        length=length,
        n_ctx=n_ctx,
        max_model_len=max_model_len,
        download=download,
        max_bytes=max_bytes,
        on_progress=on_progress,
        image_size=image_size,
    )


# ----- the commands' verbs: sources as the command line names them, every verdict a typed report ---------------
def source_kinds(text: str, options: SourceOptions | None = None, *, stdin_config: bool = False) -> set[str]:
    """The kinds of a source as the command line names it (:func:`posenc_cli.scopes.source_kinds`): ``spec``,
    ``config``, ``engine``, ``gguf``, ``onnx``, ``file``, ``stdin`` (``stdin_config``: ``-`` is a config)."""
    from .scopes import source_kinds as kinds_of

    return kinds_of(text, None if options is None else options.engine, stdin_config=stdin_config)


def open_source(
    text: str,
    options: SourceOptions | None = None,
    *,
    like: Source | None = None,
    dtype: bool = True,
    kind: str | None = None,
    extra: Sequence[Any] = (),
    layer_type: str | None = None,
    stdin_config: bool = False,
    within_limits: bool = False,
) -> Source:
    """A source as the command line names it (a file, ``-``, a spec, a model config, ``CONFIG@ENGINE``, a GGUF or
    ONNX file), read or built with ``options``; ``like`` (another source) gives a spec or a config the rows (and
    a spec the dim) of the table it is compared with. What reading it had to say is in ``.warnings``."""
    from .sources import is_config, is_gguf, is_spec
    from .sources import open_source as open_text

    opts = options or SourceOptions()
    gguf = is_gguf(text)
    config = is_config(text) or (stdin_config and text == "-")
    builds = is_spec(text) or config or gguf
    lt = layer_type if layer_type is not None else opts.layer_type
    if config and text == "-":  # a model config on stdin (generate -, export --hf-config -)
        from .sources import open_config

        return open_config(text, layers=[*opts.layers(dtype=dtype), *extra], kind=kind, layer_type=lt,
                           max_bytes=opts.max_bytes, read_as=opts.read_as, engine=opts.engine,
                           engine_options=opts.engine_options(), within_limits=within_limits)  # fmt: skip
    return open_text(
        text,
        params=[*opts.layers(dtype=dtype), *extra] if builds else None,
        max_bytes=opts.max_bytes,
        like=like,
        layer_type=lt if (config or gguf) else None,
        read_as=opts.read_as if config else None,
        kind=kind,
        n_ctx=opts.n_ctx if gguf else None,
        engine=opts.engine if config else None,
        engine_options=opts.engine_options() if config else None,
        within_limits=within_limits,
    )


def layer_types(text: str, options: SourceOptions | None = None) -> list[str | None]:
    """The attention types of a model (a config, ``CONFIG@ENGINE`` or a GGUF file) whose tables differ, each
    compared on its own; ``[None]`` for a model with one table (or one RoPE every type shares) and for any
    other source. ``options.layer_type`` narrows it to that type."""
    from .sources import is_config, is_gguf, split_engine

    opts = options or SourceOptions()
    if opts.layer_type is not None:
        return [opts.layer_type]
    if is_config(text):
        from .models.readers import model_config_layers
        from .models.vision import claims as vision_claims

        if vision_claims(load_config(split_engine(text)[0]), opts.image_size, grid=opts.grid, tower=opts.tower):
            # one table: its grid at a size
            return [None]
        if opts.engine is None and split_engine(text)[1] is None and opts.read_as is None:
            layers = model_config_layers(load_config(split_engine(text)[0]))
        else:
            layers = model_config_layers(load_config(split_engine(text)[0]), read_as=opts.read_as)
        rotating = [lt for lt, v in layers.items() if v is not None]
        distinct = {repr(v) for v in layers.values() if v is not None}
        return list(rotating) if len(distinct) > 1 else [None]
    if is_gguf(text):
        from .errors import PosencError
        from .models.gguf import read_gguf
        from .models.llamacpp import from_gguf

        try:
            from_gguf(read_gguf(text), "sliding_attention")
        except PosencError:
            return [None]
        return ["full_attention", "sliding_attention"]
    return [None]


def check_gguf(
    gguf: str | os.PathLike[str],
    config: str | os.PathLike[str] | Mapping[str, Any],
    *,
    n_ctx: int | None = None,
    length: int | None = None,
    layer_type: str | None = None,
    weights: str = "raise",
) -> Any:
    """llama.cpp's tables for a GGUF file against HF's for its config (every attention type; ``layer_type``
    narrows it), each divergence named: a :class:`posenc_cli.models.llamacpp.Verdict` (``.ok``,
    ``.divergences``, ``.equivalences``, ``.notes``, ``.weights``, ``.to_json()``). Without ``layer_type`` the
    GGUF's Q/K weights are compared with HF's where the config's directory holds them (``weights="skip"``: not;
    ``"row"``: a file that cannot be compared is reported in ``.weights`` instead of raising)."""
    from .models.conversion import verdict

    path = config if isinstance(config, Mapping) else os.fspath(config)
    return verdict(os.fspath(gguf), path, n_ctx=n_ctx, length=length, layer_type=layer_type, weights=weights)


def check_onnx(
    onnx: str | os.PathLike[str],
    config: str,
    *,
    engine: str | None = None,
    layer_type: str | None = None,
    max_bytes: int | None = None,
) -> list[Any]:
    """The rotary caches of an ONNX model against the tables ``engine`` (default ``hf``; or ``CONFIG@ENGINE``)
    computes for its config, each export mistake named: one :class:`posenc_cli.models.onnx.OnnxCheck` per
    attention type of a model with several (its caches matched to their types through the config: each cache to
    the type whose tables it equals, else to the one it departs from least), else one."""
    import dataclasses

    from .models.onnx import check_against, read_onnx
    from .sources import split_engine

    path = os.fspath(onnx)
    config, named = split_engine(config)
    if named is not None and engine is not None and named != engine:
        raise ParameterError(f"the engine is given twice: {config}@{named} and {param('engine')} {engine}")
    engine = named or engine or "hf"
    types = layer_types(config, SourceOptions(layer_type=layer_type))
    model = read_onnx(path, max_bytes=max_bytes)
    if types == [None] or len(model.caches) < 2:
        lt = types[0] if len(types) == 1 else None
        if lt is None and types != [None]:  # one cache of a model with several types: the type it matches
            lt = _closest_type(path, config, engine, types, model, None)
        found = check_against(path, config, engine=engine, layer_type=lt, model=model)
        return [_typed(found, lt if types != [None] else None)]
    by_type: dict[str, list[Any]] = {}
    for cache in model.caches:  # each cache judged against every type; it belongs to the one it departs from least
        tried = [
            check_against(path, config, engine=engine, layer_type=lt, model=model, caches=[cache.group]) for lt in types
        ]
        best = min(range(len(types)), key=lambda i: (len(tried[i].divergences), i))
        by_type.setdefault(str(types[best]), []).append(tried[best])
    out = []
    for lt in types:
        if lt is None or lt not in by_type:
            continue
        parts = by_type[lt]
        merged = dataclasses.replace(
            parts[0],
            divergences=list(dict.fromkeys(d for p in parts for d in p.divergences)),
            matched=[m for p in parts for m in p.matched],
        )
        out.append(_typed(merged, lt))
    for lt in types:  # a type of the config with no cache in the model: the export lacks its tables
        if lt is not None and lt not in by_type:
            out[-1].divergences.append(f"no cache of {path} holds the {lt} layers' tables")
    return out


def _closest_type(path: str, config: str, engine: str, types: list[Any], model: Any, caches: Any) -> Any:
    """The attention type whose tables the caches equal, else the one with the fewest divergences."""
    from .models.onnx import check_against

    scored = [
        (len(check_against(path, config, engine=engine, layer_type=lt, model=model, caches=caches).divergences), i)
        for i, lt in enumerate(types)
    ]
    return types[min(scored)[1]]


def _typed(found: Any, layer_type: str | None) -> Any:
    if layer_type is not None:
        found.label = f"{found.label} [{layer_type}]"
    return found


def check_sources(
    sources: Sequence[str],
    *,
    against: str | None = None,
    options: SourceOptions | None = None,
    expect: str | None = None,
    require: list[str] | None = None,
    tensor: list[str] | None = None,
    identify: bool = True,
    probes: int = 8,
    seed: int = 0,
    progress: Callable[[str, int], Any] | None = None,
    extra_rows: str | None = None,
) -> Verdicts:
    """``posenc check``: every source as the command line names it, judged. A table's properties (and with
    ``against`` a spec, file or model config, whether it equals it: the rows of a config come from the table,
    one report per attention type of a model with several); a GGUF file against a config: llama.cpp's tables
    against HF's (:func:`check_gguf`); an ONNX model against a config: its caches (:func:`check_onnx`).

    ``progress(label, nbytes)``, when given, is called before each table is checked and returns a context manager
    that yields a callback ``(done, total)`` (or None), for a progress bar. Options that cannot apply to the
    sources are refused by name (:mod:`posenc_cli.scopes`)."""
    from .reports import Verdicts
    from .scopes import refuse_out_of_scope
    from .sources import is_config, is_gguf, is_spec

    opts = options or SourceOptions()
    texts = list(sources)
    own = {"expect": expect, "require": require, "tensor": tensor, "identify": not identify, "extra_rows": extra_rows}
    if against is not None and is_config(against) and texts and all(_is_mlx(t) for t in texts):
        from .models.mlx_weights import check_mlx

        refuse_out_of_scope(opts.scoped(**own), [{"mlx-verdict"}])
        if not os.path.isdir(against):
            raise ParameterError(
                f"{param('against')} {against}: an MLX directory is checked against the HF model "
                "directory it was converted from (config.json and safetensors), not a loose config"
            )
        return Verdicts("mlx", [check_mlx(t, against) for t in texts])
    if against is not None and is_config(against) and any(is_gguf(t) for t in texts):
        refuse_out_of_scope(opts.scoped(**own), [{"gguf-verdict"}])
        bad = [t for t in texts if not is_gguf(t)]
        if bad:
            raise ParameterError(
                f"{bad[0]} is not a GGUF file; check GGUF files {param('against')} a config one kind at a time"
            )
        verdicts = [
            check_gguf(t, against, n_ctx=opts.n_ctx, length=opts.length, layer_type=opts.layer_type) for t in texts
        ]
        return Verdicts("gguf", verdicts)
    if against is not None and is_config(against) and any(t.lower().endswith(".onnx") for t in texts):
        refuse_out_of_scope(opts.scoped(**own), [{"onnx-verdict"}])
        if not all(t.lower().endswith(".onnx") for t in texts):
            raise ParameterError("check --against a config takes ONNX models, or other tables, not both at once")
        from .models.onnx_weights import weights_for

        onnx, weights = [], []
        for t in texts:  # the caches, then the q/k initializers where HF's weights are beside the config
            w = weights_for(t, against)
            try:
                onnx += check_onnx(t, against, engine=opts.engine, layer_type=opts.layer_type, max_bytes=opts.max_bytes)
            except InputError as exc:
                if w is None or "no rotary node" not in str(exc):
                    raise
                w.notes.append(f"the cos/sin caches were not checked: {' '.join(str(exc).split())}")
            weights += [] if w is None else [w]
        return Verdicts("onnx", onnx + weights, list(dict.fromkeys(w for r in onnx for w in r.warnings)))
    if expect is not None:
        from .encodings import resolve_kind

        expect = resolve_kind(expect)
    builds = [t for t in texts if is_spec(t) or is_config(t)]
    if against is not None:
        if not is_spec(against) and expect is not None:
            raise ParameterError(
                f"{param('expect')} {expect} and {param('against')} {against}: {against} says what the table is; "
                "give one of them"
            )
        if builds:
            raise ParameterError(
                f"{param('against')} compares files with a spec; {builds[0]} is built already: compare two specs "
                "with posenc compare"
            )
    elif expect is not None and not builds and (opts.params or opts.grid):
        against = expect  # --expect KIND -p key=value on files: the table must equal that spec
    refuse_options(opts, [*texts, *([against] if against is not None else [])], own)
    srcs = [src for text in texts for src in _typed_sources(text, opts)]
    warnings = [w for s in srcs for w in s.warnings]
    if not identify:
        if against is not None:
            raise ParameterError(f"{param('identify')} cannot apply with {param('against')}: it says what the table is")
        known = [s for s in srcs if s.kind is not None and _known_kind(s.kind)]
        if len(known) == len(srcs):
            raise ParameterError(
                f"{param('identify')} cannot apply: {known[0].label} says its kind ({known[0].kind}); only a table "
                "without one is identified"
            )
    builds_ref = against is not None and (is_spec(against) or is_config(against))
    ref_file = open_source(against, opts) if against is not None and not builds_ref else None
    types: list[str | None] = layer_types(against, opts) if builds_ref and against is not None else [None]
    items: list[Any] = []
    for src in srcs:
        narrowed = opts.layer_type is not None and builds_ref
        tables = _by_type(src, types, True) if narrowed else _tables(src, tensor)
        if len(types) > 1 and len(tables) == 1:
            tables = _by_type(src, types)
        for group in tables:
            refs: list[Any] = [ref_file]
            if builds_ref and against is not None:
                like = group.narrowed(tensor) if tensor else group
                refs = [_typed_ref(against, opts, like, lt, group) for lt in types]
                warnings += [w for r in refs for w in r.warnings]
                refs = _matching_refs(group, refs, types)
            for ref in refs:
                items.append(
                    _check_one(group, ref, expect, require, tensor, identify, probes, seed, opts, progress, extra_rows)
                )
    return Verdicts("check", items, list(dict.fromkeys(warnings)))


def _is_mlx(text: str) -> bool:
    """A directory mlx-lm's ``convert`` wrote (:func:`posenc_cli.models.mlx_weights.is_mlx_dir`)."""
    from .models.mlx_weights import is_mlx_dir

    return is_mlx_dir(text)


def _typed_sources(text: str, opts: SourceOptions) -> list[Source]:
    """A source opened once per attention type of a model with several (a config, ``CONFIG@ENGINE``, a GGUF
    file), each labelled with its type; else once."""
    types = layer_types(text, opts)
    out = []
    for lt in types:
        src = open_source(text, opts, layer_type=lt)
        if lt is not None and len(types) > 1:
            src.label = f"{src.label} [{lt}]"
        out.append(src)
    return out


def _typed_ref(against: str, opts: SourceOptions, like: Source, lt: str | None, group: Source) -> Source:
    """The reference of one attention type (a grouped table's group of that name gives its own type)."""
    from .sources import is_config

    if lt is None and is_config(against) and group.label.endswith("]") and "[" in group.label:
        name = group.label.rsplit("[", 1)[1][:-1]
        if name in _all_types(against, opts):
            lt = name
    ref = open_source(against, opts, like=like, layer_type=lt)
    if lt is not None:
        ref.label = f"{ref.label} [{lt}]"
    return ref


def _all_types(text: str, opts: SourceOptions) -> list[str]:
    try:
        return [t for t in layer_types(text, opts._replace(layer_type=None)) if t is not None]
    except PosencError:
        return []


def _matching_refs(group: Source, refs: list[Source], types: list[str | None]) -> list[Source]:
    """A table checked against a model of several attention types: the type named by its group, else the type
    whose tables it equals, else every type (each then says how it differs)."""
    if len(refs) == 1:
        return refs
    name = group.label.rsplit("[", 1)[1][:-1] if group.label.endswith("]") and "[" in group.label else None
    for lt, ref in zip(types, refs):
        if lt == name:
            return [ref]
    for ref in refs:
        try:
            if compare(group, ref, explain=False).same:
                return [ref]
        except PosencError:
            continue
    return refs


def _tables(src: Source, tensor: Any) -> list[Source]:
    """The tables of a source: each group of a grouped file, else the source."""
    if src.groups and tensor:
        raise ParameterError(
            f"{src.label} holds one table per group ({', '.join(src.groups)}); {param('tensor')} cannot "
            "apply: every group's tables are checked"
        )
    return list(src.groups.values()) or [src]


def _check_one(group: Source, ref: Any, expect: Any, require: Any, tensor: Any, identify: bool, probes: int,
               seed: int, opts: SourceOptions, progress: Any, extra_rows: str | None = None) -> CheckReport:  # fmt: skip
    kwargs: dict[str, Any] = {"expect": expect, "against": ref, "require": require, "tensor": tensor or None,
                              "identify": identify, "probes": probes, "seed": seed, "extra_rows": extra_rows}  # fmt: skip
    if opts.max_bytes is not None:
        kwargs["max_bytes"] = opts.max_bytes
    if progress is None:
        return check(group, **kwargs)
    size = sum(int(getattr(group.tensors.get(n), "nbytes", 0)) for n in _chosen_tensors(group, tensor or None))
    with progress(f"checking {group.label}", size) as advance:
        if advance is None:
            return check(group, **kwargs)
        return check(group, on_check=lambda _name, total: advance(1, total), **kwargs)


def refuse_options(
    opts: SourceOptions, texts: Sequence[str], own: Mapping[str, Any] | None = None, *, stdin_config: bool = False
) -> None:
    """Refuse by name the options (``opts`` and a command's own scoped ones, ``own``) that apply to none of the
    sources ``texts`` (:mod:`posenc_cli.scopes`); a mistyped kind is said first."""
    from .encodings import resolve_kind
    from .scopes import refuse_out_of_scope
    from .sources import looks_like_a_kind

    for t in texts:
        if looks_like_a_kind(t):  # a mistyped kind, not a file: say so first
            resolve_kind(t.split(":", 1)[0])
    kinds = [source_kinds(t, opts, stdin_config=stdin_config) for t in texts]
    refuse_out_of_scope(opts.scoped(**(own or {})), kinds)


def compare_sources(
    a: str,
    b: str,
    *,
    options: SourceOptions | None = None,
    tensor: list[str] | None = None,
    atol: float | None = None,
    rtol: float = 0.0,
    explain: bool = True,
) -> Verdicts:
    """``posenc compare``: two sources as the command line names them. A GGUF file and a model config: llama.cpp's
    tables against HF's (:func:`check_gguf`); else :func:`compare` of their tables, one comparison per attention
    type when a side is a model with several (``options.layer_type`` narrows it to one)."""
    from .reports import Comparison, Verdicts
    from .sources import is_config, is_gguf, is_spec

    opts = options or SourceOptions()
    if a == "-" and b == "-":
        raise ParameterError("only one source can be - (stdin)")
    own = {"tensor": tensor, "atol": atol, "rtol": rtol or None, "explain": not explain}
    pair = (a, b) if is_gguf(a) and is_config(b) else (b, a) if is_gguf(b) and is_config(a) else None
    if pair is not None:  # llama.cpp's RoPE for a GGUF against HF's for its config: the divergences named
        from .scopes import refuse_out_of_scope

        refuse_out_of_scope(opts.scoped(**own), [{"gguf-verdict"}])
        found = check_gguf(pair[0], pair[1], n_ctx=opts.n_ctx, length=opts.length, layer_type=opts.layer_type)
        return Verdicts("gguf", [found])
    refuse_options(opts, [a, b], own)

    def builds(text: str) -> bool:
        return is_spec(text) or is_config(text)

    own_types = {t: layer_types(t, opts) for t in (a, b)}
    types = list(dict.fromkeys(lt for t in (a, b) for lt in own_types[t]))
    if len(types) > 1:
        types = [lt for lt in types if lt is not None]
    narrowed = None if not tensor else (tensor[0] if len(tensor) == 1 else list(tensor))
    items: list[Any] = []
    warnings: list[str] = []

    def side(text: str, lt: str | None, like: Source | None = None) -> Source:
        """One side of one attention type: a model of one table serves every type."""
        mine = lt if lt in own_types[text] or opts.layer_type is not None else None
        return _group_of(open_source(text, opts, like=like, layer_type=mine, within_limits=True), lt)

    for lt in types:
        if builds(a) and not builds(b):  # built first, file second: the file gives the spec its shape
            src_b = side(b, lt)
            src_a = side(a, lt, src_b)
        else:
            src_a = side(a, lt)
            src_b = side(b, lt, src_a)
        if len(types) > 1:  # each side named with the attention type compared (a group's label says it)
            for src in (src_a, src_b):
                src.label = src.label if src.label.endswith(f"[{lt}]") else f"{src.label} [{lt}]"
        warnings += src_a.warnings + src_b.warnings
        limits = [s.engine_limit for s in (src_a, src_b) if s.engine_limit is not None]
        if limits and min(lim.rows for lim in limits) == 0:  # an engine computes no row: nothing to compare
            res = Comparison(src_a.label, src_b.label, [], limits=limits)
        else:
            if limits:  # the rows an engine computes, against the same rows of the other side
                rows = min(lim.rows for lim in limits)
                src_a, src_b = _first_rows(src_a, rows), _first_rows(src_b, rows)
            res = compare(src_a, src_b, tensor=narrowed, atol=atol, rtol=rtol, explain=explain)
            res.limits = limits
        res.rules = src_a.engine_rules + src_b.engine_rules
        res.layer_type = lt if len(types) > 1 or opts.layer_type is not None else None
        items.append(res)
    return Verdicts("compare", items, list(dict.fromkeys(warnings)))


def _first_rows(src: Source, rows: int) -> Source:
    """The table's first ``rows`` rows (a side compared with the rows an engine computes of those asked): every
    tensor along the positions cut, the others (``inv_freq``) whole; the table itself when it has no more."""
    have = src.rows()
    if have is None or have <= rows:
        return src
    from .formats import ArrayTensor
    from .sources import Source

    arrays = {}
    for n in src.names:
        arr = src.array(n)
        arrays[n] = arr[:rows] if arr.ndim >= 2 and arr.shape[0] == have else arr
    out = Source(src.label, arrays, dict(src.metadata), lazy={k: ArrayTensor(k, v) for k, v in arrays.items()})
    out.warnings, out.engine_limit, out.engine_rules = src.warnings, src.engine_limit, src.engine_rules
    return out


def _group_of(src: Source, layer_type: str | None) -> Source:
    """A grouped table's group of one attention type, when it has one of that name (a posenc group, or the
    tensors ``TYPE.NAME`` of a file without metadata); else the table."""
    if layer_type is None:
        return src
    if layer_type in src.groups:
        return src.groups[layer_type]
    pre = layer_type + "."
    names = [n for n in src.names if n.startswith(pre)]
    if src.groups or not names:
        return src
    from .formats import ArrayTensor
    from .sources import Source

    arrays = {n[len(pre) :]: src.array(n) for n in names}
    meta = {k[len(pre) :]: v for k, v in src.metadata.items() if k.startswith(pre)}
    return Source(f"{src.label} [{layer_type}]", arrays, meta, lazy={k: ArrayTensor(k, v) for k, v in arrays.items()})


def _by_type(src: Source, types: list[str | None], narrowed: bool = False) -> list[Source]:
    """The tables of a file against a model of several attention types: its groups (posenc's, or ``TYPE.NAME``
    tensors of those types), else the file whole; ``narrowed`` (``--layer-type``): the groups of those types."""
    if src.groups and not narrowed:
        return list(src.groups.values())
    parts = [_group_of(src, lt) for lt in types if lt is not None]
    split = [p for p in parts if p is not src]
    covered = sum(len(p.names) for p in split)
    return split if split and (narrowed or covered == len(src.names)) else [src]


def built_source(
    source: str | None = None,
    *,
    kind: str | None = None,
    hf_config: str | None = None,
    options: SourceOptions | None = None,
    all_layer_types: bool = False,
    tensor: Sequence[str] | None = None,
) -> tuple[Source, list[str]]:
    """What ``posenc generate`` builds: SOURCE (a spec, a model config, ``-`` for a config on stdin, a GGUF or
    ONNX file), ``kind`` (``--kind``) or ``hf_config`` (``--hf-config``), each given once; with
    ``all_layer_types``, every attention type's tables of a config in one grouped table (tensors ``TYPE.NAME``).
    ``tensor``: the tensors to be written (refused where the tables are written whole). Returns the source and
    the attention types that apply no position encoding (NoPE: nothing built for them).
    Options that cannot apply are refused by name (:mod:`posenc_cli.scopes`)."""
    from .sources import is_gguf, is_spec, split_engine

    opts = options or SourceOptions()
    text = _generate_text(source, kind, hf_config)
    own = {"kind": kind if not is_spec(text) else None, "all_layer_types": all_layer_types, "tensor": tensor}
    kinds = source_kinds(text, opts, stdin_config=True)
    config = "config" in kinds
    if all_layer_types and config and "engine" not in kinds:
        kinds = {"config-layers"}
    from .scopes import refuse_out_of_scope

    refuse_out_of_scope(opts.scoped(**own), [kinds])
    if all_layer_types:
        return _all_layer_types(split_engine(text)[0], kind, opts)
    if config:
        src = open_source(text, opts, kind=kind, stdin_config=True)
        if src.encoding is None and "grid" not in src.metadata:  # a learned table: data to export, not to build
            given = [label for label, _ in opts.layers()]  # the reading options as given (-p table=bias, --len N)
            given += [f"--layer-type {opts.layer_type}"] if opts.layer_type is not None else []
            asked = " ".join([text, *given])
            raise ParameterError(
                f"{text} holds a position table read from its weights; export it: posenc export {asked} -o FILE"
            )
        return src, []
    if not (is_gguf(text) or is_spec(text) or text.lower().endswith(".onnx")):
        raise ParameterError(f"{text} is not a spec or a model config: generate builds tables")
    return open_source(text, opts), []


def _generate_text(source: str | None, kind: str | None, hf_config: str | None) -> str:
    """What generate builds from: SOURCE, ``--kind`` or ``--hf-config`` (each given once)."""
    from .encodings import DEFAULT_KIND, resolve_kind
    from .sources import is_config, is_gguf, is_spec, looks_like_a_kind

    if source is not None and not (
        source == "-" or is_spec(source) or is_config(source) or is_gguf(source) or source.lower().endswith(".onnx")
    ):
        if looks_like_a_kind(source):
            resolve_kind(source.split(":", 1)[0])  # unknown encoding ...; did you mean ...
        raise ParameterError(
            f"{source} is not a spec or a model config: generate builds tables (to write a file's table in "
            "another format, use posenc export)"
        )
    if source is not None and hf_config is not None:
        if is_spec(source):
            raise ParameterError(
                f"SOURCE {source} and {param('hf_config')} {hf_config} both say what to build; name the kind with "
                f"{param('kind')}"
            )
        raise ParameterError(f"the model config is given twice: SOURCE {source} and {param('hf_config')} {hf_config}")
    if source is not None and kind is not None and is_spec(source):
        raise ParameterError(f"the kind is given twice: SOURCE {source} and {param('kind')} {kind}; give it once")
    if hf_config is not None:
        return hf_config
    if source is not None:
        return source
    return resolve_kind(kind or DEFAULT_KIND)  # unknown encoding ...; did you mean ...


def _all_layer_types(text: str, kind: str | None, opts: SourceOptions) -> tuple[Source, list[str]]:
    """Every attention type's tables in one grouped table, tensors ``TYPE.NAME``; and the NoPE types."""
    from . import formats
    from .sources import Source, check_size, merge_given

    given = merge_given(opts.layers())
    rows = {"rows": given["rows"]} if "rows" in given else {}
    encs, nope = from_config_layers(text, kind=kind, read_as=opts.read_as, **given)
    if not encs:
        raise ParameterError(f"{text}: no attention type of this model applies a position encoding")
    src = Source.from_groups(encs, text)
    # what the reading assumed (hf_read_as) and which rows the tables hold (position_rows), as for one layer type
    from .models.readers import model_config_notes

    src.metadata.update(model_config_notes(load_config(text), kind=kind, read_as=opts.read_as, **rows))
    limit = formats.DEFAULT_MAX_BYTES if opts.max_bytes is None else opts.max_bytes
    check_size(sum(e.nbytes() for e in encs.values()), limit, "the tables")
    return src, nope


def export_source(
    source: str | None = None,
    *,
    hf_config: str | None = None,
    options: SourceOptions | None = None,
    onnx_rope: bool = False,
) -> tuple[Source, bool]:
    """What ``posenc export`` writes: SOURCE (a file, ``-``, a spec or a model config) or ``hf_config`` (with
    SOURCE a spec naming the kind that reads it, and parameters); ``onnx_rope``: RoPE's ONNX cache layout (a
    posenc-written file is rebuilt from its metadata). Returns the source and whether it was built (in
    ``options.dtype`` already) rather than read (cast to it when written)."""
    import dataclasses

    from .sources import Source, is_config, is_spec, parse_spec, spec_label

    opts = options or SourceOptions()
    onnx = [("--onnx-rope", {"cache": "onnx"})] if onnx_rope else []
    if hf_config is not None:  # SOURCE, if any, is a spec naming the kind that reads the config (and parameters)
        if source is not None and not is_spec(source):
            raise ParameterError(
                f"{param('hf_config')} {hf_config} and SOURCE {source}: both say what to export; give one"
            )
        refuse_options(opts, [hf_config], stdin_config=True)
        kind, pairs = parse_spec(source) if source is not None else (None, {})
        spec = [(spec_label(source), pairs)] if source is not None and pairs else []
        src = open_source(hf_config, opts, kind=kind, extra=[*spec, *onnx], stdin_config=True)
        _onnx_kind(src, onnx_rope)
        return src, True
    if source is None:
        raise ParameterError(f"give a SOURCE to export (a file, -, a spec or a model config) or {param('hf_config')}")
    if is_spec(source) or is_config(source):
        refuse_options(opts, [source])
        if onnx_rope and is_spec(source):
            _onnx_kind(parse_spec(source)[0], True)
        src = open_source(source, opts, extra=onnx)
        _onnx_kind(src, onnx_rope)
        return src, True
    refuse_options(opts._replace(dtype=None), [source])  # --dtype casts a file's tensors
    src = open_source(source, opts, dtype=False)
    if not onnx_rope:
        return src, False
    enc = src.encoding  # a posenc rope file: regenerate its encoding with the ONNX cache layout
    if enc is None:
        raise ParameterError(
            f"{param('onnx_rope')} needs a spec or a posenc-written file (its metadata rebuilds the table)"
        )
    _onnx_kind(enc.KIND, True)
    rebuilt = dataclasses.replace(enc, cache="onnx", **({"dtype": opts.dtype} if opts.dtype else {}))
    return Source.from_encoding(rebuilt, src.label), True  # rebuilt: in --dtype already


def _onnx_kind(of: Any, asked: bool) -> None:
    """The ONNX cache layout applies to the kinds whose ``cache`` parameter offers it (``of``: a kind or a
    source)."""
    from .encodings import get_kind, kind_classes

    if not asked:
        return
    kind = of if isinstance(of, str) or of is None else (of.encoding.KIND if of.encoding is not None else None)

    def onnx(cls: Any) -> bool:
        return any(f.name == "cache" and "onnx" in (f.metadata.get("choices") or ()) for f in cls.param_fields())

    if kind is None or not onnx(get_kind(kind)):
        kinds = [k for k, cls in kind_classes().items() if onnx(cls)]
        raise ParameterError(
            f"{param('onnx_rope')} cannot apply to {kind}: it writes the ONNX caches of {', '.join(kinds)}"
        )


def identify_source(
    source: str,
    *,
    length: int | None = None,
    n_ctx: int | None = None,
    tensor: list[str] | None = None,
    max_bytes: int | None = None,
    extra_rows: str | None = None,
) -> tuple[str, Identification, list[str]]:
    """What ``posenc identify`` reads: a file, ``-`` or a GGUF file (llama.cpp's tables at ``length`` rows and
    context ``n_ctx``), identified (:func:`identify`). Returns the source's label, the identification and the
    warnings of reading it. A spec or a model config, whose tables are known, is refused."""
    from .scopes import refuse_out_of_scope
    from .sources import is_config, is_spec
    from .sources import open_source as open_text

    if is_spec(source) or is_config(source):
        what = "a spec" if is_spec(source) else "a model config"
        raise ParameterError(f"{source!r} is {what}, whose tables are known; identify reads files and stdin")
    kinds = source_kinds(source)
    refuse_out_of_scope({"length": length, "n_ctx": n_ctx}, [kinds & {"gguf", "file", "stdin", "onnx"}])
    if "gguf" in kinds:
        src = open_text(source, length=length, n_ctx=n_ctx, max_bytes=max_bytes)
    else:
        src = open_text(source, max_bytes=max_bytes)  # a mistyped kind gets "unknown encoding ... did you mean"
    return src.label, identify(src, tensor=tensor or None, extra_rows=extra_rows), list(src.warnings)


def describe(
    source: str | None = None,
    *,
    hf_config: str | None = None,
    layer_type: str | None = None,
    read_as: str | None = None,
    engines: bool = False,
    max_model_len: int | None = None,
    n_ctx: int | None = None,
) -> Description:
    """What ``posenc kinds`` shows: every kind (no source), one kind (SOURCE names it), what a model config sets
    and from which key (every attention type whose RoPE differs; ``layer_type`` narrows), per engine where its
    tables depart from HF's (``engines``), or what llama.cpp reads from a GGUF file and its choices at
    ``n_ctx``."""
    from .reports import Description
    from .scopes import refuse_out_of_scope
    from .sources import is_config, is_gguf, split_engine

    options = {"layer_type": layer_type, "read_as": read_as, "engines": engines, "max_model_len": max_model_len,
               "n_ctx": n_ctx}  # fmt: skip
    if source is not None and is_gguf(source):
        refuse_out_of_scope({**options, "hf_config": hf_config}, [{"gguf-keys"}])
        from .models.llamacpp import describe as gguf_rows

        return Description("gguf", source, gguf_rows(source, n_ctx=n_ctx))
    if source is not None and (source == "-" or is_config(source)):
        if hf_config is not None:
            raise ParameterError(f"the model config is given twice: {source} and {param('hf_config')} {hf_config}")
        source, hf_config = None, source
    if hf_config is not None and hf_config != "-":
        hf_config, engine = split_engine(hf_config)
        if engine is not None:
            raise ParameterError(
                f"kinds says what {hf_config} sets; for where engine {engine} departs from it, use "
                f"posenc kinds {hf_config} --engines"
            )
    if hf_config is None:
        refuse_out_of_scope(options, [{"registry"}])
    elif engines:
        from .models.engines import ENGINES

        reads = {f"reads:{o}" for e in ENGINES.values() for o in e.options}
        refuse_out_of_scope(options, [{"config", "engines-table", *reads}])
        from .models.engines import departures

        rows = departures(hf_config, layer_type=layer_type, max_model_len=max_model_len, n_ctx=n_ctx)
        return Description("engines", hf_config, rows)
    else:
        refuse_out_of_scope(options, [{"config"}])
        from .models.readers import describe_model_config, model_config_layers

        config = load_config(hf_config)
        from .models.vision import claims as vision_claims

        if vision_claims(config) and source is None and read_as is None and layer_type is None:
            from .models.vision import describe as describe_vision

            return Description("config", hf_config, [describe_vision(hf_config, config)])
        if layer_type is not None:
            types: list[str | None] = [layer_type]
        else:  # every attention type that applies an encoding, or the one table when all types share it
            layers = model_config_layers(config, kind=source, read_as=read_as)
            rotating = [lt for lt, v in layers.items() if v is not None]
            distinct = {repr(v) for v in layers.values() if v is not None}
            types = list(rotating) if len(distinct) > 1 else [None]
        found = [describe_model_config(config, kind=source, layer_type=lt, read_as=read_as) for lt in types]
        return Description("config", hf_config, found, several=layer_type is None and len(found) > 1)
    if source is None:
        return Description("kinds", None, kinds())
    from .encodings import get_kind

    cls = get_kind(source)  # an unknown name is refused before kindinfo loads the model records (~0.3 CPU-s)
    from .kindinfo import kind_info

    return Description("kind", source, kind_info(cls))


def plot_tables(
    sources: Sequence[str], *, options: SourceOptions | None = None, view: str | None = None
) -> tuple[str, list[Any], list[str]]:
    """What ``posenc plot`` draws: the view (``view``, else compare for two tables, else the first view the kind
    declares that can draw them), one :class:`posenc_cli.plot.PlotSource` per table (each group of a grouped
    file, each attention type of a model with several: ``options.layer_type`` narrows it) and the warnings of
    reading the sources."""
    from . import plot
    from .encodings import KINDS, get_kind

    opts = options or SourceOptions()
    texts = list(sources)
    if not texts:
        raise ParameterError("give a SOURCE to draw: a file, -, a spec such as sinusoidal, or a model config")
    refuse_options(opts, texts)
    opened: list[Source] = []
    for text in texts:
        types = layer_types(text, opts)
        for lt in types:
            src = open_source(text, opts, layer_type=lt)
            if lt is not None and len(types) > 1:
                src.label = f"{src.label} [{lt}]"
            opened.append(src)
    drawn = []
    for src in opened:
        for part in list(src.groups.values()) or [src]:
            roles = dict(get_kind(part.kind).ROLES) if part.kind in KINDS else {}
            drawn.append(
                plot.PlotSource(part.label, {n: part.array(n) for n in part.names}, roles, dict(part.metadata))
            )
    warnings = list(dict.fromkeys(w for s in opened for w in s.warnings))
    if view is not None:
        return view, drawn, warnings
    if len(opened) == 2 and len(drawn) == 2 and len(texts) == 2:
        return "compare", drawn, warnings
    known = [s.kind for s in opened if s.kind in KINDS]
    declared = get_kind(known[0]).VIEWS if known else ()
    # the first declared view that applies, tried in order: a view's test can measure the table (circle and
    # spectrum look for its oscillators), which the view chosen before it does not need
    for name in declared:
        if name in plot.VIEWS and plot.VIEWS[name].applies(drawn):
            return name, drawn, warnings
    fits = plot.applicable(drawn)
    if fits:
        return fits[0], drawn, warnings
    raise ParameterError(f"no view can draw {', '.join(s.label for s in drawn)}")


def stored_tables(model_dir: str | os.PathLike[str], *, layer_type: str | None = None) -> list[Any]:
    """Every fixed table a model keeps in its weights against the formula posenc generates for it (Whisper's
    encoder, the Whisper-style audio encoders, ViTMAE's sin-cos tables; CTRL and the Qwen-Omni audio encoders
    compute theirs and never save them): one :class:`posenc_cli.models.stored_tables.StoredCopy` per copy
    (``verdict`` equal, differ, unstored or unchecked; ``why`` names the difference), empty for a model type that
    keeps none. A weights file without the tensor, or holding it in another shape than the config says, is a
    one-line :class:`ParameterError`."""
    from .models.readers import stored_copies

    path = os.fspath(model_dir)
    return stored_copies(path, load_config(path), layer_type=layer_type)


def relative_bias(
    model_dir: str | os.PathLike[str], *, length: int, layer_type: str | None = None, max_bytes: int | None = None
) -> Source:
    """The per-head relative bias a T5-family model (t5, mt5, umt5, switch_transformers, pop2piano) adds to its
    attention scores for a ``length x length`` window: its ``relative_attention_bias`` gathered through the
    buckets (``T5Attention.compute_bias``), tensor ``bias`` (heads x N x N; ``bias_block<i>`` per block for UMT5)
    in the dtype stored. What ``posenc export DIR -p table=bias`` writes."""
    opts = SourceOptions(length=length, layer_type=layer_type, params=("table=bias",), max_bytes=max_bytes)
    return open_source(os.fspath(model_dir), opts)


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
    "check_gguf",
    "check_onnx",
    "check_sources",
    "compare",
    "compare_sources",
    "Verdicts",
    "SourceOptions",
    "layer_types",
    "open_source",
    "built_source",
    "describe",
    "identify_source",
    "Description",
    "export_source",
    "plot_tables",
    "refuse_options",
    "source_kinds",
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
