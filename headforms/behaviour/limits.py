"""What a forward pass accepts, and the defaults: prompt caps, probe sizes, the model memory budget.

Every ``HEADFORMS_*`` variable of this package is read here, once per call (a running server
follows a changed environment the way the rest of headforms does).
"""

from __future__ import annotations

import os

from ..errors import OptionError

PROMPT_CHARACTERS_ENV = "HEADFORMS_PROMPT_CHARACTERS"
PROMPT_TOKENS_ENV = "HEADFORMS_PROMPT_TOKENS"
MODELS_MEMORY_ENV = "HEADFORMS_MODELS_MEMORY"
SESSION_FORWARD_ENV = "HEADFORMS_SESSION_FORWARD_PASSES"

DEFAULT_PROMPT_CHARACTERS = 2000
"""Longest prompt, in characters (checked before it is tokenized)."""
DEFAULT_PROMPT_TOKENS = 256
"""Longest token sequence a forward pass runs on (prompts and probes, special tokens included):
a layer's attention is heads x T x T floats, and a heatmap of more tokens is unreadable."""
DEFAULT_MODELS_MEMORY = 2 * 2**30
"""Bytes of loaded models (float32 weights) kept in memory between forward passes: the three
bundled models together take 1.7 GB."""

DEFAULT_SESSION_FORWARD = 60
"""New forward passes (prompts or probes not yet computed) one hosted session may start."""

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


def _positive_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) <= 0:
        raise OptionError(f"{name}={raw!r} is not a positive whole number (configuration)")
    return int(raw)


def prompt_characters() -> int:
    """Longest prompt in characters (``HEADFORMS_PROMPT_CHARACTERS``)."""
    return _positive_int(PROMPT_CHARACTERS_ENV, DEFAULT_PROMPT_CHARACTERS)


def prompt_tokens() -> int:
    """Longest token sequence of a forward pass (``HEADFORMS_PROMPT_TOKENS``)."""
    return _positive_int(PROMPT_TOKENS_ENV, DEFAULT_PROMPT_TOKENS)


def models_memory() -> int:
    """Bytes of loaded models kept between forward passes (``HEADFORMS_MODELS_MEMORY``)."""
    return _positive_int(MODELS_MEMORY_ENV, DEFAULT_MODELS_MEMORY)


def session_forward_passes() -> int:
    """New forward passes one hosted session may start (``HEADFORMS_SESSION_FORWARD_PASSES``)."""
    return _positive_int(SESSION_FORWARD_ENV, DEFAULT_SESSION_FORWARD)


def check_prompt(prompt: object) -> str:
    """The prompt as given, or a one-line :class:`OptionError` (not text, empty, too long)."""
    if not isinstance(prompt, str):
        raise OptionError(f"the prompt must be text, not {type(prompt).__name__}")
    if not prompt.strip():
        raise OptionError("the prompt is empty: type some text to run the model on")
    limit = prompt_characters()
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
            f"copies and the tokenizer's special tokens fit in {prompt_tokens()} tokens, "
            f"{PROMPT_TOKENS_ENV})"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise OptionError(f"the seed must be a whole number from 0 to 2^32 - 1, not {seed!r}")
    return probe_length, seed


SPECIAL_TOKEN_ROOM = 8
"""Tokens kept free for a tokenizer's own special tokens around a probe."""


def max_probe_length() -> int:
    """The longest probe copy R that fits the token cap with room for special tokens."""
    return max(2, (prompt_tokens() - SPECIAL_TOKEN_ROOM) // 2)
