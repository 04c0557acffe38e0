"""The score split on tiny random models of every family, against independent references:

- transformers' own eager pre-softmax scores, captured here by a tap on the softmax the
  attention applies (not the library's pass): the four parts sum to them to 1e-5 of the
  largest score, float32;
- dense ``N x N`` forms from the engine's reading of the saved checkpoint and the attention input
  captured here by a hook: each lobe is ``x_j^T S_d^{+/-} x_i`` of a dense eigendecomposition of
  ``S_d`` at the pair's own d (times the scale and the QK-norm factors);
- the direct path through the embeddings: at layer 0 each token's attention input as the only
  token of a sequence, at layer 1 the layer's own norm of its embedding.

Families: gpt2 (biases), opt, bloom (ALiBi), gpt_neox (partial rotary), llama (GQA, linear RoPE
scaling, biases), mistral, qwen2, qwen3 (QK-norm with biases), gemma3 (QK-norm, MQA, local and
global RoPE), bert and roberta (bidirectional encoders)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tiny_models as tm
import tiny_runnable
import torch
from dense_edits import dense_form

from headforms.architectures import shapes_from_config
from headforms.behaviour.runnable import runnable
from headforms.heads import effective_factors
from headforms.models.extract import TensorIndex, read_layer
from headforms.models.source import open_model
from headforms.sources import locate
from headforms.why.capture import direct_inputs
from headforms.why.compute import compute_why
from headforms.why.run import request_of

FAMILIES = [
    "gpt2",
    "opt",
    "bloom",
    "gpt_neox",
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "gemma3_text",
    "bert",
    "roberta",
]
TEXT = tiny_runnable.words([5, 9, 17, 33, 9, 17, 60, 5, 101, 9, 17, 70, 12])
RELATIVE = 1e-5


@contextlib.contextmanager
def softmax_inputs() -> Iterator[list[np.ndarray]]:
    """The inputs of every 4-D softmax transformers' eager attention computes inside the block."""
    import torch.nn.functional as functional

    original = functional.softmax
    seen: list[np.ndarray] = []

    def tap(values: Any, *args: Any, **kwargs: Any) -> Any:
        if values.dim() == 4:
            seen.append(values[0].detach().double().numpy().copy())
        return original(values, *args, **kwargs)

    functional.softmax = tap
    try:
        yield seen
    finally:
        functional.softmax = original


class Tiny:
    """A tiny checkpoint, its loaded model, its scores and attention inputs on the text."""

    def __init__(self, family: str, directory: Path, seed: int, tokenizer: Any = None):
        self.family = family
        tiny_runnable.checkpoint(family, directory, seed=seed)
        self.model = runnable(locate(str(directory)))
        if tokenizer is not None:  # the tiny qwen2's saved tokenizer makes no words
            self.model = dataclasses.replace(self.model, tokenizer=tokenizer)
        self.source = open_model(str(directory))
        self.shapes = shapes_from_config(self.source.config)
        self.ids = self.model.tokenizer.encode(TEXT)
        self.scores, self.inputs = self._pass()

    def _pass(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """transformers' own scores (masked: -inf or the lowest float) and attention inputs."""
        base = self.model.model
        inputs: list[np.ndarray] = []
        handles = []
        for layer in range(self.shapes.n_layers):
            module = tm.FAMILIES[self.family].attention(base, layer)

            def capture(_: Any, args: tuple, kwargs: dict) -> None:
                states = args[0] if args else kwargs["hidden_states"]
                inputs.append(states[0].detach().double().numpy().copy())

            handles.append(module.register_forward_pre_hook(capture, with_kwargs=True))
        ids = torch.tensor([self.ids])
        try:
            with torch.inference_mode(), softmax_inputs() as scores:
                base(input_ids=ids, attention_mask=torch.ones_like(ids))
        finally:
            for handle in handles:
                handle.remove()
        return scores, inputs

    def expected_lobes(self, layer: int, head: int) -> np.ndarray:
        """``(2, T, T)``: the positive and negative lobe of the head's scores from dense forms
        (NaN where the model's scores are masked)."""
        read = read_layer(self.source, self.shapes, TensorIndex.for_source(self.source), layer)
        augmented = tm.with_bias_column(read)
        kv = int(self.shapes.kv_of_head[head])
        q, k = effective_factors(read, 0)
        q, k = q[head], k[kv]
        x = self.inputs[layer]
        length = len(x)
        xa = np.concatenate([x, np.ones((length, 1))], axis=1)
        rq = rk = np.ones(length)
        if read.q_gain is not None:
            eps = tm.qk_norm_eps(self.model.model)
            rq = np.sqrt(np.mean((xa @ np.asarray(augmented.q[head], float).T) ** 2, -1) + eps)
            rk = np.sqrt(np.mean((xa @ np.asarray(augmented.k[kv], float).T) ** 2, -1) + eps)
        scale = tm.attention_scale(self.family, self.model.model, layer)
        seen = self.scores[layer][head] > -1e30
        out = np.full((2, length, length), np.nan)
        for d in sorted({i - j for i, j in zip(*np.nonzero(seen), strict=True)}):
            form = dense_form(q, k, read.inv_freq, d if read.inv_freq is not None else 0)
            values, vectors = np.linalg.eigh((form + form.T) / 2.0)
            lobes = [(vectors * np.clip(values, 0, None)) @ vectors.T]
            lobes.append((vectors * np.clip(values, None, 0)) @ vectors.T)
            for i in range(max(d, 0), length + min(d, 0)):
                j = i - d
                if seen[i, j]:
                    for index, lobe in enumerate(lobes):
                        out[index, i, j] = scale * (x[j] @ lobe @ x[i]) / (rq[i] * rk[j])
        return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Tiny]:
    root = tmp_path_factory.mktemp("tiny-why")
    found: dict[str, Tiny] = {}
    for index, family in enumerate(FAMILIES):
        words = found["llama"].model.tokenizer if family == "qwen2" else None
        found[family] = Tiny(family, root / family, seed=60 + index, tokenizer=words)
    return found


def close(got: np.ndarray, want: np.ndarray, seen: np.ndarray) -> None:
    assert np.array_equal(np.isfinite(got), seen)
    scale = float(np.abs(want[seen]).max())
    np.testing.assert_allclose(got[seen], want[seen], rtol=0, atol=RELATIVE * scale)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_parts_sum_to_transformers_scores(tiny: dict[str, Tiny], family: str) -> None:
    """Every head: the library's own measure of the gap (``split_error``); the last head of each
    layer in full, against the scores tapped here."""
    model = tiny[family]
    every = compute_why(model.model, request_of(text=TEXT))
    assert len(every.table) == model.shapes.n_layers * model.shapes.n_heads
    assert every.table["split_error"].max() < RELATIVE
    head = model.shapes.n_heads - 1
    for layer in range(model.shapes.n_layers):
        request = request_of(heads=[(layer, head)], text=TEXT, detail=True)
        result = compute_why(model.model, request)
        assert result.meta["token_ids"] == model.ids
        detail = result.detail
        assert detail is not None and (detail.layer, detail.head) == (layer, head)
        want = model.scores[layer][head]
        seen = want > -1e30
        close(detail.parts.astype(np.float64).sum(0), want, seen)
        close(detail.scores.astype(np.float64), want, seen)
        row = result.table.iloc[0]
        assert sum(row[c] for c in ("share_pos", "share_neg", "share_anti")) == pytest.approx(1)


@pytest.mark.parametrize("family", ["llama", "gpt_neox", "gemma3_text", "qwen3", "gpt2", "bert"])
def test_the_lobes_are_dense_eigendecompositions(tiny: dict[str, Tiny], family: str) -> None:
    model = tiny[family]
    head = model.shapes.n_heads - 1
    for layer in range(model.shapes.n_layers):
        result = compute_why(model.model, request_of(heads=[(layer, head)], text=TEXT, detail=True))
        want = model.expected_lobes(layer, head)
        seen = np.isfinite(want[0])
        for index in range(2):
            close(result.detail.parts[index].astype(np.float64), want[index], seen)


def test_rest_is_alibi_and_the_bias_terms(tiny: dict[str, Tiny]) -> None:
    """BLOOM's rest holds its ALiBi (transformers' own ``build_alibi_tensor``) beside the bias
    terms; a model without biases or position bias (mistral) has no rest."""
    bloom = tiny["bloom"]
    result = compute_why(bloom.model, request_of(heads="1.1", text=TEXT, detail=True))
    alibi = tm.alibi(bloom.model.model, len(bloom.ids))[1]
    rest = result.detail.parts[3].astype(np.float64)
    seen = np.isfinite(rest)
    # the bias terms alone: the model's scores minus the form's parts minus ALiBi
    form = result.detail.parts[:3].astype(np.float64).sum(0)
    bias_terms = bloom.scores[1][1] - form - alibi[None, :]
    np.testing.assert_allclose(rest[seen], (alibi[None, :] + bias_terms)[seen], atol=1e-5)
    assert np.abs(alibi).max() > 0.1
    mistral = tiny["mistral"]
    rows = compute_why(mistral.model, request_of(text=TEXT)).table
    assert (rows["rest_share"] == 0).all()


def test_the_vocabulary_path_is_the_tokens_own_attention_input(tiny: dict[str, Tiny]) -> None:
    """Layer 0: a token's attention input as the only token of a sequence; layer 1: layer 1's
    input norm of the token's embedding (llama: ``input_layernorm(embed_tokens(t))``)."""
    model = tiny["llama"]
    base = model.model.model
    ids = [3, 17, 40]
    from headforms.interventions.anatomy import anatomy_of

    anatomy = anatomy_of(model.model)
    at_zero = direct_inputs(model.model, anatomy, 0, ids)
    for row, token in enumerate(ids):
        single = Tiny.__new__(Tiny)
        single.family, single.model, single.shapes, single.ids = (
            "llama",
            model.model,
            model.shapes,
            [token],
        )
        _, inputs = single._pass()
        np.testing.assert_allclose(at_zero[row], inputs[0][0], rtol=1e-5, atol=1e-6)
    at_one = direct_inputs(model.model, anatomy, 1, ids)
    with torch.inference_mode():
        embedded = base.embed_tokens(torch.tensor(ids))
        want = base.layers[1].input_layernorm(embedded).double().numpy()
    np.testing.assert_allclose(at_one, want, rtol=1e-5, atol=1e-6)


def test_a_detail_reads_its_directions_out(tiny: dict[str, Tiny]) -> None:
    model = tiny["gemma3_text"]
    result = compute_why(model.model, request_of(heads="1.0", text=TEXT, detail=True, pairs=3))
    detail = result.detail
    assert detail is not None and detail.vocabulary_path.startswith("direct path")
    vocabulary = result.vocabulary_table
    assert set(vocabulary["lobe"]) == {"positive", "negative"}
    assert set(vocabulary["end"]) == {"+", "-"}
    pairs = result.pair_table
    assert (pairs["place"].max(), pairs["rank"].max()) == (10, 8)  # a detail lists ten
    ranked = pairs[pairs["place"] == 1]
    assert (ranked["query_position"] >= ranked["key_position"]).all()  # causal
    spectrum = detail.spectrum
    assert np.all(np.diff(spectrum) <= 0) and len(spectrum) == 2 * model.shapes.head_dim
