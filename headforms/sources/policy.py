"""What a caller lets a spec open: the policy is handed in, never decided here.

:mod:`headforms.sources` applies a :class:`Policy` at four points, each before anything it
guards is read: :meth:`~Policy.check_text` on the spec's text (before it is classified),
:meth:`~Policy.check_spec` on the classified spec, :meth:`~Policy.guard` on every local path
before it is opened, and :meth:`~Policy.check_located` on the files found (sizes, real paths).
:data:`OPEN` allows everything (a private run); a shared server hands in its own (hosted mode,
:class:`headforms.sources.hosted.Policy`), chosen by the caller from the settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .located import Located
    from .specs import Spec

Guard = Callable[[Path], None]
"""Called with every path before it is opened; raises to refuse it."""


class Policy(Protocol):
    """What may be opened. ``probe_paths``: a bare relative name may be tested for existence
    while a spec is classified (a shared server must not answer strangers that question);
    ``confined``: no file beyond the located ones may be read (e.g. other shards' headers);
    ``download_budget``: bytes a hub download may take (None: no limit)."""

    probe_paths: bool
    confined: bool

    @property
    def download_budget(self) -> int | None: ...

    def check_text(self, text: str) -> None: ...

    def check_spec(self, spec: Spec) -> None: ...

    def guard(self, spec: Spec) -> Guard: ...

    def check_located(self, located: Located) -> None: ...


def allow(path: Path) -> None:
    """The guard of a policy that allows every path."""


@dataclass(frozen=True)
class OpenPolicy:
    """Everything may be opened (a private run: the command line, a library call)."""

    probe_paths: bool = True
    confined: bool = False

    @property
    def download_budget(self) -> int | None:
        """No download limit."""
        return None

    def check_text(self, text: str) -> None:
        """Any text may be classified."""

    def check_spec(self, spec: Spec) -> None:
        """Any spec may be located."""

    def guard(self, spec: Spec) -> Guard:
        """Every path may be opened."""
        return allow

    def check_located(self, located: Located) -> None:
        """Any located model may be opened."""


OPEN = OpenPolicy()
