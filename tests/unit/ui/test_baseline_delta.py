"""A head's value beside its Gaussian baseline (ui.widgets.baseline_delta, issue 28 item 9): a
difference that rounds to zero is shown as 0.000 without an arrow, never "↓ -0.000"."""

from __future__ import annotations

import math

from ui.widgets import baseline_delta


def test_a_difference_that_rounds_to_zero_has_no_sign_and_no_arrow() -> None:
    assert baseline_delta(0.5, 0.5000004) == ("0.000", "off")
    assert baseline_delta(0.5000004, 0.5) == ("0.000", "off")
    assert baseline_delta(0.25, 0.25, digits=2) == ("0.00", "off")


def test_a_difference_keeps_its_sign_and_its_arrow() -> None:
    assert baseline_delta(0.5, 0.4) == ("+0.100", "auto")
    assert baseline_delta(0.4, 0.5) == ("-0.100", "auto")


def test_no_baseline_is_said() -> None:
    assert baseline_delta(0.5, math.nan) == ("no baseline", "off")
