"""What a worker can be asked to compute: one typed task per :class:`TaskKind`.

A task is a frozen dataclass of plain values (a located model, its options), sent to a worker
as one JSON line (:meth:`Task.encode`, decoded there by :func:`decode_task`) and run there by
its own :meth:`Task.run`, which computes its result and stores it (the server reads it back
from the store). No dispatch on strings: the kind names the class (:data:`TASKS`).

Forward passes are :class:`ForwardTask`\\ s: they run in the model's worker (kept loaded
between passes), are charged as the visitor's forward passes, and say what they need before
any worker starts: their store key, how to read a stored result, and :meth:`ForwardTask.check`,
the refusals a server can decide from what it knows of the model (:class:`.ModelFacts`: its
declared heads, its tokenizer once an earlier pass converted it). A new kind of forward pass
(an intervention on a head's form, say) is one more subclass here and one more
:class:`TaskKind`; :func:`headforms.hosted.forward_task` then runs it contained, within the
same limits (the package doc says how).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, is_dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, Self, TypeVar

from ..options import AnalysisOptions, SweepOptions
from ..progress import Progress
from ..sources import Located

if TYPE_CHECKING:
    from ..architectures import Shapes
    from ..behaviour import AttentionPattern, HeadTypeScores
    from ..interventions import InterventionRequest, InterventionResult
    from ..why import WhyRequest, WhyResult
    from .limits import Limits
    from .model_facts import ModelFacts

Report = Progress
"""``report(done, total, message)``: a task's progress, relayed to whoever waits for it."""


class ForwardResult(Protocol):
    """What a forward pass gives back (a frozen dataclass), named after the model asked for."""

    @property
    def model(self) -> str: ...

    def named(self, model: str) -> Self:
        """The same result named ``model`` (a copy; the arrays shared)."""
        ...


R = TypeVar("R", bound=ForwardResult)


class TaskKind(Enum):
    """The kinds of task a worker runs (each the ``kind`` of one class of :data:`TASKS`)."""

    ENGINE = "engine"
    BASELINE = "baseline"
    ATTENTION = "attention"
    HEAD_SCORES = "head_scores"
    INTERVENTION = "intervention"
    WHY = "why"


class Task(ABC):
    """One computation for a worker (see the module doc)."""

    kind: ClassVar[TaskKind]

    @abstractmethod
    def run(self, report: Report) -> None:
        """Compute the result and store it (in the worker)."""

    @property
    def hub_repo(self) -> str | None:
        """The hub repository its files may be downloaded from (the hub cache is evicted to its
        bound after the task, never this repository)."""
        return None

    @property
    def mapped_bytes(self) -> int:
        """Bytes the worker maps privately beyond its memory limit (a ``.bin`` checkpoint)."""
        return 0

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON (a located model as :meth:`Located.as_dict`, options as theirs)."""
        if not is_dataclass(self):
            raise TypeError(f"{type(self).__name__} is not a dataclass")
        out = {}
        for field in fields(self):
            value = getattr(self, field.name)
            out[field.name] = value.as_dict() if hasattr(value, "as_dict") else value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Task:
        """The task of :meth:`as_dict` (a located model opened as it is, never located again)."""
        values = dict(data)
        if "located" in values:
            values["located"] = Located.from_dict(values["located"])
        return cls(**values)

    def encode(self) -> bytes:
        """The task as one line for a worker."""
        return json.dumps({"kind": self.kind.value, "task": self.as_dict()}).encode() + b"\n"


def decode_task(line: bytes | str) -> Task:
    """The task of one line (:meth:`Task.encode`)."""
    data = json.loads(line)
    return TASKS[TaskKind(data["kind"])].from_dict(data["task"])


class _OfModel:
    """A task of one located model (mixed into tasks with a ``located`` field)."""

    located: Located

    @property
    def hub_repo(self) -> str | None:
        hub = self.located.hub
        return hub.repo_id if hub is not None else None

    @property
    def mapped_bytes(self) -> int:
        # torch maps a .bin file privately and writably: RLIMIT_DATA counts it whole
        return (self.located.weight_bytes or 0) if self.located.format == "bin" else 0


@dataclass(frozen=True)
class EngineTask(_OfModel, Task):
    """The engine's computation of a located model at ``options``: its analysis
    (:func:`headforms.engine.analyze`, :class:`AnalysisOptions`) or its sweep over RoPE positions
    (:func:`headforms.engine.sweep`, :class:`SweepOptions`); the options say which."""

    kind: ClassVar[TaskKind] = TaskKind.ENGINE
    located: Located
    options: AnalysisOptions | SweepOptions

    @property
    def sweep(self) -> bool:
        """Whether it is a sweep (else an analysis at one position)."""
        return isinstance(self.options, SweepOptions)

    def as_dict(self) -> dict[str, Any]:
        what = "sweep" if self.sweep else "analysis"
        return {"located": self.located.as_dict(), what: self.options.as_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EngineTask:
        located = Located.from_dict(data["located"])
        if "sweep" in data:
            return cls(located, SweepOptions.from_dict(data["sweep"]))
        return cls(located, AnalysisOptions.from_dict(data["analysis"]))

    def run(self, report: Report) -> None:
        from .. import engine

        if isinstance(self.options, SweepOptions):
            engine.sweep(self.located, options=self.options, progress=report)
        else:
            engine.analyze(self.located, options=self.options, progress=report)


@dataclass(frozen=True)
class BaselineTask(Task):
    """:func:`headforms.baseline.gaussian_baseline` of a model's shapes."""

    kind: ClassVar[TaskKind] = TaskKind.BASELINE
    shapes: Shapes

    def as_dict(self) -> dict[str, Any]:
        return {"shapes": asdict(self.shapes)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BaselineTask:
        from ..architectures import Shapes

        return cls(Shapes(**data["shapes"]))

    def run(self, report: Report) -> None:
        from ..baseline import gaussian_baseline

        report(0, 1, "Gaussian baseline of the same shapes")
        gaussian_baseline(self.shapes)


class ForwardTask(_OfModel, Task, Generic[R]):
    """A forward pass of one located model, run in its model worker (see the module doc),
    whose result is an ``R`` (a frozen dataclass named after its model).

    A subclass is a frozen dataclass whose first field is ``located`` (already checked for a
    forward pass: :func:`headforms.behaviour.locate_runnable`) and whose other fields are plain
    JSON values (or values with ``as_dict``/``from_dict``), with a :class:`TaskKind` of its
    own."""

    located: Located

    @abstractmethod
    def key(self, fingerprint: str) -> str:
        """Its result's store key, given the model's forward-pass fingerprint
        (:func:`headforms.behaviour.runnable.fingerprint`)."""

    @abstractmethod
    def stored(self, key: str) -> R | None:
        """Its stored result under ``key``, or None (read by the server: no model needed)."""

    def named(self, result: R) -> R:
        """``result`` named after this task's model (a copy: a stored or shared result is never
        changed; its arrays are shared, not copied)."""
        return result.named(self.located.spec)

    @abstractmethod
    def label(self) -> str:
        """What it is, for a visitor's message (``the forward pass of X on the prompt``)."""

    what: ClassVar[str] = "a forward pass"
    """What it is in a refusal (``... too large to run on this server: a forward pass needs``)."""

    def check(self, model: ModelFacts, limits: Limits) -> None:
        """Refuse in one line what can be refused before any worker starts, from what the
        server knows of ``model`` (a refusal then costs the visitor nothing). The worker checks
        again, exactly, with the model loaded."""

    def memory(self, model: ModelFacts) -> int | None:
        """Its estimated peak memory (default: a forward pass at the token cap); None: not
        known."""
        return model.memory

    def cost(self, model: ModelFacts) -> int:
        """How many of the visitor's forward passes it counts as (default: one)."""
        return 1

    @property
    def mapped_bytes(self) -> int:
        # a pass reads every shard: a .bin checkpoint's whole size is mapped
        return (self.located.forward_bytes or 0) if self.located.format == "bin" else 0


@dataclass(frozen=True)
class AttentionTask(ForwardTask["AttentionPattern"]):
    """Every head's attention on a prompt (:func:`headforms.behaviour.attention`)."""

    kind: ClassVar[TaskKind] = TaskKind.ATTENTION
    located: Located
    prompt: str

    def key(self, fingerprint: str) -> str:
        from ..behaviour import cache

        return cache.pattern_key(fingerprint, self.prompt)

    def stored(self, key: str) -> AttentionPattern | None:
        from ..behaviour import cache
        from ..store import ResultStore

        return cache.get_pattern(ResultStore(), key)

    def label(self) -> str:
        return f"the forward pass of {self.located.spec} on the prompt"

    def check(self, model: ModelFacts, limits: Limits) -> None:
        model.check_text(self.prompt, "the prompt")

    def run(self, report: Report) -> None:
        from .. import behaviour

        behaviour.attention(self.located, self.prompt, progress=report)


@dataclass(frozen=True)
class HeadScoresTask(ForwardTask["HeadTypeScores"]):
    """Every head's head-type scores on the seeded repeated-token probe of ``probe_length``
    tokens per copy (:func:`headforms.behaviour.head_type_scores`)."""

    kind: ClassVar[TaskKind] = TaskKind.HEAD_SCORES
    located: Located
    probe_length: int
    seed: int

    def key(self, fingerprint: str) -> str:
        from ..behaviour import cache

        return cache.scores_key(fingerprint, self.probe_length, self.seed)

    def stored(self, key: str) -> HeadTypeScores | None:
        from ..behaviour import cache
        from ..store import ResultStore

        return cache.get_scores(ResultStore(), key)

    def label(self) -> str:
        return f"the head-type scores of {self.located.spec}"

    def check(self, model: ModelFacts, limits: Limits) -> None:
        model.check_tokens(2 * self.probe_length, "the probe")  # two copies, at least

    def run(self, report: Report) -> None:
        from .. import behaviour

        behaviour.head_type_scores(
            self.located,
            probe_length=self.probe_length,
            seed=self.seed,
            progress=report,
        )


PASSES_PER_CHARGE = 10
"""Sequence passes of an intervention that count as one of the visitor's forward passes (an
edited sequence runs from its edited layer up, so ten cost about what a few full passes do)."""
ANATOMY_BYTES_PER_WEIGHT = 12
"""Bytes an intervention keeps per Q/K weight of the model (every layer's factors, read as
float32 and widened to float64 for the forms it edits)."""
ACTIVATION_BYTES_PER_STATE = 64
"""Bytes of one layer's working tensors per token and per unit of the model dim, for each
sequence of an edited batch (its hidden states, projections and MLP, float32)."""
MEASURE_LOGITS = 4
"""Chunks of logits (:data:`headforms.interventions.measures.LOGIT_BYTES` each) alive at once
while an edited batch is measured."""


@dataclass(frozen=True)
class InterventionTask(ForwardTask["InterventionResult"]):
    """An intervention on heads' forms (:func:`headforms.interventions.intervention`) of a
    checked ``request`` (parsed once: sent as its ``as_dict``, read back by ``from_dict``).
    Bounded in tokens (the request's check), sequence passes (``HEADFORMS_INTERVENTION_PASSES``,
    from the model's declared heads before any worker) and seconds (the worker's limit); charged
    one forward pass per :data:`PASSES_PER_CHARGE` sequence passes."""

    kind: ClassVar[TaskKind] = TaskKind.INTERVENTION
    what: ClassVar[str] = "an intervention"
    located: Located
    request: InterventionRequest

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InterventionTask:
        from ..interventions import InterventionRequest

        located = Located.from_dict(data["located"])
        return cls(located, InterventionRequest.from_dict(data["request"]))

    def key(self, fingerprint: str) -> str:
        from ..interventions import intervention_key

        return intervention_key(fingerprint, self.request)

    def stored(self, key: str) -> InterventionResult | None:
        from ..interventions import result
        from ..store import ResultStore

        return result.get(ResultStore(), key)

    def label(self) -> str:
        request = self.request
        return f"the {request.edit} edit of {request.scope.label} of {self.located.spec}"

    def passes(self, model: ModelFacts) -> int | None:
        """Its sequence passes, from the model's declared heads (a layer or parity group edited
        head by head: counted as every head, an upper bound); None when not declared."""
        request = self.request
        if request.scope.kind == "heads":
            return request.passes(len(request.scope.heads))
        if not request.each:
            return request.passes(1)
        return None if model.heads_all is None else request.passes(model.heads_all)

    def check(self, model: ModelFacts, limits: Limits) -> None:
        from ..errors import LimitError
        from ..settings import INTERVENTION_PASSES_ENV

        request = self.request
        model.check_tokens(request.max_tokens, "the text")
        if request.probe_length is not None:
            model.check_tokens(2 * request.probe_length, "the probe")
        passes = self.passes(model)
        if passes is not None and passes > limits.intervention_passes:
            raise LimitError(
                f"{self.label()} takes {passes} sequence passes; this server runs at most "
                f"{limits.intervention_passes} per intervention ({INTERVENTION_PASSES_ENV}): "
                "fewer heads or controls"
            )

    def memory(self, model: ModelFacts) -> int | None:
        """The model and its unedited pass of the request's tokens (every head's attention
        recorded, as a pattern's), the unedited passes kept, the anatomy's factors, one layer of
        an edited batch at a time, and the measures' logits (chunks of the vocabulary, the
        unedited next-token probabilities and their logarithm). Measured on SmolLM2 at 128
        tokens: a peak of 1.54 GiB (one head, 8 controls, the probe) to 1.62 GiB (every head
        alone) against 1.76 GiB here (benchmarks/README.md)."""
        from ..behaviour.runnable import ATTENTION_BYTES_PER_WEIGHT
        from ..interventions.measures import LOGIT_BYTES
        from ..interventions.passes import BATCH, CLEAN_PASS_BYTES

        request, shapes = self.request, model.shapes
        tokens = max(request.max_tokens, 2 * (request.probe_length or 0))
        clean = model.pass_memory(tokens)
        if clean is None or shapes is None or model.vocab is None:
            return None
        qk_weights = shapes.n_layers * (shapes.n_heads + shapes.n_kv_heads) * shapes.head_dim
        anatomy = ANATOMY_BYTES_PER_WEIGHT * qk_weights * shapes.model_dim
        attention = ATTENTION_BYTES_PER_WEIGHT * shapes.n_heads * tokens * tokens
        states = ACTIVATION_BYTES_PER_STATE * tokens * shapes.model_dim
        logits = MEASURE_LOGITS * LOGIT_BYTES + 3 * 4 * tokens * model.vocab
        return clean + CLEAN_PASS_BYTES + anatomy + BATCH * (attention + states) + logits

    def cost(self, model: ModelFacts) -> int:
        passes = self.passes(model) or 1
        return max(1, -(-passes // PASSES_PER_CHARGE))

    def run(self, report: Report) -> None:
        from ..interventions import InterventionLimits, intervention
        from .limits import Limits

        limits = Limits.from_env()
        intervention(
            self.located,
            self.request,
            progress=report,
            limits=InterventionLimits(limits.intervention_passes, limits.seconds),
        )


HEADS_PER_CHARGE = 30
"""Heads of a score split that count as one of the visitor's forward passes (each head is a
few hundred ``2n x 2n`` eigenproblems at 128 tokens: thirty cost about what a few passes do)."""


@dataclass(frozen=True)
class WhyTask(ForwardTask["WhyResult"]):
    """A score split of heads' scores on a text (:func:`headforms.why.why`) of a checked
    ``request`` (parsed once: sent as its ``as_dict``, read back by ``from_dict``). Bounded in
    tokens (the request's check) and seconds (the worker's limit); charged one forward pass per
    :data:`HEADS_PER_CHARGE` heads."""

    kind: ClassVar[TaskKind] = TaskKind.WHY
    what: ClassVar[str] = "a score split"
    located: Located
    request: WhyRequest

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WhyTask:
        from ..why import WhyRequest

        return cls(Located.from_dict(data["located"]), WhyRequest.from_dict(data["request"]))

    def key(self, fingerprint: str) -> str:
        from ..why import why_key

        return why_key(fingerprint, self.request)

    def stored(self, key: str) -> WhyResult | None:
        from ..store import ResultStore
        from ..why import result

        return result.get(ResultStore(), key)

    def label(self) -> str:
        return f"the score split of {self.request.scope.label} of {self.located.spec}"

    def check(self, model: ModelFacts, limits: Limits) -> None:
        model.check_tokens(self.request.max_tokens, "the text")

    def cost(self, model: ModelFacts) -> int:
        scope = self.request.scope
        heads = len(scope.heads) if scope.kind == "heads" else (model.heads_all or 1)
        return max(1, -(-heads // HEADS_PER_CHARGE))

    def run(self, report: Report) -> None:
        from ..why import why

        why(self.located, self.request, progress=report)


TASKS: dict[TaskKind, type[Task]] = {
    cls.kind: cls
    for cls in (
        EngineTask,
        BaselineTask,
        AttentionTask,
        HeadScoresTask,
        InterventionTask,
        WhyTask,
    )
}
"""The class of each kind of task (how a worker decodes the line it is asked)."""
