"""The per-head columns and spectra every stage names: one list each, at the bottom of the
package (the forms stage fills them, the stores keep them, tables and pages read them).

Tables are held as numpy columns; :func:`frame` makes the pandas ``DataFrame`` on first use,
so a command that only prints a summary never imports pandas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

METRIC_COLUMNS = (
    "a",
    "b",
    "c",
    "d",
    "b_sym",
    "c_sym",
    "d_sym",
    "energy",
    "pairing",
    "parity",
    "n_pos",
    "n_neg",
    "n_zero",
    "norm_l",
    "balance",
    "participation_ratio",
    "stable_rank",
    "leading_share",
    "rho",
    "lobe_departure",
    "pairing_bound",
    "pairing_gap",
    "theorem5_b",
    "theorem5_c",
    "theorem5_d",
)
"""Per-head metrics of a form (:func:`headforms.forms.form_metrics`), in table order."""

TABLE_COLUMNS = ("layer", "head", "kv_head", *METRIC_COLUMNS, "q_bias_norm", "k_bias_norm")
"""Columns of a model's per-head table."""

BASELINE_PREFIX = "rand_"
"""Prefix of the baseline's columns and spectra when they are joined to a model's
(:meth:`headforms.model_analysis.ModelAnalysis.table`, ``.arrays``): the only place they meet."""

CORE_SPECTRA = ("eig_s", "lobe_pos", "lobe_neg")
"""Spectra every analysis has (the per-head table is computed from them)."""

EXTRA_SPECTRA = ("sv_a", "eig_l_abs")
"""Spectra computed only when asked for: singular values of A, moduli of the eigenvalues of L."""

ALL_SPECTRA = CORE_SPECTRA + EXTRA_SPECTRA

BASELINE_SPECTRA = ("eig_s", "lobe_pos", "lobe_neg", "sv_a")
"""Spectra kept for the Gaussian baseline (the eigenvalues of L are not needed)."""


def frame(columns: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """A ``DataFrame`` of numpy columns (pandas imported here, on first use)."""
    import pandas as pd

    return pd.DataFrame({name: np.asarray(values) for name, values in columns.items()})
