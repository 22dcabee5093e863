r"""Tables a model keeps in its weights beside the formula that made them: fixed tables and T5-style relative bias.

Two readings of a model directory (``config.json`` + ``model.safetensors``, or the shards its index names), each
driven by the model type's record (:mod:`.records`: a :class:`~.records.Layer`'s ``stored``, ``unstored`` and
``bias``):

* **Fixed tables kept in the weights** (:func:`stored_copies`): Whisper's encoder ``embed_positions`` (frozen,
  filled with ``sinusoids``), the audio encoders copied from it (Qwen2-Audio, Voxtral, Audio Flamingo 3: their
  checkpoints hold Whisper's sinusoids), ViTMAE's frozen 2-D sin-cos ``position_embeddings`` and
  ``decoder_pos_embed``. posenc generates each from its formula; when the weights are here, the stored copy is
  checked against it, and the difference is explained:

  - ``equal``: within the stored dtype's rounding of the formula, by the error model of
    :mod:`posenc_cli.inspect.tolerance` (a float32 formula's angle error grows with the position; a grid's
    float64 formula rounds once to the stored dtype); a copy stored in a coarser dtype than the model computes
    it in (a bfloat16 checkpoint of a float32 table) says so;
  - ``differ``, named: all zeros (never filled from the formula), a coarser copy widened (float32 values that are
    bfloat16 or float16 numbers, within that rounding), the formula with one of the kind's choices changed (a
    ViTMAE table whose h and w halves are not rotated: ``axis_order=grid``), a table trained away from its init
    (still correlated with it), or another table altogether.

  A model that computes its table and never saves it (CTRL's ``pos_encoding``, the Qwen-Omni audio encoders'
  ``SinusoidsPositionEmbedding``: non-persistent buffers) has nothing to check, and says so. A weights file
  without the tensor the record names, or one whose shape is not the config's, is a one-line error naming the
  tensor and both shapes.

* **Relative bias** (:func:`relative_bias`): T5's ``relative_attention_bias`` (``num_buckets x heads``, in block 0
  of the encoder and of the decoder; UMT5: in every block) gathered through the buckets posenc builds (kind
  ``t5``: ``T5Attention._relative_position_bucket``) into what ``T5Attention.compute_bias`` returns for an
  ``N x N`` window from position 0: ``bias[h, i, j] = weight[bucket(j - i), h]``, heads x N x N, in the dtype
  stored.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError, ref
from .hf_positions import PositionsConfig, _read_tensor, find_tensors, read_positions, weight_files
from .hf_positions import tensor_pattern as _pattern
from .records import Layer

#: correlation with the formula above which a table that differs is "trained away from its init"
TRAINED_CORRELATION = 0.9


@dataclass
class StoredCopy:
    """One fixed table's stored copy against its formula: ``verdict`` ``equal``, ``differ`` or ``unstored`` (the
    model never saves it: nothing to compare), ``why`` in words, the largest difference when compared."""

    layer_type: str
    tensor: str
    verdict: str
    why: str
    file: str | None = None
    shape: tuple[int, ...] = ()
    dtype: str | None = None
    max_diff: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "layer_type": self.layer_type, "tensor": self.tensor, "verdict": self.verdict, "why": self.why,
            "file": self.file, "shape": list(self.shape), "dtype": self.dtype, "max_diff": self.max_diff,
        }  # fmt: skip


def _shape(shape: tuple[int, ...]) -> str:
    return " x ".join(str(s) for s in shape)


# ----- fixed tables ----------------------------------------------------------------------------------------------
def fixed_layers(reader: PositionsConfig, layer_type: str | None = None) -> dict[str, Layer]:
    """The layer types of ``reader``'s family whose table is fixed and kept (or said not to be) in the weights."""
    types = [reader._layer(layer_type)] if layer_type is not None else list(reader.family.layers)
    layers = {lt: reader.family.layers[lt] for lt in types}
    return {lt: layer for lt, layer in layers.items() if layer.stored or layer.unstored}


def stored_copies(path: str, config: Mapping[str, Any], *, layer_type: str | None = None) -> list[StoredCopy]:
    """Every fixed table of the model in directory ``path`` against its stored copy (see the module docstring); an
    empty list when the model type keeps none, a row per copy otherwise. Without weights in ``path`` a kept table
    is ``unchecked``. The weights lacking the tensor, or holding it in another shape than the config says, is a
    one-line :class:`ParameterError`."""
    readers = [r for r in (read_positions(config), tower_positions(config)) if r is not None]
    if not readers:
        return []
    files = weight_files(path)
    out: list[StoredCopy] = []
    if layer_type is not None:  # the reading that has the layer type (a wrapper's own, or its tower's)
        readers = [r for r in readers if layer_type in r.family.layers] or readers[:1]
    for reader in readers:
        out += _stored(path, reader, files, layer_type)
    return out


def tower_positions(config: Mapping[str, Any]) -> PositionsConfig | None:
    """The reading of the tables ``config``'s model type keeps in its towers (:func:`.records.tower_family`: an
    audio tower's Whisper sinusoids under ``audio_tower.``, its keys under ``audio_config``), or None."""
    from .records import model_type_of, tower_family

    mt = model_type_of(config, strict=False)[0]
    fam = tower_family(mt) if isinstance(mt, str) else None
    return PositionsConfig(mt, fam, dict(config)) if fam is not None and isinstance(mt, str) else None


def _stored(path: str, reader: PositionsConfig, files: list[str] | None, layer_type: str | None) -> list[StoredCopy]:
    out: list[StoredCopy] = []
    for lt, layer in fixed_layers(reader, layer_type).items():
        if layer.unstored:
            out.append(StoredCopy(lt, "-", "unstored", layer.unstored))
            continue
        if files is None:
            names = ", ".join(layer.stored)
            out.append(StoredCopy(lt, names, "unchecked", f"{names} lives in the weights, which are not here"))
            continue
        enc = _formula(reader, lt)
        want = tuple(enc.tensor_specs()["pe"].shape)
        for suffix in layer.stored:
            found = find_tensors(files, suffix)
            if not found and layer.unsaved:
                out.append(StoredCopy(lt, suffix, "unstored", f"no {suffix} in the weights: {layer.unsaved}"))
                continue
            if not found:
                raise ParameterError(
                    f"{path}: no tensor named *{suffix} in the weights, where {reader.model_type} keeps its {lt} "
                    f"table ({_shape(want)} by its config); pass the model's own directory"
                )
            for file, name in found:
                out.append(_check_copy(lt, file, name, enc, want, reader))
    return out


def _formula(reader: PositionsConfig, lt: str) -> Any:
    """The formula's table of layer type ``lt`` at the config's own length, in float64."""
    from ..encodings import make_encoding

    return make_encoding(reader.kind_of(lt), {**reader.params(lt), "dtype": "float64"})


def _check_copy(lt: str, file: str, name: str, enc: Any, want: tuple[int, ...], reader: PositionsConfig) -> StoredCopy:
    import numpy as np

    raw = _read_tensor(file, name)
    shape = tuple(int(s) for s in raw.shape)
    table = raw.reshape(shape[-2:]) if len(shape) > 2 and all(s == 1 for s in shape[:-2]) else raw
    if tuple(table.shape) != want:
        raise ParameterError(
            f"{file}: tensor {name} has shape {_shape(shape)} but {reader.model_type}'s config says {_shape(want)} "
            f"({lt}); the weights are not this config's (resized or another model's)"
        )
    stored = np.dtype(raw.dtype)
    x = np.asarray(table, dtype=np.float64)
    y = enc.array("pe")
    diff = float(np.max(np.abs(x - y))) if x.size else 0.0
    base = StoredCopy(lt, name, "equal", "", os.path.basename(file), shape, stored.name, diff)
    ok, how = _within(x, y, stored, enc)
    if ok:
        base.why = f"{name} ({_shape(shape)} {stored.name}) equals the formula {how}"
        coarse = _coarser_than_compute(stored, enc)
        if coarse:
            base.why += f"; {coarse}"
        return base
    base.verdict = "differ"
    base.why = f"{name} ({_shape(shape)} {stored.name}) differs from the formula: {_explain(x, y, stored, enc)}"
    return base


def _within(x: Any, y: Any, stored: Any, enc: Any) -> tuple[bool, str]:
    """Whether ``x`` is the formula ``y`` within the stored dtype's rounding, and the bound in words."""
    import numpy as np

    from ..inspect import tolerance

    terms = enc.angle_terms("pe")
    if terms is not None:
        compute = np.float32 if enc.params().get("angle_dtype") == "float32" else np.float64
        rows = np.arange(x.shape[0], dtype=np.int64)
        v = tolerance.formula_check(x, y, rows, terms, stored, np.float64, compute)
        return v.ok, v.text()
    # a float64 formula (ViTMAE's build_2d_sinusoidal_position_embedding) rounded once to the stored dtype: within
    # an ulp of it (half for the rounding; the float64 arithmetic's error is far below the rest)
    bound = tolerance.eps(stored) * np.abs(y) + tolerance.floor_spacing(stored)
    return bool(np.all(np.abs(x - y) <= bound)), f"within an ulp of {np.dtype(stored).name}"


def _coarser_than_compute(stored: Any, enc: Any) -> str:
    """Words for a copy stored coarser than the float32 table the model builds (a bfloat16 checkpoint)."""
    from ..inspect import tolerance

    if tolerance.eps(stored) > tolerance.eps("float32"):
        return (
            f"a {stored.name} copy of the float32 table the model's code builds: the model adds these rounded values "
            f"(--dtype {stored.name} writes the formula in that dtype)"
        )
    return ""


def _explain(x: Any, y: Any, stored: Any, enc: Any) -> str:
    """What a stored copy that is not the formula is: all zeros, a coarser copy widened, the formula with one of the
    kind's choices changed, trained away from it, or another table."""
    import dataclasses

    import numpy as np

    from ..inspect import tolerance

    if not np.any(x):
        return "it is all zeros: never filled from the formula (a model saved before its init ran)"
    for coarse in ("bfloat16", "float16"):
        if tolerance.eps(coarse) <= tolerance.eps(stored):
            continue
        from ..encodings.base import resolve_dtype

        dt = resolve_dtype(coarse)
        if np.array_equal(x.astype(dt).astype(np.float64), x) and _within(x, y, dt, enc)[0]:
            return f"it is a {coarse} copy widened to {np.dtype(stored).name} (within {coarse}'s rounding of it)"
    for f in dataclasses.fields(enc):
        choices = f.metadata.get("choices") if f.metadata else None
        if not choices or f.name == "dtype":
            continue
        for other in choices:
            if other == getattr(enc, f.name):
                continue
            try:
                alt = dataclasses.replace(enc, **{f.name: other})
            except Exception:  # a combination the kind refuses
                continue
            if tuple(alt.tensor_specs()["pe"].shape) == x.shape and _within(x, alt.array("pe"), stored, alt)[0]:
                return (
                    f"it is the formula with {f.name}={other} where the model's code has {f.name}="
                    f"{getattr(enc, f.name)} (a copy made by other code, or before a fix)"
                )
    diff = np.abs(x - y)
    rms = float(np.sqrt(np.mean(y * y))) or 1.0
    xc, yc = x - x.mean(), y - y.mean()
    denom = float(np.sqrt(np.sum(xc * xc) * np.sum(yc * yc)))
    corr = float(np.sum(xc * yc) / denom) if denom > 0 else 0.0
    stats = (
        f"max |diff| {float(diff.max()):.3g}, RMS diff {float(np.sqrt(np.mean(diff * diff))) / rms:.3g} of the "
        f"formula's RMS, correlation {corr:.3f}"
    )
    if corr >= TRAINED_CORRELATION:
        return f"trained away from its init ({stats})"
    return f"not this formula ({stats})"


# ----- relative bias ----------------------------------------------------------------------------------------------
#: values of ``-p table=``: the bucket index table (posenc's default for T5) or the bias gathered from the weights
TABLES = ("buckets", "bias")


def relative_bias(
    path: str,
    config: Mapping[str, Any],
    *,
    length: int | None = None,
    layer_type: str | None = None,
    max_bytes: int | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """``(tensors, metadata)``: the per-head relative bias a T5-family model adds to its scores for an ``N x N``
    window (``length``), ``relative_attention_bias`` of the weights in ``path`` gathered through the buckets. One
    tensor ``bias`` (heads x N x N) where block 0 holds the table (T5), ``bias_block<i>`` per block where every
    block has its own (UMT5). In the dtype stored."""
    import numpy as np

    from ..encodings import make_encoding

    reader = read_positions(config)
    fam = reader.family if reader is not None else None
    if reader is None or fam is None or not any(layer.bias for layer in fam.layers.values()):
        mt = reader.model_type if reader is not None else config.get("model_type")
        raise ParameterError(
            f"table=bias reads a T5-style relative_attention_bias from the weights; model_type {mt!r} has none "
            "(drop -p table=bias)"
        )
    lt = reader._layer(layer_type)
    layer = fam.layers[lt]
    assert layer.bias is not None
    params = reader.params(lt, length)
    heads = int(reader._values(lt, None)["_heads"].value)
    files = weight_files(path)
    if files is None:
        raise ParameterError(
            f"{path}: table=bias reads relative_attention_bias from the weights; pass the model directory "
            "(config.json + model.safetensors)"
        )
    found = find_tensors(files, layer.bias)
    if not found:
        raise ParameterError(
            f"{path}: no tensor named *{layer.bias} in the weights, where {reader.model_type} keeps its {lt} relative "
            f"bias ({params['num_buckets']} x {heads} by its config); pass the model's own directory"
        )
    n = int(params["length"])
    itemsize = int(_read_tensor(*found[0]).dtype.itemsize)
    limit = max_bytes if max_bytes is not None else _default_limit()
    need = len(found) * heads * n * n * itemsize
    if need > limit:
        from ..formats import human_bytes

        raise ParameterError(
            f"the bias of {len(found)} x {heads} heads x {n} x {n} would need {human_bytes(need)}, above the "
            f"{human_bytes(limit)} limit; lower {ref('length')} or pass {ref('max_bytes')} {need}"
        )
    buckets = make_encoding("t5", {k: params[k] for k in ("num_buckets", "max_distance", "bidirectional", "length")})
    index = buckets.array("buckets")
    pat = _pattern(layer.bias)
    tensors: dict[str, Any] = {}
    names: list[str] = []
    for file, name in sorted(found, key=lambda fn: _block(pat, fn[1])):
        weight = _read_tensor(file, name)
        want = (int(params["num_buckets"]), heads)
        if tuple(weight.shape) != want:
            raise ParameterError(
                f"{file}: tensor {name} has shape {_shape(tuple(weight.shape))} but {reader.model_type}'s config says "
                f"{_shape(want)} (relative_attention_num_buckets x num_heads); the config and weights disagree"
            )
        # compute_bias: relative_attention_bias(bucket) is (q, k, heads), permuted to (heads, q, k)
        bias = np.ascontiguousarray(np.asarray(weight)[index].transpose(2, 0, 1))
        key = "bias" if "*" not in layer.bias else f"bias_block{_block(pat, name)}"
        tensors[key] = bias
        names.append(name)
    from .. import __version__

    meta = {
        "posenc_version": __version__, "source": "model weights", "model_type": reader.model_type,
        "layer_type": lt, "weights_file": ",".join(sorted({os.path.basename(f) for f, _ in found})),
        "weights_tensor": ",".join(names), "num_buckets": str(params["num_buckets"]),
        "max_distance": str(params["max_distance"]), "bidirectional": str(params["bidirectional"]).lower(),
        "table": "bias: relative_attention_bias[bucket(j - i), h] for query i, key j (compute_bias)",
        "reference": fam.reference,
    }  # fmt: skip
    return tensors, meta


def _block(pat: re.Pattern[str], name: str) -> int:
    m = pat.search(name)
    return int(m.group(1)) if m is not None and m.groups() else 0


def _default_limit() -> int:
    from ..formats import DEFAULT_MAX_BYTES

    return int(DEFAULT_MAX_BYTES)


def table_option(config: Mapping[str, Any], table: Any) -> str | None:
    """The value of ``-p table=`` (``buckets`` or ``bias``), refused for a model type without a relative bias in
    its weights and for an unknown value; None when not given."""
    if table is None:
        return None
    if table not in TABLES:
        raise ParameterError(f"unknown table={table!r}; choose from: {', '.join(TABLES)}")
    reader = read_positions(config)
    if reader is None or not any(layer.bias for layer in reader.family.layers.values()):
        mt = reader.model_type if reader is not None else config.get("model_type")
        raise ParameterError(
            f"table={table} chooses between a T5-style model's bucket table and its relative bias; model_type "
            f"{mt!r} has no relative_attention_bias: drop it"
        )
    return str(table)


__all__ = ["StoredCopy", "find_tensors", "relative_bias", "stored_copies", "table_option", "weight_files"]
