"""The dashboard's forward passes: a prompt's attention patterns and every head's head-type
scores (:mod:`headforms.behaviour`), kept in memory for every session, contained in hosted mode,
their failures one line that leaves the geometry views alone.

- :func:`attention_pattern`, :func:`head_scores`: the results (or None after one line saying
  why: a model transformers cannot run, an empty or too long prompt, a limit).
- :func:`head_section`: the Head page's "What this head does" (prompt box, the head's heatmap,
  the layer's other heads one click away, its scores).

On a private server the pass runs in the server process (models stay loaded in its LRU,
``HEADFORMS_MODELS_MEMORY``); in hosted mode in the model's worker process
(:func:`headforms.hosted.forward_pass`: kept loaded between passes, within the worker limits, at
the visitor's turn), counted against the visitor's forward passes.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import streamlit as st

from headforms import hosted
from headforms.behaviour import (
    DEFAULT_PROBE_LENGTH,
    DEFAULT_PROMPT,
    DEFAULT_SEED,
    AttentionPattern,
    HeadTypeScores,
    attention,
    cache,
    head_type_scores,
    runnable,
)
from headforms.behaviour.run import locate_runnable
from headforms.bounded import ByteLRU
from headforms.errors import HeadformsError
from headforms.figures import behaviour as figures
from headforms.settings import PROMPT_CHARACTERS_ENV, settings
from headforms.sources import Located
from headforms.store import ResultStore

from . import guard, links, state
from .loading import cached, located_model
from .widgets import show_figure

if TYPE_CHECKING:
    from .sidebar import PageContext

PROMPT_KEY = "prompt"  # bound by Streamlit: the parameter's name
PRE_SOFTMAX_KEY = "hf_pre_softmax"
LAYER_VIEW_KEY = "hf_layer_view"
SHORT_NAMES = {
    "previous_token": "previous token",
    "first_token": "first token",
    "duplicate_token": "duplicate token",
    "induction": "induction",
}
"""Metric labels that fit a quarter of the page at 1280 px."""
LOGGER = logging.getLogger(__name__)
TICK_SECONDS = 0.25
"""How often the progress line is redrawn while a hosted worker runs."""
MAX_RESULT_BYTES = 512 * 2**20
"""Bytes of forward-pass results kept in memory for all sessions (the default prompt's pattern
of SmolLM2 is 3 MB, one of 256 tokens 140 MB)."""


def _nbytes(value: Any) -> int:
    """Memory held by a pattern (its arrays) or a score table (its columns)."""
    if isinstance(value, AttentionPattern):
        return value.weights.nbytes + (0 if value.scores is None else value.scores.nbytes)
    return sum(np.asarray(c).nbytes for c in value.columns.values())


@st.cache_resource(show_spinner=False)
def forward_results() -> ByteLRU[Any]:
    """The process-wide results (one per server, shared by sessions), at most
    :data:`MAX_RESULT_BYTES` (the newest kept even when it alone passes them)."""
    return ByteLRU(MAX_RESULT_BYTES, sizer=_nbytes, keep_newest=True)


Compute = Callable[[Located, Callable[[str], None], Callable[[], None]], Any]
"""``compute(located, progress, tick)``: the result; ``progress(message)`` says what happens,
``tick()`` is called while a hosted worker is waited for."""


def _run(kind: str, spec: str, options: tuple, label: str, compute: Compute, where: Any) -> Any:
    """A kept result, or ``compute``'s with its progress shown; None after one line."""
    target = where if where is not None else st
    line = target.empty()
    started = time.monotonic()
    shown = {"text": f"{label} …", "at": 0.0}

    def progress(message: str) -> None:
        shown["text"] = f"{label}: {guard.plain(message)} …"
        line.caption(shown["text"])

    def tick() -> None:  # a redraw is where Streamlit stops the script of a visitor who left
        now = time.monotonic()
        if now - shown["at"] >= TICK_SECONDS:
            shown["at"] = now
            line.caption(f"{shown['text']} {now - started:.0f} s")

    try:
        located = runnable_model(spec)
        key = (kind, spec, runnable.fingerprint(located), options)
        hit = forward_results().get(key)
        if hit is not None:
            return hit
        line.caption(shown["text"])
        value = compute(located, progress, tick)
    except HeadformsError as error:
        line.info(guard.plain(guard.public_message(str(error))), icon=":material/info:")
        return None
    except Exception as error:  # a bug of torch, transformers or ours: one line, never a traceback
        LOGGER.exception("forward pass of %r failed", spec)
        message = f"{label}: could not run the model: {guard.unexpected(error)}"
        line.error(guard.plain(guard.public_message(message)), icon=":material/error:")
        return None
    line.empty()
    forward_results().put(key, value)
    return value


def runnable_model(spec: str) -> Located:
    """The model ``spec`` names, located within this server's policy (:func:`located_model`),
    if a forward pass can run on it (a published table cannot; a confined model's other files
    are checked)."""
    return locate_runnable(located_model(spec))


def _forward(
    located: Located, progress: Callable[[str], None], tick: Callable[[], None], **task: Any
) -> Any:
    """One forward pass of ``located`` (``prompt=`` or ``probe=(R, seed)``): in hosted mode in
    the model's worker, at the visitor's turn and counted against its forward passes; else in
    this process."""
    if guard.is_hosted():
        return hosted.forward_pass(
            located,
            progress=lambda done, total, message: progress(message),
            check=tick,
            visitor=guard.visitor(),
            **task,
        )
    if "prompt" in task:
        return attention(located, task["prompt"], progress=progress)
    length, seed = task["probe"]
    return head_type_scores(located, probe_length=length, seed=seed, progress=progress)


def attention_pattern(spec: str, prompt: str, where: Any = None) -> AttentionPattern | None:
    """Every head's attention on ``prompt`` (None after one line saying why not)."""
    return _run(
        "attention",
        spec,
        (prompt,),
        f"Running {guard.plain(spec)} on the prompt",
        lambda located, progress, tick: _forward(located, progress, tick, prompt=prompt),
        where,
    )


def head_scores(spec: str, where: Any = None) -> HeadTypeScores | None:
    """Every head's head-type scores on the default probe (None after one line saying why)."""
    probe = (DEFAULT_PROBE_LENGTH, DEFAULT_SEED)
    return _run(
        "scores",
        spec,
        probe,
        f"Scoring every head of {guard.plain(spec)} on the repeated-token probe",
        lambda located, progress, tick: _forward(located, progress, tick, probe=probe),
        where,
    )


_prefetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="headforms-prefetch")


def prefetch(spec: str) -> None:
    """Start loading ``spec``'s runnable model on a background thread (a private server, the
    model not loaded, and the page's prompt or probe not stored), so that torch's and the
    model's loading overlap the drawing of the page above its heatmap. A failure is left for
    the page's own call to report."""
    if guard.is_hosted():
        return
    bind_options()  # the prompt the page will run
    try:
        located = runnable_model(spec)
        key = runnable.fingerprint(located)
        if key in runnable.LOADED.keys():
            return
        store = ResultStore()
        prompt = str(
            st.session_state.get(PROMPT_KEY, st.query_params.get(PROMPT_KEY, DEFAULT_PROMPT))
        )
        if cache.pattern_key(key, prompt) in store and (
            cache.scores_key(key, DEFAULT_PROBE_LENGTH, DEFAULT_SEED) in store
        ):
            return
    except HeadformsError:
        return
    _prefetcher.submit(_load_quietly, located)


def _load_quietly(located: Any) -> None:
    with contextlib.suppress(Exception):  # the page's own call reports any failure, in one line
        runnable.runnable(located)


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


def _pattern_table(pattern: AttentionPattern, matrix: np.ndarray, kind: str) -> pd.DataFrame:
    """The heatmap's cells as rows (its CSV download)."""
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


def head_section(ctx: PageContext) -> None:
    """The Head page's "What this head does": a prompt, the head's attention on it (weights or
    pre-softmax scores), the layer's other heads one click away, and the head's scores."""
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
    pattern = attention_pattern(ctx.spec, prompt)
    if pattern is None:
        return
    if (pattern.n_layers, pattern.n_heads) != (ctx.card.n_layers, ctx.card.n_heads):
        st.info(
            f"The forward pass has {pattern.n_layers} layers × {pattern.n_heads} heads, the "
            f"analysis {ctx.card.n_layers} × {ctx.card.n_heads}: they do not describe the same "
            "heads.",
            icon=":material/info:",
        )
        return
    try:
        values = pattern.array(kind)
    except HeadformsError as error:
        st.info(guard.plain(str(error)), icon=":material/info:")
        kind, values = "weights", pattern.weights
    matrix = values[ctx.layer, ctx.head]
    scores = head_scores(ctx.spec)
    left, right = st.columns([3, 1])
    causal = (
        "causal: each query sees itself and earlier tokens (grey: masked)"
        if pattern.causal
        else ("bidirectional: every query sees every token")
    )
    key = (ctx.spec, pattern.fingerprint, prompt, ctx.layer, ctx.head, kind)
    title = f"{ctx.label}: {figures.KINDS[kind]}s on {len(pattern.tokens)} tokens"
    with left:
        show_figure(
            cached(
                "behaviour_pattern",
                key,
                lambda: figures.attention_figure(
                    pattern.tokens, matrix, title, kind, causal=pattern.causal
                ),
            ),
            f"Row = query token, column = key token; {causal}. Hover a cell for both tokens and "
            "the value.",
            key="behaviour_head_pattern",
            data=lambda: _pattern_table(pattern, matrix, kind),
            filename=f"{ctx.spec}_L{ctx.layer}H{ctx.head}_{kind}",
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


def _pick_head(spec: str, layer: int, n_heads: int, current: int) -> None:
    """Callback of the layer's head picker: select the head picked (the same one: no change)."""
    picked = st.session_state.get(f"hf_layer_heads:{spec}:{layer}:{current}")
    head = guard.whole_number(picked, 0, n_heads - 1)
    if head is not None:
        state.select_head(spec, layer, head)
