"""The kinds of computation the dashboard asks the gateway for, each one dataclass.

- :class:`Analysis`: a located model's analysis at some options (its extra spectra included);
- :class:`GaussianBaseline`: the Gaussian baseline of a model's shapes;
- :class:`RopeSweep`: every head of a located model at every RoPE position of a range;
- :class:`PromptAttention`: a forward pass's attention patterns on a prompt;
- :class:`ProbeScores`: a forward pass's head-type scores on the repeated-token probe;
- :class:`Intervention`: an edit of heads' forms (or outputs) and what the model loses;
- :class:`WhyAttends`: heads' scores on a text split into their forms' parts;
- :class:`DemoBuild`: the demo training run and model pair, built once;
- :class:`RunRecords`: a training run's records (a run store, perhaps still growing) as a series;
- :class:`InterventionStudy`: every intervention number of the docs on one model (a report).

Each says what it is by content (:attr:`~ui.gateway.computation.Computation.key`), how to
compute it here (``local``: the library) and in a hosted server (``hosted``: the public
functions of :mod:`headforms.hosted`), and how to read it from the library's store when it is
there. A new kind is one more class here (``ui/gateway/__init__.py`` says how).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

from headforms import hosted
from headforms.baseline import baseline_key, gaussian_baseline, stored_baseline
from headforms.behaviour import attention, cache, head_type_scores, runnable
from headforms.behaviour.limits import check_probe, check_prompt
from headforms.demo import DEMO_SEED, DEMO_VERSION, build_demo, built_demo
from headforms.engine import analyze, stored_analysis, stored_sweep, sweep
from headforms.hosted import Budget, Check
from headforms.hosted.tasks import WhyTask
from headforms.interventions import InterventionRequest, intervention, intervention_key
from headforms.interventions import result as intervention_store
from headforms.progress import Progress
from headforms.series import run_series
from headforms.sources import TABLE_FORMAT
from headforms.store import ResultStore
from headforms.study import run_study
from headforms.study_options import StudyOptions
from headforms.why import WhyRequest, why, why_key
from headforms.why import result as why_store

from .computation import Computation

if TYPE_CHECKING:
    from headforms import ModelAnalysis
    from headforms.architectures import Shapes
    from headforms.baseline import Baseline
    from headforms.behaviour import AttentionPattern, HeadTypeScores
    from headforms.demo import Demo
    from headforms.interventions import InterventionResult
    from headforms.options import AnalysisOptions, SweepOptions
    from headforms.run_store import RunState
    from headforms.series import Trajectory
    from headforms.sources import Located
    from headforms.study import Study
    from headforms.sweeps import PositionSweep
    from headforms.why import WhyResult


@dataclass(frozen=True)
class Analysis(Computation["ModelAnalysis"]):
    """The analysis of ``located`` at ``options``. One is kept per model and RoPE position:
    asked for more spectra than the kept one has, it is computed again with both (from the
    stored factors), so the kept one has every spectrum asked for so far."""

    located: Located
    options: AnalysisOptions
    first_message = "opening the model (the first one also imports its libraries)"

    @property
    def key(self) -> tuple:
        options = self.options
        return ("analysis", self.located.fingerprint, options.rope_position, options.fold_qk_norm)

    @property
    def job_key(self) -> tuple:
        return (*self.key, self.options.spectra)

    def accepts(self, result: ModelAnalysis) -> bool:
        table = self.located.format == TABLE_FORMAT  # a published table has no spectra
        return table or self.options.spectra <= result.spectra.keys()

    def widened(self, result: ModelAnalysis) -> Analysis:
        return replace(self, options=self.options.with_spectra(result.spectra))

    def stored(self) -> ModelAnalysis | None:
        return stored_analysis(self.located, self.options)

    def local(self, progress: Progress) -> ModelAnalysis:
        return analyze(self.located, options=self.options, progress=progress)

    def hosted(self, progress: Progress, check: Check, visitor: str) -> ModelAnalysis:
        return hosted.analyze(
            self.located, options=self.options, progress=progress, check=check, visitor=visitor
        )


@dataclass(frozen=True)
class GaussianBaseline(Computation["Baseline"]):
    """The Gaussian baseline of ``shapes`` (one per shape: every model of those shapes)."""

    shapes: Shapes
    first_message = "Gaussian baseline of the same shapes"

    @property
    def key(self) -> tuple:
        return ("baseline", baseline_key(self.shapes))

    def stored(self) -> Baseline | None:
        return stored_baseline(self.shapes)

    def local(self, progress: Progress) -> Baseline:
        return gaussian_baseline(self.shapes)

    def hosted(self, progress: Progress, check: Check, visitor: str) -> Baseline:
        return hosted.baseline(self.shapes, progress, check=check, visitor=visitor)


@dataclass(frozen=True)
class RopeSweep(Computation["PositionSweep"]):
    """Every head of ``located`` at every RoPE position of ``options``, in one pass."""

    located: Located
    options: SweepOptions

    @property
    def key(self) -> tuple:
        return ("sweep", self.located.fingerprint, self.options)

    def stored(self) -> PositionSweep | None:
        return stored_sweep(self.located, self.options)

    def local(self, progress: Progress) -> PositionSweep:
        return sweep(self.located, options=self.options, progress=progress)

    def hosted(self, progress: Progress, check: Check, visitor: str) -> PositionSweep:
        return hosted.sweep(self.located, self.options, progress, check=check, visitor=visitor)


@dataclass(frozen=True)
class _ForwardPass:
    """What both forward passes share: a runnable located model (weights, not a table) and
    the fingerprint of what a pass depends on (weights and tokenizer files)."""

    located: Located
    first_message = "waiting for the model to load"

    @cached_property
    def model_fingerprint(self) -> str:
        """:func:`headforms.behaviour.runnable.fingerprint` of the model (its files)."""
        return runnable.fingerprint(self.located)

    def prepare(self) -> None:
        """Load the runnable model (kept loaded by :data:`headforms.behaviour.runnable.LOADED`);
        a failure is left for the pass itself to report."""
        if self.model_fingerprint not in runnable.LOADED.keys():
            with contextlib.suppress(Exception):
                runnable.runnable(self.located)


@dataclass(frozen=True)
class PromptAttention(_ForwardPass, Computation["AttentionPattern"]):
    """Every head's attention (weights and pre-softmax scores) on ``prompt`` (checked when
    made: text, not empty, within the server's cap)."""

    prompt: str

    def __post_init__(self) -> None:
        check_prompt(self.prompt)

    @property
    def store_key(self) -> str:
        """The pattern's key in the result store."""
        return cache.pattern_key(self.model_fingerprint, self.prompt)

    @property
    def key(self) -> tuple:
        return ("attention", self.store_key)

    def stored(self) -> AttentionPattern | None:
        return cache.get_pattern(ResultStore(), self.store_key)

    def answer(self, result: AttentionPattern) -> AttentionPattern:
        return result.named(self.located.spec)

    def in_store(self) -> bool:
        return self.store_key in ResultStore()

    def local(self, progress: Progress) -> AttentionPattern:
        return attention(self.located, self.prompt, progress=progress)

    def hosted(self, progress: Progress, check: Check, visitor: str) -> AttentionPattern:
        task = hosted.AttentionTask(self.located, self.prompt)
        return hosted.forward_task(task, progress, visitor, check)


@dataclass(frozen=True)
class ProbeScores(_ForwardPass, Computation["HeadTypeScores"]):
    """Every head's head-type scores on the repeated-token probe of ``probe_length`` seeded
    random tokens (checked when made)."""

    probe_length: int
    seed: int

    def __post_init__(self) -> None:
        check_probe(self.probe_length, self.seed)

    @property
    def store_key(self) -> str:
        """The scores' key in the result store."""
        return cache.scores_key(self.model_fingerprint, self.probe_length, self.seed)

    @property
    def key(self) -> tuple:
        return ("scores", self.store_key)

    def stored(self) -> HeadTypeScores | None:
        return cache.get_scores(ResultStore(), self.store_key)

    def answer(self, result: HeadTypeScores) -> HeadTypeScores:
        return result.named(self.located.spec)

    def in_store(self) -> bool:
        return self.store_key in ResultStore()

    def local(self, progress: Progress) -> HeadTypeScores:
        return head_type_scores(
            self.located,
            probe_length=self.probe_length,
            seed=self.seed,
            progress=progress,
        )

    def hosted(self, progress: Progress, check: Check, visitor: str) -> HeadTypeScores:
        task = hosted.HeadScoresTask(self.located, self.probe_length, self.seed)
        return hosted.forward_task(task, progress, visitor, check)


@dataclass(frozen=True)
class Intervention(_ForwardPass, Computation["InterventionResult"]):
    """An intervention ``request`` (edit, scope, text, controls, seed, probe; checked when
    made) on ``located``'s runnable model: its rows, controls and, for one head, its patterns."""

    request: InterventionRequest
    first_message = "loading the model for the edit"

    def __post_init__(self) -> None:
        if not isinstance(self.request, InterventionRequest):  # checked when it was made
            raise TypeError("an Intervention needs an InterventionRequest")

    @property
    def store_key(self) -> str:
        """The result's key in the result store (fingerprint, request, code, libraries)."""
        return intervention_key(self.model_fingerprint, self.request)

    @property
    def key(self) -> tuple:
        return ("intervention", self.store_key)

    def stored(self) -> InterventionResult | None:
        return intervention_store.get(ResultStore(), self.store_key)

    def answer(self, result: InterventionResult) -> InterventionResult:
        return result.named(self.located.spec)

    def in_store(self) -> bool:
        return self.store_key in ResultStore()

    def local(self, progress: Progress) -> InterventionResult:
        return intervention(self.located, self.request, progress=progress)

    def hosted(self, progress: Progress, check: Check, visitor: str) -> InterventionResult:
        return hosted.intervention(
            self.located, self.request, progress, check=check, visitor=visitor
        )


@dataclass(frozen=True)
class WhyAttends(_ForwardPass, Computation["WhyResult"]):
    """A score split ``request`` (heads, text, tokens, pairs, detail; checked when made) on
    ``located``'s runnable model: every head's shares, or one head in full; in hosted mode in
    the model's worker, charged as the visitor's forward passes."""

    request: WhyRequest
    first_message = "loading the model for the split"

    def __post_init__(self) -> None:
        if not isinstance(self.request, WhyRequest):
            raise TypeError("a WhyAttends needs a WhyRequest")
        self.request.checked()

    @property
    def store_key(self) -> str:
        """The result's key in the result store (fingerprint, request, code, libraries)."""
        return why_key(self.model_fingerprint, self.request)

    @property
    def key(self) -> tuple:
        return ("why", self.store_key)

    def stored(self) -> WhyResult | None:
        return why_store.get(ResultStore(), self.store_key)

    def answer(self, result: WhyResult) -> WhyResult:
        return result.named(self.located.spec)

    def in_store(self) -> bool:
        return self.store_key in ResultStore()

    def local(self, progress: Progress) -> WhyResult:
        return why(self.located, self.request, progress=progress)

    def hosted(self, progress: Progress, check: Check, visitor: str) -> WhyResult:
        return hosted.forward_task(WhyTask(self.located, self.request), progress, visitor, check)


@dataclass(frozen=True)
class DemoBuild(Computation["Demo"]):
    """The demo training run and model pair (:mod:`headforms.demo`): read when built, else
    built once (under its lock: one build per server and cache, whoever asks); in hosted mode
    at the first visitor's turn, charged as one new analysis, the seed fixed by the page."""

    seed: int = DEMO_SEED
    first_message = "starting the demo's build"

    @property
    def key(self) -> tuple:
        return ("demo", DEMO_VERSION, self.seed)

    def stored(self) -> Demo | None:
        return built_demo(self.seed)

    def in_store(self) -> bool:
        return built_demo(self.seed) is not None

    def local(self, progress: Progress) -> Demo:
        return build_demo(self.seed, progress)

    def hosted(self, progress: Progress, check: Check, visitor: str) -> Demo:
        build = lambda: build_demo(self.seed, progress)  # noqa: E731
        return hosted.in_server(Budget.ANALYSES, build, visitor=visitor, check=check)


@dataclass(frozen=True)
class RunRecords(Computation["Trajectory"]):
    """The records of ``state`` (a run store as listed, its records the ones to show) as a
    series: read, never computed (a bounded read of files the library wrote, like a stored
    analysis: nothing is charged in hosted mode). A new record is a new listing, and the run's
    end a new manifest: each a new key."""

    state: RunState
    label: str | None = None
    """How the series is named (the spec that named the store; default its directory)."""
    first_message = "reading the run's records"

    @property
    def key(self) -> tuple:
        state = self.state
        return ("run", str(state.directory), state.listing, state.manifest.finished, self.label)

    def stored(self) -> Trajectory | None:
        return run_series(self.state, spectra=False, label=self.label)

    def in_store(self) -> bool:
        return True

    def local(self, progress: Progress) -> Trajectory:
        return run_series(self.state, spectra=False, label=self.label)

    def hosted(self, progress: Progress, check: Check, visitor: str) -> Trajectory:
        return run_series(self.state, spectra=False, label=self.label)


@dataclass(frozen=True)
class InterventionStudy(_ForwardPass, Computation["Study"]):
    """The study of ``located`` (:func:`headforms.study.run_study`: every whole-model edit
    against its controls, the per-head sweeps against their dose-response, the correlations
    with the geometry) at ``options``: hours of passes on a large model, minutes on the bundled
    ones; a private server runs it, a hosted one refuses it in one line (the command line
    ``headforms study`` is the way there)."""

    options: StudyOptions
    first_message = "loading the model for the study"

    @property
    def key(self) -> tuple:
        from headforms.interventions.text import text_digest

        options = self.options
        texts = tuple((label, text_digest(text)) for label, text in options.texts)
        rest = (options.max_tokens, options.controls, options.seed, options.match)
        edits = (options.whole_edits, options.sweep_edits, options.head_controls)
        return ("study", self.model_fingerprint, texts, rest, edits)

    def local(self, progress: Progress) -> Study:
        return run_study(self.located, self.options, progress)

    def hosted(self, progress: Progress, check: Check, visitor: str) -> Study:
        from headforms.errors import LimitError

        raise LimitError(
            "a study runs thousands of sequence passes: this server does not run it; run "
            "`headforms study MODEL --out DIR` on your own machine"
        )
