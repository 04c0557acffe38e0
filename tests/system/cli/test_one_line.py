"""Every error one line on the command line (issue 17, item 6): a 300-character file name (an
OSError from the file system), a table whose missing column leaves a statistic without values
(numpy's warnings named files of the installation)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from published_tables import head_rows
from repo import REPO

LONG_NAME = "x" * 300 + ".csv"


def test_a_300_character_file_name_is_one_line_on_the_command_line(tmp_path: Path) -> None:
    """(before: a 31-line traceback from ``path.is_file()``)."""
    result = subprocess.run(
        [sys.executable, "-m", "headforms", "analyze", str(tmp_path / LONG_NAME)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("error: cannot open the table file xxxxxxxx")
    assert "File name too long" in result.stderr and len(result.stderr) < 200


def test_no_warning_naming_the_installation_on_the_command_line(tmp_path: Path) -> None:
    """A table without pairing scores: the summary shows a dash (before: numpy's warnings, each
    naming a file of the installation)."""
    head_rows(1, layers=2, heads=2).to_csv(tmp_path / "nopairing.csv", index=False)
    result = subprocess.run(
        [sys.executable, "-m", "headforms", "analyze", str(tmp_path / "nopairing.csv")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and "—" in result.stdout
