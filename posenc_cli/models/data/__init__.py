"""Data generated from transformers' own code: ``transformers_inventory.json``, one record per model type, and
transformers' architecture (class name) -> model type mapping.

Made by ``tools/inventory/make_inventory.py`` (its README documents every field). :func:`inventory` is the one
loader of the file (:mod:`..records` reads it through here): read lazily on first use, once per process.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

INVENTORY = Path(__file__).resolve().with_name("transformers_inventory.json")


@cache
def inventory() -> dict[str, Any]:
    """The whole inventory: ``transformers_version``, ``torch_version``, ``generator`` and ``model_types``
    (``{}`` when the data file is absent)."""
    if not INVENTORY.is_file():
        return {}
    with open(INVENTORY, encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def model_type_record(model_type: str) -> dict[str, Any] | None:
    """The inventory's entry of one transformers model type, or None when transformers (at the inventory's
    version) has no such type."""
    types = inventory().get("model_types", {})
    entry = types.get(model_type) if isinstance(types, dict) else None
    return entry if isinstance(entry, dict) else None


def architecture_model_type(architecture: str) -> str | list[str] | None:
    """The model type transformers' auto mappings give the class ``architecture`` (``GPTNeoXForCausalLM`` ->
    ``gpt_neox``): a list when several types name the class and none is the one it declares; None when no
    mapping names it (made by ``make_inventory.py --architectures``)."""
    archs = inventory().get("architectures", {})
    found = archs.get(architecture) if isinstance(archs, dict) else None
    return found if isinstance(found, (str, list)) else None
