"""What a caller lets a spec open: the policy is handed in, never decided here.

:mod:`headforms.sources` applies a :class:`Policy` (a shared server's,
:mod:`headforms.hosted.policy`; this package never imports it) at four points, each before
anything it guards is read: :meth:`~Policy.check_text` on the spec's text (before it is
classified; a spec is then classified by its text alone, never by testing which files exist),
:meth:`~Policy.check_spec` on the classified spec, :meth:`~Policy.path_guard` on every local
path before it is opened, and :meth:`~Policy.check_located` on the files found (sizes, real
paths), which returns them with the policy's download budget and confinement. No policy (None):
everything may be opened.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .located import Located
    from .specs import Spec

Guard = Callable[[Path], None]
"""Called with every path before it is opened (a policy's: refuses paths outside its roots)."""


def allow(path: Path) -> None:
    """The guard when no policy applies: every path may be opened."""


class Policy(Protocol):
    """What a caller's policy does while a model is located (see the module doc)."""

    max_index_bytes: int
    """Largest shard index parsed."""
    max_hub_files: int
    """Most top-level files of a hub repository listed."""

    def check_text(self, text: str) -> None:
        """Refuse the spec's text (before it is classified)."""

    def check_spec(self, spec: Spec) -> None:
        """Refuse the classified spec (before anything is looked up)."""

    def path_guard(self, spec: str) -> Guard:
        """The guard called with every local path of ``spec`` before it is opened."""

    def check_located(self, located: Located) -> Located:
        """Refuse the located files, or return them with the policy's budget and confinement."""
