"""The literal registry of encoding kinds.

Each entry maps a kind's name to the module and class that implement it; modules load on first use so
that ``posenc --help`` and shell completion never import NumPy. Adding a kind = one module + one line: the
class declares everything else about itself (parameters, tensors and their roles, presets, properties,
model-config reading, plot views), and every command reads those declarations.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Encoding

#: kind name -> (module under posenc_cli.encodings, class name). Keep sorted by family.
KINDS: dict[str, tuple[str, str]] = {
    "sinusoidal": ("sinusoidal", "Sinusoidal"),
    "sinusoidal-2d": ("grid", "Sinusoidal2D"),
    "sinusoidal-3d": ("grid", "Sinusoidal3D"),
    "rope": ("rope.core", "Rope"),
    "xpos": ("rope.xpos", "XPos"),
    "mrope": ("rope.mrope", "MRope"),
    "learned": ("learned", "Learned"),
    "index": ("naive", "Index"),
    "normalized": ("naive", "Normalized"),
    "binary": ("naive", "Binary"),
    "alibi": ("relative", "Alibi"),
    "t5": ("relative", "T5"),
    "relative": ("relative", "ShawRelative"),
    "deberta": ("deberta", "Deberta"),
}

#: The kind ``posenc generate`` builds when none is named: the first entry.
DEFAULT_KIND = next(iter(KINDS))


def kind_names() -> list[str]:
    return list(KINDS)


def resolve_kind(name: str) -> str:
    """The registered name ``name`` means: itself, or a case-insensitive match; else a :class:`ParameterError`
    naming the closest kinds ("did you mean") and every valid one."""
    from ..errors import ParameterError

    if name in KINDS:
        return name
    folded = [k for k in KINDS if k.lower() == name.strip().lower()]
    if len(folded) == 1:
        return folded[0]
    import difflib

    close = difflib.get_close_matches(name.strip().lower(), list(KINDS), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    raise ParameterError(f"unknown encoding {name!r}; {hint}choose from: {', '.join(sorted(KINDS))}")


def get_kind(name: str) -> type[Encoding]:
    """The class of kind ``name`` (see :func:`resolve_kind` for the names it accepts)."""
    module, cls = KINDS[resolve_kind(name)]
    kind_cls: type[Encoding] = getattr(importlib.import_module(f"{__name__}.{module}"), cls)
    return kind_cls


def kind_classes() -> dict[str, type[Encoding]]:
    """Every registered kind's class, in registry order (imports every kind module)."""
    return {name: get_kind(name) for name in KINDS}


def make_encoding(kind: str, params: dict[str, Any]) -> Encoding:
    """Build a validated encoding of ``kind`` from ``name -> value`` parameters (strings are parsed)."""
    return get_kind(kind).from_params(params)


def model_config_kinds() -> list[str]:
    """The kinds that can be built from a model's config.json (they declare ``from_model_config``)."""
    return [name for name, cls in kind_classes().items() if cls.reads_model_config()]


def _config_reader(kind: str | None) -> type[Encoding]:
    """The kind that reads model configs: ``kind`` when given (refused unless it reads them), else the first."""
    from ..errors import ParameterError, ref

    readers = model_config_kinds()
    if kind is None:
        return get_kind(readers[0])
    kind = resolve_kind(kind)
    if kind not in readers:
        raise ParameterError(
            f"{ref('config')} builds the tables a model's config describes, which kind {kind!r} cannot read; "
            f"drop {ref('kind')} or use one of: {', '.join(readers)}"
        )
    return get_kind(kind)


def model_config_layers(
    config: dict[str, Any], *, kind: str | None = None, **options: Any
) -> dict[str, tuple[str, dict[str, Any]] | None]:
    """Every attention type of a model's config -> ``(kind, parameters)``, None where it applies no encoding."""
    if (positions := _positions(config, kind)) is not None:
        return dict(positions.all_params(options.get("length")))
    return _config_reader(kind).model_config_layers(config, **options)


def describe_model_config(config: dict[str, Any], *, kind: str | None = None, **options: Any) -> dict[str, Any]:
    """What a model's config says about its position encoding, each value with where it came from."""
    if (positions := _positions(config, kind)) is not None:
        return positions.report(options.get("layer_type"))
    return _config_reader(kind).describe_model_config(config, **options)


def from_model_config(
    config: dict[str, Any], *, kind: str | None = None, **options: Any
) -> tuple[str, dict[str, Any], list[str]]:
    """``(kind, parameters, warnings)`` that reproduce a model's tables from its config.json dict.

    ``kind`` (a user's explicit ``--kind``) must be one that reads model configs; by default the first kind that
    does decides (it may answer with another kind, e.g. a multimodal RoPE).
    """
    if (positions := _positions(config, kind)) is not None:
        lt = options.get("layer_type")
        return positions.kind_of(lt), positions.params(lt, options.get("length")), list(positions.warnings)
    return _config_reader(kind).from_model_config(config, **options)


def _positions(config: dict[str, Any], kind: str | None) -> Any:
    """The reader of a model whose positions are not rotary (T5, ALiBi, sinusoids, DeBERTa, learned: see
    :mod:`posenc_cli.models.hf_positions`), or None (the RoPE reader takes the config); ``kind`` must be one the
    model uses."""
    from ..errors import ParameterError, ref
    from ..models.hf_positions import read_positions

    positions = read_positions(config)
    if positions is not None and kind is not None:
        kinds = {layer.kind for layer in positions.family.layers.values()}
        if resolve_kind(kind) not in kinds:
            raise ParameterError(
                f"{positions.model_type}'s config describes {' and '.join(sorted(kinds))} positions, not "
                f"{resolve_kind(kind)}; drop {ref('kind')}"
            )
    return positions
