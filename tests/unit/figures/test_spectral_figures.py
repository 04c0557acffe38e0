"""Figures 4 and 5 as their captions read, the clusters by layer and the spectral geometry, on
synthetic spectra: a cluster has one marker in both panels of Figure 5 and is never drawn in a
parity glyph nor named after a parity type; the selected head is drawn over every head."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headforms.analyses import spectra as sp
from headforms.analyses.spectral_geometry import spectral_geometry
from headforms.figures import style
from headforms.figures.spectra import (
    cluster_spectra_figure,
    clusters_by_layer_figure,
    projection_figure,
)
from headforms.figures.spectral_geometry import spectral_geometry_figure
from headforms.forms import lobes

HALF = 16
DECAY = np.linspace(1.0, 0.05, HALF)


def planted(per: int = 30) -> tuple[np.ndarray, pd.DataFrame]:
    """Heads of three spectral shapes (leaning positive, balanced, leaning negative) and a
    per-head table whose parity disagrees with the shapes on purpose (a cluster is not a
    parity class)."""
    rng = np.random.default_rng(0)
    shapes = (
        np.concatenate([DECAY, -0.3 * DECAY]),
        np.concatenate([DECAY, -DECAY]),
        np.concatenate([0.3 * DECAY, -DECAY]),
    )
    eig = np.vstack([s + rng.normal(0, 0.02, 2 * HALF) for s in shapes for _ in range(per)])
    count = len(eig)
    profile = rng.dirichlet(np.ones(4), count)
    heads = pd.DataFrame(
        {
            "layer": np.arange(count) // 6,
            "head": np.arange(count) % 6,
            "parity": rng.choice(["I+", "II", "I-"], count),
            **dict(zip("abcd", profile.T, strict=True)),
            "pairing": rng.uniform(0, 1, count),
        }
    )
    return eig, heads


def test_figure5_one_marker_per_cluster_in_both_panels_and_the_selected_head_on_top():
    eig, heads = planted()
    clusters = sp.cluster_spectra(eig)
    svd = sp.spectral_svd(eig)
    frame = sp.projection_frame(heads, svd, clusters)
    fig = projection_figure(frame, "toy", svd, selected=("toy", 2, 3))
    markers = [t for t in fig.data if t.type in ("scatter", "scatter3d") and t.name != "selected"]
    by_name: dict[str, set] = {}
    for trace in markers:
        by_name.setdefault(trace.name, set()).add((trace.marker.symbol, trace.marker.color))
    assert len(by_name) == 3 and all(len(styles) == 1 for styles in by_name.values())
    glyphs = {*style.PARITY_SYMBOLS.values(), *style.PARITY_SYMBOLS_3D.values()}
    assert not {symbol for styles in by_name.values() for symbol, _ in styles} & glyphs
    assert all("Type" not in name for name in by_name)
    assert sum(t.showlegend is not False for t in markers) == 3  # one legend entry each
    last = fig.data[-2:]
    assert [t.name for t in last] == ["selected", "selected"]
    assert {t.type for t in last} == {"scatter", "scatter3d"}
    assert [a.text for a in fig.layout.scene.annotations] == ["<b>L2·H3</b>"]


def test_figure5_frames_and_names_the_selected_head_in_the_plane_on_a_background():
    """The plane panel's ranges (the level sets' grid) widen to hold a selected head outside
    the grid, and its name there is an annotation on a background, as in the 3D view."""
    eig, heads = planted()
    svd = sp.spectral_svd(eig)
    frame = sp.projection_frame(heads, svd, sp.cluster_spectra(eig))
    row = frame[(frame["layer"] == 2) & (frame["head"] == 3)].iloc[0]
    x, y = float(row["c2"]), float(row["c3"])
    grid_x = np.linspace(x + 0.05, x + 0.25, 5)  # the grid misses the head: right of and below it
    grid_y = np.linspace(y - 0.3, y - 0.1, 5)
    zeros = np.zeros((5, 5))
    levels = sp.MomentLevels(grid_x, grid_y, zeros, zeros, np.array([0.5]), np.array([0.5]), 0.0)
    fig = projection_figure(frame, "toy", svd, levels=levels, selected=("toy", 2, 3))
    low_x, high_x = fig.layout.xaxis.range
    low_y, high_y = fig.layout.yaxis.range
    assert low_x < x < high_x and low_y < y < high_y
    assert high_x == grid_x[-1] and low_y == grid_y[0]  # the grid is kept
    ring = next(t for t in fig.data if t.name == "selected" and t.type == "scatter")
    assert ring.mode == "markers"  # its name: the annotation below
    (note,) = [a for a in fig.layout.annotations if a.name == "selected"]
    assert note.text == "<b>L2·H3</b>" and (note.x, note.y) == (x, y)
    assert note.xref == "x" and note.yref == "y"
    for label in (note, fig.layout.scene.annotations[0]):
        assert label.bgcolor == style.LABEL_BACKGROUND and label.borderwidth == 1
    # a head inside the grid leaves the grid's ranges as they are
    half = np.array([0.5])
    around = sp.MomentLevels(grid_x - 0.15, grid_y + 0.2, zeros, zeros, half, half, 0.0)
    inside = projection_figure(frame, "toy", svd, levels=around, selected=("toy", 2, 3))
    assert list(inside.layout.xaxis.range) == [around.x[0], around.x[-1]]
    assert list(inside.layout.yaxis.range) == [around.y[0], around.y[-1]]


def test_figure4_names_clusters_neutrally_with_their_parity_and_extremes():
    eig, heads = planted()
    clusters = sp.cluster_spectra(eig)
    summary, means = sp.cluster_summary(heads, eig, clusters)
    fig = cluster_spectra_figure(summary, means, "toy", None, clusters.places)
    titles = [a.text for a in fig.layout.annotations if "cluster" in a.text]
    assert len(titles) == 3
    for (_, row), title in zip(summary.iterrows(), titles, strict=True):
        parity = heads["parity"].to_numpy()[clusters.labels == row["cluster"]]
        counts = [int(np.sum(parity == p)) for p in ("I+", "II", "I-")]
        assert f":<br>{counts[0]} I+, {counts[1]} II, {counts[2]} I−" in title
        assert f"mean of its {sp.extreme_count(len(eig))} most extreme" in title
        assert "Type" not in title
    assert f"{sp.N_EXTREME} most extreme heads per {sp.HEADS_PER_EXTREME} heads" in (
        fig.layout.title.text
    )


def test_clusters_by_layer_grid():
    eig, heads = planted()
    clusters = sp.cluster_spectra(eig)
    shares = sp.clusters_by_layer(heads["layer"].to_numpy(), clusters.labels, clusters.k)
    fig = clusters_by_layer_figure(shares, clusters.names, "toy")
    assert list(fig.layout.yaxis.ticktext) == list(clusters.names)
    (cells,) = [t for t in fig.data if t.meta and t.meta.get("role") == "cells"]
    np.testing.assert_allclose(cells.marker.color, shares.to_numpy().T.ravel())
    np.testing.assert_allclose(shares.sum(axis=1), 100.0)


def test_spectral_geometry_figure_counts_its_heads():
    rng = np.random.default_rng(5)
    eig = np.concatenate([rng.gamma(3, 1, (20, 50)), -rng.gamma(3, 0.5, (20, 50))], axis=1)
    eig = -np.sort(-eig, axis=1)
    sigma = rng.gamma(3, 0.4, (20, 50))
    sigma[:4] = rng.gamma(0.5, 1, (4, 50))  # four heads without a mode of sigma(A)
    lobe_pos, lobe_neg = lobes(eig)
    spectra = {
        "eig_s": eig,
        "lobe_pos": lobe_pos,
        "lobe_neg": lobe_neg,
        "sv_a": -np.sort(-np.repeat(sigma, 2, axis=1), axis=1),
    }
    geometry = spectral_geometry(spectra)
    fig = spectral_geometry_figure(geometry, "toy")
    counts = [len(t.x) for t in fig.data if t.type == "histogram"]
    used = int(geometry["interior_modes"].sum())
    assert used == 16 and counts == [used, used, 20, 20]
    assert f"{used} of 20 heads" in fig.layout.title.text
