"""Theorem 5 (Fig 10): profiles of symmetric spectra sampled from two gamma lobes.

Reading of the Fig 10 caption ("spectra sampled from 1/2 (gamma_{mu,k} + gamma_{nu,k}) with
mu = -1/2, nu = 1, k = 2, for n = 64 and n = 1024 eigenvalues per side"): gamma_{s,k} is the
gamma law of shape k and scale |s| placed on the side of 0 given by the sign of s. So a sample
has n positive eigenvalues ``lambda_+ ~ Gamma(k, scale nu)`` and n negative ones whose absolute
values are ``lambda_- ~ Gamma(k, scale |mu|)``, all independent; A = 0 (a symmetric form).
Sorted, the lobes' quantiles are proportional with ratio ``r = |mu| / nu``, so as n grows the
profile tends to ``b = 2r / (1 + r^2)``, ``c = (1 - r)^2 / (1 + r^2)``, ``d = 0`` (docs/MATH.md,
fact 3; r = 1/2 gives the caption's limit point b = 0.8). With ``|mu| > nu`` the roles of c and d
swap (r = nu / |mu|). The caption's 100 spectra are the repetitions.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..columns import PROFILE
from ..errors import HeadformsError
from ..forms import profile_from_lobes, proportional_profile

PAPER_PARAMETERS = {"mu": -0.5, "nu": 1.0, "k": 2.0, "sizes": (64, 1024), "repetitions": 100}
"""The values of the paper's Fig 10."""

SEED = 5
"""Default seed: the same parameters always draw the same spectra."""

MAX_EIGENVALUES = 200_000
"""Upper bound on n * repetitions per size (keeps a page responsive)."""

MAX_REPETITIONS = 2_000
"""Upper bound on the spectra sampled per n (the paper samples 100): the profiles returned, and
so the memory a sampling keeps, stay small whatever n."""


def check_sample_size(sizes: Iterable[int], repetitions: int) -> None:
    """A one-line :class:`HeadformsError` unless ``repetitions`` is at most
    :data:`MAX_REPETITIONS` and every ``n * repetitions`` at most :data:`MAX_EIGENVALUES`
    (check before starting a sampling)."""
    if repetitions > MAX_REPETITIONS:
        raise HeadformsError(
            f"{repetitions} spectra per n is more than {MAX_REPETITIONS}; lower it"
        )
    largest = max((int(n) for n in sizes), default=0)
    if largest * repetitions > MAX_EIGENVALUES:
        raise HeadformsError(
            f"n x repetitions = {largest * repetitions} exceeds {MAX_EIGENVALUES}; lower one of "
            "them"
        )


def _check(mu: float, nu: float, k: float) -> None:
    if not (mu < 0 < nu):
        raise HeadformsError(f"need mu < 0 < nu (negative and positive lobe), got mu={mu}, nu={nu}")
    if not k > 0:
        raise HeadformsError(f"the gamma shape k must be positive, got {k}")


def limit_profile(mu: float, nu: float) -> tuple[float, float, float, float]:
    """The Theorem 5 limit ``(a, b, c, d)`` of proportional lobes with ratio ``rho = |mu| / nu``
    (:func:`headforms.forms.proportional_profile`; A = 0, so ``a = 0``)."""
    _check(mu, nu, 1.0)
    b, c, d = proportional_profile(abs(mu) / nu)
    return (0.0, float(b), float(c), float(d))


def limit_edge(limit: tuple[float, float, float, float]) -> tuple[str, str]:
    """``(vertex, zero)`` of the edge the limit profile lies on, where Fig 10 draws its points:
    ``("c", "d")`` for {d = 0} from vertex c = 1 to vertex b = 1 (|mu| <= nu), else
    ``("d", "c")`` for {c = 0}."""
    return ("c", "d") if limit[2] >= limit[3] else ("d", "c")


def sample_profiles(
    mu: float,
    nu: float,
    k: float,
    n: int,
    repetitions: int = 100,
    seed: int = SEED,
) -> pd.DataFrame:
    """Profiles of ``repetitions`` spectra, n eigenvalues per side: columns rep, n, a, b, c, d."""
    _check(mu, nu, k)
    if n < 1 or repetitions < 1:
        raise HeadformsError(f"need n >= 1 and repetitions >= 1, got n={n}, {repetitions}")
    check_sample_size([n], repetitions)
    rng = np.random.default_rng([seed, n])
    lobe_pos = -np.sort(-rng.gamma(k, nu, size=(repetitions, n)), axis=-1)
    lobe_neg = -np.sort(-rng.gamma(k, abs(mu), size=(repetitions, n)), axis=-1)
    norm_s2 = np.sum(lobe_pos**2, axis=-1) + np.sum(lobe_neg**2, axis=-1)
    a, b, c, d = profile_from_lobes(lobe_pos, lobe_neg, np.zeros(repetitions), norm_s2)
    return pd.DataFrame({"rep": np.arange(repetitions), "n": n, "a": a, "b": b, "c": c, "d": d})


def sample_profiles_for_sizes(
    mu: float, nu: float, k: float, sizes: Iterable[int], repetitions: int = 100, seed: int = SEED
) -> pd.DataFrame:
    """:func:`sample_profiles` for each n in ``sizes``, stacked, with ``distance`` to the limit.

    ``distance`` is the Euclidean distance in the simplex between the sampled profile and
    :func:`limit_profile`.
    """
    limit = np.array(limit_profile(mu, nu))
    frame = pd.concat(
        [sample_profiles(mu, nu, k, int(n), repetitions, seed) for n in sizes], ignore_index=True
    )
    frame["distance"] = np.linalg.norm(frame[list(PROFILE)].to_numpy() - limit, axis=-1)
    return frame


def convergence_table(samples: pd.DataFrame) -> pd.DataFrame:
    """Per n: mean and standard deviation of b, and mean distance to the limit profile."""
    table = samples.groupby("n").agg(
        mean_b=("b", "mean"), std_b=("b", "std"), mean_distance=("distance", "mean")
    )
    return table.reset_index()
