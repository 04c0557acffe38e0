"""Every error one line on the command line (issue 17, item 6): a 300-character file name (an
OSError from the file system), a table whose missing column leaves a statistic without values
(numpy's warnings named files of the installation); in hosted mode a command bounded in time and
memory as a worker is, each stop one line (issue 29, item 7)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_files import slow_gguf, wide_model
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


def _hosted(tmp_path: Path, **limits: str) -> dict[str, str]:
    """The environment of a command line in hosted mode, models allowed under ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADFORMS_")}
    env.update(
        HEADFORMS_HOSTED="1",
        HEADFORMS_MODEL_ROOTS=str(tmp_path),
        HEADFORMS_CACHE_DIR=str(tmp_path / "cache"),
        **limits,
    )
    return env


def _headforms(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headforms", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )


def test_a_300_character_gguf_name_is_one_line_in_hosted_mode(tmp_path: Path) -> None:
    """(issue 29: a 30-line traceback from the stat of the name)."""
    result = _headforms(["analyze", str(tmp_path / ("x" * 300 + ".gguf"))], _hosted(tmp_path))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("error: cannot open xxxxxxxx")
    assert "File name too long" in result.stderr and len(result.stderr) < 200


def test_the_command_line_in_hosted_mode_stops_at_its_time_limit(tmp_path: Path) -> None:
    """A GGUF file of 3 million metadata entries (seconds to parse; issue 29's of 1 GiB took
    122 s and 1.09 GB with no limit) is stopped at HEADFORMS_ANALYSIS_SECONDS, in one line."""
    slow_gguf(tmp_path / "slow.gguf", 3_000_000)
    env = _hosted(tmp_path, HEADFORMS_ANALYSIS_SECONDS="2")
    result = _headforms(["analyze", str(tmp_path / "slow.gguf")], env)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        "error: the command took longer than this server's limit of 2 s "
        "(HEADFORMS_ANALYSIS_SECONDS); it was stopped\n"
    )


@pytest.mark.slow
def test_the_command_line_in_hosted_mode_stops_at_its_memory_limit(tmp_path: Path) -> None:
    """One layer of N = 8192 (about 1 GiB to analyse) within 300 MiB: one line."""
    wide_model(tmp_path / "wide")
    limit = str(300 * 2**20)
    env = _hosted(tmp_path, HEADFORMS_ANALYSIS_MEMORY=limit, HEADFORMS_MAX_MODEL_BYTES=limit)
    result = _headforms(["analyze", str(tmp_path / "wide")], env)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        "error: the command needed more memory than this server's limit of 300 MiB "
        "(HEADFORMS_ANALYSIS_MEMORY); it was stopped\n"
    )
