"""Downloadable files of an analysis (built when the user clicks a download button:
:func:`ui.loading.analysis_download`)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np

from headforms import ModelAnalysis

if TYPE_CHECKING:
    from headforms.baseline import Baseline


def heads_csv(analysis: ModelAnalysis, baseline: Baseline | None) -> str:
    """The per-head table with its Gaussian baseline (``rand_*``, when the model has one) as
    CSV text (layer-major)."""
    return analysis.table(baseline).to_csv(index=False)


def spectra_npz(analysis: ModelAnalysis, baseline: Baseline | None) -> bytes:
    """The spectra arrays and the baseline's (``rand_*``), rows aligned with the per-head table,
    plus ``layer``/``head``."""
    buffer = io.BytesIO()
    arrays = analysis.arrays(baseline)
    arrays["layer"] = analysis.heads["layer"].to_numpy()
    arrays["head"] = analysis.heads["head"].to_numpy()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()
