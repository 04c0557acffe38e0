"""The result store: a second analysis is a cache read, options, weights and the code that
computes results change the key, entries are open formats (zip of JSON + npz) that anyone can
read and that a later format version rejects cleanly, damaged entries are detected and
recomputed, concurrent analyses of one key compute once, and a cache hit never opens weights
nor imports torch, transformers or pandas.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import tiny_models as tm
from counting import count_computations

from headforms import HeadformsError, ModelAnalysis, analyze
from headforms.options import AnalysisOptions
from headforms.readers import read_safetensors_header
from headforms.sources import locate
from headforms.store import Record, ResultStore, code_version, factors_key, metrics_key
from headforms.store import keys as store_keys
from headforms.store import records as store_results


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
def cache(tmp_path: Path) -> Iterator[ResultStore]:
    store = ResultStore(tmp_path / "results")
    yield store
    store.close()


@pytest.fixture
def computations(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Records every real computation the engine does (its stage and options)."""
    return count_computations(monkeypatch)


def _same(a: ModelAnalysis, b: ModelAnalysis) -> None:
    pd.testing.assert_frame_equal(a.heads, b.heads, check_exact=True)
    assert a.spectra.keys() == b.spectra.keys()
    for name in a.spectra:
        np.testing.assert_array_equal(a.spectra[name], b.spectra[name])
    assert a.card.as_dict() == b.card.as_dict()


def _recorder(messages: list[str]) -> Callable[[int, int, str], None]:
    return lambda done, total, message: messages.append(message)


def test_second_analysis_is_served_from_the_cache(
    model_dir: Path, cache: ResultStore, computations: list[dict[str, Any]]
) -> None:
    messages: list[str] = []
    first = analyze(str(model_dir), store=cache, progress=_recorder(messages))
    assert len(computations) == 1 and messages[-1] == "done"
    messages.clear()
    second = analyze(str(model_dir), store=cache, progress=_recorder(messages))
    assert len(computations) == 1 and messages[-1] == "loaded from cache"
    assert not any(m.startswith(("opening", "layer")) for m in messages)
    _same(first, second)
    # A new store on the same directory (another process, a restart) reads the entry too.
    reopened = ResultStore(cache.directory)
    _same(first, analyze(str(model_dir), store=reopened))
    reopened.close()
    assert len(computations) == 1


def test_options_give_different_keys(
    model_dir: Path, cache: ResultStore, computations: list[dict[str, Any]]
) -> None:
    combos = [(d, fold) for d in (0, 5) for fold in (True, False)]
    fingerprint = locate(str(model_dir)).fingerprint
    keys = {metrics_key(fingerprint, AnalysisOptions(d, fold).key()) for d, fold in combos}
    assert len(keys) == len(combos)
    results = {
        (d, fold): analyze(str(model_dir), rope_position=d, fold_qk_norm=fold, store=cache)
        for d, fold in combos
    }
    assert len(computations) == len(combos)
    for (d, fold), result in results.items():  # a second pass: all hits, each its own entry
        again = analyze(str(model_dir), rope_position=d, fold_qk_norm=fold, store=cache)
        assert (again.card.rope_position, again.card.qk_norm_folded) == (d, fold)
        _same(result, again)
    assert len(computations) == len(combos)
    profile = ["a", "b", "c", "d"]
    base = results[(0, True)].heads[profile].to_numpy()
    for combo in [(5, True), (0, False)]:  # the options really change the numbers
        assert np.abs(results[combo].heads[profile].to_numpy() - base).max() > 1e-6


def test_uncached_analysis_leaves_the_store_untouched(
    model_dir: Path, cache: ResultStore, computations: list[dict[str, Any]]
) -> None:
    analyze(str(model_dir), store=cache, use_cache=False)
    analyze(str(model_dir), store=cache, use_cache=False)
    assert len(computations) == 2
    assert len(cache._cache) == 0


def _value_file(cache: ResultStore) -> Path:
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
    cache: ResultStore, computations: list[dict[str, Any]], damage: str
) -> None:
    """A real model's result is large: diskcache keeps it in a file of its own."""
    first = analyze("minilm-l6", store=cache)
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
    again = analyze("minilm-l6", store=cache)
    assert len(computations) == 2
    _same(first, again)
    analyze("minilm-l6", store=cache)  # the rewritten entry is good again
    assert len(computations) == 2


def test_damaged_inline_entry_is_detected_and_recomputed(
    model_dir: Path, cache: ResultStore, computations: list[dict[str, Any]]
) -> None:
    """A tiny model's result is small: diskcache keeps it inside its SQLite file."""
    first = analyze(str(model_dir), store=cache)
    assert not list(Path(cache.directory).rglob("*.val"))
    key = metrics_key(locate(str(model_dir)).fingerprint, AnalysisOptions().key())
    _damage_inline(Path(cache.directory), key)
    again = analyze(str(model_dir), store=cache)
    assert len(computations) == 2
    _same(first, again)
    analyze(str(model_dir), store=cache)
    assert len(computations) == 2


def test_damaged_value_is_dropped_by_the_store(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "inline")
    record = store_results.Record("analysis", {"x": list(range(10))}, arrays={"v": np.arange(3)})
    store.put("k", record)
    got = store.get("k", "analysis")
    assert got is not None and got.meta == record.meta
    np.testing.assert_array_equal(got.arrays["v"], np.arange(3))
    _damage_inline(tmp_path / "inline", "k")
    assert store.get("k", "analysis") is None
    assert "k" not in store  # the damaged entry was dropped
    store.close()


def test_weight_changes_change_the_fingerprint(
    model_dir: Path, cache: ResultStore, computations: list[dict[str, Any]], tmp_path: Path
) -> None:
    weights = model_dir / "model.safetensors"
    before = analyze(str(model_dir), store=cache)
    fingerprint = locate(str(model_dir)).fingerprint
    assert locate(str(model_dir)).fingerprint == fingerprint  # stable when nothing changes

    # The same files copied elsewhere (times preserved): the same content, the same entry.
    copy = Path(shutil.copytree(model_dir, tmp_path / "copy"))
    assert locate(str(copy)).fingerprint == fingerprint

    # Touched (new mtime, same bytes): a new fingerprint, recomputed, same numbers.
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    touched = locate(str(model_dir)).fingerprint
    assert touched != fingerprint
    pd.testing.assert_frame_equal(analyze(str(model_dir), store=cache).heads, before.heads)
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
    edited = locate(str(model_dir)).fingerprint
    assert edited not in (fingerprint, touched)
    changed = analyze(str(model_dir), store=cache)
    assert len(computations) == 3
    layer0 = changed.heads["layer"] == 0
    assert not np.array_equal(changed.heads.loc[layer0, "a"], before.heads.loc[layer0, "a"])

    # The config is part of the fingerprint too.
    config = model_dir / "config.json"
    config.write_text(config.read_text().replace("{", '{\n  "_note": "edited",', 1))
    assert locate(str(model_dir)).fingerprint != edited


def test_concurrent_analyses_of_one_key_compute_once(
    model_dir: Path, cache: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the delay widens the window in which both threads miss the cache
    computations = count_computations(monkeypatch, delay=0.3)
    results: list[ModelAnalysis] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(analyze(str(model_dir), store=ResultStore(cache.directory)))
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


# ---------------------------------------------------------------------------------------------
# The key follows the code; entries are open formats


@pytest.mark.parametrize(
    ("changed", "stages"),
    [
        ("forms.py", {"forms"}),
        ("heads.py", {"forms"}),
        ("model_analysis.py", {"forms"}),
        ("card.py", {"forms"}),
        ("architectures.py", {"extraction"}),
        ("models/extract.py", {"extraction"}),
        ("readers/gguf.py", {"extraction"}),
        ("store/factors.py", {"extraction"}),
        ("factors.py", {"extraction", "forms"}),
    ],
)
def test_a_change_to_the_computing_code_changes_its_stage_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changed: str, stages: set[str]
) -> None:
    """Entries computed by other code are never served: editing the maths, the table, the card
    or the result classes changes the metrics keys (the factors stay valid: no weight is read
    again); editing extraction, a reader or the architecture table changes the factors keys,
    and through them the metrics keys."""
    package = Path(store_keys.PACKAGE_ROOT)
    copy = Path(shutil.copytree(package, tmp_path / "headforms", ignore=_pycache))
    monkeypatch.setattr(store_keys, "PACKAGE_ROOT", copy)
    store_keys.code_version.cache_clear()
    options = {"rope_position": 0, "fold_qk_norm": True}
    try:
        original = {stage: code_version(stage) for stage in ("extraction", "forms")}
        before = factors_key("weights"), metrics_key("weights", options)
        assert original == {stage: code_version(stage) for stage in original}  # stable
        (copy / changed).write_text((copy / changed).read_text() + "\n# a change\n")
        store_keys.code_version.cache_clear()
        now = {stage: code_version(stage) for stage in original}
        assert {stage for stage in original if now[stage] != original[stage]} == stages
        assert (factors_key("weights") != before[0]) == ("extraction" in stages)
        assert metrics_key("weights", options) != before[1]
        store_keys.code_version.cache_clear()
        (copy / "figures" / "style.py").write_text("# figures do not compute results\n")
        (copy / changed).write_text((package / changed).read_text())
        assert {stage: code_version(stage) for stage in original} == original
    finally:
        store_keys.code_version.cache_clear()


def _pycache(directory: str, names: list[str]) -> list[str]:
    return [n for n in names if n == "__pycache__"]


def test_entries_are_open_formats_readable_without_headforms(
    model_dir: Path, cache: ResultStore
) -> None:
    """A stored analysis is a zip of JSON and npz files (no pickles) holding exactly the
    analysis; an entry of another format version is a miss, recomputed cleanly."""
    import json
    import zipfile

    result = analyze(str(model_dir), spectra=("sv_a",), store=cache)
    (key,) = list(cache._cache.iterkeys())
    blob, digest = cache._cache.get(key, read=False, tag=True)
    assert hashlib.sha256(blob).hexdigest() == digest
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        names = set(archive.namelist())
        assert names == {"format.json", "meta.json", "tables/heads.npz", "arrays.npz"}
        header = json.loads(archive.read("format.json"))
        assert header["format"] == "headforms.result" and header["kind"] == "analysis"
        card = json.loads(archive.read("meta.json"))["card"]
        with np.load(io.BytesIO(archive.read("tables/heads.npz")), allow_pickle=False) as npz:
            table = {name: npz[name] for name in npz.files}
        with np.load(io.BytesIO(archive.read("arrays.npz")), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    assert card["n_layers"] == result.card.n_layers and card["fingerprint"]
    assert set(table) == set(result.heads.columns)
    np.testing.assert_array_equal(table["energy"], result.heads["energy"].to_numpy())
    assert list(table["parity"]) == list(result.heads["parity"])
    assert set(arrays) == {"eig_s", "lobe_pos", "lobe_neg", "sv_a"}
    np.testing.assert_array_equal(arrays["sv_a"], result.spectra["sv_a"])

    # The same entry written by a (hypothetical) later format: rejected, recomputed, replaced.
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members["format.json"] = json.dumps({**header, "version": header["version"] + 1}).encode()
    later = io.BytesIO()
    with zipfile.ZipFile(later, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    data = later.getvalue()
    cache._cache.set(key, data, tag=hashlib.sha256(data).hexdigest())
    assert cache.get(key, "analysis") is None and key not in cache
    _same(result, analyze(str(model_dir), spectra=("sv_a",), store=cache))

    # An entry of this format that lacks a column today's results have: a miss, recomputed.
    heads = dict(table)
    del heads["pairing"]
    stored = cache.get(key, "analysis")
    cache.put(key, Record(stored.kind, stored.meta, {"heads": heads}, stored.arrays))
    again = analyze(str(model_dir), spectra=("sv_a",), store=cache)
    _same(result, again)
    assert "pairing" in cache.get(key, "analysis").tables["heads"]


def test_asking_for_more_spectra_recomputes_once_and_keeps_them(
    model_dir: Path, cache: ResultStore, computations: list[dict[str, Any]]
) -> None:
    core = analyze(str(model_dir), store=cache)
    assert set(core.spectra) == {"eig_s", "lobe_pos", "lobe_neg"}
    full = analyze(str(model_dir), spectra=("sv_a", "eig_l_abs"), store=cache)
    assert len(computations) == 2
    again = analyze(str(model_dir), spectra=("eig_l_abs",), store=cache)
    assert len(computations) == 2
    _same(full, again)
    pd.testing.assert_frame_equal(core.heads, full.heads, check_exact=True)
    with pytest.raises(HeadformsError, match="unknown spectra"):
        analyze(str(model_dir), spectra=("eig_x",), store=cache)


COLD_IMPORTS = """
import sys, time
from headforms import analyze
start = time.perf_counter()
result = analyze(sys.argv[1])
elapsed = time.perf_counter() - start
heavy = sorted(m for m in ("torch", "transformers", "pandas", "pyarrow") if m in sys.modules)
print(result.card.n_layers, ",".join(heavy) or "-", f"{elapsed:.3f}")
"""


@pytest.mark.parametrize(
    "name",
    [
        "smollm2-135m",
        pytest.param("minilm-l6", marks=pytest.mark.slow),
        pytest.param("gemma3-270m", marks=pytest.mark.slow),
    ],
)
def test_a_cache_hit_opens_no_weights_and_imports_no_heavy_library(
    name: str, tmp_path: Path
) -> None:
    """Warm analyses of every bundled model: no torch, transformers or pandas import, and the
    readers are never constructed (locate -> fingerprint -> store -> done)."""
    env = {**os.environ, "HEADFORMS_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-c", COLD_IMPORTS, name], env=env, check=True, timeout=600)
    guarded = COLD_IMPORTS.replace(
        "from headforms import analyze",
        "from headforms import analyze\nimport headforms.readers as r\n"
        "for cls in (r.GGUFReader, r.SafetensorsReader, r.TorchBinReader):\n"
        "    cls.__init__ = lambda *a, **k: (_ for _ in ()).throw(AssertionError('opened'))",
    )
    out = subprocess.run(
        [sys.executable, "-c", guarded, name],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout.split()
    assert out[1] == "-", f"a cache hit imported {out[1]}"
