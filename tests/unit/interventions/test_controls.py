"""Matched controls: the three matches (the edit's RMS change of the scores to 1e-9 relative; its
Frobenius norm inside the head's span or over all N dimensions, at every relative position,
against dense matrices), their logits the dense form's, seeded."""

from __future__ import annotations

import numpy as np
import pytest
from dense_edits import dense_edit, dense_form

from headforms.errors import OptionError
from headforms.interventions.algebra import (
    HeadFactors,
    change_norms,
    change_rank,
    distances,
    span_basis,
)
from headforms.interventions.anatomy import HeadLogit
from headforms.interventions.changes import ControlChange, FormChange
from headforms.interventions.controls import (
    ControlForm,
    ControlSeed,
    Match,
    ScoreLedger,
    control_factors,
    match_named,
    visible_pairs,
)
from headforms.interventions.edits import EDITS, FORM_EDITS

N, n, T = 24, 4, 8
CHANGING = [e for e in FORM_EDITS if e != "identity"]


def head() -> HeadFactors:
    rng = np.random.default_rng(11)
    return HeadFactors(
        rng.standard_normal((n, N)), rng.standard_normal((n, N)), np.array([0.8, 0.2])
    )


def control(
    name: str, causal: bool, index: int = 1, span: bool = False
) -> tuple[ControlForm, np.ndarray]:
    factors = head()
    steps = distances(T, causal, factors.rotary)
    rank = change_rank(factors, EDITS[name])
    basis = span_basis(factors).w if span else None
    seed = ControlSeed(7, 2, 3, index, rank, N, basis)
    return ControlForm.drawn(seed, steps, change_norms(factors, EDITS[name], steps)), steps


def logit(eps: float | None, causal: bool = True) -> HeadLogit:
    """A head's logit with biases and QK-norm (raw factors = the folded ones here)."""
    factors = head()
    rng = np.random.default_rng(5)
    return HeadLogit(
        factors,
        factors.q,
        factors.k,
        rng.standard_normal(n),
        rng.standard_normal(n),
        eps,
        0.37,
        causal,
    )


@pytest.mark.parametrize("span", [False, True])
@pytest.mark.parametrize("name", CHANGING)
def test_a_control_has_the_edits_frobenius_size_at_every_distance(name: str, span: bool) -> None:
    """``||Z_d|| = ||M_d - L_d||`` to 1e-9 relative, from dense ``N x N`` matrices, at every d
    (the edit's size changes with d on a RoPE head); the control's rank is the change's; a span
    control lies in the span of ``[K^T, Q^T]``."""
    form, steps = control(name, causal=False, span=span)
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
    span_of = np.linalg.qr(np.concatenate([factors.k, factors.q]).T)[0]
    projector = span_of @ span_of.T
    outside = np.linalg.norm(projector @ form.dense(0) @ projector - form.dense(0))
    if span:
        assert outside < 1e-9 * np.linalg.norm(form.dense(0))
    else:
        assert outside > 0.1 * np.linalg.norm(form.dense(0))  # over all N dims: mostly outside


@pytest.mark.parametrize("eps", [None, 1e-6])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("name", CHANGING)
def test_a_scores_control_moves_the_scores_as_much_as_the_edit(
    name: str, causal: bool, eps: float | None
) -> None:
    """The RMS over the visible pairs of a control's change of the head's scores (scale and
    QK-norm factors included) equals the edit's to 1e-9 relative; recomputed here from the dense
    control form and the factors."""
    head_logit = logit(eps, causal)
    x = np.random.default_rng(9).standard_normal((T, N))
    ledger = ScoreLedger()
    edited = FormChange(2, 3, head_logit, EDITS[name], ledger, ("edit", 0))
    edit_delta = edited.scores_delta(x)
    rank = change_rank(head_logit.factors, EDITS[name])
    basis = span_basis(head_logit.factors).w
    for k in (1, 2, 3):
        seed = ControlSeed(7, 2, 3, k, rank, N, basis)
        change = ControlChange(
            2, 3, head_logit, seed, Match.SCORES, ledger, ("control", 0, k), ("edit", 0)
        )
        delta = change.scores_delta(x)
        visible = visible_pairs(T, causal)
        assert np.sqrt(np.mean(delta[visible] ** 2)) == pytest.approx(
            np.sqrt(np.mean(edit_delta[visible] ** 2)), rel=1e-9
        )
        # the control is c W G W^T for one factor c: dense recomputation
        p, o = control_factors(7, 2, 3, k, rank, basis.shape[1])
        dense = basis @ p.T @ o @ basis.T
        raw = np.array([[x[j] @ dense @ x[i] for j in range(T)] for i in range(T)])
        raw = np.where(visible, raw * head_logit.factor(x), 0.0)
        ratio = delta[visible] / raw[visible]
        np.testing.assert_allclose(ratio, ratio[0], rtol=1e-8)
    assert ledger.tag_rms(("control", 0, 2)) == pytest.approx(ledger.tag_rms(("edit", 0)), 1e-9)


def test_a_scores_control_needs_its_edit_first() -> None:
    head_logit = logit(None)
    seed = ControlSeed(7, 2, 3, 1, 2, N, span_basis(head_logit.factors).w)
    change = ControlChange(
        2, 3, head_logit, seed, Match.SCORES, ScoreLedger(), ("control", 0, 1), ("edit", 0)
    )
    with pytest.raises(KeyError):
        change.scores_delta(np.ones((T, N)))


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


def test_controls_drawn_in_place_are_the_same_draws() -> None:
    """Drawn into the rows of a larger zeroed buffer (the batched hooks' way), the factors are
    those returned, and the rows past the rank stay zero; a wrongly shaped buffer is refused."""
    p, o = control_factors(1, 2, 3, 4, 5, N)
    buffer = np.zeros((2, 7, N))
    control_factors(1, 2, 3, 4, 5, N, out=(buffer[0, :5], buffer[1, :5]))
    np.testing.assert_array_equal(buffer[0, :5], p)
    np.testing.assert_array_equal(buffer[1, :5], o)
    assert not buffer[:, 5:].any()
    with pytest.raises(ValueError, match="out arrays of shape"):
        control_factors(1, 2, 3, 4, 5, N, out=(buffer[0], buffer[1]))


def test_matches_are_named_or_refused_in_one_line() -> None:
    assert match_named("span") is Match.SPAN
    with pytest.raises(OptionError, match="accepted: scores, span, frobenius"):
        match_named("gaussian")
