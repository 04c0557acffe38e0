"""Geometry against behaviour: every head as a point, a geometric column against a head-type
score, with their rank correlation; and the simplex coloured by the score. Click a head to open
it. The columns are URL parameters (``geometry``, ``score``)."""

from __future__ import annotations

import streamlit as st

from headforms.analyses.behaviour import (
    BEHAVIOUR_COLUMNS,
    GEOMETRY_COLUMNS,
    behaviour_frame,
    table_correlation,
)
from headforms.figures import behaviour as figures
from ui import (
    cached,
    clickable_plot,
    guard,
    jump_toggle,
    links,
    page_context,
    select_from_customdata,
)
from ui.behaviour import head_scores
from ui.compute import derive
from ui.gateway import GeometryCorrelations, of_model

GEOMETRY_KEY = "hf_behaviour_geometry"
SCORE_KEY = "hf_behaviour_score"

ctx = page_context()
st.title("Geometry against behaviour")
st.caption(
    f"Every query head of {guard.plain(ctx.spec)} (RoPE position d = {ctx.rope_position}) as a "
    "point: where it sits on the simplex against what it does on a probe of random tokens "
    "repeated twice (its scores: the mean attention a query gives the token before it, the "
    "first token, the same token's earlier copy, or the token after that copy). Spearman's ρ "
    "with a 95% bootstrap interval over heads. Click a head to open it."
)
links.bind(
    links.choice(
        "geometry", GEOMETRY_KEY, list(GEOMETRY_COLUMNS), "c_minus_d", "a geometric column"
    )
)
links.bind(links.choice("score", SCORE_KEY, list(BEHAVIOUR_COLUMNS), "induction", "a score"))

scores = head_scores(ctx.spec)
if scores is None:
    links.stop_page()  # the reason is shown, in one line
controls = st.columns([2, 2, 1.3], vertical_alignment="bottom")
geometry = controls[0].selectbox(
    "Geometry (across)",
    list(GEOMETRY_COLUMNS),
    format_func=GEOMETRY_COLUMNS.__getitem__,
    key=GEOMETRY_KEY,
)
score = controls[1].selectbox(
    "Behaviour (up)",
    list(BEHAVIOUR_COLUMNS),
    format_func=BEHAVIOUR_COLUMNS.__getitem__,
    key=SCORE_KEY,
)
with controls[2]:
    jump_toggle()

meta = scores.meta
key = (ctx.model, scores.fingerprint, meta["probe_length"])
frame = cached("behaviour_frame", key, lambda: behaviour_frame(ctx.heads, scores.table))
source = (of_model(ctx.analysis), scores.fingerprint, meta["probe_length"], meta["seed"])
table = derive(GeometryCorrelations(source, frame, score))  # every geometric column's rho
found = table_correlation(table, geometry)
left, right = st.columns(2)
with left:
    clickable_plot(
        figures.geometry_behaviour_figure(frame, geometry, score, ctx.spec, found, ctx.selected),
        key="behaviour_scatter",
        on_click=select_from_customdata,
        caption=f"{BEHAVIOUR_COLUMNS[score]} of each head against its "
        f"{GEOMETRY_COLUMNS[geometry]}; marker and colour by parity.",
        data=frame,
        filename=f"{ctx.spec}_geometry_behaviour",
    )
with right:
    clickable_plot(
        figures.simplex_plane_figure(frame, score, ctx.spec, ctx.selected),
        key="behaviour_plane",
        on_click=select_from_customdata,
        caption="The simplex seen with symmetric bias c − d across and the antisymmetric share a "
        f"up (Θ in red), each head coloured by its {BEHAVIOUR_COLUMNS[score]}.",
        data=frame,
        filename=f"{ctx.spec}_simplex_behaviour",
    )

st.subheader(f"Every geometric column against the {BEHAVIOUR_COLUMNS[score]}")
st.dataframe(
    table,
    hide_index=True,
    column_config={
        "rho": st.column_config.NumberColumn("Spearman ρ", format="%+.3f"),
        "low": st.column_config.NumberColumn("95% interval, low", format="%+.3f"),
        "high": st.column_config.NumberColumn("95% interval, high", format="%+.3f"),
        "p_value": st.column_config.NumberColumn("p (scipy)", format="%.3g"),
        "heads": st.column_config.NumberColumn("heads", format="%d"),
        "column": None,  # the title says it
    },
)
st.caption(
    f"Probe: {meta['probe_length']} random ordinary tokens (seed {meta['seed']}) repeated twice, "
    f"{len(meta['probe_ids'])} tokens with the tokenizer's own special tokens; one forward pass "
    "(transformers, eager attention). Intervals: 2000 bootstrap resamples of the heads (seeded)."
)
