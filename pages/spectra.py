"""Spectra page: mean eigenvalue distribution (Fig 3), PCA of unit spectra (Fig 5), clusters and
their most extreme heads (Fig 4). Clicking a head in the PCA plots selects it."""

from __future__ import annotations

import streamlit as st

from headforms.analyses import spectra as sp
from headforms.figures import paper as figures_paper
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    jump_toggle,
    page_context,
    select_from_customdata,
    show_figure,
)
from ui.tables import require_spectra

AUTO = "auto (best silhouette)"

ctx = page_context()
require_spectra(ctx.analysis, "Spectra")
st.title("Spectra of the symmetric parts")
st.caption(
    "Each head's 2n eigenvalues of S, sorted decreasing and divided by ‖S‖ (its unit-length "
    "spectrum), compared across the heads of the model."
)
model_key = (ctx.spec, ctx.rope_position)
eig_s = ctx.analysis.spectra["eig_s"]

controls = st.columns([2, 2, 2], vertical_alignment="bottom")
k_choice = controls[0].selectbox(
    "Number of clusters",
    [AUTO, *sp.DEFAULT_K_RANGE],
    key="spectra_k",
    help="KMeans on the unit spectra (fixed seed); auto picks the k with the best silhouette.",
)
color_by = controls[1].radio(
    "Colour heads by", ["cluster", "parity"], horizontal=True, key="spectra_color"
)
with controls[2]:
    jump_toggle()
k = None if k_choice == AUTO else int(k_choice)

mean = cached(
    "spectra_mean",
    model_key,
    lambda: (
        sp.mean_unit_spectrum(eig_s),
        sp.mean_unit_spectrum(ctx.analysis.baseline.spectra["eig_s"]),
    ),
)
pca = cached("spectra_pca", model_key, lambda: sp.spectral_pca(eig_s))
clusters = cached("spectra_clusters", (*model_key, k), lambda: sp.cluster_spectra(eig_s, k))
summary, means = cached(
    "spectra_summary",
    (*model_key, clusters.k),
    lambda: sp.cluster_summary(ctx.heads, eig_s, clusters.labels),
)
frame = cached(
    "spectra_frame", (*model_key, clusters.k), lambda: sp.pca_frame(ctx.heads, pca, clusters.labels)
)
plot_key = (*model_key, clusters.k, color_by, ctx.selected)
pca_3d = cached(
    "spectra_pca_3d",
    plot_key,
    lambda: PlotPayload.of(
        figures_paper.spectra_pca_figure(frame, ctx.spec, pca.explained, color_by, ctx.selected)
    ),
)
pca_2d = cached(
    "spectra_pca_2d",
    plot_key,
    lambda: PlotPayload.of(
        figures_paper.spectra_pca_2d_figure(frame, ctx.spec, pca.explained, color_by, ctx.selected)
    ),
)

left, right = st.columns([3, 2])
with left:
    clickable_plot(pca_3d, key="spectra_pca_3d", on_click=select_from_customdata)
    st.caption(
        "Fig 5: every head's unit spectrum projected to its first three principal components "
        "(drag to rotate, click a head to select it)."
    )
with right:
    clickable_plot(pca_2d, key="spectra_pca_2d", on_click=select_from_customdata)
    st.caption("Fig 5 (right): the second and third principal components.")
    show_figure(
        cached(
            "spectra_silhouette",
            (*model_key, clusters.k),
            lambda: figures_paper.silhouette_figure(clusters.silhouette, clusters.k),
        ),
        f"Silhouette of KMeans for each k; {clusters.k} clusters shown.",
    )

show_figure(
    cached(
        "spectra_fig3",
        model_key,
        lambda: figures_paper.mean_spectrum_figure(mean[0], mean[1], ctx.spec),
    ),
    "Fig 3: the mean of the heads' sorted unit-length spectra (entry by entry: the quantile "
    "average of their eigenvalue distributions), beside the same for Gaussian K, Q.",
)
show_figure(
    cached(
        "spectra_fig4",
        (*model_key, clusters.k),
        lambda: figures_paper.cluster_spectra_figure(summary, means, ctx.spec),
    ),
    f"Fig 4: per cluster, the mean sorted unit spectrum of its {sp.N_EXTREME} most extreme heads "
    "(largest projection on the cluster's direction away from the overall mean).",
)
st.dataframe(summary, hide_index=True)
st.caption(
    "Clusters: size, and the mean profile, pairing and majority parity of their extreme heads."
)
