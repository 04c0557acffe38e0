"""The computation gateway: one seam between the dashboard and the library's computations.

No Streamlit in this package (its tests use fake computations); :mod:`ui.compute` holds the one
instance for the server (chosen at start-up: :class:`LocalGateway`, or :class:`HostedGateway`
when ``HEADFORMS_HOSTED`` is on) and draws progress while it works.

- :mod:`.computation`: :class:`Computation`, what one request says (key, local, hosted, ...).
- :mod:`.kinds`: the kinds the library computes in its workers when hosted (analysis, Gaussian
  baseline, RoPE sweep, attention pattern of a prompt, head-type scores of a probe, an
  intervention, a score split, an intervention study, the demo, a training run's records).
- :mod:`.derived`: the kinds computed from results at hand, in the server (:class:`Derived`:
  fits, clusterings, projections, summaries, bootstrap intervals, Theorem 5 samplings, parity
  changes along a path).
- :mod:`.base`: :class:`Gateway`: the cache, the job table, the waiting with progress. Its job
  table is the one place a computation is shared between sessions, hosted or not
  (:mod:`headforms.hosted` runs one computation per call and shares nothing).
- :mod:`.cache`: :class:`ResultCache`: by content, bounded in bytes in all and per visitor.
- :mod:`.local`, :mod:`.hosted`: how a job runs on a private server and on a hosted one (a
  hosted job nobody waited for during :data:`.hosted.ABANDON_GRACE` seconds is let go).

Adding a kind of computation
----------------------------
One frozen dataclass whose fields are its inputs, exported here (``__all__``) and named in its
module's doc, with a test (``tests/unit/ui/test_kinds.py`` checks all of this for every kind):

*Computed from results at hand* (a model's analysis, a sweep, scores: no weights read), in
:mod:`.derived`, subclassing ``Derived[ResultType]``:

- fields: the results it is computed from (``field(compare=False)``) and plain values;
- ``key``: what the result *is*, by content: the models by :func:`of_model` (their weights'
  fingerprint, RoPE position, folding), never by a name a visitor typed, unless the result
  shows that name (then the name is part of the key);
- ``compute()``: the library's functions (import scikit-learn or scipy users inside it);
- ``what``: what it is, for the line a waiting page shows; ``budget`` if it is not a summary
  (``Budget.SUMMARIES``, ``HEADFORMS_VISITOR_SUMMARIES``); checks of its inputs in
  ``__post_init__`` (a one-line ``HeadformsError``, before any work);
- an entry in ``EXAMPLES`` of ``tests/unit/ui/test_kinds.py`` (one request and the library's
  own result): it is then run through both gateways there.

It runs in the server: on a private one on the thread of the caller that starts it (its job
shared all the same), on a hosted one at the visitor's turn in the server's own lane, charged
one of its budget. Pages ask ``ui.compute.derive(Kind(...))``.

*Computed by the library's engine or a forward pass* (weights read), in :mod:`.kinds`,
subclassing ``Computation[ResultType]``:

- ``key``: what the result *is*, by content (``("loss", model_fingerprint, edit, text)``): the
  cache shares it between sessions and visitors, so never a name a visitor typed;
- ``local(progress)``: the library's function, in this process (``progress(done, total,
  message)`` as the library reports it);
- ``hosted(progress, check, visitor)``: the public function of :mod:`headforms.hosted` that
  contains it (a forward-pass-like computation: ``hosted.forward_task(SomeTask(...), progress,
  visitor, check)`` with a ``ForwardTask`` of its own, :mod:`headforms.hosted.tasks`); pass
  ``check`` and ``visitor`` on: they stop an abandoned job and charge the visitor;
- ``stored()`` (and ``in_store()``) when the library keeps its results in the result store;
  ``answer(result)`` when each request gets the shared result its own way (a forward pass's
  named after the model asked for: ``result.named(spec)``, a copy); checks of the inputs in
  ``__post_init__``;
- ``first_message`` if "starting" does not fit, ``job_key``/``accepts``/``widened`` only if one
  kept result answers several requests (as an analysis keeps every spectrum asked so far), and
  ``prepare`` (see :class:`_ForwardPass`) if a local run should load its model early;
- a test module of its own that uses it (``tests/integration/ui/test_worker_kinds.py``).

Pages then ask ``ui.compute.run(Kind(...), ProgressBar(...))`` (or a helper in the page's own
``ui`` module, as :func:`ui.behaviour.attention_pattern` does for patterns). The result must be
plain data (arrays, tables, frozen dataclasses), never changed once made: it is shared by every
session that asks, and kept within the cache's bytes.
"""

from .base import POLL_S, Abandoned, Gateway, Job
from .cache import ResultCache
from .computation import Computation
from .derived import (
    Changes,
    Clustered,
    Derived,
    Fitted,
    GeometryCorrelation,
    GeometryCorrelations,
    Movement,
    Observation3Fits,
    Observation6,
    Observation6Fits,
    ObservationSummaries,
    ParityChanges,
    Projected,
    SilhouetteScan,
    SpectraClusters,
    SpectralGeometry,
    SpectraProjection,
    Summaries,
    Theorem5Samples,
    of_model,
)
from .hosted import HostedGateway
from .kinds import (
    Analysis,
    DemoBuild,
    GaussianBaseline,
    Intervention,
    InterventionStudy,
    ProbeScores,
    PromptAttention,
    RopeSweep,
    RunRecords,
    WhyAttends,
)
from .local import LocalGateway

__all__ = [
    "POLL_S",
    "Abandoned",
    "Analysis",
    "Changes",
    "Clustered",
    "Computation",
    "DemoBuild",
    "Derived",
    "Fitted",
    "GaussianBaseline",
    "Gateway",
    "GeometryCorrelation",
    "GeometryCorrelations",
    "HostedGateway",
    "Intervention",
    "InterventionStudy",
    "Job",
    "LocalGateway",
    "Movement",
    "Observation3Fits",
    "Observation6",
    "Observation6Fits",
    "ObservationSummaries",
    "ParityChanges",
    "ProbeScores",
    "Projected",
    "PromptAttention",
    "ResultCache",
    "RopeSweep",
    "RunRecords",
    "SilhouetteScan",
    "SpectraClusters",
    "SpectralGeometry",
    "SpectraProjection",
    "Summaries",
    "Theorem5Samples",
    "WhyAttends",
    "of_model",
]
