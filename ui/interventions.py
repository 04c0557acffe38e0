"""The dashboard's interventions (:mod:`headforms.interventions`) through the gateway: an edit of
one head (the Head page's "Edit this head") and the Experiments page's sweeps, their options as
URL parameters, their failures one line that leaves the other views alone.

- :func:`head_request`, :func:`sweep_request`, :func:`whole_model_request`: the requests the
  views make (checked values; the text is the shipped one, its first T tokens).
- :func:`run_intervention`: a request's result (or None after one line): in the server process
  on a private server, in the model's worker and charged to the visitor in hosted mode
  (:func:`headforms.hosted.intervention`); a long one draws a progress bar.
- :func:`edit_head_section`: the Head page's section; the Experiments page draws its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import streamlit as st

from headforms.interventions import (
    DEFAULT_CONTROLS,
    EDITS,
    InterventionRequest,
    InterventionResult,
    request_of,
)
from headforms.interventions.request import MAX_CONTROLS

from . import guard, links
from .behaviour import forward
from .gateway import Intervention

if TYPE_CHECKING:
    from .sidebar import PageContext

NO_EDIT = "none"
EDIT_KEY = "hf_head_edit"
CONTROLS_KEY = "controls"  # bound by Streamlit: the parameter's name
SEED_KEY = "seed"
HEAD_EDIT = links.choice("edit", EDIT_KEY, [NO_EDIT, *EDITS], NO_EDIT, "an edit")
"""The Head page's edit (``edit=flip``; ``none``: nothing is run)."""
CONTROLS = links.whole(
    "controls", CONTROLS_KEY, 0, MAX_CONTROLS, DEFAULT_CONTROLS, "a number of controls", "K ="
)
SEED = links.whole("seed", SEED_KEY, 0, 2**32 - 1, 0, "a seed", "seed")


def edit_label(name: str) -> str:
    """An edit as a widget shows it: its name and what it does."""
    if name == NO_EDIT:
        return "none (choose an edit)"
    return f"{name}: {EDITS[name].summary}"


def head_request(layer: int, head: int, edit: str, controls: int, seed: int) -> InterventionRequest:
    """One head edited alone, with ``controls`` matched controls and the probe (its head-type
    scores before and after)."""
    return request_of(edit, heads=[(layer, head)], controls=controls, seed=seed, probe=True)


def sweep_request(edit: str, controls: int, seed: int) -> InterventionRequest:
    """Every head of the model edited on its own (one row per head)."""
    return request_of(edit, each=True, controls=controls, seed=seed)


def whole_model_request(edit: str, seed: int) -> InterventionRequest:
    """Every head edited at once, with the default matched controls."""
    return request_of(edit, controls=DEFAULT_CONTROLS, seed=seed)


def run_intervention(
    spec: str, request: InterventionRequest, label: str, where: Any = None, bar: bool = False
) -> InterventionResult | None:
    """``request``'s result on ``spec`` (kept, stored, or computed now under a progress line or
    bar in ``where``); None after one line saying why not."""
    found = forward(spec, label, lambda located: Intervention(located, request), where, bar)
    return None if found is None else found[1]


def peek_intervention(spec: str, request: InterventionRequest) -> InterventionResult | None:
    """``request``'s result if nothing needs computing (kept or stored), else None (and None,
    silently, when the model cannot run: the view that runs it says why)."""
    from headforms.errors import HeadformsError

    from .behaviour import runnable_model
    from .compute import peek

    try:
        return peek(Intervention(runnable_model(spec), request))
    except HeadformsError:
        return None


def _metrics(result: InterventionResult) -> None:
    """The edit's measures against its controls, one metric each."""
    row = result.table.iloc[0]
    measure = result.measure
    cols = st.columns(4)
    cols[0].metric(
        "ΔCE (nats)",
        _shown(row["delta_ce"]),
        delta=f"{_shown(row['ce_original'])} → {_shown(row['ce_edited'])}",
        delta_color="off",
        delta_arrow="off",
        help="Mean next-token cross-entropy on the text, edited minus unedited.",
    )
    cols[1].metric(
        "KL (nats)",
        _shown(row["kl"]),
        help="Mean KL(unedited ‖ edited) of the next-token distributions.",
    )
    controls = int(row["controls"])
    cols[2].metric(
        f"controls' median ({measure})",
        _shown(row["control_median"]),
        delta=f"10-90%: {_shown(row['control_p10'])} … {_shown(row['control_p90'])}"
        if controls
        else "no controls",
        delta_color="off",
        delta_arrow="off",
        help="Random changes of the head's form of the same size at every relative position.",
    )
    cols[3].metric(
        "exceeds",
        f"{int(row['control_rank'])} of {controls}" if controls else "—",
        help="How many matched controls changed the measure less than the edit did.",
    )


def _shown(value: float) -> str:
    return f"{value:.4g}" if np.isfinite(value) else "—"


def edit_head_section(ctx: PageContext, before_profile: dict[str, Any]) -> None:
    """The Head page's "Edit this head": an edit chosen (nothing runs until one is), its ΔCE and
    KL against its matched controls, the attention before and after, where the edited form
    lands on the simplex and the head-type scores before and after. ``before_profile``: the
    head's ``a, b, c, d, parity`` at d = 0."""
    from headforms.figures import interventions as figures

    from .compute import cached
    from .widgets import show_figure

    links.bind(HEAD_EDIT)
    links.check(CONTROLS, SEED)
    st.subheader("Edit this head")
    st.caption(
        "Replace the head's form L by an edited one at every relative position, run the model on "
        "the first 128 tokens of the Declaration of Independence and measure what it loses, "
        "against random changes of the same size (matched controls)."
    )
    cols = st.columns([3, 1, 1], vertical_alignment="bottom")
    edit = cols[0].selectbox("Edit", [NO_EDIT, *EDITS], format_func=edit_label, key=EDIT_KEY)
    controls = cols[1].number_input(
        "matched controls K",
        min_value=0,
        max_value=MAX_CONTROLS,
        value=CONTROLS.default,
        step=1,
        key=CONTROLS_KEY,
        bind="query-params",
    )
    seed = cols[2].number_input(
        "seed", min_value=0, value=SEED.default, step=1, key=SEED_KEY, bind="query-params"
    )
    checked = (
        guard.whole_number(controls, 0, MAX_CONTROLS),
        guard.whole_number(seed, 0, 2**32 - 1),
    )
    if edit == NO_EDIT or edit not in EDITS or None in checked:
        return
    request = head_request(ctx.layer, ctx.head, edit, *checked)  # type: ignore[arg-type]
    result = run_intervention(
        ctx.spec, request, f"Editing {ctx.label} of {guard.plain(ctx.spec)} ({edit})"
    )
    if result is None:
        return
    _metrics(result)
    for note in result.notes:
        st.caption(guard.plain(note))
    row = result.table.iloc[0]
    key = (ctx.spec, result.fingerprint, ctx.layer, ctx.head, edit, *checked)
    measure = result.measure
    show_figure(
        cached(
            "edit_controls",
            key,
            lambda: figures.controls_figure(
                float(row[measure]), result.controls[measure][0], measure, edit, ctx.label
            ),
        ),
        "The edit's measure (diamond) against each matched control's (open circles, spread "
        "vertically so that none hides another): a random form of the same Frobenius size as the "
        "edit's change at every relative position d.",
        key="edit_controls",
    )
    left, right = st.columns(2)
    with left:
        if np.isfinite(row.get("a_edited", np.nan)):
            after = {c: float(row[f"{c}_edited"]) for c in "abcd"}
            parities = (str(before_profile["parity"]), str(row["parity_edited"]))
            show_figure(
                cached(
                    "edit_profile",
                    key,
                    lambda: figures.profile_change_figure(before_profile, after, parities),
                ),
                "Where the form lies on the simplex at d = 0 (gains folded), before and after the "
                "edit; the parity type in the legend.",
                key="edit_profile",
            )
        else:
            st.caption(f"{edit} acts on the head's output: its form, and profile, are kept.")
    with right:
        scores = [c.removesuffix("_before") for c in row.index if c.endswith("_before")]
        if scores and all(np.isfinite(row[f"{s}_before"]) for s in scores):
            show_figure(
                cached(
                    "edit_scores",
                    key,
                    lambda: figures.scores_change_figure(
                        {s: float(row[f"{s}_before"]) for s in scores},
                        {s: float(row[f"{s}_after"]) for s in scores},
                    ),
                ),
                f"The head's head-type scores on {int(row['probe_length'])} seeded random tokens "
                "repeated twice, before and after its edit.",
                key="edit_scores",
            )
    if "before" in result.patterns and "after" in result.patterns:
        tokens = [str(t) for t in result.meta["tokens"]]
        show_figure(
            cached(
                "edit_patterns",
                key,
                lambda: figures.patterns_figure(
                    tokens,
                    result.patterns["before"],
                    result.patterns["after"],
                    f"{ctx.label}: attention weights on {len(tokens)} tokens of the text",
                ),
            ),
            "Row = query token, column = key token (grey: masked); the same scale before and "
            "after.",
            key="edit_patterns",
        )
