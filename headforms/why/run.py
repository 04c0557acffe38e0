"""Score splits from a model spec: locate -> store? -> load (once per process) -> compute ->
store, like attention patterns and interventions.

The store key names everything a result depends on: the model's fingerprint (weights and
tokenizer), the request (heads, the text's digest, T, pairs, detail), the source of the code
that computes it (stage ``why`` of :mod:`headforms.store.keys`) and the versions of the
libraries that run the pass. A stored result needs no model and no torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..behaviour.cache import library_versions
from ..behaviour.run import ModelSpec, locate_runnable
from ..behaviour.runnable import fingerprint, runnable
from ..interventions.request import DEFAULT_MAX_TOKENS
from ..interventions.run import scope_of
from ..interventions.text import DEFAULT_TEXT
from ..progress import Progress
from ..sources import Policy
from ..store import ResultStore, cache_key, key_lock
from . import result as stored
from .request import WhyRequest
from .result import WhyResult

if TYPE_CHECKING:
    import pandas as pd


def why_key(model_fingerprint: str, request: WhyRequest) -> str:
    """The store key of a request's result on a model (module doc)."""
    options = {**request.key_options(), "libraries": library_versions()}
    return cache_key(model_fingerprint, options, "why")


def request_of(
    heads: str | Iterable[tuple[int, int]] | None = None,
    layer: int | None = None,
    parity: str | None = None,
    text: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    pairs: int = 0,
    detail: bool = False,
) -> WhyRequest:
    """The checked request of the keyword arguments of :func:`why_table` (at most one of
    ``heads`` (``"3.1,4.2"`` or pairs), ``layer`` and ``parity``; every head when none)."""
    return WhyRequest(
        scope=scope_of(heads, layer, parity),
        text=DEFAULT_TEXT if text is None else text,
        max_tokens=max_tokens,
        pairs=pairs,
        detail=detail,
    ).checked()


def why(
    spec: ModelSpec,
    request: WhyRequest,
    *,
    use_cache: bool = True,
    store: ResultStore | None = None,
    progress: Progress | None = None,
    policy: Policy | None = None,
) -> WhyResult:
    """The score split of ``request`` on the model of ``spec`` (stored, or computed and
    stored)."""
    from .compute import compute_why

    request = request.checked()
    located = locate_runnable(spec, policy, what="score splits")
    key_fingerprint = fingerprint(located)

    def compute() -> WhyResult:
        return compute_why(runnable(located, progress), request, progress)

    if not use_cache:
        found = compute()
    else:
        key = why_key(key_fingerprint, request)
        store = store or ResultStore()
        found = stored.get(store, key)
        if found is None:
            with key_lock(key):
                found = stored.get(store, key)
                if found is None:
                    found = compute()
                    stored.put(store, key, found)
    return found.named(located.spec)


def why_table(spec: ModelSpec, **options: object) -> pd.DataFrame:
    """One row per head as a DataFrame: its realised and weight shares on ``text`` (default the
    Declaration of Independence, first ``max_tokens`` tokens); keywords of :func:`request_of`
    and ``use_cache``, ``store``, ``progress``, ``policy`` of :func:`why`."""
    run_options = {k: options.pop(k) for k in list(options) if k in _RUN_OPTIONS}
    return why(spec, request_of(**options), **run_options).table  # type: ignore[arg-type]


_RUN_OPTIONS = ("use_cache", "store", "progress", "policy")
