"""Score splits in hosted mode: a split runs in the model's worker and the server reads it back
(the library's numbers), charged one forward pass per 30 heads; a stored split costs nothing;
a request refused before any worker (a published table, a visitor past its budget) costs
nothing and is one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tiny_runnable

from headforms import hosted
from headforms.behaviour.run import locate_runnable
from headforms.errors import LimitError, NotRunnableError
from headforms.hosted import LOCAL, Limits, Policy, api, process
from headforms.hosted.tasks import WhyTask
from headforms.why import why
from headforms.why.run import request_of

HANG_GUARD = 60.0
TEXT = tiny_runnable.words([4, 9, 16, 25, 36, 49, 4, 9, 16])


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hosted-why")
    tiny_runnable.checkpoint("llama", base / "tiny", seed=6)
    return base


def charged() -> int:
    return len(api.hosting.budgets._starts.get((LOCAL, "forward_passes"), ()))


def task(spec: str, **options: object) -> WhyTask:
    located = locate_runnable(spec, Policy.from_limits(Limits.from_env()))
    return WhyTask(located, request_of(text=TEXT, **options))


def test_a_split_runs_in_the_models_worker_and_is_read_back(hosted_env: Path) -> None:
    spec = str(hosted_env / "tiny")
    messages: list[str] = []
    result = hosted.forward_task(task(spec), lambda d, t, m: messages.append(m))
    assert messages and len(hosted.model_worker_pids()) == 1
    assert charged() == 1  # 8 heads: one forward pass
    want = why(spec, request_of(text=TEXT), use_cache=False)  # here, not the worker's entry
    for column in ("share_pos", "share_anti", "spread_neg", "weight_anti"):
        np.testing.assert_allclose(result.table[column], want.table[column], atol=1e-9)
    again = hosted.forward_task(task(spec))  # stored: no worker asked, no charge
    assert again.table.equals(result.table) and charged() == 1
    detail = hosted.forward_task(task(spec, heads="1.3", detail=True))
    assert charged() == 2 and detail.detail.parts.shape == (4, 9, 9)


def test_refusals_before_any_worker_cost_nothing(
    hosted_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        process, "start_worker", lambda *a: pytest.fail("a worker started for a refused request")
    )
    table = hosted_env / "heads.csv"
    table.write_text("layer,head,a,b,c,d\n0,0,0.1,0.2,0.3,0.4\n")
    with pytest.raises(NotRunnableError) as info:
        task(str(table))
    assert "\n" not in str(info.value)
    monkeypatch.setenv("HEADFORMS_VISITOR_FORWARD_PASSES", "0")
    with pytest.raises(LimitError) as refused:
        hosted.forward_task(task(str(hosted_env / "tiny")))
    assert "\n" not in str(refused.value) and charged() == 0


def test_the_charge_follows_the_heads() -> None:
    from headforms.hosted.model_facts import ModelFacts

    facts = ModelFacts("m", "f", heads_all=270, memory=None, tokenizer=lambda: None)
    located = None
    every = WhyTask(located, request_of())
    assert every.cost(facts) == 9
    one = WhyTask(located, request_of(heads="1.1", detail=True))
    assert one.cost(facts) == 1
