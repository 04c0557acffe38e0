"""The options of an analysis: one validated value, made where a request enters (the command
line, :func:`headforms.analyze`, the dashboard) and passed down unchanged.

The RoPE position and the spectra names are checked here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .columns import ALL_SPECTRA, CORE_SPECTRA, EXTRA_SPECTRA
from .errors import OptionError

MAX_ROPE_POSITION = 10**7
"""Largest |d| accepted for the RoPE relative position."""


def check_rope_position(rope_position: Any) -> int:
    """The RoPE relative position as an int within range, or a clear error."""
    try:
        value = int(rope_position)
    except (TypeError, ValueError, OverflowError) as exc:
        raise OptionError(f"rope position {rope_position!r} is not a whole number") from exc
    if value != rope_position or abs(value) > MAX_ROPE_POSITION:
        raise OptionError(
            f"rope position {rope_position!r} is out of range (a whole number, |d| <= 10^7)"
        )
    return value


def spectra_names(spectra: Iterable[str]) -> frozenset[str]:
    """The spectra to compute: the core ones plus those asked for (unknown names: an error)."""
    if isinstance(spectra, str):
        spectra = (spectra,)
    names = frozenset(spectra)
    unknown = names - set(ALL_SPECTRA)
    if unknown:
        raise OptionError(
            f"unknown spectra {sorted(unknown)}; accepted: {', '.join(EXTRA_SPECTRA)}"
        )
    return names | frozenset(CORE_SPECTRA)


@dataclass(frozen=True)
class AnalysisOptions:
    """What changes an analysis: the RoPE relative position ``d`` (query ``d`` tokens after the
    key), whether QK-norm gains are folded into the form, and the spectra kept (always the core
    ones, :data:`headforms.columns.CORE_SPECTRA`). Checked when made; hashable."""

    rope_position: int = 0
    fold_qk_norm: bool = True
    spectra: frozenset[str] = field(default=frozenset(CORE_SPECTRA))

    def __post_init__(self) -> None:
        object.__setattr__(self, "rope_position", check_rope_position(self.rope_position))
        object.__setattr__(self, "fold_qk_norm", bool(self.fold_qk_norm))
        object.__setattr__(self, "spectra", spectra_names(self.spectra))

    def key(self) -> dict[str, Any]:
        """The options that change the numbers (part of a store key; the spectra are not: an
        entry holds the spectra it was computed with)."""
        return {"rope_position": self.rope_position, "fold_qk_norm": self.fold_qk_norm}

    def with_spectra(self, spectra: Iterable[str]) -> AnalysisOptions:
        """The same options keeping ``spectra`` as well."""
        return replace(self, spectra=self.spectra | spectra_names(spectra))

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON (a worker's request)."""
        return {**self.key(), "spectra": sorted(self.spectra)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnalysisOptions:
        """The options of :meth:`as_dict` (checked again)."""
        return cls(data["rope_position"], data["fold_qk_norm"], tuple(data.get("spectra", ())))


DEFAULT_OPTIONS = AnalysisOptions()
"""The paper's analysis: RoPE position 0, QK-norm gains folded, the core spectra."""
