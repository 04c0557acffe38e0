"""A training run killed mid-run (SIGKILL, as the machine or the scheduler stops it) leaves a run
store that reads: a child process trains a tiny llama with Trainer and the callback recording
every step (so most of its time is spent computing and writing records) and is killed once a few
records exist; every record listed is whole, the run reads as a live series whose steps follow
each other from 0, and the command line writes its table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
from repo import REPO

from headforms.cli import main
from headforms.run_store import read_records, run_state
from headforms.series import trajectory

CHILD = textwrap.dedent(
    """
    import sys, torch
    sys.path.insert(0, "tests/helpers")
    import tiny_models as tm
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
    from headforms.integrations import HeadformsCallback

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(tm.FAMILIES["llama"].config())
    data = [{"input_ids": t, "labels": t} for t in torch.randint(0, tm.VOCAB, (4000, 16))]
    args = TrainingArguments(
        output_dir=sys.argv[1] + "/trainer", max_steps=1000, per_device_train_batch_size=4,
        save_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True,
    )
    callback = HeadformsCallback(every=1, out=sys.argv[1] + "/records", log=False)
    Trainer(model=model, args=args, train_dataset=data, callbacks=[callback]).train()
    """
)
RECORDS_BEFORE_KILL = 4
DEADLINE_S = 300


def test_a_killed_run_leaves_a_store_of_whole_records(tmp_path: Path) -> None:
    records = tmp_path / "records" / "headforms-records"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + DEADLINE_S
        while (
            len(list(records.glob("step-*.zip")) if records.is_dir() else []) < RECORDS_BEFORE_KILL
        ):
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the child wrote no records in time"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stderr.close()
    state = run_state(tmp_path / "records")
    assert state.live  # it never said it ended
    whole, damaged = read_records(state)
    assert not damaged and len(whole) >= RECORDS_BEFORE_KILL
    series = trajectory(str(tmp_path / "records"))
    assert series.steps == tuple(range(len(whole)))
    out = tmp_path / "run.csv"
    assert main(["trajectory", str(tmp_path / "records"), "--out", str(out), "--quiet"]) == 0
    assert len(pd.read_csv(out)) == len(whole) * series.card.total_heads
