"""Whole tables of common libraries, made by their own code in their own dtype (tools/golden/make_check_golden.py
ran it once; tests/data/golden/check_tables.npz keeps what is needed to rebuild them bit for bit).

Each library computes its angles as one float32 product ``fl32(t * w)`` of the position and its float32
frequency, then ``sin``/``cos`` in float32. The file keeps each library's frequencies, and for each angle table
the elements where its ``sin``/``cos`` (torch's, within an ulp) rounded to the other neighbour of NumPy's
correctly rounded value (a packed bit mask, and a packed bit for up or down); the tables are laid out from the
angles as each library does, and their bytes' SHA-256 must equal the library's: a test judges the library's real
output, not a copy of posenc's.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import ml_dtypes
import numpy as np

DATA = Path(__file__).parent / "data" / "golden" / "check_tables.npz"
#: angle table -> rows kept (the first rows of the library's table: the tests judge them)
ANGLE_ROWS = {"tutorial": 2048, "hf": 8192, "ret": 8192, "gemma3": 128}
#: case -> (its angle table, its tensors)
CASES = {
    "tutorial": ("tutorial", ("pe",)),
    "annotated": ("tutorial", ("pe",)),
    "hf-f32": ("hf", ("cos", "sin")),
    "hf-bf16": ("hf", ("cos", "sin")),
    "ret": ("ret", ("cos", "sin")),
    "torchtune": ("hf", ("cos", "sin")),
    "gemma3-sliding": ("gemma3", ("cos", "sin", "sliding_attention_inv_freq", "sliding_attention_original_inv_freq")),
}


def bits(a: np.ndarray) -> np.ndarray:
    """The flat bit patterns of ``a``."""
    return np.ascontiguousarray(a).reshape(-1).view(f"u{a.dtype.itemsize}")


def plain_angles(freq: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(sin, cos) of ``fl32(t * w)``, ``t < n``, each correctly rounded to float32 (NumPy's float64 sin/cos)."""
    t = np.arange(n, dtype=np.float32)[:, None]
    angle = (t * np.asarray(freq, dtype=np.float32)[None, :]).astype(np.float64)  # one float32 product
    return np.sin(angle).astype(np.float32), np.cos(angle).astype(np.float32)


def corrected(plain: np.ndarray, mask: np.ndarray, up: np.ndarray) -> np.ndarray:
    """``plain`` with the masked elements moved one float32 ulp up (``up`` set) or down."""
    out = plain.copy()
    flat = out.reshape(-1)
    at = np.flatnonzero(np.unpackbits(mask, count=flat.size))
    rise = np.unpackbits(up, count=at.size).astype(bool)
    flat[at] = np.nextafter(flat[at], np.where(rise, np.float32(np.inf), np.float32(-np.inf)))
    return out


def layout(case: str, s: np.ndarray, c: np.ndarray) -> dict[str, np.ndarray]:
    """The tables of ``case`` laid out from its angles' sin and cos, as the library lays them out."""
    if case in ("tutorial", "annotated"):  # pe[:, 0::2] = sin(position * div_term), pe[:, 1::2] = cos(...)
        pe = np.empty((s.shape[0], 2 * s.shape[1]), np.float32)
        pe[:, 0::2], pe[:, 1::2] = s, c
        return {"pe": pe}
    if case == "hf-f32":  # emb = cat(freqs, freqs); emb.cos() * attention_scaling (1.0)
        return {"cos": np.concatenate([c, c], 1), "sin": np.concatenate([s, s], 1)}
    if case == "gemma3-sliding":  # the same, and the per-type buffers Gemma3RotaryEmbedding registers
        inv = _data()["gemma3:freq"]
        return {**layout("hf-f32", s, c), "sliding_attention_inv_freq": inv.copy(),
                "sliding_attention_original_inv_freq": inv.copy()}  # fmt: skip
    if case == "hf-bf16":  # the float32 cos/sin, then .to(x.dtype)
        return {k: v.astype(ml_dtypes.bfloat16) for k, v in layout("hf-f32", s, c).items()}
    if case == "ret":  # repeat(freqs, '... n -> ... (n r)', r=2), then freqs.cos(), freqs.sin()
        return {"cos": np.repeat(c, 2, axis=1), "sin": np.repeat(s, 2, axis=1)}
    if case == "torchtune":  # cache = stack([cos(idx_theta), sin(idx_theta)], -1): one angle per pair
        return {"cos": c.copy(), "sin": s.copy()}
    raise KeyError(case)


@functools.cache
def _data() -> dict[str, np.ndarray]:
    with np.load(DATA) as z:
        return {k: z[k] for k in z.files}


@functools.cache
def library_angles(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(sin, cos) of angle table ``name`` as the library rounded them."""
    d = _data()
    s, c = plain_angles(d[f"{name}:freq"], ANGLE_ROWS[name])
    return corrected(s, d[f"{name}:sin:mask"], d[f"{name}:sin:up"]), corrected(
        c, d[f"{name}:cos:mask"], d[f"{name}:cos:up"]
    )


@functools.cache
def library_tables(case: str) -> dict[str, np.ndarray]:
    """The first rows of ``case``'s tables as the library made them, bit for bit (SHA-256 checked); read-only."""
    d = _data()
    s, c = library_angles(CASES[case][0])
    tables = layout(case, s, c)
    for name, t in tables.items():
        digest = np.frombuffer(hashlib.sha256(t.tobytes()).digest(), np.uint8)
        if not np.array_equal(digest, d[f"{case}:{name}:sha256"]):
            raise AssertionError(f"{case}:{name}: the rebuilt table is not the library's (SHA-256 differs)")
        t.flags.writeable = False
    return tables
