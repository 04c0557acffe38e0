"""The score split of one head: its pre-softmax scores on a token sequence as the sum of the
parts of its form (pure numpy, float64).

**Conventions** (:mod:`headforms.interventions.algebra`): query ``i``, key ``j``, ``d = i - j``;
the bilinear part of the logit is ``x_j^T L_d x_i`` with ``L_d = K^T R_d Q`` (QK-norm gains
folded into ``Q, K``, ``R_d`` the layer's own RoPE rotation, ``R_d = I`` without RoPE) and ``x``
the attention input (after the layer's norm).

**The split.** ``S_d = (L_d + L_d^T)/2`` has rank at most ``r = 2n``: with ``W`` (``N x r``) an
orthonormal basis of the span of ``[K^T, Q^T]`` (:func:`~headforms.interventions.algebra.
span_basis`), ``S_d = W B_d W^T`` with ``B_d`` the symmetric part of the reduced form ``W^T L_d
W`` (:func:`~headforms.interventions.algebra.reduced_forms`), and ``B_d = V diag(lambda) V^T``
gives ``S_d = sum_k lambda_k v_k v_k^T`` with ``v_k = W V e_k`` (an ``r x r`` eigenproblem per
d, never ``N x N``). With ``y = W^T x``:

- positive lobe ``P[i, j] = sum_{lambda_k > 0} lambda_k (v_k . x_j)(v_k . x_i)``, at ``d = i - j``;
- negative lobe ``N[i, j] = x_j^T S_d x_i - P[i, j]`` (the same sum over ``lambda_k < 0``);
- antisymmetric part ``A[i, j] = x_j^T A_d x_i`` (``(ell - ell_t)/2`` of
  :func:`~headforms.interventions.algebra.bilinear_terms`);
- the rest: ``q_i . k_j`` with the Q/K biases (folded by the gains, rotated with the tokens)
  minus without them, and whatever the attention adds besides ``scale * q . k`` (the additive
  mask on the pairs it lets through, ALiBi).

Each bilinear part and the bias terms are multiplied by the model's factor ``scale / (r_q(i)
r_k(j))`` (:meth:`~headforms.interventions.anatomy.HeadLogit.factor`: QK-norm's RMS of the raw
projections, 1 without QK-norm), so the four parts sum to the model's own pre-softmax scores.
Pairs the model does not let through are NaN in every part.

**Ranked directions.** The k-th direction of a lobe at distance d is the eigenvector of the
k-th largest ``lambda`` (positive lobe) or the k-th most negative (negative lobe) of ``B_d``;
its contribution to a pair is ``lambda_k (v_k . x_j)(v_k . x_i)`` at the pair's own d. The
ranked contributions of one lobe sum to the lobe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..interventions.algebra import (
    HeadFactors,
    bilinear_terms,
    chunks,
    distances,
    pairs_by_distance,
    reduced_forms,
    rotate,
    rotation_angles,
    span_basis,
)

PART_NAMES = ("positive", "negative", "antisymmetric", "rest")
"""The four parts, in the order every array of them is stacked."""
BILINEAR_PARTS = PART_NAMES[:3]
"""The parts of the form itself (the rest is not)."""
LOBES = ("positive", "negative")


@dataclass(frozen=True)
class ScoreSplit:
    """One head's scores on ``T`` tokens split into its parts (module doc), each ``(T, T)``
    (rows queries, columns keys) in the model's units, NaN where the model lets no attention
    through (``visible`` False). ``ranked``: ``(2, J, T, T)``, the contributions of the top
    ``J`` directions of the positive and the negative lobe (None when not asked)."""

    positive: np.ndarray
    negative: np.ndarray
    antisymmetric: np.ndarray
    rest: np.ndarray
    visible: np.ndarray
    ranked: np.ndarray | None = None

    @property
    def stacked(self) -> np.ndarray:
        """The four parts as one ``(4, T, T)`` array, in :data:`PART_NAMES` order."""
        return np.stack([getattr(self, name) for name in PART_NAMES])

    @property
    def total(self) -> np.ndarray:
        """The sum of the parts: the head's pre-softmax scores (NaN where masked)."""
        return self.positive + self.negative + self.antisymmetric + self.rest


def visible_is_causal(visible: np.ndarray) -> bool:
    """True when no query sees a later key."""
    return not np.triu(visible, 1).any()


Eigen = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``eigen(stack)``: eigenvalues (ascending) and eigenvectors (columns) of a stack of symmetric
matrices, as ``numpy.linalg.eigh`` returns them."""


def numpy_eigen(sym: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:data:`Eigen` by LAPACK in float64 (``numpy.linalg.eigh``): the reference."""
    return np.linalg.eigh(sym)


def directions_at(
    head: HeadFactors, step: int = 0, eigen: Eigen = numpy_eigen
) -> tuple[np.ndarray, np.ndarray]:
    """``(lambda, v)``: the eigenvalues of ``S_d`` at ``d = step`` that can be non-zero
    (ascending, ``r`` of them) and their unit eigenvectors in the model's space (``N x r``,
    columns), from the reduced form."""
    basis = span_basis(head)
    form = reduced_forms(head, basis, np.array([step]))[0]
    values, vectors = eigen((form + form.T) / 2.0)
    return values, basis.w @ vectors


@dataclass(frozen=True)
class LobeTerms:
    """The bilinear (unscaled) positive lobe ``(T, T)`` over every pair of a sequence, and the
    ranked directions' contributions ``(2, J, T, T)`` (None when ``J = 0``)."""

    positive: np.ndarray
    ranked: np.ndarray | None


def lobe_terms(
    head: HeadFactors, x: np.ndarray, causal: bool, ranks: int = 0, eigen: Eigen = numpy_eigen
) -> LobeTerms:
    """The positive lobe of every pair of tokens ``x`` (``T x N``) at positions ``0 .. T-1``,
    each at its own d (only ``j <= i`` when ``causal``; the other pairs are 0), and the
    contributions of the top ``ranks`` directions of each lobe (module doc); ``eigen`` solves
    the ``2n x 2n`` eigenproblems."""
    length = len(x)
    basis = span_basis(head)
    y = x @ basis.w
    rank = basis.w.shape[1]
    steps = distances(length, causal, head.rotary)
    positive = np.zeros((length, length))
    ranked = np.zeros((2, ranks, length, length)) if ranks else None
    if not head.rotary:  # one form for every pair: products of whole matrices
        form = reduced_forms(head, basis, steps)[0]
        values, vectors = eigen((form + form.T) / 2.0)
        z = y @ (vectors * np.sqrt(np.clip(values, 0.0, None)))
        positive = z @ z.T
        if ranked is not None:
            rows, cols = np.indices((length, length))
            index = np.zeros(rows.size, np.int64)
            _ranked(ranked, y, values[None], vectors[None], rows.ravel(), cols.ravel(), index)
        return LobeTerms(np.tril(positive) if causal else positive, ranked)
    per_step = 8 * (3 * rank * rank + 3 * length * rank)
    for part in chunks(len(steps), per_step):
        forms = reduced_forms(head, basis, steps[part])
        values, vectors = eigen((forms + np.swapaxes(forms, -1, -2)) / 2.0)
        # sqrt(lambda_+) folded into the eigenvectors: P = sum_k z_ik z_jk over the columns that
        # hold a positive eigenvalue (ascending order: the last ones)
        count = int(np.max(np.count_nonzero(values > 0, axis=-1), initial=0))
        scaled = vectors[..., rank - count :] * np.sqrt(
            np.clip(values[:, None, rank - count :], 0, None)
        )
        z = y @ scaled  # (D, T, count)
        rows, cols, index = pairs_by_distance(length, steps[part])
        keep = cols <= rows if causal else np.ones(len(rows), bool)
        rows, cols, index = rows[keep], cols[keep], index[keep]
        positive[rows, cols] = np.einsum("pk,pk->p", z[index, rows], z[index, cols])
        if ranked is not None:
            _ranked(ranked, y, values, vectors, rows, cols, index)
    return LobeTerms(positive, ranked)


def _ranked(
    out: np.ndarray,
    y: np.ndarray,
    values: np.ndarray,
    vectors: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    index: np.ndarray,
) -> None:
    """Write the top directions' contributions of the pairs ``(rows, cols)`` (at distances
    ``index`` into ``values``/``vectors``) into ``out`` (``(2, J, T, T)``)."""
    ranks, rank = out.shape[1], values.shape[-1]
    for lobe, columns in enumerate((np.arange(rank - 1, rank - 1 - ranks, -1), np.arange(ranks))):
        columns = columns[(columns >= 0) & (columns < rank)]
        picked = values[:, columns]  # (D, J)
        sign_ok = picked > 0 if lobe == 0 else picked < 0
        weights = np.where(sign_ok, picked, 0.0)
        z = y @ vectors[..., columns]  # (D, T, J)
        terms = z[index, rows] * z[index, cols] * weights[index]  # (pairs, J)
        view = out[lobe, : len(columns)]
        view[:, rows, cols] = terms.T


def bias_terms(
    head: HeadFactors, x: np.ndarray, q_bias: np.ndarray | None, k_bias: np.ndarray | None
) -> np.ndarray:
    """``q_i . k_j`` with the biases minus without them (``(T, T)``, unscaled): ``q_i = R(i) (Q
    x_i + b_q)``, ``k_j = R(j) (K x_j + b_k)``, the biases folded by the gains like ``Q, K``."""
    length = len(x)
    if q_bias is None and k_bias is None:
        return np.zeros((length, length))
    u, v = x @ head.q.T, x @ head.k.T
    q_term = np.zeros_like(u) if q_bias is None else np.broadcast_to(q_bias, u.shape)
    k_term = np.zeros_like(v) if k_bias is None else np.broadcast_to(k_bias, v.shape)
    if head.rotary:
        angles = rotation_angles(head, np.arange(length))
        u, v = rotate(u, angles), rotate(v, angles)
        q_term, k_term = rotate(q_term, angles), rotate(k_term, angles)
    return q_term @ v.T + u @ k_term.T + q_term @ k_term.T


def split_scores(
    head: HeadFactors,
    x: np.ndarray,
    factor: np.ndarray,
    visible: np.ndarray,
    extra: np.ndarray | None = None,
    biases: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
    ranks: int = 0,
    eigen: Eigen = numpy_eigen,
) -> ScoreSplit:
    """The :class:`ScoreSplit` of one head on attention inputs ``x`` (``T x N``): ``factor``
    ``(T, T)`` the model's scale over the QK-norm RMS factors, ``visible`` the pairs the model
    lets through, ``extra`` what its attention adds besides ``scale * q . k`` (``(T, T)``, read
    on visible pairs only), ``biases`` the folded ``(b_q, b_k)``, ``ranks`` the directions of each
    lobe whose contributions are kept, ``eigen`` the eigensolver (:func:`numpy_eigen`, float64,
    by default)."""
    causal = visible_is_causal(visible)
    ell, ell_t = bilinear_terms(head, x)
    lobes = lobe_terms(head, x, causal, ranks, eigen)
    symmetric = (ell + ell_t) / 2.0
    hidden = np.where(visible, 1.0, np.nan)
    scale = factor * hidden
    rest = bias_terms(head, x, *biases) * scale
    if extra is not None:
        rest = rest + np.where(visible, extra, np.nan)
    ranked = None if lobes.ranked is None else lobes.ranked * scale
    return ScoreSplit(
        positive=lobes.positive * scale,
        negative=(symmetric - lobes.positive) * scale,
        antisymmetric=(ell - ell_t) / 2.0 * scale,
        rest=rest,
        visible=np.asarray(visible, bool),
        ranked=ranked,
    )
