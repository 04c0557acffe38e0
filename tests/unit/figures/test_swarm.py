"""The swarm of every head by parity type (figures/swarm.py), on synthetic heads: every marker
at least the spacing from every other in the plot's pixels (checked pair by pair), each at its
own c_S + d_S, its type on its side of the threshold (Type I− left, Type I+ right, Type II below),
clickable with its own head, the selected head ringed."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from headforms.figures import swarm
from headforms.figures.style import FigureInputError
from headforms.forms import PARITY_TYPE_II_THRESHOLD, parity_labels


def synthetic_heads(n_layers: int = 12, n_heads: int = 12, seed: int = 0) -> pd.DataFrame:
    """Heads crowding as a trained model's do: most near-hyperbolic (c_S + d_S from 1e-4 up,
    log-uniform), many within a hair of one another, parity by the paper's rule."""
    rng = np.random.default_rng(seed)
    n = n_layers * n_heads
    excess = 10 ** rng.uniform(-3.6, -0.1, n)
    excess[: n // 5] = excess[n // 5 : 2 * (n // 5)] * (1 + 1e-4)  # near-duplicates
    share = rng.uniform(0, 1, n) ** 3
    c_sym = excess * np.where(rng.uniform(size=n) < 0.7, 1 - share, share)
    d_sym = excess - c_sym
    b_sym = 1 - excess
    a = rng.uniform(0.3, 0.55, n)
    frame = pd.DataFrame(
        {
            "layer": np.repeat(np.arange(n_layers), n_heads),
            "head": np.tile(np.arange(n_heads), n_layers),
            "a": a,
            "b": (1 - a) * b_sym,
            "c": (1 - a) * c_sym,
            "d": (1 - a) * d_sym,
            "b_sym": b_sym,
            "c_sym": c_sym,
            "d_sym": d_sym,
            "energy": 1 - a,
            "pairing": rng.uniform(0.5, 1, n),
        }
    )
    frame["parity"] = parity_labels(c_sym, d_sym)
    return frame


def pixels(table: pd.DataFrame, height: int) -> np.ndarray:
    """Each marker's (x, y) in the plot's pixels, as the figure's axes map them."""
    plot_h = height - swarm.MARGIN["t"] - swarm.MARGIN["b"]
    low, high = table.attrs["low"], table.attrs["high"]
    y = (np.log10(table["shown"].to_numpy()) - low) / (high - low) * plot_h
    return np.column_stack([table["x"].to_numpy(), y])


def closest_pair(xy: np.ndarray) -> float:
    gaps = np.linalg.norm(xy[:, None] - xy[None], axis=2)
    np.fill_diagonal(gaps, np.inf)
    return float(gaps.min())


@pytest.mark.parametrize("spacing", [7.0, 10.0, 13.5])
def test_offsets_keep_every_pair_apart_and_nearest_the_middle(spacing: float) -> None:
    rng = np.random.default_rng(3)
    y = np.concatenate([rng.normal(0, 8, 150), np.full(4, 30.0)])
    centres = np.where(np.arange(len(y)) % 3 == 0, -20.0, 15.0)
    for lines in (0.0, centres):
        x = swarm.swarm_offsets(y, spacing, lines)
        for i, j in itertools.combinations(range(len(y)), 2):
            assert np.hypot(x[i] - x[j], y[i] - y[j]) >= spacing - 1e-6
        np.testing.assert_array_equal(x, swarm.swarm_offsets(y, spacing, lines))  # deterministic
    seven = swarm.swarm_offsets(np.zeros(7), spacing)  # 0, then one spacing further out each
    assert sorted(np.abs(seven)) == pytest.approx(
        sorted([0, spacing, spacing, 2 * spacing, 2 * spacing, 3 * spacing, 3 * spacing])
    )
    lone = swarm.swarm_offsets(np.array([0.0, 50.0]), spacing, np.array([-20.0, 15.0]))
    np.testing.assert_array_equal(lone, [-20.0, 15.0])  # alone: on its own centre line


def test_a_lone_point_stays_on_the_middle_line() -> None:
    np.testing.assert_array_equal(swarm.swarm_offsets(np.array([0.0, 50.0, 100.0]), 10), 0.0)


@pytest.mark.parametrize(("height", "width"), [(460, 320), (560, 340), (400, 260)])
def test_every_head_drawn_apart_at_its_own_value_on_its_side(height: int, width: int) -> None:
    heads = synthetic_heads()
    table = swarm.swarm_table(heads, height, width)
    assert len(table) == len(heads)
    spacing = table["spacing"].iloc[0]
    assert swarm.MIN_SPACING_PX <= spacing <= swarm.SPACING_PX
    assert closest_pair(pixels(table, height)) >= spacing - 1e-6
    merged = table.merge(heads, on=["layer", "head"], suffixes=("", "_head"))
    np.testing.assert_allclose(merged["unpaired"], merged["c_sym"] + merged["d_sym"])
    np.testing.assert_allclose(merged["shown"], merged["unpaired"])  # no zero here
    assert (merged["parity"] == merged["parity_head"]).all()
    two = merged["parity"] == "II"
    assert (merged.loc[two, "shown"] <= PARITY_TYPE_II_THRESHOLD).all()
    assert (merged.loc[~two, "shown"] > PARITY_TYPE_II_THRESHOLD).all()
    assert (
        merged.loc[merged["parity"] == "I-", "x"].max()
        < merged.loc[merged["parity"] == "I+", "x"].min()
    )


def test_a_zero_excess_is_drawn_at_the_floor_and_a_vanishing_form_left_out() -> None:
    heads = synthetic_heads(2, 3)
    heads.loc[0, ["c_sym", "d_sym"]] = 0.0
    heads.loc[0, "parity"] = "II"
    heads.loc[1, ["c_sym", "d_sym"]] = np.nan
    heads.loc[1, "parity"] = "zero"
    table = swarm.swarm_table(heads)
    assert len(table) == len(heads) - 1
    floor = table.loc[(table["layer"] == 0) & (table["head"] == 0), "shown"].iloc[0]
    assert 0 < floor < table["unpaired"][table["unpaired"] > 0].min()
    assert np.log10(floor) > table.attrs["low"]  # inside the axis


def test_the_figure_draws_each_head_once_clickable_and_the_threshold() -> None:
    heads = synthetic_heads()
    fig = swarm.swarm_figure(heads, "m", selected=("m", 3, 4), height=460, width=320)
    seen = set()
    for trace in fig.data:
        if (trace.meta or {}).get("role") != "heads":
            continue
        for (model, layer, head), y in zip(trace.customdata, trace.y, strict=True):
            row = heads[(heads["layer"] == layer) & (heads["head"] == head)].iloc[0]
            assert model == "m" and row["parity"] == trace.meta["parity"]
            assert y == pytest.approx(row["c_sym"] + row["d_sym"])
            seen.add((layer, head))
        assert len(trace.meta["choices"]) == len(trace.customdata)
    assert len(seen) == len(heads)
    (line,) = fig.layout.shapes
    assert line.y0 == line.y1 == PARITY_TYPE_II_THRESHOLD
    assert fig.layout.yaxis.type == "log"
    (ring,) = [t for t in fig.data if (t.meta or {}).get("role") == "selected"]
    assert tuple(ring.customdata[0]) == ("m", 3, 4)
    assert [a.text for a in fig.layout.annotations if a.name == "selected"] == ["<b>L3·H4</b>"]
    sizes = [a.font.size for a in fig.layout.annotations]
    assert min(sizes) >= 11


def test_colour_by_a_column_uses_the_colour_axis() -> None:
    heads = synthetic_heads()
    fig = swarm.swarm_figure(heads, "m", color_by="layer")
    assert fig.layout.coloraxis.colorbar.orientation == "v"
    assert all(t.marker.coloraxis == "coloraxis" for t in fig.data if t.meta["role"] == "heads")
    with pytest.raises(FigureInputError):
        swarm.swarm_figure(heads, "m", color_by="nonsense")


def test_a_thousand_heads_are_all_apart() -> None:
    """A 32-layer x 32-head model: the sweep's window (the points less than a spacing below)
    is all a new point can touch."""
    heads = synthetic_heads(32, 32, seed=5)
    table = swarm.swarm_table(heads, 460, 320)
    assert len(table) == 1024
    assert closest_pair(pixels(table, 460)) >= table["spacing"].iloc[0] - 1e-6
