"""The dashboard's side of the computation gateway (:mod:`ui.gateway`): the server's one
instance, progress drawn while it works, the figure cache, downloads made when clicked.

- :func:`gateway`: the server's gateway, chosen once, on first use: hosted when
  ``HEADFORMS_HOSTED`` is on (:class:`ui.gateway.HostedGateway`), else local. The one place the
  dashboard's computations depend on hosted mode.
- :func:`run`: a computation's result for this session's visitor (:func:`ui.guard.visitor`),
  drawing its progress with a :class:`ProgressBar` or a :class:`ProgressLine`; :func:`peek`:
  the result if nothing needs computing; :func:`derive`: a computation from results at hand
  (:mod:`ui.gateway.derived`: fits, clusterings, summaries, bootstraps), one line drawn only
  while it waits.
- :func:`cached`: what a page builds itself from results at hand (figures, and tables that only
  select or join), kept in the same cache, under a key naming every input (the weights'
  fingerprints included: ``PageContext.model``); :func:`ahead`: the same, built in the
  background for the visitor's probable next step.
- :func:`in_server`: a file built from results at hand when a visitor downloads it (the
  gallery), at the visitor's turn and charged to its budget when hosted.
- :func:`later`: a download's data made when it is clicked, from a computation's result asked
  again then, so that no session keeps a result alive between its runs.

The gateway is held by ``st.cache_resource`` rather than caching each result with a
``@st.cache_resource`` function: Streamlit replays what a cached function drew on every hit,
and a progress bar must be drawn only while a computation really runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable
from types import TracebackType
from typing import Any, TypeVar

import streamlit as st

from headforms.hosted import Budget
from headforms.progress import Progress
from headforms.settings import settings

from . import guard
from .gateway import Computation, Derived, Gateway, HostedGateway, LocalGateway

R = TypeVar("R")
T = TypeVar("T")


@st.cache_resource(show_spinner=False)
def _gateway(hosted: bool) -> Gateway:
    return HostedGateway() if hosted else LocalGateway()


def gateway() -> Gateway:
    """The server's gateway (one per server process: every session shares its cache and
    jobs). Keyed by the setting only so that tests may switch hosted mode in one process."""
    return _gateway(settings().hosted)


def run(computation: Computation[R], progress: Progress | None = None) -> R:
    """``computation``'s result for this session's visitor; ``progress`` is called while it is
    computed (where Streamlit stops the script of a visitor who left). Raises what the
    computation raised (a one-line HeadformsError for bad input or at a limit)."""
    return gateway().run(computation, progress, visitor=guard.visitor())


def peek(computation: Computation[R]) -> R | None:
    """``computation``'s result if nothing needs computing (cached, or stored), else None."""
    return gateway().peek(computation, visitor=guard.visitor())


def derive(computation: Derived[R], where: Any = None) -> R:
    """``computation``'s result (a :class:`ui.gateway.Derived`: fits, clusterings, summaries,
    bootstraps from results at hand), for this session's visitor. Usually quick: nothing is
    drawn unless it has to wait (its turn at a hosted server), then one caption line in
    ``where`` (``Computing the lobe fits: waiting for its turn … 3 s``), gone when it ends."""
    line = _WaitingLine(f"Computing {computation.what}", where)
    try:
        return run(computation, line)
    finally:
        line.clear()


def cached(kind: str, key: Hashable, build: Callable[[], T], label: str | None = None) -> T:
    """``build()`` kept process-wide under ``(kind, key)`` in the gateway's cache (bounded in
    bytes, per visitor too; the least recently used dropped first); treat it as read-only.

    ``key`` must name every input of ``build``, the weights included: e.g.
    ``cached("simplex", (ctx.model, color_by, selected), lambda: fig)``, where ``ctx.model`` is
    ``(spec, fingerprint, RoPE position)``; other models by :func:`ui.loading.models_key`.
    ``label``: what building it does (a figure of every head at every point: seconds), shown
    as one line while it is built, never when it is kept.
    """
    if label is not None:
        build = _saying(label, build)
    return gateway().cached((kind, key), build, visitor=guard.visitor())


def _saying(label: str, build: Callable[[], T]) -> Callable[[], T]:
    """``build``, under one caption line ``label …`` while it runs."""

    def building() -> T:
        line = st.empty()
        line.caption(f"{label} …")
        try:
            return build()
        finally:
            line.empty()

    return building


def ahead(builds: Iterable[tuple[str, Hashable, Callable[[], Any]]]) -> None:
    """Start building, in the background, what the visitor's probable next step will ask
    :func:`cached` for (``(kind, key, build)`` as for :func:`cached`: e.g. the next and previous
    heads' figures), so that the step finds them kept. Nothing waits for it; a batch is dropped
    when the server has guesses waiting already (:meth:`ui.gateway.Gateway.ahead`)."""
    gateway().ahead([((kind, key), build) for kind, key, build in builds], visitor=guard.visitor())


def in_server(budget: Budget, build: Callable[[], T]) -> T:
    """``build()``: a file built from results at hand (bounded by their sizes), run now; in
    hosted mode at the visitor's turn at the server's slots and charged to its ``budget``."""
    return gateway().in_server(budget, build, visitor=guard.visitor())


def later(computation: Computation[R], use: Callable[[R], T]) -> Callable[[], T]:
    """``use(result)`` of ``computation``, made when called (a download button's ``data``):
    the result is asked of the gateway then (its cached copy, else the store's), so the session
    keeps only the request (a few small values) between its runs, not the result."""
    server, visitor = gateway(), guard.visitor()
    return lambda: use(server.run(computation, visitor=visitor))


class ProgressBar:
    """A progress bar in ``where`` (default: the main area) for a computation: ``label …``
    first, then ``label: message · 12 s`` as it reports (``messages=False``: ``label · 12 s``,
    the bar at its start); nothing drawn when ``quiet``. Use it as a context manager: the bar
    goes when the computation ends."""

    def __init__(
        self, label: str, where: Any = None, *, messages: bool = True, quiet: bool = False
    ) -> None:
        area = where if where is not None else st
        self._label, self._messages = label, messages
        self._started = time.monotonic()
        first = f"{label} …" if messages else label
        self._bar = None if quiet else area.progress(0.0, text=first)

    def __call__(self, done: int, total: int, message: str) -> None:
        if self._bar is None:
            return
        seconds = time.monotonic() - self._started
        fraction = min(done / max(total, 1), 1.0) if self._messages else 0.0
        text = f"{self._label}: {message}" if self._messages else self._label
        self._bar.progress(fraction, text=f"{text} · {seconds:.0f} s")

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.empty()


class _WaitingLine:
    """One caption line drawn on the first progress report (a wait long enough to be seen: the
    gateway reports every :data:`ui.gateway.POLL_S`), cleared at the end."""

    def __init__(self, label: str, where: Any = None) -> None:
        self._where = where if where is not None else st
        self._label = label
        self._line: Any = None
        self._started = time.monotonic()

    def __call__(self, done: int, total: int, message: str) -> None:
        if self._line is None:
            self._line = self._where.empty()
        seconds = time.monotonic() - self._started
        self._line.caption(f"{self._label}: {guard.plain(message)} … {seconds:.0f} s")

    def clear(self) -> None:
        if self._line is not None:
            self._line.empty()


class ProgressLine:
    """One caption line in ``where`` for a computation that may fail alone (a forward pass):
    ``label …``, then ``label: message … 3 s``; afterwards the same line holds its one-line
    failure (:meth:`info`, :meth:`error`) or nothing (:meth:`clear`)."""

    def __init__(self, label: str, where: Any = None) -> None:
        self._line = (where if where is not None else st).empty()
        self._label = label
        self._started = time.monotonic()

    def show(self) -> None:
        """Draw the line (before the computation starts)."""
        self._line.caption(f"{self._label} …")

    def __call__(self, done: int, total: int, message: str) -> None:
        seconds = time.monotonic() - self._started
        self._line.caption(f"{self._label}: {guard.plain(message)} … {seconds:.0f} s")

    def info(self, text: str) -> None:
        """The line becomes one information line (escaped)."""
        self._line.info(guard.plain(text), icon=":material/info:")

    def error(self, text: str) -> None:
        """The line becomes one error line (escaped)."""
        self._line.error(guard.plain(text), icon=":material/error:")

    def clear(self) -> None:
        """The line goes."""
        self._line.empty()
