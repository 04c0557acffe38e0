"""Heatmaps page: layer x head symmetric energy and pairing score beside a Gaussian baseline."""

from __future__ import annotations

import streamlit as st

from headforms.figures import heatmaps
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    jump_toggle,
    page_context,
    select_from_customdata,
)
from ui.loading import baseline_heads

ctx = page_context()
st.title("Layer × head heatmaps")
st.caption(
    "Each cell is one head (click it to open the head). Right of each map: an independent "
    "Gaussian form with the same n and N; the colour scale is shared and white at 1/2."
)
jump_toggle()
baseline = baseline_heads(ctx.analysis)
if baseline is None:
    st.info(
        "No Gaussian baseline: this published table does not give the model dim N.",
        icon=":material/info:",
    )

CAPTIONS = {
    "energy": "Symmetric energy ‖S‖²/‖L‖² per head (red: more symmetric than 1/2, blue: more "
    "antisymmetric), beside the Gaussian baseline (≈ (N+1)/2N).",
    "pairing": "Pairing score 1 − ‖λ₊ − λ₋‖/‖S‖ per head (1: the spectrum of S is symmetric "
    "about 0), beside the Gaussian baseline.",
}
for column, caption in CAPTIONS.items():
    payload = cached(
        "heatmap",
        (ctx.spec, ctx.rope_position, column, ctx.selected),
        lambda column=column: PlotPayload.of(
            heatmaps.heatmap_pair_figure(
                ctx.heads, baseline, column, ctx.spec, selected=ctx.selected
            )
        ),
    )
    clickable_plot(
        payload,
        key=f"heatmap_{column}",
        on_click=select_from_customdata,
        caption=caption,
        data=lambda column=column: heatmaps.heatmap_table(ctx.heads, baseline, column),
        filename=f"{ctx.spec}_{column}_heatmap",
    )
