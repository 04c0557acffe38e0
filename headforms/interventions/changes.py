"""What one sequence of a batch changes in the model: typed changes of one head each.

- :class:`FormChange`: the head's form replaced by an edited one (an :class:`Edit` of the
  form); adds ``scale * x_j^T (M_d - L_d) x_i / (r_q(i) r_k(j))`` to the head's scores, every
  other term (biases and their cross terms, scale, QK-norm factors, mask, position biases) as
  the model computes it.
- :class:`ControlChange`: a matched control's random form added instead (:mod:`.controls`).
- :class:`OutputChange`: the head's output (before the output projection) set to zero or to
  given vectors (one per position, or one for every position).

Each form change records the RMS of its change of the scores over the visible pairs in its
sequence's :class:`~.controls.ScoreLedger` (a scores-matched control reads its edit's there).
A :data:`SequencePlan` is the changes of one sequence; the hooks (:mod:`.hooks`) apply a batch
of plans in one pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .algebra import HeadFactors, balanced_delta, linear_delta, rank1_delta
from .anatomy import HeadLogit
from .controls import ControlForm, ControlSeed, Match, ScoreLedger, visible_pairs
from .edits import Edit


def _rank1(factors: HeadFactors, x: np.ndarray, edit: Edit, causal: bool) -> np.ndarray:
    return rank1_delta(factors, x, causal)


def _balanced(factors: HeadFactors, x: np.ndarray, edit: Edit, causal: bool) -> np.ndarray:
    return balanced_delta(factors, x, causal)


SPECTRAL_DELTAS: dict[str, Callable[[HeadFactors, np.ndarray, Edit, bool], np.ndarray]] = {
    "rank1": _rank1,
    "balanced": _balanced,
}
"""How each spectral edit changes the bilinear part (a new spectral edit needs its line)."""


def bilinear_delta(factors: HeadFactors, x: np.ndarray, edit: Edit, causal: bool) -> np.ndarray:
    """``x_j^T (M_d - L_d) x_i`` of an edit of the form: linear ones by their coefficients,
    spectral ones by :data:`SPECTRAL_DELTAS`; anything else is an error, never a default."""
    if edit.kind == "linear":
        return linear_delta(factors, x, edit, causal)
    if edit.kind == "spectral" and edit.name in SPECTRAL_DELTAS:
        return SPECTRAL_DELTAS[edit.name](factors, x, edit, causal)
    raise ValueError(f"{edit.name} ({edit.kind}) is not an edit of the form headforms computes")


@dataclass(frozen=True)
class FormChange:
    """Head ``head`` of ``layer`` with its form edited by ``edit``; its score change recorded
    in ``ledger`` under ``(tag, layer, head)`` when a ledger is given."""

    layer: int
    head: int
    logit: HeadLogit
    edit: Edit
    ledger: ScoreLedger | None = field(default=None, compare=False)
    tag: tuple = ()

    def scores_delta(self, x: np.ndarray) -> np.ndarray:
        """What the edit adds to the head's pre-softmax scores for attention inputs ``x``."""
        causal = self.logit.causal
        delta = bilinear_delta(self.logit.factors, x, self.edit, causal) * self.logit.factor(x)
        if self.ledger is not None:
            self.ledger.record(
                (self.tag, self.layer, self.head), delta, visible_pairs(len(x), causal)
            )
        return delta


@dataclass(frozen=True)
class ControlChange:
    """Head ``head`` of ``layer`` with a matched control's random form added, drawn from
    ``seed`` when used (module doc of :mod:`.controls`): under ``Match.SCORES`` scaled so that
    its score change's RMS is the one recorded under ``(target, layer, head)`` in ``ledger``;
    otherwise of norm ``norms[k]`` at each relative position ``steps[k]``."""

    layer: int
    head: int
    logit: HeadLogit
    seed: ControlSeed
    match: Match
    ledger: ScoreLedger = field(compare=False)
    tag: tuple
    target: tuple
    steps: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    norms: np.ndarray = field(default_factory=lambda: np.zeros(1))

    def form(self) -> ControlForm:
        """The control's form (its factors drawn now; unit scale under ``Match.SCORES``)."""
        if self.match is Match.SCORES:
            return ControlForm.unit(*self.seed.factors())
        return ControlForm.drawn(self.seed, self.steps, self.norms)

    def scores_delta(self, x: np.ndarray) -> np.ndarray:
        """What the control adds to the head's pre-softmax scores for attention inputs ``x``."""
        causal = self.logit.causal
        visible = visible_pairs(len(x), causal)
        delta = self.form().delta(x, causal) * self.logit.factor(x)
        if self.match is Match.SCORES:
            want = self.ledger.rms((self.target, self.layer, self.head))
            seen = delta[visible]
            have = float(np.sqrt(np.mean(seen * seen))) if seen.size else 0.0
            delta = delta * (want / have) if have > 0.0 else np.zeros_like(delta)
        self.ledger.record((self.tag, self.layer, self.head), delta, visible)
        return delta


@dataclass(frozen=True)
class OutputChange:
    """Head ``head`` of ``layer`` with its output set to ``value``: its ``n`` numbers at every
    position, or ``T x n`` (one row per position); None: zero."""

    layer: int
    head: int
    value: np.ndarray | None = None


Change = FormChange | ControlChange | OutputChange
SequencePlan = tuple[Change, ...]
"""The changes of one sequence (one batch element)."""


def plan_layers(plan: SequencePlan) -> set[int]:
    """The layers a plan changes."""
    return {change.layer for change in plan}
