"""The dashboard's real server for tests: ``scripts/start.sh`` on a free loopback port, waited
for through its health endpoint and stopped with its whole process group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from browser_diagnostics import server_log

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (never a fixed one)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Wait until the server answers ``ok`` on /_stcore/health (fails if it exits or times out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"server exited with {proc.returncode}"
        try:
            url = f"http://127.0.0.1:{port}/_stcore/health"
            if urllib.request.urlopen(url, timeout=2).read() == b"ok":
                return
        except OSError:
            time.sleep(0.25)
    raise AssertionError(f"no healthy server on port {port} within {timeout} s")


def start_server(port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """scripts/start.sh on loopback (its own process group, so that it can be stopped whole)."""
    env = {**env, "HOST": "127.0.0.1", "PORT": str(port), "VENV": str(REPO / ".venv")}
    with log.open("wb") as fh:
        return subprocess.Popen(
            ["bash", str(REPO / "scripts" / "start.sh")],
            cwd=REPO,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server's process group (SIGTERM, then SIGKILL)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


@contextmanager
def serving(
    port: int, env: dict[str, str], log: Path, timeout: float = 120
) -> Iterator[subprocess.Popen[bytes]]:
    """:func:`start_server`, healthy within ``timeout`` s, stopped whole when the block ends."""
    proc = start_server(port, env, log)
    try:
        wait_healthy(port, proc, timeout)
        with server_log(log):  # a failed browser test shows its tail
            yield proc
    finally:
        stop_server(proc)
