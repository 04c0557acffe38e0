"""The spectrum of S against that of A (the author's spectral geometry) on constructed spectra
with known values: a rank-one form's singular value of A is the geometric mean of its two
eigenvalues of S (error 0); gamma samples of known shapes and scales give the known mode and
shape ratios within sampling error; the gamma fits are scipy's ``gamma.fit(floc=0)``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from headforms.analyses import spectral_geometry as sg
from headforms.analyses.spectra import clusters_by_layer
from headforms.errors import HeadformsError
from headforms.forms import lobes


def spectra_of(eig_s: np.ndarray, sigma: np.ndarray) -> dict[str, np.ndarray]:
    """Analysis-style spectra from heads' eigenvalues of S (rows of 2n) and distinct singular
    values of A (rows of n): eig_s decreasing, the lobes, sv_a with each value twice."""
    eig_s = -np.sort(-eig_s, axis=-1)
    lobe_pos, lobe_neg = lobes(eig_s)
    sv_a = -np.sort(-np.repeat(sigma, 2, axis=-1), axis=-1)
    return {"eig_s": eig_s, "lobe_pos": lobe_pos, "lobe_neg": lobe_neg, "sv_a": sv_a}


def test_rank_one_forms_have_no_geometric_mean_error():
    """L = k q^T: S has eigenvalues (|k||q| +- k.q)/2 and A the singular value |k||q| sin t / 2,
    the geometric mean of the two (dense algebra here), padded to a 2n = 8 representation."""
    rng = np.random.default_rng(0)
    eig, sigma = [], []
    for _ in range(20):
        k, q = rng.standard_normal(9), rng.standard_normal(9)
        form = np.outer(k, q)
        values = np.linalg.eigvalsh((form + form.T) / 2)
        singular = np.linalg.svd((form - form.T) / 2, compute_uv=False)
        eig.append(np.concatenate([[values[-1], values[0]], np.zeros(6)]))
        sigma.append(np.concatenate([[singular[0]], np.zeros(3)]))
    geometry = sg.spectral_geometry(spectra_of(np.array(eig), np.array(sigma)))
    np.testing.assert_allclose(geometry["geometric_mean_error"], 0.0, atol=1e-13)
    assert not geometry["interior_modes"].any()  # one value per sample: nothing to fit


def test_gamma_lobes_of_known_shapes_give_the_known_ratios():
    """Lobes ~ Gamma(k+, nu0), Gamma(k-, mu0) and sigma ~ Gamma(kT, tau0) of 4000 values each:
    the fitted modes are (k - 1) * scale and the ratios tau/sqrt(|mu| nu), kT/sqrt(k+ k-)."""
    rng = np.random.default_rng(1)
    n, heads = 4000, 6
    k_pos, k_neg, k_t = 3.0, 2.0, 4.0
    nu0, mu0, tau0 = 1.0, 0.5, 0.3
    pos = rng.gamma(k_pos, nu0, (heads, n))
    neg = rng.gamma(k_neg, mu0, (heads, n))
    sigma = rng.gamma(k_t, tau0, (heads, n))
    geometry = sg.spectral_geometry(spectra_of(np.concatenate([pos, -neg], axis=1), sigma))
    modes = {"nu": (k_pos - 1) * nu0, "mu": -(k_neg - 1) * mu0, "tau": (k_t - 1) * tau0}
    for column, mode in modes.items():
        np.testing.assert_allclose(geometry[column], mode, rtol=0.08, err_msg=column)
    expected_mode_ratio = modes["tau"] / np.sqrt(-modes["mu"] * modes["nu"])
    np.testing.assert_allclose(geometry["mode_ratio"], expected_mode_ratio, rtol=0.1)
    np.testing.assert_allclose(geometry["shape_ratio"], k_t / np.sqrt(k_pos * k_neg), rtol=0.1)
    assert geometry["interior_modes"].all()


def test_the_fits_are_scipys_and_a_shape_below_one_has_no_mode():
    rng = np.random.default_rng(2)
    samples = [rng.gamma(2.5, 1.7, 300), rng.gamma(0.6, 2.0, 300)]
    shape, mode = sg.gamma_shape_mode(np.array(samples))
    for i, sample in enumerate(samples):
        a, _, scale = stats.gamma.fit(sample, floc=0)
        assert shape[i] == pytest.approx(a, rel=1e-5)
        assert (mode[i] == pytest.approx((a - 1) * scale, rel=1e-5)) if a > 1 else np.isnan(mode[i])
    assert np.isnan(mode[1])  # shape 0.6: a decreasing density, no interior mode


def test_heads_without_modes_are_left_out_of_the_ratios_and_counted():
    rng = np.random.default_rng(3)
    n = 500
    pos, neg = rng.gamma(3.0, 1.0, (4, n)), rng.gamma(3.0, 1.0, (4, n))
    sigma = rng.gamma(3.0, 1.0, (4, n))
    sigma[1] = rng.gamma(0.5, 1.0, n)  # head 1: sigma(A) has no interior mode
    geometry = sg.spectral_geometry(spectra_of(np.concatenate([pos, -neg], axis=1), sigma))
    assert geometry["interior_modes"].tolist() == [True, False, True, True]
    assert np.isnan(geometry["mode_ratio"][1])
    summary = sg.geometry_summary({"m": geometry}).iloc[0]
    assert (summary["heads"], summary["heads with modes"]) == (4, 3)
    used = geometry.drop(index=1)
    assert summary["shape_ratio q50"] == pytest.approx(np.median(used["shape_ratio"]))
    assert summary["geometric_mean_error q50"] == pytest.approx(
        np.median(geometry["geometric_mean_error"])
    )


def test_the_correlation_is_pearsons_of_the_sorted_lists():
    rng = np.random.default_rng(4)
    eig = rng.normal(size=(5, 12))
    sigma = rng.gamma(2.0, 1.0, (5, 6))
    spectra = spectra_of(eig, sigma)
    geometry = sg.spectral_geometry(spectra)
    for h in range(5):
        moduli = np.sort(np.abs(eig[h]))[::-1]
        singular = np.sort(np.repeat(sigma[h], 2))[::-1]
        expected = np.corrcoef(moduli, singular)[0, 1]
        assert geometry["sigma_lambda_correlation"][h] == pytest.approx(expected, rel=1e-12)
    del spectra["sv_a"]
    with pytest.raises(HeadformsError, match="singular values of A"):
        sg.spectral_geometry(spectra)


def test_clusters_by_layer_are_each_layers_shares():
    layers = np.array([0, 0, 0, 0, 1, 1, 3])
    labels = np.array([0, 0, 1, 2, 2, 2, 1])
    shares = clusters_by_layer(layers, labels, 3)
    assert shares.index.tolist() == [0, 1, 2, 3]  # every layer, an empty one at 0%
    np.testing.assert_allclose(
        shares.to_numpy(), [[50, 25, 25], [0, 0, 100], [0, 0, 0], [0, 100, 0]]
    )
