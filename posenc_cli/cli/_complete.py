"""Shell completion of option values and sources: kinds, presets, the ``-p`` parameter names of the kind typed so
far, check names, layer types, and fixed choices (dtypes, formats, views).

Completion runs on every TAB, so it never imports NumPy: the names of each kind's parameters and presets and of
the checks come from :mod:`posenc_cli.encodings._names`, a literal table generated from the registries
(``python -m posenc_cli.cli._complete`` rewrites it; ``tests/test_completions.py`` fails when it is stale).
"""

import os
from collections.abc import Callable
from typing import Any

#: Where a kind may be named on a command line so far: the positional sources and the kind options.
_KIND_PARAMS = ("kind", "expect", "spec", "source", "sources", "against")


def _kinds() -> list[str]:
    from ..encodings import KINDS

    return list(KINDS)


def choices(values: tuple[str, ...]) -> Callable[[str], list[str]]:
    def complete(incomplete: str) -> list[str]:
        return [v for v in values if v.startswith(incomplete)]

    return complete


def kinds(incomplete: str) -> list[str]:
    return [k for k in _kinds() if k.startswith(incomplete)]


def specs(incomplete: str) -> list[str]:
    """A source: a kind, then after ``KIND:`` its parameter names and ``preset=NAME`` (files: the shell's own)."""
    head, colon, rest = incomplete.partition(":")
    if not colon:
        return kinds(incomplete)
    if head not in _kinds():
        return []
    done, _, last = rest.rpartition(",")
    prefix = f"{head}:{done + ',' if done else ''}"
    return [prefix + c for c in _pairs(head, last)]


def params(ctx: Any, args: list[str], incomplete: str) -> list[str]:
    """``-p``: the parameter names (``name=``) and presets (``preset=NAME``) of the kind typed so far (default:
    every kind's)."""
    done, _, last = incomplete.rpartition(",")
    prefix = done + "," if done else ""
    kind = _kind_so_far(ctx, args)
    names = [kind] if kind else _kinds()
    seen: dict[str, None] = {}
    for k in names:
        for c in _pairs(k, last):
            seen.setdefault(prefix + c, None)
    return list(seen)


def checks(incomplete: str) -> list[str]:
    """``--require``: check names, comma-separated."""
    from ..encodings._names import CHECKS

    done, _, last = incomplete.rpartition(",")
    prefix = done + "," if done else ""
    return [prefix + c for c in CHECKS if c.startswith(last)]


def layer_types(ctx: Any, args: list[str], incomplete: str) -> list[str]:
    """``--layer-type``: the attention types the model config typed so far declares (``layer_types``)."""
    import json

    found: dict[str, None] = {}
    for path in _configs_so_far(ctx, args):
        try:
            with open(path, encoding="utf-8") as fh:
                config = json.load(fh)
        except (OSError, ValueError):
            continue
        for part in (config, config.get("text_config") or {}):
            if isinstance(part, dict) and isinstance(part.get("layer_types"), list):
                found.update((str(t), None) for t in part["layer_types"])
    if not found:
        found = dict.fromkeys(("full_attention", "sliding_attention", "chunked_attention"))
    return [t for t in found if t.startswith(incomplete)]


def _pairs(kind: str, last: str) -> list[str]:
    from ..encodings._names import PARAMS, PRESETS

    key, eq, value = last.partition("=")
    if eq:
        if key == "preset":
            return [f"preset={p}" for p in PRESETS.get(kind, ()) if p.startswith(value)]
        return []
    names = ["preset"] if PRESETS.get(kind) else []
    names += list(PARAMS.get(kind, ()))
    return [f"{n}=" for n in names if n.startswith(key)]


def _values(ctx: Any, args: list[str]) -> list[str]:
    """What the command line typed so far holds where a kind or a config may stand: the values Click parsed, and
    the raw words (Click stops parsing at an option still waiting for its value)."""
    out: list[str] = []
    for name in _KIND_PARAMS:
        value = (getattr(ctx, "params", None) or {}).get(name)
        out.extend([value] if isinstance(value, str) else list(value or ()))
    return out + [w for w in [*args, *_typed_words()] if not w.startswith("-")]


def _typed_words() -> list[str]:
    """The words of the command line being completed, as the shell's script passed them (Click leaves the values
    it parsed unset when the command line ends in an option still waiting for its value, as in ``-p <TAB>``)."""
    import shlex

    line = os.environ.get("COMP_WORDS") or os.environ.get("_TYPER_COMPLETE_ARGS") or ""
    try:
        return shlex.split(line)[1:]
    except ValueError:  # an open quote
        return line.split()[1:]


def _kind_so_far(ctx: Any, args: list[str]) -> str | None:
    names = _kinds()
    for value in _values(ctx, args):
        head = value.split(":", 1)[0].strip().lower()
        for k in names:
            if head == k.lower():
                return k
    return None


def _configs_so_far(ctx: Any, args: list[str]) -> list[str]:
    paths = [*_values(ctx, args), (getattr(ctx, "params", None) or {}).get("hf_config") or ""]
    out = []
    for p in paths:
        if p and os.path.isdir(p):
            p = os.path.join(p, "config.json")
        if p.endswith(".json") and os.path.isfile(p):
            out.append(p)
    return out


# ----- the generated table ------------------------------------------------------------------------------
def names_module() -> str:
    """The text of :mod:`posenc_cli.encodings._names`, from the registries (imports every kind, so NumPy: never on a TAB)."""
    from ..checks import CHECKS
    from ..encodings import kind_classes

    kinds_ = kind_classes()
    lines = [
        '"""Names that shell completion offers, generated from the registries by `python -m posenc_cli.cli._complete`',
        '(do not edit; tests/test_completions.py fails when this is stale)."""',
        "",
        "PARAMS = {",
        *(f"    {k!r}: {tuple(f.name for f in c.param_fields())!r}," for k, c in kinds_.items()),
        "}",
        "PRESETS = {",
        *(f"    {k!r}: {tuple(c.PRESETS)!r}," for k, c in kinds_.items()),
        "}",
        f"CHECKS = {tuple(CHECKS)!r}",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    target = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "encodings", "_names.py")
    with open(target, "w", encoding="utf-8") as fh:
        fh.write(names_module())
    print(f"wrote {target}")
