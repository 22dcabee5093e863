"""The house: a kind is one module + one registry line, nothing outside encodings/ names a kind, and the
public Python API is what README shows.

The toy-kind test copies the package to a temporary directory, adds one module and one line to the registry
there, and drives the real command line of that copy: the new kind shows up in ``posenc kinds``, builds with
``generate``, passes ``check`` with the properties it declares (``matches-spec`` included) and completes.
"""

from __future__ import annotations

import ast
import compileall
import doctest
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import posenc_cli
from posenc_cli.encodings import KINDS

from .conftest import ROOT, cli, completion_env, in_checkout, parse

TOY_MODULE = '''
"""A toy kind for tests: pe[t, j] = cos(t / (j + 1)), one module, one registry line."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Encoding, TensorSpec, param


@dataclass(frozen=True)
class Toy(Encoding):
    """pe[t, j] = cos(scale * t / (j + 1))."""

    KIND = "toy"
    SUMMARY = "a toy kind that exists only in tests"
    REFERENCES = ("tests/test_house.py",)
    PROPERTIES = {"finite": True, "bounded": True, "matches-spec": True, "decay": False}
    VIEWS = ("heatmap",)
    scale: float = param(1.0, "positions are multiplied by this", low=0.0, low_open=True)

    def tensor_specs(self) -> dict[str, TensorSpec]:
        return {"pe": TensorSpec("pe", (self.length, self.dim), self.out_dtype)}

    def _rows(self, name: str, start: int, stop: int) -> np.ndarray:
        t = np.arange(start, stop, dtype=np.float64)[:, None]
        return np.cos(self.scale * t / np.arange(1, self.dim + 1)[None, :])
'''


@pytest.fixture(scope="module")
def toy_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("toy")
    # (bytecode is copied with its sources, as their times are: it stays valid for every file but the two changed)
    shutil.copytree(ROOT / "posenc_cli", root / "posenc_cli")
    enc_dir = root / "posenc_cli" / "encodings"
    (enc_dir / "toy.py").write_text(TOY_MODULE)
    registry = enc_dir / "__init__.py"
    text = registry.read_text()
    anchor = '    "relative": ("relative", "ShawRelative"),\n'
    assert anchor in text
    registry.write_text(text.replace(anchor, anchor + '    "toy": ("toy", "Toy"),\n'))  # the one line
    # Compiled once here: the test runs the copy five times, and where PYTHONDONTWRITEBYTECODE is set (or the
    # checkout has no bytecode) each run would compile the whole package from source (~0.4 CPU-s a run).
    compileall.compile_dir(root / "posenc_cli", quiet=1)
    return root


#: ``posenc ARGS`` for each (args, environment) of argv[1], one after the other in this interpreter (the copy's
#: package on its path): [(exit code, stdout, stderr)] on stdout as JSON.
TOY_RUNS = """
import io, json, os, sys
from posenc_cli.cli import main
base, results, real_stdout = dict(os.environ), [], sys.stdout
for args, env in json.loads(sys.argv[1]):
    os.environ.clear()
    os.environ.update({**base, **env})
    out, err = io.BytesIO(), io.BytesIO()
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    sys.stdout.flush()
    sys.stderr.flush()
    results.append([code, out.getvalue().decode(), err.getvalue().decode()])
real_stdout.write(json.dumps(results))
"""


def toy_runs(root: Path, cases: list[tuple[list[str], dict[str, str]]]) -> list[tuple[int, str, str]]:
    """(exit code, stdout, stderr) of each ``posenc ARGS`` with its environment, run by the copy at ``root`` in one
    fresh interpreter (a new process per command cost 0.35 CPU-s each, five times)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("_POSENC")}
    full.update({"PYTHONPATH": str(root), "COLUMNS": "120", "NO_COLOR": "1"})
    proc = subprocess.run(
        [sys.executable, "-c", TOY_RUNS, json.dumps(cases)], capture_output=True, env=full, cwd=root, timeout=120
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return [tuple(r) for r in json.loads(proc.stdout)]


def test_a_toy_kind_is_one_module_and_one_registry_line(toy_root):
    out = toy_root / "toy.safetensors"
    kinds, kind, generate, check, complete = toy_runs(
        toy_root,
        [
            (["kinds"], {}),
            (["kinds", "toy", "--json"], {}),
            (["generate", "--kind", "toy", "-n", "16", "-d", "4", "-p", "scale=0.5", "-o", str(out)], {}),
            (["check", str(out), "--json"], {}),
            ([], completion_env("posenc generate --kind to")),
        ],
    )
    assert kinds[0] == 0 and "toy" in kinds[1], kinds[2]
    assert kind[0] == 0 and '"scale"' in kind[1], kind[2]
    assert generate[0] == 0, generate[2]
    assert check[0] == 0, check[2] + check[1]
    (report,) = json.loads(check[1])
    assert report["kind"] == "toy"
    assert report["required"] == ["finite", "matches-spec", "bounded", "distinct"]  # distinct: every table's
    assert {r["name"] for r in report["results"]} == {"finite", "matches-spec", "bounded", "distinct", "decay"}
    assert complete[1].split() == ["toy"], complete
    # and the values are the module's formula, read back through a posenc reader
    from posenc_cli.formats import read_table

    pe = read_table(str(out)).tensors["pe"]
    t = np.arange(16)[:, None]
    np.testing.assert_allclose(pe, np.cos(0.5 * t / np.arange(1, 5)[None, :]), rtol=1e-6)


def test_a_toy_kind_is_missing_without_its_line(toy_root):
    """The fixture's registry line is what makes the toy kind exist (the test above can fail)."""
    code, _, err = cli(["generate", "--kind", "toy", "-n", "4", "-d", "4", "-o", os.devnull, "--force"])
    assert code == 2 and "unknown encoding 'toy'" in err  # (this checkout's package, in this process)


# ----- no module outside encodings/ names a kind -----------------------------------------------------------
#: Property names that happen to equal a kind's name: allowed only as keys of the checks registry.
PROPERTY_NAMES = {"relative"}


#: Where a string constant equal to a kind's name can stand in a module's text: between quotes, or beside an
#: f-string's braces (f"{x}rope"). A module whose text has none holds no such constant and is not parsed (most
#: of the package: parsing every module cost 0.6 CPU-s a run).
KIND_SPELLED = re.compile(
    r"(?<=[\"'}])(?:" + "|".join(map(re.escape, sorted(KINDS, key=len, reverse=True))) + r")(?=[\"'{])"
)


def kind_literals(path: Path) -> list[tuple[int, str]]:
    text = path.read_text()
    if not KIND_SPELLED.search(text):
        return []
    tree = parse(text)
    named: list[ast.Constant] = []
    check_keys: set[int] = set()
    for node in ast.walk(tree):  # one walk: CHECKS = {"relative": CheckDef(...)} and verdict("relative", ...)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str) and node.value in KINDS:
                named.append(node)
        elif isinstance(node, ast.Dict):
            check_keys.update(id(k) for k in node.keys if k is not None)
        elif (
            isinstance(node, ast.Call)
            and node.args
            and getattr(node.func, "id", "") in ("verdict", "skipped", "CheckResult")
        ):
            check_keys.add(id(node.args[0]))
    return sorted(
        (node.lineno, node.value) for node in named if not (node.value in PROPERTY_NAMES and id(node) in check_keys)
    )


def test_no_module_outside_encodings_names_a_kind():
    offenders = []
    for path in sorted((ROOT / "posenc_cli").rglob("*.py")):
        # models/ turns a model's own description into kind specs (STYLE.md), so its readers name the kinds
        # they build; every other module learns kinds from the registry
        if {"encodings", "models"} & set(path.relative_to(ROOT / "posenc_cli").parts):
            continue
        offenders += [f"{path.relative_to(ROOT)}:{line}: {value!r}" for line, value in kind_literals(path)]
    assert not offenders, "kind names outside encodings/:\n" + "\n".join(offenders)


def test_the_kind_name_scan_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('if kind == "alibi":\n    pass\nCHECKS = {"relative": 1}\nx = "relative"\n')
    assert kind_literals(bad) == [(1, "alibi"), (4, "relative")]
    # the text filter lets every spelling of such a constant through to the parse, and nothing else
    for source in ["x = 'rope'\n", "x = f'{y}rope'\n", 'x = f"rope{y}"\n', 'x = """alibi"""\n']:
        bad.write_text(source)
        assert [value for _, value in kind_literals(bad)], source
    bad.write_text("x = 'property'  # rope\n")
    assert kind_literals(bad) == []


# ----- the public API ----------------------------------------------------------------------------------------
def test_public_api_is_complete():
    """Every name of ``__all__`` resolves (that ``import posenc_cli`` imports no NumPy until one is used is
    test_startup.py's test_the_public_api_imports_nothing_heavy_until_used, in its fresh interpreter)."""
    for name in posenc_cli.__all__:
        assert getattr(posenc_cli, name) is not None, name
    with pytest.raises(AttributeError):
        posenc_cli.no_such_thing  # noqa: B018


def test_api_docstring_examples_run():
    from posenc_cli import api

    result = doctest.testmod(api, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0


def python_blocks() -> list[tuple[str, str]]:
    blocks = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for code in re.findall(
            r"<!-- python:begin -->\n```python\n(.*?)```\n<!-- python:end -->", path.read_text(), re.S
        ):
            blocks.append((path.name, code))
    return blocks


def test_docs_have_a_python_example():
    assert any(name == "python-api.md" for name, _ in python_blocks())


@pytest.mark.parametrize("name,code", python_blocks(), ids=[n for n, _ in python_blocks()])
def test_python_examples_run(monkeypatch, checkout, name, code):
    """Each marked Python block of README and docs/, executed as written from (a copy of) the repository root: the
    session's copy (``conftest.in_checkout``), where the files an example writes are removed after it; one that
    wrote into, replaced or removed a file of the copy fails."""
    with in_checkout(checkout, f"{name}: the example") as root:
        monkeypatch.chdir(root)
        exec(compile(code, name, "exec"), {})


def test_api_names_parameters_as_every_other_surface():
    with pytest.raises(posenc_cli.ParameterError, match=r"unknown parameter 'lenght'.*did you mean 'length'"):
        posenc_cli.generate("sinusoidal", lenght=4, dim=4)
    enc = posenc_cli.generate("sinusoidal", len=4, dim=4)  # 'len' is another name for 'length'
    assert enc.length == 4 and enc.metadata()["length"] == "4"
    assert posenc_cli.generate("SINUSOIDAL:length=4,dim=4") == enc


def test_api_check_and_compare_return_typed_results(tmp_path):
    enc = posenc_cli.generate("rope", length=64, dim=16)
    path = tmp_path / "rope.safetensors"
    posenc_cli.write(path, enc)
    report = posenc_cli.check(path)
    assert isinstance(report, posenc_cli.CheckReport) and report.ok and report.kind == "rope"
    assert report.to_json()["required"] == report.required
    assert "pythagorean" in report.required
    res = posenc_cli.compare(path, "rope:base=500000")
    assert isinstance(res, posenc_cli.Comparison) and not res.same
    assert [t.name_a for t in res.tensors] == ["cos", "sin", "inv_freq"]  # every tensor, not the first only
    assert all(isinstance(t.result, posenc_cli.CompareResult) for t in res.tensors)
    cos = res.tensors[0]
    assert cos.result.to_json()["mismatched"] > 0 and cos.diagnosis.best.name == "parameter-base"  # explained
    assert "base 500000" in res.to_json()["tensors"][0]["diagnosis"]["summary"]
    with pytest.raises(posenc_cli.InputError):
        posenc_cli.read(tmp_path / "missing.npy")


def test_export_casts_bfloat16_files_so_metadata_equals_the_bytes(tmp_path):
    """A bfloat16 posenc file exported with dtype=float32 holds float32 bytes and says float32 (NumPy calls
    bfloat16's kind 'V', which the cast used to skip, writing BF16 bytes under float32 metadata)."""
    from posenc_cli.formats import read_table

    src = tmp_path / "pe_bf16.safetensors"
    posenc_cli.write(src, posenc_cli.generate("sinusoidal", length=16, dim=8, dtype="bfloat16"))
    for suffix in ("safetensors", "npz", "npy"):
        out = tmp_path / f"x.{suffix}"
        posenc_cli.write(out, src, dtype="float32")
        table = read_table(str(out))
        assert table.tensors["pe"].dtype == np.float32, suffix
        if table.metadata:
            assert table.metadata["dtype"] == "float32", suffix
        ref = read_table(str(src)).tensors["pe"].astype(np.float32)
        np.testing.assert_array_equal(table.tensors["pe"], ref)
    assert posenc_cli.check(tmp_path / "x.safetensors").ok


# ----- metadata equals the bytes, for every writer x dtype x source dtype --------------------------------
DTYPES = ("float64", "float32", "float16", "bfloat16")
WRITERS = ("safetensors", "npz", "npy", "csv", "json")


def test_written_metadata_equals_the_bytes(tmp_path):
    """Export a posenc file of each source dtype to each writer with each dtype (100 cases, one test: a test id
    per case added only pytest's per-test cost; the four sources are written once), read it back with posenc's
    reader (and NumPy's where it can): the tensor's dtype and shape are what the metadata says, kind and
    parameters are the source's, and ``check`` regenerates it (matches-spec). Every case runs; each failure is
    named."""
    failures = []
    sources = {}
    for source_dtype in DTYPES:
        enc = posenc_cli.generate("rope", length=12, dim=8, dtype=source_dtype, base=500.0)
        src = tmp_path / f"src-{source_dtype}.safetensors"
        posenc_cli.write(src, enc)
        sources[source_dtype] = (src, enc)
    for writer, source_dtype, dtype in itertools.product(WRITERS, DTYPES, (None, *DTYPES)):
        case = f"{writer}-{source_dtype}-{dtype}"
        try:
            _check_written_metadata(tmp_path / case, *sources[source_dtype], writer, source_dtype, dtype)
        except (Exception, pytest.fail.Exception) as exc:  # every case runs; the failures are named together
            failures.append(f"{case}: {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures)


def _check_written_metadata(where, src, enc, writer, source_dtype, dtype):
    from posenc_cli.formats import read_table

    where.mkdir()
    out = where / f"out.{writer}"
    want = dtype or source_dtype
    # a one-tensor format takes the table only when tensors= chooses one
    chosen = {"tensors": ["cos"]} if writer in ("npy", "csv") else {}
    if writer in ("npy", "npz") and want == "bfloat16":  # NumPy has no bfloat16: refused by name
        with pytest.raises(posenc_cli.ParameterError, match="bfloat16"):
            posenc_cli.write(out, src, dtype=dtype, **chosen)
        return
    posenc_cli.write(out, src, dtype=dtype, **chosen)
    table = read_table(str(out))
    names = ["cos"] if writer in ("npy", "csv") else ["cos", "sin", "inv_freq"]
    npy_name = {"npy": "pe"}.get(writer)
    got = {n: table.tensors[npy_name or n] for n in names}
    for name, array in got.items():
        spec = enc.tensor_specs()[name]
        assert array.shape == spec.shape, (name, array.shape)
        expect = want if name != "inv_freq" else "float64"  # inv_freq keeps its own float64
        assert str(array.dtype) == expect, (name, array.dtype, expect)
    if writer == "npy":
        assert table.metadata == {}  # .npy holds no metadata: nothing that could disagree
        return
    meta = table.metadata
    assert meta["kind"] == "rope" and meta["base"] == "500.0" and meta["length"] == "12" and meta["dim"] == "8"
    assert meta["dtype"] == want
    coarser = {"float64": 0, "float32": 1, "float16": 2, "bfloat16": 3}
    if coarser[source_dtype] > coarser[want]:
        assert meta["value_dtype"] == source_dtype
    else:
        assert "value_dtype" not in meta
    if writer != "csv":  # one tensor of a rope table cannot be regenerated-and-compared as a whole
        report = posenc_cli.check(out)
        assert report.ok, [r.to_json() for r in report.results if r.passed is False]


def test_all_is_every_export():
    assert set(posenc_cli.__all__) == {"__version__", *posenc_cli._EXPORTS}


def test_checking_a_spec_measures_every_tensor_it_has():
    """A spec computes its primary tensor first; the others must still be judged (the rotary pair checks)."""
    report = posenc_cli.check("rope:length=64,dim=16")
    assert {"pythagorean", "norm-preserving", "relative", "long-term-decay"} <= {r.name for r in report.results}
    assert "pythagorean" in report.required
