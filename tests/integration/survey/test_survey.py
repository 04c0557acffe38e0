"""Surveys (headforms.survey, ``python -m headforms survey``): many models, one table, resumable.

Models: the bundled SmolLM2 (GGUF) and tiny random models saved here, and hub ids served by
the loopback fake hub (tests/helpers/fake_hub.py), including the paper preset's ids. Checked: every
model's rows equal its own analysis; the summary's parity shares and means equal counts and
means recomputed here with pandas; failures are one line each and give exit status 1; a killed
survey resumes without redoing finished models; the memory budget keeps models apart; the
estimates bound the measured peaks; the Dask path on a LocalCluster gives the same table.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tiny_models as tm
from fake_hub import FakeHub, checkpoint_files

from headforms import analyze
from headforms.options import AnalysisOptions
from headforms.presets import PAPER_MODELS
from headforms.survey import (
    estimate_peak_bytes,
    manifest_path,
    run_survey,
    survey_specs,
)

MiB = 1 << 20


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny random gpt2, opt and gpt_neox models saved with save_pretrained."""
    root = tmp_path_factory.mktemp("survey-models")
    dirs = {}
    for i, family in enumerate(("gpt2", "opt", "gpt_neox")):
        dirs[family] = root / family
        tm.build(family, dirs[family], seed=10 + i)
    return dirs


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "headforms", "survey", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def test_cli_survey_table_summary_failures(tiny_dirs, tmp_path: Path):
    specs = ["smollm2-135m", str(tiny_dirs["gpt2"]), str(tiny_dirs["opt"])]
    missing = str(tmp_path / "no-such-model")
    listing = tmp_path / "models.txt"
    listing.write_text(f"# two more\n{specs[2]}\n\n{missing}  # absent\n")
    out = tmp_path / "survey.parquet"
    done = cli(*specs[:2], "--list", str(listing), "--out", str(out), "--jobs", "2")
    assert done.returncode == 1, done.stderr  # one model failed
    failed = [line for line in done.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1  # one line: the engine's own message for that model
    assert failed[0].startswith(f"failed: {missing}: no such file or directory: {missing}; ")
    table = pd.read_parquet(out)
    assert list(dict.fromkeys(table["model"])) == specs
    for spec in specs:
        rows = table[table["model"] == spec].reset_index(drop=True)
        own = analyze(spec)
        assert (rows["head_dim"] == own.card.head_dim).all()
        assert (rows["model_dim"] == own.card.model_dim).all()
        pd.testing.assert_frame_equal(rows[list(own.heads.columns)], own.heads)

    summary = pd.read_parquet(tmp_path / "survey.summary.parquet").set_index("model")
    for spec, rows in table.groupby("model"):
        shares = rows["parity"].value_counts(normalize=True) * 100
        for parity in ("I+", "II", "I-"):
            assert summary.loc[spec, parity] == pytest.approx(shares.get(parity, 0.0))
        for column in ("a", "b", "c", "d", "energy", "pairing", "balance"):
            assert summary.loc[spec, column] == pytest.approx(rows[column].mean())
        assert summary.loc[spec, "heads"] == len(rows)
    assert "smollm2-135m" in done.stdout and "I+" in done.stdout  # the summary, printed


def test_bad_arguments_exit_2(tmp_path: Path):
    cases = [
        (["gpt2", "--out", str(tmp_path / "x.txt")], "unknown extension .txt"),
        (["--out", str(tmp_path / "x.csv")], "no models to survey"),
        (["--preset", "nope", "--out", str(tmp_path / "x.csv")], "unknown preset 'nope'"),
        (["--list", str(tmp_path / "absent.txt"), "--out", str(tmp_path / "x.csv")], "--list"),
        (["gpt2", "--out", str(tmp_path / "x.csv"), "--memory-budget", "lots"], "size like 6G"),
    ]
    for args, message in cases:
        done = cli(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)


@pytest.mark.slow
def test_killed_survey_resumes_where_it_stopped(tiny_dirs, tmp_path: Path):
    specs = [str(tiny_dirs[f]) for f in ("gpt2", "opt", "gpt_neox")] + ["minilm-l6"]
    listing = tmp_path / "models.txt"
    listing.write_text("\n".join(specs))
    out = tmp_path / "s.csv"
    args = [sys.executable, "-m", "headforms", "survey", "--list", str(listing), "--out", str(out)]
    process = subprocess.Popen(
        [*args, "--jobs", "1"], stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    manifest = manifest_path(out)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if manifest.exists() and json.loads(manifest.read_text())["models"]:
            break
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the survey and its worker, mid-way
    process.wait()
    before = {m["spec"] for m in json.loads(manifest.read_text())["models"]}
    assert 1 <= len(before) < len(specs) and not out.exists()

    reported: list[str] = []
    result = run_survey(specs, out, report=lambda o, done, total: reported.append(o.spec))
    assert sorted(reported) == sorted(set(specs) - before)  # only what was left
    assert not result.failed
    assert list(dict.fromkeys(result.table["model"])) == specs


def test_other_options_refuse_an_existing_survey(tiny_dirs, tmp_path: Path):
    from headforms.errors import OptionError

    out = tmp_path / "s.csv"
    run_survey([str(tiny_dirs["gpt2"])], out)
    with pytest.raises(OptionError, match="made with"):
        run_survey([str(tiny_dirs["gpt2"])], out, AnalysisOptions(fold_qk_norm=False))


def test_memory_budget_keeps_models_apart_and_estimates_bound_peaks(tiny_dirs, tmp_path):
    specs = [str(tiny_dirs["gpt_neox"]), "smollm2-135m"]
    estimates = [estimate_peak_bytes(s, threads=1) for s in specs]
    budget = max(estimates) + min(estimates) // 2  # each fits alone, not both together
    result = run_survey(specs, tmp_path / "a.csv", jobs=2, memory_budget=budget)
    first, second = sorted(result.outcomes, key=lambda o: o.started)
    assert first.status == second.status == "done"
    assert second.started >= first.ended  # never both at once
    for outcome in result.outcomes:  # the estimate bounds what the worker really used
        assert outcome.peak_rss_bytes <= outcome.estimate_bytes, outcome

    small = run_survey(specs[:1], tmp_path / "b.csv", memory_budget=64 * MiB)
    assert small.failed[0].error.startswith("estimated peak memory")
    assert "exceeds the memory budget 64 MiB" in small.failed[0].error


def test_survey_of_a_published_table(tmp_path: Path):
    from published_tables import author_table

    table = pd.concat([author_table("x", 2, 4, 4, 8, 5), author_table("y", 3, 2, 1, 8, 6)])
    path = tmp_path / "head_statistics.csv"
    table.to_csv(path, index=False)
    assert survey_specs([str(path)]) == [f"{path}::x", f"{path}::y"]
    result = run_survey(survey_specs([str(path)]), tmp_path / "s.json", jobs=1)
    assert not result.failed
    for name, rows in table.groupby("model"):
        got = result.summary.loc[f"{path}::{name}"]
        assert got["heads"] == len(rows)
        assert got["energy"] == pytest.approx(rows["symmetric_energy"].mean())


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_table(tiny_dirs, tmp_path: Path):
    from distributed import LocalCluster

    specs = [str(tiny_dirs["gpt2"]), str(tiny_dirs["opt"]), str(tmp_path / "absent")]
    local = run_survey(specs, tmp_path / "local.csv", jobs=1)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        remote = run_survey(specs, tmp_path / "dask.csv", scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(remote.table, local.table)
    assert [o.spec for o in remote.failed] == [specs[2]]
    assert remote.failed[0].error == local.failed[0].error
    assert (tmp_path / "dask.csv.parts").is_dir()  # written by the workers


@pytest.mark.slow
def test_paper_preset_through_the_fake_hub(fake_hub: FakeHub, tiny_dirs, tmp_path: Path):
    served = {
        "gpt2": "gpt2",
        "facebook/opt-125m": "opt",
        "EleutherAI/pythia-70m-deduped": "gpt_neox",
    }
    for repo_id, family in served.items():
        fake_hub.add_repo(repo_id).commit(checkpoint_files(tiny_dirs[family], "sharded"))
    out = tmp_path / "paper.csv"
    done = cli("--preset", "paper", "--out", str(out), "--jobs", "2", "--quiet")
    assert done.returncode == 1
    failed = [line for line in done.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == len(PAPER_MODELS) - len(served)
    assert all("on the hub" in line for line in failed), failed
    table = pd.read_csv(out)
    assert set(table["model"]) == set(served)
    for repo_id, family in served.items():
        rows = table[table["model"] == repo_id].reset_index(drop=True)
        np.testing.assert_allclose(rows["energy"], analyze(str(tiny_dirs[family])).heads["energy"])


@pytest.mark.slow
def test_paper_preset_offline_fails_in_one_line_each(tmp_path: Path):
    done = cli(
        "--preset",
        "paper",
        "--out",
        str(tmp_path / "p.csv"),
        "--jobs",
        "2",
        env={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "empty-hub")},
    )
    assert done.returncode == 1
    failed = [line for line in done.stderr.splitlines() if line.startswith("failed:")]
    assert [line.split(": ")[1] for line in failed] == list(PAPER_MODELS)
    assert all("not in the local hub cache" in line for line in failed)
    assert not (tmp_path / "p.csv").exists()
