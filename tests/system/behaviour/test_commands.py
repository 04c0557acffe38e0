"""``headforms attention`` and ``headforms behaviour``: the files they write hold the library's
values; bad input is one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tiny_runnable
from repo import REPO as ROOT

from headforms.behaviour import SCORE_COLUMNS, attention, head_type_scores
from headforms.cli import main

TEXT = tiny_runnable.words([5, 6, 7, 5, 6, 7, 30])


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("cli-llama")
    tiny_runnable.checkpoint("llama", directory, seed=1)
    return str(directory)


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``headforms ARGS`` in this process; an exception escaping ``main`` fails the test."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_one_head_as_json(model_dir: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "head.json"
    code, _, err = run_main(
        capsys, "attention", model_dir, "--prompt", TEXT, "--layer", "1", "--head", "2",
        "--out", str(out), "--quiet",
    )  # fmt: skip
    assert code == 0 and "wrote 1 head" in err
    document = json.loads(out.read_text())
    pattern = attention(model_dir, TEXT)
    assert document["tokens"] == pattern.tokens
    assert document["token_ids"] == pattern.token_ids
    assert (document["layer"], document["head"]) == (1, 2)
    np.testing.assert_array_equal(np.array(document["weights"], np.float32), pattern.head(1, 2))


def test_stdout_json_of_a_layer_and_scores(model_dir: str, capsys) -> None:
    code, out, _ = run_main(
        capsys, "attention", model_dir, "--prompt", TEXT, "--layer", "0", "--scores", "--quiet"
    )
    assert code == 0
    document = json.loads(out)
    pattern = attention(model_dir, TEXT)
    assert document["kind"] == "scores"
    assert [(h["layer"], h["head"]) for h in document["heads"]] == [(0, h) for h in range(4)]
    scores = np.array(document["heads"][3]["scores"], dtype=float)  # null -> nan
    np.testing.assert_array_equal(scores, pattern.head(0, 3, "scores"))
    assert np.isnan(scores[0, 1])  # the causal mask


def test_every_head_as_npz(model_dir: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "all.npz"
    code, _, _ = run_main(capsys, "attention", model_dir, "--prompt", TEXT, "--out", str(out))
    assert code == 0
    with np.load(out) as data:
        pattern = attention(model_dir, TEXT)
        weights = data["weights"].reshape(pattern.weights.shape)
        np.testing.assert_array_equal(weights, pattern.weights)
        assert data["tokens"].tolist() == pattern.tokens
        assert data["layer"].tolist() == [0] * 4 + [1] * 4


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet"])
def test_behaviour_table(model_dir: str, tmp_path: Path, suffix: str, capsys) -> None:
    out = tmp_path / f"heads{suffix}"
    code, _, err = run_main(
        capsys, "behaviour", model_dir, "--probe-length", "7", "--seed", "3", "--out", str(out)
    )
    assert code == 0 and "wrote 8 heads" in err
    table = {
        ".csv": pd.read_csv,
        ".json": pd.read_json,
        ".parquet": pd.read_parquet,
    }[suffix](out)
    want = head_type_scores(model_dir, probe_length=7, seed=3).table
    assert list(table.columns) == ["layer", "head", *SCORE_COLUMNS]
    np.testing.assert_allclose(table[list(SCORE_COLUMNS)], want[list(SCORE_COLUMNS)], rtol=1e-12)


def test_behaviour_on_a_prompt_prints_the_top_heads(model_dir: str, capsys) -> None:
    code, out, _ = run_main(capsys, "behaviour", model_dir, "--prompt", TEXT, "--top", "2")
    assert code == 0
    lines = out.strip().splitlines()
    assert [line.split()[0] for line in lines] == list(SCORE_COLUMNS)
    want = head_type_scores(model_dir, prompt=TEXT).table.nlargest(2, "induction")
    assert lines[3].split()[1] == f"L{want['layer'].iloc[0]}H{want['head'].iloc[0]}"


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["attention", "{model}", "--prompt", ""], {}, "the prompt is empty"),
        (["attention", "{model}", "--prompt", "   \n"], {}, "the prompt is empty"),
        (
            ["attention", "{model}", "--prompt", "w5 " * 40],
            {"HEADFORMS_PROMPT_CHARACTERS": "50"},
            "at most 50 are accepted (HEADFORMS_PROMPT_CHARACTERS)",
        ),
        pytest.param(  # loads the model's tokenizer in a fresh process: over 5 s
            ["attention", "{model}", "--prompt", "w5 " * 40],
            {"HEADFORMS_PROMPT_TOKENS": "16"},
            "take at most 16 tokens (HEADFORMS_PROMPT_TOKENS)",
            marks=pytest.mark.slow,
        ),
        (["attention", "{model}", "--layer", "2", "--head", "0"], {}, "layer 2 does not exist"),
        (["attention", "{model}", "--layer", "0", "--head", "9"], {}, "head 9 does not exist"),
        (["attention", "{model}", "--head", "1"], {}, "--head needs --layer"),
        (["attention", "{model}", "--out", "x.txt"], {}, "unknown extension .txt"),
        (["behaviour", "{model}", "--probe-length", "1"], {}, "probe length 1 is out of range"),
        (["behaviour", "{model}", "--probe-length", "5000"], {}, "out of range: 2 to 124"),
        (["behaviour", "{model}", "--seed", "-1"], {}, "the seed must be a whole number"),
        (["attention", "{notokenizer}"], {}, "has no tokenizer files (one of tokenizer.json"),
        (["attention", "table.csv::gpt2"], {}, "is a published per-head table: it has no weights"),
    ],
)
def test_bad_input_is_one_line(
    model_dir: str, tmp_path: Path, args: list[str], env: dict, message: str
) -> None:
    """A fresh process, as a user runs it: exit status 2, one line on stderr, no traceback."""
    bare = tmp_path / "bare"
    import tiny_models

    if "{notokenizer}" in args:
        tiny_models.build("gpt2", bare)  # weights and config, but no tokenizer files
    argv = [a.format(model=model_dir, notokenizer=bare) for a in args]
    result = subprocess.run(
        [sys.executable, "-m", "headforms", *argv, "--quiet"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT), **env},
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert message in lines[0]
    assert "Traceback" not in result.stderr
