"""Overview page: the model card, the parity table and parity by layer, and downloads."""

from __future__ import annotations

import streamlit as st

from headforms.analyses.parity import paper_table2, parity_by_layer, parity_table
from headforms.figures import parity as figures
from headforms.forms import PARITY_TYPE_II_TEXT, PARITY_TYPE_II_THRESHOLD
from ui import cached, guard, model_label, page_context, show_figure
from ui.exports import heads_csv, spectra_npz
from ui.loading import DASHBOARD_SPECTRA, analysis_download
from ui.widgets import format_layers

ctx = page_context()
card = ctx.card
st.title("Model overview")
st.caption(guard.plain(model_label(ctx.spec)))

left, right = st.columns([2, 3])
with left:
    st.subheader("Model card")
    kv = f"{card.n_kv_heads}" + (" (GQA)" if card.n_kv_heads != card.n_heads else "")
    rows = {
        "architecture": f"{card.family} ({card.model_type})",
        "source": f"{card.source_kind}: {card.spec}",
        "model dim N": f"{card.model_dim}" if card.model_dim else "not in the table",
        "head dim n": f"{card.head_dim}",
        "layers": f"{card.n_layers}",
        "query heads per layer": f"{card.n_heads}",
        "key/value heads per layer": kv,
        "heads in total": f"{card.total_heads}",
        "positional encoding": card.positional,
        "RoPE position d": f"{card.rope_position}" if card.rotary else "—",
        "Q/K storage": card.storage,
        "QK-norm": "unknown"
        if card.qk_norm is None
        else ("folded" if card.qk_norm_folded else "present, not folded")
        if card.qk_norm
        else "none",
        "Q/K biases": "unknown"
        if card.has_qk_bias is None
        else "present (excluded from L)"
        if card.has_qk_bias
        else "none",
        "weight files": f"{card.weight_bytes / 2**20:.1f} MiB" if card.weight_bytes else "unknown",
        "parameters (all tensors)": f"{card.n_parameters:,}"
        if card.n_parameters is not None
        else "not known for this source",
    }
    for rope in card.rope:
        rows[f"RoPE (layers {format_layers(rope['layers'])})"] = (
            f"{rope['rope_type']}, θ = {rope['theta']:g}, rotary dims {rope['rotary_dims']}"
        )
    st.table({"property": list(rows), "value": list(rows.values())})
    if card.notes:
        st.info("\n".join(f"- {note}" for note in card.notes), icon=":material/info:")

with right:
    st.subheader("Parity of the heads")
    # this model's shares and the paper's Table 2, to one decimal alike
    PARITY_COLUMNS = {
        "I+": st.column_config.NumberColumn("Type I+ (%)", format="%.1f"),
        "II": st.column_config.NumberColumn("Type II (%)", format="%.1f"),
        "I-": st.column_config.NumberColumn("Type I− (%)", format="%.1f"),
        "heads": st.column_config.NumberColumn("heads"),
    }
    table = parity_table({card.name: ctx.heads}, ctx.tolerance)
    st.dataframe(
        table,
        width="stretch",
        hide_index=True,  # one model, named in the caption: its long name pushed "heads" off
        column_config=PARITY_COLUMNS,
    )
    st.caption(
        f"Percent of heads by parity (Table 2 style): Type II if c_S + d_S ≤ {ctx.tolerance:g} "
        f"(sidebar; the paper's {PARITY_TYPE_II_TEXT} = {PARITY_TYPE_II_THRESHOLD:g}), otherwise "
        "I+ if c_S > d_S, else I−."
    )
    with st.expander("The paper's Table 2, for comparison"):
        st.dataframe(paper_table2(), column_config=PARITY_COLUMNS)  # 34.0, never "34"
    show_figure(
        cached(
            "parity_by_layer",
            (ctx.model, ctx.tolerance),
            lambda: figures.parity_by_layer_figure(
                {card.name: parity_by_layer(ctx.heads, ctx.tolerance)}, ctx.tolerance
            ),
        ),
        f"Percent of each layer's heads of each parity type (the paper's Figure 12), Type II "
        f"tolerance {ctx.tolerance:g}.",
        data=lambda: parity_by_layer(ctx.heads, ctx.tolerance).reset_index(),
        filename=f"{ctx.spec}_parity_by_layer",
    )

st.subheader("Downloads")
stem = card.name.split(" ")[0].replace("/", "_") + (
    f"_d{ctx.rope_position}" if ctx.rope_position else ""
)
dl = st.columns(2)
dl[0].download_button(
    "Per-head table (CSV)",
    data=analysis_download(ctx.spec, ctx.rope_position, heads_csv),
    file_name=f"{stem}_heads.csv",
    mime="text/csv",
    icon=":material/table:",
    on_click="ignore",
)
dl[1].download_button(
    "Spectra (npz)",
    # every spectrum, the extra ones computed when clicked if they never were
    data=analysis_download(ctx.spec, ctx.rope_position, spectra_npz, DASHBOARD_SPECTRA),
    file_name=f"{stem}_spectra.npz",
    mime="application/octet-stream",
    icon=":material/download:",
    on_click="ignore",
    disabled=not ctx.analysis.spectra,  # a published table without its spectra file has none
)
st.caption(
    "The CSV has one row per query head (layer-major) with every metric and, as `rand_*`, the "
    "same metric of the Gaussian baseline; the npz holds the spectra (baseline: `rand_*`) "
    "aligned with those rows, plus layer and head."
)
