"""Sharing one cache: concurrent analyses, a writer killed mid-entry, damaged entries, sessions.

- two processes analysing one model at once: one extraction, identical results;
- SIGKILL while the cache entry is half written: no trusted entry, the next run recomputes;
- a corrupted or truncated entry is detected (checksum) and recomputed;
- eight threads of one process (Streamlit sessions) on an uncached model: one extraction;
- SESSIONS: 20 concurrent Streamlit sessions on the real server (scripts/start.sh) over
  loopback websockets against a pre-analysed model, plus 20 concurrent HTTP GETs.

Computations (from the weights or from stored factors) are counted by wrappers
(``counting.COUNTING``) that append one line per call to a log (and can sleep, so that the
overlap is certain).
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from counting import COUNTING, count_computations
from repo import REPO
from servers import free_port, serving

from headforms import DEFAULT_MODEL, ModelAnalysis, engine
from headforms.model_analysis import analysis_from_record
from headforms.options import AnalysisOptions
from headforms.store import ResultStore, metrics_key

N_SESSIONS = 20
SESSION_TIMEOUT = 90.0  # seconds one websocket session may take before it counts as failed
PROCESS_TIMEOUT = 120.0

WRAPPER = (
    COUNTING
    + r"""
import os, sys, time, pickle
from pathlib import Path
import headforms.engine as engine

if os.environ.get("TEST_PAUSE_IN_WRITE"):
    import diskcache.core

    real_write = diskcache.core.Disk._write

    def paused_write(self, full_path, iterator, mode, encoding=None):
        data = b"".join(iterator)
        os.makedirs(os.path.dirname(full_path), exist_ok=True)
        with open(full_path, mode) as fh:  # half the entry reaches the disk, then we stall
            fh.write(data[: len(data) // 2])
            fh.flush()
            os.fsync(fh.fileno())
        Path(os.environ["TEST_PAUSE_IN_WRITE"]).write_text(full_path)
        time.sleep(600)

    diskcache.core.Disk._write = paused_write
Path(sys.argv[2] + ".ready").touch()
go = Path(os.environ["TEST_GO"])
while not go.exists():
    time.sleep(0.01)
result = engine.analyze(sys.argv[1])
Path(sys.argv[2]).write_bytes(pickle.dumps(result))
"""
)


def _save_llama(directory: Path) -> Path:
    """A random Llama large enough that its cached result lives in a diskcache value file."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=128,
        intermediate_size=128,
        num_hidden_layers=8,
        num_attention_heads=8,
        num_key_value_heads=4,
        vocab_size=32,
    )
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model directory (saved with transformers' save_pretrained)."""
    return _save_llama(tmp_path_factory.mktemp("concurrency") / "llama")


@pytest.fixture(scope="module")
def reference(model: Path) -> ModelAnalysis:
    """The model's analysis computed without any cache."""
    return engine.analyze(str(model), use_cache=False)


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache directory for this test (in this process and its children)."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(directory))
    return directory


def _same(a: ModelAnalysis, b: ModelAnalysis) -> None:
    pd.testing.assert_frame_equal(a.heads, b.heads, check_exact=True)
    assert a.spectra.keys() == b.spectra.keys()
    for name in a.spectra:
        np.testing.assert_array_equal(a.spectra[name], b.spectra[name])
    assert a.card.fingerprint == b.card.fingerprint


def _extractions(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _start_workers(
    model: Path, tmp_path: Path, count: int, extra_env: dict[str, str] | None = None
) -> tuple[list[subprocess.Popen[bytes]], list[Path], Path]:
    """Start ``count`` wrapper processes; release them together once all are ready."""
    script = tmp_path / "worker.py"
    script.write_text(WRAPPER)
    log, go = tmp_path / "extractions.log", tmp_path / "go"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HEADFORMS_THREADS": "1",
        "TEST_EXTRACTION_LOG": str(log),
        "TEST_GO": str(go),
        **(extra_env or {}),
    }
    outs = [tmp_path / f"result{i}.pkl" for i in range(count)]
    procs = [
        subprocess.Popen([sys.executable, str(script), str(model), str(out)], env=env, cwd=REPO)
        for out in outs
    ]
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while not all(Path(f"{out}.ready").exists() for out in outs):
        assert time.monotonic() < deadline, "workers never became ready"
        assert all(p.poll() is None for p in procs), "a worker died while starting"
        time.sleep(0.05)
    go.touch()
    return procs, outs, log


@pytest.mark.slow
def test_two_processes_extract_once_and_agree(
    model: Path, reference: ModelAnalysis, fresh_cache: Path, tmp_path: Path
) -> None:
    """Two processes released together on an uncached model: one extraction, equal results."""
    procs, outs, log = _start_workers(model, tmp_path, 2, {"TEST_SLOW_SECONDS": "1.0"})
    for proc in procs:
        assert proc.wait(timeout=PROCESS_TIMEOUT) == 0
    assert len(_extractions(log)) == 1, _extractions(log)
    first, second = (pickle.loads(out.read_bytes()) for out in outs)
    _same(first, second)
    _same(first, reference)


def _value_files(cache: Path) -> list[Path]:
    return sorted((cache / "results").rglob("*.val"))


def test_killed_mid_write_leaves_no_trusted_entry(
    model: Path,
    reference: ModelAnalysis,
    fresh_cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SIGKILL with the entry's file half written: never trusted; the next run recomputes."""
    paused = tmp_path / "paused"
    procs, _, log = _start_workers(model, tmp_path, 1, {"TEST_PAUSE_IN_WRITE": str(paused)})
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while not paused.exists():
        assert procs[0].poll() is None, "the writer exited before reaching the write"
        assert time.monotonic() < deadline, "the writer never reached the cache write"
        time.sleep(0.05)
    procs[0].send_signal(signal.SIGKILL)
    assert procs[0].wait(timeout=30) == -signal.SIGKILL
    partial = Path(paused.read_text())
    assert partial.exists() and partial in _value_files(fresh_cache)  # the torn file is there
    key = metrics_key(reference.card.fingerprint, AnalysisOptions().key())
    cache = ResultStore()
    assert key not in cache and cache.get(key, "analysis") is None
    assert len(_extractions(log)) == 1  # the killed process had extracted
    calls = count_computations(monkeypatch)
    again = engine.analyze(str(model))  # the dead writer's lock is gone: no wait, recompute
    _same(again, reference)
    assert len(calls) == 1
    _same(analysis_from_record(cache.get(key, "analysis")), reference)


@pytest.mark.parametrize("damage", ["flip bytes", "truncate", "delete file"])
def test_damaged_entry_is_detected_and_recomputed(
    model: Path,
    reference: ModelAnalysis,
    fresh_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
) -> None:
    """A value file damaged on disk is a miss (checksum), recomputed and rewritten."""
    calls = count_computations(monkeypatch)
    engine.analyze(str(model))
    (value,) = _value_files(fresh_cache)
    blob = bytearray(value.read_bytes())
    if damage == "flip bytes":
        blob[len(blob) // 2 : len(blob) // 2 + 16] = bytes(16)
        value.write_bytes(bytes(blob))
    elif damage == "truncate":
        value.write_bytes(bytes(blob[: len(blob) // 3]))
    else:
        value.unlink()
    _same(engine.analyze(str(model)), reference)
    assert len(calls) == 2
    _same(engine.analyze(str(model)), reference)  # the rewritten entry is trusted again
    assert len(calls) == 2


def test_threads_share_one_extraction(
    model: Path,
    reference: ModelAnalysis,
    fresh_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Eight threads (Streamlit sessions of one server) on an uncached model: one extraction."""
    calls = count_computations(monkeypatch, delay=0.5)
    barrier = threading.Barrier(8)

    def session(_: int) -> ModelAnalysis:
        barrier.wait(timeout=60)
        return engine.analyze(str(model))

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(session, range(8), timeout=PROCESS_TIMEOUT))
    assert len(calls) == 1
    for res in results:
        _same(res, reference)


# --- SESSIONS: 20 concurrent Streamlit sessions against the real server ------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The dashboard served by scripts/start.sh on a free loopback port, default model cached."""
    engine.analyze(DEFAULT_MODEL)  # the model the app opens on
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    env = {**os.environ, "HEADFORMS_THREADS": "1", "HEADFORMS_HOSTED": "1"}  # a shared server
    with serving(port, env, log, 90):
        yield port


def websocket_session(port: int) -> dict[str, Any]:
    """One browser-like session: open the stream, run the app once, collect what it drew."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.sync.client import connect

    elements: dict[str, int] = {}
    problems: list[str] = []
    deadline = time.monotonic() + SESSION_TIMEOUT
    url = f"ws://127.0.0.1:{port}/_stcore/stream"
    with connect(url, subprotocols=["streamlit"], open_timeout=30, max_size=None) as ws:
        request = BackMsg()
        request.rerun_script.query_string = ""
        request.rerun_script.page_script_hash = ""
        ws.send(request.SerializeToString())
        while True:
            message = ForwardMsg()
            message.ParseFromString(ws.recv(timeout=max(deadline - time.monotonic(), 0.1)))
            kind = message.WhichOneof("type")
            if kind == "delta" and message.delta.WhichOneof("type") == "new_element":
                element = message.delta.new_element
                name = element.WhichOneof("type")
                elements[name] = elements.get(name, 0) + 1
                if name == "exception":
                    problems.append(f"exception: {element.exception.message}")
                if name == "alert" and element.alert.format == element.alert.ERROR:
                    problems.append(f"st.error: {element.alert.body}")
            if kind == "script_finished":
                status = ForwardMsg.ScriptFinishedStatus.Name(message.script_finished)
                return {"status": status, "elements": elements, "problems": problems}


TRANSIENT = {"progress", "empty", "spinner"}
"""Elements drawn only while an analysis loads (the first session may load it)."""


def test_sessions_20_concurrent_websocket_sessions(server: int) -> None:
    """SESSIONS: 20 concurrent loopback sessions each run the app to the end without an error."""
    alone = websocket_session(server)
    assert alone["status"] == "FINISHED_SUCCESSFULLY" and not alone["problems"], alone
    with ThreadPoolExecutor(N_SESSIONS) as pool:
        futures = [pool.submit(websocket_session, server) for _ in range(N_SESSIONS)]
        outcomes = [f.result(timeout=SESSION_TIMEOUT + 30) for f in futures]
    failures = [o for o in outcomes if o["status"] != "FINISHED_SUCCESSFULLY" or o["problems"]]
    assert not failures, failures
    assert len(outcomes) == N_SESSIONS
    expected = set(alone["elements"]) - TRANSIENT
    assert "selectbox" in expected
    for outcome in outcomes:  # each concurrent session drew the page a lone session draws
        assert set(outcome["elements"]) - TRANSIENT == expected, outcome


def test_sessions_20_concurrent_http_requests(server: int) -> None:
    """SESSIONS: 20 concurrent GETs of the page and of the health endpoint all succeed."""

    def get(path: str) -> tuple[int, bytes]:
        with urllib.request.urlopen(f"http://127.0.0.1:{server}{path}", timeout=30) as resp:
            return resp.status, resp.read()

    paths = ["/", "/_stcore/health"] * N_SESSIONS
    with ThreadPoolExecutor(N_SESSIONS) as pool:
        answers = list(pool.map(get, paths, timeout=120))
    assert all(status == 200 for status, _ in answers)
    assert all(
        body == b"ok" for path, (_, body) in zip(paths, answers, strict=True) if "health" in path
    )
    assert all(
        b"<html" in body.lower()
        for path, (_, body) in zip(paths, answers, strict=True)
        if path == "/"
    )
