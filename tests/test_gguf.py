"""GGUF files as sources: hostile headers refused in one line (no gguf package needed: the header walk is
posenc's own), the extra named when it is missing, and with the extra the CLI reading llama.cpp's RoPE.

Files here are written byte by byte (``raw_gguf``) or with ``gguf.GGUFWriter`` (llama.cpp's own writer)."""

from __future__ import annotations

import json
import struct
import sys

import numpy as np
import pytest

from posenc_cli.formats import read_table

from .conftest import cli
from .each import each

# ----- a GGUF written byte by byte -------------------------------------------------------------------------


def _s(text: str) -> bytes:
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    return _s(key) + struct.pack("<I", vtype) + payload


def raw_gguf(kvs: list[bytes], tensors: list[bytes] = (), *, n_kv=None, n_t=None, magic=b"GGUF", version=3) -> bytes:
    head = magic + struct.pack("<I", version)
    head += struct.pack("<QQ", len(tensors) if n_t is None else n_t, len(kvs) if n_kv is None else n_kv)
    return head + b"".join(kvs) + b"".join(tensors)


LLAMA_KVS = [
    _kv("general.architecture", 8, _s("llama")),
    _kv("llama.context_length", 4, struct.pack("<I", 4096)),
    _kv("llama.embedding_length", 4, struct.pack("<I", 256)),
    _kv("llama.attention.head_count", 4, struct.pack("<I", 2)),
    _kv("llama.rope.freq_base", 6, struct.pack("<f", 10000.0)),
]


def _tensor_info(name: str, n: int, offset: int, ttype: int = 0) -> bytes:
    return _s(name) + struct.pack("<I", 1) + struct.pack("<Q", n) + struct.pack("<I", ttype) + struct.pack("<Q", offset)


HOSTILE = {
    "bad magic": (raw_gguf(LLAMA_KVS, magic=b"GGUX"), "does not start with GGUF"),
    "bad version": (raw_gguf(LLAMA_KVS, version=99), "version 99"),
    "absurd key count": (raw_gguf(LLAMA_KVS, n_kv=2**60), "keys claimed"),
    "absurd tensor count": (raw_gguf(LLAMA_KVS, n_t=2**62), "tensors claimed"),
    "huge string": (
        raw_gguf([_kv("general.architecture", 8, struct.pack("<Q", 2**62) + b"llama")]),
        "runs past the end",
    ),
    "huge key": (raw_gguf([struct.pack("<Q", 2**40) + b"x" * 20]), "claims"),
    "unknown value type": (raw_gguf([_kv("general.architecture", 77, b"")]), "unknown value type 77"),
    "absurd array": (raw_gguf([_kv("x.arr", 9, struct.pack("<IQ", 8, 2**61))]), "items"),
    "truncated": (raw_gguf(LLAMA_KVS)[:-3], "past the end"),
    "offset past the end": (
        raw_gguf(LLAMA_KVS, [_tensor_info("rope_freqs.weight", 64, 2**40)]),
        "past the end of the file",
    ),
    "rope tensor past the end": (
        raw_gguf(LLAMA_KVS, [_tensor_info("rope_freqs.weight", 2**30, 0)]) + bytes(64),
        "runs past the end",
    ),
    "quantised rope tensor": (
        raw_gguf(LLAMA_KVS, [_tensor_info("rope_freqs.weight", 64, 0, ttype=2)]) + bytes(64),
        "float32",
    ),
}


def test_hostile_gguf_is_one_line_exit_2(tmp_path):
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(list(HOSTILE), lambda case: _hostile_gguf_is_one_line_exit_2(tmp_path, case))


def _hostile_gguf_is_one_line_exit_2(tmp_path, name):
    data, needle = HOSTILE[name]
    path = tmp_path / "m.gguf"
    path.write_bytes(data)
    code, out, err = cli(["kinds", str(path)])
    assert code == 2, err
    assert out == b""
    assert err.count("\n") == 1 and err.startswith("Error: "), err
    assert needle in err, err


def test_hostile_header_needs_no_memory(tmp_path):
    """A 2**62-byte string claim is refused before anything is read: the walk's memory is the header's."""
    import tracemalloc

    from posenc_cli.models.gguf import GgufError, validate

    path = tmp_path / "m.gguf"
    path.write_bytes(HOSTILE["huge string"][0])
    tracemalloc.start()
    with pytest.raises(GgufError):
        validate(str(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1_000_000


def test_a_file_that_starts_with_gguf_is_a_gguf_whatever_its_name(tmp_path):
    from posenc_cli.sources import is_gguf

    path = tmp_path / "model.bin"
    path.write_bytes(raw_gguf(LLAMA_KVS))
    assert is_gguf(str(path))
    assert is_gguf("missing.gguf") and not is_gguf("missing.bin")


def test_without_the_extra_one_line_names_it(tmp_path, monkeypatch):
    path = tmp_path / "m.gguf"
    path.write_bytes(raw_gguf(LLAMA_KVS))
    monkeypatch.setitem(sys.modules, "gguf", None)  # import gguf raises ImportError
    code, _, err = cli(["kinds", str(path)])
    assert code == 2
    assert err.strip() == "Error: reading GGUF files needs the gguf package; pip install 'posenc-cli[gguf]'"


def test_n_ctx_is_refused_without_a_gguf():
    code, _, err = cli(["generate", "rope", "--len", "4", "--dim", "4", "--n-ctx", "8", "-o", "x.npy"])
    assert code == 2 and "--n-ctx" in err and "GGUF" in err


# ----- with the gguf package ---------------------------------------------------------------------------------
def write_gguf(path, arch: str, keys: dict, tensors: dict | None = None) -> str:
    """A GGUF of only metadata (and the given float32 tensors), written by llama.cpp's own writer.
    ``keys``: name -> value; ints are uint32, floats float32, str, lists of ints int32 arrays."""
    gguf = pytest.importorskip("gguf", reason="the GGUF tests need the gguf extra: pip install 'posenc-cli[gguf]'")
    w = gguf.GGUFWriter(str(path), arch)
    for k, v in keys.items():
        if isinstance(v, bool):
            w.add_bool(k, v)
        elif isinstance(v, int):
            w.add_uint32(k, v)
        elif isinstance(v, float):
            w.add_float32(k, v)
        elif isinstance(v, str):
            w.add_string(k, v)
        else:
            w.add_array(k, list(v))
    for name, arr in (tensors or {}).items():
        w.add_tensor(name, np.asarray(arr, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


def qwen2_keys(**over):
    keys = {
        "qwen2.context_length": 32768,
        "qwen2.embedding_length": 3584,
        "qwen2.attention.head_count": 28,
        "qwen2.block_count": 2,
        "qwen2.rope.freq_base": 1000000.0,
    }
    keys.update(over)
    return keys


def test_generate_writes_llamacpp_tables_with_layout_and_inv_freq(tmp_path):
    path = write_gguf(tmp_path / "q.gguf", "qwen2", qwen2_keys())
    out = tmp_path / "t.safetensors"
    code, _, err = cli(["generate", path, "--len", "40", "-o", str(out)])
    assert code == 0, err
    t = read_table(str(out))
    assert t.metadata["layout"] == "half" and t.metadata["rope_type"] == "NEOX" and t.metadata["length"] == "40"
    assert t.tensors["cos"].shape == (40, 128) and t.tensors["cos"].dtype == np.float32
    # independent: NEOX halves hold cos(p * 1e6^(-2i/128)) to float32 rounding of ggml's iteration
    p = np.arange(40)[:, None]
    w = 1e6 ** (-np.arange(64) / 64)
    want = np.cos(p * w)
    assert np.abs(t.tensors["cos"][:, :64] - want).max() < 2e-5
    assert np.array_equal(t.tensors["cos"][:, :64], t.tensors["cos"][:, 64:])
    np.testing.assert_allclose(t.tensors["inv_freq"], w, rtol=1e-6)


def test_llama_rows_are_interleaved_pairs(tmp_path):
    keys = {k.replace("qwen2", "llama"): v for k, v in qwen2_keys().items()}
    path = write_gguf(tmp_path / "l.gguf", "llama", keys)
    out = tmp_path / "t.safetensors"
    assert cli(["generate", path, "--len", "8", "-o", str(out)])[0] == 0
    t = read_table(str(out))
    assert t.metadata["layout"] == "interleaved"
    c = t.tensors["cos"]
    assert np.array_equal(c[:, 0::2], c[:, 1::2])
    assert abs(c[3, 2] - np.cos(3 * 1e6 ** (-2 / 128))) < 1e-6


def test_wrong_value_type_and_missing_keys_are_exit_2(tmp_path):
    bad = write_gguf(tmp_path / "b.gguf", "qwen2", qwen2_keys(**{"qwen2.rope.freq_base": "1e6"}))
    code, _, err = cli(["kinds", bad])
    assert code == 2 and "qwen2.rope.freq_base" in err and err.count("\n") == 1
    keys = qwen2_keys()
    del keys["qwen2.attention.head_count"]
    missing = write_gguf(tmp_path / "m.gguf", "qwen2", keys)
    code, _, err = cli(["kinds", missing])
    assert code == 2 and "qwen2.attention.head_count" in err
    bad_scaling = write_gguf(tmp_path / "s.gguf", "qwen2", qwen2_keys(**{"qwen2.rope.scaling.type": "ntk"}))
    code, _, err = cli(["kinds", bad_scaling])
    assert code == 2 and "'ntk'" in err


def test_unknown_architecture_is_read_generically_with_a_warning(tmp_path):
    keys = {k.replace("qwen2", "zorp"): v for k, v in qwen2_keys().items()}
    path = write_gguf(tmp_path / "z.gguf", "zorp", keys)
    code, out, err = cli(["kinds", path])
    assert code == 0
    assert "architecture 'zorp'" in err and "NEOX was assumed" in err
    assert "NEOX (assumed)" in out.decode()


def test_kinds_says_where_each_value_came_from(tmp_path):
    path = write_gguf(
        tmp_path / "p.gguf",
        "phi3",
        {
            "phi3.context_length": 131072,
            "phi3.embedding_length": 3072,
            "phi3.attention.head_count": 32,
            "phi3.rope.dimension_count": 96,
            "phi3.rope.scaling.attn_factor": 1.1902381,
            "phi3.rope.scaling.original_context_length": 4096,
        },
        {"rope_factors_long.weight": np.full(48, 2.0), "rope_factors_short.weight": np.ones(48)},
    )
    code, out, _ = cli(["kinds", path, "--n-ctx", "4097", "--json"])
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["rotated dims"]["from"] == "key phi3.rope.dimension_count"
    assert rows["rope_factors_long"]["from"].startswith("tensor rope_factors_long.weight")
    assert rows["n_ctx / n_ctx_seq"]["value"] == "4097 / 4352"  # llama-context pads n_ctx to 256
    assert rows["per-pair divisors"]["value"] == "rope_factors_long"
    code, out, _ = cli(["kinds", path, "--n-ctx", "4000", "--json"])
    assert {r["name"]: r for r in json.loads(out)}["per-pair divisors"]["value"] == "rope_factors_short"
