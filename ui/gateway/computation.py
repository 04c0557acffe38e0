"""What the gateway computes: one plain value per request, saying what to compute and how, in
this process (:meth:`Computation.local`) or contained by a hosted server
(:meth:`Computation.hosted`).

A computation *kind* is one frozen dataclass subclassing :class:`Computation` in
:mod:`ui.gateway.kinds`; the gateway (:class:`ui.gateway.base.Gateway`) runs any of them the
same way: its cache first, then the result store, then one shared job.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable
from typing import ClassVar, Generic, TypeVar

from headforms.hosted import Check
from headforms.progress import Progress

R = TypeVar("R")


class Computation(ABC, Generic[R]):
    """One computation the dashboard asks for, as a value (a frozen dataclass of its inputs).

    A kind defines :attr:`key` (what the result *is*, by content: the same key is the same
    result, whoever asks and under whatever name), :meth:`local` and :meth:`hosted`; and, when
    the library stores its results, :meth:`stored` (read, never computed). The rest has
    defaults: :attr:`job_key` (what makes two requests one job), :meth:`accepts` and
    :meth:`widened` (a cached result that answers a smaller request, or is merged into a larger
    one), :meth:`answer` (the shared result as this request gets it), :meth:`in_store` and
    :meth:`prepare` (early loading on a private server).
    """

    first_message: ClassVar[str] = "starting"
    """What a job of this kind reports before the computation reports anything."""
    inline: ClassVar[bool] = False
    """Whether a private server runs it on the thread of the caller that starts it (a quick
    computation from results at hand, :class:`~ui.gateway.derived.Derived`) rather than on its
    pool; either way concurrent requests share its one job."""

    @property
    @abstractmethod
    def key(self) -> Hashable:
        """The result's identity by content (a model's fingerprint, the options, a prompt),
        never by name: its key in the gateway's cache."""

    @property
    def job_key(self) -> Hashable:
        """What makes concurrent requests one job (default: :attr:`key`)."""
        return self.key

    def accepts(self, result: R) -> bool:
        """Whether ``result``, cached under :attr:`key`, answers this request."""
        return True

    def widened(self, result: R) -> Computation[R]:
        """This request grown to keep what ``result`` (cached under :attr:`key`, not accepted)
        holds, so the one kept result has everything asked so far (default: unchanged)."""
        return self

    def stored(self) -> R | None:
        """The result if the library has it stored (read now, never computed), else None."""
        return None

    def in_store(self) -> bool:
        """Whether :meth:`stored` would find it (a cheap check; default: no)."""
        return False

    def answer(self, result: R) -> R:
        """``result`` (kept under :attr:`key`, shared by every request of that key) as this
        request gets it: default itself; a forward pass's, named after the model this request
        asked for (a copy: the kept result is never changed)."""
        return result

    def prepare(self) -> None:
        """Load, quietly, what a local run of this computation will need (a model), so that
        it overlaps the drawing of the page; default: nothing."""

    @abstractmethod
    def local(self, progress: Progress) -> R:
        """The result computed in this process (or read from the library's store)."""

    @abstractmethod
    def hosted(self, progress: Progress, check: Check, visitor: str) -> R:
        """The result from :mod:`headforms.hosted`: in its workers, within its limits, at
        ``visitor``'s turn and charged to its budget; ``check`` as in ``hosted.analyze``."""
