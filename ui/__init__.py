"""Streamlit-only helpers of the dashboard: shared sidebar and state, the computation gateway,
clickable plots.

How a page is written (pages stay thin: no math, no file I/O)::

    import streamlit as st
    from headforms.figures import head as figures
    from ui import cached, page_context, show_figure

    ctx = page_context()              # handed over by app.py: model, RoPE position, layer, head
    st.title("Spectra")
    fig = cached("spectra", (ctx.model, ctx.layer, ctx.head),
                 lambda: figures.eigenvalue_histogram(ctx.analysis.spectra["eig_s"][ctx.row]))
    show_figure(fig, "One line saying what the figure shows.")

A new page is one file in ``pages/`` plus one ``st.Page(...)`` line in ``app.py``'s ``main()``
(its ``pages`` dict).
Call ``page_context()`` first on every page, even one that needs no model: on a fresh server
Streamlit may run a page file without ``app.py`` (legacy ``pages/`` mode, also in every
``AppTest`` run); ``page_context()`` detects that and reruns the page through ``app.py``.

**One road for computations.** Every computation goes through the gateway (:mod:`ui.gateway`,
held by :mod:`ui.compute`) as a typed kind: one interface with a local and a hosted
implementation, chosen once; a page never asks whether the server is hosted. In hosted mode the
gateway runs each kind at the visitor's turn, charged to its budget and within the server's
limits, and shares one job between the sessions that ask for the same thing. A page asks for a
model with ``load_analysis``/``try_load``, a baseline with ``ui.loading.load_baseline``, a sweep
with ``ui.motion.load_sweep``, a forward pass with ``ui.behaviour.attention_pattern``/
``head_scores``, an edit with ``ui.interventions.run_intervention``; anything computed from
results at hand (fits, clusterings, projections, summaries, bootstrap intervals, samplings,
parity changes: whatever takes more than a few tens of milliseconds of CPU) with
``ui.compute.derive(Kind(...))`` (:mod:`ui.gateway.derived`); any other kind is a
``ui.gateway.Computation`` run by ``ui.compute.run(request, ProgressBar(label))`` (the gateway's
package doc says how to add one). ``cached`` keeps only what a page builds from results already
at hand: figures, and tables that select or join rows (the views listed in
``tests/unit/ui/test_one_road.py``, which fails when a page or a ``ui`` module calls any other
function of the library's computing modules, or scikit-learn, scipy or torch, itself). A file
built from results when a visitor downloads it (the gallery) goes through
``ui.compute.in_server(budget, build)``; a download made from a result through
``ui.compute.later(request, use)`` (the session then keeps no result between its runs).

API
---
``page_context() -> PageContext`` (:mod:`ui.sidebar`)
    The context ``app.py`` drew in the sidebar and handed to this run's page (run-scoped, never
    in session state); stops the page (the error is already shown) if the model failed to
    load. Fields: ``spec``, ``rope_position``, ``layer``, ``head``, ``color_by``, ``analysis``
    (:class:`headforms.ModelAnalysis`), ``tolerance``; properties ``card``, ``heads``, ``row``
    (index of the selected head in ``heads`` and every ``spectra`` array), ``head_row``,
    ``selected`` (``(spec, layer, head)`` as in figures' ``selected=``), ``model`` (``(spec,
    weights' fingerprint, RoPE position)``: a cache key's part for this model), ``label``
    (``"Layer 3 · Head 5"``).
``head_label(layer, head)``, ``model_label(spec)``
    How heads and models are named in the UI.
``other_models(where, label, key, exclude, help=None)``
    A page's picker of further models (bundled ones, and any typed or linked).
``load_analysis(spec, rope_position=0)``, ``try_load(spec, rope_position=0, where=None)``
    (:mod:`ui.loading`) Any other model (e.g. a comparison page), through the gateway: kept by
    the weights' fingerprint and RoPE position, with a per-layer ``st.progress`` while
    computing. ``try_load`` shows a failure as ``st.error`` and returns None.
    ``ui.loading.models_key(analyses)``: the fingerprints of several models, for a cache key.
``derive(Kind(...))`` (:mod:`ui.compute`)
    A computation from results at hand (:mod:`ui.gateway.derived`: ``Observation3Fits``,
    ``SpectraClusters``, ``GeometryCorrelations``, ``Theorem5Samples``, ...), shared and kept
    by content; nothing drawn unless it waits for its turn (then one line).
``cached(kind, key, build)`` (:mod:`ui.compute`)
    ``build()`` kept process-wide under ``(kind, key)`` in the gateway's cache (bounded in
    bytes in all and per visitor): use for figures and exports built from results at hand (no
    computation: that is a kind); ``key`` must name every input, the weights included
    (``ctx.model``, ``models_key(...)``), and the options.
    ``ahead([(kind, key, build), ...])`` builds the same in the background for the visitor's
    probable next step (the Head page: the next and previous heads' figures), so that the step
    finds them kept; cache a figure as its ``PlotPayload`` (serialised once).
``clickable_plot(figure_or_payload, key, on_click=None, height=None, caption=None, data=None,
filename=None, scroll_zoom=False)`` (:mod:`ui.plot`)
    Every figure is drawn by this one component: clicks reach Python (``on_click(customdata)``
    runs as a callback; overlapping markers open a chooser), the toolbar downloads SVG and PNG,
    and a CSV button below downloads ``data`` (default: the figure's points). Cache
    ``PlotPayload.of(fig)`` (the serialised figure) with ``cached`` for fast reruns. Pass
    ``on_click=select_from_customdata`` to make points (customdata ``[model, layer, head]``)
    select a head. The plot's div carries ``data-hf-plot="<key>"``.
``show_figure(fig, caption, key=None, data=None)``, ``metric_vs_baseline(label, value,
baseline)``, ``jump_toggle()``, ``go_to_head_box(ctx)``, ``fit_to_column(fig, zoom_out=1.0)``
(:mod:`ui.widgets`)
    A figure that is not clicked + its one-line caption + CSV; ``st.metric`` with the Gaussian
    baseline as delta; the shared "open the head page on click" switch; the "go to L·H" box;
    legend below / 3D camera farther for figures shown in half-width columns.
Guards (:mod:`ui.guard`)
    What the dashboard accepts from a browser and shows back: ``whole_number``,
    ``finite_number``, ``checked_spec`` / ``spec_or_none``, ``click_target`` (a head of a
    model this session loaded), ``visitor`` (who budgets and memory are counted for),
    ``public_message`` (no server path in hosted mode), ``plain`` (a name as text, never
    Markdown nor a link).
State (:mod:`ui.state`)
    Keys ``MODEL_KEY``, ``ROPE_KEY``, ``LAYER_KEY``, ``HEAD_KEY``, ``COLOR_KEY``,
    ``OVERLAY_KEY`` (extra models on the simplex), ``FRAME_KEY`` (what the 3D view frames);
    ``ROPE_KEY`` and ``TOLERANCE_KEY`` are ``"rope"`` and ``"tol"``, parameters Streamlit binds.
    Change the selection only in callbacks: ``select_head(spec, layer, head, jump=False)``,
    ``select_from_customdata(point)``, ``step_head(step, n_layers, n_heads)``. The models this
    session loaded (what a click may select): ``loaded_models()``.
The view in the URL (:mod:`ui.links`, kinds of parameter in :mod:`ui.link_kinds`)
    Every option is a URL parameter whose names and values keep today's links. Where Streamlit
    writes a widget's value as links do (numbers, texts, choices shown as written), the widget's
    key is the parameter's name, with its default and ``bind="query-params"``; call
    ``links.check(links.number(name, name, low, high, default, what, label))`` (or ``choice``,
    ``subset``, ``wholes``, ...) before drawing it, so a link's bad value is corrected with a
    notice (:mod:`ui.notices`) rather than dropped. Otherwise (a toggle, a labelled choice, a
    range, a name other pages use for other facts) bind it with ``links`` before its widget:
    ``links.bind(links.choice(name, key, options, default, what))`` (and ``flag``, ``whole``,
    ``specs``, ...); the URL is written at the end of the run. End a page early with
    ``links.stop_page()``, not ``st.stop()``.
"""

from . import guard
from .compute import cached
from .loading import load_analysis, try_load
from .plot import PlotPayload, clickable_plot
from .sidebar import (
    PageContext,
    head_label,
    model_label,
    other_models,
    page_context,
    render_sidebar,
)
from .state import select_from_customdata, select_head, step_head
from .widgets import fit_to_column, go_to_head_box, jump_toggle, metric_vs_baseline, show_figure

__all__ = [
    "PageContext",
    "PlotPayload",
    "cached",
    "clickable_plot",
    "fit_to_column",
    "go_to_head_box",
    "head_label",
    "jump_toggle",
    "load_analysis",
    "metric_vs_baseline",
    "model_label",
    "other_models",
    "page_context",
    "render_sidebar",
    "select_from_customdata",
    "select_head",
    "show_figure",
    "step_head",
    "try_load",
]

guard.protect_session()  # before any page's widgets: also for a page run without app.py
