"""How a model type places positions, per component, in the model's own terms (the inventory's ``mechanisms``).

The inventory (``tools/inventory/mechanisms.py``) records every mechanism each component of a transformers model
type uses, observed by running the type's own code: ``learned`` and ``fixed`` tables, ``sinusoidal`` positions
computed in the forward, ``convolutional`` positional embeddings, ``relative_bias`` tables and ``relative``
schemes, ``rotary``, ``alibi``, ``queries`` (a learned set of query vectors: DETR's object queries, Pegasus-X's
global tokens; no positions of the input) or ``none``. This module says them in one line, for the messages of a type posenc
does not read (``posenc kinds``, ``generate --hf-config``): it never says "no positions" of a component that has
some, and it names a mechanism posenc does not generate.
"""

from __future__ import annotations

import re
from typing import Any

#: mechanism -> how the model places positions, from ``{module}`` / ``{tensor}`` of its record
PHRASES = {
    "learned": "a learned table ({tensor}) added to the token states",
    "fixed": "a fixed table ({tensor}, {holder}) added to the token states",
    "sinusoidal": "sinusoids computed in its forward ({module}) and added to the token states",
    "convolutional": "positions come from a convolution over the sequence ({module}): there is no table to write",
    "relative_bias": "a relative bias table ({tensor}) gathered by distance into the attention scores",
    "relative": "relative positions combined with the queries in attention ({module})",
    "rotary": "rotary embeddings ({module})",
    "alibi": "ALiBi biases of its attention ({module})",
    "queries": "learned queries ({tensor}): a set of vectors its decoder or attention starts from, not positions "
    "of the input, so there is no position table to write",
    "other": "positions enter the token states through {module}, in a way posenc does not name",
    "none": "no positions",
}

#: mechanisms posenc generates a table of today, as a kind (others are named, never generated)
GENERATED = {"rotary": "rope", "alibi": "alibi", "relative_bias": "t5", "sinusoidal": "sinusoidal",
             "learned": "learned"}  # fmt: skip


def _short(path: str) -> str:
    """``encoder.layers.0.self_attn.distance_embedding Embedding`` -> ``encoder.layers.*.self_attn.
    distance_embedding``: the place in the model, layers folded."""
    name = path.split(" ", 1)[0] or path.split(" ", 1)[-1]
    return re.sub(r"\.\d+(?=\.|$)", ".*", name)


def phrase(m: dict[str, Any]) -> str:
    tensor = ", ".join(_short(t) for t in str(m.get("tensor") or "").split(", ") if t) or _short(m["module"])
    holder = "sinusoids" if m.get("sinusoid") else "not trained"
    module = _short(str(m.get("conv", "")).split(" groups")[0] or m["module"]) if m["mechanism"] == "convolutional" \
        else _short(m["module"])  # fmt: skip
    text = PHRASES.get(m["mechanism"], m["mechanism"]).format(tensor=tensor, module=module, holder=holder)
    if m["mechanism"] == "queries" and m.get("coordinates"):
        text = (f"sinusoids of reference points computed from its learned queries ({module}): positions of the "
                "boxes it predicts, not of the input")  # fmt: skip
    elif m["mechanism"] == "rotary" and m.get("coordinates"):
        text += f", by {m['coordinates']}"
    elif m["mechanism"] == "rotary" and m.get("tensor"):
        text += f" rotating by a {'fixed sinusoid' if m.get('sinusoid') else 'stored'} table ({tensor})"
    elif m["mechanism"] == "fixed" and m.get("trainable"):
        text += " (a trainable parameter its own initialisation fills with sinusoids)"
    if str(m.get("evidence", "")).startswith("name"):
        text += " (judged by its name only)"
    return text


def component_name(component: str, what: str) -> str:
    """``audio_config`` -> ``audio``; the top config: its input (``text``, ``vision``, ``audio``)."""
    if component == "model":
        return what or "model"
    return component.removesuffix("_config").replace("_", " ")


def summary(entry: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """``[(component, [phrase, ...]), ...]`` of an inventory entry, one phrase per distinct mechanism/place."""
    out: dict[str, list[str]] = {}
    for m in entry.get("mechanisms") or []:
        name = component_name(str(m["component"]), str(m.get("input") or ""))
        text = phrase(m)
        if text not in out.setdefault(name, []):
            out[name].append(text)
    for texts in out.values():
        if len(texts) > 1 and "no positions" in texts:
            texts.remove("no positions")
    return list(out.items())


def has_positions(entry: dict[str, Any]) -> bool:
    """Whether the inventory saw any mechanism placing positions in any component (learned queries place none)."""
    return any(m.get("mechanism") not in ("none", "queries") for m in entry.get("mechanisms") or [])


def describe(model_type: str, entry: dict[str, Any], version: str) -> str | None:
    """One line saying how ``model_type`` places positions, per component, and that posenc does not read them;
    None when the inventory has no mechanisms for it."""
    parts = summary(entry)
    if not parts:
        return None
    if not has_positions(entry):
        queries = [phrase(m) for m in entry.get("mechanisms") or [] if m.get("mechanism") == "queries"]
        return (
            f"{model_type} applies no positional encoding in any layer of any component (transformers {version}'s own code, "
            "as the inventory observed it)" + (f"; {'; '.join(dict.fromkeys(queries))}" if queries else "")
            + ": there is no table to build"
        )  # fmt: skip
    said = "; ".join(f"{name}: {', '.join(texts)}" for name, texts in parts)
    return f"{model_type} places positions as follows, which no record of posenc reads yet: {said}"
