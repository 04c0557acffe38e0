"""The streaming compute: a model's layers, a few at a time, through the forms stage.

Layers come either from the weights (:func:`compute_analysis`, :func:`compute_sweep`: an opened
checkpoint, each layer read and extracted into its factors, which a factor writer may keep) or
from stored factors (:func:`forms_analysis`, :func:`forms_sweep`); either way each layer's heads
are computed at once from their Gram matrices (:mod:`headforms.heads`: at one RoPE position, or
at every position of a sweep) and at most ``threads + 1`` layers are in flight, so peak memory
is a few layers' Q/K (and their rows) whatever the depth. Layers run concurrently on
single-threaded BLAS (:mod:`headforms.parallel`, the one threading rule).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

import numpy as np

from .architectures import Shapes, shapes_from_config
from .card import model_card
from .columns import TABLE_COLUMNS
from .errors import OptionError
from .factors import LayerFactors, ModelFacts
from .heads import LayerHeads, LayerSweep, layer_heads, layer_sweep
from .model_analysis import ModelAnalysis
from .models.extract import TensorIndex, check_declared_shapes, model_facts, read_layer
from .models.source import ModelSource
from .options import DEFAULT_OPTIONS, AnalysisOptions, SweepOptions
from .parallel import ordered_layers
from .progress import Progress
from .sweeps import PositionSweep, check_sweep_size

T = TypeVar("T")


class FactorSink(Protocol):
    """Where extracted factors go as they are made (the factor store's writer): each layer in
    order, then the model's facts once every layer is done."""

    def add(self, index: int, layer: LayerFactors) -> None: ...

    def commit(self, facts: ModelFacts) -> bool: ...


def _stream(
    n_layers: int,
    layer_of: Callable[[int], LayerFactors],
    compute: Callable[[int, LayerFactors], T],
    progress: Progress | None,
    sink: FactorSink | None,
) -> tuple[list[T], tuple[bool, bool]]:
    """``compute(i, layer i)`` of every layer, in order (each layer's factors to ``sink``);
    whether some layer had QK-norm gains / biases."""

    def work(index: int) -> tuple[LayerFactors, T]:
        layer = layer_of(index)
        return layer, compute(index, layer)

    parts: list[T] = []
    gains = biases = False
    for index, (layer, part) in ordered_layers(n_layers, work, progress):
        gains |= layer.q_gain is not None
        biases |= layer.q_bias is not None
        if sink is not None:
            sink.add(index, layer)
        parts.append(part)
    if progress:
        progress(n_layers, n_layers, "done")
    return parts, (gains, biases)


def _assemble(parts: list[LayerHeads]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every layer's heads, concatenated: the per-head table and spectra."""
    columns = {c: np.concatenate([p.rows[c] for p in parts]) for c in TABLE_COLUMNS}
    spectra = {s: np.concatenate([p.spectra[s] for p in parts]) for s in parts[0].spectra}
    return columns, spectra


def _assemble_sweep(parts: list[LayerSweep]) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Every layer's rows at every position, position-major (at each position all heads,
    layer-major, as in one analysis's table), and the eigenvalues of S if kept."""
    columns = {
        c: np.concatenate([p.rows[c] for p in parts], axis=1).reshape(-1) for c in TABLE_COLUMNS
    }
    if parts[0].eig_s is None:
        return columns, None
    eig_s = np.concatenate([p.eig_s for p in parts], axis=1)  # type: ignore[misc]
    return columns, eig_s.reshape(-1, eig_s.shape[-1])


def check_options(rotary: bool, name: str, positional: str, options: AnalysisOptions) -> None:
    """Reject options that do not apply to this model, with a clear message."""
    if options.rope_position and not rotary:
        raise OptionError(
            f"--rope-position applies to RoPE models only; {name} uses {positional} positions "
            "(use 0)"
        )


def _heads(shapes: Shapes, options: AnalysisOptions) -> Callable[[int, LayerFactors], LayerHeads]:
    return lambda i, layer: layer_heads(i, layer, shapes.kv_of_head, shapes.model_dim, options)


def _sweep(shapes: Shapes, options: SweepOptions) -> Callable[[int, LayerFactors], LayerSweep]:
    return lambda i, layer: layer_sweep(i, layer, shapes.kv_of_head, shapes.model_dim, options)


def _from_source(
    source: ModelSource,
    compute: Callable[[Shapes], Callable[[int, LayerFactors], T]],
    progress: Progress | None,
    sink: FactorSink | None,
) -> tuple[list[T], ModelFacts]:
    """Every layer of an opened checkpoint through ``compute(shapes)``, its factors to ``sink``
    (committed with the model's facts at the end)."""
    shapes = shapes_from_config(source.config)
    index = TensorIndex.for_source(source)
    check_declared_shapes(source.scheme, shapes, index)

    def layer_of(layer: int) -> LayerFactors:
        return read_layer(source, shapes, index, layer)

    parts, (gains, biases) = _stream(shapes.n_layers, layer_of, compute(shapes), progress, sink)
    facts = model_facts(source, shapes, index, gains, biases)
    if sink is not None:
        sink.commit(facts)
    return parts, facts


def compute_analysis(
    source: ModelSource,
    options: AnalysisOptions = DEFAULT_OPTIONS,
    progress: Progress | None = None,
    sink: FactorSink | None = None,
) -> ModelAnalysis:
    """Stream an opened model layer by layer and compute every head's form (nothing stored);
    ``sink`` receives each layer's factors in order, then the facts extraction gathered."""
    check_options(source.arch.rotary, source.display_name, source.arch.positional, options)
    parts, facts = _from_source(source, lambda shapes: _heads(shapes, options), progress, sink)
    columns, spectra = _assemble(parts)
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
    parts, _ = _stream(shapes.n_layers, layer_of, _heads(shapes, options), progress, None)
    columns, spectra = _assemble(parts)
    return ModelAnalysis(model_card(facts, options, spec), columns, spectra)


def check_sweep(rotary: bool, name: str, positional: str, shapes: Shapes, options: SweepOptions):
    """Refuse a sweep that does not apply to this model (no rotation) or would be too large,
    before any layer is read."""
    if not rotary:
        raise OptionError(
            f"{name} has no rotation: it uses {positional} positions, so --rope-positions "
            "applies to RoPE models only"
        )
    check_sweep_size(shapes, options)


def compute_sweep(
    source: ModelSource,
    options: SweepOptions,
    progress: Progress | None = None,
    sink: FactorSink | None = None,
) -> PositionSweep:
    """Every head at every RoPE position of ``options`` from an opened checkpoint, streamed layer
    by layer (``sink``: as for :func:`compute_analysis`)."""
    shapes = shapes_from_config(source.config)
    check_sweep(source.arch.rotary, source.display_name, source.arch.positional, shapes, options)
    parts, facts = _from_source(source, lambda s: _sweep(s, options), progress, sink)
    columns, eig_s = _assemble_sweep(parts)
    card = model_card(facts, options.at(options.positions[0]), source.spec)
    return PositionSweep(card, options, columns, eig_s)


def forms_sweep(
    facts: ModelFacts,
    layer_of: Callable[[int], LayerFactors],
    options: SweepOptions,
    spec: str,
    progress: Progress | None = None,
) -> PositionSweep:
    """:func:`compute_sweep` from stored factors (no weight, config, transformers or torch)."""
    shapes = facts.shapes
    check_sweep(facts.rotary, facts.name, facts.positional, shapes, options)
    parts, _ = _stream(shapes.n_layers, layer_of, _sweep(shapes, options), progress, None)
    columns, eig_s = _assemble_sweep(parts)
    card = model_card(facts, options.at(options.positions[0]), spec)
    return PositionSweep(card, options, columns, eig_s)
