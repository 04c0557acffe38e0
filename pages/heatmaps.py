"""Heatmaps page: layer x head symmetric energy and pairing score beside a Gaussian baseline
(Figures 13, 14), for the sidebar's model and any others, on one shared colour scale if asked."""

from __future__ import annotations

import streamlit as st

from headforms.figures import heatmaps
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    jump_toggle,
    links,
    other_models,
    page_context,
    select_from_customdata,
)
from ui.loading import baselines_of, load_models

MODELS_KEY = "heatmaps_models"
SHARED_KEY = "heatmaps_shared_scale"

ctx = page_context()
st.title("Layer × head heatmaps")
st.caption(
    "Each cell is one head (click it to open the head). Right of each map: an independent "
    "Gaussian form with the same n and N; the colour scale is white at 1/2, red above, blue below."
)
controls = st.columns([3, 3, 2], vertical_alignment="bottom")
links.bind(links.specs("models", MODELS_KEY, label="other"))
extra = other_models(
    controls[0],
    "Other models",
    MODELS_KEY,
    ctx.spec,
    help="Other models are analysed at RoPE position 0; each is drawn beside its own baseline.",
)
links.bind(links.flag("shared_scale", SHARED_KEY, True, "one colour scale for all models"))
shared = controls[1].toggle(
    "One colour scale for all models",
    key=SHARED_KEY,
    help="On: every map below uses one range, so colours compare across models (as in the "
    "paper's Figures 13 and 14). Off: each model's pair uses its own range.",
)
with controls[2]:
    jump_toggle()
analyses = load_models(ctx.spec, ctx.analysis, extra)
models = {name: analysis.heads for name, analysis in analyses.items()}
baselines = baselines_of(analyses)
missing = [name for name in models if name not in baselines]
if missing:
    st.info(
        f"No Gaussian baseline for {', '.join(missing)}: a published table that does not give "
        "the model dim N (the paper's models have it).",
        icon=":material/info:",
    )

CAPTIONS = {
    "energy": "Figure 13: symmetric energy ‖S‖²/‖L‖² per head (red: more symmetric than 1/2, "
    "blue: more antisymmetric), beside the Gaussian baseline (≈ (N+1)/2N).",
    "pairing": "Figure 14: pairing score 1 − ‖λ₊ − λ₋‖/‖S‖ per head (1: the spectrum of S is "
    "symmetric about 0), beside the Gaussian baseline.",
}
for column, caption in CAPTIONS.items():
    scale = (
        heatmaps.heatmap_range([t[column] for t in (*models.values(), *baselines.values())])
        if shared and len(models) > 1
        else None
    )
    note = (
        f" One scale for all {len(models)} models: {scale[0]:.3f} (blue) to {scale[1]:.3f} (red)."
        if scale
        else ""
    )
    for name, heads in models.items():
        rope = ctx.rope_position if name == ctx.spec else 0
        payload = cached(
            "heatmap",
            (name, analyses[name].card.fingerprint, rope, column, ctx.selected, scale),
            lambda name=name, heads=heads, column=column, scale=scale: PlotPayload.of(
                heatmaps.heatmap_pair_figure(
                    heads, baselines.get(name), column, name, ctx.selected, scale
                )
            ),
        )
        clickable_plot(
            payload,
            key=f"heatmap_{column}" if name == ctx.spec else f"heatmap_{column}_{name}",
            on_click=select_from_customdata,
            caption=caption + note,
            data=lambda heads=heads, name=name, column=column: heatmaps.heatmap_table(
                heads, baselines.get(name), column
            ),
            filename=f"{name}_{column}_heatmap",
        )
