"""What every posenc command shares: the table options a command line gives, opening sources, writing, messages.

Heavy modules (numpy, rich, safetensors) are imported inside functions so that ``posenc --help``,
``--version`` and shell completion start instantly.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import OutputError, ParameterError
from ..scopes import SourceOptions as TableOptions

DEFAULT_MAX_BYTES = 8 * 1024**3


def msg(text: str, quiet: int) -> None:
    if not quiet:
        sys.stderr.write(text + "\n")


def refuse(given: Sequence[tuple[str, Any]], why: str) -> None:
    """A one-line error naming every option of ``given`` (``(flag, value)``) that was given, and why it cannot
    apply: never accept an option and do nothing with it."""

    def given_(v: Any) -> bool:  # 0 is a value (--head 0); None, False and [] are not
        return not (v is None or v is False or (isinstance(v, (list, tuple)) and not v))

    flags = [flag for flag, value in given if given_(value)]
    if flags:
        raise ParameterError(f"{', '.join(flags)} cannot apply: {why}")


def refuse_spec_options_for_files(
    opts: TableOptions, sources: Sequence[str], *, dtype: bool = True, stdin_config: bool = False
) -> None:
    """The options that apply to none of ``sources``, refused by name (:mod:`posenc_cli.scopes`); ``dtype=False``
    where --dtype casts a file's tensors rather than setting a spec's dtype."""
    from ..api import refuse_options

    refuse_options(opts if dtype else opts._replace(dtype=None), sources, stdin_config=stdin_config)


def open_src(
    text: str,
    opts: TableOptions,
    *,
    like: Any = None,
    dtype: bool = True,
    kind: str | None = None,
    quiet: int = 0,
    extra: Sequence[Any] = (),
) -> Any:
    """A source of the command line (:func:`posenc_cli.api.open_source`); warnings of a config reading go to
    stderr."""
    from ..api import open_source

    src = open_source(text, opts, like=like, dtype=dtype, kind=kind, extra=extra)
    say_warnings(src, quiet)
    return src


def say_warnings(src: Any, quiet: int) -> None:
    """What reading a source had to say (a model config's assumptions), on stderr once: then cleared."""
    for w in src.warnings:
        msg(f"Warning: {w}", quiet)
    for n in getattr(src, "notes", ()):
        msg(f"note: {n}", quiet)
    src.warnings = []
    src.notes = []


def stdin_source(command: str, what: str) -> str:
    """``-`` when no source was given and stdin is a pipe or a file; on a terminal, a one-line error saying what
    to give (``what``)."""
    if sys.stdin.isatty():
        raise ParameterError(f"give a source: {what} (see posenc {command} --help)")
    return "-"


def byte_limit(value: int | None) -> int:
    return DEFAULT_MAX_BYTES if value is None else int(value)


def progress_enabled(quiet: int) -> bool:
    """A progress bar redraws itself in place: only on a terminal that can move the cursor (not TERM=dumb, as
    Emacs' shell buffers and pagers set it, where each redraw would leave a line behind)."""
    return not quiet and sys.stderr.isatty() and os.environ.get("TERM", "") != "dumb"


def refuse_binary_to_terminal(dest: str, fmt: str, force: bool) -> None:
    if dest == "-" and sys.stdout.isatty() and fmt in ("npy", "npz", "safetensors") and not force:
        raise OutputError("refusing to write binary data to a terminal; redirect stdout, use -o FILE, or pass --force")


def write_source(
    dest: str,
    src: Any,
    *,
    fmt: str | None,
    tensors: list[str] | None,
    force: bool,
    quiet: int,
    limit: int | None,
    rename: dict[str, str] | None = None,
    dtype: str | None = None,
) -> Any:
    """Write ``src`` through :func:`posenc_cli.api.write` (the one writer), with a progress bar on a terminal for
    outputs over 64 MiB; the written summary, or None when a plain ``.npy`` reader left after the array."""
    from .. import formats
    from ..api import write as write_table

    refuse_binary_to_terminal(dest, formats.format_for(dest, fmt), force)

    def run(progress: Any) -> Any:
        return write_table(
            dest,
            src,
            format=fmt,
            tensors=tensors or None,
            rename=rename,
            dtype=dtype,
            force=force,
            max_bytes=limit,
            progress=progress,
        )

    nbytes = sum(prod(t.shape) * t.dtype.itemsize for t in src.lazy.values())
    try:
        if not (progress_enabled(quiet) and nbytes > 64 * 1024**2):  # rich is only imported for a bar
            return run(None)
        from ..render import progress_bar

        with progress_bar(f"writing {dest}", 1, True) as advance:
            return run(lambda n, total: advance(n, total))
    except formats.TrailerNotRead:
        # the reader took the .npy array and went away (np.load): all it asked for was written
        quiet_exit()


def wrote(dest: str, written: Any, quiet: int, src: Any = None) -> None:
    """The one "wrote" line of every command: the path and each tensor with its shape and dtype as written; and
    what a ``.npy`` file cannot hold (the metadata), said rather than lost silently."""
    if dest == "-" or written is None:
        return
    msg(written.summary(), quiet)
    if written.format == "npy" and src is not None and src.metadata:
        msg(
            f"note: {dest} holds the array only, without the metadata; write .safetensors, .npz or .json to keep it",
            quiet,
        )


def prod(shape: Any) -> int:
    out = 1
    for s in shape:
        out *= int(s)
    return out


def print_json(data: Any) -> None:
    from ..render import print_json as emit

    emit(data)


def stdout_to_devnull() -> None:
    """Point stdout at /dev/null for good, so that no flush of it can fail any more (its failure was said)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # not a descriptor (an in-process caller's buffer), or closed
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (stdout until the exit)


def _exit_without_stdout(code: int) -> None:
    """Exit with ``code`` now, with stdout pointed at /dev/null for good (no flush may raise at exit)."""
    stdout_to_devnull()
    os._exit(code)


def quiet_exit() -> None:
    """Exit 0 now: the reader took all it asked for and is gone."""
    _exit_without_stdout(0)


def quiet_broken_pipe() -> None:
    """The reader of stdout went away: exit quietly like a Unix filter (128 + SIGPIPE)."""
    _exit_without_stdout(141)
