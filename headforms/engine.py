"""The engine: a model spec -> one exact row per attention head, with its spectra.

The flow, top to bottom: **locate** the model's files and fingerprint them
(:func:`headforms.sources.locate`: config and index only, under the caller's policy) -> look
its metrics up in the **metrics store** (key: the factors' key, the options, the forms code) ->
on a miss, look its per-layer factors up in the **factor store** (key: the weights'
fingerprint, the extraction code) and compute the forms from them (:mod:`headforms.streaming`,
no weights, no config) -> only when the factors are not stored either, **open** the
checkpoint (:func:`headforms.models.source.open_model`) and **extract** it layer by layer,
computing the forms as the layers come and keeping the factors -> **store** the metrics.

A metrics hit never opens factors or weights nor imports torch, transformers or pandas; a new
RoPE position, option or metric (any change to the forms code) reads stored factors, never
weights. A published table holds its metrics already: it is analysed by reading it. The
Gaussian baseline (:mod:`headforms.baseline`) depends only on the shapes and is computed, and
stored per shape, when it is first asked for.

:func:`sweep` takes the same path for every head at every RoPE position of a range at once
(:mod:`headforms.sweeps`): its own entry in the metrics store (key: the factors' key, the
positions and options, the forms code), computed from the stored factors or, when they are not
stored, from the weights (keeping the factors), in one pass over the layers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from . import streaming, sweeps
from .architectures import shapes_from_config
from .errors import HeadformsError, UnavailableDataError
from .model_analysis import KIND, ModelAnalysis, analysis_from_record, analysis_record
from .options import DEFAULT_OPTIONS, DEFAULT_ROPE_POSITIONS, AnalysisOptions, SweepOptions
from .sources import TABLE_FORMAT, Located, Policy, locate
from .store import (
    DamagedFactors,
    FactorStore,
    ResultStore,
    StoredFactors,
    factors_key,
    key_lock,
    metrics_key,
)
from .streaming import FactorSink, Progress
from .sweeps import PositionSweep

__all__ = [
    "analyze",
    "analyze_located",
    "stored_analysis",
    "stored_sweep",
    "sweep",
    "sweep_located",
]

R = TypeVar("R")

FACTOR_ITEM_BYTES = 4
"""Bytes per stored factor value used to size an entry before extraction (float32)."""


def analyze(
    spec: str | os.PathLike[str] | Located,
    rope_position: int = 0,
    fold_qk_norm: bool = True,
    spectra: Iterable[str] = (),
    progress: Progress | None = None,
    store: ResultStore | None = None,
    use_cache: bool = True,
    *,
    options: AnalysisOptions | None = None,
    policy: Policy | None = None,
) -> ModelAnalysis:
    """Analyse every head of a model (see the module doc).

    ``spec``: a spec's text (or a :class:`pathlib.Path`), located under ``policy`` (what may be
    opened: a hosted server's :class:`headforms.hosted.Policy`, handed in by the caller; None:
    everything), or a model already :class:`Located` (under its own policy). ``options``: the
    analysis's options as one value (else made from ``rope_position``, ``fold_qk_norm`` and
    ``spectra``, the extra spectra besides the core ones: a stored result lacking one is
    recomputed with it). ``use_cache=False`` computes and stores nothing. A published per-head
    table (``FILE.csv::MODEL``, :mod:`headforms.tables`) opens read-only, without spectra.
    """
    if options is None:
        options = AnalysisOptions(rope_position, fold_qk_norm, tuple(spectra))
    return analyze_located(_located(spec, progress, policy), options, progress, store, use_cache)


def _located(spec: Any, progress: Progress | None, policy: Policy | None) -> Located:
    """``spec`` located under ``policy`` (a :class:`Located` already is), said in ``progress``."""
    if isinstance(spec, Located):
        return spec
    spec = os.fspath(spec) if isinstance(spec, os.PathLike) else spec
    if progress:
        progress(0, 1, f"locating {spec}")
    return locate(spec, policy)


def analyze_located(
    located: Located,
    options: AnalysisOptions,
    progress: Progress | None = None,
    store: ResultStore | None = None,
    use_cache: bool = True,
) -> ModelAnalysis:
    """:func:`analyze` of a located model (metrics store -> factor store -> weights)."""
    if located.format == TABLE_FORMAT:  # its file holds the metrics: nothing to extract
        from .tables import open_table  # pandas: only for tables

        return open_table(located, options)
    if not use_cache:
        return _extract(located, progress, None, _weights_analysis(options, progress))
    store = store or ResultStore()
    key = metrics_key(located.fingerprint, options.key())
    hit = _stored_analysis(store, key)
    if hit is None or not options.spectra <= hit.spectra.keys():
        with key_lock(key):  # one computation per model and options, across processes
            hit = _stored_analysis(store, key)
            if hit is None or not options.spectra <= hit.spectra.keys():
                if hit is not None:
                    options = options.with_spectra(hit.spectra)
                result = _compute(located, options, progress)
                store.put(key, analysis_record(result))
                return result
    hit.card.spec = located.spec
    if progress:
        total = hit.card.n_layers
        progress(total, total, "loaded from cache")
    return hit


def _weights_analysis(
    options: AnalysisOptions, progress: Progress | None
) -> Callable[[Any, FactorSink | None], ModelAnalysis]:
    return lambda source, sink: streaming.compute_analysis(source, options, progress, sink)


def stored_analysis(
    located: Located,
    options: AnalysisOptions = DEFAULT_OPTIONS,
    store: ResultStore | None = None,
) -> ModelAnalysis | None:
    """The stored analysis of a located model with every spectrum asked for, or None; nothing
    is opened or computed (a hosted server reads what its contained workers stored). A
    published table holds its metrics: it is read."""
    if located.format == TABLE_FORMAT:
        from .tables import open_table

        return open_table(located, options)
    store = store or ResultStore()
    hit = _stored_analysis(store, metrics_key(located.fingerprint, options.key()))
    if hit is None or not options.spectra <= hit.spectra.keys():
        return None
    hit.card.spec = located.spec
    return hit


def _stored_analysis(store: ResultStore, key: str) -> ModelAnalysis | None:
    """The stored analysis under ``key``, or None: an entry that does not decode into today's
    result classes (a missing column, a changed field) is a miss and is deleted, never an error."""
    record = store.get(key, KIND)
    if record is None:
        return None
    try:
        return analysis_from_record(record)
    except (KeyError, TypeError, ValueError):
        store.delete(key)
        return None


def _compute(
    located: Located, options: AnalysisOptions, progress: Progress | None
) -> ModelAnalysis:
    """The forms from the stored factors, or, when they are not stored (or damaged), from the
    weights, keeping their factors."""

    def forms(stored: StoredFactors) -> ModelAnalysis:
        return streaming.forms_analysis(stored.facts, stored.layer, options, located.spec, progress)

    return _through_factors(located, progress, forms, _weights_analysis(options, progress))


def _through_factors(
    located: Located,
    progress: Progress | None,
    forms: Callable[[StoredFactors], R],
    extract: Callable[[Any, FactorSink | None], R],
) -> R:
    """``forms(stored factors)`` if the model's factors are stored (and intact), else
    ``extract(opened checkpoint, factor writer)``, which keeps them."""
    factors = FactorStore()
    key = factors_key(located.fingerprint)
    hit = _from_factors(factors, key, located, progress, forms)
    if hit is not None:
        return hit
    with key_lock(key):  # another process may have stored them while this one waited
        hit = _from_factors(factors, key, located, progress, forms)
        if hit is not None:
            return hit
        return _extract(located, progress, (factors, key), extract)


def _from_factors(
    factors: FactorStore,
    key: str,
    located: Located,
    progress: Progress | None,
    forms: Callable[[StoredFactors], R],
) -> R | None:
    stored = factors.get(key)
    if stored is None:
        return None
    if progress:
        progress(0, 1, f"reading the stored factors of {located.display_name}")
    try:
        return forms(stored)
    except DamagedFactors:  # read the weights again
        factors.delete(key)
        return None


def _extract(
    located: Located,
    progress: Progress | None,
    keep: tuple[FactorStore, str] | None,
    extract: Callable[[Any, FactorSink | None], R],
) -> R:
    """Open the checkpoint and stream it through ``extract``; with ``keep``, its factors go to
    that store."""
    from .models.source import open_model

    if progress:
        progress(0, 1, f"opening {located.display_name}")
    source = open_model(located, use_store=keep is not None)  # use_cache=False: no store
    writer = None
    if keep is not None:
        try:
            shapes = shapes_from_config(source.config)
        except HeadformsError:
            shapes = None  # the analysis reports it
        if shapes is not None:
            per_layer = (shapes.n_heads + shapes.n_kv_heads) * shapes.head_dim * shapes.model_dim
            writer = keep[0].writer(keep[1], shapes.n_layers * per_layer * FACTOR_ITEM_BYTES)
    try:
        return extract(source, writer)
    except BaseException:
        if writer is not None:
            writer.abort()
        raise


# ---------------------------------------------------------------------------------------------
# Sweeps over RoPE positions


def sweep(
    spec: str | os.PathLike[str] | Located,
    rope_positions: str | Iterable[int] = DEFAULT_ROPE_POSITIONS,
    fold_qk_norm: bool = True,
    spectra: bool = False,
    progress: Progress | None = None,
    store: ResultStore | None = None,
    use_cache: bool = True,
    *,
    options: SweepOptions | None = None,
    policy: Policy | None = None,
) -> PositionSweep:
    """Every head of a RoPE model at every relative position of ``rope_positions`` (``"0:128"``
    by default; ``A:B``, ``A:B:STEP``, a comma list or integers), in one pass over its layers;
    its rows at each d equal :func:`analyze` at that d. ``spectra``: keep the eigenvalues of S
    at every position too. Cached like an analysis (``store``, ``use_cache``); ``spec`` and
    ``policy`` as for :func:`analyze`. A model without RoPE is refused in one line."""
    if options is None:
        positions = (
            rope_positions if isinstance(rope_positions, str | int) else tuple(rope_positions)
        )
        options = SweepOptions(positions, fold_qk_norm, spectra)
    return sweep_located(_located(spec, progress, policy), options, progress, store, use_cache)


def sweep_located(
    located: Located,
    options: SweepOptions,
    progress: Progress | None = None,
    store: ResultStore | None = None,
    use_cache: bool = True,
) -> PositionSweep:
    """:func:`sweep` of a located model (sweep store -> factor store -> weights)."""
    if located.format == TABLE_FORMAT:
        raise UnavailableDataError(
            f"{located.spec} is a published per-head table: it has no Q and K to rotate, so it "
            "has no sweep over RoPE positions"
        )

    def forms(stored: StoredFactors) -> PositionSweep:
        return streaming.forms_sweep(stored.facts, stored.layer, options, located.spec, progress)

    def extract(source: Any, sink: FactorSink | None) -> PositionSweep:
        return streaming.compute_sweep(source, options, progress, sink)

    if not use_cache:
        return _extract(located, progress, None, extract)
    store = store or ResultStore()
    key = metrics_key(located.fingerprint, options.key())
    hit = _stored_sweep(store, key)
    if hit is None:
        with key_lock(key):
            hit = _stored_sweep(store, key)
            if hit is None:
                result = _through_factors(located, progress, forms, extract)
                store.put(key, sweeps.sweep_record(result))
                return result
    hit.card.spec = located.spec
    if progress:
        progress(hit.card.n_layers, hit.card.n_layers, "loaded from cache")
    return hit


def stored_sweep(
    located: Located, options: SweepOptions, store: ResultStore | None = None
) -> PositionSweep | None:
    """The stored sweep of a located model at ``options``, or None; nothing is computed."""
    if located.format == TABLE_FORMAT:
        return None
    hit = _stored_sweep(store or ResultStore(), metrics_key(located.fingerprint, options.key()))
    if hit is not None:
        hit.card.spec = located.spec
    return hit


def _stored_sweep(store: ResultStore, key: str) -> PositionSweep | None:
    """The stored sweep under ``key``, or None (an entry that does not decode is deleted)."""
    record = store.get(key, sweeps.KIND)
    if record is None:
        return None
    try:
        return sweeps.sweep_from_record(record)
    except (KeyError, TypeError, ValueError, HeadformsError):
        store.delete(key)
        return None
