"""A few numbers per record of a training run, for the loggers a run already has (TensorBoard,
Weights & Biases, ...): the parity shares, the mean antisymmetric share ``a``, the mean distance
to Theta, and how far the heads moved on the simplex since the run's previous record (the most,
the mean, and the heads that moved most, each under its own name).

Names start with :data:`PREFIX`; they hold only letters, digits, ``_`` and ``/`` (TensorBoard
rewrites other characters in a tag, with a warning each time).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..forms import PARITY_LABELS, simplex_distance
from .theta import theta_projection

PREFIX = "headforms/"
PROFILE = ("a", "b", "c", "d")
PARITY_NAMES = {"I+": "I_plus", "II": "II", "I-": "I_minus"}
"""Parity labels as they appear in scalar names."""
MOVED_MOST = 3
"""Heads named in the scalars of the heads that moved most."""


def record_scalars(
    columns: Mapping[str, np.ndarray], previous: Mapping[str, np.ndarray] | None = None
) -> dict[str, float]:
    """The scalars of one record's per-head ``columns`` (those of an analysis: ``layer``,
    ``head``, ``parity`` and the profile ``a, b, c, d``), and of the heads' moves since the
    ``previous`` record's columns (same heads in the same order) when there is one.

    ``share_<parity>``: the fraction of the heads of each parity type; ``mean_a``;
    ``mean_theta_distance`` (barycentric, :func:`headforms.analyses.theta.theta_projection`);
    ``moved_max``, ``moved_mean``: distance moved since the previous record on the unit-edge
    simplex (:func:`headforms.forms.simplex_distance`); ``moved/L<l>H<h>``: that distance for
    each of the :data:`MOVED_MOST` heads that moved most. Heads without a profile (a zero form)
    are left out of the means.
    """
    parity = np.asarray(columns["parity"])
    total = max(len(parity), 1)
    scalars = {
        f"{PREFIX}share_{PARITY_NAMES[label]}": float(np.count_nonzero(parity == label) / total)
        for label in PARITY_LABELS
    }
    profile = _profile(columns)
    _, distance, _ = theta_projection(profile)
    scalars[f"{PREFIX}mean_a"] = _mean(profile[:, 0])
    scalars[f"{PREFIX}mean_theta_distance"] = _mean(distance)
    if previous is None:
        return scalars
    moved = simplex_distance(_profile(previous), profile)
    scalars[f"{PREFIX}moved_max"] = float(np.nanmax(moved)) if np.isfinite(moved).any() else 0.0
    scalars[f"{PREFIX}moved_mean"] = _mean(moved)
    ranked = np.where(np.isfinite(moved), moved, -np.inf)
    layers, heads = np.asarray(columns["layer"]), np.asarray(columns["head"])
    for row in np.argsort(-ranked, kind="stable")[:MOVED_MOST]:
        if np.isfinite(moved[row]):
            scalars[f"{PREFIX}moved/L{int(layers[row])}H{int(heads[row])}"] = float(moved[row])
    return scalars


def _profile(columns: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.column_stack([np.asarray(columns[c], dtype=np.float64) for c in PROFILE])


def _mean(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if len(finite) else float("nan")
