"""Hub lookups are bounded (issue 17, item 5), through the loopback fake hub: shard indexes and
listings bounded in hosted mode (index bombs, listing bombs), a config's absurd shapes refused
before any weight is downloaded, the case variants of an id one repository stored once, the hub
cache evicted by size; every file a forward pass downloads (its tokenizer's too) counted against
the byte limit from the listing first, and held to it while it downloads (issue 29, item 3)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tiny_models
import tiny_runnable

from headforms import analyze, engine, hosted, sources
from headforms.behaviour import attention
from headforms.errors import CorruptFileError, NotAllowedError
from headforms.hosted import policy_in_force
from headforms.hosted.policy import MAX_INDEX_BYTES
from headforms.settings import ALLOWLIST_ENV, HOSTED_ENV, MAX_BYTES_ENV, ROOTS_ENV


@pytest.fixture
def hosted_hub(fake_hub: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """Hosted mode with every hub id allowed, through the loopback fake hub."""
    monkeypatch.setenv(HOSTED_ENV, "1")
    monkeypatch.setenv(ALLOWLIST_ENV, "*")
    monkeypatch.setenv(ROOTS_ENV, str(tmp_path))
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    yield fake_hub


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("bounds-hub") / "tiny"
    tiny_models.build("llama", directory, seed=51)
    return directory


def test_a_shard_index_bomb_is_refused_before_it_is_downloaded(
    hosted_hub: Any, tiny_dir: Path
) -> None:
    """A 13 MB shard index (125,000 entries): refused in hosted mode from its declared size,
    never fetched (before: 2.6 s of server CPU per lookup); a private instance reads it."""
    from fake_hub import checkpoint_files

    files = checkpoint_files(tiny_dir, "sharded")
    index = json.loads(files["model.safetensors.index.json"])
    first = sorted(set(index["weight_map"].values()))[0]
    padding = {f"model.layers.{i}.mlp.padding_{'x' * 40}.weight": first for i in range(125_000)}
    index["weight_map"].update(padding)
    files["model.safetensors.index.json"] = json.dumps(index).encode()
    assert 12 * 2**20 < len(files["model.safetensors.index.json"]) < 16 * 2**20
    hosted_hub.add_repo("evil/index-bomb").commit(files)
    with pytest.raises(CorruptFileError) as refused:
        sources.locate("evil/index-bomb", policy_in_force())
    assert str(refused.value) == (
        f"'evil/index-bomb': model.safetensors.index.json is larger than {MAX_INDEX_BYTES} bytes"
    )
    assert hosted_hub.bytes_sent("evil/index-bomb", "model.safetensors.index.json") == 0
    located = sources.locate("evil/index-bomb")  # a private instance: read, and fast
    chosen = [f.name for f in located.weights]  # the shards holding Q/K, not the first
    assert chosen == sorted(set(index["weight_map"].values()) - {first})


def test_a_listing_bomb_is_refused_after_a_bounded_listing(hosted_hub: Any, tiny_dir: Path) -> None:
    """A repository of 12,000 top-level files: the listing stops past the hosted limit (10,000)
    after at most 11 pages of the tree, and the spec is refused in one line."""
    from fake_hub import checkpoint_files

    files = checkpoint_files(tiny_dir)
    files.update({f"junk-{i:05d}.txt": b"" for i in range(12_000)})
    hosted_hub.add_repo("evil/many-files").commit(files)
    hosted_hub.reset_counts()
    with pytest.raises(CorruptFileError) as refused:
        sources.locate("evil/many-files", policy_in_force())
    assert str(refused.value) == (
        "'evil/many-files' has more than 10000 files at its top level, more than this server "
        "lists; refused"
    )
    pages = [r for r in hosted_hub.requests if r.kind == "api" and r.status == 200]
    assert len(pages) <= 1 + 11  # the commit, then the tree's pages up to the limit


def test_absurd_config_shapes_are_refused_before_any_weight_is_downloaded(
    hosted_hub: Any, tiny_dir: Path
) -> None:
    """(before: refused only after its weights were downloaded, 87 MB each)."""
    from fake_hub import checkpoint_files

    files = checkpoint_files(tiny_dir)
    config = json.loads(files["config.json"])
    config["num_hidden_layers"] = 10**6
    files["config.json"] = json.dumps(config).encode()
    hosted_hub.add_repo("evil/absurd").commit(files)
    with pytest.raises(CorruptFileError, match="declares 1000000 layers, more than any supported"):
        analyze("evil/absurd", policy=policy_in_force())
    assert hosted_hub.bytes_sent("evil/absurd", "model.safetensors") == 0


def test_case_variants_of_a_hub_id_are_one_repository(
    hosted_hub: Any, tiny_dir: Path, tmp_path: Path
) -> None:
    """``good/name``, ``gOod/name``, ``GOOD/NAME``: one download, one folder in the hub cache,
    one stored analysis (before: each variant a new copy)."""
    hosted_hub.add_model("good/name", tiny_dir)
    first = analyze("good/name", policy=policy_in_force())
    sent = hosted_hub.bytes_sent("good/name", "model.safetensors")
    assert sent > 0
    for variant in ("gOod/name", "GOOD/NAME"):
        again = analyze(variant, policy=policy_in_force())
        assert again.card.fingerprint == first.card.fingerprint
    assert hosted_hub.bytes_sent("good/name", "model.safetensors") == sent
    folders = [p.name for p in (tmp_path / "hf-hub-cache").iterdir() if p.name.startswith("m")]
    assert folders == ["models--good--name"]


def test_the_hub_cache_is_evicted_by_size(hosted_hub: Any, tiny_dir: Path, tmp_path: Path) -> None:
    """Past its size the hub cache loses its least recently used repositories, never the one
    just used."""
    import time

    from huggingface_hub import hf_hub_download

    from headforms.sources.hub import evict_hub_cache, hub_cache_dir

    for name in ("org/old", "org/mid", "org/new"):
        hosted_hub.add_model(name, tiny_dir)
        hf_hub_download(name, "model.safetensors", cache_dir=hub_cache_dir())
        time.sleep(0.05)
    one = (tiny_dir / "model.safetensors").stat().st_size
    old = hub_cache_dir() / "models--org--old" / "blobs"
    for blob in old.iterdir():
        os.utime(blob, (1, 1))  # the least recently used
    freed = evict_hub_cache(2 * one + one // 2, keep="ORG/OLD")
    remaining = sorted(p.name for p in hub_cache_dir().iterdir() if p.name.startswith("models"))
    assert remaining == ["models--org--new", "models--org--old"]  # old kept: the one in use
    assert freed >= one
    assert evict_hub_cache(0) >= 2 * one
    assert not [p for p in hub_cache_dir().iterdir() if p.name.startswith("models")]


def test_the_stored_analysis_is_found_without_a_worker_for_every_variant(
    hosted_hub: Any, tiny_dir: Path
) -> None:
    hosted_hub.add_model("good/other", tiny_dir)
    analyze("good/other", policy=policy_in_force())
    located = sources.locate("GOOD/other", policy_in_force())
    assert located.hub is not None and located.hub.repo_id == "good/other"
    assert engine.stored_analysis(located) is not None


@pytest.fixture(scope="module")
def runnable_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny llama checkpoint with its tokenizer files (what a forward pass reads)."""
    directory = tmp_path_factory.mktemp("bounds-runnable") / "tiny"
    tiny_runnable.checkpoint("llama", directory, seed=52)
    return directory


def test_a_tokenizer_file_past_the_limit_is_refused_before_any_download(
    hosted_hub: Any, runnable_dir: Path
) -> None:
    """A repository whose tokenizer.json declares 3 GiB (before: downloaded whole for every
    forward pass, 3,159 MiB a visit, only the worker's time limit stopping it): every file a
    forward pass would download is counted from the listing first and the pass refused in one
    line, in the server (before any worker) and on the command line alike; nothing but the
    config is downloaded."""
    from fake_hub import checkpoint_files

    repo = hosted_hub.add_repo("evil/big-tokenizer")
    repo.commit(checkpoint_files(runnable_dir))
    repo.declared_sizes["tokenizer.json"] = 3 * 2**30
    expected = (
        "evil/big-tokenizer: a forward pass downloads every shard and the tokenizer files, "
        "3 GiB in all (among them tokenizer.json, 3 GiB), more than this server's limit of "
        "2 GiB (HEADFORMS_MAX_MODEL_BYTES); nothing was downloaded"
    )
    for forward_pass in (
        lambda: hosted.forward_pass("evil/big-tokenizer", prompt="w3 w4"),  # the server
        lambda: attention("evil/big-tokenizer", "w3 w4", policy=policy_in_force()),  # the CLI
    ):
        with pytest.raises(NotAllowedError) as refused:
            forward_pass()
        assert str(refused.value) == expected
    files = {r.filename for r in hosted_hub.requests if r.kind in ("resolve", "cdn")}
    sent = {name for name in files if hosted_hub.bytes_sent("evil/big-tokenizer", name)}
    assert sent <= {"config.json"}


def test_a_tokenizer_file_larger_than_declared_is_stopped_at_the_budget(
    hosted_hub: Any, runnable_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The hub declares 1 byte for tokenizer.json and streams the whole file: the forward pass's
    downloads, one budget for all its files, stop at the server's limit, in one line."""
    from fake_hub import checkpoint_files

    files = checkpoint_files(runnable_dir)
    repo = hosted_hub.add_repo("evil/liar-tokenizer")
    repo.commit(files)
    repo.declared_sizes["tokenizer.json"] = 1
    declared = sum(len(data) for name, data in files.items() if name != "tokenizer.json") + 1
    monkeypatch.setenv(MAX_BYTES_ENV, str(declared))
    with pytest.raises(NotAllowedError) as refused:
        attention("evil/liar-tokenizer", "w3 w4", policy=policy_in_force())
    message = str(refused.value)
    assert message.startswith("'evil/liar-tokenizer': downloading tokenizer.json went past")
    assert "partial file removed" in message and "\n" not in message
    assert 0 < hosted_hub.bytes_sent("evil/liar-tokenizer", "tokenizer.json")
    assert not list((tmp_path / "hf-hub-cache").rglob("*.incomplete"))
