"""A study's figures (:mod:`headforms.study`): the whole-model edits against their controls, and a
per-head sweep against the dose-response of its controls. Pure builders of the study's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .style import BASELINE_COLOR, HEAD_COLOR, TEMPLATE, FigureInputError

MEASURE_TITLES = {"delta_ce": "ΔCE (nats)", "cosine_distance": "cosine distance"}


def whole_model_figure(table: pd.DataFrame, measure: str = "delta_ce") -> go.Figure:
    """Each edit over the texts (``text == "all"``; else the first text): its measure (a
    diamond, with its 95% interval) against its controls' median and 10-90% spread (a grey bar),
    one row per edit; the p-value in the hover and the tick label."""
    rows = table[table["text"] == "all"]
    if rows.empty:
        rows = table.drop_duplicates("edit")
    if rows.empty or measure not in rows:
        raise FigureInputError(f"no whole-model row with {measure}")
    labels = [
        f"{edit} (p {p:.3f})" if np.isfinite(p) else f"{edit} (no controls)"
        for edit, p in zip(rows["edit"], rows["p_value"].astype(float), strict=True)
    ]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            y=labels,
            x=(rows["control_p90"] - rows["control_p10"]).astype(float),
            base=rows["control_p10"].astype(float),
            orientation="h",
            marker={"color": BASELINE_COLOR, "opacity": 0.35},
            name="controls, 10-90%",
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            y=labels,
            x=rows["control_median"].astype(float),
            mode="markers",
            marker={"color": BASELINE_COLOR, "symbol": "line-ns-open", "size": 16},
            name="controls' median",
        )
    )
    values = rows[measure].astype(float)
    fig.add_trace(
        go.Scatter(
            y=labels,
            x=values,
            error_x={
                "type": "data",
                "symmetric": False,
                "array": (rows["high"].astype(float) - values).clip(lower=0),
                "arrayminus": (values - rows["low"].astype(float)).clip(lower=0),
            },
            mode="markers",
            marker={"color": HEAD_COLOR, "symbol": "diamond", "size": 12},
            name="the edit (95% interval over positions)",
        )
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "Every head at once: each edit against its matched controls"},
        xaxis={"title": {"text": MEASURE_TITLES.get(measure, measure)}, "zeroline": True},
        yaxis={"title": {"text": "edit"}, "autorange": "reversed", "automargin": True},
        legend={"orientation": "h", "y": -0.2},
        height=120 + 40 * len(rows),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    return fig


def dose_response_figure(heads: pd.DataFrame, controls: pd.DataFrame, edit: str) -> go.Figure:
    """One sweep edit: every head's cost against the RMS change of its scores (coloured by
    parity in the hover), over every head's controls (grey), on a log dose axis."""
    part = heads[heads["edit"] == edit]
    if part.empty:
        raise FigureInputError(f"no head row of {edit}")
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=controls["score_rms"],
            y=controls["cost"],
            mode="markers",
            marker={"color": BASELINE_COLOR, "size": 5, "opacity": 0.5},
            name="controls (every head and sweep edit)",
            hovertemplate="control of L%{customdata[0]}.H%{customdata[1]}: %{y:.4g}<extra></extra>",
            customdata=controls[["layer", "head"]].to_numpy(),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=part["score_rms"],
            y=part["cost"],
            mode="markers",
            marker={"color": HEAD_COLOR, "size": 7},
            name=f"{edit}, each head alone",
            customdata=part[["layer", "head", "parity", "p_value"]].to_numpy(),
            hovertemplate="L%{customdata[0]}.H%{customdata[1]} (%{customdata[2]}): "
            "%{y:.4g}, p %{customdata[3]:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"'{edit}' on each head alone against the dose-response of controls"},
        xaxis={"title": {"text": "RMS change of the head's scores (log)"}, "type": "log"},
        yaxis={"title": {"text": MEASURE_TITLES.get(str(part["measure"].iloc[0]), "cost")}},
        legend={"orientation": "h", "y": -0.2},
        height=460,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    return fig
