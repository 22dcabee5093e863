"""The package's import graph, read with ast (every import statement, inside functions and TYPE_CHECKING blocks
too): encodings/ imports no inspection code, and neither the kinds and the inspection modules nor the check
modules form an import circle. The root package's PEP 562 ``__getattr__`` (the lazy public API) is not an edge:
``from .. import __version__`` does not run it."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from .conftest import parse

PKG = Path(__file__).resolve().parent.parent / "posenc_cli"
INSPECTION = {
    "posenc_cli.inspect.analysis",
    "posenc_cli.inspect.identification",
    "posenc_cli.inspect.diagnose",
    "posenc_cli.inspect.tolerance",
    "posenc_cli.inspect.metrics",
    "posenc_cli.plot",
    "posenc_cli.inspect.hints",
}


def modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def graph() -> dict[str, set[str]]:
    """The package's import edges (a fresh copy: a test may add to it)."""
    return {m: set(deps) for m, deps in _graph().items()}


def _statements(node: ast.AST):
    """Every statement under ``node``, at any depth (an import is a statement: expressions are not walked)."""
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, field, ()):
            yield child
            yield from _statements(child)


@functools.cache
def _graph() -> dict[str, set[str]]:
    mods = modules()
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        deps: set[str] = set()
        for node in _statements(parse(path.read_text())):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                for a in node.names:
                    full = f"{prefix}.{a.name}"
                    deps.add(full if full in mods else prefix)
        edges[name] = {d for d in deps if d in mods and d != name}
    edges["posenc_cli"] = set()  # the lazy public API (see the module docstring)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _inspection(m: str) -> bool:
    return any(m == i or m.startswith(i + ".") for i in INSPECTION)


def test_encodings_import_no_inspection_code() -> None:
    bad = {
        m: sorted(d for d in deps if _inspection(d))
        for m, deps in graph().items()
        if m.startswith("posenc_cli.encodings")
    }
    assert {m: d for m, d in bad.items() if d} == {}


def test_no_import_circle_between_kinds_and_inspection_nor_inside_checks() -> None:
    for comp in cycles(graph()):
        kinds = [m for m in comp if m.startswith("posenc_cli.encodings")]
        inspection = [m for m in comp if _inspection(m)]
        assert not (kinds and inspection), comp
        assert len([m for m in comp if m.startswith("posenc_cli.checks")]) == 0, comp


def test_the_walker_sees_a_circle() -> None:
    """The test above can fail: a circle made on purpose is found."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    edges = graph()
    edges["posenc_cli.encodings.base"].add("posenc_cli.inspect.identification")
    assert any("posenc_cli.encodings.base" in c and "posenc_cli.inspect.identification" in c for c in cycles(edges))
