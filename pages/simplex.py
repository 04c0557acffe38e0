"""Simplex page: every head on the 3-simplex of profiles and on the triangle of symmetric profiles.

Clicking a marker selects that head (and opens the head page unless switched off); where
markers overlap, the plot lists them to choose from. The 3D view shows the whole tetrahedron by
default, "Zoom to heads" frames the crowd; a short geometry reference (Figures 1 and 7, Tables 1
and 3) explains the faces.
"""

from __future__ import annotations

import streamlit as st

from headforms.figures import simplex as figures
from headforms.figures.camera import FRAMED_SHARE, FRAMES
from headforms.figures.geometry import SCORING_PARAMETERS, TRIANGLE_EDGES, geometry_reference
from headforms.figures.swarm import swarm_figure, swarm_table
from headforms.figures.triangle import triangle_figure
from headforms.forms import PARITY_TYPE_II_TEXT
from headforms.gallery import gallery_html
from headforms.hosted import Budget
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    fit_to_column,
    go_to_head_box,
    guard,
    jump_toggle,
    links,
    other_models,
    page_context,
    select_from_customdata,
    state,
)
from ui.behaviour import coloured
from ui.loading import analysis_download, baselines_of, load_models, models_key
from ui.motion import chosen_positions, sweep_at_hand
from ui.plot import hidden_link

BASELINE_KEY = "simplex_baseline"
# The 3D plot's height (px): the whole tetrahedron, and so every head, on the first screen at
# 1280 x 800 below the page's short top (a scene's drawing scales with its height).
SIMPLEX_HEIGHT = 560
# The swarm beside it (every head apart, to click): whole on the first screen at 1280 x 800, at
# the width of its column there (px).
SWARM_SIZE = (460, 320)
# the legend entries hidden in each plot (URL hide=, hide_triangle=)
HIDDEN_KEYS = {"simplex": "simplex_hidden", "triangle": "triangle_hidden"}

ctx = page_context()
# The page's top is kept short (title and switches in one row, one line of caption, one row of
# controls) so that the plots, and the heads on them, are on the first screen at 1280 x 800.
title, switches = st.columns([3, 1], vertical_alignment="center")
title.title("Profiles on the simplex")
st.caption(
    "Each head's profile (a, b, c, d): the shares of ‖L‖² in A, in S's paired eigenvalues, and "
    "in its excess positive or negative ones."
)

controls = st.columns([4, 3, 2], vertical_alignment="bottom")
links.bind(links.specs("overlay", state.OVERLAY_KEY, label="overlaid"))
extra = other_models(
    controls[0],
    "Overlay other models",
    state.OVERLAY_KEY,
    None,  # the sidebar's model too (always drawn)
    help="Extra models drawn on the same simplex and triangle (at RoPE position 0), each in its "
    "own colour (the marker shapes keep their parity meaning); a published per-head table "
    "(.csv/.parquet) adds all its models; the sidebar's model is always drawn.",
)
links.bind(
    links.choice(
        "view",
        state.FRAME_KEY,
        list(FRAMES),
        state.DEFAULTS[state.FRAME_KEY],
        "a 3D view",
        FRAMES.get,
    )
)
frame = controls[1].segmented_control(
    "3D view",
    list(FRAMES),
    format_func=FRAMES.__getitem__,
    key=state.FRAME_KEY,
    required=True,
    help="Whole simplex: the tetrahedron as in the paper's Figures 1, 2 and 8, faces labelled. "
    f"Zoom to heads: the camera looks at the region holding {FRAMED_SHARE:.0%} of the heads, "
    "so crowded heads pull apart.",
)
camera_key = f"simplex_camera:{frame}"  # each view keeps its own camera
links.bind(links.camera("camera", camera_key))
with controls[2]:
    go_to_head_box(ctx)
with switches:
    jump_toggle()
    links.bind(links.flag("baseline", BASELINE_KEY, False, "Gaussian baseline"))
    show_baseline = st.toggle(
        "Gaussian baseline",
        key=BASELINE_KEY,
        help="Also draw, in grey, independent Gaussian K, Q of the same n, N as each model's "
        "heads: they sit at Θ's midpoint a = b = 1/2.",
    )

status = st.container()  # overlay progress and errors: the plots below never move or blank
analyses = load_models(ctx.spec, ctx.analysis, extra, where=status)  # tables: all their models
models = {spec: analysis.heads for spec, analysis in analyses.items()}
primary = analyses.get(ctx.spec, ctx.analysis)
with status:  # a head-type score to colour by: the model's scores on the probe, joined
    primary_heads, color_by = coloured(primary.heads, ctx.spec, ctx.color_by)
models = {ctx.spec: primary_heads, **{s: h for s, h in models.items() if s != ctx.spec}}
baselines = baselines_of(analyses) if show_baseline else {}
key = (models_key(analyses), ctx.rope_position, color_by, ctx.selected, show_baseline)
simplex = cached(
    "simplex",
    (*key, frame),
    lambda: PlotPayload.of(
        fit_to_column(
            figures.simplex_figure(
                models, color_by, ctx.selected, frame=frame, baselines=baselines
            ),
            1.12 if frame == "simplex" else 1.0,  # vertex labels inside a narrow column
        ).update_layout(height=SIMPLEX_HEIGHT)
    ),
)
triangle = cached(
    "triangle",
    key,
    lambda: PlotPayload.of(
        fit_to_column(triangle_figure(models, color_by, ctx.selected, baselines))
    ),
)
swarm = cached(
    "parity_swarm",
    (models_key({ctx.spec: primary}), ctx.rope_position, color_by, ctx.selected),
    lambda: PlotPayload.of(
        swarm_figure(primary_heads, ctx.spec, color_by, ctx.selected, *SWARM_SIZE)
    ),
)
profiles = cached("profile_table", key[:2], lambda: figures.profile_table(models))
overlays = " Overlaid models: each its own colour, the same shapes." if len(models) > 1 else ""
overlays += " Grey dots: Gaussian K, Q of the same n, N." if baselines else ""
framed = (
    f"Zoomed: the {FRAMED_SHARE:.0%} of the heads nearest their median profile (the camera "
    'turns about it); the rest and the vertices are a scroll away (the "→ toward" hints point '
    "to them), or choose Whole simplex."
    if frame == "heads"
    else "The whole tetrahedron, its faces labelled as in the paper's Figure 1 (the back facet "
    "b = 0 and the dashed edge a = b = 0 are empty); Zoom to heads pulls the crowd near Θ apart."
)

hidden_link("hide", HIDDEN_KEYS["simplex"], simplex)
hidden_link("hide_triangle", HIDDEN_KEYS["triangle"], triangle)
left, right = st.columns([3, 2])
with left:
    clickable_plot(
        simplex,
        key="simplex",
        on_click=select_from_customdata,
        caption=f"The tetrahedron Δ₃ of profiles (a, b, c, d); drag to rotate. {framed} Marker "
        "shape = parity type as in the paper's Figures 2 and 8 (+ Type I+, ○ Type II, and ◆ for "
        "Type I−, a 3D scene has no dash), colour as chosen in the sidebar; red: Θ, where "
        "rank-one forms land; the selected head is ringed and labelled. Where markers overlap, a "
        "click lists them."
        f"{overlays}",
        data=profiles,
        filename=f"{ctx.spec}_simplex",
        scroll_zoom=True,
        camera_key=camera_key,
        hidden_key=HIDDEN_KEYS["simplex"],
    )
with right:
    clickable_plot(
        swarm,
        key="parity_swarm",
        on_click=select_from_customdata,
        caption=f"Every head of {guard.plain(ctx.spec)}, each alone to click: its height is c_S + "
        "d_S, the share of S's energy its lobes leave unpaired (log scale), which decides its "
        f"type (Table 2): Type II below the dashed line (c_S + d_S ≤ {PARITY_TYPE_II_TEXT}), "
        "above it Type I− (left) and Type I+ (right). Across, the heads only make room for one "
        "another.",
        data=lambda: swarm_table(primary.heads, *SWARM_SIZE),
        filename=f"{ctx.spec}_parity_swarm",
    )

below_left, below_right = st.columns([3, 2])
with below_left:
    clickable_plot(
        triangle,
        key="triangle",
        on_click=select_from_customdata,
        caption="Symmetric profiles (b_S, c_S, d_S) of S alone on the triangle a = 0, oriented "
        "as the paper's Figure 10 (c = 1 left, b = 1 right); markers as in Figure 9: + Type I+, "
        "○ Type II, − Type I−. The band near the b vertex "
        f"(c_S + d_S ≤ {PARITY_TYPE_II_TEXT}) is Type II. Click a head to open it.",
        data=profiles,
        filename=f"{ctx.spec}_triangle",
        scroll_zoom=True,
        hidden_key=HIDDEN_KEYS["triangle"],
    )

row = ctx.head_row
below_right.subheader(f"Selected: {ctx.label}")
below_right.markdown(
    f"Parity **{row['parity']}** · symmetric energy **{row['energy']:.3f}** · pairing score "
    f"**{row['pairing']:.3f}** · profile (a, b, c, d) = ({row['a']:.3f}, {row['b']:.3f}, "
    f"{row['c']:.3f}, {row['d']:.3f})"
)
below_right.page_link("pages/head.py", label="Open the head page", icon=":material/arrow_forward:")
frames = (
    sweep_at_hand(ctx.spec, chosen_positions(), ctx.card.total_heads) if ctx.card.rotary else None
)
below_right.download_button(
    "Gallery: this model in one HTML file",
    data=analysis_download(
        ctx.spec,
        ctx.rope_position,
        lambda analysis, baseline: gallery_html(analysis, frames, baseline),
        budget=Budget.ANALYSES,
    ),
    file_name=f"{ctx.card.name.split(' ')[0].replace('/', '_')}_gallery.html",
    mime="text/html",
    icon=":material/download:",
    on_click="ignore",
    help="The simplex, the triangle, the heatmaps beside their baseline, parity by layer and "
    "a head table in one page that opens offline, as `headforms export MODEL --html FILE` "
    "writes it; a RoPE model's positions animate once they are computed (RoPE positions page).",
)

reference = "Reading the simplex: a short geometry reference (Figures 1 and 7, Tables 1, 3)"
with below_right.expander(reference):
    st.markdown(
        "A head's form L = KᵀQ splits into its symmetric part S = (L + Lᵀ)/2 and antisymmetric "
        "part A = (L − Lᵀ)/2. Its profile (a, b, c, d) sums to 1: a = ‖A‖²/‖L‖², and the energy "
        "of S divides into b (positive and negative eigenvalues matched in pairs, a hyperbolic "
        "part H), c (the excess of positive ones, a positive semidefinite part P) and d (the "
        "excess of negative ones, −P). So every point of Δ₃ says how a form mixes T = A, H and "
        "±P. Rank-one forms k qᵀ land on the red set Θ = {a = b, cd = 0}; trained heads "
        "accumulate near it, Gaussian ones at its midpoint a = b = ½."
    )
    st.table(geometry_reference())
    st.caption(
        "The faces of Δ₃ and the forms whose profiles lie over them (Table 3, Figure 1). The "
        "triangle on the right is the facet a = 0 of symmetric forms, drawn for S alone (Figure 7, "
        "right): " + "; ".join(f"{edge.equations}: {edge.fiber}" for edge in TRIANGLE_EDGES) + "."
    )
    card = ctx.card
    st.markdown(
        "**Scoring parameters of an attention block** (Table 1; value map and positional "
        "encoding excluded; N = dim C, ℓ the sequence length, h the heads). "
        f"{guard.plain(card.name)}: N = {card.model_dim or '?'}, h = {card.n_heads}."
    )
    st.table(
        {
            "attention": [m for m, _ in SCORING_PARAMETERS],
            "trainable scoring parameters": [f for _, f in SCORING_PARAMETERS],
        }
    )
