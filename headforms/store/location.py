"""Where the cache lives: ``$HEADFORMS_CACHE_DIR``, else ``cache/`` of a source checkout, else
the user's cache directory (``$XDG_CACHE_HOME/headforms``, default ``~/.cache/headforms``)."""

from __future__ import annotations

import os
from pathlib import Path

from ..settings import settings

_CHECKOUT_CACHE = Path(__file__).resolve().parents[2] / "cache"
"""``cache/`` next to the package in a source checkout (the repository ships it, empty)."""


def cache_dir() -> Path:
    """The cache directory (created on first use)."""
    configured = settings().cache_dir
    if configured is not None:
        path = configured
    elif _CHECKOUT_CACHE.is_dir():
        path = _CHECKOUT_CACHE
    else:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        path = Path(base) / "headforms"
    path.mkdir(parents=True, exist_ok=True)
    return path


DEMO_VERSION = 2
"""The demo's recipe version (:mod:`headforms.demo`): a new recipe, a new folder."""
DEMO_SEED = 0
"""The seed of the demo the dashboard offers and ``demo:`` names."""


def demo_directory(seed: int = DEMO_SEED) -> Path:
    """Where the demo of ``seed`` lives: ``<cache>/demo/v<version>-seed<seed>`` (built or
    not). What a ``demo:`` spec names (:mod:`headforms.sources.specs`) lies inside it."""
    return cache_dir() / "demo" / f"v{DEMO_VERSION}-seed{seed}"
