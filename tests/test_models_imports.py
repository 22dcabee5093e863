"""Imports run one way (shared/STYLE.md): cli -> api -> models -> encodings -> formats, errors.

The scan reads every ``import`` of posenc_cli's modules from their compiled code (test_import_graph's scan), the
lazy ones inside functions included (they close a circle as surely as top-level ones, only later), ``if
TYPE_CHECKING:`` blocks excluded.
"""

from __future__ import annotations

import functools
from pathlib import Path

from .test_import_graph import code_of, imports_in, resolve

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "posenc_cli"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, modules: set[str], text: str | None = None) -> set[str]:
    """The posenc_cli modules ``path`` imports (anywhere in the file, TYPE_CHECKING blocks excluded); ``text``
    is read as if it were that file."""
    name = module_name(path)
    found: set[str] = set()
    for imp in imports_in(code_of(path, text)):
        if imp.type_checking:
            continue
        target = resolve(name, path.name == "__init__.py", imp)
        if target in modules:
            found.add(target)
        found.update(f"{target}.{a}" for a in imp.names or () if f"{target}.{a}" in modules)
    found.discard(name)
    return found


def graph() -> dict[str, set[str]]:
    """The package's import edges (a fresh copy: a test may add to it)."""
    return {m: set(deps) for m, deps in _graph().items()}


@functools.cache
def _graph() -> dict[str, set[str]]:
    paths = sorted(PKG.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def cycles(edges: dict[str, set[str]], nodes: set[str]) -> list[list[str]]:
    """The import circles among ``nodes`` (strongly connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, set()) & nodes):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


def _readers_and_rope(edges: dict[str, set[str]]) -> set[str]:
    return {m for m in edges if m.startswith(("posenc_cli.models", "posenc_cli.encodings.rope"))}


def test_no_import_circle_between_rope_and_the_model_readers():
    edges = graph()
    nodes = _readers_and_rope(edges)
    assert "posenc_cli.models.hf_config" in nodes and "posenc_cli.encodings.rope.core" in nodes
    assert not cycles(edges, nodes)
    # rope's core and its scaling rules no longer import each other (scaling declares the Rope it reads)
    assert "posenc_cli.encodings.rope.core" not in edges["posenc_cli.encodings.rope.scaling"]


def test_encodings_never_import_the_model_readers():
    edges = graph()
    wrong = {
        f"{m} -> {t}"
        for m, targets in edges.items()
        if m.startswith("posenc_cli.encodings")
        for t in targets
        if t.startswith(("posenc_cli.models", "posenc_cli.cli", "posenc_cli.api", "posenc_cli.sources"))
    }
    assert not wrong, sorted(wrong)


def test_the_models_import_encodings_and_not_the_cli():
    edges = graph()
    assert "posenc_cli.encodings" in edges["posenc_cli.models.hf_config"]
    wrong = {
        f"{m} -> {t}"
        for m, targets in edges.items()
        if m.startswith("posenc_cli.models")
        for t in targets
        if t.startswith(("posenc_cli.cli", "posenc_cli.api", "posenc_cli.sources"))
    }
    assert not wrong, sorted(wrong)


def test_the_circle_scan_can_fail():
    """A lazy import inside a function closes a circle (the one the move to models/ ended)."""
    edges = {k: set(v) for k, v in graph().items()}
    edges["posenc_cli.encodings.rope.core"].add("posenc_cli.models.hf_config")
    edges["posenc_cli.models.hf_config"].add("posenc_cli.encodings.rope.core")
    assert cycles(edges, _readers_and_rope(edges)) == [
        ["posenc_cli.encodings.rope.core", "posenc_cli.models.hf_config"]
    ]
    # and the scan sees a lazy import written in a function body, not one under TYPE_CHECKING
    # (the probes alone, read as core.py's text: its relative imports resolve from its place; the file's own
    # text, parsed again with each probe, added only a parse)
    src = PKG / "encodings" / "rope" / "core.py"
    modules = set(edges)
    lazy = "import math\n\n\nclass Rope:\n    def _probe(self):\n        from ...models.hf_config import claims\n"
    assert imports_of(src, modules, lazy) == {"posenc_cli.models.hf_config"}
    typing_only = "if TYPE_CHECKING:\n    from ...models import hf_config\nelse:\n    from ...errors import ref\n"
    assert imports_of(src, modules, typing_only) == {"posenc_cli.errors"}
