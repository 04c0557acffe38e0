"""``headforms demo``: builds the demo once and prints folders that the motion commands read; a
bad seed is one line and exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from headforms.cli import main
from headforms.demo import build_demo


def test_demo_prints_the_run_and_the_pair(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--quiet"]) == 0
    out = capsys.readouterr().out
    demo = build_demo()  # built by the command: read back
    lines = dict(
        line.split(":", 1) for line in out.splitlines() if line.startswith(("training", "model"))
    )
    assert Path(lines["training run"].strip()) == demo.run
    assert Path(lines["model A"].strip()) == demo.base
    assert Path(lines["model B"].strip()) == demo.finetuned
    assert "not a real model" in out and demo.fingerprint in out
    assert main(["diff", str(demo.base), str(demo.finetuned), "--quiet"]) == 0


def test_a_bad_seed_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seed", "-3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: demo seed -3: a whole number from 0 to 2147483647"]
