"""The demo on the Training run and Model diff pages: a "Try the demo" button that builds the
demo (:mod:`headforms.demo`, through the gateway: one build per server, under a progress bar)
and fills the page's inputs with its folders, so that the URL reproduces the view; and, while the
page shows the demo, one line saying what it is (a toy, not a real model).

A link naming the demo's folders on a server that has not built it yet builds it first (the
same one build), so that a shared link works on a fresh install. In hosted mode the demo is
offered only when its folder lies in the model directories the server serves (docs/hosting.md);
otherwise the button is one line saying so, and nothing is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import streamlit as st

from headforms.demo import (
    CHECKPOINT_EVERY,
    DEMO_SEED,
    PAIR_DESCRIPTION,
    RUN_DESCRIPTION,
    TRAIN_STEPS,
    Demo,
    demo_directory,
)
from headforms.errors import HeadformsError

from . import guard, state
from .compute import ProgressBar, peek, run
from .gateway import DemoBuild
from .sidebar import REVERT_KEY

Page = Literal["training", "diff"]
REQUEST = DemoBuild(DEMO_SEED)
"""The one demo the dashboard offers (a fixed seed: visitors choose nothing)."""
ASKED_KEY = "_hf_demo_asked"
"""Session state: the page whose "Try the demo" was clicked (set by the button's callback)."""
BUILDING = "Building the demo: a tiny model trained on the shipped text (once per server)"


def offered() -> str | None:
    """None if this server offers the demo, else the one line saying why not (hosted mode: its
    folder is not in the model directories served)."""
    policy = guard.policy()
    if policy is None:
        return None
    try:
        policy.within_roots(demo_directory(DEMO_SEED), "the demo")
    except HeadformsError:
        return (
            "The demo is not offered on this server (its folder is not among the model "
            "directories it serves)."
        )
    return None


def expected() -> Demo:
    """Where the demo's folders are (built or not): what the inputs of a demo view name."""
    directory = demo_directory(DEMO_SEED)
    steps = tuple(range(0, TRAIN_STEPS + 1, CHECKPOINT_EVERY))
    return Demo(directory, DEMO_SEED, steps, "")


def inputs_of(page: Page, demo: Demo) -> dict[str, str]:
    """The session-state values that make ``page`` show ``demo``, by its names (``demo:run``):
    the run, or the diff page's models A and B (the sidebar's model is left alone)."""
    if page == "training":
        return {state.SERIES_KEY: demo.spec(demo.run)}
    return {state.DIFF_A_KEY: demo.spec(demo.base), state.DIFF_KEY: demo.spec(demo.finetuned)}


def shows_demo(page: Page, current: Sequence[str]) -> bool:
    """Whether ``current`` (the run's inputs, or ``[A, B]``) names the demo's folders (by
    their names, or by their paths as older links did)."""
    demo = expected()
    wanted = [demo.run] if page == "training" else [demo.base, demo.finetuned]
    if len(current) != len(wanted):
        return False
    pairs = zip(current, wanted, strict=True)
    return all(text.strip() in (demo.spec(path), str(path)) for text, path in pairs)


def build(where: Any = None) -> Demo:
    """The demo, built now if no one has (under a progress bar in ``where``)."""
    found = peek(REQUEST)
    if found is not None:
        return found
    with ProgressBar(BUILDING, where) as bar:
        return run(REQUEST, bar)


def demo_offer(page: Page, current: Sequence[str], compact: bool = False) -> None:
    """The page's demo line: what the demo is while ``current`` names it (building it first if
    a link named it on a server that has not built it yet); else a "Try the demo" button that
    builds it and fills the page's inputs. ``compact``: what the demo is as a caption (a
    narrow column beside a figure)."""
    refused = offered()
    showing = shows_demo(page, current)
    if refused is not None:
        if not showing:
            st.caption(refused)
        return
    if showing:
        status = st.container()
        try:
            build(status)
        except HeadformsError as error:
            st.error(guard.plain(guard.public_message(str(error))), icon=":material/error:")
            return
        pair = f" {PAIR_DESCRIPTION}." if page == "diff" else ""
        if compact:
            st.caption(
                f":material/science: The demo: {RUN_DESCRIPTION}.{pair} A toy, not a real model."
            )
            return
        st.info(
            f"The demo: {RUN_DESCRIPTION}.{pair} A toy, not a real model.",
            icon=":material/science:",
        )
        return
    left, right = st.columns([1, 4], vertical_alignment="center")
    left.button(
        "Try the demo",
        icon=":material/science:",
        on_click=st.session_state.__setitem__,
        args=(ASKED_KEY, page),
        help="Build (once, seconds) a tiny model trained by headforms on the shipped text and "
        "show it here.",
    )
    what = "training run" if page == "training" else "model pair of the same shapes"
    right.caption(f"No {what} at hand? The demo is {RUN_DESCRIPTION}: a toy, not a real model.")
    if st.session_state.pop(ASKED_KEY, None) != page:
        return
    try:
        demo = build()
    except HeadformsError as error:
        st.error(guard.plain(guard.public_message(str(error))), icon=":material/error:")
        return
    st.session_state[REVERT_KEY] = {**st.session_state.get(REVERT_KEY, {}), **inputs_of(page, demo)}
    st.rerun()
