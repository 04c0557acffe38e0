"""Compare page: several models side by side: profiles on one simplex, parity tables with the
paper's Table 2 rows and parity by layer (Fig 12), energy and pairing distributions, layer x
head heatmaps on one shared colour scale (Figs 13, 14), and average lobe-fit errors against
model size (Fig 6)."""

from __future__ import annotations

import streamlit as st

from headforms import BUNDLED_MODELS
from headforms.analyses.parity import parity_by_layer
from headforms.figures import distributions, fits, heatmaps, parity
from headforms.figures import simplex as simplex_figures
from headforms.forms import PARITY_TYPE_II_TEXT
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    links,
    other_models,
    page_context,
    select_from_customdata,
    show_figure,
)
from ui.compute import derive
from ui.gateway import Observation3Fits
from ui.loading import baselines_of, load_models, models_key

MODELS_KEY = "compare_models"
HEATMAP_KEY = "compare_heatmap"
CAMERA_KEY = "compare_camera"

ctx = page_context()
st.title("Compare models")
others = [name for name in BUNDLED_MODELS if name != ctx.spec]
links.bind(links.specs("models", MODELS_KEY, default=others[:1], label="compared"))
chosen = other_models(
    st,
    "Models to compare with the current one",
    MODELS_KEY,
    ctx.spec,
    help="Other models are analysed at RoPE position 0.",
)
analyses = load_models(ctx.spec, ctx.analysis, chosen)
models = {name: analysis.heads for name, analysis in analyses.items()}
baselines = baselines_of(analyses)
key = (models_key(analyses), ctx.rope_position)
tolerance = ctx.tolerance

simplex = cached(
    "compare_simplex",
    (*key, ctx.selected),
    lambda: PlotPayload.of(
        simplex_figures.simplex_figure(models, color_by="model", selected=ctx.selected)
    ),
)
links.bind(links.camera("camera", CAMERA_KEY))
clickable_plot(
    simplex, key="compare_simplex", on_click=select_from_customdata, camera_key=CAMERA_KEY
)
st.caption("Profiles of every compared model on one simplex, coloured by model; click a head.")

table = cached(
    "compare_table",
    (*key, tolerance),
    lambda: parity.parity_comparison_table(models, tolerance),
)
show_figure(
    cached(
        "compare_parity",
        (*key, tolerance),
        lambda: parity.parity_comparison_figure(table, tolerance),
    ),
    f"Table 2: percent of heads by parity (Type II: c_S + d_S ≤ {tolerance:g}, set in the "
    f"sidebar); rows marked paper are the published values (at {PARITY_TYPE_II_TEXT}) with their "
    "head counts.",
)
st.dataframe(
    table,
    hide_index=True,
    column_config={p: st.column_config.NumberColumn(format="%.1f") for p in ("I+", "II", "I-")},
)
show_figure(
    cached(
        "compare_fig12",
        (*key, tolerance),
        lambda: parity.parity_by_layer_figure(
            {name: parity_by_layer(heads, tolerance) for name, heads in models.items()},
            tolerance,
        ),
    ),
    "Figure 12: for each model, the percent of each layer's heads of each type, on one scale "
    "from white (0%) to black (100%); layers from zero.",
)

left, right = st.columns(2)
with left:
    show_figure(
        cached(
            "compare_pairing",
            key,
            lambda: distributions.distribution_figure(models, baselines=baselines),
        ),
        "Pairing score per model (dashed: medians; dotted: Gaussian baselines).",
    )
with right:
    show_figure(
        cached(
            "compare_energy",
            key,
            lambda: distributions.distribution_figure(
                models, "energy", "symmetric energy ‖S‖²/‖L‖²", baselines
            ),
        ),
        "Symmetric energy per model (dashed: medians; dotted: Gaussian baselines).",
    )

HEATMAPS = {
    "energy": "Figure 13: symmetric energy ‖S‖²/‖L‖²",
    "pairing": "Figure 14: pairing score 1 − ‖λ₊ − λ₋‖/‖S‖",
}
links.bind(links.choice("heatmap", HEATMAP_KEY, list(HEATMAPS), "energy", "a heatmap"))
column = st.radio(
    "Layer × head heatmaps of",
    list(HEATMAPS),
    format_func=HEATMAPS.__getitem__,
    horizontal=True,
    key=HEATMAP_KEY,
)
shared = heatmaps.heatmap_range(
    [frame[column] for frame in (*models.values(), *baselines.values())]
)
payload = cached(
    "compare_heatmaps",
    (*key, column, shared, ctx.selected),
    lambda: PlotPayload.of(
        heatmaps.heatmap_models_figure(models, column, ctx.selected, shared, baselines)
    ),
)
clickable_plot(payload, key="compare_heatmaps", on_click=select_from_customdata)
st.caption(
    f"{HEATMAPS[column]} of each model, each beside its Gaussian baseline (independent K, Q "
    "of the same n and N; a published table without N has none), on one diverging scale: "
    f"white at 1/2, {shared[0]:.3f} (blue) to {shared[1]:.3f} (red). Click a cell to open "
    "that head."
)

errors_by_model = {
    name: (analysis.card.n_parameters, derive(Observation3Fits(analysis)).errors)
    for name, analysis in analyses.items()
    if analysis.spectra  # a published table without its spectra file has none to fit
}
unknown = [name for name, (size, _) in errors_by_model.items() if not size]
show_figure(
    cached("compare_fig6", key, lambda: fits.fit_error_vs_size_figure(errors_by_model)),
    "Fig 6: average error of each fitted family over each model's heads (both lobes), against "
    "the model's parameter count from its weight files' headers (log scale)"
    + (
        f"; not placed, parameter count unknown for this source: {', '.join(unknown)}."
        if unknown
        else "."
    ),
)
