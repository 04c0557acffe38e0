"""Simplex page: every head on the 3-simplex of profiles and on the triangle of symmetric profiles.

Clicking a marker selects that head (and opens the head page unless switched off).
"""

from __future__ import annotations

import streamlit as st

from headforms import BUNDLED_MODELS
from headforms.figures import simplex as figures
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    fit_to_column,
    jump_toggle,
    model_label,
    page_context,
    select_from_customdata,
    state,
    try_load,
)
from ui.tables import baseline_heads, expand_models

ctx = page_context()
st.title("Profiles on the simplex")
st.caption(
    "Each head's form L = KᵀQ has a profile (a, b, c, d): the share of ‖L‖² in its "
    "antisymmetric part (a), in matched positive/negative eigenvalue pairs of S (b), and in the "
    "excess positive (c) or negative (d) eigenvalues. Drag to rotate; click a head to open it."
)

controls = st.columns([3, 1, 1], vertical_alignment="bottom")
extra = controls[0].multiselect(
    "Overlay other models",
    list(dict.fromkeys([*BUNDLED_MODELS, *st.session_state[state.OVERLAY_KEY]])),
    key=state.OVERLAY_KEY,
    format_func=model_label,
    accept_new_options=True,
    placeholder="bundled name, hub id, local path or table file",
    help="Extra models drawn on the same simplex and triangle (at RoPE position 0); a "
    "published per-head table (.csv/.parquet) adds all its models; the sidebar's model is "
    "always drawn.",
)
with controls[1]:
    jump_toggle()
show_baseline = controls[2].toggle(
    "Baseline",
    key="simplex_baseline",
    help="Also draw, in grey, independent Gaussian K, Q of the same n, N as each model's heads: "
    "they sit at Θ's midpoint a = b = 1/2.",
)

analyses = {ctx.spec: ctx.analysis}
for spec in expand_models(extra):  # a table file: all its models
    if spec != ctx.spec:
        overlay = try_load(spec, 0)
        if overlay is not None:
            analyses[spec] = overlay
models = {spec: analysis.heads for spec, analysis in analyses.items()}

found = {spec: baseline_heads(a) for spec, a in analyses.items()} if show_baseline else {}
baselines = {spec: table for spec, table in found.items() if table is not None}
key = (tuple(models), ctx.rope_position, ctx.color_by, ctx.selected, show_baseline)
simplex = cached(
    "simplex",
    key,
    lambda: PlotPayload.of(
        fit_to_column(figures.simplex_figure(models, ctx.color_by, ctx.selected, baselines), 1.15)
    ),
)
triangle = cached(
    "triangle",
    key,
    lambda: PlotPayload.of(
        fit_to_column(figures.triangle_figure(models, ctx.color_by, ctx.selected, baselines))
    ),
)

left, right = st.columns(2)
with left:
    clickable_plot(simplex, key="simplex", on_click=select_from_customdata)
    st.caption(
        "The tetrahedron Δ₃ of profiles (a, b, c, d); marker shape = parity type, colour as "
        "chosen in the sidebar; red: Θ, where rank-one forms land; the selected head is ringed."
    )
with right:
    clickable_plot(triangle, key="triangle", on_click=select_from_customdata)
    st.caption(
        "Symmetric profiles (b_S, c_S, d_S) of S alone on the triangle a = 0; the band near "
        "the b vertex (c_S + d_S ≤ 1/50) is Type II. Click a head to open it."
    )

row = ctx.head_row
st.subheader(f"Selected: {ctx.label}")
st.markdown(
    f"Parity **{row['parity']}** · symmetric energy **{row['energy']:.3f}** · pairing score "
    f"**{row['pairing']:.3f}** · profile (a, b, c, d) = ({row['a']:.3f}, {row['b']:.3f}, "
    f"{row['c']:.3f}, {row['d']:.3f})"
)
st.page_link("pages/head.py", label="Open the head page", icon=":material/arrow_forward:")
