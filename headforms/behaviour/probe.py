"""The repeated-random-token probe: R seeded ordinary tokens, twice, wrapped in the tokenizer's
own special tokens exactly as it wraps any text (BOS for Gemma, [CLS] ... [SEP] for BERT).

The R tokens are drawn without replacement (so each occurs once per copy) from the ordinary
tokens: the ids below the model's vocabulary size that are neither special nor added tokens,
with ``numpy.random.default_rng(seed)``: the same seed gives the same probe on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import OptionError
from .tokens import TextTokenizer


@dataclass(frozen=True)
class Probe:
    """Token ids of a probe; its two copies of ``length`` tokens start at ``start``."""

    token_ids: list[int]
    start: int
    length: int
    seed: int


def repeated_tokens(tokenizer: TextTokenizer, vocab_size: int, length: int, seed: int) -> Probe:
    """The probe of ``length`` (R) random ordinary tokens repeated twice (see the module doc)."""
    ordinary = np.asarray(tokenizer.ordinary_ids(vocab_size))
    if len(ordinary) < length:
        raise OptionError(
            f"the tokenizer has {len(ordinary)} ordinary tokens, fewer than the probe length "
            f"{length}"
        )
    rng = np.random.default_rng(seed)
    copy = [int(i) for i in rng.choice(ordinary, size=length, replace=False)]
    leading, trailing = tokenizer.wrapping
    return Probe([*leading, *copy, *copy, *trailing], len(leading), length, seed)
