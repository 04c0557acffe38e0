"""The Docker image's recipe and start command, tested without a Docker engine.

CI has no Docker engine, so this checks what can be checked here: the Dockerfile installs
through the same ``scripts/install.sh`` as ``make`` and CI, runs as a non-root user, keeps the
cache in a volume, exposes 8501 and health-checks ``/_stcore/health``; both scripts parse;
``scripts/start.sh`` (the image's CMD) passes the documented flags, and really serves the app
on a loopback port, where the image's own HEALTHCHECK command succeeds. Running
``scripts/install.sh`` into a fresh venv is not done here: it reinstalls torch (minutes).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile as (INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), " ".join(rest.split())))
    return out


def args_of(name: str) -> list[str]:
    """Arguments of every instruction called ``name``."""
    return [rest for word, rest in instructions() if word == name]


def test_image_is_slim_python_and_installs_with_the_shared_script() -> None:
    """One install script for everyone: the image runs scripts/install.sh, as make and CI do."""
    (base,) = args_of("FROM")
    assert re.fullmatch(r"python:3\.1[1-9]-slim(-\w+)?", base), base
    assert any("scripts/install.sh" in copy for copy in args_of("COPY"))
    runs = args_of("RUN")
    installs = [r for r in runs if "scripts/install.sh" in r]
    assert len(installs) == 1 and "--dev" not in installs[0]
    assert "download.pytorch.org/whl/cpu" in " ".join(args_of("ARG"))  # CPU torch, not CUDA
    makefile = (REPO / "Makefile").read_text()
    assert "scripts/install.sh" in makefile
    assert "make test" in (REPO / ".ci" / "run").read_text()
    assert re.search(r"^test: install-dev", makefile, re.MULTILINE)


def test_image_runs_as_non_root_with_the_cache_in_a_volume() -> None:
    """A non-root USER before CMD, VOLUME /app/cache (= HEADFORMS_CACHE_DIR), EXPOSE 8501."""
    words = [word for word, _ in instructions()]
    users = args_of("USER")
    assert users and users[-1] not in ("root", "0")
    assert words.index("USER") < words.index("CMD")
    assert any(re.search(r"useradd .*\b" + users[-1] + r"\b", r) for r in args_of("RUN"))
    assert args_of("VOLUME") == ["/app/cache"]
    # the app cannot write /app at run time: static/'s plotly.js is generated before USER
    steps = instructions()
    static = steps.index(("RUN", "python -m ui.static"))
    assert steps.index(("COPY", ". .")) < static < words.index("USER")
    assert "HEADFORMS_CACHE_DIR=/app/cache" in " ".join(args_of("ENV"))
    assert args_of("EXPOSE") == ["8501"]
    assert args_of("CMD") == ['["scripts/start.sh"]']
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", ".venv", "cache"} <= set(ignored)


def healthcheck_command() -> str:
    """The shell command of the image's HEALTHCHECK."""
    (check,) = args_of("HEALTHCHECK")
    assert "/_stcore/health" in check
    return check.partition(" CMD ")[2]


def test_readme_documents_the_run_command() -> None:
    """The README gives the documented docker run line."""
    readme = (REPO / "README.md").read_text()
    assert "docker run -p 8501:8501 -v headforms-cache:/app/cache" in readme


@pytest.mark.parametrize("script", ["install.sh", "start.sh"])
def test_scripts_parse(script: str) -> None:
    """``bash -n`` accepts both scripts, and both are executable."""
    path = REPO / "scripts" / script
    subprocess.run(["bash", "-n", str(path)], check=True, timeout=30)
    assert os.access(path, os.X_OK)


def test_start_command_defaults(tmp_path: Path) -> None:
    """Without a venv, start.sh runs the streamlit on PATH: headless, 0.0.0.0:8501 by default."""
    fake = tmp_path / "bin" / "streamlit"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    fake.chmod(0o755)
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "VENV": str(tmp_path / "no-venv")}
    argv = subprocess.run(
        ["bash", str(REPO / "scripts" / "start.sh")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.split()
    assert argv[:2] == ["run", "app.py"]
    assert "--server.headless=true" in argv
    assert "--server.address=0.0.0.0" in argv and "--server.port=8501" in argv
    env.update(HOST="127.0.0.1", PORT="9999")
    argv = subprocess.run(
        ["bash", str(REPO / "scripts" / "start.sh"), "--theme.base=dark"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.split()
    assert "--server.address=127.0.0.1" in argv and "--server.port=9999" in argv
    assert argv[-1] == "--theme.base=dark"


def test_start_script_serves_and_the_healthcheck_passes(tmp_path: Path) -> None:
    """start.sh really serves the app; the image's HEALTHCHECK passes, and fails once stopped."""
    from test_concurrency import _free_port, _wait_healthy, start_server, stop_server

    port = _free_port()
    env = {**os.environ, "HEADFORMS_HOSTED": "1", "HEADFORMS_THREADS": "1"}
    check_env = {**env, "PORT": str(port), "PATH": f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}"}
    check = ["sh", "-c", healthcheck_command()]
    proc = start_server(port, env, tmp_path / "streamlit.log")
    try:
        _wait_healthy(port, proc, timeout=90)
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).read()
        assert b"<html" in page.lower()
        assert subprocess.run(check, env=check_env, timeout=30).returncode == 0
    finally:
        stop_server(proc)
    assert proc.returncode in (0, -signal.SIGTERM)
    deadline = time.monotonic() + 10
    while subprocess.run(check, env=check_env, timeout=30).returncode == 0:
        assert time.monotonic() < deadline, "the health check still passes with no server"
        time.sleep(0.2)
    assert shlex.split(healthcheck_command())[0] == "python"


def test_image_static_step_generates_plotly_js(tmp_path: Path) -> None:
    """The image's `RUN python -m ui.static` really writes the plotly package's plotly.js
    bundle into static/ (a copy of the app's packages, so the repository's own static/ is not
    touched)."""
    import shutil
    import sys

    for package in ("ui", "headforms"):
        shutil.copytree(
            REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    subprocess.run(
        [sys.executable, "-m", "ui.static"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=120,
    )
    (written,) = (tmp_path / "static").glob("plotly-*-full-*.min.js")
    from plotly.offline import get_plotlyjs

    assert written.read_bytes() == get_plotlyjs().encode()
