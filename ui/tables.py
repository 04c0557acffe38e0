"""Tables in the dashboard: published per-head tables in model pickers and pages without
spectra; range filters and row selections of the heads table.

A table file typed in a picker stands for all its models (``FILE::MODEL`` each,
:mod:`headforms.tables`); such models have no spectra (pages that need them say so in one line
with :func:`require_spectra`) and a Gaussian baseline only when the table gives N
(:func:`ui.loading.baseline_heads`). A column's range filter is a slider over its finite values
(:func:`value_bounds`, :func:`range_mask`); a row selection comes from the browser and is
checked (:func:`selected_row`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from headforms import HeadformsError, ModelAnalysis
from headforms.sources import Spec, parse_spec
from headforms.tables import expand_table_spec

from . import guard


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
            st.error(guard.public_message(str(error)), icon=":material/error:")
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
    """Stop the page with one line when the model has no spectra (a published table)."""
    if not analysis.spectra:
        st.info(
            f"The {page} page needs the eigenvalue spectra of S; {guard.plain(analysis.card.name)} "
            "comes from a "
            "published per-head table, which has only the profiles and scores.",
            icon=":material/info:",
        )
        st.stop()


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
    """A range slider over ``table[column]`` drawn in ``container``; the rows it keeps."""
    bounds = value_bounds(table[column])
    chosen = container.slider(
        column,
        *bounds,
        bounds,
        step=(bounds[1] - bounds[0]) / SLIDER_STEPS,
        format="%.4g",
        key=key,
    )
    return range_mask(table[column], chosen, bounds)


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
    "expand_models",
    "first_model",
    "range_filter",
    "range_mask",
    "require_spectra",
    "selected_row",
    "sibling_models",
    "value_bounds",
]
