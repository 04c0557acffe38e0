"""Observations page: the paper's observations checked on the loaded models: balanced symmetric
parts (Observation 1, Theorem 3), accumulation near Theta against the Gaussian baseline
(Observation 2), the symmetric bias (Observation 4) and proportional lobes with their
consequences (Observation 5), each with its status in the paper (Table 14; Observations 3 and 6
are on the Fits page)."""

from __future__ import annotations

import streamlit as st

from headforms.analyses.observations import OBSERVATIONS
from headforms.figures import distributions
from headforms.figures import observations as figures_obs
from headforms.forms import MAX_LOBE_DEPARTURE
from ui import (
    PlotPayload,
    cached,
    clickable_plot,
    jump_toggle,
    links,
    other_models,
    page_context,
    select_from_customdata,
    show_figure,
)
from ui.compute import derive
from ui.gateway import ObservationSummaries
from ui.loading import baselines_of, load_models, models_key

MODELS_KEY = "observations_models"

ctx = page_context()
st.title("Observations")
st.caption(
    "The paper's observations measured on the loaded models, each beside independent Gaussian "
    "K, Q of the same n and N (the baseline). Click a head in a scatter to select it."
)
controls = st.columns([3, 1], vertical_alignment="bottom")
links.bind(links.specs("models", MODELS_KEY, label="other"))
extra = other_models(
    controls[0],
    "Other models",
    MODELS_KEY,
    ctx.spec,
    help="Other models are analysed at RoPE position 0; a published per-head table adds all its "
    "models (quantities it does not hold are left out).",
)
with controls[1]:
    jump_toggle()
analyses = load_models(ctx.spec, ctx.analysis, extra)  # a table file: all its models
models = {name: analysis.heads for name, analysis in analyses.items()}
baselines = baselines_of(analyses)
key = (models_key(analyses), ctx.rope_position)
summaries = derive(ObservationSummaries(analyses, baselines))


def observation(number: int, title: str) -> None:
    """The observation's heading with its status in the paper (Table 14) beside it."""
    st.subheader(f"Observation {number}: {title}")
    st.caption(f"**{OBSERVATIONS[number].label}**")


with st.expander("The paper's observations and their status (Table 14)"):
    st.table(
        {
            "observation": [f"{o.number}: {o.statement}" for o in OBSERVATIONS.values()],
            "status": [o.status for o in OBSERVATIONS.values()],
            "explained by": [o.explanation or "—" for o in OBSERVATIONS.values()],
        }
    )

observation(1, "the symmetric part is balanced (Theorem 3)")
st.dataframe(
    summaries.theorem3,
    column_config={
        "balanced": st.column_config.NumberColumn("n₊ = n₋ (% of heads)", format="%.1f"),
        "generic": st.column_config.NumberColumn("n₊ = n₋ = n (% of heads)", format="%.1f"),
    },
)
st.caption(
    "Theorem 3: for generic K, Q (2n ≤ N) S has exactly n positive and n negative eigenvalues. "
    "Heads with fewer are degenerate (e.g. a QK-norm gain that is exactly zero)."
)

observation(2, "heads accumulate near Θ, spread along its branches")
scatter = cached(
    "obs_theta_scatter",
    key,
    lambda: PlotPayload.of(figures_obs.theta_scatter_figure(models, baselines)),
)
clickable_plot(scatter, key="obs_theta_scatter", on_click=select_from_customdata)
st.caption(
    "Each head projected on the nearer branch of Θ = {a = b, cd = 0}: x is the position of that "
    "point (c − d: +1 vertex c, 0 midpoint a = b = ½, −1 vertex d), y its Euclidean distance in "
    "barycentric coordinates (log). Grey ×: Gaussian heads, which sit at the midpoint."
)
show_figure(
    cached(
        "obs_theta_distribution",
        key,
        lambda: figures_obs.theta_distribution_figure(models, baselines),
    ),
    "Densities of the position along Θ and of the distance to it, trained heads solid, Gaussian "
    "baseline dotted: both sit near Θ, only trained heads spread along its branches.",
)
st.dataframe(
    summaries.theta,
    hide_index=True,
    column_config={
        c: st.column_config.NumberColumn(format="%.4f")
        for c in ("median distance", "median |position|", "IQR |position|")
    }
    | {"c-branch side (%)": st.column_config.NumberColumn(format="%.1f")},
)
st.caption("Per model: median distance to Θ, spread of |position| along it, share on the c side.")

observation(4, "symmetric bias: trained heads are more symmetric than random ones")
show_figure(
    cached(
        "obs_bias",
        key,
        lambda: distributions.distribution_figure(
            models,
            "energy",
            "symmetric energy ‖S‖²/‖L‖²",
            baselines,
            references=((0.5, "½: ‖S‖² = ‖A‖²"),),
        ),
    ),
    "Symmetric energy ‖S‖²/‖L‖² per model against independent Gaussian K, Q of the same shapes, "
    "whose energy concentrates at (N + 1)/(2N), just above ½ (dotted: their medians). Heads to "
    "the right of ½ put more of ‖L‖² in the symmetric part than in the antisymmetric one.",
)
st.dataframe(
    summaries.bias,
    hide_index=True,
    column_config={
        c: st.column_config.NumberColumn(format="%.3f")
        for c in ("median energy", "baseline median energy")
    }
    | {
        c: st.column_config.NumberColumn(format="%.1f")
        for c in ("above 1/2 (%)", "above baseline median (%)")
    },
)
st.caption(
    "Per model: median symmetric energy of the trained heads and of their baseline, and "
    "the share of trained heads above ½ and above the baseline's median."
)

observation(5, "the sorted spectral lobes are approximately proportional")
show_figure(
    cached(
        "obs_departure",
        key,
        lambda: distributions.distribution_figure(
            models,
            "lobe_departure",
            "lobe departure ‖λ₋ − ρλ₊‖/‖λ₋‖",
            baselines,
            value_range=(0.0, MAX_LOBE_DEPARTURE),
        ),
    ),
    "Lobe departure per model, with ρ = ‖λ₋‖/‖λ₊‖: 0 when the sorted lobes are proportional, "
    "λ₋ = ρλ₊, and below √2 (non-negative lobes) (dashed: medians; dotted: Gaussian baseline "
    "medians, their histograms in the legend).",
)
left, right = st.columns(2)
with left:
    bound = cached(
        "obs_bound",
        key,
        lambda: PlotPayload.of(
            figures_obs.against_figure(
                models,
                "pairing_bound",
                "pairing",
                "pairing bound 1 − |1 − ρ|/√(1 + ρ²)",
                "pairing score 𝒫 = 1 − ‖λ₊ − λ₋‖/‖S‖",
                "Pairing score against its bound",
                baselines,
            )
        ),
    )
    clickable_plot(bound, key="obs_bound", on_click=select_from_customdata)
    st.caption(
        "Every head lies on or below the diagonal (reverse triangle inequality); it is on it "
        "exactly when its lobes are proportional. The gap is the column pairing_gap."
    )
with right:
    prediction = cached(
        "obs_theorem5",
        key,
        lambda: PlotPayload.of(
            figures_obs.against_figure(
                models,
                "theorem5_b",
                "b_sym",
                "Theorem 5 point b = 2r/(1 + r²), r = min(ρ, 1/ρ)",
                "the head's b_S (symmetric profile)",
                "b_S against the Theorem 5 point",
                baselines,
            )
        ),
    )
    clickable_plot(prediction, key="obs_theorem5", on_click=select_from_customdata)
    st.caption(
        "Proportional lobes with ratio ρ would put S at b_S = 2r/(1 + r²) (and c_S or d_S = "
        "(1 − r)²/(1 + r²)); heads on the diagonal match that prediction."
    )
obs5 = summaries.observation5
st.dataframe(
    obs5,
    hide_index=True,
    column_config={
        c: st.column_config.NumberColumn(format="%.3f") for c in obs5.columns if "median" in c
    }
    | {"within 0.1 (%)": st.column_config.NumberColumn(format="%.1f")},
)
st.caption(
    "Per model: medians of ρ, of the lobe departure, of the gap between the pairing bound and "
    "the pairing score, and of the distance from the symmetric profile to its Theorem 5 point; "
    "share of heads within 0.1 of that point."
)
