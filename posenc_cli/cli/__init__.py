"""The posenc command line: parse, make one engine call, render or write (one module per command).

Every engine error (:class:`PosencError`) is printed once, as ``Error: ...`` on stderr, by :func:`main`; an
unexpected exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import os
import sys

import typer

from ..errors import ExitCode, PosencError
from ._common import _quiet_broken_pipe, app

# isort: off
# registration order is the order `posenc --help` lists the commands in
from . import generate, check, compare, export, kinds  # noqa: E402, F401
# isort: on

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point: run the app and turn every way out into one line and an exit code.

    Typer runs in non-standalone mode so that usage errors reach us: they become one ``Error:`` line (the
    bad value and where to look) instead of click's three-line usage block.
    """
    if "_POSENC_COMPLETE" in os.environ:
        _plain_completion_help()
    try:
        code = app(prog_name="posenc", standalone_mode=False)
    except PosencError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        sys.stderr.write("Interrupted\n")
        sys.exit(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except _click_exception() as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `posenc`: show the help
            exc.show()
            sys.exit(exc.exit_code)
        command = exc.ctx.command_path if getattr(exc, "ctx", None) is not None else "posenc"
        sys.stderr.write(f"Error: {exc.format_message()} (see {command} --help)\n")
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else ExitCode.OK)


def _click_exception() -> type[Exception]:
    try:  # typer >= 0.26 vendors click
        from typer._click.exceptions import ClickException
    except ImportError:  # pragma: no cover - older typer on real click
        from click.exceptions import ClickException
    return ClickException


def _plain_completion_help() -> None:
    """Typer's zsh/fish completion imports rich to strip markup from help texts; ours has none (plain mode)."""
    try:
        from typer import _completion_classes
    except ImportError:  # pragma: no cover - a typer without this private module
        return
    if hasattr(_completion_classes, "_sanitize_help_text"):
        _completion_classes._sanitize_help_text = lambda text: text
