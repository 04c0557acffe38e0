"""Model sources: a local directory (single or sharded safetensors, ``pytorch_model.bin``) and a
hub id resolved offline from a local hub cache. One tiny random llama, saved every way, must
give the same per-head table as the forms of its own in-memory weights.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import tiny_models as tm
import torch
from repo import REPO as CHECKOUT

from headforms import ModelAnalysis, analyze
from headforms.errors import (
    CorruptFileError,
    HubUnavailableError,
    ModelSpecError,
    NoSuchModelError,
)
from headforms.forms import head_forms
from headforms.models.source import open_model
from headforms.readers import SafetensorsReader, TorchBinReader
from headforms.sources import BUNDLED_MODELS, locate, parse_spec

REPO = "tiny-org/tiny-llama"
SHA_1, SHA_2 = "1" * 40, "2" * 40
METRICS = ["a", "b", "c", "d", "b_sym", "c_sym", "d_sym", "energy", "pairing", "n_pos", "n_neg"]


def _is_attention(name: str) -> bool:
    return ".self_attn.q_proj." in name or ".self_attn.k_proj." in name


class _Saved:
    """One tiny llama (float32) saved as single safetensors, shards and a torch .bin."""

    def __init__(self, root: Path):
        from transformers import AutoModelForCausalLM

        family = tm.FAMILIES["llama"]
        torch.manual_seed(0)
        self.model = AutoModelForCausalLM.from_config(family.config())
        tm.randomize(self.model, seed=3)
        self.single = root / "single"
        self.model.save_pretrained(self.single)
        self.sharded = root / "sharded"
        self.model.save_pretrained(self.sharded, max_shard_size="40KB")
        self.bin = root / "bin"
        self.model.config.save_pretrained(self.bin)
        torch.save(self.model.state_dict(), self.bin / "pytorch_model.bin")

    def reference_metrics(self, layer: int) -> dict[str, np.ndarray]:
        """The metrics of the forms of the in-memory model's own q_proj/k_proj weights."""
        config = self.model.config
        H, Hkv = config.num_attention_heads, config.num_key_value_heads
        n, N = config.hidden_size // H, config.hidden_size
        attn = self.model.model.layers[layer].self_attn
        q = attn.q_proj.weight.detach().double().numpy().reshape(H, n, N)
        k = attn.k_proj.weight.detach().double().numpy().reshape(Hkv, n, N)
        return head_forms(q, k, np.arange(H) // (H // Hkv)).metrics()


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> _Saved:
    return _Saved(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def single_analysis(saved: _Saved) -> ModelAnalysis:
    return analyze(str(saved.single), use_cache=False)


def _assert_same_table(result: ModelAnalysis, expected: ModelAnalysis) -> None:
    pd.testing.assert_frame_equal(result.heads, expected.heads, check_exact=False, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Local directories


def test_single_safetensors_matches_the_model_weights(
    saved: _Saved, single_analysis: ModelAnalysis
) -> None:
    source = open_model(str(saved.single))
    assert source.kind == "local"
    assert isinstance(source.reader, SafetensorsReader)
    assert [p.name for p in source.files] == ["model.safetensors"]
    heads = single_analysis.heads
    assert single_analysis.card.storage == "F32"
    for layer in range(saved.model.config.num_hidden_layers):
        expected = saved.reference_metrics(layer)
        rows = heads[heads["layer"] == layer]
        for column in METRICS:
            np.testing.assert_allclose(rows[column], expected[column], rtol=1e-10, atol=1e-12)


def test_sharded_checkpoint_reads_only_the_attention_shards(
    saved: _Saved, single_analysis: ModelAnalysis, tmp_path: Path
) -> None:
    index = json.loads((saved.sharded / "model.safetensors.index.json").read_text())["weight_map"]
    shards = set(index.values())
    attention = {f for t, f in index.items() if _is_attention(t)}
    idle = shards - attention
    assert len(shards) > 2 and idle, "the fixture must have shards without any Q/K tensor"

    directory = tmp_path / "sharded"
    shutil.copytree(saved.sharded, directory)
    # The parameter count covers every shard (from their headers), not only those read: the
    # same as the single-file checkpoint's, counted with the safetensors library.
    from safetensors import safe_open

    with safe_open(str(saved.single / "model.safetensors"), "np") as fh:
        expected = sum(int(np.prod(fh.get_slice(k).get_shape())) for k in fh.keys())
    intact = analyze(str(directory), use_cache=False)
    assert intact.card.n_parameters == single_analysis.card.n_parameters == expected
    for name in idle:  # shards never needed: damage them; the analysis must not notice
        (directory / name).write_bytes(b"\xff" * 64)
    source = open_model(str(directory))
    assert isinstance(source.reader, SafetensorsReader)
    assert {p.name for p in source.files} == attention
    located = locate(str(directory))
    assert {f.name for f in located.weights} == attention and not located.complete
    _assert_same_table(analyze(str(directory), use_cache=False), single_analysis)

    # ... while a damaged shard that holds Q/K is reported, naming the file.
    broken = sorted(attention)[0]
    (directory / broken).write_bytes(b"\xff" * 64)
    with pytest.raises(CorruptFileError, match=broken):
        analyze(str(directory), use_cache=False)


def test_sharded_index_naming_a_missing_or_foreign_shard_is_rejected(
    saved: _Saved, tmp_path: Path
) -> None:
    directory = tmp_path / "sharded"
    shutil.copytree(saved.sharded, directory)
    index_path = directory / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    q_name = next(t for t in index["weight_map"] if _is_attention(t))
    (directory / index["weight_map"][q_name]).unlink()
    with pytest.raises(CorruptFileError, match="missing shard"):
        open_model(str(directory))
    index["weight_map"][q_name] = "../elsewhere.safetensors"
    index_path.write_text(json.dumps(index))
    with pytest.raises(CorruptFileError, match="not a valid shard index"):
        open_model(str(directory))


def test_pytorch_bin_is_loaded_weights_only_and_memory_mapped(
    saved: _Saved, single_analysis: ModelAnalysis, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []
    real_load = torch.load

    def recording_load(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", recording_load)
    source = open_model(str(saved.bin))
    assert isinstance(source.reader, TorchBinReader)
    assert [p.name for p in source.files] == ["pytorch_model.bin"]
    assert calls and all(c.get("weights_only") is True and c.get("mmap") is True for c in calls)
    _assert_same_table(analyze(str(saved.bin), use_cache=False), single_analysis)


class _Payload:
    """Unpickling this would run code (here: create a marker file)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (exec, (f"open({str(self.marker)!r}, 'w').close()",))


@pytest.mark.parametrize("writer", ["torch.save", "pickle"])
def test_bin_with_a_pickled_object_is_rejected_never_executed(
    saved: _Saved, tmp_path: Path, writer: str
) -> None:
    directory = tmp_path / "evil"
    directory.mkdir()
    shutil.copy(saved.bin / "config.json", directory)
    marker = tmp_path / "executed"
    state = {"model.layers.0.self_attn.q_proj.weight": torch.zeros(4, 4), "x": _Payload(marker)}
    with (directory / "pytorch_model.bin").open("wb") as fh:
        if writer == "torch.save":
            torch.save(state, fh)
        else:
            pickle.dump(state, fh)
    with pytest.raises(CorruptFileError, match=r"pytorch_model\.bin.*weights_only=True"):
        analyze(str(directory), use_cache=False)
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# Hub ids from a local hub cache, offline


def _add_snapshot(cache: Path, repo: str, sha: str, files: dict[str, Path]) -> Path:
    """A snapshot in huggingface_hub's cache layout: blobs by hash, symlinks, refs/main."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snapshot = root / "snapshots" / sha
    snapshot.mkdir(parents=True)
    (root / "blobs").mkdir(exist_ok=True)
    for name, source in files.items():
        data = source.read_bytes()
        blob = root / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / name).symlink_to(Path("..", "..", "blobs", blob.name))
    (root / "refs").mkdir(exist_ok=True)
    (root / "refs" / "main").write_text(sha)
    return snapshot


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty hub cache under a temporary HF_HOME, offline (env and huggingface_hub)."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-home" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(cache.parent))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def test_hub_id_resolves_offline_and_fingerprints_by_commit(
    saved: _Saved, single_analysis: ModelAnalysis, hub_cache: Path
) -> None:
    files = {"config.json": saved.single / "config.json"}
    files["model.safetensors"] = saved.single / "model.safetensors"
    first = _add_snapshot(hub_cache, REPO, SHA_1, files)
    source = open_model(REPO)
    assert source.kind == "hub"
    assert source.files[0].parent == first
    fingerprint_1 = source.fingerprint
    _assert_same_table(analyze(REPO, use_cache=False), single_analysis)

    # The same bytes under a new commit: a new fingerprint; the old commit is still addressable.
    _add_snapshot(hub_cache, REPO, SHA_2, files)
    assert open_model(REPO).fingerprint != fingerprint_1
    assert open_model(f"{REPO}@{SHA_1}").fingerprint == fingerprint_1
    assert open_model(f"{REPO}@{SHA_2}").fingerprint == open_model(REPO).fingerprint


@pytest.mark.slow
def test_hub_id_from_hf_home_in_a_fresh_process(
    saved: _Saved, single_analysis: ModelAnalysis, hub_cache: Path
) -> None:
    """``HF_HOME`` and ``HF_HUB_OFFLINE`` from the environment, as a user would set them."""
    files = {name: saved.single / name for name in ("config.json", "model.safetensors")}
    _add_snapshot(hub_cache, REPO, SHA_1, files)
    out = hub_cache.parent / "heads.parquet"
    proc = subprocess.run(
        [sys.executable, "-m", "headforms", "analyze", REPO, "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HOME": str(hub_cache.parent), "HF_HUB_OFFLINE": "1"},
        cwd=CHECKOUT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    pd.testing.assert_frame_equal(pd.read_parquet(out), single_analysis.heads)


def test_hub_sharded_repo_needs_only_the_attention_shards(
    saved: _Saved, single_analysis: ModelAnalysis, hub_cache: Path
) -> None:
    index_path = saved.sharded / "model.safetensors.index.json"
    weight_map = json.loads(index_path.read_text())["weight_map"]
    attention = {f for t, f in weight_map.items() if _is_attention(t)}
    assert attention != set(weight_map.values())
    files = {"config.json": saved.sharded / "config.json", index_path.name: index_path}
    files.update({name: saved.sharded / name for name in attention})  # the others: not cached
    _add_snapshot(hub_cache, REPO, SHA_1, files)
    _assert_same_table(analyze(REPO, use_cache=False), single_analysis)


def test_a_failed_download_removes_only_partial_files_no_download_is_writing(
    hub_cache: Path,
) -> None:
    """huggingface_hub holds ``.locks/<repo>/<etag>.lock`` while it writes a blob: the partial
    file of a download still running (another worker, another revision) is left alone."""
    from filelock import FileLock

    from headforms.sources import hub

    folder = "models--org--partial"
    blobs = hub_cache / folder / "blobs"
    blobs.mkdir(parents=True)
    stale, running = blobs / "aaa.incomplete", blobs / "bbb.incomplete"
    stale.write_bytes(b"abandoned")
    running.write_bytes(b"being written")
    (hub_cache / ".locks" / folder).mkdir(parents=True)
    held = FileLock(str(hub_cache / ".locks" / folder / "bbb.lock"))
    done = threading.Event()
    release = threading.Event()

    def writer() -> None:  # another thread of the server downloading blob bbb
        with held:
            done.set()
            release.wait(30)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert done.wait(30)
        hub._remove_partial_downloads("org/partial")
        assert not stale.exists() and running.exists()
    finally:
        release.set()
        thread.join()
    hub._remove_partial_downloads("org/partial")
    assert not running.exists()


def test_hub_id_not_in_the_cache_is_unavailable_offline(hub_cache: Path) -> None:
    with pytest.raises(HubUnavailableError, match="not in the local hub cache"):
        open_model("some-org/not-downloaded")


@pytest.mark.parametrize("offline", [True, False], ids=["hub-off", "hub-unreachable"])
def test_a_name_that_is_no_model_here_says_so(
    hub_cache: Path, monkeypatch: pytest.MonkeyPatch, offline: bool
) -> None:
    """Neither bundled, a path, nor a hub id the hub (off, or on a port nothing listens on) or
    the local hub cache can serve: "no such model here", not a complaint about the hub."""
    from huggingface_hub import constants

    if not offline:
        with socket.socket() as closed:  # a free port, closed again: nothing answers there
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(NoSuchModelError) as error:
        open_model("smolm2-135m")  # a typo of a bundled name
    message = str(error.value)
    assert message.startswith("no such model here: 'smolm2-135m' is not a bundled model")
    assert ("HF_HUB_OFFLINE" in message) == offline
    assert ("the hub cannot be reached" in message) == (not offline)
    assert "accepted: a bundled name (smollm2-135m" in message
    assert "cannot reach the Hugging Face hub" not in message


# ---------------------------------------------------------------------------------------------
# Spec parsing


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("smollm2-135m", ("bundled", "smollm2-135m", None)),
        ("gpt2", ("hub", "gpt2", None)),
        ("org/name@v1.0", ("hub", "org/name", "v1.0")),
        ("./some/dir", ("path", "some/dir", None)),
        ("weights.gguf", ("path", "weights.gguf", None)),
    ],
)
def test_parse_spec(spec: str, expected: tuple[str, str, str | None]) -> None:
    parsed = parse_spec(spec)
    assert (parsed.kind, parsed.value, parsed.revision) == expected


@pytest.mark.parametrize("spec", ["", "   ", "org/../name", "a b", "org/name/extra"])
def test_malformed_specs_are_rejected(spec: str) -> None:
    with pytest.raises(ModelSpecError):
        parse_spec(spec)


def test_a_path_object_is_a_spec_and_other_types_are_one_clear_error(
    saved: _Saved, single_analysis: ModelAnalysis
) -> None:
    _assert_same_table(analyze(saved.single, use_cache=False), single_analysis)
    for bad in (42, None, b"smollm2-135m"):
        with pytest.raises(ModelSpecError, match="must be a string"):
            analyze(bad, use_cache=False)  # type: ignore[arg-type]


def test_bundled_models_are_located() -> None:
    for name in ("smollm2-135m", "minilm-l6"):
        assert BUNDLED_MODELS[name].locate().exists()
