"""What a score split is asked for, as one typed, serialisable value.

:class:`WhyRequest` names the heads (a :class:`~headforms.interventions.Scope`: listed heads, a
layer, a parity group or every head), the text and how many of its tokens are read, how many
top pairs per lobe direction each head's rows list, and whether the one head of the scope is
returned in ``detail`` (its four parts on the text, its spectrum at d = 0 and each top
direction's readout on the text and through the vocabulary). It travels as plain JSON
(:meth:`WhyRequest.as_dict`), so a contained worker can run it.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import OptionError
from ..interventions.request import DEFAULT_MAX_TOKENS, Scope
from ..interventions.text import DEFAULT_TEXT, check_text
from ..settings import PROMPT_TOKENS_ENV, settings

DIRECTIONS = 8
"""The top eigen-directions of each lobe (at d = 0, by |lambda|) that are read out."""
DETAIL_PAIRS = 10
"""Top pairs per direction in a head's detail (at least; ``pairs`` may ask for more)."""
MAX_PAIRS = 100
"""The most top pairs per direction a request may ask for."""
VOCABULARY_TOP = 12
"""Tokens listed at each end (``+v_k`` and ``-v_k``) of a direction's vocabulary readout."""


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class WhyRequest:
    """One score split (module doc). ``pairs``: top pairs per lobe direction listed for every
    head (0: none); ``detail``: the scope is one head, returned in full."""

    scope: Scope = field(default_factory=lambda: Scope("all"))
    text: str = field(default=DEFAULT_TEXT, repr=False)
    max_tokens: int = DEFAULT_MAX_TOKENS
    pairs: int = 0
    detail: bool = False

    def checked(self) -> WhyRequest:
        """The request, or a one-line :class:`OptionError` for the first bad field."""
        if not isinstance(self.scope, Scope):
            raise OptionError("the scope must be a Scope")
        self.scope.checked()
        check_text(self.text)
        cap = settings().prompt_tokens
        if not _whole(self.max_tokens) or not 2 <= self.max_tokens <= cap:
            raise OptionError(
                f"--max-tokens {self.max_tokens!r}: the split reads 2 to {cap} tokens "
                f"({PROMPT_TOKENS_ENV})"
            )
        if not _whole(self.pairs) or not 0 <= self.pairs <= MAX_PAIRS:
            raise OptionError(f"--pairs {self.pairs!r}: 0 to {MAX_PAIRS} pairs per direction")
        if not isinstance(self.detail, bool):
            raise OptionError(f"detail must be true or false, not {self.detail!r}")
        if self.detail and not (self.scope.kind == "heads" and len(self.scope.heads) == 1):
            raise OptionError("a head's detail needs exactly one head (--heads LAYER.HEAD)")
        return self

    @property
    def pairs_per_direction(self) -> int:
        """Top pairs per direction computed (``pairs``, at least :data:`DETAIL_PAIRS` for a
        detail)."""
        return max(self.pairs, DETAIL_PAIRS) if self.detail else self.pairs

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON (the text included)."""
        return {**asdict(self), "scope": self.scope.as_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WhyRequest:
        """The checked request of :meth:`as_dict`."""
        try:
            fields = {**data, "scope": Scope.from_dict(data["scope"])}
            return cls(**fields).checked()
        except (KeyError, TypeError) as exc:
            raise OptionError(f"not a score-split request: {exc}") from exc

    def key_options(self) -> dict[str, Any]:
        """What the result depends on, for a store key (the text by its digest)."""
        options = self.as_dict()
        options["text"] = hashlib.sha256(self.text.encode("utf-8")).hexdigest()
        return options
