"""Docs that cannot drift: every command shown in README.md and docs/*.md runs, and prints what is shown.

A ```console block holds ``$ `` command lines, each followed by the output a person sees on an 80-column
terminal (stdout and stderr; ``(exit N)`` after a non-zero exit). The blocks of one file run in order, from the
repository root as a reader types them: in the test process's copy of the checkout (``conftest.checkout``), so
commands that write files leave the repository alone; the files a file's commands create are removed after it
(``conftest.in_checkout``), and a command that changed a file of the copy fails. A picture ``posenc plot -o``
writes is not drawn (:func:`undrawn_pictures`). A plain ``posenc ARGS`` line runs in this process on a stand-in
terminal (``conftest.cli_tty``: isatty, 80 columns, stdout and stderr interleaved, stdin empty);
so do the simple shell lines :func:`in_process_plan` knows (``;``, ``> FILE``, posenc piped into ``cut``,
``python -c CODE``, ``python SCRIPT ARGS``: a Python interpreter and NumPy started per line cost more than
what most of these lines do); anything else (``posenc ... | posenc ...``, variables, ``&&``) runs through bash
on a pseudo-terminal. ``test_the_in_process_terminal_shows_what_the_pty_shows`` and
``test_shell_lines_run_in_this_process_as_bash_runs_them`` hold the two to the same output. Outputs are
compared after normalising only the temporary directory's path, with numbers compared as numbers
(``tests/printed_numbers.py``: their last digits change with the CPU's vector width). The block after
``<!-- norun: WHY -->`` is not run (the set-up commands, which ``.ci/run`` runs); the block after
``<!-- needs: MODULE -->`` runs only where MODULE imports (an optional extra, e.g. ``gguf``): without it the block
is left as written, and a file whose every block needs a missing module is skipped with the reason.

``docs/kinds.md`` is generated from the kind declarations; refresh it and every shown output with
``POSENC_UPDATE_DOCS=1 python -m pytest tests/test_docs.py`` (an output that agrees with what is shown is left
as written).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import pty
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from posenc_cli.cli import COMMANDS
from posenc_cli.encodings import KINDS, get_kind
from posenc_cli.kindinfo import kind_info

from .conftest import ROOT, UNDRAWN, _main_in_process, _TerminalBuffer, cli_tty, in_checkout
from .each import each
from .printed_numbers import assert_same_output, disagreement

README = ROOT / "README.md"
DOCS = ROOT / "docs"
DOC_FILES = [README, *sorted(DOCS.glob("*.md"))]
UPDATE = bool(os.environ.get("POSENC_UPDATE_DOCS"))
if UPDATE and os.environ.get("PYTEST_XDIST_WORKER"):  # three tests rewrite docs/kinds.md: one process, in order
    raise pytest.UsageError("refresh the docs without -n: POSENC_UPDATE_DOCS=1 python -m pytest tests/test_docs.py")
BLOCK = re.compile(
    r"(?P<pre><!-- norun: [^>]*-->\n)?(?:<!-- needs: (?P<needs>[\w.]+) -->\n)?```console\n(?P<body>.*?)```\n", re.S
)


def missing_module(m: re.Match) -> str | None:
    """The module a ``<!-- needs: MODULE -->`` block needs, when it does not import here; else None."""
    name = m.group("needs")
    return name if name and importlib.util.find_spec(name) is None else None


# ----- running the shown commands ------------------------------------------------------------------------
TERMINAL = {"COLUMNS": "80", "LINES": "40", "NO_COLOR": "1", "TERM": "dumb"}
#: A shown command that is one posenc call and nothing for a shell to do: no pipe, redirection, quote,
#: variable, glob, comment or second command.
PLAIN_POSENC = re.compile(r"posenc( [^|&;<>()$`\\\"'*?~#\[\]{}\n]*)?")


def shown_output(text: str, code: int, cwd: Path) -> str:
    """What a console block shows for a command that printed ``text`` and exited with ``code``."""
    text = text.replace("\r\n", "\n").replace(str(cwd), ".")
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return (text + "\n" if text else "") + (f"(exit {code})\n" if code else "")


def run_shown(command: str, cwd: Path) -> str:
    """A shown command's output on an 80-column terminal: in this process when it is a plain posenc call or a
    line :func:`in_process_plan` can run; through bash otherwise."""
    if PLAIN_POSENC.fullmatch(command):
        code, text = cli_tty(shlex.split(command)[1:], cwd=cwd, env=TERMINAL)
        return shown_output(text, code, cwd)
    plan = in_process_plan(command)
    if plan is None:
        return shell(command, cwd)
    screen = _TerminalBuffer()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        code = 0
        for pipeline, redirect in plan:
            code = _run_pipeline(pipeline, redirect, screen)
    finally:
        os.chdir(old)
    return shown_output(screen.getvalue().decode("utf-8", "replace"), code, cwd)


# ----- a few shell lines without a shell ---------------------------------------------------------------------
#: Outside quotes, characters bash would expand or treat as syntax this runner does not know (``|``, ``;`` and
#: ``>`` it knows); inside double quotes, the ones bash expands there.
_SHELL_SYNTAX = set("$`\\*?[]{}~#&<()!")
_QUOTED_SYNTAX = set("$`\\!")
#: Shell builtins that change the shell itself: a line with one goes to bash.
_BUILTINS = {"cd", "export", "set", "source", ".", "exit", "alias", "unset", "read", "exec", "eval", "ulimit",
             "umask", "pushd", "popd", "shopt", "trap", "wait", "test", "["}  # fmt: skip


def _words(command: str) -> list[str] | None:
    """The words and operators (``|``, ``;``, ``>``) of a shell line, with quotes removed as bash removes them;
    None when the line holds anything else a shell would interpret (variables, globs, ``&&``, ``2>``...)."""
    out: list[str] = []
    word: str | None = None
    quote = ""
    for ch in command:
        if quote:
            if ch == quote:
                quote = ""
            elif quote == '"' and ch in _QUOTED_SYNTAX:
                return None
            else:
                word += ch  # type: ignore[operator]
        elif ch in "'\"":
            quote, word = ch, word or ""
        elif ch in " \t":
            if word is not None:
                out.append(word)
            word = None
        elif ch in "|;>":
            if word is not None:
                if word.isdigit():  # 2> and the like
                    return None
                out.append(word)
            word = None
            out.append(ch)
        elif ch in _SHELL_SYNTAX:
            return None
        else:
            word = (word or "") + ch
    if quote:
        return None
    if word is not None:
        out.append(word)
    return out


Stage = list[str]


def in_process_plan(command: str) -> list[tuple[list[Stage], str | None]] | None:
    """How to run a shell line without a shell: [(pipeline, file its output goes to)], one per ``;``-separated
    command; None when bash must run it.

    What this runner knows: ``posenc ARGS`` as a stage of a pipeline (in this process, stdin the bytes the
    stage before wrote, stdout a pipe or the file, stderr the terminal), ``python -c CODE`` and ``python SCRIPT
    ARGS`` alone (in this process), other programs as stages (real processes: ``cut``, ``cat``), ``> FILE``
    after the last stage. The stages run one after the other: what they print is the same, and the bytes a real
    pipe carries between two posenc processes (a stdin that cannot seek, a reader that stops early) are
    tests/test_pipelines.py's (test_pipe_into_check_reads_a_non_seekable_stdin, test_broken_pipe_is_quiet)."""
    words = _words(command)
    if not words:
        return None
    plan: list[tuple[list[Stage], str | None]] = []
    for part in _split(words, ";"):
        redirect = None
        if ">" in part:
            if part.count(">") > 1 or part.index(">") != len(part) - 2 or part[-1] in "|;>":
                return None
            part, redirect = part[:-2], part[-1]
        pipeline = _split(part, "|")
        if not all(pipeline) or any(w in ("|", ";", ">") for stage in pipeline for w in stage):
            return None
        for stage in pipeline:
            name = stage[0]
            if "=" in name or name in _BUILTINS:
                return None
            if _is_python(stage) and len(pipeline) > 1:
                return None
            if name in ("python", "python3") and not _is_python(stage):
                return None
            if name not in ("posenc", "python", "python3") and shutil.which(name) is None:
                return None
        if redirect is not None and _is_python(pipeline[-1]):
            return None
        plan.append((pipeline, redirect))
    return plan


def _split(words: list[str], op: str) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for w in words:
        if w == op:
            parts.append([])
        else:
            parts[-1].append(w)
    return parts


def _is_python(stage: Stage) -> bool:
    """``python -c CODE`` or ``python SCRIPT.py ARGS`` (no interpreter options)."""
    if stage[0] not in ("python", "python3") or len(stage) < 2:
        return False
    return (stage[1] == "-c" and len(stage) == 3) or stage[1].endswith(".py")


def _run_pipeline(pipeline: list[Stage], redirect: str | None, screen: io.BytesIO) -> int:
    """Run one pipeline's stages in turn, each reading what the one before wrote; the last one's exit code."""
    data, code = b"", 0
    for i, stage in enumerate(pipeline):
        last = i == len(pipeline) - 1
        sink: io.BytesIO | None = None if last and redirect is None else io.BytesIO()
        if stage[0] == "posenc":
            code = _main_in_process(stage[1:], data, sink if sink is not None else screen, screen, TERMINAL)
        elif _is_python(stage):
            code = _python_in_process(stage, screen)
        else:
            proc = subprocess.run(stage, input=data, capture_output=True, env=_shell_env())
            (sink if sink is not None else screen).write(proc.stdout)
            screen.write(proc.stderr)
            code = proc.returncode
        data = sink.getvalue() if sink is not None else b""
    if redirect is not None:
        Path(redirect).write_bytes(data)
    return code


def _python_in_process(stage: Stage, screen: io.BytesIO) -> int:
    """``python -c CODE`` / ``python SCRIPT ARGS`` in this process, its output on the terminal: the exit code
    (a traceback and 1 for an exception, as the interpreter gives)."""
    import runpy
    import traceback

    saved, argv, path = (sys.stdin, sys.stdout, sys.stderr), sys.argv, sys.path[:]
    term = io.TextIOWrapper(screen, encoding="utf-8", write_through=True)
    sys.stdin, sys.stdout, sys.stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), term, term
    try:
        if stage[1] == "-c":
            sys.argv = ["-c"]
            sys.path.insert(0, "")
            exec(compile(stage[2], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        else:
            sys.argv = stage[1:]
            sys.path.insert(0, str(Path(stage[1]).resolve().parent))
            runpy.run_path(stage[1], run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=term)
    except Exception:
        traceback.print_exc(file=term)
        code = 1
    finally:
        term.flush()
        term.detach()
        (sys.stdin, sys.stdout, sys.stderr), sys.argv, sys.path[:] = saved, argv, path
    return code


def _shell_env() -> dict[str, str]:
    """The environment :func:`shell` gives bash: this interpreter first on PATH, the checkout on PYTHONPATH."""
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("_POSENC")}
    env.update({**TERMINAL, "PATH": f"{bindir}:{env['PATH']}", "PYTHONPATH": str(ROOT)})
    return env


def shell(command: str, cwd: Path) -> str:
    """``command`` through bash with stdout and stderr on a pseudo-terminal of 80 columns; what it showed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        ["bash", "-c", command], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, cwd=cwd, env=_shell_env()
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    code = proc.wait(timeout=120)
    os.close(master)
    return shown_output(b"".join(chunks).decode("utf-8", "replace"), code, cwd)


def split_block(body: str) -> list[tuple[str, str]]:
    """(command, shown output) pairs of a console block."""
    pairs: list[tuple[str, str]] = []
    for line in body.splitlines(keepends=True):
        if line.startswith("$ "):
            pairs.append((line[2:].rstrip("\n"), ""))
        elif pairs:
            pairs[-1] = (pairs[-1][0], pairs[-1][1] + line)
    return pairs


def refreshed(shown: str, real: str) -> str:
    """The output to show after a refresh: what is shown, as written, unless ``real`` says something else
    (``tests/printed_numbers.py``: a number's last digits change with the CPU, and nobody changed them)."""
    return shown if disagreement(shown, real) is None else real


def run_file(path: Path, template: Path) -> tuple[str, list[tuple[str, str, str]]]:
    """Run every console block of ``path`` from ``template``, the session's copy of the checkout
    (``conftest.in_checkout``: the files its commands create are removed after it; a command that wrote,
    replaced or removed a file of the copy fails); (the text with refreshed outputs, [(command, shown, real)]).
    A picture ``posenc plot -o`` writes is not drawn (:func:`undrawn_pictures`). A page with nothing to run
    runs nothing."""
    text = path.read_text()
    if not any(not m.group("pre") and not missing_module(m) for m in BLOCK.finditer(text)):
        return text, []
    with in_checkout(template, f"{path.name}: a shown command") as root, undrawn_pictures("posenc plot" in text):
        return _run_blocks(path, root)


@contextlib.contextmanager
def undrawn_pictures(plots: bool) -> Iterator[None]:
    """With ``plots``, matplotlib's savefig writes ``conftest.UNDRAWN`` into a picture's file instead of
    drawing it (``conftest.undrawn``): what ``posenc plot -o`` prints (the view, format and pixel size) comes from
    the figure, not from the drawn file, and drawing cost 0.3-1.3 CPU-s a picture. The pixels of every view and
    format are tests/test_plot.py's (and README's pictures test_readme_pictures_are_current's)."""
    if not plots or importlib.util.find_spec("matplotlib") is None:
        yield
        return
    from matplotlib.figure import Figure

    saved = Figure.savefig
    Figure.savefig = lambda self, fh, **kwargs: fh.write(UNDRAWN)  # type: ignore[method-assign]
    try:
        yield
    finally:
        Figure.savefig = saved  # type: ignore[method-assign]


def _run_blocks(path: Path, root: Path) -> tuple[str, list[tuple[str, str, str]]]:
    results = []

    def rerun(m: re.Match) -> str:
        if m.group("pre") or missing_module(m):
            return m.group(0)
        out = []
        for command, shown in split_block(m.group("body")):
            real = run_shown(command, root)
            results.append((command, shown, real))
            out.append(f"$ {command}\n{refreshed(shown, real)}")
        needs = f"<!-- needs: {m.group('needs')} -->\n" if m.group("needs") else ""
        return needs + "```console\n" + "".join(out) + "```\n"

    text = path.read_text()
    return BLOCK.sub(rerun, text), results


#: ``<!-- needs: MODULE -->`` in a doc: its commands need an optional extra (docs/onnx.md: onnx)
NEEDS = re.compile(r"<!-- needs: ([\w.]+) -->")


@pytest.mark.parametrize("path", DOC_FILES, ids=[p.name for p in DOC_FILES])
def test_every_shown_command_prints_what_is_shown(path, checkout):
    for module in NEEDS.findall(path.read_text()):
        pytest.importorskip(module, reason=f"{path.name} shows commands that need the {module} extra")
    fresh, results = run_file(path, checkout)
    if UPDATE:
        path.write_text(fresh)
        return
    # every shown command ran (a block the runner skipped would compare nothing and pass)
    text = path.read_text()
    blocks = list(BLOCK.finditer(text))
    assert len(blocks) == text.count("```console\n")
    run_blocks = [m for m in blocks if not m.group("pre") and not missing_module(m)]
    missing = sorted({mod for m in blocks if (mod := missing_module(m))})
    if missing and not run_blocks:
        pytest.skip(f"every block of {path.name} needs {', '.join(missing)} (an optional extra), which does not import")
    shown_commands = [line[2:] for m in run_blocks for line in m.group("body").splitlines() if line.startswith("$ ")]
    assert [command for command, _, _ in results] == shown_commands
    for command, shown, real in results:
        assert_same_output(shown, real, what=f"{path.name}: `{command}`")


def test_the_runner_can_fail(tmp_path, checkout):
    doc = tmp_path / "doc.md"
    doc.write_text("```console\n$ echo hi\nho\n$ posenc kinds nokind\nno\n```\n")
    _, results = run_file(doc, checkout)
    assert results[0] == ("echo hi", "ho\n", "hi\n")
    assert results[1][:2] == ("posenc kinds nokind", "no\n") and results[1][2].endswith("(exit 2)\n")
    assert shell("exit 3", tmp_path) == "(exit 3)\n"


def test_a_command_that_writes_into_a_file_of_the_checkout_fails(tmp_path):
    """A doc's commands run in the session's copy of the checkout: the files and folders they create are removed
    after the doc, and a command that wrote into, replaced or removed one of its files would change what the next
    doc reads: that fails. (Its own small template here, not the session's checkout.)"""
    template = tmp_path / "template"
    template.mkdir()
    (template / "notes.txt").write_text("kept\n")
    (template / "other.txt").write_text("other\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "```console\n$ echo new > fresh.txt; mkdir -p out/deep; cp notes.txt out/deep; cat notes.txt\nkept\n```\n"
    )
    _, results = run_file(doc, template)  # new files and folders of its own are fine, and removed after
    assert results == [(doc.read_text().split("\n")[1][2:], "kept\n", "kept\n")]
    assert sorted(p.name for p in template.iterdir()) == ["notes.txt", "other.txt"]
    for bad, changed in [("echo more >> notes.txt", "notes.txt"), ("cp notes.txt x; mv x other.txt", "other.txt"),
                         ("rm notes.txt", "notes.txt")]:  # fmt: skip
        doc.write_text(f"```console\n$ {bad}\n```\n")
        with pytest.raises(
            AssertionError, match=rf"doc.md: a shown command changed files of the checkout: \['{changed}'\]"
        ):
            run_file(doc, template)


def test_a_refresh_rewrites_only_outputs_that_really_differ(tmp_path, checkout):
    """POSENC_UPDATE_DOCS=1 leaves an output whose numbers differ only in their last digits as written."""
    doc = tmp_path / "doc.md"
    kept = (
        "```console\n"
        "$ echo residual 3.269059611898939e-08 on 64 rows\n"
        "residual 3.269059600796709e-08 on 64 rows\n"
        "$ echo max rel. diff 1.1e-16\n"
        "max rel. diff 0\n"
        "```\n"
    )
    changed = "```console\n$ echo 0.545 on 65 rows\n0.541 on 64 rows\n$ echo same 1.5\nsame 1.5\n```\n"
    doc.write_text("Text 3.2 around.\n\n" + kept + "\nbetween\n\n" + changed)
    fresh, results = run_file(doc, checkout)
    assert fresh == "Text 3.2 around.\n\n" + kept + "\nbetween\n\n" + changed.replace("0.541 on 64", "0.545 on 65")
    assert [real for _, _, real in results][:2] == [
        "residual 3.269059611898939e-08 on 64 rows\n",
        "max rel. diff 1.1e-16\n",
    ]
    assert refreshed("x 1.0000000000000002\n", "x 1.0\n") == "x 1.0000000000000002\n"
    assert refreshed("x 1.0\n", "x 1.5\n") == "x 1.5\n"


#: Each argument ``posenc ARGS`` run one after the other in this interpreter as the console script runs it
#: (``sys.argv``, ``main()``), on the interpreter's real terminal; after each, a line with its exit code.
PTY_RUNS = """
import os, shlex, sys
from posenc_cli.cli import main
for line in sys.argv[1:]:
    sys.argv = shlex.split(line)
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    sys.stdout.flush()
    sys.stderr.flush()
    os.write(1, f"@@exit {code}@@\\n".encode())
"""
#: What the stand-in terminal is held to: an error and exit 2 (an unknown --require check is the same one error
#: line), a preview, a written file's message and note on stderr, a check's report, terminal panels.
TERMINAL_CASES = [
    "posenc kinds nokind",
    "posenc generate --len 5 --dim 6 -p preset=tf-tutorial",
    "posenc generate --len 64 --dim 16 -o pe.npy",
    "posenc check table.npy --expect sinusoidal",
    "posenc plot table.npy",
]


def test_the_in_process_terminal_shows_what_the_pty_shows(tmp_path):
    """The stand-in terminal gives what a real process on an 80-column pseudo-terminal gives: previews,
    widths, messages on stderr in their place, exit codes. The real side is one fresh interpreter on a real
    pseudo-terminal running the commands in turn as the console script does (:data:`PTY_RUNS`; a process per
    command cost 0.2 CPU-s each)."""
    assert all(PLAIN_POSENC.fullmatch(command) for command in TERMINAL_CASES)
    assert cli_tty(["generate", "--len", "64", "--dim", "16", "-o", "table.npy"], cwd=tmp_path)[0] == 0
    shown = shell(shlex.join(["python", "-c", PTY_RUNS, *TERMINAL_CASES]), tmp_path)
    parts = re.split(r"@@exit (\d+)@@\n", shown)
    assert len(parts) == 2 * len(TERMINAL_CASES) + 1 and parts[-1] == "", shown
    real = {}
    for command, text, code in zip(TERMINAL_CASES, parts[0::2], parts[1::2]):
        text = text + "\n" if text and not text.endswith("\n") else text
        real[command] = text + (f"(exit {code})\n" if code != "0" else "")
    (tmp_path / "pe.npy").unlink()

    def same(command: str) -> None:
        assert run_shown(command, tmp_path) == real[command]

    each(TERMINAL_CASES, same)


#: One line of what :func:`in_process_plan` runs without a shell, each through bash once: a pipe into posenc (from
#: ``cat``) and from it into another program, ``>`` (stdout to the file, stderr on the terminal), ``;``, quotes,
#: ``python -c`` and ``python SCRIPT ARGS``. Two posenc processes (0.3 CPU-s each): a pipe between two posenc
#: processes adds nothing the runner does differently (its stages run in turn either way).
SHELL_LINE = (
    "cat t.npy | posenc export - -o - --format csv | cut -d, -f1-2 > t.csv; cat t.csv; "
    "posenc kinds nokind > out.txt; python -c \"print(repr(open('out.txt').read()))\"; python s.py x 'y z'"
)


def test_shell_lines_run_in_this_process_as_bash_runs_them(tmp_path):
    """The lines :func:`in_process_plan` runs without a shell show what bash on a pseudo-terminal shows
    (:data:`SHELL_LINE`: their output, exit code and files). (A traceback would differ: it would show this
    runner's frames, so a page showing one fails here rather than passing.)"""
    (tmp_path / "s.py").write_text("import sys\nprint(sys.argv[1:])\nprint('bye', file=sys.stderr)\nsys.exit(3)\n")
    assert cli_tty(["generate", "--len", "3", "--dim", "4", "-o", "t.npy"], cwd=tmp_path)[0] == 0
    assert in_process_plan(SHELL_LINE) is not None
    real = shell(SHELL_LINE, tmp_path)
    for made in ("t.csv", "out.txt"):
        (tmp_path / made).unlink()
    assert run_shown(SHELL_LINE, tmp_path) == real
    # what the line does: cut's columns; the error on the terminal, nothing in the file; the script's arguments,
    # stderr and exit code
    lines = real.splitlines()
    assert lines[0].startswith("# posenc ") and lines[1] == "0.0,1.0" and len(lines[3].split(",")) == 2, real
    assert lines[4].startswith("Error: unknown encoding 'nokind'"), real
    assert real.endswith("\n''\n['x', 'y z']\nbye\n(exit 3)\n"), real


#: Lines :func:`in_process_plan` leaves to bash (one test over them: an id per line added only pytest's cost).
SHELL_SYNTAX = [
    "cat x | python -c 'print(1)'",
    "posenc kinds 2> x",
    "posenc kinds > a > b",
    "posenc kinds && cat x",
    "echo $HOME",
    'echo "$HOME"',
    "ls *.npy",
    "cd docs; ls",
    "FOO=1 posenc kinds",
    "python -u x.py",
    "posenc kinds # all",
    "no-such-program-here x",
    "echo 'open",
]


def test_shell_syntax_runs_in_a_shell():
    def in_bash(command: str) -> None:
        assert not PLAIN_POSENC.fullmatch(command)
        assert in_process_plan(command) is None

    each(SHELL_SYNTAX, in_bash)


def test_every_console_block_is_run_or_says_why_not():
    for path in DOC_FILES:
        text = path.read_text()
        for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
            if "$ " in m.group(2) and m.group(1) != "console":
                pytest.fail(f"{path.name}: a ```{m.group(1)} block shows commands; make it ```console so it runs")


def test_readme_is_short():
    assert len(README.read_text().splitlines()) <= 200


# ----- generated reference: docs/kinds.md -----------------------------------------------------------------
def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


KINDS_BEGIN, KINDS_END = "<!-- kinds:begin -->", "<!-- kinds:end -->"


def kinds_reference() -> str:
    out = [
        KINDS_BEGIN,
        "",
        "_Generated from the kind declarations by `tests/test_docs.py`; `posenc kinds KIND` prints the same._",
        "",
    ]
    for name in KINDS:
        info = kind_info(get_kind(name))
        out += [f"## `{name}`", ""]
        out.append(
            f"{info['summary']}. Tensors: {', '.join(f'`{t}`' for t in info['tensors'])} (primary `{info['primary']}`)."
        )
        required = [p for p, how in info["properties"].items() if how == "required"]
        reported = [p for p, how in info["properties"].items() if how != "required"]
        out.append("")
        out.append(
            f"`check` requires {', '.join(f'`{p}`' for p in required)}"
            + (f"; reports {', '.join(f'`{p}`' for p in reported)}" if reported else "")
            + "."
        )
        if info["views"]:
            out.append(f"Plot views: {', '.join(f'`{v}`' for v in info['views'])}.")
        if info["reads_model_config"]:
            out.append("Built from a model's config.json with `--hf-config`.")
        out += ["", "| parameter | type | default | meaning |", "| --- | --- | --- | --- |"]
        for p in info["parameters"]:
            meaning = p["help"] + (f" (choices: {', '.join(p['choices'])})" if p["choices"] else "")
            default = "-" if p["default"] is None else f"`{p['default']}`"
            out.append(f"| `{p['name']}` | {cell(p['type'])} | {cell(default)} | {cell(meaning)} |")
        if info["presets"]:
            out += ["", "| preset | sets | reproduces |", "| --- | --- | --- |"]
            for preset, p in info["presets"].items():
                sets = ", ".join(f"{k}={v}" for k, v in p["sets"].items())
                out.append(f"| `{preset}` | {cell(sets)} | {cell(p['doc'])} |")
        if info["references"]:
            out += ["", "Reproduces:", ""]
            out.extend(f"- {cell(r)}" for r in info["references"])
        out.append("")
    out.append(KINDS_END)
    return "\n".join(out)


def assert_block_fresh(path: Path, begin: str, end: str, fresh: str) -> None:
    """The generated block of ``path`` between ``begin`` and ``end`` equals ``fresh`` (rewritten when updating)."""
    text = path.read_text()
    assert begin in text and end in text
    current = text[text.index(begin) : text.index(end) + len(end)]
    if UPDATE:
        path.write_text(text.replace(current, fresh))
        current = fresh
    assert current == fresh, f"{path.name} {begin} is stale; run python tools/regen_docs.py"


def test_kinds_reference_is_fresh():
    assert_block_fresh(DOCS / "kinds.md", KINDS_BEGIN, KINDS_END, kinds_reference())


FAMILIES_BEGIN, FAMILIES_END = "<!-- families:begin -->", "<!-- families:end -->"


def families_reference() -> str:
    """The model families with a record written for them (posenc_cli/models/records.py) and the configs the
    tests use; docs/families.md (tools/families.py) lists every model type."""
    from posenc_cli.models.records import COMMON_TOP, RECORDS

    configs = {p.stem: p for p in sorted((ROOT / "tests" / "data" / "configs").glob("*.json"))}
    out = [
        FAMILIES_BEGIN,
        "",
        "_Generated from the records by `tests/test_docs.py`._",
        "",
        "| model_type | kind, layout | per-layer types | keys of its own | follows | try it |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, rec in RECORDS.items():
        if rec.scheme not in ("rope", "mrope"):
            continue
        names = [name] + [w for w, r in RECORDS.items() if r.text_model_type == name]
        layers = "NoPE: " + ", ".join(rec.nope) if rec.nope else ("yes" if rec.layers else "-")
        example = next((configs[n] for n in names if n in configs), None)
        cmd = f"`posenc kinds --hf-config {example.relative_to(ROOT)}`" if example else "-"
        own = sorted((rec.known_top() - set(COMMON_TOP)) | set(rec.rope_keys))
        keys = ", ".join(f"`{k}`" for k in own) or "-"
        layout = rec.pairing if not rec.sectioned else f"{rec.pairing}, sections {rec.mrope_sections}"
        out.append(
            f"| {', '.join(f'`{n}`' for n in names)} | {rec.scheme}, {layout} | {cell(layers)} | {keys} | "
            f"{cell(rec.reference)} | {cmd} |"
        )
    out += ["", FAMILIES_END]
    return "\n".join(out)


def test_families_reference_is_fresh():
    assert_block_fresh(DOCS / "kinds.md", FAMILIES_BEGIN, FAMILIES_END, families_reference())


POSITIONS_BEGIN, POSITIONS_END = "<!-- positions:begin -->", "<!-- positions:end -->"


def positions_reference() -> str:
    """The non-rotary model families --hf-config reads, from posenc_cli.models.hf_positions' own table."""
    import json

    from posenc_cli.models.hf_positions import FAMILIES as POSITIONS

    configs = {p.stem: p for p in sorted((ROOT / "tests" / "data" / "configs" / "positions").glob("*.json"))}
    models = {p.name: p for p in sorted((ROOT / "tests" / "data" / "models").iterdir())}
    # the learned tables' tiny model folders, as their golden file names them (tools/golden/make_learned_golden.py)
    golden = json.loads((ROOT / "tests" / "data" / "golden" / "learned_tables.json").read_text())["types"]
    learned = {mt: ROOT / "tests" / "data" / "models" / g["fixture"] for mt, g in golden.items()}
    out = [
        POSITIONS_BEGIN,
        "",
        "_Generated from the reader's family table by `tests/test_docs.py`._",
        "",
        "| model_type | kind per layer type | follows | try it |",
        "| --- | --- | --- | --- |",
    ]
    for name, fam in POSITIONS.items():
        kinds = ", ".join(f"{lt}: {layer.kind}" for lt, layer in fam.layers.items())
        stem = {"speech_to_text": "s2t", "m2m_100": "m2m100", "deberta-v2": "deberta_v3"}.get(name, name)
        example = next((p for s, p in configs.items() if s.startswith(f"pos_{stem}")), None)
        example = example or learned.get(name) or models.get(f"tiny_{stem}")
        cmd = f"`posenc kinds --hf-config {example.relative_to(ROOT)}`" if example else "-"
        out.append(f"| `{name}` | {kinds} | {cell(fam.reference)} | {cmd} |")
    out += ["", POSITIONS_END]
    return "\n".join(out)


def test_positions_reference_is_fresh():
    assert_block_fresh(DOCS / "kinds.md", POSITIONS_BEGIN, POSITIONS_END, positions_reference())


# ----- coverage of the reference ----------------------------------------------------------------------------
def docs_text() -> str:
    return "\n".join(p.read_text() for p in DOC_FILES)


# ----- counts in prose come from the registries -------------------------------------------------------------
NUMBER_WORDS = {
    word: n
    for n, word in enumerate(
        ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"),
        1,
    )
}  # fmt: skip
#: "the twelve kinds", "13 encoding kinds", "all seven commands": a number, at most one word, a counted noun.
STATED_COUNT = re.compile(
    rf"\b(?P<number>\d+|{'|'.join(NUMBER_WORDS)})\s+(?:[\w-]+\s+)?(?P<noun>kinds|presets|commands)\b", re.I
)
#: Counts in prose that are not the registry's total: (file, the phrase) -> why.
NOT_TOTALS = {
    ("inspect.md", "Three commands"): "compare, identify and check --against: the ones that look inside a table",
}


def registry_counts() -> dict[str, int]:
    """How many kinds, presets (over every kind) and commands posenc has."""
    presets = sum(len(kind_info(get_kind(name))["presets"]) for name in KINDS)
    return {"kinds": len(KINDS), "presets": presets, "commands": len(COMMANDS)}


def stated_counts(text: str) -> list[tuple[str, int, str]]:
    """(phrase, number, noun) for each count of kinds, presets or commands stated in ``text``'s prose (code
    blocks and inline code are left out: a command line's ``--len 5 -p preset=...`` is not a count)."""
    prose = re.sub(r"```.*?```|`[^`\n]*`", "", text, flags=re.S)
    found = []
    for m in STATED_COUNT.finditer(prose):
        word = m.group("number").lower()
        found.append((m.group(0), int(word) if word.isdigit() else NUMBER_WORDS[word], m.group("noun").lower()))
    return found


def test_stated_counts_are_found():
    text = "Of the twelve kinds, 23 preset presets; Three commands. `--len 5 presets` and\n```\n4 kinds\n```\n"
    assert stated_counts(text) == [("twelve kinds", 12, "kinds"), ("23 preset presets", 23, "presets"),
                                   ("Three commands", 3, "commands")]  # fmt: skip
    assert stated_counts("one kind, 2-D/3-D kinds, one grammar for every command") == []


def test_counts_in_prose_are_the_registrys():
    """A number of kinds, presets or commands stated in README or docs/ is the registry's count."""
    counts = registry_counts()

    def stated(name: str) -> None:
        for phrase, number, noun in stated_counts(Path(ROOT, name).read_text()):
            if (Path(name).name, phrase) in NOT_TOTALS:
                continue
            assert number == counts[noun], f"'{phrase}', but posenc has {counts[noun]} {noun}"

    each([str(p.relative_to(ROOT)) for p in DOC_FILES], stated)


def test_the_synopsis_names_every_command():
    synopsis = (DOCS / "cli.md").read_text().split("\n\n")[1]
    assert synopsis.startswith("`posenc COMMAND [OPTIONS]`: ")
    named = re.findall(r"`(\w+)`", synopsis.split(". ")[0])
    assert named == list(COMMANDS)


def test_every_command_is_documented_with_its_help():
    text = (DOCS / "cli.md").read_text()
    assert [c for c in COMMANDS if f"$ posenc {c} --help" not in text] == []


def test_every_check_is_documented():
    from posenc_cli.checks import CHECKS

    text = (DOCS / "checks.md").read_text()
    for name in CHECKS:
        assert f"`{name}`" in text, name


def test_exit_codes_documented():
    text = (DOCS / "cli.md").read_text()
    assert [code for code in ("0", "1", "2", "130") if not re.search(rf"^\| `{code}` \|", text, re.M)] == []


def test_exactly_two_setup_commands_and_ci_reads_them():
    text = README.read_text()
    block = text[text.index("<!-- setup:begin -->") : text.index("<!-- setup:end -->")]
    cmds = [line[2:] for line in block.splitlines() if line.startswith("$ ")]
    assert len(cmds) == 2
    assert "posenc generate --len 512 --dim 128" in cmds[0]
    assert "[test]" in cmds[1] and "pytest" in cmds[1]
    assert "setup:begin" in (ROOT / ".ci" / "run").read_text()


def test_ci_runs_the_golden_tests_again_on_the_x86_64_baseline():
    """.ci/run's second run names test files that exist (this one among them) under the lowered dispatch."""
    script = (ROOT / ".ci" / "run").read_text()
    listed = re.search(r"^golden_tests=\(\n(.*?)^\)", script, re.M | re.S)
    assert listed, ".ci/run lists its docs and golden-output tests in golden_tests=( ... )"
    tests = [line.split("#")[0].strip() for line in listed.group(1).splitlines() if line.split("#")[0].strip()]
    assert "tests/test_docs.py" in tests and "tests/test_render.py" in tests
    for test in tests:
        assert (ROOT / test.split("::")[0]).is_file(), test
    assert 'baseline="X86_V3 X86_V4 AVX512_ICL AVX512_SPR"' in script
    assert 'NPY_DISABLE_CPU_FEATURES="$baseline" "$work/.venv/bin/python" -m pytest' in script


def test_loading_in_other_frameworks_is_documented():
    text = (DOCS / "formats.md").read_text()
    assert [f for f in ("PyTorch", "JAX", "TensorFlow") if f not in text] == []


def test_readme_links_every_doc():
    text = README.read_text()
    docs = ["kinds.md", "cli.md", "checks.md", "formats.md", "python-api.md", "performance.md"]
    assert [doc for doc in docs if f"docs/{doc}" not in text] == []


def test_every_help_fits_80_columns():
    from .conftest import cli

    for command in ("", "generate", "check", "compare", "export", "plot", "kinds"):
        code, out, _ = cli([command, "--help"] if command else ["--help"], env={"COLUMNS": "200"})
        assert code == 0
        for line in out.decode().splitlines():
            assert len(line) <= 80, (command, line)
