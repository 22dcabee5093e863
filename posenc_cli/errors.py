"""The error tree and exit codes shared by the engine and the CLI.

The engine raises :class:`PosencError` subclasses with a one-line message that names the bad value and
the fix; the CLI prints ``Error: <message>`` on stderr and exits with ``exit_code``.

A message names a parameter through :func:`param`, never through a command-line flag: ``str(error)`` spells it
as Python does (``tensor=``), and the CLI renders the same error with the flag that sets it (``--tensor``)
through :meth:`PosencError.render`. So the library and the command line tell the same story, each in its own
words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # every required property holds, tables match
    FAILED = 1  # a property failed or tables differ
    ERROR = 2  # bad input, bad parameters, I/O trouble
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)


class _Interrupt:
    """Whether Ctrl-C came during the command (:func:`posenc_cli.cli.main` installs :meth:`handler` for SIGINT).

    Python raises ``KeyboardInterrupt`` in whatever code the main thread runs when the signal is handled; when that
    is a callback whose exceptions the interpreter ignores (the import system's module-lock cleanup, a weakref
    finalizer), the interrupt is printed as "Exception ignored" and lost, and the command ran on to exit 0 (an
    export replaced the old file). The flag keeps it: a file is not committed and the command does not end with
    0 once it is set."""

    seen = False

    @classmethod
    def handler(cls, signum: int, frame: object) -> None:
        cls.seen = True
        raise KeyboardInterrupt


def interrupted() -> bool:
    """True once Ctrl-C came during this command, even if the ``KeyboardInterrupt`` it raised was lost."""
    return _Interrupt.seen


_MARK = re.compile(
    "\x02([A-Za-z_][A-Za-z0-9_]*)\x03( (?=[-+0-9'\"\\[(]|[A-Z][A-Z_]+\\b|True\\b|False\\b|None\\b|nan\\b|inf\\b))?"
)


def param(name: str) -> str:
    """A reference to the parameter ``name`` inside an error message: spelled as the option that sets it on the
    command line (``--len 0``, ``pass --force``), and for Python callers as the keyword, joined to a value that
    follows it (``length=0``, ``pass force``)."""
    return f"\x02{name}\x03"


#: :func:`param` under a name that does not clash with the encodings' dataclass-field helper ``param``
ref = param


def option_clause(text: str) -> str:
    """A clause of a message that offers an option as the fix (``, or pass read_as FAMILY``): kept where the option
    exists, dropped by a command that does not take it (``spell`` gives it as ``""``), so that no message names an
    option its command has not."""
    return f"\x04{text}\x05"


_CLAUSE = re.compile("\x04(.*?)\x05", re.S)


def render_params(text: str, spell: Callable[[str], str | None] | None = None) -> str:
    """``text`` with each :func:`param` reference spelled by ``spell(name)`` (None: the Python spelling; ``""``: the
    command has no such option, and an :func:`option_clause` naming it is left out)."""

    def clause(m: re.Match[str]) -> str:
        inner = m.group(1)
        names = [n.group(1) for n in _MARK.finditer(inner)]
        return "" if spell is not None and any(spell(n) == "" for n in names) else inner

    text = _CLAUSE.sub(clause, text)

    def one(m: re.Match[str]) -> str:
        name, value_follows = m.group(1), m.group(2) is not None
        spelled = spell(name) if spell is not None else None
        if spelled:
            return spelled + (" " if value_follows else "")
        return f"{name}=" if value_follows else name

    return _MARK.sub(one, text)


class PosencError(Exception):
    """A user-facing error: one line, names the bad value and the fix."""

    exit_code: int = ExitCode.ERROR

    def __str__(self) -> str:
        # BaseException's own text: KeyError's (next in UnknownTensorError's MRO) would quote the message
        return render_params(BaseException.__str__(self))

    def render(self, spell: Callable[[str], str | None]) -> str:
        """The message with parameter references spelled by ``spell`` (the CLI: the flag of each parameter)."""
        return render_params(BaseException.__str__(self), spell)


class ParameterError(PosencError, ValueError):
    """A parameter of an encoding or a command is invalid."""


class DuplicateParameterError(ParameterError):
    """One parameter given in two places (a flag and ``-p``, a spec and a keyword, an alias and its name)."""


class UnknownTensorError(ParameterError, KeyError):
    """A tensor name that the table does not hold (also a ``KeyError``, as a mapping lookup would raise)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return PosencError.__str__(self)


class RefusedError(ParameterError):
    """A model whose positions run code posenc does not reproduce (no rule was read from it): refused by name, in
    one line; in an audit, a ``refused`` row (the rest of the model still audited)."""


class InputError(PosencError):
    """A source (file, stdin, spec) cannot be read or is not an encoding table."""


class NoTableError(InputError):
    """A file that reads well but holds no positional table posenc reads (an ONNX graph whose rotation is made of
    ordinary ops, with no rotary node): an input error for a command asked for its table, "skipped" in an audit."""


class OutputError(PosencError):
    """A destination cannot be written."""


def check_int(name: str, value: object, low: int, high: int | None = None, why: str = "") -> int:
    """``value`` as an int when it is one (not a bool) within ``low .. high``; else a :class:`ParameterError`
    naming the parameter, the value and the valid range (``why`` says where the bound comes from)."""
    import numbers

    span = f"from {low} to {high}" if high is not None else f">= {low}"
    tail = f" ({why})" if why else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"{param(name)} {value!r} is not an integer; pass an integer {span}{tail}")
    v = int(value)
    if v < low or (high is not None and v > high):
        raise ParameterError(f"{param(name)} {v} is out of range; pass an integer {span}{tail}")
    return v


def check_float(
    name: str, value: object, low: float = 0.0, high: float | None = None, *, open_low: bool = False
) -> float:
    """``value`` as a finite float within ``low .. high`` (``open_low``: above ``low``); nan, inf and anything
    outside is a :class:`ParameterError` naming the parameter, the value and the valid range."""
    import math
    import numbers

    op = ">" if open_low else ">="
    span = f"a finite number {op} {low:g}" + (f" and <= {high:g}" if high is not None else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{param(name)} {value!r} is not a number; pass {span}")
    v = float(value)
    if not math.isfinite(v) or (v <= low if open_low else v < low) or (high is not None and v > high):
        raise ParameterError(f"{param(name)} {v!r} is out of range; pass {span}")
    return v
