"""The attack suites' fixtures: an allowed model root of hostile files, hosted mode on it, and
fresh budgets and slots for each test."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tiny_models
from hosted_attacks import SLOW_PAIRS, assert_no_worker_left, write_config
from hostile_files import slow_gguf, wide_model
from model_files import gguf_file
from model_files import patched as gguf_patched

from headforms.hosted import api
from headforms.settings import (
    ALLOWLIST_ENV,
    CONCURRENT_ENV,
    HOSTED_ENV,
    MAX_BYTES_ENV,
    MEMORY_ENV,
    QUEUE_ENV,
    ROOTS_ENV,
    SECONDS_ENV,
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An allowed model root holding a tiny model and every hostile file of this suite."""
    base = tmp_path_factory.mktemp("adversarial") / "models"
    base.mkdir()
    tiny = base / "tiny"
    tiny_models.build("llama", tiny, seed=11)
    for name, changes in {
        "lying-layers": {"num_hidden_layers": 500},
        "absurd-layers": {"num_hidden_layers": 10**6},
        "absurd-heads": {
            "hidden_size": 10**5,
            "num_attention_heads": 10**5,
            "num_key_value_heads": 10**5,
        },
        "lying-heads": {"hidden_size": 1024, "num_attention_heads": 64, "num_key_value_heads": 64},
    }.items():
        shutil.copytree(tiny, base / name)
        write_config(base / name, **changes)
    fifo_model = base / "fifo-model"
    fifo_model.mkdir()
    shutil.copy(tiny / "config.json", fifo_model / "config.json")
    os.mkfifo(fifo_model / "model.safetensors")
    os.mkfifo(base / "fifo.gguf")
    counts = gguf_patched(gguf_file(), "value:tokenizer.ggml.tokens:count", "<Q", 2**60)
    (base / "counts.gguf").write_bytes(counts)
    slow_gguf(base / "slow.gguf", SLOW_PAIRS)
    wide_model(base / "wide")
    return base


@pytest.fixture
def hosted_env(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Any]]:
    """Hosted mode: the hostile root, an empty result cache, default limits, one thread."""
    monkeypatch.setenv(HOSTED_ENV, "1")
    monkeypatch.setenv(ROOTS_ENV, str(root))
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HEADFORMS_THREADS", "1")
    for name in (ALLOWLIST_ENV, MAX_BYTES_ENV, MEMORY_ENV):
        monkeypatch.delenv(name, raising=False)
    for name in (SECONDS_ENV, CONCURRENT_ENV, QUEUE_ENV):
        monkeypatch.delenv(name, raising=False)
    yield {"root": root, "cache": tmp_path / "cache"}
    assert_no_worker_left()


@pytest.fixture(autouse=True)
def fresh_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no visitor's budget spent and no past use of the slots."""
    monkeypatch.setattr(api, "hosting", api.Hosting())


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny llama (save_pretrained) to publish on the fake hub."""
    directory = tmp_path_factory.mktemp("hub-tiny") / "tiny"
    tiny_models.build("llama", directory, seed=12)
    return directory
