"""Interventions on the bundled models (SmolLM2: GQA and RoPE, Q4_1; Gemma-3: QK-norm, local
and global RoPE, MQA; MiniLM: a BERT encoder with biases): edited logits against dense forms
read from the files by the engine, the identity against transformers' own loss."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tiny_models as tm
import torch
from dense_edits import dense_edited_scores

from headforms.architectures import shapes_from_config
from headforms.behaviour import forward
from headforms.behaviour.runnable import runnable
from headforms.interventions import DEFAULT_TEXT, intervention, request_of
from headforms.interventions.anatomy import anatomy_of
from headforms.interventions.changes import FormChange
from headforms.interventions.edits import EDITS
from headforms.interventions.hooks import applied
from headforms.models.extract import TensorIndex, read_layer
from headforms.models.source import open_model
from headforms.sources import locate

pytestmark = pytest.mark.slow

CASES = {
    "smollm2-135m": ((4, 7), ("symmetric", "rank1", "balanced")),
    "gemma3-270m": ((5, 2), ("flip", "balanced")),  # layer 5: a global layer
    "minilm-l6": ((2, 5), ("antisymmetric", "rank1")),
}
LENGTH = 16


def attention_input(model: Any, attention: Any, ids: list[int]) -> np.ndarray:
    seen: list[np.ndarray] = []

    def capture(_: Any, args: tuple, kwargs: dict) -> None:
        states = args[0] if args else kwargs["hidden_states"]
        seen.append(states[0].detach().double().numpy().copy())

    handle = attention.register_forward_pre_hook(capture, with_kwargs=True)
    try:
        forward.run(model.model, ids, model.n_layers)
    finally:
        handle.remove()
    return seen[0]


@pytest.mark.parametrize("spec", sorted(CASES))
def test_edited_logits_of_a_bundled_head_are_the_dense_forms(spec: str) -> None:
    (layer, head), edits = CASES[spec]
    model = runnable(locate(spec))
    anatomy = anatomy_of(model)
    ids = model.tokenizer.encode(DEFAULT_TEXT)[:LENGTH]
    source = open_model(locate(spec))
    shapes = shapes_from_config(source.config)
    read = read_layer(source, shapes, TensorIndex.for_source(source), layer)
    part = anatomy.layers[layer]
    x = attention_input(model, part.attention, ids)
    eps = float(model.model.config.rms_norm_eps) if read.q_gain is not None else None
    for edit in edits:
        want = dense_edited_scores(
            tm.with_bias_column(read),
            head,
            int(shapes.kv_of_head[head]),
            x,
            edit,
            part.causal,
            part.scale,
            eps,
        )
        change = FormChange(layer, head, anatomy.head_logit(layer, head), EDITS[edit])
        with applied(anatomy, [(change,)]):
            got = forward.run(model.model, ids, model.n_layers).scores[layer, head]
        seen = ~np.isnan(want)
        assert np.array_equal(np.isnan(got), ~seen)
        scale = float(np.abs(want[seen]).max())
        np.testing.assert_allclose(got[seen], want[seen], rtol=0, atol=2e-5 * scale, err_msg=edit)


@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_the_identity_is_the_bundled_models_own_loss(spec: str) -> None:
    result = intervention(
        spec, request_of("identity", heads="1.0", controls=1, max_tokens=48), use_cache=False
    )
    row = result.table.iloc[0]
    model = runnable(locate(spec))
    ids = torch.tensor([result.meta["token_ids"]])
    with torch.no_grad():
        loss = model.causal_lm(input_ids=ids, labels=ids).loss
    # float32 both ways (Gemma's log-softmax over 262,144 tokens): a few 1e-5 relative apart
    assert row["ce_original"] == pytest.approx(float(loss), rel=5e-5)
    assert row["delta_ce"] == pytest.approx(0.0, abs=1e-6)
    assert row["kl"] == pytest.approx(0.0, abs=1e-6)


def test_minilm_has_no_next_token_loss() -> None:
    result = intervention(
        "minilm-l6", request_of("zero", heads="0.3", controls=2, max_tokens=48), use_cache=False
    )
    row = result.table.iloc[0]
    assert np.isnan(row["delta_ce"]) and row["cosine_distance"] > 0.0
    assert result.measure == "cosine_distance"
