"""`pip install .` gives a working `headforms` command: analyze, models and serve (the dashboard
files are installed with the library), run from outside the repository.

The wheel is built from the project's files and installed into a fresh virtual environment whose
dependencies come from the project's own environment (a ``.pth`` file), so the test needs no
download; ``importlib.metadata`` then checks that every declared dependency is satisfied there.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
from repo import REPO

pytestmark = pytest.mark.package  # builds the wheel and installs it into a fresh venv
IGNORED = (
    ".git",
    ".venv",
    "cache",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    "node_modules",
    "static",
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A wheel of the project installed in a fresh venv; returns its paths."""
    root = tmp_path_factory.mktemp("package")
    wheels = root / "wheels"
    source = root / "source"  # a copy: building writes build/ and *.egg-info beside the sources
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*IGNORED))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
        timeout=600,
        cwd=root,
    )
    (wheel,) = wheels.glob("headforms-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    deps = next(p for p in map(Path, sys.path) if p.name == "site-packages" and p.is_dir())
    (site / "_project_dependencies.pth").write_text(str(deps) + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--no-deps",
            "-q",
            str(wheel),
        ],
        check=True,
        timeout=600,
        cwd=root,
    )
    return {"root": root, "wheel": wheel, "venv": venv, "bin": venv / "bin" / "headforms"}


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "HEADFORMS_CACHE_DIR": str(root / "cache")}


def test_the_wheel_holds_the_library_and_the_dashboard_only(installed: dict[str, Path]) -> None:
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"headforms", "headforms_dashboard", "headforms-0.2.0.dist-info"}
    for needed in (
        "headforms/engine.py",
        "headforms/sources/hub.py",
        "headforms/readers/gguf.py",
        "headforms_dashboard/app.py",
        "headforms_dashboard/server.py",
        "headforms/hosted/runs.py",
        "headforms_dashboard/ui/plot.py",
        "headforms_dashboard/pages/simplex.py",
        "headforms_dashboard/.streamlit/config.toml",
    ):
        assert needed in names


CHECK_REQUIREMENTS = """
from importlib import metadata
from packaging.requirements import Requirement
core = [Requirement(r) for r in metadata.requires("headforms") or [] if ";" not in r]
assert core, "no dependencies declared"
for req in core:
    version = metadata.version(req.name)
    assert req.specifier.contains(version, prereleases=True), f"{req} vs {version}"
print(len(core))
"""


def test_every_declared_dependency_is_satisfied(installed: dict[str, Path]) -> None:
    """In the installed environment, the ranges declared in pyproject.toml admit the versions
    the project pins and tests (what ``pip check`` verifies)."""
    run = subprocess.run(
        [str(installed["venv"] / "bin" / "python"), "-c", CHECK_REQUIREMENTS],
        cwd=installed["root"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert int(run.stdout) >= 10


def test_installed_command_analyzes_from_outside_the_repository(
    installed: dict[str, Path],
) -> None:
    root = installed["root"]
    run = subprocess.run(
        [str(installed["bin"]), "analyze", "minilm-l6", "--quiet"],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert "6 layers x 12 heads" in run.stdout.splitlines()[0]
    models = subprocess.run(
        [str(installed["bin"]), "models"],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert models.returncode == 0 and "smollm2-135m" in models.stdout
    bad = subprocess.run(
        [str(installed["bin"]), "analyze", str(root / "nowhere")],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: no such file or directory")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_installed_serve_runs_the_dashboard(installed: dict[str, Path]) -> None:
    """The installed ``headforms serve`` answers a browser session: the Simplex page of a
    bundled model renders with its plot, no exception and no error."""
    from streamlit_client import Session

    root = installed["root"]
    port = _free_port()
    proc = subprocess.Popen(
        [str(installed["bin"]), "serve", "--port", str(port)],
        cwd=root,
        env=_env(root),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            try:
                url = f"http://127.0.0.1:{port}/_stcore/health"
                if urllib.request.urlopen(url, timeout=2).read() == b"ok":
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the dashboard never became healthy"
            time.sleep(0.3)
        with Session(port, timeout=600) as session:  # one browser session, a real script run
            run = session.run("model=minilm-l6")
        assert run.status == "FINISHED_SUCCESSFULLY", run.status
        assert not run.exceptions and not run.errors, run.messages
        assert "Profiles on the simplex" in run.texts  # the Simplex page's title
        assert "simplex" in run.components  # and its plot
    finally:
        proc.terminate()
        proc.wait(timeout=30)
