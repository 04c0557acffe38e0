"""Theorem 5 page (Fig 10): profiles of spectra sampled from two gamma lobes approach the limit
point b = 2r/(1 + r²), r = min(|mu|/nu, nu/|mu|), on the edge {d = 0} (|mu| <= nu) or {c = 0}.

It needs no model, but calls ``page_context()`` first like every page (ui/__init__.py): opened
directly on a fresh server it then runs inside app.py, with the sidebar and the navigation."""

from __future__ import annotations

import streamlit as st

from headforms import HeadformsError
from headforms.analyses import theorem5
from headforms.figures import theorem5 as figures
from ui import cached, guard, links, page_context, show_figure
from ui.compute import derive
from ui.gateway import Theorem5Samples

PAPER = theorem5.PAPER_PARAMETERS
LOBE_SCALE = 1e6  # largest |μ|, ν and k accepted
MAX_SIZES = 8  # values of n sampled at once

page_context()
st.title("Theorem 5: sampled gamma lobes")
st.caption(
    "Each spectrum has n positive eigenvalues ~ Gamma(k, scale ν) and n negative ones with "
    "absolute values ~ Gamma(k, scale |μ|), and A = 0. Sorted, the lobes become proportional "
    "(ratio r = |μ|/ν), so the profiles approach b = 2r/(1 + r²) as n grows."
)
# Every input is a URL parameter bound by Streamlit (its key), a link's value first read within
# the bounds the page accepts below.
MU, NU, K, SPECTRA, SEED, SIZES = (
    links.number("mu", "mu", -LOBE_SCALE, -0.01, PAPER["mu"], "a negative lobe scale", "μ ="),
    links.number("nu", "nu", 0.01, LOBE_SCALE, PAPER["nu"], "a positive lobe scale", "ν ="),
    links.number("k", "k", 0.1, LOBE_SCALE, PAPER["k"], "a gamma shape", "k ="),
    links.whole(
        "spectra",
        "spectra",
        1,
        theorem5.MAX_EIGENVALUES,
        PAPER["repetitions"],
        "a number of spectra per n",
        "spectra per n:",
    ),
    links.whole("seed", "seed", 0, 2**32 - 1, theorem5.SEED, "a seed", "seed"),
    links.wholes("n", "n", 1, theorem5.MAX_EIGENVALUES, MAX_SIZES, PAPER["sizes"], "values of n"),
)
links.check(MU, NU, K, SPECTRA, SEED, SIZES)
cols = st.columns(5)
mu = cols[0].number_input(
    "μ (negative lobe)",
    min_value=-LOBE_SCALE,
    max_value=-0.01,
    value=MU.default,
    step=0.1,
    key="mu",
    bind="query-params",
)
nu = cols[1].number_input(
    "ν (positive lobe)", min_value=0.01, value=NU.default, step=0.1, key="nu", bind="query-params"
)
k = cols[2].number_input(
    "gamma shape k", min_value=0.1, value=K.default, step=0.5, key="k", bind="query-params"
)
reps = cols[3].number_input(
    "spectra per n",
    min_value=1,
    value=SPECTRA.default,
    step=10,
    key="spectra",
    bind="query-params",
)
seed = cols[4].number_input(
    "seed", min_value=0, value=SEED.default, step=1, key="seed", bind="query-params"
)
sizes = st.multiselect(
    "eigenvalues per side n",
    sorted(
        {16, 64, 256, 1024, 4096, *st.session_state.get("n", SIZES.default)},
        key=lambda n: (not isinstance(n, int), n if isinstance(n, int) else 0, str(n)),
    ),
    default=SIZES.default,
    key="n",
    accept_new_options=True,
    bind="query-params",
)
checked = (
    guard.finite_number(mu, -LOBE_SCALE, -0.01),
    guard.finite_number(nu, 0.01, LOBE_SCALE),
    guard.finite_number(k, 0.1, LOBE_SCALE),
    guard.whole_number(reps, 1, theorem5.MAX_REPETITIONS),
    guard.whole_number(seed, 0, 2**32 - 1),
)
if None in checked:
    st.error(
        f"Accepted: μ from -{LOBE_SCALE:g} to -0.01, ν and k from 0.01 (k: 0.1) to "
        f"{LOBE_SCALE:g}, spectra per n from 1 to {theorem5.MAX_REPETITIONS}, a seed from 0 to "
        "2³² - 1.",
        icon=":material/error:",
    )
    links.stop_page()
mu, nu, k, reps, seed = checked
n_values = guard.whole_numbers(sizes, 1, theorem5.MAX_EIGENVALUES, MAX_SIZES, "values of n")
key = (mu, nu, k, tuple(sorted(n_values)), reps, seed)
if not key[3]:
    st.info("Choose at least one n (a positive integer).", icon=":material/info:")
    links.stop_page()
try:
    # checked when made, before the visitor's budget is spent; a new sampling takes the
    # visitor's turn and budget when hosted
    samples = derive(Theorem5Samples(*key))
    limit = theorem5.limit_profile(mu, nu)
except HeadformsError as error:
    st.error(str(error), icon=":material/error:")
    links.stop_page()

_, zero = theorem5.limit_edge(limit)
show_figure(
    cached(
        "theorem5_fig",
        key,
        lambda: figures.theorem5_figure(
            samples, limit, f"μ = {mu:g}, ν = {nu:g}, k = {k:g}, {key[4]} spectra per n"
        ),
    ),
    f"Fig 10: sampled profiles by b along the edge {zero} = 0, limit × at b = {limit[1]:.3f}.",
)
st.dataframe(theorem5.convergence_table(samples), hide_index=True)
st.caption("Mean distance of the sampled profiles to the limit profile shrinks like 1/√n.")
