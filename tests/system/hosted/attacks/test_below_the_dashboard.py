"""Hosted mode tried as an attacker would, below the dashboard (issue 9): lying configs (one
line, before work); size-limit bypasses through a loopback fake hub (a stray small safetensors
beside a big ``.bin``, weights in a sub-folder, a hub that declares less than it streams,
undeclared sizes); slow or blocking files in an allowed root (FIFOs, huge GGUF counts, a GGUF
slow to parse); the contained worker (memory and wall-clock limits, cancellation, a dead server,
one worker for concurrent requests, the server-wide limit, the server's own memory).

Time limits in these tests are hang guards (a thread joined with a generous timeout), never
speed assertions; the latencies are measured by ``benchmarks/bench_load.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import psutil
import pytest
import tiny_models
from hosted_attacks import (
    HANG_GUARD,
    SLOW_LIMIT,
    answer,
    cancel_all,
    nothing_stored,
    one_line,
    rss,
    worker_pids,
)
from processes import gone
from repo import REPO

from headforms import hosted, sources
from headforms.columns import ALL_SPECTRA
from headforms.errors import CorruptFileError, HeadformsError, LimitError, NotAllowedError
from headforms.hosted import api, limits, process
from headforms.hosted.messages import OutcomeKind
from headforms.options import AnalysisOptions
from headforms.settings import (
    ALLOWLIST_ENV,
    CONCURRENT_ENV,
    MAX_BYTES_ENV,
    MEMORY_ENV,
    NICE_ENV,
    QUEUE_ENV,
    SECONDS_ENV,
    VISITOR_ANALYSES_ENV,
    VISITOR_CONCURRENT_ENV,
    VISITOR_SAMPLES_ENV,
    WINDOW_ENV,
)
from headforms.store import key_lock, metrics_key
from ui.gateway import Analysis, HostedGateway
from ui.gateway import hosted as hosted_gateway

# --- lying configs ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        ("lying-layers", r"declares 500 layers but the checkpoint has query weights for 2"),
        ("absurd-layers", r"more than any supported model"),
        ("absurd-heads", r"more than any supported model"),
        ("lying-heads", r"has shape \(\d+, \d+\), but the config implies \(1024, 1024\)"),
    ],
)
def test_lying_configs_are_one_line_and_cache_nothing(
    hosted_env: dict[str, Any], name: str, pattern: str
) -> None:
    """A config declaring absurd shapes, or more layers than the tensors present: one line from
    the contained worker, nothing stored, the server's memory unchanged (before main's fixes the
    engine queued one task per declared layer and grew by ~90 MB/s)."""
    spec = str(hosted_env["root"] / name)
    before = rss()
    _, error = answer(lambda: hosted.analyze(spec, spectra=ALL_SPECTRA))
    one_line(error, CorruptFileError, pattern)
    assert rss() - before < 100 * 2**20
    assert nothing_stored(spec)


# --- size-limit bypasses through the fake hub ---------------------------------------------------


@pytest.fixture
def hub(hosted_env: dict[str, Any], fake_hub: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The fake hub with every hub id allowed."""
    monkeypatch.setenv(ALLOWLIST_ENV, "*")
    return fake_hub


def _partials(hub_cache: Path) -> list[Path]:
    return sorted(hub_cache.rglob("*.incomplete")) if hub_cache.exists() else []


def test_a_stray_safetensors_beside_a_big_bin_does_not_hide_it(
    hub: Any, tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The .bin is what would be read, so the .bin is what is measured: refused, not fetched."""
    from fake_hub import checkpoint_files

    files = checkpoint_files(tiny_dir, "bin")
    files["adapter.safetensors"] = b"\0" * 64  # small, and not a weight file the engine reads
    hub.add_repo("evil/stray").commit(files)
    monkeypatch.setenv(MAX_BYTES_ENV, str(len(files["pytorch_model.bin"]) // 2))
    _, error = answer(lambda: hosted.analyze("evil/stray"))
    one_line(error, NotAllowedError, r"more than this server's limit")
    assert hub.bytes_sent("evil/stray", "pytorch_model.bin") == 0


@pytest.mark.slow
def test_weights_in_a_sub_folder_are_not_read_nor_counted(
    hub: Any, tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sub-folder's big file is neither measured nor downloaded; an index naming it is refused."""
    from fake_hub import checkpoint_files

    files = checkpoint_files(tiny_dir)
    files["sub/model.safetensors"] = b"\0" * (4 * 2**20)
    hub.add_repo("evil/subfolder").commit(files)
    monkeypatch.setenv(MAX_BYTES_ENV, str(len(files["model.safetensors"])))
    result, error = answer(lambda: hosted.analyze("evil/subfolder"))
    assert error is None, error
    assert len(result.heads) == tiny_models.LAYERS * tiny_models.H
    assert hub.bytes_sent("evil/subfolder", "sub/model.safetensors") == 0
    index = {"weight_map": {"model.layers.0.self_attn.q_proj.weight": "sub/model.safetensors"}}
    hub.add_repo("evil/sub-index").commit(
        {**files, "model.safetensors.index.json": json.dumps(index).encode()}
    )
    _, error = answer(lambda: hosted.analyze("evil/sub-index"))
    one_line(error, CorruptFileError, r"not a valid shard index")


def test_a_hub_declaring_less_than_it_streams_is_stopped_at_the_budget(
    hub: Any, tiny_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The hub declares 1 KiB and streams the whole file: the download stops at the server's
    limit, its partial file is removed, and nothing is cached."""
    from fake_hub import checkpoint_files

    files = checkpoint_files(tiny_dir)
    repo = hub.add_repo("evil/liar")
    repo.commit(files)
    repo.declared_sizes["model.safetensors"] = 1024
    monkeypatch.setenv(MAX_BYTES_ENV, str(len(files["model.safetensors"]) // 3))
    _, error = answer(lambda: hosted.analyze("evil/liar"))
    one_line(error, NotAllowedError, r"went past this server's limit .*partial file removed")
    assert hub.bytes_sent("evil/liar", "model.safetensors") > 0  # stopped mid-transfer
    assert _partials(tmp_path / "hf-hub-cache") == []
    assert nothing_stored("evil/liar")


def test_an_undeclared_size_is_refused(hub: Any, tiny_dir: Path) -> None:
    """No declared size: nothing can be checked, so nothing is downloaded (fails closed)."""
    from fake_hub import checkpoint_files

    repo = hub.add_repo("evil/sizeless")
    repo.commit(checkpoint_files(tiny_dir))
    repo.declared_sizes["model.safetensors"] = None
    _, error = answer(lambda: hosted.analyze("evil/sizeless"))
    one_line(error, NotAllowedError, r"model\.safetensors is not declared")
    assert hub.bytes_sent("evil/sizeless", "model.safetensors") == 0


# --- slow and blocking files --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        ("fifo-model", r"model\.safetensors is not a regular file \(a FIFO\)"),
        ("fifo.gguf", r"fifo\.gguf is not a regular file \(a FIFO\)"),
        ("counts.gguf", r"past the end of the file|more than the file can hold"),
    ],
)
def test_blocking_and_lying_files_answer_with_one_line(
    hosted_env: dict[str, Any], name: str, pattern: str
) -> None:
    """A FIFO named like a model file never blocks a worker; a GGUF claiming 2^60 strings is
    refused before any loop."""
    spec = str(hosted_env["root"] / name)
    _, error = answer(lambda: hosted.analyze(spec))
    one_line(error, HeadformsError, pattern)


def test_a_slow_file_is_stopped_at_the_wall_clock_limit(
    hosted_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GGUF whose header takes many seconds to parse: the worker is killed at the limit with
    one line, and nothing is cached (before: a server thread busy for as long as it took)."""
    monkeypatch.setenv(SECONDS_ENV, SLOW_LIMIT)
    spec = str(hosted_env["root"] / "slow.gguf")
    _, error = answer(lambda: hosted.analyze(spec))
    one_line(error, LimitError, rf"took longer than this server's limit of {SLOW_LIMIT} s")
    assert nothing_stored(spec)


# --- the contained worker -----------------------------------------------------------------------


@pytest.mark.slow
def test_the_memory_limit_stops_an_analysis_and_spares_the_server(
    hosted_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real (if wide) model whose analysis needs ~1 GiB, with a 700 MiB limit: one line,
    nothing cached, and the server process did not grow."""
    monkeypatch.setenv(MEMORY_ENV, str(700 * 2**20))
    spec = str(hosted_env["root"] / "wide")
    before = rss()
    _, error = answer(lambda: hosted.analyze(spec))
    one_line(error, LimitError, r"needed more memory than this server's limit of 700 MiB")
    assert rss() - before < 100 * 2**20
    assert nothing_stored(spec)


@pytest.mark.slow
def test_a_bin_model_is_not_charged_its_file_size_against_the_memory_limit(
    hosted_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch maps a .bin privately (RLIMIT_DATA counts the whole mapping): a tiny model in a
    .bin padded to the memory limit itself is analysed, not refused as out of memory."""
    import torch
    from safetensors.torch import load_file

    limit = 384 * 2**20
    directory = hosted_env["root"] / "padded-bin"
    directory.mkdir()
    tiny = hosted_env["root"] / "tiny"
    shutil.copy(tiny / "config.json", directory / "config.json")
    state = load_file(str(tiny / "model.safetensors"))
    state["padding"] = torch.zeros(limit // 4)  # a tensor the analysis never reads
    torch.save(state, directory / "pytorch_model.bin")
    monkeypatch.setenv(MEMORY_ENV, str(limit))
    result, error = answer(lambda: hosted.analyze(str(directory)))
    assert error is None, error
    assert len(result.heads) == tiny_models.LAYERS * tiny_models.H


def _wait_for_worker(timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while not worker_pids():
        assert time.monotonic() < deadline, "no worker started"
        time.sleep(0.05)
    return worker_pids()[0]


class Left(Exception):
    """The visitor left (what a Streamlit stop raises in the waiting script)."""


def leave() -> None:
    """A ``check`` callback of a visitor who has gone."""
    raise Left


@contextlib.contextmanager
def blocked(spec: str) -> Iterator[None]:
    """Hold the store's lock of ``spec``'s analysis: a worker computing it waits, never ends."""
    located = sources.locate(spec)
    with key_lock(metrics_key(located.fingerprint, AnalysisOptions().key())):
        yield


def test_a_visitor_leaving_stops_the_worker(
    hosted_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """When its caller leaves (its ``check`` raises), a run's worker is killed: the slot is
    free again and nothing is cached (the gateway calls it so once nobody has waited for the
    job during its grace period)."""
    spec = str(hosted_env["root"] / "tiny")
    seen: list[Any] = []

    def check() -> None:
        seen.extend(api.hosting.runs.in_flight())
        raise Left

    with blocked(spec):
        _, error = answer(lambda: hosted.analyze(spec, check=check))
        assert isinstance(error, Left) and len(seen) == 1
        assert seen[0].done.wait(30), "the abandoned worker was not stopped"
    assert seen[0].outcome.kind is OutcomeKind.ABANDONED
    assert gone(seen[0].pid)
    assert nothing_stored(spec)


def analysis_of(spec: str, options: AnalysisOptions | None = None) -> Analysis:
    """The gateway's request for ``spec``'s analysis, located under the server's policy."""
    return Analysis(sources.locate(spec, hosted.policy_in_force()), options or AnalysisOptions())


def left(done: int, total: int, message: str) -> None:
    """A page's ``progress`` while its visitor has gone (a Streamlit stop raises there)."""
    raise Left


@pytest.mark.slow
def test_a_rerun_within_the_grace_period_keeps_the_worker(
    hosted_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A waiter that leaves and one that comes back at once share one worker to the end (the
    gateway's job, kept through its grace period)."""
    spec = str(hosted_env["root"] / "tiny")
    starts = _count_starts(monkeypatch)
    gateway = HostedGateway()
    with blocked(spec):
        _, error = answer(lambda: gateway.run(analysis_of(spec), left))
        assert isinstance(error, Left)
        back: dict[str, Any] = {}
        waiter = threading.Thread(
            target=lambda: back.update(out=answer(lambda: gateway.run(analysis_of(spec))))
        )
        waiter.start()
        time.sleep(hosted_gateway.ABANDON_GRACE + 1)  # past the grace period, still blocked
        assert len(worker_pids()) == 1
    waiter.join(HANG_GUARD + 10)
    result, error = back["out"]
    assert error is None, error
    assert len(starts) == 1
    assert len(result.heads) == tiny_models.LAYERS * tiny_models.H


def test_a_dead_server_leaves_no_worker(hosted_env: dict[str, Any], tmp_path: Path) -> None:
    """SIGKILL of the server process: its worker (which could never finish here) exits."""
    script = tmp_path / "server.py"
    script.write_text(
        "import sys, threading, time\n"
        "from headforms import hosted\n"
        "from headforms.hosted import api\n"
        "threading.Thread(target=hosted.analyze, args=(sys.argv[1],), daemon=True).start()\n"
        "while not api.hosting.runs.pids():\n"
        "    time.sleep(0.05)\n"
        "print(api.hosting.runs.pids()[0], flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    spec = str(hosted_env["root"] / "tiny")
    with blocked(spec):
        server = subprocess.Popen(
            [sys.executable, str(script), spec], env=env, stdout=subprocess.PIPE, text=True
        )
        try:
            assert server.stdout is not None
            worker = int(server.stdout.readline())
            assert psutil.pid_exists(worker)
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=30)
            assert gone(worker), "the worker outlived its server"
        finally:
            server.kill()
            server.wait(timeout=30)


def _count_starts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the pid of every worker started."""
    starts: list[int] = []
    real_start = process.start_worker

    def counting(*args: Any, **kwargs: Any) -> Any:
        out = real_start(*args, **kwargs)
        starts.append(out[0].pid)
        return out

    monkeypatch.setattr(process, "start_worker", counting)
    return starts


@pytest.mark.slow
def test_concurrent_requests_share_one_worker(
    hosted_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four requests for one uncached analysis at once (through the gateway, the one layer that
    shares a computation): one worker, four equal results."""
    spec = str(hosted_env["root"] / "tiny")
    starts = _count_starts(monkeypatch)
    barrier = threading.Barrier(4)
    results: list[Any] = []
    gateway = HostedGateway()

    def one() -> Any:
        barrier.wait(timeout=60)
        return gateway.run(analysis_of(spec, AnalysisOptions(spectra=ALL_SPECTRA)))

    threads = [threading.Thread(target=lambda: results.append(answer(one))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG_GUARD + 10)
    assert len(results) == 4 and all(error is None for _, error in results), results
    assert len(starts) == 1
    first = results[0][0].heads
    for result, _ in results[1:]:
        assert result.heads.equals(first)


def test_the_server_wide_limit_refuses_after_a_bounded_wait(
    hosted_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the one slot taken by a running worker, a new analysis waits its turn for at most
    HEADFORMS_QUEUE_SECONDS, then is refused with one line (it never ran: nothing spent); a
    request for the running one joins it (the gateway's job), and cancelling frees the slot."""
    monkeypatch.setenv(CONCURRENT_ENV, "1")
    monkeypatch.setenv(QUEUE_ENV, "1")
    spec = str(hosted_env["root"] / "tiny")
    first: dict[str, Any] = {}
    gateway = HostedGateway()
    with blocked(spec):
        runner = threading.Thread(
            target=lambda: first.update(out=answer(lambda: gateway.run(analysis_of(spec))))
        )
        runner.start()
        pid = _wait_for_worker()
        other = str(hosted_env["root"] / "wide")
        _, error = answer(lambda: hosted.analyze(other))
        one_line(
            error,
            LimitError,
            r"the server is busy: 1 analyses are running \(at most 1 at once, "
            r"HEADFORMS_ANALYSIS_CONCURRENT\) and none became free within 1 s "
            r"\(HEADFORMS_QUEUE_SECONDS\)",
        )
        assert api.hosting.budgets._starts[(hosted.LOCAL, "analyses")] == deque([ANY])
        _, error = answer(lambda: gateway.run(analysis_of(spec), left))
        assert isinstance(error, Left)  # it joined the running worker (no second slot needed)
        assert worker_pids() == [pid]
        assert cancel_all() == 1
        runner.join(HANG_GUARD)
    one_line(first["out"][1], LimitError, r"was cancelled; nothing was cached")
    assert gone(pid)
    assert nothing_stored(spec)


def test_the_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every limit has a default and an environment variable; nonsense values are refused."""
    documented = {  # the README's defaults, set explicitly: the same limits as leaving them unset
        MEMORY_ENV: str(2 * 2**30),
        SECONDS_ENV: "300",
        CONCURRENT_ENV: "2",
        VISITOR_ANALYSES_ENV: "12",
        VISITOR_SAMPLES_ENV: "20",
        NICE_ENV: "10",
        QUEUE_ENV: "60",
        VISITOR_CONCURRENT_ENV: "1",
        WINDOW_ENV: "3600",
    }
    for name in documented:
        monkeypatch.delenv(name, raising=False)
    unset = limits.Limits.from_env()
    for name, value in documented.items():
        monkeypatch.setenv(name, value)
    assert limits.Limits.from_env() == unset
    monkeypatch.setenv(MEMORY_ENV, str(2**28))
    monkeypatch.setenv(SECONDS_ENV, "7.5")
    monkeypatch.setenv(CONCURRENT_ENV, "3")
    assert limits.Limits.from_env().memory == 2**28
    assert limits.Limits.from_env().seconds == 7.5
    assert limits.Limits.from_env().concurrent == 3
    for bad in ("0", "-1", "nan", "inf", "lots"):
        monkeypatch.setenv(SECONDS_ENV, bad)
        with pytest.raises(LimitError, match="is not a positive number"):
            limits.Limits.from_env()
    monkeypatch.delenv(SECONDS_ENV)
    monkeypatch.setenv(VISITOR_ANALYSES_ENV, "2.5")
    with pytest.raises(LimitError, match="is not a whole number"):
        limits.Limits.from_env()
    monkeypatch.delenv(VISITOR_ANALYSES_ENV)
    monkeypatch.setenv(NICE_ENV, "0")
    assert limits.Limits.from_env().nice == 0
    for bad in ("20", "-1", "low"):
        monkeypatch.setenv(NICE_ENV, bad)
        with pytest.raises(LimitError, match="is not a niceness from 0 to 19"):
            limits.Limits.from_env()


def test_workers_run_below_the_server(hosted_env: dict[str, Any]) -> None:
    """A worker's niceness is the server's + HEADFORMS_ANALYSIS_NICE, in the server's scheduling
    group where the kernel groups sessions (autogroup): there a niceness ranks a process only
    within its group, so a worker in a session of its own would compete with the server as an
    equal, and one with its group niceness raised would starve behind every other session of
    the machine (benchmarks/bench_nice.py). Its own process group, killed whole: pages first."""
    spec = str(hosted_env["root"] / "tiny")
    expected = min(os.nice(0) + limits.DEFAULT_NICE, 19)
    server_group = Path("/proc/self/autogroup")
    grouped = server_group.exists()
    seen: list[tuple[int, str, int, int]] = []

    def check() -> None:
        for pid in worker_pids():
            with contextlib.suppress(psutil.NoSuchProcess, OSError):
                group = Path(f"/proc/{pid}/autogroup").read_text() if grouped else ""
                seen.append((psutil.Process(pid).nice(), group, os.getpgid(pid), pid))
        if any(n == expected for n, _, _, _ in seen) or len(seen) > 3000:
            raise Left  # the run stops its worker

    with blocked(spec):
        _, error = answer(lambda: hosted.analyze(spec, check=check))
        assert isinstance(error, Left)
        nice, group, process_group, pid = seen[-1]
        assert nice == expected, seen[-5:]
        assert group == (server_group.read_text() if grouped else ""), (group, seen[-5:])
        assert process_group == pid != os.getpgid(0)  # its own group, killed whole
        assert gone(pid)
