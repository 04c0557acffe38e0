"""Fits page: gamma, exponential, log-normal and Weibull fits of the spectral lobes (Fig 6,
Observation 3) and of |eigenvalues of L| and the singular values of A (Observation 6), for the
selected head, pooled over the model, and as the model's average error per family."""

from __future__ import annotations

import streamlit as st

from headforms import HeadformsError
from headforms.analyses import fits
from headforms.analyses.observations import OBSERVATIONS
from headforms.figures import fits as figures
from ui import cached, guard, links, page_context, show_figure
from ui.compute import derive
from ui.gateway import Observation3Fits, Observation6Fits
from ui.loading import FITS_SPECTRA, load_analysis
from ui.tables import require_spectra

ctx = page_context()
require_spectra(ctx.analysis, "Fits")
st.title("Distribution fits of the spectral lobes")
st.caption(
    "Each sample (a head's λ₊, |λ₋|, |eigenvalues of L| or singular values of A) is rescaled to "
    "unit mean and fitted by maximum likelihood with location 0. Error: RMS difference between "
    "its 20-bin density histogram and the fitted density at the bin centres (lower is closer)."
)
model_key = ctx.model
lobes = derive(Observation3Fits(ctx.analysis))
lobe_fits, errors = lobes.fits, lobes.errors

st.subheader("Spectral lobes λ₊ and λ₋ (Observation 3, Figure 6)")
st.caption(f"Observation 3: {OBSERVATIONS[3].statement}. **{OBSERVATIONS[3].label}**")
try:
    head_fig = cached(
        "fits_head",
        (*model_key, ctx.row),
        lambda: figures.fit_head_figure(
            fits.head_histograms(lobe_fits, ctx.row),
            fits.head_fit_curves(lobe_fits, ctx.row),
            f"{ctx.spec}, {ctx.label}",
        ),
    )
    show_figure(head_fig, f"{ctx.label}: both lobes with every fitted family (legend: errors).")
except HeadformsError as error:
    st.info(str(error), icon=":material/info:")

show_figure(
    cached(
        "fits_errors_fig",
        model_key,
        lambda: figures.fit_errors_figure(errors, ctx.spec, "spectral lobes"),
    ),
    f"Average error of each family over the {len(ctx.heads)} heads of {guard.plain(ctx.spec)}, "
    "per lobe "
    "and over both.",
)
st.dataframe(errors.style.format("{:.4f}"))

st.subheader("|Eigenvalues of L| and singular values of A (Observation 6)")
st.caption(f"Observation 6: {OBSERVATIONS[6].statement}. **{OBSERVATIONS[6].label}**")
try:
    full = load_analysis(ctx.spec, ctx.rope_position, spectra=FITS_SPECTRA)  # + sv_a, |eig L|
    observation6 = derive(Observation6Fits(full))
except HeadformsError as error:
    st.info(str(error), icon=":material/info:")
    links.stop_page()
obs6, obs6_errors = observation6.fitted.fits, observation6.fitted.errors
pooled = observation6.pooled
if len(obs6) < len(fits.OBSERVATION6):
    st.info(
        "The moduli of the eigenvalues of L are not in the author's published spectra (they "
        "follow from neither the spectra of S and A nor the singular values of L): only σ(A) is "
        "fitted here.",
        icon=":material/info:",
    )
try:
    show_figure(
        cached(
            "fits_obs6_head",
            (*model_key, ctx.row),
            lambda: figures.sample_fits_figure(
                fits.head_histograms(obs6, ctx.row),
                fits.head_fit_curves(obs6, ctx.row),
                f"Fitted families, {ctx.spec}, {ctx.label}",
            ),
        ),
        f"{ctx.label}: its n moduli of the eigenvalues of L = KᵀQ and its n distinct singular "
        "values of A (each appears twice), each rescaled to unit mean, with every fitted family.",
    )
except HeadformsError as error:
    st.info(str(error), icon=":material/info:")
show_figure(
    cached(
        "fits_obs6_pooled_fig",
        model_key,
        lambda: figures.sample_fits_figure(
            fits.head_histograms(pooled, 0),
            fits.head_fit_curves(pooled, 0),
            f"Pooled over the {len(ctx.heads)} heads, {ctx.spec}",
        ),
    ),
    "The same samples of every head, each rescaled to unit mean, pooled into one distribution "
    "per kind, with every family fitted to the pool.",
)
show_figure(
    cached(
        "fits_obs6_errors_fig",
        model_key,
        lambda: figures.fit_errors_figure(obs6_errors, ctx.spec, "|λ(L)| and σ(A)"),
    ),
    "Average error of each family over the heads, per kind of sample (Observation 6: "
    "gamma-like profiles).",
)
st.dataframe(obs6_errors.style.format("{:.4f}"))
