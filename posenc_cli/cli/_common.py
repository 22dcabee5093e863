"""What every posenc command shares: the table options a command line gives, opening sources, writing, messages.

Heavy modules (numpy, rich, safetensors) are imported inside functions so that ``posenc --help``,
``--version`` and shell completion start instantly.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..errors import OutputError, ParameterError

DEFAULT_MAX_BYTES = 8 * 1024**3


class TableOptions(NamedTuple):
    """The options that set the parameters of the tables a command builds (``--len``, ``--dim``, ``-p``,
    ``--dtype``, ``--grid``), with ``--layer-type`` for model configs and ``--max-bytes`` (a named tuple: a
    dataclass would compile its methods on every start-up)."""

    length: int | None = None
    dim: int | None = None
    params: Sequence[str] = ()
    dtype: str | None = None
    grid: str | None = None
    layer_type: str | None = None
    max_bytes: int | None = None
    read_as: str | None = None
    #: --engine, --max-model-len, --n-ctx: a model config's tables as an inference engine computes them
    #: (--n-ctx is also a GGUF file's llama.cpp context)
    engine: str | None = None
    max_model_len: int | None = None
    n_ctx: int | None = None

    @classmethod
    def of(cls, args: dict[str, Any]) -> TableOptions:
        """The table options among a command's arguments, each by its own name (``-p`` is ``param``): a command's
        ``run`` passes ``locals()`` first thing, so that no command lists them again (or forgets one)."""
        given = {f: args.get(f) for f in cls._fields if f != "params"}
        return cls(params=list(args.get("param") or []), **given)

    def engine_options(self) -> dict[str, Any]:
        return {"max_model_len": self.max_model_len, "n_ctx": self.n_ctx}

    def layers(self, *, dtype: bool = True) -> list[Any]:
        """Each option as a labelled layer (:func:`posenc_cli.sources.merge_given` refuses a value given twice,
        naming both flags)."""
        from ..sources import param_layers

        out: list[Any] = []
        for flag, key, value in (
            ("--len", "length", self.length),
            ("--dim", "dim", self.dim),
            ("--grid", "grid", self.grid),
            ("--dtype", "dtype", self.dtype if dtype else None),
        ):
            if value is not None:
                out.append((f"{flag} {value}", {key: value}))
        return out + param_layers(self.params)

    def given(self, *, dtype: bool = True) -> list[str]:
        """The flags given (to refuse them by name where they cannot apply)."""
        flags = [
            ("--len", self.length),
            ("--dim", self.dim),
            ("-p/--param", self.params or None),
            ("--grid", self.grid),
            ("--dtype", self.dtype if dtype else None),
        ]
        return [f for f, v in flags if v is not None]


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


def refuse_spec_options_for_files(opts: TableOptions, sources: Sequence[str], *, dtype: bool = True) -> None:
    """--len/--dim/-p/--grid (and --dtype where it means the spec's dtype) set parameters of specs and model
    configs; refuse them when every source is a file."""
    from ..encodings import resolve_kind
    from ..sources import is_config, is_gguf, is_spec, looks_like_a_kind

    for s in sources:
        if looks_like_a_kind(s):  # a mistyped kind, not a file: say so first
            resolve_kind(s.split(":", 1)[0])
    gguf = any(is_gguf(s) for s in sources)
    if opts.n_ctx is not None and not gguf and not any(is_config(s) for s in sources):
        raise ParameterError(
            f"--n-ctx {opts.n_ctx} applies to a GGUF file or a model config read by an engine; drop it or give one"
        )
    if not any(is_spec(s) or is_config(s) or is_gguf(s) for s in sources):
        what = "the source is a file" if len(sources) == 1 else "the sources are files"
        if "-" in sources:
            what = "the source is stdin" if len(sources) == 1 else "the sources are files and stdin"
        refuse(
            [(f, True) for f in opts.given(dtype=dtype)],
            f"{what}, and these options set the parameters of a spec; drop them or give a spec such as KIND:key=value",
        )
    if opts.layer_type is not None and not any(is_config(s) or is_gguf(s) for s in sources):
        raise ParameterError("--layer-type applies to a model config; drop it or give the model's config.json")
    if opts.read_as is not None and not any(is_config(s) for s in sources):
        raise ParameterError("--read-as applies to a model config; drop it or give the model's config.json")
    if not any(is_config(s) for s in sources):
        refuse(
            [
                ("--engine", opts.engine),
                ("--max-model-len", opts.max_model_len),
                ("--n-ctx", None if gguf else opts.n_ctx),
            ],
            "they set an engine's rules for a model config; give the model's config.json",
        )
    refuse_unread_engine_options(opts, sources)


def refuse_unread_engine_options(opts: TableOptions, sources: Sequence[str]) -> None:
    """--max-model-len and --n-ctx set one engine's rule each: refused unless a source's engine reads it."""
    from ..models.engines import ENGINES, resolve_engine
    from ..sources import is_config, is_gguf, split_engine

    engines = set()
    for s in sources:
        if is_config(s):
            name = split_engine(s)[1] or opts.engine
            if name is not None:
                engines.add(resolve_engine(name).name)
    for flag, key, value in (
        ("--max-model-len", "max_model_len", opts.max_model_len),
        ("--n-ctx", "n_ctx", None if any(is_gguf(s) for s in sources) else opts.n_ctx),  # a GGUF's own context
    ):
        if value is not None and not any(key in ENGINES[e].options for e in engines):
            users = ", ".join(n for n, e in ENGINES.items() if key in e.options)
            raise ParameterError(f"{flag} sets a rule of engine {users}; give --engine {users} or CONFIG@{users}")


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
    """A source of the command line: a file, stdin, a spec or a model config, with the table options as labelled
    layers (a value given twice is refused naming both places). Warnings of a config reading go to stderr."""
    from ..sources import is_config, is_gguf, is_spec, open_source

    gguf = is_gguf(text)
    builds = is_spec(text) or is_config(text) or gguf
    src = open_source(
        text,
        params=[*opts.layers(dtype=dtype), *extra] if builds else None,
        max_bytes=opts.max_bytes,
        like=like,
        layer_type=opts.layer_type if (is_config(text) or gguf) else None,
        read_as=opts.read_as if is_config(text) else None,
        kind=kind,
        n_ctx=opts.n_ctx if gguf else None,
        engine=opts.engine if is_config(text) else None,
        engine_options=opts.engine_options() if is_config(text) else None,
    )
    say_warnings(src, quiet)
    return src


def say_warnings(src: Any, quiet: int) -> None:
    """What reading a source had to say (a model config's assumptions), on stderr once: then cleared."""
    for w in src.warnings:
        msg(f"Warning: {w}", quiet)
    src.warnings = []


def stdin_source(command: str, what: str) -> str:
    """``-`` when no source was given and stdin is a pipe or a file; on a terminal, a one-line error saying what
    to give (``what``)."""
    if sys.stdin.isatty():
        raise ParameterError(f"give a source: {what} (see posenc {command} --help)")
    return "-"


def byte_limit(value: int | None) -> int:
    return DEFAULT_MAX_BYTES if value is None else int(value)


def progress_enabled(quiet: int) -> bool:
    return not quiet and sys.stderr.isatty()


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
