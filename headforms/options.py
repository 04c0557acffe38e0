"""The options of an analysis: one validated value, made where a request enters (the command
line, :func:`headforms.analyze`, the dashboard) and passed down unchanged.

The RoPE position, the RoPE positions of a sweep and the spectra names are checked here and
nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .columns import ALL_SPECTRA, CORE_SPECTRA, EXTRA_SPECTRA
from .errors import OptionError

MAX_ROPE_POSITION = 10**7
"""Largest |d| accepted for the RoPE relative position."""

MAX_ROPE_POSITIONS = 1024
"""Most positions of one sweep (:class:`SweepOptions`): a table of positions x heads rows (1024
positions of a 1280-head model are 1.3 M rows, about 0.3 GB of columns); a longer range takes a
step (``0:8192:8``)."""

DEFAULT_ROPE_POSITIONS = "0:128"
"""The default sweep: d = 0..128, the paper's own position slider."""


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


def parse_rope_positions(text: str | int | Iterable[int]) -> tuple[int, ...]:
    """The RoPE positions of a sweep, sorted and without repeats, from ``A:B`` (both ends
    included), ``A:B:STEP``, a comma list (``0,1,2,8,64``; items may be ranges) or integers.
    One-line errors: a range whose start is after its end, a step that is not positive, more
    than :data:`MAX_ROPE_POSITIONS` positions, a position out of range."""
    if isinstance(text, int) and not isinstance(text, bool):
        items: list[Any] = [text]
    elif isinstance(text, str):
        items = [item.strip() for item in text.split(",")]
        if not any(items):
            raise OptionError(
                "no RoPE positions given; accepted: A:B (both included), A:B:STEP or a comma list"
            )
    else:
        items = list(text)
    positions: set[int] = set()
    for item in items:
        if isinstance(item, str) and ":" in item:
            positions.update(_position_range(item))
        elif item != "":
            positions.add(check_rope_position(_whole(item)))
        if len(positions) > MAX_ROPE_POSITIONS:
            raise OptionError(_too_many(text))
    if not positions:
        raise OptionError("no RoPE positions given; accepted: A:B, A:B:STEP or a comma list")
    return tuple(sorted(positions))


def _whole(item: Any) -> Any:
    """An item of a positions list as an int when it is a whole number's text."""
    if isinstance(item, str):
        try:
            return int(item)
        except ValueError as exc:
            raise OptionError(
                f"RoPE position {item!r} is not a whole number; accepted: A:B (both included), "
                "A:B:STEP or a comma list like 0,1,8"
            ) from exc
    return item


def _too_many(text: Any) -> str:
    shown = text if isinstance(text, str) else "the list"
    return (
        f"RoPE positions {shown}: more than {MAX_ROPE_POSITIONS} positions (at most "
        f"{MAX_ROPE_POSITIONS} per sweep; take a step, e.g. 0:8192:8)"
    )


def _position_range(item: str) -> range:
    """``A:B`` or ``A:B:STEP`` (both ends included) as a range, checked."""
    parts = item.split(":")
    if len(parts) not in (2, 3) or not all(p.strip() for p in parts):
        raise OptionError(
            f"RoPE positions {item!r}: accepted A:B (both included) or A:B:STEP, e.g. 0:128:4"
        )
    start, end, *rest = (check_rope_position(_whole(p.strip())) for p in parts)
    step = rest[0] if rest else 1
    if start > end:
        raise OptionError(
            f"RoPE positions {item!r}: the range starts after it ends ({start} > {end}); "
            f"write {end}:{start}"
        )
    if step <= 0:
        raise OptionError(f"RoPE positions {item!r}: the step must be a positive whole number")
    if (end - start) // step + 1 > MAX_ROPE_POSITIONS:
        raise OptionError(_too_many(item))
    return range(start, end + 1, step)


@dataclass(frozen=True)
class SweepOptions:
    """What changes a sweep over RoPE positions: the positions (sorted, no repeats, at most
    :data:`MAX_ROPE_POSITIONS`), QK-norm folding, and whether every position's eigenvalues of S
    are kept (``spectra``; by default only the per-head rows, so memory stays bounded by
    positions x heads, not x 2n). Checked when made; hashable."""

    positions: tuple[int, ...] = field(default=())
    fold_qk_norm: bool = True
    spectra: bool = False

    def __post_init__(self) -> None:
        # only the unset default means d = 0..128: an empty text given is an error (one line)
        positions = DEFAULT_ROPE_POSITIONS if self.positions == () else self.positions
        object.__setattr__(self, "positions", parse_rope_positions(positions))
        object.__setattr__(self, "fold_qk_norm", bool(self.fold_qk_norm))
        object.__setattr__(self, "spectra", bool(self.spectra))

    def key(self) -> dict[str, Any]:
        """Everything that changes the result (part of its store key)."""
        return {
            "rope_positions": list(self.positions),
            "fold_qk_norm": self.fold_qk_norm,
            "spectra": self.spectra,
        }

    def at(self, position: int) -> AnalysisOptions:
        """The single-position analysis this sweep equals at ``position``."""
        return AnalysisOptions(position, self.fold_qk_norm)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON (a worker's request)."""
        return self.key()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepOptions:
        """The options of :meth:`as_dict` (checked again)."""
        return cls(tuple(data["rope_positions"]), data["fold_qk_norm"], data["spectra"])


DEFAULT_OPTIONS = AnalysisOptions()
"""The paper's analysis: RoPE position 0, QK-norm gains folded, the core spectra."""
