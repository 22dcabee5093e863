"""The package's import graph, read from its compiled code (every import statement that can run, inside functions
and TYPE_CHECKING blocks too): encodings/ imports no inspection code, and neither the kinds and the inspection
modules nor the check modules form an import circle. The root package's PEP 562 ``__getattr__`` (the lazy public
API) is not an edge: ``from .. import __version__`` does not run it.

The scan reads the ``IMPORT_NAME`` instructions of each module's code objects (nested functions, classes and
comprehensions included), from the bytecode cache import itself keeps fresh (``SourceFileLoader.get_code``: 0.03
CPU-s for the package where ``ast.parse`` took 1.7 and kept 2 MB of trees alive for every later garbage
collection of the test process). An import the compiler drops (``if False:``, after a ``return``) can never run
and is no edge."""

from __future__ import annotations

import dis
import functools
import importlib.machinery
from collections.abc import Iterator
from pathlib import Path
from types import CodeType
from typing import NamedTuple

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


class Import(NamedTuple):
    """One import statement as the compiler wrote it: ``import module`` (``names`` is None) or ``from module
    import names`` (``level`` dots before ``module``, which is "" for ``from . import x``)."""

    module: str
    names: tuple[str, ...] | None
    level: int
    type_checking: bool  # inside an ``if TYPE_CHECKING:`` (or ``if typing.TYPE_CHECKING:``) body


_OP = dis.opmap
#: Instructions that carry no step of their own around a test's jump (inline caches, the bool conversion and branch
#: hints of newer Pythons).
_FILLER = {"EXTENDED_ARG", "CACHE", "TO_BOOL", "NOT_TAKEN", "NOP"}


def code_of(path: Path, text: str | None = None) -> CodeType:
    """The module's code: from its bytecode cache, compiled (and cached) when stale; or ``text`` compiled as if it
    were the file at ``path``."""
    if text is not None:
        return compile(text, str(path), "exec", dont_inherit=True)
    return importlib.machinery.SourceFileLoader(path.stem, str(path)).get_code(path.stem)


def _codes(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


def _type_checking_spans(code: CodeType, ins: list[dis.Instruction]) -> list[tuple[int, int]]:
    """The byte ranges of ``if TYPE_CHECKING:`` bodies in one code object (from the test's jump to its target)."""
    spans = []
    for i, x in enumerate(ins):
        if x.argval != "TYPE_CHECKING" or x.opname not in ("LOAD_NAME", "LOAD_GLOBAL", "LOAD_ATTR"):
            continue
        if x.opname != "LOAD_ATTR" and i + 1 < len(ins) and ins[i + 1].opname == "LOAD_ATTR":
            continue  # TYPE_CHECKING.something: not the test
        jump = next((j for j in ins[i + 1 :] if j.opname not in _FILLER), None)
        if jump is None or jump.opname in ("IMPORT_FROM", "STORE_NAME", "STORE_GLOBAL", "STORE_FAST", "POP_TOP"):
            continue  # imported or stored, not tested
        if "IF_FALSE" not in jump.opname or not isinstance(jump.argval, int) or jump.argval <= jump.offset:
            raise AssertionError(
                f"{code.co_filename} ({code.co_name}): TYPE_CHECKING is used as the import scan does not read "
                f"({jump and jump.opname}); write `if TYPE_CHECKING:` or teach the scan"
            )
        spans.append((jump.offset, jump.argval))
    return spans


def _operand(ops: bytes, args: bytes, i: int) -> tuple[int, int]:
    """The argument of the instruction whose last unit is ``i`` (with its EXTENDED_ARG prefixes), and the index of
    the unit before it. (An opcode byte of EXTENDED_ARG always prefixes the instruction after it.)"""
    arg, shift, i = args[i], 8, i - 1
    while i >= 0 and ops[i] == _OP["EXTENDED_ARG"]:
        arg |= args[i] << shift
        shift, i = shift + 8, i - 1
    return arg, i


def imports_in(code: CodeType) -> list[Import]:
    """Every import statement in ``code`` and in the code objects nested in it: each ``IMPORT_NAME`` and the two
    constants the compiler loads just before it (the level, then the names after ``from ... import``)."""
    out = []
    for c in _codes(code):
        ops, args = c.co_code[::2], c.co_code[1::2]  # (wordcode: an opcode byte, then its argument byte)
        k = ops.find(_OP["IMPORT_NAME"])
        spans = None
        while k >= 0:
            name, j = _operand(ops, args, k)
            fromlist, j = _operand(ops, args, j) if ops[j] == _OP["LOAD_CONST"] else (None, j)
            if fromlist is None or ops[j] not in (_OP["LOAD_CONST"], _OP.get("LOAD_SMALL_INT", -1)):
                raise AssertionError(f"{c.co_filename} ({c.co_name}): an import the scan does not read")
            level_arg = _operand(ops, args, j)[0]
            level = c.co_consts[level_arg] if ops[j] == _OP["LOAD_CONST"] else level_arg
            names = c.co_consts[fromlist]
            if spans is None:
                spans = _type_checking_spans(c, list(dis.get_instructions(c))) if "TYPE_CHECKING" in c.co_names else []
            inside = any(a <= 2 * k < b for a, b in spans)
            out.append(Import(c.co_names[name], None if names is None else tuple(names), level, inside))
            k = ops.find(_OP["IMPORT_NAME"], k + 1)
    return out


def resolve(name: str, is_pkg: bool, imp: Import) -> str:
    """The absolute name of the module ``imp`` names, in module ``name``."""
    if not imp.level:
        return imp.module
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    base = base[: len(base) - (imp.level - 1)]
    return ".".join(base + ([imp.module] if imp.module else []))


@functools.cache
def _graph() -> dict[str, set[str]]:
    mods = modules()
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        deps: set[str] = set()
        for imp in imports_in(code_of(path)):
            prefix = resolve(name, is_pkg, imp)
            if imp.names is None:
                deps.add(prefix)
            for a in imp.names or ():
                full = f"{prefix}.{a}"
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


def test_the_scan_reads_every_import_statement() -> None:
    """The compiled-code scan sees what a syntax walk sees: lazy imports in functions, methods and handlers, the
    TYPE_CHECKING body and its else branch apart, dotted and aliased names, relative levels, and operands past
    255 (EXTENDED_ARG prefixes)."""
    filler = "".join(f"c{i} = {i}.5\n" for i in range(300))  # 300 constants: later operands need a prefix
    names = "".join(f"n{i} = 0\n" for i in range(300))
    src = (
        f"from __future__ import annotations\n{filler}{names}import os.path as p, json\n"
        "if TYPE_CHECKING:\n    from ..models import hf_config\nelse:\n    from ...errors import ref\n"
        "import typing\nif typing.TYPE_CHECKING:\n    import x.y\n"
        "class K:\n    from . import inner\n    def m(self):\n        try:\n            pass\n"
        "        except ImportError:\n            from .a.b import c as d, e\n"
        "def f():\n    def g():\n        import z\n    return [1 for _ in ()]\nfrom .star import *\n"
    )
    found = imports_in(compile(src, "pkg/sub/mod.py", "exec"))
    assert found == [
        Import("__future__", ("annotations",), 0, False),
        Import("os.path", None, 0, False),
        Import("json", None, 0, False),
        Import("models", ("hf_config",), 2, True),
        Import("errors", ("ref",), 3, False),
        Import("typing", None, 0, False),
        Import("x.y", None, 0, True),
        Import("star", ("*",), 1, False),
        Import("", ("inner",), 1, False),  # (then the nested code objects: class, method, functions)
        Import("a.b", ("c", "e"), 1, False),
        Import("z", None, 0, False),
    ]
    assert resolve("pkg.sub.mod", False, found[4]) == "errors" and resolve("pkg.sub", True, found[3]) == "pkg.models"
