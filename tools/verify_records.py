"""Verify the records derived from the inventory against the arrays each type's own rotary class made.

    python tools/verify_records.py           # rewrite posenc_cli/models/data/verified_records.json
    python tools/verify_records.py --check   # exit 1 when it is stale (tests/test_inventory_coverage.py)

For every rotating model type of the inventory whose record posenc derives from it (records.py ``_derive``), the
type's default config (the inventory's ``defaults``), for every rope type its class supports, is read by posenc
and compared with the arrays in tests/data/inventory (made by tools/inventory from the type's own class): the
frequencies to float32 rounding, the cos/sin multiplier, cos at every stored position within the float32 angle
error. A derived type whose tables differ, or that has no reference arrays, is written to the data file, and
posenc refuses it in one line (records.py reads the file): a derived reading is used only where it was verified.
"""

from __future__ import annotations

import io
import json
import math
import sys
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from posenc_cli.encodings import make_encoding
from posenc_cli.errors import ParameterError
from posenc_cli.models import records
from posenc_cli.models.hf_config import ModelConfig, read_model_config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = ROOT / "tests" / "data" / "inventory"
EPS32 = 2.0**-24


@cache
def index() -> dict[str, Any]:
    return json.loads((DATA / "index.json").read_text())


@cache
def arrays() -> dict[str, np.ndarray]:
    return read_npz(DATA / "rope.npz")


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an .npz, as ``np.load`` gives them but read-only, in half its time: ``np.load`` parses each
    member's header with ``ast.literal_eval`` (0.1 ms a member, 1797 members in rope.npz), where its few distinct
    headers are parsed once here and the data taken from the member's bytes."""
    out: dict[str, np.ndarray] = {}
    parsed: dict[bytes, tuple[tuple[int, ...], bool, np.dtype]] = {}
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            raw = z.read(info)
            f = io.BytesIO(raw)
            version = np.lib.format.read_magic(f)
            name = info.filename.removesuffix(".npy")
            if version not in readers:  # (format 3.0: utf-8 field names) NumPy's reader
                f.seek(0)
                out[name] = np.lib.format.read_array(f, allow_pickle=False)
                continue
            size = 2 if version == (1, 0) else 4  # the header's length: 2 bytes in format 1.0, 4 in 2.0
            start = 8 + size + int.from_bytes(raw[8 : 8 + size], "little")
            head = raw[:start]
            if head not in parsed:
                parsed[head] = readers[version](f)
            shape, fortran, dtype = parsed[head]
            assert not dtype.hasobject, f"{path.name}: {info.filename} holds Python objects"
            array = np.frombuffer(raw, dtype=dtype, count=math.prod(shape), offset=start)
            out[name] = array.reshape(shape[::-1]).T if fortran else array.reshape(shape)
    return out


def rotating() -> list[str]:
    inv = records.inventory().get("model_types", {})
    return sorted(mt for mt, e in inv.items() if e.get("scheme") == "rope")


def variant_params(rope_type: str, n_freq: int, mpe: int) -> dict[str, Any]:
    """The rope parameters the inventory tool gave each rope type (tools/inventory/make_inventory.py)."""
    orig = max(mpe // 4, 16)
    if rope_type == "longrope":  # (the factor lists only where they are read: 1757 calls in the coverage test)
        ramp = [round(1.0 + 0.05 * i, 6) for i in range(n_freq)]
        return {"short_factor": [1.0] * n_freq, "long_factor": ramp, "original_max_position_embeddings": orig}
    return {
        "default": {},
        "linear": {"factor": 4.0},
        "dynamic": {"factor": 2.0},
        "yarn": {"factor": 4.0, "original_max_position_embeddings": orig},
        "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": orig},
        "proportional": {"factor": 2.0},
    }.get(rope_type, {"factor": 2.0, "alpha": 1000.0})  # fmt: skip


def default_config(mt: str, rope_type: str, n_freq: int) -> dict[str, Any]:
    """The type's default config.json as far as its positional code reads it (the inventory's ``defaults``,
    dotted from the top), with ``rope_type`` and the tool's parameters for it."""
    cfg = records.inventory_config(mt)
    entry = records.inventory_entry(mt) or {}
    text = cfg
    for p in entry.get("sub_config") or []:
        text = text[p]
    if rope_type != "default":
        rp = text.get("rope_parameters") or {}
        nested = [v for v in rp.values() if isinstance(v, dict)] or [rp]
        mpe = max_positions(mt)
        for d in nested:
            keep = {k: d[k] for k in ("rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved")
                    if k in d}  # fmt: skip
            d.clear()
            d.update(keep, rope_type=rope_type, **variant_params(rope_type, n_freq, mpe))
        text["rope_parameters"] = rp
    return cfg


def max_positions(mt: str) -> int:
    """max_position_embeddings as the type's config gives it (under any alias its class maps), else 4096 - what
    the inventory tool gave the rope types' parameters (once per type and verification setting: reading the
    config is refused where verification refuses its record)."""
    return _max_positions(mt, records.VERIFY)


@cache
def _max_positions(mt: str, verify: bool) -> int:
    try:
        mc = default_reading(mt)
        rotating = [lt for lt, p in mc.all_params(1).items() if p is not None]
        rep = mc.report(rotating[0] if rotating[0] != "default" else None)
    except ParameterError:
        return 4096
    mp = rep.get("max_position_embeddings")
    return int(mp["value"]) if mp else 4096


def default_reading(mt: str) -> ModelConfig:
    """posenc's reading of the type's default config (rope type ``default``), once per type and verification
    setting: :func:`max_positions` and the check of the default rope type read the same config."""
    got = _default_reading(mt, records.VERIFY)
    if isinstance(got, ParameterError):
        raise got
    return got


@cache
def _default_reading(mt: str, verify: bool) -> ModelConfig | ParameterError:
    try:
        return read_model_config(default_config(mt, "default", 0))
    except ParameterError as exc:
        return exc


def unique_cos(ref: np.ndarray, n: int) -> np.ndarray:
    """One column per frequency of the class's cos: cat(c, c) (rotate_half, de-interleave) or (c0, c0, c1, c1,
    ...) (repeat_interleave)."""
    if ref.shape[1] >= 2 * n and np.array_equal(ref[:, 0 : 2 * n : 2], ref[:, 1 : 2 * n : 2]):
        return ref[:, 0 : 2 * n : 2]
    return ref[:, :n]


_CHECKED: dict[tuple[str, bool], str] = {}
#: model type -> the derived records its check read with verification on (records._derived's arguments)
_READ: dict[str, set[str]] = {}


def check_type(mt: str) -> str:
    """:func:`_check_type`, once per type and verification setting in a process (the tests and the freshness
    check share the work). With verification off, the outcome found with it on is the same where that check
    read no record verification refuses (records.py's ``_derive`` is the only reader of VERIFY, and refuses only
    the types of ``_unverified``): the same records, the same reading, the same arrays."""
    key = (mt, records.VERIFY)
    if key not in _CHECKED:
        on = (mt, True)
        if not records.VERIFY and on in _CHECKED and not _READ[mt] & records._unverified().keys():
            _CHECKED[key] = _CHECKED[on]
        else:
            _CHECKED[key] = _watched(mt)
    return _CHECKED[key]


def _watched(mt: str) -> str:
    """:func:`_check_type`, noting (with verification on) every derived record it read."""
    read: set[str] = set()
    inner = records._derived

    def noted(model_type: str) -> Any:
        read.add(model_type)
        return inner(model_type)

    records._derived = noted  # type: ignore[assignment]
    try:
        return _check_type(mt)
    finally:
        records._derived = inner  # type: ignore[assignment]
        if records.VERIFY:
            _READ[mt] = read


def _check_type(mt: str) -> str:
    """'exact', or the one-line refusal; raises AssertionError on a table that differs from the class's."""
    refs = index()["rope"].get(mt)
    if not refs:
        return "no reference arrays"
    a = arrays()
    default = (
        next(iter(refs["default"].values())) if "default" in refs else next(iter(next(iter(refs.values())).values()))
    )
    # GPT-J's create_sinusoidal_positions keeps no inv_freq: one cos column per frequency
    n_freq = int(a[default["inv_freq"]].size) if "inv_freq" in default else int(a[default["cos"]].shape[-1]) // 2
    outcome = "exact"
    for rope_type, layers in refs.items():
        try:
            mc = (
                default_reading(mt)
                if rope_type == "default"
                else read_model_config(default_config(mt, rope_type, n_freq))
            )
        except ParameterError as exc:
            msg = str(exc)
            assert "\n" not in msg
            if rope_type == "default":  # the config at hand decides (GLM-4 MoE's default: an odd width)
                probed = check_probes(mt)
                return f"refused: {msg}" + (f" (exact at {probed} of the inventory's width probes)" if probed else "")
            outcome = "exact (default); some rope types refused"
            continue
        for lt, ref in layers.items():
            layer = lt if lt in mc.layer_types else None  # "default": one table for every layer
            positions = ref["positions"]
            # one forward call over all the positions: dynamic and longrope see max(position) + 1
            seq = max(positions) + 1
            params = mc.params(layer, 8, seq_len=seq)
            if params.get("scaling") in ("dynamic", "longrope"):
                params["seq_len"] = seq
            enc = make_encoding(mc.kind, {**params, "dtype": "float64"})
            got = np.asarray(enc.inv_freq(), dtype=np.float64)
            want = a[ref["inv_freq"]].astype(np.float64).ravel() if "inv_freq" in ref else got
            where = f"{mt} {rope_type} {lt}"
            assert got.size == want.size, f"{where}: {got.size} frequencies, its class {want.size}"
            if rope_type not in ("dynamic", "longrope"):  # the class's buffer holds the frequencies of its __init__
                # float32 arithmetic of the class (llama3's smoothing: a few roundings more, with cancellation)
                rtol = (32 if rope_type == "llama3" else 8) * EPS32
                diff = np.abs(got - want)
                bad = diff > rtol * np.abs(want)  # a zero frequency (proportional RoPE) must be zero
                worst = float(np.max(diff[bad] / np.maximum(np.abs(want[bad]), 1e-300))) if bad.any() else 0.0
                assert not bad.any(), f"{where}: frequencies differ by up to {worst:.3g} (relative)"
            scale = float(getattr(enc, "attention_scaling", 1.0))
            cos = unique_cos(a[ref["cos"]].astype(np.float64).reshape(len(positions), -1), want.size)
            # the multiplier the class applies is cos at position 0 (its attention_scaling attribute, unless the
            # class never applies it: DeepSeek-V2's complex freqs_cis)
            assert positions[0] == 0 and math.isclose(scale, cos[0].max(), rel_tol=4 * EPS32), where
            t = np.asarray(positions, dtype=np.float64)[:, None]
            mine = scale * np.cos(t * got[None, :])
            # the class computes t * w and cos in float32: |t w| 2**-24 and two roundings of cos
            tol = 3 * t * got.max() * EPS32 + 4 * EPS32 * max(scale, 1.0)
            assert np.all(np.abs(mine - cos) <= tol), f"{where}: cos differs by {np.abs(mine - cos).max():.3g}"
    probed = check_probes(mt)
    if outcome.startswith("exact") or not probed:
        return outcome
    return f"exact at {probed} of the inventory's width probes; {outcome}"


def check_probes(mt: str) -> int:
    """The frequencies posenc reads at each of the inventory's width probes (the type's default config with one
    key its class read changed, tools/inventory ``width_probes``) against the ones its class built there, to
    float32 rounding; a probe config posenc refuses in one line is skipped. Returns how many were compared."""
    entry = records.inventory_entry(mt) or {}
    a = arrays()
    compared = 0
    probes = entry.get("width_probes") or []
    seen = {h for p in probes[:1] for h in (p.get("inv_freq") or {}).values()}  # the default's: checked above
    for probe in probes:
        names = set((probe.get("inv_freq") or {}).values())
        if not probe.get("set") or not names or names <= seen:
            continue  # the class's frequencies did not change: no width the rule must follow
        seen |= names
        cfg = default_config(mt, "default", 0)
        text = cfg
        for p in entry.get("sub_config") or []:
            text = text[p]
        for key, value in probe["set"].items():
            *parents, last = key.split(".")
            node = text
            for part in parents:
                node = node.setdefault(part, {})
            node[last] = value
        try:
            mc = read_model_config(cfg)
        except ParameterError as exc:
            assert "\n" not in str(exc)
            continue
        for lt, name in probe["inv_freq"].items():
            layer = lt if lt in mc.layer_types else None
            try:
                params = mc.params(layer, 8)
            except ParameterError:
                continue
            got = np.asarray(make_encoding(mc.kind, {**params, "dtype": "float64"}).inv_freq(), dtype=np.float64)
            want = a[name].astype(np.float64).ravel()
            where = f"{mt} at {probe['set']} {lt}"
            assert got.size == want.size, f"{where}: {got.size} frequencies, its class {want.size}"
            # float32 base ** (2i / d) in the class: the exponent's rounding times ln(base), and pow's own
            rtol = (8 + 2 * math.log(float(params.get("base", 10000.0)))) * EPS32
            diff = np.abs(got - want)
            bad = diff > rtol * np.abs(want)
            worst = float(np.max(diff[bad] / np.maximum(np.abs(want[bad]), 1e-300))) if bad.any() else 0.0
            assert not bad.any(), f"{where}: frequencies differ by up to {worst:.3g} (relative)"
            compared += 1
    return compared


OUT = ROOT / "posenc_cli" / "models" / "data" / "verified_records.json"


def verify() -> dict[str, str]:
    """Derived model type -> why posenc must refuse it (its tables differ, or nothing to verify against)."""
    records.VERIFY = False
    try:
        out: dict[str, str] = {}
        for mt in rotating():
            try:
                rec = records.record_for(mt)
            except records.Refused:
                continue
            if rec is None or rec.origin != "inventory":
                continue
            if mt not in index()["rope"]:
                out[mt] = "the inventory holds no reference arrays of its class to verify the reading against"
                continue
            try:
                check_type(mt)
            except AssertionError as exc:
                first = str(exc).strip().splitlines()
                out[mt] = f"its tables differ from its class's ({first[0][:100]})"
        return dict(sorted(out.items()))
    finally:
        records.VERIFY = True


def build() -> str:
    inv = records.inventory()
    data = {"transformers_version": inv.get("transformers_version"), "generator": "tools/verify_records.py",
            "refused": verify()}  # fmt: skip
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    text = build()
    if "--check" in argv:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale; run python tools/verify_records.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
