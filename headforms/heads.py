"""The forms stage: one layer's stored factors -> its heads' forms, metrics and spectra at a
RoPE position, with no config, weights, transformers or torch.

:func:`effective_factors` applies the options to a layer's factors (QK-norm gains folded, the
RoPE rotation ``R_d`` of the layer's stored frequencies applied to Q: ``L_d = K^T R_d Q``), and
:func:`layer_heads` computes every head of the layer at once (:mod:`headforms.forms`): the rows
of the per-head table and the spectra asked for.

:func:`layer_sweep` does the same at many positions at once, reusing what does not depend on d.
With ``U = [K^T, Q^T]`` and ``G = U^T U = F F^T`` (``F = [F_top; F_bot]``, computed once per
head), the Gram matrix of ``L_d`` is ``D G D^T`` with ``D = diag(I, R_d)``, so ``D F`` is a factor
of it and ``X_d = F_top^T R_d F_bot`` plays the part of ``X`` in :mod:`headforms.forms`: S_d
corresponds to ``(X_d + X_d^T)/2``, ``||L_d||^2 = ||X_d||^2``, ``tr(L_d^2) = tr(X_d^2)``, and
the first n rows of X_d (its only non-zero ones) give the singular values of L_d.
``R_d`` only turns pairs of rows of ``F_bot`` (the pairs ``(i, i + r/2)`` by ``d theta_i``), so each
position costs one small product (the part of ``F_top^T`` that meets rotated rows, turned by the
cosines and sines of ``d theta_i``, times those rows) and one ``2n x 2n`` eigenvalue problem.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .columns import ALL_SPECTRA, METRIC_COLUMNS, TABLE_COLUMNS
from .factors import LayerFactors
from .forms import FormBatch, form_batch, form_metrics, forms_from_factor, head_factors
from .models.rope import rotation
from .options import AnalysisOptions, SweepOptions

SWEEP_CHUNK_BYTES = 16 * 2**20
"""Bytes of the ``X_d`` matrices of one layer computed at once (positions are taken in chunks of
this size: memory stays bounded whatever the number of positions)."""


def effective_factors(
    layer: LayerFactors, rope_position: int = 0, fold_qk_norm: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """``(Q', K')`` (float64) with ``L_h = K'_{kv(h)}^T Q'_h``: gains folded, ``R_d`` applied to
    Q (a layer without stored frequencies has no RoPE: ``d`` does not apply)."""
    q = np.asarray(layer.q, dtype=np.float64)
    k = np.asarray(layer.k, dtype=np.float64)
    if fold_qk_norm and layer.q_gain is not None:
        q = q * layer.q_gain[None, :, None]
        k = k * layer.k_gain[None, :, None]
    if rope_position and layer.inv_freq is not None:
        q = rotation(layer.inv_freq, q.shape[1], rope_position) @ q
    return q, k


def metric_columns(layer: int, n_heads: int, batch: FormBatch) -> dict[str, np.ndarray]:
    """``layer``, ``head`` and every :data:`METRIC_COLUMNS` of one layer's batch of forms."""
    metrics = batch.metrics()
    columns = {"layer": np.full(n_heads, layer), "head": np.arange(n_heads)}
    columns.update({name: metrics[name] for name in METRIC_COLUMNS})
    return columns


@dataclass(frozen=True)
class LayerHeads:
    """One layer's rows of the per-head table (:data:`TABLE_COLUMNS`) and spectra."""

    rows: dict[str, np.ndarray]
    spectra: dict[str, np.ndarray]


def layer_heads(
    index: int,
    layer: LayerFactors,
    kv_of_head: np.ndarray,
    model_dim: int,
    options: AnalysisOptions,
) -> LayerHeads:
    """Every head of layer ``index`` at ``options`` from the layer's factors."""
    q, k = effective_factors(layer, options.rope_position, options.fold_qk_norm)
    factor, gram = head_factors(q, k, kv_of_head)
    batch = forms_from_factor(
        factor,
        model_dim,
        gram,
        sv_a="sv_a" in options.spectra,
        eig_l="eig_l_abs" in options.spectra,
    )
    n_heads = len(kv_of_head)
    rows = metric_columns(index, n_heads, batch)
    rows.update(head_columns(layer, kv_of_head))
    spectra = {name: getattr(batch, name) for name in ALL_SPECTRA if name in options.spectra}
    return LayerHeads({name: rows[name] for name in TABLE_COLUMNS}, spectra)


def head_columns(layer: LayerFactors, kv_of_head: np.ndarray) -> dict[str, np.ndarray]:
    """The columns of a layer's heads that no position changes: key head, bias norms."""
    n_heads = len(kv_of_head)
    if layer.q_bias is None:
        nothing = np.full(n_heads, np.nan)
        return {"kv_head": kv_of_head, "q_bias_norm": nothing, "k_bias_norm": nothing.copy()}
    return {
        "kv_head": kv_of_head,
        "q_bias_norm": np.linalg.norm(np.asarray(layer.q_bias, np.float64), axis=-1),
        "k_bias_norm": np.linalg.norm(np.asarray(layer.k_bias, np.float64), axis=-1)[kv_of_head],
    }


@dataclass(frozen=True)
class LayerSweep:
    """One layer's rows at every position of a sweep: ``rows[column]`` of shape (positions,
    heads) for :data:`TABLE_COLUMNS`; ``eig_s`` (positions, heads, 2n) when kept, else None."""

    rows: dict[str, np.ndarray]
    eig_s: np.ndarray | None


def layer_sweep(
    index: int,
    layer: LayerFactors,
    kv_of_head: np.ndarray,
    model_dim: int,
    options: SweepOptions,
) -> LayerSweep:
    """Every head of layer ``index`` at every position of ``options`` (module doc): the Gram
    matrix and its factor once, then per position one product and one eigenvalue problem."""
    q, k = effective_factors(layer, 0, options.fold_qk_norm)
    factor, gram = head_factors(q, k, kv_of_head)
    n_heads, n = q.shape[0], q.shape[1]
    trace_g = np.trace(gram, axis1=-2, axis2=-1)
    f_top, f_bot = factor[:, :n, :], factor[:, n:, :]
    # The factor is lower triangular (Cholesky, or R^T of a QR: forms.head_factors), so F_top =
    # [F_11, 0]: the last n rows of X_d = F_top^T R_d F_bot vanish and only the first n are made.
    if f_top[..., n:].any():
        raise AssertionError("head_factors must give lower-triangular factors")
    left = np.ascontiguousarray(np.swapaxes(f_top[..., :n], -1, -2))  # F_11^T (H, n, n)
    inv_freq = np.zeros(0) if layer.inv_freq is None else np.asarray(layer.inv_freq, np.float64)
    half = len(inv_freq)
    turned = 2 * half
    fixed = left[..., turned:] @ f_bot[:, turned:, :]  # the unrotated dims: the same at every d
    positions = np.asarray(options.positions, dtype=np.float64)
    chunk = max(1, SWEEP_CHUNK_BYTES // (n_heads * (2 * n) ** 2 * 8))
    first, second = left[:, None, :, :half], left[:, None, :, half:turned]
    parts: list[dict[str, np.ndarray]] = []
    spectra: list[np.ndarray] = []
    for start in range(0, len(positions), chunk):
        angle = positions[start : start + chunk, None] * inv_freq[None, :]
        count = len(angle)
        cos, sin = np.cos(angle)[None, :, None, :], np.sin(angle)[None, :, None, :]
        # F_top^T R_d, heads x positions: the column pairs (i, i + half) turned by d theta_i
        turned_left = np.concatenate([first * cos + second * sin, second * cos - first * sin], -1)
        y = turned_left.reshape(n_heads, count * n, turned) @ f_bot[:, :turned, :]
        y = y.reshape(n_heads, count, n, 2 * n) + fixed[:, None]  # the rows of X_d
        norm_l2 = np.einsum("hpij,hpij->hp", y, y)
        trace_ll = np.einsum("hpij,hpji->hp", y[..., :n], y[..., :n])  # tr(X^2) = tr(X_11^2)
        sym = _upper_symmetric(y, n)
        batch = form_batch(model_dim, sym, norm_l2, trace_ll, trace_g[:, None], y, uplo="U")
        metrics = form_metrics(batch)
        parts.append({name: metrics[name].T for name in METRIC_COLUMNS})  # (positions, heads)
        if options.spectra:
            spectra.append(np.swapaxes(batch.eig_s, 0, 1))
    steady = head_columns(layer, kv_of_head)
    steady.update(layer=np.full(n_heads, index), head=np.arange(n_heads))
    total = len(positions)
    rows = {
        name: np.concatenate([p[name] for p in parts])
        if name in METRIC_COLUMNS
        else np.broadcast_to(steady[name], (total, n_heads))
        for name in TABLE_COLUMNS
    }
    return LayerSweep(rows, np.concatenate(spectra) if options.spectra else None)


def _upper_symmetric(rows: np.ndarray, n: int) -> np.ndarray:
    """The upper triangle of ``(X + X^T) / 2`` (the lower one is left undefined) of ``X`` whose
    first ``n`` rows are ``rows`` and whose last ``n`` vanish: the blocks ``sym(X_11)``,
    ``X_12 / 2`` and 0, with no transposed copy of ``X_12``."""
    sym = np.empty((*rows.shape[:-2], 2 * n, 2 * n))
    top = rows[..., :n]
    sym[..., :n, :n] = (top + np.swapaxes(top, -1, -2)) / 2.0
    sym[..., :n, n:] = rows[..., n:] / 2.0
    sym[..., n:, n:] = 0.0
    return sym
