"""Contained computations, as a server asks for them: :func:`analyze`, :func:`sweep`,
:func:`baseline` and :func:`forward_pass` (:func:`forward_task` for any forward-pass task,
:func:`intervention` for an edit of heads' forms) in workers, :func:`in_server` for a small
bounded computation in the server itself.

Each answers from the result store when it can (no worker, no weights opened, no charge).
Otherwise it checks, in the server and at no charge, everything that can be refused before any
worker starts (the model's estimated memory, a prompt's tokens when the server holds the
model's tokenizer, a sweep of a model without rotation), then runs the computation
(:mod:`.runs`, on the caller's thread) at the visitor's turn, charged to the visitor's budget of
its kind, and reads the stored result back. Every outcome is the result or one line. Nothing is
shared here: the dashboard's gateway (``ui/gateway``) shares one computation between the
sessions that ask for it, and lets it go when nobody waits for it any more.

The limits are read once per call (:meth:`.Limits.from_env`, unless given) and handed down;
what the server keeps between calls (budgets, slots, runs, model workers, the models it knows)
is one :class:`Hosting` value, :data:`hosting`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar, overload

from ..errors import LimitError
from ..progress import Progress
from ..settings import MEMORY_ENV, human_bytes, settings
from .budgets import Budget, Budgets
from .limits import Limits
from .model_facts import KnownModels
from .model_workers import ModelWorkers
from .policy import Policy
from .runs import Charge, Check, RunRequest, Runs, result
from .slots import Slots
from .tasks import (
    AttentionTask,
    BaselineTask,
    EngineTask,
    ForwardResult,
    ForwardTask,
    HeadScoresTask,
    InterventionTask,
)
from .visitors import LOCAL

if TYPE_CHECKING:
    from ..architectures import Shapes
    from ..baseline import Baseline
    from ..behaviour import AttentionPattern, HeadTypeScores
    from ..interventions import InterventionRequest, InterventionResult
    from ..model_analysis import ModelAnalysis
    from ..options import AnalysisOptions, SweepOptions
    from ..sources import Located, Spec
    from ..sweeps import PositionSweep

T = TypeVar("T")
R = TypeVar("R", bound=ForwardResult)


@dataclass
class Hosting:
    """What one server process keeps of its hosted work: the visitors' budgets, the slots of
    the workers and of the server's own lane, the model workers, the runs going on, the models
    it knows (declared sizes, tokenizers held)."""

    budgets: Budgets = field(default_factory=Budgets)
    slots: Slots = field(default_factory=Slots)
    server_slots: Slots = field(default_factory=Slots)
    model_workers: ModelWorkers = field(default_factory=ModelWorkers)
    known: KnownModels = field(default_factory=KnownModels)
    runs: Runs = field(init=False)

    def __post_init__(self) -> None:
        self.runs = Runs(self.budgets, self.slots, self.model_workers)


hosting = Hosting()
"""This server process's hosted work."""


def running() -> int:
    """Contained computations running now in this server process (workers and in-server)."""
    return hosting.slots.running() + hosting.server_slots.running()


def model_worker_pids() -> list[int]:
    """Process ids of this server's model workers (for tests and benchmarks)."""
    return hosting.model_workers.pids()


def analyze(
    spec: str | Located,
    rope_position: int = 0,
    fold_qk_norm: bool = True,
    spectra: Iterable[str] = (),
    progress: Progress | None = None,
    *,
    options: AnalysisOptions | None = None,
    visitor: str = LOCAL,
    check: Check | None = None,
    limits: Limits | None = None,
    policy: Policy | None = None,
) -> ModelAnalysis:
    """:func:`headforms.engine.analyze` within the server's policy and limits.

    ``spec``: a spec's text, located here under ``policy`` (default: this server's), or a model
    already located under it, which the worker opens as it is (never located again).
    ``options``: the analysis's options as one value (else made from ``rope_position``,
    ``fold_qk_norm`` and ``spectra``). ``progress(done, total, message)`` hears the run's
    progress (its wait for a worker, then the worker's). ``check()`` is called every 0.1 s
    while it runs: it may raise to stop it (the worker is stopped, nothing is stored, and the
    exception is raised again here). A new computation is charged to ``visitor`` (refused at
    once past its budget). A published table holds its metrics already: it is read here, no
    worker needed.
    """
    from .. import engine
    from ..options import AnalysisOptions

    if options is None:
        options = AnalysisOptions(rope_position, fold_qk_norm, tuple(spectra))
    limits = limits or Limits.from_env()
    located = _located(spec, policy, limits)

    def stored() -> ModelAnalysis | None:
        return engine.stored_analysis(located, options)

    hit = stored()
    if hit is not None:
        if progress:
            progress(hit.card.n_layers, hit.card.n_layers, "loaded from cache")
        return hit
    # More spectra of a model already analysed at these options are not a new analysis (they
    # come from its stored factors, as cheap as a reread): no charge to the visitor.
    core = AnalysisOptions(options.rope_position, options.fold_qk_norm)
    charged = core == options or engine.stored_analysis(located, core) is None
    request = RunRequest(
        EngineTask(located, options),
        f"the analysis of {located.spec}",
        limits,
        visitor,
        Charge(Budget.ANALYSES) if charged else None,
    )
    return result(hosting.runs.run(request, progress, check), stored)


def sweep(
    spec: str | Located,
    options: SweepOptions,
    progress: Progress | None = None,
    *,
    visitor: str = LOCAL,
    check: Check | None = None,
    limits: Limits | None = None,
    policy: Policy | None = None,
) -> PositionSweep:
    """:func:`headforms.engine.sweep` within the server's policy and limits: read from the
    store, else computed in a worker, contained and charged as one new analysis (``spec``,
    ``progress``, ``visitor``, ``check``: as for :func:`analyze`). A checkpoint without
    rotation, or a sweep too large, is refused from its config before any worker starts."""
    from .. import engine

    limits = limits or Limits.from_env()
    located = _located(spec, policy, limits)

    def stored() -> PositionSweep | None:
        return engine.stored_sweep(located, options)

    hit = stored()
    if hit is not None:
        return hit
    _check_sweep(located, options)
    label = f"the sweep of {located.spec} over {len(options.positions)} RoPE positions"
    request = RunRequest(EngineTask(located, options), label, limits, visitor)
    return result(hosting.runs.run(request, progress, check), stored)


def _check_sweep(located: Located, options: SweepOptions) -> None:
    """The engine's refusals of a sweep (no rotation, too large), from a checkpoint's config
    (a GGUF file's header is read in the worker)."""
    if located.config is None:
        return
    from ..architectures import architecture_for, shapes_from_config
    from ..streaming import check_sweep

    arch = architecture_for(str(located.config.get("model_type")))
    shapes = shapes_from_config(located.config)
    check_sweep(arch.rotary, located.display_name, arch.positional, shapes, options)


def baseline(
    shapes: Shapes,
    progress: Progress | None = None,
    *,
    visitor: str = LOCAL,
    check: Check | None = None,
    limits: Limits | None = None,
) -> Baseline:
    """:func:`headforms.baseline.gaussian_baseline` of ``shapes`` within the limits: read from
    the store, else computed in a worker (its size follows the model's shapes, so it is
    contained like an analysis and charged as one)."""
    from ..baseline import stored_baseline

    def stored() -> Baseline | None:
        return stored_baseline(shapes)

    hit = stored()
    if hit is not None:
        return hit
    limits = limits or Limits.from_env()
    request = RunRequest(BaselineTask(shapes), "the Gaussian baseline", limits, visitor)
    return result(hosting.runs.run(request, progress, check), stored)


@overload
def forward_pass(
    spec: str | Spec | Located,
    prompt: str,
    probe: None = None,
    progress: Progress | None = None,
    *,
    visitor: str = LOCAL,
    check: Check | None = None,
    limits: Limits | None = None,
    policy: Policy | None = None,
) -> AttentionPattern: ...


@overload
def forward_pass(
    spec: str | Spec | Located,
    prompt: None = None,
    *,
    probe: tuple[int, int],
    progress: Progress | None = None,
    visitor: str = LOCAL,
    check: Check | None = None,
    limits: Limits | None = None,
    policy: Policy | None = None,
) -> HeadTypeScores: ...


def forward_pass(
    spec: str | Spec | Located,
    prompt: str | None = None,
    probe: tuple[int, int] | None = None,
    progress: Progress | None = None,
    *,
    visitor: str = LOCAL,
    check: Check | None = None,
    limits: Limits | None = None,
    policy: Policy | None = None,
) -> AttentionPattern | HeadTypeScores:
    """:func:`headforms.behaviour.attention` of ``prompt``, or (``probe = (R, seed)``)
    :func:`headforms.behaviour.head_type_scores` of that probe, as :func:`forward_task` runs
    them (``progress``, ``visitor``, ``check``, ``limits`` the same)."""
    from ..behaviour.limits import check_probe, check_prompt
    from ..behaviour.run import locate_runnable

    if (prompt is None) == (probe is None):
        raise ValueError("forward_pass needs a prompt or a probe")
    limits = limits or Limits.from_env()
    if prompt is not None:
        prompt = check_prompt(prompt)
        located = locate_runnable(spec, policy or Policy.from_limits(limits))
        return forward_task(AttentionTask(located, prompt), progress, visitor, check, limits)
    assert probe is not None
    probe_length, seed = check_probe(*probe)
    located = locate_runnable(spec, policy or Policy.from_limits(limits))
    task = HeadScoresTask(located, probe_length, seed)
    return forward_task(task, progress, visitor, check, limits)


def forward_task(
    task: ForwardTask[R],
    progress: Progress | None = None,
    visitor: str = LOCAL,
    check: Check | None = None,
    limits: Limits | None = None,
) -> R:
    """A forward-pass task's result (:class:`.ForwardTask`: its located model already checked
    for a forward pass), within the server's limits, named after the task's model: answered from
    the result store when it can; otherwise refused in one line, at no charge, by what the
    server can tell before any worker starts (a model whose estimated memory for the task passes
    the memory limit: :meth:`.ForwardTask.memory`; :meth:`.ForwardTask.check`), else run in the
    model's worker (kept loaded between passes and tasks) at ``visitor``'s turn and charged as
    :meth:`.ForwardTask.cost` of its new forward passes (a refusal from the worker counts too:
    the work had begun). ``progress`` and ``check`` as in :func:`analyze`."""
    from ..behaviour.runnable import fingerprint

    located = task.located
    model_fingerprint = fingerprint(located)
    key = task.key(model_fingerprint)

    def stored() -> R | None:
        return task.stored(key)

    hit = stored()
    if hit is None:
        limits = limits or Limits.from_env()
        facts = hosting.known.facts(located, model_fingerprint, settings().prompt_tokens)
        need = task.memory(facts)
        if need is None or need > limits.memory:
            size = f"an estimated {human_bytes(need)} of" if need else "an unknown amount of"
            raise LimitError(
                f"{located.spec} is too large to run on this server: {task.what} needs {size} "
                f"memory, more than its limit of {human_bytes(limits.memory)} per analysis "
                f"({MEMORY_ENV}); the geometry views still work"
            )
        task.check(facts, limits)
        request = RunRequest(
            task,
            task.label(),
            limits,
            visitor,
            Charge(Budget.FORWARD_PASSES, task.cost(facts)),
            # the model's worker, kept by the model's own size (a pass at the token cap), so
            # that patterns, scores and interventions of one model share one warm worker
            model=(model_fingerprint, facts.memory or need),
        )
        hit = result(hosting.runs.run(request, progress, check), stored)
    return task.named(hit)


def intervention(
    spec: str | Spec | Located,
    request: InterventionRequest,
    progress: Progress | None = None,
    *,
    visitor: str = LOCAL,
    check: Check | None = None,
    limits: Limits | None = None,
    policy: Policy | None = None,
) -> InterventionResult:
    """:func:`headforms.interventions.intervention` of ``request`` as :func:`forward_task` runs
    it: in the model's worker, charged one of the visitor's forward passes per
    :data:`.tasks.PASSES_PER_CHARGE` sequence passes, refused at no charge before any worker
    when its passes, tokens or estimated memory pass the server's limits (``progress``,
    ``visitor``, ``check``, ``limits`` as for :func:`forward_pass`)."""
    from ..behaviour.run import locate_runnable
    from ..behaviour.runnable import config_layers_heads

    limits = limits or Limits.from_env()
    located = locate_runnable(spec, policy or Policy.from_limits(limits), what="interventions")
    layers, heads = config_layers_heads(located.config)
    if isinstance(layers, int) and isinstance(heads, int):
        request.scope.check_shape(layers, heads, located.display_name)
    return forward_task(InterventionTask(located, request), progress, visitor, check, limits)


def in_server(
    budget: Budget,
    build: Callable[[], T],
    *,
    visitor: str = LOCAL,
    check: Check | None = None,
    limits: Limits | None = None,
) -> T:
    """``build()`` run in this process, on the caller's thread, at ``visitor``'s turn (a slot of
    the server's own lane held while it runs), charged one of its ``budget``: for computations
    bounded by their inputs' sizes (a Theorem 5 sampling, the lobe fits of a model at hand),
    which need no worker of their own. ``check`` may stop the wait for the turn (nothing is
    then charged); once ``build`` starts it runs to its end."""
    limits = limits or Limits.from_env()
    hosting.budgets.check(visitor, budget, limits)
    with hosting.server_slots.hold(visitor, limits, check, what="computations"):
        hosting.budgets.spend(visitor, budget, limits)
        return build()


def _located(spec: str | Located, policy: Policy | None, limits: Limits) -> Located:
    """``spec`` located under ``policy`` (default: the server's, of ``limits``), or as it is."""
    from ..sources import Located, locate

    if isinstance(spec, Located):
        return spec
    return locate(spec, policy or Policy.from_limits(limits))
