"""What an intervention is asked to do, as one typed, serialisable value, and its bounds.

:class:`InterventionRequest` names the edit, the scope (:class:`Scope`: heads, a layer, a
parity group, every head), whether the scope's heads are edited together (one row) or each on
its own (one row per head), the text and token count, the matched controls and their seed, and
the repeated-token probe. It travels as plain JSON (:meth:`InterventionRequest.as_dict`), so a
contained worker can run it. :class:`InterventionLimits` bounds what one request may cost
(tokens, sequence passes, seconds); it does not change results and is not part of the request.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..behaviour.limits import check_probe
from ..errors import LimitError, OptionError
from ..forms import PARITY_LABELS
from ..settings import INTERVENTION_PASSES_ENV, PROMPT_TOKENS_ENV, settings
from .controls import DEFAULT_MATCH, Match, match_named
from .edits import edit_named
from .text import DEFAULT_TEXT, check_text, text_digest

ScopeKind = Literal["heads", "layer", "parity", "all"]
SCOPE_KINDS: tuple[str, ...] = ("heads", "layer", "parity", "all")

DEFAULT_MAX_TOKENS = 128
"""T: tokens of the text a measure reads by default."""
DEFAULT_CONTROLS = 8
"""K: matched controls per edit by default."""
MAX_CONTROLS = 64
"""The most matched controls one edit may have."""

_HEAD = re.compile(r"^\s*L?(\d+)\s*[.:]\s*H?(\d+)\s*$", re.IGNORECASE)


def parse_heads(text: str) -> tuple[tuple[int, int], ...]:
    """``"3.1,4.2"`` (also ``L3.H1``) as ``((3, 1), (4, 2))``; a one-line error otherwise."""
    heads = []
    for part in str(text).split(","):
        match = _HEAD.match(part)
        if match is None:
            raise OptionError(
                f"--heads: {part.strip()!r} is not a head; write LAYER.HEAD, e.g. 3.1,4.2"
            )
        heads.append((int(match.group(1)), int(match.group(2))))
    return tuple(heads)


@dataclass(frozen=True)
class Scope:
    """Which heads an intervention edits: ``heads`` (listed ``(layer, head)``), a ``layer``'s
    heads, a ``parity`` group (I+, II, I- of the model's analysis at d = 0) or ``all``."""

    kind: ScopeKind
    heads: tuple[tuple[int, int], ...] = ()
    layer: int | None = None
    parity: str | None = None

    @property
    def label(self) -> str:
        """How the scope is written in a table's ``scope`` column."""
        if self.kind == "heads":
            return ",".join(f"L{layer}.H{head}" for layer, head in self.heads)
        if self.kind == "layer":
            return f"layer {self.layer}"
        if self.kind == "parity":
            return f"parity {self.parity}"
        return "all heads"

    def checked(self) -> Scope:
        """The scope, or a one-line :class:`OptionError` for a bad one (the model's ranges are
        checked when its heads are resolved); a request checks its scope once, when it is
        made."""
        if self.kind not in SCOPE_KINDS:
            raise OptionError(f"unknown scope {self.kind!r}; accepted: " + ", ".join(SCOPE_KINDS))
        if self.kind == "heads":
            if not self.heads:
                raise OptionError("no heads given: list them as LAYER.HEAD, e.g. 3.1,4.2")
            for pair in self.heads:
                if len(pair) != 2 or not all(_whole(v) and v >= 0 for v in pair):
                    raise OptionError(f"{pair!r} is not a head (layer, head): whole numbers >= 0")
            if len(set(self.heads)) != len(self.heads):
                raise OptionError("a head is listed twice in --heads")
            object.__setattr__(self, "heads", tuple(tuple(pair) for pair in self.heads))
        if self.kind == "layer" and not (_whole(self.layer) and self.layer >= 0):
            raise OptionError(f"layer {self.layer!r} is not a whole number >= 0")
        if self.kind == "parity" and self.parity not in PARITY_LABELS:
            raise OptionError(
                f"unknown parity {self.parity!r}; accepted: " + ", ".join(PARITY_LABELS)
            )
        return self

    def check_shape(self, n_layers: int, n_heads: int, name: str) -> None:
        """A one-line :class:`OptionError` for a listed head or layer a model of ``n_layers``
        layers of ``n_heads`` heads does not have (what a server can tell from a config)."""

        def check(what: str, value: int, count: int) -> None:
            if not 0 <= value < count:
                raise OptionError(
                    f"{what} {value} does not exist: {name} has {what}s 0 to {count - 1}"
                )

        for layer, head in self.heads:
            check("layer", layer, n_layers)
            check("head", head, n_heads)
        if self.kind == "layer" and self.layer is not None:
            check("layer", self.layer, n_layers)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "heads": [list(pair) for pair in self.heads]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scope:
        try:
            heads = tuple((int(a), int(b)) for a, b in data.get("heads", ()))
            return cls(data["kind"], heads, data.get("layer"), data.get("parity")).checked()
        except (KeyError, TypeError, ValueError) as exc:
            raise OptionError(f"not a scope: {exc}") from exc


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class InterventionRequest:
    """One intervention (module doc), checked when made. ``each``: every head of the scope
    edited on its own (one row per head), else all together (one row); ``match``: how each
    control is matched to the edit (:class:`~.controls.Match`, a name accepted); ``probe_length``:
    R of the repeated-token probe (None: no probe columns), run with the edit and its controls;
    ``seed``: of the controls, of the probe's tokens and of the bootstrap."""

    edit: str
    scope: Scope
    each: bool = False
    text: str = field(default=DEFAULT_TEXT, repr=False)
    max_tokens: int = DEFAULT_MAX_TOKENS
    controls: int = DEFAULT_CONTROLS
    seed: int = 0
    probe_length: int | None = None
    match: Match = DEFAULT_MATCH

    def __post_init__(self) -> None:
        edit_named(self.edit)
        if not isinstance(self.scope, Scope):
            raise OptionError(f"not a scope: {self.scope!r}")
        self.scope.checked()
        if not isinstance(self.each, bool):
            raise OptionError(f"each must be true or false, not {self.each!r}")
        check_text(self.text)
        cap = settings().prompt_tokens
        if not _whole(self.max_tokens) or not 2 <= self.max_tokens <= cap:
            raise OptionError(
                f"--max-tokens {self.max_tokens!r}: a measure reads 2 to {cap} tokens "
                f"({PROMPT_TOKENS_ENV})"
            )
        if not _whole(self.controls) or not 0 <= self.controls <= MAX_CONTROLS:
            raise OptionError(f"--controls {self.controls!r}: 0 to {MAX_CONTROLS} controls")
        if not _whole(self.seed) or not 0 <= self.seed < 2**32:
            raise OptionError(f"--seed {self.seed!r}: a whole number from 0 to 2^32 - 1")
        if self.probe_length is not None:
            check_probe(self.probe_length, self.seed)
        object.__setattr__(self, "match", match_named(self.match))

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON (the text included)."""
        return {**asdict(self), "scope": self.scope.as_dict(), "match": self.match.value}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InterventionRequest:
        """The request of :meth:`as_dict` (checked as any request is)."""
        try:
            fields = {**data, "scope": Scope.from_dict(data["scope"])}
            return cls(**fields)
        except (KeyError, TypeError) as exc:
            raise OptionError(f"not an intervention request: {exc}") from exc

    @property
    def controlled(self) -> int:
        """K where the edit has controls (edits of the form), else 0."""
        return self.controls if edit_named(self.edit).edits_form else 0

    def passes(self, heads: int) -> int:
        """The sequence passes the request takes when its scope holds ``heads`` heads: per row
        (one, or one per head with ``each``) the edit and its controls, on the text and, when
        asked, on the probe. What a server can count before loading anything."""
        rows = heads if self.each else 1
        return rows * (1 + self.controlled) * (1 + int(self.probe_length is not None))

    def key_options(self) -> dict[str, Any]:
        """What the request's results depend on, for a store key (the text by its digest)."""
        options = self.as_dict()
        options["text"] = text_digest(self.text)
        return options


@dataclass(frozen=True)
class InterventionLimits:
    """What one request may cost: sequence passes (each one sequence through the layers from
    its edited layer up; None: ``HEADFORMS_INTERVENTION_PASSES``, the one bound of the library,
    the command line and the server) and wall-clock seconds (None: no limit), checked before
    any pass and between batches. Tokens are bounded by the request's check
    (``HEADFORMS_PROMPT_TOKENS``)."""

    max_passes: int | None = None
    max_seconds: float | None = None

    @property
    def passes_allowed(self) -> int:
        """The bound on passes in force."""
        return settings().intervention_passes if self.max_passes is None else self.max_passes

    def check_passes(self, passes: int, what: str) -> None:
        """Refuse, before any work, a request of more passes than allowed."""
        allowed = self.passes_allowed
        if passes > allowed:
            where = f" ({INTERVENTION_PASSES_ENV})" if self.max_passes is None else ""
            raise LimitError(
                f"{what} takes {passes} sequence passes; at most {allowed} are allowed{where}: "
                "fewer heads, --controls, or no --each"
            )
