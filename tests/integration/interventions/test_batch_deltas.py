"""The hooks' route (headforms/interventions/batch_deltas.py: every change of a layer computed
together in torch) equals the reference, each change's own ``scores_delta`` (numpy, one change
and one sequence at a time), for every edit of the form and every match of the controls, on
tiny models of the families whose logits differ: GQA with RoPE and Q/K biases (llama), QK-norm
with MQA (gemma3), QK-norm with biases (qwen3), partial rotary (gpt_neox), no RoPE (gpt2) and a
bidirectional encoder (bert). The ledgers (what a scores-matched control reads and every row
reports) agree too, and a batch split in two computes what one batch does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tiny_runnable
import torch

from headforms.behaviour.runnable import runnable
from headforms.interventions.algebra import change_norms, change_rank, distances
from headforms.interventions.anatomy import Anatomy, anatomy_of
from headforms.interventions.batch_deltas import layer_scores_delta
from headforms.interventions.changes import ControlChange, FormChange, SequencePlan
from headforms.interventions.controls import ControlSeed, Match, ScoreLedger
from headforms.interventions.edits import EDITS, FORM_EDITS
from headforms.sources import locate

FAMILIES = ["llama", "gemma3_text", "qwen3", "gpt_neox", "gpt2", "bert"]
LENGTH = 9
CONTROLS = 2
RELATIVE = 1e-10
"""Both routes are float64: they differ only in the order of their sums."""


@pytest.fixture(scope="module")
def anatomies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Anatomy]:
    root = tmp_path_factory.mktemp("tiny-batch-deltas")
    found = {}
    for index, family in enumerate(FAMILIES):
        tiny_runnable.checkpoint(family, root / family, seed=80 + index)
        found[family] = anatomy_of(runnable(locate(str(root / family))))
    return found


def plans(
    anatomy: Anatomy, layer: int, edit: str, match: Match, ledger: ScoreLedger
) -> list[SequencePlan]:
    """Sequence 0 edits every head of ``layer``; then :data:`CONTROLS` sequences of controls of
    every head, as the library builds them (``compute._Plans``)."""
    heads = range(anatomy.shapes.n_heads)
    found: list[SequencePlan] = [
        tuple(
            FormChange(layer, h, anatomy.head_logit(layer, h), EDITS[edit], ledger, ("edit", 0))
            for h in heads
        )
    ]
    for k in range(1, CONTROLS + 1):
        changes = []
        for h in heads:
            logit = anatomy.head_logit(layer, h)
            span = anatomy.span(layer, h)
            rank = change_rank(logit.factors, EDITS[edit], span)
            steps, norms = np.zeros(1, np.int64), np.zeros(1)
            if match is not Match.SCORES:
                steps = distances(LENGTH, logit.causal, logit.factors.rotary)
                norms = change_norms(logit.factors, EDITS[edit], steps)
            basis = None if match is Match.FROBENIUS else span.w
            seed = ControlSeed(5, layer, h, k, rank, anatomy.shapes.model_dim, basis)
            changes.append(
                ControlChange(
                    layer, h, logit, seed, match, ledger, ("control", 0, k), ("edit", 0), steps,
                    norms,
                )
            )  # fmt: skip
        found.append(tuple(changes))
    return found


def reference(plans: list[SequencePlan], x: np.ndarray, n_heads: int) -> np.ndarray:
    """Each change's own numpy ``scores_delta``, sequence by sequence (the edit first)."""
    delta = np.zeros((len(plans), n_heads, LENGTH, LENGTH))
    for b, plan in enumerate(plans):
        for change in plan:
            delta[b, change.head] += change.scores_delta(x[b])
    return delta


def inputs(anatomy: Anatomy, count: int) -> np.ndarray:
    rng = np.random.default_rng(3)
    return rng.standard_normal((count, LENGTH, anatomy.shapes.model_dim)).astype(np.float32)


@pytest.mark.parametrize("match", list(Match))
@pytest.mark.parametrize("edit", FORM_EDITS)
@pytest.mark.parametrize("family", FAMILIES)
def test_the_hooks_route_is_each_changes_own_delta(
    anatomies: dict[str, Anatomy], family: str, edit: str, match: Match
) -> None:
    anatomy = anatomies[family]
    layer = anatomy.shapes.n_layers - 1
    x = inputs(anatomy, 1 + CONTROLS)
    ledger, expected_ledger = ScoreLedger(), ScoreLedger()
    got = layer_scores_delta(
        anatomy, layer, torch.from_numpy(x), plans(anatomy, layer, edit, match, ledger)
    )
    want = reference(
        plans(anatomy, layer, edit, match, expected_ledger),
        x.astype(np.float64),
        anatomy.shapes.n_heads,
    )
    scale = max(float(np.abs(want).max()), 1e-30)
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=RELATIVE * scale)
    keys = [("edit", 0)] + [("control", 0, k) for k in range(1, CONTROLS + 1)]
    for key in keys:
        for head in range(anatomy.shapes.n_heads):
            assert ledger.rms((key, layer, head)) == pytest.approx(
                expected_ledger.rms((key, layer, head)), rel=RELATIVE, abs=1e-300
            )
    if edit != "identity":
        assert np.abs(want[1:]).max() > 0  # the controls did change the scores


def test_a_batch_split_in_two_is_one_batch(anatomies: dict[str, Anatomy]) -> None:
    """The edit in one batch, its controls in the next (the ledger carries the edit's RMS)."""
    anatomy = anatomies["llama"]
    layer = 1
    x = torch.from_numpy(inputs(anatomy, 1 + CONTROLS))
    whole = plans(anatomy, layer, "flip", Match.SCORES, ScoreLedger())
    together = layer_scores_delta(anatomy, layer, x, whole)
    split = plans(anatomy, layer, "flip", Match.SCORES, ScoreLedger())
    first = layer_scores_delta(anatomy, layer, x[:1], split[:1])
    rest = layer_scores_delta(anatomy, layer, x[1:], split[1:])
    np.testing.assert_allclose(torch.cat([first, rest]).numpy(), together.numpy(), rtol=1e-12)


def test_changes_of_other_layers_add_nothing(anatomies: dict[str, Anatomy]) -> None:
    anatomy = anatomies["gpt2"]
    x = torch.from_numpy(inputs(anatomy, 1 + CONTROLS))
    found = layer_scores_delta(
        anatomy, 0, x, plans(anatomy, 1, "flip", Match.SCORES, ScoreLedger())
    )
    assert found.shape == (1 + CONTROLS, anatomy.shapes.n_heads, LENGTH, LENGTH)
    assert not found.any()


def test_a_head_of_a_bundled_model_is_its_reference(tmp_path: Path) -> None:
    """Not tiny: SmolLM2's shapes (GQA, RoPE, N = 576, 2n = 128)."""
    anatomy = anatomy_of(runnable(locate("smollm2-135m")))
    layer = 7
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1 + CONTROLS, LENGTH, anatomy.shapes.model_dim)).astype(np.float32)
    ledger, expected_ledger = ScoreLedger(), ScoreLedger()
    got = layer_scores_delta(
        anatomy,
        layer,
        torch.from_numpy(x),
        plans(anatomy, layer, "symmetric", Match.SCORES, ledger),
    )
    want = reference(
        plans(anatomy, layer, "symmetric", Match.SCORES, expected_ledger),
        x.astype(np.float64),
        anatomy.shapes.n_heads,
    )
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=RELATIVE * np.abs(want).max())
