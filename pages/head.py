"""Head page: the selected head's spectra and scores, each beside its Gaussian baseline."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from headforms import HeadformsError
from headforms.analyses import motion
from headforms.figures import curves as curve_figures
from headforms.figures import head as figures
from ui import (
    PlotPayload,
    cached,
    guard,
    metric_vs_baseline,
    model_label,
    page_context,
    show_figure,
    step_head,
)
from ui.behaviour import head_section, prefetch
from ui.compute import ahead, derive
from ui.gateway import ParityChanges
from ui.interventions import edit_head_section
from ui.loading import HEAD_SPECTRA, load_analysis, load_baseline
from ui.model_view import every_head_section
from ui.motion import chosen_positions, load_sweep, sweep_at_hand, sweep_request
from ui.state import stepped
from ui.tables import require_spectra
from ui.why import why_section
from ui.widgets import number

SWEEP_ASKED_KEY = "_hf_head_sweep_asked"

ctx = page_context()
require_spectra(ctx.analysis, "Head")
prefetch(ctx.spec)  # the model for "What this head does" loads while the spectra are drawn
card, row = ctx.card, ctx.head_row
spectra = load_analysis(ctx.spec, ctx.rope_position, spectra=HEAD_SPECTRA).spectra  # + sv_a
baseline = load_baseline(ctx.analysis)
if baseline is None:  # a published table without N: the head alone (load_baseline said why)
    base_spectra = {name: [None] * len(ctx.heads) for name in spectra}
else:
    base_spectra = baseline.spectra


def baseline_row(i: int) -> pd.Series:
    """The baseline's row ``i`` (a published table without N: dashes and NaN)."""
    if baseline is None:
        return pd.Series({c: "—" if c == "parity" else np.nan for c in ctx.heads.columns})
    return baseline.heads.iloc[i]


def head_figures(layer: int, head: int) -> dict[str, tuple[tuple, Callable[[], PlotPayload]]]:
    """The four spectra figures of a head: ``kind -> (key, build)`` as ``cached`` takes them
    (the page draws the selected head's; the next and previous heads' are built ahead)."""
    i, key = ctx.analysis.row(layer, head), (ctx.model, layer, head)
    row, base = ctx.heads.iloc[i], baseline_row(i)

    def payload(build: Callable[[], go.Figure]) -> Callable[[], PlotPayload]:
        return lambda: PlotPayload.of(build())

    builds = {
        "eig_hist": lambda: figures.eigenvalue_histogram(
            spectra["eig_s"][i], base_spectra["eig_s"][i], title="Eigenvalues of S"
        ),
        "singular_values": lambda: figures.singular_values_figure(
            spectra["sv_a"][i], base_spectra["sv_a"][i]
        ),
        "lobes": lambda: figures.lobes_figure(
            spectra["lobe_pos"][i],
            spectra["lobe_neg"][i],
            base_spectra["lobe_pos"][i],
            base_spectra["lobe_neg"][i],
        ),
        "profile": lambda: figures.profile_bar_figure(row, base),
    }
    return {kind: (key, payload(build)) for kind, build in builds.items()}


base_row = baseline_row(ctx.row)
nav = st.columns([5, 1.5, 1.2], vertical_alignment="bottom")  # "Previous" whole at 1280 px
nav[0].title(ctx.label)
nav[1].button(
    "Previous",
    icon=":material/arrow_back:",
    on_click=step_head,
    args=(-1, card.n_layers, card.n_heads),
    width="stretch",
)
nav[2].button(
    "Next",
    icon=":material/arrow_forward:",
    on_click=step_head,
    args=(1, card.n_layers, card.n_heads),
    width="stretch",
)
st.caption(
    f"{guard.plain(model_label(ctx.spec))} · query head {ctx.head} of layer {ctx.layer}, key head "
    f"{int(row['kv_head'])} · RoPE position d = {ctx.rope_position} · every value is shown "
    "with the same statistic of a Gaussian form of the same n and N (the baseline)."
)

BASELINE_HELP = "Delta: difference to an independent Gaussian K, Q of the same shapes."
METRICS = (
    ("a (antisymmetric)", "a"),
    ("b (hyperbolic)", "b"),
    ("c (PSD)", "c"),
    ("d (NSD)", "d"),
    ("Symmetric energy", "energy"),
    ("Pairing score", "pairing"),
    ("Parity", "parity"),
)
# Two rows of four: seven metrics in one row truncate their labels and deltas at 1280 px.
for start in range(0, len(METRICS), 4):
    for col, (label, name) in zip(st.columns(4), METRICS[start : start + 4], strict=False):
        with col:
            metric_vs_baseline(label, row[name], base_row[name], help=BASELINE_HELP)

shown = head_figures(ctx.layer, ctx.head)


def show(kind: str, caption: str) -> None:
    key, build = shown[kind]
    show_figure(cached(kind, key, build), caption)


left, right = st.columns(2)
with left:
    show(
        "eig_hist",
        "Histogram of the non-zero eigenvalues of the symmetric part S, scaled by ‖S‖: "
        "positive lobe λ₊ red, negative lobe λ₋ blue, Gaussian baseline as a grey outline.",
    )
    show(
        "singular_values",
        "Singular values of the antisymmetric part A by rank (unit length), head vs baseline.",
    )
with right:
    show(
        "lobes",
        "The i-th largest positive eigenvalue λ₊ᵢ against the i-th largest |negative| one "
        "λ₋ᵢ; on the diagonal the lobes pair exactly (S hyperbolic, b_S = 1).",
    )
    show(
        "profile",
        "Profile (a, b, c, d) of L and symmetric profile (b_S, c_S, d_S) of S, head vs "
        "Gaussian baseline; each profile sums to 1.",
    )
ahead(  # "Next" and "Previous" find their figures built
    (kind, key, build)
    for step in (1, -1)
    for kind, (key, build) in head_figures(
        *stepped(ctx.layer, ctx.head, step, card.n_layers, card.n_heads)
    ).items()
)

st.subheader("Spectral statistics")
model_dim = card.model_dim or "unknown"  # a published table without N
stats = {
    f"positive / negative / zero eigenvalues of S (of N = {model_dim})": (
        " / ".join(number(row[c], 0) for c in ("n_pos", "n_neg", "n_zero"))
    ),
    "‖L‖ (Frobenius)": f"{row['norm_l']:.4g}",
    "balance 1 − |n₊ − n₋| / (n₊ + n₋)": number(row["balance"]),
    "|tr L| / ‖L‖ (trace ratio)": number(row["trace_ratio"]),
    "singular values h of L: participation ratio, stable rank, leading share": (
        f"{number(row['participation_ratio'], 2)}, {number(row['stable_rank'], 2)}, "
        f"{number(row['leading_share'])}"
    ),
    "eigenvalues λ of S: participation ratio, stable rank, leading share": (
        f"{number(row['participation_ratio_s'], 2)}, {number(row['stable_rank_s'], 2)}, "
        f"{number(row['leading_share_s'])}"
    ),
    "lobe ratio ρ = ‖λ₋‖ / ‖λ₊‖": f"{number(row['rho'])} (baseline {number(base_row['rho'])})",
    "lobe departure ‖λ₋ − ρλ₊‖ / ‖λ₋‖": (
        f"{number(row['lobe_departure'])} (baseline {number(base_row['lobe_departure'])})"
    ),
    "pairing bound 1 − |1 − ρ| / √(1 + ρ²), its gap to 𝒫": (
        f"{number(row['pairing_bound'])}, gap {number(row['pairing_gap'])}"
    ),
    "Theorem 5 point (b_S, c_S, d_S) from ρ, vs the head's": (
        f"({', '.join(number(row[c]) for c in ('theorem5_b', 'theorem5_c', 'theorem5_d'))}) vs "
        f"({', '.join(number(row[c]) for c in ('b_sym', 'c_sym', 'd_sym'))})"
    ),
}
if card.has_qk_bias:
    stats["‖q bias‖ / ‖k bias‖ (excluded from L)"] = (
        f"{row['q_bias_norm']:.3g} / {row['k_bias_norm']:.3g}"
    )
st.table({"statistic": list(stats), "value": list(stats.values())})
st.caption(
    f"Per-head statistics of the spectrum of S. S is N × N of rank at most 2n = "
    f"{2 * card.head_dim}, so at least N − 2n"
    + (f" = {card.model_dim - 2 * card.head_dim}" if card.model_dim else "")
    + " of its eigenvalues are zero (Theorem 3: n positive and n negative for a generic head). "
    "Observation 5: ρ compares the lobes' norms; the departure is 0 when the sorted lobes are "
    "proportional, and then the pairing score reaches its bound and S's profile the Theorem 5 "
    "point."
)

if card.rotary:
    st.subheader("Across RoPE positions")
    options = chosen_positions()
    first, last = options.positions[0], options.positions[-1]
    sweep = sweep_at_hand(ctx.spec, options, card.total_heads)
    slot = st.empty()
    if sweep is None:
        slot.button(
            f"Compute every position d = {first}…{last}",
            icon=":material/animation:",
            on_click=st.session_state.__setitem__,
            args=(SWEEP_ASKED_KEY, True),
            help="One pass over the model's layers computes every head at every position (the "
            "RoPE positions page shows them all, with a slider).",
        )
    if sweep is None and st.session_state.pop(SWEEP_ASKED_KEY, False):
        try:
            sweep = load_sweep(ctx.spec, options, card.total_heads)
            slot.empty()
        except HeadformsError as error:
            st.error(guard.public_message(str(error)), icon=":material/error:")
    if sweep is None:
        st.caption(
            f"This head's profile and parity at every relative position d = {first}…{last} "
            "(one computation for every head)."
        )
    else:
        curves = motion.head_curves(sweep, ctx.layer, ctx.head)
        show_figure(
            cached(
                "head_curves",
                (ctx.spec, card.fingerprint, options, ctx.layer, ctx.head),
                lambda: curve_figures.curves_figure(curves, sweep.axis, ctx.label, card.name),
            ),
            f"{ctx.label}: its profile (a, b, c, d) and parity type at each RoPE position d.",
            data=curves,
            filename=f"{ctx.spec}_L{ctx.layer}H{ctx.head}_over_d",
        )
        source = sweep_request(ctx.spec, options, card.total_heads).key
        changes = derive(ParityChanges(source, sweep)).changes
        own = changes[(changes["layer"] == ctx.layer) & (changes["head"] == ctx.head)]
        st.caption(
            f"Parity changes at d = {', '.join(str(d) for d in own['rope_position'])}."
            if len(own)
            else f"Type {curves['parity'].iloc[0]} at every position d = {first}…{last}."
        )
        st.page_link(
            "pages/positions.py",
            label="Every head at every position",
            icon=":material/arrow_forward:",
        )

pattern = head_section(ctx)  # what the head does: its attention on a prompt, its scores
if pattern is not None:
    every_head_section(ctx, pattern)  # every head's attention on that prompt, a click opens one
    why_section(ctx, pattern)  # why: those scores split by the form's parts, a direction's readout
own = ctx.analysis if ctx.rope_position == 0 else load_analysis(ctx.spec, 0, quiet=True)
at_zero = own.heads.iloc[ctx.row]  # an edit's profile is at d = 0
edit_head_section(ctx, {name: at_zero[name] for name in ("a", "b", "c", "d", "parity")})
