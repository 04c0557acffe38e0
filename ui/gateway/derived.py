"""The kinds computed from results already at hand (an analysis, a sweep, scores), each one
frozen dataclass:

- :class:`Observation3Fits`: every family fitted to each head's spectral lobes, and the errors;
- :class:`Observation6Fits`: the same for |eigenvalues of L| and the singular values of A, and
  pooled over the heads;
- :class:`SilhouetteScan`, :class:`SpectraClusters`, :class:`SpectraProjection`: k-means of the
  unit spectra (every k's silhouette, one k's clusters) and their projections (Figures 4, 5);
- :class:`SpectralGeometry`: gamma laws of the lobes and of sigma(A), their modes' ratios;
- :class:`ObservationSummaries`: the Observations page's tables, per model;
- :class:`GeometryCorrelations`, :class:`GeometryCorrelation`: Spearman's rho with its
  bootstrap interval, of every geometric column (or one) against a score or a measure;
- :class:`Theorem5Samples`: profiles of spectra sampled from two gamma lobes;
- :class:`ParityChanges`, :class:`Movement`: where the heads of a path change parity, and how
  far each moved.

Each is a :class:`Derived`: its inputs (the results it is computed from, never compared, and
what names them by content) with a :attr:`~Derived.key` and a :meth:`~Derived.compute`, the
library's functions. It runs in the server: on a private server on the thread of the caller
that starts it (its job shared all the same), on a hosted one at the visitor's turn in the
server's own lane (:func:`headforms.hosted.in_server`), charged one of its
:attr:`~Derived.budget` (new summaries, ``HEADFORMS_VISITOR_SUMMARIES``; a Theorem 5 sampling,
``HEADFORMS_VISITOR_SAMPLES``), and bounded by its inputs' sizes (what the analysis it is
computed from was bounded by). The gateway shares one between the sessions that
ask for it and keeps it in its cache like any result.

A result's key names its inputs by content: a model by its weights' fingerprint, RoPE position
and folding (:func:`of_model`), and, where the result holds names (a summary's rows per model,
a path's axis of model names), those names too.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, TypeVar

from headforms import hosted
from headforms.analyses import motion
from headforms.analyses.behaviour import (
    CORRELATION_COLUMNS,
    GEOMETRY_COLUMNS,
    Correlation,
    correlation_table,
    rank_correlation,
)
from headforms.analyses.lobes import observation5_summary
from headforms.analyses.observations import symmetric_bias_summary
from headforms.analyses.parity import theorem3_summary
from headforms.analyses.theorem5 import check_sample_size, sample_profiles_for_sizes
from headforms.analyses.theta import theta_summary
from headforms.errors import OptionError
from headforms.hosted import Budget, Check
from headforms.progress import Progress

from .computation import Computation

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from headforms import ModelAnalysis
    from headforms.analyses.fits import LobeFits
    from headforms.analyses.spectra import Clustering, MomentLevels, SpectralProjection
    from headforms.head_paths import HeadPaths

# The fits (scipy) and the spectra (scikit-learn) are imported by the computations that use
# them, not with the gateway: a server's first page needs neither.

R = TypeVar("R")


def of_model(analysis: ModelAnalysis) -> tuple[str, int, bool]:
    """An analysis by content: its weights' fingerprint, RoPE position and QK-norm folding."""
    card = analysis.card
    return (card.fingerprint, card.rope_position, card.qk_norm_folded)


class Derived(Computation[R]):
    """A computation from results at hand, run in the server (module doc): a subclass defines
    :attr:`key` and :meth:`compute`, and may set :attr:`budget`."""

    budget: ClassVar[Budget] = Budget.SUMMARIES
    """What a hosted visitor is charged for a new one."""
    inline: ClassVar[bool] = True
    what: ClassVar[str] = "a summary"
    """What it is, for the line a page shows while it waits (``Computing the lobe fits``)."""
    first_message = "waiting for its turn"

    @abstractmethod
    def compute(self) -> R:
        """The result, from the library's functions (on the job's thread)."""

    def local(self, progress: Progress) -> R:
        return self.compute()

    def hosted(self, progress: Progress, check: Check, visitor: str) -> R:
        return hosted.in_server(self.budget, self.compute, visitor=visitor, check=check)


# --- fits (Observations 3 and 6) -----------------------------------------------------------


@dataclass(frozen=True)
class Fitted:
    """Every family fitted to each head's samples of each kind (``fits``: kind -> its fits) and
    the model's average error per family and kind (``errors``)."""

    fits: dict[str, LobeFits]
    errors: pd.DataFrame


@dataclass(frozen=True, eq=False)
class Observation3Fits(Derived[Fitted]):
    """Every family fitted to both spectral lobes of every head of ``analysis`` (Observation 3)
    and the model's average error per family (the fits and compare pages)."""

    what: ClassVar[str] = "the lobe fits"

    analysis: ModelAnalysis = field(compare=False)

    @property
    def key(self) -> tuple:
        return ("lobe_fits", of_model(self.analysis))

    def compute(self) -> Fitted:
        from headforms.analyses import fits

        found = fits.fit_lobes(self.analysis.spectra)
        return Fitted(found, fits.mean_errors(fits.fit_table(self.analysis.heads, found)))


@dataclass(frozen=True)
class Observation6:
    """Observation 6's fits: per head (``fitted``) and pooled over the heads (``pooled``)."""

    fitted: Fitted
    pooled: dict[str, LobeFits]


@dataclass(frozen=True, eq=False)
class Observation6Fits(Derived[Observation6]):
    """Every family fitted to each head's |eigenvalues of L| and singular values of A (the
    analysis must hold those spectra), its average errors, and the fits of the pooled
    samples."""

    what: ClassVar[str] = "the fits of |λ(L)| and σ(A)"

    analysis: ModelAnalysis = field(compare=False)

    @property
    def key(self) -> tuple:
        return ("observation6_fits", of_model(self.analysis))

    def compute(self) -> Observation6:
        from headforms.analyses import fits

        found = fits.fit_observation6(self.analysis.spectra)
        errors = fits.mean_errors(fits.fit_table(self.analysis.heads, found))
        return Observation6(Fitted(found, errors), fits.pooled_fits(found))


# --- spectra (Figures 3-5) -----------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SilhouetteScan(Derived[dict[int, float]]):
    """The mean silhouette of k-means on the unit spectra for each feasible k."""

    what: ClassVar[str] = "the silhouettes"

    analysis: ModelAnalysis = field(compare=False)

    @property
    def key(self) -> tuple:
        return ("silhouette_scan", of_model(self.analysis))

    def compute(self) -> dict[int, float]:
        from headforms.analyses import spectra as sp

        return sp.silhouette_scan(self.analysis.spectra["eig_s"])


@dataclass(frozen=True)
class Clustered:
    """k-means of the unit spectra (``clustering``), the clusters' summary table and their
    extreme heads' mean spectra (``summary``, ``means``: :func:`spectra.cluster_summary`)."""

    clustering: Clustering
    summary: pd.DataFrame
    means: np.ndarray


@dataclass(frozen=True, eq=False)
class SpectraClusters(Derived[Clustered]):
    """k-means with ``k`` clusters on the unit spectra (Figure 4) and its summary."""

    what: ClassVar[str] = "the clusters"

    analysis: ModelAnalysis = field(compare=False)
    k: int

    @property
    def key(self) -> tuple:
        return ("spectra_clusters", of_model(self.analysis), self.k)

    def compute(self) -> Clustered:
        from headforms.analyses import spectra as sp

        eig_s = self.analysis.spectra["eig_s"]
        clustering = sp.cluster_spectra(eig_s, self.k)
        summary, means = sp.cluster_summary(self.analysis.heads, eig_s, clustering)
        return Clustered(clustering, summary, means)


@dataclass(frozen=True)
class Projected:
    """The unit spectra projected (``projection``) and, for the uncentred SVD, the level sets
    of the moments O and E over its components 2-3 (``levels``, else None)."""

    projection: SpectralProjection
    levels: MomentLevels | None


@dataclass(frozen=True, eq=False)
class SpectraProjection(Derived[Projected]):
    """The unit spectra on the uncentred SVD (``"svd"``, Figure 5, with the moments' level
    sets) or the centred PCA (``"pca"``)."""

    what: ClassVar[str] = "the projection"

    analysis: ModelAnalysis = field(compare=False)
    kind: str

    @property
    def key(self) -> tuple:
        return ("spectra_projection", of_model(self.analysis), self.kind)

    def compute(self) -> Projected:
        from headforms.analyses import spectra as sp

        eig_s = self.analysis.spectra["eig_s"]
        projection = sp.project(eig_s, self.kind)
        levels = sp.moment_levels(eig_s, projection) if self.kind == "svd" else None
        return Projected(projection, levels)


@dataclass(frozen=True, eq=False)
class SpectralGeometry(Derived["pd.DataFrame"]):
    """Gamma laws fitted to each head's lobes and singular values of A, and their modes' and
    shapes' ratios (the analysis must hold ``sv_a``)."""

    what: ClassVar[str] = "the spectral geometry"

    analysis: ModelAnalysis = field(compare=False)

    @property
    def key(self) -> tuple:
        return ("spectral_geometry", of_model(self.analysis))

    def compute(self) -> pd.DataFrame:
        from headforms.analyses.spectral_geometry import spectral_geometry

        return spectral_geometry(self.analysis.spectra)


# --- the observations' summaries -----------------------------------------------------------


@dataclass(frozen=True)
class Summaries:
    """Per model (and its Gaussian baseline): Theorem 3's balance, the distance to Theta,
    the symmetric bias and Observation 5's lobes."""

    theorem3: pd.DataFrame
    theta: pd.DataFrame
    bias: pd.DataFrame
    observation5: pd.DataFrame


@dataclass(frozen=True, eq=False)
class ObservationSummaries(Derived[Summaries]):
    """The Observations page's summary tables of ``analyses`` (name -> analysis) beside their
    Gaussian baselines' heads (``baselines``: name -> heads, for the models that have one)."""

    what: ClassVar[str] = "the summaries"

    analyses: Mapping[str, ModelAnalysis] = field(compare=False)
    baselines: Mapping[str, pd.DataFrame] = field(compare=False)

    @property
    def key(self) -> tuple:
        # the tables name the models: the names are part of what the result is
        models = tuple(
            (name, of_model(a), name in self.baselines) for name, a in self.analyses.items()
        )
        return ("observation_summaries", models)

    def compute(self) -> Summaries:
        models = {name: analysis.heads for name, analysis in self.analyses.items()}
        baselines = dict(self.baselines)
        return Summaries(
            theorem3_summary({n: (a.heads, a.card.head_dim) for n, a in self.analyses.items()}),
            theta_summary(models, baselines),
            symmetric_bias_summary(models, baselines),
            observation5_summary(models, baselines),
        )


# --- bootstrap intervals -------------------------------------------------------------------


def _check_columns(frame: pd.DataFrame, *columns: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise OptionError(f"no column {missing[0]!r} to correlate; columns: {list(frame.columns)}")


@dataclass(frozen=True, eq=False)
class GeometryCorrelations(Derived["pd.DataFrame"]):
    """Spearman's rho, with its seeded bootstrap interval over heads, of every geometric column
    against ``column`` (a head-type score, an intervention's measure) over the heads of
    ``frame`` (:func:`headforms.analyses.behaviour.correlation_table`); ``source`` names what
    the frame was made of, by content (the model, the scores or the edit)."""

    what: ClassVar[str] = "the rank correlations"

    source: Hashable
    frame: pd.DataFrame = field(compare=False)
    column: str
    seed: int = 0

    def __post_init__(self) -> None:
        _check_columns(self.frame, *GEOMETRY_COLUMNS, self.column)

    @property
    def key(self) -> tuple:
        return ("geometry_correlations", self.source, self.column, self.seed)

    def compute(self) -> pd.DataFrame:
        return correlation_table(self.frame, self.column, self.seed)


@dataclass(frozen=True, eq=False)
class GeometryCorrelation(Derived[Correlation]):
    """Spearman's rho, with its seeded bootstrap interval over heads, of ``column`` against
    one geometric column ``geometry`` (or a realised share of a score split) over the heads of
    ``frame`` (``source``: as for :class:`GeometryCorrelations`, the shares' too)."""

    what: ClassVar[str] = "the rank correlation"

    source: Hashable
    frame: pd.DataFrame = field(compare=False)
    geometry: str
    column: str
    seed: int = 0

    def __post_init__(self) -> None:
        if self.geometry not in CORRELATION_COLUMNS:
            raise OptionError(
                f"unknown geometric column {self.geometry!r}; accepted: "
                + ", ".join(CORRELATION_COLUMNS)
            )
        _check_columns(self.frame, self.geometry, self.column)

    @property
    def key(self) -> tuple:
        return ("geometry_correlation", self.source, self.geometry, self.column, self.seed)

    def compute(self) -> Correlation:
        x, y = self.frame[self.geometry].to_numpy(), self.frame[self.column].to_numpy()
        return rank_correlation(x, y, seed=self.seed)


# --- Theorem 5 -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Theorem5Samples(Derived["pd.DataFrame"]):
    """Profiles of spectra sampled from two gamma lobes (means ``mu``, ``nu``, shape ``k``),
    ``repetitions`` per n of ``sizes``, seeded (checked when made: bounded in spectra and
    eigenvalues); charged as a Theorem 5 sampling."""

    what: ClassVar[str] = "the sampling"

    budget: ClassVar[Budget] = Budget.SAMPLES
    mu: float
    nu: float
    k: float
    sizes: tuple[int, ...]
    repetitions: int
    seed: int

    def __post_init__(self) -> None:
        check_sample_size(self.sizes, self.repetitions)

    @property
    def key(self) -> tuple:
        return ("theorem5", self.mu, self.nu, self.k, self.sizes, self.repetitions, self.seed)

    def compute(self) -> pd.DataFrame:
        return sample_profiles_for_sizes(
            self.mu, self.nu, self.k, self.sizes, self.repetitions, self.seed
        )


# --- paths: a sweep, a training run, a diff ------------------------------------------------


@dataclass(frozen=True)
class Changes:
    """Every change of parity between consecutive points of a path (``changes``) and, per head
    that changes, their count and where (``by_head``)."""

    changes: pd.DataFrame
    by_head: pd.DataFrame


@dataclass(frozen=True, eq=False)
class ParityChanges(Derived[Changes]):
    """Where the heads of ``paths`` change parity along its axis; ``source`` names the paths by
    content (a sweep's request, a run's checkpoints, the two models of a diff, with their
    names where the axis holds them)."""

    what: ClassVar[str] = "the parity changes"

    source: Hashable
    paths: HeadPaths = field(compare=False)

    @property
    def key(self) -> tuple:
        return ("parity_changes", self.source)

    def compute(self) -> Changes:
        return Changes(motion.parity_changes(self.paths), motion.changes_by_head(self.paths))


@dataclass(frozen=True, eq=False)
class Movement(Derived["pd.DataFrame"]):
    """How far each head of ``paths`` moved from the first point to the last
    (:func:`headforms.analyses.motion.movement`; ``source`` as for :class:`ParityChanges`)."""

    what: ClassVar[str] = "how far each head moved"

    source: Hashable
    paths: HeadPaths = field(compare=False)

    @property
    def key(self) -> tuple:
        return ("movement", self.source)

    def compute(self) -> pd.DataFrame:
        return motion.movement(self.paths)
