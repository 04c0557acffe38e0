"""Tables in the dashboard: published per-head tables in model pickers and pages without
spectra; range filters and row selections of the heads table.

A table file typed in a picker stands for all its models (``FILE::MODEL`` each,
:mod:`headforms.tables`); such models have no spectra (pages that need them say so in one line
with :func:`require_spectra`) and a Gaussian baseline only when the table gives N
(:func:`ui.loading.baseline_heads`). A column's range filter is a slider over its finite
values (:func:`value_bounds`, :func:`range_mask`); a row selection comes from the browser and is
checked (:func:`selected_row`). The range filters and the sort are URL parameters
(:class:`RangeFilters`, :class:`SortOrder`, see :mod:`ui.links`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from headforms import HeadformsError, ModelAnalysis
from headforms.sources import Spec, parse_spec
from headforms.tables import expand_table_spec

from . import guard, links


def expand_models(specs: Iterable[str]) -> list[str]:
    """Specs with every table file replaced by its models' specs (a bad table: one st.error);
    at most :data:`ui.guard.MAX_EXTRA_MODELS` specs typed, each of at most ``MAX_SPEC_LENGTH``
    characters, and at most as many models once the tables are expanded (one toast for the
    rest)."""
    out: list[str] = []
    for spec in guard.extra_models(specs):
        try:
            out.extend(expand_table_spec(spec, guard.policy()))
        except HeadformsError as error:
            st.error(guard.plain(guard.public_message(str(error))), icon=":material/error:")
    models = list(dict.fromkeys(out))
    if len(models) > guard.MAX_EXTRA_MODELS:
        st.toast(
            f"Showing the first {guard.MAX_EXTRA_MODELS} of the {len(models)} models named "
            f"(at most {guard.MAX_EXTRA_MODELS} besides the sidebar's).",
            icon=":material/block:",
        )
    return models[: guard.MAX_EXTRA_MODELS]


def _table(spec: str) -> Spec | None:
    """The parsed spec if it names a published table (or a model in one), else None."""
    try:
        parsed = parse_spec(spec, guard.policy())
    except HeadformsError:
        return None
    return parsed if parsed.kind == "table" else None


def sibling_models(spec: str) -> list[str]:
    """The specs of every model in the table ``spec`` comes from (``[]`` if not a table)."""
    parsed = _table(spec)
    if parsed is None:
        return []
    try:
        return expand_table_spec(parsed.value, guard.policy())
    except HeadformsError:
        return []


def first_model(spec: str) -> str:
    """A bare table file with several models -> its first model's spec; other specs unchanged."""
    parsed = _table(spec)
    if parsed is None or parsed.model is not None:
        return spec
    models = sibling_models(spec)
    return models[0] if len(models) > 1 else spec


def require_spectra(analysis: ModelAnalysis, page: str) -> None:
    """Stop the page with one line when the model has no spectra (a published table without
    its spectra file)."""
    if not analysis.spectra:
        st.info(
            f"The {page} page needs the eigenvalue spectra of S; {guard.plain(analysis.card.name)} "
            "comes from a published per-head table without its spectra file "
            "(<model>_spectra.npz beside the table), so it has only the profiles and scores.",
            icon=":material/info:",
        )
        links.stop_page()


RELATIVE_WIDTH = 1e-9
"""A constant column's slider spans ``[v, v + max(|v|, 1) * RELATIVE_WIDTH]``: a range st.slider
accepts at any magnitude (an absolute 1e-9 vanishes in rounding above ~1.7e7)."""
SLIDER_STEPS = 200
"""Steps of a range slider over its column's values."""


def value_bounds(values: Any) -> tuple[float, float]:
    """``(low, high)`` of a column's finite values for a range slider, ``low < high`` always
    (a constant column widened by :data:`RELATIVE_WIDTH`; ``(0, 1)`` when none is finite)."""
    numbers = np.asarray(values, dtype=float)
    numbers = numbers[np.isfinite(numbers)]
    if not numbers.size:
        return 0.0, 1.0
    low, high = float(numbers.min()), float(numbers.max())
    if high <= low:
        high = low + max(abs(low), 1.0) * RELATIVE_WIDTH
    return low, high


def range_mask(
    column: pd.Series, chosen: tuple[float, float], bounds: tuple[float, float]
) -> pd.Series:
    """Rows of ``column`` within ``chosen``; missing values stay while the range is the whole of
    ``bounds`` (an untouched filter hides nothing)."""
    untouched = tuple(chosen) == tuple(bounds)
    return column.between(*chosen) | (column.isna() & untouched)


def range_filter(container: Any, table: pd.DataFrame, column: str, key: str) -> pd.Series:
    """A range slider over ``table[column]`` drawn in ``container``; the rows it keeps. The
    slider starts at the whole range unless ``key`` already holds one (a link, an earlier run)."""
    bounds = value_bounds(table[column])
    chosen = container.slider(
        column,
        *bounds,
        None if key in st.session_state else bounds,
        step=(bounds[1] - bounds[0]) / SLIDER_STEPS,
        format="%.4g",
        key=key,
    )
    return range_mask(table[column], chosen, bounds)


MIN_DIGITS = 4
"""Significant digits a range filter's bound has at least in a link."""


def short_bound(value: float, values: Any, low: bool) -> str:
    """``value`` as a lower (``low``) or upper bound in a link: the fewest significant digits
    (at least :data:`MIN_DIGITS`) that keep exactly the same rows of ``values``, so that a link
    is short and reproduces the filter."""
    numbers = np.asarray(values, dtype=float)
    numbers = numbers[np.isfinite(numbers)]
    keeps = (numbers >= value) if low else (numbers <= value)
    for digits in range(MIN_DIGITS, 18):
        text = f"{value:.{digits}g}"
        rounded = float(text)
        if np.array_equal(keeps, (numbers >= rounded) if low else (numbers <= rounded)):
            return text
    return repr(value)


@dataclass
class RangeFilters(links.Link):
    """The ``range`` parameter: one value per filtered column, ``energy~0.2~0.8`` (an empty
    bound: the column's own end; ``energy`` alone: the whole range; ``:`` separates too). It
    fills the multiselect of filtered columns (``columns_key``) and each column's slider
    (``slider_key(column)``)."""

    name: str
    columns_key: str
    slider_key: Callable[[str], str]
    table: pd.DataFrame
    numeric: Sequence[str]

    def keys(self) -> tuple[str, ...]:
        return (self.columns_key, *(self.slider_key(column) for column in self.numeric))

    def ensure(self) -> None:
        st.session_state.setdefault(self.columns_key, [])

    def restore(self, values: list[str]) -> None:
        chosen: dict[str, tuple[float, float]] = {}
        problems: list[str] = []
        for text in values:
            text = text.strip().replace(":", links.SEPARATOR)
            column, _, ends = text.partition(links.SEPARATOR)
            if column not in self.numeric:
                problems.append(f"{links.shown([column])} is not a numeric column")
                continue
            bounds = value_bounds(self.table[column])
            low, high = self._ends(ends, bounds)
            if low is None or high is None:
                problems.append(f"{links.shown([text])} is not column~low~high")
                low, high = bounds
            elif low > high:
                problems.append(f"{column}'s low end {low:g} is above its high end {high:g}")
                low, high = high, low
            # Within the column's own values (the slider's ends): the same rows, no notice.
            inside = (min(max(low, bounds[0]), bounds[1]), min(max(high, bounds[0]), bounds[1]))
            chosen.setdefault(column, inside)
        st.session_state[self.columns_key] = list(chosen)
        for column, ends in chosen.items():
            st.session_state[self.slider_key(column)] = ends
        if problems:
            showing = ", ".join(self._write(c, e) for c, e in chosen.items()) or "no range filter"
            links.correction(
                self.name,
                values,
                f"was corrected ({'; '.join(problems)})",
                showing,
                (self.columns_key, list(chosen)),
            )

    @staticmethod
    def _ends(text: str, bounds: tuple[float, float]) -> tuple[float | None, float | None]:
        """``low~high`` (either empty: that end of ``bounds``) as numbers; None where not one."""
        parts = text.split(links.SEPARATOR) if text else ["", ""]
        if len(parts) != 2:
            return None, None
        out: list[float | None] = []
        for part, end in zip(parts, bounds, strict=True):
            try:
                number = float(part) if part.strip() else end
            except ValueError:
                number = None
            out.append(number if number is not None and math.isfinite(number) else None)
        return out[0], out[1]

    def _write(self, column: str, ends: tuple[float, float]) -> str:
        bounds = value_bounds(self.table[column])
        values = self.table[column]
        low = "" if ends[0] <= bounds[0] else short_bound(ends[0], values, low=True)
        high = "" if ends[1] >= bounds[1] else short_bound(ends[1], values, low=False)
        return links.SEPARATOR.join((column, low, high)) if low or high else column

    def values(self) -> list[str] | None:
        state = st.session_state
        columns = [c for c in state.get(self.columns_key, []) if c in self.numeric]
        if not columns:
            return None
        return [
            self._write(c, state.get(self.slider_key(c), value_bounds(self.table[c])))
            for c in columns
        ]


@dataclass
class SortOrder(links.Link):
    """The ``sort`` parameter: a column, ``-`` before it for decreasing (``sort=-energy``); it
    fills the column picker (``column_key``, "" for the table's own order) and the decreasing
    toggle (``descending_key``)."""

    name: str
    column_key: str
    descending_key: str
    columns: Sequence[str]

    def keys(self) -> tuple[str, ...]:
        return (self.column_key, self.descending_key)

    def ensure(self) -> None:
        state = st.session_state
        state.setdefault(self.column_key, "")
        state.setdefault(self.descending_key, False)
        if state[self.column_key] not in ("", *self.columns):  # a column of another table
            state[self.column_key] = ""

    def restore(self, values: list[str]) -> None:
        text = values[-1].strip()
        column = text.removeprefix("-")
        if column in self.columns:
            st.session_state[self.column_key] = column
            st.session_state[self.descending_key] = text.startswith("-")
        else:
            st.session_state[self.column_key] = ""
            st.session_state[self.descending_key] = False
            links.correction(
                self.name,
                values,
                "is not a column of the table (with - before it to sort decreasing)",
                "the table's own order",
                (self.column_key, ""),
            )

    def values(self) -> list[str] | None:
        column = st.session_state.get(self.column_key, "")
        if column not in self.columns:
            return None
        return [("-" if st.session_state.get(self.descending_key) else "") + column]


def selected_row(rows: Any, n_rows: int) -> int | None:
    """The first row of a table selection sent by the browser (``{"rows": [...]}``) if it is a
    row of the ``n_rows`` shown, else None (after one toast line)."""
    if isinstance(rows, list) and not rows:
        return None
    first = rows[0] if isinstance(rows, list) else rows
    row = guard.whole_number(first, 0, n_rows - 1)
    if row is None:
        st.toast(
            f"Ignored a table selection of row {guard.shown(first)}: the table shows "
            f"{n_rows} rows.",
            icon=":material/block:",
        )
    return row


__all__ = [
    "RangeFilters",
    "SortOrder",
    "expand_models",
    "first_model",
    "range_filter",
    "range_mask",
    "require_spectra",
    "selected_row",
    "short_bound",
    "sibling_models",
    "value_bounds",
]
