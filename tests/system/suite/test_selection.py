"""Under CI=true the browser tests marked ``container`` leave the local run only when the
container run that covers them is really in the run: after ``-m`` and ``-k`` have chosen it
(tests/conftest.py, helpers/run_selection.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from repo import REPO
from run_selection import CONTAINER_RUN

pytestmark = pytest.mark.slow

FILES = ("tests/system/browser/test_browser.py", "tests/system/image/test_image.py")
CONTAINER = "test_a_shared_link_opens_the_head"  # one of test_browser.py's `container` tests


def collected(*options: str) -> list[str]:
    """The node ids ``CI=true pytest --collect-only`` selects of ``FILES`` with ``options``."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "-q"]
        + ["--collect-only", "--import-mode=importlib", *options, *FILES],
        cwd=REPO,
        env={**os.environ, "CI": "true"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_the_container_tests_run_once_when_the_container_run_is_selected() -> None:
    ids = collected("-m", "browser or image")
    assert CONTAINER_RUN in ids
    assert not any(CONTAINER in i for i in ids)


def test_the_container_tests_run_locally_when_the_container_run_is_not_selected() -> None:
    assert any(CONTAINER in i for i in collected("-m", "browser"))
    assert any(CONTAINER in i for i in collected("-m", "browser or image", "-k", "not clicks"))
