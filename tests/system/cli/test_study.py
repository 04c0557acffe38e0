"""``headforms study``: on a tiny model, the tables it writes hold the library's numbers (a
whole-model edit's row is the intervention's, over the texts the verdict of their positions),
the report is one self-contained HTML file with the command, versions and seed at its top, and
bad input is one line with exit status 2."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import tiny_runnable

from headforms.cli import main
from headforms.interventions import intervention, request_of

TEXTS = (
    tiny_runnable.words([5, 6, 7, 8, 5, 6, 7, 8, 30, 31, 32, 40, 41]),
    tiny_runnable.words([9, 10, 11, 12, 13, 9, 10, 11, 12, 13, 50]),
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("cli-study")
    tiny_runnable.checkpoint("llama", directory, seed=2)
    return str(directory)


def test_a_study_writes_the_librarys_numbers_and_an_offline_report(
    model_dir: str, tmp_path: Path, capsys
) -> None:
    files = []
    for index, text in enumerate(TEXTS):
        path = tmp_path / f"text{index}.txt"
        path.write_text(text, encoding="utf-8")
        files.append(str(path))
    out = tmp_path / "study"
    code = main(
        [
            "study", model_dir, "--texts", ",".join(files), "--controls", "3",
            "--head-controls", "1", "--edits", "identity,flip,output_mean", "--sweeps", "zero",
            "--seed", "5", "--out", str(out), "--quiet",
        ]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0
    whole = pd.read_csv(out / "whole_model.csv")
    assert list(whole["text"]) == ["text0.txt", "text1.txt", "all"] * 3
    flip = whole[(whole["edit"] == "flip") & (whole["text"] == "text0.txt")].iloc[0]
    want = intervention(
        model_dir, request_of("flip", text=TEXTS[0], controls=3, seed=5), use_cache=False
    ).table.iloc[0]
    for column in ("delta_ce", "kl", "score_rms", "control_median", "p_value"):
        assert flip[column] == pytest.approx(want[column], rel=1e-9), column
    both = whole[(whole["edit"] == "flip") & (whole["text"] == "all")].iloc[0]
    assert both["delta_ce"] == pytest.approx(
        whole[(whole["edit"] == "flip") & (whole["text"] != "all")]["delta_ce"].mean()
    )
    heads = pd.read_csv(out / "head_verdicts.csv")
    assert len(heads) == 2 * 4 and set(heads["edit"]) == {"zero"}
    correlations = pd.read_csv(out / "correlations.csv")
    assert "norm_l" in set(correlations["column"]) and "p_value" in correlations
    report = (out / "report.html").read_text(encoding="utf-8")
    top = report[: report.index("<h2>")]
    assert "headforms study" in top and "--seed 5" in top and "transformers" in top
    assert not re.search(r"<script[^>]+src=", report)  # plotly.js inside: opens offline
    assert "Plotly.newPlot" in report or "Plotly.react" in report
    assert "flip" in printed and "rho of zero cost" in printed


def test_bad_input_is_one_line(model_dir: str, tmp_path: Path, capsys) -> None:
    for args, message in (
        (["--texts", "bible"], "error: --texts 'bible': neither a shipped text"),
        (["--sweeps", "output_zero"], "error: a per-head sweep edits the form"),
        (["--edits", "sideways"], "error: unknown edit 'sideways'"),
        (["--jobs", "0"], "error: --jobs 0: a whole number of processes, 1 or more"),
    ):
        code = main(["study", model_dir, "--out", str(tmp_path / "x"), "--quiet", *args])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith(message[: len("error: ")]) and message.split(": ", 1)[1][:10] in err


def test_worker_processes_give_the_study_of_one_process(model_dir: str) -> None:
    """``jobs = 2`` (two spawned processes, each loading the model) writes the same tables as
    the study run in this process: where a request ran changes nothing."""
    from headforms.study import run_study
    from headforms.study_options import StudyOptions

    options = StudyOptions(
        texts=(("a", TEXTS[0]), ("b", TEXTS[1])),
        controls=2,
        whole_edits=("identity", "flip"),
        sweep_edits=("zero",),
        seed=3,
    )
    steps: list[tuple[int, int]] = []
    apart = run_study(model_dir, options, lambda done, total, _: steps.append((done, total)), 2)
    here = run_study(model_dir, options)
    for name in ("whole_model", "sweeps", "head_verdicts", "dose_controls", "correlations"):
        pd.testing.assert_frame_equal(getattr(apart, name), getattr(here, name), obj=name)
    assert steps[-1][0] == steps[-1][1] == options.passes(2 * 4)  # every pass counted, once


def test_a_hosted_study_runs_in_its_own_process_only(
    model_dir: str, tmp_path: Path, capfd, monkeypatch
) -> None:
    monkeypatch.setenv("HEADFORMS_HOSTED", "1")
    code = main(["study", model_dir, "--out", str(tmp_path / "x"), "--quiet", "--jobs", "2"])
    err = capfd.readouterr().err  # hosted mode runs the command in a contained process
    assert code == 2 and err.count("\n") == 1, err
    assert "in hosted mode a study runs in its own process only" in err
