"""Heads table page: every head of the model in one sortable, filterable table.

Selecting a row selects that head (and opens the head page unless switched off); the selected
head's row is the table's selection, as it is ringed on the simplex and the heatmaps. Filters
and the sort are URL parameters (``parity``, ``layers``, ``range``, ``sort``, ``baseline``,
``scores``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from headforms.columns import BASELINE_PREFIX, COLUMN_DESCRIPTIONS, METRIC_COLUMNS
from headforms.forms import PARITY_LABELS, PARITY_TYPE_II_TEXT, ZERO_FORM_LABEL
from ui import guard, jump_toggle, links, page_context, select_head, state
from ui.behaviour import with_head_scores
from ui.loading import load_baseline
from ui.tables import RangeFilters, SortOrder, range_filter, selected_row

TABLE_KEY = "heads_table"
TABLE_HEIGHT = 620  # the table's height (px) at most: Streamlit's grid, a 38 px header, 35 px rows
PARITY_KEY = "parity"  # bound by Streamlit: the parameter's name
BASELINE_KEY = "table_baseline"
BEHAVIOUR_KEY = "table_behaviour"
RANGE_COLUMNS_KEY = "table_range_columns"
SORT_KEY = "table_sort"
DESCENDING_KEY = "table_sort_descending"
INTEGER_COLUMNS = ("layer", "head", "kv_head", "n_pos", "n_neg", "n_zero")
COLUMN_HELP = {
    **COLUMN_DESCRIPTIONS,
    "parity": COLUMN_DESCRIPTIONS["parity"] + f" (the paper's {PARITY_TYPE_II_TEXT})",
}

ctx = page_context()
st.title("Heads table")
st.caption(
    f"Every query head of {guard.plain(ctx.spec)} (RoPE position d = {ctx.rope_position}), one "
    "row each. Select a row (its box on the left) to open that head; the selected head's row is "
    "the one selected here. Sort with Sort by (a link keeps it) or by clicking a column header "
    "(this view only)."
)

controls = st.columns([2, 3, 3, 2], vertical_alignment="bottom")
parities = [p for p in (*PARITY_LABELS, ZERO_FORM_LABEL) if (ctx.heads["parity"] == p).any()]
links.check(links.subset("parity", PARITY_KEY, parities, parities, "a parity"))
earlier = st.session_state.get(PARITY_KEY, parities)
if any(p not in parities for p in earlier):  # a parity of the last model
    st.session_state[PARITY_KEY] = [p for p in earlier if p in parities]
chosen_parities = controls[0].pills(
    "Parity",
    parities,
    selection_mode="multi",
    default=parities,
    key=PARITY_KEY,
    bind="query-params",
)
last_layer = max(ctx.card.n_layers - 1, 1)  # a one-layer model: a (disabled) slider 0-1
layers_key = f"table_layers:{ctx.spec}"
links.bind(links.whole_range("layers", layers_key, 0, last_layer, (0, last_layer), "layers"))
layers = controls[1].slider(
    "Layers", 0, last_layer, key=layers_key, disabled=ctx.card.n_layers == 1
)
toggles = st.container(horizontal=True, gap="large")
baseline_possible = ctx.card.has_baseline  # a published table may have none (nothing computed)
if baseline_possible:
    links.bind(links.flag("baseline", BASELINE_KEY, False, "Gaussian baseline columns"))
with_baseline = baseline_possible and toggles.toggle(
    "Gaussian baseline columns",
    key=BASELINE_KEY,
    help=f"Add each metric of the Gaussian form of the same shapes as `{BASELINE_PREFIX}<metric>`.",
)
links.bind(links.flag("scores", BEHAVIOUR_KEY, False, "head-type score columns"))
with_behaviour = toggles.toggle(
    "Head-type scores",
    key=BEHAVIOUR_KEY,
    help="Add previous_token, first_token, duplicate_token and induction: each head's scores on "
    "a probe of random tokens repeated twice (runs the model once): the mean attention a query "
    "gives the token before it, the first token, the same token's earlier copy, or the token "
    "after that copy.",
)
baseline = load_baseline(ctx.analysis) if with_baseline else None  # a progress line meanwhile
table = ctx.analysis.table(baseline)
if with_behaviour:
    table = with_head_scores(table, ctx.spec)
numeric = [
    c
    for c in table.columns
    if c not in ("layer", "head", "kv_head") and pd.api.types.is_numeric_dtype(table[c])
]


def slider_key(column: str) -> str:
    """The range slider of ``column`` (per model and RoPE position: its bounds are theirs)."""
    return f"table_range:{ctx.spec}:{ctx.rope_position}:{column}"


links.bind(RangeFilters("range", RANGE_COLUMNS_KEY, slider_key, table, numeric))
st.session_state[RANGE_COLUMNS_KEY] = [
    c
    for c in st.session_state[RANGE_COLUMNS_KEY]
    if c in numeric  # rand_*: baseline shown
]
range_columns = controls[2].multiselect(
    "Range filters on",
    numeric,
    key=RANGE_COLUMNS_KEY,
    placeholder="energy, pairing, a…",
    help="Each chosen column gets a range slider below.",
)
sortable = [c for c in table.columns if c != "kv_head"]
links.bind(SortOrder("sort", SORT_KEY, DESCENDING_KEY, sortable))
sort_by = controls[3].selectbox(
    "Sort by",
    ["", *sortable],
    key=SORT_KEY,
    format_func=lambda c: c or "layer, head",
    help="The order of the rows (a shared link keeps it); clicking a column header sorts this "
    "view only.",
)
descending = toggles.toggle("Decreasing", key=DESCENDING_KEY, disabled=not sort_by)
with toggles:
    jump_toggle()

keep = table["parity"].isin(chosen_parities or parities) & table["layer"].between(*layers)
if range_columns:
    sliders = st.columns(min(len(range_columns), 4))
    for i, column in enumerate(range_columns):
        keep &= range_filter(sliders[i % len(sliders)], table, column, key=slider_key(column))
shown = table[keep]
if sort_by:
    shown = shown.sort_values(sort_by, ascending=not descending, kind="stable")
shown = shown.reset_index(drop=True)

here = np.flatnonzero((shown["layer"] == ctx.layer) & (shown["head"] == ctx.head))
st.session_state[TABLE_KEY] = {"selection": {"rows": [int(here[0])] if here.size else []}}


def rows_in_view(height: int) -> int:
    """How many rows a table of ``height`` pixels shows before it scrolls (Streamlit's grid
    cannot be scrolled to a row from Python: a row past them is also shown above the table)."""
    return (height - 38) // 35


def picked() -> None:
    """Selecting a row selects its head (``shown`` is the frame the user saw). The table sends
    its selection again when its rows change (a filter, the sort): a row of the head already
    selected is not a pick, and opens nothing."""
    index = selected_row(st.session_state[TABLE_KEY]["selection"]["rows"], len(shown))
    if index is None:
        return
    layer, head = int(shown["layer"].iloc[index]), int(shown["head"].iloc[index])
    if (layer, head) == (st.session_state[state.LAYER_KEY], st.session_state[state.HEAD_KEY]):
        return
    select_head(ctx.spec, layer, head, jump=True)


config = {
    column: st.column_config.NumberColumn(
        column,
        format="%d" if column in INTEGER_COLUMNS else "%.4f",
        help=COLUMN_HELP.get(column.removeprefix(BASELINE_PREFIX)),
    )
    for column in shown.columns
    if column in INTEGER_COLUMNS or column in numeric
}
config["parity"] = st.column_config.TextColumn("parity", help=COLUMN_HELP["parity"])
height = min(38 + 35 * len(shown), TABLE_HEIGHT)
if here.size and here[0] >= rows_in_view(height):  # below the table's first screen
    st.caption(
        f"The selected head, {ctx.label}, is row {here[0] + 1} of {len(shown)} (below: scroll "
        "the table, or sort to bring it up):"
    )
    st.dataframe(shown.iloc[here], hide_index=True, column_config=config)
st.dataframe(
    shown,
    key=TABLE_KEY,
    on_select=picked,
    selection_mode="single-row",
    hide_index=True,
    column_config=config,
    height=height,
)
missing = "" if here.size else f" The selected head, {ctx.label}, is filtered out."
st.caption(
    f"{len(shown)} of {len(table)} heads shown.{missing} Columns: "
    + ", ".join(c for c in table.columns if c in (*METRIC_COLUMNS, "q_bias_norm", "k_bias_norm"))
    + " (definitions: hover a column header)."
)
st.download_button(
    "Rows shown (CSV)",
    data=lambda: shown.to_csv(index=False),
    file_name=f"{ctx.spec.replace('/', '_')}_heads_filtered.csv",
    mime="text/csv",
    icon=":material/download:",
    on_click="ignore",
)
