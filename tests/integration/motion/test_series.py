"""Checkpoints of a training run (headforms.series) and one model against another
(headforms.diff), on a tiny llama trained a few steps in the test session and saved as
``checkpoint-STEP/`` folders, and served at several revisions by the loopback fake hub: a
series and a diff give the numbers of the separate analyses of each checkpoint; the command
line's trajectory (a resumable survey) and diff write them; every bad input is one line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tiny_models as tm
from fake_hub import FakeHub, checkpoint_files
from repo import REPO as ROOT

from headforms import analyze
from headforms.analyses.motion import changes_by_head, movement, parity_changes
from headforms.cli import main
from headforms.columns import METRIC_COLUMNS
from headforms.diff import COMPARED, ModelDiff, diff
from headforms.errors import ModelSpecError, OptionError
from headforms.forms import simplex_distance
from headforms.model_analysis import model_baseline
from headforms.options import AnalysisOptions
from headforms.series import MAX_CHECKPOINTS, checkpoint_step, open_series, trajectory

STEPS = (0, 3, 6)
REPO = "tiny-org/tiny-run"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A tiny llama trained with Adam, saved at steps 0, 3 and 6 (checkpoint-STEP folders)."""
    return tm.train_run("llama", tmp_path_factory.mktemp("series") / "run", steps=STEPS)


def numbers(columns: dict) -> dict[str, np.ndarray]:
    return {name: np.asarray(columns[name]) for name in METRIC_COLUMNS}


def assert_same(got: dict, want: dict, where: str) -> None:
    for name in METRIC_COLUMNS:
        a, b = np.asarray(got[name]), np.asarray(want[name])
        if b.dtype == object:
            assert (a == b).all(), f"{where}: {name}"
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{where}: {name}")


def test_a_run_directory_is_one_ordered_series_equal_to_each_checkpoint(run: list[Path]):
    series = trajectory(str(run[0].parent))
    assert series.steps == STEPS
    assert [c.spec for c in series.checkpoints] == [str(folder) for folder in run]
    assert series.point_columns["checkpoint"] == [str(folder) for folder in run]
    table = series.table
    assert list(table.columns[:2]) == ["step", "checkpoint"]
    assert len(table) == len(STEPS) * series.card.total_heads
    for point, folder in enumerate(run):
        assert_same(series.at(point), analyze(str(folder)).columns, folder.name)
    assert (series.stacked("a")[1:] != series.stacked("a")[:-1]).any()  # training moved them


def test_training_moved_the_heads_and_the_paths_say_where(run: list[Path]):
    series = trajectory([str(folder) for folder in reversed(run)])  # any order: sorted by step
    assert series.steps == STEPS
    moved = movement(series)
    first, last = (analyze(str(run[i])).heads for i in (0, -1))
    want = simplex_distance(
        first[["a", "b", "c", "d"]].to_numpy(float), last[["a", "b", "c", "d"]].to_numpy(float)
    )
    np.testing.assert_allclose(moved["distance"], want, rtol=1e-12)
    assert (moved["path_length"] >= moved["distance"] - 1e-15).all()
    changes = parity_changes(series)
    parity = series.stacked("parity")
    expected = [
        (h, i)
        for h in range(parity.shape[1])
        for i in range(1, len(STEPS))
        if parity[i, h] != parity[i - 1, h]
    ]
    assert len(changes) == len(expected)
    per_head = changes_by_head(series)
    assert per_head["changes"].sum() == len(changes)


def test_hub_revisions_are_a_series_equal_to_the_local_checkpoints(fake_hub: FakeHub, run):
    """Revisions step0, step3, step6 served by the loopback fake hub (as Pythia names them)."""
    repo = fake_hub.add_repo(REPO)
    for step, folder in zip(STEPS, run, strict=True):
        repo.commit(checkpoint_files(folder), branch=f"step{step}")
    specs = [f"{REPO}@step{step}" for step in STEPS]
    series = trajectory(specs[::-1])
    assert series.steps == STEPS
    for point, folder in enumerate(run):
        local = analyze(str(folder)).columns
        for name in ("a", "b", "c", "d", "energy", "pairing"):
            np.testing.assert_allclose(series.at(point)[name], local[name], rtol=1e-12)
    again = trajectory(specs)  # analysed once: cached like any model
    assert_same(again.at(2), series.at(2), "cached")


def test_a_diff_is_the_two_analyses_head_by_head(run: list[Path]):
    first, last = str(run[0]), str(run[-1])
    result = diff(first, last)
    a, b = analyze(first).heads, analyze(last).heads
    table = result.table()
    assert list(table[["layer", "head"]].itertuples(index=False)) == list(
        a[["layer", "head"]].itertuples(index=False)
    )
    for name in COMPARED:
        np.testing.assert_array_equal(table[f"{name}_A"], a[name])
        np.testing.assert_array_equal(table[f"{name}_B"], b[name])
        np.testing.assert_allclose(table[f"delta_{name}"], b[name] - a[name])
    np.testing.assert_array_equal(table["parity_flip"], a["parity"] != b["parity"])
    np.testing.assert_allclose(
        table["distance"],
        np.linalg.norm(b[list("abcd")].to_numpy(float) - a[list("abcd")].to_numpy(float), axis=1)
        / np.sqrt(2),
    )
    same = diff(first, first).table()
    assert (same["distance"] == 0).all() and not same["parity_flip"].any()


def test_models_of_other_shapes_are_refused_naming_the_shapes(run, tmp_path: Path):
    narrow = tmp_path / "narrow"
    tm.build("llama", narrow, seed=3, num_attention_heads=2, num_key_value_heads=1)
    with pytest.raises(ModelSpecError) as caught:
        diff(str(run[0]), str(narrow))
    message = str(caught.value)
    assert "their shapes differ (heads 4 vs 2, kv heads 2 vs 1)" in message
    assert "\n" not in message
    with pytest.raises(ModelSpecError, match="shapes differ"):
        ModelDiff(analyze(str(run[0])), analyze(str(narrow)))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "checkpoint-1").symlink_to(run[0], target_is_directory=True)
    (mixed / "checkpoint-2").mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        (mixed / "checkpoint-2" / name).write_bytes((narrow / name).read_bytes())
    # a symlinked folder is not a checkpoint folder of the run: one checkpoint of 2 heads
    assert [c.step for c in open_series([str(mixed)])] == [2]
    (mixed / "checkpoint-0").mkdir()
    for name in ("config.json", "model.safetensors"):
        (mixed / "checkpoint-0" / name).write_bytes((run[0] / name).read_bytes())
    with pytest.raises(ModelSpecError, match="cannot follow .*checkpoint-0 to .*checkpoint-2"):
        trajectory(str(mixed))


@pytest.mark.parametrize(
    ("spec", "step"),
    [
        ("runs/a/checkpoint-1500", 1500),
        ("runs/a/checkpoint-1500/", 1500),
        ("EleutherAI/pythia-70m@step143000", 143000),
        ("org/name@ckpt-20", 20),
        ("./step_300", 300),
        ("org/name@1000", 1000),
    ],
)
def test_steps_come_from_the_folder_or_the_revision(spec: str, step: int):
    assert checkpoint_step(spec) == step


def test_bad_series_are_one_line_errors(run: list[Path], tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [
        ([str(empty)], "holds no checkpoint-STEP folders"),
        ([], "no checkpoints given"),
        (["org/name@main", "org/name@v2"], "cannot tell the training step of org/name@main"),
        (["openai-community/gpt2", "models/llama3"], "training step of openai-community/gpt2"),
        (["org/name@v1.5"], "cannot tell the training step of org/name@v1.5"),
        ([str(run[0]), f"{run[0].parent}/../run/checkpoint-0"], "two checkpoints at step 0"),
    ]
    many = tmp_path / "many"
    for step in range(MAX_CHECKPOINTS + 1):
        (many / f"checkpoint-{step}").mkdir(parents=True)
    cases.append(([str(many)], f"more than {MAX_CHECKPOINTS} checkpoints"))
    for inputs, message in cases:
        with pytest.raises(OptionError, match=re.escape(message)) as caught:
            open_series(inputs)
        assert "\n" not in str(caught.value)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m headforms ARGS`` in a fresh interpreter (the session's cache); ``cwd``: where
    relative outputs go (the checkout is on the path)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        [sys.executable, "-m", "headforms", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


def test_cli_trajectory_writes_the_series_and_resumes(run: list[Path], tmp_path: Path):
    out = tmp_path / "traj.csv"
    done = cli("trajectory", str(run[0].parent), "--out", str(out), "--jobs", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out)
    assert table["step"].tolist() == [s for s in STEPS for _ in range(8)]
    want = trajectory(str(run[0].parent)).table
    for name in ("a", "b", "c", "d", "energy", "pairing", "parity"):
        got, expected = table[name].to_numpy(), want[name].to_numpy()
        if name == "parity":
            assert (got == expected).all()
        else:
            np.testing.assert_allclose(got, expected.astype(float), rtol=1e-12)
    manifest = json.loads((tmp_path / "traj.csv.survey.json").read_text())
    assert {m["status"] for m in manifest["models"]} == {"done"}
    again = cli("trajectory", str(run[0].parent), "--out", str(out), cwd=tmp_path)
    assert again.returncode == 0 and "heads in" not in again.stderr  # nothing analysed again


def test_cli_diff_and_its_refusals(run: list[Path], tmp_path: Path, capsys):
    out = tmp_path / "diff.parquet"
    done = cli("diff", str(run[0]), str(run[-1]), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = pd.read_parquet(out)
    expected = diff(str(run[0]), str(run[-1])).table()
    pd.testing.assert_frame_equal(written, expected, check_dtype=False)
    assert main(["diff", str(run[0]), str(run[-1]), "--quiet"]) == 0
    assert "change parity" in capsys.readouterr().out
    narrow = tmp_path / "narrow"
    tm.build("llama", narrow, seed=3, num_hidden_layers=1, num_attention_heads=2)
    capsys.readouterr()  # the build's progress
    assert main(["diff", str(run[0]), str(narrow), "--quiet"]) == 2
    refused = capsys.readouterr().err
    assert refused.count("\n") == 1 and "shapes differ (layers 2 vs 1, heads 4 vs 2" in refused


@pytest.mark.slow  # two analyses of the bundled Gemma-3
def test_folding_gemmas_qk_norm_gains_moves_heads():
    unfolded = diff("gemma3-270m", "gemma3-270m", options_b=AnalysisOptions(fold_qk_norm=False))
    assert unfolded.table()["distance"].max() > 0.01


def test_cli_rope_positions_with_the_baseline_beside_each_position(tmp_path: Path, run: list[Path]):
    """``--baseline`` with ``--rope-positions``: every position's row of a head carries the
    Gaussian baseline's metrics of that same head (the baseline does not depend on d)."""
    out = tmp_path / "d.csv"
    assert main(["analyze", str(run[0]), "--rope-positions", "0:8:4", "--baseline", "--out",
                 str(out), "--quiet"]) == 0  # fmt: skip
    table = pd.read_csv(out)
    baseline = model_baseline(analyze(str(run[0])).card).heads.set_index(["layer", "head"])
    assert sorted(set(table["rope_position"])) == [0, 4, 8]
    for _, rows in table.groupby("rope_position"):
        expected = baseline.loc[list(zip(rows["layer"], rows["head"], strict=True))]
        for name in METRIC_COLUMNS:
            if name == "parity":
                assert list(rows["rand_parity"]) == list(expected["parity"])
            else:
                np.testing.assert_allclose(rows[f"rand_{name}"], expected[name], rtol=1e-12)
    assert table.groupby(["layer", "head"])["rand_energy"].nunique().max() == 1


def test_cli_analyze_rope_positions(tmp_path: Path, run: list[Path], capsys):
    out = tmp_path / "d.csv"
    done = cli(
        "analyze", str(run[0]), "--rope-positions", "0:12:4", "--out", str(out), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out)
    assert sorted(set(table["rope_position"])) == [0, 4, 8, 12]
    at8 = analyze(str(run[0]), rope_position=8).heads
    np.testing.assert_allclose(table[table["rope_position"] == 8]["a"], at8["a"], rtol=1e-9)
    for args, message in (
        (["minilm-l6", "--rope-positions", "0:4"], "has no rotation"),
        ([str(run[0]), "--rope-positions", "9:3"], "starts after it ends"),
        ([str(run[0]), "--rope-positions", "0:100000"], "more than 1024 positions"),
        ([str(run[0]), "--rope-positions", "0:4", "--rope-position", "2"], "not both"),
    ):
        assert main(["analyze", *args, "--quiet"]) == 2
        refused = capsys.readouterr().err
        assert message in refused and refused.count("\n") == 1, refused
