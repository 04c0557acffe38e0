"""Edited forms from factors against dense ``N x N`` forms (tests/helpers/dense_edits.py): the
change of the logits at every relative position, its Frobenius size, its rank, and where the
edited form lands on the simplex."""

from __future__ import annotations

import numpy as np
import pytest
from dense_edits import dense_change, dense_edit, dense_form, rotation
from numerics import assert_shares_close

from headforms.forms import parity_labels
from headforms.interventions.algebra import (
    HeadFactors,
    balanced_delta,
    balanced_shift,
    bilinear_terms,
    change_norms,
    change_rank,
    distances,
    edited_profile,
    linear_delta,
    rank1_delta,
)
from headforms.interventions.edits import EDITS, FORM_EDITS

N, n, T = 20, 4, 9
LINEAR = [name for name, edit in EDITS.items() if edit.kind == "linear"]


def head(seed: int = 0, rotary: str = "partial") -> HeadFactors:
    """A random head of dim n in model dim N; RoPE on every pair, on one pair, or none."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((n, N)), rng.standard_normal((n, N))
    inv_freq = {"full": np.array([0.9, 0.3]), "partial": np.array([0.7]), "none": None}[rotary]
    return HeadFactors(q, k, inv_freq)


def tokens(seed: int = 5, length: int = T) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((length, N))


def delta_of(factors: HeadFactors, x: np.ndarray, name: str, causal: bool) -> np.ndarray:
    edit = EDITS[name]
    if edit.kind == "linear":
        return linear_delta(factors, x, edit, causal)
    return {"rank1": rank1_delta, "balanced": balanced_delta}[name](factors, x, causal)


def test_the_models_logit_is_the_form_at_the_relative_position() -> None:
    """``(R(p_i) Q x_i) . (R(p_j) K x_j)`` (how the model computes it) is ``x_j^T L_{i-j} x_i``,
    and ``ell_t`` is the transposed form's."""
    factors = head(rotary="full")
    x = tokens()
    ell, ell_t = bilinear_terms(factors, x)
    for i in range(T):
        for j in range(T):
            rq, rk = rotation(factors.inv_freq, n, i), rotation(factors.inv_freq, n, j)
            model = (rq @ factors.q @ x[i]) @ (rk @ factors.k @ x[j])
            form = dense_form(factors.q, factors.k, factors.inv_freq, i - j)
            assert ell[i, j] == pytest.approx(model, rel=1e-12, abs=1e-12)
            assert ell[i, j] == pytest.approx(x[j] @ form @ x[i], rel=1e-12, abs=1e-12)
            assert ell_t[i, j] == pytest.approx(x[j] @ form.T @ x[i], rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", FORM_EDITS)
@pytest.mark.parametrize(
    ("rotary", "causal"), [("full", True), ("partial", True), ("partial", False), ("none", False)]
)
def test_the_change_of_the_logits_is_the_dense_forms(name: str, rotary: str, causal: bool) -> None:
    """At every query/key pair: ``x_j^T (M_d - L_d) x_i`` with dense ``N x N`` forms (RoPE on
    all pairs or part of them, causal or both directions, or no RoPE at all)."""
    factors = head(1, rotary)
    x = tokens(2)
    want = dense_change(factors.q, factors.k, factors.inv_freq, x, name, causal)
    got = delta_of(factors, x, name, causal)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())


@pytest.mark.parametrize("name", FORM_EDITS)
def test_the_size_of_the_change_is_the_dense_frobenius_norm(name: str) -> None:
    factors = head(3, "full")
    steps = distances(T, causal=False, rotary=True)
    got = change_norms(factors, EDITS[name], steps)
    for d, value in zip(steps, got, strict=True):
        form = dense_form(factors.q, factors.k, factors.inv_freq, int(d))
        assert value == pytest.approx(
            np.linalg.norm(dense_edit(form, name) - form), rel=1e-10, abs=1e-12
        )


def test_the_ranks_of_the_changes() -> None:
    """``M_0 - L_0``: 0 (identity), n (zero: ``-L``), n - 1 (rank1), 2n (the others)."""
    factors = head(4, "full")
    ranks = {name: change_rank(factors, EDITS[name]) for name in FORM_EDITS}
    assert ranks["identity"] == 0
    assert ranks["zero"] == n
    assert ranks["rank1"] == n - 1
    for name in ("symmetric", "antisymmetric", "transpose", "flip", "balanced"):
        form = dense_form(factors.q, factors.k, factors.inv_freq, 0)
        dense_rank = np.linalg.matrix_rank(dense_edit(form, name) - form, tol=1e-9)
        assert ranks[name] == dense_rank, name
    assert ranks["symmetric"] == 2 * n


def test_balanced_shift_pairs_the_kth_positive_with_the_kth_negative() -> None:
    values = np.array([[3.0, -1.0, 0.5, -4.0, 2.0, 0.0]])
    # positive 3, 2, 0.5 against negative 4, 1: pairs min(3,4)=3, min(2,1)=1, 0.5 unpaired
    want = np.array([[3.0, -1.0, 0.0, -3.0, 1.0, 0.0]])
    np.testing.assert_allclose(values + balanced_shift(values), want)


def profile(factors: HeadFactors, name: str) -> dict:
    return edited_profile(factors, EDITS[name])


@pytest.mark.parametrize("seed", range(4))
def test_balanced_lands_on_the_edge_c_equals_d_equals_zero(seed: int) -> None:
    p = profile(head(seed, "full"), "balanced")
    assert_shares_close([p["c"], p["d"]], [0.0, 0.0])
    assert p["parity"] == "II"


@pytest.mark.parametrize("seed", range(4))
def test_rank1_lands_on_theta(seed: int) -> None:
    """Theta: ``a = b`` and ``c d = 0`` (Fact 1)."""
    p = profile(head(seed, "partial"), "rank1")
    assert_shares_close(p["a"], p["b"])
    assert p["c"] * p["d"] == pytest.approx(0.0, abs=1e-12)
    assert p["c"] + p["d"] > 0.0


def test_symmetric_antisymmetric_and_flip_profiles() -> None:
    """S has no antisymmetric part (a = 0), A no symmetric part (a = 1); flip swaps the lobes
    (c <-> d) and so the parity I+ <-> I-; transpose changes nothing (orientation)."""
    factors = head(6, "full")
    original = profile(factors, "identity")
    assert_shares_close(profile(factors, "symmetric")["a"], 0.0)
    assert_shares_close(profile(factors, "antisymmetric")["a"], 1.0)
    flipped = profile(factors, "flip")
    assert_shares_close([flipped["c"], flipped["d"]], [original["d"], original["c"]])
    swap = {"I+": "I-", "I-": "I+", "II": "II"}
    assert flipped["parity"] == swap[original["parity"]]
    transposed = profile(factors, "transpose")
    assert_shares_close([transposed[c] for c in "abcd"], [original[c] for c in "abcd"])
    form = dense_form(factors.q, factors.k, factors.inv_freq, 0)
    values = np.linalg.eigvalsh((form + form.T) / 2.0)
    norm = np.sum(((form + form.T) / 2.0) ** 2)
    pos, neg = np.sort(np.clip(values, 0, None))[::-1], np.sort(np.clip(-values, 0, None))[::-1]
    c_sym = np.sum(np.clip(pos - neg, 0, None) ** 2) / norm
    d_sym = np.sum(np.clip(neg - pos, 0, None) ** 2) / norm
    assert original["parity"] == parity_labels(np.array([c_sym]), np.array([d_sym]))[0]


def test_zero_has_no_profile() -> None:
    p = profile(head(), "zero")
    assert np.isnan(p["a"]) and p["parity"] == "zero"
