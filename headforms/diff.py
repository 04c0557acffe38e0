"""One model against another: two models of the same shapes matched head by head.

Head ``(layer, head)`` of A is matched with head ``(layer, head)`` of B (a base model and its
fine-tune, two seeds, one model with and without its QK-norm gains folded): a
:class:`ModelDiff` holds both as a :class:`headforms.head_paths.HeadPaths` of two points along
``model`` (A then B), and :meth:`ModelDiff.table` the head-by-head table: both profiles, their
differences, the distance moved on the simplex and both parities. Models of different shapes
are refused in one line naming the shapes that differ.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .columns import PROFILE, PROFILE_COLUMNS, SYMMETRIC_PROFILE, frame
from .forms import simplex_distance
from .head_paths import HeadPaths
from .options import DEFAULT_OPTIONS, AnalysisOptions
from .series import check_same_shapes

if TYPE_CHECKING:
    import pandas as pd

    from .model_analysis import ModelAnalysis
    from .sources import Policy
    from .streaming import Progress

AXIS = "model"
"""The column of a diff's long table that names the model (A's spec, then B's)."""

COMPARED = PROFILE_COLUMNS
"""The per-head values a diff table gives for both models and as a difference (B - A)."""

SIDES = ("A", "B")


class ModelDiff(HeadPaths):
    """Two models of the same shapes, head by head (module doc): ``values`` are their specs."""

    def __init__(self, first: ModelAnalysis, second: ModelAnalysis):
        from .columns import TABLE_COLUMNS

        check_same_shapes(first.card, second.card, f"diff {first.card.spec} and {second.card.spec}")
        columns = {
            name: np.concatenate(
                [np.asarray(first.columns[name]), np.asarray(second.columns[name])]
            )
            for name in TABLE_COLUMNS
        }
        names = (first.card.spec, second.card.spec)
        super().__init__(AXIS, names, first.card, columns)
        self.analyses = (first, second)

    def table(self) -> pd.DataFrame:
        """One row per head: ``layer, head, kv_head``, both models' :data:`COMPARED` values
        (``a_A`` ... ``pairing_B``), the differences ``delta_a = a_B - a_A`` ..., the distance
        moved on the simplex (``distance``: profile (a, b, c, d); ``distance_sym``: symmetric
        profile, on the triangle), both parities and whether it flipped."""
        first, second = self.at(0), self.at(1)
        columns: dict[str, np.ndarray] = {
            "layer": first["layer"],
            "head": first["head"],
            "kv_head": first["kv_head"],
        }
        for side, values in zip(SIDES, (first, second), strict=True):
            columns.update({f"{name}_{side}": values[name] for name in COMPARED})
        for name in COMPARED:
            columns[f"delta_{name}"] = np.asarray(second[name], float) - np.asarray(
                first[name], float
            )
        columns["distance"] = self.distance(PROFILE)
        columns["distance_sym"] = self.distance(SYMMETRIC_PROFILE)
        columns["parity_A"], columns["parity_B"] = first["parity"], second["parity"]
        columns["parity_flip"] = first["parity"] != second["parity"]
        return frame(columns)

    def distance(self, coordinates: tuple[str, ...]) -> np.ndarray:
        """Each head's distance from A to B on the simplex of ``coordinates`` (unit edges)."""
        ends = [np.column_stack([self.at(i)[c].astype(float) for c in coordinates]) for i in (0, 1)]
        return simplex_distance(*ends)


def diff(
    first: str,
    second: str,
    options: AnalysisOptions = DEFAULT_OPTIONS,
    progress: Progress | None = None,
    policy: Policy | None = None,
    options_b: AnalysisOptions | None = None,
) -> ModelDiff:
    """Analyse two models at ``options`` (B at ``options_b`` if given: one model with and
    without its QK-norm gains folded is a diff too), each cached as any analysis, within
    ``policy``, and match them head by head; models of different shapes are refused in one
    line."""
    from .engine import analyze

    analyses = [
        analyze(spec, options=opts, progress=progress, policy=policy)
        for spec, opts in ((first, options), (second, options_b or options))
    ]
    return ModelDiff(*analyses)
