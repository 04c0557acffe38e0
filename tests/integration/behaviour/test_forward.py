"""Forward passes against transformers' own model (eager attention, ``output_attentions=True``)
on tiny random models of every family headforms reads, built in the test session: checkpoint
directories (transformers' loader) and GGUF files (headforms' builder against transformers'
GGUF loader, and against the model the file was written from)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tiny_models
import tiny_runnable
import torch

from headforms.behaviour import attention, forward, head_type_scores
from headforms.behaviour.gguf import build_model, config_dict, transformers_config, weights_map
from headforms.behaviour.runnable import runnable
from headforms.errors import OptionError
from headforms.readers import GGUFReader
from headforms.sources import locate

FAMILIES = sorted(tiny_models.FAMILIES)
FLOAT32 = 2e-6
"""Weights in [0, 1] computed in float32 by two runs of the same float32 model agree to this."""


@pytest.fixture(scope="module")
def checkpoints(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[Path, torch.nn.Module]]:
    """One tiny checkpoint (with a tokenizer) per family, and its model in float32."""
    built = {}
    for i, family in enumerate(FAMILIES):
        directory = tmp_path_factory.mktemp(f"tiny-{family}")
        model = tiny_runnable.checkpoint(family, directory, seed=i)
        built[family] = (directory, model.float())
    return built


def reference_weights(model: torch.nn.Module, ids: list[int]) -> np.ndarray:
    """The model's own attention: (layers, heads, T, T)."""
    base = getattr(model, "base_model", model)
    with torch.no_grad():
        out = base(input_ids=torch.tensor([ids]), output_attentions=True)
    return np.stack([a[0].numpy() for a in out.attentions])


def softmax_of(scores: np.ndarray) -> np.ndarray:
    """Softmax over keys of pre-softmax scores whose masked entries are NaN."""
    top = np.nanmax(scores, axis=-1, keepdims=True)
    exp = np.where(np.isnan(scores), 0.0, np.exp(np.nan_to_num(scores - top, nan=-np.inf)))
    return exp / exp.sum(-1, keepdims=True)


@pytest.mark.parametrize("family", FAMILIES)
def test_checkpoint_attention_is_the_models_own(family: str, checkpoints: dict) -> None:
    """Weights equal the model's own to float32 precision; the pre-softmax scores are what
    they are the softmax of, NaN exactly where the causal mask hides a key."""
    directory, model = checkpoints[family]
    loaded = runnable(locate(str(directory)))
    ids = np.random.default_rng(1).integers(3, tiny_runnable.VOCAB, 17).tolist()
    result = forward.run(loaded.model, ids, loaded.n_layers)
    want = reference_weights(model, ids)
    assert result.weights.dtype == np.float32
    assert result.weights.shape == want.shape == (loaded.n_layers, loaded.n_heads, 17, 17)
    np.testing.assert_allclose(result.weights, want, atol=FLOAT32, rtol=0)
    assert result.scores is not None
    np.testing.assert_allclose(softmax_of(result.scores), result.weights, atol=FLOAT32, rtol=0)
    masked = np.isnan(result.scores)
    if family in tiny_runnable.ENCODERS:
        assert not masked.any()
    else:
        assert (masked == np.triu(np.ones((17, 17), bool), 1)).all()


@pytest.mark.parametrize("family", ["gpt2", "llama", "bert"])
def test_a_prompt_is_encoded_by_the_models_tokenizer(family: str, checkpoints: dict) -> None:
    """``attention`` runs on the tokenizer's ids, special tokens included (BERT's [CLS] and
    [SEP]), and names each token; a decoder's pattern is causal, an encoder's full."""
    directory, model = checkpoints[family]
    text = tiny_runnable.words([5, 9, 11, 5, 9, 11, 40])
    pattern = attention(str(directory), text, use_cache=False)
    encoder = family in tiny_runnable.ENCODERS
    assert pattern.token_ids == ([1] if encoder else []) + [5, 9, 11, 5, 9, 11, 40] + (
        [2] if encoder else []
    )
    assert pattern.tokens[1 if encoder else 0] == "w5"
    np.testing.assert_allclose(
        pattern.weights, reference_weights(model, pattern.token_ids), atol=FLOAT32, rtol=0
    )
    assert pattern.causal is (not encoder)


@pytest.mark.parametrize("family", ["gpt2", "llama", "bert"])
def test_head_type_scores_are_the_definitions_on_the_models_probe_weights(
    family: str, checkpoints: dict
) -> None:
    """The scores of every head, recomputed with numpy from the model's own weights on the
    probe the table reports."""
    directory, model = checkpoints[family]
    result = head_type_scores(str(directory), probe_length=9, seed=4, use_cache=False)
    meta = result.meta
    ids, start, length = meta["probe_ids"], meta["probe_start"], meta["probe_length"]
    assert ids[start : start + length] == ids[start + length : start + 2 * length]
    assert len(set(ids[start : start + length])) == length  # drawn without replacement
    assert min(ids[start : start + 2 * length]) >= 3  # ordinary tokens only
    assert start == (1 if family in tiny_runnable.ENCODERS else 0)
    weights = reference_weights(model, ids)
    table = result.table
    for row in table.itertuples():
        a = weights[row.layer, row.head]
        second = np.arange(start + length, start + 2 * length)
        i = np.arange(1, len(ids))
        assert row.previous_token == pytest.approx(a[i, i - 1].mean(), abs=FLOAT32)
        assert row.first_token == pytest.approx(a[i, 0].mean(), abs=FLOAT32)
        assert row.duplicate_token == pytest.approx(a[second, second - length].mean(), abs=FLOAT32)
        assert row.induction == pytest.approx(a[second, second - length + 1].mean(), abs=FLOAT32)
    again = head_type_scores(str(directory), probe_length=9, seed=4, use_cache=False)
    assert again.meta["probe_ids"] == ids  # seeded
    other = head_type_scores(str(directory), probe_length=9, seed=5, use_cache=False)
    assert other.meta["probe_ids"] != ids


def test_a_prompt_gives_its_own_previous_and_first_token_scores(checkpoints: dict) -> None:
    directory, model = checkpoints["llama"]
    text = tiny_runnable.words([5, 9, 11, 5, 9, 11, 40, 41])
    result = head_type_scores(str(directory), prompt=text, probe_length=6, use_cache=False)
    weights = reference_weights(model, attention(str(directory), text, use_cache=False).token_ids)
    i = np.arange(1, weights.shape[-1])
    np.testing.assert_allclose(
        result.table["previous_token"], weights[..., i, i - 1].mean(-1).ravel(), atol=FLOAT32
    )
    probe_only = head_type_scores(str(directory), probe_length=6, use_cache=False).table
    np.testing.assert_array_equal(result.table["induction"], probe_only["induction"])


# ---------------------------------------------------------------------------------------------
# GGUF files: headforms' builder against transformers' GGUF loader


@pytest.fixture(scope="module")
def gguf_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, torch.nn.Module]]:
    """Tiny llama (default RoPE, no biases: what a llama GGUF can say), qwen2 and gemma3 models
    written as GGUF files, with the models they were written from."""
    built = {}
    overrides = {
        "llama": {
            "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0},
            "attention_bias": False,
        },
        "qwen2": {},
        "gemma3_text": {},
    }
    for family, extra in overrides.items():
        directory = tmp_path_factory.mktemp(f"gguf-{family}")
        model = tiny_models.build(family, directory, seed=7, **extra)
        tiny_runnable.write_gguf(model, directory / "tiny.gguf")
        built[family] = (directory, model.float())
    return built


@pytest.mark.parametrize("family", sorted(tiny_runnable.GGUF_ARCH))
def test_gguf_model_equals_transformers_gguf_loader(family: str, gguf_files: dict) -> None:
    """Config, weights (bit for bit) and attention equal ``from_pretrained(gguf_file=...)``."""
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.modeling_gguf_pytorch_utils import (
        TENSOR_PROCESSORS,
        TensorProcessor,
        get_gguf_hf_weights_map,
    )

    directory, _ = gguf_files[family]
    reader = GGUFReader(directory / "tiny.gguf")
    ours = build_model(reader, "tiny")
    ref = AutoModelForCausalLM.from_pretrained(
        str(directory), gguf_file="tiny.gguf", attn_implementation="eager"
    )
    want_config = AutoConfig.from_pretrained(str(directory), gguf_file="tiny.gguf").to_dict()
    got_config = transformers_config(reader).to_dict()
    for config in (want_config, got_config):
        config.pop("_name_or_path")
    assert got_config == want_config
    processor = TENSOR_PROCESSORS.get(tiny_runnable.GGUF_ARCH[family], TensorProcessor)(
        config=config_dict(reader)
    )
    assert weights_map(ref, processor) == get_gguf_hf_weights_map(ref, processor)
    want = ref.base_model.state_dict()
    got = ours.state_dict()
    assert set(got) == set(want)
    assert all(torch.equal(got[k], want[k]) for k in want)
    ids = list(range(3, 40, 2))
    np.testing.assert_array_equal(reference_weights(ours, ids), reference_weights(ref, ids))


def test_a_llama_gguf_runs_as_the_model_it_was_written_from(gguf_files: dict) -> None:
    """llama.cpp permutes attn_q/attn_k rows; building the model undoes it exactly."""
    directory, model = gguf_files["llama"]
    ours = build_model(GGUFReader(directory / "tiny.gguf"), "tiny")
    ids = list(range(3, 60, 3))
    np.testing.assert_allclose(
        reference_weights(ours, ids), reference_weights(model, ids), atol=FLOAT32, rtol=0
    )


@pytest.mark.parametrize("layout", ["safetensors", "sharded"])
def test_a_hub_model_runs_from_its_snapshot(
    layout: str, fake_hub, checkpoints: dict, tmp_path: Path
) -> None:
    """Every weight file (a sharded checkpoint: all shards, not only those holding Q/K) and the
    tokenizer files are downloaded into the hub cache's snapshot, which transformers loads."""
    directory, model = checkpoints["llama"]
    fake_hub.add_model("org/tiny-llama", directory, layout)
    text = tiny_runnable.words([7, 8, 9, 7, 8, 9])
    pattern = attention("org/tiny-llama", text, use_cache=False)
    assert pattern.token_ids == [7, 8, 9, 7, 8, 9]
    np.testing.assert_allclose(
        pattern.weights, reference_weights(model, pattern.token_ids), atol=FLOAT32, rtol=0
    )
    if layout == "sharded":
        shards = {
            r.filename for r in fake_hub.requests if (r.filename or "").endswith(".safetensors")
        }
        assert len(shards) == 3  # every shard, the embeddings' too


def test_a_gguf_transformers_cannot_convert_is_one_line(tmp_path: Path) -> None:
    import gguf

    from headforms.errors import NotRunnableError

    path = tmp_path / "rwkv.gguf"
    writer = gguf.GGUFWriter(str(path), "rwkv6")
    writer.add_block_count(1)
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((8, 8), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(NotRunnableError) as info:
        build_model(GGUFReader(path), "rwkv.gguf")
    assert str(info.value).startswith(
        "GGUF architecture 'rwkv6' is not one transformers' GGUF loader converts (it converts: "
    )


def test_a_sequence_the_model_cannot_take_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past a learned position table (GPT-2's ``n_positions``), past what a pattern of the
    model's heads may hold, or with an id past its embeddings: one line, before the pass runs;
    a rotary model's ``max_position_embeddings`` is no such limit."""
    from headforms.behaviour import limits
    from headforms.errors import OptionError

    short, rotary = tmp_path / "short", tmp_path / "rotary"
    tiny_runnable.checkpoint("gpt2", short, n_positions=8)
    tiny_runnable.checkpoint("llama", rotary, max_position_embeddings=8)
    prompt = tiny_runnable.words(list(range(4, 24)))  # 20 tokens
    with pytest.raises(OptionError) as info:
        attention(str(short), prompt, use_cache=False)
    message = str(info.value)
    assert "the prompt is 20 tokens long" in message and "at most 8 tokens" in message
    assert "position table" in message and "\n" not in message
    assert attention(str(short), tiny_runnable.words([4, 5, 6]), use_cache=False).weights.shape[-1]
    assert attention(str(rotary), prompt, use_cache=False).weights.shape[-1] == 20
    heads = runnable(locate(str(rotary))).n_heads_all
    monkeypatch.setattr(limits, "MAX_PATTERN_BYTES", limits.PATTERN_BYTES_PER_ENTRY * heads * 100)
    with pytest.raises(OptionError, match=r"at most 10 tokens \(a pattern of .* heads within"):
        attention(str(rotary), prompt, use_cache=False)
    model = runnable(locate(str(rotary)))
    with pytest.raises(OptionError, match=f"token id {model.vocab_size}, but .* has"):
        forward.check_length([4, model.vocab_size], "the prompt", model)


def test_a_layer_or_head_the_model_lacks_is_refused_before_any_pass(
    checkpoints: dict, gguf_files: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the declared sizes (config.json, GGUF header), with the pattern's own message; an
    existing one is computed (the pass then runs)."""
    import headforms.behaviour.run as run

    def no_pass(*args, **kwargs):
        raise AssertionError("a forward pass ran")

    directory = str(checkpoints["llama"][0])
    pattern = attention(directory, "w3 w4 w5", use_cache=False)  # the message after a pass
    with pytest.raises(OptionError) as after:
        pattern.check_head(0, pattern.n_heads)
    monkeypatch.setattr(run, "_attention", no_pass)
    with pytest.raises(OptionError) as before:
        attention(directory, "w3 w4 w5", use_cache=False, layer=0, head=pattern.n_heads)
    assert str(before.value) == str(after.value)
    with pytest.raises(OptionError, match=f"layer {pattern.n_layers} does not exist"):
        attention(directory, "w3 w4 w5", use_cache=False, layer=pattern.n_layers)
    gguf = gguf_files["qwen2"][0] / "tiny.gguf"  # its header (it has no tokenizer to run)
    config = gguf_files["qwen2"][1].config
    heads, layers = config.num_attention_heads, config.num_hidden_layers
    with pytest.raises(OptionError, match=f"head {heads} does not exist: .* 0 to {heads - 1}$"):
        attention(str(gguf), "w3", use_cache=False, layer=layers - 1, head=heads)
    monkeypatch.undo()
    assert attention(directory, "w3 w4 w5", use_cache=False, layer=0, head=0).n_heads > 0


def test_declared_layers_and_heads_wait_for_a_hub_gguf_not_fetched() -> None:
    """A hub GGUF not on this machine yet declares nothing before loading (no error, no read)."""
    from headforms.behaviour.runnable import declared_layers_heads
    from headforms.sources.located import HubLocation, Located, LocatedFile

    located = Located(
        spec="org/model:model.gguf",
        kind="hub",
        display_name="org/model",
        format="gguf",
        fingerprint="f",
        weights=(LocatedFile("model.gguf", 1000, None),),
        hub=HubLocation("org/model", None, "0" * 40),
    )
    assert declared_layers_heads(located) is None
