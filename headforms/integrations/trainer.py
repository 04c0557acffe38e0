"""A callback for transformers' ``Trainer`` that records every head's forms while the model
trains (:class:`HeadformsCallback`): at the start of training, every ``every`` optimizer steps
and at the end, into a run store that ``headforms trajectory DIR``, :func:`headforms.series.
trajectory` and the dashboard's Training run page read as they read checkpoints.

With ``log=True`` each record's scalars (:mod:`headforms.analyses.training`) go to the loggers
the Trainer reports to (``report_to``: TensorBoard, Weights & Biases, ...) at the step they
describe, and into ``state.log_history``; the Trainer's own loss logs are left as they are.
"""

from __future__ import annotations

import copy
import inspect
import os
from typing import Any

from transformers import TrainerCallback

from ..errors import OptionError
from .recorder import Recorder


def _calling_handler() -> Any:
    """The ``CallbackHandler`` that is calling this callback's event, or None.

    A callback is not handed the Trainer nor its handler, and the handler calls every callback's
    ``on_log`` with the same dict in list order, the reporting callbacks before those passed in
    ``callbacks=``: scalars added to a log there would reach no logger. So the callback finds the
    handler that calls it (``CallbackHandler.call_event``'s ``self``, a few frames up) and later
    hands it logs of its own, as ``Trainer.log`` does.
    """
    from transformers.trainer_callback import CallbackHandler

    frame = inspect.currentframe()
    try:
        for _ in range(6):
            frame = frame.f_back if frame is not None else None
            if frame is None:
                return None
            caller = frame.f_locals.get("self")
            if isinstance(caller, CallbackHandler):
                return caller
        return None
    finally:
        del frame


class HeadformsCallback(TrainerCallback):
    """Record every head's profile, parity, energy and spectra while ``Trainer`` trains.

    ``every``: optimizer steps between records (also one at the start and one at the end);
    ``out``: the run store's directory (it may be the Trainer's ``output_dir``: the store's files
    have names of their own); ``rope_position``: the RoPE relative position of the forms (0, as
    in the paper); ``log``: hand each record's scalars to the Trainer's loggers. Only the world
    process zero writes; the training is unchanged (the weights are only read).
    """

    def __init__(
        self,
        every: int = 50,
        out: str | os.PathLike[str] = "headforms-run",
        rope_position: int = 0,
        log: bool = True,
    ):
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise OptionError(f"every {every!r}: a whole number of optimizer steps, 1 or more")
        if not isinstance(log, bool):
            raise OptionError(f"log {log!r}: True or False")
        self.every = every
        self.log = log
        self.recorder = Recorder(out, rope_position, every)
        self._handler: Any = None
        self._recorded: int | None = None
        """The step recorded last, on every rank (ranks must gather a sharded model together)."""

    @property
    def out(self) -> os.PathLike[str]:
        """The run store's directory."""
        return self.recorder.out

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **_: Any):
        self._handler = _calling_handler()
        self._record(args, state, control, model)

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **_: Any):
        # DefaultFlowCallback (always first) has already said whether this step is the last.
        if state.global_step % self.every == 0 or control.should_training_stop:
            self._record(args, state, control, model)

    def on_train_end(self, args: Any, state: Any, control: Any, model: Any = None, **_: Any):
        if self._recorded != state.global_step:
            # the reporting callbacks have closed their writers by now: recorded, not logged
            self._record(args, state, control, model, log=False)
        if state.is_world_process_zero:
            self.recorder.finish(state.global_step)

    def _record(self, args: Any, state: Any, control: Any, model: Any, log: bool = True) -> None:
        if model is None:
            raise OptionError("the Trainer handed the callback no model to record")
        step = state.global_step
        scalars = self.recorder.record(model, step, write=state.is_world_process_zero)
        self._recorded = step
        if scalars is None or not (self.log and log) or self._handler is None:
            return
        state.log_history.append({**scalars, "step": step})
        # A copy of the control: the handler's on_log clears should_log, which would drop the
        # Trainer's own log of this step.
        self._handler.on_log(args, state, copy.copy(control), dict(scalars))
