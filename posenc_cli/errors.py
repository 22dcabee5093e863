"""The error tree and exit codes shared by the engine and the CLI.

The engine raises :class:`PosencError` subclasses with a one-line message that names the bad value and
the fix; ``cli.py`` prints ``Error: <message>`` on stderr and exits with ``exit_code``.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # every required property holds, tables match
    FAILED = 1  # a property failed or tables differ
    ERROR = 2  # bad input, bad parameters, I/O trouble
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)


class PosencError(Exception):
    """A user-facing error: one line, names the bad value and the fix."""

    exit_code: int = ExitCode.ERROR


class ParameterError(PosencError, ValueError):
    """A parameter of an encoding or a command is invalid."""


class InputError(PosencError):
    """A source (file, stdin, spec) cannot be read or is not an encoding table."""


class OutputError(PosencError):
    """A destination cannot be written."""
