"""The engine: model spec -> one exact row per attention head, with its spectra.

The flow, top to bottom: **locate** the model's files and fingerprint them
(:func:`headforms.sources.locate`: config and index only) -> look the result up in the **store**
under :func:`headforms.store.cache_key` -> on a miss, **open** the checkpoint
(:func:`headforms.models.source.open_model`), check its declared shapes against the tensors
present, and **stream** it layer by layer (at most a few layers in flight; peak memory about
that many layers' Q/K), each layer's heads computed at once from their Gram matrices
(:mod:`headforms.forms`) -> **store** the result. A cache hit never opens weights nor imports
torch or transformers. The Gaussian baseline (:mod:`headforms.baseline`) depends only on the
shapes and is computed, and stored per shape, when it is first asked for.
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from typing import Any, TypeVar

import numpy as np

from .architectures import Shapes, shapes_from_config
from .baseline import BASELINE_SEED, Baseline, BaselineShapes, compute_baseline
from .errors import OptionError
from .forms import FormBatch, forms_from_factor, head_factors
from .models.extract import (
    LayerWeights,
    TensorIndex,
    check_declared_shapes,
    effective_factors,
    read_layer,
)
from .models.rope import inverse_frequencies, rope_parameters
from .models.source import ModelSource, open_model
from .readers import TensorReader
from .results import (
    ALL_SPECTRA,
    BASELINE_PREFIX,
    CORE_SPECTRA,
    EXTRA_SPECTRA,
    METRIC_COLUMNS,
    TABLE_COLUMNS,
    ModelAnalysis,
    ModelCard,
    analysis_from_record,
    analysis_record,
    baseline_from_record,
    baseline_record,
    metric_columns,
    spectra_names,
)
from .sources import Located, Policy, locate
from .sources.specs import is_table_spec
from .store import Record, ResultStore, cache_key, key_lock

T = TypeVar("T")

__all__ = [
    "ALL_SPECTRA",
    "BASELINE_PREFIX",
    "CORE_SPECTRA",
    "EXTRA_SPECTRA",
    "METRIC_COLUMNS",
    "TABLE_COLUMNS",
    "ModelAnalysis",
    "ModelCard",
    "analyze",
    "compute_analysis",
    "gaussian_baseline",
    "stored_analysis",
]

Progress = Callable[[int, int, str], None]
"""``progress(done, total, message)``: called as soon as work starts, before each layer, and
once at the end."""

THREADS_ENV = "HEADFORMS_THREADS"

MAX_ROPE_POSITION = 10**7
"""Largest |d| accepted for the RoPE relative position."""

QUANT_NOTES = {
    "Q4_0": "4-bit",
    "Q4_1": "4-bit",
    "Q5_0": "5-bit",
    "Q5_1": "5-bit",
    "Q8_0": "8-bit",
    "Q2_K": "2-bit",
    "Q3_K": "3-bit",
    "Q4_K": "4-bit",
    "Q5_K": "5-bit",
    "Q6_K": "6-bit",
}


def default_threads() -> int:
    """Worker threads: ``$HEADFORMS_THREADS``, else the CPUs this process may use."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError as exc:
            raise OptionError(f"{THREADS_ENV}={value!r} is not a whole number") from exc
    return usable_cpus()


def usable_cpus() -> int:
    """The CPUs this process may use (Linux honours CPU pinning: containers, taskset)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def analysis_options(rope_position: int, fold_qk_norm: bool) -> dict[str, Any]:
    """The options that change results (part of the cache key)."""
    return {"rope_position": int(rope_position), "fold_qk_norm": bool(fold_qk_norm)}


def check_rope_position(rope_position: int) -> int:
    """The RoPE relative position as an int within range, or a clear error."""
    try:
        value = int(rope_position)
    except (TypeError, ValueError, OverflowError) as exc:
        raise OptionError(f"rope position {rope_position!r} is not a whole number") from exc
    if value != rope_position or abs(value) > MAX_ROPE_POSITION:
        raise OptionError(
            f"rope position {rope_position!r} is out of range (a whole number, |d| <= 10^7)"
        )
    return value


def analyze(
    spec: str | os.PathLike[str],
    rope_position: int = 0,
    fold_qk_norm: bool = True,
    spectra: Iterable[str] = (),
    progress: Progress | None = None,
    store: ResultStore | None = None,
    use_cache: bool = True,
    policy: Policy | None = None,
) -> ModelAnalysis:
    """Analyse every head of a model: locate -> fingerprint -> store -> open -> stream.

    ``spectra``: extra spectra to compute besides the core ones (:data:`EXTRA_SPECTRA`); a
    stored result lacking one is recomputed with it. ``use_cache=False`` computes and stores
    nothing. A published per-head table (``FILE.csv::MODEL``, :mod:`headforms.tables`) opens
    read-only, without spectra. ``spec`` may be a :class:`pathlib.Path`. ``policy``: what may
    be opened (a hosted server's :class:`headforms.hosted.Policy`), applied while locating.
    """
    spec = os.fspath(spec) if isinstance(spec, os.PathLike) else spec
    if is_table_spec(spec):
        from .tables import open_table  # pandas: only for tables

        return open_table(spec, rope_position, policy)
    wanted = spectra_names(spectra)
    rope_position = check_rope_position(rope_position)
    if progress:
        progress(0, 1, f"locating {spec}")
    located = locate(spec, policy)
    if not use_cache:
        return _compute(located, rope_position, fold_qk_norm, progress, wanted)
    store = store or ResultStore()
    key = cache_key(located.fingerprint, analysis_options(rope_position, fold_qk_norm))
    hit = _stored_analysis(store, key)
    if hit is None or not wanted <= hit.spectra.keys():
        with key_lock(key):  # one extraction per model at a time, across processes
            hit = _stored_analysis(store, key)
            if hit is None or not wanted <= hit.spectra.keys():
                wanted |= set(hit.spectra) if hit is not None else set()
                result = _compute(located, rope_position, fold_qk_norm, progress, wanted)
                store.put(key, analysis_record(result))
                return result
    hit.card.spec = spec
    if progress:
        total = hit.card.n_layers
        progress(total, total, "loaded from cache")
    return hit


def stored_analysis(
    located: Located,
    rope_position: int = 0,
    fold_qk_norm: bool = True,
    spectra: Iterable[str] = (),
    baseline: bool = False,
    store: ResultStore | None = None,
) -> ModelAnalysis | None:
    """The stored analysis of a located model with every spectrum asked for, or None; nothing
    is opened or computed (a hosted server reads what its contained workers stored).
    ``baseline``: None unless the Gaussian baseline of its shapes is stored too."""
    store = store or ResultStore()
    options = analysis_options(check_rope_position(rope_position), fold_qk_norm)
    hit = _stored_analysis(store, cache_key(located.fingerprint, options))
    if hit is None or not spectra_names(spectra) <= hit.spectra.keys():
        return None
    if baseline and store.get(baseline_key(hit.card.baseline_shapes), "baseline") is None:
        return None
    hit.card.spec = located.spec
    return hit


def _stored_analysis(store: ResultStore, key: str) -> ModelAnalysis | None:
    return _decoded(store, key, "analysis", analysis_from_record)


def _decoded(
    store: ResultStore, key: str, kind: str, from_record: Callable[[Record], T]
) -> T | None:
    """The stored result under ``key``, or None: an entry that does not decode into today's
    result classes (a missing column, a changed field) is a miss and is deleted, never an error."""
    record = store.get(key, kind)
    if record is None:
        return None
    try:
        return from_record(record)
    except (KeyError, TypeError, ValueError):
        store.delete(key)
        return None


def _compute(
    located: Located,
    rope_position: int,
    fold_qk_norm: bool,
    progress: Progress | None,
    spectra: set[str],
) -> ModelAnalysis:
    if progress:
        progress(0, 1, f"opening {located.display_name}")
    source = open_model(located)
    return compute_analysis(source, rope_position, fold_qk_norm, progress, spectra)


def gaussian_baseline(
    shapes: BaselineShapes, seed: int = BASELINE_SEED, store: ResultStore | None = None
) -> Baseline:
    """The Gaussian baseline of ``shapes`` (:mod:`headforms.baseline`), stored per shape."""
    store = store or ResultStore()
    key = baseline_key(shapes, seed)
    found = _decoded(store, key, "baseline", baseline_from_record)
    if found is None:
        with key_lock(key):
            found = _decoded(store, key, "baseline", baseline_from_record)
            if found is None:
                found = compute_baseline(shapes, seed)
                store.put(key, baseline_record(found))
    return found


def baseline_key(shapes: BaselineShapes, seed: int = BASELINE_SEED) -> str:
    """The store key of the Gaussian baseline of ``shapes``."""
    return cache_key("gaussian-baseline", {"shapes": asdict(shapes), "seed": int(seed)})


def check_options(source: ModelSource, rope_position: int) -> None:
    """Reject options that do not apply to this model, with a clear message."""
    if rope_position and not source.arch.rotary:
        raise OptionError(
            f"--rope-position applies to RoPE models only; {source.display_name} uses "
            f"{source.arch.positional} positions (use 0)"
        )


def compute_analysis(
    source: ModelSource,
    rope_position: int = 0,
    fold_qk_norm: bool = True,
    progress: Progress | None = None,
    spectra: Iterable[str] = (),
) -> ModelAnalysis:
    """Stream an opened model layer by layer and compute every head's form (no store)."""
    from threadpoolctl import threadpool_limits

    rope_position = check_rope_position(rope_position)
    check_options(source, rope_position)
    wanted = spectra_names(spectra)
    shapes = shapes_from_config(source.config)
    index = TensorIndex.for_source(source)
    check_declared_shapes(source.scheme, shapes, index)
    parts: list[dict[str, np.ndarray]] = []
    collected: dict[str, list[np.ndarray]] = {name: [] for name in ALL_SPECTRA if name in wanted}
    flags = {"qk_norm": False, "bias": False}

    def one_layer(layer: int) -> tuple[tuple[bool, bool], dict[str, np.ndarray], dict]:
        weights = read_layer(source, shapes, index, layer)
        q, k = effective_factors(source, shapes, weights, layer, rope_position, fold_qk_norm)
        factor, gram = head_factors(q, k, shapes.kv_of_head)
        batch = forms_from_factor(
            factor,
            shapes.model_dim,
            gram,
            sv_a="sv_a" in wanted,
            eig_l="eig_l_abs" in wanted,
        )
        rows = _layer_rows(layer, shapes, weights, batch)
        found = (weights.q_gain is not None, weights.q_bias is not None)
        return found, rows, {name: getattr(batch, name) for name in collected}

    def record(layer: int, result: tuple) -> None:
        found, rows, layer_spectra = result
        flags["qk_norm"] |= found[0]
        flags["bias"] |= found[1]
        parts.append(rows)
        for name, values in layer_spectra.items():
            collected[name].append(values)

    # With several threads, layers run concurrently on single-threaded BLAS: numpy releases the
    # GIL in LAPACK, and the many small 2n x 2n problems scale across cores, BLAS threads do not.
    # At most threads + 1 layers are in flight, so memory stays at a few layers' Q/K whatever
    # the number of layers.
    threads = min(default_threads(), shapes.n_layers)
    n = shapes.n_layers
    if threads <= 1:
        with threadpool_limits(limits=max(1, default_threads())):
            for layer in range(n):
                if progress:
                    progress(layer, n, f"layer {layer + 1}/{n}")
                record(layer, one_layer(layer))
    else:
        with ThreadPoolExecutor(threads) as pool, threadpool_limits(limits=1):
            pending: deque[Future] = deque()
            submitted = 0
            try:
                for layer in range(n):
                    while submitted < n and len(pending) <= threads:
                        pending.append(pool.submit(one_layer, submitted))
                        submitted += 1
                    if progress:
                        progress(layer, n, f"layer {layer + 1}/{n}")
                    record(layer, pending.popleft().result())
            finally:
                for future in pending:
                    future.cancel()
    if progress:
        progress(n, n, "done")
    columns = {c: np.concatenate([p[c] for p in parts]) for c in TABLE_COLUMNS}
    card = _card(source, shapes, index, rope_position, fold_qk_norm, flags)
    return ModelAnalysis(card, columns, {k: np.concatenate(v) for k, v in collected.items()})


def _layer_rows(
    layer: int, shapes: Shapes, weights: LayerWeights, batch: FormBatch
) -> dict[str, np.ndarray]:
    rows = metric_columns(layer, np.arange(shapes.n_heads), batch)
    kv = shapes.kv_of_head
    rows["kv_head"] = kv
    if weights.q_bias is not None:
        rows["q_bias_norm"] = np.linalg.norm(weights.q_bias, axis=-1)
        rows["k_bias_norm"] = np.linalg.norm(weights.k_bias, axis=-1)[kv]
    else:
        rows["q_bias_norm"] = rows["k_bias_norm"] = np.full(shapes.n_heads, np.nan)
    return {name: rows[name] for name in TABLE_COLUMNS}


def parameter_count(reader: TensorReader) -> int:
    """Number of stored parameters (elements of every tensor), read from the file headers."""
    return int(sum(math.prod(reader.shape(name)) for name in reader.names()))


def _card(
    source: ModelSource,
    shapes: Shapes,
    index: TensorIndex,
    rope_position: int,
    fold: bool,
    flags: dict[str, bool],
) -> ModelCard:
    reader = source.reader
    q_name = index.name(source.scheme.patterns["q_weight"], 0)
    storage = reader.storage_dtype(q_name)
    if source.kind != "gguf":
        storage = storage.upper()
    notes: list[str] = []
    arch = source.arch
    if flags["qk_norm"]:
        notes.append(
            "QK-norm gains are folded into the form: L = K^T diag(g_k) diag(g_q) Q; the RMS "
            "normalisation is a data-dependent positive factor and is left out."
            if fold
            else "QK-norm gains are NOT folded (raw projections): spectra do not reflect the "
            "effective form."
        )
    if flags["bias"]:
        notes.append(
            "Q/K biases exist and are excluded from L (as in the paper); their norms are "
            "reported per head."
        )
    if storage in QUANT_NOTES:
        notes.append(
            f"Weights are {QUANT_NOTES[storage]} quantized ({storage}): rounding noise moves the "
            "eigenvalues of S slightly (about 1% of ||S|| at 4 bits); profiles are robust to it."
        )
    if arch.positional == "alibi":
        notes.append("ALiBi adds a position bias outside the bilinear form; L is position-free.")
    rope: list[dict[str, Any]] = []
    if arch.rotary:
        seen = set()
        for layer in range(shapes.n_layers):
            params = rope_parameters(source.config, layer)
            inv = inverse_frequencies(source.config, shapes.head_dim, layer)
            entry = {
                "rope_type": params.get("rope_type", "default"),
                "theta": params.get("rope_theta"),
                "rotary_dims": 2 * len(inv),
            }
            key = tuple(sorted(entry.items(), key=lambda kv: kv[0]))
            if key not in seen:
                seen.add(key)
                rope.append({**entry, "layers": [layer]})
            else:
                next(r for r in rope if all(r[k] == v for k, v in entry.items()))["layers"].append(
                    layer
                )
        notes.append(
            f"RoPE at relative position d = {rope_position} (query d tokens after key)"
            + (
                "; d = 0 makes the rotation the identity, as in the paper."
                if not rope_position
                else ", with the model's own rotate-half pairing and frequencies."
            )
        )
    if shapes.n_kv_heads != shapes.n_heads:
        notes.append(
            f"Grouped-query attention: {shapes.n_heads} query heads share {shapes.n_kv_heads} key "
            "heads (query head h uses key head h // (H / H_kv))."
        )
    return ModelCard(
        spec=source.spec,
        name=source.display_name,
        source_kind=source.kind,
        family=arch.family,
        model_type=str(getattr(source.config, "model_type", arch.model_types[0])),
        n_layers=shapes.n_layers,
        model_dim=shapes.model_dim,
        n_heads=shapes.n_heads,
        n_kv_heads=shapes.n_kv_heads,
        head_dim=shapes.head_dim,
        positional=arch.positional,
        storage=storage,
        rope_position=int(rope_position),
        qk_norm=flags["qk_norm"],
        qk_norm_folded=flags["qk_norm"] and fold,
        has_qk_bias=flags["bias"],
        rope=rope,
        notes=notes,
        fingerprint=source.fingerprint,
        weight_bytes=source.weight_bytes,
        n_parameters=parameter_count(reader) if source.all_weights else source.n_parameters,
    )
