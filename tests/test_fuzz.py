"""Fuzz the readers: random bytes, byte mutations and truncations of valid files.

Every input must give either a table whose tensors can be read in full, or posenc's own one-line
:class:`InputError` naming the file: never another exception, a crash or a huge allocation.

CI runs 200 examples per test (about 5 s of CPU in all, most of it hypothesis drawing them). For a
longer session, e.g. before a release or after touching a reader::

    POSENC_FUZZ_EXAMPLES=50000 .venv/bin/python -m pytest tests/test_fuzz.py -q -p no:cacheprovider

Failures are saved in ``.hypothesis/`` and replayed first on the next run; a failing example is printed
with ``@reproduce_failure`` (paste it on the test to replay it).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
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
    data = bytearray(draw(st.sampled_from(SEEDS[fmt])))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(data) - 1))
        if draw(st.booleans()):
            data[i] = draw(st.integers(0, 255))
        else:  # flip one bit: small numeric changes in lengths, shapes, offsets
            data[i] ^= 1 << draw(st.integers(0, 7))
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


# ----- random bytes, every format -----------------------------------------------------------------------
@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(data):
    """The same random bytes, bare and after each format's prefix, read as each format: 200 examples of each
    of the six inputs (they were three tests of 200 examples split between bare and prefixed bytes)."""
    for fmt, prefixed in PREFIXES.items():
        read_file(data[:300], fmt)
        read_file(prefixed(data if fmt != "safetensors" else data[:200]), fmt)


# ----- .npy ---------------------------------------------------------------------------------------------
@FUZZ
@given(st.one_of(mutated("npy"), truncated("npy")))
def test_npy_mutations_and_truncations(data):
    read_both(data, "npy")


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


@FUZZ
@given(
    st.one_of(
        st.sampled_from(DESCRS),
        st.text(max_size=12),
        st.lists(st.tuples(st.text(max_size=3), st.sampled_from(DESCRS)), max_size=3),
    ),
    st.one_of(st.booleans(), st.integers(-1, 2)),
    st.one_of(st.lists(st.integers(-2, 2**63), max_size=4).map(tuple), st.text(max_size=5)),
    st.binary(max_size=200),
)
def test_npy_random_headers(descr, fortran, shape, data):
    header = repr({"descr": descr, "fortran_order": fortran, "shape": shape}).encode("latin1", "replace") + b"\n"
    read_file(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data, "npy")


# ----- .safetensors -------------------------------------------------------------------------------------
@FUZZ
@given(st.one_of(mutated("safetensors"), truncated("safetensors")))
def test_safetensors_mutations_and_truncations(data):
    read_both(data, "safetensors")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2**64) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
ENTRY = st.fixed_dictionaries(
    {
        "dtype": st.sampled_from(["F32", "F64", "BF16", "BOOL", "I8", "U8", "F33", "C64", 7]),
        "shape": st.one_of(st.lists(st.integers(-1, 8), max_size=3), JSON),
        "data_offsets": st.one_of(st.lists(st.integers(-1, 300), min_size=2, max_size=2), JSON),
    }
)


@FUZZ
@given(
    st.dictionaries(st.text(max_size=4), st.one_of(ENTRY, JSON), max_size=4),
    st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.one_of(st.text(max_size=3), JSON), max_size=2)),
    st.binary(max_size=300),
)
def test_safetensors_random_headers(entries, metadata, data):
    header = dict(entries)
    if metadata is not None:
        header["__metadata__"] = metadata
    raw = json.dumps(header).encode()
    read_file(len(raw).to_bytes(8, "little") + raw + data, "safetensors")


# ----- .npz ---------------------------------------------------------------------------------------------
@FUZZ
@given(st.one_of(mutated("npz"), truncated("npz"), st.binary(max_size=100).map(lambda b: b"PK" + b)))
def test_npz_mutations_and_truncations(data):
    read_both(data, "npz")
