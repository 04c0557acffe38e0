"""Lobe fits (Fig 6): vectorised MLE against scipy.stats, parameter recovery, family ranking."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from headforms import analyze
from headforms.analyses import fits
from headforms.errors import HeadformsError
from headforms.figures.paper import fit_errors_figure, fit_head_figure

GENERATORS = {
    "gamma": lambda rng, n: rng.gamma(3.0, 2.0, n),
    "weibull": lambda rng, n: 5.0 * rng.weibull(1.6, n),
    "lognormal": lambda rng, n: rng.lognormal(0.3, 0.5, n),
}


def _padded(rows: list[np.ndarray]) -> np.ndarray:
    """Zero-padded, decreasing rows of different lengths (like an analysis' lobes)."""
    width = max(len(r) for r in rows) + 5
    out = np.zeros((len(rows), width))
    for i, r in enumerate(rows):
        out[i, : len(r)] = np.sort(r)[::-1]
    return out


@pytest.fixture(scope="module")
def ragged_samples() -> tuple[np.ndarray, list[np.ndarray]]:
    """Ragged gamma, Weibull and log-normal samples of sizes 40..300, zero-padded."""
    rng = np.random.default_rng(7)
    rows = []
    for i, make in enumerate(GENERATORS.values()):
        for n in (40, 120, 300):
            rows.append(make(rng, n + i))
    return _padded(rows), rows


@pytest.mark.parametrize("family", fits.FAMILIES)
def test_vectorised_mle_matches_scipy(family, ragged_samples):
    padded, rows = ragged_samples
    samples, mask = fits.unit_mean_samples(padded)
    shape, scale = fits.fit_family(samples, mask, family)
    dist = fits.SCIPY[family]
    for i, row in enumerate(rows):
        x = row / row.mean()
        reference = dist.fit(x, floc=0)
        assert scale[i] == pytest.approx(reference[-1], rel=1e-4)
        if family != "exponential":
            assert shape[i] == pytest.approx(reference[0], rel=1e-4)
            ours = dist.logpdf(x, shape[i], scale=scale[i]).sum()
            theirs = dist.logpdf(x, *reference).sum()
            assert ours >= theirs - 1e-8  # ours is at least as good a maximum


def test_recovers_known_shapes():
    rng = np.random.default_rng(0)
    gamma = np.stack([rng.gamma(2.5, 3.0, 20000) for _ in range(3)])
    weibull = np.stack([7.0 * rng.weibull(1.8, 20000) for _ in range(3)])
    samples, mask = fits.unit_mean_samples(gamma)
    shape, scale = fits.fit_family(samples, mask, "gamma")
    np.testing.assert_allclose(shape, 2.5, rtol=0.04)
    np.testing.assert_allclose(shape * scale, 1.0, rtol=1e-12)  # unit mean is k * theta
    samples, mask = fits.unit_mean_samples(weibull)
    shape, _ = fits.fit_family(samples, mask, "weibull")
    np.testing.assert_allclose(shape, 1.8, rtol=0.04)


@pytest.mark.parametrize("truth", list(GENERATORS))
def test_true_family_fits_best(truth):
    rng = np.random.default_rng(11)
    lobes = np.stack([GENERATORS[truth](rng, 4000) for _ in range(4)])
    errors = fits.fit_lobe(lobes).errors
    table = np.column_stack([errors[f] for f in fits.FAMILIES])
    best = [fits.FAMILIES[i] for i in np.argmin(table, axis=1)]
    assert best == [truth] * 4


def test_exponential_data_fit_by_its_nested_families():
    rng = np.random.default_rng(3)
    errors = fits.fit_lobe(rng.exponential(2.0, (3, 5000))).errors
    # gamma (k=1) and Weibull (c=1) contain the exponential: all three close; log-normal not.
    for family in ("gamma", "weibull"):
        np.testing.assert_allclose(errors[family], errors["exponential"], rtol=0.5)
    assert np.all(errors["lognormal"] > 3 * errors["exponential"])


def test_histograms_match_numpy(ragged_samples):
    padded, _ = ragged_samples
    samples, mask = fits.unit_mean_samples(padded)
    centres, heights, width = fits.density_histograms(samples, mask)
    for i in range(len(padded)):
        values = samples[i][mask[i]]
        ref, edges = np.histogram(values, bins=fits.N_BINS, density=True)
        np.testing.assert_allclose(heights[i], ref, rtol=1e-10)
        np.testing.assert_allclose(centres[i], (edges[1:] + edges[:-1]) / 2, rtol=1e-12)
        assert width[i] == pytest.approx(edges[1] - edges[0])


def test_error_is_rms_against_fitted_density(ragged_samples):
    padded, rows = ragged_samples
    result = fits.fit_lobe(padded)
    x = rows[4] / rows[4].mean()
    heights, edges = np.histogram(x, bins=20, density=True)
    params = stats.gamma.fit(x, floc=0)
    expected = np.sqrt(
        np.mean((heights - stats.gamma.pdf((edges[1:] + edges[:-1]) / 2, *params)) ** 2)
    )
    assert result.errors["gamma"][4] == pytest.approx(expected, rel=1e-4)


def test_too_small_lobes_have_no_error():
    lobes = np.array([[3.0, 1.0, 0.0, 0.0], [2.0, 2.0, 2.0, 2.0], [4.0, 3.0, 1.0, 0.5]])
    errors = fits.fit_lobe(lobes).errors["gamma"]
    assert np.isnan(errors[0]) and np.isnan(errors[1]) and np.isfinite(errors[2])


def test_unknown_family_is_a_clear_error():
    samples, mask = fits.unit_mean_samples(np.ones((1, 4)))
    with pytest.raises(HeadformsError, match="unknown distribution family"):
        fits.fit_family(samples, mask, "cauchy")


def test_tables_and_figures(ragged_samples):
    padded, _ = ragged_samples
    spectra = {"lobe_pos": padded, "lobe_neg": padded[::-1]}
    heads = pd.DataFrame({"layer": np.arange(len(padded)) // 3, "head": np.arange(len(padded)) % 3})
    result = fits.fit_lobes(spectra)
    table = fits.fit_table(heads, result)
    assert len(table) == len(padded) * 2 * len(fits.FAMILIES)
    errors = fits.mean_errors(table)
    assert set(errors.columns) == {"+", "-", "both"}
    assert errors["both"].is_monotonic_increasing
    assert errors.index[-1] == "exponential"
    curves = fits.head_fit_curves(result, 2)
    hist = fits.head_histograms(result, 2)
    assert set(curves["family"]) == set(fits.FAMILIES) and len(hist) == 2 * fits.N_BINS
    for fig in (fit_head_figure(hist, curves, "L0H2"), fit_errors_figure(errors, "synthetic")):
        assert fig.layout.title.text
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_real_model_lobes_are_all_fitted():
    res = analyze("minilm-l6")
    result = fits.fit_lobes(res.spectra)
    for lobe in result.values():
        for family in fits.FAMILIES:
            assert np.isfinite(lobe.errors[family]).all()
        shape, scale = lobe.params["gamma"]
        assert (shape > 0).all() and np.allclose(shape * scale, 1.0)
    errors = fits.mean_errors(fits.fit_table(res.heads, result))
    assert errors.index[-1] == "exponential"  # lobes are peaked: k > 1, far from exponential
