"""One head along a path (RoPE positions, training steps): its profile and its parity type at
each point (:func:`headforms.analyses.motion.head_curves`)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..columns import PROFILE
from ..forms import PARITY_LABELS, PARITY_TYPE_II_TEXT
from .animated import AXIS_NAMES
from .style import (
    PARITY_COLORS,
    PARITY_NAMES,
    TEMPLATE,
    UIREVISION,
    FigureInputError,
)


def curves_figure(curves: pd.DataFrame, axis: str, head: str, model: str) -> go.Figure:
    """One head's profile (a, b, c, d) against the axis (above) and its parity there (below:
    one row per type, the head's type marked at each point, with the Type II band's rule), from
    :func:`headforms.analyses.motion.head_curves`."""
    if axis not in curves.columns:
        raise FigureInputError(f"the curves have no column {axis!r}")
    x = curves[axis].to_numpy()
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        row_heights=[0.72, 0.28],
        vertical_spacing=0.06,
    )
    for name in PROFILE:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=curves[name].to_numpy(float),
                mode="lines+markers" if len(x) <= 40 else "lines",
                marker={"size": 5},
                line={"width": 2, "color": PROFILE_COLORS[name]},
                name=name,
                hovertemplate=f"{AXIS_NAMES.get(axis, axis)} %{{x}}: {name} = %{{y:.4f}}"
                "<extra></extra>",
            ),
            row=1,
            col=1,
        )
    parity = curves["parity"].to_numpy()
    for label in PARITY_LABELS:
        at = parity == label
        fig.add_trace(
            go.Scatter(
                x=x[at],
                y=[PARITY_NAMES[label]] * int(at.sum()),
                mode="markers",
                marker={"symbol": "square", "size": 8, "color": PARITY_COLORS[label]},
                name=PARITY_NAMES[label],
                showlegend=False,
                hovertemplate=f"{AXIS_NAMES.get(axis, axis)} %{{x}}: {PARITY_NAMES[label]}"
                "<extra></extra>",
            ),
            row=2,
            col=1,
        )
    names = [AXIS_NAMES.get(axis, axis)]
    label = {"rope_position": "RoPE relative position d", "step": "training step"}.get(axis, axis)
    fig.update_yaxes(title={"text": "share of ‖L‖²"}, range=[0, 1], row=1, col=1)
    fig.update_yaxes(
        categoryorder="array",
        categoryarray=[PARITY_NAMES[p] for p in reversed(PARITY_LABELS)],
        title={"text": "parity"},
        row=2,
        col=1,
    )
    fig.update_xaxes(title={"text": label}, row=2, col=1)
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"{head} of {model}: profile and parity against {names[0]}<br><sup>parity: "
            f"Type II if c_S + d_S ≤ {PARITY_TYPE_II_TEXT}, else I+ if c_S > d_S, else I−</sup>"
        },
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1, "xanchor": "right"},
        height=460,
        margin={"l": 60, "r": 20},
        uirevision=UIREVISION,
    )
    return fig


PROFILE_COLORS = {"a": "#7f7f7f", "b": "#009E73", "c": "#E69F00", "d": "#0072B2"}
"""Curve colours of the profile's shares: a grey, b, c, d in the colours of the parity types
they make (b: Type II's, c: I+'s, d: I−'s)."""


# ---------------------------------------------------------------------------------------------
# One model against another
