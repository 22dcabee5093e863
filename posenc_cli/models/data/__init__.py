"""Data generated from transformers' own code: ``transformers_inventory.json``, one record per model type.

Made by ``tools/inventory/make_inventory.py`` (its README documents every field); read lazily, once.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

INVENTORY = Path(__file__).with_name("transformers_inventory.json")


@lru_cache(maxsize=1)
def inventory() -> dict[str, Any]:
    """The whole inventory: ``transformers_version``, ``torch_version``, ``generator`` and ``model_types``."""
    with open(INVENTORY, encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def model_type_record(model_type: str) -> dict[str, Any] | None:
    """The record of one transformers model type, or None when transformers (at the inventory's version) has
    no such type."""
    record: dict[str, Any] | None = inventory()["model_types"].get(model_type)
    return record
