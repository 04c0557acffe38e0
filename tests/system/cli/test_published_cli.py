"""The command line on published tables: ``headforms models FILE`` lists a table's models, and
``--type2-tolerance`` moves the parity shares analyze and survey print and the parity column
they write (Type II: c_S + d_S <= T), as the Table 2 rule recomputed here with numpy says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from published_tables import author_table
from repo import REPO

from headforms.cli import main


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """Two models in the author's columns; a third of alpha's heads at c_S + d_S = 0.0195
    (Type II at 1/50, not at 0.019); a spectra file beside the table for beta."""
    alpha = author_table("alpha", 3, 4, 4, 16, 0)
    near = alpha.index[::3]
    alpha.loc[near, ["b_sym", "c_sym", "d_sym"]] = [1 - 0.0195, 0.0150, 0.0045]
    frame = pd.concat([alpha, author_table("beta", 2, 2, 2, 8, 1)], ignore_index=True)
    path = tmp_path / "head_statistics.csv"
    frame.to_csv(path, index=False)
    (tmp_path / "beta_spectra.npz").write_bytes(b"listed, never read by models FILE")
    return path


def shares(rows: pd.DataFrame, tolerance: float) -> list[float]:
    c, d = rows["c_sym"].to_numpy(), rows["d_sym"].to_numpy()
    labels = np.where(c + d <= tolerance, "II", np.where(c > d, "I+", "I-"))
    return [round(100 * float(np.mean(labels == p)), 1) for p in ("I+", "II", "I-")]


def test_models_lists_a_tables_models(table: Path, capsys) -> None:
    for source in (str(table), str(table.parent)):
        assert main(["models", source]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines == [
            f"{source}::alpha",
            "    12 heads (3 layers), no spectra file",
            f"{source}::beta",
            "    4 heads (2 layers), spectra: beta_spectra.npz",
        ]


def test_type2_tolerance_moves_the_shares_printed_and_written(table: Path, capsys) -> None:
    rows = pd.read_csv(table)
    alpha = rows[rows["model"] == "alpha"]
    for tolerance, flag in ((1 / 50, []), (0.019, ["--type2-tolerance", "0.019"])):
        assert main(["analyze", f"{table}::alpha", *flag]) == 0
        line = capsys.readouterr().out.splitlines()[2]  # card, header, the row
        assert line.split()[1:] == [f"{s:.1f}" for s in shares(alpha, tolerance)] + ["12"]
    assert shares(alpha, 0.019) != shares(alpha, 1 / 50)
    out = table.parent / "alpha.csv"
    assert (
        main(["analyze", f"{table}::alpha", "--type2-tolerance", "19/1000", "--out", str(out)]) == 0
    )
    written = pd.read_csv(out)
    c, d = alpha["c_sym"].to_numpy(), alpha["d_sym"].to_numpy()
    assert (written["parity"] == "II").sum() == int(np.sum(c + d <= 0.019))
    survey = table.parent / "survey.csv"
    spec = f"{table}::alpha"
    assert main(["survey", spec, "--out", str(survey), "--type2-tolerance", "0.019"]) == 0
    summary = pd.read_csv(table.parent / "survey.summary.csv").set_index("model")
    assert [round(v, 1) for v in summary.loc[spec, ["I+", "II", "I-"]]] == shares(alpha, 0.019)
    assert (pd.read_csv(survey)["parity"] == written["parity"]).all()


@pytest.mark.parametrize(
    "value, message",
    [
        ("half", "--type2-tolerance 'half' is not a number"),
        ("1.5", "Type II tolerance must be between 0 and 1"),
    ],
)
def test_a_bad_tolerance_is_one_line(table: Path, value: str, message: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "headforms",
            "analyze",
            f"{table}::beta",
            "--type2-tolerance",
            value,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr
