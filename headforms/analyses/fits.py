"""Distribution fits of the spectral lobes (Fig 6, Observation 3) and of the moduli of the
eigenvalues of L and the singular values of A (Observation 6): gamma, exponential, log-normal,
Weibull.

Each head's lobes ``lambda_+`` and ``lambda_-`` (the non-zero values only) are rescaled to unit
mean and fitted by maximum likelihood with location 0 (scipy.stats conventions, ``floc=0``).
The fit error is the paper's: the root mean square difference between the heights of a 20-bin
density histogram of the unit-mean sample (bins spanning its minimum to maximum) and the
fitted density at the bin centres.

Fits are vectorised over heads (no per-head scipy call): exponential and log-normal MLEs are
closed forms; gamma and Weibull shapes solve their 1-D likelihood equations by Newton
iterations on all heads at once (``scipy.stats.<dist>.fit`` is the reference in the tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special, stats

from ..errors import HeadformsError

FAMILIES = ("gamma", "exponential", "lognormal", "weibull")
"""Fitted families; each is a scipy.stats distribution with location 0 (see :data:`SCIPY`)."""

SCIPY = {
    "gamma": stats.gamma,
    "exponential": stats.expon,
    "lognormal": stats.lognorm,
    "weibull": stats.weibull_min,
}
"""scipy.stats distribution of each family: shape = its first shape argument, then ``scale``."""

LOBES = {"+": "lobe_pos", "-": "lobe_neg"}
"""Lobe label -> key of the analysis spectra (lambda_+ and |lambda_-|)."""

OBSERVATION6 = {"|λ(L)|": ("eig_l_abs", 1), "σ(A)": ("sv_a", 2)}
"""Observation 6 sample label -> (key of the analysis spectra, step): the n moduli of the
eigenvalues of L, and the n distinct singular values of A (``sv_a`` lists each twice, sorted
decreasing, so every second entry is kept)."""

N_BINS = 20
"""Histogram bins of the fit error (the paper's 20)."""

MIN_SAMPLE = 3
"""Lobes with fewer non-zero values than this are not fitted (error NaN)."""

_NEWTON_STEPS = 60


def unit_mean_samples(lobe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows rescaled to unit mean over their non-zero entries, and the mask of those entries."""
    lobe = np.atleast_2d(np.asarray(lobe, dtype=np.float64))
    mask = lobe > 0
    count = mask.sum(axis=-1, keepdims=True)
    total = np.where(mask, lobe, 0.0).sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        samples = np.where(mask, lobe * count / total, 0.0)
    return samples, mask


def _masked_mean(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(mask, values, 0.0).sum(axis=-1) / mask.sum(axis=-1)


def _gamma_shape(s: np.ndarray) -> np.ndarray:
    """Gamma MLE shape: solve ``log k - digamma(k) = s`` (s > 0) by Newton from Minka's start."""
    k = (3.0 - s + np.sqrt((s - 3.0) ** 2 + 24.0 * s)) / (12.0 * s)
    for _ in range(_NEWTON_STEPS):
        f = np.log(k) - special.digamma(k) - s
        df = 1.0 / k - special.polygamma(1, k)
        k = np.maximum(k - f / df, k / 2.0)
    return k


def _weibull_shape(logx: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Solve the Weibull MLE equation ``sum x^c log x / sum x^c - 1/c = mean log x`` by Newton."""
    mean_log = _masked_mean(logx, mask)
    std_log = np.sqrt(_masked_mean((logx - mean_log[:, None]) ** 2, mask))
    c = np.pi / (np.sqrt(6.0) * std_log)  # moments of log x (a Gumbel law): a close start
    top = np.where(mask, logx, -np.inf).max(axis=-1, keepdims=True)
    centred = np.where(mask, logx - top, 0.0)
    for _ in range(_NEWTON_STEPS):
        w = np.where(mask, np.exp(c[:, None] * centred), 0.0)
        b = w.sum(axis=-1)
        a = (w * logx).sum(axis=-1) / b
        second = (w * logx**2).sum(axis=-1) / b
        g = a - 1.0 / c - mean_log
        dg = second - a**2 + 1.0 / c**2
        c = np.maximum(c - g / dg, c / 2.0)
    return c


def fit_family(samples: np.ndarray, mask: np.ndarray, family: str) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood ``(shape, scale)`` per row (location 0); shape is NaN for exponential.

    Shapes follow scipy.stats: gamma ``a``, log-normal ``s`` (scale ``exp(mu)``), Weibull ``c``.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        logx = np.where(mask, np.log(np.where(mask, samples, 1.0)), 0.0)
        mean = _masked_mean(samples, mask)
        mean_log = _masked_mean(logx, mask)
        if family == "exponential":
            return np.full_like(mean, np.nan), mean
        if family == "lognormal":
            sigma = np.sqrt(_masked_mean((logx - mean_log[:, None]) ** 2, mask))
            return sigma, np.exp(mean_log)
        if family == "gamma":
            shape = _gamma_shape(np.log(mean) - mean_log)
            return shape, mean / shape
        if family == "weibull":
            shape = _weibull_shape(logx, mask)
            top = np.where(mask, logx, -np.inf).max(axis=-1)
            w = np.where(mask, np.exp(shape[:, None] * (logx - top[:, None])), 0.0)
            return shape, np.exp(top + np.log(_masked_mean(w, mask)) / shape)
    raise HeadformsError(f"unknown distribution family {family!r}; choose from {FAMILIES}")


def family_pdf(family: str, x: np.ndarray, shape: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Density of a fitted family at ``x`` (broadcasting ``shape``/``scale`` against ``x``)."""
    dist = SCIPY[family]
    if family == "exponential":
        return dist.pdf(x, scale=scale)
    return dist.pdf(x, shape, scale=scale)


def density_histograms(
    samples: np.ndarray, mask: np.ndarray, bins: int = N_BINS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-row density histograms over ``[min, max]`` of the masked values (as ``np.histogram``).

    Returns ``(centres, heights, width)`` with shapes (rows, bins), (rows, bins), (rows,).
    """
    low = np.where(mask, samples, np.inf).min(axis=-1)
    high = np.where(mask, samples, -np.inf).max(axis=-1)
    width = (high - low) / bins
    with np.errstate(invalid="ignore", divide="ignore"):
        position = (samples - low[:, None]) / width[:, None]
    index = np.clip(np.nan_to_num(position, nan=0.0, posinf=0.0, neginf=0.0), 0, bins - 1)
    index = index.astype(np.int64)
    rows = np.broadcast_to(np.arange(samples.shape[0])[:, None], samples.shape)
    flat = (rows * bins + index)[mask]
    counts = np.bincount(flat, minlength=samples.shape[0] * bins).reshape(-1, bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        heights = counts / (mask.sum(axis=-1) * width)[:, None]
    centres = low[:, None] + (np.arange(bins) + 0.5) * width[:, None]
    return centres, heights, width


@dataclass(frozen=True)
class LobeFits:
    """Fits of one lobe over all heads: unit-mean samples, their histograms, params and errors.

    ``params[family] = (shape, scale)`` and ``errors[family]`` are arrays over heads; heads whose
    lobe has fewer than :data:`MIN_SAMPLE` non-zero values have NaN errors.
    """

    lobe: str
    samples: np.ndarray
    mask: np.ndarray
    centres: np.ndarray
    heights: np.ndarray
    width: np.ndarray
    params: dict[str, tuple[np.ndarray, np.ndarray]]
    errors: dict[str, np.ndarray]


def fit_lobe(
    lobe_values: np.ndarray, lobe: str = "+", families: Sequence[str] = FAMILIES
) -> LobeFits:
    """Fit every family to one lobe of every head (rows of ``lobe_values``, 0-padded)."""
    samples, mask = unit_mean_samples(lobe_values)
    centres, heights, width = density_histograms(samples, mask)
    valid = (mask.sum(axis=-1) >= MIN_SAMPLE) & (width > 0)
    params: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    errors: dict[str, np.ndarray] = {}
    for family in families:
        shape, scale = fit_family(samples, mask, family)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            fitted = family_pdf(family, centres, shape[:, None], scale[:, None])
            error = np.sqrt(np.mean((heights - fitted) ** 2, axis=-1))
        params[family] = (shape, scale)
        errors[family] = np.where(valid, error, np.nan)
    return LobeFits(lobe, samples, mask, centres, heights, width, params, errors)


def fit_lobes(
    spectra: dict[str, np.ndarray], families: Sequence[str] = FAMILIES
) -> dict[str, LobeFits]:
    """Fit both lobes of every head of an analysis (``ModelAnalysis.spectra``): '+' and '-'."""
    return {label: fit_lobe(spectra[key], label, families) for label, key in LOBES.items()}


def fit_observation6(
    spectra: dict[str, np.ndarray], families: Sequence[str] = FAMILIES
) -> dict[str, LobeFits]:
    """Fit every family to each head's |eigenvalues of L| and singular values of A
    (:data:`OBSERVATION6`), those of them the analysis has (a weights analysis needs
    ``spectra=columns.ALL_SPECTRA``; the author's published spectra have no eigenvalues of L)."""
    present = {label: kind for label, kind in OBSERVATION6.items() if kind[0] in spectra}
    if not present:
        raise HeadformsError(
            "this analysis has neither eig_l_abs nor sv_a spectra: analyse it with "
            "spectra=columns.ALL_SPECTRA"
        )
    return {
        label: fit_lobe(spectra[key][:, ::step], label, families)
        for label, (key, step) in present.items()
    }


def pooled_fits(
    fits: dict[str, LobeFits], families: Sequence[str] = FAMILIES
) -> dict[str, LobeFits]:
    """Each sample's unit-mean values pooled over all heads (one row), and its fits."""
    return {
        label: fit_lobe(lobe.samples[lobe.mask][None, :], label, families)
        for label, lobe in fits.items()
    }


def fit_table(heads: pd.DataFrame, fits: dict[str, LobeFits]) -> pd.DataFrame:
    """Tidy table: one row per head, lobe and family with layer, head, shape, scale, error."""
    frames = []
    for label, lobe in fits.items():
        for family, (shape, scale) in lobe.params.items():
            frames.append(
                pd.DataFrame(
                    {
                        "layer": heads["layer"].to_numpy(),
                        "head": heads["head"].to_numpy(),
                        "lobe": label,
                        "family": family,
                        "shape": shape,
                        "scale": scale,
                        "error": lobe.errors[family],
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def mean_errors(table: pd.DataFrame) -> pd.DataFrame:
    """Average fit error per family over heads: one column per sample label (lobes '+', '-') in
    the table's order, and 'both' (all samples), sorted best first."""
    by_lobe = table.pivot_table(index="family", columns="lobe", values="error", aggfunc="mean")
    by_lobe = by_lobe[list(dict.fromkeys(table["lobe"]))]
    by_lobe["both"] = table.groupby("family")["error"].mean()
    by_lobe.columns.name = None
    return by_lobe.sort_values("both")


def head_fit_curves(fits: dict[str, LobeFits], row: int, n_points: int = 200) -> pd.DataFrame:
    """Fitted densities of one head on a grid over its sample range: lobe, family, x, density."""
    frames = []
    for label, lobe in fits.items():
        values = lobe.samples[row][lobe.mask[row]]
        if values.size < MIN_SAMPLE:
            continue
        grid = np.linspace(max(values.min() * 0.5, 1e-6), values.max() * 1.05, n_points)
        for family, (shape, scale) in lobe.params.items():
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                density = family_pdf(family, grid, shape[row], scale[row])
            frames.append(
                pd.DataFrame(
                    {
                        "lobe": label,
                        "family": family,
                        "x": grid,
                        "density": density,
                        "error": lobe.errors[family][row],
                    }
                )
            )
    if not frames:
        raise HeadformsError("this head's lobes have too few non-zero eigenvalues to fit")
    return pd.concat(frames, ignore_index=True)


def head_histograms(fits: dict[str, LobeFits], row: int) -> pd.DataFrame:
    """The 20-bin density histograms of one head's unit-mean lobes: lobe, centre, height, width."""
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "lobe": label,
                    "centre": lobe.centres[row],
                    "height": lobe.heights[row],
                    "width": lobe.width[row],
                }
            )
            for label, lobe in fits.items()
        ],
        ignore_index=True,
    )
