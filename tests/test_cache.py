"""The result cache: a second analysis is a cache read, options and weights change the key,
damaged entries are detected and recomputed, concurrent analyses of one key compute once.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import tiny_models as tm

import headforms.engine as engine
from headforms import ModelAnalysis, analyze
from headforms.engine import analysis_options
from headforms.readers import read_safetensors_header
from headforms.sources import resolve
from headforms.store import ResultCache, cache_key


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random qwen3 (RoPE and QK-norm gains that are not all one)."""
    directory = tmp_path_factory.mktemp("tiny-qwen3")
    tm.build("qwen3", directory, seed=5)
    return directory


@pytest.fixture
def model_dir(tiny_dir: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny model (tests may alter it)."""
    return Path(shutil.copytree(tiny_dir, tmp_path / "model"))


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[ResultCache]:
    store = ResultCache(tmp_path / "results")
    yield store
    store.close()


@pytest.fixture
def computations(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Records every real computation the engine does (the options it was called with)."""
    calls: list[dict[str, Any]] = []
    real = engine.compute_analysis

    def counting(
        source: Any, rope_position: int = 0, fold_qk_norm: bool = True, progress=None, spectra=()
    ):
        calls.append({"rope_position": rope_position, "fold_qk_norm": fold_qk_norm})
        return real(source, rope_position, fold_qk_norm, progress, spectra)

    monkeypatch.setattr(engine, "compute_analysis", counting)
    return calls


def _same(a: ModelAnalysis, b: ModelAnalysis) -> None:
    pd.testing.assert_frame_equal(a.heads, b.heads, check_exact=True)
    assert a.spectra.keys() == b.spectra.keys()
    for name in a.spectra:
        np.testing.assert_array_equal(a.spectra[name], b.spectra[name])
    assert a.card.as_dict() == b.card.as_dict()


def _recorder(messages: list[str]) -> Callable[[int, int, str], None]:
    return lambda done, total, message: messages.append(message)


def test_second_analysis_is_served_from_the_cache(
    model_dir: Path, cache: ResultCache, computations: list[dict[str, Any]]
) -> None:
    messages: list[str] = []
    first = analyze(str(model_dir), cache=cache, progress=_recorder(messages))
    assert len(computations) == 1 and messages[-1] == "done"
    messages.clear()
    second = analyze(str(model_dir), cache=cache, progress=_recorder(messages))
    assert len(computations) == 1 and messages == ["loaded from cache"]
    _same(first, second)
    # A new store on the same directory (another process, a restart) reads the entry too.
    reopened = ResultCache(cache.directory)
    _same(first, analyze(str(model_dir), cache=reopened))
    reopened.close()
    assert len(computations) == 1


def test_options_give_different_keys(
    model_dir: Path, cache: ResultCache, computations: list[dict[str, Any]]
) -> None:
    combos = [(d, fold) for d in (0, 5) for fold in (True, False)]
    fingerprint = resolve(str(model_dir)).fingerprint
    keys = {cache_key(fingerprint, analysis_options(d, fold)) for d, fold in combos}
    assert len(keys) == len(combos)
    results = {
        (d, fold): analyze(str(model_dir), rope_position=d, fold_qk_norm=fold, cache=cache)
        for d, fold in combos
    }
    assert len(computations) == len(combos)
    for (d, fold), result in results.items():  # a second pass: all hits, each its own entry
        again = analyze(str(model_dir), rope_position=d, fold_qk_norm=fold, cache=cache)
        assert (again.card.rope_position, again.card.qk_norm_folded) == (d, fold)
        _same(result, again)
    assert len(computations) == len(combos)
    profile = ["a", "b", "c", "d"]
    base = results[(0, True)].heads[profile].to_numpy()
    for combo in [(5, True), (0, False)]:  # the options really change the numbers
        assert np.abs(results[combo].heads[profile].to_numpy() - base).max() > 1e-6


def test_uncached_analysis_leaves_the_store_untouched(
    model_dir: Path, cache: ResultCache, computations: list[dict[str, Any]]
) -> None:
    analyze(str(model_dir), cache=cache, use_cache=False)
    analyze(str(model_dir), cache=cache, use_cache=False)
    assert len(computations) == 2
    assert len(cache._store) == 0


def _value_file(cache: ResultCache) -> Path:
    files = list(Path(cache.directory).rglob("*.val"))
    assert len(files) == 1, files
    return files[0]


def _damage_inline(directory: Path, key: str) -> None:
    """Flip a byte of a value stored inside diskcache's SQLite file (values under 32 KiB)."""
    db = sqlite3.connect(directory / "cache.db")
    (blob,) = db.execute("SELECT value FROM Cache WHERE key = ?", (key,)).fetchone()
    damaged = bytearray(blob)
    damaged[len(damaged) // 2] ^= 0xFF
    db.execute("UPDATE Cache SET value = ? WHERE key = ?", (bytes(damaged), key))
    db.commit()
    db.close()


@pytest.mark.parametrize("damage", ["flip bytes", "truncate", "delete"])
def test_damaged_entry_file_is_detected_and_recomputed(
    cache: ResultCache, computations: list[dict[str, Any]], damage: str
) -> None:
    """A real model's result is large: diskcache keeps it in a file of its own."""
    first = analyze("minilm-l6", cache=cache)
    path = _value_file(cache)
    data = bytearray(path.read_bytes())
    if damage == "flip bytes":
        for pos in (len(data) // 3, len(data) // 2, len(data) - 7):
            data[pos] ^= 0x5A
        path.write_bytes(bytes(data))
    elif damage == "truncate":
        path.write_bytes(bytes(data[: len(data) // 2]))
    else:
        path.unlink()
    again = analyze("minilm-l6", cache=cache)
    assert len(computations) == 2
    _same(first, again)
    analyze("minilm-l6", cache=cache)  # the rewritten entry is good again
    assert len(computations) == 2


def test_damaged_inline_entry_is_detected_and_recomputed(
    model_dir: Path, cache: ResultCache, computations: list[dict[str, Any]]
) -> None:
    """A tiny model's result is small: diskcache keeps it inside its SQLite file."""
    first = analyze(str(model_dir), cache=cache)
    assert not list(Path(cache.directory).rglob("*.val"))
    key = cache_key(resolve(str(model_dir)).fingerprint, analysis_options(0, True))
    _damage_inline(Path(cache.directory), key)
    again = analyze(str(model_dir), cache=cache)
    assert len(computations) == 2
    _same(first, again)
    analyze(str(model_dir), cache=cache)
    assert len(computations) == 2


def test_damaged_value_is_dropped_by_the_store(tmp_path: Path) -> None:
    store = ResultCache(tmp_path / "inline")
    store.set("k", {"x": list(range(10))})
    assert store.get("k") == {"x": list(range(10))}
    _damage_inline(tmp_path / "inline", "k")
    assert store.get("k") is None
    assert "k" not in store  # the damaged entry was dropped
    store.close()


def test_weight_changes_change_the_fingerprint(
    model_dir: Path, cache: ResultCache, computations: list[dict[str, Any]], tmp_path: Path
) -> None:
    weights = model_dir / "model.safetensors"
    before = analyze(str(model_dir), cache=cache)
    fingerprint = resolve(str(model_dir)).fingerprint
    assert resolve(str(model_dir)).fingerprint == fingerprint  # stable when nothing changes

    # The same files copied elsewhere (times preserved): the same content, the same entry.
    copy = Path(shutil.copytree(model_dir, tmp_path / "copy"))
    assert resolve(str(copy)).fingerprint == fingerprint

    # Touched (new mtime, same bytes): a new fingerprint, recomputed, same numbers.
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    touched = resolve(str(model_dir)).fingerprint
    assert touched != fingerprint
    pd.testing.assert_frame_equal(analyze(str(model_dir), cache=cache).heads, before.heads)
    assert len(computations) == 2

    # Content changed in place, size and mtime restored: still a new fingerprint.
    stat = weights.stat()
    header = read_safetensors_header(weights)
    q_name = next(n for n in header if n.endswith("layers.0.self_attn.q_proj.weight"))
    data_start = 8 + int.from_bytes(weights.read_bytes()[:8], "little")
    offset = data_start + header[q_name]["data_offsets"][0] + 3  # exponent byte of a float32
    with weights.open("r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([byte ^ 0x01]))  # the value doubles or halves
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert weights.stat().st_size == stat.st_size
    edited = resolve(str(model_dir)).fingerprint
    assert edited not in (fingerprint, touched)
    changed = analyze(str(model_dir), cache=cache)
    assert len(computations) == 3
    layer0 = changed.heads["layer"] == 0
    assert not np.array_equal(changed.heads.loc[layer0, "a"], before.heads.loc[layer0, "a"])

    # The config is part of the fingerprint too.
    config = model_dir / "config.json"
    config.write_text(config.read_text().replace("{", '{\n  "_note": "edited",', 1))
    assert resolve(str(model_dir)).fingerprint != edited


def test_concurrent_analyses_of_one_key_compute_once(
    model_dir: Path, cache: ResultCache, computations: list[dict[str, Any]], monkeypatch
) -> None:
    counting = engine.compute_analysis

    def slow(*args: Any, **kwargs: Any) -> ModelAnalysis:
        time.sleep(0.3)  # widen the window in which both threads miss the cache
        return counting(*args, **kwargs)

    monkeypatch.setattr(engine, "compute_analysis", slow)
    results: list[ModelAnalysis] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(analyze(str(model_dir), cache=ResultCache(cache.directory)))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 2 and len(computations) == 1
    _same(results[0], results[1])
