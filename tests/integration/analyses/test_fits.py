"""Lobe fits (Fig 6): vectorised MLE against scipy.stats, parameter recovery, family ranking."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from oracle import dense_reference
from scipy import stats

from headforms import analyze
from headforms.analyses import fits
from headforms.errors import HeadformsError
from headforms.figures.fits import fit_errors_figure, fit_head_figure

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
    for family in fits.FAMILIES:  # the average over every head and lobe of that family
        rows = table[table["family"] == family]
        assert errors.loc[family, "both"] == pytest.approx(np.nanmean(rows["error"]))
        for lobe in ("+", "-"):
            expected = np.nanmean(rows.loc[rows["lobe"] == lobe, "error"])
            assert errors.loc[family, lobe] == pytest.approx(expected)
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


def test_observation6_samples_are_the_dense_spectra_of_l_and_a():
    """|eigenvalues of L| (its n non-zero ones) and the n distinct singular values of A, from
    dense eigvals / svd of random heads, rescaled to unit mean."""
    from headforms.forms import head_forms

    rng = np.random.default_rng(5)
    n, dim = 5, 17
    q, k = rng.normal(size=(2, 3, n, dim))
    batch = head_forms(q, k)
    result = fits.fit_observation6({"eig_l_abs": batch.eig_l_abs, "sv_a": batch.sv_a})
    assert set(result) == set(fits.OBSERVATION6)
    for h in range(3):
        dense = dense_reference(q[h], k[h])
        moduli = dense["eig_l_abs"][:n]
        singular = dense["sv_a"][: 2 * n : 2]
        for label, values in (("|λ(L)|", moduli), ("σ(A)", singular)):
            lobe = result[label]
            np.testing.assert_allclose(
                lobe.samples[h][lobe.mask[h]], values / values.mean(), rtol=1e-8
            )


def test_observation6_needs_the_extra_spectra():
    with pytest.raises(HeadformsError, match="ALL_SPECTRA"):
        fits.fit_observation6({"eig_s": np.ones((2, 4))})


def test_pooled_fit_matches_scipy_on_the_pooled_unit_mean_sample(ragged_samples):
    padded, rows = ragged_samples
    result = fits.fit_lobes({"lobe_pos": padded, "lobe_neg": padded})
    pooled = fits.pooled_fits(result)["+"]
    reference = np.concatenate([row / row.mean() for row in rows])
    np.testing.assert_allclose(np.sort(pooled.samples[0][pooled.mask[0]]), np.sort(reference))
    shape, _, scale = stats.gamma.fit(reference, floc=0)
    assert pooled.params["gamma"][0][0] == pytest.approx(shape, rel=1e-4)
    assert pooled.params["gamma"][1][0] == pytest.approx(scale, rel=1e-4)


def test_observation6_tables_and_figures_on_a_model():
    from headforms.columns import ALL_SPECTRA
    from headforms.figures.fits import fit_error_vs_size_figure, sample_fits_figure

    res = analyze("minilm-l6", spectra=ALL_SPECTRA)
    result = fits.fit_observation6(res.spectra)
    errors = fits.mean_errors(fits.fit_table(res.heads, result))
    assert list(errors.columns) == [*fits.OBSERVATION6, "both"]
    for label in fits.OBSERVATION6:
        assert errors[label]["gamma"] == pytest.approx(np.nanmean(result[label].errors["gamma"]))
    fig = sample_fits_figure(
        fits.head_histograms(result, 3), fits.head_fit_curves(result, 3), "minilm L0H3"
    )
    assert [a.text for a in fig.layout.annotations][:2] == [
        "|eigenvalues of L|",
        "singular values of A",
    ]
    legend = [t.name for t in fig.data if t.showlegend is not False and t.type == "scatter"]
    assert len(legend) == len(fits.FAMILIES)
    for family in fits.FAMILIES:
        shown = [n for n in legend if n.startswith(family)][0]
        for label in fits.OBSERVATION6:
            assert f"{result[label].errors[family][3]:.3f}" in shown
    size = fit_error_vs_size_figure(
        {"minilm-l6": (res.card.n_parameters, errors), "sharded": (None, errors)}
    )
    assert size.layout.xaxis.type == "log"
    assert {x for t in size.data for x in t.x} == {res.card.n_parameters}
    assert "not placed" in size.layout.title.text and "sharded" in size.layout.title.text
    for figure in (fig, size, fit_errors_figure(errors, "minilm-l6", "|λ(L)| and σ(A)")):
        assert figure.layout.title.text
        assert figure.layout.xaxis.title.text and figure.layout.yaxis.title.text
