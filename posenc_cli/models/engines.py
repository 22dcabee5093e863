"""Inference engines' RoPE rules as data: the tables each engine computes for one model config.

The same config.json gives different cos/sin tables in different runtimes. :data:`ENGINES` lists, per engine, the
version whose source was read and each rule where it departs from HF transformers (the reference, ``hf``), with
the file and function it comes from. A rule's ``effect`` is one of a small closed set that :func:`engine_params`
interprets, turning HF's parameters (read by the HF config reader) into the parameters of posenc's own ``rope``
kind that reproduce the engine's tables:

========================  ================================================================================
effect                    meaning
========================  ================================================================================
longrope:always-long      LongRoPE's long factors at every length
longrope:max-model-len    long factors iff ``--max-model-len`` > original (fixed for the whole run)
longrope:n-ctx            long factors iff ``--n-ctx`` > original (fixed by the context size)
longrope:positions        long factors iff the largest position > original (HF: position + 1 > original)
yarn:truncate-ignored     the correction range is always floored/ceiled (``truncate: false`` ignored)
yarn:never-rounds         the correction range is never floored/ceiled (``truncate: true`` ignored)
yarn:needs-beta-fast      YaRN only when the config's rope dict has ``beta_fast``; plain RoPE otherwise
yarn:attention-factor-    the config's ``attention_factor`` is ignored (0.1 ln f + 1 instead)
ignored
yarn:mscale-direct        ``mscale`` alone (no ``mscale_all_dim``) is the cos/sin multiplier itself
yarn:mscale-numerator     ``mscale`` alone multiplies the log term: 0.1 mscale ln f + 1
pairing:by-arch           rotation pairs follow the GGUF architecture (NORM or NEOX); convert_hf_to_gguf
                          permutes Q/K weights so that scores equal HF's: the table is HF's
========================  ================================================================================

``--engine llamacpp`` computes through posenc's own float64 ``rope`` with these rules;
:func:`llamacpp_encoding` is the one place where the exact float32 emulation of ggml (issue 22,
``posenc_cli/models/llamacpp.py``) replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ParameterError, param

#: Engine names, in the order tables and messages list them.
ENGINE_NAMES = ("hf", "llamacpp", "mlx", "vllm", "sglang", "onnx-genai")


@dataclass(frozen=True)
class Rule:
    """One way an engine departs from HF transformers."""

    effect: str
    scalings: tuple[str, ...]
    says: str
    source: str


@dataclass(frozen=True)
class Engine:
    name: str
    version: str
    reference: str
    rules: tuple[Rule, ...] = field(default_factory=tuple)
    #: engine options (the CLI flags' parameters) that its rules read
    options: tuple[str, ...] = ()


ENGINES: dict[str, Engine] = {e.name: e for e in (
    Engine("hf", "transformers 5.x", "huggingface/transformers src/transformers/modeling_rope_utils.py "
           "ROPE_INIT_FUNCTIONS; LongRoPE per forward pass: max(position_ids) + 1 > original"),
    Engine("mlx", "mlx-lm 0.32.2", "ml-explore/mlx-lm mlx_lm/models/rope_utils.py (read from the 0.32.2 wheel)", (
        Rule("longrope:always-long", ("longrope",),
             "SuScaledRoPE uses long_factor at every length", "rope_utils.py SuScaledRoPE.__init__"),
        Rule("yarn:truncate-ignored", ("yarn",),
             "YarnRoPE floors/ceils the correction range; truncate is not read",
             "rope_utils.py YarnRoPE.yarn_find_correction_range, initialize_rope (keys passed)"),
        Rule("yarn:attention-factor-ignored", ("yarn",),
             "attention_factor is not passed to YarnRoPE", "rope_utils.py initialize_rope"),
        Rule("yarn:mscale-numerator", ("yarn",),
             "mscale without mscale_all_dim: 0.1 mscale ln f + 1 (HF: 0.1 ln f + 1)",
             "rope_utils.py YarnRoPE.__init__ (mscale_all_dim default 0)"),
    )),
    Engine("vllm", "vllm 0.33.0", "vllm-project/vllm vllm/model_executor/layers/rotary_embedding/ (0.33.0 wheel)", (
        Rule("longrope:max-model-len", ("longrope",),
             "long factors for the whole run iff max_model_len > original_max_position_embeddings",
             "rotary_embedding/phi3_long_rope_scaled_rope.py Phi3LongRoPEScaledRotaryEmbedding.__init__"),
    ), options=("max_model_len",)),
    Engine("sglang", "sglang 0.5.23", "sgl-project/sglang python/sglang/srt/layers/rotary_embedding/ (0.5.23 wheel)", (
        Rule("longrope:positions", ("longrope",),
             "long factors per batch iff any position > original (HF: position + 1 > original): one position off",
             "rotary_embedding/rope_variant.py Phi3LongRoPEScaledRotaryEmbedding.forward"),
        Rule("yarn:attention-factor-ignored", ("yarn",),
             "attention_factor is not passed on (mscale from the factor, times attn_factor 1)",
             "rotary_embedding/factory.py get_rope (yarn extra_kwargs), yarn.py YaRNScalingRotaryEmbedding"),
    )),
    Engine("onnx-genai", "onnxruntime-genai 0.16 (builder, commit a0c04eb)",
           "microsoft/onnxruntime-genai src/python/py/models/builders/base.py", (
        Rule("yarn:needs-beta-fast", ("yarn",),
             "YaRN only when the rope dict has beta_fast (else plain RoPE)", "base.py make_rope_init"),
        Rule("yarn:never-rounds", ("yarn",),
             "the correction range is never floored/ceiled", "base.py make_inv_freq_rescaled_with_ntk"),
        Rule("yarn:attention-factor-ignored", ("yarn",),
             "attention_factor is not read", "base.py make_rope_init, make_mscale"),
        Rule("yarn:mscale-direct", ("yarn",),
             "mscale without mscale_all_dim is the multiplier itself", "base.py make_mscale"),
    )),
    Engine("llamacpp", "llama.cpp master (read 2026-11)",
           "ggml-org/llama.cpp src/llama-model.cpp, ggml/src/ggml-cpu/ops.cpp", (
        Rule("yarn:truncate-ignored", ("yarn",),
             "ggml_rope_yarn_corr_dims floors/ceils the correction range; truncate is not read",
             "ggml/src/ggml-cpu/ops.cpp ggml_rope_yarn_corr_dims"),
        Rule("longrope:n-ctx", ("longrope",),
             "long factors iff n_ctx per sequence (n_ctx / n_seq_max) > original, chosen once",
             "src/llama-model.cpp llama_model::get_rope_factors"),
        Rule("pairing:by-arch", ("*",),
             "NORM (adjacent pairs) or NEOX by architecture; convert_hf_to_gguf permutes Q/K to match",
             "src/llama-model.cpp llama_model_rope_type"),
    ), options=("n_ctx",)),
)}  # fmt: skip


def resolve_engine(name: str) -> Engine:
    """The engine named ``name``; an unknown name is refused listing the choices."""
    if name not in ENGINES:
        raise ParameterError(f"unknown engine {name!r}; choose {param('engine')} from: {', '.join(ENGINE_NAMES)}")
    return ENGINES[name]


# ----- the model, as HF reads it (the one place that names the HF reader: issue 21 moves it) ---------------
@dataclass
class ModelFacts:
    """What checks and engines need of one model: HF's rope parameters and the model's shape."""

    kind: str
    model_type: str
    params: dict[str, Any]
    rope_dict: dict[str, Any]
    layout: str
    rot_dim: int
    head_dim: int
    heads: int | None
    kv_heads: int | None
    max_positions: int
    original: int
    #: what HF's reader had to say (assumptions, unknown model type): for the caller to show
    warnings: list[str] = field(default_factory=list)


def model_facts(config: Any, *, layer_type: str | None = None) -> ModelFacts:
    """Read a config (path, directory, ``-`` or dict) with HF's rules."""
    from ..encodings import make_encoding
    from .config_file import load_config
    from .hf_config import read_model_config

    raw = load_config(config)
    model = read_model_config(raw)
    from ..encodings import get_kind

    # engines' rules and ONNX checks speak of scaling rules and half-width caches: a kind without them is refused
    if not {"scaling", "cache", "seq_len"} <= {f.name for f in get_kind(model.kind).param_fields()}:
        raise ParameterError(
            f"{model.model_type} uses {model.kind}, which engines' rules and ONNX checks do not cover yet"
        )
    params = model.params(layer_type)
    enc = make_encoding(model.kind, {**params, "length": 1})
    text: dict[str, Any] = raw["text_config"] if isinstance(raw.get("text_config"), dict) else raw
    rope = text.get("rope_scaling") or text.get("rope_parameters") or {}
    heads = text.get("num_attention_heads", text.get("n_head"))
    kv = text.get("num_key_value_heads")
    mp = int(params["length"])
    return ModelFacts(
        kind=model.kind,
        model_type=model.model_type,
        params={k: v for k, v in params.items() if k != "length"},
        rope_dict=dict(rope) if isinstance(rope, dict) else {},
        layout=str(params.get("layout", "half")),
        rot_dim=int(enc.rot_dim),  # type: ignore[attr-defined]
        head_dim=int(params["dim"]),
        heads=int(heads) if isinstance(heads, int) else None,
        kv_heads=int(kv) if isinstance(kv, int) else None,
        max_positions=mp,
        original=int(params.get("original_max_position_embeddings") or mp),
        warnings=list(model.warnings),
    )


def rules_for(engine: str, params: dict[str, Any]) -> list[Rule]:
    """The rules of ``engine`` that apply to a model with these HF parameters."""
    scaling = params.get("scaling", "none")
    return [r for r in resolve_engine(engine).rules if "*" in r.scalings or scaling in r.scalings]


def engine_params(
    facts: ModelFacts,
    engine: str,
    *,
    seq_len: int | None = None,
    max_model_len: int | None = None,
    n_ctx: int | None = None,
) -> dict[str, Any]:
    """posenc ``rope`` parameters reproducing the tables ``engine`` computes for the model (without length).

    ``seq_len`` is the sequence length for the per-pass LongRoPE choice (HF, SGLang; default: the table's length),
    ``max_model_len`` vLLM's (default: the model's max_position_embeddings, as vLLM derives it), ``n_ctx``
    llama.cpp's context size (required for LongRoPE)."""
    from ..errors import check_int

    p = dict(facts.params)
    e = resolve_engine(engine)
    for opt, value in (("max_model_len", max_model_len), ("n_ctx", n_ctx)):
        if value is not None:
            check_int(opt, value, 1, 2**31 - 1)
    for opt, value in (("max_model_len", max_model_len), ("n_ctx", n_ctx)):
        if value is not None and opt not in e.options:
            users = [n for n, x in ENGINES.items() if opt in x.options]
            raise ParameterError(f"{param(opt)} applies to engine {', '.join(users)}, not {engine}; drop it")
    scaling = p.get("scaling", "none")
    effects = {r.effect for r in rules_for(engine, p)}
    if engine == "onnx-genai" and scaling not in ("none", "linear", "yarn", "longrope"):
        raise ParameterError(
            f"onnx-genai's rules for scaling {scaling} are not tabulated in posenc; compare with another engine"
        )
    if scaling == "yarn":
        if "yarn:needs-beta-fast" in effects and "beta_fast" not in facts.rope_dict:
            return _plain(p)
        if "yarn:needs-beta-fast" in effects and facts.rot_dim != facts.head_dim:
            raise ParameterError(
                "onnx-genai's YaRN ramp runs over head_size/2 with partial rotary, which posenc's rope cannot "
                "express; not tabulated"
            )
        if "yarn:truncate-ignored" in effects:
            p.pop("truncate", None)
        if "yarn:never-rounds" in effects:
            p["truncate"] = False
        mscale, mscale_all = facts.rope_dict.get("mscale"), facts.rope_dict.get("mscale_all_dim")
        if "yarn:attention-factor-ignored" in effects:
            p.pop("attention_factor", None)
        f = float(p.get("factor", 1.0))
        if mscale and not mscale_all:
            if "yarn:mscale-direct" in effects:
                p["attention_factor"] = float(mscale)
                p.pop("mscale", None)
                p.pop("mscale_all_dim", None)
            elif "yarn:mscale-numerator" in effects and "attention_factor" not in p:
                import math

                p["attention_factor"] = 0.1 * float(mscale) * math.log(f) + 1.0 if f > 1 else 1.0
                p.pop("mscale", None)
                p.pop("mscale_all_dim", None)
    if scaling == "longrope":
        o = facts.original
        if "longrope:always-long" in effects:
            p["seq_len"] = o + 1
        elif "longrope:max-model-len" in effects:
            mml = facts.max_positions if max_model_len is None else max_model_len
            p["seq_len"] = o + 1 if mml > o else o
        elif "longrope:n-ctx" in effects:
            if n_ctx is None:
                raise ParameterError(
                    f"llama.cpp chooses LongRoPE's factors by its context size; pass {param('n_ctx')} N"
                )
            p["seq_len"] = o + 1 if n_ctx > o else o
        elif "longrope:positions" in effects and seq_len is not None:
            p["seq_len"] = o + 1 if seq_len - 1 > o else o
        elif seq_len is not None:
            p["seq_len"] = seq_len
    if scaling == "dynamic" and seq_len is not None:
        p["seq_len"] = seq_len
    return p


def _plain(p: dict[str, Any]) -> dict[str, Any]:
    keep = ("dim", "base", "layout", "rotary_dim", "partial_rotary_factor", "offset", "dtype", "inv_freq_dtype")
    return {k: v for k, v in p.items() if k in keep}


def llamacpp_encoding(kind: str, params: dict[str, Any]) -> Any:
    """The tables llama.cpp computes. Today: posenc's own float64 ``rope`` with llama.cpp's rules (above) applied
    as data. THE place where issue 22's exact float32 ggml emulation (``models/llamacpp.py``) plugs in."""
    from ..encodings import make_encoding

    return make_encoding(kind, params)


def engine_encoding(
    config: Any,
    engine: str,
    *,
    length: int | None = None,
    layer_type: str | None = None,
    overrides: dict[str, Any] | None = None,
    max_model_len: int | None = None,
    n_ctx: int | None = None,
    seq_len: int | None = None,
) -> tuple[Any, ModelFacts]:
    """The encoding whose tables ``engine`` computes for ``config`` (``length`` rows, default the model's
    max_position_embeddings), with ``overrides`` (the user's parameters) on top; ``seq_len`` the sequence length
    of the forward pass (default: offset + length, the rows' last position + 1)."""
    from ..encodings import make_encoding

    facts = model_facts(config, layer_type=layer_type)
    n = facts.max_positions if length is None else int(length)
    overrides = dict(overrides or {})
    if seq_len is None:
        seq_len = int(overrides.get("seq_len") or (int(overrides.get("offset", 0)) + n))
    p = engine_params(facts, engine, seq_len=seq_len, max_model_len=max_model_len, n_ctx=n_ctx)
    p = {**p, **{k: v for k, v in overrides.items() if k != "seq_len"}, "length": n}
    enc = llamacpp_encoding(facts.kind, p) if engine == "llamacpp" else make_encoding(facts.kind, p)
    return enc, facts


def departures(config: Any, *, layer_type: str | None = None, length: int | None = None,
               max_model_len: int | None = None, n_ctx: int | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Per engine: the rules that apply to this model and at which sequence lengths its tables differ from HF's
    (``length``, else the original context, one more, and max_position_embeddings: where LongRoPE switches), measured
    on inv_freq and the attention scaling, which set every row. A rule that needs an option not given is said
    in ``note`` (its text keeps posenc's parameter marks: :meth:`PosencError.render` spells them)."""
    import numpy as np

    from ..encodings import make_encoding

    facts = model_facts(config, layer_type=layer_type)
    lengths = [int(length)] if length is not None else sorted({facts.original, facts.original + 1, facts.max_positions})
    rows = []
    for name in ENGINE_NAMES:
        e = ENGINES[name]
        row: dict[str, Any] = {"engine": name, "version": e.version, "reference": e.reference, "differs": False,
                               "differs_at": [], "note": "", "error": None,
                               "rules": [{"says": r.says, "source": r.source} for r in rules_for(name, facts.params)]}  # fmt: skip
        notes = []
        for n in lengths:
            ref = make_encoding(facts.kind, {**engine_params(facts, "hf", seq_len=n), "length": 1})
            try:
                p = engine_params(
                    facts,
                    name,
                    seq_len=n,
                    max_model_len=max_model_len if "max_model_len" in e.options else None,
                    n_ctx=n_ctx if "n_ctx" in e.options else None,
                )
            except ParameterError as exc:
                row["error"] = exc
                break
            enc = make_encoding(facts.kind, {**p, "length": 1})
            w_ref, w = ref.inv_freq(), enc.inv_freq()  # type: ignore[attr-defined]
            s_ref, s = float(ref.attention_scaling), float(enc.attention_scaling)  # type: ignore[attr-defined]
            if w.shape == w_ref.shape and bool(np.all(w == w_ref)) and s == s_ref:
                continue
            row["differs_at"].append(n)
            rel = float(np.max(np.abs(w / w_ref - 1))) if w.shape == w_ref.shape else float("nan")
            notes.append(f"at sequence length {n}: inv_freq up to {rel:.3g} off (relative)" +
                         (f", attention scaling {s:.6g} vs {s_ref:.6g}" if s != s_ref else ""))  # fmt: skip
        row["differs"] = bool(row["differs_at"])
        row["note"] = "; ".join(notes)
        rows.append(row)
    return rows
