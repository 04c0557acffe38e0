"""The engine's streaming: layers are read at most a few at a time whatever the model's depth,
and a config whose declared shapes contradict the tensors is refused before any layer is read.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import headforms.engine as engine
import headforms.streaming as streaming
from headforms.errors import CorruptFileError


@pytest.fixture(scope="module")
def deep_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny llama with 12 layers (more layers than threads, by far)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    directory = tmp_path_factory.mktemp("deep") / "llama"
    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=32,
        intermediate_size=32,
        num_hidden_layers=12,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=16,
    )
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_at_most_threads_plus_one_layers_are_in_flight(
    deep_model: Path, monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    events: list[tuple[str, int]] = []
    lock = threading.Lock()
    real_read = streaming.read_layer

    def read(source: Any, shapes: Any, index: Any, layer: int) -> Any:
        with lock:
            events.append(("read", layer))
        time.sleep(0.01)  # give eager scheduling every chance to run ahead
        return real_read(source, shapes, index, layer)

    def progress(done: int, total: int, message: str) -> None:
        if message.startswith("layer"):
            with lock:
                events.append(("consume", done))
            time.sleep(0.05)  # a slow consumer: eager workers would read far ahead of it

    monkeypatch.setattr(streaming, "read_layer", read)
    monkeypatch.setenv("HEADFORMS_THREADS", str(threads))
    result = engine.analyze(str(deep_model), use_cache=False, progress=progress)
    assert result.card.n_layers == 12 and len(result.heads) == 48
    reads = 0
    for kind, layer in events:
        if kind == "read":
            reads += 1
        else:  # layer `layer` is about to be consumed: the reads started so far are bounded
            assert reads <= layer + threads + 1, (threads, events)
    assert sorted(layer for kind, layer in events if kind == "read") == list(range(12))


@pytest.mark.parametrize("layers", [13, 10**6])
def test_a_config_declaring_more_layers_than_present_is_refused_before_reading(
    deep_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layers: int
) -> None:
    model = Path(shutil.copytree(deep_model, tmp_path / "liar"))
    config = json.loads((model / "config.json").read_text())
    config["num_hidden_layers"] = layers
    (model / "config.json").write_text(json.dumps(config))

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("a layer was read before the shapes were checked")

    monkeypatch.setattr(streaming, "read_layer", never)
    with pytest.raises(CorruptFileError, match=r"declares|more than any supported") as info:
        engine.analyze(str(model), use_cache=False)
    assert "\n" not in str(info.value)


def test_declared_head_shapes_must_match_the_tensors(
    deep_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = Path(shutil.copytree(deep_model, tmp_path / "heads"))
    config = json.loads((model / "config.json").read_text())
    config["num_attention_heads"] = 8  # the tensors hold 4 heads of 8 dims
    config["head_dim"] = 8
    (model / "config.json").write_text(json.dumps(config))
    monkeypatch.setattr(streaming, "read_layer", lambda *a: pytest.fail("read before the check"))
    with pytest.raises(CorruptFileError, match=r"has shape \(32, 32\), but the config implies"):
        engine.analyze(str(model), use_cache=False)
