"""Edited heads on tiny random models of several families, against independent references:
dense ``N x N`` forms from the engine's reading of the saved checkpoint (every other term of the
logit, biases and QK-norm factors included, recomputed here), and transformers itself (the
unedited model's loss, a model with a head's query and key weights swapped, uniform attention).

Families: llama (GQA, RoPE with linear scaling, Q/K biases), gpt2 (biases, scale by inverse layer
index), gemma3 (QK-norm, MQA, local and global RoPE), qwen3 (QK-norm with biases, GQA),
gpt_neox (partial rotary), bert (bidirectional encoder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tiny_models as tm
import tiny_runnable
import torch
from dense_edits import dense_edited_scores

from headforms.architectures import shapes_from_config
from headforms.behaviour import forward
from headforms.behaviour.runnable import runnable
from headforms.interventions.anatomy import anatomy_of
from headforms.interventions.changes import FormChange
from headforms.interventions.edits import EDITS, FORM_EDITS
from headforms.interventions.hooks import applied
from headforms.models.extract import TensorIndex, read_layer
from headforms.models.source import open_model
from headforms.sources import locate

FAMILIES = ["llama", "gpt2", "gemma3_text", "qwen3", "gpt_neox", "bert"]
LENGTH = 11
RELATIVE = 2e-5
"""Edited scores are float32 sums of float32 terms: relative to the largest score of the head."""


class Tiny:
    """A tiny checkpoint, its loaded runnable model and the engine's reading of its factors."""

    def __init__(self, family: str, directory: Path, seed: int, **overrides: Any):
        self.family = family
        tiny_runnable.checkpoint(family, directory, seed=seed, **overrides)
        self.model = runnable(locate(str(directory)))
        self.source = open_model(str(directory))
        self.shapes = shapes_from_config(self.source.config)
        self.index = TensorIndex.for_source(self.source)
        rng = np.random.default_rng(seed)
        self.ids = rng.integers(3, tiny_runnable.VOCAB, LENGTH).tolist()

    def inputs(self, layer: int) -> np.ndarray:
        """The attention input x of ``layer`` in the unedited model (``T x N``), captured here."""
        module = tm.FAMILIES[self.family].attention(self.model.model, layer)
        seen: list[np.ndarray] = []

        def capture(_: Any, args: tuple, kwargs: dict) -> None:
            states = args[0] if args else kwargs["hidden_states"]
            seen.append(states[0].detach().double().numpy().copy())

        handle = module.register_forward_pre_hook(capture, with_kwargs=True)
        try:
            forward.run(self.model.model, self.ids, self.model.n_layers)
        finally:
            handle.remove()
        return seen[0]

    def expected(self, layer: int, head: int, edit: str) -> np.ndarray:
        """The edited head's scores from dense forms (tests/helpers/dense_edits.py) and the
        engine's reading of the saved checkpoint."""
        read = read_layer(self.source, self.shapes, self.index, layer)
        return dense_edited_scores(
            tm.with_bias_column(read),
            head,
            int(self.shapes.kv_of_head[head]),
            self.inputs(layer),
            edit,
            self.family not in tiny_runnable.ENCODERS,
            tm.attention_scale(self.family, self.model.model, layer),
            tm.qk_norm_eps(self.model.model) if read.q_gain is not None else None,
        )

    def edited_scores(self, layer: int, head: int, edit: str) -> np.ndarray:
        """The head's pre-softmax scores in a pass of the model with the edit applied."""
        anatomy = anatomy_of(self.model)
        change = FormChange(layer, head, anatomy.head_logit(layer, head), EDITS[edit])
        with applied(anatomy, [(change,)]):
            result = forward.run(self.model.model, self.ids, self.model.n_layers)
        assert result.scores is not None
        return result.scores[layer, head].astype(np.float64)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Tiny]:
    root = tmp_path_factory.mktemp("tiny-interventions")
    return {f: Tiny(f, root / f, seed=40 + i) for i, f in enumerate(FAMILIES)}


def close(got: np.ndarray, want: np.ndarray) -> None:
    assert np.array_equal(np.isnan(got), np.isnan(want))
    seen = ~np.isnan(want)
    scale = max(1.0, float(np.abs(want[seen]).max()))
    np.testing.assert_allclose(got[seen], want[seen], rtol=0, atol=RELATIVE * scale)


@pytest.mark.parametrize("edit", FORM_EDITS)
@pytest.mark.parametrize("family", FAMILIES)
def test_edited_scores_are_the_dense_edited_forms(tiny: dict, family: str, edit: str) -> None:
    """Each layer's last head (sharing its key head under GQA; Gemma-3's local layer 0 and
    global layer 1): every query/key pair."""
    model = tiny[family]
    head = model.shapes.n_heads - 1
    for layer in range(model.shapes.n_layers):
        close(model.edited_scores(layer, head, edit), model.expected(layer, head, edit))


@pytest.mark.parametrize("family", FAMILIES)
def test_the_reference_is_the_unedited_model(tiny: dict, family: str) -> None:
    """The reference's identity is the model's own scores (so the references above are of the
    model, not of the edit code)."""
    model = tiny[family]
    result = forward.run(model.model.model, model.ids, model.model.n_layers)
    layer, head = 1, 2
    close(result.scores[layer, head].astype(np.float64), model.expected(layer, head, "identity"))


@pytest.mark.parametrize("family", ["gemma3_text", "gpt2"])
def test_zero_attends_uniformly_over_the_visible_keys(tmp_path: Path, family: str) -> None:
    """Without Q/K biases (Gemma-3 has none; GPT-2's are zeroed here) ``M = 0`` leaves every
    logit of the head at 0: each query spreads its attention evenly over the keys it sees."""
    model = Tiny(family, tmp_path / family, seed=3)
    if family == "gpt2":
        with torch.no_grad():
            for block in model.model.model.h:
                block.attn.c_attn.bias[: 2 * tm.N] = 0.0
    anatomy = anatomy_of(model.model)
    layer, head = 1, 0
    change = FormChange(layer, head, anatomy.head_logit(layer, head), EDITS["zero"])
    with applied(anatomy, [(change,)]):
        weights = forward.run(model.model.model, model.ids, model.model.n_layers).weights
    uniform = np.tril(np.ones((LENGTH, LENGTH))) / np.arange(1, LENGTH + 1)[:, None]
    np.testing.assert_allclose(weights[layer, head], uniform, atol=1e-6, rtol=0)
    assert np.abs(weights[layer, head + 1] - uniform).max() > 0.05  # other heads untouched
