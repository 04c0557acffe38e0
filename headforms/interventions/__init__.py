"""Interventions: edit a head's form and measure what the model loses.

An edit (:mod:`.edits`) replaces a head's form ``L_d`` by ``M_d = T(L_d)`` at every relative
position d (its symmetric part, antisymmetric part, transpose, flip, best rank-one
approximation, balanced lobes, zero), keeping every other term of the logit as the model
computes it; two reference points act on the head's output instead. The edited logits are
computed from the factors (:mod:`.algebra`) and added to the model's own scores by hooks on its
eager attention (:mod:`.hooks`). Measures (:mod:`.measures`): next-token cross-entropy change
``delta_ce`` and ``kl`` on a text (default the Declaration of Independence, :mod:`.text`), the
induction loss on the repeated-token probe, the head's head-type scores before and after, and
K matched controls: random changes of the same Frobenius size at every d (:mod:`.controls`).

    from headforms.interventions import intervene, sweep, intervention, request_of

    intervene("smollm2-135m", "symmetric")                 # every head symmetric: one row
    intervene("smollm2-135m", "flip", heads="3.1", probe=True)
    sweep("smollm2-135m", "antisymmetric", controls=0)     # one row per head
    result = intervention("smollm2-135m", request_of("rank1", heads="3.1"))
    result.table, result.controls["delta_ce"], result.patterns["after"]

The computation is a pure function of a loaded model and a typed request
(:func:`compute_intervention`, :class:`InterventionRequest` with ``as_dict``/``from_dict``), so
a contained worker can run it; results are stored like attention patterns (:mod:`.run`).
"""

from __future__ import annotations

import importlib
from typing import Any

from .edits import EDITS, FORM_EDITS, Edit, edit_named
from .request import (
    DEFAULT_CONTROLS,
    DEFAULT_MAX_TOKENS,
    InterventionLimits,
    InterventionRequest,
    Scope,
    parse_heads,
)
from .text import DEFAULT_TEXT, DEFAULT_TEXT_NAME

_LAZY = {
    "intervene": "run",
    "intervention": "run",
    "request_of": "run",
    "scope_of": "run",
    "sweep": "run",
    "intervention_key": "run",
    "compute_intervention": "compute",
    "InterventionResult": "result",
}
"""Imported when first used (the command line's parser needs only the names above)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_CONTROLS",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEXT",
    "DEFAULT_TEXT_NAME",
    "EDITS",
    "FORM_EDITS",
    "Edit",
    "InterventionLimits",
    "InterventionRequest",
    "InterventionResult",
    "Scope",
    "compute_intervention",
    "edit_named",
    "intervene",
    "intervention",
    "intervention_key",
    "parse_heads",
    "request_of",
    "scope_of",
    "sweep",
]
