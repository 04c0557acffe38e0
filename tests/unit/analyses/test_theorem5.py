"""Theorem 5 (Fig 10): sampled gamma-lobe profiles converge to b = 2r / (1 + r^2)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import dense_abcd

from headforms.analyses import theorem5
from headforms.errors import HeadformsError
from headforms.figures.theorem5 import theorem5_figure
from headforms.forms import profile_from_lobes


def test_limit_profile_of_the_paper_and_its_mirror():
    assert theorem5.limit_profile(-0.5, 1.0) == pytest.approx((0.0, 0.8, 0.2, 0.0))
    assert theorem5.limit_profile(-2.0, 1.0) == pytest.approx((0.0, 0.8, 0.0, 0.2))
    assert theorem5.limit_profile(-1.0, 1.0) == pytest.approx((0.0, 1.0, 0.0, 0.0))


def test_limit_is_the_profile_of_exactly_proportional_lobes():
    rng = np.random.default_rng(0)
    lobe = np.sort(rng.gamma(2.0, 1.0, 500))[::-1]
    r = 0.3
    norm = np.sum(lobe**2) * (1 + r**2)
    profile = profile_from_lobes(lobe, r * lobe, np.float64(0.0), norm)
    assert profile == pytest.approx(theorem5.limit_profile(-r, 1.0))


def _symmetric_form(eigenvalues: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A symmetric matrix with these eigenvalues in a random basis (its profile by the dense
    oracle: the definitions, computed independently of headforms)."""
    basis, _ = np.linalg.qr(rng.standard_normal((eigenvalues.size, eigenvalues.size)))
    return basis @ np.diag(eigenvalues) @ basis.T


def test_sampled_profiles_are_those_of_symmetric_forms_with_gamma_lobes():
    """Each sampled profile is the profile of a symmetric matrix whose spectrum is the sample:
    n values ~ Gamma(k, scale nu) and n values -Gamma(k, scale |mu|), drawn per repetition from
    ``default_rng([seed, n])``; and the same parameters draw the same spectra."""
    mu, nu, k, n, reps = -0.5, 1.0, 2.0, 24, 5
    frame = theorem5.sample_profiles(mu, nu, k, n, repetitions=reps)
    rng = np.random.default_rng([theorem5.SEED, n])
    positive = rng.gamma(k, nu, size=(reps, n))
    negative = rng.gamma(k, abs(mu), size=(reps, n))
    basis_rng = np.random.default_rng(1)
    for rep in range(reps):
        eigenvalues = np.concatenate([positive[rep], -negative[rep]])
        expected = dense_abcd(_symmetric_form(eigenvalues, basis_rng))
        np.testing.assert_allclose(frame.loc[rep, ["a", "b", "c", "d"]], expected, atol=1e-12)
    assert frame.equals(theorem5.sample_profiles(mu, nu, k, n, repetitions=reps))


def test_profiles_approach_the_limit_as_n_grows():
    frame = theorem5.sample_profiles_for_sizes(-0.5, 1.0, 2.0, (64, 1024), repetitions=100)
    distance = frame.groupby("n")["distance"].mean()
    assert distance[1024] < distance[64] / 2  # ~ 1/sqrt(n): a factor 4 expected
    assert distance[1024] < 0.03
    assert frame.loc[frame["n"] == 1024, "b"].mean() == pytest.approx(0.8, abs=0.01)
    assert frame.loc[frame["n"] == 1024, "d"].max() < 1e-3


@pytest.mark.parametrize(
    ("mu", "nu", "k", "n", "reps"),
    [
        (0.5, 1.0, 2.0, 64, 10),
        (-0.5, 1.0, 0.0, 64, 10),
        (-0.5, 1.0, 2.0, 0, 10),
        (-0.5, 1.0, 2.0, 100_000, 100),
    ],
)
def test_bad_parameters_are_clear_errors(mu, nu, k, n, reps):
    with pytest.raises(HeadformsError):
        theorem5.sample_profiles(mu, nu, k, n, reps)


def test_figure_marks_the_limit():
    frame = theorem5.sample_profiles_for_sizes(-0.5, 1.0, 2.0, (64, 1024), repetitions=20)
    fig = theorem5_figure(frame, theorem5.limit_profile(-0.5, 1.0), "mu = -1/2, nu = 1, k = 2")
    assert fig.layout.title.text and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    limits = [t for t in fig.data if t.marker.symbol == "x"]
    assert [t.x[0] for t in limits] == [pytest.approx(0.8)] * 2
    assert sum(len(t.x) for t in fig.data if t.marker.symbol != "x") == 40


@pytest.mark.parametrize(("mu", "vertex", "zero"), [(-0.5, "c", "d"), (-2.0, "d", "c")])
def test_figure_names_the_edge_the_profiles_lie_on(mu, vertex, zero):
    """|mu| > nu puts the limit (0, 0.8, 0, 0.2) and the samples on {c = 0}: the axis, the
    vertex label and the hover name that edge, and the plotted points lie on it."""
    frame = theorem5.sample_profiles_for_sizes(mu, 1.0, 2.0, (1024,), repetitions=20)
    fig = theorem5_figure(frame, theorem5.limit_profile(mu, 1.0))
    assert f"edge {{{zero} = 0}}" in fig.layout.xaxis.title.text
    assert f"vertex {vertex} = 1 (left)" in fig.layout.xaxis.title.text
    left = [a.text for a in fig.layout.annotations if a.x == 0]
    assert left == [f"vertex {vertex} = 1"]
    (points,) = [t for t in fig.data if t.marker.symbol != "x"]
    np.testing.assert_array_equal(points.x, frame["b"])
    on_edge = np.asarray(points.customdata)
    np.testing.assert_array_equal(on_edge[:, 0], frame[vertex])
    assert on_edge[:, 1].max() < 1e-3 < on_edge[:, 0].min()  # off-edge coordinate ~ 0
    assert f"<br>{vertex} %{{customdata[0]" in points.hovertemplate


def test_the_sample_size_is_checked_before_sampling():
    theorem5.check_sample_size([64, 1024], 100)
    with pytest.raises(HeadformsError, match="4096000 exceeds"):
        theorem5.check_sample_size([64, 40960], 100)
