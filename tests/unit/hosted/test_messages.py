"""Typed messages between the server and its workers (issue 25, item 2): every task kind and
every worker message goes through its JSON line and comes back equal; a line that is not a
message is None (a worker's failure), never an exception in the server."""

from __future__ import annotations

from pathlib import Path

import pytest

from headforms.architectures import Shapes
from headforms.hosted.messages import MessageKind, Outcome, OutcomeKind, WorkerMessage, WorkerSetup
from headforms.hosted.tasks import (
    TASKS,
    AttentionTask,
    BaselineTask,
    EngineTask,
    HeadScoresTask,
    TaskKind,
    WhyTask,
    decode_task,
)
from headforms.interventions import Scope
from headforms.options import AnalysisOptions, SweepOptions
from headforms.sources import HubLocation, Located, LocatedFile
from headforms.why import WhyRequest

LOCATED = Located(
    spec="org/name",
    kind="hub",
    display_name="org/name",
    format="safetensors",
    fingerprint="f" * 64,
    weights=(LocatedFile("model-00002.safetensors", 1000, Path("/cache/x.safetensors")),),
    config={"model_type": "llama"},
    config_file=LocatedFile("config.json", 10),
    complete=False,
    hub=HubLocation("org/name", None, "c" * 40),
    forward_files=(
        LocatedFile("tokenizer.json", 3 * 2**30),
        LocatedFile("model-00001.safetensors", 9),
    ),
    download_budget=2**31,
    confined=True,
)


@pytest.mark.parametrize(
    "task",
    [
        EngineTask(LOCATED, AnalysisOptions(3, False, ("sv_a",))),
        EngineTask(LOCATED, SweepOptions("0:16")),
        BaselineTask(Shapes(n_layers=2, n_heads=4, n_kv_heads=2, head_dim=8, model_dim=32)),
        AttentionTask(LOCATED, "The cat sat.\nThe cat sat."),
        HeadScoresTask(LOCATED, 50, 7),
        WhyTask(
            LOCATED,
            WhyRequest(Scope("heads", ((1, 2),)), "a text", 20, pairs=3, detail=True),
        ),
    ],
)
def test_every_task_comes_back_from_its_line(task) -> None:
    line = task.encode()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode_task(line) == task


def test_every_kind_names_one_class() -> None:
    assert set(TASKS) == set(TaskKind)
    assert all(TASKS[kind].kind is kind for kind in TaskKind)


def test_a_model_task_says_what_its_worker_downloads_and_maps() -> None:
    task = AttentionTask(LOCATED, "x")
    assert task.hub_repo == "org/name" and task.mapped_bytes == 0  # safetensors: read-only maps
    assert LOCATED.forward_bytes == 1000 + 3 * 2**30 + 9
    binary = LOCATED.with_files(format="bin")
    assert AttentionTask(binary, "x").mapped_bytes == binary.forward_bytes  # every shard
    assert EngineTask(binary, AnalysisOptions()).mapped_bytes == 1000  # the chosen shard


@pytest.mark.parametrize(
    "message",
    [
        WorkerMessage(MessageKind.PROGRESS, 3, 7, "layer 3"),
        WorkerMessage(MessageKind.DONE),
        WorkerMessage(MessageKind.ERROR, text="the prompt is 300 tokens long", error="OptionError"),
        WorkerMessage(MessageKind.MEMORY),
        WorkerMessage(MessageKind.FAILED, error="RuntimeError"),
    ],
)
def test_every_worker_message_comes_back_from_its_line(message: WorkerMessage) -> None:
    assert WorkerMessage.decode(message.encode()) == message
    assert message.final is (message.kind is not MessageKind.PROGRESS)


@pytest.mark.parametrize(
    "line", [b"", b"not json", b'["done"]', b'{"kind": "exploded"}', b'{"text": "x"}', b"null"]
)
def test_a_line_that_is_no_message_is_none(line: bytes) -> None:
    assert WorkerMessage.decode(line) is None


def test_texts_are_bounded_and_outcomes_follow_messages() -> None:
    long = WorkerMessage.decode(WorkerMessage(MessageKind.PROGRESS, text="x" * 10_000).encode())
    assert long is not None and len(long.text) == 300
    error = WorkerMessage(MessageKind.ERROR, text="refused", error="OptionError")
    assert Outcome.of(error) == Outcome(OutcomeKind.ERROR, "OptionError", "refused")
    assert Outcome.of(error).clean and not Outcome(OutcomeKind.MEMORY).clean
    setup = WorkerSetup(5, 2**31, 300.0, 10, 1234, True, 16 * 2**30)
    assert WorkerSetup.from_dict(setup.as_dict()) == setup
