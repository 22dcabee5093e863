"""The inspection house's rules, read with ast: one package whose imports run one way, no function over 80 lines,
and no threshold typed as a number outside :mod:`posenc_cli.inspect.tolerance` (every float literal other than
0, 1, 1/2 and 2 is a named constant there)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests.test_import_graph import cycles, graph

from .conftest import parse

INSPECT = Path(__file__).resolve().parent.parent / "posenc_cli" / "inspect"
MAX_LINES = 80
#: Plain arithmetic, not thresholds.
NEUTRAL = {0.0, 1.0, 0.5, 2.0, -1.0}


def long_functions(source: str | ast.Module) -> list[tuple[str, int]]:
    out = []
    for node in ast.walk(parse(source) if isinstance(source, str) else source):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1  # type: ignore[operator]
            if n > MAX_LINES:
                out.append((node.name, n))
    return out


def float_literals(source: str | ast.Module) -> list[float]:
    return [
        n.value
        for n in ast.walk(parse(source) if isinstance(source, str) else source)
        if isinstance(n, ast.Constant) and isinstance(n.value, float) and n.value not in NEUTRAL
    ]


@functools.cache
def _scan() -> dict[str, tuple[list[tuple[str, int]], list[float]]]:
    """Each inspect module's long functions and float literals, from one parse shared by the two tests below (the
    trees are not kept)."""
    out = {}
    for p in sorted(INSPECT.rglob("*.py")):
        tree = parse(p.read_text())
        out[p.relative_to(INSPECT).as_posix()] = (long_functions(tree), float_literals(tree))
    return out


def test_no_function_over_80_lines() -> None:
    found = {rel: sorted(n for n, _ in long) for rel, (long, _) in _scan().items()}
    assert {k: v for k, v in found.items() if v} == {}


def test_no_threshold_literal_outside_tolerance() -> None:
    found = {rel: len(floats) for rel, (_, floats) in _scan().items() if rel != "tolerance.py"}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_walkers_see_what_they_forbid() -> None:
    """Both tests above can fail: a long function and a literal threshold are found."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    assert long_functions(f"def f():\n{body}\n") == [("f", MAX_LINES + 1)]
    assert float_literals("if err < 1e-3 and x > 0.5:\n    y = 2.0 * x + 0.999\n") == [1e-3, 0.999]


def test_inspection_imports_run_one_way() -> None:
    """No circle inside the package (identification and hints used to import each other), and nothing in it
    imports the CLI, the API or the renderers."""
    edges = graph()
    inside = {m for m in edges if m.startswith("posenc_cli.inspect")}
    for comp in cycles(edges):
        assert not (set(comp) & inside), comp
    upward = {"posenc_cli.api", "posenc_cli.render", "posenc_cli.plot", "posenc_cli.cli", "posenc_cli.sources"}
    bad = {m: sorted(d for d in edges[m] if any(d == u or d.startswith(u + ".") for u in upward)) for m in inside}
    assert {m: d for m, d in bad.items() if d} == {}
