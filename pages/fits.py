"""Fits page (Fig 6): gamma, exponential, log-normal and Weibull fits of the spectral lobes of
the selected head, and the average error of each family over the model's heads."""

from __future__ import annotations

import streamlit as st

from headforms import HeadformsError
from headforms.analyses import fits
from headforms.figures import paper as figures_paper
from ui import cached, page_context, show_figure
from ui.tables import require_spectra

ctx = page_context()
require_spectra(ctx.analysis, "Fits")
st.title("Distribution fits of the spectral lobes")
st.caption(
    "Each lobe (λ₊, and |λ₋|) is rescaled to unit mean and fitted by maximum likelihood with "
    "location 0. Error: RMS difference between its 20-bin density histogram and the fitted "
    "density at the bin centres (lower is closer)."
)
model_key = (ctx.spec, ctx.rope_position)
lobe_fits = cached("fits", model_key, lambda: fits.fit_lobes(ctx.analysis.spectra))
errors = cached(
    "fits_errors", model_key, lambda: fits.mean_errors(fits.fit_table(ctx.heads, lobe_fits))
)

try:
    head_fig = cached(
        "fits_head",
        (*model_key, ctx.row),
        lambda: figures_paper.fit_head_figure(
            fits.head_histograms(lobe_fits, ctx.row),
            fits.head_fit_curves(lobe_fits, ctx.row),
            f"{ctx.spec}, {ctx.label}",
        ),
    )
    show_figure(head_fig, f"{ctx.label}: both lobes with every fitted family (legend: errors).")
except HeadformsError as error:
    st.info(str(error), icon=":material/info:")

show_figure(
    cached("fits_errors_fig", model_key, lambda: figures_paper.fit_errors_figure(errors, ctx.spec)),
    f"Average error of each family over the {len(ctx.heads)} heads of {ctx.spec}, per lobe.",
)
st.dataframe(errors.style.format("{:.4f}"))
