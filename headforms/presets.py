"""The paper's fourteen models and their public shapes, and named lists of models for surveys
(``python -m headforms survey --preset NAME``).

:data:`PAPER_MODEL_FACTS` is the one place these facts live: each model's tag (the name the
author's published files use), its hub id, its transformers ``model_type`` (the architecture
table gives its family and positional encoding) and its attention shapes, as their config files
give them. A published table names a model by its tag or hub id; its spectra carry only 2n, so
these facts supply N (the Gaussian baseline) and the rest of the card.
"""

from __future__ import annotations

from dataclasses import dataclass

from .architectures import Shapes
from .errors import OptionError


@dataclass(frozen=True)
class PaperModel:
    """One of the paper's models: ``tag`` (the author's short name), ``hub_id``,
    ``model_type`` (transformers), shapes (layers, query heads H and key heads H_kv per layer,
    model dim N, head dim n), ``qk_bias`` (its Q/K projections have biases) and
    ``partial_rotary`` (share of the head dim RoPE turns; None without RoPE)."""

    tag: str
    hub_id: str
    model_type: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    model_dim: int
    head_dim: int
    qk_bias: bool
    partial_rotary: float | None = None

    @property
    def shapes(self) -> Shapes:
        """Its attention shapes."""
        return Shapes(self.n_layers, self.model_dim, self.n_heads, self.n_kv_heads, self.head_dim)

    @property
    def total_heads(self) -> int:
        """Query heads in the model."""
        return self.n_layers * self.n_heads


PAPER_MODEL_FACTS: tuple[PaperModel, ...] = (
    PaperModel("distilgpt2", "distilgpt2", "gpt2", 6, 12, 12, 768, 64, True),
    PaperModel("gpt2", "gpt2", "gpt2", 12, 12, 12, 768, 64, True),
    PaperModel("gpt2-medium", "gpt2-medium", "gpt2", 24, 16, 16, 1024, 64, True),
    PaperModel("gpt2-large", "gpt2-large", "gpt2", 36, 20, 20, 1280, 64, True),
    PaperModel("opt-125m", "facebook/opt-125m", "opt", 12, 12, 12, 768, 64, True),
    PaperModel("opt-350m", "facebook/opt-350m", "opt", 24, 16, 16, 1024, 64, True),
    PaperModel("opt-1.3b", "facebook/opt-1.3b", "opt", 24, 32, 32, 2048, 64, True),
    PaperModel("opt-2.7b", "facebook/opt-2.7b", "opt", 32, 32, 32, 2560, 80, True),
    PaperModel("opt-6.7b", "facebook/opt-6.7b", "opt", 32, 32, 32, 4096, 128, True),
    PaperModel("opt-13b", "facebook/opt-13b", "opt", 40, 40, 40, 5120, 128, True),
    PaperModel("bloom-3b", "bigscience/bloom-3b", "bloom", 30, 32, 32, 2560, 80, True),
    PaperModel("bloom-7b1", "bigscience/bloom-7b1", "bloom", 30, 32, 32, 4096, 128, True),
    PaperModel(
        "pythia-70m-deduped",
        "EleutherAI/pythia-70m-deduped",
        "gpt_neox",
        6,
        8,
        8,
        512,
        64,
        True,
        partial_rotary=0.25,
    ),
    PaperModel(
        "Mistral-Small-24B-Base",
        "mistralai/Mistral-Small-24B-Base-2501",
        "mistral",
        40,
        32,
        8,
        5120,
        128,
        False,
        partial_rotary=1.0,
    ),
)
"""The fourteen models of the paper (arXiv 2609.22990; 9,512 heads), in its order."""

PAPER_MODELS: tuple[str, ...] = tuple(model.hub_id for model in PAPER_MODEL_FACTS)
"""The fourteen models of the paper as hub ids."""

PRESETS: dict[str, tuple[str, ...]] = {"paper": PAPER_MODELS}


def paper_model(name: str) -> PaperModel | None:
    """The paper's model named ``name`` (its tag or hub id, as a published table names it), or
    None."""
    for model in PAPER_MODEL_FACTS:
        if name in (model.tag, model.hub_id):
            return model
    return None


def preset(name: str) -> list[str]:
    """The model specs of a preset."""
    if name not in PRESETS:
        raise OptionError(f"unknown preset {name!r}; accepted: {', '.join(PRESETS)}")
    return list(PRESETS[name])
