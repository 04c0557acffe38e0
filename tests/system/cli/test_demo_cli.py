"""``headforms demo``: builds the demo once and prints its parts' names (``demo:run``, with their
folders) that the motion commands read; a bad seed, and a ``demo:`` name leaving the demo's
folder, are one line and exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from headforms.cli import main
from headforms.demo import build_demo


def test_demo_prints_the_run_and_the_pair(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["demo", "--quiet"]) == 0
    out = capsys.readouterr().out
    demo = build_demo()  # built by the command: read back
    lines = dict(
        line.split(":", 1) for line in out.splitlines() if line.startswith(("training", "model"))
    )
    base = "demo:base"
    for label, name, folder in (
        ("training run", "demo:run", demo.run),
        ("model A", base, demo.base),
        ("model B", "demo:finetuned", demo.finetuned),
    ):
        assert lines[label].split() == [name, f"({folder})"]
    assert "not a real model" in out and demo.fingerprint in out
    assert main(["diff", base, "demo:finetuned", "--quiet"]) == 0
    assert main(["diff", str(demo.base), str(demo.finetuned), "--quiet"]) == 0  # the folders too
    out = tmp_path / "run.csv"
    assert main(["trajectory", "demo:run", "--out", str(out), "--quiet"]) == 0
    written = out.read_text()
    assert "demo:run/" in written and str(demo.directory) not in written  # named by its spec


def test_a_bad_seed_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seed", "-3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: demo seed -3: a whole number from 0 to 2147483647"]


@pytest.mark.parametrize("name", ["demo:../../etc", "demo:/etc", "demo:"])
def test_a_demo_name_outside_the_demo_is_one_line(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", name, "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"error: {name!r}: a part of the demo is demo:run, demo:base or demo:finetuned "
        "(`headforms demo` builds it)"
    ]
