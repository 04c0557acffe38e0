"""Loading analyses with a visible progress bar, cached across reruns and sessions.

The engine already caches results on disk; this adds an in-memory layer shared by every
session (``st.cache_resource``) keyed by the weights' fingerprint and the RoPE position, so a
changed model file is analysed again rather than served from memory. The fingerprint comes
from :func:`headforms.sources.locate` (config and file headers only, no weights), remembered
for :data:`FINGERPRINT_SECONDS` (:data:`HUB_FINGERPRINT_SECONDS` for hub ids, which cost a
request). Figures cached with :func:`cached` are keyed by the fingerprints of the models their
key names, so they follow the weights too. Both are LRUs bounded in bytes
(:class:`headforms.bounded.ByteLRU`: :data:`ANALYSIS_BYTES`, :data:`CACHED_BYTES`) held by
``st.cache_resource``, rather than a ``@st.cache_resource`` on ``analyze`` itself, because
Streamlit records elements drawn inside a cached function and replays them on every cache hit;
the progress bar must be drawn only while the engine really works. A load parses and locates
the spec once (:func:`located_model`) and hands the located model on: to the engine, or in
hosted mode to the contained worker.

A model's first view needs its heads only: its core spectra (the eigenvalues of S and their
lobes, from which every per-head statistic comes); the pages that draw the other spectra ask
for them (:func:`load_analysis`'s ``spectra``: the singular values of A, the eigenvalues of L,
from the stored factors), and the Gaussian baseline is computed when a view asks for it
(:func:`load_baseline`, with its own progress line), never while the model loads.

A model that is not in memory is analysed while the script thread redraws the bar every
:data:`POLL_S` seconds with what is happening and for how long, so the page shows progress from
its first second (opening a model may import transformers for several seconds before its first
layer); each redraw is also where Streamlit stops the script of a visitor who left.

- On a private instance the analysis runs on a worker thread of the server; several sessions
  asking for the same model share one job.
- In hosted mode a new analysis (or baseline) runs contained (:mod:`headforms.hosted`: a
  worker process within the server's memory and time limits, at most a few at once, at the
  visitor's fair turn, shared by the sessions waiting for it and stopped when none is left) and
  counts against the visitor's budget (:func:`ui.guard.visitor`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

import streamlit as st

from headforms import DEFAULT_MODEL, HeadformsError, ModelAnalysis, analyze, hosted
from headforms.bounded import ByteLRU
from headforms.columns import ALL_SPECTRA
from headforms.errors import UnavailableDataError
from headforms.options import AnalysisOptions
from headforms.sources import TABLE_FORMAT, Located, Spec, locate, parse_spec

from . import guard
from .tables import expand_models

if TYPE_CHECKING:
    import pandas as pd

    from headforms.baseline import Baseline

LOGGER = logging.getLogger(__name__)
ANALYSIS_BYTES = 128 * 2**20
"""Bytes of analyses kept in memory (a 30-layer model's is a few MB, Mistral-24B's 13 MB)."""
CACHED_BYTES = 64 * 2**20
"""Bytes of figures and tables kept in memory by :func:`cached`."""
FINGERPRINT_SECONDS = 2.0
"""How long a local model's fingerprint is trusted before its files are looked at again."""
HUB_FINGERPRINT_SECONDS = 60.0
"""How long a hub model's commit is trusted before the hub is asked again."""
POLL_S = 0.25
"""How often the progress bar is redrawn while a model is analysed."""

DASHBOARD_SPECTRA = ALL_SPECTRA
"""Every spectrum the dashboard's pages read (the install's warm-up computes them all)."""
HEAD_SPECTRA = ("sv_a",)
"""The spectra the head page draws besides the core ones."""
FITS_SPECTRA = ("sv_a", "eig_l_abs")
"""The spectra the fits page's Observation 6 fits besides the core ones."""

StoreKey = tuple[str, int]
"""``(fingerprint, rope_position)`` of the located model (weights or a published table)."""


def dashboard_options(
    rope_position: int = 0, spectra: Iterable[str] = DASHBOARD_SPECTRA
) -> AnalysisOptions:
    """The options of the dashboard's analyses at ``rope_position`` with ``spectra`` besides
    the core ones (checked once, here)."""
    return AnalysisOptions(rope_position, spectra=tuple(spectra))


def dashboard_analysis(
    target: str | Located,
    options: AnalysisOptions | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> ModelAnalysis:
    """What the dashboard needs of a model to show it: every spectrum, computed (or read from
    the disk cache) now, in this process; the baseline waits for a view that needs it."""
    options = options or dashboard_options()
    return analyze(target, options=options, progress=progress, policy=guard.policy())


class LoadJob:
    """One analysis running on a worker thread, with the progress it last reported."""

    def __init__(self, spec: str) -> None:
        self.spec = spec  # as typed: what the bar names
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
        return f"{guard.shown(self.spec)}: {self.message} · {seconds:.0f} s"


class AnalysisStore:
    """Thread-safe LRU of :class:`ModelAnalysis` keyed by :data:`StoreKey`, bounded in bytes,
    and the analyses in progress on the server's worker threads."""

    def __init__(self, max_bytes: int = ANALYSIS_BYTES) -> None:
        self._items: ByteLRU[ModelAnalysis] = ByteLRU(max_bytes)
        self._jobs: dict[StoreKey, LoadJob] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="headforms-load")

    def get(self, key: StoreKey) -> ModelAnalysis | None:
        """The cached analysis, or None (marks it most recently used)."""
        return self._items.get(key)

    def put(self, key: StoreKey, analysis: ModelAnalysis) -> None:
        """Keep ``analysis``, evicting the least recently used beyond the byte budget."""
        self._items.put(key, analysis)

    def job(self, key: StoreKey, target: str | Located, options: AnalysisOptions) -> LoadJob:
        """The running analysis of ``key`` (``target`` at ``options``), started now if there is
        none with those spectra. When it finishes, its result is kept (even if the page that
        asked for it was left meanwhile)."""
        job_key = (*key, options.spectra)
        with self._lock:
            running = self._jobs.get(job_key)
            if running is not None:
                return running
            job = LoadJob(target.spec if isinstance(target, Located) else target)
            self._jobs[job_key] = job

        def work() -> None:
            try:
                analysis = dashboard_analysis(target, options, progress=job.report)
            except BaseException as error:  # delivered to every session waiting on the job
                job.future.set_exception(error)
            else:
                self.put(key, analysis)
                job.future.set_result(analysis)
            finally:
                with self._lock:
                    self._jobs.pop(job_key, None)

        self._pool.submit(work)
        return job


@st.cache_resource(show_spinner=False)
def analysis_store() -> AnalysisStore:
    """The process-wide store (one per server, shared by sessions)."""
    return AnalysisStore()


@st.cache_data(ttl=FINGERPRINT_SECONDS, show_spinner=False, max_entries=256)
def _located_local(spec: Spec) -> Located:
    return locate(spec)


@st.cache_data(ttl=HUB_FINGERPRINT_SECONDS, show_spinner=False, max_entries=256)
def _located_hub(spec: Spec) -> Located:
    return locate(spec)


def located_model(spec: str) -> Located:
    """The model ``spec`` names, parsed and located once within this server's policy (a
    refusal or bad spec: its HeadformsError, the policy's first); remembered a few seconds, a
    hub id's a minute (the spec's policy is part of the key: modes never share an entry)."""
    parsed = parse_spec(spec, guard.policy())
    return _located_hub(parsed) if parsed.kind == "hub" else _located_local(parsed)


class _Silent:
    """A progress bar that draws nothing (a download being prepared has no page to draw on)."""

    def progress(self, *args: Any, **kwargs: Any) -> None:
        """Nothing."""

    def empty(self) -> None:
        """Nothing."""


def load_analysis(
    spec: str,
    rope_position: int = 0,
    where: Any = None,
    spectra: Iterable[str] = (),
    quiet: bool = False,
) -> ModelAnalysis:
    """The analysis of ``spec`` at ``rope_position`` with ``spectra`` besides the core ones (a
    first view needs none); while it is computed, a progress bar in ``where`` (default: the
    main area; none when ``quiet``) says what is happening and for how long. The one kept in
    memory for the model has every spectrum asked for so far.

    Raises :class:`HeadformsError` with a one-line message on bad input or at a limit.
    """
    spec = guard.checked_spec(spec)
    located = located_model(spec)
    store = analysis_store()
    key = (located.fingerprint, AnalysisOptions(rope_position).rope_position)
    analysis = store.get(key)
    wanted = set(spectra)
    if analysis is not None and located.format != TABLE_FORMAT:
        if not wanted <= analysis.spectra.keys():
            wanted |= set(analysis.spectra)  # keep what the model in memory has
            analysis = None
    options = dashboard_options(rope_position, sorted(wanted & set(ALL_SPECTRA)))
    if analysis is None:
        area = where if where is not None else st
        bar = _Silent() if quiet else area.progress(0.0, text=f"{guard.shown(spec)} …")
        try:
            if guard.is_hosted():
                analysis = _contained(located, options, bar)
                store.put(key, analysis)
            else:
                analysis = _on_worker_thread(store.job(key, located, options), bar)
        finally:
            bar.empty()
    card = analysis.card
    guard.remember(spec, card.fingerprint, card.n_layers, card.n_heads)
    return analysis


def _on_worker_thread(job: LoadJob, bar: Any) -> ModelAnalysis:
    """Wait for a shared job, redrawing the bar with what it last reported."""
    while True:
        try:
            return job.future.result(timeout=POLL_S)
        except FutureTimeout:
            bar.progress(job.fraction, text=job.text())


def _contained(located: Located, options: AnalysisOptions, bar: Any) -> ModelAnalysis:
    """Hosted mode: the analysis in a contained worker process, waited for on this (the
    script's) thread, so that a visitor who leaves stops waiting and the worker is let go."""
    started = time.monotonic()
    spec = located.spec
    shown = {"fraction": 0.0, "text": f"{guard.shown(spec)}: waiting for a worker", "at": 0.0}

    def progress(done: int, total: int, message: str) -> None:
        shown["fraction"] = min(done / max(total, 1), 1.0)
        shown["text"] = f"{guard.shown(spec)}: {message}"

    def heartbeat() -> None:
        """Redraw the bar (with the seconds elapsed): where Streamlit stops a left page."""
        now = time.monotonic()
        if now - shown["at"] >= POLL_S:
            shown["at"] = now
            bar.progress(shown["fraction"], text=f"{shown['text']} · {now - started:.0f} s")

    return hosted.analyze(
        located,
        options=options,
        progress=progress,
        check=heartbeat,
        visitor=guard.visitor(),
    )


def has_baseline(analysis: ModelAnalysis) -> bool:
    """Whether the model has a Gaussian baseline (a published table without N, n has none);
    nothing is computed."""
    return bool(analysis.card.model_dim and analysis.card.head_dim)


def ensure_baseline(
    analysis: ModelAnalysis, check: Callable[[], None] | None = None
) -> Baseline | None:
    """The Gaussian baseline of ``analysis``'s shapes, computed now if no one has yet (in hosted
    mode in a contained worker, at the visitor's turn; ``check`` as in
    :func:`headforms.hosted.baseline`), or None when the model has none. Draws nothing."""
    if not has_baseline(analysis):
        return None
    if guard.is_hosted() and not _baseline_at_hand(analysis):
        hosted.baseline(analysis.card.baseline_shapes, check=check, visitor=guard.visitor())
    try:
        return analysis.baseline
    except UnavailableDataError:
        return None


def load_baseline(analysis: ModelAnalysis, where: Any = None) -> Baseline | None:
    """:func:`ensure_baseline`, under a progress line in ``where`` (default the main area) while
    it is computed: for the views that draw the baseline, and only them. A baseline refused (a
    hosted visitor's budget, a busy server, a limit) is one line there, and None: the view is
    drawn without it."""
    target = where if where is not None else st
    try:
        if not has_baseline(analysis) or _baseline_at_hand(analysis):
            return ensure_baseline(analysis)
        started = time.monotonic()
        bar = target.progress(0.0, text=BASELINE_TEXT)

        def heartbeat() -> None:
            bar.progress(0.0, text=f"{BASELINE_TEXT} · {time.monotonic() - started:.0f} s")

        try:
            return ensure_baseline(analysis, check=heartbeat)
        finally:
            bar.empty()
    except HeadformsError as error:
        message = f"Gaussian baseline not shown: {guard.public_message(str(error))}"
        target.info(guard.plain(message), icon=":material/info:")
        return None


BASELINE_TEXT = "Gaussian baseline of the same shapes"
"""What the progress line says while a baseline is computed."""


def _baseline_at_hand(analysis: ModelAnalysis) -> bool:
    """Whether the baseline needs no computation: kept by the analysis, or in the store."""
    from headforms.baseline import baseline_key
    from headforms.store import ResultStore

    if vars(analysis).get("_baseline") is not None or "baseline" in vars(analysis):
        return True
    return baseline_key(analysis.card.baseline_shapes) in ResultStore()


def baseline_heads(analysis: ModelAnalysis, where: Any = None) -> pd.DataFrame | None:
    """The Gaussian baseline's per-head table (:func:`load_baseline`), or None."""
    found = load_baseline(analysis, where)
    return None if found is None else found.heads


def baselines_of(
    analyses: Mapping[str, ModelAnalysis], where: Any = None
) -> dict[str, pd.DataFrame]:
    """The baselines' per-head tables of the models that have one, by model spec."""
    found = {spec: baseline_heads(analysis, where) for spec, analysis in analyses.items()}
    return {spec: table for spec, table in found.items() if table is not None}


def load_models(
    current: str, analysis: ModelAnalysis, specs: Iterable[str], where: Any = None
) -> dict[str, ModelAnalysis]:
    """The page's model (``current``) and every other model named in ``specs`` (table files
    expanded), analysed at RoPE position 0; a model that fails shows its one-line error in
    ``where`` (default: the main area) and is left out."""
    analyses = {current: analysis}
    target = where if where is not None else st.container()
    with target:
        expanded = expand_models(specs)
    for spec in expanded:
        if spec not in analyses:
            loaded = try_load(spec, 0, where=where)
            if loaded is not None:
                analyses[spec] = loaded
    return analyses


def load_or_message(
    spec: str, rope_position: int = 0, where: Any = None
) -> tuple[ModelAnalysis | None, str | None]:
    """:func:`load_analysis`, or ``(None, one line)`` saying why it failed (never a traceback,
    never a server path in hosted mode; raw text: escape it where it is drawn)."""
    try:
        return load_analysis(spec, rope_position, where=where), None
    except HeadformsError as error:
        return None, guard.public_message(str(error))
    except Exception as error:  # an engine bug must not show a traceback to users either
        LOGGER.exception("analysis of %r failed", spec)
        return None, guard.public_message(
            f"Could not analyse {guard.short(spec)}: {guard.unexpected(error)}"
        )


def try_load(spec: str, rope_position: int = 0, where: Any = None) -> ModelAnalysis | None:
    """:func:`load_analysis`, showing a failure as one ``st.error`` line (see
    :func:`load_or_message`); None then.

    ``where``: the container for the progress bar and the error (default: the main area).
    """
    analysis, message = load_or_message(spec, rope_position, where=where)
    if message is not None:
        (where if where is not None else st).error(guard.plain(message), icon=":material/error:")
    return analysis


@st.cache_resource(show_spinner=False)
def _cached_values() -> ByteLRU[Any]:
    """The process-wide cache of :func:`cached` (one per server, shared by sessions)."""
    return ByteLRU(CACHED_BYTES)


def cached(kind: str, key: Hashable, build: Callable[[], Any]) -> Any:
    """``build()`` cached process-wide under ``(kind, key)`` (at most :data:`CACHED_BYTES` in
    all, the least recently used dropped first); treat the result as read-only.

    ``key`` must identify every input of ``build`` (model spec, RoPE position, options):
    e.g. ``cached("simplex", (specs, rope, color_by, selected), lambda: fig.to_json())``. The
    fingerprints of the models named in ``key`` (as this session loaded them) join the key.
    """
    return _cached_values().get_or_build((kind, key, _weights_of(key)), build)


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


def warm(spec: str = DEFAULT_MODEL) -> None:
    """Analyse ``spec`` into the disk cache as the dashboard will ask for it, with every
    spectrum and its Gaussian baseline, so that no page of the default model waits (what
    ``headforms analyze MODEL --spectra all --baseline`` does too)."""
    dashboard_analysis(spec, dashboard_options()).baseline  # noqa: B018 - computed and stored
