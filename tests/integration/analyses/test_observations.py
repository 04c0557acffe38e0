"""Observation 5 columns (lobe ratio, departure, pairing bound and gap, Theorem 5 point), the
Type II tolerance of the parity tables, the Theorem 3 summary and their figures, each against
dense numpy computations from the definitions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from oracle import dense_lobes

from headforms import analyze
from headforms.analyses.lobes import observation5_frame, observation5_summary
from headforms.analyses.parity import (
    parity_by_layer,
    parity_table,
    theorem3_summary,
)
from headforms.errors import HeadformsError
from headforms.figures.observations import against_figure
from headforms.figures.parity import (
    parity_by_layer_figure,
    parity_comparison_figure,
    parity_comparison_table,
)
from headforms.forms import head_forms, parity_labels
from headforms.model_analysis import model_baseline


def _expected(form: np.ndarray) -> dict[str, float]:
    """Observation 5 quantities of one form, straight from the paper's formulas."""
    pos, neg = dense_lobes(form, rtol=1e-10)
    rho = np.linalg.norm(neg) / np.linalg.norm(pos)
    norm_s = np.sqrt(pos @ pos + neg @ neg)
    pairing = 1 - np.linalg.norm(pos - neg) / norm_s
    bound = 1 - abs(1 - rho) / np.sqrt(1 + rho**2)
    return {
        "rho": rho,
        "lobe_departure": np.linalg.norm(neg - rho * pos) / np.linalg.norm(neg),
        "pairing_bound": bound,
        "pairing_gap": bound - pairing,
        "theorem5_b": 2 * rho / (1 + rho**2),
        "theorem5_c": max(1 - rho, 0) ** 2 / (1 + rho**2),
        "theorem5_d": max(rho - 1, 0) ** 2 / (1 + rho**2),
        "b_sym": 2 * pos @ neg / norm_s**2,
        "c_sym": np.sum(np.clip(pos - neg, 0, None) ** 2) / norm_s**2,
        "d_sym": np.sum(np.clip(neg - pos, 0, None) ** 2) / norm_s**2,
    }


def test_observation5_columns_match_dense_computation_of_random_heads():
    rng = np.random.default_rng(0)
    n, dim, heads = 4, 13, 6
    q = rng.normal(size=(heads, n, dim))
    k = rng.normal(size=(heads, n, dim)) * rng.uniform(0.2, 3.0, size=(heads, 1, 1))
    k[:3] += 0.8 * q[:3]  # more symmetric heads: rho far from 1 on one side or the other
    metrics = head_forms(q, k).metrics()
    for h in range(heads):
        expected = _expected(k[h].T @ q[h])
        for name, value in expected.items():
            assert metrics[name][h] == pytest.approx(value, rel=1e-9, abs=1e-12), name
    assert np.all(metrics["pairing_gap"] >= -1e-12)


def test_exactly_proportional_lobes_reach_the_bound_and_the_theorem5_point():
    """A symmetric L = U diag(lambda_+, -r lambda_+) U^T: departure 0, pairing = bound, and
    the symmetric profile equals the predicted point, for r below and above 1."""
    rng = np.random.default_rng(1)
    basis, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    lobe = np.sort(rng.gamma(2.0, 1.0, 4))[::-1]
    for r in (0.35, 1.0, 2.5):
        form = basis @ np.diag(np.r_[lobe, -r * lobe]) @ basis.T
        metrics = head_forms(form[None], np.eye(8)[None]).metrics()  # L = I^T form
        assert metrics["rho"][0] == pytest.approx(r)
        assert metrics["lobe_departure"][0] == pytest.approx(0.0, abs=1e-7)
        assert metrics["pairing_gap"][0] == pytest.approx(0.0, abs=1e-7)
        for got, want in (
            ("theorem5_b", "b_sym"),
            ("theorem5_c", "c_sym"),
            ("theorem5_d", "d_sym"),
        ):
            assert metrics[got][0] == pytest.approx(metrics[want][0], abs=1e-7)


def test_semidefinite_heads_have_an_undefined_departure():
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(3, 9))
    psd = vectors.T @ vectors  # S positive semidefinite: no negative lobe
    metrics = head_forms(psd[None], np.eye(9)[None]).metrics()
    assert metrics["rho"][0] == 0.0 and np.isnan(metrics["lobe_departure"][0])
    assert (metrics["theorem5_b"][0], metrics["theorem5_c"][0]) == (0.0, 1.0)
    nsd = head_forms(-psd[None], np.eye(9)[None]).metrics()
    # no positive lobe: the ratio is infinite, stored as missing (docs/MATH.md, degenerate heads)
    assert np.isnan(nsd["rho"][0]) and nsd["theorem5_d"][0] == 1.0
    assert nsd["pairing_bound"][0] == pytest.approx(0.0)


@pytest.fixture(scope="module")
def minilm():
    return analyze("minilm-l6")


def test_bound_holds_on_every_trained_and_gaussian_head(minilm):
    for table in (minilm.heads, model_baseline(minilm.card).heads):
        assert np.all(table["pairing"] <= table["pairing_bound"] + 1e-12)
    table = minilm.table(model_baseline(minilm.card))
    assert {f"rand_{c}" for c in ("rho", "lobe_departure", "theorem5_b")} <= set(table.columns)
    assert {"rho", "lobe_departure", "pairing_gap", "theorem5_d"} <= set(table.columns)


def test_observation5_summary_medians(minilm):
    baselines = {"minilm-l6": model_baseline(minilm.card).heads}
    summary = observation5_summary({"minilm-l6": minilm.heads}, baselines).set_index("heads")
    for source, table in (("trained", minilm.heads), ("Gaussian baseline", baselines["minilm-l6"])):
        eig = (
            minilm.spectra["eig_s"]
            if source == "trained"
            else model_baseline(minilm.card).spectra["eig_s"]
        )
        rho = [
            np.linalg.norm(np.clip(-e, 0, None)) / np.linalg.norm(np.clip(e, 0, None)) for e in eig
        ]
        assert summary.loc[source, "median ρ"] == pytest.approx(np.median(rho), rel=1e-9)
        frame = observation5_frame(table)
        distance = np.linalg.norm(
            table[["b_sym", "c_sym", "d_sym"]].to_numpy()
            - table[["theorem5_b", "theorem5_c", "theorem5_d"]].to_numpy(),
            axis=1,
        )
        np.testing.assert_allclose(frame["theorem5_distance"], distance)
        assert summary.loc[source, "within 0.1 (%)"] == pytest.approx(100 * np.mean(distance < 0.1))


def test_type2_tolerance_relabels_from_the_symmetric_profile(minilm):
    c = np.array([0.0, 0.01, 0.03, 0.2, 0.1, 0.3])
    d = np.array([0.0, 0.009, 0.0, 0.3, 0.1, 0.0])
    for tolerance in (0.0, 0.02, 0.05, 0.25):
        expected = [
            "II" if ci + di <= tolerance else ("I+" if ci > di else "I-")
            for ci, di in zip(c, d, strict=True)
        ]
        assert list(parity_labels(c, d, tolerance)) == expected
    heads = minilm.heads
    for tolerance in (0.0, 0.02, 0.1, 1.0):
        total = heads["c_sym"] + heads["d_sym"]
        share_ii = 100 * np.mean(total <= tolerance)
        share_plus = 100 * np.mean((total > tolerance) & (heads["c_sym"] > heads["d_sym"]))
        row = parity_table({"m": heads}, tolerance).loc["m"]
        assert row["II"] == pytest.approx(share_ii) and row["I+"] == pytest.approx(share_plus)
        assert row["I+"] + row["II"] + row["I-"] == pytest.approx(100.0)
        layers = parity_by_layer(heads, tolerance)
        for layer, part in heads.groupby("layer"):
            part_total = part["c_sym"] + part["d_sym"]
            assert layers.loc[layer, "II"] == pytest.approx(100 * np.mean(part_total <= tolerance))
    assert parity_table({"m": heads}).equals(parity_table({"m": heads}, 1 / 50))
    for bad in (-0.1, 1.5):
        with pytest.raises(HeadformsError, match="tolerance"):
            parity_table({"m": heads}, bad)


def test_theorem3_summary_counts_balanced_heads():
    heads = pd.DataFrame({"n_pos": [4, 4, 3, 2, 4], "n_neg": [4, 3, 3, 2, 4]})
    row = theorem3_summary({"toy": (heads, 4)}).loc["toy"]
    assert row["balanced"] == pytest.approx(80.0)  # 4 of 5 have n_pos = n_neg
    assert row["generic"] == pytest.approx(40.0)  # 2 of 5 have n_pos = n_neg = 4
    assert row["heads"] == 5 and row["n"] == 4


def test_comparison_figures_with_a_tolerance(minilm):
    models = {"minilm-l6": minilm.heads}
    table = parity_comparison_table(models, 0.1)
    ours = table[table["source"] == "computed here"].set_index("model")
    assert ours.loc["minilm-l6", "II"] == pytest.approx(
        100 * np.mean(minilm.heads["c_sym"] + minilm.heads["d_sym"] <= 0.1)
    )
    paper = table[table["source"] == "paper, Table 2"]
    assert len(paper) == 6 and paper["heads"].notna().all()
    bars = parity_comparison_figure(table, 0.1)
    assert "0.1" in bars.layout.title.text
    assert any("(paper, 144 heads)" in label for label in bars.data[0].y)
    grid = parity_by_layer_figure({"minilm-l6": parity_by_layer(minilm.heads, 0.1)}, 0.1)
    cells = grid.data[0]
    totals = pd.Series(cells.marker.color).groupby(np.asarray(cells.x)).sum()
    np.testing.assert_allclose(totals.to_numpy(), 100.0)
    assert (grid.layout.coloraxis.cmin, grid.layout.coloraxis.cmax) == (0, 100)
    scatter = against_figure(
        models,
        "pairing_bound",
        "pairing",
        "bound",
        "pairing",
        "t",
        {"minilm-l6": model_baseline(minilm.card).heads},
    )
    assert scatter.data[-1].name == "y = x"
    for fig in (bars, grid, scatter):
        assert fig.layout.title.text and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
