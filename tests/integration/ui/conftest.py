"""What the gateway's integration tests share: each test's own result store, one thread."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEADFORMS_THREADS", "1")
