"""Simplex page: every head on the 3-simplex of profiles and on the triangle of symmetric profiles.

Clicking a marker selects that head (and opens the head page unless switched off); where
markers overlap, the plot lists them to choose from. The 3D view frames the heads by default.
"""

from __future__ import annotations

import streamlit as st

from headforms import BUNDLED_MODELS
from headforms.figures import simplex as figures
from headforms.forms import PARITY_TYPE_II_TEXT
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    fit_to_column,
    go_to_head_box,
    jump_toggle,
    model_label,
    page_context,
    select_from_customdata,
    state,
)
from ui.loading import baselines_of, load_models

FRAME_LABELS = {"heads": "Fit to heads", "simplex": "Whole simplex"}

ctx = page_context()
st.title("Profiles on the simplex")
st.caption(
    "Each head's form L = KᵀQ has a profile (a, b, c, d): the share of ‖L‖² in its "
    "antisymmetric part (a), in matched positive/negative eigenvalue pairs of S (b), and in the "
    "excess positive (c) or negative (d) eigenvalues. Drag to rotate, scroll to zoom; click a "
    "head to open it."
)

controls = st.columns([5, 3, 2], vertical_alignment="bottom")
extra = controls[0].multiselect(
    "Overlay other models",
    list(dict.fromkeys([*BUNDLED_MODELS, *st.session_state[state.OVERLAY_KEY]])),
    key=state.OVERLAY_KEY,
    format_func=model_label,
    accept_new_options=True,
    placeholder="bundled name, hub id, local path or table file",
    help="Extra models drawn on the same simplex and triangle (at RoPE position 0), each in its "
    "own colour and marker family; a published per-head table (.csv/.parquet) adds all its "
    "models; the sidebar's model is always drawn.",
)
frame = controls[1].segmented_control(
    "3D view",
    list(FRAME_LABELS),
    format_func=FRAME_LABELS.__getitem__,
    key=state.FRAME_KEY,
    required=True,
    help=f"Fit to heads: the camera looks at the region holding {figures.FRAMED_SHARE:.0%} of "
    "the heads, so crowded heads pull apart. Whole simplex: the tetrahedron as in the paper's "
    "Figure 1.",
)
with controls[2]:
    go_to_head_box(ctx)
with st.container(horizontal=True, gap="large"):
    jump_toggle()
    show_baseline = st.toggle(
        "Gaussian baseline",
        key="simplex_baseline",
        help="Also draw, in grey, independent Gaussian K, Q of the same n, N as each model's "
        "heads: they sit at Θ's midpoint a = b = 1/2.",
    )

status = st.container()  # overlay progress and errors: the plots below never move or blank
analyses = load_models(ctx.spec, ctx.analysis, extra, where=status)  # tables: all their models
models = {spec: analysis.heads for spec, analysis in analyses.items()}
baselines = baselines_of(analyses) if show_baseline else {}
key = (tuple(models), ctx.rope_position, ctx.color_by, ctx.selected, show_baseline)
simplex = cached(
    "simplex",
    (*key, frame),
    lambda: PlotPayload.of(
        fit_to_column(
            figures.simplex_figure(
                models, ctx.color_by, ctx.selected, frame=frame, baselines=baselines
            ),
            1.15 if frame == "simplex" else 1.0,
        )
    ),
)
triangle = cached(
    "triangle",
    key,
    lambda: PlotPayload.of(
        fit_to_column(figures.triangle_figure(models, ctx.color_by, ctx.selected, baselines))
    ),
)
profiles = cached("profile_table", key[:2], lambda: figures.profile_table(models))
overlays = " Overlaid models: their own colour and marker shapes." if len(models) > 1 else ""
overlays += " Grey dots: Gaussian K, Q of the same n, N." if baselines else ""
framed = (
    f"Framed: the {figures.FRAMED_SHARE:.0%} of the heads nearest their median profile (the "
    'camera turns about it); the rest and the vertices are a scroll away (the "→ toward" '
    "hints point to them), or choose Whole simplex."
    if frame == "heads"
    else "The whole tetrahedron."
)

left, right = st.columns([3, 2])
with left:
    clickable_plot(
        simplex,
        key="simplex",
        on_click=select_from_customdata,
        caption=f"The tetrahedron Δ₃ of profiles (a, b, c, d). {framed} Marker shape = parity "
        f"type, colour as chosen in the sidebar; red: Θ, where rank-one forms land; the selected "
        f"head is drawn larger and labelled. Where markers overlap, a click lists them.{overlays}",
        data=profiles,
        filename=f"{ctx.spec}_simplex",
        scroll_zoom=True,
    )
with right:
    clickable_plot(
        triangle,
        key="triangle",
        on_click=select_from_customdata,
        caption="Symmetric profiles (b_S, c_S, d_S) of S alone on the triangle a = 0; the band "
        f"near the b vertex (c_S + d_S ≤ {PARITY_TYPE_II_TEXT}) is Type II. Scroll to zoom; click "
        "a head to open it.",
        data=profiles,
        filename=f"{ctx.spec}_triangle",
        scroll_zoom=True,
    )

row = ctx.head_row
st.subheader(f"Selected: {ctx.label}")
st.markdown(
    f"Parity **{row['parity']}** · symmetric energy **{row['energy']:.3f}** · pairing score "
    f"**{row['pairing']:.3f}** · profile (a, b, c, d) = ({row['a']:.3f}, {row['b']:.3f}, "
    f"{row['c']:.3f}, {row['d']:.3f})"
)
st.page_link("pages/head.py", label="Open the head page", icon=":material/arrow_forward:")
