"""Tiny model folders and golden rows for every learned position table the inventory observed (issue 36 part 2).

Run once in the side venv (torch + transformers), from the repository root::

    /work/side/venv/bin/python tools/golden/make_learned_golden.py            # only the types not captured yet
    /work/side/venv/bin/python tools/golden/make_learned_golden.py albert xlm # these types (again)

For each model type whose inventory record (``posenc_cli/models/data/transformers_inventory.json``) has a
``learned_table`` (made by ``tools/inventory/learned_rows.py``), it takes from the record what it needs - the
model class, the position module, the tensor, the config keys of the table's width and length - and:

* builds the model class at its default config shrunk (every ``*layers*`` count 1, the width key 16, the length
  key 12, heads 2, other widths equal to the default width 16, vocabulary small), seeded, on the CPU;
* runs the model's own forward on a sequence as long as the table's usable rows, with a hook on the position
  module, and keeps the rows that module returned (what the model adds to tokens ``0..N-1``);
* writes ``tests/data/models/learned/<model_type>/`` (``config.json`` as ``save_pretrained`` writes it, and
  ``model.safetensors``: the whole state dict when it is at most 8 KB, else the position tables only, float32),
  the rows into ``tests/data/golden/learned_tables.npz`` and, in ``learned_tables.json`` under the type, the
  fixture's folder and what the rows are.

Types the golden file holds already are skipped (pass their names to capture them again). The folders made
before this tool (``tests/data/models/tiny_*``, by ``make_hf_positions_golden.py``) stay, as cross-checks.
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import AutoConfig

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "inventory"))
import learned_rows  # noqa: E402

INVENTORY = ROOT / "posenc_cli" / "models" / "data" / "transformers_inventory.json"
GOLDEN = ROOT / "tests" / "data" / "golden" / "learned_tables.json"
#: the rows, float32, keyed ``model_type:layer`` (the golden file names each)
ARRAYS = GOLDEN.with_suffix(".npz")
MODELS = ROOT / "tests" / "data" / "models"
WIDTH, LENGTH, FULL_BYTES = 16, 12, 8_000

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
torch.set_num_threads(1)


def model_class(entry: dict) -> type:
    import importlib

    name = entry["model_class"]
    if hasattr(transformers, name):
        return getattr(transformers, name)
    return getattr(importlib.import_module("transformers." + entry["modeling_module"]), name)


def _set(cfg, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    node = cfg
    for p in parents:
        node = getattr(node, p)
    setattr(node, last, value)


def _get(cfg, dotted: str):
    node = cfg
    for p in dotted.split("."):
        node = getattr(node, p)
    return node


def tiny_config(mt: str, tables: dict, layers: bool = True, width: int | None = 16):
    """The default config shrunk: the table's keys small, and every other int equal to the default width (the
    hidden sizes the table's width must match) 16, heads 2, ``*intermediate*``/``*ffn*`` 16, layers 1 (as many as
    the default where one layer breaks the config's validation: GPT-Neo's attention_types)."""
    cfg = AutoConfig.for_model(mt)
    if (INVENTORY_TYPES[mt].get("learned_table") or {}).get("config_patched"):  # as the observation patched it (ESM)
        from mechanisms import _patched

        cfg = _patched(cfg)[0]
    cfg = learned_rows.shrunk(cfg) if layers else cfg
    for t in tables.values():
        for key in t.get("length_keys", [])[:1]:
            _set(cfg, key, LENGTH)
    for t in tables.values():  # the model pads its input to a multiple of a config value (LED: attention_window)
        pad = t.get("padded_to")
        for sub in learned_rows._configs(cfg) if pad else []:
            for k, v in list(vars(sub).items()):
                if not k.startswith("_") and (v == pad or (isinstance(v, list) and v and all(x == pad for x in v))):
                    setattr(sub, k, 4 if type(v) is int else [4] * len(v))
    if width is None:  # the default widths (a model whose other sizes must divide them)
        return cfg
    WIDTH = width
    for t in tables.values():
        width = t["shape"][1]
        for sub in learned_rows._configs(cfg):
            for k, v in list(vars(sub).items()):
                if k.startswith("_") or type(v) is not int:
                    continue
                if v == width or (("hidden" in k or "embed" in k or "d_model" in k) and v > WIDTH):
                    setattr(sub, k, WIDTH)
                elif "head" in k and "dim" not in k and "size" not in k and v > 2:
                    setattr(sub, k, 2)
                elif ("intermediate" in k or "ffn" in k or "inner" in k) and v > WIDTH:
                    setattr(sub, k, WIDTH)
        for key in t.get("dim_keys", [])[:1]:
            _set(cfg, key, WIDTH)
    return cfg


def capture(mt: str, entry: dict, folder: Path, arrays: dict, layers: bool = True, width: int | None = 16) -> dict:
    mcls = model_class(entry)
    tables = entry["learned_table"]["tables"]
    cfg = tiny_config(mt, tables, layers, width)
    torch.manual_seed(0)
    model = mcls(cfg).eval()
    paths = [t["module"].split(" ")[0] for t in tables.values()]
    run = learned_rows._Run(model, paths)  # random distinct rows; the init's zero (padding) rows stay zero
    out = {}
    params = dict(model.named_parameters())
    special = learned_rows._special_ids(cfg)
    token = next(i for i in range(5, 10_000) if i not in special)
    for lt, t in tables.items():
        path = t["module"].split(" ")[0]
        weight = params[t["tensor"]]
        first = t["first_row"]
        first_n = first if isinstance(first, int) else _get(cfg, first["key"]) + first["add"]
        n = int(weight.shape[0]) - int(first_n)
        # the forward the observation ran for this table (Bark's semantic model, InstructBLIP's Q-Former)
        run.entry = t.get("entry", "").split(".forward")[0].replace("(model)", "")
        run.entries = learned_rows._entry_points(model, paths)
        outputs: dict[str, torch.Tensor] = {}
        module = model.get_submodule(path)
        h = module.register_forward_hook(lambda m, a, o, path=path: outputs.setdefault(path, o))
        run.run(torch.full((1, n), token, dtype=torch.long))
        h.remove()
        got = outputs[path]
        got = got[0] if isinstance(got, (tuple, list)) else got
        rows = got.detach().reshape(-1, weight.shape[1])[:n].float()
        arrays[f"{mt}:{lt}"] = rows.numpy().astype(np.float32)
        out[lt] = {"tensor": t["tensor"], "first_row": int(first_n), "shape": list(weight.shape), "n": n,
                   "rows": f"{mt}:{lt}"}  # fmt: skip
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder, safe_serialization=True)
    for extra in folder.glob("generation_config.json"):
        extra.unlink()
    state = {k: v.detach().float().contiguous() for k, v in model.state_dict().items()}
    full = sum(v.numel() * 4 for v in state.values()) <= FULL_BYTES
    if not full:  # the position tables only (with the names the model saves them under)
        for f in folder.glob("*.safetensors*"):
            f.unlink()
        keep = {t["tensor"] for t in tables.values()}
        saved = {k: v for k, v in state.items() if k in keep}
        save_file(saved, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return {"fixture": f"learned/{mt}", "weights": "full" if full else "position tables only", "layers": out}


INVENTORY_TYPES: dict = {}


def main(argv: list[str]) -> int:
    inventory = json.loads(INVENTORY.read_text())["model_types"]
    INVENTORY_TYPES.update(inventory)
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {"types": {}}
    have = golden["types"]
    arrays: dict[str, np.ndarray] = {}
    if ARRAYS.exists():
        with np.load(ARRAYS) as z:
            arrays.update({k: z[k] for k in z.files})
    wanted = argv or sorted(
        mt for mt, e in inventory.items() if (e.get("learned_table") or {}).get("tables") and mt not in have
    )
    from posenc_cli.models.records import RECORDS  # data only

    for mt in wanted:
        entry = inventory[mt]
        rec = RECORDS.get(mt)
        written = rec.positions.layers if rec is not None and rec.positions is not None else {}
        if rec is not None and rec.origin == "record" and any(
            lt not in written or not written[lt].learned for lt in (entry.get("learned_table") or {}).get("tables", {})
        ):  # a record written by hand reads another table (DeBERTa-v2's relative positions)
            print(f"{mt}: its record reads other positions ({rec.scheme}); no learned golden")
            have.pop(mt, None)
            shutil.rmtree(MODELS / "learned" / mt, ignore_errors=True)
            continue
        if not (entry.get("learned_table") or {}).get("tables"):
            print(f"{mt}: no learned_table in the inventory; run tools/inventory/make_inventory.py {mt}")
            continue
        try:
            # the smallest config the model accepts: width 16, else 64 (GroupNorm's 32 groups), else the default
            # widths; one layer, else all of them (GPT-Neo's attention_types must list every layer)
            tries = [(True, 16), (False, 16), (True, 64), (True, None), (False, None)]
            for i, (layers, width) in enumerate(tries):
                try:
                    have[mt] = capture(mt, entry, MODELS / "learned" / mt, arrays, layers, width)
                    break
                except Exception:
                    if i == len(tries) - 1:
                        raise
            print(f"{mt}: {have[mt]['fixture']} ({have[mt]['weights']})", flush=True)
        except Exception as exc:  # say it and go on: the test lists the types without a golden
            print(f"{mt}: not captured: {type(exc).__name__}: {exc}"[:200], flush=True)
    golden.update(transformers=transformers.__version__, torch=torch.__version__.split("+")[0],
                  how="tools/golden/make_learned_golden.py: the rows each model's own forward adds")  # fmt: skip
    golden["types"] = dict(sorted(have.items()))
    GOLDEN.write_text(json.dumps(golden, indent=0, sort_keys=True) + "\n")
    keep = {g["rows"] for t in have.values() for g in t["layers"].values()}
    np.savez_compressed(ARRAYS, **{k: arrays[k] for k in sorted(keep)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
