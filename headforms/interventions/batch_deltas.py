"""What a batch of sequence plans adds to one layer's pre-softmax scores, every change of the
layer computed together (torch, float64): the route the hooks take (:mod:`.hooks`).

The definitions are those of :mod:`.changes` (each change's ``scores_delta``, numpy, one change
and one sequence at a time), which stay the reference: a test holds this route to them for every
edit and match (``tests/integration/interventions/test_batch_deltas.py``). What is done together:

- **Linear edits** (``M = alpha L + beta L^T``): the query and key projections of every head of
  the layer, ``x Q^T`` and ``x K^T``, for the sequences that edit a head (one matrix product per
  layer, not one per head), each rotated by its own position; then one batched product per term
  over the edited (sequence, head) pairs: ``ell = (R u)(R v)^T`` and ``ell_t = (R^T v)(R^T u)^T``
  (:mod:`.algebra`'s module doc).
- **Matched controls** inside the head's span: ``y = x W`` for every head's span ``W`` at once
  (the layer's bases stacked, kept per loaded model), then ``(y O^T)(y P^T)^T`` over every
  (sequence, head) pair in two batched products, the Gaussian factors drawn as
  :func:`.controls.control_factors` draws them (padded with zero rows to the largest rank, which
  adds nothing); over all N dimensions (``frobenius``) the same with ``y = x``.
- **QK-norm**: the raw projections' RMS of every head at once.

A spectral edit (``rank1``, ``balanced``: one sequence per row, so never many in a batch) is
computed by its change's own method. The score changes are recorded in the ledgers in the
order of the reference (every edit of the batch before any control), so a scores-matched
control in the batch of its edit reads the edit's RMS.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .changes import ControlChange, FormChange, SequencePlan
from .controls import Match, control_factors

if TYPE_CHECKING:
    from .anatomy import Anatomy


@dataclass
class LayerTensors:
    """One layer's factors as float64 tensors (kept per loaded model, views of the anatomy's
    arrays): folded ``q`` (``N, H n``) and ``k`` (``N, H_kv n``), raw ones (under QK-norm) and
    biases for QK-norm's RMS, RoPE frequencies."""

    n_heads: int
    head_dim: int
    kv_of_head: Any
    q: Any
    k: Any
    q_raw: Any
    k_raw: Any
    q_bias: Any | None
    k_bias: Any | None
    inv_freq: Any | None
    eps: float | None
    scale: float
    causal: bool
    _angles: dict[int, tuple[Any, Any]] = field(default_factory=dict)

    def rotations(self, length: int) -> tuple[Any, Any] | None:
        """``(cos, sin)`` of ``t theta`` for positions ``t = 0 .. length-1`` (None: no RoPE)."""
        if self.inv_freq is None:
            return None
        if length not in self._angles:
            import torch

            positions = torch.arange(length, dtype=torch.float64)
            angles = positions[:, None] * self.inv_freq[None, :]
            self._angles[length] = (torch.cos(angles), torch.sin(angles))
        return self._angles[length]


def layer_tensors(anatomy: Anatomy, layer: int) -> LayerTensors:
    """The :class:`LayerTensors` of ``layer`` (built once per loaded model)."""
    import torch

    found = anatomy.batched.get(layer)
    if found is not None:
        return found
    part = anatomy.layers[layer]
    q, k = part.folded
    factors = part.factors
    shapes = anatomy.shapes

    def flat(array: np.ndarray) -> Any:  # (heads, n, N) -> (N, heads n): a view, no copy
        value = np.asarray(array, np.float64)  # the folded factors are float64 already
        return torch.from_numpy(value.reshape(-1, value.shape[-1])).T

    def bias(array: np.ndarray | None) -> Any | None:
        return None if array is None else torch.from_numpy(np.asarray(array, np.float64).ravel())

    rotary = factors.inv_freq is not None and len(factors.inv_freq) > 0
    qk_norm = part.qk_norm_eps is not None
    found = LayerTensors(
        n_heads=shapes.n_heads,
        head_dim=shapes.head_dim,
        kv_of_head=torch.as_tensor(np.asarray(shapes.kv_of_head, np.int64)),
        q=flat(q),
        k=flat(k),
        q_raw=flat(factors.q) if qk_norm else None,  # only QK-norm's RMS reads them
        k_raw=flat(factors.k) if qk_norm else None,
        q_bias=bias(factors.q_bias),
        k_bias=bias(factors.k_bias),
        inv_freq=torch.from_numpy(np.asarray(factors.inv_freq, np.float64)) if rotary else None,
        eps=part.qk_norm_eps,
        scale=part.scale,
        causal=part.causal,
    )
    anatomy.batched[layer] = found
    return found


def _spans(anatomy: Anatomy, layer: int, tensors: LayerTensors) -> Any:
    """The heads' span bases ``(H, N, r)`` (all of one width ``r``: a QR of ``N x 2n``), stacked
    for the call from the anatomy's (kept there once: a second copy of every layer's would add
    about 160 MB on SmolLM2 to an intervention's peak)."""
    import torch

    bases = [anatomy.span(layer, head).w for head in range(tensors.n_heads)]
    return torch.from_numpy(np.stack(bases))


def _rotate(vectors: Any, rotation: tuple[Any, Any] | None, sign: float) -> Any:
    """:func:`.algebra.rotate` by ``sign * t theta`` along the last axis (``..., T, n``)."""
    if rotation is None:
        return vectors
    cos, sin = rotation
    half = cos.shape[-1]
    out = vectors.clone()
    first, second = vectors[..., :half], vectors[..., half : 2 * half]
    out[..., :half] = first * cos - sign * second * sin
    out[..., half : 2 * half] = second * cos + sign * first * sin
    return out


def _visible(length: int, causal: bool) -> Any:
    import torch

    full = torch.ones((length, length), dtype=torch.bool)
    return torch.tril(full) if causal else full


def _factors(tensors: LayerTensors, x: Any) -> tuple[Any, Any] | None:
    """QK-norm's RMS ``(r_q, r_k)`` of every head (``B, T, H`` and ``B, T, H_kv``), or None."""
    if tensors.eps is None:
        return None
    n = tensors.head_dim

    def rms(weights: Any, bias: Any | None) -> Any:
        projected = x @ weights
        if bias is not None:
            projected = projected + bias
        projected = projected.reshape(*projected.shape[:-1], -1, n)
        return (projected.square().mean(-1) + tensors.eps).sqrt()

    return rms(tensors.q_raw, tensors.q_bias), rms(tensors.k_raw, tensors.k_bias)


def _turned(
    tensors: LayerTensors, x: Any, batch: Any, heads: Any, kv: Any
) -> tuple[Any, Any, Any, Any]:
    """Per pair (sequence ``batch[p]``, head ``heads[p]``): ``R u``, ``R v``, ``R^T u``, ``R^T v``
    of its tokens (``P, T, n``)."""
    n = tensors.head_dim
    chosen, where = np.unique(batch.numpy(), return_inverse=True)
    import torch

    inputs = x[torch.as_tensor(chosen)]
    u = (inputs @ tensors.q).reshape(len(chosen), x.shape[1], -1, n)
    v = (inputs @ tensors.k).reshape(len(chosen), x.shape[1], -1, n)
    where = torch.as_tensor(where)
    u, v = u[where, :, heads], v[where, :, kv]
    rotation = tensors.rotations(x.shape[1])
    return (
        _rotate(u, rotation, 1.0),
        _rotate(v, rotation, 1.0),
        _rotate(u, rotation, -1.0),
        _rotate(v, rotation, -1.0),
    )


def _scaled(
    tensors: LayerTensors, raw: Any, batch: Any, heads: Any, norms: tuple[Any, Any] | None
) -> Any:
    """Bilinear parts ``(P, T, T)`` as score changes: masked, times ``scale / (r_q r_k)``."""
    visible = _visible(raw.shape[-1], tensors.causal)
    raw = raw.masked_fill_(~visible, 0.0).mul_(tensors.scale)  # raw is this call's own
    if norms is None:
        return raw
    rq, rk = norms
    kv = tensors.kv_of_head[heads]
    return raw / (rq[batch, :, heads][:, :, None] * rk[batch, :, kv][:, None, :])


def _form_deltas(
    tensors: LayerTensors, x: Any, changes: list[tuple[int, FormChange]], norms: Any
) -> Any:
    """Score changes of linear form edits (``P, T, T``), pairs in the order of ``changes``."""
    import torch

    batch = torch.as_tensor([b for b, _ in changes])
    heads = torch.as_tensor([c.head for _, c in changes])
    kv = tensors.kv_of_head[heads]
    ru, rv, tu, tv = _turned(tensors, x, batch, heads, kv)
    coefficients = torch.tensor([c.edit.coefficients for _, c in changes], dtype=torch.float64)
    alpha, beta = coefficients[:, 0] - 1.0, coefficients[:, 1]
    raw = torch.zeros((len(changes), x.shape[1], x.shape[1]), dtype=torch.float64)
    if bool((alpha != 0).any()):
        raw += alpha[:, None, None] * torch.bmm(ru, rv.transpose(1, 2))
    if bool((beta != 0).any()):
        raw += beta[:, None, None] * torch.bmm(tv, tu.transpose(1, 2))
    return _scaled(tensors, raw, batch, heads, norms)


def _control_raw(
    anatomy: Anatomy,
    tensors: LayerTensors,
    x: Any,
    changes: list[tuple[int, ControlChange]],
    sized: bool,
) -> tuple[Any, np.ndarray | None]:
    """``x_j^T Z x_i`` of each control at unit scale (``P, T, T``), before masking, and when
    ``sized`` each control's size ``||P'^T O'||_F`` (:attr:`.controls.ControlForm.size`)."""
    import torch

    seeds = [c.seed for _, c in changes]
    inside = seeds[0].basis is not None
    layer = changes[0][1].layer
    spans = _spans(anatomy, layer, tensors) if inside else None  # (H, N, r)
    width = spans.shape[-1] if spans is not None else x.shape[-1]
    rank = max(seed.rank for seed in seeds)
    p = np.zeros((len(seeds), rank, width))
    o = np.zeros((len(seeds), rank, width))
    for index, seed in enumerate(seeds):  # drawn in place: no copy of each control's factors
        control_factors(
            seed.seed, seed.layer, seed.head, seed.index, seed.rank, width,
            out=(p[index, : seed.rank], o[index, : seed.rank]),
        )  # fmt: skip
    p_t, o_t = torch.from_numpy(p), torch.from_numpy(o)
    batch = torch.as_tensor([b for b, _ in changes])
    if spans is not None:
        heads = torch.as_tensor([c.head for _, c in changes])
        chosen, where = np.unique(batch.numpy(), return_inverse=True)
        stacked = spans.permute(1, 0, 2).reshape(x.shape[-1], -1)  # (N, H r)
        y = (x[torch.as_tensor(chosen)] @ stacked).reshape(len(chosen), x.shape[1], -1, width)
        y = y[torch.as_tensor(where), :, heads]
    else:
        y = x[batch]
    on_query = torch.bmm(y, o_t.transpose(1, 2))
    on_key = torch.bmm(y, p_t.transpose(1, 2))
    sizes = None
    if sized:
        grams = torch.bmm(p_t, p_t.transpose(1, 2)) * torch.bmm(o_t, o_t.transpose(1, 2))
        sizes = grams.sum((1, 2)).clamp(min=0.0).sqrt().numpy()
    return torch.bmm(on_query, on_key.transpose(1, 2)), sizes  # [i, j] = (O y_i) . (P y_j)


def _distance_scales(change: ControlChange, size: float, length: int) -> Any:
    """The control's scale at each pair's distance (span and frobenius matches: the edit's
    norm at each d over the control's own size, :meth:`.controls.ControlForm.matched`)."""
    import torch

    steps, norms = np.asarray(change.steps), np.asarray(change.norms)
    scales = np.zeros(len(steps)) if size == 0.0 else norms / size
    if len(steps) == 1:
        return torch.full((length, length), float(scales[0]), dtype=torch.float64)
    index = np.subtract.outer(np.arange(length), np.arange(length)) - int(steps[0])
    inside = (index >= 0) & (index < len(steps))
    return torch.from_numpy(np.where(inside, scales[np.clip(index, 0, len(steps) - 1)], 0.0))


def _record(changes: Sequence[tuple[int, Any]], sums: Any, count: int) -> None:
    """Each change's sum of squares over the ``count`` visible pairs into its ledger."""
    for (_, change), total in zip(changes, sums.tolist(), strict=True):
        if change.ledger is not None:
            change.ledger.record_sum((change.tag, change.layer, change.head), total, count)


def _squares(deltas: Any) -> Any:
    """Each change's sum of squares (``P``) over the visible pairs: ``deltas`` are
    :func:`_scaled`'s, 0 at every other pair."""
    return deltas.square().sum((-1, -2))


def layer_scores_delta(anatomy: Anatomy, layer: int, x: Any, plans: Sequence[SequencePlan]) -> Any:
    """What ``plans`` (one per sequence of the batch) add to ``layer``'s scores for attention
    inputs ``x`` (``B, T, N``): ``(B, H, T, T)`` float64 (module doc)."""
    import torch

    tensors = layer_tensors(anatomy, layer)
    length = x.shape[1]
    delta = torch.zeros((x.shape[0], tensors.n_heads, length, length), dtype=torch.float64)
    linear: list[tuple[int, FormChange]] = []
    spectral: list[tuple[int, FormChange]] = []
    controls: list[tuple[int, ControlChange]] = []
    for b, plan in enumerate(plans):
        for change in plan:
            if change.layer != layer:
                continue
            if isinstance(change, FormChange):
                (linear if change.edit.kind == "linear" else spectral).append((b, change))
            elif isinstance(change, ControlChange):
                controls.append((b, change))
    if not (linear or spectral or controls):
        return delta
    xd = x.detach().to(torch.float64)
    norms = _factors(tensors, xd)
    visible = _visible(length, tensors.causal)
    count = int(visible.sum())
    if linear:
        found = _form_deltas(tensors, xd, linear, norms)
        _record(linear, _squares(found), count)
        where = _pairs(linear)
        delta.index_put_(where, found, accumulate=True)
    for b, change in spectral:
        tokens = xd[b].numpy()
        delta[b, change.head] += torch.from_numpy(change.scores_delta(tokens))
    for inside in (True, False):
        group = [(b, c) for b, c in controls if (c.seed.basis is not None) == inside]
        if not group:
            continue
        sized = any(c.match is not Match.SCORES for _, c in group)
        raw, sizes = _control_raw(anatomy, tensors, xd, group, sized)
        for index, (_, change) in enumerate(group):
            if change.match is not Match.SCORES:
                assert sizes is not None
                raw[index] *= _distance_scales(change, float(sizes[index]), length)
        where = _pairs(group)
        found = _scaled(tensors, raw, *where, norms)
        sums = _squares(found)
        factors = torch.ones(len(group), dtype=torch.float64)
        for index, (_, change) in enumerate(group):
            if change.match is Match.SCORES:  # one factor: the edit's RMS over the control's
                want = change.ledger.rms((change.target, change.layer, change.head))
                have = math.sqrt(float(sums[index]) / count) if count else 0.0
                factors[index] = want / have if have > 0.0 else 0.0
        found *= factors[:, None, None]
        _record(group, sums * factors.square(), count)
        delta.index_put_(where, found, accumulate=True)
    return delta


def _pairs(changes: Sequence[tuple[int, Any]]) -> tuple[Any, Any]:
    """``(sequences, heads)`` of the changes, as index tensors."""
    import torch

    return (
        torch.as_tensor([b for b, _ in changes], dtype=torch.long),
        torch.as_tensor([c.head for _, c in changes], dtype=torch.long),
    )
