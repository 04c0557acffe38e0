"""A model's analysis from random Q/K factors, computed by the forms stage itself (no weights,
no config, no model package): what unit tests hand to the computations of results at hand."""

from __future__ import annotations

import numpy as np

from headforms import ModelAnalysis
from headforms.architectures import Shapes
from headforms.columns import ALL_SPECTRA
from headforms.factors import LayerFactors, ModelFacts
from headforms.options import AnalysisOptions
from headforms.streaming import forms_analysis


def synthetic_analysis(
    layers: int = 3, heads: int = 4, head_dim: int = 6, model_dim: int = 32, seed: int = 0
) -> ModelAnalysis:
    """Every head of a model of random Gaussian Q and K (``seed``), with every spectrum; its
    fingerprint names the seed and the shapes."""
    shapes = Shapes(layers, model_dim, heads, heads, head_dim)
    rng = np.random.default_rng(seed)
    factors = [
        LayerFactors(
            q=rng.standard_normal((heads, head_dim, model_dim)).astype(np.float32),
            k=rng.standard_normal((heads, head_dim, model_dim)).astype(np.float32),
        )
        for _ in range(layers)
    ]
    facts = ModelFacts(
        shapes=shapes,
        name=f"synthetic-{seed}",
        source_kind="local",
        family="synthetic",
        model_type="llama",
        positional="absolute",
        storage="float32",
        fingerprint=f"synthetic:{seed}:{layers}x{heads}x{head_dim}x{model_dim}",
        weight_bytes=0,
        n_parameters=None,
        qk_norm=False,
        has_qk_bias=False,
    )
    options = AnalysisOptions(spectra=ALL_SPECTRA)
    return forms_analysis(facts, factors.__getitem__, options, facts.name)
