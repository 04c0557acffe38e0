"""headforms: the geometry of attention heads as bilinear forms (arXiv 2609.22990).

For every head, ``L = K^T Q`` is split into its symmetric and antisymmetric parts; their exact
spectra place the head on the 3-simplex of profiles. The library never imports Streamlit.

The pipeline, one package per stage (imports run down it): :mod:`.sources` (spec -> located
files, fingerprint, hosted policy) -> :mod:`.readers` (tensors) -> :mod:`.models` (configs,
RoPE, extraction; the table of :mod:`.architectures`) -> :mod:`.forms` (the algebra) ->
:mod:`.store` (results) -> :mod:`.engine` (:func:`analyze`) -> :mod:`.analyses` (model-level
views) -> :mod:`.figures` (Plotly) -> :mod:`.cli`.
"""

from .engine import analyze
from .errors import HeadformsError
from .results import ModelAnalysis, ModelCard
from .sources import BUNDLED_MODELS, DEFAULT_MODEL

__version__ = "0.2.0"
__all__ = [
    "BUNDLED_MODELS",
    "DEFAULT_MODEL",
    "HeadformsError",
    "ModelAnalysis",
    "ModelCard",
    "analyze",
]
