"""The posenc command line: parse, make one library call, render or write (one module per command).

Every engine error (:class:`PosencError`) is printed once, as ``Error: ...`` on stderr, by :func:`main`; a
usage error is one line too; an unexpected exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import os
import sys

from .. import __version__
from ..errors import ExitCode, PosencError
from . import check, compare, export, generate, identify, kinds, plot
from ._common import quiet_broken_pipe
from ._parser import PROG, UsageError, build_parser, handle_completion, install_completion

__all__ = ["COMMANDS", "main"]

#: The commands, in the order ``posenc --help`` lists them.
COMMANDS = (generate, check, compare, identify, export, plot, kinds)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run one command and turn every way out into one line and an exit code."""
    request = os.environ.get("_POSENC_COMPLETE")
    if request:
        sys.exit(handle_completion(build_parser(COMMANDS, __version__), request))
    args = sys.argv[1:] if argv is None else argv
    names = {m.NAME for m in COMMANDS}
    parser = build_parser(COMMANDS, __version__, only=args[0] if args and args[0] in names else None)
    try:
        sys.exit(_run(parser, args))
    except PosencError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        sys.exit(exc.exit_code)
    except UsageError as exc:
        sys.stderr.write(f"Error: {exc} (see {exc.command} --help)\n")
        sys.exit(ExitCode.ERROR)
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted\n")
        sys.exit(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        quiet_broken_pipe()


def _run(parser, argv: list[str]) -> int:
    if not argv:  # bare `posenc`: the help, as a usage error
        parser.print_help(sys.stderr)
        return ExitCode.ERROR
    ns = parser.parse_args(argv)
    if ns.show_completion:
        from ._parser import completion_script

        sys.stdout.write(completion_script(ns.show_completion))
        return ExitCode.OK
    if ns.install_completion:
        path = install_completion(ns.install_completion)
        sys.stderr.write(f"installed completion in {path}; start a new shell to use it\n")
        return ExitCode.OK
    if ns.command is None:
        raise UsageError("missing command; choose from: " + ", ".join(m.NAME for m in COMMANDS), PROG)
    code = ns.run(ns)
    sys.stdout.flush()
    return int(code)
