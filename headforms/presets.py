"""Named lists of models for surveys: ``python -m headforms survey --preset NAME``."""

from __future__ import annotations

from .errors import OptionError

PAPER_MODELS: tuple[str, ...] = (
    "distilgpt2",
    "gpt2",
    "gpt2-medium",
    "gpt2-large",
    "facebook/opt-125m",
    "facebook/opt-350m",
    "facebook/opt-1.3b",
    "facebook/opt-2.7b",
    "facebook/opt-6.7b",
    "facebook/opt-13b",
    "bigscience/bloom-3b",
    "bigscience/bloom-7b1",
    "EleutherAI/pythia-70m-deduped",
    "mistralai/Mistral-Small-24B-Base-2501",
)
"""The fourteen models of the paper (arXiv 2609.22990; 9,512 heads), as hub ids."""

PRESETS: dict[str, tuple[str, ...]] = {"paper": PAPER_MODELS}


def preset(name: str) -> list[str]:
    """The model specs of a preset."""
    if name not in PRESETS:
        raise OptionError(f"unknown preset {name!r}; accepted: {', '.join(PRESETS)}")
    return list(PRESETS[name])
