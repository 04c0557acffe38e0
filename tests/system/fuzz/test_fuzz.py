"""Hostile model files: malformed safetensors, GGUF and .bin checkpoints, and a malicious pickle.

Every case is a real file derived from a valid tiny model. All cases run through the whole
engine (``analyze(path, use_cache=False)``) in one worker subprocess whose address space is
capped (``RLIMIT_AS``) a little above what it already uses, so any allocation sized by a
declared length instead of the file's real bytes fails there. Each structured case must raise
the expected :class:`HeadformsError` subclass with a specific message; random byte mutations
must either analyse or raise a :class:`HeadformsError`; nothing may crash, hang or raise a raw
library exception. Run this file as a script (``--worker``) to execute cases by hand.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fuzz_cases import CASES, gguf_case, st_case
from model_files import (
    CONFIG,
    HEAD_DIM,
    HEADS,
    HIDDEN,
    LAYERS,
    base_tensors,
    gguf_file,
)
from repo import REPO

pytestmark = pytest.mark.fuzz
CASE_SECONDS = 20  # per-case alarm inside the worker (a hang is reported, not waited out)
WORKER_SECONDS = 240  # the whole worker, as a last resort
ADDRESS_HEADROOM = 512 * 2**20  # RLIMIT_AS above the worker's size once warmed up
TRACED_FACTOR, TRACED_SLACK = 16, 8 * 2**20  # traced peak <= 16 x file size + 8 MiB

# --- the worker (runs in a subprocess with a capped address space) ---------------------------


def _vm_size() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


class CaseTimeout(Exception):
    """A case ran past CASE_SECONDS."""


def worker(manifest: Path, results: Path) -> None:
    """Analyse every case of the manifest; record outcome, message, seconds and traced peak."""
    import resource
    import signal
    import tracemalloc

    from headforms import HeadformsError
    from headforms.engine import analyze

    cases = json.loads(manifest.read_text())
    analyze(cases["__valid_safetensors__"], use_cache=False)  # warm every import first
    analyze(cases["__valid_gguf__"], use_cache=False)
    limit = _vm_size() + ADDRESS_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:  # the cap is real: one allocation of twice the headroom must fail
        bytearray(2 * ADDRESS_HEADROOM)
        capped = False
    except MemoryError:
        capped = True

    def on_alarm(signum: int, frame: Any) -> None:
        raise CaseTimeout(f"no answer within {CASE_SECONDS} s")

    signal.signal(signal.SIGALRM, on_alarm)
    out: dict[str, dict[str, Any]] = {}
    progress = results.with_suffix(".current")
    for name, spec in cases.items():
        progress.write_text(name)
        tracemalloc.start()
        started = time.perf_counter()
        signal.alarm(CASE_SECONDS)
        try:
            res = analyze(spec, use_cache=False)
            outcome = {"outcome": "ok", "type": "", "message": f"{len(res.heads)} heads"}
        except HeadformsError as exc:
            outcome = {"outcome": "error", "type": type(exc).__name__, "message": str(exc)}
        except BaseException as exc:  # noqa: BLE001 - a crash is the finding
            outcome = {"outcome": "crash", "type": type(exc).__name__, "message": repr(exc)[:500]}
        finally:
            signal.alarm(0)
        outcome["seconds"] = time.perf_counter() - started
        outcome["peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        target = Path(spec)
        files = [target] if target.is_file() else [f for f in target.iterdir() if f.is_file()]
        outcome["bytes"] = sum(f.stat().st_size for f in files)
        out[name] = outcome
    out["__address_space_capped__"] = {"outcome": str(capped)}
    results.write_text(json.dumps(out, indent=1))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Write every case, run them all in one capped worker, return the recorded outcomes."""
    root = tmp_path_factory.mktemp("fuzz")
    manifest: dict[str, str] = {}
    for special, writer in (
        ("__valid_safetensors__", st_case("valid", None, None).write),
        ("__valid_gguf__", gguf_case("valid", None, None, lambda: bytes(gguf_file().data)).write),
    ):
        directory = root / special.strip("_")
        directory.mkdir()
        manifest[special] = str(writer(directory))
    for i, case in enumerate(CASES.values()):
        directory = root / f"case{i:04d}"
        directory.mkdir()
        manifest[case.name] = str(case.write(directory))
    (root / "manifest.json").write_text(json.dumps(manifest))
    results = root / "results.json"
    path = os.pathsep.join([str(REPO), str(REPO / "tests" / "helpers")])  # the worker's imports
    env = {**os.environ, "HEADFORMS_THREADS": "1", "PYTHONPATH": path}
    env.pop("HEADFORMS_HOSTED", None)
    try:
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", str(root / "manifest.json"), str(results)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=WORKER_SECONDS,
        )
    except subprocess.TimeoutExpired:
        current = results.with_suffix(".current")
        pytest.fail(f"fuzz worker hung on case {current.read_text() if current.exists() else '?'}")
    assert proc.returncode == 0, f"fuzz worker died ({proc.returncode}): {proc.stderr[-3000:]}"
    return json.loads(results.read_text())


def test_base_files_are_valid(tmp_path: Path) -> None:
    """The unmutated tiny models analyse (so every case's error comes from its mutation)."""
    from gguf import GGUFReader

    from headforms.engine import analyze

    directory = st_case("valid", None, None).write(tmp_path)
    assert len(analyze(str(directory), use_cache=False).heads) == LAYERS * HEADS
    path = tmp_path / "valid.gguf"
    path.write_bytes(bytes(gguf_file().data))
    reference = GGUFReader(path)  # gguf's own parser agrees with our writer
    names = [t.name for t in reference.tensors]
    assert names == [f"blk.{i}.attn_{x}.weight" for i in range(LAYERS) for x in "qk"]
    q0 = next(t for t in reference.tensors if t.name == "blk.0.attn_q.weight")
    np.testing.assert_array_equal(
        np.asarray(q0.data).reshape(HEADS * HEAD_DIM, HIDDEN),
        base_tensors()["model.layers.0.self_attn.q_proj.weight"],
    )
    assert len(analyze(str(path), use_cache=False).heads) == LAYERS * HEADS


def test_worker_address_space_is_capped(outcomes: dict[str, dict[str, Any]]) -> None:
    """The worker's RLIMIT_AS really refuses an allocation the size of its headroom x 2."""
    assert outcomes["__address_space_capped__"]["outcome"] == "True"
    assert len(outcomes) == len(CASES) + 3  # every case ran (plus two valid files, the probe)


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_file(name: str, outcomes: dict[str, dict[str, Any]]) -> None:
    """One hostile file: the expected specific error (or, for random mutations, no crash)."""
    case, got = CASES[name], outcomes[name]
    assert got["outcome"] != "crash", f"{name}: raw {got['type']}: {got['message']}"
    assert got["peak"] <= TRACED_FACTOR * got["bytes"] + TRACED_SLACK, got
    if case.error is None:
        assert got["outcome"] in ("ok", "error")
        return
    assert got["outcome"] == "error", f"{name}: expected {case.error}, analysed: {got['message']}"
    assert got["type"] == case.error, f"{name}: {got['type']}: {got['message']}"
    assert "\n" not in got["message"] and len(got["message"]) < 600
    assert re.search(case.message or "", got["message"], re.IGNORECASE), got["message"]


class _Marker:
    """A pickle payload that writes a marker file when unpickled (arbitrary code execution)."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (self.path, "pwned"))


@pytest.mark.parametrize("container", ["torch.save", "raw pickle"])
def test_malicious_pickle_is_refused(tmp_path: Path, container: str) -> None:
    """A .bin whose pickle would run code is refused (weights_only=True); the code never runs."""
    import torch

    from headforms import HeadformsError
    from headforms.engine import analyze

    marker = tmp_path / "marker.txt"
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(CONFIG))
    payload = {"model.layers.0.self_attn.q_proj.weight": _Marker(marker)}
    if container == "torch.save":
        torch.save(payload, model / "pytorch_model.bin")
    else:
        (model / "pytorch_model.bin").write_bytes(pickle.dumps(payload))
    with pytest.raises(HeadformsError, match="weights_only=True"):
        analyze(str(model), use_cache=False)
    assert not marker.exists()
    # The payload is live: loading it without the guard runs it.
    if container == "torch.save":
        torch.load(model / "pytorch_model.bin", weights_only=False)
    else:
        pickle.loads((model / "pytorch_model.bin").read_bytes())
    assert marker.read_text() == "pwned"


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    worker(Path(sys.argv[2]), Path(sys.argv[3]))
