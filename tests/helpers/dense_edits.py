"""The tests' dense reference for edited forms: ``N x N`` matrices straight from the definitions
(RoPE rotation built here, dense eigenproblems and SVDs), independent of
headforms.interventions."""

from __future__ import annotations

from typing import Any

import numpy as np


def rotation(inv_freq: np.ndarray | None, head_dim: int, distance: int) -> np.ndarray:
    """``R_d``: the rotate-half pairs ``(i, i + half)`` turned by ``d theta_i``; the rest fixed."""
    rot = np.eye(head_dim)
    if inv_freq is None:
        return rot
    half = len(inv_freq)
    for i, theta in enumerate(inv_freq):
        c, s = np.cos(distance * theta), np.sin(distance * theta)
        rot[i, i], rot[i, i + half] = c, -s
        rot[i + half, i], rot[i + half, i + half] = s, c
    return rot


def dense_form(q: np.ndarray, k: np.ndarray, inv_freq: np.ndarray | None, d: int) -> np.ndarray:
    """``L_d = K^T R_d Q`` (``N x N``)."""
    return k.T @ rotation(inv_freq, q.shape[0], d) @ q


def dense_balanced(form: np.ndarray) -> np.ndarray:
    """``A + H``: the k-th positive and k-th negative eigenvalues of S both set to
    ``+-min(lambda_+k, lambda_-k)`` (an unpaired one to 0), eigenvectors kept."""
    sym, skew = (form + form.T) / 2.0, (form - form.T) / 2.0
    values, vectors = np.linalg.eigh(sym)
    new = np.zeros_like(values)
    positive = [i for i in np.argsort(-values) if values[i] > 0]
    negative = [i for i in np.argsort(values) if values[i] < 0]
    for a, b in zip(positive, negative, strict=False):
        common = min(values[a], -values[b])
        new[a], new[b] = common, -common
    return skew + (vectors * new) @ vectors.T


def dense_edit(form: np.ndarray, edit: str) -> np.ndarray:
    """``M = T(L)`` of a form edit, by its definition."""
    sym, skew = (form + form.T) / 2.0, (form - form.T) / 2.0
    if edit == "identity":
        return form
    if edit == "symmetric":
        return sym
    if edit == "antisymmetric":
        return skew
    if edit == "transpose":
        return form.T
    if edit == "flip":
        return skew - sym
    if edit == "zero":
        return np.zeros_like(form)
    if edit == "rank1":
        u, s, vt = np.linalg.svd(form)
        return s[0] * np.outer(u[:, 0], vt[0])
    if edit == "balanced":
        return dense_balanced(form)
    raise ValueError(edit)


def dense_change(
    q: np.ndarray,
    k: np.ndarray,
    inv_freq: np.ndarray | None,
    x: np.ndarray,
    edit: str,
    causal: bool,
) -> np.ndarray:
    """``[i, j] = x_j^T (M_d - L_d) x_i`` at ``d = i - j`` (0 where a causal key is unseen)."""
    length = len(x)
    out = np.zeros((length, length))
    cache: dict[int, np.ndarray] = {}
    for i in range(length):
        for j in range(length):
            if causal and j > i:
                continue
            d = i - j if inv_freq is not None else 0
            if d not in cache:
                form = dense_form(q, k, inv_freq, d)
                cache[d] = dense_edit(form, edit) - form
            out[i, j] = x[j] @ cache[d] @ x[i]
    return out


def dense_edited_scores(
    augmented: Any,
    head: int,
    kv: int,
    x: np.ndarray,
    edit: str,
    causal: bool,
    scale: float,
    eps: float | None,
) -> np.ndarray:
    """An edited head's pre-softmax scores ``(T, T)`` (NaN where a causal key is unseen):
    ``scale * (logit - x_j^T L_d x_i + x_j^T M_d x_i) / (r_q(i) r_k(j))``, the full logit (bias
    terms included) from a layer's factors whose bias is an extra input column (``augmented``:
    ``tiny_models.with_bias_column`` of the engine's ``read_layer``), dense forms at every d,
    QK-norm's RMS ``r`` of the raw biased projections (``eps`` None: no QK-norm)."""
    from headforms.heads import effective_factors

    length = len(x)
    xa = np.concatenate([x, np.ones((length, 1))], axis=1)
    q0, k0 = effective_factors(augmented, 0)
    qa, ka = q0[head], k0[kv]  # (n, N + 1): gains folded, not rotated
    rq = rk = np.ones(length)
    if eps is not None:
        rq = np.sqrt(np.mean((xa @ np.asarray(augmented.q[head], np.float64).T) ** 2, -1) + eps)
        rk = np.sqrt(np.mean((xa @ np.asarray(augmented.k[kv], np.float64).T) ** 2, -1) + eps)
    out = np.full((length, length), np.nan)
    forms: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for i in range(length):
        for j in range(length):
            if causal and j > i:
                continue
            d = i - j
            if d not in forms:
                full = ka.T @ rotation(augmented.inv_freq, qa.shape[0], d) @ qa
                forms[d] = (full, dense_edit(full[:-1, :-1], edit))
            full, edited = forms[d]
            form = full[:-1, :-1]
            logit = xa[j] @ full @ xa[i] - x[j] @ form @ x[i] + x[j] @ edited @ x[i]
            out[i, j] = scale * logit / (rq[i] * rk[j])
    return out
