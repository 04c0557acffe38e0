"""Hooks that apply a batch of sequence plans (:mod:`.changes`) to a loaded model for the passes
run inside them, and record what the passes need; PyTorch's own module hooks, removed after.

- **Edited scores**: a forward pre-hook on each changed layer's attention module reads its input
  x (the attention input) and its additive attention mask, and hands the module ``mask +
  delta``, with ``delta`` (``B, H, T, T``) each sequence's change of each head's scores. Every
  eager attention in transformers computes ``softmax(scale * q . k [soft-capped] + mask)``, so
  the edited head's scores are the model's own plus the change, every other term kept; masked
  keys stay masked (the mask's lowest float absorbs any change). Soft-capping models (whose
  cap would have to act on the change too) are refused up front (:func:`check_editable`).
- **Edited outputs**: a forward pre-hook on the output projection sets a head's slice of its
  input (the heads' outputs side by side) to zero or to a given vector.
- **The unchanged prefix**: the layers below ``start`` return the hidden state that enters
  layer ``start`` in the unedited model (computed once, :class:`Recording`) instead of
  recomputing it for every sequence of the batch, in the form the model's layer loop reads a
  layer's output (a bare tensor, or a tuple whose first item is the hidden state, as BLOOM's
  ``outputs[0]``: recorded from the unedited pass).
- **Records**: the unedited pass's layer inputs, heads' outputs at every position and attention
  weights (:func:`recording`); an edited pass's attention weights of one watched head per
  sequence.

Everything runs under :data:`headforms.behaviour.forward.PASS_LOCK` (the hooks change a model
the process shares).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..behaviour.forward import PASS_LOCK
from ..errors import HeadformsError, NotRunnableError
from .anatomy import Anatomy
from .changes import ControlChange, FormChange, OutputChange, SequencePlan


def check_editable(
    anatomy: Anatomy, name: str, outputs: bool, what: str = "edits of its forms are"
) -> None:
    """Refuse, in one line, what the hooks cannot edit exactly: soft-capped attention logits
    (``what``: what is then not supported), and head outputs of a family whose output
    projection is not known. The config is the model's (BLOOM's attention has none)."""
    if getattr(anatomy.config, "attn_logit_softcapping", None) is not None:
        raise NotRunnableError(
            f"{name} soft-caps its attention logits (attn_logit_softcapping): {what} not supported"
        )
    if outputs and any(layer.output_projection is None for layer in anatomy.layers):
        raise NotRunnableError(
            f"{name}: headforms does not know where the {anatomy.arch.family} family combines "
            "its heads' outputs, so output_zero and output_mean are not available"
        )


@contextlib.contextmanager
def hook_failures(name: str) -> Iterator[None]:
    """Turn a failure inside a model's own code while the hooks run (a layer loop or an
    attention module that does not work as :mod:`.hooks` assumes) into one line,
    :class:`NotRunnableError`, instead of a traceback; headforms' own errors pass through."""
    try:
        yield
    except HeadformsError:
        raise
    except (AttributeError, TypeError, IndexError, KeyError, ValueError, RuntimeError) as exc:
        detail = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise NotRunnableError(
            f"{name}: its layers cannot be run with headforms' edit hooks "
            f"({type(exc).__name__}: {detail})"
        ) from exc


def bound_argument(module: Any, args: tuple, kwargs: dict, name: str) -> inspect.BoundArguments:
    bound = inspect.signature(module.forward).bind(*args, **kwargs)
    if name not in bound.arguments:
        raise NotRunnableError(
            f"{type(module).__name__} takes no {name!r}: its attention cannot be edited"
        )
    return bound


def additive_mask(mask: Any, like: Any) -> Any:
    """The mask as an additive float mask (0 or the dtype's lowest value), or 0 for none."""
    import torch

    if mask is None:
        return torch.zeros((), dtype=like.dtype)
    if mask.dtype == torch.bool:
        return torch.where(mask, 0.0, torch.finfo(like.dtype).min).to(like.dtype)
    return mask


def _scores_hook(layer: int, n_heads: int, plans: Sequence[SequencePlan]) -> Any:
    import torch

    def hook(module: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        bound = bound_argument(module, args, kwargs, "hidden_states")
        x = bound.arguments["hidden_states"]
        batch, length = x.shape[0], x.shape[1]
        delta = np.zeros((batch, n_heads, length, length), np.float32)
        for b, plan in enumerate(plans):
            tokens = None
            for change in plan:
                if change.layer == layer and isinstance(change, FormChange | ControlChange):
                    if tokens is None:
                        tokens = x[b].detach().double().cpu().numpy()
                    delta[b, change.head] += change.scores_delta(tokens).astype(np.float32)
        mask = bound.arguments.get("attention_mask")
        bound.arguments["attention_mask"] = additive_mask(mask, x) + torch.from_numpy(delta)
        return bound.args, bound.kwargs

    return hook


def _outputs_hook(layer: int, head_dim: int, plans: Sequence[SequencePlan]) -> Any:
    import torch

    def hook(module: Any, args: tuple) -> tuple:
        outputs = args[0].clone()
        for b, plan in enumerate(plans):
            for change in plan:
                if change.layer == layer and isinstance(change, OutputChange):
                    part = slice(change.head * head_dim, (change.head + 1) * head_dim)
                    if change.value is None:
                        outputs[b, :, part] = 0.0
                    else:
                        outputs[b, :, part] = torch.from_numpy(change.value).to(outputs.dtype)
        return (outputs, *args[1:])

    return hook


@dataclass
class Watched:
    """Attention weights ``(T, T)`` of each sequence's watched head, by sequence index."""

    weights: dict[int, np.ndarray] = field(default_factory=dict)


def _watch_hook(layer: int, watch: Sequence[tuple[int, int] | None], found: Watched) -> Any:
    def hook(module: Any, args: tuple, output: Any) -> None:
        weights = output[1]
        for b, target in enumerate(watch):
            if target is not None and target[0] == layer:
                found.weights[b] = weights[b, target[1]].detach().float().cpu().numpy().copy()

    return hook


def _layer_changes(plans: Sequence[SequencePlan], kinds: tuple[type, ...]) -> set[int]:
    return {c.layer for plan in plans for c in plan if isinstance(c, kinds)}


@contextlib.contextmanager
def applied(
    anatomy: Anatomy,
    plans: Sequence[SequencePlan],
    start: int = 0,
    entering: Any = None,
    watch: Sequence[tuple[int, int] | None] = (),
    as_tuple: bool = False,
) -> Iterator[Watched]:
    """Passes of ``len(plans)`` sequences inside this context change the model as the plans
    say; the layers below ``start`` return ``entering`` (the unedited hidden state entering
    layer ``start``, batch 1) for every sequence, as a 1-tuple when ``as_tuple`` (the layers
    return tuples: :attr:`Recording.tuple_outputs`); ``watch[b]``: the ``(layer, head)`` whose
    attention weights sequence ``b`` records, or None."""
    found = Watched()
    handles: list[Any] = []
    skipped: list[Any] = []
    shapes = anatomy.shapes
    with PASS_LOCK:
        try:
            for layer in _layer_changes(plans, (FormChange, ControlChange)):
                module = anatomy.layers[layer].attention
                hook = _scores_hook(layer, shapes.n_heads, plans)
                handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
            for layer in _layer_changes(plans, (OutputChange,)):
                module = anatomy.layers[layer].output_projection
                handles.append(
                    module.register_forward_pre_hook(_outputs_hook(layer, shapes.head_dim, plans))
                )
            for layer in {target[0] for target in watch if target is not None}:
                module = anatomy.layers[layer].attention
                handles.append(module.register_forward_hook(_watch_hook(layer, watch, found)))
            if start > 0:
                copies = entering.expand(len(plans), -1, -1).contiguous()
                for part in anatomy.layers[:start]:
                    part.layer.forward = _returning(copies, as_tuple)
                    skipped.append(part.layer)
            yield found
        finally:
            for handle in handles:
                handle.remove()
            for module in skipped:
                del module.forward


def _returning(value: Any, as_tuple: bool) -> Any:
    """A layer's forward that returns ``value`` as the layer would (a tuple when its loop reads
    ``outputs[0]``)."""
    result = (value,) if as_tuple else value

    def forward(*args: Any, **kwargs: Any) -> Any:
        return result

    return forward


@dataclass
class Recording:
    """What the unedited pass records: the hidden state entering each layer (``1, T, N``), each
    layer's heads' outputs at every position (``T, H n``, float64) when asked, each layer's
    attention weights (``H, T, T``) when asked, and whether the layers return tuples."""

    entering: list[Any] = field(default_factory=list)
    head_outputs: list[np.ndarray] = field(default_factory=list)
    attention: list[np.ndarray] = field(default_factory=list)
    tuple_outputs: bool = False


@contextlib.contextmanager
def recording(anatomy: Anatomy, means: bool, attention: bool) -> Iterator[Recording]:
    """Record, during one unedited pass of one sequence, what :class:`Recording` holds."""
    found = Recording()
    handles: list[Any] = []

    def enter(module: Any, args: tuple, kwargs: dict) -> None:
        states = args[0] if args else kwargs["hidden_states"]
        found.entering.append(states.detach().clone())

    def outputs(module: Any, args: tuple) -> None:
        found.head_outputs.append(args[0][0].double().cpu().numpy().copy())

    def returned(module: Any, args: tuple, output: Any) -> None:
        found.tuple_outputs = isinstance(output, tuple)

    def weights(module: Any, args: tuple, output: Any) -> None:
        found.attention.append(output[1][0].detach().float().cpu().numpy().copy())

    with PASS_LOCK:
        try:
            for part in anatomy.layers:
                handles.append(part.layer.register_forward_pre_hook(enter, with_kwargs=True))
                handles.append(part.layer.register_forward_hook(returned))
                if means:
                    handles.append(part.output_projection.register_forward_pre_hook(outputs))
                if attention:
                    handles.append(part.attention.register_forward_hook(weights))
            yield found
        finally:
            for handle in handles:
                handle.remove()
