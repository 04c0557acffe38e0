"""Figure 10: profiles of spectra sampled from two gamma lobes, along the edge of the simplex that
holds the Theorem 5 limit (inputs: :mod:`headforms.analyses.theorem5`).
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..analyses.theorem5 import limit_edge
from .style import (
    TEMPLATE,
    model_color,
)


def theorem5_figure(
    samples: pd.DataFrame, limit: tuple[float, float, float, float], parameters: str = ""
) -> go.Figure:
    """Fig 10: sampled profiles by their coordinate b on the limit's edge (horizontal): {d = 0}
    from the vertex c = 1 at b = 0 to the vertex b = 1, or {c = 0} from the vertex d = 1 when
    |mu| > nu (:func:`headforms.analyses.theorem5.limit_edge`); one row per n, the Theorem 5
    limit marked ×."""
    vertex, other = limit_edge(limit)
    sizes = sorted(samples["n"].unique())
    fig = go.Figure()
    rng = np.random.default_rng(0)
    for i, n in enumerate(sizes):
        part = samples[samples["n"] == n]
        jitter = rng.uniform(-0.15, 0.15, len(part))
        fig.add_trace(
            go.Scatter(
                x=part["b"],
                y=i + jitter,
                mode="markers",
                marker={"color": model_color(i), "size": 6, "opacity": 0.7},
                name=f"n = {n}",
                customdata=part[[vertex, other]].to_numpy(),
                hovertemplate=f"b %{{x:.4f}}<br>{vertex} %{{customdata[0]:.4f}}, "
                f"{other} %{{customdata[1]:.2e}}<extra>n = {n}</extra>",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=[limit[1]],
                y=[i],
                mode="markers",
                marker={"symbol": "x", "size": 16, "color": "black"},
                name=f"limit b = {limit[1]:.3f} (Theorem 5)",
                showlegend=i == 0,
                legendgroup="limit",
                hovertemplate=f"limit b = {limit[1]:.4f}<extra></extra>",
            )
        )
    fig.add_shape(type="line", x0=0, x1=1, y0=-0.5, y1=-0.5, line={"color": "#444444"})
    for x, text in ((0.0, f"vertex {vertex} = 1"), (1.0, "vertex b = 1")):
        fig.add_annotation(x=x, y=-0.5, text=text, showarrow=False, yshift=10)
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": "Profiles of spectra sampled from two gamma lobes (Theorem 5)"
            + (f"<br><sup>{parameters}</sup>" if parameters else "")
        },
        xaxis={
            "title": {
                "text": f"b along the edge {{{other} = 0}}: vertex {vertex} = 1 (left) to vertex "
                "b = 1 (right)"
            },
            "range": [-0.02, 1.02],
        },
        yaxis={
            "title": {"text": "eigenvalues per side n"},
            "tickvals": list(range(len(sizes))),
            "ticktext": [str(n) for n in sizes],
            "range": [-0.6, len(sizes) - 0.4],
        },
        height=200 + 110 * len(sizes),
    )
    return fig
