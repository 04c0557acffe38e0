"""Forward passes in hosted mode: a contained worker computes and stores them, the server reads
them back; a model too large for the memory limit is refused before any worker starts; prompts
are capped; a session's forward passes are counted; the estimate bounds measured peaks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tiny_runnable
from page_runner import run_app

from headforms import contained
from headforms.behaviour import attention, head_type_scores
from headforms.behaviour.runnable import forward_memory
from headforms.errors import LimitError, OptionError
from headforms.sources import hosted, locate
from ui import behaviour, state

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hosted-models")
    tiny_runnable.checkpoint("llama", base / "tiny", seed=5)
    return base


@pytest.fixture
def hosted_env(monkeypatch: pytest.MonkeyPatch, root: Path) -> Path:
    monkeypatch.setenv(hosted.HOSTED_ENV, "1")
    monkeypatch.setenv(hosted.ROOTS_ENV, str(root))
    monkeypatch.delenv(hosted.ALLOWLIST_ENV, raising=False)
    return root


def test_a_worker_computes_the_pass_and_the_server_reads_it(hosted_env: Path) -> None:
    spec = str(hosted_env / "tiny")
    text = tiny_runnable.words([4, 8, 15, 16, 23, 42])
    messages: list[str] = []
    pattern = contained.forward_pass(spec, prompt=text, progress=lambda d, t, m: messages.append(m))
    assert messages  # the worker's progress reached the server
    assert contained.worker_pids() == []
    want = attention(spec, text)  # now a store read in this process: the worker's result
    np.testing.assert_array_equal(pattern.weights, want.weights)
    assert pattern.tokens == want.tokens
    scores = contained.forward_pass(spec, probe=(6, 1))
    assert scores.table.equals(head_type_scores(spec, probe_length=6, seed=1).table)


def test_a_model_too_large_is_refused_before_any_worker(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = str(hosted_env / "tiny")
    need = forward_memory(locate(spec), 256)
    monkeypatch.setenv(contained.MEMORY_ENV, str(need - 1))
    monkeypatch.setattr(
        contained, "_start_worker", lambda *a: pytest.fail("a worker started for a refused model")
    )
    with pytest.raises(LimitError) as info:
        contained.forward_pass(spec, prompt="w5 w6 w7 w8 w9 w10 w11")
    message = str(info.value)
    assert message.startswith(f"{spec} is too large to run on this server: a forward pass needs")
    assert "HEADFORMS_ANALYSIS_MEMORY" in message and "\n" not in message


@pytest.mark.parametrize(
    ("prompt", "env", "error", "message"),
    [
        ("", {}, OptionError, "the prompt is empty"),
        (
            "w5 " * 100,
            {"HEADFORMS_PROMPT_CHARACTERS": "99"},
            OptionError,
            "at most 99 are accepted",
        ),
        pytest.param(  # counted in the worker, which loads the model: over 5 s
            "w5 " * 100,
            {"HEADFORMS_PROMPT_TOKENS": "50"},
            OptionError,
            "100 tokens long",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_prompts_are_capped(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch, prompt: str, env: dict, error, message
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # the worker inherits the server's environment
    with pytest.raises(error, match=message):
        contained.forward_pass(str(hosted_env / "tiny"), prompt=prompt)


def test_a_sessions_forward_passes_are_counted(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One new forward pass allowed: the Head page's prompt runs, the probe is refused in one
    line naming the limit; the page still shows the head's geometry."""
    monkeypatch.setenv("HEADFORMS_SESSION_FORWARD_PASSES", "1")
    behaviour.forward_results().clear()
    spec = str(hosted_env / "tiny")
    at = run_app(
        "head",
        **{state.MODEL_KEY: spec, behaviour.PROMPT_KEY: tiny_runnable.words([3, 30, 31])},
    )
    assert not at.exception
    notes = [i.value for i in at.info]
    assert len(notes) == 1
    assert notes[0].startswith("this session has started 1 new forward passes (prompts or probes)")
    assert "HEADFORMS_SESSION_FORWARD_PASSES" in notes[0]
    assert any(m.label == "previous token · prompt" for m in at.metric)


PEAK_SCRIPT = """
import json, re, sys, threading, time
def vm_data():
    return int(re.search(r"VmData:\\s+(\\d+)", open("/proc/self/status").read())[1]) * 1024
peak = [0]
def watch():
    while True:
        peak[0] = max(peak[0], vm_data()); time.sleep(0.005)
threading.Thread(target=watch, daemon=True).start()
from headforms.behaviour import attention
pattern = attention(sys.argv[1], "word " * int(sys.argv[2]), use_cache=False)
time.sleep(0.05)
print(json.dumps({"peak": peak[0], "tokens": len(pattern.token_ids)}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["smollm2-135m", "minilm-l6", "gemma3-270m", "tiny"])
def test_the_estimate_bounds_the_measured_peak(spec: str, root: Path) -> None:
    """VmData is what RLIMIT_DATA (the workers' memory limit) counts."""
    spec = str(root / "tiny") if spec == "tiny" else spec
    out = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, spec, "200"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=True,
    )
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    estimate = forward_memory(locate(spec), measured["tokens"])
    assert measured["peak"] <= estimate
