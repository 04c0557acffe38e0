"""Forward-pass results are cached like analyses: a hit loads no model; keys follow the model,
the prompt or probe, and the code; damaged entries are misses; loaded models are kept in an LRU
bounded by bytes; the tokenizer is converted once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tiny_runnable

from headforms.behaviour import attention, cache, head_type_scores, runnable
from headforms.behaviour.runnable import LOADED, LoadedModels, fingerprint
from headforms.sources import locate
from headforms.store import ResultStore


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    directory = tmp_path / "tiny-llama"
    tiny_runnable.checkpoint("llama", directory, seed=2)
    return directory


@pytest.fixture
def store(tmp_path: Path) -> ResultStore:
    return ResultStore(tmp_path / "store")


def test_a_stored_pattern_and_scores_need_no_model(
    checkpoint: Path, store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = tiny_runnable.words([4, 5, 6, 4, 5, 6])
    first = attention(str(checkpoint), text, store=store)
    scores = head_type_scores(str(checkpoint), probe_length=5, store=store)
    LOADED.clear()
    monkeypatch.setattr(runnable, "load", lambda *a, **k: pytest.fail("a model was loaded"))
    again = attention(str(checkpoint), text, store=store)
    np.testing.assert_array_equal(again.weights, first.weights)
    np.testing.assert_array_equal(again.scores, first.scores)
    assert again.tokens == first.tokens and again.token_ids == first.token_ids
    stored = head_type_scores(str(checkpoint), probe_length=5, store=store)
    assert stored.table.equals(scores.table)
    assert stored.meta["probe_ids"] == scores.meta["probe_ids"]
    # the prompt's own previous/first-token scores come from the stored pattern too
    with_prompt = head_type_scores(str(checkpoint), prompt=text, probe_length=5, store=store)
    assert with_prompt.meta["prompt"] == text


def test_keys_follow_the_prompt_the_probe_the_model_and_the_code(
    checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    located = locate(str(checkpoint))
    key = fingerprint(located)
    assert cache.pattern_key(key, "a") != cache.pattern_key(key, "b")
    assert cache.scores_key(key, 5, 0) != cache.scores_key(key, 5, 1)
    assert cache.scores_key(key, 5, 0) != cache.scores_key(key, 6, 0)
    other = tmp_path / "other"
    tiny_runnable.checkpoint("llama", other, seed=3)
    assert fingerprint(locate(str(other))) != key
    # the tokenizer is part of a directory's fingerprint: a new one changes every key
    (checkpoint / "tokenizer.json").write_text((checkpoint / "tokenizer.json").read_text() + " ")
    assert fingerprint(locate(str(checkpoint))) != key
    before = cache.pattern_key(key, "a")
    cache.library_versions.cache_clear()
    monkeypatch.setattr(cache, "LIBRARIES", (*cache.LIBRARIES, "numpy"))
    try:
        assert cache.pattern_key(key, "a") != before
    finally:
        cache.library_versions.cache_clear()


def test_a_damaged_entry_is_recomputed(checkpoint: Path, store: ResultStore) -> None:
    text = tiny_runnable.words([7, 8, 9])
    first = attention(str(checkpoint), text, store=store)
    key = cache.pattern_key(fingerprint(locate(str(checkpoint))), text)
    store._cache.set(key, b"not a zip", tag="0" * 64)
    again = attention(str(checkpoint), text, store=store)
    np.testing.assert_array_equal(again.weights, first.weights)
    assert cache.get_pattern(store, key) is not None


def test_no_cache_stores_nothing(checkpoint: Path, store: ResultStore) -> None:
    text = tiny_runnable.words([3, 4])
    attention(str(checkpoint), text, use_cache=False, store=store)
    key = cache.pattern_key(fingerprint(locate(str(checkpoint))), text)
    assert cache.get_pattern(store, key) is None


def test_the_tokenizer_is_converted_once(
    checkpoint: Path, store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    LOADED.clear()
    attention(str(checkpoint), "w3 w4", store=store)
    LOADED.clear()
    monkeypatch.setattr(
        runnable, "transformers_tokenizer", lambda *a: pytest.fail("tokenizer converted again")
    )
    pattern = attention(str(checkpoint), "w5 w6", store=store)
    assert pattern.token_ids == [5, 6]


def test_loaded_models_are_an_lru_bounded_by_bytes(tmp_path: Path) -> None:
    directories = []
    for i in range(3):
        directory = tmp_path / f"m{i}"
        tiny_runnable.checkpoint("gpt2", directory, seed=i)
        directories.append(directory)
    models = LoadedModels()
    first = models.get(locate(str(directories[0])))
    budget = 2 * first.nbytes
    for directory in directories[1:]:
        models.get(locate(str(directory)), budget=budget)
    kept = models.keys()
    assert len(kept) == 2 and fingerprint(locate(str(directories[0]))) not in kept
    assert models.nbytes() <= budget
    # the same model again is the same object (loaded once)
    assert models.get(locate(str(directories[2])), budget=budget) is models.get(
        locate(str(directories[2])), budget=budget
    )
    # a model larger than the budget is kept alone
    models.get(locate(str(directories[0])), budget=1)
    assert models.keys() == [fingerprint(locate(str(directories[0])))]


def test_a_wait_for_a_load_started_elsewhere_says_what_that_load_does(
    checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page's forward pass waiting for the load its page started early (no progress of its
    own) hears that load's steps, not nothing."""
    import threading
    from types import SimpleNamespace

    loaded = LoadedModels()
    located = locate(str(checkpoint))
    started, finish = threading.Event(), threading.Event()

    def slow_load(located, progress=None):  # noqa: ANN001
        progress(0, 1, "reading and dequantizing the weights")
        started.set()
        finish.wait(10)
        return SimpleNamespace(nbytes=1)  # what the LRU keeps of a model: its size

    monkeypatch.setattr(runnable, "load", slow_load)
    early = threading.Thread(target=lambda: loaded.get(located))  # prepare(): no progress
    early.start()
    assert started.wait(10)
    heard: list[str] = []

    def waiting(done: int, total: int, message: str) -> None:
        heard.append(message)
        finish.set()  # heard once: let the load end

    model = loaded.get(located, waiting)
    early.join(10)
    assert heard and heard[0] == "reading and dequantizing the weights"
    assert model is loaded.get(located)  # one load, kept
