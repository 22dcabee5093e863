"""Sources: one grammar for every command that takes a table.

A source is

* a file path (``.npy``, ``.npz``, ``.safetensors``),
* ``-`` for standard input (``.npy`` bytes; works on a non-seekable pipe), or
* a spec ``KIND[:key=value,...]`` generated on the fly, e.g. ``sinusoidal:preset=fairseq,padding_idx=1``,
* a model's config.json (:func:`is_config`) or a GGUF file (:func:`is_gguf`): the tables the model uses (for a
  GGUF, the ones llama.cpp computes, ``--n-ctx`` choosing its context).
  Values may contain commas (lists): a comma only separates pairs when ``key=`` follows it.

One rule for a value given twice (:func:`merge_given`): every place that sets parameters (the spec's pairs, a
keyword argument, and on the command line ``--len``, ``--dim``, ``--dtype``, ``--grid`` and each ``-p``) is a
*layer* with its own label, and a parameter that two layers set, or one layer twice (``len`` is another name for
``length``), is refused with a message naming both places. Nothing chooses a winner. Defaults are not layers:
a preset's values, a model config's values and the shape of the other table a spec is compared with give way
to anything the user gives.

A file written by posenc carries ``kind`` and every parameter in its metadata, so the encoding it came
from can be rebuilt (``Source.encoding``) and ``check`` can say whether the file matches its spec.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .encodings import KINDS, get_kind, make_encoding, resolve_kind
from .encodings.base import ALIASES
from .errors import DuplicateParameterError, InputError, ParameterError, UnknownTensorError, param

FILE_SUFFIXES = (".npy", ".npz", ".safetensors")
#: Metadata key of a grouped table: the names of its groups, comma-separated.
GROUPS_KEY = "posenc_groups"
_PAIR_SPLIT = re.compile(r",(?=\s*[A-Za-z_][A-Za-z0-9_]*\s*=)")
#: Metadata keys that are not parameters.
_NON_PARAM_KEYS = {"kind", "posenc_version"}


#: One place that sets parameters: its label (how the user wrote it, e.g. ``--len 8``, ``-p base=5``, ``the spec
#: 'rope:base=5'``; None: each value is named ``key=value``, as Python keyword arguments are) and its values.
Layer = tuple["str | None", "Mapping[str, Any]"]


def _where(label: str | None, key: str, value: Any) -> str:
    return label if label is not None else f"{key}={value!r}"


def merge_given(layers: Iterable[Layer]) -> dict[str, Any]:
    """The parameters of several layers, merged; a parameter set twice (in two layers, or in one under a name
    and its alias) is a :class:`DuplicateParameterError` naming both places. Aliases are folded (``len`` ->
    ``length``)."""
    seen: dict[str, tuple[str, Any]] = {}
    for label, values in layers:
        for key, value in values.items():
            name = ALIASES.get(key, key)
            here = _where(label, key, value)
            if name in seen:
                there = seen[name][0]
                both = f"twice in {here}" if there == here else f"twice: {there} and {here}"
                raise DuplicateParameterError(f"{name} is given {both}; give it once")
            seen[name] = (here, value)
    return {name: value for name, (_, value) in seen.items()}


def parse_pairs(text: str, what: str = "parameter", label: str | None = None) -> dict[str, str]:
    """``key=value,key=value`` -> dict (commas inside values are kept unless ``key=`` follows them; aliases are
    folded, and a key given twice, under any of its names, is refused naming ``label``, default ``text``)."""
    if not text.strip():
        return {}
    pairs: dict[str, str] = {}
    where = label if label is not None else repr(text)
    for pair in _PAIR_SPLIT.split(text):
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ParameterError(f"{what} {pair.strip()!r} is not key=value; write e.g. base=10000")
        name = ALIASES.get(key, key)
        if name in pairs:
            raise DuplicateParameterError(f"{name} is given twice in {where}; give it once")
        pairs[name] = value.strip()
    return pairs


def param_layers(options: Iterable[str] | None, flag: str = "-p") -> list[Layer]:
    """The ``-p key=value`` options of a command line, one layer each (each may hold several pairs)."""
    out: list[Layer] = []
    for opt in options or []:
        label = f"{flag} {opt}"
        out.append((label, parse_pairs(opt, label=label)))
    return out


def parse_param_options(options: list[str] | None) -> dict[str, str]:
    """The ``-p key=value`` options of a command, merged by :func:`merge_given` (a key given twice is refused)."""
    return merge_given(param_layers(options))


def is_spec(text: str) -> bool:
    """Whether ``text`` names a kind (any case) rather than a file or stdin; an existing path wins."""
    if text == "-" or os.path.exists(text) or text.lower().endswith(FILE_SUFFIXES):
        return False
    head = text.split(":", 1)[0].strip().lower()
    return any(head == k.lower() for k in KINDS)


def split_engine(text: str) -> tuple[str, str | None]:
    """``CONFIG@ENGINE`` -> (CONFIG, ENGINE): the tables that engine computes for the model
    (:mod:`posenc_cli.models.engines`); any other text -> (text, None). An existing path wins."""
    head, sep, tail = text.rpartition("@")
    if not sep or os.path.exists(text):
        return text, None
    from .models.engines import ENGINE_NAMES
    from .models.vision import ENGINES as VISION_ENGINES

    if tail.partition("==")[0] in ENGINE_NAMES:  # ENGINE or ENGINE==VERSION (the version is checked by the engine)
        return head, tail
    if tail in VISION_ENGINES and head and os.path.exists(head):  # DIR@timm: timm's resampling of a vision table
        return head, tail
    if head and os.path.exists(head):  # a model config with a mistyped engine: say so, not "no such file"
        import difflib

        close = difflib.get_close_matches(tail, ENGINE_NAMES, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ParameterError(f"unknown engine {tail!r} in {text}; {hint}choose from: {', '.join(ENGINE_NAMES)}")
    return text, None


def is_config(text: str) -> bool:
    """Whether ``text`` is a model's description: a directory holding ``config.json``, or a ``.json`` file that is
    not a posenc JSON table (whose first key is ``metadata`` or ``tensors``); ``CONFIG@ENGINE`` too."""
    text = split_engine(text)[0]
    if text == "-" or is_spec(text):
        return False
    if os.path.isdir(text):
        return os.path.isfile(os.path.join(text, "config.json"))
    if not (text.lower().endswith(".json") and os.path.isfile(text)):
        return False
    try:
        with open(text, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return False
    return re.match(rb'\s*\{\s*"(metadata|tensors)"', head) is None


def is_gguf(text: str) -> bool:
    """Whether ``text`` is a GGUF model file (a ``.gguf`` path, or a file starting with ``GGUF``)."""
    if not (text.lower().endswith(".gguf") or os.path.isfile(text)):
        return False  # a spec or a missing path: the reader's module is not loaded for it
    from .models.gguf import is_gguf as _is_gguf

    return _is_gguf(text)


def looks_like_a_kind(text: str) -> bool:
    """A missing path without a table suffix whose name is close to a kind's: a mistyped spec."""
    if text == "-" or os.path.exists(text) or "/" in text or "." in os.path.basename(text.split(":", 1)[0]):
        return False
    import difflib

    return bool(difflib.get_close_matches(text.split(":", 1)[0].strip().lower(), list(KINDS), n=1, cutoff=0.6))


def parse_spec(text: str) -> tuple[str, dict[str, str]]:
    kind, _, rest = text.partition(":")
    return resolve_kind(kind.strip()), parse_pairs(rest, label=spec_label(text))


def spec_label(text: str) -> str:
    """How a spec is named where it sets a parameter."""
    return f"the spec {text!r}"


@dataclass
class Source:
    """A table from a file, stdin or a spec: its tensors (arrays, maybe memory-mapped) and metadata."""

    label: str
    tensors: dict[str, Any]
    metadata: dict[str, str]
    encoding: Any = None  # the Encoding this table was (or claims to be) generated from
    encoding_note: str = ""  # why ``encoding`` is None although metadata names a kind
    lazy: dict[str, Any] = field(default_factory=dict)  # LazyTensor views for streaming writers
    #: A file of several tables (one per attention type of a model): group name -> its own Source, whose tensors
    #: are this source's ``GROUP.NAME`` tensors and whose metadata its ``GROUP.KEY`` entries.
    groups: dict[str, Source] = field(default_factory=dict)
    #: What reading the source had to say (a model config read with assumptions): for the caller to show.
    warnings: list[str] = field(default_factory=list)
    #: Facts the reading found that are no warning (a fixed table's stored copy equals its formula): shown as notes
    notes: list[str] = field(default_factory=list)
    #: An engine's table read for a comparison (``within_limits``): the limit it met computing the rows asked
    #: (:class:`posenc_cli.models.engines.EngineLimit`), its tensors the rows it computes (none: no tensor)
    engine_limit: Any = None
    #: An engine's table: the engine's rules that make it differ from HF's, each in one line with its values
    #: (:func:`posenc_cli.models.engines.rule_lines`)
    engine_rules: list[str] = field(default_factory=list)
    #: A model config whose attention changes HF's rotary tables before they meet q and k (DeepSeek-V3
    #: de-interleaves q and k; nanochat's rotate_half flips signs): its table is read as the scores see it, and
    #: this holds (the parameters of the rotary class's own cache, what the attention does in words); else None.
    class_table: tuple[dict[str, Any], str] | None = None

    @classmethod
    def from_encoding(cls, encoding: Any, label: str) -> Source:
        """A table generated on the fly: tensors are computed when first asked for."""
        return cls(label, {}, encoding.metadata(), encoding=encoding, lazy=encoding.lazy_tensors())

    @classmethod
    def from_groups(cls, encodings: dict[str, Any], label: str) -> Source:
        """Several encodings in one table: tensor ``NAME`` of group ``G`` is ``G.NAME``, and the metadata holds
        ``posenc_groups`` (the group names) and each group's metadata under ``G.``."""
        from . import __version__

        bad = [g for g in encodings if not g or "." in g or g == GROUPS_KEY]
        if bad:
            raise ParameterError(f"group name {bad[0]!r} cannot name tensors (no dots); rename it")
        groups = {g: cls.from_encoding(enc, f"{label} [{g}]") for g, enc in encodings.items()}
        metadata = {"posenc_version": __version__, GROUPS_KEY: ",".join(encodings)}
        lazy = {}
        for g, src in groups.items():
            metadata.update({f"{g}.{k}": v for k, v in src.metadata.items() if k != "posenc_version"})
            lazy.update({f"{g}.{name}": _Renamed(t, f"{g}.{name}") for name, t in src.lazy.items()})
        return cls(label, {}, metadata, lazy=lazy, groups=groups)

    @property
    def names(self) -> list[str]:
        """Every tensor of the source (read from the file, or that the encoding can compute), whichever of them
        have been computed already."""
        return list(self.lazy) or list(self.tensors)

    @property
    def kind(self) -> str | None:
        return self.metadata.get("kind")

    def tensor_name(self, requested: str | None) -> str:
        """The tensor a single-table command uses: ``--tensor``, else the only one, else the kind's primary."""
        names = self.names
        if requested is not None:
            if requested not in names:
                raise UnknownTensorError(
                    f"{self.label} has no tensor {requested!r}; choose {param('tensor')} from: {', '.join(names)}"
                )
            return requested
        if len(names) == 1:
            return names[0]
        primary = (
            self.encoding.PRIMARY
            if self.encoding is not None
            else (get_kind(self.kind).PRIMARY if self.kind in KINDS else None)
        )
        if primary in names:
            return primary
        if "pe" in names:
            return "pe"
        raise InputError(
            f"{self.label} holds several tensors; pick one with {param('tensor')} from: {', '.join(names)}"
        )

    def rows(self) -> int | None:
        """The row count of the table (:meth:`table_shape`); None for a table of one value."""
        shape = self.table_shape()
        return shape[0] if shape else None

    def table_shape(self, primary: str | None = None) -> tuple[int, ...]:
        """The shape of the table: tensor ``primary`` when the table holds it, else its primary tensor's; for a
        table that names no primary (a metadata-free file of cos and sin, with inv_freq, under any names), the
        shape every tensor of two or more dimensions shares."""

        def shape(n: str) -> tuple[int, ...]:
            return tuple(int(x) for x in getattr(self.lazy.get(n, self.tensors.get(n)), "shape", ()))

        if primary is not None and primary in self.names:
            return shape(primary)
        try:
            name = self.tensor_name(None)
        except InputError:
            tables = {shape(n) for n in self.names if len(shape(n)) >= 2}
            if len(tables) != 1:
                raise
            return tables.pop()
        return shape(name)

    def narrowed(self, names: Sequence[str]) -> Source:
        """This table with only the tensors ``names`` (each checked: an unknown name is refused naming the
        tensors there are), its metadata and encoding kept."""
        keep = [self.tensor_name(n) for n in names]
        return Source(
            self.label,
            {n: self.tensors[n] for n in keep if n in self.tensors},
            dict(self.metadata),
            encoding=self.encoding,
            encoding_note=self.encoding_note,
            lazy={n: self.lazy[n] for n in keep if n in self.lazy},
        )

    def array(self, name: str):
        """The whole tensor ``name`` as an array (computed for specs, memory-mapped for files); an unknown name
        is an :class:`~posenc_cli.errors.UnknownTensorError` naming the choices."""
        if name not in self.tensors and name not in self.lazy:
            self.tensor_name(name)  # raises, naming the tensors there are
        if name not in self.tensors:
            if self.encoding is not None:
                self.tensors[name] = self.encoding.array(name)
            else:  # a group's tensor of a generated grouped table
                import numpy as np

                t = self.lazy[name]
                out = np.empty(t.shape, dtype=t.dtype)
                t.fill(0, t.shape[0], out)
                self.tensors[name] = out
        return self.tensors[name]


def encoding_from_metadata(metadata: dict[str, str], exact: bool = False) -> tuple[Any, str]:
    """Rebuild the encoding that a posenc-written file says it holds; (None, reason) when impossible. ``exact``:
    the kind and parameters alone, without the arithmetic of the engine that wrote it (``--engine``): the exact
    table the engine's float32 arithmetic approximates, which the error model of ``check`` bounds it against."""
    kind = metadata.get("kind")
    if kind is None:
        return None, "no kind in metadata"
    if kind not in KINDS:
        return None, f"unknown kind {kind!r} in metadata"
    cls = get_kind(kind)
    names = {f.name for f in cls.param_fields()}
    params = {k: v for k, v in metadata.items() if k in names}
    if cls.INTEGER_TABLE and params.get("dtype") != "int64":
        # files written before integer tables declared their dtype recorded an ignored float dtype
        params.pop("dtype", None)
    try:
        enc = cls.from_params(params)
    except ParameterError as exc:
        return None, f"metadata does not describe a valid {kind}: {exc}"
    if "engine_arithmetic" in metadata and not exact:  # written by --engine: the engine's arithmetic, as recorded
        from .models.engines import engine_rope_from_metadata

        return engine_rope_from_metadata(enc, metadata)
    return enc, ""


def keyword_layers(length: int | None = None, dim: int | None = None, dtype: str | None = None) -> list[Layer]:
    """``length``, ``dim`` and ``dtype`` given as keyword arguments, as layers (None: not given)."""
    given = {"length": length, "dim": dim, "dtype": dtype}
    return [(None, {k: v}) for k, v in given.items() if v is not None]


def as_layers(params: Mapping[str, Any] | Sequence[Layer] | None) -> list[Layer]:
    """``params`` as layers: a mapping is one layer of keyword arguments; a list of layers stays as it is."""
    if params is None:
        return []
    if isinstance(params, Mapping):
        return [(None, dict(params))] if params else []
    return list(params)


def open_source(
    text: str,
    *,
    length: int | None = None,
    dim: int | None = None,
    params: Mapping[str, Any] | Sequence[Layer] | None = None,
    dtype: str | None = None,
    max_bytes: int | None = None,
    like: Source | None = None,
    defaults: Mapping[str, Any] | None = None,
    layer_type: str | None = None,
    kind: str | None = None,
    read_as: str | None = None,
    n_ctx: int | None = None,
    engine: str | None = None,
    engine_options: Mapping[str, Any] | None = None,
    within_limits: bool = False,
) -> Source:
    """Open a file, stdin or spec.

    A spec's parameters come from its own pairs, ``length``/``dim``/``dtype`` and ``params`` (a mapping, or
    labelled layers such as the command line's flags), merged by :func:`merge_given`: a parameter given twice
    is refused. ``defaults`` (e.g. what a model config says) and ``like`` (another source, whose shape gives
    the length and dim) fill in only what nobody gave.

    A model config (:func:`is_config`) is a source too: the tables the model uses (:func:`open_config`), with
    ``layer_type`` one attention type of a per-layer config, ``kind`` a kind that reads configs and ``read_as``
    the family whose rules read it although posenc does not know a key of it. A GGUF file (:func:`is_gguf`)
    is one too: the tables llama.cpp computes for it at context ``n_ctx`` (:func:`open_gguf`)."""
    from . import formats

    limit = formats.DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    layers = keyword_layers(length, dim, dtype) + as_layers(params)
    if is_gguf(text):
        return open_gguf(text, layers=layers, kind=kind, layer_type=layer_type, like=like, max_bytes=limit, n_ctx=n_ctx)
    if n_ctx is not None:
        raise ParameterError(f"{param('n_ctx')} {n_ctx} applies to a GGUF file, and {text} is not one; drop it")
    if layer_type is not None and not is_config(text):
        raise ParameterError(
            f"{param('layer_type')} {layer_type} applies to a model config, and {text} is not one; drop it or "
            "give the model's config.json"
        )
    if read_as is not None and not is_config(text):
        raise ParameterError(
            f"{param('read_as')} {read_as} applies to a model config, and {text} is not one; drop it or "
            "give the model's config.json"
        )
    if is_config(text):
        return open_config(
            text,
            layers=layers,
            kind=kind,
            layer_type=layer_type,
            like=like,
            max_bytes=limit,
            read_as=read_as,
            engine=engine,
            engine_options=engine_options,
            within_limits=within_limits,
        )
    if engine is not None:
        raise ParameterError(f"{param('engine')} {engine} applies to a model config, and {text} is not one")
    if kind is not None and not is_spec(text):
        raise ParameterError(f"{param('kind')} {kind} applies to a spec or a model config; {text} is a file")
    if is_spec(text):
        kind, pairs = parse_spec(text)
        merged = {**(defaults or {}), **merge_given([(spec_label(text), pairs), *layers])}
        if like is not None and ("length" not in merged or "dim" not in merged):
            # several tensors without metadata (cos, sin, inv_freq): the one named like the kind's primary
            shaped = get_kind(kind).shape_params(like.table_shape(get_kind(kind).PRIMARY))
            merged = {**{k: v for k, v in shaped.items() if k in ("length", "dim")}, **merged}
        enc = make_encoding(kind, merged)
        check_size(enc.nbytes(), limit, text)
        return Source.from_encoding(enc, text)
    if looks_like_a_kind(text):
        resolve_kind(text.split(":", 1)[0])  # raises: unknown encoding ...; did you mean ...
    if any(values for _, values in layers):
        raise ParameterError(
            f"parameters apply to specs, but {text} is a file; drop them or use a spec like KIND:key=value"
        )
    if text.lower().endswith(".onnx"):  # an ONNX model: the rotary caches stored in it
        from . import __version__
        from .models.onnx import read_onnx

        tensors, meta = read_onnx(text, max_bytes=limit).tables(GROUPS_KEY)
        meta = {"posenc_version": __version__, **meta}
        return Source(
            text,
            dict(tensors),
            meta,
            lazy={k: formats.ArrayTensor(k, v) for k, v in tensors.items()},
            groups=_read_groups(text, dict(tensors), meta),
        )
    table = formats.read_table(text, max_bytes=limit)
    if max_bytes is not None:  # asked for: memory-mapped files too
        check_size(sum(int(a.nbytes) for a in table.tensors.values()), max_bytes, text, built=False)
    enc, note = encoding_from_metadata(table.metadata)
    label = "stdin" if text == "-" else text
    return Source(
        label,
        dict(table.tensors),
        dict(table.metadata),
        encoding=enc,
        encoding_note=note,
        lazy={k: formats.ArrayTensor(k, v) for k, v in table.tensors.items()},
        groups=_read_groups(label, dict(table.tensors), dict(table.metadata)),
    )


def open_config(
    text: str,
    *,
    layers: Sequence[Layer] = (),
    kind: str | None = None,
    layer_type: str | None = None,
    like: Source | None = None,
    max_bytes: int | None = None,
    read_as: str | None = None,
    engine: str | None = None,
    engine_options: Mapping[str, Any] | None = None,
    within_limits: bool = False,
) -> Source:
    """The tables a model's config.json (a path, its directory, or ``-``) describes, as a source.

    ``engine`` (or ``CONFIG@ENGINE``): the tables that inference engine computes for the model, by its rules in
    :mod:`posenc_cli.models.engines` (``engine_options``: ``max_model_len``, ``n_ctx``); ``hf`` is transformers'.
    Rows the engine computes no table for are refused, or, ``within_limits`` (a comparison), left out and the
    limit kept in ``.engine_limit``.

    ``layers`` (the user's parameters) override what the config says, except the head dim, which the config
    sets (``dim=`` through ``params`` still overrides it, naming the change). ``like`` gives the length when
    nobody did: the rows of the table it is compared with. ``read_as`` reads the config with that family's rules
    although posenc does not know a key of it; the source's metadata then records the assumption."""
    from . import formats
    from .models.config_file import load_config
    from .models.readers import from_model_config

    given = merge_given(layers)
    for label, values in layers:
        if "dim" in values and label is not None and not label.startswith("-p"):
            raise ParameterError(
                f"{param('dim')} cannot apply to {text}: the model config sets the head dim; "
                f"use {param('params')} dim=N to override it"
            )
    length = given.pop("length", None)
    asked_length = length  # the user's --len (a comparison's other side fills in length below)
    if length is None and like is not None:
        length = like.rows()
    text, suffix = split_engine(text)
    if suffix is not None and engine is not None and suffix != engine:
        raise ParameterError(f"the engine is given twice: {text}@{suffix} and {param('engine')} {engine}")
    engine = engine or suffix
    if engine is None and engine_options and any(v is not None for v in engine_options.values()):
        flags = [param(k) for k, v in engine_options.items() if v is not None]
        raise ParameterError(f"{', '.join(flags)} set an engine's rules; give {param('engine')} or CONFIG@ENGINE")
    config = load_config(text)
    asked_tower = given.get("tower")  # --tower vision on a tower whose table is read (no rotary): that table
    vision = _vision_rotary_source(text, config, given, kind=kind, read_as=read_as, engine=engine,
                                   layer_type=layer_type, max_bytes=max_bytes)  # fmt: skip
    if vision is not None:
        return vision
    image_size = given.pop("image_size", None)
    if given.get("table") == "bias":
        from .models.vision_bias import refuse_query_relative

        refuse_query_relative(config)  # SAM's encoder: relative positions taken with the queries, no bias table
    from .models.vision import claims as vision_claims

    if vision_claims(config, image_size, grid=given.get("grid"), tower=asked_tower):  # a ViT-family table
        return _vision_source(text, config, given, image_size, engine, kind=kind, read_as=read_as,
                              layer_type=layer_type, length=asked_length)  # fmt: skip
    if image_size is not None:
        raise ParameterError(
            f"{param('image_size')} applies to a vision model's position table (ViT, DeiT, DINOv2, CLIP, SigLIP, a "
            f"timm ViT) or a vision tower's rotary ({param('tower')} vision); {text} is neither: drop it"
        )
    if engine is not None:
        from .models.engines import engine_encoding

        if kind is not None or read_as is not None:
            what = param("kind") if kind is not None else param("read_as")
            raise ParameterError(f"{what} cannot apply with an engine: engines' rules read the config as HF does")
        from .models.engines import resolve_engine

        # the options this engine reads (a comparison's other side may be an engine that reads the others)
        reads = {k: v for k, v in (engine_options or {}).items() if k in resolve_engine(engine).options}
        label = "stdin" if text == "-" else text
        hit = None
        if within_limits:
            from .models.engines import engine_encoding_within

            enc, facts, hit = engine_encoding_within(
                config, engine, length=length, layer_type=layer_type, overrides=given, **reads
            )
        else:
            enc, facts = engine_encoding(config, engine, length=length, layer_type=layer_type, overrides=given, **reads)
        if enc is None:  # the engine computes no row of those asked: a source of no tensor, the limit said
            src = Source(f"{label}@{engine}", {}, {})
        else:
            check_size(enc.nbytes(), formats.DEFAULT_MAX_BYTES if max_bytes is None else max_bytes, text)
            src = Source.from_encoding(enc, f"{label}@{engine}")
        src.warnings = list(facts.warnings)
        src.engine_limit = hit
        if enc is not None:
            from .models.engines import rule_lines

            src.engine_rules = rule_lines(facts, engine, seq_len=enc.offset + enc.length, **reads)
        return src
    from .models.readers import learned_table, rows_option, table_option

    # -p rows=buffer: the module's raw buffer instead of the rows the model adds to tokens 0..N-1
    rows = rows_option(config, given.pop("rows", None), text)
    # -p table=bias: a T5-style model's relative bias from its weights instead of its bucket table
    if table_option(config, given.pop("table", None)) == "bias":
        return _bias_source(text, config, given, length=length, layer_type=layer_type, max_bytes=max_bytes)
    learned = learned_table(text, config, length=length, layer_type=layer_type, read_as=read_as, **rows)
    if learned is not None:
        return _weights_source(text, *learned, given)
    name, cfg, warnings, notes = from_model_config(
        config, kind=kind, length=length, layer_type=layer_type, read_as=read_as, **rows, **_position_hints(given)
    )
    if length is not None:
        cfg["length"] = length
    enc = make_encoding(name, {**cfg, **given})
    check_size(enc.nbytes(), formats.DEFAULT_MAX_BYTES if max_bytes is None else max_bytes, text)
    src = Source.from_encoding(enc, "stdin" if text == "-" else text)
    src.metadata.update(notes)  # what the reading assumed (hf_read_as), written with the table
    src.warnings = list(warnings)
    _stored_notes(text, config, layer_type, src)
    from .models.readers import class_table

    src.class_table = class_table(config, enc.params())
    return src


def _vision_source(
    text: str,
    config: dict[str, Any],
    given: Mapping[str, Any],
    image_size: Any,
    engine: str | None,
    **refused: Any,
) -> Source:
    """A vision model's position table read from its weights at ``image_size`` (:mod:`.models.vision`); the
    options that choose another reading (``--kind``, ``--read-as``, ``--layer-type``, ``--len``) cannot apply."""
    from .models.vision import vision_table

    for name, value in refused.items():
        if value is not None:
            raise ParameterError(
                f"{param(name)} cannot apply to {text}: a vision model's table is its grid at an image size; use "
                f"{param('image_size')} (H or HxW)"
            )
    given = dict(given)
    layer = given.pop("layer", None)  # -p layer=N: a per-layer table (YOLOS's mid_position_embeddings)
    grid = given.pop("grid", None)  # --grid HxW: the patch grid of a tower that takes one (Qwen3-VL's)
    frames = given.pop("frames", None)  # -p frames=N: a video model's frame count (ViViT, TimeSformer)
    stage = given.pop("stage", None)  # -p stage=K: the table of stage K, of a model with one per stage (PVT)
    rows, meta = vision_table(text, config, image_size=image_size, engine=engine, layer=layer, grid=grid,
                              frames=frames, stage=stage)  # fmt: skip
    src = _weights_source(text if engine is None else f"{text}@{engine}", rows, meta, given)
    src.encoding_note = "a trained vision table read from the model's weights, at an image size"
    return src


def _vision_rotary_source(text: str, config: dict[str, Any], given: dict[str, Any], **reading: Any) -> Source | None:
    """A vision tower's 2-D rotary tables (:mod:`posenc_cli.models.vision_rope`), when ``--tower vision`` names one
    or the config is a tower, or a windowed relative bias's index or bias (:mod:`posenc_cli.models.vision_bias`,
    ``-p table=index|bias``); None otherwise (``tower`` is taken out of ``given`` either way)."""
    from . import formats
    from .models.vision_bias import record_of, tables
    from .models.vision_rope import from_config

    if record_of(config, given.get("tower")) is not None:  # a windowed relative bias (Swin, BEiT; a Swin backbone)
        table, image_size, tower = given.pop("table", None), given.pop("image_size", None), given.pop("tower", None)
        if given:
            raise ParameterError(
                f"{text}: parameters ({', '.join(given)}) cannot apply to a relative bias table; drop them"
            )
        arrays, meta = tables(text, config, table, image_size, tower)
        return Source(text, arrays, meta, encoding_note=f"the relative position {meta['table']} of a windowed attention",
                      lazy={k: formats.ArrayTensor(k, v) for k, v in arrays.items()})  # fmt: skip
    from .models.vision_bias import decomposed_located, decomposed_tables

    # SAM's encoder: per-axis relative positions, with -p table=index|bias (without: its absolute grid, .models.vision)
    if given.get("table") is not None and decomposed_located(config, given.get("tower")) is not None:
        table, tower = given.pop("table", None), given.pop("tower", None)
        if given:
            raise ParameterError(
                f"{text}: parameters ({', '.join(given)}) cannot apply to relative position tables; drop them"
            )
        arrays, meta = decomposed_tables(text, config, table, tower)
        return Source(text, arrays, meta, encoding_note="the relative positions of a vision encoder's attention",
                      lazy={k: formats.ArrayTensor(k, v) for k, v in arrays.items()})  # fmt: skip
    found = from_config(config, given)
    if found is None:
        return None
    for key in ("kind", "read_as", "engine", "layer_type"):
        if reading.get(key) is not None:
            raise ParameterError(f"{param(key)} applies to a language model's tables, not to a vision tower's; drop it")
    name, params, notes = found
    enc = make_encoding(name, {**params, **given})
    max_bytes = reading.get("max_bytes")
    check_size(enc.nbytes(), formats.DEFAULT_MAX_BYTES if max_bytes is None else max_bytes, text)
    src = Source.from_encoding(enc, "stdin" if text == "-" else text)
    src.metadata.update(notes)
    return src


def _weights_source(text: str, rows: Any, metadata: dict[str, str], given: Mapping[str, Any]) -> Source:
    """A learned position table read from a model's weights: data, not a spec (no parameter applies)."""
    from . import formats

    if given:
        raise ParameterError(
            f"{text} holds a trained position table read from its weights; parameters ({', '.join(given)}) cannot "
            "apply to it; drop them"
        )
    return Source(text, {"pe": rows}, metadata, encoding_note="a trained table read from the model's weights",
                  lazy={"pe": formats.ArrayTensor("pe", rows)})  # fmt: skip


def _bias_source(text: str, config: Any, given: Mapping[str, Any], **options: Any) -> Source:
    """A T5-style model's relative bias gathered from its weights (heads x N x N): data, not a spec."""
    from . import formats
    from .models.readers import relative_bias

    if given:
        raise ParameterError(
            f"table=bias reads {text}'s trained relative bias; parameters ({', '.join(given)}) cannot apply to it; "
            "drop them"
        )
    tensors, metadata = relative_bias(text, config, **options)
    return Source(text, tensors, metadata, encoding_note="a trained relative bias read from the model's weights",
                  lazy={k: formats.ArrayTensor(k, v) for k, v in tensors.items()})  # fmt: skip


def _stored_notes(text: str, config: Any, layer_type: str | None, src: Source) -> None:
    """What the model keeps of this fixed table in its weights, against the formula just built: a note per copy
    (a warning where it differs), and ``stored_copy`` in the metadata; nothing for a model type that keeps none
    or a config alone."""
    from .models.readers import stored_copies

    if not os.path.isdir(text):
        return
    copies = stored_copies(text, config, layer_type=layer_type)
    if copies:
        src.metadata["stored_copy"] = "; ".join(f"{c.tensor}: {c.verdict}" for c in copies)
    for c in copies:
        (src.warnings if c.verdict == "differ" else src.notes).append(f"stored copy: {c.why}")


def _position_hints(given: dict[str, Any]) -> dict[str, int]:
    """The user's ``offset`` and ``seq_len`` as ints, for readers whose parameters depend on the sequence length
    (a value that is no integer is left to the kind's own check, which names it)."""
    out = {}
    for key in ("offset", "seq_len"):
        text = str(given.get(key, "")).strip()
        if text.lstrip("+-").isdigit():
            out[key] = int(text)
    return out


def open_gguf(
    text: str,
    *,
    layers: Sequence[Layer] = (),
    kind: str | None = None,
    layer_type: str | None = None,
    like: Source | None = None,
    max_bytes: int | None = None,
    n_ctx: int | None = None,
) -> Source:
    """The tables llama.cpp computes for a GGUF file (``cos``, ``sin`` in llama.cpp's pairing, ``inv_freq``), as
    a source: ``length`` from the layers (``--len``), else ``like``'s rows, else the context ``n_ctx``."""
    from . import formats
    from .models.llamacpp import gguf_tables

    given = merge_given(layers)
    length = given.pop("length", None)
    if given or kind is not None:
        what = ", ".join(sorted(given)) or f"kind {kind}"
        raise ParameterError(
            f"{what} cannot apply to {text}: a GGUF file says its own RoPE; only {param('length')} and "
            f"{param('n_ctx')} choose what to compute"
        )
    if length is None and like is not None:
        length = like.rows()
    if length is not None:
        length = int(length)
    from .models.gguf import read_gguf
    from .models.llamacpp import from_gguf

    limit = formats.DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    rope, _ = from_gguf(read_gguf(text), layer_type)
    rows = length if length is not None else (n_ctx or rope.n_ctx_train)
    check_size(int(rows) * rope.n_rot * 8 + rope.n_rot * 4, limit, text)
    tensors, metadata, warnings = gguf_tables(text, n_ctx=n_ctx, length=length, layer_type=layer_type)
    src = Source(text, tensors, metadata, lazy={k: formats.ArrayTensor(k, v) for k, v in tensors.items()})
    src.encoding_note = "a GGUF file: llama.cpp's tables, emulated (no posenc kind)"
    src.warnings = list(warnings)
    return src


def _read_groups(label: str, tensors: dict[str, Any], metadata: dict[str, str]) -> dict[str, Source]:
    """The groups a file's ``posenc_groups`` metadata names, each with its tensors, metadata and encoding."""
    from . import formats

    names = [g for g in metadata.get(GROUPS_KEY, "").split(",") if g]
    out = {}
    for g in names:
        pre = f"{g}."
        sub_tensors = {k[len(pre) :]: v for k, v in tensors.items() if k.startswith(pre)}
        sub_meta = {k[len(pre) :]: v for k, v in metadata.items() if k.startswith(pre)}
        enc, note = encoding_from_metadata(sub_meta)
        out[g] = Source(
            f"{label} [{g}]",
            sub_tensors,
            sub_meta,
            encoding=enc,
            encoding_note=note,
            lazy={k: formats.ArrayTensor(k, v) for k, v in sub_tensors.items()},
        )
    return out


class _Renamed:
    """A LazyTensor under another name (a group's tensor inside a grouped table)."""

    def __init__(self, inner: Any, name: str) -> None:
        self.inner, self.name = inner, name

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.inner.shape)

    @property
    def dtype(self) -> Any:
        return self.inner.dtype

    def rows(self, start: int, stop: int) -> Any:
        return self.inner.rows(start, stop)

    def fill(self, start: int, stop: int, out: Any) -> None:
        self.inner.fill(start, stop, out)


class CastTensor:
    """A LazyTensor that casts another one's rows to ``dtype`` (export --dtype of a file)."""

    def __init__(self, inner: Any, dtype: str) -> None:
        from .encodings.base import resolve_dtype
        from .formats import is_float

        self.inner, self.name, self.shape = inner, inner.name, tuple(inner.shape)
        # bfloat16 is floating too, though NumPy calls its kind 'V': cast it like any float
        self.dtype = resolve_dtype(dtype) if is_float(inner.dtype) else inner.dtype

    def rows(self, start: int, stop: int):
        return self.inner.rows(start, stop).astype(self.dtype)

    def fill(self, start: int, stop: int, out) -> None:
        out[...] = self.inner.rows(start, stop).astype(out.dtype)


def check_size(nbytes: int, limit: int, label: str, *, built: bool = True) -> None:
    """Refuse a table of more than ``limit`` bytes (``built``: one posenc would compute, else one read)."""
    from .formats import human_bytes

    if nbytes > limit:
        fix = f"lower {param('length')}/{param('dim')} or pass" if built else "pass"
        verb = "would need" if built else "holds"
        raise ParameterError(
            f"{label} {verb} {human_bytes(nbytes)}, above the {human_bytes(limit)} limit; "
            f"{fix} {param('max_bytes')} {nbytes} to raise it"
        )
