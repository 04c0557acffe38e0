"""The verdict of an edit against its controls: |change| counted, the one-sided empirical
p-value, the effect over the controls' median, and a block bootstrap checked against a loop
written from its definition."""

from __future__ import annotations

import numpy as np
import pytest

from headforms.interventions.verdict import BLOCK, block_indices, control_verdict, verdict


def test_the_rank_counts_absolute_changes_and_the_p_value_is_one_sided() -> None:
    controls = np.array([-0.5, 0.1, 0.2, 0.3])
    lowering = control_verdict(-1.0, controls)  # lowers the loss more than any control moves it
    assert lowering["controls_smaller"] == 4
    assert lowering["p_value"] == pytest.approx((4 + 1) / 5)  # it costs no more than any
    costly = control_verdict(0.25, controls)
    assert costly["controls_smaller"] == 2  # |0.1|, |0.2| below |0.25|; |-0.5| is not
    assert costly["p_value"] == pytest.approx((1 + 1) / 5)  # 0.3 >= 0.25
    assert costly["effect"] == pytest.approx(0.25 / 0.15)
    assert np.isnan(control_verdict(1.0, np.array([-1.0, -2.0]))["effect"])  # median <= 0
    assert np.isnan(control_verdict(1.0, np.array([]))["p_value"])


def test_blocks_are_consecutive_positions_wrapping_around() -> None:
    index = block_indices(20, np.random.default_rng(0), 50)
    assert index.shape == (50, 20)
    steps = np.diff(index[:, :BLOCK], axis=1) % 20
    assert np.all(steps == 1)


def test_the_bootstrap_is_the_loop_of_its_definition() -> None:
    rng = np.random.default_rng(4)
    edit = rng.normal(0.3, 1.0, 40)
    controls = rng.normal(0.0, 1.0, (6, 40))
    found = verdict([edit], [controls], seed=3, resamples=300)
    assert found.value == pytest.approx(edit.mean())
    assert found.low < found.value < found.high
    again = np.random.default_rng([3, 38])
    boot, excess = [], []
    for _ in range(1):
        index = block_indices(40, again, 300)
        for row in index:
            boot.append(edit[row].mean())
            excess.append(edit[row].mean() - np.median(controls[:, row].mean(axis=1)))
    assert found.low == pytest.approx(np.percentile(boot, 2.5))
    assert found.high == pytest.approx(np.percentile(boot, 97.5))
    assert found.excess_low == pytest.approx(np.percentile(excess, 2.5))
    assert found.excess_high == pytest.approx(np.percentile(excess, 97.5))


def test_several_texts_weigh_alike() -> None:
    short, long = np.full(10, 1.0), np.full(100, 3.0)
    found = verdict([short, long], [np.zeros((2, 10)), np.ones((2, 100))], resamples=50)
    assert found.value == pytest.approx(2.0)
    assert found.control_median == pytest.approx(0.5)
    assert found.low == pytest.approx(2.0) and found.high == pytest.approx(2.0)
    assert found.p_value == pytest.approx(1 / 3)


def test_two_texts_resample_from_one_stream_on_every_call() -> None:
    """The positions of the second text follow the first's in one generator, and a second call
    (its positions kept from the first) resamples exactly as the first did."""
    rng = np.random.default_rng(5)
    edits = [rng.normal(0.2, 1.0, 30), rng.normal(0.4, 1.0, 50)]
    again = np.random.default_rng([2, 38])
    indices = [block_indices(len(e), again, 200) for e in edits]
    boot = sum(e[index].mean(axis=1) for e, index in zip(edits, indices, strict=True)) / 2
    for _ in range(2):
        found = verdict(edits, [np.zeros((0, 30)), np.zeros((0, 50))], seed=2, resamples=200)
        assert found.low == pytest.approx(np.percentile(boot, 2.5))
        assert found.high == pytest.approx(np.percentile(boot, 97.5))
