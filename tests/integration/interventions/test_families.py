"""Every family of the architecture table runs an edit, from layer 0 and from a middle layer,
and equals a full-pass dense reference: transformers runs every layer (no prefix reused), the
edited head's scores changed inside its attention by a change built here from dense ``N x N``
forms (tests/helpers/dense_edits.py) and the engine's reading of the saved checkpoint; the final
hidden states of both agree. Also yarn RoPE scaling (exact), RoPE whose frequencies follow the
sequence's length (longrope: refused in one line), and an unknown spectral edit (an error)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tiny_models as tm
import tiny_runnable
import torch
from dense_edits import dense_edited_scores

from headforms.architectures import ARCHITECTURES, shapes_from_config
from headforms.behaviour.runnable import runnable
from headforms.errors import NotRunnableError
from headforms.interventions.anatomy import OUTPUT_PROJECTIONS, anatomy_of
from headforms.interventions.changes import FormChange, bilinear_delta
from headforms.interventions.edits import EDITS, Edit
from headforms.interventions.hooks import applied
from headforms.interventions.passes import clean_pass, run_base
from headforms.models.extract import TensorIndex, read_layer
from headforms.models.source import open_model
from headforms.sources import locate

TINY_FAMILY = {
    "gpt2": "gpt2",
    "opt": "opt",
    "bloom": "bloom",
    "gpt_neox": "gpt_neox",
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gemma3": "gemma3_text",
    "bert": "bert",
}
"""Each family of headforms.architectures and the tiny model its edits are tested on (a new
family needs its line: test_every_family_has_an_intervention_test)."""
LAYERS = 3
LENGTH = 11
EDITS_TESTED = ("symmetric", "flip", "balanced")


def layers_override(family: str) -> dict[str, Any]:
    """The config attributes that make a tiny model of :data:`LAYERS` layers."""
    name = {"bloom": "n_layer", "gpt2": "n_layer"}.get(family, "num_hidden_layers")
    found: dict[str, Any] = {name: LAYERS}
    types = getattr(tm.FAMILIES[family].config(), "layer_types", None)
    if types:
        found["layer_types"] = (list(types) * LAYERS)[:LAYERS]
    return found


class Tiny:
    """A tiny checkpoint of 3 layers, its runnable model and the engine's reading of it."""

    def __init__(self, family: str, directory: Path, seed: int, **overrides: Any):
        self.family = family
        tiny_runnable.checkpoint(
            family, directory, seed=seed, **layers_override(family), **overrides
        )
        self.model = runnable(locate(str(directory)))
        self.source = open_model(str(directory))
        self.shapes = shapes_from_config(self.source.config)
        self.index = TensorIndex.for_source(self.source)
        self.ids = np.random.default_rng(seed).integers(3, tiny_runnable.VOCAB, LENGTH).tolist()

    def attention_scaling(self) -> float:
        """The RoPE ``attention_scaling`` of the model's rotary embedding (1 without)."""
        base = self.model.model
        rotary = getattr(getattr(base, "model", base), "rotary_emb", None)
        return float(getattr(rotary, "attention_scaling", 1.0))

    def reference(self, layer: int, head: int, edit: str) -> torch.Tensor:
        """Final hidden states of a full pass, the head's scores changed densely."""
        base = self.model.model
        module = tm.FAMILIES[self.family].attention(base, layer)
        read = tm.with_bias_column(read_layer(self.source, self.shapes, self.index, layer))
        kv = int(self.shapes.kv_of_head[head])
        causal = self.family not in tiny_runnable.ENCODERS
        scale = tm.attention_scale(self.family, base, layer) * self.attention_scaling() ** 2
        eps = tm.qk_norm_eps(base) if read.q_gain is not None else None

        def hook(_: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            bound = inspect.signature(module.forward).bind(*args, **kwargs)
            x = bound.arguments["hidden_states"][0].detach().double().numpy()
            delta = dense_edited_scores(read, head, kv, x, edit, causal, scale, eps)
            delta -= dense_edited_scores(read, head, kv, x, "identity", causal, scale, eps)
            full = np.zeros((1, self.shapes.n_heads, LENGTH, LENGTH))
            full[0, head] = np.nan_to_num(delta)
            mask = bound.arguments.get("attention_mask")
            if mask is None:
                mask = torch.zeros(())
            elif mask.dtype == torch.bool:
                mask = torch.where(mask, 0.0, torch.finfo(torch.float32).min)
            bound.arguments["attention_mask"] = mask + torch.from_numpy(full).float()
            return bound.args, bound.kwargs

        handle = module.register_forward_pre_hook(hook, with_kwargs=True)
        try:
            return run_base(self.model, torch.tensor([self.ids]))[0]
        finally:
            handle.remove()

    def headforms(self, layer: int, head: int, edit: str) -> torch.Tensor:
        """Final hidden states of headforms' edited pass (the layers below reused)."""
        anatomy = anatomy_of(self.model)
        clean = clean_pass(self.model, anatomy, self.ids, np.arange(LENGTH - 1))
        change = FormChange(layer, head, anatomy.head_logit(layer, head), EDITS[edit])
        entering = clean.recorded.entering[layer]
        with applied(anatomy, [(change,)], layer, entering, (), clean.recorded.tuple_outputs):
            return run_base(self.model, torch.tensor([self.ids]))[0]


FAMILIES = ["bloom", "opt", "mistral", "qwen2", "qwen3", "llama", "gpt2", "gpt_neox", "gemma3"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Tiny]:
    root = tmp_path_factory.mktemp("tiny-families")
    return {f: Tiny(TINY_FAMILY[f], root / f, seed=60 + i) for i, f in enumerate(FAMILIES)}


@pytest.mark.parametrize("edit", EDITS_TESTED)
@pytest.mark.parametrize("family", FAMILIES)
def test_an_edit_from_layer_0_and_a_middle_layer_is_the_dense_full_pass(
    tiny: dict[str, Tiny], family: str, edit: str
) -> None:
    model = tiny[family]
    head = model.shapes.n_heads - 1
    for layer in (0, LAYERS // 2):
        got = model.headforms(layer, head, edit)
        want = model.reference(layer, head, edit)
        unedited = run_base(model.model, torch.tensor([model.ids]))[0]
        scale = float(want.abs().max())
        assert float((got - want).abs().max()) <= 2e-5 * scale, (family, layer)
        assert float((unedited - want).abs().max()) > 1e-4 * scale  # the edit changes them


def test_yarn_scaling_is_applied_exactly(tmp_path: Path) -> None:
    """yarn multiplies RoPE's cosines and sines by its attention factor: the edit's change of
    the scores carries its square, as the model's own scores do."""
    rope = {
        "rope_type": "yarn",
        "rope_theta": 1000.0,
        "factor": 4.0,
        "original_max_position_embeddings": 64,
    }
    model = Tiny("mistral", tmp_path / "yarn", seed=7, rope_parameters=rope)
    assert model.attention_scaling() > 1.05  # the factor is not 1: the test can fail
    for layer in (0, 1):
        got = model.headforms(layer, 3, "flip")
        want = model.reference(layer, 3, "flip")
        assert float((got - want).abs().max()) <= 2e-5 * float(want.abs().max())


def test_longrope_is_refused_in_one_line(tmp_path: Path) -> None:
    rope = {
        "rope_type": "longrope",
        "rope_theta": 1000.0,
        "short_factor": [1.0] * 8,
        "long_factor": [2.0] * 8,
        "original_max_position_embeddings": 64,
    }
    model = Tiny("mistral", tmp_path / "longrope", seed=7, rope_parameters=rope)
    with pytest.raises(NotRunnableError) as info:
        anatomy_of(model.model)
    assert "longrope" in str(info.value) and "\n" not in str(info.value)


def test_an_unknown_spectral_edit_is_an_error_not_a_default() -> None:
    rng = np.random.default_rng(0)
    from headforms.interventions.algebra import HeadFactors

    head = HeadFactors(rng.standard_normal((2, 6)), rng.standard_normal((2, 6)))
    with pytest.raises(ValueError, match="mystery"):
        bilinear_delta(head, rng.standard_normal((4, 6)), Edit("mystery", "spectral", "?"), True)


def test_every_family_has_an_intervention_test_and_an_output_projection() -> None:
    """The "add an architecture" checklist (docs/CONTRIBUTING.md): a family of the table without
    its tiny model here, or without its output projection, fails this test."""
    families = {arch.family for arch in ARCHITECTURES}
    assert families == set(TINY_FAMILY), families ^ set(TINY_FAMILY)
    assert families <= set(OUTPUT_PROJECTIONS), families - set(OUTPUT_PROJECTIONS)
    assert set(FAMILIES) | {"bert"} == families  # bert: tests/integration/interventions/
    for family in families:
        assert TINY_FAMILY[family] in tm.FAMILIES
