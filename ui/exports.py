"""Downloadable files of an analysis (built lazily when the user clicks a download button)."""

from __future__ import annotations

import io

import numpy as np

from headforms import ModelAnalysis


def heads_csv(analysis: ModelAnalysis) -> str:
    """The per-head table with its Gaussian baseline (``rand_*``) as CSV text (layer-major)."""
    from .loading import ensure_baseline

    return analysis.table(baseline=ensure_baseline(analysis) is not None).to_csv(index=False)


def spectra_npz(analysis: ModelAnalysis) -> bytes:
    """The spectra arrays and the baseline's (``rand_*``), rows aligned with the per-head table,
    plus ``layer``/``head``."""
    from .loading import ensure_baseline

    buffer = io.BytesIO()
    arrays = analysis.arrays(baseline=ensure_baseline(analysis) is not None)
    arrays["layer"] = analysis.heads["layer"].to_numpy()
    arrays["head"] = analysis.heads["head"].to_numpy()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()
