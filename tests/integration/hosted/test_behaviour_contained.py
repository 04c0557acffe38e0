"""Forward passes in hosted mode: the model's worker computes and stores them, the server reads
them back; the worker keeps its model loaded for the next pass, within its limits (memory for
its life, CPU per pass), is stopped when idle, when the kept workers pass their memory budget
or when a pass fails; a model too large for the memory limit is refused before any worker
starts; prompts are capped; a visitor's forward passes are counted; the estimate bounds
measured peaks."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import memory_peaks
import numpy as np
import pandas as pd
import psutil
import pytest
import tiny_runnable
from page_runner import run_app
from processes import gone

from headforms import hosted
from headforms.behaviour import attention, cache, head_type_scores
from headforms.behaviour.runnable import fingerprint, forward_memory
from headforms.errors import LimitError, NotAllowedError, OptionError
from headforms.hosted import LOCAL, Limits, api, model_facts, process
from headforms.hosted.messages import OutcomeKind
from headforms.settings import (
    MEMORY_ENV,
    MODEL_IDLE_ENV,
    MODELS_MEMORY_ENV,
    VISITOR_FORWARD_PASSES_ENV,
    settings,
)
from headforms.sources import locate
from headforms.store import ResultStore
from ui import behaviour, compute, state

HANG_GUARD = 60.0


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hosted-models")
    tiny_runnable.checkpoint("llama", base / "tiny", seed=5)
    tiny_runnable.checkpoint("gpt2", base / "other", seed=6)
    return base


def test_a_worker_computes_the_pass_and_the_server_reads_it(hosted_env: Path) -> None:
    """The pass runs in the model's worker; the next pass of the model (the probe) runs in the
    same worker, with the model still loaded; no slot is held between them."""
    spec = str(hosted_env / "tiny")
    text = tiny_runnable.words([4, 8, 15, 16, 23, 42])
    messages: list[str] = []
    pattern = hosted.forward_pass(spec, prompt=text, progress=lambda d, t, m: messages.append(m))
    assert messages  # the worker's progress reached the server
    assert not api.hosting.runs.in_flight() and api.hosting.slots.running() == 0
    kept = hosted.model_worker_pids()
    assert len(kept) == 1 and psutil.pid_exists(kept[0])
    want = attention(spec, text, use_cache=False)  # computed again here, not the worker's entry
    np.testing.assert_allclose(pattern.weights, want.weights, rtol=1e-5, atol=1e-7)
    assert pattern.tokens == want.tokens
    scores = hosted.forward_pass(spec, probe=(6, 1))
    recomputed = head_type_scores(spec, probe_length=6, seed=1, use_cache=False).table
    pd.testing.assert_frame_equal(scores.table, recomputed, rtol=1e-5, atol=1e-7)
    assert hosted.model_worker_pids() == kept  # the same process, its model still loaded
    # its memory limit holds for its life, its CPU limit is renewed per pass (hard: unlimited)
    limits = Path(f"/proc/{kept[0]}/limits").read_text()
    soft, hard = re.search(r"Max cpu time\s+(\S+)\s+(\S+)", limits).groups()
    assert hard == "unlimited" and soft.isdigit()
    used = sum(psutil.Process(kept[0]).cpu_times()[:2])
    assert int(soft) <= used + Limits.from_env().seconds + 2
    data = re.search(r"Max data size\s+(\d+)", limits)
    assert data is not None and int(data[1]) == Limits.from_env().memory


def test_a_model_too_large_is_refused_before_any_worker(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = str(hosted_env / "tiny")
    need = forward_memory(locate(spec), 256)
    monkeypatch.setenv(MEMORY_ENV, str(need - 1))
    monkeypatch.setattr(
        process, "start_worker", lambda *a: pytest.fail("a worker started for a refused model")
    )
    with pytest.raises(LimitError) as info:
        hosted.forward_pass(spec, prompt="w5 w6 w7 w8 w9 w10 w11")
    message = str(info.value)
    assert message.startswith(f"{spec} is too large to run on this server: a forward pass needs")
    assert "HEADFORMS_ANALYSIS_MEMORY" in message and "\n" not in message


def test_a_file_leading_out_of_the_roots_is_refused_before_any_worker(
    hosted_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine reads the config and weights only; a forward pass reads the tokenizer files
    too: one of them linked from outside the allowed directories is refused in one line."""
    model = hosted_env / "linked"
    shutil.copytree(hosted_env / "tiny", model, dirs_exist_ok=True)
    outside = tmp_path / "tokenizer.json"
    shutil.copy(model / "tokenizer.json", outside)
    (model / "tokenizer.json").unlink()
    (model / "tokenizer.json").symlink_to(outside)
    monkeypatch.setattr(
        process, "start_worker", lambda *a: pytest.fail("a worker started for a refused model")
    )
    with pytest.raises(NotAllowedError) as info:
        hosted.forward_pass(str(model), prompt="w3 w4")
    assert "tokenizer.json" in str(info.value) and "\n" not in str(info.value)
    shutil.rmtree(model)


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
        hosted.forward_pass(str(hosted_env / "tiny"), prompt=prompt)


def test_a_visitors_forward_passes_are_counted(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One new forward pass allowed: the Head page's prompt runs, the probe is refused in one
    line naming the limit; the page still shows the head's geometry."""
    monkeypatch.setenv(VISITOR_FORWARD_PASSES_ENV, "1")
    compute.gateway().clear()
    spec = str(hosted_env / "tiny")
    at = run_app(
        "head",
        **{state.MODEL_KEY: spec, behaviour.PROMPT_KEY: tiny_runnable.words([3, 30, 31])},
    )
    assert not at.exception
    notes = [i.value for i in at.info]
    assert len(notes) == 1
    assert notes[0].startswith("you have started 1 new forward passes (prompts or probes)")
    assert VISITOR_FORWARD_PASSES_ENV in notes[0]
    assert any(m.label == "previous token · prompt" for m in at.metric)
    assert len(api.hosting.budgets._starts[(LOCAL, "forward_passes")]) == 1


@pytest.mark.slow
def test_model_workers_are_stopped_when_idle_and_past_their_memory(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept workers' estimates fit HEADFORMS_MODELS_MEMORY (the least recently used model's
    worker is stopped for a new one), and a worker idle past HEADFORMS_MODEL_IDLE_SECONDS is
    stopped by the reaper."""
    tiny, other = str(hosted_env / "tiny"), str(hosted_env / "other")
    tokens = settings().prompt_tokens
    sizes = [forward_memory(locate(spec), tokens) for spec in (tiny, other)]
    monkeypatch.setenv(MODELS_MEMORY_ENV, str(max(sizes)))  # room for one at a time
    hosted.forward_pass(tiny, prompt="w3 w4 w5")
    first = hosted.model_worker_pids()
    hosted.forward_pass(other, prompt="w3 w4 w5")
    second = hosted.model_worker_pids()
    assert len(first) == len(second) == 1 and first != second
    assert gone(first[0])
    monkeypatch.setenv(MODEL_IDLE_ENV, "1")
    hosted.forward_pass(other, prompt="w6 w7 w8")  # its worker is kept, then idles
    assert hosted.model_worker_pids() == second
    assert gone(second[0]) and hosted.model_worker_pids() == []


def test_a_prompt_the_server_can_count_is_refused_before_any_worker(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a pass converted the model's tokenizer, a prompt over the token cap is counted in the
    server and refused in one line, at no charge, before any worker starts (prompts over the cap
    alternating between two models that do not fit together used to start a worker per request,
    each loading its model, and cost nothing)."""
    spec, visitor = str(hosted_env / "tiny"), "10.0.0.7"
    hosted.forward_pass(spec, prompt="w3 w4", visitor=visitor)  # converts the tokenizer
    api.hosting.model_workers.stop_all()
    monkeypatch.setenv("HEADFORMS_PROMPT_TOKENS", "8")
    monkeypatch.setattr(
        process, "start_worker", lambda *a: pytest.fail("a worker started for a refused prompt")
    )
    for last in (20, 21, 22):
        with pytest.raises(OptionError) as info:
            hosted.forward_pass(spec, prompt=tiny_runnable.words(range(3, last)), visitor=visitor)
        message = str(info.value)
        assert message.startswith("the prompt is ") and "\n" not in message
        assert message.endswith(
            "tokens long; forward passes of tiny take at most 8 tokens (HEADFORMS_PROMPT_TOKENS)"
        )
    assert len(api.hosting.budgets._starts[(visitor, "forward_passes")]) == 1  # the first only
    assert api.hosting.model_workers.started == 1


@pytest.mark.slow
def test_a_refusal_from_the_worker_counts_keeps_it_and_a_stopped_pass_stops_it(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prompt the server cannot count (it holds no tokenizer of the model) goes to the model's
    worker: refused there in one line, it counts against the visitor (the worker started and
    loaded the model) and leaves the worker as it was, serving the next pass; a pass stopped
    midway (its visitor left) stops its worker, nothing stored."""
    monkeypatch.setattr(model_facts, "TOKENIZERS_MEMORY", 0)  # the server holds no tokenizer
    spec, visitor = str(hosted_env / "tiny"), "10.0.0.8"
    monkeypatch.setenv("HEADFORMS_PROMPT_TOKENS", "8")
    with pytest.raises(OptionError, match="tokens long"):
        hosted.forward_pass(spec, prompt=tiny_runnable.words(list(range(3, 20))), visitor=visitor)
    assert len(api.hosting.budgets._starts[(visitor, "forward_passes")]) == 1
    kept = hosted.model_worker_pids()
    assert len(kept) == 1
    hosted.forward_pass(spec, prompt="w3 w4")
    assert hosted.model_worker_pids() == kept

    other = str(hosted_env / "other")  # no worker yet: its first pass loads the model

    runs: list = []

    def leave() -> None:  # the visitor's page goes away while the model loads
        runs.extend(run for run in api.hosting.runs.in_flight() if run.pid is not None)
        if runs:
            raise Left

    with pytest.raises(Left):
        hosted.forward_pass(other, prompt="w5 w6 w7", check=leave)
    assert len(runs) == 1 and runs[0].pid is not None
    pid = runs[0].pid
    assert runs[0].done.wait(HANG_GUARD) and runs[0].outcome.kind is OutcomeKind.ABANDONED
    assert gone(pid) and hosted.model_worker_pids() == kept  # the other model's worker stays
    key = cache.pattern_key(fingerprint(locate(other)), "w5 w6 w7")
    assert cache.get_pattern(ResultStore(), key) is None


class Left(Exception):
    """A visitor left (what a Streamlit rerun or stop raises while the page waits)."""


PASS = """
from headforms.behaviour import attention
pattern = attention(sys.argv[1], "word " * int(sys.argv[2]), use_cache=False)
out["tokens"] = len(pattern.token_ids)
"""


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["smollm2-135m", "minilm-l6", "gemma3-270m", "tiny"])
def test_the_estimate_bounds_the_measured_peak(spec: str, root: Path) -> None:
    """VmData is what RLIMIT_DATA (the workers' memory limit) counts."""
    spec = str(root / "tiny") if spec == "tiny" else spec
    measured = memory_peaks.measured(PASS, spec, "200", timeout=600)
    estimate = forward_memory(locate(spec), measured["tokens"])
    assert measured["peak"] <= estimate
