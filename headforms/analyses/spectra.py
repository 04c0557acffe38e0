"""Per-head spectra of the symmetric part S: unit spectra, their mean, projections, clusters
(Figs 3-5), as the paper constructs them (confirmed against the author's code).

A head's *unit spectrum* x is its ``2n`` eigenvalues of S that can be non-zero (``eig_s``),
sorted in decreasing order and divided by their Euclidean norm ``||S||``: a point on the unit
sphere of R^{2n}, invariant under positive scaling of L. Heads of one model share ``2n``, so
their unit spectra stack into a matrix X (heads x 2n), which is averaged, projected and clustered.

- Fig 3/4 *mean eigenvalue distribution*: the mean of the sorted unit spectra, entry by entry
  (the quantile average of the heads' empirical spectral distributions).
- Fig 5 *projection*: the **uncentred** SVD ``X = U S V^T``; each head's coordinates are the
  first columns of ``U S`` (= X V). Component 1 is nearly constant (the common shape of the
  spectra). Signs are fixed so that component 1 is positive on average, component 2 increases
  with the signed asymmetry and component 3 with the spectral effective rank (Pearson
  correlation positive). A centred PCA (:func:`spectral_pca`) is kept as an option: its PC1-3
  are essentially the SVD's components 2-4 (centring removes the common shape).
- Fig 4 *clusters*: k-means with k = 3 on the rows of X, clusters numbered by decreasing mean
  signed asymmetry (the author names them Type I+, II, I-, a rank, not the parity test; here
  they are named neutrally, by rank and by where the caption attaches them to Θ,
  :data:`CLUSTER_NAMES`, and their parity make-up is counted); each is portrayed by its most
  extreme members (:func:`extreme_heads`). Choosing k by silhouette is an option. Per layer,
  the share of its heads in each cluster: :func:`clusters_by_layer`.
- Moments (the right panel of Fig 5): ``O = sum x/(1 - x^2)`` and ``E = sum x^2/(1 - x^2)``.

*Signed asymmetry* of x: ``sum_{x_i > 0} x_i^2 - sum_{x_i < 0} x_i^2`` (positive minus negative
energy, in [-1, 1]). *Spectral effective rank*: ``exp(-sum p_i log p_i)`` with ``p_i = x_i^2``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.metrics import silhouette_score
from threadpoolctl import threadpool_limits

from ..columns import PROFILE
from ..errors import HeadformsError
from ..forms import PARITY_LABELS, unit_spectra
from .theta import theta_projection

RANDOM_STATE = 0
"""Seed of KMeans (results must not change between reruns of a page)."""

PAPER_K = 3
"""The paper's number of clusters."""

CLUSTER_PLACES = ("c", "midpoint", "d")
"""Where the caption of Figure 4 attaches the k = 3 clusters, by rank (decreasing mean signed
asymmetry): the first toward the vertex c = 1 of Θ, the second at Θ's midpoint, the third toward
d = 1. The author names them Type I+, II, I-; they are k-means clusters of spectra, not the
parity classes (their parity make-up is counted in :func:`cluster_summary`), so they get neutral
names here."""

CLUSTER_NAMES = ("cluster 1 (toward c)", "cluster 2 (Θ midpoint)", "cluster 3 (toward d)")
"""Names of the k = 3 clusters: their rank and where Figure 4 hangs them on Θ."""

DEFAULT_K_RANGE = range(2, 9)
"""Cluster counts tried by the silhouette criterion."""

N_EXTREME = 10
HEADS_PER_EXTREME = 144
"""Heads averaged per cluster in Fig 4: 10 per 144 heads (gpt2's "ten most extreme heads"),
at least 10 (:func:`extreme_count`)."""

SILHOUETTE_COMPONENTS = 10
"""The silhouette scan runs KMeans on this many leading principal coordinates of the unit
spectra (over 97% of their variance on the bundled models; the labels agree with k-means on X
itself): KMeans on 10,000 heads takes 0.1 s per k instead of 1 s. The clusters shown are
always computed on X itself."""

SILHOUETTE_SAMPLE = 2000
"""Silhouettes of larger models are estimated on this many heads (seeded): the exact score
costs O(heads^2) distances, 7 s per k for 10,000 heads."""

SINGLE_THREAD = {"limits": 1}
"""KMeans / PCA run single-threaded: these problems are small, and OpenMP threads spinning on a
shared, busy machine made KMeans 50x slower (10 s instead of 0.2 s for 270 heads)."""

ODD_PERCENTILES = (5, 20, 35, 50, 65, 80, 95)
EVEN_PERCENTILES = (10, 30, 50, 70, 90)
"""Level sets of O and E drawn at these percentiles of the heads' own values."""


def mean_unit_spectrum(eig_s: np.ndarray) -> np.ndarray:
    """Mean of the sorted unit spectra of the given heads (the mean eigenvalue distribution)."""
    spectra = unit_spectra(eig_s)
    if spectra.shape[0] == 0:
        raise HeadformsError("no heads to average: the selection is empty")
    return spectra.mean(axis=0)


def signed_asymmetry(unit: np.ndarray) -> np.ndarray:
    """Positive minus negative energy of each unit spectrum (row)."""
    unit = np.asarray(unit, dtype=np.float64)
    return np.sum(np.sign(unit) * unit**2, axis=-1)


def effective_rank(unit: np.ndarray) -> np.ndarray:
    """Spectral effective rank ``exp(entropy of x_i^2 / ||x||^2)`` of each row."""
    energy = np.asarray(unit, dtype=np.float64) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        p = energy / energy.sum(axis=-1, keepdims=True)
        entropy = -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1)
    return np.exp(entropy)


def moments(unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(O, E)`` per row: ``sum x/(1 - x^2)`` and ``sum x^2/(1 - x^2)`` (inf if some |x| = 1)."""
    x = np.asarray(unit, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = 1.0 / (1.0 - x**2)
    return np.sum(x * weight, axis=-1), np.sum(x**2 * weight, axis=-1)


@dataclass(frozen=True)
class SpectralProjection:
    """Coordinates of the heads' unit spectra on a few directions of spectrum space (Fig 5).

    ``kind``: ``"svd"`` (uncentred, the paper's) or ``"pca"`` (centred). ``scores``: (heads, k)
    coordinates; ``explained``: share of ``||X||^2`` (svd) or of the variance (pca) per
    component; ``components``: (k, 2n) unit directions (right singular vectors / principal
    axes), signed like the scores; ``mean``: subtracted before projecting (zero for svd).
    """

    kind: str
    scores: np.ndarray
    explained: np.ndarray
    components: np.ndarray
    mean: np.ndarray

    def axis_title(self, index: int) -> str:
        """``component 2 (3.8%)``: share of ``||X||^2`` (svd) / ``PC1 (41.0%)``: share of the
        variance (pca), for a 0-based index."""
        name = f"component {index + 1}" if self.kind == "svd" else f"PC{index + 1}"
        return f"{name} ({100 * self.explained[index]:.1f}%)"


def _check_heads(spectra: np.ndarray, what: str) -> None:
    if spectra.shape[0] < 1 or spectra.shape[1] < 1:
        raise HeadformsError(f"{what} needs at least one head with a non-empty spectrum")


def spectral_svd(eig_s: np.ndarray, n_components: int = 3) -> SpectralProjection:
    """The paper's Fig 5 coordinates: uncentred SVD of the unit spectra, signs fixed (module doc).

    Components 2 and 3 are flipped only if their correlation with the signed asymmetry /
    effective rank is negative; a constant statistic leaves the sign as LAPACK returns it.
    """
    x = unit_spectra(eig_s)
    _check_heads(x, "the spectral SVD")
    n_components = min(n_components, *x.shape)
    with threadpool_limits(**SINGLE_THREAD):
        u, s, vt = np.linalg.svd(x, full_matrices=False)
    scores = u[:, :n_components] * s[:n_components]
    components = vt[:n_components].copy()
    flips = np.ones(n_components)
    flips[0] = -1.0 if scores[:, 0].mean() < 0 else 1.0
    for index, statistic in ((1, signed_asymmetry(x)), (2, effective_rank(x))):
        if index < n_components and np.std(statistic) > 0 and np.std(scores[:, index]) > 0:
            if np.corrcoef(scores[:, index], statistic)[0, 1] < 0:
                flips[index] = -1.0
    return SpectralProjection(
        kind="svd",
        scores=scores * flips,
        explained=(s**2 / np.sum(s**2))[:n_components],
        components=components * flips[:, None],
        mean=np.zeros(x.shape[1]),
    )


def spectral_pca(eig_s: np.ndarray, n_components: int = 3) -> SpectralProjection:
    """Centred PCA of the unit spectra (an option beside the paper's :func:`spectral_svd`)."""
    spectra = unit_spectra(eig_s)
    _check_heads(spectra, "PCA")
    n_components = min(n_components, *spectra.shape)
    with threadpool_limits(**SINGLE_THREAD):
        pca = PCA(n_components=n_components, svd_solver="full").fit(spectra)
        scores = pca.transform(spectra)
    return SpectralProjection(
        kind="pca",
        scores=scores,
        explained=pca.explained_variance_ratio_,
        components=pca.components_,
        mean=pca.mean_,
    )


def project(eig_s: np.ndarray, kind: str = "svd", n_components: int = 3) -> SpectralProjection:
    """:func:`spectral_svd` (``kind="svd"``, the paper's) or :func:`spectral_pca` (``"pca"``)."""
    if kind == "svd":
        return spectral_svd(eig_s, n_components)
    if kind == "pca":
        return spectral_pca(eig_s, n_components)
    raise HeadformsError(f"unknown projection {kind!r}; choose 'svd' (the paper's) or 'pca'")


@dataclass(frozen=True)
class MomentLevels:
    """O and E on a grid of the component 2-3 plane (the right panel of Fig 5).

    The point ``(c2, c3)`` of the plane is the unit spectrum ``x = y / ||y||`` with
    ``y = c1 v1 + c2 v2 + c3 v3``: ``v_i`` the signed right singular vectors and ``c1`` frozen
    at the heads' mean first coordinate (the paper's rank-3 model). ``odd``/``even`` are O and E
    there, shape (len(y), len(x)); the levels are percentiles of the heads' own O and E.
    """

    x: np.ndarray
    y: np.ndarray
    odd: np.ndarray
    even: np.ndarray
    odd_levels: np.ndarray
    even_levels: np.ndarray
    c1: float


def _levels(values: np.ndarray, percentiles: tuple[int, ...]) -> np.ndarray:
    """Distinct percentiles of the finite values, rounded to two digits of their spread."""
    values = values[np.isfinite(values)]
    if values.size == 0:
        return np.array([])
    raw = np.percentile(values, percentiles)
    spread = float(raw[-1] - raw[0])
    decimals = max(0, 1 - int(np.floor(np.log10(spread)))) if spread > 0 else 3
    return np.unique(np.round(raw, decimals))


def moment_levels(
    eig_s: np.ndarray, svd: SpectralProjection, resolution: int = 160, margin: float = 0.08
) -> MomentLevels:
    """O and E over the components 2-3 plane of ``svd`` (an uncentred projection with at least
    three components), on a grid spanning the heads plus ``margin`` of the span on every side."""
    if svd.kind != "svd" or svd.scores.shape[1] < 3:
        raise HeadformsError("O/E level sets need the uncentred SVD with three components")
    x_heads = unit_spectra(eig_s)
    odd_heads, even_heads = moments(x_heads)
    axes = []
    for index in (1, 2):
        low, high = svd.scores[:, index].min(), svd.scores[:, index].max()
        pad = margin * max(high - low, 1e-3)
        axes.append(np.linspace(low - pad, high + pad, resolution))
    c1 = float(svd.scores[:, 0].mean())
    grid2, grid3 = np.meshgrid(axes[0], axes[1])
    y = (
        c1 * svd.components[0]
        + grid2[..., None] * svd.components[1]
        + grid3[..., None] * svd.components[2]
    )
    y /= np.linalg.norm(y, axis=-1, keepdims=True)
    odd, even = moments(y)
    return MomentLevels(
        x=axes[0],
        y=axes[1],
        odd=odd,
        even=even,
        odd_levels=_levels(odd_heads, ODD_PERCENTILES),
        even_levels=_levels(even_heads, EVEN_PERCENTILES),
        c1=c1,
    )


@dataclass(frozen=True)
class Clustering:
    """KMeans clusters of the unit spectra, numbered by decreasing mean signed asymmetry.

    ``labels``: cluster per head (0 = most positive asymmetry); ``centers``: (k, 2n) mean unit
    spectrum per cluster; ``asymmetry``: mean signed asymmetry per cluster; ``names``:
    :data:`CLUSTER_NAMES` for k = 3, else ``cluster 1..k``; ``places``: where Figure 4 attaches
    each cluster to Θ (:data:`CLUSTER_PLACES` for k = 3, else None per cluster).
    """

    labels: np.ndarray
    k: int
    centers: np.ndarray
    asymmetry: np.ndarray
    names: tuple[str, ...]
    places: tuple[str | None, ...]


def _kmeans(features: np.ndarray, k: int) -> KMeans:
    with threadpool_limits(**SINGLE_THREAD):
        return KMeans(n_clusters=k, n_init=4, random_state=RANDOM_STATE).fit(features)


def feasible_k(n_heads: int, k_range: range = DEFAULT_K_RANGE) -> list[int]:
    """The cluster counts of ``k_range`` worth offering for ``n_heads`` heads: 2 <= k < n_heads
    (fewer heads than that leave nothing to compare; none for at most 2 heads)."""
    return [k for k in k_range if 2 <= k < n_heads]


def silhouette_scan(eig_s: np.ndarray, k_range: range = DEFAULT_K_RANGE) -> dict[int, float]:
    """Mean silhouette coefficient of KMeans for each k of :func:`feasible_k` in ``k_range``
    (see :data:`SILHOUETTE_COMPONENTS`)."""
    n_heads = np.shape(eig_s)[0]
    scores: dict[int, float] = {}
    ks = feasible_k(n_heads, k_range)
    if not ks:
        return scores
    features = spectral_pca(eig_s, SILHOUETTE_COMPONENTS).scores
    for k in ks:
        labels = _kmeans(features, k).labels_
        if len(set(labels)) < 2:
            scores[k] = float("nan")
            continue
        with threadpool_limits(**SINGLE_THREAD):
            scores[k] = float(
                silhouette_score(
                    features,
                    labels,
                    sample_size=min(n_heads, SILHOUETTE_SAMPLE),
                    random_state=RANDOM_STATE,
                )
            )
    return scores


def best_k_or_none(scan: dict[int, float]) -> int | None:
    """The k of the largest finite silhouette in a :func:`silhouette_scan`, or None if none is
    finite (too few heads, or every k collapsed to one cluster)."""
    finite = {k: v for k, v in scan.items() if np.isfinite(v)}
    return max(finite, key=finite.__getitem__) if finite else None


def best_k(scan: dict[int, float]) -> int:
    """:func:`best_k_or_none`, or a one-line error when the scan has no finite silhouette."""
    k = best_k_or_none(scan)
    if k is None:
        raise HeadformsError("too few heads to choose a number of clusters by silhouette")
    return k


def cluster_spectra(eig_s: np.ndarray, k: int | None = PAPER_K) -> Clustering:
    """KMeans (fixed seed) on the unit spectra, renumbered by decreasing mean signed asymmetry.

    ``k=None`` picks the best silhouette of :func:`silhouette_scan`; the default is the paper's 3.
    """
    spectra = unit_spectra(eig_s)
    n_heads = spectra.shape[0]
    if k is None:
        k = best_k(silhouette_scan(eig_s))
    if not 1 <= k <= n_heads:
        raise HeadformsError(f"cannot make {k} clusters from {n_heads} heads")
    raw = _kmeans(spectra, k).labels_
    asymmetry = signed_asymmetry(spectra)
    found = [j for j in range(k) if np.any(raw == j)]
    means = {j: asymmetry[raw == j].mean() for j in found}
    order = sorted(found, key=lambda j: -means[j])
    labels = np.empty(n_heads, dtype=int)
    for new, old in enumerate(order):
        labels[raw == old] = new
    k = len(order)
    paper = k == PAPER_K
    return Clustering(
        labels=labels,
        k=k,
        centers=np.stack([spectra[labels == j].mean(axis=0) for j in range(k)]),
        asymmetry=np.array([means[j] for j in order]),
        names=CLUSTER_NAMES if paper else tuple(f"cluster {j + 1}" for j in range(k)),
        places=CLUSTER_PLACES if paper else (None,) * k,
    )


def extreme_count(n_heads: int) -> int:
    """Extreme members averaged per cluster: 10 per 144 heads, at least 10."""
    return max(N_EXTREME, round(N_EXTREME * n_heads / HEADS_PER_EXTREME))


def extreme_heads(
    eig_s: np.ndarray, labels: np.ndarray, n_extreme: int | None = None
) -> dict[int, np.ndarray]:
    """Row indices of each cluster's ``n_extreme`` most extreme heads, most extreme first.

    Extremeness of a head x in cluster j: its projection ``<x - m, u_j>`` on the cluster's
    direction ``u_j = (c_j - m) / ||c_j - m||``, with m the mean unit spectrum of all heads and
    c_j the cluster's mean: the heads that go furthest from the average in their cluster's way.
    ``n_extreme=None``: :func:`extreme_count` of the number of heads.
    """
    spectra = unit_spectra(eig_s)
    n_extreme = extreme_count(len(spectra)) if n_extreme is None else n_extreme
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
    heads: pd.DataFrame,
    eig_s: np.ndarray,
    clustering: Clustering,
    n_extreme: int | None = None,
) -> tuple[pd.DataFrame, np.ndarray]:
    """Per cluster (in order): name, size, mean signed asymmetry, and of its extreme heads the
    negative energy of their mean spectrum, their mean position along Theta, mean profile,
    pairing and majority parity; then the parity make-up of the whole cluster (``heads I+``,
    ``heads II``, ``heads I-``: how many of its heads have each parity type). Also returns the
    (k, 2n) mean sorted unit spectra of each cluster's extreme heads (the histograms of Fig 4)."""
    extremes = extreme_heads(eig_s, clustering.labels, n_extreme)
    _, _, position = theta_projection(heads[list(PROFILE)].to_numpy(dtype=float))
    rows = []
    means = []
    for cluster, idx in extremes.items():
        chosen = heads.iloc[idx]
        members = heads["parity"].to_numpy()[clustering.labels == cluster]
        mean = mean_unit_spectrum(eig_s[idx])
        parity_counts = chosen["parity"].value_counts()
        rows.append(
            {
                "cluster": cluster,
                "name": clustering.names[cluster],
                "size": int(np.sum(clustering.labels == cluster)),
                "asymmetry": float(clustering.asymmetry[cluster]),
                "n_extreme": len(idx),
                "negative_energy": float(np.sum(mean[mean < 0] ** 2)),
                "theta_position": float(np.nanmean(position[idx])),
                "a": chosen["a"].mean(),
                "b": chosen["b"].mean(),
                "c": chosen["c"].mean(),
                "d": chosen["d"].mean(),
                "pairing": chosen["pairing"].mean(),
                "parity": parity_counts.index[0],
                **{f"heads {p}": int(np.sum(members == p)) for p in PARITY_LABELS},
                "extreme_heads": ", ".join(
                    f"L{layer}H{head}"
                    for layer, head in zip(chosen["layer"], chosen["head"], strict=True)
                ),
            }
        )
        means.append(mean)
    return pd.DataFrame(rows), np.vstack(means)


def clusters_by_layer(layers: np.ndarray, labels: np.ndarray, k: int) -> pd.DataFrame:
    """Per layer (rows, every layer from 0 to the last), the percent of its heads in each of
    the ``k`` clusters (columns 0..k-1): the author's clusters-by-layer grid."""
    layers = np.asarray(layers, dtype=int)
    counts = np.zeros((int(layers.max()) + 1 if layers.size else 0, k))
    np.add.at(counts, (layers, np.asarray(labels, dtype=int)), 1.0)
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(100.0 * counts, totals, out=np.zeros_like(counts), where=totals > 0)
    frame = pd.DataFrame(shares, columns=range(k))
    frame.index.name = "layer"
    return frame


def parity_make_up(summary_row: Mapping[str, object]) -> str:
    """A cluster's parity make-up from its :func:`cluster_summary` row: '31 I+, 105 II, 22 I−'
    (how many of its heads have each parity type)."""
    return ", ".join(
        f"{summary_row.get(f'heads {p}', '?')} {p.replace('-', '−')}" for p in PARITY_LABELS
    )


def projection_frame(
    heads: pd.DataFrame, projection: SpectralProjection, clustering: Clustering | None = None
) -> pd.DataFrame:
    """Tidy frame for the Fig 5 scatters: layer, head, parity, profile, pairing, ``c1..ck``
    (coordinates) and the cluster index and name."""
    frame = heads[["layer", "head", "parity", *PROFILE, "pairing"]].copy()
    for i in range(projection.scores.shape[1]):
        frame[f"c{i + 1}"] = projection.scores[:, i]
    if clustering is not None:
        frame["cluster"] = clustering.labels
        frame["cluster_name"] = np.asarray(clustering.names, dtype=object)[clustering.labels]
    else:
        frame["cluster"] = 0
        frame["cluster_name"] = "all heads"
    return frame.reset_index(drop=True)
