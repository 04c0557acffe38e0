"""What extraction hands to the forms stage: each layer's factors, and the model's facts.

A layer's factors are its per-head query and key projections ``Q (H, n, N)`` and ``K (H_kv, n,
N)`` in one convention, Hugging Face's rotate-half row order, in the precision they were read in
(float32 for GGUF, fp32, bf16, f16 and float8 weights, widened exactly; float64 only for float64
weights), beside the full QK-norm gains ``g = offset + stored`` (float64: ``1 + w`` is not a
float32), the Q/K biases (their norms are reported; biases are not part of ``L``) and the RoPE
inverse frequencies of the layer (rotate-half pairing). The gains are kept apart rather than
folded in: ``Q * g`` of two float32 values needs float64 to stay exact, and one set of factors
then serves both ``fold_qk_norm`` options. :class:`ModelFacts` holds everything else the forms
stage and the model card need from the config and the file headers, so that stage needs no
config, transformers or torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .architectures import ROTARY, Shapes

PAIRING = "rotate_half"
"""How RoPE pairs the head dims in the factors: dim i with i + r/2 (Hugging Face's order)."""


@dataclass(frozen=True)
class LayerFactors:
    """One layer's Q/K factors (module doc); ``None`` where the model has no such tensor."""

    q: np.ndarray
    k: np.ndarray
    q_bias: np.ndarray | None = None
    k_bias: np.ndarray | None = None
    q_gain: np.ndarray | None = None
    k_gain: np.ndarray | None = None
    inv_freq: np.ndarray | None = None

    def arrays(self) -> dict[str, np.ndarray]:
        """The named arrays that are present (what a factor store file holds)."""
        return {n: v for n in LAYER_ARRAYS if (v := getattr(self, n)) is not None}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> LayerFactors:
        """The factors of :meth:`arrays`."""
        return cls(**{name: arrays.get(name) for name in LAYER_ARRAYS})


LAYER_ARRAYS = ("q", "k", "q_bias", "k_bias", "q_gain", "k_gain", "inv_freq")
"""The fields of :class:`LayerFactors`, in the order a store file lists them."""


@dataclass(frozen=True)
class ModelFacts:
    """What extraction learned about a model besides its factors (the model card's facts).

    ``rope``: per layer of a RoPE model ``{"rope_type", "theta", "rotary_dims"}``; ``qk_norm``
    / ``has_qk_bias``: some layer has QK-norm gains / Q and K biases; ``n_parameters``: None
    when only the attention shards were opened.
    """

    shapes: Shapes
    name: str
    source_kind: str
    family: str
    model_type: str
    positional: str
    storage: str
    fingerprint: str
    weight_bytes: int
    n_parameters: int | None
    qk_norm: bool
    has_qk_bias: bool
    rope: list[dict[str, Any]] = field(default_factory=list)
    pairing: str = PAIRING

    @property
    def rotary(self) -> bool:
        """Whether positions enter the form as a RoPE rotation (a RoPE position applies)."""
        return self.positional == ROTARY

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelFacts:
        """The facts of :meth:`as_dict`."""
        return cls(**{**data, "shapes": Shapes(**data["shapes"])})
