"""Odd but legal heads (zero, positive and negative semidefinite, rank one) through every output.

A tiny Mistral checkpoint is built in the test and edited so that layer 0 holds one head of each
kind (layer 1 stays generic). Every statistic must have the value docs/MATH.md documents for it
("Degenerate heads"), or be missing, and read the same in the library's table, the command
line's CSV, JSON and Parquet, and a survey's table; no output holds an infinity (strict JSON)
or a negative zero, and the printed summary shows no "-0.0".
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numerics import assert_shares_close
from repo import REPO as ROOT
from safetensors.numpy import load_file, save_file

from headforms import analyze

SHARES = ("a", "b", "c", "d", "b_sym", "c_sym", "d_sym", "energy", "pairing", "balance")
FORMATS = (".csv", ".json", ".parquet")
ZERO, PSD, NSD, RANK_ONE = range(4)
"""The heads of layer 0, by what their form is."""


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Mistral model (4 heads, 4 key heads) whose layer-0 heads are zero, PSD, NSD and
    rank one."""
    from tiny_models import build

    directory = tmp_path_factory.mktemp("degenerate")
    model = build("mistral", directory, seed=3, num_key_value_heads=4)
    n = model.config.hidden_size // model.config.num_attention_heads
    path = directory / "model.safetensors"
    tensors = load_file(path)
    prefix = "layers.0.self_attn."
    q = tensors[prefix + "q_proj.weight"].copy()
    k = tensors[prefix + "k_proj.weight"].copy()
    block = slice(ZERO * n, (ZERO + 1) * n)
    q[block] = 0.0
    k[PSD * n : (PSD + 1) * n] = q[PSD * n : (PSD + 1) * n]
    k[NSD * n : (NSD + 1) * n] = -q[NSD * n : (NSD + 1) * n]
    rows = slice(RANK_ONE * n, (RANK_ONE + 1) * n)
    q[rows][1:] = 0.0
    k[rows][1:] = 0.0
    tensors[prefix + "q_proj.weight"], tensors[prefix + "k_proj.weight"] = q, k
    save_file(tensors, path, metadata={"format": "pt"})
    return directory


@pytest.fixture(scope="module")
def heads(checkpoint: Path) -> pd.DataFrame:
    return analyze(str(checkpoint), use_cache=False).heads


def _rank_one_vectors(checkpoint: Path) -> tuple[np.ndarray, np.ndarray]:
    tensors = load_file(checkpoint / "model.safetensors")
    n = tensors["layers.0.self_attn.q_proj.weight"].shape[0] // 4
    q = tensors["layers.0.self_attn.q_proj.weight"][RANK_ONE * n].astype(float)
    k = tensors["layers.0.self_attn.k_proj.weight"][RANK_ONE * n].astype(float)
    return q, k


def test_each_degenerate_head_has_its_documented_values(heads: pd.DataFrame, checkpoint: Path):
    layer0 = heads[heads["layer"] == 0].set_index("head")
    zero, psd, nsd, rank_one = (layer0.loc[h] for h in (ZERO, PSD, NSD, RANK_ONE))

    # A vanishing form: its profile is undefined, every ratio missing, parity "zero".
    assert zero["parity"] == "zero" and zero["norm_l"] == 0.0 and zero["n_zero"] == 64
    for column in (*SHARES, "rho", "lobe_departure", "pairing_bound", "pairing_gap"):
        assert math.isnan(zero[column]), column
    for column in ("theorem5_b", "theorem5_c", "theorem5_d", "participation_ratio"):
        assert math.isnan(zero[column]), column

    # L = Q^T Q: positive semidefinite, the vertex c = 1.
    assert (psd["a"], psd["b"], psd["d"], psd["c"]) == pytest.approx((0, 0, 0, 1), abs=1e-12)
    assert psd["parity"] == "I+" and psd["n_neg"] == 0 and psd["balance"] == 0.0
    assert psd["rho"] == 0.0 and psd["pairing_bound"] == 0.0
    assert psd["pairing"] == pytest.approx(0.0, abs=1e-12)
    assert (psd["theorem5_b"], psd["theorem5_c"], psd["theorem5_d"]) == (0.0, 1.0, 0.0)
    assert math.isnan(psd["lobe_departure"])  # no negative lobe to compare

    # L = -Q^T Q: negative semidefinite, the vertex d = 1; the lobe ratio is infinite: missing.
    assert (nsd["a"], nsd["b"], nsd["c"], nsd["d"]) == pytest.approx((0, 0, 0, 1), abs=1e-12)
    assert nsd["parity"] == "I-" and nsd["n_pos"] == 0
    assert math.isnan(nsd["rho"]) and math.isnan(nsd["lobe_departure"])
    assert nsd["pairing"] == pytest.approx(0.0, abs=1e-12) and nsd["pairing_bound"] == 0.0
    assert (nsd["theorem5_b"], nsd["theorem5_c"], nsd["theorem5_d"]) == (0.0, 0.0, 1.0)

    # L = k q^T: on Theta, a = b = (1 - cos^2 t) / 2 with t the angle between k and q.
    q, k = _rank_one_vectors(checkpoint)
    cos2 = (q @ k) ** 2 / ((q @ q) * (k @ k))
    assert rank_one["a"] == pytest.approx((1 - cos2) / 2, abs=1e-12)
    assert rank_one["b"] == pytest.approx((1 - cos2) / 2, abs=1e-12)
    assert rank_one["c"] * rank_one["d"] == pytest.approx(0.0, abs=1e-12)
    assert rank_one["n_pos"] == rank_one["n_neg"] == 1

    # Nothing infinite and no negative zero anywhere in the table.
    numeric = heads.select_dtypes("number").to_numpy(float)
    assert not np.isinf(numeric).any()
    assert not (np.signbit(numeric) & (numeric == 0)).any()
    for column in SHARES:  # shares stay in [0, 1]
        values = heads[column].dropna()
        assert ((values >= 0) & (values <= 1)).all(), column


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headforms", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
        timeout=600,
    )


def test_the_summary_shows_no_negative_zero_nor_infinity(checkpoint: Path) -> None:
    done = _run("analyze", str(checkpoint), "--quiet")
    assert done.returncode == 0, done.stderr
    assert "-0.0" not in done.stdout and "inf" not in done.stdout.lower(), done.stdout
    assert "nan" not in done.stdout.lower(), done.stdout  # statistics skip the zero head


def _read(path: Path) -> pd.DataFrame:
    if path.suffix == ".csv":
        return pd.read_csv(path)
    if path.suffix == ".parquet":
        return pd.read_parquet(path)

    def refuse(constant: str) -> None:
        raise AssertionError(f"{path.name} is not strict JSON: it holds {constant}")

    return pd.DataFrame(json.loads(path.read_text(), parse_constant=refuse))


def _assert_same_table(written: pd.DataFrame, heads: pd.DataFrame, where: str) -> None:
    """The written table holds the library's values: the same cells missing, the same numbers."""
    written = written.sort_values(["layer", "head"]).reset_index(drop=True)
    for column in heads.columns:
        mine, theirs = heads[column], written[column]
        if column == "parity":
            assert list(theirs) == list(mine), where
            continue
        mine, theirs = mine.to_numpy(float), theirs.to_numpy(float)
        np.testing.assert_array_equal(np.isnan(theirs), np.isnan(mine), err_msg=f"{where} {column}")
        known = ~np.isnan(mine)
        assert not (np.signbit(theirs[known]) & (theirs[known] == 0)).any(), f"{where} {column}"
        if column in SHARES:
            assert_shares_close(theirs[known], mine[known], err_msg=f"{where} {column}")
        else:
            np.testing.assert_allclose(theirs[known], mine[known], rtol=1e-12, err_msg=column)


@pytest.mark.parametrize("suffix", FORMATS)
def test_every_output_format_writes_the_same_values(
    checkpoint: Path, heads: pd.DataFrame, tmp_path: Path, suffix: str
) -> None:
    out = tmp_path / f"heads{suffix}"
    done = _run("analyze", str(checkpoint), "--out", str(out))
    assert done.returncode == 0, done.stderr
    _assert_same_table(_read(out), heads, f"analyze {suffix}")

    survey = tmp_path / f"survey{suffix}"
    done = _run("survey", str(checkpoint), "--out", str(survey))
    assert done.returncode == 0, done.stderr
    rows = _read(survey)
    _assert_same_table(rows[list(heads.columns)], heads, f"survey {suffix}")
    summary = _read(survey.with_name(f"survey.summary{suffix}"))
    numbers = summary.select_dtypes("number").to_numpy(float)
    assert not np.isinf(numbers).any() and not (np.signbit(numbers) & (numbers == 0)).any()
