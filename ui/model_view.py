"""The Head page's "Every head at a glance": every head's attention on the page's prompt as a
layer x head grid of small heatmaps (as BertViz's model view shows it), the selected head
outlined; a click on a thumbnail opens that head.

It draws the forward pass the page's heatmap has drawn (:func:`ui.behaviour.head_section`
returns it: one :class:`ui.gateway.PromptAttention` of the prompt gives every head's pattern),
so the grid costs no second pass.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from headforms.behaviour import DEFAULT_PROMPT, AttentionPattern
from headforms.figures.model_view import MAX_CELLS, model_view_figure, outlined

from .behaviour import PRE_SOFTMAX_KEY, PROMPT_KEY
from .compute import cached
from .plot import PlotPayload, clickable_plot
from .sidebar import PageContext
from .state import select_from_customdata

KEY = "model_view"
"""The plot's key (``div[data-hf-plot="model_view"]``)."""


def every_head_section(ctx: PageContext, pattern: AttentionPattern) -> None:
    """The grid of every head's ``pattern`` on the page's prompt (the one the page's heatmap
    drew: weights, or the pre-softmax scores when the page shows them); nothing when the
    pattern does not describe the model's heads (the page's heatmap has said so)."""
    if (pattern.n_layers, pattern.n_heads) != (ctx.card.n_layers, ctx.card.n_heads):
        return
    prompt = str(st.session_state.get(PROMPT_KEY, DEFAULT_PROMPT))
    kind = "scores" if st.session_state.get(PRE_SOFTMAX_KEY) else "weights"
    if kind == "scores" and pattern.scores is None:
        kind = "weights"
    values, causal, tokens = pattern.array(kind), pattern.causal, len(pattern.tokens)
    st.subheader("Every head at a glance")
    grid = cached(  # built once per prompt; a step to another head frames another thumbnail
        f"{KEY}_grid",
        (ctx.spec, pattern.fingerprint, prompt, kind),
        lambda: model_view_figure(values, ctx.spec, None, kind, causal=causal, n_tokens=tokens),
    )
    figure = cached(
        KEY,
        (ctx.spec, pattern.fingerprint, prompt, kind, ctx.layer, ctx.head),
        lambda: PlotPayload.of(outlined(go.Figure(grid), (ctx.layer, ctx.head))),
    )
    pooled = (
        f" (each pooled to {MAX_CELLS} × {MAX_CELLS} cells: block means)"
        if tokens > MAX_CELLS
        else ""
    )
    clickable_plot(
        figure,
        key=KEY,
        on_click=select_from_customdata,
        caption=f"Every head of the model on the prompt above, from the same forward pass: one "
        f"small heatmap per head{pooled}, rows = layers, columns = heads, each as the head's "
        "heatmap above (row = query, column = key) on one scale; the selected head is outlined. "
        "Click a head to open it.",
        filename=f"{ctx.spec}_every_head_{kind}",
    )
