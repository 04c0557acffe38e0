"""The dashboard's forward passes: a prompt's attention patterns and every head's head-type
scores (:mod:`headforms.behaviour`), through the gateway (shared by every session, contained in
hosted mode), their failures one line that leaves the geometry views alone.

- :func:`attention_pattern`, :func:`head_scores`: the results (or None after one line saying
  why: a model transformers cannot run, an empty or too long prompt, a limit).
- :func:`head_section`: the Head page's "What this head does" (prompt box, the head's heatmap,
  the layer's other heads one click away, its scores).

On a private server the pass runs in the server process (models stay loaded in its LRU,
``HEADFORMS_MODELS_MEMORY``; :func:`prefetch` starts loading one while the page draws); in
hosted mode in the model's worker process (:func:`headforms.hosted.forward_pass`: kept loaded
between passes, within the worker limits, at the visitor's turn), counted against the
visitor's forward passes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd
import streamlit as st

from headforms.behaviour import (
    DEFAULT_PROBE_LENGTH,
    DEFAULT_PROMPT,
    DEFAULT_SEED,
    AttentionPattern,
    HeadTypeScores,
)
from headforms.behaviour.run import locate_runnable
from headforms.errors import HeadformsError
from headforms.figures import behaviour as figures
from headforms.settings import PROMPT_CHARACTERS_ENV, settings
from headforms.sources import Located

from . import guard, links, state
from .compute import ProgressBar, ProgressLine, ahead, cached, gateway, later, peek, run
from .gateway import Computation, ProbeScores, PromptAttention
from .loading import located_model
from .plot import PlotPayload
from .sidebar import head_label
from .state import stepped
from .widgets import show_figure

if TYPE_CHECKING:
    from .sidebar import PageContext

R = TypeVar("R")

PROMPT_KEY = "prompt"  # bound by Streamlit: the parameter's name
PRE_SOFTMAX_KEY = "hf_pre_softmax"
LAYER_VIEW_KEY = "hf_layer_view"
SHORT_NAMES = figures.SHORT_SCORES
"""Metric labels that fit a quarter of the page at 1280 px."""
LOGGER = logging.getLogger(__name__)
PROBE = (DEFAULT_PROBE_LENGTH, DEFAULT_SEED)
"""The repeated-token probe of the head-type scores: ``(R, seed)``."""


def runnable_model(spec: str) -> Located:
    """The model ``spec`` names, located within this server's policy (:func:`located_model`),
    if a forward pass can run on it (a published table cannot; a confined model's other files
    are checked)."""
    return locate_runnable(located_model(spec))


def forward(
    spec: str,
    label: str,
    request_of: Callable[[Located], Computation[R]],
    where: Any = None,
    bar: bool = False,
) -> tuple[Computation[R], R] | None:
    """The request ``request_of`` makes of ``spec``'s runnable model and its result (kept, or
    computed under a progress line in ``where``, with a progress bar while it runs when
    ``bar``: a long computation); None after one line saying why not."""
    line = ProgressLine(label, where)
    try:
        request = request_of(runnable_model(spec))
        found = peek(request)
        if found is not None:
            return request, found
        if bar:
            with ProgressBar(label, where) as progress:
                value = run(request, progress)
        else:
            line.show()
            value = run(request, line)
    except HeadformsError as error:
        line.info(guard.public_message(str(error)))
        return None
    except Exception as error:  # a bug of torch, transformers or ours: one line, never a traceback
        LOGGER.exception("forward pass of %r failed", spec)
        line.error(
            guard.public_message(f"{label}: could not run the model: {guard.unexpected(error)}")
        )
        return None
    line.clear()
    return request, value


def _pattern(
    spec: str, prompt: str, where: Any = None
) -> tuple[Computation[AttentionPattern], AttentionPattern] | None:
    return forward(
        spec,
        f"Running {guard.plain(spec)} on the prompt",
        lambda located: PromptAttention(located, prompt),
        where,
    )


def attention_pattern(spec: str, prompt: str, where: Any = None) -> AttentionPattern | None:
    """Every head's attention on ``prompt`` (None after one line saying why not)."""
    found = _pattern(spec, prompt, where)
    return None if found is None else found[1]


def head_scores(spec: str, where: Any = None) -> HeadTypeScores | None:
    """Every head's head-type scores on the default probe (None after one line saying why)."""
    found = forward(
        spec,
        f"Scoring every head of {guard.plain(spec)} on the repeated-token probe",
        lambda located: ProbeScores(located, *PROBE),
        where,
    )
    return None if found is None else found[1]


def prefetch(spec: str) -> None:
    """Start loading ``spec``'s runnable model in the background (a private server, unless the
    model is loaded or the page's prompt and probe are kept), so that torch's and the model's
    loading overlap the drawing of the page above its heatmap. A failure is left for the
    page's own call to report."""
    bind_options()  # the prompt the page will run
    try:
        located = runnable_model(spec)
        prompt = str(
            st.session_state.get(PROMPT_KEY, st.query_params.get(PROMPT_KEY, DEFAULT_PROMPT))
        )
        requests = (
            PromptAttention(located, prompt),
            ProbeScores(located, *PROBE),
        )
    except HeadformsError:
        return
    gateway().prepare(*requests)


def with_head_scores(table: pd.DataFrame, spec: str) -> pd.DataFrame:
    """The per-head table with the head-type score columns joined (unchanged, after one line,
    when the model cannot run)."""
    scores = head_scores(spec)
    if scores is None:
        return table
    joined = table.merge(scores.table, on=["layer", "head"], how="left", validate="one_to_one")
    added = [c for c in scores.table.columns if c not in ("layer", "head")]
    rest = [c for c in table.columns if c not in added]
    at = rest.index("parity") + 1 if "parity" in rest else len(rest)
    return joined[[*rest[:at], *added, *rest[at:]]]  # beside parity, in view without scrolling


def bind_options() -> None:
    """The Head page's options as URL parameters (``prompt``, bound by Streamlit, and
    ``scores``, ``layer_view``), before their widgets (a link's prompt longer than the cap is cut,
    with a notice)."""
    links.check(
        links.StateLink(
            "prompt",
            PROMPT_KEY,
            DEFAULT_PROMPT,
            _read_prompt,
            lambda value: [str(value)],
            lambda value: f"the prompt {links.shown([str(value)])}",
        )
    )
    links.bind(links.flag("scores", PRE_SOFTMAX_KEY, False, "pre-softmax scores"))
    links.bind(links.flag("layer_view", LAYER_VIEW_KEY, False, "every head of the layer"))


def _read_prompt(values: list[str]) -> str:
    """A link's prompt: its last value, at most the cap's characters."""
    text, limit = values[-1], settings().prompt_characters
    if len(text) > limit:
        raise links.Refused(
            f"is longer than {limit} characters ({PROMPT_CHARACTERS_ENV})", text[:limit]
        )
    if len(values) > 1:
        raise links.Refused(f"is given {len(values)} times (once is accepted)", text)
    return text


def _pattern_table(pattern: AttentionPattern, layer: int, head: int, kind: str) -> pd.DataFrame:
    """One head's heatmap cells as rows (its CSV download)."""
    matrix = pattern.array(kind)[layer, head]
    length = len(pattern.tokens)
    query, key = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    return pd.DataFrame(
        {
            "query_position": query.ravel(),
            "query_token": np.array(pattern.tokens, dtype=object)[query.ravel()],
            "key_position": key.ravel(),
            "key_token": np.array(pattern.tokens, dtype=object)[key.ravel()],
            kind: matrix.ravel(),
        }
    )


def _metric(label: str, values: np.ndarray, index: int, help: str) -> None:
    """One score of head ``index`` with its rank among the model's heads (1 = the highest)."""
    value = values[index]
    finite = values[np.isfinite(values)]
    st.metric(
        label,
        f"{value:.3f}" if np.isfinite(value) else "—",
        delta=f"rank {int((finite > value).sum()) + 1} of {len(values)}"
        if np.isfinite(value)
        else "undefined: one token",
        delta_color="off",
        delta_arrow="off",
        help=help,
    )


def _score_metrics(ctx: PageContext, pattern: AttentionPattern, scores: HeadTypeScores | None):
    """The head's four scores, each with its rank among the model's heads."""
    from headforms.behaviour.scores import first_token, previous_token

    row = ctx.layer * ctx.card.n_heads + ctx.head
    on_prompt = {
        "previous_token": previous_token(pattern.weights).ravel(),
        "first_token": first_token(pattern.weights).ravel(),
    }
    for name, values in on_prompt.items():
        where = "i − 1." if name == "previous_token" else "position 0."
        _metric(
            f"{SHORT_NAMES[name]} · prompt",
            values,
            row,
            f"Mean over the prompt's query positions i ≥ 1 of the weight on {where}",
        )
    if scores is None:
        return
    meta = scores.meta
    for name in ("duplicate_token", "induction"):
        back = "(duplicate)." if name == "duplicate_token" else "+ 1 (the token after it)."
        _metric(
            f"{SHORT_NAMES[name]} · probe",
            np.asarray(scores.columns[name], dtype=float),
            row,
            f"On {meta['probe_length']} seeded random tokens (seed {meta['seed']}) repeated "
            "twice: mean over the second copy of the weight on the same token one copy back "
            + back,
        )


def head_section(ctx: PageContext) -> AttentionPattern | None:
    """The Head page's "What this head does": a prompt, the head's attention on it (weights or
    pre-softmax scores), the layer's other heads one click away, and the head's scores; the
    pattern drawn (None after one line saying why there is none)."""
    bind_options()
    st.subheader("What this head does")
    prompt = st.text_area(
        "Prompt",
        value=DEFAULT_PROMPT,
        key=PROMPT_KEY,
        bind="query-params",
        height=80,
        max_chars=settings().prompt_characters,
        help="The model runs on this text (transformers, eager attention); the heatmap shows "
        "the tokens as its tokenizer makes them, special tokens included. Ctrl+Enter applies.",
    )
    controls = st.columns([3, 1], vertical_alignment="bottom")
    with controls[0]:
        st.segmented_control(
            f"Heads of layer {ctx.layer}",
            list(range(ctx.card.n_heads)),
            default=ctx.head,
            format_func=lambda h: f"H{h}",
            key=f"hf_layer_heads:{ctx.spec}:{ctx.layer}:{ctx.head}",
            on_change=_pick_head,
            args=(ctx.spec, ctx.layer, ctx.card.n_heads, ctx.head),
        )
    with controls[1]:
        st.toggle(
            "Pre-softmax scores",
            key=PRE_SOFTMAX_KEY,
            help="The softmax's input (scaled q·k plus masks and position biases) instead of the "
            "attention weights.",
        )
    kind = "scores" if st.session_state[PRE_SOFTMAX_KEY] else "weights"
    found = _pattern(ctx.spec, prompt)
    if found is None:
        return None
    request, pattern = found
    if (pattern.n_layers, pattern.n_heads) != (ctx.card.n_layers, ctx.card.n_heads):
        st.info(
            f"The forward pass has {pattern.n_layers} layers × {pattern.n_heads} heads, the "
            f"analysis {ctx.card.n_layers} × {ctx.card.n_heads}: they do not describe the same "
            "heads.",
            icon=":material/info:",
        )
        return None
    try:
        values = pattern.array(kind)
    except HeadformsError as error:
        st.info(guard.plain(str(error)), icon=":material/info:")
        kind, values = "weights", pattern.weights
    layer, head = ctx.layer, ctx.head  # the CSV is made when clicked: it keeps no pattern
    scores = head_scores(ctx.spec)
    left, right = st.columns([3, 1])
    causal = (
        "causal: each query sees itself and earlier tokens (grey: masked)"
        if pattern.causal
        else ("bidirectional: every query sees every token")
    )
    key = (ctx.spec, pattern.fingerprint, prompt, ctx.layer, ctx.head, kind)

    tokens, is_causal = pattern.tokens, pattern.causal

    def pattern_figure(layer: int, head: int) -> tuple[tuple, Callable[[], PlotPayload]]:
        """One head's heatmap: ``(key, build)`` as ``cached`` takes them; the build keeps a
        copy of the head's matrix, never the pattern (a build waiting ahead holds no pattern
        the cache has let go of)."""
        title = f"{head_label(layer, head)}: {figures.KINDS[kind]}s on {len(tokens)} tokens"
        matrix = np.array(values[layer, head])
        return (*key[:3], layer, head, kind), lambda: PlotPayload.of(
            figures.attention_figure(tokens, matrix, title, kind, causal=is_causal)
        )

    with left:
        show_figure(
            cached("behaviour_pattern", *pattern_figure(layer, head)),
            f"Row = query token, column = key token; {causal}. Hover a cell for both tokens and "
            "the value.",
            key="behaviour_head_pattern",
            data=later(request, lambda kept: _pattern_table(kept, layer, head, kind)),
            filename=f"{ctx.spec}_L{ctx.layer}H{ctx.head}_{kind}",
        )
    ahead(  # "Next" and "Previous" find their heatmaps built
        ("behaviour_pattern", *pattern_figure(*stepped(layer, head, step, *values.shape[:2])))
        for step in (1, -1)
    )
    with right:
        _score_metrics(ctx, pattern, scores)
    if st.toggle(
        f"Every head of layer {ctx.layer} side by side",
        key=LAYER_VIEW_KEY,
        help="The layer's heads as small heatmaps on the same prompt and scale.",
    ):
        show_figure(
            cached(
                "behaviour_layer",
                key[:4] + (kind,),
                lambda: figures.layer_attention_figure(
                    values[ctx.layer], ctx.layer, kind, causal=pattern.causal
                ),
            ),
            f"The {ctx.card.n_heads} heads of layer {ctx.layer} on the same prompt and scale.",
            key="behaviour_layer_patterns",
        )
    return pattern


def _pick_head(spec: str, layer: int, n_heads: int, current: int) -> None:
    """Callback of the layer's head picker: select the head picked (the same one: no change)."""
    picked = st.session_state.get(f"hf_layer_heads:{spec}:{layer}:{current}")
    head = guard.whole_number(picked, 0, n_heads - 1)
    if head is not None:
        state.select_head(spec, layer, head)
