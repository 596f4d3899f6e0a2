"""The shared helpers every format uses: finite numbers, ratios of figures, plain-text tables."""

from __future__ import annotations

import math

from wakelab.formatting import finite_number, format_signed_us, positive_ratio
from wakelab.report.text import format_table


def test_a_finite_number_is_a_real_figure_only() -> None:
    assert finite_number(3) == 3.0 and isinstance(finite_number(3), float)
    assert finite_number(2.5) == 2.5
    for not_a_figure in (None, True, False, "3", math.nan, math.inf, -math.inf, [1]):
        assert finite_number(not_a_figure) is None, not_a_figure


def test_a_ratio_needs_two_positive_figures() -> None:
    assert positive_ratio(30, 10) == 3.0
    for value, base in ((0, 10), (10, 0), (-1, 10), (10, -1), (None, 10), (10, None), (True, 1), (10, math.nan)):
        assert positive_ratio(value, base) is None, (value, base)


def test_format_table_right_aligns_the_columns_named() -> None:
    lines = format_table(["id", "name", "n"], [["7", "event", "12"], ["12", "pipe-wakeup", "3"]], right={0, 2})
    assert lines == [
        "  id  name          n",
        "   7  event        12",
        "  12  pipe-wakeup   3",
    ]
    # Without ``right``: the first ``align_left`` columns left, the rest right, as before.
    assert format_table(["a", "b"], [["xx", "y"]]) == ["  a   b", "  xx  y"]


def test_a_signed_difference_in_us_carries_its_sign_but_zero_none() -> None:
    assert [format_signed_us(v) for v in (7580.0, -5920.0, 0.0, math.nan)] == ["+7.58", "-5.92", "0.00", "-"]
    assert format_signed_us(-123456.0, minus="\u2212") == "\u2212123"
