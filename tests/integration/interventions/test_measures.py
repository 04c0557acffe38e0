"""The library's measures on tiny models against transformers itself: the unedited loss, a
model whose head has its query and key weights swapped (transpose), a head's output projection
zeroed (output_zero) or replaced by a constant (output_mean); sweeps against single edits and
against passes that recompute every layer; an encoder's measure; parity scopes against the
analysis; the probe against the behaviour stage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tiny_models as tm
import tiny_runnable
import torch

from headforms import analyze
from headforms.behaviour import forward, head_type_scores
from headforms.behaviour.runnable import LOADED, runnable
from headforms.errors import NotRunnableError, OptionError
from headforms.interventions import intervention, request_of, sweep
from headforms.interventions.anatomy import anatomy_of
from headforms.interventions.changes import FormChange
from headforms.interventions.edits import EDITS
from headforms.interventions.hooks import applied
from headforms.interventions.measures import next_token_logits
from headforms.interventions.passes import clean_pass, edited_passes, run_base
from headforms.sources import locate
from headforms.store import ResultStore

TEXT = tiny_runnable.words([5, 9, 11, 40, 7, 5, 9, 11, 40, 7, 22, 31, 5, 9, 77, 12])
CE = 2e-6
"""Cross-entropies (nats, about 5 on the tiny vocabulary) of two float32 runs agree to this."""


def unbiased_gpt2(directory: Path, seed: int) -> Any:
    """A tiny GPT-2 language model whose query and key biases are zero (saved, with its
    tokenizer); the model itself in float32."""
    model = tm.build("gpt2", directory, seed=seed).float()
    with torch.no_grad():
        for block in model.transformer.h:
            block.attn.c_attn.bias[: 2 * tm.N] = 0.0
    model.save_pretrained(directory, safe_serialization=True)
    tiny_runnable.save_tokenizer(directory, encoder=False)
    return model


def reference_measures(model: Any, reference: Any, ids: list[int]) -> tuple[float, float]:
    """``(ce, kl)`` of ``model`` (transformers, changed by the test) against ``reference``."""
    tokens = torch.tensor([ids])
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=tokens).logits[0, :-1].double(), -1)
        base = torch.log_softmax(reference(input_ids=tokens).logits[0, :-1].double(), -1)
    ce = -logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].mean()
    kl = (base.exp() * (base - logp)).sum(-1).mean()
    return float(ce), float(kl)


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    directory = tmp_path_factory.mktemp("gpt2-unbiased")
    return str(directory), unbiased_gpt2(directory, seed=5)


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("llama")
    tiny_runnable.checkpoint("llama", directory, seed=6)
    return str(directory)


def run(spec: str, edit: str, **options: Any) -> Any:
    options.setdefault("controls", 0)
    return intervention(spec, request_of(edit, text=TEXT, **options), use_cache=False)


def test_identity_reproduces_the_models_loss(llama: str) -> None:
    """ce_original is transformers' own loss; the identity edit of every head changes nothing."""
    from transformers import AutoModelForCausalLM

    result = run(llama, "identity", controls=2)
    row = result.table.iloc[0]
    ids = result.meta["token_ids"]
    model = AutoModelForCausalLM.from_pretrained(llama, attn_implementation="eager").eval()
    with torch.no_grad():
        loss = model(input_ids=torch.tensor([ids]), labels=torch.tensor([ids])).loss
    assert row["ce_original"] == pytest.approx(float(loss), abs=CE)
    assert row["heads"] == tm.LAYERS * tm.H and row["tokens"] == len(ids)
    assert row["ce_edited"] == pytest.approx(row["ce_original"], abs=CE)
    assert row["delta_ce"] == pytest.approx(0.0, abs=CE) and row["kl"] == pytest.approx(0, abs=CE)
    np.testing.assert_allclose(result.controls["delta_ce"], 0.0, atol=CE)  # D = 0: no change
    loaded = runnable(locate(llama))
    anatomy = anatomy_of(loaded)
    every = tuple(
        FormChange(layer, head, anatomy.head_logit(layer, head), EDITS["identity"])
        for layer in range(tm.LAYERS)
        for head in range(tm.H)
    )
    with applied(anatomy, [every]):
        hidden = run_base(loaded, torch.tensor([ids]))
    with torch.no_grad():
        ours = next_token_logits(loaded.causal_lm, hidden)[0]
        own = model(input_ids=torch.tensor([ids])).logits[0]
    np.testing.assert_allclose(ours.numpy(), own.numpy(), atol=1e-5, rtol=0)


def test_transpose_is_the_head_with_query_and_key_swapped(gpt2: tuple[str, Any]) -> None:
    """No RoPE, no GQA, no Q/K bias: ``L^T = Q^T K`` is the head with its query and key weights
    swapped, which transformers runs (the logits, and the library's ce and KL)."""
    directory, model = gpt2
    layer, head, n = 1, 2, tm.N // tm.H
    swapped = type(model)(model.config).eval()
    swapped.load_state_dict(model.state_dict())
    with torch.no_grad():
        weight = swapped.transformer.h[layer].attn.c_attn.weight  # (N, 3N): q | k | v columns
        q = weight[:, head * n : (head + 1) * n].clone()
        weight[:, head * n : (head + 1) * n] = weight[:, tm.N + head * n : tm.N + (head + 1) * n]
        weight[:, tm.N + head * n : tm.N + (head + 1) * n] = q
    result = run(directory, "transpose", heads=f"{layer}.{head}")
    ids = result.meta["token_ids"]
    ce, kl = reference_measures(swapped, model, ids)
    row = result.table.iloc[0]
    assert row["ce_edited"] == pytest.approx(ce, abs=CE) and row["kl"] == pytest.approx(kl, abs=CE)
    assert row["kl"] > 1e-4  # the swap changes the model
    loaded = runnable(locate(directory))
    anatomy = anatomy_of(loaded)
    change = FormChange(layer, head, anatomy.head_logit(layer, head), EDITS["transpose"])
    with applied(anatomy, [(change,)]):
        hidden = run_base(loaded, torch.tensor([ids]))
    with torch.no_grad():
        ours = next_token_logits(loaded.causal_lm, hidden)[0]
        want = swapped(input_ids=torch.tensor([ids])).logits[0]
    np.testing.assert_allclose(ours.numpy(), want.numpy(), atol=2e-5, rtol=0)


@pytest.mark.parametrize("edit", ["output_zero", "output_mean"])
def test_output_edits_are_the_output_projection_changed(gpt2: tuple[str, Any], edit: str) -> None:
    """output_zero: the head's rows of the output projection zeroed; output_mean: zeroed, and
    each position's projection moved by the head's mean output over that position and the ones
    before it (never a later one: no future)."""
    directory, model = gpt2
    layer, head, n = 0, 1, tm.N // tm.H
    result = run(directory, edit, heads=f"{layer}.{head}")
    ids = result.meta["token_ids"]
    seen: list[torch.Tensor] = []
    projection = model.transformer.h[layer].attn.c_proj
    handle = projection.register_forward_pre_hook(lambda _, args: seen.append(args[0][0]))
    with torch.no_grad():
        model(input_ids=torch.tensor([ids]))
    handle.remove()
    outputs = seen[0][:, head * n : (head + 1) * n].double()
    running = torch.stack([outputs[: t + 1].mean(0) for t in range(len(outputs))])
    changed = type(model)(model.config).eval()
    changed.load_state_dict(model.state_dict())
    with torch.no_grad():
        weight = changed.transformer.h[layer].attn.c_proj.weight  # Conv1D: (in, out)
        moved = (running @ weight[head * n : (head + 1) * n].double()).float()
        weight[head * n : (head + 1) * n] = 0.0
    if edit == "output_mean":
        changed.transformer.h[layer].attn.c_proj.register_forward_hook(
            lambda _, args, out: out + moved
        )
    ce, kl = reference_measures(changed, model, ids)
    row = result.table.iloc[0]
    assert row["ce_edited"] == pytest.approx(ce, abs=CE) and row["kl"] == pytest.approx(kl, abs=CE)
    assert row["controls"] == 0 and np.isnan(row["control_median"])


def test_a_sweep_is_each_head_edited_alone(llama: str) -> None:
    """Every head of a layer edited on its own (batched, from the layer up) gives the rows of
    single-head requests, and each equals a pass that recomputes every layer."""
    table = sweep(llama, "symmetric", layer=1, text=TEXT, controls=2, use_cache=False)
    assert list(table["head"]) == list(range(tm.H)) and (table["layer"] == 1).all()
    for head in (0, 3):
        single = run(llama, "symmetric", heads=f"1.{head}", controls=2).table.iloc[0]
        for column in ("delta_ce", "kl", "control_median", "controls_smaller"):
            assert table[column].iloc[head] == pytest.approx(single[column], abs=CE), column
    loaded = runnable(locate(llama))
    anatomy = anatomy_of(loaded)
    ids = loaded.tokenizer.encode(TEXT)
    window = np.arange(len(ids) - 1)
    clean = clean_pass(loaded, anatomy, ids, window)
    plan = (FormChange(1, 3, anatomy.head_logit(1, 3), EDITS["symmetric"]),)
    reused = edited_passes(loaded, anatomy, clean, [plan], [None])[0].measured
    with applied(anatomy, [plan]):  # no prefix: every layer recomputed
        hidden = run_base(loaded, torch.tensor([ids]))
    with torch.no_grad():
        logp = torch.log_softmax(next_token_logits(loaded.causal_lm, hidden[0, :-1]), -1)
    full = -logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].double().mean()
    assert reused.ce == pytest.approx(float(full), abs=CE)
    assert reused.ce - clean.ce == pytest.approx(table["delta_ce"].iloc[3], abs=CE)


def test_an_encoder_is_measured_by_its_hidden_states(tmp_path: Path) -> None:
    """BERT has no language-modelling head: no cross-entropy (NaN, said in the notes); the
    cosine distance of the final hidden states measures the change and the controls."""
    tiny_runnable.checkpoint("bert", tmp_path, seed=8)
    result = run(str(tmp_path), "flip", heads="1.0", controls=3)
    row = result.table.iloc[0]
    assert result.measure == "cosine_distance"
    assert np.isnan(row["ce_original"]) and np.isnan(row["delta_ce"]) and np.isnan(row["kl"])
    assert any("no language-modelling head" in note for note in result.notes)
    assert row["cosine_distance"] > 1e-5
    values = result.controls["cosine_distance"][0]
    assert values.shape == (3,) and (values > 0).all()
    assert row["control_median"] == pytest.approx(np.median(values))
    assert row["controls_smaller"] == np.count_nonzero(values < row["cosine_distance"])
    identity = run(str(tmp_path), "identity", heads="1.0").table.iloc[0]
    assert identity["cosine_distance"] == pytest.approx(0.0, abs=1e-7)


def test_a_parity_group_is_the_analysis_parity(llama: str) -> None:
    """Each parity group is the analysis' heads of that parity (at d = 0), or, when the model
    has none, one line saying so."""
    heads = analyze(llama).heads
    found = 0
    for parity in ("I+", "II", "I-"):
        want = heads[heads["parity"] == parity][["layer", "head"]].values.tolist()
        if not want:
            with pytest.raises(OptionError, match=f"no head of parity {parity}"):
                sweep(llama, "zero", parity=parity, text=TEXT, use_cache=False)
            continue
        table = sweep(llama, "zero", parity=parity, text=TEXT, use_cache=False)
        assert table[["layer", "head"]].astype(int).values.tolist() == want
        assert (table["parity"] == parity).all()
        found += len(want)
    assert found == tm.LAYERS * tm.H


def test_the_probe_and_the_patterns_are_the_behaviour_stages(llama: str) -> None:
    """A single head's scores before its edit are those of ``head_type_scores`` on the same
    probe; its pattern before the edit is the model's own attention on the text, after it the
    edited model's; the induction loss is the mean loss of the second copy."""
    result = intervention(
        llama, request_of("flip", heads="1.1", text=TEXT, controls=0, probe=9, seed=3)
    )
    row = result.table.iloc[0]
    scores = head_type_scores(llama, probe_length=9, seed=3).table
    before = scores[(scores["layer"] == 1) & (scores["head"] == 1)].iloc[0]
    for name in ("previous_token", "first_token", "duplicate_token", "induction"):
        assert row[f"{name}_before"] == pytest.approx(before[name], abs=2e-6)
    assert row["probe_length"] == 9 and np.isfinite(row["delta_induction_loss"])
    loaded = runnable(locate(llama))
    ids = result.meta["token_ids"]
    own = forward.run(loaded.model, ids, loaded.n_layers).weights[1, 1]
    np.testing.assert_allclose(result.patterns["before"], own, atol=1e-6)
    anatomy = anatomy_of(loaded)
    change = FormChange(1, 1, anatomy.head_logit(1, 1), EDITS["flip"])
    with applied(anatomy, [(change,)]):
        edited = forward.run(loaded.model, ids, loaded.n_layers).weights[1, 1]
    np.testing.assert_allclose(result.patterns["after"], edited, atol=1e-6)
    assert np.abs(edited - own).max() > 1e-3


def test_a_stored_result_needs_no_model(llama: str, tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store")
    request = request_of("balanced", heads="0.2", text=TEXT, controls=2)
    first = intervention(llama, request, store=store)
    LOADED.clear()
    again = intervention(llama, request, store=store)
    assert LOADED.keys() == []
    assert again.table.equals(first.table)
    np.testing.assert_array_equal(again.controls["delta_ce"], first.controls["delta_ce"])
    assert again.request == request


def test_final_soft_capping_is_the_models_and_attention_soft_capping_is_refused(
    tmp_path: Path,
) -> None:
    """A final logit cap enters the loss as transformers applies it; a model that soft-caps its
    attention logits is refused in one line (the cap would have to act on the change too)."""
    from transformers import AutoModelForCausalLM

    capped = tmp_path / "capped"
    tiny_runnable.checkpoint("gemma3_text", capped, seed=9, final_logit_softcapping=3.0)
    row = run(str(capped), "identity", heads="0.0").table.iloc[0]
    ids = runnable(locate(str(capped))).tokenizer.encode(TEXT)
    model = AutoModelForCausalLM.from_pretrained(capped, attn_implementation="eager").eval()
    with torch.no_grad():
        loss = model(input_ids=torch.tensor([ids]), labels=torch.tensor([ids])).loss
        hidden = model.model(input_ids=torch.tensor([ids])).last_hidden_state[0, :-1]
        uncapped = torch.nn.functional.cross_entropy(model.lm_head(hidden), torch.tensor(ids[1:]))
    assert row["ce_original"] == pytest.approx(float(loss), abs=CE)
    assert abs(float(uncapped) - float(loss)) > 1e-2  # the cap matters on this model
    softcapped = tmp_path / "softcapped"
    tiny_runnable.checkpoint("gemma3_text", softcapped, seed=9, attn_logit_softcapping=20.0)
    with pytest.raises(NotRunnableError, match="soft-caps its attention logits") as info:
        run(str(softcapped), "flip", heads="0.0")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("cap", [None, 4.0])
def test_vocabulary_sums_in_chunks_are_the_whole_softmaxs(cap: float | None) -> None:
    """Over a vocabulary of several chunks (a bias, a final cap): cross-entropy and KL equal
    ``log_softmax`` of the whole logits, and the unedited states give a KL of exactly 0."""
    from types import SimpleNamespace

    from headforms.interventions.measures import (
        VOCABULARY_CHUNK,
        measure_batch,
        reference_terms,
    )

    generator = torch.Generator().manual_seed(0)
    vocab, dim, length = 2 * VOCABULARY_CHUNK + 123, 16, 9
    head = torch.nn.Linear(dim, vocab).requires_grad_(False)
    with torch.no_grad():
        head.weight.copy_(torch.randn(vocab, dim, generator=generator))
        head.bias.copy_(torch.randn(vocab, generator=generator))
    model = SimpleNamespace(
        get_output_embeddings=lambda: head,
        config=SimpleNamespace(final_logit_softcapping=cap),
    )
    final = torch.randn(length, dim, generator=generator)
    edited = final[None] + 0.3 * torch.randn(2, length, dim, generator=generator)
    ids = torch.randint(0, vocab, (length,), generator=generator).tolist()
    window = np.arange(length - 1)
    with torch.no_grad():
        reference = reference_terms(model, final, ids)
        got = measure_batch(model, torch.cat([final[None], edited]), ids, final, reference, window)

        def logp(states: torch.Tensor) -> torch.Tensor:
            logits = head(states[:-1]).double()
            logits = logits if cap is None else torch.tanh(logits / cap) * cap
            return torch.log_softmax(logits, -1)

        base = logp(final)
    assert got[0].kl == 0.0
    for measured, states in zip(got, [final, *edited], strict=True):
        want = logp(states)
        ce = -want[torch.arange(length - 1), torch.tensor(ids[1:])].mean()
        kl = (base.exp() * (base - want)).sum(-1).mean()
        assert measured.ce == pytest.approx(float(ce), abs=2e-6)
        assert measured.kl == pytest.approx(float(kl), abs=2e-6)


def test_a_causal_model_without_its_heads_weights_has_no_next_token_loss(tmp_path: Path) -> None:
    """A checkpoint that names a causal language model but lacks its head's weights is run
    without a head (never one transformers initialises at random): cosine distance only."""
    from safetensors.numpy import load_file, save_file

    tiny_runnable.checkpoint("llama", tmp_path, seed=12)
    weights = tmp_path / "model.safetensors"
    tensors = load_file(weights)
    assert "lm_head.weight" in tensors
    del tensors["lm_head.weight"]
    save_file(tensors, weights, metadata={"format": "pt"})
    loaded = runnable(locate(str(tmp_path)))
    assert loaded.causal_lm is None
    row = run(str(tmp_path), "flip", heads="1.1").table.iloc[0]
    assert np.isnan(row["delta_ce"]) and row["cosine_distance"] > 0.0


def test_the_time_limit_stops_a_request_in_one_line(llama: str) -> None:
    from headforms.errors import LimitError
    from headforms.interventions import InterventionLimits

    request = request_of("flip", layer=1, each=True, text=TEXT, controls=1)
    with pytest.raises(LimitError, match="stopped after the time allowed: 0 of 8 sequence"):
        intervention(llama, request, use_cache=False, limits=InterventionLimits(max_seconds=0.0))
    with pytest.raises(LimitError, match="takes 8 sequence passes; at most 7"):
        intervention(llama, request, use_cache=False, limits=InterventionLimits(max_passes=7))
