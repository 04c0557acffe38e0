"""Unit spectra, the uncentred SVD and O/E level sets (Fig 5), k = 3 named clusters (Fig 4):
checked against dense numpy/scipy computations on planted structure and a bundled model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import adjusted_rand_score

from headforms import analyze
from headforms.analyses import spectra as sp
from headforms.errors import HeadformsError
from headforms.figures.spectra import (
    cluster_spectra_figure,
    mean_spectrum_figure,
    projection_figure,
    silhouette_figure,
)
from headforms.forms import PARITY_LABELS

HALF = 32
DECAY = np.linspace(1.0, 0.05, HALF)
SHAPES = (
    np.concatenate([DECAY, -0.3 * DECAY]),  # positive lobe dominates (H + P): Type I+
    np.concatenate([DECAY, -DECAY]),  # hyperbolic: lambda_+ = lambda_-: Type II
    np.concatenate([0.3 * DECAY, -DECAY]),  # negative lobe dominates (H - P): Type I-
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


@pytest.fixture(scope="module")
def minilm():
    return analyze("minilm-l6")


def _dense_unit(eig: np.ndarray) -> np.ndarray:
    """Unit spectra computed independently: sort each row decreasing, divide by its norm."""
    rows = np.sort(eig, axis=1)[:, ::-1]
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _asymmetry(x: np.ndarray) -> np.ndarray:
    return np.array([(r[r > 0] ** 2).sum() - (r[r < 0] ** 2).sum() for r in x])


def _effective_rank(x: np.ndarray) -> np.ndarray:
    return np.exp([stats.entropy(r**2) for r in x])


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
    np.testing.assert_allclose(unit, _dense_unit(eig), atol=1e-15)
    np.testing.assert_allclose(sp.unit_spectra(7.5 * eig), unit)
    assert np.array_equal(sp.unit_spectra(np.zeros((1, 4))), np.zeros((1, 4)))


def test_mean_unit_spectrum_is_the_quantile_average():
    eig = np.array([[3.0, -4.0], [0.0, 2.0]])  # unit sorted: (0.6, -0.8) and (1, 0)
    np.testing.assert_allclose(sp.mean_unit_spectrum(eig), [0.8, -0.4])
    with pytest.raises(HeadformsError):
        sp.mean_unit_spectrum(np.zeros((0, 4)))


def test_asymmetry_effective_rank_and_moments_against_direct_formulas(planted):
    eig, _ = planted
    x = _dense_unit(eig)
    np.testing.assert_allclose(sp.signed_asymmetry(x), _asymmetry(x), atol=1e-14)
    np.testing.assert_allclose(sp.effective_rank(x), _effective_rank(x), rtol=1e-12)
    odd, even = sp.moments(np.array([[0.6, -0.8]]))
    assert odd[0] == pytest.approx(0.6 / (1 - 0.36) - 0.8 / (1 - 0.64))
    assert even[0] == pytest.approx(0.36 / (1 - 0.36) + 0.64 / (1 - 0.64))


@pytest.mark.parametrize("source", ["planted", "minilm"])
def test_uncentred_svd_matches_dense_svd_with_the_paper_signs(source, planted, minilm):
    eig = planted[0] if source == "planted" else minilm.spectra["eig_s"]
    x = _dense_unit(eig)
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    dense = u[:, :4] * s[:4]
    svd = sp.spectral_svd(eig, 4)
    for i in range(4):  # the same components up to sign
        sign = np.sign(dense[:, i] @ svd.scores[:, i])
        np.testing.assert_allclose(svd.scores[:, i], sign * dense[:, i], atol=1e-12)
        np.testing.assert_allclose(svd.components[i], sign * vt[i], atol=1e-12)
    np.testing.assert_allclose(svd.explained, s[:4] ** 2 / np.sum(s**2), rtol=1e-12)
    np.testing.assert_allclose(svd.scores, x @ svd.components.T, atol=1e-12)
    assert svd.scores[:, 0].mean() > 0
    assert stats.pearsonr(svd.scores[:, 1], _asymmetry(x)).statistic > 0
    assert stats.pearsonr(svd.scores[:, 2], _effective_rank(x)).statistic > 0
    assert svd.kind == "svd" and np.all(svd.mean == 0)
    # Flipping the input's overall sign swaps positive and negative energy: component 2 keeps
    # its orientation relative to the asymmetry, so the scores change sign.
    flipped = sp.spectral_svd(-eig, 4)
    assert stats.pearsonr(flipped.scores[:, 1], _asymmetry(_dense_unit(-eig))).statistic > 0


def test_centred_pca_option_matches_dense_centred_svd(minilm):
    eig = minilm.spectra["eig_s"]
    x = _dense_unit(eig)
    centred = x - x.mean(axis=0)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    pca = sp.project(eig, "pca")
    for i in range(3):
        dense = u[:, i] * s[i]
        np.testing.assert_allclose(np.abs(pca.scores[:, i]), np.abs(dense), atol=1e-10)
    np.testing.assert_allclose(pca.explained, s[:3] ** 2 / np.sum(s**2), rtol=1e-10)
    with pytest.raises(HeadformsError, match="unknown projection"):
        sp.project(eig, "tsne")


def test_moment_levels_are_o_and_e_of_the_rank_three_model(minilm):
    eig = minilm.spectra["eig_s"]
    x = _dense_unit(eig)
    svd = sp.spectral_svd(eig)
    levels = sp.moment_levels(eig, svd, resolution=25)
    c1 = (x @ svd.components[0]).mean()
    assert levels.c1 == pytest.approx(c1)
    for i, j in ((0, 0), (12, 7), (24, 24)):
        y = c1 * svd.components[0] + levels.x[j] * svd.components[1]
        y = y + levels.y[i] * svd.components[2]
        y = y / np.linalg.norm(y)
        assert levels.odd[i, j] == pytest.approx(np.sum(y / (1 - y**2)), rel=1e-10)
        assert levels.even[i, j] == pytest.approx(np.sum(y**2 / (1 - y**2)), rel=1e-10)
    # The grid spans every head's (c2, c3); the levels are rounded percentiles of heads' O, E.
    assert levels.x[0] < svd.scores[:, 1].min() and levels.x[-1] > svd.scores[:, 1].max()
    assert levels.y[0] < svd.scores[:, 2].min() and levels.y[-1] > svd.scores[:, 2].max()
    # Levels: percentiles of the heads' own O and E, rounded to two digits of their spread
    # (so within 5% of the spread of a percentile), distinct and increasing.
    for values, percentiles, found in (
        (np.sum(x / (1 - x**2), axis=1), sp.ODD_PERCENTILES, levels.odd_levels),
        (np.sum(x**2 / (1 - x**2), axis=1), sp.EVEN_PERCENTILES, levels.even_levels),
    ):
        targets = np.percentile(values, percentiles)
        assert len(found) >= 3 and np.all(np.diff(found) > 0)
        for level in found:
            assert np.min(np.abs(targets - level)) <= 0.05 * np.ptp(targets)
    with pytest.raises(HeadformsError, match="uncentred SVD"):
        sp.moment_levels(eig, sp.spectral_pca(eig))


def test_three_clusters_are_found_and_named_by_signed_asymmetry(planted):
    eig, labels = planted
    clusters = sp.cluster_spectra(eig)
    assert clusters.k == 3
    assert adjusted_rand_score(labels, clusters.labels) == 1.0
    # Planted shape j was built to lean positive, balance, lean negative in that order: the
    # neutral names follow it (rank, and where Figure 4 hangs the cluster on Theta), never a
    # parity type's name
    for j, place in enumerate(("toward c", "Θ midpoint", "toward d")):
        found = np.unique(clusters.labels[labels == j])
        assert len(found) == 1
        assert clusters.names[found[0]] == f"cluster {j + 1} ({place})"
        assert "Type" not in clusters.names[j] and "I+" not in clusters.names[j]
    asymmetry = _asymmetry(_dense_unit(eig))
    expected = [asymmetry[clusters.labels == c].mean() for c in range(3)]
    np.testing.assert_allclose(clusters.asymmetry, expected, rtol=1e-12)
    assert np.all(np.diff(clusters.asymmetry) < 0)
    assert clusters.places == ("c", "midpoint", "d")
    assert sp.cluster_spectra(eig).labels.tolist() == clusters.labels.tolist()  # seeded


def test_real_clusters_are_numbered_by_decreasing_mean_asymmetry(minilm):
    eig = minilm.spectra["eig_s"]
    clusters = sp.cluster_spectra(eig)
    asymmetry = _asymmetry(_dense_unit(eig))
    means = np.array([asymmetry[clusters.labels == c].mean() for c in range(3)])
    assert np.all(np.diff(means) < 0)
    np.testing.assert_allclose(clusters.asymmetry, means, rtol=1e-12)
    np.testing.assert_allclose(
        clusters.centers, [_dense_unit(eig)[clusters.labels == c].mean(axis=0) for c in range(3)]
    )


def test_silhouette_option_and_other_k(planted):
    eig, _ = planted
    scan = sp.silhouette_scan(eig)
    assert set(scan) == set(sp.DEFAULT_K_RANGE)
    assert sp.best_k(scan) == 3
    auto = sp.cluster_spectra(eig, None)
    assert auto.k == 3
    five = sp.cluster_spectra(eig, 5)
    assert five.k == 5 and len(set(five.labels)) == 5
    assert five.names == tuple(f"cluster {i}" for i in range(1, 6))
    assert five.places == (None,) * 5
    with pytest.raises(HeadformsError, match="clusters"):
        sp.cluster_spectra(eig[:4], k=9)
    with pytest.raises(HeadformsError, match="silhouette"):
        sp.best_k({2: float("nan")})


@pytest.mark.parametrize(("per_cluster", "averaged"), [(50, 10), (144, 20), (180, 25)])
def test_cluster_histogram_averages_ten_heads_per_144_at_least_ten(per_cluster, averaged):
    """Fig 4's histogram of a cluster is the mean unit spectrum of exactly its ``averaged`` most
    extreme heads: 10 per 144 heads of the model, at least 10. Cluster 0 drifts from shape I+
    by a known amount t, so its most extreme heads are those of the largest t."""
    rng = np.random.default_rng(3)
    drift = np.concatenate([DECAY, np.zeros(HALF)])
    t = np.linspace(0.2, 3.0, per_cluster)
    eig = np.vstack(
        [SHAPES[0] + ti * drift for ti in t]
        + [SHAPES[2] + rng.normal(0, 0.02, 2 * HALF) for _ in range(per_cluster)]
    )
    clusters = sp.cluster_spectra(eig, 2)
    assert clusters.labels.tolist() == [0] * per_cluster + [1] * per_cluster
    summary, means = sp.cluster_summary(_heads(len(eig)), eig, clusters)
    furthest = np.argsort(-t)[:averaged]  # rows of cluster 0 (the first block)
    np.testing.assert_allclose(means[0], _dense_unit(eig[furthest]).mean(axis=0), atol=1e-14)
    assert summary.loc[0, "n_extreme"] == averaged


def test_extreme_heads_go_furthest_along_their_cluster():
    """Cluster 0 drifts from shape I+ toward the PSD side by a known amount t: its extremes
    are the largest t; cluster 1 is shape I- plus noise."""
    rng = np.random.default_rng(2)
    drift = np.concatenate([DECAY, np.zeros(HALF)])
    t = np.linspace(0.2, 3.0, 20)
    eig = np.vstack(
        [SHAPES[0] + ti * drift for ti in t]
        + [SHAPES[2] + rng.normal(0, 0.02, 2 * HALF) for _ in range(30)]
    )
    labels = np.repeat([0, 1], [20, 30])
    extremes = sp.extreme_heads(eig, labels)
    assert extremes[0].tolist() == list(range(19, 9, -1))
    assert set(extremes[1]) <= set(range(20, 50)) and len(extremes[1]) == sp.N_EXTREME


def test_cluster_summary_against_direct_computation(planted):
    eig, _ = planted
    heads = _heads(len(eig))
    clusters = sp.cluster_spectra(eig)
    summary, means = sp.cluster_summary(heads, eig, clusters)
    assert summary["size"].sum() == len(eig)
    assert list(summary["name"]) == list(clusters.names)
    x = _dense_unit(eig)
    extremes = sp.extreme_heads(eig, clusters.labels)
    for row in summary.itertuples():
        idx = extremes[row.cluster]
        mean = x[idx].mean(axis=0)
        np.testing.assert_allclose(means[row.cluster], mean, atol=1e-14)
        assert row.negative_energy == pytest.approx(np.sum(mean[mean < 0] ** 2))
        assert row.n_extreme == min(sp.extreme_count(len(eig)), row.size)
        profile = heads.iloc[idx][["a", "b", "c", "d"]].to_numpy()
        assert row.a == pytest.approx(profile[:, 0].mean())


def test_fig4_and_fig5_figures(planted):
    eig, _ = planted
    heads = _heads(len(eig))
    clusters = sp.cluster_spectra(eig)
    summary, means = sp.cluster_summary(heads, eig, clusters)
    svd = sp.spectral_svd(eig)
    frame = sp.projection_frame(heads, svd, clusters)
    levels = sp.moment_levels(eig, svd, resolution=30)
    selected = ("toy", 3, 4)
    for color_by in ("cluster", "parity"):
        fig = projection_figure(frame, "toy", svd, (2, 3), levels, color_by, selected)
        assert fig.layout.title.text and fig.layout.scene.xaxis.title.text
        assert fig.layout.xaxis.title.text.startswith("component 2")
        assert fig.layout.yaxis.title.text.startswith("component 3")
        contours = [t for t in fig.data if t.type == "contour"]
        assert len(contours) == len(levels.odd_levels) + len(levels.even_levels)
        points = [
            t for t in fig.data if t.type in ("scatter", "scatter3d") and t.name != "selected"
        ]
        assert sum(len(t.x) for t in points if t.type == "scatter3d") == len(frame)
        assert sum(len(t.x) for t in points if t.type == "scatter") == len(frame)
        assert all(t.customdata[0][0] == "toy" for t in points)
    by_cluster = projection_figure(frame, "toy", svd)
    names = {t.name for t in by_cluster.data if t.type == "scatter3d" and t.name != "selected"}
    parity = heads["parity"].to_numpy()
    assert names == {
        f"{n}: "
        + ", ".join(
            f"{int(np.sum(parity[clusters.labels == i] == p))} {p.replace('-', '−')}"
            for p in PARITY_LABELS
        )
        for i, n in enumerate(clusters.names)
    }
    positions = pd.DataFrame({"position": np.linspace(-1, 1, len(eig)), "cluster": clusters.labels})
    fig4 = cluster_spectra_figure(summary, means, "toy", positions, clusters.places)
    assert fig4.layout.title.text
    assert len(fig4.layout.shapes) >= 3  # one connector per cluster (plus the zero lines)
    connectors = [s for s in fig4.layout.shapes if s.xref == "paper"]
    assert len(connectors) == 3
    for fig in (
        mean_spectrum_figure(sp.mean_unit_spectrum(eig), sp.mean_unit_spectrum(-eig), "toy"),
        silhouette_figure(sp.silhouette_scan(eig), clusters.k),
    ):
        assert fig.layout.title.text
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_real_model_pipeline(minilm):
    eig = minilm.spectra["eig_s"]
    unit = sp.unit_spectra(eig)
    assert unit.shape == (minilm.card.total_heads, 2 * minilm.card.head_dim)
    clusters = sp.cluster_spectra(eig)
    summary, _ = sp.cluster_summary(minilm.heads, eig, clusters)
    assert summary["size"].sum() == minilm.card.total_heads
    assert set(summary["parity"]) <= {"I+", "II", "I-"}
    mean = sp.mean_unit_spectrum(eig)
    sorted_unit = -np.sort(-eig, axis=1) / np.linalg.norm(eig, axis=1, keepdims=True)
    np.testing.assert_allclose(mean, sorted_unit.mean(axis=0), rtol=1e-12, atol=1e-15)
    assert mean[0] > 0 > mean[-1]  # both lobes are there on average


def test_clusters_have_their_own_palette_their_parity_make_up_and_type_ii_at_the_midpoint(
    minilm,
):
    """Figures 4 and 5 never draw a cluster in a parity colour or glyph; each cluster's parity
    make-up is counted over all its heads and shown; the "Type II" cluster hangs from Theta's
    midpoint (the caption), the others from their extreme heads' mean position."""
    from headforms.figures import style

    heads, eig = minilm.heads, minilm.spectra["eig_s"]
    clusters = sp.cluster_spectra(eig)
    summary, means = sp.cluster_summary(heads, eig, clusters)
    for j, row in summary.iterrows():
        members = heads["parity"][clusters.labels == j]
        for parity in PARITY_LABELS:
            assert row[f"heads {parity}"] == int((members == parity).sum())
    assert (summary[[f"heads {p}" for p in PARITY_LABELS]].sum(axis=1) <= summary["size"]).all()
    parity_colours = {c.lower() for c in style.PARITY_COLORS.values()}
    parity_glyphs = {*style.PARITY_SYMBOLS.values(), *style.PARITY_SYMBOLS_3D.values()}
    assert not parity_colours & {c.lower() for c in style.CLUSTER_COLORS}
    frame = sp.projection_frame(heads, sp.project(eig, "svd"), clusters)
    fig5 = projection_figure(frame, "m", sp.project(eig, "svd"))
    theta = sp.theta_projection(heads[["a", "b", "c", "d"]].to_numpy(float))[2]
    fig4 = cluster_spectra_figure(
        summary,
        means,
        "m",
        pd.DataFrame({"position": theta, "cluster": clusters.labels}),
        clusters.places,
    )
    for fig in (fig4, fig5):
        for trace in fig.data:
            if trace.type in ("scatter", "scatter3d") and trace.mode == "markers":
                colour = trace.marker.color or (trace.marker.line and trace.marker.line.color)
                assert str(colour).lower() not in parity_colours, trace.name
                assert trace.marker.symbol not in parity_glyphs, trace.name
    titles = [a.text for a in fig4.layout.annotations if "cluster" in a.text]
    for (_, row), title in zip(summary.iterrows(), titles, strict=True):
        make_up = f"{row['heads I+']} I+, {row['heads II']} II, {row['heads I-']} I−"
        assert f"<b>{row['name']}</b>:<br>{make_up} ({row['size']} heads)" in title
        assert f"mean of its {row['n_extreme']} most extreme" in title
    anchors = {t.name: t.x[0] for t in fig4.data if t.name in set(summary["name"])}
    for row, place in zip(summary.itertuples(), clusters.places, strict=True):
        expected = 0.0 if place == "midpoint" else row.theta_position
        assert anchors[row.name] == pytest.approx(expected)
