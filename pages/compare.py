"""Compare page: several models side by side: profiles on one simplex, parity tables with the
paper's Table 2 rows, energy and pairing distributions, and average lobe-fit errors (Fig 6)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from headforms import BUNDLED_MODELS
from headforms.analyses import fits
from headforms.figures import paper as figures_paper
from headforms.figures import simplex as simplex_figures
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    model_label,
    page_context,
    select_from_customdata,
    show_figure,
    try_load,
)
from ui.tables import baseline_heads, expand_models

ctx = page_context()
st.title("Compare models")
others = [name for name in BUNDLED_MODELS if name != ctx.spec]
chosen = st.multiselect(
    "Models to compare with the current one",
    others,
    default=others[:1],
    key="compare_models",
    format_func=model_label,
    accept_new_options=True,
    placeholder="bundled name, hub id, local path or table file",
    help="Other models are analysed at RoPE position 0.",
)
analyses = {ctx.spec: ctx.analysis}
for spec in expand_models(chosen):
    if spec != ctx.spec:
        loaded = try_load(spec, 0)
        if loaded is not None:
            analyses[spec] = loaded
models = {name: analysis.heads for name, analysis in analyses.items()}
baselines = {n: b for n, a in analyses.items() if (b := baseline_heads(a)) is not None}
key = (tuple(models), ctx.rope_position)

simplex = cached(
    "compare_simplex",
    (*key, ctx.selected),
    lambda: PlotPayload.of(
        simplex_figures.simplex_figure(models, color_by="model", selected=ctx.selected)
    ),
)
clickable_plot(simplex, key="compare_simplex", on_click=select_from_customdata)
st.caption("Profiles of every compared model on one simplex, coloured by model; click a head.")

table = cached("compare_table", key, lambda: figures_paper.parity_comparison_table(models))
show_figure(
    cached("compare_parity", key, lambda: figures_paper.parity_comparison_figure(table)),
    "Table 2: percent of heads by parity; rows marked (paper) are the published values.",
)
st.dataframe(
    table.assign(heads=[str(v) if pd.notna(v) else "—" for v in table["heads"]]),
    hide_index=True,
    column_config={
        **{p: st.column_config.NumberColumn(p, format="%.1f") for p in ("I+", "II", "I-")},
        "heads": st.column_config.TextColumn("heads", help="not published for the paper's rows"),
    },
)

left, right = st.columns(2)
with left:
    show_figure(
        cached(
            "compare_pairing",
            key,
            lambda: figures_paper.distribution_figure(models, baselines=baselines),
        ),
        "Pairing score per model (dashed: medians; dotted: Gaussian baselines).",
    )
with right:
    show_figure(
        cached(
            "compare_energy",
            key,
            lambda: figures_paper.distribution_figure(
                models, "energy", "symmetric energy ‖S‖²/‖L‖²", baselines
            ),
        ),
        "Symmetric energy per model (dashed: medians; dotted: Gaussian baselines).",
    )

errors_by_model = {
    name: (
        len(analysis.heads),
        cached(
            "fits_errors",
            (name, 0 if name != ctx.spec else ctx.rope_position),
            lambda analysis=analysis: fits.mean_errors(
                fits.fit_table(analysis.heads, fits.fit_lobes(analysis.spectra))
            ),
        ),
    )
    for name, analysis in analyses.items()
    if analysis.spectra  # published tables have no spectra to fit
}
show_figure(
    cached("compare_fig6", key, lambda: figures_paper.fit_error_vs_size_figure(errors_by_model)),
    "Fig 6: average error of each fitted family over each model's heads, against its size.",
)
