"""What a forward pass accepts, and its defaults: the prompt caps (read through
:func:`headforms.settings.settings`, ``HEADFORMS_PROMPT_*``), the probe's sizes, the default
prompt."""

from __future__ import annotations

import math

from ..errors import OptionError
from ..settings import PROMPT_CHARACTERS_ENV, PROMPT_TOKENS_ENV, settings

DEFAULT_PROMPT = (
    "The lighthouse keeper counted seven ships before dawn and wrote their names in a blue "
    "notebook. The lighthouse keeper counted seven ships before dawn and wrote their names in "
    "a blue notebook."
)
"""The Head page's first prompt: one passage twice, so that induction heads show (the second
copy attends to the token after the first copy's)."""
DEFAULT_PROBE_LENGTH = 50
"""R: random ordinary tokens in each copy of the repeated-token probe."""
DEFAULT_SEED = 0
"""Seed of the probe's tokens."""


def check_prompt(prompt: object) -> str:
    """The prompt as given, or a one-line :class:`OptionError` (not text, empty, too long)."""
    if not isinstance(prompt, str):
        raise OptionError(f"the prompt must be text, not {type(prompt).__name__}")
    if not prompt.strip():
        raise OptionError("the prompt is empty: type some text to run the model on")
    limit = settings().prompt_characters
    if len(prompt) > limit:
        raise OptionError(
            f"the prompt is {len(prompt)} characters long; at most {limit} are accepted "
            f"({PROMPT_CHARACTERS_ENV})"
        )
    return prompt


def check_probe(probe_length: object, seed: object) -> tuple[int, int]:
    """``(R, seed)`` as whole numbers in range, or a one-line :class:`OptionError`."""
    longest = max_probe_length()
    if isinstance(probe_length, bool) or not isinstance(probe_length, int):
        raise OptionError(f"the probe length must be a whole number, not {probe_length!r}")
    if not 2 <= probe_length <= longest:
        raise OptionError(
            f"probe length {probe_length} is out of range: 2 to {longest} tokens per copy (two "
            f"copies and the tokenizer's special tokens fit in {settings().prompt_tokens} tokens, "
            f"{PROMPT_TOKENS_ENV})"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise OptionError(f"the seed must be a whole number from 0 to 2^32 - 1, not {seed!r}")
    return probe_length, seed


MAX_PATTERN_BYTES = 192 * 2**20
"""Most bytes one prompt's pattern may take (weights and pre-softmax scores of every head, T x T
each): a model with many heads takes fewer tokens (270 heads as SmolLM2's: 305; 1024: 156)."""
PATTERN_BYTES_PER_ENTRY = 8
"""A pattern's bytes per head and (query, key) pair: float32 weights and float32 scores."""

SPECIAL_TOKEN_ROOM = 8
"""Tokens kept free for a tokenizer's own special tokens around a probe."""


def token_limit(name: str, n_heads_all: int, max_positions: int | None = None) -> tuple[int, str]:
    """``(limit, reason)``: the most tokens a forward pass of the model ``name`` takes, and why:
    the token cap (``HEADFORMS_PROMPT_TOKENS``), its position table (``max_positions``, when it
    has one) or what a pattern of its ``n_heads_all`` heads may hold (:data:`MAX_PATTERN_BYTES`).
    The same rule in a worker (the loaded model) and in a server (the declared shapes)."""
    limit, reason = settings().prompt_tokens, PROMPT_TOKENS_ENV
    if max_positions is not None and max_positions < limit:
        limit, reason = max_positions, f"{name}'s position table"
    by_memory = math.isqrt(MAX_PATTERN_BYTES // (PATTERN_BYTES_PER_ENTRY * max(1, n_heads_all)))
    if by_memory < limit:
        limit = by_memory
        reason = (
            f"a pattern of {name}'s {n_heads_all} heads within {MAX_PATTERN_BYTES // 2**20} MiB"
        )
    return limit, reason


def check_token_count(
    n_tokens: int, what: str, name: str, n_heads_all: int, max_positions: int | None = None
) -> None:
    """A one-line :class:`OptionError` when ``what`` (``n_tokens`` long) is longer than
    :func:`token_limit` allows."""
    limit, reason = token_limit(name, n_heads_all, max_positions)
    if n_tokens > limit:
        raise OptionError(
            f"{what} is {n_tokens} tokens long; forward passes of {name} take at most "
            f"{limit} tokens ({reason})"
        )


def max_probe_length() -> int:
    """The longest probe copy R that fits the token cap with room for special tokens."""
    return max(2, (settings().prompt_tokens - SPECIAL_TOKEN_ROOM) // 2)
