"""The factor store: open formats anyone can read (safetensors + JSON), factors in the precision
read (float32 for fp32, bf16 and GGUF weights, exactly the values the readers give), committed
whole or not at all (a killed writer leaves nothing trusted), bounded per model and in total
(least recently used evicted).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tiny_models as tm
from counting import count_computations, stages

from headforms import analyze
from headforms.architectures import shapes_from_config
from headforms.models.extract import TensorIndex
from headforms.models.source import open_model
from headforms.sources import locate
from headforms.store import FactorStore, ResultStore, factors_key
from headforms.store import factors as factor_store


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random qwen3 (RoPE, QK-norm gains), saved in float32."""
    directory = tmp_path_factory.mktemp("factors-qwen3")
    tm.build("qwen3", directory, seed=11)
    return directory


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache directory for this test."""
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _copy(tiny_dir: Path, target: Path) -> str:
    return str(shutil.copytree(tiny_dir, target))


def _entry(spec: str) -> Path:
    return FactorStore().directory / factors_key(locate(spec).fingerprint)


def test_entries_are_safetensors_and_json_in_the_precision_read(
    tiny_dir: Path, tmp_path: Path, cache: Path
) -> None:
    from safetensors.numpy import load_file

    model = _copy(tiny_dir, tmp_path / "model")
    result = analyze(model)
    entry = _entry(model)
    meta = json.loads((entry / factor_store.META).read_text())
    assert (meta["format"], meta["version"]) == ("headforms.factors", 1)
    facts = meta["facts"]
    assert facts["shapes"]["n_layers"] == result.card.n_layers == len(meta["layers"])
    assert facts["pairing"] == "rotate_half" and facts["qk_norm"] is True
    source = open_model(model)
    shapes = shapes_from_config(source.config)
    index = TensorIndex.for_source(source)
    for layer, listed in enumerate(meta["layers"]):
        arrays = load_file(entry / listed["file"])
        assert arrays["q"].dtype == np.float32 and arrays["k"].dtype == np.float32
        assert arrays["q_gain"].dtype == np.float64  # the full gain 1 + w needs float64
        stored = index.read(source.scheme.patterns["q_weight"], layer)
        np.testing.assert_array_equal(arrays["q"], stored.reshape(arrays["q"].shape))
        assert arrays["q"].shape == (shapes.n_heads, shapes.head_dim, shapes.model_dim)
        assert arrays["inv_freq"].shape == (shapes.head_dim // 2,)


def test_bf16_weights_are_kept_as_their_exact_float32_values(
    tiny_dir: Path, tmp_path: Path, cache: Path
) -> None:
    """bf16 widens to float32 without rounding: the factors are the bf16 values, bit for bit,
    and an analysis from them equals one from the weights."""
    import torch
    from safetensors.numpy import load_file
    from safetensors.torch import load_file as load_torch
    from safetensors.torch import save_file as save_torch

    model = Path(_copy(tiny_dir, tmp_path / "bf16"))
    weights = model / "model.safetensors"
    tensors = {k: v.to(torch.bfloat16) for k, v in load_torch(weights).items()}
    save_torch(tensors, weights, metadata={"format": "pt"})
    direct = analyze(str(model), rope_position=3, use_cache=False)
    analyze(str(model))
    entry = _entry(str(model))
    layer0 = load_file(entry / factor_store.layer_file(0))
    name = next(k for k in tensors if k.endswith("layers.0.self_attn.q_proj.weight"))
    widened = tensors[name].to(torch.float32).numpy()
    np.testing.assert_array_equal(layer0["q"].reshape(widened.shape), widened)
    assert layer0["q"].dtype == np.float32
    again = analyze(str(model), rope_position=3)  # from the stored factors
    np.testing.assert_array_equal(again.heads["c"], direct.heads["c"])
    np.testing.assert_array_equal(again.spectra["eig_s"], direct.spectra["eig_s"])


@pytest.mark.parametrize("name", ["minilm-l6", "smollm2-135m"])
def test_bundled_models_factors_are_float32(name: str, cache: Path) -> None:
    """F32 safetensors (with biases, learned positions) and a Q4_1 GGUF (dequantized to
    float32, RoPE frequencies kept): float32 factors."""
    from safetensors.numpy import load_file

    analyze(name)
    layer0 = load_file(_entry(name) / factor_store.layer_file(0))
    assert {layer0["q"].dtype, layer0["k"].dtype} == {np.dtype("float32")}
    assert "q_gain" not in layer0  # neither has QK-norm
    assert ("q_bias" in layer0) == (name == "minilm-l6")
    assert ("inv_freq" in layer0) == (name == "smollm2-135m")


WRITER_KILLED = """
import sys, time
from pathlib import Path
import safetensors.numpy as st
real = st.save_file
count = [0]
def paused(arrays, path, *a, **k):
    count[0] += 1
    if count[0] == 2:  # one layer written, the second half written: stall until killed
        Path(path).write_bytes(b"half")
        Path(sys.argv[2]).write_text(str(path))
        time.sleep(600)
    return real(arrays, path, *a, **k)
st.save_file = paused
from headforms import analyze
analyze(sys.argv[1])
"""


def test_a_killed_writer_leaves_no_trusted_entry(
    tiny_dir: Path, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _copy(tiny_dir, tmp_path / "model")
    marker = tmp_path / "paused"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER_KILLED, model, str(marker)], env=dict(os.environ)
    )
    deadline = time.monotonic() + 300
    while not marker.exists():
        assert proc.poll() is None, "the writer exited before the write"
        assert time.monotonic() < deadline, "the writer never reached its second layer"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    partial = Path(marker.read_text()).parent
    assert partial.name.startswith(factor_store.PARTIAL_PREFIX) and partial.exists()
    store = FactorStore()
    key = factors_key(locate(model).fingerprint)
    assert store.get(key) is None and not (store.directory / key).exists()
    calls = count_computations(monkeypatch)
    analyze(model, store=ResultStore(tmp_path / "results"))
    assert stages(calls) == ["extraction"]  # nothing was trusted: the weights are read
    assert store.get(key) is not None
    monkeypatch.setattr(factor_store, "PARTIAL_SECONDS", 0.0)
    store.evict()  # the dead writer's leftover goes with the next eviction
    assert not partial.exists()


def test_a_model_larger_than_the_limit_keeps_no_factors(
    tiny_dir: Path, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _copy(tiny_dir, tmp_path / "model")
    monkeypatch.setattr(factor_store, "MODEL_LIMIT", 1000)
    first = analyze(model, store=ResultStore(tmp_path / "a"))
    assert not _entry(model).exists()
    directory = FactorStore().directory
    assert not directory.exists() or not any(directory.iterdir())
    calls = count_computations(monkeypatch)
    again = analyze(model, store=ResultStore(tmp_path / "b"))
    assert stages(calls) == ["extraction"]
    np.testing.assert_array_equal(again.heads["a"], first.heads["a"])


def test_the_store_evicts_the_least_recently_used_past_its_total(
    tiny_dir: Path, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = [_copy(tiny_dir, tmp_path / f"m{i}") for i in range(3)]
    for i, model in enumerate(models):  # distinct fingerprints (mtimes)
        weights = Path(model) / "model.safetensors"
        os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + i * 10**9))
    analyze(models[0])
    size = sum(f.stat().st_size for f in _entry(models[0]).iterdir())
    monkeypatch.setattr(factor_store, "TOTAL_LIMIT", 2 * size + size // 2)
    analyze(models[1])
    time.sleep(0.05)
    store = FactorStore()
    assert store.get(factors_key(locate(models[0]).fingerprint)) is not None  # used: now newest
    time.sleep(0.05)
    analyze(models[2])
    kept = {key for key, _, _ in store.entries()}
    keys = [factors_key(locate(m).fingerprint) for m in models]
    assert kept == {keys[0], keys[2]}  # models[1] was the least recently used
    assert sum(size for _, size, _ in store.entries()) <= factor_store.TOTAL_LIMIT
