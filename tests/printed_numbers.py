"""Printed output compared as a person reads it: the words exactly, the numbers as numbers.

(Not ``tests/numbers.py``: a test that runs ``python -m posenc_cli`` in tests/ would import it as the standard
library's ``numbers``, and NumPy with it would fail.)

A number's last digits are not part of what a command says: NumPy picks its loops by the CPU's vector width
(SSE, AVX2, AVX-512), so a sum or a least-squares residual printed at full precision (``repr`` in ``--json``)
changes in its last digits from one machine to the next. :func:`disagreement` compares two outputs line by
line and token by token:

- the text between numbers must be equal, character for character (words, paths, spacing, punctuation);
- two integers (``64``, ``65536``, an exit code, a shape) must be equal: they are counts;
- any other two numbers must agree within ``max(atol, rtol * max(|a|, |b|))``. ``rtol = 1e-6`` is far above
  the float64 rounding of a residual or a difference (~1e-16 relative, a few hundred ulps after sums and
  reductions) yet far below the rounding of a number shown for people: distinct values printed with at most
  five significant digits (``0.541``, ``2.62e-08``, ``1.7321``) differ by at least 1e-5 relative, so a table
  value rounded to 3 decimals still has to be exactly what is shown. ``atol = 1e-12`` is the floor for numbers
  that are rounding noise of tables of magnitude ~1 (``max rel. diff 0`` against ``1.1e-16``).

A number is a decimal numeral standing on its own: ``float32``, ``64x32``, ``0..4`` and ``llama-3.1-8b``'s
``8b`` are text, compared exactly; so is ``nan``.
"""

from __future__ import annotations

import re

RTOL = 1e-6
ATOL = 1e-12

#: A numeral not glued to a word, another numeral or a dot (so ``float32``, ``0..4`` and ``64x32`` stay text).
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")
INTEGER = re.compile(r"[-+]?\d+")
#: Splits a line into text, number, text, ..., text (the numbers at the odd indices).
TOKENS = re.compile(f"({NUMBER.pattern})")


def numbers_agree(shown: str, actual: str, *, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Whether two printed numbers say the same: integers equal, others within ``max(atol, rtol*max|.|)``."""
    if INTEGER.fullmatch(shown) and INTEGER.fullmatch(actual):
        return int(shown) == int(actual)
    a, b = float(shown), float(actual)
    return abs(a - b) <= max(atol, rtol * max(abs(a), abs(b)))


def disagreement(shown: str, actual: str, *, rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """None when ``actual`` prints what ``shown`` shows (the module's rules); else where and how it differs."""
    shown_lines, actual_lines = shown.split("\n"), actual.split("\n")
    for number, (s, a) in enumerate(zip(shown_lines, actual_lines), 1):
        s_parts, a_parts = TOKENS.split(s), TOKENS.split(a)
        lines = f"\n  shown:   {s}\n  printed: {a}"
        if len(s_parts) != len(a_parts):
            return f"line {number}: {len(s_parts) // 2} numbers shown, {len(a_parts) // 2} printed{lines}"
        for i, (sp, ap) in enumerate(zip(s_parts, a_parts)):
            if i % 2 == 0 and sp != ap:
                return f"line {number}: the text differs{lines}"
            if i % 2 == 1 and not numbers_agree(sp, ap, rtol=rtol, atol=atol):
                return f"line {number}: {ap} where {sp} is shown{lines}"
    if len(shown_lines) != len(actual_lines):
        extra = (actual_lines if len(actual_lines) > len(shown_lines) else shown_lines)[
            min(len(shown_lines), len(actual_lines))
        ]
        return f"{len(shown_lines)} lines shown, {len(actual_lines)} printed; the first unmatched: {extra!r}"
    return None


def assert_same_output(
    shown: str, actual: str, *, rtol: float = RTOL, atol: float = ATOL, what: str = "output"
) -> None:
    """Fail, saying where, unless ``actual`` prints what ``shown`` shows (:func:`disagreement`)."""
    problem = disagreement(shown, actual, rtol=rtol, atol=atol)
    if problem is not None:
        raise AssertionError(f"{what} prints something else than shown: {problem}\n--- printed:\n{actual}")
