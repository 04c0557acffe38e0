"""Distribution fits of a model's spectral lobes, cached once for every page that shows them
(the fits page per head and per family, the compare page against the model's size)."""

from __future__ import annotations

import pandas as pd

from headforms import ModelAnalysis
from headforms.analyses import fits

from .compute import cached


def lobe_fits(spec: str, rope_position: int, analysis: ModelAnalysis) -> dict[str, fits.LobeFits]:
    """Every family fitted to both lobes of every head of ``analysis`` (``spec`` at
    ``rope_position``), cached under ``"fits"`` (with the weights' fingerprint)."""
    key = (spec, analysis.card.fingerprint, rope_position)
    return cached("fits", key, lambda: fits.fit_lobes(analysis.spectra))


def lobe_fit_errors(spec: str, rope_position: int, analysis: ModelAnalysis) -> pd.DataFrame:
    """The model's average fit error per family and lobe (:func:`fits.mean_errors`), cached
    under ``"fits_errors"``: the one definition the fits and compare pages share."""
    return cached(
        "fits_errors",
        (spec, analysis.card.fingerprint, rope_position),
        lambda: fits.mean_errors(
            fits.fit_table(analysis.heads, lobe_fits(spec, rope_position, analysis))
        ),
    )
