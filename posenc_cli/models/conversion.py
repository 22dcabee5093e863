"""A GGUF conversion against its HF model: llama.cpp's RoPE tables (:func:`posenc_cli.models.llamacpp.verdict`),
the query/key weights (:mod:`posenc_cli.models.qk_weights`) and which layers slide
(:mod:`posenc_cli.models.swa_layers`), in one :class:`~posenc_cli.models.llamacpp.Verdict`."""

from __future__ import annotations

import os
from typing import Any


def verdict(gguf_path: str, config: Any, *, n_ctx: int | None = None, length: int | None = None,
            layer_type: str | None = None, weights: str = "raise") -> Any:  # fmt: skip
    """llama.cpp's tables for ``gguf_path`` against HF's for ``config`` (see
    :func:`posenc_cli.models.llamacpp.verdict`); the whole verdict (no ``layer_type``) also compares the Q/K
    weights with HF's where the config's directory holds them and llama.cpp's sliding layers with the config's
    layer types. ``weights``: ``"raise"`` lets a file that cannot be compared raise, ``"row"`` keeps it in
    ``Verdict.weights`` (status ``error``), ``"skip"`` compares no weights."""
    from .config_file import load_config
    from .llamacpp import verdict as tables_verdict
    from .swa_layers import compare_layers

    raw = load_config(config)
    # the weights first: a damaged Q/K tensor is named by them before the gguf reader refuses the whole file
    wc = None if weights == "skip" or layer_type is not None else _weights(gguf_path, config, raw, weights)
    ok = None if wc is None or wc.status not in ("agree", "differ") else wc.status == "agree"
    v = tables_verdict(gguf_path, raw if not isinstance(config, (str, os.PathLike)) else config, n_ctx=n_ctx,
                       length=length, layer_type=layer_type, weights_ok=ok)  # fmt: skip
    if layer_type is None:  # which layers are sliding: llama.cpp's pattern against the config's layer types
        d, n = compare_layers(gguf_path, raw)
        for whole in (v, *v.by_type.values()):  # each attention type's own verdict says it too
            whole.divergences += d
            whole.notes += n
    if wc is not None:
        v.weights = wc
        if wc.status == "agree":
            v.equivalences.append(wc.summary)
        elif wc.status == "differ":
            v.divergences += [f"weights: {f}" for f in wc.findings] or [wc.summary]
        else:
            v.notes.append(wc.summary)
        v.notes += [n for n in wc.notes if n not in v.notes]
    return v


def _weights(gguf_path: str, config: Any, raw: dict[str, Any], mode: str) -> Any:
    from ..errors import PosencError
    from .qk_weights import WeightsCheck, check_weights, hf_weights_dir

    hf_dir = hf_weights_dir(config)
    try:
        return check_weights(gguf_path, raw, hf_dir)
    except PosencError as exc:
        if mode == "raise":
            raise
        return WeightsCheck(gguf_path, hf_dir, "error", f"weights not checked: {exc}", "")
