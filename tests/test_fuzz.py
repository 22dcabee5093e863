"""Fuzz the readers: random bytes, byte mutations and truncations of valid files.

Every input must give either a table whose tensors can be read in full, or posenc's own one-line
:class:`InputError` naming the file: never another exception, a crash or a huge allocation.

CI runs 200 examples per test (about 2 s of CPU in all): fewer missed bugs planted in the readers (a check
removed) that these tests found after 100-270 examples. Hypothesis' own work per drawn choice and per example
was most of the cost, so an example is drawn as few strings of bytes, decoded here into edits
(:func:`mutated`) or into a header's choices (:class:`Choices`), and one example of a format serves a mutated
file and a random header. For a longer session, e.g. before a release or after touching a reader::

    POSENC_FUZZ_EXAMPLES=50000 .venv/bin/python -m pytest tests/test_fuzz.py -q -p no:cacheprovider

Failures are saved in ``.hypothesis/`` and replayed first on the next run; a failing example is printed
with ``@reproduce_failure`` (paste it on the test to replay it).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import os
import tempfile
from pathlib import Path

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from posenc_cli.errors import InputError
from posenc_cli.formats import ArrayTensor, read_stream, read_table, validate_table_array, write_table

EXAMPLES = int(os.environ.get("POSENC_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_BYTES = 16 << 20  # what a fuzzed stream or archive may hold in memory

WORK = Path(tempfile.mkdtemp(prefix="posenc-fuzz-"))
_counter = itertools.count()


def _seeds() -> dict[str, list[bytes]]:
    """Valid files of each format, small enough that mutations hit every part of them."""
    rng = np.random.default_rng(7)
    pe = (rng.standard_normal((6, 4)) * 3).astype(np.float32)
    out: dict[str, list[bytes]] = {"npy": [], "npz": [], "safetensors": []}

    def table(fmt: str, tensors: dict[str, np.ndarray], meta: dict[str, str]) -> bytes:
        path = WORK / f"seed{next(_counter)}.{fmt}"
        write_table(str(path), {k: ArrayTensor(k, v) for k, v in tensors.items()}, meta, fmt)
        return path.read_bytes()

    out["npy"].append(table("npy", {"pe": pe}, {}))
    out["npy"].append(table("npy", {"pe": np.arange(5, dtype=np.int16)}, {}))
    buf = io.BytesIO()
    np.save(buf, np.asfortranarray(pe.astype(">f8")))
    out["npy"].append(buf.getvalue())
    out["npz"].append(table("npz", {"pe": pe, "slopes": np.arange(3, dtype=np.float64)}, {"kind": "alibi"}))
    buf = io.BytesIO()
    np.savez_compressed(buf, pe=pe, cos=pe[:, :2].copy())
    out["npz"].append(buf.getvalue())
    out["safetensors"].append(
        table(
            "safetensors",
            {"pe": pe, "b": pe[:2].astype(ml_dtypes.bfloat16), "i": np.arange(4, dtype=np.int8)},
            {"kind": "x", "length": "6"},
        )
    )
    out["safetensors"].append(table("safetensors", {"pe": pe[:1, :1].astype(np.float16)}, {}))
    return out


SEEDS = _seeds()


def read_file(data: bytes, suffix: str) -> None:
    """Read ``data`` as a file with ``suffix``; only success or a clean InputError are acceptable."""
    path = WORK / f"f{next(_counter)}.{suffix}"
    path.write_bytes(data)
    try:
        check(lambda: read_table(str(path), max_bytes=MAX_BYTES), str(path))
    finally:
        path.unlink()


def read_piped(data: bytes) -> None:
    check(lambda: read_stream(io.BytesIO(data), "<stdin>", max_bytes=MAX_BYTES), "<stdin>")


def check(read, label: str) -> None:
    try:
        table = read()
    except InputError as exc:
        message = str(exc)
        assert message.startswith(label) and "\n" not in message, message
        return
    for name, array in table.tensors.items():
        assert isinstance(name, str)
        np.asarray(array).tobytes()  # touch every byte: a wrong memmap size would crash here
        with contextlib.suppress(InputError):
            validate_table_array(array, name, label, need_float=False)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in table.metadata.items())


@st.composite
def mutated(draw, fmt: str) -> bytes:
    """One of the seeds with 1 to 4 edits, each a byte set to a value or one bit flipped (small numeric changes
    in lengths, shapes, offsets), at a place anywhere in the file. The edits are drawn as one string of bytes, 4 an
    edit (where: 2, set or flip: 1, the value or the bit: 1), decoded here: one draw, where a draw per choice
    made hypothesis' own bookkeeping most of the test's CPU."""
    data = bytearray(draw(st.sampled_from(SEEDS[fmt])))
    edits = draw(st.binary(min_size=4, max_size=16))
    for k in range(0, len(edits) - 3, 4):
        i = int.from_bytes(edits[k : k + 2], "little") % len(data)
        if edits[k + 2] & 1:
            data[i] = edits[k + 3]
        else:
            data[i] ^= 1 << (edits[k + 3] & 7)
    return bytes(data)


@st.composite
def truncated(draw, fmt: str) -> bytes:
    data = draw(st.sampled_from(SEEDS[fmt]))
    return data[: draw(st.integers(0, len(data) - 1))]


#: What random bytes follow, per format, so the fuzzing gets past the magic: the real .npy prefix, a zip
#: entry's signature, a safetensors header length that fits the bytes.
PREFIXES = {
    "npy": lambda b: SEEDS["npy"][0][:10] + b,
    "npz": lambda b: b"PK\x03\x04" + b,
    "safetensors": lambda b: len(b).to_bytes(8, "little") + b,
}


def read_both(data: bytes, fmt: str) -> None:
    """Read ``data`` as a file and as a piped stream: the two readers of one format see the same inputs (one
    drawn example serves both; hypothesis' generation is most of these tests' cost)."""
    read_file(data, fmt)
    read_piped(data)


class Choices:
    """Choices read from one string of bytes that hypothesis draws in one go (a draw per choice made hypothesis'
    own bookkeeping most of this test's CPU): each choice reads one or more bytes, and past the end every byte
    is 0, the first and simplest option of every choice, so hypothesis shrinks a failing header towards the
    simplest one that still fails."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def byte(self) -> int:
        b = self.data[self.at] if self.at < len(self.data) else 0
        self.at += 1
        return b

    def below(self, n: int) -> int:
        return self.byte() % n

    def integer(self, lo: int, hi: int) -> int:
        """Like ``st.integers(lo, hi)``: often an edge of the range or a small value, else any value in it."""
        how = self.below(4)
        if how == 0:
            return min(max(0, lo), hi) + self.below(min(hi - max(0, lo), 8) + 1) if hi > max(0, lo) else lo
        if how == 1:
            return (lo, hi)[self.below(2)]
        return lo + int.from_bytes(bytes(self.byte() for _ in range(9)), "little") % (hi - lo + 1)

    def text(self, max_size: int) -> str:
        return "".join(TEXT_CHARS[self.below(len(TEXT_CHARS))] for _ in range(self.below(max_size + 1)))

    def json(self, depth: int = 0) -> object:
        """A JSON value: null, a bool, an integer (-5 to 2**64), a float, a string, or (two levels deep at most)
        a list or an object of up to 3 such values."""
        kind = self.below(7 if depth < 2 else 5)
        if kind == 0:
            return None
        if kind == 1:
            return self.below(2) == 1
        if kind == 2:
            return self.integer(-5, 2**64)
        if kind == 3:
            return FLOATS[self.below(len(FLOATS))] if self.below(2) else self.integer(-(2**53), 2**53) / 8
        if kind == 4:
            return self.text(6)
        if kind == 5:
            return [self.json(depth + 1) for _ in range(self.below(4))]
        return {self.text(6): self.json(depth + 1) for _ in range(self.below(4))}

    def entry(self, at: int) -> dict[str, object]:
        """A tensor's entry: a dtype (a few unknown), a shape and data offsets (or other JSON in their place); a
        third of them hold the bytes their dtype and shape need, from byte ``at`` on (the header's checks then
        pass more often, and the reading goes on to the data)."""
        dtype = ST_DTYPES[self.below(len(ST_DTYPES))]
        how = self.below(3)
        if how == 0:
            shape: object = [self.integer(-1, 8) for _ in range(self.below(4))]
        else:  # a list of any JSON values (none, bool, numbers, strings), or any JSON
            shape = [self.json(depth=2) for _ in range(self.below(4))] if how == 1 else self.json()
        how = self.below(3)
        if how == 0 and dtype in ITEMSIZE and isinstance(shape, list) and all(type(n) is int for n in shape):
            offsets: object = [at, at + math.prod(shape) * ITEMSIZE[dtype]]
        elif how < 2:
            offsets = [self.integer(-1, 300), self.integer(-1, 300)]
        else:
            offsets = self.json()
        return {"dtype": dtype, "shape": shape, "data_offsets": offsets}


#: the characters of drawn text: some that JSON and Python literals escape, some beyond ASCII, and a dtype's
TEXT_CHARS = list('a0_ "\\\n\x00\x7f{é\u2603\u200b\U0001d11e') + list("<>|=fiubcUSVOMm248(),[]")
FLOATS = [0.0, -0.0, 0.5, -2.5, 1e16, 1e308, -1e308, 5e-324, float("inf"), float("-inf")]
ST_DTYPES = ["F32", "F64", "BF16", "BOOL", "I8", "U8", "F33", "C64", 7]
ITEMSIZE = {"F32": 4, "F64": 8, "BF16": 2, "BOOL": 1, "I8": 1, "U8": 1}


# ----- random bytes, every format -----------------------------------------------------------------------
#: What each format's test draws besides its own inputs: random bytes (200 examples a format, as the other inputs).
RANDOM = st.binary(max_size=400)


def read_random(data: bytes, fmt: str) -> None:
    """Random bytes read as ``fmt``, bare and after the format's prefix (done by each format's test below, one
    example serving both: a test of its own drew 200 more examples, and hypothesis' own cost per example is most of
    these tests' cost)."""
    read_file(data[:300], fmt)
    read_file(PREFIXES[fmt](data if fmt != "safetensors" else data[:200]), fmt)


# ----- .npy ---------------------------------------------------------------------------------------------
@FUZZ
@given(
    st.one_of(mutated("npy"), truncated("npy")), st.binary(min_size=32, max_size=128), st.binary(max_size=200), RANDOM
)
def test_npy_mutations_truncations_random_headers_and_bytes(data, choices, tail, random):
    """A mutated or truncated file, a random header and random bytes: 200 of each, one example serving all
    (hypothesis' own cost per example was most of what separate tests cost)."""
    read_both(data, "npy")
    npy_random_header(choices, tail)
    read_random(random, "npy")


DESCRS = [
    "<f4",
    ">f8",
    "<f2",
    "|b1",
    "<i8",
    "|u1",
    "<c8",
    "|O",
    "<U3",
    "|V2",
    "<M8[s]",
    "(2,)<f4",
    "<f16",
    "f4",
    "zz",
    "",
]


def npy_random_header(choices: bytes, data: bytes) -> None:
    """A header dict of a descr (a known one, any text, or a list of fields), a fortran_order (a bool or a small
    integer) and a shape (up to 4 integers from -2 to 2**63, or text), then up to 200 bytes of data."""
    pick = Choices(choices)
    how = pick.below(3)
    if how == 0:
        descr: object = DESCRS[pick.below(len(DESCRS))]
    elif how == 1:
        descr = pick.text(12)
    else:
        descr = [(pick.text(3), DESCRS[pick.below(len(DESCRS))]) for _ in range(pick.below(4))]
    fortran = pick.below(2) == 1 if pick.below(2) == 0 else pick.integer(-1, 2)
    shape = tuple(pick.integer(-2, 2**63) for _ in range(pick.below(5))) if pick.below(2) == 0 else pick.text(5)
    header = repr({"descr": descr, "fortran_order": fortran, "shape": shape}).encode("latin1", "replace") + b"\n"
    read_file(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data, "npy")


# ----- .safetensors -------------------------------------------------------------------------------------
@FUZZ
@given(
    st.one_of(mutated("safetensors"), truncated("safetensors")),
    st.binary(min_size=64, max_size=256),
    st.binary(max_size=300),
    RANDOM,
)
def test_safetensors_mutations_truncations_random_headers_and_bytes(data, choices, tail, random):
    """A mutated or truncated file, a random header and random bytes: 200 of each, one example serving all."""
    read_both(data, "safetensors")
    safetensors_random_header(choices, tail)
    read_random(random, "safetensors")


def safetensors_random_header(choices: bytes, data: bytes) -> None:
    """Headers of up to 4 entries (each a tensor's entry or any JSON) and an optional ``__metadata__`` of up to 2
    keys (each a string or any JSON), then up to 300 bytes of data, or (half the time) as many as the entries'
    offsets ask for."""
    pick = Choices(choices)
    header: dict[str, object] = {}
    at = 0
    for _ in range((0, 0, 1, 2, 3, 4)[pick.below(6)]):
        name = pick.text(4)
        entry = pick.entry(at) if pick.below(2) == 0 else pick.json()
        header[name] = entry
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if isinstance(offsets, list) and offsets and type(offsets[-1]) is int and 0 <= offsets[-1] <= 300:
            at = max(at, offsets[-1])
    if pick.below(2):
        header["__metadata__"] = {
            pick.text(3): pick.text(3) if pick.below(2) else pick.json() for _ in range(pick.below(3))
        }
    if pick.below(2):
        data = (data + bytes(at))[:at]
    raw = json.dumps(header).encode()
    read_file(len(raw).to_bytes(8, "little") + raw + data, "safetensors")


# ----- .npz ---------------------------------------------------------------------------------------------
@FUZZ
@given(st.one_of(mutated("npz"), truncated("npz"), st.binary(max_size=100).map(lambda b: b"PK" + b)), RANDOM)
def test_npz_mutations_truncations_and_random_bytes(data, random):
    read_both(data, "npz")
    read_random(random, "npz")
