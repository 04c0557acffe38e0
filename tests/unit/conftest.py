"""Unit tests run alone (``pytest tests/unit``: `make unit` and the first step of `make check`
and `make test`) run without model packages (helpers/unit_lane.py):
importing torch, transformers or a bundled model fails the test. In a
run that mixes them with other tests, the other tests' imports are theirs, and this is not
checked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from unit_lane import without_model_packages

UNIT = Path(__file__).resolve().parent


def only_unit_tests(config: pytest.Config) -> bool:
    """Whether every path the run was given lies inside tests/unit."""
    paths = [Path(arg.split("::")[0]).resolve() for arg in config.args]
    return bool(paths) and all(path == UNIT or UNIT in path.parents for path in paths)


@pytest.fixture(scope="session", autouse=True)
def _unit_lane(request: pytest.FixtureRequest) -> Iterator[None]:
    if not only_unit_tests(request.config):
        yield
        return
    with without_model_packages():
        yield
