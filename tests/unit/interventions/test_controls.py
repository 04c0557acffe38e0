"""Matched controls: as large as the edit at every relative position (dense Frobenius norms),
their logits the dense form's, seeded, and their summary."""

from __future__ import annotations

import numpy as np
import pytest
from dense_edits import dense_edit, dense_form

from headforms.interventions.algebra import HeadFactors, change_norms, change_rank, distances
from headforms.interventions.controls import ControlForm, control_factors, control_summary
from headforms.interventions.edits import EDITS, FORM_EDITS

N, n, T = 24, 4, 8


def head() -> HeadFactors:
    rng = np.random.default_rng(11)
    return HeadFactors(
        rng.standard_normal((n, N)), rng.standard_normal((n, N)), np.array([0.8, 0.2])
    )


def control(name: str, causal: bool, index: int = 1) -> tuple[ControlForm, np.ndarray]:
    factors = head()
    steps = distances(T, causal, factors.rotary)
    rank = change_rank(factors, EDITS[name])
    p, o = control_factors(7, 2, 3, index, rank, N)
    return ControlForm.matched(p, o, steps, change_norms(factors, EDITS[name], steps)), steps


@pytest.mark.parametrize("name", [e for e in FORM_EDITS if e != "identity"])
def test_a_control_has_the_edits_frobenius_size_at_every_distance(name: str) -> None:
    """``||Z_d|| = ||M_d - L_d||`` to 1e-9 relative, from dense ``N x N`` matrices, at every d
    (the edit's size changes with d on a RoPE head); the control's rank is the change's."""
    form, steps = control(name, causal=False)
    factors = head()
    sizes = []
    for index, d in enumerate(steps):
        dense = dense_form(factors.q, factors.k, factors.inv_freq, int(d))
        want = np.linalg.norm(dense_edit(dense, name) - dense)
        assert np.linalg.norm(form.dense(index)) == pytest.approx(want, rel=1e-9)
        sizes.append(want)
    assert np.ptp(sizes) > 1e-3 * np.mean(sizes)  # sizes do differ with d
    change = dense_edit(dense_form(factors.q, factors.k, factors.inv_freq, 0), name)
    change = change - dense_form(factors.q, factors.k, factors.inv_freq, 0)
    assert np.linalg.matrix_rank(form.dense(0), tol=1e-9) == np.linalg.matrix_rank(change, tol=1e-9)


@pytest.mark.parametrize("causal", [True, False])
def test_a_controls_logits_are_its_dense_forms(causal: bool) -> None:
    form, steps = control("symmetric", causal)
    x = np.random.default_rng(3).standard_normal((T, N))
    got = form.delta(x, causal)
    for i in range(T):
        for j in range(T):
            if causal and j > i:
                assert got[i, j] == 0.0
                continue
            index = int(np.flatnonzero(steps == i - j)[0])
            assert got[i, j] == pytest.approx(x[j] @ form.dense(index) @ x[i], rel=1e-10)


def test_the_identity_has_no_change_and_zero_controls() -> None:
    form, _ = control("identity", causal=True)
    assert form.p.shape == (0, N)
    np.testing.assert_array_equal(form.delta(np.ones((T, N)), True), 0.0)


def test_controls_are_seeded_per_head_and_index() -> None:
    first = control_factors(1, 2, 3, 4, 5, N)
    np.testing.assert_array_equal(first[0], control_factors(1, 2, 3, 4, 5, N)[0])
    for other in ((2, 2, 3, 4), (1, 3, 3, 4), (1, 2, 4, 4), (1, 2, 3, 5)):
        assert not np.array_equal(first[0], control_factors(*other, 5, N)[0])


def test_the_summary_reads_the_edit_against_its_controls() -> None:
    values = np.arange(1.0, 11.0)  # 1 .. 10
    summary = control_summary(7.5, values)
    assert summary["control_median"] == 5.5
    assert summary["control_p10"] == pytest.approx(np.percentile(values, 10))
    assert summary["control_p90"] == pytest.approx(np.percentile(values, 90))
    assert summary["control_rank"] == 7  # 1 .. 7 changed the measure less
    assert np.isnan(control_summary(1.0, np.array([]))["control_median"])
