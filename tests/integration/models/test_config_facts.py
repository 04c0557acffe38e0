"""A config.json's facts (headforms/models/config_facts.py) answer as transformers' config does,
for every family, computed now or read back from the store; what transformers refuses is
refused the same way; an unusable cache costs only time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tiny_models as tm

from headforms.architectures import architecture_for, shapes_from_config
from headforms.errors import CorruptFileError, UnsupportedArchitectureError
from headforms.models.config_facts import FACT_NAMES, ConfigFacts, config_facts
from headforms.models.configs import transformers_config
from headforms.models.rope import inverse_frequencies, rope_layer_type, rope_parameters

FAMILIES = list(tm.FAMILIES)


@pytest.fixture(scope="module")
def fields(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every family's tiny config.json (RoPE default, partial, linear, llama3, per layer type)."""
    root = tmp_path_factory.mktemp("config-facts")
    out = {}
    for family in FAMILIES:
        tm.build(family, root / family)
        out[family] = json.loads((root / family / "config.json").read_text())
    return out


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def assert_same_as(facts: Any, real: Any, family: str) -> None:
    for name in FACT_NAMES:
        assert hasattr(facts, name) == hasattr(real, name), (family, name)
        if hasattr(real, name):
            assert getattr(facts, name) == getattr(real, name), (family, name)
    shapes = shapes_from_config(real)
    assert shapes_from_config(facts) == shapes
    rotary = architecture_for(real.model_type).rotary
    for layer in range(shapes.n_layers):
        assert rope_parameters(facts, layer) == rope_parameters(real, layer), (family, layer)
        assert rope_layer_type(facts, layer) == rope_layer_type(real, layer), (family, layer)
        if rotary:
            np.testing.assert_array_equal(
                inverse_frequencies(facts, shapes.head_dim, layer),
                inverse_frequencies(real, shapes.head_dim, layer),
                err_msg=f"{family} layer {layer}",
            )


@pytest.mark.parametrize("family", FAMILIES)
def test_facts_answer_as_transformers_config(fields, cache: Path, family: str) -> None:
    real = transformers_config(fields[family], family)
    computed = config_facts(fields[family], family)
    stored = config_facts(fields[family], family)
    assert isinstance(stored, ConfigFacts)
    assert stored.__dict__["_built"] is None, "read back from the store, not from transformers"
    assert_same_as(computed, real, family)
    assert_same_as(stored, real, family)
    assert stored.__dict__["_built"] is None, "the facts answered without transformers"


def test_kept_frequencies_are_transformers_own(fields, cache: Path) -> None:
    """Non-default RoPE (linear, llama3, Gemma-3's per layer type) is kept, not recomputed."""
    for family in ("llama", "qwen2", "gemma3_text"):
        config_facts(fields[family], family)
        stored = config_facts(fields[family], family)
        assert stored.initialised_frequencies, family
    assert not hasattr(config_facts(fields["gpt2"], "gpt2"), "initialised_frequencies")


def test_any_other_attribute_comes_from_transformers(fields, cache: Path) -> None:
    config_facts(fields["llama"], "llama")
    stored = config_facts(fields["llama"], "llama")
    real = transformers_config(fields["llama"], "llama")
    assert stored.vocab_size == real.vocab_size and stored.rms_norm_eps == real.rms_norm_eps
    assert stored.__dict__["_built"] is not None
    with pytest.raises(AttributeError):
        _ = stored.no_such_attribute


def test_what_transformers_refuses_is_refused_alike_and_not_kept(fields, cache: Path) -> None:
    bad = {**fields["llama"], "rope_parameters": {"rope_type": "linear", "rope_theta": 10.0}}
    with pytest.raises(CorruptFileError) as direct:
        transformers_config(bad, "bad")
    for _ in range(2):  # nothing was stored by the first refusal
        with pytest.raises(CorruptFileError) as facts:
            config_facts(bad, "bad")
        assert str(facts.value) == str(direct.value)
    with pytest.raises(UnsupportedArchitectureError, match="unsupported architecture 'nope'"):
        config_facts({**fields["llama"], "model_type": "nope"}, "nope")


def test_an_unusable_cache_costs_only_time(
    fields, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(blocker))
    for _ in range(2):
        facts = config_facts(fields["qwen2"], "qwen2")
        assert facts.__dict__["_built"] is not None  # asked transformers each time
        assert_same_as(facts, transformers_config(fields["qwen2"], "qwen2"), "qwen2")
