"""Numbers that read as what they mean (issue 28, item 9), on synthetic data: a fit's legend names
the lobes (λ₊, λ₋) rather than writing "+ 0.233, - 0.082"; heads that did not move get distance
axes from 0 to 0.001, not ticks in plotly's SI "pico" units; a histogram's first x tick clear
of the y axis' first."""

from __future__ import annotations

import numpy as np
import pandas as pd

from headforms.analyses import fits
from headforms.figures.fits import fit_head_figure
from headforms.figures.movement import (
    SMALLEST_DISTANCE_RANGE,
    distance_figure,
    moved_most_figure,
)


def test_a_fits_legend_names_each_lobe_by_its_symbol() -> None:
    rng = np.random.default_rng(0)
    spectra = {
        "lobe_pos": np.sort(rng.gamma(2.0, 1.0, 48))[::-1][None, :],
        "lobe_neg": np.sort(rng.gamma(3.0, 1.0, 48))[::-1][None, :],
    }
    result = fits.fit_lobes(spectra)
    fig = fit_head_figure(fits.head_histograms(result, 0), fits.head_fit_curves(result, 0))
    names = [t.name for t in fig.data if t.type == "scatter" and t.showlegend is not False]
    assert names
    for name in names:
        assert "λ₊ " in name and "λ₋ " in name, name
        assert "+ " not in name and "- " not in name, name


def unmoved(n_layers: int = 2, n_heads: int = 3) -> pd.DataFrame:
    layer, head = np.divmod(np.arange(n_layers * n_heads), n_heads)
    return pd.DataFrame(
        {
            "layer": layer,
            "head": head,
            "distance": np.zeros(layer.size),
            "parity_first": "II",
            "parity_last": "II",
        }
    )


def test_heads_that_did_not_move_get_a_readable_distance_range() -> None:
    heads = unmoved()
    bars = moved_most_figure(heads, "m")
    assert bars.layout.xaxis.range[1] >= SMALLEST_DISTANCE_RANGE
    grid = distance_figure(heads[["layer", "head", "distance"]], "m")
    assert grid.layout.coloraxis.cmax >= SMALLEST_DISTANCE_RANGE


def test_a_distance_range_follows_heads_that_moved() -> None:
    heads = unmoved()
    heads.loc[4, "distance"] = 0.25
    assert moved_most_figure(heads, "m").layout.xaxis.range[1] == 1.3 * 0.25
    assert distance_figure(heads[["layer", "head", "distance"]], "m").layout.coloraxis.cmax == 0.25


def test_a_histograms_first_x_tick_sits_clear_of_the_y_axis() -> None:
    """Pairing and Observations' histograms: the x axis starts a margin below the value range
    (its "0" tick is not drawn on the y axis' "0" at the corner), the bins still at 0, and the
    y axis from 0."""
    from headforms.figures.distributions import ORIGIN_MARGIN, distribution_figure

    rng = np.random.default_rng(1)
    heads = pd.DataFrame({"pairing": rng.uniform(0.0, 1.0, 64)})
    fig = distribution_figure({"model": heads})
    low, high = fig.layout.xaxis.range
    assert low == -ORIGIN_MARGIN and high == 1.0 + ORIGIN_MARGIN and ORIGIN_MARGIN >= 0.02
    assert fig.data[0].xbins.start == 0.0 and fig.data[0].xbins.end == 1.0
    assert fig.layout.yaxis.rangemode == "tozero"
