"""The library is the only door (issue 31 item 4): every verdict comes from an ``api`` function as a typed report,
``render.py`` renders every report, ``cli/`` parses, calls the library once and renders; and an option declares
which sources it applies to (:mod:`posenc_cli.scopes`), one mechanism refusing it elsewhere by name."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import posenc_cli as pe
from posenc_cli import api, scopes
from posenc_cli.errors import ParameterError
from posenc_cli.reports import Verdicts

from .conftest import cli, parse
from .each import each

PKG = Path(pe.__file__).parent
CLI = PKG / "cli"
DATA = Path(__file__).parent / "data"
GEMMA3 = str(DATA / "configs" / "gemma3_text.json")
PHI3 = str(DATA / "configs" / "phi3.json")
GGUF = str(DATA / "llamacpp" / "gemma3.gguf")
GGUF_CONFIG = str(DATA / "llamacpp" / "gemma3.config.json")

#: what cli/ may not import: the readers (sources, models) and the inspection code that decides verdicts
FORBIDDEN = ("sources", "models", "identification", "diagnose", "metrics", "analysis", "hints", "tolerance", "inspect")
#: flags whose applicability the scopes declare: no cli module names them to refuse them itself
SCOPED_FLAGS = ("--len", "--dim", "-p", "--dtype", "--grid", "--layer-type", "--read-as", "--engine", "--max-model-len",
                "--n-ctx", "--tensor", "--expect", "--require", "--no-identify", "--atol", "--rtol", "--no-explain",
                "--all-layer-types", "--kind", "--hf-config", "--engines")  # fmt: skip


def _imports(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module:
            out.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("posenc_cli."):
            out.append(node.module.split(".", 1)[1])  # type: ignore[union-attr]
    return out


def violations(root: Path) -> list[str]:
    """Where a cli module imports a reader or inspection module, defines a verdict (a function named like one),
    or keeps a list of refused scoped flags (a call of ``refuse`` naming one)."""
    out = []
    for path in sorted(root.glob("*.py")):
        if path.name == "_options.py":  # the declarations themselves
            continue
        tree = parse(path.read_text())
        for mod in _imports(tree):
            if mod.split(".")[0] in FORBIDDEN:
                out.append(f"{path.name} imports {mod}")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and ("verdict" in node.name or node.name.endswith("_against")):
                out.append(f"{path.name} defines {node.name}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "refuse":
                named = [c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and c.value in SCOPED_FLAGS]
                if named:
                    out.append(f"{path.name}:{node.lineno} refuses {', '.join(named)} itself")
    return out


def test_no_cli_module_reads_sources_decides_a_verdict_or_keeps_a_refusal_list():
    assert violations(CLI) == []


def test_the_house_test_can_fail(tmp_path):
    """The scan finds each kind of violation in a module written the old way."""
    (tmp_path / "check.py").write_text(
        "from ..sources import is_gguf\n"
        "from ..models.llamacpp import verdict\n"
        "def gguf_verdicts(texts):\n"
        "    refuse([('--dim', 1), ('--engine', 'vllm')], 'a GGUF file')\n"
    )
    found = violations(tmp_path)
    assert "check.py imports sources" in found and "check.py imports models.llamacpp" in found
    assert "check.py defines gguf_verdicts" in found
    assert any("refuses --dim, --engine itself" in f for f in found), found


def test_every_scoped_option_is_a_parameter_the_flags_spell():
    from posenc_cli.cli._options import FLAGS

    assert set(scopes.SCOPES) <= set(FLAGS), set(scopes.SCOPES) - set(FLAGS)


# ----- one mechanism: each option refused where it cannot apply, by name, one line, exit 2 ---------------------
def test_an_option_is_refused_where_it_cannot_apply():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            (
                ["compare", f"{PHI3}@mlx", f"{PHI3}@hf", "--len", "8", "--max-model-len", "4096"],
                "--max-model-len",
                "engine vllm",
            ),
            (["check", str(DATA / "hf_cos.npy"), "--n-ctx", "4096"], "--n-ctx", "GGUF files"),
            (
                ["compare", "rope", "sinusoidal", "--layer-type", "full_attention", "-n", "4", "-d", "4"],
                "--layer-type",
                "model configs",
            ),
            (["check", GGUF, "--against", GGUF_CONFIG, "--engine", "vllm"], "--engine", "model configs"),
            (["compare", GGUF, GGUF_CONFIG, "--tensor", "cos"], "--tensor", "tables"),
            (["generate", "rope", "--all-layer-types", "-n", "4", "-d", "4"], "--all-layer-types", "model configs"),
            (["kinds", GGUF, "--layer-type", "full_attention"], "--layer-type", "model configs"),
            (["identify", str(DATA / "hf_cos.npy"), "--len", "8"], "--len", "GGUF files"),
            (["export", str(DATA / "hf_cos.npy"), "-o", "/dev/null", "--engine", "mlx"], "--engine", "model configs"),
        ],
        lambda case: _refused_where_it_cannot_apply(*case),
    )


def _refused_where_it_cannot_apply(args, flag, where):
    code, out, err = cli(args)
    assert code == 2 and out == b"", err
    assert err.startswith(f"Error: {flag} cannot apply: ") and where in err and err.count("\n") == 1, err


def test_the_library_refuses_with_the_parameter_names():
    with pytest.raises(ParameterError, match=r"^n_ctx cannot apply: the source is a file"):
        api.check_sources([str(DATA / "hf_cos.npy")], options=api.SourceOptions(n_ctx=8))


# ----- every verdict a typed report from one api call --------------------------------------------------------
def test_check_sources_returns_typed_verdicts():
    found = api.check_sources([GGUF], against=GGUF_CONFIG, options=api.SourceOptions(length=32))
    assert isinstance(found, Verdicts) and found.what == "gguf" and found.ok
    (v,) = found.items
    assert sorted(v.numbers) == ["full_attention", "sliding_attention"]
    found = api.check_sources(["rope"], options=api.SourceOptions(length=16, dim=8))
    assert found.what == "check" and isinstance(found.items[0], pe.CheckReport)


def test_compare_sources_returns_one_comparison_per_layer_type():
    found = api.compare_sources(f"{GEMMA3}@mlx", f"{GEMMA3}@hf", options=api.SourceOptions(length=16))
    assert found.what == "compare" and found.ok
    assert [c.layer_type for c in found.items] == ["full_attention", "sliding_attention"]
    assert all(isinstance(c, pe.Comparison) for c in found.items)


def test_the_cli_renders_what_the_api_returns():
    """--json of check is render.verdicts_json of the same api call."""
    from posenc_cli.render import verdicts_json

    code, out, _ = cli(["check", GGUF, "--against", GGUF_CONFIG, "--len", "32", "--json"])
    found = api.check_sources([GGUF], against=GGUF_CONFIG, options=api.SourceOptions(length=32))
    assert code == 0 and json.loads(out) == json.loads(json.dumps(verdicts_json(found)))


def test_describe_is_what_kinds_shows():
    d = api.describe(GEMMA3)
    assert d.what == "config" and d.several and len(d.data) == 2
    d = api.describe(GGUF, n_ctx=4096)
    assert d.what == "gguf" and any(name == "n_ctx" or "ctx" in name for name, _, _ in d.data)
