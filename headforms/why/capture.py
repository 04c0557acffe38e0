"""What the score split reads from a forward pass, by PyTorch hooks on the model's own modules
(removed after; under :data:`headforms.behaviour.forward.PASS_LOCK`).

- :func:`capturing`: during one pass of one sequence, each layer's attention input ``x`` (the
  ``hidden_states`` its attention module receives, after the layer's norm) and what the module
  adds to ``scale * q . k`` besides: the additive attention mask (0 on the pairs it lets
  through, unless a model puts a position bias there) and BLOOM's ALiBi (the ``alibi``
  argument, ``beta * alibi`` per head and key: transformers' BLOOM computes
  ``alibi.baddbmm(q, k^T, beta=beta, alpha=inv_norm_factor) + mask``).
- :func:`direct_inputs`: the direct path through the embeddings to a layer's attention: each
  token on its own at position 0 (the hidden state entering layer 0, as the model's embedding
  computes it), handed straight to the layer's own forward, which is stopped where its attention
  module is called; what the module would receive is the token's attention input along that
  path (for layer 0 exactly the attention input of a one-token sequence).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..behaviour.forward import PASS_LOCK
from ..interventions.hooks import additive_mask, bound_argument

if TYPE_CHECKING:
    from ..behaviour.runnable import Runnable
    from ..interventions.anatomy import Anatomy

VOCABULARY_BATCH = 4096
"""Tokens sent through the direct path at once."""


@dataclass
class Captured:
    """Per layer of one pass: the attention input ``(T, N)`` (float64), the additive mask
    ``(1 or H, T, T)`` (None: the module got none) and the position bias per head and key
    ``(H, T)`` (None: none)."""

    inputs: list[np.ndarray] = field(default_factory=list)
    masks: list[np.ndarray | None] = field(default_factory=list)
    biases: list[np.ndarray | None] = field(default_factory=list)

    def extra(self, layer: int, head: int) -> np.ndarray | None:
        """What layer ``layer``'s attention adds to head ``head``'s ``scale * q . k`` (``(T,
        T)``), or None."""
        mask, bias = self.masks[layer], self.biases[layer]
        if mask is None and bias is None:
            return None
        length = len(self.inputs[layer])
        total = np.zeros((length, length))
        if mask is not None:
            total = total + mask[min(head, len(mask) - 1)]
        if bias is not None:
            total = total + bias[head][None, :]
        return total


def _position_bias(module: Any, bound: Any, n_heads: int) -> np.ndarray | None:
    """BLOOM's ``beta * alibi`` as ``(H, T)`` (module doc), or None."""
    alibi = bound.arguments.get("alibi")
    if alibi is None:
        return None
    beta = float(getattr(module, "beta", 1.0))
    values = alibi.detach().double().cpu().numpy()
    return beta * values.reshape(-1, n_heads, values.shape[-1])[0]


@contextlib.contextmanager
def capturing(anatomy: Anatomy) -> Iterator[Captured]:
    """Record, during one pass of one sequence (batch 1), what :class:`Captured` holds."""
    found = Captured()
    n_layers, n_heads = len(anatomy.layers), anatomy.shapes.n_heads
    found.inputs[:] = [np.empty(0)] * n_layers
    found.masks[:] = [None] * n_layers
    found.biases[:] = [None] * n_layers

    def hook(layer: int) -> Any:
        def record(module: Any, args: tuple, kwargs: dict) -> None:
            bound = bound_argument(module, args, kwargs, "hidden_states")
            x = bound.arguments["hidden_states"]
            found.inputs[layer] = x[0].detach().double().cpu().numpy().copy()
            mask = bound.arguments.get("attention_mask")
            if mask is not None:
                additive = additive_mask(mask, x)
                found.masks[layer] = additive[0].detach().double().cpu().numpy().copy()
            found.biases[layer] = _position_bias(module, bound, n_heads)

        return record

    handles: list[Any] = []
    with PASS_LOCK:
        try:
            for part in anatomy.layers:
                handles.append(
                    part.attention.register_forward_pre_hook(hook(part.index), with_kwargs=True)
                )
            yield found
        finally:
            for handle in handles:
                handle.remove()


class _Stop(Exception):
    """Raised by a hook to end a pass once it has what it came for."""


def _stop_at(module: Any, keep: list[Any], name: str | None) -> Any:
    """A pre-hook on ``module`` that keeps its call (``(args, kwargs)``, or the bound argument
    ``name``) in ``keep`` and stops the pass."""

    def hook(module: Any, args: tuple, kwargs: dict) -> None:
        if name is None:
            keep.append((args, kwargs))
        else:
            keep.append(bound_argument(module, args, kwargs, name).arguments[name])
        raise _Stop

    return module.register_forward_pre_hook(hook, with_kwargs=True)


def direct_inputs(
    model: Runnable,
    anatomy: Anatomy,
    layer: int,
    token_ids: Sequence[int],
    onto: np.ndarray | None = None,
) -> np.ndarray:
    """Each token's attention input at ``layer`` along the direct path through the embeddings
    (module doc), ``(len(token_ids), N)`` float32; with ``onto`` (``N x m``), only its
    projections on those columns, ``(len(token_ids), m)`` (a vocabulary's inputs are never held
    whole: a batch at a time)."""
    import torch

    width = anatomy.shapes.model_dim if onto is None else onto.shape[1]
    out = np.empty((len(token_ids), width), np.float32)
    first, target = anatomy.layers[0].layer, anatomy.layers[layer]
    with PASS_LOCK, torch.inference_mode():
        for start in range(0, len(token_ids), VOCABULARY_BATCH):
            ids = torch.tensor(list(token_ids[start : start + VOCABULARY_BATCH]))[:, None]
            entering: list[Any] = []
            handle = _stop_at(first, entering, None)
            try:
                model.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
            except _Stop:
                pass
            finally:
                handle.remove()
            args, kwargs = entering[0]
            received: list[Any] = []
            handle = _stop_at(target.attention, received, "hidden_states")
            try:
                target.layer(*args, **kwargs)
            except _Stop:
                pass
            finally:
                handle.remove()
            inputs = received[0][:, 0].float().cpu().numpy()
            out[start : start + len(ids)] = inputs if onto is None else inputs @ onto
    return out
