"""Pairing page (Fig 11): distribution of the heads' pairing scores per model, with medians and
the Gaussian baseline; the symmetric energy alongside."""

from __future__ import annotations

import streamlit as st

from headforms.figures import distributions
from ui import cached, links, other_models, page_context, show_figure
from ui.loading import baselines_of, load_models, models_key

MODELS_KEY = "pairing_models"

ctx = page_context()
st.title("Pairing scores per model")
st.caption(
    "Pairing score 𝒫 = 1 − ‖λ₊ − λ₋‖/‖S‖: 1 when the spectrum of S is symmetric about 0. "
    "Dashed lines mark model medians; dotted lines the medians of Gaussian K, Q of the same "
    "shapes (the baseline, far more concentrated: click its entry in the legend for its "
    "histogram)."
)
links.bind(links.specs("models", MODELS_KEY, label="other"))
extra = other_models(st, "Other models", MODELS_KEY, ctx.spec)
analyses = load_models(ctx.spec, ctx.analysis, extra)
models = {name: analysis.heads for name, analysis in analyses.items()}
baselines = baselines_of(analyses)
key = (models_key(analyses), ctx.rope_position)
show_figure(
    cached(
        "pairing_fig",
        key,
        lambda: distributions.distribution_figure(models, "pairing", baselines=baselines),
    ),
    "Fig 11: distribution of the heads' pairing scores per model.",
)
show_figure(
    cached(
        "energy_fig",
        key,
        lambda: distributions.distribution_figure(
            models, "energy", "symmetric energy ‖S‖²/‖L‖²", baselines
        ),
    ),
    "Symmetric energy per model; the Gaussian baseline concentrates near (N + 1)/(2N).",
)
