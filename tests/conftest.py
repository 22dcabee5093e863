from __future__ import annotations

import ast
import contextlib
import gc
import io
import os
import pty
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# One BLAS thread per process, set before anything imports NumPy (children inherit it). OpenBLAS threads spin
# while they wait for work: with the suite on every core (pytest -n auto) they burned a quarter of the CPU time
# on small matrix products and slowed the other workers. posenc's own row-block threads are not affected.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Compiled modules are cached even where the environment asks Python not to write them (PYTHONDONTWRITEBYTECODE,
# set in some containers and CI images): without the cache every worker compiles posenc_cli and rewrites the
# asserts of every test module again at each run (7 of its 10 CPU-s of collection), and every posenc subprocess
# compiles the modules it imports. The files go to __pycache__ folders, which git ignores; a fresh checkout pays
# once. Set POSENC_TEST_NO_BYTECODE=1 to keep the environment's choice.
if not os.environ.get("POSENC_TEST_NO_BYTECODE"):
    sys.dont_write_bytecode = False


def pytest_configure(config) -> None:
    """Each pytest-xdist worker rewrites the asserts of its share of the test modules that have no current rewritten
    copy in pytest's cache, then waits for the other workers' shares, before it imports any test module.

    Each worker imports every test module, and pytest rewrites a module's asserts on import unless its cache
    (``__pycache__/*.pytest-*.pyc``) holds a current copy: on a fresh checkout - CI's, a newcomer's first run - the
    workers, importing in the same order, each rewrote all of them (5-6 CPU-s a worker, 8 s of each worker's
    11 s collection on 2 cores) for one set of files. The same pytest functions write the same files pytest's
    import hook would, and the import then finds them current. Where those functions are not what this expects
    (another pytest), or Python writes no bytecode, nothing is done and pytest rewrites on import as before: the
    result is the same, only slower."""
    workerinput = getattr(config, "workerinput", None)
    if (
        workerinput is None
        or int(workerinput.get("workercount", 1)) < 2
        or config.getvalue("assertmode") != "rewrite"
        or sys.dont_write_bytecode
    ):
        return
    try:
        _rewrite_test_modules_ahead(config, int(workerinput["workercount"]), workerinput["workerid"])
    except Exception:  # pragma: no cover - another pytest: it rewrites on import, as it always did
        return


def _rewrite_test_modules_ahead(config, workers: int, workerid: str) -> None:
    """:func:`pytest_configure`'s work in worker ``workerid`` ("gw0", "gw1", ...) of ``workers``."""
    import fnmatch
    import time

    from _pytest.assertion import rewrite

    patterns = config.getini("python_files")
    files: list[Path] = []
    for arg in config.args or ["tests"]:
        path = config.invocation_params.dir / arg.split("::")[0]
        for fn in [path] if path.is_file() else sorted(path.rglob("*.py")):
            if fn.name == "conftest.py" or any(fnmatch.fnmatch(fn.name, p) for p in patterns):
                files.append(fn)
    if len(files) < 2 * workers:
        return
    # The same shares in every worker, whatever is in the cache now (another worker may be writing it): the
    # largest first, each to the least loaded share.
    shares: list[list[Path]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for fn in sorted(files, key=lambda f: (-f.stat().st_size, str(f))):
        k = loads.index(min(loads))
        shares[k].append(fn)
        loads[k] += fn.stat().st_size

    def pyc(fn: Path) -> Path:
        return rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)

    state = config.stash[rewrite.assertstate_key]
    mine = int(workerid.removeprefix("gw")) % workers
    for fn in shares[mine]:
        if rewrite._read_pyc(fn, pyc(fn)) is None and rewrite.try_makedirs(pyc(fn).parent):
            try:
                key, co = rewrite._rewrite_test(fn, config)
            except SyntaxError:  # pytest's import says it, in the test report
                continue
            rewrite._write_pyc(state, co, key, pyc(fn))

    # The others' shares: wait for each file that was not current when looked at (the stat taken before the
    # look, so a file written in between is seen), while they make progress (a file takes 0.3 s at most here):
    # what a worker did not write in time (it stopped, the file does not parse) is left to pytest's import.
    def stamp(fn: Path) -> tuple[int, int] | None:
        try:
            st = os.stat(pyc(fn))
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns

    before = {fn: stamp(fn) for k, share in enumerate(shares) if k != mine for fn in share}
    waiting = {fn: st for fn, st in before.items() if rewrite._read_pyc(fn, pyc(fn)) is None}
    last_progress = time.monotonic()
    while waiting and time.monotonic() - last_progress < 3.0:
        time.sleep(0.02)
        still = {fn: st for fn, st in waiting.items() if stamp(fn) == st}
        if len(still) < len(waiting):
            last_progress = time.monotonic()
        waiting = still


def parse(source: str) -> ast.Module:
    """``ast.parse(source)``. Not kept: the package's trees (2 MB of text, millions of nodes) alive in a test
    process made their own parse twice as slow (1.6 CPU-s instead of 0.7) and added 0.4 CPU-s to each later full
    garbage collection of the process; the import graph, which most house tests read, comes from compiled code
    (test_import_graph), and each remaining scan parses what it reads once."""
    return ast.parse(source)


def pytest_collection_finish(session) -> None:
    """What collection made (the modules of posenc, NumPy and the tests, parametrize data, golden files) lives to
    the end of the process: it moves to the collector's permanent generation (``gc.freeze``), so each later full
    collection - a few during the run, and the unraisable-exception plugin's at the end - walks only what the
    tests made since (0.3 CPU-s less a worker over 1000 tests). No test changes: a frozen object that a test
    turns into cyclic garbage stays in memory until the process ends (reference counting frees the rest).
    The tests' own objects and every posenc process are collected as before."""
    gc.freeze()


#: What a copy of the checkout leaves out: environments, caches and build output (as .ci/run's copy does).
NOT_CHECKOUT = (
    ".venv",
    ".git",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".mypy_cache",
    ".ruff_cache",
    "*.egg-info",
    "build",
    "dist",
)


def copy_checkout(dest: Path) -> Path:
    """A copy of the repository at ``dest`` (sources, docs, examples, test data): a place where the commands
    README.md and docs/ show run from the repository root, as a reader types them, and may write files."""
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(*NOT_CHECKOUT), dirs_exist_ok=True)
    return dest


@pytest.fixture(scope="session")
def checkout(tmp_path_factory) -> Path:
    """One copy of the checkout per test process (:func:`copy_checkout`: 19 MB, 0.3 CPU-s and 0.3-1 s of disk a
    copy), shared by the tests that run commands from the repository root: in it, the files they create removed
    after each (:func:`in_checkout`), or in a new tree of hard links to it (:func:`link_checkout`). Nothing
    changes a file of it."""
    return copy_checkout(tmp_path_factory.mktemp("checkout") / "repo")


def link_checkout(template: Path, dest: Path) -> Path:
    """A new tree at ``dest`` of hard links to the files of ``template`` (0.02 CPU-s: no copy of each folder's
    times and modes, which ``shutil.copytree`` made 0.12): the files a command creates there are its own; one
    that wrote into an existing file would change the template (posenc writes a new file and renames it into
    place)."""
    src = os.fspath(template)
    for folder, _, files in os.walk(src):
        target = os.path.join(dest, os.path.relpath(folder, src))
        os.makedirs(target)
        for name in files:
            os.link(os.path.join(folder, name), os.path.join(target, name))
    return Path(dest)


def _tree(root: Path) -> tuple[dict[str, tuple[int, int, int]], set[str]]:
    """The files (anything but a folder, links included) under ``root`` with (inode, size, modification time),
    and its folders; paths relative to ``root``."""
    files: dict[str, tuple[int, int, int]] = {}
    folders: set[str] = set()
    stack = [("", os.fspath(root))]
    while stack:
        rel, folder = stack.pop()
        with os.scandir(folder) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    folders.add(rel + e.name)
                    stack.append((rel + e.name + "/", e.path))
                else:
                    st = e.stat(follow_symlinks=False)
                    files[rel + e.name] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return files, folders


#: template -> its tree as the last :func:`in_checkout` left it (the state after one use is the state before the next)
_TREES: dict[Path, tuple[dict[str, tuple[int, int, int]], set[str]]] = {}


@contextlib.contextmanager
def in_checkout(template: Path, what: str = "a command") -> Iterator[Path]:
    """Run in ``template`` (the session's :func:`checkout`) itself, as in a tree of its own: the files and folders
    created there are removed after, and a file of it that was written, replaced or removed fails (what a tree
    of hard links to it, :func:`link_checkout`, gave for 283 folders and 1005 links a use, and pytest's
    clean-up of them at the end)."""
    before_files, before_folders = _TREES.get(template) or _tree(template)
    try:
        yield template
    finally:
        after_files, after_folders = _tree(template)
        for rel in after_files.keys() - before_files.keys():
            os.unlink(template / rel)
        for rel in sorted(after_folders - before_folders, key=len, reverse=True):  # the deepest first
            os.rmdir(template / rel)
        kept = {rel: st for rel, st in after_files.items() if rel in before_files}
        _TREES[template] = kept, before_folders & after_folders
        changed = sorted({f for f, st in before_files.items() if kept.get(f) != st} | (before_folders - after_folders))
        assert not changed, f"{what} changed files of the checkout: {changed}"


def posenc_cmd() -> list[str]:
    """The real command: the installed console script when it is this checkout's, else ``python -m posenc_cli``."""
    return [sys.executable, "-m", "posenc_cli"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("_POSENC")}
    env.update({"COLUMNS": "120", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)})
    env.update(extra)
    return env


def run(
    args: list[str],
    *,
    input: bytes | None = None,
    cwd: Path | None = None,
    env: dict | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    return subprocess.run(
        posenc_cmd() + args, input=input, capture_output=True, cwd=cwd, env=env or clean_env(), timeout=timeout
    )


def run_tty(
    args: list[str], *, cwd: Path | None = None, timeout: float = 60, env: dict | None = None
) -> tuple[int, str]:
    """Run with stdout on a pseudo-terminal (stderr too); return (exit code, what the terminal showed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        posenc_cmd() + args, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, cwd=cwd, env=env or clean_env()
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
    rc = proc.wait(timeout=timeout)
    os.close(master)
    return rc, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def completion_env(line: str, shell: str = "bash") -> dict[str, str]:
    """The environment a shell's completion script gives ``posenc`` to complete ``line`` (the command line up to
    the cursor), in Typer's protocol."""
    env = {"_POSENC_COMPLETE": f"complete_{shell}"}
    if shell == "bash":
        words = line.split()
        if line.endswith(" ") or not words:
            words.append("")
        env.update({"COMP_WORDS": " ".join(words), "COMP_CWORD": str(len(words) - 1)})
    else:
        env["_TYPER_COMPLETE_ARGS"] = line
        if shell == "fish":
            env["_TYPER_COMPLETE_FISH_ACTION"] = "get-args"
        if shell == "powershell":
            env["_TYPER_COMPLETE_WORD_TO_COMPLETE"] = "" if line.endswith(" ") else line.split()[-1]
    return env


def completion_values(out: str, shell: str = "bash") -> list[str]:
    """The candidates in what ``posenc`` printed for ``shell``'s completion script (help texts dropped)."""
    import re

    if shell == "zsh":
        if out.strip() in ("", "_files"):
            return []
        body = out[out.index("((") + 2 : out.rindex("))")]
        return [v.replace("\\\\:", ":").replace('""', '"') for v in re.findall(r'^"((?:[^"]|"")*)"', body, re.M)]
    lines = [line for line in out.splitlines() if line.strip()]
    if shell == "fish":
        return [line.split("\t")[0] for line in lines]
    if shell == "powershell":
        return [line.split(":::")[0] for line in lines]
    return lines


@pytest.fixture
def posenc():
    return run


#: What matplotlib's savefig writes into the picture's file under :func:`undrawn`.
UNDRAWN = b"\x89PNG picture"


@pytest.fixture
def undrawn(monkeypatch):
    """matplotlib's savefig writes :data:`UNDRAWN` into the (atomic writer's) file instead of drawing: for a test
    that reads a figure (titles, panels, pixel size) or what reached it, not its pixels. Drawing costs 0.2-1.5
    CPU-s a picture; test_plot.py draws every view and reads its pixels back."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    monkeypatch.setattr(Figure, "savefig", lambda self, fh, **kwargs: fh.write(UNDRAWN))


class _TerminalBuffer(io.BytesIO):
    """Bytes that say they are a terminal: what posenc asks with ``isatty()`` (preview, width, no binary)."""

    def isatty(self) -> bool:
        return True


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _main_in_process(args: list[str], stdin: bytes, out: io.BytesIO, err: io.BytesIO, env: dict[str, str]) -> int:
    """``posenc ARGS`` in this process with the given streams and environment (restored after); the exit code.

    Warnings are printed on stderr under Python's default filters, as a fresh interpreter would, rather than
    collected by pytest: a warning the real command prints shows in the output the tests compare."""
    from posenc_cli.cli import main

    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    # what this run sets or removes is put back after it, and everything when the command itself changed the
    # environment (a clear and refill of os.environ each time cost 0.3 ms a command, thousands of commands a run)
    old_env = os.environ.copy()
    touched = {k: v for k, v in old_env.items() if k.startswith("_POSENC")}
    touched.update({k: old_env.get(k) for k in env})
    for key in touched:
        os.environ.pop(key, None)
    os.environ.update(env)
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.showwarning = _show_warning
            main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        wrappers = sys.stdin, sys.stdout, sys.stderr
        sys.stdin, sys.stdout, sys.stderr = saved
        for w in wrappers:
            w.flush()
            w.detach()  # closing a wrapper would close the buffer read by the caller
        for key, value in touched.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if dict(os.environ) != old_env:
            os.environ.clear()
            os.environ.update(old_env)
    return code


def cli(args: list[str], *, input: bytes = b"", env: dict | None = None) -> tuple[int, bytes, str]:
    """Run the command line in this process (stdout and stderr are pipes, not terminals): (exit code, stdout
    bytes, stderr text). For argument handling, rendering and exit codes; `run` is for real processes."""
    out, err = io.BytesIO(), io.BytesIO()
    code = _main_in_process(args, input, out, err, {"COLUMNS": "120", "NO_COLOR": "1", **(env or {})})
    return code, out.getvalue(), err.getvalue().decode("utf-8", "replace")


def cli_tty(args: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> tuple[int, str]:
    """:func:`run_tty`'s interface in this process: stdout and stderr are one terminal (``isatty()`` is true,
    UTF-8, interleaved as written), stdin is empty and not a terminal, like ``</dev/null``. (exit code, what
    the terminal showed). Only ``env`` sets the width (``COLUMNS``): there is no real terminal to ask."""
    screen = _TerminalBuffer()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        code = _main_in_process(args, b"", screen, screen, dict(env or {}))
    finally:
        os.chdir(old)
    return code, screen.getvalue().decode("utf-8", "replace")


def inproc(
    args: list[str],
    *,
    input: bytes | None = None,
    cwd: Path | None = None,
    env: dict | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    """:func:`run`'s interface, in this process (:func:`cli`): for tests of arguments, output and exit codes,
    where a real process adds only start-up time. Pipes, signals, terminals and installs use :func:`run`."""
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        extra = None if env is None else {k: v for k, v in env.items() if os.environ.get(k) != v}
        code, out, err = cli(args, input=input or b"", env=extra)
    finally:
        os.chdir(old)
    return subprocess.CompletedProcess(args, code, out, err.encode())
