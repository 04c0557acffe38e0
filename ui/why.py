"""The dashboard's score splits: why a head attends where it does (:mod:`headforms.why`), through
the gateway (:class:`ui.gateway.WhyAttends`: in the server on a private server, in the model's
worker and charged to the visitor in hosted mode), their failures one line that leaves the other
views alone.

- :func:`why_section`: the Head page's "Why it attends": the head's scores on the page's prompt
  as four heatmaps (positive lobe, negative lobe, antisymmetric part, the rest), its shares,
  and the readout of an eigen-direction chosen on the spectrum (``direction=p1`` in the URL).
- :func:`every_head`: every head's shares on the shipped text (kept, stored, or computed when
  the visitor asks): the "Why heads attend" page and the Experiments page's correlations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import streamlit as st

from headforms.behaviour import DEFAULT_PROMPT, AttentionPattern
from headforms.errors import HeadformsError
from headforms.figures import why as figures
from headforms.interventions import DEFAULT_MAX_TOKENS, DEFAULT_TEXT, DEFAULT_TEXT_NAME, Scope
from headforms.why import DIRECTIONS, WhyRequest, WhyResult

from . import guard, links
from .behaviour import PROMPT_KEY, forward, runnable_model
from .compute import cached, peek
from .gateway import WhyAttends
from .plot import PlotPayload, clickable_plot
from .sidebar import head_label
from .widgets import show_figure

if TYPE_CHECKING:
    from .sidebar import PageContext

DIRECTION_KEY = "hf_why_direction"
DIRECTION_NAMES = [f"{end}{rank}" for end in "pn" for rank in range(1, DIRECTIONS + 1)]
"""A direction in the URL: ``p3`` the positive lobe's third, ``n1`` the negative lobe's first."""
LOBE_OF = {"p": "positive", "n": "negative"}
EVERY_HEAD_ASKED_KEY = "_hf_why_every_head_asked"


def direction_label(name: str) -> str:
    """``p3`` as the page writes it: ``λ₊3`` (the positive lobe's third largest)."""
    return ("λ₊" if name[0] == "p" else "λ₋") + name[1:]


def bind_direction() -> None:
    """The chosen eigen-direction as the URL parameter ``direction`` (before its widget)."""
    links.bind(links.choice("direction", DIRECTION_KEY, DIRECTION_NAMES, "p1", "a direction"))


def _chose_direction(point: Sequence[Any]) -> None:
    """Callback of the spectrum's markers (``[lobe, rank]``): choose that direction (a payload
    that is not one of them is ignored with one toast line)."""
    lobe = point[0] if isinstance(point, list | tuple) and len(point) == 2 else None
    rank = guard.whole_number(point[1], 1, DIRECTIONS) if lobe in ("positive", "negative") else None
    if rank is None:
        st.toast("Ignored a click: not one of the top directions.", icon=":material/block:")
        return
    st.session_state[DIRECTION_KEY] = f"{str(lobe)[0]}{rank}"


def head_request(layer: int, head: int, prompt: str, tokens: int) -> WhyRequest:
    """One head in full on the page's prompt (its ``tokens`` tokens: all the pattern shows)."""
    return WhyRequest(
        scope=Scope("heads", ((layer, head),)), text=prompt, max_tokens=tokens, detail=True
    )


def why_section(ctx: PageContext, pattern: AttentionPattern) -> None:
    """The Head page's "Why it attends" (module doc), on the prompt of ``pattern``, the head's
    attention the page drew above."""
    bind_direction()
    st.subheader("Why it attends")
    prompt = str(pattern.meta.get("prompt", st.session_state.get(PROMPT_KEY, DEFAULT_PROMPT)))
    try:
        request = head_request(ctx.layer, ctx.head, prompt, max(2, len(pattern.token_ids)))
    except HeadformsError as error:
        st.info(guard.public_message(str(error)), icon=":material/info:")
        return
    found = forward(
        ctx.spec,
        f"Splitting {head_label(ctx.layer, ctx.head)}'s scores on the prompt",
        lambda located: WhyAttends(located, request),
    )
    if found is None or found[1].detail is None:
        return
    computation, result = found
    detail, row = result.detail, result.table.iloc[0]
    name = head_label(ctx.layer, ctx.head)
    key = (ctx.spec, *computation.key)  # what the split is, by content
    st.caption(
        "Each pre-softmax score above is the sum of four parts: the form's positive lobe and "
        "negative lobe (its symmetric part's eigen-directions at the pair's own distance d), "
        "its antisymmetric part, and the rest (biases, position biases), each scaled as the "
        f"model scales it. Largest gap to the model's own scores: {row['split_error']:.1e} of "
        "the largest score."
    )
    show_figure(
        cached(
            "why_parts",
            key,
            lambda: PlotPayload.of(
                figures.parts_figure(
                    result.tokens, detail.parts, f"{name}: its scores split by the form's parts"
                )
            ),
        ),
        "Row = query token, column = key token, one colour scale for the four (red raises a "
        "pair's score, blue lowers it; grey: masked). Hover a cell for both tokens.",
        key="why_parts",
        data=lambda: _parts_table(result),
        filename=f"{ctx.spec}_L{ctx.layer}H{ctx.head}_parts",
    )
    left, right = st.columns(2)
    with left:
        show_figure(
            cached(
                "why_shares",
                key,
                lambda: PlotPayload.of(figures.shares_figure(row, f"{name}: who carries it")),
            ),
            "Each part's share of the squared scores over the visible pairs, of their spread "
            "within each query's row (what the softmax feels), and of the form's weights "
            "(‖part‖² / ‖L‖² at d = 0). For random isotropic inputs the first two would equal "
            "the third.",
            key="why_shares",
        )
    chosen = str(st.session_state.get(DIRECTION_KEY, "p1"))
    lobe, rank = LOBE_OF[chosen[0]], int(chosen[1:])
    directions = _directions(result)
    with right:
        clickable_plot(
            cached(
                "why_spectrum",
                (*key, chosen),
                lambda: PlotPayload.of(
                    figures.spectrum_figure(detail.spectrum, directions, (lobe, rank))
                ),
            ),
            key="why_spectrum",
            on_click=_chose_direction,
            caption=f"The eigenvalues of S at d = 0; the top {DIRECTIONS} of each lobe are "
            "markers below: click one for its readout.",
            data=directions,
        )
    _direction_readout(result, lobe, rank)


def _directions(result: WhyResult) -> pd.DataFrame:
    vocabulary = result.vocabulary_table
    return (
        vocabulary[["lobe", "rank", "eigenvalue"]]
        .drop_duplicates()
        .sort_values(["lobe", "rank"], ascending=[False, True], ignore_index=True)
    )


def _direction_readout(result: WhyResult, lobe: str, rank: int) -> None:
    """The chosen direction's top pairs on the text and its tokens through the vocabulary."""
    detail = result.detail
    assert detail is not None
    vocabulary = result.vocabulary_table
    words = vocabulary[(vocabulary["lobe"] == lobe) & (vocabulary["rank"] == rank)]
    name = direction_label(f"{lobe[0]}{rank}")
    if words.empty:
        st.info(f"This head's {lobe} lobe has no direction {rank}.", icon=":material/info:")
        return
    eigenvalue = float(words["eigenvalue"].iloc[0])
    scaled = eigenvalue / (float(np.linalg.norm(detail.spectrum)) or 1.0)
    st.markdown(
        f"**Direction {name}**: eigenvalue {eigenvalue:.4g} of S at d = 0 "
        f"(λ/‖S‖ = {scaled:.3f}); click another on the spectrum."
    )
    pairs = result.pair_table
    own = pairs[(pairs["lobe"] == lobe) & (pairs["rank"] == rank)]
    left, right = st.columns([3, 2])
    with left:
        st.dataframe(
            own[
                ["query_position", "query_token", "key_position", "key_token", "contribution"]
            ].assign(
                query_token=lambda f: f["query_token"].map(guard.plain),
                key_token=lambda f: f["key_token"].map(guard.plain),
            ),
            hide_index=True,
            column_config={
                "query_position": st.column_config.NumberColumn("query", width="small"),
                "query_token": "query token",
                "key_position": st.column_config.NumberColumn("key", width="small"),
                "key_token": "key token",
                "contribution": st.column_config.NumberColumn("contribution", format="%.4f"),
            },
        )
        st.caption(
            f"The token pairs of the prompt with the largest |contribution| of {name}: "
            "λₖ (vₖ·x_key)(vₖ·x_query), with the k-th eigenpair of S at the pair's own d."
        )
    with right:
        ends = {end: words[words["end"] == end].reset_index(drop=True) for end in ("+", "-")}
        st.dataframe(
            pd.DataFrame(
                {
                    "plus": ends["+"]["token"].map(guard.plain),
                    "plus_projection": ends["+"]["projection"],
                    "minus": ends["-"]["token"].map(guard.plain),
                    "minus_projection": ends["-"]["projection"],
                }
            ),
            hide_index=True,
            column_config={
                "plus": "+v tokens",
                "plus_projection": st.column_config.NumberColumn("v·x", format="%.2f"),
                "minus": "−v tokens",
                "minus_projection": st.column_config.NumberColumn("v·x", format="%.2f"),
            },
        )
        same = "raises" if lobe == "positive" else "lowers"
        st.caption(
            "The tokens whose attention input projects most onto +v and onto −v; a query and "
            f"a key at the same end: this direction {same} their score. "
            + guard.plain(detail.vocabulary_path).capitalize()
            + "."
        )


def _parts_table(result: WhyResult) -> pd.DataFrame:
    """The four parts of every visible pair (the heatmaps' CSV download)."""
    detail = result.detail
    assert detail is not None
    length = detail.parts.shape[-1]
    query, key = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    seen = np.isfinite(detail.scores)
    tokens = np.array(result.tokens, dtype=object)
    table = {
        "query_position": query[seen],
        "query_token": tokens[query[seen]],
        "key_position": key[seen],
        "key_token": tokens[key[seen]],
    }
    for index, part in enumerate(("positive", "negative", "antisymmetric", "rest")):
        table[part] = detail.parts[index][seen]
    table["score"] = detail.scores[seen]
    return pd.DataFrame(table)


def every_head_request() -> WhyRequest:
    """Every head on the shipped text's first T tokens (the Experiments page's text)."""
    return WhyRequest(Scope("all"), text=DEFAULT_TEXT, max_tokens=DEFAULT_MAX_TOKENS)


EVERY_HEAD_TEXT = f"the first {DEFAULT_MAX_TOKENS} tokens of the {DEFAULT_TEXT_NAME}"
"""What the every-head views split the scores on."""


def peek_every_head(spec: str) -> WhyResult | None:
    """Every head's split if nothing needs computing (kept or stored), else None (silently
    None when the model cannot run: the view that runs it says why)."""
    try:
        return peek(WhyAttends(runnable_model(spec), every_head_request()))
    except HeadformsError:
        return None


def every_head(spec: str, heads: int, where: Any = None) -> WhyResult | None:
    """Every head's split: kept or stored, or, once the visitor presses the button drawn in
    ``where`` (one click: ``heads`` heads take a while), computed under a progress bar; None
    until then (or after one line saying why not)."""
    found = peek_every_head(spec)
    if found is not None:
        return found
    slot = (where or st).empty()
    slot.button(
        f"Split every head's scores ({heads} heads, {EVERY_HEAD_TEXT})",
        icon=":material/call_split:",
        on_click=st.session_state.__setitem__,
        args=(EVERY_HEAD_ASKED_KEY, True),
        help="One forward pass, then each head's scores split at every relative position "
        "(a 2n x 2n eigenproblem per head and distance).",
    )
    if not st.session_state.pop(EVERY_HEAD_ASKED_KEY, False):
        return None
    slot.empty()
    done = forward(
        spec,
        f"Splitting every head's scores of {guard.plain(spec)}",
        lambda located: WhyAttends(located, every_head_request()),
        where,
        bar=True,
    )
    return None if done is None else done[1]
