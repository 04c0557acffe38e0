"""``headforms why``: one row per head (CSV, JSON, Parquet) holding the library's values, the top
pairs as a second table, a summary on stdout without ``--out``, and every bad input one line
with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import tiny_runnable
from published_tables import head_rows
from repo import REPO

from headforms.behaviour.runnable import runnable
from headforms.cli import main
from headforms.sources import locate
from headforms.why import DIRECTIONS
from headforms.why.compute import compute_why
from headforms.why.run import request_of

TEXT = tiny_runnable.words([5, 6, 7, 8, 5, 6, 7, 8, 30, 31, 32])


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("cli-why")
    tiny_runnable.checkpoint("llama", directory, seed=3)
    return str(directory)


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_one_row_per_head_and_the_pairs_beside(model_dir: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "why.csv"
    code, _, err = run_main(
        capsys, "why", model_dir, "--prompt", TEXT, "--pairs", "2", "--out", str(out), "--quiet",
    )  # fmt: skip
    assert code == 0, err
    table = pd.read_csv(out)
    want = compute_why(runnable(locate(model_dir)), request_of(text=TEXT, pairs=2))
    assert list(table.columns) == list(want.table.columns)
    assert len(table) == 8
    for column in ("share_pos", "share_anti", "spread_neg", "weight_anti", "rest_share"):
        assert table[column].to_numpy() == pytest.approx(want.table[column].to_numpy(), rel=1e-12)
    pairs = pd.read_csv(tmp_path / "why_pairs.csv")
    assert len(pairs) == len(want.pair_table)
    assert f"wrote {len(pairs)} pair(s) to {tmp_path / 'why_pairs.csv'}" in err
    assert pairs["place"].max() == 2 and pairs["rank"].max() <= DIRECTIONS
    assert set(pairs["lobe"]) == {"positive", "negative"}


def test_json_pairs_to_their_own_file(model_dir: str, tmp_path: Path, capsys) -> None:
    pairs = tmp_path / "pairs.json"
    code, _, err = run_main(
        capsys, "why", model_dir, "--heads", "1.2", "--prompt", TEXT, "--pairs", "1",
        "--pairs-out", str(pairs),
    )  # fmt: skip
    assert code == 0, err
    rows = json.loads(pairs.read_text())
    assert {(r["layer"], r["head"]) for r in rows} == {(1, 2)}
    assert f"wrote {len(rows)} pair(s) to {pairs}" in err


def test_without_out_a_summary_is_printed(model_dir: str, capsys) -> None:
    code, out, _ = run_main(capsys, "why", model_dir, "--prompt", TEXT, "--quiet")
    assert code == 0
    assert "8 head(s) on 11 tokens" in out and "median shares per parity type" in out
    assert "largest antisymmetric shares" in out
    code, out, _ = run_main(
        capsys, "why", model_dir, "--heads", "0.3", "--prompt", TEXT, "--pairs", "2", "--quiet"
    )
    assert code == 0 and "L0.H3 (" in out and "is carried by the" in out
    assert "top pairs of each lobe direction" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--heads", "9.0"], "error: layer 9 does not exist"),
        (["--heads", "1.7"], "error: head 7 does not exist"),
        (["--heads", "x"], "error: --heads: 'x' is not a head"),
        (["--prompt", " "], "error: the text is empty"),
        (["--max-tokens", "100000"], "error: --max-tokens 100000"),
        (["--pairs", "500"], "error: --pairs 500: 0 to 100"),
        (["--layer", "1", "--parity", "II"], "error: give one scope"),
        (["--text", "/nonexistent.txt"], "error: --text /nonexistent.txt"),
        (["--out", "x.xlsx"], "error: --out x.xlsx: unknown extension"),
        (["--pairs-out", "p.csv"], "error: --pairs-out needs --pairs K"),
    ],
)
def test_bad_input_is_one_line(model_dir: str, capsys, args: list[str], message: str) -> None:
    code, out, err = run_main(capsys, "why", model_dir, *args, "--quiet")
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1, err


def test_a_published_table_is_one_line(tmp_path: Path) -> None:
    """In a subprocess, as a user runs it: one line, exit status 2, no traceback."""
    table = tmp_path / "published.csv"
    head_rows(1, layers=2, heads=2).to_csv(table, index=False)
    result = subprocess.run(
        [sys.executable, "-m", "headforms", "why", str(table)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "no weights to run; score splits need the model itself" in result.stderr
