"""Why heads attend: every head's scores on the shipped text split by its form's parts, as a
layer x head heatmap of a realised share beside the weights', and the realised against the
weight shares on the triangle of the three (a line joining each head's two points). Options are
URL parameters (``share``, ``kind``)."""

from __future__ import annotations

import streamlit as st

from headforms.columns import REALISED_SHARE_COLUMNS, SHARE_TITLES, SPREAD_SHARE_COLUMNS
from headforms.figures import why as figures
from headforms.why.summary import parity_medians
from ui import PlotPayload, cached, clickable_plot, guard, jump_toggle, links, page_context
from ui import why as splits
from ui.state import select_from_customdata

SHARE_KEY = "hf_why_share"
KIND_KEY = "hf_why_kind"
SHARES = [*REALISED_SHARE_COLUMNS, *SPREAD_SHARE_COLUMNS]

ctx = page_context()
st.title("Why heads attend")
st.caption(
    f"Each head's pre-softmax scores on {splits.EVERY_HEAD_TEXT} split exactly into its form's "
    "positive lobe, negative lobe and antisymmetric part (at each pair's own RoPE distance) and "
    "the rest; a part's share is its mean square over the visible pairs (or its spread within "
    "each query's row) over the three parts'. The weights' shares are ‖part‖²/‖L‖² at d = 0: "
    "what random isotropic inputs would give. Click a head to open it. docs/why.md."
)
links.bind(links.choice("share", SHARE_KEY, SHARES, "share_anti", "a share"))
links.bind(links.choice("kind", KIND_KEY, list(figures.SHARE_KINDS), "share", "a kind of share"))
result = splits.every_head(ctx.spec, ctx.card.total_heads)
if result is None:
    links.stop_page()
table = result.table
options = st.columns([2.2, 1.6, 1.3], vertical_alignment="bottom")
column = options[0].selectbox(
    "Heatmap", SHARES, format_func=SHARE_TITLES.__getitem__, key=SHARE_KEY
)
kind = options[1].selectbox(
    "Triangle",
    list(figures.SHARE_KINDS),
    format_func=lambda k: f"shares of the {figures.SHARE_KINDS[k]}",
    key=KIND_KEY,
)
with options[2]:
    jump_toggle()
key = (ctx.spec, result.fingerprint, ctx.selected)
clickable_plot(
    cached(
        "why_heatmap",
        (*key, column),
        lambda: PlotPayload.of(figures.share_heatmap_figure(table, column, ctx.spec, ctx.selected)),
    ),
    key="why_heatmap",
    on_click=select_from_customdata,
    caption=f"{SHARE_TITLES[column]} per head (left) beside the weights' share of the same "
    "part (right); white at 1/2, red above, blue below; the selected head outlined.",
    data=table,
    filename=f"{ctx.spec}_why",
)
left, right = st.columns([1.15, 1])
with left:
    clickable_plot(
        cached(
            "why_triangle",
            (*key, kind),
            lambda: PlotPayload.of(
                figures.shares_triangle_figure(table, ctx.spec, kind, ctx.selected)
            ),
        ),
        key="why_triangle",
        on_click=select_from_customdata,
        caption="Each head on the text (its parity's marker) and in its weights (grey dot), a "
        "line joining the two: how far the text moves the head from the geometry its weights "
        "have. A vertex: that part carries everything.",
        data=table,
        filename=f"{ctx.spec}_why_triangle",
    )
with right:
    st.subheader("Medians by parity")
    medians = parity_medians(table)
    groups = [f"{p} ({n})" for p, n in zip(medians["parity"], medians["heads"], strict=True)]
    st.dataframe(
        medians.drop(columns=["parity", "heads"]).set_axis(groups).T,
        column_config={g: st.column_config.NumberColumn(g, format="%.3f") for g in groups},
    )
    st.caption("Median of each share over the heads of each parity type (their number).")
worst = float(table["split_error"].max())
st.caption(
    f"{len(table)} heads on {int(table['tokens'].iloc[0])} tokens. The parts add up to the "
    f"model's own scores to {worst:.1e} of the largest score. "
    + " ".join(guard.plain(n) for n in result.meta.get("notes", ()))
)
