"""Reading a HF transformers config.json into ``rope`` parameters."""

from __future__ import annotations

from typing import Any

from ...errors import ParameterError
from .scaling import HF_NAMES


def _number(src: dict[str, Any], key: str, where: str, kind: type = float) -> Any:
    value = src[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(f"config key {where}{key}={value!r} is not a number")
    if kind is int:
        if isinstance(value, float) and not value.is_integer():
            raise ParameterError(f"config key {where}{key}={value!r} is not an integer")
        return int(value)
    return float(value)


def params_from_hf_config(
    config: dict[str, Any], length: int | None = None, *, layer_type: str | None = None
) -> dict[str, Any]:
    """The ``rope`` parameters that reproduce the tables of a HF transformers model from its config.json dict.

    Reads ``rope_parameters`` (transformers >= 5) or ``rope_scaling`` (older), ``rope_type`` or ``type``,
    ``rope_theta``, ``head_dim`` (DeepSeek: ``qk_rope_head_dim``; else ``hidden_size // num_attention_heads``),
    ``partial_rotary_factor`` (GPT-NeoX ``rotary_pct``/``rotary_emb_base`` too; GPT-J/CodeGen ``rotary_dim`` with
    interleaved pairs),
    ``max_position_embeddings`` and ``original_max_position_embeddings`` with the precedence of HF's
    ``standardize_rope_params``. ``length`` defaults to ``max_position_embeddings``. Per-layer
    ``rope_parameters`` (Gemma 3/4: ``{"full_attention": {...}, "sliding_attention": {...}}``) need
    ``layer_type``. Raises :class:`ParameterError` naming the bad or missing key.
    """
    if not isinstance(config, dict):
        raise ParameterError(f"config must be a JSON object (dict), got {type(config).__name__}")
    rope = config.get("rope_parameters")
    where = "rope_parameters."
    if rope is None:
        rope, where = config.get("rope_scaling"), "rope_scaling."
    rope = dict(rope or {})
    if rope and all(isinstance(v, dict) for v in rope.values()):
        if layer_type is None:
            raise ParameterError(f"config has per-layer rope_parameters; pass layer_type, one of: {', '.join(rope)}")
        if layer_type not in rope:
            raise ParameterError(f"unknown layer_type {layer_type!r}; choose from: {', '.join(rope)}")
        rope, where = dict(rope[layer_type]), f"rope_parameters.{layer_type}."
    elif layer_type is not None and rope:
        raise ParameterError(f"layer_type={layer_type!r} given but the config has a single rope_parameters dict")

    hf_type = rope.get("rope_type", rope.get("type", "default"))
    if hf_type not in HF_NAMES:
        raise ParameterError(f"unknown {where}rope_type {hf_type!r}; choose from: {', '.join(HF_NAMES)}")
    scaling = HF_NAMES[hf_type]

    # head dim: DeepSeek-V2/V3 (MLA) configs set head_dim = qk_rope_head_dim, the rotated width; otherwise HF
    # uses config.head_dim when set, else hidden_size // num_attention_heads
    if config.get("qk_rope_head_dim") is not None:
        head_dim = _number(config, "qk_rope_head_dim", "", int)
    elif config.get("head_dim") is not None:
        head_dim = _number(config, "head_dim", "", int)
    else:
        for key in ("hidden_size", "num_attention_heads"):
            if key not in config:
                raise ParameterError(f"config needs head_dim or hidden_size and num_attention_heads; missing {key}")
        head_dim = _number(config, "hidden_size", "", int) // _number(config, "num_attention_heads", "", int)

    # rope_theta: rope_parameters first, then the top-level key (GPT-NeoX: rotary_emb_base), else HF's 10000
    if rope.get("rope_theta") is not None:
        base = _number(rope, "rope_theta", where)
    elif config.get("rope_theta") is not None:
        base = _number(config, "rope_theta", "")
    elif config.get("rotary_emb_base") is not None:
        base = _number(config, "rotary_emb_base", "")
    else:
        base = 10000.0

    params: dict[str, Any] = {"dim": head_dim, "base": base, "layout": "half", "scaling": scaling}
    # partial rotary: a top-level value overrides rope_parameters (standardize_rope_params)
    prf_src = next((src for src in (config, rope) if src.get("partial_rotary_factor") is not None), None)
    if prf_src is not None:
        prf = _number(prf_src, "partial_rotary_factor", "" if prf_src is config else where)
        if prf != 1.0 or scaling == "proportional":
            params["partial_rotary_factor"] = prf
    elif config.get("rotary_pct") is not None:
        params["partial_rotary_factor"] = _number(config, "rotary_pct", "")
    if config.get("model_type") in ("gptj", "codegen"):
        params["layout"] = "interleaved"  # rotate_every_two
        if config.get("rotary_dim") is not None:
            params["rotary_dim"] = _number(config, "rotary_dim", "", int)

    max_pos = config.get("max_position_embeddings")
    if length is None:
        if max_pos is None:
            raise ParameterError("config has no max_position_embeddings; pass a length")
        length = _number(config, "max_position_embeddings", "", int)
    params["length"] = length

    def need(key: str, kind: type = float) -> Any:
        if rope.get(key) is None:
            raise ParameterError(f"rope_type {hf_type!r} needs {where}{key}; the config has none")
        return _number(rope, key, where, kind)

    def max_position() -> int:
        if max_pos is None:
            raise ParameterError(f"rope_type {hf_type!r} needs max_position_embeddings; the config has none")
        return _number(config, "max_position_embeddings", "", int)

    def original_max() -> int:
        # standardize_rope_params: a top-level original_max_position_embeddings wins (Phi-3), then the rope
        # dict's, then max_position_embeddings
        if config.get("original_max_position_embeddings") is not None:
            return _number(config, "original_max_position_embeddings", "", int)
        if rope.get("original_max_position_embeddings") is not None:
            return _number(rope, "original_max_position_embeddings", where, int)
        return max_position()

    if scaling in ("linear", "dynamic"):
        params["factor"] = need("factor")
    if scaling == "dynamic":
        params["original_max_position_embeddings"] = max_position()  # HF's dynamic rule reads max_position_embeddings
    elif scaling == "llama3":
        for key in ("factor", "low_freq_factor", "high_freq_factor"):
            params[key] = need(key)
        params["original_max_position_embeddings"] = original_max()
    elif scaling == "yarn":
        omp = original_max()
        params["original_max_position_embeddings"] = omp
        params["factor"] = _number(rope, "factor", where) if rope.get("factor") is not None else max_position() / omp
        for key in ("attention_factor", "mscale", "mscale_all_dim"):
            if rope.get(key) is not None:
                params[key] = _number(rope, key, where)
        for key, default in (("beta_fast", 32.0), ("beta_slow", 1.0)):
            params[key] = (_number(rope, key, where) if rope.get(key) is not None else 0.0) or default  # HF: `or 32`
        if rope.get("truncate") is not None:
            if not isinstance(rope["truncate"], bool):
                raise ParameterError(f"config key {where}truncate={rope['truncate']!r} is not true or false")
            params["truncate"] = rope["truncate"]
    elif scaling == "longrope":
        omp = original_max()
        params["original_max_position_embeddings"] = omp
        for key in ("short_factor", "long_factor"):
            value = rope.get(key)
            if value is None:
                raise ParameterError(f"rope_type 'longrope' needs {where}{key}; the config has none")
            if not isinstance(value, list) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in value
            ):
                raise ParameterError(f"config key {where}{key} must be a list of numbers")
            params[key] = tuple(float(x) for x in value)
        params["factor"] = _number(rope, "factor", where) if rope.get("factor") is not None else max_position() / omp
        if rope.get("attention_factor") is not None:
            params["attention_factor"] = _number(rope, "attention_factor", where)
    elif scaling == "proportional" and rope.get("factor") is not None:
        params["factor"] = _number(rope, "factor", where)
    return params
