"""Hosted mode: one server shared with strangers, its policy, limits and workers in one place.

Each module does one thing:

- :mod:`.limits`: every hosted-only setting, read once per request into one value
  (:class:`Limits`; the variables' names and defaults are listed in :mod:`headforms.settings`).
- :mod:`.policy`: what may be opened (:class:`Policy`, handed by the caller to
  :func:`headforms.sources.locate` and :func:`headforms.engine.analyze`; :func:`policy_in_force`
  is this server's, None when ``HEADFORMS_HOSTED`` is off).
- :mod:`.visitors`: who a visitor is (the connection's address; behind a proxy listed in
  ``HEADFORMS_TRUSTED_PROXIES``, the rightmost address of ``X-Forwarded-For`` not a trusted
  proxy).
- :mod:`.budgets`: how many new computations of each kind (:class:`Budget`) a visitor may start
  per window.
- :mod:`.slots`: fair turns at the few workers, with a bounded wait.
- :mod:`.tasks`: what a worker can be asked (typed tasks, one class per :class:`TaskKind`);
  :mod:`.messages`: what a worker answers and how a computation ended (typed, with enums).
- :mod:`.child`: the worker process itself (``python -m headforms.hosted``): its limits, its
  loop over tasks. :mod:`.process`: a worker process as the server holds it.
- :mod:`.runs`: one contained computation on its caller's thread (a :class:`~.runs.RunRequest`:
  its charge, its turn, its worker, stopped past its limits, when cancelled or when the
  caller's ``check`` raises; charges given back when no worker was asked). Nothing here shares
  a computation between callers: the dashboard's gateway (``ui/gateway``) does, once, for both
  private and hosted servers.
- :mod:`.model_workers`: workers kept loaded per model (by the model's own size) between forward
  passes, patterns, scores and interventions alike.
- :mod:`.model_facts`: what the server knows of a model before any worker starts (declared
  heads, shapes, vocabulary and memory, the tokenizers it holds), so that what it can refuse
  costs nothing.
- :mod:`.api`: what a server calls: :func:`analyze`, :func:`sweep` (every RoPE position at
  once), :func:`baseline`, :func:`forward_pass` (in the model's worker), :func:`forward_task`
  (any forward-pass task), :func:`intervention`, :func:`in_server` (a bounded computation in the
  server, at its turn), :func:`running`.
- :mod:`.command`: the command line in hosted mode: each command in a contained child, stopped
  past ``HEADFORMS_ANALYSIS_SECONDS`` of wall-clock time or its memory.
- :mod:`.http`: the server's HTTP rules (host names answered, framing, hidden endpoints), an
  ASGI middleware that ``server.py`` puts around Streamlit.

**A new kind of forward pass** (e.g. an intervention: edit a head's form, measure the model's
loss) runs like an attention pattern, in the model's contained worker, with no change outside
:mod:`.tasks` and the caller:

1. add a member to :class:`TaskKind` and a frozen dataclass subclassing
   ``ForwardTask[ResultType]`` to :mod:`.tasks` (fields: ``located`` first, then plain JSON
   values or values with ``as_dict``/``from_dict``; its ``kind``), with ``key(fingerprint)``
   (its store key), ``stored(key)`` (its stored result or None), ``label()`` (what it is, for a
   message), ``check(model, limits)`` (its refusals before any worker: ``model.check_text(prompt,
   "the prompt")`` for its tokens, its own bound on heads x passes, in one line; a refusal there
   costs the visitor nothing), ``memory(model)`` if its peak is not a pattern's, and
   ``run(report)`` (in the worker: compute with the model loaded and store under the same key);
   its result a frozen dataclass with ``model`` and ``named(model)`` (:class:`ForwardResult`);
   list it in :data:`.tasks.TASKS`;
2. call :func:`forward_task` with it (or a small wrapper beside :func:`forward_pass`).

It is then charged as :meth:`ForwardTask.cost` of the visitor's new forward passes
(``HEADFORMS_VISITOR_FORWARD_PASSES``; a refusal from the worker counts, the work had begun),
refused before any worker when its estimated memory passes ``HEADFORMS_ANALYSIS_MEMORY``, runs at
the visitor's turn, within ``HEADFORMS_ANALYSIS_SECONDS`` per task (the worker's CPU limit is
renewed per task, its memory limit holds for its life) and its result is read back from the
store, named after the model the caller asked for.

The engine and the sources never import this package; the dashboard and the command line hand
its policy in and call its functions.
"""

from .api import (
    analyze,
    baseline,
    forward_pass,
    forward_task,
    in_server,
    intervention,
    model_worker_pids,
    running,
    sweep,
)
from .budgets import Budget
from .limits import Limits
from .policy import Policy, enabled, policy_in_force
from .runs import Check
from .tasks import (
    AttentionTask,
    ForwardResult,
    ForwardTask,
    HeadScoresTask,
    InterventionTask,
    TaskKind,
)
from .visitors import LOCAL, client_address, trusted_proxies, visitor_key

__all__ = [
    "LOCAL",
    "AttentionTask",
    "Budget",
    "Check",
    "ForwardResult",
    "ForwardTask",
    "HeadScoresTask",
    "InterventionTask",
    "Limits",
    "Policy",
    "TaskKind",
    "analyze",
    "baseline",
    "client_address",
    "enabled",
    "forward_pass",
    "forward_task",
    "in_server",
    "intervention",
    "model_worker_pids",
    "policy_in_force",
    "running",
    "sweep",
    "trusted_proxies",
    "visitor_key",
]
