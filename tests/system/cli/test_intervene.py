"""``headforms intervene``: the files it writes hold the library's rows, the summary it prints,
and one line with exit status 2 for every bad input (never a traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import tiny_runnable
from published_tables import head_rows
from repo import REPO

from headforms.behaviour.runnable import runnable
from headforms.cli import main
from headforms.interventions import request_of
from headforms.interventions.compute import compute_intervention
from headforms.sources import locate

TEXT = tiny_runnable.words([5, 6, 7, 8, 5, 6, 7, 8, 30, 31, 32])


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("cli-intervene")
    tiny_runnable.checkpoint("llama", directory, seed=2)
    return str(directory)


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_joint_edit_is_one_row(model_dir: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "joint.csv"
    code, _, err = run_main(
        capsys, "intervene", model_dir, "--edit", "symmetric", "--layer", "1",
        "--prompt", TEXT, "--controls", "3", "--seed", "4", "--out", str(out), "--quiet",
    )  # fmt: skip
    assert code == 0, err
    table = pd.read_csv(out)
    assert len(table) == 1 and table["layer"].isna().all() and table["head"].isna().all()
    for column in ("edit", "tokens", "ce_original", "ce_edited", "delta_ce", "kl"):
        assert column in table
    assert table["scope"].iloc[0] == "layer 1" and table["heads"].iloc[0] == 4
    want = compute_intervention(
        runnable(locate(model_dir)),
        request_of("symmetric", layer=1, text=TEXT, controls=3, seed=4),
    ).table
    for column in ("delta_ce", "kl", "control_median", "control_p10", "control_p90"):
        assert table[column].iloc[0] == pytest.approx(want[column].iloc[0], rel=1e-12)


def test_each_head_is_one_row(model_dir: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "each.json"
    code, _, err = run_main(
        capsys, "intervene", model_dir, "--edit", "flip", "--heads", "0.1,1.3", "--each",
        "--prompt", TEXT, "--controls", "0", "--probe-length", "6", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    rows = json.loads(out.read_text())
    assert [(r["layer"], r["head"]) for r in rows] == [(0, 1), (1, 3)]
    assert all(r["probe_length"] == 6 and r["induction_before"] is not None for r in rows)
    assert all(r["parity_edited"] in ("I+", "II", "I-") and r["a_edited"] >= 0 for r in rows)


def test_without_out_a_summary_is_printed(model_dir: str, capsys) -> None:
    code, out, _ = run_main(
        capsys, "intervene", model_dir, "--edit", "rank1", "--heads", "1.2", "--prompt", TEXT,
        "--controls", "2", "--probe", "--quiet",
    )  # fmt: skip
    assert code == 0
    assert "rank1 of L1.H2" in out and "delta_ce" in out and "controls changed it less" in out
    assert "edited form at d = 0" in out and "induction loss" in out
    assert "p = " in out and "matched on scores" in out and "score change (RMS" in out
    assert "delta_induction_loss" in out  # the probe's loss against its controls
    code, out, _ = run_main(
        capsys, "intervene", model_dir, "--edit", "zero", "--layer", "0", "--each",
        "--prompt", TEXT, "--controls", "0", "--quiet",
    )  # fmt: skip
    assert code == 0 and "each head of layer 0 on its own (4 heads" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--edit", "shuffle"], "error: unknown edit 'shuffle'; accepted: identity"),
        (["--edit", "flip", "--heads", "9.0"], "error: layer 9 does not exist"),
        (["--edit", "flip", "--heads", "1.7"], "error: head 7 does not exist"),
        (["--edit", "flip", "--heads", "x"], "error: --heads: 'x' is not a head"),
        (["--edit", "flip", "--prompt", " "], "error: the text is empty"),
        (["--edit", "flip", "--max-tokens", "100000"], "error: --max-tokens 100000"),
        (["--edit", "flip", "--layer", "1", "--all"], "error: --all and --layer"),
        (["--edit", "flip", "--layer", "1", "--parity", "II"], "error: give one scope"),
        (["--edit", "flip", "--text", "/nonexistent.txt"], "error: --text /nonexistent.txt"),
        (["--edit", "flip", "--out", "x.xlsx"], "error: --out x.xlsx: unknown extension"),
        (["--edit", "flip", "--text", "bible"], "error: --text bible: no such file"),
    ],
)
def test_bad_input_is_one_line(model_dir: str, capsys, args: list[str], message: str) -> None:
    code, out, err = run_main(capsys, "intervene", model_dir, *args, "--quiet")
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1, err


def test_a_published_table_and_a_missing_model_are_one_line(tmp_path: Path) -> None:
    """In a subprocess, as a user runs it: one line, exit status 2, no traceback."""
    table = tmp_path / "published.csv"
    head_rows(1, layers=2, heads=2).to_csv(table, index=False)
    for spec, message in (
        (str(table), "is a published per-head table: it has no weights to run; interventions"),
        (str(tmp_path / "nothing"), "error:"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "headforms", "intervene", spec, "--edit", "flip"],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert message in result.stderr


def test_a_model_transformers_cannot_run_is_one_line(tmp_path: Path, capsys) -> None:
    import gguf
    import numpy as np

    path = tmp_path / "rwkv.gguf"
    writer = gguf.GGUFWriter(str(path), "rwkv6")
    writer.add_block_count(1)
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((8, 8), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    code, out, err = run_main(capsys, "intervene", str(path), "--edit", "flip", "--quiet")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: ") and "rwkv" in err, err


def test_the_pass_bound_is_the_servers(model_dir: str, capsys, monkeypatch) -> None:
    """One bound for the command line and the server: HEADFORMS_INTERVENTION_PASSES."""
    monkeypatch.setenv("HEADFORMS_INTERVENTION_PASSES", "5")
    code, out, err = run_main(
        capsys, "intervene", model_dir, "--edit", "flip", "--heads", "1.0", "--controls", "5",
        "--prompt", TEXT, "--quiet",
    )  # fmt: skip
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "takes 6 sequence passes; at most 5 are allowed (HEADFORMS_INTERVENTION_PASSES)" in err


def test_a_shipped_text_by_name_and_the_cost_first(model_dir: str, capsys) -> None:
    code, out, err = run_main(
        capsys, "intervene", model_dir, "--edit", "flip", "--heads", "0.1", "--text", "semver",
        "--controls", "2", "--match", "span",
    )  # fmt: skip
    assert code == 0, err
    assert err.startswith("cost: flip on L0.H1: 3 sequence passes")
    assert "text: semver" in out and "matched on span" in out


@pytest.mark.parametrize("family", ["bloom", "opt"])
def test_bloom_and_opt_run_from_layer_0_and_above(tmp_path: Path, family: str) -> None:
    """In a subprocess, as a user runs it (BLOOM ended in a traceback at layers 0 and 1)."""
    tiny_runnable.checkpoint(family, tmp_path / family, seed=4)
    for heads in ("0.1", "1.2"):
        result = subprocess.run(
            [sys.executable, "-m", "headforms", "intervene", str(tmp_path / family), "--edit",
             "flip", "--heads", heads, "--controls", "2", "--prompt", TEXT, "--quiet"],
            capture_output=True, text=True, cwd=REPO, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "cosine distance" in result.stdout


def test_a_model_the_hooks_cannot_run_is_one_line(tmp_path: Path) -> None:
    """Soft-capped attention logits (a Gemma-3 config that sets them): one line, exit 2."""
    tiny_runnable.checkpoint(
        "gemma3_text", tmp_path / "capped", seed=4, attn_logit_softcapping=30.0
    )
    result = subprocess.run(
        [sys.executable, "-m", "headforms", "intervene", str(tmp_path / "capped"), "--edit",
         "flip", "--heads", "1.0", "--controls", "1", "--prompt", TEXT, "--quiet"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "soft-caps its attention logits" in result.stderr
