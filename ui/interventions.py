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

from headforms.errors import HeadformsError
from headforms.interventions import (
    DEFAULT_CONTROLS,
    EDITS,
    InterventionRequest,
    InterventionResult,
    request_of,
)
from headforms.interventions.controls import DEFAULT_MATCH, MATCH_SUMMARIES, MATCHES, Match
from headforms.interventions.request import MAX_CONTROLS
from headforms.interventions.text import DEFAULT_TEXT_KEY, TEXTS

from . import guard, links
from .behaviour import forward
from .gateway import Intervention

if TYPE_CHECKING:
    from .sidebar import PageContext

NO_EDIT = "none"
EDIT_KEY = "hf_head_edit"
CONTROLS_KEY = "controls"  # bound by Streamlit: the parameter's name
SEED_KEY = "edit_seed"
MATCH_KEY = "hf_head_edit_match"
TEXT_KEY = "hf_head_edit_text"
RUN_KEY = "_hf_head_edit_run"
PROMPT_TEXT = "prompt"
"""The Head page's text choice that means "the prompt in the box above"."""
HEAD_EDIT = links.choice("edit", EDIT_KEY, [NO_EDIT, *EDITS], NO_EDIT, "an edit")
"""The Head page's edit (``edit=flip``; ``none``: nothing is run)."""
CONTROLS = links.whole(
    "controls", CONTROLS_KEY, 0, MAX_CONTROLS, DEFAULT_CONTROLS, "a number of controls", "K ="
)
SEED = links.whole("edit_seed", SEED_KEY, 0, 2**32 - 1, 0, "a seed", "seed")
HEAD_MATCH = links.choice("edit_match", MATCH_KEY, list(MATCHES), DEFAULT_MATCH.value, "a match")
HEAD_TEXT = links.choice("edit_text", TEXT_KEY, [*TEXTS, PROMPT_TEXT], DEFAULT_TEXT_KEY, "a text")
"""The Head page's edit options, each its own URL parameter (no other page binds these names)."""


def edit_label(name: str) -> str:
    """An edit as a widget shows it: its name and what it does."""
    if name == NO_EDIT:
        return "none (choose an edit)"
    return f"{name}: {EDITS[name].summary}"


def text_choice_label(name: str) -> str:
    """A text choice as a widget shows it."""
    if name == PROMPT_TEXT:
        return "the prompt above"
    return TEXTS[name].label


def match_label(name: str) -> str:
    return f"{name}: {MATCH_SUMMARIES[Match(name)]}"


def head_request(
    layer: int,
    head: int,
    edit: str,
    controls: int,
    seed: int,
    text: str | None = None,
    match: str = DEFAULT_MATCH.value,
) -> InterventionRequest:
    """One head edited alone on ``text`` (default: the shipped prose), with ``controls``
    matched controls and the probe (the induction loss against the controls, the head's
    head-type scores before and after)."""
    return request_of(
        edit,
        heads=[(layer, head)],
        controls=controls,
        seed=seed,
        probe=True,
        text=text,
        match=match,
    )


def sweep_request(
    edit: str, controls: int, seed: int, text: str | None = None, match: str = "scores"
) -> InterventionRequest:
    """Every head of the model edited on its own (one row per head)."""
    return request_of(edit, each=True, controls=controls, seed=seed, text=text, match=match)


def whole_model_request(
    edit: str, seed: int, text: str | None = None, match: str = "scores"
) -> InterventionRequest:
    """Every head edited at once, with the default matched controls."""
    return request_of(edit, controls=DEFAULT_CONTROLS, seed=seed, text=text, match=match)


def run_intervention(
    spec: str, request: InterventionRequest, label: str, where: Any = None, bar: bool = False
) -> InterventionResult | None:
    """``request``'s result on ``spec`` (kept, stored, or computed now under a progress line or
    bar in ``where``); None after one line saying why not."""
    found = forward(spec, label, lambda located: Intervention(located, request), where, bar)
    return None if found is None else found[1]


def _prefix(measure: str) -> str:
    return {"kl": "kl_", "delta_induction_loss": "induction_"}.get(measure, "")


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


def _metric(column: Any, title: str, value: float, row: Any, prefix: str, help: str) -> None:
    controls = int(row["controls"])
    p = row.get(prefix + "p_value", np.nan)
    column.metric(
        title,
        _shown(value),
        delta=(
            f"p = {_shown(p)} · median {_shown(row[prefix + 'control_median'])}"
            if controls and np.isfinite(p)
            else "no controls"
        ),
        delta_color="off",
        delta_arrow="off",
        help=help,
    )


def _metrics(result: InterventionResult) -> None:
    """Every measure of the edit against its controls, one metric each, and the match."""
    row = result.table.iloc[0]
    measure = result.measure
    cols = st.columns(4)
    if measure == "delta_ce":
        _metric(
            cols[0], "ΔCE on the text (nats)", row["delta_ce"], row, "",
            "Mean next-token cross-entropy on the text, edited minus unedited. Below it, p: the "
            "share of controls at or above it, (count + 1) / (K + 1), and the controls' median.",
        )  # fmt: skip
        _metric(
            cols[1], "KL (nats)", row["kl"], row, "kl_",
            "Mean KL(unedited ‖ edited) of the next-token distributions on the text.",
        )  # fmt: skip
    else:
        _metric(
            cols[0], "cosine distance", row["cosine_distance"], row, "",
            "Mean 1 − cos of the final hidden states (a model without a language-modelling head).",
        )  # fmt: skip
    if "delta_induction_loss" in row and np.isfinite(row["delta_induction_loss"]):
        _metric(
            cols[2], "Δ induction loss (nats)", row["delta_induction_loss"], row, "induction_",
            f"The loss on {int(row['probe_length'])} seeded random tokens repeated twice (second "
            "copy), edited minus unedited, against the same controls run on the probe.",
        )  # fmt: skip
    cols[3].metric(
        "score change (RMS)",
        _shown(row["score_rms"]),
        delta=f"controls' median {_shown(row['control_score_rms'])} ({row['match']})",
        delta_color="off",
        delta_arrow="off",
        help="RMS over the text's visible query/key pairs of the change of the head's "
        "pre-softmax scores: the edit's, and its controls' (equal when matched on scores).",
    )


def _shown(value: float) -> str:
    return f"{value:.4g}" if np.isfinite(value) else "—"


def _controls_table(result: InterventionResult) -> Any:
    """Each control's score RMS beside its measures (the edit first)."""
    import pandas as pd

    row = result.table.iloc[0]
    measure = result.measure
    names = [measure, "kl"] if measure == "delta_ce" else [measure]
    if "delta_induction_loss" in result.controls:
        names.append("delta_induction_loss")
    records = [{"": "the edit", "score RMS": row["score_rms"], **{n: row[n] for n in names}}]
    for k in range(result.controls["score_rms"].shape[1]):
        records.append(
            {
                "": f"control {k + 1}",
                "score RMS": result.controls["score_rms"][0, k],
                **{n: result.controls[n][0, k] for n in names},
            }
        )
    return pd.DataFrame(records)


def edit_head_section(ctx: PageContext, before_profile: dict[str, Any]) -> None:
    """The Head page's "Edit this head": an edit, a text, how controls are matched and K; the
    edit runs on request (a stored result is shown at once): each measure against its matched
    controls (ΔCE, KL, the induction loss, with p-values), the score change's RMS of the edit
    and of each control, the attention before and after, where the edited form lands on the
    simplex and the head-type scores before and after. ``before_profile``: the head's ``a, b,
    c, d, parity`` at d = 0."""
    from headforms.card import TABLE_SOURCE
    from headforms.figures import interventions as figures

    from .behaviour import PROMPT_KEY
    from .compute import cached
    from .widgets import show_figure

    if ctx.card.source_kind == TABLE_SOURCE:
        st.caption(
            f"{guard.plain(ctx.spec)} is a published per-head table (no weights): its heads "
            "cannot be edited."
        )
        return
    links.bind(HEAD_EDIT)
    links.bind(HEAD_TEXT)
    links.bind(HEAD_MATCH)
    links.check(CONTROLS, SEED)
    st.subheader("Edit this head")
    st.caption(
        "Replace the head's form L by an edited one at every relative position, run the model on "
        "a text and on the repeated-token probe, and measure what it loses against matched "
        "controls: random forms in the head's span that move its scores as much."
    )
    cols = st.columns([2.2, 2.2, 1, 1], vertical_alignment="bottom")
    edit = cols[0].selectbox("Edit", [NO_EDIT, *EDITS], format_func=edit_label, key=EDIT_KEY)
    choice = cols[1].selectbox(
        "Text", [*TEXTS, PROMPT_TEXT], format_func=text_choice_label, key=TEXT_KEY
    )
    controls = cols[2].number_input(
        "matched controls K",
        min_value=0,
        max_value=MAX_CONTROLS,
        value=CONTROLS.default,
        step=1,
        key=CONTROLS_KEY,
        bind="query-params",
    )
    seed = cols[3].number_input(
        "seed", min_value=0, value=SEED.default, step=1, key=SEED_KEY, bind="query-params"
    )
    match = st.radio(
        "Controls matched on",
        list(MATCHES),
        format_func=match_label,
        key=MATCH_KEY,
        horizontal=True,
    )
    checked = (
        guard.whole_number(controls, 0, MAX_CONTROLS),
        guard.whole_number(seed, 0, 2**32 - 1),
    )
    if edit == NO_EDIT or edit not in EDITS or None in checked:
        return
    text = str(st.session_state.get(PROMPT_KEY, "")) if choice == PROMPT_TEXT else None
    try:
        request = head_request(ctx.layer, ctx.head, edit, *checked, text=text, match=match)  # type: ignore[misc]
    except HeadformsError as exc:
        st.error(guard.public_message(exc), icon=":material/error:")
        return
    result = peek_intervention(ctx.spec, request)
    asked = st.session_state.get(RUN_KEY) == request.key_options()
    if result is None and not asked:
        passes = request.passes(1)
        st.button(
            f"Run {edit} on {ctx.label} ({passes} sequence passes from layer {ctx.layer} up)",
            icon=":material/science:",
            on_click=st.session_state.__setitem__,
            args=(RUN_KEY, request.key_options()),
            help="The edit, its K controls, on the text and on the probe; its result is kept: "
            "stepping back to this head shows it at once.",
        )
        return
    if result is None:
        result = run_intervention(
            ctx.spec, request, f"Editing {ctx.label} of {guard.plain(ctx.spec)} ({edit})"
        )
        st.session_state.pop(RUN_KEY, None)
    if result is None:
        return
    _show_result(ctx, result, edit, checked, before_profile, figures, cached, show_figure)


def _show_result(
    ctx: PageContext,
    result: InterventionResult,
    edit: str,
    checked: tuple,
    before_profile: dict[str, Any],
    figures: Any,
    cached: Any,
    show_figure: Any,
) -> None:
    _metrics(result)
    for note in result.notes:
        st.caption(guard.plain(note))
    row = result.table.iloc[0]
    key = (
        ctx.spec,
        result.fingerprint,
        result.request.key_options()["text"],
        ctx.layer,
        ctx.head,
        edit,
        *checked,
        row["match"],
    )
    wanted = [result.measure, "kl", "delta_induction_loss"]  # the verdict's measures
    measures = [
        m for m in dict.fromkeys(wanted) if m in result.controls and np.isfinite(row.get(m, np.nan))
    ]
    values = {m: float(row[m]) for m in measures}
    show_figure(
        cached(
            "edit_controls",
            key,
            lambda: figures.verdict_figure(
                values,
                {m: result.controls[m][0] for m in measures},
                edit,
                ctx.label,
                {m: float(row[_prefix(m) + "p_value"]) for m in measures},
            ),
        ),
        "Each measure of the edit (diamond) against each matched control's (open circles, "
        f"spread vertically so that none hides another; band: their 10-90%); controls matched on "
        f"{row['match']}: the table below gives each one's score change beside its measures.",
        key="edit_controls",
    )
    st.dataframe(_controls_table(result), hide_index=True, height=180)
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


def study_request(spec: str) -> Any:
    """The Experiments page's study of ``spec`` (the study's defaults: the three shipped texts)."""
    from headforms.study_options import StudyOptions

    from .behaviour import runnable_model
    from .gateway import InterventionStudy

    return InterventionStudy(runnable_model(spec), options=StudyOptions())


def peek_study(request: Any) -> Any:
    """The study's result if nothing needs computing, else None."""
    from .compute import peek

    return peek(request)


def run_study(spec: str, request: Any) -> Any:
    """The study's result, computed now under a progress bar (None after one line)."""
    found = forward(
        spec, f"The study of {guard.plain(spec)}", lambda located: request, None, bar=True
    )
    return None if found is None else found[1]


def study_downloads(study: Any) -> None:
    """The study's report (one HTML file, offline) and its tables, to download, and its text."""
    from headforms.study_report import TABLES, report_html, summary_text

    from .compute import cached

    key = (study.meta["fingerprint"], study.meta["seconds"])
    page = cached("study_report", key, lambda: report_html(study))
    cols = st.columns(len(TABLES) + 1)
    cols[0].download_button(
        "report.html", page, file_name="headforms-study.html", mime="text/html",
        icon=":material/download:",
    )  # fmt: skip
    for column, name in zip(cols[1:], TABLES, strict=True):
        column.download_button(
            f"{name}.csv",
            getattr(study, name).to_csv(index=False),
            file_name=f"{name}.csv",
            mime="text/csv",
        )
    st.code(summary_text(study), language=None)
