"""The paper's six observations and their status (Table 14), and the one measured here that no
other module holds: Observation 4, the symmetric bias of trained heads (their symmetric energy
against the Gaussian baseline of the same shapes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Observation:
    """One row of Table 14: the observation, its status in the paper and what explains it."""

    number: int
    statement: str
    status: str
    explanation: str

    @property
    def label(self) -> str:
        """``Status (Table 14): Proved: Theorem 3``: what a view of the observation shows."""
        tail = f": {self.explanation}" if self.explanation else ""
        return f"Status in the paper (Table 14): {self.status}{tail}"


OBSERVATIONS: dict[int, Observation] = {
    o.number: o
    for o in (
        Observation(1, "the symmetric part is balanced", "Proved", "Theorem 3"),
        Observation(
            2,
            "head profiles accumulate near rank-one profiles Θ ⊂ Δ₃",
            "Partially explained",
            "Theorem 5; the proportionality of the lobes in its proof holds approximately at the "
            "heads (§ 5.2)",
        ),
        Observation(3, "λ(S) has two gamma-like lobes", "Unexplained", ""),
        Observation(
            4,
            "symmetric bias of attention heads",
            "Partially explained",
            "[10, Theorem 2.4] for the bidirectional case with assumptions; unexplained for "
            "decoder-only models",
        ),
        Observation(
            5,
            "the sorted spectral lobes are approximately proportional",
            "Linked to profile accumulation",
            "by Theorem 5 (§ 5.2.1)",
        ),
        Observation(6, "|λ(L)| and σ(T) have gamma-like profiles", "Unexplained", ""),
    )
}
"""Table 14 of the paper, by observation number."""


def symmetric_bias_summary(
    models: Mapping[str, pd.DataFrame], baselines: Mapping[str, pd.DataFrame]
) -> pd.DataFrame:
    """Observation 4 per model: the median symmetric energy ‖S‖²/‖L‖² of the trained heads and
    of their Gaussian baseline (whose expectation is (N + 1)/(2N), just above 1/2), and the
    percent of trained heads more symmetric than 1/2 and than the baseline's median."""
    rows = []
    for name, heads in models.items():
        energy = heads["energy"].to_numpy(dtype=float)
        energy = energy[np.isfinite(energy)]
        base = baselines[name]["energy"].to_numpy(dtype=float) if name in baselines else None
        base = base[np.isfinite(base)] if base is not None else np.array([])
        base_median = float(np.median(base)) if base.size else float("nan")
        rows.append(
            {
                "model": name,
                "heads": int(energy.size),
                "median energy": float(np.median(energy)) if energy.size else float("nan"),
                "baseline median energy": base_median,
                "above 1/2 (%)": 100.0 * float(np.mean(energy > 0.5)) if energy.size else np.nan,
                "above baseline median (%)": 100.0 * float(np.mean(energy > base_median))
                if energy.size and base.size
                else float("nan"),
            }
        )
    return pd.DataFrame(rows)
