"""Heads table page: every head of the model in one sortable, filterable table.

Selecting a row selects that head (and opens the head page unless switched off); the selected
head's row is the table's selection, as it is ringed on the simplex and the heatmaps.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from headforms.columns import BASELINE_PREFIX, METRIC_COLUMNS
from headforms.forms import PARITY_LABELS, PARITY_TYPE_II_TEXT, ZERO_FORM_LABEL
from ui import guard, jump_toggle, page_context, select_head
from ui.loading import has_baseline, load_baseline
from ui.tables import range_filter, selected_row

TABLE_KEY = "heads_table"
INTEGER_COLUMNS = ("layer", "head", "kv_head", "n_pos", "n_neg", "n_zero")
COLUMN_HELP = {
    "a": "antisymmetric share ‖A‖²/‖L‖²",
    "b": "hyperbolic share: matched positive/negative eigenvalue pairs of S",
    "c": "excess positive eigenvalues of S (PSD share)",
    "d": "excess negative eigenvalues of S (NSD share)",
    "b_sym": "b of S alone (divided by ‖S‖²)",
    "c_sym": "c of S alone",
    "d_sym": "d of S alone",
    "energy": "symmetric energy ‖S‖²/‖L‖²",
    "pairing": "pairing score 1 − ‖λ₊ − λ₋‖/‖S‖",
    "parity": f"II if c_S + d_S ≤ {PARITY_TYPE_II_TEXT}, else I+ if c_S > d_S, else I−",
    "norm_l": "Frobenius norm of L",
    "balance": "1 − |n₊ − n₋|/(n₊ + n₋)",
    "leading_share": "λ²_max / ‖S‖²",
}

ctx = page_context()
st.title("Heads table")
st.caption(
    f"Every query head of {guard.plain(ctx.spec)} (RoPE position d = {ctx.rope_position}), one "
    "row each. "
    "Click a column header to sort; select a row (its box on the left) to open that head. "
    "The selected head's row is the one selected here."
)

controls = st.columns([2, 3, 3], vertical_alignment="bottom")
parities = [p for p in (*PARITY_LABELS, ZERO_FORM_LABEL) if (ctx.heads["parity"] == p).any()]
chosen_parities = controls[0].pills(
    "Parity", parities, selection_mode="multi", default=parities, key="table_parity"
)
last_layer = ctx.card.n_layers - 1
layers = controls[1].slider(
    "Layers",
    0,
    max(last_layer, 1),
    (0, max(last_layer, 1)),
    key=f"table_layers:{ctx.spec}",
    disabled=last_layer == 0,
)
toggles = st.container(horizontal=True, gap="large")
with toggles:
    with_baseline = has_baseline(ctx.analysis) and st.toggle(  # a published table may have none
        "Gaussian baseline columns",
        key="table_baseline",
        help=f"Add each metric of the Gaussian form of the same shapes as "
        f"`{BASELINE_PREFIX}<metric>`.",
    )
    jump_toggle()
if with_baseline:
    load_baseline(ctx.analysis)  # computed now if it never was (a progress line meanwhile)
table = ctx.analysis.table(baseline=with_baseline)
numeric = [
    c
    for c in table.columns
    if c not in ("layer", "head", "kv_head") and pd.api.types.is_numeric_dtype(table[c])
]
range_columns = controls[2].multiselect(
    "Range filters on",
    numeric,
    key="table_range_columns",
    placeholder="energy, pairing, a…",
    help="Each chosen column gets a range slider below.",
)

keep = table["parity"].isin(chosen_parities or parities) & table["layer"].between(*layers)
if range_columns:
    sliders = st.columns(min(len(range_columns), 4))
    for i, column in enumerate(range_columns):
        keep &= range_filter(
            sliders[i % len(sliders)],
            table,
            column,
            key=f"table_range:{ctx.spec}:{ctx.rope_position}:{column}",
        )
shown = table[keep].reset_index(drop=True)

here = np.flatnonzero((shown["layer"] == ctx.layer) & (shown["head"] == ctx.head))
st.session_state[TABLE_KEY] = {"selection": {"rows": [int(here[0])] if here.size else []}}


def picked() -> None:
    """Selecting a row selects its head (``shown`` is the frame the user saw)."""
    index = selected_row(st.session_state[TABLE_KEY]["selection"]["rows"], len(shown))
    if index is not None:
        row = shown.iloc[index]
        select_head(ctx.spec, int(row["layer"]), int(row["head"]), jump=True)


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
st.dataframe(
    shown,
    key=TABLE_KEY,
    on_select=picked,
    selection_mode="single-row",
    hide_index=True,
    column_config=config,
    height=min(38 + 35 * len(shown), 620),
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
