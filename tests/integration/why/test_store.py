"""Score splits are stored like attention patterns: a hit loads no model and gives the same
tables and detail; keys follow the model, the request and the code; a damaged entry is
recomputed; ``use_cache=False`` stores nothing; a published table is refused in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tiny_runnable

from headforms.behaviour import runnable
from headforms.behaviour.runnable import LOADED, fingerprint
from headforms.errors import NotRunnableError
from headforms.sources import locate
from headforms.store import ResultStore
from headforms.why import why, why_key, why_table
from headforms.why.run import request_of

TEXT = tiny_runnable.words([4, 5, 6, 7, 4, 5, 6, 7, 8])


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("why-store") / "tiny-llama"
    tiny_runnable.checkpoint("llama", directory, seed=4)
    return directory


@pytest.fixture
def store(tmp_path: Path) -> ResultStore:
    return ResultStore(tmp_path / "store")


def test_a_stored_split_needs_no_model(
    checkpoint: Path, store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = request_of(heads="1.2", text=TEXT, detail=True, pairs=2)
    first = why(str(checkpoint), request, store=store)
    LOADED.clear()
    monkeypatch.setattr(runnable, "load", lambda *a, **k: pytest.fail("a model was loaded"))
    again = why(str(checkpoint), request, store=store)
    assert again.table.equals(first.table)
    assert again.pair_table.equals(first.pair_table)
    assert again.vocabulary_table.equals(first.vocabulary_table)
    np.testing.assert_array_equal(again.detail.parts, first.detail.parts)
    np.testing.assert_array_equal(again.detail.spectrum, first.detail.spectrum)
    assert again.detail.vocabulary_path == first.detail.vocabulary_path
    assert again.tokens == first.tokens and again.request == request
    assert again.model == str(checkpoint)


def test_keys_follow_the_model_and_the_request(checkpoint: Path, tmp_path: Path) -> None:
    key = fingerprint(locate(str(checkpoint)))
    base = request_of(text=TEXT)
    keys = {
        why_key(key, base),
        why_key(key, request_of(text=TEXT + " w9")),
        why_key(key, request_of(text=TEXT, max_tokens=5)),
        why_key(key, request_of(text=TEXT, pairs=1)),
        why_key(key, request_of(heads="0.1", text=TEXT)),
    }
    other = tmp_path / "other"
    tiny_runnable.checkpoint("llama", other, seed=5)
    keys.add(why_key(fingerprint(locate(str(other))), base))
    assert len(keys) == 6
    assert why_key(key, request_of(text=TEXT)) == why_key(key, base)


def test_a_damaged_entry_is_recomputed(checkpoint: Path, store: ResultStore) -> None:
    request = request_of(heads="0.0", text=TEXT)
    first = why(str(checkpoint), request, store=store)
    key = why_key(fingerprint(locate(str(checkpoint))), request)
    store._cache.set(key, b"not a zip", tag="0" * 64)
    again = why(str(checkpoint), request, store=store)
    assert again.table.equals(first.table)


def test_no_cache_stores_nothing(checkpoint: Path, store: ResultStore) -> None:
    request = request_of(heads="0.0", text=TEXT)
    why(str(checkpoint), request, store=store, use_cache=False)
    assert why_key(fingerprint(locate(str(checkpoint))), request) not in store


def test_the_table_of_every_head(checkpoint: Path, store: ResultStore) -> None:
    table = why_table(str(checkpoint), text=TEXT, store=store)
    assert list(table[["layer", "head"]].itertuples(index=False, name=None)) == [
        (layer, head) for layer in range(2) for head in range(4)
    ]
    assert table["tokens"].eq(len(TEXT.split())).all()


def test_a_published_table_has_no_weights_to_split(tmp_path: Path) -> None:
    table = tmp_path / "heads.csv"
    table.write_text("model,layer,head,a,b,c,d\nm,0,0,0.5,0.2,0.2,0.1\n")
    with pytest.raises(NotRunnableError, match="score splits need the model itself"):
        why(str(table), request_of(text=TEXT))
