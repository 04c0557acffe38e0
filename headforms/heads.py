"""The forms stage: one layer's stored factors -> its heads' forms, metrics and spectra at a
RoPE position, with no config, weights, transformers or torch.

:func:`effective_factors` applies the options to a layer's factors (QK-norm gains folded, the
RoPE rotation ``R_d`` of the layer's stored frequencies applied to Q: ``L_d = K^T R_d Q``), and
:func:`layer_heads` computes every head of the layer at once (:mod:`headforms.forms`): the rows
of the per-head table and the spectra asked for. A sweep over positions can reuse the
``d``-independent part: with ``U = [K^T, Q^T]`` and ``G = U^T U``, the Gram matrix of ``L_d`` is
``D G D^T`` with ``D = diag(I, R_d)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .columns import ALL_SPECTRA, METRIC_COLUMNS, TABLE_COLUMNS
from .factors import LayerFactors
from .forms import FormBatch, forms_from_factor, head_factors
from .models.rope import rotation
from .options import AnalysisOptions


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
    rows["kv_head"] = kv_of_head
    if layer.q_bias is not None:
        rows["q_bias_norm"] = np.linalg.norm(np.asarray(layer.q_bias, np.float64), axis=-1)
        rows["k_bias_norm"] = np.linalg.norm(np.asarray(layer.k_bias, np.float64), axis=-1)[
            kv_of_head
        ]
    else:
        rows["q_bias_norm"] = rows["k_bias_norm"] = np.full(n_heads, np.nan)
    spectra = {name: getattr(batch, name) for name in ALL_SPECTRA if name in options.spectra}
    return LayerHeads({name: rows[name] for name in TABLE_COLUMNS}, spectra)
