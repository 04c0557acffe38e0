"""headforms: the geometry of attention heads as bilinear forms (arXiv 2609.22990).

For every head, ``L = K^T Q`` is split into its symmetric and antisymmetric parts; their exact
spectra place the head on the 3-simplex of profiles. The library never imports Streamlit.

The pipeline (imports run down it; docs/CONTRIBUTING.md draws the map): :mod:`.sources` (spec
-> located files and fingerprint, under the caller's policy) -> :mod:`.readers` (tensors) ->
:mod:`.models` (extraction: per-layer factors) -> :mod:`.heads` (the forms stage, on
:mod:`.forms`, the algebra) -> :mod:`.store` (factors and metrics, two content-addressed
stages) -> :mod:`.engine` (:func:`analyze`) -> :mod:`.analyses` (model-level views) ->
:mod:`.figures` (Plotly) -> :mod:`.cli`.
"""

from .card import ModelCard
from .engine import analyze
from .errors import HeadformsError
from .model_analysis import ModelAnalysis
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
