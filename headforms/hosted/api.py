"""Contained computations, as a server asks for them: :func:`analyze`, :func:`sweep`,
:func:`baseline` and :func:`forward_pass` (:func:`forward_task` for any forward-pass task) in
workers, :func:`in_server` for a small bounded computation in the server itself.

Each answers from the result store when it can (no worker, no weights opened, no charge).
Otherwise it checks, in the server and at no charge, everything that can be refused before any
worker starts (the model's estimated memory, a prompt's tokens when the server holds the
model's tokenizer, a sweep of a model without rotation), then runs the computation as a flight
(:mod:`.flights`) at the visitor's turn, charged to the visitor's budget of its kind, and reads
the stored result back. Every outcome is the result or one line.

The limits are read once per call (:meth:`.Limits.from_env`, unless given) and handed down;
what the server keeps between calls (budgets, slots, flights, model workers, the models it
knows) is one :class:`Hosting` value, :data:`hosting`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import LimitError
from ..settings import MEMORY_ENV, human_bytes, settings
from .budgets import Budgets
from .flights import Flights, Progress, result
from .limits import Limits
from .model_facts import KnownModels
from .model_workers import ModelWorkers
from .policy import Policy
from .slots import Slots
from .tasks import (
    AttentionTask,
    BaselineTask,
    EngineTask,
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


@dataclass
class Hosting:
    """What one server process keeps of its hosted work: the visitors' budgets, the slots of
    the workers and of the server's own lane, the model workers, the flights, the models it
    knows (declared sizes, tokenizers held)."""

    budgets: Budgets = field(default_factory=Budgets)
    slots: Slots = field(default_factory=Slots)
    server_slots: Slots = field(default_factory=Slots)
    model_workers: ModelWorkers = field(default_factory=ModelWorkers)
    known: KnownModels = field(default_factory=KnownModels)
    flights: Flights = field(init=False)

    def __post_init__(self) -> None:
        self.flights = Flights(self.budgets, self.slots, self.model_workers)


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
    check: Callable[[], None] | None = None,
    limits: Limits | None = None,
    policy: Policy | None = None,
) -> ModelAnalysis:
    """:func:`headforms.engine.analyze` within the server's policy and limits.

    ``spec``: a spec's text, located here under ``policy`` (default: this server's), or a model
    already located under it, which the worker opens as it is (never located again).
    ``options``: the analysis's options as one value (else made from ``rope_position``,
    ``fold_qk_norm`` and ``spectra``). ``progress(done, total, message)`` relays the flight's
    progress (its wait for a worker, then the worker's). ``check()`` is called every 0.1 s
    while waiting: it may raise to stop waiting (a Streamlit rerun or stop; the flight then goes
    on for :data:`.flights.ABANDON_GRACE` seconds in case someone comes back). A new
    computation is charged to ``visitor`` (refused at once past its budget). A published table
    holds its metrics already: it is read here, no worker needed.
    """
    from .. import engine
    from ..options import AnalysisOptions

    if options is None:
        options = AnalysisOptions(rope_position, fold_qk_norm, tuple(spectra))
    limits = limits or Limits.from_env()
    located = _located(spec, policy, limits)

    def stored() -> Any:
        return engine.stored_analysis(located, options)

    hit = stored()
    if hit is not None:
        if progress:
            progress(hit.card.n_layers, hit.card.n_layers, "loaded from cache")
        return hit
    # More spectra of a model already analysed at these options are not a new analysis (they
    # come from its stored factors, as cheap as a reread): no charge to the visitor.
    core = AnalysisOptions(options.rope_position, options.fold_qk_norm)
    charge = core == options or engine.stored_analysis(located, core) is None
    flight = hosting.flights.run(
        ("analysis", located.fingerprint, options),
        f"the analysis of {located.spec}",
        EngineTask(located, options),
        limits,
        progress,
        check,
        visitor,
        charge,
    )
    return result(flight, stored)


def sweep(
    spec: str | Located,
    options: SweepOptions,
    progress: Progress | None = None,
    *,
    visitor: str = LOCAL,
    check: Callable[[], None] | None = None,
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

    def stored() -> Any:
        return engine.stored_sweep(located, options)

    hit = stored()
    if hit is not None:
        return hit
    _check_sweep(located, options)
    label = f"the sweep of {located.spec} over {len(options.positions)} RoPE positions"
    key = ("sweep", located.fingerprint, options)
    task = EngineTask(located, options)
    return result(hosting.flights.run(key, label, task, limits, progress, check, visitor), stored)


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
    check: Callable[[], None] | None = None,
    limits: Limits | None = None,
) -> Baseline:
    """:func:`headforms.baseline.gaussian_baseline` of ``shapes`` within the limits: read from
    the store, else computed in a worker (its size follows the model's shapes, so it is
    contained like an analysis and charged as one)."""
    from ..baseline import baseline_key, stored_baseline

    def stored() -> Any:
        return stored_baseline(shapes)

    hit = stored()
    if hit is not None:
        return hit
    flight = hosting.flights.run(
        ("baseline", baseline_key(shapes)),
        "the Gaussian baseline",
        BaselineTask(shapes),
        limits or Limits.from_env(),
        progress,
        check,
        visitor,
    )
    return result(flight, stored)


def forward_pass(
    spec: str | Spec | Located,
    prompt: str | None = None,
    probe: tuple[int, int] | None = None,
    progress: Progress | None = None,
    *,
    visitor: str = LOCAL,
    check: Callable[[], None] | None = None,
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
    if prompt is not None:
        prompt = check_prompt(prompt)
    else:
        probe = check_probe(*probe)  # type: ignore[misc]
    limits = limits or Limits.from_env()
    located = locate_runnable(spec, policy or Policy.from_limits(limits))
    task: ForwardTask
    if prompt is not None:
        task = AttentionTask(located, prompt)
    else:
        task = HeadScoresTask(located, *probe)  # type: ignore[misc]
    return forward_task(task, progress, visitor=visitor, check=check, limits=limits)


def forward_task(
    task: ForwardTask,
    progress: Progress | None = None,
    *,
    visitor: str = LOCAL,
    check: Callable[[], None] | None = None,
    limits: Limits | None = None,
) -> Any:
    """A forward-pass task (:class:`.ForwardTask`: its located model already checked for a
    forward pass) within the server's limits: answered from the result store when it can;
    otherwise refused in one line, at no charge, by what the server can tell before any worker
    starts (a model whose estimated forward-pass memory at the token cap passes the memory
    limit; :meth:`.ForwardTask.check`), else run in the model's worker (kept loaded between
    passes) at ``visitor``'s turn and charged as one of its new forward passes (a refusal from
    the worker counts too: the work had begun). ``progress`` and ``check`` as in
    :func:`analyze`."""
    from ..behaviour.runnable import fingerprint

    located = task.located
    model_fingerprint = fingerprint(located)
    key = task.key(model_fingerprint)

    def stored() -> Any:
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
        flight = hosting.flights.run(
            (task.kind, key),
            task.label(),
            task,
            limits,
            progress,
            check,
            visitor,
            budget="forward_passes",
            model=(model_fingerprint, need),
            cost=task.cost(facts),
        )
        hit = result(flight, stored)
    hit.model = located.spec
    return hit


def intervention(
    spec: str | Spec | Located,
    request: InterventionRequest,
    progress: Progress | None = None,
    *,
    visitor: str = LOCAL,
    check: Callable[[], None] | None = None,
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

    request = request.checked()
    limits = limits or Limits.from_env()
    located = locate_runnable(spec, policy or Policy.from_limits(limits), what="interventions")
    layers, heads = config_layers_heads(located.config)
    if isinstance(layers, int) and isinstance(heads, int):
        request.scope.check_shape(layers, heads, located.display_name)
    task = InterventionTask(located, request.as_dict())
    return forward_task(task, progress, visitor=visitor, check=check, limits=limits)


def in_server(
    kind: str,
    build: Callable[[], T],
    *,
    visitor: str = LOCAL,
    check: Callable[[], None] | None = None,
    limits: Limits | None = None,
) -> T:
    """``build()`` run in this process at ``visitor``'s turn (a slot held while it runs),
    charged to its ``kind`` budget: for computations bounded by their inputs' sizes (a Theorem 5
    sampling), which need no worker of their own."""
    limits = limits or Limits.from_env()
    hosting.budgets.check(visitor, kind, limits)
    with hosting.server_slots.hold(visitor, limits, check, what="computations"):
        hosting.budgets.spend(visitor, kind, limits)
        return build()


def _located(spec: str | Located, policy: Policy | None, limits: Limits) -> Located:
    """``spec`` located under ``policy`` (default: the server's, of ``limits``), or as it is."""
    from ..sources import Located, locate

    if isinstance(spec, Located):
        return spec
    return locate(spec, policy or Policy.from_limits(limits))
