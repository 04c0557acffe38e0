"""Edit the forms: one edit over every head, each on its own (a layer x head heatmap of what the
model loses, and that cost against a geometric column with Spearman's rho), and the whole-model
edits (every head at once) as one table. Options are URL parameters (``edit``, ``controls``,
``seed``, ``measure``, ``geometry``)."""

from __future__ import annotations

import streamlit as st

from headforms.analyses.behaviour import GEOMETRY_COLUMNS
from headforms.analyses.interventions import (
    MEASURES,
    edit_frame,
    sweep_summary,
    whole_model_table,
)
from headforms.figures import interventions as figures
from headforms.interventions import EDITS, FORM_EDITS
from headforms.interventions.request import MAX_CONTROLS
from ui import cached, clickable_plot, guard, jump_toggle, links, page_context
from ui import interventions as edits
from ui.compute import derive
from ui.gateway import GeometryCorrelation, of_model
from ui.state import select_from_customdata

EDIT_KEY = "hf_experiments_edit"
MEASURE_KEY = "hf_experiments_measure"
GEOMETRY_KEY = "hf_experiments_geometry"
SWEEP_ASKED_KEY = "_hf_experiments_sweep_asked"
TABLE_ASKED_KEY = "_hf_experiments_table_asked"
# The whole-model table's rows: every edit of the forms (identity: the machinery's check) and
# the two reference points.
WHOLE_MODEL_EDITS = (*FORM_EDITS, "output_zero", "output_mean")

ctx = page_context()
st.title("Edit the forms")
st.caption(
    f"What {guard.plain(ctx.spec)} loses when its heads' forms are edited, on the first 128 tokens "
    "of the Declaration of Independence: ΔCE is the change of the next-token cross-entropy "
    "(nats), KL the divergence of the next-token distributions. Click a cell or a point to open "
    "that head (its page edits it alone, against matched controls). docs/interventions.md."
)
CONTROLS = links.whole("controls", edits.CONTROLS_KEY, 0, MAX_CONTROLS, 0, "a number", "K =")
links.check(CONTROLS, edits.SEED)
links.bind(links.choice("edit", EDIT_KEY, list(EDITS), "zero", "an edit"))
links.bind(links.choice("measure", MEASURE_KEY, list(MEASURES), "delta_ce", "a measure"))
links.bind(links.choice("geometry", GEOMETRY_KEY, list(GEOMETRY_COLUMNS), "a", "a column"))

st.subheader("One edit, every head on its own")
controls_row = st.columns([2.4, 1, 1, 1.3], vertical_alignment="bottom")
edit = controls_row[0].selectbox("Edit", list(EDITS), format_func=edits.edit_label, key=EDIT_KEY)
controls = controls_row[1].number_input(
    "matched controls K",
    min_value=0,
    max_value=MAX_CONTROLS,
    value=CONTROLS.default,
    step=1,
    key=edits.CONTROLS_KEY,
    bind="query-params",
    help="Per head; each control is one more pass per head (0: the edits alone).",
)
seed = controls_row[2].number_input(
    "seed", min_value=0, value=0, step=1, key=edits.SEED_KEY, bind="query-params"
)
with controls_row[3]:
    jump_toggle()
checked = (guard.whole_number(controls, 0, MAX_CONTROLS), guard.whole_number(seed, 0, 2**32 - 1))
if None in checked:
    links.stop_page()
controls, seed = checked  # type: ignore[assignment]

request = edits.sweep_request(edit, controls, seed)
sweep = edits.peek_intervention(ctx.spec, request)
slot = st.empty()
if sweep is None:
    slot.button(
        f"Edit each of the {ctx.card.total_heads} heads alone ({edit})",
        icon=":material/science:",
        on_click=st.session_state.__setitem__,
        args=(SWEEP_ASKED_KEY, True),
        help="One sequence pass per head and control, from the head's layer up; the model's "
        "layers below are computed once.",
    )
    if st.session_state.pop(SWEEP_ASKED_KEY, False):
        slot.empty()
        sweep = edits.run_intervention(
            ctx.spec, request, f"{edit} on each head of {guard.plain(ctx.spec)}", bar=True
        )
if sweep is not None:
    table = sweep.table
    key = (ctx.model, sweep.fingerprint, edit, controls, seed)
    frame = cached("edit_frame", key, lambda: edit_frame(ctx.heads, table))
    options = st.columns([1, 1, 1.3], vertical_alignment="bottom")
    measures = [m for m in MEASURES if frame[m].notna().any()]
    measure = options[0].selectbox(
        "Measure", list(MEASURES), format_func=MEASURES.__getitem__, key=MEASURE_KEY
    )
    if measure not in measures:
        st.info(
            f"{guard.plain(ctx.spec)} has no {MEASURES[measure]}; "
            + " ".join(guard.plain(n) for n in sweep.notes),
            icon=":material/info:",
        )
        links.stop_page()
    column = options[1].selectbox(
        "Geometry (across)",
        list(GEOMETRY_COLUMNS),
        format_func=GEOMETRY_COLUMNS.__getitem__,
        key=GEOMETRY_KEY,
    )
    summary = sweep_summary(frame, measure)
    options[2].caption(guard.plain(summary.text()))
    source = (of_model(ctx.analysis), sweep.fingerprint, edit, controls, seed)
    found = derive(GeometryCorrelation(source, frame, column, measure, seed))
    left, right = st.columns(2)
    with left:
        clickable_plot(
            cached(
                "edit_heatmap",
                (*key, measure, ctx.selected),
                lambda: figures.sweep_heatmap_figure(frame, ctx.spec, edit, measure, ctx.selected),
            ),
            key="edit_heatmap",
            on_click=select_from_customdata,
            caption=f"{MEASURES[measure]} when each head alone gets the {edit} edit; red: the "
            "model loses, blue: it gains; the selected head outlined.",
            data=frame,
        )
    with right:
        clickable_plot(
            figures.sweep_scatter_figure(
                frame, column, ctx.spec, edit, found, measure, ctx.selected
            ),
            key="edit_scatter",
            on_click=select_from_customdata,
            caption=f"Each head's {MEASURES[measure]} against its {GEOMETRY_COLUMNS[column]}; "
            "marker and colour by parity. Spearman's ρ with a 95% bootstrap interval over heads "
            f"(seed {seed}).",
            data=frame,
        )

st.subheader("Every head at once")
st.caption(
    "Each edit applied to every head together, against 8 matched controls (random changes of "
    "every head's form of the same size): the numbers a paper quotes. identity reproduces the "
    "model (ΔCE 0); output_zero and output_mean act on the heads' outputs (no controls)."
)
requests = {name: edits.whole_model_request(name, seed) for name in WHOLE_MODEL_EDITS}
kept = {name: edits.peek_intervention(ctx.spec, r) for name, r in requests.items()}
missing = [name for name, result in kept.items() if result is None]
table_slot = st.empty()
if missing and not st.session_state.pop(TABLE_ASKED_KEY, False):
    table_slot.button(
        f"Run the {len(missing)} whole-model edits not yet computed",
        icon=":material/table_view:",
        on_click=st.session_state.__setitem__,
        args=(TABLE_ASKED_KEY, True),
    )
else:
    table_slot.empty()
    for index, name in enumerate(missing, start=1):
        kept[name] = edits.run_intervention(
            ctx.spec,
            requests[name],
            f"{name} on every head ({index} of {len(missing)})",
            bar=True,
        )
done = {name: result.table for name, result in kept.items() if result is not None}
if done:
    whole = whole_model_table(done)
    st.dataframe(
        whole,
        hide_index=True,
        column_config={
            "delta_ce": st.column_config.NumberColumn("ΔCE", format="%.3f"),
            "kl": st.column_config.NumberColumn("KL", format="%.3f"),
            "cosine_distance": st.column_config.NumberColumn("cosine distance", format="%.3f"),
            "control_median": st.column_config.NumberColumn("controls' median", format="%.3f"),
            "control_p10": st.column_config.NumberColumn("10%", format="%.3f"),
            "control_p90": st.column_config.NumberColumn("90%", format="%.3f"),
            "control_rank": None,
            "controls": st.column_config.NumberColumn("K"),
            "exceeds": st.column_config.TextColumn("exceeds"),
        },
    )
