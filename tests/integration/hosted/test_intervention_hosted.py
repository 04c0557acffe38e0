"""Interventions in hosted mode: a real intervention runs in the model's worker and the server
reads it back (the library's numbers); it is charged one forward pass per 10 sequence passes;
every bad input is one line, and a request refused before any worker costs nothing (no worker
started, nothing charged): an unknown edit, a head or layer out of range, an empty text, too many
tokens, too many sequence passes, a model transformers cannot run, too much memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tiny_runnable

from headforms import hosted
from headforms.errors import HeadformsError, LimitError, NotRunnableError, OptionError
from headforms.hosted import LOCAL, api, process
from headforms.interventions import InterventionRequest, Scope, intervention, request_of
from headforms.settings import (
    INTERVENTION_PASSES_ENV,
    MEMORY_ENV,
    MODELS_MEMORY_ENV,
)

HANG_GUARD = 60.0


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hosted-edits")
    tiny_runnable.checkpoint("llama", base / "tiny", seed=5)
    return base


def charged() -> int:
    return len(api.hosting.budgets._starts.get((LOCAL, "forward_passes"), ()))


def test_an_intervention_runs_in_the_models_worker_and_is_charged_by_its_passes(
    hosted_env: Path,
) -> None:
    spec = str(hosted_env / "tiny")
    request = request_of("symmetric", each=True, controls=2, seed=1)  # 8 heads x 3 = 24 passes
    messages: list[str] = []
    result = hosted.intervention(spec, request, lambda d, t, m: messages.append(m))
    assert messages and len(hosted.model_worker_pids()) == 1
    assert charged() == 3  # ceil(24 / 10)
    want = intervention(spec, request, use_cache=False)  # here, not the worker's entry
    np.testing.assert_allclose(result.table["delta_ce"], want.table["delta_ce"], atol=1e-6)
    np.testing.assert_allclose(result.controls["kl"], want.controls["kl"], atol=1e-6)
    again = hosted.intervention(spec, request)  # stored: no worker asked, no charge
    np.testing.assert_array_equal(again.table["delta_ce"], result.table["delta_ce"])
    assert charged() == 3
    one = hosted.intervention(spec, request_of("flip", heads="1.2", controls=0, probe=True))
    assert charged() == 4 and one.patterns["after"].shape == one.patterns["before"].shape


def _no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        process, "start_worker", lambda *a: pytest.fail("a worker started for a refused request")
    )


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda: request_of("sideways"), OptionError, "unknown edit 'sideways'"),
        (lambda: request_of("flip", heads="7.0"), OptionError, "layer 7 does not exist"),
        (lambda: request_of("flip", heads="0.9"), OptionError, "head 9 does not exist"),
        (lambda: request_of("flip", layer=3), OptionError, "layer 3 does not exist"),
        (lambda: request_of("flip", text="   "), OptionError, "empty"),
        (lambda: request_of("flip", max_tokens=100_000), OptionError, "--max-tokens 100000"),
        (
            lambda: InterventionRequest("flip", Scope("heads", ((0, -1),))),
            OptionError,
            "is not a head",
        ),
    ],
)
def test_a_bad_request_is_one_line_and_costs_nothing(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch, make, error, words: str
) -> None:
    _no_worker(monkeypatch)
    with pytest.raises(error) as info:
        hosted.intervention(str(hosted_env / "tiny"), make())
    assert words in str(info.value) and "\n" not in str(info.value)
    assert charged() == 0


def test_too_many_passes_are_refused_before_any_worker(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_worker(monkeypatch)
    monkeypatch.setenv(INTERVENTION_PASSES_ENV, "20")
    request = request_of("zero", each=True, controls=2)  # 8 heads x 3 passes
    with pytest.raises(LimitError) as info:
        hosted.intervention(str(hosted_env / "tiny"), request)
    message = str(info.value)
    assert "takes 24 sequence passes" in message and INTERVENTION_PASSES_ENV in message
    assert "\n" not in message and charged() == 0


def test_too_much_memory_and_a_table_are_refused_before_any_worker(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_worker(monkeypatch)
    spec = str(hosted_env / "tiny")
    monkeypatch.setenv(MEMORY_ENV, str(600 * 2**20))  # a plain pass of the tiny model fits
    with pytest.raises(LimitError) as info:
        hosted.intervention(spec, request_of("flip", max_tokens=256))
    message = str(info.value)
    assert "an intervention needs an estimated" in message and MEMORY_ENV in message
    table = hosted_env / "heads.csv"
    table.write_text("layer,head,a,b,c,d\n0,0,0.1,0.2,0.3,0.4\n")
    with pytest.raises(HeadformsError) as refused:
        hosted.intervention(str(table), request_of("flip"))
    assert isinstance(refused.value, NotRunnableError | OptionError)
    assert "\n" not in str(refused.value) and charged() == 0


def test_a_visitor_past_its_budget_is_refused_in_one_line(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_worker(monkeypatch)
    monkeypatch.setenv("HEADFORMS_VISITOR_FORWARD_PASSES", "2")
    request = request_of("zero", each=True, controls=2)  # counts as 3
    with pytest.raises(LimitError) as info:
        hosted.intervention(str(hosted_env / "tiny"), request)
    assert "counts as 3" in str(info.value) and "\n" not in str(info.value)
    assert charged() == 0


def test_patterns_and_interventions_of_a_model_share_its_kept_worker(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model's worker is kept by the model's own size (a pass at the token cap), not by the
    larger estimate of an intervention: with room for the model but not for that estimate,
    interventions one after the other, then a pattern, load the model once (a worker per
    request, each loading the model, used to be the rule once the estimate passed the
    budget)."""
    from headforms.behaviour.run import locate_runnable
    from headforms.behaviour.runnable import fingerprint
    from headforms.hosted.tasks import InterventionTask
    from headforms.settings import settings

    spec = str(hosted_env / "tiny")
    located = locate_runnable(spec)
    known = api.hosting.known.facts(located, fingerprint(located), settings().prompt_tokens)
    need = InterventionTask(located, request_of("flip", heads="1.2", controls=2)).memory(known)
    assert known.memory is not None and need is not None and known.memory < need
    monkeypatch.setenv(MODELS_MEMORY_ENV, str((known.memory + need) // 2))
    for seed in (4, 5, 6):
        hosted.intervention(spec, request_of("flip", heads="1.2", controls=2, seed=seed))
    hosted.forward_pass(spec, prompt=tiny_runnable.words([3, 4, 5]))
    assert api.hosting.model_workers.started == 1
    assert len(hosted.model_worker_pids()) == 1


EDIT = """
from headforms.interventions import intervention, request_of
kind = sys.argv[2]
if kind == "head":
    request = request_of("flip", heads="1.2", controls=8, probe=True)
elif kind == "each":
    request = request_of("zero", each=True)
else:
    request = request_of("flip", controls=8)
intervention(sys.argv[1], request, use_cache=False)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("tiny", "head"),
        ("tiny", "each"),
        ("smollm2-135m", "head"),
        ("smollm2-135m", "whole"),
        ("minilm-l6", "head"),
    ],
)
def test_the_estimate_bounds_the_measured_peak(
    root: Path, monkeypatch: pytest.MonkeyPatch, spec: str, kind: str
) -> None:
    """VmData (what the workers' RLIMIT_DATA counts) of an intervention in a fresh process,
    against the estimate the server refuses by (benchmarks/README.md has SmolLM2's every-head
    sweep too: 1.62 GiB against 1.76 GiB)."""
    import memory_peaks

    from headforms.behaviour.run import locate_runnable
    from headforms.behaviour.runnable import fingerprint
    from headforms.hosted.model_facts import KnownModels
    from headforms.hosted.tasks import InterventionTask
    from headforms.settings import settings

    spec = str(root / "tiny") if spec == "tiny" else spec
    monkeypatch.setenv("HEADFORMS_THREADS", "1")
    measured = memory_peaks.measured(EDIT, spec, kind)["peak"]
    located = locate_runnable(spec)
    facts = KnownModels().facts(located, fingerprint(located), settings().prompt_tokens)
    request = {
        "head": request_of("flip", heads="1.2", controls=8, probe=True),
        "each": request_of("zero", each=True),
        "whole": request_of("flip", controls=8),
    }[kind]
    estimate = InterventionTask(located, request).memory(facts)
    assert estimate is not None and measured <= estimate


def test_the_dashboards_edits_of_the_default_model_fit_the_default_limits() -> None:
    """SmolLM2's edits as the dashboard asks for them (one head with its controls and probe,
    every head alone, every head at once) are within the default memory and passes, so a
    hosted server at its defaults runs them."""
    from headforms.behaviour.run import locate_runnable
    from headforms.behaviour.runnable import fingerprint
    from headforms.hosted import Limits
    from headforms.hosted.model_facts import KnownModels
    from headforms.hosted.tasks import InterventionTask
    from headforms.settings import settings
    from ui.interventions import head_request, sweep_request, whole_model_request

    located = locate_runnable("smollm2-135m")
    facts = KnownModels().facts(located, fingerprint(located), settings().prompt_tokens)
    defaults = Limits()
    for request in (
        head_request(3, 4, "flip", 8, 0),
        sweep_request("zero", 0, 0),  # the page's default: no controls
        whole_model_request("flip", 0),
    ):
        task = InterventionTask(located, request)
        need = task.memory(facts)
        assert need is not None and need <= defaults.memory, (request, need)
        task.check(facts, defaults)  # within the passes and tokens
