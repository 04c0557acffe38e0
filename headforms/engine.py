"""The engine: model spec -> one exact row per attention head, its spectra and a baseline.

Weights are streamed layer by layer (peak memory about one layer's Q/K); each layer's heads
are computed at once from their Gram matrices (:mod:`headforms.forms`). Results are cached
on disk under a key of the weights' fingerprint and the options, so a second analysis of the
same model is a cache read. The Gaussian baseline (:mod:`headforms.baseline`) depends only on
the shapes and is computed, and cached per shape, when it is first asked for.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from .baseline import BASELINE_SEED, Baseline, BaselineShapes, compute_baseline
from .errors import OptionError
from .forms import FormBatch, forms_from_factor, head_factors
from .models.architectures import Shapes, shapes_from_config
from .models.extract import TensorIndex, effective_factors, read_layer
from .models.rope import inverse_frequencies, rope_parameters
from .sources import ModelSource, resolve
from .store import ResultCache, cache_key, key_lock

Progress = Callable[[int, int, str], None]
"""``progress(done, total, message)``: called before each layer and once at the end."""

THREADS_ENV = "HEADFORMS_THREADS"

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

METRIC_COLUMNS = (
    "a",
    "b",
    "c",
    "d",
    "b_sym",
    "c_sym",
    "d_sym",
    "energy",
    "pairing",
    "parity",
    "n_pos",
    "n_neg",
    "n_zero",
    "norm_l",
    "balance",
    "participation_ratio",
    "stable_rank",
    "leading_share",
    "rho",
    "lobe_departure",
    "pairing_bound",
    "pairing_gap",
    "theorem5_b",
    "theorem5_c",
    "theorem5_d",
)
"""Per-head metrics of a form (:func:`headforms.forms.form_metrics`), in table order."""

TABLE_COLUMNS = ("layer", "head", "kv_head", *METRIC_COLUMNS, "q_bias_norm", "k_bias_norm")
"""Columns of a model's per-head table."""

BASELINE_PREFIX = "rand_"
"""Prefix of the baseline's columns when they are joined to a model's table
(:meth:`ModelAnalysis.table`): the only place where the two tables meet."""

CORE_SPECTRA = ("eig_s", "lobe_pos", "lobe_neg")
"""Spectra every analysis has (the per-head table is computed from them)."""

EXTRA_SPECTRA = ("sv_a", "eig_l_abs")
"""Spectra computed only when asked for: singular values of A, moduli of the eigenvalues of L."""

ALL_SPECTRA = CORE_SPECTRA + EXTRA_SPECTRA


@dataclass
class ModelCard:
    """What the model is, as shown on the overview page and in exports."""

    spec: str
    name: str
    source_kind: str
    family: str
    model_type: str
    n_layers: int
    model_dim: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    positional: str
    storage: str
    rope_position: int
    qk_norm: bool
    qk_norm_folded: bool
    has_qk_bias: bool
    rope: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fingerprint: str = ""
    weight_bytes: int = 0
    n_parameters: int | None = None

    @property
    def total_heads(self) -> int:
        """Number of query heads in the model."""
        return self.n_layers * self.n_heads

    @property
    def baseline_shapes(self) -> BaselineShapes:
        """The shapes the Gaussian baseline of this model depends on."""
        return BaselineShapes(self.n_layers, self.n_heads, self.head_dim, self.model_dim)

    def as_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON and the overview table)."""
        return asdict(self)


@dataclass
class ModelAnalysis:
    """One model's per-head table, spectra and card; its Gaussian baseline on demand.

    ``heads``: one row per query head, layer-major (columns :data:`TABLE_COLUMNS`).
    ``spectra``: arrays aligned with the rows: always ``eig_s`` (the 2n eigenvalues of S that can
    be non-zero, decreasing), ``lobe_pos``/``lobe_neg``; ``sv_a`` (singular values of A) and
    ``eig_l_abs`` (moduli of the eigenvalues of L) when asked for (``analyze(spectra=...)``).
    ``baseline``: :class:`headforms.baseline.Baseline` of the same shapes, computed (and cached)
    on first access.
    """

    card: ModelCard
    heads: pd.DataFrame
    spectra: dict[str, np.ndarray]

    def row(self, layer: int, head: int) -> int:
        """Row index of a head (layer-major order)."""
        if not (0 <= layer < self.card.n_layers and 0 <= head < self.card.n_heads):
            raise IndexError(f"no head L{layer}H{head} in {self.card.name}")
        return layer * self.card.n_heads + head

    @cached_property
    def baseline(self) -> Baseline:
        """Independent Gaussian ``K, Q`` of this model's shapes (cached on disk per shape)."""
        return gaussian_baseline(self.card.baseline_shapes)

    def table(self, baseline: bool = False) -> pd.DataFrame:
        """The per-head table; with ``baseline``, the baseline's metrics as ``rand_*`` columns."""
        if not baseline:
            return self.heads
        base = self.baseline.heads[list(METRIC_COLUMNS)].add_prefix(BASELINE_PREFIX)
        return pd.concat([self.heads.reset_index(drop=True), base.reset_index(drop=True)], axis=1)

    def arrays(self, baseline: bool = False) -> dict[str, np.ndarray]:
        """The spectra, rows aligned with the table; ``baseline`` adds its spectra as ``rand_*``."""
        out = dict(self.spectra)
        if baseline:
            out.update({BASELINE_PREFIX + k: v for k, v in self.baseline.spectra.items()})
        return out


def default_threads() -> int:
    """BLAS threads for the engine: ``$HEADFORMS_THREADS`` or the number of usable cores."""
    value = os.environ.get(THREADS_ENV)
    if value:
        return max(1, int(value))
    return max(1, len(os.sched_getaffinity(0)))


def analysis_options(rope_position: int, fold_qk_norm: bool) -> dict[str, Any]:
    """The options that change results (part of the cache key)."""
    return {"rope_position": int(rope_position), "fold_qk_norm": bool(fold_qk_norm)}


def spectra_names(spectra: Iterable[str]) -> set[str]:
    """The spectra to compute: the core ones plus those asked for (unknown names: an error)."""
    names = set(spectra)
    unknown = names - set(ALL_SPECTRA)
    if unknown:
        raise OptionError(
            f"unknown spectra {sorted(unknown)}; accepted: {', '.join(EXTRA_SPECTRA)}"
        )
    return names | set(CORE_SPECTRA)


def analyze(
    spec: str,
    rope_position: int = 0,
    fold_qk_norm: bool = True,
    spectra: Iterable[str] = (),
    progress: Progress | None = None,
    cache: ResultCache | None = None,
    use_cache: bool = True,
) -> ModelAnalysis:
    """Analyse every head of a model (cached). See :func:`compute_analysis` for the work.

    ``spectra``: extra spectra to compute besides the core ones (:data:`EXTRA_SPECTRA`).
    """
    wanted = spectra_names(spectra)
    source = resolve(spec)
    check_options(source, rope_position)
    if not use_cache:
        return compute_analysis(source, rope_position, fold_qk_norm, progress, wanted)
    cache = cache or ResultCache()
    key = cache_key(source.fingerprint, analysis_options(rope_position, fold_qk_norm))
    hit = cache.get(key)
    if hit is None or not wanted <= hit.spectra.keys():
        with key_lock(key):  # one extraction per model at a time, across processes
            hit = cache.get(key)
            if hit is None or not wanted <= hit.spectra.keys():
                wanted |= set(hit.spectra) if hit is not None else set()
                hit = compute_analysis(source, rope_position, fold_qk_norm, progress, wanted)
                cache.set(key, hit)
                return hit
    hit.card.spec = spec
    if progress:
        total = hit.card.n_layers
        progress(total, total, "loaded from cache")
    return hit


def gaussian_baseline(
    shapes: BaselineShapes, seed: int = BASELINE_SEED, cache: ResultCache | None = None
) -> Baseline:
    """The Gaussian baseline of ``shapes`` (:mod:`headforms.baseline`), cached on disk."""
    cache = cache or ResultCache()
    key = cache_key("gaussian-baseline", {"shapes": asdict(shapes), "seed": int(seed)})
    hit = cache.get(key)
    if hit is None:
        with key_lock(key):
            hit = cache.get(key)
            if hit is None:
                hit = compute_baseline(shapes, seed)
                cache.set(key, hit)
    return hit


def check_options(source: ModelSource, rope_position: int) -> None:
    """Reject options that do not apply to this model, with a clear message."""
    if rope_position and not source.arch.rotary:
        raise OptionError(
            f"--rope-position applies to RoPE models only; {source.display_name} uses "
            f"{source.arch.positional} positions (use 0)"
        )
    if abs(int(rope_position)) > 10**7:
        raise OptionError(f"rope position {rope_position} is out of range (|d| <= 10^7)")


def compute_analysis(
    source: ModelSource,
    rope_position: int = 0,
    fold_qk_norm: bool = True,
    progress: Progress | None = None,
    spectra: Iterable[str] = (),
) -> ModelAnalysis:
    """Stream the model layer by layer and compute every head's form."""
    from threadpoolctl import threadpool_limits

    wanted = spectra_names(spectra)
    shapes = shapes_from_config(source.config)
    index = TensorIndex(source.reader, source.patterns["q_weight"])
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

    # With several threads, layers run concurrently on single-threaded BLAS: numpy releases the
    # GIL in LAPACK, and the many small 2n x 2n problems scale across cores, BLAS threads do not.
    threads = default_threads()
    pool = ThreadPoolExecutor(threads) if threads > 1 and shapes.n_layers > 1 else None
    try:
        with threadpool_limits(limits=1 if pool else threads):
            results = pool.map(one_layer, range(shapes.n_layers)) if pool else None
            for layer in range(shapes.n_layers):
                if progress:
                    progress(layer, shapes.n_layers, f"layer {layer + 1}/{shapes.n_layers}")
                found, rows, layer_spectra = next(results) if results else one_layer(layer)
                flags["qk_norm"] |= found[0]
                flags["bias"] |= found[1]
                parts.append(rows)
                for name, values in layer_spectra.items():
                    collected[name].append(values)
    finally:
        if pool:
            pool.shutdown(wait=True, cancel_futures=True)
    if progress:
        progress(shapes.n_layers, shapes.n_layers, "done")
    heads = pd.DataFrame({c: np.concatenate([p[c] for p in parts]) for c in TABLE_COLUMNS})
    card = _card(source, shapes, index, rope_position, fold_qk_norm, flags)
    return ModelAnalysis(card, heads, {k: np.concatenate(v) for k, v in collected.items()})


def metric_columns(layer: int, head: np.ndarray, batch: FormBatch) -> dict[str, np.ndarray]:
    """``layer``, ``head`` and every :data:`METRIC_COLUMNS` of one layer's batch of forms."""
    metrics = batch.metrics()
    columns = {"layer": np.full(len(head), layer), "head": np.asarray(head)}
    columns.update({name: metrics[name] for name in METRIC_COLUMNS})
    return columns


def _layer_rows(
    layer: int, shapes: Shapes, weights: Any, batch: FormBatch
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


def parameter_count(reader: Any) -> int:
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
    q_name = index.name(source.patterns["q_weight"], 0)
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
        weight_bytes=source.total_bytes,
        n_parameters=parameter_count(reader) if source.all_weights else None,
    )
