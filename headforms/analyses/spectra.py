"""Per-head spectra of the symmetric part S: unit spectra, their mean, PCA, clusters (Figs 3-5).

A head's *unit spectrum* is its ``2n`` eigenvalues of S that can be non-zero (``eig_s``), sorted
in decreasing order and divided by their Euclidean norm (which is ``||S||``, Frobenius): a
point on the unit sphere of R^{2n}, invariant under positive scaling of L. Heads of one model
share ``2n``, so their unit spectra can be averaged, projected (PCA) and clustered.

The *mean eigenvalue distribution* (Fig 3, and per cluster Fig 4) is the mean of the sorted
unit spectra, entry by entry: the quantile average (the Wasserstein-2 barycentre) of the heads'
empirical spectral distributions, itself a sorted spectrum of ``2n`` values whose histogram is
drawn. The paper's Fig 4 caption ("the mean of the sorted, unit-length spectra of the ten most
extreme heads in one cluster") uses the same construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.metrics import silhouette_score
from threadpoolctl import threadpool_limits

from ..errors import HeadformsError

RANDOM_STATE = 0
"""Seed of KMeans (results must not change between reruns of a page)."""

DEFAULT_K_RANGE = range(2, 9)
"""Cluster counts tried by the silhouette criterion."""

N_EXTREME = 10
"""Heads averaged per cluster in Fig 4 (the paper's "ten most extreme heads")."""

CLUSTER_COMPONENTS = 10
"""Clusters are found on this many leading principal coordinates of the unit spectra (over 97%
of their variance on the bundled models): distances barely change, and KMeans on 10,000 heads
takes 0.1 s per k instead of 3 s."""

SILHOUETTE_SAMPLE = 2000
"""Silhouettes of larger models are estimated on this many heads (seeded): the exact score
costs O(heads^2) distances, 7 s per k for 10,000 heads."""

SINGLE_THREAD = {"limits": 1}
"""KMeans / PCA run single-threaded: these problems are small, and OpenMP threads spinning on a
shared, busy machine made KMeans 50x slower (10 s instead of 0.2 s for 270 heads)."""


def unit_spectra(eig_s: np.ndarray) -> np.ndarray:
    """Rows sorted decreasing, divided by their Euclidean norm (``||S||``); zero rows stay 0."""
    spectra = -np.sort(-np.asarray(eig_s, dtype=np.float64), axis=-1)
    norms = np.linalg.norm(spectra, axis=-1, keepdims=True)
    return np.divide(spectra, norms, out=np.zeros_like(spectra), where=norms > 0)


def mean_unit_spectrum(eig_s: np.ndarray) -> np.ndarray:
    """Mean of the sorted unit spectra of the given heads (the mean eigenvalue distribution)."""
    spectra = unit_spectra(eig_s)
    if spectra.shape[0] == 0:
        raise HeadformsError("no heads to average: the selection is empty")
    return spectra.mean(axis=0)


@dataclass(frozen=True)
class SpectralPCA:
    """Principal components of a model's unit spectra (Fig 5).

    ``scores``: (heads, k) coordinates; ``explained``: fraction of variance per component;
    ``components``: (k, 2n) principal axes in spectrum space; ``mean``: the mean unit spectrum.
    """

    scores: np.ndarray
    explained: np.ndarray
    components: np.ndarray
    mean: np.ndarray


def spectral_pca(eig_s: np.ndarray, n_components: int = 3) -> SpectralPCA:
    """Project the heads' unit spectra onto their first ``n_components`` principal components."""
    spectra = unit_spectra(eig_s)
    n_components = min(n_components, *spectra.shape)
    if n_components < 1:
        raise HeadformsError("PCA needs at least one head with a non-empty spectrum")
    with threadpool_limits(**SINGLE_THREAD):
        pca = PCA(n_components=n_components, svd_solver="full").fit(spectra)
        scores = pca.transform(spectra)
    return SpectralPCA(
        scores=scores,
        explained=pca.explained_variance_ratio_,
        components=pca.components_,
        mean=pca.mean_,
    )


@dataclass(frozen=True)
class Clustering:
    """KMeans clusters of unit spectra: ``labels`` per head, chosen ``k``, silhouette per k tried.

    ``centers``: (k, 2n) mean unit spectrum of each cluster. ``silhouette``: k -> mean
    silhouette coefficient (in the clustering coordinates).
    """

    labels: np.ndarray
    k: int
    centers: np.ndarray
    silhouette: dict[int, float]


def _kmeans(spectra: np.ndarray, k: int) -> KMeans:
    with threadpool_limits(**SINGLE_THREAD):
        return KMeans(n_clusters=k, n_init=4, random_state=RANDOM_STATE).fit(spectra)


def cluster_spectra(
    eig_s: np.ndarray, k: int | None = None, k_range: range = DEFAULT_K_RANGE
) -> Clustering:
    """Cluster unit spectra with KMeans (fixed seed); ``k=None`` picks the best silhouette in range.

    KMeans and silhouettes use the first :data:`CLUSTER_COMPONENTS` principal coordinates.
    The silhouette of every k in ``k_range`` is always reported, so a page can show why a k
    was chosen while the user overrides it.
    """
    spectra = unit_spectra(eig_s)
    features = spectral_pca(eig_s, CLUSTER_COMPONENTS).scores
    n_heads = spectra.shape[0]
    tried = [kk for kk in k_range if 2 <= kk < n_heads]
    if k is not None and not 1 <= k <= n_heads:
        raise HeadformsError(f"cannot make {k} clusters from {n_heads} heads")
    if k is None and not tried:
        raise HeadformsError(f"too few heads ({n_heads}) to choose a number of clusters")
    fits: dict[int, KMeans] = {}
    scores: dict[int, float] = {}
    for kk in tried:
        fits[kk] = _kmeans(features, kk)
        labels = fits[kk].labels_
        with threadpool_limits(**SINGLE_THREAD):
            score = (
                silhouette_score(
                    features,
                    labels,
                    sample_size=min(n_heads, SILHOUETTE_SAMPLE),
                    random_state=RANDOM_STATE,
                )
                if len(set(labels)) > 1
                else np.nan
            )
        scores[kk] = float(score)
    if k is None:
        k = max(scores, key=lambda kk: -np.inf if np.isnan(scores[kk]) else scores[kk])
    labels = (fits.get(k) or _kmeans(features, k)).labels_.astype(int)
    centers = np.stack([spectra[labels == j].mean(axis=0) for j in range(k)])
    return Clustering(labels=labels, k=k, centers=centers, silhouette=scores)


def extreme_heads(
    eig_s: np.ndarray, labels: np.ndarray, n_extreme: int = N_EXTREME
) -> dict[int, np.ndarray]:
    """Row indices of each cluster's ``n_extreme`` most extreme heads, most extreme first.

    Extremeness of a head x in cluster j: its projection ``<x - m, u_j>`` on the cluster's
    direction ``u_j = (c_j - m) / ||c_j - m||``, with m the mean unit spectrum of all heads and
    c_j the cluster's mean: the heads that go furthest from the average in their cluster's way.
    """
    spectra = unit_spectra(eig_s)
    overall = spectra.mean(axis=0)
    out: dict[int, np.ndarray] = {}
    for cluster in np.unique(labels):
        rows = np.flatnonzero(labels == cluster)
        direction = spectra[rows].mean(axis=0) - overall
        norm = np.linalg.norm(direction)
        if norm > 0:
            direction = direction / norm
        projection = (spectra[rows] - overall) @ direction
        out[int(cluster)] = rows[np.argsort(-projection, kind="stable")[:n_extreme]]
    return out


def cluster_summary(
    heads: pd.DataFrame, eig_s: np.ndarray, labels: np.ndarray, n_extreme: int = N_EXTREME
) -> tuple[pd.DataFrame, np.ndarray]:
    """Per cluster: size, its extreme heads' mean profile and majority parity, and mean spectrum.

    Returns a frame (one row per cluster, ordered by cluster id) and a (clusters, 2n) array of
    the mean sorted unit spectra of each cluster's extreme heads (Fig 4).
    """
    extremes = extreme_heads(eig_s, labels, n_extreme)
    rows = []
    means = []
    for cluster, idx in extremes.items():
        chosen = heads.iloc[idx]
        parity_counts = chosen["parity"].value_counts()
        rows.append(
            {
                "cluster": cluster,
                "size": int(np.sum(labels == cluster)),
                "n_extreme": len(idx),
                "a": chosen["a"].mean(),
                "b": chosen["b"].mean(),
                "c": chosen["c"].mean(),
                "d": chosen["d"].mean(),
                "pairing": chosen["pairing"].mean(),
                "parity": parity_counts.index[0],
                "extreme_heads": ", ".join(
                    f"L{layer}H{head}"
                    for layer, head in zip(chosen["layer"], chosen["head"], strict=True)
                ),
            }
        )
        means.append(mean_unit_spectrum(eig_s[idx]))
    return pd.DataFrame(rows), np.vstack(means)


def pca_frame(
    heads: pd.DataFrame, pca: SpectralPCA, labels: np.ndarray | None = None
) -> pd.DataFrame:
    """Tidy frame for the PCA scatter: layer, head, parity, pc1..pck and the cluster label."""
    frame = heads[["layer", "head", "parity", "a", "b", "c", "d", "pairing"]].copy()
    for i in range(pca.scores.shape[1]):
        frame[f"pc{i + 1}"] = pca.scores[:, i]
    frame["cluster"] = labels if labels is not None else 0
    return frame.reset_index(drop=True)
