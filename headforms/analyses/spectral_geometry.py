"""The spectrum of S against that of A, head by head, as the author's
``scripts/spectral_geometry.py`` defines it (its docstring ties it to Observations 7-9 of a
later version of the paper; the version at hand lists six observations).

Per head, three positive samples: the positive lobe ``lambda_+`` and the absolute negative lobe
``|lambda_-|`` of S (their non-zero values), and ``sigma``, the n distinct singular values of A
(the positive imaginary parts of A's eigenvalues ``+-i sigma``: each singular value once). A
gamma law is fitted to each by maximum likelihood with the origin held at zero (scipy's
``gamma.fit(sample, floc=0)``, vectorised over heads in :func:`headforms.analyses.fits.fit_family`):
shapes ``k_+, k_-, k_T``, modes ``nu = (k_+ - 1) s_+``, ``|mu| = (k_- - 1) s_-`` and ``tau = (k_T -
1) s_T``, defined only when the shape exceeds 1 (a smaller shape has no interior mode). Then:

- ``mode_ratio = tau / sqrt(|mu| nu)``, ``shape_ratio = k_T / sqrt(k_+ k_-)``; heads where any of
  the three shapes is at most 1 have no mode ratio and are left out of both comparisons (and
  counted: :func:`geometry_summary`);
- ``sigma_lambda_correlation``: the Pearson correlation of the 2n singular values of A (each
  twice) with the 2n moduli ``|lambda(S)|``, both sorted decreasing, over every head;
- ``geometric_mean_error = ||sigma - sqrt(lambda_+ lambda_-)|| / ||sigma||``: the n distinct
  singular values against the geometric means of the two lobes, index by index, all sorted
  decreasing (lobes zero-padded to n). It is 0 exactly for a rank-one form, whose one singular
  value of A is the geometric mean of the two eigenvalues of S.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..errors import HeadformsError
from .fits import MIN_SAMPLE, fit_family

SAMPLES = ("+", "-", "T")
"""The three samples: positive lobe, |negative lobe|, distinct singular values of A."""

QUANTILES = (0.1, 0.5, 0.9)
"""Quantiles of the per-model summary (the author reports the median and the middle 80%)."""


def gamma_shape_mode(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the shape ``k`` and mode ``(k - 1) scale`` of a gamma fitted to the row's
    positive entries with location 0; the mode is NaN for ``k <= 1`` (no interior mode) and
    both are NaN for fewer than :data:`~headforms.analyses.fits.MIN_SAMPLE` positive values."""
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    mask = values > 0
    shape, scale = fit_family(np.where(mask, values, 0.0), mask, "gamma")
    enough = mask.sum(axis=-1) >= MIN_SAMPLE
    shape = np.where(enough, shape, np.nan)
    with np.errstate(invalid="ignore"):
        mode = np.where(shape > 1.0, (shape - 1.0) * scale, np.nan)
    return shape, mode


def spectral_geometry(spectra: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Per head (rows of an analysis's ``spectra``, which must hold ``sv_a``): the fitted
    shapes and modes, the mode and shape ratios, whether all three modes exist, the correlation
    of sigma(A) with |lambda(S)| and the geometric-mean error (module doc)."""
    if "sv_a" not in spectra:
        raise HeadformsError(
            "the spectral geometry needs the singular values of A: analyse the model with "
            "spectra=('sv_a',)"
        )
    lobe_pos = np.asarray(spectra["lobe_pos"], dtype=np.float64)
    lobe_neg = np.asarray(spectra["lobe_neg"], dtype=np.float64)
    sv_a = np.asarray(spectra["sv_a"], dtype=np.float64)
    eig_s = np.asarray(spectra["eig_s"], dtype=np.float64)
    n = sv_a.shape[-1] // 2
    sigma = -np.sort(-sv_a, axis=-1)[:, ::2]  # each singular value of A once, decreasing
    k_pos, nu = gamma_shape_mode(lobe_pos)
    k_neg, mode_neg = gamma_shape_mode(lobe_neg)
    k_t, tau = gamma_shape_mode(sigma)
    moduli = -np.sort(-np.abs(eig_s), axis=-1)
    singular = -np.sort(-sv_a, axis=-1)
    geometric = np.sqrt(lobe_pos[:, :n] * lobe_neg[:, :n])
    with np.errstate(invalid="ignore", divide="ignore"):
        mode_ratio = tau / np.sqrt(mode_neg * nu)
        shape_ratio = k_t / np.sqrt(k_pos * k_neg)
        error = np.linalg.norm(sigma - geometric, axis=-1) / np.linalg.norm(sigma, axis=-1)
    return pd.DataFrame(
        {
            "k_plus": k_pos,
            "k_minus": k_neg,
            "k_T": k_t,
            "nu": nu,
            "mu": -mode_neg,
            "tau": tau,
            "interior_modes": np.isfinite(mode_ratio),
            "mode_ratio": mode_ratio,
            "shape_ratio": shape_ratio,
            "sigma_lambda_correlation": _row_correlations(singular, moduli),
            "geometric_mean_error": error,
        }
    )


def _row_correlations(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of ``first`` with the same row of ``second`` (NaN where
    either row is constant)."""
    a = first - first.mean(axis=-1, keepdims=True)
    b = second - second.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(a * b, axis=-1) / np.sqrt(np.sum(a**2, axis=-1) * np.sum(b**2, axis=-1))


def geometry_summary(models: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per model (``name -> spectral_geometry`` frame): heads, heads with all three modes (the
    mode and shape ratios are summarised over those), and the 10%, 50% and 90% quantiles of
    each ratio, of the correlation and of the geometric-mean error (over every head)."""
    rows = []
    for name, frame in models.items():
        used = frame[frame["interior_modes"]]
        row: dict[str, object] = {
            "model": name,
            "heads": len(frame),
            "heads with modes": len(used),
        }
        for column, part in (
            ("mode_ratio", used),
            ("shape_ratio", used),
            ("sigma_lambda_correlation", frame),
            ("geometric_mean_error", frame),
        ):
            values = part[column].to_numpy(dtype=float)
            values = values[np.isfinite(values)]
            for q in QUANTILES:
                row[f"{column} q{round(100 * q)}"] = (
                    float(np.quantile(values, q)) if values.size else np.nan
                )
        rows.append(row)
    return pd.DataFrame(rows)
