"""Loading analyses with a visible progress bar, cached across reruns and sessions.

The engine already caches results on disk; this adds an in-memory layer shared by every
session (``st.cache_resource``) keyed by the weights' fingerprint and the RoPE position, so a
changed model file is analysed again rather than served from memory. The fingerprint comes
from :func:`headforms.sources.locate` (config and file headers only, no weights), remembered
for :data:`FINGERPRINT_SECONDS` (:data:`HUB_FINGERPRINT_SECONDS` for hub ids, which cost a
request). Figures cached with :func:`cached` are keyed by the fingerprints of the models their
key names, so they follow the weights too.

In hosted mode a new analysis runs contained (:mod:`headforms.contained`: a worker process
within the server's memory and time limits, at most a few at once) and counts against the
session's budget (:func:`ui.guard.spend`); the bar shows the seconds elapsed, and leaving the
page stops waiting for it. The store is a small LRU held by ``st.cache_resource`` rather than a
``@st.cache_resource`` on ``analyze`` itself, because Streamlit records elements drawn inside a
cached function and replays them on every cache hit; the progress bar must be drawn only while
the engine really works.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import streamlit as st

from headforms import HeadformsError, ModelAnalysis, analyze, contained
from headforms.engine import ALL_SPECTRA, check_rope_position
from headforms.errors import UnavailableDataError
from headforms.sources import locate, parse_spec
from headforms.sources.specs import is_table_spec

from . import guard

LOGGER = logging.getLogger(__name__)
MAX_ANALYSES = 8
"""Analyses kept in memory (a 30-layer model's analysis is a few MB)."""
FINGERPRINT_SECONDS = 2.0
"""How long a local model's fingerprint is trusted before its files are looked at again."""
HUB_FINGERPRINT_SECONDS = 60.0
"""How long a hub model's commit is trusted before the hub is asked again."""

StoreKey = tuple[str, int]
"""``(fingerprint, rope_position)``."""


class AnalysisStore:
    """Thread-safe LRU of :class:`ModelAnalysis` keyed by ``(fingerprint, rope_position)``."""

    def __init__(self, max_entries: int = MAX_ANALYSES) -> None:
        self._items: OrderedDict[StoreKey, ModelAnalysis] = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries

    def get(self, key: StoreKey) -> ModelAnalysis | None:
        """The cached analysis, or None (marks it most recently used)."""
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key: StoreKey, analysis: ModelAnalysis) -> None:
        """Keep ``analysis``, evicting the least recently used beyond ``max_entries``."""
        with self._lock:
            self._items[key] = analysis
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)


@st.cache_resource(show_spinner=False)
def analysis_store() -> AnalysisStore:
    """The process-wide store (one per server, shared by sessions)."""
    return AnalysisStore()


@st.cache_data(ttl=FINGERPRINT_SECONDS, show_spinner=False, max_entries=256)
def _local_fingerprint(spec: str) -> str:
    return locate(spec).fingerprint


@st.cache_data(ttl=HUB_FINGERPRINT_SECONDS, show_spinner=False, max_entries=256)
def _hub_fingerprint(spec: str) -> str:
    return locate(spec).fingerprint


def fingerprint(spec: str) -> str:
    """The fingerprint of a model's weights (a refusal or bad spec: its HeadformsError, as
    :func:`headforms.sources.locate` words it)."""
    try:
        hub = parse_spec(spec).kind == "hub"
    except HeadformsError:
        hub = False  # locate gives the error (in hosted mode, the policy's first)
    return _hub_fingerprint(spec) if hub else _local_fingerprint(spec)


def load_analysis(spec: str, rope_position: int = 0) -> ModelAnalysis:
    """The analysis of ``spec`` at ``rope_position``; draws a progress bar while computing.

    Raises :class:`HeadformsError` with a one-line message on bad input or at a limit.
    """
    spec = guard.checked_spec(spec)
    rope = check_rope_position(rope_position)
    store = analysis_store()
    key = None
    if not is_table_spec(spec):  # a table is read again (cheap; its reader keeps it by mtime)
        key = (fingerprint(spec), rope)
        hit = store.get(key)
        if hit is not None:
            guard.remember(spec, hit.card.fingerprint, hit.card.n_layers, hit.card.n_heads)
            return hit
    analysis = _compute(spec, rope)
    if key is not None:
        store.put((analysis.card.fingerprint, rope), analysis)
    guard.remember(spec, analysis.card.fingerprint, analysis.card.n_layers, analysis.card.n_heads)
    return analysis


def _compute(spec: str, rope: int) -> ModelAnalysis:
    """Analyse (contained in hosted mode) under a progress bar, baseline included."""
    bar = st.progress(0.0, text=f"Loading {spec} …")
    started = time.monotonic()
    shown = {"fraction": 0.0, "text": f"Loading {spec} …", "at": started}

    def progress(done: int, total: int, message: str) -> None:
        shown["fraction"] = min(done / max(total, 1), 1.0)
        shown["text"] = f"{spec}: {message}"
        bar.progress(shown["fraction"], text=shown["text"])

    def heartbeat() -> None:
        """Show the seconds elapsed; each update is also where Streamlit stops a left page."""
        now = time.monotonic()
        if now - shown["at"] >= 1.0:
            shown["at"] = now
            bar.progress(shown["fraction"], text=f"{shown['text']} · {now - started:.0f} s")

    try:
        if guard.is_hosted():
            analysis = contained.analyze(
                spec,
                rope_position=rope,
                spectra=ALL_SPECTRA,
                progress=progress,
                check=heartbeat,
                on_new=lambda: guard.spend("analyses"),
            )
        else:
            analysis = analyze(spec, rope_position=rope, spectra=ALL_SPECTRA, progress=progress)
        bar.progress(1.0, text=f"{spec}: Gaussian baseline of the same shapes")
        try:
            analysis.baseline  # noqa: B018 - computed now, under the progress bar, not mid-page
        except UnavailableDataError:  # a published table without N: pages show it has none
            pass
    finally:
        bar.empty()
    return analysis


def try_load(spec: str, rope_position: int = 0, where: Any = None) -> ModelAnalysis | None:
    """:func:`load_analysis`, showing a failure as one ``st.error`` line (never a traceback,
    never a server path in hosted mode); None then.

    ``where``: the container for the error (default: the main area).
    """
    target = where if where is not None else st
    try:
        return load_analysis(spec, rope_position)
    except HeadformsError as error:
        target.error(guard.public_message(str(error)), icon=":material/error:")
    except Exception as error:  # an engine bug must not show a traceback to users either
        LOGGER.exception("analysis of %r failed", spec)
        detail = "the server's log has the details" if guard.is_hosted() else str(error)
        target.error(
            guard.public_message(
                f"Could not analyse {guard.shown(spec)}: {type(error).__name__}: {detail}"
            ),
            icon=":material/error:",
        )
    return None


@st.cache_resource(show_spinner=False, max_entries=256)
def _cached(kind: str, key: Hashable, weights: tuple, _build: Callable[[], Any]) -> Any:
    return _build()


def cached(kind: str, key: Hashable, build: Callable[[], Any]) -> Any:
    """``build()`` cached process-wide under ``(kind, key)``; treat the result as read-only.

    ``key`` must identify every input of ``build`` (model spec, RoPE position, options):
    e.g. ``cached("simplex", (specs, rope, color_by, selected), lambda: fig.to_json())``. The
    fingerprints of the models named in ``key`` (as this session loaded them) join the key.
    """
    return _cached(kind, key, _weights_of(key), build)


def _weights_of(key: Hashable) -> tuple:
    """``((spec, fingerprint), ...)`` of the loaded models whose spec appears in ``key``."""
    models = guard.loaded()
    found: dict[str, str] = {}
    pending: list[Any] = [key]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if item in models:
                found[item] = models[item][0]
        elif isinstance(item, tuple | list | frozenset | set):
            pending.extend(item)
    return tuple(sorted(found.items()))
