"""The one threading rule of every computation: layers in parallel, BLAS on one thread each.

On a machine that others share (a hosted server, a survey beside other jobs, a CI runner),
multi-threaded BLAS degrades badly: its threads meet at barriers after every small operation,
and one descheduled thread stalls the rest (measured here: the Gaussian baseline of Gemma-3's
shapes took 5.4 s with one BLAS thread but 18.7 s with two beside two busy processes, against
3.4-3.7 s quiet either way). So BLAS is held to one thread per worker thread everywhere, and the
parallelism comes from running independent layers on ``threads`` worker threads (numpy releases
the GIL in LAPACK; the many small ``2n x 2n`` problems of a layer keep a core busy on their own).
Nothing waits for a descheduled peer: a loaded machine slows the work in proportion to the
share of the cores it gets, no more.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from .progress import Progress
from .settings import settings

T = TypeVar("T")


def ordered_layers(
    n_layers: int,
    work: Callable[[int], T],
    progress: Progress | None = None,
    threads: int | None = None,
) -> Iterator[tuple[int, T]]:
    """``(layer, work(layer))`` in layer order, on ``threads`` worker threads (default
    ``$HEADFORMS_THREADS``: :attr:`headforms.settings.Settings.threads`) with at most
    ``threads + 1`` layers in flight (so memory holds a few layers whatever the depth), BLAS
    held to one thread per worker thread."""
    from threadpoolctl import threadpool_limits

    threads = min(threads or settings().threads, n_layers)
    with threadpool_limits(limits=1):
        if threads <= 1:
            for layer in range(n_layers):
                if progress:
                    progress(layer, n_layers, f"layer {layer + 1}/{n_layers}")
                yield layer, work(layer)
            return
        with ThreadPoolExecutor(threads) as pool:
            pending: deque[Future[T]] = deque()
            submitted = 0
            try:
                for layer in range(n_layers):
                    while submitted < n_layers and len(pending) <= threads:
                        pending.append(pool.submit(work, submitted))
                        submitted += 1
                    if progress:
                        progress(layer, n_layers, f"layer {layer + 1}/{n_layers}")
                    yield layer, pending.popleft().result()
            finally:
                for future in pending:
                    future.cancel()
