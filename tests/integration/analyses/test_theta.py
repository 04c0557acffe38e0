"""Position along and distance to Theta (Observation 2): rank-one forms from dense linear
algebra land on it, the projection agrees with a brute-force search, and the summary and
figures report what the per-head values say."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from oracle import dense_abcd

from headforms import analyze
from headforms.analyses.theta import theta_frame, theta_projection, theta_summary
from headforms.figures.observations import theta_distribution_figure, theta_scatter_figure
from headforms.model_analysis import model_baseline

C, D, M = np.eye(4)[2], np.eye(4)[3], np.array([0.5, 0.5, 0.0, 0.0])


def _brute_force(p: np.ndarray, steps: int = 20001) -> tuple[float, float]:
    """Distance to Theta and c - d of the nearest point, by sampling both segments densely."""
    t = np.linspace(0.0, 1.0, steps)[:, None]
    points = np.vstack([C + t * (M - C), D + t * (M - D)])
    distance = np.linalg.norm(points - p, axis=1)
    best = np.argmin(distance)
    return float(distance[best]), float(points[best, 2] - points[best, 3])


def test_rank_one_forms_are_on_theta_at_the_position_of_their_angle():
    rng = np.random.default_rng(0)
    for _ in range(20):
        k, q = rng.normal(size=(2, 7))
        profile = dense_abcd(np.outer(k, q))
        _, distance, position = theta_projection(profile)
        assert distance[0] < 1e-12
        assert position[0] == pytest.approx(profile[2] - profile[3], abs=1e-12)
        cos = k @ q / np.linalg.norm(k) / np.linalg.norm(q)
        assert abs(position[0]) == pytest.approx(cos**2, abs=1e-10)  # a = b = (1 - cos^2)/2


def test_projection_agrees_with_a_brute_force_search():
    rng = np.random.default_rng(1)
    profiles = rng.dirichlet(np.full(4, 0.7), 40)
    points, distance, position = theta_projection(profiles)
    for p, point, dist, pos in zip(profiles, points, distance, position, strict=True):
        ref_distance, ref_position = _brute_force(p)
        assert dist == pytest.approx(ref_distance, abs=1e-4)
        assert dist == pytest.approx(np.linalg.norm(p - point), abs=1e-15)
        assert pos == pytest.approx(ref_position, abs=2e-4)
        assert point[0] == pytest.approx(point[1]) and point[2] * point[3] == 0  # on Theta


def test_vertices_and_midpoint_positions_and_undefined_profiles():
    _, distance, position = theta_projection(np.vstack([C, D, M, [1.0, 0, 0, 0], [np.nan] * 4]))
    np.testing.assert_allclose(distance[:3], 0.0, atol=1e-15)
    np.testing.assert_allclose(position[:3], [1.0, -1.0, 0.0], atol=1e-15)
    assert distance[3] == pytest.approx(np.sqrt(0.5))  # a = 1 is sqrt(1/2) from the midpoint
    assert np.isnan(distance[4]) and np.isnan(position[4])


@pytest.fixture(scope="module")
def minilm():
    return analyze("minilm-l6")


def test_summary_medians_match_brute_force_on_a_model_and_its_baseline(minilm):
    models = {"minilm-l6": minilm.heads}
    baselines = {"minilm-l6": model_baseline(minilm.card).heads}
    summary = theta_summary(models, baselines).set_index("heads")
    for source, table in (("trained", minilm.heads), ("Gaussian baseline", baselines["minilm-l6"])):
        found = [_brute_force(p) for p in table[["a", "b", "c", "d"]].to_numpy()]
        distance = np.array([f[0] for f in found])
        position = np.abs([f[1] for f in found])
        assert summary.loc[source, "median distance"] == pytest.approx(
            np.median(distance), abs=2e-4
        )
        assert summary.loc[source, "median |position|"] == pytest.approx(
            np.median(position), abs=3e-4
        )
    # Gaussian heads sit at the midpoint; trained ones spread along the branches.
    assert summary.loc["Gaussian baseline", "median |position|"] < 0.01
    assert (
        summary.loc["trained", "median |position|"]
        > summary.loc["Gaussian baseline", "median |position|"]
    )


def test_theta_figures(minilm):
    models = {"minilm-l6": minilm.heads}
    baselines = {"minilm-l6": model_baseline(minilm.card).heads}
    frame = theta_frame(minilm.heads)
    assert list(frame.columns) == ["layer", "head", "parity", "position", "distance"]
    scatter = theta_scatter_figure(models, baselines)
    trained = [t for t in scatter.data if t.name.endswith("trained heads")][0]
    assert len(trained.x) == len(minilm.heads)
    assert list(trained.customdata[0]) == ["minilm-l6", 0, 0]
    assert scatter.layout.yaxis.type == "log"
    distribution = theta_distribution_figure(models, baselines)
    assert len([t for t in distribution.data if t.showlegend]) == 2  # trained + baseline
    for fig in (scatter, distribution):
        assert fig.layout.title.text and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    empty = theta_summary({"x": pd.DataFrame(columns=minilm.heads.columns)}, {})
    assert len(empty) == 1
