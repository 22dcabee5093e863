"""One rule for a value given twice, the same from the command line and from Python: a flag and ``-p``, ``-p``
twice, a spec key and a flag, an alias and its name, ``--dtype`` and ``-p dtype`` are refused with a message
naming both places; no command chooses its own winner. And the siblings that used to disagree now agree."""

from __future__ import annotations

import json

import numpy as np
import pytest

import posenc_cli as pe
from posenc_cli.errors import DuplicateParameterError, PosencError

from .conftest import ROOT, cli
from .each import each


def test_a_value_given_twice_is_refused_naming_both(tmp_path):
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            (["generate", "--len", "8", "--dim", "4", "-p", "length=10"], ("--len 8", "-p length=10")),
            (["generate", "--len", "8", "--dim", "4", "-p", "dim=6"], ("--dim 4", "-p dim=6")),
            (["export", "sinusoidal", "--len", "8", "--dim", "4", "-p", "length=10"], ("--len 8", "-p length=10")),
            (["generate", "-n", "8", "-d", "4", "--dtype", "float32", "-p", "dtype=float64"], ("--dtype", "-p dtype")),
            (["generate", "-d", "4", "-p", "length=10", "-p", "len=12"], ("-p length=10", "-p len=12")),
            (["generate", "-d", "4", "-p", "len=12,length=10"], ("-p len=12,length=10",)),
            (
                ["check", "sinusoidal:length=8", "--len", "10", "-d", "4"],
                ("the spec 'sinusoidal:length=8'", "--len 10"),
            ),
            (["compare", "sinusoidal:dim=4", "x.npy", "--dim", "4"], ("the spec 'sinusoidal:dim=4'", "--dim 4")),
            (["plot", "sinusoidal:length=8", "-n", "8", "-d", "4", "-o", "x.png"], ("the spec", "--len 8")),
            (["generate", "sinusoidal:len=3", "--len", "3", "-d", "4"], ("the spec 'sinusoidal:len=3'", "--len 3")),
        ],
        lambda case: _given_twice(tmp_path, *case),
    )


def _given_twice(tmp_path, args, both):
    np.save(tmp_path / "x.npy", np.zeros((8, 4), np.float32))
    args = [str(tmp_path / a) if a in ("x.npy", "x.png") else a for a in args]
    code, out, err = cli(args)
    assert code == 2 and out == b"", err
    line = err.strip()
    assert "\n" not in line and line.startswith("Error: ") and "given twice" in line, err
    for place in both:
        assert place in line, (place, line)
    assert not (tmp_path / "x.png").exists()


def test_python_refuses_the_same_values_with_the_same_rule():
    with pytest.raises(DuplicateParameterError, match=r"length is given twice: the spec .* and length=8"):
        pe.generate("sinusoidal:length=10", length=8, dim=4)
    with pytest.raises(DuplicateParameterError, match="length=8 and len=10"):
        pe.generate("sinusoidal", length=8, len=10, dim=4)
    with pytest.raises(DuplicateParameterError):
        pe.check("sinusoidal:length=8,len=8")
    # once is fine, under either name
    assert pe.generate("sinusoidal:len=10", dim=4).array().shape == (10, 4)
    assert pe.generate("sinusoidal", len=10, dim=4).array().shape == (10, 4)


def test_a_preset_or_a_config_gives_way_without_a_clash():
    """Defaults are not places the user gave a value: a preset's or a config's values yield to a flag."""
    enc = pe.generate("sinusoidal:preset=tf-tutorial", length=5, dim=6, base=100)
    assert enc.base == 100
    config = ROOT / "docs" / "examples" / "llama-3.1-8b.json"
    code, _, err = cli(["generate", str(config), "--len", "16", "-p", "dim=64", "-o", "-", "-q"])
    assert code == 0, err


def test_generate_takes_a_positional_spec_or_config_like_its_siblings(tmp_path):
    out = tmp_path / "r.safetensors"
    code, _, err = cli(["generate", "rope:preset=llama3.1", "--len", "16", "--dim", "128", "-o", str(out)])
    assert code == 0, err
    from posenc_cli.formats import read_table

    t = read_table(str(out))
    assert t.metadata["scaling"] == "llama3" and t.tensors["cos"].shape == (16, 128)
    # a model config where a spec stands, and --hf-config, give the same bytes
    config = ROOT / "docs" / "examples" / "llama-3.1-8b.json"
    a, b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    assert cli(["generate", str(config), "--len", "64", "-o", str(a), "-q"])[0] == 0
    assert cli(["generate", "--hf-config", str(config), "--len", "64", "-o", str(b), "-q"])[0] == 0
    assert a.read_bytes() == b.read_bytes()
    # twice is refused
    code, _, err = cli(["generate", str(config), "--hf-config", str(config), "--len", "8", "-o", str(a), "-f"])
    assert code == 2 and "given twice" in err
    code, _, err = cli(["generate", "rope", "--kind", "sinusoidal", "-n", "8", "-d", "8", "-o", str(a), "-f"])
    assert code == 2 and "kind is given twice" in err
    # a table file is not something generate builds: the error says what to use
    code, _, err = cli(["generate", str(a)])
    assert code == 2 and "posenc export" in err


def test_a_config_stands_wherever_a_spec_does(tmp_path):
    config = ROOT / "docs" / "examples" / "llama-3.1-8b.json"
    table = tmp_path / "r.safetensors"
    assert cli(["generate", str(config), "--len", "32", "-o", str(table), "-q"])[0] == 0
    code, out, err = cli(["compare", str(table), str(config), "-q"])
    assert code == 0, (out, err)
    code, out, err = cli(["check", str(table), "--against", str(config), "-q"])
    assert code == 0, (out, err)
    code, out, err = cli(["check", str(config), "--len", "32", "-q"])
    assert code == 0, (out, err)
    # export --hf-config needs no dummy SOURCE any more
    code, _, err = cli(["export", "--hf-config", str(config), "--len", "8", "-o", str(tmp_path / "e.safetensors")])
    assert code == 0, err
    code, out, _ = cli(["kinds", str(config), "--json"])
    assert code == 0 and json.loads(out)["model_type"] == "llama"


def test_kinds_takes_quiet_like_its_siblings():
    code, out, _ = cli(["kinds", "-q"])
    assert code == 0 and b"rope" in out


def test_errors_from_python_are_posenc_errors_and_name_parameters():
    with pytest.raises(PosencError) as info:
        pe.generate("sinusoidal", length=2**40, dim=4, offset=0)
    text = str(info.value)
    assert "length" in text and "--len" not in text
    from posenc_cli.cli._options import FLAGS

    assert "--len" in info.value.render(FLAGS.get)
