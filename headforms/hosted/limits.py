"""Every hosted-only setting, read once into one value: :class:`Limits`.

What may be opened (the model roots, the hub allow-list, the bytes a model may download, the hub
cache), who a visitor is (the trusted proxies), and the limits of the work: per computation
(memory and wall-clock seconds of a worker, its niceness, its threads), server-wide (workers
running at once, how long a request may wait for one, the model workers kept between forward
passes: their memory in all, how long one idles) and per visitor (how many may run at once and
how many new computations of each kind may be started in a window of time).

The variables' names and defaults are :mod:`headforms.settings`' (the one list of every
``HEADFORMS_*`` variable); they are parsed only here, only when hosted mode reads them, so a
malformed hosted variable never stops a private run. A caller reads :meth:`Limits.from_env` once
per request and hands the value down (a running server follows its variables request by
request); the hosted policy is built from the same value (:meth:`.Policy.from_limits`).
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import LimitError
from ..settings import (
    ALLOWLIST_ENV,
    CONCURRENT_ENV,
    DEFAULT_CONCURRENT,
    DEFAULT_HUB_CACHE_BYTES,
    DEFAULT_INTERVENTION_PASSES,
    DEFAULT_MAX_BYTES,
    DEFAULT_MEMORY,
    DEFAULT_MODEL_IDLE_SECONDS,
    DEFAULT_MODELS_MEMORY,
    DEFAULT_NICE,
    DEFAULT_QUEUE_SECONDS,
    DEFAULT_SECONDS,
    DEFAULT_VISITOR_ANALYSES,
    DEFAULT_VISITOR_CONCURRENT,
    DEFAULT_VISITOR_FORWARD_PASSES,
    DEFAULT_VISITOR_SAMPLES,
    DEFAULT_VISITOR_SUMMARIES,
    DEFAULT_WINDOW,
    HUB_CACHE_ENV,
    INTERVENTION_PASSES_ENV,
    MAX_BYTES_ENV,
    MEMORY_ENV,
    MODEL_IDLE_ENV,
    NICE_ENV,
    QUEUE_ENV,
    ROOTS_ENV,
    SECONDS_ENV,
    THREADS_ENV,
    TRUSTED_PROXIES_ENV,
    VISITOR_ANALYSES_ENV,
    VISITOR_CONCURRENT_ENV,
    VISITOR_FORWARD_PASSES_ENV,
    VISITOR_SAMPLES_ENV,
    VISITOR_SUMMARIES_ENV,
    WINDOW_ENV,
    Settings,
    settings,
    usable_cpus,
)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Limits:
    """The hosted-only settings of one moment (see the module doc; each field's variable is
    named in :meth:`from_settings`)."""

    memory: int = DEFAULT_MEMORY
    seconds: float = DEFAULT_SECONDS
    concurrent: int = DEFAULT_CONCURRENT
    nice: int = DEFAULT_NICE
    queue_seconds: float = DEFAULT_QUEUE_SECONDS
    visitor_concurrent: int = DEFAULT_VISITOR_CONCURRENT
    visitor_analyses: int = DEFAULT_VISITOR_ANALYSES
    visitor_samples: int = DEFAULT_VISITOR_SAMPLES
    visitor_summaries: int = DEFAULT_VISITOR_SUMMARIES
    visitor_forward_passes: int = DEFAULT_VISITOR_FORWARD_PASSES
    intervention_passes: int = DEFAULT_INTERVENTION_PASSES
    window: float = DEFAULT_WINDOW
    models_memory: int = DEFAULT_MODELS_MEMORY
    model_idle_seconds: float = DEFAULT_MODEL_IDLE_SECONDS
    worker_threads: int = 1
    model_roots: tuple[Path, ...] = ()
    hub_allowlist: tuple[str, ...] = ()
    max_model_bytes: int = DEFAULT_MAX_BYTES
    hub_cache_bytes: int = DEFAULT_HUB_CACHE_BYTES
    trusted_proxies: tuple[Network, ...] = ()

    @classmethod
    def from_env(cls) -> Limits:
        """The hosted settings of the environment now (a nonsense value: a one-line
        configuration error naming its variable)."""
        return cls.from_settings(settings())

    @classmethod
    def from_settings(cls, values: Settings) -> Limits:
        """The hosted settings of a snapshot of the ``HEADFORMS_*`` variables."""
        concurrent = values.whole(CONCURRENT_ENV, DEFAULT_CONCURRENT)
        return cls(
            memory=int(values.positive(MEMORY_ENV, DEFAULT_MEMORY)),
            seconds=values.positive(SECONDS_ENV, DEFAULT_SECONDS),
            concurrent=concurrent,
            nice=_niceness(values),
            queue_seconds=values.positive(QUEUE_ENV, DEFAULT_QUEUE_SECONDS),
            visitor_concurrent=values.whole(VISITOR_CONCURRENT_ENV, DEFAULT_VISITOR_CONCURRENT),
            visitor_analyses=values.whole(
                values.renamed(VISITOR_ANALYSES_ENV), DEFAULT_VISITOR_ANALYSES
            ),
            visitor_samples=values.whole(
                values.renamed(VISITOR_SAMPLES_ENV), DEFAULT_VISITOR_SAMPLES
            ),
            visitor_summaries=values.whole(VISITOR_SUMMARIES_ENV, DEFAULT_VISITOR_SUMMARIES),
            visitor_forward_passes=values.whole(
                VISITOR_FORWARD_PASSES_ENV, DEFAULT_VISITOR_FORWARD_PASSES
            ),
            intervention_passes=values.whole(INTERVENTION_PASSES_ENV, DEFAULT_INTERVENTION_PASSES),
            window=values.positive(WINDOW_ENV, DEFAULT_WINDOW),
            models_memory=values.models_memory,
            model_idle_seconds=values.positive(MODEL_IDLE_ENV, DEFAULT_MODEL_IDLE_SECONDS),
            worker_threads=_worker_threads(values, concurrent),
            model_roots=_roots(values),
            hub_allowlist=_items(values.raw(ALLOWLIST_ENV)),
            max_model_bytes=values.byte_count(MAX_BYTES_ENV, DEFAULT_MAX_BYTES),
            hub_cache_bytes=values.byte_count(HUB_CACHE_ENV, DEFAULT_HUB_CACHE_BYTES),
            trusted_proxies=parse_networks(values.raw(TRUSTED_PROXIES_ENV)),
        )


def _niceness(values: Settings) -> int:
    """``HEADFORMS_ANALYSIS_NICE``: the niceness (0-19) added to each worker."""
    raw = values.raw(NICE_ENV)
    if not raw:
        return DEFAULT_NICE
    if not raw.isdigit() or int(raw) > 19:
        raise LimitError(
            f"{NICE_ENV}={raw!r} is not a niceness from 0 to 19 (server configuration)"
        )
    return int(raw)


def _worker_threads(values: Settings, concurrent: int) -> int:
    """Threads of one worker: ``HEADFORMS_THREADS`` when set, else the usable CPUs shared among
    the workers that may run at once (at least one each), so that a busy server never runs more
    compute threads than it has cores."""
    if values.raw(THREADS_ENV):
        return values.threads
    return max(1, usable_cpus() // concurrent)


def _roots(values: Settings) -> tuple[Path, ...]:
    """``HEADFORMS_MODEL_ROOTS``: the directories local models may come from
    (``os.pathsep``-separated), as real paths."""
    return tuple(
        Path(os.path.realpath(os.path.expanduser(r.strip())))
        for r in values.raw(ROOTS_ENV).split(os.pathsep)
        if r.strip()
    )


def _items(raw: str) -> tuple[str, ...]:
    """The items of a comma-separated list, blanks stripped."""
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def parse_networks(raw: str) -> tuple[Network, ...]:
    """``HEADFORMS_TRUSTED_PROXIES``: comma-separated addresses or networks (``127.0.0.1,
    10.0.0.0/8``); unset: none."""
    networks = []
    for item in _items(raw):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError as exc:
            raise LimitError(
                f"{TRUSTED_PROXIES_ENV} has {item[:60]!r}, which is not an address or a "
                "network (server configuration)"
            ) from exc
    return tuple(networks)
