"""The tests' independent references for the forms (docs/MATH.md).

The dense oracle works on the ``N x N`` matrices, at ``O(N^3)`` per head, straight from the
definitions: ``L = K^T Q``, ``S = (L + L^T) / 2``, ``A = (L - L^T) / 2``, their spectra and the
profile. headforms.forms works on the ``2n x 2n`` Gram matrix instead, so agreement checks the
low-rank path. The Gram entry points (``forms_from_gram``, ``wishart_gram``) drive
headforms.forms from Gram matrices alone, as only tests need to.
"""

from __future__ import annotations

import numpy as np

from headforms.forms import FormBatch, forms_from_factor, wishart_factor

PROFILE = ("a", "b", "c", "d")


def dense_reference(q: np.ndarray, k: np.ndarray) -> dict[str, np.ndarray]:
    """One head's ``L`` and the dense spectra of its parts: ``eig_s`` (all ``N`` eigenvalues of
    S, decreasing), ``sv_a`` (singular values of A), ``eig_l_abs`` (moduli of the eigenvalues of
    L, decreasing) and the squared Frobenius norms of L, S, A."""
    form = np.asarray(k, dtype=np.float64).T @ np.asarray(q, dtype=np.float64)
    sym = (form + form.T) / 2.0
    skew = (form - form.T) / 2.0
    return {
        "L": form,
        "eig_s": np.linalg.eigvalsh(sym)[::-1],
        "sv_a": np.linalg.svd(skew, compute_uv=False),
        "eig_l_abs": np.sort(np.abs(np.linalg.eigvals(form)))[::-1],
        "norm_l2": float(np.sum(form**2)),
        "norm_s2": float(np.sum(sym**2)),
        "norm_a2": float(np.sum(skew**2)),
    }


def dense_lobes(form: np.ndarray, rtol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """``lambda_+`` and ``lambda_-`` (absolute values) of a square form by dense ``eigvalsh`` of
    its symmetric part, each sorted decreasing and zero-padded to one length; eigenvalues within
    ``rtol`` times the largest modulus are zeros."""
    eig = np.linalg.eigvalsh((form + form.T) / 2)
    tol = rtol * np.abs(eig).max()
    pos = np.sort(eig[eig > tol])[::-1]
    neg = np.sort(-eig[eig < -tol])[::-1]
    size = max(len(pos), len(neg))
    return np.pad(pos, (0, size - len(pos))), np.pad(neg, (0, size - len(neg)))


def dense_profile(form: np.ndarray, rtol: float = 1e-9) -> dict[str, float]:
    """Profile ``(a, b, c, d)``, symmetric profile, symmetric energy, pairing score and the
    numbers of positive and negative eigenvalues of S, of a dense square form."""
    sym, skew = (form + form.T) / 2, (form - form.T) / 2
    pos, neg = dense_lobes(form, rtol)
    l2, s2 = np.sum(form**2), np.sum(sym**2)
    cross, over, under = 2 * pos @ neg, np.clip(pos - neg, 0, None), np.clip(neg - pos, 0, None)
    return {
        "a": np.sum(skew**2) / l2,
        "b": cross / l2,
        "c": np.sum(over**2) / l2,
        "d": np.sum(under**2) / l2,
        "b_sym": cross / s2,
        "c_sym": np.sum(over**2) / s2,
        "d_sym": np.sum(under**2) / s2,
        "energy": s2 / l2,
        "pairing": 1 - np.linalg.norm(pos - neg) / np.sqrt(s2),
        "n_pos": np.count_nonzero(pos),
        "n_neg": np.count_nonzero(neg),
    }


def dense_abcd(form: np.ndarray) -> np.ndarray:
    """The profile ``(a, b, c, d)`` of a dense square form as an array."""
    profile = dense_profile(form)
    return np.array([profile[name] for name in PROFILE])


def gram_factor(gram: np.ndarray) -> np.ndarray:
    """A batch of ``F`` with ``F F^T = G`` (lower Cholesky; eigen square root if G is singular)."""
    try:
        return np.linalg.cholesky(gram)
    except np.linalg.LinAlgError:
        w, v = np.linalg.eigh(gram)
        return v * np.sqrt(np.clip(w, 0.0, None))[..., None, :]


def forms_from_gram(gram: np.ndarray, model_dim: int) -> FormBatch:
    """All spectra of the forms from their Gram matrices alone (through headforms.forms)."""
    gram = np.asarray(gram, dtype=np.float64)
    return forms_from_factor(gram_factor(gram), model_dim, gram)


def wishart_gram(
    rng: np.random.Generator, n_heads: int, head_dim: int, model_dim: int
) -> np.ndarray:
    """Gram matrices of independent Gaussian ``K, Q`` (headforms.forms.wishart_factor)."""
    factor = wishart_factor(rng, n_heads, head_dim, model_dim)
    return factor @ np.swapaxes(factor, -1, -2)
