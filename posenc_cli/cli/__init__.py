"""The posenc command line on Typer: one module per command (parse -> one library call -> render or write).

Every option is declared once in :mod:`._options`. :func:`main` is the one boundary where errors become output:
an engine error (:class:`PosencError`) and a usage error are each one line ``Error: ...`` on stderr with exit 2
(no boxes in CI logs); Ctrl-C is 130; an unexpected exception is a bug and keeps its traceback.

Start-up: the command group is lazy. ``posenc --help`` lists the commands from :data:`COMMANDS` without
building them, and a run builds only the command it runs; Typer's own Rich integration is off (plain help at
most 80 columns), so help and completion load Typer and this package's light modules, never NumPy or Rich.
The modules Typer reads signatures from (the commands, :mod:`._options`, :mod:`._complete`) do not use
``from __future__ import annotations``: Typer would ``eval`` every annotation string on every run (about 70
compiles, a tenth of a small ``generate``); ``tests/test_startup.py`` keeps it so.
"""

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from .. import __version__
from ..errors import ExitCode, PosencError, interrupted

__all__ = ["COMMANDS", "PROG", "app", "build_command", "console", "main"]

PROG = "posenc"

#: command name -> (module under posenc_cli.cli, one-line summary), in the order ``posenc --help`` lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "generate": ("generate", "Generate a table (preview on a terminal, .npy when piped, a file with -o)."),
    "check": ("check", "Measure every property of a table (finite, bounded, unique, constant-norm, ...)."),
    "compare": ("compare", "Compare two tables: max abs / relative / ulp difference and where, and why."),
    "identify": ("identify", "Name the kind, preset and parameters that reproduce a table."),
    "audit": ("audit", "Check a model's positions everywhere (config, weights, GGUF, ONNX, engines)."),
    "export": ("export", "Write a table for other frameworks, atomically, C-contiguous, with metadata."),
    "plot": ("plot", "Draw a table: heatmap, dot-product curves, circle, spectrum, bias, compare."),
    "kinds": ("kinds", "List the encoding kinds, or show one kind's tensors, parameters and presets."),
}

_HELP = """Generate, check, compare and export transformer positional-encoding tables.

Exit codes: 0 ok, 1 a property failed or tables differ, 2 bad input or I/O trouble, 130 on Ctrl-C."""

#: help at most 80 columns wide (a narrower terminal: narrower)
_WIDTH = 80


def _width() -> int:
    try:
        return max(40, min(_WIDTH, int(os.environ.get("COLUMNS", _WIDTH))))
    except ValueError:
        return _WIDTH


def command_module(name: str) -> Any:
    return importlib.import_module(f"{__name__}.{COMMANDS[name][0]}")


def build_command(name: str) -> Any:
    """The Click command of ``name``, built by Typer from its module's typed function."""
    from typer.main import get_command_from_info
    from typer.models import CommandInfo

    module = command_module(name)
    info = CommandInfo(
        name=name,
        callback=module.run,
        help=_verbatim_examples(module.DESCRIPTION),
        short_help=COMMANDS[name][1],
        context_settings=_context(),
        no_args_is_help=False,
    )
    return get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)


def _verbatim_examples(text: str) -> str:
    """Help text whose indented paragraphs (examples) Click prints as written (``\\b``), the rest wrapped."""
    paras = text.split("\n\n")
    return "\n\n".join("\b\n" + p if p.startswith("  ") else p for p in paras)


def _context() -> dict[str, Any]:
    return {"help_option_names": ["-h", "--help"], "max_content_width": _width(), "terminal_width": _width()}


def _group_class() -> Any:
    from typer.core import TyperGroup

    class LazyGroup(TyperGroup):
        """The commands of :data:`COMMANDS`, each built on first use; help lists them by their summaries."""

        def list_commands(self, ctx: Any) -> list[str]:
            return list(COMMANDS)

        def get_command(self, ctx: Any, cmd_name: str) -> Any:
            if cmd_name not in COMMANDS:
                return None
            if cmd_name not in self.commands:
                self.commands[cmd_name] = build_command(cmd_name)
                _start_up_done()
            return self.commands[cmd_name]

        def format_commands(self, ctx: Any, formatter: Any) -> None:
            with formatter.section("Commands"):
                formatter.write_dl([(n, s) for n, (_, s) in COMMANDS.items()])

        def resolve_command(self, ctx: Any, args: list[str]) -> Any:
            from difflib import get_close_matches

            from typer import _click

            try:
                return super().resolve_command(ctx, args)
            except _click.exceptions.UsageError as e:  # did you mean, from every command (built or not)
                typed = args[0] if args else ""
                close = [c for c in COMMANDS if typed and c.startswith(typed)] or get_close_matches(
                    typed, list(COMMANDS)
                )
                if close and "Did you mean" not in e.message:
                    e.message = f"{e.message.rstrip('.')}. Did you mean {' or '.join(repr(c) for c in close)}?"
                raise

    return LazyGroup


#: the root group built for each terminal width, in this process (:func:`app`)
_APPS: dict[int, Any] = {}


def app() -> Any:
    """The root Click group (Typer's), with ``--version``, ``--install-completion`` and ``--show-completion``.

    Built once per terminal width in a process and reused: :func:`main` may run again in the same process (the
    suite's in-process runs, an embedding program), and Typer's building of the commands from their signatures
    costs more than most commands. The width (``COLUMNS``) is all a build reads from outside; Click keeps each
    invocation's state in its context, not in the commands."""
    width = _width()
    if width not in _APPS:
        _APPS[width] = _build_app()
    return _APPS[width]


def _build_app() -> Any:
    import typer
    from typer._completion_classes import completion_init
    from typer.main import get_command

    from ._complete import choices

    completion_init()  # Typer's completion classes for bash, zsh, fish and PowerShell
    shells = choices((*SHELLS, "auto"))

    root = typer.Typer(
        name=PROG,
        help=_HELP,
        cls=_group_class(),
        add_completion=False,  # its own --install/--show-completion below take the shell's name too
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        context_settings=_context(),
        no_args_is_help=True,
    )

    def version(value: bool) -> None:
        if value:
            sys.stdout.write(f"{PROG} {__version__}\n")
            raise typer.Exit(0)

    @root.callback()
    def _root(
        show_version: bool = typer.Option(
            False, "--version", callback=version, is_eager=True, help="Print the version and exit."
        ),
        install: str | None = typer.Option(
            None,
            "--install-completion",
            metavar="SHELL",
            callback=_install_completion,
            is_eager=True,
            expose_value=False,
            autocompletion=shells,
            help="Install completion for SHELL: bash, zsh, fish, powershell, or auto (the current shell).",
        ),
        show: str | None = typer.Option(
            None,
            "--show-completion",
            metavar="SHELL",
            callback=_show_completion,
            is_eager=True,
            expose_value=False,
            autocompletion=shells,
            help="Print the completion script for SHELL (the same names).",
        ),
    ) -> None:
        pass

    return get_command(root)


SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def _shell(value: str) -> str:
    """The shell ``value`` names (``auto``: the current one, as Typer detects it)."""
    import typer

    if value == "auto":
        from typer._completion_shared import _get_shell_name

        detected = _get_shell_name()
        if detected not in SHELLS:
            raise typer.BadParameter(f"cannot tell the current shell ({detected}); name one: {', '.join(SHELLS)}")
        return str(detected)
    if value not in SHELLS:
        raise typer.BadParameter(f"{value!r} is not a shell posenc completes; choose from: {', '.join(SHELLS)}")
    return value


def _show_completion(ctx: Any, param: Any, value: str | None) -> None:
    """Print Typer's completion script for the shell (the scripts in completions/ are these)."""
    import typer
    from typer._completion_shared import get_completion_script

    if value is None or ctx.resilient_parsing:
        return
    shell = _shell(value)
    sys.stdout.write(get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell) + "\n")
    raise typer.Exit(0)


def _install_completion(ctx: Any, param: Any, value: str | None) -> None:
    """Install Typer's completion script where the shell reads it (Typer's own installer)."""
    import typer
    from typer._completion_shared import install

    if value is None or ctx.resilient_parsing:
        return
    shell = _shell(value)
    done, path = install(shell=shell, prog_name=PROG, complete_var=COMPLETE_VAR)
    sys.stderr.write(f"installed {done} completion in {path}; start a new shell to use it\n")
    raise typer.Exit(0)


#: the environment variable that asks posenc for completions (Typer's protocol: _PROG_COMPLETE)
COMPLETE_VAR = "_POSENC_COMPLETE"


def _spelling(args: list[str], message: str = "") -> Callable[[str], str | None]:
    """How an error names a parameter: the flag that sets it; ``""`` for an option the command being run does not
    take (the clause offering it is left out, :func:`posenc_cli.errors.option_clause`). A model config is named as
    the command was given the one ``message`` (the error's raw text) names: :func:`_config_spelling`."""
    from ._options import FLAGS

    takes: set[str] | None = None
    config: str | None = None
    try:
        command = app().commands.get(args[0]) if args else None
        if command is not None:
            takes = {str(p.name) for p in command.params}
            config = _config_spelling(command, args[1:], message)
    except Exception:  # the spelling of an error must not fail: every flag then
        takes = None

    def spell(name: str) -> str | None:
        if name in _CONFIG and config is not None:
            return config
        flag = FLAGS.get(name)
        if flag is not None and takes is not None and name in _OFFERED and name not in takes:
            return ""
        return flag

    return spell


#: the parameter that names a model config being read (the library's ``config=``; ``hf_config`` is the option)
_CONFIG = frozenset({"config"})


def _config_spelling(command: Any, args: list[str], message: str = "") -> str | None:
    """How the command being run was given the model config ``message`` names (``<config> PATH: ...``): the option
    whose value it is (``--hf-config``, ``--against``), else the positional argument that took it (``SOURCE``,
    ``KIND``); None when the command takes no argument (every flag then)."""
    from ..errors import param

    named = next(iter(message.split(param("config") + " ", 1)[1:]), "")
    for p in command.params:
        if getattr(p, "param_type_name", "") != "option" or p.name not in ("hf_config", "against"):
            continue
        for i, a in enumerate(args):
            flag, eq, value = a.partition("=")
            if flag in p.opts and not eq and i + 1 < len(args):
                value = args[i + 1]
            if flag in p.opts and (not named or named.startswith(value)):
                return str(p.opts[0])
    for p in command.params:
        if getattr(p, "param_type_name", "") == "argument":
            return str(p.metavar or p.name.upper()).strip("[].")
    return None


#: the options an :func:`~posenc_cli.errors.option_clause` may offer (a command that lacks one drops the clause)
_OFFERED = frozenset({"read_as"})


def main(argv: list[str] | None = None) -> NoReturn:
    """Run one command and turn every way out into one line and an exit code (:class:`SystemExit`); the console
    script runs it through :func:`console`."""
    import typer
    from typer import _click

    args = sys.argv[1:] if argv is None else list(argv)
    _closed_streams()
    if os.environ.get("_POSENC_COMPLETE"):
        _plain_completion_help()
    restore = _watch_interrupts()
    try:
        group = app()
        # Typer's own main would turn a broken pipe into exit 1 and print usage errors its way: posenc runs the
        # group itself, completion first (it exits when the shell asked for candidates)
        group._main_shell_completion({}, PROG, COMPLETE_VAR)
        with group.make_context(PROG, args) as ctx:
            code = group.invoke(ctx)
        sys.stdout.flush()
    except PosencError as exc:
        sys.stderr.write(f"Error: {exc.render(_spelling(args, BaseException.__str__(exc)))}\n")
        code = exc.exit_code
    except _click.exceptions.ClickException as exc:
        if not isinstance(exc, _click.exceptions.UsageError):  # a file Click could not open, ...
            sys.stderr.write(f"Error: {_one_line(exc.format_message())}\n")
            sys.exit(ExitCode.ERROR)
        where = exc.ctx.command_path if exc.ctx is not None else PROG
        if isinstance(exc, _click.exceptions.NoArgsIsHelpError) and exc.ctx is not None:
            sys.stderr.write(exc.ctx.get_help() + "\n")  # bare `posenc`: the help, on stderr, as a usage error
        else:
            sys.stderr.write(f"Error: {_one_line(exc.format_message())} (see {where} --help)\n")
        code = ExitCode.ERROR
    except typer.Abort:
        sys.stderr.write("Interrupted\n")
        code = ExitCode.INTERRUPTED
    except typer.Exit as exc:  # --help, --version; Typer turns Ctrl-C into Exit(130)
        code = exc.exit_code
        if code == ExitCode.INTERRUPTED:
            sys.stderr.write("Interrupted\n")
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted\n")
        code = ExitCode.INTERRUPTED
    except BrokenPipeError:
        from ._common import quiet_broken_pipe

        quiet_broken_pipe()
        code = 141
    except OSError as exc:  # stdout failing under posenc (`> /dev/full`, `>&-`); the readers name their files
        from ._common import stdout_to_devnull

        where = "cannot write stdout" if exc.filename is None else exc.filename
        sys.stderr.write(f"Error: {where}: {exc.strerror or exc}; nothing more was written\n")
        stdout_to_devnull()  # what is still buffered goes there: no flush at exit fails again
        code = ExitCode.ERROR
    finally:
        lost = interrupted()
        restore()
    if lost and code != ExitCode.INTERRUPTED:  # Ctrl-C whose KeyboardInterrupt was lost on the way
        sys.stderr.write("Interrupted\n")
        code = ExitCode.INTERRUPTED
    sys.exit(int(code or 0))


def _watch_interrupts() -> Callable[[], None]:
    """SIGINT sets :func:`~posenc_cli.errors.interrupted` and raises ``KeyboardInterrupt`` as Python's own handler
    does, for this command (the main thread, where Python's handler is in place); a ``KeyboardInterrupt`` the
    interpreter could not raise (an "Exception ignored in" callback) is not printed as a traceback: the flag
    carries it to the exit, which says "Interrupted". Returns what undoes both."""
    import signal
    import threading

    from ..errors import _Interrupt

    _Interrupt.seen = False
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    before = signal.getsignal(signal.SIGINT)
    if before is not signal.default_int_handler:  # ignored, or a caller's own handler: theirs
        return lambda: None
    hook = sys.unraisablehook

    def quiet(unraisable: Any) -> None:
        if not (_Interrupt.seen and isinstance(unraisable.exc_value, KeyboardInterrupt)):
            hook(unraisable)

    signal.signal(signal.SIGINT, _Interrupt.handler)
    sys.unraisablehook = quiet

    def restore() -> None:
        signal.signal(signal.SIGINT, before)
        if sys.unraisablehook is quiet:
            sys.unraisablehook = hook
        _Interrupt.seen = False  # the flag is this command's: later library calls in the process commit files

    return restore


def console() -> NoReturn:
    """The ``posenc`` console script (and ``python -m posenc_cli``): :func:`main`, then out without the
    interpreter's teardown.

    After the last line is written, CPython frees every module and object one by one (NumPy's and Typer's): 17-19 ms
    of a 130 ms ``posenc generate`` here, against 9 ms for ``python -c 'import numpy'`` (tests/benchmarks). Nobody
    waits for that memory, so this does what the interpreter does first at exit and then leaves, as Instagram's
    servers do (``os._exit`` after ``atexit``): threads are joined (a pool's idle workers), ``atexit`` handlers run,
    stdout and stderr are flushed. Where any of that fails or is missing, the normal exit runs instead.
    """
    _start_up_without_gc()
    try:
        main()
    except SystemExit as exc:
        _leave(exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1))


#: Whether :func:`console` turned the cyclic garbage collector off for the start-up.
_GC_PAUSED = False


def _start_up_without_gc() -> None:
    """Start-up without the cyclic garbage collector: it creates long-lived objects only (Typer's modules and
    classes, the command's options), which every collection would scan again (3-4 ms of a small ``generate``
    here). :func:`_start_up_done` turns it back on, as the command starts."""
    global _GC_PAUSED
    import gc

    if gc.isenabled():
        gc.disable()
        _GC_PAUSED = True


def _start_up_done() -> None:
    """The command is built: what start-up made moves to the collector's permanent generation (``gc.freeze``,
    never scanned again) and the collector runs again for the command's own work."""
    global _GC_PAUSED
    if _GC_PAUSED:
        import gc

        gc.freeze()
        gc.enable()
        _GC_PAUSED = False


def _leave(code: int) -> NoReturn:
    """Exit with ``code`` as :func:`console` says: the interpreter's first steps of an exit, then ``os._exit``."""
    import atexit

    threading = sys.modules.get("threading")
    join_threads = getattr(threading, "_shutdown", None) if threading is not None else None
    run_atexit = getattr(atexit, "_run_exitfuncs", None)
    if run_atexit is None or (threading is not None and join_threads is None):
        sys.exit(code)  # not CPython as we know it: the interpreter's own exit
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)  # the interpreter's own exit says what it always says of a failed flush
    if join_threads is not None:
        join_threads()
    run_atexit()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _closed_streams() -> None:
    """Closed standard streams (``>&-``, ``2>&-``, ``<&-``; Python makes them None): what is written to stdout
    fails by name, as on any broken stdout; messages to a closed stderr are dropped, as every Unix tool drops them;
    a closed stdin reads as empty."""
    if sys.stdout is None:
        sys.stdout = _closed_stdout()
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (stderr until the exit)
    if sys.stdin is None:
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (stdin until the exit)


def _closed_stdout() -> Any:
    """A text stdout whose writes fail with EBADF (stdout was closed)."""
    import errno
    import io

    class Closed(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, data: Any) -> int:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    return io.TextIOWrapper(io.BufferedWriter(Closed()), encoding="utf-8")


def _plain_completion_help() -> None:
    """Typer passes every completion's help text through Rich to strip markup (zsh, fish), which would load Rich
    on every TAB; posenc's help has no markup (``rich_markup_mode=None``), so the text is used as it is."""
    from typer import _completion_classes

    _completion_classes._sanitize_help_text = lambda text: text


def _one_line(text: str) -> str:
    return " ".join(text.split())
