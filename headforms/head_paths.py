"""Paths of heads: every head of one model at each point of an ordered axis, the one value that
the three sources of motion share (a sweep over RoPE positions, the checkpoints of a training
run, one model against another).

The long table holds, at each point of the axis in order, every head's row as one analysis's
per-head table holds it (layer-major), with the axis value in its own column
(``rope_position``, ``step`` or ``model``) and any other per-point columns (a checkpoint's
spec). :meth:`HeadPaths.at` is the table at one point; :meth:`HeadPaths.path` one head's rows
along the axis. Columns are numpy arrays; pandas is imported on first use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .card import ModelCard
from .columns import TABLE_COLUMNS, frame

if TYPE_CHECKING:
    import pandas as pd


class HeadPaths:
    """Every head of a model (``card``) at each of ``values`` of ``axis``.

    ``columns``: the per-head columns (:data:`headforms.columns.TABLE_COLUMNS`), point-major:
    ``len(values) * card.total_heads`` rows. ``point_columns``: columns with one value per
    point (repeated for each head), e.g. each checkpoint's spec.
    """

    def __init__(
        self,
        axis: str,
        values: Sequence[Any],
        card: ModelCard,
        columns: Mapping[str, np.ndarray],
        point_columns: Mapping[str, Sequence[Any]] | None = None,
    ):
        self.axis = axis
        self.values = tuple(values)
        self.card = card
        heads = card.total_heads
        self.point_columns = {k: list(v) for k, v in (point_columns or {}).items()}
        for name, column in {axis: self.values, **self.point_columns}.items():
            if len(column) != len(self.values):
                raise ValueError(f"{name}: {len(column)} values for {len(self.values)} points")
        self._columns = {name: np.asarray(columns[name]) for name in TABLE_COLUMNS}
        if any(len(c) != len(self.values) * heads for c in self._columns.values()):
            raise ValueError(f"the columns do not hold {len(self.values)} x {heads} rows")
        self._frame: pd.DataFrame | None = None

    @property
    def n_points(self) -> int:
        """Points on the axis."""
        return len(self.values)

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """The long table as numpy columns: the axis, the per-point columns, then the heads'."""
        heads = self.card.total_heads
        out: dict[str, np.ndarray] = {self.axis: np.repeat(np.asarray(self.values), heads)}
        for name, values in self.point_columns.items():
            out[name] = np.repeat(np.asarray(values, dtype=object), heads)
        out.update(self._columns)
        return out

    @property
    def table(self) -> pd.DataFrame:
        """The long table (pandas), one row per point and head."""
        if self._frame is None:
            self._frame = frame(self.columns)
        return self._frame

    def index(self, value: Any) -> int:
        """The point of ``value`` on the axis (a ValueError names the values there are)."""
        try:
            return self.values.index(value)
        except ValueError:
            raise ValueError(f"{self.axis} {value!r} is not on this path") from None

    def at(self, point: int) -> dict[str, np.ndarray]:
        """The per-head table at the ``point``-th value of the axis (numpy columns)."""
        heads = self.card.total_heads
        rows = slice(point * heads, (point + 1) * heads)
        return {name: column[rows] for name, column in self._columns.items()}

    def heads_at(self, point: int) -> pd.DataFrame:
        """:meth:`at` as a ``DataFrame`` (what the figures of one analysis take)."""
        return frame(self.at(point))

    def stacked(self, column: str) -> np.ndarray:
        """``column`` as an array (points, heads): one row per point, heads layer-major."""
        return self._columns[column].reshape(self.n_points, self.card.total_heads)

    def path(self, layer: int, head: int) -> pd.DataFrame:
        """One head's rows along the axis, in order (the axis column first)."""
        row = self.card.n_heads * int(layer) + int(head)
        if not (0 <= layer < self.card.n_layers and 0 <= head < self.card.n_heads):
            raise IndexError(f"no head L{layer}H{head} in {self.card.name}")
        rows = row + self.card.total_heads * np.arange(self.n_points)
        return frame({name: column[rows] for name, column in self.columns.items()})
