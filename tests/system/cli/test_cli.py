"""Bad inputs give one specific error from the library and the same single line from the CLI;
``python -m headforms models`` and ``analyze --out`` (csv, json records, parquet) work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from counting import count_computations
from repo import REPO as ROOT

from headforms import BUNDLED_MODELS, analyze
from headforms.cli import main, write_table
from headforms.columns import TABLE_COLUMNS
from headforms.errors import (
    CorruptFileError,
    HeadformsError,
    ModelSpecError,
    NoSuchModelError,
    OptionError,
    UnsupportedArchitectureError,
)
from headforms.model_analysis import model_baseline
from headforms.readers import GGUFReader

REQUIRED_COLUMNS = [
    "layer",
    "head",
    "kv_head",
    "a",
    "b",
    "c",
    "d",
    "b_sym",
    "c_sym",
    "d_sym",
    "energy",
    "pairing",
    "parity",
    "n_pos",
    "n_neg",
]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m headforms ARGS`` in a fresh interpreter (the session's cache dir)."""
    return subprocess.run(
        [sys.executable, "-m", "headforms", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


@dataclass
class BadInput:
    """One bad input: the spec, options, the error it must raise and what the message says."""

    spec: str
    error: type[HeadformsError]
    message: str
    cli_args: list[str] = field(default_factory=list)
    options: dict[str, int] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


CASES = [
    "missing path",
    "directory without a model",
    "single file that is not gguf",
    "truncated safetensors",
    "corrupt safetensors header",
    "gguf truncated in its header",
    "gguf truncated in its tensor data",
    "wrong gguf magic",
    "unsupported architecture",
    "no such model here",
    "rope position on a non-rope model",
    "out with a bad extension",
]


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BadInput]:
    root = tmp_path_factory.mktemp("bad-inputs")
    minilm = BUNDLED_MODELS["minilm-l6"].locate()
    smollm2 = BUNDLED_MODELS["smollm2-135m"].locate()

    empty = root / "not-a-model"
    empty.mkdir()
    (empty / "README.md").write_text("no weights here\n")
    notes = root / "notes.txt"
    notes.write_text("hello\n")

    truncated = root / "truncated-safetensors"
    truncated.mkdir()
    shutil.copy(minilm / "config.json", truncated)
    with (minilm / "model.safetensors").open("rb") as fh:
        (truncated / "model.safetensors").write_bytes(fh.read(1 << 20))

    corrupt = root / "corrupt-header"
    corrupt.mkdir()
    shutil.copy(minilm / "config.json", corrupt)
    shutil.copy(minilm / "model.safetensors", corrupt)
    with (corrupt / "model.safetensors").open("r+b") as fh:  # same size, damaged JSON
        fh.seek(8)
        fh.write(b'{"oops": [1, 2,')

    reader = GGUFReader(smollm2)
    data_start = min(reader._tensors[name][2] for name in reader.names())  # first tensor byte
    with smollm2.open("rb") as fh:
        head = fh.read(data_start + (1 << 20))
    gguf_header_cut = root / "header-cut.gguf"
    gguf_header_cut.write_bytes(head[: data_start // 2])
    gguf_data_cut = root / "data-cut.gguf"
    gguf_data_cut.write_bytes(head)
    magic = root / "magic.gguf"
    magic.write_bytes(b"GGML" + head[4 : 1 << 16])

    mamba = root / "mamba"
    mamba.mkdir()
    (mamba / "config.json").write_text(json.dumps({"model_type": "mamba", "hidden_size": 64}))

    hf_home = root / "hf-home"
    (hf_home / "hub").mkdir(parents=True)
    out = root / "table.txt"

    return {
        "missing path": BadInput(str(root / "nope"), ModelSpecError, "no such file or directory"),
        "directory without a model": BadInput(str(empty), ModelSpecError, "has no config.json"),
        "single file that is not gguf": BadInput(str(notes), ModelSpecError, "is not a model"),
        "truncated safetensors": BadInput(str(truncated), CorruptFileError, "truncated"),
        "corrupt safetensors header": BadInput(str(corrupt), CorruptFileError, "not valid JSON"),
        "gguf truncated in its header": BadInput(
            str(gguf_header_cut), CorruptFileError, "GGUF header runs past the end"
        ),
        "gguf truncated in its tensor data": BadInput(
            str(gguf_data_cut), CorruptFileError, "lies past the end of the file"
        ),
        "wrong gguf magic": BadInput(str(magic), CorruptFileError, "not a GGUF file"),
        "unsupported architecture": BadInput(
            str(mamba), UnsupportedArchitectureError, "unsupported architecture 'mamba'"
        ),
        "no such model here": BadInput(
            "some-org/not-downloaded",
            NoSuchModelError,
            "no such model here: 'some-org/not-downloaded' is not a bundled model",
            env={"HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"},
        ),
        "rope position on a non-rope model": BadInput(
            "minilm-l6",
            OptionError,
            "RoPE models only",
            cli_args=["--rope-position", "3"],
            options={"rope_position": 3},
        ),
        "out with a bad extension": BadInput(
            "minilm-l6", OptionError, "unknown extension", cli_args=["--out", str(out)]
        ),
    }


def _library_error(case: BadInput, monkeypatch: pytest.MonkeyPatch) -> HeadformsError:
    """The error the library raises for ``case``."""
    # The same variables as the subprocess gets (the library reads them from os.environ when it
    # locates a model); HF_HUB_CACHE would take precedence over HF_HOME.
    if case.env:
        monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(case.error) as info:
        if "--out" in case.cli_args:
            result = analyze(case.spec, **case.options)
            write_table(result.heads, Path(case.cli_args[case.cli_args.index("--out") + 1]))
        else:
            analyze(case.spec, **case.options)
    return info.value


def run_main(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``headforms.cli.main(ARGS)`` in this process: (exit code, stdout, stderr).

    An exception escaping ``main`` fails the test (it would be a traceback for the user).
    """
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", CASES)
def test_bad_input_gives_one_specific_line(
    bad_inputs: dict[str, BadInput],
    name: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    case = bad_inputs[name]
    error = _library_error(case, monkeypatch)
    message = str(error)
    assert type(error) is case.error
    assert case.message in message
    assert "\n" not in message and len(message) < 600

    code, out, err = run_main("analyze", case.spec, *case.cli_args, capsys=capsys)
    assert code == 2
    assert err.strip().splitlines() == [f"error: {message}"], err
    assert out == ""


@pytest.mark.parametrize(
    "name",
    [
        "missing path",
        "gguf truncated in its tensor data",
        "no such model here",
    ],
)
def test_bad_input_from_a_real_process(bad_inputs: dict[str, BadInput], name: str) -> None:
    """``python -m headforms``: exit code 2, one ``error:`` line, no traceback."""
    case = bad_inputs[name]
    proc = run_cli("analyze", case.spec, *case.cli_args, env=case.env)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and case.message in lines[0]
    assert proc.stdout == ""


def test_out_is_checked_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "t.xlsx"
    code, _, err = run_main(
        "analyze", str(tmp_path / "missing-model"), "--out", str(bad), capsys=capsys
    )
    assert code == 2  # the extension is refused before the (missing) model is even looked at
    assert (
        err.strip()
        == f"error: --out {bad}: unknown extension .xlsx; accepted: .csv, .json, .parquet"
    )
    no_dir = tmp_path / "no-dir" / "t.csv"
    code, _, err = run_main(
        "analyze", str(tmp_path / "missing-model"), "--out", str(no_dir), capsys=capsys
    )
    assert (
        code == 2
        and err.strip() == f"error: --out {no_dir}: directory {no_dir.parent} does not exist"
    )


# ---------------------------------------------------------------------------------------------
# Working commands


def test_models_lists_the_bundled_models() -> None:
    proc = run_cli("models")
    assert proc.returncode == 0, proc.stderr
    listed = [line.split()[0] for line in proc.stdout.splitlines() if line and line[0] != " "]
    assert listed == ["smollm2-135m", "minilm-l6", "gemma3-270m"]
    assert "(default)" in proc.stdout.splitlines()[0]


@pytest.fixture(scope="module")
def minilm_heads() -> pd.DataFrame:
    return analyze("minilm-l6").heads


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet"])
def test_analyze_out_writes_the_head_table(
    tmp_path: Path, suffix: str, minilm_heads: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / f"heads{suffix}"
    code, stdout, err = run_main(
        "analyze", "minilm-l6", "--out", str(out), "--quiet", capsys=capsys
    )
    assert code == 0, err
    assert err.strip() == f"wrote {len(minilm_heads)} heads to {out}" and stdout == ""
    if suffix == ".csv":
        table = pd.read_csv(out)
    elif suffix == ".json":
        records = json.loads(out.read_text())
        assert isinstance(records, list) and isinstance(records[0], dict)
        table = pd.DataFrame.from_records(records)
    else:
        table = pd.read_parquet(out)
    assert set(REQUIRED_COLUMNS) <= set(table.columns)
    assert list(table.columns[: len(TABLE_COLUMNS)]) == list(TABLE_COLUMNS)
    assert len(table) == len(minilm_heads) == 72
    assert list(out.parent.iterdir()) == [out]  # no temporary file left behind
    for column in REQUIRED_COLUMNS:
        if column == "parity":
            assert (table[column] == minilm_heads[column]).all()
        else:  # exact round trip (csv and json write shortest round-trip reprs)
            np.testing.assert_array_equal(table[column], minilm_heads[column])
    if suffix == ".parquet":
        pd.testing.assert_frame_equal(table, minilm_heads)


NO_PANDAS_RUN = (
    "import sys; from headforms.cli import main; code = main(sys.argv[1:]); "
    "print('pandas imported' if 'pandas' in sys.modules else 'no pandas'); sys.exit(code)"
)
"""``headforms ARGS`` in a fresh interpreter that says at the end whether pandas was imported."""


@pytest.mark.parametrize(
    ("suffix", "positions"), [(".csv", None), (".json", None), (".csv", "0:8:4")]
)
def test_analyze_writes_csv_and_json_without_pandas(
    tmp_path: Path, suffix: str, positions: str | None
) -> None:
    """The cold command line's table file, from a .gguf with its Gaussian baseline (at one RoPE
    position, or every position of a range), in a fresh process: pandas is never imported, and
    the bytes are those pandas writes for the library's table (NaN bias norms, ints, parity
    strings, floats' shortest reprs, ``rand_*`` columns)."""
    from headforms.cli.column_files import json_records_of_frame
    from headforms.columns import METRIC_COLUMNS
    from headforms.engine import sweep

    gguf = BUNDLED_MODELS["smollm2-135m"].locate()
    out = tmp_path / f"heads{suffix}"
    sweep_args = ["--rope-positions", positions] if positions else []
    proc = subprocess.run(
        [sys.executable, "-c", NO_PANDAS_RUN, "analyze", str(gguf), *sweep_args, "--baseline"]
        + ["--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "no pandas"
    result = analyze(str(gguf))
    if positions is None:
        table = result.table(model_baseline(result.card))
    else:  # every position's row of a head beside that head's baseline metrics
        table = sweep(str(gguf), positions).table.copy()
        base = model_baseline(result.card).heads
        for name in METRIC_COLUMNS:
            table[f"rand_{name}"] = np.tile(base[name].to_numpy(), 3)
    assert table["q_bias_norm"].isna().all() and "rand_energy" in table.columns
    expected = table.to_csv(index=False) if suffix == ".csv" else json_records_of_frame(table)
    assert out.read_bytes() == expected.encode()


def test_analyze_prints_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """The summary's parity shares and statistics are those of the table, uniformly rounded."""
    code, out, err = run_main("analyze", "minilm-l6", "--baseline", capsys=capsys)
    assert code == 0, err
    result = analyze("minilm-l6")
    heads, base = result.heads, model_baseline(result.card).heads
    lines = out.splitlines()
    assert "bert" in lines[0] and "6 layers x 12 heads" in lines[0] and "N=384" in lines[0]
    assert lines[1].split() == ["I+", "%", "II", "%", "I-", "%", "heads"]
    shares = lines[2].split()[-4:]
    expected = [100 * (heads["parity"] == p).mean() for p in ("I+", "II", "I-")]
    assert shares == [f"{v:.1f}" for v in expected] + ["72"]
    header = lines[4].split()
    assert header == ["a", "b", "c", "d", "energy", "pairing", "rand_energy", "rand_pairing"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[5:9]}
    assert rows["mean"][4] == f"{heads['energy'].mean():.4f}"
    assert rows["median"][5] == f"{heads['pairing'].median():.4f}"
    assert rows["max"][0] == f"{heads['a'].max():.4f}"
    assert rows["mean"][6] == f"{base['energy'].mean():.4f}"
    assert all(len(v.split(".")[1]) == 4 for row in rows.values() for v in row)


def test_spectra_all_and_baseline_warm_what_the_dashboard_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``analyze --spectra all --baseline`` stores every spectrum and the baseline, so the
    dashboard's load of the same model afterwards computes nothing."""
    import headforms.baseline as baseline
    from headforms.columns import ALL_SPECTRA

    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    code, _, err = run_main("analyze", "minilm-l6", "--spectra", "all", "--baseline", capsys=capsys)
    assert code == 0, err
    calls = count_computations(monkeypatch)
    real_baseline = baseline.compute_baseline
    monkeypatch.setattr(
        baseline, "compute_baseline", lambda *a, **k: calls.append("b") or real_baseline(*a, **k)
    )
    result = analyze("minilm-l6", spectra=ALL_SPECTRA)
    assert set(result.spectra) == set(ALL_SPECTRA)
    assert len(model_baseline(result.card).columns["energy"]) == 72
    assert calls == []  # neither the analysis nor its baseline was computed again


@pytest.mark.parametrize(
    ("env", "flags", "address"),
    [
        ({}, [], ("127.0.0.1", "8501")),
        ({"HOST": "0.0.0.0", "PORT": "9123"}, [], ("0.0.0.0", "9123")),
        ({"HOST": "0.0.0.0", "PORT": "9123"}, ["--host", "::1", "--port", "8600"], ("::1", "8600")),
    ],
)
def test_serve_listens_where_host_and_port_say(
    env: dict[str, str],
    flags: list[str],
    address: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``headforms serve`` takes its address from $HOST/$PORT (default 127.0.0.1:8501); the
    flags override them. Checked on the Streamlit command it would replace itself with, and its
    environment: Streamlit's server believes X-Forwarded-For only from the trusted proxies."""
    for name in ("HOST", "PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")  # uvicorn's default, restored after
    monkeypatch.setenv("HEADFORMS_TRUSTED_PROXIES", "10.0.0.0/8")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    commands: list[list[str]] = []
    monkeypatch.setattr(os, "execv", lambda executable, command: commands.append(command))
    monkeypatch.setattr(os, "chdir", lambda path: None)
    code, _, err = run_main("serve", *flags, capsys=capsys)
    assert code == 0 and len(commands) == 1
    host, port = address
    assert f"--server.address={host}" in commands[0]
    assert f"--server.port={port}" in commands[0]
    assert f"http://{host}:{port}" in err
    assert os.environ["FORWARDED_ALLOW_IPS"] == "10.0.0.0/8"


@pytest.mark.parametrize("port", ["http", "0", "70000", "-1"])
def test_a_bad_port_is_one_line_for_serve_only(
    port: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad $PORT is reported by ``serve`` in one line; the other commands do not read it."""
    monkeypatch.setenv("PORT", port)
    monkeypatch.setattr(os, "execv", lambda executable, command: pytest.fail("served"))
    with pytest.raises(SystemExit) as exit_info:
        main(["serve"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert f"{port!r} is not a port (from --port or $PORT)" in err and "Traceback" not in err
    code, out, _ = run_main("models", capsys=capsys)
    assert code == 0 and "smollm2-135m" in out
