"""Per-layer Q/K extraction: stored tensors -> per-head factors of the effective form.

For layer i this yields ``Q (H, n, N)`` and ``K (H_kv, n, N)`` in Hugging Face row order, the
Q/K biases (reported, never part of L), and the QK-norm gains. :func:`effective_factors`
then folds the gains and the RoPE rotation into the query factor, so that
``L_h = K_{kv(h)}^T Q'_h`` is the form the head actually applies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..architectures import (
    Shapes,
    TensorScheme,
    split_biases,
    split_weights,
    unpermute_gguf_rows,
)
from ..errors import CorruptFileError
from ..readers import TensorReader
from .rope import inverse_frequencies, rotation
from .source import ModelSource

_FOREIGN_TOWERS = ("vision", "visual", "audio", "image", "mm_projector")


class TensorIndex:
    """Resolve ``{i}``-patterns to the checkpoint's tensor names (by suffix, one prefix)."""

    def __init__(self, reader: TensorReader, anchor: str):
        self.reader = reader
        self._names = set(reader.names())
        target = anchor.format(i=0)
        prefixes = [
            name[: len(name) - len(target)]
            for name in self._names
            if name == target or name.endswith("." + target)
        ]
        prefixes = [p for p in prefixes if not any(t in p for t in _FOREIGN_TOWERS)] or prefixes
        if not prefixes:
            raise CorruptFileError(
                f"no tensor named like {target!r} in the checkpoint: not the architecture its "
                "config claims, or the attention weights are missing"
            )
        self.prefix = min(prefixes, key=len)

    def name(self, pattern: str, layer: int) -> str:
        """The full tensor name of ``pattern`` at ``layer``."""
        return self.prefix + pattern.format(i=layer)

    @classmethod
    def for_source(cls, source: ModelSource) -> TensorIndex:
        """The index of a source's checkpoint, anchored at its query weight pattern."""
        return cls(source.reader, source.scheme.patterns["q_weight"])

    def __contains__(self, name: str) -> bool:
        return name in self._names

    def layers(self, pattern: str) -> set[int]:
        """Layer indices for which ``pattern`` names a tensor of the checkpoint."""
        head, _, tail = (self.prefix + pattern).partition("{i}")
        found = set()
        for name in self._names:
            if name.startswith(head) and name.endswith(tail):
                middle = name[len(head) : len(name) - len(tail)]
                if middle.isdigit():
                    found.add(int(middle))
        return found

    def has(self, pattern: str | None, layer: int) -> bool:
        """Whether the checkpoint holds that tensor."""
        return pattern is not None and self.name(pattern, layer) in self._names

    def read(self, pattern: str, layer: int) -> np.ndarray:
        """Read a tensor as float64, rejecting missing tensors and non-finite values."""
        name = self.name(pattern, layer)
        if name not in self._names:
            raise CorruptFileError(f"tensor {name!r} is missing from the checkpoint")
        values = self.reader.read(name)
        if not np.all(np.isfinite(values)):
            raise CorruptFileError(f"tensor {name!r} contains NaN or infinite values")
        return values


@dataclass
class LayerWeights:
    """One layer's query/key projections, biases and QK-norm gains (HF row order)."""

    q: np.ndarray
    k: np.ndarray
    q_bias: np.ndarray | None
    k_bias: np.ndarray | None
    q_gain: np.ndarray | None
    k_gain: np.ndarray | None


def check_declared_shapes(scheme: TensorScheme, shapes: Shapes, index: TensorIndex) -> None:
    """The config's declared shapes against the tensors present (headers only, nothing read).

    Every declared layer must have its query (and key) weight, of the shape the config implies:
    a config that lies about its layers or heads is one clear error, before any work is queued.
    """
    pattern = scheme.patterns["q_weight"]
    present = index.layers(pattern)
    missing = [layer for layer in range(shapes.n_layers) if layer not in present]
    if missing:
        raise CorruptFileError(
            f"the config declares {shapes.n_layers} layers but the checkpoint has query weights "
            f"for {len(present)} (first missing: layer {missing[0]})"
        )
    H, Hkv, n, N = shapes.n_heads, shapes.n_kv_heads, shapes.head_dim, shapes.model_dim
    expected = {
        "conv1d_qkv": {"q_weight": (N, 3 * H * n)},
        "per_head_qkv": {"q_weight": (3 * H * n, N)},
        "separate": {"q_weight": (H * n, N), "k_weight": (Hkv * n, N)},
    }[scheme.layout]
    for role, shape in expected.items():
        for layer in range(shapes.n_layers):
            name = index.name(scheme.patterns[role], layer)
            if name not in index:
                raise CorruptFileError(f"tensor {name!r} is missing from the checkpoint")
            got = tuple(index.reader.shape(name))
            if got != shape:
                raise CorruptFileError(
                    f"tensor {name!r} has shape {got}, but the config implies {shape}"
                )


def read_layer(source: ModelSource, shapes: Shapes, index: TensorIndex, layer: int) -> LayerWeights:
    """Read and split one layer's Q/K tensors as the model's forward pass does, into one
    convention: Hugging Face row order, full QK-norm gains."""
    scheme = source.scheme
    pat = scheme.patterns
    fused = scheme.layout != "separate"
    q_stored = index.read(pat["q_weight"], layer)
    k_stored = None if fused else index.read(pat["k_weight"], layer)
    if scheme.permuted_rows:
        q_stored = unpermute_gguf_rows(q_stored, shapes.n_heads)
        k_stored = unpermute_gguf_rows(k_stored, shapes.n_kv_heads)
    q, k = split_weights(scheme.layout, shapes, q_stored, k_stored)
    q_bias = k_bias = None
    if index.has(pat.get("q_bias"), layer):
        qb = index.read(pat["q_bias"], layer)
        kb = None if fused else index.read(pat["k_bias"], layer)
        if scheme.permuted_rows:
            qb = unpermute_gguf_rows(qb[:, None], shapes.n_heads)[:, 0]
            kb = unpermute_gguf_rows(kb[:, None], shapes.n_kv_heads)[:, 0]
        q_bias, k_bias = split_biases(scheme.layout, shapes, qb, kb)
    q_gain = k_gain = None
    if index.has(pat.get("q_norm"), layer):
        q_gain = scheme.norm_gain_offset + index.read(pat["q_norm"], layer)
        k_gain = scheme.norm_gain_offset + index.read(pat["k_norm"], layer)
        if q_gain.shape != (shapes.head_dim,) or k_gain.shape != (shapes.head_dim,):
            raise CorruptFileError(
                f"layer {layer}: QK-norm gains have shape {q_gain.shape}/{k_gain.shape}, "
                f"expected ({shapes.head_dim},) per head dim"
            )
    return LayerWeights(q, k, q_bias, k_bias, q_gain, k_gain)


def effective_factors(
    source: ModelSource,
    shapes: Shapes,
    weights: LayerWeights,
    layer: int,
    rope_position: int = 0,
    fold_qk_norm: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """``(Q', K')`` with ``L_h = K'_{kv(h)}^T Q'_h``: gains folded, RoPE ``R_d`` applied to Q."""
    q, k = weights.q, weights.k
    if fold_qk_norm and weights.q_gain is not None:
        q = q * weights.q_gain[None, :, None]
        k = k * weights.k_gain[None, :, None]
    if rope_position and source.arch.rotary:
        inv_freq = inverse_frequencies(source.config, shapes.head_dim, layer)
        q = rotation(inv_freq, shapes.head_dim, rope_position) @ q
    return q, k
