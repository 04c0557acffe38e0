"""The engine: model spec -> one exact row per attention head, its spectra and a baseline.

Weights are streamed layer by layer (peak memory about one layer's Q/K); each layer's heads
are computed at once from their Gram matrices (:mod:`headforms.forms`). Results are cached
on disk under a key of the weights' fingerprint and the options, so a second analysis of the
same model is a cache read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .errors import OptionError
from .forms import FormBatch, forms_from_factor, head_forms, wishart_factor
from .models.architectures import Shapes, shapes_from_config
from .models.extract import TensorIndex, effective_factors, read_layer
from .models.rope import inverse_frequencies, rope_parameters
from .sources import ModelSource, resolve
from .store import ResultCache, cache_key, key_lock

Progress = Callable[[int, int, str], None]
"""``progress(done, total, message)``: called before each layer and once at the end."""

BASELINE_SEED = 20260929
"""Seed of the Gaussian baseline (per layer: ``default_rng([seed, layer])``)."""

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

TABLE_COLUMNS = (
    "layer",
    "head",
    "kv_head",
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
    "q_bias_norm",
    "k_bias_norm",
)
BASELINE_PREFIX = "rand_"
BASELINE_METRICS = ("a", "b", "c", "d", "b_sym", "c_sym", "d_sym", "energy", "pairing", "parity")


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

    @property
    def total_heads(self) -> int:
        """Number of query heads in the model."""
        return self.n_layers * self.n_heads

    def as_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON and the overview table)."""
        return asdict(self)


@dataclass
class ModelAnalysis:
    """One model's per-head table, spectra and card.

    ``heads``: one row per query head (columns :data:`TABLE_COLUMNS` plus ``rand_*`` baseline
    columns). ``spectra``: arrays aligned with the rows: ``eig_s`` (2n eigenvalues of S that can be
    non-zero, decreasing), ``lobe_pos``/``lobe_neg``, ``sv_a`` (singular values of A),
    ``eig_l_abs`` (moduli of the eigenvalues of L) and the same with the ``rand_`` prefix.
    """

    card: ModelCard
    heads: pd.DataFrame
    spectra: dict[str, np.ndarray]

    def row(self, layer: int, head: int) -> int:
        """Row index of a head (layer-major order)."""
        if not (0 <= layer < self.card.n_layers and 0 <= head < self.card.n_heads):
            raise IndexError(f"no head L{layer}H{head} in {self.card.name}")
        return layer * self.card.n_heads + head


def default_threads() -> int:
    """BLAS threads for the engine: ``$HEADFORMS_THREADS`` or the number of usable cores."""
    value = os.environ.get(THREADS_ENV)
    if value:
        return max(1, int(value))
    return max(1, len(os.sched_getaffinity(0)))


def analysis_options(rope_position: int, fold_qk_norm: bool) -> dict[str, Any]:
    """The options that change results (part of the cache key)."""
    return {
        "rope_position": int(rope_position),
        "fold_qk_norm": bool(fold_qk_norm),
        "baseline_seed": BASELINE_SEED,
    }


def analyze(
    spec: str,
    rope_position: int = 0,
    fold_qk_norm: bool = True,
    progress: Progress | None = None,
    cache: ResultCache | None = None,
    use_cache: bool = True,
) -> ModelAnalysis:
    """Analyse every head of a model (cached). See :func:`compute_analysis` for the work."""
    source = resolve(spec)
    check_options(source, rope_position)
    if not use_cache:
        return compute_analysis(source, rope_position, fold_qk_norm, progress)
    cache = cache or ResultCache()
    key = cache_key(source.fingerprint, analysis_options(rope_position, fold_qk_norm))
    hit = cache.get(key)
    if hit is None:
        with key_lock(key):  # one extraction per model at a time, across processes
            hit = cache.get(key)
            if hit is None:
                hit = compute_analysis(source, rope_position, fold_qk_norm, progress)
                cache.set(key, hit)
                return hit
    hit.card.spec = spec
    if progress:
        total = hit.card.n_layers
        progress(total, total, "loaded from cache")
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
) -> ModelAnalysis:
    """Stream the model layer by layer and compute every head's form and its baseline."""
    from threadpoolctl import threadpool_limits

    shapes = shapes_from_config(source.config)
    index = TensorIndex(source.reader, source.patterns["q_weight"])
    parts: list[dict[str, np.ndarray]] = []
    spectra: dict[str, list[np.ndarray]] = {}
    flags = {"qk_norm": False, "bias": False}

    def one_layer(layer: int) -> tuple[tuple[bool, bool], dict[str, np.ndarray], dict]:
        weights = read_layer(source, shapes, index, layer)
        q, k = effective_factors(source, shapes, weights, layer, rope_position, fold_qk_norm)
        batch = head_forms(q, k, shapes.kv_of_head)
        rng = np.random.default_rng([BASELINE_SEED, layer])
        baseline = forms_from_factor(
            wishart_factor(rng, shapes.n_heads, shapes.head_dim, shapes.model_dim),
            shapes.model_dim,
            eig_l=False,  # the baseline keeps eig_s and sv_a only
        )
        rows = _layer_rows(layer, shapes, weights, batch, baseline)
        found = (weights.q_gain is not None, weights.q_bias is not None)
        return found, rows, _layer_spectra(batch, baseline)  # small: no weights kept

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
                    spectra.setdefault(name, []).append(values)
    finally:
        if pool:
            pool.shutdown(wait=True, cancel_futures=True)
    if progress:
        progress(shapes.n_layers, shapes.n_layers, "done")
    heads = pd.DataFrame({c: np.concatenate([p[c] for p in parts]) for c in parts[0]})
    card = _card(source, shapes, index, rope_position, fold_qk_norm, flags)
    return ModelAnalysis(card, heads, {k: np.concatenate(v) for k, v in spectra.items()})


def _layer_rows(
    layer: int, shapes: Shapes, weights: Any, batch: FormBatch, baseline: FormBatch
) -> dict[str, np.ndarray]:
    metrics = batch.metrics()
    H = shapes.n_heads
    kv = shapes.kv_of_head
    rows: dict[str, np.ndarray] = {
        "layer": np.full(H, layer),
        "head": np.arange(H),
        "kv_head": kv,
    }
    rows.update({name: metrics[name] for name in TABLE_COLUMNS if name in metrics})
    if weights.q_bias is not None:
        rows["q_bias_norm"] = np.linalg.norm(weights.q_bias, axis=-1)
        rows["k_bias_norm"] = np.linalg.norm(weights.k_bias, axis=-1)[kv]
    else:
        rows["q_bias_norm"] = rows["k_bias_norm"] = np.full(H, np.nan)
    rows = {name: rows[name] for name in TABLE_COLUMNS}
    base = baseline.metrics()
    rows.update({BASELINE_PREFIX + name: base[name] for name in BASELINE_METRICS})
    return rows


def _layer_spectra(batch: FormBatch, baseline: FormBatch) -> dict[str, np.ndarray]:
    names = ("eig_s", "lobe_pos", "lobe_neg", "sv_a", "eig_l_abs")
    out = {name: getattr(batch, name) for name in names}
    out.update({BASELINE_PREFIX + name: getattr(baseline, name) for name in ("eig_s", "sv_a")})
    return out


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
    )
