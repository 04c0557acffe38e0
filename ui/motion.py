"""Loading the three sources of heads in motion for the pages: a model's sweep over RoPE
positions, a training run's checkpoints, two models to diff; through the gateway, with a
progress bar while they are computed.

- A sweep is one computation (:class:`ui.gateway.RopeSweep`: the engine's sweep on a private
  server, a contained worker in hosted mode, at the visitor's turn and charged as one new
  analysis). At most :data:`MAX_SLIDER_POSITIONS` positions, and at most
  :data:`MAX_DRAWN_POINTS` heads x positions: every head at every position is a point of the
  animated figure, built in the server and sent to the browser whole; a bigger sweep is refused
  in one line (the command line computes it).
- A series and a diff are analyses of their models (:func:`ui.loading.load_analysis`: each
  cached, contained and charged as any model in hosted mode), matched here.
- A run store (records written while a model trains, :mod:`headforms.run_store`) is read, not
  analysed (:class:`ui.gateway.RunRecords`), at most :data:`MAX_SERIES_CHECKPOINTS` records of
  it (evenly spread, the first and last always); while its run has not ended,
  :func:`watch_run` looks at it every :data:`LIVE_POLL_S` seconds and reruns the page when a
  record arrives.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from headforms.diff import ModelDiff
from headforms.errors import HeadformsError, OptionError
from headforms.figures.camera import FRAMES
from headforms.options import DEFAULT_ROPE_POSITIONS, SweepOptions
from headforms.run_store import RunState, run_state, thinned
from headforms.series import (
    MAX_CHECKPOINTS,
    Trajectory,
    open_series,
    run_store_of,
    series_label,
)
from headforms.sweeps import PositionSweep

from . import guard, links, state
from .compute import ProgressBar, peek, run
from .gateway import RopeSweep, RunRecords
from .loading import load_analysis, located_model

MAX_SLIDER_POSITIONS = 129
"""Positions one slider holds (the paper's d = 0..128): each is a frame of every head that the
browser receives with the figure (a 129-position sweep of SmolLM2's 270 heads is about 3 MB)."""

MAX_DRAWN_POINTS = 2**18
"""Heads x positions one animated figure draws at most (262,144: 2,032 heads at 129 positions):
such a figure is about 25 MiB, built in about 3 s of the server's CPU, and fits the gateway's
cache (SmolLM2's 270 heads at 129 positions: 34,830 points, 3 MiB, 0.8 s). A larger sweep is
refused in one line before it is computed or read (a 16,384-head model at 65 positions was a
100+ MiB figure rebuilt at every view)."""

MAX_SERIES_CHECKPOINTS = 64
"""Checkpoints one series of the dashboard follows (the command line takes up to
:data:`headforms.series.MAX_CHECKPOINTS`): each is analysed, and a frame of the step slider."""

MAX_RUN_BYTES = 512 * 2**20
"""Bytes of a run store's records the dashboard reads for one view at most (64 records of a
model of 2,000 heads are about 60 MB)."""

LIVE_POLL_S = 2.0
"""Seconds between two looks at a run store whose run has not ended."""


def slider_options(text: str) -> SweepOptions:
    """The sweep of a positions text typed on a page, at most :data:`MAX_SLIDER_POSITIONS`
    positions (one-line error beyond)."""
    options = SweepOptions(text.strip() or DEFAULT_ROPE_POSITIONS)
    if len(options.positions) > MAX_SLIDER_POSITIONS:
        raise OptionError(
            f"RoPE positions {text}: {len(options.positions)} positions, more than a slider "
            f"holds ({MAX_SLIDER_POSITIONS}); take a step, e.g. 0:1024:8 (the command line "
            "takes more)"
        )
    return options


def chosen_positions() -> SweepOptions:
    """The positions of the RoPE positions page (default d = 0..128), or the default if what
    was typed there is not a valid slider range."""
    try:
        return slider_options(st.session_state.get(state.POSITIONS_KEY) or DEFAULT_ROPE_POSITIONS)
    except OptionError:
        return SweepOptions()


def check_drawable(total_heads: int, options: SweepOptions) -> None:
    """Refuse, in one line, a sweep of ``total_heads`` heads at ``options``' positions whose
    animated figure would pass :data:`MAX_DRAWN_POINTS` (before anything is computed or read)."""
    positions = len(options.positions)
    if total_heads * positions > MAX_DRAWN_POINTS:
        most = max(1, MAX_DRAWN_POINTS // total_heads)
        raise OptionError(
            f"{positions} RoPE positions x {total_heads} heads = {total_heads * positions:,} "
            f"points, more than the dashboard draws in one figure ({MAX_DRAWN_POINTS:,}); take "
            f"at most {most} positions (a step), or the command line (headforms analyze MODEL "
            "--rope-positions A:B)"
        )


def sweep_request(spec: str, options: SweepOptions, total_heads: int) -> RopeSweep:
    """The sweep of ``spec`` (``total_heads`` heads) at ``options``, checked to be drawable
    (:func:`check_drawable`); one-line HeadformsError on a bad spec or a sweep too large."""
    check_drawable(total_heads, options)
    return RopeSweep(located_model(guard.checked_spec(spec)), options)


def sweep_at_hand(spec: str, options: SweepOptions, total_heads: int) -> PositionSweep | None:
    """The sweep of ``spec`` at ``options`` if nothing needs computing (in memory, or in the
    store), else None (also for a sweep too large to draw); draws nothing."""
    try:
        return peek(sweep_request(spec, options, total_heads))
    except OptionError:
        return None


def load_sweep(
    spec: str, options: SweepOptions, total_heads: int, where: Any = None
) -> PositionSweep:
    """Every head of ``spec`` at every position of ``options`` (cached in memory and on disk),
    under a progress bar in ``where`` while it is computed. One-line HeadformsError on bad
    input (a model without RoPE, too many positions or points) or at a limit."""
    request = sweep_request(spec, options, total_heads)
    found = peek(request)
    if found is not None:
        return found
    label = f"{guard.shown(spec)}: every RoPE position d = {options.positions[0]}…"
    label += f"{options.positions[-1]}"
    with ProgressBar(label, where) as bar:
        return run(request, bar)


def load_series(inputs: Sequence[str], where: Any = None) -> Trajectory:
    """The training run of ``inputs`` (a run directory, or checkpoints naming their step; at
    most :data:`MAX_SERIES_CHECKPOINTS`), each checkpoint loaded as any model (its own progress
    bar, cached). One-line HeadformsError: a step that cannot be told, an empty run directory,
    checkpoints of other shapes, a checkpoint that fails."""
    inputs = [guard.checked_spec(text) for text in inputs if str(text).strip()]
    store = run_store_of(inputs[0], guard.policy()) if len(inputs) == 1 else None
    if store is not None:
        return load_run(store)
    checkpoints = open_series(inputs, guard.policy())
    if len(checkpoints) > MAX_SERIES_CHECKPOINTS:
        raise OptionError(
            f"{len(checkpoints)} checkpoints, more than the dashboard follows in one series "
            f"({MAX_SERIES_CHECKPOINTS}; the command line's trajectory takes up to "
            f"{MAX_CHECKPOINTS}); give every k-th checkpoint"
        )
    analyses = [load_analysis(c.spec, 0, where=where) for c in checkpoints]
    return Trajectory(series_label(inputs, checkpoints), checkpoints, analyses)


def names_run_store(inputs: Sequence[str]) -> bool:
    """Whether ``inputs`` name one run store (a bad or refused input: no; its error is shown
    when the series is loaded)."""
    if len(inputs) != 1:
        return False
    try:
        return run_store_of(guard.checked_spec(inputs[0]), guard.policy()) is not None
    except HeadformsError:
        return False


def load_run(directory: Path) -> Trajectory:
    """The series of the run store in ``directory`` (checked by the policy already): at most
    :data:`MAX_SERIES_CHECKPOINTS` of its records, evenly spread with the first and the last,
    read through the gateway (a new record is a new request). One-line HeadformsError: a store
    with no whole record yet, records too large to read."""
    state = run_state(directory)
    chosen = thinned(state.records, MAX_SERIES_CHECKPOINTS)
    size = sum(record.size for record in chosen)
    if size > MAX_RUN_BYTES:
        raise OptionError(
            f"{len(chosen)} records of {size / 2**20:,.0f} MiB, more than the dashboard reads "
            f"for one view ({MAX_RUN_BYTES // 2**20} MiB); the command line reads them all "
            "(headforms trajectory DIR --out FILE)"
        )
    request = RunRecords(RunState(state.directory, state.manifest, chosen))
    return peek(request) or run(request)


def run_status(series: Trajectory) -> str:
    """One line on where a series read from a run store stands (empty for checkpoints)."""
    state = series.run
    if state is None:
        return ""
    total, shown = len(state.records), series.n_points
    spread = f" (showing {shown}, evenly spread)" if shown < total else ""
    damaged = f"; {len(series.damaged)} damaged records left out" if series.damaged else ""
    if not state.live:
        ended = state.manifest.finished
        return f"Recorded while training: {total} records{spread}, the run ended at step {ended}."
    every = state.manifest.every
    period = f", one every {every} steps" if every else ""
    last = state.records[-1]
    age = _age(time.time() - last.mtime_ns / 1e9)
    return (
        f":green-badge[:material/sensors: live] last record at step {last.step:,} ({age} ago)"
        f"{period}; {total} records{spread}{damaged}. New records appear as they arrive."
    )


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def watch_run(series: Trajectory) -> None:
    """While the run of ``series`` (read from a run store) has not ended: its status line,
    redrawn every :data:`LIVE_POLL_S` seconds, and a rerun of the page when a record arrives or
    the run ends (the figure, paths and head then follow; the view, the camera and the point the
    slider was moved to are kept). A finished run: its status line, drawn once."""
    state = series.run
    if state is None:
        return
    if not state.live:
        st.caption(run_status(series))
        return

    @st.fragment(run_every=LIVE_POLL_S)
    def watch() -> None:
        try:
            now = run_state(state.directory)
        except HeadformsError as error:
            st.caption(guard.plain(guard.public_message(str(error))))
            return
        if now.listing != state.listing or not now.live:
            st.rerun(scope="app")
        st.markdown(run_status(series))

    watch()


def run_click(series: Trajectory) -> Any:
    """The click handler of a series read from a run store: a click on a head (any record)
    selects it on this page (a record is not a model another page opens)."""
    shapes = (series.card.n_layers, series.card.n_heads)
    records = dict.fromkeys(series.point_columns["checkpoint"], shapes)

    def select(point: Any) -> None:
        target = guard.click_target(point, records)
        if target is not None:
            state.select_layer_head(target[1], target[2])

    return select


def load_diff(first: str, second: str, where: Any = None) -> ModelDiff:
    """Models ``first`` (A) and ``second`` (B) loaded as any model and matched head by head;
    models of different shapes: a one-line HeadformsError naming the shapes that differ."""
    analyses = [load_analysis(spec, 0, where=where) for spec in (first, second)]
    return ModelDiff(*analyses)


# ---------------------------------------------------------------------------------------------
# The pages' options in the URL (ui.links)

FIGURES = {"simplex": "Simplex (3D)", "triangle": "Triangle Δ"}
"""The two figures of a path: profiles on the tetrahedron, symmetric profiles on the triangle."""


def bind_views() -> None:
    """The options every Motion page shares (``figure``, ``view``, ``paths``) bound to the URL,
    before their widgets are drawn."""
    links.bind(
        links.choice(
            "figure", state.MOTION_FIGURE_KEY, list(FIGURES), "simplex", "a figure", FIGURES.get
        )
    )
    links.bind(
        links.choice("view", state.MOTION_FRAME_KEY, list(FRAMES), "heads", "a 3D view", FRAMES.get)
    )
    links.bind(links.flag("paths", state.MOTION_PATHS_KEY, False, "every head's path"))


def view_controls(view_at: Any, frame_at: Any) -> tuple[str, str]:
    """A Motion page's two view controls, in the columns given: the figure (tetrahedron or
    triangle) and what the tetrahedron's camera frames (disabled for the triangle, always drawn
    whole); bound to the URL by :func:`bind_views`. Returns ``(figure, frame)``."""
    view = view_at.segmented_control(
        "View",
        list(FIGURES),
        format_func=FIGURES.__getitem__,
        key=state.MOTION_FIGURE_KEY,
        required=True,
        help="The tetrahedron of profiles (a, b, c, d), or the triangle of symmetric profiles.",
    )
    frame = frame_at.segmented_control(
        "3D view",
        list(FRAMES),
        format_func=FRAMES.__getitem__,
        key=state.MOTION_FRAME_KEY,
        required=True,
        disabled=view != "simplex",
        help="What the tetrahedron's camera frames (the triangle is always drawn whole).",
    )
    return view, frame


def check_positions() -> None:
    """The RoPE positions page's ``positions`` (a range a slider holds; its text input is bound
    to the URL by Streamlit): a link's value checked."""

    def read(values: list[str]) -> str:
        text = values[-1].strip()
        try:
            slider_options(text)
        except OptionError as error:
            raise links.Refused(f"is not a range of RoPE positions ({error})") from None
        return text

    links.check(
        links.StateLink(
            "positions",
            state.POSITIONS_KEY,
            DEFAULT_ROPE_POSITIONS,
            read,
            lambda value: [str(value)],
            lambda value: f"RoPE positions {value}",
        )
    )


def bind_series() -> None:
    """The Training run page's checkpoints (``run``: a run directory, or one value per
    checkpoint) bound to the URL."""

    def read(values: list[str]) -> str:
        checked = []
        for text in values:
            if text.strip():
                try:
                    checked.append(guard.checked_spec(text))
                except HeadformsError as error:
                    raise links.Refused(f"is not a checkpoint ({error})") from None
        return "\n".join(checked)

    links.bind(
        links.StateLink(
            "run",
            state.SERIES_KEY,
            "",
            read,
            lambda value: series_inputs(value) or [""],
            lambda value: ", ".join(series_inputs(value)) or "no checkpoints",
        )
    )


def series_inputs(text: str) -> list[str]:
    """The checkpoints typed on the Training run page: one per line, or comma-separated."""
    return [
        part.strip() for line in str(text).splitlines() for part in line.split(",") if part.strip()
    ]


def bind_second() -> None:
    """The Model diff page's model B (``b``) bound to the URL."""
    links.bind(links.spec("b", state.DIFF_KEY, None, always=False))
