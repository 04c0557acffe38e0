"""Unit spectra, their mean, PCA and clusters (Figs 3-5) on planted structure and a real model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import adjusted_rand_score

from headforms import analyze
from headforms.analyses import spectra as sp
from headforms.errors import HeadformsError
from headforms.figures.paper import (
    cluster_spectra_figure,
    mean_spectrum_figure,
    silhouette_figure,
    spectra_pca_2d_figure,
    spectra_pca_figure,
)

HALF = 32
DECAY = np.linspace(1.0, 0.05, HALF)
SHAPES = (
    np.concatenate([DECAY, -DECAY]),  # hyperbolic: lambda_+ = lambda_-
    np.concatenate([DECAY, -0.3 * DECAY]),  # positive lobe dominates (H + P)
    np.concatenate([0.3 * DECAY, -DECAY]),  # negative lobe dominates (H - P)
)


@pytest.fixture(scope="module")
def planted() -> tuple[np.ndarray, np.ndarray]:
    """120 heads from 3 planted spectral shapes, random scales, noise, unsorted entries."""
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 40)
    eig = np.stack(
        [SHAPES[j] * rng.uniform(0.5, 3.0) + rng.normal(0.0, 0.03, 2 * HALF) for j in labels]
    )
    eig = np.stack([rng.permutation(row) for row in eig])
    order = rng.permutation(len(labels))
    return eig[order], labels[order]


def _heads(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    profile = rng.dirichlet(np.ones(4), n)
    return pd.DataFrame(
        {
            "layer": np.arange(n) // 10,
            "head": np.arange(n) % 10,
            "parity": np.array(["I+", "II", "I-"])[np.arange(n) % 3],
            "a": profile[:, 0],
            "b": profile[:, 1],
            "c": profile[:, 2],
            "d": profile[:, 3],
            "pairing": rng.uniform(size=n),
        }
    )


def test_unit_spectra_sorted_unit_and_scale_invariant(planted):
    eig, _ = planted
    unit = sp.unit_spectra(eig)
    assert np.all(np.diff(unit, axis=1) <= 0)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0)
    np.testing.assert_allclose(sp.unit_spectra(7.5 * eig), unit)
    assert np.array_equal(sp.unit_spectra(np.zeros((1, 4))), np.zeros((1, 4)))


def test_mean_unit_spectrum_is_the_quantile_average():
    eig = np.array([[3.0, -4.0], [0.0, 2.0]])  # unit sorted: (0.6, -0.8) and (1, 0)
    np.testing.assert_allclose(sp.mean_unit_spectrum(eig), [0.8, -0.4])
    with pytest.raises(HeadformsError):
        sp.mean_unit_spectrum(np.zeros((0, 4)))


def test_silhouette_recovers_three_planted_clusters(planted):
    eig, labels = planted
    clusters = sp.cluster_spectra(eig)
    assert clusters.k == 3
    assert adjusted_rand_score(labels, clusters.labels) == 1.0
    assert clusters.silhouette[3] == max(clusters.silhouette.values())
    assert sp.cluster_spectra(eig).labels.tolist() == clusters.labels.tolist()  # seeded


def test_user_k_overrides_silhouette(planted):
    eig, _ = planted
    clusters = sp.cluster_spectra(eig, k=5)
    assert clusters.k == 5 and len(set(clusters.labels)) == 5
    assert set(clusters.silhouette) == set(sp.DEFAULT_K_RANGE)
    with pytest.raises(HeadformsError, match="clusters"):
        sp.cluster_spectra(eig[:4], k=9)


def test_pca_of_three_shapes_is_essentially_planar(planted):
    eig, labels = planted
    pca = sp.spectral_pca(eig)
    assert pca.scores.shape == (len(eig), 3)
    assert pca.explained[:2].sum() > 0.98  # three centres span a plane; noise is small
    centres = np.stack([pca.scores[labels == j, :2].mean(axis=0) for j in range(3)])
    spread = max(pca.scores[labels == j, :2].std(axis=0).max() for j in range(3))
    gaps = [np.linalg.norm(centres[i] - centres[j]) for i in range(3) for j in range(i + 1, 3)]
    assert min(gaps) > 10 * spread


def test_extreme_heads_go_furthest_along_their_cluster():
    """Cluster 0 drifts from shape 1 toward the PSD side by a known amount t: its extremes
    are the largest t; cluster 1 is shape 2 plus noise."""
    rng = np.random.default_rng(2)
    drift = np.concatenate([DECAY, np.zeros(HALF)])
    t = np.linspace(0.2, 3.0, 20)
    eig = np.vstack(
        [SHAPES[1] + ti * drift for ti in t]
        + [SHAPES[2] + rng.normal(0, 0.02, 2 * HALF) for _ in range(30)]
    )
    labels = np.repeat([0, 1], [20, 30])
    extremes = sp.extreme_heads(eig, labels)
    assert extremes[0].tolist() == list(range(19, 9, -1))
    assert set(extremes[1]) <= set(range(20, 50)) and len(extremes[1]) == sp.N_EXTREME


def test_cluster_summary_and_figures(planted):
    eig, labels = planted
    heads = _heads(len(eig))
    clusters = sp.cluster_spectra(eig)
    summary, means = sp.cluster_summary(heads, eig, clusters.labels)
    assert summary["size"].sum() == len(eig)
    assert means.shape == (3, 2 * HALF)
    np.testing.assert_allclose(np.linalg.norm(means, axis=1), 1.0, atol=0.05)
    pca = sp.spectral_pca(eig)
    frame = sp.pca_frame(heads, pca, clusters.labels)
    selected = ("toy", 3, 4)
    for color_by in ("cluster", "parity"):
        fig = spectra_pca_figure(frame, "toy", pca.explained, color_by, selected)
        assert fig.layout.title.text and fig.layout.scene.xaxis.title.text
        heads_drawn = [t for t in fig.data if t.name != "selected"]
        assert sum(len(t.x) for t in heads_drawn) == len(frame)
        assert list(heads_drawn[0].customdata[0]) == [
            "toy",
            int(heads_drawn[0].customdata[0][1]),
            int(heads_drawn[0].customdata[0][2]),
        ]
        assert [t for t in fig.data if t.name == "selected"][0].text == ("L3H4",)
    figures = (
        spectra_pca_2d_figure(frame, "toy", pca.explained),
        mean_spectrum_figure(sp.mean_unit_spectrum(eig), sp.mean_unit_spectrum(-eig), "toy"),
        cluster_spectra_figure(summary, means, "toy"),
        silhouette_figure(clusters.silhouette, clusters.k),
    )
    for fig in figures:
        assert fig.layout.title.text
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_real_model_pipeline():
    res = analyze("minilm-l6")
    eig = res.spectra["eig_s"]
    unit = sp.unit_spectra(eig)
    assert unit.shape == (res.card.total_heads, 2 * res.card.head_dim)
    clusters = sp.cluster_spectra(eig)
    assert clusters.k in sp.DEFAULT_K_RANGE
    summary, means = sp.cluster_summary(res.heads, eig, clusters.labels)
    assert summary["size"].sum() == res.card.total_heads
    assert set(summary["parity"]) <= {"I+", "II", "I-"}
    mean = sp.mean_unit_spectrum(eig)
    assert np.all(np.diff(mean) <= 0) and mean[0] > 0 > mean[-1]  # two lobes
