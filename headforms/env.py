"""How the environment and sizes are read and written back to users: one rule each."""

from __future__ import annotations

import os

TRUE_WORDS = ("1", "true", "yes", "on")
"""Values of a switch variable that turn it on (case and surrounding blanks ignored)."""


def env_flag(*names: str) -> bool:
    """Whether the first of ``names`` that is set and not empty is on (:data:`TRUE_WORDS`)."""
    for name in names:
        value = os.environ.get(name, "")
        if value.strip():
            return value.strip().lower() in TRUE_WORDS
    return False


def human_bytes(n: float) -> str:
    """``2 GiB``, ``512.5 MiB``, ``100 bytes``: a size as a visitor reads it in a message."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}".replace(".0 ", " ")
    return f"{int(n)} bytes"
