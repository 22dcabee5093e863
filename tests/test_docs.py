"""Docs that cannot drift: README documents every command, kind, parameter, preset, check and exit code.

README's "Kinds and parameters" section is generated from the registry; refresh it with
POSENC_UPDATE_DOCS=1 python -m pytest tests/test_docs.py
"""

from __future__ import annotations

import os
import re

import pytest

from posenc_cli.encodings import KINDS, get_kind
from posenc_cli.kindinfo import kind_info

from .conftest import ROOT

README = ROOT / "README.md"
BEGIN, END = "<!-- kinds:begin -->", "<!-- kinds:end -->"


def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def kinds_section() -> str:
    out = [BEGIN, "", "_Generated from the registry by `tests/test_docs.py`; `posenc kinds KIND` prints the same._", ""]
    for name in KINDS:
        info = kind_info(get_kind(name))
        out.append(f"### `{name}`")
        out.append("")
        out.append(f"{info['summary']}. Tensors: {', '.join(f'`{t}`' for t in info['tensors'])} (primary `{info['primary']}`).")
        out.append("")
        out.append("| parameter | type | default | meaning |")
        out.append("| --- | --- | --- | --- |")
        for p in info["parameters"]:
            meaning = p["help"] + (f" (choices: {', '.join(p['choices'])})" if p["choices"] else "")
            default = "-" if p["default"] is None else f"`{p['default']}`"
            out.append(f"| `{p['name']}` | {cell(p['type'])} | {cell(default)} | {cell(meaning)} |")
        if info["presets"]:
            out.append("")
            out.append("| preset | sets | reproduces |")
            out.append("| --- | --- | --- |")
            for preset, p in info["presets"].items():
                sets = ", ".join(f"{k}={v}" for k, v in p["sets"].items())
                out.append(f"| `{preset}` | {cell(sets)} | {cell(p['doc'])} |")
        if info["references"]:
            out.append("")
            out.append("Reproduces:")
            out.append("")
            out.extend(f"- {cell(r)}" for r in info["references"])
        out.append("")
    out.append(END)
    return "\n".join(out)


def test_kinds_section_is_fresh():
    text = README.read_text()
    assert BEGIN in text and END in text
    current = text[text.index(BEGIN) : text.index(END) + len(END)]
    fresh = kinds_section()
    if os.environ.get("POSENC_UPDATE_DOCS"):
        README.write_text(text.replace(current, fresh))
        current = fresh
    assert current == fresh, "README kinds section is stale; run POSENC_UPDATE_DOCS=1 python -m pytest tests/test_docs.py"


@pytest.mark.parametrize("command", ["generate", "check", "compare", "export", "kinds"])
def test_every_command_has_a_section_with_real_output(command):
    text = README.read_text()
    assert re.search(rf"^### `posenc {command}", text, re.M), command


def test_every_check_is_documented():
    from posenc_cli.checks import CHECKS

    text = README.read_text()
    for name in CHECKS:
        assert f"`{name}`" in text, name


@pytest.mark.parametrize("code", ["0", "1", "2", "130"])
def test_exit_codes_documented(code):
    assert re.search(rf"^\| `{code}` \|", README.read_text(), re.M)


def test_exactly_two_setup_commands_and_ci_reads_them():
    text = README.read_text()
    block = text[text.index("<!-- setup:begin -->") : text.index("<!-- setup:end -->")]
    cmds = [line[2:] for line in block.splitlines() if line.startswith("$ ")]
    assert len(cmds) == 2
    assert "posenc generate --len 512 --dim 128" in cmds[0]
    assert "[test]" in cmds[1] and "pytest" in cmds[1]
    assert "setup:begin" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("framework", ["PyTorch", "JAX", "TensorFlow"])
def test_loading_in_other_frameworks_is_documented(framework):
    assert framework in README.read_text()
