"""One test over many cases of data, where a test id per case added only pytest's own cost (1-2 ms a case in a
worker and in the controller of ``-n``): :func:`each` runs every case and fails once, naming each case that
failed and why."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import pytest

T = TypeVar("T")


def each(cases: Iterable[T], check: Callable[[T], object]) -> None:
    """``check(case)`` for every case; then one failure listing every case whose check failed (an assertion or
    ``pytest.fail``). Any other exception stops at once, with the case added to its message (its traceback
    kept)."""
    cases = list(cases)
    assert cases, "no cases"
    failed = []
    for case in cases:
        try:
            check(case)
        except (AssertionError, pytest.fail.Exception) as exc:  # an assert, or pytest.raises that saw nothing
            failed.append(f"{case}: {exc}")
        except Exception as exc:
            exc.add_note(f"(case {case})")
            raise
    assert not failed, f"{len(failed)} of {len(cases)} cases failed:\n" + "\n".join(failed)
