"""The demo (headforms.demo) built for real: a training run recorded by the Trainer callback into a
run store, of one tiny llama's shapes whose heads change over training, its last record the
analysis of model A, a pair of the same shapes that differ, the same weights for the same seed (a
second build in another cache, two threads building at once: one build), and nothing left behind
by a build that fails."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open

import headforms.demo as demo_module
from headforms import analyze
from headforms.analyses.motion import moved_most
from headforms.columns import METRIC_COLUMNS
from headforms.demo import (
    CHECKPOINT_EVERY,
    SHAPES,
    TRAIN_STEPS,
    Demo,
    build_demo,
    built_demo,
    demo_directory,
    weights_fingerprint,
)
from headforms.diff import diff
from headforms.errors import OptionError
from headforms.run_store import is_run_store, run_state
from headforms.series import trajectory

N, HEADS, KV = SHAPES["hidden_size"], SHAPES["num_attention_heads"], SHAPES["num_key_value_heads"]
HEAD_DIM = N // HEADS


@pytest.fixture(scope="module")
def demo() -> Demo:
    return build_demo()


def test_the_run_is_a_run_store_of_one_tiny_llama_and_the_pair_its_folders(demo: Demo) -> None:
    assert demo.steps == tuple(range(0, TRAIN_STEPS + 1, CHECKPOINT_EVERY))
    assert is_run_store(demo.run)
    state = run_state(demo.run)
    assert state.steps == demo.steps and not state.live  # the callback said the run ended
    assert state.manifest.every == CHECKPOINT_EVERY
    for folder in (demo.base, demo.finetuned):
        config = json.loads((folder / "config.json").read_text())
        assert config["model_type"] == "llama"
        assert (config["num_hidden_layers"], config["num_attention_heads"]) == (2, HEADS)
        assert (config["num_key_value_heads"], config["hidden_size"]) == (KV, N)
        assert (folder / "tokenizer.json").is_file()
        with safe_open(folder / "model.safetensors", "pt") as weights:
            for layer in range(2):
                prefix = f"model.layers.{layer}.self_attn"
                assert tuple(weights.get_slice(f"{prefix}.q_proj.weight").get_shape()) == (N, N)
                kv_shape = (KV * HEAD_DIM, N)
                assert tuple(weights.get_slice(f"{prefix}.k_proj.weight").get_shape()) == kv_shape
    assert built_demo() == demo
    assert demo.fingerprint == weights_fingerprint(demo.weight_files())
    assert not [p for p in demo.directory.parent.iterdir() if p.name.startswith(".")]


def test_training_changes_the_heads_and_the_pair_differs(demo: Demo) -> None:
    run = trajectory(str(demo.run))
    assert run.steps == demo.steps and run.card.total_heads == 2 * HEADS
    moved = moved_most(run, 2 * HEADS)
    assert moved["distance"].max() > 0.05  # from the initialisation to step 200
    pair = diff(str(demo.base), str(demo.finetuned))
    table = pair.table()
    assert len(table) == 2 * HEADS and table["distance"].max() > 0.01
    last, base = run.analyses[-1].columns, analyze(str(demo.base)).columns
    for name in METRIC_COLUMNS:  # the last record is model A's analysis
        assert np.array_equal(np.asarray(last[name]), np.asarray(base[name])), name


def test_the_same_seed_builds_the_same_weights_once(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path))
    builds: list[int] = []
    real = demo_module._build

    def counted(directory: Path, seed: int, progress):  # noqa: ANN001
        builds.append(seed)
        return real(directory, seed, progress)

    monkeypatch.setattr(demo_module, "_build", counted)
    results: list[Demo] = []
    threads = [threading.Thread(target=lambda: results.append(build_demo())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert builds == [0]  # two at once: one build, the other waits for it
    assert {r.fingerprint for r in results} == {demo.fingerprint}
    assert results[0].directory == demo_directory() != demo.directory


def test_a_failed_build_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path))
    calls: list[int] = []

    def failing(*args: object) -> None:
        calls.append(1)
        if len(calls) > 1:  # after the run, before B is fine-tuned
            raise RuntimeError("the machine stopped")

    monkeypatch.setattr(demo_module, "_train", failing)
    with pytest.raises(RuntimeError):
        build_demo(seed=7)
    assert built_demo(seed=7) is None
    assert list((tmp_path / "demo").iterdir()) == []  # no half-written demo, no hidden folder


def test_seeds_are_checked() -> None:
    for bad in (-1, 2**31, 1.5, "0", True):
        with pytest.raises(OptionError):
            demo_directory(bad)  # type: ignore[arg-type]


def test_the_gateways_demo_kind_reads_the_built_demo(demo: Demo) -> None:
    """The dashboard's DemoBuild kind answers from the built demo (no second build)."""
    from ui.gateway import DemoBuild, LocalGateway

    assert DemoBuild().in_store()
    assert LocalGateway().run(DemoBuild()) == demo


def test_the_gateways_run_records_kind_reads_the_demos_run_store(demo: Demo) -> None:
    """The dashboard's RunRecords kind is the run store's series (read, never computed)."""
    from headforms.run_store import run_state
    from headforms.series import run_series
    from ui.gateway import LocalGateway, RunRecords

    state = run_state(demo.run)
    found = LocalGateway().run(RunRecords(state))
    want = run_series(state, spectra=False)
    assert found.values == want.values
    assert found.table.equals(want.table)
