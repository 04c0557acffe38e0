"""The figure tests' analyses of two bundled models (every spectrum), computed once per module
(the store keeps them between modules)."""

from __future__ import annotations

import pytest

from headforms import analyze
from headforms.columns import ALL_SPECTRA


@pytest.fixture(scope="module")
def minilm():
    return analyze("minilm-l6", spectra=ALL_SPECTRA)


@pytest.fixture(scope="module")
def smollm():
    return analyze("smollm2-135m", spectra=ALL_SPECTRA)
