"""The gateway's Intervention kind on a tiny runnable model: the library's result, its progress
relayed, kept by content (a second request is a cache hit; another edit, seed or head is another
result), read from the result store by a new gateway; a bad request is one line before any
work."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tiny_runnable

from headforms.behaviour.run import locate_runnable
from headforms.errors import OptionError
from headforms.interventions import intervention, request_of
from ui.gateway import Intervention, LocalGateway, kinds


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("kind-llama")
    tiny_runnable.checkpoint("llama", directory, seed=8)
    return directory


def test_the_kind_gives_the_librarys_result_kept_by_content(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    located = locate_runnable(str(model_dir))
    request = request_of("flip", heads="1.2", controls=2, seed=3, probe=True)
    gateway = LocalGateway()
    seen: list[tuple[int, int, str]] = []
    real = kinds.intervention

    def spied(*args, progress, **kwargs):  # the library's progress, as the kind hands it on
        return real(*args, progress=lambda *p: seen.append(p) or progress(*p), **kwargs)

    monkeypatch.setattr(kinds, "intervention", spied)
    result = gateway.run(Intervention(located, request), lambda *p: None)
    assert seen and seen[-1][0] == seen[-1][1] == request.passes(1)  # every pass reported
    monkeypatch.setattr(kinds, "intervention", real)
    want = intervention(str(model_dir), request, use_cache=False)
    np.testing.assert_allclose(result.table["delta_ce"], want.table["delta_ce"], atol=1e-9)
    np.testing.assert_allclose(result.controls["delta_ce"], want.controls["delta_ce"], atol=1e-9)
    np.testing.assert_allclose(result.patterns["after"], want.patterns["after"], atol=1e-9)
    calls: list[object] = []
    monkeypatch.setattr(kinds, "intervention", lambda *a, **k: calls.append(a) or want)
    assert gateway.run(Intervention(located, request)) is result  # the cache's copy
    fresh = LocalGateway().run(Intervention(located, request))  # from the result store
    np.testing.assert_allclose(fresh.table["kl"], result.table["kl"])
    assert not calls
    keys = {
        Intervention(located, r).key
        for r in (
            request,
            request_of("zero", heads="1.2", controls=2, seed=3, probe=True),
            request_of("flip", heads="1.2", controls=2, seed=4, probe=True),
            request_of("flip", heads="1.1", controls=2, seed=3, probe=True),
            request_of("flip", heads="1.2", controls=2, seed=3, probe=True, text="w5 w6 w7"),
        )
    }
    assert len(keys) == 5


def test_a_head_out_of_range_is_one_line(model_dir: Path) -> None:
    located = locate_runnable(str(model_dir))
    with pytest.raises(OptionError) as info:
        LocalGateway().run(Intervention(located, request_of("flip", heads="9.0")))
    assert "layer 9 does not exist" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(OptionError, match="unknown edit 'sideways'"):
        request_of("sideways")
