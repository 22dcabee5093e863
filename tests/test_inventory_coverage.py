"""Every model type of the inventory that rotates (transformers 5.24, posenc_cli/models/data) is read exactly -
held against the arrays its own rotary class made at its default config (tests/data/inventory, made by
tools/inventory/make_inventory.py), for every rope type the class supports - or refused in one line that names
what is missing. Never a third outcome: a table that differs from its class's is a failure here.

The comparison lives in tools/verify_records.py, which also writes the list of derived types posenc refuses
(posenc_cli/models/data/verified_records.json); the arrays are loaded once and shared by all the cases."""

from __future__ import annotations

import importlib.util

import pytest

from .conftest import ROOT
from .each import each

DATA = ROOT / "tests" / "data" / "inventory"


def _tool():
    spec = importlib.util.spec_from_file_location("verify_records", ROOT / "tools" / "verify_records.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()


@pytest.mark.skipif(not (DATA / "index.json").is_file(), reason="inventory arrays not present")
def test_every_rotating_type_is_exact_or_refused_and_the_refused_list_is_fresh():
    """Every rotating type is exact or refused in one line (:func:`tests.each.each`: each failure named); then the
    list of derived types posenc refuses is what the tool builds now. One test: the tool's checks with
    verification off reuse the outcomes found with it on (``check_type``), which a test in another process of
    ``-n`` could not (the two cost 2.3 + 3 CPU-s apart)."""
    each(TOOL.rotating(), TOOL.check_type)
    assert TOOL.OUT.read_text() == TOOL.build(), "run python tools/verify_records.py"
