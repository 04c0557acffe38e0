"""Theorem 5 (Fig 10): sampled gamma-lobe profiles converge to b = 2r / (1 + r^2)."""

from __future__ import annotations

import numpy as np
import pytest

from headforms.analyses import theorem5
from headforms.errors import HeadformsError
from headforms.figures.paper import theorem5_figure
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


def test_samples_lie_on_the_symmetric_face():
    frame = theorem5.sample_profiles(-0.5, 1.0, 2.0, 64, repetitions=50)
    assert len(frame) == 50 and (frame["a"] == 0).all()
    np.testing.assert_allclose(frame[["a", "b", "c", "d"]].sum(axis=1), 1.0)
    again = theorem5.sample_profiles(-0.5, 1.0, 2.0, 64, repetitions=50)
    assert frame.equals(again)


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
