"""What a head does: attention patterns on a prompt and head-type scores, from forward passes.

The forward pass is transformers' own (eager attention, ``output_attentions=True``) on a
runnable model built once per process (:mod:`.runnable`; GGUF files through :mod:`.gguf`).

    from headforms.behaviour import attention, head_type_scores

    pattern = attention("smollm2-135m", "The cat sat. The cat sat.")
    pattern.tokens                  # each token's text, special tokens included
    pattern.weights                 # (layers, heads, T, T) float32, rows = query positions
    pattern.head(3, 5)              # one head; pattern.head(3, 5, "scores"): pre-softmax
    scores = head_type_scores("smollm2-135m")          # the seeded repeated-token probe
    scores.table                    # layer, head, previous_token, first_token,
                                    # duplicate_token, induction (a pandas DataFrame)

Definitions of the scores: :mod:`.scores` and docs/MATH.md. Results are cached like analyses.
"""

from __future__ import annotations

import importlib
from typing import Any

from .limits import DEFAULT_PROBE_LENGTH, DEFAULT_PROMPT, DEFAULT_SEED

_LAZY = {
    "attention": "run",
    "head_type_scores": "run",
    "locate_runnable": "run",
    "AttentionPattern": "outputs",
    "HeadTypeScores": "outputs",
    "SCORE_COLUMNS": "scores",
}
"""Imported from their modules when first used: the command line builds its parser from the
defaults above without importing the forward pass's modules (16 ms of every command's start)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_PROBE_LENGTH",
    "DEFAULT_PROMPT",
    "DEFAULT_SEED",
    "SCORE_COLUMNS",
    "AttentionPattern",
    "HeadTypeScores",
    "attention",
    "head_type_scores",
    "locate_runnable",
]
