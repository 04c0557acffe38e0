"""The Trainer callback (headforms.integrations.HeadformsCallback) for real: a tiny llama and a
gpt2 trained 60 steps by transformers' Trainer on the shipped text, with checkpoints saved at the
same steps. The records at steps 0, 20, 40 and 60 equal ``headforms trajectory`` of those
checkpoints; the losses and the final weights are identical with and without the callback; the
scalars reach TensorBoard's event files through ``report_to="tensorboard"``; the plain-loop
``record`` writes the same records as the callback."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import tiny_models as tm
import torch

from headforms.analyses.training import record_scalars
from headforms.cli import main
from headforms.columns import METRIC_COLUMNS
from headforms.demo import char_tokenizer, text_windows
from headforms.integrations import HeadformsCallback, record
from headforms.interventions.text import DEFAULT_TEXT
from headforms.run_store import run_state
from headforms.series import trajectory

STEPS, EVERY = 60, 20
RECORDED = (0, 20, 40, 60)
PROFILE = ("a", "b", "c", "d")
NUMBERS = [c for c in METRIC_COLUMNS if c != "parity"]


@dataclass
class Run:
    """One training run: its records' directory, its checkpoints' directory, the Trainer's log
    history and the final weights."""

    records: Path
    checkpoints: Path
    history: list[dict[str, Any]]
    weights: dict[str, torch.Tensor]


def windows(count: int) -> list[dict[str, torch.Tensor]]:
    """Windows of the shipped text, characters as tokens (the demo's tokenizer)."""
    ids = torch.tensor(char_tokenizer(DEFAULT_TEXT).encode(DEFAULT_TEXT), dtype=torch.long)
    assert int(ids.max()) < tm.VOCAB
    return text_windows(ids, count, torch.Generator().manual_seed(0))


def train(family: str, where: Path, callback: bool, report_to: str = "none") -> Run:
    """Train a tiny ``family`` model 60 steps with Trainer, saving checkpoint-0 (the initial
    weights) and checkpoint-20/40/60, with or without the callback (every 20 steps)."""
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(
        tm.FAMILIES[family].config(), attn_implementation="eager"
    )
    checkpoints = where / "checkpoints"
    model.save_pretrained(checkpoints / "checkpoint-0")
    arguments = TrainingArguments(
        output_dir=str(checkpoints),
        max_steps=STEPS,
        per_device_train_batch_size=4,
        learning_rate=1e-2,
        save_strategy="steps",
        save_steps=EVERY,
        save_only_model=True,
        logging_steps=1,
        report_to=report_to,
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    records = where / "records"
    callbacks = [HeadformsCallback(every=EVERY, out=records)] if callback else []
    trainer = Trainer(model=model, args=arguments, train_dataset=windows(400), callbacks=callbacks)
    trainer.train()
    weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return Run(records, checkpoints, trainer.state.log_history, weights)


@pytest.fixture(scope="module", params=["llama", pytest.param("gpt2", marks=pytest.mark.slow)])
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The same run with the callback (TensorBoard on) and without it."""
    family = request.param
    root = tmp_path_factory.mktemp(family)
    return (
        family,
        train(family, root / "with", True, report_to="tensorboard"),
        train(family, root / "without", False),
    )


def test_the_records_equal_the_trajectory_of_checkpoints_at_the_same_steps(runs, tmp_path):
    family, run, _ = runs
    recorded, saved = trajectory(str(run.records)), trajectory(str(run.checkpoints))
    assert recorded.steps == saved.steps == RECORDED
    assert recorded.card.total_heads == tm.LAYERS * tm.H
    for name in PROFILE:
        difference = np.abs(recorded.stacked(name) - saved.stacked(name))
        assert difference.max() <= 1e-12, (family, name, difference.max())
    for name in NUMBERS:
        np.testing.assert_allclose(
            recorded.stacked(name), saved.stacked(name), rtol=0, atol=1e-12, err_msg=name
        )
    assert (recorded.stacked("parity") == saved.stacked("parity")).all()
    assert (recorded.stacked("a")[1:] != recorded.stacked("a")[:-1]).any()  # the heads moved
    # the command line reads both as the same table (its checkpoint column names each source)
    tables = []
    for source in (run.records, run.checkpoints):
        out = tmp_path / f"{source.name}.csv"
        assert main(["trajectory", str(source), "--out", str(out), "--quiet"]) == 0
        tables.append(pd.read_csv(out))
    assert list(tables[0].columns) == list(tables[1].columns)
    assert (tables[0]["step"] == tables[1]["step"]).all()
    for name in PROFILE:
        assert np.abs(tables[0][name] - tables[1][name]).max() <= 1e-12, name


def test_the_training_is_the_same_with_and_without_the_callback(runs):
    _, run, plain = runs
    losses = [h["loss"] for h in run.history if "loss" in h]
    assert len(losses) == STEPS
    assert losses == [h["loss"] for h in plain.history if "loss" in h]
    assert run.weights.keys() == plain.weights.keys()
    for name, value in run.weights.items():
        assert torch.equal(value, plain.weights[name]), name
    assert not any(k.startswith("headforms/") for h in plain.history for k in h)


def test_the_scalars_reach_the_trainers_loggers_at_their_steps(runs):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _, run, _ = runs
    state = run_state(run.records)
    assert state.steps == RECORDED and not state.live and state.manifest.finished == STEPS
    analyses = trajectory(str(run.records)).analyses
    expected, previous = {}, None
    for step, analysis in zip(RECORDED, analyses, strict=True):
        expected[step] = record_scalars(analysis.columns, previous)
        previous = analysis.columns
    logged = {h["step"]: h for h in run.history if "headforms/mean_a" in h}
    assert sorted(logged) == list(RECORDED)
    for step, scalars in expected.items():
        assert {k: logged[step][k] for k in scalars} == scalars
    files = list(run.checkpoints.rglob("events.out.tfevents.*"))  # output_dir/runs/...
    assert len(files) == 1
    events = EventAccumulator(str(files[0].parent)).Reload()
    tags = set(events.Tags()["scalars"])
    for name in ("share_I_plus", "share_II", "share_I_minus", "mean_a", "mean_theta_distance"):
        points = events.Scalars(f"train/headforms/{name}")
        assert [p.step for p in points] == list(RECORDED), name
        want = [expected[step][f"headforms/{name}"] for step in RECORDED]
        np.testing.assert_allclose([p.value for p in points], want, rtol=1e-6, err_msg=name)
    moved = [p.step for p in events.Scalars("train/headforms/moved_max")]
    assert moved == list(RECORDED[1:])  # nothing moved before the first record
    named = [t for t in tags if t.startswith("train/headforms/moved/L")]
    assert named and all(t.removeprefix("train/headforms/moved/") in _head_names() for t in named)
    assert "train/loss" in tags  # the Trainer's own logs are there as before


def _head_names() -> set[str]:
    return {f"L{layer}H{head}" for layer in range(tm.LAYERS) for head in range(tm.H)}


def test_a_plain_loop_records_the_same_as_the_callback(runs, tmp_path):
    """record(model, step, out) in a loop: checkpoint 40's weights recorded as step 40."""
    from transformers import AutoModelForCausalLM

    family, run, _ = runs
    model = AutoModelForCausalLM.from_pretrained(run.checkpoints / "checkpoint-40")
    first = record(model, 40, out=tmp_path / "loop")
    assert first is not None and "headforms/moved_max" not in first
    again = record(model, 41, out=tmp_path / "loop")  # the same weights: nothing moved
    assert again["headforms/moved_max"] == 0.0
    loop, recorded = trajectory(str(tmp_path / "loop")), trajectory(str(run.records))
    assert loop.steps == (40, 41)
    for name in PROFILE:
        np.testing.assert_array_equal(loop.stacked(name)[0], recorded.stacked(name)[2], name)
