"""Theorem 5 page (Fig 10): profiles of spectra sampled from two gamma lobes approach the limit
point b = 2r/(1 + r²), r = |mu|/nu, on the edge {d = 0}."""

from __future__ import annotations

import streamlit as st

from headforms import HeadformsError
from headforms.analyses import theorem5
from headforms.figures import paper as figures_paper
from ui import cached, show_figure

PAPER = theorem5.PAPER_PARAMETERS

st.title("Theorem 5: sampled gamma lobes")
st.caption(
    "Each spectrum has n positive eigenvalues ~ Gamma(k, scale ν) and n negative ones with "
    "absolute values ~ Gamma(k, scale |μ|), and A = 0. Sorted, the lobes become proportional "
    "(ratio r = |μ|/ν), so the profiles approach b = 2r/(1 + r²) as n grows."
)
cols = st.columns(5)
mu = cols[0].number_input("μ (negative lobe)", value=PAPER["mu"], max_value=-0.01, step=0.1)
nu = cols[1].number_input("ν (positive lobe)", value=PAPER["nu"], min_value=0.01, step=0.1)
k = cols[2].number_input("gamma shape k", value=PAPER["k"], min_value=0.1, step=0.5)
reps = cols[3].number_input("spectra per n", value=PAPER["repetitions"], min_value=1, step=10)
seed = cols[4].number_input("seed", value=theorem5.SEED, min_value=0, step=1)
sizes = st.multiselect(
    "eigenvalues per side n",
    [16, 64, 256, 1024, 4096],
    default=list(PAPER["sizes"]),
    accept_new_options=True,
)
key = (mu, nu, k, tuple(sorted(int(n) for n in sizes if str(n).isdigit())), int(reps), int(seed))
if not key[3]:
    st.info("Choose at least one n (a positive integer).", icon=":material/info:")
    st.stop()
try:
    samples = cached(
        "theorem5",
        key,
        lambda: theorem5.sample_profiles_for_sizes(mu, nu, k, key[3], key[4], key[5]),
    )
    limit = theorem5.limit_profile(mu, nu)
except HeadformsError as error:
    st.error(str(error), icon=":material/error:")
    st.stop()

show_figure(
    cached(
        "theorem5_fig",
        key,
        lambda: figures_paper.theorem5_figure(
            samples, limit, f"μ = {mu:g}, ν = {nu:g}, k = {k:g}, {key[4]} spectra per n"
        ),
    ),
    f"Fig 10: sampled profiles by b along the edge d = 0, limit × at b = {limit[1]:.3f}.",
)
st.dataframe(theorem5.convergence_table(samples), hide_index=True)
st.caption("Mean distance of the sampled profiles to the limit profile shrinks like 1/√n.")
