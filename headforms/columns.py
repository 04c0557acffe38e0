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

PROFILE = ("a", "b", "c", "d")
"""A head's profile: its barycentric coordinates on the simplex (antisymmetric, hyperbolic,
PSD and NSD shares of ‖L‖²)."""
SYMMETRIC_PROFILE = ("b_sym", "c_sym", "d_sym")
"""Its symmetric part's profile: its coordinates on the triangle."""
PROFILE_COLUMNS = (*PROFILE, *SYMMETRIC_PROFILE, "energy", "pairing")
"""What the simplex and triangle draw of a head (both profiles, symmetric energy, pairing score):
what their exports, a diff and a head's curves hold."""

METRIC_COLUMNS = (
    *PROFILE_COLUMNS,
    "parity",
    "n_pos",
    "n_neg",
    "n_zero",
    "norm_l",
    "balance",
    "trace_ratio",
    "participation_ratio",
    "stable_rank",
    "leading_share",
    "participation_ratio_s",
    "stable_rank_s",
    "leading_share_s",
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

COLUMN_DESCRIPTIONS: dict[str, str] = {
    "layer": "layer index, from 0",
    "head": "query head index within the layer, from 0",
    "kv_head": "key head the query head uses (grouped-query attention: h // (H / H_kv))",
    "a": "antisymmetric share ‖A‖²/‖L‖²",
    "b": "hyperbolic share: matched positive/negative eigenvalue pairs of S, 2⟨λ₊, λ₋⟩/‖L‖²",
    "c": "excess positive eigenvalues of S (PSD share), ‖(λ₊ − λ₋)₊‖²/‖L‖²",
    "d": "excess negative eigenvalues of S (NSD share), ‖(λ₋ − λ₊)₊‖²/‖L‖²",
    "b_sym": "b of S alone (divided by ‖S‖²)",
    "c_sym": "c of S alone",
    "d_sym": "d of S alone",
    "energy": "symmetric energy ‖S‖²/‖L‖² (the author's symmetric_energy)",
    "pairing": "pairing score 1 − ‖λ₊ − λ₋‖/‖S‖",
    "parity": "II if c_S + d_S ≤ the Type II tolerance, else I+ if c_S > d_S, else I−",
    "n_pos": "positive eigenvalues of S",
    "n_neg": "negative eigenvalues of S",
    "n_zero": "zero eigenvalues of S, of N (at least N − 2n)",
    "norm_l": "Frobenius norm ‖L‖",
    "balance": "1 − |n₊ − n₋|/(n₊ + n₋)",
    "trace_ratio": "|tr L|/‖L‖ (the author's)",
    "participation_ratio": "(Σh²)²/Σh⁴ of the singular values h of L (the author's)",
    "stable_rank": "Σh²/h₁² of the singular values h of L (the author's)",
    "leading_share": "h₁²/Σh² of the singular values h of L (the author's)",
    "participation_ratio_s": "(Σλ²)²/Σλ⁴ of the eigenvalues λ of S",
    "stable_rank_s": "‖S‖²/max λ² of the eigenvalues λ of S",
    "leading_share_s": "max λ²/‖S‖² of the eigenvalues λ of S",
    "rho": "lobe ratio ρ = ‖λ₋‖/‖λ₊‖",
    "lobe_departure": "‖λ₋ − ρλ₊‖/‖λ₋‖: 0 when the sorted lobes are proportional",
    "pairing_bound": "1 − |1 − ρ|/√(1 + ρ²), the pairing score's bound at ρ",
    "pairing_gap": "pairing bound − pairing score",
    "theorem5_b": "b_S of proportional lobes with ratio ρ (Theorem 5)",
    "theorem5_c": "c_S of proportional lobes with ratio ρ (Theorem 5)",
    "theorem5_d": "d_S of proportional lobes with ratio ρ (Theorem 5)",
    "q_bias_norm": "norm of the query bias (excluded from L)",
    "k_bias_norm": "norm of the key bias (excluded from L)",
}
"""What each per-head column holds (the table page's column help, the docs): the one place a
column's meaning is written. A column under one of the author's names means the author's
quantity; the same statistic of S's spectrum ends in ``_s``."""

AUTHOR_COLUMNS: dict[str, str] = {"symmetric_energy": "energy"}
"""Columns of the author's published ``head_statistics.csv`` that this package names otherwise
(the others have the same name and meaning; its ``dim`` is 2n, read by
:mod:`headforms.tables`)."""

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


SHARE_PARTS: dict[str, str] = {
    "pos": "positive lobe",
    "neg": "negative lobe",
    "anti": "antisymmetric part",
}
"""The bilinear parts of a head's scores on a text (:mod:`headforms.why`), by the short name
their share columns carry."""
REALISED_SHARE_COLUMNS = tuple(f"share_{part}" for part in SHARE_PARTS)
"""Each part's share of the mean square of the head's scores on a text."""
SPREAD_SHARE_COLUMNS = tuple(f"spread_{part}" for part in SHARE_PARTS)
"""Each part's share of the spread of the scores within each query's row."""
WEIGHT_SHARE_COLUMNS = tuple(f"weight_{part}" for part in SHARE_PARTS)
"""Each part's share of ``||L||^2`` at d = 0: the weights alone."""
SHARE_TITLES: dict[str, str] = {
    **{f"share_{p}": f"{name} share on the text (mean square)" for p, name in SHARE_PARTS.items()},
    **{
        f"spread_{p}": f"{name} share on the text (within-row spread)"
        for p, name in SHARE_PARTS.items()
    },
    **{f"weight_{p}": f"{name} share of the weights (d = 0)" for p, name in SHARE_PARTS.items()},
}
"""Every share column of a score split's per-head table, by name: its title."""
