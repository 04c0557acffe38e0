"""Edit the forms: one edit over every head, each on its own (a layer x head heatmap of what the
model loses, and that cost against a geometric column with Spearman's rho), the whole-model
edits (every head at once) against their matched controls as one table, on a text the visitor
chooses, and the study that prints every number of the docs (its report to download). Options
are URL parameters of this page's own (``sweep_edit``, ``sweep_controls``, ``sweep_seed``,
``sweep_text``, ``sweep_match``, ``measure``, ``geometry``): no other page binds these names."""

from __future__ import annotations

import streamlit as st

from headforms.analyses.behaviour import CORRELATION_COLUMNS, SHARE_COLUMNS, with_shares
from headforms.analyses.interventions import (
    MEASURES,
    edit_frame,
    sweep_summary,
    whole_model_table,
)
from headforms.card import TABLE_SOURCE
from headforms.figures import interventions as figures
from headforms.interventions import EDITS, FORM_EDITS
from headforms.interventions.controls import MATCHES
from headforms.interventions.request import MAX_CONTROLS
from headforms.interventions.text import DEFAULT_TEXT_KEY, TEXTS
from ui import cached, clickable_plot, guard, jump_toggle, links, page_context
from ui import interventions as edits
from ui import why as splits
from ui.compute import derive
from ui.gateway import GeometryCorrelation, of_model
from ui.state import select_from_customdata

EDIT_KEY = "hf_experiments_edit"
MEASURE_KEY = "hf_experiments_measure"
GEOMETRY_KEY = "hf_experiments_geometry"
TEXT_KEY = "hf_experiments_text"
MATCH_KEY = "hf_experiments_match"
CONTROLS_KEY = "sweep_controls"  # bound by Streamlit: the parameter's name
SEED_KEY = "sweep_seed"
SWEEP_ASKED_KEY = "_hf_experiments_sweep_asked"
TABLE_ASKED_KEY = "_hf_experiments_table_asked"
STUDY_ASKED_KEY = "_hf_experiments_study_asked"
# The whole-model table's rows: every edit of the forms (identity: the machinery's check) and
# the two reference points.
WHOLE_MODEL_EDITS = (*FORM_EDITS, "output_zero", "output_mean")

ctx = page_context()
st.title("Edit the forms")
if ctx.card.source_kind == TABLE_SOURCE:
    st.info(
        f"{guard.plain(ctx.spec)} is a published per-head table: it has the heads' statistics, "
        "not the model's weights, so nothing can be edited or run. Choose a model with weights "
        "(a bundled one, a checkpoint, a GGUF file or a hub id) in the sidebar.",
        icon=":material/info:",
    )
    links.stop_page()
CONTROLS = links.whole("sweep_controls", CONTROLS_KEY, 0, MAX_CONTROLS, 0, "a number", "K =")
SEED = links.whole("sweep_seed", SEED_KEY, 0, 2**32 - 1, 0, "a seed", "seed")
links.check(CONTROLS, SEED)
links.bind(links.choice("sweep_edit", EDIT_KEY, list(EDITS), "zero", "an edit"))
links.bind(links.choice("sweep_text", TEXT_KEY, list(TEXTS), DEFAULT_TEXT_KEY, "a text"))
links.bind(links.choice("sweep_match", MATCH_KEY, list(MATCHES), "scores", "a match"))
links.bind(links.choice("measure", MEASURE_KEY, list(MEASURES), "delta_ce", "a measure"))
links.bind(links.choice("geometry", GEOMETRY_KEY, list(CORRELATION_COLUMNS), "a", "a column"))
options_row = st.columns([2, 2], vertical_alignment="bottom")
text_name = options_row[0].selectbox(
    "Text", list(TEXTS), format_func=edits.text_choice_label, key=TEXT_KEY
)
match = options_row[1].selectbox(
    "Controls matched on", list(MATCHES), format_func=edits.match_label, key=MATCH_KEY
)
text = TEXTS[text_name].text
st.caption(
    f"What {guard.plain(ctx.spec)} loses when its heads' forms are edited, on the first 128 tokens "
    f"of {TEXTS[text_name].title}: "
    "ΔCE is the change of the next-token cross-entropy (nats), KL the divergence of the "
    "next-token distributions. Click a cell or a point to open that head (its page edits it "
    "alone, against matched controls); `headforms intervene` runs the same from the command line."
)

st.subheader("One edit, every head on its own")
controls_row = st.columns([2.4, 1, 1, 1.3], vertical_alignment="bottom")
edit = controls_row[0].selectbox("Edit", list(EDITS), format_func=edits.edit_label, key=EDIT_KEY)
controls = controls_row[1].number_input(
    "matched controls K",
    min_value=0,
    max_value=MAX_CONTROLS,
    value=CONTROLS.default,
    step=1,
    key=CONTROLS_KEY,
    bind="query-params",
    help="Per head; each control is one more pass per head (0: the edits alone).",
)
seed = controls_row[2].number_input(
    "seed", min_value=0, value=0, step=1, key=SEED_KEY, bind="query-params"
)
with controls_row[3]:
    jump_toggle()
checked = (guard.whole_number(controls, 0, MAX_CONTROLS), guard.whole_number(seed, 0, 2**32 - 1))
if None in checked:
    links.stop_page()
controls, seed = checked  # type: ignore[assignment]

request = edits.sweep_request(edit, controls, seed, text, match)
sweep = edits.peek_intervention(ctx.spec, request)
slot = st.empty()
if sweep is None:
    slot.button(
        f"Edit each of the {ctx.card.total_heads} heads alone ({edit}: "
        f"{request.passes(ctx.card.total_heads)} sequence passes)",
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
    key = (ctx.model, sweep.fingerprint, request)  # the request: edit, controls, seed, text, match
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
        list(CORRELATION_COLUMNS),
        format_func=CORRELATION_COLUMNS.__getitem__,
        key=GEOMETRY_KEY,
    )
    source = (of_model(ctx.analysis), sweep.fingerprint, request)
    if column in SHARE_COLUMNS:  # a realised share: every head's scores split on the same text
        shares = splits.every_head(ctx.spec, ctx.card.total_heads)
        if shares is None:
            links.stop_page()
        frame = with_shares(frame, shares.table)
        source = (*source, "shares", shares.fingerprint)
    summary = sweep_summary(frame, measure)
    options[2].caption(guard.plain(summary.text()))
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
            caption=f"Each head's {MEASURES[measure]} against its {CORRELATION_COLUMNS[column]}; "
            "marker and colour by parity. Spearman's ρ with a 95% bootstrap interval over heads "
            f"(seed {seed}).",
            data=frame,
        )

st.subheader("Every head at once")
st.caption(
    f"Each edit applied to every head together, against {edits.DEFAULT_CONTROLS} matched controls "
    f"(matched on {match}: each head's control moves its scores as much as its edit does), with "
    "the one-sided p-value (count of controls at or above + 1) / (K + 1), the effect over the "
    "controls' median and a 95% block-bootstrap interval over the text's positions. identity "
    "reproduces the model (ΔCE 0); output_zero and output_mean (each position's mean over the "
    "positions before it) act on the heads' outputs (no controls)."
)
requests = {name: edits.whole_model_request(name, seed, text, match) for name in WHOLE_MODEL_EDITS}
kept = {name: edits.peek_intervention(ctx.spec, r) for name, r in requests.items()}
missing = [name for name, result in kept.items() if result is None]
table_slot = st.empty()
if missing and not st.session_state.pop(TABLE_ASKED_KEY, False):
    passes = sum(requests[name].passes(1) for name in missing)
    table_slot.button(
        f"Run the {len(missing)} whole-model edits not yet computed ({passes} sequence passes)",
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
            "score_rms": st.column_config.NumberColumn("score RMS", format="%.3f"),
            "control_score_rms": st.column_config.NumberColumn("controls' RMS", format="%.3f"),
            "control_median": st.column_config.NumberColumn("controls' median", format="%.3f"),
            "control_p10": st.column_config.NumberColumn("10%", format="%.3f"),
            "control_p90": st.column_config.NumberColumn("90%", format="%.3f"),
            "controls_smaller": None,
            "p_value": st.column_config.NumberColumn("p", format="%.3f"),
            "effect": st.column_config.NumberColumn("× median", format="%.2f"),
            "low": st.column_config.NumberColumn("95% low", format="%.3f"),
            "high": st.column_config.NumberColumn("95% high", format="%.3f"),
            "kl_control_median": st.column_config.NumberColumn("KL controls", format="%.3f"),
            "kl_p_value": st.column_config.NumberColumn("KL p", format="%.3f"),
            "controls": st.column_config.NumberColumn("K"),
            "exceeds": st.column_config.TextColumn("|change| above"),
        },
    )

st.subheader("The study: every number of the docs")
study_request = edits.study_request(ctx.spec)
st.caption(
    "The three shipped texts (prose, a narrative chapter, a program), every whole-model edit "
    f"against {study_request.options.controls} controls, per-head sweeps of "
    f"{', '.join(study_request.options.sweep_edits)} read against a dose-response of per-head "
    "controls, and Spearman's rho of each head's cost with its geometry and size: what "
    "`headforms study` prints. Its report opens offline."
)
study = edits.peek_study(study_request)
study_slot = st.empty()
if study is None:
    study_slot.button(
        f"Run the study ({study_request.options.passes(ctx.card.total_heads)} sequence passes)",
        icon=":material/summarize:",
        on_click=st.session_state.__setitem__,
        args=(STUDY_ASKED_KEY, True),
    )
    if st.session_state.pop(STUDY_ASKED_KEY, False):
        study_slot.empty()
        study = edits.run_study(ctx.spec, study_request)
if study is not None:
    edits.study_downloads(study)
