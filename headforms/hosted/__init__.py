"""Hosted mode: one server shared with strangers, its policy, limits and workers in one place.

- :mod:`.policy`: what may be opened (:class:`Policy`, handed by the caller to
  :func:`headforms.sources.locate` and :func:`headforms.engine.analyze`; :func:`policy_in_force`
  is this server's, None when ``HEADFORMS_HOSTED`` is off).
- :mod:`.limits`: the limits of the work, from the environment (:class:`Limits`).
- :mod:`.visitors`: who a visitor is (the client's address; a proxy's ``X-Forwarded-For`` only
  from ``HEADFORMS_TRUSTED_PROXIES``).
- :mod:`.budgets`: how many new computations each visitor may start per window.
- :mod:`.slots`: fair turns at the few workers, with a bounded wait.
- :mod:`.workers`: the flights and the worker process: :func:`analyze`, :func:`sweep` (every
  RoPE position at once), :func:`baseline` (in a worker), :func:`forward_pass` (in the model's
  worker, kept loaded between passes), :func:`in_server` (a bounded computation in the server,
  at its turn).
- :mod:`.http`: the server's HTTP rules (host names answered, framing, hidden endpoints), an
  ASGI middleware that ``server.py`` puts around Streamlit.

The engine and the sources never import this package; the dashboard and the command line hand
its policy in and call its workers.
"""

from .limits import Limits
from .policy import Policy, enabled, policy_in_force
from .visitors import LOCAL, client_address, trusted_proxies, visitor_key
from .workers import analyze, baseline, forward_pass, in_server, running, sweep

__all__ = [
    "LOCAL",
    "Limits",
    "Policy",
    "analyze",
    "baseline",
    "client_address",
    "enabled",
    "forward_pass",
    "in_server",
    "policy_in_force",
    "running",
    "sweep",
    "trusted_proxies",
    "visitor_key",
]
