"""The model card: what a model is, as the overview page and the exports show it, written from
the facts extraction gathered (:class:`headforms.factors.ModelFacts`) and the options of the
analysis (its notes say how the form was taken: QK-norm gains, biases, quantization, RoPE).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .architectures import ROTARY, Shapes
from .factors import ModelFacts
from .options import AnalysisOptions

TABLE_SOURCE = "table"
"""The ``source_kind`` of a model read from a published per-head table."""

QUANT_NOTES = {
    "Q4_0": "4-bit",
    "Q4_1": "4-bit",
    "Q5_0": "5-bit",
    "Q5_1": "5-bit",
    "Q8_0": "8-bit",
    "Q2_K": "2-bit",
    "Q3_K": "3-bit",
    "Q4_K": "4-bit",
    "Q5_K": "5-bit",
    "Q6_K": "6-bit",
}
"""GGUF quantization types and their bits per weight (for the card's note)."""


@dataclass
class ModelCard:
    """What the model is, as shown on the overview page and in exports. ``qk_norm``,
    ``has_qk_bias``: None when the source does not say (a published table); ``model_dim``: 0
    when unknown."""

    spec: str
    name: str
    source_kind: str
    family: str
    model_type: str
    n_layers: int
    model_dim: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    positional: str
    storage: str
    rope_position: int
    qk_norm: bool | None
    qk_norm_folded: bool
    has_qk_bias: bool | None
    rope: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fingerprint: str = ""
    weight_bytes: int = 0
    n_parameters: int | None = None

    @property
    def total_heads(self) -> int:
        """Number of query heads in the model."""
        return self.n_layers * self.n_heads

    @property
    def rotary(self) -> bool:
        """Whether a RoPE position applies: positions enter the form as a RoPE rotation, and the
        source has the factors to turn (a published table holds its heads at d = 0 only)."""
        return self.positional == ROTARY and self.source_kind != TABLE_SOURCE

    @property
    def has_baseline(self) -> bool:
        """Whether the model has a Gaussian baseline: its model dim N and head dim n are known
        (a published table may give neither)."""
        return bool(self.model_dim and self.head_dim)

    @property
    def baseline_shapes(self) -> Shapes:
        """The shapes the Gaussian baseline of this model depends on (every query head its own
        Gaussian key: no grouping)."""
        return Shapes(self.n_layers, self.model_dim, self.n_heads, self.n_heads, self.head_dim)

    def as_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON and the overview table)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelCard:
        """The card of :meth:`as_dict` (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def rope_entries(per_layer: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-layer RoPE parameters grouped: each distinct set once, with the layers using it."""
    entries: list[dict[str, Any]] = []
    for layer, params in enumerate(per_layer):
        same = next((e for e in entries if all(e[k] == v for k, v in params.items())), None)
        if same is None:
            entries.append({**params, "layers": [layer]})
        else:
            same["layers"].append(layer)
    return entries


def model_card(facts: ModelFacts, options: AnalysisOptions, spec: str) -> ModelCard:
    """The card of a model analysed with ``options``, asked for as ``spec``."""
    shapes = facts.shapes
    fold = options.fold_qk_norm
    d = options.rope_position
    notes: list[str] = []
    if facts.qk_norm:
        notes.append(
            "QK-norm gains are folded into the form: L = K^T diag(g_k) diag(g_q) Q; the RMS "
            "normalisation is a data-dependent positive factor and is left out."
            if fold
            else "QK-norm gains are NOT folded (raw projections): spectra do not reflect the "
            "effective form."
        )
    if facts.has_qk_bias:
        notes.append(
            "Q/K biases exist and are excluded from L (as in the paper); their norms are "
            "reported per head."
        )
    if facts.storage in QUANT_NOTES:
        notes.append(
            f"Weights are {QUANT_NOTES[facts.storage]} quantized ({facts.storage}): rounding "
            "noise moves the eigenvalues of S slightly (about 1% of ||S|| at 4 bits); profiles "
            "are robust to it."
        )
    if facts.positional == "alibi":
        notes.append("ALiBi adds a position bias outside the bilinear form; L is position-free.")
    if facts.rotary:
        notes.append(
            f"RoPE at relative position d = {d} (query d tokens after key)"
            + (
                "; d = 0 makes the rotation the identity, as in the paper."
                if not d
                else ", with the model's own rotate-half pairing and frequencies."
            )
        )
    if shapes.n_kv_heads != shapes.n_heads:
        notes.append(
            f"Grouped-query attention: {shapes.n_heads} query heads share {shapes.n_kv_heads} key "
            "heads (query head h uses key head h // (H / H_kv))."
        )
    return ModelCard(
        spec=spec,
        name=facts.name,
        source_kind=facts.source_kind,
        family=facts.family,
        model_type=facts.model_type,
        n_layers=shapes.n_layers,
        model_dim=shapes.model_dim,
        n_heads=shapes.n_heads,
        n_kv_heads=shapes.n_kv_heads,
        head_dim=shapes.head_dim,
        positional=facts.positional,
        storage=facts.storage,
        rope_position=d,
        qk_norm=facts.qk_norm,
        qk_norm_folded=facts.qk_norm and fold,
        has_qk_bias=facts.has_qk_bias,
        rope=rope_entries(facts.rope) if facts.rotary else [],
        notes=notes,
        fingerprint=facts.fingerprint,
        weight_bytes=facts.weight_bytes,
        n_parameters=facts.n_parameters,
    )
