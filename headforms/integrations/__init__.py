"""Recording a model's heads while it trains, into a run store (:mod:`headforms.run_store`)
that ``headforms trajectory``, :func:`headforms.series.trajectory` and the dashboard's Training
run page read as they read checkpoints:

- :class:`HeadformsCallback` (:mod:`.trainer`): a callback for transformers' ``Trainer``,
  ``Trainer(..., callbacks=[HeadformsCallback(every=50, out="runs/x")])``;
- :func:`record` (:mod:`.recorder`): one call in a plain PyTorch loop,
  ``record(model, step, out="runs/x")``; :class:`Recorder` keeps what one run's calls share.

Importing this package imports neither torch nor transformers; its names do, when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .recorder import Recorder, record
    from .trainer import HeadformsCallback

__all__ = ["HeadformsCallback", "Recorder", "record"]


def __getattr__(name: str) -> Any:
    if name == "HeadformsCallback":
        from .trainer import HeadformsCallback

        return HeadformsCallback
    if name in ("Recorder", "record"):
        from . import recorder

        return getattr(recorder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
