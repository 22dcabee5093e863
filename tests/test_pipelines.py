"""Real processes, pipes and signals: broken pipes, Ctrl-C mid-export, full disks, umask, stdin streams."""

from __future__ import annotations

import errno
import io
import json
import os
import resource
import shlex
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from .conftest import ROOT, clean_env, cli, inproc, posenc_cmd
from .each import each

POSENC = " ".join(shlex.quote(a) for a in posenc_cmd())


def sh(script: str, cwd=None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], capture_output=True, cwd=cwd, env=clean_env(), timeout=timeout)


def test_broken_pipe_is_quiet():
    proc = sh(
        f"{POSENC} generate --len 100000 --dim 512 2>err.txt | head -c 10 | wc -c; "
        "echo status=${PIPESTATUS[0]}; cat err.txt; rm -f err.txt",
        cwd=ROOT / "tests",
    )
    count, status, err = proc.stdout.decode().split("\n", 2)
    assert count.strip() == "10"
    assert status == "status=141"  # 128 + SIGPIPE, like a Unix filter whose reader went away
    assert err.strip() == "", f"stderr was not empty: {err!r}"


#: The generate arguments of the one real pipeline (:func:`pipeline`): 128 KiB of table (512 x 64 float32),
#: twice a pipe's 64 KiB buffer, so the reader gets it in parts.
PIPED = ["generate", "--len", "512", "--dim", "64", "-p", "preset=tensor2tensor"]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """One real pipeline ``posenc generate | tee | posenc check -``, read by two tests: what generate wrote into
    its pipe (the bytes tee saw, and generate's stderr) and what check read from a non-seekable stdin (its
    stdout and exit code)."""
    tmp = tmp_path_factory.mktemp("pipeline")
    args = " ".join(shlex.quote(a) for a in PIPED)
    proc = sh(
        f"set -o pipefail; {POSENC} {args} 2>gen_err.txt | tee piped.bin | {POSENC} check - --expect sinusoidal --json",
        cwd=tmp,
    )
    return tmp, proc


def test_pipe_into_check_reads_a_non_seekable_stdin(pipeline):
    tmp, proc = pipeline
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    assert (tmp / "piped.bin").stat().st_size > 2 * 65536  # more than the pipe's buffer holds at once
    assert b'"ok": true' in proc.stdout


def test_truncated_stream_is_a_clean_error():
    """In this process: a real pipe into ``check -`` is test_pipe_into_check_reads_a_non_seekable_stdin's, and
    stdin is read as a stream whatever it is (``formats.read_stream``)."""
    data = inproc(["generate", "--len", "300", "--dim", "64"]).stdout
    proc = inproc(["check", "-"], input=data[: len(data) // 2])
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err and proc.stdout == b""
    # one line naming the source, what the header promised and where the data ended (76800 bytes of float32)
    header = data.index(b"\n") + 1  # the .npy header ends with a newline
    assert err == (
        "Error: <stdin>: truncated: shape (300, 64) of float32 needs 75.0 KiB (76800 bytes) but the data "
        f"ends after {len(data) // 2 - header} bytes\n"
    )


def _temp_files(directory, keep):
    return sorted(p.name for p in directory.iterdir() if p.name not in keep)


def test_ctrl_c_mid_export_keeps_the_old_file_and_no_temporary(tmp_path):
    """Ctrl-C while the export writes its temporary file. The child is stopped (SIGSTOP) the moment its temporary
    file appears, so the export cannot finish first however loaded the machine is; SIGINT is sent while it is
    stopped and handled once it continues (SIGCONT), in the middle of the export. 256 MiB of output, of which the
    child writes only the first blocks (it took ~0.6 CPU-s more to write it all), so the moment between the file
    appearing and the stop cannot see it finish."""
    target = tmp_path / "big.npy"
    target.write_bytes(b"old contents")
    proc = subprocess.Popen(
        posenc_cmd() + ["export", "sinusoidal", "--len", "65536", "--dim", "1024", "-o", str(target), "--force"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )
    try:
        deadline = time.monotonic() + 60
        while not _temp_files(tmp_path, {"big.npy"}) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        proc.send_signal(signal.SIGSTOP)
        temps = _temp_files(tmp_path, {"big.npy"})
        assert temps, f"the export never started writing its temporary file (exit {proc.poll()})"
        assert target.read_bytes() == b"old contents"  # stopped mid-export: the target is not replaced yet
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err.decode()
    assert b"Traceback" not in err
    assert target.read_bytes() == b"old contents"
    assert _temp_files(tmp_path, {"big.npy"}) == [], "the temporary file was left behind"


def test_a_ctrl_c_lost_in_an_ignored_callback_still_ends_the_export(tmp_path, monkeypatch):
    """Python raises KeyboardInterrupt wherever the main thread is when it handles SIGINT; inside a callback whose
    exceptions the interpreter ignores (the import system's module-lock cleanup, a weakref callback) it is printed
    as "Exception ignored" and lost. The test above saw it (an export that ran on to exit 0 and replaced the old
    file). Here the interrupt comes in a weakref callback while the export fsyncs its temporary file: the file is
    not committed, the command says Interrupted and exits 130, and no traceback is printed."""
    import weakref

    real_fsync = os.fsync

    class Token:
        pass

    def fsync_meeting_a_ctrl_c(fd: int) -> None:
        handler = signal.getsignal(signal.SIGINT)
        token = Token()
        ref = weakref.ref(token, lambda _: handler(signal.SIGINT, None))  # noqa: F841 (alive until token dies)
        del token  # the callback runs here; what it raises is ignored by the interpreter
        real_fsync(fd)

    target = tmp_path / "t.npy"
    target.write_bytes(b"old contents")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a fresh `posenc` process
    monkeypatch.setattr(os, "fsync", fsync_meeting_a_ctrl_c)
    try:
        code, _, err = cli(["generate", "-n", "8", "-d", "4", "-o", str(target), "--force"])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (code, err.strip().splitlines()[-1:]) == (130, ["Interrupted"]), err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert target.read_bytes() == b"old contents"
    assert _temp_files(tmp_path, {"t.npy"}) == [], "the temporary file was left behind"
    from posenc_cli.errors import interrupted

    assert not interrupted()  # the flag was the command's: a later write in this process commits its file


def test_full_disk_is_a_clean_error_with_no_partial_file(tmp_path):
    """A file-size limit makes writes fail with EFBIG exactly like a full disk fails with ENOSPC. The limit (and
    SIGXFSZ ignored, so that the write fails instead of the process being killed) is set in this process around an
    in-process run and restored after it: the same writer meets the same failing write (a real process writes to a
    full /dev/full stdout in test_a_full_or_closed_stdout_is_one_line_and_exit_2)."""
    target = tmp_path / "pe.safetensors"
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, limit[1]))
        proc = inproc(["generate", "--len", "20000", "--dim", "256", "-o", str(target)])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, handler)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.startswith("Error: ") and "pe.safetensors" in err and "Traceback" not in err
    assert "File too large" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_full_tmpfs_is_a_clean_error(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)], capture_output=True).returncode
        != 0
    ):
        pytest.skip("mount -t tmpfs is not permitted here")
    try:
        (mnt / "pe.npy").write_bytes(b"old")
        # in this process, as test_full_disk_is_a_clean_error_with_no_partial_file (a file-size limit, also without root)
        proc = inproc(["generate", "--len", "20000", "--dim", "256", "-o", str(mnt / "pe.npy"), "--force"])
        err = proc.stderr.decode()
        assert proc.returncode == 2 and "No space left on device" in err and "Traceback" not in err
        assert sorted(p.name for p in mnt.iterdir()) == ["pe.npy"]
        assert (mnt / "pe.npy").read_bytes() == b"old"
    finally:
        subprocess.run(["umount", str(mnt)])


@pytest.fixture(scope="module")
def umask_077_stderr_closed(tmp_path_factory):
    """One real process read by two tests: ``generate -o`` under umask 077 (inherited from its parent shell)
    with stderr closed (its "wrote" line dropped)."""
    out = tmp_path_factory.mktemp("umask") / "pe.npy"
    return sh(f"umask 077; {POSENC} generate -n 3 -d 4 -o {shlex.quote(str(out))} 2>&-"), out


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_output_permissions_follow_the_umask(tmp_path, umask, mode, request):
    """The umask is the process's: one real process inherits it from its parent (the 077 one, shared with
    test_closed_stderr_or_stdin_is_no_traceback's closed stderr), the other masks are set in this process around
    an in-process run (the same writer, reading the same process state)."""
    if umask == 0o077:
        proc, target = request.getfixturevalue("umask_077_stderr_closed")
    else:
        target = tmp_path / "pe.safetensors"
        old = os.umask(umask)
        try:
            proc = inproc(["generate", "-n", "8", "-d", "4", "-o", str(target)])
        finally:
            os.umask(old)
    assert proc.returncode == 0, proc.stderr
    assert target.stat().st_mode & 0o777 == mode


def test_generate_npy_file_equals_the_npy_part_of_piped_bytes(pipeline, tmp_path):
    """A pipe carries the .npy bytes a file holds, then posenc's trailer (the metadata) after the array."""
    target = tmp_path / "pe.npy"
    assert inproc([*PIPED, "-o", str(target)]).returncode == 0
    piped = (pipeline[0] / "piped.bin").read_bytes()  # what a real process wrote into a real pipe
    # stdout carries only data, and a real process says nothing on stderr
    assert (pipeline[0] / "gen_err.txt").read_bytes() == b""
    npy = target.read_bytes()
    assert npy.startswith(b"\x93NUMPY")
    assert piped[: len(npy)] == npy and piped[len(npy) : len(npy) + 16] == b"\x93POSENC-TRAILER\x01"
    assert np.load(target).shape == (512, 64)
    (tmp_path / "piped.npy").write_bytes(piped)
    np.testing.assert_array_equal(np.load(tmp_path / "piped.npy"), np.load(target))


# ----- leaving: the console script's exit -------------------------------------------------------------------
EXIT_PROBE = """
import atexit, json, sys, threading, time

class Loud:
    def __del__(self, write=sys.stderr.write):  # bound now: teardown may clear sys first
        write("teardown\\n")

KEEP = Loud()  # a global of __main__: freed only by the interpreter's teardown
atexit.register(lambda: sys.stderr.write("atexit\\n"))
import gc
collections = []
gc.callbacks.append(lambda phase, info: collections.append(info["generation"]) if phase == "start" else None)

def report_gc():
    gc.callbacks.clear()
    sys.stderr.write("gc " + json.dumps([gc.isenabled(), gc.get_freeze_count() > 0, [collections.count(g) for g in (0, 1, 2)]]) + "\\n")

atexit.register(report_gc)

def late():
    time.sleep(0.3)
    sys.stderr.write("thread\\n")

threading.Thread(target=late).start()  # not a daemon: the exit waits for it
entry, args = sys.argv[1], json.loads(sys.argv[2])
sys.argv = ["posenc", *args]
from posenc_cli import cli
getattr(cli, entry)()  # main: the interpreter's own exit; console: the console script's
"""


def _exit_probe(entry: str, args: list[str], *, stdin_closed: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", EXIT_PROBE, entry, json.dumps(args)],
        capture_output=True,
        env=clean_env(),
        timeout=120,
        preexec_fn=(lambda: os.close(0)) if stdin_closed else None,  # <&-: Python starts with sys.stdin None
    )


#: What the exit probe writes on stderr itself (the lines a test of posenc's own messages leaves out).
PROBE_LINES = ("thread", "atexit", "teardown")


@pytest.fixture(scope="module")
def stdin_closed_probe() -> subprocess.CompletedProcess:
    """One real process read by two tests: the console script runs ``check -`` with stdin closed (``<&-``), a bad
    input (exit 2), in the exit probe: test_console_exit_skips_only_the_teardown's bad-input case and
    test_closed_stderr_or_stdin_is_no_traceback's closed stdin."""
    return _exit_probe("console", ["check", "-"], stdin_closed=True)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["generate", "--len", "3", "--dim", "4", "--json"], 0),
        (["check", "-"], 2),  # stdin closed (stdin_closed_probe)
    ],
    ids=["ok", "bad input"],
)
def test_console_exit_skips_only_the_teardown(args, code, request):
    """``posenc`` leaves without the interpreter's teardown (17-19 ms of a small generate), after doing what the
    interpreter does first: non-daemon threads joined, atexit handlers run, stdout flushed; the exit code kept.
    Its start-up runs without the cyclic garbage collector (3-4 ms). (One case per way out of ``main``, a normal
    return and an error's exit code: ``console`` hands any code on unchanged, so a second non-zero code, compare's
    1, would run the same lines again.)"""
    fast = _exit_probe("console", args) if code == 0 else request.getfixturevalue("stdin_closed_probe")
    # what the interpreter's own exit gives: a real one for the first case (the probe sees a teardown, and the
    # collector's counts), the in-process run's code and stdout for the other
    normal = _exit_probe("main", args) if code == 0 else inproc(args)
    assert normal.returncode == fast.returncode == code, fast.stderr.decode()
    assert normal.stdout == fast.stdout  # everything written reached the pipe
    if code == 0:
        assert json.loads(fast.stdout)["shape"] == [3, 4]
    fast_tail = [line for line in fast.stderr.decode().splitlines() if line in PROBE_LINES]
    assert fast_tail == ["thread", "atexit"], fast.stderr.decode()
    if code != 0:
        return
    normal_tail = [line for line in normal.stderr.decode().splitlines() if line in PROBE_LINES]
    assert normal_tail == ["thread", "atexit", "teardown"]  # the probe sees a teardown
    # start-up ran without the cyclic collector, which is on again (start-up's objects frozen) for the command
    gc_fast, gc_normal = (json.loads(p.stderr.decode().split("\ngc ")[1].split("\n")[0]) for p in (fast, normal))
    assert gc_fast[:2] == [True, True] and gc_normal[:2] == [True, False]
    assert sum(gc_fast[2]) < 0.7 * sum(gc_normal[2]), (gc_fast, gc_normal)  # collections of generations 0, 1, 2


#: A closed stdout (``>&-``) is one stdout whose writes fail (EBADF, ``cli._closed_stdout``: Python starts with
#: sys.stdout None) through the same writes as a full one. A real process writes the large table (streamed)
#: to /dev/full and to a closed stdout; the other write paths (a small table, text) meet a full stdout in this
#: process (:class:`FullStdout`, buffered like a file's stdout: the writes fail when flushed).
FULL_OR_CLOSED = [
    ("> /dev/full", ["generate", "-n", "3000", "-d", "400"]),
    # stdin closed as well: a command that does not read stdin runs as before to its output with stdin closed
    # (test_closed_stderr_or_stdin_is_no_traceback's "unread" case), and its one message is the stdout's
    (">&- <&-", ["generate", "-n", "3000", "-d", "400"]),
]
FULL_IN_PROCESS = [["generate", "--len", "3", "--dim", "4"], ["kinds"], ["generate", "-n", "3000", "-d", "400"]]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("redirect,args", FULL_OR_CLOSED, ids=[f"{r}-{' '.join(a)}" for r, a in FULL_OR_CLOSED])
def test_a_full_or_closed_stdout_is_one_line_and_exit_2(args, redirect):
    proc = sh(f"{POSENC} {' '.join(args)} {redirect}")
    err = proc.stderr.decode()
    why = "No space left on device" if "full" in redirect else "Bad file descriptor"
    assert proc.returncode == 2, err
    assert err == f"Error: cannot write stdout: {why}; nothing more was written\n"


class FullStdout(io.RawIOBase):
    """A stdout on a full disk: every write fails with ENOSPC, as /dev/full's do."""

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_stdout_is_one_line_and_exit_2_on_every_write_path():
    """A small table, a large one streamed and text (:func:`tests.each.each`), in this process."""
    from .conftest import _main_in_process

    def case(args):
        err = io.BytesIO()
        code = _main_in_process(args, b"", io.BufferedWriter(FullStdout()), err, {"COLUMNS": "120", "NO_COLOR": "1"})
        assert code == 2, err.getvalue()
        assert err.getvalue() == b"Error: cannot write stdout: No space left on device; nothing more was written\n"

    each(FULL_IN_PROCESS, case)


def test_main_in_process_leaves_the_callers_garbage_collector_alone():
    """Only the console script pauses the collector for its start-up: ``main()`` called from Python does not."""
    import gc

    from .conftest import cli

    frozen = gc.get_freeze_count()
    code, out, _ = cli(["generate", "--len", "3", "--dim", "4", "--json"])
    assert code == 0 and json.loads(out)["shape"] == [3, 4]
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def _stderr_closed_in_process(args: list[str]) -> subprocess.CompletedProcess:
    """``posenc ARGS 2>&-`` in this process: Python starts such a process with ``sys.stderr`` None, which is what
    ``main`` meets here (a real process with stderr closed is test_output_permissions_follow_the_umask's 077 one);
    what it writes on stdout, and its exit code. An exception escaping ``main`` fails the test where it is raised."""
    from posenc_cli.cli import main

    saved = sys.stdout, sys.stderr
    out = io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stdout, sys.stderr = stdout, None
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        replaced = sys.stderr
        sys.stdout, sys.stderr = saved
        if replaced is not None:
            replaced.close()  # main's stand-in for the closed stderr
        stdout.detach()  # (closing the wrapper would close ``out``)
    return subprocess.CompletedProcess(args, code, out.getvalue(), b"")


@pytest.mark.parametrize(
    ("script", "code"),
    [
        (None, 0),  # generate -n 3 -d 4 -o out 2>&-: its "wrote" line is dropped, the file written (one real
        # process with test_output_permissions_follow_the_umask's 077 case)
        ("generate -n -3 -d 4 2>&-", 2),  # in this process (_stderr_closed_in_process): its error line dropped
        ("check - <&-", 2),  # in the exit probe, one real process with test_console_exit_skips_only_the_teardown
        # stdin closed, unread: test_a_full_or_closed_stdout_is_one_line_and_exit_2's ">&- <&-" process
    ],
    ids=["stderr closed", "stderr closed, bad input", "stdin closed"],
)
def test_closed_stderr_or_stdin_is_no_traceback(script, code, request):
    if script is None:
        proc, out = request.getfixturevalue("umask_077_stderr_closed")
    elif script == "check - <&-":
        proc = request.getfixturevalue("stdin_closed_probe")
    else:
        proc = _stderr_closed_in_process(shlex.split(script.removesuffix(" 2>&-")))
    assert proc.returncode == code, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
    if script is None:
        assert np.load(out).shape == (3, 4)
    elif "<&-" in script:  # posenc's one line, beside what the probe itself writes
        lines = proc.stderr.decode().splitlines()
        said = [line for line in lines if line not in PROBE_LINES and not line.startswith("gc ")]
        assert len(said) == 1 and said[0].startswith("Error: <stdin>: "), lines
    else:
        assert proc.stdout == b""
