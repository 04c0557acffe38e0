"""Exact spectra and profiles of attention-head bilinear forms, computed from their factors.

Orientation: a head scores query token x against key token y by ``y^T L x`` with
``L = K^T Q`` (``Q, K`` are ``n x N``: head dim by model dim), as in the paper.

Everything is computed from the ``2n x 2n`` Gram matrix ``G = U^T U`` of ``U = [K^T, Q^T]``:
``S = U M U^T / 2`` and ``A = -U J U^T / 2`` with ``M = [[0, I], [I, 0]]`` and
``J = [[0, -I], [I, 0]]``. With ``G = R^T R`` the non-zero eigenvalues of ``S`` are those of
``R M R^T / 2`` and the singular values of ``A`` are those of ``R J R^T / 2`` (the sign
does not change them): exact, at a cost
of ``O(N n^2)`` per head (forming ``G``) instead of ``O(N^3)``. Because the metrics depend on
``K, Q`` only through ``G``, the Gaussian baseline can sample ``G`` from its Wishart law
directly (see :func:`wishart_factor`).

All metric definitions live here (docs/MATH.md states them): profile ``(a, b, c, d)``,
symmetric profile, parity, symmetric energy, pairing score, and the author's extra statistics
(those of the singular values of L under the author's names; the same statistics of S's spectrum
under names of their own, ``*_s``).

The singular values of L come from the same factor: ``U = W F^T`` with W orthonormal columns, so
``L = K^T Q = W F_top^T F_bot W^T`` and, with ``F_top^T = Q_r R_r`` (thin QR; ``R_r = F_11^T``
when F is lower triangular), the non-zero singular values of L are those of the ``n x 2n``
matrix ``Y = R_r F_bot``: their squares are the eigenvalues of the ``n x n`` matrix ``Y Y^T``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .errors import OptionError

PARITY_TYPE_II_FRACTION = Fraction(1, 50)
"""Type II if ``c_S + d_S`` is at most this (Table 2): the paper's tolerance."""
PARITY_TYPE_II_THRESHOLD = float(PARITY_TYPE_II_FRACTION)
"""The tolerance as a number."""
PARITY_TYPE_II_TEXT = f"{PARITY_TYPE_II_FRACTION.numerator}/{PARITY_TYPE_II_FRACTION.denominator}"
"""The tolerance as the paper writes it (``1/50``), for captions and help texts."""

PARITY_LABELS = ("I+", "II", "I-")
ZERO_FORM_LABEL = "zero"
"""Parity label of a head whose form vanishes (profile undefined)."""

_ZERO_TOLERANCE = 1e3 * np.finfo(np.float64).eps
"""Eigenvalues below this times ``trace(G)`` are exact zeros of S (Gram-path rounding level)."""


@dataclass(frozen=True)
class FormBatch:
    """Per-head results for a batch of heads (leading axis = head).

    ``eig_s``: the ``2n`` eigenvalues of S that can be non-zero, sorted decreasing (the other
    ``N - 2n`` are exactly zero); numerically-zero ones are set to 0.
    ``lobe_pos`` / ``lobe_neg``: lambda_+ and lambda_- (absolute values), each sorted decreasing and
    zero-padded to length ``2n``. ``sv_a``: singular values of A (each appears twice), decreasing.
    ``eig_l_abs``: moduli of the ``n`` possibly non-zero eigenvalues of L, decreasing.
    ``sv_l``: the ``n`` singular values of L that can be non-zero, decreasing; ``trace_l``:
    ``tr L`` (= ``tr S``).
    """

    model_dim: int
    norm_l2: np.ndarray
    norm_s2: np.ndarray
    norm_a2: np.ndarray
    eig_s: np.ndarray
    lobe_pos: np.ndarray
    lobe_neg: np.ndarray
    sv_a: np.ndarray
    eig_l_abs: np.ndarray
    sv_l: np.ndarray
    trace_l: np.ndarray

    @property
    def n_pos(self) -> np.ndarray:
        """Number of positive eigenvalues of S."""
        return np.count_nonzero(self.eig_s > 0, axis=-1)

    @property
    def n_neg(self) -> np.ndarray:
        """Number of negative eigenvalues of S."""
        return np.count_nonzero(self.eig_s < 0, axis=-1)

    @property
    def n_zero(self) -> np.ndarray:
        """Number of zero eigenvalues of S (out of N)."""
        return self.model_dim - self.n_pos - self.n_neg

    def metrics(self) -> dict[str, np.ndarray]:
        """Every per-head scalar of docs/MATH.md, as columns (name -> array over heads)."""
        return form_metrics(self)


def gram_matrices(q: np.ndarray, k: np.ndarray, kv_of_head: np.ndarray | None = None) -> np.ndarray:
    """Gram matrices ``G_h = U_h^T U_h`` with ``U_h = [K_h^T, Q_h^T]``, shape ``(H, 2n, 2n)``.

    ``q``: ``(H, n, N)``; ``k``: ``(H_kv, n, N)``; query head ``h`` pairs with key head
    ``kv_of_head[h]`` (default: the same index). Shared key blocks ``K K^T`` are computed once per
    key head (grouped-query attention).
    """
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    n_heads, n, _ = q.shape
    if kv_of_head is None:
        kv_of_head = np.arange(n_heads)
    kv_of_head = np.asarray(kv_of_head)
    kk = k @ k.transpose(0, 2, 1)
    qq = q @ q.transpose(0, 2, 1)
    kq = k[kv_of_head] @ q.transpose(0, 2, 1)
    gram = np.empty((n_heads, 2 * n, 2 * n))
    gram[:, :n, :n] = kk[kv_of_head]
    gram[:, :n, n:] = kq
    gram[:, n:, :n] = kq.transpose(0, 2, 1)
    gram[:, n:, n:] = qq
    return gram


_ILL_CONDITIONED = 1e-4
"""Heads whose Cholesky factor has ``min/max`` diagonal below this (``cond(G) >~ 1e8``) are
refactored by a QR of ``U``: forming G squares the condition number, QR does not."""


def _qr_factor(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``F = R^T`` from a thin QR of ``U = [K^T, Q^T]``: exact even when U is rank-deficient."""
    u = np.swapaxes(np.concatenate([k, q], axis=-2), -1, -2)
    if u.shape[-2] < u.shape[-1]:  # N < 2n: pad with zero rows so that R is square
        pad = np.zeros((*u.shape[:-2], u.shape[-1] - u.shape[-2], u.shape[-1]))
        u = np.concatenate([u, pad], axis=-2)
    return np.swapaxes(np.linalg.qr(u, mode="r"), -1, -2)


def head_factors(
    q: np.ndarray, k: np.ndarray, kv_of_head: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(F, G)`` per query head with ``G = U^T U = F F^T``: Cholesky of G, QR where needed."""
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    kv = np.arange(q.shape[0]) if kv_of_head is None else np.asarray(kv_of_head)
    gram = gram_matrices(q, k, kv)
    try:
        factor = np.linalg.cholesky(gram)
        diag = np.abs(np.diagonal(factor, axis1=-2, axis2=-1))
        bad = diag.min(axis=-1) < _ILL_CONDITIONED * diag.max(axis=-1)
    except np.linalg.LinAlgError:
        factor = np.empty_like(gram)
        bad = np.ones(q.shape[0], dtype=bool)
    if bad.any():
        factor[bad] = _qr_factor(q[bad], k[kv[bad]])
    return factor, gram


def forms_from_factor(
    factor: np.ndarray,
    model_dim: int,
    gram: np.ndarray | None = None,
    sv_a: bool = True,
    eig_l: bool = True,
) -> FormBatch:
    """All spectra of the forms ``L_h = K_h^T Q_h`` from ``F`` with ``F F^T = G`` (module doc).

    ``sv_a=False`` / ``eig_l=False`` skip the singular values of A / the eigenvalues of L (the
    field is then empty, shape ``(heads, 0)``): no per-head metric needs them, and each costs
    about as much as the spectrum of S.
    """
    f = np.asarray(factor, dtype=np.float64)
    gram = f @ np.swapaxes(f, -1, -2) if gram is None else gram
    n = gram.shape[-1] // 2
    gkk, gkq, gqq = gram[..., :n, :n], gram[..., :n, n:], gram[..., n:, n:]
    norm_l2 = np.einsum("...ij,...ji->...", gkk, gqq)
    trace_ll = np.einsum("...ij,...ji->...", gkq, gkq)

    # R = F^T, so R M R^T = F^T M F = X + X^T with X = F_top^T F_bot, F = [F_top; F_bot], and
    # R J R^T = X^T - X: one product serves both parts.
    f_top, f_bot = f[..., :n, :], f[..., n:, :]
    cross = np.swapaxes(f_top, -1, -2) @ f_bot
    if sv_a:
        singular_a = np.linalg.svd((np.swapaxes(cross, -1, -2) - cross) / 2.0, compute_uv=False)
    else:
        singular_a = np.empty((*cross.shape[:-2], 0))
    # Non-zero eigenvalues of L = K^T Q are those of Q K^T = (K Q^T)^T (n x n).
    if eig_l:
        eig_l_abs = np.sort(np.abs(np.linalg.eigvals(np.swapaxes(gkq, -1, -2))), axis=-1)[..., ::-1]
    else:
        eig_l_abs = np.empty((*gkq.shape[:-2], 0))
    trace_g = np.trace(gram, axis1=-2, axis2=-1)
    sym = (cross + np.swapaxes(cross, -1, -2)) / 2.0
    if f_top[..., n:].any():  # not lower triangular: R_r from a QR of F_top^T (module doc)
        rows = np.linalg.qr(np.swapaxes(f_top, -1, -2), mode="r") @ f_bot
    else:  # F_top = [F_11, 0]: Y = F_11^T F_bot, the first n rows of X
        rows = cross[..., :n, :]
    return form_batch(model_dim, sym, norm_l2, trace_ll, trace_g, rows, singular_a, eig_l_abs)


def symmetric_spectrum(sym: np.ndarray, trace_g: np.ndarray, uplo: str = "L") -> np.ndarray:
    """The ``2n`` eigenvalues of S that can be non-zero, decreasing: those of ``sym = (X +
    X^T) / 2`` with ``X = F_top^T F_bot`` (``F F^T = G``), of which only the lower (``uplo="L"``)
    or upper (``"U"``) triangle is read; values below the Gram path's rounding level
    (``trace(G)`` times :data:`_ZERO_TOLERANCE`) are exact zeros."""
    eig_s = np.linalg.eigvalsh(sym, UPLO=uplo)[..., ::-1]
    tol = _ZERO_TOLERANCE * np.asarray(trace_g)[..., None]
    return np.where(np.abs(eig_s) <= tol, 0.0, eig_s)


def l_singular_values(rows: np.ndarray) -> np.ndarray:
    """The singular values of L, decreasing, from ``Y`` (``(..., n, 2n)``) with L orthogonally
    equivalent to ``[Y; 0]`` (module doc): the square roots of the eigenvalues of ``Y Y^T``.
    Their squares (all the author's statistics need) are exact to rounding relative to the
    largest; a singular value far below the largest carries an absolute error of about
    ``sqrt(eps)`` times it."""
    rows = np.asarray(rows, dtype=np.float64)
    squares = np.linalg.eigvalsh(rows @ np.swapaxes(rows, -1, -2))[..., ::-1]
    return np.sqrt(np.clip(squares, 0.0, None))


def form_batch(
    model_dim: int,
    sym: np.ndarray,
    norm_l2: np.ndarray,
    trace_ll: np.ndarray,
    trace_g: np.ndarray,
    l_rows: np.ndarray,
    sv_a: np.ndarray | None = None,
    eig_l_abs: np.ndarray | None = None,
    uplo: str = "L",
) -> FormBatch:
    """The :class:`FormBatch` of forms whose S has the non-zero eigenvalues of ``sym`` (``(X +
    X^T)/2``, :func:`symmetric_spectrum`), with ``||L||^2`` (``norm_l2``), ``tr(L^2)``
    (``trace_ll``) and ``trace(G)``: the one place the norms and the spectrum of S become a batch
    (the single-position analysis and the sweep over positions both go through it). ``l_rows``:
    ``Y`` of :func:`l_singular_values`. ``sv_a`` / ``eig_l_abs``: those spectra if computed
    (else empty); ``uplo``: the triangle of ``sym`` that holds it (its diagonal gives ``tr L``:
    the trace of S is that of L)."""
    empty = np.empty((*np.shape(sym)[:-2], 0))
    eig_s = symmetric_spectrum(sym, trace_g, uplo)
    lobe_pos, lobe_neg = lobes(eig_s)
    return FormBatch(
        model_dim=model_dim,
        norm_l2=norm_l2,
        norm_s2=(norm_l2 + trace_ll) / 2.0,
        norm_a2=np.clip((norm_l2 - trace_ll) / 2.0, 0.0, None),
        eig_s=np.ascontiguousarray(eig_s),
        lobe_pos=np.ascontiguousarray(lobe_pos),
        lobe_neg=np.ascontiguousarray(lobe_neg),
        sv_a=empty if sv_a is None else sv_a,
        eig_l_abs=empty if eig_l_abs is None else np.ascontiguousarray(eig_l_abs),
        sv_l=np.ascontiguousarray(l_singular_values(l_rows)),
        trace_l=np.trace(sym, axis1=-2, axis2=-1),
    )


def lobes(eig_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lambda_+, lambda_-)`` of eigenvalues of S (rows: heads): the positive values and the
    absolute values of the negative ones, each sorted decreasing and zero-padded to the row's
    length."""
    eig_s = np.asarray(eig_s, dtype=np.float64)
    lobe_pos = np.sort(np.clip(eig_s, 0.0, None), axis=-1)[..., ::-1]
    lobe_neg = np.sort(np.clip(-eig_s, 0.0, None), axis=-1)[..., ::-1]
    return lobe_pos, lobe_neg


def unit_spectra(eig_s: np.ndarray) -> np.ndarray:
    """Unit spectra: rows (heads' eigenvalues of S) sorted decreasing and divided by their
    Euclidean norm, which is ``||S||``; zero rows stay 0. Invariant under ``L -> cL``."""
    spectra = -np.sort(-np.asarray(eig_s, dtype=np.float64), axis=-1)
    norms = np.linalg.norm(spectra, axis=-1, keepdims=True)
    return np.divide(spectra, norms, out=np.zeros_like(spectra), where=norms > 0)


def head_forms(q: np.ndarray, k: np.ndarray, kv_of_head: np.ndarray | None = None) -> FormBatch:
    """Spectra of ``L_h = K_{kv(h)}^T Q_h`` for a batch of heads (shapes: :func:`gram_matrices`)."""
    factor, gram = head_factors(q, k, kv_of_head)
    return forms_from_factor(factor, np.shape(q)[-1], gram)


def profile_from_lobes(
    lobe_pos: np.ndarray, lobe_neg: np.ndarray, norm_a2: np.ndarray, norm: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The profile ``(a, b, c, d)`` (docs/MATH.md), every term divided by ``norm`` (``||L||^2``)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        a = norm_a2 / norm
        b = 2.0 * np.sum(lobe_pos * lobe_neg, axis=-1) / norm
        c = np.sum(np.clip(lobe_pos - lobe_neg, 0.0, None) ** 2, axis=-1) / norm
        d = np.sum(np.clip(lobe_neg - lobe_pos, 0.0, None) ** 2, axis=-1) / norm
    return a, b, c, d


MAX_TOLERANCE = 1.0
"""Largest Type II tolerance (``c_S + d_S <= 1`` always holds: every head is Type II)."""


def check_tolerance(tolerance: float) -> float:
    """The tolerance as a float, or a one-line error if it is not in ``[0, 1]``."""
    value = float(tolerance)
    if not 0.0 <= value <= MAX_TOLERANCE:
        raise OptionError(f"Type II tolerance must be between 0 and 1 (c_S + d_S), got {value}")
    return value


def parity_labels(
    c_sym: np.ndarray, d_sym: np.ndarray, tolerance: float = PARITY_TYPE_II_THRESHOLD
) -> np.ndarray:
    """Table 2 parity: ``II`` if ``c_S + d_S <= tolerance`` (the paper's 1/50), else ``I+`` if
    ``c_S > d_S``, else ``I-``.

    Ties (``c_S = d_S``) go to I-, as in the author's code; an undefined profile is ``zero``.
    """
    c_sym = np.asarray(c_sym, dtype=np.float64)
    d_sym = np.asarray(d_sym, dtype=np.float64)
    labels = np.where(c_sym > d_sym, "I+", "I-").astype(object)
    labels[c_sym + d_sym <= tolerance] = "II"
    labels[~np.isfinite(c_sym + d_sym)] = ZERO_FORM_LABEL
    return labels


def parity_counts(labels: np.ndarray) -> dict[str, int]:
    """Number of heads of each parity type (I+, II, I-, in that order); ``zero`` forms aside."""
    labels = np.asarray(labels)
    return {p: int(np.count_nonzero(labels == p)) for p in PARITY_LABELS}


def proportional_profile(rho: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Theorem 5: the symmetric profile ``(b_S, c_S, d_S)`` of lobes ``lambda_- = rho lambda_+``.

    ``(2 rho, (1 - rho)_+^2, (rho - 1)_+^2) / (1 + rho^2)``, computed with ``r = min(rho, 1/rho)``
    so that ``rho = inf`` (no positive lobe) gives ``d_S = 1``; NaN stays NaN.
    """
    rho = np.asarray(rho, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.minimum(rho, 1.0 / rho)
    b = 2.0 * r / (1.0 + r**2)
    rest = (1.0 - r) ** 2 / (1.0 + r**2)
    return b, np.where(rho > 1.0, 0.0, rest), np.where(rho > 1.0, rest, 0.0)


def pairing_bound(rho: np.ndarray) -> np.ndarray:
    """Upper bound of the pairing score from the lobe ratio: ``1 - |1 - rho| / sqrt(1 + rho^2)``.

    Reverse triangle inequality; equality exactly when the sorted lobes are proportional.
    """
    rho = np.asarray(rho, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.minimum(rho, 1.0 / rho)
    return 1.0 - (1.0 - r) / np.sqrt(1.0 + r**2)


MAX_LOBE_DEPARTURE = float(np.sqrt(2.0))
"""Supremum of the lobe departure of non-negative lobes: ``||l- - rho l+||^2 = 2 ||l-||^2 -
2 rho <l-, l+>`` and ``<l-, l+> >= 0`` (approached by a lobe of one spike against a flat one)."""


def lobe_metrics(lobe_pos: np.ndarray, lobe_neg: np.ndarray) -> dict[str, np.ndarray]:
    """Observation 5: lobe ratio ``rho = ||lambda_-|| / ||lambda_+||``, lobe departure
    ``||lambda_- - rho lambda_+|| / ||lambda_-||``, pairing bound and the predicted Theorem 5
    point ``theorem5_b, _c, _d`` (:func:`proportional_profile`).

    Degenerate heads (docs/MATH.md, "Degenerate heads"): with no positive lobe (S negative
    semidefinite) the ratio is infinite and ``rho`` is missing (NaN), while the pairing bound (0)
    and the Theorem 5 point (the vertex d_S = 1) stay defined; the lobe departure is missing
    whenever a lobe is empty; a vanishing form has every value missing."""
    norm_pos = np.linalg.norm(lobe_pos, axis=-1)
    norm_neg = np.linalg.norm(lobe_neg, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = norm_neg / norm_pos  # inf without a positive lobe, NaN for a vanishing form
        departure = np.linalg.norm(lobe_neg - ratio[..., None] * lobe_pos, axis=-1) / norm_neg
    departure = np.where((norm_pos > 0) & (norm_neg > 0), departure, np.nan)
    b, c, d = proportional_profile(ratio)
    defined = ~np.isnan(ratio)
    return {
        "rho": np.where(np.isfinite(ratio), ratio, np.nan),
        "lobe_departure": np.clip(departure, 0.0, None) + 0.0,
        "pairing_bound": share(pairing_bound(ratio)),
        "theorem5_b": share(np.where(defined, b, np.nan)),
        "theorem5_c": share(np.where(defined, c, np.nan)),
        "theorem5_d": share(np.where(defined, d, np.nan)),
    }


def share(values: np.ndarray) -> np.ndarray:
    """A quantity that lies in [0, 1] mathematically, with rounding's excursions (an ulp below 0
    or above 1) and negative zeros removed; NaN (undefined) stays NaN."""
    return np.clip(values, 0.0, 1.0) + 0.0


def energy_statistics(energies: np.ndarray, total: np.ndarray) -> dict[str, np.ndarray]:
    """The author's statistics of a spectrum's energies ``e_i`` (squared singular values of L,
    or squared eigenvalues of S; rows: heads) summing to ``total``: participation ratio
    ``total^2 / sum e^2``, stable rank ``total / max e`` and leading share ``max e / total``
    (rank one: 1, 1, 1; a flat spectrum of r values: r, r, 1/r). NaN for a vanishing form."""
    with np.errstate(invalid="ignore", divide="ignore"):
        largest = np.max(energies, axis=-1)
        return {
            "participation_ratio": total**2 / np.sum(energies**2, axis=-1),
            "stable_rank": total / largest,
            "leading_share": share(largest / total),
        }


def form_metrics(batch: FormBatch) -> dict[str, np.ndarray]:
    """Per-head scalars: profile, symmetric profile, parity, energy, pairing, counts and extras."""
    a, b, c, d = profile_from_lobes(batch.lobe_pos, batch.lobe_neg, batch.norm_a2, batch.norm_l2)
    _, b_sym, c_sym, d_sym = profile_from_lobes(
        batch.lobe_pos, batch.lobe_neg, np.zeros_like(batch.norm_s2), batch.norm_s2
    )
    n_pos, n_neg = batch.n_pos, batch.n_neg
    with np.errstate(invalid="ignore", divide="ignore"):
        energy = batch.norm_s2 / batch.norm_l2
        pairing = 1.0 - np.linalg.norm(batch.lobe_pos - batch.lobe_neg, axis=-1) / np.sqrt(
            batch.norm_s2
        )
        balance = 1.0 - np.abs(n_pos - n_neg) / (n_pos + n_neg)
        trace_ratio = np.abs(batch.trace_l) / np.sqrt(batch.norm_l2)
    lobes = lobe_metrics(batch.lobe_pos, batch.lobe_neg)
    pairing = share(pairing)
    return {
        "a": share(a),
        "b": share(b),
        "c": share(c),
        "d": share(d),
        "b_sym": share(b_sym),
        "c_sym": share(c_sym),
        "d_sym": share(d_sym),
        "parity": parity_labels(c_sym, d_sym),
        "energy": share(energy),
        "pairing": pairing,
        "n_pos": n_pos,
        "n_neg": n_neg,
        "n_zero": batch.n_zero,
        "norm_l": np.sqrt(batch.norm_l2),
        "balance": share(balance),
        "trace_ratio": trace_ratio,
        **energy_statistics(batch.sv_l**2, batch.norm_l2),
        **{
            f"{name}_s": value
            for name, value in energy_statistics(batch.eig_s**2, batch.norm_s2).items()
        },
        **lobes,
        "pairing_gap": share(lobes["pairing_bound"] - pairing),
    }


def wishart_factor(
    rng: np.random.Generator, n_heads: int, head_dim: int, model_dim: int
) -> np.ndarray:
    """Factors ``F`` (``G = F F^T``) of the Gram matrices of independent Gaussian ``K, Q``.

    ``U = [K^T, Q^T]`` (iid N(0, 1), ``N x 2n``) gives ``G = U^T U ~ Wishart(N, I_2n)``; the
    Bartlett decomposition draws its Cholesky factor directly in ``O(n^2)`` instead of
    ``O(N n^2)``. Falls back to sampling ``U`` (and a QR) when ``N < 2n`` (singular Wishart).
    """
    dim = 2 * head_dim
    if model_dim < dim:
        u = rng.standard_normal((n_heads, dim, model_dim))
        return _qr_factor(u[:, head_dim:], u[:, :head_dim])
    lower = np.tril(rng.standard_normal((n_heads, dim, dim)), k=-1)
    idx = np.arange(dim)
    lower[:, idx, idx] = np.sqrt(rng.chisquare(model_dim - idx, size=(n_heads, dim)))
    return lower


def simplex_distance(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Distance between profiles (rows, the last axis their coordinates) on the simplex as the
    figures draw it, a regular tetrahedron (or triangle) of unit edges: ``||p - q|| / sqrt(2)``,
    so one vertex to another is 1."""
    return np.linalg.norm(np.asarray(second) - np.asarray(first), axis=-1) / np.sqrt(2.0)
