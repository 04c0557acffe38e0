"""Every ``HEADFORMS_*`` variable: its name and default, all listed here; the general ones read.

:func:`settings` takes a snapshot of the environment (read again at each call, so a running
server follows its variables); each general value is parsed when it is asked for, with its own
one-line error. The hosted-only variables (model roots, allow-list, download and worker limits,
visitor budgets, trusted proxies) are parsed by :class:`headforms.hosted.limits.Limits`, with
the parsers below, only when hosted mode reads them, so a malformed one never stops a private
run. Hub variables
(``HF_*``) are huggingface_hub's and are read by :mod:`headforms.sources.hub` when a model is
located.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .errors import LimitError, NotAllowedError, OptionError

PREFIX = "HEADFORMS_"

CACHE_DIR_ENV = "HEADFORMS_CACHE_DIR"
THREADS_ENV = "HEADFORMS_THREADS"
HUB_RANGES_ENV = "HEADFORMS_HUB_RANGES"
HOSTED_ENV = "HEADFORMS_HOSTED"
ROOTS_ENV = "HEADFORMS_MODEL_ROOTS"
ALLOWLIST_ENV = "HEADFORMS_HUB_ALLOWLIST"
MAX_BYTES_ENV = "HEADFORMS_MAX_MODEL_BYTES"
HUB_CACHE_ENV = "HEADFORMS_HUB_CACHE_BYTES"
MEMORY_ENV = "HEADFORMS_ANALYSIS_MEMORY"
SECONDS_ENV = "HEADFORMS_ANALYSIS_SECONDS"
CONCURRENT_ENV = "HEADFORMS_ANALYSIS_CONCURRENT"
NICE_ENV = "HEADFORMS_ANALYSIS_NICE"
QUEUE_ENV = "HEADFORMS_QUEUE_SECONDS"
VISITOR_CONCURRENT_ENV = "HEADFORMS_VISITOR_CONCURRENT"
VISITOR_ANALYSES_ENV = "HEADFORMS_VISITOR_ANALYSES"
VISITOR_SAMPLES_ENV = "HEADFORMS_VISITOR_SAMPLES"
VISITOR_SUMMARIES_ENV = "HEADFORMS_VISITOR_SUMMARIES"
WINDOW_ENV = "HEADFORMS_VISITOR_WINDOW"
RENAMED = {
    VISITOR_ANALYSES_ENV: "HEADFORMS_SESSION_ANALYSES",
    VISITOR_SAMPLES_ENV: "HEADFORMS_SESSION_SAMPLES",
}
"""The names these budgets had when they were counted per session; an instance configured with
an old name keeps its limit (the new name wins when both are set)."""
TRUSTED_PROXIES_ENV = "HEADFORMS_TRUSTED_PROXIES"
SERVER_PROXIES_ENV = "FORWARDED_ALLOW_IPS"
"""Not ours: the list of proxies whose ``X-Forwarded-For`` Streamlit's server (uvicorn) believes;
the start commands set it to ``HEADFORMS_TRUSTED_PROXIES`` (:mod:`headforms.hosted.visitors`)."""
ALLOWED_HOSTS_ENV = "HEADFORMS_ALLOWED_HOSTS"
FRAME_ANCESTORS_ENV = "HEADFORMS_FRAME_ANCESTORS"
MAX_TABLE_BYTES_ENV = "HEADFORMS_MAX_TABLE_BYTES"
MAX_TABLE_ROWS_ENV = "HEADFORMS_MAX_TABLE_ROWS"
MAX_TABLE_MODELS_ENV = "HEADFORMS_MAX_TABLE_MODELS"
PROMPT_CHARACTERS_ENV = "HEADFORMS_PROMPT_CHARACTERS"
PROMPT_TOKENS_ENV = "HEADFORMS_PROMPT_TOKENS"
MODELS_MEMORY_ENV = "HEADFORMS_MODELS_MEMORY"
VISITOR_FORWARD_PASSES_ENV = "HEADFORMS_VISITOR_FORWARD_PASSES"
INTERVENTION_PASSES_ENV = "HEADFORMS_INTERVENTION_PASSES"
MODEL_IDLE_ENV = "HEADFORMS_MODEL_IDLE_SECONDS"

DEFAULT_MAX_BYTES = 2 * 2**30
"""Weight bytes allowed per model in hosted mode when ``HEADFORMS_MAX_MODEL_BYTES`` is unset."""
DEFAULT_HUB_CACHE_BYTES = 16 * 2**30
"""Bytes the local hub cache may keep in hosted mode (least recently used repositories go)."""
DEFAULT_MEMORY = 2 * 2**30
"""Bytes of memory one analysis may allocate (a 2 GiB model's analysis needs about 1 GiB)."""
DEFAULT_SECONDS = 300.0
"""Wall-clock seconds one analysis may take."""
DEFAULT_CONCURRENT = 2
"""Contained computations running at once on one server."""
DEFAULT_NICE = 10
"""Scheduling niceness added to workers: pages and files are served before analyses run."""
DEFAULT_QUEUE_SECONDS = 60.0
"""Seconds a request may wait for a free worker before it is refused as busy."""
DEFAULT_VISITOR_CONCURRENT = 1
"""Computations of one visitor running at once (the others wait their turn)."""
DEFAULT_VISITOR_ANALYSES = 12
"""New analyses (models or RoPE positions not yet computed) one visitor may start per window."""
DEFAULT_VISITOR_SAMPLES = 20
"""New Theorem 5 samplings one visitor may start per window."""
DEFAULT_VISITOR_SUMMARIES = 200
"""New summaries of results at hand (lobe fits, clusterings, observation summaries, bootstrap
intervals) one visitor may start per window: a model's paper views ask for about ten."""
DEFAULT_WINDOW = 3600.0
"""Seconds over which a visitor's new computations are counted."""
DEFAULT_FRAME_ANCESTORS = "'self'"
"""Who may frame the dashboard (a Content-Security-Policy ``frame-ancestors`` value)."""
DEFAULT_MAX_TABLE_BYTES = 64 * 2**20
"""Bytes of one published table file (a parquet file's uncompressed data too)."""
DEFAULT_MAX_TABLE_ROWS = 250_000
"""Rows of one published table."""
DEFAULT_MAX_TABLE_MODELS = 1_000
"""Models of one published table."""

DEFAULT_PROMPT_CHARACTERS = 2000
"""Longest prompt of a forward pass, in characters (checked before it is tokenized)."""
DEFAULT_PROMPT_TOKENS = 256
"""Longest token sequence a forward pass runs on (prompts and probes, special tokens included):
a layer's attention is heads x T x T floats, and a heatmap of more tokens is unreadable."""
DEFAULT_MODELS_MEMORY = 2 * 2**30
"""Bytes of loaded models kept between forward passes (the three bundled models' float32
weights together take 1.7 GB); in hosted mode, of the model workers kept (their estimates)."""
DEFAULT_VISITOR_FORWARD_PASSES = 60
DEFAULT_INTERVENTION_PASSES = 1024
"""New forward passes (prompts or probes not yet computed) one visitor may start per window."""
DEFAULT_MODEL_IDLE_SECONDS = 300.0
"""Seconds a hosted model worker is kept with nothing to do before it is stopped."""

TRUE_WORDS = ("1", "true", "yes", "on")
"""Values of a switch variable that turn it on (case and surrounding blanks ignored)."""


def env_flag(*names: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the first of ``names`` that is set and not empty is on (:data:`TRUE_WORDS`)."""
    environ = os.environ if environ is None else environ
    for name in names:
        value = environ.get(name, "")
        if value.strip():
            return value.strip().lower() in TRUE_WORDS
    return False


def human_bytes(n: float) -> str:
    """``2 GiB``, ``512.5 MiB``, ``100 bytes``: a size as a visitor reads it in a message."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}".replace(".0 ", " ")
    return f"{int(n)} bytes"


def usable_cpus() -> int:
    """The CPUs this process may use (Linux honours CPU pinning: containers, taskset)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Settings:
    """The ``HEADFORMS_*`` variables of one moment (docs/configuration.md lists each): the
    general settings as properties, and the parsers of numbers the hosted settings use
    (:mod:`headforms.hosted.limits`)."""

    environ: Mapping[str, str] = field(repr=False)

    @classmethod
    def read(cls) -> Settings:
        """The variables set now."""
        return cls({k: v for k, v in os.environ.items() if k.startswith(PREFIX)})

    def raw(self, name: str) -> str:
        """A variable's text, blanks stripped ("" when unset)."""
        return self.environ.get(name, "").strip()

    @property
    def cache_dir(self) -> Path | None:
        """``$HEADFORMS_CACHE_DIR`` (None: the default place, :mod:`headforms.store.location`)."""
        raw = self.environ.get(CACHE_DIR_ENV)
        return Path(raw).expanduser() if raw else None

    @property
    def threads(self) -> int:
        """Worker threads of an analysis: ``$HEADFORMS_THREADS``, else the usable CPUs."""
        value = self.raw(THREADS_ENV)
        if not value:
            return usable_cpus()
        try:
            return max(1, int(value))
        except ValueError as exc:
            raise OptionError(f"{THREADS_ENV}={value!r} is not a whole number") from exc

    @property
    def forward_threads(self) -> int:
        """torch's threads in a forward pass: ``$HEADFORMS_THREADS`` when set (in a hosted
        worker: its share, ``Limits.worker_threads``), else one (on the project's 2-core machine
        under load a SmolLM2 pass takes 0.3 s on one thread, 1.6-5.8 s on two:
        benchmarks/README.md)."""
        return self.threads if self.raw(THREADS_ENV) else 1

    @property
    def hub_ranges(self) -> bool:
        """Whether hub safetensors are read by HTTP range requests (``HEADFORMS_HUB_RANGES``)."""
        return env_flag(HUB_RANGES_ENV, environ=self.environ)

    @property
    def hosted(self) -> bool:
        """Whether hosted mode is on (``HEADFORMS_HOSTED`` = 1, true, yes or on)."""
        return env_flag(HOSTED_ENV, environ=self.environ)

    @property
    def allowed_hosts(self) -> tuple[str, ...]:
        """Host names the server answers besides addresses and localhost (comma-separated)."""
        raw = self.environ.get(ALLOWED_HOSTS_ENV, "")
        return tuple(h.strip().lower() for h in raw.split(",") if h.strip())

    @property
    def frame_ancestors(self) -> str:
        """Who may frame the dashboard (``frame-ancestors``), blanks normalised."""
        return " ".join(self.environ.get(FRAME_ANCESTORS_ENV, "").split()) or (
            DEFAULT_FRAME_ANCESTORS
        )

    @property
    def max_table_bytes(self) -> int:
        """Bytes of one published table file."""
        return self._count(MAX_TABLE_BYTES_ENV, DEFAULT_MAX_TABLE_BYTES)

    @property
    def max_table_rows(self) -> int:
        """Rows of one published table."""
        return self._count(MAX_TABLE_ROWS_ENV, DEFAULT_MAX_TABLE_ROWS)

    @property
    def max_table_models(self) -> int:
        """Models of one published table."""
        return self._count(MAX_TABLE_MODELS_ENV, DEFAULT_MAX_TABLE_MODELS)

    @property
    def prompt_characters(self) -> int:
        """The longest prompt of a forward pass, in characters."""
        return self._count(PROMPT_CHARACTERS_ENV, DEFAULT_PROMPT_CHARACTERS)

    @property
    def intervention_passes(self) -> int:
        """The most sequence passes one intervention may take, on the command line, in the
        library and in the dashboard alike (hosted or not)."""
        return self._count(INTERVENTION_PASSES_ENV, DEFAULT_INTERVENTION_PASSES)

    @property
    def prompt_tokens(self) -> int:
        """The most tokens of one forward pass (prompts and probes, special tokens included)."""
        return self._count(PROMPT_TOKENS_ENV, DEFAULT_PROMPT_TOKENS)

    @property
    def models_memory(self) -> int:
        """Bytes of loaded models kept between forward passes (hosted: of model workers)."""
        return self._count(MODELS_MEMORY_ENV, DEFAULT_MODELS_MEMORY)

    def renamed(self, name: str) -> str:
        """``name``, or its old name (:data:`RENAMED`) when only that one is set."""
        old = RENAMED[name]
        return old if not self.raw(name) and self.raw(old) else name

    def positive(self, name: str, default: float) -> float:
        """A positive finite number (``default`` when unset), else a one-line
        :class:`LimitError` naming the variable."""
        raw = self.raw(name)
        if not raw:
            return default
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise LimitError(f"{name}={raw!r} is not a positive number (server configuration)")
        return value

    def whole(self, name: str, default: int) -> int:
        """A positive whole number (``default`` when unset), else a one-line
        :class:`LimitError`."""
        value = self.positive(name, default)
        if value != int(value):
            raise LimitError(f"{name}={value:g} is not a whole number (server configuration)")
        return int(value)

    def byte_count(self, name: str, default: int) -> int:
        """A whole number of bytes (``default`` when unset), else a one-line
        :class:`NotAllowedError`."""
        raw = self.raw(name)
        try:
            return int(raw) if raw else default
        except ValueError as exc:
            raise NotAllowedError(
                f"{name}={raw!r} is not a whole number of bytes (server configuration)"
            ) from exc

    def _count(self, name: str, default: int) -> int:
        raw = self.raw(name)
        if not raw:
            return default
        if not raw.isdigit() or int(raw) <= 0:
            raise OptionError(f"{name}={raw[:40]!r} is not a positive whole number")
        return int(raw)


def settings() -> Settings:
    """The ``HEADFORMS_*`` variables set now."""
    return Settings.read()
