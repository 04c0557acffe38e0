"""The streaming compute: a model's layers, a few at a time, through the forms stage.

Layers come either from the weights (:func:`compute_analysis`: an opened checkpoint, each layer
read and extracted into its factors, which a factor writer may keep) or from stored factors
(:func:`forms_analysis`); either way each layer's heads are computed at once from their Gram
matrices (:mod:`headforms.heads`) and at most ``threads + 1`` layers are in flight, so peak
memory is a few layers' Q/K whatever the depth. With several threads, layers run concurrently on
single-threaded BLAS: numpy releases the GIL in LAPACK, and the many small ``2n x 2n`` problems
scale across cores where BLAS threads do not.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol, TypeVar

import numpy as np

from .architectures import Shapes, shapes_from_config
from .card import model_card
from .columns import TABLE_COLUMNS
from .errors import OptionError
from .factors import LayerFactors, ModelFacts
from .heads import LayerHeads, layer_heads
from .models.extract import TensorIndex, check_declared_shapes, model_facts, read_layer
from .models.source import ModelSource
from .options import DEFAULT_OPTIONS, AnalysisOptions
from .results import ModelAnalysis
from .settings import settings

T = TypeVar("T")

Progress = Callable[[int, int, str], None]
"""``progress(done, total, message)``: called as soon as work starts, before each layer, and
once at the end."""


class FactorSink(Protocol):
    """Where extracted factors go as they are made (the factor store's writer): each layer in
    order, then the model's facts once every layer is done."""

    def add(self, index: int, layer: LayerFactors) -> None: ...

    def commit(self, facts: ModelFacts) -> bool: ...


def ordered_layers(
    n_layers: int, work: Callable[[int], T], progress: Progress | None = None
) -> Iterator[tuple[int, T]]:
    """``(layer, work(layer))`` in layer order, computed on ``$HEADFORMS_THREADS`` threads with
    at most ``threads + 1`` layers in flight (BLAS held to one thread per worker)."""
    from threadpoolctl import threadpool_limits

    configured = settings().threads
    threads = min(configured, n_layers)
    if threads <= 1:
        with threadpool_limits(limits=max(1, configured)):
            for layer in range(n_layers):
                if progress:
                    progress(layer, n_layers, f"layer {layer + 1}/{n_layers}")
                yield layer, work(layer)
        return
    with ThreadPoolExecutor(threads) as pool, threadpool_limits(limits=1):
        pending: deque[Future[T]] = deque()
        submitted = 0
        try:
            for layer in range(n_layers):
                while submitted < n_layers and len(pending) <= threads:
                    pending.append(pool.submit(work, submitted))
                    submitted += 1
                if progress:
                    progress(layer, n_layers, f"layer {layer + 1}/{n_layers}")
                yield layer, pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def _assemble(
    n_layers: int,
    layer_of: Callable[[int], LayerFactors],
    shapes: Shapes,
    options: AnalysisOptions,
    progress: Progress | None,
    sink: FactorSink | None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], tuple[bool, bool]]:
    """Every layer's heads, concatenated; whether some layer had QK-norm gains / biases."""
    kv_of_head = shapes.kv_of_head

    def work(index: int) -> tuple[LayerFactors, LayerHeads]:
        layer = layer_of(index)
        return layer, layer_heads(index, layer, kv_of_head, shapes.model_dim, options)

    parts: list[LayerHeads] = []
    gains = biases = False
    for index, (layer, heads) in ordered_layers(n_layers, work, progress):
        gains |= layer.q_gain is not None
        biases |= layer.q_bias is not None
        if sink is not None:
            sink.add(index, layer)
        parts.append(heads)
    if progress:
        progress(n_layers, n_layers, "done")
    columns = {c: np.concatenate([p.rows[c] for p in parts]) for c in TABLE_COLUMNS}
    spectra = {s: np.concatenate([p.spectra[s] for p in parts]) for s in parts[0].spectra}
    return columns, spectra, (gains, biases)


def check_options(rotary: bool, name: str, positional: str, options: AnalysisOptions) -> None:
    """Reject options that do not apply to this model, with a clear message."""
    if options.rope_position and not rotary:
        raise OptionError(
            f"--rope-position applies to RoPE models only; {name} uses {positional} positions "
            "(use 0)"
        )


def compute_analysis(
    source: ModelSource,
    options: AnalysisOptions = DEFAULT_OPTIONS,
    progress: Progress | None = None,
    sink: FactorSink | None = None,
) -> ModelAnalysis:
    """Stream an opened model layer by layer and compute every head's form (nothing stored);
    ``sink`` receives each layer's factors in order, then the facts extraction gathered."""
    check_options(source.arch.rotary, source.display_name, source.arch.positional, options)
    shapes = shapes_from_config(source.config)
    index = TensorIndex.for_source(source)
    check_declared_shapes(source.scheme, shapes, index)

    def layer_of(layer: int) -> LayerFactors:
        return read_layer(source, shapes, index, layer)

    columns, spectra, (gains, biases) = _assemble(
        shapes.n_layers, layer_of, shapes, options, progress, sink
    )
    facts = model_facts(source, shapes, index, gains, biases)
    if sink is not None:
        sink.commit(facts)
    return ModelAnalysis(model_card(facts, options, source.spec), columns, spectra)


def forms_analysis(
    facts: ModelFacts,
    layer_of: Callable[[int], LayerFactors],
    options: AnalysisOptions,
    spec: str,
    progress: Progress | None = None,
) -> ModelAnalysis:
    """Every head's forms and metrics at ``options`` from stored factors (``layer_of(i)``: layer
    i's factors); no weight, config, transformers or torch is needed."""
    check_options(facts.rotary, facts.name, facts.positional, options)
    shapes = facts.shapes
    columns, spectra, _ = _assemble(shapes.n_layers, layer_of, shapes, options, progress, None)
    return ModelAnalysis(model_card(facts, options, spec), columns, spectra)
