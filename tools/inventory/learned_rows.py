"""Which rows of a learned position table a model adds to tokens 0..N-1, observed by running it (issue 36 part 2).

Called by ``make_inventory.visit`` for every type; writes the record field ``learned_table`` (schema in
``tools/inventory/README.md``). Nothing here is typed per family: every rule is what the model's own forward did.

How it observes:

* The type's model class is built on the CPU from its default config with every layer count shrunk to 1 (a
  config attribute ``*layers*`` > 1; the embeddings do not depend on the depth) and ``vocab_size`` cut, without
  weight initialisation; every ``nn.Linear`` answers zeros while the forward runs (which row a table gives a
  token does not depend on the layers' products), so one type takes a fraction of a second.
* Every ``nn.Embedding`` and every module the inventory lists under ``position_modules.learned`` gets a forward
  hook. The model (else the highest module above a position module whose forward takes ``input_ids``) runs on
  one sequence of N equal token ids (not a special token). A hooked module whose output rows are rows of its own
  weight, in the order ``k, k+1, ..., k+N-1``, is a position table and ``k`` its first row; the word embeddings
  (one row N times) and token types (row 0 N times) are not.
* Padding: the sequence again with the config's ``pad_token_id`` as token 0. When that token gets the table's
  padding row and the others keep counting without it, the model counts positions from the padding row (RoBERTa
  style); the model is then built again with ``pad_token_id + 2``: when the first row moves by 2 too, the first
  row is ``pad_token_id + (k - pad)`` (a rule as data), else the constant ``k``.
* Shape keys: the integer config keys (of the sub-config the table's owner is built from, as saved) whose value
  is the table's width, or its row count minus 0..4; each is changed and the model built again on ``meta``: the
  key is kept when the table follows it (width: doubled; rows: + 3). Aliases from the config class's
  ``attribute_map`` are listed after the saved key.
* A padding row is the table's ``padding_idx`` when the model's init left that row zero.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from typing import Any

import torch

#: tokens in the observed sequence
N = 7
#: how far a row count may exceed its config key (offset rows: OPT/BART 2)
MAX_EXTRA = 4


def _layer_keys(cfg: Any) -> list[tuple[Any, str, int]]:
    out = []
    for sub in _configs(cfg):
        for k, v in vars(sub).items():
            if not k.startswith("_") and "layers" in k and type(v) is int and v > 1:
                out.append((sub, k, v))
    return out


def _configs(cfg: Any) -> list[Any]:
    import transformers

    out = [cfg]
    for v in vars(cfg).values():
        if isinstance(v, transformers.PretrainedConfig):
            out += _configs(v)
    return out


def shrunk(cfg: Any) -> Any:
    """A copy of ``cfg`` with every ``*layers*`` count > 1 set to 1, and ``vocab_size`` cut to the special token
    ids + 64 (the position rows do not depend on either)."""
    cfg = copy.deepcopy(cfg)
    for sub, k, _ in _layer_keys(cfg):
        setattr(sub, k, 1)
    small = max(_special_ids(cfg), default=0) + 64
    for sub in _configs(cfg):
        v = vars(sub).get("vocab_size")
        if type(v) is int and v > small:
            sub.vocab_size = small
    return cfg


def _build(mcls: type, cfg: Any, device: str) -> torch.nn.Module:
    """The model without its weight initialisation (transformers' ``no_init_weights``: seconds saved per type;
    the hooked tables get random rows of their own, and ``nn.Embedding`` still zeroes its ``padding_idx`` row)."""
    from transformers.initialization import no_init_weights

    with torch.device(device), no_init_weights():
        torch.manual_seed(0)
        return mcls(cfg).eval()


def build(mcls: type, cfg: Any, device: str = "cpu") -> tuple[torch.nn.Module, Any]:
    """The model at the shrunk config (at the default one when shrinking breaks it), and the config used."""
    small = shrunk(cfg)
    try:
        return _build(mcls, small, device), small
    except Exception:
        return _build(mcls, cfg, device), cfg


def _special_ids(cfg: Any) -> set[int]:
    ids = set()
    for sub in _configs(cfg):
        for k, v in vars(sub).items():
            if k.endswith("token_id") and type(v) is int:
                ids.add(v)
            if k.endswith("token_ids") and isinstance(v, list):
                ids |= {x for x in v if type(x) is int}
    return ids


def _owner_config(model: torch.nn.Module, path: str, cfg: Any) -> Any:
    parts = path.split(".")
    for i in range(len(parts) - 1, -1, -1):
        m = model.get_submodule(".".join(parts[:i])) if i else model
        c = getattr(m, "config", None)
        if c is not None and hasattr(c, "to_dict"):
            return c
    return cfg


def _entry_points(model: torch.nn.Module, paths: list[str]) -> list[tuple[str, torch.nn.Module]]:
    """The model, then each module above a position module (highest first) whose forward takes input_ids."""
    out = [("", model)]
    for path in paths:
        parts = path.split(".")
        for i in range(1, len(parts)):
            name = ".".join(parts[:i])
            m = model.get_submodule(name)
            params = inspect.signature(type(m).forward).parameters
            if "input_ids" in params and all(n != name for n, _ in out):
                out.append((name, m))
    return out


def _zeros(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return x.new_zeros(*x.shape[:-1], self.out_features)


def _call(module: torch.nn.Module, ids: torch.Tensor) -> None:
    """``module``'s forward on ``ids``, every ``nn.Linear`` answering zeros (the weights are not initialised, and
    which rows a position table gives each token does not depend on the layers' products; seconds per type)."""
    params = inspect.signature(type(module).forward).parameters
    kw: dict[str, Any] = {"input_ids": ids}
    if "decoder_input_ids" in params:
        kw["decoder_input_ids"] = ids
    if "attention_mask" in params:
        kw["attention_mask"] = torch.ones_like(ids)
    linear = torch.nn.Linear.forward
    torch.nn.Linear.forward = _zeros  # type: ignore[method-assign,assignment]
    try:
        module(**kw)
    finally:
        torch.nn.Linear.forward = linear  # type: ignore[method-assign]


def _rows(out: Any, weight: torch.Tensor) -> tuple[list[int], float] | None:
    """The weight rows the output rows are (and the factor, 1.0 for a gather), else None."""
    if isinstance(out, (tuple, list)):
        out = out[0]
    if not isinstance(out, torch.Tensor) or out.shape[-1] != weight.shape[-1] or weight.ndim != 2:
        return None
    flat = out.detach().reshape(-1, weight.shape[-1]).float()
    w = weight.detach().float()
    idx = torch.cdist(flat, w).argmin(dim=1)
    if torch.equal(flat, w[idx]):
        return [int(i) for i in idx], 1.0
    # a fixed factor (embed_scale applied inside the module)
    nz = w[idx].abs() > 1e-6
    if not bool(nz.any()):
        return None
    ratio = (flat[nz] / w[idx][nz]).mean()
    idx2 = torch.cdist(flat / ratio, w).argmin(dim=1)
    if torch.allclose(flat, ratio * w[idx2], rtol=1e-5, atol=1e-6):
        return [int(i) for i in idx2], float(ratio)
    return None


class _Run:
    """One model, hooked: ``run(ids)`` -> {module path: (rows, factor)} of each hooked module's first call."""

    def __init__(self, model: torch.nn.Module, paths: list[str]) -> None:
        self.model = model
        self.seen: dict[str, Any] = {}
        self.hooked: dict[str, torch.nn.Module] = {}
        for name, m in model.named_modules():
            if isinstance(m, torch.nn.Embedding) or name in paths:
                w = getattr(m, "weight", None)
                if isinstance(w, torch.Tensor) and w.ndim == 2:
                    self.hooked[name] = m
                    m.register_forward_hook(self._hook(name))
        with torch.no_grad():  # distinct random rows; nn.Embedding's padding_idx row stays zero, as its init leaves it
            gen = torch.Generator().manual_seed(1)
            for m in self.hooked.values():
                w = m.weight
                pad = getattr(m, "padding_idx", None)
                keep = isinstance(pad, int) and bool((w[pad] == 0).all())
                w.copy_(torch.randn(w.shape, generator=gen, dtype=torch.float32).to(w.dtype))
                if keep:
                    w[pad] = 0
        self.entries = _entry_points(model, paths)
        self.entry = ""

    def _hook(self, name: str) -> Any:
        def hook(module: torch.nn.Module, args: Any, out: Any) -> None:
            if name not in self.seen:
                self.seen[name] = _rows(out, module.weight)

        return hook

    def run(self, ids: torch.Tensor) -> dict[str, Any]:
        errors = []
        for name, m in self.entries if not self.entry else [(self.entry, self.model.get_submodule(self.entry))]:
            self.seen = {}
            try:
                with torch.no_grad():
                    _call(m, ids)
                self.entry = self.entry or name or "."
                if self.entry == ".":
                    self.entry = ""
                    self.entries = [("", self.model)]
                return dict(self.seen)
            except Exception as exc:
                errors.append(f"{name or type(m).__name__}: {type(exc).__name__}: {exc}"[:160])
                if self.seen:  # the positions were added before a later failure: the observation stands
                    self.entry = name
                    return dict(self.seen)
        raise RuntimeError(errors[0] if errors else "no entry point")


def _table_name(model: torch.nn.Module, module: torch.nn.Module) -> str:
    for name, p in model.named_parameters():
        if p is module.weight:
            return name
    raise KeyError("weight not a parameter")


def _shape_keys(
    mcls: type, cfg: Any, owner_cfg: Any, tensor: str, shape: tuple[int, int], keys_read: list[str] | None
) -> dict[str, Any]:
    """The config keys the table's width and row count follow, each verified by a rebuild on meta (only keys the
    owner's construction read, when the inventory recorded them)."""
    rows, width = shape
    saved = owner_cfg.to_dict()
    prefix = _prefix(cfg, owner_cfg)
    if keys_read:
        read = {k.removeprefix(prefix) for k in keys_read if k.startswith(prefix)}
        saved = {k: v for k, v in saved.items() if k in read} or saved
    amap = dict(getattr(type(owner_cfg), "attribute_map", {}) or {})
    found: dict[str, Any] = {}
    same = sorted(k for k, v in saved.items() if type(v) is int and v == width and not k.startswith("_"))
    for what, want in (("dim", width), ("length", rows)):
        for key, value in sorted(saved.items()):
            if type(value) is not int or key.startswith("_"):
                continue
            extra = rows - value if what == "length" else 0
            if (what == "dim" and value != want) or (what == "length" and not 0 <= extra <= MAX_EXTRA):
                continue
            new = value * 2 if what == "dim" else value + 3
            trial = copy.deepcopy(cfg)
            target = _same(trial, owner_cfg, prefix)
            try:
                setattr(target, key, new)
                with torch.device("meta"):
                    m = mcls(shrunk(trial))
                got = dict(m.named_parameters())[tensor].shape
            except Exception:
                continue
            if what == "dim" and got[1] == new and got[0] == rows:
                found["dim_keys"] = [prefix + key] + [prefix + a for a, r in amap.items() if r == key]
                break
            if what == "length" and got[0] == new + extra and got[1] == width:
                found["length_keys"] = [prefix + key] + [prefix + a for a, r in amap.items() if r == key]
                found["extra_rows"] = extra
                found["length_default"] = value
                break
    if "dim_keys" not in found and len(same) > 1:  # keys the model needs equal (SqueezeBERT): changed together
        trial = copy.deepcopy(cfg)
        target = _same(trial, owner_cfg, prefix)
        with contextlib.suppress(Exception):
            for key in same:
                setattr(target, key, width * 2)
            with torch.device("meta"):
                m = mcls(shrunk(trial))
            if tuple(dict(m.named_parameters())[tensor].shape) == (rows, width * 2):
                found["dim_keys"] = [prefix + k for k in same]
                found["dim_keys_together"] = True
    return found


def _prefix(cfg: Any, sub: Any) -> str:
    import transformers

    def walk(c: Any, path: str) -> str | None:
        if c is sub:
            return path
        for k, v in vars(c).items():
            if isinstance(v, transformers.PretrainedConfig):
                got = walk(v, f"{path}{k}.")
                if got is not None:
                    return got
        return None

    found = walk(cfg, "")
    if found is None:  # a copy handed down: the first sub-config of its class
        for k, v in vars(cfg).items():
            if type(v) is type(sub):
                return f"{k}."
        return ""
    return found


def _same(cfg: Any, sub: Any, prefix: str) -> Any:
    node = cfg
    for part in [p for p in prefix.split(".") if p]:
        node = getattr(node, part)
    return node


#: the inputs of a component whose tables lie over a patch grid or image features (the vision readers' tables)
VISION_INPUTS = ("vision", "video", "features")


def table_paths(rec: dict[str, Any], meta: torch.nn.Module) -> list[str]:
    """The modules whose table the observation follows: the inventory's ``position_modules.learned``, and the
    owner of every tensor the inventory's ``mechanisms`` saw as a ``learned`` or ``fixed`` table in a component
    that is not a vision one (ESM's, FSMT's, Kosmos-2.5's tables, which no module name marks)."""
    paths = [p.split(" ")[0] for p in (rec.get("position_modules") or {}).get("learned", [])]
    modules = dict(meta.named_modules())
    for m in rec.get("mechanisms") or []:
        if m.get("mechanism") not in ("learned", "fixed") or m.get("input") in VISION_INPUTS:
            continue
        for tensor in str(m.get("tensor") or "").split(", "):
            owner = tensor.rsplit(".", 1)[0] if "." in tensor else ""
            if owner and owner in modules and owner not in paths:
                paths.append(owner)
    return paths


def add(rec: dict[str, Any], meta: torch.nn.Module, mcls: type, cfg: Any) -> None:
    """``rec["learned_table"]`` for a type whose position modules (the inventory's ``position_modules.learned``
    and the tables its ``mechanisms`` saw, :func:`table_paths`) include an ``nn.Embedding`` or a module with a 2-D
    ``weight`` (``meta``: the model built on meta); unchanged otherwise. The shape keys tried are those the owners'
    construction read (``position_keys_read``)."""
    paths = table_paths(rec, meta)
    modules = dict(meta.named_modules())
    static = _not_gathered(rec, meta)
    if not any(_table_module(modules.get(p)) for p in paths):
        # no table a forward gathers from (buffers computed by a formula: fixed sinusoids): what each module holds
        unread = {**{_tensor_of(meta, p): _held(modules[p]) for p in paths if p in modules}, **static}
        if unread:
            rec["learned_table"] = {"status": "no module of its tables holds a 2-D weight", "unread": unread}
        return
    try:
        out = observe(mcls, cfg, paths, rec.get("position_keys_read"))
    except Exception as exc:  # the observation never costs the rest of the record
        out = {"status": f"{type(exc).__name__}: {exc}"[:200]}
    if out is None and static:
        out = {"status": "no table of its text forward is gathered by position", "unread": {}}
    if out is not None and static:
        unread = out.setdefault("unread", {})
        unread.update({t: w for t, w in static.items() if t not in unread})
    if out is not None:
        rec["learned_table"] = out


def _not_gathered(rec: dict[str, Any], meta: torch.nn.Module) -> dict[str, str]:
    """The non-vision tables the inventory's ``mechanisms`` name that are no 2-D ``weight`` of a module a forward
    could gather rows of (a bare parameter or buffer: SAM's memory encodings, Reformer's axial factors, a fixed
    buffer), each with what it is."""
    modules = dict(meta.named_modules())
    params, buffers = dict(meta.named_parameters()), dict(meta.named_buffers())
    out = {}
    for m in rec.get("mechanisms") or []:
        if m.get("mechanism") not in ("learned", "fixed") or m.get("input") in VISION_INPUTS:
            continue
        for tensor in str(m.get("tensor") or "").split(", "):
            owner, _, leaf = tensor.rpartition(".")
            if not tensor or (leaf == "weight" and owner and _table_module(modules.get(owner))):
                continue
            held = params.get(tensor, buffers.get(tensor))
            what = "parameter" if tensor in params else "buffer" if tensor in buffers else "tensor"
            shape = list(held.shape) if held is not None else "?"
            cls = type(modules[owner]).__name__ if owner in modules else type(meta).__name__
            out[tensor] = (
                f"a {what} {shape} of {cls} ({owner or 'the model'}), not the 2-D weight of a module whose "
                "forward gathers rows by position"
            )
    return out


def _table_module(m: Any) -> bool:
    """A module holding a 2-D table its forward may gather from (``nn.Embedding``, or a ``weight`` parameter)."""
    w = getattr(m, "weight", None) if isinstance(m, torch.nn.Module) else None
    return isinstance(m, torch.nn.Embedding) or (isinstance(w, torch.nn.Parameter) and w.ndim == 2)


def observe(
    mcls: type, cfg: Any, learned_paths: list[str], keys_read: list[str] | None = None
) -> dict[str, Any] | None:
    """The ``learned_table`` record field: ``{"tables": {layer: {...}}, "evidence": ...}``, or ``{"status": why}``,
    or None when the model holds no table its text forward gathers by position."""
    try:
        model, used = build(mcls, cfg)
    except Exception as exc:
        return {"status": f"not built on the CPU: {type(exc).__name__}: {exc}"[:200]}
    present = dict(model.named_modules())
    paths = [p for p in learned_paths if p in present]  # the shrunk model has one layer of each stack
    vocab_ids = _special_ids(used)
    vocab = 0
    with contextlib.suppress(Exception):
        vocab = int(model.get_input_embeddings().weight.shape[0])
    token = next((t for t in range(5, 1000) if t not in vocab_ids), 5)
    if vocab and token >= vocab:
        token = next((t for t in range(vocab) if t not in vocab_ids), 0)
    ids = torch.full((1, N), token, dtype=torch.long)
    run = _Run(model, paths)
    try:
        seen = run.run(ids)
    except Exception as exc:
        why = f"no text forward: {exc}"[:200]
        return {"status": why, "unread": {_tensor_of(model, p): why for p in paths}}
    tables: dict[str, dict[str, Any]] = {}
    unverified: dict[str, str] = {}
    entries = dict.fromkeys(seen, run.entry)
    failed: dict[str, str] = {}
    for p in paths:  # a table the first forward never called: the forward of a module above it (Bark's semantic)
        if p in run.hooked and p not in seen:
            for entry_name, _ in _entry_points(model, [p])[1:]:
                if not p.startswith(entry_name + "."):
                    continue
                run.entry = entry_name
                try:
                    got = run.run(ids)
                except Exception as exc:
                    failed[p] = f"{entry_name}.forward(input_ids of {N} tokens) failed: {type(exc).__name__}: {exc}"
                    continue
                if got.get(p) is not None:
                    seen[p], entries[p] = got[p], entry_name
                    break
    unread = {_tensor_of(model, p): failed.get(p, why) for p in paths if (why := _why_unread(run, seen, p)) is not None}
    for name, got in seen.items():
        if got is None:
            continue
        run.entry = entries[name]
        rows, factor = got
        if len(rows) < N:
            continue
        k = rows[0]
        module = run.hooked[name]
        # a run k, k+1, ...: the N tokens' rows, then those of the pad tokens the model appended (LED's encoder:
        # the run goes on; Longformer's: pad tokens take the padding row)
        pad_row = getattr(module, "padding_idx", None)
        tail = rows[N:]
        if rows[:N] != list(range(k, k + N)) or (
            tail != list(range(k + N, k + len(rows))) and not (isinstance(pad_row, int) and set(tail) == {pad_row})
        ):
            continue
        padded = len(rows)
        rows = rows[:N]
        tensor = _table_name(model, module)
        shape = tuple(module.weight.shape)
        if not module.weight.requires_grad:  # frozen (Marian's, RoFormer's sinusoids): a formula's table, not trained
            unread[tensor] = (
                f"{name} ({type(module).__name__}) is frozen (requires_grad False): a table the model fills from a "
                "formula, read only by a record of that formula"
            )
            continue
        # appended pad tokens taking the padding row are tokens (Longformer); a run must go on with one more token
        if padded != N and set(tail) != {pad_row} and not _pads(run, name, k, padded, shape[0], token):
            unread[tensor] = (
                f"{name} gives rows {k}..{k + padded - 1} for {N} tokens and not one more row for {padded + 1}: "
                "not one row per token"
            )
            continue
        owner = _owner_config(model, name, used)
        entry: dict[str, Any] = {
            "tensor": tensor, "module": f"{name} {type(module).__name__}", "shape": list(shape),
            "first_row": k, "scale": factor, "rows_added": rows,
            "entry": f"{run.entry or '(model)'}.forward(input_ids of {N} equal tokens)",
        }  # fmt: skip
        if padded != N:  # the model pads the sequence at its end before adding positions (LED: to attention_window)
            entry["padded_to"] = padded
        pad_idx = getattr(module, "padding_idx", None)
        if isinstance(pad_idx, int):
            # the model's own init of this module (its _init_weights; BridgeTower's and CLAP's draw the padding row
            # too, so a trained table keeps a non-zero one): the row is zero only when that leaves it zero
            kept = module.weight.detach().clone()
            with torch.no_grad(), contextlib.suppress(Exception):
                module.weight.fill_(1.0)
                torch.manual_seed(0)
                model._init_weights(module)
            zero = bool((module.weight[pad_idx] == 0).all())
            with torch.no_grad():
                module.weight.copy_(kept)
            entry["padding_idx"] = pad_idx
            entry["padding_row_zero"] = zero
        pad = getattr(owner, "pad_token_id", None)
        vocab = _vocab(model, run.entry)
        if type(pad) is int and 0 <= pad < vocab:
            ids2 = ids.clone()
            ids2[0, 0] = pad
            seen2 = run.run(ids2).get(name)
            if seen2 is not None:
                rows2 = seen2[0][:N]
                entry["rows_with_pad_first"] = rows2
                if rows2 != rows and rows2[0] == pad_idx and rows2[1:] == rows[:-1]:
                    entry["padding"] = "pad tokens take the padding row; the others are counted from it"
        if isinstance(pad_idx, int) or "padding" in entry:
            # does the first row follow pad_token_id? Built again with pad_token_id + 2: it moves by 2 (RoBERTa,
            # ProphetNet), or stays (MPNet's padding_idx is fixed at 1); anything else is not a rule posenc has
            entry["pad_key"] = _prefix(used, owner) + "pad_token_id"
            moved = _first_row_at_pad(mcls, cfg, owner, name, ids, pad + 2, run.entry) if type(pad) is int else None
            entry["first_row_at_pad+2"] = moved
            if moved == k + 2:
                entry["first_row"] = {"key": entry["pad_key"], "add": k - pad, "default": pad}
            elif moved != k:
                unverified[name] = f"{name}: its first row with pad_token_id + 2 was not observed ({moved})"
                continue
        entry.update(_shape_keys(mcls, used, owner, tensor, shape, keys_read))  # type: ignore[arg-type]
        tables[name] = entry
    for name, why in unverified.items():
        unread[_tensor_of(model, name)] = why
    for entry in tables.values():
        unread.pop(entry["tensor"], None)
    if not tables:
        if unverified:
            return {"status": "; ".join(unverified.values())[:200], "unread": unread}
        return {"status": "no table of its text forward is gathered by position", "unread": unread} if unread else None
    out: dict[str, Any] = {
        "tables": _layers(tables, list(dict.fromkeys([*learned_paths, *paths]))),
        "observed_on": f"{N} tokens, model class {mcls.__name__}",
    }
    if unread:  # tables beside the ones read: each with what the observation saw of it
        out["unread"] = unread
    if unverified:  # a type with a table posenc could not pin is refused whole: its other tables stay unread
        return {"status": "; ".join(unverified.values())[:200], "observed": out, "unread": unread}
    return out


def _pads(run: _Run, name: str, k: int, padded: int, rows: int, token: int) -> bool:
    """Whether the ``padded`` rows the module gave for N tokens are the model padding the sequence (LED: to a
    multiple of ``attention_window``): with ``padded + 1`` tokens it gives a longer run from ``k`` (else the rows
    are not the tokens': PEGASUS-X's ``embed_global`` gathers its global tokens' rows whatever the length)."""
    if k + padded + 1 > rows:
        return False
    with contextlib.suppress(Exception):
        got = run.run(torch.full((1, padded + 1), token, dtype=torch.long)).get(name)
        return bool(got) and len(got[0]) > padded and got[0][: padded + 1] == list(range(k, k + padded + 1))
    return False


def _tensor_of(model: torch.nn.Module, path: str) -> str:
    """The state-dict name of the table module ``path`` holds (``path.weight``), else the module's path."""
    w = getattr(model.get_submodule(path), "weight", None) if path else None
    return f"{path}.weight" if isinstance(w, torch.Tensor) else path


def _held(module: torch.nn.Module) -> str:
    """What a table module that is no gathered weight holds (a buffer its formula fills, a 1-D or 3-D tensor)."""
    held = [f"buffer {n} {list(b.shape)}" for n, b in module.named_buffers(recurse=False)]
    held += [f"parameter {n} {list(p.shape)}" for n, p in module.named_parameters(recurse=False)]
    return f"{type(module).__name__} holds {', '.join(held) or 'no tensor of its own'}: no 2-D weight a forward gathers rows of"


def _why_unread(run: _Run, seen: dict[str, Any], path: str) -> str | None:
    """Why the module ``path`` gave no table rows for the observed forward (None: it did, a run k..k+N-1)."""
    module = run.model.get_submodule(path)
    if path not in run.hooked:
        return _held(module)
    if path not in seen:
        return f"{run.entry or '(model)'}.forward(input_ids) never called {path} ({type(module).__name__})"
    got = seen[path]
    if got is None:
        return f"{path}'s output rows are no rows of its weight (its forward computes from the table)"
    rows = got[0]
    k = rows[0] if rows else 0
    if len(rows) < N or rows != list(range(k, k + len(rows))):
        return f"the rows {path} gave {N} equal tokens were {rows[: N + 2]}, not a run k..k+{N - 1}"
    return None


def _vocab(model: torch.nn.Module, entry: str) -> int:
    """The rows of the word embeddings the entry point's input_ids index."""
    for m in (model.get_submodule(entry) if entry else model, model):
        with contextlib.suppress(Exception):
            return int(m.get_input_embeddings().weight.shape[0])
    return 0


def _first_row_at_pad(mcls: type, cfg: Any, owner: Any, name: str, ids: torch.Tensor, pad: int, entry: str) -> Any:
    trial = copy.deepcopy(cfg)
    prefix = _prefix(cfg, owner)
    with contextlib.suppress(Exception):
        target = _same(trial, owner, prefix)
        target.pad_token_id = pad
        model, _ = build(mcls, trial)
        run = _Run(model, [name])
        run.entry = entry
        got = run.run(ids).get(name)
        return got[0][0] if got else None
    return None


def _layers(tables: dict[str, dict[str, Any]], paths: list[str]) -> dict[str, dict[str, Any]]:
    """Layer names: ``default`` when the model has one position module, else the first path part where the
    position modules' paths differ (``encoder``, ``decoder``; ``text_model`` beside a vision tower's table)."""
    every = list(dict.fromkeys([*tables, *paths]))
    every = [p for p in every if not any(q.startswith(p + ".") for q in every)]  # a table's owner: the table names it
    if len(every) == 1:
        return {"default": next(iter(tables.values()))}
    parts = [n.split(".") for n in every]
    i = 0
    while all(len(p) > i for p in parts) and len({p[i] for p in parts}) == 1:
        i += 1
    names = dict(zip(every, [p[i] if len(p) > i else ".".join(p) for p in parts], strict=True))
    if len(set(names.values())) != len(names):
        names = {n: n for n in every}
    return {names[n]: t for n, t in tables.items()}


def main(types: list[str]) -> int:
    """``learned_rows.py TYPE ...``: only ``learned_table``, observed again for the types and merged into the data
    under the inventory's lock (the other fields are kept as the last full run wrote them)."""
    import contextlib as _cl
    import fcntl
    import importlib
    import io
    import json
    import signal
    import sys

    import make_inventory as mi

    records = json.loads(mi.DATA.read_text())["model_types"]
    done: dict[str, Any] = {}
    signal.signal(signal.SIGALRM, mi._alarm)
    for mt in types:
        rec = dict(records[mt])
        rec.pop("learned_table", None)
        signal.alarm(mi.TIMEOUT)
        try:
            with _cl.redirect_stdout(io.StringIO()):
                cfg = mi.AutoConfig.for_model(mt)
                pkg = mi.CONFIG_MAPPING[mt].__module__.rsplit(".", 1)[0]
                try:
                    module = importlib.import_module(pkg + ".modeling_" + pkg.rsplit(".", 1)[1])
                except ImportError:
                    module = None
                mcls = mi.model_class(cfg, module)
                patched = None
                for attempt in (0, 1):
                    eager = copy.deepcopy(cfg)
                    with _cl.suppress(Exception):
                        eager._attn_implementation = "eager"
                    try:
                        with torch.device("meta"):
                            meta = mcls(eager)
                        break
                    except Exception:
                        # the config the mechanisms pass patches where the default cannot be built (ESM: vocab_size None)
                        from mechanisms import _patched

                        patched = _patched(cfg) if attempt == 0 else None
                        if patched is None:
                            raise
                        cfg = patched[0]
                add(rec, meta, mcls, cfg)
                if patched is not None and "learned_table" in rec:
                    rec["learned_table"]["config_patched"] = patched[1]
        except Exception as exc:
            rec["learned_table"] = {"status": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}
        finally:
            signal.alarm(0)
        done[mt] = mi.jsonable(rec)
        lt = rec.get("learned_table") or {}
        print(f"{mt}: {sorted(lt.get('tables') or {})} {lt.get('status', '')} unread={lt.get('unread')}"[:400],
              file=sys.stderr, flush=True)  # fmt: skip
    with open(mi.DATA.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(mi.DATA.read_text())
        for mt, rec in done.items():
            if "learned_table" in rec:
                data["model_types"][mt]["learned_table"] = rec["learned_table"]
            else:
                data["model_types"][mt].pop("learned_table", None)
        mi.dump(data)
    mi.DATA.with_suffix(".lock").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main(sys.argv[1:]))
