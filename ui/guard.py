"""What the dashboard accepts from a browser, and what it shows back: checked values, one-line
messages, who the visitor is.

Everything a browser sends is untrusted: URL parameters, widget values and click payloads are
checked here before use (whole numbers finite and in range, a model this session has loaded,
a spec of at most :data:`headforms.sources.MAX_SPEC_LENGTH` characters); what was wrong is one
toast line. Streamlit deserialises widget values before any page code runs, and its own
deserialisers raise on values no browser sends (NaN for an integer input, a string for a
number): :func:`harden_widget_states` drops such a value on arrival (the widget keeps its own).

In hosted mode (``HEADFORMS_HOSTED=1``) a visitor sees no exception details
(``client.showErrorDetails = "none"``) and no server-private location in any message
(:func:`public_message`). Who the visitor is (:func:`visitor`: the client's address, not the
websocket) is what the gateway (:mod:`ui.compute`) counts budgets, turns and memory by.
"""

from __future__ import annotations

import logging
import math
import os
import re
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import streamlit as st

from headforms import hosted
from headforms.errors import ModelSpecError
from headforms.settings import settings
from headforms.sources import MAX_SPEC_LENGTH, Policy

LOGGER = logging.getLogger(__name__)

MAX_EXTRA_MODELS = 8
"""Models a page may load besides the sidebar's (overlays, comparisons)."""
MAX_INDEX = 10**6
"""Largest layer or head index taken from a typed value before it is clamped to the model."""
SHOWN_CHARACTERS = 40
"""Characters of a refused value echoed in its message."""

_WHOLE = re.compile(r"[+-]?\d{1,19}")


def is_hosted() -> bool:
    """Whether this server runs in hosted mode."""
    return settings().hosted


def unexpected(error: BaseException) -> str:
    """What a visitor reads of an unexpected exception (a bug of torch, transformers or ours):
    its type and its message's first line; in hosted mode its type only. The log has the rest."""
    first = next(iter(str(error).splitlines()), "")
    detail = "the server's log has the details" if is_hosted() else first
    return f"{type(error).__name__}: {detail}"


def policy() -> Policy | None:
    """What this server lets visitors open (hosted mode), handed to every locate; else None."""
    return hosted.policy_in_force()


def visitor() -> str:
    """Who runs this session, as budgets and turns count them: the client's address (a trusted
    proxy's ``X-Forwarded-For``), never the websocket (:mod:`headforms.hosted.visitors`)."""
    peer = st.context.ip_address or "127.0.0.1"  # Streamlit gives None for loopback
    forwarded = st.context.headers.get_all("X-Forwarded-For")
    address = hosted.client_address(peer, forwarded, hosted.trusted_proxies())
    return hosted.visitor_key(address)


ERROR_DETAILS = "client.showErrorDetails"
_configured_details: list[Any] = []
"""The server's own value of :data:`ERROR_DETAILS` while hosted mode overrides it."""


def protect_session() -> None:
    """Call first in every script run: hardens widget deserialisation; in hosted mode hides
    exception details from the browser (``client.showErrorDetails = "none"``), otherwise keeps
    the server's own setting (details for developers)."""
    harden_widget_states()
    if is_hosted():
        if not _configured_details:
            _configured_details.append(st.get_option(ERROR_DETAILS))
        if st.get_option(ERROR_DETAILS) != "none":
            st.set_option(ERROR_DETAILS, "none")
    elif _configured_details:
        st.set_option(ERROR_DETAILS, _configured_details.pop())


# ---------------------------------------------------------------------------------------------
# Values


def short(value: Any) -> str:
    """A value as echoed in a message (its repr, short, one line), raw: escape it where it is
    drawn (:func:`plain`)."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 1] + "…"


def shown(value: Any) -> str:
    """:func:`short` as drawn in Markdown (:func:`plain`): for toasts and progress lines."""
    return plain(short(value))


_LINK_MARKUP = re.compile(r"([\\\[\]<>`$])")
_ALL_MARKUP = re.compile(r"([\\`*_\[\]<>$~:|#])")
WORD_JOINER = "\u2060"
"""An invisible character that joins its neighbours (no line break, no width)."""
_AUTOLINKS = re.compile(r"(?i)(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)")
"""Where GFM's literal autolinks start: ``scheme://`` (http, https), ``www.``, e-mail's ``@``."""


def plain(text: str, all_markup: bool = False) -> str:
    """``text`` (a model's name, a spec, a message naming them) as Streamlit's Markdown shows
    it literally: no link, image, HTML, code span, formula or coloured text can come from a
    name a stranger chose (its backslashes, brackets, angle brackets, backticks and dollars are
    escaped; with ``all_markup``, emphasis, tables, headings and emoji codes too, as the page's
    notices escape what they echo). The one Markdown escape of the dashboard.

    A URL or an e-mail address in plain text (``https://…``, ``www.…``, ``a@b.c``) becomes a
    link by GFM's autolink extension, which Streamlit applies *after* reading the escapes, so no
    escape stops it: a :data:`WORD_JOINER` after ``:`` of ``://``, after ``www`` and after
    ``@`` does (the text reads the same)."""
    pattern = _ALL_MARKUP if all_markup else _LINK_MARKUP
    return _AUTOLINKS.sub(WORD_JOINER, pattern.sub(r"\\\1", str(text)))


def whole_number(value: Any, low: int, high: int) -> int | None:
    """``value`` as an int in ``[low, high]`` (an int, an integral finite float, or decimal
    digits), else None. Booleans, NaN, infinities, fractions and other strings are refused."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        value = int(value)
    elif isinstance(value, str):
        if not _WHOLE.fullmatch(value.strip()):
            return None
        value = int(value.strip())
    elif not isinstance(value, int):
        return None
    return value if low <= value <= high else None


def finite_number(value: Any, low: float, high: float) -> float | None:
    """``value`` as a float in ``[low, high]`` (finite), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) and low <= value <= high else None


def checked_spec(value: Any) -> str:
    """A model spec as typed (stripped), or a one-line :class:`ModelSpecError`."""
    if not isinstance(value, str):
        raise ModelSpecError(f"the model spec must be text, not {type(value).__name__}")
    text = value.strip()
    if not text:
        raise ModelSpecError("empty model spec; choose a bundled model or type a spec")
    if len(text) > MAX_SPEC_LENGTH:
        raise ModelSpecError(
            f"model spec is {len(text)} characters long (at most {MAX_SPEC_LENGTH})"
        )
    return text


def spec_or_none(value: Any) -> str | None:
    """:func:`checked_spec`, or None (after one toast line saying why)."""
    try:
        return checked_spec(value)
    except ModelSpecError as error:
        st.toast(f"Ignored a model spec: {error}.", icon=":material/block:")
        return None


def extra_models(specs: Iterable[Any]) -> list[str]:
    """Specs a page should load besides the sidebar's: checked, at most :data:`MAX_EXTRA_MODELS`
    (the rest refused in one toast line)."""
    out: list[str] = []
    for value in specs:
        spec = spec_or_none(value)
        if spec is not None and spec not in out:
            out.append(spec)
    if len(out) > MAX_EXTRA_MODELS:
        st.toast(
            f"Showing the first {MAX_EXTRA_MODELS} of {len(out)} extra models "
            f"(at most {MAX_EXTRA_MODELS}).",
            icon=":material/block:",
        )
    return out[:MAX_EXTRA_MODELS]


def whole_numbers(values: Iterable[Any], low: int, high: int, limit: int, what: str) -> list[int]:
    """The distinct whole numbers in ``[low, high]`` among ``values`` (at most ``limit``); the
    others are refused in one toast line."""
    out: list[int] = []
    refused = []
    for value in values:
        number = whole_number(value, low, high)
        if number is None:
            refused.append(value)
        elif number not in out:
            out.append(number)
    if refused or len(out) > limit:
        st.toast(
            f"Ignored {len(refused) + max(len(out) - limit, 0)} {what}: at most {limit}, each "
            f"a whole number from {low} to {high}.",
            icon=":material/block:",
        )
    return out[:limit]


CAMERA_PARTS = ("eye", "center", "up")
CAMERA_BOUND = 100.0
"""Largest coordinate accepted in a 3D camera (the scenes' axes span about 1)."""
Camera = dict[str, dict[str, float]]
"""A plotly 3D camera: ``{"eye": {"x": .., "y": .., "z": ..}, "center": ..., "up": ...}``."""


def camera(value: Any) -> Camera | None:
    """A 3D camera sent by the browser, if it is one (finite numbers within
    :data:`CAMERA_BOUND`, an ``up`` and an ``eye`` away from the ``center``), else None."""
    if not isinstance(value, dict) or set(value) != set(CAMERA_PARTS):
        return None
    out: Camera = {}
    for part in CAMERA_PARTS:
        point = value[part]
        if not isinstance(point, dict) or set(point) != set("xyz"):
            return None
        numbers = {axis: finite_number(point[axis], -CAMERA_BOUND, CAMERA_BOUND) for axis in "xyz"}
        if None in numbers.values():
            return None
        out[part] = numbers  # type: ignore[assignment]
    eye, center, up = (out[part] for part in CAMERA_PARTS)
    if all(eye[a] == center[a] for a in "xyz") or not any(up.values()):
        return None
    return out


# ---------------------------------------------------------------------------------------------
# Clicks


def click_target(point: Any, models: Mapping[str, tuple[int, int]]) -> tuple[str, int, int] | None:
    """``(model, layer, head)`` of a click payload naming a head of one of ``models`` (spec ->
    (layers, heads): those this session loaded, :func:`ui.state.loaded_models`), else None
    (after one toast line). A payload is ``[model, layer, head, ...]``."""
    if not isinstance(point, list | tuple) or len(point) < 3:
        st.toast("Ignored a click: not a head of a loaded model.", icon=":material/block:")
        return None
    spec, layer, head = point[0], point[1], point[2]
    shapes = models.get(spec) if isinstance(spec, str) else None
    if shapes is None:
        st.toast(f"Ignored a click on {shown(spec)}: not a loaded model.", icon=":material/block:")
        return None
    n_layers, n_heads = shapes
    layer_index = whole_number(layer, 0, n_layers - 1)
    head_index = whole_number(head, 0, n_heads - 1)
    if layer_index is None or head_index is None:
        st.toast(
            f"Ignored a click on layer {shown(layer)}, head {shown(head)}: {spec} has layers "
            f"0-{n_layers - 1} and heads 0-{n_heads - 1}.",
            icon=":material/block:",
        )
        return None
    return spec, layer_index, head_index


# ---------------------------------------------------------------------------------------------
# Messages


def public_message(text: str) -> str:
    """``text`` as a visitor may see it: in hosted mode every server-private location (the
    result cache, the hub cache, the hub endpoint, the installation) is replaced by what it is.
    The allowed model directories stay (a visitor needs them). Raw text: escape it where it is
    drawn (:func:`plain`; the notices do)."""
    if not is_hosted():
        return text
    policy_roots = [str(r) for r in hosted.Limits.from_env().model_roots]
    kept = {f"\0root{i}\0": root for i, root in enumerate(policy_roots)}
    for marker, root in kept.items():
        text = text.replace(root, marker)
    for location, name in _private_locations():
        text = text.replace(location, name)
    for marker, root in kept.items():
        text = text.replace(marker, root)
    return text


def _private_locations() -> list[tuple[str, str]]:
    """(location, replacement) pairs, longest first."""
    from headforms.sources.hub import hub_cache_dir, hub_endpoint
    from headforms.store import cache_dir

    pairs: dict[str, str] = {}

    def add(path: Any, name: str) -> None:
        for variant in {str(path), os.path.realpath(str(path))}:
            if len(variant) > 1:
                pairs.setdefault(variant, name)

    add(hub_endpoint(), "the hub")
    add(os.environ.get("HF_ENDPOINT") or hub_endpoint(), "the hub")
    add(hub_cache_dir(), "[hub cache]")
    add(cache_dir(), "[result cache]")
    add(sysconfig.get_paths()["purelib"], "[installation]")
    add(sys.prefix, "[installation]")
    add(Path(__file__).resolve().parents[1], "[installation]")
    return sorted(pairs.items(), key=lambda item: -len(item[0]))


# ---------------------------------------------------------------------------------------------
# Streamlit's widget deserialisation


UNCHECKED_VALUES = frozenset({"chat_input_value", "file_uploader_state_value"})
"""Widget value fields whose deserialisation has side effects (not tried twice)."""


def harden_widget_states() -> None:
    """Drop a malformed widget value before Streamlit uses it (idempotent): the widget keeps
    its previous value.

    Streamlit 1.67 deserialises every widget's value at the start of a run, before any page
    code: a forged ``NaN`` for an integer ``number_input`` (``int(nan)``), or a string for a
    number, raises there (binding a widget to the URL changes nothing to that:
    tests/system/ui/test_streamlit_limits.py shows it, and fails once Streamlit stops raising).
    Each incoming value is now deserialised once on arrival; one that raises (a browser never
    sends such a value) is logged and not stored.
    """
    from streamlit.runtime.state import session_state as module
    from streamlit.runtime.state.common import unpack_widget_state_value

    states = module.WStates
    if getattr(states.set_widget_from_proto, "_headforms_checked", False):
        return
    original = states.set_widget_from_proto

    def checked_set(self: Any, widget_state: Any) -> None:
        metadata = self.widget_metadata.get(widget_state.id)
        field = widget_state.WhichOneof("value")
        if metadata is not None and field not in UNCHECKED_VALUES:
            try:
                metadata.deserializer(unpack_widget_state_value(widget_state))
            except Exception as error:  # a value no browser sends
                LOGGER.warning(
                    "ignored a malformed value of widget %s (%s)",
                    widget_state.id,
                    type(error).__name__,
                )
                return
        original(self, widget_state)

    checked_set._headforms_checked = True  # type: ignore[attr-defined]
    checked_set.__wrapped__ = original  # type: ignore[attr-defined]
    states.set_widget_from_proto = checked_set
