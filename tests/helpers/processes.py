"""Whether a process has gone: what the tests of contained workers wait for."""

from __future__ import annotations

import time

import psutil


def gone(pid: int, timeout: float = 60.0) -> bool:
    """Whether process ``pid`` has exited (or is a zombie) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False
