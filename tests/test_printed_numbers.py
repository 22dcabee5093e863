"""tests/printed_numbers.py: outputs agree when only the last digits of full-precision numbers differ, and never
when a word, a count or a shown digit does."""

from __future__ import annotations

import pytest

from .each import each
from .printed_numbers import NUMBER, assert_same_output, disagreement, numbers_agree

# ----- what passes: the last digits a CPU's vector width changes ----------------------------------------------------
AGREE = [
    # docs/cli.md's --json residual on an x86-64 baseline CPU and on one with AVX-512
    ('"residual_max_abs": 3.269059600796709e-08,', '"residual_max_abs": 3.269059611898939e-08,'),
    ('"residual_ulp": 0.5484571903944016,', '"residual_ulp": 0.5484571922570467,'),
    ("            3.1225732893945106", "            3.1225732893945115"),  # docs/checks.md, lowered dispatch
    ("max rel. diff 0", "max rel. diff 1.1e-16"),  # rounding noise below the absolute floor
    ("residual 2.88e-12", "residual 2.91e-12"),
    ("value 0.1", "value 0.10000000000000002"),
    ("[-0.9900, 1.0000]", "[-0.99, 1.0]"),  # the same numbers
    ("", ""),
]

# ----- what fails: a number, a count or a word that really differs --------------------------------------------------
DIFFER = [
    ("spread 3.27e-08", "spread 4.1e-08"),
    ('"residual_ulp": 0.5484571903944016,', '"residual_ulp": 0.5484581903944016,'),  # 1.8e-6 relative
    ("spread 2.62e-08", "spread 2.63e-08"),  # tiny, but above the absolute floor: its digits count
    ("[ 0.541  0.046]", "[ 0.545  0.046]"),  # a table value rounded to 3 decimals
    ("[ 0.541  0.046]", "[ 0.542  0.046]"),  # one unit in its last shown digit
    ("pe rows 0..63 of 64", "pe rows 0..64 of 65"),  # 64 rows vs 65 rows
    ("agrees within 0 (0 float32 ulp) on 64 rows", "agrees within 0 (0 float32 ulp) on 65 rows"),
    ('"mismatched": 64351,', '"mismatched": 64352,'),  # a count: exact, however large
    ('"total": 1234567,', '"total": 1234568,'),
    ("(exit 1)", "(exit 2)"),
    ("shapes (512, 128)", "shapes (512, 129)"),
    ("max abs 0", "max abs 2.4e-07"),  # one float32 ulp of 1 is not noise
    ("wrote pe.npy (float32)", "wrote pe.npy (float64)"),  # numerals inside words are text
    ("rope preset roformer", "rope preset llama3"),
    ("spread 2.4e-08  needs", "spread 2.4e-08 needs"),  # spacing is text
    ("x nan", "x 1.0"),
    ("1 2", "1 2 3"),  # a number more
    ("a\nb\n", "a\nb\nc\n"),  # a line more
    ("a\nb\nc\n", "a\nb\n"),  # a line less
    ("a\n(exit 1)", "a\n(exit 1)\n"),  # a line break more at the end
]


def test_last_digits_agree():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(AGREE, lambda case: _last_digits_agree(*case))


def _last_digits_agree(shown, printed):
    assert disagreement(shown, printed) is None
    assert disagreement(printed, shown) is None  # symmetric
    assert_same_output(shown, printed)


def test_real_differences_fail():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(DIFFER, lambda case: _real_differences_fail(*case))


def _real_differences_fail(shown, printed):
    assert disagreement(shown, printed) is not None
    assert disagreement(printed, shown) is not None
    with pytest.raises(AssertionError, match="prints something else than shown"):
        assert_same_output(shown, printed)


def test_the_failure_says_where():
    problem = disagreement("a 1\nspread 3.27e-08\nz\n", "a 1\nspread 4.1e-08\nz\n")
    assert problem is not None and problem.startswith("line 2: 4.1e-08 where 3.27e-08 is shown")


def test_what_counts_as_a_number():
    """Every case (:func:`tests.each.each`: each failure named)."""
    each(
        [
            ("float32 bf16 x86 64x32", []),
            ("rows 0..4 of 512", ["512"]),
            ("llama-3.1-8b.json", ["3.1"]),
            ("[-0.9900, 1.0000] 2.4e-08 3.13e+05 k=4", ["-0.9900", "1.0000", "2.4e-08", "3.13e+05", "4"]),
            ('"max_ulp": 2130706161.0,', ["2130706161.0"]),
            ("holds 0.96.", []),  # glued to a full stop: text, compared exactly
        ],
        lambda case: _what_counts_as_a_number(*case),
    )


def _what_counts_as_a_number(text, numbers):
    assert NUMBER.findall(text) == numbers


def test_integers_are_counts_and_floats_have_a_tolerance():
    assert not numbers_agree("1000000", "1000001")
    assert numbers_agree("1000000.0", "1000000.5")
    assert numbers_agree("-0", "0") and numbers_agree("-0.0", "0.0")
    assert not numbers_agree("1.5", "-1.5")
