"""Hosted mode: a sweep over RoPE positions is a new computation a visitor triggers, so it runs
in a contained worker process (never in the server), is charged to the visitor's budget of new
analyses, is read back from the store afterwards (no worker, no charge) and is refused in one
line past the budget; a model without RoPE is refused in one line before any worker starts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tiny_models

import headforms.streaming as streaming
from headforms import hosted
from headforms.engine import sweep
from headforms.errors import LimitError, OptionError
from headforms.hosted import api, process
from headforms.options import SweepOptions
from headforms.settings import HOSTED_ENV, ROOTS_ENV, VISITOR_ANALYSES_ENV


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hosted-motion") / "models"
    tiny_models.build("llama", base / "llama", seed=21)
    tiny_models.build("gpt2", base / "gpt2", seed=22)
    return base


@pytest.fixture
def hosted_env(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Hosted mode over ``root``, an empty cache, fresh budgets and turns, one thread; the
    server process itself must never compute a sweep."""
    monkeypatch.setenv(HOSTED_ENV, "1")
    monkeypatch.setenv(ROOTS_ENV, str(root))
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEADFORMS_THREADS", "1")
    monkeypatch.setattr(api, "hosting", api.Hosting())

    def in_the_server(*args, **kwargs):
        raise AssertionError("a sweep was computed in the server, not in a contained worker")

    monkeypatch.setattr(streaming, "compute_sweep", in_the_server)
    monkeypatch.setattr(streaming, "forms_sweep", in_the_server)
    return root


def test_a_sweep_runs_contained_is_charged_and_then_read_back(hosted_env: Path, monkeypatch):
    monkeypatch.setenv(VISITOR_ANALYSES_ENV, "1")
    spec = str(hosted_env / "llama")
    options = SweepOptions("0:16")
    result = hosted.sweep(spec, options, visitor="10.0.0.1")
    again = hosted.sweep(spec, options, visitor="10.0.0.1")  # a store read: no new charge
    np.testing.assert_array_equal(again.stacked("a"), result.stacked("a"))
    with pytest.raises(LimitError) as caught:
        hosted.sweep(spec, SweepOptions("0:17"), visitor="10.0.0.1")  # a new one: over budget
    assert "new analyses" in str(caught.value) and "\n" not in str(caught.value)
    other = hosted.sweep(spec, SweepOptions("0:17"), visitor="10.0.0.2")  # its own budget
    assert other.positions[-1] == 17
    monkeypatch.undo()  # the server may compute again: compare with the engine's own sweep
    expected = sweep(spec, "0:16", use_cache=False)
    np.testing.assert_array_equal(result.stacked("a"), expected.stacked("a"))


def test_a_model_without_rope_is_refused_in_one_line_before_any_worker(
    hosted_env: Path, monkeypatch
):
    """The server refuses it from its config before any worker starts, and the refusal costs the
    visitor none of its new analyses."""
    monkeypatch.setenv(VISITOR_ANALYSES_ENV, "1")
    real_start = process.start_worker
    starts: list[int] = []
    monkeypatch.setattr(process, "start_worker", lambda *a: starts.append(1) or real_start(*a))
    for _ in range(2):
        with pytest.raises(OptionError) as caught:
            hosted.sweep(str(hosted_env / "gpt2"), SweepOptions("0:4"), visitor="10.0.0.3")
        assert "has no rotation" in str(caught.value) and "\n" not in str(caught.value)
    assert starts == []
    # its one new analysis is still there
    assert hosted.sweep(str(hosted_env / "llama"), SweepOptions("0:3"), visitor="10.0.0.3")
    assert starts == [1]
