"""Published per-head tables in the dashboard: table files in model pickers, pages without spectra.

A table file typed in a picker stands for all its models (``FILE::MODEL`` each,
:mod:`headforms.tables`); such models have no spectra (pages that need them say so in one line
with :func:`require_spectra`) and a Gaussian baseline only when the table gives N
(:func:`baseline_heads`).
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import streamlit as st

from headforms import HeadformsError, ModelAnalysis
from headforms.errors import UnavailableDataError
from headforms.sources.specs import split_spec
from headforms.tables import expand_table_spec, table_spec


def expand_models(specs: Iterable[str]) -> list[str]:
    """Specs with every table file replaced by its models' specs (a bad table: one st.error)."""
    out: list[str] = []
    for spec in specs:
        try:
            out.extend(expand_table_spec(spec))
        except HeadformsError as error:
            st.error(str(error), icon=":material/error:")
    return list(dict.fromkeys(out))


def sibling_models(spec: str) -> list[str]:
    """The specs of every model in the table ``spec`` comes from (``[]`` if not a table)."""
    parts = split_spec(spec)
    if parts is None:
        return []
    try:
        return expand_table_spec(str(parts[0]))
    except HeadformsError:
        return []


def first_model(spec: str) -> str:
    """A bare table file with several models -> its first model's spec; other specs unchanged."""
    parts = split_spec(spec)
    if parts is None or parts[1] is not None:
        return spec
    models = sibling_models(spec)
    return models[0] if len(models) > 1 else spec


def require_spectra(analysis: ModelAnalysis, page: str) -> None:
    """Stop the page with one line when the model has no spectra (a published table)."""
    if not analysis.spectra:
        st.info(
            f"The {page} page needs the eigenvalue spectra of S; {analysis.card.name} comes from a "
            "published per-head table, which has only the profiles and scores.",
            icon=":material/info:",
        )
        st.stop()


def baseline_heads(analysis: ModelAnalysis) -> pd.DataFrame | None:
    """The Gaussian baseline's per-head table, or None when the model has none."""
    try:
        return analysis.baseline.heads
    except UnavailableDataError:
        return None


__all__ = [
    "baseline_heads",
    "expand_models",
    "first_model",
    "require_spectra",
    "sibling_models",
    "table_spec",
]
