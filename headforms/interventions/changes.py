"""What one sequence of a batch changes in the model: typed changes of one head each.

- :class:`FormChange`: the head's form replaced by an edited one (an :class:`Edit` of the
  form); adds ``scale * x_j^T (M_d - L_d) x_i / (r_q(i) r_k(j))`` to the head's scores, every
  other term (biases and their cross terms, scale, QK-norm factors, mask, position biases) as
  the model computes it.
- :class:`ControlChange`: a matched control's random form added instead (:mod:`.controls`).
- :class:`OutputChange`: the head's output (before the output projection) set to zero or to a
  given vector at every position.

A :data:`SequencePlan` is the changes of one sequence; the hooks (:mod:`.hooks`) apply a batch
of plans in one pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .algebra import balanced_delta, linear_delta, rank1_delta
from .anatomy import HeadLogit
from .controls import ControlForm, ControlSeed
from .edits import Edit


@dataclass(frozen=True)
class FormChange:
    """Head ``head`` of ``layer`` with its form edited by ``edit``."""

    layer: int
    head: int
    logit: HeadLogit
    edit: Edit

    def scores_delta(self, x: np.ndarray) -> np.ndarray:
        """What the edit adds to the head's pre-softmax scores for attention inputs ``x``."""
        factors, causal = self.logit.factors, self.logit.causal
        if self.edit.kind == "linear":
            change = linear_delta(factors, x, self.edit, causal)
        elif self.edit.name == "rank1":
            change = rank1_delta(factors, x, causal)
        else:
            change = balanced_delta(factors, x, causal)
        return change * self.logit.factor(x)


@dataclass(frozen=True)
class ControlChange:
    """Head ``head`` of ``layer`` with a matched control's random form added: drawn from
    ``seed`` when used, of norm ``norms[k]`` at each relative position ``steps[k]``."""

    layer: int
    head: int
    logit: HeadLogit
    seed: ControlSeed
    steps: np.ndarray
    norms: np.ndarray

    def form(self) -> ControlForm:
        """The control's form (its factors drawn now)."""
        return ControlForm.drawn(self.seed, self.steps, self.norms)

    def scores_delta(self, x: np.ndarray) -> np.ndarray:
        """What the control adds to the head's pre-softmax scores for attention inputs ``x``."""
        return self.form().delta(x, self.logit.causal) * self.logit.factor(x)


@dataclass(frozen=True)
class OutputChange:
    """Head ``head`` of ``layer`` with its output set to ``value`` at every position (its
    ``n`` numbers; None: zero)."""

    layer: int
    head: int
    value: np.ndarray | None = None


Change = FormChange | ControlChange | OutputChange
SequencePlan = tuple[Change, ...]
"""The changes of one sequence (one batch element)."""


def plan_layers(plan: SequencePlan) -> set[int]:
    """The layers a plan changes."""
    return {change.layer for change in plan}
