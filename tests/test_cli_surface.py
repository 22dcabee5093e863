"""The surface of the command line: one flag means one thing in every command, every number an option takes is
checked where it enters, help fits 80 columns, and usage errors are one line.

The walk reads every command's parameters through Click's introspection of the Typer app, so a new command or
option is covered without being named here.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import pytest

from posenc_cli.cli import COMMANDS, build_command

from .conftest import cli
from .each import each


@functools.cache
def options() -> list[tuple[str, object]]:
    """(command, Click option) for every option of every command; built once in a process (15 ms a build of every
    command) and only read by the tests."""
    return [
        (name, p)
        for name in COMMANDS
        for p in build_command(name).params
        if p.param_type_name == "option" and "--help" not in p.opts
    ]


def signature(p) -> tuple:
    """Everything that makes an option mean what it means: its spellings, value type and parser, whether it is a
    flag, a count or repeatable, its default, metavar and help."""
    conv = getattr(p.type, "func", None)
    return (
        tuple(sorted(p.opts + p.secondary_opts)),
        p.name,
        type(p.type).__name__,
        getattr(conv, "__name__", None),
        getattr(conv, "__closure__", None)
        and tuple(c.cell_contents for c in conv.__closure__ if isinstance(c.cell_contents, (str, int, float))),
        p.is_flag,
        p.count,
        p.multiple,
        repr(p.default),
        p.metavar,
        p.help,
    )


def test_one_flag_means_one_thing_in_every_command():
    by_flag: dict[str, dict[tuple, list[str]]] = {}
    for command, p in options():
        for flag in p.opts + p.secondary_opts:
            by_flag.setdefault(flag, {}).setdefault(signature(p), []).append(command)
    clashes = {flag: meanings for flag, meanings in by_flag.items() if len(meanings) > 1}
    assert not clashes, "flags with two meanings:\n" + "\n".join(
        f"{flag}: " + " | ".join(f"{cmds}: {sig}" for sig, cmds in m.items()) for flag, m in clashes.items()
    )


def test_the_walk_sees_a_second_meaning():
    """The walk can fail: an option declared again with another help text is a clash."""
    import typer
    from typer.main import get_command_from_info
    from typer.models import CommandInfo

    def other(quiet: int = typer.Option(0, "--quiet", "-q", count=True, help="Something else.")) -> None: ...

    (odd,) = [
        p for p in get_command_from_info(CommandInfo(name="odd", callback=other), pretty_exceptions_short=True,
                                         rich_markup_mode=None).params if p.name == "quiet"
    ]  # fmt: skip
    (q,) = {signature(p) for _, p in options() if p.name == "quiet"}
    assert signature(odd) != q


#: options shared by every command that builds or reads tables, which each such command must take
SHARED = {
    "--quiet": set(COMMANDS),
    "--json": set(COMMANDS),
    "--max-bytes": set(COMMANDS) - {"kinds"},
    "--tensor": {"generate", "check", "compare", "identify", "export"},
    "--force": {"generate", "export", "plot"},
    "--output": {"generate", "export", "plot"},
    "--len": {"generate", "check", "compare", "export", "plot"},
    "--layer-type": {"generate", "check", "compare", "export", "plot", "kinds"},
}


def test_siblings_take_the_same_flags():
    walked = options()

    def shared(flag):
        having = {command for command, p in walked if flag in p.opts}
        assert having >= SHARED[flag], f"{flag} missing from {sorted(SHARED[flag] - having)}"

    each(SHARED, shared)


# ----- numbers, checked where they enter -------------------------------------------------------------------
def numeric_options() -> list[tuple[str, str]]:
    return [
        (command, p.opts[0] if p.opts[0].startswith("--") else p.opts[-1])
        for command, p in options()
        if getattr(getattr(p.type, "func", None), "__name__", "") in ("integer", "number")
    ]


#: a source each command can run with (small), so that only the value under test can go wrong
BASE = {
    "generate": ["sinusoidal", "-n", "8", "-d", "4", "-o", "{tmp}/out.npy"],
    "check": ["sinusoidal", "-n", "8", "-d", "4"],
    "compare": ["sinusoidal:length=8,dim=4", "sinusoidal:length=8,dim=4,base=100"],
    "identify": ["{tmp}/pe.npy"],
    "export": ["sinusoidal", "-n", "8", "-d", "4", "-o", "{tmp}/out.safetensors"],
    "plot": ["sinusoidal", "-n", "8", "-d", "4", "-o", "{tmp}/out.png"],
    "audit": [
        str(Path(__file__).resolve().parent.parent / "docs" / "examples" / "llama-3.1-8b.json"),
        "--engine",
        "hf",
    ],
}
HOSTILE = ["0", "-1", "99999999999999999999", "nan", "inf", "-inf", "1e400", "x"]


def test_every_numeric_option_is_walked():
    walked = numeric_options()
    assert {f for _, f in walked} >= {"--probes", "--seed", "--dpi", "--precision", "--max-offset", "--pair",
                                     "--positions", "--at", "--head", "--rtol", "--atol", "--max-bytes", "--len",
                                     "--dim"}  # fmt: skip


def test_a_hostile_number_is_one_line_and_exit_2_never_a_traceback(tmp_path):
    """Every numeric option of every command (:func:`tests.each.each`: each failure named)."""
    import numpy as np

    np.save(tmp_path / "pe.npy", np.cos(np.arange(32.0).reshape(8, 4)))
    each(numeric_options(), lambda case: _hostile_numbers(tmp_path, *case))


def _hostile_numbers(tmp_path, command, flag):
    base = [a.format(tmp=tmp_path) for a in BASE.get(command, [])]
    for value in HOSTILE:
        args = [command, *_without(base, {"--len": "-n", "--dim": "-d"}.get(flag)), flag, value]
        code, _, err = cli(args)
        assert "Traceback" not in err, (args, err)
        # a documented meaning is allowed (0 decimals, seed 0, atol 0, any finite absolute tolerance): exit 0 or 1
        if code in (0, 1):
            documented = value == "0" or (flag == "--atol" and math.isfinite(float(value)) and float(value) >= 0)
            assert documented and not err.startswith("Error"), (args, code, err)
            continue
        assert code == 2, (args, code, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), (args, err)
        assert value in lines[0] or value.lstrip("-") in lines[0] or flag in lines[0], (args, err)


def _without(args: list[str], short: str | None) -> list[str]:
    """``args`` without the option ``short`` and its value (the flag under test gives it instead)."""
    if short is None or short not in args:
        return args
    i = args.index(short)
    return args[:i] + args[i + 2 :]


# ----- help and usage errors -------------------------------------------------------------------------------
def test_help_fits_80_columns():
    """The root's help and every command's (:func:`tests.each.each`)."""

    def fits(command):
        code, out, err = cli([*([command] if command else []), "--help"], env={"COLUMNS": "200"})
        assert code == 0, err
        wide = [line for line in out.decode().splitlines() if len(line) > 80]
        assert not wide, wide

    each([None, *COMMANDS], fits)


USAGE_ERRORS = [
    (["generate", "--lenn", "4"], "--len"),
    (["gnerate"], "generate"),
    (["check", "--probes"], "--probes"),
    (["compare", "a.npy", "b.npy", "c.npy"], "c.npy"),
]


def test_a_usage_error_is_one_line_with_its_hint():
    def one_line(case):
        args, needle = case
        code, out, err = cli(args)
        assert code == 2 and out == b""
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and needle in lines[0], err
        assert "╭" not in err and "│" not in err  # no boxes in CI logs

    each(USAGE_ERRORS, one_line)


def test_bare_posenc_prints_help_on_stderr_exit_2():
    code, out, err = cli([])
    assert code == 2 and out == b"" and "Commands:" in err


def test_the_number_parser_rejects_what_it_should():
    from posenc_cli.cli._options import number

    parse = number(low=0, high=1, integer=False)
    assert parse("0.5") == 0.5 and parse("0") == 0.0 and parse("1") == 1.0
    for bad in ("nan", "inf", "-inf", "1.0000001", "-1e-300", "x"):
        with pytest.raises(Exception, match=re.escape(bad)):
            parse(bad)
    assert not math.isnan(number(integer=False)("1e-300"))
    ints = number(low=1)
    assert ints("7") == 7
    for bad in ("0", "1.5", "0x10", "nan"):
        with pytest.raises(Exception, match=re.escape(bad)):
            ints(bad)


def test_the_command_line_built_once_still_follows_the_terminal_width():
    """``app()`` is reused within a process, per width: help at 60 columns, then 100, then 60 again in one process
    wraps at each width, and a second run at a width reuses the group (Click keeps a run's state in its context)."""
    from posenc_cli.cli import app

    helps = {}
    for columns in ("60", "100", "60"):
        code, out, err = cli(["check", "--help"], env={"COLUMNS": columns})
        assert code == 0, err
        helps.setdefault(columns, []).append(out.decode().splitlines())
    narrow, wide = helps["60"][0], helps["100"][0]
    assert helps["60"][1] == narrow and len(narrow) > len(wide)  # wrapped at 60 again, after 100
    assert max(len(line) for line in wide) > 60 >= sorted(len(line) for line in narrow)[len(narrow) // 2]
    import os

    old = os.environ.get("COLUMNS")
    try:
        os.environ["COLUMNS"] = "100"
        first = app()
        assert app() is first
        os.environ["COLUMNS"] = "60"
        assert app() is not first
    finally:
        os.environ.pop("COLUMNS") if old is None else os.environ.__setitem__("COLUMNS", old)
    code, out, err = cli(["generate", "--len", "3", "--dim", "4", "--format", "npy"])
    code2, out2, _ = cli(["generate", "--len", "3", "--dim", "4", "--format", "npy"])
    assert code == code2 == 0 and out == out2, err
