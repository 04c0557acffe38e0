"""How a computation says how far it is: the one progress callback of the library, the command
line and the dashboard (:data:`Progress`)."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int, str], None]
"""``progress(done, total, message)``: ``done`` of ``total`` steps (layers, passes; ``0`` of
``1`` while a step has no count, as a model loads) and what the computation does now."""


def saying(progress: Progress | None, message: str, done: int = 0, total: int = 1) -> None:
    """Report ``message`` (at ``done`` of ``total``) to ``progress`` when there is one."""
    if progress is not None:
        progress(done, total, message)
