"""Loading analyses with a visible progress bar, cached across reruns and sessions.

The engine already caches results on disk; this adds an in-memory layer shared by every
session (``st.cache_resource``) keyed by ``(spec, rope_position)``. The store is a small LRU
held by ``st.cache_resource`` rather than a ``@st.cache_resource`` on ``analyze`` itself,
because Streamlit records elements drawn inside a cached function and replays them on every
cache hit; the progress bar must be drawn only while the engine really works.

A model that is not in memory is analysed on a worker thread while the script thread redraws
the bar every :data:`POLL_S` seconds with what is happening and for how long, so the page shows
progress from its first second (opening a model may import transformers for several seconds
before its first layer). Several sessions asking for the same model share one job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import streamlit as st

from headforms import DEFAULT_MODEL, HeadformsError, ModelAnalysis, analyze
from headforms.engine import ALL_SPECTRA
from headforms.errors import UnavailableDataError

LOGGER = logging.getLogger(__name__)
MAX_ANALYSES = 8
"""Analyses kept in memory (a 30-layer model's analysis is a few MB)."""

POLL_S = 0.25
"""How often the progress bar is redrawn while a model is analysed."""

DASHBOARD_SPECTRA = ALL_SPECTRA
"""The spectra the dashboard's pages read (the head page needs sv_a)."""


def dashboard_analysis(
    spec: str,
    rope_position: int = 0,
    progress: Callable[[int, int, str], None] | None = None,
) -> ModelAnalysis:
    """What the dashboard needs of a model: every spectrum and the Gaussian baseline, computed
    (or read from the disk cache) now. The install's warm-up runs exactly this."""
    analysis = analyze(
        spec, rope_position=rope_position, spectra=DASHBOARD_SPECTRA, progress=progress
    )
    if progress is not None:
        progress(1, 1, "Gaussian baseline of the same shapes")
    try:
        analysis.baseline  # noqa: B018 - computed now, under the progress bar, not mid-page
    except UnavailableDataError:  # a published table without N: pages show it has none
        pass
    return analysis


class LoadJob:
    """One analysis running on a worker thread, with the progress it last reported."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.started = time.monotonic()
        self.fraction = 0.0
        self.message = "opening the model (the first one also imports its libraries)"
        self.future: Future[ModelAnalysis] = Future()

    def report(self, done: int, total: int, message: str) -> None:
        """The engine's progress callback (called on the worker thread)."""
        self.fraction = min(done / max(total, 1), 1.0)
        self.message = message

    def text(self) -> str:
        """What the progress bar says now."""
        seconds = time.monotonic() - self.started
        return f"{self.spec}: {self.message} · {seconds:.0f} s"


class AnalysisStore:
    """Thread-safe LRU of :class:`ModelAnalysis` keyed by ``(spec, rope_position)``, and the
    analyses in progress."""

    def __init__(self, max_entries: int = MAX_ANALYSES) -> None:
        self._items: OrderedDict[tuple[str, int], ModelAnalysis] = OrderedDict()
        self._jobs: dict[tuple[str, int], LoadJob] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="headforms-load")
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

    def job(self, key: tuple[str, int]) -> LoadJob:
        """The running analysis of ``key``, started now if there is none. When it finishes,
        its result is kept (even if the page that asked for it was left meanwhile)."""
        with self._lock:
            running = self._jobs.get(key)
            if running is not None:
                return running
            job = LoadJob(key[0])
            self._jobs[key] = job

        def work() -> None:
            try:
                analysis = dashboard_analysis(key[0], key[1], progress=job.report)
            except BaseException as error:  # delivered to every session waiting on the job
                job.future.set_exception(error)
            else:
                self.put(key, analysis)
                job.future.set_result(analysis)
            finally:
                with self._lock:
                    self._jobs.pop(key, None)

        self._pool.submit(work)
        return job


@st.cache_resource(show_spinner=False)
def analysis_store() -> AnalysisStore:
    """The process-wide store (one per server, shared by sessions)."""
    return AnalysisStore()


def load_analysis(spec: str, rope_position: int = 0, where: Any = None) -> ModelAnalysis:
    """The analysis of ``spec`` at ``rope_position``; while it is computed, a progress bar in
    ``where`` (default: the main area) says what is happening and for how long.

    Raises :class:`HeadformsError` with the engine's one-line message on bad input.
    """
    key = (spec.strip(), int(rope_position))
    store = analysis_store()
    hit = store.get(key)
    if hit is not None:
        return hit
    job = store.job(key)
    bar = (where if where is not None else st).progress(0.0, text=job.text())
    try:
        while True:
            try:
                return job.future.result(timeout=POLL_S)
            except FutureTimeout:
                bar.progress(job.fraction, text=job.text())
    finally:
        bar.empty()


def try_load(spec: str, rope_position: int = 0, where: Any = None) -> ModelAnalysis | None:
    """:func:`load_analysis`, showing a failure as ``st.error`` (never a traceback); None then.

    ``where``: the container for the progress bar and the error (default: the main area).
    """
    target = where if where is not None else st
    try:
        return load_analysis(spec, rope_position, where=where)
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


def warm(spec: str = DEFAULT_MODEL) -> None:
    """Analyse ``spec`` into the disk cache as the dashboard will ask for it (install step:
    ``python -m ui.loading``), so that the first page needs no wait."""
    dashboard_analysis(spec)


if __name__ == "__main__":
    import sys

    warm(*sys.argv[1:2])
