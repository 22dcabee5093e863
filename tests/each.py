"""One test over many cases of data, where a test id per case added only pytest's own cost (1-2 ms a case in a
worker and in the controller of ``-n``): :func:`each` runs every case and fails once, naming each case that
failed and why."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import TypeVar

import pytest

T = TypeVar("T")


def each(cases: Iterable[T], check: Callable[[T], object]) -> None:
    """``check(case)`` for every case; then one failure listing every case whose check failed (an assertion or
    ``pytest.fail``). A case that calls ``pytest.skip`` has nothing to check; every case skipping is a failure.
    Any other exception stops at once, with the case added to its message (its traceback kept)."""
    cases = list(cases)
    assert cases, "no cases"
    failed, skipped = [], 0
    for case in cases:
        try:
            check(case)
        except (AssertionError, pytest.fail.Exception) as exc:  # an assert, or pytest.raises that saw nothing
            failed.append(f"{case}: {exc}")
        except pytest.skip.Exception:  # nothing to check for this case (pytest.skip): the others still run
            skipped += 1
        except Exception as exc:
            exc.add_note(f"(case {case})")
            raise
    assert not failed, f"{len(failed)} of {len(cases)} cases failed:\n" + "\n".join(failed)
    assert skipped < len(cases), f"every case skipped: nothing was checked ({len(cases)} cases)"


def drawn(seed: int, count: int, draw: Callable[[random.Random], T]) -> list[T]:
    """``count`` cases, each ``draw(rnd)`` from one ``random.Random(seed)``: a hypothesis example draws a single
    integer and its cases come from it (hypothesis drawing each case itself cost more than the cases' own work).
    Run them with :func:`each`, which names every case that fails."""
    rnd = random.Random(seed)
    return [draw(rnd) for _ in range(count)]
