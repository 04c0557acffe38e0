"""The one cache key function.

A key names a result by everything it depends on: the weights (their fingerprint, or the
shapes of a Gaussian baseline), the options, and :func:`code_version`, a hash of the source of
every module that computes or encodes results. Any change to that code changes every key, so
entries computed by older code are never served (they age out of the store).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

PACKAGE_ROOT = Path(__file__).resolve().parents[1]

RESULT_CODE = (
    "architectures.py",
    "forms.py",
    "baseline.py",
    "engine.py",
    "models",
    "readers",
    "results.py",
    "store/results.py",
)
"""Paths (relative to the package) of the code that computes or encodes cached results."""


@cache
def code_version() -> str:
    """SHA-256 of the source of :data:`RESULT_CODE` (every ``.py`` file, in path order)."""
    digest = hashlib.sha256()
    files: list[Path] = []
    for entry in RESULT_CODE:
        path = PACKAGE_ROOT / entry
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    for path in files:
        digest.update(path.relative_to(PACKAGE_ROOT).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_key(subject: str, options: dict[str, Any]) -> str:
    """The key of a result: ``subject`` (a weight fingerprint, or what else the result is of),
    the options that change it, and the code version."""
    blob = json.dumps(
        {"code": code_version(), "subject": subject, "options": options},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode()).hexdigest()
