"""Which layers llama.cpp treats as sliding-window layers for a GGUF file, against the HF config's layer types.

A sliding layer rotates with the sliding base (``rope.freq_base_swa`` or the architecture's default) and a full one
with ``rope.freq_base``, so a layer llama.cpp places in the other kind rotates with the wrong base. llama.cpp decides
per layer (``llama_model_base::load_swa_pattern``, src/llama-model.cpp): the GGUF's
``{arch}.attention.sliding_window_pattern`` as an array of booleans, else as a number N, else the architecture's
default N (:func:`posenc_cli.models.llamacpp.swa_pattern`), through ``llama_hparams::set_swa_pattern``. A
converter that writes no pattern key (convert_hf_to_gguf.py writes none for Gemma 3) leaves the default, which
holds only for models whose layer types follow it.
"""

from __future__ import annotations

from typing import Any


def llamacpp_sliding(arch: str, n_layer: int, fields: dict[str, Any]) -> tuple[list[bool] | None, str]:
    """llama.cpp's per-layer sliding flags for ``arch`` from a GGUF's keys (``fields``: key -> value), and where
    they come from; None when the architecture has no sliding layers in llama.cpp or cannot load."""
    from .llamacpp import swa_pattern

    entry = swa_pattern(arch)
    if entry is None:
        return None, f"llama.cpp's loader for {arch} has no sliding-window layers"
    parts = entry.split(":")
    window = fields.get(f"{arch}.attention.sliding_window")
    if parts[-1] == "if" and not (isinstance(window, (int, float)) and window > 0):
        return [False] * n_layer, f"no {arch}.attention.sliding_window key: every layer full"
    key = f"{arch}.attention.sliding_window_pattern"
    value = fields.get(key)
    if isinstance(value, list):
        flags = [bool(x) for x in value][:n_layer]
        return flags + [False] * (n_layer - len(flags)), f"key {key}"
    if parts[0] == "array":
        return None, f"no {key} array, which llama.cpp's loader for {arch} requires: it refuses the file"
    n = int(value) if isinstance(value, (int, float)) else int(parts[0])
    dense_first = parts[1] == "dense-first"
    origin = f"key {key} = {n}" if value is not None else f"no {key} key: llama.cpp's default for {arch}, {n}"
    if dense_first:
        flags = [n == 0 or il % n != 0 for il in range(n_layer)]
    else:
        flags = [n == 0 or il % n < n - 1 for il in range(n_layer)]
    return flags, origin


def compare_layers(gguf_path: str, raw: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(divergences, notes): the layers llama.cpp treats as sliding or full where the HF config's
    ``layer_types`` say otherwise."""
    from .gguf import import_gguf
    from .llamacpp import _ranges

    text: dict[str, Any] = raw["text_config"] if isinstance(raw.get("text_config"), dict) else raw
    hf_types = text.get("layer_types")
    gguf = import_gguf()
    reader = gguf.GGUFReader(gguf_path, "r")
    arch = str(reader.fields["general.architecture"].contents())
    fields = {k: f.contents() for k, f in reader.fields.items() if k.startswith(f"{arch}.attention.")}
    count = reader.fields.get(f"{arch}.block_count")
    n_layer = int(count.contents()) if count is not None else 0
    flags, origin = llamacpp_sliding(arch, n_layer, fields)
    if flags is None:
        if "refuses" in origin and isinstance(hf_types, list):
            return [f"sliding layers: {origin}"], []
        return [], []
    if not isinstance(hf_types, list) or not all(isinstance(t, str) for t in hf_types):
        return [], [f"sliding layers: the config lists no layer_types; llama.cpp's come from {origin}"]
    import numpy as np

    hf = [t != "full_attention" for t in hf_types[:n_layer]]
    if len(hf) != n_layer:
        return [f"sliding layers: the GGUF has {n_layer} layers, the config's layer_types {len(hf_types)}"], []
    as_sliding = np.flatnonzero([f and not h for f, h in zip(flags, hf, strict=True)])
    as_full = np.flatnonzero([h and not f for f, h in zip(flags, hf, strict=True)])
    div = []
    key = f"{arch}.attention.sliding_window_pattern"
    for idx, ours, theirs, base in ((as_sliding, "sliding", "full_attention", "the sliding layers' base"),
                                    (as_full, "full", "sliding", "the full layers' base")):  # fmt: skip
        if idx.size:
            div.append(
                f"sliding layers: llama.cpp treats layers {_ranges(idx)} as {ours} ({origin}) where HF's layer_types "
                f"say {theirs}: they rotate with {base} and attend {'locally' if ours == 'sliding' else 'globally'}; "
                f"write {key} as HF's layer types (an array, true for sliding)"
            )
    if not div:
        return [], [f"sliding layers: llama.cpp's ({origin}) are HF's layer_types"]
    return div, []
