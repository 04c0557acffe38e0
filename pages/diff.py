"""Model diff page: two models of the same shapes matched head by head: arrows from A to B on
the simplex, the distance each head moved, its parity flips and the heads that moved most."""

from __future__ import annotations

import streamlit as st

from headforms import BUNDLED_MODELS, HeadformsError
from headforms.analyses import motion
from headforms.figures import movement as movement_figures
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    guard,
    jump_toggle,
    links,
    model_label,
    page_context,
    select_from_customdata,
    state,
)
from ui.compute import derive
from ui.demo import demo_offer
from ui.gateway import Movement
from ui.motion import bind_second, bind_views, load_diff, view_controls
from ui.widgets import head_rows

ctx = page_context()
st.title("One model against another")
st.caption(
    "Two models of the same shapes (a base model and its fine-tune, two seeds) matched head by "
    "head: where each head of A went in B. A is the sidebar's model unless chosen here."
)
offer = st.container()  # above the controls: the demo's button, or what the demo is
controls = st.columns([3, 3, 3, 3], vertical_alignment="bottom")
bind_second()
bind_views()
chosen = st.session_state.get(state.DIFF_A_KEY)
controls[0].selectbox(
    "A: the model to start from",
    list(dict.fromkeys(s for s in (chosen, *BUNDLED_MODELS) if s)),
    key=state.DIFF_A_KEY,
    index=None,
    format_func=model_label,
    accept_new_options=True,
    placeholder=f"the sidebar's: {guard.plain(ctx.spec)}",
    help="Left empty, the sidebar's model; a model chosen here is A on this page only.",
)
first = st.session_state.get(state.DIFF_A_KEY) or ctx.spec
second = controls[1].selectbox(
    "B: the model to compare",
    list(
        dict.fromkeys(  # a model typed (or linked) before stays a choice
            [s for s in (st.session_state[state.DIFF_KEY], *BUNDLED_MODELS) if s and s != first]
        )
    ),
    key=state.DIFF_KEY,
    format_func=model_label,
    accept_new_options=True,
    placeholder="a model of the same shapes",
    help="Its heads are matched with A's (same layers, heads, kv heads and dims; otherwise the "
    "shapes that differ are named).",
)
view, frame = view_controls(controls[2], controls[3], stacked=True)  # narrow columns
jump_toggle()
with offer:
    demo_offer("diff", [first, second or ""])
if not second:
    st.info("Choose or type model B above.", icon=":material/info:")
    links.stop_page()

status = st.container()
try:
    diff = load_diff(first, second, where=status)
except HeadformsError as error:
    st.error(guard.public_message(str(error)), icon=":material/error:")
    links.stop_page()
first_name, second_name = diff.values
key = tuple((a.card.spec, a.card.fingerprint) for a in diff.analyses)  # the weights of A, B
selected = (second_name, ctx.layer, ctx.head)
table = diff.table()
camera_key = f"diff_camera:{frame}"
links.bind(links.camera("camera", camera_key))
movement = derive(Movement((key, diff.values), diff))
moved = motion.most_moved(movement, 12)
clickable_plot(
    cached(
        "diff_figure",
        (*key, view, ctx.layer, ctx.head, frame),
        lambda: PlotPayload.of(movement_figures.diff_figure(diff, view, selected, frame)),
    ),
    key="diff_simplex",
    on_click=select_from_customdata,
    caption=f"Each head of A ({guard.plain(first_name)}, grey dot) joined to the same head of B "
    f"({guard.plain(second_name)}, marker shape = its parity type); the selected head's line "
    "is black. Click a head to open it in B.",
    data=table,
    filename=f"diff_{first_name}_{second_name}",
    scroll_zoom=True,
    camera_key=camera_key if view == "simplex" else None,
)

flips = int(table["parity_flip"].sum())
st.markdown(
    f"**{flips}** of {len(table)} heads change parity type · distance moved on the simplex "
    f"(unit edges): median **{table['distance'].median():.4f}**, largest "
    f"**{table['distance'].max():.4f}**"
)
left, right = st.columns([3, 2])
with left:
    clickable_plot(
        cached(
            "diff_distance",
            (*key, ctx.layer, ctx.head),
            lambda: PlotPayload.of(
                movement_figures.distance_figure(movement, second_name, selected)
            ),
        ),
        key="diff_distance",
        on_click=select_from_customdata,
        caption="The distance each head moved from A to B (profile (a, b, c, d) on the "
        "tetrahedron of unit edges); click a cell to open the head in B.",
        data=movement,
        filename=f"diff_distance_{first_name}_{second_name}",
    )
with right:
    clickable_plot(
        cached(
            "diff_moved",
            key,
            lambda: PlotPayload.of(movement_figures.moved_most_figure(moved, second_name)),
        ),
        key="diff_moved_most",
        on_click=select_from_customdata,
        caption="The heads that moved most, farthest on top, their parity types in A → B on "
        "each bar; click a bar to open the head in B.",
        data=moved,
        filename=f"diff_moved_most_{first_name}_{second_name}",
    )

st.subheader("Parity flips")
flipped = table[table["parity_flip"]][
    [
        "layer",
        "head",
        "parity_A",
        "parity_B",
        "distance",
        "c_sym_A",
        "d_sym_A",
        "c_sym_B",
        "d_sym_B",
    ]
]
if flipped.empty:
    st.write("No head changes parity type from A to B.")
else:
    st.caption("A row opens the head in B.")
    head_rows(flipped.reset_index(drop=True), "diff_flips_table", second_name)
st.download_button(
    "The diff table (CSV)",
    data=lambda: table.to_csv(index=False),
    file_name=f"diff_{first_name}_{second_name}.csv".replace("/", "_"),
    mime="text/csv",
    icon=":material/download:",
    on_click="ignore",
)
