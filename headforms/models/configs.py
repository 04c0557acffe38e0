"""Model configs: the transformers config of a checkpoint, or the same fields from GGUF metadata.

:class:`GGUFConfig` holds the attention fields of a GGUF file's metadata without importing
transformers (which alone costs seconds); :meth:`GGUFConfig.to_transformers` gives the
transformers config of the same fields, which RoPE types other than default need and tests use as
the reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..architectures import SHAPE_LIMITS, Architecture, architecture_for
from ..errors import CorruptFileError

ROPE_FREQ_FACTORS_TENSOR = "rope_freqs.weight"
"""GGUF tensor of RoPE frequency divisors (llama.cpp's encoding of Llama-3 RoPE scaling)."""


def transformers_config(fields: dict[str, Any], label: str) -> Any:
    """The transformers config of a config.json's fields (text config of composite models)."""
    from transformers import CONFIG_MAPPING

    model_type = str(fields.get("model_type"))
    architecture_for(model_type)  # unsupported families fail here, clearly
    try:
        config = CONFIG_MAPPING[model_type].from_dict(dict(fields))
    except Exception as exc:  # transformers raises ValueError/KeyError/TypeError variously
        raise CorruptFileError(
            f"{label}: transformers cannot read it: " + " ".join(str(exc).split())[:300]
        ) from exc
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def gguf_config(reader: Any, arch: Architecture, gguf_arch: str, path: Path) -> GGUFConfig:
    """The config of an opened GGUF file (metadata, plus ``rope_freqs`` divisors if present)."""
    try:
        config = config_from_gguf(arch, gguf_arch, reader.metadata, path)
    except (TypeError, ValueError, OverflowError) as exc:  # a metadata value of the wrong type
        raise CorruptFileError(f"{path.name}: GGUF metadata of the wrong type: {exc}") from exc
    if ROPE_FREQ_FACTORS_TENSOR in reader.names():
        # llama.cpp stores Llama-3 style RoPE scaling as per-frequency divisors, not metadata.
        factors = reader.read(ROPE_FREQ_FACTORS_TENSOR).ravel()
        if factors.size == 0 or not np.all(np.isfinite(factors)) or np.any(factors <= 0):
            raise CorruptFileError(f"{path.name}: {ROPE_FREQ_FACTORS_TENSOR} must be positive")
        config.rope_freq_divisors = factors.tolist()
    return config


@dataclass
class GGUFConfig:
    """The attention fields of a transformers config, read from GGUF metadata.

    Built without importing transformers, which alone costs about 4 s of a cold run (see
    benchmarks/README.md); :meth:`to_transformers` gives the transformers config of the same
    fields, which tests use as the reference and RoPE types other than default need.
    """

    model_type: str
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    num_hidden_layers: int
    head_dim: int
    rope_parameters: dict[str, Any]
    layer_types: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    rope_freq_divisors: list[float] | None = None

    def to_transformers(self) -> Any:
        """The equivalent transformers config (``AutoConfig.for_model``), built once."""
        cached = self.__dict__.get("_transformers")
        if cached is None:
            from transformers import AutoConfig

            fields = {
                "hidden_size": self.hidden_size,
                "num_attention_heads": self.num_attention_heads,
                "num_key_value_heads": self.num_key_value_heads,
                "num_hidden_layers": self.num_hidden_layers,
                "head_dim": self.head_dim,
                "rope_parameters": self.rope_parameters,
                **self.extra,
            }
            cached = AutoConfig.for_model(self.model_type, **fields)
            cached.rope_freq_divisors = self.rope_freq_divisors
            self.__dict__["_transformers"] = cached
        return cached


GEMMA3_SLIDING_WINDOW_PATTERN = 6
"""Every 6th Gemma-3 layer is global (transformers' Gemma3TextConfig default)."""


def config_from_gguf(
    arch: Architecture, gguf_arch: str, meta: dict[str, Any], path: Path
) -> GGUFConfig:
    """The model's config from GGUF metadata (fields as transformers' config class names them)."""

    def get(key: str, default: Any = None) -> Any:
        return meta.get(f"{gguf_arch}.{key}", default)

    try:
        hidden = int(get("embedding_length"))
        heads = int(get("attention.head_count"))
        layers = int(get("block_count"))
    except (TypeError, ValueError) as exc:
        raise CorruptFileError(
            f"{path.name}: GGUF metadata lacks {gguf_arch}.embedding_length, "
            "attention.head_count or block_count"
        ) from exc
    if not 0 < layers <= SHAPE_LIMITS["layers"]:  # before any per-layer list is built
        raise CorruptFileError(
            f"{path.name}: GGUF metadata declares {layers} layers (accepted: 1 to "
            f"{SHAPE_LIMITS['layers']})"
        )
    kv_heads = int(get("attention.head_count_kv", heads) or heads)
    # the other shapes are validated in one place, architectures.shapes_from_config
    head_dim = int(get("attention.key_length", 0) or (hidden // heads if heads > 0 else 0))
    theta = float(get("rope.freq_base", 10000.0))
    rope: dict[str, Any] = {"rope_type": "default", "rope_theta": theta}
    if get("rope.scaling.type") == "linear":
        rope.update(rope_type="linear", factor=float(get("rope.scaling.factor", 1.0)))
    model_type = arch.model_types[0]
    config = GGUFConfig(model_type, hidden, heads, kv_heads, layers, head_dim, rope)
    if model_type == "gemma3_text":
        window = get("attention.sliding_window")
        if window:
            config.extra["sliding_window"] = int(window)
        pattern = get("attention.sliding_window_pattern")
        if not (isinstance(pattern, int) and pattern > 0):
            pattern = GEMMA3_SLIDING_WINDOW_PATTERN
        config.extra["sliding_window_pattern"] = pattern
        config.layer_types = [
            "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)
        ]
        # llama.cpp applies rope.scaling (Gemma-3 4B+: linear 8) to the global layers only;
        # local layers use rope.freq_base_swa (10000 when absent, as llama.cpp assumes)
        config.rope_parameters = {
            "full_attention": rope,
            "sliding_attention": {
                "rope_type": "default",
                "rope_theta": float(get("rope.freq_base_swa", 10000.0)),
            },
        }
    else:
        rot_dims = get("rope.dimension_count")
        if rot_dims and int(rot_dims) != head_dim:
            rope["partial_rotary_factor"] = int(rot_dims) / head_dim
    return config
