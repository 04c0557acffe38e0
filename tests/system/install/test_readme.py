"""The README's quick start, executed (issue 39.1: every command of its command-line block failed,
``make run`` made no ``.venv/bin/headforms``): in a fresh copy of the repository's files,
installed the README's way (``make run``, which installs into ``.venv`` and starts the
dashboard), every command line of the quick start runs and succeeds on the bundled models: the
dashboard (``make run`` and its alternative ``headforms serve``) answers, each line of the
command-line block exits 0 and writes its file, and the library block runs. Only the Docker
lines are left to the image test (tests/system/image/test_image.py builds and runs the image),
and the Trainer snippet, an excerpt of a user's training script, to the callback's tests.

The lines are read from the README itself, so a line added there is run here. No time is
asserted (the README's options keep each command under a minute on a quiet machine; the
durations are printed with ``-s``).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from repo import REPO
from servers import free_port

pytestmark = pytest.mark.package  # a fresh install from the package registry, minutes

INSTALL_S = 3600  # the install's pip downloads, on a shared machine
COMMAND_S = 900  # a hang guard, not a speed check

README = REPO / "README.md"


def quick_start() -> str:
    """The README's "Quick start" section."""
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Quick start")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def indented_lines(section: str) -> list[str]:
    """The lines of the section's indented code blocks (a continued line joined; an indented
    line inside a fenced block is that block's)."""
    unfenced = re.sub(r"^```.*?^```", "", section, flags=re.DOTALL | re.MULTILINE)
    lines = [line[4:] for line in unfenced.splitlines() if line.startswith("    ")]
    joined: list[str] = []
    for line in lines:
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1].rstrip() + " " + line.strip()
        else:
            joined.append(line.strip())
    return joined


def command_lines() -> list[str]:
    """Every command of the quick start but Docker's: each line's command, and an alternative
    its comment offers (``# or: CMD``)."""
    found = []
    for line in indented_lines(quick_start()):
        command, _, comment = line.partition("#")
        if command.strip().startswith("docker "):
            continue
        found.append(command.strip())
        alternative = re.match(r"\s*or:\s*(\S.*)$", comment)
        if alternative:
            found.append(alternative.group(1).strip())
    return found


def library_block() -> str:
    """The code of "The library" (the training snippet after it is an excerpt of a user's own
    training script, its model and data theirs: tests/integration/integrations runs it)."""
    section = quick_start().split("### The library", 1)[1]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0]


def test_the_quick_start_is_read_whole() -> None:
    """What the test runs: the dashboard's two ways, a dozen commands, the library block."""
    lines = command_lines()
    assert lines[0] == "make run" and lines[1].startswith(".venv/bin/headforms serve")
    assert sum(line.startswith(".venv/bin/headforms ") for line in lines) >= 12
    assert "from headforms import analyze" in library_block()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's files (as a clone has them) in a fresh folder, nothing installed."""
    root = tmp_path_factory.mktemp("readme") / "headforms"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = REPO / name.decode()
        if source.is_file():
            target = root / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return root


def environment() -> dict[str, str]:
    """A user's shell: the checkout's own cache (no test cache), no hub."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HEADFORMS_CACHE_DIR")}
    env.update(HF_HUB_OFFLINE="1", HOST="127.0.0.1")
    return env


def serve_until_healthy(command: list[str], cwd: Path, env: dict, port: int, timeout: float):
    """Run ``command`` in its own process group until its server answers /_stcore/health, then
    stop it; the seconds it took."""
    began = time.monotonic()
    log = (cwd / f"serve-{port}.log").open("wb")
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        while True:
            assert process.poll() is None, (cwd / f"serve-{port}.log").read_text()[-3000:]
            try:
                url = f"http://127.0.0.1:{port}/_stcore/health"
                if urllib.request.urlopen(url, timeout=2).read() == b"ok":
                    return time.monotonic() - began
            except OSError:
                pass
            assert time.monotonic() - began < timeout, f"{command} never served"
            time.sleep(1)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def installed(checkout: Path) -> Path:
    """``make run`` in the checkout: it installs, then serves the dashboard (stopped once it
    answers); the checkout, installed."""
    (line,) = [line for line in command_lines() if line.startswith("make run")]
    port = free_port()
    env = {**environment(), "PORT": str(port)}
    took = serve_until_healthy(shlex.split(line), checkout, env, port, INSTALL_S)
    print(f"\n{line}: installed and serving after {took:.0f} s")
    return checkout


def test_make_run_makes_headforms_a_command_of_the_environment(installed: Path) -> None:
    command = installed / ".venv" / "bin" / "headforms"
    assert command.is_file() and os.access(command, os.X_OK)
    version = subprocess.run(
        [str(command), "models"], cwd=installed, env=environment(), capture_output=True,
        text=True, timeout=COMMAND_S,
    )  # fmt: skip
    assert version.returncode == 0 and "smollm2-135m" in version.stdout


def test_every_command_line_of_the_quick_start_runs(installed: Path) -> None:
    env = environment()
    for line in command_lines():
        if line.startswith("make run"):
            continue  # the fixture ran it
        argv = shlex.split(line)
        if argv[1:2] == ["serve"]:
            port = free_port()
            argv[argv.index("--port") + 1] = str(port)  # the README's 8501 may be taken
            took = serve_until_healthy(argv, installed, env, port, COMMAND_S)
        else:
            began = time.monotonic()
            run = subprocess.run(
                argv, cwd=installed, env=env, capture_output=True, text=True, timeout=COMMAND_S
            )
            took = time.monotonic() - began
            assert run.returncode == 0, f"{line}\n{run.stderr[-3000:]}"
            for option in ("--out", "--html"):
                if option in argv:
                    written = installed / argv[argv.index(option) + 1]
                    if written.is_dir():  # a folder of tables (study)
                        assert any(written.iterdir()), line
                    else:
                        assert written.is_file() and written.stat().st_size > 0, line
        print(f"{took:6.1f} s  {line}")


def test_the_library_block_runs(installed: Path) -> None:
    run = subprocess.run(
        [str(installed / ".venv" / "bin" / "python"), "-c", library_block()],
        cwd=installed,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=COMMAND_S,
    )
    assert run.returncode == 0, run.stderr[-3000:]
