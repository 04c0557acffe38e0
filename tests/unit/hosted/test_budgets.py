"""The budgets' kinds are one enum: each with what it counts and its variable, one count per
visitor and kind however the kind is named (the enum or its value), an unknown kind refused."""

from __future__ import annotations

import pytest

from headforms.errors import LimitError
from headforms.hosted import Budget, Limits
from headforms.hosted.budgets import Budgets
from headforms.settings import (
    VISITOR_ANALYSES_ENV,
    VISITOR_FORWARD_PASSES_ENV,
    VISITOR_SAMPLES_ENV,
    VISITOR_SUMMARIES_ENV,
)


def test_every_budget_says_what_it_counts_and_its_variable() -> None:
    limits = Limits(
        visitor_analyses=1, visitor_samples=2, visitor_forward_passes=3, visitor_summaries=4
    )
    assert [b.limit(limits) for b in Budget] == [1, 2, 3, 4]
    assert [b.variable for b in Budget] == [
        VISITOR_ANALYSES_ENV,
        VISITOR_SAMPLES_ENV,
        VISITOR_FORWARD_PASSES_ENV,
        VISITOR_SUMMARIES_ENV,
    ]
    assert all(b.what.startswith("new ") for b in Budget)


def test_a_budget_is_one_count_however_it_is_named() -> None:
    budgets, limits = Budgets(), Limits(visitor_summaries=2)
    budgets.spend("v", Budget.SUMMARIES, limits)
    budgets.spend("v", "summaries", limits)  # its value
    with pytest.raises(LimitError, match=VISITOR_SUMMARIES_ENV):
        budgets.check("v", Budget.SUMMARIES, limits)
    budgets.refund("v", "summaries")  # its value
    budgets.check("v", Budget.SUMMARIES, limits)
    assert len(budgets._starts[("v", Budget.SUMMARIES)]) == 1
    with pytest.raises(ValueError):
        budgets.spend("v", "nonsense", limits)  # its value
