"""The gateway's kinds computed by the library's engine and forward passes, on a tiny llama:
each gives the library's own result, kept by content (asked again: the cache's copy), read
back from the result store by a new gateway; a forward pass's result is named after the model
each request asked for, the kept one unchanged. (The intervention kind:
test_intervention_kind.py; the demo's: tests/integration/demo.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tiny_runnable

from headforms import engine
from headforms.baseline import gaussian_baseline
from headforms.behaviour import attention, head_type_scores
from headforms.behaviour.run import locate_runnable
from headforms.options import AnalysisOptions, SweepOptions
from headforms.sources import locate
from ui.gateway import (
    Analysis,
    GaussianBaseline,
    LocalGateway,
    ProbeScores,
    PromptAttention,
    RopeSweep,
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("kinds-llama")
    tiny_runnable.checkpoint("llama", directory, seed=5)
    return directory


def test_analysis_and_baseline_are_the_engines(model_dir: Path) -> None:
    located = locate(str(model_dir))
    options = AnalysisOptions(1, spectra=("sv_a",))
    gateway = LocalGateway()
    found = gateway.run(Analysis(located, options))
    want = engine.analyze(str(model_dir), options=options, use_cache=False)
    pd.testing.assert_frame_equal(found.heads, want.heads)
    np.testing.assert_allclose(found.spectra["sv_a"], want.spectra["sv_a"])
    assert gateway.run(Analysis(located, options)) is found
    again = LocalGateway().run(Analysis(located, options))  # read from the store
    pd.testing.assert_frame_equal(again.heads, found.heads)
    shapes = found.card.baseline_shapes
    baseline = gateway.run(GaussianBaseline(shapes))
    pd.testing.assert_frame_equal(baseline.heads, gaussian_baseline(shapes).heads)
    assert LocalGateway().peek(GaussianBaseline(shapes)) is not None  # stored


def test_a_sweep_is_the_engines(model_dir: Path) -> None:
    located = locate(str(model_dir))
    options = SweepOptions("0:3")
    found = LocalGateway().run(RopeSweep(located, options))
    want = engine.sweep(str(model_dir), options=options)
    assert found.positions == want.positions == (0, 1, 2, 3)
    pd.testing.assert_frame_equal(found.table, want.table)
    assert LocalGateway().peek(RopeSweep(located, options)) is not None  # stored


def test_forward_passes_are_the_librarys_named_per_request(model_dir: Path, tmp_path: Path) -> None:
    located = locate_runnable(str(model_dir))
    twin = tmp_path / "same-weights"  # the same files under another name: the same result
    shutil.copytree(model_dir, twin)
    other = locate_runnable(str(twin))
    gateway = LocalGateway()
    prompt = tiny_runnable.words([4, 8, 15, 16])
    pattern = gateway.run(PromptAttention(located, prompt))
    want = attention(str(model_dir), prompt, use_cache=False)
    np.testing.assert_allclose(pattern.weights, want.weights, rtol=1e-5, atol=1e-7)
    assert pattern.model == located.spec
    renamed = gateway.run(PromptAttention(other, prompt))
    assert renamed.model == other.spec and renamed.weights is pattern.weights  # one result
    assert gateway.run(PromptAttention(located, prompt)).model == located.spec  # unchanged
    scores = gateway.run(ProbeScores(located, 6, 2))
    recomputed = head_type_scores(str(model_dir), probe_length=6, seed=2, use_cache=False)
    pd.testing.assert_frame_equal(scores.table, recomputed.table, rtol=1e-5, atol=1e-7)
    assert LocalGateway().peek(ProbeScores(other, 6, 2)).model == other.spec  # stored, named


def test_a_score_split_is_the_librarys_named_per_request(model_dir: Path, tmp_path: Path) -> None:
    from headforms.interventions.request import Scope
    from headforms.why import WhyRequest, why
    from ui.gateway import WhyAttends

    located = locate_runnable(str(model_dir))
    twin = tmp_path / "same-weights"
    shutil.copytree(model_dir, twin)
    other = locate_runnable(str(twin))
    text = tiny_runnable.words([4, 8, 15, 16, 23, 42, 7, 9])
    request = WhyRequest(Scope("heads", ((1, 2), (0, 1))), text=text, max_tokens=8)
    gateway = LocalGateway()
    found = gateway.run(WhyAttends(located, request))
    want = why(str(model_dir), request, use_cache=False)
    pd.testing.assert_frame_equal(found.table, want.table, rtol=1e-5, atol=1e-7)
    assert found.model == located.spec
    assert gateway.run(WhyAttends(other, request)).model == other.spec  # the same, named
    assert LocalGateway().peek(WhyAttends(located, request)) is not None  # stored


def test_a_study_is_the_librarys_and_a_hosted_server_refuses_it_in_one_line(
    model_dir: Path,
) -> None:
    from headforms.errors import LimitError
    from headforms.study import run_study
    from headforms.study_options import StudyOptions
    from ui.gateway import InterventionStudy

    located = locate_runnable(str(model_dir))
    text = tiny_runnable.words(list(range(3, 30)))
    options = StudyOptions(
        texts=(("t", text),), max_tokens=16, controls=4, whole_edits=("zero",), sweep_edits=()
    )
    study = LocalGateway().run(InterventionStudy(located, options))
    want = run_study(str(model_dir), options)
    pd.testing.assert_frame_equal(study.whole_model, want.whole_model)
    other = StudyOptions(
        texts=(("t", text),), max_tokens=16, controls=4, whole_edits=("flip",), sweep_edits=()
    )
    assert InterventionStudy(located, other).key != InterventionStudy(located, options).key
    with pytest.raises(LimitError, match="headforms study") as refused:
        InterventionStudy(located, options).hosted(lambda *a: None, lambda: None, "10.0.0.1")
    assert "\n" not in str(refused.value)
