"""What ``posenc kinds`` says about a kind: tensors, parameters with defaults and meaning, presets, references."""

from __future__ import annotations

from typing import Any

from .encodings.base import Encoding, display_name, format_value
from .errors import PosencError
from .models.readers import config_kinds


def tensor_names(cls: type[Encoding]) -> list[str]:
    try:
        enc = cls.from_params(cls.EXAMPLE)
    except PosencError:
        return [cls.PRIMARY]
    return list(enc.tensor_specs())


def kind_info(cls: type[Encoding]) -> dict[str, Any]:
    params = []
    for p in cls.param_infos():
        params.append(
            {
                "name": display_name(p.name),
                "type": p.type,
                "default": None if p.default is None else format_value(p.default),
                "help": p.help,
                "choices": list(p.choices) if p.choices else None,
            }
        )
    return {
        "kind": cls.KIND,
        "summary": cls.SUMMARY,
        "tensors": tensor_names(cls),
        "primary": cls.PRIMARY,
        "parameters": params,
        "presets": {
            name: {"sets": {k: format_value(v) for k, v in sets.items()}, "doc": cls.PRESET_DOCS.get(name, "")}
            for name, sets in cls.PRESETS.items()
        },
        "references": list(cls.REFERENCES),
        "roles": dict(cls.ROLES),
        "properties": {name: ("required" if required else "reported") for name, required in cls.PROPERTIES.items()},
        "views": list(cls.VIEWS),
        "reads_model_config": cls.KIND in config_kinds(),
    }
