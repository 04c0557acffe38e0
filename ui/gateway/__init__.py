"""The computation gateway: one seam between the dashboard and the library's computations.

No Streamlit in this package (its tests use fake computations); :mod:`ui.compute` holds the one
instance for the server (chosen at start-up: :class:`LocalGateway`, or :class:`HostedGateway`
when ``HEADFORMS_HOSTED`` is on) and draws progress while it works.

- :mod:`.computation`: :class:`Computation`, what one request says (key, local, hosted, ...).
- :mod:`.kinds`: the kinds the dashboard asks for (analysis, Gaussian baseline, RoPE sweep,
  attention pattern of a prompt, head-type scores of a probe, an intervention).
- :mod:`.base`: :class:`Gateway`: the cache, the job table, the waiting with progress.
- :mod:`.cache`: :class:`ResultCache`: by content, bounded in bytes in all and per visitor.
- :mod:`.local`, :mod:`.hosted`: how a job runs on a private server and on a hosted one.

Adding a kind of computation
----------------------------
One frozen dataclass in :mod:`.kinds` whose fields are its inputs (a ``Located`` model, options,
a prompt: plain values), subclassing ``Computation[ResultType]``:

- ``key``: what the result *is*, by content (``("loss", model_fingerprint, edit, text)``): the
  cache shares it between sessions and visitors, so never a name a visitor typed;
- ``local(progress)``: the library's function, in this process (``progress(done, total,
  message)`` as the library reports it);
- ``hosted(progress, check, visitor)``: the public function of :mod:`headforms.hosted` that
  contains it (a forward-pass-like computation runs in the model's worker; pass ``check`` and
  ``visitor`` on: they stop an abandoned job and charge the visitor);
- ``stored()`` (and ``in_store()``) when the library keeps its results in the result store;
  checks of the inputs in ``__post_init__`` (a one-line ``HeadformsError``, before any work);
- ``first_message`` if "starting" does not fit, ``job_key``/``accepts``/``widened`` only if one
  kept result answers several requests (as an analysis keeps every spectrum asked so far), and
  ``prepare`` (see :class:`_ForwardPass`) if a local run should load its model early.

Pages then ask ``ui.compute.run(Kind(...), ProgressBar(...))`` (or a helper in the page's own
``ui`` module, as :func:`ui.behaviour.attention_pattern` does for patterns); a shorthand method
on :class:`Gateway` is optional. The result must be plain data (arrays, tables, dataclasses):
it is shared by every session that asks, and kept within the cache's bytes.
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
    ProbeScores,
    PromptAttention,
    RopeSweep,
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
    "SilhouetteScan",
    "SpectraClusters",
    "SpectralGeometry",
    "SpectraProjection",
    "Summaries",
    "Theorem5Samples",
    "of_model",
]
