"""Spectra page: mean eigenvalue distribution (Fig 3), the unit spectra on their uncentred SVD
components with the O/E level sets (Fig 5), the three clusters attached to Theta (Fig 4) and by
layer, and the spectrum of S against that of A (the author's spectral geometry). Clicking a head
in the projections selects it."""

from __future__ import annotations

import streamlit as st

from headforms.analyses import spectra as sp
from headforms.analyses.spectral_geometry import geometry_summary
from headforms.analyses.theta import theta_frame
from headforms.figures import spectra as figures
from headforms.figures import spectral_geometry as geometry_figures
from headforms.figures.style import PARITY_NAMES
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    guard,
    jump_toggle,
    links,
    page_context,
    select_from_customdata,
    show_figure,
)
from ui.compute import derive
from ui.gateway import SilhouetteScan, SpectraClusters, SpectralGeometry, SpectraProjection
from ui.loading import HEAD_SPECTRA, load_analysis, load_baseline
from ui.tables import require_spectra

AUTO = "best silhouette"
K_KEY = "spectra_k"
PROJECTION_KEY = "spectra_projection"
COLOR_KEY = "heads_color"  # bound by Streamlit: the parameter's name

ctx = page_context()
require_spectra(ctx.analysis, "Spectra")
st.title("Spectra of the symmetric parts")
st.caption(
    "Each head's 2n eigenvalues of S, sorted decreasing and divided by ‖S‖ (its unit-length "
    "spectrum x), stacked into a matrix X (heads × 2n) and compared across the heads."
)
model_key = ctx.model
eig_s = ctx.analysis.spectra["eig_s"]
ks = sp.feasible_k(len(eig_s))
if not ks:
    st.info(
        f"Clustering the spectra needs at least 3 heads; {guard.plain(ctx.spec)} has {len(eig_s)}.",
        icon=":material/info:",
    )
    links.stop_page()
scan = derive(SilhouetteScan(ctx.analysis))
best = sp.best_k_or_none(scan)

controls = st.columns([2, 2, 2, 2], vertical_alignment="bottom")
k_options = [
    *([sp.PAPER_K] if sp.PAPER_K in ks else []),
    *([AUTO] if best is not None else []),
    *(k for k in ks if k != sp.PAPER_K),
]
links.bind(
    links.choice(
        "k",
        K_KEY,
        k_options,
        k_options[0],
        "a number of clusters offered here",
        lambda k: f"k = {k}",
        lambda k: "best" if k == AUTO else str(k),
    )
)
if st.session_state[K_KEY] not in k_options:  # a k of another model
    st.session_state[K_KEY] = k_options[0]
k_choice = controls[0].selectbox(
    "Number of clusters",
    k_options,
    key=K_KEY,
    format_func=lambda k: f"{k} (paper)" if k == sp.PAPER_K else str(k),
    help="k-means on the unit spectra (fixed seed); the paper uses 3, which the author ranks as "
    "Type I+, II, I− by decreasing mean signed asymmetry (rank names of clusters, not the "
    "parity classes). 'best silhouette' picks the k with the largest one. Offered: fewer "
    "clusters than heads.",
)
links.bind(
    links.choice(
        "projection",
        PROJECTION_KEY,
        list(figures.PROJECTION_NAMES),
        "svd",
        "a projection",
        figures.PROJECTION_NAMES.get,
    )
)
projection_kind = controls[1].radio(
    "Projection",
    list(figures.PROJECTION_NAMES),
    format_func=figures.PROJECTION_NAMES.__getitem__,
    key=PROJECTION_KEY,
    help="The paper projects X on its uncentred SVD (component 1 is the common shape); the "
    "centred PCA's PC1-3 are the SVD's components 2-4.",
)
links.check(
    links.choice(
        "heads_color",
        COLOR_KEY,
        ["cluster", "parity"],
        "cluster",
        "a colouring of the heads",
        lambda by: f"heads coloured by {by}",
    )
)
color_by = controls[2].radio(
    "Colour heads by", ["cluster", "parity"], horizontal=True, key=COLOR_KEY, bind="query-params"
)
with controls[3]:
    jump_toggle()

k = best if k_choice == AUTO else int(k_choice)
clustered = derive(SpectraClusters(ctx.analysis, k))
clusters, summary, means = clustered.clustering, clustered.summary, clustered.means
projected = derive(SpectraProjection(ctx.analysis, projection_kind))
projection, levels = projected.projection, projected.levels
frame = cached(
    "spectra_frame",
    (*model_key, projection_kind, k),
    lambda: sp.projection_frame(ctx.heads, projection, clusters),
)
plot_key = (*model_key, projection_kind, k, color_by, ctx.selected)
plane = (2, 3) if projection_kind == "svd" else (1, 2)
projection_plot = cached(
    "spectra_projection_fig",
    plot_key,
    lambda: PlotPayload.of(
        figures.projection_figure(
            frame, ctx.spec, projection, plane, levels, color_by, ctx.selected
        )
    ),
)
camera_key = f"spectra_camera:{projection_kind}"  # each projection keeps its own camera
links.bind(links.camera("camera", camera_key))
clickable_plot(
    projection_plot, key="spectra_fig5", on_click=select_from_customdata, camera_key=camera_key
)
if projection_kind == "svd":
    st.caption(
        "Fig 5: each head's unit spectrum x on the uncentred SVD X = U S Vᵀ (coordinates: the "
        "first columns of U S; axis percentages: shares of ‖X‖²). Component 1 is the common "
        "shape (kept positive), 2 grows with the signed asymmetry, 3 with the effective rank "
        "exp(entropy of xᵢ²). Right: components 2 and 3 with level sets of the moments "
        "O = Σ x/(1 − x²) (solid) and E = Σ x²/(1 − x²) (dotted) of the unit spectrum at "
        "(c₂, c₃), taken to be x = y/‖y‖ with y = c̄₁v₁ + c₂v₂ + c₃v₃ (vᵢ the right singular "
        "vectors, c̄₁ the heads' mean first coordinate), at percentiles of the heads' own O and "
        "E. Drag to rotate; click a head to select it."
    )
else:
    st.caption(
        "Centred PCA of the unit spectra (the mean spectrum removed first; axis percentages: "
        "shares of the variance): PC1-3 are essentially the SVD's components 2-4, and PC1-PC2 "
        "(right) the analogue of its components 2-3 (O/E level sets are drawn on the SVD only). "
        "Drag to rotate; click a head to select it."
    )

show_figure(
    cached(
        "spectra_fig4",
        (*model_key, k),
        lambda: figures.cluster_spectra_figure(
            summary,
            means,
            ctx.spec,
            theta_frame(ctx.heads).assign(cluster=clusters.labels),
            clusters.places,
        ),
    ),
    f"Fig 4: k-means with k = {clusters.k} on the unit spectra; clusters ordered by decreasing "
    "mean signed asymmetry (positive minus negative energy), named by that rank and, for k = 3, "
    "by where the caption attaches them to Θ (the author calls them Type I+, II, I−, a rank: "
    "they are clusters of spectra, not the parity classes; each title gives its parity make-up, "
    "and they are drawn in their own colours and shapes, never the parity ones). Each "
    f"histogram averages the sorted unit spectra of up to {sp.extreme_count(len(eig_s))} of "
    f"the cluster's most extreme heads ({sp.N_EXTREME} per {sp.HEADS_PER_EXTREME} heads of the "
    f"model, at least {sp.N_EXTREME}, as the author's code does; a smaller cluster gives all its "
    "heads; column n_extreme below; largest projection of x − mean on the cluster's direction), "
    "hung from their mean position on Θ (the middle cluster from Θ's midpoint), unfolded "
    "above: vertex c = 1, midpoint, vertex d = 1; ticks: every head's position, by cluster.",
)
st.dataframe(
    summary.drop(columns=["cluster"]),
    hide_index=True,
    column_config={
        "asymmetry": st.column_config.NumberColumn("mean signed asymmetry", format="%+.3f"),
        "negative_energy": st.column_config.NumberColumn("negative energy", format="%.3f"),
        "theta_position": st.column_config.NumberColumn("Θ position", format="%+.3f"),
        **{c: st.column_config.NumberColumn(format="%.3f") for c in ("a", "b", "c", "d")},
        "pairing": st.column_config.NumberColumn(format="%.3f"),
        "parity": st.column_config.TextColumn("majority parity (extreme heads)"),
        **{
            f"heads {p}": st.column_config.NumberColumn(f"{name} heads")
            for p, name in PARITY_NAMES.items()
        },
    },
)
st.caption(
    "Clusters: size and mean signed asymmetry; of their extreme heads: the negative energy of "
    "their mean spectrum, mean Θ position, mean profile, pairing and majority parity; then how "
    "many of all the cluster's heads have each parity type."
)
show_figure(
    cached(
        "spectra_by_layer",
        (*model_key, k),
        lambda: figures.clusters_by_layer_figure(
            sp.clusters_by_layer(ctx.heads["layer"].to_numpy(), clusters.labels, clusters.k),
            clusters.names,
            ctx.spec,
        ),
    ),
    "The clusters by layer (the author's grid): the percent of each layer's heads in each "
    "cluster of Fig 4, one scale from white (0%) to black (100%).",
)

baseline = load_baseline(ctx.analysis)  # Fig 3 draws it beside the heads
show_figure(
    cached(
        "spectra_fig3",
        model_key,
        lambda: figures.mean_spectrum_figure(
            sp.mean_unit_spectrum(eig_s),
            None if baseline is None else sp.mean_unit_spectrum(baseline.spectra["eig_s"]),
            ctx.spec,
        ),
    ),
    "Fig 3: the mean of the heads' sorted unit-length spectra (entry by entry: the quantile "
    "average of their eigenvalue distributions), beside the same for Gaussian K, Q.",
)
show_figure(
    cached(
        "spectra_silhouette",
        (*model_key, k),
        lambda: figures.silhouette_figure(scan, clusters.k),
    ),
    f"Silhouette of k-means for each k (on the first {sp.SILHOUETTE_COMPONENTS} principal "
    f"coordinates of X): "
    + (f"the best is k = {best}" if best is not None else "no k separates these heads")
    + f"; shown: k = {clusters.k}.",
)

st.subheader("The spectrum of S against that of A")
with_sv_a = load_analysis(ctx.spec, ctx.rope_position, spectra=HEAD_SPECTRA)  # + sv_a
geometry = derive(SpectralGeometry(with_sv_a))
show_figure(
    cached(
        "spectra_geometry_fig",
        model_key,
        lambda: geometry_figures.spectral_geometry_figure(geometry, ctx.spec),
    ),
    "The author's spectral geometry (the paper's published code): gamma laws fitted with the "
    "origin at 0 to each head's λ₊, |λ₋| and the n distinct singular values σ of A; the mode "
    "τ of σ against the geometric mean √(|μ|ν) of the lobes' modes, and the shapes likewise "
    "(heads where a fitted shape is at most 1 have no mode and are left out of both); the "
    "correlation of the sorted σ(A) with the sorted |λ(S)|; and ‖σ − √(λ₊λ₋)‖/‖σ‖, index by "
    "index (0 for a rank-one form).",
)
st.dataframe(
    cached("spectra_geometry_summary", model_key, lambda: geometry_summary({ctx.spec: geometry})),
    hide_index=True,
)
