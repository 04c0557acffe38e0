"""What a URL parameter may hold (:mod:`ui.links`): how a link's value of each kind is read,
as strictly as its widget holds it (a value no widget could hold is :class:`Refused`, with what
is accepted and what is shown instead), and written back.

A :class:`StateLink` is one parameter holding one session-state value; the functions below make
the kinds the dashboard uses (:func:`choice`, :func:`flag`, :func:`whole`, :func:`number`,
:func:`spec`, :func:`specs`, :func:`subset`, :func:`wholes`, :func:`whole_range`,
:func:`camera`). Other parameters subclass :class:`Link` (the table's range filters and sort,
:mod:`ui.tables`).
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from headforms.errors import ModelSpecError

from . import guard, notices

SHOWN_CHARACTERS = 40
"""Characters of a link's value echoed in a notice."""
SEPARATOR = "~"
"""Between the parts of one value (``camera=1.3~0.9~0.6~...``): a character URLs leave as it
is (a comma or a colon would be written %2C, %3A). Lists of options are repeated parameters
(``parity=II&parity=I-``). Reading, a comma separates as well (a link typed by hand)."""
PARTS = re.compile(r"[~,]")


def parts(values: Iterable[str]) -> list[str]:
    """The non-empty parts of a link's values, split at :data:`SEPARATOR` (or a comma)."""
    return [part.strip() for value in values for part in PARTS.split(value) if part.strip()]


DEFAULT: Any = object()
"""What a refused link value is replaced by unless it says otherwise: the link's default."""


class Refused(Exception):
    """A link's value no widget could hold. ``problem`` completes "The link's name=value ...";
    ``replacement`` is what is shown instead (e.g. a number brought into range; by default the
    link's default)."""

    def __init__(self, problem: str, replacement: Any = DEFAULT):
        super().__init__(problem)
        self.problem = problem
        self.replacement = replacement


def correction(name: str, values: Sequence[str], problem: str, showing: str, about: Any) -> None:
    """The one-line notice of a corrected link value: ``The link's name=values problem: showing
    ...``; ``about``: ``(session key, value shown)`` (the notice goes when that changes)."""
    notices.add(f"The link's {name}={shown(values)} {problem}: showing {showing}.", about=about)


def shown(values: Sequence[str]) -> str:
    """A link's values as echoed in a notice: joined by commas, at most
    :data:`SHOWN_CHARACTERS` characters."""
    text = ",".join(values)
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 1] + "…"


class Link(ABC):
    """One URL parameter bound to session state (subclasses: how it is read and written)."""

    name: str

    @abstractmethod
    def keys(self) -> tuple[str, ...]:
        """The session keys this parameter fills (kept across pages)."""

    @abstractmethod
    def restore(self, values: list[str]) -> None:
        """Put the link's ``values`` into the state (a refused value: a notice and a fallback)."""

    @abstractmethod
    def ensure(self) -> None:
        """Fill the state with the default where it holds nothing yet."""

    @abstractmethod
    def values(self) -> list[str] | None:
        """The parameter's values for the state now; None: at its default (not written)."""


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


@dataclass
class StateLink(Link):
    """A parameter holding one session-state value: ``read(values) -> value`` (raises
    :class:`Refused`), ``write(value) -> values``, ``show(value)``: how a notice names it."""

    name: str
    key: str
    default: Any
    read: Callable[[list[str]], Any]
    write: Callable[[Any], list[str]]
    show: Callable[[Any], str]
    always: bool = False
    """Written even at its default (model, layer, head: what a link is about)."""
    normal: Callable[[Any], Any] | None = None
    """The value in its one written form (a subset in the options' order), if it has several."""

    def keys(self) -> tuple[str, ...]:
        return (self.key,)

    def accepted(self, values: list[str]) -> Any:
        """The value the link's ``values`` stand for; a refused one: a notice, and what is shown
        instead."""
        try:
            return self.read(values)
        except Refused as refused:
            value = self.default if refused.replacement is DEFAULT else refused.replacement
            correction(
                self.name, values, refused.problem, self.show(value), (self.key, _copy(value))
            )
            return value

    def restore(self, values: list[str]) -> None:
        st.session_state[self.key] = _copy(self.accepted(values))

    def ensure(self) -> None:
        if self.key not in st.session_state:
            st.session_state[self.key] = _copy(self.default)

    def written(self, value: Any) -> list[str] | None:
        """``value`` as the parameter's values; None: at its default (not written)."""
        if self.normal is not None:
            value = self.normal(value)
        if not self.always and value == self.default:
            return None
        return self.write(value)

    def values(self) -> list[str] | None:
        return self.written(st.session_state.get(self.key, self.default))


# ---------------------------------------------------------------------------------------------
# Parameters of one value


def _single(read: Callable[[str], Any]) -> Callable[[list[str]], Any]:
    """A reader of a one-value parameter; given several times, the last counts (with a note)."""

    def reader(values: list[str]) -> Any:
        value = read(values[-1].strip())
        if len(values) > 1:
            raise Refused(f"is given {len(values)} times (once is accepted)", value)
        return value

    return reader


def choice(
    name: str,
    key: str,
    options: Sequence[Any],
    default: Any,
    what: str,
    label: Callable[[Any], str] = str,
    names: Callable[[Any], str] = str,
) -> StateLink:
    """One of ``options``, written as ``names(option)``; ``what`` names the option in a notice
    (``"a colouring"``), ``label`` shows a value."""
    by_name = {names(option): option for option in options}

    def read(text: str) -> Any:
        if text in by_name:
            return by_name[text]
        raise Refused(f"is not {what} ({', '.join(by_name)})")

    return StateLink(name, key, default, _single(read), lambda v: [names(v)], label)


FLAG_WORDS = {"1": True, "true": True, "on": True, "yes": True}
FLAG_WORDS |= {"0": False, "false": False, "off": False, "no": False}


def flag(name: str, key: str, default: bool, what: str) -> StateLink:
    """On or off: ``1``/``0`` (also ``true``/``false``, ``on``/``off``, ``yes``/``no``)."""

    def read(text: str) -> bool:
        if text.lower() in FLAG_WORDS:
            return FLAG_WORDS[text.lower()]
        raise Refused(f"is not 1 or 0 ({what} on or off)")

    return StateLink(
        name,
        key,
        default,
        _single(read),
        lambda v: ["1" if v else "0"],
        lambda v: f"{what} {'on' if v else 'off'}",
    )


def whole(
    name: str,
    key: str,
    low: int,
    high: int,
    default: int,
    what: str,
    label: str | None = None,
    always: bool = False,
) -> StateLink:
    """A whole number in ``[low, high]``; one out of range is brought into it (with a note).
    ``what`` names it in a notice (``"a head of smollm2-135m"``), ``label`` shows a value."""
    accepted = f"is not {what} (a whole number from {low} to {high})"

    def read(text: str) -> int:
        number = guard.whole_number(text, -(10**19), 10**19)
        if number is None:
            raise Refused(accepted)
        if not low <= number <= high:
            raise Refused(accepted, min(max(number, low), high))
        return number

    return StateLink(
        name,
        key,
        default,
        _single(read),
        lambda v: [str(int(v))],
        lambda v: f"{label or name} {v}",
        always,
    )


def number(
    name: str, key: str, low: float, high: float, default: float, what: str, label: str
) -> StateLink:
    """A finite number in ``[low, high]``; one out of range is brought into it (with a note)."""
    accepted = f"is not {what} (a number from {low:g} to {high:g})"

    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise Refused(accepted) from None
        if not math.isfinite(value):
            raise Refused(accepted)
        if not low <= value <= high:
            raise Refused(accepted, min(max(value, low), high))
        return value

    return StateLink(
        name,
        key,
        default,
        _single(read),
        lambda v: [f"{float(v):.10g}"],
        lambda v: f"{label} {v:g}",
    )


def spec(name: str, key: str, default: str, always: bool = True) -> StateLink:
    """A model spec (checked as the model picker checks a typed one)."""

    def read(text: str) -> str:
        try:
            return guard.checked_spec(text)
        except ModelSpecError as error:
            raise Refused(f"is not a model spec ({error})") from None

    return StateLink(name, key, default, _single(read), lambda v: [str(v)], str, always)


# ---------------------------------------------------------------------------------------------
# Parameters of several values


def specs(name: str, key: str, default: Sequence[str] = (), label: str = "models") -> StateLink:
    """Model specs, one value each (``overlay=gpt2&overlay=./ckpt``), at most
    :data:`ui.guard.MAX_EXTRA_MODELS`; an empty list when the default is not is ``name=``."""
    default_list = list(default)

    def read(values: list[str]) -> list[str]:
        out: list[str] = []
        problems: list[str] = []
        for text in values:
            if not text.strip():
                continue
            try:
                checked = guard.checked_spec(text)
            except ModelSpecError as error:
                problems.append(str(error))
                continue
            if checked not in out:
                out.append(checked)
        if len(out) > guard.MAX_EXTRA_MODELS:
            problems.append(f"{len(out)} models, at most {guard.MAX_EXTRA_MODELS}")
            out = out[: guard.MAX_EXTRA_MODELS]
        if problems:
            raise Refused(f"has values that are not accepted ({'; '.join(problems)})", out)
        return out

    def write(value: list[str]) -> list[str]:
        return list(value) or [""]

    def show(value: list[str]) -> str:
        return f"{label} {', '.join(value)}" if value else f"no {label}"

    return StateLink(name, key, default_list, read, write, show)


def subset(
    name: str, key: str, options: Sequence[str], default: Sequence[str], what: str
) -> StateLink:
    """Some of ``options``, one value each (``parity=II&parity=I-``)."""
    default_list = list(default)

    def read(values: list[str]) -> list[str]:
        chosen = parts(values)
        known = [item for item in options if item in chosen]
        if len(known) < len(chosen):
            unknown = [item for item in chosen if item not in options]
            raise Refused(
                f"names {', '.join(unknown)}, not {what} here ({', '.join(options)})",
                known or default_list,
            )
        return known

    return StateLink(
        name,
        key,
        default_list,
        read,
        list,
        lambda v: f"{name} {', '.join(v)}",
        normal=lambda v: [item for item in options if item in v],
    )


def wholes(
    name: str, key: str, low: int, high: int, limit: int, default: Sequence[int], what: str
) -> StateLink:
    """At most ``limit`` distinct whole numbers in ``[low, high]``, one value each, increasing
    (``n=16&n=256``)."""
    default_list = sorted(default)
    accepted = f"has values that are not {what} (at most {limit}, each from {low} to {high})"

    def read(values: list[str]) -> list[int]:
        items = parts(values)
        numbers = [guard.whole_number(item, low, high) for item in items]
        kept = sorted(dict.fromkeys(n for n in numbers if n is not None))[:limit]
        if len(kept) < len(items):
            raise Refused(accepted, kept or default_list)
        return kept

    return StateLink(
        name,
        key,
        default_list,
        read,
        lambda v: [str(int(n)) for n in v],
        lambda v: f"{what} {', '.join(str(n) for n in v)}",
        normal=lambda v: sorted(
            {n for n in (guard.whole_number(item, low, high) for item in v) if n is not None}
        ),
    )


def whole_range(
    name: str, key: str, low: int, high: int, default: tuple[int, int], what: str
) -> StateLink:
    """A range of whole numbers in ``[low, high]``: ``3-7`` (or one number, ``3``)."""
    accepted = f"is not a range of {what} (like {low}-{high}, within {low} to {high})"

    def read(text: str) -> tuple[int, int]:
        first, sep, second = text.partition("-")
        ends = [guard.whole_number(part, -(10**19), 10**19) for part in (first, second or first)]
        if None in ends or (sep and not second):
            raise Refused(accepted)
        start, stop = sorted(ends)  # type: ignore[type-var]
        inside = (min(max(start, low), high), min(max(stop, low), high))
        if inside != (start, stop):
            raise Refused(accepted, inside)
        return inside

    return StateLink(
        name,
        key,
        tuple(default),
        _single(read),
        lambda v: [f"{v[0]}-{v[1]}" if v[0] != v[1] else f"{v[0]}"],
        lambda v: f"{what} {v[0]}–{v[1]}",
    )


def numbers(text: str, count: Iterable[int], bound: float) -> list[float] | None:
    """Finite numbers within ``[-bound, bound]`` separated by :data:`SEPARATOR` (or commas), as
    many as one of ``count`` (else None)."""
    items = PARTS.split(text)
    if len(items) not in set(count):
        return None
    try:
        values = [float(item) for item in items]
    except ValueError:
        return None
    if not all(math.isfinite(v) and abs(v) <= bound for v in values):
        return None
    return values


def camera(name: str, key: str) -> StateLink:
    """A 3D camera as nine numbers, eye, center and up (``camera=1.3~0.9~0.6~0~0~0~0~0~1``);
    by default None: the figure's own."""
    accepted = "is not a camera (nine numbers: eye x y z, center x y z, up x y z)"

    def read(text: str) -> guard.Camera:
        values = numbers(text, {9}, guard.CAMERA_BOUND)
        checked = None
        if values is not None:
            checked = guard.camera(
                {
                    part: dict(zip("xyz", values[3 * i : 3 * i + 3], strict=True))
                    for i, part in enumerate(guard.CAMERA_PARTS)
                }
            )
        if checked is None:
            raise Refused(accepted)
        return checked

    def write(value: guard.Camera) -> list[str]:
        return [
            SEPARATOR.join(
                f"{value[part][axis]:.4g}" for part in guard.CAMERA_PARTS for axis in "xyz"
            )
        ]

    def show(value: guard.Camera | None) -> str:
        return "the figure's own camera" if value is None else "that camera"

    return StateLink(name, key, None, _single(read), write, show)
