"""Models for the pages: analyses and Gaussian baselines through the gateway, with a progress
bar while they are computed.

A load parses and locates the spec once (:func:`located_model`: config and file headers only,
no weights; remembered :data:`FINGERPRINT_SECONDS`, a hub id's :data:`HUB_FINGERPRINT_SECONDS`)
and asks the gateway (:mod:`ui.compute`) for the located model's analysis: kept in memory by the
weights' fingerprint and the RoPE position, so a changed model file is analysed again rather
than served from memory; in hosted mode contained and charged to the visitor.

A model's first view needs its heads only: its core spectra (the eigenvalues of S and their
lobes, from which every per-head statistic comes); the pages that draw the other spectra ask
for them (:func:`load_analysis`'s ``spectra``: the singular values of A, the eigenvalues of L,
from the stored factors), and the Gaussian baseline is computed when a view asks for it
(:func:`load_baseline`, with its own progress line), never while the model loads.

While a model is analysed, the bar is redrawn every :data:`ui.gateway.POLL_S` seconds with what
is happening and for how long, so the page shows progress from its first second (opening a
model may import transformers for several seconds before its first layer); each redraw is also
where Streamlit stops the script of a visitor who left.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import streamlit as st

from headforms import DEFAULT_MODEL, HeadformsError, ModelAnalysis
from headforms.columns import ALL_SPECTRA
from headforms.hosted import Budget
from headforms.options import AnalysisOptions
from headforms.progress import Progress
from headforms.sources import Located, Spec, locate, parse_spec

from . import guard, state
from .compute import ProgressBar, gateway, peek, run
from .gateway import Analysis, GaussianBaseline
from .tables import expand_models

if TYPE_CHECKING:
    import pandas as pd

    from headforms.baseline import Baseline

T = TypeVar("T")

LOGGER = logging.getLogger(__name__)
FINGERPRINT_SECONDS = 2.0
"""How long a local model's fingerprint is trusted before its files are looked at again."""
HUB_FINGERPRINT_SECONDS = 60.0
"""How long a hub model's commit is trusted before the hub is asked again."""

DASHBOARD_SPECTRA = ALL_SPECTRA
"""Every spectrum the dashboard's pages read (the install's warm-up computes them all)."""
HEAD_SPECTRA = ("sv_a",)
"""The spectra the head page draws besides the core ones."""
FITS_SPECTRA = ("sv_a", "eig_l_abs")
"""The spectra the fits page's Observation 6 fits besides the core ones."""

BASELINE_TEXT = "Gaussian baseline of the same shapes"
"""What the progress line says while a baseline is computed."""


def dashboard_options(
    rope_position: int = 0, spectra: Iterable[str] = DASHBOARD_SPECTRA
) -> AnalysisOptions:
    """The options of the dashboard's analyses at ``rope_position`` with ``spectra`` besides
    the core ones (checked once, here)."""
    return AnalysisOptions(rope_position, spectra=tuple(spectra))


@st.cache_data(ttl=FINGERPRINT_SECONDS, show_spinner=False, max_entries=256)
def _located_local(spec: Spec) -> Located:
    return locate(spec)


@st.cache_data(ttl=HUB_FINGERPRINT_SECONDS, show_spinner=False, max_entries=256)
def _located_hub(spec: Spec) -> Located:
    return locate(spec)


def located_model(spec: str) -> Located:
    """The model ``spec`` names, parsed and located once within this server's policy (a
    refusal or bad spec: its HeadformsError, the policy's first); remembered a few seconds, a
    hub id's a minute (the spec's policy is part of the key: modes never share an entry)."""
    parsed = parse_spec(spec, guard.policy())
    return _located_hub(parsed) if parsed.kind == "hub" else _located_local(parsed)


def load_analysis(
    spec: str,
    rope_position: int = 0,
    where: Any = None,
    spectra: Iterable[str] = (),
    quiet: bool = False,
) -> ModelAnalysis:
    """The analysis of ``spec`` at ``rope_position`` with ``spectra`` besides the core ones (a
    first view needs none); while it is computed, a progress bar in ``where`` (default: the
    main area; none when ``quiet``) says what is happening and for how long. The one kept in
    memory for the model has every spectrum asked for so far.

    Raises :class:`HeadformsError` with a one-line message on bad input or at a limit.
    """
    spec = guard.checked_spec(spec)
    request = Analysis(located_model(spec), dashboard_options(rope_position, spectra))
    analysis = peek(request)
    if analysis is None:
        what = "Computing the spectra of" if tuple(spectra) else "Analysing the heads of"
        with ProgressBar(f"{what} {guard.shown(spec)}", where, quiet=quiet) as bar:
            analysis = run(request, bar)
    card = analysis.card
    state.remember_model(spec, card.n_layers, card.n_heads)
    return analysis


def analysis_download(
    spec: str,
    rope_position: int,
    use: Callable[[ModelAnalysis, Baseline | None], T],
    spectra: Iterable[str] = (),
    budget: Budget | None = None,
) -> Callable[[], T]:
    """``use(analysis, baseline)`` of ``spec`` at ``rope_position`` (with ``spectra``) and its
    Gaussian baseline (None if it has none), made when called (a download button's ``data``):
    both are asked of the gateway then, for this session's visitor (their kept copies, else the
    store's), so the session keeps only the requests between its runs. With ``budget``, ``use``
    itself is a computation of the server's (a whole file built from the results): run at the
    visitor's turn and charged to that budget (:func:`ui.compute.in_server`)."""
    request = Analysis(
        located_model(guard.checked_spec(spec)), dashboard_options(rope_position, spectra)
    )
    server, visitor = gateway(), guard.visitor()

    def make() -> T:
        analysis = server.run(request, visitor=visitor)
        card = analysis.card
        base = GaussianBaseline(card.baseline_shapes) if card.has_baseline else None
        baseline = None if base is None else server.run(base, visitor=visitor)
        if budget is None:
            return use(analysis, baseline)
        return server.in_server(budget, lambda: use(analysis, baseline), visitor=visitor)

    return make


def models_key(analyses: Mapping[str, ModelAnalysis]) -> tuple[tuple[str, str], ...]:
    """``((spec, weights' fingerprint), ...)`` of ``analyses``: what a cached figure of these
    models is keyed by (:func:`ui.compute.cached`), so that it follows their weights."""
    return tuple((spec, analysis.card.fingerprint) for spec, analysis in analyses.items())


def ensure_baseline(analysis: ModelAnalysis, progress: Progress | None = None) -> Baseline | None:
    """The Gaussian baseline of ``analysis``'s shapes through the gateway (computed now if no
    one has yet: in hosted mode in a contained worker, at the visitor's turn), or None when the
    model has none; ``progress`` as for :func:`ui.compute.run`. Draws nothing."""
    if not analysis.card.has_baseline:
        return None
    return run(GaussianBaseline(analysis.card.baseline_shapes), progress)


def load_baseline(analysis: ModelAnalysis, where: Any = None) -> Baseline | None:
    """:func:`ensure_baseline`, under a progress line in ``where`` (default the main area) while
    it is computed: for the views that draw the baseline, and only them. A baseline refused (a
    hosted visitor's budget, a busy server, a limit) is one line there, and None: the view is
    drawn without it."""
    target = where if where is not None else st
    try:
        card = analysis.card
        if not card.has_baseline or peek(GaussianBaseline(card.baseline_shapes)) is not None:
            return ensure_baseline(analysis)
        with ProgressBar(BASELINE_TEXT, target, messages=False) as bar:
            return ensure_baseline(analysis, bar)
    except HeadformsError as error:
        message = f"Gaussian baseline not shown: {guard.public_message(str(error))}"
        target.info(guard.plain(message), icon=":material/info:")
        return None


def baseline_heads(analysis: ModelAnalysis, where: Any = None) -> pd.DataFrame | None:
    """The Gaussian baseline's per-head table (:func:`load_baseline`), or None."""
    found = load_baseline(analysis, where)
    return None if found is None else found.heads


def baselines_of(
    analyses: Mapping[str, ModelAnalysis], where: Any = None
) -> dict[str, pd.DataFrame]:
    """The baselines' per-head tables of the models that have one, by model spec."""
    found = {spec: baseline_heads(analysis, where) for spec, analysis in analyses.items()}
    return {spec: table for spec, table in found.items() if table is not None}


def load_models(
    current: str, analysis: ModelAnalysis, specs: Iterable[str], where: Any = None
) -> dict[str, ModelAnalysis]:
    """The page's model (``current``) and every other model named in ``specs`` (table files
    expanded), analysed at RoPE position 0; a model that fails shows its one-line error in
    ``where`` (default: the main area) and is left out."""
    analyses = {current: analysis}
    target = where if where is not None else st.container()
    with target:
        expanded = expand_models(specs)
    for spec in expanded:
        if spec not in analyses:
            loaded = try_load(spec, 0, where=where)
            if loaded is not None:
                analyses[spec] = loaded
    return analyses


def load_or_message(
    spec: str, rope_position: int = 0, where: Any = None
) -> tuple[ModelAnalysis | None, str | None]:
    """:func:`load_analysis`, or ``(None, one line)`` saying why it failed (never a traceback,
    never a server path in hosted mode; raw text: escape it where it is drawn)."""
    try:
        return load_analysis(spec, rope_position, where=where), None
    except HeadformsError as error:
        return None, guard.public_message(str(error))
    except Exception as error:  # an engine bug must not show a traceback to users either
        LOGGER.exception("analysis of %r failed", spec)
        return None, guard.public_message(
            f"Could not analyse {guard.short(spec)}: {guard.unexpected(error)}"
        )


def try_load(spec: str, rope_position: int = 0, where: Any = None) -> ModelAnalysis | None:
    """:func:`load_analysis`, showing a failure as one ``st.error`` line (see
    :func:`load_or_message`); None then.

    ``where``: the container for the progress bar and the error (default: the main area).
    """
    analysis, message = load_or_message(spec, rope_position, where=where)
    if message is not None:
        (where if where is not None else st).error(guard.plain(message), icon=":material/error:")
    return analysis


def warm(spec: str = DEFAULT_MODEL) -> None:
    """Analyse ``spec`` into the disk cache as the dashboard will ask for it, with every
    spectrum and its Gaussian baseline, so that no page of the default model waits (what
    ``headforms analyze MODEL --spectra all --baseline`` does too), through a private gateway
    of its own (no session, no server)."""
    from .gateway import LocalGateway

    server = LocalGateway()
    card = server.run(Analysis(located_model(spec), dashboard_options())).card
    if card.has_baseline:
        server.run(GaussianBaseline(card.baseline_shapes))
