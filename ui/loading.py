"""Loading analyses with a visible per-layer progress bar, cached across reruns and sessions.

The engine already caches results on disk; this adds an in-memory layer shared by every
session (``st.cache_resource``) keyed by ``(spec, rope_position)``. The store is a small LRU
held by ``st.cache_resource`` rather than a ``@st.cache_resource`` on ``analyze`` itself,
because Streamlit records elements drawn inside a cached function and replays them on every
cache hit; the progress bar must be drawn only while the engine really works.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import streamlit as st

from headforms import HeadformsError, ModelAnalysis, analyze
from headforms.engine import ALL_SPECTRA
from headforms.errors import UnavailableDataError

LOGGER = logging.getLogger(__name__)
MAX_ANALYSES = 8
"""Analyses kept in memory (a 30-layer model's analysis is a few MB)."""


class AnalysisStore:
    """Thread-safe LRU of :class:`ModelAnalysis` keyed by ``(spec, rope_position)``."""

    def __init__(self, max_entries: int = MAX_ANALYSES) -> None:
        self._items: OrderedDict[tuple[str, int], ModelAnalysis] = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries

    def get(self, key: tuple[str, int]) -> ModelAnalysis | None:
        """The cached analysis, or None (marks it most recently used)."""
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key: tuple[str, int], analysis: ModelAnalysis) -> None:
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


def load_analysis(spec: str, rope_position: int = 0) -> ModelAnalysis:
    """The analysis of ``spec`` at ``rope_position``; draws a progress bar while computing.

    Raises :class:`HeadformsError` with the engine's one-line message on bad input.
    """
    key = (spec.strip(), int(rope_position))
    store = analysis_store()
    hit = store.get(key)
    if hit is not None:
        return hit
    bar = st.progress(0.0, text=f"Loading {key[0]} …")

    def progress(done: int, total: int, message: str) -> None:
        bar.progress(min(done / max(total, 1), 1.0), text=f"{key[0]}: {message}")

    try:
        analysis = analyze(key[0], rope_position=key[1], spectra=ALL_SPECTRA, progress=progress)
        bar.progress(1.0, text=f"{key[0]}: Gaussian baseline of the same shapes")
        try:
            analysis.baseline  # noqa: B018 - computed now, under the progress bar, not mid-page
        except UnavailableDataError:  # a published table without N: pages show it has none
            pass
    finally:
        bar.empty()
    store.put(key, analysis)
    return analysis


def try_load(spec: str, rope_position: int = 0, where: Any = None) -> ModelAnalysis | None:
    """:func:`load_analysis`, showing a failure as ``st.error`` (never a traceback); None then.

    ``where``: the container for the error (default: the main area).
    """
    target = where if where is not None else st
    try:
        return load_analysis(spec, rope_position)
    except HeadformsError as error:
        target.error(str(error), icon=":material/error:")
    except Exception as error:  # an engine bug must not show a traceback to users either
        LOGGER.exception("analysis of %r failed", spec)
        target.error(
            f"Could not analyse {spec!r}: {type(error).__name__}: {error}",
            icon=":material/error:",
        )
    return None


@st.cache_resource(show_spinner=False, max_entries=256)
def _cached(kind: str, key: Hashable, _build: Callable[[], Any]) -> Any:
    return _build()


def cached(kind: str, key: Hashable, build: Callable[[], Any]) -> Any:
    """``build()`` cached process-wide under ``(kind, key)``; treat the result as read-only.

    ``key`` must identify every input of ``build`` (model spec, RoPE position, options):
    e.g. ``cached("simplex", (specs, rope, color_by, selected), lambda: fig.to_json())``.
    """
    return _cached(kind, key, build)
