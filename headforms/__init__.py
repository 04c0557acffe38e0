"""headforms: the geometry of attention heads as bilinear forms (arXiv 2609.22990).

For every head, ``L = K^T Q`` is split into its symmetric and antisymmetric parts; their exact
spectra place the head on the 3-simplex of profiles. The library never imports Streamlit.
"""

from .engine import ModelAnalysis, ModelCard, analyze
from .errors import HeadformsError
from .sources import BUNDLED_MODELS, DEFAULT_MODEL

__version__ = "0.1.0"
__all__ = [
    "BUNDLED_MODELS",
    "DEFAULT_MODEL",
    "HeadformsError",
    "ModelAnalysis",
    "ModelCard",
    "analyze",
]
