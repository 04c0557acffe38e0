"""Training run page: the checkpoints of a run (or the records of a run store, written while the
model trains) as one ordered series, each head's path on the simplex from the Gaussian baseline
through every checkpoint, a step slider, the selected head's curves against step and the steps
at which heads change parity. A run store whose run has not ended is followed live."""

from __future__ import annotations

import streamlit as st

from headforms import HeadformsError
from headforms.analyses import motion
from headforms.figures import animated
from headforms.figures import curves as curve_figures
from headforms.figures import movement as movement_figures
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    guard,
    head_label,
    jump_toggle,
    links,
    page_context,
    select_from_customdata,
    show_figure,
    state,
)
from ui.compute import derive
from ui.demo import demo_offer
from ui.gateway import Movement, ParityChanges
from ui.loading import load_baseline, models_key
from ui.motion import (
    MAX_SERIES_CHECKPOINTS,
    bind_series,
    bind_views,
    load_series,
    names_run_store,
    path_colouring,
    run_click,
    series_inputs,
    view_controls,
    watch_run,
)
from ui.plot import frame_link
from ui.widgets import head_rows

FIGURE_HEIGHT = 530  # the whole figure, slider included, on the first screen at 1280 x 800
FRAME_KEY = "_hf_series_at"  # the step the slider shows, in the URL as ``at``

ctx = page_context()
st.title("Checkpoints of a training run")
st.caption(
    "A run's checkpoints as one series ordered by training step: each head's path on the "
    "simplex starts at its Gaussian counterpart (where a randomly initialised head sits) and "
    "goes through every checkpoint; the step slider moves every head in the browser."
)
bind_series()
given = bool(series_inputs(st.session_state.get(state.SERIES_KEY, "")))
# the demo's button above the box; once a run is given, what the demo is beside the figure
offer = None if given else st.container()
# A run at hand: its box folded beside the figure, so that the figure, slider included, is on
# the first screen.
plot_column, controls = st.columns([4, 1.15]) if given else (st.container(), st.container())
box = controls.expander("Checkpoints") if given else st.container()
text = box.text_area(
    "Checkpoints",
    key=state.SERIES_KEY,
    height=90,
    placeholder="/runs/my-run   (its checkpoint-STEP folders, or headforms' run store)\n"
    "or one per line: EleutherAI/pythia-70m@step1000, …@step2000, …",
    help="A run directory holding checkpoint-STEP folders as transformers' Trainer saves them, "
    "or the run store headforms' Trainer callback writes while the model trains (followed live), "
    "or one checkpoint per line (or comma-separated) that names its step: a folder "
    ".../checkpoint-1500 or a hub revision org/name@step1000. The step is the number at the end "
    f"of the folder name or revision. At most {MAX_SERIES_CHECKPOINTS} checkpoints.",
)
inputs = series_inputs(text)
if offer is not None:
    with offer:
        demo_offer("training", inputs)
if not inputs:
    st.info(
        "Give a run directory or a list of checkpoints above (press Ctrl+Enter), or try the demo.",
        icon=":material/info:",
    )
    links.stop_page()

if not given:  # the run was typed in this run: the controls below the box
    plot_column, controls = st.columns([4, 1.15])
bind_views()
view, frame = view_controls(controls, controls, stacked=True)
with controls:
    toggles = st.container()  # drawn after the demo line below: a link's demo is built there
    if offer is None:
        demo_offer("training", inputs, compact=True)
with toggles:
    if not names_run_store(inputs):  # a record's head is followed here, never opened elsewhere
        jump_toggle()
    every = st.toggle(
        "Every head's path", key=state.MOTION_PATHS_KEY, help="Also draw every head's path."
    )

status = st.container()
try:
    series = load_series(inputs, where=status)
except HeadformsError as error:
    st.error(guard.public_message(str(error)), icon=":material/error:")
    links.stop_page()
with status:
    watch_run(series)
recorded = series.run is not None
pick = run_click(series) if recorded else select_from_customdata
card = series.card
layer, head = min(ctx.layer, card.n_layers - 1), min(ctx.head, card.n_heads - 1)
if (layer, head) != (ctx.layer, ctx.head):
    st.caption(
        f"The sidebar's {ctx.label} is not in this run's model: following "
        f"{head_label(layer, head)}."
    )
last = series.checkpoints[-1].spec
selected = (last, layer, head)
baseline = load_baseline(series.analyses[-1], status)  # where every path starts
base_heads = None if baseline is None else baseline.heads
checkpoints = zip(series.checkpoints, series.analyses, strict=True)
weights = models_key({checkpoint.spec: analysis for checkpoint, analysis in checkpoints})
color_by = path_colouring(ctx.color_by, controls)
key = (series.label, weights, view, color_by, layer, head)
figure = cached(
    "motion_series",
    (*key, frame, every, base_heads is not None, recorded and series.run.live),
    lambda: PlotPayload.of(
        animated.animated_figure(
            series,
            view,
            color_by,
            selected,
            frame,
            series.n_points - 1,
            baseline=base_heads,
            every_path=every,
            follow_last=recorded and series.run.live,
        ).update_layout(height=FIGURE_HEIGHT)
    ),
    label=f"Drawing {card.total_heads} heads at {series.n_points} checkpoints (one frame each)",
)
steps = series.steps
camera_key = f"series_camera:{frame}"
links.bind(links.camera("camera", camera_key))
what = "record" if recorded else "checkpoint"
frame_link("at", FRAME_KEY, figure, str(steps[-1]), "a step of the slider")
with plot_column:
    clickable_plot(
        figure,
        key="series_simplex",
        on_click=pick,
        caption=f"Every head of {guard.plain(series.label)} at {len(steps)} {what}s, steps "
        f"{steps[0]}…{steps[-1]} (the slider starts at the last; a link keeps where it was "
        f"moved). Black line: the path of {head_label(layer, head)} from its Gaussian "
        "counterpart (grey square) through every "
        + (
            "record. Click a head to follow it."
            if recorded
            else "checkpoint. Click a head to open it in that checkpoint."
        ),
        data=lambda: series.table,
        filename="training_run",
        scroll_zoom=True,
        camera_key=camera_key if view == "simplex" else None,
        frame_key=FRAME_KEY,
    )

curves = motion.head_curves(series, layer, head)
left, right = st.columns([3, 2])
with left:
    show_figure(
        cached(
            "series_curves",
            (*key[:2], layer, head),
            lambda: curve_figures.curves_figure(
                curves, series.axis, head_label(layer, head), card.name
            ),
        ),
        f"{head_label(layer, head)}: its profile (a, b, c, d) and parity type at each checkpoint.",
        data=curves,
        filename=f"training_run_L{layer}H{head}",
    )
with right:
    moved = motion.most_moved(derive(Movement(key[:2], series)), 10)
    clickable_plot(
        cached(
            "series_moved",
            key[:2],
            lambda: PlotPayload.of(movement_figures.moved_most_figure(moved, last, series.axis)),
        ),
        key="series_moved_most",
        on_click=pick,
        caption=f"Distance from the first {what} to the last on the simplex (unit edges); the "
        "parity types at both ends on each bar; click a bar to "
        + ("follow the head." if recorded else "open the head."),
        data=moved,
        filename="training_run_moved_most",
    )

st.subheader("Steps at which heads change parity")
by_head = derive(ParityChanges(key[:2], series)).by_head
st.caption(
    f"{len(by_head)} of {card.total_heads} heads change parity type between {what}s (the steps "
    "after each change; a row "
    + ("follows its head)." if recorded else "opens its head in the last checkpoint).")
)
if len(by_head):
    follow = state.select_layer_head if recorded else None
    head_rows(by_head, "series_changes_table", last, pick=follow)
