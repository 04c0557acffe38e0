"""RoPE positions page: every head at every relative position d of a range on the simplex, a
slider that moves every marker in the browser, the selected head's curves against d and the
positions where heads change parity."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from headforms import HeadformsError
from headforms.analyses import motion
from headforms.figures import animated
from headforms.figures import curves as curve_figures
from headforms.options import DEFAULT_ROPE_POSITIONS
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    go_to_head_box,
    guard,
    jump_toggle,
    links,
    page_context,
    select_from_customdata,
    show_figure,
    state,
)
from ui.compute import derive, later
from ui.gateway import ParityChanges
from ui.motion import (
    MAX_SLIDER_POSITIONS,
    bind_views,
    check_positions,
    load_sweep,
    path_colouring,
    slider_options,
    sweep_request,
    view_controls,
)
from ui.plot import frame_link
from ui.widgets import head_rows

# The plot's height (px), its slider included: the whole figure (the scene, every head and the
# slider under it) on the first screen at 1280 x 800 below the page's short top, the controls
# beside it.
FIGURE_HEIGHT = 530
FRAME_KEY = "_hf_rope_at"  # the frame the slider shows (a position), in the URL as ``at``

ctx = page_context()
# The page's top is kept short (title and switches in one row, one line of caption), and the
# controls sit beside the figure, so that the whole figure, slider included, is on the first
# screen.
title, switches = st.columns([3, 1], vertical_alignment="center")
title.title("Every RoPE position at once")
card = ctx.card
if not card.rotary:
    st.info(
        (
            f"{guard.plain(card.name)} comes from a published table, which holds its heads at "
            "d = 0 only, so they do not move with the relative position d here."
            if card.source_kind == "table"
            else f"{guard.plain(card.name)} has no rotation: it uses {card.positional} "
            "positions, so its heads do not move with the relative position d."
        )
        + " Pick a RoPE model in the sidebar.",
        icon=":material/info:",
    )
    links.stop_page()
st.caption(
    "A head's form at relative position d of query and key: L_d = KᵀR_dQ, with the model's own "
    "rotation. Move the slider (or press Play): every head moves, in the browser.",
    help="Every position of the range is computed in one pass and sent at once; the slider and "
    "Play move the markers without asking the server.",
)

plot_column, controls = st.columns([4, 1.15])
check_positions()
bind_views()
text = controls.text_input(
    "RoPE positions d",
    value=DEFAULT_ROPE_POSITIONS,
    key=state.POSITIONS_KEY,
    bind="query-params",
    help="A:B (both included), A:B:STEP or a list like 0,1,2,8,64; at most "
    f"{MAX_SLIDER_POSITIONS} positions on one slider.",
)
view, frame = view_controls(controls, controls, stacked=True)
with switches:
    jump_toggle()
    every = st.toggle(
        "Every head's path",
        key=state.MOTION_PATHS_KEY,
        help="Also draw each head's path over all the positions, in grey.",
    )
with controls:
    go_to_head_box(ctx)

try:
    options = slider_options(text)
    sweep = load_sweep(ctx.spec, options, card.total_heads)
except HeadformsError as error:
    st.error(guard.public_message(str(error)), icon=":material/error:")
    links.stop_page()
positions = sweep.positions
start = positions.index(ctx.rope_position) if ctx.rope_position in positions else 0


def first_screen(fig: go.Figure) -> go.Figure:
    """The figure at :data:`FIGURE_HEIGHT`."""
    return fig.update_layout(height=FIGURE_HEIGHT)


color_by = path_colouring(ctx.color_by, controls)
key = (ctx.spec, card.fingerprint, options, view, color_by, ctx.selected, frame, every, start)
figure = cached(
    "motion_sweep",
    key,
    lambda: PlotPayload.of(
        first_screen(
            animated.animated_figure(
                sweep, view, color_by, ctx.selected, frame, start, every_path=every
            )
        )
    ),
    label=f"Drawing {card.total_heads} heads at {len(positions)} positions (one frame each)",
)
camera_key = f"motion_camera:{frame}"
links.bind(links.camera("camera", camera_key))
frame_link("at", FRAME_KEY, figure, str(positions[start]), "a RoPE position of the slider")
with plot_column:
    clickable_plot(
        figure,
        key="motion_simplex",
        on_click=select_from_customdata,
        caption=f"Every head of {guard.plain(card.name)} at d = {positions[0]}…{positions[-1]} "
        f"({len(positions)} positions; the slider starts at the sidebar's d = "
        f"{positions[start]}, and a link keeps where it was moved). Marker shape = parity type "
        "as on the Simplex page; black line: the selected head's path over d. Click a head to "
        "open it.",
        data=later(sweep_request(ctx.spec, options, card.total_heads), lambda kept: kept.table),
        filename=f"{ctx.spec}_rope_positions",
        scroll_zoom=True,
        camera_key=camera_key if view == "simplex" else None,
        frame_key=FRAME_KEY,
    )

curves = motion.head_curves(sweep, ctx.layer, ctx.head)
found = derive(ParityChanges(sweep_request(ctx.spec, options, card.total_heads).key, sweep))
changes = found.changes
left, right = st.columns([3, 2])
with left:
    show_figure(
        cached(
            "motion_curves",
            (ctx.spec, card.fingerprint, options, ctx.layer, ctx.head),
            lambda: curve_figures.curves_figure(curves, sweep.axis, ctx.label, card.name),
        ),
        f"{ctx.label}: its profile (a, b, c, d) and parity type at each RoPE position d.",
        data=curves,
        filename=f"{ctx.spec}_L{ctx.layer}H{ctx.head}_over_d",
    )
with right:
    st.subheader(f"{ctx.label}: where it changes parity")
    own = changes[(changes["layer"] == ctx.layer) & (changes["head"] == ctx.head)]
    if own.empty:
        first = curves["parity"].iloc[0]
        st.write(f"None: Type {first} at every position of the range.")
    else:
        st.dataframe(own.drop(columns=["layer", "head"]), hide_index=True, height=260)

st.subheader("Where heads change parity")
by_head = found.by_head
st.caption(
    f"{len(by_head)} of {card.total_heads} heads change parity type somewhere in d = "
    f"{positions[0]}…{positions[-1]} (the positions after each change; a row opens its head)."
)
if len(by_head):
    head_rows(by_head, "motion_changes_table", ctx.spec)
    st.download_button(
        "Every change (CSV)",
        data=lambda: changes.to_csv(index=False),
        file_name=f"{ctx.spec.replace('/', '_')}_parity_changes_over_d.csv",
        mime="text/csv",
        icon=":material/download:",
        on_click="ignore",
    )
