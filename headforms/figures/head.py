"""One head's spectra: eigenvalues of S with their lobes, lambda_+ against lambda_-, singular
values of A, and its profile bars, each beside the Gaussian baseline of the same shapes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..columns import PROFILE, SYMMETRIC_PROFILE
from ..forms import lobes, unit_spectra
from .style import (
    BASELINE_COLOR,
    HEAD_COLOR,
    NEGATIVE_COLOR,
    POSITIVE_COLOR,
    TEMPLATE,
)


def _unit_nonzero(values: np.ndarray) -> tuple[np.ndarray, int]:
    """The unit spectra of heads (rows) pooled, exact zeros removed; returns (values, zeros)."""
    unit = unit_spectra(np.atleast_2d(values))
    return unit[unit != 0], int(np.count_nonzero(unit == 0))


def lobe_bars(
    centers: np.ndarray, counts: np.ndarray, width: float, show_legend: bool = True
) -> list[go.Bar]:
    """Histogram bars of eigenvalues of S scaled by ||S||: the positive lobe lambda_+ and the
    negative lobe -lambda_- in their two colours (one definition for every spectrum figure)."""
    bars = []
    for sign, color, name in (
        (1, POSITIVE_COLOR, "λ₊ (positive lobe)"),
        (-1, NEGATIVE_COLOR, "−λ₋ (negative lobe)"),
    ):
        mask = np.sign(centers) == sign
        bars.append(
            go.Bar(
                x=centers[mask],
                y=counts[mask],
                width=width,
                marker={"color": color},
                opacity=0.8,
                name=name,
                legendgroup=name,
                showlegend=show_legend,
                hovertemplate="eigenvalue/‖S‖ ≈ %{x:.3f}<br>count %{y:.2f}<extra></extra>",
            )
        )
    return bars


def eigenvalue_histogram(
    eig_s: np.ndarray, rand_eig_s: np.ndarray | None = None, title: str = "Eigenvalues of S"
) -> go.Figure:
    """Histogram of the eigenvalues of S (one head, or several heads pooled: rows = heads),
    each head scaled by its ||S||; positive and negative lobes coloured, baseline as an outline."""
    head, zeros = _unit_nonzero(eig_s)
    pooled = [head]
    base = None
    if rand_eig_s is not None:
        base, _ = _unit_nonzero(rand_eig_s)
        pooled.append(base)
    extent = max((float(np.abs(p).max()) for p in pooled if p.size), default=1.0)
    n_heads = np.atleast_2d(eig_s).shape[0]
    half_bins = int(np.clip(np.sqrt(max(head.size, 1)) * 1.5, 8, 60))
    width = extent / half_bins
    edges = np.arange(-half_bins, half_bins + 1) * width
    centers = (edges[:-1] + edges[1:]) / 2
    counts, _ = np.histogram(head, bins=edges)
    counts = counts / n_heads
    fig = go.Figure(lobe_bars(centers, counts, width))
    if base is not None:
        base_counts, _ = np.histogram(base, bins=edges)
        base_counts = base_counts / np.atleast_2d(rand_eig_s).shape[0]
        step_x = np.repeat(edges, 2)[1:-1]
        step_y = np.repeat(base_counts, 2)
        fig.add_trace(
            go.Scatter(
                x=step_x,
                y=step_y,
                mode="lines",
                line={"color": BASELINE_COLOR, "width": 2},
                name="Gaussian baseline",
                hoverinfo="skip",
            )
        )
    per = " per head" if n_heads > 1 else ""
    size = np.atleast_2d(eig_s).shape[1]
    note = f"; {zeros} exactly 0, left out" if zeros else ""
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"{title}<br><sup>the 2n = {size} that can be non-zero{per}{note}</sup>"},
        xaxis={"title": {"text": "eigenvalue of S / ‖S‖ (Frobenius)"}},
        yaxis={"title": {"text": f"eigenvalues per bin{per}"}},
        barmode="overlay",
        bargap=0,
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def _lobe_points(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lobes scaled by ||S||, truncated to the ranks where either lobe is non-zero."""
    pos = np.asarray(pos, dtype=float)
    neg = np.asarray(neg, dtype=float)
    norm = float(np.sqrt((pos**2).sum() + (neg**2).sum())) or 1.0
    keep = (pos > 0) | (neg > 0)
    return pos[keep] / norm, neg[keep] / norm


def lobes_figure(
    lobe_pos: np.ndarray,
    lobe_neg: np.ndarray,
    rand_lobe_pos: np.ndarray | None = None,
    rand_lobe_neg: np.ndarray | None = None,
    title: str = "Sorted spectral lobes λ₊ᵢ against λ₋ᵢ",
) -> go.Figure:
    """lambda_+_i against lambda_-_i (i = rank), scaled by ||S||, with the diagonal
    (Observation 5: proportional lobes). The baseline is either its two lobes or, when only
    ``rand_lobe_pos`` is given, its full eigenvalue array (``rand_eig_s``), split here."""
    pos, neg = _lobe_points(lobe_pos, lobe_neg)
    series = [("head", pos, neg, HEAD_COLOR)]
    if rand_lobe_pos is not None:
        if rand_lobe_neg is None:
            rand_lobe_pos, rand_lobe_neg = lobes(rand_lobe_pos)
        rpos, rneg = _lobe_points(rand_lobe_pos, rand_lobe_neg)
        series.append(("Gaussian baseline", rpos, rneg, BASELINE_COLOR))
    top = max((float(max(p.max(initial=0), n.max(initial=0))) for _, p, n, _ in series))
    top = top * 1.05 or 1.0
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, top],
            y=[0, top],
            mode="lines",
            line={"color": "#999999", "dash": "dash"},
            name="λ₊ = λ₋ (hyperbolic)",
            hoverinfo="skip",
        )
    )
    for name, p, n, color in series:
        ratio = float(p @ n / (p @ p)) if p @ p > 0 else float("nan")
        fig.add_trace(
            go.Scatter(
                x=p,
                y=n,
                mode="lines+markers",
                marker={"size": 5, "color": color},
                line={"color": color, "width": 1},
                name=f"{name} (fit λ₋ ≈ {ratio:.2f} λ₊)",
                customdata=np.arange(1, p.size + 1),
                hovertemplate="rank %{customdata}<br>λ₊/‖S‖ %{x:.4f}<br>λ₋/‖S‖ %{y:.4f}"
                f"<extra>{name}</extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title},
        xaxis={"title": {"text": "λ₊ᵢ / ‖S‖"}, "range": [0, top], "constrain": "domain"},
        yaxis={
            "title": {"text": "λ₋ᵢ / ‖S‖"},
            "range": [0, top],
            "scaleanchor": "x",
            "scaleratio": 1,
        },
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def _distinct_singular_values(sv_a: np.ndarray) -> np.ndarray:
    """The distinct singular values of A (each appears twice), scaled so their squares sum to 1
    (i.e. divided by ||A||/sqrt(2))."""
    sv = np.sort(np.asarray(sv_a, dtype=float))[::-1][::2]
    norm = float(np.sqrt((sv**2).sum()))
    return sv / norm if norm > 0 else sv


def singular_values_figure(
    sv_a: np.ndarray, rand_sv_a: np.ndarray | None = None, title: str = "Singular values of A"
) -> go.Figure:
    """Distinct singular values sigma_i of the antisymmetric part A by rank (Observation 6;
    A's spectrum is +-i sigma), head vs baseline, each scaled to unit length."""
    fig = go.Figure()
    for name, values, color in (
        ("head", sv_a, HEAD_COLOR),
        ("Gaussian baseline", rand_sv_a, BASELINE_COLOR),
    ):
        if values is None:
            continue
        sv = _distinct_singular_values(values)
        fig.add_trace(
            go.Scatter(
                x=np.arange(1, sv.size + 1),
                y=sv,
                mode="lines+markers",
                name=name,
                marker={"size": 5, "color": color},
                line={"color": color, "width": 1},
                hovertemplate=f"rank %{{x}}<br>σ/‖σ‖ %{{y:.4f}}<extra>{name}</extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"{title}<br><sup>distinct values (each is a pair ±iσ of A's "
            "eigenvalues), scaled so that Σσᵢ² = 1</sup>"
        },
        xaxis={"title": {"text": "rank i"}},
        yaxis={"title": {"text": "σᵢ / ‖σ‖  (‖σ‖² = ‖A‖²/2)"}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def profile_bar_figure(row: pd.Series, baseline_row: pd.Series) -> go.Figure:
    """The profile (a, b, c, d) and symmetric profile of one head beside the same head of its
    Gaussian baseline (``baseline_row``: the baseline table's row)."""
    coords = [*PROFILE, *SYMMETRIC_PROFILE]
    labels = ["a", "b", "c", "d", "b_S", "c_S", "d_S"]
    base = [baseline_row.get(c, np.nan) for c in coords]
    fig = go.Figure(
        [
            go.Bar(
                x=labels,
                y=values,
                name=name,
                marker={"color": color},
                texttemplate="%{y:.3f}",
                textposition="outside",
                textangle=-90,
                textfont={"size": 11},
                constraintext="none",
                cliponaxis=False,
                hovertemplate="%{x} = %{y:.4f}<extra>" + name + "</extra>",
            )
            for name, values, color in (
                ("head", [row[c] for c in coords], HEAD_COLOR),
                ("Gaussian baseline", base, BASELINE_COLOR),
            )
        ]
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "Profile π(L) = (a, b, c, d) and symmetric profile π(S)"},
        xaxis={"title": {"text": "coordinate"}},
        yaxis={
            "title": {"text": "value (each profile sums to 1)"},
            "range": [0, 1.22],  # room for the labels above bars near 1
            "tickvals": [0, 0.2, 0.4, 0.6, 0.8, 1.0],
        },
        barmode="group",
        legend={"orientation": "h", "y": -0.2},
    )
    return fig
