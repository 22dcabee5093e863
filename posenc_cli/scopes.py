"""Which sources each option applies to, and the one refusal of an option given where it cannot apply.

Every option that sets how a source is read or built declares here the kinds of source it means something for
(:data:`SCOPES`): ``--n-ctx`` a GGUF file and the engines whose rules read it, ``--max-model-len`` the engines
that read it, ``--layer-type`` model configs, GGUF files and ONNX models checked against a config, ``--dim`` specs
and configs, ... . :func:`refuse_out_of_scope` is the one place that refuses an option given where none of the
sources is of a kind it applies to, naming the option, what the sources are and where it applies, one line
(exit 2). No command keeps its own list of refused options.

A source's kinds (:func:`source_kinds`): ``spec``, ``config`` (a model's config.json or directory, also
``CONFIG@ENGINE``), ``engine`` (a config read by an inference engine's rules) with ``reads:OPTION`` for each
option that engine's rules read, ``gguf``, ``onnx``, ``file``, ``stdin``; and the verdicts that judge a model
file against a config as a whole: ``gguf-verdict`` and ``onnx-verdict``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .errors import ParameterError, param


class SourceOptions(NamedTuple):
    """The options that say how sources are read or built (``--len``, ``--dim``, ``-p``, ``--dtype``, ``--grid``,
    ``--layer-type``, ``--read-as``, ``--engine``, ``--max-model-len``, ``--n-ctx``, ``--max-bytes``). Each applies
    to the kinds of source :data:`posenc_cli.scopes.SCOPES` says, and is refused by name elsewhere (a named tuple:
    a dataclass would compile its methods on every start-up)."""

    length: int | None = None
    dim: int | None = None
    params: Sequence[str] = ()
    dtype: str | None = None
    grid: str | None = None
    image_size: str | None = None
    layer_type: str | None = None
    max_bytes: int | None = None
    read_as: str | None = None
    engine: str | None = None
    max_model_len: int | None = None
    n_ctx: int | None = None
    tower: str | None = None

    @classmethod
    def of(cls, args: Mapping[str, Any]) -> SourceOptions:
        """The source options among a command's arguments, each by its own name (``-p`` is ``param``): a command's
        ``run`` passes ``locals()``, so that no command lists them again (or forgets one)."""
        given = {f: args.get(f) for f in cls._fields if f != "params"}
        sizes = given.get("image_size")
        if isinstance(sizes, (list, tuple)):  # --image-size is repeatable for audit; one table takes one
            if len(sizes) > 1:
                raise ParameterError(
                    f"{param('image_size')} is given {len(sizes)} times; this command reads one table at one size: "
                    "give it once (audit checks several)"
                )
            given["image_size"] = sizes[0] if sizes else None
        return cls(params=list(args.get("param") or []), **given)

    def engine_options(self) -> dict[str, Any]:
        return {"max_model_len": self.max_model_len, "n_ctx": self.n_ctx}

    def layers(self, *, dtype: bool = True) -> list[Any]:
        """Each option as a labelled layer (:func:`posenc_cli.sources.merge_given` refuses a value given twice,
        naming both flags)."""
        from .sources import param_layers

        out: list[Any] = []
        for flag, key, value in (
            ("--len", "length", self.length),
            ("--dim", "dim", self.dim),
            ("--grid", "grid", self.grid),
            ("--image-size", "image_size", self.image_size),
            ("--dtype", "dtype", self.dtype if dtype else None),
        ):
            if value is not None:
                out.append((f"{flag} {value}", {key: value}))
        if self.tower is not None:  # which tower of a multimodal config (a reading option, in the same layers)
            out.append((f"--tower {self.tower}", {"tower": self.tower}))
        return out + param_layers(self.params)

    def scoped(self, **more: Any) -> dict[str, Any]:
        """Every option by its parameter name, with ``more`` (a command's own scoped options), for
        :func:`posenc_cli.scopes.refuse_out_of_scope`."""
        out = {k: v for k, v in self._asdict().items() if k != "max_bytes"}
        return {**out, **more}


#: where the options that choose or judge tensors apply
_ONE_TABLE = "tables one at a time, not a model file judged against a config or written whole"
TABLES = frozenset({"spec", "config", "engine", "gguf", "onnx", "file", "stdin"})
VERDICTS = frozenset({"gguf-verdict", "onnx-verdict", "mlx-verdict"})

#: option (the library's parameter name) -> (the source kinds it applies to, where it applies, said in words)
SCOPES: dict[str, tuple[frozenset[str], str]] = {
    "length": (
        frozenset({"spec", "config", "engine", "gguf", "gguf-verdict", "config-layers"}),
        "specs, model configs and GGUF files",
    ),
    "dim": (frozenset({"spec", "config"}), "specs and model configs"),
    "params": (frozenset({"spec", "config", "engine", "config-layers"}), "specs and model configs"),
    "dtype": (frozenset({"spec", "config", "engine", "config-layers"}), "specs and model configs"),
    "grid": (frozenset({"spec", "config", "config-layers"}), "specs and model configs"),
    "image_size": (frozenset({"config"}), "vision model directories"),
    "kind": (frozenset({"spec", "config", "config-layers"}), "specs and model configs (the kind that reads one)"),
    "all_layer_types": (frozenset({"config-layers"}), "model configs read as HF reads them"),
    "layer_type": (
        frozenset({"config", "engine", "gguf", "gguf-verdict", "onnx-verdict"}),
        "model configs, GGUF files and ONNX models checked against a config",
    ),
    "read_as": (frozenset({"config", "config-layers"}), "model configs read as HF reads them"),
    "engine": (frozenset({"config", "engine", "onnx-verdict"}), "model configs (or write CONFIG@ENGINE)"),
    "max_model_len": (frozenset({"reads:max_model_len"}), "a model config read by engine {readers}"),
    "n_ctx": (
        frozenset({"gguf", "gguf-verdict", "gguf-keys", "reads:n_ctx"}),
        "GGUF files and a model config read by engine {readers}",
    ),
    "hf_config": (frozenset({"config", "registry"}), "model configs"),
    "tower": (frozenset({"config"}), "multimodal model configs"),
    "engines": (frozenset({"engines-table", "config"}), "model configs"),
    "tensor": (TABLES, _ONE_TABLE),
    "expect": (TABLES, _ONE_TABLE),
    "require": (TABLES, _ONE_TABLE),
    "identify": (TABLES, _ONE_TABLE),
    "extra_rows": (TABLES, _ONE_TABLE),
    "atol": (TABLES, _ONE_TABLE),
    "rtol": (TABLES, _ONE_TABLE),
    "explain": (TABLES, _ONE_TABLE),
}

_WHAT = {
    "spec": "a spec",
    "config": "a model config",
    "engine": "a model config read by an engine",
    "gguf": "a GGUF file",
    "onnx": "an ONNX model",
    "file": "a file",
    "stdin": "stdin",
    "gguf-verdict": "a GGUF file judged against a model config as a whole",
    "config-layers": "a model config, every attention type of it",
    "gguf-keys": "a GGUF file, whose keys kinds shows",
    "registry": "the registry of kinds (no model config)",
    "engines-table": "a model config with --engines",
    "onnx-verdict": "an ONNX model judged against a model config as a whole",
    "mlx-verdict": "an MLX directory's query/key weights judged against HF's",
}


def source_kinds(text: str, engine: str | None = None, *, stdin_config: bool = False) -> set[str]:
    """The kinds of the source ``text`` (see the module docstring); ``engine`` (``--engine``) reads a config;
    ``stdin_config``: ``-`` is a model config on stdin (``generate -``), not a table."""
    from .sources import is_config, is_gguf, is_spec, split_engine

    if text == "-" and not stdin_config:
        return {"stdin"}
    if is_spec(text):
        return {"spec"}
    if is_gguf(text):
        return {"gguf"}
    if text == "-" or is_config(text):
        name = split_engine(text)[1] or engine
        if name is None:
            return {"config"}
        from .models.engines import ENGINES, resolve_engine
        from .models.vision import ENGINES as VISION_ENGINES

        if name in VISION_ENGINES and name not in ENGINES:  # timm: it resamples vision tables only
            return {"config", "engine", f"engine:{name}"}
        engine_rules = resolve_engine(name)
        return {"config", "engine", f"engine:{engine_rules.name}", *(f"reads:{o}" for o in engine_rules.options)}
    if text.lower().endswith(".onnx"):
        return {"onnx"}
    return {"file"}


def describe(kinds: Sequence[set[str]]) -> str:
    """What the sources are, in words: ``the source is a file``, ``the sources are a spec and a file``."""
    names: list[str] = []
    for k in kinds:
        first: list[str] = [
            v
            for v in (
                "gguf-verdict",
                "onnx-verdict",
                "config-layers",
                "gguf-keys",
                "registry",
                "engines-table",
                "engine",
            )
            if v in k
        ]
        main = (first or sorted(k & set(_WHAT)) or ["file"])[0]
        named = sorted(e.split(":", 1)[1] for e in k if e.startswith("engine:"))
        names.append(f"a model config read by engine {named[0]}" if main == "engine" and named else _WHAT[main])
    names = list(dict.fromkeys(names))
    if len(names) == 1:
        return f"the source is {names[0]}" if len(list(kinds)) <= 1 else f"every source is {names[0]}"
    return "the sources are " + ", ".join(names[:-1]) + f" and {names[-1]}"


def given(value: Any) -> bool:
    """Whether an option was given: None, False and an empty list are not; 0 is a value (``--head 0``)."""
    return not (value is None or value is False or (isinstance(value, (list, tuple)) and not value))


def refuse_out_of_scope(options: Mapping[str, Any], kinds: list[set[str]]) -> None:
    """Refuse, by name and in one line, every option of ``options`` (parameter name -> value) that was given and
    applies to none of the sources (``kinds``: each source's :func:`source_kinds`)."""
    present = set().union(*kinds) if kinds else set()
    for name, value in options.items():
        if name not in SCOPES or not given(value):
            continue
        scope, where = SCOPES[name]
        if scope & present:
            continue
        if "{readers}" in where:
            from .models.engines import ENGINES

            opt = next(s.split(":", 1)[1] for s in scope if s.startswith("reads:"))
            where = where.format(readers=" or ".join(n for n, e in ENGINES.items() if opt in e.options))
        raise ParameterError(f"{param(name)} cannot apply: {describe(kinds)}; it applies to {where}; drop it")
