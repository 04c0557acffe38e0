"""What the hosted integration tests of forward passes share: hosted mode under the module's
``root`` of models, an empty cache, fresh budgets, turns and model workers, and none left after
(a module with other needs defines its own ``hosted_env``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from processes import gone

from headforms.hosted import api
from headforms.settings import (
    ALLOWLIST_ENV,
    HOSTED_ENV,
    MEMORY_ENV,
    MODEL_IDLE_ENV,
    MODELS_MEMORY_ENV,
    ROOTS_ENV,
)


@pytest.fixture
def hosted_env(monkeypatch: pytest.MonkeyPatch, root: Path, tmp_path: Path) -> Iterator[Path]:
    """Hosted mode under ``root``, an empty cache, fresh budgets, turns and model workers; none
    left after."""
    monkeypatch.setenv(HOSTED_ENV, "1")
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(ROOTS_ENV, str(root))
    monkeypatch.setenv("HEADFORMS_THREADS", "1")
    for name in (ALLOWLIST_ENV, MEMORY_ENV, MODELS_MEMORY_ENV, MODEL_IDLE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(api, "hosting", api.Hosting())
    yield root
    pids = api.hosting.model_workers.pids()
    api.hosting.model_workers.stop_all()
    assert not api.hosting.runs.in_flight()
    assert all(gone(pid) for pid in pids), "a model worker outlived its test"
