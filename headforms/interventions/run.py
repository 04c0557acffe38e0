"""Interventions from a model spec: locate -> store? -> load (once per process) -> compute ->
store, like attention patterns and head-type scores.

The store key names everything a result depends on: the model's fingerprint (weights and
tokenizer), the request (edit, scope, each, the text's digest, T, K, seed, probe), the source of
the code that computes it (stage ``interventions`` of :mod:`headforms.store.keys`) and the
versions of the libraries that run the passes. A stored result needs no model and no torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..behaviour.cache import library_versions
from ..behaviour.limits import DEFAULT_PROBE_LENGTH
from ..behaviour.run import ModelSpec, locate_runnable
from ..behaviour.runnable import fingerprint, runnable
from ..errors import OptionError
from ..progress import Progress
from ..sources import Policy
from ..store import ResultStore, cache_key, key_lock
from . import result as stored
from .controls import DEFAULT_MATCH, Match
from .request import (
    DEFAULT_CONTROLS,
    DEFAULT_MAX_TOKENS,
    InterventionLimits,
    InterventionRequest,
    Scope,
    parse_heads,
)
from .result import InterventionResult
from .text import DEFAULT_TEXT

if TYPE_CHECKING:
    import pandas as pd


def intervention_key(model_fingerprint: str, request: InterventionRequest) -> str:
    """The store key of a request's result on a model (module doc)."""
    options = {**request.key_options(), "libraries": library_versions()}
    return cache_key(model_fingerprint, options, "interventions")


def scope_of(
    heads: str | Iterable[tuple[int, int]] | None = None,
    layer: int | None = None,
    parity: str | None = None,
) -> Scope:
    """The scope of at most one of ``heads`` (``"3.1,4.2"`` or pairs), ``layer`` and
    ``parity``; every head when none is given."""
    given = [
        name
        for name, value in (("heads", heads), ("layer", layer), ("parity", parity))
        if value is not None
    ]
    if len(given) > 1:
        raise OptionError(f"give one scope, not {' and '.join(given)}")
    if heads is not None:
        pairs = parse_heads(heads) if isinstance(heads, str) else tuple(map(tuple, heads))
        return Scope("heads", heads=pairs).checked()  # type: ignore[arg-type]
    if layer is not None:
        return Scope("layer", layer=layer).checked()
    if parity is not None:
        return Scope("parity", parity=parity).checked()
    return Scope("all")


def intervention(
    spec: ModelSpec,
    request: InterventionRequest,
    *,
    use_cache: bool = True,
    store: ResultStore | None = None,
    progress: Progress | None = None,
    policy: Policy | None = None,
    limits: InterventionLimits | None = None,
) -> InterventionResult:
    """The result of ``request`` on the model of ``spec`` (stored, or computed and stored)."""
    from .compute import compute_intervention

    located = locate_runnable(spec, policy, what="interventions")
    key_fingerprint = fingerprint(located)

    def compute() -> InterventionResult:
        model = runnable(located, progress)
        return compute_intervention(model, request, progress, limits)

    if not use_cache:
        found = compute()
    else:
        key = intervention_key(key_fingerprint, request)
        store = store or ResultStore()
        found = stored.get(store, key)
        if found is None:
            with key_lock(key):
                found = stored.get(store, key)
                if found is None:
                    found = compute()
                    stored.put(store, key, found)
    return found.named(located.spec)


def request_of(
    edit: str,
    heads: str | Iterable[tuple[int, int]] | None = None,
    layer: int | None = None,
    parity: str | None = None,
    each: bool = False,
    text: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    controls: int = DEFAULT_CONTROLS,
    seed: int = 0,
    probe: bool | int = False,
    match: str | Match = DEFAULT_MATCH,
) -> InterventionRequest:
    """The checked request of the keyword arguments of :func:`intervene` (``probe``: True for
    the default probe length, or the length R; ``match``: ``scores``, ``span`` or
    ``frobenius``)."""
    if probe is True:
        probe_length: int | None = DEFAULT_PROBE_LENGTH
    elif probe is False or probe is None:
        probe_length = None
    else:
        probe_length = probe
    return InterventionRequest(
        edit=edit,
        scope=scope_of(heads, layer, parity),
        each=each,
        text=DEFAULT_TEXT if text is None else text,
        max_tokens=max_tokens,
        controls=controls,
        seed=seed,
        probe_length=probe_length,
        match=match,
    )


def intervene(spec: ModelSpec, edit: str, **options: Any) -> pd.DataFrame:
    """One intervention's rows as a DataFrame: ``edit`` on the heads of ``heads`` / ``layer`` /
    ``parity`` (every head when none is given), together or ``each`` on its own, on ``text``
    (default the Declaration of Independence), with ``controls`` matched controls; keywords of
    :func:`request_of`, and ``use_cache``, ``store``, ``progress``, ``policy``, ``limits`` of
    :func:`intervention`."""
    run_options = {k: options.pop(k) for k in list(options) if k in _RUN_OPTIONS}
    return intervention(spec, request_of(edit, **options), **run_options).table


def sweep(spec: ModelSpec, edit: str, **options: Any) -> pd.DataFrame:
    """Every head of the scope (default: every head of the model) edited on its own: one row
    per head, joinable with the analysis' per-head table on ``layer`` and ``head``."""
    return intervene(spec, edit, each=True, **options)


_RUN_OPTIONS = ("use_cache", "store", "progress", "policy", "limits")
