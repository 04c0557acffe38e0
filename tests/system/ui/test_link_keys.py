"""Link keys are not shared between pages with different meanings: every page run under AppTest
on a tiny model, the session keys of the links it binds (through ``links.bind``, or Streamlit's
own binding through ``links.check``, whose key is the parameter's name) collected with their
defaults and how a notice names them. A key bound by two pages must have one default and one
meaning: Streamlit carries a key's value from one page's widget to the other page's (a
parameter name two pages bind under different keys is each page's own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tiny_runnable
from page_runner import run_app

from ui import links, state

PAGES = sorted(p.stem for p in (Path(__file__).resolve().parents[3] / "pages").glob("*.py"))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("link-keys-llama")
    tiny_runnable.checkpoint("llama", directory, seed=3)
    return str(directory)


def bound(page: str, model: str) -> dict[str, tuple[Any, str]]:
    """Each session key of the links ``page`` binds: its default and how a notice names it."""
    at = run_app(page, None, **{state.MODEL_KEY: model})
    found = {}
    for table in (links.RUN_KEY, links.CHECKED_KEY):
        for link in dict(at.session_state[table]).values():
            default = getattr(link, "default", None)
            shown = link.show(default) if hasattr(link, "show") else type(link).__name__
            for key in link.keys():
                found[key] = (repr(default), shown)
    return found


def test_no_link_parameter_has_two_meanings(model_dir: str) -> None:
    seen: dict[str, dict[str, tuple[Any, str]]] = {}
    for page in PAGES:
        for name, meaning in bound(page, model_dir).items():
            seen.setdefault(name, {})[page] = meaning
    clashes = {name: pages for name, pages in seen.items() if len(set(pages.values())) > 1}
    assert not clashes, clashes
    # Streamlit-bound keys are the parameters' names: K and the seeds, one page each
    assert set(seen["controls"]) == {"head"}
    assert set(seen["edit_seed"]) == {"head"}
    assert set(seen["seed"]) == {"theorem5"}
    assert set(seen["sweep_controls"]) == set(seen["sweep_seed"]) == {"experiments"}
