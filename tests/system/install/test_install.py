"""The install, start and health scripts, tested without a Docker engine.

``scripts/install.sh`` takes torch from the one source it is given (an unreachable CPU index
fails the install, never a fall-back to PyPI) and refuses a CUDA torch; ``scripts/start.sh``
(the image's CMD) passes the documented flags, stops with one line when the cache cannot be
written, and really serves the app on a loopback port, where ``scripts/healthcheck.py`` (the
image's HEALTHCHECK) passes, and fails once the server is gone or the cache is unwritable.
The image built from them is run in tests/system/image/test_image.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
from repo import REPO


@pytest.mark.parametrize("script", ["install.sh", "start.sh", "build-image.sh"])
def test_scripts_parse(script: str) -> None:
    """``bash -n`` accepts the scripts, and they are executable."""
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
    assert argv[:2] == ["run", "server.py"]  # app.py behind the HTTP rules
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


def healthcheck(env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run scripts/healthcheck.py (the image's HEALTHCHECK) with ``env``."""
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "healthcheck.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_start_script_serves_and_the_healthcheck_passes(tmp_path: Path) -> None:
    """start.sh really serves the app; healthcheck.py passes, and fails with one line when the
    cache is not writable or once the server is stopped."""
    from servers import free_port, start_server, stop_server, wait_healthy

    port = free_port()
    env = {**os.environ, "HEADFORMS_HOSTED": "1", "HEADFORMS_THREADS": "1"}
    check_env = {**env, "PORT": str(port)}
    proc = start_server(port, env, tmp_path / "streamlit.log")
    try:
        wait_healthy(port, proc, timeout=90)
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).read()
        assert b"<html" in page.lower()
        healthy = healthcheck(check_env)
        assert healthy.returncode == 0 and healthy.stdout == ""
        unwritable = healthcheck({**check_env, "HEADFORMS_CACHE_DIR": "/dev/null/cache"})
        assert unwritable.returncode == 1
        assert unwritable.stdout.splitlines() == [
            f"unhealthy: the cache directory /dev/null/cache is not writable by uid {os.getuid()}"
        ]
    finally:
        stop_server(proc)
    assert proc.returncode in (0, -signal.SIGTERM)
    deadline = time.monotonic() + 10
    while (gone := healthcheck(check_env)).returncode == 0:
        assert time.monotonic() < deadline, "the health check still passes with no server"
        time.sleep(0.2)
    assert gone.returncode == 1 and len(gone.stdout.splitlines()) == 1
    assert gone.stdout.startswith("unhealthy: no answer from http://127.0.0.1:")


def test_start_script_stops_on_an_unwritable_cache(tmp_path: Path) -> None:
    """With a cache directory it cannot write, start.sh exits 1 with one line, serving nothing."""
    ran = tmp_path / "streamlit-ran"
    fake = tmp_path / "bin" / "streamlit"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\ntouch {ran}\n")
    fake.chmod(0o755)
    env = {
        "PATH": f"{fake.parent}:/usr/bin:/bin",
        "VENV": str(tmp_path / "no-venv"),
        "HEADFORMS_CACHE_DIR": "/dev/null/cache",
    }
    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "start.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1 and not ran.exists()
    (line,) = result.stderr.splitlines()
    assert line.startswith("headforms: cannot write the cache directory /dev/null/cache as uid")
    writable = {**env, "HEADFORMS_CACHE_DIR": str(tmp_path / "cache")}
    started = subprocess.run(
        ["bash", str(REPO / "scripts" / "start.sh")], env=writable, timeout=30, check=False
    )
    assert started.returncode == 0 and ran.exists()
    assert list((tmp_path / "cache").iterdir()) == []  # the write probe is removed


def run_install(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """scripts/install.sh into a fresh venv under ``tmp_path``, offline (no index for pip's
    own upgrade); ``env`` names the torch source."""
    full = {
        **os.environ,
        "VENV": str(tmp_path / "venv"),
        "PYTHON": sys.executable,
        "PIP_NO_INDEX": "1",
        **env,
    }
    return subprocess.run(
        ["bash", str(REPO / "scripts" / "install.sh")],
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def has_torch(venv: Path) -> bool:
    """Whether a torch distribution is installed in ``venv``."""
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
    return subprocess.run([venv / "bin" / "python", "-c", probe], timeout=60).returncode == 0


@pytest.mark.package
@pytest.mark.parametrize("configured_by", ["PIP_FIND_LINKS", "PIP_CONFIG_FILE"])
def test_install_takes_torch_from_the_named_index_only(tmp_path: Path, configured_by: str) -> None:
    """An unreachable torch index fails the install: pip's configured find-links (by
    PIP_FIND_LINKS, or in the pip.conf PIP_CONFIG_FILE names), here a folder holding a CPU torch
    wheel of the pinned version, are not used instead, and no torch is installed."""
    wheels = tmp_path / "find-links"
    fake_torch_wheel(wheels, pinned_torch(), "None")
    if configured_by == "PIP_FIND_LINKS":
        configured = {"PIP_FIND_LINKS": str(wheels)}
    else:
        conf = tmp_path / "pip.conf"
        conf.write_text(f"[global]\nfind-links = {wheels}\n")
        configured = {"PIP_CONFIG_FILE": str(conf)}
    result = run_install(tmp_path, TORCH_INDEX_URL="http://127.0.0.1:9/simple", **configured)
    assert result.returncode != 0
    assert "installing torch==" in result.stderr and "127.0.0.1:9" in result.stderr
    assert not has_torch(tmp_path / "venv")


def pinned_torch() -> str:
    """The torch version requirements.txt pins."""
    return next(
        line.split("==")[1].strip()
        for line in (REPO / "requirements.txt").read_text().splitlines()
        if line.startswith("torch==")
    )


def fake_torch_wheel(folder: Path, version: str, cuda: str) -> Path:
    """A minimal wheel of a package named torch whose torch/version.py says ``cuda`` (a string,
    or "None" for a CPU build)."""
    folder.mkdir(parents=True)
    wheel = folder / f"torch-{version}-py3-none-any.whl"
    info = f"torch-{version}.dist-info"
    files = {
        "torch/__init__.py": "",
        "torch/version.py": f"__version__ = {version!r}\n"
        + ("cuda = None\n" if cuda == "None" else f"cuda = {cuda!r}\n"),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr(
            f"{info}/RECORD", "".join(f"{n},,\n" for n in files) + f"{info}/RECORD,,\n"
        )
    return wheel


@pytest.mark.package
def test_install_refuses_a_cuda_torch(tmp_path: Path) -> None:
    """A torch wheel handed in that is a CUDA build stops the install right after torch."""
    pinned = pinned_torch()
    wheels = tmp_path / "wheels"
    fake_torch_wheel(wheels, f"{pinned}+cu128", "12.8")
    result = run_install(tmp_path, TORCH_WHEELS=str(wheels))
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: torch {pinned}+cu128 is a CUDA build (CUDA 12.8); this install needs the CPU build"
    )
    assert has_torch(tmp_path / "venv")  # it was installed, then refused before anything else
    site = next((tmp_path / "venv" / "lib").glob("python3*/site-packages"))
    assert not list(site.glob("numpy*"))


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
