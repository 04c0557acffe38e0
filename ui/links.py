"""The view in the URL: every option the sidebar and the page show is one query parameter, so
that a copied link reproduces what the sender saw (model, head, colouring, overlays, filters,
sort, the 3D view and its camera...).

- A session's first run reads the URL once (:func:`capture`), within bounds (at most
  :data:`MAX_PARAMETERS` parameters, :data:`MAX_VALUES` values each, of at most
  :data:`MAX_VALUE_CHARACTERS` characters).
- Whoever draws a widget binds its parameter first (:func:`bind` with a :class:`Link`): the
  link's value, checked as strictly as the widget checks its own (a value no widget could hold is
  corrected, never silently: a one-line notice, :mod:`ui.notices`, says what was wrong, what is
  accepted and what is shown instead), goes into the widget's session-state key. A stranger's
  link can therefore ask for nothing the widgets could not.
- At the end of each run (:func:`finish`) the URL is rewritten from the state: the parameters
  bound in that run (the sidebar's and the page's), each only where it differs from its default,
  so that links stay short and readable (one change of the URL, one entry in the browser's
  history, per run). A parameter of the opening link that no widget of the opened page took is
  named in a notice. After ``st.stop()`` nothing reaches the browser any more: a page that ends
  early calls :func:`stop_page` instead, which writes the URL first.

Bound keys are kept when the visitor opens another page (Streamlit drops the state of widgets
not drawn), so a page's options are still there when the visitor comes back.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import streamlit as st

from headforms.errors import ModelSpecError

from . import guard, notices

PENDING_KEY = "_hf_link_pending"
"""Session state: the opening link's parameters (name -> values) no widget has taken yet."""
CAPTURED_KEY = "_hf_link_captured"
RUN_KEY = "_hf_link_run"
"""Session state: the links bound in this run, by name (what :func:`finish` writes)."""
PAGE_KEY = "_hf_link_page"
"""Session state: the title of this run's page (for a notice), or None once finished."""
KEPT_KEY = "_hf_link_kept"
"""Session state: the session keys of every bound widget (kept across pages)."""

MAX_PARAMETERS = 32
"""Parameters read from a link (the dashboard has fewer); the rest are ignored, with a notice."""
MAX_VALUES = 40
"""Values of one parameter read from a link (a range filter per numeric column at most)."""
MAX_VALUE_CHARACTERS = 8192
"""Longest value read from a link (specs are checked against their own, shorter limit)."""
SHOWN_CHARACTERS = 40
"""Characters of a link's value echoed in a notice."""
STREAMLIT_PARAMETERS = frozenset({"embed", "embed_options"})
"""Query parameters that belong to Streamlit itself (left alone)."""
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

    def restore(self, values: list[str]) -> None:
        try:
            value = self.read(values)
        except Refused as refused:
            value = self.default if refused.replacement is DEFAULT else refused.replacement
            correction(
                self.name, values, refused.problem, self.show(value), (self.key, _copy(value))
            )
        st.session_state[self.key] = _copy(value)

    def ensure(self) -> None:
        if self.key not in st.session_state:
            st.session_state[self.key] = _copy(self.default)

    def values(self) -> list[str] | None:
        value = st.session_state.get(self.key, self.default)
        if self.normal is not None:
            value = self.normal(value)
        if not self.always and value == self.default:
            return None
        return self.write(value)


# ---------------------------------------------------------------------------------------------
# The session's opening link, the links of each run


def capture() -> None:
    """Read the URL once per session (its first run), within the bounds above."""
    state = st.session_state
    if state.get(CAPTURED_KEY):
        return
    state[CAPTURED_KEY] = True
    pending: dict[str, list[str]] = {}
    dropped: list[str] = []
    params = st.query_params
    for name in list(params):
        if name in STREAMLIT_PARAMETERS:
            continue
        if len(pending) >= MAX_PARAMETERS:
            dropped.append(name)
            continue
        values = params.get_all(name)
        kept = [value for value in values[:MAX_VALUES] if len(value) <= MAX_VALUE_CHARACTERS]
        if len(kept) < len(values):
            notices.add(
                f"The link's {shown([name])} has {len(values) - len(kept)} values over the "
                f"limit (at most {MAX_VALUES}, each at most {MAX_VALUE_CHARACTERS} characters): "
                "ignored."
            )
        if kept:
            pending[name] = kept
    if dropped:
        notices.add(
            f"The link has more than {MAX_PARAMETERS} parameters: ignored {shown(dropped)}."
        )
    state[PENDING_KEY] = pending


def begin_run() -> None:
    """Call first in each run: forget the last run's links; keep bound widgets' state across
    pages (Streamlit drops the state of widgets a run does not draw)."""
    state = st.session_state
    state[RUN_KEY] = {}
    for key in state.get(KEPT_KEY, ()):
        if key in state:
            state[key] = state[key]


def bind(link: Link) -> Link:
    """Call before drawing the widget(s) of ``link``: the opening link's value if it has one
    (checked), else the state's, else the default; ``link`` is written to the URL this run."""
    state = st.session_state
    pending = state.get(PENDING_KEY) or {}
    if link.name in pending:
        link.restore(pending.pop(link.name))
    else:
        link.ensure()
    state.setdefault(RUN_KEY, {})[link.name] = link
    state.setdefault(KEPT_KEY, set()).update(link.keys())
    return link


def query() -> dict[str, str | list[str]]:
    """The query parameters of the links bound so far in this run."""
    out: dict[str, str | list[str]] = {}
    for name, link in st.session_state.get(RUN_KEY, {}).items():
        values = link.values()
        if values is not None:
            out[name] = values[0] if len(values) == 1 else values
    return out


def start_page(title: str) -> None:
    """Call before the page runs (``app.py``): its title, for :func:`finish`."""
    st.session_state[PAGE_KEY] = title


def finish(page_ran: bool = True) -> None:
    """Call when the page has run (``app.py``; :func:`stop_page`): the opening link's
    parameters no widget took are named in a notice (``page_ran``: else they wait for the page),
    and the URL is rewritten from the state. Once per run."""
    state = st.session_state
    title = state.pop(PAGE_KEY, None)
    if title is None:
        return
    left = state.get(PENDING_KEY) if page_ran else None
    if page_ran:
        state[PENDING_KEY] = {}
    if left:
        names = ", ".join(shown([name]) for name in left)
        verb = "is not an option" if len(left) == 1 else "are not options"
        notices.add(f"The link's {names} {verb} of the {title} page: ignored.")
    wanted = query()
    params = st.query_params
    have = {name: params.get_all(name) for name in params if name not in STREAMLIT_PARAMETERS}
    normal = {name: value if isinstance(value, list) else [value] for name, value in wanted.items()}
    if have != normal:
        params.from_dict(wanted)


def stop_page() -> NoReturn:
    """End the page here, as ``st.stop()`` does, once the URL is written (use it instead of
    ``st.stop()`` in a page: after that, nothing reaches the browser)."""
    finish()
    st.stop()
    raise AssertionError("unreachable")  # st.stop raises at its yield point


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
