"""RoPE as a rotation of the head's query space: ``L_d = K^T R_d Q`` at relative position d.

``d = p_query - p_key`` (the query sits d tokens after the key). Pairing is Hugging Face's
"rotate half" convention (dimension i pairs with i + r/2 within the first r = rotary dims);
GGUF weights are un-permuted into that order on reading. Frequencies come from the model's own
config through transformers' RoPE initialisers (default, linear, llama3, yarn, ...).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

_IMPORTING = threading.Lock()
KEPT_FREQUENCIES = "initialised_frequencies"
"""The attribute of a :class:`~headforms.models.config_facts.ConfigFacts` holding transformers'
initialised frequencies per layer type (``""``: shared), kept with its other facts."""


def rope_layer_type(config: Any, layer: int) -> str | None:
    """The layer type keying ``layer``'s RoPE parameters, or None when they are shared.

    Some configs (Qwen2/3, Mistral) list ``layer_types`` but keep one flat RoPE dict.
    """
    params = getattr(config, "rope_parameters", None) or {}
    layer_types = getattr(config, "layer_types", None)
    if layer_types and layer_types[layer] in params:
        return str(layer_types[layer])
    return None


def rope_parameters(config: Any, layer: int) -> dict[str, Any]:
    """The RoPE parameters that apply to ``layer`` (per-layer-type dicts resolved)."""
    params = dict(getattr(config, "rope_parameters", None) or {})
    layer_type = rope_layer_type(config, layer)
    return dict(params[layer_type]) if layer_type else params


def inverse_frequencies(config: Any, head_dim: int, layer: int) -> np.ndarray:
    """Angular frequencies ``theta_i`` (radians per token) of the rotated pairs of ``layer``.

    A GGUF's ``rope_freqs`` divisors (Llama-3 scaling, kept as ``config.rope_freq_divisors``)
    divide the default frequencies, as llama.cpp does.
    """
    inv_freq = _base_frequencies(config, head_dim, layer)
    divisors = getattr(config, "rope_freq_divisors", None)
    if divisors is not None:
        if len(divisors) != len(inv_freq):
            from ..errors import CorruptFileError

            raise CorruptFileError(
                f"rope_freqs has {len(divisors)} divisors for {len(inv_freq)} rotary frequencies"
            )
        inv_freq = inv_freq / np.asarray(divisors, dtype=np.float64)
    return inv_freq


def _base_frequencies(config: Any, head_dim: int, layer: int) -> np.ndarray:
    params = rope_parameters(config, layer)
    rope_type = params.get("rope_type", "default")
    if rope_type != "default":
        kept = getattr(config, KEPT_FREQUENCIES, None)  # a ConfigFacts: transformers' own, kept
        layer_type = rope_layer_type(config, layer)
        if kept is not None and (layer_type or "") in kept:
            return np.asarray(kept[layer_type or ""], dtype=np.float64)
        return initialised_frequencies(config, layer)
    factor = float(
        params.get("partial_rotary_factor", getattr(config, "partial_rotary_factor", 1.0))
    )
    rotary_dim = int(head_dim * factor)
    base = float(params.get("rope_theta", 10000.0))
    return 1.0 / base ** (
        np.arange(0, rotary_dim, 2, dtype=np.int64).astype(np.float64) / rotary_dim
    )


def initialised_frequencies(config: Any, layer: int) -> np.ndarray:
    """``layer``'s rotary frequencies from transformers' RoPE initialiser of its type."""
    rope_type = rope_parameters(config, layer).get("rope_type", "default")
    with _IMPORTING:  # layers ask from several threads: transformers' lazy import is not safe
        from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

        if hasattr(config, "to_transformers"):  # GGUF metadata, kept facts: need HF's config
            config = config.to_transformers()
    layer_type = rope_layer_type(config, layer)
    inv_freq, _ = ROPE_INIT_FUNCTIONS[rope_type](config, None, layer_type=layer_type)
    return inv_freq.double().numpy()


def rotation(inv_freq: np.ndarray, head_dim: int, distance: int) -> np.ndarray:
    """``R_d`` (``n x n``): rotate-half pairs ``(i, i + r/2)`` by ``d * theta_i``; rest identity."""
    half = len(inv_freq)
    angle = distance * inv_freq
    cos, sin = np.cos(angle), np.sin(angle)
    rot = np.eye(head_dim)
    idx = np.arange(half)
    rot[idx, idx] = cos
    rot[idx + half, idx + half] = cos
    rot[idx, idx + half] = -sin
    rot[idx + half, idx] = sin
    return rot
