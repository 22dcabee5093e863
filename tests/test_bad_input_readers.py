"""Hostile inputs keep their one line and exit 2 (issue 35, "Bad input"), through every reader.

The three holes found by mutating files as a new user would: a config.json holding a 5000-digit integer (Python's
integer-string limit), a truncated model.safetensors in a model directory (an mmap past the end of the file), a
GGUF whose ``rope.freq_base`` is zero or negative (a math domain error). Then a seeded mutation loop over every
reader posenc has (npy, npz, safetensors, csv and json text, config.json, the weights of a model directory, GGUF,
ONNX): header bytes flipped, lengths and offsets overwritten with boundary values, truncations, JSON values
replaced. A fixed number of cases each (a few seconds in all); any exception but a one-line
:class:`~posenc_cli.errors.PosencError` fails, with the case that made it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import posenc_cli.api as api
from posenc_cli.errors import PosencError

from .conftest import ROOT, cli
from .each import each

CONFIGS = ROOT / "tests" / "data" / "configs"
TINY_GPT2 = ROOT / "tests" / "data" / "models" / "tiny_gpt2"
#: cases per reader (seeded: the same cases on every run; POSENC_FUZZ_CASES=2000 for a longer session)
CASES = int(os.environ.get("POSENC_FUZZ_CASES", "40"))


def _one_line_exit_2(args: list[str]) -> str:
    code, _out, err = cli(args)
    assert code == 2, (args, code, err)
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("Error: "), (args, err)
    return err


def _qwen2_gguf(path: Path, **over) -> str:
    from .test_gguf import qwen2_keys, write_gguf

    return write_gguf(path, "qwen2", qwen2_keys(**over))


QWEN2_CONFIG = {"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_hidden_layers": 2,
                "max_position_embeddings": 32768, "rope_theta": 1000000.0}  # fmt: skip


# ----- the three holes ------------------------------------------------------------------------------------------
def test_a_config_with_a_5000_digit_integer_is_one_line(tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "rope_theta": ' + "9" * 5000 + ', "hidden_size": 64}')
    for args in (["kinds", str(config)], ["generate", str(config), "-o", str(tmp_path / "x.npy")]):
        err = _one_line_exit_2(args)
        assert "a number far too long for any model config" in err and "5000 digits" in err, err
    code, _out, err = cli(["audit", str(config)])
    assert code == 2 and "Traceback" not in err and "5000 digits" in err, err
    with pytest.raises(PosencError, match="far too long"):
        api.load_config(str(config))


def test_a_truncated_weights_file_in_a_model_directory_is_one_line(tmp_path):
    model = tmp_path / "model"
    shutil.copytree(TINY_GPT2, model)
    with open(model / "model.safetensors", "r+b") as fh:
        fh.truncate(5000)  # inside the position table's bytes
    err = _one_line_exit_2(["export", str(model), "-o", str(tmp_path / "x.safetensors")])
    assert "truncated" in err and "transformer.wpe.weight" in err, err
    code, out, err = cli(["audit", str(model)])
    assert code == 2 and "Traceback" not in err, err
    # the verdict line names the error itself (one line, grep-able in a CI log), as the row does
    assert "truncated" in out.decode() and err.startswith("ERROR: ") and "truncated" in err.splitlines()[-1], (out, err)


def test_a_gguf_base_that_is_no_positive_number_is_one_line(tmp_path_factory):
    each(
        [0.0, -5.0, float("nan"), float("inf")],
        lambda c: _a_gguf_base_that_is_no_positive_number_is_one_line(tmp_path_factory.mktemp("case"), c),
    )


def _a_gguf_base_that_is_no_positive_number_is_one_line(tmp_path, base):
    gguf = _qwen2_gguf(tmp_path / "bad.gguf", **{"qwen2.rope.freq_base": base})
    config = tmp_path / "config.json"
    config.write_text(json.dumps(QWEN2_CONFIG))
    table = tmp_path / "t.safetensors"
    assert cli(["generate", str(config), "--len", "8", "-o", str(table), "-q"])[0] == 0
    for args in (["generate", gguf, "--len", "8", "-o", str(tmp_path / "y.safetensors")],
                 ["check", str(table), "--against", gguf]):  # fmt: skip
        err = _one_line_exit_2(args)
        assert "qwen2.rope.freq_base is" in err and "a RoPE base is a positive number" in err, err
    code, out, err = cli(["audit", gguf, "--against", str(config), "--len", "64", "--engine", "hf"])
    assert code == 2 and "Traceback" not in err and "a RoPE base is a positive number" in out.decode(), err


# ----- the mutation loop over every reader ----------------------------------------------------------------------
_BOUNDARY = (0, 1, 2, 7, 255, 2**15, 2**31 - 1, 2**31, 2**32 - 1, 2**62, 2**63 - 1, 2**64 - 1)


def _mutate(data: bytes, rng: random.Random) -> bytes:
    """One mutation of ``data``: header bytes flipped, a length or offset overwritten with a boundary value, a
    truncation, garbage appended, or a slice duplicated."""
    b = bytearray(data)
    op = rng.randrange(6)
    head = min(len(b), 512)
    if op == 0 and head:  # flip bytes where the headers are
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(head)] ^= 1 << rng.randrange(8)
    elif op == 1 and len(b) >= 8:  # a length / offset / count overwritten
        at = rng.randrange(0, min(len(b), 256) - 7)
        width = rng.choice((4, 8))
        value = rng.choice(_BOUNDARY) % (1 << (8 * width))
        b[at : at + width] = value.to_bytes(width, "little")
    elif op == 2:  # truncated anywhere
        del b[rng.randrange(len(b) + 1) :]
    elif op == 3:  # truncated near the end (a cut download)
        del b[max(0, len(b) - rng.randint(1, 64)) :]
    elif op == 4:
        b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
    elif len(b) > 16:
        i = rng.randrange(len(b) - 8)
        b[i:i] = b[i : i + rng.randint(1, 8)]
    return bytes(b)


def _mutate_json(data: bytes, rng: random.Random) -> bytes:
    """A config.json with one value replaced (a boundary number, a wrong type, a huge integer) or one key
    dropped; else the byte mutations."""
    try:
        doc = json.loads(data)
    except ValueError:
        return _mutate(data, rng)
    if rng.random() < 0.25:
        return _mutate(data, rng)
    paths: list[tuple[dict, str]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                paths.append((node, k))
                walk(v)

    walk(doc)
    node, key = rng.choice(paths)
    if rng.random() < 0.2:
        del node[key]
    else:
        node[key] = rng.choice([0, -1, 1, 0.5, -1e308, 1e308, 2**70, "x", None, [], {}, True, [1, 2], 1e-320])
    text = json.dumps(doc)
    if rng.random() < 0.1:  # a number too long for Python's int()
        text = text.replace("{", '{"hidden_size": ' + "7" * 4500 + ", ", 1)
    return text.encode()


def _read_table(path: str) -> None:
    src = api.read(path)
    for name in src.names:
        np.asarray(src.tensors[name][:])


def _read_config(path: str) -> None:
    from posenc_cli.encodings import make_encoding
    from posenc_cli.models.readers import describe_model_config, model_config_layers

    cfg = api.load_config(path)
    layers = model_config_layers(cfg, length=8)
    for lt, v in layers.items():
        describe_model_config(cfg, layer_type=None if len(layers) == 1 else lt)
        if v is not None:
            enc = make_encoding(*v)
            for name in enc.tensor_specs():
                enc.array(name)


def _read_model_dir(path: str) -> None:
    src = api.open_source(str(Path(path).parent))
    for name in src.names:
        np.asarray(src.tensors[name][:])


def _read_gguf(path: str) -> None:
    src = api.open_source(path, api.SourceOptions(length=8))
    for name in src.names:
        np.asarray(src.tensors[name][:])
    config = Path(path).with_name("config.json")
    api.check_gguf(path, str(config), length=8)


def _read_onnx(path: str) -> None:
    from posenc_cli.models.onnx import read_onnx

    read_onnx(path)
    api.check_onnx(path, str(Path(path).with_name("config.json")))


def _seeds(tmp: Path) -> dict[str, tuple[list[Path], Callable[[str], None], Callable[[bytes, random.Random], bytes]]]:
    enc = api.generate("rope", length=6, dim=4)
    tables: dict[str, list[Path]] = {}
    for suffix in ("npy", "npz", "safetensors", "csv", "json"):
        path = tmp / f"seed.{suffix}"
        api.write(str(path), api.generate("sinusoidal", length=5, dim=4) if suffix in ("npy", "csv") else enc)
        tables[suffix] = [path]
    configs = [CONFIGS / "llama.json", CONFIGS / "gemma3_text.json", CONFIGS / "positions" / "pos_t5_small.json",
               CONFIGS / "positions" / "pos_bloom.json"]  # fmt: skip
    weights = tmp / "model" / "model.safetensors"
    weights.parent.mkdir()
    shutil.copy(TINY_GPT2 / "config.json", weights.parent / "config.json")
    shutil.copy(TINY_GPT2 / "model.safetensors", weights)
    gguf_dir = tmp / "gguf"
    gguf_dir.mkdir()
    (gguf_dir / "config.json").write_text(json.dumps(QWEN2_CONFIG))
    gguf = Path(_qwen2_gguf(gguf_dir / "m.gguf"))
    onnx_dir = tmp / "onnx"
    onnx_dir.mkdir()
    onnx = onnx_dir / "m.onnx"
    _onnx_seed(onnx)
    out = {name: (paths, _read_table, _mutate) for name, paths in tables.items()}
    out["config"] = (configs, _read_config, _mutate_json)
    out["weights"] = ([weights], _read_model_dir, _mutate)
    out["gguf"] = ([gguf], _read_gguf, _mutate)
    out["onnx"] = ([onnx], _read_onnx, _mutate)
    return out


def _onnx_seed(path: Path) -> None:
    from .onnx_models import genai_caches, rotary_model, save

    head, heads, maxpos, theta = 16, 2, 32, 10000.0
    config = {"model_type": "llama", "hidden_size": head * heads, "num_attention_heads": heads,
              "max_position_embeddings": maxpos, "rope_theta": theta}  # fmt: skip
    (path.parent / "config.json").write_text(json.dumps(config))
    save(rotary_model({"": genai_caches(head, theta, maxpos)}, num_heads=heads, head_size=head), str(path))


READERS = ("npy", "npz", "safetensors", "csv", "json", "config", "weights", "gguf", "onnx")


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    pytest.importorskip("gguf")
    pytest.importorskip("onnx")
    return _seeds(tmp_path_factory.mktemp("seeds"))


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_survives_mutated_files(reader, seeds, tmp_path):
    paths, read, mutate = seeds[reader]
    for path in paths:
        read(str(path))  # the seed itself is read
    rng = random.Random(f"posenc-35-{reader}")
    outcomes: set[str] = set()
    for case in range(CASES):
        seed = rng.choice(paths)
        data = mutate(seed.read_bytes(), rng)
        target = tmp_path / seed.parent.name / seed.name
        if not target.parent.exists():
            shutil.copytree(seed.parent, target.parent) if reader in ("weights", "gguf", "onnx") else (
                target.parent.mkdir(parents=True)
            )
        target.write_bytes(data)
        try:
            read(str(target))
            outcomes.add("read")
        except PosencError as exc:
            assert "\n" not in str(exc), (reader, case, str(exc))
            outcomes.add("refused")
        except Exception as exc:  # anything else is the bug this test looks for
            pytest.fail(f"{reader} case {case}: {type(exc).__name__}: {exc}"[:300])
    assert "refused" in outcomes, reader  # the loop is not vacuous: its mutations reach the readers' checks


# ----- what the longer runs of the loop found ---------------------------------------------------------------------
def test_a_gguf_string_that_is_not_utf8_is_one_line(tmp_path):
    path = Path(_qwen2_gguf(tmp_path / "m.gguf"))
    data = bytearray(path.read_bytes())
    at = data.index(b"general.architecture") + len(b"general.architecture") + 4 + 8  # value type, then length
    assert data[at : at + 5] == b"qwen2"
    data[at + 1] = 0xB2  # not UTF-8
    path.write_bytes(bytes(data))
    err = _one_line_exit_2(["generate", str(path), "--len", "4", "-o", str(tmp_path / "x.safetensors")])
    assert "general.architecture is not UTF-8 text" in err, err


def test_an_onnx_attribute_of_the_wrong_type_is_one_line(tmp_path):
    pytest.importorskip("onnx")
    from onnx import helper

    from .onnx_models import genai_caches, rotary_model, save

    model = rotary_model({"": genai_caches(16, 10000.0, 32)}, num_heads=2, head_size=16)
    node = next(n for n in model.graph.node if "Rotary" in n.op_type)
    kept = [a for a in node.attribute if a.name != "num_heads"]
    del node.attribute[:]
    node.attribute.extend([*kept, helper.make_attribute("num_heads", "two")])
    save(model, str(tmp_path / "m.onnx"))
    from posenc_cli.models.onnx import read_onnx

    with pytest.raises(PosencError, match=r"attribute num_heads is .*two.*, not a number; the model is damaged"):
        read_onnx(str(tmp_path / "m.onnx"))


def test_a_damaged_safetensors_index_is_one_line_naming_it(tmp_path_factory):
    each(
        ["{not json", "[1, 2]", '{"metadata": {}}', '{"weight_map": [1]}'],
        lambda c: _a_damaged_safetensors_index_is_one_line_naming_it(tmp_path_factory.mktemp("case"), c),
    )


def _a_damaged_safetensors_index_is_one_line_naming_it(tmp_path, text):
    """The one reader of model.safetensors.index.json (the learned tables' and the Q/K weights check's) names the
    file and raises the caller's error class: exit 2 through the CLI, never a traceback."""
    from posenc_cli.errors import ParameterError
    from posenc_cli.models.config_file import weight_map
    from posenc_cli.models.qk_weights import WeightsError

    index = tmp_path / "model.safetensors.index.json"
    index.write_text(text)
    for error in (ParameterError, WeightsError):
        with pytest.raises(error, match=r"model\.safetensors\.index\.json: (cannot read|no weight_map object)"):
            weight_map(str(index), error)
