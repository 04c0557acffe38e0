"""Per-layer Q/K extraction: stored tensors -> one layer's factors, and the model's facts.

For layer i, :func:`read_layer` yields ``Q (H, n, N)`` and ``K (H_kv, n, N)`` in Hugging Face
row order and in the precision read (:class:`headforms.factors.LayerFactors`), the Q/K biases
(reported, never part of L), the full QK-norm gains and the layer's RoPE inverse frequencies.
:func:`model_facts` gathers what the model card needs from the config and the file headers.
Folding the gains and rotating by RoPE is the forms stage's work (:mod:`headforms.heads`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..architectures import (
    Shapes,
    TensorScheme,
    split_biases,
    split_weights,
    unpermute_gguf_rows,
)
from ..errors import CorruptFileError
from ..factors import LayerFactors, ModelFacts
from ..readers import TensorReader
from .rope import inverse_frequencies, rope_parameters
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
        return self.read_exact(pattern, layer).astype(np.float64)

    def read_exact(self, pattern: str, layer: int) -> np.ndarray:
        """Read a tensor in the precision stored (float32, float64 for float64 weights),
        rejecting missing tensors and non-finite values."""
        name = self.name(pattern, layer)
        if name not in self._names:
            raise CorruptFileError(f"tensor {name!r} is missing from the checkpoint")
        values = self.reader.read_exact(name)
        if not np.all(np.isfinite(values)):
            raise CorruptFileError(f"tensor {name!r} contains NaN or infinite values")
        return values


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


def read_layer(source: ModelSource, shapes: Shapes, index: TensorIndex, layer: int) -> LayerFactors:
    """Read and split one layer's Q/K tensors as the model's forward pass does, into one
    convention: Hugging Face row order, full QK-norm gains, the precision read."""
    scheme = source.scheme
    pat = scheme.patterns
    fused = scheme.layout != "separate"
    q_stored = index.read_exact(pat["q_weight"], layer)
    k_stored = None if fused else index.read_exact(pat["k_weight"], layer)
    if scheme.permuted_rows:
        q_stored = unpermute_gguf_rows(q_stored, shapes.n_heads)
        k_stored = unpermute_gguf_rows(k_stored, shapes.n_kv_heads)
    q, k = split_weights(scheme.layout, shapes, q_stored, k_stored)
    q_bias = k_bias = None
    if index.has(pat.get("q_bias"), layer):
        qb = index.read_exact(pat["q_bias"], layer)
        kb = None if fused else index.read_exact(pat["k_bias"], layer)
        if scheme.permuted_rows:
            qb = unpermute_gguf_rows(qb[:, None], shapes.n_heads)[:, 0]
            kb = unpermute_gguf_rows(kb[:, None], shapes.n_kv_heads)[:, 0]
        q_bias, k_bias = split_biases(scheme.layout, shapes, qb, kb)
    q_gain = k_gain = None
    if index.has(pat.get("q_norm"), layer):  # offset + stored: float64 keeps 1 + w exact
        q_gain = scheme.norm_gain_offset + index.read(pat["q_norm"], layer)
        k_gain = scheme.norm_gain_offset + index.read(pat["k_norm"], layer)
        if q_gain.shape != (shapes.head_dim,) or k_gain.shape != (shapes.head_dim,):
            raise CorruptFileError(
                f"layer {layer}: QK-norm gains have shape {q_gain.shape}/{k_gain.shape}, "
                f"expected ({shapes.head_dim},) per head dim"
            )
    inv_freq = None
    if source.arch.rotary:
        inv_freq = inverse_frequencies(source.config, shapes.head_dim, layer)
    return LayerFactors(q, k, q_bias, k_bias, q_gain, k_gain, inv_freq)


def parameter_count(reader: TensorReader) -> int:
    """Number of stored parameters (elements of every tensor), read from the file headers."""
    return int(sum(math.prod(reader.shape(name)) for name in reader.names()))


def model_facts(
    source: ModelSource, shapes: Shapes, index: TensorIndex, qk_norm: bool, has_qk_bias: bool
) -> ModelFacts:
    """The model card's facts of an opened model (``qk_norm``/``has_qk_bias``: whether some
    layer read had QK-norm gains / Q and K biases)."""
    storage = source.reader.storage_dtype(index.name(source.scheme.patterns["q_weight"], 0))
    if source.kind != "gguf":
        storage = storage.upper()
    arch = source.arch
    rope: list[dict[str, Any]] = []
    if arch.rotary:
        for layer in range(shapes.n_layers):
            params = rope_parameters(source.config, layer)
            inv = inverse_frequencies(source.config, shapes.head_dim, layer)
            rope.append(
                {
                    "rope_type": params.get("rope_type", "default"),
                    "theta": params.get("rope_theta"),
                    "rotary_dims": 2 * len(inv),
                }
            )
    return ModelFacts(
        shapes=shapes,
        name=source.display_name,
        source_kind=source.kind,
        family=arch.family,
        model_type=str(getattr(source.config, "model_type", arch.model_types[0])),
        positional=arch.positional,
        storage=storage,
        fingerprint=source.fingerprint,
        weight_bytes=source.weight_bytes,
        n_parameters=(
            parameter_count(source.reader) if source.all_weights else source.n_parameters
        ),
        qk_norm=qk_norm,
        has_qk_bias=has_qk_bias,
        rope=rope,
    )
