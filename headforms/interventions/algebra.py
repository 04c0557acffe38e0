"""Edited forms of one head, from its factors (pure numpy, float64): the change an edit makes
to the head's logits on a sequence, the size of that change at each relative position, and the
edited form's profile.

**Conventions.** As in :func:`headforms.heads.effective_factors`, the head's form at relative
position ``d = i - j`` (query i, key j) is ``L_d = K^T R_d Q`` (``Q, K``: ``n x N``, QK-norm gains
folded in; ``R_d``: the layer's rotate-half RoPE rotation by ``d theta``; no RoPE: ``R_d = I``),
and the bilinear part of the logit is ``x_j^T L_d x_i = (K x_j) . (R_d Q x_i)``. The model
computes it from absolute positions, ``q_i = R(p_i) Q x_i`` and ``k_j = R(p_j) K x_j``, and
``q_i . k_j = (K x_j)^T R(p_j)^T R(p_i) (Q x_i) = x_j^T L_{p_i - p_j} x_i`` because
``R(a)^T R(b) = R(b - a)``.

**The transposed form.** ``x_j^T L_d^T x_i = x_i^T L_d x_j = (K x_i) . R_d (Q x_j)``, and
``R_d = R(p_i - p_j) = R(-p_i)^T R(-p_j)``, so it is ``(R(-p_i) K x_i) . (R(-p_j) Q x_j)``: the key
projection of the query token and the query projection of the key token, each turned back by
its own position. Every linear edit ``M = alpha L + beta L^T`` is then two ``T x T`` products of
rotated ``n``-dimensional features, exact at every d at once, although ``M_d`` has rank up to
``2n``; e.g. the symmetric part ``x_j^T S_d x_i = ((K x_j).(R_d Q x_i) + (K x_i).(R_d Q x_j))/2``.

**Spectral edits.** ``rank1``: with thin QR factors ``K^T = W_k r_k`` and ``Q^T = W_q r_q``,
``L_d = W_k c_d W_q^T`` with the ``n x n`` core ``c_d = r_k R_d r_q^T``; its top singular triple
``(sigma, a, b)`` gives ``sigma (W_k a)(W_q b)^T``. ``balanced`` changes only the symmetric part
(``M - L = H - S``): in an orthonormal basis ``W`` of the span of ``[K^T, Q^T]`` (the author's
reduced form, ``r <= 2n`` columns) ``W^T L_d W = C_d = r_1 R_d r_2^T`` with ``[r_1, r_2] = W^T
[K^T, Q^T]``, and ``H - S = W V diag(h - lambda) V^T W^T`` from the eigenvectors ``V`` and
eigenvalues ``lambda`` of ``(C_d + C_d^T)/2``. Both map back exactly (``W`` spans the form's
rows and columns), at a cost per d of an ``n x n`` SVD or a ``2n x 2n`` eigenproblem.

Functions return the *change* of the bilinear part, ``x_j^T (M_d - L_d) x_i`` as a ``(T, T)``
array (rows queries, columns keys; positions are ``0 .. T-1``); the caller multiplies by the
model's scale and divides by the QK-norm factors. A causal model's keys after the query are
never seen: those entries are 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..columns import PROFILE
from ..forms import form_batch, form_metrics
from .edits import Edit

CHUNK_BYTES = 32 * 2**20
"""Bytes of per-position matrices (cores, reduced forms, eigenvectors) held at once."""


@dataclass(frozen=True)
class HeadFactors:
    """One query head's factors (float64): ``q`` and ``k`` (``n x N``, gains folded) and the
    layer's RoPE inverse frequencies (rotate-half pairs; None: no RoPE)."""

    q: np.ndarray
    k: np.ndarray
    inv_freq: np.ndarray | None = None

    @property
    def head_dim(self) -> int:
        return int(self.q.shape[0])

    @property
    def model_dim(self) -> int:
        return int(self.q.shape[1])

    @property
    def rotary(self) -> bool:
        return self.inv_freq is not None and len(self.inv_freq) > 0


def distances(length: int, causal: bool, rotary: bool) -> np.ndarray:
    """The relative positions ``d = i - j`` whose form a sequence of ``length`` tokens needs:
    ``0 .. T-1`` (causal), ``-(T-1) .. T-1`` (both directions), or ``[0]`` without RoPE (one
    form for every d)."""
    if not rotary:
        return np.zeros(1, dtype=np.int64)
    return np.arange(0 if causal else 1 - length, length, dtype=np.int64)


def rotate(vectors: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """``R(angle) v`` along the last axis: pairs ``(i, i + half)`` turned by ``angles[..., i]``
    (``half = angles.shape[-1]``), the dimensions past ``2 half`` unchanged."""
    half = angles.shape[-1]
    shape = np.broadcast_shapes(vectors.shape, (*angles.shape[:-1], vectors.shape[-1]))
    out = np.array(np.broadcast_to(vectors, shape), dtype=np.float64)
    first, second = vectors[..., :half], vectors[..., half : 2 * half]
    cos, sin = np.cos(angles), np.sin(angles)
    out[..., :half] = first * cos - second * sin
    out[..., half : 2 * half] = second * cos + first * sin
    return out


def rotation_angles(head: HeadFactors, steps: np.ndarray) -> np.ndarray:
    """``steps * theta`` (one row per step; zero columns without RoPE)."""
    inv_freq = head.inv_freq if head.rotary else np.zeros(0)
    return np.asarray(steps, np.float64)[:, None] * np.asarray(inv_freq, np.float64)[None, :]


def _visible(length: int, causal: bool) -> np.ndarray:
    return np.tril(np.ones((length, length), bool)) if causal else np.ones((length, length), bool)


def bilinear_terms(head: HeadFactors, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ell, ell_t)``: ``ell[i, j] = x_j^T L_d x_i`` (what the model computes) and
    ``ell_t[i, j] = x_j^T L_d^T x_i`` (module doc), for tokens ``x`` (``T x N``) at positions
    ``0 .. T-1``."""
    u, v = x @ head.q.T, x @ head.k.T  # Q x and K x of every token, (T, n)
    if not head.rotary:
        return u @ v.T, v @ u.T
    angles = rotation_angles(head, np.arange(len(x)))
    return rotate(u, angles) @ rotate(v, angles).T, rotate(v, -angles) @ rotate(u, -angles).T


def linear_delta(head: HeadFactors, x: np.ndarray, edit: Edit, causal: bool) -> np.ndarray:
    """``x_j^T (M_d - L_d) x_i`` of a linear edit: ``(alpha - 1) ell + beta ell_t``."""
    alpha, beta = edit.coefficients
    ell, ell_t = bilinear_terms(head, x)
    delta = (alpha - 1.0) * ell + beta * ell_t
    return np.where(_visible(len(x), causal), delta, 0.0)


def chunks(count: int, per_item_bytes: int) -> Iterator[slice]:
    """Slices of ``range(count)`` holding about :data:`CHUNK_BYTES` of per-item arrays each."""
    step = max(1, CHUNK_BYTES // max(per_item_bytes, 1))
    for start in range(0, count, step):
        yield slice(start, min(start + step, count))


# ---------------------------------------------------------------------------------------------
# rank1: the top singular triple of L_d, from n x n cores


@dataclass(frozen=True)
class RankOneTerms:
    """``sigma_d (left_d . x_j)(right_d . x_i)`` is the best rank-one approximation's bilinear
    part at each distance ``d`` of ``steps``; ``norm2`` is ``||L_d||^2``."""

    steps: np.ndarray
    sigma: np.ndarray
    left: np.ndarray
    right: np.ndarray
    norm2: np.ndarray


def rank_one_terms(head: HeadFactors, steps: np.ndarray) -> RankOneTerms:
    """The top singular triple of ``L_d`` at each d of ``steps`` (module doc)."""
    w_k, r_k = np.linalg.qr(head.k.T)
    w_q, r_q = np.linalg.qr(head.q.T)
    n = head.head_dim
    angles = rotation_angles(head, steps)
    sigma, left, right, norm2 = [], [], [], []
    for part in chunks(len(steps), 8 * n * n * 3):
        # r_k R_d: each row rho of r_k becomes R_d^T rho = R(-d) rho
        cores = rotate(r_k[None], -angles[part, None, :]) @ r_q.T
        u, s, vt = np.linalg.svd(cores)
        sigma.append(s[:, 0])
        left.append(u[:, :, 0] @ w_k.T)
        right.append(vt[:, 0, :] @ w_q.T)
        norm2.append(np.sum(s**2, axis=-1))
    return RankOneTerms(
        np.asarray(steps), *(np.concatenate(v) for v in (sigma, left, right, norm2))
    )


def pairs_by_distance(length: int, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, cols, index)``: every query/key pair whose distance is one of ``steps`` and the
    index of that distance in ``steps`` (a single step: every pair)."""
    rows, cols = np.indices((length, length))
    if len(steps) == 1:
        return rows.ravel(), cols.ravel(), np.zeros(length * length, np.int64)
    index = rows - cols - int(steps[0])
    keep = (index >= 0) & (index < len(steps))
    return rows[keep], cols[keep], index[keep]


def rank1_delta(head: HeadFactors, x: np.ndarray, causal: bool) -> np.ndarray:
    """``x_j^T (M_d - L_d) x_i`` of ``rank1``."""
    length = len(x)
    terms = rank_one_terms(head, distances(length, causal, head.rotary))
    on_left, on_right = x @ terms.left.T, x @ terms.right.T  # (T, distances)
    rows, cols, index = pairs_by_distance(length, terms.steps)
    edited = np.zeros((length, length))
    edited[rows, cols] = terms.sigma[index] * on_left[cols, index] * on_right[rows, index]
    ell, _ = bilinear_terms(head, x)
    return np.where(_visible(length, causal), edited - ell, 0.0)


# ---------------------------------------------------------------------------------------------
# balanced: the eigenvalues of S_d in the reduced basis


@dataclass(frozen=True)
class SpanBasis:
    """An orthonormal basis ``w`` (``N x r``) of the span of ``[K^T, Q^T]``, with ``r1 = w^T
    K^T`` and ``r2 = w^T Q^T`` (``r x n``): ``w^T L_d w = r1 R_d r2^T``."""

    w: np.ndarray
    r1: np.ndarray
    r2: np.ndarray


def span_basis(head: HeadFactors) -> SpanBasis:
    """The basis of the author's reduced form, from a QR of ``[K^T, Q^T]`` (exact whatever the
    rank: the QR's ``w`` is orthonormal even when the factors are dependent)."""
    w, r = np.linalg.qr(np.concatenate([head.k, head.q]).T)
    n = head.head_dim
    return SpanBasis(w, r[:, :n], r[:, n:])


def reduced_forms(head: HeadFactors, basis: SpanBasis, steps: np.ndarray) -> np.ndarray:
    """``C_d = w^T L_d w`` (``(len(steps), r, r)``) for each d of ``steps``."""
    angles = rotation_angles(head, steps)
    return rotate(basis.r1[None], -angles[:, None, :]) @ basis.r2.T


def balanced_shift(eigenvalues: np.ndarray) -> np.ndarray:
    """``h - lambda`` per eigenvalue of S (rows): the k-th positive and the k-th negative
    eigenvalue (by size) both become ``+-min(lambda_+k, lambda_-k)``, an unpaired one 0."""
    values = np.asarray(eigenvalues, np.float64)
    positive = np.sort(np.clip(values, 0.0, None), axis=-1)[..., ::-1]
    negative = np.sort(np.clip(-values, 0.0, None), axis=-1)[..., ::-1]
    paired = np.minimum(positive, negative)
    target = np.zeros_like(values)
    descending = np.argsort(-values, axis=-1, kind="stable")
    ascending = np.argsort(values, axis=-1, kind="stable")
    top = np.take_along_axis(values, descending, -1) > 0
    bottom = np.take_along_axis(values, ascending, -1) < 0
    np.put_along_axis(target, descending, np.where(top, paired, 0.0), -1)
    lows = np.zeros_like(values)
    np.put_along_axis(lows, ascending, np.where(bottom, -paired, 0.0), -1)
    return target + lows - values


def balanced_delta(head: HeadFactors, x: np.ndarray, causal: bool) -> np.ndarray:
    """``x_j^T (M_d - L_d) x_i = y_j^T V diag(h - lambda) V^T y_i`` of ``balanced``, with
    ``y = w^T x`` (module doc)."""
    length = len(x)
    basis = span_basis(head)
    y = x @ basis.w
    steps = distances(length, causal, head.rotary)
    rank = basis.w.shape[1]
    delta = np.zeros((length, length))
    for part in chunks(len(steps), 8 * rank * rank * 3):
        forms = reduced_forms(head, basis, steps[part])
        values, vectors = np.linalg.eigh((forms + np.swapaxes(forms, -1, -2)) / 2.0)
        shift = balanced_shift(values)
        for offset, d in enumerate(steps[part]):
            if len(steps) == 1:  # one form for every pair
                z = y @ vectors[offset]
                delta = (z * shift[offset]) @ z.T
                break
            queries = np.arange(max(d, 0), length + min(d, 0))
            on_query = y[queries] @ vectors[offset]
            on_key = y[queries - d] @ vectors[offset]
            delta[queries, queries - d] = np.sum(on_query * shift[offset] * on_key, axis=-1)
    return np.where(_visible(length, causal), delta, 0.0)


# ---------------------------------------------------------------------------------------------
# Sizes of the change, for matched controls


def _turn(matrix: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """``R_d A`` for each row of ``angles`` (``A``: one matrix, or one per row): the columns of
    ``A`` turned, shape ``(D, n, m)``."""
    columns = np.swapaxes(matrix, -1, -2)
    if columns.ndim == 2:
        columns = columns[None]
    return np.swapaxes(rotate(columns, angles[:, None, :]), -1, -2)


def form_norms(head: HeadFactors, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(||L_d||^2, tr(L_d^2))`` at each d of ``steps``, from ``n x n`` Gram matrices:
    ``||L_d||^2 = <R_d^T (K K^T) R_d, Q Q^T>`` and ``tr(L_d^2) = tr((R_d Q K^T)^2)``."""
    gk, gq, qk = head.k @ head.k.T, head.q @ head.q.T, head.q @ head.k.T
    angles = rotation_angles(head, steps)
    turned_k = _turn(np.swapaxes(_turn(gk, -angles), -1, -2), -angles)  # R^T gk R, symmetric
    norm2 = np.einsum("dab,ab->d", turned_k, gq)
    turned_qk = _turn(qk, angles)
    trace = np.einsum("dab,dba->d", turned_qk, turned_qk)
    return norm2, trace


def change_norms(head: HeadFactors, edit: Edit, steps: np.ndarray) -> np.ndarray:
    """``||M_d - L_d||_F`` at each d of ``steps`` (exact: Frobenius norms are those of the
    reduced forms)."""
    if edit.kind == "linear":
        alpha, beta = edit.coefficients
        norm2, trace = form_norms(head, steps)
        squared = ((alpha - 1.0) ** 2 + beta**2) * norm2 + 2.0 * (alpha - 1.0) * beta * trace
    elif edit.name == "rank1":
        terms = rank_one_terms(head, steps)
        squared = terms.norm2 - terms.sigma**2
    elif edit.name == "balanced":
        basis = span_basis(head)
        parts = []
        for part in chunks(len(steps), 8 * basis.w.shape[1] ** 2 * 2):
            forms = reduced_forms(head, basis, steps[part])
            values = np.linalg.eigvalsh((forms + np.swapaxes(forms, -1, -2)) / 2.0)
            parts.append(np.sum(balanced_shift(values) ** 2, axis=-1))
        squared = np.concatenate(parts)
    else:
        raise ValueError(f"{edit.name} does not edit the form")
    return np.sqrt(np.clip(squared, 0.0, None))


# ---------------------------------------------------------------------------------------------
# The edited form itself (reduced), its rank and profile


def edited_reduced(
    head: HeadFactors, edit: Edit, step: int = 0, basis: SpanBasis | None = None
) -> tuple[np.ndarray, SpanBasis]:
    """``(w^T M_d w, w)``: the edited form at relative position ``step`` in the reduced basis
    (``basis``: the head's :func:`span_basis`, when already computed)."""
    basis = basis or span_basis(head)
    form = reduced_forms(head, basis, np.array([step]))[0]
    if edit.kind == "linear":
        alpha, beta = edit.coefficients
        return alpha * form + beta * form.T, basis
    if edit.name == "rank1":
        u, s, vt = np.linalg.svd(form)
        return s[0] * np.outer(u[:, 0], vt[0]), basis
    if edit.name == "balanced":
        sym, anti = (form + form.T) / 2.0, (form - form.T) / 2.0
        values, vectors = np.linalg.eigh(sym)
        return anti + (vectors * (values + balanced_shift(values))) @ vectors.T, basis
    raise ValueError(f"{edit.name} does not edit the form")


CHANGE_RANK_TOLERANCE = 1e-9
"""Singular values of ``M_0 - L_0`` below this times its largest are zeros (its rank)."""


def change_rank(head: HeadFactors, edit: Edit, basis: SpanBasis | None = None) -> int:
    """The rank of ``M_0 - L_0`` (the rank of a matched control's Gaussian factors)."""
    edited, basis = edited_reduced(head, edit, 0, basis)
    form = reduced_forms(head, basis, np.zeros(1, np.int64))[0]
    singular = np.linalg.svd(edited - form, compute_uv=False)
    if singular.size == 0 or singular[0] == 0.0:
        return 0
    return int(np.count_nonzero(singular > CHANGE_RANK_TOLERANCE * singular[0]))


PROFILE_COLUMNS = (*PROFILE, "parity")
"""The columns of an edited form's place on the simplex (at d = 0)."""


def edited_profile(
    head: HeadFactors, edit: Edit, basis: SpanBasis | None = None
) -> dict[str, object]:
    """The edited form's profile ``(a, b, c, d)`` and parity at d = 0, by the metrics of
    :mod:`headforms.forms` (NaN and ``zero`` for a vanishing form; ``basis``: the head's
    :func:`span_basis`, when already computed)."""
    edited, _ = edited_reduced(head, edit, 0, basis)
    trace_g = float(np.sum(head.k**2) + np.sum(head.q**2))  # the rounding scale of the head
    batch = form_batch(
        head.model_dim,
        ((edited + edited.T) / 2.0)[None],
        np.array([np.sum(edited**2)]),
        np.array([np.sum(edited * edited.T)]),
        np.array([trace_g]),
        edited[None],  # L's rows itself: the edited form may have rank up to 2n
    )
    metrics = form_metrics(batch)
    return {name: metrics[name][0] for name in PROFILE_COLUMNS}
