"""Facts 1-5 of docs/MATH.md as property tests; the low-rank path against dense algebra."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import dense_profile, dense_reference, forms_from_gram, wishart_gram

from headforms.forms import gram_matrices, head_forms, parity_labels

SCALARS = ("a", "b", "c", "d", "b_sym", "c_sym", "d_sym", "energy", "pairing")

shapes = st.tuples(st.integers(1, 6), st.integers(2, 40)).filter(lambda s: 2 * s[0] <= s[1])
seeds = st.integers(0, 2**32 - 1)


def _random_head(seed: int, n: int, N: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, N)), rng.standard_normal((n, N))


def _single(q: np.ndarray, k: np.ndarray) -> dict[str, float]:
    metrics = head_forms(q[None], k[None]).metrics()
    return {name: metrics[name][0] for name in metrics}


@settings(max_examples=60, deadline=None)
@given(shape=shapes, seed=seeds)
def test_low_rank_matches_dense(shape: tuple[int, int], seed: int) -> None:
    n, N = shape
    q, k = _random_head(seed, n, N)
    batch = head_forms(q[None], k[None])
    dense = dense_reference(q, k)
    scale = np.abs(dense["eig_s"]).max()
    nonzero = np.concatenate([dense["eig_s"][:n], dense["eig_s"][N - n :]])
    np.testing.assert_allclose(batch.eig_s[0], np.sort(nonzero)[::-1], atol=1e-10 * scale)
    np.testing.assert_allclose(batch.sv_a[0], dense["sv_a"][: 2 * n], atol=1e-10 * scale)
    np.testing.assert_allclose(batch.norm_s2[0], dense["norm_s2"], rtol=1e-10)
    np.testing.assert_allclose(batch.norm_a2[0], dense["norm_a2"], rtol=1e-9, atol=1e-12 * scale**2)
    eig_l = dense["eig_l_abs"][:n]
    np.testing.assert_allclose(batch.eig_l_abs[0], eig_l, atol=1e-9 * np.abs(eig_l).max())
    metrics, reference = _single(q, k), dense_profile(dense["L"])
    for name in ("a", "b", "c", "d", "energy", "pairing", "n_pos", "n_neg"):
        np.testing.assert_allclose(metrics[name], reference[name], atol=1e-9, err_msg=name)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, seed=seeds)
def test_profile_sums_to_one(shape: tuple[int, int], seed: int) -> None:
    m = _single(*_random_head(seed, *shape))
    assert abs(m["a"] + m["b"] + m["c"] + m["d"] - 1) < 1e-12
    assert abs(m["b_sym"] + m["c_sym"] + m["d_sym"] - 1) < 1e-12
    assert min(m["a"], m["b"], m["c"], m["d"]) >= -1e-15


@settings(max_examples=60, deadline=None)
@given(N=st.integers(2, 50), seed=seeds)
def test_fact1_rank_one_forms_land_on_theta(N: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    k, q = rng.standard_normal(N), rng.standard_normal(N)
    m = _single(q[None], k[None])
    cos2 = (k @ q) ** 2 / ((k @ k) * (q @ q))
    assert abs(m["a"] - (1 - cos2) / 2) < 1e-10
    assert abs(m["b"] - (1 - cos2) / 2) < 1e-10
    assert m["c"] * m["d"] < 1e-12


@settings(max_examples=40, deadline=None)
@given(shape=shapes, seed=seeds)
def test_fact2_balance(shape: tuple[int, int], seed: int) -> None:
    n, N = shape
    m = _single(*_random_head(seed, n, N))
    assert (m["n_pos"], m["n_neg"], m["n_zero"]) == (n, n, N - 2 * n)


@settings(max_examples=60, deadline=None)
@given(r=st.floats(0.01, 0.99), m=st.integers(1, 8), seed=seeds)
def test_fact3_proportional_lobes(r: float, m: int, seed: int) -> None:
    """A symmetric form with lambda_- = r lambda_+ and A = 0 has the Theorem 5 profile."""
    rng = np.random.default_rng(seed)
    N = 2 * m + 3
    lam = rng.uniform(0.5, 2.0, m)
    basis, _ = np.linalg.qr(rng.standard_normal((N, N)))
    diag = np.zeros(N)
    diag[:m], diag[m : 2 * m] = lam, -r * lam
    form = basis @ np.diag(diag) @ basis.T
    # factor the symmetric form as K^T Q with n = 2m: K = Q D
    k = (basis[:, : 2 * m] * np.sqrt(np.abs(diag[: 2 * m]))).T
    q = k * np.sign(diag[: 2 * m])[:, None]
    np.testing.assert_allclose(k.T @ q, form, atol=1e-12)
    got = _single(q, k)
    assert abs(got["a"]) < 1e-12
    assert abs(got["b"] - 2 * r / (1 + r * r)) < 1e-10
    assert abs(got["c"] - (1 - r) ** 2 / (1 + r * r)) < 1e-10
    assert abs(got["d"]) < 1e-12


def test_fact4_random_baseline_energy() -> None:
    rng = np.random.default_rng(1)
    for n, N in ((4, 12), (8, 64), (16, 40)):
        energy = forms_from_gram(wishart_gram(rng, 4000, n, N), N).metrics()["energy"]
        stderr = energy.std() / np.sqrt(len(energy))
        assert abs(energy.mean() - (N + 1) / (2 * N)) < 4 * stderr


def test_wishart_baseline_matches_direct_sampling() -> None:
    """The Bartlett-sampled Gram has the law of U^T U for Gaussian U (two-sample KS tests)."""
    from scipy.stats import ks_2samp

    rng = np.random.default_rng(2)
    n, N, count = 4, 24, 3000
    fast = forms_from_gram(wishart_gram(rng, count, n, N), N).metrics()
    q, k = rng.standard_normal((count, n, N)), rng.standard_normal((count, n, N))
    direct = head_forms(q, k).metrics()
    for name in ("energy", "pairing", "b_sym", "c_sym"):
        assert ks_2samp(fast[name], direct[name]).pvalue > 1e-3, name
    assert ks_2samp(fast["c_sym"], direct["d_sym"]).pvalue > 1e-3  # sign symmetry


@settings(max_examples=40, deadline=None)
@given(shape=shapes, seed=seeds, scale=st.floats(1e-3, 1e3))
def test_fact5_invariances(shape: tuple[int, int], seed: int, scale: float) -> None:
    n, N = shape
    q, k = _random_head(seed, n, N)
    base = _single(q, k)
    rotation, _ = np.linalg.qr(np.random.default_rng(seed + 1).standard_normal((N, N)))
    variants = {
        "transpose": (k, q),  # K^T Q -> Q^T K = L^T
        "scale": (scale * q, k),
        "orthogonal": (q @ rotation, k @ rotation),  # U^T L U
    }
    for label, (qq, kk) in variants.items():
        got = _single(qq, kk)
        for name in SCALARS:
            assert abs(got[name] - base[name]) < 1e-9, (label, name)
        assert got["parity"] == base["parity"] or abs(base["c_sym"] + base["d_sym"] - 0.02) < 1e-9


def test_gqa_gram_uses_shared_key_heads() -> None:
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((6, 4, 20)), rng.standard_normal((2, 4, 20))
    kv = np.arange(6) // 3
    batch = forms_from_gram(gram_matrices(q, k, kv), 20)
    for h in range(6):
        single = head_forms(q[h : h + 1], k[kv[h] : kv[h] + 1])
        np.testing.assert_allclose(batch.eig_s[h], single.eig_s[0], rtol=1e-12, atol=1e-12)


def test_singular_gram_falls_back_exactly() -> None:
    """Zero rows in Q (e.g. a zero QK-norm gain) make G singular; spectra stay exact."""
    rng = np.random.default_rng(4)
    q, k = rng.standard_normal((4, 30)), rng.standard_normal((4, 30))
    q[1] = 0.0
    batch = head_forms(q[None], k[None])
    dense = dense_reference(q, k)
    top = np.sort(np.concatenate([dense["eig_s"][:4], dense["eig_s"][-4:]]))[::-1]
    np.testing.assert_allclose(batch.eig_s[0], top, atol=1e-10 * np.abs(top).max())
    assert (batch.n_pos[0], batch.n_neg[0]) == (3, 3)


def test_parity_rule_and_ties() -> None:
    c = np.array([0.5, 0.01, 0.1, 0.1, 0.0])
    d = np.array([0.1, 0.01, 0.5, 0.1, 0.0])
    assert list(parity_labels(c, d)) == ["I+", "II", "I-", "I-", "II"]
    assert parity_labels(np.array([np.nan]), np.array([np.nan]))[0] == "zero"


def _dense_author_statistics(form: np.ndarray) -> dict[str, float]:
    """The author's statistics of a dense form, straight from their definitions: from the
    singular values h of L, and the same of the eigenvalues of S (the ``_s`` columns)."""
    h2 = np.linalg.svd(form, compute_uv=False) ** 2
    lam2 = np.linalg.eigvalsh((form + form.T) / 2) ** 2
    out = {"trace_ratio": abs(np.trace(form)) / np.linalg.norm(form)}
    for suffix, e in (("", h2), ("_s", lam2)):
        out[f"participation_ratio{suffix}"] = e.sum() ** 2 / (e**2).sum()
        out[f"stable_rank{suffix}"] = e.sum() / e.max()
        out[f"leading_share{suffix}"] = e.max() / e.sum()
    return out


@settings(max_examples=60, deadline=None)
@given(shape=shapes, seed=seeds)
def test_singular_values_of_l_and_the_authors_statistics_match_dense(
    shape: tuple[int, int], seed: int
) -> None:
    n, N = shape
    q, k = _random_head(seed, n, N)
    batch = head_forms(q[None], k[None])
    form = k.T @ q
    singular = np.linalg.svd(form, compute_uv=False)
    np.testing.assert_allclose(batch.sv_l[0], singular[:n], rtol=0, atol=1e-7 * singular[0])
    np.testing.assert_allclose(batch.sv_l[0] ** 2, singular[:n] ** 2, atol=1e-12 * singular[0] ** 2)
    metrics = _single(q, k)
    for name, value in _dense_author_statistics(form).items():
        np.testing.assert_allclose(metrics[name], value, rtol=1e-9, err_msg=name)


def test_singular_values_of_l_from_a_factor_that_is_not_triangular() -> None:
    """A singular Gram matrix's factor is an eigen square root (not triangular): the singular
    values of L come from a QR of its top block, and still match dense algebra."""
    rng = np.random.default_rng(5)
    n, N = 3, 4  # N < 2n: G is singular
    q, k = rng.standard_normal((n, N)), rng.standard_normal((n, N))
    gram = gram_matrices(q[None], k[None])
    batch = forms_from_gram(gram, N)
    singular = np.linalg.svd(k.T @ q, compute_uv=False)[:n]
    np.testing.assert_allclose(batch.sv_l[0], singular, atol=1e-7 * singular[0])


def test_rank_one_and_flat_spectra_give_the_authors_extremes() -> None:
    """Rank one: participation ratio, stable rank and leading share all 1; an orthogonal-like
    L = K^T Q with orthonormal rows (all n singular values 1): n, n and 1/n."""
    rng = np.random.default_rng(2)
    k, q = rng.standard_normal((1, 9)), rng.standard_normal((1, 9))
    one = _single(np.repeat(q, 3, 0) * [[1], [0], [0]], np.repeat(k, 3, 0) * [[1], [0], [0]])
    for name in ("participation_ratio", "stable_rank", "leading_share"):
        assert abs(one[name] - 1) < 1e-12, name
    basis = np.linalg.qr(rng.standard_normal((9, 4)))[0].T  # 4 orthonormal rows
    flat = _single(basis, basis)  # L = K^T Q = projection: singular values 1 (four of them)
    assert abs(flat["participation_ratio"] - 4) < 1e-12 and abs(flat["stable_rank"] - 4) < 1e-12
    assert abs(flat["leading_share"] - 0.25) < 1e-12
    assert abs(flat["trace_ratio"] - 2) < 1e-12  # tr P / ||P|| = 4 / 2
