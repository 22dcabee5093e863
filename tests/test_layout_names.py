"""Layout names come from the kinds' declarations: every layout (and axis order, and rope's cache) a kind declares is
identified under the name the kind declares, the hint readers spell none of those names themselves (read with ast),
and a kind that declares another number of layouts than its reader knows stops the reader by name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from posenc_cli.encodings import KINDS, get_kind, make_encoding
from posenc_cli.inspect.hints import declared, layouts
from posenc_cli.inspect.identification import identify

from .conftest import parse
from .each import each

HINTS = Path(__file__).resolve().parent.parent / "posenc_cli" / "inspect" / "hints"
#: Parameters whose choices the readers read off the kind (besides ``layout``).
READ_OFF = ("layout", "axis_order", "cache")
#: What a kind needs besides its layout to build a small table.
BASE = {"sinusoidal-3d": {"grid": "2x3x4", "length": 24, "dim": 48}, "rope-2d": {"grid": "8x8"}}


def choices_of(kind: str) -> dict[str, tuple[str, ...]]:
    cls = get_kind(kind)
    return {f.name: tuple(f.metadata["choices"]) for f in cls.param_fields() if f.metadata.get("choices")}


def cases() -> list[tuple[str, str, str]]:
    out = []
    for kind in KINDS:
        cls = get_kind(kind)
        ch = choices_of(kind)
        if not getattr(cls, "IDENTIFY", None) or "layout" not in ch:
            continue
        out += [(kind, name, value) for name in READ_OFF if name in ch for value in ch[name]]
    return out


def test_every_declared_layout_is_identified_under_its_declared_name():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(cases(), lambda case: _every_declared_layout_is_identified_under_its_declared_name(*case))


def _every_declared_layout_is_identified_under_its_declared_name(kind, name, value):
    enc = make_encoding(kind, {"length": 64, "dim": 32, **BASE.get(kind, {}), name: value})
    best = identify({n: enc.array(n) for n in enc.tensor_specs()}).best
    assert best is not None and best.kind == kind
    assert best.params.get(name, enc.params()[name]) == value == enc.params()[name]


def test_the_readers_spell_no_declared_name():
    names = {v for kind in KINDS for n, vs in choices_of(kind).items() if n in READ_OFF for v in vs}
    assert {"half", "interleaved", "split", "split-cos-first", "sin-block", "reversed", "grid", "onnx"} <= names
    # axis_order=grid is spelled like the parameter grid (=HxW), which readers do set by name
    names -= {f.name for kind in KINDS for f in get_kind(kind).param_fields()}
    found = {}
    for path in sorted(HINTS.glob("*.py")):
        lits = {
            node.value
            for node in ast.walk(parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
        if lits & names:
            found[path.name] = sorted(lits & names)
    assert found == {}


def test_a_kind_declaring_other_layouts_stops_its_reader_by_name():
    rope = get_kind("rope")
    assert layouts(rope, 2) == ("half", "interleaved") and declared(rope, "cache", 2) == ("full", "onnx")
    with pytest.raises(TypeError, match=r"rope declares layout \('half', 'interleaved'\); .* knows 3"):
        layouts(rope, 3)
    with pytest.raises(TypeError, match="declares no choices for its parameter 'base'"):
        declared(rope, "base", 1)
